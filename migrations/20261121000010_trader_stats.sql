-- Per wallet and UTC day, kept by the projection as events arrive, so leaderboards over any
-- period sum a few rows per trader instead of scanning trades.
--   volume        USDC traded (buy amounts and sell proceeds), micro-USDC
--   realized_pnl  at each settlement: payout + sell proceeds (net of fees) - buys (with fees),
--                 micro-USDC, booked on the settlement's day
--   settled/wins  positions settled (voids excluded), and those with realized_pnl > 0
CREATE TABLE trader_stats (
    wallet       TEXT NOT NULL,
    day          DATE NOT NULL,
    volume       BIGINT NOT NULL DEFAULT 0 CHECK (volume >= 0),
    trades       INTEGER NOT NULL DEFAULT 0 CHECK (trades >= 0),
    realized_pnl BIGINT NOT NULL DEFAULT 0,
    settled      INTEGER NOT NULL DEFAULT 0 CHECK (settled >= 0),
    wins         INTEGER NOT NULL DEFAULT 0 CHECK (wins >= 0),
    PRIMARY KEY (wallet, day)
);
CREATE INDEX trader_stats_day ON trader_stats (day);
-- The slot orders trades of the same second (a trade's time is its block's, in seconds).
ALTER TABLE trades ADD COLUMN slot BIGINT;
CREATE INDEX trades_wallet ON trades (wallet, created_at DESC, slot DESC);
