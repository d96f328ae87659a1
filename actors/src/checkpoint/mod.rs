//! Checkpoints: per epoch (real-time) or micro-batch, one snapshot of each partition actor's
//! operator state and a manifest, so a restarted pipeline resumes where the last complete
//! checkpoint left off (SEMANTICS.md "Determinism and restarts").
//!
//! - **Store** ([`store`]): a flat namespace of immutable blobs per pipeline
//!   (`<checkpoint.path>/<name>/`): a folder ([`FolderStore`]) or, with the `s3` feature, a
//!   prefix in S3-compatible object storage (`object::ObjectCheckpointStore`,
//!   `s3://bucket/prefix`).
//!   Per epoch `e`: `snapshot-<e>-<partition>` (one per partition actor), then
//!   `manifest-<e>`, written last, durably and atomically (fsync, rename, fsync of the folder):
//!   a crash leaves the old checkpoint or the new one, never half of one.
//! - **Files** ([`envelope`]): a versioned header, the payload, a trailer with its CRC-32,
//!   streamed in chunks; a manifest's payload is an `rkyv` archive ([`manifest::Manifest`]), a
//!   snapshot's the operator's bytes behind a short prefix ([`manifest::SnapshotFile`]).
//! - **Barrier protocol** (the coordinator drives it): partition actors snapshot when the barrier
//!   (real-time) or the end of the batch (micro-batch) arrives: the operator notes the cut, its
//!   state is written in short steps between records ([`pacer`]), and a writer thread
//!   ([`writer`]) stores the finished snapshot off the actor's thread; the source reports its offset and
//!   clock at the same point; the sinks prepare (files: fsync under the hidden name); when every
//!   part is in, the coordinator writes the manifest and only then tells the sinks to commit
//!   (files: rename into place). A restart rolls a prepared batch forward when its manifest
//!   exists, and discards it otherwise: the files sink is exactly-once.
//! - **Restore** ([`restore()`]): the newest checkpoint whose manifest and snapshots are whole
//!   (a corrupt or partial one is skipped with a warning); refused when the query changed
//!   ([`manifest::fingerprint`]); re-split by key range when `parallelism` changed.
//! - **Retention**: the newest `keep` checkpoints (`[checkpoint] keep`, default 3) are kept.

pub mod envelope;
pub mod manifest;
#[cfg(feature = "s3")]
pub mod object;
#[cfg(all(test, feature = "s3"))]
mod object_tests;
pub mod pacer;
pub mod partitioned;
pub mod pipeline_fields;
pub mod restore;
pub mod store;
pub mod writer;

use std::sync::Arc;

use rkyv::rancor;
use rkyv::util::AlignedVec;

use envelope::Kind;
pub use manifest::{DriverState, FingerprintField, Manifest, SavedOffset, SavedSource, SnapshotFile, SnapshotMeta};
pub use pacer::SnapshotPacer;
pub use restore::{Restored, restore};
pub use store::{BlobWriter, CheckpointStore, FolderStore};
pub use writer::SnapshotWriter;

/// The blob holding the checkpoint's application id ([`Checkpointer::application_id`]).
const APPLICATION_ID: &str = "application-id";

