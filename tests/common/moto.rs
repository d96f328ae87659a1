//! A real S3 server for the tests of `s3://` checkpoints: moto's (`moto_server`, from PyPI;
//! `scripts/test.sh` installs it into `~/.cache/moto-venv`, or `MOTO_SERVER` names the command),
//! started by each test on a free loopback port and stopped when dropped. moto 5.2.5 answers a
//! PutObject with `If-None-Match: *` on an existing key with 412, as S3 does.
//!
//! Shared by eddy-actors' unit tests of its object store (included with `#[path]`) and the
//! end-to-end tests (`tests/checkpoint_s3.rs`, `tests/delta_sink.rs`).

// each test binary that includes this module uses some of its helpers
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `moto_server` on a free loopback port with the bucket `eddy`, stopped when dropped.
pub struct Moto {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    /// The `moto_server` command.
    server: PathBuf,
}

/// The `moto_server` command: `MOTO_SERVER`, or scripts/test.sh's venv.
fn server() -> PathBuf {
    std::env::var_os("MOTO_SERVER").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/moto-venv/bin/moto_server")
    })
}

impl Moto {
    /// Starts the server and creates the bucket `eddy`.
    ///
    /// # Panics
    /// When moto is not installed, or does not answer within 60 s.
    pub fn start() -> Moto {
        let server = server();
        assert!(server.exists(), "{} missing: scripts/test.sh installs it (or set MOTO_SERVER)", server.display());
        Moto::start_at(server)
    }

    /// [`Moto::start`]; `None` when moto is not installed and the variable `CI` is unset, after
    /// printing why the test `test` is skipped.
    ///
    /// # Panics
    /// When moto is missing under `CI` (set to anything), or does not answer within 60 s.
    pub fn start_or_skip(test: &str) -> Option<Moto> {
        let server = server();
        if !server.exists() {
            assert!(
                std::env::var_os("CI").is_none(),
                "{} missing (CI is set, so the S3 tests cannot be skipped): scripts/test.sh installs it, or set MOTO_SERVER",
                server.display()
            );
            // the reason must reach whoever runs the tests: cargo test shows a test's stderr
            #[allow(clippy::print_stderr)]
            {
                eprintln!(
                    "skipping {test}: {} missing and CI unset (scripts/test.sh installs moto, or set MOTO_SERVER)",
                    server.display()
                );
            }
            return None;
        }
        Some(Moto::start_at(server))
    }

    /// Starts `server` on a free port and creates the bucket `eddy`.
    fn start_at(server: PathBuf) -> Moto {
        let port = free_port();
        let child = Command::new(&server)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", server.display()));
        let moto = Moto { child, endpoint: format!("http://127.0.0.1:{port}"), server };
        let started = Instant::now();
        loop {
            match http_request(port, "PUT /eddy HTTP/1.1") {
                Some(status) => {
                    assert!(status.contains(" 200"), "creating the bucket: {status}");
                    return moto;
                }
                None if started.elapsed() < Duration::from_secs(60) => std::thread::sleep(Duration::from_millis(200)),
                None => panic!("moto_server did not answer on port {port} within 60 s"),
            }
        }
    }

    /// Copies object `from` to `to` in the bucket `eddy` (boto3, which moto's venv has).
    pub fn copy(&self, from: &str, to: &str) {
        let python = self.server.parent().unwrap().join("python");
        let script = "import sys, boto3\n\
                      s3 = boto3.client('s3')\n\
                      s3.copy_object(Bucket='eddy', Key=sys.argv[2], CopySource={'Bucket': 'eddy', 'Key': sys.argv[1]})\n";
        let out = Command::new(python).arg("-c").arg(script).arg(from).arg(to).envs(self.env()).output().unwrap();
        assert!(out.status.success(), "copying {from} to {to}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// The `AWS_*` variables that point a client at this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        env_for(&self.endpoint)
    }

    /// The same as object_store's S3 options (for a store opened in the test's own process,
    /// whose environment the tests leave alone).
    pub fn options(&self) -> HashMap<String, String> {
        self.env().into_iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        // the server may have exited already; nothing else to do in a drop
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `AWS_*` variables that point a client at `endpoint` (a moto server, or a closed port).
pub fn env_for(endpoint: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AWS_ENDPOINT_URL", endpoint.to_string()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID", "testing".into()),
        ("AWS_SECRET_ACCESS_KEY", "testing".into()),
        ("AWS_ALLOW_HTTP", "true".into()),
    ]
}

/// A loopback port nothing listens on (as the kernel hands out: free a moment ago).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Sends `request_line` (no body) to the loopback port; the response's status line, or `None`
/// when nothing answers.
fn http_request(port: u16, request_line: &str) -> Option<String> {
    use std::io::{BufRead, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(stream, "{request_line}\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut status = String::new();
    std::io::BufReader::new(stream).read_line(&mut status).ok()?;
    (!status.is_empty()).then_some(status)
}
