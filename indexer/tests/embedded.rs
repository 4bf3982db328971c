//! The embedded chain: a real flow (users, deposits, a market, custodial and wallet-signed
//! trades, a refused trade, resolution, settlement, a withdrawal) indexed into a fresh Postgres
//! must equal the on-chain accounts exactly; the chain survives a restart; what a cluster's
//! `sendTransaction` refuses, it refuses.

mod common;

use anchor_lang::prelude::Pubkey;
use anchor_lang::solana_program::instruction::Instruction;
use anchor_lang::solana_program::program_pack::Pack;
use anchor_lang::solana_program::system_instruction;
use chain_client::{ChainError, ConfirmedTransaction, SignatureInfo};
use funding_market::client;
use funding_market::instructions::CreateMarketParams;
use funding_market::state::{Market, MarketStatus, Outcome, Position, Side};
use indexer::follow::Indexer;
use indexer::projection::Projector;
use localnet::EmbeddedChain;
use localnet::{GenesisParams, ProgramCode, validator_logs};
use solana_keypair::Keypair;
use solana_signer::Signer;
use solana_transaction::Transaction;
use solana_transaction_error::TransactionError;
use sqlx::PgPool;
use uuid::Uuid;

const USDC: u64 = 1_000_000;

async fn wire(chain: &EmbeddedChain, ixs: &[Instruction], payer: &Keypair, signers: &[&Keypair]) -> Vec<u8> {
    let (blockhash, _) = chain.latest_blockhash().await.unwrap();
    let mut all = vec![payer];
    all.extend_from_slice(signers);
    let tx = Transaction::new_signed_with_payer(ixs, Some(&payer.pubkey()), &all, blockhash.parse().unwrap());
    bincode::serialize(&tx).unwrap()
}

async fn send(chain: &EmbeddedChain, ixs: &[Instruction], payer: &Keypair, signers: &[&Keypair]) -> Result<String, ChainError> {
    chain.send_and_confirm(&wire(chain, ixs, payer, signers).await).await
}

/// `send`, answered with the transaction as it landed.
async fn send_confirmed(chain: &EmbeddedChain, ixs: &[Instruction], payer: &Keypair, signers: &[&Keypair]) -> ConfirmedTransaction {
    chain.send_and_confirm_transaction(&wire(chain, ixs, payer, signers).await).await.unwrap()
}

async fn token_balance(chain: &EmbeddedChain, address: &Pubkey) -> u64 {
    let account = chain.account(&address.to_string()).await.unwrap().expect("token account exists");
    spl_token_interface::state::Account::unpack(&account.data).unwrap().amount
}

async fn decode<T: anchor_lang::AccountDeserialize>(chain: &EmbeddedChain, address: &Pubkey) -> Option<T> {
    chain.account(&address.to_string()).await.unwrap().map(|a| client::decode(&a.data).unwrap())
}

/// A wallet with SOL, its user accounts, and `usdc` deposited and swept into its vault.
async fn trader(chain: &EmbeddedChain, usdc: u64) -> Keypair {
    let wallet = Keypair::new();
    chain.airdrop(&wallet.pubkey(), 10_000_000_000).await.unwrap();
    send(chain, &[client::create_user(wallet.pubkey(), wallet.pubkey(), chain.mint())], &wallet, &[]).await.unwrap();
    chain.mint_usdc(&client::deposit_pda(&wallet.pubkey()), usdc).await.unwrap();
    let operator = chain.keys().operator.insecure_clone();
    send(chain, &[client::sweep_deposit(wallet.pubkey())], &operator, &[]).await.unwrap();
    wallet
}

/// The service's row for a market, as the scheduler would have made it.
async fn market_row(db: &PgPool, open: i64) -> Uuid {
    let series = Uuid::new_v4();
    sqlx::query("INSERT INTO series (id, exchange, symbol, slug, display_name, tier, liquidity_b, interval_hours) VALUES ($1, 'binance', 'BTCUSDT', 'binance-btcusdt', 'BTC/USDT', 1, 100000000, 1)")
        .bind(series)
        .execute(db)
        .await
        .unwrap();
    let market = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO markets (id, series_id, round_number, open_ts, close_ts, settlement_ts, status, liquidity_b, q_yes, q_no, yes_price_ppm, ou_prior_ppm, ou_confidence_ppm)
         VALUES ($1, $2, 1, to_timestamp($3), to_timestamp($3 + 3300), to_timestamp($3 + 3600), 'open', 100000000, 0, 0, 500000, 500000, 0)",
    )
    .bind(market)
    .bind(series)
    .bind(open as f64)
    .execute(db)
    .await
    .unwrap();
    market
}

fn indexer(chain: &EmbeddedChain, db: &PgPool) -> Indexer<EmbeddedChain> {
    Indexer::new(chain.clone(), Projector::new(db.clone(), &funding_market::ID), &funding_market::ID.to_string())
}

/// Every projected position equals its on-chain account; every on-chain position is projected.
async fn assert_positions_match(chain: &EmbeddedChain, db: &PgPool, market_id: Uuid, wallets: &[&Keypair]) {
    let market = client::market_pda(market_id.as_bytes());
    for wallet in wallets {
        let onchain: Option<Position> = decode(chain, &client::position_pda(&market, &wallet.pubkey())).await;
        let projected: Option<(i64, i64)> = sqlx::query_as("SELECT yes_shares, no_shares FROM positions WHERE market_id = $1 AND wallet = $2")
            .bind(market_id)
            .bind(wallet.pubkey().to_string())
            .fetch_optional(db)
            .await
            .unwrap();
        assert_eq!(projected, onchain.map(|p| (p.yes_shares as i64, p.no_shares as i64)), "position of {}", wallet.pubkey());
    }
}

async fn assert_market_matches(chain: &EmbeddedChain, db: &PgPool, market_id: Uuid) -> Market {
    let onchain: Market = decode(chain, &client::market_pda(market_id.as_bytes())).await.unwrap();
    let projected: (i64, i64, i64, i32, String, Option<String>) =
        sqlx::query_as("SELECT q_yes, q_no, total_volume, trade_count, status, outcome FROM markets WHERE id = $1")
            .bind(market_id)
            .fetch_one(db)
            .await
            .unwrap();
    let (status, outcome) = match (onchain.status, onchain.outcome) {
        (MarketStatus::Resolved, Outcome::Yes) => ("settled", Some("yes".to_owned())),
        (MarketStatus::Resolved, Outcome::No) => ("settled", Some("no".to_owned())),
        (MarketStatus::Voided, _) => ("voided", None),
        _ => ("open", None),
    };
    assert_eq!(projected, (onchain.q_yes as i64, onchain.q_no as i64, onchain.volume as i64, onchain.trade_count as i32, status.to_owned(), outcome));
    onchain
}

async fn assert_balances_match(chain: &EmbeddedChain, db: &PgPool, wallets: &[&Keypair]) {
    for wallet in wallets {
        let onchain = token_balance(chain, &client::vault_pda(&wallet.pubkey())).await;
        let projected: i64 =
            sqlx::query_scalar("SELECT balance FROM vault_balances WHERE wallet = $1").bind(wallet.pubkey().to_string()).fetch_one(db).await.unwrap();
        assert_eq!(projected as u64, onchain, "vault of {}", wallet.pubkey());
    }
}

/// What `signatures_after` lists for `address` — from every cursor, and from none — is what the
/// ledger's by-account index holds (read newest first by `getSignaturesForAddress`), whether the
/// listing came from the chain's memory of its newest rows or from Postgres.
async fn assert_listings_are_the_index(chain: &EmbeddedChain, address: &str) {
    let mut indexed: Vec<SignatureInfo> = chain
        .signatures_for_address(address, None, None, 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|s| SignatureInfo { signature: s.signature, slot: s.slot, failed: s.err.is_some(), block_time: s.block_time })
        .collect();
    indexed.reverse();
    assert!(!indexed.is_empty());
    assert_eq!(chain.signatures_after(address, None).await.unwrap(), indexed);
    for (i, cursor) in indexed.iter().enumerate() {
        assert_eq!(chain.signatures_after(address, Some(&cursor.signature)).await.unwrap(), indexed[i + 1..], "after {i}");
    }
}

