//! `query.measures`: aggregate functions, their columns, options, output names and types.

use super::error::{SpecError, list, quote};
use super::model::RawMeasure;
use super::output::{measure_output_type, name_from_literals, spark_double_literal};
use super::validate::{Min, Present, Show, duration, note, only_fields};
use super::{MeasureSpec, UserAggregate};
use crate::schema::{DataType, Schema};

/// The optional fields of a measure that are set, with their values (for refusing those its
/// function does not take).
fn fields_present(raw: &RawMeasure) -> Present {
    let mut present = Present::new();
    note(&mut present, "column", &raw.column);
    note(&mut present, "alias", &raw.alias);
    note(&mut present, "percentage", &raw.percentage);
    note(&mut present, "accuracy", &raw.accuracy);
    note(&mut present, "rsd", &raw.rsd);
    note(&mut present, "over", &raw.over);
    present
}

/// The aggregate functions, lower-case (`percentile_approx` is a synonym of `approx_percentile`).
pub const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "mean",
    "min",
    "max",
    "stddev",
    "std",
    "stddev_samp",
    "stddev_pop",
    "variance",
    "var_samp",
    "var_pop",
    "approx_count_distinct",
    "approx_percentile",
    "percentile_approx",
    "first",
    "first_value",
    "last",
    "last_value",
    "any_value",
    "max_by",
    "min_by",
];

/// Spark's HyperLogLog++ precision for a relative standard deviation `rsd`:
/// `p = ceil(2 * log2(1.106 / rsd))` (Spark's `HyperLogLogPlusPlusHelper`). Spark refuses
/// `p < 4` (rsd above about 0.39); Eddy's sketch (Apache DataSketches HLL) takes `4 <= p <= 21`.
pub fn spark_hll_precision(rsd: f64) -> i64 {
    (2.0 * (1.106 / rsd).log2()).ceil() as i64
}

pub(crate) fn measures(
    raw: Option<Vec<RawMeasure>>,
    schema: &Schema,
    rolling: bool,
) -> Result<Vec<MeasureSpec>, SpecError> {
    let allowed = "a non-empty list of { agg, column?, alias?, ... }";
    let Some(raw) = raw else {
        return Err(SpecError::missing("query.measures", allowed));
    };
    if raw.is_empty() {
        return Err(SpecError::new("query.measures", "[]", allowed));
    }
    raw.into_iter().enumerate().map(|(i, m)| measure(&format!("query.measures[{i}]"), m, schema, rolling)).collect()
}

