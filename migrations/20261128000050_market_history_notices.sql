-- A market's trades and price points notify the market rows' channel with the market's id, as a
-- change to its row does, so the API keeps its trades, prices and rounds pages by the market
-- rows' version (api/src/http/routes/markets.rs). A trade projected with its market's row sends
-- the same notice as the row's own trigger, and Postgres delivers a transaction's identical
-- notices once. A trade projected behind its market's count (its row unchanged: an event
-- projected after a later one) or a price point written alone is announced by these; a
-- truncation sends '*'.

CREATE FUNCTION notify_market_history() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('fm_market_terms', '*');
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('fm_market_terms', market_id::text) FROM (SELECT DISTINCT market_id FROM deleted) m;
    ELSE
        PERFORM pg_notify('fm_market_terms', market_id::text) FROM (SELECT DISTINCT market_id FROM changed) m;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER notify_market_history_inserted AFTER INSERT ON trades
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION notify_market_history();
CREATE TRIGGER notify_market_history_updated AFTER UPDATE ON trades
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION notify_market_history();
CREATE TRIGGER notify_market_history_deleted AFTER DELETE ON trades
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION notify_market_history();
CREATE TRIGGER notify_market_history_inserted AFTER INSERT ON market_prices
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION notify_market_history();
CREATE TRIGGER notify_market_history_updated AFTER UPDATE ON market_prices
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION notify_market_history();
CREATE TRIGGER notify_market_history_deleted AFTER DELETE ON market_prices
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION notify_market_history();
CREATE TRIGGER notify_market_history_truncated AFTER TRUNCATE ON trades
    FOR EACH STATEMENT EXECUTE FUNCTION notify_market_history();
CREATE TRIGGER notify_market_history_truncated AFTER TRUNCATE ON market_prices
    FOR EACH STATEMENT EXECUTE FUNCTION notify_market_history();
