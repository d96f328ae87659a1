#!/usr/bin/env python3
"""Compares a Kafka sink's output after crashes and restarts with an uninterrupted run's, epoch by
epoch (every message names its epoch in the `eddy.epoch` header; under the replay clock the
epochs, and the rows of each, are the same in every run).

What the engine guarantees (at least once), checked here for every epoch e:
  1. nothing lost: every row of the uninterrupted run's epoch e is in the crashed run's epoch e
     at least as many times (multisets);
  2. duplicates only inside the epoch in flight: an epoch committed before every kill is
     identical; in an epoch e that K_e >= 1 killed runs had not committed when they were killed
     (the run started after the kill restored a checkpoint older than e), each row of the
     uninterrupted run appears at most (1 + K_e) times as often, and other rows may appear: the
     partial output the killed runs wrote for e before it was run again. (Real-time update rows
     within an epoch are cut per poll of the source, which the timing decides: a killed run's
     partial epoch may hold an intermediate update that the complete epoch superseded.)
With --exact (exactly_once, read_committed reader): the crashed run's rows equal the
uninterrupted run's, epoch by epoch.

Usage: compare_kafka.py EXPECTED.jsonl ACTUAL.jsonl [RESTORED] [--exact]
  RESTORED: the epochs that the runs started after each kill restored, comma-separated (-1: no
  checkpoint yet), in kill order.
Exit 0 when the guarantee holds, 1 otherwise (with what differs).
"""
import collections, json, sys

args = [x for x in sys.argv[1:] if not x.startswith("--")]
exact = "--exact" in sys.argv
expected_path, actual_path = args[0], args[1]
restored = [int(x) for x in args[2].split(",") if x] if len(args) > 2 else []

def load(path):
    by_epoch = collections.defaultdict(collections.Counter)
    with open(path) as f:
        for line in f:
            m = json.loads(line)
            by_epoch[m["epoch"]][m["value"]] += 1
    return by_epoch

ref, got = load(expected_path), load(actual_path)
problems = []
dup_rows = dup_epochs = 0
partial_total = [0]
for e in sorted(set(ref) | set(got), key=lambda x: -1 if x is None else x):
    r, c = ref.get(e, collections.Counter()), got.get(e, collections.Counter())
    k = sum(1 for x in restored if e is None or x < e)
    lost = r - c
    foreign = [v for v in c if v not in r]
    over = [v for v in c if v in r and c[v] > r[v] * (1 + (0 if exact else k))]
    if lost:
        problems.append(f"epoch {e}: {sum(lost.values())} rows lost, e.g. {next(iter(lost))}")
    if foreign and (exact or k == 0):
        problems.append(f"epoch {e}: {len(foreign)} rows not in the uninterrupted run's epoch {e}, e.g. {foreign[0]}")
    if over:
        problems.append(f"epoch {e}: {len(over)} rows repeated more than {1 + (0 if exact else k)} times "
                        f"({k} kills before its commit), e.g. {over[0]}")
    if foreign and not exact and k > 0:
        partial_rows = sum(c[v] for v in foreign)
        partial_total[0] += partial_rows
    extra = sum((c - r).values())
    if extra:
        dup_rows += extra
        dup_epochs += 1
rows = sum(sum(c.values()) for c in ref.values())
if problems:
    print(f"DIFFERENT ({len(problems)} problems):\n  " + "\n  ".join(problems[:20]))
    sys.exit(1)
if exact:
    print(f"identical: {len(ref)} epochs, {rows} rows")
else:
    print(f"nothing lost: {len(ref)} epochs, {rows} rows; {dup_rows} duplicates in {dup_epochs} epochs, "
          f"each inside an epoch not committed at a kill ({partial_total[0]} of them partial output of a killed run)")
