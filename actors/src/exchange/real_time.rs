//! The exchange between partition actors in real-time mode (DESIGN.md "The operator graph": an
//! exchange edge; SEMANTICS.md "Several stateful operators (chained)", real-time): the rows that
//! reach a split chain's exchange ([`OperatorChain::take_exchanged`]) go to the partition actor
//! owning their key as they are emitted, with the same hash and key ranges as the micro-batch
//! exchange ([`super`]) and over channels of the same bound ([`EXCHANGE_QUEUE`]).
//!
//! **Rows.** After each message it handles, a partition actor routes what reached the exchange
//! ([`RealTimeExchange::route`]): its own rows go at once to its stages after the exchange, a
//! peer's into a buffer sent as soon as it holds [`EXCHANGE_CHUNK`] records. Every buffer is
//! sent ([`RealTimeExchange::flush`]) whenever the actor's input runs empty, a watermark or a
//! barrier passes, and at the end of the input: a row waits at most until then.
//!
//! **Watermarks.** A flush ends each peer's message with the actor's watermark at the exchange
//! ([`OperatorChain::exchange_watermark`]), sent after the rows it finalised (the chain's
//! real-time rule: a stage forwards a watermark only after emitting what it finalised; a
//! channel keeps one sender's messages in order). The stages after the exchange move to the
//! minimum over every actor's last watermark, this actor's own included
//! ([`OperatorChain::advance_exchanged`]), so a row is never late there because of the watermark
//! that finalised it upstream.
//!
//! **Barriers (aligned, as Flink's aligned checkpoints).** Every message is tagged with the
//! sender's epoch. At the barrier closing an epoch ([`RealTimeExchange::barrier`]), the actor
//! flushes, sends every peer a barrier marker, and takes the peers' messages until every peer's
//! marker of that epoch arrived; a message of a peer already past the barrier (tagged with a
//! later epoch) is kept aside and handed to the stages only after the snapshot is taken
//! ([`RealTimeExchange::resume`]). So the snapshot holds exactly the rows of the epochs it
//! closes and nothing of that epoch is in flight: a restore, at any parallelism, re-sends from
//! the sources what came after. The end of the input is aligned the same way
//! ([`RealTimeExchange::end`]).
//!
//! **No deadlock with bounded channels** (as in micro-batch mode): an actor never blocks on a
//! send alone. While a send waits, the actor receives from its own channel and hands what
//! arrives to its stages after the exchange (or keeps it aside), so every channel keeps
//! draining while its owner sends. Handling a received message never sends anything (the stages
//! after the exchange reach no second exchange), so these waits do not nest. An actor waits for
//! markers only once it has sent all of its own; a peer that has not reached that barrier yet
//! gets there, because the source sends a barrier to every partition actor before anything of
//! the next epoch, and until then the peer only processes its input and sends (receiving while
//! it waits). A peer is at most one barrier ahead (it cannot pass the next without this actor's
//! marker); what it sends meanwhile, kept aside here, is bounded by the input the source could
//! queue before blocking on this actor's full input channel (the source broadcasts every
//! watermark move, so that channel fills while this actor waits). A peer that stops (a
//! failure) raises a shared flag: the others fail instead of waiting for it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_channel::{Receiver, RecvTimeoutError, Select, Sender, TrySendError, bounded};

use eddy_engine::operator::{OperatorChain, Output};
use eddy_engine::{Record, Timestamp};

use super::{ABORT_CHECK, EXCHANGE_CHUNK, EXCHANGE_QUEUE, ExchangeError};
use crate::routing::Router;

