-- A position's trades (market and wallet): its realised P&L when it is paid and its cost basis
-- in the balance and portfolio. Found through the market's index alone or the wallet's (a
-- BitmapAnd reading every trade of the wallet), each lookup grew with the wallet's history:
-- 0.5 ms per payout for a wallet with 4,000 trades, twice per payout.
CREATE INDEX trades_by_position ON trades (market_id, wallet);
