//! The functions and operators behind [`Node::Call`](super::Node::Call): what each computes on
//! non-null (or, for the few null-aware ones, any) argument values, as Spark 4.3 computes it
//! under ANSI mode.

use crate::value::{Fields, Text};
use std::sync::Arc;

use md5::Digest as _;
use regex::Regex;

use super::EvalErrorKind::{self, ArithmeticOverflow, DivideByZero};
use super::dates::{date_of_micros, micros_of_day, parse_cast_date, parse_with_pattern};
use super::json::{PathStep, get_json_object, to_json};
use super::text::{self, FormatPart, parse_cast_timestamp};
use crate::schema::StructType;
use crate::time::Timestamp;
use crate::value::Value;

/// A function or operator over already-typed arguments.
#[derive(Clone, Debug)]
pub enum Func {
    /// `+ - * % div pmod` and their `try_` forms, on integral or floating operands of one type.
    Arith {
        /// Which operation.
        op: ArithOp,
        /// NULL instead of an overflow / division-by-zero error.
        try_: bool,
    },
    /// `/` on DOUBLE operands; `try_divide` gives NULL for a zero divisor.
    Divide {
        /// `try_divide`.
        try_: bool,
    },
    /// Unary minus.
    Negate,
    /// `abs`.
    Abs,
    /// A comparison of two operands of one type.
    Compare(CmpOp),
    /// `<=>`.
    NullSafeEq,
    /// `NOT`.
    Not,
    /// `IS [NOT] NULL`.
    IsNull {
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// `LIKE` / `ILIKE` with a constant pattern, compiled.
    Like(Arc<Regex>),
    /// `RLIKE` with a constant pattern.
    RLike(Arc<Regex>),
    /// `LIKE` / `ILIKE` with a pattern computed per record (the second argument), compiled
    /// per distinct pattern through a small per-thread cache; a bad escape fails the record
    /// (INVALID_FORMAT).
    LikeDynamic {
        /// `ILIKE`.
        ilike: bool,
        /// The escape character (`\\` unless `ESCAPE 'c'`).
        escape: char,
    },
    /// `RLIKE` / `regexp_like` with a pattern computed per record (the second argument): a Java
    /// regular expression as for [`Func::RLike`], compiled per distinct pattern through a small
    /// per-thread cache; a pattern Rust's `regex` cannot read fails the record
    /// (INVALID_FORMAT).
    RLikeDynamic,
    /// `lower`.
    Lower,
    /// `upper`.
    Upper,
    /// `length` / `char_length`.
    Length,
    /// `substring(s, pos, len)`.
    Substring,
    /// `concat` / `||`.
    Concat,
    /// `concat_ws(sep, ...)` (skips NULL arguments).
    ConcatWs,
    /// `trim` (spaces).
    Trim,
    /// `ltrim`.
    LTrim,
    /// `rtrim`.
    RTrim,
    /// `lpad(s, len, pad)`.
    Lpad,
    /// `rpad(s, len, pad)`.
    Rpad,
    /// `replace(s, search, replacement)`.
    Replace,
    /// `instr(s, sub)`; `locate(sub, s)` with its arguments swapped by the binder.
    Instr,
    /// `locate(sub, s, pos)` as `[s, sub, pos]`: the 1-based position of `sub` in `s` at or
    /// after character `pos`, 0 if absent or `pos < 1`, 0 for a NULL `pos` (Spark's
    /// `StringLocate`, which follows Hive there); an empty `sub` is found at 1 for any
    /// `pos >= 1` (Spark's `UTF8String.indexOf` returns 0 for it).
    Locate,
    /// `startswith`.
    StartsWith,
    /// `endswith`.
    EndsWith,
    /// `contains`.
    Contains,
    /// `regexp_replace(s, re, replacement)`: the replacement as a `regex` template when it
    /// names groups or escapes (Java's `$1`, `${name}`, `\$`), else literal.
    RegexpReplace(Arc<Regex>, Option<Arc<str>>),
    /// `regexp_extract(s, re, group)`.
    RegexpExtract(Arc<Regex>, usize),
    /// `right(s, n)` (`left` is a substring).
    Right,
    /// `initcap`.
    Initcap,
    /// `reverse`.
    Reverse,
    /// `split_part(s, delimiter, n)`.
    SplitPart,
    /// `md5` (lowercase hex).
    Md5,
    /// `sha2(s, bits)` with the bit length fixed at binding.
    Sha2(u16),
    /// `round` (HALF_UP) / `bround` (HALF_EVEN) to `scale` decimal places.
    Round {
        /// Decimal places (negative: tens, hundreds, ...).
        scale: i32,
        /// `bround`.
        half_even: bool,
    },
    /// `floor` / `ceil` of a DOUBLE to BIGINT.
    FloorCeil {
        /// `ceil`.
        ceil: bool,
    },
    /// A DOUBLE function of one DOUBLE argument.
    Math1(Math1),
    /// `log(base, x)`.
    Log,
    /// `pow` / `power`.
    Pow,
    /// `greatest` / `least` (skip NULL arguments).
    Extreme {
        /// `greatest`.
        greatest: bool,
    },
    /// A field of a timestamp (UTC).
    TimeField(TimeField),
    /// `unix_seconds` / `unix_millis` / `unix_micros`: µs divided (flooring) by this.
    UnixTime(i64),
    /// `current_timestamp()` / `now()`: the processing time ([`super::processing_time`]).
    CurrentTimestamp,
    /// `unix_timestamp`: µs divided by 1 000 000, truncating toward zero (Spark's
    /// `UnixTimestamp` divides as Java does: 1969-12-31 23:59:59.5 is 0, where `unix_seconds`
    /// floors to -1).
    UnixTimestamp,
    /// `timestamp_seconds` / `timestamp_millis` / `timestamp_micros`: an integer times this;
    /// DATETIME_OVERFLOW past BIGINT's range, as Spark.
    FromUnix(i64),
    /// `timestamp_seconds` of a DECIMAL: the exact microseconds
    /// ([`super::decimal::seconds_micros`]: DATETIME_OVERFLOW, or ROUNDING_NECESSARY for digits
    /// below the microsecond, as Spark's `SecondsToTimestamp`).
    FromUnixDecimal,
    /// `timestamp_seconds` of a DOUBLE (a FLOAT widened to it): as Spark's `SecondsToTimestamp`,
    /// NULL for NaN and the infinities, else the seconds times 10^6 as a DOUBLE, truncated
    /// toward zero and clamped to BIGINT's range (Java's `toLong`), never an error.
    FromUnixDouble,
    /// `date_trunc(unit, ts)`.
    DateTrunc(TruncUnit),
    /// `date_format(ts, pattern)` (the pattern parsed at binding).
    DateFormat(DateFormat),
    /// `ts + INTERVAL` (µs; negative for `-`).
    AddMicros(i64),
    /// `+ - * / % pmod` on two DECIMAL operands, at the result type of Spark's rules
    /// (`expr/decimal.rs`).
    DecimalArith {
        /// Which operation.
        op: crate::decimal::DecimalOp,
        /// NULL instead of an overflow / division-by-zero error.
        try_: bool,
        /// The result's precision.
        precision: u8,
        /// The result's scale.
        scale: u8,
    },
    /// `div` on two DECIMAL operands: the quotient truncated, as BIGINT.
    DecimalIntDiv {
        /// NULL instead of an error.
        try_: bool,
    },
    /// `round` / `bround` / `floor` / `ceil` of a DECIMAL at Spark's result type.
    DecimalRound {
        /// Digits kept after the point (negative: tens, hundreds, ...); 0 for floor / ceil.
        places: i64,
        /// HALF_UP (`round`), HALF_EVEN (`bround`), Floor or Ceil.
        mode: crate::decimal::Rounding,
        /// The result's precision.
        precision: u8,
        /// The result's scale.
        scale: u8,
    },
    /// `struct(...)` / `named_struct(...)`: the arguments as the fields of this type (NULL
    /// arguments are NULL fields, the struct is not NULL).
    MakeStruct(StructType),
    /// `s.field`: the field at this index of a struct.
    GetField(usize),
    /// `window.start` / `window.end`.
    WindowBound {
        /// `end` (else `start`).
        end: bool,
    },
    /// `window_time(window)`: the window's end - 1 µs (Spark's `window_time`, the event time
    /// of a window's output row).
    WindowTime,
    /// `to_json(struct)`.
    ToJson,
    /// `hash(...)`: Spark's Murmur3 hash of the arguments (NULL arguments skipped), INT.
    Hash,
    /// `get_json_object(s, path)` with the path parsed at binding.
    GetJsonObject(Arc<[PathStep]>),
    /// `to_date(x[, pattern])`: a STRING parsed (as `CAST(s AS DATE)` without a pattern), the
    /// date of a TIMESTAMP, a DATE as is.
    ToDate {
        /// The pattern (`to_date(s, 'MM/dd/yyyy')`); none: as `CAST(s AS DATE)`.
        pattern: Option<DateFormat>,
        /// `try_to_date`: NULL instead of a parse error.
        try_: bool,
    },
    /// A DOUBLE function of two DOUBLE arguments.
    Math2(Math2),
    /// `from_utc_timestamp(ts, zone)` (`to_utc`: false) / `to_utc_timestamp(ts, zone)` as
    /// `[ts, zone]`: the zone parsed at binding when it is a literal, else per row
    /// (INVALID_TIMEZONE where it names none).
    ShiftZone {
        /// `to_utc_timestamp`.
        to_utc: bool,
        /// The zone of a literal argument.
        zone: Option<super::zones::Zone>,
    },
    /// `next_day(d, day)`: the first date after `d` on this day of the week (0 = Monday).
    NextDay(u8),
    /// `timestampadd(unit, n, ts)` as `[n, ts]`: months added as `LocalDateTime.plusMonths`
    /// (the day clamped to the month's last), a fixed unit as that many µs.
    TimestampAdd(TimeStep),
    /// `timestampdiff(unit, start, end)`: whole units from `start` to `end`, toward zero, as
    /// Java's `ChronoUnit.between` on UTC date-times (months: the days and times compared).
    TimestampDiff(TimeStep),
    /// `factorial(n)`: BIGINT for 0 <= n <= 20, NULL otherwise.
    Factorial,
    /// `extract(SECOND FROM ts)`: the seconds with their µs, DECIMAL(8, 6).
    SecondWithFraction,
    /// `isnan(x)`: false for NULL (null-aware, as Spark's `IsNaN`).
    IsNan,
    /// `nanvl(x, y)`: `y` where `x` is NaN, else `x`; NULL where `x` is (null-aware, as Spark's
    /// `NaNvl`, which reads `y` only for a NaN).
    Nanvl,
    /// Bitwise operators and shifts on INT / BIGINT operands of one type (the shift count an
    /// INT, masked to the width as Java masks it).
    Bit(BitOp),
    /// `date_add(d, n)` / `date_sub` (`sub`): a DATE moved by INT days.
    DateAdd {
        /// `date_sub`.
        sub: bool,
    },
    /// `datediff(end, start)`: `end - start` in days (INT).
    DateDiff,
    /// `add_months(d, n)`: as `LocalDate.plusMonths`, the day clamped to the month's last.
    AddMonths,
    /// `last_day(d)`: the last day of the date's month.
    LastDay,
    /// `make_date(y, m, d)`: DATETIME_FIELD_OUT_OF_BOUNDS for a date that does not exist.
    MakeDate,
    /// `unix_date(d)`: days since 1970-01-01 (INT).
    UnixDate,
    /// `date_from_unix_date(n)`: the DATE `n` days after 1970-01-01.
    DateFromUnixDate,
    /// `TRIM([side] chars FROM s)` / `btrim(s, chars)`: every character of `chars` removed from
    /// the start (`leading`) and / or the end (`trailing`) of `s`, as `[s, chars]`.
    TrimChars {
        /// Trims the start.
        leading: bool,
        /// Trims the end.
        trailing: bool,
    },
    /// `octet_length` (bytes of the UTF-8 text, INT).
    OctetLength,
    /// `bit_length` (8 times the bytes).
    BitLength,
    /// `ascii(s)`: the code point of the first character, 0 for an empty string.
    Ascii,
    /// `chr(n)` / `char(n)`: the character `n mod 256` (Latin-1), empty for a negative `n`.
    Chr,
    /// `repeat(s, n)`: `s` `n` times (empty for `n <= 0`).
    Repeat,
    /// `translate(s, from, to)`: each character of `from` replaced by the one at its position in
    /// `to`, or removed where `to` is shorter; the first occurrence in `from` counts.
    Translate,
    /// `sha1` (lowercase hex).
    Sha1,
    /// `crc32` (BIGINT).
    Crc32,
    /// `base64` of the UTF-8 bytes (padded, one line).
    Base64,
    /// `hex`: an INT / BIGINT as upper-case hex of its 64-bit two's complement, a STRING as
    /// upper-case hex of its bytes.
    Hex,
    /// `regexp_count(s, re)`: the matches (INT).
    RegexpCount(Arc<Regex>),
    /// `regexp_substr(s, re)`: the first match, NULL where none.
    RegexpSubstr(Arc<Regex>),
    /// `to_timestamp(x[, pattern])` / `try_to_timestamp`: a STRING parsed (as
    /// `CAST(s AS TIMESTAMP)` without a pattern), a DATE's midnight, a TIMESTAMP as is.
    ToTimestamp {
        /// The datetime pattern, parsed at binding.
        pattern: Option<DateFormat>,
        /// `try_to_timestamp`: NULL instead of an error.
        try_: bool,
    },
    /// `substring_index(s, delim, count)`: `s` before the `count`-th `delim` from the left
    /// (`count > 0`) or after the `-count`-th from the right; occurrences may overlap and are
    /// found byte by byte, as Spark's `UTF8String.subStringIndex`. Empty for an empty `delim`
    /// or a `count` of 0; all of `s` when there are fewer occurrences.
    SubstringIndex,
    /// `space(n)`: `n` spaces (none for `n <= 0`).
    Space,
    /// `find_in_set(x, list)`: the 1-based position of `x` among the comma-separated items of
    /// `list`, 0 when absent or when `x` contains a comma.
    FindInSet,
    /// `levenshtein(a, b[, threshold])`: the edit distance in characters; with a threshold, -1
    /// when the distance exceeds it.
    Levenshtein,
    /// `bit_count(x)`: the bits set in an INT or BIGINT as a BIGINT (Java's `Long.bitCount` of
    /// the widened value: 64 for -1), 1 or 0 for a BOOLEAN.
    BitCount,
    /// `bin(x)`: a BIGINT in base 2, two's complement for a negative one (Java's
    /// `Long.toBinaryString`).
    Bin,
    /// `width_bucket(v, min, max, n)`: the bucket of `v` among `n` equal ones from `min` to
    /// `max` (either way round), 0 before the first and `n + 1` after the last; NULL for
    /// `n <= 0` or `n` = BIGINT's maximum, `min = max`, or a NaN or infinite bound (Spark's
    /// `WidthBucket`).
    WidthBucket,
    /// `make_timestamp(year, month, day, hour, minute, second)` as a wall-clock time in µs,
    /// the second a DECIMAL(16, 6) in [0, 60] (60 only whole: the next minute); a field out of
    /// range fails (DATETIME_FIELD_OUT_OF_BOUNDS) or, `try_make_timestamp`, is NULL. With a
    /// time zone the binder shifts the result to UTC ([`Func::ShiftZone`]).
    MakeTimestamp {
        /// `try_make_timestamp`.
        try_: bool,
    },
    /// `conv(num, from_base, to_base)`: the digits of `num` (trimmed, an optional `-`, read up
    /// to the first that is no digit of `from_base`) as an unsigned 64-bit number written in
    /// `to_base`, upper case; a negative `to_base` writes it signed. NULL for an empty `num`
    /// or a base outside 2..=36; more than 64 bits fail (ARITHMETIC_OVERFLOW), as Spark's
    /// `NumberConverter` with ANSI on.
    Conv,
    /// `format_number(x, d)`: `x` rounded half-even to `d` decimals with `,` between groups
    /// of three digits, as Java's `DecimalFormat("#,###.00")`; NULL for `d < 0`.
    FormatNumber,
    /// `months_between(t1, t2[, round_off])`: whole months from `t2` to `t1`, plus the rest
    /// as days and seconds over 31-day months, unless both are the same day of the month or
    /// both the last day of one; `round_off` (the default) rounds to 8 decimals (Spark's
    /// `DateTimeUtils.monthsBetween`, which follows Hive).
    MonthsBetween,
}

/// A parsed `date_format` pattern.
#[derive(Clone, Debug)]
pub struct DateFormat(pub(crate) Arc<[FormatPart]>);

/// Arithmetic operations of [`Func::Arith`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `%`
    Rem,
    /// `pmod`
    Pmod,
    /// `div`
    IntDiv,
}