/// A message across the real-time exchange, tagged with the sender's epoch (the one its next
/// barrier closes).
#[derive(Debug)]
pub enum ToPeer {
    /// Records routed to the receiving actor, then the sender's watermark at the exchange.
    Rows {
        /// The sender's epoch.
        epoch: u64,
        /// The sending partition actor.
        from: usize,
        /// The records (the exchanged stage's input, after its steps), in emission order.
        records: Vec<Record>,
        /// The sender's watermark at the exchange once these records are in
        /// ([`Timestamp::MIN`]: no news).
        watermark: Timestamp,
        /// The processing time at which the sender's watermark at the exchange took that value
        /// (kept when an expression reads the processing time, [`RealTimeExchange::time_rows`];
        /// [`Timestamp::MIN`] otherwise).
        at: Timestamp,
    },
    /// The sender has sent everything of `epoch` (it is at the barrier closing it).
    Barrier {
        /// The epoch the barrier closes.
        epoch: u64,
    },
    /// The sender's input has ended: it sends nothing more.
    End {
        /// The sender's epoch.
        epoch: u64,
    },
}

impl ToPeer {
    fn epoch(&self) -> u64 {
        match self {
            ToPeer::Rows { epoch, .. } | ToPeer::Barrier { epoch } | ToPeer::End { epoch } => *epoch,
        }
    }
}

/// One partition actor's end of the real-time exchange (see the module documentation).
#[derive(Debug)]
pub struct RealTimeExchange {
    me: usize,
    /// Each peer's channel by partition index; `None` at this actor's own index.
    peers: Vec<Option<Sender<ToPeer>>>,
    inbox: Receiver<ToPeer>,
    router: Router,
    /// Records routed to each peer, not sent yet.
    outgoing: Vec<Vec<Record>>,
    /// The epoch this actor is in (the tag of what it sends and takes).
    epoch: u64,
    /// Messages of peers already past the barrier of `epoch`.
    early: Vec<ToPeer>,
    /// Each partition actor's last watermark at the exchange (this one's: the last it sent).
    last: Vec<Timestamp>,
    /// Whether rows keep the instant they were made at ([`RealTimeExchange::time_rows`]).
    timed: bool,
    /// Timed: the instant each actor's last watermark at the exchange took its value.
    last_at: Vec<Timestamp>,
    /// Timed: this actor's watermark at the exchange as last noted, and when it took it.
    noted: (Timestamp, Timestamp),
    /// Timed: rows `start..end` of the output made at an instant other than the actor's
    /// clock (by the stages after the exchange, when the minimum watermark moved).
    stamps: Vec<(usize, usize, Timestamp)>,
    /// Barrier markers of `epoch` received.
    barriers: usize,
    /// End markers received.
    ends: usize,
    abort: Arc<AtomicBool>,
    /// Set by [`RealTimeExchange::end`]: dropping it then raises no failure.
    finished: bool,
    full_sends: u64,
    rows_sent: u64,
}

/// The real-time exchanges of `parallelism` partition actors (in partition order), routing by
/// the hash of `key_columns` of the exchanged records into `parallelism` key ranges; every actor
/// starts in `first_epoch` (0, or the one after the restored checkpoint's).
pub fn real_time_exchanges(parallelism: usize, key_columns: &[usize], first_epoch: u64) -> Vec<RealTimeExchange> {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..parallelism).map(|_| bounded(EXCHANGE_QUEUE)).unzip();
    let abort = Arc::new(AtomicBool::new(false));
    rxs.into_iter()
        .enumerate()
        .map(|(me, inbox)| RealTimeExchange {
            me,
            peers: txs.iter().enumerate().map(|(p, tx)| (p != me).then(|| tx.clone())).collect(),
            inbox,
            router: Router::new(key_columns.to_vec(), parallelism),
            outgoing: (0..parallelism).map(|_| Vec::new()).collect(),
            epoch: first_epoch,
            early: Vec::new(),
            last: vec![Timestamp::MIN; parallelism],
            timed: false,
            last_at: vec![Timestamp::MIN; parallelism],
            noted: (Timestamp::MIN, Timestamp::MIN),
            stamps: Vec::new(),
            barriers: 0,
            ends: 0,
            abort: abort.clone(),
            finished: false,
            full_sends: 0,
            rows_sent: 0,
        })
        .collect()
}

impl RealTimeExchange {
    /// This actor's channel: the partition actor waits on it beside its input, and hands what
    /// arrives to [`RealTimeExchange::receive`].
    pub fn inbox(&self) -> &Receiver<ToPeer> {
        &self.inbox
    }

