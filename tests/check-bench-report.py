#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The goal table of bench/report.py (issue 29, "Goals"), on planted rows.

Writes small synthetic CSVs of bench/run.sh and bench/engine.sh into a
temporary directory, runs report.py on them (no plots) and checks each goal's
line of the one-screen summary (measured, met / NOT met / not measured) and
the report's goal table:
  * ratios of medians over reps (a goal's rows with three reps, the median not
    the mean), limits inclusive (a ratio exactly at the goal is met);
  * the two-host goals use the hand-off rows (part hand), the default
    placement the main table's rows;
  * the loopback goal counts runs within 3 x the round trip (twice the half
    round trip) of the line measured with the run, a failed run counting
    against it, and needs 9 of 10;
  * NetPIPE: sizes up to 4 KiB only (a planted 8 KiB point, far slower, is
    left out), met only when no size is slower;
  * MPI's overhead: NetPIPE - raw of the same rep, median over reps, a rep
    without its raw row left out;
  * a missing row gives "not measured", with the reason the machine file
    states (valgrind absent, part mpi skipped), never a figure.
Usage: check-bench-report.py [REPORT_PY]   (default: bench/report.py beside tests/)
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPORT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "bench", "report.py")
HEAD = "transport,peer,test,bytes,rep,value,unit\n"
MB = 1048576


def rows(*lines):
    return HEAD + "".join(l + "\n" for l in lines)


def main_rows():
    raw = [
        # default placement: udp 10 / 12 (met); shm 15 / 12 (not met)
        "udp,,lat,8,1,10,us", "udp;ofi_rxd,libfabric,lat,8,1,12,us",
        "shm,,lat,8,1,15,us", "tcp;ofi_rxm,libfabric,lat,8,1,12,us",
        # 1 MiB: median 6000 of 5000, 6000, 9000 (the mean would be 6667) / 10000 = 0.60
        "shm,,bw,%d,1,5000,MBps" % MB, "shm,,bw,%d,2,9000,MBps" % MB,
        "shm,,bw,%d,3,6000,MBps" % MB, "shm,libfabric,bw,%d,1,10000,MBps" % MB,
    ]
    more = [
        # two hosts: udp 20 / 18 (not met); shm-2host missing (not measured)
        "udp-2host,,hand_lat,8,1,20,us", "udp;ofi_rxd-2host,libfabric,hand_lat,8,1,18,us",
        "tcp;ofi_rxm-2host,libfabric,hand_lat,8,1,14,us",
        # engine: 12 M/s (met), no callgrind row, 4 KiB 4000 / 10000 (not met)
        "engine,,msgrate,8,1,12000000,msgps", "engine,,bw,4096,1,4000,MBps",
        "memcpy,,bw,4096,1,10000,MBps",
        # CPU per message: udp 100 / 100 (met), shm 200 / 100 (not met); two hosts: udp 150 /
        # 100 = 1.5 (met, the limit), shm missing
        "udp,,cpu_pp_msg,8,1,100,ns", "shm,,cpu_pp_msg,8,1,200,ns",
        "udp;ofi_rxd,libfabric,cpu_pp_msg,8,1,100,ns", "udp-2host,,cpu_pp_msg,8,1,150,ns",
        "udp;ofi_rxd-2host,libfabric,cpu_pp_msg,8,1,100,ns",
        # NetPIPE up to 4 KiB: slower at 1024 only (20 / 19); 8 KiB left out
        "udp,,netpipe,8,1,10,us", "udp;ofi_rxd,libfabric,netpipe,8,1,11,us",
        "udp,,netpipe,1024,1,20,us", "udp;ofi_rxd,libfabric,netpipe,1024,1,19,us",
        "udp,,netpipe,4096,1,30,us", "udp;ofi_rxd,libfabric,netpipe,4096,1,31,us",
        "udp,,netpipe,8192,1,100,us", "udp;ofi_rxd,libfabric,netpipe,8192,1,1,us",
        # MPI overhead: shm +1, +2, +3 (median +2.00, not met); udp +1, +1.5, rep 3 has no
        # raw row (median +1.25, met)
        "shm,,mpi_raw,8,1,10,us", "shm,,mpi_netpipe,8,1,11,us",
        "shm,,mpi_raw,8,2,10,us", "shm,,mpi_netpipe,8,2,12,us",
        "shm,,mpi_raw,8,3,10,us", "shm,,mpi_netpipe,8,3,13,us",
        "udp,,mpi_raw,8,1,20,us", "udp,,mpi_netpipe,8,1,21,us",
        "udp,,mpi_raw,8,2,20,us", "udp,,mpi_netpipe,8,2,21.5,us",
        "udp,,mpi_netpipe,8,3,99,us",
    ]
    # loopback runs, line 100 ns one way (3 round trips = 600 ns): quiet, run 1 exactly at
    # the limit, run 2 over it, the rest within (9 of 10, met); busy, run 3 failed and run 4
    # over the limit (8 of 10, not met)
    for i in range(1, 11):
        more.append("loop-quiet,,cacheline,64,%d,100,ns" % i)
        more.append("loop-quiet,,loopback,8,%d,%s,us" % (i, {1: "0.6", 2: "0.61"}.get(i, "0.5")))
        more.append("loop-busy,,cacheline,64,%d,100,ns" % i)
        if i == 3:
            more.append("loop-busy,,loopback_failed,8,3,1,n")
        else:
            more.append("loop-busy,,loopback,8,%d,%s,us" % (i, "0.9" if i == 4 else "0.55"))
    machine = "mode: full\nengine: no callgrind count: valgrind is not installed\n"
    return rows(*raw), rows(*more), machine