/// Comparison operators of [`Func::Compare`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
}

impl CmpOp {
    /// Whether the comparison holds for operands ordered `o` (left against right).
    #[inline]
    pub(crate) fn holds(self, o: std::cmp::Ordering) -> bool {
        match self {
            CmpOp::Eq => o.is_eq(),
            CmpOp::Lt => o.is_lt(),
            CmpOp::LtEq => o.is_le(),
            CmpOp::Gt => o.is_gt(),
            CmpOp::GtEq => o.is_ge(),
        }
    }
}

/// DOUBLE functions of one argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Math1 {
    /// `sqrt` (NaN below 0).
    Sqrt,
    /// `exp`.
    Exp,
    /// `ln` (NULL at or below 0).
    Ln,
    /// `log10` (NULL at or below 0).
    Log10,
    /// `log2` (NULL at or below 0).
    Log2,
    /// `sign` / `signum`.
    Sign,
    /// `cbrt`.
    Cbrt,
    /// `sin`.
    Sin,
    /// `cos`.
    Cos,
    /// `tan`.
    Tan,
    /// `cot` (1 / tan).
    Cot,
    /// `asin` (NaN outside [-1, 1]).
    Asin,
    /// `acos` (NaN outside [-1, 1]).
    Acos,
    /// `atan`.
    Atan,
    /// `sinh`.
    Sinh,
    /// `cosh`.
    Cosh,
    /// `tanh`.
    Tanh,
    /// `degrees`.
    Degrees,
    /// `radians`.
    Radians,
    /// `log1p` (NULL at or below -1).
    Log1p,
    /// `expm1`.
    Expm1,
    /// `rint` (to the nearest integer, ties to even, as Java's `Math.rint`).
    Rint,
    /// `asinh`.
    Asinh,
    /// `acosh` (NaN below 1).
    Acosh,
    /// `atanh` (NaN outside [-1, 1], infinite at -1 and 1).
    Atanh,
    /// `sec` (1 / cos).
    Sec,
    /// `csc` (1 / sin).
    Csc,
}

/// DOUBLE functions of two DOUBLE arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Math2 {
    /// `atan2(y, x)`.
    Atan2,
    /// `hypot(a, b)`.
    Hypot,
}

/// A unit of `timestampadd` / `timestampdiff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeStep {
    /// A fixed length in µs (microsecond to week).
    Micros(i64),
    /// Months (1 month, 3 a quarter, 12 a year).
    Months(i64),
}

/// Bitwise operations of [`Func::Bit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitOp {
    /// `&`
    And,
    /// `|`
    Or,
    /// `^`
    Xor,
    /// `~` (one operand)
    Not,
    /// `shiftleft(n, k)`
    ShiftLeft,
    /// `shiftright(n, k)` (arithmetic)
    ShiftRight,
}

/// Fields of a timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeField {
    /// `year`.
    Year,
    /// `month`.
    Month,
    /// `day` / `dayofmonth`.
    Day,
    /// `dayofweek` (1 = Sunday .. 7 = Saturday).
    DayOfWeek,
    /// `hour`.
    Hour,
    /// `minute`.
    Minute,
    /// `second`.
    Second,
    /// `dayofyear` (1 to 366).
    DayOfYear,
    /// `weekofyear`: the ISO 8601 week (weeks start on Monday; week 1 holds the year's first
    /// Thursday).
    WeekOfYear,
    /// `quarter` (1 to 4).
    Quarter,
    /// `extract(DAYOFWEEK_ISO FROM ts)`: 1 = Monday .. 7 = Sunday.
    DayOfWeekIso,
    /// `weekday`: 0 for Monday to 6 for Sunday.
    Weekday,
}

/// Units of `date_trunc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TruncUnit {
    /// Year.
    Year,
    /// Quarter.
    Quarter,
    /// Month.
    Month,
    /// Week (from Monday).
    Week,
    /// A fixed length in µs (day, hour, minute, second, millisecond, microsecond).
    Fixed(i64),
}

impl Func {
    /// Whether a NULL argument stops the evaluation of the arguments after it (the call is
    /// NULL, and a later argument's error is never raised): Spark's generated code for its
    /// null-intolerant unary to n-ary expressions evaluates a child only after the ones before
    /// it were not NULL. `concat` (Spark's `Concat` evaluates every child first) and the
    /// functions that read NULLs evaluate every argument.
    pub(crate) fn stops_at_null(&self) -> bool {
        self.null_intolerant() && !matches!(self, Func::Concat)
    }

