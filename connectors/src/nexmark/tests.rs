//! Tests of the event model against first principles: counts per cycle, ids against a walk that
//! counts the people and auctions generated so far, and the reference's skews as probabilities.

use std::collections::HashMap;

use eddy_engine::{DataType, Record, Schema, Timestamp, Value};

use super::model::*;
use super::*;
use crate::Source;

const EVENTS: u64 = 50_000;

fn generator(seed: u64) -> NexmarkGenerator {
    NexmarkGenerator::new(seed, EventClock { base: BASE_TIME, rate: DEFAULT_EVENT_RATE })
}

fn long(r: &Record, i: usize) -> i64 {
    match r.get(i) {
        Value::Long(v) => *v,
        other => panic!("column {i} is {other:?}, expected BIGINT"),
    }
}

fn string(r: &Record, i: usize) -> &str {
    r.get(i).as_str().unwrap_or_else(|| panic!("column {i} is {:?}, expected STRING", r.get(i)))
}

fn time(r: &Record, i: usize) -> Timestamp {
    r.get(i).as_timestamp().unwrap_or_else(|| panic!("column {i} is {:?}, expected TIMESTAMP", r.get(i)))
}

/// Every event with the numbers of people and auctions generated before it.
fn walk(seed: u64) -> Vec<(u64, NexmarkTable, Record, i64, i64)> {
    let mut g = generator(seed);
    let (mut people, mut auctions) = (0i64, 0i64);
    let mut all = Vec::new();
    for n in 0..EVENTS {
        let kind = kind_of(n);
        all.push((n, kind, g.record(n), people, auctions));
        match kind {
            NexmarkTable::Person => people += 1,
            NexmarkTable::Auction => auctions += 1,
            NexmarkTable::Bid => {}
        }
    }
    all
}

#[test]
fn every_cycle_of_50_events_has_1_person_3_auctions_46_bids() {
    let mut counts: HashMap<u64, [u32; 3]> = HashMap::new();
    for n in 0..EVENTS {
        let slot = match kind_of(n) {
            NexmarkTable::Person => 0,
            NexmarkTable::Auction => 1,
            NexmarkTable::Bid => 2,
        };
        counts.entry(n / 50).or_default()[slot] += 1;
    }
    assert_eq!(counts.len(), 1_000);
    assert!(counts.values().all(|c| *c == [1, 3, 46]));
}

#[test]
fn next_of_kind_is_the_first_event_of_that_kind() {
    for table in [NexmarkTable::Bid, NexmarkTable::Auction, NexmarkTable::Person] {
        for n in 0..300 {
            let brute = (n..).find(|&m| kind_of(m) == table).unwrap();
            assert_eq!(next_of_kind(n, table), brute, "{table} from {n}");
        }
    }
}

#[test]
fn last_ids_count_what_was_generated_so_far() {
    let (mut people, mut auctions) = (0u64, 0i64);
    for n in 0..1_000 {
        match kind_of(n) {
            NexmarkTable::Person => people += 1,
            NexmarkTable::Auction => auctions += 1,
            NexmarkTable::Bid => {}
        }
        // Counting the event itself: the last id is the count minus one.
        assert_eq!(last_base0_person_id(n), people - 1, "event {n}");
        assert_eq!(last_base0_auction_id(n), auctions - 1, "event {n}");
    }
}

#[test]
fn people_and_auctions_get_consecutive_ids_from_1000() {
    for (n, kind, r, people, auctions) in walk(1) {
        match kind {
            NexmarkTable::Person => assert_eq!(long(&r, 0), FIRST_PERSON_ID + people, "event {n}"),
            NexmarkTable::Auction => {
                assert_eq!(long(&r, 0), FIRST_AUCTION_ID + auctions, "event {n}")
            }
            NexmarkTable::Bid => {}
        }
    }
}

