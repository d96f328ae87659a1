#!/usr/bin/env bash
# Throughput of a stream-stream join: RECORDS (default 2,000,000) records from bench/join-state's
# generator (half orders, half payments, a left outer join with a 1-minute range, 10-second
# watermarks), micro-batch, no checkpoint, files sink, with the release `eddy`; ROUNDS rounds
# (default 3), each running parallelism 1 then 2, so the two alternate in one run. Prints records
# per CPU-second (user + system time of the whole process) per round, then the median and the
# spread per parallelism, and writes them to bench/results/join-throughput.md.
#
# Usage: bench/join-throughput/run.sh [RECORDS] [ROUNDS]   (from the repository root; needs
# `cargo build --release --bin eddy` first)
set -euo pipefail
records=${1:-2000000}
rounds=${2:-3}
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$root/bench/join-state/gen.py" "$work/input" "$records" 20
# the bounded-state pipeline without its checkpoint
sed '/^\[checkpoint\]/,$d' "$root/bench/join-state/pipeline.toml" > "$work/pipeline.toml"
cd "$work"
results=()
for round in $(seq 1 "$rounds"); do
  for p in 1 2; do
    rm -rf output
    /usr/bin/time -f "%U %S %e" -o time.txt "$root/target/release/eddy" run pipeline.toml --no-progress \
      --set "parallelism=$p" > log.txt 2>&1
    read -r user sys wall < time.txt
    rows=$(cat output/* | wc -l)
    rate=$(echo "$records / ($user + $sys)" | bc)
    echo "round $round parallelism $p: cpu $(echo "$user + $sys" | bc) s, wall $wall s, rows $rows, $rate records per CPU-second"
    results+=("$p $rate")
  done
done
{
  echo "# Stream-stream join throughput"
  echo
  echo "\`bench/join-throughput/run.sh $records $rounds\` on $(nproc) cores, $(date -u +%Y-%m-%d), load average"
  echo "$(cut -d' ' -f1-3 /proc/loadavg) at the end: $records records (half orders, half payments), a LEFT OUTER JOIN"
  echo "with \`p.paid BETWEEN o.ts AND o.ts + INTERVAL 1 MINUTE\`, 10 s watermarks, 20 micro-batches,"
  echo "no checkpoint, files sink. Records per CPU-second of the whole process (user + system),"
  echo "parallelism 1 and 2 alternated in each round."
  echo
  echo "| parallelism | median | min | max |"
  echo "|---|---|---|---|"
  for p in 1 2; do
    printf '%s\n' "${results[@]}" | awk -v p="$p" '$1 == p { print $2 }' | sort -n |
      awk -v p="$p" '{ v[NR] = $1 } END { printf "| %d | %d | %d | %d |\n", p, v[int((NR + 1) / 2)], v[1], v[NR] }'
  done
} | tee "$root/bench/results/join-throughput.md"
