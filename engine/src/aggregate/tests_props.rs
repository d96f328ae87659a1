//! Property tests of the aggregate functions: merged panes equal one state over all input,
//! update-then-retract equals never-added, and states survive their bytes. References are
//! brute force (one state over all values; a state that never saw the retracted values).

use proptest::prelude::*;

use super::tests::{ALL, agg, build, run};
use super::*;

/// Equal results: bit-equal except NaN = NaN; lists element-wise.
pub(super) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
        _ => a == b,
    }
}

/// Results within `rel` relative (doubles), equal otherwise.
fn close(a: &Value, b: &Value, rel: f64) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => {
            same(a, b) || (x - y).abs() <= rel * x.abs().max(y.abs()) || (x - y).abs() <= 1e-300
        }
        _ => same(a, b),
    }
}

/// Merges the states of `panes` in order into a fresh state.
fn merged(f: &AggregateFn, panes: &[&[Value]]) -> AggState {
    let mut s = f.new_state();
    for p in panes {
        f.merge(&mut s, &run(f, p));
    }
    s
}

fn split<'a>(vs: &'a [Value], cuts: &[usize]) -> Vec<&'a [Value]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (vs.len() + 1)).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut at = 0;
    for c in cuts.into_iter().chain([vs.len()]) {
        out.push(&vs[at..c]);
        at = c;
    }
    out
}

fn opt_long() -> impl Strategy<Value = Value> {
    prop_oneof![1 => Just(Value::Null), 6 => (-1000i64..1000).prop_map(Value::Long)]
}

/// Doubles on a 2^-10 grid below 2^20 (so every sum of a few thousand is exact in double-double,
/// and merge order cannot change a bit), with some NaN and infinities.
fn opt_double() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        20 => (-(1i64 << 30)..(1i64 << 30)).prop_map(|x| Value::Double(x as f64 / 1024.0)),
        1 => prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY)].prop_map(Value::Double),
    ]
}

fn opt_string() -> impl Strategy<Value = Value> {
    prop_oneof![1 => Just(Value::Null), 6 => "[a-d]{0,3}".prop_map(|s| Value::Str(s.as_str().into()))]
}

fn check_merge(f: &AggregateFn, vs: &[Value], cuts: &[usize], rel: f64) -> Result<(), TestCaseError> {
    let all = f.finish(&run(f, vs));
    let panes = split(vs, cuts);
    let forward = f.finish(&merged(f, &panes));
    let rev: Vec<&[Value]> = panes.iter().rev().copied().collect();
    let backward = f.finish(&merged(f, &rev));
    prop_assert!(close(&all, &forward, rel), "{f:?}: all {all:?} vs panes {forward:?}");
    prop_assert!(close(&all, &backward, rel), "{f:?}: all {all:?} vs reversed panes {backward:?}");
    Ok(())
}

fn check_retract(f: &AggregateFn, keep: &[Value], extra: &[Value], rel: f64) -> Result<(), TestCaseError> {
    let never = f.finish(&run(f, keep));
    let mut s = f.new_state();
    // Interleave: extra values first, then kept ones, then remove the extras in reverse.
    for v in extra.iter().chain(keep) {
        f.update(&mut s, v);
    }
    for v in extra.iter().rev() {
        prop_assert!(f.retract(&mut s, v));
    }
    let got = f.finish(&s);
    prop_assert!(close(&never, &got, rel), "{f:?}: never added {never:?} vs retracted {got:?}");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn merged_panes_equal_one_state_over_all_longs(
        vs in prop::collection::vec(opt_long(), 0..300),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        for name in ALL {
            let exact = !matches!(name, "avg" | "stddev" | "stddev_pop" | "variance" | "var_pop");
            let f = build(name, DataType::Long);
            check_merge(&f, &vs, &cuts, if exact { 0.0 } else { 1e-9 })?;
        }
        let star = AggregateFn::from_name("count", None, &AggParams::default()).unwrap();
        check_merge(&star, &vs, &cuts, 0.0)?;
    }

    #[test]
    fn merged_panes_equal_one_state_over_all_doubles(
        vs in prop::collection::vec(opt_double(), 0..300),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        for name in ALL {
            let exact = !matches!(name, "avg" | "stddev" | "stddev_pop" | "variance" | "var_pop");
            let f = build(name, DataType::Double);
            check_merge(&f, &vs, &cuts, if exact { 0.0 } else { 1e-9 })?;
        }
    }

    #[test]
    fn merged_panes_equal_one_state_over_all_strings(
        vs in prop::collection::vec(opt_string(), 0..300),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        for name in ["count", "min", "max", "approx_count_distinct"] {
            check_merge(&agg(name, DataType::String), &vs, &cuts, 0.0)?;
        }
    }

    #[test]
    fn update_then_retract_equals_never_added(
        keep in prop::collection::vec(opt_double(), 0..100),
        extra in prop::collection::vec(opt_double(), 0..100),
        keep_l in prop::collection::vec(opt_long(), 0..100),
        extra_l in prop::collection::vec(opt_long(), 0..100),
    ) {
        for name in ["count", "sum", "avg", "stddev", "stddev_pop", "variance", "var_pop"] {
            let exact = matches!(name, "count" | "sum");
            let rel = if exact { 0.0 } else { 1e-9 };
            check_retract(&agg(name, DataType::Double), &keep, &extra, rel)?;
            check_retract(&agg(name, DataType::Long), &keep_l, &extra_l, rel)?;
        }
        let star = AggregateFn::from_name("count", None, &AggParams::default()).unwrap();
        check_retract(&star, &keep, &extra, 0.0)?;
    }

    #[test]
    fn states_survive_their_bytes(
        vs in prop::collection::vec(opt_double(), 0..200),
        ss in prop::collection::vec(opt_string(), 0..50),
    ) {
        for name in ALL {
            let f = build(name, DataType::Double);
            let s = run(&f, &vs);
            let back = f.state_from_bytes(&s.to_bytes()).unwrap();
            prop_assert!(same(&f.finish(&s), &f.finish(&back)), "{name}");
            // A restored state keeps working: merging it equals merging the original.
            let (mut a, mut b) = (run(&f, &vs), run(&f, &vs));
            f.merge(&mut a, &s);
            f.merge(&mut b, &back);
            prop_assert!(same(&f.finish(&a), &f.finish(&b)), "{name} after merge");
        }
        for name in ["min", "max", "approx_count_distinct"] {
            let f = agg(name, DataType::String);
            let s = run(&f, &ss);
            let back = f.state_from_bytes(&s.to_bytes()).unwrap();
            prop_assert!(same(&f.finish(&s), &f.finish(&back)), "{name}");
        }
    }
}

