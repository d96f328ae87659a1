#!/usr/bin/env bash
# Three eddy processes sharing one Kafka consumer group, on this machine (README "Running several
# instances"):
#   1. starts the test broker on 127.0.0.1:19092 and creates the topics (8 partitions of input);
#   2. runs the re-key pipeline (rekey.toml) and three processes of rolling.toml;
#   3. feeds 6,000 click events at 300 a second; after 5 s the third process is killed with
#      SIGKILL, after 14 s a fourth joins: partitions move (watch the logs). The test broker,
#      tansu 0.6.0, does not rebalance when a member's session expires (it keeps the group's
#      generation), so the killed process's partitions move only when the fourth joins; and the
#      first process leads the group: tansu loses a group whose leader dies, so it is not the one
#      killed;
#   4. stops everything (SIGTERM) and checks each user's final count and sum against the input.
# Usage: examples/instances/run.sh   (from anywhere; logs in /tmp/eddy-instances)
set -euo pipefail
cd "$(dirname "$0")/../.."
tools=../shared/tools/kafka
export KAFKA_BOOTSTRAP="127.0.0.1:19092"
work=/tmp/eddy-instances
rm -rf "$work" && mkdir -p "$work"

"$tools/install" >/dev/null
"$tools/start" 19092 >/dev/null
trap '"$tools/stop" 19092; pkill -TERM -f "eddy run.*examples/instances" || true' EXIT
"$tools/kc" create clicks-raw --partitions 8
"$tools/kc" create clicks-by-user --partitions 8
"$tools/kc" create spend-per-user --partitions 8

cargo build -q --bin eddy
eddy="${CARGO_TARGET_DIR:-target}/debug/eddy"
"$eddy" run --no-progress examples/instances/rekey.toml >"$work/rekey.log" 2>&1 &
pids=()
for i in 1 2 3; do
  "$eddy" run --no-progress examples/instances/rolling.toml >"$work/rolling-$i.log" 2>&1 &
  pids+=($!)
  # the first to join leads the group; the test broker loses a group whose leader dies
  [ "$i" = 1 ] && sleep 2
done

python3 - >"$work/input.jsonl" <<'PY'
import json, random
random.seed(11)
for i in range(6000):
    print(json.dumps({"user_id": f"u{random.randint(1, 50)}", "amount": random.randint(1, 100),
                      "event_time": f"2024-05-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z"}))
PY
"$tools/kc" produce clicks-raw --rate 300 <"$work/input.jsonl" &
feed=$!
sleep 5
kill -KILL "${pids[2]}"
echo "killed process 3 (SIGKILL); with Apache Kafka its partitions move to the others after the session timeout (6 s)"
sleep 9
"$eddy" run --no-progress examples/instances/rolling.toml >"$work/rolling-4.log" 2>&1 &
echo "started process 4; the group rebalances over processes 1, 2 and 4"
wait "$feed"
sleep 12
pkill -TERM -f "eddy run.*examples/instances" || true
sleep 3

"$tools/kc" consume spend-per-user --timeout 3 >"$work/output.jsonl"
python3 - "$work" <<'PY'
import collections, json, sys
work = sys.argv[1]
count, total = collections.Counter(), collections.Counter()
for line in open(f"{work}/input.jsonl"):
    r = json.loads(line); count[r["user_id"]] += 1; total[r["user_id"]] += r["amount"]
final = {}
rows = [json.loads(l) for l in open(f"{work}/output.jsonl")]
for r in rows:
    final[r["user_id"]] = max(final.get(r["user_id"], (0, 0)), (r["clicks"], r["spent"]))
wrong = [u for u in count if final.get(u) != (count[u], float(total[u]))]
print(f"{len(rows)} output rows for {len(count)} users ({len(rows) - sum(count.values())} repeated after the kill)")
print("every user's final clicks and spend match the input" if not wrong else f"MISMATCH for {wrong}")
sys.exit(1 if wrong else 0)
PY
