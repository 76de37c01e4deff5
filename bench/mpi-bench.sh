#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# MPI figures, side by side in one run: NetPIPE (NPopenmpi, 2 ranks) 8-byte
# latency and 1 MiB bandwidth over SoftDNP (Open MPI mtl ofi + provider dnp,
# shm and udp, 2x1x1 torus) and over Open MPI's own shared memory (btl vader)
# and TCP (btl tcp on loopback); the raw dnp_pingpong on the same transports
# gives the overhead MPI adds. Also NetPIPE 8 B..4 KiB over SoftDNP udp beside
# Open MPI's mtl ofi over libfabric's own "udp;ofi_rxd". REPS runs each
# (default 5), medians. BEFORE_FI=DIR (a directory holding another build's
# libdnp-fi.so, its libdnp in DIR/../api) adds that provider's NetPIPE rows, in
# the same run, for before/after comparisons.
# usage: bench/mpi-bench.sh BUILD_DIR   -> bench/results/mpi-<date>.md and .csv
# MPI_SET=curves: only the NetPIPE 8 B..4 KiB curves (SoftDNP udp, udp;ofi_rxd), rows
# only, no .md (bench/run.sh part mpi); MPI_CSV=FILE: the rows there instead.
# PLACE=pin (default): the runs over SoftDNP (NetPIPE and the raw dnp_pingpong) under
# `dnp-run --pin`, the ranks placed by dnp-mpirun.sh's DNP_MPI_PIN=1 (SoftDNP's default
# placement); PLACE=unpinned: none pinned (the only placement before 2026-12-06). The
# Open MPI and libfabric peers run as before (--bind-to none).
# DNP_BENCH_LOCK: the command prefix of each run (default flock /tmp/softdnp-heavy.lock;
# env: none).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
reps=${REPS:-5}
date=$(date -u +%Y-%m-%d)
csv=${MPI_CSV:-$top/bench/results/mpi-$date.csv}
out=${csv%.csv}.md
set=${MPI_SET:-all}
pin='' mpin=0
[ "${PLACE:-pin}" = pin ] && pin=--pin mpin=1
# the load before anything of ours runs: above 0.5, other work shares the machine
load0=$(cut -d' ' -f1 /proc/loadavg)
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
# raw-TR: dnp_pingpong's median; raw-mean-TR: its mean (NetPIPE reports a mean)
raw_point() {
	local tr=$1
	lock "$build/apps/dnp-run" $pin --torus 2x1x1 --transport "$tr" -- dnp_pingpong --csv \
		--sizes 8 --iters 2000 >"$tmp/raw" 2>&1
	sed -n 's/^\[0,0,0\] //p' "$tmp/raw" | awk -F, -v l="raw-$tr" \
		'$1 == 8 { printf "%s,8,%s,\n", l, $4; if ($6 != "") printf "raw-mean-%s,8,%s,\n", substr(l, 5), $6 }' >>"$csv"
}
# np_curve LABEL CMD...: NetPIPE 8 B..4 KiB in one run; one csv row per size
np_curve() {
	local label=$1
	shift
	rm -f "$tmp/np.out"
	(cd "$tmp" && lock "$@" NPopenmpi -p 0 -l 8 -u 4096 -o "$tmp/np.out" >"$tmp/log" 2>&1) ||
		{ cat "$tmp/log"; return 1; }
	awk -v l="$label" '{ printf "%s,%s,%.3f,%.1f\n", l, $1, $3 * 1e6, $2 / 8 }' "$tmp/np.out" >>"$csv"
}
# dnp_np TR [FI_DIR]: `./dnp mpirun --torus 2x1x1` without the build step
dnp_np() {
	local tr=$1 dir=${2:-$build/fabric}
	echo env DNP_MPI_NP= DNP_MPI_PIN=$mpin DNP_FI_DIR="$dir" "$build/apps/dnp-run" $pin --timeout 0 --torus 2x1x1 \
		--transport "$tr" -- "$top/fabric/dnp-mpirun.sh"
}

# curves: NetPIPE 8 B..4 KiB over SoftDNP udp and over Open MPI's mtl ofi on udp;ofi_rxd
# (one failing leaves its rows out, not the other's; the status says it failed)
curves() {
	local rc=0
	# shellcheck disable=SC2046
	np_curve np4k-dnp-udp $(dnp_np udp "$build/fabric") || rc=1
	if [ -n "${BEFORE_FI:-}" ]; then
		# shellcheck disable=SC2046
		np_curve np4k-dnp-udp-before $(dnp_np udp "$BEFORE_FI") || rc=1
	fi
	np_curve np4k-rxd mpirun $root --bind-to none -np 2 --mca pml cm --mca mtl ofi \
		--mca mtl_ofi_provider_include "udp;ofi_rxd" -x FI_PROVIDER="udp;ofi_rxd" || rc=1
	return $rc
}