/// Errors of checkpoints.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The store failed (I/O).
    #[error("{what}: {source}")]
    Io {
        /// What was being done, with the path.
        what: String,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// The store's location cannot be used: an unsupported URL, an `s3://` URL in a build
    /// without the `s3` feature, or object-store settings that do not parse (exit 2, at
    /// `checkpoint.path`).
    #[error("{location}: {why}")]
    BadLocation {
        /// The location (`<checkpoint.path>/<pipeline>[/<sub>]`).
        location: String,
        /// What is wrong, and what is expected.
        why: String,
    },
    /// The object store stayed unreachable (or kept failing) past its bound (exit 1).
    #[error(
        "the checkpoint store {location} is unreachable: {what} failed {attempts} times over {waited_ms} ms \
         (last error: {why}); check the endpoint and the network, or set EDDY_CHECKPOINT_UNREACHABLE_TIMEOUT_MS \
         to wait longer"
    )]
    Unreachable {
        /// The store's URL.
        location: String,
        /// The operation and its object's URL.
        what: String,
        /// Attempts made.
        attempts: u32,
        /// Milliseconds from the first failed attempt to giving up.
        waited_ms: u64,
        /// The last attempt's error.
        why: String,
    },
    /// Another process holds the checkpoint folder.
    #[error("the checkpoint folder {folder} is in use by another process (another eddy running this pipeline?)")]
    Locked {
        /// The folder.
        folder: String,
    },
    /// A blob that should exist does not.
    #[error("{name} is missing")]
    Missing {
        /// The blob (path).
        name: String,
    },
    /// A checkpoint file is damaged or not what it should be.
    #[error("{name} is corrupt: {why}")]
    Corrupt {
        /// The file.
        name: String,
        /// What is wrong.
        why: String,
    },
    /// The operator refused a snapshot.
    #[error("{name} cannot be restored: {why}")]
    Restore {
        /// The snapshot file.
        name: String,
        /// The operator's error.
        why: String,
    },
    /// The pipeline changed in a way the checkpoint's state cannot follow (exit 2).
    #[error(
        "the checkpoint in {location} (epoch {epoch}) was written by a different query; changed: {}. \
         Restore the old pipeline, or point checkpoint.path elsewhere (or delete the folder) to start over",
        changes.join("; ")
    )]
    Incompatible {
        /// The store.
        location: String,
        /// The checkpoint's epoch.
        epoch: u64,
        /// One line per changed field.
        changes: Vec<String>,
    },
    /// Checkpoints exist but none can be restored (exit 1: nothing is restored rather than
    /// something wrong).
    #[error(
        "no usable checkpoint in {location}: {}. Move the folder away to start over from the beginning of the input",
        reasons.join("; ")
    )]
    NoUsable {
        /// The store.
        location: String,
        /// Why each was refused.
        reasons: Vec<String>,
    },
    /// Serialising failed (a bug).
    #[error("serialising {what}: {why}")]
    Encode {
        /// What.
        what: String,
        /// Why.
        why: String,
    },
}

/// The name of epoch `epoch`'s manifest.
pub fn manifest_name(epoch: u64) -> String {
    format!("manifest-{epoch:020}")
}

/// The name of partition actor `partition`'s snapshot at epoch `epoch`.
pub fn snapshot_name(epoch: u64, partition: u32) -> String {
    format!("snapshot-{epoch:020}-{partition:05}")
}

/// The epoch of a manifest name.
fn manifest_epoch(name: &str) -> Option<u64> {
    name.strip_prefix("manifest-").and_then(|d| d.parse().ok())
}

/// The epoch of a snapshot name.
fn snapshot_epoch(name: &str) -> Option<u64> {
    name.strip_prefix("snapshot-").and_then(|r| r.split('-').next()).and_then(|d| d.parse().ok())
}

/// A pipeline's checkpoints: writes snapshots and manifests, keeps the newest `keep`, and loads
/// them back (see the module documentation).
#[derive(Debug, Clone)]
pub struct Checkpointer {
    store: Arc<dyn CheckpointStore>,
    pipeline: String,
    fingerprint: Vec<FingerprintField>,
    keep: usize,
    /// A shared group's run ([`partitioned`]): partition actor `i`'s snapshots and a manifest of
    /// its own go to the checkpoints of the input partition it holds, `partitions[i]`.
    partitions: Option<Arc<[partitioned::PartitionCheckpoint]>>,
}

impl Checkpointer {
    /// Checkpoints of pipeline `pipeline` (with this [`manifest::fingerprint`]) in `store`,
    /// keeping the newest `keep` (at least 1).
    pub fn new(
        store: Arc<dyn CheckpointStore>,
        pipeline: &str,
        fingerprint: Vec<FingerprintField>,
        keep: usize,
    ) -> Checkpointer {
        Checkpointer { store, pipeline: pipeline.to_string(), fingerprint, keep: keep.max(1), partitions: None }
    }

