//! Per-record cost of the operators over 10,000 keys (criterion; a benchmark, not a test).
//! Targets (issue "Engine core"): tumbling sum/count <= 50 ns; sliding 10 s / 2 s count <= 80 ns;
//! session count <= 100 ns; rolling 1-hour sum + max + lifetime count <= 150 ns.
//!
//! Records are built before the measurement; each iteration feeds a block of records through
//! `on_record` in real-time mode, in batches of 256 records as the partition actor receives
//! them, with the prefetch schedule of `prefetch_ahead` as the partition actor runs it (within
//! a batch). Each batch is handed back once processed and dropped after the measurement: in
//! real-time mode without a join the partition actor hands it back to the source actor
//! (`eddy-actors`' `recycle`), whose decoder overwrites the records' values in place (since
//! 2026-12-02, a cost of the source that `source_decode*` measure). Per-record emission work is
//! included (append mode: every window is emitted once when the watermark passes it).
//! `tumbling_sum_count_dropped` and `tumbling_sum_count_filter_select3_dropped` drop each batch
//! inside the measurement instead (each record's values dropped, its memory freed), as this
//! benchmark did before 2026-12-05 and as a partition actor does with a join, in micro-batch
//! mode past what the return channel holds, or when the channel is full. Event time advances
//! `spacing` per record: 10 µs for window aggregates (a 100k records/s stream: ~100 records per
//! key per 10 s window, the steady state of a busy stream), 1 ms for the rolling window (3.6
//! million records in a 1-hour range at most, so its state stays within memory; measured once
//! the range is full).
//!
//! `tumbling_sum_count_filter_select3` and `tumbling_sum_count_filter_select_heavy` run the same
//! records through a pipeline's source steps first (`filter` plus a `select` of the three input
//! columns and computed ones, parsed by `eddy-sql` and compiled by [`CompiledSteps`], as the
//! source actor runs them), then through the same tumbling operator: the difference from
//! `tumbling_sum_count` in the same run is the steps' cost per record (target <= 15 ns, issue
//! "SQL expressions"; bench/results/sql-expressions.md). The filter keeps every record, so the
//! operator's work is the same. `tumbling_sum_count_filter_select_replace` computes the same
//! columns but replaces `v` by `v * 1.2 AS v` and keeps the raw `v` last: a `select` whose
//! input columns are not in their places, which rearranges each record.
//!
//! `tumbling_sum_count_hot` and `tumbling_sum_count_filter_select3_hot` are the same two with
//! each batch in the cache when it is fed, as the source's decoder leaves the batch it has just
//! written (its spare slots written, its columns read, untimed; each batch timed alone): the
//! runtime's order is decode, steps, operator, so the steps do not meet a record cold. Built
//! before the measurement, a block of 100,000 records is far larger than the caches, and the
//! first pass over a batch pays its misses: the operator alone hides them behind its prefetch,
//! a step's pass does not. The difference in the hot pair is the steps' own cost.
//!
//! `tumbling_sum_count_write3` and `tumbling_sum_count_write3_hot` are the memory floor under
//! `select3` ([`write3`]): its three spare slots written with constants, nothing evaluated.
//!
//! `tumbling_sum_count_filter` and `tumbling_sum_count_filter_{gross,lower,shift}` take
//! `select3` apart: the filter alone, then the filter with one of its three columns (`v * 1.2`,
//! `lower(key)`, `ts + INTERVAL 1 HOUR`).
//!
//! `source_decode` and `source_decode_filter_select3` are the source actor's side of the same
//! steps, where the runtime runs them: JSON lines (`{"key": .., "ts": .., "v": ..}`, 100,000
//! different ones) decoded [`BATCH`] at a time into recycled records (`decode_into`, as the
//! source decodes into the records the partitions hand back), then, in the second, `select3`'s
//! steps on the batch the decoder has just written (`CompiledSteps::apply_batch`). The
//! difference is what the steps add to a record with the real decoder before them, the spare
//! slots' writing and the computed values' drops (by the next decode) included.
//!
//! `forward` and `processor_pass_through` run the same records through the stateless operator
//! of a query without aggregation ([`Forward`]: each record one row) and through a custom
//! stateful processor keyed by `key` that emits each record it is handed as a row, unchanged
//! ([`Processor`] in real-time mode: one handler call per record): the difference in the same
//! run is what the processor seam costs per record (target <= 30 ns, issue "Eddy as a Rust
//! library"; bench/results/processor.md).
//!
//! `EDDY_BENCH_PROFILE=<name>:<blocks>` runs only workload `<name>` outside criterion: its
//! warm-up, then `<blocks>` blocks through `feed`, for an instruction count
//! (`valgrind --tool=callgrind --toggle-collect='*feed*'`; per record: the inclusive count of
//! the `feed` functions over `<blocks>` x 100,000).

