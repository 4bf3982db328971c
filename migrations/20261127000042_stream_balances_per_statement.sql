-- The WebSocket stream's balance events appended once per statement from its transition tables,
-- as trades' and positions' are (migration 29), instead of a row trigger calling
-- `stream_append` for each row: the projection's turn, which every trade waits on, fired it for
-- each wallet of each group. The same events: one per inserted balance, one per updated balance
-- that changed.
DROP TRIGGER stream_balances ON vault_balances;
DROP FUNCTION stream_balances();

CREATE FUNCTION stream_balances_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO stream_events (channel, kind, ref) SELECT 'account:' || wallet, 'balance', '{}'::jsonb FROM inserted;
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION stream_balances_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A statement updates a wallet's row at most once (its key), so the join pairs each row's
    -- before and after.
    INSERT INTO stream_events (channel, kind, ref)
    SELECT 'account:' || n.wallet, 'balance', '{}'::jsonb
    FROM after_update n JOIN before_update o USING (wallet)
    WHERE n.balance <> o.balance;
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;

-- A transition table belongs to one event: a trigger each.
CREATE TRIGGER stream_balances_insert AFTER INSERT ON vault_balances REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION stream_balances_inserted();
CREATE TRIGGER stream_balances_update AFTER UPDATE ON vault_balances REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update
    FOR EACH STATEMENT EXECUTE FUNCTION stream_balances_updated();
