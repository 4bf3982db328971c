-- `trader_totals` follows `trader_stats` through the statement triggers of migration 33 on
-- insert, update and delete; a TRUNCATE fires none of them, and left every total (and so the
-- leaderboard's books, which a truncation's notice reloads from them) as it was. The totals
-- are the sums of the days: no day, no total. Deleted rather than truncated, so that truncating
-- both tables in one statement (or with a cursor open on the totals) still works, and the
-- truncating role needs no TRUNCATE privilege on the totals.
CREATE FUNCTION total_truncated_trader_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM trader_totals;
    RETURN NULL;
END $$;
CREATE TRIGGER total_truncated_trader_stats AFTER TRUNCATE ON trader_stats
    FOR EACH STATEMENT EXECUTE FUNCTION total_truncated_trader_stats();
