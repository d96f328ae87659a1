//! The exchange between partition actors (DESIGN.md "The operator graph": an exchange edge),
//! micro-batch mode here, real-time mode in [`real_time`]: a chain whose stage is keyed otherwise than the one before it
//! ([`OperatorChain::split_at_exchange`]) runs the stages before the exchange for the keys its
//! partition actor owns by the source's routing, and the stages after it for the keys it owns by
//! the hash of the exchanged stage's key, with the same hash and key ranges as the source's
//! routing ([`Router`]), so a checkpoint re-splits the exchanged state as rows are routed.
//!
//! At the end of a micro-batch ([`Exchange::end_batch`]), each partition actor takes the records
//! that reached the exchange during the batch ([`OperatorChain::take_exchanged`]), keeps its own,
//! and sends every peer its records (in messages of at most [`EXCHANGE_CHUNK`] records) and then
//! an end-of-batch marker carrying the batch's eviction watermark, over one bounded channel per
//! receiving actor (every peer sends into it). The stages after the exchange take the records of
//! the batch as they arrive; they end the batch once the markers of every peer arrived (aligned,
//! as Flink aligns barriers on every input), with the minimum of the watermarks the markers carry
//! (in micro-batch mode every actor has the batch's watermarks, so the minimum is the batch's).
//! Only then does the actor end the batch at the sink and snapshot: nothing is in flight at a
//! checkpoint.
//!
//! **No deadlock with bounded channels.** An actor blocked sending to a full peer while that peer
//! is blocked sending to it would wait forever. So an actor never blocks on a send alone: while a
//! send waits, it also receives from its own channel ([`Select`] over both), handing what arrives
//! to its stages, so every channel keeps draining while its owner is exchanging. An actor waits
//! for markers only once it has sent everything; a peer not yet at the end of the batch gets
//! there, because the source sends the end of a batch to every actor before any record of the
//! next. A peer may be at most one batch ahead (it cannot finish a batch without this actor's
//! marker): its records of the next batch are kept until this actor gets there.
//!
//! A peer that stops (a failure) drops its [`Exchange`], which raises a shared flag: the others
//! stop waiting for it and fail instead of hanging.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Select, Sender, bounded};

use eddy_engine::operator::{OperatorChain, Output};
use eddy_engine::{Record, Timestamp};

use crate::routing::Router;

pub mod real_time;

/// Capacity of each partition actor's exchange channel, in messages.
pub const EXCHANGE_QUEUE: usize = 64;
/// The most records in one exchange message.
pub const EXCHANGE_CHUNK: usize = 256;
/// How often a waiting actor checks whether a peer stopped.
pub(crate) const ABORT_CHECK: Duration = Duration::from_millis(50);

/// A message across the exchange, tagged with its micro-batch.
#[derive(Debug)]
pub enum ToExchange {
    /// Records routed to the receiving actor.
    Records {
        /// The micro-batch.
        batch: u64,
        /// The records (the exchanged stage's input, after its steps).
        records: Vec<Record>,
    },
    /// The sender has sent every record of `batch` to the receiving actor.
    EndOfBatch {
        /// The micro-batch.
        batch: u64,
        /// The sender's eviction watermark of the batch.
        watermark: Timestamp,
    },
}

impl ToExchange {
    fn batch(&self) -> u64 {
        match self {
            ToExchange::Records { batch, .. } | ToExchange::EndOfBatch { batch, .. } => *batch,
        }
    }
}

/// Why an exchange failed (the run then stops with exit 1).
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// A peer stopped (its channel is gone, or it failed) before the batch was exchanged.
    #[error("exchange of micro-batch / epoch {batch}: partition actor {peer} stopped")]
    PeerGone {
        /// The micro-batch (real-time: the epoch).
        batch: u64,
        /// The peer, or this actor's own index when which peer failed is not known.
        peer: usize,
    },
    /// A message of a batch neither the current one nor the next (a bug).
    #[error("exchange of micro-batch / epoch {batch}: a message of micro-batch / epoch {got} arrived")]
    OutOfOrder {
        /// The micro-batch being exchanged (real-time: the epoch).
        batch: u64,
        /// The batch (epoch) the message named.
        got: u64,
    },
}

