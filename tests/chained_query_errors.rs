//! Rows that a chained aggregation cannot take (SQL.md "Errors while evaluating", SEMANTICS.md
//! "Several stateful operators (chained)"), end to end through the `eddy` binary: an inner
//! row on which an expression between the two aggregations fails (the inner query's select
//! list), and an inner row that the outer aggregation refuses (its integer sum would leave
//! BIGINT), go to the dead letters with the reason, as a record or a row whose expression fails
//! anywhere else does; the other rows are aggregated. In both modes, at parallelism 1 and 2,
//! over an exchange edge (the outer grouped by the window alone) and a forward one. Expected
//! rows are written by hand from the input.

mod common;
use common::json_lines_sorted;

use std::process::Command;

use serde_json::{Value, json};

/// Writes `input` as `input/000.json` and the pipeline (with `MODE`, `PARALLELISM` and `SQL`
/// replaced), runs it, and returns the folder.
fn run(sql: &str, input: &str, mode: &str, parallelism: usize) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("input")).unwrap();
    std::fs::write(dir.join("input/000.json"), input).unwrap();
    let p = PIPELINE.replace("MODE", mode).replace("PARALLELISM", &parallelism.to_string()).replace("SQL", sql);
    std::fs::write(dir.join("p.toml"), p).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "p.toml", "--no-progress"])
        .current_dir(dir)
        .env("EDDY_LOG", "error")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{mode} x{parallelism}: {}", String::from_utf8_lossy(&out.stderr));
    tmp
}

const PIPELINE: &str = r#"
name = "chained-errors"
mode = "MODE"
parallelism = PARALLELISM
trigger = "1 minute"
[source]
type = "files"
path = "input"
format = "json"
schema = "k STRING, v BIGINT, ts TIMESTAMP"
[watermark]
column = "ts"
delay = "0 seconds"
[clock]
type = "replay"
column = "ts"
[query]
sql = """SQL"""
output_mode = "append"
[sink]
type = "files"
path = "out"
[dead_letter]
type = "files"
path = "dead"
"#;

fn lines(records: &[Value]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}

fn window(start: &str, end: &str) -> Value {
    json!({"start": format!("2024-01-15T{start}Z"), "end": format!("2024-01-15T{end}Z")})
}

/// The dead letters under `dir`, each with its `record` (a JSON string) parsed, sorted.
fn dead_letters(dir: &std::path::Path) -> Vec<Value> {
    let mut v = json_lines_sorted(dir);
    for d in &mut v {
        let record = d["record"].as_str().unwrap_or_else(|| panic!("{d}: no record string")).to_string();
        d["record"] = serde_json::from_str(&record).unwrap_or_else(|e| panic!("{record}: {e}"));
    }
    sorted(v)
}

fn sorted(mut v: Vec<Value>) -> Vec<Value> {
    v.sort_by_key(|x| x.to_string());
    v
}

#[test]
fn an_inner_row_whose_select_list_fails_goes_to_the_dead_letters_over_an_exchange_and_a_forward_edge() {
    let r = |k: &str, t: &str| json!({"k": k, "v": 1, "ts": format!("2024-01-15T10:00:{t}Z")});
    // window [10:00:00, 10:00:10): a twice, b once (100 div (1 - 1) fails), c three times;
    // x at 10:00:25 moves the watermark past it
    let input =
        lines(&[r("a", "01"), r("a", "02"), r("b", "03"), r("c", "04"), r("c", "05"), r("c", "06"), r("x", "25")]);
    let inner = "SELECT window(ts, '10 seconds') AS window, k, 100 div (count(*) - 1) AS per \
                 FROM source GROUP BY 1, 2";
    let w = window("10:00:00", "10:00:10");
    let dead = vec![json!({
        "reason": "DIVIDE_BY_ZERO in \"(100 div (count(1) - 1))\"",
        "source": "query.sql",
        "record": {"window": w, "k": "b", "count(1)": 1},
    })];
    let cases = [
        // grouped by the window alone: the inner rows cross the exchange
        (
            format!("SELECT window, count(*) AS keys, sum(per) AS per FROM ({inner}) GROUP BY window"),
            vec![json!({"window": w, "keys": 2, "per": 150})],
        ),
        // grouped by the inner key too: a forward edge
        (
            format!("SELECT window, k, sum(per) AS per FROM ({inner}) GROUP BY window, k"),
            sorted(vec![json!({"window": w, "k": "a", "per": 100}), json!({"window": w, "k": "c", "per": 50})]),
        ),
    ];
    for (sql, rows) in &cases {
        for mode in ["micro-batch", "real-time"] {
            for parallelism in [1, 2] {
                let tmp = run(sql, &input, mode, parallelism);
                let at = format!("{mode} x{parallelism}: {sql}");
                assert_eq!(json_lines_sorted(&tmp.path().join("out")), *rows, "{at}");
                assert_eq!(dead_letters(&tmp.path().join("dead")), dead, "{at}");
            }
        }
    }
}

#[test]
fn an_inner_row_that_the_outer_sum_refuses_goes_to_the_dead_letters() {
    // 4e18 + 4e18 fits in BIGINT; a third 4e18 does not
    let big = 4_000_000_000_000_000_000_i64;
    let r = |k: &str, v: i64, t: &str| json!({"k": k, "v": v, "ts": format!("2024-01-15T10:{t}Z")});
    // key a: one row per 10-second window, each finalised (and summed by the outer query)
    // before the next, so the third is the one refused; x at 10:01:05 closes the minute
    let input = lines(&[
        r("a", big, "00:01"),
        r("a", big, "00:12"),
        r("a", big, "00:23"),
        r("x", 1, "00:35"),
        r("x", 1, "01:05"),
    ]);
    let sql = "SELECT window(window, '1 minute') AS window, k, sum(total) AS total, count(*) AS windows \
               FROM (SELECT window(ts, '10 seconds') AS window, k, sum(v) AS total FROM source GROUP BY 1, 2) \
               GROUP BY window(window, '1 minute'), k";
    let minute = window("10:00:00", "10:01:00");
    let rows = sorted(vec![
        json!({"window": minute, "k": "a", "total": 2 * big, "windows": 2}),
        json!({"window": minute, "k": "x", "total": 1, "windows": 1}),
    ]);
    let dead = vec![json!({
        "reason": "ARITHMETIC_OVERFLOW in sum(total)",
        "source": "query.sql",
        "record": {"window": window("10:00:20", "10:00:30"), "k": "a", "total": big},
    })];
    // micro-batch: one file is one batch, so every window closes in the no-data batch after it
    // and the outer query meets all three rows in one batch: which of them is refused depends
    // on their order there; real-time closes them one at a time
    for parallelism in [1, 2] {
        let tmp = run(sql, &input, "real-time", parallelism);
        assert_eq!(json_lines_sorted(&tmp.path().join("out")), rows, "x{parallelism}");
        assert_eq!(dead_letters(&tmp.path().join("dead")), dead, "x{parallelism}");
    }
}
