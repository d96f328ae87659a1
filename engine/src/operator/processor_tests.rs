use std::collections::HashMap as StdMap;

use proptest::prelude::*;

use super::*;
use crate::watermark::BatchWatermarks;

const S: i64 = 1_000_000;

fn rec(k: &str, cmd: &str, v: i64, arg: i64) -> Record {
    Record::new(vec![Value::Str(k.into()), Value::Str(cmd.into()), Value::Long(v), Value::Long(arg)])
}

/// A command with a TTL (µs) in a fifth column; `ttl < 0`: none.
fn rec_ttl(k: &str, cmd: &str, v: i64, arg: i64, ttl: i64) -> Record {
    Record::new(vec![Value::Str(k.into()), Value::Str(cmd.into()), Value::Long(v), Value::Long(arg), Value::Long(ttl)])
}

fn ttl_of(r: &Record) -> Option<Duration> {
    r.values.get(4).and_then(Value::as_i64).filter(|t| *t >= 0).map(Duration)
}

fn key_of(row: &Row) -> String {
    row[0].as_str().unwrap_or_default().to_string()
}

/// Interprets records `(k, cmd, v, arg)` as commands on its key:
/// - `set`: value state `x` := v with a TTL of `arg` µs (`arg < 0`: none);
/// - `get`: emits `[k, "get", x or NULL]`;
/// - `clear`: clears `x`;
/// - `ptimer` / `etimer`: registers a processing-time / event-time timer at `arg` µs;
/// - `del`: deletes the processing-time timer at `arg`;
/// - `count`: emits `[k, "count", number of records in this call]`.
///
/// A timer emits `[k, "timer:<domain>", at]` and clears the key.
struct Commands;

impl StatefulProcessor for Commands {
    fn handle_input(&mut self, records: &[&Record], ctx: &mut KeyContext<'_>) {
        for r in records {
            let k = r.values[0].clone();
            let (v, arg) = (r.values[2].as_i64().unwrap_or(0), r.values[3].as_i64().unwrap_or(0));
            match r.values[1].as_str().unwrap_or_default() {
                "set" => ctx.set("x", Value::Long(v), (arg >= 0).then_some(Duration(arg))),
                "get" => {
                    let x = ctx.get("x").cloned().unwrap_or(Value::Null);
                    ctx.emit(vec![k, Value::Str("get".into()), x]);
                }
                "clear" => ctx.clear("x"),
                "ptimer" => ctx.register_timer(TimeDomain::ProcessingTime, Timestamp(arg)),
                "etimer" => ctx.register_timer(TimeDomain::EventTime, Timestamp(arg)),
                "del" => ctx.delete_timer(TimeDomain::ProcessingTime, Timestamp(arg)),
                // list and map states: `arg` is the map key, the fifth column (if any) the TTL
                "lappend" => ctx.list_append("l", Value::Long(v), ttl_of(r)),
                "lget" => {
                    let list: Vec<String> = ctx.list("l").iter().map(|v| v.as_i64().unwrap_or(0).to_string()).collect();
                    ctx.emit(vec![k, Value::Str("lget".into()), Value::Str(list.join(",").into())]);
                }
                "lput" => ctx.list_put("l", vec![Value::Long(v), Value::Long(v + 1)], ttl_of(r)),
                "lclear" => ctx.list_clear("l"),
                "mput" => ctx.map_put("m", Value::Long(arg), Value::Long(v), ttl_of(r)),
                "mget" => {
                    let x = ctx.map_get("m", &Value::Long(arg)).cloned().unwrap_or(Value::Null);
                    ctx.emit(vec![k, Value::Str("mget".into()), x]);
                }
                "mdel" => ctx.map_remove("m", &Value::Long(arg)),
                "mentries" => {
                    let e: Vec<String> = ctx.map_entries("m").iter().map(|(k, v)| format!("{k:?}={v:?}")).collect();
                    ctx.emit(vec![k, Value::Str("mentries".into()), Value::Str(e.join(",").into())]);
                }
                _ => {}
            }
        }
        if records.iter().any(|r| r.values[1].as_str() == Some("count")) {
            let n = records.len() as i64;
            ctx.emit(vec![records[0].values[0].clone(), Value::Str("count".into()), Value::Long(n)]);
        }
    }

