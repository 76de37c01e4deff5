#!/bin/sh
# SPDX-License-Identifier: MIT
#
# cabling.sh BUILD SRC — dnpd's cabling check on a deliberately miswired torus
# (suite 'integration-dpdk'; root and DPDK, else skipped).
#
# netns.sh builds a 2x2x2 torus of namespaces and veth pairs; dnp topo writes
# the daemons' files from that plan (each port and its MAC). Then two cables
# are swapped at host 1 (1,0,0): its interfaces d1-xp and d1-yp exchange
# names, so the port its file calls X+ now leads to 1,1,0's Y- port, and its
# "Y+" to 0,0,0's X- port. Eight dnpd start on the plan. Asserted:
#  - node 1 logs "X+ of 1,0,0 reaches 1,1,0 Y-: expected 0,0,0 X-" and
#    "Y+ of 1,0,0 reaches 0,0,0 X-: expected 1,1,0 Y-", and never has all
#    links up (no node-1.up);
#  - dnpctl topo on node 1 exits 3 and shows both links MISWIRED against
#    their expected ends, the others ok;
#  - node 6 (0,1,1), none of whose cables was touched, comes up, and dnpctl
#    topo there exits 0 with six links ok;
#  - dnpctl topo --all asked at node 6 (whose daemon queries every node over
#    the torus) exits 3 and shows the swap from the other ends of the two
#    cables: node 0's X- reaches 1,0,0 Y+ and node 3's Y- reaches 1,0,0 X+,
#    both MISWIRED; node 7's six links are ok. (Node 1's own answer cannot come
#    back: dimension-order routing sends it out of its X+ port, one of the
#    swapped ones; it is printed as answered or as "no answer".)
set -u
build=$1
src=$2
. "$(dirname "$0")/lib.sh"
need_dpdk_testbed
dnp_tools "$build"
need_built "$dnpd" "$ctl"

prefix=cab$(($$ % 100000))
run=/dev/shm/$prefix
fail=0
run_dir "$(mktemp -d /tmp/cluster-cabling.XXXXXX)"
remove_at_exit "$run"
testbed_up "$src/tests/testbed/netns.sh" "$prefix" "$dir"
i=0
while [ $i -lt 8 ]; do
	awk -v id=$i '!/^#/ && $1 == id { printf " %s=af_packet:%s@%s", $2, $5, $6 }
		END { print "" }' "$dir/$prefix.topo" | sed "s/^/n$i/"
	i=$((i + 1))
done >"$dir/hosts"
python3 "$src/apps/dnp-topo" --torus 2x2x2 --hosts "$dir/hosts" --transport dpdk \
	--out "$dir/topo" --run-dir "$run/%h" >/dev/null || { echo "FAIL: dnp topo"; exit 1; }

# The swap: two cables exchanged at host 1.
ns=$prefix-1
ip -n "$ns" link set d1-xp down && ip -n "$ns" link set d1-yp down &&
	ip -n "$ns" link set d1-xp name swp && ip -n "$ns" link set d1-yp name d1-xp &&
	ip -n "$ns" link set swp name d1-yp && ip -n "$ns" link set d1-xp up &&
	ip -n "$ns" link set d1-yp up || { echo "FAIL: swapping the veths"; exit 1; }
echo "swapped d1-xp and d1-yp in $ns"

mkdir -p "$run"
i=0
while [ $i -lt 8 ]; do
	ip netns exec "$prefix-$i" "$dnpd" --config "$dir/topo/n$i.ini" 2>"$dir/dnpd-$i.log" &
	pids="$pids $!"
	i=$((i + 1))
done

