#!/bin/sh
# SPDX-License-Identifier: MIT
# The two-host hold learns when it does not pay (docs/performance.md, "udp in
# the two-host placement", "When holding does not pay"). On a 2x1x1 udp torus
# with node x's daemon and program both on CPU x:
# 1. node 0 PUTs 8 bytes 5000 times, each after the last one's completion
#    (dnp_bw --window 1), and node 1 sends nothing back. No data follows a
#    completion, so holding it for the data would only make it late: node 0's
#    daemon must hold fewer than 50 (`co_holds`; the fixed hold held all 5000).
# 2. Then the two ping-pong 20000 times: data follows every completion again,
#    and the holds must come back: at least one join per 20 PUTs received on
#    each node (`co_joined`), as hand-2host.sh wants from a fresh daemon.
# usage: hand-oneway.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (not built, fewer than two CPUs, no taskset).
set -u
build=$1
# The hold is what this test checks: with packing (docs/protocol.md, "The udp
# link's datagrams") a completion rarely comes alone, so the links do not pack.
export DNP_UDP_PACK=off
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
puts=5000
iters=20000

# the daemon's counter NAME from `dnpctl stats`
counter() {
	"$build/dnp-core/dnpd/dnpctl" --socket "$DNP_SOCKET" stats | grep '^daemon ' |
		sed -n "s/.* $1 \([0-9]*\).*/\1/p"
}
# Inside dnp-run, on each node (on CPU x): the stream, then the ping-pong,
# with the daemon's counters after each.
if [ "${2:-}" = inner ]; then
	x=$DNP_NODE_ID
	taskset -c "$x" "$build/apps/dnp_bw" --sizes 8 --window 1 --iters $puts --warmup 0 \
		--csv >/dev/null || exit 1
	h1=$(counter co_holds)
	j1=$(counter co_joined)
	taskset -c "$x" "$build/apps/dnp_pingpong" --sizes 8 --iters $iters --warmup 100 \
		--csv >/dev/null || exit 1
	h2=$(counter co_holds)
	j2=$(counter co_joined)
	m2=$(counter co_missed)
	[ -n "$h1" ] && [ -n "$j1" ] && [ -n "$h2" ] && [ -n "$j2" ] && [ -n "$m2" ] || exit 1
	echo "co node $x stream_holds $h1 stream_joined $j1 pp_holds $((h2 - h1)) pp_joined $((j2 - j1)) missed $m2"
	exit 0
fi

. "$(dirname "$0")/lib.sh"
need_built "$build/dnp-core/dnpd/dnpd" "$build/dnp-core/dnpd/dnpctl" "$build/apps/dnp-run" \
	"$build/apps/dnp_pingpong" "$build/apps/dnp_bw"
[ "$(nproc)" -ge 2 ] || skip "two hosts need two CPUs"
command -v taskset >/dev/null || skip "no taskset"
fail=0
w=$(mktemp -d /tmp/hand-oneway.XXXXXX)
trap 'rm -rf "$w"' EXIT
two_host_dnpd "$build" "$w/dnpd"
lines=$(two_node_run "$build" co "udp, two hosts" --transport udp --dnpd "$w/dnpd" \
	-- "$self" "$build" inner) || exit 1
h=$(two_node_field "$lines" 0 stream_holds)
[ "$h" -lt 50 ] || bad "node 0's daemon held $h of $puts lone completions that no data followed"
for x in 0 1; do
	j=$(two_node_field "$lines" $x pp_joined)
	[ "$j" -ge $((iters / 20)) ] ||
		bad "node $x's daemon joined $j held completions to the data in $iters PUTs after the stream"
done
[ $fail = 0 ] && echo "PASS"
exit $fail