/// The allocator of the `eddy` binary, so the per-record costs are those of a real run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

use eddy_engine::aggregate::{AggKind, AggregateFn};
use eddy_engine::decode::{DecoderConfig, JsonDecoder};
use eddy_engine::operator::{
    Forward, KeyContext, Mode, Operator, Output, OutputMode, Processor, ProcessorConfig, RollingMeasure, RollingWindow,
    RollingWindowConfig, SessionGap, StatefulProcessor, TimeDomain, WindowAggregate, WindowAggregateConfig, WindowKind,
    prefetch_ahead,
};
use eddy_engine::schema::{DataType, Schema};
use eddy_engine::spec::{PipelineExpr, Step};
use eddy_engine::steps::{BatchScratch, CompiledSteps};
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
/// `spare`: NULL slots after the three columns, as a decoder leaves them for the source steps'
/// computed columns ([`CompiledSteps::spare_columns`]).
fn batches(n: usize, start_us: i64, spacing_us: i64, spare: usize) -> Vec<Vec<Record>> {
    let mut all = records(n, start_us, spacing_us, spare).into_iter();
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
fn records(n: usize, start_us: i64, spacing_us: i64, spare: usize) -> Vec<Record> {
    let keys: Vec<Value> = (0..KEYS).map(|k| Value::Str(format!("key-{k}").into())).collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|i| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let k = (x >> 33) % KEYS;
            let mut values = Vec::with_capacity(3 + spare);
            values.push(keys[k as usize].clone());
            values.push(Value::Timestamp(Timestamp(start_us + i as i64 * spacing_us)));
            values.push(Value::Double((x >> 40) as f64 / 1000.0));
            values.resize_with(3 + spare, || Value::Null);
            Record::new(values)
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

/// What runs on each batch before the operator.
#[derive(Clone, Copy)]
enum Before<'a> {
    Nothing,
    /// Source steps, as the source actor applies them to what one poll gave
    /// ([`CompiledSteps::apply_batch`]: a record kept stays in the batch, one dropped or failed
    /// does not).
    Steps(&'a CompiledSteps),
    /// [`write3`]: the memory floor under `select3`.
    Write3,
}

/// The timed work: each batch through `before`, then every record of it through the operator
/// (clock first, as the runtime's timer would) with the prefetch schedule of [`prefetch_ahead`]
/// within the batch, its rows produced; the batch then pushed to `returned` (handed back, as the
/// partition actor does), or dropped at once when `returned` is `None`. Not inlined, so that a
/// profiler (`valgrind --tool=callgrind --toggle-collect='*feed*'`) can count exactly this.
#[inline(never)]
fn feed(
    op: &mut dyn Operator,
    before: Before,
    batches: Vec<Vec<Record>>,
    scratch: &mut BatchScratch,
    out: &mut Output,
    mut returned: Option<&mut Vec<Vec<Record>>>,
) {
    for mut recs in batches {
        match before {
            Before::Nothing => {}
            Before::Steps(steps) => steps.apply_batch(&mut recs, scratch, |_, rejected| {
                black_box(rejected);
            }),
            Before::Write3 => write3(&mut recs),
        }
        let prefetching = op.prefetch_pays();
        for i in 0..recs.len() {
            if prefetching {
                prefetch_ahead(op, |j| recs.get(j), i);
            }
            let r = &recs[i];
            op.advance_clock(r.values[1].as_timestamp().unwrap_or_default(), out);
            op.on_record(r, Timestamp::MIN, out);
            out.clear();
        }
        if let Some(returned) = returned.as_deref_mut() {
            returned.push(recs);
        }
    }
}

/// The memory floor under `select3`'s steps: each record's three spare slots written with a
/// constant, one pass over the batch per slot as the steps' batch passes run, nothing evaluated
/// (each slot's old value is only tested for a drop, as the kernels' writes test it). What any
/// steps that write three computed columns into the records pay for the spare slots' memory: on
/// records built before the measurement, their cache lines brought in and written back
/// (bench/results/sql-expressions.md). `select3` also reads its input columns in its own passes,
/// which this floor does not.
#[inline(never)]
fn write3(batch: &mut [Record]) {
    for r in batch.iter_mut() {
        if let Some(slot) = r.values.get_mut(3) {
            *slot = Value::Double(1.5);
        }
    }
    for r in batch.iter_mut() {
        if let Some(slot) = r.values.get_mut(4) {
            *slot = Value::Long(7);
        }
    }
    for r in batch.iter_mut() {
        if let Some(slot) = r.values.get_mut(5) {
            *slot = Value::Timestamp(Timestamp(0));
        }
    }
}

/// One workload: its operator, the spacing of its records, its warm-up and its source steps.
struct Workload<'a> {
    name: &'a str,
    spacing_us: i64,
    /// Blocks fed as in the measurement before it (0: one block of records without the clock,
    /// only so that the keys exist).
    steady_blocks: usize,
    make: &'a dyn Fn() -> Box<dyn Operator>,
    /// What runs on each batch before the operator.
    before: Before<'a>,
    /// Each batch in the cache when it is fed, as the decoder leaves it ([`decoded`]), not as
    /// built before the measurement (a block of records far larger than the caches).
    hot: bool,
    /// Each batch dropped inside the measurement once processed, not handed back.
    dropped: bool,
}

/// What the source's decoder leaves in the cache of the batch it has just written, before the
/// steps run on it (the runtime's order: decode, steps, then the partition's operator): each
/// record's spare slots written NULL and its three columns read. Not timed.
#[inline(never)]
fn decoded(batch: &mut [Record]) {
    let mut read = 0u64;
    for r in batch.iter_mut() {
        r.values.iter_mut().skip(3).for_each(|v| *v = Value::Null);
        if let (Value::Str(k), Value::Timestamp(t), Value::Double(v)) = (&r.values[0], &r.values[1], &r.values[2]) {
            read = read.wrapping_add(k.len() as u64).wrapping_add(t.0 as u64).wrapping_add(v.to_bits());
        }
    }
    black_box(read);
}

impl Workload<'_> {
    /// The operator after the warm-up, and the start of the next block's event time.
    fn warm(&self, out: &mut Output) -> (Box<dyn Operator>, i64) {
        let mut op = (self.make)();
        let mut start = 0i64;
        if self.steady_blocks == 0 {
            for r in records(BLOCK, start, self.spacing_us, 0) {
                op.on_record(&r, Timestamp::MIN, out);
                out.clear();
            }
        }
        for _ in 0..self.steady_blocks {
            start += BLOCK as i64 * self.spacing_us;
            self.feed(
                op.as_mut(),
                batches(BLOCK, start, self.spacing_us, self.spare()),
                &mut BatchScratch::default(),
                out,
                &mut Vec::new(),
            );
        }
        (op, start)
    }

    /// The NULL slots the source's decoder would leave in each record for the steps.
    fn spare(&self) -> usize {
        match self.before {
            Before::Nothing => 0,
            Before::Steps(steps) => steps.spare_columns(),
            Before::Write3 => 3,
        }
    }

    /// [`feed`] with this workload's `before`; the batches handed back go to `returned`, unless
    /// the workload drops them.
    fn feed(
        &self,
        op: &mut dyn Operator,
        recs: Vec<Vec<Record>>,
        scratch: &mut BatchScratch,
        out: &mut Output,
        returned: &mut Vec<Vec<Record>>,
    ) {
        feed(op, self.before, recs, scratch, out, (!self.dropped).then_some(returned));
    }

    /// A block through [`Workload::feed`]; the time it took (a hot workload: the time of its
    /// batches, each made [`decoded`] first, untimed). The batches handed back are dropped
    /// untimed.
    fn timed(
        &self,
        op: &mut dyn Operator,
        recs: Vec<Vec<Record>>,
        scratch: &mut BatchScratch,
        out: &mut Output,
    ) -> std::time::Duration {
        let mut returned = Vec::with_capacity(recs.len());
        if !self.hot {
            let t0 = std::time::Instant::now();
            self.feed(op, recs, scratch, out, &mut returned);
            return t0.elapsed();
        }
        let mut total = std::time::Duration::ZERO;
        for mut batch in recs {
            decoded(&mut batch);
            let t0 = std::time::Instant::now();
            self.feed(op, vec![batch], scratch, out, &mut returned);
            total += t0.elapsed();
            returned.clear();
        }
        total
    }
}

