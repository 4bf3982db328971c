-- A settled position's realized P&L (its payout less its cost basis: buys' cost less sells'
-- proceeds, fees included), micro-USDC; NULL for a void. The 24-hour leaderboard adds these up
-- by settlement time, and trades by their time; the other periods read trader_stats' days.
-- Settlements recorded before this column have none: they leave the 24-hour window within a day.
ALTER TABLE settlements ADD COLUMN realized_pnl BIGINT;
CREATE INDEX settlements_by_time ON settlements USING brin (at);
CREATE INDEX trades_by_time ON trades USING brin (created_at);
