-- Each landed transaction's return data, as a node's `getTransaction` reports it in its meta
-- (`returnData`): what the last program to set it left, `{"programId": <base58>, "data":
-- <base64>}`. Null where no program left any (most transactions), and for rows landed before it
-- was kept.
ALTER TABLE embedded_ledger ADD COLUMN return_data JSONB;