/// `EDDY_BENCH_PROFILE=<name>:<blocks>`, when set.
fn profile_request() -> Option<(String, usize)> {
    let v = std::env::var("EDDY_BENCH_PROFILE").ok()?;
    let (name, blocks) = v.split_once(':')?;
    Some((name.to_string(), blocks.parse().ok()?))
}

/// Runs workload `w` under criterion, or, under `EDDY_BENCH_PROFILE`, `<blocks>` blocks of it
/// when it is the one named (nothing otherwise).
fn run(c: &mut Criterion, w: &Workload) {
    if let Some((name, blocks)) = profile_request() {
        if name == w.name {
            let mut out = Output::default();
            let (mut op, mut start) = w.warm(&mut out);
            let mut scratch = BatchScratch::default();
            for _ in 0..blocks {
                start += BLOCK as i64 * w.spacing_us;
                w.timed(op.as_mut(), batches(BLOCK, start, w.spacing_us, w.spare()), &mut scratch, &mut out);
            }
            black_box(&out);
        }
        return;
    }
    let mut g = c.benchmark_group("operators");
    g.throughput(Throughput::Elements(BLOCK as u64));
    g.sample_size(20);
    g.bench_function(w.name, |b| {
        let mut out = Output::default();
        let (mut op, mut start) = w.warm(&mut out);
        let mut scratch = BatchScratch::default();
        // Only the loop over records is timed (building the records is not).
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                start += BLOCK as i64 * w.spacing_us;
                let recs = batches(BLOCK, start, w.spacing_us, w.spare());
                total += w.timed(op.as_mut(), recs, &mut scratch, &mut out);
                black_box(&out);
            }
            total
        });
    });
    g.finish();
}