MAIN_EXPECT = [
    ("udp: 8 B half round trip <= libfabric udp;ofi_rxd, default placement", "0.83", "met"),
    ("shm: 8 B half round trip <= libfabric tcp;ofi_rxm, default placement", "1.25", "NOT met"),
    ("udp: 8 B half round trip <= libfabric udp;ofi_rxd, two hosts", "1.11", "NOT met"),
    ("shm: 8 B half round trip <= libfabric tcp;ofi_rxm, two hosts", "-", "not measured"),
    ("shm: 1 MiB PUT bandwidth >= 0.5 x libfabric shm", "0.60", "met"),
    ("engine: >= 10 M 8-byte PUTs/s on one core", "12.00 M/s", "met"),
    ("engine: <= 1,200 instructions per 8-byte PUT (callgrind)", "-", "not measured"),
    ("engine: 4 KiB PUTs >= 0.5 x memcpy", "0.40", "NOT met"),
    ("loopback 8 B <= 3 x line round trip, >= 9 of 10 runs, quiet", "9 of 10 runs", "met"),
    ("loopback 8 B <= 3 x line round trip, >= 9 of 10 runs, beside 2 busy", "8 of 10 runs",
     "NOT met"),
    ("NetPIPE over SoftDNP udp no slower than over udp;ofi_rxd, 8 B..4 KiB", "1.05", "NOT met"),
    ("shm: MPI's overhead over raw dnp_pingpong <= +1.5 us (8 B)", "+2.00 us", "NOT met"),
    ("udp: MPI's overhead over raw dnp_pingpong <= +1.5 us (8 B)", "+1.25 us", "met"),
    ("udp: CPU per 8 B message <= 1.5 x udp;ofi_rxd, default placement", "1.00", "met"),
    ("shm: CPU per 8 B message <= 1.5 x udp;ofi_rxd, default placement", "2.00", "NOT met"),
    ("udp: CPU per 8 B message <= 1.5 x udp;ofi_rxd, two hosts", "1.50", "met"),
    ("shm: CPU per 8 B message <= 1.5 x udp;ofi_rxd, two hosts", "-", "not measured"),
]

ENGINE_EXPECT = [
    ("engine: >= 10 M 8-byte PUTs/s on one core", "9.99 M/s", "NOT met"),
    ("engine: <= 1,200 instructions per 8-byte PUT (callgrind)", "1100", "met"),
    ("engine: 4 KiB PUTs >= 0.5 x memcpy", "0.50", "met"),
]

