//! S3-compatible object stores (`s3://bucket/prefix`) configured from the environment, one
//! convention for every part of Eddy that writes to one: the Delta sink's `s3://` tables
//! (`crate::delta`, with the `delta` feature) and `s3://` checkpoints (eddy-actors' `s3`
//! feature).
//!
//! The store is object_store's own S3 client ([`AmazonS3Builder::from_env`]): the endpoint,
//! region and credentials come from the `AWS_*` environment variables, e.g. `AWS_ENDPOINT_URL`
//! (or `AWS_ENDPOINT`), `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_SESSION_TOKEN`, and `AWS_ALLOW_HTTP=true` for a plain-HTTP endpoint (a local test
//! server). Conditional puts (`PutMode::Create`) are sent as `If-None-Match: *`, which S3 and
//! moto honour: of two writers creating one key, exactly one succeeds.

use std::collections::HashMap;

/// The object_store crate this module's stores come from, for the callers that use their API.
pub use object_store;
use object_store::RetryConfig;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey, S3ConditionalPut};

/// The builder of the store of `url` (`s3://bucket[/prefix]`: only the bucket is taken from it;
/// the prefix is the caller's to apply), from the `AWS_*` environment variables and then
/// `options` (object_store's S3 keys, e.g. `aws_endpoint_url`, `aws_allow_http`, in any case;
/// unknown keys are ignored), with conditional puts and `retry` as its retry policy; nothing is
/// requested yet. [`AmazonS3Builder::build`] reports a URL or option it cannot use.
pub fn builder_from_env(url: &str, retry: RetryConfig, options: &HashMap<String, String>) -> AmazonS3Builder {
    let mut builder =
        AmazonS3Builder::from_env().with_url(url).with_conditional_put(S3ConditionalPut::ETagMatch).with_retry(retry);
    for (key, value) in options {
        if let Ok(key) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
            builder = builder.with_config(key, value);
        }
    }
    builder
}