/// [`BLOCK`] JSON lines of the benchmark's records (keys and values as [`records`] draws them,
/// event time 10 µs apart from 2024-01-15 10:00).
fn json_lines() -> Vec<Vec<u8>> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..BLOCK)
        .map(|i| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let (k, v) = ((x >> 33) % KEYS, (x >> 40) as f64 / 1000.0);
            let us = i * 10;
            let (m, s, f) = (us / 60_000_000 % 60, us / 1_000_000 % 60, us % 1_000_000);
            format!(r#"{{"key":"key-{k}","ts":"2024-01-15 10:{m:02}:{s:02}.{f:06}","v":{v}}}"#).into_bytes()
        })
        .collect()
}

/// The source actor's side of `steps` (`source_decode*`, see the module doc): every line of
/// `lines` decoded into a batch of recycled records, [`BATCH`] at a time, then `steps` on the
/// batch; criterion times a pass over all of `lines`.
fn run_source(c: &mut Criterion, name: &str, steps: Option<&CompiledSteps>, lines: &[Vec<u8>]) {
    let profile = profile_request();
    if profile.as_ref().is_some_and(|(n, _)| n != name) {
        return;
    }
    let cfg = DecoderConfig {
        schema: Schema::parse_ddl("key STRING, ts TIMESTAMP, v DOUBLE").unwrap_or_else(|e| panic!("{e}")),
        needed: vec![true; 3],
        required: vec![1],
        timestamp_unit: eddy_engine::time::TimeUnit::Ms,
    };
    let mut decoder = JsonDecoder::new(cfg).with_spare_columns(steps.map_or(0, CompiledSteps::spare_columns));
    let mut batch: Vec<Record> =
        (0..BATCH).map(|_| decoder.decode(&lines[0]).unwrap_or_else(|e| panic!("{e:?}"))).collect();
    let mut scratch = BatchScratch::default();
    let pass = |decoder: &mut JsonDecoder, batch: &mut Vec<Record>, scratch: &mut BatchScratch| {
        for chunk in lines.chunks(BATCH) {
            for (line, record) in chunk.iter().zip(batch.iter_mut()) {
                decoder.decode_into(line, record).unwrap_or_else(|e| panic!("{e:?}"));
            }
            if let Some(steps) = steps {
                steps.apply_batch(batch, scratch, |_, rejected| panic!("a bench record rejected: {rejected:?}"));
            }
            black_box(&*batch);
        }
    };
    if let Some((_, blocks)) = profile {
        for _ in 0..blocks {
            source_feed(&mut || pass(&mut decoder, &mut batch, &mut scratch));
        }
        return;
    }
    let mut g = c.benchmark_group("operators");
    g.throughput(Throughput::Elements(lines.len() as u64));
    g.sample_size(20);
    g.bench_function(name, |b| b.iter(|| pass(&mut decoder, &mut batch, &mut scratch)));
    g.finish();
}

