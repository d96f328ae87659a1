//! A user aggregate (UDAF) in a rolling window, written on the `eddy` library: the geometric
//! mean (`geomean.rs`, an `Aggregator` with `retract`) registered by name and used as a
//! measure of a `rolling_window` query in `pipeline.toml` (the rollingWindow page's "Scala
//! UDAF" example, in Rust). Rows go to stdout, one per change of a product's window.
//!
//! ```text
//! cargo run --release --example rolling_geomean                      # the bundled sales
//! cargo run --release --example rolling_geomean -- PIPELINE.toml     # another pipeline file
//! ```
//!
//! Any pipeline file given may use `geomean` (with retract) and `geomean_rescan` (the same
//! function without it: a rolling window recomputes it from the records in range) in its
//! measures or SQL; exit 2 for a wrong pipeline file, 1 for a failure while running.

use std::process::ExitCode;
use std::sync::Arc;

use eddy::{Job, Registry};

mod geomean;

fn main() -> ExitCode {
    let mut registry = Registry::new();
    let registered = registry
        .register_udaf("geomean", Arc::new(geomean::GeoMean))
        .and_then(|r| r.register_udaf("geomean_rescan", Arc::new(geomean::GeoMeanRescan)))
        .map(|_| ());
    registered.expect("geomean and geomean_rescan are not built-in names");
    let pipeline = std::env::args()
        .nth(1)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/examples/rolling_geomean/pipeline.toml").to_string());
    match Job::from_file_in(&pipeline, &registry).and_then(Job::run) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            #[allow(clippy::print_stderr)] // the example's error output
            {
                eprintln!("rolling_geomean: {e}");
            }
            ExitCode::from(e.exit_code())
        }
    }
}
