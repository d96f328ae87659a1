//! Differential test against Apache Spark: every expression of each `tests/sql_diff/golden*.jsonl`
//! (random well-typed expressions over a random schema, evaluated once by Spark 4.3 with ANSI
//! on and the session time zone UTC, by `tests/sql_diff/gen.py`, or `gen_unixtime.py` for
//! `golden-unixtime.jsonl`) is bound and evaluated by
//! Eddy on the same rows; output names, types and values must match Spark's (numbers within
//! 1e-9 relative). An expression Spark refused must be refused; one whose evaluation failed in
//! Spark must fail on some row with the same error condition.

use std::path::PathBuf;

use eddy_engine::decimal::Decimal;
use eddy_engine::expr::{Compiled, ExprError};
use eddy_engine::{DataType, Record, Schema, Timestamp, Value};
use serde_json::Value as Json;

/// The corpora: every `tests/sql_diff/golden*.jsonl`, or SQL_DIFF_GOLDEN (another corpus
/// written by gen.py, while growing it).
fn goldens() -> Vec<PathBuf> {
    if let Some(path) = std::env::var_os("SQL_DIFF_GOLDEN") {
        return vec![PathBuf::from(path)];
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/sql_diff");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("golden") && n.ends_with(".jsonl"))
        })
        .collect();
    paths.sort();
    paths
}

/// Spark's condition for a datetime pattern it refuses (a day name where text is parsed, five
/// day-name letters, `u`): raised at run time, before any row is read.
const PATTERN_CONDITION: &str = "INCONSISTENT_BEHAVIOR_CROSS_VERSION.DATETIME_PATTERN_RECOGNITION";

fn spark_type(t: DataType) -> String {
    match t {
        DataType::Int => "int",
        DataType::Long => "bigint",
        DataType::Double => "double",
        DataType::Float => "float",
        DataType::String => "string",
        DataType::Boolean => "boolean",
        DataType::Timestamp => "timestamp",
        DataType::Decimal { precision, scale } => return format!("decimal({precision},{scale})"),
        DataType::Date => "date",
        _ => "other",
    }
    .to_string()
}

fn decode(v: &Json, t: &str) -> Value {
    match (v, t) {
        (Json::Null, _) => Value::Null,
        (Json::Bool(b), _) => Value::Bool(*b),
        (Json::String(s), "double" | "float") => {
            let x = match s.as_str() {
                "NaN" => f64::NAN,
                "Infinity" => f64::INFINITY,
                _ => f64::NEG_INFINITY,
            };
            if t == "float" { Value::Float(x as f32) } else { Value::Double(x) }
        }
        // DECIMAL values are strings of the exact number in the corpus
        (Json::String(s), t) if t.starts_with("decimal(") => {
            let ty = Schema::parse_ddl(&format!("v {t}")).map(|s| s.fields()[0].data_type);
            match ty.map(|ty| ty.decimal()) {
                Ok(Some((p, sc))) => Decimal::parse(s, p, sc).map_or(Value::Null, Value::Decimal),
                _ => Value::Null,
            }
        }
        (Json::String(s), _) => Value::Str(s.as_str().into()),
        (Json::Number(n), "int") => Value::Int(n.as_i64().unwrap_or_default() as i32),
        (Json::Number(n), "bigint") => Value::Long(n.as_i64().unwrap_or_default()),
        (Json::Number(n), "timestamp") => Value::Timestamp(Timestamp(n.as_i64().unwrap_or_default())),
        (Json::Number(n), "date") => Value::Date(n.as_i64().unwrap_or_default() as i32),
        (Json::Number(n), "float") => Value::Float(n.as_f64().unwrap_or_default() as f32),
        (Json::Number(n), _) => Value::Double(n.as_f64().unwrap_or_default()),
        _ => Value::Null,
    }
}

fn same(expected: &Value, got: &Value) -> bool {
    match (expected.as_f64(), got.as_f64()) {
        (Some(a), Some(b)) if matches!(expected, Value::Double(_) | Value::Float(_)) => close(a, b),
        _ => expected == got || same_json_text(expected, got),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || ((a - b).abs() <= 1e-9 * a.abs().max(b.abs()))
}

/// JSON texts (`to_json`) equal but for the last digits of a double (the tolerance of DOUBLE
/// values, for one written inside a text): the same text with every digit run as `0`, and the
/// numbers within 1e-9 relative.
fn same_json_text(expected: &Value, got: &Value) -> bool {
    let (Some(a), Some(b)) = (expected.as_str(), got.as_str()) else { return false };
    let shape = |s: &str| {
        let mut out = String::new();
        for c in s.chars() {
            if !c.is_ascii_digit() {
                out.push(c);
            } else if !out.ends_with('#') {
                out.push('#');
            }
        }
        out
    };
    let numbers = |s: &str| -> Vec<f64> {
        s.split(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'E' | '-')))
            .filter_map(|t| t.parse().ok())
            .collect()
    };
    let (na, nb) = (numbers(a), numbers(b));
    shape(a) == shape(b) && na.len() == nb.len() && na.iter().zip(&nb).all(|(x, y)| close(*x, *y))
}

