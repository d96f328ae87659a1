//! [`ObjectCheckpointStore`]: a [`CheckpointStore`] in S3-compatible object storage
//! (`[checkpoint] path = "s3://bucket/prefix"`), with the cargo feature `s3`.
//!
//! The store of `s3://bucket/prefix/<pipeline>[/<sub>]` holds each blob `name` as the object
//! `prefix/<pipeline>[/<sub>]/name`; [`CheckpointStore::list`] lists that one level only (objects
//! deeper down, such as another sub-store's, are not its blobs).
//!
//! - **Atomic blobs.** A [`BlobWriter`] keeps the blob's chunks in memory (one copy of the blob
//!   while it is written) and uploads nothing before [`BlobWriter::commit`], which sends one PUT
//!   (an object appears whole or not at all) or, past [`ObjectStoreOptions::part_size`], a
//!   multipart upload whose completion makes the object visible at once. A writer dropped
//!   without `commit` leaves nothing; a process killed during a multipart upload leaves an
//!   incomplete upload, invisible and billed until the bucket's lifecycle rule
//!   (`AbortIncompleteMultipartUpload`) removes it.
//! - **Create once.** [`CheckpointStore::put_if_absent`] is a conditional PUT
//!   (`If-None-Match: *`): S3 (and moto) answer 412 when the key exists, so of racing processes
//!   exactly one creates it.
//! - **No lock.** Object storage has no lock: `open_store`'s `exclusive` cannot be honoured,
//!   so two processes must never write one store (one pipeline's prefix, or one partition's
//!   sub-store in a shared consumer group: the group protocol of issue 26 guarantees it).
//! - **Unreachable store.** A request that fails for a reason that may pass (the connection
//!   refused or cut, a timeout, a server error 5xx or 429, an unexpected answer) is retried with
//!   exponential backoff (100 ms doubling up to 2 s), with a `warn` line per failed attempt
//!   naming the operation, the object's URL and the error; once
//!   [`ObjectStoreOptions::unreachable_timeout`] (default 30 s, the environment variable
//!   `EDDY_CHECKPOINT_UNREACHABLE_TIMEOUT_MS`) has passed since the operation's first failed
//!   attempt, it fails with [`CheckpointError::Unreachable`] naming the store. Each request is
//!   bounded too, by the S3 client's timeouts (5 s to connect, 30 s per request), so an
//!   operation gives up at most one request's timeout after the bound. Answers that will not
//!   change by retrying (403, 401, a missing bucket) fail at once.
//!
//! The endpoint, region and credentials come from the `AWS_*` environment variables, as for the
//! Delta sink's `s3://` tables ([`eddy_connectors::s3`]). The store drives object_store's async
//! client on the calling thread with a tokio runtime of its own (current-thread; several threads
//! may call the store at once): its methods must not be called from inside an async runtime.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use eddy_connectors::s3::object_store::{
    self, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, PutPayloadMut, RetryConfig, path::Path,
};

use super::CheckpointError;
use super::store::{BlobWriter, CheckpointStore};

/// The environment variable overriding [`ObjectStoreOptions::unreachable_timeout`], in
/// milliseconds.
pub const UNREACHABLE_TIMEOUT_VAR: &str = "EDDY_CHECKPOINT_UNREACHABLE_TIMEOUT_MS";

/// The first pause after a failed attempt; each next one doubles, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest pause between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// How an [`ObjectCheckpointStore`] is reached and how long it may stay unreachable.
#[derive(Debug, Clone)]
pub struct ObjectStoreOptions {
    /// How long an operation keeps retrying after its first failed attempt before failing with
    /// [`CheckpointError::Unreachable`] (default 30 s).
    pub unreachable_timeout: Duration,
    /// Blobs larger than this many bytes are uploaded in parts of this size (a multipart
    /// upload); smaller ones in one PUT. At least 5 MiB (S3's smallest part); default 32 MiB,
    /// so up to 320 GiB per blob (10,000 parts).
    pub part_size: usize,
    /// object_store's S3 options applied after the `AWS_*` environment variables (keys as
    /// `aws_endpoint_url`, `aws_allow_http`, `aws_access_key_id`; unknown keys are ignored): for
    /// a program that configures the store itself. Empty for `eddy run`.
    pub s3: HashMap<String, String>,
}

