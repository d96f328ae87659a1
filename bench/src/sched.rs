//! How long the engine's threads waited for a core: `/proc/self/task/*/schedstat` (Linux),
//! sampled while a run goes on. Explains latency tails that are not the engine's work: a thread
//! that is runnable but not running (the cores are taken by other threads or processes, or a
//! kernel thread preempted it) delays every record behind it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// One thread's scheduler statistics: nanoseconds on a core, nanoseconds runnable but waiting
/// for one, and how many times it was given a core.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SchedStat {
    pub(crate) run_ns: u64,
    pub(crate) wait_ns: u64,
    pub(crate) slices: u64,
}

/// Samples every thread of this process every 50 ms until [`Sampler::finish`]; threads that
/// ended keep their last sample.
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<BTreeMap<u32, (String, SchedStat)>>,
}

fn sample(into: &mut BTreeMap<u32, (String, SchedStat)>) {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    for t in tasks.flatten() {
        let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default().trim().to_owned();
        let Ok(stat) = std::fs::read_to_string(t.path().join("schedstat")) else {
            continue;
        };
        let v: Vec<u64> = stat.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        if let [run_ns, wait_ns, slices] = v[..] {
            into.insert(tid, (comm, SchedStat { run_ns, wait_ns, slices }));
        }
    }
}

impl Sampler {
    /// Starts sampling.
    pub(crate) fn start() -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut seen = BTreeMap::new();
            while !flag.load(Ordering::Relaxed) {
                sample(&mut seen);
                std::thread::sleep(Duration::from_millis(50));
            }
            seen
        });
        Sampler { stop, handle }
    }

    /// Stops sampling; the engine's threads (`eddy-*`), the partition actors summed, as
    /// (name, stats).
    pub(crate) fn finish(self) -> Vec<(String, SchedStat)> {
        self.stop.store(true, Ordering::Relaxed);
        let seen = self.handle.join().unwrap_or_default();
        let mut by_name: BTreeMap<String, SchedStat> = BTreeMap::new();
        // Thread names are cut at 15 bytes by the kernel; the harness's own threads are left out.
        for (comm, s) in seen.into_values().filter(|(c, _)| c.starts_with("eddy-") && c != "eddy-bench") {
            let name = match comm.trim_end_matches(|c: char| c.is_ascii_digit()) {
                "eddy-partition-" => "partition actors".to_owned(),
                "eddy-coordinato" => "coordinator".to_owned(),
                other => other.trim_start_matches("eddy-").to_owned(),
            };
            let e = by_name.entry(name).or_default();
            e.run_ns += s.run_ns;
            e.wait_ns += s.wait_ns;
            e.slices += s.slices;
        }
        by_name.into_iter().collect()
    }
}
