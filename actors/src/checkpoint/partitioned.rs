//! Checkpoints per input partition, for a pipeline whose Kafka consumer group several Eddy
//! processes share (`[source] shared_group`, issue 26).
//!
//! Each assigned input partition has a partition actor of its own, so an actor's state is
//! exactly its partition's. Each partition has a checkpoint folder of its own under the
//! pipeline's, [`folder_name`] (`partition-<topic>-<partition>`), holding what a one-actor
//! pipeline's checkpoints hold: per epoch `snapshot-<e>-00000` and `manifest-<e>`, whose source
//! offset is that partition's alone. A checkpoint of the run writes every partition's snapshot,
//! then every partition's manifest ([`Checkpointer::per_partition`]): a crash between two of
//! them leaves some partitions at the new epoch and some at the one before, each whole (its
//! state with its offset). A process opens (and, in a folder, locks) only the folders of the
//! partitions the group assigned it, so two processes never write one partition's checkpoints.
//!
//! Restoring a set of partitions ([`restore`]) restores each from its own newest usable
//! checkpoint and merges their manifests ([`merge`]): offsets of every partition, the largest
//! epoch (epochs only grow in each partition's folder, whichever process writes it next), and
//! the clock and watermark of the partition whose watermark is lowest, so that a partition that
//! comes from a process whose watermark was behind loses no record to a watermark it never had
//! (a record another partition's process would have dropped as late may then be kept).

use std::sync::Arc;

use eddy_engine::operator::Operator;

use super::{
    CheckpointError, CheckpointStore, Checkpointer, DriverState, FingerprintField, Manifest, SavedOffset, SnapshotMeta,
};
use crate::routing::Router;

/// The checkpoints of one input partition.
#[derive(Debug, Clone)]
pub struct PartitionCheckpoint {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Its checkpoints, in its own folder ([`folder_name`]) with one snapshot per epoch.
    pub checkpointer: Checkpointer,
}

/// The folder of `topic`'s partition `partition` under the pipeline's checkpoint folder. Topic
/// names are `[a-zA-Z0-9._-]` (Kafka's rule), so the name needs no escaping.
pub fn folder_name(topic: &str, partition: i32) -> String {
    format!("partition-{topic}-{partition:05}")
}

impl Checkpointer {
    /// Checkpoints of a shared group's run: partition actor `i` holds input partition
    /// `partitions[i]`, whose checkpoints get its snapshots and a manifest of its own.
    /// `store` is the pipeline's shared folder (not locked; [`Checkpointer::store`]).
    pub fn per_partition(
        store: Arc<dyn CheckpointStore>,
        pipeline: &str,
        fingerprint: Vec<FingerprintField>,
        partitions: Vec<PartitionCheckpoint>,
    ) -> Checkpointer {
        let keep = partitions.first().map_or(1, |p| p.checkpointer.keep);
        Checkpointer { store, pipeline: pipeline.to_string(), fingerprint, keep, partitions: Some(partitions.into()) }
    }
}

/// Partition actor `actor`'s snapshot, in its input partition's folder (as partition 0 of 1).
pub(super) fn write_snapshot(
    parts: &[PartitionCheckpoint],
    epoch: u64,
    actor: u32,
    state: &[u8],
) -> Result<SnapshotMeta, CheckpointError> {
    let part = parts.get(actor as usize).ok_or_else(|| CheckpointError::Encode {
        what: format!("the snapshot of partition actor {actor}"),
        why: format!("the run holds {} input partitions (a bug)", parts.len()),
    })?;
    let meta = part.checkpointer.write_snapshot(epoch, 0, 1, state)?;
    Ok(SnapshotMeta { partition: actor, ..meta })
}

