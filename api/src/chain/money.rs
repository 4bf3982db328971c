//! Money in and out on chain: reading deposit addresses, sweeping them into vaults
//! (`sweep_deposit`, permissionless), and withdrawals (`withdraw`, signed by the operator for
//! the wallet) to a USDC token account — a wallet's associated token account created in the
//! same transaction when it does not exist yet.

use anchor_lang::prelude::Pubkey;
use anchor_lang::solana_program::instruction::{AccountMeta, Instruction};
use anchor_lang::solana_program::program_pack::Pack;
use chain_client::ChainError;
use funding_market::client;

use super::AnyChain;
use indexer::events::{self, ProgramEvent};
use solana_signer::Signer;
use spl_token_interface::state::{Account as TokenAccount, AccountState};

use super::{MAX_ACCOUNTS_PER_CALL, OnChain, OnChainError, Refusal, Signed};

/// The SPL Associated Token Account program.
pub const ASSOCIATED_TOKEN_PROGRAM: Pubkey = anchor_lang::pubkey!("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL");
const SYSTEM_PROGRAM: Pubkey = anchor_lang::pubkey!("11111111111111111111111111111111");

/// A wallet's associated token account for `mint` (classic SPL Token).
pub fn associated_token_account(wallet: &Pubkey, mint: &Pubkey) -> Pubkey {
    Pubkey::find_program_address(&[wallet.as_ref(), spl_token_interface::ID.as_ref(), mint.as_ref()], &ASSOCIATED_TOKEN_PROGRAM).0
}

/// `CreateIdempotent`: creates the account if missing, does nothing if it exists.
pub fn create_associated_token_account(payer: &Pubkey, wallet: &Pubkey, mint: &Pubkey) -> Instruction {
    Instruction {
        program_id: ASSOCIATED_TOKEN_PROGRAM,
        accounts: vec![
            AccountMeta::new(*payer, true),
            AccountMeta::new(associated_token_account(wallet, mint), false),
            AccountMeta::new_readonly(*wallet, false),
            AccountMeta::new_readonly(*mint, false),
            AccountMeta::new_readonly(SYSTEM_PROGRAM, false),
            AccountMeta::new_readonly(spl_token_interface::ID, false),
        ],
        data: vec![1],
    }
}

/// Where a withdrawal pays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Payee {
    /// The USDC token account credited.
    pub token_account: Pubkey,
    /// The wallet whose associated token account it is, when that account does not exist yet
    /// (the withdrawal creates it, at the operator's expense).
    pub create_for: Option<Pubkey>,
}

/// Why a destination cannot receive USDC from this service.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadDestination {
    #[error("destination is a token account of mint {0}, not USDC")]
    WrongMint(Pubkey),
    #[error("destination is a frozen or uninitialized token account")]
    Unusable,
    #[error("destination is neither a wallet nor a USDC token account (an account owned by {0})")]
    NotAWallet(Pubkey),
    /// The faucet's recipient: a program or a data account cannot hold a wallet's SOL.
    #[error("wallet_address is not a wallet: it is a program or an account owned by {0}")]
    NotAWalletAddress(Pubkey),
}

impl OnChain {
    /// The USDC balances of token accounts (`None`: no such account), read in batches.
    pub async fn token_balances(&self, accounts: &[Pubkey]) -> Result<Vec<Option<u64>>, OnChainError> {
        let mut balances = Vec::with_capacity(accounts.len());
        for chunk in accounts.chunks(MAX_ACCOUNTS_PER_CALL) {
            let addresses: Vec<String> = chunk.iter().map(Pubkey::to_string).collect();
            let read = self.0.chain.accounts(&addresses.iter().map(String::as_str).collect::<Vec<_>>()).await?;
            for account in read {
                balances.push(match account {
                    Some(a) => Some(TokenAccount::unpack(&a.data).map_err(|e| OnChainError::Unexpected(format!("token account: {e}")))?.amount),
                    None => None,
                });
            }
        }
        Ok(balances)
    }

    /// Moves the wallet's deposit account into its vault; the vault's balance after it.
    /// `BelowMinimumDeposit` when the deposit account holds less than the minimum.
    pub async fn sweep(&self, wallet: &Pubkey) -> Result<u64, OnChainError> {
        let swept = self.execute(&[client::sweep_deposit(*wallet)], &[]).await?;
        let balance = swept.inner_instructions.iter().find_map(|i| match events::decode(&i.instruction.data) {
            Some(ProgramEvent::DepositSwept(e)) => Some(e.vault_balance),
            _ => None,
        });
        balance.ok_or_else(|| OnChainError::Unexpected("sweep emitted no DepositSwept".into()))
    }

    /// Test USDC minted into the wallet's deposit address (embedded chain only), with SOL for
    /// its own transactions topped up to 1 SOL. The deposit is then found and swept like any
    /// other.
    pub async fn mint_test_usdc(&self, wallet: &Pubkey, amount: u64) -> Result<(), OnChainError> {
        let AnyChain::Embedded(embedded) = &self.0.chain else { return Err(OnChainError::NoFaucet) };
        let account = self.0.chain.account(&wallet.to_string()).await?;
        if let Some(account) = &account {
            let owner: Pubkey = account.owner.parse().map_err(|_| OnChainError::Unexpected(format!("account owner {}", account.owner)))?;
            if owner != SYSTEM_PROGRAM || account.executable {
                return Err(BadDestination::NotAWalletAddress(owner).into());
            }
        }
        let lamports = account.map_or(0, |a| a.lamports);
        if lamports < super::FAUCET_SOL / 2 {
            embedded.airdrop(wallet, super::FAUCET_SOL - lamports).await?;
        }
        self.ensure_user(wallet).await?;
        embedded.mint_usdc(&client::deposit_pda(wallet), amount).await?;
        Ok(())
    }

