//! Decode throughput: JSON records to the columns a query needs, and a record as CSV.
//! Run: `cargo bench -p eddy-engine --bench decode`.
//!
//! The records (issue 27's acceptance), each in both JSON spellings, compact (`","`, `":"`)
//! and spaced (`", "`, `": "`, as Python's `json.dumps` and `../shared/tools/peers/gen_bids.py`
//! write):
//! - `bids`: the Nexmark-like bid of `gen_bids.py` (~90 bytes, four columns, all needed, the
//!   event time as `YYYY-MM-DD HH:MM:SS.fff`);
//! - `wide`: a ~300-byte record of 12 fields of which 4 are needed;
//! - `iso`: the earlier ~100-byte record (five columns, three needed, RFC 3339 time).
//!
//! `recycled`: the same record decoded into one record over and over (`decode_into`), as the
//! runtime decodes into the records the partition actors hand back: no allocation.
//! `stream`: 1,024 different bids (other numbers and times, the same layout) decoded in turn
//! into one record with one decoder (`decode_into`, as the runtime reads a stream): the layout
//! path, which the decoder learns from the first line (`json_layout`).
//!
//! Criterion reports time per record and (with `Throughput::Bytes`) bytes per second.
//! Target (issue 27): <= 80 ns per bids record, >= 1 GB/s.

/// The allocator of the `eddy` binary, so the per-record costs are those of a real run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eddy_engine::decode::{CsvDecoder, DecoderConfig, JsonDecoder};
use eddy_engine::schema::Schema;
use eddy_engine::time::TimeUnit;

const ISO_DDL: &str = "user_id STRING, revenue DOUBLE, event_time TIMESTAMP, country STRING, ok BOOLEAN";
const ISO: &[u8] =
    br#"{"user_id":"u12345","revenue":12.5,"event_time":"2024-01-15T10:01:00Z","country":"fr","ok":true}"#;
const CSV_HEADER: &[u8] = b"user_id,revenue,event_time,country,ok";
const CSV: &[u8] = b"u12345,12.5,2024-01-15T10:01:00Z,fr,true";

const BIDS_DDL: &str = "auction BIGINT, bidder BIGINT, price BIGINT, date_time TIMESTAMP";
const BIDS_COMPACT: &[u8] = br#"{"auction":2385,"bidder":18870,"price":11396,"date_time":"2024-01-15 10:00:00.238"}"#;
const BIDS_SPACED: &[u8] =
    br#"{"auction": 2385, "bidder": 18870, "price": 11396, "date_time": "2024-01-15 10:00:00.238"}"#;

const WIDE_DDL: &str = "id BIGINT, auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, \
     date_time TIMESTAMP, extra STRING, currency STRING, quantity INT, discount DOUBLE, verified BOOLEAN";
/// Needed: auction, price, channel, date_time.
const WIDE_NEEDED: [bool; 12] = [false, true, false, true, true, false, true, false, false, false, false, false];
const WIDE_COMPACT: &[u8] = br#"{"id":9182736455,"auction":2385,"bidder":18870,"price":11396,"channel":"Google","url":"https://www.nexmark.com/rsr/tmq/item.htm?query=1&channel_id=1157627904","date_time":"2024-01-15 10:00:00.238","extra":"eccfaboocmnebsmwyjqljwvtpcaewjyvyeuvyb","currency":"EUR","quantity":3,"discount":0.125,"verified":true}"#;
const WIDE_SPACED: &[u8] = br#"{"id": 9182736455, "auction": 2385, "bidder": 18870, "price": 11396, "channel": "Google", "url": "https://www.nexmark.com/rsr/tmq/item.htm?query=1&channel_id=1157627904", "date_time": "2024-01-15 10:00:00.238", "extra": "eccfaboocmnebsmwyjqljwvtpcaewjyvyeuvyb", "currency": "EUR", "quantity": 3, "discount": 0.125, "verified": true}"#;

fn config(ddl: &str, needed: &[bool], required: usize) -> DecoderConfig {
    DecoderConfig {
        schema: Schema::parse_ddl(ddl).expect("fixed DDL"),
        needed: needed.to_vec(),
        required: vec![required],
        timestamp_unit: TimeUnit::Ms,
    }
}

/// One record through `decoder`, reported per record and per byte.
fn json_case(c: &mut Criterion, name: &str, decoder: &JsonDecoder, record: &'static [u8]) {
    let decoded = decoder.decode(record).expect("a well-formed bench record");
    assert!(decoded.values.iter().any(|v| !v.is_null()));
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Bytes(record.len() as u64));
    g.bench_function(format!("{name}_{}_bytes", record.len()), |b| b.iter(|| decoder.decode(black_box(record))));
    g.finish();
}

