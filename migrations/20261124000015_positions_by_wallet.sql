-- A wallet's positions (portfolio, balance, positions endpoints) were found by scanning every
-- position: the primary key leads with the market.
CREATE INDEX positions_by_wallet ON positions (wallet);
