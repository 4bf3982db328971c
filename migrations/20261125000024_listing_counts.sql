-- Listing pages that stay fast at 100,000 settled markets and 100,000 traders (issue 19).

-- Markets per status, for `total` on every page of GET /v1/markets without counting the table.
-- Triggers append rows of (status, +n/-n) instead of updating one counter row: concurrent
-- transactions never wait on each other (or deadlock) over a shared counter. An insert or
-- delete statement appends one row per status it touched (a statement-level trigger over its
-- transition table: seeding a hundred thousand rounds is one row); a status change, one row
-- each way. A compaction (`store::markets::compact_status_counts`: each scheduler pass, and a
-- listing that finds many rows) folds them into one per status; a reader sums what is there,
-- which is exact at its snapshot either way.
CREATE TABLE market_status_counts (
    id     BIGSERIAL PRIMARY KEY,
    status TEXT NOT NULL,
    n      BIGINT NOT NULL
);
CREATE INDEX market_status_counts_by_status ON market_status_counts (status) INCLUDE (n);

CREATE FUNCTION count_inserted_markets() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO market_status_counts (status, n) SELECT status, count(*) FROM inserted GROUP BY status;
    RETURN NULL;
END $$;
CREATE TRIGGER count_inserted_markets AFTER INSERT ON markets
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION count_inserted_markets();

CREATE FUNCTION count_deleted_markets() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO market_status_counts (status, n) SELECT status, -count(*) FROM deleted GROUP BY status;
    RETURN NULL;
END $$;
CREATE TRIGGER count_deleted_markets AFTER DELETE ON markets
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION count_deleted_markets();

-- Row-level, so only a real status change costs anything (a trade updates its market's row).
CREATE FUNCTION count_market_status_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO market_status_counts (status, n) VALUES (OLD.status, -1), (NEW.status, 1);
    RETURN NULL;
END $$;
CREATE TRIGGER count_market_status_change AFTER UPDATE OF status ON markets
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION count_market_status_change();
INSERT INTO market_status_counts (status, n) SELECT status, count(*) FROM markets GROUP BY status;

-- Pages of markets in listing order (unfinished soonest first, finished latest first, then id),
-- read through these with the offset taken on the index alone.
DROP INDEX markets_by_status_settlement;
CREATE INDEX markets_by_status_settlement ON markets (status, settlement_ts, id);
CREATE INDEX markets_unfinished_listing ON markets (settlement_ts, id)
    WHERE status IN ('pending', 'open', 'closed', 'resolving');
CREATE INDEX markets_finished_listing ON markets (settlement_ts DESC, id)
    WHERE status IN ('settled', 'voided');
CREATE INDEX markets_finished_by_status ON markets (status, settlement_ts DESC, id)
    WHERE status IN ('settled', 'voided');

-- All-time totals per trader, kept by a trigger on the daily rows the projection writes (each
-- change adds its difference), so the all-time leaderboard reads the top of an index instead of
-- aggregating every trader's every day.
CREATE TABLE trader_totals (
    wallet       TEXT PRIMARY KEY,
    volume       BIGINT NOT NULL DEFAULT 0,
    trades       BIGINT NOT NULL DEFAULT 0,
    realized_pnl BIGINT NOT NULL DEFAULT 0,
    settled      BIGINT NOT NULL DEFAULT 0,
    wins         BIGINT NOT NULL DEFAULT 0
);
INSERT INTO trader_totals (wallet, volume, trades, realized_pnl, settled, wins)
SELECT wallet, sum(volume), sum(trades), sum(realized_pnl), sum(settled), sum(wins) FROM trader_stats GROUP BY wallet;
-- One per leaderboard order (store::positions::leaderboard).
CREATE INDEX trader_totals_by_pnl ON trader_totals (realized_pnl DESC, volume DESC, wallet);
CREATE INDEX trader_totals_by_volume ON trader_totals (volume DESC, realized_pnl DESC, wallet);
CREATE INDEX trader_totals_by_win_rate ON trader_totals
    ((CASE WHEN settled = 0 THEN 0 ELSE wins::NUMERIC / settled END) DESC, settled DESC, volume DESC, wallet);

CREATE FUNCTION total_trader_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO trader_totals AS t (wallet, volume, trades, realized_pnl, settled, wins)
        VALUES (NEW.wallet, NEW.volume, NEW.trades, NEW.realized_pnl, NEW.settled, NEW.wins)
        ON CONFLICT (wallet) DO UPDATE SET volume = t.volume + EXCLUDED.volume, trades = t.trades + EXCLUDED.trades,
            realized_pnl = t.realized_pnl + EXCLUDED.realized_pnl, settled = t.settled + EXCLUDED.settled, wins = t.wins + EXCLUDED.wins;
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE trader_totals SET volume = volume + NEW.volume - OLD.volume, trades = trades + NEW.trades - OLD.trades,
            realized_pnl = realized_pnl + NEW.realized_pnl - OLD.realized_pnl, settled = settled + NEW.settled - OLD.settled,
            wins = wins + NEW.wins - OLD.wins
        WHERE wallet = NEW.wallet;
    ELSE
        UPDATE trader_totals SET volume = volume - OLD.volume, trades = trades - OLD.trades, realized_pnl = realized_pnl - OLD.realized_pnl,
            settled = settled - OLD.settled, wins = wins - OLD.wins
        WHERE wallet = OLD.wallet;
        -- A trader is on the board while it has a day on record.
        DELETE FROM trader_totals WHERE wallet = OLD.wallet AND NOT EXISTS (SELECT 1 FROM trader_stats WHERE wallet = OLD.wallet);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER total_trader_stats AFTER INSERT OR UPDATE OR DELETE ON trader_stats
    FOR EACH ROW EXECUTE FUNCTION total_trader_stats();