/// One partition actor's end of the exchange (see the module documentation).
#[derive(Debug)]
pub struct Exchange {
    me: usize,
    /// Each peer's channel by partition index; `None` at this actor's own index.
    peers: Vec<Option<Sender<ToExchange>>>,
    inbox: Receiver<ToExchange>,
    router: Router,
    /// Messages of the next batch, from peers already there.
    early: Vec<ToExchange>,
    abort: Arc<AtomicBool>,
    /// Set by [`Exchange::finish`]: dropping it then raises no failure.
    finished: bool,
    /// Sends that found the peer's channel full (and received while waiting).
    full_sends: u64,
    /// Records sent to other partition actors.
    rows_sent: u64,
}

/// The exchanges of `parallelism` partition actors (in partition order), routing by the hash of
/// `key_columns` of the exchanged records into `parallelism` key ranges.
pub fn exchanges(parallelism: usize, key_columns: &[usize]) -> Vec<Exchange> {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..parallelism).map(|_| bounded(EXCHANGE_QUEUE)).unzip();
    let abort = Arc::new(AtomicBool::new(false));
    rxs.into_iter()
        .enumerate()
        .map(|(me, inbox)| Exchange {
            me,
            peers: txs.iter().enumerate().map(|(p, tx)| (p != me).then(|| tx.clone())).collect(),
            inbox,
            router: Router::new(key_columns.to_vec(), parallelism),
            early: Vec::new(),
            abort: abort.clone(),
            finished: false,
            full_sends: 0,
            rows_sent: 0,
        })
        .collect()
}

/// What arrived of the current batch so far.
struct Arrived {
    markers: usize,
    watermark: Timestamp,
}

impl Exchange {
    /// Exchanges the records of micro-batch `batch` that reached `chain`'s exchange and runs
    /// them through the stages after it, rows of its last stage going to `out`; returns once
    /// every peer's records of the batch went through them (the caller then ends their batch,
    /// [`OperatorChain::end_exchanged`]), with the minimum of the peers' and `watermark` (this
    /// actor's eviction watermark of the batch).
    ///
    /// # Errors
    /// [`ExchangeError`] when a peer stopped, or a message arrived out of order; the batch is
    /// then incomplete and the actor must stop.
    pub fn end_batch(
        &mut self,
        batch: u64,
        watermark: Timestamp,
        chain: &mut OperatorChain,
        out: &mut Output,
    ) -> Result<Timestamp, ExchangeError> {
        let mut arrived = Arrived { markers: 0, watermark };
        // the messages of this batch that came while this actor was finishing the one before
        for m in std::mem::take(&mut self.early) {
            self.take(m, batch, chain, out, &mut arrived)?;
        }
        let n = self.peers.len();
        let mut outgoing: Vec<Vec<Record>> = (0..n).map(|_| Vec::new()).collect();
        for record in chain.take_exchanged() {
            let p = self.router.route(&record).0;
            if p == self.me {
                chain.on_exchanged(&record, out);
            } else {
                self.rows_sent += 1;
                outgoing[p].push(record);
            }
        }
        for (p, records) in outgoing.into_iter().enumerate() {
            if p == self.me {
                continue;
            }
            let mut records = records.into_iter().peekable();
            while records.peek().is_some() {
                let chunk: Vec<Record> = records.by_ref().take(EXCHANGE_CHUNK).collect();
                self.send(p, ToExchange::Records { batch, records: chunk }, batch, chain, out, &mut arrived)?;
            }
            self.send(p, ToExchange::EndOfBatch { batch, watermark }, batch, chain, out, &mut arrived)?;
        }
        while arrived.markers < n - 1 {
            match self.inbox.recv_timeout(ABORT_CHECK) {
                Ok(m) => self.take(m, batch, chain, out, &mut arrived)?,
                Err(RecvTimeoutError::Timeout) => self.check_peers(batch)?,
                Err(RecvTimeoutError::Disconnected) => return Err(ExchangeError::PeerGone { batch, peer: self.me }),
            }
        }
        Ok(arrived.watermark)
    }

