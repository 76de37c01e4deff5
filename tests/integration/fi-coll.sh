#!/bin/sh
# SPDX-License-Identifier: MIT
# The provider's FI_COLLECTIVE (suite 'mpi'): fabric/fi_dnp_coll on a 2x2x2
# shm torus of real daemons: fi_query_collective, AV sets, joins on the EQ,
# every type x op allreduce against a reference, barrier, broadcast from
# several roots, refusals, and a member killed mid-allreduce giving each
# survivor a CQ error entry (fi_cq_readerr) instead of a hang.
# usage: fi-coll.sh BUILD_DIR
# Exit 77 when the provider was not built (libfabric-dev missing).
set -u
build=$(cd "$1" && pwd)
fidir=$build/fabric
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ -f "$fidir/libdnp-fi.so" ] || skip "libdnp-fi.so not built (libfabric-dev missing at configure time)"
[ -x "$fidir/fi_dnp_coll" ] || skip "fi_dnp_coll not built"
[ -x "$build/dnp-core/dnpd/dnpd" ] || skip "dnpd not built"
export FI_PROVIDER_PATH=$fidir
tmp=$(mktemp -d /tmp/fi-coll-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
timeout 170 "$build/apps/dnp-run" --torus 2x2x2 --timeout 150 -- "$fidir/fi_dnp_coll" >out 2>&1
rc=$?
cat out
[ $rc -eq 0 ] || fail "fi_dnp_coll under dnp-run exited $rc"
grep -q '^\[0,0,0\] PASS fi_dnp_coll' out || fail "no PASS line"
# the death check reports what each survivor's error entry said
n=$(grep -c 'death: member [0-9]* ended with' out)
[ "$n" -eq 7 ] || fail "$n of 7 survivors reported an error completion"
echo "PASS fi-coll"
