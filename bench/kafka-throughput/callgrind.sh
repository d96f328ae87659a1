#!/usr/bin/env bash
# Instructions per message (callgrind: exact, unaffected by machine load) of `eddy run` reading a
# Kafka topic of bids into the discarding q7 of run.sh, for one or more eddy binaries:
#
#   bench/kafka-throughput/callgrind.sh [-s SMALL] [-l LARGE] NAME=EDDY...
#
# As run.sh, on two topics (SMALL and LARGE bids, one partition): each binary runs under
# `valgrind --tool=callgrind` on each topic until eddy_records_in_total reaches the topic's size,
# then is stopped (SIGTERM). Instructions per message = (Ir(LARGE) - Ir(SMALL)) / (LARGE - SMALL):
# start-up and stop cancel out. The profiles stay in OUT (default /tmp/kafka-callgrind) for
# callgrind_annotate; the top functions of the LARGE run's profile are printed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
tools="$repo/../shared/tools"
small=20000 large=100000 out="${OUT:-/tmp/kafka-callgrind}"
while getopts "s:l:" o; do
  case "$o" in s) small="$OPTARG" ;; l) large="$OPTARG" ;; *) sed -n 2,12p "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n 2,12p "$0"; exit 2; }
mkdir -p "$out"
work="$(mktemp -d /tmp/kafka-callgrind.XXXXXX)"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port="$(free_port)"
broker_pid="$("$tools/kafka/start" "$port")"
cleanup() { kill "$broker_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
export KAFKA_BOOTSTRAP="127.0.0.1:$port"
py="${KAFKA_TOOLS:-$HOME/.cache/kafka-tools}/venv/bin/python"
"$tools/kafka/kc" create bids-small
"$tools/kafka/kc" create bids-large
python3 "$tools/peers/gen_bids.py" "$large" "$work/large.jsonl"
head -n "$small" "$work/large.jsonl" > "$work/small.jsonl"
"$py" "$here/produce.py" "$KAFKA_BOOTSTRAP" bids-small "$work/small.jsonl"
"$py" "$here/produce.py" "$KAFKA_BOOTSTRAP" bids-large "$work/large.jsonl"

# profile NAME BIN TOPIC N -> prints the total instructions
profile() {
  local name="$1" bin="$2" topic="$3" n="$4" mport pid got start file
  mport="$(free_port)"
  file="$out/$name-$topic.callgrind"
  valgrind --tool=callgrind --callgrind-out-file="$file" "$bin" run "$here/q7-kafka.toml" \
    --set "source.bootstrap_servers=$KAFKA_BOOTSTRAP" --set "source.topic=$topic" \
    --set "source.group_id=cg-$name-$topic" --set "metrics.listen=127.0.0.1:$mport" \
    > /dev/null 2> "$work/$name-$topic.log" &
  pid=$!
  start=$(date +%s)
  while :; do
    got="$(curl -s "http://127.0.0.1:$mport/metrics" 2>/dev/null | awk '/^eddy_records_in_total/ {print $2}')"
    [ -n "$got" ] && [ "${got%.*}" -ge "$n" ] && break
    kill -0 "$pid" 2>/dev/null || { echo "callgrind.sh: eddy exited early: $(tail -5 "$work/$name-$topic.log")" >&2; exit 1; }
    [ $(( $(date +%s) - start )) -lt 900 ] || { echo "callgrind.sh: $name read ${got:-0} of $n" >&2; exit 1; }
    sleep 0.2
  done
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  callgrind_annotate "$file" 2>/dev/null | awk '/PROGRAM TOTALS/ && !done {gsub(",", "", $1); print $1; done = 1}'
}

for a in "$@"; do
  name="${a%%=*}" bin="${a#*=}"
  is="$(profile "$name" "$bin" bids-small "$small")"
  il="$(profile "$name" "$bin" bids-large "$large")"
  echo "$name: $is instructions ($small messages), $il ($large): $(( (il - is) / (large - small) )) per message"
  callgrind_annotate --inclusive=no "$out/$name-bids-large.callgrind" 2>/dev/null | sed -n "/^Ir/,\$p" | sed -n 1,30p
done