SUMMARY = re.compile(r"^(\S.*?)\s{2,}(\S.*?)\s{2,}(met|NOT met|not measured)$")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def summary(out):
    """{goal: (measured, status)} of the one-screen summary."""
    got = {}
    for line in out.splitlines():
        m = SUMMARY.match(line)
        if m:
            got[m.group(1)] = (m.group(2), m.group(3))
    return got


def run(d, name, files, extra):
    paths = {}
    for k, text in files.items():
        paths[k] = os.path.join(d, "%s-%s" % (name, k))
        with open(paths[k], "w") as f:
            f.write(text)
    args = [sys.executable, REPORT, "--out", os.path.join(d, name), "--no-plots"] + extra(paths)
    p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, "%s: report.py failed: %s" % (name, p.stderr.strip()[-500:]))
    md = open(os.path.join(d, name + ".md")).read() if p.returncode == 0 else ""
    return summary(p.stdout), md


def expect(name, got, table):
    for g, measured, status in table:
        check(got.get(g) == (measured, status),
              "%s: %r: want %r, got %r" % (name, g, (measured, status), got.get(g)))
    extra = set(got) - {g for g, _, _ in table}
    check(not extra, "%s: goals not in the issue: %s" % (name, sorted(extra)))


def main():
    with tempfile.TemporaryDirectory(prefix="check-bench-report.") as d:
        raw, more, machine = main_rows()
        got, md = run(d, "main", {"raw.csv": raw, "more.csv": more, "machine.txt": machine},
                      lambda p: ["--csv", p["raw.csv"], "--cpu", p["more.csv"],
                                 "--machine", p["machine.txt"]])
        expect("main", got, MAIN_EXPECT)
        check("not measured: no callgrind count: valgrind is not installed" in md,
              "main: the reason valgrind gave is not in the report")
        check("Met: 7 of 17 goals; not met: 7; not measured: 3." in md,
              "main: the count line of the goal table is wrong")
        check("slower at 1024 B" in md, "main: NetPIPE's slower sizes are not named")
        check("| 8192 |" not in md, "main: NetPIPE's 8 KiB point is in the report")

        # nothing measured: every goal not measured, part mpi's reason stated
        got, md = run(d, "empty", {"raw.csv": HEAD, "more.csv": HEAD, "machine.txt":
                                   "part mpi: skipped: Open MPI's mpirun is not installed\n"},
                      lambda p: ["--csv", p["raw.csv"], "--cpu", p["more.csv"],
                                 "--machine", p["machine.txt"]])
        expect("empty", got, [(g, "-", "not measured") for g, _, _ in MAIN_EXPECT])
        check(md.count("not measured: skipped: Open MPI's mpirun is not installed") == 3,
              "empty: the three MPI goals do not state why part mpi was skipped")

        # bench/engine.sh's report: 9.99 M/s (not met), 1100 instructions (the median of three
        # counts; their mean, 1150, is within the goal too, their first is not), 4 KiB at the limit
        eng = rows("engine,,msgrate,8,1,9990000,msgps", "engine,,msgrate,8,2,9980000,msgps",
                   "engine,,msgrate,8,3,10500000,msgps", "engine,,bw,4096,1,5000,MBps",
                   "memcpy,,bw,4096,1,10000,MBps", "engine,,instr_per_put,8,1,1300,instr",
                   "engine,,instr_per_put,8,2,1100,instr", "engine,,instr_per_put,8,3,1050,instr")
        got, md = run(d, "engine", {"engine.csv": eng, "machine.txt": "mode: quick\n"},
                      lambda p: ["--engine", "--csv", p["engine.csv"], "--machine",
                                 p["machine.txt"]])
        expect("engine", got, ENGINE_EXPECT)
        check("| engine: <= 1,200 instructions per 8-byte PUT (callgrind) | 1100 | yes |" in md,
              "engine: the goal table of the engine report is wrong")
    for f in failures:
        print("FAIL: " + f)
    print("check-bench-report: %d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