/// One pass of [`run_source`]; not inlined, so that a profiler can count exactly it
/// (`--toggle-collect='*feed*'`).
#[inline(never)]
fn source_feed(pass: &mut dyn FnMut()) {
    pass();
}

/// Source steps over the benchmark's records (`key STRING, ts TIMESTAMP, v DOUBLE`): `filter`
/// then a `select` of the three input columns (first, so the operator reads the same columns)
/// and `computed`, every output column read afterwards (as when the query or the sink reads
/// them). The filters chosen hold for every record.
fn source_steps(filter: &str, computed: &[&str]) -> CompiledSteps {
    let items: Vec<&str> = ["key", "ts", "v"].iter().chain(computed).copied().collect();
    source_steps_of(filter, &items)
}

/// Source steps over the benchmark's records: `filter`, then a `select` of `items` (the
/// operator reads its first three as `key`, `ts` and `v`), every output column read afterwards.
fn source_steps_of(filter: &str, items: &[&str]) -> CompiledSteps {
    let schema = Schema::parse_ddl("key STRING, ts TIMESTAMP, v DOUBLE").unwrap_or_else(|e| panic!("{e}"));
    let bind = |field: &str, text: &str, schema: &Schema| {
        let b = eddy_sql::bind_expression(text, schema).unwrap_or_else(|e| panic!("{text}: {e}"));
        PipelineExpr { field: field.into(), typed: b.typed, name: b.name }
    };
    let items: Vec<PipelineExpr> =
        items.iter().enumerate().map(|(i, text)| bind(&format!("source.select[{i}]"), text, &schema)).collect();
    let width = items.len();
    let steps = vec![Step::Filter(bind("source.filter", filter, &schema)), Step::Project(items)];
    CompiledSteps::new(&steps, 3, &vec![true; width], Vec::new()).0
}

fn tumbling() -> Box<dyn Operator> {
    Box::new(window_agg(
        WindowKind::Fixed { column: 1, windows: SlidingWindows::tumbling(Duration::from_secs(10), Duration::ZERO) },
        vec![f(AggKind::Sum, Some(2)), f(AggKind::CountStar, None)],
        OutputMode::Append,
    ))
}

/// Emits every record it is handed as an output row, unchanged; no state, no timers.
struct PassThrough;

impl StatefulProcessor for PassThrough {
    fn handle_input(&mut self, records: &[&Record], ctx: &mut KeyContext<'_>) {
        for r in records {
            let mut row = ctx.row_buffer(r.values.len());
            row.extend_from_slice(&r.values);
            ctx.emit(row);
        }
    }

