#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Latency of two builds side by side, alternating, in one run: the loopback
# PUT (1x1x1, --pin, adaptive and busy idle policies) and the 8-byte
# ping-pong on 2x1x1 over shm (adaptive pinned and unpinned, busy) and udp
# (unpinned and pinned). For a change to the
# daemon or libdnp measured against the code before it (docs/performance.md).
#   bench/side-by-side.sh BASE_BUILD NEW_BUILD [ROUNDS] [NAME]
# Writes bench/results/NAME-DATE.csv (build,round,test,median_us: each run's
# median of dnp_pingpong) and NAME-DATE.md (median over rounds, new / base).
set -euo pipefail
base=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
rounds=${3:-5}
name=${4:-side-by-side}
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
day=$(date -u +%Y-%m-%d)
csv=$top/bench/results/$name-$day.csv
md=$top/bench/results/$name-$day.md

# median of one dnp_pingpong run (its CSV's t_median_us) of node 0
one() { # BUILD TORUS ARGS...
	local b=$1 t=$2
	shift 2
	# one torus at a time on the machine (the shared heavy-run lock)
	${DNP_BENCH_LOCK:-flock /tmp/softdnp-heavy.lock} "$b/apps/dnp-run" --torus "$t" --timeout 60 "$@" 2>/dev/null |
		grep '^\[0,0,0\] [0-9]' | tail -1 | cut -d' ' -f2 | cut -d, -f4
}
echo "build,round,test,median_us" >"$csv"
for r in $(seq "$rounds"); do
	for which in base new; do
		b=$base
		[ $which = new ] && b=$new
		row() { echo "$which,$r,$1,${2:-}" >>"$csv"; }
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
print("# Side by side: 8-byte latency of two builds, alternating, one run\n")
print(f"base: `{sys.argv[2]}`; new: `{sys.argv[3]}`; {sys.argv[4]} rounds; machine: "
      f"{platform.node()}, load average at the end {open('/proc/loadavg').read().split()[0]}.")
print("Each cell: the median over rounds of each run's median (us); failed runs are left out.\n")
print("| test | base us | new us | new / base | runs ok base / new |")
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
