#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The report of bench/run.sh: medians over the reps of the raw CSV, tables
(side by side, perftest-shaped, OSU-shaped), the goals of the performance
issue with their ratios, gnuplot PNGs, and a one-screen summary on stdout.

  report.py --csv RAW.csv --cpu MORE.csv --machine MACHINE.txt --out BASE [--quick]

MORE.csv (same columns) holds the CPU cost rows and the engine ceiling.

Writes BASE.md and BASE-{lat,bw,hops}.png. Every figure is the median over
the reps of one run; nothing is carried over from another run.

With --verbs (bench/run.sh --transport verbs): SoftDNP over the verbs
transport beside perftest on the same Soft-RoCE devices in a VM; the
transports are named NAME@ACCEL (kvm or tcg), and every table, ratio and plot
says which accelerator ran the guest (verbs_report, BASE-{lat,bw}.png).
"""
import argparse
import csv
import math
import os
import shutil
import statistics
import subprocess
import sys

# Reference figures from the source documents (cited by title and section).
REF_LAT = [
    (6.3, "APEnet+ host-to-host, 28 Gbps links"),
    (1.3, "ExaNeSt prototype, single hop"),
]
REF_BW = [
    (1200.0, "APEnet+ host-to-host, two nodes"),
    (2300.0, "APEnet v5 (PCIe Gen3), loopback"),
    (3300.0, "InfiniBand host-to-host (OSU, MVAPICH2)"),
]
CAPTION_SOURCES = (
    "Reference lines: APEnet+ host-to-host latency 6.3 us and two-node bandwidth 1.2 GB/s, and "
    "the InfiniBand host-to-host bandwidth of 3.3 GB/s measured with the OSU benchmarks over "
    "MVAPICH2 on the same test platform: EURETILE project report, \"Bandwidth & Latency "
    "Measures\" (APEnet+ test and debug platform). APEnet v5 bandwidth 2.3 GB/s: APEnet v5 paper "
    "(results). ExaNeSt single-hop one-way latency 1.3 us and 2.55 us over five hops: the "
    "ExaNeSt prototype paper (abstract). The source documents give no host-to-host InfiniBand "
    "latency figure, so the latency plot has no InfiniBand line (perftest rows appear only "
    "where an RDMA device exists)."
)
EXANEST_HOPS = [(1, 1.3), (5, 2.55)]

DNP_ORDER = ["shm", "shm-busy", "shm-unpinned", "udp", "udp-unpinned", "memif", "dpdk"]
PEER_ORDER = [
    ("kernel", "udp"), ("kernel", "udp-busy"), ("kernel", "tcp"), ("kernel", "tcp-busy"),
    ("libfabric", "shm"), ("libfabric", "tcp"), ("libfabric", "tcp;ofi_rxm"),
    ("libfabric", "udp;ofi_rxd"), ("ucx", "posix"), ("ucx", "tcp"),
]


# One colour and one marker per stack, the same in every plot, told apart by
# both (and SoftDNP solid, the peers dashed): a stack's index in ALL_SERIES picks
# them, unique for the first 20; the first 15 markers are gnuplot's shapes,
# the rest letters.
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#bcbd22", "#000000", "#7f7f7f", "#aec7e8", "#ff9896", "#98df8a",
           "#ffbb78", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5", "#dbdb8d"]
MARKERS = ["5", "7", "9", "11", "13", "15", "4", "6", "8", "10", "12", "14", "1", "2", "3",
           '"#"', '"@"', '"&"', '"%"', '"$"']
ALL_SERIES = [("", t) for t in DNP_ORDER] + PEER_ORDER


def series_style(key, extra):
    """gnuplot 'lc ... pt ...' of a stack (extra: stacks beyond ALL_SERIES, in order)."""
    order = ALL_SERIES + [k for k in extra if k not in ALL_SERIES]
    i = order.index(key) if key in order else len(order)
    return "lc rgb '%s' pt %s ps 1.2" % (COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)])


def records(path):
    """(key, rep, value) of every readable row of a CSV; key = (transport, peer, test, bytes)."""
    if not path or not os.path.exists(path):
        return
    with open(path) as f:
        for r in csv.DictReader(f):
            try:
                key = (r["transport"], r["peer"], r["test"], int(r["bytes"]))
                yield key, int(r["rep"]), float(r["value"])
            except (KeyError, ValueError):
                continue


def load(path):
    rows = {}
    for key, _, v in records(path):
        rows.setdefault(key, []).append(v)
    return {k: statistics.median(v) for k, v in rows.items()}, \
        {k: len(v) for k, v in rows.items()}


def label(peer, tr):
    if not peer:
        return "SoftDNP " + tr
    return {"kernel": "kernel", "libfabric": "libfabric", "ucx": "UCX",
            "perftest": "perftest"}[peer] + " " + tr


def fmt(v, unit=""):
    if v is None:
        return "-"
    if unit in ("msgps",):
        return "%.0f" % v
    if v >= 1000:
        return "%.0f" % v
    if v >= 100:
        return "%.1f" % v
    if v >= 10:
        return "%.2f" % v
    return "%.3f" % v


def per_rep(path, key):
    """{rep: value} of one (transport, peer, test, bytes) in a CSV."""
    return {rep: v for k, rep, v in records(path) if k == key}


def ratio(a, b):
    return a / b if a is not None and b else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--cpu")
    ap.add_argument("--machine")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--verbs", action="store_true",
                    help="the rows of bench/run.sh --transport verbs (verbs_report)")
    ap.add_argument("--engine", action="store_true",
                    help="the rows of bench/engine.sh (engine_report)")
    ap.add_argument("--no-plots", action="store_true", help="no gnuplot PNGs (tests)")
    a = ap.parse_args()
    if a.verbs:
        return verbs_report(a)
    if a.engine:
        return engine_report(a)
    med, cnt = load(a.csv)
    cpu = load(a.cpu)[0] if a.cpu and os.path.exists(a.cpu) else {}
    machine = open(a.machine).read().strip().splitlines() if a.machine else []

    def get(tr, peer, test, b):
        return med.get((tr, peer, test, b))

    sizes = sorted({k[3] for k in med if k[2] in ("lat", "bw") and "/" not in k[0]})
    cols = [("", t) for t in DNP_ORDER if any(k[0] == t and k[1] == "" for k in med)]
    cols += [(p, t) for p, t in PEER_ORDER if any(k[0] == t and k[1] == p for k in med)]
    cols += sorted({(k[1], k[0]) for k in med if k[1] == "perftest"})
    name = os.path.basename(a.out)
    out = []
    w = out.append

    w("# SoftDNP beside the alternatives, %s" % name)
    w("")
    w("```")
    w("\n".join(machine))
    w("```")
    w("")
    w("Raw rows: `%s` (header `transport,peer,test,bytes,rep,value,unit`), CPU cost: `%s`. "
      "Every figure below is the **median over the reps of this one run**; all stacks were "
      "measured in the same run, interleaved rep by rep." % (os.path.basename(a.csv),
                                                           os.path.basename(a.cpu or "")))
    w("")
    w("Method. SoftDNP: `dnp_pingpong` = PUT ping-pong, half round trip, per-run median of "
      "its iterations (EURETILE report, software test suite); `loopback` = PUT to self, time to "
      "TX_DONE and RX_PUT (APEnet v5 paper); `dnp_bw` = one-way PUT stream, window 32 "
      "(bw in MB/s = 10^6 B/s, msgrate in messages/s). `shm`, `udp` = daemons with the default "
      "(adaptive) idle policy, `dnp-run --pin` (each daemon and each program on a CPU of its "
      "own choosing, as the peers are pinned); `shm-busy` = busy-polling daemons, `--pin`; "
      "`-unpinned` = default policy, placed by the scheduler (dnp-run's default). Peers: two processes pinned to CPUs 0 and 1. kernel: `udp_pingpong` "
      "(`udp`, `tcp`: blocking receive; `-busy`: non-blocking receive in a loop). libfabric: "
      "`fi_pingpong -e msg` (tcp) or `-e rdm`; its lat is `usec/xfer` (half round trip) and "
      "its bw is `MB/sec` of the ping-pong (size / half round trip: Debian's libfabric-bin has "
      "no streaming test), so libfabric bandwidths are lower bounds. UCX: `ucx_perftest` "
      "`tag_lat` (median) and `tag_bw` (converted from 2^20 to 10^6 bytes/s), UCX_TLS=posix,self "
      "or tcp,self.")
    w("")
    ibl = [l for l in machine if l.startswith("InfiniBand/RDMA")]
    if ibl:
        w(ibl[0])
        w("")

    # ---- side-by-side tables
    def table(test, unit, title, best_low):
        present = [c for c in cols if any(get(c[1], c[0], test, b) is not None for b in sizes)]
        if not present:
            return
        w("## %s" % title)
        w("")
        w("| bytes | " + " | ".join(label(p, t) for p, t in present) + " | winner |")
        w("| ---: | " + " | ".join("---:" for _ in present) + " | --- |")
        for b in sizes:
            vals = [get(t, p, test, b) for p, t in present]
            have = [(v, c) for v, c in zip(vals, present) if v is not None]
            win = "-"
            if have:
                v, c = (min if best_low else max)(have, key=lambda x: x[0])
                win = label(*c)
            w("| %d | " % b + " | ".join(fmt(v, unit) for v in vals) + " | %s |" % win)
        w("")

    table("lat", "us", "Latency: half round trip, us (lower is better)", True)
    table("bw", "MBps", "Bandwidth, MB/s (higher is better; libfabric: ping-pong MB/s)", False)
    table("msgrate", "msgps", "Message rate, messages/s (higher is better)", False)

    lo = {b: get("shm", "", "loopback", b) for b in sizes}
    cl = get("cpu", "", "cacheline", 64)
    w("## Loopback PUT and the cache line")
    w("")
    w("| bytes | loopback PUT completion (us) |")
    w("| ---: | ---: |")
    for b in sizes:
        w("| %d | %s |" % (b, fmt(lo[b])))
    w("")
    w("Cache line (64 B) between CPUs 0 and 1, half round trip: %s ns (round trip %s ns), "
      "`bench/cacheline`." % (fmt(cl), fmt(2 * cl if cl else None)))
    w("")
    # each rep's 8-byte loopback against the cache line measured just before it
    lo_rep = per_rep(a.csv, ("shm", "", "loopback", 8))
    cl_rep = per_rep(a.cpu, ("cpu", "", "cacheline-beside", 64))
    pairs = [(r, lo_rep[r], cl_rep[r]) for r in sorted(lo_rep) if cl_rep.get(r)]
    pair_ratios = [lo * 1000 / (2 * c) for _, lo, c in pairs]
    if pairs:
        w("Each rep's 8-byte loopback beside the cache line measured just before it (on a VM "
          "the two vCPUs may be hyperthreads of one host core, then the line is several times "
          "faster, and the loopback with it):")
        w("")
        w("| rep | loopback (us) | cache line, half round trip (ns) | loopback / line round trip |")
        w("| ---: | ---: | ---: | ---: |")
        for (r, lo, c), q in zip(pairs, pair_ratios):
            w("| %d | %s | %s | %.2f |" % (r, fmt(lo), fmt(c), q))
        w("")

    # ---- kernel baseline check
    w("## Kernel UDP baseline: placement")
    w("")
    w("| bytes | blocking, CPUs 0 and 1 | blocking, both on CPU 0 | blocking, unpinned | busy-poll, CPUs 0 and 1 |")
    w("| ---: | ---: | ---: | ---: | ---: |")
    for b in sizes:
        w("| %d | %s | %s | %s | %s |" % (b, fmt(get("udp", "kernel", "lat", b)),
                                         fmt(get("udp-1cpu", "kernel", "lat", b)),
                                         fmt(get("udp-unpinned", "kernel", "lat", b)),
                                         fmt(get("udp-busy", "kernel", "lat", b))))
    w("")
    w("A blocking receiver sleeps; the sender's datagram wakes it. On one CPU that is a "
      "context switch; on two CPUs it is a wake-up of an idle CPU, which in a virtual machine "
      "is a halted vCPU woken by an inter-processor interrupt through the hypervisor, several "
      "times dearer. Unpinned, the scheduler moves the pair between the two cases in the "
      "middle of a run, so the figure jumps between sizes for no reason of size (the earlier "
      "report's 5 us at 64 B and 21.6 us at 512 B). The baseline is now pinned and states its "
      "placement; ratios use the pinned figures.")
    w("")

    # ---- perftest / OSU shaped
    w("## perftest-shaped tables (ib_write_lat / ib_write_bw columns)")
    w("")
    def shaped(p, t, lat_head, lat_row, bw_head, bw_row, rate):
        """One perftest- or OSU-shaped block of column (p, t): the latency
        rows, then, when there are any, the bandwidth rows with the message
        rate (rate(m) formats it)."""
        w("```")
        w(lat_head[0] % label(p, t))
        w(lat_head[1])
        for b in sizes:
            v = get(t, p, "lat", b)
            if v is not None:
                w(lat_row % (b, v))
        if any(get(t, p, "bw", b) is not None for b in sizes):
            w(bw_head[0] % label(p, t))
            w(bw_head[1])
            for b in sizes:
                v = get(t, p, "bw", b)
                m = get(t, p, "msgrate", b)
                if v is not None:
                    w(bw_row % (b, v, rate(m) if m else "-"))
        w("```")

    for p, t in cols:
        if not any(get(t, p, "lat", b) is not None or get(t, p, "bw", b) is not None
                   for b in sizes):
            continue
        shaped(p, t, ("# %s  (cf. ib_write_lat)", " #bytes     t_typical[usec]"),
               " %-10d %-10.2f",
               ("# %s  (cf. ib_write_bw)", " #bytes     BW average[MB/sec]   MsgRate[Mpps]"),
               " %-10d %-20.2f %s", lambda m: "%.6f" % (m / 1e6))
    w("")
    w("## OSU-shaped tables (osu_latency, osu_bw, osu_mbw_mr)")
    w("")
    for p, t in cols:
        if get(t, p, "lat", sizes[0]) is None and get(t, p, "bw", sizes[0]) is None:
            continue
        shaped(p, t, ("# OSU-style Latency Test: %s", "# Size          Latency (us)"),
               "%-15d %.2f",
               ("# OSU-style Bandwidth Test: %s", "# Size      Bandwidth (MB/s)     Messages/s"),
               "%-11d %-20.2f %s", lambda m: "%.0f" % m)
    w("")

    # ---- hops
    hop = {}
    for (tr, p, test, b), v in med.items():
        if p == "" and test == "lat" and tr.count("/") == 2:
            _, topo, h = tr.split("/")
            hop.setdefault(topo, {})[int(h.replace("hops", ""))] = v
    if hop:
        w("## Multi-hop latency (SoftDNP shm, 8 B PUT ping-pong, half round trip, us)")
        w("")
        mh = max(max(d) for d in hop.values())
        w("| torus | " + " | ".join("%d hop%s" % (h, "s" if h > 1 else "") for h in range(1, mh + 1))
          + " | per extra hop |")
        w("| --- | " + " | ".join("---:" for _ in range(mh)) + " | ---: |")
        for topo, d in sorted(hop.items()):
            hs = sorted(d)
            slope = (d[hs[-1]] - d[hs[0]]) / (hs[-1] - hs[0]) if len(hs) > 1 else None
            w("| %s | " % topo + " | ".join(fmt(d.get(h)) for h in range(1, mh + 1)) +
              " | %s |" % fmt(slope))
        w("| ExaNeSt prototype (paper) | 1.3 | " + " | ".join("" for _ in range(mh - 1)) +
          " | 0.31 (2.55 at 5 hops) |")
        w("")

    # ---- CPU
    if cpu:
        w("## CPU cost (user + system time of every process of the run: both daemons and both programs)")
        w("")
        w("| stack | CPU per 8-byte message (ns) | CPU per MiB, 1 MiB PUTs (us) |")
        w("| --- | ---: | ---: |")
        for t, p in [("shm", ""), ("shm-busy", ""), ("udp", ""), ("udp", "kernel"), ("tcp", "kernel")]:
            m = cpu.get((t, p, "cpu_per_msg", 8))
            mb = cpu.get((t, p, "cpu_per_mib", 1048576))
            if m is not None or mb is not None:
                w("| %s | %s | %s |" % (label(p, t), fmt(m), fmt(mb)))
        w("")
        w("SoftDNP: `dnp_bw` streams (window 32), CPU from getrusage(RUSAGE_CHILDREN) around "
          "`dnp-run`, so daemon start-up and the busy daemons' idle polling are included. "
          "kernel: a blocking ping-pong, two messages per round trip.")
        w("")

    # ---- engine ceiling and the cost breakdown of an 8-byte PUT
    pps8 = cpu.get(("engine", "", "msgrate", 8))
    e4, m4 = cpu.get(("engine", "", "bw", 4096)), cpu.get(("memcpy", "", "bw", 4096))
    if pps8:
        w("## Engine ceiling (two engines back to back in one thread, no I/O, CRC on every frame)")
        w("")
        w("| 8-byte PUTs/s | 4 KiB PUTs MB/s | memcpy of 4 KiB blocks MB/s | 4 KiB / memcpy |")
        w("| ---: | ---: | ---: | ---: |")
        w("| %s | %s | %s | %s |" % (fmt(pps8, "msgps"), fmt(e4), fmt(m4),
                                    "%.2f" % ratio(e4, m4) if ratio(e4, m4) else "-"))
        w("")
        w("`./dnp bench engine` measures the same with more repetitions and 64 B as well.")
        w("")
    pagefault_section(w, cpu)
    hand_section(w, cpu)
    L, B = get("shm", "", "loopback", 8), get("shm-busy", "", "lat", 8)
    S, U = get("shm", "", "lat", 8), get("udp", "", "lat", 8)
    if pps8 and L and B and S:
        E = 1e6 / pps8
        w("## Where the time of one 8-byte PUT goes (medians of this run, us)")
        w("")
        w("A subtraction model: each configuration adds one cost to the previous one.")
        w("")
        w("| part | how it is measured | us |")
        w("| --- | --- | ---: |")
        w("| engine work (sender and receiver engines, data and completion packets) | 1 / engine PUT rate | %.3f |" % E)
        w("| hand-offs program -> daemon -> program through shared memory (rings, doorbells, events) | loopback PUT - engine | %.3f |" % (L - E))
        w("| the link between two daemons (shm ring), the second daemon, four busy processes sharing two CPUs | 2-node busy half round trip - loopback | %.3f |" % (B - L))
        w("| wake-ups: daemons and programs that yield and sleep when idle (default policy) | 2-node default - busy | %.3f |" % (S - B))
        if U:
            w("| kernel UDP sockets instead of a shared-memory ring | udp - shm default | %.3f |" % (U - S))
        w("| floor: one 64-byte cache line moving between the two CPUs, three times (program -> daemon -> daemon -> program) | 3 x cache line | %.3f |" % (3 * cl / 1000 if cl else float("nan")))
        w("")

    # ---- goals
    goals = issue29_goals(med, cpu, a.cpu, machine)
    mpi_section(w, cpu, a.cpu)
    loop_section(w, a.cpu)
    MB = 1048576
    s1m = get("shm", "", "lat", MB)
    pp = MB / s1m if s1m else None
    fshm = get("shm", "libfabric", "bw", MB)
    w("## Goals (issue 29), from this run")
    w("")
    w("Each goal of the performance issue (issue 29, \"Goals\"), computed from the rows of "
      "this run; \"not measured\" where a row is missing. Hand-off columns (8-byte "
      "ping-pong of the same stacks, part `hand` of this run): CPU time per message of all "
      "processes of both sides, and context switches per half round trip, SoftDNP / peer. "
      "How each goal is measured: docs/performance.md, \"The goal table of issue 29\".")
    w("")
    goal_table(w, goals, cpu)
    w("The bandwidth goal compares SoftDNP's streaming `dnp_bw` with libfabric's ping-pong "
      "MB/s (the only bandwidth `fi_pingpong` gives). Like for like (ping-pong, size / half "
      "round trip), SoftDNP shm moves 1 MiB at %s MB/s: %s x libfabric shm. "
      "No goal is met by turning a safety check off: CRC-32 on every packet, the buffer-table "
      "and key checks and the untrusted-application rules all stay on in every figure."
      % (fmt(pp), "%.2f" % ratio(pp, fshm) if ratio(pp, fshm) else "-"))
    w("")

    # ---- plots
    pngs = [] if a.no_plots else plots(a.out, med, cols, sizes, hop)
    if pngs:
        w("## Plots")
        w("")
        for p, what, missing in pngs:
            w("![%s](%s)" % (what, os.path.basename(p)))
            w("")
            if missing:
                w("Not in this plot (not measured in this run, also named in its legend): %s." %
                  ", ".join(missing))
                w("")
        w(CAPTION_SOURCES)
        w("")
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(out) + "\n")

    # ---- one screen
    print("")
    print("=" * 78)
    print("SoftDNP bench summary (%s), medians of %s" %
          (name, "quick run" if a.quick else "full run"))
    print("-" * 78)
    print("%-8s %-8s %-24s %-24s %s" % ("test", "bytes", "best SoftDNP", "best peer", "winner"))
    for test, unit, low in (("lat", "us", True), ("bw", "MB/s", False), ("msgrate", "msg/s", False)):
        for b in sizes:
            dn = [(get(t, p, test, b), label(p, t)) for p, t in cols if p == ""]
            pe = [(get(t, p, test, b), label(p, t)) for p, t in cols if p != ""]
            dn = [x for x in dn if x[0] is not None]
            pe = [x for x in pe if x[0] is not None]
            if not dn and not pe:
                continue
            pick = min if low else max
            bd = pick(dn) if dn else None
            bp = pick(pe) if pe else None
            cands = [x for x in (bd, bp) if x]
            win = pick(cands)[1] if cands else "-"
            print("%-8s %-8d %-24s %-24s %s" % (
                test, b, "%s %s" % (fmt(bd[0]), bd[1][8:]) if bd else "-",
                "%s %s" % (fmt(bp[0]), bp[1]) if bp else "-", win))
    print("-" * 78)
    print_goals(goals)
    print("=" * 78)


# ---- hand-off: 8-byte ping-pong under GNU time (bench/run.sh, part 'hand')
HAND_ROWS = [  # (label, placement, transport, peer)
    ("SoftDNP shm", "pinned (--pin)", "shm", ""),
    ("SoftDNP shm", "unpinned", "shm-unpinned", ""),
    ("SoftDNP shm", "two hosts", "shm-2host", ""),
    ("SoftDNP udp", "pinned (--pin)", "udp", ""),
    ("SoftDNP udp", "unpinned", "udp-unpinned", ""),
    ("SoftDNP udp", "two hosts", "udp-2host", ""),
] + [("libfabric " + p, pl, p + sfx, "libfabric") for p in ("tcp", "tcp;ofi_rxm", "udp;ofi_rxd", "shm")
     for pl, sfx in (("pinned", ""), ("two hosts", "-2host"))]


def hand_cells(cpu, pair):
    """'SoftDNP / peer (ratio)' cells of CPU per message and switches for a goal's pair."""
    if not pair:
        return "", ""
    (t1, p1), (t2, p2) = pair
    out = []
    for test, f in (("cpu_pp_msg", "%.0f"), ("csw_half", "%.2f")):
        a, b = cpu.get((t1, p1, test, 8)), cpu.get((t2, p2, test, 8))
        if a is None and b is None:
            out.append("-")
            continue
        cell = "%s / %s" % (f % a if a is not None else "-", f % b if b is not None else "-")
        if test == "cpu_pp_msg" and a is not None and b:
            cell += " (%.2f)" % (a / b)
        out.append(cell)
    return out[0], out[1]