    /// Takes what reached `chain`'s exchange: this actor's own records go to its stages after
    /// the exchange at once (rows of the last stage to `out`), a peer's are buffered and sent
    /// once [`EXCHANGE_CHUNK`] are waiting.
    ///
    /// # Errors
    /// [`ExchangeError::PeerGone`] when a peer stopped.
    pub fn route(&mut self, chain: &mut OperatorChain, out: &mut Output) -> Result<(), ExchangeError> {
        if self.timed {
            // the actor's clock (`eddy_engine::expr::processing_time`) as it stands after what
            // moved the watermark: the record that moved it, or the watermark's own instant
            let w = chain.exchange_watermark();
            if w > self.noted.0 {
                self.noted = (w, eddy_engine::expr::processing_time());
            }
        }
        for record in chain.take_exchanged() {
            let p = self.router.route(&record).0;
            if p == self.me {
                chain.on_exchanged(&record, out);
                continue;
            }
            self.outgoing[p].push(record);
            if self.outgoing[p].len() >= EXCHANGE_CHUNK {
                let records = std::mem::take(&mut self.outgoing[p]);
                let msg = ToPeer::Rows {
                    epoch: self.epoch,
                    from: self.me,
                    records,
                    watermark: Timestamp::MIN,
                    at: Timestamp::MIN,
                };
                self.send(p, msg, chain, out)?;
            }
        }
        Ok(())
    }

    /// [`RealTimeExchange::route`], then sends every peer its buffered records followed by this
    /// actor's watermark at the exchange when it moved, and moves the stages after the exchange
    /// to the minimum over every actor's last watermark.
    ///
    /// # Errors
    /// [`ExchangeError::PeerGone`] when a peer stopped.
    pub fn flush(&mut self, chain: &mut OperatorChain, out: &mut Output) -> Result<(), ExchangeError> {
        self.route(chain, out)?;
        let w = chain.exchange_watermark();
        let moved = w > self.last[self.me];
        for p in 0..self.peers.len() {
            if p == self.me || (self.outgoing[p].is_empty() && !moved) {
                continue;
            }
            let records = std::mem::take(&mut self.outgoing[p]);
            let (watermark, at) = if moved { (w, self.noted.1) } else { (Timestamp::MIN, Timestamp::MIN) };
            self.send(p, ToPeer::Rows { epoch: self.epoch, from: self.me, records, watermark, at }, chain, out)?;
        }
        if moved {
            self.last[self.me] = w;
            self.last_at[self.me] = self.noted.1;
            self.advance(chain, out);
        }
        Ok(())
    }

    /// Handles a message from a peer (see the module documentation): records go to the stages
    /// after the exchange, a watermark moves them when the minimum moves, a marker is counted;
    /// a message of a later epoch is kept for [`RealTimeExchange::resume`].
    ///
    /// # Errors
    /// [`ExchangeError::OutOfOrder`] for a message of an epoch this actor has closed (a bug).
    pub fn receive(&mut self, m: ToPeer, chain: &mut OperatorChain, out: &mut Output) -> Result<(), ExchangeError> {
        let epoch = m.epoch();
        if epoch > self.epoch {
            self.early.push(m);
            return Ok(());
        }
        if epoch < self.epoch {
            return Err(ExchangeError::OutOfOrder { batch: self.epoch, got: epoch });
        }
        match m {
            ToPeer::Rows { from, records, watermark, at, .. } => {
                for r in &records {
                    chain.on_exchanged(r, out);
                }
                if let Some(last) = self.last.get_mut(from)
                    && watermark > *last
                {
                    *last = watermark;
                    self.last_at[from] = at;
                    self.advance(chain, out);
                }
            }
            ToPeer::Barrier { .. } => self.barriers += 1,
            ToPeer::End { .. } => self.ends += 1,
        }
        Ok(())
    }

