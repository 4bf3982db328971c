-- Each position side's cost basis, micro-USDC: what its buys cost (fees included) less what its
-- sells returned (net of fees). Kept by the trade projection as trades arrive (added once per
-- recorded trade, in whatever order they come), so a balance or portfolio reads it from the
-- position instead of adding up the position's trades on every request.
ALTER TABLE positions ADD COLUMN yes_basis BIGINT NOT NULL DEFAULT 0;
ALTER TABLE positions ADD COLUMN no_basis BIGINT NOT NULL DEFAULT 0;
UPDATE positions p SET
    yes_basis = COALESCE((SELECT sum(CASE WHEN t.is_buy THEN t.amount + t.fee ELSE -(t.amount - t.fee) END)
                          FROM trades t WHERE t.market_id = p.market_id AND t.wallet = p.wallet AND t.side = 'yes'), 0),
    no_basis = COALESCE((SELECT sum(CASE WHEN t.is_buy THEN t.amount + t.fee ELSE -(t.amount - t.fee) END)
                         FROM trades t WHERE t.market_id = p.market_id AND t.wallet = p.wallet AND t.side = 'no'), 0);
