//! The program in a real Solana runtime with the real SPL Token program: every instruction's
//! happy path to the micro-USDC, every attack refused with its error, and solvency on chain.

mod harness;

use funding_market::client;
use funding_market::state::{MarketStatus, Outcome, Side};
use harness::*;
use solana_signer::Signer;

#[tokio::test]
async fn a_market_from_creation_to_payout() {
    let mut h = Harness::new().await;
    let alice = h.trader(100 * USDC).await;
    let id = [1u8; 16];
    h.create_market(Harness::market_params(1, 100 * USDC, 500_000)).await.unwrap();
    let market = h.market(&id).await;
    let subsidy = lmsr::Lmsr::opening(100 * USDC, 500_000).unwrap().subsidy();
    assert_eq!(market.subsidy, subsidy);
    assert_eq!(h.balance(market.vault).await, subsidy);
    assert_eq!(h.balance(client::treasury_pda()).await, TREASURY_FUNDS - subsidy);

    // Buy 10 USDC of YES: 10.1 USDC leaves the vault; shares are exactly the math's.
    let expected = lmsr::Lmsr::new(100 * USDC, 0, 0).unwrap().buy(lmsr::Side::Yes, 10 * USDC).unwrap();
    h.buy(&alice, &id, Side::Yes, 10 * USDC, 0).await.unwrap();
    let vault = client::vault_pda(&alice.pubkey());
    assert_eq!(h.balance(vault).await, 100 * USDC - 10_100_000);
    let position = h.position(&id, &alice.pubkey()).await;
    assert_eq!(position.yes_shares, expected.amount_out);
    assert_eq!((position.paid_in, position.fees_paid), (10_100_000, 100_000));
    let market = h.market(&id).await;
    assert_eq!((market.q_yes, market.sold_yes, market.fees_held, market.volume), (expected.amount_out, expected.amount_out, 100_000, 10 * USDC));

    // Resolve YES after settlement; fees go to the treasury; settle pays 1 USDC a share.
    h.set_time(T0 + 3600);
    h.resolve(&id, 150_000_000).await.unwrap();
    let market = h.market(&id).await;
    assert_eq!((market.status, market.outcome, market.actual_rate), (MarketStatus::Resolved, Outcome::Yes, 150_000_000));
    assert_eq!(h.balance(client::treasury_pda()).await, TREASURY_FUNDS - subsidy + 100_000);
    h.settle(&id, &alice.pubkey()).await.unwrap();
    assert_eq!(h.balance(vault).await, 100 * USDC - 10_100_000 + expected.amount_out);
    assert!(!h.exists(client::position_pda(&client::market_pda(&id), &alice.pubkey())).await);
}

use anchor_lang::error::ErrorCode as A;
use funding_market::error::FundingMarketError as E;
use solana_keypair::Keypair;

const ID1: [u8; 16] = [1u8; 16];

/// A harness with an open tier-2 market (b = 100 USDC, prior 0.5) and two funded traders.
async fn open_market() -> (Harness, Keypair, Keypair) {
    let mut h = Harness::new().await;
    let alice = h.trader(1_000 * USDC).await;
    let bob = h.trader(1_000 * USDC).await;
    h.create_market(Harness::market_params(1, 100 * USDC, 500_000)).await.unwrap();
    (h, alice, bob)
}

#[tokio::test]
async fn deposits_sweep_only_from_the_minimum_and_anyone_can_crank() {
    let mut h = Harness::new().await;
    let carol = h.trader(0).await;
    let deposit = client::deposit_pda(&carol.pubkey());
    h.mint_to(deposit, 600_000).await;
    assert_eq!(h.send(&[client::sweep_deposit(carol.pubkey())], &[]).await, Err(program_error(E::BelowMinimumDeposit)));
    h.mint_to(deposit, 400_000).await;
    h.send(&[client::sweep_deposit(carol.pubkey())], &[]).await.unwrap();
    assert_eq!(h.balance(client::vault_pda(&carol.pubkey())).await, USDC);
    assert_eq!(h.balance(deposit).await, 0);
    // Creating the same user twice fails: the system program's AccountAlreadyInUse (custom 0).
    let payer = h.payer();
    assert_eq!(h.send(&[client::create_user(payer, carol.pubkey(), h.mint.pubkey())], &[]).await, Err(Failure::Code(0)));
}

#[tokio::test]
async fn sells_pay_the_math_proceeds_less_the_fee() {
    let (mut h, alice, _) = open_market().await;
    h.buy(&alice, &ID1, Side::No, 50 * USDC, 0).await.unwrap();
    let before = h.market(&ID1).await;
    let shares = h.position(&ID1, &alice.pubkey()).await.no_shares / 2;
    let proceeds = lmsr::Lmsr::new(before.b, before.q_yes, before.q_no).unwrap().sell(lmsr::Side::No, shares).unwrap().amount_out;
    let fee = lmsr::fee(proceeds, 100).unwrap();
    let vault = client::vault_pda(&alice.pubkey());
    let balance = h.balance(vault).await;
    assert_eq!(h.sell(&alice, &ID1, Side::No, shares, proceeds - fee + 1).await, Err(program_error(E::SlippageExceeded)));
    h.sell(&alice, &ID1, Side::No, shares, proceeds - fee).await.unwrap();
    assert_eq!(h.balance(vault).await, balance + proceeds - fee);
    let after = h.market(&ID1).await;
    assert_eq!(after.fees_held, before.fees_held + fee);
    assert_eq!(after.sold_no, before.sold_no - shares);
    assert_eq!(after.trade_count, 2);
    let position = h.position(&ID1, &alice.pubkey()).await;
    assert_eq!(position.paid_out, proceeds - fee);
    // Selling more than held, zero, or u64::MAX.
    assert_eq!(h.sell(&alice, &ID1, Side::No, position.no_shares + 1, 0).await, Err(program_error(E::InsufficientShares)));
    assert_eq!(h.sell(&alice, &ID1, Side::Yes, 1, 0).await, Err(program_error(E::InsufficientShares)));
    assert_eq!(h.sell(&alice, &ID1, Side::No, 0, 0).await, Err(program_error(E::ZeroAmount)));
    assert_eq!(h.sell(&alice, &ID1, Side::No, u64::MAX, 0).await, Err(program_error(E::InsufficientShares)));
}

