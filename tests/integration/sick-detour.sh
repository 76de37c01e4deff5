#!/bin/sh
# SPDX-License-Identifier: MIT
# Sick-link detour (docs/routing.md, "Sick links"): a 4x1x1 ring of real dnpd
# daemons over udp.
#   1. Node 0 corrupts 5 % of the frames it sends on X+ (dnpctl impair
#      dir=xp,corrupt=5%): node 1's fault manager judges its X- link sick, and
#      every daemon learns the sick cable (sick_cables 1) while the link stays
#      UP.
#   2. dnp_alltoall on the four nodes: 0 <-> 1 goes the long way round
#      (through 3 and 2), every byte arrives, and node 3 forwarded it.
#   3. The corruption stops: after the DFM's healthy verdict and the 2 s hold
#      every daemon forgets the cable, and the all-to-all passes again in
#      dimension order (no detour).
# usage: sick-detour.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (daemon or apps not built).
set -u
build=$1
dnpd=$build/dnp-core/dnpd/dnpd
ctl=$build/dnp-core/dnpd/dnpctl
a2a=$build/apps/dnp_alltoall
IDS="0 1 2 3"

. "$(dirname "$0")/lib.sh"
need_built "$dnpd" "$ctl" "$a2a"

run_dir /dev/shm/sick-detour-$$
base=$(port_base)

fail() {
	echo "FAIL: $*"
	for id in $IDS; do node_stats "$id"; done >"$dir/stats"
	for f in "$dir"/dnpd-*.log "$dir"/a2a-*.out "$dir"/stats; do
		[ -e "$f" ] && { echo "--- $f"; tail -n 12 "$f"; }
	done
	exit 1
}
all_know() { # N: every daemon knows N sick cables
	for id in $IDS; do
		[ "$(node_field "$id" routes sick_cables)" = "$1" ] || return 1
	done
}

for id in $IDS; do
	"$dnpd" --torus 4x1x1 --coord "$id,0,0" --run-dir "$dir" --transport udp \
		--udp-base-port "$base" >"$dir/dnpd-$id.log" 2>&1 &
	pids="$pids $!"
done
wait_links_up 60 $IDS
all_know 0 || fail "a sick cable is known before any"

echo "+ node 0 corrupts 5% of its X+ frames"
"$ctl" --socket "$dir/node-0.sock" impair 'dir=xp,corrupt=5%,seed=3' || fail "dnpctl impair"
wait_for 20 all_know 1 || fail "the sick cable did not reach every daemon"
node_stats 1 | grep -q '^link X- state UP' || fail "node 1's X- is not UP while sick"
f3=$(node_field 3 engine pkts_forwarded)
alltoall_on sick "$IDS" --detours
d=$(cat "$dir"/a2a-sick-*.out | awk '/came by a detour/ { s += $3 } END { print s + 0 }')
g3=$(node_field 3 engine pkts_forwarded)
echo "sick: $d messages took a longer path; node 3 forwarded $((g3 - f3)) packets"
[ "$d" -gt 0 ] || fail "no message took a detour round the sick cable"
# 0 -> 1 (100 KiB and more) goes 0 -> 3 -> 2 -> 1, 1 -> 0 the other way round
[ $((g3 - f3)) -gt 25 ] || fail "no detour through node 3"

echo "+ the corruption stops"
"$ctl" --socket "$dir/node-0.sock" impair off || fail "dnpctl impair off"
wait_for 30 all_know 0 || fail "the healed cable was not forgotten everywhere"
[ "$(node_field 1 routes sick_avoided)" -ge 1 ] || fail "node 1 never avoided its sick link"
alltoall_on after "$IDS"
echo "PASS: udp-sick-detour"
exit 0
