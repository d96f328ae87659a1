//! Where checkpoint files live: [`CheckpointStore`], a flat namespace of immutable, named blobs
//! (what a folder and object storage both offer), and [`FolderStore`], its local-folder form.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::CheckpointError;

/// A flat store of named, immutable blobs, one store per pipeline. Names are ASCII without `/`.
///
/// Object storage can back it (the `s3` feature's `object::ObjectCheckpointStore`): a blob is
/// one object, uploaded by [`BlobWriter::commit`] in one PUT or a multipart upload (atomic
/// either way), `list` a listing of one level under the store's prefix.
pub trait CheckpointStore: Send + Sync + std::fmt::Debug {
    /// Starts writing blob `name`, front to back in chunks; nothing is visible under `name`
    /// until [`BlobWriter::commit`], which replaces an existing blob durably and atomically (after
    /// a crash, `name` holds either its previous content or all of the new one). A writer
    /// dropped without `commit` leaves `name` as it was.
    ///
    /// # Errors
    /// [`CheckpointError::Io`] naming the blob.
    fn create(&self, name: &str) -> Result<Box<dyn BlobWriter>, CheckpointError>;

    /// Stores `parts` (concatenated) under `name`, as [`CheckpointStore::create`] then one
    /// [`BlobWriter::write`] per part and [`BlobWriter::commit`].
    ///
    /// # Errors
    /// [`CheckpointError::Io`] naming the blob.
    fn put(&self, name: &str, parts: &[&[u8]]) -> Result<(), CheckpointError> {
        let mut w = self.create(name)?;
        for p in parts {
            w.write(p)?;
        }
        w.commit()
    }

    /// The blob `name`.
    ///
    /// # Errors
    /// [`CheckpointError::Missing`] when there is no such blob; [`CheckpointError::Io`] when it
    /// cannot be read.
    fn get(&self, name: &str) -> Result<Vec<u8>, CheckpointError>;

    /// Every blob name, in no particular order.
    ///
    /// # Errors
    /// [`CheckpointError::Io`] when the store cannot be listed.
    fn list(&self) -> Result<Vec<String>, CheckpointError>;

    /// Stores `bytes` under `name` only if no blob has that name yet, atomically: of two
    /// processes racing to create `name`, exactly one succeeds. Returns whether this call
    /// created it (`false`: the blob existed, and is left as it was). Used for the blobs that
    /// several processes sharing one pipeline's store agree on first come, first served (the
    /// query's fingerprint, issue 26).
    ///
    /// # Errors
    /// [`CheckpointError::Io`] naming the blob.
    fn put_if_absent(&self, name: &str, bytes: &[u8]) -> Result<bool, CheckpointError>;

    /// Deletes `name` (nothing when absent).
    ///
    /// # Errors
    /// [`CheckpointError::Io`] naming the blob.
    fn delete(&self, name: &str) -> Result<(), CheckpointError>;

    /// Where the store is, for messages (a folder path, a URL).
    fn location(&self) -> String;
}

/// Opens the store at `location` (`<checkpoint.path>/<pipeline>[/<sub-folder>]`):
/// - `s3://bucket/prefix...`: a prefix in S3-compatible object storage (the `s3` feature's
///   `ObjectCheckpointStore`), configured by the `AWS_*` environment variables, giving up on an
///   unreachable store after `EDDY_CHECKPOINT_UNREACHABLE_TIMEOUT_MS` (default 30 s). Object
///   storage has no lock: `exclusive` is not enforced there, so the caller must make sure no
///   two processes write one store (issue 26's group protocol gives each partition's sub-store
///   to one process);
/// - another URL (`scheme://...`): refused;
/// - otherwise a local folder, locked for this process when `exclusive` ([`FolderStore::open`]),
///   shared otherwise ([`FolderStore::open_shared`]).
///
/// # Errors
/// [`CheckpointError::BadLocation`] for an unsupported URL, an `s3://` URL in a build without the
/// `s3` feature, or one that cannot be configured; as [`FolderStore::open`] /
/// [`FolderStore::open_shared`] for a folder.
pub fn open_store(location: &Path, exclusive: bool) -> Result<std::sync::Arc<dyn CheckpointStore>, CheckpointError> {
    if let Some((url, scheme)) = url_of(location) {
        return open_url(&url, &scheme);
    }
    Ok(match exclusive {
        true => std::sync::Arc::new(FolderStore::open(location)?),
        false => std::sync::Arc::new(FolderStore::open_shared(location)?),
    })
}

