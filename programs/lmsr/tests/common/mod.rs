//! A 60-significant-digit reference for the LMSR, written from the textbook formulas
//! with no log-space tricks, so it checks the crate's rewriting as well as its
//! arithmetic.
#![allow(dead_code)]

use dashu_float::DBig;

pub type Real = DBig;

/// Digits carried by the reference: far beyond the 1e-18 the crate works at.
const DIGITS: usize = 60;

pub fn int(n: i128) -> Real {
    Real::from(n).with_precision(DIGITS).value()
}

pub fn uint(n: u128) -> Real {
    Real::from(n).with_precision(DIGITS).value()
}

/// n / 2^60 (the crate's fixed point).
pub fn q60(n: i128) -> Real {
    int(n) / int(1 << 60)
}

/// n / 10^36.
pub fn e36(n: u128) -> Real {
    int(n as i128) / int(1_000_000_000_000_000_000_000_000_000_000_000_000)
}

pub fn to_f64(x: &Real) -> f64 {
    x.to_string().parse().unwrap()
}

/// |a − b| / |b|, as f64 (only to report and compare against tolerances).
pub fn rel_err(a: &Real, b: &Real) -> f64 {
    let d = to_f64(&(a.clone() - b.clone()));
    (d / to_f64(b)).abs()
}

/// p_yes = 1 / (1 + e^{(q_no − q_yes)/b}).
pub fn price_yes(b: u64, q_yes: u64, q_no: u64) -> Real {
    let u = (int(q_no as i128) - int(q_yes as i128)) / int(b as i128);
    int(1) / (int(1) + u.exp())
}

/// p of `side` given (q_side, q_other).
pub fn price(b: u64, q_side: u64, q_other: u64) -> Real {
    price_yes(b, q_side, q_other)
}

/// C(q) = b·ln(e^{q_yes/b} + e^{q_no/b}).
pub fn cost_fn(b: u64, q_yes: u64, q_no: u64) -> Real {
    let bb = int(b as i128);
    let a = (int(q_yes as i128) / bb.clone()).exp();
    let n = (int(q_no as i128) / bb.clone()).exp();
    bb * (a + n).ln()
}

/// Shares bought with net amount c: Δ = b·ln((e^{c/b} − 1 + p)/p).
pub fn buy_shares(b: u64, q_side: u64, q_other: u64, c: u64) -> Real {
    let bb = int(b as i128);
    let p = price(b, q_side, q_other);
    let g = (int(c as i128) / bb.clone()).exp();
    bb * ((g - int(1) + p.clone()) / p).ln()
}

/// Cost of Δ shares: b·ln(p·e^{Δ/b} + 1 − p).
pub fn buy_cost(b: u64, q_side: u64, q_other: u64, shares: u64) -> Real {
    let bb = int(b as i128);
    let p = price(b, q_side, q_other);
    let g = (int(shares as i128) / bb.clone()).exp();
    bb * (p.clone() * g + int(1) - p).ln()
}

/// Proceeds of selling Δ shares: −b·ln(1 − p + p·e^{−Δ/b}).
pub fn sell_proceeds(b: u64, q_side: u64, q_other: u64, shares: u64) -> Real {
    let bb = int(b as i128);
    let p = price(b, q_side, q_other);
    let g = (int(-(shares as i128)) / bb.clone()).exp();
    -(bb * (int(1) - p.clone() + p * g).ln())
}