fn measure(at: &str, raw: RawMeasure, schema: &Schema, rolling: bool) -> Result<MeasureSpec, SpecError> {
    let agg_given = raw.agg.clone().ok_or_else(|| SpecError::missing(format!("{at}.agg"), list(AGGREGATES)))?;
    let mut agg = agg_given.to_ascii_lowercase();
    if !AGGREGATES.contains(&agg.as_str()) {
        if let Some(aggregator) = crate::expr::current_aggregate(&agg) {
            return user_measure(at, raw, schema, rolling, UserAggregate { name: agg, aggregator });
        }
        let mut known = list(AGGREGATES);
        let users = crate::expr::current_aggregate_names();
        if !users.is_empty() {
            known = format!("{known}; the registered aggregates {}", users.join(", "));
        }
        return Err(SpecError::bad_str(format!("{at}.agg"), &agg_given, known));
    }
    if agg == "percentile_approx" {
        agg = "approx_percentile".into();
    }
    let present = fields_present(&raw);
    let mut allowed = vec!["agg", "column", "alias"];
    match agg.as_str() {
        "approx_percentile" => allowed.extend(["percentage", "accuracy"]),
        "approx_count_distinct" => allowed.push("rsd"),
        _ => {}
    }
    if rolling {
        allowed.push("over");
    }
    let kind = if raw.over.is_some() && !rolling { "window_aggregate" } else { agg.as_str() };
    let what = if raw.over.is_some() && !rolling { "query type" } else { "agg" };
    only_fields(at, what, kind, &present, &allowed)?;

    let column = match raw.column.as_deref() {
        None | Some("*") if agg == "count" => None,
        None => {
            return Err(SpecError::missing(
                format!("{at}.column"),
                format!("a column of the schema: {}", schema.names()),
            ));
        }
        Some(c) => Some(c.to_string()),
    };
    let input_type = match &column {
        None => None,
        Some(c) => {
            let i = super::validate::column(&format!("{at}.column"), c, schema)?;
            Some(schema.fields()[i].data_type)
        }
    };
    // The types each function takes are those Spark gives a result type for.
    let accepts = |t: DataType| measure_output_type(&agg, t, false).is_some();
    if let Some(t) = input_type.filter(|t| !accepts(*t)) {
        let what = match agg.as_str() {
            "min" | "max" | "first" | "first_value" | "last" | "last_value" | "any_value" => {
                "a column of the input schema"
            }
            "max_by" | "min_by" => "a STRUCT<value, ordering> column (as named_struct('value', x, 'ordering', ord))",
            "approx_percentile" => "a numeric or TIMESTAMP column",
            _ => "a numeric (INT, BIGINT, FLOAT, DOUBLE, DECIMAL) column",
        };
        let fitting: Vec<&str> =
            schema.fields().iter().filter(|f| accepts(f.data_type)).map(|f| f.name.as_str()).collect();
        return Err(SpecError::new(
            format!("{at}.column"),
            format!("{} (a {t} column, for {agg})", quote(column.as_deref().unwrap_or(""))),
            if fitting.is_empty() {
                format!("{what} (the input has none)")
            } else {
                format!("{what}: {}", list(&fitting))
            },
        ));
    }
    let alias = match raw.alias {
        Some(a) if a.is_empty() => {
            return Err(SpecError::bad_str(format!("{at}.alias"), &a, "a non-empty column name"));
        }
        a => a,
    };
    let (percentages, literals, percentage_is_list) = if agg == "approx_percentile" {
        percentages(&format!("{at}.percentage"), raw.percentage.as_ref())?
    } else {
        (Vec::new(), Vec::new(), false)
    };
    let accuracy = match raw.accuracy {
        None => 10_000,
        Some(a) if (1..=i32::MAX as i64).contains(&a) => a as u32,
        Some(a) => {
            return Err(SpecError::new(
                format!("{at}.accuracy"),
                a.to_string(),
                "an integer in (0, 2147483647], as Spark (default 10000)",
            ));
        }
    };
    let rsd = match raw.rsd {
        None => 0.05,
        Some(r) if r.is_finite() && r > 0.0 && (4..=21).contains(&spark_hll_precision(r)) => r,
        Some(r) => {
            return Err(SpecError::new(
                format!("{at}.rsd"),
                r.show(),
                "a relative standard deviation with 0.00077 <= rsd < 0.39 (Spark refuses rsd >= 0.39: HLL++ precision ceil(2*log2(1.106/rsd)) must be >= 4; Eddy's sketch allows precision <= 21); default 0.05",
            ));
        }
    };
    let over = raw.over.as_deref().map(|o| duration(&format!("{at}.over"), o, Min::Positive)).transpose()?;
    let named = raw.named_as.as_deref().or(column.as_deref());
    let mut default_name = name_from_literals(&agg, named, &literals, percentage_is_list, accuracy);
    let called = agg_given.to_ascii_lowercase();
    if raw.sql
        && matches!(called.as_str(), "mean" | "approx_percentile")
        && let Some(open) = default_name.find('(')
    {
        default_name.replace_range(..open, &called);
    }
    let output_name = alias.clone().unwrap_or(default_name);
    let output_type = match input_type {
        None => DataType::Long,
        Some(t) => measure_output_type(&agg, t, percentage_is_list).ok_or_else(|| {
            SpecError::new(
                format!("{at}.column"),
                quote(column.as_deref().unwrap_or("")),
                "a column whose type this aggregate accepts",
            )
        })?,
    };
    Ok(MeasureSpec {
        agg,
        column,
        alias,
        percentages,
        percentage_is_list,
        accuracy,
        rsd,
        over,
        output_name,
        output_type,
        user: None,
        ignore_nulls: raw.ignore_nulls,
    })
}

