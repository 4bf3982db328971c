//! The oracle on the embedded chain against the simulated exchange on three hosts (three sources
//! a venue: each host's history; OKX adds its settled-rate field): traders on both sides paid
//! exactly once the sources agree; every fault case (one source wrong, sources missing, all
//! missing, a late venue) gives the right outcome or a void; a round whose settlement time no
//! longer exists is voided on chain and refunded, its positions visible until then; every
//! reading, the consensus and the transactions are served by `/v1/markets/{id}/resolution`;
//! the outbox gets one notification per holder and per payout.

use std::sync::Arc;
use std::time::Duration;

use api::chain::Crank;
use api::domain::market::MarketStatus;
use api::domain::series as series_spec;
use api::exchanges::{Exchange, ExchangeClient, RateSource};
use api::services::Services;
use api::services::oracle::{Oracle, Report};
use api::services::scheduler::Scheduler;
use api::services::settlement;
use api::store::{rounds, series};
use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;
use sim_exchange::{Endpoint, Model, SettlementFault, SettlementFaultKind, Sim, SimSymbol, default_symbols};
use sqlx::PgPool;
use uuid::Uuid;

use crate::helpers::*;
use crate::settlement::{Trader, buy, services, trader};
use crate::trading::{Trading, micros, open_market, trading};

const DEADLINE: Duration = Duration::from_secs(600);

pub struct Venue {
    sim: Arc<Sim>,
    oracle: Oracle,
    /// A client of every venue on the first host (what the scheduler reads).
    hosts: Vec<ExchangeClient>,
}

/// The simulated exchange on three hosts and an oracle reading them, its deadline 10 minutes.
pub async fn venue() -> Venue {
    venue_with(default_symbols(), Utc::now()).await
}

async fn venue_with(symbols: Vec<SimSymbol>, now: DateTime<Utc>) -> Venue {
    let sim = Arc::new(Sim::at(Model::new(42, symbols), now.timestamp_millis()));
    let mut bases = Vec::new();
    for host in 0..3 {
        bases.push(serve(sim_exchange::router_for(sim.clone(), host)).await.base);
    }
    let clients = Exchange::ALL.map(|e| bases.iter().map(|base| ExchangeClient::new(e, base, Duration::from_secs(5))).collect::<Vec<_>>());
    let hosts = clients.iter().map(|c| c[0].clone()).collect();
    let sources = Exchange::ALL.into_iter().zip(&clients).map(|(e, c)| (e, RateSource::for_venue(c)));
    Venue { sim, oracle: Oracle::new(sources, DEADLINE), hosts }
}

impl Venue {
    /// The settlements of Binance BTCUSDT (the test markets' series) after `after`, `n` of them.
    pub fn settlements(&self, after: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
        let s = self.sim.model.find("binance", "BTCUSDT").unwrap().clone();
        let mut t = after.timestamp_millis();
        (0..n)
            .map(|_| {
                t = self.sim.model.next_settlement(&s, t);
                Utc.timestamp_millis_opt(t).unwrap()
            })
            .collect()
    }

    fn truth(&self, t: DateTime<Utc>) -> i64 {
        let s = self.sim.model.find("binance", "BTCUSDT").unwrap().clone();
        self.sim.model.rate_at(&s, t.timestamp_millis())
    }

    fn fault(&self, kind: SettlementFaultKind, host: Option<usize>, endpoint: Option<Endpoint>) {
        self.sim.add_settlement_fault(SettlementFault { venue: "binance".into(), kind, host, endpoint });
    }

    /// One oracle pass at `now`, the venue's clock there too.
    pub async fn pass(&self, s: &Services, now: DateTime<Utc>) -> Report {
        self.sim.set_now(now.timestamp_millis());
        self.oracle.run_once(s, now).await.unwrap()
    }
}

