//! Time: [`Timestamp`] (µs since the Unix epoch, UTC), [`Duration`] (µs), Spark duration strings,
//! RFC 3339 / `YYYY-MM-DD HH:MM:SS[.ffffff]` parsing and printing, and window alignment.
//!
//! Source: SEMANTICS.md "Time". Spark writes durations as interval strings (`"10 minutes"`,
//! `"1 hour 30 minutes"`); months and years are refused because they have no fixed length.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

const US_PER_SEC: i64 = 1_000_000;
const SECS_PER_DAY: i64 = 86_400;

/// An instant: microseconds since 1970-01-01T00:00:00Z (negative before 1970). Always UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
pub struct Timestamp(pub i64);

/// A length of time in microseconds. Window sizes, slides and gaps are > 0; delays may be 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
pub struct Duration(pub i64);

impl Timestamp {
    /// The smallest instant; used as "before every timestamp" (the initial watermark).
    pub const MIN: Timestamp = Timestamp(i64::MIN);
    /// The largest instant.
    pub const MAX: Timestamp = Timestamp(i64::MAX);

    /// Microseconds since the epoch.
    pub fn micros(self) -> i64 {
        self.0
    }

    /// `self + d`, saturating at the ends of the range.
    pub fn saturating_add(self, d: Duration) -> Timestamp {
        Timestamp(self.0.saturating_add(d.0))
    }

    /// `self - d`, saturating at the ends of the range.
    pub fn saturating_sub(self, d: Duration) -> Timestamp {
        Timestamp(self.0.saturating_sub(d.0))
    }

    /// Builds a timestamp from a number in `unit` (numeric JSON timestamps: ms by default).
    /// `None` when the value does not fit in i64 microseconds or is not finite.
    pub fn from_number(v: f64, unit: TimeUnit) -> Option<Timestamp> {
        if !v.is_finite() {
            return None;
        }
        let us = v * unit.micros_per_unit() as f64;
        if us.abs() >= 9.2e18 {
            return None;
        }
        Some(Timestamp(us.round() as i64))
    }

    /// Builds a timestamp from an integer in `unit`; `None` on overflow.
    pub fn from_integer(v: i64, unit: TimeUnit) -> Option<Timestamp> {
        v.checked_mul(unit.micros_per_unit()).map(Timestamp)
    }
}

/// Unit of numeric timestamps in input (`source.timestamp_unit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TimeUnit {
    /// Seconds.
    S,
    /// Milliseconds (the default, as epoch milliseconds are the common JSON spelling).
    #[default]
    Ms,
    /// Microseconds.
    Us,
}

impl TimeUnit {
    /// Microseconds in one unit.
    pub fn micros_per_unit(self) -> i64 {
        match self {
            TimeUnit::S => US_PER_SEC,
            TimeUnit::Ms => 1_000,
            TimeUnit::Us => 1,
        }
    }
}

impl Duration {
    /// Zero length.
    pub const ZERO: Duration = Duration(0);

    /// Microseconds.
    pub fn micros(self) -> i64 {
        self.0
    }

    /// From whole seconds.
    pub fn from_secs(s: i64) -> Duration {
        Duration(s * US_PER_SEC)
    }

    /// From whole milliseconds.
    pub fn from_millis(ms: i64) -> Duration {
        Duration(ms * 1_000)
    }
}

