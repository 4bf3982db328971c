-- The WebSocket's event stream. Triggers on the projection's tables append what changed, in the
-- same transaction as the change (so nothing the chain did is missed, and a rolled-back change
-- announces nothing); the stream publisher (a singleton worker) publishes each event once to
-- Redis, in order of a sequence it assigns, and every replica forwards it to its subscribers.
-- An event names what changed (`ref`); the replica reads the current state to render it, in the
-- REST API's own formats.
CREATE TABLE stream_events (
    id           BIGSERIAL PRIMARY KEY,
    -- market:<uuid> | series:<slug> | markets | account:<wallet>
    channel      TEXT NOT NULL,
    -- trade | market | round | balance | positions | deposit | withdrawal
    kind         TEXT NOT NULL,
    ref          JSONB NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Set by the publisher with the sequence number it gave the event.
    seq          BIGINT,
    published_at TIMESTAMPTZ
);
CREATE INDEX stream_events_unpublished ON stream_events (id) WHERE published_at IS NULL;
CREATE INDEX stream_events_published ON stream_events (published_at) WHERE published_at IS NOT NULL;
CREATE SEQUENCE stream_seq;

CREATE FUNCTION stream_append(channel TEXT, kind TEXT, ref JSONB) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO stream_events (channel, kind, ref) VALUES (channel, kind, ref);
    -- Wakes the publisher; notifications with the same payload in one transaction are one.
    PERFORM pg_notify('fm_stream', '');
END $$;

CREATE FUNCTION stream_trades() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM stream_append('market:' || NEW.market_id, 'trade', jsonb_build_object('trade_id', NEW.id));
    IF NEW.wallet IS NOT NULL THEN
        PERFORM stream_append('account:' || NEW.wallet, 'trade', jsonb_build_object('trade_id', NEW.id));
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER stream_trades AFTER INSERT ON trades FOR EACH ROW EXECUTE FUNCTION stream_trades();

-- A market's price, volume or status moved: its own channel; a status change (or a new round)
-- also its series' channel and the all-markets channel.
CREATE FUNCTION stream_markets() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    slug TEXT;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.status = OLD.status AND NEW.yes_price_ppm = OLD.yes_price_ppm
       AND NEW.total_volume = OLD.total_volume AND NEW.trade_count = OLD.trade_count THEN
        RETURN NULL;
    END IF;
    PERFORM stream_append('market:' || NEW.id, 'market', jsonb_build_object('market_id', NEW.id));
    IF TG_OP = 'INSERT' OR NEW.status <> OLD.status THEN
        SELECT s.slug INTO slug FROM series s WHERE s.id = NEW.series_id;
        PERFORM stream_append('series:' || slug, 'round', jsonb_build_object('market_id', NEW.id));
        PERFORM stream_append('markets', 'market', jsonb_build_object('market_id', NEW.id));
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER stream_markets AFTER INSERT OR UPDATE ON markets FOR EACH ROW EXECUTE FUNCTION stream_markets();

CREATE FUNCTION stream_balances() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.balance = OLD.balance THEN
        RETURN NULL;
    END IF;
    PERFORM stream_append('account:' || NEW.wallet, 'balance', '{}'::jsonb);
    RETURN NULL;
END $$;
CREATE TRIGGER stream_balances AFTER INSERT OR UPDATE ON vault_balances FOR EACH ROW EXECUTE FUNCTION stream_balances();

CREATE FUNCTION stream_positions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM stream_append('account:' || coalesce(NEW.wallet, OLD.wallet), 'positions', '{}'::jsonb);
    RETURN NULL;
END $$;
CREATE TRIGGER stream_positions AFTER INSERT OR UPDATE OR DELETE ON positions FOR EACH ROW EXECUTE FUNCTION stream_positions();

CREATE FUNCTION stream_deposits() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.credited_at IS NOT DISTINCT FROM OLD.credited_at THEN
        RETURN NULL;
    END IF;
    PERFORM stream_append('account:' || NEW.wallet, 'deposit', jsonb_build_object('signature', NEW.signature, 'address', NEW.address));
    RETURN NULL;
END $$;
CREATE TRIGGER stream_deposits AFTER INSERT OR UPDATE ON deposit_transfers FOR EACH ROW EXECUTE FUNCTION stream_deposits();

CREATE FUNCTION stream_withdrawals() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.status = OLD.status THEN
        RETURN NULL;
    END IF;
    PERFORM stream_append('account:' || NEW.wallet, 'withdrawal', jsonb_build_object('id', NEW.id));
    RETURN NULL;
END $$;
CREATE TRIGGER stream_withdrawals AFTER INSERT OR UPDATE ON withdrawals FOR EACH ROW EXECUTE FUNCTION stream_withdrawals();
