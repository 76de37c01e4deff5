#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The live fault map in a real browser (docs/lofamo.md, "The fault map"): a
# 2x2x1 torus with its HFMs and a supervisor serving --http; headless
# Chromium (Debian's) loads the page, and the test reads the DOM it drew:
# all four nodes healthy; node 3's dnpd killed -> its cell turns faulty or
# dead; the daemon restarted by dnp-run -> healthy again. A screenshot of
# each state goes to OUTDIR (default BUILD/faultmap/).
#
#   faultmap.sh BUILD [OUTDIR]
# Exit 0 when the page showed each state, 1 otherwise, 77 when it cannot run
# here (no chromium, a supervisor built without libmicrohttpd).
set -euo pipefail

skip() {
	echo "SKIP: $*"
	exit 77
}

# One look: the page as the browser drew it after 2.5 s of its own time
# (the page polls the picture every 0.5 s).
dom() {
	timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$FM_PROFILE" --virtual-time-budget=1500 --dump-dom "$1" 2>/dev/null || true
}

shot() {
	timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$FM_PROFILE" --virtual-time-budget=1500 --window-size=1100,600 \
		--screenshot="$2" "$1" >/dev/null 2>&1 || true
}

# wait_dom URL PATTERN WHAT: looks until the DOM matches (at most 40 looks).
wait_dom() {
	local i d
	for i in $(seq 40); do
		d=$(dom "$1")
		if echo "$d" | grep -Eq "$2"; then
			echo "faultmap: $3 after $i looks"
			return 0
		fi
		sleep 0.5
	done
	echo "FAIL: the page never showed $3 (pattern $2); last DOM:" >&2
	echo "$d" | grep -Eo '<body[^>]*>|<g id="node-[0-9]+"[^>]*>|id="status">[^<]*' >&2 || true
	return 1
}

if [ "${1:-}" = --inner ]; then
	dir=$DNP_RUN_DIR
	if [ "$DNP_NODE_ID" != 0 ]; then
		for _ in $(seq 1200); do [ -e "$dir/faultmap.done" ] && break; sleep 0.1; done
		exit 0
	fi
	trap 'touch "$dir/faultmap.done"' EXIT
	url=
	for _ in $(seq 100); do
		url=$(sed -n 's/.*fault map on \(http:[^ ]*\).*/\1/p' "$dir/supervisor.log" 2>/dev/null |
			tail -n 1)
		[ -n "$url" ] && break
		sleep 0.1
	done
	[ -n "$url" ] || { echo "FAIL: the supervisor never said where its fault map is" >&2; exit 1; }
	echo "faultmap: $url"
	wait_dom "$url" 'data-nodes="4" data-healthy="4"' "all four nodes healthy"
	shot "$url" "$FM_OUT/faultmap-healthy.png"
	pid=$(awk '$1 == "dnpd" && $2 == 3 {print $3}' "$dir/lofamo.pids")
	[ -n "$pid" ] || { echo "FAIL: no dnpd 3 in lofamo.pids" >&2; exit 1; }
	kill -9 "$pid"
	wait_dom "$url" '<g id="node-3" data-host="[a-z]+" data-dnp="(faulty|dead)"' \
		"node 3's DNP faulty or dead"
	shot "$url" "$FM_OUT/faultmap-fault.png"
	kill -USR1 "$DNP_RUN_PID" # dnp-run starts the killed daemon again
	wait_dom "$url" '<g id="node-3" data-host="ok" data-dnp="ok"' "node 3 healthy again"
	wait_dom "$url" 'data-nodes="4" data-healthy="4"' "all four nodes healthy again"
	shot "$url" "$FM_OUT/faultmap-healed.png"
	echo "faultmap: PASS"
	exit 0
fi

build=$(cd "$1" && pwd)
command -v chromium >/dev/null 2>&1 || skip "no chromium (Debian package chromium) for the browser test"
sup=$build/lofamo/dnp-supervisor
[ -x "$sup" ] || skip "no $sup"
"$sup" --help 2>&1 | grep -q -- --http || skip "dnp-supervisor built without libmicrohttpd (no --http)"
FM_OUT=${2:-$build/faultmap}
mkdir -p "$FM_OUT"
FM_PROFILE=$(mktemp -d)
trap 'rm -rf "$FM_PROFILE"' EXIT
export FM_OUT FM_PROFILE
# Any free loopback port: the supervisor logs the URL it serves.
export DNP_SUPERVISOR_HTTP=127.0.0.1:0
self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
rc=0
out=$("$build/apps/dnp-run" --torus 2x2x1 --drill --timeout 150 -- "$self" --inner 2>&1) || rc=1
echo "$out" | sed -n 's/^\[0,0,0\] //p'
if [ $rc != 0 ] || ! echo "$out" | grep -q 'faultmap: PASS'; then
	echo "$out" | tail -n 30 >&2
	echo "FAIL: the fault map did not show the kill and the heal (screenshots in $FM_OUT)" >&2
	exit 1
fi
echo "PASS: the browser showed node 3 healthy, faulty, healthy (screenshots in $FM_OUT)"