# Node 6 comes up; node 1 reports both swapped links.
t=0
# Node 1's good Z cables must have been heard too (DPDK ports can take a
# few seconds to come up on a loaded machine).
z_ok() {
	"$ctl" --socket "$run/n1/dnpd.sock" topo 2>/dev/null >"$dir/topo1.wait"
	grep -q '^wiring Z+ expected 1,0,1 Z- found 1,0,1 Z- ok' "$dir/topo1.wait" &&
		grep -q '^wiring Z- expected 1,0,1 Z+ found 1,0,1 Z+ ok' "$dir/topo1.wait"
}
while :; do
	n1=$(grep -c 'cabling: ' "$dir/dnpd-1.log")
	[ -e "$run/n6/node-6.up" ] && [ "$n1" -ge 2 ] && z_ok && break
	t=$((t + 1))
	[ $t -lt 300 ] || break
	sleep 0.1
done
echo "--- node 1 log:"
cat "$dir/dnpd-1.log"
grep -q 'cabling: X+ of 1,0,0 reaches 1,1,0 Y-: expected 0,0,0 X-' "$dir/dnpd-1.log" ||
	bad "node 1 did not report its X+ cable"
grep -q 'cabling: Y+ of 1,0,0 reaches 0,0,0 X-: expected 1,1,0 Y-' "$dir/dnpd-1.log" ||
	bad "node 1 did not report its Y+ cable"
[ -e "$run/n6/node-6.up" ] || bad "node 6 (untouched cables) not up"
[ -e "$run/n1/node-1.up" ] && bad "node 1 has all links up despite the swap"

echo "--- dnpctl topo on node 1:"
"$ctl" --socket "$run/n1/dnpd.sock" topo >"$dir/topo1"
rc=$?
cat "$dir/topo1"
[ $rc -eq 3 ] || bad "dnpctl topo on node 1 exited $rc, not 3"
grep -q '^wiring X+ expected 0,0,0 X- found 1,1,0 Y- MISWIRED' "$dir/topo1" || bad "X+ line"
grep -q '^wiring Y+ expected 1,1,0 Y- found 0,0,0 X- MISWIRED' "$dir/topo1" || bad "Y+ line"
grep -q '^wiring Z+ expected 1,0,1 Z- found 1,0,1 Z- ok' "$dir/topo1" || bad "Z+ line"

echo "--- dnpctl topo on node 6:"
"$ctl" --socket "$run/n6/dnpd.sock" topo >"$dir/topo6"
rc=$?
cat "$dir/topo6"
[ $rc -eq 0 ] || bad "dnpctl topo on node 6 exited $rc"
[ "$(grep -c ' ok$' "$dir/topo6")" -eq 6 ] || bad "node 6: not six links ok"
echo "--- dnpctl topo --all on node 6:"
"$ctl" --socket "$run/n6/dnpd.sock" topo --all >"$dir/topoall"
rc=$?
cat "$dir/topoall"
[ $rc -eq 3 ] || bad "dnpctl topo --all on node 6 exited $rc, not 3"
# "N: wiring ..." for every wiring line of node N.
awk '/^node / { n = $2 } /^wiring / { print n ": " $0 }' "$dir/topoall" >"$dir/topoall.by-node"
grep -q '^0: wiring X- expected 1,0,0 X+ found 1,0,0 Y+ MISWIRED' "$dir/topoall.by-node" ||
	bad "topo --all: node 0's X- not shown reaching 1,0,0 Y+"
grep -q '^3: wiring Y- expected 1,0,0 Y+ found 1,0,0 X+ MISWIRED' "$dir/topoall.by-node" ||
	bad "topo --all: node 3's Y- not shown reaching 1,0,0 X+"
[ "$(grep -c '^7: wiring .* ok$' "$dir/topoall.by-node")" -eq 6 ] ||
	bad "topo --all: node 7 not shown with six links ok"
[ "$(grep -c '^6: wiring .* ok$' "$dir/topoall.by-node")" -eq 6 ] ||
	bad "topo --all: the asked node 6 not shown with six links ok"
grep -q '^node 1 (1,0,0) \(answered\|no answer\)' "$dir/topoall" || bad "topo --all: no node 1 line"
[ $fail -eq 0 ] && echo "PASS: the swapped cables are reported, also from node 6 over the torus, the rest of the torus is up"
exit $fail
