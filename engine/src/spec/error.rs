//! [`SpecError`]: what is wrong with a pipeline file, as field path, given value and allowed values.

/// A pipeline file (or a `--set` override) that cannot be run: it names the field, what was given
/// and what is allowed. The CLI prints it and exits 2 (PIPELINE.md "The command").
///
/// `field` is a path into the file: `"query.window.size"`, `"query.measures[1].agg"`; for a TOML
/// syntax error it is `"line L, column C"`; for a file that cannot be read, the file's path.
/// `given` is the value as written in TOML (strings quoted), `nothing` for a missing field, and
/// for errors found while reading the TOML it ends with the position, `(line L, column C)`.
///
/// Displayed as `query.window.size: given "0 seconds"; allowed: a duration > 0 (e.g. "10 seconds")`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: given {given}; allowed: {allowed}")]
pub struct SpecError {
    /// Path of the field in the pipeline file, e.g. `query.measures[1].agg`.
    pub field: String,
    /// What the file gave there (TOML spelling), or `nothing`.
    pub given: String,
    /// What would be accepted there.
    pub allowed: String,
}

impl SpecError {
    /// An error at `field`: `given` (already in TOML spelling), `allowed`.
    pub fn new(field: impl Into<String>, given: impl Into<String>, allowed: impl Into<String>) -> SpecError {
        SpecError { field: field.into(), given: given.into(), allowed: allowed.into() }
    }

    /// A required field that is missing.
    pub fn missing(field: impl Into<String>, allowed: impl Into<String>) -> SpecError {
        SpecError::new(field, "nothing", allowed)
    }

    /// A string value that is not allowed; `given` is quoted as TOML would write it.
    pub fn bad_str(field: impl Into<String>, given: &str, allowed: impl Into<String>) -> SpecError {
        SpecError::new(field, quote(given), allowed)
    }
}

/// A string quoted for messages: `"text"` with `"`, `\` and control characters escaped (the JSON
/// escapes of [`crate::output::write_string`], which TOML basic strings read the same way).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    crate::output::write_string(&mut out, s);
    out
}

/// A list of names as `a, b, c` (for `allowed`).
pub fn list(names: &[&str]) -> String {
    names.join(", ")
}

/// 1-based line and column (in characters) of the byte offset `at` in `text`.
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let mut line = 1;
    let mut col = 1;
    for (i, c) in text.char_indices() {
        if i >= at {
            break;
        }
        if c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_field_given_and_allowed() {
        let e = SpecError::bad_str("query.window.size", "0 seconds", "a duration > 0 (e.g. \"10 seconds\")");
        assert_eq!(
            e.to_string(),
            "query.window.size: given \"0 seconds\"; allowed: a duration > 0 (e.g. \"10 seconds\")"
        );
    }

    #[test]
    fn quote_escapes_like_toml() {
        assert_eq!(quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
    }

    #[test]
    fn line_col_counts_from_one() {
        let t = "ab\ncd\né";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 4), (2, 2));
        assert_eq!(line_col(t, 6), (3, 1));
        assert_eq!(line_col(t, 100), (3, 2));
    }
}
