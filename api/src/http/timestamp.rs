//! Times in JSON bodies as `DateTime<Utc>`'s own `Serialize` writes them — RFC 3339 in UTC
//! with `Z`, the fraction in 0, 3, 6 or 9 digits as its nanoseconds need — written into a
//! buffer of their own. chrono's formatter took most of the time of a page of thousands of
//! points (a month of a perp's crowd history); this writes the same bytes.

use chrono::{DateTime, Datelike, Timelike, Utc};
use serde::{Serialize, Serializer};

/// A UTC time, serialized as `DateTime<Utc>` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timestamp(pub DateTime<Utc>);

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let time = self.0;
        let (year, nanos) = (time.year(), time.nanosecond());
        // Years of other than four digits and leap seconds are chrono's to write.
        if !(0..=9999).contains(&year) || nanos >= 1_000_000_000 {
            return time.serialize(serializer);
        }
        // `YYYY-MM-DDTHH:MM:SS`, the fraction, `Z`.
        let mut text = *b"0000-00-00T00:00:00.000000000Z";
        digits(&mut text[0..4], year as u32);
        digits(&mut text[5..7], time.month());
        digits(&mut text[8..10], time.day());
        digits(&mut text[11..13], time.hour());
        digits(&mut text[14..16], time.minute());
        digits(&mut text[17..19], time.second());
        let places = match nanos {
            0 => 0,
            n if n % 1_000_000 == 0 => 3,
            n if n % 1_000 == 0 => 6,
            _ => 9,
        };
        let mut end = 19;
        if places > 0 {
            digits(&mut text[20..20 + places], nanos / 10u32.pow(9 - places as u32));
            end = 20 + places;
        }
        text[end] = b'Z';
        serializer.serialize_str(std::str::from_utf8(&text[..=end]).expect("ASCII digits"))
    }
}

/// Writes `value` into `out` in decimal, zero-padded to its length.
fn digits(out: &mut [u8], mut value: u32) {
    for digit in out.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn writes_what_chrono_writes() {
        // Seconds across the four-digit years and either side of them, each with no fraction and
        // with fractions of 3, 6 and 9 digits, their trailing zeros included (`.120`).
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (first, last) = (Utc.with_ymd_and_hms(-20, 1, 1, 0, 0, 0).unwrap(), Utc.with_ymd_and_hms(10_020, 12, 31, 23, 59, 59).unwrap());
        let span = (last.timestamp() - first.timestamp()) as u64;
        for i in 0..20_000 {
            let seconds = first.timestamp() + (next() % span) as i64;
            let nanos = match i % 5 {
                0 => 0,
                1 => (next() % 1_000) as u32 * 1_000_000,
                2 => (next() % 1_000_000) as u32 * 1_000,
                3 => (next() % 1_000_000_000) as u32,
                _ => 120_000_000,
            };
            let time = Utc.timestamp_opt(seconds, nanos).unwrap();
            assert_eq!(serde_json::to_string(&Timestamp(time)).unwrap(), serde_json::to_string(&time).unwrap());
        }
        // A leap second, and the ends of the four-digit years.
        let leap = chrono::NaiveDate::from_ymd_opt(2016, 12, 31).unwrap().and_hms_nano_opt(23, 59, 59, 1_500_000_000).unwrap().and_utc();
        for time in [leap, Utc.with_ymd_and_hms(0, 1, 1, 0, 0, 0).unwrap(), Utc.with_ymd_and_hms(9999, 12, 31, 23, 59, 59).unwrap()] {
            assert_eq!(serde_json::to_string(&Timestamp(time)).unwrap(), serde_json::to_string(&time).unwrap());
        }
    }
}