    /// Whether a NULL argument gives NULL without calling [`Func::apply`].
    pub(crate) fn null_intolerant(&self) -> bool {
        !matches!(
            self,
            Func::NullSafeEq
                | Func::IsNull { .. }
                | Func::ConcatWs
                | Func::Extreme { .. }
                | Func::MakeStruct(_)
                | Func::Hash
                | Func::Locate
                | Func::IsNan
                | Func::Nanvl
        )
    }

    /// Computes the function on its arguments (non-null unless the function is null-aware).
    pub(crate) fn apply(&self, a: &[Value]) -> Result<Value, EvalErrorKind> {
        let s = |i: usize| a[i].as_str().unwrap_or("");
        let n = |i: usize| a[i].as_i64().unwrap_or(0);
        let f = |i: usize| a[i].as_f64().unwrap_or(0.0);
        let st = |x: String| Ok(Value::Str(Text::from(x)));
        Ok(match self {
            Func::Arith { op, try_ } => match arith(*op, &a[0], &a[1]) {
                Err(_) if *try_ => Value::Null,
                r => r?,
            },
            Func::Divide { try_ } => {
                if f(1) == 0.0 {
                    if *try_ {
                        return Ok(Value::Null);
                    }
                    return Err(DivideByZero);
                }
                Value::Double(f(0) / f(1))
            }
            Func::Negate => match a[0] {
                Value::Decimal(d) => Value::Decimal(crate::decimal::Decimal::new(-d.unscaled, d.scale)),
                Value::Int(x) => Value::Int(x.checked_neg().ok_or(ArithmeticOverflow)?),
                Value::Long(x) => Value::Long(x.checked_neg().ok_or(ArithmeticOverflow)?),
                Value::Float(x) => Value::Float(-x),
                _ => Value::Double(-f(0)),
            },
            Func::Abs => match a[0] {
                Value::Decimal(d) => Value::Decimal(crate::decimal::Decimal::new(d.unscaled.abs(), d.scale)),
                Value::Int(x) => Value::Int(x.checked_abs().ok_or(ArithmeticOverflow)?),
                Value::Long(x) => Value::Long(x.checked_abs().ok_or(ArithmeticOverflow)?),
                Value::Float(x) => Value::Float(x.abs()),
                _ => Value::Double(f(0).abs()),
            },
            Func::Compare(op) => Value::Bool(op.holds(a[0].total_cmp(&a[1]))),
            Func::NullSafeEq => Value::Bool(a[0].total_cmp(&a[1]).is_eq()),
            Func::Not => Value::Bool(!matches!(a[0], Value::Bool(true))),
            Func::IsNull { negated } => Value::Bool(a[0].is_null() != *negated),
            Func::Like(re) | Func::RLike(re) => Value::Bool(re.is_match(s(0))),
            Func::LikeDynamic { ilike, escape } => Value::Bool(like_dynamic(s(1), *ilike, *escape)?.is_match(s(0))),
            Func::RLikeDynamic => Value::Bool(rlike_dynamic(s(1))?.is_match(s(0))),
            // An ASCII string with no letter to change is its own result: the same shared
            // string, not a copy (no allocation per record for keys already in that case).
            Func::Lower => match &a[0] {
                Value::Str(x) if x.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) => a[0].clone(),
                _ => return st(s(0).to_lowercase()),
            },
            Func::Upper => match &a[0] {
                Value::Str(x) if x.bytes().all(|b| b.is_ascii() && !b.is_ascii_lowercase()) => a[0].clone(),
                _ => return st(s(0).to_uppercase()),
            },
            Func::Length => Value::Int(s(0).chars().count() as i32),
            Func::Substring => return st(substring(s(0), n(1), n(2)).to_string()),
            Func::Concat => {
                within_string_limit(a.iter().map(|v| v.as_str().map_or(0, |x| x.len() as u64)).sum())?;
                return Ok(Value::Str(Text::concat(a.iter().map(|v| v.as_str().unwrap_or("")))));
            }
            Func::ConcatWs => {
                if a[0].is_null() {
                    return Ok(Value::Null);
                }
                let parts: Vec<&str> = a[1..].iter().filter_map(Value::as_str).collect();
                let seps = parts.len().saturating_sub(1) as u64 * s(0).len() as u64;
                within_string_limit(parts.iter().map(|p| p.len() as u64).sum::<u64>().saturating_add(seps))?;
                return st(parts.join(s(0)));
            }
            Func::Trim => return st(s(0).trim_matches(' ').to_string()),
            Func::LTrim => return st(s(0).trim_start_matches(' ').to_string()),
            Func::RTrim => return st(s(0).trim_end_matches(' ').to_string()),
            Func::Lpad | Func::Rpad => return st(pad(s(0), n(1), s(2), matches!(self, Func::Lpad))?),
            Func::Replace => {
                if s(1).is_empty() {
                    return st(s(0).to_string());
                }
                if s(2).len() > s(1).len() {
                    let grows = (s(2).len() - s(1).len()) as u64;
                    within_string_limit((s(0).len() as u64).saturating_add(grows * s(0).matches(s(1)).count() as u64))?;
                }
                return st(s(0).replace(s(1), s(2)));
            }
            Func::Instr => Value::Int(match s(0).find(s(1)) {
                Some(byte) => s(0)[..byte].chars().count() as i32 + 1,
                None => 0,
            }),
            Func::Locate => {
                if a[2].is_null() {
                    return Ok(Value::Int(0));
                }
                if a[0].is_null() || a[1].is_null() {
                    return Ok(Value::Null);
                }
                Value::Int(locate(s(0), s(1), n(2)))
            }
            Func::StartsWith => Value::Bool(s(0).starts_with(s(1))),
            Func::EndsWith => Value::Bool(s(0).ends_with(s(1))),
            Func::Contains => Value::Bool(s(0).contains(s(1))),
            Func::RegexpReplace(re, template) => {
                // at most one match per position (and one at the end), each replaced whole: the
                // result is the text less what matched plus one replacement per match, which is
                // at most the template's text plus each group it names (each no longer than the
                // text)
                let len = s(0).len() as u64;
                let with = match template {
                    None => s(2).len() as u64,
                    Some(t) => (t.len() as u64).saturating_add((t.matches("${").count() as u64).saturating_mul(len)),
                };
                if len.saturating_add((len + 1).saturating_mul(with)) > MAX_STRING_BYTES {
                    let (matches, matched) =
                        re.find_iter(s(0)).fold((0u64, 0u64), |(n, b), m| (n + 1, b + m.len() as u64));
                    within_string_limit((len - matched).saturating_add(matches.saturating_mul(with)))?;
                }
                return st(match template {
                    None => re.replace_all(s(0), regex::NoExpand(s(2))).into_owned(),
                    Some(t) => re.replace_all(s(0), &**t).into_owned(),
                });
            }
            Func::RegexpExtract(re, group) => {
                let found = re.captures(s(0)).and_then(|c| c.get(*group)).map_or("", |m| m.as_str());
                return st(found.to_string());
            }
            Func::Right => {
                let k = n(1);
                return st(if k <= 0 { String::new() } else { substring(s(0), -k, i32::MAX as i64).to_string() });
            }
            Func::Initcap => return st(initcap(s(0))),
            Func::Reverse => return st(s(0).chars().rev().collect()),
            Func::SplitPart => return split_part(s(0), s(1), n(2)).map(|x| Value::Str(Text::from(x))),
            Func::Md5 => return st(hex(&md5::Md5::digest(s(0).as_bytes()))),
            Func::Sha2(bits) => {
                let b = s(0).as_bytes();
                return st(match bits {
                    224 => hex(&sha2::Sha224::digest(b)),
                    384 => hex(&sha2::Sha384::digest(b)),
                    512 => hex(&sha2::Sha512::digest(b)),
                    _ => hex(&sha2::Sha256::digest(b)),
                });
            }
            Func::Round { scale, half_even } => match a[0] {
                Value::Double(x) => Value::Double(round_f64(x, *scale, *half_even)),
                // a FLOAT rounds as the DOUBLE it widens to (Spark: `round(2.675f, 2)` is 2.67)
                Value::Float(x) => Value::Float(round_f64(x as f64, *scale, *half_even) as f32),
                Value::Int(x) => {
                    Value::Int(i32::try_from(round_int(x as i64, *scale, *half_even)?).map_err(|_| ArithmeticOverflow)?)
                }
                _ => Value::Long(round_int(n(0), *scale, *half_even)?),
            },
            Func::FloorCeil { ceil } => match a[0] {
                Value::Int(_) | Value::Long(_) => Value::Long(n(0)),
                _ => {
                    let x = if *ceil { f(0).ceil() } else { f(0).floor() };
                    // ANSI: a result outside BIGINT (infinities too) is an overflow
                    if !(x.is_nan() || (-9.223372036854776e18..9.223372036854776e18).contains(&x)) {
                        return Err(ArithmeticOverflow);
                    }
                    Value::Long(x as i64)
                }
            },
            Func::Math1(m) => {
                let x = f(0);
                let log = |y: f64| if x <= 0.0 { Value::Null } else { Value::Double(y) };
                match m {
                    Math1::Sqrt => Value::Double(x.sqrt()),
                    Math1::Exp => Value::Double(x.exp()),
                    Math1::Ln => log(x.ln()),
                    Math1::Log10 => log(x.log10()),
                    Math1::Log2 => log(x.ln() / std::f64::consts::LN_2),
                    Math1::Sign => Value::Double(if x.is_nan() || x == 0.0 { x } else { x.signum() }),
                    Math1::Cbrt => Value::Double(x.cbrt()),
                    Math1::Sin => Value::Double(x.sin()),
                    Math1::Cos => Value::Double(x.cos()),
                    Math1::Tan => Value::Double(x.tan()),
                    Math1::Cot => Value::Double(1.0 / x.tan()),
                    Math1::Asin => Value::Double(x.asin()),
                    Math1::Acos => Value::Double(x.acos()),
                    Math1::Atan => Value::Double(x.atan()),
                    Math1::Sinh => Value::Double(x.sinh()),
                    Math1::Cosh => Value::Double(x.cosh()),
                    Math1::Tanh => Value::Double(x.tanh()),
                    Math1::Degrees => Value::Double(x.to_degrees()),
                    Math1::Radians => Value::Double(x.to_radians()),
                    Math1::Log1p => {
                        if x <= -1.0 {
                            Value::Null
                        } else {
                            Value::Double(x.ln_1p())
                        }
                    }
                    Math1::Expm1 => Value::Double(x.exp_m1()),
                    Math1::Rint => Value::Double(x.round_ties_even()),
                    // past 1e300, x + sqrt(x² ± 1) overflows: ln(2x) as ln 2 + ln x
                    Math1::Asinh if x.abs() > 1e300 => {
                        Value::Double((std::f64::consts::LN_2 + x.abs().ln()).copysign(x))
                    }
                    Math1::Asinh => Value::Double(x.asinh()),
                    Math1::Acosh if x > 1e300 => Value::Double(std::f64::consts::LN_2 + x.ln()),
                    Math1::Acosh => Value::Double(x.acosh()),
                    Math1::Atanh => Value::Double(x.atanh()),
                    Math1::Sec => Value::Double(1.0 / x.cos()),
                    Math1::Csc => Value::Double(1.0 / x.sin()),
                }
            }
            Func::Math2(m) => Value::Double(match m {
                // Spark adds 0.0 to both, so that -0.0 is +0.0 (atan2(-0.0, -1) is +pi there)
                Math2::Atan2 => (f(0) + 0.0).atan2(f(1) + 0.0),
                Math2::Hypot => f(0).hypot(f(1)),
            }),
            Func::ShiftZone { to_utc, zone } => {
                let zone = match zone {
                    Some(z) => *z,
                    None => super::zones::Zone::parse(s(1)).ok_or(EvalErrorKind::InvalidTimezone)?,
                };
                let us = n(0);
                let shifted = if *to_utc { zone.instant_at_wall_clock(us) } else { zone.wall_clock_at(us) };
                Value::Timestamp(Timestamp(shifted.ok_or(ArithmeticOverflow)?))
            }
            Func::NextDay(weekday) => {
                let d = date(&a[0]);
                let today = (d as i64 + 3).rem_euclid(7); // 0 = Monday
                let ahead = (*weekday as i64 - today - 1).rem_euclid(7) + 1;
                Value::Date(i32::try_from(d as i64 + ahead).map_err(|_| ArithmeticOverflow)?)
            }
            Func::TimestampAdd(step) => {
                let (k, us) = (n(0), n(1));
                let t = match *step {
                    TimeStep::Micros(per) => k.checked_mul(per).and_then(|d| us.checked_add(d)),
                    TimeStep::Months(per) => add_months_micros(us, k.checked_mul(per).ok_or(ArithmeticOverflow)?),
                };
                Value::Timestamp(Timestamp(t.ok_or(ArithmeticOverflow)?))
            }
            Func::TimestampDiff(step) => Value::Long(match *step {
                TimeStep::Micros(per) => {
                    i64::try_from((n(1) as i128 - n(0) as i128) / per as i128).map_err(|_| ArithmeticOverflow)?
                }
                TimeStep::Months(per) => months_between_whole(n(0), n(1)) / per,
            }),
            Func::Factorial => match n(0) {
                k @ 0..=20 => Value::Long((1..=k).product()),
                _ => Value::Null,
            },
            Func::SecondWithFraction => {
                let us = n(0).rem_euclid(60_000_000);
                Value::Decimal(crate::decimal::Decimal::new(us as i128, 6))
            }
            Func::IsNan => Value::Bool(match a[0] {
                Value::Double(x) => x.is_nan(),
                Value::Float(x) => x.is_nan(),
                _ => false,
            }),
            Func::Nanvl => match a[0] {
                Value::Double(x) if x.is_nan() => a[1].clone(),
                Value::Float(x) if x.is_nan() => a[1].clone(),
                _ => a[0].clone(),
            },
            Func::Bit(op) => bitwise(*op, a)?,
            Func::DateAdd { sub } => {
                let d = date(&a[0]);
                let k = n(1) as i32;
                // wrapping, as Spark's `start + days` on its INT day numbers
                Value::Date(if *sub { d.wrapping_sub(k) } else { d.wrapping_add(k) })
            }
            Func::DateDiff => Value::Int(date(&a[0]).wrapping_sub(date(&a[1]))),
            Func::AddMonths => Value::Date(add_months(date(&a[0]), n(1)).ok_or(ArithmeticOverflow)?),
            Func::LastDay => {
                let (y, m, _) = crate::time::civil_from_days(date(&a[0]) as i64);
                Value::Date(crate::time::days_from_civil(y, m, month_days(y, m)) as i32)
            }
            Func::MakeDate => {
                let (y, m, d) = (n(0), n(1), n(2));
                // any year of Java's LocalDate whose day number fits an INT, as Spark
                let valid = (1..=12).contains(&m) && d >= 1 && d <= month_days(y, m as u32) as i64;
                if !valid || y.abs() > 999_999_999 {
                    return Err(EvalErrorKind::DatetimeFieldOutOfBounds);
                }
                let days = crate::time::days_from_civil(y, m as u32, d as u32);
                Value::Date(i32::try_from(days).map_err(|_| ArithmeticOverflow)?)
            }
            Func::UnixDate => Value::Int(date(&a[0])),
            Func::DateFromUnixDate => Value::Date(n(0) as i32),
            Func::TrimChars { leading, trailing } => {
                let set = s(1);
                let mut t = s(0);
                if *leading {
                    t = t.trim_start_matches(|c| set.contains(c));
                }
                if *trailing {
                    t = t.trim_end_matches(|c| set.contains(c));
                }
                return st(t.to_string());
            }
            Func::OctetLength => Value::Int(s(0).len() as i32),
            Func::BitLength => Value::Int((s(0).len() as i32).wrapping_mul(8)),
            Func::Ascii => Value::Int(s(0).chars().next().map_or(0, |c| c as i32)),
            Func::Chr => {
                let k = n(0);
                return st(if k < 0 { String::new() } else { char::from((k & 0xFF) as u8).to_string() });
            }
            Func::Repeat => {
                let k = n(1).max(0) as u64;
                within_string_limit((s(0).len() as u64).saturating_mul(k))?;
                return st(s(0).repeat(k as usize));
            }
            Func::Translate => return st(translate(s(0), s(1), s(2))),
            Func::Sha1 => return st(hex(&sha1::Sha1::digest(s(0).as_bytes()))),
            Func::Crc32 => Value::Long(crc32fast::hash(s(0).as_bytes()) as i64),
            Func::Base64 => {
                use base64::Engine as _;
                return st(base64::engine::general_purpose::STANDARD.encode(s(0).as_bytes()));
            }
            Func::Hex => {
                return st(match a[0] {
                    Value::Int(_) | Value::Long(_) => format!("{:X}", n(0) as u64),
                    _ => hex(s(0).as_bytes()).to_ascii_uppercase(),
                });
            }
            Func::RegexpCount(re) => Value::Int(java_find_count(re, s(0))),
            // an empty first match is NULL, as Spark's RegExpSubStr gives it
            Func::RegexpSubstr(re) => match re.find(s(0)) {
                Some(m) if !m.is_empty() => return st(m.as_str().to_string()),
                _ => Value::Null,
            },
            Func::Log => {
                if f(0) <= 0.0 || f(1) <= 0.0 {
                    Value::Null
                } else {
                    Value::Double(f(1).ln() / f(0).ln())
                }
            }
            Func::Pow => Value::Double(f(0).powf(f(1))),
            Func::Extreme { greatest } => {
                let mut best = &Value::Null;
                for v in a.iter().filter(|v| !v.is_null()) {
                    let o = v.total_cmp(best);
                    if best.is_null() || (*greatest && o.is_gt()) || (!*greatest && o.is_lt()) {
                        best = v;
                    }
                }
                best.clone()
            }
            Func::TimeField(field) => {
                let us = n(0);
                let (y, mo, d, h, mi, sec, _) = text::civil(us);
                Value::Int(match field {
                    TimeField::Year => y as i32,
                    TimeField::Month => mo as i32,
                    TimeField::Day => d as i32,
                    TimeField::DayOfWeek => (text::epoch_day(us) + 4).rem_euclid(7) as i32 + 1,
                    TimeField::Hour => h as i32,
                    TimeField::Minute => mi as i32,
                    TimeField::Second => sec as i32,
                    TimeField::DayOfYear => (text::epoch_day(us) - crate::time::days_from_civil(y, 1, 1)) as i32 + 1,
                    TimeField::WeekOfYear => iso_week(text::epoch_day(us)),
                    TimeField::Quarter => (mo as i32 - 1) / 3 + 1,
                    TimeField::DayOfWeekIso => (text::epoch_day(us) + 3).rem_euclid(7) as i32 + 1,
                    TimeField::Weekday => (text::epoch_day(us) + 3).rem_euclid(7) as i32,
                })
            }
            Func::UnixTime(per) => Value::Long(n(0).div_euclid(*per)),
            Func::CurrentTimestamp => Value::Timestamp(super::processing_time()),
            Func::UnixTimestamp => Value::Long(n(0) / 1_000_000),
            // Spark's `SecondsToTimestamp` / `MillisToTimestamp`: DATETIME_OVERFLOW past BIGINT µs
            Func::FromUnix(per) => {
                Value::Timestamp(Timestamp(n(0).checked_mul(*per).ok_or(EvalErrorKind::DatetimeOverflow)?))
            }
            Func::FromUnixDecimal => match a[0] {
                Value::Decimal(d) => Value::Timestamp(Timestamp(super::decimal::seconds_micros(d)?)),
                _ => Value::Null,
            },
            // `as` truncates toward zero and saturates, as Java's double-to-long conversion
            Func::FromUnixDouble => match f(0) {
                x if x.is_finite() => Value::Timestamp(Timestamp((x * 1e6) as i64)),
                _ => Value::Null,
            },
            Func::DateTrunc(unit) => Value::Timestamp(Timestamp(date_trunc(n(0), *unit).ok_or(ArithmeticOverflow)?)),
            Func::DateFormat(DateFormat(parts)) => return st(text::format_timestamp(n(0), parts)),
            Func::AddMicros(d) => Value::Timestamp(Timestamp(n(0).checked_add(*d).ok_or(ArithmeticOverflow)?)),
            Func::DecimalArith { op, try_, precision, scale } => {
                match super::decimal::arith(*op, &a[0], &a[1], *precision, *scale) {
                    Err(_) if *try_ => Value::Null,
                    r => r?,
                }
            }
            Func::DecimalIntDiv { try_ } => match super::decimal::int_div(&a[0], &a[1]) {
                Err(_) if *try_ => Value::Null,
                r => r?,
            },
            Func::DecimalRound { places, mode, precision, scale } => {
                super::decimal::round(&a[0], *places, *mode, *precision, *scale)?
            }
            Func::MakeStruct(ty) => Value::Struct(*ty, Fields::from(a)),
            Func::GetField(i) => match &a[0] {
                Value::Struct(_, fields) => fields.get(*i).cloned().unwrap_or(Value::Null),
                _ => Value::Null,
            },
            Func::WindowBound { end } => match a[0] {
                Value::Window { start, end: e } => Value::Timestamp(if *end { e } else { start }),
                _ => Value::Null,
            },
            Func::WindowTime => match a[0] {
                Value::Window { end, .. } => Value::Timestamp(Timestamp(end.0 - 1)),
                _ => Value::Null,
            },
            Func::ToJson => return st(to_json(&a[0])),
            Func::Hash => Value::Int(a.iter().fold(super::hash::SEED, |h, v| super::hash::hash_value(v, h)) as i32),
            Func::GetJsonObject(path) => match get_json_object(s(0), path) {
                Some(text) => return st(text),
                None => Value::Null,
            },
            Func::ToDate { pattern, try_ } => {
                let parsed = match (&a[0], pattern) {
                    (Value::Str(x), None) => parse_cast_date(x).ok_or(EvalErrorKind::CastInvalidInput),
                    (Value::Str(x), Some(DateFormat(parts))) => {
                        parse_with_pattern(x, parts).map(date_of_micros).ok_or(EvalErrorKind::CannotParseTimestamp)
                    }
                    (Value::Timestamp(t), _) => Ok(date_of_micros(t.0)),
                    (v, _) => return Ok(v.clone()),
                };
                match parsed {
                    Ok(d) => Value::Date(d),
                    Err(_) if *try_ => Value::Null,
                    Err(e) => return Err(e),
                }
            }
            Func::WidthBucket => match width_bucket(f(0), f(1), f(2), n(3)) {
                Some(b) => Value::Long(b),
                None => Value::Null,
            },
            Func::MakeTimestamp { try_ } => match make_timestamp(a) {
                Ok(us) => Value::Timestamp(Timestamp(us)),
                Err(_) if *try_ => Value::Null,
                Err(e) => return Err(e),
            },
            Func::Conv => {
                return Ok(match conv(s(0), n(1), n(2))? {
                    Some(x) => Value::Str(Text::from(x)),
                    None => Value::Null,
                });
            }
            Func::FormatNumber => {
                let d = n(1);
                if d < 0 {
                    return Ok(Value::Null);
                }
                within_string_limit(d as u64)?;
                return st(format_number(&a[0], d as usize));
            }
            Func::MonthsBetween => {
                let diff = months_between(n(0), n(1));
                if !matches!(a[2], Value::Bool(true)) {
                    return Ok(Value::Double(diff));
                }
                // Java's Math.round: ties toward positive infinity
                let x = diff * 1e8;
                let floor = x.floor();
                Value::Double(if x - floor >= 0.5 { floor + 1.0 } else { floor } / 1e8)
            }
            Func::SubstringIndex => return st(substring_index(s(0), s(1), n(2)).to_string()),
            Func::Space => {
                let k = n(0).max(0) as u64;
                within_string_limit(k)?;
                return st(" ".repeat(k as usize));
            }
            Func::FindInSet => {
                let x = s(0);
                Value::Int(if x.contains(',') {
                    0
                } else {
                    s(1).split(',').position(|i| i == x).map_or(0, |p| p as i32 + 1)
                })
            }
            Func::Levenshtein => {
                let d = levenshtein(s(0), s(1));
                match a.get(2) {
                    Some(t) if d > t.as_i64().unwrap_or(0) => Value::Int(-1),
                    _ => Value::Int(d as i32),
                }
            }
            Func::BitCount => Value::Int(match a[0] {
                Value::Bool(b) => b as i32,
                _ => n(0).count_ones() as i32,
            }),
            Func::Bin => return st(format!("{:b}", n(0))),
            Func::ToTimestamp { pattern, try_ } => {
                let parsed = match (&a[0], pattern) {
                    (Value::Str(x), None) => parse_cast_timestamp(x).ok_or(EvalErrorKind::CastInvalidInput),
                    (Value::Str(x), Some(DateFormat(parts))) => {
                        parse_with_pattern(x, parts).ok_or(EvalErrorKind::CannotParseTimestamp)
                    }
                    (Value::Date(d), _) => micros_of_day(*d).ok_or(ArithmeticOverflow),
                    (v, _) => Ok(v.as_i64().unwrap_or(0)),
                };
                match parsed {
                    Ok(us) => Value::Timestamp(Timestamp(us)),
                    Err(_) if *try_ => Value::Null,
                    Err(e) => return Err(e),
                }
            }
        })
    }
}

