-- A group of trades the service applied ahead is one statement and a transaction of its own
-- (indexer/src/projection/trades.rs). It now does itself, from its own CTEs, what eleven
-- triggers did for it from its transition tables — each a plpgsql call and one or two
-- statements: the stream events its rows make (six stream triggers), the trader totals (two),
-- and the check that every market its trades, positions and price points reference exists and
-- stays (three: the statement locks those markets `FOR KEY SHARE` itself, as the check did). It
-- says so for the rest of its transaction in the setting `fm.done_by_trade_statement`, and those
-- triggers skip on it. Every trade waits on that one statement. Every other writer of these
-- tables — catching up included — never sets the setting and keeps the triggers.
--
-- The setting is transaction-local (`set_config(.., true)`), so it cannot outlive the trade
-- statement's own transaction; the statement sets it only when told it is a transaction on
-- its own. The same events and totals either way: tested by
-- `projection::a_group_applied_ahead_streams_what_its_triggers_would`; the market references by
-- `projection::a_market_deleted_under_a_group_applied_ahead_is_not_referenced`.
DROP TRIGGER stream_markets ON markets;
CREATE TRIGGER stream_markets AFTER INSERT OR UPDATE ON markets FOR EACH ROW
    WHEN (current_setting('fm.done_by_trade_statement', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION stream_markets();

DROP TRIGGER stream_trades ON trades;
CREATE TRIGGER stream_trades AFTER INSERT ON trades REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT
    WHEN (current_setting('fm.done_by_trade_statement', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION stream_trades();

DROP TRIGGER stream_positions_insert ON positions;
DROP TRIGGER stream_positions_update ON positions;
CREATE TRIGGER stream_positions_insert AFTER INSERT ON positions REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    WHEN (current_setting('fm.done_by_trade_statement', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION stream_positions();
CREATE TRIGGER stream_positions_update AFTER UPDATE ON positions REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    WHEN (current_setting('fm.done_by_trade_statement', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION stream_positions();

DROP TRIGGER stream_balances_insert ON vault_balances;
DROP TRIGGER stream_balances_update ON vault_balances;
CREATE TRIGGER stream_balances_insert AFTER INSERT ON vault_balances REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT
    WHEN (current_setting('fm.done_by_trade_statement', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION stream_balances_inserted();
CREATE TRIGGER stream_balances_update AFTER UPDATE ON vault_balances REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update
    FOR EACH STATEMENT
    WHEN (current_setting('fm.done_by_trade_statement', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION stream_balances_updated();

DROP TRIGGER total_inserted_trader_stats ON trader_stats;
DROP TRIGGER total_updated_trader_stats ON trader_stats;
CREATE TRIGGER total_inserted_trader_stats AFTER INSERT ON trader_stats REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT
    WHEN (current_setting('fm.done_by_trade_statement', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION total_inserted_trader_stats();
CREATE TRIGGER total_updated_trader_stats AFTER UPDATE ON trader_stats REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update
    FOR EACH STATEMENT
    WHEN (current_setting('fm.done_by_trade_statement', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION total_updated_trader_stats();

DROP TRIGGER trades_market_exists ON trades;
DROP TRIGGER positions_market_exists ON positions;
DROP TRIGGER market_prices_market_exists ON market_prices;
CREATE TRIGGER trades_market_exists AFTER INSERT ON trades REFERENCING NEW TABLE AS referencing FOR EACH STATEMENT
    WHEN (current_setting('fm.done_by_trade_statement', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION require_referenced_markets();
CREATE TRIGGER positions_market_exists AFTER INSERT ON positions REFERENCING NEW TABLE AS referencing FOR EACH STATEMENT
    WHEN (current_setting('fm.done_by_trade_statement', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION require_referenced_markets();
CREATE TRIGGER market_prices_market_exists AFTER INSERT ON market_prices REFERENCING NEW TABLE AS referencing FOR EACH STATEMENT
    WHEN (current_setting('fm.done_by_trade_statement', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION require_referenced_markets();
