//! The embedded chain's runtime: one Agave bank built the way solana-program-test builds its
//! own (all features, the SPL programs, this program natively or as its SBF binary), but owned
//! here, so the chain decides when blockhashes advance: solana-program-test's context registers
//! one with every tick, which expires a signed transaction long before a wallet has signed what
//! the service built.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use agave_feature_set::FeatureSet;
use anchor_lang::prelude::{AccountInfo, Pubkey};
use anchor_lang::solana_program::entrypoint::ProgramResult;
use solana_account::AccountSharedData;
use solana_keypair::Keypair;
use solana_program_runtime::invoke_context::BuiltinFunctionWithContext;
use solana_program_runtime::loaded_programs::ProgramCacheEntry;
use solana_program_test::processor;
use solana_runtime::bank::Bank;
use solana_runtime::bank_forks::BankForks;
use solana_runtime::genesis_utils::create_genesis_config_with_leader_ex;
use solana_signer::Signer;

/// How often a new blockhash is registered: a slot of a real cluster. A blockhash stays valid
/// for 150 of them (about a minute), as on mainnet.
pub const SLOT: Duration = Duration::from_millis(400);

/// Roots between two account-storage maintenance passes.
const MAINTAIN_EVERY: u64 = 16;

/// SOL held by the bank's genesis account, which pays for genesis and airdrops.
const GENESIS_LAMPORTS: u64 = 1_000_000_000 * 1_000_000_000;

/// Anchor's generated `entry` ties the program id, accounts and data to one lifetime `'info`;
/// the runtime's builtin signature gives each its own. Shortening the account infos' lifetime
/// is what a real loader does too (it builds them with one lifetime), and sound here because
/// the program keeps no reference past the call. Unlike leaking copies (a test harness's way),
/// it costs nothing per transaction.
fn process_instruction(program_id: &Pubkey, accounts: &[AccountInfo], data: &[u8]) -> ProgramResult {
    fn one_lifetime<'a, 'b>(accounts: &'a [AccountInfo<'b>]) -> &'a [AccountInfo<'a>] {
        // SAFETY: see above; `AccountInfo` is invariant only because of its `RefCell`s, and
        // nothing stores a shorter-lived reference into them.
        unsafe { std::mem::transmute::<&'a [AccountInfo<'b>], &'a [AccountInfo<'a>]>(accounts) }
    }
    funding_market::entry(program_id, one_lifetime(accounts), data)
}

/// The runtime's log lines of a transaction that ran `native`, the natively compiled program, as
/// a validator writes them for its SBF binary: one `invoke [depth]` per invocation and one
/// `success` (or `failed`) closing it. Natively, every invocation is logged more than once —
/// by the runtime; again by solana-program-test's builtin entry when the callee is the native
/// program; and, for a call made from native code, once more beforehand by the syscall stub
/// that carries it (with a depth of its own) — and closed as many times. So an invocation at
/// depth `d` of program `p` has `1 + (p == native) + (d > 1)` copies of each line, and those
/// copies are folded into one here, the depth counted. Anything that does not follow that
/// pattern is left as it is. What a native run cannot give stays absent: the program's own
/// `Program log:` lines and its compute units.
pub fn validator_logs(raw: Vec<String>, native: &Pubkey) -> Vec<String> {
    fn invoked(line: &str) -> Option<&str> {
        let rest = line.strip_prefix("Program ")?;
        let (program, depth) = rest.split_once(" invoke [")?;
        depth.strip_suffix(']').filter(|d| d.parse::<u32>().is_ok()).map(|_| program)
    }
    fn closed(line: &str) -> Option<&str> {
        let rest = line.strip_prefix("Program ")?;
        rest.strip_suffix(" success").or_else(|| rest.split_once(" failed: ").map(|(program, _)| program)).filter(|p| !p.contains(' '))
    }
    let native = native.to_string();
    let mut out = Vec::with_capacity(raw.len());
    // The invocations open now: their program and how many copies each line of theirs has.
    let mut open: Vec<(&str, usize)> = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let line = raw[i].as_str();
        if let Some(program) = invoked(line) {
            let depth = open.len() + 1;
            let copies = 1 + usize::from(program == native) + usize::from(depth > 1);
            if (1..copies).all(|k| raw.get(i + k).and_then(|l| invoked(l)) == Some(program)) {
                out.push(format!("Program {program} invoke [{depth}]"));
                open.push((program, copies));
                i += copies;
                continue;
            }
        } else if let (Some(program), Some(&(top, copies))) = (closed(line), open.last())
            && program == top
            && (1..copies).all(|k| raw.get(i + k).and_then(|l| closed(l)) == Some(program))
        {
            out.push(line.to_owned());
            open.pop();
            i += copies;
            continue;
        }
        out.push(line.to_owned());
        i += 1;
    }
    out
}