/// Errors of time parsing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// A duration string that is not `<number> <unit>` pairs of the allowed units.
    #[error(
        "bad duration {given:?}: {why} (expected e.g. \"10 seconds\", \"1 hour 30 minutes\", \"1.5 seconds\"; whole numbers, a fraction on seconds only; units us, ms, s/sec/second(s), min/minute(s), h/hour(s), day(s), week(s))"
    )]
    BadDuration {
        /// What was given.
        given: String,
        /// What is wrong with it.
        why: String,
    },
    /// A timestamp string that is neither RFC 3339 nor `YYYY-MM-DD HH:MM:SS[.ffffff]`.
    #[error(
        "bad timestamp {given:?}: {why} (expected RFC 3339 such as 2024-01-15T10:01:00Z, or YYYY-MM-DD HH:MM:SS[.ffffff] in UTC)"
    )]
    BadTimestamp {
        /// What was given.
        given: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// Parses a Spark duration string: one or more `<number> <unit>` pairs, e.g. `"10 minutes"`,
/// `"1 hour 30 minutes"`, `"250 ms"`, `"0 seconds"`, `"1.5 seconds"`. The unit may follow the
/// number without a space (`"5s"`). An optional leading `interval` keyword is accepted, as Spark
/// does.
///
/// Numbers are whole, except that seconds may have a fraction (`"1.5 seconds"`, `"0.25s"`), as in
/// Spark's interval strings (`IntervalUtils.stringToInterval`: "'days' cannot have fractional
/// part"). The fraction must come to whole microseconds: digits past the sixth must be zeros
/// (Spark keeps nanoseconds then truncates them to microseconds; a truncated value is refused here
/// rather than changed silently).
///
/// # Errors
/// [`TimeError::BadDuration`] for an empty string, a missing number or unit, an unknown unit,
/// months or years (no fixed length), a fraction on a unit other than seconds or finer than a
/// microsecond, a negative value or an overflow.
pub fn parse_duration(s: &str) -> Result<Duration, TimeError> {
    let bad = |why: &str| TimeError::BadDuration { given: s.to_string(), why: why.to_string() };
    let text = s.trim().to_ascii_lowercase();
    let text = text.strip_prefix("interval").unwrap_or(&text).trim_start();
    if text.is_empty() {
        return Err(bad("empty"));
    }
    let bytes = text.as_bytes();
    let skip = |mut i: usize, keep: fn(u8) -> bool| {
        while i < bytes.len() && keep(bytes[i]) {
            i += 1;
        }
        i
    };
    let mut i = 0;
    let mut total: i64 = 0;
    let mut pairs = 0;
    while i < bytes.len() {
        i = skip(i, |b| b.is_ascii_whitespace());
        if i >= bytes.len() {
            break;
        }
        let start = i;
        if bytes[i] == b'-' {
            return Err(bad("negative durations are not allowed"));
        }
        i = skip(i, |b| b.is_ascii_digit());
        if start == i {
            return Err(bad("expected a number"));
        }
        let n: i64 = text[start..i].parse().map_err(|_| bad("number too large"))?;
        // The fraction's microseconds, if the number has a fractional part.
        let mut fraction_us = None;
        if bytes.get(i) == Some(&b'.') {
            let digits_start = i + 1;
            i = skip(digits_start, |b| b.is_ascii_digit());
            let digits = &text[digits_start..i];
            if digits.is_empty() {
                return Err(bad("a decimal point without digits after it (e.g. \"1.5 seconds\")"));
            }
            let (us_digits, finer) = digits.split_at(digits.len().min(6));
            if finer.bytes().any(|b| b != b'0') {
                return Err(bad("a fraction finer than a microsecond (durations are whole microseconds)"));
            }
            let us: i64 = us_digits.parse().map_err(|_| bad("a bad fraction"))?;
            fraction_us = Some(us * 10_i64.pow(6 - us_digits.len() as u32));
        }
        i = skip(i, |b| b.is_ascii_whitespace());
        let ustart = i;
        i = skip(i, |b| b.is_ascii_alphabetic());
        let unit = &text[ustart..i];
        let per: i64 = match unit {
            "us" | "microsecond" | "microseconds" => 1,
            "ms" | "millisecond" | "milliseconds" => 1_000,
            "s" | "sec" | "secs" | "second" | "seconds" => US_PER_SEC,
            "min" | "mins" | "minute" | "minutes" => 60 * US_PER_SEC,
            "h" | "hour" | "hours" => 3_600 * US_PER_SEC,
            "day" | "days" => SECS_PER_DAY * US_PER_SEC,
            "week" | "weeks" => 7 * SECS_PER_DAY * US_PER_SEC,
            "month" | "months" | "year" | "years" => {
                return Err(bad("months and years are not fixed lengths"));
            }
            "" if ustart == bytes.len() => return Err(bad("missing unit")),
            "" => return Err(bad(&format!("unexpected {:?} after a number", char::from(bytes[ustart])))),
            _ => return Err(bad(&format!("unknown unit {unit:?}"))),
        };
        let fraction = match fraction_us {
            None => 0,
            Some(us) if per == US_PER_SEC => us,
            Some(_) => {
                return Err(bad(&format!(
                    "only seconds can have a fraction, as in Spark (\"{unit}\" cannot: write whole numbers, e.g. \"90 minutes\", \"1500 ms\", or \"1.5 seconds\")"
                )));
            }
        };
        let part = n.checked_mul(per).and_then(|p| p.checked_add(fraction)).ok_or_else(|| bad("too large"))?;
        total = total.checked_add(part).ok_or_else(|| bad("too large"))?;
        pairs += 1;
    }
    if pairs == 0 {
        return Err(bad("empty"));
    }
    Ok(Duration(total))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A year as Spark writes it in every timestamp and date text (Java's `yyyy`,
/// `SignStyle.EXCEEDS_PAD`): at least four digits, and a `+` once it has more than four
/// (`+10000-01-01T00:00:00.000Z`, as Spark 4.3's JSON writer, `to_json` and `CAST(t AS STRING)`),
/// and before year 0 a `-` and four digits at least (`-0001-01-01 00:00:00`, as Spark's
/// `CAST(t AS STRING)`: the proleptic year, Java's `uuuu`).
pub(crate) struct Year(pub(crate) i64);

impl fmt::Display for Year {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            y if y > 9999 => write!(f, "+{y}"),
            y if y < 0 => write!(f, "-{:04}", y.unsigned_abs()),
            y => write!(f, "{y:04}"),
        }
    }
}

/// The date of a day count since 1970-01-01 (inverse of [`days_from_civil`]).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Days in month `m` (1-12) of year `y` of the proleptic Gregorian calendar.
pub(crate) fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// Parses an input timestamp as Spark's JSON and CSV readers do: first the forms of SEMANTICS.md
/// "Time" ([`parse_timestamp_strict`], the decoders' fast path), then the other forms of Spark's
/// `stringToTimestamp`, which those readers fall back to (a date alone, `[h]h[:[m]m]`, one-digit
/// fields, zones such as `+0100` or `GMT+01:00`: `expr::text::parse_cast_timestamp`, checked
/// against Spark 4.3). The error is the strict parse's.
///
/// # Errors
/// [`TimeError::BadTimestamp`] when neither takes the text.
pub fn parse_timestamp(s: &str) -> Result<Timestamp, TimeError> {
    parse_timestamp_strict(s).or_else(|e| crate::expr::parse_cast_timestamp(s).map(Timestamp).ok_or(e))
}

/// Parses an input timestamp: RFC 3339 (`2024-01-15T10:01:00Z`, `+02:00` offsets, a fraction of
/// up to 9 digits, truncated to µs) or `YYYY-MM-DD HH:MM:SS[.ffffff]` (UTC). A `T` or a space may
/// separate date and time; without an offset the time is UTC. Years 0000 to 9999 (a signed or
/// longer year is one of [`parse_timestamp`]'s other forms).
///
/// # Errors
/// [`TimeError::BadTimestamp`] when the text is not one of these forms or a field is out of range.
pub fn parse_timestamp_strict(s: &str) -> Result<Timestamp, TimeError> {
    let bad = |why: &'static str| TimeError::BadTimestamp { given: truncate(s), why };
    // whitespace as Spark trims it (`UTF8String.trimAll`: up to U+0020 and U+007F; a non-ASCII
    // space such as U+00A0 is no whitespace to Spark's readers)
    let b = crate::expr::trim_spark(s).as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(part.iter().fold(0i64, |a, &c| a * 10 + (c - b'0') as i64))
    };
    if b.len() < 19 {
        return Err(bad("too short"));
    }
    let (Some(y), Some(mo), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return Err(bad("date must be YYYY-MM-DD"));
    };
    if b[4] != b'-' || b[7] != b'-' || !(b[10] == b'T' || b[10] == b't' || b[10] == b' ') {
        return Err(bad("date must be YYYY-MM-DD followed by T or a space"));
    }
    let (Some(h), Some(mi), Some(sec)) = (num(11..13), num(14..16), num(17..19)) else {
        return Err(bad("time must be HH:MM:SS"));
    };
    if b[13] != b':' || b[16] != b':' {
        return Err(bad("time must be HH:MM:SS"));
    }
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo as u32) as i64 {
        return Err(bad("date out of range"));
    }
    // second 60 (a leap second) is refused, as Spark's readers and CAST refuse it
    if h > 23 || mi > 59 || sec > 59 {
        return Err(bad("time out of range"));
    }
    let mut i = 19;
    let mut frac_us = 0i64;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let digits = &b[start..i];
        if digits.is_empty() || digits.len() > 9 {
            return Err(bad("fraction must have 1 to 9 digits"));
        }
        for k in 0..6 {
            frac_us = frac_us * 10 + digits.get(k).map_or(0, |c| (c - b'0') as i64);
        }
    }
    let mut offset_s = 0i64;
    if i < b.len() {
        match b[i] {
            b'Z' | b'z' if i + 1 == b.len() => {}
            b'+' | b'-' if b.len() == i + 6 && b[i + 3] == b':' => {
                let (Some(oh), Some(om)) = (num(i + 1..i + 3), num(i + 4..i + 6)) else {
                    return Err(bad("offset must be +HH:MM"));
                };
                if oh > 23 || om > 59 {
                    return Err(bad("offset out of range"));
                }
                offset_s = (oh * 3600 + om * 60) * if b[i] == b'-' { -1 } else { 1 };
            }
            _ => return Err(bad("trailing text (expected Z, +HH:MM or -HH:MM)")),
        }
    }
    let days = days_from_civil(y, mo as u32, d as u32);
    let secs = days * SECS_PER_DAY + h * 3600 + mi * 60 + sec - offset_s;
    Ok(Timestamp(secs * US_PER_SEC + frac_us))
}

