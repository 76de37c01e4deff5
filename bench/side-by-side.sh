#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Latency of two builds side by side, alternating, in one run: the loopback
# PUT (1x1x1, --pin, adaptive and busy idle policies) and the 8-byte
# ping-pong on 2x1x1 over shm (adaptive pinned and unpinned, busy) and udp
# (unpinned and pinned). For a change to the
# daemon or libdnp measured against the code before it (docs/performance.md).
# SBS_SET=private measures large messages instead: the 64 KiB and 1 MiB
# ping-pong and the 1 MiB stream (dnp_bw, MB/s) with buffers outside the shared
# heap (DNP_APP_NOHEAP=1, the daemon's process_vm path) over shm and udp, and
# the 1 MiB ping-pong and stream from the heap beside them.
#   bench/side-by-side.sh BASE_BUILD NEW_BUILD [ROUNDS] [NAME]
# Writes bench/results/NAME-DATE.csv (build,round,test,median_us: each run's
# median of dnp_pingpong, or dnp_bw's MB/s for the rows named *-bw-*) and
# NAME-DATE.md (median over rounds, new / base).
set -euo pipefail
base=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
rounds=${3:-5}
name=${4:-side-by-side}
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
day=$(date -u +%Y-%m-%d)
csv=$top/bench/results/$name-$day.csv
md=$top/bench/results/$name-$day.md

set=${SBS_SET:-latency}
# median of one dnp_pingpong run (its CSV's t_median_us) of node 0; FIELD=3: dnp_bw's MB/s
one() { # BUILD TORUS ARGS...
	local b=$1 t=$2
	shift 2
	# one torus at a time on the machine (the shared heavy-run lock)
	${DNP_BENCH_LOCK:-flock /tmp/softdnp-heavy.lock} "$b/apps/dnp-run" --torus "$t" --timeout 60 "$@" 2>/dev/null |
		grep '^\[0,0,0\] [0-9]' | tail -1 | cut -d' ' -f2 | cut -d, -f"${FIELD:-4}"
}
echo "build,round,test,median_us" >"$csv"
for r in $(seq "$rounds"); do
	for which in base new; do
		b=$base
		[ $which = new ] && b=$new
		row() { echo "$which,$r,$1,${2:-}" >>"$csv"; }
		if [ "$set" = private ]; then
			nh() { DNP_APP_NOHEAP=1 one "$@"; }
			row priv-shm-64K "$(nh "$b" 2x1x1 --transport shm -- dnp_pingpong --csv --sizes 64K --iters 2000)"
			row priv-shm-1M "$(nh "$b" 2x1x1 --transport shm -- dnp_pingpong --csv --sizes 1M --iters 300)"
			row priv-udp-1M "$(nh "$b" 2x1x1 --transport udp -- dnp_pingpong --csv --sizes 1M --iters 300)"
			row priv-shm-bw-1M "$(FIELD=3 nh "$b" 2x1x1 --transport shm -- dnp_bw --csv --sizes 1M --iters 1000)"
			row heap-shm-1M "$(one "$b" 2x1x1 --transport shm -- dnp_pingpong --csv --sizes 1M --iters 300)"
			row heap-shm-bw-1M "$(FIELD=3 one "$b" 2x1x1 --transport shm -- dnp_bw --csv --sizes 1M --iters 1000)"
			row heap-shm-8 "$(one "$b" 2x1x1 --transport shm -- dnp_pingpong --csv --sizes 8 --iters 20000)"
			continue
		fi
		row loopback "$(one "$b" 1x1x1 --transport shm --pin -- dnp_pingpong --loopback --sizes 8 --iters 50000 --csv)"
		row loopback-busy "$(one "$b" 1x1x1 --transport shm --pin --idle busy -- dnp_pingpong --loopback --sizes 8 --iters 50000 --csv)"
		row shm "$(one "$b" 2x1x1 --transport shm --pin -- dnp_pingpong --sizes 8 --iters 20000 --csv)"
		row shm-unpinned "$(one "$b" 2x1x1 --transport shm -- dnp_pingpong --sizes 8 --iters 20000 --csv)"
		row shm-busy "$(one "$b" 2x1x1 --transport shm --pin --idle busy -- dnp_pingpong --sizes 8 --iters 20000 --csv)"
		row udp "$(one "$b" 2x1x1 --transport udp -- dnp_pingpong --sizes 8 --iters 20000 --csv)"
		row udp-pin "$(one "$b" 2x1x1 --transport udp --pin -- dnp_pingpong --sizes 8 --iters 20000 --csv)"
	done
	echo "side-by-side: round $r of $rounds done" >&2
done
python3 - "$csv" "$base" "$new" "$rounds" >"$md" <<'PY'
import csv, statistics, sys, platform
rows = list(csv.DictReader(open(sys.argv[1])))
print("# Side by side: two builds, alternating, one run\n")
print(f"base: `{sys.argv[2]}`; new: `{sys.argv[3]}`; {sys.argv[4]} rounds; machine: "
      f"{platform.node()}, load average at the end {open('/proc/loadavg').read().split()[0]}.")
print("Each cell: the median over rounds of each run's median (us; rows named *-bw-*: MB/s of "
      "a dnp_bw stream); failed runs are left out.\n")
print("| test | base | new | new / base | runs ok base / new |")
print("|---|---:|---:|---:|---|")
tests = []
for r in rows:
    if r["test"] not in tests:
        tests.append(r["test"])
for t in tests:
    v = {w: [float(r["median_us"]) for r in rows if r["test"] == t and r["build"] == w and r["median_us"]]
         for w in ("base", "new")}
    n = {w: sum(1 for r in rows if r["test"] == t and r["build"] == w) for w in ("base", "new")}
    mb = statistics.median(v["base"]) if v["base"] else None
    mn = statistics.median(v["new"]) if v["new"] else None
    ratio = f"{mn / mb:.2f}" if mb and mn else "-"
    f = lambda x: f"{x:.3f}" if x else "-"
    print(f"| {t} | {f(mb)} | {f(mn)} | {ratio} | {len(v['base'])}/{n['base']} / {len(v['new'])}/{n['new']} |")
PY
cat "$md"
