//! The opening prior of a round: fit an Ornstein–Uhlenbeck process dr = θ(μ − r)dt + σ dW to
//! the series' funding history and give P(rate at settlement > 0) from the latest predicted
//! rate.
//!
//! The fit uses the exact discretisation of OU on equally spaced observations, an AR(1)
//! r[n+1] = a + φ·r[n] + ε with φ = e^{−θΔ}, μ = a/(1−φ), Var ε = σ²(1−φ²)/(2θ), estimated by
//! least squares. Over a horizon h the rate is normal with mean μ + (r₀−μ)e^{−θh} and variance
//! σ²(1−e^{−2θh})/(2θ); the prior is Φ(mean/sd).
//!
//! `ou_confidence` = n/(n+48) × R²: how much of each next rate the fitted model explains (R² of
//! the AR(1)), discounted for short histories (half weight at 48 observations, 16 days of 8-hour
//! funding). Fewer than 10 observations, or a series without persistence (φ ≤ 0), give the
//! uninformative prior 0.5 with confidence 0.
//!
//! Floating point is deliberate here: this is an estimate, quantised to ppm before anything is
//! derived from it; the LMSR turns the ppm into money exactly, in integers.

use crate::domain::rate::FundingRate;

/// Fitted OU parameters, rates in decimal units (0.0001 = 1 bp), time in hours.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OuFit {
    pub theta: f64,
    pub mu: f64,
    pub sigma: f64,
    /// R² of the AR(1) regression.
    pub r_squared: f64,
    pub observations: usize,
}

/// The prior of one round, in millionths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prior {
    pub p_yes_ppm: u32,
    pub confidence_ppm: u32,
}

impl Prior {
    pub const UNINFORMATIVE: Prior = Prior { p_yes_ppm: 500_000, confidence_ppm: 0 };
}

fn decimal(rate: FundingRate) -> f64 {
    rate.0 as f64 * 1e-12
}

/// Fits OU to rates observed every `step_hours`, oldest first.
pub fn fit(rates: &[FundingRate], step_hours: f64) -> Option<OuFit> {
    let n = rates.len().checked_sub(1)?;
    if n < 9 {
        return None;
    }
    let r: Vec<f64> = rates.iter().map(|r| decimal(*r)).collect();
    let (x, y) = (&r[..n], &r[1..]);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (mx, my) = (mean(x), mean(y));
    let sxx: f64 = x.iter().map(|v| (v - mx).powi(2)).sum();
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let syy: f64 = y.iter().map(|v| (v - my).powi(2)).sum();
    if sxx <= 0.0 || syy <= 0.0 {
        return None;
    }
    let phi = sxy / sxx;
    if !(phi > 0.0 && phi < 1.0) {
        return None;
    }
    let a = my - phi * mx;
    let residual: f64 = x.iter().zip(y).map(|(xi, yi)| (yi - a - phi * xi).powi(2)).sum::<f64>() / (n as f64 - 2.0);
    let theta = -phi.ln() / step_hours;
    let sigma = (residual * 2.0 * theta / (1.0 - phi * phi)).sqrt();
    Some(OuFit { theta, mu: a / (1.0 - phi), sigma, r_squared: (sxy * sxy / (sxx * syy)).clamp(0.0, 1.0), observations: n + 1 })
}

/// P(rate > 0 after `horizon_hours`) starting from `latest`, and the confidence in it.
pub fn prior(history: &[FundingRate], step_hours: f64, latest: FundingRate, horizon_hours: f64) -> Prior {
    let Some(f) = fit(history, step_hours) else { return Prior::UNINFORMATIVE };
    let decay = (-f.theta * horizon_hours.max(0.0)).exp();
    let mean = f.mu + (decimal(latest) - f.mu) * decay;
    let sd = (f.sigma * f.sigma * (1.0 - decay * decay) / (2.0 * f.theta)).sqrt();
    let p = if sd > 0.0 {
        normal_cdf(mean / sd)
    } else if mean > 0.0 {
        1.0
    } else {
        0.0
    };
    let n = f.observations as f64;
    Prior { p_yes_ppm: (p * 1e6).round().clamp(0.0, 1e6) as u32, confidence_ppm: (n / (n + 48.0) * f.r_squared * 1e6).round().clamp(0.0, 1e6) as u32 }
}

