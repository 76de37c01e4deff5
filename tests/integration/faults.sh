#!/bin/sh
# SPDX-License-Identifier: MIT
# Completion under a daemon fault (issue 25), on real daemons of a 4x1x1
# ring: node 2's daemon is killed under all-to-all 8-byte PUT traffic
# (apps/dnp_faults.c), (b) with every program draining its events, and (c)
# with node 2's program never draining (nor sending). node 0's dnp_faults
# checks: every command of the surviving nodes ends exactly once; none ends
# -ETIMEDOUT, or 'not delivered', although its target holds the data; none
# ends 0 without it; the event's data field agrees with its status.
# usage: faults.sh BUILD_DIR shm|udp
# Exit: 0 pass, 1 fail, 77 skip (daemon or apps not built).
set -u
build=$1
tr=$2
run=$build/apps/dnp-run
for p in "$build/dnp-core/dnpd/dnpd" "$run" "$build/apps/dnp_faults"; do
	if [ ! -x "$p" ]; then
		echo "SKIP: $p is not built"
		exit 77
	fi
done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for mode in drain nodrain; do
	extra=
	[ $mode = nodrain ] && extra=--no-drain-victim
	echo "+ dnp-run --torus 4x1x1 --transport $tr -- dnp_faults --fault kill --victim 2 $extra"
	"$run" --torus 4x1x1 --transport "$tr" --daemon-death continue --drill --keep-going \
		--no-lofamo --timeout 80 -- dnp_faults --fault kill --victim 2 --warm-ms 1000 \
		--after-ms 1500 $extra >"$out" 2>&1
	grep -E '^\[0,0,0\] ' "$out"
	if ! grep -q '^\[0,0,0\] PASS faults' "$out"; then
		grep -E '^dnp-run:' "$out" | tail -n 8
		echo "FAIL: $tr kill, $mode"
		exit 1
	fi
done
echo "PASS: $tr faults"
exit 0
