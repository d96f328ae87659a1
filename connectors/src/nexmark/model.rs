//! The Nexmark event model: which event number is a person, an auction or a bid, which ids it
//! carries, and the content of each record.
//!
//! Source: the benchmark's reference generator (Apache Beam's `sdks/java/testing/nexmark`
//! `NexmarkGenerator` / `GeneratorConfig`, and the `nexmark/nexmark` Flink port that added the bid
//! `channel` and `url`), with its default configuration. Behaviour kept: proportions person :
//! auction : bid = 1 : 3 : 46 per 50 events in a fixed order; ids from 1000; new ids follow the
//! event number so bids refer to recent auctions and people (plus up to 10 "lead" ids not yet
//! generated, as the reference allows); hot auctions (ratio 2), hot bidders (ratio 4) and hot
//! sellers (ratio 4) chosen as the first (or second) id of the last batch of 100; prices
//! `round(100 × 10^(6u))` cents; 5 categories from 10; auction lengths averaging the time of the
//! next 100 in-flight auctions; 99 % of bids from 4 hot channels; record sizes padded with an
//! `extra` string to the reference's average sizes (person 200, auction 500, bid 100 bytes).
//! Changed: the random generator (SplitMix64 per event, not `java.util.Random`), so values are
//! not bit-identical to the Java generator's; and `extra` strings come from a pool of 8
//! strings per length, built once, instead of being drawn per record.

use eddy_engine::Timestamp;

use super::NexmarkTable;
use super::rng::{SplitMix64, unit_of_bits};

/// First person id.
pub const FIRST_PERSON_ID: i64 = 1000;
/// First auction id.
pub const FIRST_AUCTION_ID: i64 = 1000;
/// First category id.
pub const FIRST_CATEGORY_ID: i64 = 10;
/// People per [`PROPORTION_DENOMINATOR`] events.
pub const PERSON_PROPORTION: u64 = 1;
/// Auctions per [`PROPORTION_DENOMINATOR`] events.
pub const AUCTION_PROPORTION: u64 = 3;
/// Bids per [`PROPORTION_DENOMINATOR`] events.
pub const BID_PROPORTION: u64 = 46;
/// Events per cycle of the proportions: 50.
pub const PROPORTION_DENOMINATOR: u64 = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION;

pub(crate) const NUM_CATEGORIES: u64 = 5;
/// Ids past the last generated one that a random choice may pick (reference: `*_ID_LEAD`).
pub(crate) const ID_LEAD: u64 = 10;
/// Hot ids are the first id of each batch of this many (reference: `HOT_*_RATIO` constants).
pub(crate) const HOT_BATCH: u64 = 100;
/// P(bid to a hot auction) = 1 - 1/this (reference default `hotAuctionRatio`).
pub(crate) const HOT_AUCTION_RATIO: u64 = 2;
/// P(bid by a hot bidder) = 1 - 1/this (reference default `hotBiddersRatio`).
pub(crate) const HOT_BIDDERS_RATIO: u64 = 4;
/// P(auction by a hot seller) = 1 - 1/this (reference default `hotSellersRatio`).
pub(crate) const HOT_SELLERS_RATIO: u64 = 4;
/// Auctions open at once (reference default `numInFlightAuctions`).
pub(crate) const NUM_IN_FLIGHT_AUCTIONS: u64 = 100;
/// People who place bids and auctions (reference default `numActivePeople`).
pub(crate) const NUM_ACTIVE_PEOPLE: u64 = 1000;
/// Average record sizes in bytes (reference defaults).
pub(crate) const AVG_PERSON_BYTES: usize = 200;
pub(crate) const AVG_AUCTION_BYTES: usize = 500;
pub(crate) const AVG_BID_BYTES: usize = 100;
/// Distinct bid channels (the Flink port's `CHANNELS_NUMBER`).
pub(crate) const CHANNELS: u64 = 10_000;
/// 1 bid in this many comes from a channel other than the 4 hot ones.
pub(crate) const HOT_CHANNELS_RATIO: u64 = 100;

