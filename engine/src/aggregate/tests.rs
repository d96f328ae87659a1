//! Tests of the aggregate functions over their public surface: null rules, result types, input
//! type checks, retraction, user aggregates, state bytes. Properties (merge of panes, retract):
//! `tests_props.rs`; sketch accuracy: `tests_sketch.rs`.
//! Expected values come from brute-force references written here, never from the code under test.

use std::sync::Arc;

use super::*;
use crate::time::Timestamp;

pub(super) fn agg(name: &str, t: DataType) -> AggregateFn {
    AggregateFn::from_name(name, Some((0, t)), &AggParams::default()).unwrap()
}

pub(super) fn with(name: &str, t: DataType, params: AggParams) -> AggregateFn {
    AggregateFn::from_name(name, Some((0, t)), &params).unwrap()
}

pub(super) fn run(f: &AggregateFn, vs: &[Value]) -> AggState {
    let mut s = f.new_state();
    for v in vs {
        f.update(&mut s, v);
    }
    s
}

pub(super) fn eval(f: &AggregateFn, vs: &[Value]) -> Value {
    f.finish(&run(f, vs))
}

fn longs(xs: &[i64]) -> Vec<Value> {
    xs.iter().map(|&x| Value::Long(x)).collect()
}

fn doubles(xs: &[f64]) -> Vec<Value> {
    xs.iter().map(|&x| Value::Double(x)).collect()
}

fn pct(p: f64) -> AggParams {
    AggParams { percentage: Some(Percentage::One(p)), ..AggParams::default() }
}

pub(super) const ALL: [&str; 11] = [
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "stddev",
    "stddev_pop",
    "variance",
    "var_pop",
    "approx_count_distinct",
    "approx_percentile",
];

pub(super) fn build(name: &str, t: DataType) -> AggregateFn {
    if name.contains("percentile") { with(name, t, pct(0.5)) } else { agg(name, t) }
}

#[test]
fn no_input_and_only_nulls_give_each_functions_empty_result() {
    for name in ALL {
        let f = build(name, DataType::Long);
        let expected = match name {
            "count" | "approx_count_distinct" => Value::Long(0),
            _ => Value::Null,
        };
        assert_eq!(eval(&f, &[]), expected, "{name} on no input");
        assert_eq!(eval(&f, &[Value::Null, Value::Null]), expected, "{name} on nulls");
    }
    let star = AggregateFn::from_name("count", None, &AggParams::default()).unwrap();
    assert_eq!(eval(&star, &[]), Value::Long(0));
    assert_eq!(eval(&star, &[Value::Null, Value::Null]), Value::Long(2), "count(*) counts rows");
}

#[test]
fn nulls_are_skipped() {
    let vs = vec![Value::Long(2), Value::Null, Value::Long(4)];
    assert_eq!(eval(&agg("count", DataType::Long), &vs), Value::Long(2));
    assert_eq!(eval(&agg("sum", DataType::Long), &vs), Value::Long(6));
    assert_eq!(eval(&agg("avg", DataType::Long), &vs), Value::Double(3.0));
    assert_eq!(eval(&agg("min", DataType::Long), &vs), Value::Long(2));
    assert_eq!(eval(&agg("var_pop", DataType::Long), &vs), Value::Double(1.0));
    assert_eq!(eval(&agg("variance", DataType::Long), &vs), Value::Double(2.0));
    assert_eq!(eval(&agg("approx_count_distinct", DataType::Long), &vs), Value::Long(2));
}

#[test]
fn sample_statistics_are_null_for_one_value_population_ones_zero() {
    let one = longs(&[7]);
    assert_eq!(eval(&agg("stddev", DataType::Long), &one), Value::Null);
    assert_eq!(eval(&agg("stddev_samp", DataType::Long), &one), Value::Null);
    assert_eq!(eval(&agg("variance", DataType::Long), &one), Value::Null);
    assert_eq!(eval(&agg("var_samp", DataType::Long), &one), Value::Null);
    assert_eq!(eval(&agg("stddev_pop", DataType::Long), &one), Value::Double(0.0));
    assert_eq!(eval(&agg("var_pop", DataType::Long), &one), Value::Double(0.0));
    // One infinite value: Spark's Welford update gives NaN for the population variance.
    let inf = doubles(&[f64::INFINITY]);
    assert!(matches!(eval(&agg("var_pop", DataType::Double), &inf), Value::Double(x) if x.is_nan()));
    assert_eq!(eval(&agg("stddev", DataType::Double), &inf), Value::Null);
}

