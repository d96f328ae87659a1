#!/usr/bin/env bash
# The pause a rebalance causes on the output of a shared Kafka group (issue 26): three eddy
# processes of rolling.toml read an 8-partition topic fed at RATE events a second for SECONDS;
# in the `rebalance` run a fourth process joins at a third of the feed and leaves (SIGTERM) at
# two thirds, each a rebalance of the whole group; the `steady` run has no membership change.
# Latency per output row: its broker timestamp minus its input event's (measure.py). Both runs
# alternate ROUNDS times in one session. Results: bench/results/group-rebalance.md.
# Usage: bench/group-rebalance/run.sh [ROUNDS]   (release build of eddy)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-2}"
rate="${RATE:-500}"
seconds="${SECONDS_FEED:-30}"
tools=../shared/tools/kafka
export KAFKA_BOOTSTRAP="127.0.0.1:19093"
py="${KAFKA_TOOLS:-$HOME/.cache/kafka-tools}/venv/bin/python"
work=$(mktemp -d /tmp/eddy-group-bench.XXXXXX)
cargo build -q --release --bin eddy
eddy=target/release/eddy
"$tools/install" >/dev/null

one_run() { # $1: steady | rebalance, $2: round
  local mode=$1 dir="$work/$1-$2"
  mkdir -p "$dir"
  "$tools/start" 19093 >/dev/null
  "$tools/kc" create bench-keyed --partitions 8
  "$tools/kc" create bench-out --partitions 8
  sed "s#CHECKPOINTS#$dir/checkpoints#" bench/group-rebalance/rolling.toml >"$dir/rolling.toml"
  local pids=() i
  for i in 1 2 3; do
    "$eddy" run --no-progress "$dir/rolling.toml" >"$dir/p$i.log" 2>&1 &
    pids+=($!)
    sleep 2   # the first leads the group (the test broker loses a group whose leader dies)
  done
  sleep 3
  : >"$dir/marks"
  "$py" bench/group-rebalance/measure.py produce $((rate * seconds)) "$rate" &
  local feed=$!
  if [ "$mode" = rebalance ]; then
    sleep $((seconds / 3))
    date +%s.%N >>"$dir/marks"
    "$eddy" run --no-progress "$dir/rolling.toml" >"$dir/p4.log" 2>&1 &
    local fourth=$!
    sleep $((seconds / 3))
    date +%s.%N >>"$dir/marks"
    kill -TERM "$fourth"
  fi
  wait "$feed"
  sleep 8
  kill -TERM "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  echo "### $mode, round $2"
  echo
  echo "| rows | n | p50 ms | p99 ms | p99.9 ms | max ms |"
  echo "|---|---|---|---|---|---|"
  "$py" bench/group-rebalance/measure.py latency x "$dir/marks"
  echo
  "$tools/stop" 19093 >/dev/null 2>&1 || true
}

echo "# shared group: output latency with and without rebalances ($rate events/s for $seconds s, 3 processes, 8 partitions)"
echo
for r in $(seq 1 "$rounds"); do
  one_run steady "$r"
  one_run rebalance "$r"
done
echo "logs: $work"
