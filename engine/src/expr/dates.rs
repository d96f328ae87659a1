//! DATE values and datetime patterns (SQL.md "time"): the text of a date (`2024-01-15`), the
//! string forms `CAST(s AS DATE)` accepts, and parsing with Spark's datetime patterns
//! (`to_timestamp(s, 'yyyy/MM/dd HH:mm')`), all in UTC (the session time zone of SQL.md).

use std::fmt::Write as _;

use super::text::{FormatPart, trim_spark};
use crate::time::{civil_from_days, days_from_civil, days_in_month};

const US_PER_DAY: i64 = 86_400_000_000;

/// Appends a date (days since 1970-01-01) as Spark writes it: `yyyy-MM-dd`.
pub fn write_date(out: &mut String, days: i32) {
    let (y, m, d) = civil_from_days(i64::from(days));
    let _ = write!(out, "{}-{m:02}-{d:02}", crate::time::Year(y)); // writing to a String cannot fail
}

/// A date as text: `yyyy-MM-dd`.
pub(crate) fn date_string(days: i32) -> String {
    let mut s = String::with_capacity(10);
    write_date(&mut s, days);
    s
}

/// The date of an instant (µs since the epoch, UTC): Spark's `CAST(ts AS DATE)`.
pub(crate) fn date_of_micros(us: i64) -> i32 {
    // |µs| / 86.4e9 fits in i32 for every i64
    us.div_euclid(US_PER_DAY) as i32
}

/// Midnight (UTC) of a date in µs: Spark's `CAST(date AS TIMESTAMP)`; `None` for a date whose
/// midnight is before the first instant a TIMESTAMP holds (Spark's `daysToMicros` overflows
/// there: the date of `Timestamp::MIN` is one such).
pub(crate) fn micros_of_day(days: i32) -> Option<i64> {
    i64::from(days).checked_mul(US_PER_DAY)
}

/// `CAST(s AS DATE)` as Spark's `stringToDate`: trimmed, `[+-]yyyy`, `yyyy-[m]m`,
/// `yyyy-[m]m-[d]d`, and `yyyy-[m]m-[d]d` followed by a space or `T` and anything
/// (`'2024-01-15T10:00'` is 2024-01-15). `None` when the text is not of these forms or the day
/// does not exist (CAST_INVALID_INPUT).
pub(crate) fn parse_cast_date(s: &str) -> Option<i32> {
    let s = trim_spark(s);
    let b = s.as_bytes();
    let mut i = 0;
    let neg = match b.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = |i: &mut usize, min: usize, max: usize| -> Option<i64> {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() && *i - start < max {
            *i += 1;
        }
        if *i - start < min {
            return None;
        }
        s[start..*i].parse().ok()
    };
    let y = digits(&mut i, 4, 7)?;
    let y = if neg { -y } else { y };
    let (mut m, mut d) = (1, 1);
    let mut segments = 1;
    if b.get(i) == Some(&b'-') {
        i += 1;
        m = digits(&mut i, 1, 2)?;
        segments = 2;
        if b.get(i) == Some(&b'-') {
            i += 1;
            d = digits(&mut i, 1, 2)?;
            segments = 3;
        }
    }
    match b.get(i) {
        None => {}
        // after a full date, a time part (or anything) may follow a space or `T`
        Some(b' ' | b'T') if segments == 3 => {}
        Some(_) => return None,
    }
    if !(1..=12).contains(&m) || d < 1 || d > i64::from(days_in_month(y, m as u32)) {
        return None;
    }
    i32::try_from(days_from_civil(y, m as u32, d as u32)).ok()
}

