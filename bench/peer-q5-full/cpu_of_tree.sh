#!/usr/bin/env bash
# Runs "$@" (its output to run.log) and prints the CPU seconds (user + system) of it and of every
# descendant, then the last line of run.log that is not a warning. Exact, not polled: the runner
# makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so a descendant whose parent
# exits without waiting for it (a JVM left behind by its launcher) is handed to the runner, and the
# runner reaps every descendant before reading its children's rusage, which then holds them all.
python3 - "$@" <<'PY'
import ctypes, os, resource, subprocess, sys
PR_SET_CHILD_SUBREAPER = 36
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
    sys.exit("cpu_of_tree: prctl(PR_SET_CHILD_SUBREAPER) failed")
with open("run.log", "wb") as log:
    root = subprocess.Popen(sys.argv[1:], stdout=log, stderr=subprocess.STDOUT)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            break
u = resource.getrusage(resource.RUSAGE_CHILDREN)
lines = [l for l in open("run.log", errors="replace").read().splitlines() if "WARN" not in l]
print(f"cpu_s={u.ru_utime + u.ru_stime:.2f} {lines[-1] if lines else ''}")
PY
