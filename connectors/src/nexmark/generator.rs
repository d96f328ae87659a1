//! [`NexmarkGenerator`]: the content of each event's record (the model of [`super::model`]),
//! built straight into the record's boxed slice, with the columns a query does not read left null
//! and, where nothing read depends on them, not computed at all (their random draws are skipped,
//! not made, so the kept columns hold the same values as without pruning).

use eddy_engine::value::Text;

use eddy_engine::{Record, Timestamp, Value};

use super::NexmarkTable;
use super::model::*;
use super::price::Prices;
use super::rng::{SplitMix64, mix64, push_exact_string, push_string, skip_string};

/// Variants kept per length in an [`ExtraPool`].
const EXTRA_VARIANTS: u64 = 8;

/// Columns of the widest table (auction).
const MAX_COLUMNS: usize = 10;

/// The `extra` padding strings, built once per (length, variant) and shared: generating one per
/// record would cost an allocation and ~100 random draws. Each string is a function of
/// `(seed, length, variant)` only, so output does not depend on the order of requests.
#[derive(Debug)]
struct ExtraPool {
    seed: u64,
    by_len: Vec<Vec<Option<Text>>>,
    empty: Text,
}

impl ExtraPool {
    fn new(seed: u64) -> ExtraPool {
        ExtraPool { seed: seed ^ 0xE87A, by_len: Vec::new(), empty: Text::default() }
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
            Text::from(buf)
        });
        Value::Str(s.clone())
    }
}

/// Generates the records of the Nexmark event stream, one event number at a time. Shared values
/// (channels, urls, names, cities, states, extra strings) are built once (`Text`: a clone copies short text, shares longer).
#[derive(Debug)]
pub struct NexmarkGenerator {
    seed: u64,
    /// `mix64(seed)`, the start of every event's stream ([`SplitMix64::for_mixed_item`]).
    mixed_seed: u64,
    clock: EventClock,
    /// `clock.us_per_event()`, computed once.
    us_per_event: f64,
    hot_channels: Vec<(Value, Value)>,
    /// Channels other than the hot ones, built when first drawn.
    channels: Vec<Option<(Value, Value)>>,
    names: Vec<Value>,
    cities: Vec<Value>,
    states: Vec<Value>,
    extras: ExtraPool,
    /// Prices without an `exp` call each ([`price_of_bits`]'s values).
    prices: Prices,
    buf: String,
    /// Per column of the record's table: false when no query reads it (generated as null).
    kept: [bool; MAX_COLUMNS],
}

/// `N` slots for a record's values: `reuse` (an `Option<Box<[Value]>>`) when it has exactly
/// `N`, whose old values the caller overwrites (each dropped as it is overwritten; no
/// allocation); else `N` new nulls. The caller writes every slot straight into the boxed slice,
/// in the order its values draw (a record built first and boxed after would be built on the
/// stack and copied).
fn slots<const N: usize>(reuse: Option<Box<[Value]>>) -> Box<[Value]> {
    match reuse {
        Some(values) if values.len() == N => values,
        _ => std::iter::repeat_n(Value::Null, N).collect(),
    }
}

/// The `N` slots of [`slots`] as an array, so writing them needs no bounds check.
fn as_array<const N: usize>(values: &mut [Value]) -> &mut [Value; N] {
    values.try_into().expect("slots() gives exactly N values")
}

fn text(s: &str) -> Value {
    Value::Str(Text::from(s))
}

/// `value` when `kept`, else null (the value is then dropped unbuilt when it is lazy).
fn keep_if(kept: bool, value: impl FnOnce() -> Value) -> Value {
    if kept { value() } else { Value::Null }
}

/// `Value::Long` of `value`, null for `None`.
fn long_or_null(value: Option<i64>) -> Value {
    value.map_or(Value::Null, Value::Long)
}

impl NexmarkGenerator {
    /// A generator for `seed` with event times from `clock`.
    pub fn new(seed: u64, clock: EventClock) -> NexmarkGenerator {
        NexmarkGenerator {
            seed,
            mixed_seed: mix64(seed),
            clock,
            us_per_event: clock.us_per_event(),
            hot_channels: HOT_CHANNELS.iter().zip(HOT_URLS).map(|(c, u)| (text(c), text(u))).collect(),
            channels: vec![None; CHANNELS as usize],
            names: FIRST_NAMES.iter().flat_map(|f| LAST_NAMES.iter().map(move |l| text(&format!("{f} {l}")))).collect(),
            cities: US_CITIES.iter().map(|c| text(c)).collect(),
            states: US_STATES.iter().map(|s| text(s)).collect(),
            extras: ExtraPool::new(seed),
            prices: Prices::new(),
            buf: String::new(),
            kept: [true; MAX_COLUMNS],
        }
    }

