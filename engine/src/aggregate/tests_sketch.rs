//! Accuracy of the sketches against exact answers: approx_count_distinct against the true count,
//! approx_percentile against true ranks (by sorting), and merged sketches against one sketch.

use proptest::prelude::*;

use super::sketch::{hll_lg_k, kll_k_for_accuracy, kll_rank_error};
use super::tests::{eval, run, with};
use super::tests_props::same;
use super::*;

fn acd(rsd: f64) -> AggregateFn {
    with("approx_count_distinct", DataType::Long, AggParams { rsd: Some(rsd), ..AggParams::default() })
}

fn percentiles(ps: &[f64], accuracy: i64, t: DataType) -> AggregateFn {
    let params =
        AggParams { percentage: Some(Percentage::List(ps.to_vec())), accuracy: Some(accuracy), ..AggParams::default() };
    with("approx_percentile", t, params)
}

/// Deterministic pseudo-random u64s (xorshift64*).
fn random(n: usize, seed: u64) -> Vec<u64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x2545_f491_4f6c_dd1d)
        })
        .collect()
}

#[test]
fn hll_size_follows_sparks_formula_and_meets_rsd() {
    // Spark: p = ceil(2 * log2(1.106 / rsd)); 0.05 -> 9, 0.01 -> 14.
    assert_eq!(hll_lg_k(0.05), 9.0);
    assert_eq!(hll_lg_k(0.01), 14.0);
    for rsd in [0.39, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.001, 0.00077] {
        let p = hll_lg_k(rsd);
        // HLL's relative standard error with 2^p registers is ~1.04 / sqrt(2^p).
        assert!(1.04 / p.exp2().sqrt() <= rsd, "rsd {rsd}: p {p}");
    }
}

#[test]
fn kll_k_is_the_smallest_meeting_the_accuracy() {
    for accuracy in [1u32, 10, 100, 1000, 10_000, MAX_ACCURACY] {
        let k = kll_k_for_accuracy(accuracy).unwrap();
        assert!(kll_rank_error(k) <= 1.0 / accuracy as f64, "accuracy {accuracy}: k {k}");
        assert!(k == 8 || kll_rank_error(k - 1) > 1.0 / accuracy as f64, "accuracy {accuracy}: k {k}");
    }
    assert_eq!(kll_k_for_accuracy(MAX_ACCURACY + 1000), None);
}

#[test]
fn approx_count_distinct_is_within_three_rsd_on_a_million_distinct_values() {
    let n = 1_000_000i64;
    for rsd in [0.05, 0.01] {
        let f = acd(rsd);
        let mut s = f.new_state();
        for x in 0..n {
            // Each value twice: duplicates must not count.
            f.update(&mut s, &Value::Long(x.wrapping_mul(0x9e37_79b9)));
            f.update(&mut s, &Value::Long(x.wrapping_mul(0x9e37_79b9)));
        }
        let Value::Long(est) = f.finish(&s) else { panic!("not a long") };
        let err = (est as f64 - n as f64).abs() / n as f64;
        assert!(err <= 3.0 * rsd, "rsd {rsd}: estimate {est}, relative error {err}");
    }
}

#[test]
fn approx_count_distinct_of_strings_counts_distinct_strings() {
    let f = with("approx_count_distinct", DataType::String, AggParams::default());
    let vs: Vec<Value> = (0..20_000).map(|i| Value::Str(format!("user-{}", i % 5000).into())).collect();
    let Value::Long(est) = eval(&f, &vs) else { panic!("not a long") };
    assert!((est - 5000).abs() as f64 <= 5000.0 * 0.15, "estimate {est}");
}

#[test]
fn merged_hll_panes_give_the_estimate_of_one_sketch() {
    let f = acd(0.05);
    let vs: Vec<Value> = random(200_000, 3).into_iter().map(|x| Value::Long((x % 150_000) as i64)).collect();
    let all = f.finish(&run(&f, &vs));
    let mut s = f.new_state();
    for pane in vs.chunks(7_777) {
        f.merge(&mut s, &run(&f, pane));
    }
    assert_eq!(f.finish(&s), all);
}

