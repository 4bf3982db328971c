-- The schema the migrations in this folder make, dumped from a migrated database (pg_dump
-- --schema-only). Generated: UPDATE_SCHEMA=1 cargo test -p indexer --lib schema; a test
-- fails when it no longer matches. The migrations are what runs; this file is for reading.
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

COMMENT ON EXTENSION pg_trgm IS 'text similarity measurement and index searching based on trigrams';

CREATE FUNCTION public.count_deleted_markets() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO market_status_counts (status, n) SELECT status, -count(*) FROM deleted GROUP BY status;
    RETURN NULL;
END $$;

CREATE FUNCTION public.count_inserted_markets() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO market_status_counts (status, n) SELECT status, count(*) FROM inserted GROUP BY status;
    RETURN NULL;
END $$;

CREATE FUNCTION public.count_market_status_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO market_status_counts (status, n) VALUES (OLD.status, -1), (NEW.status, 1);
    RETURN NULL;
END $$;

CREATE FUNCTION public.notify_channel() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify(TG_ARGV[0], '');
    RETURN NULL;
END $$;

CREATE FUNCTION public.notify_leaderboard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    wallets TEXT;
BEGIN
    IF TG_TABLE_NAME = 'users' THEN
        PERFORM pg_notify('fm_leaderboard', 'names');
        RETURN NULL;
    END IF;
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('fm_leaderboard', '*');
        RETURN NULL;
    ELSIF TG_OP = 'INSERT' THEN
        SELECT string_agg(DISTINCT wallet, ' ') INTO wallets FROM inserted;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT string_agg(DISTINCT wallet, ' ') INTO wallets FROM deleted;
    ELSE
        SELECT string_agg(DISTINCT wallet, ' ') INTO wallets
        FROM (SELECT wallet FROM before_update UNION ALL SELECT wallet FROM after_update) changed;
    END IF;
    IF wallets IS NOT NULL THEN
        PERFORM pg_notify('fm_leaderboard', CASE WHEN octet_length(wallets) < 7900 THEN wallets ELSE '*' END);
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION public.notify_market_history() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('fm_market_terms', '*');
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('fm_market_terms', market_id::text) FROM (SELECT DISTINCT market_id FROM deleted) m;
    ELSE
        PERFORM pg_notify('fm_market_terms', market_id::text) FROM (SELECT DISTINCT market_id FROM changed) m;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION public.notify_market_series() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('fm_market_terms', '*');
    RETURN NULL;
END $$;

CREATE FUNCTION public.notify_market_terms() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('fm_market_terms', coalesce(NEW.id, OLD.id)::text);
    IF OLD.status IN ('settled', 'voided') THEN
        PERFORM pg_notify('fm_market_terms', 'series:' || OLD.series_id);
    END IF;
    IF NEW.status IN ('settled', 'voided') THEN
        PERFORM pg_notify('fm_market_terms', 'series:' || NEW.series_id);
    END IF;
    IF OLD.status <> 'open' THEN
        PERFORM pg_notify('fm_market_terms', 'status:' || OLD.status);
    END IF;
    IF NEW.status <> 'open' THEN
        PERFORM pg_notify('fm_market_terms', 'status:' || NEW.status);
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION public.notify_series_card() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_TABLE_NAME = 'series' THEN
        PERFORM pg_notify('fm_series_cards', coalesce(NEW.id, OLD.id)::text);
    ELSE
        PERFORM pg_notify('fm_series_cards', coalesce(NEW.series_id, OLD.series_id)::text);
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION public.stream_append(channel text, kind text, ref jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO stream_events (events) VALUES (jsonb_build_array(jsonb_build_object('channel', channel, 'kind', kind, 'ref', ref)));
    -- Wakes the publisher; notifications with the same payload in one transaction are one.
    PERFORM pg_notify('fm_stream', '');
END $$;

CREATE FUNCTION public.stream_balances_inserted() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO stream_events (events)
    SELECT jsonb_agg(jsonb_build_object('channel', 'account:' || wallet, 'kind', 'balance', 'ref', '{}'::jsonb))
    FROM inserted HAVING count(*) > 0;
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION public.stream_balances_updated() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    -- A wallet's row is updated at most once a statement (its key): a row after whose (wallet,
    -- balance) is not among the rows before is a balance that changed.
    INSERT INTO stream_events (events)
    SELECT jsonb_agg(jsonb_build_object('channel', 'account:' || wallet, 'kind', 'balance', 'ref', '{}'::jsonb) ORDER BY wallet)
    FROM (SELECT wallet, balance FROM after_update EXCEPT SELECT wallet, balance FROM before_update) changed
    HAVING count(*) > 0;
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION public.stream_deposits() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.credited_at IS NOT DISTINCT FROM OLD.credited_at THEN
        RETURN NULL;
    END IF;
    PERFORM stream_append('account:' || NEW.wallet, 'deposit', jsonb_build_object('signature', NEW.signature, 'address', NEW.address));
    RETURN NULL;
END $$;

CREATE FUNCTION public.stream_markets() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    slug TEXT;
    made JSONB;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.status = OLD.status AND NEW.yes_price_ppm = OLD.yes_price_ppm
       AND NEW.total_volume = OLD.total_volume AND NEW.trade_count = OLD.trade_count THEN
        RETURN NULL;
    END IF;
    made := jsonb_build_array(jsonb_build_object('channel', 'market:' || NEW.id, 'kind', 'market', 'ref', jsonb_build_object('market_id', NEW.id)));
    IF TG_OP = 'INSERT' OR NEW.status <> OLD.status THEN
        SELECT s.slug INTO slug FROM series s WHERE s.id = NEW.series_id;
        made := made
            || jsonb_build_object('channel', 'series:' || slug, 'kind', 'round', 'ref', jsonb_build_object('market_id', NEW.id))
            || jsonb_build_object('channel', 'markets', 'kind', 'market', 'ref', jsonb_build_object('market_id', NEW.id));
    END IF;
    INSERT INTO stream_events (events) VALUES (made);
    PERFORM pg_notify('fm_stream', '');
    RETURN NULL;
END $$;

