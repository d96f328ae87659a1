//! Stream-stream joins in real-time mode under the replay clock (SEMANTICS.md "Joins"): every
//! join type gives the rows of a brute-force reference written from SEMANTICS.md, at
//! parallelism 1 and 4. The micro-batch semantics are pinned by the oracle cases
//! (`tests/cases-sql/sql-stream-join-*`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Seconds after 2024-01-15T10:00:00Z as a timestamp.
fn at(s: i64) -> String {
    format!("2024-01-15T10:{:02}:{:02}Z", s / 60, s % 60)
}

fn seconds(v: &serde_json::Value) -> Option<i64> {
    let s = v.as_str()?;
    Some(s[14..16].parse::<i64>().ok()? * 60 + s[17..19].parse::<i64>().ok()?)
}

/// One input record: its side (0 lefts, 1 rights), key, event time and value; it arrives at
/// `arrival` on the replay clock.
#[derive(Clone, Copy, Debug)]
struct In {
    side: usize,
    key: u8,
    t: i64,
    v: i64,
    arrival: i64,
}

/// The join types under test, as SQL writes them.
const TYPES: [&str; 5] = ["JOIN", "LEFT OUTER JOIN", "RIGHT OUTER JOIN", "FULL OUTER JOIN", "LEFT SEMI JOIN"];
/// `r.rt BETWEEN l.lt - LOWER AND l.lt + UPPER` (seconds), each source's watermark delay.
const LOWER: i64 = 2;
const UPPER: i64 = 4;
const DELAY: i64 = 5;

/// The input: each source's files (one poll each in real-time mode: the source actor polls the
/// two sources in turn, so records arrive left file 0, right file 0, left file 1, ...), event times
/// up to 13 s behind the arrival clock (some late on arrival), keys `k0`..`k3`. Ends with
/// sentinels of key `zz` far ahead on both sides, so that the watermark of the last records passes
/// every other row's last match.
fn input() -> Vec<Vec<In>> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut files = Vec::new();
    let mut arrival = 0;
    for f in 0..12 {
        let side = f % 2;
        let mut recs = Vec::new();
        for _ in 0..4 {
            arrival += next(3) as i64;
            let t = (arrival - next(14) as i64).max(0);
            recs.push(In { side, key: next(4) as u8, t, v: next(100) as i64, arrival });
        }
        files.push(recs);
    }
    let end = arrival + 100;
    files.push(vec![In { side: 0, key: 9, t: end, v: 0, arrival: end }]);
    files.push(vec![In { side: 1, key: 9, t: end, v: 0, arrival: end }]);
    files.push(vec![In { side: 0, key: 9, t: end + 1, v: 0, arrival: end + 1 }]);
    files
}

fn key_name(k: u8) -> String {
    if k == 9 { "zz".into() } else { format!("k{k}") }
}

/// A row as compared: `(id, lt, lv, rid, rt, rv)`, `None` for NULL.
type Row = (Option<String>, Option<i64>, Option<i64>, Option<String>, Option<i64>, Option<i64>);

/// What SEMANTICS.md "Joins" gives in real-time mode, record by record in arrival order: each
/// source's watermark is its largest event time minus `DELAY` (below everything before its
/// first record); W, as it stands when a record arrives (before it is seen), is the smaller of
/// the two and never moves back. At each arrival, first every kept row whose last match is
/// before W leaves (an unmatched row of a preserved side as a row with NULLs for the other
/// side); then the record is late if its event time is at or before W (dropped), else it meets
/// the other side's kept rows of its key within the range (a row per pair; a left semi join emits
/// a left row once, at its first match) and is kept, leaving at once if its own last match is
/// already before W. A left row at `t` can match until `t + UPPER`, a right row until `t + LOWER`.
fn reference(ty: usize, files: &[Vec<In>]) -> (Vec<Row>, usize) {
    let preserved = |side: usize| matches!((ty, side), (1 | 3, 0) | (2 | 3, 1));
    let semi = ty == 4;
    let last = |r: &In| if r.side == 0 { r.t + UPPER } else { r.t + LOWER };
    let row = |l: Option<&In>, r: Option<&In>| -> Row {
        (
            l.map(|l| key_name(l.key)),
            l.map(|l| l.t),
            l.map(|l| l.v),
            if semi { None } else { r.map(|r| key_name(r.key)) },
            if semi { None } else { r.map(|r| r.t) },
            if semi { None } else { r.map(|r| r.v) },
        )
    };
    let mut max_et: [Option<i64>; 2] = [None, None];
    let mut w = i64::MIN;
    // kept rows: (record, matched)
    let mut kept: Vec<(In, bool)> = Vec::new();
    let (mut out, mut late) = (Vec::new(), 0);
    let evict = |w: i64, kept: &mut Vec<(In, bool)>, out: &mut Vec<Row>| {
        kept.retain(|(r, matched)| {
            if last(r) >= w {
                return true;
            }
            if preserved(r.side) && !matched {
                out.push(if r.side == 0 { row(Some(r), None) } else { row(None, Some(r)) });
            }
            false
        });
    };
    for rec in files.iter().flatten() {
        let candidate = match max_et {
            [Some(a), Some(b)] => a.min(b) - DELAY,
            _ => i64::MIN,
        };
        w = w.max(candidate);
        evict(w, &mut kept, &mut out);
        max_et[rec.side] = Some(max_et[rec.side].map_or(rec.t, |m| m.max(rec.t)));
        if w > i64::MIN && rec.t <= w {
            late += 1;
            continue;
        }
        let mut matched = false;
        for (o, o_matched) in kept.iter_mut().filter(|(o, _)| o.side != rec.side && o.key == rec.key) {
            let (l, r) = if rec.side == 0 { (rec, &*o) } else { (&*o, rec) };
            if r.t - l.t < -LOWER || r.t - l.t > UPPER {
                continue;
            }
            if semi {
                if rec.side == 1 && !*o_matched {
                    out.push(row(Some(l), None));
                }
            } else {
                out.push(row(Some(l), Some(r)));
            }
            *o_matched = true;
            matched = true;
        }
        if semi && rec.side == 0 && matched {
            out.push(row(Some(rec), None));
            continue;
        }
        if semi && rec.side == 1 {
            // a matched left row is emitted once: it needs no more matches
            kept.retain(|(o, m)| !(o.side == 0 && *m));
        }
        kept.push((*rec, matched));
        evict(w, &mut kept, &mut out);
    }
    (out, late)
}

