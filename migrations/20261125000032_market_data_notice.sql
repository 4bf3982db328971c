-- Tells every replica's market-data responses (api/src/services/market_data_version.rs) that
-- what the market-data endpoints show changed: any statement on the collectors' tables. The
-- collectors write every few minutes; one notice per statement, identical notices in one
-- transaction arrive once, after it commits.
CREATE TRIGGER notify_market_data AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON perps
    FOR EACH STATEMENT EXECUTE FUNCTION notify_channel('fm_market_data');
CREATE TRIGGER notify_market_data AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON interval_changes
    FOR EACH STATEMENT EXECUTE FUNCTION notify_channel('fm_market_data');
CREATE TRIGGER notify_market_data AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON crowd_latest
    FOR EACH STATEMENT EXECUTE FUNCTION notify_channel('fm_market_data');
CREATE TRIGGER notify_market_data AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON crowd_history
    FOR EACH STATEMENT EXECUTE FUNCTION notify_channel('fm_market_data');
