#!/bin/sh
# SPDX-License-Identifier: MIT
# udp in the two-host placement (docs/performance.md, "udp in the two-host
# placement"): on a 2x1x1 udp torus with node x's daemon and program both on
# CPU x, a message is two datagrams (the completion report of the last PUT,
# then the new data) and the receiving daemon often reads the first alone.
# Each daemon must
# - hold such completion-only events for its blocked program and push them
#   with the data's event, one wake-up for both (`co_holds`, `co_joined` in
#   `dnpctl stats`): at least one join per 20 PUTs received (how often the
#   first datagram is read alone depends on timing: 14-16k joins in 20000
#   PUTs on a release build, 4.4k on a sanitized one, 0 with the hold off);
# - send its program's reply before reading the links in the pass after the
#   hand-off (`rx_after`): at least one per 4 PUTs;
# - so the program blocks about once per PUT received, not twice: fewer than
#   1.5 voluntary context switches per wait.
# Pinned (dnp-run --pin: each program on the other node's daemon's CPU) the
# daemons do neither: no program waits on their CPU.
# usage: hand-2host.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (not built, fewer than two CPUs, no GNU time or taskset).
set -u
build=$1
# The hold is what this test checks: with packing (docs/protocol.md, "The udp
# link's datagrams") a completion rarely comes alone, so the links do not pack.
export DNP_UDP_PACK=off
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
iters=20000

# Inside dnp-run, on each node: the PUTs under GNU time (voluntary switches
# of the program), on CPU $3 if given, then the daemon's counts.
if [ "${2:-}" = inner ]; then
	x=$DNP_NODE_ID
	pin=
	[ "${3:-}" = here ] && pin="taskset -c $x"
	# shellcheck disable=SC2086 # $pin is a command prefix or nothing
	/usr/bin/time -f 'vcsw %w' -o "$DNP_RUN_DIR/time-$x" $pin "$build/apps/dnp_pingpong" \
		--sizes 8 --iters $iters --warmup 100 --csv >/dev/null || exit 1
	st=$("$build/dnp-core/dnpd/dnpctl" --socket "$DNP_SOCKET" stats | grep '^daemon ')
	ch=$(echo "$st" | sed -n 's/.* co_holds \([0-9]*\).*/\1/p')
	cj=$(echo "$st" | sed -n 's/.* co_joined \([0-9]*\).*/\1/p')
	ra=$(echo "$st" | sed -n 's/.* rx_after \([0-9]*\).*/\1/p')
	v=$(sed -n 's/^vcsw \([0-9]*\)$/\1/p' "$DNP_RUN_DIR/time-$x")
	[ -n "$ch" ] && [ -n "$cj" ] && [ -n "$ra" ] && [ -n "$v" ] || exit 1
	echo "co node $x co_holds $ch co_joined $cj rx_after $ra vcsw $v"
	exit 0
fi

. "$(dirname "$0")/lib.sh"
need_built "$build/dnp-core/dnpd/dnpd" "$build/dnp-core/dnpd/dnpctl" "$build/apps/dnp-run" \
	"$build/apps/dnp_pingpong"
[ "$(nproc)" -ge 2 ] || skip "two hosts need two CPUs"
[ -x /usr/bin/time ] || skip "no GNU time"
command -v taskset >/dev/null || skip "no taskset"
fail=0
w=$(mktemp -d /tmp/hand-2host.XXXXXX)
trap 'rm -rf "$w"' EXIT
# node x's daemon on CPU x (as bench/lib.sh's two_host_wrappers)
two_host_dnpd "$build" "$w/dnpd"

# run LABEL HERE DNP-RUN-OPTIONS...: the "co node ..." lines of both nodes, node 0 first
run() {
	label=$1 here=$2
	shift 2
	two_node_run "$build" co "$label" "$@" -- "$self" "$build" inner "$here"
}

min=$((iters / 4))
minj=$((iters / 20))
if l=$(run "udp, two hosts" here --transport udp --dnpd "$w/dnpd"); then
	for x in 0 1; do
		[ "$(two_node_field "$l" $x co_joined)" -ge $minj ] ||
			bad "udp two hosts: node $x's daemon joined $(two_node_field "$l" $x co_joined) held completions to the data in $iters PUTs"
		[ "$(two_node_field "$l" $x rx_after)" -ge $min ] ||
			bad "udp two hosts: node $x's daemon sent $(two_node_field "$l" $x rx_after) replies before reading the links"
		v=$(two_node_field "$l" $x vcsw)
		[ "$v" -lt $((iters * 3 / 2)) ] ||
			bad "udp two hosts: node $x's program blocked $v times in $iters waits (one wake-up per message expected)"
	done
else
	fail=1
fi

if l=$(run "udp, --pin" "" --transport udp --pin); then
	for x in 0 1; do
		[ "$(two_node_field "$l" $x co_holds)" = 0 ] && [ "$(two_node_field "$l" $x rx_after)" = 0 ] ||
			bad "udp --pin: node $x's daemon held completions or deferred its reads (no program on its CPU)"
	done
else
	fail=1
fi
[ $fail = 0 ] && echo "PASS"
exit $fail
