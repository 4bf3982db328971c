//! What the embedded chain answers as a node beyond sending and reading single accounts: block
//! height and epoch, fees and rent, scans of a program's and an owner's accounts, simulation,
//! airdrops. Read straight from the bank, as a validator's RPC service does; `json_rpc` turns
//! these into the wire answers.

use std::collections::{HashMap, HashSet};

use anchor_lang::prelude::Pubkey;
use solana_account::{AccountSharedData, ReadableAccount};
use solana_account_decoder_client_types::UiAccountEncoding;
use solana_accounts_db::accounts_index::ScanConfig;
use solana_message::{SanitizedMessage, SanitizedVersionedMessage, SimpleAddressLoader, VersionedMessage};
use solana_rpc_client_api::config::{RpcAccountInfoConfig, RpcSimulateTransactionAccountsConfig};
use solana_rpc_client_api::filter::RpcFilterType;
use solana_rpc_client_api::response::{RpcBlockhash, RpcSimulateTransactionResult};
use solana_svm::transaction_balances::SvmTokenInfo;
use solana_transaction::TransactionVerificationMode;
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction_status::parse_ui_inner_instructions;
use solana_transaction_status_client_types::{UiLoadedAddresses, UiTransactionReturnData, UiTransactionTokenBalance};
use spl_token_2022_interface::extension::StateWithExtensions;
use spl_token_2022_interface::generic_token_account::GenericTokenAccount;
use spl_token_2022_interface::state::{Account as TokenAccount, Mint};

use crate::balances::TokenBalance;
use crate::landing::inner_groups;
use crate::{EmbeddedChain, encoded_account};
use chain_client::ChainError;

/// The most SOL one `requestAirdrop` gives (lamports): enough for any test, and a bound on what
/// one request can ask of the genesis account.
pub const MAX_AIRDROP_LAMPORTS: u64 = 1_000 * 1_000_000_000;

/// A landed transaction as PubSub notifies it: what it was, where it landed, what it logged and
/// which accounts it named.
#[derive(Clone, Debug)]
pub struct LedgerEntry {
    /// The ledger's sequence number (what `EmbeddedChain::subscribe` announces).
    pub seq: i64,
    pub signature: String,
    pub slot: u64,
    pub err: Option<solana_transaction_error::TransactionError>,
    /// Empty for transactions landed before logs were kept.
    pub logs: Vec<String>,
    pub account_keys: Vec<Pubkey>,
}

/// The epoch position of a slot, as `getEpochInfo` answers it.
pub struct EpochPosition {
    pub epoch: u64,
    pub slot_index: u64,
    pub slots_in_epoch: u64,
    pub absolute_slot: u64,
    pub block_height: u64,
    pub transaction_count: u64,
}

impl EmbeddedChain {
    /// The working bank's block height, the height `getLatestBlockhash`'s
    /// `lastValidBlockHeight` is counted in.
    pub fn block_height(&self) -> u64 {
        self.0.runtime.read(|bank| bank.block_height())
    }

    pub async fn epoch_position(&self) -> Result<EpochPosition, ChainError> {
        let bank = self.0.runtime.bank();
        let slot = self.clock().await?.slot;
        let (epoch, slot_index) = bank.get_epoch_and_slot_index(slot);
        Ok(EpochPosition {
            epoch,
            slot_index,
            slots_in_epoch: bank.get_slots_in_epoch(epoch),
            absolute_slot: slot,
            block_height: bank.block_height(),
            transaction_count: bank.transaction_count(),
        })
    }

    /// Stands for the cluster's identity: derived from the chain's mint, which is made once and
    /// kept with the chain, so it is the same across restarts of one database and differs
    /// between databases (as two clusters' genesis hashes do).
    pub fn genesis_hash(&self) -> String {
        use sha2::Digest;
        let digest = sha2::Sha256::new().chain_update(b"funding-market embedded chain").chain_update(self.mint().as_ref()).finalize();
        bs58::encode(digest).into_string()
    }

    pub fn rent_exempt_minimum(&self, data_len: usize) -> u64 {
        self.0.runtime.bank().get_minimum_balance_for_rent_exemption(data_len)
    }

