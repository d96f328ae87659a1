//! `eddy`: runs a pipeline file (PIPELINE.md "The command").
//!
//! Exit codes: 0 done; 2 the pipeline file or a flag is wrong, or the checkpoint was written by a
//! different query (nothing was started); 1 a failure while running (or no usable checkpoint), or
//! a second stop request (SIGINT / SIGTERM) more than 0.5 s after the first: exit now.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use mimalloc::MiMalloc;

use eddy::{Job, RunHandle, RunSummary, Stopper};

/// Records are built on the source thread and freed on the partition actors' threads; mimalloc
/// handles that cross-thread traffic far more cheaply than glibc's malloc (see the Nexmark
/// profile in bench/results/nexmark.md). Without transparent huge pages: see
/// [`disable_huge_pages`].
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

/// Eddy: a continuous processing engine for low latency (windowed aggregations, deduplication
/// and rolling windows over streams, in micro-batch or real-time mode).
#[derive(Debug, Parser)]
#[command(name = "eddy", version, about, long_about = None)]
struct Cli {
    /// Log as JSON lines instead of human-readable text.
    #[arg(long, global = true)]
    log_json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a pipeline until its input ends (finite sources) or SIGINT / SIGTERM.
    ///
    /// On SIGINT / SIGTERM it stops reading, commits what it has and exits 0 (under the replay
    /// clock with a checkpoint, the current epoch is read on to its boundary, or left for the
    /// restart, so a restarted run writes the same epochs). The same signal again within 0.5 s is
    /// the same request (as from GNU `timeout`); one later means exit now, with exit code 1,
    /// committing nothing more. Exit codes: 0 done, 1 a failure while running or exit now, 2 a
    /// wrong pipeline file, flag or checkpoint (nothing started).
    Run {
        /// The pipeline file (TOML, PIPELINE.md).
        pipeline: PathBuf,
        /// Override a field of the pipeline file, e.g. `--set source.path=in/` (repeatable).
        #[arg(long = "set", value_name = "FIELD=VALUE")]
        set: Vec<String>,
        /// Do not show a progress bar even when stderr is a terminal.
        #[arg(long)]
        no_progress: bool,
        /// Trace stalls: measure every record's service time on the thread that does its work
        /// and log, at the end, the records (and the work between them) slower than MICROS µs,
        /// with what they waited on (a table growing, a barrier, the sink's write, the thread
        /// descheduled, ...). With `[metrics]` also exported as `eddy_record_service_seconds`
        /// and `eddy_slow_records_total`. Off by default.
        #[arg(long, value_name = "MICROS")]
        trace_stalls: Option<u64>,
    },
    /// Check a pipeline file and print its plan: each step in order with its output columns,
    /// the partition key and the thread each step runs on (exit 2 on a wrong file, as validate).
    Explain {
        /// The pipeline file (TOML, PIPELINE.md).
        pipeline: PathBuf,
        /// Override a field of the pipeline file (repeatable).
        #[arg(long = "set", value_name = "FIELD=VALUE")]
        set: Vec<String>,
    },
    /// Check a pipeline file and print its output schema (after the sink's `select`).
    Validate {
        /// The pipeline file (TOML, PIPELINE.md).
        pipeline: PathBuf,
        /// Override a field of the pipeline file (repeatable).
        #[arg(long = "set", value_name = "FIELD=VALUE")]
        set: Vec<String>,
    },
}

