//! `--set FIELD=VALUE` overrides, applied to the TOML table before deserialization.

use super::error::{SpecError, quote};
use super::parse::{Step, path_string, render};

const FIELD_ALLOWED: &str = "FIELD=VALUE, FIELD a dotted path of keys [A-Za-z0-9_-] with optional [index] (e.g. source.path, query.measures[0].alias)";

/// Splits one `--set` argument `FIELD=VALUE` at its first `=` (the CLI's helper).
///
/// # Errors
/// A [`SpecError`] with `field = "--set"` when there is no `=` or FIELD is empty.
pub fn parse_set_arg(arg: &str) -> Result<(String, String), SpecError> {
    match arg.split_once('=') {
        Some((field, value)) if !field.trim().is_empty() => Ok((field.trim().to_string(), value.to_string())),
        _ => Err(SpecError::new("--set", quote(arg), FIELD_ALLOWED)),
    }
}

/// Parses `a.b[1].c` into steps.
fn parse_field(field: &str) -> Result<Vec<Step>, SpecError> {
    let bad = || SpecError::new("--set", quote(field), FIELD_ALLOWED);
    let mut steps = Vec::new();
    for part in field.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(bad());
        }
        steps.push(Step::Key(key.to_string()));
        while !rest.is_empty() {
            let close = rest.find(']').ok_or_else(bad)?;
            let index: usize = rest[1..close].parse().map_err(|_| bad())?;
            steps.push(Step::Index(index));
            rest = &rest[close + 1..];
            if !rest.is_empty() && !rest.starts_with('[') {
                return Err(bad());
            }
        }
    }
    Ok(steps)
}

/// The value of `--set FIELD=VALUE`: a TOML value when VALUE parses as one (except date-times,
/// kept as strings since pipeline files write timestamps as strings), else the string VALUE.
fn parse_value(value: &str) -> toml::Value {
    match value.trim().parse::<toml::Value>() {
        Ok(toml::Value::Datetime(_)) | Err(_) => toml::Value::String(value.to_string()),
        Ok(v) => v,
    }
}

/// An empty value for a missing key on the way: an array when an index follows it
/// (`sink.select[0]` on a sink without `select`), else a table.
fn container_for(next: Option<&Step>) -> toml::Value {
    match next {
        Some(Step::Index(_)) => toml::Value::Array(Vec::new()),
        _ => toml::Value::Table(toml::Table::new()),
    }
}