    /// What `message` would cost (`None` when its blockhash is unknown or expired).
    pub fn fee_for_message(&self, message: VersionedMessage) -> Result<Option<u64>, ChainError> {
        let bank = self.0.runtime.bank();
        let invalid = |e: String| ChainError::invalid_params(format!("invalid message: {e}"));
        let sanitized = SanitizedVersionedMessage::try_from(message).map_err(|e| invalid(e.to_string()))?;
        let message = SanitizedMessage::try_new(sanitized, SimpleAddressLoader::Disabled, &HashSet::new()).map_err(|e| invalid(e.to_string()))?;
        Ok(bank.get_fee_for_message(&message))
    }

    /// Every account `program` owns that `keep` accepts, in address order. `keep` sees each of
    /// `program`'s accounts as the scan reads it, before it is copied into the result, so what
    /// it refuses (a filter's misses, accounts past a limit) costs no copy.
    pub fn program_accounts(&self, program: &Pubkey, keep: impl Fn(&AccountSharedData) -> bool) -> Result<Vec<(Pubkey, AccountSharedData)>, ChainError> {
        let bank = self.0.runtime.bank();
        let mut accounts =
            bank.get_filtered_program_accounts(program, keep, &ScanConfig::default()).map_err(|e| ChainError::Transport(format!("account scan: {e}")))?;
        accounts.sort_unstable_by_key(|(address, _)| *address);
        Ok(accounts)
    }

    /// A mint's decimals (`None`: no SPL Token or Token-2022 mint there).
    pub fn mint_decimals(&self, mint: &Pubkey) -> Option<u8> {
        mint_decimals_of(&self.bank_account(mint)?)
    }

    /// The transactions landed after ledger sequence `after`, oldest first, at most `limit`.
    pub async fn ledger_after(&self, after: i64, limit: i64) -> Result<Vec<LedgerEntry>, ChainError> {
        type Row = (i64, String, i64, Option<serde_json::Value>, Option<Vec<String>>, Vec<String>);
        let rows: Vec<Row> =
            sqlx::query_as("SELECT seq, signature, slot, err, log_messages, account_keys FROM embedded_ledger WHERE seq > $1 ORDER BY seq LIMIT $2")
                .bind(after)
                .bind(limit)
                .fetch_all(&self.0.db)
                .await
                .map_err(crate::db_error)?;
        rows.into_iter()
            .map(|(seq, signature, slot, err, logs, account_keys)| {
                let err = crate::reads::stored_error(&signature, err)?;
                let account_keys = account_keys
                    .iter()
                    .map(|k| k.parse().map_err(|_| ChainError::Format(format!("ledger row of {signature}: account key {k}"))))
                    .collect::<Result<_, _>>()?;
                Ok(LedgerEntry { seq, signature, slot: slot as u64, err, logs: logs.unwrap_or_default(), account_keys })
            })
            .collect()
    }

    /// An account as the bank holds it (for the encodings `json_rpc` offers).
    pub fn bank_account(&self, address: &Pubkey) -> Option<AccountSharedData> {
        self.0.runtime.bank().get_account(address)
    }

