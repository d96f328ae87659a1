//! A TIMESTAMP string of one fixed form, for the JSON layout path ([`super::json_layout`]): the
//! lines of a stream mostly write their timestamps in one form (`2024-01-15T10:00:00.238Z`,
//! Spark's `2024-01-15 10:00:00.238`) and mostly within the minute of the line before.
//!
//! A [`TimeForm`] is learned from one timestamp (its length, whether and how many fraction
//! digits, its `Z`) and reads a timestamp of the same form in two steps: the first 16 bytes,
//! `YYYY-MM-DDTHH:MM`, are compared as two words with those of the last timestamp it read, whose
//! seconds since the epoch it keeps (the date and the minute checked and converted once per
//! minute); the bytes from the seconds to the end, at most 8, are one word checked against the
//! form's template and converted in-register ([`template_diff`], [`top_digits_value`]). Anything else
//! (another form, a field out of range) is declined, for [`timestamp_prefix`] to decide.
//!
//! Why the same value as [`timestamp_prefix`]: a text of the form holds a date, a separator, a
//! time and the form's fraction and zone at fixed places, each checked as `timestamp_prefix`
//! checks it (the minute's fields on a miss, the seconds and the fraction each time); the
//! closing quote after it ends the fraction's digits and stands where an offset would, so
//! `timestamp_prefix` reads the same fields to the same end (`json_layout`'s tests compare the
//! two on every form of `json_props::timestamp_text`).

use crate::time::Timestamp;

use super::json_fast::word;
#[cfg(doc)]
use super::text::timestamp_prefix;
use super::text::{SEP_DATE, T_DATE, day_number, digit_pairs, template_diff, top_digits_value};

/// Longest form kept: the tail from the seconds on (`:SS.fffZ`) must fit one word.
const MAX_LEN: usize = 24;

/// A timestamp form (`YYYY-MM-DD?HH:MM:SS`, then `.` and 1 to 4 digits or not, then `Z` / `z`
/// or not, in at most [`MAX_LEN`] bytes) and the minute it read last.
#[derive(Debug, Clone)]
pub(super) struct TimeForm {
    /// Bytes of the form, 19 to [`MAX_LEN`].
    len: usize,
    /// The form's last 8 bytes as a template for [`template_diff`]: `0` at each digit, the
    /// separators (`:`, `.`, the zone's letter) as they are.
    tail: u64,
    /// The separator bytes of `tail` (0xff each).
    tail_sep: u64,
    /// Bit shift of the seconds' two digits in the tail.
    sec_shift: u32,
    /// Bit shifts that bring the fraction's digits to the top bytes of the tail word (0 without
    /// a fraction).
    frac_right: u32,
    frac_left: u32,
    /// Microseconds per unit of the fraction's last digit (0 without a fraction).
    frac_scale: u64,
    /// The first 16 bytes (`YYYY-MM-DDTHH:MM`) of the last timestamp read, little-endian, once
    /// checked: 0, which is no date, until then.
    minute: u128,
    /// Seconds since the epoch at the start of that minute.
    minute_s: i64,
}

impl TimeForm {
    /// The form of `text`, a whole timestamp that [`timestamp_prefix`] reads; `None` for the
    /// forms not kept (an offset, more fraction digits than fit).
    pub(super) fn of(text: &[u8]) -> Option<TimeForm> {
        let len = text.len();
        if !(19..=MAX_LEN).contains(&len) {
            return None;
        }
        let (frac, zone) = match &text[19..] {
            [] => (0, None),
            [z @ (b'Z' | b'z')] => (0, Some(*z)),
            [b'.', rest @ ..] => {
                let frac = rest.iter().take_while(|c| c.is_ascii_digit()).count();
                match &rest[frac..] {
                    [] => (frac, None),
                    [z @ (b'Z' | b'z')] => (frac, Some(*z)),
                    _ => return None,
                }
            }
            _ => return None,
        };
        if frac == 0 && text.get(19) == Some(&b'.') {
            return None;
        }
        let mut form = b"0000-00-00T00:00:00".to_vec();
        if frac > 0 {
            form.push(b'.');
            form.resize(20 + frac, b'0');
        }
        form.extend(zone);
        debug_assert_eq!(form.len(), len);
        let at = len - 8;
        let tail = word(&form, at)?;
        let tail_sep = form[at..].iter().rev().fold(0u64, |m, &c| m << 8 | if c == b'0' { 0 } else { 0xff });
        let (frac_right, frac_left, frac_scale) = match frac {
            0 => (0, 0, 0),
            _ => (8 * (20 - at) as u32, 8 * (8 - frac) as u32, 10u64.pow(6 - frac as u32)),
        };
        Some(TimeForm {
            len,
            tail,
            tail_sep,
            sec_shift: 8 * (17 - at) as u32,
            frac_right,
            frac_left,
            frac_scale,
            minute: 0,
            minute_s: 0,
        })
    }

