-- Each landed transaction's balances before and after it ran, as a node's `getTransaction`
-- reports them in its meta: every account key's lamports in key order (`preBalances`,
-- `postBalances`), and each token account's amount (`preTokenBalances`, `postTokenBalances`: a
-- JSON array of `{accountIndex, mint, owner, programId, amount, decimals}`, the amount in the
-- mint's base units). Null for rows landed before they were kept (read as empty lists).
ALTER TABLE embedded_ledger
    ADD COLUMN pre_balances BIGINT[],
    ADD COLUMN post_balances BIGINT[],
    ADD COLUMN pre_token_balances JSONB,
    ADD COLUMN post_token_balances JSONB;
