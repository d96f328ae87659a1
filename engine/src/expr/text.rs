//! Text forms Spark uses inside expressions: Java's `Double.toString` / `Float.toString` (casts
//! to STRING, literal names), timestamps as `yyyy-MM-dd HH:mm:ss[.ffffff]`, and the string forms
//! that `CAST(s AS TIMESTAMP)` accepts.

use std::fmt::Write as _;

use crate::time::{civil_from_days, days_from_civil, days_in_month};

const US_PER_SEC: i64 = 1_000_000;
const US_PER_DAY: i64 = 86_400 * US_PER_SEC;

/// Java's `Double.toString`: shortest digits that round-trip; plain notation with at least one
/// fractional digit for 1e-3 <= |x| < 1e7 (`1.5`, `100.0`), else `d.dddE±n` (`1.0E20`,
/// `1.0E-5`); `NaN`, `Infinity`, `-Infinity`. Where two shortest forms are equally close to
/// the double, Java takes the even last digit (`65.47000122070312` for 65.470001220703125).
pub(crate) fn java_double(x: f64) -> String {
    java_float_text(x, even_tie(x, format!("{x:e}")))
}

/// `sci` (Rust's shortest form of `x`) with its last digit moved to the even neighbour when
/// the exact value of `x` lies halfway between the two and the neighbour reads back as `x`.
fn even_tie(x: f64, sci: String) -> String {
    let Some((mant, exp)) = sci.split_once('e') else { return sci };
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let n = digits.len();
    if n < 2 || (digits.as_bytes()[n - 1] - b'0').is_multiple_of(2) || !may_tie(x, exp, n) {
        return sci;
    }
    // the exact decimal expansion of the double, 40 digits past the shortest form
    let exact = format!("{:.*e}", n + 40, x.abs());
    let exact_digits: String =
        exact.split_once('e').map_or("", |(m, _)| m).chars().filter(char::is_ascii_digit).collect();
    let (head, rest) = exact_digits.split_at(n.min(exact_digits.len()));
    let half = rest.strip_prefix('5').is_some_and(|r| r.bytes().all(|b| b == b'0'));
    if !half {
        return sci;
    }
    // exact = head.5: the two candidates are head and head + 1; Rust took one of them
    let head_last = head.as_bytes()[n - 1] - b'0';
    let even = if head_last.is_multiple_of(2) { head.to_string() } else { return sci };
    let sign = if x < 0.0 { "-" } else { "" };
    let candidate = format!("{sign}{}.{}e{exp}", &even[..1], &even[1..]);
    if candidate.parse::<f64>() == Ok(x) { candidate } else { sci }
}

/// Whether the exact value of `x` (non-zero, finite; its decimal exponent `exp10` as `sci`
/// writes it) can lie halfway between two `n`-digit decimals: its exact expansion must then have
/// `n + 1` significant digits, the last a 5. `x` is `m * 2^e` with `m` odd; for `e < 0` the
/// expansion ends `-e` digits after the point, so it has `exp10 + 1 - e` significant digits.
/// A number of 40 digits is computed only when that is `n + 1` (or when `e >= 0`, an integer:
/// not ruled out here), which almost no double needs (most have 30 or more).
fn may_tie(x: f64, exp10: &str, n: usize) -> bool {
    let Ok(exp10) = exp10.parse::<i64>() else { return true };
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i64;
    let fraction = bits & ((1 << 52) - 1);
    let (m, e) = if biased == 0 { (fraction, -1074) } else { (fraction | (1 << 52), biased - 1075) };
    if m == 0 {
        return false;
    }
    let e = e + i64::from(m.trailing_zeros());
    e >= 0 || exp10 + 1 - e == n as i64 + 1
}

/// Java's `Float.toString` (as [`java_double`], with the float's own shortest digits).
pub(crate) fn java_float(x: f32) -> String {
    java_float_text(x as f64, format!("{x:e}"))
}

