-- A market row that is or was a settled or voided round also names its series on the market
-- rows' channel (`series:<id>`), so the API keeps a series' rounds page
-- (`GET /v1/series/{slug}/rounds`) by its series' own version: trades and changes to open
-- markets leave it kept (api/src/services/market_cache.rs). The row's own notice (its id) is
-- sent as before. A change that makes a round settled names its series through NEW, one that
-- undoes it or deletes the row through OLD.
CREATE OR REPLACE FUNCTION notify_market_terms() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fm_market_terms', coalesce(NEW.id, OLD.id)::text);
    IF OLD.status IN ('settled', 'voided') THEN
        PERFORM pg_notify('fm_market_terms', 'series:' || OLD.series_id);
    END IF;
    IF NEW.status IN ('settled', 'voided') THEN
        PERFORM pg_notify('fm_market_terms', 'series:' || NEW.series_id);
    END IF;
    RETURN NULL;
END $$;
