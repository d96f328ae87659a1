//! Per-record cost of the operators over 10,000 keys (criterion; a benchmark, not a test).
//! Targets (issue "Engine core"): tumbling sum/count <= 50 ns; sliding 10 s / 2 s count <= 80 ns;
//! session count <= 100 ns; rolling 1-hour sum + max + lifetime count <= 150 ns.
//!
//! Records are built before the measurement; each iteration feeds a block of records through
//! `on_record` in real-time mode, in batches of 256 records as the partition actor receives
//! them, with the prefetch schedule of `prefetch_ahead` as the partition actor runs it (within
//! a batch), each batch dropped once processed, as the partition actor releases it (per-record
//! emission work is included, append mode: every window is emitted once when the watermark
//! passes it). Event time advances `spacing` per
//! record: 10 µs for window aggregates (a 100k records/s stream: ~100 records per key per 10 s
//! window, the steady state of a busy stream), 1 ms for the rolling window (3.6 million records
//! in a 1-hour range at most, so its state stays within memory; measured once the range is full).

/// The allocator of the `eddy` binary, so the per-record costs are those of a real run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

use eddy_engine::aggregate::{AggKind, AggregateFn};
use eddy_engine::operator::{
    Mode, Operator, Output, OutputMode, RollingMeasure, RollingWindow, RollingWindowConfig, SessionGap,
    WindowAggregate, WindowAggregateConfig, WindowKind, prefetch_ahead,
};
use eddy_engine::schema::DataType;
use eddy_engine::value::{Record, Value};
use eddy_engine::window::SlidingWindows;
use eddy_engine::{Duration, Timestamp};

const KEYS: u64 = 10_000;
const BLOCK: usize = 100_000;

/// Records per batch: the partition actor's batches (`eddy-actors`' source `BATCH`).
const BATCH: usize = 256;

/// Blocks fed to the rolling window before it is measured: 37 blocks of 100 s of event time
/// fill its 1-hour range, so the measurement sees the steady state (each record enters the
/// range and, on average, one leaves it: two rows per record), not the range filling up.
const ROLLING_STEADY_BLOCKS: usize = 37;

/// [`records`] in batches of [`BATCH`].
fn batches(n: usize, start_us: i64, spacing_us: i64) -> Vec<Vec<Record>> {
    let mut all = records(n, start_us, spacing_us).into_iter();
    let mut out = Vec::with_capacity(n.div_ceil(BATCH));
    loop {
        let batch: Vec<Record> = all.by_ref().take(BATCH).collect();
        if batch.is_empty() {
            return out;
        }
        out.push(batch);
    }
}

/// Records `key: STRING, ts: TIMESTAMP, v: DOUBLE`, keys drawn by a fixed LCG.
fn records(n: usize, start_us: i64, spacing_us: i64) -> Vec<Record> {
    let keys: Vec<Value> = (0..KEYS).map(|k| Value::Str(format!("key-{k}").into())).collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|i| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let k = (x >> 33) % KEYS;
            Record::new(vec![
                keys[k as usize].clone(),
                Value::Timestamp(Timestamp(start_us + i as i64 * spacing_us)),
                Value::Double((x >> 40) as f64 / 1000.0),
            ])
        })
        .collect()
}

fn f(kind: AggKind, input: Option<usize>) -> AggregateFn {
    let input_type = if input.is_some() { DataType::Double } else { DataType::Long };
    AggregateFn { kind, input, input_type, name: String::new() }
}

fn window_agg(window: WindowKind, measures: Vec<AggregateFn>, output_mode: OutputMode) -> WindowAggregate {
    WindowAggregate::new(WindowAggregateConfig {
        mode: Mode::RealTime,
        key_columns: vec![0],
        window,
        output_mode,
        measures,
        watermark: Some((1, Duration::from_secs(5))),
    })
}