/// Checks that [`open_store`] can open a store at `location` without opening it: nothing is
/// created or requested, so a run can refuse a location it cannot use before it starts anything
/// (a folder always passes here; its errors show when it is opened).
///
/// # Errors
/// As [`open_store`] for a URL: [`CheckpointError::BadLocation`].
pub fn check_location(location: &Path) -> Result<(), CheckpointError> {
    match url_of(location) {
        Some((url, scheme)) => open_url(&url, &scheme).map(drop),
        None => Ok(()),
    }
}

/// `location` as a URL and its scheme, when it is one (`scheme://...`, a scheme of ASCII letters,
/// digits, `+`, `-`, `.`).
fn url_of(location: &Path) -> Option<(String, String)> {
    let text = location.to_str()?;
    let (scheme, _) = text.split_once("://")?;
    let is_scheme =
        !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    is_scheme.then(|| (text.to_string(), scheme.to_string()))
}

/// The store at the URL `url` (of scheme `scheme`), as [`open_store`].
fn open_url(url: &str, scheme: &str) -> Result<std::sync::Arc<dyn CheckpointStore>, CheckpointError> {
    if scheme != "s3" {
        return Err(CheckpointError::BadLocation {
            location: url.to_string(),
            why: format!("{scheme}:// is not supported; expected a folder path or s3://bucket/prefix"),
        });
    }
    #[cfg(feature = "s3")]
    {
        let options = super::object::ObjectStoreOptions::from_env(url)?;
        Ok(std::sync::Arc::new(super::object::ObjectCheckpointStore::open_s3(url, options)?))
    }
    #[cfg(not(feature = "s3"))]
    Err(CheckpointError::BadLocation {
        location: url.to_string(),
        why: "checkpoints in object storage need the s3 feature, and this eddy was built without the s3 feature; \
              build with --features s3"
            .into(),
    })
}

/// A blob being written ([`CheckpointStore::create`]).
pub trait BlobWriter: Send {
    /// Appends `chunk`.
    ///
    /// # Errors
    /// [`CheckpointError::Io`] naming the blob.
    fn write(&mut self, chunk: &[u8]) -> Result<(), CheckpointError>;

    /// Makes the blob durable and visible under its name, atomically.
    ///
    /// # Errors
    /// [`CheckpointError::Io`] naming the blob (it is then not visible, or still the old one).
    fn commit(self: Box<Self>) -> Result<(), CheckpointError>;
}

/// A [`CheckpointStore`] in a local folder: [`CheckpointStore::create`] writes `.<name>.tmp`, fsyncs it, renames it to
/// `<name>` and fsyncs the folder, so a crash leaves the old blob or the new one, never half.
/// Hidden names (leading `.`) are not listed; leftovers of interrupted `put`s are removed when
/// the store is opened. The store holds an exclusive lock on `<folder>/.lock` while it is open,
/// so two processes never write one pipeline's checkpoints (the lock dies with the process).
#[derive(Debug)]
pub struct FolderStore {
    folder: PathBuf,
    /// Holds the lock (`None`: a shared store, [`FolderStore::open_shared`]).
    _lock: Option<File>,
}

