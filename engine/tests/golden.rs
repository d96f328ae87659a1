//! Golden micro-batch cases: every case of `../shared/cases` (expected output from Apache Spark
//! 4.3) and of the project's own `tests/cases` (also from the Spark oracle) runs through the
//! operators directly, batch by batch as the input files say, and must match `expected/` under
//! the rules of `../shared/tools/compare.py` (which this test runs). A case whose `expected/ERROR`
//! exists is one Spark rejects: the engine must reject its pipeline too.

use std::path::{Path, PathBuf};
use std::process::Command;

use eddy_engine::Timestamp;
use eddy_engine::decode::JsonDecoder;
use eddy_engine::driver::{BatchOutput, MicroBatchRunner};
use eddy_engine::output::row_to_json_line;
use eddy_engine::plan::QueryPlan;
use eddy_engine::spec::parse_pipeline_str;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn case_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for base in [root().join("../shared/cases"), root().join("tests/cases")] {
        let Ok(rd) = std::fs::read_dir(&base) else { continue };
        for e in rd.flatten() {
            if e.path().join("pipeline.toml").is_file() {
                dirs.push(e.path());
            }
        }
    }
    dirs.sort();
    dirs
}

fn write_batch(out_dir: &Path, names: &[String], b: &BatchOutput) {
    if b.output.rows.is_empty() {
        return;
    }
    let mut text = String::new();
    for r in &b.output.rows {
        text.push_str(&row_to_json_line(names, r));
    }
    std::fs::write(out_dir.join(format!("batch-{:06}.jsonl", b.batch_id)), text).unwrap();
}

/// Runs one case through the engine; returns the output folder.
fn run_case(dir: &Path, out_dir: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    let pipeline = parse_pipeline_str(&text).map_err(|e| e.to_string())?;
    let plan = QueryPlan::new(&pipeline).map_err(|e| e.to_string())?;
    let decoder = JsonDecoder::new(plan.decoder_config(pipeline.source.timestamp_unit));
    let mut runner = MicroBatchRunner::new(plan.new_operator(), plan.sequencer());
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(dir.join("input")).unwrap().flatten().map(|e| e.path()).collect();
    inputs.sort();
    for (i, f) in inputs.iter().enumerate() {
        let text = std::fs::read_to_string(f).unwrap();
        let records =
            text.lines().filter(|l| !l.trim().is_empty()).filter_map(|l| decoder.decode(l.as_bytes()).ok()).collect();
        // A fixed processing time per batch: these queries do not read it.
        let b = runner.run_batch(records, Timestamp(i as i64));
        write_batch(out_dir, &plan.output_names, &b);
    }
    if let Some(b) = runner.idle_batch(plan.until(), Timestamp(inputs.len() as i64)) {
        write_batch(out_dir, &plan.output_names, &b);
    }
    Ok(())
}

#[test]
fn every_golden_case_matches_spark() {
    let cases = case_dirs();
    assert!(cases.len() >= 10, "expected the shared cases at ../shared/cases, found {}", cases.len());
    let compare = root().join("../shared/tools/compare.py");
    let mut failures = Vec::new();
    for dir in &cases {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let out = tempfile::tempdir().unwrap();
        let result = run_case(dir, out.path());
        let error_file = dir.join("expected/ERROR");
        if error_file.exists() {
            if result.is_ok() {
                failures.push(format!(
                    "{name}: Spark rejects this pipeline ({}), the engine accepted it",
                    std::fs::read_to_string(&error_file).unwrap_or_default().trim()
                ));
            }
            continue;
        }
        if let Err(e) = result {
            failures.push(format!("{name}: {e}"));
            continue;
        }
        let cmp = Command::new("python3")
            .arg(&compare)
            .arg(dir.join("expected"))
            .arg(out.path())
            .output()
            .expect("python3 runs compare.py");
        if !cmp.status.success() {
            failures.push(format!(
                "{name}:\n{}{}",
                String::from_utf8_lossy(&cmp.stdout),
                String::from_utf8_lossy(&cmp.stderr)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from Spark:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