CREATE FUNCTION public.stream_positions() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    -- One event per account however many of its positions changed.
    INSERT INTO stream_events (events)
    SELECT jsonb_agg(jsonb_build_object('channel', 'account:' || wallet, 'kind', 'positions', 'ref', '{}'::jsonb) ORDER BY wallet)
    FROM (SELECT DISTINCT wallet FROM changed) accounts
    HAVING count(*) > 0;
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION public.stream_trades() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    -- An event per channel holding its trades in order; channels in the order of their first
    -- trade, a market's before its trader's.
    WITH numbered AS (SELECT id, market_id, wallet, row_number() OVER () AS n FROM inserted)
    INSERT INTO stream_events (events)
    SELECT jsonb_agg(jsonb_build_object('channel', channel, 'kind', 'trade', 'ref', jsonb_build_object('trade_ids', trade_ids)) ORDER BY first, k)
    FROM (SELECT 'market:' || market_id AS channel, jsonb_agg(id ORDER BY n) AS trade_ids, min(n) AS first, 1 AS k
          FROM numbered GROUP BY market_id
          UNION ALL
          SELECT 'account:' || wallet, jsonb_agg(id ORDER BY n), min(n), 2
          FROM numbered WHERE wallet IS NOT NULL GROUP BY wallet) per_channel
    HAVING count(*) > 0;
    IF FOUND THEN
        PERFORM pg_notify('fm_stream', '');
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION public.stream_withdrawals() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.status = OLD.status THEN
        RETURN NULL;
    END IF;
    PERFORM stream_append('account:' || NEW.wallet, 'withdrawal', jsonb_build_object('id', NEW.id));
    RETURN NULL;
END $$;

CREATE FUNCTION public.total_deleted_trader_stats() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    UPDATE trader_totals t SET volume = t.volume - d.volume, trades = t.trades - d.trades, realized_pnl = t.realized_pnl - d.realized_pnl,
        settled = t.settled - d.settled, wins = t.wins - d.wins
    FROM (SELECT wallet, sum(volume) AS volume, sum(trades) AS trades, sum(realized_pnl) AS realized_pnl, sum(settled) AS settled,
                 sum(wins) AS wins
          FROM deleted GROUP BY wallet) d
    WHERE t.wallet = d.wallet;
    -- A trader is on the board while it has a day on record.
    DELETE FROM trader_totals t
    WHERE t.wallet IN (SELECT wallet FROM deleted) AND NOT EXISTS (SELECT 1 FROM trader_stats s WHERE s.wallet = t.wallet);
    RETURN NULL;
END $$;

CREATE FUNCTION public.total_inserted_trader_stats() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO trader_totals AS t (wallet, volume, trades, realized_pnl, settled, wins)
    SELECT wallet, sum(volume), sum(trades), sum(realized_pnl), sum(settled), sum(wins)
    FROM inserted GROUP BY wallet ORDER BY wallet
    ON CONFLICT (wallet) DO UPDATE SET volume = t.volume + EXCLUDED.volume, trades = t.trades + EXCLUDED.trades,
        realized_pnl = t.realized_pnl + EXCLUDED.realized_pnl, settled = t.settled + EXCLUDED.settled, wins = t.wins + EXCLUDED.wins;
    RETURN NULL;
END $$;

CREATE FUNCTION public.total_truncated_trader_stats() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM trader_totals;
    RETURN NULL;
END $$;

CREATE FUNCTION public.total_updated_trader_stats() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO trader_totals AS t (wallet, volume, trades, realized_pnl, settled, wins)
    SELECT wallet, sum(volume), sum(trades), sum(realized_pnl), sum(settled), sum(wins)
    FROM (SELECT wallet, volume, trades, realized_pnl, settled, wins FROM after_update
          UNION ALL
          SELECT wallet, -volume, -trades, -realized_pnl, -settled, -wins FROM before_update) d
    GROUP BY wallet ORDER BY wallet
    ON CONFLICT (wallet) DO UPDATE SET volume = t.volume + EXCLUDED.volume, trades = t.trades + EXCLUDED.trades,
        realized_pnl = t.realized_pnl + EXCLUDED.realized_pnl, settled = t.settled + EXCLUDED.settled, wins = t.wins + EXCLUDED.wins;
    -- Only a day moved to another wallet can leave one with none.
    DELETE FROM trader_totals t
    WHERE t.wallet IN (SELECT wallet FROM before_update EXCEPT SELECT wallet FROM after_update)
      AND NOT EXISTS (SELECT 1 FROM trader_stats s WHERE s.wallet = t.wallet);
    RETURN NULL;
END $$;

CREATE TABLE public.api_keys (
    id uuid NOT NULL,
    user_id uuid NOT NULL,
    key_hash bytea NOT NULL,
    key_prefix text NOT NULL,
    label text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    scopes text[] DEFAULT ARRAY['read'::text, 'trade'::text] NOT NULL,
    CONSTRAINT api_keys_key_hash_check CHECK ((length(key_hash) = 32)),
    CONSTRAINT api_keys_label_check CHECK ((length(label) <= 64)),
    CONSTRAINT api_keys_scopes_check CHECK ((((cardinality(scopes) >= 1) AND (cardinality(scopes) <= 3)) AND (scopes <@ ARRAY['read'::text, 'trade'::text, 'withdraw'::text])))
);

