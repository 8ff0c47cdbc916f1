//! Wall-clock times read in the pipeline's `timezone` (UTC without one) and
//! turned into the API's Unix seconds, with the two awkward hours of daylight
//! saving time decided: a time the clocks skip is refused, a time they pass
//! twice is the earlier instant.

use super::format::Read;
use chrono::{NaiveDateTime, TimeZone};
use chrono_tz::Tz;

/// A local time that does not exist in the zone (the spring-forward gap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Gap(pub Tz);

/// `at` read in `zone` as Unix seconds. Decision: a time that exists twice
/// (the autumn hour) is the earlier instant, the one before the clocks go
/// back, as most tools read it; a time that never existed is refused rather
/// than moved, since either guess would store a time nobody wrote.
pub(super) fn local_seconds(at: NaiveDateTime, zone: Option<Tz>) -> Result<i64, Gap> {
    match zone {
        None => Ok(at.and_utc().timestamp()),
        Some(tz) => tz
            .from_local_datetime(&at)
            .earliest()
            .map(|d| d.timestamp())
            .ok_or(Gap(tz)),
    }
}

/// Unix seconds of what a format read.
pub(super) fn seconds(read: Read, zone: Option<Tz>) -> Result<i64, Gap> {
    match read {
        Read::Unix(t) => Ok(t),
        Read::Offset(d) => Ok(d.timestamp()),
        Read::Local { at, .. } => local_seconds(at, zone),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;
    use chrono_tz::Europe::Berlin;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap()
    }

    #[test]
    fn a_berlin_wall_clock_time_is_its_utc_instant() {
        // Winter: UTC+1; summer: UTC+2.
        assert_eq!(
            local_seconds(at("2024-02-01 01:00"), Some(Berlin)),
            Ok(1_706_745_600)
        );
        assert_eq!(
            local_seconds(at("2024-07-01 02:00"), Some(Berlin)),
            Ok(1_719_792_000)
        );
        assert_eq!(
            local_seconds(at("2024-02-01 00:00"), None),
            Ok(1_706_745_600)
        );
    }

    #[test]
    fn a_time_the_clocks_skip_is_a_gap() {
        assert_eq!(
            local_seconds(at("2025-03-30 02:30"), Some(Berlin)),
            Err(Gap(Berlin))
        );
        assert!(local_seconds(at("2025-03-30 03:00"), Some(Berlin)).is_ok());
    }

    #[test]
    fn a_time_the_clocks_pass_twice_is_the_earlier_instant() {
        // 2025-10-26 02:30 in Berlin is 00:30 UTC (summer time), then 01:30 UTC.
        let earlier = NaiveDate::from_ymd_opt(2025, 10, 26)
            .unwrap()
            .and_hms_opt(0, 30, 0)
            .unwrap()
            .and_utc()
            .timestamp();
        assert_eq!(
            local_seconds(at("2025-10-26 02:30"), Some(Berlin)),
            Ok(earlier)
        );
    }
}