#[test]
fn stddev_of_a_known_sample() {
    // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sum of squared deviations 32.
    let vs = longs(&[2, 4, 4, 4, 5, 5, 7, 9]);
    assert_eq!(eval(&agg("var_pop", DataType::Long), &vs), Value::Double(4.0));
    assert_eq!(eval(&agg("stddev_pop", DataType::Long), &vs), Value::Double(2.0));
    assert_eq!(eval(&agg("var_samp", DataType::Long), &vs), Value::Double(32.0 / 7.0));
    assert_eq!(eval(&agg("stddev", DataType::Long), &vs), Value::Double((32.0f64 / 7.0).sqrt()));
}

#[test]
fn result_types_are_sparks() {
    use DataType::*;
    let cases: [(&str, DataType, DataType); 18] = [
        ("count", String, Long),
        ("sum", Int, Long),
        ("sum", Long, Long),
        ("sum", Float, Double),
        ("sum", Double, Double),
        ("avg", Int, Double),
        ("mean", Long, Double),
        ("min", String, String),
        ("max", Timestamp, Timestamp),
        ("min", Boolean, Boolean),
        ("max", Float, Float),
        ("stddev", Int, Double),
        ("var_pop", Float, Double),
        ("approx_count_distinct", String, Long),
        ("approx_percentile", Int, Int),
        ("percentile_approx", Timestamp, Timestamp),
        ("approx_percentile", Float, Float),
        ("approx_percentile", Double, Double),
    ];
    for (name, input, expected) in cases {
        assert_eq!(build(name, input).result_type(), expected, "{name}({input})");
    }
    let list = AggParams { percentage: Some(Percentage::List(vec![0.25, 0.5])), ..AggParams::default() };
    assert_eq!(with("approx_percentile", Long, list).result_type(), Array(crate::schema::ArrayOf::Long));
    let star = AggregateFn::from_name("count", None, &AggParams::default()).unwrap();
    assert_eq!(star.result_type(), Long);
}

#[test]
fn results_carry_their_result_type() {
    let ints: Vec<Value> = [3, 1, 2].iter().map(|&x| Value::Int(x)).collect();
    assert_eq!(eval(&agg("sum", DataType::Int), &ints), Value::Long(6));
    assert_eq!(eval(&agg("max", DataType::Int), &ints), Value::Int(3));
    assert_eq!(eval(&with("approx_percentile", DataType::Int, pct(0.5)), &ints), Value::Int(2));
    let floats: Vec<Value> = [1.5f32, 2.5].iter().map(|&x| Value::Float(x)).collect();
    assert_eq!(eval(&agg("sum", DataType::Float), &floats), Value::Double(4.0));
    assert_eq!(eval(&with("approx_percentile", DataType::Float, pct(1.0)), &floats), Value::Float(2.5));
    let ts: Vec<Value> = [5, 9].iter().map(|&t| Value::Timestamp(Timestamp(t))).collect();
    assert_eq!(eval(&agg("min", DataType::Timestamp), &ts), Value::Timestamp(Timestamp(5)));
    assert_eq!(eval(&with("approx_percentile", DataType::Timestamp, pct(0.0)), &ts), Value::Timestamp(Timestamp(5)));
    let strs: Vec<Value> = ["b", "a", "c"].iter().map(|&s| Value::Str(s.into())).collect();
    assert_eq!(eval(&agg("min", DataType::String), &strs), Value::Str("a".into()));
    assert_eq!(eval(&agg("max", DataType::String), &strs), Value::Str("c".into()));
}

#[test]
fn nan_is_the_largest_double_for_min_max_and_percentiles() {
    let vs = doubles(&[1.0, f64::NAN, -3.0]);
    assert!(matches!(eval(&agg("max", DataType::Double), &vs), Value::Double(x) if x.is_nan()));
    assert_eq!(eval(&agg("min", DataType::Double), &vs), Value::Double(-3.0));
    let p = with("approx_percentile", DataType::Double, pct(1.0));
    assert!(matches!(eval(&p, &vs), Value::Double(x) if x.is_nan()));
    assert_eq!(eval(&with("approx_percentile", DataType::Double, pct(0.5)), &vs), Value::Double(1.0));
    assert!(matches!(eval(&agg("sum", DataType::Double), &vs), Value::Double(x) if x.is_nan()));
}

