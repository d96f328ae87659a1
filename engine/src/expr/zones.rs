//! Time zones of `from_utc_timestamp` / `to_utc_timestamp`, read as Spark reads them
//! (`DateTimeUtils.getZoneId`: Java's `ZoneId.of` with its `SHORT_IDS`): a region of the tz
//! database (`Europe/Paris`, `US/Pacific`, `EST5EDT`; case matters, as in Java), a fixed offset
//! (`+08:00`, `-0530`, `GMT+1`, `UTC-03:00`, `Z`, `UTC`), or one of Java's three-letter ids
//! (`PST` is `America/Los_Angeles`, `EST` is `-05:00`). The tz database is `chrono-tz`'s.

use chrono::{DateTime, LocalResult, NaiveDateTime, Offset, TimeZone};
use chrono_tz::Tz;

/// A time zone: a fixed offset or a region whose offset changes with its rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zone {
    /// Seconds east of UTC.
    Fixed(i64),
    /// A region of the tz database.
    Region(Tz),
}

/// Java's `ZoneId.SHORT_IDS`, which Spark passes to `ZoneId.of`.
const SHORT_IDS: &[(&str, &str)] = &[
    ("ACT", "Australia/Darwin"),
    ("AET", "Australia/Sydney"),
    ("AGT", "America/Argentina/Buenos_Aires"),
    ("ART", "Africa/Cairo"),
    ("AST", "America/Anchorage"),
    ("BET", "America/Sao_Paulo"),
    ("BST", "Asia/Dhaka"),
    ("CAT", "Africa/Harare"),
    ("CNT", "America/St_Johns"),
    ("CST", "America/Chicago"),
    ("CTT", "Asia/Shanghai"),
    ("EAT", "Africa/Addis_Ababa"),
    ("ECT", "Europe/Paris"),
    ("EST", "-05:00"),
    ("HST", "-10:00"),
    ("IET", "America/Indiana/Indianapolis"),
    ("IST", "Asia/Kolkata"),
    ("JST", "Asia/Tokyo"),
    ("MIT", "Pacific/Apia"),
    ("MST", "-07:00"),
    ("NET", "Asia/Yerevan"),
    ("NST", "Pacific/Auckland"),
    ("PLT", "Asia/Karachi"),
    ("PNT", "America/Phoenix"),
    ("PRT", "America/Puerto_Rico"),
    ("PST", "America/Los_Angeles"),
    ("SST", "Pacific/Guadalcanal"),
    ("VST", "Asia/Ho_Chi_Minh"),
];

const US_PER_SEC: i64 = 1_000_000;

impl Zone {
    /// The zone a text names; `None` where Spark's INVALID_TIMEZONE would be raised.
    pub fn parse(text: &str) -> Option<Zone> {
        if text.is_empty() {
            return None;
        }
        let text = SHORT_IDS.iter().find(|(id, _)| *id == text).map_or(text, |(_, to)| to);
        if let Some(offset) = super::text::zone_offset(text) {
            return Some(Zone::Fixed(offset));
        }
        text.parse::<Tz>().ok().map(Zone::Region)
    }

    /// Seconds east of UTC at the instant `us` (µs since the epoch).
    fn offset_at(&self, us: i64) -> Option<i64> {
        match self {
            Zone::Fixed(s) => Some(*s),
            Zone::Region(tz) => {
                let utc = DateTime::from_timestamp_micros(us)?.naive_utc();
                Some(tz.offset_from_utc_datetime(&utc).fix().local_minus_utc() as i64)
            }
        }
    }

    /// `from_utc_timestamp`: the wall-clock time in this zone at the instant `us`, as a
    /// timestamp (µs); `None` outside the TIMESTAMP range.
    pub fn wall_clock_at(&self, us: i64) -> Option<i64> {
        us.checked_add(self.offset_at(us)?.checked_mul(US_PER_SEC)?)
    }

