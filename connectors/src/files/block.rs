//! [`BlockReader`]: the files source's buffered reader, whose read blocks the lines read from
//! them can share ([`crate::SharedLine`]) instead of each line being copied out.

use std::io::{self, BufRead, Read};
use std::sync::Arc;

/// A buffered reader (as `std::io::BufReader`) over blocks of at most `capacity` bytes: each
/// block is filled by one `read_to_end` of at most `capacity` bytes (so as full as the input
/// allows), and is shared ([`BlockReader::block`]) by the lines given out of it. A block still
/// shared when the next one is read is left to its lines (a new one is allocated); one no line
/// holds any more is refilled. A block filled less than half (the end of the input) is shrunk
/// to its bytes, so lines held long keep no more memory than their bytes' blocks.
///
/// A read error after some bytes of a block were read is returned once those bytes are
/// consumed, as `BufReader` returns it (the bytes before an error are read first).
pub(crate) struct BlockReader {
    inner: Box<dyn Read + Send>,
    /// The current block: bytes `[pos, block.len())` are read and not consumed.
    block: Arc<Vec<u8>>,
    pos: usize,
    capacity: usize,
    /// An error met while filling the block, returned when its bytes are consumed.
    pending: Option<io::Error>,
}

impl BlockReader {
    /// A reader of `inner` in blocks of `capacity` bytes (at least 1).
    pub(crate) fn new(inner: Box<dyn Read + Send>, capacity: usize) -> BlockReader {
        BlockReader { inner, block: Arc::new(Vec::new()), pos: 0, capacity: capacity.max(1), pending: None }
    }

    /// The bytes read and not consumed (as `BufReader::buffer`): what is left of the current
    /// block, from [`BlockReader::position`] on.
    #[inline]
    pub(crate) fn buffer(&self) -> &[u8] {
        &self.block[self.pos..]
    }

    /// The current block, to share with lines of [`BlockReader::buffer`].
    #[inline]
    pub(crate) fn block(&self) -> &Arc<Vec<u8>> {
        &self.block
    }

    /// Where [`BlockReader::buffer`] starts in [`BlockReader::block`] (bytes).
    #[inline]
    pub(crate) fn position(&self) -> usize {
        self.pos
    }
}

impl Read for BlockReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for BlockReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos >= self.block.len() {
            if let Some(e) = self.pending.take() {
                return Err(e);
            }
            self.pos = 0;
            // Refilled in place when no line holds it any more, else a new block.
            let block = match Arc::get_mut(&mut self.block) {
                Some(block) => {
                    block.clear();
                    block
                }
                None => {
                    self.block = Arc::new(Vec::with_capacity(self.capacity));
                    Arc::get_mut(&mut self.block).expect("a new block is held by nothing else")
                }
            };
            block.reserve_exact(self.capacity);
            let limit = u64::try_from(self.capacity).unwrap_or(u64::MAX);
            if let Err(e) = Read::by_ref(&mut self.inner).take(limit).read_to_end(block) {
                // The bytes before the error are read first (as `BufReader` gives them).
                if block.is_empty() {
                    return Err(e);
                }
                self.pending = Some(e);
            }
            // A block less than half full (the end of a file) keeps only its bytes: its lines may
            // hold it long (a micro-batch of many small files), the next block is a new one.
            if block.len() < block.capacity() / 2 {
                block.shrink_to_fit();
            }
        }
        Ok(&self.block[self.pos..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.block.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives `data` in reads of at most `step` bytes, then fails with `fail` (if any).
    struct Steps {
        data: Vec<u8>,
        at: usize,
        step: usize,
        fail: bool,
    }

    impl Read for Steps {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.at == self.data.len() && self.fail {
                self.fail = false;
                return Err(io::Error::other("broken"));
            }
            let n = self.step.min(buf.len()).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn blocks_are_filled_whole_and_a_shared_one_is_left_to_its_lines() {
        let data: Vec<u8> = (0..100u8).collect();
        let mut r = BlockReader::new(Box::new(Steps { data: data.clone(), at: 0, step: 7, fail: false }), 40);
        assert_eq!(r.fill_buf().unwrap(), &data[..40]);
        r.consume(30);
        assert_eq!((r.buffer(), r.position()), (&data[30..40], 30));
        let held = Arc::clone(r.block());
        r.consume(10);
        assert_eq!(r.fill_buf().unwrap(), &data[40..80]);
        assert_eq!(held.as_slice(), &data[..40], "a block a line holds is not overwritten");
        drop(held);
        let second = Arc::as_ptr(r.block());
        r.consume(40);
        assert_eq!(r.fill_buf().unwrap(), &data[80..]);
        assert_eq!(Arc::as_ptr(r.block()), second, "a block nothing holds is refilled");
        r.consume(20);
        assert!(r.fill_buf().unwrap().is_empty());
    }

    #[test]
    fn a_block_filled_less_than_half_keeps_only_its_bytes() {
        let mut r = BlockReader::new(Box::new(Steps { data: b"abc\n".to_vec(), at: 0, step: 7, fail: false }), 4096);
        assert_eq!(r.fill_buf().unwrap(), b"abc\n");
        assert!(r.block().capacity() < 4096 / 2, "capacity {}", r.block().capacity());
    }

    #[test]
    fn an_error_comes_after_the_bytes_read_before_it() {
        let mut r = BlockReader::new(Box::new(Steps { data: b"abc".to_vec(), at: 0, step: 2, fail: true }), 40);
        let mut all = Vec::new();
        let err = r.read_to_end(&mut all).unwrap_err();
        assert_eq!((all.as_slice(), err.to_string().as_str()), (b"abc".as_slice(), "broken"));
        assert!(r.fill_buf().unwrap().is_empty(), "the error is given once");
    }
}
