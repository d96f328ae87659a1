#!/usr/bin/env bash
# Installs what the tests need, then runs every check CI runs: format, lints, docs, tests.
# Usage: scripts/test.sh          (from anywhere; ../shared must sit beside the repository)
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
command -v python3 >/dev/null || need+=(python3)
command -v gcc >/dev/null || need+=(gcc)
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
command -v pkg-config >/dev/null || need+=(pkg-config)
# Prometheus and promtool for tests/prometheus (the package starts no service here; the test
# starts `prometheus` by hand on a loopback port).
command -v promtool >/dev/null && command -v prometheus >/dev/null || need+=(prometheus)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; else sudo apt-get install -y -qq "${need[@]}"; fi
fi

say "rust components"
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt clippy

say "cargo fmt --check"
cargo fmt --all -- --check

say "cargo clippy (warnings denied)"
cargo clippy --workspace --all-targets -- -D warnings

say "cargo doc (warnings denied)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q

say "cargo test"
cargo test --workspace

say "all checks passed"