/// Integral or floating arithmetic on two operands of one type (ANSI: overflow and a zero
/// divisor are errors, for floating operands too where Spark checks the divisor).
pub(crate) fn arith(op: ArithOp, x: &Value, y: &Value) -> Result<Value, EvalErrorKind> {
    fn int<T>(op: ArithOp, a: T, b: T, zero: T) -> Result<T, EvalErrorKind>
    where
        T: Copy + PartialOrd + num_like::Checked,
    {
        let r = match op {
            ArithOp::Add => a.add(b),
            ArithOp::Sub => a.sub(b),
            ArithOp::Mul => a.mul(b),
            ArithOp::Rem | ArithOp::IntDiv | ArithOp::Pmod if b == zero => return Err(DivideByZero),
            ArithOp::Rem => a.rem(b),
            ArithOp::IntDiv => a.div(b),
            ArithOp::Pmod => a.rem(b).and_then(|r| if r < zero { r.add(b).and_then(|s| s.rem(b)) } else { Some(r) }),
        };
        r.ok_or(ArithmeticOverflow)
    }
    fn float(op: ArithOp, a: f64, b: f64) -> Result<f64, EvalErrorKind> {
        Ok(match op {
            ArithOp::Add => a + b,
            ArithOp::Sub => a - b,
            ArithOp::Mul => a * b,
            ArithOp::Rem | ArithOp::Pmod if b == 0.0 => return Err(DivideByZero),
            ArithOp::Rem => a % b,
            ArithOp::Pmod => {
                let r = a % b;
                if r < 0.0 { (r + b) % b } else { r }
            }
            ArithOp::IntDiv => return Err(ArithmeticOverflow),
        })
    }
    Ok(match (x, y) {
        (Value::Int(a), Value::Int(b)) => Value::Int(int(op, *a, *b, 0)?),
        (Value::Long(a), Value::Long(b)) => Value::Long(int(op, *a, *b, 0)?),
        (Value::Float(a), Value::Float(b)) => Value::Float(float(op, *a as f64, *b as f64)? as f32),
        _ => Value::Double(float(op, x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0))?),
    })
}

