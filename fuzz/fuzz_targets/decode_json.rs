//! Arbitrary bytes through the JSON and CSV decoders: they must return Ok or Err, never panic,
//! and keep their invariants (one value per column, unneeded columns null, required non-null).
//! The JSON fast path is checked against the full parser (same records, same lines taken).
//! JSON syntax is also checked against serde_json: a line serde_json reads as an object must
//! not be rejected by Eddy as a syntax error, and vice versa. The recycling path the runtime
//! takes (`decode_into`, a record reused from earlier inputs, stale values and all) must give
//! exactly what `decode` gives, errors included. The layout path (`decode_into` keeps the
//! layout of a line it read and reads lines of the same layout by comparing the bytes between
//! their values): the input's first line is read, then its second, then its first again, by one
//! decoder, each against the stateless `decode` of the same line.
#![no_main]

use eddy_engine::decode::{CsvDecoder, DecodeError, DecoderConfig, JsonDecoder};
use eddy_engine::schema::Schema;
use eddy_engine::time::TimeUnit;
use eddy_engine::value::Record;
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use std::sync::OnceLock;

thread_local! {
    /// The records `decode_into` reuses (JSON, CSV): whatever the previous inputs left in them.
    static RECYCLED: RefCell<(Record, Record)> =
        RefCell::new((Record { values: Box::new([]) }, Record { values: Box::new([]) }));
}

/// `decode_into` on a recycled record against `decode`'s result `r` for the same line: the same
/// record (Debug texts) or the same error.
fn check_recycled(r: &Result<Record, DecodeError>, into: impl FnOnce(&mut Record) -> Result<(), DecodeError>, json: bool) {
    RECYCLED.with(|cell| {
        let mut pair = cell.borrow_mut();
        let record = if json { &mut pair.0 } else { &mut pair.1 };
        let got = into(record);
        match (r, got) {
            (Ok(a), Ok(())) => assert_eq!(format!("{a:?}"), format!("{record:?}"), "decode_into differs"),
            (Err(a), Err(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "decode_into's error differs"),
            (a, b) => panic!("decode {a:?}, decode_into {b:?}"),
        }
    });
}

const DDL: &str = "s STRING, l BIGINT, i INT, d DOUBLE, f FLOAT, b BOOLEAN, ts TIMESTAMP, u STRING";

fn config(mask: u8) -> DecoderConfig {
    let schema = Schema::parse_ddl(DDL).expect("fixed DDL");
    let n = schema.len();
    let needed: Vec<bool> = (0..n).map(|i| mask & (1 << i) != 0).collect();
    let required = if mask & 0x40 != 0 {
        vec![6]
    } else {
        Vec::new()
    };
    let timestamp_unit = [TimeUnit::Ms, TimeUnit::Us, TimeUnit::S][(mask % 3) as usize];
    DecoderConfig {
        schema,
        needed,
        required,
        timestamp_unit,
    }
}

fn check(cfg: &DecoderConfig, r: &Result<Record, DecodeError>) {
    if let Ok(rec) = r {
        assert_eq!(rec.values.len(), cfg.schema.len());
        for (i, v) in rec.values.iter().enumerate() {
            if !cfg.needed[i] && !cfg.required.contains(&i) {
                assert!(v.is_null(), "unneeded column {i} decoded");
            }
        }
        for &i in &cfg.required {
            assert!(!rec.values[i].is_null(), "required column null");
        }
    }
}

/// Decoders for each config byte, built once (building them per input would dominate a run).
fn decoders(mask: u8) -> &'static (DecoderConfig, JsonDecoder, CsvDecoder) {
    static ALL: OnceLock<Vec<(DecoderConfig, JsonDecoder, CsvDecoder)>> = OnceLock::new();
    let all = ALL.get_or_init(|| {
        (0..=255u8)
            .map(|m| {
                let cfg = config(m);
                let json = JsonDecoder::new(cfg.clone());
                let csv =
                    CsvDecoder::new(cfg.clone(), DDL_HEADER.as_bytes()).expect("fixed header");
                (cfg, json, csv)
            })
            .collect()
    });
    &all[mask as usize]
}

fuzz_target!(|data: &[u8]| {
    let (mask, rest) = match data.split_first() {
        Some((m, r)) => (*m, r),
        None => (0xff, data),
    };
    let (cfg, json, csv_fixed) = decoders(mask);

    let r = json.decode(rest);
    check(cfg, &r);
    let mut learner = json.clone();
    check_recycled(&r, |rec| learner.decode_into(rest, rec), true);
    // The layout path: the first line learned, then the second line read with its layout.
    if let Some(nl) = rest.iter().position(|&c| c == b'\n') {
        let (first, second) = (&rest[..nl], &rest[nl + 1..]);
        let mut learner = json.clone();
        for line in [first, second, first] {
            let r = json.decode(line);
            check_recycled(&r, |rec| learner.decode_into(line, rec), true);
        }
    }
    // One pass: the fast path takes exactly the lines the full parser accepts, with the same
    // record (Debug texts: doubles bit for bit, NaN included), and `decode` gives the full
    // parser's result, errors included.
    let full = json.full_parser(rest);
    let fast = json.fast_path(rest);
    assert_eq!(fast.is_some(), full.is_ok(), "fast {fast:?}, full {full:?}");
    if let (Some(a), Ok(b)) = (&fast, &full) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
    assert_eq!(format!("{r:?}"), format!("{full:?}"));
    let syntax_error = matches!(
        r,
        Err(DecodeError::NotJson { .. }
            | DecodeError::NotObject { .. }
            | DecodeError::NotUtf8 { .. })
    );
    let serde_object = matches!(
        serde_json::from_slice::<serde_json::Value>(rest),
        Ok(serde_json::Value::Object(_))
    );
    if serde_object {
        assert!(!syntax_error, "serde_json reads an object, Eddy says {r:?}");
    }
    if matches!(r, Ok(_) | Err(DecodeError::NullRequired { .. })) {
        // Eddy read the whole line: serde_json must too, except for numbers beyond f64 (Eddy
        // follows Jackson: infinity) and the tokens NaN, Infinity, +INF, -INF (Spark's
        // allowNonNumericNumbers), which serde_json refuses.
        if let Err(e) = serde_json::from_slice::<serde_json::Value>(rest) {
            let non_numeric = [&b"NaN"[..], b"Infinity", b"INF"]
                .iter()
                .any(|t| rest.windows(t.len()).any(|w| w == *t));
            assert!(
                e.to_string().contains("number out of range") || non_numeric,
                "Eddy accepted what serde_json refuses: {e}"
            );
        }
    }

    let c = csv_fixed.decode(rest);
    check(cfg, &c);
    check_recycled(&c, |rec| csv_fixed.decode_into(rest, rec), false);
    if let Some(nl) = rest.iter().position(|&c| c == b'\n') {
        if let Ok(csv) = CsvDecoder::new(cfg.clone(), &rest[..nl]) {
            check(cfg, &csv.decode(&rest[nl + 1..]));
        }
    }
});

const DDL_HEADER: &str = "u,ts,b,f,d,i,l,s,extra";
