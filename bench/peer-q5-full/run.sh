#!/usr/bin/env bash
# Eddy's q5 in full beside Apache Flink's q5full on the same JSON lines, at parallelism 1 and 2,
# at two sizes (1 and 3 million bids) so that start-up cancels out: rows per CPU-second is the
# difference in bids over the difference in CPU-seconds of each engine's whole process tree.
# Rounds alternate engines, sizes and parallelisms (three for Eddy, two for Flink). Usage: bench/peer-q5-full/run.sh WORKDIR
# (from the repository; needs target/release/eddy and ../shared/tools/peers/flink-setup.sh run).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mkdir -p "$1" && cd "$1" && pwd)
peers="$repo/../shared/tools/peers"
eddy="$repo/target/release/eddy"
py=$("$peers/flink-setup.sh")
cd "$work"
for f in 1m 3m; do
  n=$([ $f = 1m ] && echo 1000000 || echo 3000000)
  [ -f in$f/bids-$f.jsonl ] || { mkdir -p in$f && python3 "$peers/gen_bids.py" $n in$f/bids-$f.jsonl; }
done
cp "$repo/bench/peer-q5-full/pipeline.toml" .
for round in 1 2 3; do
  for f in 1m 3m; do
    for p in 1 2; do
      rm -rf out-$f-$p
      echo "round=$round engine=eddy size=$f p=$p $("$repo/bench/peer-q5-full/cpu_of_tree.sh" "$eddy" run pipeline.toml --set source.path=in$f --set sink.path=out-$f-$p --set parallelism=$p --no-progress | cut -d" " -f1)"
      # Flink's runs take ~40 s each: two rounds
      if [ "$round" -le 2 ]; then
        echo "round=$round engine=flink size=$f p=$p $("$repo/bench/peer-q5-full/cpu_of_tree.sh" "$py" "$peers/flink_nexmark.py" q5full $p --file "$work/in$f/bids-$f.jsonl")"
      fi
    done
  done
done
