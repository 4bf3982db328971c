-- The projection finds a market by its program account's address on every event.
CREATE UNIQUE INDEX markets_onchain_address ON markets (onchain_address) WHERE onchain_address IS NOT NULL;
