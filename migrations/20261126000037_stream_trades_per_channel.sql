-- A statement's trades append one stream event per channel, holding the trades' ids in the order
-- they were inserted ({"trade_ids": [...]}), instead of one event per trade and channel: catching
-- up, a batch of 5,000 trades in 100 markets appended 10,000 rows here and now about 1,100 (one
-- per market and wallet). The publisher still sends one update per trade, each with its own
-- sequence number (services::stream), so subscribers see what they saw before. Events of the
-- earlier shape ({"trade_id": ...}) still publish as one update.
CREATE OR REPLACE FUNCTION stream_trades() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO stream_events (channel, kind, ref)
    SELECT channel, 'trade', jsonb_build_object('trade_ids', jsonb_agg(trade_id ORDER BY n))
    FROM (SELECT t.id AS trade_id, t.n, e.k, e.channel
          FROM (SELECT id, market_id, wallet, row_number() OVER () AS n FROM inserted) t,
               LATERAL (VALUES (1, 'market:' || t.market_id), (2, 'account:' || t.wallet)) AS e(k, channel)
          WHERE e.channel IS NOT NULL) per_channel
    -- Channels in the order of their first trade, a market's before its trader's (as before).
    GROUP BY channel ORDER BY min(n), min(k);
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;
