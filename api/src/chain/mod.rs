//! The transactions the service sends itself, as the program's operator, authority and oracle:
//! user accounts, market creation, custodial trades, ending a market and paying it out (the
//! settlement crank), and (embedded chain only) the test-USDC faucet.
//! Each confirmed transaction is projected at once (`Projector::apply_ahead`), so balances and
//! positions are current when the request returns; the indexer's later pass over the same
//! transaction is a no-op.
//!
//! Program errors come back from the chain's preflight as custom codes; `errors` types them
//! once, and `Refusal` names the ones a caller can cause — everything else is a fault of ours.

mod any;
pub mod cosign;
pub mod errors;
pub mod money;

pub use any::AnyChain;

use std::sync::Arc;

use anchor_lang::prelude::Pubkey;
use anchor_lang::solana_program::instruction::Instruction;
use chain_client::{ChainError, ChainSource, ConfirmedTransaction};
use funding_market::client;
use funding_market::events::TradeExecuted;
use funding_market::instructions::CreateMarketParams;
use funding_market::state::{Config as ProgramConfig, Market as ProgramMarket, MarketStatus as ProgramMarketStatus, Position, Side as ProgramSide};
use futures_util::StreamExt;
use indexer::events::{self, ProgramEvent};
use indexer::projection::{Projector, StatementPart};
use localnet::EmbeddedChain;
use solana_keypair::Keypair;
use solana_signer::Signer;
use solana_transaction::Transaction;
use sqlx::PgPool;
use sqlx::error::BoxDynError;
use sqlx::postgres::PgArguments;
use uuid::Uuid;

pub use errors::Refusal;

use crate::domain::market::Side;
use crate::domain::quote::TradeTerms;
use crate::store::markets::MarketPlan;

/// SOL the faucet keeps a wallet topped up to (lamports).
pub const FAUCET_SOL: u64 = 1_000_000_000;

/// SPL Memo (v3): carries the id that keeps each service transaction unique.
pub const MEMO_PROGRAM: Pubkey = anchor_lang::pubkey!("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");

/// The largest transaction a cluster accepts (bytes on the wire: `PACKET_DATA_SIZE`).
const MAX_TRANSACTION_BYTES: u64 = 1232;

/// `getMultipleAccounts` takes at most this many addresses.
const MAX_ACCOUNTS_PER_CALL: usize = 100;

/// The oracle's verdict transactions sent at once (each finalizes several markets).
const FINALIZATIONS_IN_FLIGHT: usize = 8;

/// The keys the service signs with.
pub struct ServiceKeys {
    pub operator: Keypair,
    pub authority: Keypair,
    /// Resolves and voids markets; without it this service does not end markets on chain.
    pub oracle: Option<Keypair>,
    pub usdc_mint: Pubkey,
}

impl ServiceKeys {
    /// Reads solana-keygen keypair files (a JSON array of 64 bytes) and the mint's address.
    pub fn load(operator: &std::path::Path, authority: &std::path::Path, oracle: Option<&std::path::Path>, usdc_mint: &str) -> Result<ServiceKeys, String> {
        let read = |path: &std::path::Path| read_keypair(path).map_err(|e| format!("{}: {e}", path.display()));
        let usdc_mint = usdc_mint.parse().map_err(|_| format!("FM_USDC_MINT {usdc_mint:?} is not an address"))?;
        Ok(ServiceKeys { operator: read(operator)?, authority: read(authority)?, oracle: oracle.map(read).transpose()?, usdc_mint })
    }
}

/// Reads a solana-keygen keypair file (a JSON array of the 64 bytes).
pub fn read_keypair(path: &std::path::Path) -> Result<Keypair, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let bytes: Vec<u8> = serde_json::from_str(&text).map_err(|e| format!("not a keypair file: {e}"))?;
    Keypair::try_from(bytes.as_slice()).map_err(|e| e.to_string())
}

impl From<Side> for ProgramSide {
    fn from(side: Side) -> ProgramSide {
        match side {
            Side::Yes => ProgramSide::Yes,
            Side::No => ProgramSide::No,
        }
    }
}

impl From<ProgramSide> for Side {
    fn from(side: ProgramSide) -> Side {
        match side {
            ProgramSide::Yes => Side::Yes,
            ProgramSide::No => Side::No,
        }
    }
}

#[derive(Clone)]
pub struct OnChain(Arc<Inner>);

