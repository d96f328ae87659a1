//! Differential test against Apache Spark: every expression of each `tests/sql_diff/golden*.jsonl`
//! (random well-typed expressions over a random schema, evaluated once by Spark 4.3 with ANSI
//! on and the session time zone UTC, by `tests/sql_diff/gen.py`, or `gen_unixtime.py` for
//! `golden-unixtime.jsonl`, `gen_kernels.py` for `golden-kernels.jsonl`) is bound and evaluated by
//! Eddy on the same rows; output names, types and values must match Spark's (numbers within
//! 1e-9 relative). An expression Spark refused must be refused; one whose evaluation failed in
//! Spark must fail on some row with the same error condition.
//!
//! Each expression is evaluated two ways, a record at a time ([`Compiled::eval`]) and over the
//! whole batch of rows as a source's steps run it ([`CompiledSteps::apply_batch`], whose batch
//! kernels are separate code): in a `select` that writes it into each record's spare slot, in
//! one that puts it first (the records rearranged, the values computed apart), and, for a
//! BOOLEAN, as a `filter`, which must keep exactly the rows where Spark's value is TRUE.

use std::path::PathBuf;

use eddy_engine::decimal::Decimal;
use eddy_engine::expr::{Compiled, ExprError, Typed};
use eddy_engine::spec::{PipelineExpr, Step};
use eddy_engine::steps::{Applied, BatchScratch, CompiledSteps};
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

/// Within 1e-9 relative; a zero only equals a zero of its sign (a sink writes `-0.0`).
fn close(a: f64, b: f64) -> bool {
    if a == 0.0 && b == 0.0 {
        return a.is_sign_negative() == b.is_sign_negative();
    }
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

/// Where a `select` puts the expression among the input's columns.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// After every column: written into each record's spare slot.
    Last,
    /// Before every column: each record rearranged, the values computed apart.
    First,
}

/// Each row's value of `typed` through the source steps' batch path, a `select` of the
/// expression and every column (`columns`) with the expression at `place`, or the reason the
/// row failed.
fn through_select(
    typed: &Typed,
    columns: &[PipelineExpr],
    rows: &[Record],
    place: Place,
) -> Vec<Result<Value, String>> {
    let expr = PipelineExpr { field: "source.select[0]".into(), typed: typed.clone(), name: "x".into() };
    let items: Vec<PipelineExpr> = match place {
        Place::Last => columns.iter().cloned().chain([expr]).collect(),
        Place::First => [expr].into_iter().chain(columns.iter().cloned()).collect(),
    };
    let at = match place {
        Place::Last => columns.len(),
        Place::First => 0,
    };
    let width = items.len();
    let steps = CompiledSteps::new(&[Step::Project(items)], columns.len(), &vec![true; width], Vec::new()).0;
    let (kept, rejected) = through_batch(&steps, rows);
    let mut out: Vec<Result<Value, String>> = vec![Err("neither kept nor rejected".into()); rows.len()];
    for (i, r) in kept {
        out[i] = Ok(r.values[at].clone());
    }
    for (i, reason) in rejected {
        out[i] = Err(reason);
    }
    out
}

/// Whether each row is kept by a `filter` of `typed` through the source steps' batch path
/// (`Ok(false)`: dropped), or the reason it failed.
fn through_filter(typed: &Typed, width: usize, rows: &[Record]) -> Vec<Result<bool, String>> {
    let expr = PipelineExpr { field: "source.filter".into(), typed: typed.clone(), name: "x".into() };
    let steps = CompiledSteps::new(&[Step::Filter(expr)], width, &vec![true; width], Vec::new()).0;
    let (kept, rejected) = through_batch(&steps, rows);
    let mut out: Vec<Result<bool, String>> = vec![Ok(false); rows.len()];
    for (i, _) in kept {
        out[i] = Ok(true);
    }
    for (i, reason) in rejected {
        out[i] = Err(reason);
    }
    out
}

/// The records kept (index in the rows given, record) and the rows that failed (index, reason).
type Outcome = (Vec<(usize, Record)>, Vec<(usize, String)>);

/// `rows` as one batch through `steps`, each with the spare slots a decoder leaves: the records
/// kept (index in `rows`, record) and the rows that failed (index, reason); a row dropped is in
/// neither.
fn through_batch(steps: &CompiledSteps, rows: &[Record]) -> Outcome {
    let spare = steps.spare_columns();
    let mut batch: Vec<Record> = rows
        .iter()
        .map(|r| Record::new(r.values.iter().cloned().chain(std::iter::repeat_n(Value::Null, spare)).collect()))
        .collect();
    let mut scratch = BatchScratch::default();
    let mut rejected = Vec::new();
    steps.apply_batch(&mut batch, &mut scratch, |i, a| {
        if let Applied::Failed { reason, .. } = a {
            rejected.push((i, reason));
        }
    });
    let kept = scratch.kept().iter().map(|&i| i as usize).zip(batch).collect();
    (kept, rejected)
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
    // every column, as a `select` names it
    let columns: Vec<PipelineExpr> = cols
        .iter()
        .enumerate()
        .map(|(i, (n, _))| {
            let b = eddy_sql::bind_expression(&format!("`{n}`"), &schema).unwrap_or_else(|e| panic!("{n}: {e}"));
            PipelineExpr { field: format!("source.select[{}]", i + 1), typed: b.typed, name: b.name }
        })
        .collect();

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
                for place in [Place::Last, Place::First] {
                    let got = through_select(&b.typed, &columns, &rows, place);
                    if !got.iter().any(|v| v.as_ref().is_err_and(|reason| reason.starts_with(&format!("{condition} "))))
                    {
                        failures.push(format!("{expr}: Spark fails with {class}, Eddy's batch ({place:?}): {got:?}"));
                    }
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
        for place in [Place::Last, Place::First] {
            let got = through_select(&b.typed, &columns, &rows, place);
            for (i, (got, want)) in got.iter().zip(&expected).enumerate() {
                let want = decode(want, ty);
                match got {
                    Ok(got) if same(&want, got) => values_checked += 1,
                    _ => {
                        failures.push(format!("{expr}: batch ({place:?}), row {i}: {got:?}, Spark {want:?}"));
                        break;
                    }
                }
            }
        }
        if b.typed.data_type == DataType::Boolean {
            let kept = through_filter(&b.typed, cols.len(), &rows);
            for (i, (got, want)) in kept.iter().zip(&expected).enumerate() {
                let want = matches!(decode(want, ty), Value::Bool(true));
                if got != &Ok(want) {
                    failures.push(format!("{expr}: filter, row {i}: {got:?}, Spark keeps it: {want}"));
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
