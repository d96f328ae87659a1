//! Scalar UDFs through the SQL front end: binding (arity, types, implicit casts, names,
//! case), evaluation, failures (an error, a panic, a value of the wrong type) and pipeline
//! validation errors at a field and line:column. Expected values are written by hand from the
//! functions' definitions below.

use eddy_engine::expr::{Compiled, EvalErrorKind};
use eddy_engine::registry::{Registry, RegistryError};
use eddy_engine::{DataType, Record, Schema, Value};

use super::*;

fn schema() -> Schema {
    Schema::parse_ddl("amount DOUBLE, qty INT, card STRING, n BIGINT").unwrap_or_else(|e| panic!("{e}"))
}

/// `cents(DOUBLE) -> BIGINT`, `mask(STRING) -> STRING` (all but the last 4 characters as `*`),
/// `plus(BIGINT, BIGINT) -> BIGINT`, `fails(STRING) -> STRING` (an error naming its input),
/// `explodes(BIGINT) -> BIGINT` (panics on 13), `liar(INT) -> STRING` (returns a BIGINT).
fn registry() -> Registry {
    let mut r = Registry::new();
    r.register_udf("cents", &[DataType::Double], DataType::Long, |a| match a[0] {
        Value::Double(x) => Ok(Value::Long((x * 100.0).round() as i64)),
        _ => Ok(Value::Null),
    })
    .unwrap();
    r.register_udf("Mask", &[DataType::String], DataType::String, |a| match &a[0] {
        Value::Str(s) => {
            let n = s.chars().count();
            Ok(Value::Str(
                s.chars().enumerate().map(|(i, c)| if i + 4 < n { '*' } else { c }).collect::<String>().into(),
            ))
        }
        _ => Ok(Value::Null),
    })
    .unwrap();
    r.register_udf("plus", &[DataType::Long, DataType::Long], DataType::Long, |a| match (&a[0], &a[1]) {
        (Value::Long(x), Value::Long(y)) => Ok(Value::Long(x + y)),
        _ => Ok(Value::Null),
    })
    .unwrap();
    r.register_udf("fails", &[DataType::String], DataType::String, |a| Err(format!("no rule for {:?}", a[0]))).unwrap();
    r.register_udf("explodes", &[DataType::Long], DataType::Long, |a| {
        assert!(a[0] != Value::Long(13), "thirteen is unlucky");
        Ok(a[0].clone())
    })
    .unwrap();
    r.register_udf("liar", &[DataType::Int], DataType::String, |_| Ok(Value::Long(1))).unwrap();
    r
}

fn bind_with(text: &str) -> Result<Bound, SqlError> {
    bind_expression_in(text, &schema(), &registry())
}

