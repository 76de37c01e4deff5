#!/bin/sh
# SPDX-License-Identifier: MIT
# Pinned hand-off (docs/performance.md, "Pinned hand-off"): on a 2x1x1 torus
# under dnp-run --pin (node x's daemon on CPU x, its program on the other CPU)
# each daemon publishes its neighbour's CPU in its bell (kick_cpus, bit 1 - x)
# and its own in its kick line (x + 1), and
# - by default (polling hand-off) yields right after forwarding its program's
#   commands: `pin_handoffs` in `dnpctl stats`, about one per PUT sent;
# - under DNP_WAIT_BLOCK=1 the programs block in their waits (voluntary
#   context switches), the daemon that wakes one kicks the daemon on its CPU
#   (`kicks`), and that daemon yields (`kicked`), about one per PUT.
# Unpinned, kick_cpus stays 0 and no hand-off of either kind is made.
# usage: hand-pin.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (not built, fewer than two CPUs, no GNU time).
set -u
build=$1
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

# Inside dnp-run, on each node: the PUTs under GNU time (voluntary switches of
# the program), then one line of the bell, the kick line and the daemon's counts.
if [ "${2:-}" = inner ]; then
	x=$DNP_NODE_ID
	/usr/bin/time -f 'vcsw %w' -o "$DNP_RUN_DIR/time-$x" "$build/apps/dnp_pingpong" --sizes 8 \
		--iters 20000 --csv >/dev/null || exit 1
	bell=$DNP_RUN_DIR/node-$x.bell
	kcpus=$(od -An -tu4 -j28 -N4 "$bell" | tr -d ' ')
	kcpu=$(od -An -tu4 -j68 -N4 "$bell" | tr -d ' ')
	st=$("$build/dnp-core/dnpd/dnpctl" --socket "$DNP_SOCKET" stats | grep '^daemon ')
	k=$(echo "$st" | sed -n 's/.* kicks \([0-9]*\).*/\1/p')
	kd=$(echo "$st" | sed -n 's/.* kicked \([0-9]*\).*/\1/p')
	ph=$(echo "$st" | sed -n 's/.* pin_handoffs \([0-9]*\).*/\1/p')
	v=$(sed -n 's/^vcsw \([0-9]*\)$/\1/p' "$DNP_RUN_DIR/time-$x")
	[ -n "$kcpus" ] && [ -n "$kcpu" ] && [ -n "$k" ] && [ -n "$kd" ] && [ -n "$ph" ] &&
		[ -n "$v" ] || exit 1
	echo "hand node $x kick_cpus $kcpus kick_cpu $kcpu kicks $k kicked $kd pin_handoffs $ph vcsw $v"
	exit 0
fi

. "$(dirname "$0")/lib.sh"
need_built "$build/dnp-core/dnpd/dnpd" "$build/dnp-core/dnpd/dnpctl" "$build/apps/dnp-run" \
	"$build/apps/dnp_pingpong"
[ "$(nproc)" -ge 2 ] || skip "--pin needs two CPUs"
[ -x /usr/bin/time ] || skip "no GNU time"
fail=0

# run LABEL DNP-RUN-OPTIONS...: the "hand node ..." lines of both nodes, node 0 first
run() {
	label=$1
	shift
	two_node_run "$build" hand "$label" --transport shm "$@" -- "$self" "$build" inner
}

# The polling hand-off (default): about one pin_handoff per PUT forwarded (20,100 each way).
if l=$(run "--pin" --pin); then
	for x in 0 1; do
		want=$((1 << (1 - x)))
		[ "$(two_node_field "$l" $x kick_cpus)" = $want ] ||
			bad "--pin: node $x published kick_cpus $(two_node_field "$l" $x kick_cpus), not $want"
		[ "$(two_node_field "$l" $x kick_cpu)" = $((x + 1)) ] ||
			bad "--pin: node $x's kick line says CPU $(two_node_field "$l" $x kick_cpu), not $((x + 1))"
		[ "$(two_node_field "$l" $x pin_handoffs)" -ge 10000 ] ||
			bad "--pin: node $x's daemon handed its CPU over $(two_node_field "$l" $x pin_handoffs) times in 20000 PUTs"
	done
else
	fail=1
fi

# Blocking: each program blocks (at least one voluntary switch per 4 PUTs
# received), each daemon kicks its neighbour and is kicked about once per PUT.
if l=$(export DNP_WAIT_BLOCK=1 && run "--pin, DNP_WAIT_BLOCK=1" --pin); then
	for x in 0 1; do
		[ "$(two_node_field "$l" $x vcsw)" -ge 5000 ] ||
			bad "DNP_WAIT_BLOCK=1: node $x's program blocked $(two_node_field "$l" $x vcsw) times in 20000 waits"
		[ "$(two_node_field "$l" $x kicks)" -ge 5000 ] ||
			bad "DNP_WAIT_BLOCK=1: node $x's daemon kicked its neighbour $(two_node_field "$l" $x kicks) times"
		[ "$(two_node_field "$l" $x kicked)" -ge 5000 ] ||
			bad "DNP_WAIT_BLOCK=1: node $x's daemon yielded to $(two_node_field "$l" $x kicked) kicks"
	done
else
	fail=1
fi

# Unpinned: nothing published, no hand-off.
if l=$(run "unpinned"); then
	for x in 0 1; do
		[ "$(two_node_field "$l" $x kick_cpus)" = 0 ] && [ "$(two_node_field "$l" $x kick_cpu)" = 0 ] ||
			bad "unpinned: node $x published kick_cpus $(two_node_field "$l" $x kick_cpus), kick_cpu $(two_node_field "$l" $x kick_cpu)"
		[ "$(two_node_field "$l" $x pin_handoffs)" = 0 ] && [ "$(two_node_field "$l" $x kicks)" = 0 ] ||
			bad "unpinned: node $x's daemon made pinned hand-offs"
	done
else
	fail=1
fi
[ $fail = 0 ] && echo "PASS"
exit $fail