#[tokio::test]
async fn buy_amounts_and_slippage_are_bounded() {
    let (mut h, alice, _) = open_market().await;
    assert_eq!(h.buy(&alice, &ID1, Side::Yes, 0, 0).await, Err(program_error(E::TradeTooSmall)));
    assert_eq!(h.buy(&alice, &ID1, Side::Yes, USDC - 1, 0).await, Err(program_error(E::TradeTooSmall)));
    assert_eq!(h.buy(&alice, &ID1, Side::Yes, u64::MAX, 0).await, Err(program_error(E::Overflow)));
    assert_eq!(h.buy(&alice, &ID1, Side::Yes, 991 * USDC, 0).await, Err(program_error(E::InsufficientBalance)));
    let shares = lmsr::Lmsr::new(100 * USDC, 0, 0).unwrap().buy(lmsr::Side::Yes, 5 * USDC).unwrap().amount_out;
    assert_eq!(h.buy(&alice, &ID1, Side::Yes, 5 * USDC, shares + 1).await, Err(program_error(E::SlippageExceeded)));
    h.buy(&alice, &ID1, Side::Yes, 5 * USDC, shares).await.unwrap();
    // The whole balance (amount + 1 % fee) can be spent, to the micro-USDC.
    let vault = client::vault_pda(&alice.pubkey());
    let left = h.balance(vault).await;
    let spendable = left * 100 / 101;
    h.buy(&alice, &ID1, Side::No, spendable, 0).await.unwrap();
    assert_eq!(h.balance(vault).await, left - spendable - lmsr::fee(spendable, 100).unwrap());
}

#[tokio::test]
async fn only_the_wallet_or_the_operator_may_act_for_a_user() {
    let (mut h, alice, bob) = open_market().await;
    let operator = h.operator.insecure_clone();
    // The operator trades for alice and pays the new position's rent.
    h.send(&[client::buy_shares(operator.pubkey(), alice.pubkey(), &ID1, Side::Yes, 2 * USDC, 0)], &[&operator]).await.unwrap();
    assert_eq!(h.position(&ID1, &alice.pubkey()).await.rent_payer, operator.pubkey());
    let shares = h.position(&ID1, &alice.pubkey()).await.yes_shares;
    // Bob cannot buy, sell or withdraw for alice.
    let bob_buy = client::buy_shares(bob.pubkey(), alice.pubkey(), &ID1, Side::Yes, 2 * USDC, 0);
    assert_eq!(h.send(&[bob_buy], &[&bob]).await, Err(program_error(E::NotWalletOrOperator)));
    let bob_sell = client::sell_shares(bob.pubkey(), alice.pubkey(), &ID1, Side::Yes, shares, 0);
    assert_eq!(h.send(&[bob_sell], &[&bob]).await, Err(program_error(E::NotWalletOrOperator)));
    let bob_dest = h.token_account(&bob.pubkey()).await;
    let bob_withdraw = client::withdraw(bob.pubkey(), alice.pubkey(), bob_dest, USDC);
    assert_eq!(h.send(&[bob_withdraw], &[&bob]).await, Err(program_error(E::NotWalletOrOperator)));
    // A signer flag stripped from the instruction: the runtime never sees a signature.
    let mut unsigned = client::sell_shares(alice.pubkey(), alice.pubkey(), &ID1, Side::Yes, shares, 0);
    unsigned.accounts.iter_mut().filter(|m| m.pubkey == alice.pubkey()).for_each(|m| m.is_signer = false);
    assert_eq!(h.send(&[unsigned], &[]).await, Err(anchor_error(A::AccountNotSigner)));
    // The operator sells for alice; the USDC lands in alice's vault.
    h.send(&[client::sell_shares(operator.pubkey(), alice.pubkey(), &ID1, Side::Yes, shares, 0)], &[&operator]).await.unwrap();
    assert_eq!(h.position(&ID1, &alice.pubkey()).await.yes_shares, 0);
}