struct Inner {
    chain: AnyChain,
    keys: ServiceKeys,
    /// The program's config (fee, minimums), read at start: the program cannot change it.
    config: ProgramConfig,
    projector: Projector,
    db: PgPool,
}

#[derive(Debug, thiserror::Error)]
pub enum OnChainError {
    #[error("refused: {0:?}")]
    Refused(Refusal),
    #[error("faucet: only the embedded chain can mint test USDC")]
    NoFaucet,
    #[error("no oracle key: this service cannot end markets on chain")]
    NoOracle,
    #[error(transparent)]
    BadDestination(#[from] money::BadDestination),
    #[error(transparent)]
    Chain(#[from] ChainError),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error("{0}")]
    Unexpected(String),
}

/// The program's `create_market` parameters for a planned market.
pub fn create_params(plan: &MarketPlan) -> CreateMarketParams {
    let mut series = [0u8; 32];
    let slug = plan.slug.as_bytes();
    series[..slug.len().min(32)].copy_from_slice(&slug[..slug.len().min(32)]);
    CreateMarketParams {
        market_id: *plan.id.as_bytes(),
        series,
        open_ts: plan.open_ts.timestamp(),
        close_ts: plan.close_ts.timestamp(),
        settlement_ts: plan.settlement_ts.timestamp(),
        b: plan.liquidity_b as u64,
        // The OU estimate may be 0 or 1 exactly; markets open within [0.02, 0.98].
        prior_ppm: (plan.ou_prior_ppm.max(0) as u32).clamp(lmsr::PRIOR_MIN_PPM, lmsr::PRIOR_MAX_PPM),
    }
}

/// How the oracle ends a market.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finalization {
    /// The consensus rate, 1e-12 units: YES wins iff it is positive.
    Resolve { actual_rate: i64 },
    /// No consensus (or no such settlement any more): every position is refunded.
    Void,
}

/// Where a finalized market's payouts stand after a crank step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crank {
    /// Every position paid and the market closed (the rest back in the treasury).
    Closed,
    /// Positions still open on chain that the caller did not name (not yet indexed).
    Waiting { settled: usize, open: u32 },
}

/// `instructions` followed by the memo that makes the transaction unique (see `OnChain::sign`).
/// Every id has the same length, so any id gives the size the transaction will have.
fn with_memo(instructions: &[Instruction], id: Uuid) -> Vec<Instruction> {
    let memo = Instruction { program_id: MEMO_PROGRAM, accounts: vec![], data: format!("fm:{}", id.simple()).into_bytes() };
    instructions.iter().cloned().chain([memo]).collect()
}

/// A transaction signed by the service, ready to send.
pub struct Signed {
    pub wire: Vec<u8>,
    pub signature: String,
}

/// A trade of a confirmed transaction: its `TradeExecuted` event and the id its projection
/// gives it (`events::trade_id`, derived from where the event sits).
pub struct LandedTrade {
    pub id: Uuid,
    pub event: TradeExecuted,
}

/// The program's trades in a confirmed transaction (its `TradeExecuted` events), in order.
pub fn trades_in(confirmed: &ConfirmedTransaction) -> impl Iterator<Item = LandedTrade> + '_ {
    events::located(confirmed, PROGRAM_ID.as_str()).filter_map(|located| match located.event {
        ProgramEvent::TradeExecuted(event) => Some(LandedTrade { id: events::trade_id(&confirmed.signature, located.ix_index, located.event_index), event }),
        _ => None,
    })
}

/// The program's id as text (how chain sources name programs).
static PROGRAM_ID: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| funding_market::ID.to_string());

fn trade_of(confirmed: &ConfirmedTransaction) -> Result<LandedTrade, OnChainError> {
    trades_in(confirmed).next().ok_or_else(|| OnChainError::Unexpected(format!("trade {} emitted no TradeExecuted", confirmed.signature)))
}

/// The refusal a chain failure amounts to, or the failure itself.
pub fn refused(e: ChainError) -> OnChainError {
    match e.transaction_error().and_then(errors::refusal) {
        Some(refusal) => OnChainError::Refused(refusal),
        None => OnChainError::Chain(e),
    }
}