def hand_section(w, cpu):
    """The table of the hand-off rows: half round trip, CPU per message, switches."""
    rows = [r for r in HAND_ROWS if cpu.get((r[2], r[3], "cpu_pp_msg", 8)) is not None]
    if not rows:
        return
    w("## Hand-off: 8-byte ping-pong, CPU time and context switches per message")
    w("")
    w("| stack | placement | half round trip (us) | CPU per message (ns) | "
      "context switches per half round trip |")
    w("| --- | --- | ---: | ---: | ---: |")
    for lab, pl, t, p in rows:
        w("| %s | %s | %s | %s | %s |" % (
            lab, pl, fmt(cpu.get((t, p, "hand_lat", 8))), fmt(cpu.get((t, p, "cpu_pp_msg", 8))),
            "%.2f" % cpu[(t, p, "csw_half", 8)] if (t, p, "csw_half", 8) in cpu else "-"))
    w("")
    w("Method: each stack runs an 8-byte ping-pong of N/5 and of N round trips under GNU "
      "`time` (SoftDNP: `dnp-run` with both daemons and both programs, which it reaps; "
      "libfabric: `fi_pingpong` server and client); CPU = user + system, switches = voluntary "
      "+ involuntary, both summed over every process of both sides, and each figure is the "
      "difference of the two runs over the extra messages (two per round trip), so start-up "
      "and teardown cancel out. GNU time counts CPU in 10 ms steps: 0.31 us per message "
      "at N = 20000 (32000 extra messages), 1.25 us in a quick run (N = 5000). "
      "Placements: pinned = SoftDNP `dnp-run --pin` (node i's daemon on CPU i, "
      "its program on the other CPU), the peers' two processes on CPUs 0 and 1; unpinned = "
      "placed by the scheduler; two hosts = node x's program and daemon both on CPU x. A "
      "libfabric node is one process, so its two-host placement is its pinned one, measured "
      "again in the same rep. The fewest switches each placement allows: docs/performance.md, "
      "\"Hand-off and context switches\".")
    w("")