/// Checked integer operations over i32 and i64.
mod num_like {
    pub trait Checked: Sized {
        fn add(self, b: Self) -> Option<Self>;
        fn sub(self, b: Self) -> Option<Self>;
        fn mul(self, b: Self) -> Option<Self>;
        fn rem(self, b: Self) -> Option<Self>;
        fn div(self, b: Self) -> Option<Self>;
    }
    macro_rules! checked {
        ($t:ty) => {
            impl Checked for $t {
                fn add(self, b: Self) -> Option<Self> {
                    self.checked_add(b)
                }
                fn sub(self, b: Self) -> Option<Self> {
                    self.checked_sub(b)
                }
                fn mul(self, b: Self) -> Option<Self> {
                    self.checked_mul(b)
                }
                fn rem(self, b: Self) -> Option<Self> {
                    // i32::MIN % -1 is 0 in Java; Rust's checked_rem says overflow
                    Some(self.checked_rem(b).unwrap_or(0))
                }
                fn div(self, b: Self) -> Option<Self> {
                    self.checked_div(b)
                }
            }
        };
    }
    checked!(i32);
    checked!(i64);
}

/// Spark's `UTF8String.substringSQL`: 1-based `pos` (negative counts from the end, 0 is 1),
/// `len` characters (none when `len` <= 0).
pub(crate) fn substring(s: &str, pos: i64, len: i64) -> &str {
    let n = s.chars().count() as i64;
    let start = if pos > 0 {
        pos - 1
    } else if pos < 0 {
        n + pos
    } else {
        0
    };
    let end = start.saturating_add(len).min(n);
    let start = start.max(0);
    if start >= end {
        return "";
    }
    let byte = |k: i64| s.char_indices().nth(k as usize).map_or(s.len(), |(b, _)| b);
    &s[byte(start)..byte(end)]
}

/// The longest string an expression may build, in bytes: as a source's default
/// `max_record_bytes` (16 MiB). Spark's bound is the JVM's (a 2 GiB array, and before that the
/// executor's heap: `lpad(s, 2147483647)` fails the task with an out-of-memory error); Eddy
/// fails the record instead ([`EvalErrorKind::StringTooLong`]) before allocating, so one
/// expression cannot exhaust the daemon's memory.
pub(crate) const MAX_STRING_BYTES: u64 = crate::spec::DEFAULT_MAX_RECORD_BYTES;

/// `Ok` when a string of `bytes` bytes may be built.
fn within_string_limit(bytes: u64) -> Result<(), EvalErrorKind> {
    if bytes > MAX_STRING_BYTES { Err(EvalErrorKind::StringTooLong) } else { Ok(()) }
}

fn pad(s: &str, len: i64, pad: &str, left: bool) -> Result<String, EvalErrorKind> {
    let n = s.chars().count() as i64;
    if len <= n || pad.is_empty() {
        return Ok(substring(s, 1, len).to_string());
    }
    // each fill character is at least one byte
    within_string_limit((s.len() as u64).saturating_add((len - n) as u64))?;
    let fill: String = pad.chars().cycle().take((len - n) as usize).collect();
    let out = if left { fill + s } else { s.to_string() + &fill };
    within_string_limit(out.len() as u64)?;
    Ok(out)
}

/// Spark's `initcap`: each word (split on spaces only) as its first character's title case
/// ([`title_case`]) and the rest in lower case (checked against Spark 4.3 on Unicode text:
/// `İstanbul` keeps its `İ`, `ﬁsh` is `Fish`, `ǉubljana` `ǈubljana`).
fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, word) in s.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let Some(first) = word.chars().next() else { continue };
        title_case(first, &mut out);
        // the rest lower-cased in the word's context (a final sigma: `ΑΣ` is `Ας`)
        let lower = word.to_lowercase();
        out.extend(lower.chars().skip(first.to_lowercase().count()));
    }
    out
}

