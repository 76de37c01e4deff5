#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Programs one after another on the same nodes (docs/apps.md, "Greeting"):
# under one dnp-run, each node runs dnp_pingpong and then dnp_bw --verify;
# node 0's ping-pong keeps its port open 300 ms after its last message
# (DNP_APP_LINGER_MS), so node 1's bandwidth test starts and sends to
# node 0's port while the ping-pong still owns it. The HELLO it swallows must
# be sent again and the stream must cross, checked, within the timeout;
# without the greeting the receiver's buffer address is lost and both sides
# wait. Then the same over udp with three programs in a row, none lingering.
#
# Usage: app-sequence.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (not built).
set -u
build=$1
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

if [ "${2:-}" = inner ]; then
	linger=0
	[ "$DNP_NODE_ID" = 0 ] && linger=${3:-0}
	DNP_APP_LINGER_MS=$linger "$build/apps/dnp_pingpong" --sizes 8 --iters 200 --warmup 10 \
		--csv >/dev/null || exit 1
	for k in $(seq 1 "${4:-1}"); do
		"$build/apps/dnp_bw" --sizes 8 --iters 2000 --verify --csv >/dev/null || exit 1
	done
	echo "seq node $DNP_NODE_ID ok"
	exit 0
fi

. "$(dirname "$0")/lib.sh"
need_built "$build/apps/dnp-run" "$build/apps/dnp_pingpong" "$build/apps/dnp_bw" \
	"$build/dnp-core/dnpd/dnpd"
fail=0
# each blocking step of the programs: 10 s, far above the 300 ms linger
export DNP_APP_TIMEOUT=10
for t in "shm 300 1" "udp 0 3"; do
	set -- $t
	if out=$("$build/apps/dnp-run" --torus 2x1x1 --timeout 90 --no-lofamo --transport "$1" \
		-- "$self" "$build" inner "$2" "$3" 2>&1); then
		n=$(echo "$out" | grep -c "seq node [01] ok")
		[ "$n" = 2 ] || bad "$1: $n of 2 nodes finished the sequence"
		echo "$1 (node 0 lingers $2 ms, then $3 stream(s)): both nodes ok"
	else
		bad "$1: the sequence failed"
		echo "$out" | tail -n 12 >&2
	fi
done
[ $fail = 0 ] && echo "PASS: app-sequence"
exit $fail
