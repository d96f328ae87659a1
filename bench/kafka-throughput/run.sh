#!/usr/bin/env bash
# Records per CPU-second of `eddy run` reading a Kafka topic of bids into a discarding query
# (q7-kafka.toml: tumbling 10 s max per auction, rows to stdout -> /dev/null), for one or more
# eddy binaries, alternated round by round (issue 27, "Kafka: records per CPU-second").
#
#   bench/kafka-throughput/run.sh [-s SMALL] [-l LARGE] [-p PARTITIONS] [-r ROUNDS] NAME=EDDY...
#   e.g. bench/kafka-throughput/run.sh before=/work/eddy-before-kafka after=target/release/eddy
#
# Starts its own broker (../shared/tools/kafka/start, tansu in memory) on a free port, creates two
# topics of SMALL and LARGE bids (../shared/tools/peers/gen_bids.py; produced in large record
# batches by produce.py), then per round and per binary runs eddy on each topic: it waits until
# eddy_records_in_total (the metrics endpoint) reaches the topic's size, reads the process's CPU
# time at that moment (utime + stime of /proc/PID/stat, every thread, in clock ticks), and stops
# it. records per CPU-second = (LARGE - SMALL) / (cpu(LARGE) - cpu(SMALL)): start-up (connecting,
# the group join, librdkafka's threads) costs the same in both runs and cancels out.
# Prints one line per run and a table: median and spread (min-max) of each binary's rate.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
tools="$repo/../shared/tools"
small=250000 large=1250000 partitions=1 rounds=3
while getopts "s:l:p:r:" o; do
  case "$o" in
    s) small="$OPTARG" ;; l) large="$OPTARG" ;; p) partitions="$OPTARG" ;; r) rounds="$OPTARG" ;;
    *) sed -n 2,16p "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n 2,16p "$0"; exit 2; }
names=() bins=()
for a in "$@"; do
  names+=("${a%%=*}"); b="${a#*=}"
  [ -x "$b" ] || { echo "run.sh: $b is not an executable" >&2; exit 2; }
  bins+=("$(cd "$(dirname "$b")" && pwd)/$(basename "$b")")
done
work="$(mktemp -d /tmp/kafka-throughput.XXXXXX)"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port="$(free_port)"
broker_pid="$("$tools/kafka/start" "$port")"
cleanup() { kill "$broker_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
export KAFKA_BOOTSTRAP="127.0.0.1:$port"
py="${KAFKA_TOOLS:-$HOME/.cache/kafka-tools}/venv/bin/python"
"$tools/kafka/kc" create bids-small --partitions "$partitions"
"$tools/kafka/kc" create bids-large --partitions "$partitions"
python3 "$tools/peers/gen_bids.py" "$large" "$work/large.jsonl"
head -n "$small" "$work/large.jsonl" > "$work/small.jsonl"
"$py" "$here/produce.py" "$KAFKA_BOOTSTRAP" bids-small "$work/small.jsonl"
"$py" "$here/produce.py" "$KAFKA_BOOTSTRAP" bids-large "$work/large.jsonl"
tck="$(getconf CLK_TCK)"

# run BIN TOPIC N GROUP -> prints CPU seconds at the moment N records were read
run() {
  local bin="$1" topic="$2" n="$3" group="$4" mport pid got=0 ticks start
  mport="$(free_port)"
  "$bin" run "$here/q7-kafka.toml" --set "source.bootstrap_servers=$KAFKA_BOOTSTRAP" \
    --set "source.topic=$topic" --set "source.group_id=$group" --set "metrics.listen=127.0.0.1:$mport" \
    > /dev/null 2> "$work/$group.log" &
  pid=$!
  start=$(date +%s)
  while :; do
    got="$(curl -s "http://127.0.0.1:$mport/metrics" 2>/dev/null | awk '/^eddy_records_in_total/ {print $2}')"
    [ -n "$got" ] && [ "${got%.*}" -ge "$n" ] && break
    kill -0 "$pid" 2>/dev/null || { echo "run.sh: eddy exited early; log: $(tail -5 "$work/$group.log")" >&2; exit 1; }
    [ $(( $(date +%s) - start )) -lt 600 ] || { echo "run.sh: $group read ${got:-0} of $n in 600 s" >&2; exit 1; }
    sleep 0.02
  done
  ticks="$(awk '{print $14 + $15}' "/proc/$pid/stat")"
  kill -TERM "$pid"
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  python3 -c "print($ticks / $tck)"
}

results="$work/results"
: > "$results"
for r in $(seq 1 "$rounds"); do
  for i in "${!bins[@]}"; do
    # alternate which binary goes first
    k=$(( (i + r) % ${#bins[@]} ))
    name="${names[$k]}" bin="${bins[$k]}"
    cs="$(run "$bin" bids-small "$small" "g-$name-$r-s")"
    cl="$(run "$bin" bids-large "$large" "g-$name-$r-l")"
    rate="$(python3 -c "print(round(($large - $small) / ($cl - $cs)))")"
    echo "round $r $name: cpu ${cs} s ($small records), ${cl} s ($large records): $rate records per CPU-second"
    echo "$name $r $cs $cl $rate" >> "$results"
  done
done
python3 - "$results" "${names[@]}" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
names = sys.argv[2:]
print()
print("| binary | " + " | ".join(f"round {r}" for r in sorted({int(x[1]) for x in rows})) + " | median | spread |")
print("|---" * (len({x[1] for x in rows}) + 3) + "|")
med = {}
for n in names:
    rates = [int(x[4]) for x in rows if x[0] == n]
    med[n] = statistics.median(rates)
    print(f"| {n} | " + " | ".join(f"{v:,}" for v in rates) + f" | {med[n]:,.0f} | {min(rates):,}-{max(rates):,} |")
if len(names) >= 2:
    print(f"\n{names[-1]} / {names[0]} (medians): {med[names[-1]] / med[names[0]]:.2f}x")
PY
