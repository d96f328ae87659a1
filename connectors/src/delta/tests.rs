//! Tests of the Delta sink against its log and Parquet files read back directly (the log's JSON
//! lines with serde_json, the files with the parquet crate's reader): expected rows by hand.

use std::collections::BTreeSet;
use std::fs::File;

use deltalake_core::arrow::json::ArrayWriter;
use deltalake_core::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use eddy_engine::schema::DataType;
use serde_json::{Value, json};

use super::*;

fn columns() -> Vec<Field> {
    vec![
        Field { name: "window".into(), data_type: DataType::Window },
        Field { name: "user_id".into(), data_type: DataType::String },
        Field { name: "total".into(), data_type: DataType::Double },
        Field { name: "txn_count".into(), data_type: DataType::Long },
    ]
}

fn row(start: &str, end: &str, user: &str, total: f64, n: i64) -> String {
    json!({"window": {"start": start, "end": end}, "user_id": user, "total": total, "txn_count": n}).to_string()
}

const T0: &str = "2024-01-15T10:00:00Z";
const T1: &str = "2024-01-15T10:05:00Z";
const T2: &str = "2024-01-15T10:10:00Z";

/// Writes `rows` to batch `id`, prepares and commits it.
fn batch(sink: &mut DeltaSink, id: u64, rows: &[String]) {
    for r in rows {
        sink.write(id, r, None).unwrap();
    }
    sink.prepare(id).unwrap();
    sink.commit(id).unwrap();
}