# ---- the goals of issue 29 ("Goals"): one tuple per goal,
# (goal, measured, ok, figures, pair): measured is the text of the "measured"
# column (None: not measured), ok True or False (None: not measured), figures
# what it was computed from (or why it is missing), pair the (transport, peer)
# of SoftDNP and of the peer whose hand-off rows go beside it.
MB = 1048576
NETPIPE_MAX = 4096


def goal(name, measured, ok, figures, pair=None):
    return (name, measured, ok if measured is not None else None, figures, pair)


def ratio_goal(name, a, b, limit, below, figures, pair=None):
    """A goal on the ratio a / b: at most limit (below) or at least limit."""
    r = ratio(a, b)
    if r is None:
        return goal(name, None, None, "not measured: " + figures, pair)
    return goal(name, "%.2f" % r, r <= limit if below else r >= limit, figures, pair)


def machine_note(machine, prefix):
    """The rest of the machine file's line starting with prefix (why a part is missing)."""
    for line in machine:
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    return ""


def why_missing(option, a, b):
    """', this run had OPTION' when a figure is missing and the run's option explains it."""
    return ", this run had %s" % option if option and (a is None or b is None) else ""


def issue29_goals(med, cpu, cpu_path, machine):
    """Every goal of issue 29 but the engine's own report's, from this run's rows."""
    goals = []
    mode = machine_note(machine, "mode:")
    # bench/run.sh --placement default or two-host leaves the other placement's hand rows out
    skip = {"-2host": "--placement default" if "placement default" in mode else "",
            "": "--placement two-host" if "placement two-host" in mode else ""}
    lat = (("udp", "udp;ofi_rxd"), ("shm", "tcp;ofi_rxm"))
    for t, peer in lat:
        a, b = med.get((t, "", "lat", 8)), med.get((peer, "libfabric", "lat", 8))
        goals.append(ratio_goal(
            "%s: 8 B half round trip <= libfabric %s, default placement" % (t, peer), a, b, 1.0,
            True, "%s us (`%s`, --pin) / %s us (CPUs 0 and 1)" % (fmt(a), t, fmt(b)),
            ((t, ""), (peer, "libfabric"))))
    for t, peer in lat:
        a = cpu.get((t + "-2host", "", "hand_lat", 8))
        b = cpu.get((peer + "-2host", "libfabric", "hand_lat", 8))
        goals.append(ratio_goal(
            "%s: 8 B half round trip <= libfabric %s, two hosts" % (t, peer), a, b, 1.0, True,
            "%s us / %s us (part hand)%s" % (fmt(a), fmt(b), why_missing(skip["-2host"], a, b)),
            ((t + "-2host", ""), (peer + "-2host", "libfabric"))))
    a, b = med.get(("shm", "", "bw", MB)), med.get(("shm", "libfabric", "bw", MB))
    goals.append(ratio_goal("shm: 1 MiB PUT bandwidth >= 0.5 x libfabric shm", a, b, 0.5, False,
                            "%s / %s MB/s" % (fmt(a), fmt(b))))
    note = machine_note(machine, "engine:")
    goals += engine_goals(lambda t, test, b: cpu.get((t, "", test, b)),
                          "this run's short engine part; `./dnp bench engine` is the reference",
                          note)
    goals += loop_goals(cpu_path, machine_note(machine, "part loop:"))
    goals += mpi_goals(cpu, cpu_path, machine_note(machine, "part mpi:"))
    rxd = {"": cpu.get(("udp;ofi_rxd", "libfabric", "cpu_pp_msg", 8)),
           "-2host": cpu.get(("udp;ofi_rxd-2host", "libfabric", "cpu_pp_msg", 8))}
    for sfx, pl in (("", "default placement"), ("-2host", "two hosts")):
        for t in ("udp", "shm"):
            a = cpu.get((t + sfx, "", "cpu_pp_msg", 8))
            goals.append(ratio_goal(
                "%s: CPU per 8 B message <= 1.5 x udp;ofi_rxd, %s" % (t, pl), a,
                rxd[sfx], 1.5, True, "%s ns / %s ns (part hand)%s" % (
                    fmt(a), fmt(rxd[sfx]), why_missing(skip[sfx], a, rxd[sfx])),
                ((t + sfx, ""), ("udp;ofi_rxd" + sfx, "libfabric"))))
    return goals


