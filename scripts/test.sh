#!/usr/bin/env bash
# Installs what the tests need, then runs every check CI runs: format, lints, docs, tests.
# Usage: scripts/test.sh          (from anywhere; ../shared must sit beside the repository)
#        EDDY_TEST_DELTA=0 scripts/test.sh   (skips the Delta sink's build and tests, and those of
#                                             S3 checkpoints, which share its object_store build)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

say() { printf '\n== %s\n' "$*"; }

if [ ! -d ../shared ]; then
  echo "scripts/test.sh: ../shared (cases, tools, data) must sit beside the repository" >&2
  exit 2
fi

say "system packages"
need=()
# rdkafka builds its bundled librdkafka (gcc, g++, make, pkg-config, zlib1g-dev); kc (the Kafka
# tests' independent client) makes a Python venv.
dpkg -s zlib1g-dev >/dev/null 2>&1 || need+=(zlib1g-dev)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
command -v python3 >/dev/null || need+=(python3)
command -v gcc >/dev/null || need+=(gcc)
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
command -v pkg-config >/dev/null || need+=(pkg-config)
# The Delta sink's build and tests run unless EDDY_TEST_DELTA=0.
test_delta=${EDDY_TEST_DELTA:-1}
# A Java runtime for pyspark (tests/delta_sink.rs reads Delta tables' Parquet files with it).
if [ "$test_delta" != 0 ] && ! command -v java >/dev/null; then need+=(openjdk-17-jre-headless); fi
# Prometheus and promtool for tests/prometheus (the package starts no service here; the test
# starts `prometheus` by hand on a loopback port).
command -v promtool >/dev/null && command -v prometheus >/dev/null || need+=(prometheus)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; else sudo apt-get install -y -qq "${need[@]}"; fi
fi

# The Kafka test broker (tansu, built from crates.io once into ~/.cache/kafka-tools; about 15-25
# minutes on a fresh 2-core machine) builds in the background, at low priority, while the
# workspace compiles; the tests wait for it below. Each Kafka test starts and stops its own broker
# on free loopback ports (tests/kafka_common/mod.rs), so nothing else needs to run.
say "Kafka test broker: installing in the background"
kafka_log=$(mktemp)
nice -n 19 ../shared/tools/kafka/install >"$kafka_log" 2>&1 &
kafka_install=$!

# The Delta sink (the cargo feature `delta`: README.md "Delta Lake tables") is built and tested
# unless EDDY_TEST_DELTA=0: its dependencies (delta-rs, arrow, parquet, object_store, rustls; about
# 210 crates) about double the crates to build, so only the binaries that use it are built with
# it: the sink's unit tests, tests/delta_sink.rs and the `eddy` binary the crash tests run. Its
# build adds at most about 1100 CPU seconds, 10 minutes on 2 quiet cores, and its tests about 2
# minutes (bench/results/delta-build.md).
# Its independent readers, delta-rs's Python binding with pyarrow (pinned, a venv of their own)
# and pyspark (the Spark oracle's venv), and the S3 server of the s3:// tests (moto, pinned, a
# venv of its own), install in the background while the workspace compiles.
delta=()
if [ "$test_delta" != 0 ]; then
  delta=(--features delta)
  # the sink's unit tests (and the eddy library's), tests/delta_sink.rs and the eddy binary; and
  # checkpoints on S3 (the feature `s3`, which `delta` turns on, reusing its object_store build):
  # the object store's unit tests (eddy-actors', about 10 s for all of them) and
  # tests/checkpoint_s3.rs, both against moto
  delta_tests=(-p eddy-connectors -p eddy-actors -p eddy --features delta --lib --test delta_sink --test checkpoint_s3)
  say "Delta table readers (deltalake, pyarrow; pyspark) and S3 server (moto): installing in the background"
  readers_log=$(mktemp)
  (
    set -e
    delta_venv="$HOME/.cache/delta-reader-venv"
    if ! "$delta_venv/bin/python" -c 'import deltalake as d, pyarrow as p; assert (d.__version__, p.__version__) == ("1.6.6", "26.0.1")' 2>/dev/null; then
      python3 -m venv "$delta_venv"
      "$delta_venv/bin/pip" install -q "deltalake==1.6.6" "pyarrow==26.0.1"
    fi
    # moto 5.2.5's S3 server answers a PutObject with If-None-Match: * on an existing key with
    # 412, as S3 does (the conditional put of each version's log file).
    moto_venv="$HOME/.cache/moto-venv"
    if ! "$moto_venv/bin/python" -c 'import moto; assert moto.__version__ == "5.2.5"' 2>/dev/null; then
      python3 -m venv "$moto_venv"
      "$moto_venv/bin/pip" install -q "moto[s3,server]==5.2.5"
    fi
    ../shared/tools/spark-oracle/setup.sh
  ) >"$readers_log" 2>&1 &
  readers_install=$!