fn java_float_text(x: f64, sci: String) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    // `sci` is Rust's shortest form: `-1.2345e-7`
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    let abs = x.abs();
    if (1e-3..1e7).contains(&abs) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        out.push('.');
        out.push_str(if digits.len() > 1 { &digits[1..] } else { "0" });
        let _ = write!(out, "E{exp}"); // writing to a String cannot fail
    }
    out
}

/// (year, month, day, hour, minute, second, microsecond) of an instant, UTC.
pub(crate) fn civil(us: i64) -> (i64, u32, u32, u32, u32, u32, u32) {
    let days = us.div_euclid(US_PER_DAY);
    let rest = us.rem_euclid(US_PER_DAY);
    let (y, m, d) = civil_from_days(days);
    let secs = rest / US_PER_SEC;
    (y, m, d, (secs / 3600) as u32, (secs / 60 % 60) as u32, (secs % 60) as u32, (rest % US_PER_SEC) as u32)
}

/// Days since the epoch of an instant (UTC).
pub(crate) fn epoch_day(us: i64) -> i64 {
    us.div_euclid(US_PER_DAY)
}

/// µs of midnight of a date; `None` when it is before the first instant a TIMESTAMP holds
/// (the year of `i64::MIN` µs truncated to its first day).
pub(crate) fn micros_of_date(y: i64, m: u32, d: u32) -> Option<i64> {
    days_from_civil(y, m, d).checked_mul(US_PER_DAY)
}

/// Spark's `CAST(ts AS STRING)`: `yyyy-MM-dd HH:mm:ss` and the fraction without trailing zeros.
pub(crate) fn timestamp_string(us: i64) -> String {
    let (y, mo, d, h, mi, s, frac) = civil(us);
    let mut out = format!("{}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}", crate::time::Year(y));
    if frac > 0 {
        let f = format!("{frac:06}");
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
    out
}

/// `date_format(ts, pattern)` for the patterns [`parse_format`] reads.
pub(crate) fn format_timestamp(us: i64, pattern: &[FormatPart]) -> String {
    let (y, mo, d, h, mi, s, frac) = civil(us);
    let h12 = if h % 12 == 0 { 12 } else { h % 12 };
    let mut out = String::with_capacity(20);
    for p in pattern {
        let _ = match p {
            FormatPart::Year => write!(out, "{}", crate::time::Year(y)),
            FormatPart::Year2 => write!(out, "{:02}", y.rem_euclid(100)),
            FormatPart::Month => write!(out, "{mo:02}"),
            FormatPart::Day => write!(out, "{d:02}"),
            FormatPart::Hour => write!(out, "{h:02}"),
            FormatPart::Hour12 => write!(out, "{h12:02}"),
            FormatPart::Minute => write!(out, "{mi:02}"),
            FormatPart::Second => write!(out, "{s:02}"),
            FormatPart::Short(field) => write!(
                out,
                "{}",
                match field {
                    Field::Month => mo,
                    Field::Day => d,
                    Field::Hour => h,
                    Field::Hour12 => h12,
                    Field::Minute => mi,
                    Field::Second => s,
                }
            ),
            FormatPart::MonthName { full } => {
                let name = MONTHS[(mo - 1) as usize];
                out.write_str(if *full { name } else { &name[..3] })
            }
            FormatPart::DayName { full } => {
                // 1970-01-01 was a Thursday: day 0 is index 3 of a week from Monday
                let name = DAYS[(epoch_day(us) + 3).rem_euclid(7) as usize];
                out.write_str(if *full { name } else { &name[..3] })
            }
            FormatPart::AmPm => out.write_str(if h < 12 { "AM" } else { "PM" }),
            FormatPart::Fraction(n) => out.write_str(&format!("{frac:06}")[..*n as usize]),
            FormatPart::Text(t) => out.write_str(t),
        };
    }
    out
}

/// The English month names, as Java's formatter writes them (`MMMM`; `MMM` their first three
/// letters).
pub(crate) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The English day names from Monday, as Java's formatter writes them (`EEEE`; `E` to `EEE`
/// their first three letters).
pub(crate) const DAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

/// The pattern letters [`parse_format`] takes, as a refusal lists them.
pub(crate) const PATTERN_LETTERS: &str = "patterns of y, yy, yyyy, M, MM, MMM, MMMM, d, dd, E to EEEE (formatting only), H, HH, h, hh, m, mm, s, ss, S to SSSSSS, a, quoted text and separators";

/// One part of a datetime pattern (Spark's `date_format`, `to_timestamp`, `to_date`,
/// `unix_timestamp`, `from_unixtime`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FormatPart {
    /// `yyyy` (and `y`): the year, four digits written; read as digits.
    Year,
    /// `yy`: two digits, read as a year from 2000 to 2099.
    Year2,
    /// `MM`: two digits.
    Month,
    /// `dd`.
    Day,
    /// `HH` (0 to 23).
    Hour,
    /// `hh`: the hour of a 12-hour clock (1 to 12).
    Hour12,
    /// `mm`.
    Minute,
    /// `ss`.
    Second,
    /// A field of one letter (`M`, `d`, `H`, `h`, `m`, `s`): written without padding, read
    /// as one digit or more.
    Short(Field),
    /// `MMM` (`Jan`) / `MMMM` (`January`); read ignoring case.
    MonthName {
        /// `MMMM`.
        full: bool,
    },
    /// `E`, `EE`, `EEE` (`Mon`) / `EEEE` (`Monday`): the day of the week, written only. Spark 3
    /// and later refuse day names in a pattern that parses (its DATETIME_PATTERN_RECOGNITION
    /// error), and so does Eddy ([`FormatPart::reads`]).
    DayName {
        /// `EEEE`.
        full: bool,
    },
    /// `a`: `AM` / `PM`; read ignoring case.
    AmPm,
    /// `S` to `SSSSSS`: the first n digits of the fraction of a second; read as 1 to n digits.
    Fraction(u8),
    /// A separator, or text quoted in `'...'`.
    Text(String),
}

