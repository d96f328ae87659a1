//! A user aggregate that panics (a bug in user code): its panic is not caught per record as a
//! UDF's is, so the partition actor running it stops; the run must then fail (exit 1, naming
//! the panic) in both modes rather than wait for that actor forever.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use eddy::{Aggregator, DataType, Job, Registry, Value};

/// A sum of BIGINT values that panics on the value 9.
#[derive(Debug)]
struct PanicsOnNine;

impl Aggregator for PanicsOnNine {
    fn name(&self) -> &str {
        "panics_on_nine"
    }
    fn result_type(&self, _input: DataType) -> DataType {
        DataType::Long
    }
    fn zero(&self) -> Value {
        Value::Long(0)
    }
    fn reduce(&self, state: &mut Value, input: &Value) {
        if let (Value::Long(s), Value::Long(x)) = (&mut *state, input) {
            assert!(*x != 9, "nine is not summed");
            *s += x;
        }
    }
    fn merge(&self, state: &mut Value, other: &Value) {
        if let (Value::Long(s), Value::Long(x)) = (&mut *state, other) {
            *s += x;
        }
    }
    fn finish(&self, state: &Value) -> Value {
        state.clone()
    }
}

fn run_until_it_ends(mode: &str) -> Result<eddy::RunSummary, eddy::Error> {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    std::fs::create_dir(&input).unwrap();
    std::fs::write(
        input.join("000.json"),
        "{\"k\": \"a\", \"v\": 1, \"ts\": \"2024-01-01T00:00:01Z\"}\n\
         {\"k\": \"a\", \"v\": 9, \"ts\": \"2024-01-01T00:00:02Z\"}\n\
         {\"k\": \"b\", \"v\": 2, \"ts\": \"2024-01-01T00:00:03Z\"}\n",
    )
    .unwrap();
    let toml = format!(
        r#"
name = "udaf-panic"
mode = "{mode}"
parallelism = 2
[source]
type = "files"
path = "{input}"
format = "json"
schema = "k STRING, v BIGINT, ts TIMESTAMP"
[query]
sql = "SELECT k, panics_on_nine(v) AS s FROM source GROUP BY k"
[sink]
type = "files"
path = "{out}"
"#,
        input = input.display(),
        out = tmp.path().join("out").display()
    );
    let mut registry = Registry::new();
    registry.register_udaf("panics_on_nine", Arc::new(PanicsOnNine)).unwrap();
    let job = Job::from_toml_in(&toml, &registry).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(job.run());
        drop(tmp);
    });
    // a liveness bound, not a speed check: the run ends within a second when it does end
    rx.recv_timeout(Duration::from_secs(120)).unwrap_or_else(|_| panic!("{mode}: the run did not end"))
}

#[test]
fn a_panicking_user_aggregate_fails_the_run_in_both_modes() {
    for mode in ["micro-batch", "real-time"] {
        let e = run_until_it_ends(mode).err().unwrap_or_else(|| panic!("{mode}: the run succeeded"));
        assert_eq!(e.exit_code(), 1, "{mode}: {e}");
        assert!(e.to_string().contains("nine is not summed"), "{mode}: {e}");
    }
}
