//! Off-chain helpers for everyone else (API, indexer, tests): PDA derivation, instruction
//! builders and account decoding, so no caller hand-assembles an instruction.

use anchor_lang::prelude::*;
use anchor_lang::solana_program::instruction::Instruction;
use anchor_lang::{InstructionData, ToAccountMetas};

use crate::instructions::{CreateMarketParams, InitializeParams};
use crate::state::{Config, Market, Position, Side, UserAccount};
use crate::{ID, accounts, instruction};

/// A bounded memory of values that are costly to compute and never change for their key (a
/// derived address, an address's base58 text), shared by every thread of the process. At
/// `capacity` entries it starts over: that bounds its size without keeping track of use, and
/// the keys that matter (the markets and wallets trading now) come back at once. A value is
/// computed outside the lock, so two threads may both compute a missing one (the same value).
pub struct Remembered<K, V> {
    capacity: usize,
    entries: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<K, V>>>,
}

impl<K: std::hash::Hash + Eq, V: Clone> Remembered<K, V> {
    pub const fn new(capacity: usize) -> Remembered<K, V> {
        Remembered { capacity, entries: std::sync::LazyLock::new(Default::default) }
    }

    /// The value of `key`, made by `make` if it is not remembered.
    pub fn get_or_make(&self, key: K, make: impl FnOnce(&K) -> V) -> V {
        let entries = || self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(value) = entries().get(&key) {
            return value.clone();
        }
        let value = make(&key);
        let mut remembered = entries();
        if remembered.len() >= self.capacity {
            remembered.clear();
        }
        remembered.insert(key, value.clone());
        value
    }

