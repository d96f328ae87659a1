//! The HTTP endpoint of `[metrics] listen` (PIPELINE.md): a small HTTP/1.1 responder on one
//! thread of its own (`std::net`, no async runtime), one request per connection:
//!
//! - `GET /metrics`: the Prometheus text format (version 0.0.4) rendered by the run's recorder;
//! - `GET /healthz`: `200 ok` while the process is alive and serving;
//! - `GET /readyz`: `200 ready` when every source is connected and the last checkpoint did not
//!   fail, `503` with the reason otherwise ([`Health`]).
//!
//! `HEAD` is answered like `GET` without a body; other methods get `405`, other paths `404`.
//! The same thread runs the recorder's upkeep once a second (histogram samples are folded into
//! their buckets even when nobody scrapes, so memory stays bounded).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use metrics_exporter_prometheus::PrometheusHandle;

use super::Health;

/// How long the accept loop sleeps when no connection is waiting.
const IDLE_SLEEP: Duration = Duration::from_millis(20);
/// How long a client may take to send its request or read the answer.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest request head read (bytes); longer requests get `431`.
const MAX_HEAD: usize = 8 * 1024;

/// The running endpoint; stopped by [`MetricsServer::stop`] or when dropped.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `listen` and serves until stopped. `metrics`: the recorder's handle (`None`:
    /// `/metrics` answers 404).
    ///
    /// # Errors
    /// The address cannot be bound (in use, not local, no permission), or the thread cannot start.
    pub fn start(
        listen: SocketAddr,
        metrics: Option<PrometheusHandle>,
        health: Arc<Health>,
    ) -> io::Result<MetricsServer> {
        let listener = TcpListener::bind(listen)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("eddy-metrics".into())
            .spawn(move || serve(&listener, metrics.as_ref(), &health, &flag))?;
        tracing::info!(%addr, "metrics endpoint: /metrics, /healthz, /readyz");
        Ok(MetricsServer { addr, stop, thread: Some(thread) })
    }

    /// The bound address (the real port when `listen` asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving and waits for the thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            // The thread only serves; a panic there has nothing left to report.
            let _ = t.join();
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn serve(listener: &TcpListener, metrics: Option<&PrometheusHandle>, health: &Health, stop: &AtomicBool) {
    let mut last_upkeep = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, peer)) => {
                if let Err(e) = answer(stream, metrics, health) {
                    tracing::debug!(%peer, error = %e, "metrics endpoint: request failed");
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(IDLE_SLEEP),
            Err(e) => {
                tracing::warn!(error = %e, "metrics endpoint: accept failed");
                std::thread::sleep(IDLE_SLEEP);
            }
        }
        if let Some(m) = metrics
            && last_upkeep.elapsed() >= Duration::from_secs(1)
        {
            m.run_upkeep();
            last_upkeep = Instant::now();
        }
    }
}

/// What one request gets: status line, content type, body.
#[derive(Debug, PartialEq, Eq)]
struct Reply {
    status: &'static str,
    content_type: &'static str,
    body: String,
}

fn text(status: &'static str, body: &str) -> Reply {
    Reply { status, content_type: "text/plain; charset=utf-8", body: body.to_string() }
}

/// Routes a request line (`METHOD PATH VERSION`).
fn route(request_line: &str, metrics: Option<&PrometheusHandle>, health: &Health) -> (Reply, bool) {
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return (text("400 Bad Request", "bad request line\n"), false);
    };
    let head = method == "HEAD";
    if method != "GET" && !head {
        return (text("405 Method Not Allowed", "only GET and HEAD\n"), false);
    }
    let path = target.split('?').next().unwrap_or(target);
    let reply = match path {
        "/metrics" => match metrics {
            Some(m) => {
                Reply { status: "200 OK", content_type: "text/plain; version=0.0.4; charset=utf-8", body: m.render() }
            }
            None => text("404 Not Found", "metrics are off\n"),
        },
        "/healthz" => text("200 OK", "ok\n"),
        "/readyz" => match health.not_ready_reason() {
            None => text("200 OK", "ready\n"),
            Some(why) => text("503 Service Unavailable", &format!("not ready: {why}\n")),
        },
        _ => text("404 Not Found", "not found: try /metrics, /healthz or /readyz\n"),
    };
    (reply, head)
}

fn answer(mut stream: TcpStream, metrics: Option<&PrometheusHandle>, health: &Health) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let (reply, head) = loop {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]);
            let line = head.lines().next().unwrap_or("");
            break route(line, metrics, health);
        }
        if buf.len() > MAX_HEAD {
            break (text("431 Request Header Fields Too Large", "request head too large\n"), false);
        }
    };
    let mut out = format!(
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reply.status,
        reply.content_type,
        reply.body.len()
    );
    if !head {
        out.push_str(&reply.body);
    }
    stream.write_all(out.as_bytes())?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, path: &str) -> (u16, String) {
        let mut s = TcpStream::connect(addr).expect("connect");
        write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("send");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read");
        let status = out.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
        let body = out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
        (status, body)
    }

    fn local() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 0))
    }

    #[test]
    fn healthz_is_ok_and_readyz_follows_the_source_and_the_checkpoint() {
        let health = Arc::new(Health::default());
        let server = MetricsServer::start(local(), None, health.clone()).expect("start");
        let addr = server.local_addr();
        assert_eq!(get(addr, "/healthz"), (200, "ok\n".into()));
        let (code, body) = get(addr, "/readyz");
        assert_eq!(code, 503);
        assert!(body.contains("source"), "{body}");
        health.set_sources_connected(true);
        assert_eq!(get(addr, "/readyz"), (200, "ready\n".into()));
        health.set_checkpoint_failing(true);
        let (code, body) = get(addr, "/readyz");
        assert_eq!(code, 503);
        assert!(body.contains("checkpoint"), "{body}");
        assert_eq!(get(addr, "/metrics").0, 404);
        assert_eq!(get(addr, "/nope").0, 404);
        server.stop();
        assert!(TcpStream::connect(addr).is_err(), "the port is closed once stopped");
    }

    #[test]
    fn other_methods_are_refused_and_head_has_no_body() {
        let server = MetricsServer::start(local(), None, Arc::new(Health::default())).expect("start");
        let mut s = TcpStream::connect(server.local_addr()).expect("connect");
        s.write_all(b"POST /healthz HTTP/1.1\r\n\r\n").expect("send");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read");
        assert!(out.starts_with("HTTP/1.1 405 "), "{out}");
        let mut s = TcpStream::connect(server.local_addr()).expect("connect");
        s.write_all(b"HEAD /healthz HTTP/1.1\r\n\r\n").expect("send");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read");
        assert!(out.starts_with("HTTP/1.1 200 ") && out.ends_with("\r\n\r\n"), "{out:?}");
        assert!(out.contains("Content-Length: 3\r\n"), "{out:?}");
    }

    #[test]
    fn binding_a_taken_port_fails() {
        let taken = TcpListener::bind(local()).expect("bind");
        let err = MetricsServer::start(taken.local_addr().expect("addr"), None, Arc::new(Health::default()));
        assert!(err.is_err());
    }
}