pub(crate) const HOT_CHANNELS: [&str; 4] = ["Google", "Facebook", "Baidu", "Apple"];
pub(crate) const HOT_URLS: [&str; 4] = [
    "https://www.nexmark.com/googl/item.htm?query=1",
    "https://www.nexmark.com/meta/item.htm?query=1",
    "https://www.nexmark.com/bidu/item.htm?query=1",
    "https://www.nexmark.com/aapl/item.htm?query=1",
];
pub(crate) const US_STATES: [&str; 6] = ["AZ", "CA", "ID", "OR", "WA", "WY"];
pub(crate) const US_CITIES: [&str; 10] =
    ["Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"];
pub(crate) const FIRST_NAMES: [&str; 11] =
    ["Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"];
pub(crate) const LAST_NAMES: [&str; 9] =
    ["Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"];

/// The kind of event number `event`: in each cycle of 50, offset 0 is a person, 1..=3 auctions,
/// 4..=49 bids.
pub fn kind_of(event: u64) -> NexmarkTable {
    let offset = event % PROPORTION_DENOMINATOR;
    if offset < PERSON_PROPORTION {
        NexmarkTable::Person
    } else if offset < PERSON_PROPORTION + AUCTION_PROPORTION {
        NexmarkTable::Auction
    } else {
        NexmarkTable::Bid
    }
}

/// The offsets in a cycle of [`PROPORTION_DENOMINATOR`] events of `table`'s run of events: the
/// first and how many.
fn run_in_cycle(table: NexmarkTable) -> (u64, u64) {
    match table {
        NexmarkTable::Person => (0, PERSON_PROPORTION),
        NexmarkTable::Auction => (PERSON_PROPORTION, AUCTION_PROPORTION),
        NexmarkTable::Bid => (PERSON_PROPORTION + AUCTION_PROPORTION, BID_PROPORTION),
    }
}

/// One past the last event of the run of `table`'s events that holds `event` (an event of that
/// kind): the events from `event` to there are all of kind `table`.
pub(crate) fn end_of_run(event: u64, table: NexmarkTable) -> u64 {
    debug_assert_eq!(kind_of(event), table);
    let (first, count) = run_in_cycle(table);
    event - event % PROPORTION_DENOMINATOR + first + count
}

/// The first event number `>= event` of kind `table`.
pub fn next_of_kind(event: u64, table: NexmarkTable) -> u64 {
    let offset = event % PROPORTION_DENOMINATOR;
    let (first, count) = run_in_cycle(table);
    if offset < first {
        event + (first - offset)
    } else if offset < first + count {
        event
    } else {
        event + (PROPORTION_DENOMINATOR - offset) + first
    }
}

/// The 0-based id of the last person generated at or before event `event` (the person of this
/// cycle: every cycle starts with one).
pub fn last_base0_person_id(event: u64) -> u64 {
    let cycle = event / PROPORTION_DENOMINATOR;
    let offset = event % PROPORTION_DENOMINATOR;
    // Past the people of this cycle: the last of them.
    let offset = if offset < PERSON_PROPORTION { offset } else { PERSON_PROPORTION - 1 };
    cycle * PERSON_PROPORTION + offset
}

/// The 0-based id of the last auction generated at or before event `event`; -1 before the first
/// auction (event 0).
pub fn last_base0_auction_id(event: u64) -> i64 {
    let cycle = (event / PROPORTION_DENOMINATOR) as i64;
    let offset = event % PROPORTION_DENOMINATOR;
    if offset < PERSON_PROPORTION {
        // A person: the last auction is the last of the previous cycle.
        (cycle - 1) * AUCTION_PROPORTION as i64 + (AUCTION_PROPORTION as i64 - 1)
    } else if offset < PERSON_PROPORTION + AUCTION_PROPORTION {
        cycle * AUCTION_PROPORTION as i64 + (offset - PERSON_PROPORTION) as i64
    } else {
        cycle * AUCTION_PROPORTION as i64 + (AUCTION_PROPORTION as i64 - 1)
    }
}

/// A random active person (0-based): one of the last `NUM_ACTIVE_PEOPLE` people, or up to
/// `ID_LEAD - 1` ids ahead.
pub(crate) fn next_base0_person_id(event: u64, rng: &mut SplitMix64) -> u64 {
    let people = last_base0_person_id(event) + 1;
    let active = people.min(NUM_ACTIVE_PEOPLE);
    people - active + rng.below(active + ID_LEAD)
}

