#!/bin/sh
# SPDX-License-Identifier: MIT
# Collectives run by the daemons (dnp_coll): 8 ranks on a 2x2x2 torus of real daemons.
# usage: coll.sh BUILD_DIR shm|udp check|kill|interleave
#   check: every reduction and type against each rank's reference (up to 64 KiB, and
#          1 MiB pipelined sums and bors), broadcast from every root (up to 1 MiB),
#          barriers: every rank prints "PASS coll".
#   kill:  rank 7 kills its own daemon (kill -9) mid-run, after 20 allreduces of 1 MiB
#          (pipelined: 64 chunks each); the daemons' command deadline is 3 s: each of the 7
#          others must end its 1 MiB collective with an error event ("PASS kill"), never
#          hang (each wait is bounded at 20 s).
#   interleave: dnp_coll --bench's sequence at 64 KiB: blocks of 10 offloaded allreduces
#          and 10 of Presto's host-based ones (rendez-vous), 20 of each; every call must
#          complete (the daemons' command deadline is 5 s). It stalled when a rank left
#          Presto with the FIN of its last rendez-vous GET still queued in the library:
#          the sender waited in Presto while the others waited in the next collective.
# Exit 77 if not built.
set -u
build=$1 tr=$2 mode=$3
run=$build/apps/dnp-run
prog=$build/presto/dnp_coll
. "$(dirname "$0")/lib.sh"
need_built "$run" "$prog" "$build/dnp-core/dnpd/dnpd"
out=$(mktemp /tmp/dnp-coll.XXXXXX)
trap 'rm -f "$out"' EXIT
if [ "$mode" = kill ]; then
	"$run" --torus 2x2x2 --transport "$tr" --timeout 120 --no-lofamo \
		--daemon-death continue --keep-going --dnpd-arg=--cmd-timeout-ms=3000 \
		-- "$prog" --kill-rank 7 --size 1048576 --wait-ms 20000 >"$out" 2>&1
	rc=$?
	cat "$out"
	n=$(grep -c "^\[[0-9],[0-9],[0-9]\] PASS kill" "$out")
	if [ "$n" -ne 7 ]; then
		echo "FAIL: $n of 7 survivors ended their collective with an error (dnp-run: $rc)"
		exit 1
	fi
	if ! grep -q "^\[1,1,1\] killed own daemon" "$out"; then
		echo "FAIL: rank 7 did not kill its daemon"
		exit 1
	fi
	echo "OK: 7 survivors got an error over $tr"
	exit 0
fi
if [ "$mode" = interleave ]; then
	"$run" --torus 2x2x2 --transport "$tr" --timeout 150 --no-lofamo \
		--dnpd-arg=--cmd-timeout-ms=5000 \
		-- "$prog" --bench 20 --size 65536 --wait-ms 20000 >"$out" 2>&1
	rc=$?
	cat "$out"
	if [ $rc -ne 0 ] || ! grep -q "^\[0,0,0\] allreduce 65536 B on 8 ranks, 20 each" "$out"; then
		echo "FAIL: interleaved 64 KiB allreduces did not all complete (dnp-run: $rc)"
		exit 1
	fi
	echo "OK: 20 offloaded and 20 host-based 64 KiB allreduces, interleaved, over $tr"
	exit 0
fi
"$run" --torus 2x2x2 --transport "$tr" --timeout 200 -- "$prog" >"$out" 2>&1
rc=$?
cat "$out"
if [ $rc -ne 0 ]; then
	echo "FAIL: dnp-run exited $rc"
	exit 1
fi
n=$(grep -c "^\[[0-9],[0-9],[0-9]\] PASS coll\$" "$out")
if [ "$n" -ne 8 ]; then
	echo "FAIL: $n of 8 ranks printed PASS coll"
	exit 1
fi
echo "OK: 8 ranks PASS coll over $tr"
