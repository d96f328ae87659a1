//! Helpers shared by the end-to-end tests.

// each test binary that includes this module uses some of its helpers
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The repository root (`../shared` sits beside it).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Copies the folder `from` (recursively) to `to`, so a case runs in a scratch copy.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// The non-blank lines of every file directly under `dir` (none if it does not exist), files in
/// name order, each parsed as JSON (a line that is not JSON fails the test, naming it).
pub fn json_lines(dir: &Path) -> Vec<serde_json::Value> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
        .iter()
        .flat_map(|p| std::fs::read_to_string(p).unwrap().lines().map(String::from).collect::<Vec<_>>())
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(&l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// [`json_lines`], sorted by each line's text (output whose order across files is not fixed).
pub fn json_lines_sorted(dir: &Path) -> Vec<serde_json::Value> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut lines: Vec<String> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .flat_map(|p| std::fs::read_to_string(p).unwrap().lines().map(String::from).collect::<Vec<_>>())
        .filter(|l| !l.trim().is_empty())
        .collect();
    lines.sort();
    lines.iter().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"))).collect()
}

/// Compares the rows under `output` (created if absent: no rows) with those under `expected`
/// with ../shared/tools/compare.py in `--all` mode (every row, batch by batch); `Err` with its
/// report when they differ.
pub fn compare_all(expected: &Path, output: &Path) -> Result<(), String> {
    std::fs::create_dir_all(output).unwrap();
    let cmp = std::process::Command::new("python3")
        .arg(root().join("../shared/tools/compare.py"))
        .arg(expected)
        .arg(output)
        .arg("--all")
        .output()
        .unwrap();
    match cmp.status.success() {
        true => Ok(()),
        false => Err(String::from_utf8_lossy(&cmp.stdout).into_owned()),
    }
}
