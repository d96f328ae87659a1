//! Delta tables on an S3-compatible object store (`s3://bucket/prefix`): the store delta-rs
//! reaches them through, and the sink's staged batches there.
//!
//! delta-rs finds the object store and the log store of a table URL in two process-wide
//! registries, one entry per scheme ([`object_store_factories`], [`logstore_factories`]); only
//! `file://` and `memory://` are there by default. [`register_s3`] adds `s3://`: object_store's
//! own S3 client ([`crate::s3::builder_from_env`]: endpoint, region and credentials from the
//! `AWS_*` environment variables, e.g. `AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_ALLOW_HTTP`) and delta-rs's default log store, which writes
//! each version's log file with a conditional put (`PutMode::Create`: `If-None-Match: *` on S3),
//! so two writers never overwrite one version: the second gets "already exists" and delta-rs
//! retries it as the next version after checking for conflicts.
//!
//! A staged (prepared, not committed) batch is one object, the marker
//! `<table>/_eddy_staging/batch-<N>.json`, listing the batch's data files (keys relative to the
//! table) and their `add` actions. It is written before the data files, which go straight to
//! their final keys, so every file of a batch that is not committed can be removed by its list.

use std::collections::HashMap;
use std::path::Path as LocalPath;
use std::sync::{Arc, Once};
use std::time::Duration;

use deltalake_core::kernel::Add;
use deltalake_core::logstore::{
    LogStore, LogStoreFactory, ObjectStoreFactory, ObjectStoreRef, StorageConfig, default_logstore, logstore_factories,
    object_store_factories,
};
use deltalake_core::{DeltaResult, DeltaTableError};
use object_store::path::Path;
use object_store::{BackoffConfig, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig};
use serde_json::{Value, json};
use url::Url;

/// The folder (key prefix) of staged batches, inside the table.
const STAGING: &str = "_eddy_staging";

/// Retries of one request to the store whose connection fails or that answers with a server
/// error (5xx, 429), with randomised exponential backoff from 250 ms up to 4 s; object_store logs
/// each one (`info`, "backing off for ... seconds, retry i of n"). A refused connection so fails
/// its request after 2 to 8 seconds (2.3 s measured); no retry starts once [`RETRY_TIMEOUT`]
/// has passed since the first attempt.
const MAX_RETRIES: usize = 5;
/// The most time one request and its retries may take.
const RETRY_TIMEOUT: Duration = Duration::from_secs(30);

/// The retry policy of every request of an `s3://` table ([`MAX_RETRIES`], [`RETRY_TIMEOUT`]).
fn retry_config() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(4),
            base: 2.0,
        },
        max_retries: MAX_RETRIES,
        retry_timeout: RETRY_TIMEOUT,
    }
}

/// Builds the S3 store of an `s3://bucket/...` URL for delta-rs: the bucket's root store and the
/// URL's path in it.
struct S3Stores;

impl ObjectStoreFactory for S3Stores {
    fn parse_url_opts(&self, url: &Url, config: &StorageConfig) -> DeltaResult<(ObjectStoreRef, Path)> {
        // options given with the table (none from the sink; a library user may pass some)
        let builder = crate::s3::builder_from_env(url.as_str(), retry_config(), &config.raw);
        let store = builder.build()?;
        let path = Path::from_url_path(url.path())?;
        Ok((Arc::new(store), path))
    }
}

/// delta-rs's default log store (versions committed by conditional puts) for `s3://` tables.
struct S3LogStores;

impl LogStoreFactory for S3LogStores {
    fn with_options(
        &self,
        prefixed_store: ObjectStoreRef,
        root_store: ObjectStoreRef,
        location: &Url,
        options: &StorageConfig,
    ) -> DeltaResult<Arc<dyn LogStore>> {
        Ok(default_logstore(prefixed_store, root_store, location, options))
    }
}

/// Registers [`S3Stores`] and [`S3LogStores`] with delta-rs for the `s3` scheme, once per
/// process; a factory registered for `s3` before (by a program embedding Eddy) is kept.
pub(super) fn register_s3() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let scheme = Url::parse("s3://").expect("a valid URL");
        object_store_factories().entry(scheme.clone()).or_insert_with(|| Arc::new(S3Stores));
        logstore_factories().entry(scheme).or_insert_with(|| Arc::new(S3LogStores));
    });
}

/// A table at an object-store URL: its URL, its log store, and its store rooted at the table.
pub(super) struct Store {
    pub url: Url,
    pub log_store: Arc<dyn LogStore>,
    files: Arc<dyn ObjectStore>,
}

/// A staged batch's marker: the application id of the run that staged it, its data files (keys
/// relative to the table) and their `add` actions.
pub(super) struct Marker {
    pub app_id: String,
    pub files: Vec<String>,
    pub adds: Vec<Add>,
}

