//! Unit tests of the JSON fast path's scanners: strings, numbers, key patterns.

use proptest::prelude::*;

use super::*;

#[test]
fn string_end_finds_the_quote_and_refuses_escapes_and_controls() {
    for (s, want) in [
        (&b"abc\" tail"[..], Some(3)),
        (b"0123456789abcdef\"", Some(16)),
        (b"01234567\"", Some(8)),
        (b"0123456\\\"", None),
        (b"0123\x01567\"", None),
        (b"no end at all....", None),
        (b"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"", Some(8)),
        (b"\"", Some(0)),
        (b"0123456\xc3\xa9\"", Some(9)),
        (b"\xff\"", None),
        (b"01234567\xc3\"", None),
        (b"ab\xed\xa0\x80\"", None),
        (b"abc\xe2\x82\xac", None),
    ] {
        assert_eq!(string_end(s, 0), want, "{:?}", String::from_utf8_lossy(s));
    }
}

#[test]
fn numbers_follow_the_json_grammar() {
    for (s, want) in [
        ("0", Some((1, true))),
        ("-12,", Some((3, true))),
        ("1.5e-3}", Some((6, false))),
        ("01", None),
        ("-01", None),
        ("1.", None),
        ("1.e5", None),
        ("1e", None),
        ("1e+", None),
        ("-", None),
        ("-a", None),
        (".5", None),
        ("+1", None),
        ("1E+2", Some((4, false))),
        ("0.000", Some((5, false))),
    ] {
        assert_eq!(scan_number(s.as_bytes(), 0).map(|n| (n.end, n.integer)), want, "{s}");
    }
}

#[test]
fn key_patterns_match_exactly_the_name_its_closing_quote_and_colon() {
    let line = br#"{"user_id":1,"user" :2,"event_time_x":3,"event_time":4,"a":5}"#;
    let at = |key: &str| line.windows(key.len() + 2).position(|w| w == format!("\"{key}\"").as_bytes()).unwrap() + 1;
    for name in ["user_id", "user", "event_time", "event_time_x", "a"] {
        let k = KeyPattern::new(name.as_bytes()).unwrap();
        for key in ["user_id", "user", "event_time", "event_time_x", "a"] {
            // "user" has a space before its colon, "a" is at the end of the line (fewer than 8
            // bytes follow): both are left to a scan.
            let want = key == name && key != "a" && key != "user";
            assert_eq!(k.matches(line, at(key)), want, "pattern {name} at key {key}");
        }
    }
    // Names that may be written escaped, or too long for two words, get no pattern.
    for name in ["a\"b", "a\\b", "tab\there", "fifteen_bytes_x"] {
        assert!(KeyPattern::new(name.as_bytes()).is_none(), "{name:?}");
    }
    let k = KeyPattern::new(b"fourteen_bytes").unwrap();
    assert!(k.matches(b"\"fourteen_bytes\":1}", 1));
    assert!(!k.matches(b"\"fourteen_bytes\" :1}", 1));
    assert!(!k.matches(b"\"fourteen_byteZ\":1}", 1));
}

#[test]
fn comma_key_patterns_match_the_comma_the_key_and_its_colon_at_once() {
    let k = KeyPattern::after_comma(b"ok").unwrap();
    assert!(k.matches(br#","ok":true}"#, 0));
    for other in
        [&br#", "ok":true}"#[..], br#","ok" :true}"#, br#","okk":true}"#, br#","o":true}  "#, br#""ok":true}  "#]
    {
        assert!(!k.matches(other, 0), "{}", String::from_utf8_lossy(other));
    }
    let twelve = KeyPattern::after_comma(b"twelve_bytes").unwrap();
    assert!(twelve.matches(br#","twelve_bytes":1}"#, 0));
    assert!(!twelve.matches(br#","twelve_byteZ":1}"#, 0));
    assert!(KeyPattern::after_comma(b"thirteen_byte").is_none());
    assert!(KeyPattern::after_comma(b"a\"b").is_none());
}

#[test]
fn long_numbers_with_leading_zeros_decline_the_exact_fast_path() {
    // 1 integer digit + 21 fraction digits: more than 19, so `exact_f64` declines (the caller
    // then parses the text exactly); 19 still take it.
    let n = scan_number(b"0.000000000000000000123", 0).unwrap();
    assert_eq!((n.digits, n.exact_f64()), (22, None));
    let n = scan_number(b"0.000000000000000123", 0).unwrap();
    assert_eq!(n.exact_f64().map(f64::to_bits), Some("0.000000000000000123".parse::<f64>().unwrap().to_bits()));
}

proptest! {
    #[test]
    fn exact_f64_is_str_parse_or_declines(
        s in "-?(0|[1-9][0-9]{0,21})(\\.[0-9]{1,24})?([eE][+-]?[0-9]{1,4})?",
        x in any::<f64>(),
    ) {
        for t in [s, x.to_string(), format!("{x:e}")] {
            let n = scan_number(t.as_bytes(), 0);
            prop_assert_eq!(n.map(|n| n.end), Some(t.len()), "{}", t);
            if let Some(v) = n.and_then(|n| n.exact_f64()) {
                prop_assert_eq!(Some(v.to_bits()), t.parse::<f64>().ok().map(f64::to_bits), "{}", t);
            }
        }
    }

    #[test]
    fn small_i64_is_parse_i64_or_declines(x in any::<i64>(), digits in "-?[1-9][0-9]{0,20}") {
        for t in [x.to_string(), digits] {
            if let Some(v) = scan_number(t.as_bytes(), 0).and_then(|n| n.small_i64()) {
                prop_assert_eq!(Some(v), parse_i64(&t), "{}", t);
            }
        }
        // Up to 18 digits always fits.
        let short = (x % 1_000_000_000_000_000_000).to_string();
        prop_assert_eq!(scan_number(short.as_bytes(), 0).and_then(|n| n.small_i64()), Some(x % 1_000_000_000_000_000_000));
    }
}

proptest::proptest! {
    /// The word-at-a-time integer read of `scan_number` gives what the byte-wise scan gives, for
    /// numbers of every length with every kind of byte after them (and at the line's end).
    #[test]
    fn scan_number_agrees_with_the_bytewise_scan(
        digits in "-?[0-9]{0,10}", after in proptest::sample::select(b" ,}.eE0x\"-+".to_vec()), tail in 0usize..10, cut in proptest::bool::ANY,
    ) {
        let mut text = digits.into_bytes();
        if !cut {
            text.push(after);
            text.extend(std::iter::repeat_n(b'1', tail));
        }
        proptest::prop_assert_eq!(scan_number(&text, 0), super::super::json_number::scan_number_bytewise(&text, 0));
        let mut padded = b"  ".to_vec();
        padded.extend_from_slice(&text);
        proptest::prop_assert_eq!(scan_number(&padded, 2), super::super::json_number::scan_number_bytewise(&padded, 2));
    }
}