fn init_logs(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("EDDY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only on a terminal (and not with `NO_COLOR` set): a log file or pipe gets plain text.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(colour);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

fn load(pipeline: &std::path::Path, set: &[String]) -> Result<Job, eddy::Error> {
    let overrides = set.iter().map(|s| eddy::parse_override(s)).collect::<Result<Vec<_>, _>>()?;
    Job::from_file_with(pipeline, &overrides)
}

/// Turns transparent huge pages off for this process (Linux `PR_SET_THP_DISABLE`), before any
/// actor's thread starts. With them, each thread's first allocations fault in a whole 2 MiB
/// page of the allocator's arena (925 MB of RSS for one record at parallelism 1024; the
/// workspace's `Cargo.toml` has the numbers); mimalloc is built not to ask for them, and this
/// covers systems that give them unasked (`/sys/kernel/mm/transparent_hugepage/enabled` =
/// `always`). A refusal is logged and the run goes on.
fn disable_huge_pages() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        tracing::warn!(error = %e, "cannot turn transparent huge pages off; memory per thread may be larger");
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logs(cli.log_json);
    disable_huge_pages();
    match cli.command {
        Command::Validate { pipeline, set } => match load(&pipeline, &set).and_then(|job| job.check().map(|()| job)) {
            Ok(job) => {
                let mut out = String::new();
                for f in job.output_schema() {
                    out.push_str(&format!("{} {}\n", f.name, f.data_type));
                }
                #[allow(clippy::print_stdout)] // the command's own output
                {
                    print!("{out}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln_error(&format!("{}: {e}", pipeline.display()));
                ExitCode::from(2)
            }
        },
        Command::Explain { pipeline, set } => match load(&pipeline, &set).and_then(|job| job.check().map(|()| job)) {
            Ok(job) => {
                #[allow(clippy::print_stdout)] // the command's own output
                {
                    print!("{}", job.explain());
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln_error(&format!("{}: {e}", pipeline.display()));
                ExitCode::from(2)
            }
        },
        Command::Run { pipeline, set, no_progress, trace_stalls } => {
            let job = match load(&pipeline, &set) {
                Ok(job) => job,
                Err(e) => {
                    eprintln_error(&format!("{}: {e}", pipeline.display()));
                    return ExitCode::from(e.exit_code());
                }
            };
            // Test-only knob, not a user interface: EDDY_TEST_STOP_AFTER=k stops the run (as
            // SIGTERM would) once batch / epoch k is committed, so tests restart at a known point.
            let job = match std::env::var("EDDY_TEST_STOP_AFTER").ok().and_then(|v| v.parse().ok()) {
                Some(k) => job.stop_after(k),
                None => job,
            };
            let job = match trace_stalls {
                Some(us) => job.trace_stalls(Duration::from_micros(us)),
                None => job,
            };
            if let Err(e) = install_signals(job.stopper()) {
                eprintln_error(&format!("cannot install signal handlers: {e}"));
                return ExitCode::from(1);
            }
            tracing::info!(pipeline = job.name(), "starting");
            let handle = match job.start() {
                Ok(h) => h,
                Err(e) => {
                    eprintln_error(&format!("failed: {e}"));
                    return ExitCode::from(e.exit_code());
                }
            };
            let result = if !no_progress && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                show_progress(handle)
            } else {
                handle.join()
            };
            match result {
                Ok(s) => {
                    tracing::info!(
                        records = s.records,
                        late = s.late,
                        malformed = s.malformed,
                        rows = s.rows,
                        committed = s.committed,
                        parallelism = s.parallelism,
                        "done"
                    );
                    if let Some(r) = &s.stalls {
                        log_stalls(r);
                    }
                    ExitCode::SUCCESS
                }
                Err(e @ eddy::Error::Failed(_)) => {
                    eprintln_error(&format!("failed: {e}"));
                    ExitCode::from(e.exit_code())
                }
                Err(e) => {
                    eprintln_error(&format!("{}: {e}", pipeline.display()));
                    ExitCode::from(e.exit_code())
                }
            }
        }
    }
}

/// Logs what the stall tracer saw (`--trace-stalls`): the distribution, then the slowest items.
fn log_stalls(r: &eddy_actors::stalls::StallReport) {
    let [p50, p99, p999, max] = r.quantiles_ns.map(|ns| ns as f64 / 1e3);
    tracing::info!(
        records = r.records,
        over_threshold = r.over_threshold,
        p50_us = p50,
        p99_us = p99,
        p999_us = p999,
        max_us = max,
        "record service time"
    );
    for (list, what) in [(&r.slowest, "slow"), (&r.slowest_on_core, "slow on a core")] {
        for (i, s) in list.iter().take(10).enumerate() {
            let kind = match s.kind {
                eddy_actors::stalls::ItemKind::Record => "record",
                eddy_actors::stalls::ItemKind::Control(k) => k,
            };
            tracing::info!(
                rank = i + 1,
                service_us = s.service_ns as f64 / 1e3,
                kind,
                causes = %s.causes,
                partition = s.partition,
                after_records = s.after_records,
                "{what}"
            );
        }
    }
}

#[allow(clippy::print_stderr)] // the command's own error output
fn eprintln_error(msg: &str) {
    eprintln!("eddy: {msg}");
}

/// A stop signal (SIGINT / SIGTERM) within this interval of the first is the same stop request:
/// GNU `timeout`, for one, signals the child and then its whole process group, so `eddy`
/// receives SIGTERM twice within microseconds.
const SAME_REQUEST_WITHIN: Duration = Duration::from_millis(500);

/// Exit code of "exit now" (a second stop request): that of a failure while running
/// (PIPELINE.md's exit code 1), since nothing after the last checkpoint is committed and a restart
/// resumes from it.
const EXIT_NOW: u8 = 1;

/// What a stop signal means, given when the first one arrived.
#[derive(Debug, PartialEq, Eq)]
enum StopSignal {
    /// The first: drain, commit, exit 0.
    Stop,
    /// Within [`SAME_REQUEST_WITHIN`] of the first: the same request, nothing more to do.
    Repeated,
    /// Later: exit now ([`EXIT_NOW`]), nothing more committed.
    ExitNow,
}

/// Classifies a stop signal arriving at `now`; `first` keeps the first one's instant.
fn classify(first: &mut Option<Instant>, now: Instant) -> StopSignal {
    match *first {
        None => {
            *first = Some(now);
            StopSignal::Stop
        }
        Some(t) if now.saturating_duration_since(t) < SAME_REQUEST_WITHIN => StopSignal::Repeated,
        Some(_) => StopSignal::ExitNow,
    }
}

/// SIGINT / SIGTERM set `stop` (drain, commit, exit 0); the same signals again within
/// [`SAME_REQUEST_WITHIN`] are the same request; a later one exits at once with [`EXIT_NOW`].
/// The signals are handled on a thread of their own (not in a signal handler), so this works
/// however busy or blocked the pipeline's threads are.
fn install_signals(stop: Stopper) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new().name("eddy-signals".into()).spawn(move || {
        let mut first = None;
        for signal in signals.forever() {
            match classify(&mut first, Instant::now()) {
                StopSignal::Stop => {
                    tracing::info!(signal, "stop requested: finishing, committing and exiting (again after 0.5 s: exit now)");
                    stop.stop();
                }
                StopSignal::Repeated => tracing::debug!(signal, "the same stop request again"),
                StopSignal::ExitNow => {
                    eprintln_error(
                        "stop requested again: exiting now, committing nothing more (a restart resumes from the last checkpoint)",
                    );
                    std::process::exit(i32::from(EXIT_NOW));
                }
            }
        }
    })?;
    Ok(())
}

/// Draws a spinner with the run's counts on stderr until the run ends; the run's result.
fn show_progress(handle: RunHandle) -> Result<RunSummary, eddy::Error> {
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    while !handle.is_finished() {
        let p = handle.progress();
        bar.set_message(format!("{} records, {} malformed", p.records, p.malformed));
        bar.tick();
        std::thread::sleep(Duration::from_millis(100));
    }
    bar.finish_and_clear();
    handle.join()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_signal_repeated_within_half_a_second_is_the_same_request_and_a_later_one_exits_now() {
        let t0 = Instant::now();
        let mut first = None;
        assert_eq!(classify(&mut first, t0), StopSignal::Stop);
        assert_eq!(classify(&mut first, t0 + Duration::from_micros(20)), StopSignal::Repeated);
        assert_eq!(classify(&mut first, t0 + Duration::from_millis(499)), StopSignal::Repeated);
        assert_eq!(classify(&mut first, t0 + Duration::from_millis(500)), StopSignal::ExitNow);
        assert_eq!(first, Some(t0), "the interval counts from the first signal");
    }
}
