#!/bin/sh
# SPDX-License-Identifier: MIT
# Links that come back, on the DPDK namespace torus (af_packet on veth pairs):
# 2x2x2 testbed, daemons started by dnp-run --daemon-death restart, and node 0
# runs the drill (this script again, with --inner):
#   1. ping-pong 0 <-> 1 (node 0's X+ port, veth d0-xp);
#   2. veth down: node 0 reports X+ BROKEN, and a ping-pong 0 <-> 1 passes
#      through the detour (the X- cable); veth up again: X+ is UP again in a
#      new link epoch, and a new ping-pong 0 <-> 1 passes;
#   3. kill -9 the dnpd of node 1, the relay of 0 <-> 3 (1,1,0); dnp-run starts
#      it again with the same arguments; its links come back, a ping-pong
#      0 <-> 3 passes and the new relay forwarded it.
# Times from the kill to the relay's links all UP and to the first round trip
# through it are printed ("rejoin-times dpdk UP_MS PUT_MS"; with BENCH_OUT=FILE
# also appended there, for bench/rejoin.sh).
# usage: dpdk-rejoin.sh BUILD_DIR NETNS_SH
# Exit: 0 pass, 1 fail, 77 skip (not root, DPDK or iproute2 missing).
set -u
. "$(dirname "$0")/lib.sh"

if [ "${1:-}" = --inner ]; then
	# Inside dnp-run: node 0 does the drill, the others have nothing to run.
	[ "${DNP_NODE_ID:-}" = 0 ] || exit 0
	build=$SELFHEAL_BUILD
	P=$SELFHEAL_PREFIX
	ctl=$build/dnp-core/dnpd/dnpctl
	pp=$build/apps/dnp_pingpong
	dir=$(dirname "$DNP_SOCKET")
	now_ms() { date +%s%3N; }
	fail() { echo "FAIL $*"; exit 1; }
	pingpong() { # PEER_ID PEER_COORD ITERS SIZES
		DNP_SOCKET=$dir/node-$1.sock "$pp" --peer "$2" --iters "$3" --sizes "$4" \
			>"$dir/pp-peer.out" 2>&1 &
		b=$!
		"$pp" --peer "$2" --iters "$3" --sizes "$4" >"$dir/pp-0.out" 2>&1
		ra=$?
		wait "$b"
		[ $ra -eq 0 ] && [ $? -eq 0 ]
	}
	x_state() { node_stats 0 | grep -q "^link X+ state $1"; }
	all_up() { # ID
		s=$(node_stats "$1") || return 1
		echo "$s" | grep -q '^link' && ! echo "$s" | grep -Eq 'state (INIT|BROKEN)'
	}

	pingpong 1 1,0,0 50 8,4096 || fail "ping-pong 0 <-> 1"
	echo "+ ip -n $P-0 link set d0-xp down"
	ip -n "$P-0" link set dev d0-xp down
	wait_for 20 x_state BROKEN || fail "X+ not BROKEN with its veth down"
	# The detour (docs/routing.md): node 0 knows its X+ cable is broken, and
	# traffic to node 1 takes the other cable, X- (the X ring has two nodes).
	node_stats 0 | grep -Eq '^routes broken_cables [1-9]' || fail "node 0 does not know its broken cable"
	pingpong 1 1,0,0 50 8,4096 || fail "ping-pong 0 <-> 1 through the detour (X-)"
	echo "PASS detour while X+ is down"
	echo "+ ip -n $P-0 link set d0-xp up"
	ip -n "$P-0" link set dev d0-xp up
	wait_for 30 x_state UP || fail "X+ not UP again with its veth up"
	pingpong 1 1,0,0 50 8,4096,65536 || fail "ping-pong 0 <-> 1 after the veth came back"
	node_stats 0 | grep -E '^link X\+ (state|epoch)'
	node_stats 0 | grep -Eq '^link X\+ epoch ([2-9]|[1-9][0-9]+) .* breaks [1-9]' ||
		fail "X+ shows no break and new epoch"
	echo "PASS veth-down-up"

	pingpong 3 1,1,0 20 8 || fail "ping-pong 0 <-> 3"
	old=$(cat "$dir/node-1.pid")
	echo "+ kill -9 $old (dnpd of node 1, relay of 0 <-> 3)"
	t0=$(now_ms)
	kill -9 "$old"
	newpid() { [ "$(cat "$dir/node-1.pid" 2>/dev/null)" != "$old" ]; }
	wait_for 10 newpid || fail "dnp-run did not restart node 1"
	wait_for 60 all_up 1 || fail "restarted node 1 never had all links UP"
	t_up=$(now_ms)
	wait_for 30 all_up 0 || fail "node 0's links never came back"
	wait_for 30 all_up 3 || fail "node 3's links never came back"
	pingpong 3 1,1,0 1 8 || fail "first ping-pong through the restarted relay"
	t_put=$(now_ms)
	pingpong 3 1,1,0 50 8,4096,65536 || fail "ping-pong 0 <-> 3 after the rejoin"
	fw=$(node_stats 1 | awk '$1 == "engine" { for (i = 2; i < NF; i++) if ($i == "pkts_forwarded") print $(i + 1) }')
	[ "${fw:-0}" -gt 0 ] || fail "the restarted relay forwarded nothing"
	echo "rejoin-times dpdk $((t_up - t0)) $((t_put - t0))"
	echo "PASS rejoin"
	exit 0
fi

build=$1
netns_sh=$2
run=$build/apps/dnp-run
need_dpdk_testbed
need_built "$run" "$build/apps/dnp_pingpong" "$build/dnp-core/dnpd/dnpctl"

P=shrj$$
out=$(mktemp)
remove_at_exit "$out"
testbed_up "$netns_sh" "$P" /tmp

SELFHEAL_BUILD=$(cd "$build" && pwd)
SELFHEAL_PREFIX=$P
DNP_APP_TIMEOUT=20
export SELFHEAL_BUILD SELFHEAL_PREFIX DNP_APP_TIMEOUT
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
echo "+ dnp-run --torus 2x2x2 --transport dpdk --testbed $P --daemon-death restart -- $self --inner"
"$run" --torus 2x2x2 --transport dpdk --testbed "$P" --daemon-death restart --timeout 200 \
	-- "$self" --inner >"$out" 2>&1
rc=$?
cat "$out"
[ $rc -eq 0 ] || { echo "FAIL: dnp-run exited $rc"; exit 1; }
grep -q '^\[0,0,0\] PASS veth-down-up' "$out" || { echo "FAIL: veth down/up"; exit 1; }
grep -q '^\[0,0,0\] PASS rejoin' "$out" || { echo "FAIL: rejoin"; exit 1; }
if [ -n "${BENCH_OUT:-}" ]; then
	sed -n 's/^\[0,0,0\] rejoin-times //p' "$out" >>"$BENCH_OUT"
fi
echo "PASS: dpdk-rejoin"
exit 0