/// `getSignaturesForAddress`'s pages of `address` are the slices of its whole listing that
/// their cursors name: for every `before` and `until` (each exclusive, either absent), whole
/// and at most two.
async fn assert_pages_are_the_listing(chain: &EmbeddedChain, address: &str) {
    let page = async |before: Option<&str>, until: Option<&str>, limit: usize| -> Vec<String> {
        chain.signatures_for_address(address, before, until, limit).await.unwrap().into_iter().map(|s| s.signature).collect()
    };
    let listed = page(None, None, 1000).await;
    let cursors: Vec<Option<&str>> = std::iter::once(None).chain(listed.iter().map(|s| Some(s.as_str()))).collect();
    for (b, before) in cursors.iter().enumerate() {
        for (u, until) in cursors.iter().enumerate() {
            // `listed[b]` is the first after `before`; `until` is `listed[u - 1]` (absent: the end).
            let to = if u == 0 { listed.len() } else { u - 1 };
            let expected = if b <= to { &listed[b..to] } else { &[][..] };
            assert_eq!(page(*before, *until, 1000).await, expected, "before {before:?}, until {until:?}");
            assert_eq!(page(*before, *until, 2).await, expected[..expected.len().min(2)], "before {before:?}, until {until:?}, at most two");
        }
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_real_flow_is_projected_exactly(db: PgPool) {
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let keys = chain.keys();
    let (authority, operator, oracle) = (keys.authority.insecure_clone(), keys.operator.insecure_clone(), keys.oracle.insecure_clone());
    let alice = trader(&chain, 100 * USDC).await;
    let bob = trader(&chain, 50 * USDC).await;

    let now = chain.clock().await.unwrap().unix_timestamp;
    let market_id = market_row(&db, now - 60).await;
    let id = *market_id.as_bytes();
    let mut series = [0u8; 32];
    series[..15].copy_from_slice(b"binance-btcusdt");
    let params =
        CreateMarketParams { market_id: id, series, open_ts: now - 60, close_ts: now + 3240, settlement_ts: now + 3540, b: 100 * USDC, prior_ppm: 550_000 };
    send(&chain, &[client::create_market(authority.pubkey(), operator.pubkey(), chain.mint(), params)], &operator, &[&authority]).await.unwrap();

    // Alice signs her own trades; Bob's go through the operator (the custodial path). Alice's
    // is signed before the bank is rooted and continued in a new slot: blockhashes, accounts and
    // the rest carry over.
    let alice_buy = wire(&chain, &[client::buy_shares(alice.pubkey(), alice.pubkey(), &id, Side::Yes, 10 * USDC, 0)], &alice, &[]).await;
    chain.root_now().await;
    chain.send_and_confirm(&alice_buy).await.unwrap();
    // Transactions as `send_and_confirm_transaction` answered them (checked against the ledger below).
    let mut answered = Vec::new();
    answered.push(send_confirmed(&chain, &[client::buy_shares(operator.pubkey(), bob.pubkey(), &id, Side::No, 20 * USDC, 0)], &operator, &[]).await);
    let alice_yes = decode::<Position>(&chain, &client::position_pda(&client::market_pda(&id), &alice.pubkey())).await.unwrap().yes_shares;
    answered.push(send_confirmed(&chain, &[client::sell_shares(alice.pubkey(), alice.pubkey(), &id, Side::Yes, alice_yes / 3, 0)], &alice, &[]).await);

    // More than Bob has: refused at preflight, nothing lands — not even the fee (the bank
    // executes it once and does not commit it).
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM embedded_ledger").fetch_one(&db).await.unwrap();
    let lamports = |chain: EmbeddedChain, key: Pubkey| async move { chain.account(&key.to_string()).await.unwrap().unwrap().lamports };
    let fee_payer_before = lamports(chain.clone(), operator.pubkey()).await;
    let refused = send(&chain, &[client::buy_shares(operator.pubkey(), bob.pubkey(), &id, Side::No, 500 * USDC, 0)], &operator, &[]).await;
    assert!(matches!(refused, Err(ChainError::Rpc { code: -32002, err: Some(TransactionError::InstructionError(..)), .. })), "{refused:?}");
    // With what a node reports of the failed run: the program's logs, its compute units, its fee.
    let Err(ChainError::Rpc { preflight: Some(simulation), .. }) = &refused else { panic!("{refused:?}") };
    let logs = simulation.logs.as_deref().unwrap_or_default();
    assert!(logs.first().is_some_and(|l| l == &format!("Program {} invoke [1]", funding_market::ID)), "{logs:?}");
    assert!(logs.last().is_some_and(|l| l.starts_with(&format!("Program {} failed: ", funding_market::ID))), "{logs:?}");
    assert!(simulation.units_consumed.is_some_and(|units| units > 0), "{simulation:?}");
    assert_eq!(simulation.fee, Some(5_000));
    let wire = wire(&chain, &[client::buy_shares(operator.pubkey(), bob.pubkey(), &id, Side::No, 500 * USDC, 0)], &operator, &[]).await;
    use base64::Engine;
    let request = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "sendTransaction",
        "params": [base64::engine::general_purpose::STANDARD.encode(&wire), {"encoding": "base64"}]});
    let answer = chain.json_rpc(&request).await;
    assert_eq!(answer["error"]["code"], -32002, "{answer}");
    assert_eq!(answer["error"]["data"]["logs"], serde_json::json!(logs), "{answer}");
    assert!(answer["error"]["data"]["unitsConsumed"].as_u64().is_some_and(|units| units > 0), "{answer}");
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM embedded_ledger").fetch_one(&db).await.unwrap();
    assert_eq!(after, before);
    assert_eq!(lamports(chain.clone(), operator.pubkey()).await, fee_payer_before);
    // The same transaction is not remembered as processed: sent again, it is refused the same way.
    let again = send(&chain, &[client::buy_shares(operator.pubkey(), bob.pubkey(), &id, Side::No, 500 * USDC, 0)], &operator, &[]).await;
    assert!(matches!(again, Err(ChainError::Rpc { code: -32002, err: Some(TransactionError::InstructionError(..)), .. })), "{again:?}");

    let progress = indexer(&chain, &db).run_once().await.unwrap();
    assert!(progress.events >= 8, "{progress:?}");
    assert_market_matches(&chain, &db, market_id).await;
    assert_positions_match(&chain, &db, market_id, &[&alice, &bob]).await;
    assert_balances_match(&chain, &db, &[&alice, &bob]).await;
    let deposited: i64 = sqlx::query_scalar("SELECT sum(amount)::BIGINT FROM deposits").fetch_one(&db).await.unwrap();
    assert_eq!(deposited as u64, 150 * USDC);
    let trades: Vec<(String, bool, i64, i64, i64)> =
        sqlx::query_as("SELECT wallet, is_buy, shares, amount, fee FROM trades WHERE market_id = $1 ORDER BY created_at, is_buy DESC")
            .bind(market_id)
            .fetch_all(&db)
            .await
            .unwrap();
    assert_eq!(trades.len(), 3);
    let (bought, fees): (i64, i64) = trades.iter().filter(|t| t.1).fold((0, 0), |(a, f), t| (a + t.3, f + t.4));
    assert_eq!((bought as u64, fees as u64), (30 * USDC, 30 * USDC / 100), "buys spend the amounts asked plus the 1% fee");

    // Past settlement: the oracle resolves YES and every position is settled.
    chain.set_clock_offset(3600);
    send(&chain, &[client::resolve_market(oracle.pubkey(), &id, 125)], &oracle, &[]).await.unwrap();
    // Alice's position alone (`settle_position`), Bob's in a list (`settle_positions`).
    let rent_payer = |wallet: Pubkey| {
        let chain = chain.clone();
        async move { decode::<Position>(&chain, &client::position_pda(&client::market_pda(&id), &wallet)).await.unwrap().rent_payer }
    };
    let alice_rent_payer = rent_payer(alice.pubkey()).await;
    answered.push(send_confirmed(&chain, &[client::settle_position(&id, alice.pubkey(), alice_rent_payer)], &operator, &[]).await);
    let bob_rent_payer = rent_payer(bob.pubkey()).await;
    answered.push(send_confirmed(&chain, &[client::settle_positions(&id, &[(bob.pubkey(), bob_rent_payer)])], &operator, &[]).await);
    // Alice withdraws to a token account of her own.
    let destination = Keypair::new();
    let rent = 2_039_280;
    let create = system_instruction::create_account(
        &alice.pubkey(),
        &destination.pubkey(),
        rent,
        spl_token_interface::state::Account::LEN as u64,
        &spl_token_interface::ID,
    );
    let init = spl_token_interface::instruction::initialize_account3(&spl_token_interface::ID, &destination.pubkey(), &chain.mint(), &alice.pubkey()).unwrap();
    answered.push(
        send_confirmed(&chain, &[create, init, client::withdraw(alice.pubkey(), alice.pubkey(), destination.pubkey(), 7 * USDC)], &alice, &[&destination])
            .await,
    );

    indexer(&chain, &db).run_once().await.unwrap();
    let market = assert_market_matches(&chain, &db, market_id).await;
    assert_eq!(market.status, MarketStatus::Resolved);
    assert_positions_match(&chain, &db, market_id, &[&alice, &bob]).await;
    assert_balances_match(&chain, &db, &[&alice, &bob]).await;
    assert_eq!(token_balance(&chain, &destination.pubkey()).await, 7 * USDC);
    let settled: Vec<(String, i64)> =
        sqlx::query_as("SELECT wallet, payout FROM settlements WHERE market_id = $1 ORDER BY wallet").bind(market_id).fetch_all(&db).await.unwrap();
    assert_eq!(settled.len(), 2);
    let bob_payout = settled.iter().find(|(w, _)| *w == bob.pubkey().to_string()).unwrap().1;
    assert_eq!(bob_payout, 0, "NO lost");
    let withdrawn: (String, i64) =
        sqlx::query_as("SELECT destination, amount FROM chain_withdrawals WHERE wallet = $1").bind(alice.pubkey().to_string()).fetch_one(&db).await.unwrap();
    assert_eq!(withdrawn, (destination.pubkey().to_string(), 7 * USDC as i64));

    // The ledger knows who signed: Alice alone for her withdrawal, fee payer first.
    let last = chain.signatures_after(&funding_market::ID.to_string(), None).await.unwrap().pop().unwrap();
    let withdrawal = chain.transaction(&last.signature).await.unwrap().unwrap();
    assert_eq!(withdrawal.signers, vec![alice.pubkey().to_string(), destination.pubkey().to_string()]);
    // The ledger read directly and its getTransaction answer decoded as a cluster's: the same,
    // for every transaction of the flow (trades, events, a failure-free withdrawal…).
    for listed in chain.signatures_after(&funding_market::ID.to_string(), None).await.unwrap() {
        let direct = chain.transaction(&listed.signature).await.unwrap().unwrap();
        let encoded =
            chain.encoded_transaction(&listed.signature, solana_transaction_status_client_types::UiTransactionEncoding::Json, Some(0)).await.unwrap().unwrap();
        assert_eq!(ConfirmedTransaction::from_encoded(&listed.signature, encoded).unwrap(), direct);
        assert!(!direct.inner_instructions.is_empty() || !direct.instructions.is_empty());
    }

    // What a send answered (built from the bank's results) is what the ledger gives back: a
    // trade's events, payouts, and a withdrawal with a top-level instruction of another program.
    for confirmed in &answered {
        assert!(!confirmed.inner_instructions.is_empty(), "{} has its events", confirmed.signature);
        assert_eq!(Some(confirmed), chain.transaction(&confirmed.signature).await.unwrap().as_ref());
    }

    // Indexing again changes nothing.
    assert_eq!(indexer(&chain, &db).run_once().await.unwrap().events, 0);

    // The round closes (the rest of its vault back to the treasury): projected once, as paid out.
    let closed = send_confirmed(&chain, &[client::close_market(authority.pubkey(), &id)], &operator, &[&authority]).await;
    assert_eq!(indexer(&chain, &db).run_once().await.unwrap().events, 1);
    let (paid_out, close_signature): (bool, Option<String>) =
        sqlx::query_as("SELECT paid_out_at IS NOT NULL, close_signature FROM markets WHERE id = $1").bind(market_id).fetch_one(&db).await.unwrap();
    assert_eq!((paid_out, close_signature), (true, Some(closed.signature)));
    assert_eq!(indexer(&chain, &db).run_once().await.unwrap().events, 0);
}

