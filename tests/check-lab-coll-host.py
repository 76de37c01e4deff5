#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""dnp-lab run --coll-host checks the host-based collectives of the lab
(docs/lab.md, "Host-based collectives in the lab"), not their figures.

For allreduce (Presto's reduce + broadcast, and recursive doubling), broadcast
and barrier on small tori (a power of two and not), each run must:
  * end with exit status 0 and "verify: 0 errors" (every member's result was
    checked against the sum of every node's source, or the root's bytes, and
    every message came from the peer the algorithm names);
  * report every member's every collective done (nodes x count) and none failed.
And the host model must be applied: with the default host costs each
member's median latency is above the one of the same run with the costs at
0 (both in virtual time, so deterministic).
Usage: check-lab-coll-host.py DNP_LAB
"""
import re
import subprocess
import sys

RUNS = [  # torus, op, bytes, extra options
    ("4x2x2", "allreduce", 8, []),
    ("3x3x1", "allreduce", 4104, []),
    ("4x2x2", "allreduce", 24, ["--coll-host-alg", "rd"]),
    ("3x3x1", "bcast", 5000, []),
    ("4x2x2", "bcast", 8, []),
    ("3x3x1", "barrier", 0, []),
]
COUNT = 3
LINE = re.compile(r"^collective \S+ of \d+ B on (\d+) nodes: (\d+) done, (\d+) failed; "
                  r"member latency median (\d+)")
ZERO = ["--host-event-ns", "0", "--host-reduce-ns-per-kib", "0"]


def run(lab, torus, op, size, extra):
    cmd = [lab, "run", "--torus", torus, "--coll", op, "--coll-size", str(size),
           "--coll-count", str(COUNT), "--coll-host"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    what = " ".join(cmd[1:])
    if p.returncode != 0:
        sys.exit(f"FAIL: {what}: exit {p.returncode}\n{p.stdout}{p.stderr}")
    if not re.search(r"^verify: +0 errors", p.stdout, re.M):
        sys.exit(f"FAIL: {what}: verification errors\n{p.stdout}")
    m = next((LINE.match(x) for x in p.stdout.splitlines() if LINE.match(x)), None)
    if not m:
        sys.exit(f"FAIL: {what}: no collective line\n{p.stdout}")
    nodes, done, failed, med = (int(x) for x in m.groups())
    if done != nodes * COUNT or failed:
        sys.exit(f"FAIL: {what}: {done} done, {failed} failed, want {nodes * COUNT}, 0")
    return med


def main():
    lab = sys.argv[1]
    for torus, op, size, extra in RUNS:
        med = run(lab, torus, op, size, extra)
        med0 = run(lab, torus, op, size, extra + ZERO)
        if med <= med0:
            sys.exit(f"FAIL: {op} on {torus}: host costs not applied ({med} <= {med0})")
        print(f"ok: {op} {size} B on {torus} {' '.join(extra)}: median {med}, "
              f"at host cost 0 {med0}")


if __name__ == "__main__":
    main()
