#!/bin/sh
# SPDX-License-Identifier: MIT
# Hand-off beside busy processes (docs/performance.md, "Hand-off beside busy
# processes"): a short 2x1x1 shm ping-pong under dnp-run --pin while two busy
# loops (`sh -c 'while :; do :; done'`, one pinned to each CPU, started and
# killed by PID) run beside it. Each daemon's yields give the loop on its CPU
# a time slice, so it must switch to blocking (`busy_blocks` in `dnpctl
# stats`, at least one window) and then sleep on its doorbell between
# messages instead of yielding (`sleeps`, at least one per 4 PUTs received).
# Without the rule the daemons yield and never sleep while the ping-pong runs
# (and 1000 round trips take 4-24 s instead of well under one).
# usage: hand-busy.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (not built, fewer than two CPUs).
set -u
build=$1
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
iters=1000

# Inside dnp-run, on each node: the PUTs, then the daemon's counts.
if [ "${2:-}" = inner ]; then
	x=$DNP_NODE_ID
	"$build/apps/dnp_pingpong" --sizes 8 --iters $iters --warmup 20 --csv >"$DNP_RUN_DIR/pp-$x" ||
		exit 1
	st=$("$build/dnp-core/dnpd/dnpctl" --socket "$DNP_SOCKET" stats | grep '^daemon ')
	bb=$(echo "$st" | sed -n 's/.* busy_blocks \([0-9]*\).*/\1/p')
	sl=$(echo "$st" | sed -n 's/.* sleeps \([0-9]*\).*/\1/p')
	lat=$(sed -n 's/^8,[0-9]*,[^,]*,\([^,]*\),.*/\1/p' "$DNP_RUN_DIR/pp-$x")
	[ -n "$bb" ] && [ -n "$sl" ] || exit 1
	echo "busy node $x busy_blocks $bb sleeps $sl median_us ${lat:-none}"
	exit 0
fi

. "$(dirname "$0")/lib.sh"
need_built "$build/dnp-core/dnpd/dnpd" "$build/dnp-core/dnpd/dnpctl" "$build/apps/dnp-run" \
	"$build/apps/dnp_pingpong"
[ "$(nproc)" -ge 2 ] || skip "--pin needs two CPUs"
command -v taskset >/dev/null || skip "no taskset"

p0= p1=
stop_loops() {
	[ -n "$p0" ] && kill "$p0" 2>/dev/null
	[ -n "$p1" ] && kill "$p1" 2>/dev/null
	[ -n "$p0" ] && wait "$p0" 2>/dev/null
	[ -n "$p1" ] && wait "$p1" 2>/dev/null
	p0= p1=
}
trap stop_loops EXIT INT TERM
taskset -c 0 sh -c 'while :; do :; done' &
p0=$!
taskset -c 1 sh -c 'while :; do :; done' &
p1=$!
out=$(timeout 90 "$build/apps/dnp-run" --torus 2x1x1 --timeout 60 --no-lofamo --transport shm \
	--pin -- "$self" "$build" inner 2>&1)
rc=$?
stop_loops
if [ $rc != 0 ]; then
	echo "FAIL: the run beside two busy loops failed or timed out (rc $rc)" >&2
	echo "$out" | tail -n 20 >&2
	exit 1
fi
lines=$(echo "$out" | grep -o 'busy node [01] .*' | sort)
echo "$lines" >&2
[ "$(echo "$lines" | grep -c .)" = 2 ] || {
	echo "FAIL: the nodes reported nothing" >&2
	echo "$out" | tail -n 20 >&2
	exit 1
}
fail=0
for x in 0 1; do
	bb=$(echo "$lines" | grep "^busy node $x " | sed -n 's/.* busy_blocks \([0-9]*\).*/\1/p')
	sl=$(echo "$lines" | grep "^busy node $x " | sed -n 's/.* sleeps \([0-9]*\).*/\1/p')
	[ "${bb:-0}" -ge 1 ] ||
		bad "node $x's daemon never switched to blocking beside two busy loops (busy_blocks ${bb:-none})"
	[ "${sl:-0}" -ge $((iters / 4)) ] ||
		bad "node $x's daemon slept ${sl:-none} times in $iters round trips beside two busy loops"
done
[ $fail = 0 ] && echo "PASS"
exit $fail
