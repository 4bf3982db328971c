-- The projection's side effects have one author: the tables' triggers. Every statement that writes
-- trades, positions, vault balances, markets or trader days — the trade statement included,
-- whatever transaction it runs in — gets its stream events and trader totals from the triggers,
-- and its market references checked by foreign keys. The setting `fm.done_by_trade_statement`,
-- on which these triggers skipped for a trade statement that wrote the same rows from CTEs of its
-- own, is gone with those CTEs.
DROP TRIGGER stream_markets ON markets;
CREATE TRIGGER stream_markets AFTER INSERT OR UPDATE ON markets FOR EACH ROW EXECUTE FUNCTION stream_markets();

DROP TRIGGER stream_trades ON trades;
CREATE TRIGGER stream_trades AFTER INSERT ON trades REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT
    EXECUTE FUNCTION stream_trades();

DROP TRIGGER stream_positions_insert ON positions;
DROP TRIGGER stream_positions_update ON positions;
CREATE TRIGGER stream_positions_insert AFTER INSERT ON positions REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION stream_positions();
CREATE TRIGGER stream_positions_update AFTER UPDATE ON positions REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION stream_positions();

DROP TRIGGER stream_balances_insert ON vault_balances;
DROP TRIGGER stream_balances_update ON vault_balances;
CREATE TRIGGER stream_balances_insert AFTER INSERT ON vault_balances REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT
    EXECUTE FUNCTION stream_balances_inserted();
CREATE TRIGGER stream_balances_update AFTER UPDATE ON vault_balances REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update
    FOR EACH STATEMENT EXECUTE FUNCTION stream_balances_updated();

DROP TRIGGER total_inserted_trader_stats ON trader_stats;
DROP TRIGGER total_updated_trader_stats ON trader_stats;
CREATE TRIGGER total_inserted_trader_stats AFTER INSERT ON trader_stats REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT
    EXECUTE FUNCTION total_inserted_trader_stats();
CREATE TRIGGER total_updated_trader_stats AFTER UPDATE ON trader_stats REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update
    FOR EACH STATEMENT EXECUTE FUNCTION total_updated_trader_stats();

-- Trades, price points and positions reference their market by foreign key again, in place of
-- the per-statement checks that stood in for it (docs/performance.md, "Side effects in one place,
-- references by foreign key", has what each costs).
DROP TRIGGER trades_market_exists ON trades;
DROP TRIGGER positions_market_exists ON positions;
DROP TRIGGER market_prices_market_exists ON market_prices;
DROP TRIGGER trades_market_moved ON trades;
DROP TRIGGER positions_market_moved ON positions;
DROP TRIGGER market_prices_market_moved ON market_prices;
DROP TRIGGER markets_still_referenced ON markets;
DROP TRIGGER markets_truncated_while_referenced ON markets;
DROP FUNCTION require_referenced_markets();
DROP FUNCTION require_referenced_market();
DROP FUNCTION refuse_referenced_market_change();
DROP FUNCTION refuse_truncating_referenced_markets();
ALTER TABLE trades ADD CONSTRAINT trades_market_id_fkey FOREIGN KEY (market_id) REFERENCES markets (id);
ALTER TABLE market_prices ADD CONSTRAINT market_prices_market_id_fkey FOREIGN KEY (market_id) REFERENCES markets (id);
ALTER TABLE positions ADD CONSTRAINT positions_market_id_fkey FOREIGN KEY (market_id) REFERENCES markets (id);
