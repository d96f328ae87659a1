#!/usr/bin/env bash
# Crash test, Kafka to Kafka (checkpoints and recovery): for a window aggregate (append and
# update), a rolling window and a deduplication (scripts/crash/kafka/*.toml: real-time under the
# replay clock, so that every run cuts the same epochs), the input is produced to a one-partition
# topic of a real broker (tansu, ../shared/tools/kafka), and:
#   - an uninterrupted run writes to one output topic (stopped with SIGTERM once it has read
#     every input message: it commits the last epoch and exits 0);
#   - the crashed run writes to another: `eddy run` is killed with SIGKILL at KILLS random
#     instants and restarted each time with a random `parallelism` from 1 to 3; the last start
#     runs until it has read every message and is stopped as the uninterrupted run was.
# Both topics are read back with an independent client (scripts/crash/kafka_read.py, on the
# confluent-kafka that kc uses) and compared epoch by epoch (every message names its epoch in
# its `eddy.epoch` header) by scripts/crash/compare_kafka.py, which checks what the Kafka sink
# guarantees at least once:
#   - nothing lost: every row of each epoch of the uninterrupted run is in the crashed run's
#     same epoch, at least as often;
#   - duplicates only inside the epoch in flight: an epoch committed before every kill is
#     identical; an epoch in flight at some kill (not committed) holds each row of the
#     uninterrupted run at most once per such kill more, plus what the killed runs wrote of it
#     (real-time update rows are cut per poll, so a partial epoch may hold a superseded update).
#     Details: scripts/crash/compare_kafka.py.
# With `exactly_once = true` the crashed run's topic, read by a read_committed consumer, must be
# identical to the uninterrupted run's. That part runs only on a broker that commits
# transactions: tansu 0.6.0 does not (EndTxn is unsupported), so it is skipped with the broker's
# answer; the transactional path is unit-tested on rdkafka's mock cluster
# (connectors/src/kafka/tests.rs).
#
# Usage: scripts/crash-test-kafka.sh [PIPELINE.toml ...]   (default: scripts/crash/kafka/*.toml)
# Environment: KILLS (20), FILES (10) and LINES (4000): input size; SEED (random);
# EDDY: the binary (default: built in debug); KAFKA_TOOLS (~/.cache/kafka-tools): the broker.
# Without the broker the test is skipped loudly (exit 0), or fails under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${KILLS:-20}
files=${FILES:-10}
lines=${LINES:-4000}
seed=${SEED:-$RANDOM}
RANDOM=$seed
tools=../shared/tools/kafka
tansu="${KAFKA_TOOLS:-$HOME/.cache/kafka-tools}/bin/tansu"
if [ ! -x "$tansu" ]; then
  msg="the Kafka test broker is not installed ($tansu; run $tools/install)"
  if [ "${CI:-}" = true ]; then echo "crash-test-kafka: $msg" >&2; exit 1; fi
  echo "!!!!!!!! SKIPPED crash-test-kafka: $msg !!!!!!!!" >&2
  exit 0
fi
if [ -z "${EDDY:-}" ]; then
  cargo build -q --bin eddy
  EDDY="${CARGO_TARGET_DIR:-target}/debug/eddy"
