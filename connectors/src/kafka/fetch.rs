//! [`FetchQueue`]: the messages of the source's partitions on a librdkafka queue of their own,
//! read in batches (`rd_kafka_consume_batch_queue`), apart from the consumer queue's events.
//!
//! Why a queue of its own: rdkafka's `BaseConsumer::poll` hands out one message per call through
//! librdkafka's event API (an event object, an `Arc`, a clock read and a queue lock per message;
//! bench/results/kafka-throughput.md). Reading the consumer queue itself in batches is not
//! possible: that call serves the other operations of the queue on its own, and without a
//! rebalance callback (rdkafka uses events) librdkafka answers a rebalance with a forced unassign
//! and drops the statistics (`rd_kafka_poll_cb`), while the source's context needs both
//! (rebalances deferred by a shared group, consumer lag). So each partition's fetch queue is
//! forwarded here (`rd_kafka_queue_forward`) before the partition is assigned: messages and
//! per-partition consumer errors come here, events stay on the consumer queue, which the source
//! still polls.
//!
//! Forwarding and librdkafka: when a partition's fetch stops (revoked, unassigned) librdkafka
//! clears its queue's forward, and a fetch started later for a queue the application forwarded
//! once is not forwarded to the consumer queue (`RD_KAFKA_Q_F_FWD_APP`): its messages wait on the
//! partition's own queue. A partition assigned again while its stop is still being processed can
//! thus lose the forward set just before the assignment; [`FetchQueue::refresh`] forwards every
//! partition forwarded once again (the source calls it every [`REFRESH_EVERY`]), which moves the
//! waiting messages here in order (`rd_kafka_q_fwd_set0` appends them to the new destination):
//! nothing is lost or reordered, at worst delayed by [`REFRESH_EVERY`].
//!
//! Lifetime: the queue must be destroyed before the client (`rd_kafka_destroy` waits for what
//! refers to it): [`FetchingConsumer`] closes it before the consumer drops.
#![allow(unsafe_code)] // librdkafka's C API, each call with its SAFETY note

use std::ffi::{CStr, CString};
use std::ops::Deref;
use std::ptr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::Duration;

use rdkafka::bindings as rd;
use rdkafka::consumer::{BaseConsumer, Consumer as _};

use super::context::SourceContext;

/// How often the source forwards the partitions again ([`FetchQueue::refresh`]).
pub(crate) const REFRESH_EVERY: Duration = Duration::from_millis(100);

/// The queue the source reads messages from; null before [`FetchQueue::open`] and after
/// [`FetchQueue::close`] (then nothing is forwarded, and messages stay on the consumer queue).
#[derive(Debug, Default)]
pub(crate) struct FetchQueue {
    queue: AtomicPtr<rd::rd_kafka_queue_t>,
    /// A handle of the consumer queue (events), for its length ([`FetchQueue::events_waiting`]).
    events: AtomicPtr<rd::rd_kafka_queue_t>,
    /// Every partition forwarded once, for [`FetchQueue::refresh`].
    forwarded: Mutex<Vec<(CString, i32)>>,
}

impl FetchQueue {
    /// Creates the queue on the client `rk` (once; later calls do nothing).
    pub fn open(&self, rk: *mut rd::rd_kafka_t) {
        if !self.queue.load(Ordering::Acquire).is_null() {
            return;
        }
        // SAFETY: `rk` is a live client (the caller's consumer); the queue is destroyed by
        // `close`, before the client.
        let q = unsafe { rd::rd_kafka_queue_new(rk) };
        if self.queue.compare_exchange(ptr::null_mut(), q, Ordering::AcqRel, Ordering::Acquire).is_err() {
            // SAFETY: `q` was just created and is referred to by nothing else.
            unsafe { rd::rd_kafka_queue_destroy(q) };
            return;
        }
        // SAFETY: as above; the handle (null without a group) is destroyed by `close`.
        self.events.store(unsafe { rd::rd_kafka_queue_get_consumer(rk) }, Ordering::Release);
    }

    /// How many operations (events, and messages not forwarded here) wait on the consumer
    /// queue; 16 when unknown (a consumer without a group: polled that often).
    pub fn events_waiting(&self) -> usize {
        let q = self.events.load(Ordering::Acquire);
        if q.is_null() {
            return 16;
        }
        // SAFETY: `q` is a live queue handle until `close`, which the caller's borrow prevents.
        unsafe { rd::rd_kafka_queue_length(q) }
    }

