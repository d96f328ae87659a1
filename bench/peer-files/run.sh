#!/usr/bin/env bash
# Nexmark q5, q7 and q11 in Eddy beside Apache Flink 2.3 on the same JSON lines, parallelism 1:
# Eddy runs bench/peer-files/QUERY.toml, Flink `flink_nexmark.py QUERY 1 --file`, both over the
# bids of ../shared/tools/peers/gen_bids.py at two sizes (1 and 3 million). Rows per CPU-second
# are the 2,000,000 extra bids of the larger file over the extra CPU-seconds of each engine's
# whole process tree (bench/peer-q5-full/cpu_of_tree.sh), so start-up cancels out. Each round
# runs every query, size and engine, the engines alternated. Prints one line per run, then
# summary.py's table of medians. Usage: bench/peer-files/run.sh WORKDIR [ROUNDS] [QUERIES...]
# (from anywhere; needs target/release/eddy and ../shared/tools/peers/flink-setup.sh run once).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mkdir -p "$1" && cd "$1" && pwd)
rounds=${2:-3}
shift $(( $# >= 2 ? 2 : 1 ))
queries=${*:-q5 q7 q11}
peers="$repo/../shared/tools/peers"
here="$repo/bench/peer-files"
cpu="$repo/bench/peer-q5-full/cpu_of_tree.sh"
eddy="$repo/target/release/eddy"
py=$("$peers/flink-setup.sh")
cd "$work"
for f in 1m 3m; do
  n=$([ $f = 1m ] && echo 1000000 || echo 3000000)
  [ -f in$f/bids-$f.jsonl ] || { mkdir -p in$f && python3 "$peers/gen_bids.py" $n in$f/bids-$f.jsonl; }
done
log=runs-$(date -u +%Y%m%dT%H%M%S).log
echo "# $(date -u +%FT%TZ) $(uname -n) nproc=$(nproc) load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee $log
for round in $(seq 1 "$rounds"); do
  for q in $queries; do
    for f in 1m 3m; do
      # the engine that goes first alternates from round to round
      engines=$([ $((round % 2)) = 1 ] && echo "eddy flink" || echo "flink eddy")
      for e in $engines; do
        if [ $e = eddy ]; then
          rm -rf out-$q-$f
          r=$("$cpu" "$eddy" run "$here/$q.toml" --set source.path="$work/in$f" \
                --set sink.path="$work/out-$q-$f" --no-progress | cut -d' ' -f1)
        else
          r=$("$cpu" "$py" "$peers/flink_nexmark.py" $q 1 --file "$work/in$f/bids-$f.jsonl" | cut -d' ' -f1)
        fi
        echo "round=$round query=$q engine=$e size=$f $r load=$(cut -d' ' -f1 /proc/loadavg)" | tee -a $log
      done
    done
  done
done
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a $log
python3 "$here/summary.py" $log