/// Φ(x) by Abramowitz & Stegun 7.1.26 (error below 1.5e-7, far inside a ppm).
fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-z * z).exp();
    if x >= 0.0 { 0.5 * (1.0 + erf) } else { 0.5 * (1.0 - erf) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// An exact OU path with known parameters, observed every `step` hours.
    fn synthetic(theta: f64, mu: f64, sigma: f64, step: f64, n: usize, seed: u64) -> Vec<FundingRate> {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let phi = (-theta * step).exp();
        let sd = sigma * ((1.0 - phi * phi) / (2.0 * theta)).sqrt();
        let mut r = mu;
        (0..n)
            .map(|_| {
                // Box–Muller.
                let (u1, u2): (f64, f64) = (rng.random_range(1e-12..1.0), rng.random());
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                r = mu + (r - mu) * phi + sd * z;
                FundingRate((r * 1e12).round() as i64)
            })
            .collect()
    }

    #[test]
    fn recovers_known_parameters() {
        // 8-hour funding, mean 1 bp, half-life ~2 days, noise 0.5 bp/√h. With φ ≈ 0.89 the
        // effective sample is n(1−φ)/(1+φ) ≈ 1,150 of 20,000 observations, so SE(μ) ≈ 9e-6 and
        // the tolerances below are about 3.5 standard errors.
        let (theta, mu, sigma) = (0.0144, 1e-4, 5e-5);
        for seed in 1..=5 {
            let f = fit(&synthetic(theta, mu, sigma, 8.0, 20_000, seed), 8.0).unwrap();
            assert!((f.theta / theta - 1.0).abs() < 0.15, "theta {} (seed {seed})", f.theta);
            assert!((f.mu - mu).abs() < 3e-5, "mu {} (seed {seed})", f.mu);
            assert!((f.sigma / sigma - 1.0).abs() < 0.03, "sigma {} (seed {seed})", f.sigma);
        }
    }

    #[test]
    fn the_prior_follows_the_latest_rate_and_the_mean() {
        let history = synthetic(0.0144, 1e-4, 5e-5, 8.0, 500, 9);
        let strongly_positive = prior(&history, 8.0, FundingRate(300_000_000), 8.0);
        assert!(strongly_positive.p_yes_ppm > 900_000, "{strongly_positive:?}");
        let negative_now = prior(&history, 8.0, FundingRate(-300_000_000), 1.0);
        assert!(negative_now.p_yes_ppm < 100_000, "{negative_now:?}");
        // Far ahead, the latest rate no longer matters: the prior is P(stationary rate > 0).
        let far = prior(&history, 8.0, FundingRate(-300_000_000), 10_000.0);
        assert!((600_000..950_000).contains(&far.p_yes_ppm), "{far:?}");
        assert!(strongly_positive.confidence_ppm > 300_000 && strongly_positive.confidence_ppm <= 1_000_000);
    }

    #[test]
    fn short_or_flat_histories_are_uninformative() {
        assert_eq!(prior(&[FundingRate(100); 5], 8.0, FundingRate(100), 8.0), Prior::UNINFORMATIVE);
        assert_eq!(prior(&[FundingRate(100); 50], 8.0, FundingRate(100), 8.0), Prior::UNINFORMATIVE);
        let short = prior(&synthetic(0.0144, 1e-4, 5e-5, 8.0, 12, 3), 8.0, FundingRate(100_000_000), 8.0);
        assert!(short.confidence_ppm < 250_000, "{short:?}");
    }

    #[test]
    fn normal_cdf_is_accurate() {
        for (x, expected) in [(0.0, 0.5), (1.0, 0.841_344_746), (-1.96, 0.024_997_895), (3.0, 0.998_650_102)] {
            assert!((normal_cdf(x) - expected).abs() < 2e-7, "{x}");
        }
    }
}