    fn handle_timer(&mut self, _domain: TimeDomain, _at: Timestamp, _ctx: &mut KeyContext<'_>) {}
}

fn benches(c: &mut Criterion) {
    let plain = Workload {
        name: "tumbling_sum_count",
        spacing_us: 10,
        steady_blocks: 0,
        make: &tumbling,
        before: Before::Nothing,
        hot: false,
        dropped: false,
    };
    // the three columns as a user computes them: arithmetic on a column, a string function,
    // a shifted timestamp
    let three =
        source_steps("v >= 0", &["v * 1.2 AS gross", "lower(key) AS key_lc", "ts + INTERVAL 1 HOUR AS ts_local"]);
    // heavier: a conjunction with a string comparison, a string built per record, a truncated
    // timestamp, a rounding
    let heavy = source_steps(
        "v >= 0 AND key <> 'none'",
        &[
            "round(v * 1.2, 2) AS gross",
            "concat(upper(key), '/', CAST(v AS STRING)) AS label",
            "date_trunc('HOUR', ts) AS hour",
        ],
    );
    run(c, &plain);
    run(c, &Workload { name: "tumbling_sum_count_filter_select3", before: Before::Steps(&three), ..plain });
    // the same two with each batch in the cache as the decoder leaves it
    run(c, &Workload { name: "tumbling_sum_count_hot", hot: true, ..plain });
    run(
        c,
        &Workload { name: "tumbling_sum_count_filter_select3_hot", before: Before::Steps(&three), hot: true, ..plain },
    );
    // the memory floor under `select3`: its three slots written, nothing evaluated
    run(c, &Workload { name: "tumbling_sum_count_write3", before: Before::Write3, ..plain });
    run(c, &Workload { name: "tumbling_sum_count_write3_hot", before: Before::Write3, hot: true, ..plain });
    // plain and `select3` with each batch dropped inside the measurement, not handed back
    run(c, &Workload { name: "tumbling_sum_count_dropped", dropped: true, ..plain });
    run(
        c,
        &Workload {
            name: "tumbling_sum_count_filter_select3_dropped",
            before: Before::Steps(&three),
            dropped: true,
            ..plain
        },
    );
    run(c, &Workload { name: "tumbling_sum_count_filter_select_heavy", before: Before::Steps(&heavy), ..plain });
    // the same steps where the runtime runs them: after the source's decoder
    let lines = json_lines();
    run_source(c, "source_decode", None, &lines);
    run_source(c, "source_decode_filter_select3", Some(&three), &lines);
    // `select3` one part at a time, each in the same run as the others: the filter alone, then
    // the filter and one of the three columns
    let parts = [
        ("tumbling_sum_count_filter", source_steps("v >= 0", &[])),
        ("tumbling_sum_count_filter_gross", source_steps("v >= 0", &["v * 1.2 AS gross"])),
        ("tumbling_sum_count_filter_lower", source_steps("v >= 0", &["lower(key) AS key_lc"])),
        ("tumbling_sum_count_filter_shift", source_steps("v >= 0", &["ts + INTERVAL 1 HOUR AS ts_local"])),
    ];
    for (name, steps) in &parts {
        run(c, &Workload { name, before: Before::Steps(steps), ..plain });
    }
    // the same three computed columns, with `v` replaced by a computed one of the same name:
    // the input's columns are no longer in place, so the projection rearranges each record
    let replace = source_steps_of(
        "v >= 0",
        &["key", "ts", "v * 1.2 AS v", "lower(key) AS key_lc", "ts + INTERVAL 1 HOUR AS ts_local", "v AS v_raw"],
    );
    run(c, &Workload { name: "tumbling_sum_count_filter_select_replace", before: Before::Steps(&replace), ..plain });
    run(c, &Workload { name: "forward", make: &|| Box::new(Forward), ..plain });
    run(
        c,
        &Workload {
            name: "processor_pass_through",
            make: &|| {
                let cfg = ProcessorConfig { mode: Mode::RealTime, key_columns: vec![0] };
                Box::new(Processor::new(cfg, Box::new(PassThrough)))
            },
            ..plain
        },
    );
    run(
        c,
        &Workload {
            name: "sliding_10s_2s_count",
            spacing_us: 10,
            steady_blocks: 0,
            make: &|| {
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
            },
            before: Before::Nothing,
            hot: false,
            dropped: false,
        },
    );
    run(
        c,
        &Workload {
            name: "session_count",
            spacing_us: 10,
            steady_blocks: 0,
            make: &|| {
                Box::new(window_agg(
                    WindowKind::Session { column: 1, gap: SessionGap::Fixed(Duration::from_secs(10)) },
                    vec![f(AggKind::CountStar, None)],
                    OutputMode::Append,
                ))
            },
            before: Before::Nothing,
            hot: false,
            dropped: false,
        },
    );
    run(
        c,
        &Workload {
            name: "rolling_1h_sum_max_lifetime_count",
            spacing_us: 1_000,
            steady_blocks: ROLLING_STEADY_BLOCKS,
            make: &|| {
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
            },
            before: Before::Nothing,
            hot: false,
            dropped: false,
        },
    );
}

criterion_group!(operator_benches, benches);
criterion_main!(operator_benches);