    /// Runs `tx` against the current state without committing it, as `simulateTransaction`
    /// does: signatures checked only if `sig_verify`, the blockhash replaced by the latest if
    /// `replace_blockhash` (then the answer says which), inner instructions if asked, and the
    /// `accounts` asked for as the run left them (the bank's where it did not write them; none
    /// if it failed), at most as many as the transaction names, in base64 or parsed.
    pub fn simulate(
        &self,
        mut tx: VersionedTransaction,
        sig_verify: bool,
        replace_blockhash: bool,
        inner: bool,
        accounts: Option<&RpcSimulateTransactionAccountsConfig>,
    ) -> Result<RpcSimulateTransactionResult, ChainError> {
        if sig_verify && replace_blockhash {
            return Err(ChainError::invalid_params("sigVerify may not be used with replaceRecentBlockhash"));
        }
        let encoding = accounts.map(|config| config.encoding.unwrap_or(UiAccountEncoding::Base64));
        if matches!(encoding, Some(UiAccountEncoding::Binary | UiAccountEncoding::Base58)) {
            return Err(ChainError::invalid_params("base58 encoding not supported"));
        }
        let named = tx.message.static_account_keys().len();
        let addresses = match accounts {
            Some(config) if config.addresses.len() > named => {
                return Err(ChainError::invalid_params(format!("Too many accounts provided; max {named}")));
            }
            Some(config) => config
                .addresses
                .iter()
                .map(|a| a.parse::<Pubkey>().map_err(|e| ChainError::invalid_params(format!("Invalid param: {e:?}"))))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        let bank = self.0.runtime.bank();
        let replacement = if replace_blockhash {
            let (hash, last_valid_block_height) = self.0.runtime.read(|bank| {
                let hash = bank.last_blockhash();
                (hash, bank.get_blockhash_last_valid_block_height(&hash).unwrap_or_default())
            });
            tx.message.set_recent_blockhash(hash);
            Some(RpcBlockhash { blockhash: hash.to_string(), last_valid_block_height })
        } else {
            None
        };
        let mode = if sig_verify { TransactionVerificationMode::FullVerification } else { TransactionVerificationMode::HashOnly };
        let sanitized = bank.verify_transaction(tx, mode).map_err(|e| ChainError::invalid_params(format!("invalid transaction: {e}")))?;
        let simulated = bank.simulate_transaction_unchecked(&sanitized, inner);
        // Parsed as a node parses them here (System, SPL Token, Memo, ... instructions decoded;
        // any other program's partially: its id, its accounts' addresses, its data in base58).
        let account_keys = sanitized.message().account_keys();
        let inner_instructions = simulated
            .inner_instructions
            .filter(|_| inner)
            .map(|groups| inner_groups(groups).into_iter().map(|group| parse_ui_inner_instructions(group, &account_keys)).collect());
        let accounts = encoding.map(|encoding| {
            let config = RpcAccountInfoConfig { encoding: Some(encoding), ..Default::default() };
            let written: HashMap<Pubkey, AccountSharedData> = simulated.post_simulation_accounts.into_iter().collect();
            addresses
                .iter()
                .map(|address| {
                    let account = written.get(address).cloned().or_else(|| bank.get_account(address));
                    account.filter(|_| simulated.result.is_ok()).map(|account| encoded_account(self, address, &account, &config))
                })
                .collect()
        });
        Ok(RpcSimulateTransactionResult {
            err: simulated.result.err().map(Into::into),
            logs: Some(self.0.runtime.logs(simulated.logs)),
            accounts,
            units_consumed: Some(simulated.units_consumed),
            loaded_accounts_data_size: Some(simulated.loaded_accounts_data_size),
            return_data: simulated.return_data.map(UiTransactionReturnData::from),
            inner_instructions,
            replacement_blockhash: replacement,
            fee: simulated.fee,
            pre_balances: simulated.pre_balances,
            post_balances: simulated.post_balances,
            pre_token_balances: simulated.pre_token_balances.map(|tokens| node_token_balances(&tokens)),
            post_token_balances: simulated.post_token_balances.map(|tokens| node_token_balances(&tokens)),
            // No lookup tables here (the chain refuses them), so none loaded, listed as a node
            // lists them.
            loaded_addresses: Some(UiLoadedAddresses::from(&sanitized.get_loaded_addresses())),
        })
    }
}

/// Token balances the bank recorded, as a node reports them.
fn node_token_balances(tokens: &[SvmTokenInfo]) -> Vec<UiTransactionTokenBalance> {
    tokens.iter().map(|info| TokenBalance::from(info).to_node().into()).collect()
}

/// An account's decimals if it is a mint, SPL Token's or Token-2022's.
pub fn mint_decimals_of(account: &AccountSharedData) -> Option<u8> {
    is_token_program(account.owner()).then(|| StateWithExtensions::<Mint>::unpack(account.data()).ok().map(|m| m.base.decimals)).flatten()
}

/// An account's token state if it is a token account, SPL Token's or Token-2022's.
pub fn token_account_of(account: &AccountSharedData) -> Option<TokenAccount> {
    is_token_program(account.owner()).then(|| StateWithExtensions::<TokenAccount>::unpack(account.data()).ok().map(|a| a.base)).flatten()
}

/// SPL Token or Token-2022: the programs whose accounts a node reads as token accounts.
pub fn is_token_program(program: &Pubkey) -> bool {
    *program == spl_token_interface::ID || *program == spl_token_2022_interface::ID
}

/// One `getProgramAccounts` filter: `dataSize`, `memcmp`, or `tokenAccountState` (an
/// initialized token account, SPL Token's layout or Token-2022's with extensions).
pub fn passes(filter: &RpcFilterType, account: &AccountSharedData) -> bool {
    match filter {
        RpcFilterType::DataSize(size) => account.data().len() as u64 == *size,
        RpcFilterType::Memcmp(compare) => compare.bytes_match(account.data()),
        RpcFilterType::TokenAccountState => TokenAccount::valid_account_data(account.data()),
    }
}