    /// At the barrier closing `epoch`: flushes, sends every peer its marker, and takes the
    /// peers' messages until each one's marker of `epoch` is in; the caller then snapshots and
    /// calls [`RealTimeExchange::resume`].
    ///
    /// # Errors
    /// [`ExchangeError`] when a peer stopped, or a message arrived out of order; the epoch is
    /// then incomplete and the actor must stop.
    pub fn barrier(&mut self, epoch: u64, chain: &mut OperatorChain, out: &mut Output) -> Result<(), ExchangeError> {
        if epoch != self.epoch {
            return Err(ExchangeError::OutOfOrder { batch: self.epoch, got: epoch });
        }
        self.flush(chain, out)?;
        for p in 0..self.peers.len() {
            if p != self.me {
                self.send(p, ToPeer::Barrier { epoch }, chain, out)?;
            }
        }
        while self.barriers < self.peers.len() - 1 {
            self.wait(chain, out)?;
        }
        Ok(())
    }

    /// After the snapshot of the barrier closing `epoch`: this actor enters the next epoch and
    /// hands the messages kept aside for it to the stages after the exchange.
    ///
    /// # Errors
    /// As [`RealTimeExchange::receive`].
    pub fn resume(&mut self, epoch: u64, chain: &mut OperatorChain, out: &mut Output) -> Result<(), ExchangeError> {
        self.epoch = epoch + 1;
        self.barriers = 0;
        for m in std::mem::take(&mut self.early) {
            self.receive(m, chain, out)?;
        }
        Ok(())
    }

    /// At the end of the input: flushes, sends every peer its end marker, and takes the peers'
    /// messages until each one's end marker is in; dropping the exchange afterwards is no
    /// failure.
    ///
    /// # Errors
    /// As [`RealTimeExchange::barrier`].
    pub fn end(&mut self, chain: &mut OperatorChain, out: &mut Output) -> Result<(), ExchangeError> {
        self.flush(chain, out)?;
        for p in 0..self.peers.len() {
            if p != self.me {
                self.send(p, ToPeer::End { epoch: self.epoch }, chain, out)?;
            }
        }
        while self.ends < self.peers.len() - 1 {
            self.wait(chain, out)?;
        }
        self.finished = true;
        Ok(())
    }

    /// How many sends found a peer's channel full since this exchange was made.
    pub fn full_sends(&self) -> u64 {
        self.full_sends
    }

    /// How many records this actor sent to other partition actors since this exchange was made.
    pub fn rows_sent(&self) -> u64 {
        self.rows_sent
    }

    /// Timed (an expression after the exchange reads the processing time, SQL.md's
    /// `current_timestamp()`): the rows the stages after the exchange make when the minimum
    /// watermark moves are made at the instant it moved: the latest of the instants at which the
    /// actors holding the minimum took it (every actor sees the same watermark moves, each at
    /// the clock of the record that moved it, so this is the instant one actor alone would make
    /// them at, whatever the parallelism).
    pub fn time_rows(&mut self) {
        self.timed = true;
    }

    /// Timed: the output rows made at another instant than the actor's clock since the last
    /// call, as `(start, end, instant)` over the output's rows.
    pub fn take_stamps(&mut self) -> Vec<(usize, usize, Timestamp)> {
        std::mem::take(&mut self.stamps)
    }

    /// Moves the stages after the exchange to the minimum of every actor's last watermark.
    fn advance(&mut self, chain: &mut OperatorChain, out: &mut Output) {
        let Some(&w) = self.last.iter().min() else { return };
        if !self.timed {
            chain.advance_exchanged(w, out);
            return;
        }
        let at = (0..self.last.len()).filter(|&i| self.last[i] == w).map(|i| self.last_at[i]).max();
        let at = at.unwrap_or(Timestamp::MIN);
        // the stages' own expressions (between the exchange and the output) read it too
        let now = eddy_engine::expr::processing_time();
        eddy_engine::expr::set_processing_time(at);
        let before = out.rows.len();
        chain.advance_exchanged(w, out);
        if out.rows.len() > before {
            self.stamps.push((before, out.rows.len(), at));
        }
        eddy_engine::expr::set_processing_time(now);
    }

