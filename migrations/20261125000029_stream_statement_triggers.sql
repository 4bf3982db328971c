-- The WebSocket stream's events for trades and positions, appended once per statement from its
-- transition table instead of once per row: the indexer projects hundreds of trades in one
-- statement, and a row trigger's plpgsql call and notification per row was a fifth of its time.
-- The same events, in the same order (a trade's market event, then its account event).
DROP TRIGGER stream_trades ON trades;
DROP FUNCTION stream_trades();
CREATE FUNCTION stream_trades() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO stream_events (channel, kind, ref)
    SELECT e.channel, 'trade', jsonb_build_object('trade_id', t.id)
    FROM inserted t, LATERAL (VALUES (1, 'market:' || t.market_id), (2, 'account:' || t.wallet)) AS e(n, channel)
    WHERE e.channel IS NOT NULL;
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER stream_trades AFTER INSERT ON trades REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION stream_trades();

DROP TRIGGER stream_positions ON positions;
DROP FUNCTION stream_positions();
CREATE FUNCTION stream_positions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO stream_events (channel, kind, ref) SELECT 'account:' || wallet, 'positions', '{}'::jsonb FROM changed;
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;
-- A transition table belongs to one event: a trigger each.
CREATE TRIGGER stream_positions_insert AFTER INSERT ON positions REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION stream_positions();
CREATE TRIGGER stream_positions_update AFTER UPDATE ON positions REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION stream_positions();
CREATE TRIGGER stream_positions_delete AFTER DELETE ON positions REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION stream_positions();