/// The timed work: every record through the operator (clock first, as the runtime's timer
/// would), batch by batch with the prefetch schedule of [`prefetch_ahead`] within each batch,
/// its rows produced, each batch dropped once processed (the partition actor's loop). Not
/// inlined, so that a profiler (`valgrind --tool=callgrind --toggle-collect='*feed*'`) can
/// count exactly this.
#[inline(never)]
fn feed(op: &mut dyn Operator, batches: Vec<Vec<Record>>, out: &mut Output) {
    for recs in batches {
        for i in 0..recs.len() {
            prefetch_ahead(op, |j| recs.get(j), i);
            let r = &recs[i];
            op.advance_clock(r.values[1].as_timestamp().unwrap_or_default(), out);
            op.on_record(r, Timestamp::MIN, out);
            out.clear();
        }
    }
}

/// Runs benchmark `name`: records `spacing_us` apart; before the measurement, `steady_blocks`
/// blocks are fed as in the measurement (0: one block of records without the clock, only so
/// that the keys exist).
fn run(c: &mut Criterion, name: &str, spacing_us: i64, steady_blocks: usize, make: &dyn Fn() -> Box<dyn Operator>) {
    let mut g = c.benchmark_group("operators");
    g.throughput(Throughput::Elements(BLOCK as u64));
    g.sample_size(20);
    g.bench_function(name, |b| {
        let mut op = make();
        let mut out = Output::default();
        let mut start = 0i64;
        if steady_blocks == 0 {
            for r in records(BLOCK, start, spacing_us) {
                op.on_record(&r, Timestamp::MIN, &mut out);
                out.clear();
            }
        }
        for _ in 0..steady_blocks {
            start += BLOCK as i64 * spacing_us;
            feed(op.as_mut(), batches(BLOCK, start, spacing_us), &mut out);
        }
        // Only the loop over records is timed (building the records is not).
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                start += BLOCK as i64 * spacing_us;
                let recs = batches(BLOCK, start, spacing_us);
                let t0 = std::time::Instant::now();
                feed(op.as_mut(), recs, &mut out);
                total += t0.elapsed();
                black_box(&out);
            }
            total
        });
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    run(c, "tumbling_sum_count", 10, 0, &|| {
        Box::new(window_agg(
            WindowKind::Fixed { column: 1, windows: SlidingWindows::tumbling(Duration::from_secs(10), Duration::ZERO) },
            vec![f(AggKind::Sum, Some(2)), f(AggKind::CountStar, None)],
            OutputMode::Append,
        ))
    });
    run(c, "sliding_10s_2s_count", 10, 0, &|| {
        Box::new(window_agg(
            WindowKind::Fixed {
                column: 1,
                windows: SlidingWindows {
                    size: Duration::from_secs(10),
                    slide: Duration::from_secs(2),
                    offset: Duration::ZERO,
                },
            },
            vec![f(AggKind::CountStar, None)],
            OutputMode::Append,
        ))
    });
    run(c, "session_count", 10, 0, &|| {
        Box::new(window_agg(
            WindowKind::Session { column: 1, gap: SessionGap::Fixed(Duration::from_secs(10)) },
            vec![f(AggKind::CountStar, None)],
            OutputMode::Append,
        ))
    });
    run(c, "rolling_1h_sum_max_lifetime_count", 1_000, ROLLING_STEADY_BLOCKS, &|| {
        Box::new(RollingWindow::new(RollingWindowConfig {
            mode: Mode::RealTime,
            key_columns: vec![0],
            order_by: 1,
            frontier_delay: Duration::ZERO,
            measures: vec![
                RollingMeasure { func: f(AggKind::Sum, Some(2)), over: Some(Duration::from_secs(3600)) },
                RollingMeasure { func: f(AggKind::Max, Some(2)), over: Some(Duration::from_secs(3600)) },
                RollingMeasure { func: f(AggKind::CountStar, None), over: None },
            ],
            watermark: None,
            compact: true,
        }))
    });
}

criterion_group!(operator_benches, benches);
criterion_main!(operator_benches);
