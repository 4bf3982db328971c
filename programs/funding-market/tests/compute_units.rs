//! Compute units of the LMSR math on a real SBF VM: loads `lmsr_sbf_bench.so` (built by
//! `scripts/bench-cu.sh` with nightly + sbpf-linker) into solana-program-test and reads the
//! units each operation consumed in simulation, minus a parse-only baseline. A benchmark, not a
//! test: ignored unless run by that script.

use anchor_lang::prelude::Pubkey;
use anchor_lang::solana_program::instruction::Instruction;
use solana_program_test::ProgramTest;
use solana_signer::Signer;
use solana_transaction::Transaction;

const USDC: u64 = 1_000_000;

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
    for (label, b, q_yes, q_no) in [("b=100, at 0.5", 100 * USDC, 0, 0), ("b=100, skewed", 100 * USDC, 180 * USDC, 95 * USDC), ("b=200, far skew", 200 * USDC, 5_000 * USDC, 0)] {
        let buy = units(run(1, b, q_yes, q_no, 25 * USDC)).await - baseline;
        let sell = units(run(2, b, q_yes.max(40 * USDC), q_no, 40 * USDC)).await - baseline;
        let price = units(run(3, b, q_yes, q_no, 0)).await - baseline;
        println!("{label:16}  buy {buy:>6} CU   sell {sell:>6} CU   price {price:>6} CU");
    }
}