/// A measure of a registered user aggregate: `agg`, `column` (required: the aggregator folds
/// one column's non-null values), `alias`, and `over` in a rolling window. Any input type; the
/// result type is the aggregator's for it; the default name is `name(column)`.
fn user_measure(
    at: &str,
    raw: RawMeasure,
    schema: &Schema,
    rolling: bool,
    user: UserAggregate,
) -> Result<MeasureSpec, SpecError> {
    let present = fields_present(&raw);
    let mut allowed = vec!["agg", "column", "alias"];
    if rolling {
        allowed.push("over");
    }
    let (kind, what) =
        if raw.over.is_some() && !rolling { ("window_aggregate", "query type") } else { (&*user.name, "agg") };
    only_fields(at, what, kind, &present, &allowed)?;
    let column = match raw.column.as_deref() {
        None | Some("*") => {
            return Err(SpecError::new(
                format!("{at}.column"),
                raw.column.as_deref().map_or_else(|| "nothing".to_string(), quote),
                format!("a column of the schema (a user aggregate folds one column): {}", schema.names()),
            ));
        }
        Some(c) => c.to_string(),
    };
    let i = super::validate::column(&format!("{at}.column"), &column, schema)?;
    let input_type = schema.fields()[i].data_type;
    let alias = match raw.alias {
        Some(a) if a.is_empty() => {
            return Err(SpecError::bad_str(format!("{at}.alias"), &a, "a non-empty column name"));
        }
        a => a,
    };
    let over = raw.over.as_deref().map(|o| duration(&format!("{at}.over"), o, Min::Positive)).transpose()?;
    let output_name = alias.clone().unwrap_or_else(|| format!("{}({column})", user.name));
    let output_type = user.aggregator.result_type(input_type);
    Ok(MeasureSpec {
        agg: user.name.clone(),
        column: Some(column),
        alias,
        percentages: Vec::new(),
        percentage_is_list: false,
        accuracy: 10_000,
        rsd: 0.05,
        over,
        output_name,
        output_type,
        user: Some(user),
        ignore_nulls: false,
    })
}

/// `percentage`: a number or a non-empty list of numbers, each in [0, 1]; default 0.5. Returns
/// the values, their Spark literal spellings (a TOML integer stays an integer literal, as the
/// oracle passes it to Spark) and whether it was a list.
fn percentages(field: &str, v: Option<&toml::Value>) -> Result<(Vec<f64>, Vec<String>, bool), SpecError> {
    let allowed = "a number in [0, 1] or a non-empty list of them, as Spark (default 0.5)";
    let one = |field: &str, v: &toml::Value| -> Result<(f64, String), SpecError> {
        let (p, literal) = match v {
            toml::Value::Float(f) => (*f, spark_double_literal(*f)),
            toml::Value::Integer(i) => (*i as f64, i.to_string()),
            other => return Err(SpecError::new(field, other.show(), allowed)),
        };
        if (0.0..=1.0).contains(&p) { Ok((p, literal)) } else { Err(SpecError::new(field, v.show(), allowed)) }
    };
    match v {
        None => Ok((vec![0.5], vec![spark_double_literal(0.5)], false)),
        Some(toml::Value::Array(a)) => {
            if a.is_empty() {
                return Err(SpecError::new(field, "[]", allowed));
            }
            let mut values = Vec::with_capacity(a.len());
            let mut literals = Vec::with_capacity(a.len());
            for (i, x) in a.iter().enumerate() {
                let (p, l) = one(&format!("{field}[{i}]"), x)?;
                values.push(p);
                literals.push(l);
            }
            Ok((values, literals, true))
        }
        Some(x) => {
            let (p, l) = one(field, x)?;
            Ok((vec![p], vec![l], false))
        }
    }
}
