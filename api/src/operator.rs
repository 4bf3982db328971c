//! What an operator does to a deployed program over JSON-RPC, for the `funding-admin` command
//! (`src/bin/funding-admin.rs`): make keypairs, initialize the program's config, fund the
//! treasury, read the config back, and end a market by hand with the oracle key. Each action is
//! one transaction, built here and signed with solana-keygen keypair files, sent and confirmed
//! like the service's own (`chain_client::RpcChain`).

use std::path::Path;
use std::time::Duration;

use anchor_lang::prelude::Pubkey;
use anchor_lang::solana_program::program_pack::Pack;
use chain_client::{ChainError, RpcChain};
use funding_market::client;
use funding_market::instructions::initialize::InitializeParams;
use funding_market::state::{Config, Market, MarketStatus};
use solana_keypair::Keypair;
use solana_signer::Signer;
use solana_transaction::Transaction;
use uuid::Uuid;

use crate::chain::money::associated_token_account;
use crate::domain::money::micros;
use crate::domain::rate::{FundingRate, rate_exact};

/// How long a transaction may take to confirm before the command gives up (it may still land:
/// `show-config` or the explorer tells).
pub const CONFIRM_TIMEOUT: Duration = Duration::from_secs(90);

#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    #[error("{0}")]
    Input(String),
    #[error("{path}: {message}")]
    KeyFile { path: String, message: String },
    #[error("the program's config does not exist yet on this cluster (run `funding-admin init`)")]
    NoConfig,
    #[error("the program's config already exists on this cluster (`funding-admin show-config`)")]
    AlreadyInitialized,
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Chain(#[from] ChainError),
}

/// Writes a new keypair to `path` in solana-keygen's format (a JSON array of the 64 bytes),
/// readable by its owner only; refuses to replace a file (or a symbolic link) unless `force`.
pub fn generate_keypair(path: &Path, force: bool) -> Result<Pubkey, OperatorError> {
    let key_error = |e: std::io::Error| OperatorError::KeyFile { path: path.display().to_string(), message: e.to_string() };
    // `symlink_metadata`, not `exists`: a dangling link is a file that is there.
    if path.symlink_metadata().is_ok() && !force {
        return Err(OperatorError::KeyFile { path: path.display().to_string(), message: "exists (give --force to replace it)".into() });
    }
    let keypair = Keypair::new();
    let json = serde_json::to_string(&keypair.to_bytes().to_vec()).expect("bytes serialize");
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(key_error)?;
    }
    write_private(path, json.as_bytes()).map_err(key_error)?;
    Ok(keypair.pubkey())
}

