//! Scalar UDFs end to end through the `eddy` library (`Registry::register_udf`): called from a
//! source's `select`, a `[query] sql` (its select list, WHERE and an aggregate's input) and a
//! sink's `select`, in both modes, with one partition actor and four. Expected rows come from a
//! brute-force reference written here from the functions' rules (never from the engine). A
//! UDF that returns an error and one that panics each send their record to the dead-letter sink
//! with the function's name and message, and every other record is written.
//!
//! The functions: `cents(amount DOUBLE) -> BIGINT` is the amount in cents, rounded, and an error
//! `negative amount A` for an amount below zero; `mask(card STRING) -> STRING` keeps the last
//! four characters and writes `*` for the others, and panics with `empty card number` on an
//! empty card; `is_test(card STRING) -> BOOLEAN` is true for cards starting with `0000`.

mod common;
use common::json_lines_sorted;

use std::collections::BTreeMap;
use std::path::Path;

use eddy::{DataType, Job, Registry, Value};
use serde_json::json;

const S: i64 = 1_000_000;
/// 2024-03-01T12:00:00Z in µs.
const T0: i64 = 1_709_294_400 * S;

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register_udf("cents", &[DataType::Double], DataType::Long, |a| match a[0] {
        Value::Double(x) if x < 0.0 => Err(format!("negative amount {x}")),
        Value::Double(x) => Ok(Value::Long((x * 100.0).round() as i64)),
        _ => Ok(Value::Null),
    })
    .unwrap();
    r.register_udf("mask", &[DataType::String], DataType::String, |a| match &a[0] {
        Value::Str(s) => {
            assert!(!s.is_empty(), "empty card number");
            Ok(Value::Str(mask(s).into()))
        }
        _ => Ok(Value::Null),
    })
    .unwrap();
    r.register_udf("is_test", &[DataType::String], DataType::Boolean, |a| match &a[0] {
        Value::Str(s) => Ok(Value::Bool(s.starts_with("0000"))),
        _ => Ok(Value::Null),
    })
    .unwrap();
    r
}

/// The reference of `mask`.
fn mask(s: &str) -> String {
    let n = s.chars().count();
    s.chars().enumerate().map(|(i, c)| if i + 4 < n { '*' } else { c }).collect()
}

/// The reference of `cents`: `Err(message)` as the UDF fails.
fn cents(x: f64) -> Result<i64, String> {
    if x < 0.0 { Err(format!("negative amount {x}")) } else { Ok((x * 100.0).round() as i64) }
}

/// One payment: card, amount, event time (µs).
struct Payment {
    card: String,
    amount: f64,
    ts: i64,
}

/// A deterministic input: a few cards (one test card, one empty card number), amounts with
/// cents, some negative, in event-time order one to three seconds apart.
fn payments() -> Vec<Payment> {
    let cards = ["4111222233334444", "5500000000000004", "000012345678", "", "340000000000009"];
    let mut seed = 7u64;
    let mut next = |n: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    let mut ts = T0;
    (0..300)
        .map(|_| {
            ts += S + next(2 * S as u64) as i64;
            let card = cards[next(cards.len() as u64) as usize].to_string();
            let cents = next(100_000) as f64 - 8_000.0;
            Payment { card, amount: cents / 100.0, ts }
        })
        .collect()
}

fn iso(ts: i64) -> String {
    let secs = ts.div_euclid(S);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // 2024-03-01 is day 19783 since the epoch; the input stays within that day
    assert_eq!(days, 19_783, "the input stays on 2024-03-01");
    format!("2024-03-01T{:02}:{:02}:{:02}Z", rem / 3600, rem / 60 % 60, rem % 60)
}

fn input_line(p: &Payment) -> String {
    json!({"card": p.card, "amount": p.amount, "ts": iso(p.ts)}).to_string()
}

fn sorted(mut v: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    v.sort_by_key(|x| x.to_string());
    v
}

/// The dead letters under `dir`, each with its `record` text parsed (so that the comparison does
/// not depend on the record's spacing), sorted.
fn dead_letters(dir: &Path) -> Vec<serde_json::Value> {
    let parsed = json_lines_sorted(dir).into_iter().map(|mut d| {
        let text = d["record"].as_str().unwrap_or_else(|| panic!("a dead letter without its record: {d}")).to_string();
        d["record"] = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        d
    });
    sorted(parsed.collect())
}

/// Writes the input (in files of 50 lines) and the pipeline into a scratch folder, runs it with
/// the registry and returns the folder.
fn run(pipeline: &str, mode: &str, parallelism: usize) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("input")).unwrap();
    for (i, chunk) in payments().chunks(50).enumerate() {
        let text: String = chunk.iter().map(|p| input_line(p) + "\n").collect();
        std::fs::write(dir.join(format!("input/{i:03}.json")), text).unwrap();
    }
    std::fs::write(dir.join("p.toml"), pipeline.replace("MODE", mode)).unwrap();
    let set = [("parallelism".to_string(), parallelism.to_string())];
    Job::from_file_with_in(dir.join("p.toml"), &set, &registry()).unwrap().run().unwrap();
    tmp
}