    /// Projection pushdown: the columns whose `keep` entry is false (by position in the table's
    /// [`super::schema`]; columns past the end of `keep` are kept) are generated as null. The
    /// kept columns hold the values they would hold without pruning; what is saved is building
    /// the values (prices, strings) no query reads and sharing the shared ones.
    #[must_use]
    pub fn keeping(mut self, keep: &[bool]) -> NexmarkGenerator {
        for (i, kept) in self.kept.iter_mut().enumerate() {
            *kept = keep.get(i).copied().unwrap_or(true);
        }
        self
    }

    /// The event-time clock.
    pub fn clock(&self) -> EventClock {
        self.clock
    }

    /// The event time of event `n`: [`EventClock::time_of`] with the division done once.
    fn time_of(&self, n: u64) -> Timestamp {
        Timestamp(self.clock.base.0 + floor_i64(n as f64 * self.us_per_event))
    }

    /// The record of event `event`, in the column order of [`super::schema`] for its kind
    /// ([`kind_of`]). A function of `(seed, clock, event)` only.
    pub fn record(&mut self, event: u64) -> Record {
        self.record_reusing(event, None)
    }

    /// [`NexmarkGenerator::record`], written into `spare` when it has the width of event
    /// `event`'s table (its old values are overwritten and dropped; no allocation); a spare of
    /// another width is dropped and a new record allocated. The record is the same either way.
    pub fn record_reusing(&mut self, event: u64, spare: Option<Record>) -> Record {
        self.record_of_kind(kind_of(event), event, spare)
    }

    /// [`NexmarkGenerator::record_reusing`] for an event known to be of kind `table`.
    pub(crate) fn record_of_kind(&mut self, table: NexmarkTable, event: u64, spare: Option<Record>) -> Record {
        debug_assert_eq!(kind_of(event), table);
        let mut rng = SplitMix64::for_mixed_item(self.mixed_seed, event);
        let reuse = spare.map(|r| r.values);
        let values = match table {
            NexmarkTable::Bid => self.bid(event, &mut rng, reuse),
            NexmarkTable::Auction => self.auction(event, &mut rng, reuse),
            NexmarkTable::Person => self.person(event, &mut rng, reuse),
        };
        Record { values }
    }

    fn bid(&mut self, event: u64, rng: &mut SplitMix64, reuse: Option<Box<[Value]>>) -> Box<[Value]> {
        let k = self.kept;
        let mut values = slots::<7>(reuse);
        let v = as_array::<7>(&mut values);
        v[0] = long_or_null(bid_auction(event, rng, k[0]).map(|a| a as i64 + FIRST_AUCTION_ID));
        v[1] = long_or_null(bid_bidder(event, rng, k[1]).map(|b| b as i64 + FIRST_PERSON_ID));
        v[2] = if k[2] {
            Value::Long(self.prices.next(rng))
        } else {
            rng.skip(1);
            Value::Null
        };
        // The channel, url and extra draws come last: when none of them is read, they are not
        // made at all.
        if k[3] || k[4] || k[6] {
            self.bid_strings(rng, v);
        } else {
            v[3] = Value::Null;
            v[4] = Value::Null;
            v[6] = Value::Null;
        }
        v[5] = keep_if(k[5], || Value::Timestamp(self.time_of(event)));
        values
    }

    /// A bid's channel, url and extra (each null when pruned), from the draws after the price,
    /// written into its slots 3, 4 and 6.
    fn bid_strings(&mut self, rng: &mut SplitMix64, v: &mut [Value; 7]) {
        let k = self.kept;
        let channel_number = rng.below(CHANNELS);
        let (channel, url) = if rng.below(HOT_CHANNELS_RATIO) == HOT_CHANNELS_RATIO - 1 {
            if k[3] || k[4] { self.channel(channel_number) } else { (&Value::Null, &Value::Null) }
        } else {
            let (channel, url) = &self.hot_channels[rng.below(HOT_CHANNELS.len() as u64) as usize];
            (channel, url)
        };
        v[3] = keep_if(k[3], || channel.clone());
        v[4] = keep_if(k[4], || url.clone());
        // The reference counts 4 numbers of 8 bytes toward the bid's size.
        v[6] = keep_if(k[6], || self.extras.next(rng, 32, AVG_BID_BYTES));
    }

    /// Channel `n` (not a hot one): `channel-<n>` and a url with a random path, which carries a
    /// `channel_id` parameter 9 times in 10 (as the Flink port); a function of `(seed, n)`.
    fn channel(&mut self, n: u64) -> (&Value, &Value) {
        let seed = self.seed ^ 0xC4A2;
        let (channel, url) = self.channels[n as usize].get_or_insert_with(|| {
            let mut rng = SplitMix64::for_item(seed, n);
            let mut url = String::from("https://www.nexmark.com/");
            push_string(&mut rng, 5, &mut url);
            url.push_str("/item.htm?query=1");
            if rng.below(10) != 9 {
                url.push_str(&format!("&channel_id={}", (n as u32).reverse_bits()));
            }
            (text(&format!("channel-{n}")), text(&url))
        });
        (channel, url)
    }

