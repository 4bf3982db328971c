//! The chain's genesis: the keys it keeps across restarts, the test USDC mint, the program's config,
//! and the operations only a local chain has (minting test USDC, airdrops).

use anchor_lang::prelude::Pubkey;
use anchor_lang::solana_program::instruction::Instruction as ProgramInstruction;
use anchor_lang::solana_program::program_pack::Pack;
use anchor_lang::solana_program::system_instruction;
use funding_market::client;
use funding_market::instructions::InitializeParams;
use solana_keypair::Keypair;
use solana_signer::Signer;
use solana_transaction::Transaction;
use sqlx::PgPool;

use chain_client::ChainError;

use crate::ProgramCode;
use crate::{EmbeddedChain, EmbeddedError};

/// What the program's config is initialised with on a fresh chain.
#[derive(Clone, Debug)]
pub struct GenesisParams {
    /// Trading fee, basis points.
    pub fee_bps: u16,
    /// Micro-USDC.
    pub min_deposit: u64,
    /// Micro-USDC.
    pub min_trade: u64,
    /// Test USDC minted into the treasury, which funds market subsidies (micro-USDC).
    pub treasury_funds: u64,
    /// Whether genesis initializes the program's config (and funds the treasury and roles).
    /// Without it the chain is as a fresh deployment is: the program and the mint, no config,
    /// for an operator to initialize (`funding-admin init`, tested so).
    pub initialize_config: bool,
    /// Whether the program runs natively or as its SBF binary.
    pub program: ProgramCode,
}

impl Default for GenesisParams {
    fn default() -> Self {
        GenesisParams {
            fee_bps: 100,
            min_deposit: 1_000_000,
            min_trade: 1_000_000,
            treasury_funds: 10_000_000 * 1_000_000,
            initialize_config: true,
            program: ProgramCode::Native,
        }
    }
}

/// The keys created at genesis and kept across restarts.
pub struct Keys {
    /// The test USDC mint (6 decimals).
    pub mint: Keypair,
    pub mint_authority: Keypair,
    /// The program's config roles.
    pub authority: Keypair,
    pub operator: Keypair,
    pub oracle: Keypair,
}

/// SOL given to each config role at genesis, for fees and rent.
pub(super) const ROLE_LAMPORTS: u64 = 1_000 * 1_000_000_000;

pub(super) async fn load_or_create_keys(db: &PgPool) -> Result<Keys, EmbeddedError> {
    const ROLES: [&str; 5] = ["mint", "mint_authority", "authority", "operator", "oracle"];
    for role in ROLES {
        sqlx::query("INSERT INTO embedded_keys (role, keypair) VALUES ($1, $2) ON CONFLICT (role) DO NOTHING")
            .bind(role)
            .bind(Keypair::new().to_bytes().to_vec())
            .execute(db)
            .await?;
    }
    let rows: Vec<(String, Vec<u8>)> = sqlx::query_as("SELECT role, keypair FROM embedded_keys").fetch_all(db).await?;
    let key = |role: &str| -> Result<Keypair, EmbeddedError> {
        let bytes = rows.iter().find(|(r, _)| r == role).map(|(_, k)| k).ok_or_else(|| EmbeddedError::Corrupt(format!("no {role} key")))?;
        Keypair::try_from(bytes.as_slice()).map_err(|_| EmbeddedError::Corrupt(format!("{role} key")))
    };
    Ok(Keys { mint: key("mint")?, mint_authority: key("mint_authority")?, authority: key("authority")?, operator: key("operator")?, oracle: key("oracle")? })
}

impl EmbeddedChain {
    pub(super) async fn ensure_genesis(&self, genesis: &GenesisParams) -> Result<(), EmbeddedError> {
        let keys = &self.0.keys;
        if self.account(&keys.mint.pubkey().to_string()).await?.is_none() {
            let space = spl_token_interface::state::Mint::LEN;
            let create = system_instruction::create_account(
                &self.payer(),
                &keys.mint.pubkey(),
                self.0.runtime.bank().get_minimum_balance_for_rent_exemption(space),
                space as u64,
                &spl_token_interface::ID,
            );
            let init =
                spl_token_interface::instruction::initialize_mint2(&spl_token_interface::ID, &keys.mint.pubkey(), &keys.mint_authority.pubkey(), None, 6)
                    .map_err(|e| EmbeddedError::Corrupt(e.to_string()))?;
            self.send_as_payer(&[create, init], &[&keys.mint]).await?;
        }
        if genesis.initialize_config && self.account(&client::config_pda().to_string()).await?.is_none() {
            let payer = self.payer();
            let params = InitializeParams {
                authority: keys.authority.pubkey(),
                operator: keys.operator.pubkey(),
                oracle: keys.oracle.pubkey(),
                fee_bps: genesis.fee_bps,
                min_deposit: genesis.min_deposit,
                min_trade: genesis.min_trade,
            };
            let initialize = client::initialize(payer, keys.authority.pubkey(), keys.mint.pubkey(), params);
            let mut ixs = vec![initialize, self.mint_to_instruction(&client::treasury_pda(), genesis.treasury_funds)];
            for role in [&keys.authority, &keys.operator, &keys.oracle] {
                ixs.push(system_instruction::transfer(&payer, &role.pubkey(), ROLE_LAMPORTS));
            }
            self.send_as_payer(&ixs, &[&keys.mint_authority, &keys.authority]).await?;
        }
        Ok(())
    }

    pub(super) fn payer(&self) -> Pubkey {
        self.0.runtime.genesis_payer.pubkey()
    }

    pub(super) fn mint_to_instruction(&self, token_account: &Pubkey, amount: u64) -> ProgramInstruction {
        let keys = &self.0.keys;
        spl_token_interface::instruction::mint_to(&spl_token_interface::ID, &keys.mint.pubkey(), token_account, &keys.mint_authority.pubkey(), &[], amount)
            .expect("mint_to with the token program id builds")
    }

    /// Sends `instructions` paid by the bank's genesis account (which holds the test SOL).
    pub(super) async fn send_as_payer(&self, instructions: &[ProgramInstruction], signers: &[&Keypair]) -> Result<String, ChainError> {
        let payer = &self.0.runtime.genesis_payer;
        let mut all: Vec<&Keypair> = vec![payer];
        all.extend_from_slice(signers);
        // Two equal requests (the same faucet grant twice in a second) would otherwise be the
        // same bytes under the same blockhash, and the second "already processed": a distinct
        // compute-unit limit per send makes each one its own transaction, at no cost.
        static SENDS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = SENDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 100_000;
        let unique = solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_limit(1_300_000 + n);
        let instructions: Vec<ProgramInstruction> = std::iter::once(unique).chain(instructions.iter().cloned()).collect();
        let tx = Transaction::new_signed_with_payer(&instructions, Some(&payer.pubkey()), &all, self.0.runtime.bank().last_blockhash());
        let wire = bincode::serialize(&tx).expect("a transaction serialises");
        self.send_and_confirm(&wire).await
    }

    /// Mints test USDC into a token account (the faucet: as if someone sent USDC there).
    pub async fn mint_usdc(&self, token_account: &Pubkey, amount: u64) -> Result<String, ChainError> {
        let ix = self.mint_to_instruction(token_account, amount);
        self.send_as_payer(&[ix], &[&self.0.keys.mint_authority]).await
    }

    /// Gives `to` test SOL for fees and rent.
    pub async fn airdrop(&self, to: &Pubkey, lamports: u64) -> Result<String, ChainError> {
        self.send_as_payer(&[system_instruction::transfer(&self.payer(), to, lamports)], &[]).await
    }
}
