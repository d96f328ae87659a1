//! A fraud detector written on the `eddy` library: a stateful processor registered by name,
//! reached from a pipeline file (`[query] type = "processor"`), a scalar UDF (`mask_card`, in
//! the sink's `select`: the printed alerts show a card's last four digits only) and a forEach
//! sink that prints its alerts.
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

use eddy::{DataType, ForeachWriter, Job, Registry, RowView, Schema, TimeDomain, Value, WriterError};

mod processor;
use processor::Fraud;

/// The fraud processors and the `mask_card` function by name.
fn registry() -> Registry {
    let output = Schema::parse_ddl(processor::OUTPUT).expect("the output schema is a valid constant");
    let mut registry = Registry::new();
    registry.register_processor("fraud", output.clone(), || Box::new(Fraud::new(TimeDomain::ProcessingTime)));
    registry.register_processor("fraud_event_time", output, || Box::new(Fraud::new(TimeDomain::EventTime)));
    registry
        .register_udf("mask_card", &[DataType::String], DataType::String, mask_card)
        .expect("mask_card is not a built-in function's name");
    registry
}

/// `mask_card(card STRING) -> STRING`: the card number with every digit but the last four
/// written `*`, separators (`-`, space) kept (`4000-0000-0000-0002` -> `****-****-****-0002`);
/// NULL stays NULL. Anything else than digits and separators is an error: the record goes to
/// the dead-letter sink with the function's name and this message.
fn mask_card(args: &[Value]) -> Result<Value, String> {
    let Some(card) = args[0].as_str() else { return Ok(Value::Null) };
    if !card.bytes().any(|b| b.is_ascii_digit()) || !card.bytes().all(|b| b.is_ascii_digit() || b == b'-' || b == b' ')
    {
        return Err(format!("not a card number: {card:?}"));
    }
    let mut hide = card.bytes().filter(u8::is_ascii_digit).count().saturating_sub(4);
    let masked: String = card
        .chars()
        .map(|c| match c {
            '0'..='9' if hide > 0 => {
                hide -= 1;
                '*'
            }
            c => c,
        })
        .collect();
    Ok(Value::Str(masked.into()))
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