/// True rank interval of `v` in sorted `xs`: (count < v, count <= v) / n.
fn rank_interval(sorted: &[i64], v: i64) -> (f64, f64) {
    let below = sorted.partition_point(|&x| x < v);
    let at_or_below = sorted.partition_point(|&x| x <= v);
    let n = sorted.len() as f64;
    (below as f64 / n, at_or_below as f64 / n)
}

fn check_percentiles_within_bound(xs: &[i64], accuracy: i64, got: &Value, ps: &[f64]) {
    let mut sorted = xs.to_vec();
    sorted.sort_unstable();
    let eps = 1.0 / accuracy as f64;
    let Value::List(items) = got else { panic!("not a list: {got:?}") };
    for (&p, item) in ps.iter().zip(items.iter()) {
        let Value::Long(v) = *item else { panic!("not a long: {item:?}") };
        assert!(sorted.binary_search(&v).is_ok(), "p {p}: {v} is not an input value");
        let (lo, hi) = rank_interval(&sorted, v);
        // v's true ranks cover [lo, hi]; the exact answer has hi >= p > lo. Within eps:
        assert!(hi >= p - eps && lo <= p + eps, "p {p}: {v} has ranks [{lo}, {hi}], eps {eps}");
    }
}

#[test]
fn approx_percentile_is_within_its_rank_error_and_returns_input_values() {
    let ps = [0.0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0];
    let xs: Vec<i64> = random(300_000, 11).into_iter().map(|x| (x % 1_000_000_007) as i64 - 500_000_000).collect();
    for accuracy in [50, 1000, 10_000] {
        let f = percentiles(&ps, accuracy, DataType::Long);
        let vs: Vec<Value> = xs.iter().map(|&x| Value::Long(x)).collect();
        let got = eval(&f, &vs);
        check_percentiles_within_bound(&xs, accuracy, &got, &ps);
        // Merged panes: a different sketch (KLL compaction is randomised), within the same bound.
        let mut s = f.new_state();
        for pane in vs.chunks(12_345) {
            f.merge(&mut s, &run(&f, pane));
        }
        check_percentiles_within_bound(&xs, accuracy, &f.finish(&s), &ps);
        // Ends are exact: min and max.
        let Value::List(items) = got else { unreachable!() };
        assert_eq!(items[0], Value::Long(*xs.iter().min().unwrap()));
        assert_eq!(items[ps.len() - 1], Value::Long(*xs.iter().max().unwrap()));
    }
}

/// Brute force: the smallest v with count(x <= v) >= p * n (Spark's `ceil(p * n)`-th value).
fn exact_percentile(xs: &[i64], p: f64) -> i64 {
    let mut sorted = xs.to_vec();
    sorted.sort_unstable();
    let n = sorted.len() as f64;
    *sorted.iter().find(|&&v| sorted.partition_point(|&x| x <= v) as f64 >= p * n).unwrap_or(&sorted[0])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn percentiles_are_exact_while_the_sketch_holds_every_value(
        xs in prop::collection::vec(-50i64..50, 1..400),
        ps in prop::collection::vec(0.0f64..=1.0, 1..5),
        cuts in prop::collection::vec(any::<usize>(), 0..4),
    ) {
        // accuracy 10000 -> k ~ 30k: 400 values are kept exactly, so the answer is the exact
        // one, and panes merge to the same answer.
        let f = percentiles(&ps, 10_000, DataType::Long);
        let vs: Vec<Value> = xs.iter().map(|&x| Value::Long(x)).collect();
        let got = eval(&f, &vs);
        let expected: Vec<Value> = ps.iter().map(|&p| Value::Long(exact_percentile(&xs, p))).collect();
        prop_assert_eq!(&got, &Value::List(expected.into()));
        let mut s = f.new_state();
        let mut at = 0;
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (xs.len() + 1)).collect();
        cuts.sort_unstable();
        for c in cuts.into_iter().chain([xs.len()]) {
            f.merge(&mut s, &run(&f, &vs[at..c]));
            at = c;
        }
        prop_assert!(same(&f.finish(&s), &got));
    }
}
