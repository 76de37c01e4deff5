#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# MPI figures, side by side in one run: NetPIPE (NPopenmpi, 2 ranks) 8-byte
# latency and 1 MiB bandwidth over SoftDNP (Open MPI mtl ofi + provider dnp,
# shm and udp, 2x1x1 torus) and over Open MPI's own shared memory (btl vader)
# and TCP (btl tcp on loopback); the raw dnp_pingpong on the same transports
# gives the overhead MPI adds. REPS runs each (default 5), medians.
# usage: bench/mpi-bench.sh BUILD_DIR   -> bench/results/mpi-<date>.md and .csv
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
reps=${REPS:-5}
date=$(date -u +%Y-%m-%d)
out=$top/bench/results/mpi-$date.md
csv=$top/bench/results/mpi-$date.csv
tmp=$(mktemp -d /tmp/mpi-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
lock() { ${DNP_BENCH_LOCK:-flock /tmp/softdnp-heavy.lock} "$@"; }
root=
[ "$(id -u)" -eq 0 ] && root=--allow-run-as-root
export FI_PROVIDER_PATH=$build/fabric

# np LABEL SIZE CMD...: one NetPIPE point; appends "LABEL,SIZE,usec,MBps" to $csv
np_point() {
	local label=$1 size=$2
	shift 2
	rm -f "$tmp/np.out"
	(cd "$tmp" && lock "$@" NPopenmpi -p 0 -l "$size" -u "$size" -o "$tmp/np.out" \
		>"$tmp/log" 2>&1) || { cat "$tmp/log"; return 1; }
	# np.out: bytes, Mbps, seconds (one way, half the round trip)
	awk -v l="$label" -v s="$size" '$1 == s { printf "%s,%s,%.3f,%.1f\n", l, s, $3 * 1e6, $2 / 8 }' \
		"$tmp/np.out" >>"$csv"
}
raw_point() {
	local tr=$1
	lock "$build/apps/dnp-run" --torus 2x1x1 --transport "$tr" -- dnp_pingpong --csv \
		--sizes 8 --iters 2000 >"$tmp/raw" 2>&1
	sed -n 's/^\[0,0,0\] //p' "$tmp/raw" | awk -F, -v l="raw-$tr" '$1 == 8 { printf "%s,8,%s,\n", l, $4 }' >>"$csv"
}

# REPORT_ONLY=1: rewrite the .md from an existing .csv
[ "${REPORT_ONLY:-0}" = 1 ] || echo "test,bytes,usec,MBps" >"$csv"
for ((i = 0; i < reps && ${REPORT_ONLY:-0} != 1; i++)); do
	for s in 8 1048576; do
		for tr in shm udp; do
			np_point "mpi-dnp-$tr" $s env DNP_BUILD="$build" "$top/dnp" mpirun --torus 2x1x1 \
				--transport $tr --
		done
		np_point mpi-vader $s mpirun $root --bind-to none -np 2 --mca pml ob1 --mca btl self,vader
		np_point mpi-tcp $s mpirun $root --bind-to none -np 2 --mca pml ob1 --mca btl self,tcp \
			--mca btl_tcp_if_include lo
	done
	raw_point shm
	raw_point udp
done

# best: the minimum latency / maximum bandwidth (what the path can do when not preempted)
best() {
	awk -F, -v t="$1" -v b="$2" -v c="$3" '$1 == t && $2 == b && $c != "" { print $c }' "$csv" |
		sort -g | awk -v c="$3" '{ v[NR] = $1 } END { if (NR) print c == 3 ? v[1] : v[NR] }'
}
med() {
	awk -F, -v t="$1" -v b="$2" -v c="$3" '$1 == t && $2 == b && $c != "" { print $c }' "$csv" |
		sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
{
	echo "# MPI over SoftDNP vs Open MPI's own transports ($date, $(hostname))"
	echo
	echo "Produced by \`bench/mpi-bench.sh\`: NetPIPE 3.7 (\`NPopenmpi -p 0\`, one size per run),"
	echo "2 ranks, median of $reps runs; \`dnp_pingpong\` (PUT ping-pong, median of 2000) on the"
	echo "same 2x1x1 torus. Latency = NetPIPE's one-way time (half round trip). CPU:"
	echo "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) cores; load average"
	echo "at the end of the run: $(cut -d' ' -f1-3 /proc/loadavg) (other jobs shared the machine)."
	echo
	echo "| path | 8 B latency, median [us] | best [us] | 1 MiB bandwidth, median [MB/s] | best [MB/s] |"
	echo "| --- | ---: | ---: | ---: | ---: |"
	for l in mpi-dnp-shm mpi-dnp-udp mpi-vader mpi-tcp; do
		echo "| $l | $(med $l 8 3) | $(best $l 8 3) | $(med $l 1048576 4) | $(best $l 1048576 4) |"
	done
	for tr in shm udp; do
		echo "| raw dnp_pingpong $tr (PUT) | $(med raw-$tr 8 3) | $(best raw-$tr 8 3) | | |"
	done
	echo
	for tr in shm udp; do
		m=$(med mpi-dnp-$tr 8 3) r=$(med raw-$tr 8 3)
		echo "- MPI overhead over raw dnp_pingpong, $tr, 8 B (medians): $(awk -v a="$m" -v b="$r" 'BEGIN { printf "%+.2f us (%.2fx)", a - b, a / b }')"
	done
	echo
	echo "The goals (MPI within 1.5 us of the raw 8-byte half round trip; NetPIPE over SoftDNP"
	echo "udp no slower than over libfabric's udp;ofi_rxd) can only be judged on a quiet machine:"
	echo "in this run the same path varied by 10-1000x between repetitions (see the .csv)."
} >"$out"
cat "$out"
