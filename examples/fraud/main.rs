//! A fraud detector written on the `eddy` library: a stateful processor registered by name,
//! reached from a pipeline file (`[query] type = "processor"`), and a forEach sink that prints
//! its alerts.
//!
//! Per card: an alert when 3 payments over 500 arrive within 60 seconds; the card's state is
//! cleared by a processing-time timer 10 minutes after its last payment (`processor.rs` has the
//! rules and why processing time).
//!
//! ```text
//! cargo run --release --example fraud                       # the bundled payments, alerts printed
//! cargo run --release --example fraud -- run PIPELINE.toml [--no-progress] [--set FIELD=VALUE]...
//! ```
//!
//! The second form runs any pipeline file with the fraud processors registered (`fraud`: its
//! timer in processing time; `fraud_event_time`: in event time), as `eddy run` would (exit 2: a
//! wrong pipeline file; 1: a failure while running); `scripts/crash-test.sh` runs it so (`EDDY`
//! set to this example's binary).

use std::process::ExitCode;

use eddy::{ForeachWriter, Job, Registry, RowView, Schema, TimeDomain, WriterError};

mod processor;
use processor::Fraud;

/// The fraud processors by name.
fn registry() -> Registry {
    let output = Schema::parse_ddl(processor::OUTPUT).expect("the output schema is a valid constant");
    let mut registry = Registry::new();
    registry.register_processor("fraud", output.clone(), || Box::new(Fraud::new(TimeDomain::ProcessingTime)));
    registry.register_processor("fraud_event_time", output, || Box::new(Fraud::new(TimeDomain::EventTime)));
    registry
}

/// Prints each alert as a JSON line (the cleared cards are not printed).
struct PrintAlerts;

impl ForeachWriter for PrintAlerts {
    fn open(&mut self, _partition: usize, _epoch: u64) -> Result<bool, WriterError> {
        Ok(true)
    }

    fn process(&mut self, row: RowView<'_>) -> Result<(), WriterError> {
        let json = row.to_json();
        if json.contains(r#""event": "alert""#) {
            #[allow(clippy::print_stdout)] // the example's output
            {
                println!("{json}");
            }
        }
        Ok(())
    }

    fn close(&mut self, _error: Option<&str>) {}
}

#[allow(clippy::print_stderr)] // the example's error output
fn fail(e: &eddy::Error) -> ExitCode {
    eprintln!("fraud: {e}");
    ExitCode::from(e.exit_code())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.split_first() {
        None => {
            let pipeline = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/fraud/pipeline.toml");
            Job::from_file_in(pipeline, &registry())
                .map(|job| job.foreach("alerts", || Box::new(PrintAlerts) as Box<dyn ForeachWriter>))
        }
        Some((command, rest)) if command == "run" && !rest.is_empty() => {
            let mut overrides = Vec::new();
            let mut it = rest[1..].iter();
            let mut bad = None;
            while let Some(a) = it.next() {
                match a.as_str() {
                    "--no-progress" => {}
                    "--set" => match it.next().map(|s| eddy::parse_override(s)) {
                        Some(Ok(o)) => overrides.push(o),
                        Some(Err(e)) => bad = Some(e),
                        None => bad = eddy::parse_override("").err(),
                    },
                    other => bad = eddy::parse_override(other).err().or(bad),
                }
            }
            match bad {
                Some(e) => Err(e),
                None => Job::from_file_with_in(&rest[0], &overrides, &registry()),
            }
        }
        Some(_) => {
            #[allow(clippy::print_stderr)] // the example's usage
            {
                eprintln!("usage: fraud [run PIPELINE.toml [--no-progress] [--set FIELD=VALUE]...]");
            }
            return ExitCode::from(2);
        }
    };
    match result.and_then(Job::run) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}