fn pipeline(ty: usize, parallelism: usize) -> String {
    let select = if ty == 4 { "l.id, l.lt, l.lv" } else { "l.id, l.lt, l.lv, r.rid, r.rt, r.rv" };
    format!(
        r#"name = "rt-join"
mode = "real-time"
parallelism = {parallelism}
[clock]
type = "replay"
column = "at"
[[source]]
name = "lefts"
type = "files"
path = "in_l"
format = "json"
schema = "id STRING, lt TIMESTAMP, lv BIGINT, at TIMESTAMP"
watermark = {{ column = "lt", delay = "{DELAY} seconds" }}
[[source]]
name = "rights"
type = "files"
path = "in_r"
format = "json"
schema = "at TIMESTAMP, rid STRING, rt TIMESTAMP, rv BIGINT"
watermark = {{ column = "rt", delay = "{DELAY} seconds" }}
[query]
sql = """
SELECT {select}
FROM lefts l {join} rights r
ON l.id = r.rid AND r.rt BETWEEN l.lt - INTERVAL {LOWER} SECONDS AND l.lt + INTERVAL {UPPER} SECONDS
"""
output_mode = "append"
[sink]
type = "files"
path = "out"
[late_sink]
type = "files"
path = "late"
"#,
        join = TYPES[ty]
    )
}

fn lines(dir: &Path) -> Vec<serde_json::Value> {
    let mut files: Vec<_> = std::fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect::<Vec<_>>()
        })
        .collect()
}

/// Runs the join of type `ty` at `parallelism`; its rows (without the sentinels') and the number
/// of records its late sink received.
fn run(ty: usize, parallelism: usize, files: &[Vec<In>]) -> (Vec<Row>, usize) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for side in ["in_l", "in_r"] {
        std::fs::create_dir(dir.join(side)).unwrap();
    }
    let mut count = [0, 0];
    for recs in files {
        let side = recs[0].side;
        let text: String = recs
            .iter()
            .map(|r| {
                let (k, t, v) = if side == 0 { ("id", "lt", "lv") } else { ("rid", "rt", "rv") };
                format!(
                    "{{\"{k}\": \"{}\", \"{t}\": \"{}\", \"{v}\": {}, \"at\": \"{}\"}}\n",
                    key_name(r.key),
                    at(r.t),
                    r.v,
                    at(r.arrival)
                )
            })
            .collect();
        let folder = if side == 0 { "in_l" } else { "in_r" };
        std::fs::write(dir.join(folder).join(format!("{:03}.json", count[side])), text).unwrap();
        count[side] += 1;
    }
    std::fs::write(dir.join("p.toml"), pipeline(ty, parallelism)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "p.toml", "--no-progress"])
        .current_dir(dir)
        .env("EDDY_LOG", "warn")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
    let rows = lines(&dir.join("out"))
        .iter()
        .map(|r| {
            (text(&r["id"]), seconds(&r["lt"]), r["lv"].as_i64(), text(&r["rid"]), seconds(&r["rt"]), r["rv"].as_i64())
        })
        .filter(|r: &Row| r.0.as_deref() != Some("zz") && r.3.as_deref() != Some("zz"))
        .collect();
    (rows, lines(&dir.join("late")).len())
}

fn counted(rows: Vec<Row>) -> BTreeMap<Row, usize> {
    let mut m = BTreeMap::new();
    for r in rows {
        *m.entry(r).or_insert(0) += 1;
    }
    m
}

#[test]
fn real_time_stream_stream_joins_give_the_rows_of_the_reference_at_parallelism_1_and_4() {
    let files = input();
    for (ty, name) in TYPES.iter().enumerate() {
        let (want, want_late) = reference(ty, &files);
        let want_rows = want.into_iter().filter(|r| r.0.as_deref() != Some("zz") && r.3.as_deref() != Some("zz"));
        let want = counted(want_rows.collect());
        assert!(!want.is_empty(), "{name}: the reference gives rows");
        assert!(want_late > 0, "the input has late records");
        for parallelism in [1, 4] {
            let (got, late) = run(ty, parallelism, &files);
            assert_eq!(counted(got), want, "{name} at parallelism {parallelism}");
            assert_eq!(late, want_late, "{name} at parallelism {parallelism}: late records");
        }
    }
}