#[test]
fn percentile_is_the_smallest_value_with_enough_values_at_or_below_it() {
    // [1, 2, 3]: 0.25 -> 1 (1 of 3 values <= 1 is >= 0.75), 0.5 -> 2, 0 -> min, 1 -> max.
    let vs = longs(&[3, 1, 2]);
    let list =
        AggParams { percentage: Some(Percentage::List(vec![0.0, 0.25, 0.5, 0.67, 1.0])), ..AggParams::default() };
    let got = eval(&with("approx_percentile", DataType::Long, list), &vs);
    assert_eq!(got, Value::List(longs(&[1, 1, 2, 3, 3]).into()));
}

#[test]
fn sum_of_longs_outside_bigint_is_null_never_wrapped() {
    // (Operators refuse the record first; a state outside BIGINT reads as Spark's try_sum.)
    let vs = longs(&[i64::MAX, 1]);
    assert_eq!(eval(&agg("sum", DataType::Long), &vs), Value::Null);
    assert_eq!(eval(&agg("sum", DataType::Long), &longs(&[i64::MIN, -1])), Value::Null);
    // ... and is exact again once the overflowing value leaves.
    let f = agg("sum", DataType::Long);
    let mut s = run(&f, &vs);
    assert!(f.retract(&mut s, &Value::Long(1)));
    assert_eq!(f.finish(&s), Value::Long(i64::MAX));
}

#[test]
fn sum_fits_says_whether_a_value_keeps_the_sum_of_states_within_bigint() {
    let f = agg("sum", DataType::Long);
    let (a, b) = (run(&f, &longs(&[i64::MAX - 5])), run(&f, &longs(&[3])));
    assert!(f.sum_fits([&a], &Value::Long(5)));
    assert!(!f.sum_fits([&a], &Value::Long(6)));
    assert!(f.sum_fits([&a, &b], &Value::Long(2)));
    assert!(!f.sum_fits([&a, &b], &Value::Long(3)));
    assert!(f.sum_fits([&a, &b], &Value::Null));
    assert!(!f.sum_fits([&a, &b, &b], &Value::Null), "states that together leave BIGINT");
    assert!(f.sum_fits([&a], &Value::Long(i64::MIN)));
    let ints = agg("sum", DataType::Int);
    assert!(!ints.sum_fits([&run(&ints, &[Value::Int(1)]), &a], &Value::Int(6)));
    // other measures never overflow
    let count = agg("count", DataType::Long);
    assert!(count.sum_fits([&run(&count, &longs(&[1]))], &Value::Long(i64::MAX)));
}

#[test]
fn wrong_input_types_are_refused_as_spark_refuses_them() {
    use DataType::*;
    for (name, t) in [
        ("sum", String),
        ("sum", Boolean),
        ("sum", Timestamp),
        ("avg", String),
        ("avg", Timestamp),
        ("stddev", String),
        ("var_pop", Boolean),
        ("approx_percentile", String),
        ("approx_percentile", Boolean),
        ("min", Window),
    ] {
        let params = if name == "approx_percentile" { pct(0.5) } else { AggParams::default() };
        let err = AggregateFn::from_name(name, Some((3, t)), &params).unwrap_err();
        assert!(matches!(&err, AggregateError::WrongInputType { given, .. } if *given == t), "{name}({t}): {err}");
    }
}

