-- What a landed transaction paid and ran, as a node's `getTransaction` reports it in its meta:
-- the fee in lamports (the signatures' and any priority fee the transaction set) and the compute
-- units it consumed. Null for rows landed before they were kept (read as the signatures' fee,
-- and no units).
ALTER TABLE embedded_ledger ADD COLUMN fee BIGINT, ADD COLUMN compute_units BIGINT;
