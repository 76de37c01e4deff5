#!/bin/sh
# SPDX-License-Identifier: MIT
# The idle rule "hold the CPU a moment after a yield" (docs/performance.md,
# "Holding the CPU after a yield") is on exactly where it helps: a 2x1x1
# ping-pong over shm with dnp-run --pin (each daemon pinned to one CPU) must
# count held passes (`held_passes` in `dnpctl stats`) on its daemons; the same
# ping-pong unpinned, and over udp pinned, must count none. (libdnp's own hold
# in dnp_wait_event has no counter; tests/test_yield.c covers the window.)
# usage: hold.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (daemon or apps not built).
set -u
build=$1
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

# Inside dnp-run, on every node: the ping-pong, then this node's daemon counters.
if [ "${2:-}" = inner ]; then
	"$build/apps/dnp_pingpong" --sizes 8 --iters 5000 --csv >/dev/null || exit 1
	held=$("$build/dnp-core/dnpd/dnpctl" --socket "$DNP_SOCKET" stats |
		sed -n 's/.* held_passes \([0-9]*\).*/\1/p')
	[ -n "$held" ] || exit 1
	echo "node $DNP_NODE_ID held_passes $held"
	exit 0
fi

. "$(dirname "$0")/lib.sh"
need_built "$build/dnp-core/dnpd/dnpd" "$build/dnp-core/dnpd/dnpctl" "$build/apps/dnp-run" \
	"$build/apps/dnp_pingpong"
if [ "$(nproc)" -lt 2 ]; then
	echo "SKIP: --pin needs two CPUs"
	exit 77
fi

# run LABEL DNP-RUN-OPTIONS...: prints the sum of both daemons' held passes
run() {
	label=$1
	shift
	out=$("$build/apps/dnp-run" --torus 2x1x1 --timeout 120 --no-lofamo "$@" -- \
		"$self" "$build" inner 2>&1) || {
		echo "FAIL: $label: the run failed"
		echo "$out" | tail -n 20
		exit 1
	}
	n=$(echo "$out" | grep -c 'held_passes [0-9]')
	if [ "$n" -ne 2 ]; then
		echo "FAIL: $label: $n of 2 nodes reported their counters"
		echo "$out" | tail -n 20
		exit 1
	fi
	echo "$out" | grep 'held_passes' | sed "s/^/$label: /" >&2
	echo "$out" | sed -n 's/.*held_passes \([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }'
}

pinned=$(run "shm --pin" --transport shm --pin) || exit 1
unpinned=$(run "shm unpinned" --transport shm) || exit 1
udp=$(run "udp --pin" --transport udp --pin) || exit 1
echo "held passes: shm --pin $pinned, shm unpinned $unpinned, udp --pin $udp"
[ "$pinned" -gt 0 ] || { echo "FAIL: pinned shm daemons never held the CPU"; exit 1; }
[ "$unpinned" -eq 0 ] || { echo "FAIL: unpinned daemons held the CPU"; exit 1; }
[ "$udp" -eq 0 ] || { echo "FAIL: udp daemons held the CPU"; exit 1; }
echo "PASS"