impl OnChain {
    /// Reads the program's config from `chain`; the keys must be its operator and authority.
    pub async fn connect(chain: AnyChain, keys: ServiceKeys, db: PgPool) -> Result<OnChain, OnChainError> {
        let account = chain
            .account(&client::config_pda().to_string())
            .await?
            .ok_or_else(|| OnChainError::Unexpected("the program has no config on this chain".into()))?;
        let config: ProgramConfig = client::decode(&account.data).map_err(|e| OnChainError::Unexpected(format!("config: {e}")))?;
        if config.operator != keys.operator.pubkey() || config.authority != keys.authority.pubkey() || config.usdc_mint != keys.usdc_mint {
            return Err(OnChainError::Unexpected("the configured keys or mint are not the program config's".into()));
        }
        if keys.oracle.as_ref().is_some_and(|o| o.pubkey() != config.oracle) {
            return Err(OnChainError::Unexpected("the configured oracle key is not the program config's".into()));
        }
        let projector = Projector::new(db.clone(), &funding_market::ID);
        Ok(OnChain(Arc::new(Inner { chain, keys, config, projector, db })))
    }

    /// On the embedded chain, with its own keys.
    pub async fn embedded(chain: &EmbeddedChain, db: PgPool) -> Result<OnChain, OnChainError> {
        let keys = chain.keys();
        let service = ServiceKeys {
            operator: keys.operator.insecure_clone(),
            authority: keys.authority.insecure_clone(),
            oracle: Some(keys.oracle.insecure_clone()),
            usdc_mint: chain.mint(),
        };
        let onchain = OnChain::connect(AnyChain::Embedded(chain.clone()), service, db).await?;
        // Its trades projected in their ledger write, where they can be: one commit and one
        // turn a trade waits on instead of two.
        chain.apply_in_ledger(Arc::new(InLedger(onchain.projector().clone())));
        Ok(onchain)
    }

    /// The terms every trade on this chain runs on (the program config's fee and minimums):
    /// quotes use exactly these.
    pub fn terms(&self) -> TradeTerms {
        let c = &self.0.config;
        TradeTerms { fee_bps: c.fee_bps, min_trade: c.min_trade, min_deposit: c.min_deposit }
    }

    pub fn chain(&self) -> &AnyChain {
        &self.0.chain
    }

    /// The projector the service's own transactions are applied ahead with.
    pub fn projector(&self) -> &Projector {
        &self.0.projector
    }

    pub fn usdc_mint(&self) -> Pubkey {
        self.0.keys.usdc_mint
    }

    /// Signs `instructions` with the operator as fee payer (and `extra` signers) on a recent
    /// blockhash. The signature is known before anything is sent. A memo with a fresh id makes
    /// every transaction distinct: two identical trades in one blockhash's lifetime would
    /// otherwise be one transaction, and the second refused as already processed.
    pub async fn sign(&self, instructions: &[Instruction], extra: &[&Keypair]) -> Result<Signed, OnChainError> {
        let blockhash = self.recent_blockhash().await?;
        self.sign_with(instructions, extra, blockhash)
    }

    /// The cluster's latest blockhash, for signing several transactions on one.
    async fn recent_blockhash(&self) -> Result<solana_hash::Hash, OnChainError> {
        let (blockhash, _) = self.0.chain.latest_blockhash().await?;
        blockhash.parse().map_err(|_| OnChainError::Unexpected(format!("blockhash {blockhash}")))
    }

    /// `sign` on a blockhash already in hand.
    fn sign_with(&self, instructions: &[Instruction], extra: &[&Keypair], blockhash: solana_hash::Hash) -> Result<Signed, OnChainError> {
        let mut signers = vec![&self.0.keys.operator];
        signers.extend_from_slice(extra);
        let instructions = with_memo(instructions, Uuid::new_v4());
        let tx = Transaction::new_signed_with_payer(&instructions, Some(&self.0.keys.operator.pubkey()), &signers, blockhash);
        let wire = bincode::serialize(&tx).map_err(|e| OnChainError::Unexpected(e.to_string()))?;
        Ok(Signed { wire, signature: tx.signatures[0].to_string() })
    }

    /// Sends a signed transaction, waits for confirmation, and projects it at once.
    pub async fn submit(&self, signed: &Signed) -> Result<ConfirmedTransaction, OnChainError> {
        // The indexer of this process leaves it to this call (see `Projector::sending`).
        let _sending = self.0.projector.sending(&signed.signature);
        let confirmed = self.0.chain.send_and_confirm_transaction(&signed.wire).await.map_err(refused)?;
        self.0.projector.apply_ahead(&confirmed).await?;
        Ok(confirmed)
    }