    /// The store.
    pub fn store(&self) -> &dyn CheckpointStore {
        self.store.as_ref()
    }

    /// The pipeline's fingerprint.
    pub fn fingerprint(&self) -> &[FingerprintField] {
        &self.fingerprint
    }

    /// The pipeline's name.
    pub fn pipeline(&self) -> &str {
        &self.pipeline
    }

    /// Stores partition actor `partition`'s state at epoch `epoch` (of `parallelism` actors);
    /// returns what the manifest lists of it. The file ([`SnapshotFile`]'s version-2 layout) is
    /// streamed to the store in [`CHUNK`]-byte chunks, each hashed just before it is written: the
    /// state bytes are read twice (hash, copy into the store) and never copied in memory.
    ///
    /// # Errors
    /// [`CheckpointError::Io`] when the store fails.
    pub fn write_snapshot(
        &self,
        epoch: u64,
        partition: u32,
        parallelism: u32,
        state: &[u8],
    ) -> Result<SnapshotMeta, CheckpointError> {
        if let Some(parts) = &self.partitions {
            return partitioned::write_snapshot(parts, epoch, partition, state);
        }
        let prefix = SnapshotFile::prefix(epoch, partition, parallelism);
        let (bytes, crc32) = self.write_file(&snapshot_name(epoch, partition), Kind::Snapshot, &[&prefix, state])?;
        Ok(SnapshotMeta { partition, bytes, crc32 })
    }

    /// Streams a file of `kind` with `payload` (the concatenation of its parts) to blob `name`
    /// ([`envelope`]); returns its length and the CRC-32 of the whole file.
    fn write_file(&self, name: &str, kind: Kind, payload: &[&[u8]]) -> Result<(u64, u32), CheckpointError> {
        let len: u64 = payload.iter().map(|p| p.len() as u64).sum();
        let header = envelope::header(kind, len);
        let mut w = self.store.create(name)?;
        w.write(&header)?;
        let mut payload_crc = crc32fast::Hasher::new();
        for part in payload {
            for chunk in part.chunks(CHUNK) {
                payload_crc.update(chunk);
                w.write(chunk)?;
            }
        }
        let trailer = envelope::trailer(payload_crc.clone().finalize());
        w.write(&trailer)?;
        w.commit()?;
        let mut whole = crc32fast::Hasher::new();
        whole.update(&header);
        whole.combine(&payload_crc);
        whole.update(&trailer);
        Ok(((header.len() + trailer.len()) as u64 + len, whole.finalize()))
    }

    /// Writes `manifest` (its snapshots are stored), which makes its checkpoint complete, then
    /// deletes checkpoints beyond the newest `keep` and snapshots no kept manifest lists.
    ///
    /// # Errors
    /// [`CheckpointError::Io`] when the store fails (the checkpoint is then not complete unless
    /// the manifest itself was stored).
    pub fn commit(&self, manifest: &Manifest) -> Result<(), CheckpointError> {
        if let Some(parts) = &self.partitions {
            return partitioned::commit(parts, manifest);
        }
        let payload = rkyv::to_bytes::<rancor::Error>(manifest)
            .map_err(|e| CheckpointError::Encode { what: manifest_name(manifest.epoch), why: e.to_string() })?;
        self.write_file(&manifest_name(manifest.epoch), Kind::Manifest, &[&payload])?;
        self.prune(manifest.epoch)
    }