def engine_goals(get, source, note=""):
    """The three goals of `./dnp bench engine`; get(transport, test, bytes) gives a median."""
    pps = get("engine", "msgrate", 8)
    goals = []
    if pps is None:
        goals.append(goal("engine: >= 10 M 8-byte PUTs/s on one core", None, None,
                          "not measured: no engine rows"))
    else:
        goals.append(goal("engine: >= 10 M 8-byte PUTs/s on one core", "%.2f M/s" % (pps / 1e6),
                          pps >= 1e7, "%.2f of the goal (%s)" % (pps / 1e7, source)))
    ins = get("engine", "instr_per_put", 8)
    if ins is None:
        goals.append(goal("engine: <= 1,200 instructions per 8-byte PUT (callgrind)", None, None,
                          "not measured: " + (note or "no callgrind row")))
    else:
        goals.append(goal("engine: <= 1,200 instructions per 8-byte PUT (callgrind)",
                          "%.0f" % ins, ins <= 1200,
                          "both engines, sender and receiver, per PUT (engine_bench --puts; "
                          "median of the counts)"))
    e4, m4 = get("engine", "bw", 4096), get("memcpy", "bw", 4096)
    goals.append(ratio_goal("engine: 4 KiB PUTs >= 0.5 x memcpy", e4, m4, 0.5, False,
                            "%s / %s MB/s" % (fmt(e4), fmt(m4))))
    return goals


