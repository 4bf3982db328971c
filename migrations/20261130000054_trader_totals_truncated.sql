-- `trader_totals` follows `trader_stats` through the statement triggers of migration 33 on
-- insert, update and delete; a TRUNCATE fires none of them, and left every total (and so the
-- leaderboard's books, which a truncation's notice reloads from them) as it was. The totals
-- are the sums of the days: no day, no total.
CREATE FUNCTION total_truncated_trader_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE trader_totals;
    RETURN NULL;
END $$;
CREATE TRIGGER total_truncated_trader_stats AFTER TRUNCATE ON trader_stats
    FOR EACH STATEMENT EXECUTE FUNCTION total_truncated_trader_stats();