#[sqlx::test(migrations = "../migrations")]
async fn the_chain_survives_a_restart(db: PgPool) {
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let alice = trader(&chain, 25 * USDC).await;
    let operator_before = chain.keys().operator.pubkey();
    let mint_before = chain.mint();
    let listed_before = chain.signatures_after(&funding_market::ID.to_string(), None).await.unwrap();
    drop(chain);

    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    assert_eq!((chain.keys().operator.pubkey(), chain.mint()), (operator_before, mint_before), "same keys, no second genesis");
    assert_eq!(token_balance(&chain, &client::vault_pda(&alice.pubkey())).await, 25 * USDC);
    assert_eq!(chain.signatures_after(&funding_market::ID.to_string(), None).await.unwrap(), listed_before);

    // It goes on where it stopped: more USDC for Alice, then a withdrawal of all of it.
    chain.mint_usdc(&client::deposit_pda(&alice.pubkey()), 5 * USDC).await.unwrap();
    let operator = chain.keys().operator.insecure_clone();
    send(&chain, &[client::sweep_deposit(alice.pubkey())], &operator, &[]).await.unwrap();
    assert_eq!(token_balance(&chain, &client::vault_pda(&alice.pubkey())).await, 30 * USDC);
    // Every transaction has a slot of its own, one above the last, across the restart too.
    let listed = chain.signatures_after(&funding_market::ID.to_string(), None).await.unwrap();
    assert!(listed.len() > listed_before.len());
    // Rows from before the restart are read from Postgres, the new ones from memory.
    assert_listings_are_the_index(&chain, &funding_market::ID.to_string()).await;
    assert_listings_are_the_index(&chain, &client::vault_pda(&alice.pubkey()).to_string()).await;
    assert!(listed.windows(2).all(|w| w[1].slot > w[0].slot), "{listed:?}");
    indexer(&chain, &db).run_once().await.unwrap();
    assert_balances_match(&chain, &db, &[&alice]).await;
    let genesis_config: i64 = sqlx::query_scalar("SELECT count(*) FROM embedded_ledger WHERE $1 = ANY(account_keys)")
        .bind(client::config_pda().to_string())
        .fetch_one(&db)
        .await
        .unwrap();
    assert!(genesis_config >= 1);

    // One writer per database: a second chain on it is refused while this one runs.
    assert!(matches!(EmbeddedChain::open(db.clone(), &GenesisParams::default()).await, Err(localnet::EmbeddedError::InUse)));
}

#[sqlx::test(migrations = "../migrations")]
async fn what_a_cluster_refuses_is_refused(db: PgPool) {
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let alice = trader(&chain, 10 * USDC).await;
    let count = || async { sqlx::query_scalar::<_, i64>("SELECT count(*) FROM embedded_ledger").fetch_one(&db).await.unwrap() };
    let landed = count().await;

    let garbage = chain.send_and_confirm(b"not a transaction").await;
    assert!(matches!(garbage, Err(ChainError::Rpc { code: -32602, .. })), "{garbage:?}");

    let ix = client::withdraw(alice.pubkey(), alice.pubkey(), client::deposit_pda(&alice.pubkey()), USDC);
    let mut forged = wire(&chain, std::slice::from_ref(&ix), &alice, &[]).await;
    forged[10] ^= 0xff; // inside the signature
    let forged = chain.send_and_confirm(&forged).await;
    assert!(matches!(forged, Err(ChainError::Rpc { code: -32003, .. })), "{forged:?}");

    // Someone else cannot withdraw Alice's USDC: a program error, refused at preflight.
    let mallory = Keypair::new();
    chain.airdrop(&mallory.pubkey(), 1_000_000_000).await.unwrap();
    let stolen = send(&chain, &[client::withdraw(mallory.pubkey(), alice.pubkey(), client::deposit_pda(&mallory.pubkey()), USDC)], &mallory, &[]).await;
    assert!(matches!(&stolen, Err(ChainError::Rpc { code: -32002, err: Some(TransactionError::InstructionError(..)), .. })), "{stolen:?}");
    let landed = landed + 1; // the airdrop

    // The same signed transaction twice: the second is a duplicate.
    let ok = wire(&chain, &[client::withdraw(alice.pubkey(), alice.pubkey(), client::deposit_pda(&alice.pubkey()), USDC)], &alice, &[]).await;
    let landed_signature = chain.send_and_confirm(&ok).await.unwrap();
    let again = chain.send_and_confirm(&ok).await;
    assert!(matches!(again, Err(ChainError::Rpc { code: -32002, .. })), "{again:?}");
    assert_eq!(count().await, landed + 1);
    assert_eq!(token_balance(&chain, &client::vault_pda(&alice.pubkey())).await, 9 * USDC);

    // Landed is final on a chain without forks; unknown is not.
    assert!(chain.is_finalized(&landed_signature).await.unwrap());
    assert!(!chain.is_finalized("1111111111111111111111111111111111111111111111111111111111111111").await.unwrap());
    // Unknown signatures and cursors answer like a node.
    assert_eq!(chain.transaction("1111111111111111111111111111111111111111111111111111111111111111").await.unwrap(), None);
    assert!(chain.signatures_after(&funding_market::ID.to_string(), Some("nope")).await.is_err());
}

