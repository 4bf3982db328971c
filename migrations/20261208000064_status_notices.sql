-- A market row that is or was in any status but open also names that status on the market rows'
-- channel (`status:<status>`), so the API keeps a listing of one status
-- (`GET /v1/markets?status=…`) by that status' notices alone: trades on open markets leave it
-- kept (api/src/services/market_cache.rs). A change that brings a row into a status names it
-- through NEW, one that takes it out or deletes the row through OLD; Postgres sends a notice
-- once however often a transaction makes it. The series' notices of migration 62 stay.
CREATE OR REPLACE FUNCTION notify_market_terms() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fm_market_terms', coalesce(NEW.id, OLD.id)::text);
    IF OLD.status IN ('settled', 'voided') THEN
        PERFORM pg_notify('fm_market_terms', 'series:' || OLD.series_id);
    END IF;
    IF NEW.status IN ('settled', 'voided') THEN
        PERFORM pg_notify('fm_market_terms', 'series:' || NEW.series_id);
    END IF;
    IF OLD.status <> 'open' THEN
        PERFORM pg_notify('fm_market_terms', 'status:' || OLD.status);
    END IF;
    IF NEW.status <> 'open' THEN
        PERFORM pg_notify('fm_market_terms', 'status:' || NEW.status);
    END IF;
    RETURN NULL;
END $$;
