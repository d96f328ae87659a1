//! Spark's default output names of measures (checked with Spark 4.3, see the tests).

use super::{AggKind, AggregateFn};

impl AggregateFn {
    /// The column name Spark gives this measure when it has no alias: the function name as the
    /// user wrote it, lower-cased (Spark keeps the alias called: `stddev(x)`, `std(x)`,
    /// `variance(x)`, `mean(x)`, `percentile_approx(...)` / `approx_percentile(...)`), then the
    /// column. `count(*)` is `count(1)`; `approx_count_distinct` omits its `rsd`
    /// (`approx_count_distinct(v)`); `approx_percentile` prints its percentage (Java's
    /// `Double.toString`, or `array(p1, p2)` for a list) and accuracy:
    /// `percentile_approx(v, 0.5, 10000)`. A user aggregate is `name(column)`.
    ///
    /// `called` is the `agg` of the pipeline file; `column` the input column's name (ignored for
    /// `count(*)`; `None` prints as `1`).
    pub fn default_name(&self, called: &str, column: Option<&str>) -> String {
        let col = column.unwrap_or("1");
        let called = called.to_ascii_lowercase();
        match &self.kind {
            AggKind::CountStar => "count(1)".to_string(),
            AggKind::ApproxPercentile { percentages, list, accuracy } => {
                let p = if *list {
                    let items: Vec<String> = percentages.iter().map(|&p| java_double(p)).collect();
                    format!("array({})", items.join(", "))
                } else {
                    percentages.first().map_or_else(String::new, |&p| java_double(p))
                };
                format!("{called}({col}, {p}, {accuracy})")
            }
            AggKind::User(u) => format!("{}({col})", u.name()),
            _ => format!("{called}({col})"),
        }
    }
}

/// A double as Java's `Double.toString` prints it (Spark prints double literals so): plain
/// decimal with at least one fractional digit for magnitudes in [1e-3, 1e7), else
/// `d.dddE[-]n`; the shortest digits that read back to the same double.
pub(crate) fn java_double(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    let a = x.abs();
    if a == 0.0 || (1e-3..1e7).contains(&a) {
        // Rust's Debug prints the shortest round-trip digits, with ".0" for integral values,
        // and in plain notation over this range.
        return format!("{x:?}");
    }
    let e = format!("{x:e}"); // e.g. "1.5e-4", "1e-4"
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let mantissa = if mantissa.contains('.') { mantissa.to_string() } else { format!("{mantissa}.0") };
    format!("{mantissa}E{exp}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::{AggParams, Percentage};
    use crate::schema::DataType;

    fn name(agg: &str, col: Option<&str>, params: AggParams) -> String {
        let input = col.map(|_| (0, DataType::Long));
        AggregateFn::from_name(agg, input, &params).unwrap().default_name(agg, col)
    }

    // Expected names were printed by Spark 4.3 (pyspark `df.agg(...).columns` and
    // `spark.sql("select ...").columns`).
    #[test]
    fn names_are_sparks() {
        let none = AggParams::default;
        assert_eq!(name("count", None, none()), "count(1)");
        assert_eq!(name("count", Some("v"), none()), "count(v)");
        assert_eq!(name("sum", Some("amount"), none()), "sum(amount)");
        assert_eq!(name("avg", Some("price"), none()), "avg(price)");
        assert_eq!(name("mean", Some("x"), none()), "mean(x)");
        assert_eq!(name("std", Some("x"), none()), "std(x)");
        assert_eq!(name("stddev", Some("x"), none()), "stddev(x)");
        assert_eq!(name("stddev_samp", Some("x"), none()), "stddev_samp(x)");
        assert_eq!(name("stddev_pop", Some("x"), none()), "stddev_pop(x)");
        assert_eq!(name("variance", Some("x"), none()), "variance(x)");
        assert_eq!(name("var_samp", Some("x"), none()), "var_samp(x)");
        assert_eq!(name("var_pop", Some("x"), none()), "var_pop(x)");
        assert_eq!(name("MIN", Some("s"), none()), "min(s)");
        assert_eq!(
            name("approx_count_distinct", Some("v"), AggParams { rsd: Some(0.01), ..none() }),
            "approx_count_distinct(v)"
        );
        let p = |p: Percentage, accuracy: Option<i64>| AggParams { percentage: Some(p), accuracy, ..none() };
        assert_eq!(
            name("percentile_approx", Some("v"), p(Percentage::One(0.5), None)),
            "percentile_approx(v, 0.5, 10000)"
        );
        assert_eq!(
            name("approx_percentile", Some("v"), p(Percentage::List(vec![0.25, 0.5]), Some(100))),
            "approx_percentile(v, array(0.25, 0.5), 100)"
        );
        // Upper-case calls print lower-cased; doubles print as Java's Double.toString, as
        // pyspark's `F.percentile_approx("v", 0.0001)` does (SQL prints a decimal literal as
        // written, `0.0001`: the pipeline gives a number, not a literal, so Eddy follows pyspark).
        assert_eq!(name("COUNT", Some("v"), none()), "count(v)");
        assert_eq!(name("Mean", Some("x"), none()), "mean(x)");
        assert_eq!(
            name("percentile_approx", Some("v"), p(Percentage::One(0.0001), None)),
            "percentile_approx(v, 1.0E-4, 10000)"
        );
        assert_eq!(
            name("percentile_approx", Some("v"), p(Percentage::List(vec![0.0, 1.0]), Some(50))),
            "percentile_approx(v, array(0.0, 1.0), 50)"
        );
    }

    #[test]
    fn doubles_print_as_java_does() {
        assert_eq!(java_double(0.5), "0.5");
        assert_eq!(java_double(1.0), "1.0");
        assert_eq!(java_double(0.0), "0.0");
        assert_eq!(java_double(0.001), "0.001");
        assert_eq!(java_double(0.0001), "1.0E-4");
        assert_eq!(java_double(0.00015), "1.5E-4");
        assert_eq!(java_double(1.0e7), "1.0E7");
    }
}
