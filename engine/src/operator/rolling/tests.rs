//! Unit tests of the rolling window's own structures: min / max leaving the monotonic deque for
//! the ordered multiset and back, the snapshot format, stale timers. The semantics as a whole
//! are checked against a brute-force reference in `tests/props_rolling.rs`.

use super::*;
use crate::aggregate::AggKind;
use crate::schema::DataType;
use crate::value::Row;

const S: i64 = 1_000_000;

fn f(kind: AggKind, input: Option<usize>) -> AggregateFn {
    AggregateFn {
        kind,
        input,
        input_type: if input.is_some() { DataType::Double } else { DataType::Long },
        name: String::new(),
    }
}

fn op(measures: Vec<(AggKind, Option<usize>, Option<i64>)>) -> RollingWindow {
    RollingWindow::new(RollingWindowConfig {
        mode: Mode::RealTime,
        key_columns: vec![0],
        order_by: 1,
        frontier_delay: Duration::ZERO,
        measures: measures
            .into_iter()
            .map(|(k, c, over)| RollingMeasure { func: f(k, c), over: over.map(|s| Duration(s * S)) })
            .collect(),
        watermark: None,
        compact: true,
    })
}

fn rec(key: &str, t_s: i64, v: Option<f64>) -> Record {
    Record::new(vec![
        Value::Str(key.into()),
        Value::Timestamp(Timestamp(t_s * S)),
        v.map_or(Value::Null, Value::Double),
    ])
}

/// Feeds `(clock s, key, event time s, value)` and returns every row.
fn run(op: &mut RollingWindow, input: &[(i64, &str, i64, Option<f64>)]) -> Vec<Row> {
    let mut out = Output::default();
    for &(now, k, t, v) in input {
        op.advance_clock(Timestamp(now * S), &mut out);
        op.on_record(&rec(k, t, v), Timestamp::MIN, &mut out);
    }
    out.rows
}

#[test]
fn max_over_a_range_survives_out_of_order_arrivals() {
    let mut w = op(vec![(AggKind::Max, Some(2), Some(10)), (AggKind::Min, Some(2), Some(10))]);
    // In order, then one record older than the newest visible one (the deque must give way).
    let rows =
        run(&mut w, &[(0, "a", 0, Some(5.0)), (1, "a", 1, Some(3.0)), (2, "a", 2, Some(4.0)), (3, "a", 0, Some(9.0))]);
    let last = rows.last().expect("a row per record");
    assert_eq!(last[2], Value::Double(9.0));
    assert_eq!(last[3], Value::Double(3.0));
    // At F = 10 both records of t = 0 leave: max 4, min 3.
    let mut out = Output::default();
    w.advance_clock(Timestamp(10 * S), &mut out);
    assert_eq!(
        out.rows,
        vec![vec![Value::Str("a".into()), Value::Timestamp(Timestamp(10 * S)), 4.0.into_v(), 3.0.into_v()]]
    );
    // Empty range: the key emits its last row and is freed; then the deque serves again.
    out.clear();
    w.advance_clock(Timestamp(20 * S), &mut out);
    assert_eq!(out.rows.len(), 2, "{:?}", out.rows);
    assert_eq!(out.rows[1][2], Value::Null);
    assert_eq!(w.state_len(), 0);
    let rows = run(&mut w, &[(21, "a", 21, Some(1.0)), (22, "a", 22, Some(2.0))]);
    assert_eq!(rows[1][2], Value::Double(2.0));
    assert_eq!(rows[1][3], Value::Double(1.0));
}

trait IntoV {
    fn into_v(self) -> Value;
}
impl IntoV for f64 {
    fn into_v(self) -> Value {
        Value::Double(self)
    }
}

#[test]
fn sums_of_doubles_do_not_drift_over_many_expiries() {
    // 1e6 enters first and leaves after an hour; 0.1 enters every second and leaves an hour later.
    let mut w = op(vec![(AggKind::Sum, Some(2), Some(3600))]);
    let rows = run(&mut w, &[(0, "a", 0, Some(1e6))]);
    assert_eq!(rows[0][2], Value::Double(1e6));
    let mut out = Output::default();
    for i in 1..100_000i64 {
        w.advance_clock(Timestamp(i * S), &mut out);
        w.on_record(&rec("a", i, Some(0.1)), Timestamp::MIN, &mut out);
        out.clear();
    }
    // In range at F = 99,999: (96,399, 99,999]: 3600 values of 0.1, the 1e6 long gone.
    w.advance_clock(Timestamp(99_999 * S), &mut out);
    let mut probe = Output::default();
    w.on_record(&rec("a", 99_999, Some(0.0)), Timestamp::MIN, &mut probe);
    let Value::Double(sum) = probe.rows[0][2] else { panic!("{:?}", probe.rows) };
    assert!((sum - 360.0).abs() < 1e-9, "{sum}");
}