    /// `to_utc_timestamp`: the instant at which this zone's wall clock reads `us`, as Java's
    /// `ZonedDateTime.ofLocal` resolves it: in an overlap (clocks set back) the earlier instant,
    /// in a gap (clocks set forward) the time moved forward by the gap, which is the offset from
    /// before the gap applied.
    pub fn instant_at_wall_clock(&self, us: i64) -> Option<i64> {
        let offset = match self {
            Zone::Fixed(s) => *s,
            Zone::Region(tz) => {
                let local: NaiveDateTime = DateTime::from_timestamp_micros(us)?.naive_utc();
                match tz.offset_from_local_datetime(&local) {
                    LocalResult::Single(o) => o.fix().local_minus_utc() as i64,
                    LocalResult::Ambiguous(a, b) => a.fix().local_minus_utc().max(b.fix().local_minus_utc()) as i64,
                    // the offset a day earlier: before the gap (transitions are months apart)
                    LocalResult::None => self.offset_at(us.checked_sub(86_400 * US_PER_SEC)?)?,
                }
            }
        };
        us.checked_sub(offset.checked_mul(US_PER_SEC)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of Spark 4.3 (pyspark, session time zone UTC): `from_utc_timestamp` and
    /// `to_utc_timestamp` of 2024-01-15 10:00, 2024-07-01 00:00, 2024-03-10 02:30 (New York's
    /// gap), 2024-11-03 01:30 (New York's overlap) and 2024-03-31 02:30 (Paris's gap).
    #[test]
    fn zones_convert_as_spark_converts() {
        let t = |s: &str| crate::time::parse_timestamp(s).map(|t| t.0).unwrap_or_else(|e| panic!("{s}: {e}"));
        let times = [
            "2024-01-15 10:00:00",
            "2024-07-01 00:00:00",
            "2024-03-10 02:30:00",
            "2024-11-03 01:30:00",
            "2024-03-31 02:30:00",
        ];
        let cases: &[(&str, [(&str, &str); 5])] = &[
            (
                "America/New_York",
                [
                    ("2024-01-15 05:00:00", "2024-01-15 15:00:00"),
                    ("2024-06-30 20:00:00", "2024-07-01 04:00:00"),
                    ("2024-03-09 21:30:00", "2024-03-10 07:30:00"),
                    ("2024-11-02 21:30:00", "2024-11-03 05:30:00"),
                    ("2024-03-30 22:30:00", "2024-03-31 06:30:00"),
                ],
            ),
            (
                "Europe/Paris",
                [
                    ("2024-01-15 11:00:00", "2024-01-15 09:00:00"),
                    ("2024-07-01 02:00:00", "2024-06-30 22:00:00"),
                    ("2024-03-10 03:30:00", "2024-03-10 01:30:00"),
                    ("2024-11-03 02:30:00", "2024-11-03 00:30:00"),
                    ("2024-03-31 04:30:00", "2024-03-31 01:30:00"),
                ],
            ),
            (
                "-0530",
                [
                    ("2024-01-15 04:30:00", "2024-01-15 15:30:00"),
                    ("2024-06-30 18:30:00", "2024-07-01 05:30:00"),
                    ("2024-03-09 21:00:00", "2024-03-10 08:00:00"),
                    ("2024-11-02 20:00:00", "2024-11-03 07:00:00"),
                    ("2024-03-30 21:00:00", "2024-03-31 08:00:00"),
                ],
            ),
            (
                "CST",
                [
                    ("2024-01-15 04:00:00", "2024-01-15 16:00:00"),
                    ("2024-06-30 19:00:00", "2024-07-01 05:00:00"),
                    ("2024-03-09 20:30:00", "2024-03-10 08:30:00"),
                    ("2024-11-02 20:30:00", "2024-11-03 06:30:00"),
                    ("2024-03-30 21:30:00", "2024-03-31 07:30:00"),
                ],
            ),
            (
                "EST",
                [
                    ("2024-01-15 05:00:00", "2024-01-15 15:00:00"),
                    ("2024-06-30 19:00:00", "2024-07-01 05:00:00"),
                    ("2024-03-09 21:30:00", "2024-03-10 07:30:00"),
                    ("2024-11-02 20:30:00", "2024-11-03 06:30:00"),
                    ("2024-03-30 21:30:00", "2024-03-31 07:30:00"),
                ],
            ),
        ];
        for (zone, want) in cases {
            let z = Zone::parse(zone).unwrap_or_else(|| panic!("{zone}"));
            for (at, (from, to)) in times.iter().zip(want) {
                assert_eq!(z.wall_clock_at(t(at)), Some(t(from)), "from_utc_timestamp({at}, {zone})");
                assert_eq!(z.instant_at_wall_clock(t(at)), Some(t(to)), "to_utc_timestamp({at}, {zone})");
            }
        }
        for ok in ["UTC", "GMT", "Z", "+08:00", "GMT+1", "UTC-03:00", "EST5EDT", "US/Pacific", "PST", "AET", "BST"] {
            assert!(Zone::parse(ok).is_some(), "{ok}");
        }
        // Spark: INVALID_TIMEZONE (region ids are case-sensitive)
        for bad in ["america/new_york", "Nowhere/City", ""] {
            assert!(Zone::parse(bad).is_none(), "{bad}");
        }
    }
}