CREATE TABLE public.chain_cursor (
    program text NOT NULL,
    signature text NOT NULL,
    slot bigint NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.chain_events (
    signature text NOT NULL,
    ix_index integer NOT NULL,
    event_index integer NOT NULL,
    slot bigint NOT NULL,
    kind text NOT NULL,
    data bytea NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.chain_withdrawals (
    signature text NOT NULL,
    ix_index integer NOT NULL,
    wallet text NOT NULL,
    destination text NOT NULL,
    amount bigint NOT NULL,
    at timestamp with time zone NOT NULL,
    CONSTRAINT chain_withdrawals_amount_check CHECK ((amount > 0))
);

CREATE TABLE public.crowd_history (
    exchange text NOT NULL,
    symbol text NOT NULL,
    ts timestamp with time zone NOT NULL,
    long_ppm integer NOT NULL,
    short_ppm integer NOT NULL,
    CONSTRAINT crowd_history_long_ppm_check CHECK (((long_ppm >= 0) AND (long_ppm <= 1000000))),
    CONSTRAINT crowd_history_short_ppm_check CHECK (((short_ppm >= 0) AND (short_ppm <= 1000000)))
);

CREATE TABLE public.crowd_latest (
    exchange text NOT NULL,
    symbol text NOT NULL,
    long_ppm integer NOT NULL,
    short_ppm integer NOT NULL,
    open_interest_cents bigint,
    observed_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT crowd_latest_long_ppm_check CHECK (((long_ppm >= 0) AND (long_ppm <= 1000000))),
    CONSTRAINT crowd_latest_open_interest_cents_check CHECK ((open_interest_cents >= 0)),
    CONSTRAINT crowd_latest_short_ppm_check CHECK (((short_ppm >= 0) AND (short_ppm <= 1000000)))
);

CREATE TABLE public.deposit_addresses (
    address text NOT NULL,
    wallet text NOT NULL,
    cursor text,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.deposit_transfers (
    signature text NOT NULL,
    address text NOT NULL,
    wallet text NOT NULL,
    amount bigint NOT NULL,
    slot bigint NOT NULL,
    source text NOT NULL,
    detected_at timestamp with time zone DEFAULT now() NOT NULL,
    sweep_signature text,
    credited_at timestamp with time zone,
    CONSTRAINT deposit_transfers_amount_check CHECK ((amount > 0)),
    CONSTRAINT deposit_transfers_check CHECK (((sweep_signature IS NULL) = (credited_at IS NULL))),
    CONSTRAINT deposit_transfers_source_check CHECK ((source = ANY (ARRAY['webhook'::text, 'reconciliation'::text])))
);

CREATE TABLE public.deposits (
    signature text NOT NULL,
    ix_index integer NOT NULL,
    wallet text NOT NULL,
    amount bigint NOT NULL,
    at timestamp with time zone NOT NULL,
    slot bigint,
    CONSTRAINT deposits_amount_check CHECK ((amount > 0))
);

CREATE TABLE public.embedded_accounts (
    address text NOT NULL,
    lamports bigint NOT NULL,
    owner text NOT NULL,
    data bytea NOT NULL,
    executable boolean NOT NULL,
    rent_epoch bigint NOT NULL
);

CREATE TABLE public.embedded_keys (
    role text NOT NULL,
    keypair bytea NOT NULL,
    CONSTRAINT embedded_keys_keypair_check CHECK ((length(keypair) = 64))
);

CREATE TABLE public.embedded_ledger (
    seq bigint NOT NULL,
    signature text NOT NULL,
    slot bigint NOT NULL,
    block_time bigint NOT NULL,
    err jsonb,
    account_keys text[] NOT NULL,
    signers text[] NOT NULL,
    header smallint[] NOT NULL,
    recent_blockhash text NOT NULL,
    instructions jsonb NOT NULL,
    inner_instructions jsonb NOT NULL,
    wire bytea,
    log_messages text[],
    fee bigint,
    compute_units bigint,
    pre_balances bigint[],
    post_balances bigint[],
    pre_token_balances jsonb,
    post_token_balances jsonb,
    return_data jsonb
)
WITH (toast_tuple_target='8160');

CREATE TABLE public.embedded_ledger_account_groups (
    address text NOT NULL,
    first_seq bigint NOT NULL,
    seqs bigint[] NOT NULL
);

CREATE SEQUENCE public.embedded_ledger_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.embedded_ledger_seq_seq OWNED BY public.embedded_ledger.seq;

CREATE TABLE public.faucet_grants (
    wallet text NOT NULL,
    day date NOT NULL,
    amount bigint NOT NULL,
    CONSTRAINT faucet_grants_amount_check CHECK ((amount >= 0))
);

CREATE TABLE public.idempotency_keys (
    user_id uuid NOT NULL,
    key text NOT NULL,
    fingerprint bytea NOT NULL,
    signature text,
    status smallint,
    response jsonb,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.interval_changes (
    id bigint NOT NULL,
    exchange text NOT NULL,
    symbol text NOT NULL,
    from_minutes integer NOT NULL,
    to_minutes integer NOT NULL,
    changed_at timestamp with time zone NOT NULL,
    CONSTRAINT interval_changes_check CHECK (((to_minutes > 0) AND (to_minutes <> from_minutes))),
    CONSTRAINT interval_changes_from_minutes_check CHECK ((from_minutes > 0))
);

CREATE TABLE public.interval_changes_by_exchange (
    exchange text NOT NULL,
    changes bigint NOT NULL,
    CONSTRAINT interval_changes_by_exchange_changes_check CHECK ((changes > 0))
);

CREATE TABLE public.interval_changes_by_symbol (
    symbol text NOT NULL,
    changes bigint NOT NULL,
    CONSTRAINT interval_changes_by_symbol_changes_check CHECK ((changes > 0))
);

CREATE SEQUENCE public.interval_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.interval_changes_id_seq OWNED BY public.interval_changes.id;

CREATE TABLE public.market_prices (
    market_id uuid NOT NULL,
    at timestamp with time zone NOT NULL,
    yes_price_ppm integer NOT NULL,
    CONSTRAINT market_prices_yes_price_ppm_check CHECK (((yes_price_ppm >= 0) AND (yes_price_ppm <= 1000000)))
);

CREATE TABLE public.market_status_counts (
    id bigint NOT NULL,
    status text NOT NULL,
    n bigint NOT NULL
);

CREATE SEQUENCE public.market_status_counts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.market_status_counts_id_seq OWNED BY public.market_status_counts.id;

CREATE TABLE public.markets (
    id uuid NOT NULL,
    series_id uuid NOT NULL,
    round_number integer NOT NULL,
    open_ts timestamp with time zone NOT NULL,
    close_ts timestamp with time zone NOT NULL,
    settlement_ts timestamp with time zone NOT NULL,
    status text NOT NULL,
    liquidity_b bigint NOT NULL,
    q_yes bigint NOT NULL,
    q_no bigint NOT NULL,
    yes_price_ppm integer NOT NULL,
    ou_prior_ppm integer NOT NULL,
    ou_confidence_ppm integer NOT NULL,
    total_volume bigint DEFAULT 0 NOT NULL,
    trade_count integer DEFAULT 0 NOT NULL,
    outcome text,
    actual_rate bigint,
    settled_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    onchain_address text,
    paid_out_at timestamp with time zone,
    oracle_attempts integer DEFAULT 0 NOT NULL,
    oracle_next_at timestamp with time zone,
    void_reason text,
    finalize_signature text,
    close_signature text,
    CONSTRAINT markets_check CHECK (((open_ts < close_ts) AND (close_ts <= settlement_ts))),
    CONSTRAINT markets_liquidity_b_check CHECK ((liquidity_b > 0)),
    CONSTRAINT markets_ou_confidence_ppm_check CHECK (((ou_confidence_ppm >= 0) AND (ou_confidence_ppm <= 1000000))),
    CONSTRAINT markets_ou_prior_ppm_check CHECK (((ou_prior_ppm >= 0) AND (ou_prior_ppm <= 1000000))),
    CONSTRAINT markets_outcome_check CHECK ((outcome = ANY (ARRAY['yes'::text, 'no'::text]))),
    CONSTRAINT markets_q_no_check CHECK ((q_no >= 0)),
    CONSTRAINT markets_q_yes_check CHECK ((q_yes >= 0)),
    CONSTRAINT markets_round_number_check CHECK ((round_number > 0)),
    CONSTRAINT markets_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'open'::text, 'closed'::text, 'resolving'::text, 'settled'::text, 'voided'::text]))),
    CONSTRAINT markets_total_volume_check CHECK ((total_volume >= 0)),
    CONSTRAINT markets_void_reason_check CHECK ((void_reason = ANY (ARRAY['interval_change'::text, 'no_consensus'::text]))),
    CONSTRAINT markets_yes_price_ppm_check CHECK (((yes_price_ppm >= 0) AND (yes_price_ppm <= 1000000)))
);

