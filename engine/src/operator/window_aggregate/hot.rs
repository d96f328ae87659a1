//! [`Hot`]: the measure states of a group's parked last pane or session, held in the group's
//! slot when the query has at most [`HOT`] measures, so that the per-record path touches the slot
//! only (not the group's vector of states). Moved in and out of the vector only when the last
//! pane / session is parked or unparked (structural changes, never per record).

use crate::aggregate::AggState;

/// Most measures whose states are kept inline.
pub(crate) const HOT: usize = 2;

/// Inline states of the parked last pane / session (see the module documentation).
#[derive(Debug)]
pub(crate) struct Hot {
    states: [AggState; HOT],
    /// Whether `states[..measures]` hold the last pane's states (else they are in the vector).
    used: bool,
}

impl Default for Hot {
    fn default() -> Hot {
        Hot { states: [AggState::Count(0), AggState::Count(0)], used: false }
    }
}

impl Hot {
    /// Whether the inline states are in use.
    #[inline]
    pub(crate) fn used(&self) -> bool {
        self.used
    }

    /// The inline states of `m` measures.
    #[inline]
    pub(crate) fn get_mut(&mut self, m: usize) -> &mut [AggState] {
        &mut self.states[..m.min(HOT)]
    }

    /// The inline states of `m` measures.
    #[inline]
    pub(crate) fn get(&self, m: usize) -> &[AggState] {
        &self.states[..m.min(HOT)]
    }

    /// Moves the last `m` states of `v` inline (when `m <= HOT` and not already).
    pub(crate) fn park(&mut self, v: &mut Vec<AggState>, m: usize) {
        if self.used || m > HOT || v.len() < m {
            return;
        }
        for (slot, st) in self.states.iter_mut().zip(v.drain(v.len() - m..)) {
            *slot = st;
        }
        self.used = true;
    }

    /// Moves the inline states back to the end of `v`.
    pub(crate) fn unpark(&mut self, v: &mut Vec<AggState>, m: usize) {
        if !self.used {
            return;
        }
        v.extend(self.states.iter_mut().take(m).map(|s| std::mem::replace(s, AggState::Count(0))));
        self.used = false;
    }

    /// Drops the inline states.
    pub(crate) fn clear(&mut self) {
        self.states.iter_mut().for_each(|s| *s = AggState::Count(0));
        self.used = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(v: &[AggState]) -> Vec<i64> {
        v.iter().map(|s| if let AggState::Count(n) = s { *n } else { -1 }).collect()
    }

    #[test]
    fn parking_moves_the_last_states_inline_and_back_in_order() {
        let mut v: Vec<AggState> = (1..=6).map(AggState::Count).collect();
        let mut h = Hot::default();
        h.park(&mut v, 2);
        assert!(h.used());
        assert_eq!(counts(&v), vec![1, 2, 3, 4]);
        assert_eq!(counts(h.get(2)), vec![5, 6]);
        h.park(&mut v, 2); // already parked: nothing moves
        assert_eq!(v.len(), 4);
        if let AggState::Count(n) = &mut h.get_mut(2)[1] {
            *n += 10;
        }
        h.unpark(&mut v, 2);
        assert!(!h.used());
        assert_eq!(counts(&v), vec![1, 2, 3, 4, 5, 16]);
        // three measures stay in the vector
        h.park(&mut v, 3);
        assert!(!h.used());
        assert_eq!(v.len(), 6);
    }
}