#[test]
fn bids_refer_to_recent_auctions_and_active_people_at_most_10_ids_ahead() {
    let mut ahead = 0;
    let mut bids = 0;
    for (n, kind, r, people, auctions) in walk(2) {
        let last_person = FIRST_PERSON_ID + people - 1;
        match kind {
            NexmarkTable::Bid => {
                bids += 1;
                let last_auction = FIRST_AUCTION_ID + auctions - 1;
                let auction = long(&r, 0);
                // In flight: at most 100 auctions back, at most 10 ahead (the reference's lead).
                assert!(auction >= (last_auction - 100).max(FIRST_AUCTION_ID), "event {n}: auction {auction}");
                assert!(auction <= last_auction + 10, "event {n}: auction {auction} > {last_auction} + 10");
                ahead += usize::from(auction > last_auction);
                let bidder = long(&r, 1);
                assert!(bidder >= (last_person - 999).max(FIRST_PERSON_ID), "event {n}: bidder {bidder}");
                assert!(bidder <= last_person + 10, "event {n}: bidder {bidder}");
            }
            NexmarkTable::Auction => {
                let seller = long(&r, 7);
                assert!(seller >= (last_person - 999).max(FIRST_PERSON_ID) && seller <= last_person + 10);
            }
            NexmarkTable::Person => {}
        }
    }
    // Ahead only through the non-hot half picking one of the ~10 lead ids among ~110: ~4.5 %.
    let share = ahead as f64 / bids as f64;
    assert!(share < 0.06, "{share} of bids refer to auctions not yet generated");
}

#[test]
fn event_times_follow_the_event_number_at_the_event_rate() {
    let mut previous = Timestamp::MIN;
    for (n, kind, r, _, _) in walk(3) {
        let column = if kind == NexmarkTable::Person { 6 } else { 5 };
        let t = time(&r, column);
        assert!(t > previous, "event {n}: {t:?} after {previous:?}");
        // 10,000 events/s: 100 µs apart from 2015-07-15T00:00:00Z.
        assert_eq!(t.0, 1_436_918_400_000_000 + n as i64 * 100);
        previous = t;
    }
}

#[test]
fn a_seed_determines_the_stream() {
    let mut a = generator(42);
    let mut b = generator(42);
    let mut c = generator(43);
    let mut differ = 0;
    for n in 0..2_000 {
        let ra = a.record(n);
        assert_eq!(ra, b.record(n), "event {n}");
        differ += usize::from(ra != c.record(n));
    }
    assert!(differ > 1_900, "only {differ} of 2000 events differ between seeds");
    // Independent of the order of generation.
    let mut d = generator(42);
    assert_eq!(d.record(1_234), generator(42).record(1_234));
}

#[test]
fn most_bids_go_to_the_hot_auction_and_hot_bidder() {
    let (mut bids, mut hot_auction, mut hot_bidder) = (0u32, 0u32, 0u32);
    let mut per_auction: HashMap<i64, u32> = HashMap::new();
    for (_, kind, r, people, auctions) in walk(4) {
        if kind != NexmarkTable::Bid {
            continue;
        }
        bids += 1;
        let auction = long(&r, 0);
        *per_auction.entry(auction).or_default() += 1;
        hot_auction += u32::from(auction == FIRST_AUCTION_ID + (auctions - 1) / 100 * 100);
        hot_bidder += u32::from(long(&r, 1) == FIRST_PERSON_ID + (people - 1) / 100 * 100 + 1);
    }
    // P(hot auction) = 1/2 (+ < 1 % from random picks); sd over 46,000 bids ~ 0.0023.
    let p = f64::from(hot_auction) / f64::from(bids);
    assert!((0.49..0.52).contains(&p), "hot auction share {p}");
    // P(hot bidder) = 3/4 (+ a little); sd ~ 0.002.
    let p = f64::from(hot_bidder) / f64::from(bids);
    assert!((0.74..0.77).contains(&p), "hot bidder share {p}");
    // 3,000 auctions, but the 30 hot ones take half of the bids.
    let mut counts: Vec<u32> = per_auction.into_values().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let top30: u32 = counts.iter().take(30).sum();
    assert!(f64::from(top30) / f64::from(bids) > 0.49, "top 30 auctions have {top30} of {bids} bids");
}