# REPORT_ONLY=1: rewrite the .md from an existing .csv
[ "${REPORT_ONLY:-0}" = 1 ] || echo "test,bytes,usec,MBps" >"$csv"
for ((i = 0; i < reps && ${REPORT_ONLY:-0} != 1; i++)); do
	if [ "$set" = curves ]; then
		curves
		continue
	fi
	for s in 8 1048576; do
		for tr in shm udp; do
			# shellcheck disable=SC2046
			np_point "mpi-dnp-$tr" $s $(dnp_np $tr "$build/fabric")
			if [ -n "${BEFORE_FI:-}" ]; then
				# shellcheck disable=SC2046
				np_point "mpi-dnp-$tr-before" $s $(dnp_np $tr "$BEFORE_FI")
			fi
		done
		np_point mpi-vader $s mpirun $root --bind-to none -np 2 --mca pml ob1 --mca btl self,vader
		np_point mpi-tcp $s mpirun $root --bind-to none -np 2 --mca pml ob1 --mca btl self,tcp \
			--mca btl_tcp_if_include lo
	done
	raw_point shm
	raw_point udp
	curves
done

[ "$set" = curves ] && exit 0

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
	echo "same 2x1x1 torus, placement ${PLACE:-pin} (SoftDNP's runs). Latency = NetPIPE's one-way"
	echo "time (half round trip). CPU:"
	echo "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) cores; load average"
	echo "at the start $load0, at the end of the run $(cut -d' ' -f1-3 /proc/loadavg)$(
		[ "${REPORT_ONLY:-0}" != 1 ] && awk -v l="$load0" 'BEGIN { exit !(l > 0.5) }' &&
			echo " (other work shared the machine: the load was above 0.5 before the run)")."
	echo
	echo "| path | 8 B latency, median [us] | best [us] | 1 MiB bandwidth, median [MB/s] | best [MB/s] |"
	echo "| --- | ---: | ---: | ---: | ---: |"
	labels="mpi-dnp-shm mpi-dnp-udp"
	[ -n "${BEFORE_FI:-}" ] && labels="$labels mpi-dnp-shm-before mpi-dnp-udp-before"
	for l in $labels mpi-vader mpi-tcp; do
		echo "| $l | $(med $l 8 3) | $(best $l 8 3) | $(med $l 1048576 4) | $(best $l 1048576 4) |"
	done
	for tr in shm udp; do
		echo "| raw dnp_pingpong $tr (PUT), median of 2000 | $(med raw-$tr 8 3) | $(best raw-$tr 8 3) | | |"
		echo "| raw dnp_pingpong $tr (PUT), mean of 2000 | $(med raw-mean-$tr 8 3) | $(best raw-mean-$tr 8 3) | | |"
	done
	echo
	echo "MPI overhead over the raw dnp_pingpong, 8 B (medians of the runs; goal: at most +1.5 us):"
	echo
	for tr in shm udp; do
		for l in mpi-dnp-$tr ${BEFORE_FI:+mpi-dnp-$tr-before}; do
			m=$(med $l 8 3) r=$(med raw-$tr 8 3) a=$(med raw-mean-$tr 8 3)
			echo "- $l: $(awk -v a="$m" -v b="$r" 'BEGIN { printf "%+.2f us (%.2fx)", a - b, a / b }') over the raw median, $(awk -v a="$m" -v b="$a" 'BEGIN { if (b == "") print "n/a"; else printf "%+.2f us (%.2fx)", a - b, a / b }') over the raw mean"
		done
	done
	echo
	echo "NetPIPE over SoftDNP udp vs Open MPI mtl ofi over libfabric's udp;ofi_rxd, one-way time"
	echo "(medians of the runs; goal: SoftDNP no slower, ratio <= 1):"
	echo
	echo "| bytes | SoftDNP udp [us] | udp;ofi_rxd [us] | ratio |"
	echo "| ---: | ---: | ---: | ---: |"
	for b in $(awk -F, '$1 == "np4k-rxd" { print $2 }' "$csv" | sort -nu); do
		m=$(med np4k-dnp-udp "$b" 3) x=$(med np4k-rxd "$b" 3)
		echo "| $b | $m | $x | $(awk -v a="$m" -v b="$x" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2f", a / b }') |"
	done
	echo
	echo "All paths shared a loaded 2-core VM with other jobs: read ratios within this file;"
	echo "the .csv has every run (the same path can vary several-fold between runs)."
} >"$out"
cat "$out"