    /// Destroys the queue (messages still on it are dropped: the consumer is going away).
    pub fn close(&self) {
        let e = self.events.swap(ptr::null_mut(), Ordering::AcqRel);
        if !e.is_null() {
            // SAFETY: `e` came from `rd_kafka_queue_get_consumer`, destroyed once (the swap).
            unsafe { rd::rd_kafka_queue_destroy(e) };
        }
        let q = self.queue.swap(ptr::null_mut(), Ordering::AcqRel);
        if !q.is_null() {
            // SAFETY: `q` came from `rd_kafka_queue_new`, and the swap makes this the only
            // destroy; the client is still alive ([`FetchingConsumer`]'s drop runs before it).
            unsafe { rd::rd_kafka_queue_destroy(q) };
        }
    }

    /// Forwards the fetch queue of each of `partitions` (topic, partition) of the client `rk`
    /// here. Call before assigning them. A partition librdkafka does not know yet is skipped: its
    /// messages then come through the consumer queue, as without this queue.
    pub fn forward<'a>(&self, rk: *mut rd::rd_kafka_t, partitions: impl IntoIterator<Item = (&'a str, i32)>) {
        let q = self.queue.load(Ordering::Acquire);
        if q.is_null() {
            return;
        }
        let mut forwarded = self.forwarded.lock().unwrap_or_else(|p| p.into_inner());
        for (topic, partition) in partitions {
            let Ok(name) = CString::new(topic) else { continue };
            if forward_one(rk, q, &name, partition)
                && !forwarded.iter().any(|(t, p)| *p == partition && t.as_c_str() == name.as_c_str())
            {
                forwarded.push((name, partition));
            }
        }
    }

    /// Forwards every partition forwarded once again: messages of a partition whose forward a
    /// fetch stop cleared (module docs) move here, in order.
    pub fn refresh(&self, rk: *mut rd::rd_kafka_t) {
        let q = self.queue.load(Ordering::Acquire);
        if q.is_null() {
            return;
        }
        let forwarded = self.forwarded.lock().unwrap_or_else(|p| p.into_inner());
        for (name, partition) in forwarded.iter() {
            forward_one(rk, q, name, *partition);
        }
    }

    /// Takes up to `max` messages, waiting at most `wait` (whole
    /// milliseconds) for the first; calls `each` on every one, in queue order, then hands them
    /// back to librdkafka. Returns how many were taken (0 when the queue is closed).
    pub fn consume(
        &self,
        buf: &mut MessageBuf,
        max: usize,
        wait: Duration,
        mut each: impl FnMut(&Fetched<'_>),
    ) -> usize {
        let q = self.queue.load(Ordering::Acquire);
        if q.is_null() || max == 0 {
            return 0;
        }
        // whole milliseconds, rounded up (a wait under 1 ms is no busy loop)
        let wait_ms = i32::try_from(wait.as_micros().div_ceil(1000)).unwrap_or(i32::MAX);
        buf.ptrs.clear();
        buf.ptrs.reserve(max);
        let base = buf.ptrs.as_mut_ptr();
        let take = |ms: i32, at: usize, size: usize| -> usize {
            // SAFETY: `q` is the open queue (closed only when the consumer drops, which the
            // caller's borrow of it prevents); the array has room for `size` pointers from `at`
            // (`at + size <= max <= capacity`).
            let n = unsafe { rd::rd_kafka_consume_batch_queue(q, ms, base.add(at), size) };
            usize::try_from(n).unwrap_or(0)
        };
        // What is at hand first; else a wait for one message (`rd_kafka_consume_batch_queue`
        // waits until the whole batch is full or the time is up), then what came with it.
        let mut taken = take(0, 0, max);
        if taken == 0 && wait_ms > 0 {
            taken = take(wait_ms, 0, 1);
            if taken == 1 && max > 1 {
                taken += take(0, 1, max - 1);
            }
        }
        // SAFETY: librdkafka wrote `taken` message pointers from the start.
        unsafe { buf.ptrs.set_len(taken) };
        // Every message is destroyed at the end, also when `each` panics (`buf` owns them until
        // then): the topic handles (`rkt`) of the batch stay valid, so their addresses identify
        // topics for the whole batch.
        let guard = Batch(&mut buf.ptrs);
        for &m in guard.0.iter() {
            // SAFETY: `m` is a message librdkafka handed out and not yet destroyed; its payload
            // (when not null) holds `len` bytes while the message lives, i.e. during `each`.
            let fetched = unsafe {
                let m = &*m;
                Fetched {
                    err: m.err,
                    rkt: m.rkt as usize,
                    partition: m.partition,
                    offset: m.offset,
                    payload: if m.payload.is_null() {
                        &[]
                    } else {
                        std::slice::from_raw_parts(m.payload as *const u8, m.len)
                    },
                    message: m,
                }
            };
            each(&fetched);
        }
        drop(guard);
        taken
    }
}