/// The log's commits, in version order: each a list of actions (JSON objects).
fn log(dir: &Path) -> Vec<Vec<Value>> {
    let mut names: Vec<PathBuf> = fs::read_dir(dir.join("_delta_log"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    for (i, n) in names.iter().enumerate() {
        assert_eq!(n.file_name().unwrap().to_str().unwrap(), format!("{i:020}.json"), "versions from 0, no gap");
    }
    names
        .iter()
        .map(|n| fs::read_to_string(n).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect())
        .collect()
}

/// The `txn` actions of each version: (appId, version).
fn txns(log: &[Vec<Value>]) -> Vec<Vec<(String, i64)>> {
    log.iter()
        .map(|v| {
            v.iter()
                .filter_map(|a| a.get("txn"))
                .map(|t| (t["appId"].as_str().unwrap().to_string(), t["version"].as_i64().unwrap()))
                .collect()
        })
        .collect()
}

/// The files of the table after the whole log: added and not removed.
fn active_files(log: &[Vec<Value>]) -> Vec<Value> {
    let mut active: Vec<Value> = Vec::new();
    for version in log {
        for a in version {
            if let Some(add) = a.get("add") {
                active.push(add.clone());
            }
            if let Some(remove) = a.get("remove") {
                active.retain(|f| f["path"] != remove["path"]);
            }
        }
    }
    active
}

/// The rows of the table (Parquet files read back, partition values put back), sorted.
fn table_rows(dir: &Path) -> Vec<Value> {
    let mut rows = Vec::new();
    for add in active_files(&log(dir)) {
        let path = dir.join(add["path"].as_str().unwrap());
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap().build().unwrap();
        let mut writer = ArrayWriter::new(Vec::new());
        for b in reader {
            writer.write(&b.unwrap()).unwrap();
        }
        writer.finish().unwrap();
        let text = String::from_utf8(writer.into_inner()).unwrap();
        let mut file_rows: Vec<Value> = if text.is_empty() { Vec::new() } else { serde_json::from_str(&text).unwrap() };
        for r in &mut file_rows {
            for (k, v) in add["partitionValues"].as_object().unwrap() {
                r[k] = v.clone();
            }
        }
        rows.extend(file_rows);
    }
    rows.sort_by_key(|r| r.to_string());
    rows
}

/// Every Parquet file under the table's folder outside the staging folder.
fn parquet_files(dir: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, rel: &Path, out: &mut BTreeSet<String>) {
        for e in fs::read_dir(root.join(rel)).unwrap() {
            let e = e.unwrap();
            let name = rel.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                if name != Path::new(STAGING) {
                    walk(root, &name, out);
                }
            } else if name.extension().is_some_and(|x| x == "parquet") {
                out.insert(name.to_str().unwrap().to_string());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, Path::new(""), &mut out);
    out
}

fn expected(rows: &[(&str, &str, &str, f64, i64)]) -> Vec<Value> {
    let mut v: Vec<Value> = rows
        .iter()
        .map(|(s, e, u, t, n)| {
            // the parquet reader's JSON spelling of a UTC microsecond timestamp
            let ts = |x: &str| Value::String(x.to_string());
            json!({"window": {"start": ts(s), "end": ts(e)}, "user_id": u, "total": t, "txn_count": n})
        })
        .collect();
    v.sort_by_key(|r| r.to_string());
    v
}

#[test]
fn each_batch_with_rows_is_one_version_with_its_txn_and_an_empty_batch_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = DeltaSink::new(dir.path(), &columns(), &[], DeltaWrite::Append).unwrap();
    let app = sink.application_id().to_string();
    batch(&mut sink, 0, &[row(T0, T1, "a", 1.5, 1), row(T0, T1, "b", 2.0, 2)]);
    batch(&mut sink, 1, &[]);
    batch(&mut sink, 2, &[row(T1, T2, "a", 4.25, 3)]);
    let log = log(dir.path());
    assert_eq!(log.len(), 2, "batches 0 and 2 have rows, batch 1 none");
    assert_eq!(txns(&log), vec![vec![(app.clone(), 0)], vec![(app, 2)]]);
    assert!(log[0].iter().any(|a| a.get("metaData").is_some()), "the first version creates the table");
    assert_eq!(
        table_rows(dir.path()),
        expected(&[(T0, T1, "a", 1.5, 1), (T0, T1, "b", 2.0, 2), (T1, T2, "a", 4.25, 3)])
    );
    assert!(!dir.path().join(STAGING).join("batch-000000").exists(), "a committed batch leaves no staging folder");
}

#[test]
fn the_table_schema_maps_window_to_a_struct_and_timestamps_to_utc() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = DeltaSink::new(dir.path(), &columns(), &[], DeltaWrite::Append).unwrap();
    batch(&mut sink, 0, &[row(T0, T1, "a", 1.5, 1)]);
    let log = log(dir.path());
    let meta = log[0].iter().find_map(|a| a.get("metaData")).unwrap();
    let schema: Value = serde_json::from_str(meta["schemaString"].as_str().unwrap()).unwrap();
    let types: Vec<(String, Value)> = schema["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap().into(), f["type"].clone()))
        .collect();
    assert_eq!(types[0].0, "window");
    let window_fields: Vec<(&str, &str)> = types[0].1["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap(), f["type"].as_str().unwrap()))
        .collect();
    assert_eq!(window_fields, [("start", "timestamp"), ("end", "timestamp")]);
    assert_eq!(types[1], ("user_id".into(), json!("string")));
    assert_eq!(types[2], ("total".into(), json!("double")));
    assert_eq!(types[3], ("txn_count".into(), json!("long")));
}

#[test]
fn decimals_dates_and_non_finite_doubles_are_written_as_their_delta_types() {
    let dir = tempfile::tempdir().unwrap();
    let columns = vec![
        Field { name: "d".into(), data_type: DataType::Date },
        Field { name: "amount".into(), data_type: DataType::Decimal { precision: 10, scale: 2 } },
        Field { name: "x".into(), data_type: DataType::Double },
    ];
    let mut sink = DeltaSink::new(dir.path(), &columns, &[], DeltaWrite::Append).unwrap();
    let rows =
        [r#"{"d": "2024-01-15", "amount": 12.50, "x": "NaN"}"#, r#"{"d": null, "amount": -0.01, "x": "-Infinity"}"#];
    batch(&mut sink, 0, &rows.map(String::from));
    let add = &active_files(&log(dir.path()))[0];
    let path = dir.path().join(add["path"].as_str().unwrap());
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap().build().unwrap();
    let b = reader.into_iter().next().unwrap().unwrap();
    use deltalake_core::arrow::array::{Array, AsArray};
    use deltalake_core::arrow::datatypes::{Date32Type, Decimal128Type, Float64Type};
    let d = b.column(0).as_primitive::<Date32Type>();
    assert_eq!((d.value(0), d.is_null(1)), (19_737, true));
    let amount = b.column(1).as_primitive::<Decimal128Type>();
    assert_eq!((amount.value(0), amount.value(1), amount.scale()), (1250, -1, 2));
    let x = b.column(2).as_primitive::<Float64Type>();
    assert!(x.value(0).is_nan());
    assert_eq!(x.value(1), f64::NEG_INFINITY);
}

#[test]
fn complete_mode_replaces_the_tables_rows_each_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = DeltaSink::new(dir.path(), &columns(), &[], DeltaWrite::Complete).unwrap();
    batch(&mut sink, 0, &[row(T0, T1, "a", 1.0, 1), row(T0, T1, "b", 2.0, 1)]);
    batch(&mut sink, 1, &[row(T0, T1, "a", 3.0, 2), row(T0, T1, "b", 2.0, 1)]);
    let log = log(dir.path());
    assert_eq!(log.len(), 2);
    assert!(log[1].iter().any(|a| a.get("remove").is_some()), "the second version removes the first's files");
    assert_eq!(table_rows(dir.path()), expected(&[(T0, T1, "a", 3.0, 2), (T0, T1, "b", 2.0, 1)]));
}

#[test]
fn partition_by_writes_hive_style_folders_and_partition_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = DeltaSink::new(dir.path(), &columns(), &["user_id".to_string()], DeltaWrite::Append).unwrap();
    batch(&mut sink, 0, &[row(T0, T1, "a", 1.0, 1), row(T0, T1, "b", 2.0, 1), row(T1, T2, "a", 5.0, 2)]);
    let files = active_files(&log(dir.path()));
    let mut parts: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            let p = f["path"].as_str().unwrap();
            (p.split('/').next().unwrap().to_string(), f["partitionValues"]["user_id"].as_str().unwrap().to_string())
        })
        .collect();
    parts.sort();
    assert_eq!(parts, [("user_id=a".to_string(), "a".to_string()), ("user_id=b".to_string(), "b".to_string())]);
    assert_eq!(
        table_rows(dir.path()),
        expected(&[(T0, T1, "a", 1.0, 1), (T0, T1, "b", 2.0, 1), (T1, T2, "a", 5.0, 2)])
    );
}

