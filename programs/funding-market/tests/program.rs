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