    /// A transaction that landed, projected (a no-op if it already was); `None` if the chain
    /// does not have it.
    pub async fn landed(&self, signature: &str) -> Result<Option<ConfirmedTransaction>, OnChainError> {
        let Some(confirmed) = ChainSource::transaction(&self.0.chain, signature).await? else { return Ok(None) };
        if confirmed.err.is_none() {
            self.0.projector.apply_ahead(&confirmed).await?;
        }
        Ok(Some(confirmed))
    }

    async fn execute(&self, instructions: &[Instruction], extra: &[&Keypair]) -> Result<ConfirmedTransaction, OnChainError> {
        let signed = self.sign(instructions, extra).await?;
        self.submit(&signed).await
    }

    /// Whether the wallet's user accounts exist on chain.
    pub async fn user_exists(&self, wallet: &Pubkey) -> Result<bool, OnChainError> {
        self.exists(&client::user_pda(wallet)).await
    }

    /// Whether an account exists.
    async fn exists(&self, address: &Pubkey) -> Result<bool, OnChainError> {
        Ok(self.0.chain.account(&address.to_string()).await?.is_some())
    }

    /// The wallet's user, deposit and vault accounts, created (paid by the operator) if missing.
    pub async fn ensure_user(&self, wallet: &Pubkey) -> Result<(), OnChainError> {
        if self.exists(&client::user_pda(wallet)).await? {
            return Ok(());
        }
        let ix = client::create_user(self.0.keys.operator.pubkey(), *wallet, self.0.keys.usdc_mint);
        match self.execute(&[ix], &[]).await {
            Err(OnChainError::Refused(Refusal::AlreadyExists)) => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// The `create_market` a wallet pays for and the authority co-signs.
    pub fn create_market_instruction(&self, plan: &MarketPlan, payer: &Pubkey) -> Instruction {
        client::create_market(self.0.keys.authority.pubkey(), *payer, self.0.keys.usdc_mint, create_params(plan))
    }

    pub fn authority(&self) -> Pubkey {
        self.0.keys.authority.pubkey()
    }

    /// Adds the authority's signature to a transaction it must sign (checked by the caller).
    pub fn authority_sign(&self, tx: &mut solana_transaction::versioned::VersionedTransaction) -> Result<(), OnChainError> {
        let authority = self.0.keys.authority.pubkey();
        let keys = tx.message.static_account_keys();
        let signers = tx.message.header().num_required_signatures as usize;
        let index = keys[..signers.min(keys.len())]
            .iter()
            .position(|k| *k == authority)
            .ok_or_else(|| OnChainError::Unexpected("the authority is not a signer".into()))?;
        let signature = self.0.keys.authority.sign_message(&tx.message.serialize());
        tx.signatures[index] = signature;
        Ok(())
    }

    /// The market's program account, created (authority-signed, operator-paid) if missing.
    pub async fn ensure_market(&self, plan: &MarketPlan) -> Result<Pubkey, OnChainError> {
        let address = client::market_pda(plan.id.as_bytes());
        if self.exists(&address).await? {
            return Ok(address);
        }
        let ix = client::create_market(self.0.keys.authority.pubkey(), self.0.keys.operator.pubkey(), self.0.keys.usdc_mint, create_params(plan));
        match self.execute(&[ix], &[&self.0.keys.authority]).await {
            Err(OnChainError::Refused(Refusal::AlreadyExists)) => Ok(address),
            other => other.map(|_| address),
        }
    }

    /// A custodial buy, signed by the operator for `wallet`, not yet sent.
    pub async fn sign_buy(&self, market_id: Uuid, wallet: &Pubkey, side: Side, usdc_amount: u64, min_shares: u64) -> Result<Signed, OnChainError> {
        let ix = client::buy_shares(self.0.keys.operator.pubkey(), *wallet, market_id.as_bytes(), side.into(), usdc_amount, min_shares);
        self.sign(&[ix], &[]).await
    }

    /// A custodial sell, signed by the operator for `wallet`, not yet sent.
    pub async fn sign_sell(&self, market_id: Uuid, wallet: &Pubkey, side: Side, shares: u64, min_usdc_out: u64) -> Result<Signed, OnChainError> {
        let ix = client::sell_shares(self.0.keys.operator.pubkey(), *wallet, market_id.as_bytes(), side.into(), shares, min_usdc_out);
        self.sign(&[ix], &[]).await
    }

    /// Sends a signed trade; the trade as the program executed it (projected).
    pub async fn submit_trade(&self, signed: &Signed) -> Result<LandedTrade, OnChainError> {
        trade_of(&self.submit(signed).await?)
    }

    /// The trade of a transaction sent earlier, if it landed (crash recovery).
    pub async fn landed_trade(&self, signature: &str) -> Result<Option<LandedTrade>, OnChainError> {
        match self.landed(signature).await? {
            Some(confirmed) if confirmed.err.is_none() => trade_of(&confirmed).map(Some),
            _ => Ok(None),
        }
    }

    pub fn db(&self) -> &PgPool {
        &self.0.db
    }

    /// The market's program account, if it exists (it is closed once paid out).
    pub async fn market_account(&self, market_id: Uuid) -> Result<Option<ProgramMarket>, OnChainError> {
        let Some(account) = self.0.chain.account(&client::market_pda(market_id.as_bytes()).to_string()).await? else { return Ok(None) };
        client::decode(&account.data).map(Some).map_err(|e| OnChainError::Unexpected(format!("market account: {e}")))
    }

    /// Resolves or voids the market, signed by the oracle; whether the market has a program
    /// account (`false`: nothing was sent, the round never reached the chain). Idempotent: a
    /// market already finalized (by an earlier attempt, or another replica) is left as it is.
    pub async fn finalize_market(&self, market_id: Uuid, how: Finalization) -> Result<bool, OnChainError> {
        let (_, finalized) = self.finalize_markets(&[(market_id, how)]).await?.pop().expect("one result per market");
        finalized
    }

    /// `finalize_market` for many markets, several to a transaction (as many as fit): for each,
    /// whether it has a program account, or why it could not be finalized. A transaction that
    /// fails is retried one market at a time, so one market's trouble is its own.
    pub async fn finalize_markets(&self, markets: &[(Uuid, Finalization)]) -> Result<Vec<(Uuid, Result<bool, OnChainError>)>, OnChainError> {
        let mut results = Vec::with_capacity(markets.len());
        let mut open = Vec::new();
        for chunk in markets.chunks(MAX_ACCOUNTS_PER_CALL) {
            let addresses: Vec<String> = chunk.iter().map(|(id, _)| client::market_pda(id.as_bytes()).to_string()).collect();
            let accounts = self.0.chain.accounts(&addresses.iter().map(String::as_str).collect::<Vec<_>>()).await?;
            for (&(id, how), account) in chunk.iter().zip(accounts) {
                let Some(account) = account else {
                    results.push((id, Ok(false)));
                    continue;
                };
                let market: ProgramMarket = client::decode(&account.data).map_err(|e| OnChainError::Unexpected(format!("market account: {e}")))?;
                match market.status {
                    ProgramMarketStatus::Open => open.push((id, how)),
                    _ => results.push((id, Ok(true))),
                }
            }
        }
        if open.is_empty() {
            return Ok(results);
        }
        let oracle = self.0.keys.oracle.as_ref().ok_or(OnChainError::NoOracle)?;
        let instruction = |id: Uuid, how: Finalization| match how {
            Finalization::Resolve { actual_rate } => client::resolve_market(oracle.pubkey(), id.as_bytes(), actual_rate),
            Finalization::Void => client::void_market(oracle.pubkey(), id.as_bytes()),
        };
        // `MarketClosed` (already finalized): another finalizer got there first.
        let finalized = |sent: Result<ConfirmedTransaction, OnChainError>| match sent {
            Ok(_) | Err(OnChainError::Refused(Refusal::MarketClosed)) => Ok(true),
            Err(e) => Err(e),
        };
        let mut ids = open.iter().map(|(id, _)| *id);
        let batches: Vec<(Vec<Uuid>, Vec<Instruction>)> = self
            .batches(open.iter().map(|&(id, how)| instruction(id, how)).collect())?
            .into_iter()
            .map(|batch| (ids.by_ref().take(batch.len()).collect(), batch))
            .collect();
        // Several transactions in flight (independent markets): they share the chain's commits
        // instead of each waiting for its own.
        let sent: Vec<Vec<(Uuid, Result<bool, OnChainError>)>> = futures_util::stream::iter(batches)
            .map(|(batch_ids, batch)| async move {
                match self.execute(&batch, &[oracle]).await {
                    Ok(_) => batch_ids.into_iter().map(|id| (id, Ok(true))).collect(),
                    Err(e) if batch.len() == 1 => vec![(batch_ids[0], finalized(Err(e)))],
                    Err(_) => {
                        let mut one_by_one = Vec::with_capacity(batch.len());
                        for (id, ix) in batch_ids.into_iter().zip(batch) {
                            one_by_one.push((id, finalized(self.execute(&[ix], &[oracle]).await)));
                        }
                        one_by_one
                    }
                }
            })
            .buffer_unordered(FINALIZATIONS_IN_FLIGHT)
            .collect()
            .await;
        results.extend(sent.into_iter().flatten());
        Ok(results)
    }

    /// One step of the settlement crank for a finalized market: pays out the positions of
    /// `wallets` still open on chain (read from the chain, so a position already paid is never
    /// paid again), as many per transaction as fit, then closes the market once none is open.
    /// Safe to repeat and to interrupt anywhere.
    pub async fn crank(&self, market_id: Uuid, wallets: &[Pubkey]) -> Result<Crank, OnChainError> {
        let Some(market) = self.market_account(market_id).await? else { return Ok(Crank::Closed) };
        if market.status == ProgramMarketStatus::Open {
            return Err(OnChainError::Unexpected(format!("market {market_id} is not finalized")));
        }
        let address = client::market_pda(market_id.as_bytes());
        // (wallet, rent payer) of each position still open on chain.
        let mut open: Vec<(Pubkey, Pubkey)> = Vec::new();
        for chunk in wallets.chunks(MAX_ACCOUNTS_PER_CALL) {
            let addresses: Vec<String> = chunk.iter().map(|w| client::position_pda(&address, w).to_string()).collect();
            let accounts = self.0.chain.accounts(&addresses.iter().map(String::as_str).collect::<Vec<_>>()).await?;
            for (wallet, account) in chunk.iter().zip(accounts) {
                let Some(account) = account else { continue };
                let position: Position = client::decode(&account.data).map_err(|e| OnChainError::Unexpected(format!("position account: {e}")))?;
                open.push((*wallet, position.rent_payer));
            }
        }
        let settled = open.len();
        let close = client::close_market(self.0.keys.authority.pubkey(), market_id.as_bytes());
        let runs = self.payout_runs(market_id, &open)?;
        let mut batches: Vec<Vec<Instruction>> = runs.iter().map(|run| payout_instructions(market_id, run, None)).collect();
        // Every position open on chain is in hand: `close_market` rides in the last payout
        // transaction when it fits (it checks on chain that none is left open).
        let close_rides = settled == market.open_positions as usize
            && match (runs.last(), batches.last_mut()) {
                (Some(run), Some(last)) => {
                    let with_close = payout_instructions(market_id, run, Some(&close));
                    let fits = self.fits(&with_close)?;
                    if fits {
                        *last = with_close;
                    }
                    fits
                }
                _ => false,
            };
        let count = batches.len();
        for (i, batch) in batches.iter().enumerate() {
            let signers: &[&Keypair] = if close_rides && i + 1 == count { &[&self.0.keys.authority] } else { &[] };
            self.execute(batch, signers).await?;
        }
        let open = match self.market_account(market_id).await? {
            None => return Ok(Crank::Closed),
            Some(m) => m.open_positions,
        };
        if open > 0 {
            return Ok(Crank::Waiting { settled, open });
        }
        match self.execute(&[close], &[&self.0.keys.authority]).await {
            Ok(_) => Ok(Crank::Closed),
            // Closed meanwhile by another crank: the account is gone.
            Err(e) if self.market_account(market_id).await?.is_none() => {
                tracing::debug!(%market_id, error = %e, "market closed by another crank");
                Ok(Crank::Closed)
            }
            Err(e) => Err(e),
        }
    }

    /// Whether `instructions` fit one transaction (with the operator as payer, the memo `sign`
    /// adds, and every signer they need).
    fn fits(&self, instructions: &[Instruction]) -> Result<bool, OnChainError> {
        let tx = Transaction::new_with_payer(&with_memo(instructions, Uuid::nil()), Some(&self.0.keys.operator.pubkey()));
        let size = bincode::serialized_size(&tx).map_err(|e| OnChainError::Unexpected(e.to_string()))?;
        Ok(size <= MAX_TRANSACTION_BYTES)
    }

    /// `positions` (wallet, rent payer) cut, in order, into runs that each fit one payout
    /// transaction (`payout_instructions`): as many as its size allows.
    fn payout_runs<'p>(&self, market_id: Uuid, positions: &'p [(Pubkey, Pubkey)]) -> Result<Vec<&'p [(Pubkey, Pubkey)]>, OnChainError> {
        let mut runs = Vec::new();
        let mut rest = positions;
        while !rest.is_empty() {
            if !self.fits(&payout_instructions(market_id, &rest[..1], None))? {
                return Err(OnChainError::Unexpected("one payout exceeds a transaction".into()));
            }
            let mut len = 1;
            while len < rest.len() && self.fits(&payout_instructions(market_id, &rest[..=len], None))? {
                len += 1;
            }
            let (run, later) = rest.split_at(len);
            runs.push(run);
            rest = later;
        }
        Ok(runs)
    }