    /// Waits for one message from a peer and handles it; fails when a peer stopped.
    fn wait(&mut self, chain: &mut OperatorChain, out: &mut Output) -> Result<(), ExchangeError> {
        match self.inbox.recv_timeout(ABORT_CHECK) {
            Ok(m) => self.receive(m, chain, out),
            Err(RecvTimeoutError::Timeout) => self.check_peers(),
            Err(RecvTimeoutError::Disconnected) => Err(self.gone(self.me)),
        }
    }

    /// Sends `msg` to peer `p`, receiving from this actor's own channel while the send waits
    /// (the module documentation says why).
    fn send(
        &mut self,
        p: usize,
        msg: ToPeer,
        chain: &mut OperatorChain,
        out: &mut Output,
    ) -> Result<(), ExchangeError> {
        let gone = self.gone(p);
        let Some(tx) = self.peers[p].clone() else { return Err(gone) };
        if let ToPeer::Rows { records, .. } = &msg {
            self.rows_sent += records.len() as u64;
        }
        let mut msg = match tx.try_send(msg) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Full(m)) => m,
            Err(TrySendError::Disconnected(_)) => return Err(gone),
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
                    self.check_peers()?;
                    continue;
                }
            };
            if op.index() == send_at {
                return op.send(&tx, msg).map_err(|_| gone);
            }
            debug_assert_eq!(op.index(), recv_at);
            match op.recv(&inbox) {
                Ok(m) => self.receive(m, chain, out)?,
                Err(_) => return Err(self.gone(self.me)),
            }
            // the send was not selected: the message is still ours, try again
            msg = match tx.try_send(msg) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Full(m)) => m,
                Err(TrySendError::Disconnected(_)) => return Err(gone),
            };
        }
    }

    fn gone(&self, peer: usize) -> ExchangeError {
        ExchangeError::PeerGone { batch: self.epoch, peer }
    }

    /// Fails when a peer stopped (see the module documentation).
    fn check_peers(&self) -> Result<(), ExchangeError> {
        match self.abort.load(Ordering::SeqCst) {
            true => Err(self.gone(self.me)),
            false => Ok(()),
        }
    }
}