/// Parses `s` with a datetime pattern of [`FormatPart`]s (Spark's `yyyy`, `MM`, `dd`, `HH`,
/// `mm`, `ss`, `SSS` and literal text): each field takes exactly its width in digits (`SSS` one
/// to three, a fraction of a second as Spark parses it: `.1` is 100 ms, `.12` 120 ms), the
/// whole text must be consumed; fields not in the pattern are 1970-01-01 00:00:00. The instant
/// in µs, or `None` when the text does not match or a field is out of range (Spark's
/// CANNOT_PARSE_TIMESTAMP).
pub(crate) fn parse_with_pattern(s: &str, pattern: &[FormatPart]) -> Option<i64> {
    use super::text::{Field, MONTHS};
    let b = s.as_bytes();
    let mut i = 0;
    let (mut y, mut mo, mut d, mut h, mut mi, mut sec, mut us) = (1970i64, 1i64, 1i64, 0i64, 0i64, 0i64, 0i64);
    // a 12-hour clock's hour and whether `a` read PM
    let (mut h12, mut pm): (Option<i64>, Option<bool>) = (None, None);
    let take = |i: &mut usize, width: usize| -> Option<i64> {
        let field = b.get(*i..*i + width)?;
        if !field.iter().all(u8::is_ascii_digit) {
            return None;
        }
        *i += width;
        std::str::from_utf8(field).ok()?.parse().ok()
    };
    // one digit or more (a field of one letter), at most 9
    let digits = |i: usize| b[i.min(b.len())..].iter().take(9).take_while(|c| c.is_ascii_digit()).count().max(1);
    for p in pattern {
        match p {
            FormatPart::Year => y = take(&mut i, 4)?,
            FormatPart::Year2 => y = 2000 + take(&mut i, 2)?,
            FormatPart::Month => mo = take(&mut i, 2)?,
            FormatPart::Day => d = take(&mut i, 2)?,
            FormatPart::Hour => h = take(&mut i, 2)?,
            FormatPart::Hour12 => h12 = Some(take(&mut i, 2)?),
            FormatPart::Minute => mi = take(&mut i, 2)?,
            FormatPart::Second => sec = take(&mut i, 2)?,
            FormatPart::Short(field) => {
                let n = digits(i);
                let v = take(&mut i, n)?;
                match field {
                    Field::Month => mo = v,
                    Field::Day => d = v,
                    Field::Hour => h = v,
                    Field::Hour12 => h12 = Some(v),
                    Field::Minute => mi = v,
                    Field::Second => sec = v,
                }
            }
            FormatPart::MonthName { full } => {
                let rest = s.get(i..)?;
                let (k, len) = MONTHS.iter().enumerate().find_map(|(k, name)| {
                    let name = if *full { *name } else { &name[..3] };
                    let head = rest.get(..name.len())?;
                    head.eq_ignore_ascii_case(name).then_some((k, name.len()))
                })?;
                mo = k as i64 + 1;
                i += len;
            }
            FormatPart::AmPm => {
                let head = s.get(i..i + 2)?;
                pm = Some(if head.eq_ignore_ascii_case("PM") {
                    true
                } else if head.eq_ignore_ascii_case("AM") {
                    false
                } else {
                    return None;
                });
                i += 2;
            }
            FormatPart::Fraction(n) => {
                // one to n digits, as Spark parses a fraction (`.1` is 100 ms)
                let k = b[i.min(b.len())..].iter().take(*n as usize).take_while(|c| c.is_ascii_digit()).count().max(1);
                us = take(&mut i, k)? * 10i64.pow(6 - k as u32);
            }
            // refused when the pattern is bound (`FormatPart::reads`)
            FormatPart::DayName { .. } => return None,
            FormatPart::Text(t) => {
                if !s.get(i..)?.starts_with(t.as_str()) {
                    return None;
                }
                i += t.len();
            }
        }
    }
    if let Some(c) = h12 {
        // the hour of a 12-hour clock: 1 to 12 with `a`, 12 AM being 0
        match pm {
            Some(pm) if (1..=12).contains(&c) => h = c % 12 + if pm { 12 } else { 0 },
            None if (0..=12).contains(&c) => h = c % 12,
            _ => return None,
        }
    } else if pm.is_some() {
        // `a` beside a 24-hour `H`: the hour must agree with it
        if pm != Some(h >= 12) {
            return None;
        }
    }
    if i != b.len() || !(1..=12).contains(&mo) || d < 1 || d > i64::from(days_in_month(y, mo as u32)) {
        return None;
    }
    if h > 23 || mi > 59 || sec > 59 || y.abs() > 999_999_999 {
        return None;
    }
    let days = days_from_civil(y, mo as u32, d as u32);
    let secs = days.checked_mul(86_400)? + h * 3600 + mi * 60 + sec;
    secs.checked_mul(1_000_000)?.checked_add(us)
}

#[cfg(test)]
mod tests {
    use super::super::text::parse_format;
    use super::*;

    #[test]
    fn cast_to_date_takes_spark_forms_and_refuses_others() {
        // Expected dates: Spark 4.3's CAST(s AS DATE) (the oracle).
        let d = |s: &str| parse_cast_date(s).map(date_string);
        assert_eq!(d("2024-01-15").as_deref(), Some("2024-01-15"));
        assert_eq!(d(" 2024-1-5 ").as_deref(), Some("2024-01-05"));
        assert_eq!(d("2024").as_deref(), Some("2024-01-01"));
        assert_eq!(d("2024-01").as_deref(), Some("2024-01-01"));
        assert_eq!(d("2024-01-15T10:00").as_deref(), Some("2024-01-15"));
        assert_eq!(d("2024-01-15 10:00:00").as_deref(), Some("2024-01-15"));
        assert_eq!(parse_cast_date("1969-12-31"), Some(-1));
        for bad in ["x", "2024-02-30", "2024-13-01", "24-01-01", "2024-01T", "2024/01/15", ""] {
            assert_eq!(parse_cast_date(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn patterns_parse_fixed_width_fields_and_default_to_the_epoch() {
        // Expected instants: Spark's to_timestamp(s, pattern) (the oracle).
        let p = |s: &str, pat: &str| {
            parse_with_pattern(s, &parse_format(pat).unwrap_or_default()).map(super::super::text::timestamp_string)
        };
        assert_eq!(p("2024/01/15 10:30", "yyyy/MM/dd HH:mm").as_deref(), Some("2024-01-15 10:30:00"));
        assert_eq!(p("10:30", "HH:mm").as_deref(), Some("1970-01-01 10:30:00"));
        assert_eq!(p("2024-01-15 10:00:00.123", "yyyy-MM-dd HH:mm:ss.SSS").as_deref(), Some("2024-01-15 10:00:00.123"));
        assert_eq!(p("2024-01-15 10:00", "yyyy-MM-dd HH:mm:ss"), None);
        assert_eq!(p("2024-01-15 25:00", "yyyy-MM-dd HH:mm"), None);
        assert_eq!(p("2024-01-15x", "yyyy-MM-dd"), None);
        // a fraction of one or two digits (Spark 4.3: 2024-01-15 10:00:00.1 for `.1`)
        assert_eq!(p("2024-01-15 10:00:00.1", "yyyy-MM-dd HH:mm:ss.SSS").as_deref(), Some("2024-01-15 10:00:00.1"));
        assert_eq!(p("2024-01-15 10:00:00.12", "yyyy-MM-dd HH:mm:ss.SSS").as_deref(), Some("2024-01-15 10:00:00.12"));
        assert_eq!(p("2024-01-15 10:00:00.", "yyyy-MM-dd HH:mm:ss.SSS"), None);
        assert_eq!(p("2024-01-15 10:00:00.1234", "yyyy-MM-dd HH:mm:ss.SSS"), None);
    }
}
