//! Reports: each suite prints markdown tables to stdout and writes them, with a JSON document of
//! the same numbers, under `bench/results/` (`<suite>.md`, `<suite>.json`); a smoke run, or a
//! run of part of a suite, writes to the temp folder instead, so the committed results always
//! come from full runs.

use std::path::PathBuf;

use anyhow::{Context, Result};

/// A report being written: markdown lines, echoed to stdout as they come.
pub struct Report {
    suite: &'static str,
    smoke: bool,
    markdown: String,
}

impl Report {
    /// A new report for `suite`; `smoke`: a smoke or partial run (written to the temp folder).
    pub fn new(suite: &'static str, smoke: bool) -> Report {
        Report { suite, smoke, markdown: String::new() }
    }

    /// Adds one markdown line (printed at once).
    pub fn line(&mut self, text: &str) {
        println!("{text}");
        self.markdown.push_str(text);
        self.markdown.push('\n');
    }

    /// Where the files go: `bench/results/`, or the temp folder for a smoke run.
    pub fn folder(&self) -> PathBuf {
        if self.smoke {
            std::env::temp_dir().join("eddy-bench-smoke")
        } else {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results")
        }
    }

    /// Writes `<suite>.md` (the lines) and `<suite>.json` (`doc`).
    ///
    /// # Errors
    /// When the folder or a file cannot be written.
    pub fn finish(self, doc: serde_json::Value) -> Result<()> {
        let dir = self.folder();
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let md = dir.join(format!("{}.md", self.suite));
        std::fs::write(&md, &self.markdown).with_context(|| format!("writing {}", md.display()))?;
        let js = dir.join(format!("{}.json", self.suite));
        let text = serde_json::to_string_pretty(&doc).context("serialising the report")?;
        std::fs::write(&js, text + "\n").with_context(|| format!("writing {}", js.display()))?;
        println!("Report written to {} and {}\n", md.display(), js.display());
        Ok(())
    }
}

/// One line describing the machine: cores, processor model, memory, load average at the time.
pub fn machine() -> String {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("unknown processor", |(_, m)| m.trim())
        .to_string();
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| s.lines().next()?.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    format!("{cores} cores ({model}), {mem_gib:.0} GiB, load average {load} at the start")
}
