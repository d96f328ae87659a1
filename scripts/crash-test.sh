#!/usr/bin/env bash
# Crash test (checkpoints and recovery): for a window aggregate (append, micro-batch; update,
# real-time), a rolling window (real-time), a deduplication (micro-batch), a union of two
# sources into a window aggregate (micro-batch), a stream-stream left outer join (micro-batch) and
# chained aggregations whose second stage crosses the exchange between partition actors
# (micro-batch: `chain-exchange`; real-time: `chain-exchange-real-time`), files to files
# (and, named explicitly, scripts/crash/delta/*.toml: the append window aggregate into a Delta
# table, compared batch by batch through each version's `txn`; no batch in two versions, no file
# in the table's folder that no version references, nothing left staged),
# `eddy run` is killed with SIGKILL at KILLS random instants and restarted each time (with a
# random `parallelism` from 1 to 3, so state is re-split too); the output after the final run
# must be identical to an uninterrupted run's: the same files, each with the same rows (nothing
# lost, nothing twice), and no temporary file left.
#
# With SIGNAL=TERM the runs are stopped gracefully instead (SIGTERM): each must exit 0, and the
# output must still be identical epoch by epoch, so a stop keeps the epoch boundaries of an
# uninterrupted run (the replay clock's real-time epochs: `rolling`, `window-update`,
# `chain-exchange-real-time`).
#
# Usage: scripts/crash-test.sh [PIPELINE.toml ...]   (default: every scripts/crash/*.toml)
# Environment: KILLS (20), FILES (40) and LINES (1500): input size; SEED (random) for the kill
# instants; SIGNAL (KILL or TERM; default KILL); EDDY: the binary (default: built in debug under
# $CARGO_TARGET_DIR or target/).
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${KILLS:-20}
files=${FILES:-40}
lines=${LINES:-1500}
seed=${SEED:-$RANDOM}
signal=${SIGNAL:-KILL}
case "$signal" in KILL | TERM) ;; *) echo "crash-test.sh: SIGNAL must be KILL or TERM, not $signal" >&2; exit 2 ;; esac
RANDOM=$seed
min_delay_ms=30
spread=12
if [ "$signal" = TERM ]; then min_delay_ms=10; spread=40; fi
if [ -z "${EDDY:-}" ]; then
  cargo build -q --bin eddy
  EDDY="${CARGO_TARGET_DIR:-target}/debug/eddy"
fi
# The Delta pipelines' tables are read back with pyarrow (a venv with `deltalake==1.6.6` and
# `pyarrow==26.0.1`).
delta_python=${DELTA_PYTHON:-$HOME/.cache/delta-reader-venv/bin/python}
pipelines=("$@")
[ ${#pipelines[@]} -gt 0 ] || pipelines=(scripts/crash/*.toml)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 scripts/crash/gen.py "$work/input" "$files" "$lines"
echo "crash test: $((files * lines)) records, $kills SIG$signal per pipeline, seed $seed"

inputs() { # inputs PIPELINE: the --set of every source's path (several [[source]]: each its own)
  local n
  n=$(grep -c '^\[\[source\]\]' "$1" || true)
  if [ "$n" -le 1 ]; then
    echo --set "source.path=$work/input"
  else
    for i in $(seq 0 $((n - 1))); do echo --set "source[$i].path=$work/input"; done
  fi
}

run() { # run DIR PARALLELISM: eddy on DIR's pipeline, input shared
  # shellcheck disable=SC2046 # the --set words of inputs, split on purpose (paths without spaces)
  "$EDDY" run "$1/pipeline.toml" --no-progress $(inputs "$1/pipeline.toml") --set "parallelism=$2"
}

failed=0
for p in "${pipelines[@]}"; do
  name=$(basename "$p" .toml)
  ref="$work/$name-ref"
  crash="$work/$name-crash"
  mkdir -p "$ref" "$crash"
  cp "$p" "$ref/pipeline.toml"
  cp "$p" "$crash/pipeline.toml"
  start=$(date +%s%N)
  EDDY_LOG=warn run "$ref" 2
  took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  killed=0
  bad_exits=0
  for i in $(seq 1 "$kills"); do
    # A random instant within the first twelfth of an uninterrupted run (at least 30 ms): each
    # run makes a little progress past its checkpoint, so the 20 kills land while input remains.
    # SIGTERM: once the signal handler is installed (below), at least 10 ms, then within a
    # fortieth, as a stopped run keeps all its progress.
    delay_ms=$(( min_delay_ms + RANDOM % (took_ms / spread + 1) ))
    # The binary itself in the background (not a subshell), so the kill reaches it.
    # shellcheck disable=SC2046 # as in run
    EDDY_LOG=error "$EDDY" run "$crash/pipeline.toml" --no-progress $(inputs "$crash/pipeline.toml") \
      --set "parallelism=$(( 1 + RANDOM % 3 ))" &
    pid=$!
    # SIGTERM: first wait (up to 10 s) until the process catches it (bit 15 of its SigCgt mask):
    # a SIGTERM before the handler is installed ends the run with the default action (exit 143),
    # and on a loaded machine a start takes longer than any fixed delay.
    if [ "$signal" = TERM ]; then
      for _ in $(seq 1 1000); do
        caught=$(awk '/^SigCgt:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || break
        [ -z "$caught" ] && break
        if (( (16#$caught >> 14) & 1 )); then break; fi
        sleep 0.01
      done
    fi
    sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
    if kill -s "$signal" "$pid" 2>/dev/null; then killed=$((killed + 1)); fi
    status=0
    wait "$pid" 2>/dev/null || status=$?
    # A graceful stop (or a run that ended first) exits 0.
    if [ "$signal" = TERM ] && [ "$status" -ne 0 ]; then
      echo "  run $i stopped by SIGTERM exited $status"
      bad_exits=$((bad_exits + 1))
    fi
  done
  EDDY_LOG=warn run "$crash" $(( 1 + RANDOM % 3 ))
  if [ -d "$ref/output/_delta_log" ]; then
    # A Delta table: one file per batch (txn version) for compare.py; fails on a batch written
    # twice or a Parquet file no version references.
    for d in "$ref" "$crash"; do
      "$delta_python" scripts/crash/delta_batches.py "$d/output" "$d/batches" || failed=1
      mv "$d/output" "$d/table" && mv "$d/batches" "$d/output"
    done
  fi
  leftovers=$(find "$crash/output" -name '.*' | wc -l)
  printf '%-14s uninterrupted %5d ms; %2d of %d runs stopped mid-run (SIG%s); ' "$name" "$took_ms" "$killed" "$kills" "$signal"
  if python3 scripts/crash/compare.py "$ref/output" "$crash/output" && [ "$leftovers" -eq 0 ] && [ "$bad_exits" -eq 0 ]; then
    :
  else
    echo "  FAILED ($leftovers temporary files left, $bad_exits runs exited non-zero; seed $seed)"
    failed=1
  fi
done
exit $failed