/// The backend pid of the connection holding the chain's single-writer lock (a bigint advisory
/// lock shows its high half as `classid`, its low half as `objid`).
async fn writer_pid(db: &PgPool) -> i32 {
    sqlx::query_scalar(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
           AND ((classid::BIGINT << 32) | objid::BIGINT) = $1
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
    .bind(localnet::SINGLE_WRITER_LOCK)
    .fetch_one(db)
    .await
    .unwrap()
}

/// A caller that goes away while its transaction is being persisted (a request past its
/// deadline) does not leave the bank ahead of Postgres: the transaction is persisted all the
/// same and followers are woken for it.
#[sqlx::test(migrations = "../migrations")]
async fn a_send_whose_caller_goes_away_is_still_persisted(db: PgPool) {
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let alice = trader(&chain, 10 * USDC).await;
    let mut confirmations = chain.subscribe();
    confirmations.borrow_and_update();
    // Writes to the ledger wait behind this lock, so the send is cut off mid-persist.
    let mut lock = db.begin().await.unwrap();
    sqlx::query("LOCK TABLE embedded_ledger IN EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    let withdrawal = wire(&chain, &[client::withdraw(alice.pubkey(), alice.pubkey(), client::deposit_pda(&alice.pubkey()), USDC)], &alice, &[]).await;
    let cut = tokio::time::timeout(std::time::Duration::from_millis(500), chain.send_and_confirm(&withdrawal)).await;
    assert!(cut.is_err(), "the send was still waiting for the ledger");
    lock.rollback().await.unwrap();

    tokio::time::timeout(std::time::Duration::from_secs(20), confirmations.changed()).await.expect("followers are woken").unwrap();
    let persisted: i64 = sqlx::query_scalar("SELECT count(*) FROM embedded_ledger WHERE seq = $1").bind(*confirmations.borrow()).fetch_one(&db).await.unwrap();
    assert_eq!(persisted, 1);
    // Postgres holds what the bank holds: a chain rebuilt from it agrees.
    let vault = token_balance(&chain, &client::vault_pda(&alice.pubkey())).await;
    assert_eq!(vault, 9 * USDC);
    drop(chain);
    let reopened = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    assert_eq!(token_balance(&reopened, &client::vault_pda(&alice.pubkey())).await, vault);
    assert!(reopened.is_persisting());
}

/// A write that fails (here: the writer's connection is killed) is retried on a new connection
/// until it is durable; the chain keeps working without a restart.
#[sqlx::test(migrations = "../migrations")]
async fn a_failed_write_is_retried_and_the_chain_carries_on(db: PgPool) {
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let alice = trader(&chain, 10 * USDC).await;
    // The writer's connection dies, and the ledger stays locked for a while after: the retry
    // waits, and the chain reports it is not persisting meanwhile.
    let mut lock = db.begin().await.unwrap();
    sqlx::query("LOCK TABLE embedded_ledger IN EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)").bind(writer_pid(&db).await).fetch_one(&db).await.unwrap();
    assert!(killed);
    let withdraw = |amount| client::withdraw(alice.pubkey(), alice.pubkey(), client::deposit_pda(&alice.pubkey()), amount);
    let first = tokio::spawn({
        let (chain, wire) = (chain.clone(), wire(&chain, &[withdraw(USDC)], &alice, &[]).await);
        async move { chain.send_and_confirm(&wire).await }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while chain.is_persisting() {
        assert!(std::time::Instant::now() < deadline, "the failed write was reported");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    lock.rollback().await.unwrap();
    let first = first.await.unwrap().expect("persisted on a new connection");
    let second = send(&chain, &[withdraw(2 * USDC)], &alice, &[]).await.expect("later writes are accepted");
    assert!(chain.is_persisting());
    for signature in [&first, &second] {
        assert!(chain.status(signature).await.unwrap().is_some(), "{signature} is in the ledger");
    }
    assert_listings_are_the_index(&chain, &funding_market::ID.to_string()).await;
    // The lock is held again, by the new connection.
    writer_pid(&db).await;
    drop(chain);
    let reopened = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    assert_eq!(token_balance(&reopened, &client::vault_pda(&alice.pubkey())).await, 7 * USDC);
}

/// A new chain, a payer with 1 SOL on it, and its latest blockhash.
async fn chain_with_payer(db: &PgPool) -> (EmbeddedChain, Keypair, String) {
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let payer = Keypair::new();
    chain.airdrop(&payer.pubkey(), 1_000_000_000).await.unwrap();
    let (blockhash, _) = chain.latest_blockhash().await.unwrap();
    (chain, payer, blockhash)
}

/// `getTransaction` names a transaction's version as a node does: a versioned (v0) transaction
/// only to a client that says it supports it (refused with -32015 otherwise), with its empty
/// lookups listed; a legacy one as `legacy` to a client that gave a version, unnamed otherwise.
#[sqlx::test(migrations = "../migrations")]
async fn transactions_are_answered_by_their_version(db: PgPool) {
    use serde_json::json;
    use solana_message::{VersionedMessage, v0::Message as V0Message};
    use solana_transaction::versioned::VersionedTransaction;
    let (chain, payer, blockhash) = chain_with_payer(&db).await;
    let transfer = system_instruction::transfer(&payer.pubkey(), &Pubkey::new_unique(), 1_000_000);
    let message = V0Message::try_compile(&payer.pubkey(), std::slice::from_ref(&transfer), &[], blockhash.parse().unwrap()).unwrap();
    let v0 = VersionedTransaction::try_new(VersionedMessage::V0(message), &[&payer]).unwrap();
    let v0 = chain.send_and_confirm(&bincode::serialize(&v0).unwrap()).await.unwrap();
    let legacy = send(&chain, &[transfer], &payer, &[]).await.unwrap();

    let get = |signature: &str, config: serde_json::Value| {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "getTransaction", "params": [signature, config]});
        let chain = chain.clone();
        async move { chain.json_rpc(&request).await }
    };
    let answer = get(&v0, json!({"encoding": "json"})).await;
    assert_eq!(answer["error"]["code"], -32015, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("\"maxSupportedTransactionVersion\": 0"), "{answer}");
    let answer = get(&v0, json!({"encoding": "json", "maxSupportedTransactionVersion": 0})).await;
    assert_eq!(answer["result"]["version"], 0, "{answer}");
    assert_eq!(answer["result"]["transaction"]["message"]["addressTableLookups"], json!([]), "{answer}");
    let answer = get(&legacy, json!({"encoding": "json"})).await;
    assert!(answer["result"].get("version").is_none() && answer["result"]["slot"].is_u64(), "{answer}");
    assert!(answer["result"]["transaction"]["message"].get("addressTableLookups").is_none(), "{answer}");
    let answer = get(&legacy, json!({"encoding": "base64", "maxSupportedTransactionVersion": 0})).await;
    assert_eq!(answer["result"]["version"], "legacy", "{answer}");
}

/// The embedded chain persists static account keys only, so it refuses transactions that load
/// accounts through address lookup tables (whatever the table holds) instead of losing what
/// they write.
#[sqlx::test(migrations = "../migrations")]
async fn lookup_tables_are_refused(db: PgPool) {
    use solana_message::v0::{Message as V0Message, MessageAddressTableLookup};
    use solana_message::{MessageHeader, VersionedMessage, compiled_instruction::CompiledInstruction};
    use solana_transaction::versioned::VersionedTransaction;
    let (chain, payer, blockhash) = chain_with_payer(&db).await;
    let message = V0Message {
        header: MessageHeader { num_required_signatures: 1, num_readonly_signed_accounts: 0, num_readonly_unsigned_accounts: 1 },
        account_keys: vec![payer.pubkey(), anchor_lang::solana_program::system_program::ID],
        recent_blockhash: blockhash.parse().unwrap(),
        // A transfer to the first address of the table.
        instructions: vec![CompiledInstruction {
            program_id_index: 1,
            accounts: vec![0, 2],
            data: bincode::serialize(&system_instruction::SystemInstruction::Transfer { lamports: 1 }).unwrap(),
        }],
        address_table_lookups: vec![MessageAddressTableLookup { account_key: Pubkey::new_unique(), writable_indexes: vec![0], readonly_indexes: vec![] }],
    };
    let tx = VersionedTransaction::try_new(VersionedMessage::V0(message), &[&payer]).unwrap();
    let refused = chain.send_and_confirm(&bincode::serialize(&tx).unwrap()).await;
    match refused {
        Err(ChainError::Rpc { code: -32602, message, .. }) => assert!(message.contains("address lookup tables are not supported"), "{message}"),
        other => panic!("{other:?}"),
    }
}

/// `/rpc` answers with a mainnet node's limits, checked before any work.
#[sqlx::test(migrations = "../migrations")]
async fn json_rpc_has_a_nodes_limits(db: PgPool) {
    use localnet::{MAX_MULTIPLE_ACCOUNTS, MAX_PROGRAM_ACCOUNT_FILTERS, MAX_SIGNATURE_STATUSES, MAX_SIGNATURES_FOR_ADDRESS, PACKET_DATA_SIZE};
    use serde_json::json;
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let config = client::config_pda().to_string();
    let call = |method: &str, params: serde_json::Value| {
        let chain = chain.clone();
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        async move { chain.json_rpc(&request).await }
    };
    let keys = |n: usize| json!(vec![config.clone(); n]);
    let answer = call("getMultipleAccounts", json!([keys(MAX_MULTIPLE_ACCOUNTS), {"encoding": "base64"}])).await;
    assert_eq!(answer["result"]["value"].as_array().map(Vec::len), Some(MAX_MULTIPLE_ACCOUNTS), "{answer}");
    let answer = call("getMultipleAccounts", json!([keys(MAX_MULTIPLE_ACCOUNTS + 1), {"encoding": "base64"}])).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("Too many inputs provided; max 100"));
    assert!(answer.get("result").is_none());

    let signature = bs58::encode([1u8; 64]).into_string();
    let answer = call("getSignatureStatuses", json!([vec![signature.clone(); MAX_SIGNATURE_STATUSES + 1]])).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");

    // A page of signatures: 1 to 1,000 of an address, after and before signatures, checked as a
    // node checks them.
    let listing = |address: &str, config: serde_json::Value| call("getSignaturesForAddress", json!([address, config]));
    let answer = listing(&config, json!({"limit": MAX_SIGNATURES_FOR_ADDRESS})).await;
    assert!(answer["result"].is_array(), "{answer}");
    for limit in [0, MAX_SIGNATURES_FOR_ADDRESS + 1] {
        let answer = listing(&config, json!({ "limit": limit })).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert_eq!(answer["error"]["message"], "Invalid limit; max 1000", "{answer}");
    }
    let answer = listing("not-an-address", json!({})).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().starts_with("Invalid param: "), "{answer}");
    // A key is refused with the parse error's name, as a node names it: base58 that is no key,
    // or a key of the wrong length.
    for (key, named) in [("not-an-address", "Invalid param: Invalid"), ("1111", "Invalid param: WrongSize")] {
        let answer = call("getBalance", json!([key])).await;
        assert_eq!((answer["error"]["code"].as_i64(), answer["error"]["message"].as_str()), (Some(-32602), Some(named)), "{answer}");
    }
    let answer = listing(&config, json!({"before": signature, "until": "3xyz"})).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");

    // The ledger's reads take `confirmed` and `finalized` (the default), never `processed`.
    let below_confirmed = "Method does not support commitment below `confirmed`";
    for commitment in ["confirmed", "finalized"] {
        let answer = listing(&config, json!({ "commitment": commitment })).await;
        assert!(answer["result"].is_array(), "{answer}");
        let answer = call("getTransaction", json!([signature, { "commitment": commitment }])).await;
        assert!(answer.get("error").is_none() && answer["result"].is_null(), "{answer}");
    }
    let answer = listing(&config, json!({"commitment": "processed"})).await;
    assert_eq!((answer["error"]["code"].as_i64(), answer["error"]["message"].as_str()), (Some(-32602), Some(below_confirmed)), "{answer}");
    let answer = call("getTransaction", json!([signature, {"commitment": "processed"}])).await;
    assert_eq!((answer["error"]["code"].as_i64(), answer["error"]["message"].as_str()), (Some(-32602), Some(below_confirmed)), "{answer}");
    // A signature that does not parse is named before the commitment, as a node checks them.
    let answer = call("getTransaction", json!(["3xyz", {"commitment": "processed"}])).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().starts_with("Invalid param: "), "{answer}");

    // At most four filters a program scan; an impossible account size is an invalid request;
    // undecodable bytes are named as a node names them.
    let filters: Vec<serde_json::Value> = (0..MAX_PROGRAM_ACCOUNT_FILTERS + 1).map(|_| json!({"dataSize": 8})).collect();
    let answer = call("getProgramAccounts", json!([config, {"filters": filters}])).await;
    assert_eq!((answer["error"]["code"].as_i64(), answer["error"]["message"].as_str()), (Some(-32602), Some("Too many filters provided; max 4")), "{answer}");
    let answer = call("getMinimumBalanceForRentExemption", json!([10 * 1024 * 1024 + 1])).await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let answer = call("sendTransaction", json!(["***", {"encoding": "base64"}])).await;
    assert!(answer["error"]["message"].as_str().unwrap().starts_with("invalid base64 encoding: "), "{answer}");

    // An answer with a context names the RPC API's version, as a node's does.
    let answer = call("getBalance", json!([config])).await;
    assert!(answer["result"]["context"]["apiVersion"].is_string(), "{answer}");
    let answer = call("getProgramAccounts", json!([config, {"withContext": true}])).await;
    assert!(answer["result"]["context"]["apiVersion"].is_string(), "{answer}");

    use base64::Engine;
    let oversized = base64::engine::general_purpose::STANDARD.encode(vec![1u8; PACKET_DATA_SIZE + 1]);
    let answer = call("sendTransaction", json!([oversized, {"encoding": "base64"}])).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("too large: 1233 bytes (max: 1232 bytes)"), "{answer}");
    let huge = "A".repeat(100_000);
    let answer = call("sendTransaction", json!([huge, {"encoding": "base64"}])).await;
    assert!(answer["error"]["message"].as_str().unwrap().contains("too large: 100000 bytes"), "{answer}");
    let answer = call("sendTransaction", json!(["1".repeat(2_000)])).await;
    assert!(answer["error"]["message"].as_str().unwrap().contains("base58 encoded"), "{answer}");
}

