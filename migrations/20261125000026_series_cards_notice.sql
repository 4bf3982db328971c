-- Tells every replica's series listing (api/src/services/series_cards.rs) that a series' card
-- changed: the series itself, or a round of it in what a card shows (status, times, price,
-- volume, trades, prior). Sent with the changing transaction, so delivered once it commits;
-- notices with the same id in one transaction arrive once.
CREATE FUNCTION notify_series_card() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'series' THEN
        PERFORM pg_notify('fm_series_cards', coalesce(NEW.id, OLD.id)::text);
    ELSE
        PERFORM pg_notify('fm_series_cards', coalesce(NEW.series_id, OLD.series_id)::text);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER notify_series_card AFTER INSERT OR UPDATE OR DELETE ON series
    FOR EACH ROW EXECUTE FUNCTION notify_series_card();
CREATE TRIGGER notify_series_card_insert_delete AFTER INSERT OR DELETE ON markets
    FOR EACH ROW EXECUTE FUNCTION notify_series_card();
CREATE TRIGGER notify_series_card_update AFTER UPDATE ON markets
    FOR EACH ROW
    WHEN ((OLD.series_id, OLD.status, OLD.round_number, OLD.open_ts, OLD.close_ts, OLD.settlement_ts, OLD.yes_price_ppm,
           OLD.total_volume, OLD.trade_count, OLD.ou_prior_ppm, OLD.ou_confidence_ppm)
          IS DISTINCT FROM (NEW.series_id, NEW.status, NEW.round_number, NEW.open_ts, NEW.close_ts, NEW.settlement_ts,
           NEW.yes_price_ppm, NEW.total_volume, NEW.trade_count, NEW.ou_prior_ppm, NEW.ou_confidence_ppm))
    EXECUTE FUNCTION notify_series_card();