fn truncate(s: &str) -> String {
    if s.len() <= 64 {
        s.to_string()
    } else {
        let mut end = 64;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    }
}

impl Timestamp {
    /// Appends the text [`Display`](fmt::Display) gives (RFC 3339 UTC with `Z`) to `out`,
    /// digit by digit for years 0 to 9999 (the sink's hot path: no formatting machinery).
    pub fn write_rfc3339(self, out: &mut String) {
        let mut buf = [0u8; 28];
        match self.rfc3339_bytes(&mut buf) {
            // ASCII digits and separators, copied at once (a char-by-char push costs ~10
            // instructions per byte); the UTF-8 check of 20-odd ASCII bytes is a few words.
            Some(n) if let Ok(text) = std::str::from_utf8(&buf[..n]) => out.push_str(text),
            _ => {
                let _ = write!(out, "{self}"); // writing to a String cannot fail
            }
        }
    }

    /// [`Timestamp::write_rfc3339`] for an instant likely written just before: the texts of
    /// the last two instants written this way on the thread are kept and copied when the same
    /// instant comes again. Window bounds: the rows of a window share its start and end, so a
    /// window query's rows mostly format nothing. (Instants that rarely repeat, such as event
    /// times, are cheaper through [`Timestamp::write_rfc3339`].)
    pub fn write_rfc3339_repeated(self, out: &mut String) {
        thread_local! {
            /// The last two instants written on this thread and their texts, newest first.
            static LAST_TEXTS: RefCell<[(Option<i64>, String); 2]> =
                const { RefCell::new([(None, String::new()), (None, String::new())]) };
        }
        let cached = LAST_TEXTS.with(|cell| {
            // Never borrowed elsewhere; were it, the text is formatted without the cache.
            let Ok(mut texts) = cell.try_borrow_mut() else { return false };
            if texts[0].0 == Some(self.0) {
                out.push_str(&texts[0].1);
            } else if texts[1].0 == Some(self.0) {
                out.push_str(&texts[1].1);
                texts.swap(0, 1);
            } else {
                let from = out.len();
                self.write_rfc3339(out);
                texts.swap(0, 1);
                texts[0].0 = Some(self.0);
                texts[0].1.clear();
                texts[0].1.push_str(&out[from..]);
            }
            true
        });
        if !cached {
            self.write_rfc3339(out);
        }
    }