/// One record through `decoder` into the same record each time (`decode_into`, as the runtime
/// decodes into records the partition actors handed back): no allocation of the values.
fn json_recycled_case(c: &mut Criterion, name: &str, decoder: &JsonDecoder, record: &'static [u8]) {
    let mut decoder = decoder.clone();
    let mut recycled = decoder.decode(record).expect("a well-formed bench record");
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Bytes(record.len() as u64));
    g.bench_function(format!("{name}_{}_bytes", record.len()), |b| {
        b.iter(|| decoder.decode_into(black_box(record), black_box(&mut recycled)))
    });
    g.finish();
}

/// 1,024 bids of `gen_bids.py`'s layout with other values: auctions, bidders and prices of 1 to
/// 6 digits, times 0 to 999 ms apart from 2024-01-15 10:00:00 (a fixed linear congruential
/// sequence, so every run decodes the same lines).
fn bid_stream(spaced: bool) -> Vec<Vec<u8>> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: u64| {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) % n
    };
    let mut ms = 0u64;
    (0..1024)
        .map(|_| {
            ms += next(1000);
            let digits = 1 + next(6) as u32;
            let (auction, bidder, price) = (next(10u64.pow(digits)), next(20_000), next(100_000));
            let (s, m, f) = (ms / 1000 % 60, ms / 60_000 % 60, ms % 1000);
            let time = format!("2024-01-15 10:{m:02}:{s:02}.{f:03}");
            let line = if spaced {
                format!(r#"{{"auction": {auction}, "bidder": {bidder}, "price": {price}, "date_time": "{time}"}}"#)
            } else {
                format!(r#"{{"auction":{auction},"bidder":{bidder},"price":{price},"date_time":"{time}"}}"#)
            };
            line.into_bytes()
        })
        .collect()
}

/// The lines of `lines` in turn through one decoder into one record (`decode_into`); reported
/// per record and per byte (the lines' mean length).
fn json_stream_case(c: &mut Criterion, name: &str, decoder: &JsonDecoder, lines: &[Vec<u8>]) {
    let mut decoder = decoder.clone();
    let mut record = decoder.decode(&lines[0]).expect("a well-formed bench record");
    for line in lines {
        decoder.decode_into(line, &mut record).expect("a well-formed bench record");
    }
    assert!(decoder.layout_hits() >= lines.len() as u64 - 1, "the layout path reads the stream");
    let mean = lines.iter().map(Vec::len).sum::<usize>() / lines.len();
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Bytes(mean as u64));
    let mut k = 0;
    g.bench_function(format!("{name}_{mean}_bytes"), |b| {
        b.iter(|| {
            k = (k + 1) % lines.len();
            decoder.decode_into(black_box(&lines[k]), black_box(&mut record))
        })
    });
    g.finish();
}

fn bench(c: &mut Criterion) {
    let bids = JsonDecoder::new(config(BIDS_DDL, &[true; 4], 3));
    json_stream_case(c, "json_bids_spaced_stream", &bids, &bid_stream(true));
    json_stream_case(c, "json_bids_compact_stream", &bids, &bid_stream(false));
    json_case(c, "json_bids_compact", &bids, BIDS_COMPACT);
    json_case(c, "json_bids_spaced", &bids, BIDS_SPACED);
    json_recycled_case(c, "json_bids_spaced_recycled", &bids, BIDS_SPACED);
    let wide = JsonDecoder::new(config(WIDE_DDL, &WIDE_NEEDED, 6));
    json_case(c, "json_wide_4_of_12_compact", &wide, WIDE_COMPACT);
    json_case(c, "json_wide_4_of_12_spaced", &wide, WIDE_SPACED);
    let three = [true, true, true, false, false];
    let iso = JsonDecoder::new(config(ISO_DDL, &three, 2));
    json_case(c, "json_iso_3_of_5", &iso, ISO);

    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(1));
    let csv = CsvDecoder::new(config(ISO_DDL, &three, 2), CSV_HEADER).expect("fixed header");
    assert!(csv.decode(CSV).is_ok());
    g.bench_function("csv_3_of_5_columns", |b| b.iter(|| csv.decode(black_box(CSV))));
    g.bench_function("serde_json_value_reference_bids", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(BIDS_COMPACT)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