def loop_runs(path):
    """{set: {run: [loopback_us, line_half_ns, failed]}} of part loop's rows."""
    runs = {}
    for (t, p, test, b), r, v in records(path):
        if t not in ("loop-quiet", "loop-busy") or p:
            continue
        x = runs.setdefault(t, {}).setdefault(r, [None, None, False])
        if test == "loopback":
            x[0] = v
        elif test == "cacheline":
            x[1] = v
        elif test == "loopback_failed":
            x[2] = True
    return runs


def loop_within(x):
    """A run is within the goal when its loopback is at most 3 x its line's round trip."""
    lo, cl, failed = x
    return not failed and lo is not None and cl is not None and lo * 1000 <= 3 * 2 * cl


def loop_goals(path, note):
    """Loopback within 3 x the cache line's round trip in at least 9 of 10 runs (90%)."""
    runs = loop_runs(path)
    goals = []
    for t, what in (("loop-quiet", "quiet"), ("loop-busy", "beside 2 busy")):
        name = "loopback 8 B <= 3 x line round trip, >= 9 of 10 runs, %s" % what
        d = runs.get(t, {})
        if not d:
            goals.append(goal(name, None, None, "not measured: part loop did not run"))
            continue
        n = len(d)
        k = sum(1 for x in d.values() if loop_within(x))
        need = math.ceil(0.9 * n)
        qs = ["%.2f" % (x[0] * 1000 / (2 * x[1])) if x[0] is not None and x[1] else "failed"
              for _, x in sorted(d.items())]
        fig = "loopback / line round trip per run: %s" % ", ".join(qs)
        if n != 10:
            fig += "; %d runs, not 10%s" % (n, " (quick run)" if "quick" in note else "")
        goals.append(goal(name, "%d of %d runs" % (k, n), k >= need, fig))
    return goals


def mpi_rows(cpu, path):
    """NetPIPE ratios per size (SoftDNP udp / udp;ofi_rxd, medians) and each transport's
    overheads per rep over the raw dnp_pingpong 8 B median of the same rep: over[tr]
    the MPI ping-pong's median (fabric/mpi_pingpong, the raw's statistic) minus it
    where the run has those rows, and npover[tr] NetPIPE 8 B (its best batch mean)
    minus it."""
    sizes = sorted(b for (t, p, k, b) in cpu if t == "udp" and k == "netpipe" and b <= NETPIPE_MAX
                   and ("udp;ofi_rxd", "libfabric", "netpipe", b) in cpu)
    curve = [(b, cpu[("udp", "", "netpipe", b)], cpu[("udp;ofi_rxd", "libfabric", "netpipe", b)])
             for b in sizes]
    over, npover = {}, {}
    for tr in ("shm", "udp"):
        raw = per_rep(path, (tr, "", "mpi_raw", 8))
        npp = per_rep(path, (tr, "", "mpi_netpipe", 8))
        mpp = per_rep(path, (tr, "", "mpi_pingpong", 8))
        npover[tr] = [npp[r] - raw[r] for r in sorted(npp) if r in raw]
        over[tr] = [mpp[r] - raw[r] for r in sorted(mpp) if r in raw] or npover[tr]
    return curve, over, npover


def mpi_goals(cpu, path, note):
    curve, over, npover = mpi_rows(cpu, path)
    why = "not measured: " + (note or "no rows (part mpi not run, or its runs failed: see "
                              "the run's output)")
    name = "NetPIPE over SoftDNP udp no slower than over udp;ofi_rxd, 8 B..4 KiB"
    if curve:
        worst = max(curve, key=lambda x: x[1] / x[2])
        slower = [b for b, d, x in curve if d > x]
        goals = [goal(name, "%.2f" % (worst[1] / worst[2]), not slower,
                      "worst ratio at %d B (%s / %s us), %d sizes, slower at %s" % (
                          worst[0], fmt(worst[1]), fmt(worst[2]), len(curve),
                          ", ".join("%d" % b for b in slower) + " B" if slower else "none"))]
    else:
        goals = [goal(name, None, None, why)]
    for tr in ("shm", "udp"):
        name = "%s: MPI's overhead over raw dnp_pingpong <= +1.5 us (8 B)" % tr
        o = over[tr]
        if not o:
            goals.append(goal(name, None, None, why))
            continue
        m = statistics.median(o)
        per = lambda v: ", ".join("%+.2f" % x for x in v)
        if o is npover[tr]:
            fig = "NetPIPE - raw per rep: %s us" % per(o)
        else:
            fig = "MPI ping-pong median - raw median per rep: %s us (NetPIPE - raw: %s us)" % (
                per(o), per(npover[tr]) or "-")
        goals.append(goal(name, "%+.2f us" % m, m <= 1.5, fig))
    return goals


def goal_table(w, goals, cpu=None):
    """The goal table; with cpu, the hand-off columns of each goal's pair beside it."""
    w("| goal | measured | met | figures |" +
      (" CPU per message, ns | switches per half round trip |" if cpu is not None else ""))
    w("| --- | ---: | --- | --- |" + (" --- | --- |" if cpu is not None else ""))
    for g, m, ok, fig, pair in goals:
        row = "| %s | %s | %s | %s |" % (g, m if m is not None else "-",
                                         goal_word(ok, "yes", "**no**"), fig)
        if cpu is not None:
            row += " %s | %s |" % hand_cells(cpu, pair)
        w(row)
    w("")
    n = [x[2] for x in goals]
    w("Met: %d of %d goals; not met: %d; not measured: %d." % (
        n.count(True), len(n), n.count(False), n.count(None)))
    w("")


def goal_word(ok, yes="met", no="NOT met"):
    return "not measured" if ok is None else yes if ok else no


def print_goals(goals):
    for g, m, ok, _, _ in goals:
        print("%-70s  %-14s  %s" % (g, m if m is not None else "-", goal_word(ok)))


