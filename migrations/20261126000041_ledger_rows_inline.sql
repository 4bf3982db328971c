-- An embedded-chain ledger row (a program transaction: keys, instructions, inner instructions,
-- logs, wire bytes) is 3–5 KB, over the 2 KB at which Postgres compresses a row's largest
-- values and moves them to the TOAST table: each landing paid pglz, a TOAST heap row and its
-- index entry inside the chain's one-at-a-time durable write. Rows up to a page are now kept
-- inline as they are (larger ones are still compressed and moved). The ledger is a local
-- chain's history, read back by signature; the space it takes matters less than the write.
ALTER TABLE embedded_ledger SET (toast_tuple_target = 8160);