/// What a deployment through the upgradeable loader leaves: the ProgramData account naming the
/// upgrade authority (which `initialize` requires as a signer) and, for an SBF binary, holding
/// it after that header, and the executable program account pointing at it. A native program
/// is registered as a builtin under the program's id instead.
fn deploy(bank: &Bank, rent: &solana_rent::Rent, upgrade_authority: &Pubkey, code: &ProgramCode) {
    use anchor_lang::solana_program::bpf_loader_upgradeable::{ID as LOADER, UpgradeableLoaderState};
    let program_data_address = funding_market::client::program_data_address();
    let mut program_data = funding_market::client::program_data_header(*upgrade_authority);
    match code {
        ProgramCode::Native => {
            let name = "funding_market";
            let builtin: Option<BuiltinFunctionWithContext> = processor!(process_instruction);
            bank.add_builtin(funding_market::ID, name, ProgramCacheEntry::new_builtin(0, name.len(), builtin.expect("processor! gives a function")));
        }
        ProgramCode::Sbf(elf) => {
            program_data.extend_from_slice(elf);
            let program =
                bincode::serialize(&UpgradeableLoaderState::Program { programdata_address: program_data_address }).expect("a loader state serializes");
            let account =
                solana_account::Account { lamports: rent.minimum_balance(program.len()), data: program, owner: LOADER, executable: true, rent_epoch: 0 };
            bank.store_account(&funding_market::ID, &AccountSharedData::from(account));
        }
    }
    let account =
        solana_account::Account { lamports: rent.minimum_balance(program_data.len()), data: program_data, owner: LOADER, executable: false, rent_epoch: 0 };
    bank.store_account(&program_data_address, &AccountSharedData::from(account));
}

/// A native program calls sysvars and CPIs through process-wide syscall stubs, which
/// solana-program-test installs the first time it builds a bank. Building (and dropping) one
/// of its contexts once is the public way to get them installed. It also installs a `log`
/// logger that prints every instruction at debug level; the service logs through `tracing`,
/// so the runtime's `log` records are kept to warnings.
async fn install_syscall_stubs() {
    static INSTALLED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    INSTALLED
        .get_or_init(|| async {
            drop(solana_program_test::ProgramTest::default().start_with_context().await);
            log::set_max_level(log::LevelFilter::Warn);
        })
        .await;
}

/// The program's code as the chain runs it.
#[derive(Clone, Default)]
pub enum ProgramCode {
    /// Compiled into this process and registered as a builtin: no SBF toolchain needed, but the
    /// runtime charges a builtin a flat fee and the program's `msg!` lines go to stdout, not to
    /// the transaction's logs.
    #[default]
    Native,
    /// The SBF binary a cluster would run (`scripts/build-sbf.sh`), deployed through the
    /// upgradeable loader and executed by the runtime's VM: real compute units and the logs a
    /// validator writes.
    Sbf(Arc<[u8]>),
}

impl std::fmt::Debug for ProgramCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProgramCode::Native => f.write_str("Native"),
            ProgramCode::Sbf(elf) => write!(f, "Sbf({} bytes)", elf.len()),
        }
    }
}

/// The runtime: the working bank (kept inside its `BankForks`, which the program cache needs)
/// and the genesis account that holds the test SOL.
pub struct Runtime {
    forks: Arc<RwLock<BankForks>>,
    pub genesis_payer: Keypair,
    /// Whether the program runs natively (its logs then go through `validator_logs`).
    native: bool,
}

impl Runtime {
    /// A bank with `accounts` stored on top of genesis (the chain's persisted state), the
    /// program deployed with `upgrade_authority` as its upgrade authority.
    pub async fn new(accounts: Vec<(Pubkey, AccountSharedData)>, upgrade_authority: &Pubkey, code: &ProgramCode) -> Runtime {
        install_syscall_stubs().await;
        let genesis_payer = Keypair::new();
        let rent = solana_rent::Rent::default();
        let fee_rate_governor = solana_fee_calculator::FeeRateGovernor { lamports_per_signature: 5_000, ..Default::default() };
        let mut genesis = create_genesis_config_with_leader_ex(
            GENESIS_LAMPORTS,
            &genesis_payer.pubkey(),
            &Pubkey::new_unique(),
            &Keypair::new().pubkey(),
            &Pubkey::new_unique(),
            None,
            rent.minimum_balance(3762) + 1_000_000 * 1_000_000_000,
            890_880,
            fee_rate_governor,
            rent.clone(),
            solana_cluster_type::ClusterType::Development,
            &FeatureSet::all_enabled(),
            Vec::new(),
        );
        genesis.poh_config = solana_poh_config::PohConfig::new_sleep(SLOT / 64);
        let bank = Bank::new_from_genesis(
            &genesis,
            Arc::new(solana_runtime::runtime_config::RuntimeConfig::default()),
            Vec::default(),
            None,
            solana_accounts_db::accounts_db::ACCOUNTS_DB_CONFIG_FOR_TESTING,
            None,
            None,
            Arc::default(),
            None,
            None,
        );
        for (program_id, account) in solana_program_binaries::spl_programs(&rent).iter() {
            bank.store_account(program_id, account);
        }
        for (program_id, account) in solana_program_binaries::core_bpf_programs(&rent, |feature| genesis.accounts.contains_key(feature)).iter() {
            bank.store_account(program_id, account);
        }
        for (address, account) in &accounts {
            bank.store_account(address, account);
        }
        deploy(&bank, &rent, upgrade_authority, code);
        bank.set_capitalization_for_tests(bank.calculate_capitalization_for_tests());
        // Past slot 0, as solana-program-test does.
        let bank = Arc::new(bank);
        bank.fill_bank_with_ticks_for_tests();
        let child = Bank::new_from_parent(bank.clone(), bank.leader_id(), bank.slot() + 1);
        let forks = BankForks::new_rw_arc(child);
        Runtime { forks, genesis_payer, native: matches!(code, ProgramCode::Native) }
    }

