#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""dnp-lab sweep --quick checks its behaviour, not its figures (docs/lab.md, "Sweep").

Runs the quick sweep (4x4x4, every pattern, two offered loads) into a temporary
directory and checks, from its CSV:
  * it ended with exit status 0 and every run says ok (no deadlock, no
    timeout, nothing the lab failed to verify);
  * every message released was delivered (delivered == messages);
  * accepted throughput is never above the offered load measured in the same
    window, nor above the pattern's channel-load ideal, by more than TOL
    (window effects: what was queued before the window may arrive in it);
  * the ordering where the difference is large: nearest neighbour (one hop,
    six links per node) accepts more than FACTOR x what tornado (every packet
    half-way round each ring, one direction) and the hot spot (eight senders
    to one node) accept.
Usage: check-lab-sweep.py DNP_LAB
"""
import csv
import os
import subprocess
import sys
import tempfile

TOL = 0.10
FACTOR = 2.0
PATTERNS = ("uniform", "transpose", "tornado", "bitcomp", "neighbour", "hotspot")


def fail(msg):
    print("check-lab-sweep: FAIL: " + msg)
    sys.exit(1)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    with tempfile.TemporaryDirectory(prefix="dnp-lab-sweep.") as out:
        try:
            run = subprocess.run([sys.argv[1], "sweep", "--quick", "--no-plot", "--out", out],
                                 capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            fail("dnp-lab sweep --quick did not end within 300 s")
        sys.stdout.write(run.stdout)
        sys.stderr.write(run.stderr)
        if run.returncode != 0:
            fail("dnp-lab sweep --quick exited with %d" % run.returncode)
        with open(os.path.join(out, "sweep.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
    best = {}
    for r in rows:
        what = "%s %s at load %s" % (r["config"], r["pattern"], r["load_frac"])
        acc, off, ideal = float(r["accepted"]), float(r["offered_measured"]), float(r["ideal"])
        if r["status"] != "ok":
            fail("%s: %s" % (what, r["status"]))
        if int(r["delivered"]) != int(r["messages"]) or int(r["messages"]) == 0:
            fail("%s: %s of %s messages delivered" % (what, r["delivered"], r["messages"]))
        if acc > off * (1 + TOL):
            fail("%s: accepted %.4f above offered %.4f" % (what, acc, off))
        if acc > ideal * (1 + TOL):
            fail("%s: accepted %.4f above the ideal %.4f" % (what, acc, ideal))
        key = (r["config"], r["pattern"])
        best[key] = max(best.get(key, 0.0), acc)
    for cfg in sorted({k[0] for k in best}):
        for p in PATTERNS:
            if (cfg, p) not in best:
                fail("%s: no run of %s" % (cfg, p))
        nn = best[(cfg, "neighbour")]
        for p in ("tornado", "hotspot"):
            if nn <= FACTOR * best[(cfg, p)]:
                fail("%s: neighbour accepts %.4f, not above %.1f x %s's %.4f"
                     % (cfg, nn, FACTOR, p, best[(cfg, p)]))
    print("check-lab-sweep: ok (%d runs)" % len(rows))


if __name__ == "__main__":
    main()
