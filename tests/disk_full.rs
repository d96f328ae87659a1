//! A full disk while writing a sink file, a dead letter or a checkpoint: `eddy run` exits 1
//! naming the path it could not write, leaves nothing half-written under a visible name, and a
//! restart once space is freed resumes from the last checkpoint with nothing lost and nothing
//! twice (PIPELINE.md "The command": exit 1, "a restart resumes from the last checkpoint").
//!
//! The full disk is a real one: a 2 MiB tmpfs (mounting needs root; without it each test says
//! SKIPPED on stderr and checks nothing), nearly filled by a filler file that is deleted to free
//! the space. Expected outputs are the input's ids and malformed lines, written here.

#![cfg(target_os = "linux")]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Input files, records per file, malformed lines per file.
const FILES: usize = 3;
const PER_FILE: usize = 1000;
const MALFORMED: usize = 2;

/// A tmpfs mounted on a temporary folder, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// A 2 MiB tmpfs, or `None` where mounting is not allowed (not root): the test is then
    /// skipped loudly (stderr, past the harness's capture), or fails with
    /// `EDDY_REQUIRE_MOUNT=1`. The always-running unit test of the files sink over `/dev/full`
    /// (`connectors/src/files/sink.rs`) covers the sink's side where mounting is refused.
    fn mount(test: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount").args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"]).arg(dir.path()).output();
        let why = match out {
            Ok(o) if o.status.success() => return Some(SmallDisk { dir }),
            Ok(o) => format!("cannot mount a tmpfs: {}", String::from_utf8_lossy(&o.stderr).trim()),
            Err(e) => format!("cannot run mount: {e}"),
        };
        if std::env::var("EDDY_REQUIRE_MOUNT").is_ok_and(|v| v == "1") {
            panic!("{why}: EDDY_REQUIRE_MOUNT=1, so {test} must not be skipped");
        }
        let _ = writeln!(std::io::stderr(), "\n!!!!!!!! SKIPPED {test}: {why} !!!!!!!!\n");
        None
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the disk, then gives `left` bytes back (rounded to pages by the file system).
    fn fill(&self, left: u64) {
        let mut f = std::fs::File::create(self.filler()).unwrap();
        let chunk = vec![b'x'; 64 * 1024];
        let mut written = 0u64;
        loop {
            match f.write(&chunk) {
                Ok(0) => break,
                Ok(n) => written += n as u64,
                Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
                Err(e) => panic!("filling {}: {e}", self.filler().display()),
            }
        }
        f.set_len(written.saturating_sub(left)).unwrap();
    }

    /// Deletes the filler: the space is free again.
    fn free(&self) {
        std::fs::remove_file(self.filler()).unwrap();
    }

    fn filler(&self) -> PathBuf {
        self.path().join("filler")
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        // Best effort: a busy mount stays until the machine's next cleanup; the test has its result.
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Input: `FILES` files of `PER_FILE` records (ids 0.., a 100-byte pad) and `MALFORMED`
/// undecodable lines each, one file per micro-batch.
fn write_input(dir: &Path) {
    let input = dir.join("input");
    std::fs::create_dir_all(&input).unwrap();
    let pad = "p".repeat(100);
    for f in 0..FILES {
        let mut text = String::new();
        for i in 0..PER_FILE {
            let id = f * PER_FILE + i;
            text.push_str(&format!("{{\"id\": {id}, \"pad\": \"{pad}\"}}\n"));
            if i % (PER_FILE / MALFORMED) == 0 {
                text.push_str(&format!("not json {f}-{i}\n"));
            }
        }
        std::fs::write(input.join(format!("{f:03}.json")), text).unwrap();
    }
}

/// A micro-batch deduplication by `id`: every record is an output row.
fn pipeline(dir: &Path, sink: &Path, dead_letter: &Path, checkpoint: &Path) -> PathBuf {
    let text = format!(
        r#"
name = "full"
mode = "micro-batch"
[source]
type = "files"
path = "input"
format = "json"
schema = "id BIGINT, pad STRING"
max_files_per_trigger = 1
[query]
type = "deduplicate"
columns = ["id"]
[sink]
type = "files"
path = "{}"
[dead_letter]
type = "files"
path = "{}"
[checkpoint]
path = "{}"
"#,
        sink.display(),
        dead_letter.display(),
        checkpoint.display()
    );
    let path = dir.join("p.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn eddy(pipeline: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run"])
        .arg(pipeline)
        .args(["--no-progress"])
        .env("EDDY_LOG", "warn")
        .output()
        .unwrap()
}

/// The lines of every visible (committed) file of `folder`, by file; hidden files are skipped
/// as readers skip them. Each visible file must end with a newline (written whole).
fn visible_lines(folder: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(folder) else {
        return out;
    };
    for e in entries {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !e.file_type().unwrap().is_file() {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).unwrap();
        assert!(
            text.is_empty() || text.ends_with('\n'),
            "{name} is cut short: {:?}",
            &text[text.len().saturating_sub(80)..]
        );
        out.insert(name, text.lines().map(str::to_string).collect());
    }
    out
}