/// `getSignaturesForAddress` lists each transaction's SPL Memo instructions (v1 and v3, top
/// level) as a node does: `[<bytes>] <text>`, joined by `"; "`, `(unparseable)` for data that is
/// not UTF-8 (kept by a transaction that failed for it), `null` for a transaction without one.
#[sqlx::test(migrations = "../migrations")]
async fn listed_signatures_carry_their_memos(db: PgPool) {
    use serde_json::json;
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let wallet = Keypair::new();
    chain.airdrop(&wallet.pubkey(), 10_000_000_000).await.unwrap();
    // v3 checks that the accounts it is given signed; v1 is given none.
    let memo = |program: &str, data: &[u8]| Instruction {
        program_id: program.parse().unwrap(),
        accounts: if program.starts_with("Memo1") {
            vec![]
        } else {
            vec![anchor_lang::solana_program::instruction::AccountMeta::new_readonly(wallet.pubkey(), true)]
        },
        data: data.to_vec(),
    };
    let v1 = "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo";
    let v3 = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
    let plain = send(&chain, &[system_instruction::transfer(&wallet.pubkey(), &Pubkey::new_unique(), 1_000_000)], &wallet, &[]).await.unwrap();
    let two = send(&chain, &[memo(v1, b"fm:first"), memo(v3, "zweite \u{fc}".as_bytes())], &wallet, &[]).await.unwrap();
    let invalid = wire(&chain, &[memo(v3, &[0xff, 0xfe, b'x'])], &wallet, &[]).await;
    let failed = match chain.send_skipping_preflight(&invalid).await {
        Err(ChainError::TransactionFailed { signature, err: TransactionError::InstructionError(0, _) }) => signature,
        other => panic!("the invalid memo lands and fails: {other:?}"),
    };

    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "getSignaturesForAddress", "params": [wallet.pubkey().to_string()]});
    let answer = chain.json_rpc(&request).await;
    let listed = answer["result"].as_array().unwrap_or_else(|| panic!("{answer}"));
    let memo_of = |signature: &str| listed.iter().find(|s| s["signature"] == signature).unwrap_or_else(|| panic!("{signature} in {answer}"))["memo"].clone();
    assert_eq!(memo_of(&plain), serde_json::Value::Null);
    assert_eq!(memo_of(&two), json!("[8] fm:first; [9] zweite \u{fc}"));
    assert_eq!(memo_of(&failed), json!("[3] (unparseable)"));
}