    /// Keeps the newest `keep` manifests up to `newest`, and the snapshots they list; snapshots
    /// of later epochs (being written) are left alone.
    fn prune(&self, newest: u64) -> Result<(), CheckpointError> {
        let names = self.store.list()?;
        let mut manifests: Vec<u64> = names.iter().filter_map(|n| manifest_epoch(n)).filter(|&e| e <= newest).collect();
        manifests.sort_unstable();
        let kept_from = manifests.len().saturating_sub(self.keep);
        for &e in &manifests[..kept_from] {
            self.store.delete(&manifest_name(e))?;
        }
        let kept = &manifests[kept_from..];
        for n in &names {
            if let Some(e) = snapshot_epoch(n)
                && e <= newest
                && !kept.contains(&e)
            {
                self.store.delete(n)?;
            }
        }
        Ok(())
    }

    /// The checkpoint's application id: a UUID created with the checkpoint (the first call
    /// stores it in the blob `application-id`) and read back by every later run, so that a sink
    /// marking its commits with it (Delta's `txn`, PIPELINE.md "Delta Lake sink") recognises the
    /// batches a crashed run committed; a new checkpoint folder gets a new id.
    ///
    /// # Errors
    /// [`CheckpointError::Io`] when the store fails; [`CheckpointError::Corrupt`] when the blob
    /// holds no UUID.
    pub fn application_id(&self) -> Result<String, CheckpointError> {
        match self.store.get(APPLICATION_ID) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                uuid::Uuid::parse_str(text.trim()).map(|id| id.to_string()).map_err(|e| CheckpointError::Corrupt {
                    name: format!("{}/{APPLICATION_ID}", self.store.location()),
                    why: format!("not a UUID: {e}"),
                })
            }
            Err(CheckpointError::Missing { .. }) => {
                let id = uuid::Uuid::new_v4().to_string();
                self.store.put(APPLICATION_ID, &[id.as_bytes()])?;
                Ok(id)
            }
            Err(e) => Err(e),
        }
    }

    /// The epochs that have a manifest, oldest first.
    ///
    /// # Errors
    /// [`CheckpointError::Io`] when the store cannot be listed.
    pub fn manifests(&self) -> Result<Vec<u64>, CheckpointError> {
        let mut v: Vec<u64> = self.store.list()?.iter().filter_map(|n| manifest_epoch(n)).collect();
        v.sort_unstable();
        Ok(v)
    }

    /// Reads and checks the manifest of `epoch`.
    ///
    /// # Errors
    /// [`CheckpointError::Missing`], [`CheckpointError::Corrupt`] (damaged, or not of this epoch
    /// or pipeline), [`CheckpointError::Io`].
    pub fn load_manifest(&self, epoch: u64) -> Result<Manifest, CheckpointError> {
        let name = manifest_name(epoch);
        let bytes = self.store.get(&name)?;
        let opened = envelope::open(&name, Kind::Manifest, &bytes)?;
        let mut aligned = AlignedVec::<16>::with_capacity(opened.payload.len());
        aligned.extend_from_slice(opened.payload);
        let unreadable =
            |e: rancor::Error| CheckpointError::Corrupt { name: name.clone(), why: format!("unreadable archive: {e}") };
        let m = if opened.version <= 2 {
            rkyv::from_bytes::<manifest::v2::Manifest, rancor::Error>(&aligned)
                .map(Manifest::from)
                .map_err(unreadable)?
        } else if opened.version == 3 {
            rkyv::from_bytes::<manifest::v3::Manifest, rancor::Error>(&aligned)
                .map(Manifest::from)
                .map_err(unreadable)?
        } else {
            rkyv::from_bytes::<Manifest, rancor::Error>(&aligned).map_err(unreadable)?
        };
        if m.epoch != epoch || m.pipeline != self.pipeline {
            return Err(CheckpointError::Corrupt {
                name,
                why: format!("it describes epoch {} of pipeline {:?}", m.epoch, m.pipeline),
            });
        }
        if m.snapshots.len() != m.parallelism as usize
            || m.snapshots.iter().enumerate().any(|(i, s)| s.partition as usize != i)
        {
            return Err(CheckpointError::Corrupt {
                name,
                why: format!("it lists {} snapshots for {} partition actors", m.snapshots.len(), m.parallelism),
            });
        }
        Ok(m)
    }

    /// Reads and checks the snapshot `meta` of `manifest` (length and checksum as the manifest
    /// lists them, header, trailer, epoch and partition). The file is read into one buffer and
    /// hashed once; the state is served from that buffer (version 2) without a copy.
    ///
    /// # Errors
    /// [`CheckpointError::Missing`], [`CheckpointError::Corrupt`], [`CheckpointError::Io`].
    pub fn load_snapshot(&self, manifest: &Manifest, meta: &SnapshotMeta) -> Result<LoadedSnapshot, CheckpointError> {
        let name = snapshot_name(manifest.epoch, meta.partition);
        let bytes = self.store.get(&name)?;
        let corrupt = |why: String| CheckpointError::Corrupt { name: name.clone(), why };
        if bytes.len() as u64 != meta.bytes {
            return Err(corrupt(format!("{} bytes, the manifest lists {}", bytes.len(), meta.bytes)));
        }
        let opened = envelope::open(&name, Kind::Snapshot, &bytes)?;
        if opened.file_crc != meta.crc32 {
            return Err(corrupt(format!("checksum {:08x}, the manifest lists {:08x}", opened.file_crc, meta.crc32)));
        }
        let (held, epoch, partition) = if opened.version == 1 {
            let mut aligned = AlignedVec::<16>::with_capacity(opened.payload.len());
            aligned.extend_from_slice(opened.payload);
            drop(bytes);
            let file = rkyv::access::<manifest::ArchivedSnapshotFile, rancor::Error>(&aligned)
                .map_err(|e| corrupt(format!("unreadable archive: {e}")))?;
            let (epoch, partition) = (file.epoch.to_native(), file.partition.to_native());
            (Held::Archived(aligned), epoch, partition)
        } else {
            let (epoch, partition, _parallelism) =
                SnapshotFile::read_prefix(opened.payload).ok_or_else(|| corrupt("shorter than its prefix".into()))?;
            let start = envelope::HEADER_LEN + SnapshotFile::PREFIX_LEN;
            let end = envelope::HEADER_LEN + opened.payload.len();
            (Held::Raw { file: bytes, state: start..end }, epoch, partition)
        };
        if epoch != manifest.epoch || partition != meta.partition {
            return Err(corrupt(format!("it holds partition {partition} of epoch {epoch}")));
        }
        Ok(LoadedSnapshot { name: name.clone(), held })
    }
}