/// Moves a traded round's settlement in Postgres to `t` (a settlement of the simulated venue,
/// after the round's close) and the chain's clock past its on-chain settlement time.
pub async fn settle_at(t: &Trading, market: Uuid, at: DateTime<Utc>) {
    t.chain.set_clock_offset(3_700);
    sqlx::query("UPDATE markets SET settlement_ts = $2, status = 'closed' WHERE id = $1").bind(market).bind(at).execute(&t.db).await.unwrap();
}

async fn resolution(t: &Trading, market: Uuid) -> Value {
    let response = t.app.get(&format!("/v1/markets/{market}/resolution")).await;
    assert_eq!(response.status(), 200);
    response.json::<Value>().await.unwrap()["data"].clone()
}

/// Runs the crank on the round until it is closed.
pub async fn pay_out(s: &Services, market: Uuid) {
    assert_eq!(settlement::pay_out(s, market, Utc::now()).await.unwrap(), Crank::Closed);
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn agreeing_sources_settle_and_every_winner_is_paid_exactly(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let v = venue().await;
    let (a, b) = (trader(&t, "100").await, trader(&t, "100").await);
    let market = open_market(&db, "open").await;
    let a_yes = buy(&t, &a, market, "yes", "10").await as u64;
    let b_no = buy(&t, &b, market, "no", "6").await as u64;
    let before = (t.vault(&a.wallet).await, t.vault(&b.wallet).await);
    let s = services(&t).await;
    let at = v.settlements(Utc::now() + chrono::Duration::hours(1), 1)[0];
    settle_at(&t, market, at).await;

    assert_eq!(v.pass(&s, at - chrono::Duration::seconds(1)).await, Report::default(), "nothing before settlement");
    let report = v.pass(&s, at + chrono::Duration::seconds(5)).await;
    assert_eq!(report.settled, 1, "{report:?}");
    let truth = v.truth(at);
    let (yes_won, winner, loser) = if truth > 0 { (true, (&a, a_yes, before.0), (&b, before.1)) } else { (false, (&b, b_no, before.1), (&a, before.0)) };
    let shown = resolution(&t, market).await;
    assert_eq!(shown["status"], "settled", "{shown}");
    assert_eq!(shown["outcome"], if yes_won { "yes" } else { "no" });
    assert_eq!(shown["observations"].as_array().unwrap().len(), 3, "three sources asked once: {shown}");
    assert!(shown["observations"].as_array().unwrap().iter().all(|o| o["error"].is_null()));
    assert_eq!(shown["consensus"]["sources"].as_array().unwrap().len(), 3, "{shown}");
    assert!(shown["transactions"]["finalize"].is_string(), "resolved on chain: {shown}");

    // Positions stay visible, valued at what they pay, until the crank pays them.
    let (_, positions) = t.get("/v1/users/me/positions", &winner.0.token).await;
    assert_eq!(micros(&positions["data"][0]["current_price"]), 1_000_000, "{positions}");
    pay_out(&s, market).await;
    assert_eq!(t.vault(&winner.0.wallet).await, winner.2 + winner.1, "1 micro-USDC per winning micro-share");
    assert_eq!(t.vault(&loser.0.wallet).await, loser.1, "the losing side gets nothing");
    let (_, positions) = t.get("/v1/users/me/positions", &winner.0.token).await;
    assert_eq!(positions["data"], serde_json::json!([]));

    let shown = resolution(&t, market).await;
    let payouts = shown["transactions"]["payouts"].as_array().unwrap();
    assert_eq!(payouts.len(), 2);
    assert!(payouts.iter().all(|p| p["signature"].is_string()));
    assert!(shown["transactions"]["close"].is_string() && shown["paid_out_at"].is_string(), "{shown}");

    // One notification per holder and per payout, with the amount.
    let outbox: Vec<(String, String, Value)> =
        sqlx::query_as("SELECT kind, wallet, payload FROM outbox WHERE market_id = $1 ORDER BY id").bind(market).fetch_all(&db).await.unwrap();
    assert_eq!(outbox.iter().filter(|(k, _, _)| k == "market_settled").count(), 2, "{outbox:?}");
    let paid: Vec<_> = outbox.iter().filter(|(k, _, _)| k == "settlement_payout").collect();
    assert_eq!(paid.len(), 2);
    let to_winner = paid.iter().find(|(_, w, _)| *w == winner.0.wallet).unwrap();
    assert_eq!(to_winner.2["payout"].as_i64().unwrap() as u64, winner.1);

    // A further pass asks nobody anything.
    assert_eq!(v.pass(&s, at + chrono::Duration::minutes(1)).await, Report::default());
}

/// Rounds of one venue due at the same settlement read its history once a host for all of them
/// (Binance's answers without a symbol), and each settles at its own symbol's rate.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn rounds_due_together_read_their_venue_once(db: PgPool) {
    let v = venue().await;
    let requests =
        due_together_settle_exactly(&db, &v, "binance", &["BTCUSDT", "ETHUSDT", "SOLUSDT"], 3, |v| vec![v.sim.requests("/fapi/v1/fundingRate")]).await;
    assert_eq!(requests, [3], "one request a host, not one a round");
}

