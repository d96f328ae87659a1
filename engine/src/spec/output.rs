//! The output schema (SEMANTICS.md): column names and types in order, with Spark's default measure
//! names and result types.
//!
//! Checked against pyspark 4.3.0 (`df.agg(...)` column names and `schema.simpleString()`):
//!
//! | measure | Spark's name | Spark's type |
//! |---|---|---|
//! | `count(*)` (`F.count(F.lit(1))`, `F.count("*")`) | `count(1)` | BIGINT |
//! | `count(v)` | `count(v)` | BIGINT |
//! | `sum(v)` | `sum(v)` | BIGINT for INT / BIGINT, DOUBLE for FLOAT / DOUBLE |
//! | `avg(v)`, `mean(v)` (`F.mean` is `F.avg`, as the oracle calls it) | `avg(v)` | DOUBLE |
//! | `min(v)`, `max(v)` | `min(v)`, `max(v)` | the input type |
//! | `stddev`, `stddev_samp`, `stddev_pop`, `variance`, `var_samp`, `var_pop` | `stddev(v)`, ... (the name as called) | DOUBLE |
//! | `approx_count_distinct(v[, rsd])` | `approx_count_distinct(v)` (rsd not shown) | BIGINT |
//! | `percentile_approx(v, 0.5, 10000)` | `percentile_approx(v, 0.5, 10000)` | the input type |
//! | `percentile_approx(v, [0.25, 0.5], 10000)` | `percentile_approx(v, array(0.25, 0.5), 10000)` | ARRAY of the input type |
//!
//! Spark names a session window column `session_window`; the oracle (and so Eddy) aliases every
//! window column to `window`.

use super::QuerySpec;
use super::error::quote;
use crate::schema::{DataType, Field, Schema};

/// Spark's default output name of a measure (see the table in this module's source docs):
/// `count(1)` for count(*), `avg(x)` for mean, `percentile_approx(x, P, ACCURACY)` for
/// approx_percentile with P a Spark double literal ([`spark_double_literal`]) or
/// `array(P1, P2, ...)` for a list, `f(x)` otherwise. `agg` is the canonical lower-case name.
///
/// A percentage written in the pipeline file as a TOML integer (`percentage = 1`) is an integer
/// literal for Spark and prints as `1`, not `1.0` (pyspark checked); the validated
/// [`super::MeasureSpec::output_name`] takes that into account, this function does not.
pub fn default_measure_name(
    agg: &str,
    column: Option<&str>,
    percentages: &[f64],
    percentage_is_list: bool,
    accuracy: u32,
) -> String {
    let literals: Vec<String> = percentages.iter().map(|p| spark_double_literal(*p)).collect();
    name_from_literals(agg, column, &literals, percentage_is_list, accuracy)
}

/// [`default_measure_name`] with the percentages already spelled as Spark literals.
pub(crate) fn name_from_literals(
    agg: &str,
    column: Option<&str>,
    percentages: &[String],
    percentage_is_list: bool,
    accuracy: u32,
) -> String {
    let col = column.unwrap_or("1");
    match agg {
        "mean" => format!("avg({col})"),
        "approx_percentile" | "percentile_approx" => {
            let p = percentages.join(", ");
            let p = if percentage_is_list { format!("array({p})") } else { p };
            format!("percentile_approx({col}, {p}, {accuracy})")
        }
        other => format!("{other}({col})"),
    }
}

/// A double as Spark prints a double literal in a column name (Java's `Double.toString`):
/// `0.5`, `1.0`, `0.0`; below 10^-3 or from 10^7 on, scientific: `1.0E-4`, `1.0E7`.
pub fn spark_double_literal(x: f64) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN".into()
        } else if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let a = x.abs();
    if (1e-3..1e7).contains(&a) {
        let s = x.to_string();
        if s.contains('.') { s } else { format!("{s}.0") }
    } else {
        // Rust's `{:e}` gives the shortest digits as `1.5e-5` / `1e-5`.
        let s = format!("{x:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = if mantissa.contains('.') { mantissa.to_string() } else { format!("{mantissa}.0") };
        format!("{mantissa}E{exp}")
    }
}