    /// How many values are remembered now (never more than the capacity).
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether nothing is remembered yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How many derived addresses `pda` remembers (about 2 MB; past it, it starts over).
const REMEMBERED_PDAS: usize = 16_384;

/// The program address of `seeds`, remembered: a derivation hashes and tries curve points until
/// one is off the curve (tens of microseconds), and every trade names seven — the config, the
/// event authority, its market's, the market vault's, the wallet's user and vault, the position
/// — for the same few markets and wallets again and again.
fn pda(seeds: &[&[u8]]) -> Pubkey {
    static REMEMBERED: Remembered<Vec<u8>, Pubkey> = Remembered::new(REMEMBERED_PDAS);
    // Each seed with its length first: different seed lists never make the same key.
    let key: Vec<u8> = seeds.iter().flat_map(|seed| std::iter::once(seed.len() as u8).chain(seed.iter().copied())).collect();
    REMEMBERED.get_or_make(key, |_| Pubkey::find_program_address(seeds, &ID).0)
}

pub fn config_pda() -> Pubkey {
    pda(&[Config::SEED])
}
pub fn treasury_pda() -> Pubkey {
    pda(&[Config::TREASURY_SEED])
}
pub fn user_pda(wallet: &Pubkey) -> Pubkey {
    pda(&[UserAccount::SEED, wallet.as_ref()])
}
/// The user's personal deposit address (a USDC token account).
pub fn deposit_pda(wallet: &Pubkey) -> Pubkey {
    pda(&[UserAccount::DEPOSIT_SEED, wallet.as_ref()])
}
pub fn vault_pda(wallet: &Pubkey) -> Pubkey {
    pda(&[UserAccount::VAULT_SEED, wallet.as_ref()])
}
pub fn market_pda(market_id: &[u8; 16]) -> Pubkey {
    pda(&[Market::SEED, market_id])
}
pub fn market_vault_pda(market: &Pubkey) -> Pubkey {
    pda(&[Market::VAULT_SEED, market.as_ref()])
}
pub fn position_pda(market: &Pubkey, wallet: &Pubkey) -> Pubkey {
    pda(&[Position::SEED, market.as_ref(), wallet.as_ref()])
}
/// Anchor's event authority, which signs the `emit_cpi!` self-invocations.
pub fn event_authority_pda() -> Pubkey {
    pda(&[b"__event_authority"])
}

fn ix(accounts: impl ToAccountMetas, data: impl InstructionData) -> Instruction {
    Instruction { program_id: ID, accounts: accounts.to_account_metas(None), data: data.data() }
}

/// The program's ProgramData account: where the upgradeable loader keeps its upgrade authority.
pub fn program_data_address() -> Pubkey {
    Pubkey::find_program_address(&[ID.as_ref()], &anchor_lang::solana_program::bpf_loader_upgradeable::ID).0
}

/// The ProgramData account's header as the upgradeable loader writes it on deployment
/// (`UpgradeableLoaderState::ProgramData`, bincode: variant 3 as u32, the slot, then the
/// optional authority), without the program bytes that follow it. For runtimes that run the
/// program natively (tests, the embedded chain) and so have no deployment to read it from.
pub fn program_data_header(upgrade_authority: Pubkey) -> Vec<u8> {
    let mut data = Vec::with_capacity(45);
    data.extend_from_slice(&3u32.to_le_bytes());
    data.extend_from_slice(&0u64.to_le_bytes());
    data.push(1);
    data.extend_from_slice(upgrade_authority.as_ref());
    data
}

/// `initialize`, signed by the payer and the program's upgrade authority.
pub fn initialize(payer: Pubkey, upgrade_authority: Pubkey, usdc_mint: Pubkey, params: InitializeParams) -> Instruction {
    ix(
        accounts::Initialize {
            config: config_pda(),
            treasury: treasury_pda(),
            usdc_mint,
            payer,
            upgrade_authority,
            program_data: program_data_address(),
            system_program: anchor_lang::system_program::ID,
            token_program: anchor_spl::token::ID,
        },
        instruction::Initialize { params },
    )
}

pub fn create_user(payer: Pubkey, wallet: Pubkey, usdc_mint: Pubkey) -> Instruction {
    ix(
        accounts::CreateUser {
            config: config_pda(),
            wallet,
            user: user_pda(&wallet),
            deposit: deposit_pda(&wallet),
            vault: vault_pda(&wallet),
            usdc_mint,
            payer,
            system_program: anchor_lang::system_program::ID,
            token_program: anchor_spl::token::ID,
            event_authority: event_authority_pda(),
            program: ID,
        },
        instruction::CreateUser {},
    )
}

pub fn sweep_deposit(wallet: Pubkey) -> Instruction {
    ix(
        accounts::SweepDeposit {
            config: config_pda(),
            user: user_pda(&wallet),
            deposit: deposit_pda(&wallet),
            vault: vault_pda(&wallet),
            token_program: anchor_spl::token::ID,
            event_authority: event_authority_pda(),
            program: ID,
        },
        instruction::SweepDeposit {},
    )
}

pub fn create_market(authority: Pubkey, payer: Pubkey, usdc_mint: Pubkey, params: CreateMarketParams) -> Instruction {
    let market = market_pda(&params.market_id);
    ix(
        accounts::CreateMarket {
            config: config_pda(),
            authority,
            payer,
            market,
            vault: market_vault_pda(&market),
            treasury: treasury_pda(),
            usdc_mint,
            system_program: anchor_lang::system_program::ID,
            token_program: anchor_spl::token::ID,
            event_authority: event_authority_pda(),
            program: ID,
        },
        instruction::CreateMarket { params },
    )
}

/// `signer` is the wallet itself or the operator acting for it.
pub fn buy_shares(signer: Pubkey, wallet: Pubkey, market_id: &[u8; 16], side: Side, usdc_amount: u64, min_shares: u64) -> Instruction {
    let market = market_pda(market_id);
    ix(
        accounts::BuyShares {
            config: config_pda(),
            market,
            market_vault: market_vault_pda(&market),
            user: user_pda(&wallet),
            user_vault: vault_pda(&wallet),
            position: position_pda(&market, &wallet),
            signer,
            system_program: anchor_lang::system_program::ID,
            token_program: anchor_spl::token::ID,
            event_authority: event_authority_pda(),
            program: ID,
        },
        instruction::BuyShares { side, usdc_amount, min_shares },
    )
}

pub fn sell_shares(signer: Pubkey, wallet: Pubkey, market_id: &[u8; 16], side: Side, shares: u64, min_usdc_out: u64) -> Instruction {
    let market = market_pda(market_id);
    ix(
        accounts::SellShares {
            config: config_pda(),
            market,
            market_vault: market_vault_pda(&market),
            user: user_pda(&wallet),
            user_vault: vault_pda(&wallet),
            position: position_pda(&market, &wallet),
            signer,
            token_program: anchor_spl::token::ID,
            event_authority: event_authority_pda(),
            program: ID,
        },
        instruction::SellShares { side, shares, min_usdc_out },
    )
}

fn finalize_accounts(oracle: Pubkey, market_id: &[u8; 16]) -> accounts::Finalize {
    let market = market_pda(market_id);
    accounts::Finalize {
        config: config_pda(),
        oracle,
        market,
        market_vault: market_vault_pda(&market),
        treasury: treasury_pda(),
        token_program: anchor_spl::token::ID,
        event_authority: event_authority_pda(),
        program: ID,
    }
}

/// `actual_rate` in units of 1e-12.
pub fn resolve_market(oracle: Pubkey, market_id: &[u8; 16], actual_rate: i64) -> Instruction {
    ix(finalize_accounts(oracle, market_id), instruction::ResolveMarket { actual_rate })
}

pub fn void_market(oracle: Pubkey, market_id: &[u8; 16]) -> Instruction {
    ix(finalize_accounts(oracle, market_id), instruction::VoidMarket {})
}

/// `rent_receiver` must be the position's `rent_payer`.
pub fn settle_position(market_id: &[u8; 16], wallet: Pubkey, rent_receiver: Pubkey) -> Instruction {
    let market = market_pda(market_id);
    ix(
        accounts::SettlePosition {
            market,
            market_vault: market_vault_pda(&market),
            position: position_pda(&market, &wallet),
            user: user_pda(&wallet),
            user_vault: vault_pda(&wallet),
            rent_receiver,
            token_program: anchor_spl::token::ID,
            event_authority: event_authority_pda(),
            program: ID,
        },
        instruction::SettlePosition {},
    )
}

/// `settle_positions` for `positions` of one market, in that order: each the position's wallet
/// and its `rent_payer`. A transaction carrying it needs a compute-unit limit of
/// `settle_positions_units(positions.len())`.
pub fn settle_positions(market_id: &[u8; 16], positions: &[(Pubkey, Pubkey)]) -> Instruction {
    let market = market_pda(market_id);
    let mut instruction = ix(
        accounts::SettlePositions {
            market,
            market_vault: market_vault_pda(&market),
            token_program: anchor_spl::token::ID,
            event_authority: event_authority_pda(),
            program: ID,
        },
        instruction::SettlePositions {},
    );
    for (wallet, rent_receiver) in positions {
        instruction.accounts.push(AccountMeta::new(position_pda(&market, wallet), false));
        instruction.accounts.push(AccountMeta::new(vault_pda(wallet), false));
        instruction.accounts.push(AccountMeta::new(*rent_receiver, false));
    }
    instruction
}

/// Compute units `settle_positions` needs for `positions` positions, with a margin. Measured on
/// the SBF binary (`tests/compute_units.rs`): 12,983 for one position, 89,380 for ten, 102,771
/// for twelve — about 4,500 and then 8,500 a position (the vault's address derivation, the
/// transfer, the close and the event). A derivation's cost depends on the wallet (1,500 units a
/// bump tried), hence the margin; `tests/program.rs` (`settle_positions_fits_its_compute_budget`)
/// fails on the SBF binary if twelve positions ever need more than this.
pub fn settle_positions_units(positions: usize) -> u32 {
    SETTLE_POSITIONS_BASE_UNITS + SETTLE_POSITIONS_UNITS_PER_POSITION * positions as u32
}

/// See `settle_positions_units`.
pub const SETTLE_POSITIONS_BASE_UNITS: u32 = 10_000;
pub const SETTLE_POSITIONS_UNITS_PER_POSITION: u32 = 12_000;

/// Compute units `close_market` needs, with a margin (13,641 measured on the SBF binary).
pub const CLOSE_MARKET_UNITS: u32 = 20_000;

pub fn withdraw(signer: Pubkey, wallet: Pubkey, destination: Pubkey, amount: u64) -> Instruction {
    ix(
        accounts::Withdraw {
            config: config_pda(),
            user: user_pda(&wallet),
            vault: vault_pda(&wallet),
            destination,
            signer,
            token_program: anchor_spl::token::ID,
            event_authority: event_authority_pda(),
            program: ID,
        },
        instruction::Withdraw { amount },
    )
}

pub fn close_market(authority: Pubkey, market_id: &[u8; 16]) -> Instruction {
    let market = market_pda(market_id);
    ix(
        accounts::CloseMarket {
            config: config_pda(),
            authority,
            market,
            market_vault: market_vault_pda(&market),
            treasury: treasury_pda(),
            token_program: anchor_spl::token::ID,
            event_authority: event_authority_pda(),
            program: ID,
        },
        instruction::CloseMarket {},
    )
}

/// Decodes an account of this program (checks the discriminator).
pub fn decode<T: AccountDeserialize>(data: &[u8]) -> Result<T> {
    T::try_deserialize(&mut &data[..])
}

/// Decodes the data of an `emit_cpi!` inner instruction as event `E`; `None` if it is not one
/// (the event-instruction tag and `E`'s discriminator must both match).
pub fn decode_event<E: anchor_lang::Event + anchor_lang::Discriminator>(ix_data: &[u8]) -> Option<E> {
    let rest = ix_data.strip_prefix(anchor_lang::event::EVENT_IX_TAG_LE)?;
    let payload = rest.strip_prefix(E::DISCRIMINATOR)?;
    E::try_from_slice(payload).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A remembered address is the one derived from its own seeds: addresses of the same wallet
    /// or market under different seeds stay apart, asked first or again, and after the memory
    /// starts over.
    #[test]
    fn remembered_addresses_are_derived_from_their_own_seeds() {
        let derive = |seeds: &[&[u8]]| Pubkey::find_program_address(seeds, &ID).0;
        let (wallet, market_id) = (Pubkey::new_unique(), [7u8; 16]);
        for _ in 0..2 {
            assert_eq!(config_pda(), derive(&[Config::SEED]));
            assert_eq!(treasury_pda(), derive(&[Config::TREASURY_SEED]));
            assert_eq!(event_authority_pda(), derive(&[b"__event_authority"]));
            assert_eq!(user_pda(&wallet), derive(&[UserAccount::SEED, wallet.as_ref()]));
            assert_eq!(vault_pda(&wallet), derive(&[UserAccount::VAULT_SEED, wallet.as_ref()]));
            assert_eq!(deposit_pda(&wallet), derive(&[UserAccount::DEPOSIT_SEED, wallet.as_ref()]));
            let market = market_pda(&market_id);
            assert_eq!(market, derive(&[Market::SEED, &market_id]));
            assert_eq!(market_vault_pda(&market), derive(&[Market::VAULT_SEED, market.as_ref()]));
            assert_eq!(position_pda(&market, &wallet), derive(&[Position::SEED, market.as_ref(), wallet.as_ref()]));
        }
        for _ in 0..=REMEMBERED_PDAS {
            user_pda(&Pubkey::new_unique());
        }
        assert_eq!(vault_pda(&wallet), derive(&[UserAccount::VAULT_SEED, wallet.as_ref()]));
    }
}