/// The title case of `c` (Unicode's full mapping, SpecialCasing.txt's title column) appended to
/// `out`, as Spark's `initcap` writes a word's first letter: the upper case, except for the
/// letters whose title case differs from it: the digraphs (`ǆ` is `ǅ`), the ligatures (`ß` is
/// `Ss`, `ﬁ` `Fi`, `և` `Եւ`), the Greek letters with a subscript iota (`ᾳ` is `ᾼ`) and the
/// Georgian letters (their own title case).
fn title_case(c: char, out: &mut String) {
    let title = match c {
        'Ǆ' | 'ǅ' | 'ǆ' => "ǅ",
        'Ǉ' | 'ǈ' | 'ǉ' => "ǈ",
        'Ǌ' | 'ǋ' | 'ǌ' => "ǋ",
        'Ǳ' | 'ǲ' | 'ǳ' => "ǲ",
        'ß' => "Ss",
        'ﬀ' => "Ff",
        'ﬁ' => "Fi",
        'ﬂ' => "Fl",
        'ﬃ' => "Ffi",
        'ﬄ' => "Ffl",
        'ﬅ' | 'ﬆ' => "St",
        'և' => "Եւ",
        'ﬓ' => "Մն",
        'ﬔ' => "Մե",
        'ﬕ' => "Մի",
        'ﬖ' => "Վն",
        'ﬗ' => "Մխ",
        '\u{1FB3}' | '\u{1FBC}' => "\u{1FBC}",
        '\u{1FC3}' | '\u{1FCC}' => "\u{1FCC}",
        '\u{1FF3}' | '\u{1FFC}' => "\u{1FFC}",
        '\u{1FB2}' => "\u{1FBA}\u{345}",
        '\u{1FB4}' => "\u{386}\u{345}",
        '\u{1FC2}' => "\u{1FCA}\u{345}",
        '\u{1FC4}' => "\u{389}\u{345}",
        '\u{1FF2}' => "\u{1FFA}\u{345}",
        '\u{1FF4}' => "\u{38F}\u{345}",
        '\u{1FB7}' => "\u{391}\u{342}\u{345}",
        '\u{1FC7}' => "\u{397}\u{342}\u{345}",
        '\u{1FF7}' => "\u{3A9}\u{342}\u{345}",
        // with a subscript iota (`ᾀ`): the same letter with the iota adscript (`ᾈ`), 8 further
        '\u{1F80}'..='\u{1FAF}' => {
            out.push(char::from_u32(c as u32 | 8).unwrap_or(c));
            return;
        }
        '\u{10D0}'..='\u{10FA}' | '\u{10FD}'..='\u{10FF}' => {
            out.push(c);
            return;
        }
        _ => {
            out.extend(c.to_uppercase());
            return;
        }
    };
    out.push_str(title);
}

fn split_part(s: &str, delim: &str, n: i64) -> Result<String, EvalErrorKind> {
    if n == 0 {
        return Err(EvalErrorKind::InvalidIndexOfZero);
    }
    let parts: Vec<&str> = if delim.is_empty() { vec![s] } else { s.split(delim).collect() };
    let k = if n > 0 { n - 1 } else { parts.len() as i64 + n };
    Ok(if k < 0 { "" } else { parts.get(k as usize).copied().unwrap_or("") }.to_string())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Rounds `x` to `scale` decimal places on its shortest decimal form, as Spark's
/// `BigDecimal(x).setScale(scale, HALF_UP / HALF_EVEN)` (`round(2.675D, 2)` is 2.68).
///
/// A zero result is +0.0 (a BigDecimal has no negative zero: `round(-0.0D, -1)` is 0.0).
pub(crate) fn round_f64(x: f64, scale: i32, half_even: bool) -> f64 {
    round_f64_scaled(x, scale, half_even).unwrap_or_else(|| round_f64_digits(x, scale, half_even))
}

/// Powers of ten that a double holds exactly (10^0 ..= 10^22).
const EXACT_POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];

/// [`round_f64`] in floating point, when that gives its exact answer: `scale` in 0..=22 and
/// `|x| * 10^scale` below 2^52. Away from a half, rounding `|x| * 10^scale` to the nearest
/// integer `k` rounds the shortest decimal form of `x` the same way (the product is within about
/// 2^-52 relative of that form times 10^scale), and `k / 10^scale`, a correctly rounded division
/// of exact operands, is the double nearest `k × 10^-scale`, which is what parsing the rounded
/// digits gives. Within a relative 1e-14 of a half `h = (2k + 1) / (2 × 10^scale)` (exact
/// operands, so one division gives the double nearest `h`), with `|x| * 10^scale` below 2^47:
/// the shortest form of `|x|` is `h` itself when that double is `|x|` (the decimals that read
/// back as `|x|` span less than 1/32 of a unit of `10^-scale`, so no shorter one and no other
/// of as many digits does), a tie that HALF_UP rounds up and HALF_EVEN to the even neighbour;
/// otherwise it lies on the side of `h` that `|x|` does. `None`: not such a case.
fn round_f64_scaled(x: f64, scale: i32, half_even: bool) -> Option<f64> {
    let p = *EXACT_POW10.get(usize::try_from(scale).ok()?)?;
    let y = x.abs() * p;
    if y.is_nan() || y >= 4_503_599_627_370_496.0 {
        // NaN, 2^52 and above, infinities
        return None;
    }
    let floor = y.floor();
    let frac = y - floor;
    let k = if (frac - 0.5).abs() <= 1e-14 * y.max(1.0) {
        if y >= 140_737_488_355_328.0 {
            // 2^47 and above: the doubles near `|x|` lie 1/32 of a unit of the last place or
            // more apart, so a shorter decimal, or another of as many digits, may read back as
            // `|x|` too
            return None;
        }
        let half = (2.0 * floor + 1.0) / (2.0 * p);
        let a = x.abs();
        if a == half {
            if half_even && floor % 2.0 == 0.0 { floor } else { floor + 1.0 }
        } else if a > half {
            floor + 1.0
        } else {
            floor
        }
    } else if frac > 0.5 {
        floor + 1.0
    } else {
        floor
    };
    // a zero result is +0.0, as the exact path gives
    Some(if k == 0.0 { 0.0 } else { (k / p).copysign(x) })
}

/// [`round_f64`] on the digits of the shortest decimal form.
fn round_f64_digits(x: f64, scale: i32, half_even: bool) -> f64 {
    if !x.is_finite() {
        return x;
    }
    if x == 0.0 {
        return 0.0;
    }
    let sci = format!("{:e}", x.abs());
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: Vec<u8> = mant.bytes().filter(|b| b.is_ascii_digit()).map(|b| b - b'0').collect();
    // value = 0.d1 d2 ... * 10^(exp + 1); keep `keep` digits
    let keep = exp + 1 + scale;
    if keep < 0 {
        return 0.0;
    }
    let keep = keep as usize;
    if keep >= digits.len() {
        return x;
    }
    let mut kept: Vec<u8> = digits[..keep].to_vec();
    let first = digits[keep];
    let rest_nonzero = digits[keep + 1..].iter().any(|&d| d != 0);
    let up = first > 5 || (first == 5 && (rest_nonzero || !half_even || kept.last().is_some_and(|d| d % 2 == 1)));
    let exp10 = exp + 1 - keep as i32; // value = kept as integer * 10^exp10
    if up {
        let mut i = kept.len();
        loop {
            if i == 0 {
                kept.insert(0, 1);
                break;
            }
            i -= 1;
            if kept[i] == 9 {
                kept[i] = 0;
            } else {
                kept[i] += 1;
                break;
            }
        }
    }
    if kept.is_empty() || kept.iter().all(|&d| d == 0) {
        return 0.0;
    }
    let int: String = kept.iter().map(|d| (b'0' + d) as char).collect();
    let text = format!("{int}e{exp10}");
    text.parse::<f64>().map_or(x, |v| v.copysign(x))
}

fn round_int(x: i64, scale: i32, half_even: bool) -> Result<i64, EvalErrorKind> {
    if scale >= 0 {
        return Ok(x);
    }
    if scale < -18 {
        return Ok(0);
    }
    let p = 10i64.pow((-scale) as u32);
    let q = x / p;
    let r = x % p;
    let twice = (r.abs() as i128) * 2;
    let up = twice > p as i128 || (twice == p as i128 && (!half_even || q % 2 != 0));
    let q = if up { q + x.signum() } else { q };
    q.checked_mul(p).ok_or(ArithmeticOverflow)
}

/// `date_trunc(unit, ts)`; `None` when the truncated instant is before the first TIMESTAMP
/// (only instants within a year / quarter / month / week / unit of `i64::MIN` µs).
fn date_trunc(us: i64, unit: TruncUnit) -> Option<i64> {
    let ym = || {
        let (y, mo, ..) = text::civil(us);
        (y, mo)
    };
    match unit {
        TruncUnit::Year => text::micros_of_date(ym().0, 1, 1),
        TruncUnit::Quarter => {
            let (y, mo) = ym();
            text::micros_of_date(y, (mo - 1) / 3 * 3 + 1, 1)
        }
        TruncUnit::Month => {
            let (y, mo) = ym();
            text::micros_of_date(y, mo, 1)
        }
        TruncUnit::Week => {
            let day = text::epoch_day(us);
            // 1970-01-01 was a Thursday: Monday is 3 days earlier
            let monday = day - (day + 3).rem_euclid(7);
            monday.checked_mul(86_400_000_000)
        }
        TruncUnit::Fixed(step) => us.checked_sub(us.rem_euclid(step)),
    }
}

/// `locate(sub, s, pos)` on non-null arguments (see [`Func::Locate`]): character positions.
fn locate(s: &str, sub: &str, pos: i64) -> i32 {
    if pos < 1 {
        return 0;
    }
    if sub.is_empty() {
        return 1;
    }
    let skip = usize::try_from(pos - 1).unwrap_or(usize::MAX);
    let Some((start, _)) = s.char_indices().nth(skip) else { return 0 };
    match s[start..].find(sub) {
        Some(byte) => (s[..start + byte].chars().count() + 1) as i32,
        None => 0,
    }
}

/// The day number of a DATE argument (a TIMESTAMP or STRING is cast to DATE by the binder).
fn date(v: &Value) -> i32 {
    match v {
        Value::Date(d) => *d,
        _ => 0,
    }
}

/// The matches of `re` in `s` as Java's `Matcher.find` finds them one after another (Spark's
/// `regexp_count`): after a match the search goes on where it ended, and after an empty one a
/// character later, so an empty match right after a non-empty one counts (`x*` finds 7 matches
/// in ` xxhixx `, where `find_iter` finds 5). Java steps over UTF-16 code units: between the
/// two halves of a character beyond the BMP it may find one more empty match, which this does
/// not count.
fn java_find_count(re: &Regex, s: &str) -> i32 {
    let mut count = 0i32;
    let mut at = 0;
    while at <= s.len() {
        let Some(m) = re.find_at(s, at) else { break };
        count = count.saturating_add(1);
        at = if m.is_empty() { m.end() + s[m.end()..].chars().next().map_or(1, char::len_utf8) } else { m.end() };
    }
    count
}