    /// The RFC 3339 text into `buf` (at most 27 bytes): its length, or `None` for a year
    /// outside 0..=9999 (which [`Display`](fmt::Display) writes through `write!`).
    fn rfc3339_bytes(self, buf: &mut [u8; 28]) -> Option<usize> {
        fn two(buf: &mut [u8], at: usize, v: i64) {
            buf[at] = b'0' + (v / 10) as u8;
            buf[at + 1] = b'0' + (v % 10) as u8;
        }
        thread_local! {
            /// The date text of the day formatted last on this thread: rows written together
            /// usually share their day (and a window's start and end theirs).
            static LAST_DATE: Cell<(i64, [u8; 10])> = const { Cell::new((i64::MIN, [0; 10])) };
        }
        let us = self.0;
        let secs = us.div_euclid(US_PER_SEC);
        let frac = us.rem_euclid(US_PER_SEC);
        let days = secs.div_euclid(SECS_PER_DAY);
        let (cached, date) = LAST_DATE.with(Cell::get);
        if cached == days {
            buf[..10].copy_from_slice(&date);
        } else {
            let (y, m, d) = civil_from_days(days);
            if !(0..=9999).contains(&y) {
                return None;
            }
            two(buf, 0, y / 100);
            two(buf, 2, y % 100);
            buf[4] = b'-';
            two(buf, 5, i64::from(m));
            buf[7] = b'-';
            two(buf, 8, i64::from(d));
            let mut date = [0u8; 10];
            date.copy_from_slice(&buf[..10]);
            LAST_DATE.with(|c| c.set((days, date)));
        }
        let sod = secs.rem_euclid(SECS_PER_DAY);
        buf[10] = b'T';
        two(buf, 11, sod / 3600);
        buf[13] = b':';
        two(buf, 14, sod % 3600 / 60);
        buf[16] = b':';
        two(buf, 17, sod % 60);
        let mut n = 19;
        if frac != 0 {
            buf[n] = b'.';
            let mut f = frac;
            for i in (0..6).rev() {
                buf[n + 1 + i] = b'0' + (f % 10) as u8;
                f /= 10;
            }
            n += 7;
            // Trailing zeros trimmed: the fraction is non-zero, so a digit stays.
            while buf[n - 1] == b'0' {
                n -= 1;
            }
        }
        buf[n] = b'Z';
        Some(n + 1)
    }
}