impl Default for ObjectStoreOptions {
    fn default() -> Self {
        ObjectStoreOptions { unreachable_timeout: Duration::from_secs(30), part_size: 32 << 20, s3: HashMap::new() }
    }
}

impl ObjectStoreOptions {
    /// The defaults, with [`ObjectStoreOptions::unreachable_timeout`] from
    /// [`UNREACHABLE_TIMEOUT_VAR`] when it is set.
    ///
    /// # Errors
    /// [`CheckpointError::BadLocation`] at `location` when the variable is not a whole number of
    /// milliseconds.
    pub fn from_env(location: &str) -> Result<ObjectStoreOptions, CheckpointError> {
        let mut options = ObjectStoreOptions::default();
        if let Some(v) = std::env::var_os(UNREACHABLE_TIMEOUT_VAR) {
            let text = v.to_string_lossy();
            let ms: u64 = text.trim().parse().map_err(|_| CheckpointError::BadLocation {
                location: location.to_string(),
                why: format!("{UNREACHABLE_TIMEOUT_VAR}={text:?} is not a whole number of milliseconds"),
            })?;
            options.unreachable_timeout = Duration::from_millis(ms);
        }
        Ok(options)
    }
}

/// A [`CheckpointStore`] under one prefix of an S3-compatible bucket (the module's docs say how
/// it writes, retries and fails).
#[derive(Debug)]
pub struct ObjectCheckpointStore {
    shared: Arc<Shared>,
}

/// What the store and its blob writers share.
#[derive(Debug)]
struct Shared {
    /// The store's URL, `s3://bucket/prefix`, for messages.
    url: String,
    /// The objects' key prefix (empty: the bucket's top level).
    prefix: Path,
    store: Arc<dyn ObjectStore>,
    /// Drives the store's requests on the calling thread.
    runtime: tokio::runtime::Runtime,
    unreachable_timeout: Duration,
    part_size: usize,
}

impl ObjectCheckpointStore {
    /// Opens the store at `url`, `s3://bucket[/prefix]`, configured by the `AWS_*` environment
    /// variables and then `options`; nothing is requested yet (an unreachable store shows at
    /// the first operation).
    ///
    /// # Errors
    /// [`CheckpointError::BadLocation`] when `url` is not `s3://` with a bucket, its prefix is
    /// not a valid key (an empty segment, `a//b`), the part size is below 5 MiB, or the S3
    /// client cannot be configured (e.g. a malformed `AWS_ENDPOINT_URL`);
    /// [`CheckpointError::Io`] when the async runtime cannot start.
    pub fn open_s3(url: &str, options: ObjectStoreOptions) -> Result<ObjectCheckpointStore, CheckpointError> {
        let bad = |why: String| CheckpointError::BadLocation { location: url.to_string(), why };
        let rest = url.strip_prefix("s3://").ok_or_else(|| bad("not an s3://bucket/prefix URL".into()))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad("no bucket (s3://bucket/prefix)".into()));
        }
        let prefix =
            Path::parse(prefix.trim_end_matches('/')).map_err(|e| bad(format!("not a valid key prefix: {e}")))?;
        if options.part_size < 5 << 20 {
            return Err(bad(format!("a part size of {} bytes, below S3's smallest (5 MiB)", options.part_size)));
        }
        // No retries inside object_store: `Shared::run` retries, with a warning per attempt.
        let no_retries = RetryConfig { max_retries: 0, ..RetryConfig::default() };
        let store = eddy_connectors::s3::builder_from_env(&format!("s3://{bucket}"), no_retries, &options.s3)
            .build()
            .map_err(|e| bad(format!("cannot configure the S3 client from the AWS_* variables: {e}")))?;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|source| {
            CheckpointError::Io { what: format!("starting the async runtime of the checkpoint store {url}"), source }
        })?;
        let url = format!("s3://{bucket}/{prefix}").trim_end_matches('/').to_string();
        Ok(ObjectCheckpointStore {
            shared: Arc::new(Shared {
                url,
                prefix,
                store: Arc::new(store),
                runtime,
                unreachable_timeout: options.unreachable_timeout,
                part_size: options.part_size,
            }),
        })
    }
}

