#!/usr/bin/env python3
"""Instructions per call of one function, inclusive (its allocations included), from a callgrind
profile: the function's inclusive cost divided by the calls its callers made.

Usage: callgrind_per_call.py CALLGRIND_OUT [FUNCTION_SUFFIX]
  FUNCTION_SUFFIX defaults to "JsonDecoder::decode" (the decode bench, bench/results/decode.md).
"""
import re
import subprocess
import sys

profile = sys.argv[1]
function = sys.argv[2] if len(sys.argv) > 2 else "JsonDecoder::decode"
out = subprocess.run(["callgrind_annotate", "--tree=caller", "--inclusive=yes", profile],
                     capture_output=True, text=True, check=True).stdout
lines = out.splitlines()
# The function's own line ("*"), under the lines of its callers ("<", each with its call count).
# callgrind_annotate may list a function twice (source paths relative and absolute): the entry
# with callers counts.
for i, line in enumerate(lines):
    if "*" in line and function in line and f"{function}_" not in line:
        cost = int(line.split()[0].replace(",", ""))
        calls = 0
        j = i - 1
        while j >= 0 and "<" in lines[j]:
            m = re.search(r"\(([\d,]+)x\)", lines[j])
            calls += int(m.group(1).replace(",", "")) if m else 0
            j -= 1
        if calls > 0:
            print(f"{cost} instructions / {calls} calls = {cost / calls:.0f} per call")
            sys.exit(0)
sys.exit(f"{function} not found with its callers in {profile}")