#[tokio::test]
async fn substituted_accounts_are_refused() {
    let (mut h, alice, bob) = open_market().await;
    h.create_market(Harness::market_params(2, 50 * USDC, 300_000)).await.unwrap();
    let id2 = [2u8; 16];
    let market2 = client::market_pda(&id2);

    let mut ix = client::buy_shares(alice.pubkey(), alice.pubkey(), &ID1, Side::Yes, 2 * USDC, 0);
    ix.accounts[4].pubkey = client::vault_pda(&bob.pubkey()); // bob's vault pays for alice
    assert_eq!(h.send(&[ix], &[&alice]).await, Err(anchor_error(A::ConstraintAddress)));

    let mut ix = client::buy_shares(alice.pubkey(), alice.pubkey(), &ID1, Side::Yes, 2 * USDC, 0);
    ix.accounts[2].pubkey = client::market_vault_pda(&market2); // another market's vault
    assert_eq!(h.send(&[ix], &[&alice]).await, Err(anchor_error(A::ConstraintAddress)));

    let mut ix = client::buy_shares(alice.pubkey(), alice.pubkey(), &ID1, Side::Yes, 2 * USDC, 0);
    ix.accounts[5].pubkey = client::position_pda(&client::market_pda(&ID1), &bob.pubkey()); // bob's position
    assert_eq!(h.send(&[ix], &[&alice]).await, Err(anchor_error(A::ConstraintSeeds)));

    let mut ix = client::buy_shares(alice.pubkey(), alice.pubkey(), &ID1, Side::Yes, 2 * USDC, 0);
    ix.accounts[0].pubkey = client::treasury_pda(); // not the config
    assert_eq!(h.send(&[ix], &[&alice]).await, Err(anchor_error(A::AccountOwnedByWrongProgram)));

    // A market vault of the wrong mint cannot be created; a treasury substitute is refused.
    let fake_treasury = h.token_account(&h.authority.pubkey()).await;
    h.mint_to(fake_treasury, 1_000 * USDC).await;
    let authority = h.authority.insecure_clone();
    let mut ix = client::create_market(authority.pubkey(), h.payer(), h.mint.pubkey(), Harness::market_params(3, 50 * USDC, 500_000));
    ix.accounts[5].pubkey = fake_treasury;
    assert_eq!(h.send(&[ix], &[&authority]).await, Err(anchor_error(A::ConstraintAddress)));
    let foreign = h.foreign_token_account(&alice.pubkey()).await;
    assert_eq!(h.send(&[client::withdraw(alice.pubkey(), alice.pubkey(), foreign, USDC)], &[&alice]).await, Err(anchor_error(A::ConstraintTokenMint)));

    // Settlement must pay the position's owner and refund the rent to its payer.
    h.buy(&alice, &ID1, Side::Yes, 2 * USDC, 0).await.unwrap();
    h.set_time(T0 + 3600);
    h.resolve(&ID1, 1).await.unwrap();
    let rent_payer = h.position(&ID1, &alice.pubkey()).await.rent_payer;
    let mut ix = client::settle_position(&ID1, alice.pubkey(), rent_payer);
    let alice_vault = client::vault_pda(&alice.pubkey());
    ix.accounts.iter_mut().find(|a| a.pubkey == alice_vault).unwrap().pubkey = client::vault_pda(&bob.pubkey());
    assert_eq!(h.send(&[ix], &[]).await, Err(anchor_error(A::ConstraintAddress)));
    let ix = client::settle_position(&ID1, alice.pubkey(), bob.pubkey());
    assert_eq!(h.send(&[ix], &[]).await, Err(anchor_error(A::ConstraintAddress)));
}

/// A fresh deployment cannot be front-run: only the program's upgrade authority (from its
/// ProgramData account) can initialize it, and only once.
#[tokio::test]
async fn only_the_upgrade_authority_initializes() {
    let mut h = Harness::deployed().await;
    let (mint, params) = (h.mint.pubkey(), h.params());
    let stranger = Keypair::new();
    h.airdrop(stranger.pubkey()).await;
    let ix = client::initialize(stranger.pubkey(), stranger.pubkey(), mint, params.clone());
    assert_eq!(h.send(&[ix], &[&stranger]).await, Err(program_error(E::NotUpgradeAuthority)));
    // The authority's key named without its signature.
    let mut ix = client::initialize(h.payer(), h.deployer.pubkey(), mint, params.clone());
    ix.accounts.iter_mut().filter(|a| a.pubkey == h.deployer.pubkey()).for_each(|a| a.is_signer = false);
    assert_eq!(h.send(&[ix], &[]).await, Err(anchor_error(A::AccountNotSigner)));
    // Another account claiming to be the ProgramData (same layout, naming the stranger).
    let forged = anchor_lang::prelude::Pubkey::new_unique();
    let account = solana_account::Account {
        lamports: 1_000_000_000,
        data: client::program_data_header(stranger.pubkey()),
        owner: anchor_lang::solana_program::bpf_loader_upgradeable::ID,
        executable: false,
        rent_epoch: 0,
    };
    h.ctx.set_account(&forged, &account.into());
    let mut ix = client::initialize(stranger.pubkey(), stranger.pubkey(), mint, params.clone());
    ix.accounts.iter_mut().filter(|a| a.pubkey == client::program_data_address()).for_each(|a| a.pubkey = forged);
    assert_eq!(h.send(&[ix], &[&stranger]).await, Err(anchor_error(A::ConstraintSeeds)));
    assert!(h.ctx.banks_client.get_account(client::config_pda()).await.unwrap().is_none());

    h.initialize().await;
    let data = h.ctx.banks_client.get_account(client::config_pda()).await.unwrap().unwrap().data;
    let config: funding_market::state::Config = client::decode(&data).unwrap();
    assert_eq!((config.authority, config.operator), (h.authority.pubkey(), h.operator.pubkey()));
    let deployer = h.deployer.insecure_clone();
    let again = client::initialize(h.payer(), deployer.pubkey(), mint, params);
    assert!(h.send(&[again], &[&deployer]).await.is_err(), "initialized once");
}

