#!/bin/sh
# SPDX-License-Identifier: MIT
# Rejoin figures: how long a killed daemon takes to be back in the torus.
# Runs the rejoin drills (tests/integration/rejoin.sh on a 4x1x1 ring over shm,
# udp and memif; tests/integration/dpdk-rejoin.sh on the 2x2x2 af_packet
# namespace testbed, root only) RUNS times each and writes the medians to
# bench/results/rejoin.txt:
#   up_ms   from the restart of the killed relay daemon (shm/udp/memif: its
#           start; dpdk: the kill -9, dnp-run restarts it at once) to all its
#           links UP again;
#   put_ms  from the same instant to the end of the first 8-byte PUT round
#           trip through it (0 <-> 2 or 0 <-> 3).
# Not a test: it prints figures. Run it alone on the machine (flock).
# usage: bench/rejoin.sh BUILD_DIR [RUNS]
set -u
build=$1
runs=${2:-5}
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/bench/results/rejoin.txt
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT

for i in $(seq "$runs"); do
	for tr in shm udp memif; do
		BENCH_OUT=$raw "$top/tests/integration/rejoin.sh" "$build" "$tr" >/dev/null 2>&1 ||
			echo "run $i $tr failed" >&2
	done
	BENCH_OUT=$raw "$top/tests/integration/dpdk-rejoin.sh" "$build" \
		"$top/tests/testbed/netns.sh" >/dev/null 2>&1 || echo "run $i dpdk failed or skipped" >&2
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit }
	if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
{
	echo "# Rejoin of a daemon killed with kill -9 (bench/rejoin.sh, $(date -u +%Y-%m-%d))"
	echo "# medians over $runs runs; ms; machine: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) CPUs"
	echo "# up_ms: restart -> all the relay's links UP; put_ms: restart -> first round trip through it"
	printf '%-10s %6s %8s %8s\n' transport runs up_ms put_ms
	for tr in shm udp memif dpdk; do
		n=$(awk -v t="$tr" '$1 == t' "$raw" | wc -l)
		up=$(awk -v t="$tr" '$1 == t { print $2 }' "$raw" | median)
		put=$(awk -v t="$tr" '$1 == t { print $3 }' "$raw" | median)
		printf '%-10s %6s %8s %8s\n' "$tr" "$n" "$up" "$put"
	done
} | tee "$out"