impl Shared {
    /// The key of blob `name`.
    fn key(&self, name: &str) -> Path {
        self.prefix.clone().join(name)
    }

    /// The URL of blob `name`, for messages.
    fn blob_url(&self, name: &str) -> String {
        format!("{}/{name}", self.url)
    }

    /// Runs `op` (one attempt of `what`, an operation on the object `object_url`) until it
    /// succeeds, fails for a reason retrying cannot change, or keeps failing for
    /// `unreachable_timeout` (the module's docs).
    fn run<T, F, Fut>(&self, what: &str, object_url: &str, mut op: F) -> Result<T, CheckpointError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, object_store::Error>>,
    {
        self.runtime.block_on(async {
            let mut first_failure: Option<Instant> = None;
            let mut backoff = FIRST_BACKOFF;
            let mut attempts = 0u32;
            loop {
                let started = Instant::now();
                attempts += 1;
                let e = match op().await {
                    Ok(v) => return Ok(v),
                    Err(e) if !may_pass(&e) => {
                        return Err(CheckpointError::Io {
                            what: format!("{what} {object_url}"),
                            source: std::io::Error::other(e),
                        });
                    }
                    Err(e) => e,
                };
                let since = *first_failure.get_or_insert(started);
                let waited = since.elapsed();
                if waited >= self.unreachable_timeout {
                    return Err(CheckpointError::Unreachable {
                        location: self.url.clone(),
                        what: format!("{what} {object_url}"),
                        attempts,
                        waited_ms: waited.as_millis() as u64,
                        why: with_causes(&e),
                    });
                }
                let pause = backoff.min(self.unreachable_timeout - waited);
                tracing::warn!(
                    store = %self.url,
                    object = %object_url,
                    attempt = attempts,
                    error = %with_causes(&e),
                    "checkpoint store: {what} failed; retrying in {} ms (giving up {} s after the first failure; {UNREACHABLE_TIMEOUT_VAR})",
                    pause.as_millis(),
                    self.unreachable_timeout.as_secs_f64(),
                );
                tokio::time::sleep(pause).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        })
    }
}

/// `e`'s message followed by those of its causes not already in it, `: ` between them (the
/// refused connection under object_store's "error sending request").
fn with_causes(e: &object_store::Error) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

/// Whether retrying may change `e`'s outcome: a failure to reach the store or a server error
/// (object_store's `Generic`), not an answer about the request itself (missing, existing,
/// refused credentials, a bad key or option).
fn may_pass(e: &object_store::Error) -> bool {
    matches!(e, object_store::Error::Generic { .. } | object_store::Error::JoinError { .. })
}

impl CheckpointStore for ObjectCheckpointStore {
    fn create(&self, name: &str) -> Result<Box<dyn BlobWriter>, CheckpointError> {
        Ok(Box::new(ObjectBlob {
            shared: Arc::clone(&self.shared),
            name: name.to_string(),
            parts: Vec::new(),
            current: PutPayloadMut::new(),
        }))
    }