impl FolderStore {
    /// Opens (creating it and its parents when missing) the store in `folder`, locks it, and
    /// removes the temporary files of interrupted writes.
    ///
    /// # Errors
    /// [`CheckpointError::Locked`] when another process holds the folder;
    /// [`CheckpointError::Io`] naming the folder when it cannot be created, locked or listed.
    pub fn open(folder: &Path) -> Result<FolderStore, CheckpointError> {
        std::fs::create_dir_all(folder)
            .map_err(|e| io(format!("creating the checkpoint folder {}", folder.display()), e))?;
        let lock_path = folder.join(".lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| io(format!("opening {}", lock_path.display()), e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(CheckpointError::Locked { folder: folder.display().to_string() });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(format!("locking {}", lock_path.display()), e)),
        }
        let store = FolderStore { folder: folder.to_path_buf(), _lock: Some(lock) };
        store.remove_leftovers()?;
        Ok(store)
    }

    /// Opens (creating it when missing) the store in `folder` without locking it: for a folder
    /// that several processes share, each writing only blobs of its own or creating blobs with
    /// [`CheckpointStore::put_if_absent`] (the group-level blobs of several instances, issue
    /// 26). Leftover temporaries are not removed (another process may be writing them).
    ///
    /// # Errors
    /// [`CheckpointError::Io`] naming the folder when it cannot be created.
    pub fn open_shared(folder: &Path) -> Result<FolderStore, CheckpointError> {
        std::fs::create_dir_all(folder)
            .map_err(|e| io(format!("creating the checkpoint folder {}", folder.display()), e))?;
        Ok(FolderStore { folder: folder.to_path_buf(), _lock: None })
    }

    /// Removes the temporary files of interrupted writes (a locked store's own).
    fn remove_leftovers(&self) -> Result<(), CheckpointError> {
        let folder = &self.folder;
        for entry in std::fs::read_dir(folder).map_err(|e| io(format!("listing {}", folder.display()), e))?.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.ends_with(".tmp") {
                std::fs::remove_file(entry.path())
                    .map_err(|e| io(format!("removing the leftover {}", entry.path().display()), e))?;
            }
        }
        Ok(())
    }

    /// The folder.
    pub fn folder(&self) -> &Path {
        &self.folder
    }
}

fn sync_folder(folder: &Path) -> Result<(), CheckpointError> {
    File::open(folder)
        .and_then(|d| d.sync_all())
        .map_err(|e| io(format!("syncing the checkpoint folder {}", folder.display()), e))
}

/// A blob of a [`FolderStore`] being written: `.<name>.tmp`, renamed into place by `commit`.
struct FolderBlob {
    /// `None` once committed.
    file: Option<File>,
    tmp: PathBuf,
    target: PathBuf,
    folder: PathBuf,
}

impl BlobWriter for FolderBlob {
    fn write(&mut self, chunk: &[u8]) -> Result<(), CheckpointError> {
        match self.file.as_mut() {
            Some(f) => f.write_all(chunk).map_err(|e| io(format!("writing {}", self.tmp.display()), e)),
            None => Err(io(format!("writing {}", self.tmp.display()), std::io::ErrorKind::Other.into())),
        }
    }

    fn commit(mut self: Box<Self>) -> Result<(), CheckpointError> {
        let Some(f) = self.file.take() else {
            return Err(io(format!("committing {}", self.tmp.display()), std::io::ErrorKind::Other.into()));
        };
        f.sync_all().map_err(|e| io(format!("syncing {}", self.tmp.display()), e))?;
        drop(f);
        std::fs::rename(&self.tmp, &self.target)
            .map_err(|e| io(format!("renaming {} into place", self.target.display()), e))?;
        sync_folder(&self.folder)
    }
}

impl Drop for FolderBlob {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            // Abandoned before commit: the temporary file is not a blob. Should removing it fail,
            // the next `FolderStore::open` removes it.
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

fn io(what: String, source: std::io::Error) -> CheckpointError {
    CheckpointError::Io { what, source }
}

impl CheckpointStore for FolderStore {
    fn create(&self, name: &str) -> Result<Box<dyn BlobWriter>, CheckpointError> {
        let tmp = self.folder.join(format!(".{name}.tmp"));
        let file = File::create(&tmp).map_err(|e| io(format!("creating {}", tmp.display()), e))?;
        Ok(Box::new(FolderBlob { file: Some(file), tmp, target: self.folder.join(name), folder: self.folder.clone() }))
    }