    /// Instructions grouped into as few transactions as the size limit allows (each with the
    /// operator as payer and the memo `sign` adds), in order.
    fn batches(&self, instructions: Vec<Instruction>) -> Result<Vec<Vec<Instruction>>, OnChainError> {
        let fits = |batch: &[Instruction]| self.fits(batch);
        let mut batches: Vec<Vec<Instruction>> = Vec::new();
        let mut current: Vec<Instruction> = Vec::new();
        for ix in instructions {
            current.push(ix);
            if !fits(&current)? {
                let last = current.pop().expect("just pushed");
                if current.is_empty() {
                    return Err(OnChainError::Unexpected("one instruction exceeds a transaction".into()));
                }
                batches.push(std::mem::take(&mut current));
                current.push(last);
            }
        }
        if !current.is_empty() {
            batches.push(current);
        }
        Ok(batches)
    }
}

/// One payout transaction's instructions: `positions` (wallet, rent payer) of one market paid by
/// one `settle_positions`, then `close`. No compute-unit limit is asked for: the runtime's
/// default (200,000 units for each instruction but a compute-budget one) is above what the most
/// positions that fit 1,232 bytes take (`client::settle_positions_units`, measured on the SBF
/// binary: twelve take at most 154,000), and the limit instruction's 40 bytes would cost a
/// position.
fn payout_instructions(market_id: Uuid, positions: &[(Pubkey, Pubkey)], close: Option<&Instruction>) -> Vec<Instruction> {
    let mut instructions = vec![client::settle_positions(market_id.as_bytes(), positions)];
    instructions.extend(close.cloned());
    instructions
}