/// Writes each input partition's manifest: `manifest`'s, with that partition's snapshot and
/// offset only.
pub(super) fn commit(parts: &[PartitionCheckpoint], manifest: &Manifest) -> Result<(), CheckpointError> {
    for (i, part) in parts.iter().enumerate() {
        let snapshot =
            manifest.snapshots.iter().find(|s| s.partition as usize == i).ok_or_else(|| CheckpointError::Encode {
                what: super::manifest_name(manifest.epoch),
                why: format!("no snapshot of partition actor {i} (a bug)"),
            })?;
        let own = Manifest {
            pipeline: manifest.pipeline.clone(),
            epoch: manifest.epoch,
            fingerprint: manifest.fingerprint.clone(),
            parallelism: 1,
            snapshots: vec![SnapshotMeta { partition: 0, ..snapshot.clone() }],
            source: manifest.source.as_ref().and_then(|s| own_offset(s, &part.topic, part.partition)),
            driver: manifest.driver.clone(),
            more_sources: Vec::new(),
        };
        part.checkpointer.commit(&own)?;
    }
    Ok(())
}

/// The part of `offset` that is `topic`'s partition `partition` (`None`: it has none).
fn own_offset(offset: &SavedOffset, topic: &str, partition: i32) -> Option<SavedOffset> {
    match offset {
        SavedOffset::Kafka(parts) => {
            let mine: Vec<_> = parts.iter().filter(|p| p.topic == topic && p.partition == partition).cloned().collect();
            (!mine.is_empty()).then_some(SavedOffset::Kafka(mine))
        }
        _ => None,
    }
}

/// Restores each of `parts` from its newest usable checkpoint ([`super::restore`] with one
/// actor): one operator per partition, in order (a new one for a partition without checkpoint),
/// and the merged manifest ([`merge`]; `None` when no partition had one).
///
/// # Errors
/// As [`super::restore`], for the first partition that fails.
pub fn restore(
    parts: &[PartitionCheckpoint],
    new_operator: &(dyn Fn() -> Box<dyn Operator> + Sync),
    router: &Router,
) -> Result<(Vec<Box<dyn Operator>>, Option<Manifest>), CheckpointError> {
    let mut operators = Vec::with_capacity(parts.len());
    let mut manifests = Vec::new();
    for part in parts {
        match super::restore(&part.checkpointer, 1, new_operator, router)? {
            Some(mut r) => {
                operators.push(r.operators.pop().unwrap_or_else(new_operator));
                manifests.push(r.manifest);
            }
            None => operators.push(new_operator()),
        }
    }
    Ok((operators, merge(manifests, parts.len())))
}

/// One manifest for a run over `parallelism` partitions restored from `manifests` (one per
/// restored partition): every offset, the largest epoch, and the driver state (clock,
/// watermark) of the one with the lowest watermark, its batch number moved to follow the
/// largest epoch. `None` when `manifests` is empty.
pub fn merge(manifests: Vec<Manifest>, parallelism: usize) -> Option<Manifest> {
    let epoch = manifests.iter().map(|m| m.epoch).max()?;
    let mut offsets = Vec::new();
    for m in &manifests {
        if let Some(SavedOffset::Kafka(parts)) = &m.source {
            offsets.extend(parts.iter().cloned());
        }
    }
    offsets.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    let lowest = manifests.iter().min_by_key(|m| watermark_of(&m.driver)).cloned()?;
    let driver = match lowest.driver {
        DriverState::MicroBatch { late, evict, last_processing_time, max_event_time, last_moved, .. } => {
            DriverState::MicroBatch {
                next_batch: epoch + 1,
                late,
                evict,
                last_processing_time,
                max_event_time,
                last_moved,
            }
        }
        other => other,
    };
    Some(Manifest {
        pipeline: lowest.pipeline,
        epoch,
        fingerprint: lowest.fingerprint,
        parallelism: parallelism as u32,
        snapshots: Vec::new(),
        source: (!offsets.is_empty()).then_some(SavedOffset::Kafka(offsets)),
        driver,
        more_sources: Vec::new(),
    })
}

/// What orders driver states by watermark: the largest event time seen (none: lowest), and in
/// micro-batch mode the eviction watermark first.
fn watermark_of(driver: &DriverState) -> (i64, i64) {
    match driver {
        DriverState::RealTime { max_event_time, .. } | DriverState::RealTimeSources { max_event_time, .. } => {
            (i64::MIN, max_event_time.unwrap_or(i64::MIN))
        }
        DriverState::MicroBatch { evict, max_event_time, .. } => (*evict, max_event_time.unwrap_or(i64::MIN)),
    }
}
