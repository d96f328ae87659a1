//! [`SpareLines`]: raw line buffers handed back by the runtime ([`crate::Source::recycle_lines`]),
//! refilled with the next lines instead of allocating a `Vec<u8>` per line (files, Kafka).

/// At most this many line buffers handed back are kept: a poll's worth (the source actor polls
/// 4,096 items at a time).
pub(crate) const SPARE_LINES: usize = 4096;

/// A buffer handed back is kept only up to this capacity (bytes), so the spares hold at most
/// [`SPARE_LINES`] x 4 KiB = 16 MiB whatever the lines were; a longer line gets a buffer of its
/// own.
pub(crate) const SPARE_LINE_CAPACITY: usize = 4096;

/// A bounded free list of line buffers (at most [`SPARE_LINES`], each of at most
/// [`SPARE_LINE_CAPACITY`] bytes).
#[derive(Debug, Default)]
pub(crate) struct SpareLines {
    lines: Vec<Vec<u8>>,
}

impl SpareLines {
    /// `bytes` in a buffer of their own: a spare one refilled (no allocation while it has room),
    /// else a new one.
    #[inline]
    pub(crate) fn filled(&mut self, bytes: &[u8]) -> Vec<u8> {
        match self.lines.pop() {
            Some(mut line) => {
                line.clear();
                line.extend_from_slice(bytes);
                line
            }
            None => bytes.to_vec(),
        }
    }

    /// Takes what fits of `lines` (the implementation of [`crate::Source::recycle_lines`]):
    /// buffers of at most [`SPARE_LINE_CAPACITY`] bytes, up to [`SPARE_LINES`] in all; the rest
    /// stays in `lines`.
    pub(crate) fn keep(&mut self, lines: &mut Vec<Vec<u8>>) {
        let room = SPARE_LINES.saturating_sub(self.lines.len());
        if lines.len() <= room && lines.iter().all(|l| l.capacity() <= SPARE_LINE_CAPACITY) {
            // The usual case: all of them, moved over at once (the poll before took every spare:
            // the two lists are swapped, nothing is copied).
            if self.lines.is_empty() {
                std::mem::swap(&mut self.lines, lines);
            } else {
                self.lines.append(lines);
            }
        } else {
            let mut kept = 0;
            lines.retain_mut(|l| {
                if kept < room && l.capacity() <= SPARE_LINE_CAPACITY {
                    kept += 1;
                    self.lines.push(std::mem::take(l));
                    false
                } else {
                    true
                }
            });
        }
    }

    /// How many buffers are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_kept_within_the_bounds_and_refilled() {
        let mut spares = SpareLines::default();
        let mut lines =
            vec![Vec::with_capacity(16), Vec::with_capacity(SPARE_LINE_CAPACITY + 1), Vec::with_capacity(8)];
        let small: Vec<*const u8> = [&lines[0], &lines[2]].iter().map(|l| l.as_ptr()).collect();
        spares.keep(&mut lines);
        // The one too large stays with the caller.
        assert_eq!(spares.len(), 2);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].capacity() > SPARE_LINE_CAPACITY);
        let a = spares.filled(b"abc");
        let b = spares.filled(b"defgh");
        assert_eq!((a.as_slice(), b.as_slice()), (&b"abc"[..], &b"defgh"[..]));
        let mut used = vec![a.as_ptr(), b.as_ptr()];
        let mut expected = small.clone();
        used.sort();
        expected.sort();
        assert_eq!(used, expected);
        // No spare left: a buffer of its own.
        assert_eq!(spares.len(), 0);
        assert_eq!(spares.filled(b"xy"), b"xy");
        // At most SPARE_LINES are kept.
        let mut many: Vec<Vec<u8>> = (0..SPARE_LINES + 10).map(|_| Vec::with_capacity(4)).collect();
        spares.keep(&mut many);
        assert_eq!(spares.len(), SPARE_LINES);
        assert_eq!(many.len(), 10);
    }
}
