#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ./dnp bench engine: the engine's ceiling, no I/O. Two engines back to back in
# one thread (bench/engine_bench.c; each burst of frames handed over with
# dnp_engine_rx_burst, engine_bench --per-frame for one dnp_engine_rx call per
# frame), 8 B, 64 B and 4 KiB PUTs with CRC, beside
# memcpy of the same blocks in the same run; REPS runs (default 5), medians.
# Then the instructions per 8-byte PUT of both engines under valgrind
# --tool=callgrind (engine_bench --puts, two counts differenced, three times: about 5 s).
#
#   bench/engine.sh BUILD_DIR [--quick]
# Writes $BENCH_OUT/<date>-<host>-engine.csv (transport,peer,test,bytes,rep,value,unit;
# BENCH_OUT defaults to results/bench/, untracked; ./dnp bench engine --save: bench/results/),
# -engine-machine.txt and -engine.md (the table and the goal table of issue 29:
# >= 10 M 8-byte PUTs/s on one core, <= 1,200 instructions per 8-byte PUT,
# 4 KiB PUTs at >= half the memcpy bandwidth), and prints the table and the goals.
set -u
build=${1:?usage: bench/engine.sh BUILD_DIR [--quick]}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
reps=${REPS:-5}
secs=1
[ "${2:-}" = --quick ] && { reps=${REPS:-3}; secs=0.5; }
outdir=${BENCH_OUT:-$(cd "$here/.." && pwd)/results/bench}
base=$outdir/$(date -u +%Y-%m-%d)-$(hostname -s 2>/dev/null || hostname)-engine
out=$base.csv
prog=$build/bench/engine_bench
[ -x "$prog" ] || { echo "bench: $prog is not built" >&2; exit 1; }
mkdir -p "$outdir"
machine_info
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "cpu: $cpu, $(nproc) CPUs"
	echo "build: $btype, $build"
	echo "softdnp: $(git -C "$here/.." describe --always --dirty 2>/dev/null || echo unknown)"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "mode: $([ "${2:-}" = --quick ] && echo quick || echo full), $reps reps of ${secs}s per size"
} >"$base-machine.txt"
# one core: the engine_bench thread on CPU 0 (both engines, as one daemon's core would)
echo "bench engine: $reps reps of ${secs}s per size, pinned to CPU 0"
taskset -c 0 "$prog" --reps "$reps" --seconds "$secs" --csv >"$out" || exit 1
if command -v valgrind >/dev/null; then
	echo "bench engine: instructions per 8-byte PUT under callgrind"
	callgrind_rows "$prog" 3 >>"$out"
	echo "valgrind: $(valgrind --version 2>/dev/null)" >>"$base-machine.txt"
else
	echo "engine: no callgrind count: valgrind is not installed" >>"$base-machine.txt"
fi
python3 "$here/report.py" --engine --csv "$out" --machine "$base-machine.txt" --out "$base"