CREATE TABLE public.operator_paid_token_accounts (
    day date NOT NULL,
    accounts integer NOT NULL,
    CONSTRAINT operator_paid_token_accounts_accounts_check CHECK ((accounts >= 0))
);

CREATE TABLE public.operator_paid_users (
    day date NOT NULL,
    users integer NOT NULL,
    CONSTRAINT operator_paid_users_users_check CHECK ((users >= 0))
);

CREATE TABLE public.oracle_observations (
    id bigint NOT NULL,
    market_id uuid NOT NULL,
    source text NOT NULL,
    rate bigint,
    error text,
    fetched_at timestamp with time zone NOT NULL,
    CONSTRAINT oracle_observations_check CHECK (((rate IS NULL) <> (error IS NULL)))
);

CREATE SEQUENCE public.oracle_observations_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.oracle_observations_id_seq OWNED BY public.oracle_observations.id;

CREATE TABLE public.outbox (
    id bigint NOT NULL,
    kind text NOT NULL,
    market_id uuid,
    wallet text NOT NULL,
    payload jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    delivered_at timestamp with time zone,
    ref text,
    CONSTRAINT outbox_kind_check CHECK ((kind = ANY (ARRAY['market_settled'::text, 'settlement_payout'::text, 'deposit_confirmed'::text, 'withdrawal_confirmed'::text]))),
    CONSTRAINT outbox_subject CHECK (((market_id IS NULL) <> (ref IS NULL)))
);

CREATE SEQUENCE public.outbox_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.outbox_id_seq OWNED BY public.outbox.id;

CREATE TABLE public.perps (
    exchange text NOT NULL,
    symbol text NOT NULL,
    interval_minutes integer NOT NULL,
    listed boolean DEFAULT true NOT NULL,
    first_seen_at timestamp with time zone NOT NULL,
    change_count integer DEFAULT 0 NOT NULL,
    last_changed_at timestamp with time zone,
    CONSTRAINT perps_change_count_check CHECK ((change_count >= 0)),
    CONSTRAINT perps_interval_minutes_check CHECK ((interval_minutes > 0))
);

CREATE TABLE public.positions (
    market_id uuid NOT NULL,
    wallet text NOT NULL,
    yes_shares bigint NOT NULL,
    no_shares bigint NOT NULL,
    last_trade_count bigint NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    yes_basis bigint DEFAULT 0 NOT NULL,
    no_basis bigint DEFAULT 0 NOT NULL,
    CONSTRAINT positions_no_shares_check CHECK ((no_shares >= 0)),
    CONSTRAINT positions_yes_shares_check CHECK ((yes_shares >= 0))
)
WITH (fillfactor='50');

CREATE TABLE public.push_deliveries (
    outbox_id bigint NOT NULL,
    subscription_id bigint NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    last_error text,
    sent_at timestamp with time zone,
    CONSTRAINT push_deliveries_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'sent'::text, 'failed'::text, 'skipped'::text])))
);

CREATE TABLE public.push_subscriptions (
    id bigint NOT NULL,
    user_id uuid NOT NULL,
    endpoint text NOT NULL,
    p256dh text NOT NULL,
    auth text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE SEQUENCE public.push_subscriptions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.push_subscriptions_id_seq OWNED BY public.push_subscriptions.id;

CREATE TABLE public.series (
    id uuid NOT NULL,
    exchange text NOT NULL,
    symbol text NOT NULL,
    slug text NOT NULL,
    display_name text NOT NULL,
    tier smallint NOT NULL,
    liquidity_b bigint NOT NULL,
    interval_hours smallint NOT NULL,
    active boolean DEFAULT true NOT NULL,
    total_rounds integer DEFAULT 0 NOT NULL,
    yes_rounds integer DEFAULT 0 NOT NULL,
    total_volume bigint DEFAULT 0 NOT NULL,
    rate_sum numeric(40,0) DEFAULT 0 NOT NULL,
    current_streak_side text,
    current_streak integer DEFAULT 0 NOT NULL,
    longest_yes_streak integer DEFAULT 0 NOT NULL,
    longest_no_streak integer DEFAULT 0 NOT NULL,
    last_outcome text,
    last_settled_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    round_minutes smallint,
    CONSTRAINT series_current_streak_side_check CHECK ((current_streak_side = ANY (ARRAY['yes'::text, 'no'::text]))),
    CONSTRAINT series_exchange_check CHECK ((exchange = ANY (ARRAY['binance'::text, 'bybit'::text, 'okx'::text, 'hyperliquid'::text]))),
    CONSTRAINT series_interval_hours_check CHECK ((interval_hours = ANY (ARRAY[1, 2, 4, 8]))),
    CONSTRAINT series_last_outcome_check CHECK ((last_outcome = ANY (ARRAY['yes'::text, 'no'::text]))),
    CONSTRAINT series_liquidity_b_check CHECK ((liquidity_b > 0)),
    CONSTRAINT series_round_minutes_check CHECK ((((round_minutes >= 1) AND (round_minutes <= 30)) AND ((60 % (round_minutes)::integer) = 0))),
    CONSTRAINT series_symbol_check CHECK ((symbol ~ '^[A-Z0-9]{2,20}$'::text)),
    CONSTRAINT series_tier_check CHECK (((tier >= 1) AND (tier <= 3))),
    CONSTRAINT series_total_volume_check CHECK ((total_volume >= 0))
);

CREATE TABLE public.service_secrets (
    name text NOT NULL,
    value text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.settlements (
    market_id uuid NOT NULL,
    wallet text NOT NULL,
    yes_shares bigint NOT NULL,
    no_shares bigint NOT NULL,
    payout bigint NOT NULL,
    voided boolean NOT NULL,
    at timestamp with time zone NOT NULL,
    signature text,
    realized_pnl bigint,
    CONSTRAINT settlements_payout_check CHECK ((payout >= 0))
);

CREATE TABLE public.stream_events (
    id bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    events jsonb NOT NULL
);

CREATE SEQUENCE public.stream_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.stream_events_id_seq OWNED BY public.stream_events.id;

CREATE SEQUENCE public.stream_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

CREATE TABLE public.trader_stats (
    wallet text NOT NULL,
    day date NOT NULL,
    volume bigint DEFAULT 0 NOT NULL,
    trades integer DEFAULT 0 NOT NULL,
    realized_pnl bigint DEFAULT 0 NOT NULL,
    settled integer DEFAULT 0 NOT NULL,
    wins integer DEFAULT 0 NOT NULL,
    CONSTRAINT trader_stats_settled_check CHECK ((settled >= 0)),
    CONSTRAINT trader_stats_trades_check CHECK ((trades >= 0)),
    CONSTRAINT trader_stats_volume_check CHECK ((volume >= 0)),
    CONSTRAINT trader_stats_wins_check CHECK ((wins >= 0))
)
WITH (fillfactor='50');

CREATE TABLE public.trader_totals (
    wallet text NOT NULL,
    volume bigint DEFAULT 0 NOT NULL,
    trades bigint DEFAULT 0 NOT NULL,
    realized_pnl bigint DEFAULT 0 NOT NULL,
    settled bigint DEFAULT 0 NOT NULL,
    wins bigint DEFAULT 0 NOT NULL
)
WITH (fillfactor='50');

CREATE TABLE public.trades (
    id uuid NOT NULL,
    market_id uuid NOT NULL,
    user_id uuid,
    side text NOT NULL,
    is_buy boolean NOT NULL,
    shares bigint NOT NULL,
    amount bigint NOT NULL,
    fee bigint NOT NULL,
    yes_price_ppm integer NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    wallet text,
    signature text,
    slot bigint,
    CONSTRAINT trades_amount_check CHECK ((amount >= 0)),
    CONSTRAINT trades_fee_check CHECK ((fee >= 0)),
    CONSTRAINT trades_shares_check CHECK ((shares > 0)),
    CONSTRAINT trades_side_check CHECK ((side = ANY (ARRAY['yes'::text, 'no'::text])))
);

CREATE VIEW public.unpublished_events AS
 SELECT e.id,
    x.n,
    (x.event ->> 'channel'::text) AS channel,
    (x.event ->> 'kind'::text) AS kind,
    (x.event -> 'ref'::text) AS ref,
    e.created_at
   FROM public.stream_events e,
    LATERAL jsonb_array_elements(e.events) WITH ORDINALITY x(event, n);

CREATE TABLE public.users (
    id uuid NOT NULL,
    wallet_address text NOT NULL,
    display_name text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_active_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT users_display_name_check CHECK (((display_name IS NULL) OR ((length(display_name) >= 1) AND (length(display_name) <= 64)))),
    CONSTRAINT users_wallet_address_check CHECK (((length(wallet_address) >= 32) AND (length(wallet_address) <= 44)))
);

CREATE TABLE public.vault_balances (
    wallet text NOT NULL,
    balance bigint NOT NULL,
    slot bigint NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    tx_index integer DEFAULT 0 NOT NULL,
    CONSTRAINT vault_balances_balance_check CHECK ((balance >= 0))
)
WITH (fillfactor='50');

CREATE TABLE public.withdrawals (
    id uuid NOT NULL,
    user_id uuid NOT NULL,
    wallet text NOT NULL,
    amount bigint NOT NULL,
    destination text NOT NULL,
    token_account text NOT NULL,
    create_account boolean NOT NULL,
    status text NOT NULL,
    signature text,
    wire bytea,
    attempts integer DEFAULT 0 NOT NULL,
    failure text,
    idempotency_key text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    sent_at timestamp with time zone,
    confirmed_at timestamp with time zone,
    failed_at timestamp with time zone,
    CONSTRAINT withdrawals_amount_check CHECK ((amount > 0)),
    CONSTRAINT withdrawals_check CHECK (((status = ANY (ARRAY['pending'::text, 'failed'::text])) OR (signature IS NOT NULL))),
    CONSTRAINT withdrawals_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'processing'::text, 'confirmed'::text, 'failed'::text])))
);