    fn handle_timer(&mut self, domain: TimeDomain, at: Timestamp, ctx: &mut KeyContext<'_>) {
        let k = ctx.key().values().next().cloned().unwrap_or(Value::Null);
        let name = match domain {
            TimeDomain::ProcessingTime => "timer:processing",
            TimeDomain::EventTime => "timer:event",
        };
        ctx.emit(vec![k, Value::Str(name.into()), Value::Timestamp(at)]);
        ctx.clear_all();
    }
}

fn processor(mode: Mode) -> Processor {
    Processor::new(ProcessorConfig { mode, key_columns: vec![0] }, Box::new(Commands))
}

#[test]
fn a_processing_time_timer_fires_when_the_clock_passes_it_with_no_further_input() {
    let mut p = processor(Mode::RealTime);
    let mut out = Output::default();
    p.advance_clock(Timestamp(10 * S), &mut out);
    p.on_record(&rec("a", "ptimer", 0, 70 * S), Timestamp::MIN, &mut out);
    p.on_record(&rec("b", "ptimer", 0, 30 * S), Timestamp::MIN, &mut out);
    p.on_record(&rec("b", "del", 0, 30 * S), Timestamp::MIN, &mut out);
    assert_eq!(p.next_timer(), Some(Timestamp(70 * S)), "b's timer was deleted");
    p.advance_clock(Timestamp(69 * S), &mut out);
    assert!(out.rows.is_empty(), "nothing due before 70 s");
    p.advance_clock(Timestamp(70 * S), &mut out);
    assert_eq!(
        out.rows,
        vec![vec![Value::Str("a".into()), Value::Str("timer:processing".into()), Value::Timestamp(Timestamp(70 * S))]]
    );
    assert_eq!(p.state_len(), 0, "the timer cleared the key");
    assert_eq!(p.next_timer(), None);
}

#[test]
fn an_event_time_timer_fires_in_real_time_mode_as_the_watermark_passes_it() {
    let mut p = processor(Mode::RealTime);
    let mut out = Output::default();
    p.on_record(&rec("a", "etimer", 0, 100 * S), Timestamp::MIN, &mut out);
    p.advance_clock(Timestamp(1_000 * S), &mut out);
    assert!(out.rows.is_empty(), "processing time does not fire an event-time timer");
    p.advance_watermark(Timestamp(99 * S), &mut out);
    assert!(out.rows.is_empty());
    // the watermark stamped on the next record moves first
    p.on_record(&rec("b", "get", 0, 0), Timestamp(100 * S), &mut out);
    assert_eq!(out.rows.len(), 2);
    assert_eq!(out.rows[0][1], Value::Str("timer:event".into()));
    assert_eq!(out.rows[1][1], Value::Str("get".into()), "the record after the timer it moved past");
}

#[test]
fn a_timer_registered_behind_the_watermark_or_the_clock_fires_right_after_its_call() {
    let mut p = processor(Mode::RealTime);
    let mut out = Output::default();
    p.advance_clock(Timestamp(50 * S), &mut out);
    p.advance_watermark(Timestamp(20 * S), &mut out);
    // at the watermark, and before it
    p.on_record(&rec("a", "etimer", 0, 20 * S), Timestamp(20 * S), &mut out);
    assert_eq!(out.rows.len(), 1, "fired with no further watermark move");
    assert_eq!((key_of(&out.rows[0]), out.rows[0][2].clone()), ("a".into(), Value::Timestamp(Timestamp(20 * S))));
    p.on_record(&rec("b", "etimer", 0, 5 * S), Timestamp(20 * S), &mut out);
    assert_eq!(out.rows.len(), 2);
    assert_eq!(out.rows[1][1], Value::Str("timer:event".into()));
    // a processing-time timer at the clock
    p.on_record(&rec("c", "ptimer", 0, 50 * S), Timestamp(20 * S), &mut out);
    assert_eq!(out.rows.len(), 3);
    assert_eq!(out.rows[2][1], Value::Str("timer:processing".into()));
    // ahead of both: nothing yet
    p.on_record(&rec("d", "etimer", 0, 21 * S), Timestamp(20 * S), &mut out);
    p.on_record(&rec("d", "ptimer", 0, 51 * S), Timestamp(20 * S), &mut out);
    assert_eq!(out.rows.len(), 3);
    assert_eq!(p.state_len(), 1, "the fired keys were cleared by their timers");
}

