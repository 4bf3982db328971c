-- getSignaturesForAddress on the embedded chain's ledger, the old way (`$1 = ANY(account_keys)`)
-- against the (address, seq) index: 300,000 transactions of six accounts each, a user address in
-- 6 of them and the program in all. Run by scripts/bench-ledger-index.sh in a scratch database.
CREATE TABLE l (seq BIGSERIAL PRIMARY KEY, signature TEXT NOT NULL UNIQUE, slot BIGINT NOT NULL, block_time BIGINT NOT NULL, err JSONB, account_keys TEXT[] NOT NULL);
INSERT INTO l (signature, slot, block_time, account_keys)
SELECT 'sig' || i, i, i, ARRAY['program', 'payer' || (i % 1000), 'user' || (i % 50000), 'vault' || (i % 50000), 'market' || (i % 200), 'token']
FROM generate_series(1, 300000) i;
CREATE INDEX l_gin ON l USING GIN (account_keys);
CREATE TABLE l_acc (address TEXT NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (address, seq));
INSERT INTO l_acc SELECT DISTINCT key, seq FROM l, unnest(account_keys) key;
VACUUM ANALYZE l; VACUUM ANALYZE l_acc;

-- old: a user with 6 transactions
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT signature, slot, err, block_time FROM l WHERE 'user123' = ANY(account_keys) ORDER BY seq DESC LIMIT 1000;
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT l.signature, l.slot, l.err, l.block_time FROM l_acc a JOIN l USING (seq) WHERE a.address = 'user123' ORDER BY a.seq DESC LIMIT 1000;
-- the program's own address: every transaction
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT signature, slot, err, block_time FROM l WHERE 'program' = ANY(account_keys) ORDER BY seq DESC LIMIT 1000;
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT l.signature, l.slot, l.err, l.block_time FROM l_acc a JOIN l USING (seq) WHERE a.address = 'program' ORDER BY a.seq DESC LIMIT 1000;
