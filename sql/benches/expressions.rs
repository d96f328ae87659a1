//! Evaluation cost per record of a source's `filter` plus three computed `select` columns
//! (compiled once; the per-record path is the closures alone).
//!
//! `cargo bench -p eddy-sql --bench expressions`: criterion reports the time per batch of
//! 1,024 records and the throughput in records per second.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eddy_engine::expr::Compiled;
use eddy_engine::{Record, Schema, Timestamp, Value};

fn records() -> Vec<Record> {
    (0..1024)
        .map(|i| {
            Record::new(vec![
                Value::Str(format!("order-{i}").into()),
                Value::Double((i % 97) as f64 - 5.0),
                Value::Int(i % 13),
                Value::Str(["eur", "usd", "XX", "gbp"][i as usize % 4].into()),
                Value::Timestamp(Timestamp(1_705_312_800_000_000 + i as i64 * 1_000_003)),
            ])
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let schema = Schema::parse_ddl("order_id STRING, amount DOUBLE, qty INT, currency STRING, ts TIMESTAMP")
        .unwrap_or_else(|e| panic!("{e}"));
    let compile = |text: &str| {
        let b = eddy_sql::bind_expression(text, &schema).unwrap_or_else(|e| panic!("{text}: {e}"));
        Compiled::new(&b.typed)
    };
    let filter = compile("amount > 0 AND currency <> 'XX'");
    let columns = [compile("amount * qty AS revenue"), compile("upper(currency)"), compile("date_trunc('HOUR', ts)")];
    let input = records();
    let mut g = c.benchmark_group("expressions");
    g.throughput(Throughput::Elements(input.len() as u64));
    g.bench_function("filter_and_three_columns_per_1024_records", |b| {
        b.iter(|| {
            let mut kept = 0usize;
            for r in &input {
                if matches!(filter.eval(r), Ok(Value::Bool(true))) {
                    for col in &columns {
                        black_box(col.eval(r).ok());
                    }
                    kept += 1;
                }
            }
            black_box(kept)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
