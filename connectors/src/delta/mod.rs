//! [`DeltaSink`]: a Delta Lake table, one table version per micro-batch / epoch with rows,
//! exactly once across restarts (PIPELINE.md "Delta Lake sink").
//!
//! Two phases, as the files sink:
//! - [`Sink::write`] decodes each JSON row into Arrow columns of the table's schema
//!   ([`schema`]).
//! - [`Sink::prepare`] writes the batch's Parquet files (partitioned by `partition_by`, Hive
//!   style) into the staging folder `<table>/_eddy_staging/batch-<N>/`, then its Delta `add`
//!   actions into `adds.json` there, all fsynced; `adds.json`, written last and atomically, marks
//!   the batch prepared. Nothing in the staging folder is referenced by the log; Delta readers
//!   (and Spark's VACUUM) leave folders starting with `_` alone.
//! - [`Sink::commit`] moves the staged files into place (renames within the table's folder) and
//!   commits one table version holding the `add` actions (in complete mode, also a `remove` of
//!   every file of the table before it) and the application transaction `txn { appId, version:
//!   N }`. The very first version also creates the table (protocol and metadata).
//! - [`Sink::recover`] (a restart from a checkpoint) finishes each staged batch: one whose `txn`
//!   version is already in the log is done (its staging folder is removed); one the checkpoint
//!   covers is committed (rolled forward: the renames are idempotent); a later one is discarded
//!   with its files, which no version references.
//!
//! The application id is a UUID kept in the pipeline's checkpoint
//! ([`Sink::use_application_id`]), as Spark's Delta sink uses its query id: a batch replayed after
//! a restart finds its `txn` version in the log and is not written twice, and a new checkpoint
//! (batch numbers from 0 again) has a new id. Without a checkpoint each run has its own id.
//!
//! On an object store (`s3://bucket/prefix`), where nothing can be renamed, the same
//! protocol keeps a marker per staged batch instead of a staging folder: [`Sink::prepare`] writes
//! the Parquet files into a local temporary folder, then the marker
//! `<table>/_eddy_staging/batch-<N>.json` listing the files and their `add` actions, then uploads
//! the files to their final keys in the table; [`Sink::commit`] commits the version (its log file
//! written with a conditional put, so no other writer's version is ever overwritten) and removes
//! the marker; [`Sink::recover`] rolls a batch the checkpoint covers forward from its marker,
//! and removes the files of any other by its marker's list. A batch not in the log is therefore
//! never referenced, and leaves no file behind once settled.
//!
//! The table belongs to the pipeline: another writer committing to it between the sink's reads
//! and commits is not expected (delta-rs retries a conflicting commit, and would then append the
//! batch after the other writer's version).

pub mod schema;
mod store;

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use deltalake_core::arrow::datatypes::SchemaRef;
use deltalake_core::arrow::json::reader::{Decoder, ReaderBuilder};
use deltalake_core::arrow::record_batch::RecordBatch;
use deltalake_core::kernel::engine::arrow_conversion::TryIntoKernel;
use deltalake_core::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake_core::kernel::{Action, Add, StructType, Transaction};
use deltalake_core::operations::create::CreateBuilder;
use deltalake_core::protocol::{DeltaOperation, SaveMode};
use deltalake_core::writer::{DeltaWriter, RecordBatchWriter};
use deltalake_core::{DeltaTable, DeltaTableBuilder};
use eddy_engine::schema::Field;

use crate::{ConnectorError, Sink};

/// The folder of staged (prepared, not committed) batches, inside the table's folder.
const STAGING: &str = "_eddy_staging";
/// The file of a staged batch listing its `add` actions; its presence marks the batch prepared.
const ADDS: &str = "adds.json";
/// Rows decoded into one Arrow record batch.
const ROWS_PER_RECORD_BATCH: usize = 8192;

/// How each version changes the table (the query's output mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeltaWrite {
    /// Each version adds the batch's rows (`append` output mode; late records; dead letters).
    Append,
    /// Each version replaces the table's rows with the batch's (`complete` output mode, as Spark's
    /// Delta sink overwrites the table each batch).
    Complete,
}