impl fmt::Display for Timestamp {
    /// RFC 3339 in UTC with `Z`; the fraction only when non-zero (trailing zeros trimmed), as
    /// SEMANTICS.md "Output timestamps" asks.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 28];
        if let Some(n) = self.rfc3339_bytes(&mut buf) {
            return f.write_str(std::str::from_utf8(&buf[..n]).map_err(|_| fmt::Error)?);
        }
        let us = self.0;
        let secs = us.div_euclid(US_PER_SEC);
        let frac = us.rem_euclid(US_PER_SEC);
        let days = secs.div_euclid(SECS_PER_DAY);
        let sod = secs.rem_euclid(SECS_PER_DAY);
        let (y, m, d) = civil_from_days(days);
        write!(f, "{}-{m:02}-{d:02}T{:02}:{:02}:{:02}", Year(y), sod / 3600, sod % 3600 / 60, sod % 60)?;
        if frac != 0 {
            let mut s = format!("{frac:06}");
            while s.ends_with('0') {
                s.pop();
            }
            write!(f, ".{s}")?;
        }
        f.write_str("Z")
    }
}

impl fmt::Display for Duration {
    /// The largest unit that divides the length exactly, in Spark's spelling (`"90 seconds"`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = self.0;
        for (per, name) in [
            (7 * SECS_PER_DAY * US_PER_SEC, "week"),
            (SECS_PER_DAY * US_PER_SEC, "day"),
            (3600 * US_PER_SEC, "hour"),
            (60 * US_PER_SEC, "minute"),
            (US_PER_SEC, "second"),
            (1000, "millisecond"),
        ] {
            if us != 0 && us % per == 0 {
                let n = us / per;
                return write!(f, "{n} {name}{}", if n == 1 { "" } else { "s" });
            }
        }
        write!(f, "{us} microseconds")
    }
}

/// Start of the window of length `step` (aligned to `offset` from the epoch) that contains `t`:
/// the largest `start <= t` with `start ≡ offset (mod step)`. Floor modulo, so correct before
/// 1970. `step` must be > 0. Never wraps: computed in `i128`, and saturating at
/// [`Timestamp::MIN`] when that start lies before it (`t` within `step` of the start of time).
pub fn align_down(t: Timestamp, step: Duration, offset: Duration) -> Timestamp {
    debug_assert!(step.0 > 0);
    let start = align_down_exact(t, step, offset);
    Timestamp(i64::try_from(start).unwrap_or(i64::MIN))
}

