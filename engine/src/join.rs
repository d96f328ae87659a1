//! Stream-static joins (SEMANTICS.md "Joins"): a broadcast hash join of each stream record with
//! a static table held in memory, stateless per record.
//!
//! [`StaticTable`] is the table as a hash map from the join key to its rows; [`JoinStage`] looks
//! each stream record up in it and runs the query's steps on each joined record: one record in,
//! 0..n out. As Spark's equi-joins, a key with a NULL never matches (on either side), and keys
//! compare as Spark's join keys do (NaN equals NaN, -0.0 equals 0.0: [`Value`]'s equality), each
//! side's value computed by its key expression ([`crate::spec::StaticJoinKey`]: a column, or an
//! expression over the side's columns, cast to the type the key compares as: an INT key equals
//! a BIGINT key of the same number, a BIGINT key a DOUBLE one, as Spark widens both sides of
//! `=`).

use std::collections::HashMap;
use std::sync::Arc;

use crate::expr::Compiled;
use crate::spec::{JoinKind, StaticJoinSpec};
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
    /// Indexes `records` (each of the table's schema) by the values of the key expressions
    /// `keys` (over the table's columns), leaving out the rows where `filter` (the join's
    /// conditions on the table alone, [`StaticJoinSpec::table_filter`]) is not true.
    ///
    /// # Errors
    /// The row and the error of the filter or a key expression that fails on a row (a cast
    /// that does not hold, a division by zero): Spark fails the query there.
    fn new(records: Vec<Record>, keys: &[Compiled], filter: Option<&Compiled>) -> Result<StaticTable, KeyFailed> {
        let mut rows: HashMap<Box<[Value]>, Vec<Box<[Value]>>> = HashMap::new();
        let mut len = 0;
        for (n, r) in records.into_iter().enumerate() {
            if let Some(f) = filter {
                match f.eval(&r) {
                    Ok(Value::Bool(true)) => {}
                    Ok(_) => continue,
                    Err(e) => return Err(KeyFailed { row: n, what: "join condition", error: e.to_string() }),
                }
            }
            let key = keys.iter().map(|k| k.eval(&r)).collect::<Result<Box<[Value]>, _>>().map_err(|e| KeyFailed {
                row: n,
                what: "join key",
                error: e.to_string(),
            })?;
            if key.iter().any(|v| matches!(v, Value::Null)) {
                continue;
            }
            rows.entry(key).or_default().push(r.values);
            len += 1;
        }
        Ok(StaticTable { rows, len })
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

/// A table row on which a join key expression, or the join's condition on the table alone,
/// failed: its index among the table's records (from 0), which of the two, and the error. Shown
/// as `row N: its join key failed: ...` (N from 1); a reader that knows where the row was read
/// names its file and line instead ([`KeyFailed::at`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFailed {
    /// The row, from 0.
    pub row: usize,
    /// `join key` or `join condition`.
    pub what: &'static str,
    /// The expression's error.
    pub error: String,
}

impl KeyFailed {
    /// The error with the row's position (`prices.json:6`) in place of its number.
    pub fn at(&self, position: &dyn std::fmt::Display) -> String {
        format!("{position}: its {} failed: {}", self.what, self.error)
    }
}

impl std::fmt::Display for KeyFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "row {}: its {} failed: {}", self.row + 1, self.what, self.error)
    }
}

impl std::error::Error for KeyFailed {}

/// The join of a pipeline ([`StaticJoinSpec`]) with its table and its compiled steps.
#[derive(Debug)]
pub struct JoinStage {
    kind: JoinKind,
    /// Each key's value on a stream record.
    stream_keys: Vec<Compiled>,
    /// Each key's value on a table row.
    table_keys: Vec<Compiled>,
    /// ON's conditions on the table alone ([`StaticJoinSpec::table_filter`]).
    table_filter: Option<Compiled>,
    /// ON's other conditions, over the stream's values then the table row's
    /// ([`StaticJoinSpec::condition`]).
    condition: Option<Compiled>,
    /// The table's width (NULLs of an unmatched left outer record).
    table_width: usize,
    table: Arc<StaticTable>,
    steps: Arc<CompiledSteps>,
}

