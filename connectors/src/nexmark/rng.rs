//! A small deterministic PRNG (SplitMix64) and the generator's random strings.
//!
//! SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA
//! 2014): 64 bits of state, one add and a mixing function per draw; its streams pass BigCrush,
//! which is ample for synthetic benchmark data. Each generated event draws from its own stream,
//! seeded from `(seed, event number)`, so an event's content does not depend on which other
//! events were generated (the tables of one seed describe one consistent auction site).

/// The golden-ratio increment of SplitMix64.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function (a bijection of u64).
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A SplitMix64 stream.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The stream of `seed`.
    pub(crate) fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The stream of item `index` under `seed`: a stream per (seed, index) pair, started from a
    /// mixed state so neighbouring indexes do not give overlapping streams.
    pub(crate) fn for_item(seed: u64, index: u64) -> SplitMix64 {
        SplitMix64::for_mixed_item(mix64(seed), index)
    }

    /// [`SplitMix64::for_item`] given `mix64(seed)`, for callers that draw many items of one
    /// seed and mix it once.
    pub(crate) fn for_mixed_item(mixed_seed: u64, index: u64) -> SplitMix64 {
        SplitMix64::new(mix64(mixed_seed ^ index.wrapping_mul(GAMMA)))
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix64(self.state)
    }

    /// Skips `n` draws: the stream continues as if `n` draws of [`SplitMix64::next_u64`] had
    /// been made (their outputs are not computed).
    pub(crate) fn skip(&mut self, n: u64) {
        self.state = self.state.wrapping_add(GAMMA.wrapping_mul(n));
    }

    /// A uniform integer in `[0, n)` (0 when `n` is 0), by Lemire's multiply-and-shift (bias
    /// below n / 2^64, negligible here).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// The uniform double in `[0, 1)` of 53 random bits `m`: `m / 2^53` (exact, as `m < 2^53`).
