//! Software prefetch: a hint that memory will be read soon, so that the cache misses of several
//! records overlap instead of being paid one after another (per-record state sits at a random
//! place in a table far larger than the caches).
//!
//! A prefetch never faults and changes nothing observable, whatever the address; on targets
//! without the instruction it does nothing.

/// Starts loading every cache line that holds one of the `bytes` bytes from `p`, into every
/// cache level (at most [`MAX_LINES`] lines). An object need not start a line: 232 bytes from
/// the middle of a line span 5 lines, not 4.
#[inline(always)]
pub(crate) fn lines<T>(p: *const T, bytes: usize) {
    // (a type aligned to lines starts one: the count is then known when compiling)
    let skew = if std::mem::align_of::<T>() >= LINE { 0 } else { p as usize % LINE };
    let p = p.cast::<u8>();
    // (an add and a shift, not `div_ceil`'s remainder test: this runs once or twice per record)
    #[allow(clippy::manual_div_ceil)]
    let n = ((skew + bytes + (LINE - 1)) / LINE).min(MAX_LINES);
    for i in 0..n {
        line(p.wrapping_add(i * LINE));
    }
}

/// Cache line size (bytes) assumed.
const LINE: usize = 64;

/// Most lines prefetched per call.
pub(crate) const MAX_LINES: usize = 5;

/// Starts loading the cache line holding `p`.
#[inline(always)]
pub(crate) fn line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: `prefetcht0` is a hint: it never faults, reads nothing the program sees and writes
    // nothing, whatever the address (SSE, present on every x86_64).
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    #[test]
    fn prefetching_any_address_is_harmless() {
        let v = vec![7u8; 1000];
        super::lines(v.as_ptr(), v.len());
        super::line(std::ptr::null());
        super::line(usize::MAX as *const u8);
        assert_eq!(v.iter().map(|&x| x as usize).sum::<usize>(), 7000);
    }
}
