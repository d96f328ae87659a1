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

use std::sync::Arc;

use eddy_engine::{Record, Timestamp, Value};

use super::NexmarkTable;
use super::rng::{SplitMix64, push_exact_string, push_string};

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

const NUM_CATEGORIES: u64 = 5;
/// Ids past the last generated one that a random choice may pick (reference: `*_ID_LEAD`).
const ID_LEAD: u64 = 10;
/// Hot ids are the first id of each batch of this many (reference: `HOT_*_RATIO` constants).
const HOT_BATCH: u64 = 100;
/// P(bid to a hot auction) = 1 - 1/this (reference default `hotAuctionRatio`).
const HOT_AUCTION_RATIO: u64 = 2;
/// P(bid by a hot bidder) = 1 - 1/this (reference default `hotBiddersRatio`).
const HOT_BIDDERS_RATIO: u64 = 4;
/// P(auction by a hot seller) = 1 - 1/this (reference default `hotSellersRatio`).
const HOT_SELLERS_RATIO: u64 = 4;
/// Auctions open at once (reference default `numInFlightAuctions`).
const NUM_IN_FLIGHT_AUCTIONS: u64 = 100;
/// People who place bids and auctions (reference default `numActivePeople`).
const NUM_ACTIVE_PEOPLE: u64 = 1000;
/// Average record sizes in bytes (reference defaults).
const AVG_PERSON_BYTES: usize = 200;
const AVG_AUCTION_BYTES: usize = 500;
const AVG_BID_BYTES: usize = 100;
/// Distinct bid channels (the Flink port's `CHANNELS_NUMBER`).
const CHANNELS: u64 = 10_000;
/// 1 bid in this many comes from a channel other than the 4 hot ones.
const HOT_CHANNELS_RATIO: u64 = 100;

const HOT_CHANNELS: [&str; 4] = ["Google", "Facebook", "Baidu", "Apple"];
const HOT_URLS: [&str; 4] = [
    "https://www.nexmark.com/googl/item.htm?query=1",
    "https://www.nexmark.com/meta/item.htm?query=1",
    "https://www.nexmark.com/bidu/item.htm?query=1",
    "https://www.nexmark.com/aapl/item.htm?query=1",
];
const US_STATES: [&str; 6] = ["AZ", "CA", "ID", "OR", "WA", "WY"];
const US_CITIES: [&str; 10] =
    ["Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"];
const FIRST_NAMES: [&str; 11] =
    ["Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"];
const LAST_NAMES: [&str; 9] = ["Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"];

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

/// The first event number `>= event` of kind `table`.
pub fn next_of_kind(event: u64, table: NexmarkTable) -> u64 {
    let offset = event % PROPORTION_DENOMINATOR;
    let (first, count) = match table {
        NexmarkTable::Person => (0, PERSON_PROPORTION),
        NexmarkTable::Auction => (PERSON_PROPORTION, AUCTION_PROPORTION),
        NexmarkTable::Bid => (PERSON_PROPORTION + AUCTION_PROPORTION, BID_PROPORTION),
    };
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
fn next_base0_person_id(event: u64, rng: &mut SplitMix64) -> u64 {
    let people = last_base0_person_id(event) + 1;
    let active = people.min(NUM_ACTIVE_PEOPLE);
    people - active + rng.below(active + ID_LEAD)
}

/// A random auction likely in flight (0-based): from `NUM_IN_FLIGHT_AUCTIONS` before the last one
/// to `ID_LEAD` after it.
fn next_base0_auction_id(event: u64, rng: &mut SplitMix64) -> u64 {
    let last = last_base0_auction_id(event).max(0) as u64;
    let min = last.saturating_sub(NUM_IN_FLIGHT_AUCTIONS);
    min + rng.below(last - min + 1 + ID_LEAD)
}

/// A price in cents, `round(100 × 10^(6u))` for uniform `u`: log-uniform over [$1, $1,000,000].
fn next_price(rng: &mut SplitMix64) -> i64 {
    // 10^(6u) as exp(6u ln 10): the same value to within an ulp, at half the cost of `powf`.
    ((rng.unit_f64() * 6.0 * std::f64::consts::LN_10).exp() * 100.0).round() as i64
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
        Timestamp(self.base.0 + (n as f64 * (1e6 / self.rate)).floor() as i64)
    }
}