#[test]
fn expressions_evaluate_and_are_named_as_spark_does() {
    let paths = goldens();
    assert!(!paths.is_empty(), "no tests/sql_diff/golden*.jsonl");
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        check_corpus(&path.display().to_string(), &text);
    }
}

/// Replays one corpus (the text of a golden file) against Eddy.
fn check_corpus(file: &str, text: &str) {
    let mut lines = text.lines();
    let header: Json = serde_json::from_str(lines.next().unwrap_or("{}")).unwrap_or(Json::Null);
    let cols: Vec<(String, String)> = header["schema"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| (c[0].as_str().unwrap_or("").to_string(), c[1].as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    let ddl: Vec<String> = cols.iter().map(|(n, t)| format!("`{n}` {t}")).collect();
    let schema = Schema::parse_ddl(&ddl.join(", ")).unwrap_or_else(|e| panic!("{e}"));
    let rows: Vec<Record> = header["rows"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| Record::new(cols.iter().enumerate().map(|(i, (_, t))| decode(&r[i], t)).collect()))
                .collect()
        })
        .unwrap_or_default();
    assert!(rows.len() >= 10 && !cols.is_empty(), "golden header: {} rows, {} columns", rows.len(), cols.len());

    let (mut checked, mut values_checked, mut skipped) = (0usize, 0usize, 0usize);
    let mut failures: Vec<String> = Vec::new();
    for line in lines {
        let case: Json = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let expr = case["expr"].as_str().unwrap_or("");
        let bound = eddy_sql::bind_expression(expr, &schema);
        checked += 1;
        match case["error"].as_str() {
            Some("python") => {
                skipped += 1;
                continue;
            }
            Some("analysis") => {
                if let Ok(b) = bound {
                    failures.push(format!(
                        "{expr}: Spark refuses it ({}), Eddy binds it as {}",
                        case["class"], b.typed.data_type
                    ));
                }
                continue;
            }
            Some(_) => {
                let class = case["class"].as_str().unwrap_or("");
                // A pattern Spark cannot use fails when its formatter is built, whatever the
                // row: no query with it runs, and Eddy refuses it when it binds.
                if class.starts_with(PATTERN_CONDITION) && bound.is_err() {
                    continue;
                }
                let Ok(b) = bound else {
                    failures.push(format!(
                        "{expr}: Eddy refuses it: {}",
                        bound.err().map(|e| e.to_string()).unwrap_or_default()
                    ));
                    continue;
                };
                let c = Compiled::new(&b.typed);
                let errs: Vec<String> = rows
                    .iter()
                    .filter_map(|r| match c.eval(r) {
                        Err(ExprError::Eval { kind, .. }) => Some(kind.to_string()),
                        _ => None,
                    })
                    .collect();
                // Spark's condition may name a sub-condition: NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION
                let condition = class.split('.').next().unwrap_or(class);
                if !errs.iter().any(|k| k == condition) {
                    failures.push(format!("{expr}: Spark fails with {class}, Eddy's errors: {errs:?}"));
                }
                continue;
            }
            None => {}
        }
        let b = match bound {
            Ok(b) => b,
            Err(e) => {
                failures.push(format!("{expr}: Eddy refuses it: {e}"));
                continue;
            }
        };
        let name = case["name"].as_str().unwrap_or("");
        if b.name != name {
            failures.push(format!("{expr}: name {:?}, Spark {name:?}", b.name));
        }
        let ty = case["type"].as_str().unwrap_or("");
        if spark_type(b.typed.data_type) != ty {
            failures.push(format!("{expr}: type {}, Spark {ty}", spark_type(b.typed.data_type)));
            continue;
        }
        let c = Compiled::new(&b.typed);
        let expected = case["values"].as_array().cloned().unwrap_or_default();
        for (i, (r, want)) in rows.iter().zip(&expected).enumerate() {
            let want = decode(want, ty);
            match c.eval(r) {
                Ok(got) if same(&want, &got) => values_checked += 1,
                Ok(got) => {
                    failures.push(format!("{expr}: row {i}: {got:?}, Spark {want:?} (row {:?})", r.values));
                    break;
                }
                Err(e) => {
                    failures.push(format!("{expr}: row {i}: {e}, Spark {want:?}"));
                    break;
                }
            }
        }
    }
    #[allow(clippy::print_stderr)] // the corpus size, shown with --nocapture
    {
        eprintln!(
            "{file}: {checked} expressions ({skipped} skipped: values PySpark cannot convert), {values_checked} values equal to Spark's"
        );
    }
    assert!(checked >= 100, "only {checked} expressions in {file}");
    assert!(
        failures.is_empty(),
        "{file}: {} of {checked} expressions differ from Spark:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
