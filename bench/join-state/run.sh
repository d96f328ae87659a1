#!/usr/bin/env bash
# Bounded state of a stream-stream join: RECORDS (default 10,000,000) generated records, half to
# each of two sources, through bench/join-state/pipeline.toml (a left outer join with a 1-minute
# range) with the release `eddy`; prints the join's state rows after every batch (the partition
# actors' sum, from the coordinator's barrier log) and the process's peak RSS, and writes them to
# bench/results/join-state.md. The state should be flat once the watermark moves.
#
# Usage: bench/join-state/run.sh [RECORDS] [FILES]   (run from the repository root; needs
# `cargo build --release --bin eddy` first)
set -euo pipefail
records=${1:-10000000}
files=${2:-100}
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$root/bench/join-state/gen.py" "$work/input" "$records" "$files"
cp "$root/bench/join-state/pipeline.toml" "$work/"
cd "$work"
start=$(date +%s.%N)
EDDY_LOG=warn,eddy_actors::coordinator=debug /usr/bin/time -v "$root/target/release/eddy" run pipeline.toml \
  --no-progress > log.txt 2>&1
end=$(date +%s.%N)
rss=$(grep "Maximum resident set size" log.txt | awk '{print $NF}')
rows=$(cat output/* | wc -l)
{
  echo "# Stream-stream join state over a long input"
  echo
  echo "\`bench/join-state/run.sh $records $files\` on $(nproc) cores, $(date -u +%Y-%m-%d): $records records"
  echo "(half orders, half payments; event time 1 ms apart per source, up to 2 s of disorder),"
  echo "a LEFT OUTER JOIN with \`p.paid BETWEEN o.ts AND o.ts + INTERVAL 1 MINUTE\`, 10 s watermarks,"
  echo "$files micro-batches, parallelism 2, a checkpoint every batch."
  echo
  printf 'Wall time %.1f s; output rows %s; peak RSS %s MiB.\n' "$(echo "$end - $start" | bc)" "$rows" "$((rss / 1024))"
  echo
  echo "| batch | state rows (both sides) |"
  echo "|---|---|"
  grep "barrier acknowledged" log.txt | sed -E 's/.*epoch=([0-9]+) state_len=([0-9]+).*/\1 \2/' |
    awk -v n="$files" '$1 % int((n + 19) / 20) == 0 || $1 == n - 1 || $1 == n { printf "| %d | %d |\n", $1, $2 }'
} | tee "$root/bench/results/join-state.md"