/// OKX's settled-rate field is read once for every swap (`instId=ANY`); its history, which
/// needs a symbol, is asked round by round on each host.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn okx_rounds_due_together_read_its_settled_field_once(db: PgPool) {
    let v = venue().await;
    let symbols = ["BTCUSDT", "ETHUSDT", "SOLUSDT"];
    let requests = due_together_settle_exactly(&db, &v, "okx", &symbols, 4, |v| {
        vec![v.sim.requests("/api/v5/public/funding-rate"), v.sim.requests("/api/v5/public/funding-rate-history")]
    })
    .await;
    assert_eq!(requests, [1, 3 * symbols.len() as u64], "the field once; the history once a round and host");
}

/// Rounds of `venue`'s `symbols` due at one settlement they share, decided in one pass: each
/// settles at its own symbol's true rate with `sources` agreeing. Returns how far each of the
/// venue's request counts (`count`) moved in the pass.
async fn due_together_settle_exactly(db: &PgPool, v: &Venue, venue: &str, symbols: &[&str], sources: usize, count: impl Fn(&Venue) -> Vec<u64>) -> Vec<u64> {
    let t = trading(db, Duration::from_secs(10)).await;
    let specs: Vec<String> = symbols.iter().map(|symbol| format!("{venue}:{symbol}:8h")).collect();
    series::ensure(db, &series_spec::parse_list(&specs.join(",")).unwrap()).await.unwrap();
    let model = &v.sim.model;
    // A settlement all of them share (a symbol runs at four hours on some days), followed by two
    // equal intervals: OKX's settled field dates its settlement by the interval after the next
    // (`fundingTime` less `nextFundingTime − fundingTime`).
    let first = model.find(venue, symbols[0]).unwrap();
    let at = std::iter::successors(Some((Utc::now() + chrono::Duration::hours(1)).timestamp_millis()), |ms| Some(model.next_settlement(first, *ms)))
        .skip(1)
        .take(60)
        .find(|&ms| {
            symbols.iter().map(|sym| model.find(venue, sym).unwrap()).all(|s| {
                let funding = model.next_settlement(s, ms);
                !model.settlements(s, ms, ms, ms).is_empty() && model.next_settlement(s, funding) - funding == funding - ms
            })
        })
        .map(|ms| Utc.timestamp_millis_opt(ms).unwrap())
        .expect("a shared settlement with even intervals within 60 of the first symbol's");
    let mut rounds = Vec::new();
    for symbol in symbols {
        let slug = format!("{venue}-{}", symbol.to_lowercase());
        rounds.push(crate::trading::insert_round(db, &slug, at - chrono::Duration::hours(1), at - chrono::Duration::minutes(5), at, "closed").await);
    }
    let s = services(&t).await;
    let before = count(v);
    let report = v.pass(&s, at + chrono::Duration::seconds(5)).await;
    assert_eq!(report.settled, symbols.len() as u64, "{report:?}");
    let moved = count(v).iter().zip(&before).map(|(after, before)| after - before).collect();
    for (round, symbol) in rounds.iter().zip(symbols) {
        let shown = resolution(&t, *round).await;
        let truth = model.rate_at(model.find(venue, symbol).unwrap(), at.timestamp_millis());
        assert_eq!(shown["actual_rate"].as_str().map(|r| api::domain::rate::FundingRate::parse(r).unwrap().0), Some(truth), "{symbol}: {shown}");
        assert_eq!(shown["consensus"]["sources"].as_array().unwrap().len(), sources, "{symbol}: {shown}");
    }
    moved
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn source_faults_give_the_right_outcome_or_a_void(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let v = venue().await;
    let a = trader(&t, "100").await;
    let mut markets = Vec::new();
    for _ in 0..4 {
        markets.push(open_market(&db, "open").await);
    }
    for m in &markets {
        buy(&t, &a, *m, "yes", "5").await;
    }
    let start = t.vault(&a.wallet).await;
    let s = services(&t).await;
    let times = v.settlements(Utc::now() + chrono::Duration::hours(1), 4);
    for (m, at) in markets.iter().zip(&times) {
        settle_at(&t, *m, *at).await;
    }
    let rate_of = |shown: &Value| shown["actual_rate"].as_str().map(|r| api::domain::rate::FundingRate::parse(r).unwrap().0);

    // One source wrong: the other two agree and settle at the true rate.
    v.fault(SettlementFaultKind::Wrong, Some(1), Some(Endpoint::History));
    let report = v.pass(&s, times[0] + chrono::Duration::seconds(5)).await;
    assert_eq!(report.settled, 1, "{report:?}");
    let shown = resolution(&t, markets[0]).await;
    assert_eq!(rate_of(&shown), Some(v.truth(times[0])), "{shown}");
    assert_eq!(shown["consensus"]["sources"].as_array().unwrap().len(), 2, "the wrong one is not among them: {shown}");

    // Two sources missing, one left: no consensus; asked again with backoff until the deadline,
    // then void, and every position refunded exactly.
    v.sim.clear_settlement_faults();
    v.fault(SettlementFaultKind::Missing, Some(0), None);
    v.fault(SettlementFaultKind::Missing, Some(1), None);
    let first = times[1] + chrono::Duration::seconds(5);
    assert_eq!(v.pass(&s, first).await.waiting, 1);
    assert_eq!(v.pass(&s, first + chrono::Duration::seconds(1)).await, Report::default(), "waits out its backoff");
    assert_eq!(v.pass(&s, first + chrono::Duration::seconds(3)).await.waiting, 1);
    let shown = resolution(&t, markets[1]).await;
    let observations = shown["observations"].as_array().unwrap();
    assert_eq!(observations.len(), 2 + 2 + 1, "the answering source is asked once, the others every attempt: {shown}");
    assert!(observations.iter().any(|o| o["error"].is_string()) && observations.iter().any(|o| o["rate"].is_string()));
    assert_eq!(shown["attempts"], 2);
    assert_eq!(v.pass(&s, times[1] + chrono::Duration::from_std(DEADLINE).unwrap()).await.voided, 1);
    let shown = resolution(&t, markets[1]).await;
    assert_eq!((shown["status"].as_str(), shown["void_reason"].as_str()), (Some("voided"), Some("no_consensus")), "{shown}");
    assert!(shown["transactions"]["finalize"].is_string(), "voided on chain");

    // A late venue: nothing published at first, then the rate settles once it is.
    v.sim.clear_settlement_faults();
    v.fault(SettlementFaultKind::Late { secs: 30 }, None, None);
    assert_eq!(v.pass(&s, times[2] + chrono::Duration::seconds(5)).await.waiting, 1);
    let report = v.pass(&s, times[2] + chrono::Duration::seconds(40)).await;
    assert_eq!(report.settled, 1, "{report:?}");
    assert_eq!(rate_of(&resolution(&t, markets[2]).await), Some(v.truth(times[2])));

    // Every source missing: void at the deadline.
    v.sim.clear_settlement_faults();
    v.fault(SettlementFaultKind::Missing, None, None);
    assert_eq!(v.pass(&s, times[3] + chrono::Duration::seconds(5)).await.waiting, 1);
    assert_eq!(v.pass(&s, times[3] + chrono::Duration::seconds(601)).await.voided, 1);
    assert_eq!(rounds::status(&db, markets[3]).await.unwrap(), Some(MarketStatus::Voided));

    // The voids are refunded exactly; the settled rounds pay by their outcome.
    for m in &markets {
        pay_out(&s, *m).await;
    }
    let mut won = 0;
    for i in [0, 2] {
        let shares: i64 = sqlx::query_scalar("SELECT yes_shares FROM settlements WHERE market_id = $1").bind(markets[i]).fetch_one(&db).await.unwrap();
        won += if v.truth(times[i]) > 0 { shares as u64 } else { 0 };
    }
    assert_eq!(t.vault(&a.wallet).await, start + 2 * 5_050_000 + won, "two refunds of 5 USDC and its 1 % fee, and the winnings");
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_round_whose_settlement_time_vanished_is_voided_on_chain_and_refunded(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let v = venue().await;
    let (a, b): (Trader, Trader) = (trader(&t, "50").await, trader(&t, "50").await);
    let market = open_market(&db, "open").await;
    buy(&t, &a, market, "yes", "10").await;
    buy(&t, &b, market, "no", "4").await;
    let s = services(&t).await;

    // The scheduler finds the venue changed the interval: the round is marked and closes.
    assert!(rounds::mark_for_void(&db, market).await.unwrap());
    assert_eq!(rounds::status(&db, market).await.unwrap(), Some(MarketStatus::Closed));
    let (status_code, refused) = t.post(&format!("/v1/markets/{market}/trade"), &a.token, serde_json::json!({"side": "yes", "usdc_amount": "1"})).await;
    assert_eq!(status_code, 422, "no more trades: {refused}");
    // The oracle voids it at once, on chain, before its settlement time.
    let report = v.pass(&s, Utc::now()).await;
    assert_eq!(report.voided, 1, "{report:?}");
    let shown = resolution(&t, market).await;
    assert_eq!((shown["status"].as_str(), shown["void_reason"].as_str()), (Some("voided"), Some("interval_change")));
    assert!(shown["observations"].as_array().unwrap().is_empty(), "no source is asked");
    // The positions stay visible, their money counted, until refunded.
    let held = crate::settlement::balance(&t, &a).await;
    assert_eq!(micros(&held["locked_in_positions"]), 10_100_000, "what the refund will be, the fee included: {held}");
    pay_out(&s, market).await;
    assert_eq!(t.vault(&a.wallet).await, 50_000_000);
    assert_eq!(t.vault(&b.wallet).await, 50_000_000);
    let held = crate::settlement::balance(&t, &a).await;
    assert_eq!((micros(&held["usdc_balance"]), micros(&held["locked_in_positions"])), (50_000_000, 0));
}

/// Short rounds (`FM_SERIES=binance:BTCUSDT:5m`): the scheduler plans a round every five
/// minutes on the simulated venue's five-minute grid, each trading for five minutes up to the
/// contract's five minutes before settlement (so one round trades while the one before waits);
/// one is traded, closed, settled from three sources and paid, ten minutes from open to paid.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_five_minute_round_trades_closes_settles_and_pays(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    series::ensure(&db, &series_spec::parse_list("binance:BTCUSDT:5m").unwrap()).await.unwrap();
    sqlx::query("UPDATE series SET active = slug = 'binance-btcusdt'").execute(&db).await.unwrap();
    let minutes = |m: i64| chrono::Duration::minutes(m);
    // A virtual clock 30 s past a five-minute mark, ahead of real time; the chain follows it
    // (whole seconds, rounded up: never behind the virtual clock).
    let mark = Utc.timestamp_millis_opt(Utc::now().timestamp_millis().div_euclid(300_000) * 300_000).unwrap() + minutes(5);
    let start = mark + chrono::Duration::seconds(30);
    let clock = |at: DateTime<Utc>| t.chain.set_clock_offset((at - Utc::now()).num_milliseconds().div_euclid(1000) + 1);
    clock(start);
    let symbols = default_symbols()
        .into_iter()
        .map(|s| if (s.venue, s.symbol.as_str()) == ("binance", "BTCUSDT") { SimSymbol::new("binance", "BTCUSDT", 5) } else { s })
        .collect();
    let v = venue_with(symbols, start).await;
    let scheduler = Scheduler::new(db.clone(), v.hosts.clone(), Duration::from_secs(24 * 3600));
    let report = scheduler.run_once(start).await.unwrap();
    // An hour of them; the one settling at mark + 5 min would close before it opens.
    assert_eq!(report.created, 11, "{report:?}");

    type Round = (Uuid, DateTime<Utc>, DateTime<Utc>, DateTime<Utc>, String);
    let rounds: Vec<Round> =
        sqlx::query_as("SELECT id, open_ts, close_ts, settlement_ts, status FROM markets ORDER BY settlement_ts").fetch_all(&db).await.unwrap();
    for (i, (_, open, close, settlement, _)) in rounds.iter().enumerate() {
        assert_eq!(*settlement, mark + minutes(5 * (i as i64 + 2)));
        assert_eq!((*settlement - *close, *close - *open), (minutes(5), minutes(5)), "trades five minutes, closed the last five");
    }
    let (market, _, close, settlement, status) = rounds[0].clone();
    assert_eq!((status.as_str(), rounds[1].4.as_str()), ("open", "pending"));

    let (a, b) = (trader(&t, "100").await, trader(&t, "100").await);
    let a_yes = buy(&t, &a, market, "yes", "10").await as u64;
    let b_no = buy(&t, &b, market, "no", "6").await as u64;
    let before = (t.vault(&a.wallet).await, t.vault(&b.wallet).await);

    clock(close);
    scheduler.run_once(close).await.unwrap();
    assert_eq!(rounds::status(&db, market).await.unwrap(), Some(MarketStatus::Closed));
    assert_eq!(rounds::status(&db, rounds[1].0).await.unwrap(), Some(MarketStatus::Open), "the next round trades as this one closes");
    let after = settlement + chrono::Duration::seconds(3);
    clock(after);
    scheduler.run_once(after).await.unwrap();
    assert_eq!(rounds::status(&db, market).await.unwrap(), Some(MarketStatus::Resolving));
    let s = services(&t).await;
    let report = v.pass(&s, after).await;
    assert_eq!(report.settled, 1, "{report:?}");
    pay_out(&s, market).await;

    let shown = resolution(&t, market).await;
    assert_eq!(shown["consensus"]["sources"].as_array().unwrap().len(), 3, "history on all three hosts: {shown}");
    let truth = v.truth(settlement);
    assert_eq!(shown["outcome"], if truth > 0 { "yes" } else { "no" });
    let (won_a, won_b) = if truth > 0 { (a_yes, 0) } else { (0, b_no) };
    assert_eq!((t.vault(&a.wallet).await, t.vault(&b.wallet).await), (before.0 + won_a, before.1 + won_b));
    t.chain.set_clock_offset(0);
}