fi
"$tools/kc" --help >/dev/null # makes kc's Python environment, which kafka_read.py uses
py="${KAFKA_TOOLS:-$HOME/.cache/kafka-tools}/venv/bin/python"
pipelines=("$@")
[ ${#pipelines[@]} -gt 0 ] || pipelines=(scripts/crash/kafka/*.toml)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
work=$(mktemp -d)
port=$(free_port)
boot="127.0.0.1:$port"
"$tansu" broker --listener-url "tcp://$boot" --advertised-listener-url "tcp://$boot" \
  --storage-engine "memory://tansu-$port/" >"$work/broker.log" 2>&1 </dev/null &
broker=$!
trap 'kill "$broker" 2>/dev/null; wait "$broker" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do "$tansu" topic list --broker "tcp://$boot" >/dev/null 2>&1 && break; sleep 0.1; done
export KAFKA_BOOTSTRAP=$boot

python3 scripts/crash/gen.py "$work/input" "$files" "$lines"
total=$((files * lines))
"$tools/kc" create input
cat "$work"/input/*.json | "$tools/kc" produce input
echo "crash test (Kafka): $total records, $kills kills per pipeline, seed $seed, broker $boot"

# The sum of a metric's series at a metrics endpoint; empty when not up or not there.
metric() {
  python3 - "$1" "$2" <<'PY'
import sys, urllib.request
try:
    body = urllib.request.urlopen(f"http://{sys.argv[1]}/metrics", timeout=2).read().decode()
except Exception:
    sys.exit(0)
# Series of one source partition only (the consumer lag has a "none" series before any).
vals = [float(l.rsplit(" ", 1)[1]) for l in body.splitlines()
        if l.split("{")[0].split(" ")[0] == sys.argv[2] and 'source_partition="none"' not in l]
if vals:
    print(sum(vals))
PY
}

# start DIR TOPIC PARALLELISM [SETS...]: eddy in the background ($pid), its metrics at $listen.
# A new consumer group each start: a start without a checkpoint reads through the group, and a
# killed run stays a member until the broker expires it (session.timeout.ms, 45 s), holding its
# partitions meanwhile. (A start with a checkpoint reads by assignment, outside the group.)
start() {
  local dir=$1 topic=$2 par=$3
  shift 3
  listen="127.0.0.1:$(free_port)"
  "$EDDY" run "$dir/pipeline.toml" --no-progress --set "source.bootstrap_servers=$boot" \
    --set "sink.bootstrap_servers=$boot" --set "sink.topic=$topic" --set "metrics.listen=$listen" \
    --set "parallelism=$par" --set "source.group_id=crash-$RANDOM$RANDOM" "$@" 2>>"$dir/log" &
  pid=$!
}

# finish DIR: waits until the run read every input message (consumer lag 0 and the records read
# unchanged, twice, a statistics report apart), then SIGTERM: it commits the last epoch and exits
# 0. (The lag alone is not enough on tansu 0.6.0, whose high watermark is the base offset of the
# last record batch plus one: the lag reads 0 from the first message of the input's last batch.)
finish() {
  local zero=0 waited=0 seen="" now
  while [ $zero -lt 2 ]; do
    kill -0 "$pid" 2>/dev/null || { echo "eddy exited early:"; tail -20 "$1/log"; return 1; }
    now=$(metric "$listen" eddy_records_in_total)
    if [ "$(metric "$listen" eddy_kafka_consumer_lag_records)" = "0.0" ] && [ -n "$now" ] && [ "$now" = "$seen" ]; then
      zero=$((zero + 1))
    else
      zero=0
    fi
    seen=$now
    sleep 0.6
    waited=$((waited + 1))
    [ $waited -lt 500 ] || { echo "eddy did not read the input within 5 minutes"; tail -20 "$1/log"; return 1; }
  done
  kill -TERM "$pid"
  wait "$pid" || { echo "eddy exited with $? after SIGTERM"; tail -20 "$1/log"; return 1; }
}

# The epoch a start restored, from its log: N; -1 when it found no checkpoint (its source
# subscribed from the start); empty when it was killed before getting that far.
restored() {
  local plain
  plain=$(sed 's/\x1b\[[0-9;]*m//g' "$1")
  if grep -q 'restored checkpoint epoch=' <<<"$plain"; then
    grep -o 'restored checkpoint epoch=[0-9]*' <<<"$plain" | tail -1 | sed 's/.*=//'
  elif grep -q 'Kafka source subscribed' <<<"$plain"; then
    echo -1
  fi
}

# run_pipeline FILE LABEL ISOLATION [SETS...]
failed=0
run_pipeline() {
  local p=$1 label=$2 isolation=$3
  shift 3
  local name
  name=$(basename "$p" .toml)
  local ref="$work/$name$label-ref" crash="$work/$name$label-crash"
  mkdir -p "$ref" "$crash"
  cp "$p" "$ref/pipeline.toml"
  cp "$p" "$crash/pipeline.toml"
  "$tools/kc" create "$name$label-ref"
  "$tools/kc" create "$name$label-crash"
  local began took_ms read_ms=""
  began=$(date +%s%N)
  EDDY_LOG=warn start "$ref" "$name$label-ref" 2 "$@"
  # How long the run takes to read the whole input (the records read, every 20 ms): the kills
  # are spread over that span. (The wall time to the stop is no measure: it is mostly the wait
  # for the lag to read 0.)
  for _ in $(seq 1 3000); do
    if [ "$(curl -s --max-time 1 "http://$listen/metrics" | awk '$1 ~ /^eddy_records_in_total([{]|$)/ { n += $2 } END { print n + 0 }')" -ge "$total" ]; then
      read_ms=$(( ($(date +%s%N) - began) / 1000000 ))
      break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.02
  done
  finish "$ref" || { failed=1; return; }
  took_ms=$(( ($(date +%s%N) - began) / 1000000 ))
  [ -n "$read_ms" ] || { echo "the uninterrupted run never reported $total records read"; failed=1; return; }
  local killed=0
  for i in $(seq 1 "$kills"); do
    EDDY_LOG=info start "$crash" "$name$label-crash" $(( 1 + RANDOM % 3 )) "$@"
    # A random instant from 150 ms (connecting and restoring come first) to that plus a quarter of the
    # time the uninterrupted run took to read the input: each run gets a part of the input read.
    local delay_ms=$(( 150 + RANDOM % (read_ms / 4 + 1) ))
    sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
    if kill -9 "$pid" 2>/dev/null; then killed=$((killed + 1)); fi
    wait "$pid" 2>/dev/null || true
    cp "$crash/log" "$crash/log.$i"
    : >"$crash/log"
  done
  EDDY_LOG=info start "$crash" "$name$label-crash" $(( 1 + RANDOM % 3 )) "$@"
  finish "$crash" || { failed=1; return; }
  cp "$crash/log" "$crash/log.$((kills + 1))"
  # What the start after each kill restored. A start killed before it got that far changed
  # nothing: it counts as the next start's restore.
  local list="" next=-1 r
  for i in $(seq $((kills + 1)) -1 2); do
    r=$(restored "$crash/log.$i")
    [ -z "$r" ] || next=$r
    list="$next${list:+,}$list"
  done
  "$py" scripts/crash/kafka_read.py "$boot" "$name$label-ref" --isolation "$isolation" >"$work/$name$label-ref.jsonl"
  "$py" scripts/crash/kafka_read.py "$boot" "$name$label-crash" --isolation "$isolation" >"$work/$name$label-crash.jsonl"
  printf '%-22s uninterrupted %5d ms (input read in %d ms); %2d of %d runs killed mid-run; restored epochs %s\n    ' \
    "$name$label" "$took_ms" "$read_ms" "$killed" "$kills" "$list"
  local exact=()
  [ -z "$label" ] || exact=(--exact)
  if ! python3 scripts/crash/compare_kafka.py "$work/$name$label-ref.jsonl" "$work/$name$label-crash.jsonl" "$list" "${exact[@]}"; then
    echo "    FAILED (seed $seed)"
    failed=1
  fi
}

for p in "${pipelines[@]}"; do
  run_pipeline "$p" "" read_uncommitted
done

"$tools/kc" create txn-probe
if why=$("$py" scripts/crash/kafka_read.py "$boot" txn-probe --probe-transactions); then
  for p in "${pipelines[@]}"; do
    run_pipeline "$p" "-eo" read_committed --set sink.exactly_once=true
  done
else
  echo "!!!!!!!! SKIPPED exactly_once (read_committed, identical): the broker does not commit transactions: $why"
  echo "!!!!!!!! (tansu has no EndTxn; the transactional path is unit-tested on rdkafka's mock cluster)"
fi
exit $failed
