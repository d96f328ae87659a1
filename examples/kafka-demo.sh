#!/usr/bin/env bash
# The main job through Kafka, end to end, on this machine:
#   1. installs (once) and starts a Kafka-compatible broker (tansu) on 127.0.0.1:$PORT (default 19092);
#   2. creates the topics and runs `eddy run examples/rolling-revenue-kafka.toml` against it;
#   3. feeds 40 revenue events (timestamped now) with kc, the independent client, at 10 a second;
#   4. stops eddy (SIGTERM: it commits and exits 0) and shows the output topic with kc.
# Each output message: key {"user_id": ...}, value the row (user_id, __frontier, rolling_revenue:
# the user's revenue over the last hour). Usage: examples/kafka-demo.sh   (from anywhere)
set -euo pipefail
cd "$(dirname "$0")/.."
port="${PORT:-19092}"
tools=../shared/tools/kafka
export KAFKA_BOOTSTRAP="127.0.0.1:$port"

echo "== broker (first time: builds tansu, ~15 min)"
"$tools/install" >/dev/null
"$tools/start" "$port" >/dev/null
trap '"$tools/stop" "$port"' EXIT
"$tools/kc" create revenue-events
"$tools/kc" create rolling-revenue

echo "== eddy"
cargo build -q --bin eddy
eddy="${CARGO_TARGET_DIR:-target}/debug/eddy"
"$eddy" run --no-progress examples/rolling-revenue-kafka.toml \
  --set "source.bootstrap_servers=$KAFKA_BOOTSTRAP" --set "sink.bootstrap_servers=$KAFKA_BOOTSTRAP" &
eddy_pid=$!

echo "== feeding 40 events"
python3 - <<'PY' | "$tools/kc" produce revenue-events --key-field user_id --rate 10
import datetime as dt, json, random
random.seed(7)
now = dt.datetime.now(dt.timezone.utc)
for i in range(40):
    t = now + dt.timedelta(milliseconds=100 * i)
    event = t - dt.timedelta(milliseconds=random.randint(0, 900))
    iso = lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    print(json.dumps({"user_id": f"u{random.randint(1, 4)}", "revenue": round(random.uniform(1, 100), 2),
                      "event_time": iso(event), "arrival_time": iso(t)}))
PY
sleep 2
kill -TERM "$eddy_pid"
wait "$eddy_pid"

echo "== output topic rolling-revenue (partition, offset, key, value)"
"$tools/kc" consume rolling-revenue --meta --timeout 3