/// The file and line of payment `i` (as the dead-letter sink names its source).
fn source_of(i: usize) -> String {
    format!("{:03}.json:{}", i / 50, i % 50 + 1)
}

const STATELESS: &str = r#"
name = "udf-stateless"
mode = "MODE"
[source]
type = "files"
path = "input"
format = "json"
schema = "card STRING, amount DOUBLE, ts TIMESTAMP"
select = ["mask(card) AS masked", "card", "amount", "ts"]
[query]
sql = "SELECT masked, cents(amount) AS amount_cents, ts FROM source WHERE NOT is_test(card)"
[sink]
type = "files"
path = "out"
select = ["masked", "amount_cents", "amount_cents + 1 AS plus_one", "ts"]
[dead_letter]
type = "files"
path = "dead"
"#;

#[test]
fn udfs_in_selects_filters_and_queries_compute_their_rules_and_failures_go_to_the_dead_letters() {
    let ps = payments();
    let mut rows = Vec::new();
    let mut dead = Vec::new();
    for (i, p) in ps.iter().enumerate() {
        let record = input_line(p);
        if p.card.is_empty() {
            dead.push(json!({
                "reason": "FAILED_EXECUTE_UDF (function mask: panicked: empty card number) in \"mask(card)\"",
                "source": source_of(i),
                "record": serde_json::from_str::<serde_json::Value>(&record).unwrap(),
            }));
            continue;
        }
        if p.card.starts_with("0000") {
            continue;
        }
        match cents(p.amount) {
            // the query's select list runs on its output rows (as a sink's select does,
            // SEMANTICS.md "Source filters and projections"): the row as it came out of the
            // source's select, labelled with the query's field
            Err(m) => dead.push(json!({
                "reason": format!("FAILED_EXECUTE_UDF (function cents: {m}) in \"cents(amount)\""),
                "source": "query.sql",
                "record": json!({"masked": mask(&p.card), "card": p.card, "amount": p.amount, "ts": iso(p.ts)}),
            })),
            Ok(c) => rows.push(json!({"masked": mask(&p.card), "amount_cents": c, "plus_one": c + 1, "ts": iso(p.ts)})),
        }
    }
    // the input has each kind of record
    assert!(rows.len() > 100 && dead.len() > 20, "{} rows, {} dead", rows.len(), dead.len());
    assert!(dead.iter().any(|d| d["reason"].as_str().unwrap().contains("panicked")));
    let (rows, dead) = (sorted(rows), sorted(dead));
    for mode in ["micro-batch", "real-time"] {
        for parallelism in [1, 4] {
            let tmp = run(STATELESS, mode, parallelism);
            assert_eq!(sorted(json_lines_sorted(&tmp.path().join("out"))), rows, "{mode} x{parallelism}");
            assert_eq!(dead_letters(&tmp.path().join("dead")), dead, "{mode} x{parallelism}");
        }
    }
}

const AGGREGATE: &str = r#"
name = "udf-aggregate"
mode = "MODE"
[source]
type = "files"
path = "input"
format = "json"
schema = "card STRING, amount DOUBLE, ts TIMESTAMP"
filter = "card <> '' AND amount >= 0"
[watermark]
column = "ts"
delay = "0 seconds"
[query]
sql = """
SELECT mask(card) AS masked, window.start AS minute, sum(cents(amount)) AS total, count(*) AS n
FROM source
GROUP BY mask(card), window(ts, '1 minute')
"""
output_mode = "append"
[sink]
type = "files"
path = "out"
"#;

#[test]
fn a_udf_in_a_group_key_and_an_aggregates_input_groups_and_sums_as_the_reference() {
    // per (masked card, minute): the sum of cents and the count, of the records the filter keeps
    let mut groups: BTreeMap<(String, i64), (i64, i64)> = BTreeMap::new();
    let last = payments().last().map(|p| p.ts).unwrap();
    for p in payments() {
        if p.card.is_empty() || p.amount < 0.0 {
            continue;
        }
        let minute = p.ts - p.ts.rem_euclid(60 * S);
        let g = groups.entry((mask(&p.card), minute)).or_default();
        g.0 += cents(p.amount).unwrap();
        g.1 += 1;
    }
    // append mode: a window is written once the watermark (the latest event time, delay 0)
    // reaches its end (SEMANTICS.md "Watermark"); the last window stays open
    let rows = sorted(
        groups
            .iter()
            .filter(|((_, m), _)| m + 60 * S <= last)
            .map(|((c, m), (total, n))| json!({"masked": c, "minute": iso(*m), "total": total, "n": n}))
            .collect(),
    );
    assert!(rows.len() > 30, "{} windows", rows.len());
    for mode in ["micro-batch", "real-time"] {
        for parallelism in [1, 4] {
            let tmp = run(AGGREGATE, mode, parallelism);
            assert_eq!(sorted(json_lines_sorted(&tmp.path().join("out"))), rows, "{mode} x{parallelism}");
        }
    }
}