#[test]
fn micro_batch_calls_the_handler_once_per_key_with_all_its_rows_then_due_timers() {
    let mut p = processor(Mode::MicroBatch);
    let mut out = Output::default();
    let ctx =
        |id, now| BatchContext { batch_id: id, watermarks: BatchWatermarks::INITIAL, processing_time: Timestamp(now) };
    p.begin_batch(&ctx(0, 5 * S));
    for r in [rec("b", "count", 0, 0), rec("a", "count", 0, 0), rec("b", "ptimer", 0, 9 * S), rec("b", "count", 0, 0)] {
        p.on_record(&r, Timestamp::MIN, &mut out);
    }
    p.end_batch(&mut out);
    let got: Vec<(String, Value)> = out.rows.iter().map(|r| (key_of(r), r[2].clone())).collect();
    assert_eq!(got, vec![("a".into(), Value::Long(1)), ("b".into(), Value::Long(3))], "keys in key order");
    out.clear();
    // a batch with no input for b: its timer fires once the batch's processing time reaches it
    p.begin_batch(&ctx(1, 8 * S));
    p.end_batch(&mut out);
    assert!(out.rows.is_empty());
    p.begin_batch(&ctx(2, 9 * S));
    p.end_batch(&mut out);
    assert_eq!(out.rows.len(), 1);
    assert_eq!(out.rows[0][1], Value::Str("timer:processing".into()));
}

#[test]
fn state_and_timers_are_restored_and_re_split_by_key() {
    let mut p = processor(Mode::RealTime);
    let mut out = Output::default();
    for k in ["a", "b", "c"] {
        p.on_record(&rec(k, "set", 7, -1), Timestamp::MIN, &mut out);
        p.on_record(&rec(k, "ptimer", 0, 50 * S), Timestamp::MIN, &mut out);
    }
    let bytes = p.snapshot();
    // two new partitions each keep their keys
    let mut left = processor(Mode::RealTime);
    left.restore_keeping(&bytes, &mut |k| k.values().next().and_then(Value::as_str) == Some("b")).unwrap();
    let mut right = processor(Mode::RealTime);
    right.restore_keeping(&bytes, &mut |k| k.values().next().and_then(Value::as_str) != Some("b")).unwrap();
    assert_eq!((left.state_len(), right.state_len()), (1, 2));
    let mut out = Output::default();
    left.on_record(&rec("b", "get", 0, 0), Timestamp::MIN, &mut out);
    left.on_record(&rec("a", "get", 0, 0), Timestamp::MIN, &mut out);
    assert_eq!(out.rows[0][2], Value::Long(7));
    assert_eq!(out.rows[1][2], Value::Null, "a is the other partition's");
    out.clear();
    right.advance_clock(Timestamp(50 * S), &mut out);
    let fired: Vec<String> = out.rows.iter().map(key_of).collect();
    assert_eq!(fired, vec!["a", "c"], "only the kept keys' timers fire");
    assert!(processor(Mode::RealTime).restore(b"not a snapshot").is_err());
}

/// One step of the property test: a command on a key, or a clock move.
#[derive(Debug, Clone)]
enum Step {
    Set { key: u8, value: i64, ttl: Option<i64> },
    Get { key: u8 },
    Clear { key: u8 },
    Clock { by: i64 },
    Checkpoint,
    Append { key: u8, value: i64, ttl: Option<i64> },
    ListGet { key: u8 },
    ListClear { key: u8 },
    Put { key: u8, entry: i64, value: i64, ttl: Option<i64> },
    MapGet { key: u8, entry: i64 },
    Remove { key: u8, entry: i64 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u8..4, -5i64..5, proptest::option::of(0i64..20)).prop_map(|(key, value, ttl)| Step::Set { key, value, ttl }),
        (0u8..4).prop_map(|key| Step::Get { key }),
        (0u8..4).prop_map(|key| Step::Clear { key }),
        (0i64..15).prop_map(|by| Step::Clock { by }),
        Just(Step::Checkpoint),
        (0u8..4, -5i64..5, proptest::option::of(0i64..20)).prop_map(|(key, value, ttl)| Step::Append {
            key,
            value,
            ttl
        }),
        (0u8..4).prop_map(|key| Step::ListGet { key }),
        (0u8..4).prop_map(|key| Step::ListClear { key }),
        (0u8..4, 0i64..3, -5i64..5, proptest::option::of(0i64..20)).prop_map(|(key, entry, value, ttl)| Step::Put {
            key,
            entry,
            value,
            ttl
        }),
        (0u8..4, 0i64..3).prop_map(|(key, entry)| Step::MapGet { key, entry }),
        (0u8..4, 0i64..3).prop_map(|(key, entry)| Step::Remove { key, entry }),
    ]
}