fn eval(text: &str, values: Vec<Value>) -> Result<Value, ExprError> {
    let b = bind_with(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    Compiled::new(&b.typed).eval(&Record::new(values))
}

fn row(amount: f64, qty: i32, card: &str, n: i64) -> Vec<Value> {
    vec![Value::Double(amount), Value::Int(qty), Value::Str(card.into()), Value::Long(n)]
}

#[test]
fn a_udf_is_called_in_any_expression_and_named_as_registered() {
    let b = bind_with("cents(amount) + 1").unwrap();
    assert_eq!(b.typed.data_type, DataType::Long);
    assert_eq!(b.name, "(cents(amount) + 1)");
    assert_eq!(eval("cents(amount) + 1", row(12.345, 1, "x", 0)), Ok(Value::Long(1236)));
    // names ignore case, in the call and at registration
    assert_eq!(bind_with("MASK(card)").unwrap().name, "mask(card)");
    assert_eq!(eval("mAsK(card)", row(0.0, 1, "4111222233334444", 0)), Ok(Value::Str("************4444".into())));
    // nested in built-ins and in other UDFs, two arguments
    assert_eq!(eval("upper(mask(lower(card)))", row(0.0, 1, "ABCDEF", 0)), Ok(Value::Str("**CDEF".into())));
    assert_eq!(eval("plus(n, plus(n, 2))", row(0.0, 1, "x", 5)), Ok(Value::Long(12)));
    // NULL reaches the function, which decides
    assert_eq!(eval("cents(NULL)", row(0.0, 1, "x", 0)), Ok(Value::Null));
}

#[test]
fn arguments_are_widened_as_spark_casts_implicitly_and_other_types_are_refused() {
    // INT -> BIGINT, INT -> DOUBLE: implicit casts
    assert_eq!(eval("plus(qty, 1)", row(0.0, 4, "x", 0)), Ok(Value::Long(5)));
    assert_eq!(eval("cents(qty)", row(0.0, 4, "x", 0)), Ok(Value::Long(400)));
    // a STRING is not cast to a number, a DOUBLE not narrowed to BIGINT
    let e = bind_with("cents(card)").err().unwrap().to_string();
    assert_eq!(
        e,
        "at 1:7: argument 1 of cents of type STRING (card) (allowed: DOUBLE, or a type Spark widens to it: cents(DOUBLE))"
    );
    let e = bind_with("plus(n, amount)").err().unwrap().to_string();
    assert!(e.starts_with("at 1:9: argument 2 of plus of type DOUBLE (amount)"), "{e}");
    // arity
    let e = bind_with("plus(n)").err().unwrap().to_string();
    assert_eq!(e, "at 1:1: plus with 1 arguments (allowed: 2 arguments: plus(BIGINT, BIGINT))");
}

#[test]
fn an_unregistered_name_is_refused_with_the_registered_ones_listed() {
    let e = bind_with("centz(amount)").err().unwrap().to_string();
    assert!(e.starts_with("at 1:1: function centz is not supported"), "{e}");
    assert!(e.ends_with("; the registered functions cents, explodes, fails, liar, mask, plus)"), "{e}");
    // without the registry the name is unknown
    assert!(bind_expression("cents(amount)", &schema()).is_err());
}

#[test]
fn a_failing_udf_names_itself_and_its_message() {
    let kind = |r: Result<Value, ExprError>| match r {
        Err(ExprError::Eval { kind: EvalErrorKind::UserFunction(u), expr }) => {
            (u.function.to_string(), u.message.to_string(), expr.to_string())
        }
        other => panic!("not a UDF failure: {other:?}"),
    };
    let (f, m, at) = kind(eval("upper(fails(card))", row(0.0, 1, "x", 0)));
    assert_eq!((f.as_str(), m.as_str(), at.as_str()), ("fails", "no rule for Str(\"x\")", "fails(card)"));
    let (f, m, _) = kind(eval("explodes(n) * 2", row(0.0, 1, "x", 13)));
    assert_eq!((f.as_str(), m.as_str()), ("explodes", "panicked: thirteen is unlucky"));
    // the same expression goes on with the next record
    assert_eq!(eval("explodes(n) * 2", row(0.0, 1, "x", 12)), Ok(Value::Long(24)));
    let (f, m, _) = kind(eval("liar(qty)", row(0.0, 1, "x", 0)));
    assert_eq!((f.as_str(), m.as_str()), ("liar", "returned BIGINT where STRING was declared"));
    let shown = eval("fails(card)", row(0.0, 1, "y", 0)).err().unwrap().to_string();
    assert_eq!(shown, r#"FAILED_EXECUTE_UDF (function fails: no rule for Str("y")) in "fails(card)""#);
}

#[test]
fn a_udf_may_not_shadow_a_built_in_nor_be_misnamed() {
    let mut r = Registry::new();
    for name in ["lower", "LOWER", "sum", "window", "count_if", "current_timestamp", "explode", "collect_list"] {
        let e = r.register_udf(name, &[], DataType::Long, |_| Ok(Value::Null)).err();
        assert!(matches!(e, Some(RegistryError::BuiltinName { .. })), "{name}: {e:?}");
    }
    for name in ["", "1x", "a-b", "a b"] {
        let e = r.register_udf(name, &[], DataType::Long, |_| Ok(Value::Null)).err();
        assert!(matches!(e, Some(RegistryError::BadName { .. })), "{name:?}: {e:?}");
    }
    assert!(r.register_udf("lower_case", &[], DataType::Long, |_| Ok(Value::Null)).is_ok());
}

#[test]
fn a_wrong_udf_call_in_a_pipeline_names_the_field_and_line_column() {
    let pipeline = |select: &str| {
        format!(
            r#"
name = "p"
[source]
type = "files"
path = "in"
format = "json"
schema = "amount DOUBLE, qty INT, card STRING, n BIGINT"
select = ["card", "{select}"]
[query]
type = "deduplicate"
columns = ["card"]
[sink]
type = "files"
path = "out"
"#
        )
    };
    let r = registry();
    assert!(parse_pipeline_in(&pipeline("cents(amount) AS c"), &[], &r).is_ok());
    let e = parse_pipeline_in(&pipeline("plus(card, 1) AS c"), &[], &r).err().unwrap();
    assert_eq!(e.field, "source.select[1]");
    assert!(e.given.contains("at 1:6: argument 1 of plus of type STRING (card)"), "{}", e.given);
    // the same pipeline without the registry: the function is unknown
    let e = parse_pipeline_in(&pipeline("cents(amount) AS c"), &[], &Registry::new()).err().unwrap();
    assert_eq!(e.field, "source.select[1]");
    assert!(e.given.contains("at 1:1: function cents"), "{}", e.given);
}

#[test]
fn a_user_aggregate_measure_is_resolved_by_name_and_its_mistakes_name_the_field() {
    /// A sum of the values as DOUBLE (the aggregate's rules do not matter here, its name does).
    #[derive(Debug)]
    struct Total;
    impl eddy_engine::aggregate::Aggregator for Total {
        fn name(&self) -> &str {
            "total"
        }
        fn result_type(&self, _input: DataType) -> DataType {
            DataType::Double
        }
        fn zero(&self) -> Value {
            Value::Double(0.0)
        }
        fn reduce(&self, state: &mut Value, input: &Value) {
            if let (Value::Double(s), Some(x)) = (&mut *state, input.as_f64()) {
                *s += x;
            }
        }
        fn merge(&self, state: &mut Value, other: &Value) {
            self.reduce(state, other);
        }
        fn finish(&self, state: &Value) -> Value {
            state.clone()
        }
    }
    let mut r = Registry::new();
    r.register_udaf("Total", std::sync::Arc::new(Total)).unwrap();
    // a scalar UDF may not take an aggregate's name, nor an aggregate a built-in's
    let taken = r.register_udf("total", &[], DataType::Long, |_| Ok(Value::Null)).err();
    assert!(matches!(taken, Some(RegistryError::Taken { .. })), "{taken:?}");
    assert!(matches!(
        r.register_udaf("avg", std::sync::Arc::new(Total)).err(),
        Some(RegistryError::BuiltinName { .. })
    ));
    let pipeline = |measure: &str| {
        format!(
            r#"
name = "p"
[source]
type = "files"
path = "in"
format = "json"
schema = "amount DOUBLE, qty INT, card STRING, n BIGINT"
[query]
type = "window_aggregate"
group_by = ["card"]
measures = [{measure}]
[sink]
type = "files"
path = "out"
"#
        )
    };
    let p = parse_pipeline_in(&pipeline(r#"{ agg = "TOTAL", column = "qty" }"#), &[], &r).unwrap();
    let eddy_engine::spec::QuerySpec::WindowAggregate { measures, .. } = &p.query else { panic!("{:?}", p.query) };
    assert_eq!((measures[0].output_name.as_str(), measures[0].output_type), ("total(qty)", DataType::Double));
    let e = parse_pipeline_in(&pipeline(r#"{ agg = "totl", column = "qty" }"#), &[], &r).err().unwrap();
    assert_eq!(e.field, "query.measures[0].agg");
    assert!(e.allowed.ends_with("; the registered aggregates total"), "{}", e.allowed);
    let e = parse_pipeline_in(&pipeline(r#"{ agg = "total" }"#), &[], &r).err().unwrap();
    assert_eq!(e.field, "query.measures[0].column");
    let e = parse_pipeline_in(&pipeline(r#"{ agg = "total", column = "qty", rsd = 0.1 }"#), &[], &r).err().unwrap();
    assert_eq!(e.field, "query.measures[0].rsd", "{e}");
}

/// A user aggregate counting its values (its rules do not matter here, its name does).
#[derive(Debug)]
struct Tally;

impl eddy_engine::aggregate::Aggregator for Tally {
    fn name(&self) -> &str {
        "tally"
    }
    fn result_type(&self, _input: DataType) -> DataType {
        DataType::Long
    }
    fn zero(&self) -> Value {
        Value::Long(0)
    }
    fn reduce(&self, state: &mut Value, _input: &Value) {
        if let Value::Long(n) = state {
            *n += 1;
        }
    }
    fn merge(&self, state: &mut Value, other: &Value) {
        if let (Value::Long(n), Value::Long(m)) = (&mut *state, other) {
            *n += m;
        }
    }
    fn finish(&self, state: &Value) -> Value {
        state.clone()
    }
}

#[test]
fn a_misspelt_aggregate_in_sql_is_an_unknown_function_and_a_user_aggregate_is_no_row_function() {
    let mut r = registry();
    r.register_udaf("tally", std::sync::Arc::new(Tally)).unwrap();
    let pipeline = |select: &str, sql: &str| {
        format!(
            r#"
name = "p"
[source]
type = "files"
path = "in"
format = "json"
schema = "amount DOUBLE, qty INT, card STRING, n BIGINT"
select = [{select}]
[query]
sql = "{sql}"
[sink]
type = "files"
path = "out"
"#
        )
    };
    let ok =
        parse_pipeline_in(&pipeline(r#""*""#, "SELECT card, tally(amount) AS t FROM source GROUP BY card"), &[], &r);
    assert!(ok.is_ok(), "{:?}", ok.err());
    // a misspelt user aggregate, and a misspelt built-in one, over a column that is not
    // grouped: the function is unknown (Spark's UNRESOLVED_ROUTINE comes before its
    // MISSING_AGGREGATION), not the column
    for (sql, name, col) in [
        ("SELECT card, tallly(amount) AS t FROM source GROUP BY card", "tallly", 14),
        ("SELECT card, summ(amount) AS t FROM source GROUP BY card", "summ", 14),
        ("SELECT card, 1 + Sumsqq(qty) FROM source GROUP BY card", "Sumsqq", 18),
    ] {
        let e = parse_pipeline_in(&pipeline(r#""*""#, sql), &[], &r).err().unwrap();
        assert_eq!(e.field, "query.sql", "{sql}");
        assert!(e.given.starts_with(&format!("function {name} at 1:{col}")), "{sql}: {e}");
        assert!(e.allowed.ends_with("; the registered functions cents, explodes, fails, liar, mask, plus"), "{e}");
    }
    // a registered scalar function over a column that is not grouped: that column is named
    let e = parse_pipeline_in(&pipeline(r#""*""#, "SELECT card, cents(amount) FROM source GROUP BY card"), &[], &r)
        .err()
        .unwrap();
    assert!(e.given.contains("the column \"amount\" neither grouped nor aggregated"), "{e}");
    // a user aggregate in a row expression is named as an aggregate, as a built-in one is
    let e =
        parse_pipeline_in(&pipeline(r#""card", "tally(amount) AS t""#, "SELECT * FROM source"), &[], &r).err().unwrap();
    assert_eq!(e.field, "source.select[1]");
    assert!(e.given.contains("at 1:1: aggregate function tally in a row expression"), "{e}");
}

#[test]
fn a_built_in_name_refused_at_registration_says_what_a_name_may_be() {
    let e = Registry::new().register_udf("Upper", &[DataType::String], DataType::String, |a| Ok(a[0].clone())).err();
    assert_eq!(
        e.map(|e| e.to_string()).as_deref(),
        Some(
            "`Upper` is a built-in function of Spark SQL (expected [A-Za-z_][A-Za-z0-9_]*, not one of Spark's \
             functions (SQL.md))"
        )
    );
}
