//! The oracle's consensus rule: at least two independent sources that agree on a
//! round's settled rate to within 1e-8, and on its outcome, settle the round. Pure: the worker
//! (`services::oracle`) gathers the readings, this decides.
//!
//! Precision: rates are integers in 1e-12 (`FundingRate`); 1e-8 is [`AGREEMENT`] = 10,000 units.
//! Outcome: YES iff the rate is > 0; exactly 0 is NO (a rate of zero is not positive funding).

use super::rate::FundingRate;

/// Two readings agree when they differ by at most 1e-8 (in 1e-12 units).
pub const AGREEMENT: i64 = 10_000;

/// Readings that must agree.
pub const QUORUM: usize = 2;

/// What a round's readings say so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consensus {
    /// A quorum agrees: the rate recorded is the first (in source order) reading of the largest
    /// agreeing group, so the same readings always give the same rate.
    Agreed { rate: FundingRate, supporters: usize },
    /// No quorum (yet): too few readings, or readings that disagree.
    Pending,
    /// Two equally large groups that each reach the quorum disagree on the outcome: more readings
    /// may break the tie; at the deadline the round is void.
    Conflict,
}

/// Whether two readings agree: within [`AGREEMENT`] and on the same side of the outcome (a pair
/// straddling zero, 0 and 5e-9 say, decide different outcomes and so do not agree).
pub fn agree(a: FundingRate, b: FundingRate) -> bool {
    (a.0 - b.0).abs() <= AGREEMENT && a.is_positive() == b.is_positive()
}

/// The consensus of `readings` (one per source that answered, in source order).
pub fn consensus(readings: &[FundingRate]) -> Consensus {
    // For each reading, how many readings (itself included) agree with it. Agreement is not
    // transitive (a chain of readings 1e-8 apart), so each reading is judged with its own group.
    let support: Vec<usize> = readings.iter().map(|r| readings.iter().filter(|o| agree(*r, **o)).count()).collect();
    let Some(&best) = support.iter().max().filter(|best| **best >= QUORUM) else { return Consensus::Pending };
    let first = support.iter().position(|s| *s == best).expect("the maximum is one of them");
    let rate = readings[first];
    let rival = readings.iter().zip(&support).any(|(r, s)| *s == best && r.is_positive() != rate.is_positive());
    if rival { Consensus::Conflict } else { Consensus::Agreed { rate, supporters: best } }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(values: &[i64]) -> Vec<FundingRate> {
        values.iter().map(|v| FundingRate(*v)).collect()
    }

    #[test]
    fn two_agreeing_sources_settle() {
        assert_eq!(consensus(&r(&[100_000_000, 100_000_000])), Consensus::Agreed { rate: FundingRate(100_000_000), supporters: 2 });
        // OKX's 16 digits against Binance's 8: within 1e-8.
        assert_eq!(consensus(&r(&[109_733_821, 109_730_000])), Consensus::Agreed { rate: FundingRate(109_733_821), supporters: 2 });
        // The one wrong source is outvoted.
        assert_eq!(consensus(&r(&[-5_000_000_000, 7_000_000, 7_000_000])), Consensus::Agreed { rate: FundingRate(7_000_000), supporters: 2 });
    }

    #[test]
    fn agreement_is_to_one_e_minus_eight_inclusive() {
        assert!(agree(FundingRate(50_000), FundingRate(60_000)));
        assert!(agree(FundingRate(50_000), FundingRate(40_000)));
        assert!(!agree(FundingRate(50_000), FundingRate(60_001)));
        assert_eq!(consensus(&r(&[50_000, 60_001])), Consensus::Pending);
    }

    #[test]
    fn zero_is_no_and_never_agrees_with_a_positive_rate() {
        assert!(!FundingRate(0).is_positive());
        assert!(!agree(FundingRate(0), FundingRate(5_000)), "0 is NO, 5e-9 is YES");
        assert!(agree(FundingRate(0), FundingRate(-5_000)), "both NO");
        assert_eq!(consensus(&r(&[0, 0, 3])), Consensus::Agreed { rate: FundingRate(0), supporters: 2 });
    }

    #[test]
    fn one_reading_or_none_is_not_enough() {
        assert_eq!(consensus(&[]), Consensus::Pending);
        assert_eq!(consensus(&r(&[100])), Consensus::Pending);
        assert_eq!(consensus(&r(&[100, 90_000_000, -90_000_000])), Consensus::Pending);
    }

    #[test]
    fn equal_groups_on_opposite_outcomes_conflict() {
        assert_eq!(consensus(&r(&[10, 10, -10_000_000, -10_000_000])), Consensus::Conflict);
        // A larger group wins.
        assert_eq!(consensus(&r(&[10, 10, 10, -10_000_000, -10_000_000])), Consensus::Agreed { rate: FundingRate(10), supporters: 3 });
    }

    #[test]
    fn the_rate_is_the_first_reading_of_the_largest_group() {
        // 0, 9_000, 18_000: the middle one agrees with both ends; the ends do not agree.
        assert_eq!(consensus(&r(&[-9_000, 1, 9_000])), Consensus::Agreed { rate: FundingRate(1), supporters: 2 });
        assert_eq!(consensus(&r(&[1_000, 9_000, 17_000])), Consensus::Agreed { rate: FundingRate(9_000), supporters: 3 });
    }
}
