//! [`FilesSink`]: one JSON-lines file per committed micro-batch / epoch, renamed into place.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::{ConnectorError, Sink};

/// The temporary name of batch `batch_id`: hidden (leading `.`) until committed.
fn tmp_name(prefix: &str, batch_id: u64) -> String {
    format!(".{prefix}-{batch_id:06}.jsonl.tmp")
}

/// Write buffer per open batch (bytes).
const WRITE_BUFFER: usize = 64 * 1024;

/// Writes the rows of each batch / epoch `N` to `<prefix>-<N:06>.jsonl` in one folder (with the
/// default prefix `batch`: `batch-000000.jsonl`, `batch-000001.jsonl`, ...; more digits past
/// 999999), one JSON object per line.
///
/// Rows go first to the hidden temporary file `.<prefix>-<N:06>.jsonl.tmp` of the same folder;
/// [`Sink::commit`] flushes it, fsyncs it, renames it to its final name and fsyncs the folder, so
/// a reader (or the Spark file source, which hides names starting with `.`) sees a batch whole
/// or not at all. A batch with no row leaves no file. Several batches may be open at once (rows
/// of `N + 1` before `N` commits). Committing a batch whose file exists (a batch replayed after a
/// restart) replaces the file.
#[derive(Debug)]
pub struct FilesSink {
    folder: PathBuf,
    prefix: String,
    open: BTreeMap<u64, OpenBatch>,
    /// Batches flushed and fsynced under their temporary name ([`Sink::prepare`]), not renamed.
    prepared: BTreeMap<u64, PathBuf>,
}

#[derive(Debug)]
struct OpenBatch {
    tmp: PathBuf,
    writer: BufWriter<File>,
}

impl FilesSink {
    /// A sink into `folder` (created with its parents if missing) with file names
    /// `<prefix>-<N:06>.jsonl`.
    ///
    /// # Errors
    /// [`ConnectorError::Config`] when `prefix` is empty, hidden (starts with `.` or `_`) or
    /// holds a path separator; [`ConnectorError::Io`] naming the folder when it cannot be
    /// created (a file in the way, no permission) or a file cannot be created in it.
    pub fn new(folder: &Path, prefix: &str) -> Result<FilesSink, ConnectorError> {
        if prefix.is_empty() || super::is_hidden(prefix) || prefix.contains(['/', '\\']) {
            return Err(ConnectorError::Config(format!(
                "files sink {}: file prefix {prefix:?} must be non-empty, not start with '.' or '_', \
                 and hold no path separator",
                folder.display()
            )));
        }
        std::fs::create_dir_all(folder).map_err(|source| ConnectorError::Io {
            what: format!("creating the files sink folder {}", folder.display()),
            source,
        })?;
        // Probe that files can be created there now rather than at the first row.
        let probe = folder.join(format!(".{prefix}-probe-{}.tmp", std::process::id()));
        File::create(&probe).map_err(|source| ConnectorError::Io {
            what: format!("creating a file in the files sink folder {}", folder.display()),
            source,
        })?;
        std::fs::remove_file(&probe).map_err(|source| ConnectorError::Io {
            what: format!("removing the probe file {}", probe.display()),
            source,
        })?;
        Ok(FilesSink {
            folder: folder.to_path_buf(),
            prefix: prefix.to_string(),
            open: BTreeMap::new(),
            prepared: BTreeMap::new(),
        })
    }

    /// The final path of batch `batch_id`.
    pub fn batch_path(&self, batch_id: u64) -> PathBuf {
        self.folder.join(format!("{}-{batch_id:06}.jsonl", self.prefix))
    }

    /// Deletes the temporary files of this sink's prefix left in the folder by a run that
    /// stopped before committing them (call on restart, before writing). Temporary files of
    /// batches open in this sink are kept. Returns how many files were deleted.
    ///
    /// # Errors
    /// [`ConnectorError::Io`] naming the folder or file that cannot be listed or deleted.
    pub fn remove_uncommitted(&self) -> Result<usize, ConnectorError> {
        self.recover_leftovers(None)
    }