/// Days in month `m` of year `y` (proleptic Gregorian).
fn month_days(y: i64, m: u32) -> u32 {
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    match m {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `d` plus `months` as Java's `LocalDate.plusMonths`: the day kept, or the month's last
/// where the month is shorter; `None` outside the DATE range.
fn add_months(d: i32, months: i64) -> Option<i32> {
    let (y, m, day) = crate::time::civil_from_days(d as i64);
    let total = y.checked_mul(12)?.checked_add(m as i64 - 1)?.checked_add(months)?;
    let (y, m) = (total.div_euclid(12), total.rem_euclid(12) as u32 + 1);
    let days = crate::time::days_from_civil(y, m, day.min(month_days(y, m)));
    i32::try_from(days).ok()
}

/// The ISO 8601 week of the day `day` (days since the epoch): weeks start on Monday and week 1
/// is the one holding the year's first Thursday.
fn iso_week(day: i64) -> i32 {
    let weekday = (day + 3).rem_euclid(7); // 0 = Monday
    let thursday = day - weekday + 3; // the Thursday of the same week decides its year
    let (y, _, _) = crate::time::civil_from_days(thursday);
    ((thursday - crate::time::days_from_civil(y, 1, 1)) / 7 + 1) as i32
}

/// Spark's `translate`: each character of `from` maps to the one at its position in `to` (or
/// to nothing where `to` is shorter), the first occurrence in `from` winning.
fn translate(s: &str, from: &str, to: &str) -> String {
    let to: Vec<char> = to.chars().collect();
    let mut map: Vec<(char, Option<char>)> = Vec::new();
    for (i, c) in from.chars().enumerate() {
        if !map.iter().any(|(k, _)| *k == c) {
            map.push((c, to.get(i).copied()));
        }
    }
    s.chars()
        .filter_map(|c| match map.iter().find(|(k, _)| *k == c) {
            Some((_, r)) => *r,
            None => Some(c),
        })
        .collect()
}

/// [`Func::Bit`] on INT or BIGINT operands (both of one type; a shift count is an INT): computed
/// on the sign-extended values, which gives the INT result for `& | ^ ~`; a shift of an INT is
/// an INT's (its count masked to 5 bits, as Java masks it).
fn bitwise(op: BitOp, a: &[Value]) -> Result<Value, EvalErrorKind> {
    let int = matches!(a[0], Value::Int(_));
    let x = a[0].as_i64().unwrap_or(0);
    let y = a.get(1).and_then(Value::as_i64).unwrap_or(0);
    let r = match op {
        BitOp::And => x & y,
        BitOp::Or => x | y,
        BitOp::Xor => x ^ y,
        BitOp::Not => !x,
        BitOp::ShiftLeft if int => (x as i32).wrapping_shl(y as u32) as i64,
        BitOp::ShiftRight if int => (x as i32).wrapping_shr(y as u32) as i64,
        BitOp::ShiftLeft => x.wrapping_shl(y as u32),
        BitOp::ShiftRight => x.wrapping_shr(y as u32),
    };
    Ok(if int { Value::Int(r as i32) } else { Value::Long(r) })
}

/// `us` plus `months` as `LocalDateTime.plusMonths` in UTC: the date moved (its day clamped to
/// the month's last), the time of day kept; `None` outside the TIMESTAMP range.
fn add_months_micros(us: i64, months: i64) -> Option<i64> {
    const DAY: i64 = 86_400_000_000;
    let (day, time) = (us.div_euclid(DAY), us.rem_euclid(DAY));
    let moved = add_months(i32::try_from(day).ok()?, months)?;
    (moved as i64).checked_mul(DAY)?.checked_add(time)
}

/// Whole months from `start` to `end` (µs, UTC), toward zero, as Java's
/// `LocalDateTime.until(end, MONTHS)`: the end date moved a day toward the start when its time
/// of day has not yet reached the start's, then `(month * 32 + day)` compared.
fn months_between_whole(start: i64, end: i64) -> i64 {
    const DAY: i64 = 86_400_000_000;
    let (d1, t1) = (start.div_euclid(DAY), start.rem_euclid(DAY));
    let (mut d2, t2) = (end.div_euclid(DAY), end.rem_euclid(DAY));
    if d2 > d1 && t2 < t1 {
        d2 -= 1;
    } else if d2 < d1 && t2 > t1 {
        d2 += 1;
    }
    let packed = |d: i64| {
        let (y, m, day) = crate::time::civil_from_days(d);
        (y * 12 + m as i64 - 1) * 32 + day as i64
    };
    (packed(d2) - packed(d1)) / 32
}

/// Spark's `UTF8String.subStringIndex` (see [`Func::SubstringIndex`]).
fn substring_index<'a>(s: &'a str, delim: &str, count: i64) -> &'a str {
    let (b, d) = (s.as_bytes(), delim.as_bytes());
    if d.is_empty() || count == 0 {
        return "";
    }
    let at = |i: usize| b.get(i..i + d.len()) == Some(d);
    if count > 0 {
        let mut found = 0;
        for i in 0..b.len() {
            if at(i) {
                found += 1;
                if found == count {
                    // a match of whole characters: `i` is on a character boundary
                    return s.get(..i).unwrap_or(s);
                }
            }
        }
    } else {
        let mut found = 0;
        for i in (0..b.len()).rev() {
            if at(i) {
                found += 1;
                if found == -count {
                    return s.get(i + d.len()..).unwrap_or(s);
                }
            }
        }
    }
    s
}

/// The edit distance between `a` and `b` in characters (insertions, deletions and
/// substitutions of one character each), as Spark's `UTF8String.levenshteinDistance`.
fn levenshtein(a: &str, b: &str) -> i64 {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<i64> = (0..=b.len() as i64).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i as i64 + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + i64::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Spark's `WidthBucket.computeBucketNumber` (see [`Func::WidthBucket`]).
fn width_bucket(v: f64, min: f64, max: f64, n: i64) -> Option<i64> {
    let bad = |x: f64| !x.is_finite();
    if n <= 0 || n == i64::MAX || v.is_nan() || bad(min) || bad(max) || min == max {
        return None;
    }
    let (lower, upper) = (min.min(max), min.max(max));
    Some(if min < max {
        if v < lower {
            0
        } else if v >= upper {
            n + 1
        } else {
            (n as f64 * (v - lower) / (max - min)) as i64 + 1
        }
    } else if v > upper {
        0
    } else if v <= lower {
        n + 1
    } else {
        (n as f64 * (upper - v) / (min - max)) as i64 + 1
    })
}

/// [`Func::MakeTimestamp`] of `[year, month, day, hour, minute, second]`.
fn make_timestamp(a: &[Value]) -> Result<i64, EvalErrorKind> {
    use EvalErrorKind::DatetimeFieldOutOfBounds;
    let n = |i: usize| a[i].as_i64().unwrap_or(0);
    let (y, mo, d, h, mi) = (n(0), n(1), n(2), n(3), n(4));
    let sec = match &a[5] {
        Value::Decimal(x) => {
            x.rescale(16, 6, crate::decimal::Rounding::HalfUp).map_err(|_| ArithmeticOverflow)?.unscaled
        }
        _ => return Err(DatetimeFieldOutOfBounds),
    };
    let valid = y.abs() <= 999_999_999
        && (1..=12).contains(&mo)
        && d >= 1
        && d <= month_days(y, mo as u32) as i64
        && (0..24).contains(&h)
        && (0..60).contains(&mi)
        && (0..=60_000_000).contains(&sec);
    if !valid {
        return Err(DatetimeFieldOutOfBounds);
    }
    let days = crate::time::days_from_civil(y, mo as u32, d as u32);
    let us = sec as i64 + (h * 3_600 + mi * 60) * 1_000_000;
    days.checked_mul(86_400_000_000).and_then(|x| x.checked_add(us)).ok_or(ArithmeticOverflow)
}

/// Spark's `NumberConverter.convert` (see [`Func::Conv`]); `None` for NULL.
fn conv(num: &str, from: i64, to: i64) -> Result<Option<String>, EvalErrorKind> {
    let num = num.trim_matches(' ');
    if !(2..=36).contains(&from) || !(2..=36).contains(&to.abs()) || num.is_empty() {
        return Ok(None);
    }
    let (mut negative, digits) = match num.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, num),
    };
    let mut v: u64 = 0;
    for c in digits.chars() {
        let Some(digit) = c.to_digit(36).filter(|&x| (x as i64) < from) else { break };
        v = v.checked_mul(from as u64).and_then(|x| x.checked_add(digit as u64)).ok_or(ArithmeticOverflow)?;
    }
    if negative && to > 0 {
        // the two's complement; a value beyond BIGINT's range becomes all ones
        v = if v > i64::MAX as u64 { u64::MAX } else { (v as i64).wrapping_neg() as u64 };
    }
    if to < 0 && (v as i64) < 0 {
        v = (v as i64).wrapping_neg() as u64;
        negative = true;
    }
    let radix = to.unsigned_abs();
    let mut out = Vec::new();
    loop {
        out.push(std::char::from_digit((v % radix) as u32, radix as u32).unwrap_or('0').to_ascii_uppercase());
        v /= radix;
        if v == 0 {
            break;
        }
    }
    if negative && to < 0 {
        out.push('-');
    }
    Ok(Some(out.iter().rev().collect()))
}

/// [`Func::FormatNumber`] of a number to `d` decimals.
fn format_number(x: &Value, d: usize) -> String {
    let plain = match x {
        Value::Double(v) if v.is_infinite() => return if *v < 0.0 { "-∞".into() } else { "∞".into() },
        Value::Double(v) => return group_thousands(&format!("{v:.d$}")),
        Value::Float(v) => return group_thousands(&format!("{:.d$}", *v as f64)),
        Value::Decimal(v) => {
            let (scale, negative) = (v.scale as usize, v.unscaled < 0);
            let mut u = v.unscaled.unsigned_abs();
            let mut kept = scale;
            if d < scale {
                let unit = 10u128.pow((scale - d) as u32);
                let (q, r) = (u / unit, u % unit);
                u = if r > unit / 2 || (r == unit / 2 && q % 2 == 1) { q + 1 } else { q };
                kept = d;
            }
            let digits = format!("{u:0>width$}", width = kept + 1);
            let (int, frac) = digits.split_at(digits.len() - kept);
            let sign = if negative { "-" } else { "" };
            format!("{sign}{int}.{frac}{}", "0".repeat(d - kept))
        }
        other => format!("{}.{}", other.as_i64().unwrap_or(0), "0".repeat(d)),
    };
    group_thousands(plain.trim_end_matches('.'))
}

