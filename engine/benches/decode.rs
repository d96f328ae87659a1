//! Decode throughput: one ~100-byte JSON record to the columns a query needs, and the same
//! record as CSV. Run: `cargo bench -p eddy-engine --bench decode`.
//! Target (DESIGN: real-time latency budget): <= 150 ns per JSON record on the dev machine.

/// The allocator of the `eddy` binary, so the per-record costs are those of a real run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eddy_engine::decode::{CsvDecoder, DecoderConfig, JsonDecoder};
use eddy_engine::schema::Schema;
use eddy_engine::time::TimeUnit;

const DDL: &str = "user_id STRING, revenue DOUBLE, event_time TIMESTAMP, country STRING, ok BOOLEAN";
const JSON: &[u8] =
    br#"{"user_id":"u12345","revenue":12.5,"event_time":"2024-01-15T10:01:00Z","country":"fr","ok":true}"#;
const CSV_HEADER: &[u8] = b"user_id,revenue,event_time,country,ok";
const CSV: &[u8] = b"u12345,12.5,2024-01-15T10:01:00Z,fr,true";

fn config(needed: [bool; 5]) -> DecoderConfig {
    DecoderConfig {
        schema: Schema::parse_ddl(DDL).expect("fixed DDL"),
        needed: needed.to_vec(),
        required: vec![2],
        timestamp_unit: TimeUnit::Ms,
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(1));
    let three = [true, true, true, false, false];
    let json = JsonDecoder::new(config(three));
    assert!(json.decode(JSON).is_ok());
    g.bench_function("json_3_of_5_columns", |b| b.iter(|| json.decode(black_box(JSON))));
    let json_all = JsonDecoder::new(config([true; 5]));
    g.bench_function("json_all_5_columns", |b| b.iter(|| json_all.decode(black_box(JSON))));
    let csv = CsvDecoder::new(config(three), CSV_HEADER).expect("fixed header");
    assert!(csv.decode(CSV).is_ok());
    g.bench_function("csv_3_of_5_columns", |b| b.iter(|| csv.decode(black_box(CSV))));
    g.bench_function("serde_json_value_reference", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(JSON)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