#[test]
fn most_auctions_come_from_hot_sellers() {
    let (mut auctions, mut hot) = (0u32, 0u32);
    for (_, kind, r, people, _) in walk(5) {
        if kind == NexmarkTable::Auction {
            auctions += 1;
            hot += u32::from(long(&r, 7) == FIRST_PERSON_ID + (people - 1) / 100 * 100);
        }
    }
    // P = 3/4 (+ a little); sd over 3,000 auctions ~ 0.008.
    let p = f64::from(hot) / f64::from(auctions);
    assert!((0.72..0.79).contains(&p), "hot seller share {p}");
}

#[test]
fn prices_are_log_uniform_between_1_and_1_000_000_dollars() {
    let mut g = generator(6);
    let prices: Vec<i64> =
        (0..EVENTS).filter(|&n| kind_of(n) == NexmarkTable::Bid).map(|n| long(&g.record(n), 2)).collect();
    assert!(prices.iter().all(|p| (100..=100_000_000).contains(p)));
    // log10(price / 100) is uniform on [0, 6]: each decade holds 1/6.
    for decade in 0..6 {
        let (lo, hi) = (100 * 10i64.pow(decade), 100 * 10i64.pow(decade + 1));
        let share = prices.iter().filter(|p| (lo..hi).contains(*p)).count() as f64 / prices.len() as f64;
        assert!((share - 1.0 / 6.0).abs() < 0.01, "decade {decade}: {share}");
    }
}

#[test]
fn ninety_nine_bids_in_a_hundred_come_from_the_four_hot_channels() {
    let mut g = generator(7);
    let (mut bids, mut hot) = (0u32, 0u32);
    for n in (0..EVENTS).filter(|&n| kind_of(n) == NexmarkTable::Bid) {
        let r = g.record(n);
        let (channel, url) = (string(&r, 3), string(&r, 4));
        bids += 1;
        if ["Google", "Facebook", "Baidu", "Apple"].contains(&channel) {
            hot += 1;
            assert!(url.starts_with("https://www.nexmark.com/"), "{url}");
        } else {
            let number: u32 = channel.strip_prefix("channel-").unwrap().parse().unwrap();
            assert!(number < 10_000);
            assert!(url.starts_with("https://www.nexmark.com/") && url.contains("/item.htm?query=1"), "{url}");
        }
    }
    // P(hot) = 0.99; sd over 46,000 bids ~ 0.0005.
    let p = f64::from(hot) / f64::from(bids);
    assert!((0.985..0.995).contains(&p), "hot channel share {p}");
}

#[test]
fn a_channel_keeps_its_url() {
    let mut g = generator(8);
    let mut urls: HashMap<String, String> = HashMap::new();
    for n in (0..EVENTS).filter(|&n| kind_of(n) == NexmarkTable::Bid) {
        let r = g.record(n);
        let previous = urls.insert(string(&r, 3).to_string(), string(&r, 4).to_string());
        if let Some(previous) = previous {
            assert_eq!(previous, string(&r, 4));
        }
    }
}

/// Whether `extra` has a length the reference's `nextExtra` can give for a record of
/// `current` bytes and an average of `average`: uniform on `[d - r, d + r)`, `d = average -
/// current`, `r = round(0.2 d)`.
fn extra_fits(extra: usize, current: usize, average: usize) -> bool {
    let d = average - current;
    let r = (d as f64 * 0.2).round() as usize;
    if r == 0 { extra == d } else { (d - r..d + r).contains(&extra) }
}

