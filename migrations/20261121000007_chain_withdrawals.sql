-- Withdrawals as the program executed them (Withdrawn events), whoever sent them: the record
-- that USDC left a vault. The service's own withdrawal requests, when it has them, point here.
CREATE TABLE chain_withdrawals (
    signature   TEXT NOT NULL,
    ix_index    INTEGER NOT NULL,
    wallet      TEXT NOT NULL,
    destination TEXT NOT NULL,
    amount      BIGINT NOT NULL CHECK (amount > 0),
    at          TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (signature, ix_index)
);
CREATE INDEX chain_withdrawals_wallet ON chain_withdrawals (wallet, at DESC);