/// An input for min / max: null, or an INT, BIGINT or TIMESTAMP (mostly of one kind, sometimes
/// another, or a DOUBLE that has no compact form).
fn extreme_input() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        8 => (-50i64..50).prop_map(Value::Long),
        1 => (-50i32..50).prop_map(Value::Int),
        1 => (-50i64..50).prop_map(|t| Value::Timestamp(crate::time::Timestamp(t))),
        1 => (-50i64..50).prop_map(|x| Value::Double(x as f64 / 2.0)),
    ]
}

proptest! {
    /// The compact min / max state, updated as the window operators do (compact while it
    /// accepts the input; else the full state takes it and is compacted again when it can
    /// be), ends where the full state updated directly ends; compacting and expanding a state
    /// keeps it exactly.
    #[test]
    fn a_compact_extreme_follows_the_full_one(
        max in any::<bool>(),
        input_type in prop_oneof![Just(DataType::Long), Just(DataType::Int), Just(DataType::Timestamp)],
        values in prop::collection::vec(extreme_input(), 0..60),
    ) {
        let kind = if max { AggKind::Max } else { AggKind::Min };
        let f = AggregateFn { kind, input: Some(0), input_type, name: String::new() };
        let mut full = f.new_state();
        let mut small = f.new_state().to_small();
        prop_assert!(small.is_some(), "an empty extreme has a compact form");
        let mut parked_full = f.new_state();
        for v in &values {
            f.update(&mut full, v);
            let accepted = small.as_mut().is_some_and(|s| f.update_small(s, v));
            if !accepted {
                if let Some(s) = small.take() {
                    parked_full = s.to_state();
                }
                f.update(&mut parked_full, v);
                small = parked_full.to_small();
            }
            if let Some(s) = small {
                prop_assert_eq!(s.to_state().to_small(), Some(s));
            }
        }
        let ours = match small {
            Some(s) => f.finish(&s.to_state()),
            None => f.finish(&parked_full),
        };
        let direct = f.finish(&full);
        prop_assert!(same(&ours, &direct), "{:?} vs {:?}", ours, direct);
    }
}

proptest! {
    /// `min` / `max` updated through [`AggregateFn::update`] (with its inline path for a BIGINT
    /// kept and given) keep what a brute-force fold keeps: the first non-null value, replaced
    /// by a value strictly beyond it in [`Value::total_cmp`] order, whatever the mix of kinds.
    #[test]
    fn a_full_extreme_keeps_the_strictly_beyond_value(
        max in any::<bool>(),
        values in prop::collection::vec(extreme_input(), 0..60),
    ) {
        let kind = if max { AggKind::Max } else { AggKind::Min };
        let f = AggregateFn { kind, input: Some(0), input_type: DataType::Long, name: String::new() };
        let mut s = f.new_state();
        let mut kept: Option<Value> = None;
        for v in &values {
            f.update(&mut s, v);
            if v.is_null() {
                continue;
            }
            let beyond = kept.as_ref().is_none_or(|k| {
                let c = v.total_cmp(k);
                if max { c.is_gt() } else { c.is_lt() }
            });
            if beyond {
                kept = Some(v.clone());
            }
            let AggState::Extreme(got) = &s else { panic!("{s:?}") };
            prop_assert_eq!(got, &kept);
        }
        prop_assert_eq!(f.finish(&s), kept.unwrap_or(Value::Null));
    }
}