/// The ProgramData header the native runtimes are given reads back as the loader's own state.
#[test]
fn the_program_data_header_is_the_loaders_layout() {
    use anchor_lang::AccountDeserialize;
    let authority = anchor_lang::prelude::Pubkey::new_unique();
    let header = client::program_data_header(authority);
    let state = anchor_lang::prelude::ProgramData::try_deserialize(&mut header.as_slice()).unwrap();
    assert_eq!((state.slot, state.upgrade_authority_address), (0, Some(authority)));
    assert_eq!(header.len(), anchor_lang::solana_program::bpf_loader_upgradeable::UpgradeableLoaderState::size_of_programdata_metadata());
}

#[tokio::test]
async fn markets_need_the_authority_and_a_sane_schedule() {
    let mut h = Harness::new().await;
    let stranger = Keypair::new();
    h.airdrop(stranger.pubkey()).await;
    let params = Harness::market_params(1, 100 * USDC, 500_000);
    let ix = client::create_market(stranger.pubkey(), h.payer(), h.mint.pubkey(), params.clone());
    assert_eq!(h.send(&[ix], &[&stranger]).await, Err(program_error(E::NotAuthority)));
    let mut ix = client::create_market(h.authority.pubkey(), h.payer(), h.mint.pubkey(), params.clone());
    ix.accounts[1].is_signer = false;
    assert_eq!(h.send(&[ix], &[]).await, Err(anchor_error(A::AccountNotSigner)));
    let mut late_close = params.clone();
    late_close.close_ts = late_close.settlement_ts - 299;
    assert_eq!(h.create_market(late_close).await, Err(program_error(E::InvalidSchedule)));
    let mut bad_b = params.clone();
    bad_b.b = 0;
    assert_eq!(h.create_market(bad_b).await, Err(program_error(E::LiquidityOutOfRange)));
    let mut bad_prior = params.clone();
    bad_prior.prior_ppm = 1_000_000;
    assert_eq!(h.create_market(bad_prior).await, Err(program_error(E::PriorOutOfRange)));
    // Any wallet may pay for a market the authority co-signs.
    let payer = Keypair::new();
    h.airdrop(payer.pubkey()).await;
    let authority = h.authority.insecure_clone();
    let ix = client::create_market(authority.pubkey(), payer.pubkey(), h.mint.pubkey(), params.clone());
    h.send(&[ix], &[&authority, &payer]).await.unwrap();
    assert!(h.create_market(params).await.is_err(), "the same market twice");
}

#[tokio::test]
async fn trading_only_inside_the_window() {
    let (mut h, alice, _) = open_market().await;
    h.set_time(T0 - 3601);
    assert_eq!(h.buy(&alice, &ID1, Side::Yes, 2 * USDC, 0).await, Err(program_error(E::MarketNotOpen)));
    h.set_time(T0 - 3600);
    h.buy(&alice, &ID1, Side::Yes, 2 * USDC, 0).await.unwrap();
    h.set_time(T0 + 3299);
    h.buy(&alice, &ID1, Side::Yes, 2 * USDC, 0).await.unwrap();
    h.set_time(T0 + 3300);
    assert_eq!(h.buy(&alice, &ID1, Side::Yes, 2 * USDC, 0).await, Err(program_error(E::MarketClosed)));
    assert_eq!(h.sell(&alice, &ID1, Side::Yes, 1, 0).await, Err(program_error(E::MarketClosed)));
    h.set_time(T0 + 3600);
    h.resolve(&ID1, -5).await.unwrap();
    h.set_time(T0);
    assert_eq!(h.buy(&alice, &ID1, Side::Yes, 2 * USDC, 0).await, Err(program_error(E::MarketClosed)));
    assert_eq!(h.sell(&alice, &ID1, Side::Yes, 1, 0).await, Err(program_error(E::MarketClosed)));

    // A voided market refuses trades too. The oracle may void before settlement (the venue
    // changed the interval and the settlement time no longer exists): trading stops at once.
    h.create_market(Harness::market_params(2, 100 * USDC, 500_000)).await.unwrap();
    let id2 = [2u8; 16];
    h.buy(&alice, &id2, Side::No, 2 * USDC, 0).await.unwrap();
    h.void(&id2).await.unwrap();
    assert_eq!(h.market(&id2).await.status, MarketStatus::Voided);
    assert_eq!(h.buy(&alice, &id2, Side::No, 2 * USDC, 0).await, Err(program_error(E::MarketClosed)));
    assert_eq!(h.sell(&alice, &id2, Side::No, 1, 0).await, Err(program_error(E::MarketClosed)));
}

