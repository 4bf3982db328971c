-- The vault-balance guard orders balances by (slot, position of the transaction in its block):
-- two trades of one wallet in one slot, projected in reverse order, must leave the later
-- transaction's balance. 0 where the node did not report the position.
ALTER TABLE vault_balances ADD COLUMN tx_index INT NOT NULL DEFAULT 0;
