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

/// What [`restore`] gives: one operator per partition, in order, and the merged manifest.
pub type RestoredPartitions = (Vec<Box<dyn Operator>>, Option<Manifest>);

/// Restores each of `parts` from its newest usable checkpoint ([`super::restore()`] with one
/// actor): one operator per partition, in order (a new one for a partition without checkpoint),
/// and the merged manifest ([`merge`]; `None` when no partition had one).
///
/// # Errors
/// As [`super::restore()`], for the first partition that fails.
pub fn restore(
    parts: &[PartitionCheckpoint],
    new_operator: &(dyn Fn() -> Box<dyn Operator> + Sync),
    router: &Router,
) -> Result<RestoredPartitions, CheckpointError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::manifest::SavedKafkaOffset;
    use crate::checkpoint::store::FolderStore;
    use eddy_engine::plan::QueryPlan;
    use eddy_engine::value::Value;
    use eddy_engine::{Record, Timestamp};

    const PIPELINE: &str = r#"
name = "group-test"
mode = "real-time"
[source]
type = "files"
path = "in"
schema = "k STRING, v BIGINT, ts TIMESTAMP"
[query]
type = "rolling_window"
partition_by = ["k"]
order_by = "ts"
measures = [{ agg = "count", column = "v", alias = "n" }]
[sink]
type = "stdout"
"#;

    fn kafka(parts: &[(i32, i64)]) -> SavedOffset {
        SavedOffset::Kafka(
            parts.iter().map(|&(partition, next)| SavedKafkaOffset { topic: "t".into(), partition, next }).collect(),
        )
    }

    fn manifest(epoch: u64, source: SavedOffset, max_event_time: Option<i64>) -> Manifest {
        Manifest {
            pipeline: "group-test".into(),
            epoch,
            fingerprint: Vec::new(),
            parallelism: 1,
            snapshots: Vec::new(),
            source: Some(source),
            driver: DriverState::RealTime { now: epoch as i64, max_event_time, next_boundary: None },
            more_sources: Vec::new(),
        }
    }

    #[test]
    fn each_partition_gets_its_state_and_offset_and_a_restore_merges_them() {
        let p = eddy_engine::spec::parse_pipeline_str(PIPELINE).unwrap();
        let plan = QueryPlan::new(&p).unwrap();
        let fingerprint = super::super::manifest::fingerprint(&p);
        let dir = tempfile::tempdir().unwrap();
        let part = |n: i32| PartitionCheckpoint {
            topic: "t".into(),
            partition: n,
            checkpointer: Checkpointer::new(
                Arc::new(FolderStore::open(&dir.path().join(folder_name("t", n))).unwrap()),
                "group-test",
                fingerprint.clone(),
                2,
            ),
        };
        let parts = vec![part(3), part(6)];
        let shared = Arc::new(FolderStore::open_shared(dir.path()).unwrap());
        let ck = Checkpointer::per_partition(shared, "group-test", fingerprint.clone(), parts.clone());
        // actor 0 holds partition 3 (keys a, b), actor 1 partition 6 (key c)
        let mut ops: Vec<Box<dyn Operator>> = vec![plan.new_operator(), plan.new_operator()];
        let mut out = eddy_engine::operator::Output::default();
        let rec =
            |k: &str, t: i64| Record::new(vec![Value::Str(k.into()), Value::Long(1), Value::Timestamp(Timestamp(t))]);
        for (actor, k, t) in [(0, "a", 1), (0, "b", 2), (1, "c", 3), (0, "a", 4)] {
            ops[actor].on_record(&rec(k, t), Timestamp::MIN, &mut out);
        }
        let snapshots =
            ops.iter().enumerate().map(|(i, op)| ck.write_snapshot(4, i as u32, 2, &op.snapshot()).unwrap()).collect();
        let m = Manifest {
            pipeline: "group-test".into(),
            epoch: 4,
            fingerprint: fingerprint.clone(),
            parallelism: 2,
            snapshots,
            source: Some(kafka(&[(3, 10), (6, 20)])),
            driver: DriverState::RealTime { now: 9, max_event_time: Some(4), next_boundary: None },
            more_sources: Vec::new(),
        };
        ck.commit(&m).unwrap();

        // each partition's folder has its own manifest with its own offset only
        let own = parts[1].checkpointer.load_manifest(4).unwrap();
        assert_eq!(own.parallelism, 1);
        assert_eq!(own.source, Some(kafka(&[(6, 20)])));
        // a process that is assigned partition 6 alone restores key c only
        let router = Router::new(plan.routing_columns(), 1);
        let new_operator = || plan.new_operator();
        let (alone, merged) = restore(&parts[1..], &new_operator, &router).unwrap();
        assert_eq!(alone.len(), 1);
        assert_eq!(alone[0].state_len(), 1, "key c only");
        assert_eq!(merged.unwrap().source, Some(kafka(&[(6, 20)])));
        // both, in a new process: each actor its partition's keys, offsets of both
        let (both, merged) = restore(&parts, &new_operator, &router).unwrap();
        assert_eq!(both.iter().map(|o| o.state_len()).collect::<Vec<_>>(), vec![2, 1]);
        let merged = merged.unwrap();
        assert_eq!((merged.epoch, merged.parallelism), (4, 2));
        assert_eq!(merged.source, Some(kafka(&[(3, 10), (6, 20)])));
    }

    #[test]
    fn merge_takes_every_offset_the_largest_epoch_and_the_lowest_watermark() {
        let merged =
            merge(vec![manifest(7, kafka(&[(0, 5)]), Some(100)), manifest(12, kafka(&[(1, 9)]), Some(40))], 2).unwrap();
        assert_eq!(merged.epoch, 12);
        assert_eq!(merged.source, Some(kafka(&[(0, 5), (1, 9)])));
        assert_eq!(merged.driver, DriverState::RealTime { now: 12, max_event_time: Some(40), next_boundary: None });
        assert!(merge(Vec::new(), 2).is_none());
    }
}