pub(crate) fn unit_of_bits(m: u64) -> f64 {
    m as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Shortest random string before trimming (the reference generator's `MIN_STRING_LENGTH`).
const MIN_STRING_LENGTH: u64 = 3;

/// Appends a random string to `buf` as the reference generator's `nextString(maxLength)` shapes
/// it: `3 + uniform[0, max_len - 3)` characters, each a space with probability 1/13 and otherwise
/// a uniform lowercase letter, then trimmed of spaces at both ends.
pub(crate) fn push_string(rng: &mut SplitMix64, max_len: u64, buf: &mut String) {
    let len = MIN_STRING_LENGTH + rng.below(max_len.saturating_sub(MIN_STRING_LENGTH).max(1));
    let start = buf.len();
    for _ in 0..len {
        // One draw per character: the high 32 bits decide a space (1 in 13), the low 32 bits
        // pick the letter (each by multiply-and-shift, as `below`).
        let x = rng.next_u64();
        if ((x >> 32) * 13) >> 32 == 0 {
            buf.push(' ');
        } else {
            buf.push(char::from(b'a' + (((x & 0xFFFF_FFFF) * 26) >> 32) as u8));
        }
    }
    // Trim: drop trailing spaces, then leading ones of the part just written.
    let trimmed_end = buf[start..].trim_end().len();
    buf.truncate(start + trimmed_end);
    let leading = buf[start..].len() - buf[start..].trim_start().len();
    buf.drain(start..start + leading);
}

/// Skips the draws of [`push_string`] with this `max_len` without building the string.
pub(crate) fn skip_string(rng: &mut SplitMix64, max_len: u64) {
    let len = MIN_STRING_LENGTH + rng.below(max_len.saturating_sub(MIN_STRING_LENGTH).max(1));
    rng.skip(len);
}

/// Appends exactly `len` uniform lowercase letters (the reference's `nextExactString`).
pub(crate) fn push_exact_string(rng: &mut SplitMix64, len: usize, buf: &mut String) {
    buf.reserve(len);
    for _ in 0..len {
        buf.push(letter(rng));
    }
}

fn letter(rng: &mut SplitMix64) -> char {
    char::from(b'a' + rng.below(26) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_stream_and_other_seeds_other_streams() {
        let a: Vec<u64> = (0..5)
            .map({
                let mut r = SplitMix64::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let mut again = SplitMix64::new(7);
        assert!(a.iter().all(|&x| x == again.next_u64()));
        let mut other = SplitMix64::new(8);
        assert!(a.iter().all(|&x| x != other.next_u64()));
    }

    #[test]
    fn splitmix_matches_its_published_first_outputs() {
        // The reference implementation (Vigna's splitmix64.c) seeded with 0 starts with
        // 0xE220A8397B1DCDAF.
        assert_eq!(SplitMix64::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn below_stays_in_range_and_covers_it_evenly() {
        let mut r = SplitMix64::new(1);
        let mut counts = [0u32; 13];
        let draws = 130_000;
        for _ in 0..draws {
            counts[r.below(13) as usize] += 1;
        }
        // Each bucket expects 10,000 (sd ~ 96); 5 sd either side.
        assert!(counts.iter().all(|&c| (9_520..=10_480).contains(&c)), "{counts:?}");
        assert_eq!(r.below(0), 0);
        assert_eq!(r.below(1), 0);
    }

    #[test]
    fn units_are_in_the_half_open_unit_interval_with_mean_one_half() {
        let mut r = SplitMix64::new(2);
        let n = 100_000;
        let mut sum = 0.0;
        assert_eq!(unit_of_bits(0), 0.0);
        assert!(unit_of_bits((1 << 53) - 1) < 1.0);
        for _ in 0..n {
            let u = unit_of_bits(r.next_u64() >> 11);
            assert!((0.0..1.0).contains(&u));
            sum += u;
        }
        // sd of the mean: sqrt(1/12 / n) ~ 0.0009.
        assert!((sum / n as f64 - 0.5).abs() < 0.005);
    }

    #[test]
    fn item_streams_differ_between_items_and_seeds() {
        let first = |seed, item| SplitMix64::for_item(seed, item).next_u64();
        assert_eq!(first(1, 5), first(1, 5));
        assert_ne!(first(1, 5), first(1, 6));
        assert_ne!(first(1, 5), first(2, 5));
    }

    #[test]
    fn strings_have_the_reference_lengths_and_alphabet_and_no_outer_spaces() {
        let mut r = SplitMix64::new(3);
        for max in [5u64, 7, 20, 100] {
            for _ in 0..2_000 {
                let mut s = String::new();
                push_string(&mut r, max, &mut s);
                assert!(s.len() < max as usize, "{s:?} for max {max}");
                assert!(s.bytes().all(|b| b == b' ' || b.is_ascii_lowercase()), "{s:?}");
                assert_eq!(s.trim(), s);
            }
        }
    }

    #[test]
    fn string_characters_are_spaces_one_time_in_13_and_letters_evenly_otherwise() {
        let mut r = SplitMix64::new(5);
        let mut s = String::new();
        // Long strings, so trimming changes the counts little.
        for _ in 0..2_000 {
            push_string(&mut r, 1_000, &mut s);
        }
        let n = s.len() as f64;
        let spaces = s.bytes().filter(|&b| b == b' ').count() as f64;
        // ~1M characters: sd of the space share ~ 0.0003.
        assert!((spaces / n - 1.0 / 13.0).abs() < 0.002, "space share {}", spaces / n);
        let mut letters = [0f64; 26];
        for b in s.bytes().filter(u8::is_ascii_lowercase) {
            letters[usize::from(b - b'a')] += 1.0;
        }
        let each = (n - spaces) / 26.0;
        assert!(letters.iter().all(|&c| (c / each - 1.0).abs() < 0.02), "{letters:?}");
    }

    #[test]
    fn skipping_draws_continues_the_stream_where_drawing_would() {
        let mut drawn = SplitMix64::new(11);
        let mut skipped = drawn.clone();
        for _ in 0..5 {
            drawn.next_u64();
        }
        skipped.skip(5);
        assert_eq!(drawn.next_u64(), skipped.next_u64());
        for max in [5u64, 7, 20, 100] {
            let (mut built, mut skipped) = (SplitMix64::new(max), SplitMix64::new(max));
            push_string(&mut built, max, &mut String::new());
            skip_string(&mut skipped, max);
            assert_eq!(built.next_u64(), skipped.next_u64(), "max {max}");
        }
    }

    #[test]
    fn exact_strings_have_exactly_the_length_asked() {
        let mut r = SplitMix64::new(4);
        let mut s = String::from("x");
        push_exact_string(&mut r, 68, &mut s);
        assert_eq!(s.len(), 69);
        assert!(s[1..].bytes().all(|b| b.is_ascii_lowercase()));
    }
}