    /// A transaction's log lines as a validator writes them (see `validator_logs`).
    pub fn logs(&self, raw: Vec<String>) -> Vec<String> {
        if self.native { validator_logs(raw, &funding_market::ID) } else { raw }
    }

    /// The bank transactions run in now.
    pub fn bank(&self) -> Arc<Bank> {
        self.forks.read().expect("bank forks lock").working_bank()
    }

    /// Reads the working bank with the forks' read lock held. `advance` ticks the working bank
    /// to its end and replaces it under the write lock, so a read made here sees a slot whole:
    /// a blockhash, its `lastValidBlockHeight` and the block height it is compared with come
    /// from one bank, never from a bank half-way through its last tick.
    pub fn read<T>(&self, f: impl FnOnce(&Bank) -> T) -> T {
        let forks = self.forks.read().expect("bank forks lock");
        f(&forks.working_bank())
    }

    /// Ends the working bank's slot and continues in a child bank, rooting the parent: what a
    /// cluster does every slot. Rooting is what lets the runtime forget old state (the status
    /// cache of processed signatures, superseded account versions), so a long-running chain does
    /// not grow with every transaction. The caller holds the write lock: no transaction runs
    /// meanwhile. Blockhashes carry over to the child.
    pub fn advance(&self) {
        let mut forks = self.forks.write().expect("bank forks lock");
        let parent = forks.working_bank();
        parent.fill_bank_with_ticks_for_tests();
        let child = Bank::new_from_parent(parent.clone(), parent.leader_id(), parent.slot() + 1);
        forks.insert(child);
        forks.set_root(parent.slot(), None, Some(parent.slot()));
        drop(forks);
        // What a validator's accounts background service does: move rooted account versions out
        // of the write cache, drop the superseded ones, compact what is left.
        if parent.slot().is_multiple_of(MAINTAIN_EVERY) {
            parent.force_flush_accounts_cache();
            parent.accounts().accounts_db.clean_accounts(Some(parent.slot()), false);
            parent.shrink_candidate_slots();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::validator_logs;

    /// A native program's failing transfer, logged as solana-program-test's stubs and builtin
    /// entry log it: each invocation folded into one line at its depth, each close into one.
    #[test]
    fn native_copies_fold_into_one_line_an_invocation() {
        let native = funding_market::ID;
        let token = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
        let raw = [
            format!("Program {native} invoke [1]"),
            format!("Program {native} invoke [1]"),
            format!("Program {token} invoke [1]"),
            format!("Program {token} invoke [2]"),
            "Program log: Error: insufficient funds".to_owned(),
            format!("Program {token} consumed 4 of 199000 compute units"),
            format!("Program {token} failed: custom program error: 0x1"),
            format!("Program {token} failed: custom program error: 0x1"),
            format!("Program {native} failed: custom program error: 0x1"),
            format!("Program {native} failed: custom program error: 0x1"),
        ];
        assert_eq!(
            validator_logs(raw.to_vec(), &native),
            [
                format!("Program {native} invoke [1]"),
                format!("Program {token} invoke [2]"),
                "Program log: Error: insufficient funds".to_owned(),
                format!("Program {token} consumed 4 of 199000 compute units"),
                format!("Program {token} failed: custom program error: 0x1"),
                format!("Program {native} failed: custom program error: 0x1"),
            ]
        );
        // What does not follow the pattern (an instruction of another program) is kept as is.
        let other = vec![format!("Program {token} invoke [1]"), format!("Program {token} success")];
        assert_eq!(validator_logs(other.clone(), &native), other);
    }
}
