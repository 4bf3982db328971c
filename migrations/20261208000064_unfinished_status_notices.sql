-- A market row that is or was pending, closed or resolving also names its status on the market
-- rows' channel (`status:<status>`), so the API keeps a listing of one of those statuses
-- (`GET /v1/markets?status=…`) by that status' notices alone: trades on open markets leave it
-- kept (api/src/services/market_cache.rs). Settled and voided rows name their
-- series (migration 62), which their listings follow. A change that brings a row into one of
-- these statuses names it through NEW, one that takes it out or deletes the row through OLD.
CREATE OR REPLACE FUNCTION notify_market_terms() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fm_market_terms', coalesce(NEW.id, OLD.id)::text);
    IF OLD.status IN ('settled', 'voided') THEN
        PERFORM pg_notify('fm_market_terms', 'series:' || OLD.series_id);
    END IF;
    IF NEW.status IN ('settled', 'voided') THEN
        PERFORM pg_notify('fm_market_terms', 'series:' || NEW.series_id);
    END IF;
    IF OLD.status IN ('pending', 'closed', 'resolving') THEN
        PERFORM pg_notify('fm_market_terms', 'status:' || OLD.status);
    END IF;
    IF NEW.status IN ('pending', 'closed', 'resolving') THEN
        PERFORM pg_notify('fm_market_terms', 'status:' || NEW.status);
    END IF;
    RETURN NULL;
END $$;