/// Bytes per write of a snapshot file: small enough that the chunk just hashed is still in the
/// cache when it is copied to the store, large enough that a syscall per chunk costs nothing.
pub const CHUNK: usize = 256 * 1024;

/// A validated snapshot file.
#[derive(Debug)]
pub struct LoadedSnapshot {
    name: String,
    held: Held,
}

/// Where a loaded snapshot's state lies.
#[derive(Debug)]
enum Held {
    /// Version 2: the file as read, and the state's bytes in it.
    Raw { file: Vec<u8>, state: std::ops::Range<usize> },
    /// Version 1: the payload (an `rkyv` archive of [`SnapshotFile`]), aligned.
    Archived(AlignedVec<16>),
}

impl LoadedSnapshot {
    /// The operator state bytes.
    ///
    /// # Errors
    /// [`CheckpointError::Corrupt`] when the archive (version 1) does not validate.
    pub fn state(&self) -> Result<&[u8], CheckpointError> {
        match &self.held {
            Held::Raw { file, state } => Ok(&file[state.clone()]),
            Held::Archived(a) => {
                rkyv::access::<manifest::ArchivedSnapshotFile, rancor::Error>(a).map(|f| f.state.as_slice()).map_err(
                    |e| CheckpointError::Corrupt { name: self.name.clone(), why: format!("unreadable archive: {e}") },
                )
            }
        }
    }

    /// The file's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests;