/// A random auction likely in flight (0-based): from `NUM_IN_FLIGHT_AUCTIONS` before the last one
/// to `ID_LEAD` after it.
pub(crate) fn next_base0_auction_id(event: u64, rng: &mut SplitMix64) -> u64 {
    let last = last_base0_auction_id(event).max(0) as u64;
    let min = last.saturating_sub(NUM_IN_FLIGHT_AUCTIONS);
    min + rng.below(last - min + 1 + ID_LEAD)
}

/// A bid's auction (0-based): with probability `1 - 1/HOT_AUCTION_RATIO` the hot one (the first
/// of the last batch of [`HOT_BATCH`] auctions), else [`next_base0_auction_id`]. `None` when not
/// `wanted`: the draws it would make are then skipped (the stream continues as if they had been).
pub(crate) fn bid_auction(event: u64, rng: &mut SplitMix64, wanted: bool) -> Option<u64> {
    let hot = rng.below(HOT_AUCTION_RATIO) > 0;
    match (hot, wanted) {
        (true, true) => Some((last_base0_auction_id(event).max(0) as u64 / HOT_BATCH) * HOT_BATCH),
        (false, true) => Some(next_base0_auction_id(event, rng)),
        (true, false) => None,
        // next_base0_auction_id draws once.
        (false, false) => {
            rng.skip(1);
            None
        }
    }
}

/// A bid's bidder (0-based): with probability `1 - 1/HOT_BIDDERS_RATIO` the hot one (the second
/// person of the last batch of [`HOT_BATCH`], so hot bidders and hot sellers differ), else
/// [`next_base0_person_id`]. `None` when not `wanted`: the draws are then skipped.
pub(crate) fn bid_bidder(event: u64, rng: &mut SplitMix64, wanted: bool) -> Option<u64> {
    let hot = rng.below(HOT_BIDDERS_RATIO) > 0;
    match (hot, wanted) {
        (true, true) => Some((last_base0_person_id(event) / HOT_BATCH) * HOT_BATCH + 1),
        (false, true) => Some(next_base0_person_id(event, rng)),
        (true, false) => None,
        // next_base0_person_id draws once.
        (false, false) => {
            rng.skip(1);
            None
        }
    }
}

/// A price in cents, `round(100 × 10^(6u))` for uniform `u = m / 2^53` (`m`: the top 53 bits of
/// a draw): log-uniform over [$1, $1,000,000]. The generator computes it by
/// [`super::price::Prices`], which gives the same values faster.
pub(crate) fn price_of_bits(m: u64) -> i64 {
    // 10^(6u) as exp(6u ln 10): the same value to within an ulp, at half the cost of `powf`.
    round_half_away((unit_of_bits(m) * 6.0 * std::f64::consts::LN_10).exp() * 100.0)
}

/// `x.round() as i64` (halves away from zero) for `x >= 0` (and NaN, as 0), without the libm call
/// that `f64::round` is on x86-64 without SSE4.1: the truncation is one instruction, and
/// `x - trunc(x)` is exact (both lie in `x`'s binade or below), so comparing it to 0.5 decides
/// the rounding exactly as `round` does. Values past `i64::MAX` saturate, as `as` does.
pub(crate) fn round_half_away(x: f64) -> i64 {
    let t = x as i64;
    if x - t as f64 >= 0.5 { t.saturating_add(1) } else { t }
}

/// `x.floor() as i64` without the libm call (see [`round_half_away`]): truncation, one less
/// when that went up (negative non-integers). Saturates, and gives 0 for NaN, as `as` does.
pub(crate) fn floor_i64(x: f64) -> i64 {
    let t = x as i64;
    if (t as f64) > x { t.saturating_sub(1) } else { t }
}

/// Event-time spacing: event `n` happens at `base + floor(n × 10^6 / rate)` µs.
#[derive(Clone, Copy, Debug)]
pub struct EventClock {
    /// Event time of event 0.
    pub base: Timestamp,
    /// Events per second of event time.
    pub rate: f64,
}

impl EventClock {
    /// The event time of event `n`. Non-decreasing in `n`; increasing when `rate <= 10^6`.
    pub fn time_of(&self, n: u64) -> Timestamp {
        Timestamp(self.base.0 + floor_i64(n as f64 * self.us_per_event()))
    }

    /// µs of event time between two events: `10^6 / rate`.
    pub(crate) fn us_per_event(&self) -> f64 {
        1e6 / self.rate
    }
}

pub use super::generator::NexmarkGenerator;
