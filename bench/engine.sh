#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ./dnp bench engine: the engine's ceiling, no I/O. Two engines back to back in
# one thread (bench/engine_bench.c; each burst of frames handed over with
# dnp_engine_rx_burst, engine_bench --per-frame for one dnp_engine_rx call per
# frame), 8 B, 64 B and 4 KiB PUTs with CRC, beside
# memcpy of the same blocks in the same run; REPS runs (default 5), medians.
#
#   bench/engine.sh BUILD_DIR [--quick]
# Writes $BENCH_OUT/<date>-<host>-engine.csv (transport,peer,test,bytes,rep,value,unit;
# BENCH_OUT defaults to results/bench/, untracked; ./dnp bench engine --save: bench/results/)
# and prints the table and the two goals (>= 10 M 8-byte packets/s on one core;
# 4 KiB PUTs at >= half the memcpy bandwidth).
set -u
build=${1:?usage: bench/engine.sh BUILD_DIR [--quick]}
here=$(cd "$(dirname "$0")" && pwd)
reps=${REPS:-5}
secs=1
[ "${2:-}" = --quick ] && { reps=${REPS:-3}; secs=0.5; }
outdir=${BENCH_OUT:-$(cd "$here/.." && pwd)/results/bench}
out=$outdir/$(date -u +%Y-%m-%d)-$(hostname -s 2>/dev/null || hostname)-engine.csv
prog=$build/bench/engine_bench
[ -x "$prog" ] || { echo "bench: $prog is not built" >&2; exit 1; }
mkdir -p "$outdir"
# one core: the engine_bench thread on CPU 0 (both engines, as one daemon's core would)
echo "bench engine: $reps reps of ${secs}s per size, pinned to CPU 0"
taskset -c 0 "$prog" --reps "$reps" --seconds "$secs" --csv >"$out" || exit 1
python3 - "$out" <<'PY'
import csv, statistics, sys
rows = {}
for r in csv.DictReader(open(sys.argv[1])):
    rows.setdefault((r["transport"], r["test"], int(r["bytes"])), []).append(float(r["value"]))
m = {k: statistics.median(v) for k, v in rows.items()}
print("\n%8s %16s %12s %14s %12s" % ("bytes", "packets/s", "GB/s", "memcpy GB/s", "engine/memcpy"))
for b in sorted({k[2] for k in m}):
    pps, bw, mc = m.get(("engine", "msgrate", b)), m.get(("engine", "bw", b)), m.get(("memcpy", "bw", b))
    print("%8d %16.0f %12.3f %14.3f %12.2f" % (b, pps, bw / 1000, mc / 1000, bw / mc))
p8 = m.get(("engine", "msgrate", 8))
r4 = m.get(("engine", "bw", 4096)) / m.get(("memcpy", "bw", 4096))
print("\ngoal: >= 10 M 8-byte packets/s per core: %.2f M (%.2f of the goal) -> %s" %
      (p8 / 1e6, p8 / 1e7, "met" if p8 >= 1e7 else "NOT met"))
print("goal: 4 KiB PUTs >= 1/2 memcpy bandwidth: ratio %.2f -> %s" % (r4, "met" if r4 >= 0.5 else "NOT met"))
print("medians of %d reps; raw rows: %s" % (len(rows[("engine", "msgrate", 8)]), sys.argv[1]))
PY
