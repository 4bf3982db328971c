//! Settlement at scale: 4,000 rounds due at the same moment with 40,000 positions (the same ten
//! wallets in every round) on the embedded chain, settled by the real service — its oracle (the
//! embedded simulated exchange on three hosts: three history sources a venue, and OKX's settled
//! field), its settlement crank and its indexer — and measured from the moment the rounds are
//! due to the last payout visible through the API (every wallet's `/v1/users/me/balance`
//! showing nothing locked and its final vault). Reports the transactions sent and positions paid per transaction.
//!
//! The rounds are traded with their on-chain settlement an hour ahead; then, at once, the chain's
//! clock moves past it and their settlement time in Postgres becomes the simulator's last 8-hour
//! settlement (published, so the oracle can read it): "the settlement time arrives" for 4,000
//! rounds in one instant.
//!
//! `SETTLE_GROWTH=N` settles N such sets of rounds one after the other, with the same wallets: each
//! leaves its trades, positions' settlements, payouts, notices and chain ledger behind, so the
//! last is paid out over N times the history of the first. Each set settles at an 8-hour
//! settlement of its own (a series settles a round once a settlement time), the last set at the
//! simulator's latest, each earlier one 8 hours before the next; every set prints its times, the
//! first and the last their details and the ratio of the two.
//!
//! `bash scripts/bench-settlement.sh` (release build; `SETTLE_ROUNDS` for a smaller run,
//! `SETTLE_GROWTH` for the growth).

mod support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anchor_lang::Discriminator;
use anchor_lang::prelude::Pubkey;
use anchor_lang::solana_program::program_pack::Pack;
use api::chain::OnChain;
use api::domain::exchange::Exchange;
use api::domain::market::Side;
use api::domain::money::micros;
use api::domain::series::SeriesSpec;
use api::store::{markets, series};
use base64::Engine;
use chrono::{TimeZone, Utc};
use futures_util::StreamExt;
use serde_json::Value;
use sim_exchange::{Model, SimSymbol};
use uuid::Uuid;

/// `settle_positions`' own accounts: market, market vault, token program, event authority, program.
const SETTLE_POSITIONS_FIXED_ACCOUNTS: usize = 5;

const WALLETS: usize = 10;
/// Buys sent at once while setting up (the chain orders them one at a time).
const SETUP_CONCURRENCY: usize = 8;
const EIGHT_HOURS_MS: i64 = 8 * 3_600_000;
/// The aim for every winner's payout to show through the API after 4,000 rounds fall due at
/// once (docs/performance.md).
const PAID_WITHIN: Duration = Duration::from_secs(20);
/// How far each set of rounds moves the chain's clock: past its rounds' on-chain settlement,
/// an hour after their creation.
const CLOCK_STEP_SECS: i64 = 3_700;

fn spec(i: usize) -> SeriesSpec {
    let exchange = Exchange::ALL[i % 4];
    let (quote, interval_minutes) = if exchange == Exchange::Hyperliquid { ("USDC", 60) } else { ("USDT", 480) };
    SeriesSpec { exchange, symbol: format!("S{i:04}{quote}"), interval_minutes }
}

