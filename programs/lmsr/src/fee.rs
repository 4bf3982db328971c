//! The trading fee: charged on top of the amount a trader spends, rounded up.

use crate::LmsrError;

/// The protocol fee in basis points: 1 % (the interface contract's trading terms).
pub const FEE_BPS: u16 = 100;

/// Fee in micro-USDC on a trade of `amount` micro-USDC at `fee_bps` basis points, rounded up
/// (the trader is debited `amount + fee`). Never overflows: the product is taken in u128.
pub fn fee(amount: u64, fee_bps: u16) -> Result<u64, LmsrError> {
    if fee_bps > 10_000 {
        return Err(LmsrError::FeeOutOfRange);
    }
    Ok((amount as u128 * fee_bps as u128).div_ceil(10_000) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_percent_rounded_up() {
        assert_eq!(fee(1_000_000, FEE_BPS), Ok(10_000));
        assert_eq!(fee(1_000_001, FEE_BPS), Ok(10_001));
        assert_eq!(fee(99, FEE_BPS), Ok(1));
        assert_eq!(fee(0, FEE_BPS), Ok(0));
        assert_eq!(fee(u64::MAX, 10_000), Ok(u64::MAX));
        assert_eq!(fee(1, 10_001), Err(LmsrError::FeeOutOfRange));
    }
}