/// [`align_down`] without the saturation: the start in `i128` (below `i64::MIN` near the start
/// of time).
pub(crate) fn align_down_exact(t: Timestamp, step: Duration, offset: Duration) -> i128 {
    let (t, step) = (i128::from(t.0), i128::from(step.0.max(1)));
    t - (t - i128::from(offset.0)).rem_euclid(step)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: RFC 3339 through `write!`, as `Display` did before the digit-by-digit path.
    fn rfc3339_by_format(t: Timestamp) -> String {
        let secs = t.0.div_euclid(US_PER_SEC);
        let frac = t.0.rem_euclid(US_PER_SEC);
        let sod = secs.rem_euclid(SECS_PER_DAY);
        let (y, m, d) = civil_from_days(secs.div_euclid(SECS_PER_DAY));
        // a year past 9999 with its sign, as Java's `yyyy` (and Spark) writes it
        let year = if y > 9999 {
            format!("+{y}")
        } else if y < 0 {
            format!("-{:04}", -y)
        } else {
            format!("{y:04}")
        };
        let mut s = format!("{year}-{m:02}-{d:02}T{:02}:{:02}:{:02}", sod / 3600, sod % 3600 / 60, sod % 60);
        if frac != 0 {
            s.push_str(format!(".{frac:06}").trim_end_matches('0'));
        }
        s + "Z"
    }

    /// What Spark 4.3's JSON reader (schema `ts TIMESTAMP`, DROPMALFORMED) made of each text,
    /// as `unix_micros(ts)`, or `None` where it dropped the line (pyspark, the oracle's venv).
    /// Second 60 is no second: Spark 4.3's JSON reader gives NULL (the record is malformed) and
    /// `try_cast` NULL for `2024-01-15T10:00:60Z`, `2024-01-15 10:00:60` and `23:59:60`; 59.5 is
    /// read.
    #[test]
    fn a_leap_second_is_refused_as_spark_refuses_it() {
        for text in
            ["2024-01-15T10:00:60Z", "2024-01-15 10:00:60", "2024-01-15T23:59:60Z", "2024-01-15T23:59:60.5+01:00"]
        {
            assert!(parse_timestamp(text).is_err(), "{text}");
            assert!(parse_timestamp_strict(text).is_err(), "{text}");
        }
        assert_eq!(parse_timestamp("2024-01-15T10:00:59.5Z").map(|t| t.0), Ok(1_705_312_859_500_000));
    }

    #[test]
    fn signed_and_long_years_are_read_as_spark_reads_them() {
        let spark: [(&str, Option<i64>); 20] = [
            ("+10000-01-01T00:00:00Z", Some(253_402_300_800_000_000)),
            ("10000-01-01T00:00:00Z", Some(253_402_300_800_000_000)),
            ("+2024-01-15T10:00:00Z", Some(1_705_312_800_000_000)),
            ("+10000-01-01 00:00:00", Some(253_402_300_800_000_000)),
            ("-0001-01-01T00:00:00Z", Some(-62_198_755_200_000_000)),
            ("+002024-01-15T10:00:00Z", Some(1_705_312_800_000_000)),
            ("02024-01-15T10:00:00Z", Some(1_705_312_800_000_000)),
            ("+0024-01-15T10:00:00Z", Some(-61_408_591_200_000_000)),
            ("024-01-15T10:00:00Z", None),
            ("+24-01-15T10:00:00Z", None),
            ("1000000-01-01T00:00:00Z", None),
            ("+294247-01-01T00:00:00Z", Some(9_223_371_244_800_000_000)),
            ("+294248-01-01T00:00:00Z", None),
            ("-290308-12-22T00:00:00Z", Some(-9_223_372_022_400_000_000)),
            ("-290309-01-01T00:00:00Z", None),
            ("+10000-01-01T00:00:00.5+02:00", Some(253_402_293_600_500_000)),
            ("-0000-01-01T00:00:00Z", Some(-62_167_219_200_000_000)),
            ("+ 2024-01-15T10:00:00Z", None),
            ("++2024-01-15T10:00:00Z", None),
            ("+10400-02-29T00:00:00Z", Some(266_030_179_200_000_000)),
        ];
        for (text, want) in spark {
            assert_eq!(parse_timestamp(text).ok().map(|t| t.0), want, "{text}");
        }
        assert!(parse_timestamp("+10001-02-29T00:00:00Z").is_err(), "not a leap year");
    }

    #[test]
    fn years_are_written_as_spark_writes_them() {
        // CAST(t AS STRING) in Spark 4.3 (the oracle's pyspark): -0001-01-01 00:00:00,
        // +10000-01-01 00:00:00, 0024-01-15 10:00:00
        assert_eq!(Year(-1).to_string(), "-0001");
        assert_eq!(Year(-290_308).to_string(), "-290308");
        assert_eq!(Year(10_000).to_string(), "+10000");
        assert_eq!(Year(24).to_string(), "0024");
        assert_eq!(Year(0).to_string(), "0000");
    }

    #[test]
    fn the_digit_path_writes_what_format_writes() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut cases =
            vec![0, 1, -1, 999_999, 1_000_000, -1_000_000, 253_402_300_799_999_999, -62_167_219_200_000_000];
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Instants from year ~0 to ~9999, and some whole seconds / milliseconds.
            let t = (x % 315_000_000_000_000_000) as i64 - 62_000_000_000_000_000;
            cases.extend([t, t - t.rem_euclid(1_000_000), t - t.rem_euclid(1_000)]);
        }
        for us in cases {
            let t = Timestamp(us);
            let mut fast = String::new();
            t.write_rfc3339(&mut fast);
            assert_eq!(fast, rfc3339_by_format(t), "{us}");
            assert_eq!(t.to_string(), fast, "{us}");
        }
        // Outside years 0..=9999 the formatting path answers.
        let far = Timestamp(i64::MAX / 2);
        let mut s = String::new();
        far.write_rfc3339(&mut s);
        assert_eq!(s, rfc3339_by_format(far));
    }

    #[test]
    fn durations_in_spark_spelling() {
        assert_eq!(parse_duration("10 minutes").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("1 hour 30 minutes").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("250 milliseconds").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("2 days").unwrap(), Duration::from_secs(172_800));
        assert_eq!(parse_duration("1 week").unwrap(), Duration::from_secs(604_800));
        assert_eq!(parse_duration("0 seconds").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("7 us").unwrap(), Duration(7));
        assert_eq!(parse_duration("interval 1 min").unwrap(), Duration::from_secs(60));
        for bad in ["", "1 month", "2 years", "ten seconds", "5", "-1 second", "1 fortnight", "99999999999999999999 s"]
        {
            assert!(parse_duration(bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn durations_take_a_fraction_of_seconds_only_as_spark() {
        assert_eq!(parse_duration("1.5 seconds").unwrap(), Duration(1_500_000));
        assert_eq!(parse_duration("0.25s").unwrap(), Duration(250_000));
        assert_eq!(parse_duration("1 minute 0.000001 sec").unwrap(), Duration(60_000_001));
        assert_eq!(parse_duration("2.500000000 seconds").unwrap(), Duration(2_500_000));
        let why = |s: &str| match parse_duration(s) {
            Err(TimeError::BadDuration { why, .. }) => why,
            other => panic!("{s:?} must be refused, got {other:?}"),
        };
        assert!(why("1.5 hours").contains("only seconds"), "{}", why("1.5 hours"));
        assert!(why("0.5 us").contains("only seconds"), "{}", why("0.5 us"));
        assert!(why("1.5 ms").contains("only seconds"), "{}", why("1.5 ms"));
        assert!(why("0.0000005 seconds").contains("microsecond"), "{}", why("0.0000005 seconds"));
        assert!(why("1.0000000001 seconds").contains("microsecond"), "{}", why("1.0000000001 seconds"));
        for bad in ["1. seconds", ".5 seconds", "1.5", "1.2.3 seconds"] {
            assert!(!why(bad).contains("missing unit") || bad == "1.5", "{bad:?}: {}", why(bad));
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn timestamps_parse_and_print() {
        let t = parse_timestamp("2024-01-15T10:01:00Z").unwrap();
        assert_eq!(t.to_string(), "2024-01-15T10:01:00Z");
        assert_eq!(parse_timestamp("2024-01-15 10:01:00").unwrap(), t);
        assert_eq!(parse_timestamp("2024-01-15T12:01:00+02:00").unwrap(), t);
        let f = parse_timestamp("2024-01-15T10:01:00.123456789Z").unwrap();
        assert_eq!(f.0 - t.0, 123_456);
        assert_eq!(f.to_string(), "2024-01-15T10:01:00.123456Z");
        assert_eq!(parse_timestamp("2024-01-15T10:01:00.5Z").unwrap().to_string(), "2024-01-15T10:01:00.5Z");
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z").unwrap(), Timestamp(0));
        let pre = parse_timestamp("1969-12-31T23:59:59.5Z").unwrap();
        assert_eq!(pre, Timestamp(-500_000));
        assert_eq!(pre.to_string(), "1969-12-31T23:59:59.5Z");
        for bad in [
            "",
            "2024-13-01T00:00:00Z",
            "2024-02-30T00:00:00Z",
            "2024-01-15T25:00:00Z",
            "yesterday",
            "2024-01-15T10:01:00Zjunk",
        ] {
            assert!(parse_timestamp(bad).is_err(), "{bad:?} must be refused");
        }
        // not of SEMANTICS.md's forms, but Spark's readers take it (`.` without digits)
        assert!(parse_timestamp_strict("2024-01-15T10:01:00.Z").is_err());
        assert_eq!(parse_timestamp("2024-01-15T10:01:00.Z").unwrap(), parse_timestamp("2024-01-15T10:01:00Z").unwrap());
    }

    #[test]
    fn round_trip_over_a_wide_range() {
        for us in [-62_135_596_800_000_000i64, -1, 0, 1, 951_782_400_000_000, 253_402_300_799_999_999] {
            let t = Timestamp(us);
            assert_eq!(parse_timestamp(&t.to_string()).unwrap(), t, "{t}");
        }
    }

    #[test]
    fn texts_written_one_after_another_each_name_their_own_day() {
        // Same day, next day, back, across 1970 and a leap day: the date remembered from the
        // previous text must never leak into the next one. Each text is checked by parsing it
        // back, and against the text of a fresh thread (nothing remembered there).
        let day = 86_400_000_000i64;
        let leap = 951_782_400_000_000; // 2000-02-29T00:00:00Z
        let times = [0, 1, day - 1, day, 1, -1, -day, -day - 1, leap, leap + day - 1, leap + day, leap - 1, leap];
        let mut written = String::new();
        for &us in &times {
            written.clear();
            Timestamp(us).write_rfc3339(&mut written);
            assert_eq!(parse_timestamp(&written).unwrap(), Timestamp(us), "{written}");
            let fresh = std::thread::spawn(move || Timestamp(us).to_string()).join().unwrap();
            assert_eq!(written, fresh);
        }
        assert_eq!(Timestamp(leap + day - 1).to_string(), "2000-02-29T23:59:59.999999Z");
    }

    #[test]
    fn an_instant_written_again_gets_its_own_text_not_a_remembered_one() {
        // Windows' starts and ends alternate, repeat, and come back after others: each text
        // must be the instant's own (checked by parsing it back and against a fresh thread's
        // text), whichever of the remembered texts it matches or evicts.
        let (a, b, c) = (1_700_000_000_000_000i64, 1_700_000_010_000_000, 1_700_000_010_000_001);
        let year_10000 = 253_402_300_800_000_000; // written, not parsed back (years 0 to 9999)
        let times = [a, b, a, b, b, c, a, c, b, -1, i64::MIN, i64::MIN, -1, a, year_10000, year_10000, a];
        let mut written = String::from("prefix ");
        for &us in &times {
            let from = written.len();
            Timestamp(us).write_rfc3339_repeated(&mut written);
            let text = &written[from..];
            let fresh = std::thread::spawn(move || Timestamp(us).to_string()).join().unwrap();
            assert_eq!(text, fresh, "instant {us}");
            if us != i64::MIN && us != year_10000 {
                assert_eq!(parse_timestamp(text).unwrap(), Timestamp(us), "{text}");
            }
        }
        assert!(written.starts_with("prefix 2023-11-14T22:13:20Z2023-11-14T22:13:30Z"));
    }

    #[test]
    fn alignment_is_floor_modulo_before_1970() {
        let s = Duration::from_secs(10);
        assert_eq!(align_down(Timestamp(-1), s, Duration::ZERO), Timestamp(-10_000_000));
        assert_eq!(align_down(Timestamp(25_000_000), s, Duration::ZERO), Timestamp(20_000_000));
        assert_eq!(align_down(Timestamp(25_000_000), s, Duration::from_secs(7)), Timestamp(17_000_000));
        assert_eq!(align_down(Timestamp(-10_000_000), s, Duration::ZERO), Timestamp(-10_000_000));
    }

    #[test]
    fn align_down_never_wraps_at_the_ends_of_time() {
        let s = Duration::from_secs(10);
        // the aligned start before i64::MIN saturates there
        assert_eq!(align_down(Timestamp(i64::MIN + 3), s, Duration::ZERO), Timestamp::MIN);
        assert_eq!(align_down(Timestamp(i64::MIN), s, Duration::from_secs(7)), Timestamp::MIN);
        // near the end: floor modulo, even when t - offset would leave i64
        let t = i64::MAX - 1;
        assert_eq!(align_down(Timestamp(t), s, Duration::ZERO), Timestamp(t - t.rem_euclid(10_000_000)));
        // t - offset past i64::MAX: 10 s windows offset -9 s start at 1 s (mod 10 s)
        let t = i64::MAX - 5;
        let start = align_down(Timestamp(t), s, Duration(-9_000_000)).0;
        assert!(start <= t && t - start < 10_000_000 && start.rem_euclid(10_000_000) == 1_000_000, "{start}");
    }
}
