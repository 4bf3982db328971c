//! Compute units on a real SBF VM, two benchmarks run by `scripts/bench-cu.sh` (ignored
//! otherwise): every instruction of the program's SBF binary (`scripts/build-sbf.sh`) as it
//! lands, and the LMSR math alone (`lmsr_sbf_bench.so`, nightly + sbpf-linker), read in
//! simulation minus a parse-only baseline.

mod harness;

use funding_market::client;
use funding_market::state::Side;
use harness::{Harness, T0};

use anchor_lang::prelude::Pubkey;
use anchor_lang::solana_program::instruction::Instruction;
use solana_program_test::ProgramTest;
use solana_signer::Signer;
use solana_transaction::Transaction;

const USDC: u64 = 1_000_000;

/// Every instruction's units, whole (its CPIs and event self-invocations included), on the path
/// a market's life takes.
#[tokio::test]
#[ignore = "needs the SBF build: scripts/bench-cu.sh"]
async fn program_compute_units() {
    assert!(std::env::var_os("SBF_OUT_DIR").is_some(), "SBF_OUT_DIR names the directory holding funding_market.so");
    let mut table = Vec::new();
    let mut h = Harness::deployed().await;
    let deployer = h.deployer.insecure_clone();
    h.send(&[client::initialize(h.payer(), deployer.pubkey(), h.mint.pubkey(), h.params())], &[&deployer]).await.unwrap();
    table.push(("initialize", h.units));
    h.mint_to(client::treasury_pda(), 1_000_000 * USDC).await;
    for k in [h.authority.pubkey(), h.operator.pubkey(), h.oracle.pubkey()] {
        h.airdrop(k).await;
    }

    let alice = solana_keypair::Keypair::new();
    h.airdrop(alice.pubkey()).await;
    h.send(&[client::create_user(h.payer(), alice.pubkey(), h.mint.pubkey())], &[]).await.unwrap();
    table.push(("create_user", h.units));
    h.mint_to(client::deposit_pda(&alice.pubkey()), 500 * USDC).await;
    h.send(&[client::sweep_deposit(alice.pubkey())], &[]).await.unwrap();
    table.push(("sweep_deposit", h.units));
    let id = [1u8; 16];
    h.create_market(Harness::market_params(1, 100 * USDC, 500_000)).await.unwrap();
    table.push(("create_market", h.units));
    h.buy(&alice, &id, Side::Yes, 10 * USDC, 0).await.unwrap();
    table.push(("buy_shares (opens the position)", h.units));
    h.buy(&alice, &id, Side::Yes, 10 * USDC, 0).await.unwrap();
    table.push(("buy_shares", h.units));
    h.buy(&alice, &id, Side::No, 25 * USDC, 0).await.unwrap();
    table.push(("buy_shares (the other side)", h.units));
    let shares = h.position(&id, &alice.pubkey()).await.yes_shares / 2;
    h.sell(&alice, &id, Side::Yes, shares, 0).await.unwrap();
    table.push(("sell_shares", h.units));
    h.set_time(T0 + 3600);
    h.resolve(&id, 150_000_000).await.unwrap();
    table.push(("resolve_market", h.units));
    h.settle(&id, &alice.pubkey()).await.unwrap();
    table.push(("settle_position", h.units));
    let authority = h.authority.insecure_clone();
    h.send(&[client::close_market(authority.pubkey(), &id)], &[&authority]).await.unwrap();
    table.push(("close_market", h.units));
    let destination = h.token_account(&alice.pubkey()).await;
    h.send(&[client::withdraw(alice.pubkey(), alice.pubkey(), destination, 100 * USDC)], &[&alice]).await.unwrap();
    table.push(("withdraw", h.units));

    let id = [2u8; 16];
    h.set_time(T0);
    h.create_market(Harness::market_params(2, 100 * USDC, 500_000)).await.unwrap();
    h.buy(&alice, &id, Side::No, 10 * USDC, 0).await.unwrap();
    h.set_time(T0 + 2 * 3600);
    h.void(&id).await.unwrap();
    table.push(("void_market", h.units));
    h.settle(&id, &alice.pubkey()).await.unwrap();
    table.push(("settle_position (a void's refund)", h.units));

    // Ten positions of one round (the crank's case: the operator traded, and paid the rents).
    let id = [3u8; 16];
    h.set_time(T0);
    h.create_market(Harness::market_params(3, 100 * USDC, 500_000)).await.unwrap();
    let operator = h.operator.insecure_clone();
    let mut wallets = Vec::new();
    for i in 0..11 {
        let trader = h.trader(100 * USDC).await;
        let side = if i % 3 == 0 { Side::No } else { Side::Yes };
        h.send(&[client::buy_shares(operator.pubkey(), trader.pubkey(), &id, side, 5 * USDC, 0)], &[&operator]).await.unwrap();
        wallets.push(trader.pubkey());
    }
    h.set_time(T0 + 3600);
    h.resolve(&id, 1).await.unwrap();
    h.settle_many(&id, &wallets[..1]).await.unwrap();
    table.push(("settle_positions (1 position)", h.units));
    h.settle_many(&id, &wallets[1..]).await.unwrap();
    table.push(("settle_positions (10 positions)", h.units));

    println!("| instruction | compute units |\n|---|---|");
    for (instruction, units) in table {
        assert!(units > 0, "{instruction}: no units; is the SBF binary what ran?");
        println!("| {instruction} | {units} |");
    }
}

#[tokio::test]
#[ignore = "needs the SBF build: scripts/bench-cu.sh"]
async fn lmsr_compute_units() {
    let id = Pubkey::new_unique();
    let mut pt = ProgramTest::default();
    pt.prefer_bpf(true);
    pt.add_program("lmsr_sbf_bench", id, None);
    let ctx = pt.start_with_context().await;

    let run = |op: u8, b: u64, q_yes: u64, q_no: u64, x: u64| {
        let mut data = vec![op];
        for v in [b, q_yes, q_no, x] {
            data.extend_from_slice(&v.to_le_bytes());
        }
        let ix = Instruction { program_id: id, accounts: vec![], data };
        Transaction::new_signed_with_payer(&[ix], Some(&ctx.payer.pubkey()), &[&ctx.payer], ctx.last_blockhash)
    };
    let units = |tx| {
        let client = ctx.banks_client.clone();
        async move {
            let sim = client.simulate_transaction(tx).await.unwrap();
            assert_eq!(sim.result, Some(Ok(())), "{:?}", sim.simulation_details.as_ref().map(|d| &d.logs));
            sim.simulation_details.unwrap().units_consumed
        }
    };
    let baseline = units(run(0, 100 * USDC, 0, 0, 0)).await;
    println!("baseline (entry + parse): {baseline} CU");
    for (label, b, q_yes, q_no) in
        [("b=100, at 0.5", 100 * USDC, 0, 0), ("b=100, skewed", 100 * USDC, 180 * USDC, 95 * USDC), ("b=200, far skew", 200 * USDC, 5_000 * USDC, 0)]
    {
        let buy = units(run(1, b, q_yes, q_no, 25 * USDC)).await - baseline;
        let sell = units(run(2, b, q_yes.max(40 * USDC), q_no, 40 * USDC)).await - baseline;
        let price = units(run(3, b, q_yes, q_no, 0)).await - baseline;
        println!("{label:16}  buy {buy:>6} CU   sell {sell:>6} CU   price {price:>6} CU");
    }
}