def mpi_section(w, cpu, path):
    curve, over, npover = mpi_rows(cpu, path)
    if not curve and not any(over.values()):
        return
    w("## MPI over SoftDNP (part mpi): NetPIPE and the overhead over the raw ping-pong")
    w("")
    if curve:
        w("| bytes | NetPIPE over SoftDNP udp (us) | over libfabric udp;ofi_rxd (us) | ratio |")
        w("| ---: | ---: | ---: | ---: |")
        for b, d, x in curve:
            w("| %d | %s | %s | %.2f |" % (b, fmt(d), fmt(x), d / x))
        w("")
    per = lambda v: ", ".join("%+.2f" % x for x in v) or "-"
    for tr in ("shm", "udp"):
        raw, npp = cpu.get((tr, "", "mpi_raw", 8)), cpu.get((tr, "", "mpi_netpipe", 8))
        mpp = cpu.get((tr, "", "mpi_pingpong", 8))
        if raw is not None or npp is not None:
            w("- %s, 8 B: raw `dnp_pingpong` %s us, MPI ping-pong %s us, NetPIPE %s us; "
              "overhead per rep: MPI ping-pong %s us, NetPIPE %s us." % (
                  tr, fmt(raw), fmt(mpp), fmt(npp),
                  per(over[tr]) if over[tr] is not npover[tr] else "-", per(npover[tr])))
    w("")
    w("NetPIPE 3.7 (`NPopenmpi -p 0`), one-way time (half round trip), Open MPI's mtl ofi "
      "with the provider `dnp` (2x1x1 torus, `dnp-run --pin` with the ranks placed by "
      "`DNP_MPI_PIN=1`, as the raw `dnp_pingpong`; unpinned before 2026-12-06) or with libfabric's "
      "`udp;ofi_rxd` (two ranks, `--bind-to none`); medians over the reps. The goal's "
      "overhead is the median of `fabric/mpi_pingpong` (MPI_Send/MPI_Recv round trips timed "
      "one by one, as the raw) minus the raw `dnp_pingpong` median of the same rep: the same "
      "statistic on both sides. NetPIPE's figure is its best batch mean, which carries the "
      "tail, so NetPIPE minus the raw median is shown beside it, not judged "
      "(`bench/mpi-overhead.sh`, one round per rep; docs/performance.md, \"MPI over udp\").")
    w("")


def loop_section(w, path):
    runs = loop_runs(path)
    if not runs:
        return
    w("## Loopback runs (part loop): quiet and beside two busy processes")
    w("")
    w("| run | quiet: loopback (us) | cache line, half round trip (ns) | ratio to its round trip "
      "| busy: loopback (us) | cache line (ns) | ratio |")
    w("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")

    def cells(x):
        if x is None:
            return "- | - | -"
        lo, cl, failed = x
        q = "%.2f" % (lo * 1000 / (2 * cl)) if lo is not None and cl else "-"
        return "%s | %s | %s" % ("failed" if failed else fmt(lo), fmt(cl), q)
    for r in sorted(set(runs.get("loop-quiet", {})) | set(runs.get("loop-busy", {}))):
        w("| %d | %s | %s |" % (r, cells(runs.get("loop-quiet", {}).get(r)),
                                cells(runs.get("loop-busy", {}).get(r))))
    w("")
    w("Each run: the cache line between CPUs 0 and 1 (`bench/cacheline`), then the 8-byte "
      "loopback PUT on a 1x1x1 torus, `dnp-run --pin` (20000 PUTs quiet, 5000 beside two "
      "`sh -c 'while :; do :; done'` loops started after the line and killed by PID after "
      "the run); a run is within the goal when its median is at most 3 x the round trip "
      "(twice the half round trip) of the line measured just before it.")
    w("")


def pagefault_section(w, cpu):
    """Page faults (bench/pagefault_bench, run.sh pagefault) beside PART's figures."""
    sizes = sorted(b for (t, p, k, b) in cpu if t == "shm" and k == "pf_warm")
    if not sizes:
        return
    w("## Page faults (PUT call to TX_DONE through process_vm_*, 2x1x1 shm, us; PART beside)")
    w("")
    w("| bytes | touched | fresh target | ratio | fresh source | ratio | kernel write, touched / fresh "
      "| fresh target, DNP_BUF_POPULATE | ratio |")
    w("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for b in sizes:
        wm, cd, cs, cp = (cpu.get(("shm", "", k, b)) for k in ("pf_warm", "pf_cold_dst", "pf_cold_src",
                                                              "pf_populated"))
        vw, vf = cpu.get(("cpu", "", "pf_vm_wr_warm", b)), cpu.get(("cpu", "", "pf_vm_wr_fresh", b))
        w("| %d | %s | %s | %s | %s | %s | %s / %s |" % (
            b, fmt(wm), fmt(cd), "%.2fx" % ratio(cd, wm) if ratio(cd, wm) else "-", fmt(cs),
            "%.2fx" % ratio(cs, wm) if ratio(cs, wm) else "-", fmt(vw), fmt(vf))
          + " %s | %s |" % (fmt(cp), "%.2fx" % ratio(cp, wm) if ratio(cp, wm) else "-"))
    w("")
    w("PART (ARMv8, faults at the destination): one page with a minor fault about 38 us; "
      "1 MB with a fault on every page 2.6x the time without. docs/performance.md, \"Page faults\".")
    w("")


def plots(base, med, cols, sizes, hop):
    if not shutil.which("gnuplot"):
        print("report: gnuplot not found, no plots", file=sys.stderr)
        return []
    made = []
    d = base + "-plotdata"
    os.makedirs(d, exist_ok=True)
    try:
        for test, ylabel, refs, fname, what in (
                ("lat", "half round trip (us)", REF_LAT, "-lat.png", "latency against size"),
                ("bw", "bandwidth (MB/s)", REF_BW, "-bw.png", "bandwidth against size")):
            series, missing = [], []
            for i, (p, t) in enumerate(cols):
                pts = [(b, med.get((t, p, test, b))) for b in sizes]
                pts = [(b, v) for b, v in pts if v is not None]
                if not pts:
                    continue
                fn = os.path.join(d, "%s-%d.dat" % (test, i))
                with open(fn, "w") as f:
                    for b, v in pts:
                        f.write("%d %g\n" % (b, v))
                dashed = "" if p == "" else " dt 2"
                series.append("'%s' using 1:2 with linespoints lw 2%s %s title '%s'" %
                              (fn, dashed, series_style((p, t), cols),
                               label(p, t).replace("_", "\\_")))
            if not series:
                continue
            # The stacks the bench knows that have no figure here, named in the legend.
            for p, t in ALL_SERIES:
                if not any(med.get((t, p, test, b)) is not None for b in sizes):
                    missing.append(label(p, t))
                    series.append("keyentry with lines lc rgb 'white' title '%s: not measured'" %
                                  label(p, t).replace("_", "\\_"))
            for v, txt in refs:
                series.append("%g with lines lw 1 lc rgb 'gray40' dt 3 notitle" % v)
            labels = "\n".join("set label '%s (%g)' at graph 0.02, first %g offset 0,0.6 font ',8' tc rgb 'gray30'"
                               % (txt, v, v * 1.0) for v, txt in refs)
            out = base + fname
            script = """set terminal pngcairo size 1100,700 font ',10'
set output '%s'
set logscale xy
set grid
set key outside right top font ',9'
set xlabel 'message size (bytes)'
set ylabel '%s'
set title 'SoftDNP beside the alternatives: %s (medians, one run)'
set bmargin 5
set label 'reference lines: APEnet+ and InfiniBand, EURETILE report; APEnet v5 paper; ExaNeSt prototype paper (see the report)' at screen 0.01, 0.02 font ',8'
%s
plot %s
""" % (out, ylabel, what, labels, ", \\\n     ".join(series))
            subprocess.run(["gnuplot"], input=script, text=True, check=True)
            made.append((out, what, missing))
        if hop:
            series = []
            for k, (topo, dd) in enumerate(sorted(hop.items())):
                fn = os.path.join(d, "hops-%s.dat" % topo)
                with open(fn, "w") as f:
                    for h in sorted(dd):
                        f.write("%d %g\n" % (h, dd[h]))
                series.append("'%s' using 1:2 with linespoints lw 2 lc rgb '%s' pt %s ps 1.2 "
                              "title 'SoftDNP shm, %s torus'" %
                              (fn, COLOURS[k % len(COLOURS)], MARKERS[k % len(MARKERS)], topo))
            fn = os.path.join(d, "hops-exanest.dat")
            with open(fn, "w") as f:
                for h, v in EXANEST_HOPS:
                    f.write("%d %g\n" % (h, v))
            k = len(hop)
            series.append("'%s' using 1:2 with points lc rgb '%s' pt %s ps 1.5 "
                          "title 'ExaNeSt prototype (paper)'" %
                          (fn, COLOURS[k % len(COLOURS)], MARKERS[k % len(MARKERS)]))
            out = base + "-hops.png"
            script = """set terminal pngcairo size 900,600 font ',10'
set output '%s'
set logscale y
set grid
set xrange [0.5:5.5]
set xtics 1
set xlabel 'hops'
set ylabel 'half round trip, 8 B (us)'
set title 'Multi-hop PUT latency (medians, one run)'
plot %s
""" % (out, ", \\\n     ".join(series))
            subprocess.run(["gnuplot"], input=script, text=True, check=True)
            made.append((out, "latency against hop count", []))
    except (subprocess.CalledProcessError, OSError) as e:
        print("report: gnuplot failed: %s" % e, file=sys.stderr)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return made


# ---------------------------------------------------------------- engine
def engine_report(a):
    """bench/engine.sh: the engine's ceiling per size beside memcpy, and its goals."""
    med, cnt = load(a.csv)
    machine = open(a.machine).read().strip().splitlines() if a.machine else []

    def get(t, test, b):
        return med.get((t, "", test, b))

    sizes = sorted({k[3] for k in med if k[0] == "engine" and k[2] == "msgrate"})
    reps = cnt.get(("engine", "", "msgrate", 8), 0)
    goals = engine_goals(get, "median of %d reps" % reps, machine_note(machine, "engine:"))
    out = []
    w = out.append
    w("# The engine's ceiling, %s" % os.path.basename(a.out))
    w("")
    if machine:
        w("```")
        w("\n".join(machine))
        w("```")
        w("")
    w("Two engines back to back in one thread, pinned to CPU 0 (`bench/engine_bench`: every "
      "frame CRC-32'd and checked, every PUT through the buffer table and key check), beside "
      "memcpy of the same blocks in the same run; medians over the reps. Raw rows: `%s`." %
      os.path.basename(a.csv))
    w("")
    w("| bytes | PUTs/s | engine MB/s | memcpy MB/s | engine / memcpy |")
    w("| ---: | ---: | ---: | ---: | ---: |")
    for b in sizes:
        e, m = get("engine", "bw", b), get("memcpy", "bw", b)
        r = ratio(e, m)
        w("| %d | %s | %s | %s | %s |" % (b, fmt(get("engine", "msgrate", b), "msgps"), fmt(e),
                                          fmt(m), "%.2f" % r if r is not None else "-"))
    w("")
    w("## Goals (issue 29), from this run")
    w("")
    goal_table(w, goals)
    w("Instructions per PUT: `valgrind --tool=callgrind` over `engine_bench --sizes 8 --reps 1 "
      "--puts N` for N = 20000 and 60000, the difference of the two counts over the 40000 "
      "extra PUTs (set-up cancels out), median of three such differences (%s); both engines, "
      "the sender's and the receiver's work." % (
          ", ".join("%.0f" % v for k, _, v in sorted(records(a.csv), key=lambda x: x[1])
                    if k == ("engine", "", "instr_per_put", 8)) or "none"))
    w("")
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(out) + "\n")
    print("")
    print("%8s %16s %12s %14s %12s" % ("bytes", "packets/s", "GB/s", "memcpy GB/s", "engine/memcpy"))
    for b in sizes:
        pps, bw, mc = get("engine", "msgrate", b), get("engine", "bw", b), get("memcpy", "bw", b)
        if None not in (pps, bw, mc):
            print("%8d %16.0f %12.3f %14.3f %12.2f" % (b, pps, bw / 1000, mc / 1000, bw / mc))
    print("-" * 78)
    print_goals(goals)
    print("medians of %d reps; raw rows: %s; report: %s.md" % (reps, a.csv, a.out))
    return 0


