//! Stream-static joins (SEMANTICS.md "Joins"): a broadcast hash join of each stream record with
//! a static table held in memory, stateless per record.
//!
//! [`StaticTable`] is the table as a hash map from the join key to its rows; [`JoinStage`] looks
//! each stream record up in it and runs the query's steps on each joined record: one record in,
//! 0..n out. As Spark's equi-joins, a key with a NULL never matches (on either side), and keys
//! compare as Spark's join keys do (NaN equals NaN, -0.0 equals 0.0: [`Value`]'s equality), each
//! side's value cast first to the type the key compares as ([`KeyTypes::compare_as`]: an INT key
//! equals a BIGINT key of the same number, a BIGINT key a DOUBLE one, as Spark widens both
//! sides of `=`).

use std::collections::HashMap;
use std::sync::Arc;

use crate::expr::caster;
use crate::spec::{JoinKind, KeyTypes, StaticJoinSpec};
use crate::steps::{Applied, CompiledSteps};
use crate::value::{Record, Value};

/// A static table indexed by its join key: key values (in the order of the join's keys) to the
/// rows that hold them, in the order they were read. Rows with a NULL key are left out (they
/// match nothing).
#[derive(Debug, Default)]
pub struct StaticTable {
    rows: HashMap<Box<[Value]>, Vec<Box<[Value]>>>,
    len: usize,
}

impl StaticTable {
    /// Indexes `records` (each of the table's schema) by the columns `keys`, each value cast as
    /// `casts` says (one per key).
    ///
    /// # Panics
    /// When a key index is not below a record's width (the plan gives the table's schema's).
    fn new(records: Vec<Record>, keys: &[usize], casts: &[KeyCast]) -> StaticTable {
        let mut rows: HashMap<Box<[Value]>, Vec<Box<[Value]>>> = HashMap::new();
        let mut len = 0;
        for r in records {
            let key: Box<[Value]> = keys.iter().zip(casts).map(|(&k, cast)| cast.apply(&r.values[k])).collect();
            if key.iter().any(|v| matches!(v, Value::Null)) {
                continue;
            }
            rows.entry(key).or_default().push(r.values);
            len += 1;
        }
        StaticTable { rows, len }
    }

    /// The rows held (those with a NULL key left out).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no row is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The rows whose key is `key` (empty when a value of `key` is NULL or nothing matches).
    pub fn lookup(&self, key: &[Value]) -> &[Box<[Value]>] {
        if key.iter().any(|v| matches!(v, Value::Null)) {
            return &[];
        }
        self.rows.get(key).map_or(&[], Vec::as_slice)
    }
}

/// How one side's value of a key becomes the value compared: cast to the key's
/// [`KeyTypes::compare_as`], or as it is when the column has that type.
#[derive(Clone)]
struct KeyCast(Option<crate::expr::Caster>);

impl KeyCast {
    /// The cast of a value of type `from` to `to`.
    ///
    /// # Panics
    /// When Spark's ANSI mode has no such cast: the planner only pairs types that widen to
    /// `to` ([`crate::expr::join_key_type`]), each of which casts to it.
    fn new(from: crate::schema::DataType, to: crate::schema::DataType) -> KeyCast {
        KeyCast((from != to).then(|| caster(from, to).expect("a join key's type casts to the wider one")))
    }

    /// `v` as compared; NULL stays NULL, and so does a value whose cast fails (a DATE past
    /// the range of TIMESTAMP): it matches nothing.
    fn apply(&self, v: &Value) -> Value {
        match (&self.0, v) {
            (_, Value::Null) => Value::Null,
            (None, v) => v.clone(),
            (Some(cast), v) => cast(v).unwrap_or(Value::Null),
        }
    }
}

impl std::fmt::Debug for KeyCast {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "KeyCast(cast)" } else { "KeyCast(as is)" })
    }
}

/// The join of a pipeline ([`StaticJoinSpec`]) with its table and its compiled steps.
#[derive(Debug)]
pub struct JoinStage {
    kind: JoinKind,
    /// Stream column of each key.
    stream_keys: Vec<usize>,
    /// Table column of each key.
    table_keys: Vec<usize>,
    /// The cast of each key's stream value and of its table value.
    stream_casts: Vec<KeyCast>,
    table_casts: Vec<KeyCast>,
    /// The table's width (NULLs of an unmatched left outer record).
    table_width: usize,
    table: Arc<StaticTable>,
    steps: Arc<CompiledSteps>,
}