/// The projection's seat in the embedded chain's ledger write: the trades this process's
/// projector is sending are applied in the statement that writes their ledger rows
/// (`localnet::LedgerHook`). The chain never names the projection; this is where the two meet.
struct InLedger(Projector);

impl localnet::LedgerHook for InLedger {
    fn wants(&self, signature: &str) -> bool {
        self.0.is_sending(signature)
    }

    fn part(&self, txs: &[&ConfirmedTransaction], arguments: &mut PgArguments) -> Result<Option<localnet::LedgerPart>, BoxDynError> {
        let part = self.0.in_ledger(txs, arguments)?;
        Ok(part.map(|StatementPart { ctes, applied }| localnet::LedgerPart { ctes, applied }))
    }

    fn applied(&self, txs: &[&ConfirmedTransaction]) {
        self.0.applied_in_ledger(txs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::domain::market::MarketStatus;
    use chrono::Utc;

    fn plan(prior: i32) -> MarketPlan {
        let now = Utc::now();
        MarketPlan {
            id: Uuid::nil(),
            slug: "binance-btcusdt".into(),
            open_ts: now,
            close_ts: now,
            settlement_ts: now,
            liquidity_b: 100_000_000,
            ou_prior_ppm: prior,
            status: MarketStatus::Open,
            onchain_address: None,
        }
    }

    #[test]
    fn the_opening_prior_is_what_the_program_accepts() {
        for (estimate, opened) in [(0, 20_000), (745, 20_000), (500_000, 500_000), (999_999, 980_000), (1_000_000, 980_000)] {
            assert_eq!(create_params(&plan(estimate)).prior_ppm, opened, "{estimate}");
            assert!(lmsr::Lmsr::opening(100_000_000, create_params(&plan(estimate)).prior_ppm).is_ok());
        }
        assert_eq!(&create_params(&plan(1)).series[..15], b"binance-btcusdt");
    }
}
