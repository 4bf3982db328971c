-- Tells every replica's quote cache (api/src/services/market_cache.rs) that a market's pricing
-- state changed. Sent with the changing transaction, so delivered once it commits.
CREATE FUNCTION notify_market_terms() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fm_market_terms', coalesce(NEW.id, OLD.id)::text);
    RETURN NULL;
END $$;
CREATE TRIGGER notify_market_terms_update AFTER UPDATE OF status, open_ts, close_ts, liquidity_b, q_yes, q_no ON markets
    FOR EACH ROW
    WHEN ((OLD.status, OLD.open_ts, OLD.close_ts, OLD.liquidity_b, OLD.q_yes, OLD.q_no)
          IS DISTINCT FROM (NEW.status, NEW.open_ts, NEW.close_ts, NEW.liquidity_b, NEW.q_yes, NEW.q_no))
    EXECUTE FUNCTION notify_market_terms();
CREATE TRIGGER notify_market_terms_delete AFTER DELETE ON markets
    FOR EACH ROW EXECUTE FUNCTION notify_market_terms();
