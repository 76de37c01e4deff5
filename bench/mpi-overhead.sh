#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# MPI's overhead over the raw dnp_pingpong, side by side: in each round, on
# each transport (shm, udp; 2x1x1 torus), the raw dnp_pingpong 8 B (median of
# ITERS), NetPIPE 8 B over the provider of BUILD and, with BEFORE_FI=DIR,
# over another build's libdnp-fi.so, in alternating order (the old provider
# first in odd rounds). Medians over ROUNDS rounds (default 5); the overhead is
# NetPIPE's half round trip minus the raw median of the same round. With mpicc,
# each round also runs fabric/mpi_pingpong (MPI_Send/MPI_Recv 8 B timed per round
# trip like dnp_pingpong, labels mpp-new, mpp-old): its median minus the raw median
# compares one statistic with itself (NetPIPE gives the best mean of a few
# batches, which takes in the tail). PLACE=pin (default): every run under
# `dnp-run --pin`, the ranks placed by dnp-mpirun.sh's DNP_MPI_PIN=1 (SoftDNP's
# default placement, as the ping-pong rows of bench/run.sh); PLACE=unpinned: none
# pinned (before 2026-12-06 the only placement).
# usage: bench/mpi-overhead.sh BUILD_DIR [OUT_CSV]   (default /tmp/mpi-overhead.csv)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
csv=${2:-/tmp/mpi-overhead.csv}
rounds=${ROUNDS:-5}
iters=${ITERS:-2000}
place=${PLACE:-pin}
tmp=$(mktemp -d /tmp/mpi-overhead.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pin='' mpin=0
[ "$place" = pin ] && pin=--pin mpin=1
mpp=''
if command -v mpicc >/dev/null && mpicc -O2 -o "$tmp/mpi_pingpong" "$top/fabric/mpi_pingpong.c" 2>/dev/null; then
	mpp=$tmp/mpi_pingpong
fi
# The shared lock is taken once per round (a round takes well under a minute), so that
# the paths compared in one round run back to back; DNP_BENCH_LOCK=FILE names another,
# DNP_BENCH_LOCK=env takes none (the caller holds it, or wants none: bench/run.sh part mpi).
lockfile=${DNP_BENCH_LOCK:-/tmp/softdnp-heavy.lock}
lock() { "$@"; }

# np LABEL TR FI_DIR ROUND: NetPIPE 8 B over provider FI_DIR; appends "round,LABEL,TR,usec"
np() {
	local label=$1 tr=$2 dir=$3 round=$4
	rm -f "$tmp/np.out"
	(cd "$tmp" && lock env DNP_MPI_NP= DNP_MPI_PIN=$mpin DNP_FI_DIR="$dir" "$build/apps/dnp-run" \
		$pin --timeout 60 --torus 2x1x1 --transport "$tr" -- "$top/fabric/dnp-mpirun.sh" \
		NPopenmpi -p 0 -l 8 -u 8 -o "$tmp/np.out" >"$tmp/log" 2>&1) ||
		{ cat "$tmp/log"; return 1; }
	awk -v r="$round" -v l="$label" -v t="$tr" '$1 == 8 { printf "%s,%s,%s,%.3f\n", r, l, t, $3 * 1e6 }' \
		"$tmp/np.out" >>"$csv"
	[ -n "$mpp" ] || return 0
	(cd "$tmp" && lock env DNP_MPI_NP= DNP_MPI_PIN=$mpin DNP_FI_DIR="$dir" "$build/apps/dnp-run" \
		$pin --timeout 60 --torus 2x1x1 --transport "$tr" -- "$top/fabric/dnp-mpirun.sh" \
		"$mpp" 8 "$iters" >"$tmp/log" 2>&1) || { cat "$tmp/log"; return 1; }
	sed -n 's/^\[0,0,0\] //p' "$tmp/log" | awk -F, -v r="$round" -v l="mpp-$label" -v t="$tr" \
		'$1 == 8 { printf "%s,%s,%s,%s\n", r, l, t, $3 }' >>"$csv"
}
# raw TR ROUND: dnp_pingpong 8 B, its median; and 72 B (8 B behind the provider's 64-byte
# header: what the header costs the daemons and the link), label raw72
raw() {
	local tr=$1 round=$2
	lock "$build/apps/dnp-run" $pin --timeout 60 --torus 2x1x1 --transport "$tr" -- dnp_pingpong \
		--csv --sizes 8,72 --iters "$iters" >"$tmp/raw" 2>&1 || { cat "$tmp/raw"; return 1; }
	sed -n 's/^\[0,0,0\] //p' "$tmp/raw" | awk -F, -v r="$round" -v t="$tr" \
		'$1 == 8 { printf "%s,raw,%s,%s\n", r, t, $4 } $1 == 72 { printf "%s,raw72,%s,%s\n", r, t, $4 }' >>"$csv"
}

[ "${REPORT_ONLY:-0}" = 1 ] || echo "round,label,transport,usec" >"$csv"
for ((i = 0; i < rounds && ${REPORT_ONLY:-0} != 1; i++)); do
	if [ "$lockfile" != env ]; then
		exec 9>>"$lockfile"
		flock 9
	fi
	for tr in shm udp; do
		raw "$tr" "$i"
		if [ -n "${BEFORE_FI:-}" ] && ((i % 2 == 0)); then
			np old "$tr" "$BEFORE_FI" "$i"
			np new "$tr" "$build/fabric" "$i"
		elif [ -n "${BEFORE_FI:-}" ]; then
			np new "$tr" "$build/fabric" "$i"
			np old "$tr" "$BEFORE_FI" "$i"
		else
			np new "$tr" "$build/fabric" "$i"
		fi
	done
	if [ "$lockfile" != env ]; then
		flock -u 9
		exec 9>&-
	fi
done

# median of the values of label L on transport T (column 4), or of the per-round overheads
med() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
vals() { awk -F, -v l="$1" -v t="$2" '$2 == l && $3 == t { print $4 }' "$csv"; }
over() {
	awk -F, -v l="$1" -v t="$2" '$3 == t && $2 == "raw" { r[$1] = $4 } $3 == t && $2 == l { m[$1] = $4 }
		END { for (k in m) if (k in r) print m[k] - r[k] }' "$csv"
}
echo "8-byte half round trip, placement $place, medians of $rounds rounds (us); overhead = MPI - raw, per round:"
echo
echo "| transport | raw dnp_pingpong 8 B | raw 72 B | NetPIPE old | NetPIPE new | overhead old | overhead new | new / old (NetPIPE) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for tr in shm udp; do
	r=$(vals raw $tr | med) r72=$(vals raw72 $tr | med) o=$(vals old $tr | med) n=$(vals new $tr | med)
	oo=$(over old $tr | med) on=$(over new $tr | med)
	ratio=$(awk -v a="$n" -v b="$o" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.3f", a / b }')
	echo "| $tr | $r | $r72 | ${o:-n/a} | $n | ${oo:+$(printf '%+.2f' "$oo")} | $(printf '%+.2f' "$on") | $ratio |"
done
[ -n "$(vals mpp-new shm)$(vals mpp-new udp)" ] || exit 0
echo
echo "The same with fabric/mpi_pingpong's median (MPI_Send/MPI_Recv, $iters round trips timed one by one, as the raw):"
echo
echo "| transport | raw dnp_pingpong 8 B | MPI ping-pong old | MPI ping-pong new | overhead old | overhead new | new / old |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for tr in shm udp; do
	r=$(vals raw $tr | med) o=$(vals mpp-old $tr | med) n=$(vals mpp-new $tr | med)
	oo=$(over mpp-old $tr | med) on=$(over mpp-new $tr | med)
	ratio=$(awk -v a="$n" -v b="$o" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.3f", a / b }')
	echo "| $tr | $r | ${o:-n/a} | $n | ${oo:+$(printf '%+.2f' "$oo")} | $(printf '%+.2f' "$on") | $ratio |"
done