ALTER TABLE ONLY public.embedded_ledger ALTER COLUMN seq SET DEFAULT nextval('public.embedded_ledger_seq_seq'::regclass);

ALTER TABLE ONLY public.interval_changes ALTER COLUMN id SET DEFAULT nextval('public.interval_changes_id_seq'::regclass);

ALTER TABLE ONLY public.market_status_counts ALTER COLUMN id SET DEFAULT nextval('public.market_status_counts_id_seq'::regclass);

ALTER TABLE ONLY public.oracle_observations ALTER COLUMN id SET DEFAULT nextval('public.oracle_observations_id_seq'::regclass);

ALTER TABLE ONLY public.outbox ALTER COLUMN id SET DEFAULT nextval('public.outbox_id_seq'::regclass);

ALTER TABLE ONLY public.push_subscriptions ALTER COLUMN id SET DEFAULT nextval('public.push_subscriptions_id_seq'::regclass);

ALTER TABLE ONLY public.stream_events ALTER COLUMN id SET DEFAULT nextval('public.stream_events_id_seq'::regclass);

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash);

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.chain_cursor
    ADD CONSTRAINT chain_cursor_pkey PRIMARY KEY (program);

ALTER TABLE ONLY public.chain_events
    ADD CONSTRAINT chain_events_pkey PRIMARY KEY (signature, ix_index, event_index);

ALTER TABLE ONLY public.chain_withdrawals
    ADD CONSTRAINT chain_withdrawals_pkey PRIMARY KEY (signature, ix_index);

ALTER TABLE ONLY public.crowd_history
    ADD CONSTRAINT crowd_history_pkey PRIMARY KEY (exchange, symbol, ts) INCLUDE (long_ppm, short_ppm);

ALTER TABLE ONLY public.crowd_latest
    ADD CONSTRAINT crowd_latest_pkey PRIMARY KEY (exchange, symbol);

ALTER TABLE ONLY public.deposit_addresses
    ADD CONSTRAINT deposit_addresses_pkey PRIMARY KEY (address);

ALTER TABLE ONLY public.deposit_addresses
    ADD CONSTRAINT deposit_addresses_wallet_key UNIQUE (wallet);

ALTER TABLE ONLY public.deposit_transfers
    ADD CONSTRAINT deposit_transfers_pkey PRIMARY KEY (signature, address);

ALTER TABLE ONLY public.deposits
    ADD CONSTRAINT deposits_pkey PRIMARY KEY (signature, ix_index);

ALTER TABLE ONLY public.embedded_accounts
    ADD CONSTRAINT embedded_accounts_pkey PRIMARY KEY (address);

ALTER TABLE ONLY public.embedded_keys
    ADD CONSTRAINT embedded_keys_pkey PRIMARY KEY (role);

ALTER TABLE ONLY public.embedded_ledger_account_groups
    ADD CONSTRAINT embedded_ledger_account_groups_pkey PRIMARY KEY (address, first_seq);

ALTER TABLE ONLY public.embedded_ledger
    ADD CONSTRAINT embedded_ledger_pkey PRIMARY KEY (seq);

ALTER TABLE ONLY public.embedded_ledger
    ADD CONSTRAINT embedded_ledger_signature_key UNIQUE (signature);

ALTER TABLE ONLY public.faucet_grants
    ADD CONSTRAINT faucet_grants_pkey PRIMARY KEY (wallet, day);

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (user_id, key);

ALTER TABLE ONLY public.interval_changes_by_exchange
    ADD CONSTRAINT interval_changes_by_exchange_pkey PRIMARY KEY (exchange);

