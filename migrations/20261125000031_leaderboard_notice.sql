-- Tells every replica's leaderboard cache (api/src/services/leaderboard_cache.rs) that the
-- rankings may have changed: a statement that changed traders' statistics (the projection's
-- trades and payouts; `trader_totals` follows them by trigger), or a display name (users are
-- created without one at sign-in, so inserting a user changes no ranking and is not notified:
-- sign-ins must not empty the cache). One notice per statement; identical notices in one
-- transaction arrive once, after it commits.

-- A notice with no payload on the channel the trigger names (its one argument).
CREATE FUNCTION notify_channel() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(TG_ARGV[0], '');
    RETURN NULL;
END $$;
CREATE TRIGGER notify_leaderboard AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON trader_stats
    FOR EACH STATEMENT EXECUTE FUNCTION notify_channel('fm_leaderboard');
CREATE TRIGGER notify_leaderboard_names AFTER UPDATE OF display_name, wallet_address OR DELETE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION notify_channel('fm_leaderboard');