#[test]
fn records_are_padded_to_the_reference_average_sizes() {
    let mut g = generator(9);
    let (mut sizes, mut counts) = ([0usize; 3], [0usize; 3]);
    for n in 0..EVENTS {
        let r = g.record(n);
        let (slot, current, extra, average) = match kind_of(n) {
            // The reference counts 4 numbers of 8 bytes in a bid.
            NexmarkTable::Bid => (0, 32, string(&r, 6).len(), 100),
            NexmarkTable::Auction => (1, 8 + string(&r, 1).len() + string(&r, 2).len() + 40, string(&r, 9).len(), 500),
            NexmarkTable::Person => {
                let strings: usize = [1, 2, 3, 4, 5].iter().map(|&i| string(&r, i).len()).sum();
                (2, 8 + strings, string(&r, 7).len(), 200)
            }
        };
        assert!(extra_fits(extra, current, average), "event {n}: extra {extra} for {current} of {average}");
        sizes[slot] += current + extra;
        counts[slot] += 1;
    }
    // The mean size is the average (within 1 %: the lengths are uniform, a little below it
    // since the upper end is excluded).
    for (slot, average) in [(0, 100.0), (1, 500.0), (2, 200.0)] {
        let mean = sizes[slot] as f64 / counts[slot] as f64;
        assert!((mean / average - 1.0).abs() < 0.01, "kind {slot}: mean size {mean}, expected {average}");
    }
}

#[test]
fn people_have_the_reference_vocabulary() {
    let mut g = generator(10);
    for n in (0..EVENTS).filter(|&n| kind_of(n) == NexmarkTable::Person) {
        let r = g.record(n);
        assert_eq!(string(&r, 1).split(' ').count(), 2);
        let email = string(&r, 2);
        assert!(email.ends_with(".com") && email.contains('@'), "{email}");
        let card = string(&r, 3);
        assert!(
            card.len() == 19 && card.split(' ').all(|g| g.len() == 4 && g.bytes().all(|b| b.is_ascii_digit())),
            "{card}"
        );
        assert!(["AZ", "CA", "ID", "OR", "WA", "WY"].contains(&string(&r, 5)));
        assert!(!string(&r, 4).is_empty());
    }
}

#[test]
fn auctions_expire_after_they_start_and_reserve_at_least_the_initial_bid() {
    let mut g = generator(11);
    let mut categories = [0u32; 5];
    for n in (0..EVENTS).filter(|&n| kind_of(n) == NexmarkTable::Auction) {
        let r = g.record(n);
        assert!(time(&r, 6) > time(&r, 5));
        // At most 1 ms + twice the time of 100 auctions (1,666 events of 100 µs).
        assert!(time(&r, 6).0 - time(&r, 5).0 <= 1_000 + 2 * 166_600);
        assert!(long(&r, 4) >= long(&r, 3));
        categories[(long(&r, 8) - FIRST_CATEGORY_ID) as usize] += 1;
    }
    assert!(categories.iter().all(|&c| c > 450), "{categories:?}");
}

#[test]
fn records_match_their_table_schema() {
    let mut g = generator(12);
    for table in [NexmarkTable::Bid, NexmarkTable::Auction, NexmarkTable::Person] {
        let schema = Schema::parse_ddl(schema(table)).unwrap();
        let n = next_of_kind(1_000, table);
        let r = g.record(n);
        assert_eq!(r.values.len(), schema.len(), "{table}");
        assert_eq!(table.columns(), schema.len(), "{table}");
        for (field, value) in schema.fields().iter().zip(r.values.iter()) {
            let ok = matches!(
                (field.data_type, value),
                (DataType::Long, Value::Long(_))
                    | (DataType::String, Value::Str(_))
                    | (DataType::Timestamp, Value::Timestamp(_))
            );
            assert!(ok, "{table}.{} is {value:?}", field.name);
        }
    }
}

#[test]
fn table_names_parse_and_print() {
    for table in [NexmarkTable::Bid, NexmarkTable::Auction, NexmarkTable::Person] {
        assert_eq!(table.name().parse::<NexmarkTable>().unwrap(), table);
        assert_eq!(table.to_string().to_uppercase().parse::<NexmarkTable>().unwrap(), table);
    }
    assert!("bids".parse::<NexmarkTable>().unwrap_err().to_string().contains("bids"));
}