/// Forwards the fetch queue of `topic`/`partition` to `q`; false when librdkafka does not know
/// the partition.
fn forward_one(rk: *mut rd::rd_kafka_t, q: *mut rd::rd_kafka_queue_t, topic: &CStr, partition: i32) -> bool {
    // SAFETY: `rk` is a live client, `topic` a C string; the partition queue handle returned is
    // destroyed here (the forward keeps its own reference to `q`).
    unsafe {
        let pq = rd::rd_kafka_queue_get_partition(rk, topic.as_ptr(), partition);
        if pq.is_null() {
            return false;
        }
        rd::rd_kafka_queue_forward(pq, q);
        rd::rd_kafka_queue_destroy(pq);
    }
    true
}

/// The messages of one [`FetchQueue::consume`], destroyed when dropped.
struct Batch<'a>(&'a mut Vec<*mut rd::rd_kafka_message_t>);

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        for m in self.0.drain(..) {
            // SAFETY: each pointer is a message handed out by `rd_kafka_consume_batch_queue`,
            // destroyed once (drained).
            unsafe { rd::rd_kafka_message_destroy(m) };
        }
    }
}

/// The pointer array [`FetchQueue::consume`] fills, kept from call to call (no allocation per
/// batch). It holds no message between calls.
#[derive(Debug, Default)]
pub(crate) struct MessageBuf {
    ptrs: Vec<*mut rd::rd_kafka_message_t>,
}

// SAFETY: the array is empty between calls of `FetchQueue::consume` (its `Batch` guard drains it),
// so moving it to another thread moves no message.
unsafe impl Send for MessageBuf {}

/// One message of a batch, borrowed from librdkafka for the call of `each`.
#[derive(Debug)]
pub(crate) struct Fetched<'a> {
    /// `RD_KAFKA_RESP_ERR_NO_ERROR` for a message; else a consumer error (the payload is its text).
    pub err: rd::rd_kafka_resp_err_t,
    /// The topic handle's address: the same topic in one batch has the same (see
    /// [`Fetched::topic`]).
    pub rkt: usize,
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// The value; empty for a message without one (a tombstone).
    pub payload: &'a [u8],
    message: &'a rd::rd_kafka_message_t,
}

impl Fetched<'_> {
    /// The topic's name (empty when librdkafka gives none or it is not UTF-8).
    pub fn topic(&self) -> &str {
        if self.message.rkt.is_null() {
            return "";
        }
        // SAFETY: `rkt` is the topic handle of a live message; its name is a C string that
        // lives as long as the handle.
        unsafe { CStr::from_ptr(rd::rd_kafka_topic_name(self.message.rkt)) }.to_str().unwrap_or("")
    }
}

/// A consumer whose [`FetchQueue`] is closed before it drops (the queue must go before the
/// client: module docs).
pub(crate) struct FetchingConsumer(BaseConsumer<SourceContext>);

impl FetchingConsumer {
    /// Wraps `consumer` and opens its fetch queue.
    pub fn new(consumer: BaseConsumer<SourceContext>) -> FetchingConsumer {
        consumer.context().fetch.open(consumer.client().native_ptr());
        FetchingConsumer(consumer)
    }

    /// The client handle, for [`FetchQueue`]'s calls.
    pub fn native(&self) -> *mut rd::rd_kafka_t {
        self.0.client().native_ptr()
    }
}

impl std::fmt::Debug for FetchingConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchingConsumer").finish_non_exhaustive()
    }
}

impl Deref for FetchingConsumer {
    type Target = BaseConsumer<SourceContext>;

    fn deref(&self) -> &BaseConsumer<SourceContext> {
        &self.0
    }
}

impl Drop for FetchingConsumer {
    fn drop(&mut self) {
        self.0.context().fetch.close();
    }
}