#[tokio::test]
async fn resolution_and_settlement_rules() {
    let (mut h, alice, bob) = open_market().await;
    h.buy(&alice, &ID1, Side::Yes, 20 * USDC, 0).await.unwrap();
    h.buy(&bob, &ID1, Side::No, 30 * USDC, 0).await.unwrap();
    assert_eq!(h.settle(&ID1, &alice.pubkey()).await, Err(program_error(E::NotFinalized)));
    h.set_time(T0 + 3599);
    assert_eq!(h.resolve(&ID1, 1).await, Err(program_error(E::TooEarly)));
    h.set_time(T0 + 3600);
    let stranger = Keypair::new();
    h.airdrop(stranger.pubkey()).await;
    let ix = client::resolve_market(stranger.pubkey(), &ID1, 1);
    assert_eq!(h.send(&[ix], &[&stranger]).await, Err(program_error(E::NotOracle)));
    // A zero rate is not positive: NO wins.
    h.resolve(&ID1, 0).await.unwrap();
    assert_eq!(h.market(&ID1).await.outcome, Outcome::No);
    assert_eq!(h.resolve(&ID1, 1).await, Err(program_error(E::AlreadyFinalized)));
    assert_eq!(h.void(&ID1).await, Err(program_error(E::AlreadyFinalized)));

    let authority = h.authority.insecure_clone();
    assert_eq!(h.send(&[client::close_market(authority.pubkey(), &ID1)], &[&authority]).await, Err(program_error(E::PositionsOpen)));
    let bob_vault = client::vault_pda(&bob.pubkey());
    let before = h.balance(bob_vault).await;
    let no_shares = h.position(&ID1, &bob.pubkey()).await.no_shares;
    h.settle(&ID1, &bob.pubkey()).await.unwrap();
    assert_eq!(h.balance(bob_vault).await, before + no_shares);
    let rent_payer = bob.pubkey();
    assert_eq!(h.send(&[client::settle_position(&ID1, bob.pubkey(), rent_payer)], &[]).await, Err(anchor_error(A::AccountNotInitialized)));
    let alice_vault = client::vault_pda(&alice.pubkey());
    let before = h.balance(alice_vault).await;
    h.settle(&ID1, &alice.pubkey()).await.unwrap();
    assert_eq!(h.balance(alice_vault).await, before, "the losing side gets nothing");

    // Closing returns what is left to the treasury and closes both accounts.
    let market = h.market(&ID1).await;
    let left = h.balance(market.vault).await;
    let treasury = h.balance(client::treasury_pda()).await;
    h.send(&[client::close_market(authority.pubkey(), &ID1)], &[&authority]).await.unwrap();
    assert_eq!(h.balance(client::treasury_pda()).await, treasury + left);
    assert!(!h.exists(client::market_pda(&ID1)).await && !h.exists(market.vault).await);
}

#[tokio::test]
async fn withdrawals_move_exactly_what_the_vault_holds() {
    let (mut h, alice, _) = open_market().await;
    let dest = h.token_account(&alice.pubkey()).await;
    let vault = client::vault_pda(&alice.pubkey());
    h.send(&[client::withdraw(alice.pubkey(), alice.pubkey(), dest, 250 * USDC)], &[&alice]).await.unwrap();
    assert_eq!((h.balance(vault).await, h.balance(dest).await), (750 * USDC, 250 * USDC));
    for (amount, err) in [(750 * USDC + 1, E::InsufficientBalance), (0, E::ZeroAmount), (u64::MAX, E::InsufficientBalance)] {
        assert_eq!(h.send(&[client::withdraw(alice.pubkey(), alice.pubkey(), dest, amount)], &[&alice]).await, Err(program_error(err)));
    }
    let operator = h.operator.insecure_clone();
    h.send(&[client::withdraw(operator.pubkey(), alice.pubkey(), dest, 750 * USDC)], &[&operator]).await.unwrap();
    assert_eq!(h.balance(vault).await, 0);
}

use funding_market::events::{MarketCreated, TradeExecuted};

#[tokio::test]
async fn trades_emit_their_event_as_an_inner_instruction() {
    let mut h = Harness::new().await;
    let alice = h.trader(100 * USDC).await;
    let authority = h.authority.insecure_clone();
    let params = Harness::market_params(7, 200 * USDC, 640_000);
    let create = client::create_market(authority.pubkey(), h.payer(), h.mint.pubkey(), params.clone());
    let created: Vec<MarketCreated> =
        h.inner_instruction_data(std::slice::from_ref(&create), &[&authority]).await.iter().filter_map(|d| client::decode_event(d)).collect();
    assert_eq!(created.len(), 1);
    assert_eq!((created[0].b, created[0].yes_price + created[0].no_price), (200 * USDC, USDC));
    assert!((created[0].yes_price as i64 - 640_000).abs() <= 1);
    h.send(&[create], &[&authority]).await.unwrap();

    let id = [7u8; 16];
    let buy = client::buy_shares(alice.pubkey(), alice.pubkey(), &id, Side::No, 12 * USDC, 0);
    let events: Vec<TradeExecuted> =
        h.inner_instruction_data(std::slice::from_ref(&buy), &[&alice]).await.iter().filter_map(|d| client::decode_event(d)).collect();
    h.send(&[buy], &[&alice]).await.unwrap();
    let market = h.market(&id).await;
    let position = h.position(&id, &alice.pubkey()).await;
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!((e.market, e.wallet, e.side, e.is_buy), (client::market_pda(&id), alice.pubkey(), Side::No, true));
    assert_eq!((e.shares, e.amount, e.fee), (position.no_shares, 12 * USDC, 120_000));
    assert_eq!((e.q_yes, e.q_no, e.volume, e.trade_count), (market.q_yes, market.q_no, market.volume, 1));
    assert_eq!(e.yes_price + e.no_price, USDC);
    assert_eq!(e.vault_balance, h.balance(market.vault).await);
    assert_eq!(e.user_vault_balance, h.balance(client::vault_pda(&alice.pubkey())).await);
    // A MarketCreated payload is not mistaken for a trade.
    assert!(client::decode_event::<TradeExecuted>(&[0u8; 8]).is_none());
}