/// Sets `field` to `value` in `table`, creating missing tables (and arrays, before an index) on
/// the way; an index one past an array's end appends to it. Returns the path set.
pub(crate) fn apply(table: &mut toml::Table, field: &str, value: &str) -> Result<Vec<Step>, SpecError> {
    let steps = parse_field(field)?;
    let new = parse_value(value);
    let through = |upto: usize, v: &toml::Value, what: &str| {
        SpecError::new(
            path_string(&steps[..upto]),
            format!("{} (--set {field}=... goes through it)", render(v)),
            what.to_string(),
        )
    };
    let mut cur: &mut toml::Value = {
        // The root is a table: walk its first key by hand so every later step is uniform.
        let Some(Step::Key(first)) = steps.first() else {
            return Err(SpecError::new("--set", quote(field), FIELD_ALLOWED));
        };
        if steps.len() == 1 {
            table.insert(first.clone(), new);
            return Ok(steps);
        }
        table.entry(first.clone()).or_insert_with(|| container_for(steps.get(1)))
    };
    for (i, step) in steps.iter().enumerate().skip(1) {
        let last = i + 1 == steps.len();
        match step {
            Step::Key(k) => {
                if let Some(a) = cur.as_array() {
                    // `[[source]]` tables: one is picked by its index, `source[0].path`
                    let at = path_string(&steps[..i]);
                    let rest: Vec<String> = steps[i..]
                        .iter()
                        .map(|s| match s {
                            Step::Key(k) => format!(".{k}"),
                            Step::Index(n) => format!("[{n}]"),
                        })
                        .collect();
                    let what = format!(
                        "a table; {at} is an array of {} tables here, so name one by its index: --set {at}[0]{}=...",
                        a.len(),
                        rest.concat()
                    );
                    return Err(through(i, cur, &what));
                }
                if !cur.is_table() {
                    return Err(through(i, cur, "a table"));
                }
                let t = cur.as_table_mut().expect("checked above");
                if last {
                    t.insert(k.clone(), new);
                    return Ok(steps);
                }
                cur = t.entry(k.clone()).or_insert_with(|| container_for(steps.get(i + 1)));
            }
            Step::Index(idx) => {
                let len = match cur.as_array() {
                    Some(a) => a.len(),
                    None => return Err(through(i, cur, "an array")),
                };
                if *idx > len {
                    return Err(through(i + 1, cur, &format!("an index up to {len} ({len} appends)")));
                }
                let a = cur.as_array_mut().expect("checked above");
                if *idx == len {
                    a.push(if last { new.clone() } else { container_for(steps.get(i + 1)) });
                    if last {
                        return Ok(steps);
                    }
                }
                if last {
                    a[*idx] = new;
                    return Ok(steps);
                }
                cur = &mut a[*idx];
            }
        }
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_through_an_array_of_tables_says_to_name_one_by_index() {
        let mut t: toml::Table = toml::from_str("[[source]]\nname = \"a\"\n[[source]]\nname = \"b\"\n").unwrap();
        let e = apply(&mut t, "source.path", "in/").unwrap_err();
        assert_eq!(e.field, "source");
        assert!(e.allowed.contains("--set source[0].path=..."), "{}", e.allowed);
        assert!(e.allowed.contains("array of 2 tables"), "{}", e.allowed);
        apply(&mut t, "source[1].path", "in/").unwrap();
        assert_eq!(t["source"][1]["path"].as_str(), Some("in/"));
    }

    #[test]
    fn set_arg_splits_at_first_equals() {
        assert_eq!(parse_set_arg("a.b=x=y").unwrap(), ("a.b".into(), "x=y".into()));
        assert_eq!(parse_set_arg("noequals").unwrap_err().field, "--set");
        assert_eq!(parse_set_arg("=v").unwrap_err().field, "--set");
    }

    #[test]
    fn value_is_toml_when_it_parses_else_string() {
        assert_eq!(parse_value("5"), toml::Value::Integer(5));
        assert_eq!(parse_value("true"), toml::Value::Boolean(true));
        assert_eq!(parse_value("0.25"), toml::Value::Float(0.25));
        assert_eq!(parse_value("\"q\""), toml::Value::String("q".into()));
        assert_eq!(parse_value("in/"), toml::Value::String("in/".into()));
        assert_eq!(parse_value("1 second"), toml::Value::String("1 second".into()));
        assert_eq!(parse_value("2024-01-15T12:00:00Z"), toml::Value::String("2024-01-15T12:00:00Z".into()));
        let arr = parse_value("[\"a\", \"b\"]");
        assert_eq!(arr.as_array().map(|a| a.len()), Some(2));
        let t = parse_value("{ delay = \"1 second\" }");
        assert_eq!(t.get("delay").and_then(|v| v.as_str()), Some("1 second"));
    }

    #[test]
    fn apply_creates_missing_tables_and_indexes_arrays() {
        let mut t: toml::Table = "a = 1\n[q]\nm = [{ x = 1 }, { x = 2 }]\n".parse().unwrap();
        apply(&mut t, "new.deep.key", "v").unwrap();
        assert_eq!(t["new"]["deep"]["key"].as_str(), Some("v"));
        apply(&mut t, "q.m[1].x", "7").unwrap();
        assert_eq!(t["q"]["m"][1]["x"].as_integer(), Some(7));
        apply(&mut t, "a", "2").unwrap();
        assert_eq!(t["a"].as_integer(), Some(2));
    }

    #[test]
    fn apply_creates_a_missing_array_and_appends_one_past_its_end() {
        // a sink without `select`: `--set sink.select[0]=...` gives it one
        let mut t: toml::Table = "[sink]\ntype = \"stdout\"\n[q]\nm = [{ x = 1 }]\n".parse().unwrap();
        apply(&mut t, "sink.select[0]", "id").unwrap();
        apply(&mut t, "sink.select[1]", "v * 2 AS v2").unwrap();
        let select: Vec<&str> = t["sink"]["select"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
        assert_eq!(select, ["id", "v * 2 AS v2"]);
        apply(&mut t, "q.m[1].x", "2").unwrap();
        assert_eq!(t["q"]["m"][1]["x"].as_integer(), Some(2));
        apply(&mut t, "new[0].k", "v").unwrap();
        assert_eq!(t["new"][0]["k"].as_str(), Some("v"));
        // past the end by more than one: refused, naming the index
        let e = apply(&mut t, "sink.select[5]", "x").unwrap_err();
        assert_eq!(e.field, "sink.select[5]");
        assert!(e.allowed.contains("an index up to 2"), "{e}");
    }

    #[test]
    fn apply_refuses_paths_through_scalars_and_bad_indexes() {
        let mut t: toml::Table = "a = 1\nm = [1]\n".parse().unwrap();
        assert_eq!(apply(&mut t, "a.b", "v").unwrap_err().field, "a");
        assert_eq!(apply(&mut t, "m[3]", "v").unwrap_err().field, "m[3]");
        assert_eq!(apply(&mut t, "a..b", "v").unwrap_err().field, "--set");
        assert_eq!(apply(&mut t, "m[x]", "v").unwrap_err().field, "--set");
    }
}