/// Variants kept per length in an [`ExtraPool`].
const EXTRA_VARIANTS: u64 = 8;

/// The `extra` padding strings, built once per (length, variant) and shared: generating one per
/// record would cost an allocation and ~100 random draws. Each string is a function of
/// `(seed, length, variant)` only, so output does not depend on the order of requests.
#[derive(Debug)]
struct ExtraPool {
    seed: u64,
    by_len: Vec<Vec<Option<Arc<str>>>>,
    empty: Arc<str>,
}

impl ExtraPool {
    fn new(seed: u64) -> ExtraPool {
        ExtraPool { seed: seed ^ 0xE87A, by_len: Vec::new(), empty: Arc::from("") }
    }

    /// An extra string such that `current_size + len` averages `average_size`, as the reference's
    /// `nextExtra`: length uniform in `[d - r, d + r)` with `d = average_size - current_size` and
    /// `r = round(0.2 d)`; empty when the record is already larger than the average.
    fn next(&mut self, rng: &mut SplitMix64, current_size: usize, average_size: usize) -> Value {
        if current_size > average_size {
            return Value::Str(self.empty.clone());
        }
        let desired = average_size - current_size;
        // round(desired / 5) in integers (desired / 5 never ends in .5).
        let delta = (2 * desired + 5) / 10;
        let len = desired - delta + if delta == 0 { 0 } else { rng.below(2 * delta as u64) as usize };
        let variant = rng.below(EXTRA_VARIANTS) as usize;
        if self.by_len.len() <= len {
            self.by_len.resize(len + 1, Vec::new());
        }
        let slots = &mut self.by_len[len];
        if slots.is_empty() {
            slots.resize(EXTRA_VARIANTS as usize, None);
        }
        let seed = self.seed;
        let s = slots[variant].get_or_insert_with(|| {
            let mut rng = SplitMix64::for_item(seed, (len as u64) * EXTRA_VARIANTS + variant as u64);
            let mut buf = String::with_capacity(len);
            push_exact_string(&mut rng, len, &mut buf);
            Arc::from(buf)
        });
        Value::Str(s.clone())
    }
}

/// Generates the records of the Nexmark event stream, one event number at a time. Shared values
/// (channels, urls, names, cities, states, extra strings) are `Arc<str>` built once.
#[derive(Debug)]
pub struct NexmarkGenerator {
    seed: u64,
    clock: EventClock,
    hot_channels: Vec<(Value, Value)>,
    /// Channels other than the hot ones, built when first drawn.
    channels: Vec<Option<(Value, Value)>>,
    names: Vec<Value>,
    cities: Vec<Value>,
    states: Vec<Value>,
    extras: ExtraPool,
    buf: String,
    /// Per column of the record's table: false when no query reads it (generated as null).
    keep: Vec<bool>,
}

fn text(s: &str) -> Value {
    Value::Str(Arc::from(s))
}

impl NexmarkGenerator {
    /// A generator for `seed` with event times from `clock`.
    pub fn new(seed: u64, clock: EventClock) -> NexmarkGenerator {
        NexmarkGenerator {
            seed,
            clock,
            hot_channels: HOT_CHANNELS.iter().zip(HOT_URLS).map(|(c, u)| (text(c), text(u))).collect(),
            channels: vec![None; CHANNELS as usize],
            names: FIRST_NAMES.iter().flat_map(|f| LAST_NAMES.iter().map(move |l| text(&format!("{f} {l}")))).collect(),
            cities: US_CITIES.iter().map(|c| text(c)).collect(),
            states: US_STATES.iter().map(|s| text(s)).collect(),
            extras: ExtraPool::new(seed),
            buf: String::new(),
            keep: Vec::new(),
        }
    }