/// Random trades before a market is resolved or voided in the solvency tests: hundreds, so the
/// vault's cover is checked across many market states.
const SOLVENCY_TRADES: usize = 300;
/// Random trades before `settle_positions` pays a market: enough that its five traders hold mixed
/// positions (it compares each payout with `settle_position`'s rule, not the vault's cover).
const PAID_TOGETHER_TRADES: usize = 60;

/// `trades` random buys and sells from five traders; the market vault covers every payout after
/// each one. Returns the traders.
async fn random_trading(h: &mut Harness, seed: u64, id: &[u8; 16], trades: usize) -> Vec<Keypair> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let b = rng.random_range(20..=300) * USDC;
    let prior = rng.random_range(20_000..=980_000);
    h.create_market(Harness::market_params(id[0], b, prior)).await.unwrap();
    let mut traders = Vec::new();
    for _ in 0..5 {
        traders.push(h.trader(2_000 * USDC).await);
    }
    for _ in 0..trades {
        let t = &traders[rng.random_range(0..traders.len())];
        let side = if rng.random_bool(0.5) { Side::Yes } else { Side::No };
        let held = match h.exists(client::position_pda(&client::market_pda(id), &t.pubkey())).await {
            true => h.position(id, &t.pubkey()).await,
            false => Default::default(),
        };
        let shares = if side == Side::Yes { held.yes_shares } else { held.no_shares };
        if shares > 0 && rng.random_bool(0.4) {
            let amount = if rng.random_bool(0.3) { shares } else { rng.random_range(1..=shares) };
            h.sell(t, id, side, amount, 0).await.unwrap();
        } else {
            let amount = rng.random_range(USDC..=60 * USDC);
            match h.buy(t, id, side, amount, 0).await {
                Ok(()) | Err(Failure::Code(_)) => {}
                Err(other) => panic!("{other:?}"),
            }
        }
        let market = h.market(id).await;
        let vault = h.balance(market.vault).await;
        assert!(vault >= market.sold_yes.max(market.sold_no) + market.fees_held, "vault {vault} short");
    }
    traders
}

#[tokio::test]
async fn on_chain_solvency_resolve_pays_every_winner_exactly() {
    for seed in [11, 12] {
        let mut h = Harness::new().await;
        let id = [seed as u8; 16];
        let traders = random_trading(&mut h, seed, &id, SOLVENCY_TRADES).await;
        h.set_time(T0 + 3600);
        let yes_wins = seed % 2 == 0;
        h.resolve(&id, if yes_wins { 42 } else { -42 }).await.unwrap();
        for t in &traders {
            if !h.exists(client::position_pda(&client::market_pda(&id), &t.pubkey())).await {
                continue;
            }
            let p = h.position(&id, &t.pubkey()).await;
            let vault = client::vault_pda(&t.pubkey());
            let before = h.balance(vault).await;
            h.settle(&id, &t.pubkey()).await.unwrap();
            assert_eq!(h.balance(vault).await - before, if yes_wins { p.yes_shares } else { p.no_shares });
        }
        let market = h.market(&id).await;
        assert_eq!((market.open_positions, market.sold_yes, market.sold_no), (0, 0, 0));
        let authority = h.authority.insecure_clone();
        h.send(&[client::close_market(authority.pubkey(), &id)], &[&authority]).await.unwrap();
    }
}

#[tokio::test]
async fn on_chain_void_refunds_everyone_what_they_put_in() {
    let mut h = Harness::new().await;
    let id = [21u8; 16];
    let traders = random_trading(&mut h, 21, &id, SOLVENCY_TRADES).await;
    let market_vault = h.market(&id).await.vault;
    let vault_at_void = h.balance(market_vault).await;
    h.void(&id).await.unwrap();
    let market = h.market(&id).await;
    assert_eq!(market.refund_pool, vault_at_void.min(market.refund_claims), "the vault shares out what it holds");
    let treasury_before = h.balance(client::treasury_pda()).await;
    let mut refunded = 0;
    for t in &traders {
        let vault = client::vault_pda(&t.pubkey());
        if !h.exists(client::position_pda(&client::market_pda(&id), &t.pubkey())).await {
            continue;
        }
        let p = h.position(&id, &t.pubkey()).await;
        h.settle(&id, &t.pubkey()).await.unwrap();
        let claim = p.paid_in.saturating_sub(p.paid_out);
        let refund = (claim as u128 * market.refund_pool as u128 / market.refund_claims_at_void as u128) as u64;
        refunded += refund;
        // Whoever did not come out ahead is back to their deposit when the vault covers every
        // claim, and to its pro-rata share of it when it does not.
        let expected = 2_000 * USDC - p.paid_in + p.paid_out + refund;
        assert_eq!(h.balance(vault).await, expected, "paid in {}, out {}", p.paid_in, p.paid_out);
        if market.refund_pool == market.refund_claims_at_void {
            assert_eq!(refund, claim, "covered: refunded in full");
        }
    }
    assert_eq!(h.balance(client::treasury_pda()).await, treasury_before, "the treasury adds nothing to a refund");
    assert!(refunded <= market.refund_pool);
}