    /// Temporary files of this sink's prefix left by a stopped run, not open in this sink: those
    /// of batches `<= committed` are renamed into place (they were prepared, and their checkpoint
    /// is durable), the others deleted. Returns how many files were renamed or deleted.
    fn recover_leftovers(&self, committed: Option<u64>) -> Result<usize, ConnectorError> {
        let io = |source| ConnectorError::Io {
            what: format!("listing the files sink folder {}", self.folder.display()),
            source,
        };
        let start = format!(".{}-", self.prefix);
        let mut removed = 0;
        for entry in std::fs::read_dir(&self.folder).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(digits) = name.strip_prefix(&start).and_then(|r| r.strip_suffix(".jsonl.tmp")) else {
                continue;
            };
            if !digits.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let id = digits.parse::<u64>().ok();
            if id.is_some_and(|id| self.open.contains_key(&id) || self.prepared.contains_key(&id)) {
                continue;
            }
            let path = entry.path();
            match (id, committed) {
                (Some(id), Some(c)) if id <= c => {
                    let target = self.batch_path(id);
                    tracing::info!(file = %target.display(), "files sink: rolling forward a batch whose checkpoint committed");
                    std::fs::rename(&path, &target).map_err(|source| ConnectorError::Io {
                        what: format!("renaming {} to {}", path.display(), target.display()),
                        source,
                    })?;
                }
                _ => std::fs::remove_file(&path)
                    .map_err(|source| ConnectorError::Io { what: format!("removing {}", path.display()), source })?,
            }
            removed += 1;
        }
        if removed > 0 {
            sync_dir(&self.folder)?;
        }
        Ok(removed)
    }

    /// Batches with rows written but not committed, in increasing order.
    pub fn open_batches(&self) -> impl Iterator<Item = u64> + '_ {
        self.open.keys().copied()
    }
}

impl Sink for FilesSink {
    /// Appends `line` and a newline to batch `batch_id`'s temporary file (buffered). `key` is
    /// ignored (files have no key).
    ///
    /// # Errors
    /// [`ConnectorError::Io`] naming the temporary file when it cannot be created or written.
    fn write(&mut self, batch_id: u64, line: &str, _key: Option<&str>) -> Result<(), ConnectorError> {
        let batch = match self.open.entry(batch_id) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(v) => {
                let tmp = self.folder.join(tmp_name(&self.prefix, batch_id));
                let file = File::create(&tmp)
                    .map_err(|source| ConnectorError::Io { what: format!("creating {}", tmp.display()), source })?;
                v.insert(OpenBatch { tmp, writer: BufWriter::with_capacity(WRITE_BUFFER, file) })
            }
        };
        let io = |source| ConnectorError::Io { what: format!("writing {}", batch.tmp.display()), source };
        batch.writer.write_all(line.as_bytes()).map_err(io)?;
        batch.writer.write_all(b"\n").map_err(io)
    }

    /// Flushes, fsyncs (if [`Sink::prepare`] did not already) and renames batch `batch_id`'s
    /// file to its final name, then fsyncs the folder. Does nothing when the batch had no row.
    ///
    /// # Errors
    /// [`ConnectorError::Io`] naming the file when a step fails; the temporary file is then
    /// left in place (handled by [`Sink::recover`] on restart).
    fn commit(&mut self, batch_id: u64) -> Result<(), ConnectorError> {
        self.prepare(batch_id)?;
        let Some(tmp) = self.prepared.remove(&batch_id) else {
            return Ok(());
        };
        let target = self.batch_path(batch_id);
        std::fs::rename(&tmp, &target)
            .map_err(|source| ConnectorError::Io { what: format!("renaming to {}", target.display()), source })?;
        sync_dir(&self.folder)
    }

    /// Flushes and fsyncs batch `batch_id`'s temporary file, which keeps its hidden name until
    /// [`Sink::commit`]. Does nothing when the batch had no row or is already prepared.
    ///
    /// # Errors
    /// [`ConnectorError::Io`] naming the file when it cannot be flushed or synced.
    fn prepare(&mut self, batch_id: u64) -> Result<(), ConnectorError> {
        let Some(OpenBatch { tmp, writer }) = self.open.remove(&batch_id) else {
            return Ok(());
        };
        let io = |what: &str, path: &Path| {
            let what = format!("{what} {}", path.display());
            move |source| ConnectorError::Io { what, source }
        };
        let file = writer.into_inner().map_err(|e| io("flushing", &tmp)(e.into_error()))?;
        file.sync_all().map_err(io("syncing", &tmp))?;
        self.prepared.insert(batch_id, tmp);
        Ok(())
    }

    /// Temporary files left by a stopped run: batches `<= committed` are renamed into place,
    /// later ones deleted; with `None` every one is deleted (as
    /// [`FilesSink::remove_uncommitted`]).
    ///
    /// # Errors
    /// [`ConnectorError::Io`] naming the folder or file that cannot be listed, renamed or deleted.
    fn recover(&mut self, committed: Option<u64>) -> Result<usize, ConnectorError> {
        self.recover_leftovers(committed)
    }
}