    /// How many sends found a peer's channel full since this exchange was made (back-pressure
    /// between partition actors; each then received from its own channel while it waited).
    pub fn full_sends(&self) -> u64 {
        self.full_sends
    }

    /// How many records this actor sent to other partition actors since this exchange was made
    /// (those routed to itself stay on its thread).
    pub fn rows_sent(&self) -> u64 {
        self.rows_sent
    }

    /// The run ends normally (end of input): dropping this exchange is no failure.
    pub fn finish(&mut self) {
        self.finished = true;
    }

    /// Sends `msg` to peer `p`, receiving from this actor's own channel while the send waits
    /// (the module documentation says why).
    fn send(
        &mut self,
        p: usize,
        msg: ToExchange,
        batch: u64,
        chain: &mut OperatorChain,
        out: &mut Output,
        arrived: &mut Arrived,
    ) -> Result<(), ExchangeError> {
        let gone = ExchangeError::PeerGone { batch, peer: p };
        let Some(tx) = self.peers[p].clone() else { return Err(gone) };
        let mut msg = match tx.try_send(msg) {
            Ok(()) => return Ok(()),
            Err(crossbeam_channel::TrySendError::Full(m)) => m,
            Err(crossbeam_channel::TrySendError::Disconnected(_)) => return Err(gone),
        };
        self.full_sends += 1;
        let inbox = self.inbox.clone();
        loop {
            let mut sel = Select::new();
            let send_at = sel.send(&tx);
            let recv_at = sel.recv(&inbox);
            let op = match sel.select_timeout(ABORT_CHECK) {
                Ok(op) => op,
                Err(_) => {
                    self.check_peers(batch)?;
                    continue;
                }
            };
            if op.index() == send_at {
                return op.send(&tx, msg).map_err(|_| gone);
            }
            debug_assert_eq!(op.index(), recv_at);
            match op.recv(&inbox) {
                Ok(m) => self.take(m, batch, chain, out, arrived)?,
                Err(_) => return Err(ExchangeError::PeerGone { batch, peer: self.me }),
            }
            // the send was not selected: the message is still ours, try again
            msg = match tx.try_send(msg) {
                Ok(()) => return Ok(()),
                Err(crossbeam_channel::TrySendError::Full(m)) => m,
                Err(crossbeam_channel::TrySendError::Disconnected(_)) => return Err(gone),
            };
        }
    }

    /// Handles a message from a peer during batch `batch`.
    fn take(
        &mut self,
        m: ToExchange,
        batch: u64,
        chain: &mut OperatorChain,
        out: &mut Output,
        arrived: &mut Arrived,
    ) -> Result<(), ExchangeError> {
        match m.batch() {
            b if b == batch => match m {
                ToExchange::Records { records, .. } => {
                    for r in &records {
                        chain.on_exchanged(r, out);
                    }
                }
                ToExchange::EndOfBatch { watermark, .. } => {
                    arrived.markers += 1;
                    arrived.watermark = arrived.watermark.min(watermark);
                }
            },
            b if b == batch + 1 => self.early.push(m),
            got => return Err(ExchangeError::OutOfOrder { batch, got }),
        }
        Ok(())
    }