/// Where a table is.
enum Location {
    /// A local folder (absolute): staging folder, renames.
    Folder(PathBuf),
    /// An object store: markers, conditional puts.
    Store(store::Store),
}

/// Writes a pipeline's rows to the Delta Lake table in one folder or at one object-store URL
/// (see the module's doc).
pub struct DeltaSink {
    location: Location,
    /// The folder or URL, for messages.
    shown: String,
    /// The folder of the staging folder (a local table) or the local temporary folder the
    /// Parquet files are written in before their upload (an object-store table).
    folder: PathBuf,
    schema: SchemaRef,
    partition_by: Vec<String>,
    write: DeltaWrite,
    app_id: String,
    runtime: tokio::runtime::Runtime,
    /// The table once it exists (loaded lazily, kept up to date by the commits).
    table: Option<DeltaTable>,
    /// The newest `txn` version of `app_id` in the log, once read.
    committed_txn: Option<Option<i64>>,
    /// Batches receiving rows.
    open: BTreeMap<u64, OpenBatch>,
    /// Whether leftovers of an earlier run were settled ([`Sink::recover`], or at the first
    /// prepare of a run without checkpoint, where they are all discarded).
    settled: bool,
}

impl std::fmt::Debug for DeltaSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeltaSink")
            .field("location", &self.shown)
            .field("partition_by", &self.partition_by)
            .field("write", &self.write)
            .field("app_id", &self.app_id)
            .field("open", &self.open.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Drop for DeltaSink {
    fn drop(&mut self) {
        // an object-store table's local temporary folder (staged batches are uploaded at once)
        if matches!(self.location, Location::Store(_)) {
            let _ = fs::remove_dir_all(&self.folder);
        }
    }
}

struct OpenBatch {
    decoder: Decoder,
    decoded: Vec<RecordBatch>,
}

impl DeltaSink {
    /// A sink into the Delta table in `folder` (created with its parents if missing; the table
    /// itself is created by the first version) for rows of `columns`, partitioned by
    /// `partition_by` (names among `columns`), with a fresh application id (a UUID).
    ///
    /// # Errors
    /// [`ConnectorError::Io`] naming the folder when it cannot be created;
    /// [`ConnectorError::External`] when the async runtime cannot start;
    /// [`ConnectorError::Config`] when the folder holds a Delta table of another schema or
    /// partitioning (the table's and the rows' columns are named).
    pub fn new(
        folder: &Path,
        columns: &[Field],
        partition_by: &[String],
        write: DeltaWrite,
    ) -> Result<DeltaSink, ConnectorError> {
        fs::create_dir_all(folder).map_err(|source| ConnectorError::Io {
            what: format!("delta sink: creating {}", folder.display()),
            source,
        })?;
        let folder = fs::canonicalize(folder).map_err(|source| ConnectorError::Io {
            what: format!("delta sink: resolving {}", folder.display()),
            source,
        })?;
        let shown = folder.display().to_string();
        DeltaSink::open(Location::Folder(folder.clone()), shown, folder, columns, partition_by, write)
    }

    /// A sink into the Delta table at the object-store URL `url` (`s3://bucket/prefix`; the
    /// table is created by the first version) for rows of `columns`, partitioned by
    /// `partition_by`, with a fresh application id. The store's endpoint, region and credentials
    /// come from the `AWS_*` environment variables (`AWS_ENDPOINT_URL`, `AWS_REGION`,
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_ALLOW_HTTP` for a plain-HTTP
    /// endpoint, ...), then `options` (object_store's S3 configuration keys, such as
    /// `aws_endpoint_url`, `aws_allow_http`: for a program that does not configure the store by
    /// the environment; `eddy run` passes none). The table's log is read at once: an
    /// unreachable store fails here, after its retries (each logged; 2 to 8 seconds for a
    /// refused connection).
    ///
    /// # Errors
    /// [`ConnectorError::Config`] when the URL is not one or the store cannot be configured
    /// from the environment, or the table there has another schema or partitioning;
    /// [`ConnectorError::External`] when the store cannot be reached or read (after its
    /// retries), or the async runtime cannot start.
    pub fn new_in_store(
        url: &str,
        options: &HashMap<String, String>,
        columns: &[Field],
        partition_by: &[String],
        write: DeltaWrite,
    ) -> Result<DeltaSink, ConnectorError> {
        let store =
            store::Store::open(url, options).map_err(|e| ConnectorError::Config(format!("delta sink {url}: {e}")))?;
        let temp = std::env::temp_dir().join(format!("eddy-delta-{}", uuid::Uuid::new_v4()));
        DeltaSink::open(Location::Store(store), url.to_string(), temp, columns, partition_by, write)
    }

    fn open(
        location: Location,
        shown: String,
        folder: PathBuf,
        columns: &[Field],
        partition_by: &[String],
        write: DeltaWrite,
    ) -> Result<DeltaSink, ConnectorError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ConnectorError::External(format!("delta sink: cannot start its async runtime: {e}")))?;
        let mut sink = DeltaSink {
            location,
            shown,
            folder,
            schema: Arc::new(schema::arrow_schema(columns)),
            partition_by: partition_by.to_vec(),
            write,
            app_id: uuid::Uuid::new_v4().to_string(),
            runtime,
            table: None,
            committed_txn: None,
            open: BTreeMap::new(),
            settled: false,
        };
        sink.load_table()?;
        sink.check_table_shape()?;
        Ok(sink)
    }

    /// The application id of the `txn` actions.
    pub fn application_id(&self) -> &str {
        &self.app_id
    }

    fn external(&self, what: &str, e: impl std::fmt::Display) -> ConnectorError {
        ConnectorError::External(format!("delta sink {}: {what}: {e}", self.shown))
    }

    fn url(&self) -> Result<url::Url, ConnectorError> {
        match &self.location {
            Location::Folder(folder) => url::Url::from_directory_path(folder)
                .map_err(|()| self.external("the folder is no absolute path", folder.display())),
            Location::Store(store) => Ok(store.url.clone()),
        }
    }

    /// Loads the table if its log exists (`self.table` stays `None` otherwise).
    fn load_table(&mut self) -> Result<(), ConnectorError> {
        if self.table.is_some() {
            return Ok(());
        }
        let exists = match &self.location {
            Location::Folder(folder) => folder.join("_delta_log").is_dir(),
            Location::Store(store) => self
                .runtime
                .block_on(store.log_store.is_delta_table_location())
                .map_err(|e| self.external("reading the table's log", e))?,
        };
        if !exists {
            return Ok(());
        }
        let url = self.url()?;
        let log_store = match &self.location {
            Location::Folder(_) => None,
            Location::Store(store) => Some(store.log_store.clone()),
        };
        let loaded = self
            .runtime
            .block_on(async {
                match log_store {
                    None => DeltaTableBuilder::from_url(url)?.load().await,
                    Some(log_store) => {
                        let mut table = DeltaTable::new(log_store);
                        table.load().await.map(|()| table)
                    }
                }
            })
            .map_err(|e| self.external("reading the table's log", e))?;
        self.table = Some(loaded);
        Ok(())
    }

    /// An existing table must have the rows' columns and partitioning.
    fn check_table_shape(&self) -> Result<(), ConnectorError> {
        let Some(table) = &self.table else { return Ok(()) };
        let snapshot = table.snapshot().map_err(|e| self.external("reading the table's schema", e))?;
        let ours: StructType =
            self.schema.as_ref().try_into_kernel().map_err(|e| self.external("mapping the schema", e))?;
        let theirs = snapshot.schema();
        let names = |s: &StructType| s.fields().map(|f| format!("{} {}", f.name(), f.data_type())).collect::<Vec<_>>();
        if names(&ours) != names(theirs.as_ref()) {
            return Err(ConnectorError::Config(format!(
                "delta sink {}: the table's columns are [{}], the pipeline's rows have [{}]",
                self.shown,
                names(theirs.as_ref()).join(", "),
                names(&ours).join(", ")
            )));
        }
        let partitions = snapshot.metadata().partition_columns();
        if *partitions != self.partition_by {
            return Err(ConnectorError::Config(format!(
                "delta sink {}: the table is partitioned by [{}], the pipeline's partition_by is [{}]",
                self.shown,
                partitions.join(", "),
                self.partition_by.join(", ")
            )));
        }
        Ok(())
    }

    /// The newest `txn` version of the application id in the log (`None`: none, or no table).
    fn committed_txn(&mut self) -> Result<Option<i64>, ConnectorError> {
        if let Some(v) = self.committed_txn {
            return Ok(v);
        }
        let app_id = self.app_id.clone();
        let version = self.txn_version_of(&app_id)?;
        self.committed_txn = Some(version);
        Ok(version)
    }

    /// The newest `txn` version of application id `app_id` in the log (`None`: none, or no
    /// table).
    fn txn_version_of(&mut self, app_id: &str) -> Result<Option<i64>, ConnectorError> {
        self.load_table()?;
        let version = match &self.table {
            None => None,
            Some(table) => {
                let snapshot = table.snapshot().map_err(|e| self.external("reading the log", e))?;
                let log_store = table.log_store();
                self.runtime
                    .block_on(snapshot.transaction_version(log_store.as_ref(), app_id))
                    .map_err(|e| self.external("reading the application transactions", e))?
            }
        };
        Ok(version)
    }

    fn staging(&self) -> PathBuf {
        self.folder.join(STAGING)
    }

    fn staged(&self, batch_id: u64) -> PathBuf {
        self.staging().join(format!("batch-{batch_id:06}"))
    }

    /// The staged batches: those with an `adds.json` (prepared) and those without (a prepare
    /// cut short), in batch order. On an object store, each batch with a marker (which lists
    /// its files even when its prepare was cut short).
    fn staged_batches(&self) -> Result<Vec<(u64, bool)>, ConnectorError> {
        if let Location::Store(store) = &self.location {
            let ids =
                self.runtime.block_on(store.staged()).map_err(|e| self.external("listing the staged batches", e))?;
            return Ok(ids.into_iter().map(|id| (id, true)).collect());
        }
        let staging = self.staging();
        let entries = match fs::read_dir(&staging) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err(format!("delta sink: listing {}", staging.display()))(e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_err(format!("delta sink: listing {}", staging.display())))?;
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_prefix("batch-")).and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            out.push((id, entry.path().join(ADDS).is_file()));
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Removes staged batch `batch_id` with its files (none is fine). On an object store the
    /// files are at their final keys: those of a batch whose version is in the log (its
    /// marker's application id has a `txn` at or past the batch: a crash between the commit and
    /// the marker's removal) are the table's and stay; only the marker goes. (A marker is
    /// written only for a batch not in the log yet, so its files are the ones committed.)
    fn discard(&mut self, batch_id: u64) -> Result<(), ConnectorError> {
        let Location::Store(store) = &self.location else { return self.discard_local(batch_id) };
        let what = format!("discarding batch {batch_id}");
        let Some(marker) = self.runtime.block_on(store.read_marker(batch_id)).map_err(|e| self.external(&what, e))?
        else {
            return Ok(());
        };
        let committed = self.txn_version_of(&marker.app_id)?.is_some_and(|v| v >= batch_id as i64);
        let Location::Store(store) = &self.location else { unreachable!("matched above") };
        let removed = self.runtime.block_on(async {
            if !committed {
                store.remove_files(batch_id, &marker).await?;
            }
            store.remove_marker(batch_id).await
        });
        removed.map_err(|e| self.external(&what, e))
    }

    /// Removes the local staging folder of `batch_id` (none is fine).
    fn discard_local(&self, batch_id: u64) -> Result<(), ConnectorError> {
        let dir = self.staged(batch_id);
        match fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err(format!("delta sink: removing {}", dir.display()))(e)),
        }
    }

    /// Discards every staged batch (a run without checkpoint: nothing is rolled forward).
    fn settle_without_checkpoint(&mut self) -> Result<(), ConnectorError> {
        if !self.settled {
            for (id, _) in self.staged_batches()? {
                self.discard(id)?;
            }
            self.settled = true;
        }
        Ok(())
    }

    /// Writes the Parquet files of `batches` into the staging folder of `batch_id` and returns
    /// their `add` actions (paths relative to the staging folder, which are also their paths
    /// relative to the table once moved).
    fn write_files(&self, batch_id: u64, batches: Vec<RecordBatch>) -> Result<Vec<Add>, ConnectorError> {
        let dir = self.staged(batch_id);
        fs::create_dir_all(&dir).map_err(io_err(format!("delta sink: creating {}", dir.display())))?;
        let url = url::Url::from_directory_path(&dir)
            .map_err(|()| self.external("the staging folder is no absolute path", dir.display()))?;
        let partition_by = (!self.partition_by.is_empty()).then(|| self.partition_by.clone());
        let schema = self.schema.clone();
        self.runtime
            .block_on(async move {
                let mut writer = RecordBatchWriter::try_new(url.as_str(), schema, partition_by, None)?;
                for b in batches {
                    writer.write(b).await?;
                }
                writer.flush().await
            })
            .map_err(|e| self.external(&format!("writing the Parquet files of batch {batch_id}"), e))
    }

    /// Commits staged batch `batch_id` whose `add` actions are `adds`: moves its files into place,
    /// then commits one version with them and its `txn`.
    /// On an object store the files are in place already: the version is committed, then the
    /// marker removed.
    fn commit_staged(&mut self, batch_id: u64, adds: Vec<Add>) -> Result<(), ConnectorError> {
        if let Location::Folder(folder) = &self.location {
            let dir = self.staged(batch_id);
            let mut moved_into = Vec::new();
            move_files(&dir, folder, Path::new(""), &mut moved_into)
                .map_err(io_err(format!("delta sink: moving the files of {} into the table", dir.display())))?;
            for d in moved_into {
                sync_dir(&d).map_err(io_err(format!("delta sink: syncing {}", d.display())))?;
            }
        }
        let txn = Transaction::new(&self.app_id, batch_id as i64);
        let properties = CommitProperties::default().with_application_transaction(txn);
        let mut actions: Vec<Action> = adds.into_iter().map(Action::Add).collect();
        self.load_table()?;
        let partition_by = (!self.partition_by.is_empty()).then(|| self.partition_by.clone());
        let committed = match self.table.take() {
            None => {
                let columns: StructType =
                    self.schema.as_ref().try_into_kernel().map_err(|e| self.external("mapping the schema", e))?;
                let url = self.url()?;
                let mut create = CreateBuilder::new().with_location(url.as_str());
                if let Location::Store(store) = &self.location {
                    create = create.with_log_store(store.log_store.clone());
                }
                let create = create
                    .with_columns(columns.fields().cloned())
                    .with_partition_columns(self.partition_by.clone())
                    .with_actions(actions)
                    .with_commit_properties(properties);
                self.runtime.block_on(async move { create.await })
            }
            Some(mut table) => {
                let result = self.runtime.block_on(async {
                    let snapshot = table.snapshot()?;
                    let mode = match self.write {
                        DeltaWrite::Append => SaveMode::Append,
                        DeltaWrite::Complete => {
                            actions.extend(snapshot.log_data().iter().map(|f| Action::Remove(f.remove_action(true))));
                            SaveMode::Overwrite
                        }
                    };
                    let operation = DeltaOperation::Write { mode, partition_by, predicate: None };
                    let finalized = CommitBuilder::from(properties)
                        .with_actions(actions)
                        .build(Some(snapshot), table.log_store(), operation)
                        .await?;
                    table.state = Some(finalized.snapshot());
                    Ok::<_, deltalake_core::DeltaTableError>(())
                });
                result.map(|()| table)
            }
        };
        let table = committed.map_err(|e| self.external(&format!("committing batch {batch_id}"), e))?;
        self.table = Some(table);
        self.committed_txn = Some(Some(batch_id as i64));
        match &self.location {
            Location::Folder(folder) => {
                let log = folder.join("_delta_log");
                sync_dir(&log).map_err(io_err(format!("delta sink: syncing {}", log.display())))?;
                self.discard_local(batch_id)
            }
            Location::Store(store) => self
                .runtime
                .block_on(store.remove_marker(batch_id))
                .map_err(|e| self.external(&format!("batch {batch_id} committed, then"), e)),
        }
    }

    /// The `add` actions of staged batch `batch_id`; `None` when it is not staged (no rows, or
    /// committed and settled already).
    fn staged_adds(&self, batch_id: u64) -> Result<Option<Vec<Add>>, ConnectorError> {
        match &self.location {
            Location::Folder(_) => {
                Ok(if self.staged(batch_id).join(ADDS).is_file() { Some(self.read_adds(batch_id)?) } else { None })
            }
            Location::Store(store) => Ok(self
                .runtime
                .block_on(store.read_marker(batch_id))
                .map_err(|e| self.external(&format!("batch {batch_id}"), e))?
                .map(|m| m.adds)),
        }
    }

    /// Writes the staged files and `adds.json` of `batch_id` into the table's staging folder.
    fn stage_local(&self, batch_id: u64, adds: &[Add]) -> Result<(), ConnectorError> {
        let dir = self.staged(batch_id);
        let json = serde_json::to_vec(adds).map_err(|e| self.external("encoding the add actions", e))?;
        let tmp = dir.join(".adds.json.tmp");
        fs::write(&tmp, json).map_err(io_err(format!("delta sink: writing {}", tmp.display())))?;
        sync_tree(&dir).map_err(io_err(format!("delta sink: syncing {}", dir.display())))?;
        fs::rename(&tmp, dir.join(ADDS))
            .map_err(io_err(format!("delta sink: writing {}", dir.join(ADDS).display())))?;
        sync_dir(&dir).map_err(io_err(format!("delta sink: syncing {}", dir.display())))?;
        let staging = self.staging();
        sync_dir(&staging).map_err(io_err(format!("delta sink: syncing {}", staging.display())))
    }

    /// Stages `batch_id` on the object store: its marker listing the files written in the local
    /// folder, then the files at their keys; the local folder is removed.
    fn stage_in_store(&self, store: &store::Store, batch_id: u64, adds: Vec<Add>) -> Result<(), ConnectorError> {
        let dir = self.staged(batch_id);
        let files = store::files_under(&dir).map_err(io_err(format!("delta sink: listing {}", dir.display())))?;
        let marker = store::Marker { app_id: self.app_id.clone(), files, adds };
        let staged = self.runtime.block_on(async {
            store.put_marker(batch_id, &marker).await?;
            store.upload(&dir, &marker.files).await
        });
        // the local copy goes either way (a failed upload is retried by a replay of the batch)
        let removed = self.discard_local(batch_id);
        staged.map_err(|e| self.external(&format!("staging batch {batch_id}"), e))?;
        removed
    }

    fn read_adds(&self, batch_id: u64) -> Result<Vec<Add>, ConnectorError> {
        let path = self.staged(batch_id).join(ADDS);
        let bytes = fs::read(&path).map_err(io_err(format!("delta sink: reading {}", path.display())))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| ConnectorError::External(format!("delta sink: {} is damaged: {e}", path.display())))
    }
}

/// An I/O failure while doing `what` (which names the path).
fn io_err(what: String) -> impl FnOnce(std::io::Error) -> ConnectorError {
    move |source| ConnectorError::Io { what, source }
}

/// Moves every file under `from` (except [`ADDS`] at its top) to the same relative place under
/// `to`, creating folders; notes the folders that received files. A file already moved (a
/// commit cut short) is no longer under `from`: moving again is a no-op.
fn move_files(from: &Path, to: &Path, rel: &Path, moved_into: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let entries = match fs::read_dir(from.join(rel)) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = rel.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            move_files(from, to, &name, moved_into)?;
        } else if name != Path::new(ADDS) {
            files.push(name);
        }
    }
    if !files.is_empty() {
        let target = to.join(rel);
        fs::create_dir_all(&target)?;
        for f in files {
            fs::rename(from.join(&f), to.join(&f))?;
        }
        moved_into.push(target);
    }
    Ok(())
}

/// fsyncs every file and folder under `dir`, `dir` included.
fn sync_tree(dir: &Path) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            sync_tree(&entry.path())?;
        } else {
            File::open(entry.path())?.sync_all()?;
        }
    }
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

impl Sink for DeltaSink {
    fn write(&mut self, batch_id: u64, line: &str, _key: Option<&str>) -> Result<(), ConnectorError> {
        let open = match self.open.entry(batch_id) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                let decoder = ReaderBuilder::new(self.schema.clone())
                    .with_batch_size(ROWS_PER_RECORD_BATCH)
                    .build_decoder()
                    .map_err(|e| ConnectorError::External(format!("delta sink: {e}")))?;
                v.insert(OpenBatch { decoder, decoded: Vec::new() })
            }
        };
        let bad_row = |e: &dyn std::fmt::Display| {
            ConnectorError::External(format!(
                "delta sink: a row of batch {batch_id} does not fit the table: {e}: {line}"
            ))
        };
        let mut rest = line.as_bytes();
        let mut flushed = false;
        while !rest.is_empty() {
            // the decoder stops taking bytes once it holds a record batch's worth of rows
            let taken = open.decoder.decode(rest).map_err(|e| bad_row(&e))?;
            rest = &rest[taken..];
            if !rest.is_empty() {
                if taken == 0 && flushed {
                    return Err(bad_row(&"not one JSON object"));
                }
                if let Some(b) = open.decoder.flush().map_err(|e| bad_row(&e))? {
                    open.decoded.push(b);
                }
                flushed = true;
            }
        }
        // one JSON value per row: a separator keeps two rows from reading as one (whitespace,
        // which a full decoder may leave untaken)
        open.decoder.decode(b"\n").map_err(|e| bad_row(&e))?;
        Ok(())
    }

    fn prepare(&mut self, batch_id: u64) -> Result<(), ConnectorError> {
        self.settle_without_checkpoint()?;
        let Some(mut open) = self.open.remove(&batch_id) else { return Ok(()) };
        if let Some(b) = open
            .decoder
            .flush()
            .map_err(|e| ConnectorError::External(format!("delta sink: decoding the rows of batch {batch_id}: {e}")))?
        {
            open.decoded.push(b);
        }
        let batches: Vec<RecordBatch> = open.decoded.into_iter().filter(|b| b.num_rows() > 0).collect();
        if batches.is_empty() {
            return Ok(());
        }
        if matches!(self.location, Location::Store(_)) && self.committed_txn()?.is_some_and(|v| v >= batch_id as i64) {
            // replayed and already in the log: nothing is uploaded, so a marker is only ever
            // written for a batch not yet in the log (what [`DeltaSink::discard`] relies on)
            return Ok(());
        }
        // a replayed batch starts from a clean staging folder (and without its earlier files)
        self.discard(batch_id)?;
        self.discard_local(batch_id)?;
        let adds = self.write_files(batch_id, batches)?;
        match &self.location {
            Location::Folder(_) => self.stage_local(batch_id, &adds),
            Location::Store(store) => self.stage_in_store(store, batch_id, adds),
        }
    }

    fn commit(&mut self, batch_id: u64) -> Result<(), ConnectorError> {
        let Some(adds) = self.staged_adds(batch_id)? else {
            // no row: no version (a batch can also be prepared and committed with rows still
            // arriving only when the runtime is wrong; they would stay open and fail the next
            // prepare of this id)
            return Ok(());
        };
        if self.committed_txn()?.is_some_and(|v| v >= batch_id as i64) {
            // replayed and already in the log: written once only (on an object store, the
            // replay's files are removed by the marker's list)
            return self.discard(batch_id);
        }
        self.commit_staged(batch_id, adds)
    }

    fn use_application_id(&mut self, id: &str) {
        if self.app_id != id {
            self.app_id = id.to_string();
            self.committed_txn = None;
        }
    }

    fn recover(&mut self, committed: Option<u64>) -> Result<usize, ConnectorError> {
        self.settled = true;
        let mut settled = 0;
        for (id, prepared) in self.staged_batches()? {
            let done = self.committed_txn()?.is_some_and(|v| v >= id as i64);
            if done || !prepared || committed.is_none_or(|c| id > c) {
                // in the log already, or never prepared whole, or its checkpoint never completed
                self.discard(id)?;
            } else if let Some(adds) = self.staged_adds(id)? {
                self.commit_staged(id, adds)?;
                tracing::info!(batch = id, table = %self.shown, "delta sink: rolled a prepared batch forward");
            }
            settled += 1;
        }
        Ok(settled)
    }
}

#[cfg(test)]
mod tests;