#[tokio::main]
async fn main() {
    // Metrics recorded as a deployed service records them, read here for the turns.
    api::app::metrics::recorder();
    let rounds: usize = std::env::var("SETTLE_ROUNDS").ok().and_then(|n| n.parse().ok()).unwrap_or(4_000);
    let growth: usize = std::env::var("SETTLE_GROWTH").ok().and_then(|n| n.parse().ok()).unwrap_or(1).max(1);
    let specs: Vec<SeriesSpec> = (0..rounds).map(spec).collect();
    let service = support::serve_fresh("fm_bench_settle", |config| {
        config.series = specs.clone();
        config.http.rate_auth_per_min = u32::MAX;
        config.http.request_timeout = Duration::from_secs(60);
    })
    .await;
    let http = reqwest::Client::new();
    let onchain = OnChain::embedded(&service.chain, service.db.clone()).await.unwrap();
    series::ensure(&service.db, &specs).await.unwrap();

    // Ten wallets, signed in once for every set.
    let keys: Vec<ed25519_dalek::SigningKey> = (0..WALLETS).map(|_| ed25519_dalek::SigningKey::from_bytes(&rand::random())).collect();
    let mut wallets = Vec::new();
    for key in &keys {
        let (_, token) = support::sign_in(&http, &service.base, key).await;
        wallets.push(Wallet { key: Pubkey::new_from_array(key.verifying_key().to_bytes()), token });
    }
    let model = Model::new(42, specs.iter().map(|s| SimSymbol::new(s.exchange.id(), &s.symbol, s.interval_minutes as i64)).collect());
    let slugs = specs.iter().map(SeriesSpec::slug).collect();
    let bench = Bench { service, http, onchain, slugs, model, wallets };

    // The simulator's latest 8-hour settlement, for the last set; each earlier set 8 hours before.
    let latest = Utc::now().timestamp_millis().div_euclid(EIGHT_HOURS_MS) * EIGHT_HOURS_MS;
    let mut sets = Vec::new();
    for set in 0..growth {
        let settled_at = latest - (growth - 1 - set) as i64 * EIGHT_HOURS_MS;
        let measured = bench.settle_set(set, settled_at).await;
        println!(
            "set {} of {growth} ({}× the first's history): set up in {:.1} s; finalized {}, paid out {}, last payout visible {}",
            set + 1,
            set + 1,
            measured.set_up.as_secs_f64(),
            secs(measured.finalized),
            secs(measured.paid),
            secs(measured.visible)
        );
        if set == 0 || set + 1 == growth {
            measured.report(rounds);
        }
        sets.push(measured);
    }
    if let [first, .., last] = &sets[..]
        && let (Some(first), Some(last)) = (first.visible, last.visible)
    {
        println!(
            "last payout visible at {growth}× the history against 1×: {:.1} s against {:.1} s, {:.2}x",
            last.as_secs_f64(),
            first.as_secs_f64(),
            last.as_secs_f64() / first.as_secs_f64()
        );
    }
}

/// A time measured, or "-" if it never came.
fn secs(d: Option<Duration>) -> String {
    d.map_or("-".into(), |d| format!("{:.1} s", d.as_secs_f64()))
}

struct Wallet {
    key: Pubkey,
    /// Its access token.
    token: String,
}

struct Bench {
    service: support::Service,
    http: reqwest::Client,
    onchain: OnChain,
    /// The series, each opening one round a set.
    slugs: Vec<String>,
    model: Model,
    wallets: Vec<Wallet>,
}

/// What settling one set of rounds took, from the instant they fell due.
struct SetMeasured {
    set_up: Duration,
    finalized: Option<Duration>,
    paid: Option<Duration>,
    visible: Option<Duration>,
    settled_in: Duration,
    turns: (support::Turns, support::Turns),
    host: (Option<support::HostCpu>, Option<support::HostCpu>),
    /// Transactions sent from the instant the rounds fell due: instructions of each, and the
    /// number that failed.
    sent: Vec<Value>,
    failed: i64,
}

impl Bench {
    /// Set `set` (from 0): one round a series, traded by every wallet while open, then due at
    /// once, settling at `settled_at` (ms, a settlement the simulator has published). Waits for
    /// every payout to show through the API.
    async fn settle_set(&self, set: usize, settled_at: i64) -> SetMeasured {
        let (base, db, chain, http, onchain) = (&self.service.base, &self.service.db, &self.service.chain, &self.http, &self.onchain);
        let rounds = self.slugs.len();
        let setup = Instant::now();
        // One open round a series, settling on chain an hour from the chain's now (its clock is
        // `set` steps ahead of wall time).
        let now = Utc::now() + chrono::Duration::seconds(set as i64 * CLOCK_STEP_SECS);
        let ids: Vec<Uuid> = (0..rounds).map(|_| Uuid::new_v4()).collect();
        let addresses: Vec<String> = ids.iter().map(|id| funding_market::client::market_pda(id.as_bytes()).to_string()).collect();
        sqlx::query(
            "INSERT INTO markets (id, series_id, round_number, open_ts, close_ts, settlement_ts, status, liquidity_b, q_yes, q_no,
                                  yes_price_ppm, ou_prior_ppm, ou_confidence_ppm, onchain_address)
             SELECT r.id, s.id, $7, $3, $4, $5, 'open', s.liquidity_b, 0, 0, 500000, 500000, 0, r.address
             FROM unnest($1::uuid[], $2::text[], $6::text[]) AS r(id, address, slug) JOIN series s ON s.slug = r.slug",
        )
        .bind(&ids)
        .bind(&addresses)
        .bind(now - chrono::Duration::minutes(1))
        .bind(now + chrono::Duration::minutes(55))
        .bind(now + chrono::Duration::minutes(60))
        .bind(&self.slugs)
        .bind(set as i32 + 1)
        .execute(db)
        .await
        .unwrap();

