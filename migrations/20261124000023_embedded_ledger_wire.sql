-- The embedded chain keeps each landed transaction's wire bytes and log messages, so
-- `getTransaction` can answer in base64/base58 (the whole signed transaction) and with the
-- program logs, as a node does. Rows landed before this migration have neither (NULL): they
-- are answered in JSON without logs.
ALTER TABLE embedded_ledger ADD COLUMN wire BYTEA, ADD COLUMN log_messages TEXT[];