#[test]
fn a_replayed_batch_already_in_the_log_is_not_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let app = "5b0a3c5e-6a47-4c8e-9a43-0a4e3b2d9c11";
    {
        let mut sink = DeltaSink::new(dir.path(), &columns(), &[], DeltaWrite::Append).unwrap();
        sink.use_application_id(app);
        batch(&mut sink, 0, &[row(T0, T1, "a", 1.0, 1)]);
        batch(&mut sink, 1, &[row(T0, T1, "b", 2.0, 1)]);
    }
    // a restart whose checkpoint is at batch 0: batch 1 is replayed, and is in the log already
    let mut sink = DeltaSink::new(dir.path(), &columns(), &[], DeltaWrite::Append).unwrap();
    sink.use_application_id(app);
    assert_eq!(sink.recover(Some(0)).unwrap(), 0);
    batch(&mut sink, 1, &[row(T0, T1, "b", 2.0, 1)]);
    batch(&mut sink, 2, &[row(T1, T2, "a", 7.0, 1)]);
    let log = log(dir.path());
    let versions: Vec<i64> = txns(&log).iter().map(|t| t[0].1).collect();
    assert_eq!(versions, [0, 1, 2], "one version per batch, none twice");
    assert_eq!(
        table_rows(dir.path()),
        expected(&[(T0, T1, "a", 1.0, 1), (T0, T1, "b", 2.0, 1), (T1, T2, "a", 7.0, 1)])
    );
    assert_eq!(parquet_files(dir.path()).len(), 3, "the replayed batch's files were not kept");
    // a new checkpoint (another id, batch numbers from 0 again) is not mistaken for the old one
    let mut fresh = DeltaSink::new(dir.path(), &columns(), &[], DeltaWrite::Append).unwrap();
    fresh.use_application_id("0d8e7f00-1111-4222-8333-944455556666");
    fresh.recover(None).unwrap();
    batch(&mut fresh, 0, &[row(T2, "2024-01-15T10:15:00Z", "c", 1.0, 1)]);
    assert_eq!(super::tests::log(dir.path()).len(), 4);
}