        // Every wallet funded and buying 1 USDC of one side in every round.
        for wallet in &self.wallets {
            onchain.mint_test_usdc(&wallet.key, 2_000_000 * rounds as u64).await.unwrap();
            onchain.sweep(&wallet.key).await.unwrap();
        }
        let shares: Vec<Vec<(Side, u64)>> = futures_util::stream::iter(ids.iter().copied())
            .map(|id| async move {
                onchain.ensure_market(&markets::plan(db, id).await.unwrap().unwrap()).await.unwrap();
                let mut bought = Vec::new();
                for (j, wallet) in self.wallets.iter().enumerate() {
                    let side = if j % 2 == 0 { Side::Yes } else { Side::No };
                    let trade = onchain.submit_trade(&onchain.sign_buy(id, &wallet.key, side, 1_000_000, 1).await.unwrap()).await.unwrap();
                    bought.push((side, trade.event.shares));
                }
                bought
            })
            .buffered(SETUP_CONCURRENCY)
            .collect()
            .await;
        let set_up = setup.elapsed();

        // What each wallet is owed once every round settles at the simulator's rate.
        let mut expected: HashMap<Pubkey, u64> = HashMap::new();
        for (w, wallet) in self.wallets.iter().enumerate() {
            let vault = chain.account(&funding_market::client::vault_pda(&wallet.key).to_string()).await.unwrap().unwrap();
            expected.insert(wallet.key, spl_token_interface::state::Account::unpack(&vault.data).unwrap().amount);
            for (i, s) in self.model.symbols.iter().enumerate() {
                let yes = self.model.rate_at(s, settled_at) > 0;
                let (side, bought) = shares[i][w];
                if (side == Side::Yes) == yes {
                    *expected.get_mut(&wallet.key).unwrap() += bought;
                }
            }
        }
        let ledger_before: i64 = sqlx::query_scalar("SELECT coalesce(max(seq), 0) FROM embedded_ledger").fetch_one(db).await.unwrap();

