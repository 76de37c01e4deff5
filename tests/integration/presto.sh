#!/bin/sh
# SPDX-License-Identifier: MIT
# Presto checks: 8 ranks on a 2x2x2 torus of real daemons (dnp-run).
# usage: presto.sh BUILD_DIR shm|udp basic|random|collectives|slow
#        (MODE-send: the same with eager messages as DNP SENDs, PRESTO_EAGER=send)
# Every rank must exit 0 and print "PASS MODE". Exit 77 if not built.
set -u
build=$1 tr=$2 mode=$3
case $mode in
*-send) mode=${mode%-send}; PRESTO_EAGER=send; export PRESTO_EAGER ;;
esac
run=$build/apps/dnp-run
prog=$build/presto/presto_check
. "$(dirname "$0")/lib.sh"
need_built "$run" "$prog" "$build/dnp-core/dnpd/dnpd"
out=$(mktemp /tmp/mpi-presto.XXXXXX)
trap 'rm -f "$out"' EXIT
"$run" --torus 2x2x2 --transport "$tr" --timeout 200 -- "$prog" "$mode" >"$out" 2>&1
rc=$?
cat "$out"
if [ $rc -ne 0 ]; then
	echo "FAIL: dnp-run exited $rc"
	exit 1
fi
n=$(grep -c "^\[[0-9],[0-9],[0-9]\] PASS $mode\$" "$out")
if [ "$n" -ne 8 ]; then
	echo "FAIL: $n of 8 ranks printed PASS $mode"
	exit 1
fi
echo "OK: 8 ranks PASS $mode over $tr"
