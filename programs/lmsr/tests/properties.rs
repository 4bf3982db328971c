//! Properties of the market maker that need no reference: totality over all inputs, prices
//! moving the right way, symmetry, and no profit from round trips or split trades.

use lmsr::{LIQUIDITY_MAX, LIQUIDITY_MIN, Lmsr, MAX_SKEW, MICRO, Price, Side};
use proptest::prelude::*;

fn state() -> impl Strategy<Value = Lmsr> {
    (LIQUIDITY_MIN..=LIQUIDITY_MAX, 0u64..=MAX_SKEW * MICRO, 0u64..1_000_000 * MICRO, any::<bool>()).prop_map(|(b, skew_milli, base, yes_ahead)| {
        let skew = (b as u128 * skew_milli as u128 / MICRO as u128) as u64;
        let (y, n) = if yes_ahead { (base + skew, base) } else { (base, base + skew) };
        Lmsr::new(b, y, n).unwrap()
    })
}

fn side() -> impl Strategy<Value = Side> {
    prop_oneof![Just(Side::Yes), Just(Side::No)]
}

/// Amounts from 1 micro-USDC to 10^5 USDC, log-uniform.
fn amount() -> impl Strategy<Value = u64> {
    (0.0f64..(1e11f64).ln()).prop_map(|x| x.exp() as u64 + 1)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 5000, ..ProptestConfig::default() })]

    /// Outside the domain: an error. Inside: a value. Never a panic or an overflow (the crate is
    /// compiled with overflow checks in tests, so a wraparound would panic here).
    #[test]
    fn total_over_every_u64_input(b: u64, q_yes: u64, q_no: u64, x: u64, prior: u32, side in side()) {
        if let Ok(s) = Lmsr::new(b, q_yes, q_no) {
            let _ = (s.price(side), s.prices_micro(), s.subsidy());
            let _ = (s.buy(side, x), s.cost(side, x), s.sell(side, x));
        }
        let _ = Lmsr::opening(b, prior).map(|s| s.subsidy());
        let _ = lmsr::fee(x, (prior % 20_000) as u16);
    }

    #[test]
    fn prices_are_complementary(s in state()) {
        prop_assert_eq!(s.price(Side::Yes).0 + s.price(Side::No).0, Price::ONE.0);
        let (yes, no) = s.prices_micro();
        prop_assert_eq!(yes + no, MICRO);
    }

    #[test]
    fn buying_raises_the_price_and_selling_lowers_it(s in state(), side in side(), c in amount()) {
        if let Ok(fill) = s.buy(side, c)
            && fill.amount_out > 0 {
                prop_assert!(fill.after.price(side) > s.price(side));
                prop_assert!(fill.after.price(side.other()) < s.price(side.other()));
                prop_assert!(fill.after.prices_micro() >= s.prices_micro() || side == Side::No);
                prop_assert!(fill.after.prices_micro() <= s.prices_micro() || side == Side::Yes);
                let back = fill.after.sell(side, fill.amount_out).unwrap();
                prop_assert_eq!(back.after, s);
                prop_assert!(back.after.price(side) < fill.after.price(side));
            }
    }

    #[test]
    fn buy_then_sell_never_returns_more_than_was_paid(s in state(), side in side(), c in amount()) {
        if let Ok(fill) = s.buy(side, c)
            && fill.amount_out > 0 {
                let back = fill.after.sell(side, fill.amount_out).unwrap();
                prop_assert!(back.amount_out <= c, "paid {c}, got back {}", back.amount_out);
            }
    }

    /// `buy` rounds shares down and `cost` rounds USDC up, each against the trader, so quoting
    /// the shares a payment bought may come back one micro-USDC above the payment (when the
    /// exact cost lies within the safety margin of it, as on a side priced near 1e-16), never
    /// more. (That the exact cost never exceeds the payment is pinned by the reference tests.)
    #[test]
    fn cost_of_the_shares_a_payment_buys_is_the_payment(s in state(), side in side(), c in amount()) {
        if let Ok(fill) = s.buy(side, c)
            && fill.amount_out > 0 {
                prop_assert!(s.cost(side, fill.amount_out).unwrap() <= c + 1);
            }
    }

    #[test]
    fn yes_and_no_are_mirror_images(b in LIQUIDITY_MIN..=LIQUIDITY_MAX, a in 0u64..10_000 * MICRO, d in 0u64..10_000 * MICRO, c in amount()) {
        if let (Ok(s), Ok(m)) = (Lmsr::new(b, a, d), Lmsr::new(b, d, a)) {
            prop_assert_eq!(s.price(Side::Yes), m.price(Side::No));
            prop_assert_eq!(s.buy(Side::Yes, c).map(|f| f.amount_out), m.buy(Side::No, c).map(|f| f.amount_out));
            prop_assert_eq!(s.cost(Side::Yes, c), m.cost(Side::No, c));
        }
    }

    /// Splitting a purchase in two never yields more than one micro-share over buying at once:
    /// rounding cannot be farmed.
    #[test]
    fn split_purchases_gain_nothing(s in state(), side in side(), c1 in amount(), c2 in amount()) {
        if let (Ok(first), Ok(whole)) = (s.buy(side, c1), s.buy(side, c1 + c2))
            && let Ok(second) = first.after.buy(side, c2) {
                prop_assert!(first.amount_out + second.amount_out <= whole.amount_out + 1);
            }
    }
}