#[test]
fn snapshot_restores_the_same_rows_and_rejects_garbage() {
    let measures = vec![
        (AggKind::Sum, Some(2), Some(10)),
        (AggKind::Max, Some(2), Some(5)),
        (AggKind::CountStar, None, None),
        (AggKind::ApproxPercentile { percentages: vec![0.5], list: false, accuracy: 100 }, Some(2), Some(10)),
    ];
    let input: Vec<(i64, &str, i64, Option<f64>)> =
        (0..40).map(|i| (i, ["a", "b", "c"][i as usize % 3], i - (i % 4), Some((i * 7 % 11) as f64))).collect();
    let mut whole = op(measures.clone());
    let mut expected = run(&mut whole, &input);
    let mut out = Output::default();
    whole.advance_clock(Timestamp(60 * S), &mut out);
    expected.extend(out.rows);
    let mut first = op(measures.clone());
    let mut got = run(&mut first, &input[..20]);
    let bytes = first.snapshot();
    let mut second = op(measures.clone());
    second.restore(&bytes).expect("own snapshot");
    assert_eq!(second.snapshot(), bytes, "restore then snapshot gives the same bytes");
    got.extend(run(&mut second, &input[20..]));
    let mut out = Output::default();
    second.advance_clock(Timestamp(60 * S), &mut out);
    got.extend(out.rows);
    assert_eq!(got, expected);
    for cut in [0, 7, 8, 20, bytes.len() - 1] {
        assert!(op(measures.clone()).restore(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    let mut other = op(vec![(AggKind::CountStar, None, None)]);
    assert!(other.restore(&bytes).is_err(), "other measures");
}

#[test]
fn timers_skip_keys_freed_or_rescheduled() {
    let mut w = op(vec![(AggKind::CountStar, None, Some(10))]);
    run(&mut w, &[(0, "a", 0, None), (1, "b", 1, None)]);
    assert_eq!(w.next_timer(), Some(Timestamp(10 * S)));
    w.retain_groups(&mut |g| g.0[0].0 != Value::Str("a".into()));
    assert_eq!(w.next_timer(), Some(Timestamp(11 * S)));
    let mut out = Output::default();
    w.advance_clock(Timestamp(30 * S), &mut out);
    assert_eq!(out.rows.len(), 1);
    assert_eq!(out.rows[0][2], Value::Long(0));
    assert_eq!(w.next_timer(), None);
    assert_eq!(w.state_len(), 0);
}

#[test]
fn restore_keeping_builds_only_the_kept_keys_and_equals_restore_then_retain() {
    let measures = vec![
        (AggKind::Sum, Some(2), Some(10)),
        (AggKind::Max, Some(2), Some(5)),
        (AggKind::CountStar, None, None),
        (AggKind::ApproxPercentile { percentages: vec![0.5], list: false, accuracy: 100 }, Some(2), Some(10)),
    ];
    let keys = ["a", "b", "c", "d", "e"];
    let input: Vec<(i64, &str, i64, Option<f64>)> =
        (0..50).map(|i| (i, keys[i as usize % 5], i - (i % 4), (i % 7 != 0).then_some((i * 7 % 11) as f64))).collect();
    let mut first = op(measures.clone());
    run(&mut first, &input[..30]);
    let bytes = first.snapshot();
    let keep = |g: &GroupKey| matches!(&g.0[0].0, Value::Str(s) if &**s != "b" && &**s != "d");
    let mut kept = op(measures.clone());
    kept.restore_keeping(&bytes, &mut |g| keep(g)).expect("own snapshot");
    let mut reference = op(measures.clone());
    reference.restore(&bytes).expect("own snapshot");
    reference.retain_groups(&mut |g| keep(g));
    assert_eq!(kept.state_len(), 3);
    assert_eq!(kept.state_len(), reference.state_len());
    let rest: Vec<_> = input[30..].iter().copied().filter(|(_, k, _, _)| *k != "b" && *k != "d").collect();
    let mut a = run(&mut kept, &rest);
    let mut b = run(&mut reference, &rest);
    let mut out = Output::default();
    kept.advance_clock(Timestamp(100 * S), &mut out);
    a.extend(std::mem::take(&mut out.rows));
    reference.advance_clock(Timestamp(100 * S), &mut out);
    b.extend(out.rows);
    assert!(!a.is_empty());
    assert_eq!(a, b);
    assert!(op(measures).restore_keeping(&bytes[..bytes.len() - 3], &mut |g| keep(g)).is_err(), "cut short");
}

#[test]
fn a_record_hashes_as_its_key_values_do() {
    // The one-column shortcut must agree with the hash of the key values (restore and lookups
    // of keys built apart use the latter).
    let keys = Keys::new();
    let record = Record::new(vec![
        Value::Str("k".into()),
        Value::Long(-7),
        Value::Double(f64::NAN),
        Value::Timestamp(Timestamp(3)),
        Value::Null,
    ]);
    for cols in [vec![0], vec![1], vec![2], vec![3], vec![4], vec![0, 1], vec![2, 3, 4], vec![]] {
        let values: Vec<&Value> = cols.iter().map(|&c| &record.values[c]).collect();
        assert_eq!(keys.hash_record(&record, &cols), keys.hash(values.into_iter()), "{cols:?}");
    }
    assert_ne!(keys.hash_record(&record, &[0]), keys.hash_record(&record, &[1]));
}

#[test]
fn rows_fire_in_instant_order_and_count_what_is_in_range_whether_queued_or_not() {
    // Two range lengths (two timer queues), records in event-time order (queued), late ones
    // (out of order: on the heap) and future ones (pending: on the heap).
    let mut w = op(vec![(AggKind::CountStar, None, Some(10)), (AggKind::Sum, Some(2), Some(4))]);
    let keys = ["a", "b", "c", "d", "e", "f", "g"];
    let mut x: u64 = 7;
    let mut input: Vec<(i64, &str, i64, Option<f64>)> = Vec::new();
    for now in 0..60i64 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let k = keys[(x >> 33) as usize % keys.len()];
        let t = match (x >> 40) % 5 {
            0 => now - 1 - ((x >> 45) % 8) as i64,
            1 => now + 1 + ((x >> 45) % 3) as i64,
            _ => now,
        };
        input.push((now, k, t, Some(((x >> 50) % 100) as f64)));
    }
    run(&mut w, &input);
    let mut out = Output::default();
    w.advance_clock(Timestamp(200 * S), &mut out);
    assert!(!out.rows.is_empty());
    let mut last = i64::MIN;
    for row in &out.rows {
        let Value::Timestamp(f) = row[1] else { panic!("frontier {row:?}") };
        assert!(f.0 >= last, "rows out of instant order: {:?}", out.rows);
        last = f.0;
        let key = &row[0];
        let mine = || input.iter().filter(|(_, k, _, _)| Value::Str((*k).into()) == *key);
        let count = mine().filter(|&&(_, _, t, _)| t * S <= f.0 && t * S > f.0 - 10 * S).count();
        let sum: f64 =
            mine().filter(|&&(_, _, t, _)| t * S <= f.0 && t * S > f.0 - 4 * S).map(|&(_, _, _, v)| v.unwrap()).sum();
        assert_eq!(row[2], Value::Long(count as i64), "{row:?}");
        let any_in_4 = mine().any(|&(_, _, t, _)| t * S <= f.0 && t * S > f.0 - 4 * S);
        assert_eq!(row[3], if any_in_4 { Value::Double(sum) } else { Value::Null }, "{row:?}");
    }
    assert_eq!(w.state_len(), 0);
    assert_eq!(w.next_timer(), None);
}

/// A bounded sum whose records leave in event-time order can hold a sum outside BIGINT that
/// no arrival did (-5, then i64::MAX, then 5; -5 leaves first): it reads NULL, as Spark's
/// `try_sum`, and is exact again once the range moves on; never a wrapped value. The lifetime
/// sum stays exact. Both layouts agree.
#[test]
fn a_range_sum_outside_bigint_after_a_leave_is_null_never_wrapped() {
    let long_sum = |over: Option<i64>| RollingMeasure {
        func: AggregateFn::from_name("sum", Some((2, DataType::Long)), &crate::aggregate::AggParams::default())
            .unwrap(),
        over: over.map(|s| Duration(s * S)),
    };
    for compact in [true, false] {
        let mut w = RollingWindow::new(RollingWindowConfig {
            mode: Mode::RealTime,
            key_columns: vec![0],
            order_by: 1,
            frontier_delay: Duration::ZERO,
            measures: vec![long_sum(None), long_sum(Some(10))],
            watermark: None,
            compact,
        });
        let mut out = Output::default();
        for (t, v) in [(0, -5), (1, i64::MAX), (2, 5)] {
            w.advance_clock(Timestamp(t * S), &mut out);
            let r = Record::new(vec![Value::Str("a".into()), Value::Timestamp(Timestamp(t * S)), Value::Long(v)]);
            w.on_record(&r, Timestamp::MIN, &mut out);
        }
        w.advance_clock(Timestamp(10 * S), &mut out);
        w.advance_clock(Timestamp(11 * S), &mut out);
        let row = |f: i64, lifetime: i64, range: Value| {
            vec![Value::Str("a".into()), Value::Timestamp(Timestamp(f * S)), Value::Long(lifetime), range]
        };
        let max = i64::MAX;
        assert_eq!(
            out.rows,
            vec![
                row(0, -5, Value::Long(-5)),
                row(1, max - 5, Value::Long(max - 5)),
                row(2, max, Value::Long(max)),
                row(10, max, Value::Null),
                row(11, max, Value::Long(5)),
            ],
            "compact: {compact}"
        );
    }
}