proptest! {
    /// Value, list and map states with TTLs read as reference maps of (value, written instant +
    /// ttl) in which an entry is present while now < its expiry (per list element, per map
    /// entry); snapshots and restores in between change nothing.
    #[test]
    fn value_list_and_map_state_with_ttl_match_a_reference_map(steps in proptest::collection::vec(step(), 1..80)) {
        let mut p = processor(Mode::RealTime);
        let mut reference: StdMap<u8, (i64, Option<i64>)> = StdMap::new();
        let mut lists: StdMap<u8, Vec<(i64, Option<i64>)>> = StdMap::new();
        let mut maps: StdMap<(u8, i64), (i64, Option<i64>)> = StdMap::new();
        let alive = |e: Option<i64>, now: i64| e.is_none_or(|e| now < e);
        let mut now = 0i64;
        let mut out = Output::default();
        p.advance_clock(Timestamp(now), &mut out);
        for s in steps {
            match s {
                Step::Set { key, value, ttl } => {
                    reference.insert(key, (value, ttl.map(|t| now + t)));
                    p.on_record(&rec(&key.to_string(), "set", value, ttl.unwrap_or(-1)), Timestamp::MIN, &mut out);
                }
                Step::Clear { key } => {
                    reference.remove(&key);
                    p.on_record(&rec(&key.to_string(), "clear", 0, 0), Timestamp::MIN, &mut out);
                }
                Step::Get { key } => {
                    out.clear();
                    p.on_record(&rec(&key.to_string(), "get", 0, 0), Timestamp::MIN, &mut out);
                    let want = match reference.get(&key) {
                        Some(&(v, e)) if e.is_none_or(|e| now < e) => Value::Long(v),
                        _ => Value::Null,
                    };
                    prop_assert_eq!(&out.rows[0][2], &want, "key {} at {}", key, now);
                }
                Step::Append { key, value, ttl } => {
                    lists.entry(key).or_default().push((value, ttl.map(|t| now + t)));
                    p.on_record(&rec_ttl(&key.to_string(), "lappend", value, 0, ttl.unwrap_or(-1)), Timestamp::MIN, &mut out);
                }
                Step::ListGet { key } => {
                    out.clear();
                    p.on_record(&rec(&key.to_string(), "lget", 0, 0), Timestamp::MIN, &mut out);
                    let want: Vec<String> = lists.get(&key).map_or_else(Vec::new, |l| {
                        l.iter().filter(|(_, e)| alive(*e, now)).map(|(v, _)| v.to_string()).collect()
                    });
                    prop_assert_eq!(&out.rows[0][2], &Value::Str(want.join(",").into()), "list of {} at {}", key, now);
                }
                Step::ListClear { key } => {
                    lists.remove(&key);
                    p.on_record(&rec(&key.to_string(), "lclear", 0, 0), Timestamp::MIN, &mut out);
                }
                Step::Put { key, entry, value, ttl } => {
                    maps.insert((key, entry), (value, ttl.map(|t| now + t)));
                    p.on_record(&rec_ttl(&key.to_string(), "mput", value, entry, ttl.unwrap_or(-1)), Timestamp::MIN, &mut out);
                }
                Step::MapGet { key, entry } => {
                    out.clear();
                    p.on_record(&rec(&key.to_string(), "mget", 0, entry), Timestamp::MIN, &mut out);
                    let want = match maps.get(&(key, entry)) {
                        Some(&(v, e)) if alive(e, now) => Value::Long(v),
                        _ => Value::Null,
                    };
                    prop_assert_eq!(&out.rows[0][2], &want, "map {} entry {} at {}", key, entry, now);
                }
                Step::Remove { key, entry } => {
                    maps.remove(&(key, entry));
                    p.on_record(&rec(&key.to_string(), "mdel", 0, entry), Timestamp::MIN, &mut out);
                }
                Step::Clock { by } => {
                    now += by;
                    p.advance_clock(Timestamp(now), &mut out);
                }
                Step::Checkpoint => {
                    let bytes = p.snapshot();
                    p = processor(Mode::RealTime);
                    p.restore(&bytes).unwrap();
                }
            }
        }
        // keys whose every value expired or was cleared hold no state once touched again
        for key in 0u8..4 {
            p.on_record(&rec(&key.to_string(), "get", 0, 0), Timestamp::MIN, &mut out);
        }
        let live = (0u8..4)
            .filter(|k| {
                reference.get(k).is_some_and(|&(_, e)| alive(e, now))
                    || lists.get(k).is_some_and(|l| l.iter().any(|&(_, e)| alive(e, now)))
                    || maps.iter().any(|(&(mk, _), &(_, e))| mk == *k && alive(e, now))
            })
            .count();
        prop_assert_eq!(p.state_len(), live);
    }
}

