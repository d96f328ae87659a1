//! Cost of the aggregate functions per input value (update, retract) and per pane merge.
//!
//! `cargo bench -p eddy-engine --bench aggregate`

/// The allocator of the `eddy` binary, so the per-record costs are those of a real run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eddy_engine::aggregate::{AggParams, AggregateFn, Percentage};
use eddy_engine::{DataType, Value};

const N: usize = 10_000;

fn values(t: DataType) -> Vec<Value> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..N)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match t {
                DataType::Double => Value::Double((x % 1_000_000) as f64 / 100.0),
                _ => Value::Long((x % 1_000_000) as i64),
            }
        })
        .collect()
}

fn build(name: &str, t: DataType) -> AggregateFn {
    let params = if name == "approx_percentile" {
        AggParams { percentage: Some(Percentage::One(0.5)), ..AggParams::default() }
    } else {
        AggParams::default()
    };
    AggregateFn::from_name(name, Some((0, t)), &params).expect("valid measure")
}

fn update(c: &mut Criterion) {
    let mut g = c.benchmark_group("update");
    g.throughput(Throughput::Elements(N as u64));
    for (name, t) in [
        ("count", DataType::Long),
        ("sum", DataType::Long),
        ("sum", DataType::Double),
        ("avg", DataType::Double),
        ("stddev", DataType::Double),
        ("max", DataType::Long),
        ("approx_count_distinct", DataType::Long),
        ("approx_percentile", DataType::Double),
    ] {
        let f = build(name, t);
        let vs = values(t);
        g.bench_function(format!("{name}({t})"), |b| {
            b.iter(|| {
                let mut s = f.new_state();
                for v in &vs {
                    f.update(&mut s, black_box(v));
                }
                black_box(f.finish(&s))
            })
        });
    }
    g.finish();
}

fn retract(c: &mut Criterion) {
    let mut g = c.benchmark_group("update_then_retract");
    g.throughput(Throughput::Elements(N as u64));
    for name in ["sum", "stddev"] {
        let f = build(name, DataType::Double);
        let vs = values(DataType::Double);
        g.bench_function(format!("{name}(DOUBLE)"), |b| {
            b.iter(|| {
                let mut s = f.new_state();
                for v in &vs {
                    f.update(&mut s, black_box(v));
                }
                for v in &vs {
                    f.retract(&mut s, black_box(v));
                }
                black_box(f.finish(&s))
            })
        });
    }
    g.finish();
}

fn merge(c: &mut Criterion) {
    let mut g = c.benchmark_group("merge_pane");
    for name in ["sum", "approx_count_distinct", "approx_percentile"] {
        let f = build(name, DataType::Double);
        let mut pane = f.new_state();
        for v in &values(DataType::Double) {
            f.update(&mut pane, v);
        }
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut s = f.new_state();
                f.merge(&mut s, black_box(&pane));
                black_box(f.finish(&s))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, update, retract, merge);
criterion_main!(benches);