    /// The timestamp of this form that `b` starts with, followed by a closing quote: its value
    /// and length, as [`timestamp_prefix`] gives them. `None` when the text there has another
    /// form or a field out of range.
    #[inline(always)]
    pub(super) fn read(&mut self, b: &[u8]) -> Option<(Timestamp, usize)> {
        let text = b.get(..=self.len)?;
        let minute = u128::from_le_bytes(*text.first_chunk::<16>()?);
        if minute != self.minute {
            self.learn_minute(minute)?;
        }
        // The last 8 bytes of the text, then its closing quote.
        let [tail @ .., quote] = *text.last_chunk::<9>()?;
        let d = template_diff(u64::from_le_bytes(tail), self.tail, self.tail_sep)?;
        if quote != b'"' {
            return None;
        }
        let sec = (digit_pairs(d) >> self.sec_shift) as u8;
        if sec > 59 {
            return None;
        }
        // At most 4 digits ([`MAX_LEN`]): they fill the word's top half at most.
        let frac_us = top_digits_value(d >> self.frac_right << self.frac_left) * self.frac_scale;
        Some((Timestamp((self.minute_s + sec as i64) * 1_000_000 + frac_us as i64), self.len))
    }

    /// Checks the date and the minute `YYYY-MM-DD?HH:MM` (the separator `T`, `t` or a space)
    /// and keeps it with its seconds since the epoch; `None` when it is none.
    #[cold]
    #[inline(never)]
    fn learn_minute(&mut self, minute: u128) -> Option<()> {
        let (date, rest) = (minute as u64, (minute >> 64) as u64);
        let [d1, d0, sep, h1, h0, colon, m1, m0] = rest.to_le_bytes();
        if ![d1, d0, h1, h0, m1, m0].iter().all(u8::is_ascii_digit)
            || colon != b':'
            || !matches!(sep, b'T' | b't' | b' ')
        {
            return None;
        }
        let two = |a: u8, b: u8| ((a - b'0') * 10 + (b - b'0')) as i64;
        let (h, mi) = (two(h1, h0), two(m1, m0));
        if h > 23 || mi > 59 {
            return None;
        }
        let days = day_number(template_diff(date, T_DATE, SEP_DATE)?, two(d1, d0) as u32)?;
        self.minute = minute;
        self.minute_s = days * 86_400 + h * 3_600 + mi * 60;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::text::timestamp_prefix;
    use super::*;

    /// Each form learned, then texts of that form and of others read one after another (the
    /// minute remembered, reused and replaced), each to what `timestamp_prefix` gives or
    /// declined; a text of the form that `timestamp_prefix` reads whole is never declined.
    #[test]
    fn a_form_reads_what_timestamp_prefix_reads() {
        let forms =
            ["2024-01-15T10:00:00", "2024-01-15T10:00:00Z", "2024-01-15 10:00:00.238", "2024-01-15t10:00:00.5z"];
        let texts = [
            "2024-01-15T10:00:00",
            "2024-01-15T10:00:59Z",
            "2024-01-15T10:00:60Z",
            "2024-01-15T10:01:09.999Z",
            "2024-01-15 10:00:00.238",
            "2024-01-15 10:00:00.2389",
            "2024-01-15 10:00:00.99",
            "2024-01-15 23:59:59.999",
            "2024-01-15 24:00:00.000",
            "2024-01-15 10:60:00.000",
            "2024-02-29 10:00:00.000",
            "2023-02-29 10:00:00.000",
            "2024-01-15 10:00:00.0a0",
            "2024-01-15 10:00:0a.000",
            "2024-01-15x10:00:00.000",
            "0000-01-01 00:00:00.000",
            "9999-12-31 23:59:59.999",
            "2024-01-15t10:00:00.5z",
            "2024-01-15T10:00:00.5Z",
            "2024-01-15T10:00:00+01:00",
            "2024-01-16T10:00:00",
            "2024-01-15T10:00:00.",
            "2024-01-15T10:00:00.Z",
        ];
        for form in forms {
            let mut f = TimeForm::of(form.as_bytes()).expect(form);
            for round in 0..2 {
                for text in texts {
                    let line = format!("{text}\"");
                    let read = f.read(line.as_bytes());
                    let want = timestamp_prefix(line.as_bytes()).filter(|&(_, n)| line.as_bytes()[n] == b'"');
                    if read.is_some() || (text.len() == form.len() && text.as_bytes()[19..] == form.as_bytes()[19..]) {
                        assert_eq!(read, want, "{form} {text} {round}");
                    }
                }
            }
        }
        for other in ["2024-01-15T10:00:00+01:00", "2024-01-15T10:00:00.12345Z", "2024-01-15T10:00:00.123456"] {
            assert!(TimeForm::of(other.as_bytes()).is_none(), "{other}");
        }
    }
}
