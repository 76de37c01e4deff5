#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# hand-busy.sh OLD_BUILD NEW_BUILD ROUNDS OUT: the 8-byte shm and udp
# ping-pong with dnp-run --pin, quiet and beside two busy processes (one
# `sh -c 'while :; do :; done'` pinned to each CPU, started and killed by
# PID), old build against new, alternating (the order flips every round).
# Every run under GNU time: one CSV row per run in OUT
#   round,build,transport,load,iters,median_us,mean_us,p99_us,csw_half
# csw_half = (voluntary + involuntary switches of dnp-run's whole tree) /
# (2 x iters), start-up included. HB_DIFF=1: each run is made twice, with
# iters / 5 and iters round trips (the busy loops running through both), and
# csw_half is the difference over the extra messages, as bench/run.sh part
# hand does (start-up and teardown cancel out); the latencies are the long run's.
# docs/performance.md, "Hand-off beside busy processes".
set -u
old=$1 new=$2 rounds=$3 out=$4
tmp=$(mktemp -d)
busy=()
stop_busy() {
	local p
	for p in "${busy[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${busy[@]}"; do wait "$p" 2>/dev/null; done
	busy=()
}
trap 'stop_busy; rm -rf "$tmp"' EXIT
start_busy() {
	taskset -c 0 sh -c 'while :; do :; done' &
	busy+=($!)
	taskset -c 1 sh -c 'while :; do :; done' &
	busy+=($!)
}
pp() { # BUILD TRANSPORT ITERS: one ping-pong under GNU time (output in $tmp/o, $tmp/rus)
	/usr/bin/time -f '%w %c' -o "$tmp/rus" \
		timeout 120 "$1/apps/dnp-run" --torus 2x1x1 --transport "$2" --pin --timeout 100 -- \
		dnp_pingpong --sizes 8 --iters "$3" --warmup 50 --csv >"$tmp/o" 2>&1
}
one() { # ROUND BUILD_LABEL BUILD TRANSPORT LOAD
	local r=$1 lab=$2 b=$3 t=$4 load=$5 n row rus lo rlo
	n=5000
	[ "$load" = busy ] && [ "$lab" = old ] && n=300
	[ "$load" = busy ] && [ "$lab" = new ] && n=2000
	[ "$load" = busy ] && start_busy
	lo=0 rlo=0
	if [ "${HB_DIFF:-0}" = 1 ]; then
		lo=$((n / 5))
		pp "$b" "$t" $lo
		rlo=$(awk 'NF == 2 && $1 ~ /^[0-9]+$/ { print $1 + $2 }' "$tmp/rus" | tail -n 1)
	fi
	pp "$b" "$t" $n
	[ "$load" = busy ] && stop_busy
	row=$(sed -n 's/^\[0,0,0\] 8,\([0-9]*\),[^,]*,\([^,]*\),\([^,]*\),\([^,]*\),.*/\2,\4,\3/p' "$tmp/o")
	rus=$(awk 'NF == 2 && $1 ~ /^[0-9]+$/ { print $1 + $2 }' "$tmp/rus" | tail -n 1)
	[ -n "$rus" ] && [ -n "$rlo" ] && rus=$((rus - rlo))
	if [ -z "$row" ] || [ -z "$rus" ]; then
		echo "$r,$lab,$t,$load,$n,,,,"
		echo "run failed: $lab $t $load: $(tail -n 2 "$tmp/o" | tr '\n' ' ')" >&2
		return
	fi
	echo "$r,$lab,$t,$load,$n,$row,$(awk -v s="$rus" -v n=$((n - lo)) 'BEGIN { printf "%.2f", s / (2 * n) }')"
}
echo "round,build,transport,load,iters,median_us,mean_us,p99_us,csw_half" >"$out"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
	for lab in $order; do
		b=$old
		[ "$lab" = new ] && b=$new
		for t in shm udp; do
			for load in quiet busy; do
				one "$r" "$lab" "$b" "$t" "$load" >>"$out"
			done
		done
	done
	echo "round $r done $(date -u +%T)" >&2
done
