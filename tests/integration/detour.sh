#!/bin/sh
# SPDX-License-Identifier: MIT
# Detour drill (docs/routing.md): a 4x2x1 torus of real dnpd daemons.
#   1. The cable between (0,0,0) X+ and (1,0,0) X- is cut: both ends drop
#      every frame they send on it (dnpctl impair dir=..,loss=100%) until
#      node 0 reports X+ BROKEN.
#   2. The fault floods: every daemon knows one broken cable.
#   3. dnp_alltoall on all eight nodes: every pair, 0 <-> 1 included (now the
#      long way round the X ring, 3 hops), delivers every byte; node 3 and 2
#      forwarded the detoured traffic.
#   4. The cable is repaired (impair off): the link comes back UP, every
#      daemon forgets the fault, and the all-to-all passes again in dimension
#      order.
# usage: detour.sh BUILD_DIR shm|udp
# Exit: 0 pass, 1 fail, 77 skip (daemon or apps not built).
set -u
build=$1
tr=$2

. "$(dirname "$0")/lib.sh"
dnp_tools "$build"
need_built "$dnpd" "$ctl" "$a2a"

run_dir /dev/shm/detour-$$
base=$(port_base)

fail() {
	echo "FAIL: $*"
	for f in "$dir"/dnpd-*.log "$dir"/a2a-*.out "$dir"/stats*; do
		[ -e "$f" ] && { echo "--- $f"; tail -n 12 "$f"; }
	done
	exit 1
}
all_know() { # N: every daemon knows N broken cables
	for id in 0 1 2 3 4 5 6 7; do
		[ "$(node_field "$id" routes broken_cables)" = "$1" ] || return 1
	done
}
link_state() { node_stats "$1" | grep -q "^link $2 state $3"; }

for id in 0 1 2 3 4 5 6 7; do
	x=$((id % 4)); y=$((id / 4))
	"$dnpd" --torus 4x2x1 --coord "$x,$y,0" --run-dir "$dir" --transport "$tr" \
		--udp-base-port "$base" >"$dir/dnpd-$id.log" 2>&1 &
	pids="$pids $!"
done
wait_links_up 60 0 1 2 3 4 5 6 7
alltoall_on before "0 1 2 3 4 5 6 7"
all_know 0 || fail "a fault is known before any"

echo "+ cut the cable (0,0,0) X+ -- (1,0,0) X-"
"$ctl" --socket "$dir/node-0.sock" impair 'dir=xp,loss=100%' || fail "dnpctl impair"
"$ctl" --socket "$dir/node-1.sock" impair 'dir=xm,loss=100%' || fail "dnpctl impair"
wait_for 20 link_state 0 X+ BROKEN || fail "node 0 X+ never BROKEN"
wait_for 10 all_know 1 || { for id in 0 1 2 3 4 5 6 7; do node_stats $id; done >"$dir/stats"; \
	fail "the broken cable did not reach every daemon"; }
f2=$(node_field 2 engine pkts_forwarded)
f3=$(node_field 3 engine pkts_forwarded)

alltoall_on detour "0 1 2 3 4 5 6 7" --detours
d=$(cat "$dir"/a2a-detour-*.out | awk '/came by a detour/ { s += $3 } END { print s + 0 }')
echo "detour: $d messages took a longer path"
[ "$d" -gt 0 ] || fail "no message took a detour"
g2=$(node_field 2 engine pkts_forwarded)
g3=$(node_field 3 engine pkts_forwarded)
echo "detour: node 3 forwarded $((g3 - f3)) packets, node 2 $((g2 - f2))"
# 0 -> 1 (100 KiB and more) goes 0 -> 3 -> 2 -> 1, 1 -> 0 the other way round.
[ $((g3 - f3)) -gt 25 ] && [ $((g2 - f2)) -gt 25 ] || fail "no detour through nodes 3 and 2"
link_state 0 X+ BROKEN || fail "the cable healed during the drill"

echo "+ repair the cable"
"$ctl" --socket "$dir/node-0.sock" impair off || fail "dnpctl impair off"
"$ctl" --socket "$dir/node-1.sock" impair off || fail "dnpctl impair off"
wait_for 30 link_state 0 X+ UP || fail "node 0 X+ never came back UP"
wait_for 10 all_know 0 || { for id in 0 1 2 3 4 5 6 7; do node_stats $id; done >"$dir/stats"; \
	fail "the repair did not reach every daemon"; }
alltoall_on after "0 1 2 3 4 5 6 7"
for id in 0 1 2 3 4 5 6 7; do node_stats $id; done >"$dir/stats"
grep -q 'state BROKEN' "$dir/stats" && fail "a link is BROKEN at the end"
echo "PASS: $tr-detour"
exit 0