    /// Projection pushdown: the columns whose `keep` entry is false (by position in the table's
    /// [`super::schema`]; columns past the end of `keep` are kept) are generated as null. The
    /// random draws are the same as without pruning, so the kept columns hold the values they
    /// would hold otherwise; what is saved is building and sharing the strings (channel, url,
    /// extra, names) that the query never reads.
    #[must_use]
    pub fn keeping(mut self, keep: &[bool]) -> NexmarkGenerator {
        self.keep = keep.to_vec();
        self
    }

    /// Whether column `i` is generated (not pruned).
    fn kept(&self, i: usize) -> bool {
        self.keep.get(i).copied().unwrap_or(true)
    }

    /// `record` with the pruned columns replaced by null.
    fn pruned(&self, mut record: Record) -> Record {
        if self.keep.iter().any(|k| !k) {
            for (i, v) in record.values.iter_mut().enumerate() {
                if !self.kept(i) {
                    *v = Value::Null;
                }
            }
        }
        record
    }

    /// The event-time clock.
    pub fn clock(&self) -> EventClock {
        self.clock
    }

    /// The record of event `event`, in the column order of [`super::schema`] for its kind
    /// ([`kind_of`]). A function of `(seed, clock, event)` only.
    pub fn record(&mut self, event: u64) -> Record {
        let mut rng = SplitMix64::for_item(self.seed, event);
        let time = self.clock.time_of(event);
        let record = match kind_of(event) {
            NexmarkTable::Bid => self.bid(event, time, &mut rng),
            NexmarkTable::Auction => self.auction(event, time, &mut rng),
            NexmarkTable::Person => self.person(event, time, &mut rng),
        };
        self.pruned(record)
    }

    fn bid(&mut self, event: u64, time: Timestamp, rng: &mut SplitMix64) -> Record {
        let auction = if rng.below(HOT_AUCTION_RATIO) > 0 {
            (last_base0_auction_id(event).max(0) as u64 / HOT_BATCH) * HOT_BATCH
        } else {
            next_base0_auction_id(event, rng)
        };
        let bidder = if rng.below(HOT_BIDDERS_RATIO) > 0 {
            // The second person of the batch, so hot bidders and hot sellers differ.
            (last_base0_person_id(event) / HOT_BATCH) * HOT_BATCH + 1
        } else {
            next_base0_person_id(event, rng)
        };
        let price = next_price(rng);
        let channel_number = rng.below(CHANNELS);
        let (channel, url) = if rng.below(HOT_CHANNELS_RATIO) == HOT_CHANNELS_RATIO - 1 {
            if self.kept(3) || self.kept(4) { self.channel(channel_number) } else { (Value::Null, Value::Null) }
        } else {
            let hot = rng.below(HOT_CHANNELS.len() as u64) as usize;
            if self.kept(3) || self.kept(4) { self.hot_channels[hot].clone() } else { (Value::Null, Value::Null) }
        };
        let channel = if self.kept(3) { channel } else { Value::Null };
        let url = if self.kept(4) { url } else { Value::Null };
        // The reference counts 4 numbers of 8 bytes toward the bid's size. The last draw: pruned,
        // it is not made at all.
        let extra = if self.kept(6) { self.extras.next(rng, 32, AVG_BID_BYTES) } else { Value::Null };
        Record::new(vec![
            Value::Long(auction as i64 + FIRST_AUCTION_ID),
            Value::Long(bidder as i64 + FIRST_PERSON_ID),
            Value::Long(price),
            channel,
            url,
            Value::Timestamp(time),
            extra,
        ])
    }