/// `settle_positions` pays a market's positions in one instruction what `settle_position` pays
/// each (a winner its shares, a void's claim pro rata), gives each position's rent back to its
/// payer, and leaves nothing open: the market closes.
#[tokio::test]
async fn settle_positions_pays_each_what_settle_position_would() {
    for (seed, rate) in [(11, Some(-42)), (12, Some(42)), (21, None)] {
        let mut h = Harness::new().await;
        let id = [seed as u8; 16];
        let traders = random_trading(&mut h, seed, &id, PAID_TOGETHER_TRADES).await;
        h.set_time(T0 + 3600);
        match rate {
            Some(rate) => h.resolve(&id, rate).await.unwrap(),
            None => h.void(&id).await.unwrap(),
        }
        let market = h.market(&id).await;
        let market_address = client::market_pda(&id);
        let (mut wallets, mut expected) = (Vec::new(), Vec::new());
        for t in &traders {
            let position_address = client::position_pda(&market_address, &t.pubkey());
            if !h.exists(position_address).await {
                continue;
            }
            let p = h.position(&id, &t.pubkey()).await;
            let payout = match rate {
                Some(rate) if rate > 0 => p.yes_shares,
                Some(_) => p.no_shares,
                None => (u128::from(p.paid_in.saturating_sub(p.paid_out)) * u128::from(market.refund_pool) / u128::from(market.refund_claims_at_void)) as u64,
            };
            let vault = client::vault_pda(&t.pubkey());
            let rent = h.lamports(position_address).await;
            expected.push((vault, h.balance(vault).await + payout, p.rent_payer, h.lamports(p.rent_payer).await + rent));
            wallets.push(t.pubkey());
        }
        assert!(wallets.len() >= 3, "seed {seed}: {} positions", wallets.len());
        h.settle_many(&id, &wallets).await.unwrap();
        for (vault, balance, rent_payer, lamports) in expected {
            assert_eq!(h.balance(vault).await, balance, "seed {seed}: paid what settle_position pays");
            assert_eq!(h.lamports(rent_payer).await, lamports, "seed {seed}: the rent goes back to its payer");
        }
        for wallet in &wallets {
            assert!(!h.exists(client::position_pda(&market_address, wallet)).await);
        }
        let market = h.market(&id).await;
        assert_eq!((market.open_positions, market.sold_yes, market.sold_no), (0, 0, 0));
        let authority = h.authority.insecure_clone();
        h.send(&[client::close_market(authority.pubkey(), &id)], &[&authority]).await.unwrap();
    }
}

/// What `settle_position` refuses, `settle_positions` refuses for any position in its list, with
/// the same error, and a refused list pays no one.
#[tokio::test]
async fn settle_positions_refuses_substitutes_and_pays_all_or_none() {
    let (mut h, alice, bob) = open_market().await;
    let id2 = [2u8; 16];
    h.create_market(Harness::market_params(2, 50 * USDC, 300_000)).await.unwrap();
    h.buy(&alice, &ID1, Side::Yes, 2 * USDC, 0).await.unwrap();
    h.buy(&bob, &ID1, Side::Yes, 3 * USDC, 0).await.unwrap();
    h.buy(&bob, &id2, Side::Yes, 2 * USDC, 0).await.unwrap();
    // The buyer paid each position's rent.
    let (a, b) = ((alice.pubkey(), alice.pubkey()), (bob.pubkey(), bob.pubkey()));
    assert_eq!(h.settle_many(&ID1, &[alice.pubkey()]).await, Err(program_error(E::NotFinalized)));
    h.set_time(T0 + 3600);
    h.resolve(&ID1, 1).await.unwrap();
    h.resolve(&id2, 1).await.unwrap();

    // Accounts 0-4 are the instruction's own; each position's triple follows.
    let mut ix = client::settle_positions(&ID1, &[b]);
    ix.accounts[5].pubkey = client::position_pda(&client::market_pda(&id2), &bob.pubkey()); // another market's
    assert_eq!(h.send(&[ix], &[]).await, Err(anchor_error(A::ConstraintSeeds)));
    let mut ix = client::settle_positions(&ID1, &[a]);
    ix.accounts[6].pubkey = client::vault_pda(&bob.pubkey()); // bob's vault takes alice's payout
    assert_eq!(h.send(&[ix], &[]).await, Err(anchor_error(A::ConstraintSeeds)));
    let ix = client::settle_positions(&ID1, &[(alice.pubkey(), bob.pubkey())]); // bob did not pay alice's rent
    assert_eq!(h.send(&[ix], &[]).await, Err(anchor_error(A::ConstraintAddress)));
    let mut ix = client::settle_positions(&ID1, &[a]);
    ix.accounts[5].is_writable = false;
    assert_eq!(h.send(&[ix], &[]).await, Err(anchor_error(A::AccountNotMutable)));
    let mut ix = client::settle_positions(&ID1, &[a]);
    ix.accounts.pop(); // an incomplete triple
    assert_eq!(h.send(&[ix], &[]).await, Err(anchor_error(A::AccountNotEnoughKeys)));
    assert_eq!(h.send(&[client::settle_positions(&ID1, &[])], &[]).await, Err(anchor_error(A::AccountNotEnoughKeys)));
    // Listed twice: the second finds the position closed by the first.
    assert_eq!(h.send(&[client::settle_positions(&ID1, &[a, a])], &[]).await, Err(anchor_error(A::AccountNotInitialized)));

    // Bob's payout comes first in the list; alice's vault is substituted after it: no one is paid.
    let bob_vault = client::vault_pda(&bob.pubkey());
    let before = h.balance(bob_vault).await;
    let mut ix = client::settle_positions(&ID1, &[b, a]);
    ix.accounts[9].pubkey = bob_vault;
    assert_eq!(h.send(&[ix], &[]).await, Err(anchor_error(A::ConstraintSeeds)));
    assert_eq!(h.balance(bob_vault).await, before);
    assert_eq!(h.market(&ID1).await.open_positions, 2);

    let bob_shares = h.position(&ID1, &bob.pubkey()).await.yes_shares;
    h.settle_many(&ID1, &[bob.pubkey(), alice.pubkey()]).await.unwrap();
    assert_eq!(h.balance(bob_vault).await, before + bob_shares);
    assert_eq!(h.market(&ID1).await.open_positions, 0);
    assert_eq!(h.market(&id2).await.open_positions, 1, "the other market's position is untouched");
}

