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
    if n < 2 || (digits.as_bytes()[n - 1] - b'0').is_multiple_of(2) {
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

/// `date_format(ts, pattern)` for the patterns built of `yyyy`, `MM`, `dd`, `HH`, `mm`, `ss`,
/// `SSS` and literal separators (`-`, `:`, ` `, `/`, `.`, `T` quoted as `'T'`). `None` for a
/// pattern with other letters.
pub(crate) fn format_timestamp(us: i64, pattern: &[FormatPart]) -> String {
    let (y, mo, d, h, mi, s, frac) = civil(us);
    let mut out = String::with_capacity(20);
    for p in pattern {
        let _ = match p {
            FormatPart::Year => write!(out, "{}", crate::time::Year(y)),
            FormatPart::Month => write!(out, "{mo:02}"),
            FormatPart::Day => write!(out, "{d:02}"),
            FormatPart::Hour => write!(out, "{h:02}"),
            FormatPart::Minute => write!(out, "{mi:02}"),
            FormatPart::Second => write!(out, "{s:02}"),
            FormatPart::Millis => write!(out, "{:03}", frac / 1000),
            FormatPart::Text(t) => out.write_str(t),
        };
    }
    out
}

/// One part of a `date_format` pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FormatPart {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Millis,
    Text(String),
}

/// Parses a `date_format` pattern into parts; `None` for letters other than the supported ones.
pub(crate) fn parse_format(pattern: &str) -> Option<Vec<FormatPart>> {
    let mut parts = Vec::new();
    let mut rest = pattern;
    while !rest.is_empty() {
        let (part, len) = if rest.starts_with("yyyy") {
            (FormatPart::Year, 4)
        } else if rest.starts_with("MM") {
            (FormatPart::Month, 2)
        } else if rest.starts_with("dd") {
            (FormatPart::Day, 2)
        } else if rest.starts_with("HH") {
            (FormatPart::Hour, 2)
        } else if rest.starts_with("mm") {
            (FormatPart::Minute, 2)
        } else if rest.starts_with("ss") {
            (FormatPart::Second, 2)
        } else if rest.starts_with("SSS") {
            (FormatPart::Millis, 3)
        } else if rest.starts_with("'T'") {
            (FormatPart::Text("T".into()), 3)
        } else {
            let c = rest.chars().next()?;
            if c.is_ascii_alphabetic() || c == '\'' {
                return None;
            }
            (FormatPart::Text(c.to_string()), c.len_utf8())
        };
        // a run of one letter longer than the supported width (`yyyyy`) is another pattern
        if let Some(next) = rest[len..].chars().next()
            && !matches!(part, FormatPart::Text(_))
            && rest.starts_with(next)
        {
            return None;
        }
        parts.push(part);
        rest = &rest[len..];
    }
    Some(parts)
}

/// Whitespace as Spark's `UTF8String.trimAll` strips it before parsing a cast's input: every
/// character up to U+0020.
pub(crate) fn trim_spark(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// `CAST(s AS TIMESTAMP)` as Spark's `stringToTimestamp` with the session zone UTC:
/// `yyyy`, `yyyy-[m]m`, `yyyy-[m]m-[d]d`, optionally followed by `T` or a space and
/// `[h]h:[m]m:[s]s[.fraction]` (a fraction of up to 9 digits, cut to µs) and a zone (`Z`, `UTC`,
/// `+hh:mm`, `-hh:mm`, `+hh`). `None` when the text is not of these forms or a field is out of
/// range (Spark's CAST_INVALID_INPUT).
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
    let mut offset_s = 0i64;
    if i < b.len() {
        if b[i] != b'T' && b[i] != b' ' {
            return None;
        }
        i += 1;
        if i < b.len() {
            h = digits(&mut i, 1, 2)?;
            if b.get(i) != Some(&b':') {
                return None;
            }
            i += 1;
            mi = digits(&mut i, 1, 2)?;
            if b.get(i) != Some(&b':') {
                return None;
            }
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
            if h > 23 || mi > 59 || sec > 59 {
                return None;
            }
            let zone = s[i..].trim_start();
            offset_s = match zone {
                "" | "Z" | "UTC" | "GMT" | "UT" => 0,
                z if z.starts_with('+') || z.starts_with('-') => {
                    let neg = z.starts_with('-');
                    let (zh, zm) = match z[1..].split_once(':') {
                        Some((a, b)) => (a, b),
                        None => (&z[1..], "0"),
                    };
                    if zh.is_empty() || zh.len() > 2 || zm.len() > 2 || zm.is_empty() {
                        return None;
                    }
                    let (zh, zm): (i64, i64) = (zh.parse().ok()?, zm.parse().ok()?);
                    if zh > 18 || zm > 59 {
                        return None;
                    }
                    (zh * 3600 + zm * 60) * if neg { -1 } else { 1 }
                }
                _ => return None,
            };
            i = b.len();
        }
    }
    if i != b.len() {
        return None;
    }
    let days = days_from_civil(y, mo as u32, d as u32);
    let secs = days.checked_mul(86_400)? + h * 3600 + mi * 60 + sec - offset_s;
    secs.checked_mul(US_PER_SEC)?.checked_add(frac)
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
    }
}