/// Fsyncs a folder, so that renames and removals in it are durable.
fn sync_dir(folder: &Path) -> Result<(), ConnectorError> {
    File::open(folder)
        .and_then(|d| d.sync_all())
        .map_err(|source| ConnectorError::Io { what: format!("syncing folder {}", folder.display()), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn a_committed_batch_is_one_file_with_one_line_per_row() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut sink = FilesSink::new(&out, "batch").unwrap();
        sink.write(0, "{\"a\":1}", None).unwrap();
        sink.write(0, "{\"a\":2}", Some("k")).unwrap();
        assert_eq!(names(&out), vec![".batch-000000.jsonl.tmp"], "visible before commit");
        sink.commit(0).unwrap();
        assert_eq!(names(&out), vec!["batch-000000.jsonl"]);
        assert_eq!(std::fs::read_to_string(out.join("batch-000000.jsonl")).unwrap(), "{\"a\":1}\n{\"a\":2}\n");
    }

    #[test]
    fn an_empty_batch_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = FilesSink::new(dir.path(), "batch").unwrap();
        sink.commit(0).unwrap();
        sink.write(1, "{}", None).unwrap();
        sink.commit(1).unwrap();
        sink.commit(2).unwrap();
        assert_eq!(names(dir.path()), vec!["batch-000001.jsonl"]);
    }

    #[test]
    fn several_batches_may_be_open_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = FilesSink::new(dir.path(), "batch").unwrap();
        sink.write(3, "a3", None).unwrap();
        sink.write(4, "a4", None).unwrap();
        sink.write(3, "b3", None).unwrap();
        assert_eq!(sink.open_batches().collect::<Vec<_>>(), vec![3, 4]);
        sink.commit(3).unwrap();
        assert_eq!(names(dir.path()), vec![".batch-000004.jsonl.tmp", "batch-000003.jsonl"]);
        sink.write(4, "b4", None).unwrap();
        sink.commit(4).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("batch-000003.jsonl")).unwrap(), "a3\nb3\n");
        assert_eq!(std::fs::read_to_string(dir.path().join("batch-000004.jsonl")).unwrap(), "a4\nb4\n");
    }

    #[test]
    fn batch_ids_past_six_digits_get_more_digits() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = FilesSink::new(dir.path(), "batch").unwrap();
        sink.write(1_234_567, "x", None).unwrap();
        sink.commit(1_234_567).unwrap();
        assert_eq!(names(dir.path()), vec!["batch-1234567.jsonl"]);
    }

    #[test]
    fn a_replayed_batch_replaces_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = FilesSink::new(dir.path(), "batch").unwrap();
        sink.write(0, "old", None).unwrap();
        sink.commit(0).unwrap();
        sink.write(0, "new", None).unwrap();
        sink.commit(0).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("batch-000000.jsonl")).unwrap(), "new\n");
    }

    #[test]
    fn remove_uncommitted_deletes_leftover_temporary_files_of_its_prefix_only() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut crashed = FilesSink::new(dir.path(), "batch").unwrap();
            crashed.write(7, "lost", None).unwrap();
            crashed.write(8, "lost", None).unwrap();
            // Dropped without commit: a crash.
        }
        std::fs::write(dir.path().join(".other-000001.jsonl.tmp"), "x").unwrap();
        std::fs::write(dir.path().join("batch-000006.jsonl"), "kept\n").unwrap();
        let mut sink = FilesSink::new(dir.path(), "batch").unwrap();
        sink.write(9, "open", None).unwrap();
        assert_eq!(sink.remove_uncommitted().unwrap(), 2);
        assert_eq!(names(dir.path()), vec![".batch-000009.jsonl.tmp", ".other-000001.jsonl.tmp", "batch-000006.jsonl"]);
        sink.commit(9).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("batch-000009.jsonl")).unwrap(), "open\n");
    }

    #[test]
    fn a_prepared_batch_stays_hidden_until_commit() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = FilesSink::new(dir.path(), "batch").unwrap();
        sink.write(0, "x", None).unwrap();
        sink.prepare(0).unwrap();
        sink.prepare(0).unwrap();
        assert_eq!(names(dir.path()), vec![".batch-000000.jsonl.tmp"]);
        sink.commit(0).unwrap();
        assert_eq!(names(dir.path()), vec!["batch-000000.jsonl"]);
    }

    #[test]
    fn recover_rolls_committed_batches_forward_and_discards_later_ones() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut crashed = FilesSink::new(dir.path(), "batch").unwrap();
            for id in 3..6 {
                crashed.write(id, &format!("row{id}"), None).unwrap();
                crashed.prepare(id).unwrap();
            }
            crashed.write(6, "half", None).unwrap();
            // Dropped: a crash after the checkpoint of batch 4, before its rename.
        }
        let mut sink = FilesSink::new(dir.path(), "batch").unwrap();
        assert_eq!(sink.recover(Some(4)).unwrap(), 4);
        assert_eq!(names(dir.path()), vec!["batch-000003.jsonl", "batch-000004.jsonl"]);
        assert_eq!(std::fs::read_to_string(dir.path().join("batch-000004.jsonl")).unwrap(), "row4\n");
        assert_eq!(sink.recover(None).unwrap(), 0);
    }

    #[test]
    fn a_file_in_the_way_of_the_folder_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let blocked = dir.path().join("blocked");
        std::fs::write(&blocked, "a file").unwrap();
        let err = FilesSink::new(&blocked, "batch").unwrap_err();
        assert!(err.to_string().contains("blocked"), "{err}");
        let nested = blocked.join("deeper");
        let err = FilesSink::new(&nested, "batch").unwrap_err();
        assert!(err.to_string().contains("deeper"), "{err}");
    }

    /// A full disk, for real: the batch's temporary name is a link to `/dev/full`, whose writes
    /// fail with `ENOSPC` (Linux), so this runs without mounting a small file system.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_disk_fails_naming_the_file_shows_nothing_and_a_restart_writes_the_batch_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = FilesSink::new(dir.path(), "batch").unwrap();
        let tmp = dir.path().join(".batch-000000.jsonl.tmp");
        std::os::unix::fs::symlink("/dev/full", &tmp).unwrap();
        let line = format!("{{\"pad\": \"{}\"}}", "p".repeat(1000));
        // 200 lines of 1 KB: more than the write buffer, so writes reach the file.
        let failed = (0..200).map(|_| sink.write(0, &line, None)).find_map(Result::err);
        let e = failed.or_else(|| sink.commit(0).err()).expect("a write to a full disk fails");
        assert!(
            matches!(&e, ConnectorError::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull),
            "{e}"
        );
        assert!(e.to_string().contains(&tmp.display().to_string()), "{e}");
        assert_eq!(names(dir.path()), vec![".batch-000000.jsonl.tmp"], "nothing visible");
        drop(sink);

        // Space freed (the link gone), a restart: the leftover is cleared, the batch written whole.
        std::fs::remove_file(&tmp).unwrap();
        let mut sink = FilesSink::new(dir.path(), "batch").unwrap();
        sink.recover(None).unwrap();
        for _ in 0..200 {
            sink.write(0, &line, None).unwrap();
        }
        sink.commit(0).unwrap();
        assert_eq!(names(dir.path()), vec!["batch-000000.jsonl"]);
        let text = std::fs::read_to_string(dir.path().join("batch-000000.jsonl")).unwrap();
        assert_eq!(text, format!("{line}\n").repeat(200));
    }

    #[test]
    fn a_bad_prefix_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["", ".x", "_x", "a/b"] {
            assert!(matches!(FilesSink::new(dir.path(), bad), Err(ConnectorError::Config(_))), "{bad:?}");
        }
    }

    #[test]
    fn the_source_reads_what_the_sink_committed_and_ignores_what_it_did_not() {
        use crate::{Payload, Poll, Source};
        let dir = tempfile::tempdir().unwrap();
        let mut sink = FilesSink::new(dir.path(), "batch").unwrap();
        sink.write(0, "{\"n\":0}", None).unwrap();
        sink.commit(0).unwrap();
        sink.write(1, "{\"n\":1}", None).unwrap();
        let mut source = crate::FilesSource::new(dir.path(), 10, false, false).unwrap();
        let mut out = Vec::new();
        assert_eq!(source.poll(&mut out, 10, std::time::Duration::ZERO).unwrap(), Poll::BatchBoundary);
        crate::SourceItem::split_lines(&mut out, 0);
        let lines: Vec<&[u8]> = out
            .iter()
            .map(|i| match &i.payload {
                Payload::Raw(b) => b.as_slice(),
                Payload::Line(l) => l.bytes(),
                Payload::Lines(_) | Payload::Record(_) | Payload::Header(_) | Payload::Rejected(_) => &[],
            })
            .collect();
        assert_eq!(lines, vec![b"{\"n\":0}".as_slice()]);
    }
}