    /// The token account a withdrawal to `destination` pays: `destination` itself if it is a
    /// USDC token account, else (a wallet, or an address with nothing on it yet) its associated
    /// token account.
    pub async fn payee(&self, destination: &Pubkey) -> Result<Payee, OnChainError> {
        let mint = self.0.keys.usdc_mint;
        // A wallet's token account is created with the withdrawal unless it is there already
        // (the operator pays its rent, so a withdrawal says whether it needs one).
        let wallet_payee = || async {
            let token_account = associated_token_account(destination, &mint);
            let exists = self.0.chain.account(&token_account.to_string()).await?.is_some_and(|a| a.owner == spl_token_interface::ID.to_string());
            Ok::<_, OnChainError>(Payee { token_account, create_for: (!exists).then_some(*destination) })
        };
        let Some(account) = self.0.chain.account(&destination.to_string()).await? else { return wallet_payee().await };
        let owner: Pubkey = account.owner.parse().map_err(|_| OnChainError::Unexpected(format!("account owner {}", account.owner)))?;
        if owner == SYSTEM_PROGRAM {
            return wallet_payee().await;
        }
        if owner != spl_token_interface::ID || account.data.len() != TokenAccount::LEN {
            return Err(OnChainError::BadDestination(BadDestination::NotAWallet(owner)));
        }
        let token = TokenAccount::unpack_unchecked(&account.data).map_err(|e| OnChainError::Unexpected(format!("token account: {e}")))?;
        if token.mint != mint {
            return Err(OnChainError::BadDestination(BadDestination::WrongMint(token.mint)));
        }
        if token.state != AccountState::Initialized {
            return Err(OnChainError::BadDestination(BadDestination::Unusable));
        }
        Ok(Payee { token_account: *destination, create_for: None })
    }

    /// Withdrawals from vaults to payees (`(wallet, payee, amount)`), each signed by the
    /// operator on one blockhash, not yet sent.
    pub async fn sign_withdrawals(&self, withdrawals: &[(Pubkey, Payee, u64)]) -> Result<Vec<Signed>, OnChainError> {
        let blockhash = self.recent_blockhash().await?;
        let operator = self.0.keys.operator.pubkey();
        let sign = |(wallet, payee, amount): &(Pubkey, Payee, u64)| {
            let create = payee.create_for.map(|owner| create_associated_token_account(&operator, &owner, &self.0.keys.usdc_mint));
            let withdraw = client::withdraw(operator, *wallet, payee.token_account, *amount);
            self.sign_with(&create.into_iter().chain([withdraw]).collect::<Vec<_>>(), &[], blockhash)
        };
        withdrawals.iter().map(sign).collect()
    }

    /// Whether a transaction is known to have landed (`Some(Ok)`), failed on chain
    /// (`Some(Err)`), or neither yet (`None`).
    pub async fn outcome(&self, signature: &str) -> Result<Option<Result<(), String>>, OnChainError> {
        Ok(self.landed(signature).await?.map(|tx| match tx.err {
            None => Ok(()),
            Some(err) => Err(describe(&err)),
        }))
    }

    /// Whether a signed transaction's blockhash can still land it.
    pub async fn still_valid(&self, wire: &[u8]) -> Result<bool, OnChainError> {
        let tx: solana_transaction::Transaction = bincode::deserialize(wire).map_err(|e| OnChainError::Unexpected(e.to_string()))?;
        Ok(self.0.chain.is_blockhash_valid(&tx.message.recent_blockhash.to_string()).await?)
    }

    /// Whether a transaction can no longer be rolled back.
    pub async fn is_finalized(&self, signature: &str) -> Result<bool, OnChainError> {
        Ok(self.0.chain.is_finalized(signature).await?)
    }
}

/// Why the program refused, in words.
fn refusal_reason(refusal: &Refusal) -> String {
    match refusal {
        Refusal::InsufficientBalance => "the vault held less than the amount".into(),
        other => format!("refused by the program: {other:?}"),
    }
}

/// A failed transaction's reason in words.
pub fn describe(err: &solana_transaction_error::TransactionError) -> String {
    match (super::errors::refusal(err), super::errors::program_error(err)) {
        (Some(refusal), _) => refusal_reason(&refusal),
        (None, Some(e)) => format!("refused by the program: {e:?}"),
        (None, None) => err.to_string(),
    }
}

/// A chain failure of a send, as a reason to store (`None`: not a failure of the transaction
/// itself — transport, rate limit — so the outcome is unknown).
pub fn failure_of(e: &OnChainError) -> Option<String> {
    match e {
        OnChainError::Refused(refusal) => Some(refusal_reason(refusal)),
        OnChainError::Chain(ChainError::TransactionFailed { err, .. }) => Some(describe(err)),
        _ => None,
    }
}
