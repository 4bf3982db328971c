-- The stream's statement triggers in time linear in the statement's rows.
--
-- A balance update's event paired each row's before and after by joining the two transition
-- tables. Postgres knows nothing of a transition table's size, so a cached generic plan joined
-- them by a nested loop: every updated wallet against every other, a million comparisons for a
-- statement of 1,000 wallets, a hundred million for 10,000 (docs/performance.md, "The indexer").
-- A wallet's row is updated at most once a statement (its key), so a row of `after_update` whose
-- (wallet, balance) is not in `before_update` is a wallet whose balance changed: set operations,
-- hashed or sorted, never a nested loop.
CREATE OR REPLACE FUNCTION stream_balances_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A wallet's row is updated at most once a statement (its key): a row after whose (wallet,
    -- balance) is not among the rows before is a balance that changed.
    INSERT INTO stream_events (channel, kind, ref)
    SELECT 'account:' || wallet, 'balance', '{}'::jsonb
    FROM (SELECT wallet, balance FROM after_update EXCEPT SELECT wallet, balance FROM before_update) changed;
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;

-- A statement's trades, one event per channel (migration 37): grouped by market and by wallet
-- on their own, instead of making each trade's two channel names first and grouping all of
-- them by that text (a sort of twice the trades by a string). The same events in the same
-- order: channels in the order of their first trade, a market's before its trader's.
CREATE OR REPLACE FUNCTION stream_trades() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Channels in the order of their first trade, a market's before its trader's.
    WITH numbered AS (SELECT id, market_id, wallet, row_number() OVER () AS n FROM inserted)
    INSERT INTO stream_events (channel, kind, ref)
    SELECT channel, 'trade', jsonb_build_object('trade_ids', trade_ids)
    FROM (SELECT 'market:' || market_id AS channel, jsonb_agg(id ORDER BY n) AS trade_ids, min(n) AS first, 1 AS k
          FROM numbered GROUP BY market_id
          UNION ALL
          SELECT 'account:' || wallet, jsonb_agg(id ORDER BY n), min(n), 2
          FROM numbered WHERE wallet IS NOT NULL GROUP BY wallet) per_channel
    ORDER BY first, k;
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;