/// The ids of the sink's visible rows, sorted (duplicates kept).
fn ids(sink: &Path) -> Vec<u64> {
    let mut ids: Vec<u64> = visible_lines(sink)
        .values()
        .flatten()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["id"].as_u64().unwrap()
        })
        .collect();
    ids.sort_unstable();
    ids
}

/// The raw lines of the dead letters, sorted (duplicates kept).
fn dead(folder: &Path) -> Vec<String> {
    let mut lines: Vec<String> = visible_lines(folder)
        .values()
        .flatten()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["record"].as_str().unwrap().to_string()
        })
        .collect();
    lines.sort();
    lines
}

fn all_ids() -> Vec<u64> {
    (0..(FILES * PER_FILE) as u64).collect()
}

fn all_malformed() -> Vec<String> {
    let mut v: Vec<String> = (0..FILES)
        .flat_map(|f| (0..PER_FILE).step_by(PER_FILE / MALFORMED).map(move |i| format!("not json {f}-{i}")))
        .collect();
    v.sort();
    v
}

/// Where the disk fills: the output the message names first, and its folder.
struct Failing<'a> {
    output: &'a str,
    folder: &'a Path,
}

/// Runs with the disk nearly full (`left` bytes free): exit 1 naming `failing`'s output and a
/// path in its folder; every visible row is whole and there once; then, with the space freed,
/// a restart completes the output exactly.
fn full_then_freed(disk: &SmallDisk, p: &Path, sink: &Path, dead_letter: &Path, failing: Failing<'_>, left: u64) {
    disk.fill(left);
    let out = eddy(p);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "a full disk is a failure while running: {err}");
    let named = format!("{}: ", failing.output);
    assert!(err.contains(&named), "the message names the output ({named:?}): {err}");
    let folder = failing.folder.display().to_string();
    assert!(err.contains(&folder), "the message names the path in {folder}: {err}");
    assert!(err.contains("No space left on device"), "{err}");
    let before = ids(sink);
    assert!(before.len() < FILES * PER_FILE, "the disk filled before the end: {} rows", before.len());
    assert!(before.windows(2).all(|w| w[0] < w[1]), "no row twice");

    disk.free();
    let out = eddy(p);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(ids(sink), all_ids(), "every id once after the restart");
    assert_eq!(dead(dead_letter), all_malformed(), "every malformed line once after the restart");
}

#[test]
fn a_full_disk_under_the_sink_fails_naming_the_file_and_a_restart_loses_nothing() {
    let Some(disk) = SmallDisk::mount("a_full_disk_under_the_sink") else { return };
    let tmp = tempfile::tempdir().unwrap();
    write_input(tmp.path());
    let sink = disk.path().join("rows");
    let (dead_letter, checkpoint) = (tmp.path().join("dead"), tmp.path().join("checkpoints"));
    let p = pipeline(tmp.path(), &sink, &dead_letter, &checkpoint);
    // Room for one batch's rows (~120 KB) and a half, not three.
    full_then_freed(&disk, &p, &sink, &dead_letter, Failing { output: "sink", folder: &sink }, 180_000);
}

#[test]
fn a_full_disk_under_the_dead_letters_fails_naming_the_file_and_a_restart_loses_nothing() {
    let Some(disk) = SmallDisk::mount("a_full_disk_under_the_dead_letters") else { return };
    let tmp = tempfile::tempdir().unwrap();
    write_input(tmp.path());
    let dead_letter = disk.path().join("dead");
    let (sink, checkpoint) = (tmp.path().join("rows"), tmp.path().join("checkpoints"));
    let p = pipeline(tmp.path(), &sink, &dead_letter, &checkpoint);
    let failing = Failing { output: "dead_letter", folder: &dead_letter };
    full_then_freed(&disk, &p, &sink, &dead_letter, failing, 0);
}

#[test]
fn a_full_disk_under_the_checkpoint_fails_naming_the_file_and_a_restart_loses_nothing() {
    let Some(disk) = SmallDisk::mount("a_full_disk_under_the_checkpoint") else { return };
    let tmp = tempfile::tempdir().unwrap();
    write_input(tmp.path());
    let checkpoint = disk.path().join("checkpoints");
    let (sink, dead_letter) = (tmp.path().join("rows"), tmp.path().join("dead"));
    let p = pipeline(tmp.path(), &sink, &dead_letter, &checkpoint);
    // The snapshot of 1,000 ids fits, not that of 2,000 with the first checkpoints kept.
    let failing = Failing { output: "checkpoint of epoch 1", folder: &checkpoint };
    full_then_freed(&disk, &p, &sink, &dead_letter, failing, 40_000);
}