#[test]
fn unknown_functions_missing_columns_and_bad_parameters_are_errors() {
    let none = AggParams::default();
    let e = AggregateFn::from_name("median", Some((0, DataType::Long)), &none).unwrap_err();
    assert!(matches!(e, AggregateError::UnknownFunction { ref given } if given == "median"));
    let e = AggregateFn::from_name("sum", None, &none).unwrap_err();
    assert!(matches!(e, AggregateError::MissingColumn { .. }), "{e}");
    let bad = |name: &str, params: AggParams| {
        let e = AggregateFn::from_name(name, Some((0, DataType::Long)), &params).unwrap_err();
        match e {
            AggregateError::BadParameter { parameter, .. } => parameter,
            other => panic!("{name}: {other}"),
        }
    };
    let acd = "approx_count_distinct";
    assert_eq!(bad(acd, AggParams { rsd: Some(0.5), ..none.clone() }), "rsd");
    assert_eq!(bad(acd, AggParams { rsd: Some(0.0001), ..none.clone() }), "rsd");
    assert_eq!(bad(acd, AggParams { rsd: Some(-1.0), ..none.clone() }), "rsd");
    assert_eq!(bad("sum", AggParams { rsd: Some(0.05), ..none.clone() }), "rsd");
    let ap = "approx_percentile";
    assert_eq!(bad(ap, none.clone()), "percentage");
    assert_eq!(bad(ap, pct(1.5)), "percentage");
    assert_eq!(bad(ap, AggParams { percentage: Some(Percentage::List(vec![])), ..none.clone() }), "percentage");
    assert_eq!(bad(ap, AggParams { accuracy: Some(0), ..pct(0.5) }), "accuracy");
    assert_eq!(bad(ap, AggParams { accuracy: Some(MAX_ACCURACY as i64 + 1), ..pct(0.5) }), "accuracy");
    assert_eq!(bad("count", pct(0.5)), "percentage");
    // The edges that are accepted.
    for rsd in [0.39, 0.00077] {
        let p = AggParams { rsd: Some(rsd), ..none.clone() };
        assert!(AggregateFn::from_name(acd, Some((0, DataType::Long)), &p).is_ok(), "rsd {rsd}");
    }
    let p = AggParams { accuracy: Some(MAX_ACCURACY as i64), ..pct(0.5) };
    assert!(AggregateFn::from_name(ap, Some((0, DataType::Long)), &p).is_ok());
}

#[test]
fn names_and_aliases_are_case_insensitive() {
    for (name, function) in [
        ("COUNT", "count"),
        ("Mean", "avg"),
        ("std", "stddev_samp"),
        ("STDDEV", "stddev_samp"),
        ("variance", "var_samp"),
        ("percentile_approx", "approx_percentile"),
    ] {
        assert_eq!(build(&name.to_ascii_lowercase(), DataType::Long).function_name(), function);
        let params = if function == "approx_percentile" { pct(0.5) } else { AggParams::default() };
        let f = AggregateFn::from_name(name, Some((0, DataType::Long)), &params).unwrap();
        assert_eq!(f.function_name(), function, "{name}");
    }
}

#[test]
fn retract_is_supported_where_documented() {
    for name in ALL {
        let f = build(name, DataType::Long);
        let expected = !matches!(name, "min" | "max" | "approx_count_distinct" | "approx_percentile");
        assert_eq!(f.can_retract(), expected, "{name}");
        let mut s = run(&f, &longs(&[1, 2]));
        let before = f.finish(&s);
        assert_eq!(f.retract(&mut s, &Value::Long(1)), expected, "{name}");
        if !expected {
            assert_eq!(f.finish(&s), before, "{name}: a refused retract leaves the state alone");
        }
    }
}

/// A user aggregate: total length of strings, retractable.
#[derive(Debug)]
struct TotalLength;

impl Aggregator for TotalLength {
    fn name(&self) -> &str {
        "total_length"
    }
    fn result_type(&self, _input: DataType) -> DataType {
        DataType::Long
    }
    fn zero(&self) -> Value {
        Value::Long(0)
    }
    fn reduce(&self, state: &mut Value, input: &Value) {
        if let (Value::Long(n), Some(s)) = (&mut *state, input.as_str()) {
            *n += s.len() as i64;
        }
    }
    fn merge(&self, state: &mut Value, other: &Value) {
        if let (Value::Long(a), Value::Long(b)) = (&mut *state, other) {
            *a += b;
        }
    }
    fn finish(&self, state: &Value) -> Value {
        state.clone()
    }
    fn retract(&self, state: &mut Value, input: &Value) -> bool {
        if let (Value::Long(n), Some(s)) = (&mut *state, input.as_str()) {
            *n -= s.len() as i64;
        }
        true
    }
    fn can_retract(&self) -> bool {
        true
    }
}

