//! A scalar UDF call beside the same built-in function (criterion; a benchmark, not a test).
//! Target (issue "Eddy as a Rust library"): a UDF call costs within 2x of the built-in.
//!
//! Each pair is one expression over the same 10,000 records (`key STRING, v DOUBLE`), bound by
//! `eddy-sql` and compiled as a pipeline's `select` is, evaluated record by record
//! ([`Compiled::eval`]):
//! - `lower(key)` vs the UDF `lower_udf(key)`: the keys are already lower case, and the UDF,
//!   as the built-in, returns its argument's text shared when there is nothing to lower (an
//!   honest user's `lower`; one that always allocates measures the allocator);
//! - `v + 1.0D` vs the UDF `plus1(v)`.
//!
//! The pairs are measured in one run, alternating, so the ratio sees the same machine load
//! (bench/results/udf.md). `EDDY_BENCH_PROFILE=<name>:<rounds>` runs only expression `<name>`
//! (`builtin_lower`, `udf_lower`, `builtin_plus1`, `udf_plus1`) over the records `<rounds>`
//! times outside criterion, for an instruction count (`valgrind --tool=callgrind
//! --toggle-collect='*evaluate*'`).

/// The allocator of the `eddy` binary, so the per-record costs are those of a real run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eddy_engine::expr::{Compiled, with_user_functions};
use eddy_engine::registry::Registry;
use eddy_engine::schema::{DataType, Schema};
use eddy_engine::value::{Record, Value};

const RECORDS: usize = 10_000;

fn records() -> Vec<Record> {
    (0..RECORDS)
        .map(|i| Record::new(vec![Value::Str(format!("key-{}", i % 1000).into()), Value::Double(i as f64 * 0.5)]))
        .collect()
}

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register_udf("lower_udf", &[DataType::String], DataType::String, |a| match &a[0] {
        Value::Str(s) if s.chars().any(char::is_uppercase) => Ok(Value::Str(s.to_lowercase().into())),
        other => Ok(other.clone()),
    })
    .unwrap_or_else(|e| panic!("{e}"));
    r.register_udf("plus1", &[DataType::Double], DataType::Double, |a| match a[0] {
        Value::Double(x) => Ok(Value::Double(x + 1.0)),
        _ => Ok(Value::Null),
    })
    .unwrap_or_else(|e| panic!("{e}"));
    r
}

fn compile(text: &str) -> Compiled {
    let schema = Schema::parse_ddl("key STRING, v DOUBLE").unwrap_or_else(|e| panic!("{e}"));
    let r = registry();
    let b = with_user_functions(r.functions(), || eddy_sql::bind_expression(text, &schema))
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    Compiled::new(&b.typed)
}

/// The expression on every record, each value dropped.
#[inline(never)]
fn evaluate(e: &Compiled, records: &[Record]) {
    for r in records {
        black_box(e.eval(black_box(r)).ok());
    }
}

const PAIRS: [(&str, &str, &str, &str); 2] = [
    ("builtin_lower", "lower(key)", "udf_lower", "lower_udf(key)"),
    ("builtin_plus1", "v + 1.0D", "udf_plus1", "plus1(v)"),
];

fn benches(c: &mut Criterion) {
    let recs = records();
    if let Ok(profile) = std::env::var("EDDY_BENCH_PROFILE") {
        let (name, rounds) = profile.split_once(':').unwrap_or((&profile, "10"));
        let rounds: usize = rounds.parse().unwrap_or(10);
        let text = PAIRS
            .iter()
            .flat_map(|(a, ta, b, tb)| [(*a, *ta), (*b, *tb)])
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t)
            .unwrap_or_else(|| panic!("no expression {name}"));
        let e = compile(text);
        for _ in 0..rounds {
            evaluate(&e, &recs);
        }
        return;
    }
    let mut g = c.benchmark_group("udf_vs_builtin");
    g.throughput(Throughput::Elements(RECORDS as u64));
    for (builtin, builtin_text, udf, udf_text) in PAIRS {
        let (b, u) = (compile(builtin_text), compile(udf_text));
        // the same values
        for r in &recs {
            assert_eq!(b.eval(r).ok(), u.eval(r).ok(), "{builtin_text} vs {udf_text}");
        }
        g.bench_function(builtin, |x| x.iter(|| evaluate(&b, &recs)));
        g.bench_function(udf, |x| x.iter(|| evaluate(&u, &recs)));
    }
    g.finish();
}

criterion_group!(expression_benches, benches);
criterion_main!(expression_benches);