impl JoinStage {
    /// The join of `spec` with the table's `records`, then `steps` (compiled for the joined
    /// record: [`StaticJoinSpec::steps`]).
    ///
    /// # Errors
    /// As [`JoinStage::replace_table`].
    pub fn new(spec: &StaticJoinSpec, records: Vec<Record>, steps: Arc<CompiledSteps>) -> Result<JoinStage, KeyFailed> {
        let stream_keys = spec.keys.iter().map(|k| Compiled::new(&k.stream.typed)).collect();
        let table_keys: Vec<Compiled> = spec.keys.iter().map(|k| Compiled::new(&k.table.typed)).collect();
        let table_filter = spec.table_filter.as_ref().map(|f| Compiled::new(&f.typed));
        let table = Arc::new(StaticTable::new(records, &table_keys, table_filter.as_ref())?);
        let condition = spec.condition.as_ref().map(|c| Compiled::new(&c.typed));
        let table_width = spec.table_schema.len();
        Ok(JoinStage { kind: spec.kind, stream_keys, table_keys, table_filter, condition, table_width, table, steps })
    }

    /// Replaces the table by a new version read from `records` (a refresh): records joined
    /// after this see it.
    ///
    /// # Errors
    /// The row and the error of a key expression that fails on a row of the table (the table
    /// is then unchanged).
    pub fn replace_table(&mut self, records: Vec<Record>) -> Result<(), KeyFailed> {
        self.table = Arc::new(StaticTable::new(records, &self.table_keys, self.table_filter.as_ref())?);
        Ok(())
    }

    /// The table as it stands.
    pub fn table(&self) -> &StaticTable {
        &self.table
    }

    /// Joins one stream record (after the source's steps) and runs the steps on each joined
    /// record, giving `emit` each result in the order of the table's rows: inner: one per
    /// matching row; left outer: the same, or one with the table's columns NULL when no row
    /// matches; left semi: the record once when a row matches; left anti: the record once when
    /// none does. A row matches when its key equals the record's and ON's other conditions
    /// hold on the two together. A key expression or a condition that fails on the record
    /// (Spark fails the query) gives one [`Applied::Failed`] for it and nothing else.
    pub fn apply(&self, record: Record, mut emit: impl FnMut(Applied)) {
        let key = match self.stream_keys.iter().map(|k| k.eval(&record)).collect::<Result<Vec<Value>, _>>() {
            Ok(key) => key,
            // a key expression that fails on the record (Spark fails the query): to the dead letters
            Err(e) => {
                emit(Applied::Failed { reason: format!("{e} (a join key)"), input: record });
                return;
            }
        };
        let found = self.table.lookup(&key);
        let Some(condition) = &self.condition else {
            return self.emit_rows(record, found.iter().map(|r| &**r), emit);
        };
        let mut kept: Vec<&[Value]> = Vec::with_capacity(found.len());
        for row in found {
            let joined = Record { values: record.values.iter().chain(row.iter()).cloned().collect() };
            match condition.eval(&joined) {
                Ok(Value::Bool(true)) => kept.push(row),
                // false or NULL: this row does not match
                Ok(_) => {}
                Err(e) => {
                    emit(Applied::Failed { reason: format!("{e} (a join condition)"), input: record });
                    return;
                }
            }
        }
        self.emit_rows(record, kept.into_iter(), emit)
    }