#[test]
fn a_records_key_columns_find_the_group_key_built_from_them() {
    use std::hash::BuildHasher;
    let mut map: HashMap<GroupKey, u32> = HashMap::new();
    let records = [rec("a", "x", 1, 2), rec("bb", "y", 3, 4), rec("a", "x", 5, 6)];
    let columns = [vec![0], vec![0, 2], vec![3, 1, 0]];
    for (i, r) in records.iter().enumerate() {
        for (j, cols) in columns.iter().enumerate() {
            let key = GroupKey::of(r, cols);
            let probe = RecordKey { record: r, columns: cols };
            assert_eq!(map.hasher().hash_one(&probe), map.hasher().hash_one(&key), "{i} {j}");
            assert!(probe.equivalent(&key));
            map.insert(key, (i * 10 + j) as u32);
        }
    }
    // the third record's key over column 0 alone is the first's ("a"); over the others it is its own
    assert_eq!(map.get(&RecordKey { record: &records[2], columns: &columns[0] }), Some(&20));
    assert_eq!(map.len(), 8);
    let other = rec("c", "x", 1, 2);
    assert_eq!(map.get(&RecordKey { record: &other, columns: &columns[0] }), None);
    assert!(
        !RecordKey { record: &records[1], columns: &columns[1] }.equivalent(&GroupKey::of(&records[0], &columns[1]))
    );
}

#[test]
fn list_put_and_map_entries_replace_and_list_in_order_and_clear_all_empties_them() {
    let mut p = processor(Mode::RealTime);
    let mut out = Output::default();
    p.advance_clock(Timestamp(0), &mut out);
    p.on_record(&rec_ttl("a", "lappend", 9, 0, -1), Timestamp::MIN, &mut out);
    p.on_record(&rec_ttl("a", "lput", 3, 0, 10), Timestamp::MIN, &mut out);
    p.on_record(&rec_ttl("a", "mput", 7, 2, -1), Timestamp::MIN, &mut out);
    p.on_record(&rec_ttl("a", "mput", 5, 1, -1), Timestamp::MIN, &mut out);
    p.on_record(&rec("a", "lget", 0, 0), Timestamp::MIN, &mut out);
    p.on_record(&rec("a", "mentries", 0, 0), Timestamp::MIN, &mut out);
    assert_eq!(out.rows[0][2], Value::Str("3,4".into()), "put replaces the list");
    assert_eq!(out.rows[1][2], Value::Str("Long(1)=Long(5),Long(2)=Long(7)".into()), "entries in key order");
    p.advance_clock(Timestamp(10), &mut out);
    p.on_record(&rec("a", "lget", 0, 0), Timestamp::MIN, &mut out);
    assert_eq!(out.rows[2][2], Value::Str("".into()), "the put list expired at now + ttl");
    // a timer clears everything of the key
    p.on_record(&rec("a", "ptimer", 0, 20), Timestamp::MIN, &mut out);
    p.advance_clock(Timestamp(20), &mut out);
    assert_eq!(p.state_len(), 0);
    // the state survives a snapshot
    p.on_record(&rec_ttl("b", "mput", 1, 0, -1), Timestamp::MIN, &mut out);
    let bytes = p.snapshot();
    let mut q = processor(Mode::RealTime);
    q.restore(&bytes).unwrap();
    out.clear();
    q.on_record(&rec("b", "mget", 0, 0), Timestamp::MIN, &mut out);
    assert_eq!(out.rows[0][2], Value::Long(1));
}