#[test]
fn user_aggregates_fold_merge_retract_and_round_trip() {
    let f = AggregateFn::user(Arc::new(TotalLength), 0, DataType::String);
    assert_eq!(f.result_type(), DataType::Long);
    assert_eq!(f.default_name("total_length", Some("s")), "total_length(s)");
    assert_eq!(eval(&f, &[]), Value::Long(0), "finish(zero) on no input");
    let vs: Vec<Value> = ["ab", "cde"].iter().map(|&s| Value::Str(s.into())).collect();
    let mut a = run(&f, &vs[..1]);
    let b = run(&f, &vs[1..]);
    f.merge(&mut a, &b);
    assert_eq!(f.finish(&a), Value::Long(5));
    assert!(f.can_retract() && f.retract(&mut a, &vs[0]));
    assert_eq!(f.finish(&a), Value::Long(3));
    let back = f.state_from_bytes(&a.to_bytes()).unwrap();
    assert_eq!(f.finish(&back), Value::Long(3));
}

#[test]
fn bad_state_bytes_are_errors_not_panics() {
    let sum = agg("sum", DataType::Long);
    let bytes = run(&sum, &longs(&[1, 2])).to_bytes();
    for broken in [&[][..], &bytes[..bytes.len() - 1], &[bytes.as_slice(), &[0]].concat()] {
        assert!(matches!(sum.state_from_bytes(broken), Err(AggregateError::BadState { .. })));
    }
    // A state of another function.
    let count_bytes = run(&agg("count", DataType::Long), &longs(&[1])).to_bytes();
    assert!(sum.state_from_bytes(&count_bytes).is_err());
    // A sketch of another size (rsd changed since the snapshot).
    let acd = |rsd| with("approx_count_distinct", DataType::Long, AggParams { rsd: Some(rsd), ..AggParams::default() });
    let bytes = run(&acd(0.05), &longs(&[1, 2, 3])).to_bytes();
    assert!(acd(0.01).state_from_bytes(&bytes).is_err());
    assert!(acd(0.05).state_from_bytes(&bytes).is_ok());
    // Garbage after a valid tag.
    for tag in 1u8..=8 {
        let mut junk = vec![tag];
        junk.extend_from_slice(&[0xff; 5]);
        for name in ALL {
            let _may_fail = build(name, DataType::Double).state_from_bytes(&junk);
        }
    }
}

#[test]
fn debug_of_a_sketch_state_is_a_summary() {
    let f = with("approx_percentile", DataType::Long, pct(0.5));
    let s = run(&f, &longs(&(0..100_000).collect::<Vec<_>>()));
    let text = format!("{s:?}");
    assert!(text.len() < 200, "{text}");
    assert!(text.contains("n: 100000"), "{text}");
    let f = agg("approx_count_distinct", DataType::Long);
    let text = format!("{:?}", run(&f, &longs(&(0..100_000).collect::<Vec<_>>())));
    assert!(text.len() < 200 && text.contains("lg_k: 9"), "{text}");
}

fn decimals(unscaled: &[Option<i128>], scale: u8) -> Vec<Value> {
    unscaled.iter().map(|u| u.map_or(Value::Null, |u| Value::Decimal(crate::decimal::Decimal::new(u, scale)))).collect()
}