/// A field of a [`FormatPart::Short`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    Month,
    Day,
    Hour,
    Hour12,
    Minute,
    Second,
}

impl FormatPart {
    /// Whether a pattern that parses text (`to_timestamp`, `to_date`, `unix_timestamp`) may hold
    /// this part: every part but [`FormatPart::DayName`].
    pub(crate) fn reads(&self) -> bool {
        !matches!(self, FormatPart::DayName { .. })
    }
}

/// Parses a datetime pattern into parts: `y`, `yy`, `yyyy`; `M`, `MM`, `MMM`, `MMMM`; `d`,
/// `dd`; `E` to `EEEE`; `H`, `HH`, `h`, `hh`; `m`, `mm`; `s`, `ss`; `S` to `SSSSSS`; `a`; text
/// in single quotes (`''` a quote); any other character but a letter as itself. `None` for
/// other letters or runs (`u`, `EEEEE`, `yyyyy`), as Spark 4.3 refuses `u` and five day-name
/// letters.
pub(crate) fn parse_format(pattern: &str) -> Option<Vec<FormatPart>> {
    let mut parts = Vec::new();
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            // quoted text up to the next lone quote; '' is a quote, inside or alone
            let mut text = String::new();
            let mut j = i + 1;
            if chars.get(j) == Some(&'\'') {
                parts.push(FormatPart::Text("'".into()));
                i += 2;
                continue;
            }
            loop {
                match chars.get(j) {
                    None => return None,
                    Some('\'') if chars.get(j + 1) == Some(&'\'') => {
                        text.push('\'');
                        j += 2;
                    }
                    Some('\'') => break,
                    Some(&x) => {
                        text.push(x);
                        j += 1;
                    }
                }
            }
            parts.push(FormatPart::Text(text));
            i = j + 1;
            continue;
        }
        if !c.is_ascii_alphabetic() {
            parts.push(FormatPart::Text(c.to_string()));
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|&&x| x == c).count();
        let part = match (c, run) {
            ('y', 1 | 4) => FormatPart::Year,
            ('y', 2) => FormatPart::Year2,
            ('M', 1) => FormatPart::Short(Field::Month),
            ('M', 2) => FormatPart::Month,
            ('M', 3 | 4) => FormatPart::MonthName { full: run == 4 },
            ('d', 1) => FormatPart::Short(Field::Day),
            ('d', 2) => FormatPart::Day,
            ('E', 1..=4) => FormatPart::DayName { full: run == 4 },
            ('H', 1) => FormatPart::Short(Field::Hour),
            ('H', 2) => FormatPart::Hour,
            ('h', 1) => FormatPart::Short(Field::Hour12),
            ('h', 2) => FormatPart::Hour12,
            ('m', 1) => FormatPart::Short(Field::Minute),
            ('m', 2) => FormatPart::Minute,
            ('s', 1) => FormatPart::Short(Field::Second),
            ('s', 2) => FormatPart::Second,
            ('S', 1..=6) => FormatPart::Fraction(run as u8),
            ('a', 1) => FormatPart::AmPm,
            _ => return None,
        };
        parts.push(part);
        i += run;
    }
    Some(parts)
}

