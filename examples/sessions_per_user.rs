//! Page-view sessions per user, written as a stateful processor on the `eddy` library.
//!
//! Per `user_id`, the processor counts page views and emits one row `(user_id, views, first_ts,
//! last_ts)` once the user has been inactive for 30 minutes of event time: an event-time timer at
//! the last view + 30 minutes, moved at every view, fires when the watermark reaches it and closes
//! the session (its state is cleared). A view more than 30 minutes after the last one closes the
//! session at once (in micro-batch mode one handler call may hold both).
//!
//! Run it over `examples/data/page-views` (rows land in `examples/out/sessions-per-user`):
//!
//! ```text
//! cargo run --example sessions_per_user                                  # micro-batch
//! cargo run --example sessions_per_user -- examples/sessions-per-user.toml mode=real-time
//! ```
//!
//! Arguments: the pipeline file (default `examples/sessions-per-user.toml`), then overrides
//! `FIELD=VALUE` as `eddy run --set`.

use eddy::{Duration, KeyContext, Record, Schema, StatefulProcessor, TimeDomain, Timestamp, Value};

/// Inactivity that closes a session: 30 minutes of event time.
pub const SESSION_GAP: Duration = Duration(30 * 60 * 1_000_000);

/// The processor's name in pipeline files (`[query] name`).
pub const NAME: &str = "sessions";

/// The rows the processor emits.
pub const OUTPUT_DDL: &str = "user_id STRING, views BIGINT, first_ts TIMESTAMP, last_ts TIMESTAMP";

/// Counts each user's page views and emits a session row after 30 minutes without one.
///
/// State per user: `views` (BIGINT), `first` and `last` (TIMESTAMP, the earliest and latest view
/// of the open session); one event-time timer at `last + 30 minutes`.
#[derive(Debug, Default)]
pub struct Sessions {
    /// Index of the event-time column `ts` in the input records (set by `init`).
    ts: usize,
}

impl Sessions {
    /// Emits the open session of `ctx`'s key, if any, and clears the key's state and timers.
    fn close(ctx: &mut KeyContext<'_>) {
        let (Some(views), Some(first), Some(last)) = (ctx.get("views"), ctx.get("first"), ctx.get("last")) else {
            return;
        };
        let user = ctx.key().values().next().cloned().unwrap_or(Value::Null);
        let row = vec![user, views.clone(), first.clone(), last.clone()];
        ctx.emit(row);
        ctx.clear_all();
    }
}

impl StatefulProcessor for Sessions {
    fn init(&mut self, input: &Schema) {
        // The pipeline's schema is checked by validation; a pipeline without `ts` reads every view
        // as having no time and is skipped below.
        self.ts = input.resolve("ts").unwrap_or(usize::MAX);
    }

    fn handle_input(&mut self, records: &[&Record], ctx: &mut KeyContext<'_>) {
        for record in records {
            let Some(ts) = record.values.get(self.ts).and_then(Value::as_timestamp) else {
                continue;
            };
            if let Some(last) = ctx.get("last").and_then(Value::as_timestamp)
                && ts > last.saturating_add(SESSION_GAP)
            {
                // More than 30 minutes since the last view: that session is over.
                Sessions::close(ctx);
            }
            let views = ctx.get("views").and_then(Value::as_i64).unwrap_or(0) + 1;
            let first = ctx.get("first").and_then(Value::as_timestamp).map_or(ts, |f| f.min(ts));
            let last = ctx.get("last").and_then(Value::as_timestamp).map_or(ts, |l| l.max(ts));
            ctx.set("views", Value::Long(views), None);
            ctx.set("first", Value::Timestamp(first), None);
            ctx.set("last", Value::Timestamp(last), None);
            for at in ctx.timers(TimeDomain::EventTime) {
                ctx.delete_timer(TimeDomain::EventTime, at);
            }
            ctx.register_timer(TimeDomain::EventTime, last.saturating_add(SESSION_GAP));
        }
    }

    fn handle_timer(&mut self, domain: TimeDomain, _at: Timestamp, ctx: &mut KeyContext<'_>) {
        if domain == TimeDomain::EventTime {
            Sessions::close(ctx);
        }
    }
}

/// A registry holding [`Sessions`] as [`NAME`].
///
/// # Panics
/// Never: [`OUTPUT_DDL`] is a valid schema.
pub fn registry() -> eddy::Registry {
    let mut registry = eddy::Registry::new();
    let output = Schema::parse_ddl(OUTPUT_DDL).expect("OUTPUT_DDL is a valid schema");
    registry.register_processor(NAME, output, || Box::new(Sessions::default()));
    registry
}

#[allow(dead_code)] // the test includes this file for the processor, not for `main`
#[allow(clippy::print_stdout, clippy::print_stderr)] // a command-line program: its report
fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "examples/sessions-per-user.toml".to_string());
    let overrides: Result<Vec<_>, _> = args.map(|a| eddy::parse_override(&a)).collect();
    let result = overrides.and_then(|o| eddy::Job::from_file_with_in(&path, &o, &registry())).and_then(|job| job.run());
    match result {
        Ok(summary) => {
            println!("{summary:?}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sessions_per_user: {e}");
            std::process::ExitCode::from(e.exit_code())
        }
    }
}
