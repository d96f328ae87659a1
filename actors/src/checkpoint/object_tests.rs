//! [`ObjectCheckpointStore`] against a real S3 server (moto, started per test on a free port:
//! `tests/common/moto.rs`); each test is skipped, saying so, when moto is not installed and `CI`
//! is unset.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use super::CheckpointError;
use super::object::{ObjectCheckpointStore, ObjectStoreOptions};
use super::store::CheckpointStore;

#[path = "../../../tests/common/moto.rs"]
mod moto;
use moto::Moto;

/// The store at `url` on `moto`'s server.
fn open(moto: &Moto, url: &str) -> ObjectCheckpointStore {
    ObjectCheckpointStore::open_s3(url, ObjectStoreOptions { s3: moto.options(), ..ObjectStoreOptions::default() })
        .unwrap()
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

#[test]
fn blobs_round_trip_and_are_invisible_until_committed() {
    let Some(moto) = Moto::start_or_skip("blobs_round_trip_and_are_invisible_until_committed") else { return };
    let s = open(&moto, "s3://eddy/ck/pipeline");
    assert_eq!(s.location(), "s3://eddy/ck/pipeline");
    assert!(s.list().unwrap().is_empty());
    assert!(matches!(s.get("a"), Err(CheckpointError::Missing { .. })));
    s.put("a", &[b"he", b"llo"]).unwrap();
    assert_eq!(s.get("a").unwrap(), b"hello");
    s.put("a", &[b"again"]).unwrap();
    assert_eq!(s.get("a").unwrap(), b"again");

    let mut w = s.create("a").unwrap();
    w.write(b"in ").unwrap();
    w.write(b"chunks").unwrap();
    assert_eq!(s.get("a").unwrap(), b"again", "the old content until commit");
    w.commit().unwrap();
    assert_eq!(s.get("a").unwrap(), b"in chunks");

    let mut w = s.create("b").unwrap();
    w.write(b"half").unwrap();
    assert!(matches!(s.get("b"), Err(CheckpointError::Missing { .. })), "not visible before commit");
    drop(w);
    assert!(matches!(s.get("b"), Err(CheckpointError::Missing { .. })), "an abandoned blob is never visible");
    assert_eq!(s.list().unwrap(), vec!["a".to_string()]);

    s.put("empty", &[]).unwrap();
    assert_eq!(s.get("empty").unwrap(), b"");
    s.delete("a").unwrap();
    s.delete("a").unwrap();
    assert!(matches!(s.get("a"), Err(CheckpointError::Missing { .. })));
    assert_eq!(s.list().unwrap(), vec!["empty".to_string()]);
}

#[test]
fn a_blob_larger_than_a_part_is_one_multipart_upload_visible_at_commit() {
    let Some(moto) = Moto::start_or_skip("a_blob_larger_than_a_part_is_one_multipart_upload_visible_at_commit") else {
        return;
    };
    let part_size = 5 << 20;
    let options = ObjectStoreOptions { s3: moto.options(), part_size, ..ObjectStoreOptions::default() };
    let s = ObjectCheckpointStore::open_s3("s3://eddy/big", options).unwrap();
    // 2 full parts and a short last one, written in chunks that straddle the part boundaries
    let blob: Vec<u8> = (0..2 * part_size + 12_345).map(|i| (i * 7 % 251) as u8).collect();
    let mut w = s.create("snapshot").unwrap();
    for chunk in blob.chunks(1_000_003) {
        w.write(chunk).unwrap();
    }
    assert!(s.list().unwrap().is_empty(), "nothing visible before commit");
    w.commit().unwrap();
    assert_eq!(s.list().unwrap(), vec!["snapshot".to_string()]);
    assert!(s.get("snapshot").unwrap() == blob, "the blob reads back whole");
}

#[test]
fn put_if_absent_lets_exactly_one_of_two_racing_stores_create_a_blob() {
    let Some(moto) = Moto::start_or_skip("put_if_absent_lets_exactly_one_of_two_racing_stores_create_a_blob") else {
        return;
    };
    const NAMES: usize = 20;
    let stores = [Arc::new(open(&moto, "s3://eddy/shared")), Arc::new(open(&moto, "s3://eddy/shared"))];
    let barrier = Arc::new(Barrier::new(2));
    let threads: Vec<_> = stores
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (s, barrier) = (Arc::clone(s), Arc::clone(&barrier));
            std::thread::spawn(move || {
                (0..NAMES)
                    .map(|n| {
                        barrier.wait();
                        s.put_if_absent(&format!("fingerprint-{n}"), format!("store {i}").as_bytes()).unwrap()
                    })
                    .collect::<Vec<bool>>()
            })
        })
        .collect();
    let won: Vec<Vec<bool>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    for (n, (&first, &second)) in won[0].iter().zip(&won[1]).enumerate() {
        assert!(first != second, "fingerprint-{n}: exactly one store creates it ({first} / {second})");
        let winner = if first { 0 } else { 1 };
        let content = stores[1 - winner].get(&format!("fingerprint-{n}")).unwrap();
        assert_eq!(content, format!("store {winner}").as_bytes(), "fingerprint-{n} holds the winner's bytes");
        assert!(!stores[winner].put_if_absent(&format!("fingerprint-{n}"), b"later").unwrap(), "created only once");
    }
    assert_eq!(stores[0].list().unwrap().len(), NAMES);
}