/// sum / avg / min / max / count over DECIMAL(12, 2), with Spark's result types and values
/// (Spark 4.3: avg of 1.01, 2.00, 2.00 is 1.670000 as DECIMAL(16,6); sum 5.01 as DECIMAL(22,2)).
#[test]
fn decimal_measures_are_exact_with_sparks_result_types() {
    let ty = DataType::Decimal { precision: 12, scale: 2 };
    let vs = decimals(&[Some(101), None, Some(200), Some(200)], 2);
    let dec = |u: i128, s: u8| Value::Decimal(crate::decimal::Decimal::new(u, s));
    let sum = agg("sum", ty);
    let avg = agg("avg", ty);
    assert_eq!(sum.result_type(), DataType::Decimal { precision: 22, scale: 2 });
    assert_eq!(avg.result_type(), DataType::Decimal { precision: 16, scale: 6 });
    assert_eq!(agg("min", ty).result_type(), ty);
    let exact = |v: Value| match v {
        Value::Decimal(d) => (d.unscaled, d.scale),
        other => panic!("{other:?}"),
    };
    assert_eq!(exact(eval(&sum, &vs)), (501, 2));
    assert_eq!(exact(eval(&avg, &vs)), (1_670_000, 6));
    assert_eq!(eval(&agg("min", ty), &vs), dec(101, 2));
    assert_eq!(eval(&agg("max", ty), &vs), dec(200, 2));
    assert_eq!(eval(&agg("count", ty), &vs), Value::Long(3));
    assert_eq!(eval(&sum, &decimals(&[None], 2)), Value::Null);
    assert_eq!(eval(&avg, &[]), Value::Null);
    // 0.1 + 0.2 is exactly 0.3, unlike doubles
    assert_eq!(
        exact(eval(&agg("sum", DataType::Decimal { precision: 3, scale: 1 }), &decimals(&[Some(1), Some(2)], 1))),
        (3, 1)
    );
    // retract and merge
    let mut s = run(&sum, &vs);
    assert!(sum.retract(&mut s, &vs[0]));
    assert_eq!(exact(sum.finish(&s)), (400, 2));
    let mut a = run(&avg, &vs[..2]);
    avg.merge(&mut a, &run(&avg, &vs[2..]));
    assert_eq!(exact(avg.finish(&a)), (1_670_000, 6));
    // state bytes
    for f in [&sum, &avg, &agg("min", ty)] {
        let st = run(f, &vs);
        let back = f.state_from_bytes(&st.to_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.finish(&back), f.finish(&st));
    }
    assert!(agg("stddev", ty).result_type() == DataType::Double);
    assert!(AggregateFn::from_name("approx_percentile", Some((0, ty)), &pct(0.5)).is_err());
}

/// A DECIMAL(p, s) sum stays within DECIMAL(min(38, p + 10), s): a value that would take the
/// window's sum past it does not fit (the operators send its record to the dead letters).
#[test]
fn sum_fits_keeps_a_decimal_sum_within_its_result_precision() {
    let f = agg("sum", DataType::Decimal { precision: 28, scale: 0 });
    let max = crate::decimal::pow10(38) - 1; // DECIMAL(38, 0)'s largest
    let half = run(&f, &decimals(&[Some(max / 2)], 0));
    let v = |u: i128| Value::Decimal(crate::decimal::Decimal::new(u, 0));
    assert!(f.sum_fits([&half], &v(max / 2)));
    assert!(f.sum_fits([&half, &half], &v(1)));
    assert!(!f.sum_fits([&half, &half], &v(2)));
    assert!(!f.sum_fits([&half, &half, &half], &Value::Null));
    assert!(f.is_integer_sum());
    assert!(!agg("avg", DataType::Decimal { precision: 28, scale: 0 }).is_integer_sum());
}

fn pair_type(value: DataType, ordering: DataType) -> DataType {
    DataType::Struct(crate::schema::StructType::new(vec![
        crate::schema::Field { name: "value".into(), data_type: value },
        crate::schema::Field { name: "ordering".into(), data_type: ordering },
    ]))
}

fn pairs(t: DataType, rows: &[(Value, Value)]) -> Vec<Value> {
    let DataType::Struct(ty) = t else { unreachable!("a pair type") };
    rows.iter().map(|(v, o)| Value::Struct(ty, vec![v.clone(), o.clone()].into())).collect()
}

fn s(x: &str) -> Value {
    Value::Str(x.into())
}

#[test]
fn max_by_and_min_by_take_the_value_of_the_extreme_non_null_ordering() {
    let t = pair_type(DataType::String, DataType::Long);
    let rows = pairs(
        t,
        &[
            (s("ann"), Value::Long(5)),
            (s("bob"), Value::Null),
            (Value::Null, Value::Long(9)),
            (s("cy"), Value::Long(-3)),
            (s("dee"), Value::Long(7)),
        ],
    );
    let max_by = agg("max_by", t);
    let min_by = agg("min_by", t);
    assert_eq!(max_by.result_type(), DataType::String);
    // the largest ordering is 9, whose value is NULL (Spark returns it); the null ordering is skipped
    assert_eq!(eval(&max_by, &rows), Value::Null);
    assert_eq!(eval(&max_by, &rows[..2]), s("ann"));
    assert_eq!(eval(&min_by, &rows), s("cy"));
    // only null orderings, or nothing: NULL
    assert_eq!(eval(&min_by, &rows[1..2]), Value::Null);
    assert_eq!(eval(&min_by, &[]), Value::Null);
    // merged panes give the state of all their input, either way round
    for (a, b) in [(&rows[..3], &rows[3..]), (&rows[3..], &rows[..3])] {
        let mut st = run(&min_by, a);
        min_by.merge(&mut st, &run(&min_by, b));
        assert_eq!(min_by.finish(&st), s("cy"));
    }
    assert!(!max_by.can_retract());
    assert!(AggregateFn::from_name("max_by", Some((0, DataType::Long)), &AggParams::default()).is_err());
}

