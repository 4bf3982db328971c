-- Short rounds for demos and tests (FM_SERIES `binance:BTCUSDT:5m`, on the simulated exchange):
-- a series may run rounds every few minutes, whatever its venue's funding interval, which
-- `interval_hours` keeps tracking as the venue reports it. NULL: rounds follow the venue.
ALTER TABLE series ADD COLUMN round_minutes SMALLINT
    CHECK (round_minutes BETWEEN 1 AND 30 AND 60 % round_minutes = 0);
