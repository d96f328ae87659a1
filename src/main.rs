//! `eddy`: runs a pipeline file (PIPELINE.md "The command").
//!
//! Exit codes: 0 done; 2 the pipeline file or a flag is wrong, or the checkpoint was written by a
//! different query (nothing was started); 1 a failure while running (or no usable checkpoint).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Parser, Subcommand};
use mimalloc::MiMalloc;

use eddy_actors::source::SourceCounters;
use eddy_actors::{RunOptions, RuntimeError, run_pipeline};
use eddy_engine::spec::{self, SpecError};

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
    Run {
        /// The pipeline file (TOML, PIPELINE.md).
        pipeline: PathBuf,
        /// Override a field of the pipeline file, e.g. `--set source.path=in/` (repeatable).
        #[arg(long = "set", value_name = "FIELD=VALUE")]
        set: Vec<String>,
        /// Do not show a progress bar even when stderr is a terminal.
        #[arg(long)]
        no_progress: bool,
    },
    /// Check a pipeline file and print its output schema.
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

fn parse_sets(set: &[String]) -> Result<Vec<(String, String)>, SpecError> {
    set.iter().map(|s| spec::parse_set_arg(s)).collect()
}

fn load(pipeline: &std::path::Path, set: &[String]) -> Result<spec::Pipeline, SpecError> {
    let overrides = parse_sets(set)?;
    spec::load_pipeline(pipeline, &overrides)
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
        Command::Validate { pipeline, set } => match load(&pipeline, &set) {
            Ok(p) => {
                let mut out = String::new();
                for f in p.output_schema() {
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
        Command::Run { pipeline, set, no_progress } => {
            let p = match load(&pipeline, &set) {
                Ok(p) => p,
                Err(e) => {
                    eprintln_error(&format!("{}: {e}", pipeline.display()));
                    return ExitCode::from(2);
                }
            };
            let stop = Arc::new(AtomicBool::new(false));
            if let Err(e) = install_signals(&stop) {
                eprintln_error(&format!("cannot install signal handlers: {e}"));
                return ExitCode::from(1);
            }
            let counters = Arc::new(SourceCounters::default());
            let progress = (!no_progress && std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .then(|| progress_bar(counters.clone(), stop.clone()));
            tracing::info!(pipeline = %p.name, mode = ?p.mode, "starting");
            // Test-only knob, not a user interface: EDDY_TEST_STOP_AFTER=k stops the run (as
            // SIGTERM would) once batch / epoch k is committed, so tests restart at a known point.
            let stop_after = std::env::var("EDDY_TEST_STOP_AFTER").ok().and_then(|v| v.parse().ok());
            let opts =
                RunOptions { stop: Some(stop.clone()), counters: Some(counters), stop_after, ..RunOptions::default() };
            let result = run_pipeline(&p, opts);
            if let Some((done, h)) = progress {
                done.store(true, Ordering::SeqCst);
                // The progress thread only draws; a failure to join changes nothing.
                let _ = h.join();
            }
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
                    ExitCode::SUCCESS
                }
                Err(
                    e @ (RuntimeError::Open { .. }
                    | RuntimeError::Unsupported { .. }
                    | RuntimeError::IncompatibleCheckpoint(_)),
                ) => {
                    eprintln_error(&format!("{}: {e}", pipeline.display()));
                    ExitCode::from(2)
                }
                Err(e) => {
                    eprintln_error(&format!("failed: {e}"));
                    ExitCode::from(1)
                }
            }
        }
    }
}

#[allow(clippy::print_stderr)] // the command's own error output
fn eprintln_error(msg: &str) {
    eprintln!("eddy: {msg}");
}

/// SIGINT / SIGTERM set `stop` (drain, commit, exit 0); a second SIGTERM or SIGINT exits at once.
fn install_signals(stop: &Arc<AtomicBool>) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone())?;
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(())
}

fn progress_bar(
    counters: Arc<SourceCounters>,
    _stop: Arc<AtomicBool>,
) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let h = std::thread::spawn(move || {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        while !d.load(Ordering::SeqCst) {
            let n = counters.records.load(Ordering::Relaxed);
            let bad = counters.malformed.load(Ordering::Relaxed);
            bar.set_message(format!("{n} records, {bad} malformed"));
            bar.tick();
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        bar.finish_and_clear();
    });
    (done, h)
}