    /// Fails when a peer stopped (see the module documentation).
    fn check_peers(&self, batch: u64) -> Result<(), ExchangeError> {
        match self.abort.load(Ordering::SeqCst) {
            true => Err(ExchangeError::PeerGone { batch, peer: self.me }),
            false => Ok(()),
        }
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        if !self.finished {
            self.abort.store(true, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod test_support;

#[cfg(test)]
mod tests {
    //! Three partition actors' chains, each on its own thread, exchange enough rows to fill the
    //! bounded channels both ways; the rows must be those of a brute-force reference written
    //! from the query (per 10 s window sliding by 5 s: distinct auctions, and bids).

    use eddy_engine::Timestamp;
    use eddy_engine::operator::{BatchContext, Operator, Output};
    use eddy_engine::watermark::BatchWatermarks;

    use super::test_support::{PARTITIONS, S, bid, expected, joined, plan as test_plan, routed};
    use super::*;

    #[test]
    fn rows_crossing_full_channels_both_ways_give_the_rows_of_a_brute_force_reference() {
        let plan = test_plan("micro-batch");
        assert_eq!(plan.exchange(), Some(1));
        let bids: Vec<(i64, i64)> = (0..120_000).map(bid).collect();
        let expected = expected(&bids);

        let records = routed(&plan, &bids);
        let mut key = plan.new_operator();
        let key = key.as_chain_mut().expect("a chain").exchange_key().to_vec();
        let handles: Vec<_> = exchanges(PARTITIONS, &key)
            .into_iter()
            .zip(records)
            .map(|(mut x, records)| {
                let mut op = plan.new_operator();
                std::thread::spawn(move || {
                    let chain = op.as_chain_mut().unwrap();
                    assert!(chain.split_at_exchange());
                    let mut out = Output::default();
                    // batch 0: every bid; batch 1: no data, the watermark past every window
                    for (id, evict, records) in [(0, Timestamp::MIN, records), (1, Timestamp(100 * S), Vec::new())] {
                        // late input: the batch before's eviction watermark (none before batch 1)
                        let ctx = BatchContext {
                            batch_id: id,
                            watermarks: BatchWatermarks { late: Timestamp::MIN, evict },
                            processing_time: Timestamp(0),
                        };
                        chain.begin_batch(&ctx);
                        for r in &records {
                            chain.on_record(r, Timestamp::MIN, &mut out);
                        }
                        chain.end_batch(&mut out);
                        let w = x.end_batch(id, evict, chain, &mut out).unwrap();
                        assert_eq!(w, evict);
                        chain.end_exchanged(&mut out);
                    }
                    x.finish();
                    assert!(out.late.is_empty() && out.rejected.is_empty());
                    assert_eq!(chain.dropped_between_stages().total(), 0);
                    // three actors routing by hash: about two thirds of each one's rows go to peers
                    assert!(x.rows_sent() > 0, "an actor sent nothing across the exchange");
                    (out.rows, x.full_sends())
                })
            })
            .collect();
        let (got, full) = joined(handles);
        assert_eq!(got, expected);
        // the channels did fill (each actor sends some 27,000 rows to each peer, more than a
        // channel holds): the sends waited while receiving
        assert!(full > 0);
    }

    #[test]
    fn a_peer_that_stops_fails_the_exchange_instead_of_hanging_it() {
        let plan = test_plan("micro-batch");
        let mut op = plan.new_operator();
        let chain = op.as_chain_mut().unwrap();
        assert!(chain.split_at_exchange());
        let mut xs = exchanges(2, &[0]);
        // actor 1 stops (dropped without finishing) before the end of batch 0
        drop(xs.pop());
        let mut out = Output::default();
        let e = xs[0].end_batch(0, Timestamp::MIN, chain, &mut out).unwrap_err();
        assert!(matches!(e, ExchangeError::PeerGone { batch: 0, .. }), "{e}");
        // a finished exchange raises no failure when dropped
        let mut ys = exchanges(2, &[0]);
        for y in &mut ys {
            y.finish();
        }
        drop(ys.pop());
        assert!(!ys[0].abort.load(Ordering::SeqCst));
    }
}
