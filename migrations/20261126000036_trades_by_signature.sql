-- A transaction's trades by its signature: the service finds the id the projection gave the
-- trade it just sent (`store::markets::trade_id`). The only index that query could use was
-- `trades_by_position` (market, wallet), so each lookup read every trade of the wallet in that
-- market — growing with a trader's history (a 10-second benchmark's traders reached hundreds).
-- A hash index: equality is all it serves, and its entries are a hash code, not the 88-character
-- signature, so the projection's inserts pay little for it.
CREATE INDEX trades_by_signature ON trades USING hash (signature);