/// The compute-unit limit `client::settle_positions_units` gives covers the most positions a
/// transaction carries (twelve, their rent paid by the operator). On the SBF binary that is the
/// runtime's real meter: a limit below what the instruction takes fails the transaction.
#[tokio::test]
async fn settle_positions_fits_its_compute_budget() {
    let (mut h, _, _) = open_market().await;
    let operator = h.operator.insecure_clone();
    let mut wallets = Vec::new();
    for i in 0..12 {
        let trader = h.trader(100 * USDC).await;
        let side = if i % 3 == 0 { Side::No } else { Side::Yes };
        h.send(&[client::buy_shares(operator.pubkey(), trader.pubkey(), &ID1, side, (5 + i) * USDC, 0)], &[&operator]).await.unwrap();
        wallets.push(trader.pubkey());
    }
    h.set_time(T0 + 3600);
    h.resolve(&ID1, 7).await.unwrap();
    h.settle_many(&ID1, &wallets).await.unwrap();
    println!("settle_positions of {} positions: {} units of {}", wallets.len(), h.units, client::settle_positions_units(wallets.len()));
    assert_eq!(h.market(&ID1).await.open_positions, 0);
}

/// The void-refund game (docs/architecture.md, "Voids"): A buys the cheap side, B buys it after (pushing it
/// up), A sells at a profit; the next cycle does the same on the other side; then the market is
/// voided. Refunding B everything it paid would leave A's profit to the treasury. Under the rule
/// refunds come from the market vault alone — pro rata when it cannot cover every claim — so the
/// treasury pays nothing beyond the subsidy it put in at creation, and B gets the vault's whole
/// content (A, ahead, claims nothing).
#[tokio::test]
async fn a_void_the_market_cannot_cover_is_shared_pro_rata_and_never_draws_on_the_treasury() {
    let mut h = Harness::new().await;
    let a = h.trader(5_000 * USDC).await;
    let b = h.trader(5_000 * USDC).await;
    let treasury_at_start = h.balance(client::treasury_pda()).await;
    h.create_market(Harness::market_params(9, 20 * USDC, 500_000)).await.unwrap();
    let id = [9u8; 16];
    let subsidy = h.market(&id).await.subsidy;
    for cycle in 0..6 {
        let side = if cycle % 2 == 0 { Side::Yes } else { Side::No };
        h.buy(&a, &id, side, 60 * USDC, 0).await.unwrap();
        h.buy(&b, &id, side, 60 * USDC, 0).await.unwrap();
        let p = h.position(&id, &a.pubkey()).await;
        h.sell(&a, &id, side, if side == Side::Yes { p.yes_shares } else { p.no_shares }, 0).await.unwrap();
    }
    let (pa, pb) = (h.position(&id, &a.pubkey()).await, h.position(&id, &b.pubkey()).await);
    assert!(pa.paid_out > pa.paid_in, "A came out ahead: in {}, out {}", pa.paid_in, pa.paid_out);
    let market_vault = h.market(&id).await.vault;
    let held = h.balance(market_vault).await;
    let owed = pb.paid_in - pb.paid_out;
    assert!(owed > held, "the market holds {held} but B claims {owed}");
    assert_eq!(h.market(&id).await.refund_claims, owed, "A claims nothing, B its net payment");

    h.void(&id).await.unwrap();
    h.settle(&id, &b.pubkey()).await.unwrap();
    h.settle(&id, &a.pubkey()).await.unwrap();
    assert_eq!(h.balance(client::vault_pda(&b.pubkey())).await, 5_000 * USDC - owed + held, "B gets everything the market holds");
    assert_eq!(h.balance(client::vault_pda(&a.pubkey())).await, 5_000 * USDC + pa.paid_out - pa.paid_in, "A keeps its profit");
    assert_eq!(h.balance(market_vault).await, 0);
    let authority = h.authority.insecure_clone();
    h.send(&[client::close_market(authority.pubkey(), &id)], &[&authority]).await.unwrap();
    assert_eq!(h.balance(client::treasury_pda()).await, treasury_at_start - subsidy, "the treasury lost its subsidy and nothing more");
    // Together A and B took out exactly what the subsidy put in.
    let (a_end, b_end) = (h.balance(client::vault_pda(&a.pubkey())).await, h.balance(client::vault_pda(&b.pubkey())).await);
    assert_eq!(a_end + b_end, 10_000 * USDC + subsidy);
}
