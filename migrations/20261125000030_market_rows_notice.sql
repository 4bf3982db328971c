-- The market cache (api/src/services/market_cache.rs) now holds whole market rows, for
-- `GET /v1/markets/{id}` as well as quotes: it is told of a change to any column a market row
-- shows (migration 25 named only the pricing columns). Trades and settlements change a pricing
-- column or the status anyway, so this adds hardly any notices.
DROP TRIGGER notify_market_terms_update ON markets;
CREATE TRIGGER notify_market_terms_update AFTER UPDATE ON markets
    FOR EACH ROW
    WHEN ((OLD.series_id, OLD.round_number, OLD.status, OLD.open_ts, OLD.close_ts, OLD.settlement_ts, OLD.liquidity_b,
           OLD.q_yes, OLD.q_no, OLD.yes_price_ppm, OLD.total_volume, OLD.trade_count, OLD.ou_prior_ppm,
           OLD.ou_confidence_ppm, OLD.outcome, OLD.actual_rate, OLD.settled_at)
          IS DISTINCT FROM (NEW.series_id, NEW.round_number, NEW.status, NEW.open_ts, NEW.close_ts, NEW.settlement_ts,
           NEW.liquidity_b, NEW.q_yes, NEW.q_no, NEW.yes_price_ppm, NEW.total_volume, NEW.trade_count,
           NEW.ou_prior_ppm, NEW.ou_confidence_ppm, NEW.outcome, NEW.actual_rate, NEW.settled_at))
    EXECUTE FUNCTION notify_market_terms();

-- A market row shows its series' symbol, exchange and tier. Nothing changes them today; if
-- something does, every held row is dropped ('*').
CREATE FUNCTION notify_market_series() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fm_market_terms', '*');
    RETURN NULL;
END $$;
CREATE TRIGGER notify_market_series AFTER UPDATE ON series
    FOR EACH ROW
    WHEN ((OLD.symbol, OLD.exchange, OLD.tier) IS DISTINCT FROM (NEW.symbol, NEW.exchange, NEW.tier))
    EXECUTE FUNCTION notify_market_series();