    fn get(&self, name: &str) -> Result<Vec<u8>, CheckpointError> {
        let path = self.folder.join(name);
        std::fs::read(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                CheckpointError::Missing { name: path.display().to_string() }
            } else {
                io(format!("reading {}", path.display()), e)
            }
        })
    }

    fn list(&self) -> Result<Vec<String>, CheckpointError> {
        let rd = std::fs::read_dir(&self.folder).map_err(|e| io(format!("listing {}", self.folder.display()), e))?;
        let mut names = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|e| io(format!("listing {}", self.folder.display()), e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with('.') {
                names.push(name);
            }
        }
        Ok(names)
    }

    /// Writes a uniquely named temporary, then hard-links it to `name`: the link fails when
    /// `name` exists, so of racing processes exactly one creates it.
    fn put_if_absent(&self, name: &str, bytes: &[u8]) -> Result<bool, CheckpointError> {
        let target = self.folder.join(name);
        let tmp = self.folder.join(format!(".{name}.{}.{}.tmp", std::process::id(), uuid::Uuid::new_v4().simple()));
        let written = File::create(&tmp).and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(io(format!("writing {}", tmp.display()), e));
        }
        let linked = std::fs::hard_link(&tmp, &target);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => sync_folder(&self.folder).map(|()| true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(io(format!("creating {}", target.display()), e)),
        }
    }

    fn delete(&self, name: &str) -> Result<(), CheckpointError> {
        let path = self.folder.join(name);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io(format!("removing {}", path.display()), e)),
        }
    }

    fn location(&self) -> String {
        self.folder.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_list_delete_round_trip_and_hide_temporaries() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".manifest-1.tmp"), "half").unwrap();
        let s = FolderStore::open(dir.path()).unwrap();
        assert!(!dir.path().join(".manifest-1.tmp").exists(), "leftover removed at open");
        s.put("a", &[b"he", b"llo"]).unwrap();
        s.put("a", &[b"again"]).unwrap();
        assert_eq!(s.get("a").unwrap(), b"again");
        assert_eq!(s.list().unwrap(), vec!["a".to_string()]);
        let mut w = s.create("b").unwrap();
        w.write(b"half").unwrap();
        drop(w);
        assert!(matches!(s.get("b"), Err(CheckpointError::Missing { .. })), "abandoned blob is not visible");
        assert!(!dir.path().join(".b.tmp").exists(), "abandoned blob's temporary removed");
        let mut w = s.create("a").unwrap();
        w.write(b"in ").unwrap();
        w.write(b"chunks").unwrap();
        assert_eq!(s.get("a").unwrap(), b"again", "not visible before commit");
        w.commit().unwrap();
        assert_eq!(s.get("a").unwrap(), b"in chunks");
        s.delete("a").unwrap();
        s.delete("a").unwrap();
        assert!(matches!(s.get("a"), Err(CheckpointError::Missing { .. })));
    }

    #[test]
    fn put_if_absent_creates_once_and_leaves_the_first_content() {
        let dir = tempfile::tempdir().unwrap();
        let a = FolderStore::open_shared(dir.path()).unwrap();
        let b = FolderStore::open_shared(dir.path()).unwrap();
        assert!(a.put_if_absent("fingerprint", b"one").unwrap());
        assert!(!b.put_if_absent("fingerprint", b"two").unwrap());
        assert_eq!(b.get("fingerprint").unwrap(), b"one");
        assert_eq!(a.list().unwrap(), vec!["fingerprint".to_string()], "no temporary left visible");
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1, "temporaries removed");
    }

    #[test]
    fn a_folder_is_held_by_one_store_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let first = FolderStore::open(dir.path()).unwrap();
        let err = FolderStore::open(dir.path()).unwrap_err();
        assert!(matches!(err, CheckpointError::Locked { .. }), "{err}");
        drop(first);
        FolderStore::open(dir.path()).unwrap();
    }
}