/// Writes `bytes` to a new file beside `path`, created with mode 0600 and `O_EXCL` (which never
/// follows a link), then renames it over `path`. The rename replaces whatever `path` was — a file
/// with wider permissions, or a symbolic link, whose target is left untouched — and a reader
/// sees the old key or the new one, never a part.
#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let name = path.file_name().ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"))?;
    let temporary = path.with_file_name(format!(".{}.{}.tmp", name.to_string_lossy(), Uuid::new_v4().simple()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};

    use super::*;

    fn scratch() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("fm-keygen-{}", Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_forced_keygen_replaces_a_world_readable_file_with_an_owner_only_one() {
        let dir = scratch();
        let path = dir.join("key.json");
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(generate_keypair(&path, false), Err(OperatorError::KeyFile { .. })));
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        let pubkey = generate_keypair(&path, true).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(read_keypair(&path).unwrap().pubkey(), pubkey);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary file is left");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn keygen_never_writes_through_a_symbolic_link() {
        let dir = scratch();
        let target = dir.join("target.txt");
        std::fs::write(&target, b"not yours").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        let link = dir.join("key.json");
        symlink(&target, &link).unwrap();
        assert!(matches!(generate_keypair(&link, false), Err(OperatorError::KeyFile { .. })), "a link is a file that exists");
        let dangling = dir.join("dangling.json");
        symlink(dir.join("nowhere.txt"), &dangling).unwrap();
        assert!(matches!(generate_keypair(&dangling, false), Err(OperatorError::KeyFile { .. })), "so is a dangling one");
        assert!(!dir.join("nowhere.txt").exists());

        generate_keypair(&link, true).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"not yours", "the link's target is untouched");
        assert_eq!(std::fs::metadata(&target).unwrap().mode() & 0o777, 0o644);
        let replaced = std::fs::symlink_metadata(&link).unwrap();
        assert!(replaced.file_type().is_file(), "the link itself was replaced by the key file");
        assert_eq!(replaced.mode() & 0o777, 0o600);
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// Reads a solana-keygen keypair file (as the service reads its keys).
pub fn read_keypair(path: &Path) -> Result<Keypair, OperatorError> {
    crate::chain::read_keypair(path).map_err(|message| OperatorError::KeyFile { path: path.display().to_string(), message })
}

pub fn parse_pubkey(what: &str, value: &str) -> Result<Pubkey, OperatorError> {
    value.parse().map_err(|_| OperatorError::Input(format!("{what} {value:?} is not a Solana address")))
}

/// The config's parameters, as `init` takes them.
pub struct ConfigParams {
    pub authority: Pubkey,
    pub operator: Pubkey,
    pub oracle: Pubkey,
    pub usdc_mint: Pubkey,
    /// Basis points, at most 10,000.
    pub fee_bps: u16,
    /// Micro-USDC.
    pub min_deposit: u64,
    /// Micro-USDC.
    pub min_trade: u64,
}

/// The config as read from the cluster, with the treasury's balance.
#[derive(Debug, serde::Serialize)]
pub struct ConfigView {
    pub program_id: String,
    pub config: String,
    pub authority: String,
    pub operator: String,
    pub oracle: String,
    pub usdc_mint: String,
    pub treasury: String,
    /// USDC, six decimals.
    pub treasury_balance: String,
    pub fee_bps: u16,
    /// USDC, six decimals.
    pub min_deposit: String,
    /// USDC, six decimals.
    pub min_trade: String,
}

/// Signs `instructions` (fees paid by `payer`), sends them and waits for confirmation; the
/// signature.
pub async fn send(
    rpc: &RpcChain,
    payer: &Keypair,
    signers: &[&Keypair],
    instructions: &[anchor_lang::solana_program::instruction::Instruction],
) -> Result<String, OperatorError> {
    let (blockhash, _) = rpc.latest_blockhash().await?;
    let blockhash = blockhash.parse().map_err(|_| OperatorError::Refused(format!("the node answered a blockhash {blockhash:?}")))?;
    let mut all: Vec<&Keypair> = vec![payer];
    all.extend(signers.iter().copied().filter(|s| s.pubkey() != payer.pubkey()));
    let tx = Transaction::new_signed_with_payer(instructions, Some(&payer.pubkey()), &all, blockhash);
    let wire = bincode::serialize(&tx).expect("a transaction serializes");
    Ok(rpc.send_and_confirm(&wire, CONFIRM_TIMEOUT).await?)
}

async fn config_account(rpc: &RpcChain) -> Result<Option<Config>, OperatorError> {
    let Some(account) = rpc.account(&client::config_pda().to_string()).await? else { return Ok(None) };
    client::decode::<Config>(&account.data).map(Some).map_err(|e| OperatorError::Refused(format!("the config account does not decode: {e}")))
}

/// Creates the program's config and its treasury. Signed by the program's upgrade authority
/// (whoever deployed it: only it may initialize) and paid by `payer`.
pub async fn initialize(rpc: &RpcChain, payer: &Keypair, upgrade_authority: &Keypair, params: &ConfigParams) -> Result<String, OperatorError> {
    if params.fee_bps > 10_000 {
        return Err(OperatorError::Input(format!("fee_bps must be at most 10000, got {}", params.fee_bps)));
    }
    if config_account(rpc).await?.is_some() {
        return Err(OperatorError::AlreadyInitialized);
    }
    let program_params = InitializeParams {
        authority: params.authority,
        operator: params.operator,
        oracle: params.oracle,
        fee_bps: params.fee_bps,
        min_deposit: params.min_deposit,
        min_trade: params.min_trade,
    };
    let ix = client::initialize(payer.pubkey(), upgrade_authority.pubkey(), params.usdc_mint, program_params);
    send(rpc, payer, &[upgrade_authority], &[ix]).await
}

/// Moves `amount` micro-USDC from `owner`'s token account (`source`, or its associated token
/// account for the config's mint) into the treasury, which funds market subsidies.
pub async fn fund_treasury(rpc: &RpcChain, payer: &Keypair, owner: &Keypair, source: Option<Pubkey>, amount: u64) -> Result<String, OperatorError> {
    let config = config_account(rpc).await?.ok_or(OperatorError::NoConfig)?;
    let source = source.unwrap_or_else(|| associated_token_account(&owner.pubkey(), &config.usdc_mint));
    let ix = spl_token_interface::instruction::transfer_checked(
        &spl_token_interface::ID,
        &source,
        &config.usdc_mint,
        &config.treasury,
        &owner.pubkey(),
        &[],
        amount,
        6,
    )
    .map_err(|e| OperatorError::Input(e.to_string()))?;
    send(rpc, payer, &[owner], &[ix]).await
}

/// The config and the treasury's balance.
pub async fn show_config(rpc: &RpcChain) -> Result<ConfigView, OperatorError> {
    let config = config_account(rpc).await?.ok_or(OperatorError::NoConfig)?;
    let treasury = rpc.account(&config.treasury.to_string()).await?;
    let balance = treasury.and_then(|a| spl_token_interface::state::Account::unpack(&a.data).ok()).map_or(0, |t| t.amount);
    Ok(ConfigView {
        program_id: funding_market::ID.to_string(),
        config: client::config_pda().to_string(),
        authority: config.authority.to_string(),
        operator: config.operator.to_string(),
        oracle: config.oracle.to_string(),
        usdc_mint: config.usdc_mint.to_string(),
        treasury: config.treasury.to_string(),
        treasury_balance: micros(balance as i64),
        fee_bps: config.fee_bps,
        min_deposit: micros(config.min_deposit as i64),
        min_trade: micros(config.min_trade as i64),
    })
}

/// How an operator ends a market by hand.
#[derive(Clone, Copy, Debug)]
pub enum Ending {
    /// The settled rate: YES wins iff it is positive.
    Resolve(FundingRate),
    /// Every position refunded at cost.
    Void,
}

/// Resolves or voids market `market_id` with the oracle key (the oracle pays the fee). The
/// program refuses a market that is not open or whose settlement time has not come.
pub async fn end_market(rpc: &RpcChain, oracle: &Keypair, market_id: Uuid, ending: Ending) -> Result<String, OperatorError> {
    let config = config_account(rpc).await?.ok_or(OperatorError::NoConfig)?;
    if config.oracle != oracle.pubkey() {
        return Err(OperatorError::Input(format!("the key given is {}, but the config's oracle is {}", oracle.pubkey(), config.oracle)));
    }
    let id = *market_id.as_bytes();
    let account = rpc
        .account(&client::market_pda(&id).to_string())
        .await?
        .ok_or_else(|| OperatorError::Input(format!("market {market_id} has no account on this cluster")))?;
    let market: Market = client::decode(&account.data).map_err(|e| OperatorError::Refused(format!("the market account does not decode: {e}")))?;
    if market.status != MarketStatus::Open {
        return Err(OperatorError::Input(format!("market {market_id} is already {:?}", market.status)));
    }
    let ix = match ending {
        Ending::Resolve(rate) => client::resolve_market(oracle.pubkey(), &id, rate.0),
        Ending::Void => client::void_market(oracle.pubkey(), &id),
    };
    send(rpc, oracle, &[], &[ix]).await
}

/// A rate as the command shows it back.
pub fn describe(ending: Ending) -> String {
    match ending {
        Ending::Resolve(rate) => format!("resolved at {} ({})", rate_exact(rate), if rate.is_positive() { "YES" } else { "NO" }),
        Ending::Void => "voided".into(),
    }
}
