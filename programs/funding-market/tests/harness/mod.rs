//! The program inside solana-program-test's real runtime (natively, or as its SBF binary when
//! SBF_OUT_DIR is set), with the real SPL Token program, a test USDC mint and an initialized
//! config.
#![allow(dead_code)]

use anchor_lang::prelude::{AccountInfo, Clock, Pubkey};
use anchor_lang::solana_program::entrypoint::ProgramResult;
use anchor_lang::solana_program::instruction::Instruction;
use anchor_lang::solana_program::program_pack::Pack;
use funding_market::client;
use funding_market::instructions::{CreateMarketParams, InitializeParams};
use funding_market::state::{Market, Side};
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_keypair::Keypair;
use solana_program_test::{BanksClientError, ProgramTest, ProgramTestContext, processor};
use solana_signer::Signer;
use solana_transaction::Transaction;
use spl_token_interface::instruction as token_ix;

pub const USDC: u64 = 1_000_000;
pub const TREASURY_FUNDS: u64 = 1_000_000 * USDC;
/// Wall-clock start of every test: markets below are scheduled around it.
pub const T0: i64 = 1_800_000_000;

/// Anchor's generated `entry` ties its arguments to one lifetime; the runtime's builtin
/// signature does not. A leaked copy of the account list bridges the two (fine in tests).
fn process(program_id: &Pubkey, accounts: &[AccountInfo], data: &[u8]) -> ProgramResult {
    let program_id: &'static Pubkey = Box::leak(Box::new(*program_id));
    let data: &'static [u8] = Box::leak(data.to_vec().into_boxed_slice());
    let accounts = Box::leak(accounts.to_vec().into_boxed_slice());
    funding_market::entry(program_id, accounts, data)
}

pub struct Harness {
    pub ctx: ProgramTestContext,
    /// The program's upgrade authority (recorded in its ProgramData account), which alone can
    /// initialize it.
    pub deployer: Keypair,
    pub mint: Keypair,
    pub mint_authority: Keypair,
    pub authority: Keypair,
    pub operator: Keypair,
    pub oracle: Keypair,
    /// The compute units the last transaction `send` landed consumed.
    pub units: u64,
}

/// A failed transaction's error: an Anchor/program code, or something else.
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    Code(u32),
    Other(String),
}

pub fn code(e: impl Into<u32>) -> Failure {
    Failure::Code(e.into())
}

pub fn program_error(e: funding_market::error::FundingMarketError) -> Failure {
    Failure::Code(e.into())
}

pub fn anchor_error(e: anchor_lang::error::ErrorCode) -> Failure {
    Failure::Code(e.into())
}

impl Harness {
    pub async fn new() -> Harness {
        let mut h = Harness::deployed().await;
        h.initialize().await;
        h
    }

    /// The program deployed (its ProgramData account naming `deployer` as upgrade authority),
    /// a test USDC mint, and nothing initialized.
    pub async fn deployed() -> Harness {
        // Natively by default; the SBF binary when SBF_OUT_DIR names the directory holding
        // funding_market.so (scripts/build-sbf.sh, then scripts/test.sh runs these tests again
        // against it). ProgramTest reads SBF_OUT_DIR itself.
        let pt = ProgramTest::new("funding_market", funding_market::ID, processor!(process));
        let ctx = pt.start_with_context().await;
        let mut h = Harness {
            ctx,
            deployer: Keypair::new(),
            mint: Keypair::new(),
            mint_authority: Keypair::new(),
            authority: Keypair::new(),
            operator: Keypair::new(),
            oracle: Keypair::new(),
            units: 0,
        };
        h.set_time(T0);
        h.create_mint().await;
        let program_data = client::program_data_header(h.deployer.pubkey());
        let account = solana_account::Account {
            lamports: 1_000_000_000,
            data: program_data,
            owner: anchor_lang::solana_program::bpf_loader_upgradeable::ID,
            executable: false,
            rent_epoch: 0,
        };
        h.ctx.set_account(&client::program_data_address(), &account.into());
        h
    }

    /// The config parameters every test runs with.
    pub fn params(&self) -> InitializeParams {
        InitializeParams {
            authority: self.authority.pubkey(),
            operator: self.operator.pubkey(),
            oracle: self.oracle.pubkey(),
            fee_bps: 100,
            min_deposit: USDC,
            min_trade: USDC,
        }
    }

    /// Initializes the config (signed by the deployer), funds the treasury and the roles.
    pub async fn initialize(&mut self) {
        let ix = client::initialize(self.payer(), self.deployer.pubkey(), self.mint.pubkey(), self.params());
        let deployer = self.deployer.insecure_clone();
        self.send(&[ix], &[&deployer]).await.unwrap();
        self.mint_to(client::treasury_pda(), TREASURY_FUNDS).await;
        for k in [self.authority.pubkey(), self.operator.pubkey(), self.oracle.pubkey()] {
            self.airdrop(k).await;
        }
    }