    fn auction(&mut self, event: u64, rng: &mut SplitMix64, reuse: Option<Box<[Value]>>) -> Box<[Value]> {
        let k = self.kept;
        let mut values = slots::<10>(reuse);
        let v = as_array::<10>(&mut values);
        let time = self.time_of(event);
        let id = last_base0_auction_id(event) + FIRST_AUCTION_ID;
        let seller = if rng.below(HOT_SELLERS_RATIO) > 0 {
            (last_base0_person_id(event) / HOT_BATCH) * HOT_BATCH
        } else {
            next_base0_person_id(event, rng)
        };
        let category = FIRST_CATEGORY_ID + rng.below(NUM_CATEGORIES) as i64;
        // The reserve adds a second price to the initial bid.
        let initial_bid = if k[3] || k[4] {
            self.prices.next(rng)
        } else {
            rng.skip(1);
            0
        };
        // Length: 1 ms + uniform over twice the time until NUM_IN_FLIGHT_AUCTIONS more auctions.
        v[6] = if k[6] {
            let events_ahead = NUM_IN_FLIGHT_AUCTIONS * PROPORTION_DENOMINATOR / AUCTION_PROPORTION;
            let horizon_us = (self.time_of(event + events_ahead).0 - time.0).max(0) as u64;
            let length_us = 1_000 + rng.below((2 * horizon_us).max(1)) as i64;
            Value::Timestamp(Timestamp(time.0 + length_us))
        } else {
            rng.skip(1);
            Value::Null
        };
        // The strings' lengths count toward the extra's; unread and uncounted, they are skipped.
        let strings_len = if k[1] || k[2] || k[9] {
            self.buf.clear();
            push_string(rng, 20, &mut self.buf);
            let name_len = self.buf.len();
            push_string(rng, 100, &mut self.buf);
            let (name, description) = self.buf.split_at(name_len);
            v[1] = keep_if(k[1], || text(name));
            v[2] = keep_if(k[2], || text(description));
            self.buf.len()
        } else {
            skip_string(rng, 20);
            skip_string(rng, 100);
            v[1] = Value::Null;
            v[2] = Value::Null;
            0
        };
        v[4] = if k[4] {
            Value::Long(initial_bid + self.prices.next(rng))
        } else {
            rng.skip(1);
            Value::Null
        };
        let current = 8 + strings_len + 5 * 8;
        v[9] = keep_if(k[9], || self.extras.next(rng, current, AVG_AUCTION_BYTES));
        v[0] = keep_if(k[0], || Value::Long(id));
        v[3] = keep_if(k[3], || Value::Long(initial_bid));
        v[5] = keep_if(k[5], || Value::Timestamp(time));
        v[7] = keep_if(k[7], || Value::Long(seller as i64 + FIRST_PERSON_ID));
        v[8] = keep_if(k[8], || Value::Long(category));
        values
    }

    fn person(&mut self, event: u64, rng: &mut SplitMix64, reuse: Option<Box<[Value]>>) -> Box<[Value]> {
        let k = self.kept;
        let mut values = slots::<8>(reuse);
        let v = as_array::<8>(&mut values);
        let name = &self.names[rng.below(self.names.len() as u64) as usize];
        let name_len = name.as_str().map_or(0, str::len);
        v[1] = keep_if(k[1], || name.clone());
        // The email's length counts toward the extra's; unread and uncounted, it is skipped.
        let email_len = if k[2] || k[7] {
            self.buf.clear();
            push_string(rng, 7, &mut self.buf);
            self.buf.push('@');
            push_string(rng, 5, &mut self.buf);
            self.buf.push_str(".com");
            v[2] = keep_if(k[2], || text(&self.buf));
            self.buf.len()
        } else {
            skip_string(rng, 7);
            skip_string(rng, 5);
            v[2] = Value::Null;
            0
        };
        // Four groups of 4 digits: always 19 characters.
        v[3] = if k[3] {
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
            text(&self.buf)
        } else {
            rng.skip(4);
            Value::Null
        };
        let city = &self.cities[rng.below(self.cities.len() as u64) as usize];
        let state = &self.states[rng.below(self.states.len() as u64) as usize];
        let len = |v: &Value| v.as_str().map_or(0, str::len);
        let current = 8 + name_len + email_len + 19 + len(city) + len(state);
        v[4] = keep_if(k[4], || city.clone());
        v[5] = keep_if(k[5], || state.clone());
        v[7] = keep_if(k[7], || self.extras.next(rng, current, AVG_PERSON_BYTES));
        v[0] = keep_if(k[0], || Value::Long(last_base0_person_id(event) as i64 + FIRST_PERSON_ID));
        v[6] = keep_if(k[6], || Value::Timestamp(self.time_of(event)));
        values
    }
}
