-- A stream row per statement: each trigger appends one row holding, in order, every event its
-- statement (or, for the row triggers, its row) makes, where it appended a row per event.
--
-- A group of seven trades in one market appended 23 rows (a market's and a trader's `trade`
-- event per channel, a `positions` and a `balance` event per trader, the market's own), each a
-- heap tuple and a primary-key entry in the ledger writer's statement and a delete in the
-- publisher's; it now appends four. The publisher reads a row's events in order and publishes
-- them as it did (one update per trade of a `trade` event), numbering a row's updates by `part`.
ALTER TABLE stream_events ADD COLUMN events JSONB;
-- {"channel": market:<uuid> | series:<slug> | markets | account:<wallet>,
--  "kind": trade | market | round | balance | positions | deposit | withdrawal,
--  "ref": what changed}
UPDATE stream_events SET events = jsonb_build_array(jsonb_build_object('channel', channel, 'kind', kind, 'ref', ref));
ALTER TABLE stream_events ALTER COLUMN events SET NOT NULL, DROP COLUMN channel, DROP COLUMN kind, DROP COLUMN ref;

-- Every unpublished event, a row's in its order (`n` from 1): what the publisher will publish,
-- as an operator or a test reads it.
CREATE VIEW unpublished_events AS
SELECT e.id, x.n, x.event->>'channel' AS channel, x.event->>'kind' AS kind, x.event->'ref' AS ref, e.created_at
FROM stream_events e, jsonb_array_elements(e.events) WITH ORDINALITY AS x(event, n);

-- One event as a row of its own (the row triggers of deposits and withdrawals).
CREATE OR REPLACE FUNCTION stream_append(channel TEXT, kind TEXT, ref JSONB) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO stream_events (events) VALUES (jsonb_build_array(jsonb_build_object('channel', channel, 'kind', kind, 'ref', ref)));
    -- Wakes the publisher; notifications with the same payload in one transaction are one.
    PERFORM pg_notify('fm_stream', '');
END $$;

CREATE OR REPLACE FUNCTION stream_markets() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    slug TEXT;
    made JSONB;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.status = OLD.status AND NEW.yes_price_ppm = OLD.yes_price_ppm
       AND NEW.total_volume = OLD.total_volume AND NEW.trade_count = OLD.trade_count THEN
        RETURN NULL;
    END IF;
    made := jsonb_build_array(jsonb_build_object('channel', 'market:' || NEW.id, 'kind', 'market', 'ref', jsonb_build_object('market_id', NEW.id)));
    IF TG_OP = 'INSERT' OR NEW.status <> OLD.status THEN
        SELECT s.slug INTO slug FROM series s WHERE s.id = NEW.series_id;
        made := made
            || jsonb_build_object('channel', 'series:' || slug, 'kind', 'round', 'ref', jsonb_build_object('market_id', NEW.id))
            || jsonb_build_object('channel', 'markets', 'kind', 'market', 'ref', jsonb_build_object('market_id', NEW.id));
    END IF;
    INSERT INTO stream_events (events) VALUES (made);
    PERFORM pg_notify('fm_stream', '');
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION stream_balances_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO stream_events (events)
    SELECT jsonb_agg(jsonb_build_object('channel', 'account:' || wallet, 'kind', 'balance', 'ref', '{}'::jsonb))
    FROM inserted HAVING count(*) > 0;
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION stream_balances_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A wallet's row is updated at most once a statement (its key): a row after whose (wallet,
    -- balance) is not among the rows before is a balance that changed.
    INSERT INTO stream_events (events)
    SELECT jsonb_agg(jsonb_build_object('channel', 'account:' || wallet, 'kind', 'balance', 'ref', '{}'::jsonb) ORDER BY wallet)
    FROM (SELECT wallet, balance FROM after_update EXCEPT SELECT wallet, balance FROM before_update) changed
    HAVING count(*) > 0;
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION stream_positions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- One event per account however many of its positions changed.
    INSERT INTO stream_events (events)
    SELECT jsonb_agg(jsonb_build_object('channel', 'account:' || wallet, 'kind', 'positions', 'ref', '{}'::jsonb) ORDER BY wallet)
    FROM (SELECT DISTINCT wallet FROM changed) accounts
    HAVING count(*) > 0;
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION stream_trades() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- An event per channel holding its trades in order; channels in the order of their first
    -- trade, a market's before its trader's.
    WITH numbered AS (SELECT id, market_id, wallet, row_number() OVER () AS n FROM inserted)
    INSERT INTO stream_events (events)
    SELECT jsonb_agg(jsonb_build_object('channel', channel, 'kind', 'trade', 'ref', jsonb_build_object('trade_ids', trade_ids)) ORDER BY first, k)
    FROM (SELECT 'market:' || market_id AS channel, jsonb_agg(id ORDER BY n) AS trade_ids, min(n) AS first, 1 AS k
          FROM numbered GROUP BY market_id
          UNION ALL
          SELECT 'account:' || wallet, jsonb_agg(id ORDER BY n), min(n), 2
          FROM numbered WHERE wallet IS NOT NULL GROUP BY wallet) per_channel
    HAVING count(*) > 0;
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;
