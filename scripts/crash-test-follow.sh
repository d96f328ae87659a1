#!/usr/bin/env bash
# Crash test of a followed folder (`follow = true`, as `tail -F`): a writer appends JSON lines to
# two files in random-sized pieces (lines split across writes) while `eddy run` (count per key,
# update mode, real-time, files sink, checkpoint) is killed with SIGKILL at KILLS random instants
# and restarted each time. Once the writer is done, a last run catches up and is stopped with
# SIGTERM; the last output row of each key must count exactly the lines written of that key:
# nothing lost (a partial line is never consumed), nothing twice (the checkpoint names complete
# lines only).
#
# Usage: scripts/crash-test-follow.sh
# Environment: KILLS (20), LINES (4000), SECONDS_WRITING (25); SEED (random); EDDY: the binary
# (default: built in debug under $CARGO_TARGET_DIR or target/).
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${KILLS:-20}
lines=${LINES:-4000}
writing=${SECONDS_WRITING:-25}
seed=${SEED:-$RANDOM}
RANDOM=$seed
if [ -z "${EDDY:-}" ]; then
  cargo build -q --bin eddy
  EDDY="${CARGO_TARGET_DIR:-target}/debug/eddy"
fi

work=$(mktemp -d)
writer=
trap '[ -n "$writer" ] && kill "$writer" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/input"
cp scripts/crash/follow/pipeline.toml "$work/pipeline.toml"
echo "crash test, followed files: $lines lines written over ~${writing}s, $kills kills, seed $seed"
python3 scripts/crash/follow/writer.py "$work/input" "$lines" "$writing" "$work/expected.json" "$seed" &
writer=$!

killed=0
for i in $(seq 1 "$kills"); do
  delay_ms=$(( 200 + RANDOM % 1300 ))
  EDDY_LOG=error "$EDDY" run "$work/pipeline.toml" --no-progress --set "parallelism=$(( 1 + RANDOM % 3 ))" &
  pid=$!
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  if kill -9 "$pid" 2>/dev/null; then killed=$((killed + 1)); fi
  wait "$pid" 2>/dev/null || true
done
wait "$writer"
writer=

# The last run: caught up once its output has not changed for 3 seconds; then SIGTERM.
EDDY_LOG=warn "$EDDY" run "$work/pipeline.toml" --no-progress --set "parallelism=2" &
pid=$!
last="" quiet=0
while [ "$quiet" -lt 30 ]; do
  sleep 0.1
  now=$(ls -l "$work/output" 2>/dev/null | md5sum)
  if [ "$now" = "$last" ]; then quiet=$((quiet + 1)); else quiet=0; last=$now; fi
done
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
printf 'followed files: %2d of %d runs killed mid-run; last run exit %d; ' "$killed" "$kills" "$rc"
if [ "$rc" -eq 0 ] && python3 scripts/crash/follow/check.py "$work/output" "$work/expected.json"; then
  exit 0
fi
echo "  FAILED (seed $seed)"
exit 1