# ---------------------------------------------------------------- verbs
# bench/run.sh --transport verbs: SoftDNP over verbs (UC and RC QPs) and
# perftest on the same rxe device pair, in one VM boot. Rows are named
# NAME@ACCEL; only ratios between rows of one run compare (under TCG the
# guest's CPU is emulated).
VERBS_SERIES = [
    # (transport without @accel, peer, label, tests)
    ("verbs-uc", "", "SoftDNP verbs UC", ("lat", "bw", "msgrate")),
    ("verbs-rc", "", "SoftDNP verbs RC", ("lat", "bw", "msgrate")),
    ("rxe-send_lat", "perftest", "ib_send_lat", ("lat",)),
    ("rxe-write_lat", "perftest", "ib_write_lat", ("lat",)),
    ("rxe-write_bw", "perftest", "ib_write_bw", ("bw", "msgrate")),
]


def verbs_accel(med, machine):
    """The guest's accelerator: the machine file's line, else the rows' suffix."""
    for line in machine:
        if line.startswith("guest accelerator:"):
            return line.split(":", 1)[1].split()[0]
    for k in med:
        if "@" in k[0]:
            return k[0].split("@", 1)[1]
    return "?"


def verbs_table(w, get, sizes, test, title, cols, base, ratio_label):
    """One side-by-side table: a column per series, then each SoftDNP
    column's ratio to the perftest column base."""
    present = [c for c in cols if any(get(c[0], c[1], test, b) is not None for b in sizes)]
    if not present:
        return
    ours = [c for c in present if c[1] == ""]
    w("## %s" % title)
    w("")
    w("| bytes | " + " | ".join(c[2] for c in present) +
      "".join(" | %s / %s" % (c[2].split(" [")[0].replace("SoftDNP verbs ", ""), ratio_label)
              for c in ours) + " |")
    w("| ---: |" + " ---: |" * (len(present) + len(ours)))
    for b in sizes:
        vals = [get(c[0], c[1], test, b) for c in present]
        ref = get(base[0], base[1], test, b) if base else None
        rs = [ratio(get(c[0], c[1], test, b), ref) for c in ours]
        w("| %d | " % b + " | ".join(fmt(v, "msgps" if test == "msgrate" else "") for v in vals) +
          "".join(" | %s" % ("%.2f" % r if r is not None else "-") for r in rs) + " |")
    w("")


def verbs_load(path):
    """Medians and counts as load(), without the rows that are no figure
    (perftest prints t_typical "inf" when its clock fails under TCG)."""
    rows = {}
    for key, _, v in records(path):
        if math.isfinite(v) and v > 0:
            rows.setdefault(key, []).append(v)
    return {k: statistics.median(v) for k, v in rows.items()}, \
        {k: len(v) for k, v in rows.items()}