/// `1234567.5` as `1,234,567.5`: a comma between groups of three digits of the integer part.
fn group_thousands(plain: &str) -> String {
    let (sign, rest) = match plain.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", plain),
    };
    let (int, frac) = rest.split_at(rest.find('.').unwrap_or(rest.len()));
    if !int.bytes().all(|b| b.is_ascii_digit()) {
        return plain.to_string(); // NaN, inf
    }
    let mut out = String::with_capacity(plain.len() + int.len() / 3);
    out.push_str(sign);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out.push_str(frac);
    out
}

/// [`Func::MonthsBetween`] of two timestamps (µs), before rounding.
fn months_between(t1: i64, t2: i64) -> f64 {
    const DAY: i64 = 86_400_000_000;
    let split = |t: i64| {
        let days = t.div_euclid(DAY);
        let (y, m, d) = crate::time::civil_from_days(days);
        let last = d == month_days(y, m);
        (y * 12 + m as i64, d as i64, last, t.rem_euclid(DAY) / 1_000_000)
    };
    let (months1, day1, last1, secs1) = split(t1);
    let (months2, day2, last2, secs2) = split(t2);
    let whole = (months1 - months2) as f64;
    if day1 == day2 || (last1 && last2) {
        return whole;
    }
    let seconds = (day1 - day2) * 86_400 + secs1 - secs2;
    whole + seconds as f64 / (31 * 86_400) as f64
}

/// The compiled regular expression of a LIKE pattern ([`Func::LikeDynamic`]), from a
/// per-thread cache of up to 256 patterns (emptied when full).
fn like_dynamic(pattern: &str, ilike: bool, escape: char) -> Result<Arc<Regex>, EvalErrorKind> {
    type Cache = std::collections::HashMap<(Box<str>, bool, char), Arc<Regex>>;
    thread_local! {
        static CACHE: std::cell::RefCell<Cache> = std::cell::RefCell::new(Cache::new());
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let key = (Box::<str>::from(pattern), ilike, escape);
        if let Some(re) = cache.get(&key) {
            return Ok(re.clone());
        }
        let re = Arc::new(super::bind::like_regex(pattern, ilike, escape).map_err(|_| EvalErrorKind::InvalidFormat)?);
        if cache.len() >= 256 {
            cache.clear();
        }
        cache.insert(key, re.clone());
        Ok(re)
    })
}

/// The compiled Java regular expression of an `RLIKE` pattern ([`Func::RLikeDynamic`]), from a
/// per-thread cache of up to 256 patterns (emptied when full).
fn rlike_dynamic(pattern: &str) -> Result<Arc<Regex>, EvalErrorKind> {
    type Cache = std::collections::HashMap<Box<str>, Arc<Regex>>;
    thread_local! {
        static CACHE: std::cell::RefCell<Cache> = std::cell::RefCell::new(Cache::new());
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(re) = cache.get(pattern) {
            return Ok(re.clone());
        }
        let re = Arc::new(Regex::new(&super::calls::java_classes(pattern)).map_err(|_| EvalErrorKind::InvalidFormat)?);
        if cache.len() >= 256 {
            cache.clear();
        }
        cache.insert(Box::from(pattern), re.clone());
        Ok(re)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initcap_title_cases_each_words_first_letter_as_spark() {
        // Expected values: Spark 4.3's initcap of each string (pyspark, one run).
        for (s, spark) in [
            ("ﬁsh", "Fish"),
            ("İstanbul", "İstanbul"),
            ("ǅemal", "ǅemal"),
            ("Ǉ", "ǈ"),
            ("ǉubljana", "ǈubljana"),
            ("straße STRASSE", "Straße Strasse"),
            ("ßa", "Ssa"),
            ("ŉa", "ʼNa"),
            ("ǰx", "J̌x"),
            ("ΐa", "Ϊ́a"),
            ("ﬀ ﬃ ﬂ ﬄ ﬅ ﬆ", "Ff Ffi Fl Ffl St St"),
            ("hello wORLD", "Hello World"),
            ("a\tb c", "A\tb C"),
            ("ΣΑΣ σας", "Σας Σας"),
            ("ᾳbc", "ᾼbc"),
            ("aİb", "Ai̇b"),
            ("x ǆ ǳ Ǌ", "X ǅ ǲ ǋ"),
            ("éCOLE", "École"),
            ("İ", "İ"),
            ("ı i", "I I"),
            ("ꭰa", "Ꭰa"),
            ("ᾀ ᾈ ᾷ ῃ ῳ", "ᾈ ᾈ ᾼ͂ ῌ ῼ"),
            ("ა ბ", "ა ბ"),
            ("ΑΣ", "Ας"),
            ("ΑΣ Β", "Ας Β"),
            ("և ﬓ", "Եւ Մն"),
            ("  two  spaces ", "  Two  Spaces "),
            ("", ""),
            ("ǲ", "ǲ"),
            ("123abc ABC-def", "123abc Abc-def"),
            ("o'neil mcDONALD", "O'neil Mcdonald"),
        ] {
            assert_eq!(initcap(s), spark, "{s:?}");
        }
    }

    #[test]
    fn round_is_half_up_on_the_shortest_decimal_form() {
        // Expected values: Spark's round / bround (BigDecimal of Double.toString).
        assert_eq!(round_f64(2.675, 2, false), 2.68);
        assert_eq!(round_f64(1.005, 2, false), 1.01);
        assert_eq!(round_f64(0.125, 2, true), 0.12);
        assert_eq!(round_f64(0.125, 2, false), 0.13);
        assert_eq!(round_f64(-0.001, 2, false).to_bits(), 0.0f64.to_bits());
        assert_eq!(round_f64(-2.5, 0, false), -3.0);
        assert_eq!(round_f64(2.5, 0, true), 2.0);
        assert_eq!(round_f64(3.5, 0, true), 4.0);
        assert_eq!(round_f64(1234.5, -2, false), 1200.0);
        assert_eq!(round_f64(999.96, 1, false), 1000.0);
        assert_eq!(round_f64(0.004, 2, false), 0.0);
        // zero results are +0.0, as Spark's BigDecimal (the oracle: round(-0.0D, -1) is 0.0)
        assert!(round_f64(-0.0, -1, false).is_sign_positive());
        assert!(round_f64(-0.004, 2, false).is_sign_positive());
        // FLOAT: the widened double's form (the oracle: round(CAST(2.675 AS FLOAT), 2) = 2.67,
        // round(CAST(0.125 AS FLOAT), 2) = 0.13, bround(CAST(2.665 AS FLOAT), 2) = 2.66)
        let round2 = Func::Round { scale: 2, half_even: false };
        assert_eq!(round2.apply(&[Value::Float(2.675)]), Ok(Value::Float(2.67)));
        assert_eq!(round2.apply(&[Value::Float(0.125)]), Ok(Value::Float(0.13)));
        let bround2 = Func::Round { scale: 2, half_even: true };
        assert_eq!(bround2.apply(&[Value::Float(2.665)]), Ok(Value::Float(2.66)));
        assert_eq!(round_int(15, -1, false), Ok(20));
        assert_eq!(round_int(25, -1, true), Ok(20));
    }

    #[test]
    fn lower_and_upper_of_a_string_already_in_that_case_share_it() {
        let str_of = |v: Result<Value, EvalErrorKind>| match v {
            Ok(Value::Str(s)) => s,
            other => panic!("not a string: {other:?}"),
        };
        // (text longer than `INLINE` is shared; shorter text is held in place, so a copy)
        let lower = Text::from("key-42_x of a long identifier");
        assert!(str_of(Func::Lower.apply(&[Value::Str(lower.clone())])).shares_with(&lower));
        let upper = Text::from("EUR/42 OF A LONG CURRENCY CODE");
        assert!(str_of(Func::Upper.apply(&[Value::Str(upper.clone())])).shares_with(&upper));
        assert_eq!(&*str_of(Func::Lower.apply(&[Value::Str("key-42_x".into())])), "key-42_x");
        // a letter to change, or a non-ASCII one, gives the converted copy (expected values by
        // hand, Java's toLowerCase / toUpperCase as Spark applies them)
        assert_eq!(&*str_of(Func::Lower.apply(&[Value::Str("Key-42".into())])), "key-42");
        assert_eq!(&*str_of(Func::Lower.apply(&[Value::Str("ÉTÉ".into())])), "été");
        assert_eq!(&*str_of(Func::Upper.apply(&[Value::Str("eur".into())])), "EUR");
        assert_eq!(&*str_of(Func::Upper.apply(&[Value::Str("straße".into())])), "STRASSE");
    }

    #[test]
    fn substring_counts_characters_from_one_and_from_the_end() {
        assert_eq!(substring("hello", 2, 3), "ell");
        assert_eq!(substring("hello", -3, 2), "ll");
        assert_eq!(substring("hello", 0, 2), "he");
        assert_eq!(substring("héllo", 2, 1), "é");
        assert_eq!(substring("abc", -5, 3), "a");
        assert_eq!(substring("abc", 2, 0), "");
    }

    /// The floating-point path gives, wherever it answers, exactly what the digit path gives,
    /// over magnitudes from 1e-8 to 1e17, scales 0 to 22, both rounding modes, and values on
    /// and next to the halves.
    #[test]
    fn round_in_floating_point_agrees_with_rounding_the_digits() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut answered = 0;
        for i in 0..400_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mantissa = (x >> 11) as f64 / (1u64 << 53) as f64;
            let magnitude = 10f64.powi((i % 26) as i32 - 8);
            let scale = ((x >> 3) % 23) as i32;
            let mut v = mantissa * magnitude;
            if i % 3 == 0 {
                // a half at this scale, or its neighbours
                let p = 10f64.powi(scale);
                v = ((v * p).floor() + 0.5) / p;
                if i % 2 == 0 {
                    v = f64::from_bits(v.to_bits() + (i % 5) - 2);
                }
            }
            if i % 4 == 1 {
                v = -v;
            }
            for half_even in [false, true] {
                if let Some(fast) = round_f64_scaled(v, scale, half_even) {
                    answered += 1;
                    let exact = round_f64_digits(v, scale, half_even);
                    assert_eq!(fast.to_bits(), exact.to_bits(), "round({v:e}, {scale}) half_even={half_even}");
                }
            }
        }
        assert!(answered > 100_000, "the fast path answered {answered} times");
    }
}