#[test]
fn a_store_lists_only_the_blobs_directly_under_its_prefix() {
    let Some(moto) = Moto::start_or_skip("a_store_lists_only_the_blobs_directly_under_its_prefix") else { return };
    let pipeline = open(&moto, "s3://eddy/ck/p");
    let sub = open(&moto, "s3://eddy/ck/p/partition-0");
    let sibling = open(&moto, "s3://eddy/ck/p2");
    let parent = open(&moto, "s3://eddy/ck");
    pipeline.put("manifest-1", &[b"m"]).unwrap();
    pipeline.put("snapshot-1-0", &[b"s"]).unwrap();
    sub.put("manifest-1", &[b"sub"]).unwrap();
    sibling.put("manifest-9", &[b"x"]).unwrap();
    parent.put("top", &[b"t"]).unwrap();
    assert_eq!(sorted(pipeline.list().unwrap()), vec!["manifest-1".to_string(), "snapshot-1-0".to_string()]);
    assert_eq!(sub.list().unwrap(), vec!["manifest-1".to_string()]);
    assert_eq!(sibling.list().unwrap(), vec!["manifest-9".to_string()]);
    assert_eq!(parent.list().unwrap(), vec!["top".to_string()]);
    assert_eq!(pipeline.get("manifest-1").unwrap(), b"m", "the sub-store's blob of the same name is its own");
    pipeline.delete("manifest-1").unwrap();
    assert_eq!(sub.get("manifest-1").unwrap(), b"sub", "deleting a blob leaves the sub-store's alone");
}

#[test]
fn an_unreachable_store_fails_after_its_bound_naming_the_store() {
    // A closed port, no moto needed: every connection is refused.
    let endpoint = format!("http://127.0.0.1:{}", moto::free_port());
    let s3 = moto::env_for(&endpoint).into_iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
    let bound = Duration::from_millis(1500);
    let options = ObjectStoreOptions { s3, unreachable_timeout: bound, ..ObjectStoreOptions::default() };
    let s = ObjectCheckpointStore::open_s3("s3://eddy/ck/unreachable", options).unwrap();
    type Op<'a> = (&'a str, Box<dyn Fn() -> Result<(), CheckpointError> + 'a>);
    let ops: Vec<Op<'_>> = vec![
        ("put", Box::new(|| s.put("manifest-1", &[b"m"]))),
        ("get", Box::new(|| s.get("manifest-1").map(drop))),
        ("list", Box::new(|| s.list().map(drop))),
        ("put_if_absent", Box::new(|| s.put_if_absent("fingerprint", b"f").map(drop))),
        ("delete", Box::new(|| s.delete("manifest-1"))),
    ];
    for (op, run) in ops {
        let started = Instant::now();
        let err = run().unwrap_err();
        let took = started.elapsed();
        let CheckpointError::Unreachable { location, attempts, .. } = &err else {
            panic!("{op}: expected Unreachable, got {err}")
        };
        assert_eq!(location, "s3://eddy/ck/unreachable", "{op}");
        assert!(*attempts >= 3, "{op}: retried with backoff ({attempts} attempts)");
        assert!(took >= bound && took < bound + Duration::from_secs(5), "{op}: gave up after {took:?}");
        let message = err.to_string();
        assert!(
            message.contains("the checkpoint store s3://eddy/ck/unreachable is unreachable")
                && message.contains("EDDY_CHECKPOINT_UNREACHABLE_TIMEOUT_MS"),
            "{op}: {message}"
        );
    }
}

#[test]
fn a_url_that_is_no_s3_prefix_is_refused_at_open() {
    for url in ["s3://", "s3:///ck", "s3://eddy/a//b", "gs://eddy/ck"] {
        let err = ObjectCheckpointStore::open_s3(url, ObjectStoreOptions::default()).unwrap_err();
        assert!(matches!(err, CheckpointError::BadLocation { .. }), "{url}: {err}");
    }
    let small = ObjectStoreOptions { part_size: 1 << 20, ..ObjectStoreOptions::default() };
    let err = ObjectCheckpointStore::open_s3("s3://eddy/ck", small).unwrap_err();
    assert!(err.to_string().contains("5 MiB"), "{err}");
}
