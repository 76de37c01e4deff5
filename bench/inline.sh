#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Inline PUTs against ordinary PUTs, side by side in one run: the 8-byte
# dnp_pingpong (half round trip, its median) with and without --inline,
# alternating run by run, over shm and udp on 2x1x1 (docs/api.md, "Inline
# PUTs"). Heap buffers, so that the ordinary PUT is as cheap as it gets.
#   bench/inline.sh BUILD [ROUNDS] [ITERS] [SIZE]
# Prints CSV (transport,round,mode,median_us) on stdout and, on stderr, per
# transport the median over rounds of each mode and inline / plain.
set -euo pipefail
build=$(cd "$1" && pwd)
rounds=${2:-7}
iters=${3:-20000}
size=${4:-8}
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT

one() { # TRANSPORT [--inline]
	local tr=$1
	shift
	${DNP_BENCH_LOCK:-flock /tmp/softdnp-heavy.lock} "$build/apps/dnp-run" --torus 2x1x1 \
		--transport "$tr" --timeout 120 -- dnp_pingpong --csv --sizes "$size" \
		--iters "$iters" "$@" 2>/dev/null | grep '^\[0,0,0\] [0-9]' | tail -1 |
		cut -d' ' -f2 | cut -d, -f4
}

echo "transport,round,mode,median_us" | tee "$csv"
for r in $(seq "$rounds"); do
	for tr in shm udp; do
		# the order alternates too, so that neither mode always runs first
		if [ $((r % 2)) = 1 ]; then order="plain inline"; else order="inline plain"; fi
		for m in $order; do
			if [ "$m" = inline ]; then v=$(one "$tr" --inline); else v=$(one "$tr"); fi
			echo "$tr,$r,$m,${v:-}" | tee -a "$csv"
		done
	done
done

python3 - "$csv" >&2 <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for tr in ("shm", "udp"):
    med = {}
    for m in ("plain", "inline"):
        v = [float(r["median_us"]) for r in rows
             if r["transport"] == tr and r["mode"] == m and r["median_us"]]
        med[m] = statistics.median(v) if v else float("nan")
        print(f"{tr} {m}: median of {len(v)} runs {med[m]:.3f} us "
              f"(runs: {', '.join(f'{x:.3f}' for x in v)})")
    print(f"{tr} inline / plain: {med['inline'] / med['plain']:.3f}")
PY
