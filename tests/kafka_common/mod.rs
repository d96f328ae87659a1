//! Helpers of the Kafka end-to-end tests (`tests/kafka_*.rs`): a real broker per test, the
//! independent client `kc`, the `eddy` daemon with its metrics endpoint, and a TCP proxy the test
//! can cut.
//!
//! Each test starts its own broker (tansu with in-memory storage, installed by
//! `../shared/tools/kafka/install`, which `scripts/test.sh` runs) on a free loopback port and kills
//! it when dropped, so tests run in parallel and leave nothing behind. Without the broker the
//! tests are skipped loudly, or fail under `CI=true`.
#![allow(dead_code)] // each test binary uses a part of these helpers

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared/tools/kafka`.
pub fn tools() -> PathBuf {
    root().join("../shared/tools/kafka")
}

/// `$KAFKA_TOOLS`, default `~/.cache/kafka-tools`: the broker binary and kc's Python environment.
pub fn tools_home() -> PathBuf {
    std::env::var_os("KAFKA_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/kafka-tools"))
}

/// The broker binary.
pub fn tansu() -> PathBuf {
    tools_home().join("bin/tansu")
}

/// A free loopback port (bound, read, released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// Whether the broker is installed; otherwise skips loudly (stderr, past the harness's capture),
/// or fails under `CI=true`.
pub fn broker_or_skip(test: &str) -> bool {
    if tansu().is_file() {
        return true;
    }
    let msg = format!(
        "the Kafka test broker is not installed ({}; run ../shared/tools/kafka/install, as scripts/test.sh does)",
        tansu().display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{msg}: CI=true, so {test} must not be skipped");
    }
    let _ = writeln!(std::io::stderr(), "\n!!!!!!!! SKIPPED {test}: {msg} !!!!!!!!\n");
    false
}

/// Waits until `ok()` or panics after `timeout`.
pub fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < timeout, "timed out after {timeout:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A broker on loopback, killed when dropped.
pub struct Broker {
    /// The port the broker listens on.
    pub port: u16,
    /// The port it advertises to clients (its own, or a proxy's in front of it).
    pub advertised: u16,
    child: Option<Child>,
}

impl Broker {
    /// A broker on a free port, advertising that port.
    pub fn start() -> Broker {
        let port = free_port();
        Broker::start_on(port, port)
    }

    /// A broker on `port` that tells clients to connect to `advertised` (a proxy in front).
    pub fn start_on(port: u16, advertised: u16) -> Broker {
        let log = std::env::temp_dir().join(format!("eddy-test-broker-{port}.log"));
        let child = Command::new(tansu())
            .args(["broker", "--listener-url", &format!("tcp://127.0.0.1:{port}")])
            .args(["--advertised-listener-url", &format!("tcp://127.0.0.1:{advertised}")])
            .args(["--storage-engine", &format!("memory://tansu-{port}/")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).map(Stdio::from).unwrap_or_else(|_| Stdio::null()))
            .spawn()
            .expect("start the broker");
        let mut b = Broker { port, advertised, child: Some(child) };
        let started = Instant::now();
        loop {
            let ok = Command::new(tansu())
                .args(["topic", "list", "--broker", &format!("tcp://127.0.0.1:{port}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return b;
            }
            if let Some(Ok(Some(st))) = b.child.as_mut().map(|c| c.try_wait()) {
                panic!("the broker exited ({st}); log: {}", log.display());
            }
            assert!(started.elapsed() < Duration::from_secs(30), "the broker did not answer; log: {}", log.display());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `bootstrap.servers` for clients.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.advertised)
    }

    /// `kc ARGS` against this broker.
    pub fn kc(&self) -> Command {
        let mut c = Command::new(tools().join("kc"));
        c.env("KAFKA_BOOTSTRAP", self.bootstrap());
        c
    }

    /// Creates `topic` with `partitions` partitions.
    pub fn create_topic(&self, topic: &str, partitions: u32) {
        let out = self.kc().args(["create", topic, "--partitions", &partitions.to_string()]).output().expect("kc");
        assert!(out.status.success(), "kc create {topic}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Produces `lines` (one message each) with `kc produce`, keyed by the JSON field `key_field`.
    pub fn produce(&self, topic: &str, lines: &[String], key_field: Option<&str>) {
        let mut c = self.kc();
        c.args(["produce", topic]);
        if let Some(k) = key_field {
            c.args(["--key-field", k]);
        }
        let mut child = c.stdin(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("kc produce");
        let mut input = child.stdin.take().expect("stdin");
        for l in lines {
            writeln!(input, "{l}").expect("write to kc");
        }
        drop(input);
        let out = child.wait_with_output().expect("kc produce");
        assert!(out.status.success(), "kc produce {topic}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Reads `topic` from the beginning with `kc consume --meta` until `max` messages or
    /// `idle_s` seconds without one: (partition, offset, key, value) per message.
    pub fn consume(&self, topic: &str, max: Option<usize>, idle_s: f64) -> Vec<Consumed> {
        let mut c = self.kc();
        c.args(["consume", topic, "--meta", "--timeout", &idle_s.to_string()]);
        if let Some(m) = max {
            c.args(["--max", &m.to_string()]);
        }
        let out = c.output().expect("kc consume");
        assert!(out.status.success(), "kc consume {topic}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("kc line {l}: {e}"));
                Consumed {
                    partition: v["partition"].as_i64().unwrap_or(-1),
                    offset: v["offset"].as_i64().unwrap_or(-1),
                    key: v["key"].as_str().map(String::from),
                    value: v["value"].as_str().map(String::from),
                }
            })
            .collect()
    }

    /// Kills the broker now.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One message read back by `kc`.
#[derive(Debug, Clone)]
pub struct Consumed {
    /// Partition.
    pub partition: i64,
    /// Offset.
    pub offset: i64,
    /// Key (text), if any.
    pub key: Option<String>,
    /// Value (text), `None` for a tombstone.
    pub value: Option<String>,
}

/// GET over HTTP/1.0: (status, body).
pub fn get(addr: SocketAddr, target: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).to_string();
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Ok((status, body))
}

/// A running `eddy run`, killed when dropped.
pub struct Eddy {
    child: Option<Child>,
    /// Its `[metrics] listen` address.
    pub metrics: SocketAddr,
    stderr: PathBuf,
}

impl Eddy {
    /// Starts `eddy run PIPELINE --no-progress [--set ...]` with logs at `info` to a file.
    pub fn start(pipeline: &Path, metrics: SocketAddr, sets: &[String]) -> Eddy {
        let stderr = std::env::temp_dir().join(format!(
            "eddy-test-{}-{}.log",
            pipeline.file_stem().and_then(|s| s.to_str()).unwrap_or("pipeline"),
            metrics.port()
        ));
        let mut c = Command::new(env!("CARGO_BIN_EXE_eddy"));
        c.args(["run", "--no-progress"]);
        for s in sets {
            c.args(["--set", s]);
        }
        let child = c
            .arg(pipeline)
            .env("EDDY_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&stderr).expect("log file")))
            .spawn()
            .expect("start eddy");
        Eddy { child: Some(child), metrics, stderr }
    }

    /// The sum of every series of metric `name` (None: endpoint not up, or no such series).
    pub fn metric(&self, name: &str) -> Option<f64> {
        let (status, body) = get(self.metrics, "/metrics").ok()?;
        if status != 200 {
            return None;
        }
        let mut sum = None;
        for l in body.lines().filter(|l| !l.starts_with('#')) {
            let Some((series, value)) = l.rsplit_once(' ') else { continue };
            let base = series.split('{').next().unwrap_or(series);
            if base == name {
                *sum.get_or_insert(0.0) += value.parse::<f64>().unwrap_or(0.0);
            }
        }
        sum
    }

    /// Records decoded plus records malformed so far.
    pub fn consumed(&self) -> f64 {
        self.metric("eddy_records_in_total").unwrap_or(0.0) + self.metric("eddy_records_malformed_total").unwrap_or(0.0)
    }

    /// `/readyz` status (0: no answer).
    pub fn readyz(&self) -> u16 {
        get(self.metrics, "/readyz").map(|(s, _)| s).unwrap_or(0)
    }

    /// The log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Waits until it has consumed `n` input messages (decoded or malformed), panicking with its
    /// log after `timeout`.
    pub fn wait_consumed(&mut self, n: usize, timeout: Duration) {
        let started = Instant::now();
        while self.consumed() < n as f64 {
            assert!(self.running(), "eddy exited early:\n{}", self.log());
            assert!(
                started.elapsed() < timeout,
                "eddy consumed {} of {n} messages in {timeout:?}:\n{}",
                self.consumed(),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGKILL (kill -9: no drain, no checkpoint, no leaving the group), then reaps it: its log.
    pub fn kill(mut self) -> String {
        let mut child = self.child.take().expect("running");
        let _ = Command::new("kill").args(["-KILL", &child.id().to_string()]).status();
        if wait_child(&mut child, Duration::from_secs(30)).is_none() {
            panic!("eddy did not exit within 30 s of SIGKILL; its log:\n{}", self.log());
        }
        self.log()
    }

    /// SIGTERM (drain, commit, exit), then waits at most 60 s: (status, log).
    pub fn terminate(mut self) -> (ExitStatus, String) {
        let mut child = self.child.take().expect("running");
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        match wait_child(&mut child, Duration::from_secs(60)) {
            Some(status) => (status, self.log()),
            None => panic!("eddy did not exit within 60 s of SIGTERM; its log:\n{}", self.log()),
        }
    }

    /// Waits for it to exit by itself, at most `timeout`: (status, log).
    pub fn wait(mut self, timeout: Duration) -> (ExitStatus, String) {
        let mut child = self.child.take().expect("running");
        match wait_child(&mut child, timeout) {
            Some(status) => (status, self.log()),
            None => panic!("eddy did not exit within {timeout:?}; its log:\n{}", self.log()),
        }
    }
}

/// Its exit status, or `None` when it did not exit within `timeout` (it is then killed and
/// reaped, so that the caller can show its log).
fn wait_child(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let started = Instant::now();
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for Eddy {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A TCP proxy on a loopback port to `target`, which the test stops (closing every connection and
/// the listening socket) and restarts on the same port.
pub struct Proxy {
    /// The port clients connect to.
    pub port: u16,
    target: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Proxy {
    /// Starts forwarding `127.0.0.1:port` to `target`.
    pub fn start(port: u16, target: SocketAddr) -> Proxy {
        let mut p = Proxy { port, target, stop: Arc::new(AtomicBool::new(false)), thread: None };
        p.resume();
        p
    }

    /// Closes the listener and every connection.
    pub fn cut(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Listens and forwards again (same port).
    pub fn resume(&mut self) {
        self.cut();
        let stop = Arc::new(AtomicBool::new(false));
        self.stop = stop.clone();
        let (port, target) = (self.port, self.target);
        let started = Instant::now();
        let listener = loop {
            match TcpListener::bind(("127.0.0.1", port)) {
                Ok(l) => break l,
                Err(e) => {
                    assert!(started.elapsed() < Duration::from_secs(10), "proxy cannot bind {port}: {e}");
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        };
        listener.set_nonblocking(true).expect("nonblocking");
        self.thread = Some(std::thread::spawn(move || {
            let mut pipes: Vec<(TcpStream, TcpStream, JoinHandle<()>, JoinHandle<()>)> = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let Ok(server) = TcpStream::connect(target) else { continue };
                        let _ = client.set_nodelay(true);
                        let _ = server.set_nodelay(true);
                        let (c2, s2) = (client.try_clone().expect("clone"), server.try_clone().expect("clone"));
                        let up = std::thread::spawn(move || copy(client, server));
                        let (c3, s3) = (c2.try_clone().expect("clone"), s2.try_clone().expect("clone"));
                        let down = std::thread::spawn(move || copy(s2, c2));
                        pipes.push((c3, s3, up, down));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            drop(listener);
            for (c, s, up, down) in pipes {
                let _ = c.shutdown(std::net::Shutdown::Both);
                let _ = s.shutdown(std::net::Shutdown::Both);
                let _ = up.join();
                let _ = down.join();
            }
        }));
    }
}

fn copy(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = [0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Both);
    let _ = from.shutdown(std::net::Shutdown::Both);
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
    }
}