    /// [`JoinStage::apply`]'s output for `record` given the table rows that match it.
    fn emit_rows<'r>(
        &self,
        record: Record,
        rows: impl ExactSizeIterator<Item = &'r [Value]>,
        mut emit: impl FnMut(Applied),
    ) {
        match self.kind {
            JoinKind::LeftSemi | JoinKind::LeftAnti => {
                if (rows.len() == 0) == (self.kind == JoinKind::LeftAnti) {
                    emit(self.steps.apply(record));
                }
            }
            JoinKind::Inner | JoinKind::LeftOuter => {
                if rows.len() == 0 {
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
    use crate::expr::{BinaryOp, Literal, Node, Pos, Syntax, SyntaxKind, Typed};
    use crate::schema::{DataType, Schema};
    use crate::spec::{PipelineExpr, StaticJoinKey};

    /// A key of stream column `s` and table column `t` of the given types, compared as `to`
    /// (the narrower side cast, as the planner casts it).
    fn key((s, st): (usize, DataType), (t, tt): (usize, DataType), to: DataType) -> StaticJoinKey {
        let side = |c: usize, ty: DataType, name: &str| {
            let typed = Typed { node: Node::Column(c), data_type: ty, name: name.into() };
            let typed = if ty == to { typed } else { crate::expr::implicit_cast(typed, to) };
            PipelineExpr { field: "query.sql".into(), typed, name: name.into() }
        };
        StaticJoinKey { stream: side(s, st, "s"), table: side(t, tt, "t") }
    }

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
            keys: vec![key((1, DataType::String), (0, DataType::String), DataType::String)],
            condition: None,
            table_filter: None,
            names: vec!["id".into(), "sku".into(), "p.sku".into(), "price".into()],
            steps: Vec::new(),
        };
        let steps = CompiledSteps::new(&[], 4, &[], Vec::new()).0;
        JoinStage::new(&spec, table, Arc::new(steps)).unwrap()
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
            keys: vec![key((0, DataType::Int), (0, DataType::Long), DataType::Long)],
            condition: None,
            table_filter: None,
            names: vec!["id".into(), "t.id".into(), "name".into()],
            steps: Vec::new(),
        };
        let steps = CompiledSteps::new(&[], 3, &[], Vec::new()).0;
        let st = JoinStage::new(&spec, vec![rec(vec![Value::Long(7), s("seven")])], Arc::new(steps)).unwrap();
        assert_eq!(run(&st, rec(vec![Value::Int(7)])), vec![vec![Value::Int(7), Value::Long(7), s("seven")]]);
        assert!(run(&st, rec(vec![Value::Int(8)])).is_empty());
    }

    /// A key expression that fails on a stream record fails that record (to the dead letters,
    /// with the error); one that fails on a table row fails the table's read, naming the row.
    #[test]
    fn a_failing_key_expression_fails_its_record_or_the_table() {
        let spec = StaticJoinSpec {
            kind: JoinKind::LeftOuter,
            table: 0,
            table_schema: Schema::parse_ddl("code STRING, name STRING").unwrap(),
            // both sides' text cast to INT: 'x' does not read as one
            keys: vec![key((0, DataType::String), (0, DataType::String), DataType::Int)],
            condition: None,
            table_filter: None,
            names: vec!["c".into(), "code".into(), "name".into()],
            steps: Vec::new(),
        };
        let steps = Arc::new(CompiledSteps::new(&[], 3, &[], Vec::new()).0);
        let table = vec![rec(vec![s("7"), s("seven")]), rec(vec![s(" 8 "), s("eight")])];
        let st = JoinStage::new(&spec, table, steps.clone()).unwrap();
        let mut failed = Vec::new();
        st.apply(rec(vec![s("x")]), |a| match a {
            Applied::Failed { reason, input } => failed.push((reason, input.values.into_vec())),
            other => panic!("{other:?}"),
        });
        assert_eq!(failed.len(), 1);
        assert!(failed[0].0.contains("CAST_INVALID_INPUT"), "{}", failed[0].0);
        assert_eq!(failed[0].1, vec![s("x")]);
        let seven = |a: Applied| match a {
            Applied::Keep(r) => assert_eq!(r.values.into_vec(), vec![s("07"), s("7"), s("seven")]),
            other => panic!("{other:?}"),
        };
        st.apply(rec(vec![s("07")]), seven);
        let bad = vec![rec(vec![s("7"), s("seven")]), rec(vec![s("x"), s("ex")])];
        let e = JoinStage::new(&spec, bad.clone(), steps.clone()).unwrap_err().to_string();
        assert!(e.starts_with("row 2: its join key failed") && e.contains("CAST_INVALID_INPUT"), "{e}");
        // ON's condition on the table alone (`name <> 'ex'`) leaves the row out before its key
        // is computed, as Spark pushes it below the join: no failure, and the row joins nothing
        let at = Pos::default();
        let node = |kind| Syntax { kind, pos: at };
        let not_ex = node(SyntaxKind::Binary {
            op: BinaryOp::NotEq,
            left: Box::new(node(SyntaxKind::Column(vec!["name".into()]))),
            right: Box::new(node(SyntaxKind::Literal(Literal::String("ex".into())))),
        });
        let filter = crate::expr::bind(&not_ex, &spec.table_schema).unwrap();
        let filtered = StaticJoinSpec {
            table_filter: Some(PipelineExpr { field: "query.sql".into(), name: filter.name.clone(), typed: filter }),
            ..spec.clone()
        };
        let st = JoinStage::new(&filtered, bad.clone(), steps.clone()).unwrap();
        assert_eq!(st.table().len(), 1);
        // a filter that fails on a row fails the table's read, naming the condition
        let fails = node(SyntaxKind::Binary {
            op: BinaryOp::Gt,
            left: Box::new(node(SyntaxKind::Cast {
                expr: Box::new(node(SyntaxKind::Column(vec!["code".into()]))),
                to: DataType::Int,
                try_cast: false,
            })),
            right: Box::new(node(SyntaxKind::Literal(Literal::Integer(0)))),
        });
        let filter = crate::expr::bind(&fails, &spec.table_schema).unwrap();
        let failing = StaticJoinSpec {
            table_filter: Some(PipelineExpr { field: "query.sql".into(), name: filter.name.clone(), typed: filter }),
            ..spec
        };
        let e = JoinStage::new(&failing, bad, steps).unwrap_err().to_string();
        assert!(e.starts_with("row 2: its join condition failed"), "{e}");
    }

    /// ON's other conditions over the joined row: a row whose key matches joins only where
    /// they hold (false and NULL do not); a left outer join with no such row keeps the record
    /// with NULLs; semi and anti joins count only such rows; a condition that fails on a row
    /// fails the record, with nothing emitted for it.
    #[test]
    fn the_condition_beside_the_keys_decides_which_matching_rows_join() {
        // stream (id INT, sku STRING), table (sku STRING, price INT); ON s.sku = t.sku AND
        // 10 / (t.price - s.id) > 1, columns 0..4 of the joined row
        let at = Pos::default();
        let node = |kind| Syntax { kind, pos: at };
        let binary = |op, l, r| node(SyntaxKind::Binary { op, left: Box::new(l), right: Box::new(r) });
        let column = |n: &str| node(SyntaxKind::Column(vec![n.into()]));
        let int = |i| node(SyntaxKind::Literal(Literal::Integer(i)));
        let cond = binary(
            BinaryOp::Gt,
            binary(BinaryOp::Divide, int(10), binary(BinaryOp::Minus, column("price"), column("id"))),
            int(1),
        );
        let schema = Schema::parse_ddl("id INT, sku STRING, t_sku STRING, price INT").unwrap();
        let condition = crate::expr::bind(&cond, &schema).unwrap();
        let spec = |kind| StaticJoinSpec {
            kind,
            table: 0,
            table_schema: Schema::parse_ddl("sku STRING, price INT").unwrap(),
            keys: vec![key((1, DataType::String), (0, DataType::String), DataType::String)],
            condition: Some(PipelineExpr {
                field: "query.sql".into(),
                name: condition.name.clone(),
                typed: condition.clone(),
            }),
            table_filter: None,
            names: vec!["id".into(), "sku".into(), "t_sku".into(), "price".into()],
            steps: Vec::new(),
        };
        let table = || {
            vec![rec(vec![s("A"), Value::Int(3)]), rec(vec![s("A"), Value::Int(20)]), rec(vec![s("A"), Value::Null])]
        };
        let steps = Arc::new(CompiledSteps::new(&[], 4, &[], Vec::new()).0);
        let stage = |kind| JoinStage::new(&spec(kind), table(), steps.clone()).unwrap();
        // id 1: 10 / 2 = 5 holds for price 3, 10 / 19 does not for 20, NULL for the NULL price
        let inner = stage(JoinKind::Inner);
        assert_eq!(
            run(&inner, rec(vec![Value::Int(1), s("A")])),
            vec![vec![Value::Int(1), s("A"), s("A"), Value::Int(3)]]
        );
        // id 0: 10 / 3 holds for 3 (3.33), not for 20 (0.5)
        assert_eq!(run(&inner, rec(vec![Value::Int(0), s("A")])).len(), 1);
        // id 2: 10 / 1 holds for 3, 10 / 18 not for 20: one row
        let outer = stage(JoinKind::LeftOuter);
        assert_eq!(run(&outer, rec(vec![Value::Int(2), s("A")])).len(), 1);
        // id -100: 10 / 103, 10 / 120 hold for neither: the record with NULLs
        assert_eq!(
            run(&outer, rec(vec![Value::Int(-100), s("A")])),
            vec![vec![Value::Int(-100), s("A"), Value::Null, Value::Null]]
        );
        assert_eq!(run(&stage(JoinKind::LeftSemi), rec(vec![Value::Int(-100), s("A")])).len(), 0);
        assert_eq!(run(&stage(JoinKind::LeftAnti), rec(vec![Value::Int(-100), s("A")])).len(), 1);
        assert_eq!(run(&stage(JoinKind::LeftSemi), rec(vec![Value::Int(1), s("A")])).len(), 1);
        assert_eq!(run(&stage(JoinKind::LeftAnti), rec(vec![Value::Int(1), s("A")])).len(), 0);
        // id 3: 10 / 0 on the first row: the record fails, nothing else is emitted for it
        let mut out = Vec::new();
        outer.apply(rec(vec![Value::Int(3), s("A")]), |a| out.push(a));
        assert_eq!(out.len(), 1, "{out:?}");
        match &out[0] {
            Applied::Failed { reason, input } => {
                assert!(reason.contains("DIVIDE_BY_ZERO") && reason.ends_with("(a join condition)"), "{reason}");
                assert_eq!(input.values.to_vec(), vec![Value::Int(3), s("A")]);
            }
            other => panic!("{other:?}"),
        }
    }

    /// A BIGINT stream key against a DOUBLE table key compares as DOUBLE, as Spark widens both
    /// sides of `=`: 3 equals 3.0, 0 equals -0.0, 2 does not equal 2.5, NULL matches nothing.
    #[test]
    fn a_bigint_key_matches_a_double_key_of_the_same_number() {
        let spec = StaticJoinSpec {
            kind: JoinKind::Inner,
            table: 0,
            table_schema: Schema::parse_ddl("w DOUBLE, name STRING").unwrap(),
            keys: vec![key((0, DataType::Long), (0, DataType::Double), DataType::Double)],
            condition: None,
            table_filter: None,
            names: vec!["id".into(), "w".into(), "name".into()],
            steps: Vec::new(),
        };
        let steps = CompiledSteps::new(&[], 3, &[], Vec::new()).0;
        let table = [(3.0, "c"), (2.5, "b"), (-0.0, "z")].map(|(w, n)| rec(vec![Value::Double(w), s(n)]));
        let st = JoinStage::new(&spec, table.to_vec(), Arc::new(steps)).unwrap();
        let names = |id: Value| run(&st, rec(vec![id])).into_iter().map(|r| r[2].clone()).collect::<Vec<_>>();
        assert_eq!(names(Value::Long(3)), vec![s("c")]);
        assert_eq!(names(Value::Long(0)), vec![s("z")]);
        assert!(names(Value::Long(2)).is_empty());
        assert!(names(Value::Null).is_empty());
    }

    #[test]
    fn a_replaced_table_applies_to_the_next_record() {
        let mut st = stage(JoinKind::Inner, table());
        st.replace_table(vec![rec(vec![s("Z"), Value::Int(9)])]).unwrap();
        assert_eq!(run(&st, rec(vec![Value::Int(8), s("Z")])).len(), 1);
        assert!(run(&st, rec(vec![Value::Int(7), s("A")])).is_empty());
    }
}
