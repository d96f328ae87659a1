//! Arbitrary text as a pipeline's `[query] sql` (and, split at the first NUL byte, as a source
//! `filter`) through the SQL front end, the query planner and the pipeline validator, then the
//! query plan: Ok or Err, never a panic; a pipeline that validates must plan.
#![no_main]

use libfuzzer_sys::fuzz_target;

const TEMPLATE: &str = r#"name = "fuzz"
mode = "micro-batch"
[source]
name = "events"
type = "files"
path = "in"
schema = "user_id STRING, amount BIGINT, price DOUBLE, ok BOOLEAN, ts TIMESTAMP, d DECIMAL(10, 2)"
FILTER
[watermark]
column = "ts"
delay = "10 seconds"
[query]
sql = '''
QUERY
'''
output_mode = "append"
[sink]
type = "files"
path = "out"
"#;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (query, filter) = text.split_once('\0').unwrap_or((text, ""));
    // the texts go into TOML literal strings: they cannot hold the string's own delimiters
    if query.contains("'''") || filter.contains('\'') || filter.contains('\n') {
        return;
    }
    let filter = if filter.is_empty() { String::new() } else { format!("filter = '{filter}'") };
    let pipeline = TEMPLATE.replace("QUERY", query).replace("FILTER", &filter);
    if let Ok(p) = eddy_sql::parse_pipeline_str(&pipeline) {
        let _schema = p.output_schema();
        let plan = eddy_engine::plan::QueryPlan::new(&p);
        assert!(plan.is_ok(), "valid pipeline does not plan: {plan:?}\n{pipeline}");
    }
});