/// Spark's result type of `agg` over a column of type `input` (`percentage_is_list`: an
/// approx_percentile with a list of percentages). `None` when the function does not take that
/// type (validation refuses it first): sum / avg / stddev / variance need a numeric column,
/// approx_percentile a numeric or TIMESTAMP one; min / max take every column type (BOOLEAN
/// too, false < true, as Spark). Spark 4.3 also accepts a STRING column for sum / avg / the
/// stddev family / approx_percentile (cast to DOUBLE, failing the query on a non-numeric value)
/// and a TIMESTAMP one for sum / avg (as seconds); a structured measure refuses those
/// (SEMANTICS.md lists numeric input), while the SQL planner casts a STRING input of these
/// functions to DOUBLE before the measure, as Spark SQL does (`sql_query::numeric_of_string`).
pub fn measure_output_type(agg: &str, input: DataType, percentage_is_list: bool) -> Option<DataType> {
    match agg {
        "count" | "approx_count_distinct" => Some(DataType::Long),
        "sum" => match input {
            DataType::Int | DataType::Long => Some(DataType::Long),
            DataType::Float | DataType::Double => Some(DataType::Double),
            DataType::Decimal { precision, scale } => {
                let (precision, scale) = crate::decimal::sum_type((precision, scale));
                Some(DataType::Decimal { precision, scale })
            }
            _ => None,
        },
        "avg" | "mean" if input.decimal().is_some() => {
            let (precision, scale) = crate::decimal::avg_type(input.decimal()?);
            Some(DataType::Decimal { precision, scale })
        }
        "avg" | "mean" | "stddev" | "std" | "stddev_samp" | "stddev_pop" | "variance" | "var_samp" | "var_pop" => {
            input.is_numeric().then_some(DataType::Double)
        }
        "max_by" | "min_by" => crate::aggregate::by_value_type(input),
        "min" | "max" | "first" | "first_value" | "last" | "last_value" | "any_value" => match input {
            DataType::Window | DataType::Array(_) => None,
            t => Some(t),
        },
        "approx_percentile" | "percentile_approx" => {
            if !(input.is_numeric() || input == DataType::Timestamp) || input.decimal().is_some() {
                None
            } else if percentage_is_list {
                input.array_of()
            } else {
                Some(input)
            }
        }
        _ => None,
    }
}

/// The output columns in order, each with the path of the field that introduced it (for errors).
pub(crate) fn output_columns(q: &QuerySpec, schema: &Schema) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let measures = |ms: &[super::MeasureSpec], out: &mut Vec<(String, String)>| {
        for (i, m) in ms.iter().enumerate() {
            let at =
                if m.alias.is_some() { format!("query.measures[{i}].alias") } else { format!("query.measures[{i}]") };
            out.push((m.output_name.clone(), at));
        }
    };
    match q {
        QuerySpec::WindowAggregate { group_by, window, measures: ms, .. } => {
            if window.is_some() {
                out.push(("window".to_string(), "query.window".to_string()));
            }
            for (i, g) in group_by.iter().enumerate() {
                out.push((g.clone(), format!("query.group_by[{i}]")));
            }
            measures(ms, &mut out);
        }
        QuerySpec::RollingWindow { partition_by, frontier_alias, measures: ms, .. } => {
            for (i, p) in partition_by.iter().enumerate() {
                out.push((p.clone(), format!("query.partition_by[{i}]")));
            }
            out.push((frontier_alias.clone(), "query.frontier.alias".to_string()));
            measures(ms, &mut out);
        }
        QuerySpec::StreamJoin(j) => {
            for f in &schema.fields()[j.output_columns()] {
                out.push((f.name.clone(), format!("query.sql ({})", quote(&f.name))));
            }
        }
        QuerySpec::Processor(q) => {
            for f in q.processor.output() {
                out.push((f.name.clone(), format!("query.name ({})", quote(&q.name))));
            }
        }
        QuerySpec::Deduplicate { .. } | QuerySpec::Forward => {
            for f in schema.fields() {
                out.push((f.name.clone(), format!("source.schema ({})", quote(&f.name))));
            }
        }
    }
    out
}

/// The output schema of `q` over input `schema` (SEMANTICS.md): window aggregate: `window`
/// ([`DataType::Window`]) if a window, the `group_by` columns with their input types, the
/// measures; rolling window: the `partition_by` columns, the frontier column (TIMESTAMP), the
/// measures; deduplicate and forward: the input schema; processor: its declared output.
pub(crate) fn output_schema(q: &QuerySpec, schema: &Schema) -> Vec<Field> {
    let input = |name: &str| Field {
        name: name.to_string(),
        data_type: schema.resolve(name).map_or(DataType::String, |i| schema.fields()[i].data_type),
    };
    let measure = |m: &super::MeasureSpec| Field { name: m.output_name.clone(), data_type: m.output_type };
    match q {
        QuerySpec::WindowAggregate { group_by, window, measures, .. } => {
            let mut out = Vec::with_capacity(group_by.len() + measures.len() + 1);
            if window.is_some() {
                out.push(Field { name: "window".into(), data_type: DataType::Window });
            }
            out.extend(group_by.iter().map(|g| input(g)));
            out.extend(measures.iter().map(measure));
            out
        }
        QuerySpec::RollingWindow { partition_by, frontier_alias, measures, .. } => {
            let mut out: Vec<Field> = partition_by.iter().map(|p| input(p)).collect();
            out.push(Field { name: frontier_alias.clone(), data_type: DataType::Timestamp });
            out.extend(measures.iter().map(measure));
            out
        }
        QuerySpec::Deduplicate { .. } | QuerySpec::Forward => schema.fields().to_vec(),
        QuerySpec::StreamJoin(j) => schema.fields()[j.output_columns()].to_vec(),
        QuerySpec::Processor(q) => q.processor.output().to_vec(),
    }
}
