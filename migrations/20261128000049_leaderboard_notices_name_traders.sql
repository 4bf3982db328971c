-- The leaderboard's notices say what changed, so the API's whole-day rankings (7 and 30 days,
-- api/src/services/leaderboard_cache.rs) re-read only the traders a statement touched instead
-- of adding up every trader's days again:
--   the changed wallets, separated by spaces, for a statement on trader_stats;
--   '*' when they would not fit in a notice (its payload holds under 8,000 bytes) or the table
--   was truncated: everything may have changed;
--   'names' for a display name's change: the sums stand, the names shown may not.
-- A statement that changed no row sends nothing.
--
-- Ties rank by wallet in byte order (COLLATE "C"), whatever the database's collation, so
-- Postgres and the API's memory rank them alike; the all-time indexes follow that order.

DROP TRIGGER notify_leaderboard ON trader_stats;
DROP TRIGGER notify_leaderboard_names ON users;

CREATE FUNCTION notify_leaderboard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    wallets TEXT;
BEGIN
    IF TG_TABLE_NAME = 'users' THEN
        PERFORM pg_notify('fm_leaderboard', 'names');
        RETURN NULL;
    END IF;
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('fm_leaderboard', '*');
        RETURN NULL;
    ELSIF TG_OP = 'INSERT' THEN
        SELECT string_agg(DISTINCT wallet, ' ') INTO wallets FROM inserted;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT string_agg(DISTINCT wallet, ' ') INTO wallets FROM deleted;
    ELSE
        SELECT string_agg(DISTINCT wallet, ' ') INTO wallets
        FROM (SELECT wallet FROM before_update UNION ALL SELECT wallet FROM after_update) changed;
    END IF;
    IF wallets IS NOT NULL THEN
        PERFORM pg_notify('fm_leaderboard', CASE WHEN octet_length(wallets) < 7900 THEN wallets ELSE '*' END);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER notify_leaderboard_inserted AFTER INSERT ON trader_stats
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION notify_leaderboard();
CREATE TRIGGER notify_leaderboard_updated AFTER UPDATE ON trader_stats
    REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update FOR EACH STATEMENT EXECUTE FUNCTION notify_leaderboard();
CREATE TRIGGER notify_leaderboard_deleted AFTER DELETE ON trader_stats
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION notify_leaderboard();
CREATE TRIGGER notify_leaderboard_truncated AFTER TRUNCATE ON trader_stats
    FOR EACH STATEMENT EXECUTE FUNCTION notify_leaderboard();
CREATE TRIGGER notify_leaderboard_names AFTER UPDATE OF display_name, wallet_address OR DELETE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION notify_leaderboard();

DROP INDEX trader_totals_by_pnl, trader_totals_by_volume, trader_totals_by_win_rate;
-- One per leaderboard order (store::positions::leaderboard).
CREATE INDEX trader_totals_by_pnl ON trader_totals (realized_pnl DESC, volume DESC, wallet COLLATE "C");
CREATE INDEX trader_totals_by_volume ON trader_totals (volume DESC, realized_pnl DESC, wallet COLLATE "C");
CREATE INDEX trader_totals_by_win_rate ON trader_totals
    ((CASE WHEN settled = 0 THEN 0 ELSE wins::NUMERIC / settled END) DESC, settled DESC, volume DESC, wallet COLLATE "C");
