-- getSignaturesForAddress's index on the embedded chain: one row per address and ledger group
-- (the transactions one statement of the ledger's single writer appends), holding the ledger
-- sequences of that group's transactions that name the address, ascending. A row per address
-- and transaction wrote every key each transaction of a group shares (the program, the config,
-- a market and its vault, the token programs, the operator) once per transaction: a row and an
-- index entry per key, 24 of a trade's WAL records. Now once per group.
--
-- Ordering the rows of an address by `first_seq` orders every sequence they hold: groups are
-- appended one at a time by the one process holding the chain's single-writer lock, each
-- drawing its sequences after the group before it, so one address's rows hold disjoint,
-- increasing ranges. A page "newest first, before a cursor" walks rows backwards from the
-- cursor (each row gives at least its first sequence, so `limit` rows suffice); "oldest first,
-- after a cursor" starts at the row holding the cursor's group (`localnet::reads`).
CREATE TABLE embedded_ledger_account_groups (
    address   TEXT     NOT NULL,
    first_seq BIGINT   NOT NULL,
    seqs      BIGINT[] NOT NULL,
    PRIMARY KEY (address, first_seq)
);

-- Rows written before keep their transaction to themselves: a group of one.
INSERT INTO embedded_ledger_account_groups (address, first_seq, seqs)
SELECT address, seq, ARRAY[seq] FROM embedded_ledger_accounts;

DROP TABLE embedded_ledger_accounts;