fi

say "rust components"
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt clippy

say "cargo fmt --check"
cargo fmt --all -- --check

say "cargo clippy (warnings denied)"
cargo clippy --workspace --all-targets -- -D warnings
if [ ${#delta[@]} -gt 0 ]; then
  # the Delta sink's code and tests too (checking its dependencies: about 130 CPU seconds)
  cargo clippy -p eddy-connectors -p eddy-actors -p eddy -p eddy-bench --features delta --all-targets -- -D warnings
fi

say "cargo doc (warnings denied)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q
if [ ${#delta[@]} -gt 0 ]; then
  RUSTDOCFLAGS="-D warnings" cargo doc -p eddy-connectors -p eddy-actors -p eddy --features delta --no-deps -q
fi

say "cargo test (building; the Kafka broker install goes on meanwhile)"
cargo test --workspace --no-run -q
if [ ${#delta[@]} -gt 0 ]; then
  say "cargo test --features delta (building the Delta sink's tests and the eddy binary with it)"
  # One cargo command for both packages, here and below: their dependencies' features are then
  # resolved once, so each dependency is built once (two commands built parquet, arrow and
  # most of delta-rs twice, with slightly different feature sets).
  cargo test "${delta_tests[@]}" --no-run -q
fi

say "Kafka test broker: waiting for the install"
if ! wait "$kafka_install"; then
  echo "scripts/test.sh: the Kafka test broker could not be installed:" >&2
  cat "$kafka_log" >&2
  exit 1
fi
echo "broker: $(tail -1 "$kafka_log")"

say "cargo test"
cargo test --workspace

if [ ${#delta[@]} -gt 0 ]; then
  say "Delta table readers and S3 server: waiting for the install"
  if ! wait "$readers_install"; then
    echo "scripts/test.sh: the Delta table readers could not be installed:" >&2
    cat "$readers_log" >&2
    exit 1
  fi
  say "cargo test --features delta (the Delta sink: its unit tests; tables in folders and on S3 (moto) read back by delta-rs and Spark; checkpoints on S3)"
  cargo test "${delta_tests[@]}"
fi

# Every crash test runs the same binary (with the Delta sink unless EDDY_TEST_DELTA=0), already
# built by the tests.
cargo build -q --bin eddy "${delta[@]}"
export EDDY="${CARGO_TARGET_DIR:-target}/debug/eddy"

say "crash test (checkpoints: SIGKILL at 20 random instants per pipeline, output identical)"
scripts/crash-test.sh

if [ ${#delta[@]} -gt 0 ]; then
  say "crash test, Delta table (SIGKILL at 20 random instants; the table equals an uninterrupted run's, no batch twice, no file outside the log)"
  scripts/crash-test.sh scripts/crash/delta/window-append.toml
fi

say "crash test, a registered stateful processor (the fraud example's binary; SIGKILL at 20 random instants, output identical)"
cargo build -q --example fraud
EDDY="${CARGO_TARGET_DIR:-target}/debug/examples/fraud" scripts/crash-test.sh scripts/crash/processor/fraud.toml

say "crash test, graceful stops (SIGTERM at random instants, restarts; every epoch / batch identical)"
# Three times the default input: a stopped run keeps its progress, so more input keeps most of
# the 20 stops mid-run (about a minute in a debug build).
SIGNAL=TERM FILES=120 scripts/crash-test.sh scripts/crash/rolling.toml scripts/crash/window-update.toml
# Micro-batch: files larger than one poll, so a stop lands inside a batch's source unit.
SIGNAL=TERM KILLS=8 FILES=5 LINES=12000 scripts/crash-test.sh scripts/crash/window-append.toml scripts/crash/dedup.toml

say "crash test, followed files (a writer appends split lines; SIGKILL at 20 random instants; counts per key exact)"
scripts/crash-test-follow.sh

say "crash test, Kafka to Kafka (SIGKILL at 20 random instants per pipeline; nothing lost, duplicates only in epochs in flight)"
scripts/crash-test-kafka.sh

say "all checks passed"
