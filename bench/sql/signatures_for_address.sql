-- getSignaturesForAddress on the embedded chain's ledger: a row per address and transaction
-- (`(address, seq)`) against a row per address and ledger group (`(address, first_seq)` with the
-- group's sequences, migration 53). 300,000 transactions of six accounts each, landed in groups
-- of 8; a user's address in 6 of them, the program's in all. Each has a trade's three
-- top-level instructions as the ledger stores them (a compute-unit limit, the program's, the
-- service's `fm:<id>` memo), which the listing reads its memos from. Run by
-- scripts/bench-ledger-index.sh in a scratch database.
CREATE TABLE embedded_ledger (seq BIGSERIAL PRIMARY KEY, signature TEXT NOT NULL UNIQUE, slot BIGINT NOT NULL, block_time BIGINT NOT NULL, err JSONB,
                              account_keys TEXT[] NOT NULL, instructions JSONB NOT NULL);
INSERT INTO embedded_ledger (signature, slot, block_time, account_keys, instructions)
SELECT 'sig' || i, i, i, ARRAY['program', 'payer' || (i % 1000), 'user' || (i % 50000), 'vault' || (i % 50000), 'market' || (i % 200), 'token'],
       jsonb_build_array(
           jsonb_build_object('program_index', 5, 'accounts', '[]'::jsonb, 'data', 'AkBCDwA='),
           jsonb_build_object('program_index', 0, 'accounts', '[1, 2, 3, 4]'::jsonb,
                              'data', encode(sha256(i::text::bytea) || substr(sha256(i::text::bytea), 1, 8), 'base64')),
           jsonb_build_object('program_index', 5, 'accounts', '[]'::jsonb,
                              'data', encode(convert_to('fm:' || md5(i::text), 'UTF8'), 'base64')))
FROM generate_series(1, 300000) i;
CREATE TABLE by_transaction (address TEXT NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (address, seq));
INSERT INTO by_transaction SELECT DISTINCT key, seq FROM embedded_ledger, unnest(account_keys) key;
CREATE TABLE embedded_ledger_account_groups (address TEXT NOT NULL, first_seq BIGINT NOT NULL, seqs BIGINT[] NOT NULL, PRIMARY KEY (address, first_seq));
INSERT INTO embedded_ledger_account_groups
SELECT key, min(seq), array_agg(seq ORDER BY seq) FROM embedded_ledger, unnest(account_keys) key GROUP BY key, (seq - 1) / 8;
VACUUM ANALYZE embedded_ledger; VACUUM ANALYZE by_transaction; VACUUM ANALYZE embedded_ledger_account_groups;
SELECT 'by transaction ' || pg_size_pretty(pg_total_relation_size('by_transaction')) AS size
UNION ALL SELECT 'by group ' || pg_size_pretty(pg_total_relation_size('embedded_ledger_account_groups'));

PREPARE by_transaction(TEXT, TEXT, TEXT, BIGINT) AS
SELECT l.signature, l.slot, l.err, l.block_time, l.account_keys, l.instructions
FROM by_transaction a JOIN embedded_ledger l USING (seq)
WHERE a.address = $1
  AND a.seq < COALESCE((SELECT seq FROM embedded_ledger WHERE signature = $2), CASE WHEN $2::TEXT IS NULL THEN 9223372036854775807 ELSE 0 END)
  AND a.seq > COALESCE((SELECT seq FROM embedded_ledger WHERE signature = $3), 0)
ORDER BY a.seq DESC LIMIT $4;
-- localnet::SIGNATURES_FOR_ADDRESS
\set by_group `sed -n '/^pub const SIGNATURES_FOR_ADDRESS: &str = "/,/";$/p' localnet/src/reads.rs | sed -e '1s/^[^"]*"//' -e '$s/";$//'`
PREPARE by_group(TEXT, TEXT, TEXT, BIGINT) AS :by_group;

\echo 'a user''s address, newest first'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE by_transaction('user123', NULL, NULL, 1000);
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE by_group('user123', NULL, NULL, 1000);
\echo 'the program''s address, newest first, 1000'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE by_transaction('program', NULL, NULL, 1000);
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE by_group('program', NULL, NULL, 1000);
\echo 'the program''s address, newest first, 10'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE by_transaction('program', NULL, NULL, 10);
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE by_group('program', NULL, NULL, 10);
\echo 'the program''s address, before and until 100 transactions apart, 1000'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE by_transaction('program', 'sig150000', 'sig149900', 1000);
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE by_group('program', 'sig150000', 'sig149900', 1000);
