-- The projection's three hottest tables keep their reference to the market with a check per
-- statement instead of a foreign key's check per row. A foreign key runs one look-up and row lock
-- of the market for every inserted row: catching up, 10,000 of them for the trades and 10,000 for
-- the price points of every 10,000-trade statement, about 1.1 s of a 100,000-event catch-up
-- (README, "Indexer catch-up"). The statement trigger does the same per distinct market: it locks
-- each referenced market as a foreign key's check does (FOR KEY SHARE, so a market cannot be
-- deleted until the inserting transaction ends) and refuses the statement if one is missing; a
-- market is refused deletion, truncation or a new id while anything references it, as the foreign key's
-- RESTRICT did. Same SQLSTATE (23503, foreign_key_violation). Tested by
-- `markets::market_references_are_enforced_per_statement`.
ALTER TABLE trades DROP CONSTRAINT trades_market_id_fkey;
ALTER TABLE market_prices DROP CONSTRAINT market_prices_market_id_fkey;
ALTER TABLE positions DROP CONSTRAINT positions_market_id_fkey;

CREATE FUNCTION require_referenced_markets() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing UUID;
BEGIN
    -- Locked in id order (two statements locking the same markets never wait on each other in a
    -- circle), then every referenced market must be among them.
    PERFORM 1 FROM markets WHERE id IN (SELECT market_id FROM referencing) ORDER BY id FOR KEY SHARE;
    SELECT r.market_id INTO missing FROM referencing r
    WHERE r.market_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM markets m WHERE m.id = r.market_id) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'insert or update on table "%" violates its reference to markets', TG_TABLE_NAME
            USING ERRCODE = 'foreign_key_violation', DETAIL = format('Key (market_id)=(%s) is not present in table "markets".', missing);
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION require_referenced_market() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM markets WHERE id = NEW.market_id FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'insert or update on table "%" violates its reference to markets', TG_TABLE_NAME
            USING ERRCODE = 'foreign_key_violation', DETAIL = format('Key (market_id)=(%s) is not present in table "markets".', NEW.market_id);
    END IF;
    RETURN NULL;
END $$;

-- Inserts are checked per statement; a changed market_id (nothing does that) per row. A trigger
-- with a column list takes no transition table, and the upserts of positions never set the
-- column, so the row trigger never fires for them.
CREATE TRIGGER trades_market_exists AFTER INSERT ON trades REFERENCING NEW TABLE AS referencing
    FOR EACH STATEMENT EXECUTE FUNCTION require_referenced_markets();
CREATE TRIGGER trades_market_moved AFTER UPDATE OF market_id ON trades
    FOR EACH ROW WHEN (OLD.market_id IS DISTINCT FROM NEW.market_id) EXECUTE FUNCTION require_referenced_market();
CREATE TRIGGER market_prices_market_exists AFTER INSERT ON market_prices REFERENCING NEW TABLE AS referencing
    FOR EACH STATEMENT EXECUTE FUNCTION require_referenced_markets();
CREATE TRIGGER market_prices_market_moved AFTER UPDATE OF market_id ON market_prices
    FOR EACH ROW WHEN (OLD.market_id IS DISTINCT FROM NEW.market_id) EXECUTE FUNCTION require_referenced_market();
CREATE TRIGGER positions_market_exists AFTER INSERT ON positions REFERENCING NEW TABLE AS referencing
    FOR EACH STATEMENT EXECUTE FUNCTION require_referenced_markets();
CREATE TRIGGER positions_market_moved AFTER UPDATE OF market_id ON positions
    FOR EACH ROW WHEN (OLD.market_id IS DISTINCT FROM NEW.market_id) EXECUTE FUNCTION require_referenced_market();

-- The other side: a market still referenced is neither deleted nor given another id. The row
-- lock a delete takes first waits for any transaction that locked the market above; the checks
-- then read what it committed.
CREATE FUNCTION refuse_referenced_market_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    referencing TEXT;
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.id = NEW.id THEN
        RETURN NEW;
    END IF;
    referencing := CASE
        WHEN EXISTS (SELECT 1 FROM trades WHERE market_id = OLD.id) THEN 'trades'
        WHEN EXISTS (SELECT 1 FROM market_prices WHERE market_id = OLD.id) THEN 'market_prices'
        WHEN EXISTS (SELECT 1 FROM positions WHERE market_id = OLD.id) THEN 'positions'
    END;
    IF referencing IS NOT NULL THEN
        RAISE EXCEPTION 'update or delete on table "markets" violates the reference from table "%"', referencing
            USING ERRCODE = 'foreign_key_violation', DETAIL = format('Key (id)=(%s) is still referenced from table "%s".', OLD.id, referencing);
    END IF;
    RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
END $$;
CREATE TRIGGER markets_still_referenced BEFORE DELETE OR UPDATE OF id ON markets
    FOR EACH ROW EXECUTE FUNCTION refuse_referenced_market_change();

-- TRUNCATE fires no row trigger: truncating markets (which their other references refuse unless
-- CASCADE) must not leave these rows behind either. Truncate them first.
CREATE FUNCTION refuse_truncating_referenced_markets() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM trades) OR EXISTS (SELECT 1 FROM market_prices) OR EXISTS (SELECT 1 FROM positions) THEN
        RAISE EXCEPTION 'cannot truncate table "markets" while trades, market_prices or positions reference it'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER markets_truncated_while_referenced BEFORE TRUNCATE ON markets
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_truncating_referenced_markets();