#[test]
fn a_prepared_batch_is_rolled_forward_when_its_checkpoint_completed_and_discarded_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let app = "9a1d2c3b-4e5f-4a6b-8c7d-0e1f2a3b4c5d";
    {
        let mut sink = DeltaSink::new(dir.path(), &columns(), &[], DeltaWrite::Append).unwrap();
        sink.use_application_id(app);
        batch(&mut sink, 0, &[row(T0, T1, "a", 1.0, 1)]);
        // prepared (its checkpoint then written), the process killed before its commit
        sink.write(1, &row(T0, T1, "b", 2.0, 1), None).unwrap();
        sink.prepare(1).unwrap();
        // prepared, killed before its checkpoint completed
        sink.write(2, &row(T1, T2, "c", 3.0, 1), None).unwrap();
        sink.prepare(2).unwrap();
        // files written, killed before adds.json: a prepare cut short
        sink.write(3, &row(T1, T2, "d", 4.0, 1), None).unwrap();
        sink.prepare(3).unwrap();
        fs::remove_file(sink.staged(3).join(ADDS)).unwrap();
    }
    let mut sink = DeltaSink::new(dir.path(), &columns(), &[], DeltaWrite::Append).unwrap();
    sink.use_application_id(app);
    assert_eq!(sink.recover(Some(1)).unwrap(), 3, "batch 1 rolled forward, batches 2 and 3 discarded");
    let log = log(dir.path());
    assert_eq!(txns(&log).iter().map(|t| t[0].1).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(table_rows(dir.path()), expected(&[(T0, T1, "a", 1.0, 1), (T0, T1, "b", 2.0, 1)]));
    // no file of an uncommitted batch is left, in the table or in staging
    let referenced: BTreeSet<String> =
        active_files(&log).iter().map(|f| f["path"].as_str().unwrap().to_string()).collect();
    assert_eq!(parquet_files(dir.path()), referenced);
    assert_eq!(fs::read_dir(dir.path().join(STAGING)).unwrap().count(), 0);
    // the replayed batch 2 is then written once
    batch(&mut sink, 2, &[row(T1, T2, "c", 3.0, 1)]);
    assert_eq!(super::tests::log(dir.path()).len(), 3);
}

#[test]
fn a_run_without_checkpoint_discards_what_an_earlier_run_staged() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut sink = DeltaSink::new(dir.path(), &columns(), &[], DeltaWrite::Append).unwrap();
        sink.write(0, &row(T0, T1, "a", 1.0, 1), None).unwrap();
        sink.prepare(0).unwrap();
    }
    let mut sink = DeltaSink::new(dir.path(), &columns(), &[], DeltaWrite::Append).unwrap();
    batch(&mut sink, 0, &[row(T0, T1, "b", 2.0, 1)]);
    assert_eq!(table_rows(dir.path()), expected(&[(T0, T1, "b", 2.0, 1)]));
    assert_eq!(parquet_files(dir.path()).len(), 1);
}

#[test]
fn a_row_that_does_not_fit_the_schema_is_an_error_naming_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = DeltaSink::new(dir.path(), &columns(), &[], DeltaWrite::Append).unwrap();
    let bad = r#"{"window": {"start": "yesterday", "end": "today"}, "user_id": "a", "total": 1, "txn_count": 1}"#;
    let e = sink.write(4, bad, None).and_then(|()| sink.prepare(4)).unwrap_err();
    assert!(e.to_string().contains("batch 4"), "{e}");
}

#[test]
fn an_existing_table_of_other_columns_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = DeltaSink::new(dir.path(), &columns(), &[], DeltaWrite::Append).unwrap();
    batch(&mut sink, 0, &[row(T0, T1, "a", 1.0, 1)]);
    let other = vec![Field { name: "k".into(), data_type: DataType::String }];
    let e = DeltaSink::new(dir.path(), &other, &[], DeltaWrite::Append).unwrap_err();
    assert!(e.to_string().contains("k string") && e.to_string().contains("user_id string"), "{e}");
}

#[test]
fn a_batch_of_more_rows_than_one_record_batch_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = DeltaSink::new(dir.path(), &columns(), &[], DeltaWrite::Append).unwrap();
    let n = 2 * ROWS_PER_RECORD_BATCH + 17;
    let rows: Vec<String> = (0..n).map(|i| row(T0, T1, &format!("u{i}"), i as f64, i as i64)).collect();
    batch(&mut sink, 0, &rows);
    let got = table_rows(dir.path());
    assert_eq!(got.len(), n);
    let mut counts: Vec<i64> = got.iter().map(|r| r["txn_count"].as_i64().unwrap()).collect();
    counts.sort_unstable();
    assert_eq!(counts, (0..n as i64).collect::<Vec<_>>());
}