impl Store {
    /// The store of the table at `url` (`s3://bucket/prefix`), configured by the `AWS_*`
    /// environment variables and then `options` (object_store's S3 keys, e.g.
    /// `aws_endpoint_url`, `aws_allow_http`; unknown keys are ignored); nothing is requested yet.
    ///
    /// # Errors
    /// The URL does not parse, or the store cannot be configured (e.g. a malformed
    /// `AWS_ENDPOINT_URL`).
    pub fn open(url: &str, options: &HashMap<String, String>) -> Result<Store, DeltaTableError> {
        register_s3();
        let url = Url::parse(url).map_err(|e| DeltaTableError::InvalidTableLocation(format!("{url}: {e}")))?;
        let log_store = deltalake_core::DeltaTableBuilder::from_url(url.clone())?
            .with_storage_options(options.clone())
            .build_storage()?;
        let files = log_store.object_store(None);
        Ok(Store { url, log_store, files })
    }

    fn marker(batch_id: u64) -> Path {
        Path::from(format!("{STAGING}/batch-{batch_id:06}.json"))
    }

    /// The batches with a marker, in batch order (one request per 1000 markers).
    pub async fn staged(&self) -> Result<Vec<u64>, object_store::Error> {
        let listed = self.files.list_with_delimiter(Some(&Path::from(STAGING))).await?;
        let mut ids: Vec<u64> = listed
            .objects
            .iter()
            .filter_map(|o| o.location.filename()?.strip_prefix("batch-")?.strip_suffix(".json")?.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Writes the marker of `batch_id` (replacing an older one).
    pub async fn put_marker(&self, batch_id: u64, marker: &Marker) -> Result<(), String> {
        let body = serde_json::to_vec(&json!({ "app_id": marker.app_id, "files": marker.files, "adds": marker.adds }))
            .map_err(|e| format!("encoding the marker of batch {batch_id}: {e}"))?;
        self.files
            .put(&Self::marker(batch_id), PutPayload::from(body))
            .await
            .map(|_| ())
            .map_err(|e| format!("writing the marker of batch {batch_id}: {e}"))
    }

    /// The marker of `batch_id`; `None` if there is none.
    pub async fn read_marker(&self, batch_id: u64) -> Result<Option<Marker>, String> {
        let path = Self::marker(batch_id);
        let bytes = match self.files.get(&path).await {
            Ok(got) => got.bytes().await.map_err(|e| format!("reading {path}: {e}"))?,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(format!("reading {path}: {e}")),
        };
        let damaged = |e: &dyn std::fmt::Display| format!("{path} is damaged: {e}");
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| damaged(&e))?;
        let app_id = serde_json::from_value(value["app_id"].clone()).map_err(|e| damaged(&e))?;
        let files = serde_json::from_value(value["files"].clone()).map_err(|e| damaged(&e))?;
        let adds = serde_json::from_value(value["adds"].clone()).map_err(|e| damaged(&e))?;
        Ok(Some(Marker { app_id, files, adds }))
    }

    /// Removes the marker of `batch_id` (none is fine).
    pub async fn remove_marker(&self, batch_id: u64) -> Result<(), String> {
        remove(self.files.as_ref(), &Self::marker(batch_id)).await
    }

    /// Removes the data files `marker` (of `batch_id`) lists; those already gone are fine. With
    /// the marker removed after them, a batch that will not be committed leaves nothing behind.
    pub async fn remove_files(&self, batch_id: u64, marker: &Marker) -> Result<(), String> {
        for f in &marker.files {
            let key = Path::parse(f).map_err(|e| format!("the marker of batch {batch_id} lists {f:?}: {e}"))?;
            remove(self.files.as_ref(), &key).await?;
        }
        Ok(())
    }

    /// Uploads each file of `files` (paths relative to `local`) to the same key relative to the
    /// table.
    pub async fn upload(&self, local: &LocalPath, files: &[String]) -> Result<(), String> {
        for f in files {
            let from = local.join(f);
            let bytes = std::fs::read(&from).map_err(|e| format!("reading {}: {e}", from.display()))?;
            let key = Path::parse(f).map_err(|e| format!("{f:?} is no object key: {e}"))?;
            self.files.put(&key, PutPayload::from(bytes)).await.map_err(|e| format!("writing {key}: {e}"))?;
        }
        Ok(())
    }
}

/// Deletes `key`; one already gone is fine.
async fn remove(store: &dyn ObjectStore, key: &Path) -> Result<(), String> {
    match store.delete(key).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(format!("removing {key}: {e}")),
    }
}

/// Every file under `dir`, as paths relative to it with `/` between folders, sorted.
///
/// # Errors
/// A folder cannot be listed, or a name is not UTF-8 (the Parquet writer's names always are).
pub(super) fn files_under(dir: &LocalPath) -> std::io::Result<Vec<String>> {
    fn walk(dir: &LocalPath, rel: &str, out: &mut Vec<String>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name().into_string().map_err(|n| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, format!("a file name that is not UTF-8: {n:?}"))
            })?;
            let rel = if rel.is_empty() { name } else { format!("{rel}/{name}") };
            if entry.file_type()?.is_dir() {
                walk(&entry.path(), &rel, out)?;
            } else {
                out.push(rel);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, "", &mut out)?;
    out.sort();
    Ok(out)
}
