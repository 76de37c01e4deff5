#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memif (DPDK between daemons on one host) beside shm: dnp_pingpong and dnp_bw
# on a 2x1x1 torus, RUNS runs each, medians. Usage: bench/run_memif.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: run_memif.sh BUILD_DIR}
runs=${RUNS:-5}
top=$(cd "$(dirname "$0")/.." && pwd)
out="$top/bench/results/$(date +%F)-$(hostname -s)-memif.md"
run=("$build/apps/dnp-run" --torus 2x1x1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for t in shm memif; do
	for i in $(seq "$runs"); do
		# a run whose daemons crash at teardown still measured; keep its figures
		"${run[@]}" --transport "$t" -- dnp_pingpong --csv --sizes 8,4096,65536,1M \
			--iters 2000 2>/dev/null | sed -n 's/^\[0,0,0\] //p' | grep -v '^bytes' \
			>> "$tmp/lat-$t.csv" || true
		"${run[@]}" --transport "$t" -- dnp_bw --csv --sizes 4096,65536,1M \
			2>/dev/null | sed -n 's/^\[0,0,0\] //p' | grep -v '^bytes' \
			>> "$tmp/bw-$t.csv" || true
	done
done

python3 - "$tmp" "$out" "$runs" <<'PY'
import csv, statistics, sys, os, platform
tmp, out, runs = sys.argv[1], sys.argv[2], sys.argv[3]
def med(path, col):
    rows = {}
    if os.path.exists(path):
        for r in csv.reader(open(path)):
            if len(r) > col:
                rows.setdefault(int(r[0]), []).append(float(r[col]))
    return {k: (statistics.median(v), len(v)) for k, v in rows.items()}
lat = {t: med(f"{tmp}/lat-{t}.csv", 3) for t in ("shm", "memif")}
bw = {t: med(f"{tmp}/bw-{t}.csv", 2) for t in ("shm", "memif")}
cpu = next((l.split(":")[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
with open(out, "w") as f:
    f.write(f"# memif beside shm, {platform.node()}\n\n")
    f.write(f"Machine: {os.cpu_count()} CPUs ({cpu}), kernel {platform.release()}. 2x1x1 torus, "
            f"nodes 0,0,0 <-> 1,0,0; {runs} runs per transport, medians of per-run medians "
            "(n = runs that produced the figure). memif: dnpd --transport dpdk --dpdk-links memif "
            "(DPDK net_memif between the two daemons, no namespaces); shm: the shared-memory "
            "transport. dnp_pingpong = PUT ping-pong half round trip; dnp_bw = PUT stream, window 32.\n\n")
    f.write("| bytes | shm latency us | memif latency us | memif / shm |\n| ---: | ---: | ---: | ---: |\n")
    for b in sorted(lat["shm"]):
        s, m = lat["shm"][b], lat["memif"].get(b)
        f.write(f"| {b} | {s[0]:.3f} (n={s[1]}) | " + (f"{m[0]:.3f} (n={m[1]}) | {m[0]/s[0]:.2f} |\n" if m else "- | - |\n"))
    f.write("\n| bytes | shm MB/s | memif MB/s | memif / shm |\n| ---: | ---: | ---: | ---: |\n")
    for b in sorted(bw["shm"]):
        s, m = bw["shm"][b], bw["memif"].get(b)
        f.write(f"| {b} | {s[0]:.1f} (n={s[1]}) | " + (f"{m[0]:.1f} (n={m[1]}) | {m[0]/s[0]:.2f} |\n" if m else "- | - |\n"))
print(open(out).read())
PY
echo "bench: wrote $out"