#[test]
fn first_and_last_keep_the_first_and_last_value_seen_nulls_included() {
    let first = agg("first", DataType::String);
    let last = agg("last", DataType::String);
    let rows = [s("a"), s("b"), Value::Null];
    assert_eq!(eval(&first, &rows), s("a"));
    assert_eq!(eval(&last, &rows), Value::Null);
    assert_eq!(eval(&first, &rows[1..]), s("b"));
    assert_eq!(eval(&first, &[Value::Null, s("x")]), Value::Null);
    assert_eq!(eval(&last, &[]), Value::Null);
    assert_eq!(agg("first_value", DataType::Long).result_type(), DataType::Long);
    // a state merged with a later one: first keeps its own, last takes the later one's
    let mut st = run(&first, &rows[..1]);
    first.merge(&mut st, &run(&first, &rows[1..]));
    assert_eq!(first.finish(&st), s("a"));
    let mut st = run(&last, &rows[..2]);
    last.merge(&mut st, &run(&last, &[]));
    assert_eq!(last.finish(&st), s("b"));
    last.merge(&mut st, &run(&last, &rows[2..]));
    assert_eq!(last.finish(&st), Value::Null);
    assert!(!first.can_retract());
}

#[test]
fn first_and_last_ignoring_nulls_keep_the_first_and_last_non_null_value() {
    let ignore = AggParams { ignore_nulls: true, ..AggParams::default() };
    let first = with("first", DataType::String, ignore.clone());
    let last = with("last", DataType::String, ignore.clone());
    let any = with("any_value", DataType::String, ignore.clone());
    let rows = [Value::Null, s("a"), Value::Null, s("b"), Value::Null];
    assert_eq!(eval(&first, &rows), s("a"));
    assert_eq!(eval(&any, &rows), s("a"));
    assert_eq!(eval(&last, &rows), s("b"));
    assert_eq!(eval(&first, &[Value::Null, Value::Null]), Value::Null);
    assert_eq!(eval(&last, &[Value::Null]), Value::Null);
    // states of nulls only are empty: merged with a later state, first takes its value, and a
    // later state of nulls only leaves last's value
    let mut st = run(&first, &rows[..1]);
    first.merge(&mut st, &run(&first, &rows[1..]));
    assert_eq!(first.finish(&st), s("a"));
    let mut st = run(&last, &rows[..4]);
    last.merge(&mut st, &run(&last, &rows[4..]));
    assert_eq!(last.finish(&st), s("b"));
    // ignoreNulls is a parameter of first and last only
    assert!(AggregateFn::from_name("max", Some((0, DataType::String)), &ignore).is_err());
    assert!(AggregateFn::from_name("count", None, &ignore).is_err());
}

#[test]
fn first_last_and_max_by_states_read_back_from_their_bytes() {
    let t = pair_type(DataType::String, DataType::Timestamp);
    let max_by = agg("max_by", t);
    let st = run(&max_by, &pairs(t, &[(s("x"), Value::Timestamp(Timestamp(5)))]));
    let back = max_by.state_from_bytes(&st.to_bytes()).unwrap();
    assert_eq!(max_by.finish(&back), s("x"));
    let last = agg("last", DataType::Long);
    for rows in [vec![], vec![Value::Long(3), Value::Null], vec![Value::Long(4)]] {
        let st = run(&last, &rows);
        let back = last.state_from_bytes(&st.to_bytes()).unwrap();
        assert_eq!(last.finish(&back), rows.last().cloned().unwrap_or(Value::Null));
        // a first / last state is not another function's
        assert!(agg("max", DataType::Long).state_from_bytes(&st.to_bytes()).is_err());
    }
}
