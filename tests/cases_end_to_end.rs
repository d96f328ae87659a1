//! Every golden case (`../shared/cases`, Spark 4.3's output, and the project's own `tests/cases`,
//! also from the Spark oracle) runs end to end through `eddy run` in a copy of the case folder,
//! with `parallelism` 1, 2 and 4, and must match `expected/` under `../shared/tools/compare.py`.

use std::path::PathBuf;
use std::process::Command;

mod common;
use common::{copy_dir, root};

fn cases() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for base in [root().join("../shared/cases"), root().join("tests/cases")] {
        let Ok(rd) = std::fs::read_dir(&base) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.join("pipeline.toml").is_file() && !p.join("expected/ERROR").exists() {
                dirs.push(p);
            }
        }
    }
    dirs.sort();
    dirs
}

#[test]
fn every_case_passes_through_eddy_run_with_1_2_and_4_partition_actors() {
    let cases = cases();
    assert!(cases.len() >= 10, "cases not found next to the repository (../shared/cases)");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        for parallelism in [1, 2, 4] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join(&name);
            copy_dir(case, &dir);
            let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
                .arg("run")
                .arg(dir.join("pipeline.toml"))
                .arg("--set")
                .arg(format!("parallelism={parallelism}"))
                .arg("--no-progress")
                .env("EDDY_LOG", "warn")
                .output()
                .unwrap();
            if !out.status.success() {
                failures.push(format!(
                    "{name} (parallelism {parallelism}): exit {:?}: {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr)
                ));
                continue;
            }
            let output = dir.join("output");
            std::fs::create_dir_all(&output).unwrap();
            let cmp = Command::new("python3")
                .arg(root().join("../shared/tools/compare.py"))
                .arg(dir.join("expected"))
                .arg(&output)
                .output()
                .unwrap();
            if !cmp.status.success() {
                failures.push(format!("{name} (parallelism {parallelism}):\n{}", String::from_utf8_lossy(&cmp.stdout)));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