/// The process's resident memory, bytes (`VmRSS`).
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// One HTTP request's answer, a whole batch's, stays within `MAX_RESPONSE_BYTES`: 13 batched
/// `getMultipleAccounts` of 100 copies of the largest account the chain holds (Token-2022's
/// ProgramData, about 507 KB; some 880 MB of answer), a 64 KiB request body, are refused with
/// the scan error, and the process's memory hardly grows while they are; an account asked for
/// twice is listed twice; `dataSlice` is honoured.
#[sqlx::test(migrations = "../migrations")]
async fn an_answer_stays_within_its_byte_budget(db: PgPool) {
    use localnet::{MAX_RESPONSE_BYTES, RESPONSE_TOO_LARGE};
    use serde_json::{Value, json};
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let request = |id: usize, method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});

    // The loader's accounts with a zero-length dataSlice: their sizes, none of their data.
    let loader = anchor_lang::solana_program::bpf_loader_upgradeable::ID.to_string();
    let listing = chain.json_rpc(&request(1, "getProgramAccounts", json!([loader, {"encoding": "base64", "dataSlice": {"offset": 0, "length": 0}}]))).await;
    let listed = listing["result"].as_array().unwrap_or_else(|| panic!("{listing}"));
    assert!(listed.iter().all(|a| a["account"]["data"][0] == ""), "dataSlice honoured");
    let largest = listed.iter().max_by_key(|a| a["account"]["space"].as_u64().unwrap()).unwrap();
    let (largest, space) = (largest["pubkey"].as_str().unwrap().to_owned(), largest["account"]["space"].as_u64().unwrap() as usize);
    assert!(space > 400_000, "the largest account holds {space} bytes");

    let batch: Vec<Value> = (0..13).map(|id| request(id, "getMultipleAccounts", json!([vec![largest.clone(); 100], {"encoding": "base64"}]))).collect();
    let batch = Value::Array(batch);
    assert!(serde_json::to_vec(&batch).unwrap().len() < 64 * 1024, "fits /rpc's request body");
    let unbudgeted = 13 * 100 * space * 4 / 3;
    assert!(unbudgeted > 800_000_000, "{unbudgeted}");
    // The peak while the batch is answered, sampled from another thread.
    let before = resident_bytes();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = resident_bytes();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(resident_bytes());
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            peak.max(resident_bytes())
        })
    };
    let answer = chain.json_rpc(&batch).await;
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler.join().unwrap();
    let grown = peak.saturating_sub(before);
    println!("RSS before {before} B, peak while answering {peak} B (grew {grown} B); unbudgeted answer {unbudgeted} B");
    assert!(grown < 200 * 1024 * 1024, "grew {grown} bytes");
    let answers = answer.as_array().unwrap();
    assert_eq!(answers.len(), 13);
    for (id, answer) in answers.iter().enumerate() {
        assert_eq!((answer["id"].as_u64(), answer["error"]["code"].as_i64()), (Some(id as u64), Some(RESPONSE_TOO_LARGE)), "{}", answer["error"]);
        assert!(answer["error"]["message"].as_str().unwrap().contains(&MAX_RESPONSE_BYTES.to_string()), "{}", answer["error"]);
    }

    // Within the budget: listed once per key asked for, in the encoding and slice asked for.
    let answer =
        chain.json_rpc(&request(2, "getMultipleAccounts", json!([[largest, largest, Pubkey::new_unique().to_string()], {"encoding": "base64"}]))).await;
    let value = answer["result"]["value"].as_array().unwrap_or_else(|| panic!("{answer}"));
    assert_eq!(value.len(), 3);
    assert_eq!(value[0], value[1]);
    assert!(value[2].is_null());
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.decode(value[0]["data"][0].as_str().unwrap()).unwrap();
    assert_eq!(data.len(), space);
    let sliced = chain.json_rpc(&request(3, "getAccountInfo", json!([largest, {"encoding": "base64", "dataSlice": {"offset": 8, "length": 4}}]))).await;
    let slice = base64::engine::general_purpose::STANDARD.decode(sliced["result"]["value"]["data"][0].as_str().unwrap()).unwrap();
    assert_eq!(slice, data[8..12]);
    // Base58 of more than 128 bytes is refused, as a node refuses it, whether asked for or meant
    // by default.
    let answer = chain.json_rpc(&request(4, "getAccountInfo", json!([largest, {"encoding": "base58"}]))).await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let answer = chain.json_rpc(&request(4, "getAccountInfo", json!([largest]))).await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    // Without an encoding: base58 as a plain string for one account (the mint, 82 bytes),
    // base64 for several.
    let mint = chain.mint().to_string();
    let answer = chain.json_rpc(&request(5, "getAccountInfo", json!([mint]))).await;
    let plain = answer["result"]["value"]["data"].as_str().unwrap_or_else(|| panic!("{answer}"));
    assert_eq!(bs58::decode(plain).into_vec().unwrap().len(), spl_token_interface::state::Mint::LEN);
    let answer = chain.json_rpc(&request(6, "getMultipleAccounts", json!([[mint]]))).await;
    assert_eq!(answer["result"]["value"][0]["data"][1], "base64", "{answer}");
    // A batch is answered until the budget is spent: two whole copies of the account fit, and
    // the request that would pass it is refused while the ones before it are answered.
    let per_request = (MAX_RESPONSE_BYTES / 2) / (space * 4 / 3 + 1_000);
    let batch: Vec<Value> = (0..3).map(|id| request(id, "getMultipleAccounts", json!([vec![largest.clone(); per_request], {"encoding": "base64"}]))).collect();
    let answers = chain.json_rpc(&Value::Array(batch)).await;
    let codes: Vec<Option<i64>> = answers.as_array().unwrap().iter().map(|a| a["error"]["code"].as_i64()).collect();
    assert_eq!(codes, [None, None, Some(RESPONSE_TOO_LARGE)]);
}

