-- The indexer's catch-up (issue 19): all-time trader totals follow `trader_stats` once per
-- statement instead of once per row. The projection upserts a batch's day rows in one statement
-- (500 at a time while catching up), and migration 24's row trigger, an upsert per day row, was
-- a quarter of that statement's time. Each statement now adds, per wallet, the sum of its new
-- rows less the sum of its old ones (so an update that moved a day to another wallet is right
-- too), in wallet order; a wallet left with no day leaves the board.
-- `trader_totals_are_the_sum_of_their_days` checks the totals through single and multi-row
-- inserts, upserts, updates and deletes.
DROP TRIGGER total_trader_stats ON trader_stats;
DROP FUNCTION total_trader_stats();

CREATE FUNCTION total_inserted_trader_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO trader_totals AS t (wallet, volume, trades, realized_pnl, settled, wins)
    SELECT wallet, sum(volume), sum(trades), sum(realized_pnl), sum(settled), sum(wins)
    FROM inserted GROUP BY wallet ORDER BY wallet
    ON CONFLICT (wallet) DO UPDATE SET volume = t.volume + EXCLUDED.volume, trades = t.trades + EXCLUDED.trades,
        realized_pnl = t.realized_pnl + EXCLUDED.realized_pnl, settled = t.settled + EXCLUDED.settled, wins = t.wins + EXCLUDED.wins;
    RETURN NULL;
END $$;
CREATE TRIGGER total_inserted_trader_stats AFTER INSERT ON trader_stats REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION total_inserted_trader_stats();

CREATE FUNCTION total_updated_trader_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO trader_totals AS t (wallet, volume, trades, realized_pnl, settled, wins)
    SELECT wallet, sum(volume), sum(trades), sum(realized_pnl), sum(settled), sum(wins)
    FROM (SELECT wallet, volume, trades, realized_pnl, settled, wins FROM after_update
          UNION ALL
          SELECT wallet, -volume, -trades, -realized_pnl, -settled, -wins FROM before_update) d
    GROUP BY wallet ORDER BY wallet
    ON CONFLICT (wallet) DO UPDATE SET volume = t.volume + EXCLUDED.volume, trades = t.trades + EXCLUDED.trades,
        realized_pnl = t.realized_pnl + EXCLUDED.realized_pnl, settled = t.settled + EXCLUDED.settled, wins = t.wins + EXCLUDED.wins;
    -- Only a day moved to another wallet can leave one with none.
    DELETE FROM trader_totals t
    WHERE t.wallet IN (SELECT wallet FROM before_update EXCEPT SELECT wallet FROM after_update)
      AND NOT EXISTS (SELECT 1 FROM trader_stats s WHERE s.wallet = t.wallet);
    RETURN NULL;
END $$;
CREATE TRIGGER total_updated_trader_stats AFTER UPDATE ON trader_stats REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update
    FOR EACH STATEMENT EXECUTE FUNCTION total_updated_trader_stats();

CREATE FUNCTION total_deleted_trader_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE trader_totals t SET volume = t.volume - d.volume, trades = t.trades - d.trades, realized_pnl = t.realized_pnl - d.realized_pnl,
        settled = t.settled - d.settled, wins = t.wins - d.wins
    FROM (SELECT wallet, sum(volume) AS volume, sum(trades) AS trades, sum(realized_pnl) AS realized_pnl, sum(settled) AS settled,
                 sum(wins) AS wins
          FROM deleted GROUP BY wallet) d
    WHERE t.wallet = d.wallet;
    -- A trader is on the board while it has a day on record.
    DELETE FROM trader_totals t
    WHERE t.wallet IN (SELECT wallet FROM deleted) AND NOT EXISTS (SELECT 1 FROM trader_stats s WHERE s.wallet = t.wallet);
    RETURN NULL;
END $$;
CREATE TRIGGER total_deleted_trader_stats AFTER DELETE ON trader_stats REFERENCING OLD TABLE AS deleted
    FOR EACH STATEMENT EXECUTE FUNCTION total_deleted_trader_stats();
