-- How many withdrawal destinations' USDC token accounts (2,039,280 lamports of rent each) the
-- operator pays for per UTC day, against FM_OPERATOR_TOKEN_ACCOUNTS_PER_DAY. A withdrawal that
-- needs one takes it from this budget in the transaction that queues it.
CREATE TABLE operator_paid_token_accounts (
    day      DATE PRIMARY KEY,
    accounts INT NOT NULL CHECK (accounts >= 0)
);

-- A user's withdrawals that create an account, counted per day.
CREATE INDEX withdrawals_creating_accounts ON withdrawals (user_id, created_at) WHERE create_account;
