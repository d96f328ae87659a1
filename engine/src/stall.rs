//! What a slow record waited on: the rare, costly events of the per-record path, noted on the
//! thread where they happen so that a tracer timing each record can name its cause.
//!
//! Operators and the runtime call [`note`] when they do something that may take far longer than
//! one record's usual work: a key table or a per-key buffer growing by copying, a timer queue
//! rebuilt, a burst of timers, a barrier, a snapshot, a sink's write. The runtime's tracer
//! (`eddy run --trace-stalls`, issue 28) reads and clears the notes around each record
//! ([`take`]); when the record was slow, the notes are its causes. Without a tracer the notes
//! are set and never read: one thread-local OR on an event that is itself rare, so the call
//! sites need no switch.

use std::cell::Cell;
use std::fmt;

/// One kind of costly event on the per-record path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum Cause {
    /// A hash table of keys grew: its entries were moved into a larger table.
    TableGrowth = 1 << 0,
    /// A buffer of states or records grew by copying into a larger allocation.
    BufferGrowth = 1 << 1,
    /// A timer queue was rebuilt from the keys.
    TimerRebuild = 1 << 2,
    /// Timers fired a burst of rows at one instant.
    TimerBurst = 1 << 3,
    /// An epoch barrier or the end of a micro-batch: the operator's state reported, a
    /// snapshot begun, the epoch's rows written.
    Barrier = 1 << 4,
    /// The sink's write of output rows.
    SinkWrite = 1 << 5,
    /// The thread was descheduled (the kernel switched it out involuntarily) while on the
    /// record: the machine's doing, not the engine's.
    Descheduled = 1 << 6,
}

impl Cause {
    /// Every cause, in the order [`Causes`] prints them.
    pub const ALL: [Cause; 7] = [
        Cause::TableGrowth,
        Cause::BufferGrowth,
        Cause::TimerRebuild,
        Cause::TimerBurst,
        Cause::Barrier,
        Cause::SinkWrite,
        Cause::Descheduled,
    ];

    /// The cause's name in reports and metric labels (`table_growth`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Cause::TableGrowth => "table_growth",
            Cause::BufferGrowth => "buffer_growth",
            Cause::TimerRebuild => "timer_rebuild",
            Cause::TimerBurst => "timer_burst",
            Cause::Barrier => "barrier",
            Cause::SinkWrite => "sink_write",
            Cause::Descheduled => "descheduled",
        }
    }
}

/// A set of [`Cause`]s.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Causes(u16);

impl Causes {
    /// No cause.
    pub const NONE: Causes = Causes(0);

    /// Whether `cause` is in the set.
    pub fn contains(self, cause: Cause) -> bool {
        self.0 & cause as u16 != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The set with `cause` added.
    #[must_use]
    pub fn with(self, cause: Cause) -> Causes {
        Causes(self.0 | cause as u16)
    }

    /// Both sets' causes.
    #[must_use]
    pub fn union(self, other: Causes) -> Causes {
        Causes(self.0 | other.0)
    }

    /// The causes in the set, in [`Cause::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Cause> {
        Cause::ALL.into_iter().filter(move |&c| self.contains(c))
    }
}

impl fmt::Debug for Causes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `table_growth+sink_write`; `unattributed` for an empty set.
impl fmt::Display for Causes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("unattributed");
        }
        for (i, c) in self.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            f.write_str(c.name())?;
        }
        Ok(())
    }
}

thread_local! {
    static NOTED: Cell<u16> = const { Cell::new(0) };
}

/// Notes that `cause` happened on this thread (see the module documentation).
#[inline]
pub fn note(cause: Cause) {
    NOTED.with(|n| n.set(n.get() | cause as u16));
}

/// The causes noted on this thread since the last call, cleared.
#[inline]
pub fn take() -> Causes {
    NOTED.with(|n| Causes(n.replace(0)))
}

/// Notes [`Cause::BufferGrowth`] when pushing one more element onto `v` will grow it by
/// copying and the copy is large enough to matter (at least 1,024 elements: a smaller copy is
/// no stall).
#[inline]
pub fn note_vec_growth<T>(v: &Vec<T>) {
    if v.len() == v.capacity() && v.len() >= 1024 {
        note(Cause::BufferGrowth);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_per_thread_and_cleared_by_take() {
        assert!(take().is_empty());
        note(Cause::TableGrowth);
        note(Cause::SinkWrite);
        note(Cause::TableGrowth);
        let other = std::thread::spawn(take).join().expect("thread");
        assert!(other.is_empty(), "another thread's notes are its own");
        let got = take();
        assert_eq!(got.to_string(), "table_growth+sink_write");
        assert!(got.contains(Cause::SinkWrite) && !got.contains(Cause::Barrier));
        assert!(take().is_empty());
        assert_eq!(Causes::NONE.to_string(), "unattributed");
    }

    #[test]
    fn vec_growth_is_noted_only_for_a_large_copy() {
        let small: Vec<u8> = Vec::with_capacity(8);
        let mut full = small.clone();
        full.extend([0; 8]);
        full.shrink_to_fit();
        note_vec_growth(&full);
        assert!(take().is_empty(), "8 elements are no stall");
        let mut big: Vec<u32> = vec![0; 2048];
        big.shrink_to_fit();
        note_vec_growth(&big);
        assert_eq!(take(), Causes::NONE.with(Cause::BufferGrowth));
        big.reserve(1);
        note_vec_growth(&big);
        assert!(take().is_empty(), "room left: no growth");
    }
}
