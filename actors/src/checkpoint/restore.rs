//! Restore on start: the newest complete checkpoint, its operators re-split to the new number of
//! partition actors.

use eddy_engine::operator::Operator;

use super::{CheckpointError, Checkpointer, LoadedSnapshot, Manifest, manifest};
use crate::routing::Router;

/// A restored checkpoint: its manifest and one operator per new partition actor.
#[derive(Debug)]
pub struct Restored {
    /// The manifest restored.
    pub manifest: Manifest,
    /// The operators, one per partition actor (in partition order), holding the groups of their
    /// key range.
    pub operators: Vec<Box<dyn Operator>>,
}

/// Loads the newest usable checkpoint for `parallelism` partition actors routed by `router`.
///
/// Newest first: a manifest that is missing, damaged, or whose snapshots are missing, damaged or
/// refused by the operator is skipped with a warning, and the one before is tried; manifests
/// newer than the one restored are deleted (their epochs are replayed and written again).
/// With the same parallelism each actor restores its own snapshot; otherwise each new actor
/// restores every old snapshot keeping only the groups of its key range
/// ([`Operator::restore_keeping`] with [`Router::hash_key`]: an operator may skip the other
/// groups without building them). Actors restore in parallel, one
/// thread each.
///
/// Returns `None` when there is no checkpoint (a first start).
///
/// # Errors
/// [`CheckpointError::Incompatible`] when the newest readable manifest was written by a
/// different query (its fingerprint differs); [`CheckpointError::NoUsable`] when manifests exist
/// but none can be restored; [`CheckpointError::Io`] when the store cannot be listed.
pub fn restore(
    ck: &Checkpointer,
    parallelism: usize,
    new_operator: &(dyn Fn() -> Box<dyn Operator> + Sync),
    router: &Router,
) -> Result<Option<Restored>, CheckpointError> {
    let epochs = ck.manifests()?;
    let mut reasons = Vec::new();
    for (i, &epoch) in epochs.iter().enumerate().rev() {
        let attempt = (|| {
            let m = ck.load_manifest(epoch)?;
            let changes = manifest::differences(&m.fingerprint, ck.fingerprint());
            if !changes.is_empty() {
                return Err(CheckpointError::Incompatible { location: ck.store().location(), epoch, changes });
            }
            let snapshots =
                m.snapshots.iter().map(|s| ck.load_snapshot(&m, s)).collect::<Result<Vec<_>, CheckpointError>>()?;
            let operators = build(&snapshots, parallelism, new_operator, router)?;
            Ok(Restored { manifest: m, operators })
        })();
        match attempt {
            Ok(r) => {
                for &newer in &epochs[i + 1..] {
                    tracing::warn!(epoch = newer, "deleting the unusable newer checkpoint");
                    ck.store().delete(&super::manifest_name(newer))?;
                }
                tracing::info!(
                    epoch,
                    from_parallelism = r.manifest.parallelism,
                    parallelism,
                    location = %ck.store().location(),
                    "restored checkpoint"
                );
                return Ok(Some(r));
            }
            Err(e @ CheckpointError::Incompatible { .. }) => return Err(e),
            Err(e) => {
                tracing::warn!(epoch, error = %e, "checkpoint unusable; falling back to the one before");
                reasons.push(format!("epoch {epoch}: {e}"));
            }
        }
    }
    if reasons.is_empty() {
        Ok(None)
    } else {
        Err(CheckpointError::NoUsable { location: ck.store().location(), reasons })
    }
}

/// One operator per new partition actor, from the old snapshots.
fn build(
    snapshots: &[LoadedSnapshot],
    parallelism: usize,
    new_operator: &(dyn Fn() -> Box<dyn Operator> + Sync),
    router: &Router,
) -> Result<Vec<Box<dyn Operator>>, CheckpointError> {
    let same = snapshots.len() == parallelism;
    let restore_one = |target: usize| -> Result<Box<dyn Operator>, CheckpointError> {
        let mut op = new_operator();
        for (j, s) in snapshots.iter().enumerate() {
            if same && j != target {
                continue;
            }
            let restored = if same {
                op.restore(s.state()?)
            } else {
                op.restore_keeping(s.state()?, &mut |k| router.partition_of(router.hash_key(k)).0 == target)
            };
            restored.map_err(|e| CheckpointError::Restore { name: s.name().to_string(), why: e.to_string() })?;
        }
        Ok(op)
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..parallelism).map(|t| scope.spawn(move || restore_one(t))).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(CheckpointError::Restore { name: "a snapshot".into(), why: "the operator panicked".into() })
                })
            })
            .collect()
    })
}