impl JoinStage {
    /// The join of `spec` with the table's `records`, then `steps` (compiled for the joined
    /// record: [`StaticJoinSpec::steps`]).
    pub fn new(spec: &StaticJoinSpec, records: Vec<Record>, steps: Arc<CompiledSteps>) -> JoinStage {
        let stream_keys = spec.keys.iter().map(|k| k.0).collect();
        let table_keys: Vec<usize> = spec.keys.iter().map(|k| k.1).collect();
        let stream_casts = spec.key_types.iter().map(|t: &KeyTypes| KeyCast::new(t.stream, t.compare_as)).collect();
        let table_casts: Vec<KeyCast> = spec.key_types.iter().map(|t| KeyCast::new(t.table, t.compare_as)).collect();
        let table = Arc::new(StaticTable::new(records, &table_keys, &table_casts));
        JoinStage {
            kind: spec.kind,
            stream_keys,
            table_keys,
            stream_casts,
            table_casts,
            table_width: spec.table_schema.len(),
            table,
            steps,
        }
    }

    /// Replaces the table by a new version read from `records` (a refresh): records joined
    /// after this see it.
    pub fn replace_table(&mut self, records: Vec<Record>) {
        self.table = Arc::new(StaticTable::new(records, &self.table_keys, &self.table_casts));
    }

    /// The table as it stands.
    pub fn table(&self) -> &StaticTable {
        &self.table
    }

