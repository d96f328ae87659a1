#!/usr/bin/env bash
# Runs "$@" and prints the CPU seconds (user + system) of it and of every descendant, polled
# every 0.2 s (a descendant killed at the end is counted up to its last poll).
"$@" > run.log 2>&1 &
root=$!
declare -A last
while kill -0 $root 2>/dev/null; do
  for p in $(pstree -p -T $root 2>/dev/null | grep -o '([0-9]*)' | tr -d '()'); do
    t=$(awk '{print $14+$15}' /proc/$p/stat 2>/dev/null) && [ -n "$t" ] && last[$p]=$t
  done
  sleep 0.2
done
wait $root
sum=0; for p in "${!last[@]}"; do sum=$((sum + ${last[$p]})); done
echo "cpu_s=$(echo "scale=2; $sum/100" | bc) $(grep -v WARN run.log | tail -1)"
