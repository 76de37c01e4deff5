#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs one integration scenario: real daemons on a 2x2x2 torus via dnp-run.
# usage: run-scenario.sh BUILD_DIR shm|udp|dpdk|memif SCENARIO
# memif: DPDK memif ports between daemons on this host (no namespaces).
# dpdk: every node in its own network namespace, links on veth pairs
# (dnp-run --transport dpdk builds and removes the testbed).
# Exit: 0 pass, 1 fail, 77 skip (the daemon or the apps are not built; dpdk:
# not root, or DPDK not built).
set -u
. "$(dirname "$0")/lib.sh"
build=$1
tr=$2
sc=$3
run=$build/apps/dnp-run
dnpd=$build/dnp-core/dnpd/dnpd

if [ ! -x "$dnpd" ]; then
	echo "SKIP: $dnpd is not built in this configuration"
	exit 77
fi
if [ "$tr" = memif ] && [ "${DNP_HAVE_DPDK:-1}" != 1 ]; then
	echo "SKIP: this build has no DPDK (meson found no libdpdk)"
	exit 77
fi
if [ "$tr" = dpdk ]; then
	need_dpdk_testbed
fi
for p in "$run" "$build/apps/dnp_check"; do
	if [ ! -x "$p" ]; then
		echo "SKIP: $p is not built (libdnp missing?)"
		exit 77
	fi
done

# Each scenario: the program, and a grep -c pattern with the count it must reach
# in the output (besides every instance exiting 0). The benchmark programs run
# in test mode (--verify): both sides check every message they receive.
want_pat=
want_n=0
case $sc in
loopback)
	set -- dnp_pingpong --verify --loopback --sizes 8,4096,65536 --iters 50
	want_pat='^\[0,0,0\] +[0-9]+ +50 '; want_n=3 ;;
pingpong)
	set -- dnp_pingpong --verify --sizes 8,4096,65536,1M --iters 50
	want_pat='^\[0,0,0\] +[0-9]+ +50 '; want_n=4 ;;
pingpong-inline)
	# DNP_INLINE up to DNP_INLINE_MAX (24), the usual path beyond, every byte checked
	set -- dnp_pingpong --verify --inline --sizes 1,8,24,25,4096 --iters 50
	want_pat='^\[0,0,0\] +[0-9]+ +50 '; want_n=5 ;;
pingpong-far)
	set -- dnp_pingpong --verify --peer 1,1,1 --sizes 8,4096,100000 --iters 50
	want_pat='^\[0,0,0\] +[0-9]+ +50 '; want_n=3 ;;
bw)
	set -- dnp_bw --verify --sizes 64,4096,1M --iters 200 --window 16
	want_pat='^\[0,0,0\] +[0-9]+ +200 '; want_n=3 ;;
alltoall)
	set -- dnp_alltoall
	want_pat='all bytes verified'; want_n=8 ;;
alltoall-private)
	# sources and targets outside the shared heap (the process_vm path)
	DNP_APP_NOHEAP=1
	export DNP_APP_NOHEAP
	set -- dnp_alltoall --sizes 1,4095,200000
	want_pat='all bytes verified'; want_n=8 ;;
kill-mid-send)
	# a SEND that stops in the middle (its sender killed): the receiver's
	# reassembly bound (5 s in dnpd) reclaims the buffer
	set -- dnp_check kill-mid-send
	want_pat='^\[[01],0,0\] PASS'; want_n=2 ;;
private-fault)
	# a fault in a private PUT target fails that PUT only (gathered writes)
	set -- dnp_check private-fault
	want_pat='^\[[01],0,0\] PASS'; want_n=2 ;;
kill)
	set -- dnp_check kill-survivor
	want_pat='^\[[01],0,0\] PASS'; want_n=2 ;;
farthest)
	set -- dnp_check farthest
	want_pat='PASS farthest'; want_n=8 ;;
bad-args)
	set -- dnp_check bad-args
	want_pat='PASS bad-args'; want_n=1 ;;
slow-drain)
	# B (1,0,0) stops draining events while A floods it and sends transit
	# traffic through it to D (1,1,0); B resumes when A creates the flag.
	DNP_CHECK_FLAG=$(mktemp -u "${TMPDIR:-/tmp}/dnp-slow-drain.XXXXXX")
	export DNP_CHECK_FLAG
	set -- dnp_check slow-drain
	want_pat='PASS slow-drain'; want_n=8 ;;
flags)
	# DNP_SRC_EVENT (TX_READ before TX_DONE) and DNP_NO_EVENT (docs/api.md);
	# completion counters (DNP_CNTR) and inline PUTs (DNP_INLINE)
	set -- dnp_check flags
	want_pat='^\[[01],0,0\] (PASS flags|ok: (21 PUTs flagged|3000 event-less|3045 PUTs arrived|counter 0 reached 3000|24 inline PUTs))'
	want_n=7 ;;
send-order | get | bad-key | out-of-bounds | outstanding-1000 | blocking-20000)
	set -- dnp_check "$sc"
	want_pat="^\[[01],0,0\] PASS $sc"; want_n=2 ;;
*)
	echo "unknown scenario $sc"
	exit 1 ;;
esac

out=$(mktemp)
trap 'rm -f "$out" ${DNP_CHECK_FLAG:+"$DNP_CHECK_FLAG"}' EXIT
DNP_APP_TIMEOUT=40
export DNP_APP_TIMEOUT
echo "+ dnp-run --torus 2x2x2 --transport $tr -- $*"
"$run" --torus 2x2x2 --transport "$tr" --timeout 100 -- "$@" >"$out" 2>&1
rc=$?
cat "$out"

# fail WHY: the verdict after the run's output (whose last lines are daemon
# shutdown messages), then the lines that say what went wrong: the programs'
# (prefixed [x,y,z]), dnp-run's summary, the daemons' errors; so that meson
# test --print-errorlogs (the last 100 lines) shows them.
fail() {
	echo "FAIL: $tr-$sc: $*"
	echo "--- the programs' lines naming a problem"
	grep -E '^\[[0-9]+,[0-9]+,[0-9]+\] ' "$out" |
		grep -Ei 'fail|error|unrecognized|unknown|invalid|timed? ?out|abort|mismatch|unexpected|refused|sanitizer|assert|expected' |
		grep -Ev '\] PASS' | tail -n 30
	echo "--- dnp-run"
	grep -E '^dnp-run:' "$out" | tail -n 12
	echo "--- the daemons' errors"
	grep -E '^\[dnpd ' "$out" | grep -Ei 'error|fail|abort|sanitizer|assert|overflow|refused' | tail -n 10
	echo "FAIL: $tr-$sc: $*"
	exit 1
}
[ $rc -eq 0 ] || fail "dnp-run exited $rc"
n=$(grep -Ec "$want_pat" "$out")
[ "$n" -ge "$want_n" ] || fail "expected $want_n lines matching '$want_pat', found $n"
echo "PASS: $tr-$sc"
exit 0
