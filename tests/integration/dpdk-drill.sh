#!/bin/sh
# SPDX-License-Identifier: MIT
# Fault drill on the DPDK namespace torus (docs/dpdk.md, "Integration tests"):
# 2x2x2 testbed, dnp_check link-drill streams PUTs from node 0 to node 1
# (their path is node 0's X+ port, veth d0-xp <-> d1-xm), the veth is taken
# down under the traffic, and then
#   - every PUT completed exactly once, as TX_DONE or as an ERROR event, and
#     once node 0 reports X+ BROKEN the 500 PUTs issued after it all pass
#     through the detour, the X- cable (docs/routing.md; checked by dnp_check);
#   - `dnpctl stats` of node 0 shows link X+ BROKEN, and node 1's link X-;
#   - dnp-run exits 0 (no program or daemon failed or hung) and the testbed
#     is gone afterwards.
# usage: dpdk-drill.sh BUILD_DIR NETNS_SH
# Exit: 0 pass, 1 fail, 77 skip (not root, DPDK or iproute2 missing).
set -u
build=$1
netns_sh=$2
run=$build/apps/dnp-run
ctl=$build/dnp-core/dnpd/dnpctl
. "$(dirname "$0")/lib.sh"
need_dpdk_testbed
need_built "$run" "$ctl" "$build/apps/dnp_check"

P=drill$$
FLAG=/dev/shm/dnp-drill-$$
out=$(mktemp)
on_exit() { [ -n "${runpid:-}" ] && kill "$runpid" 2>/dev/null && wait "$runpid" 2>/dev/null; }
remove_at_exit "$out" "$FLAG" "$FLAG.cut" "$FLAG.broken" "$FLAG.checked" "$FLAG.done"
testbed_up "$netns_sh" "$P" /tmp

DNP_DRILL_FLAG=$FLAG
DNP_APP_TIMEOUT=20
export DNP_DRILL_FLAG DNP_APP_TIMEOUT
echo "+ dnp-run --torus 2x2x2 --transport dpdk --testbed $P -- dnp_check link-drill"
"$run" --torus 2x2x2 --transport dpdk --testbed "$P" --timeout 150 \
	-- dnp_check link-drill >"$out" 2>&1 &
runpid=$!

wait_file() { # FILE SECONDS
	i=0
	while [ ! -e "$1" ]; do
		kill -0 "$runpid" 2>/dev/null || return 1
		i=$((i + 1))
		[ $i -le $(($2 * 20)) ] || return 1
		sleep 0.05
	done
}

fails=0
if ! wait_file "$FLAG" 90; then
	echo "FAIL: node 0 never reported traffic running"
	fails=1
else
	sock=$(cat "$FLAG")
	sock1=$(dirname "$sock")/node-1.sock
	echo "+ ip -n $P-0 link set dev d0-xp down   (node 0 X+ <-> node 1 X-)"
	ip -n "$P-0" link set dev d0-xp down
	x_broken() { "$ctl" --socket "$sock" stats 2>/dev/null | grep -q '^link X+ state BROKEN'; }
	wait_for 20 x_broken || :
	: >"$FLAG.cut"
	if ! wait_file "$FLAG.broken" 60; then
		echo "FAIL: node 0 never finished reaping its PUTs"
		fails=1
	fi
	s0=$("$ctl" --socket "$sock" stats 2>&1)
	s1=$("$ctl" --socket "$sock1" stats 2>&1)
	echo "$s0" | grep '^link X+ state'
	echo "$s1" | grep '^link X- state'
	echo "$s0" | grep -q '^link X+ state BROKEN' ||
		{ echo "FAIL: node 0 does not report link X+ BROKEN"; echo "$s0"; fails=1; }
	echo "$s1" | grep -q '^link X- state BROKEN' ||
		{ echo "FAIL: node 1 does not report link X- BROKEN"; echo "$s1"; fails=1; }
	echo "$s0" | grep -q '^link Y+ state UP' ||
		{ echo "FAIL: node 0's other links should stay UP"; fails=1; }
	: >"$FLAG.checked"
fi
wait "$runpid"
rc=$?
runpid=
cat "$out"
if [ $rc -ne 0 ]; then
	echo "FAIL: dnp-run exited $rc"
	fails=1
fi
grep -q '^\[0,0,0\] PASS link-drill' "$out" || { echo "FAIL: node 0 did not PASS"; fails=1; }
grep -q '^\[1,0,0\] PASS link-drill' "$out" || { echo "FAIL: node 1 did not PASS"; fails=1; }
[ $fails -eq 0 ] || exit 1
echo "PASS: dpdk-drill"
exit 0
