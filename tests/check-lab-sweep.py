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
Then the configuration columns (--configs), each where its difference is large:
  * adaptive routing on transpose (DOR loads one direction of one ring per
    node pair, adaptive spreads over the productive ones) accepts more than
    FACTOR_ADAPTIVE x what DOR accepts in the first run;
  * a hot spot at two words per unit from each of its eight senders, beside a
    uniform background (--hot-rate 2): with congestion management (dor+ecn)
    the background's p99 latency is below 1 / FACTOR_ECN of DOR's alone, its
    packets were marked and held, and DOR alone marks and holds nothing;
    with classes (--classes: dor+tc, the background in the top class) the
    background's p99 is also below 1 / FACTOR_ECN of DOR's alone (planted
    fault, the background left in class 0: 14,555 against 20,694, fails).
Usage: check-lab-sweep.py DNP_LAB
"""
import csv
import os
import subprocess
import sys
import tempfile

TOL = 0.10
FACTOR = 2.0
FACTOR_ADAPTIVE = 1.5
FACTOR_ECN = 3.0
PATTERNS = ("uniform", "transpose", "tornado", "bitcomp", "neighbour", "hotspot")


def fail(msg):
    print("check-lab-sweep: FAIL: " + msg)
    sys.exit(1)


def sweep(lab, extra):
    """Runs dnp-lab sweep --quick EXTRA; returns the rows of its CSV."""
    with tempfile.TemporaryDirectory(prefix="dnp-lab-sweep.") as out:
        try:
            run = subprocess.run([lab, "sweep", "--quick", "--no-plot", "--out", out] + extra,
                                 capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            fail("dnp-lab sweep --quick %s did not end within 300 s" % " ".join(extra))
        sys.stdout.write(run.stdout)
        sys.stderr.write(run.stderr)
        if run.returncode != 0:
            fail("dnp-lab sweep --quick %s exited with %d" % (" ".join(extra), run.returncode))
        with open(os.path.join(out, "sweep.csv"), newline="") as f:
            return list(csv.DictReader(f))


def check_rows(rows):
    """Every run ended, delivered all, and stayed under offered and ideal; best accepted."""
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
    return best


def check_configs(lab, best):
    """The configuration columns, where their difference is large."""
    rows = sweep(lab, ["--patterns", "transpose", "--configs", "adaptive"])
    n = len(rows)
    ad = check_rows(rows)[("adaptive", "transpose")]
    if ad <= FACTOR_ADAPTIVE * best[("dor", "transpose")]:
        fail("adaptive transpose accepts %.4f, not above %.1f x dor's %.4f"
             % (ad, FACTOR_ADAPTIVE, best[("dor", "transpose")]))
    rows = sweep(lab, ["--patterns", "hotspot", "--configs", "dor,dor+ecn", "--hot-rate", "2",
                       "--loads", "0.3", "--warm", "1000", "--measure", "2000", "--classes"])
    check_rows(rows)
    by = {r["config"]: r for r in rows}
    if set(by) != {"dor", "dor+ecn", "dor+tc", "dor+ecn+tc"}:
        fail("hot spot: runs of %s" % sorted(by))
    for name, r in by.items():
        if r["classes"] != ("strict" if name.endswith("+tc") else "off"):
            fail("%s: classes column %s" % (name, r["classes"]))
    # classes: the background, in the top class, passes the hot senders' packets
    if FACTOR_ECN * int(by["dor+tc"]["lat_bg_p99"]) >= int(by["dor"]["lat_bg_p99"]):
        fail("hot spot: background p99 %s with dor+tc, not below 1/%.0f of dor's %s"
             % (by["dor+tc"]["lat_bg_p99"], FACTOR_ECN, by["dor"]["lat_bg_p99"]))
    dor, ecn = by["dor"], by["dor+ecn"]
    if int(dor["cg_marked"]) or int(dor["cg_held"]):
        fail("dor marked %s and held %s packets" % (dor["cg_marked"], dor["cg_held"]))
    if not int(ecn["cg_marked"]) or not int(ecn["cg_held"]):
        fail("dor+ecn marked %s and held %s" % (ecn["cg_marked"], ecn["cg_held"]))
    if FACTOR_ECN * int(ecn["lat_bg_p99"]) >= int(dor["lat_bg_p99"]):
        fail("hot spot: background p99 %s with dor+ecn, not below 1/%.0f of dor's %s"
             % (ecn["lat_bg_p99"], FACTOR_ECN, dor["lat_bg_p99"]))
    return n + len(rows)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    rows = sweep(sys.argv[1], [])
    best = check_rows(rows)
    for cfg in sorted({k[0] for k in best}):
        for p in PATTERNS:
            if (cfg, p) not in best:
                fail("%s: no run of %s" % (cfg, p))
        nn = best[(cfg, "neighbour")]
        for p in ("tornado", "hotspot"):
            if nn <= FACTOR * best[(cfg, p)]:
                fail("%s: neighbour accepts %.4f, not above %.1f x %s's %.4f"
                     % (cfg, nn, FACTOR, p, best[(cfg, p)]))
    n = check_configs(sys.argv[1], best)
    print("check-lab-sweep: ok (%d runs)" % (len(rows) + n))


if __name__ == "__main__":
    main()