    /// Channel `n` (not a hot one): `channel-<n>` and a url with a random path, which carries a
    /// `channel_id` parameter 9 times in 10 (as the Flink port); a function of `(seed, n)`.
    fn channel(&mut self, n: u64) -> (Value, Value) {
        let seed = self.seed ^ 0xC4A2;
        self.channels[n as usize]
            .get_or_insert_with(|| {
                let mut rng = SplitMix64::for_item(seed, n);
                let mut url = String::from("https://www.nexmark.com/");
                push_string(&mut rng, 5, &mut url);
                url.push_str("/item.htm?query=1");
                if rng.below(10) != 9 {
                    url.push_str(&format!("&channel_id={}", (n as u32).reverse_bits()));
                }
                (text(&format!("channel-{n}")), text(&url))
            })
            .clone()
    }

    fn auction(&mut self, event: u64, time: Timestamp, rng: &mut SplitMix64) -> Record {
        let id = last_base0_auction_id(event) + FIRST_AUCTION_ID;
        let seller = if rng.below(HOT_SELLERS_RATIO) > 0 {
            (last_base0_person_id(event) / HOT_BATCH) * HOT_BATCH
        } else {
            next_base0_person_id(event, rng)
        };
        let category = FIRST_CATEGORY_ID + rng.below(NUM_CATEGORIES) as i64;
        let initial_bid = next_price(rng);
        // Length: 1 ms + uniform over twice the time until NUM_IN_FLIGHT_AUCTIONS more auctions.
        let events_ahead = NUM_IN_FLIGHT_AUCTIONS * PROPORTION_DENOMINATOR / AUCTION_PROPORTION;
        let horizon_us = (self.clock.time_of(event + events_ahead).0 - time.0).max(0) as u64;
        let length_us = 1_000 + rng.below((2 * horizon_us).max(1)) as i64;
        self.buf.clear();
        push_string(rng, 20, &mut self.buf);
        let name_len = self.buf.len();
        push_string(rng, 100, &mut self.buf);
        let (name, description) = self.buf.split_at(name_len);
        let (name, description) = (text(name), text(description));
        let reserve = initial_bid + next_price(rng);
        let current = 8 + name_len + (self.buf.len() - name_len) + 5 * 8;
        let extra = self.extras.next(rng, current, AVG_AUCTION_BYTES);
        Record::new(vec![
            Value::Long(id),
            name,
            description,
            Value::Long(initial_bid),
            Value::Long(reserve),
            Value::Timestamp(time),
            Value::Timestamp(Timestamp(time.0 + length_us)),
            Value::Long(seller as i64 + FIRST_PERSON_ID),
            Value::Long(category),
            extra,
        ])
    }

    fn person(&mut self, event: u64, time: Timestamp, rng: &mut SplitMix64) -> Record {
        let id = last_base0_person_id(event) as i64 + FIRST_PERSON_ID;
        let name = self.names[rng.below(self.names.len() as u64) as usize].clone();
        self.buf.clear();
        push_string(rng, 7, &mut self.buf);
        self.buf.push('@');
        push_string(rng, 5, &mut self.buf);
        self.buf.push_str(".com");
        let email = text(&self.buf);
        let email_len = self.buf.len();
        self.buf.clear();
        for i in 0..4 {
            if i > 0 {
                self.buf.push(' ');
            }
            let group = rng.below(10_000);
            for digit in [group / 1000, group / 100 % 10, group / 10 % 10, group % 10] {
                self.buf.push(char::from(b'0' + digit as u8));
            }
        }
        let credit_card = text(&self.buf);
        let city = self.cities[rng.below(self.cities.len() as u64) as usize].clone();
        let state = self.states[rng.below(self.states.len() as u64) as usize].clone();
        let len = |v: &Value| v.as_str().map_or(0, str::len);
        let current = 8 + len(&name) + email_len + self.buf.len() + len(&city) + len(&state);
        let extra = self.extras.next(rng, current, AVG_PERSON_BYTES);
        Record::new(vec![Value::Long(id), name, email, credit_card, city, state, Value::Timestamp(time), extra])
    }
}