ALTER TABLE ONLY public.interval_changes_by_symbol
    ADD CONSTRAINT interval_changes_by_symbol_pkey PRIMARY KEY (symbol);

ALTER TABLE ONLY public.interval_changes
    ADD CONSTRAINT interval_changes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.market_prices
    ADD CONSTRAINT market_prices_pkey PRIMARY KEY (market_id, at);

ALTER TABLE ONLY public.market_status_counts
    ADD CONSTRAINT market_status_counts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.markets
    ADD CONSTRAINT markets_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.markets
    ADD CONSTRAINT markets_series_id_round_number_key UNIQUE (series_id, round_number);

ALTER TABLE ONLY public.markets
    ADD CONSTRAINT markets_series_id_settlement_ts_key UNIQUE (series_id, settlement_ts);

ALTER TABLE ONLY public.operator_paid_token_accounts
    ADD CONSTRAINT operator_paid_token_accounts_pkey PRIMARY KEY (day);

ALTER TABLE ONLY public.operator_paid_users
    ADD CONSTRAINT operator_paid_users_pkey PRIMARY KEY (day);

ALTER TABLE ONLY public.oracle_observations
    ADD CONSTRAINT oracle_observations_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.outbox
    ADD CONSTRAINT outbox_kind_market_id_wallet_key UNIQUE (kind, market_id, wallet);

ALTER TABLE ONLY public.outbox
    ADD CONSTRAINT outbox_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.perps
    ADD CONSTRAINT perps_pkey PRIMARY KEY (exchange, symbol);

ALTER TABLE ONLY public.positions
    ADD CONSTRAINT positions_pkey PRIMARY KEY (market_id, wallet);

ALTER TABLE ONLY public.push_deliveries
    ADD CONSTRAINT push_deliveries_pkey PRIMARY KEY (outbox_id, subscription_id);

ALTER TABLE ONLY public.push_subscriptions
    ADD CONSTRAINT push_subscriptions_endpoint_key UNIQUE (endpoint);

ALTER TABLE ONLY public.push_subscriptions
    ADD CONSTRAINT push_subscriptions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.series
    ADD CONSTRAINT series_exchange_symbol_key UNIQUE (exchange, symbol);

ALTER TABLE ONLY public.series
    ADD CONSTRAINT series_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.series
    ADD CONSTRAINT series_slug_key UNIQUE (slug);

ALTER TABLE ONLY public.service_secrets
    ADD CONSTRAINT service_secrets_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.settlements
    ADD CONSTRAINT settlements_pkey PRIMARY KEY (market_id, wallet);

ALTER TABLE ONLY public.stream_events
    ADD CONSTRAINT stream_events_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.trader_stats
    ADD CONSTRAINT trader_stats_pkey PRIMARY KEY (wallet, day);

ALTER TABLE ONLY public.trader_totals
    ADD CONSTRAINT trader_totals_pkey PRIMARY KEY (wallet);

ALTER TABLE ONLY public.trades
    ADD CONSTRAINT trades_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_wallet_address_key UNIQUE (wallet_address);

ALTER TABLE ONLY public.vault_balances
    ADD CONSTRAINT vault_balances_pkey PRIMARY KEY (wallet);

ALTER TABLE ONLY public.withdrawals
    ADD CONSTRAINT withdrawals_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.withdrawals
    ADD CONSTRAINT withdrawals_user_id_idempotency_key_key UNIQUE (user_id, idempotency_key);

CREATE INDEX api_keys_active_by_user ON public.api_keys USING btree (user_id, created_at) WHERE (revoked_at IS NULL);

CREATE INDEX chain_withdrawals_wallet ON public.chain_withdrawals USING btree (wallet, at DESC);

CREATE INDEX crowd_history_by_time ON public.crowd_history USING brin (ts);

CREATE INDEX crowd_latest_by_long ON public.crowd_latest USING btree (long_ppm DESC, exchange, symbol);

CREATE INDEX crowd_latest_by_short ON public.crowd_latest USING btree (short_ppm DESC, exchange, symbol);

CREATE INDEX deposit_transfers_by_wallet ON public.deposit_transfers USING btree (wallet, detected_at DESC);

CREATE INDEX deposits_by_wallet ON public.deposits USING btree (wallet, slot);

CREATE INDEX interval_changes_by_perp ON public.interval_changes USING btree (exchange, symbol, changed_at DESC, id DESC);

CREATE INDEX interval_changes_by_symbol_most ON public.interval_changes_by_symbol USING btree (changes DESC, symbol);

CREATE INDEX interval_changes_by_symbol_trigrams ON public.interval_changes USING gin (upper(symbol) public.gin_trgm_ops);

CREATE INDEX interval_changes_by_time ON public.interval_changes USING btree (changed_at DESC, id DESC);

CREATE INDEX market_status_counts_by_status ON public.market_status_counts USING btree (status) INCLUDE (n);

CREATE INDEX markets_awaiting_payout ON public.markets USING btree (settlement_ts) WHERE ((paid_out_at IS NULL) AND (status = ANY (ARRAY['settled'::text, 'voided'::text])));

CREATE INDEX markets_by_series_settlement ON public.markets USING btree (series_id, settlement_ts DESC);

CREATE INDEX markets_by_status_settlement ON public.markets USING btree (status, settlement_ts, id);

CREATE INDEX markets_finished_by_status ON public.markets USING btree (status, settlement_ts DESC, id) WHERE (status = ANY (ARRAY['settled'::text, 'voided'::text]));

CREATE INDEX markets_finished_listing ON public.markets USING btree (settlement_ts DESC, id) WHERE (status = ANY (ARRAY['settled'::text, 'voided'::text]));

CREATE UNIQUE INDEX markets_onchain_address ON public.markets USING btree (onchain_address) WHERE (onchain_address IS NOT NULL);

CREATE INDEX markets_unfinished_by_series ON public.markets USING btree (series_id, settlement_ts) WHERE (status = ANY (ARRAY['pending'::text, 'open'::text, 'closed'::text, 'resolving'::text]));

CREATE INDEX markets_unfinished_listing ON public.markets USING btree (settlement_ts, id) WHERE (status = ANY (ARRAY['pending'::text, 'open'::text, 'closed'::text, 'resolving'::text]));

CREATE INDEX oracle_observations_by_market ON public.oracle_observations USING btree (market_id, id);

CREATE UNIQUE INDEX outbox_by_ref ON public.outbox USING btree (kind, ref) WHERE (ref IS NOT NULL);

CREATE INDEX outbox_undelivered ON public.outbox USING btree (id) WHERE (delivered_at IS NULL);

CREATE INDEX perps_by_changes ON public.perps USING btree (change_count DESC, exchange, symbol);