/// `getSignaturesForAddress` is a range scan of an index, never a scan of the ledger.
#[sqlx::test(migrations = "../migrations")]
async fn signatures_for_an_address_are_read_through_an_index(db: PgPool) {
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let alice = trader(&chain, 10 * USDC).await;
    let program = funding_market::ID.to_string();
    let all = chain.signatures_for_address(&program, None, None, 1000).await.unwrap();
    assert!(all.len() >= 3);
    // Newest first; cursors are exclusive.
    let page = chain.signatures_for_address(&program, Some(&all[0].signature), None, 1).await.unwrap();
    assert_eq!(page[0].signature, all[1].signature);
    let page = chain.signatures_for_address(&program, None, Some(&all[2].signature), 1000).await.unwrap();
    assert_eq!(page.len(), 2);
    let user = chain.signatures_after(&client::user_pda(&alice.pubkey()).to_string(), None).await.unwrap();
    assert_eq!(user.len(), 2, "created, then its deposit swept");
    // From any cursor, what follows it, and after a listing of another address.
    let listed = chain.signatures_after(&program, None).await.unwrap();
    for (i, cursor) in listed.iter().enumerate() {
        assert_eq!(chain.signatures_after(&program, Some(&cursor.signature)).await.unwrap(), listed[i + 1..], "after {i}");
    }
    let after_user = chain.signatures_after(&program, Some(&user[0].signature)).await.unwrap();
    let from = listed.iter().position(|info| info.signature == user[0].signature).unwrap() + 1;
    assert_eq!(after_user, listed[from..]);

    let mut connection = db.acquire().await.unwrap();
    sqlx::query("SET enable_seqscan = off").execute(&mut *connection).await.unwrap();
    let plan: Vec<String> = sqlx::query_scalar(&format!("EXPLAIN {}", localnet::SIGNATURES_FOR_ADDRESS))
        .bind(&program)
        .bind(Some(&all[0].signature))
        .bind(None::<String>)
        .bind(10_i64)
        .fetch_all(&mut *connection)
        .await
        .unwrap();
    let plan = plan.join("\n");
    assert!(!plan.contains("Seq Scan"), "{plan}");
    assert!(plan.contains("embedded_ledger_account_groups_pkey"), "{plan}");
}

/// Group commit: transactions that land while an earlier one is being written go to Postgres
/// together, in one database transaction, and none is confirmed before its commit.
#[sqlx::test(migrations = "../migrations")]
async fn transactions_landing_during_a_write_are_committed_together(db: PgPool) {
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let alice = trader(&chain, 20 * USDC).await;
    let withdraw = |amount| client::withdraw(alice.pubkey(), alice.pubkey(), client::deposit_pda(&alice.pubkey()), amount);
    // The first write waits behind this lock; the others land in the bank meanwhile.
    let mut lock = db.begin().await.unwrap();
    sqlx::query("LOCK TABLE embedded_ledger IN EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    let (mut sends, mut wires) = (Vec::new(), Vec::new());
    for n in 1..=8 {
        let wire = wire(&chain, &[withdraw(n * 100_000)], &alice, &[]).await;
        wires.push(wire.clone());
        let chain = chain.clone();
        sends.push(tokio::spawn(async move { chain.send_and_confirm(&wire).await }));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(sends.iter().all(|s| !s.is_finished()), "nothing is confirmed before it is durable");
    assert_eq!(token_balance(&chain, &client::vault_pda(&alice.pubkey())).await, 20 * USDC - 3_600_000, "all eight ran in the bank");
    lock.rollback().await.unwrap();
    let mut signatures = Vec::new();
    for send in sends {
        signatures.push(send.await.unwrap().expect("confirmed once durable"));
    }
    // Rows written by one database transaction share its id: the first alone, then the seven.
    let (rows, commits): (i64, i64) = sqlx::query_as("SELECT count(*), count(DISTINCT xmin::TEXT) FROM embedded_ledger WHERE signature = ANY($1)")
        .bind(&signatures)
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!((rows, commits), (8, 2));
    // In landing order, and a chain rebuilt from Postgres agrees with the bank.
    let order: Vec<String> =
        sqlx::query_scalar("SELECT signature FROM embedded_ledger WHERE signature = ANY($1) ORDER BY seq").bind(&signatures).fetch_all(&db).await.unwrap();
    assert_eq!(order, signatures);
    // Each row of the group is its own transaction's: keys, signers, header and wire as sent,
    // its own logs; and each account is indexed under every one of them.
    for (signature, wire) in signatures.iter().zip(&wires) {
        let sent: Transaction = bincode::deserialize(wire).unwrap();
        type Row = (Vec<String>, Vec<String>, Vec<i16>, Vec<u8>, Vec<String>, i64);
        let (keys, signers, header, stored, logs, indexed): Row = sqlx::query_as(
            "SELECT account_keys, signers, header, wire, log_messages,
                    (SELECT count(*) FROM embedded_ledger_account_groups g WHERE l.seq = ANY(g.seqs))
             FROM embedded_ledger l WHERE signature = $1",
        )
        .bind(signature)
        .fetch_one(&db)
        .await
        .unwrap();
        assert_eq!(keys, sent.message.account_keys.iter().map(|k| k.to_string()).collect::<Vec<_>>());
        assert_eq!(signers, vec![alice.pubkey().to_string()]);
        let h = sent.message.header;
        assert_eq!(header, vec![h.num_required_signatures as i16, h.num_readonly_signed_accounts as i16, h.num_readonly_unsigned_accounts as i16]);
        assert_eq!(&stored, wire);
        assert!(logs.len() >= 2 && logs.iter().all(|l| l.starts_with("Program ")), "{logs:?}");
        assert_eq!(indexed, keys.len() as i64);
    }
    // A key the group's transactions share is written once for the group: the vault's rows
    // are the first transaction's alone, then one holding the seven.
    let vault = client::vault_pda(&alice.pubkey()).to_string();
    let sizes: Vec<i32> = sqlx::query_scalar(
        "SELECT cardinality(g.seqs) FROM embedded_ledger_account_groups g
         WHERE g.address = $1 AND g.seqs && (SELECT array_agg(seq) FROM embedded_ledger WHERE signature = ANY($2))
         ORDER BY g.first_seq",
    )
    .bind(&vault)
    .bind(&signatures)
    .fetch_all(&db)
    .await
    .unwrap();
    assert_eq!(sizes, [1, 7]);
    // Over the whole ledger (no foreign key checks it): every sequence in a by-account row is
    // a transaction naming that address, every key of every transaction is in a row, each
    // row's sequences ascend from its `first_seq`, and an address's rows hold disjoint,
    // ascending ranges (what the listings' walks along the primary key rely on).
    let (orphans, missing, unordered, overlapping): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM embedded_ledger_account_groups g, unnest(g.seqs) AS s(seq)
                 WHERE NOT EXISTS (SELECT 1 FROM embedded_ledger l WHERE l.seq = s.seq AND g.address = ANY(l.account_keys))),
                (SELECT count(*) FROM embedded_ledger l, unnest(l.account_keys) AS key
                 WHERE NOT EXISTS (SELECT 1 FROM embedded_ledger_account_groups g WHERE g.address = key AND l.seq = ANY(g.seqs))),
                (SELECT count(*) FROM embedded_ledger_account_groups g
                 WHERE g.seqs[1] <> g.first_seq OR g.seqs <> ARRAY(SELECT DISTINCT s FROM unnest(g.seqs) AS s ORDER BY s)),
                (SELECT count(*) FROM (SELECT g.seqs[cardinality(g.seqs)] AS last_seq,
                                              lead(g.first_seq) OVER (PARTITION BY g.address ORDER BY g.first_seq) AS next_first
                                       FROM embedded_ledger_account_groups g) r
                 WHERE r.last_seq >= r.next_first)",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!((orphans, missing, unordered, overlapping), (0, 0, 0, 0));
    // A group's rows are listed from memory as the index holds them.
    assert_listings_are_the_index(&chain, &vault).await;
    assert_listings_are_the_index(&chain, &funding_market::ID.to_string()).await;
    drop(chain);
    let reopened = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    assert_eq!(token_balance(&reopened, &client::vault_pda(&alice.pubkey())).await, 20 * USDC - 3_600_000);
    // And from Postgres (the reopened chain holds no rows in memory), from every cursor,
    // within the group and either side of it.
    assert_listings_are_the_index(&reopened, &vault).await;
    assert_listings_are_the_index(&reopened, &funding_market::ID.to_string()).await;
    assert_pages_are_the_listing(&reopened, &vault).await;
}

/// A blockhash read while slots end on another thread is valid up to its `lastValidBlockHeight`
/// and not one block more: every reading sees a slot whole, never a bank half-way through
/// ticking to its end (whose newest hash would be counted from the height before).
#[sqlx::test(migrations = "../migrations")]
async fn a_blockhash_expires_the_block_after_its_last_valid_height(db: PgPool) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    let chain = EmbeddedChain::open(db, &GenesisParams::default()).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let ended = Arc::new(AtomicU64::new(0));
    let clock = {
        let (chain, stop, ended) = (chain.clone(), stop.clone(), ended.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                while !stop.load(Ordering::Relaxed) {
                    chain.root_now().await;
                    ended.fetch_add(1, Ordering::Relaxed);
                }
            });
        })
    };
    let mut readings = Vec::new();
    while ended.load(Ordering::Relaxed) < 300 {
        let reading = chain.latest_blockhash().await.unwrap();
        if readings.last() != Some(&reading) {
            readings.push(reading);
        }
        tokio::task::yield_now().await;
    }
    stop.store(true, Ordering::Relaxed);
    // Joined off this runtime, not on it: the chain's own tasks (its slot clock) run here and
    // take the bank's turn that `root_now` takes, so a runtime blocked in the join could hand
    // the turn to a task it never runs while the clock thread waits for it.
    tokio::task::spawn_blocking(move || clock.join()).await.unwrap().unwrap();
    assert!(readings.len() >= 30, "{} readings", readings.len());

    let last = readings.iter().map(|(_, last_valid)| *last_valid).max().unwrap();
    loop {
        let height = chain.block_height();
        for (hash, last_valid) in &readings {
            assert_eq!(chain.is_blockhash_valid(hash).await.unwrap(), height <= *last_valid, "{hash} (last valid {last_valid}) at height {height}");
        }
        if height > last {
            break;
        }
        chain.root_now().await;
    }
}