/// Whitespace and control characters as Spark's `UTF8String.trimAll` strips them before
/// parsing a cast to an integer, BOOLEAN, DATE or TIMESTAMP: every character up to U+0020, and
/// U+007F (its test, `isWhitespaceOrISOControl`, reads a byte at a time, so no other character:
/// the bytes of U+0080 to U+009F are not ASCII). Checked against Spark 4.3: `'7\x7f'` casts to
/// the BIGINT 7, `'7\u0085'` to none.
pub(crate) fn trim_spark(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ' || c == '\x7f')
}

/// What Spark strips before parsing a cast to a DOUBLE, FLOAT or DECIMAL (Java's `String.trim`):
/// every character up to U+0020, U+007F kept. Checked against Spark 4.3: `'7\x01'` casts to the
/// DOUBLE 7.0, `'7\x7f'` to none.
pub(crate) fn trim_java(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// `CAST(s AS TIMESTAMP)` as Spark's `stringToTimestamp` with the session zone UTC (which its
/// JSON and CSV readers also fall back to, [`crate::time::parse_timestamp`]): after trimming,
/// a year of 4 to 6 digits with an optional sign, then optionally `-[m]m` and `-[d]d`; then
/// optionally `T` or a space and `[h]h`, `[h]h:[m]m` or `[h]h:[m]m:[s]s`; after the seconds an
/// optional fraction (`.` and up to 9 digits, cut to µs; `.` alone is none) and a zone, with or
/// without a space before it: `Z`, `UTC` / `GMT` / `UT` with or without an offset, an offset, a
/// region of the tz database (`Europe/Paris`, `CET`) or one of Java's three-letter ids (`PST`),
/// as [`super::zones::Zone::parse`] reads them; a region's wall-clock time is resolved as
/// Java's `ZonedDateTime.of` resolves it (an overlap's earlier instant; in a gap, the offset from
/// before it). Checked against Spark 4.3 (`2024`, `2024-1-5 1:2:3`, `2024-01-15 10`,
/// `2024-01-15T10:00:00+0100`, `GMT+01:00` and `Europe/Paris` are read; `2024-01-15T`,
/// `2024-01-15T10:01Z` are not). `None` when the text is not of these forms or a field is out of
/// range (Spark's CAST_INVALID_INPUT). Not taken, where Spark takes it: a time without a date
/// (`10:00:00`, today's date in Spark).
pub(crate) fn parse_cast_timestamp(s: &str) -> Option<i64> {
    let s = trim_spark(s);
    let b = s.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize, min: usize, max: usize| -> Option<i64> {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() && *i - start < max {
            *i += 1;
        }
        if *i - start < min {
            return None;
        }
        std::str::from_utf8(&b[start..*i]).ok()?.parse().ok()
    };
    let sign = if b.first() == Some(&b'-') {
        i += 1;
        -1
    } else {
        if b.first() == Some(&b'+') {
            i += 1;
        }
        1
    };
    let y = sign * digits(&mut i, 4, 6)?;
    if b.get(i).is_some_and(u8::is_ascii_digit) {
        return None; // a seventh digit
    }
    let (mut mo, mut d) = (1, 1);
    if i < b.len() && b[i] == b'-' {
        i += 1;
        mo = digits(&mut i, 1, 2)?;
        if i < b.len() && b[i] == b'-' {
            i += 1;
            d = digits(&mut i, 1, 2)?;
        }
    }
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo as u32) as i64 {
        return None;
    }
    let (mut h, mut mi, mut sec, mut frac) = (0, 0, 0, 0);
    let mut zone = None;
    if i < b.len() {
        if b[i] != b'T' && b[i] != b' ' {
            return None;
        }
        i += 1;
        h = digits(&mut i, 1, 2)?;
        if b.get(i) == Some(&b':') {
            i += 1;
            mi = digits(&mut i, 1, 2)?;
            if b.get(i) == Some(&b':') {
                i += 1;
                sec = digits(&mut i, 1, 2)?;
                if b.get(i) == Some(&b'.') {
                    i += 1;
                    let start = i;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                    let f = &s[start..i];
                    if f.len() > 9 {
                        return None;
                    }
                    let mut us = 0i64;
                    for k in 0..6 {
                        us = us * 10 + f.as_bytes().get(k).map_or(0, |c| (c - b'0') as i64);
                    }
                    frac = us;
                }
                // a zone only after the seconds, as Spark
                // (Spark trims the zone as Java's `String.trim`: a tab or U+0001 before it is
                // passed over, U+007F and non-ASCII spaces are not)
                let z = trim_java(&s[i..]);
                if !z.is_empty() {
                    zone = Some(super::zones::Zone::parse(z)?);
                }
                i = b.len();
            }
        }
        if h > 23 || mi > 59 || sec > 59 {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    let days = days_from_civil(y, mo as u32, d as u32);
    let secs = days.checked_mul(86_400)? + h * 3600 + mi * 60 + sec;
    let local = secs.checked_mul(US_PER_SEC)?.checked_add(frac)?;
    match zone {
        None => Some(local),
        Some(zone) => zone.instant_at_wall_clock(local),
    }
}

/// The offset from UTC, in seconds, of zone `z` as Spark reads it after a timestamp's time
/// (Java's `ZoneId.of` for these forms): nothing, `Z`, `UTC`, `GMT` or `UT` alone or followed by
/// an offset, or an offset: a sign and `h`, `hh`, `hhmm`, `hh:mm`, `hhmmss` or `hh:mm:ss`
/// (`h:mm`, `h:m`, `hh:m` and `h:mm:ss` too: Spark's `getZoneId` pads them before Java reads
/// them), at most 18 hours. `None` for anything else (region ids such as `Europe/Paris`: [`super::zones::Zone`]).
pub(super) fn zone_offset(z: &str) -> Option<i64> {
    if z.is_empty() || z == "Z" {
        return Some(0);
    }
    let offset = ["UTC", "GMT", "UT"].iter().find_map(|p| z.strip_prefix(p)).unwrap_or(z);
    if offset.is_empty() {
        return Some(0);
    }
    let negative = offset.starts_with('-');
    let body = offset.strip_prefix(['+', '-'])?;
    // every form is ASCII digits and colons; the slicing below needs byte = char boundaries
    if !body.is_ascii() {
        return None;
    }
    let parts: Vec<&str> = body.split(':').collect();
    let two =
        |t: &str| -> Option<i64> { (t.len() == 2 && t.bytes().all(|c| c.is_ascii_digit())).then(|| t.parse().ok())? };
    let hour = |t: &str| -> Option<i64> {
        ((1..=2).contains(&t.len()) && t.bytes().all(|c| c.is_ascii_digit())).then(|| t.parse().ok())?
    };
    let (h, m, sec) = match parts.as_slice() {
        [h] if (1..=2).contains(&h.len()) && h.bytes().all(|c| c.is_ascii_digit()) => (h.parse().ok()?, 0, 0),
        [hm] if hm.len() == 4 => (two(&hm[..2])?, two(&hm[2..])?, 0),
        [hms] if hms.len() == 6 => (two(&hms[..2])?, two(&hms[2..4])?, two(&hms[4..])?),
        // one digit of hours before a colon, or of minutes after it at the end: Spark's
        // `getZoneId` pads them (`+1:00` is `+01:00`, `+10:5` is `+10:05`)
        [h, m] => (hour(h)?, hour(m)?, 0),
        [h, m, sec] => (hour(h)?, two(m)?, two(sec)?),
        _ => return None,
    };
    let total = h * 3600 + m * 60 + sec;
    if m > 59 || sec > 59 || total > 18 * 3600 {
        return None;
    }
    Some(if negative { -total } else { total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_java_prints_them() {
        // Expected texts: Java 17's Double.toString / Float.toString.
        for (x, s) in [
            (1.5, "1.5"),
            (100.0, "100.0"),
            (1e20, "1.0E20"),
            (1e-5, "1.0E-5"),
            (0.001, "0.001"),
            (1234567.0, "1234567.0"),
            (12345678.0, "1.2345678E7"),
            (-0.0, "-0.0"),
            (f64::NAN, "NaN"),
            (-2.5e-7, "-2.5E-7"),
        ] {
            assert_eq!(java_double(x), s, "{x}");
        }
        // 0.25 - (-65.22f32) is 65.470001220703125 exactly: a tie between ...12 and ...13
        assert_eq!(java_double(0.25 - f64::from(-65.22f32)), "65.47000122070312");
        assert_eq!(java_float(0.1), "0.1");
        assert_eq!(java_float(-2.25), "-2.25");
    }

    /// The exact test of a tie, as [`even_tie`] makes it: the expansion 40 digits past the
    /// shortest form's `n` is `5` then zeros.
    fn exact_tie(x: f64, n: usize) -> bool {
        let exact = format!("{:.*e}", n + 40, x.abs());
        let digits: String =
            exact.split_once('e').map_or("", |(m, _)| m).chars().filter(char::is_ascii_digit).collect();
        digits[n..].strip_prefix('5').is_some_and(|r| r.bytes().all(|b| b == b'0'))
    }

    /// [`may_tie`] rules out only doubles that are not ties: never one that is (any double,
    /// floats widened, small multiples of a power of two, which are ties often, and
    /// subnormals).
    #[test]
    fn may_tie_never_rules_out_a_tie() {
        use proptest::prelude::*;
        let doubles = prop_oneof![
            any::<f64>(),
            any::<f32>().prop_map(f64::from),
            (1u64..1 << 24, -60i32..60).prop_map(|(m, e)| m as f64 * 2f64.powi(e)),
            // subnormals
            (1u64..1 << 52).prop_map(f64::from_bits),
        ]
        .prop_filter("finite, not zero", |x| x.is_finite() && *x != 0.0);
        let ties = std::cell::Cell::new(0);
        proptest!(ProptestConfig::with_cases(20_000), |(x in doubles)| {
            let sci = format!("{x:e}");
            let (mant, exp) = sci.split_once('e').expect("an exponent");
            let n = mant.chars().filter(char::is_ascii_digit).count();
            if exact_tie(x, n) {
                ties.set(ties.get() + 1);
                prop_assert!(may_tie(x, exp, n), "{x:e} is a tie at {n} digits");
            }
        });
        // the known tie, and that the cases held some
        assert!(may_tie(0.25 - f64::from(-65.22f32), "1", 16));
        assert!(ties.get() > 20, "{} ties among the cases", ties.get());
    }

    #[test]
    fn cast_to_timestamp_takes_spark_forms_and_refuses_others() {
        let t = |s: &str| parse_cast_timestamp(s).map(timestamp_string);
        assert_eq!(t("2024-01-15 10:00:00").as_deref(), Some("2024-01-15 10:00:00"));
        assert_eq!(t("2024").as_deref(), Some("2024-01-01 00:00:00"));
        assert_eq!(t(" 2024-1-5 1:2:3.5 ").as_deref(), Some("2024-01-05 01:02:03.5"));
        assert_eq!(t("2024-01-15 10:00:00+02:00").as_deref(), Some("2024-01-15 08:00:00"));
        assert_eq!(t("2024-01-15T10:01Z"), None);
        assert_eq!(t("2024-02-30"), None);
        assert_eq!(t("x"), None);
        // an offset of four bytes holding a character of several (a proptest found it slicing
        // inside the character): refused, not a panic
        assert_eq!(t("2024-01-15 10:00:00+1\u{e03a}"), None);
        assert_eq!(zone_offset("+1\u{e03a}"), None);
        assert_eq!(zone_offset("+é12"), None);
    }

    /// What Spark 4.3 made of each text, as `unix_micros(try_cast(s AS TIMESTAMP))` (its JSON
    /// reader gave the same, dropping the lines with `None`); pyspark of the oracle's venv,
    /// session zone UTC.
    #[test]
    fn cast_to_timestamp_agrees_with_spark_on_partial_and_zoned_forms() {
        let spark: [(&str, Option<i64>); 26] = [
            ("2024-01-15", Some(1_705_276_800_000_000)),
            ("2024-01", Some(1_704_067_200_000_000)),
            ("2024", Some(1_704_067_200_000_000)),
            ("2024-01-15T10", Some(1_705_312_800_000_000)),
            ("2024-01-15 10", Some(1_705_312_800_000_000)),
            ("2024-01-15T10:01", Some(1_705_312_860_000_000)),
            ("2024-01-15 10:01", Some(1_705_312_860_000_000)),
            ("2024-01-15T10:01Z", None),
            ("2024-1-5", Some(1_704_412_800_000_000)),
            ("2024-1-5 1:2:3", Some(1_704_416_523_000_000)),
            ("2024-01-15T10:00:00+0100", Some(1_705_309_200_000_000)),
            ("2024-01-15T10:00:00+01", Some(1_705_309_200_000_000)),
            ("2024-01-15T10:00:00 UTC", Some(1_705_312_800_000_000)),
            ("2024-01-15T10:00:00UTC", Some(1_705_312_800_000_000)),
            ("2024-01-15T10:00:00GMT+01:00", Some(1_705_309_200_000_000)),
            ("2024-01-15 ", Some(1_705_276_800_000_000)),
            ("2024-01-15T", None),
            ("2024-01-15T10:00:00.1234567", Some(1_705_312_800_123_456)),
            ("2024-01-15T10:00:00 Z", Some(1_705_312_800_000_000)),
            (" 2024-01-15 10:00:00 ", Some(1_705_312_800_000_000)),
            ("2024-01-15T10:00:00+01:00:30", Some(1_705_309_170_000_000)),
            ("2024-01-15T10:00:00-1", Some(1_705_316_400_000_000)),
            ("2024-01-15T10:00:00.Z", Some(1_705_312_800_000_000)),
            ("2024-01-15 10:00:00.", Some(1_705_312_800_000_000)),
            ("+10000-01-01T00:00:00Z", Some(253_402_300_800_000_000)),
            ("1000000-01-01T00:00:00Z", None),
        ];
        for (text, want) in spark {
            assert_eq!(parse_cast_timestamp(text), want, "{text:?}");
        }
    }

    /// Zones named after the time, as Spark 4.3 read them (`unix_micros(try_cast(s AS
    /// TIMESTAMP))`, and its JSON reader of a TIMESTAMP column gave the same for every text;
    /// pyspark of the oracle's venv, session zone UTC): regions of the tz database (case
    /// matters), Java's three-letter ids, Paris's gap (02:30 read with the offset from before
    /// it) and overlap (the earlier instant), the control character U+007F trimmed.
    #[test]
    fn cast_to_timestamp_reads_named_zones_as_spark() {
        let spark: [(&str, Option<i64>); 35] = [
            ("2024-01-15 10:00:00\x7f", Some(1_705_312_800_000_000)),
            ("2024-01-15 10:00:00 Europe/Paris", Some(1_705_309_200_000_000)),
            ("2024-01-15T10:00:00Europe/Paris", Some(1_705_309_200_000_000)),
            ("2024-01-15 10:00:00 CET", Some(1_705_309_200_000_000)),
            ("2024-01-15 10:00:00 PST", Some(1_705_341_600_000_000)),
            ("2024-01-15 10:00:00 EST", Some(1_705_330_800_000_000)),
            ("2024-03-31 02:30:00 Europe/Paris", Some(1_711_848_600_000_000)),
            ("2024-10-27 02:30:00 Europe/Paris", Some(1_729_989_000_000_000)),
            ("2024-01-15 10:00:00 europe/paris", None),
            ("2024-01-15 10:00:00 Mars/Base", None),
            ("2024-01-15 10:00 Europe/Paris", None),
            ("2024-01-15 10:00:00.123 America/New_York", Some(1_705_330_800_123_000)),
            ("2024-01-15 10:00:00 Etc/GMT+1", Some(1_705_316_400_000_000)),
            ("2024-01-15 10:00:00 UTC+01:00", Some(1_705_309_200_000_000)),
            ("2024-01-15 10:00:00 +1:00", Some(1_705_309_200_000_000)),
            ("2024-01-15 10:00:00 +1:0", Some(1_705_309_200_000_000)),
            ("2024-01-15 10:00:00+1:5", Some(1_705_308_900_000_000)),
            ("2024-01-15 10:00:00 GMT+1:0", Some(1_705_309_200_000_000)),
            ("2024-01-15 10:00:00 +1:0:30", None),
            ("2024-01-15 10:00:00 +01:5:00", None),
            ("2024-01-15 10:00:00\tEurope/Paris", Some(1_705_309_200_000_000)),
            ("2024-01-15 10:00:00 \tZ", Some(1_705_312_800_000_000)),
            ("2024-01-15 10:00:00\x01Z", Some(1_705_312_800_000_000)),
            ("2024-01-15 10:00:00\x7fZ", None),
            ("2024-01-15 10:00:00\u{85}Z", None),
            ("2024-01-15 10:00:00\u{a0}", None),
            ("\u{a0}2024-01-15 10:00:00", None),
            ("\t2024-01-15 10:00:00\t", Some(1_705_312_800_000_000)),
            ("2024-01-15 10:00:00 Europe/Paris ", Some(1_705_309_200_000_000)),
            ("2024-01-15 10:00:00  Europe/Paris", Some(1_705_309_200_000_000)),
            ("2024-07-01 00:00:00 US/Pacific", Some(1_719_817_200_000_000)),
            ("2024-01-15 10:00:00 GMT", Some(1_705_312_800_000_000)),
            ("2024-01-15 10:00:00 Asia/Kolkata", Some(1_705_293_000_000_000)),
            ("2024-01-15 10 Europe/Paris", None),
            ("2024-01-15 Europe/Paris", None),
        ];
        for (text, want) in spark {
            assert_eq!(parse_cast_timestamp(text), want, "{text:?}");
            assert_eq!(crate::time::parse_timestamp(text).ok().map(|t| t.0), want, "decoded {text:?}");
        }
    }
}
