//! The solvency invariant over 1,000,000 random trades: on many markets with random priors and
//! liquidity, random traders buy and sell; after every trade the market's collateral covers
//! the winning side whichever it is, and in fact covers the exact cost function C(q) to within
//! one micro-USDC (which catches a rounding in the wrong direction long before max(sold) would).

use lmsr::{Lmsr, MICRO, Side};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const TRADERS: usize = 6;

#[derive(Default, Clone, Copy)]
struct Holding {
    yes: u64,
    no: u64,
}

impl Holding {
    fn of(&mut self, side: Side) -> &mut u64 {
        match side {
            Side::Yes => &mut self.yes,
            Side::No => &mut self.no,
        }
    }
}

/// Runs `markets` markets of `trades` trades each from `seed`; returns the trades executed.
fn simulate(seed: u64, markets: usize, trades: usize) -> u64 {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut executed = 0u64;
    for _ in 0..markets {
        // b log-uniform over 1..100,000 USDC; the tier values (50, 100, 200) are inside.
        let b = (rng.random_range(0.0f64..(1e5f64).ln()).exp() * MICRO as f64) as u64;
        let prior = rng.random_range(1..MICRO as u32);
        let opening = Lmsr::opening(b, prior).unwrap();
        let mut state = opening;
        let mut vault = opening.subsidy();
        let mut sold = Holding::default();
        let mut holdings = [Holding::default(); TRADERS];

        for _ in 0..trades {
            let t = rng.random_range(0..TRADERS);
            let side = if rng.random_bool(0.5) { Side::Yes } else { Side::No };
            let held = *holdings[t].of(side);
            if held > 0 && rng.random_bool(0.4) {
                let shares = if rng.random_bool(0.3) { held } else { rng.random_range(1..=held) };
                // Refused only at the edge of the domain (a price below 4e-18; tested elsewhere).
                let Ok(fill) = state.sell(side, shares) else { continue };
                vault = vault.checked_sub(fill.amount_out).expect("market vault went short");
                *holdings[t].of(side) -= shares;
                *sold.of(side) -= shares;
                state = fill.after;
            } else {
                // Up to 20·b per trade, log-uniform from 1 micro-USDC: tiny and huge trades.
                let amount = rng.random_range(0.0f64..(20.0 * b as f64).ln()).exp() as u64 + 1;
                let Ok(fill) = state.buy(side, amount) else { continue };
                vault += amount;
                *holdings[t].of(side) += fill.amount_out;
                *sold.of(side) += fill.amount_out;
                state = fill.after;
            }
            executed += 1;
            assert!(vault >= sold.yes.max(sold.no), "insolvent: vault {vault}, sold {} / {}", sold.yes, sold.no);
            // C(q) = min(q) + (C(q) - min(q)); `subsidy` is the latter rounded up (< 1 over).
            let cost_fn = state.q(Side::Yes).min(state.q(Side::No)) + state.subsidy();
            assert!(vault + 1 >= cost_fn, "collateral {vault} below C(q) = {cost_fn}");
        }

        // Everyone sells out: the market is back at its opening state with its subsidy intact.
        // Chunks of at most b from the larger side keep every sale inside the domain.
        loop {
            let larger = if state.q(Side::Yes) >= state.q(Side::No) { Side::Yes } else { Side::No };
            let Some((side, t)) =
                [larger, larger.other()].into_iter().find_map(|side| holdings.iter().position(|h| *h.clone().of(side) > 0).map(|t| (side, t)))
            else {
                break;
            };
            let chunk = (*holdings[t].of(side)).min(b);
            let fill = state.sell(side, chunk).unwrap();
            vault = vault.checked_sub(fill.amount_out).expect("market vault went short");
            *holdings[t].of(side) -= chunk;
            state = fill.after;
        }
        assert_eq!(state, opening);
        assert!(vault + 1 >= opening.subsidy(), "round trips drained the subsidy: {vault}");
    }
    executed
}

// Four quarters so the test harness spreads the million trades over the cores.
#[test]
fn solvent_over_250k_trades_a() {
    assert!(simulate(1, 500, 520) >= 250_000);
}
#[test]
fn solvent_over_250k_trades_b() {
    assert!(simulate(2, 500, 520) >= 250_000);
}
#[test]
fn solvent_over_250k_trades_c() {
    assert!(simulate(3, 500, 520) >= 250_000);
}
#[test]
fn solvent_over_250k_trades_d() {
    assert!(simulate(4, 500, 520) >= 250_000);
}