/// The program's code for a chain opened here: its SBF binary when SBF_OUT_DIR names the
/// directory holding `funding_market.so` (as `scripts/test.sh` sets it after
/// `scripts/build-sbf.sh`), else native. solana-program-test reads the same variable.
fn program_code() -> ProgramCode {
    match std::env::var_os("SBF_OUT_DIR") {
        Some(dir) => ProgramCode::Sbf(std::fs::read(std::path::Path::new(&dir).join("funding_market.so")).expect("SBF_OUT_DIR holds funding_market.so").into()),
        None => ProgramCode::Native,
    }
}

/// A custodial buy simulated on the embedded chain logs exactly what solana-program-test's own
/// bank logs for the same transaction over the same accounts, with the same compute units:
/// the chain runs the program as a validator's runtime does. With the SBF binary the logs are a
/// validator's line for line (the program's `msg!` lines, the token transfer at depth 2, the
/// event's self-invocation, the units); natively the runtime writes only its own lines.
#[sqlx::test(migrations = "../migrations")]
async fn a_buy_logs_what_solana_program_test_logs_for_it(db: PgPool) {
    use solana_program_test::{ProgramTest, processor};

    let code = program_code();
    let sbf = matches!(code, ProgramCode::Sbf(_));
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams { program: code, ..GenesisParams::default() }).await.unwrap();
    let keys = chain.keys();
    let (authority, operator) = (keys.authority.insecure_clone(), keys.operator.insecure_clone());
    let bob = trader(&chain, 50 * USDC).await;
    let now = chain.clock().await.unwrap().unix_timestamp;
    let id = *Uuid::new_v4().as_bytes();
    let params = CreateMarketParams {
        market_id: id,
        series: [7; 32],
        open_ts: now - 60,
        close_ts: now + 3240,
        settlement_ts: now + 3540,
        b: 100 * USDC,
        prior_ppm: 550_000,
    };
    send(&chain, &[client::create_market(authority.pubkey(), operator.pubkey(), chain.mint(), params)], &operator, &[&authority]).await.unwrap();

    let buy = client::buy_shares(operator.pubkey(), bob.pubkey(), &id, Side::No, 20 * USDC, 0);
    let tx = Transaction::new_signed_with_payer(
        std::slice::from_ref(&buy),
        Some(&operator.pubkey()),
        &[&operator],
        chain.latest_blockhash().await.unwrap().0.parse().unwrap(),
    );
    let on_chain = chain.simulate(tx.into(), true, false, true, None).unwrap();
    assert!(on_chain.err.is_none(), "{on_chain:?}");

    // The same accounts in solana-program-test's bank, the same program, the same clock.
    fn process(program_id: &Pubkey, accounts: &[anchor_lang::prelude::AccountInfo], data: &[u8]) -> anchor_lang::solana_program::entrypoint::ProgramResult {
        let accounts = Box::leak(accounts.to_vec().into_boxed_slice());
        funding_market::entry(Box::leak(Box::new(*program_id)), accounts, Box::leak(data.to_vec().into_boxed_slice()))
    }
    let mut test = ProgramTest::new("funding_market", funding_market::ID, processor!(process));
    for meta in &buy.accounts {
        let Some(account) = chain.account(&meta.pubkey.to_string()).await.unwrap() else { continue };
        if account.executable {
            continue;
        }
        let owner = account.owner.parse().unwrap();
        test.add_account(
            meta.pubkey,
            solana_account::Account { lamports: account.lamports, data: account.data, owner, executable: false, rent_epoch: u64::MAX },
        );
    }
    let context = test.start_with_context().await;
    let mut clock: anchor_lang::prelude::Clock = context.banks_client.get_sysvar().await.unwrap();
    clock.unix_timestamp = now;
    context.set_sysvar(&clock);
    let tx = Transaction::new_signed_with_payer(&[buy], Some(&operator.pubkey()), &[&operator], context.last_blockhash);
    let reference = context.banks_client.simulate_transaction(tx).await.unwrap();
    assert_eq!(reference.result, Some(Ok(())));
    let reference = reference.simulation_details.unwrap();

    // Natively both banks log each invocation more than once (solana-program-test's stubs and
    // builtin entry); the chain folds the copies (`validator_logs`), as it is held to here.
    let logs = if sbf { reference.logs } else { validator_logs(reference.logs, &funding_market::ID) };
    assert_eq!(on_chain.logs.as_deref().unwrap(), logs, "the logs, line by line");
    assert_eq!(on_chain.units_consumed, Some(reference.units_consumed));
    let program = funding_market::ID.to_string();
    let token = spl_token_interface::ID.to_string();
    assert_eq!(logs.first(), Some(&format!("Program {program} invoke [1]")));
    assert_eq!(logs.last(), Some(&format!("Program {program} success")));
    assert!(logs.contains(&format!("Program {token} invoke [2]")), "the transfer is a CPI: {logs:#?}");
    assert!(logs.contains(&format!("Program {program} invoke [2]")), "the event's self-invocation: {logs:#?}");
    if sbf {
        assert_eq!(logs[1], "Program log: Instruction: BuyShares", "{logs:#?}");
        assert!(logs.iter().any(|l| l.starts_with(&format!("Program {program} consumed ")) && l.ends_with(" compute units")), "{logs:#?}");
        assert!(reference.units_consumed > 10_000, "{}", reference.units_consumed);
        assert!(logs.iter().any(|l| l.starts_with("Program data: ")), "the trade's event, logged: {logs:#?}");
    }
    let depth = logs.iter().try_fold(0i32, |depth, line| {
        let depth = if line.contains(" invoke [") {
            depth + 1
        } else if line.ends_with(" success") || line.contains(" failed: ") {
            depth - 1
        } else {
            depth
        };
        (depth >= 0).then_some(depth)
    });
    assert_eq!(depth, Some(0), "every invoke is closed by its success: {logs:#?}");
    // One line for each of the four invocations (the program; the position's creation, the
    // transfer and the event at depth 2), at its real depth, and one closing it.
    let invokes: Vec<&String> = logs.iter().filter(|l| l.contains(" invoke [")).collect();
    let system = "11111111111111111111111111111111";
    let expected = [
        format!("Program {program} invoke [1]"),
        format!("Program {system} invoke [2]"),
        format!("Program {token} invoke [2]"),
        format!("Program {program} invoke [2]"),
    ];
    assert_eq!(invokes, expected.iter().collect::<Vec<_>>(), "{logs:#?}");
    assert_eq!(logs.iter().filter(|l| l.ends_with(" success")).count(), 4, "{logs:#?}");
}