        // The settlement time arrives for every round of the set at once.
        chain.set_clock_offset((set as i64 + 1) * CLOCK_STEP_SECS);
        sqlx::query(
            "UPDATE markets SET open_ts = $1 - interval '1 hour', close_ts = $1 - interval '5 minutes', settlement_ts = $1, status = 'closed'
             WHERE id = ANY($2)",
        )
        .bind(Utc.timestamp_millis_opt(settled_at).unwrap())
        .bind(&ids)
        .execute(db)
        .await
        .unwrap();
        let due = Instant::now();
        let (turns_at_due, host_at_due) = (support::Turns::now(), support::HostCpu::now());
        let (mut finalized_after, mut paid_after, mut visible_after) = (None, None, None);
        let mut reported = Duration::ZERO;
        loop {
            let (finalized, paid): (i64, i64) = sqlx::query_as(
                "SELECT count(*) FILTER (WHERE status IN ('settled', 'voided')), count(*) FILTER (WHERE paid_out_at IS NOT NULL)
                 FROM markets WHERE id = ANY($1)",
            )
            .bind(&ids)
            .fetch_one(db)
            .await
            .unwrap();
            // The pace: how far the oracle and the crank are, every two seconds.
            if due.elapsed() >= reported + Duration::from_secs(2) {
                reported = due.elapsed();
                println!("  {:5.1} s: {finalized} finalized, {paid} paid out", reported.as_secs_f64());
            }
            if finalized == rounds as i64 && finalized_after.is_none() {
                finalized_after = Some(due.elapsed());
            }
            if paid == rounds as i64 && paid_after.is_none() {
                paid_after = Some(due.elapsed());
            }
            let mut visible = true;
            for wallet in &self.wallets {
                let balance: Value = http.get(format!("{base}/v1/users/me/balance")).bearer_auth(&wallet.token).send().await.unwrap().json().await.unwrap();
                let data = &balance["data"];
                // As the API writes amounts (six decimals).
                visible &= data["locked_in_positions"] == micros(0) && data["usdc_balance"] == micros(expected[&wallet.key] as i64);
            }
            if visible && visible_after.is_none() {
                visible_after = Some(due.elapsed());
            }
            if visible_after.is_some() && paid_after.is_some() {
                break;
            }
            assert!(due.elapsed() < Duration::from_secs(1_800), "not settled within 30 minutes ({finalized} finalized, {paid} paid out)");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (turns_at_end, host_at_end, settled_in) = (support::Turns::now(), support::HostCpu::now(), due.elapsed());

        let sent: Vec<Value> =
            sqlx::query_scalar("SELECT instructions FROM embedded_ledger WHERE seq > $1 AND err IS NULL").bind(ledger_before).fetch_all(db).await.unwrap();
        let failed: i64 =
            sqlx::query_scalar("SELECT count(*) FROM embedded_ledger WHERE seq > $1 AND err IS NOT NULL").bind(ledger_before).fetch_one(db).await.unwrap();
        SetMeasured {
            set_up,
            finalized: finalized_after,
            paid: paid_after,
            visible: visible_after,
            settled_in,
            turns: (turns_at_due, turns_at_end),
            host: (host_at_due, host_at_end),
            sent,
            failed,
        }
    }
}

impl SetMeasured {
    fn report(&self, rounds: usize) {
        // What was sent: each transaction's program instructions, by kind.
        let program = funding_market::ID.to_string();
        let (mut settle_txs, mut settles, mut others) = (0, 0, 0);
        for instructions in &self.sent {
            let mut in_tx = 0;
            for ix in instructions.as_array().unwrap() {
                let data = base64::engine::general_purpose::STANDARD.decode(ix["data"].as_str().unwrap()).unwrap();
                if ix["program_id"].as_str() != Some(program.as_str()) {
                    continue;
                }
                if data.starts_with(funding_market::instruction::SettlePosition::DISCRIMINATOR) {
                    in_tx += 1;
                } else if data.starts_with(funding_market::instruction::SettlePositions::DISCRIMINATOR) {
                    // Five fixed accounts, then a (position, vault, rent receiver) triple a position.
                    in_tx += (ix["accounts"].as_array().unwrap().len() - SETTLE_POSITIONS_FIXED_ACCOUNTS) / 3;
                }
            }
            if in_tx > 0 {
                settle_txs += 1;
                settles += in_tx;
            } else {
                others += 1;
            }
        }

        println!("{rounds} rounds, {} positions, release build, embedded chain, oracle + crank + indexer in process", rounds * WALLETS);
        println!("  every round finalized on chain (oracle):     {}", secs(self.finalized));
        println!("  every round paid out and closed (crank):     {}", secs(self.paid));
        println!("  last payout visible through the API:         {}", secs(self.visible));
        if let Some(visible) = self.visible {
            println!("  against the {} s aim for every payout visible: {:.2}x", PAID_WITHIN.as_secs(), visible.as_secs_f64() / PAID_WITHIN.as_secs_f64());
        }
        println!(
            "  transactions: {} ({settle_txs} paying {settles} positions, {:.2} a transaction; {others} resolve/void/close); {} failed",
            self.sent.len(),
            settles as f64 / settle_txs.max(1) as f64,
            self.failed
        );
        // From the instant the rounds fell due to the last payout seen (turns and host CPU).
        self.turns.1.print(&self.turns.0, self.settled_in);
        if let Some(shares) = support::HostCpu::shares(self.host.0, self.host.1) {
            println!("    host CPU: {shares}");
        }
    }
}