    /// Joins one stream record (after the source's steps) and runs the steps on each joined
    /// record, giving `emit` each result in the order of the table's rows: inner: one per
    /// matching row; left outer: the same, or one with the table's columns NULL when no row
    /// matches; left semi: the record once when a row matches; left anti: the record once when
    /// none does.
    pub fn apply(&self, record: Record, mut emit: impl FnMut(Applied)) {
        let key: Vec<Value> =
            self.stream_keys.iter().zip(&self.stream_casts).map(|(&k, cast)| cast.apply(&record.values[k])).collect();
        let rows = self.table.lookup(&key);
        match self.kind {
            JoinKind::LeftSemi | JoinKind::LeftAnti => {
                if rows.is_empty() == (self.kind == JoinKind::LeftAnti) {
                    emit(self.steps.apply(record));
                }
            }
            JoinKind::Inner | JoinKind::LeftOuter => {
                if rows.is_empty() {
                    if self.kind == JoinKind::LeftOuter {
                        let nulls = std::iter::repeat_n(Value::Null, self.table_width);
                        let joined = record.values.into_vec().into_iter().chain(nulls).collect();
                        emit(self.steps.apply(Record { values: joined }));
                    }
                    return;
                }
                for row in rows {
                    let joined = record.values.iter().chain(row.iter()).cloned().collect();
                    emit(self.steps.apply(Record { values: joined }));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{DataType, Schema};

    fn rec(values: Vec<Value>) -> Record {
        Record { values: values.into() }
    }

    fn s(t: &str) -> Value {
        Value::Str(t.into())
    }

    fn stage(kind: JoinKind, table: Vec<Record>) -> JoinStage {
        let spec = StaticJoinSpec {
            kind,
            table: 0,
            table_schema: Schema::parse_ddl("sku STRING, price INT").unwrap(),
            keys: vec![(1, 0)],
            key_types: vec![KeyTypes {
                stream: DataType::String,
                table: DataType::String,
                compare_as: DataType::String,
            }],
            names: vec!["id".into(), "sku".into(), "p.sku".into(), "price".into()],
            steps: Vec::new(),
        };
        let steps = CompiledSteps::new(&[], 4, &[], Vec::new()).0;
        JoinStage::new(&spec, table, Arc::new(steps))
    }

    fn run(stage: &JoinStage, record: Record) -> Vec<Vec<Value>> {
        let mut out = Vec::new();
        stage.apply(record, |a| match a {
            Applied::Keep(r) => out.push(r.values.into_vec()),
            other => panic!("{other:?}"),
        });
        out
    }

    fn table() -> Vec<Record> {
        vec![
            rec(vec![s("A"), Value::Int(1)]),
            rec(vec![s("B"), Value::Int(2)]),
            rec(vec![s("A"), Value::Int(3)]),
            rec(vec![Value::Null, Value::Int(4)]),
        ]
    }

    #[test]
    fn an_inner_join_gives_one_record_per_matching_row_in_table_order() {
        let st = stage(JoinKind::Inner, table());
        assert_eq!(
            run(&st, rec(vec![Value::Int(7), s("A")])),
            vec![
                vec![Value::Int(7), s("A"), s("A"), Value::Int(1)],
                vec![Value::Int(7), s("A"), s("A"), Value::Int(3)]
            ]
        );
        assert!(run(&st, rec(vec![Value::Int(8), s("Z")])).is_empty());
    }

    #[test]
    fn a_left_outer_join_gives_nulls_for_an_unmatched_record() {
        let st = stage(JoinKind::LeftOuter, table());
        assert_eq!(
            run(&st, rec(vec![Value::Int(8), s("Z")])),
            vec![vec![Value::Int(8), s("Z"), Value::Null, Value::Null]]
        );
        assert_eq!(run(&st, rec(vec![Value::Int(9), s("B")])).len(), 1);
    }

    #[test]
    fn null_keys_never_match_on_either_side() {
        let st = stage(JoinKind::Inner, table());
        assert!(run(&st, rec(vec![Value::Int(1), Value::Null])).is_empty());
        assert_eq!(st.table().len(), 3, "the table's row with a NULL key is left out");
        let outer = stage(JoinKind::LeftOuter, table());
        assert_eq!(
            run(&outer, rec(vec![Value::Int(1), Value::Null])),
            vec![vec![Value::Int(1), Value::Null, Value::Null, Value::Null]]
        );
        let anti = stage(JoinKind::LeftAnti, table());
        assert_eq!(run(&anti, rec(vec![Value::Int(1), Value::Null])).len(), 1);
    }

    #[test]
    fn semi_and_anti_joins_give_the_stream_record_once_or_not_at_all() {
        let semi = stage(JoinKind::LeftSemi, table());
        let anti = stage(JoinKind::LeftAnti, table());
        let a = || rec(vec![Value::Int(7), s("A")]);
        let z = || rec(vec![Value::Int(8), s("Z")]);
        assert_eq!(run(&semi, a()), vec![vec![Value::Int(7), s("A")]]);
        assert!(run(&semi, z()).is_empty());
        assert!(run(&anti, a()).is_empty());
        assert_eq!(run(&anti, z()), vec![vec![Value::Int(8), s("Z")]]);
    }

    #[test]
    fn an_int_key_matches_a_bigint_key_of_the_same_number() {
        let spec = StaticJoinSpec {
            kind: JoinKind::Inner,
            table: 0,
            table_schema: Schema::parse_ddl("id BIGINT, name STRING").unwrap(),
            keys: vec![(0, 0)],
            key_types: vec![KeyTypes { stream: DataType::Int, table: DataType::Long, compare_as: DataType::Long }],
            names: vec!["id".into(), "t.id".into(), "name".into()],
            steps: Vec::new(),
        };
        let steps = CompiledSteps::new(&[], 3, &[], Vec::new()).0;
        let st = JoinStage::new(&spec, vec![rec(vec![Value::Long(7), s("seven")])], Arc::new(steps));
        assert_eq!(run(&st, rec(vec![Value::Int(7)])), vec![vec![Value::Int(7), Value::Long(7), s("seven")]]);
        assert!(run(&st, rec(vec![Value::Int(8)])).is_empty());
    }

    /// A BIGINT stream key against a DOUBLE table key compares as DOUBLE, as Spark widens both
    /// sides of `=`: 3 equals 3.0, 0 equals -0.0, 2 does not equal 2.5, NULL matches nothing.
    #[test]
    fn a_bigint_key_matches_a_double_key_of_the_same_number() {
        let spec = StaticJoinSpec {
            kind: JoinKind::Inner,
            table: 0,
            table_schema: Schema::parse_ddl("w DOUBLE, name STRING").unwrap(),
            keys: vec![(0, 0)],
            key_types: vec![KeyTypes { stream: DataType::Long, table: DataType::Double, compare_as: DataType::Double }],
            names: vec!["id".into(), "w".into(), "name".into()],
            steps: Vec::new(),
        };
        let steps = CompiledSteps::new(&[], 3, &[], Vec::new()).0;
        let table = [(3.0, "c"), (2.5, "b"), (-0.0, "z")].map(|(w, n)| rec(vec![Value::Double(w), s(n)]));
        let st = JoinStage::new(&spec, table.to_vec(), Arc::new(steps));
        let names = |id: Value| run(&st, rec(vec![id])).into_iter().map(|r| r[2].clone()).collect::<Vec<_>>();
        assert_eq!(names(Value::Long(3)), vec![s("c")]);
        assert_eq!(names(Value::Long(0)), vec![s("z")]);
        assert!(names(Value::Long(2)).is_empty());
        assert!(names(Value::Null).is_empty());
    }

    #[test]
    fn a_replaced_table_applies_to_the_next_record() {
        let mut st = stage(JoinKind::Inner, table());
        st.replace_table(vec![rec(vec![s("Z"), Value::Int(9)])]);
        assert_eq!(run(&st, rec(vec![Value::Int(8), s("Z")])).len(), 1);
        assert!(run(&st, rec(vec![Value::Int(7), s("A")])).is_empty());
    }
}
