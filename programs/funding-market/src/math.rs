//! Checked arithmetic for the program's counters and amounts (as Drift's `SafeMath`): every
//! addition and subtraction on account state either fits or fails the instruction with
//! `Overflow`, never wraps and never panics.

use crate::error::FundingMarketError;

pub trait SafeMath: Sized {
    fn safe_add(self, other: Self) -> Result<Self, FundingMarketError>;
    fn safe_sub(self, other: Self) -> Result<Self, FundingMarketError>;
}

macro_rules! safe_math {
    ($($t:ty),*) => {$(
        impl SafeMath for $t {
            fn safe_add(self, other: $t) -> Result<$t, FundingMarketError> {
                self.checked_add(other).ok_or(FundingMarketError::Overflow)
            }

            fn safe_sub(self, other: $t) -> Result<$t, FundingMarketError> {
                self.checked_sub(other).ok_or(FundingMarketError::Overflow)
            }
        }
    )*};
}

safe_math!(u32, u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_or_overflows() {
        assert!(matches!(2u64.safe_add(3), Ok(5)));
        assert!(matches!(u64::MAX.safe_add(1), Err(FundingMarketError::Overflow)));
        assert!(matches!(0u32.safe_sub(1), Err(FundingMarketError::Overflow)));
        assert!(matches!(7u32.safe_sub(7), Ok(0)));
    }
}