CREATE INDEX perps_by_symbol ON public.perps USING btree (symbol, exchange);

CREATE INDEX perps_by_symbol_trigrams ON public.perps USING gin (upper(symbol) public.gin_trgm_ops);

CREATE INDEX positions_by_wallet ON public.positions USING btree (wallet);

CREATE INDEX push_deliveries_by_subscription ON public.push_deliveries USING btree (subscription_id);

CREATE INDEX push_deliveries_due ON public.push_deliveries USING btree (next_attempt_at) WHERE (status = 'pending'::text);

CREATE INDEX push_subscriptions_by_user ON public.push_subscriptions USING btree (user_id, created_at);

CREATE INDEX series_listing ON public.series USING btree (tier, slug) WHERE active;

CREATE INDEX series_listing_by_exchange ON public.series USING btree (exchange, tier, slug) WHERE active;

CREATE INDEX settlements_by_time ON public.settlements USING brin (at);

CREATE INDEX trader_stats_day ON public.trader_stats USING btree (day);

CREATE INDEX trades_by_market_time ON public.trades USING btree (market_id, created_at DESC);

CREATE INDEX trades_by_position ON public.trades USING btree (market_id, wallet);

CREATE INDEX trades_by_signature ON public.trades USING hash (signature);

CREATE INDEX trades_by_time ON public.trades USING brin (created_at);

CREATE INDEX trades_wallet ON public.trades USING btree (wallet, created_at DESC, slot DESC);

CREATE UNIQUE INDEX withdrawals_by_signature ON public.withdrawals USING btree (signature) WHERE (signature IS NOT NULL);

CREATE INDEX withdrawals_by_user ON public.withdrawals USING btree (user_id, created_at DESC);

CREATE INDEX withdrawals_creating_accounts ON public.withdrawals USING btree (user_id, created_at) WHERE create_account;

CREATE INDEX withdrawals_open ON public.withdrawals USING btree (created_at) WHERE (status = ANY (ARRAY['pending'::text, 'processing'::text]));

CREATE INDEX withdrawals_reserving ON public.withdrawals USING btree (wallet) WHERE (status = ANY (ARRAY['pending'::text, 'processing'::text]));

CREATE TRIGGER count_deleted_markets AFTER DELETE ON public.markets REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION public.count_deleted_markets();

CREATE TRIGGER count_inserted_markets AFTER INSERT ON public.markets REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION public.count_inserted_markets();

CREATE TRIGGER count_market_status_change AFTER UPDATE OF status ON public.markets FOR EACH ROW WHEN ((old.status IS DISTINCT FROM new.status)) EXECUTE FUNCTION public.count_market_status_change();

CREATE TRIGGER notify_leaderboard_deleted AFTER DELETE ON public.trader_stats REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION public.notify_leaderboard();

CREATE TRIGGER notify_leaderboard_inserted AFTER INSERT ON public.trader_stats REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION public.notify_leaderboard();

CREATE TRIGGER notify_leaderboard_names AFTER DELETE OR UPDATE OF display_name, wallet_address ON public.users FOR EACH STATEMENT EXECUTE FUNCTION public.notify_leaderboard();

CREATE TRIGGER notify_leaderboard_truncated AFTER TRUNCATE ON public.trader_stats FOR EACH STATEMENT EXECUTE FUNCTION public.notify_leaderboard();

CREATE TRIGGER notify_leaderboard_updated AFTER UPDATE ON public.trader_stats REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update FOR EACH STATEMENT EXECUTE FUNCTION public.notify_leaderboard();

CREATE TRIGGER notify_market_data AFTER INSERT OR DELETE OR UPDATE OR TRUNCATE ON public.crowd_history FOR EACH STATEMENT EXECUTE FUNCTION public.notify_channel('fm_market_data');

CREATE TRIGGER notify_market_data AFTER INSERT OR DELETE OR UPDATE OR TRUNCATE ON public.crowd_latest FOR EACH STATEMENT EXECUTE FUNCTION public.notify_channel('fm_market_data');

CREATE TRIGGER notify_market_data AFTER INSERT OR DELETE OR UPDATE OR TRUNCATE ON public.interval_changes FOR EACH STATEMENT EXECUTE FUNCTION public.notify_channel('fm_market_data');

CREATE TRIGGER notify_market_data AFTER INSERT OR DELETE OR UPDATE OR TRUNCATE ON public.perps FOR EACH STATEMENT EXECUTE FUNCTION public.notify_channel('fm_market_data');

CREATE TRIGGER notify_market_history_deleted AFTER DELETE ON public.market_prices REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION public.notify_market_history();

CREATE TRIGGER notify_market_history_deleted AFTER DELETE ON public.trades REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION public.notify_market_history();

CREATE TRIGGER notify_market_history_inserted AFTER INSERT ON public.market_prices REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION public.notify_market_history();

CREATE TRIGGER notify_market_history_inserted AFTER INSERT ON public.trades REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION public.notify_market_history();

CREATE TRIGGER notify_market_history_truncated AFTER TRUNCATE ON public.market_prices FOR EACH STATEMENT EXECUTE FUNCTION public.notify_market_history();

CREATE TRIGGER notify_market_history_truncated AFTER TRUNCATE ON public.trades FOR EACH STATEMENT EXECUTE FUNCTION public.notify_market_history();

CREATE TRIGGER notify_market_history_updated AFTER UPDATE ON public.market_prices REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION public.notify_market_history();

CREATE TRIGGER notify_market_history_updated AFTER UPDATE ON public.trades REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION public.notify_market_history();

CREATE TRIGGER notify_market_series AFTER UPDATE ON public.series FOR EACH ROW WHEN ((((old.symbol IS DISTINCT FROM new.symbol) OR (old.exchange IS DISTINCT FROM new.exchange)) OR (old.tier IS DISTINCT FROM new.tier))) EXECUTE FUNCTION public.notify_market_series();

CREATE TRIGGER notify_market_terms_delete AFTER DELETE ON public.markets FOR EACH ROW EXECUTE FUNCTION public.notify_market_terms();

CREATE TRIGGER notify_market_terms_insert AFTER INSERT ON public.markets FOR EACH ROW EXECUTE FUNCTION public.notify_market_terms();

