//! Where the PromQL of `dashboards/` is found, and how it is made runnable: Grafana variables
//! substituted, alert conditions split into the signals they compare.

use serde_json::Value;

/// Grafana variables and what the test substitutes for them.
pub fn substitute(expr: &str, pipeline: &str, rate_interval: &str) -> String {
    expr.replace("$__rate_interval", rate_interval)
        .replace("$__interval", "1s")
        .replace("$__range", "1m")
        .replace("$pipeline", pipeline)
        // "All" partition actors.
        .replace("$partition", ".+")
}

/// Every PromQL expression of a Grafana dashboard: panel targets (`expr`), and query variables
/// (`label_values(metric, label)` becomes `group by (label) (metric)`).
pub fn dashboard_exprs(dashboard: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect(dashboard, &mut out);
    if let Some(vars) = dashboard.pointer("/templating/list").and_then(Value::as_array) {
        for v in vars {
            if v.get("type").and_then(Value::as_str) == Some("query")
                && let Some(def) = v.get("definition").and_then(Value::as_str)
            {
                out.push(label_values(def).unwrap_or_else(|| panic!("unsupported variable query {def:?}")));
            }
        }
    }
    out
}

fn collect(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("expr", Value::String(e)) => out.push(e.clone()),
                    ("templating", _) => {}
                    _ => collect(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect(x, out)),
        _ => {}
    }
}

/// `label_values(metric{sel}, label)` as PromQL.
fn label_values(def: &str) -> Option<String> {
    let inner = def.trim().strip_prefix("label_values(")?.strip_suffix(')')?;
    let (metric, label) = inner.rsplit_once(',')?;
    Some(format!("group by ({}) ({})", label.trim(), metric.trim()))
}

/// The `expr:` lines of an alert rule file (the file keeps each expression on one line).
pub fn alert_exprs(yaml: &str) -> Vec<String> {
    yaml.lines().filter_map(|l| l.trim().strip_prefix("expr:")).map(|e| e.trim().to_string()).collect()
}

/// Positions of `needle` in `s` outside parentheses, braces, brackets and quotes.
fn top_level(s: &str, needle: &str) -> Vec<usize> {
    let bytes = s.as_bytes();
    let (mut depth, mut quoted, mut found) = (0i32, false, Vec::new());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if quoted {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                quoted = false;
            }
        } else {
            match c {
                b'"' => quoted = true,
                b'(' | b'{' | b'[' => depth += 1,
                b')' | b'}' | b']' => depth -= 1,
                _ if depth == 0 && s[i..].starts_with(needle) => found.push(i),
                _ => {}
            }
        }
        i += 1;
    }
    found
}

/// The signals an alert condition compares: split on top-level `and` / `or` / `unless`, then
/// each part without its top-level comparison (`signal > threshold` gives `signal`).
pub fn alert_signals(expr: &str) -> Vec<String> {
    let mut parts = vec![expr.to_string()];
    for op in [" and ", " or ", " unless "] {
        parts = parts
            .into_iter()
            .flat_map(|p| {
                let mut cuts = top_level(&p, op);
                cuts.push(p.len());
                let mut start = 0;
                let mut pieces = Vec::new();
                for c in cuts {
                    pieces.push(p[start..c].trim().to_string());
                    start = (c + op.len()).min(p.len());
                }
                pieces
            })
            .collect();
    }
    parts
        .into_iter()
        .map(|p| {
            let cut = [" == ", " != ", " >= ", " <= ", " > ", " < "]
                .iter()
                .filter_map(|op| top_level(&p, op).first().copied())
                .min();
            match cut {
                Some(c) => p[..c].trim().to_string(),
                None => p,
            }
        })
        .collect()
}

#[test]
fn signals_drop_the_comparison_and_split_on_and() {
    assert_eq!(alert_signals("up{job=\"eddy\"} == 0"), vec!["up{job=\"eddy\"}"]);
    assert_eq!(alert_signals("deriv(x[10m]) > 0 and x > 10000"), vec!["deriv(x[10m])".to_string(), "x".to_string()]);
    assert_eq!(
        alert_signals("histogram_quantile(0.99, sum by (le) (rate(h{a=\"x > 1\"}[5m]))) > 0.1"),
        vec!["histogram_quantile(0.99, sum by (le) (rate(h{a=\"x > 1\"}[5m])))"]
    );
}

#[test]
fn variables_are_substituted_and_label_values_become_promql() {
    let e = substitute("rate(a{pipeline=~\"$pipeline\", partition=~\"$partition\"}[$__rate_interval])", "p", "5s");
    assert_eq!(e, "rate(a{pipeline=~\"p\", partition=~\".+\"}[5s])");
    assert_eq!(
        label_values("label_values(m{x=\"1\"}, partition)").as_deref(),
        Some("group by (partition) (m{x=\"1\"})")
    );
}
