//! Decimal strings at the API edge. Inside, every amount is an integer in millionths
//! (micro-USDC, micro-shares, ppm); these functions are the only place they become text, and the
//! only place text becomes amounts.

use std::fmt::Write;

/// `1_500_000` → `"1.500000"` (six places, as the contract shows USDC, shares and prices).
pub fn micros(value: i64) -> String {
    places(value as i128, 6, 6)
}

/// Millionths shown with fewer places, rounded half up: ppm → `"0.6400"` for four places.
pub fn ppm(value: i64, shown: u32) -> String {
    places(value as i128, 6, shown)
}

/// `value` has `scale` decimals; shows `shown` ≤ `scale` of them, rounding half away from zero.
pub fn places(value: i128, scale: u32, shown: u32) -> String {
    let drop = 10i128.pow(scale - shown);
    let rounded = (value.abs() + drop / 2) / drop;
    let unit = 10i128.pow(shown);
    let mut out = String::new();
    if value < 0 && rounded != 0 {
        out.push('-');
    }
    write!(out, "{}", rounded / unit).unwrap();
    if shown > 0 {
        write!(out, ".{:0width$}", rounded % unit, width = shown as usize).unwrap();
    }
    out
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    #[error("must be a decimal number such as 12.5")]
    NotADecimal,
    #[error("must be positive")]
    NotPositive,
    #[error("has more than 6 decimal places")]
    TooPrecise,
    #[error("is too large")]
    TooLarge,
}

/// Parses a positive USDC (or share) amount with at most six decimals into millionths.
pub fn parse_micros(s: &str) -> Result<u64, AmountError> {
    let s = s.trim();
    if s.starts_with('-') {
        return Err(AmountError::NotPositive);
    }
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() && frac.is_empty() || !digits(int) || !digits(frac) || s.starts_with('.') && frac.is_empty() {
        return Err(AmountError::NotADecimal);
    }
    if frac.len() > 6 {
        return Err(AmountError::TooPrecise);
    }
    let whole: u64 = if int.is_empty() { 0 } else { int.parse().map_err(|_| AmountError::TooLarge)? };
    let frac: u64 = format!("{frac:0<6}").parse().map_err(|_| AmountError::NotADecimal)?;
    let value = whole.checked_mul(1_000_000).and_then(|w| w.checked_add(frac)).ok_or(AmountError::TooLarge)?;
    if value == 0 {
        return Err(AmountError::NotPositive);
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(micros(1_500_000), "1.500000");
        assert_eq!(micros(0), "0.000000");
        assert_eq!(micros(-42), "-0.000042");
        assert_eq!(ppm(640_049, 4), "0.6400");
        assert_eq!(ppm(640_050, 4), "0.6401");
        assert_eq!(places(6_512, 2, 2), "65.12");
        assert_eq!(places(-4, 6, 2), "0.00");
    }

    #[test]
    fn parses() {
        assert_eq!(parse_micros("12.5"), Ok(12_500_000));
        assert_eq!(parse_micros("1"), Ok(1_000_000));
        assert_eq!(parse_micros("0.000001"), Ok(1));
        assert_eq!(parse_micros(".5"), Ok(500_000));
        assert_eq!(parse_micros("1.0000001"), Err(AmountError::TooPrecise));
        assert_eq!(parse_micros("-1"), Err(AmountError::NotPositive));
        assert_eq!(parse_micros("0"), Err(AmountError::NotPositive));
        assert_eq!(parse_micros("0.000000"), Err(AmountError::NotPositive));
        for bad in ["", ".", "abc", "1e3", "1,5", "NaN", " 1 2", "+1"] {
            assert_eq!(parse_micros(bad), Err(AmountError::NotADecimal), "{bad}");
        }
        assert_eq!(parse_micros("99999999999999999"), Err(AmountError::TooLarge));
    }
}