    fn get(&self, name: &str) -> Result<Vec<u8>, CheckpointError> {
        let s = &self.shared;
        let (key, url) = (s.key(name), s.blob_url(name));
        let got = s.run("reading", &url, || async {
            match s.store.get(&key).await {
                Ok(r) => r.bytes().await.map(|b| Some(b.to_vec())),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        })?;
        got.ok_or(CheckpointError::Missing { name: url })
    }

    fn list(&self) -> Result<Vec<String>, CheckpointError> {
        let s = &self.shared;
        let prefix = (!s.prefix.as_ref().is_empty()).then_some(&s.prefix);
        let listed = s.run("listing", &format!("{}/", s.url), || s.store.list_with_delimiter(prefix))?;
        // only the objects one level below the prefix (not a "folder" marker `prefix/` itself)
        let depth = s.prefix.parts_count() + 1;
        Ok(listed
            .objects
            .iter()
            .filter(|o| o.location.parts_count() == depth)
            .filter_map(|o| o.location.filename().map(str::to_string))
            .collect())
    }

    /// A conditional PUT (`If-None-Match: *`). Should an attempt fail after the server
    /// stored the object (the answer lost), the retry finds it existing: the blob then counts
    /// as created by this call when it holds exactly `bytes` (another process storing the same
    /// bytes first cannot be told apart, and needs not be: the store ends the same).
    fn put_if_absent(&self, name: &str, bytes: &[u8]) -> Result<bool, CheckpointError> {
        let s = &self.shared;
        let (key, url) = (s.key(name), s.blob_url(name));
        let payload = PutPayload::from(bytes.to_vec());
        let mut attempted = false;
        let answer = s.run("creating", &url, || {
            let retry = std::mem::replace(&mut attempted, true);
            let (key, payload) = (&key, payload.clone());
            async move {
                let opts = PutOptions { mode: PutMode::Create, ..PutOptions::default() };
                match s.store.put_opts(key, payload, opts).await {
                    Ok(_) => Ok(Some(true)),
                    Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {
                        Ok(if retry { None } else { Some(false) })
                    }
                    Err(e) => Err(e),
                }
            }
        })?;
        match answer {
            Some(created) => Ok(created),
            None => Ok(self.get(name)? == bytes),
        }
    }

    fn delete(&self, name: &str) -> Result<(), CheckpointError> {
        let s = &self.shared;
        let (key, url) = (s.key(name), s.blob_url(name));
        s.run("removing", &url, || async {
            match s.store.delete(&key).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(e),
            }
        })
    }

    fn location(&self) -> String {
        self.shared.url.clone()
    }
}

/// A blob of an [`ObjectCheckpointStore`] being written: its chunks, in memory until `commit`.
struct ObjectBlob {
    shared: Arc<Shared>,
    name: String,
    /// The blob's full parts of `part_size` bytes, front to back.
    parts: Vec<PutPayload>,
    /// The part being filled.
    current: PutPayloadMut,
}

impl BlobWriter for ObjectBlob {
    fn write(&mut self, mut chunk: &[u8]) -> Result<(), CheckpointError> {
        let part_size = self.shared.part_size;
        while !chunk.is_empty() {
            let room = part_size - self.current.content_length();
            let (now, rest) = chunk.split_at(room.min(chunk.len()));
            self.current.extend_from_slice(now);
            chunk = rest;
            if self.current.content_length() == part_size {
                self.parts.push(std::mem::take(&mut self.current).freeze());
            }
        }
        Ok(())
    }

    fn commit(mut self: Box<Self>) -> Result<(), CheckpointError> {
        let s = Arc::clone(&self.shared);
        let (key, url) = (s.key(&self.name), s.blob_url(&self.name));
        if !self.current.is_empty() || self.parts.is_empty() {
            self.parts.push(std::mem::take(&mut self.current).freeze());
        }
        if let [whole] = self.parts.as_slice() {
            return s.run("writing", &url, || s.store.put(&key, whole.clone())).map(|_| ());
        }
        // Every attempt is a whole multipart upload: a part that failed leaves a hole that
        // object_store cannot fill, so a failed upload is aborted and started over.
        let parts = &self.parts;
        s.run("writing (multipart)", &url, || async {
            let mut upload = s.store.put_multipart(&key).await?;
            for part in parts {
                if let Err(e) = upload.put_part(part.clone()).await {
                    // Best effort: an upload left behind is invisible (the module's docs).
                    let _ = upload.abort().await;
                    return Err(e);
                }
            }
            match upload.complete().await {
                Ok(_) => Ok(()),
                Err(e) => {
                    let _ = upload.abort().await;
                    Err(e)
                }
            }
        })
    }
}