def verbs_report(a):
    med, cnt = verbs_load(a.csv)
    machine = open(a.machine).read().strip().splitlines() if a.machine else []
    accel = verbs_accel(med, machine)
    ACC = accel.upper()

    def get(tr, peer, test, b):
        return med.get(("%s@%s" % (tr, accel), peer, test, b))

    cols = [(t, p, "%s [%s]" % (lab, ACC), tests) for t, p, lab, tests in VERBS_SERIES
            if any(k[0] == "%s@%s" % (t, accel) and k[1] == p for k in med)]
    sizes = sorted({k[3] for k in med if k[2] in ("lat", "bw")})
    reps = max(cnt.values()) if cnt else 0
    out = []
    w = out.append
    w("# SoftDNP over verbs beside perftest, %s (guest: %s)" % (os.path.basename(a.out), ACC))
    w("")
    w("```")
    w("\n".join(machine))
    w("```")
    w("")
    w("Raw rows: `%s` (header `transport,peer,test,bytes,rep,value,unit`; transports named "
      "`NAME@%s`). Every figure is the **median over the %d rounds of this one VM boot**, "
      "perftest and SoftDNP alternating round by round on the same two rxe devices." %
      (os.path.basename(a.csv), accel, reps))
    bad = [k for k, _, v in records(a.csv) if not (math.isfinite(v) and v > 0)]
    if bad:
        w("")
        w("Left out, no figure (perftest prints `inf` when its clock fails under TCG): " +
          ", ".join("%s %s %d B" % (k[0], k[2], k[3]) for k in bad) + ".")
    w("")
    w("**Guest accelerator: %s.** %s Only the ratios between columns of this run compare; "
      "the absolute figures are not those of a NIC." % (ACC, {
          "tcg": "The VM's CPUs are emulated by qemu (TCG, no /dev/kvm here): every "
                 "instruction is translated, system calls and context switches cost tens of "
                 "microseconds, and four SoftDNP processes share the guest's vCPUs.",
          "kvm": "The VM runs on hardware virtualisation (KVM)."}.get(accel, "")))
    w("")
    w("Method. perftest (Debian's): `ib_send_lat` and `ib_write_lat -s N` (t_typical, the "
      "median, us), `ib_write_bw -s N` (BW average, converted from 2^20 to 10^6 B/s, and "
      "MsgRate), server on `rxe0k0`, client on `rxe1k0`, GID index 1 (RoCE v2). SoftDNP: "
      "two dnpd (2x1x1) over `--transport verbs` on the same devices, UC QPs (the default) "
      "and RC QPs (`verbs_qp = rc`), default idle policy; `dnp_pingpong` (PUT ping-pong, "
      "median half round trip, us) and `dnp_bw` (one-way PUT stream, window 32, MB/s = "
      "10^6 B/s). `ib_send_lat` is the goal's reference: like SoftDNP it is a SEND/RECV "
      "ping-pong, SoftDNP's PUT carries the DNP link layer (sequence, CRC, credits) on top.")
    w("")
    uc = [c for c in cols if c[1] == "perftest" and c[0] == "rxe-send_lat"]
    wb = [c for c in cols if c[1] == "perftest" and c[0] == "rxe-write_bw"]
    verbs_table(w, get, sizes, "lat", "Latency: half round trip, us, %s (lower is better)" % ACC,
                [c for c in cols if "lat" in c[3]], uc[0] if uc else None, "ib_send_lat")
    verbs_table(w, get, sizes, "bw", "Bandwidth, MB/s, %s (higher is better)" % ACC,
                [c for c in cols if "bw" in c[3]], wb[0] if wb else None, "ib_write_bw")
    verbs_table(w, get, sizes, "msgrate", "Message rate, messages/s, %s" % ACC,
                [c for c in cols if "msgrate" in c[3]], wb[0] if wb else None, "ib_write_bw")

    w("## perftest-shaped tables [%s]" % ACC)
    w("")
    for t, p, lab, tests in cols:
        w("```")
        if "lat" in tests:
            w("# %s  (%s)" % (lab, "cf. ib_send_lat" if p == "" else "perftest's own"))
            w(" #bytes     t_typical[usec]")
            for b in sizes:
                v = get(t, p, "lat", b)
                if v is not None:
                    w(" %-10d %-10.2f" % (b, v))
        if "bw" in tests:
            w("# %s  (%s)" % (lab, "cf. ib_write_bw" if p == "" else "perftest's own"))
            w(" #bytes     BW average[MB/sec]   MsgRate[Mpps]")
            for b in sizes:
                v, m = get(t, p, "bw", b), get(t, p, "msgrate", b)
                if v is not None:
                    w(" %-10d %-20.2f %s" % (b, v, "%.6f" % (m / 1e6) if m else "-"))
        w("```")
    w("")

    MB = 1048576
    s8 = get("rxe-send_lat", "perftest", "lat", 8)
    bw1 = get("rxe-write_bw", "perftest", "bw", MB)
    goals = []
    for t, lab in (("verbs-uc", "UC"), ("verbs-rc", "RC")):
        l8, b1 = get(t, "", "lat", 8), get(t, "", "bw", MB)
        r1, r2 = ratio(l8, s8), ratio(b1, bw1)
        goals.append(("%s: 8 B half round trip <= 2 x ib_send_lat" % lab, r1,
                      r1 is not None and r1 <= 2.0, "%s us / %s us" % (fmt(l8), fmt(s8))))
        goals.append(("%s: 1 MiB bandwidth >= 0.5 x ib_write_bw" % lab, r2,
                      r2 is not None and r2 >= 0.5, "%s / %s MB/s" % (fmt(b1), fmt(bw1))))
    w("## Goals (issue: RoCE, a verbs transport), ratios of this run [%s]" % ACC)
    w("")
    w("| goal | ratio | met | figures |")
    w("| --- | ---: | --- | --- |")
    for g, r, ok, fig in goals:
        w("| %s | %s | %s | %s (%s) |" % (g, "%.2f" % r if r is not None else "-",
                                          ("yes" if ok else "**no**") if r is not None
                                          else "not measured", fig, ACC))
    w("")
    pngs = verbs_plots(a.out, get, cols, sizes, ACC)
    if pngs:
        w("## Plots [%s]" % ACC)
        w("")
        for p, what in pngs:
            w("![%s](%s)" % (what, os.path.basename(p)))
            w("")
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(out) + "\n")
    print("")
    print("=" * 78)
    print("SoftDNP over verbs beside perftest (%s), guest %s, medians of %d rounds" %
          (os.path.basename(a.out), ACC, reps))
    print("-" * 78)
    for g, r, ok, fig in goals:
        print("%-50s %6s %-8s %s" % (g, "%.2f" % r if r is not None else "-",
                                     ("met" if ok else "NOT met") if r is not None else "n/a",
                                     fig))
    print("=" * 78)
    return 0


def verbs_plots(base, get, cols, sizes, acc):
    """BASE-lat.png and BASE-bw.png: every series against size, the
    accelerator in the title and in every legend entry."""
    if not shutil.which("gnuplot"):
        print("report: gnuplot not found, no plots", file=sys.stderr)
        return []
    made = []
    d = base + "-plotdata"
    os.makedirs(d, exist_ok=True)
    try:
        for test, ylabel, fname, what in (
                ("lat", "half round trip (us)", "-lat.png", "latency against size"),
                ("bw", "bandwidth (MB/s)", "-bw.png", "bandwidth against size")):
            series = []
            for i, (t, p, lab, tests) in enumerate(cols):
                pts = [(b, get(t, p, test, b)) for b in sizes]
                pts = [(b, v) for b, v in pts if v is not None]
                if not pts or test not in tests:
                    continue
                fn = os.path.join(d, "%s-%d.dat" % (test, i))
                with open(fn, "w") as f:
                    for b, v in pts:
                        f.write("%d %g\n" % (b, v))
                series.append("'%s' using 1:2 with linespoints lw 2%s lc rgb '%s' pt %s ps 1.2 "
                              "title '%s'" % (fn, "" if p == "" else " dt 2",
                                              COLOURS[i % len(COLOURS)],
                                              MARKERS[i % len(MARKERS)],
                                              lab.replace("_", "\\_")))
            if not series:
                continue
            out = base + fname
            script = """set terminal pngcairo size 1000,650 font ',10'
set output '%s'
set logscale xy
set grid
set key outside right top font ',9'
set xlabel 'message size (bytes)'
set ylabel '%s'
set title 'SoftDNP over verbs beside perftest, Soft-RoCE in a VM (%s): %s (medians, one boot)'
plot %s
""" % (out, ylabel, acc, what, ", \\\n     ".join(series))
            subprocess.run(["gnuplot"], input=script, text=True, check=True)
            made.append((out, what))
    except (subprocess.CalledProcessError, OSError) as e:
        print("report: gnuplot failed: %s" % e, file=sys.stderr)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return made


if __name__ == "__main__":
    sys.exit(main())