    pub fn payer(&self) -> Pubkey {
        self.ctx.payer.pubkey()
    }

    pub fn set_time(&mut self, unix: i64) {
        let clock = Clock { unix_timestamp: unix, ..Clock::default() };
        self.ctx.set_sysvar(&clock);
    }

    /// Sends `ixs` paid by the context payer, signed by it and `signers`.
    pub async fn send(&mut self, ixs: &[Instruction], signers: &[&Keypair]) -> Result<(), Failure> {
        let blockhash = self.ctx.get_new_latest_blockhash().await.unwrap();
        let mut all: Vec<&Keypair> = vec![&self.ctx.payer];
        all.extend_from_slice(signers);
        let tx = Transaction::new_signed_with_payer(ixs, Some(&self.ctx.payer.pubkey()), &all, blockhash);
        let processed = self.ctx.banks_client.process_transaction_with_metadata(tx).await.map_err(failure)?;
        self.units = processed.metadata.map_or(0, |m| m.compute_units_consumed);
        processed.result.map_err(|e| failure(BanksClientError::TransactionError(e)))
    }

    async fn create_mint(&mut self) {
        let rent = self.ctx.banks_client.get_rent().await.unwrap();
        let space = spl_token_interface::state::Mint::LEN;
        let create = anchor_lang::solana_program::system_instruction::create_account(
            &self.payer(),
            &self.mint.pubkey(),
            rent.minimum_balance(space),
            space as u64,
            &spl_token_interface::ID,
        );
        let init = token_ix::initialize_mint2(&spl_token_interface::ID, &self.mint.pubkey(), &self.mint_authority.pubkey(), None, 6).unwrap();
        let mint = self.mint.insecure_clone();
        self.send(&[create, init], &[&mint]).await.unwrap();
    }

    /// Mints test USDC into a token account (as an external sender would deposit).
    pub async fn mint_to(&mut self, account: Pubkey, amount: u64) {
        let ix = token_ix::mint_to(&spl_token_interface::ID, &self.mint.pubkey(), &account, &self.mint_authority.pubkey(), &[], amount).unwrap();
        let authority = self.mint_authority.insecure_clone();
        self.send(&[ix], &[&authority]).await.unwrap();
    }

    pub async fn airdrop(&mut self, to: Pubkey) {
        let ix = anchor_lang::solana_program::system_instruction::transfer(&self.payer(), &to, 10_000_000_000);
        self.send(&[ix], &[]).await.unwrap();
    }

    /// A USDC token account owned by `owner` (for withdrawal destinations).
    pub async fn token_account(&mut self, owner: &Pubkey) -> Pubkey {
        let account = Keypair::new();
        let rent = self.ctx.banks_client.get_rent().await.unwrap();
        let space = spl_token_interface::state::Account::LEN;
        let create = anchor_lang::solana_program::system_instruction::create_account(
            &self.payer(),
            &account.pubkey(),
            rent.minimum_balance(space),
            space as u64,
            &spl_token_interface::ID,
        );
        let init = token_ix::initialize_account3(&spl_token_interface::ID, &account.pubkey(), &self.mint.pubkey(), owner).unwrap();
        self.send(&[create, init], &[&account]).await.unwrap();
        account.pubkey()
    }

    pub async fn balance(&mut self, token_account: Pubkey) -> u64 {
        let account = self.ctx.banks_client.get_account(token_account).await.unwrap().expect("token account exists");
        spl_token_interface::state::Account::unpack(&account.data).unwrap().amount
    }

    pub async fn exists(&mut self, address: Pubkey) -> bool {
        self.ctx.banks_client.get_account(address).await.unwrap().is_some()
    }

    pub async fn market(&mut self, market_id: &[u8; 16]) -> Market {
        let account = self.ctx.banks_client.get_account(client::market_pda(market_id)).await.unwrap().unwrap();
        client::decode(&account.data).unwrap()
    }

    pub async fn position(&mut self, market_id: &[u8; 16], wallet: &Pubkey) -> funding_market::state::Position {
        let address = client::position_pda(&client::market_pda(market_id), wallet);
        let account = self.ctx.banks_client.get_account(address).await.unwrap().unwrap();
        client::decode(&account.data).unwrap()
    }

    /// A new wallet with its user accounts and `usdc` USDC deposited and swept into its vault.
    pub async fn trader(&mut self, usdc: u64) -> Keypair {
        let wallet = Keypair::new();
        self.airdrop(wallet.pubkey()).await;
        let payer = self.payer();
        self.send(&[client::create_user(payer, wallet.pubkey(), self.mint.pubkey())], &[]).await.unwrap();
        if usdc > 0 {
            self.mint_to(client::deposit_pda(&wallet.pubkey()), usdc).await;
            self.send(&[client::sweep_deposit(wallet.pubkey())], &[]).await.unwrap();
        }
        wallet
    }

