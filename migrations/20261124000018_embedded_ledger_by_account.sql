-- getSignaturesForAddress on the embedded chain: each landed transaction's accounts, one row
-- each, so "the transactions of an address, newest first, before/after a cursor" is a range
-- scan of this primary key. `$1 = ANY(account_keys)` could not use the GIN index and scanned
-- the whole ledger; `account_keys @> ARRAY[$1]` could, but then sorted every match (every
-- transaction, for the program's own address) to return a page.
CREATE TABLE embedded_ledger_accounts (
    address TEXT NOT NULL,
    seq     BIGINT NOT NULL REFERENCES embedded_ledger (seq),
    PRIMARY KEY (address, seq)
);

INSERT INTO embedded_ledger_accounts (address, seq)
SELECT DISTINCT key, seq FROM embedded_ledger, unnest(account_keys) AS key;

DROP INDEX embedded_ledger_account_keys;
