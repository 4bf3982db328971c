//! Funding rates as exact integers: the sign of a rate decides a market's outcome, so rates are
//! never floats. Unit: 1e-12 ("pico"), the unit the program stores `actual_rate` in.

use std::fmt;

/// A funding rate in units of 1e-12 (0.0001 = 1e-4 = `FundingRate(100_000_000)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FundingRate(pub i64);

const DIGITS: u32 = 12;

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a funding rate: {0:?}")]
pub struct RateParseError(pub String);

impl FundingRate {
    /// Parses the decimal strings exchanges send ("0.00038246", "-0.0375", "1.25e-5").
    /// Digits beyond 1e-12 round away from zero, so a tiny positive rate stays positive.
    pub fn parse(s: &str) -> Result<FundingRate, RateParseError> {
        let err = || RateParseError(s.to_owned());
        let s = s.trim();
        let (mantissa, exponent) = match s.find(['e', 'E']) {
            Some(i) => (&s[..i], s[i + 1..].parse::<i32>().map_err(|_| err())?),
            None => (s, 0),
        };
        let (negative, digits) = match mantissa.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, mantissa.strip_prefix('+').unwrap_or(mantissa)),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        if int.is_empty() && frac.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        // value = [int frac] · 10^(exponent - frac.len()), in units of 1e-12. Zero is zero at any
        // exponent; otherwise an i64 holds at most 19 digits, so a larger scale is refused before
        // any digit is written (an exponent of 999999999 must not build a billion zeros).
        let all = format!("{int}{frac}");
        let all = all.trim_start_matches('0');
        if all.is_empty() {
            return Ok(FundingRate(0));
        }
        let scale = i64::from(exponent) - frac.len() as i64 + i64::from(DIGITS);
        let (kept, dropped) = if scale >= 0 {
            if all.len() as i64 + scale > 19 {
                return Err(err());
            }
            (format!("{all}{}", "0".repeat(scale as usize)), "")
        } else {
            let cut = all.len().saturating_sub(usize::try_from(-scale).unwrap_or(usize::MAX));
            (all[..cut].to_owned(), &all[cut..])
        };
        let mut magnitude: i64 = if kept.is_empty() { 0 } else { kept.parse().map_err(|_| err())? };
        if dropped.bytes().any(|b| b != b'0') {
            magnitude = magnitude.checked_add(1).ok_or_else(err)?;
        }
        Ok(FundingRate(if negative { -magnitude } else { magnitude }))
    }

    pub fn is_positive(self) -> bool {
        self.0 > 0
    }
}

/// A rate shown with eight decimals (rounded half away from zero): for statistics.
pub fn rate_8(rate: FundingRate) -> String {
    super::money::places(rate.0 as i128, 12, 8)
}

/// A settled rate shown exactly: twelve decimals, trailing zeros trimmed down to eight, so a
/// tiny negative rate still reads negative.
pub fn rate_exact(rate: FundingRate) -> String {
    let full = super::money::places(rate.0 as i128, 12, 12);
    let keep = full.len() - full.bytes().rev().take(4).take_while(|b| *b == b'0').count();
    full[..keep].to_owned()
}

impl fmt::Display for FundingRate {
    /// Plain decimal with 12 places ("0.000382460000").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let m = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:012}", m / 10u64.pow(DIGITS), m % 10u64.pow(DIGITS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> i64 {
        FundingRate::parse(s).unwrap().0
    }

    #[test]
    fn parses_exchange_formats_exactly() {
        assert_eq!(p("0.00038246"), 382_460_000);
        assert_eq!(p("-0.03750000"), -37_500_000_000);
        assert_eq!(p("0.0001097338203338"), 109_733_821); // OKX's 16 digits, rounded away from 0
        assert_eq!(p("1.25e-5"), 12_500_000);
        assert_eq!(p("-1.25E-5"), -12_500_000);
        assert_eq!(p("0"), 0);
        assert_eq!(p("0.000000000000001"), 1, "a tiny positive rate stays positive");
        assert_eq!(p("-1e-15"), -1);
        assert_eq!(p(".5"), 500_000_000_000);
        assert_eq!(p("+0.01"), 10_000_000_000);
        // Exponents at the ends of i32: zero stays zero, a tiny value rounds away from zero, a
        // huge one is refused, and none of them allocates more than the input.
        assert_eq!(p("0e999999999"), 0);
        assert_eq!(p("-0.000e2147483647"), 0);
        assert_eq!(p("1e-2147483648"), 1);
        assert_eq!(p("-1e-2147483648"), -1);
        assert_eq!(p("1e6"), 1_000_000_000_000_000_000);
        for bad in ["", "-", "abc", "1.2.3", "0x10", "1e", "--1", "1e99", "1e999999999", "1e2147483647", "1e7", "1e2147483648"] {
            assert!(FundingRate::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(FundingRate(382_460_000).to_string(), "0.000382460000");
        assert_eq!(FundingRate(-37_500_000_000).to_string(), "-0.037500000000");
    }
}