    /// Market `n` open from T0 - 1 h, closing at T0 + 55 min, settling at T0 + 1 h.
    pub fn market_params(n: u8, b: u64, prior_ppm: u32) -> CreateMarketParams {
        let mut series = [0u8; 32];
        series[..19].copy_from_slice(b"binance-btcusdt-1h-");
        CreateMarketParams { market_id: [n; 16], series, open_ts: T0 - 3600, close_ts: T0 + 3300, settlement_ts: T0 + 3600, b, prior_ppm }
    }

    pub async fn create_market(&mut self, params: CreateMarketParams) -> Result<(), Failure> {
        let authority = self.authority.insecure_clone();
        let payer = self.payer();
        self.send(&[client::create_market(authority.pubkey(), payer, self.mint.pubkey(), params)], &[&authority]).await
    }

    pub async fn buy(&mut self, wallet: &Keypair, id: &[u8; 16], side: Side, amount: u64, min_shares: u64) -> Result<(), Failure> {
        let ix = client::buy_shares(wallet.pubkey(), wallet.pubkey(), id, side, amount, min_shares);
        self.send(&[ix], &[wallet]).await
    }

    pub async fn sell(&mut self, wallet: &Keypair, id: &[u8; 16], side: Side, shares: u64, min_out: u64) -> Result<(), Failure> {
        let ix = client::sell_shares(wallet.pubkey(), wallet.pubkey(), id, side, shares, min_out);
        self.send(&[ix], &[wallet]).await
    }

    pub async fn resolve(&mut self, id: &[u8; 16], rate: i64) -> Result<(), Failure> {
        let oracle = self.oracle.insecure_clone();
        self.send(&[client::resolve_market(oracle.pubkey(), id, rate)], &[&oracle]).await
    }

    pub async fn void(&mut self, id: &[u8; 16]) -> Result<(), Failure> {
        let oracle = self.oracle.insecure_clone();
        self.send(&[client::void_market(oracle.pubkey(), id)], &[&oracle]).await
    }

    pub async fn settle(&mut self, id: &[u8; 16], wallet: &Pubkey) -> Result<(), Failure> {
        let rent_payer = self.position(id, wallet).await.rent_payer;
        self.send(&[client::settle_position(id, *wallet, rent_payer)], &[]).await
    }

    /// `settle_positions` for the positions of `wallets` in one transaction, under the compute
    /// limit `client::settle_positions_units` gives.
    pub async fn settle_many(&mut self, id: &[u8; 16], wallets: &[Pubkey]) -> Result<(), Failure> {
        let mut positions = Vec::new();
        for wallet in wallets {
            positions.push((*wallet, self.position(id, wallet).await.rent_payer));
        }
        let limit = ComputeBudgetInstruction::set_compute_unit_limit(client::settle_positions_units(positions.len()));
        self.send(&[limit, client::settle_positions(id, &positions)], &[]).await
    }

    /// The lamports `address` holds (0 when it does not exist).
    pub async fn lamports(&mut self, address: Pubkey) -> u64 {
        self.ctx.banks_client.get_balance(address).await.unwrap()
    }
}

fn failure(e: BanksClientError) -> Failure {
    use solana_instruction::error::InstructionError::Custom;
    let te = match &e {
        BanksClientError::TransactionError(te) => Some(te.clone()),
        BanksClientError::SimulationError { err, .. } => Some(err.clone()),
        _ => None,
    };
    match te {
        Some(solana_transaction_error::TransactionError::InstructionError(_, Custom(code))) => Failure::Code(code),
        _ => Failure::Other(format!("{e:?}")),
    }
}

impl Harness {
    /// A token account of a freshly made, different mint (a substitution attempt).
    pub async fn foreign_token_account(&mut self, owner: &Pubkey) -> Pubkey {
        let real_mint = self.mint.insecure_clone();
        self.mint = Keypair::new();
        self.create_mint().await;
        let account = self.token_account(owner).await;
        self.mint = real_mint;
        account
    }
}

impl Harness {
    /// Simulates `ixs` and returns the data of every inner instruction (where `emit_cpi!`
    /// events travel).
    pub async fn inner_instruction_data(&mut self, ixs: &[Instruction], signers: &[&Keypair]) -> Vec<Vec<u8>> {
        let blockhash = self.ctx.get_new_latest_blockhash().await.unwrap();
        let mut all: Vec<&Keypair> = vec![&self.ctx.payer];
        all.extend_from_slice(signers);
        let tx = Transaction::new_signed_with_payer(ixs, Some(&self.ctx.payer.pubkey()), &all, blockhash);
        let sim = self.ctx.banks_client.simulate_transaction(tx).await.unwrap();
        assert_eq!(sim.result, Some(Ok(())), "simulation failed");
        sim.simulation_details.and_then(|d| d.inner_instructions).unwrap_or_default().into_iter().flatten().map(|inner| inner.instruction.data).collect()
    }
}