#[test]
fn pruned_columns_are_null_and_kept_ones_unchanged() {
    let clock = EventClock { base: Timestamp(1_500_000_000_000_000), rate: 10_000.0 };
    for table in [NexmarkTable::Bid, NexmarkTable::Auction, NexmarkTable::Person] {
        let events: Vec<u64> = (0..2_000).map(|e| next_of_kind(e, table)).collect();
        let width = NexmarkGenerator::new(42, clock).record(events[0]).values.len();
        // Every column pruned in turn, everything but the first column, nothing, and 64 random
        // masks (among them, for the bid's 128, q7's: price and date_time only).
        let mut masks: Vec<Vec<bool>> = (0..width).map(|i| (0..width).map(|j| j != i).collect()).collect();
        masks.push((0..width).map(|j| j == 0).collect());
        masks.push(Vec::new());
        masks.push((0..width).map(|j| table == NexmarkTable::Bid && (j == 2 || j == 5)).collect());
        let mut pick = super::rng::SplitMix64::new(width as u64);
        masks.extend((0..64).map(|_| (0..width).map(|_| pick.below(2) == 1).collect()));
        for keep in masks {
            let mut full = NexmarkGenerator::new(42, clock);
            let mut pruned = NexmarkGenerator::new(42, clock).keeping(&keep);
            for &event in &events {
                let (a, b) = (full.record(event), pruned.record(event));
                assert_eq!(a.values.len(), b.values.len());
                for (i, (x, y)) in a.values.iter().zip(b.values.iter()).enumerate() {
                    if keep.get(i).copied().unwrap_or(true) {
                        assert_eq!(x, y, "{table:?} event {event} column {i} with mask {keep:?}");
                    } else {
                        assert_eq!(*y, Value::Null, "{table:?} event {event} column {i} with mask {keep:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn integer_rounding_matches_the_float_functions() {
    let mut rng = super::rng::SplitMix64::new(12);
    let mut samples =
        vec![0.0, 0.5, 1.5, 2.5, 0.49999999999999994, 99.5, 100.49999999999999, 4503599627370495.5, 1e18, 1e19];
    samples.extend((0..100_000).map(|_| f64::from_bits(rng.next_u64() >> 1)));
    samples.extend((0..100_000).map(|i| f64::from(i) * 0.25 + 0.125 * f64::from(i % 3)));
    for x in samples {
        assert_eq!(round_half_away(x), x.round() as i64, "round {x:e}");
        for y in [x, -x] {
            assert_eq!(floor_i64(y), y.floor() as i64, "floor {y:e}");
        }
    }
    assert_eq!(floor_i64(f64::NAN), 0);
    assert_eq!(floor_i64(f64::NEG_INFINITY), i64::MIN);
}

/// Records of every width from 0 to 12 (the tables' widths among them) holding strings, lists
/// and other values in every column: spares no generated record resembles.
fn foreign_records() -> Vec<Record> {
    (0..=12)
        .map(|width| {
            Record::new(
                (0..width)
                    .map(|i| match i % 4 {
                        0 => Value::Str(format!("foreign-{width}-{i}").into()),
                        1 => Value::Double(i as f64 / 3.0),
                        2 => Value::List(vec![Value::Str("in a list".into()), Value::Long(i)].into()),
                        _ => Value::Window { start: Timestamp(i), end: Timestamp(i + 1) },
                    })
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn a_generator_fed_recycled_records_makes_the_records_it_would_allocate() {
    let pruned_bid = [true, true, true, false, false, true, false];
    let pruned_strings = [true, false, false, true, true, true, true, true, true, false];
    for keep in [&[][..], &pruned_bid[..], &pruned_strings[..], &[false; 10][..]] {
        let mut allocating = generator(5).keeping(keep);
        let mut reusing = generator(5).keeping(keep);
        // Spares: records of all three tables (strings in every string column) and foreign ones.
        let mut other = generator(99);
        let mut spares: Vec<Record> = (0..3_000).map(|n| other.record(n)).collect();
        spares.extend(foreign_records());
        let mut pick = super::rng::SplitMix64::for_item(3, keep.len() as u64);
        for n in 0..20_000 {
            // Now and then no spare, as when the free list is empty.
            let spare = (pick.below(8) != 0 && !spares.is_empty())
                .then(|| spares.swap_remove(pick.below(spares.len() as u64) as usize));
            let expected = allocating.record(n);
            let got = reusing.record_reusing(n, spare);
            assert_eq!(got, expected, "event {n} keeping {keep:?}");
            assert_eq!(format!("{got:?}"), format!("{expected:?}"), "event {n} keeping {keep:?}");
            // The record goes back among the spares, as the runtime hands processed records back.
            spares.push(got);
        }
    }
}

#[test]
fn a_spare_of_the_tables_width_is_overwritten_in_place() {
    let mut g = generator(8);
    for table in [NexmarkTable::Bid, NexmarkTable::Auction, NexmarkTable::Person] {
        let spare = Record::new(vec![Value::Str("old".into()); table.columns()]);
        let at = spare.values.as_ptr();
        let n = next_of_kind(500, table);
        let r = g.record_reusing(n, Some(spare));
        assert_eq!(r.values.as_ptr(), at, "{table}: the spare's slots are reused");
        assert_eq!(r, generator(8).record(n), "{table}");
    }
}

#[test]
fn a_source_fed_its_own_records_back_emits_the_stream_it_emits_without() {
    for table in [NexmarkTable::Bid, NexmarkTable::Auction, NexmarkTable::Person] {
        let mut plain = NexmarkSource::new(table, Some(20_000), None, 6).unwrap();
        let mut recycling = NexmarkSource::new(table, Some(20_000), None, 6).unwrap();
        assert!(recycling.recycles_records());
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut back = foreign_records();
        loop {
            let (pa, pb) = (
                plain.poll(&mut a, 300, std::time::Duration::ZERO).unwrap(),
                recycling.poll(&mut b, 300, std::time::Duration::ZERO).unwrap(),
            );
            assert_eq!(pa, pb);
            assert_eq!(a.len(), b.len());
            for (x, y) in a.drain(..).zip(b.drain(..)) {
                assert_eq!(x.position, y.position);
                let (crate::Payload::Record(x), crate::Payload::Record(y)) = (x.payload, y.payload) else {
                    panic!("a generator emits records");
                };
                assert_eq!(x, y, "{table} at {}", y.values.len());
                back.push(y);
            }
            recycling.recycle(&mut back);
            back.clear();
            if pa == crate::Poll::Exhausted {
                break;
            }
        }
    }
}

#[test]
fn a_source_keeps_a_bounded_number_of_recycled_records_of_its_width() {
    let mut s = NexmarkSource::new(NexmarkTable::Bid, None, None, 6).unwrap();
    let mut g = generator(6);
    let bound = source::FREE_RECORDS;
    // 13 foreign records (one of the bid's width 7), then 10 bids.
    let mut records = foreign_records();
    records.extend((0..10).map(|n| g.record(next_of_kind(n, NexmarkTable::Bid))));
    s.recycle(&mut records);
    assert_eq!(s.free_len(), 11);
    // The 12 foreign records of other widths were dropped, not kept.
    assert!(records.is_empty());
    let mut many: Vec<Record> = (0..2 * bound as u64).map(|n| g.record(next_of_kind(n, NexmarkTable::Bid))).collect();
    s.recycle(&mut many);
    assert_eq!(s.free_len(), bound);
    assert_eq!(many.len(), 2 * bound - (bound - 11));
    // A full free list takes nothing more.
    s.recycle(&mut many);
    assert_eq!(many.len(), 2 * bound - (bound - 11));
}