CREATE TRIGGER notify_market_terms_update AFTER UPDATE ON public.markets FOR EACH ROW WHEN ((((((((((((((((((old.series_id IS DISTINCT FROM new.series_id) OR (old.round_number IS DISTINCT FROM new.round_number)) OR (old.status IS DISTINCT FROM new.status)) OR (old.open_ts IS DISTINCT FROM new.open_ts)) OR (old.close_ts IS DISTINCT FROM new.close_ts)) OR (old.settlement_ts IS DISTINCT FROM new.settlement_ts)) OR (old.liquidity_b IS DISTINCT FROM new.liquidity_b)) OR (old.q_yes IS DISTINCT FROM new.q_yes)) OR (old.q_no IS DISTINCT FROM new.q_no)) OR (old.yes_price_ppm IS DISTINCT FROM new.yes_price_ppm)) OR (old.total_volume IS DISTINCT FROM new.total_volume)) OR (old.trade_count IS DISTINCT FROM new.trade_count)) OR (old.ou_prior_ppm IS DISTINCT FROM new.ou_prior_ppm)) OR (old.ou_confidence_ppm IS DISTINCT FROM new.ou_confidence_ppm)) OR (old.outcome IS DISTINCT FROM new.outcome)) OR (old.actual_rate IS DISTINCT FROM new.actual_rate)) OR (old.settled_at IS DISTINCT FROM new.settled_at))) EXECUTE FUNCTION public.notify_market_terms();

CREATE TRIGGER notify_series_card AFTER INSERT OR DELETE OR UPDATE ON public.series FOR EACH ROW EXECUTE FUNCTION public.notify_series_card();

CREATE TRIGGER notify_series_card_insert_delete AFTER INSERT OR DELETE ON public.markets FOR EACH ROW EXECUTE FUNCTION public.notify_series_card();

CREATE TRIGGER notify_series_card_update AFTER UPDATE ON public.markets FOR EACH ROW WHEN ((((((((((((old.series_id IS DISTINCT FROM new.series_id) OR (old.status IS DISTINCT FROM new.status)) OR (old.round_number IS DISTINCT FROM new.round_number)) OR (old.open_ts IS DISTINCT FROM new.open_ts)) OR (old.close_ts IS DISTINCT FROM new.close_ts)) OR (old.settlement_ts IS DISTINCT FROM new.settlement_ts)) OR (old.yes_price_ppm IS DISTINCT FROM new.yes_price_ppm)) OR (old.total_volume IS DISTINCT FROM new.total_volume)) OR (old.trade_count IS DISTINCT FROM new.trade_count)) OR (old.ou_prior_ppm IS DISTINCT FROM new.ou_prior_ppm)) OR (old.ou_confidence_ppm IS DISTINCT FROM new.ou_confidence_ppm))) EXECUTE FUNCTION public.notify_series_card();

CREATE TRIGGER stream_balances_insert AFTER INSERT ON public.vault_balances REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION public.stream_balances_inserted();

CREATE TRIGGER stream_balances_update AFTER UPDATE ON public.vault_balances REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update FOR EACH STATEMENT EXECUTE FUNCTION public.stream_balances_updated();

CREATE TRIGGER stream_deposits AFTER INSERT OR UPDATE ON public.deposit_transfers FOR EACH ROW EXECUTE FUNCTION public.stream_deposits();

CREATE TRIGGER stream_markets AFTER INSERT OR UPDATE ON public.markets FOR EACH ROW EXECUTE FUNCTION public.stream_markets();

CREATE TRIGGER stream_positions_delete AFTER DELETE ON public.positions REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION public.stream_positions();

CREATE TRIGGER stream_positions_insert AFTER INSERT ON public.positions REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION public.stream_positions();

CREATE TRIGGER stream_positions_update AFTER UPDATE ON public.positions REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION public.stream_positions();

CREATE TRIGGER stream_trades AFTER INSERT ON public.trades REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION public.stream_trades();

CREATE TRIGGER stream_withdrawals AFTER INSERT OR UPDATE ON public.withdrawals FOR EACH ROW EXECUTE FUNCTION public.stream_withdrawals();

CREATE TRIGGER total_deleted_trader_stats AFTER DELETE ON public.trader_stats REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION public.total_deleted_trader_stats();

CREATE TRIGGER total_inserted_trader_stats AFTER INSERT ON public.trader_stats REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION public.total_inserted_trader_stats();

CREATE TRIGGER total_truncated_trader_stats AFTER TRUNCATE ON public.trader_stats FOR EACH STATEMENT EXECUTE FUNCTION public.total_truncated_trader_stats();

CREATE TRIGGER total_updated_trader_stats AFTER UPDATE ON public.trader_stats REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update FOR EACH STATEMENT EXECUTE FUNCTION public.total_updated_trader_stats();

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);

ALTER TABLE ONLY public.crowd_latest
    ADD CONSTRAINT crowd_latest_exchange_symbol_fkey FOREIGN KEY (exchange, symbol) REFERENCES public.perps(exchange, symbol);

ALTER TABLE ONLY public.deposit_transfers
    ADD CONSTRAINT deposit_transfers_address_fkey FOREIGN KEY (address) REFERENCES public.deposit_addresses(address);

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);

ALTER TABLE ONLY public.interval_changes
    ADD CONSTRAINT interval_changes_exchange_symbol_fkey FOREIGN KEY (exchange, symbol) REFERENCES public.perps(exchange, symbol);

ALTER TABLE ONLY public.market_prices
    ADD CONSTRAINT market_prices_market_id_fkey FOREIGN KEY (market_id) REFERENCES public.markets(id);

ALTER TABLE ONLY public.markets
    ADD CONSTRAINT markets_series_id_fkey FOREIGN KEY (series_id) REFERENCES public.series(id);

ALTER TABLE ONLY public.oracle_observations
    ADD CONSTRAINT oracle_observations_market_id_fkey FOREIGN KEY (market_id) REFERENCES public.markets(id);

ALTER TABLE ONLY public.outbox
    ADD CONSTRAINT outbox_market_id_fkey FOREIGN KEY (market_id) REFERENCES public.markets(id);

ALTER TABLE ONLY public.positions
    ADD CONSTRAINT positions_market_id_fkey FOREIGN KEY (market_id) REFERENCES public.markets(id);

ALTER TABLE ONLY public.push_deliveries
    ADD CONSTRAINT push_deliveries_outbox_id_fkey FOREIGN KEY (outbox_id) REFERENCES public.outbox(id);

ALTER TABLE ONLY public.push_deliveries
    ADD CONSTRAINT push_deliveries_subscription_id_fkey FOREIGN KEY (subscription_id) REFERENCES public.push_subscriptions(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.push_subscriptions
    ADD CONSTRAINT push_subscriptions_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.settlements
    ADD CONSTRAINT settlements_market_id_fkey FOREIGN KEY (market_id) REFERENCES public.markets(id);

ALTER TABLE ONLY public.trades
    ADD CONSTRAINT trades_market_id_fkey FOREIGN KEY (market_id) REFERENCES public.markets(id);

ALTER TABLE ONLY public.trades
    ADD CONSTRAINT trades_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);

ALTER TABLE ONLY public.withdrawals
    ADD CONSTRAINT withdrawals_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);

