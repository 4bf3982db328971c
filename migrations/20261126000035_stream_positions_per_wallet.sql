-- A `positions` stream event says "this account's positions changed" (its body is empty; the
-- WebSocket renders the account's positions when it delivers it), so one per account per
-- statement says all the statement's rows would: a catch-up batch moving a wallet's positions
-- in fifty markets appended fifty identical events, each rendered and sent.
CREATE OR REPLACE FUNCTION stream_positions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO stream_events (channel, kind, ref) SELECT DISTINCT 'account:' || wallet, 'positions', '{}'::jsonb FROM changed;
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;