impl Drop for RealTimeExchange {
    fn drop(&mut self) {
        if !self.finished {
            self.abort.store(true, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    //! Three partition actors' real-time chains, each on its own thread, exchange enough rows to
    //! fill the bounded channels both ways, with barriers the actors reach at different times;
    //! the rows must be those of a brute-force reference written from the query (per 10 s window
    //! sliding by 5 s: distinct auctions, and bids), each once, none dropped downstream.

    use eddy_engine::Record;
    use eddy_engine::operator::{Operator, Output};
    use eddy_engine::plan::QueryPlan;
    use eddy_engine::steps::Applied;
    use eddy_engine::value::Value;

    use super::*;

    use super::super::test_support::{PARTITIONS, S, bid, expected, joined, plan as test_plan, routed};
    /// Barriers each actor passes, after each quarter of its own records.
    const EPOCHS: u64 = 4;

    fn plan() -> QueryPlan {
        test_plan("real-time")
    }

    #[test]
    fn rows_crossing_full_channels_with_aligned_barriers_give_the_rows_of_a_brute_force_reference() {
        let plan = plan();
        assert_eq!(plan.exchange(), Some(1));
        let bids: Vec<(i64, i64)> = (0..120_000).map(bid).collect();
        let expected = expected(&bids);

        let records = routed(&plan, &bids);
        let mut probe = plan.new_operator();
        let key = probe.as_chain_mut().expect("a chain").exchange_key().to_vec();
        let handles: Vec<_> = real_time_exchanges(PARTITIONS, &key, 0)
            .into_iter()
            .zip(records)
            .enumerate()
            .map(|(me, (mut x, records))| {
                let mut op = plan.new_operator();
                std::thread::spawn(move || {
                    let chain = op.as_chain_mut().unwrap();
                    assert!(chain.split_at_exchange());
                    let mut out = Output::default();
                    let quarter = records.len().div_ceil(EPOCHS as usize);
                    for (epoch, part) in records.chunks(quarter).enumerate() {
                        for (i, r) in part.iter().enumerate() {
                            chain.on_record(r, Timestamp::MIN, &mut out);
                            x.route(chain, &mut out).unwrap();
                            // actors flush at different paces (their input "runs empty" apart)
                            if i % (500 + 300 * me) == 0 {
                                x.flush(chain, &mut out).unwrap();
                            }
                        }
                        x.barrier(epoch as u64, chain, &mut out).unwrap();
                        x.resume(epoch as u64, chain, &mut out).unwrap();
                    }
                    // the source's last watermark, past every window
                    chain.advance_watermark(Timestamp(100 * S), &mut out);
                    x.end(chain, &mut out).unwrap();
                    assert!(out.late.is_empty() && out.rejected.is_empty());
                    assert_eq!(chain.dropped_between_stages().total(), 0);
                    assert!(x.rows_sent() > 0, "an actor sent nothing across the exchange");
                    (out.rows, x.full_sends())
                })
            })
            .collect();
        let (got, full) = joined(handles);
        assert_eq!(got, expected);
        // the channels did fill: the sends waited while receiving
        assert!(full > 0);
    }

    #[test]
    fn a_message_of_a_peer_past_the_barrier_waits_for_the_snapshot() {
        let plan = plan();
        let mut ops: Vec<Box<dyn Operator>> = (0..3).map(|_| plan.new_operator()).collect();
        let mut xs = real_time_exchanges(3, &[0], 0);
        let mut out = Output::default();
        {
            let (a, b) = xs.split_at_mut(1);
            let c1 = ops[1].as_chain_mut().unwrap();
            assert!(c1.split_at_exchange());
            // actor 1 passed the barrier of epoch 0, then finalised a window of auction 7 in epoch 1
            b[0].send(0, ToPeer::Barrier { epoch: 0 }, c1, &mut out).unwrap();
            let bid = Record::new(vec![Value::Long(7), Value::Timestamp(Timestamp(S))]);
            let bid = match plan.source_steps.apply(bid) {
                Applied::Keep(r) => r,
                _ => panic!("the source steps dropped a bid"),
            };
            c1.on_record(&bid, Timestamp::MIN, &mut out);
            c1.advance_watermark(Timestamp(20 * S), &mut out);
            let records = c1.take_exchanged();
            assert_eq!(records.len(), 2, "the bid's two sliding windows");
            let msg = ToPeer::Rows { epoch: 1, from: 1, records, watermark: Timestamp::MIN, at: Timestamp::MIN };
            b[0].send(0, msg, c1, &mut out).unwrap();
            // actor 2 reaches the barrier of epoch 0 after that
            b[1].send(0, ToPeer::Barrier { epoch: 0 }, c1, &mut out).unwrap();
            let c0 = ops[0].as_chain_mut().unwrap();
            assert!(c0.split_at_exchange());
            // actor 0 at its barrier: aligned by both markers, actor 1's rows kept aside
            a[0].barrier(0, c0, &mut out).unwrap();
            assert_eq!(c0.state_len(), 0, "a row of the next epoch entered the snapshot's state");
            assert_eq!(a[0].early.len(), 1);
            a[0].resume(0, c0, &mut out).unwrap();
            assert_eq!(c0.state_len(), 2);
        }
        // a message of an epoch already closed is a bug, not taken silently
        let c0 = ops[0].as_chain_mut().unwrap();
        let stale =
            ToPeer::Rows { epoch: 0, from: 1, records: Vec::new(), watermark: Timestamp::MIN, at: Timestamp::MIN };
        assert!(matches!(xs[0].receive(stale, c0, &mut out), Err(ExchangeError::OutOfOrder { .. })));
        // a peer that stops fails the barrier instead of hanging it
        drop(xs.pop());
        drop(xs.pop());
        let e = xs[0].barrier(1, c0, &mut out).unwrap_err();
        assert!(matches!(e, ExchangeError::PeerGone { .. }), "{e}");
    }
}
