-- What an API key may do: `read` (GET endpoints), `trade` (every other endpoint keys may call,
-- but withdrawals) and `withdraw` (POST /v1/withdraw). Keys made before scopes existed keep what
-- they could do then except withdrawing: `read` and `trade`.
ALTER TABLE api_keys
    ADD COLUMN scopes TEXT[] NOT NULL DEFAULT ARRAY['read', 'trade']
        CHECK (cardinality(scopes) BETWEEN 1 AND 3 AND scopes <@ ARRAY['read', 'trade', 'withdraw']);
