-- The market listing (`GET /v1/markets`) is kept rendered by the market cache's version
-- (api/src/services/market_cache.rs), which moves with every `fm_market_terms` notice: a new
-- market must be one too, or a kept page would go on leaving it out. The cache itself only
-- drops the (absent) id.
CREATE TRIGGER notify_market_terms_insert AFTER INSERT ON markets
    FOR EACH ROW EXECUTE FUNCTION notify_market_terms();
