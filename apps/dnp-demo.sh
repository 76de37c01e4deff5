#!/bin/sh
# SPDX-License-Identifier: MIT
# SoftDNP demo: a 2x2x2 torus of dnpd daemons over shared memory, driven by
# dnp-run: ping-pong between neighbours and between the farthest nodes, a
# bandwidth run, an all-to-all exchange verified byte by byte, a daemon
# killed with kill -9 under traffic that rejoins the torus (rejoin.sh), and a
# short LO|FA|MO drill: one daemon killed, the fault supervisor's map shown
# (dnpctl status, and live in a browser: the URL of dnp-supervisor --http is
# printed when the supervisor has it), the daemon restarted, the map shown
# healed. Writes only to a temporary directory and dnp-run's run directories.
# usage: dnp-demo.sh [BUILD_DIR [--lofamo-only]]  (./dnp demo passes the build
#        directory; --lofamo-only: just the drill, for tests/integration/demo.sh)
set -u

# The LO|FA|MO drill, run by dnp-run on every node (node 0 drives it).
if [ "${1:-}" = --drill-inner ]; then
	dir=$(dirname "$DNP_SOCKET")
	if [ "$DNP_NODE_ID" != 0 ]; then
		for _ in $(seq 600); do [ -e "$dir/demo.done" ] && break; sleep 0.1; done
		exit 0
	fi
	trap 'touch "$dir/demo.done"' EXIT
	v=$((DNP_NNODES - 1))
	healthy() { "$DNPCTL" status 2>/dev/null | grep -q "picture: $DNP_NNODES of $DNP_NNODES nodes healthy"; }
	wait_for() { # TENTHS COMMAND...: until COMMAND succeeds
		n=$1; shift
		for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
		return 1
	}
	url=$(sed -n 's|.*fault map on \(http://[^ ]*\).*|\1|p' "$dir/supervisor.log" 2>/dev/null | head -n 1)
	[ -n "$url" ] && echo "the fault map, live: open $url in a browser (during the drill)"
	wait_for 300 healthy || { echo "the picture never became all-healthy"; exit 1; }
	pid=$(cat "$dir/node-$v.pid")
	echo "kill -9 $pid (dnpd of node $v)"
	t0=$(date +%s%3N)
	kill -9 "$pid"
	aware() { ! healthy; } # it was all-healthy just before the kill
	wait_for 100 aware || { echo "the supervisor never saw the fault"; exit 1; }
	echo "the supervisor's map $(($(date +%s%3N) - t0)) ms later:"
	"$DNPCTL" status
	sleep 1 # the neighbours' links to it time out (400 ms) and are reported broken
	echo "1 s later, its neighbours report their links to it broken:"
	"$DNPCTL" status
	rm -f "$dir/node-$v.up"
	echo "restart: dnpd of node $v started again with the same arguments (dnp-run, SIGUSR1)"
	t1=$(date +%s%3N)
	kill -USR1 "$DNP_RUN_PID"
	up() { [ -e "$dir/node-$v.up" ] && healthy; }
	wait_for 200 up || { echo "the torus did not heal"; "$DNPCTL" status; exit 1; }
	echo "healed: links UP and the map all-healthy $(($(date +%s%3N) - t1)) ms after the restart:"
	"$DNPCTL" status
	exit 0
fi
build=${1:-build}
only_lofamo=false
[ "${2:-}" = --lofamo-only ] && only_lofamo=true
run=$build/apps/dnp-run
for p in "$run" "$build/apps/dnp_pingpong" "$build/dnp-core/dnpd/dnpd"; do
	if [ ! -x "$p" ]; then
		echo "dnp-demo: $p is not built (run: meson setup $build && ninja -C $build)" >&2
		exit 1
	fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

step() { # name, then the program and its arguments
	name=$1
	shift
	echo
	echo "=== $name"
	echo "    dnp-run --torus 2x2x2 --transport shm -- $*"
	if "$run" --torus 2x2x2 --transport shm --timeout 120 -- "$@" >"$tmp/$name" 2>&1; then
		echo "ok" >"$tmp/$name.rc"
	else
		echo "FAILED" >"$tmp/$name.rc"
		status=1
	fi
	sed 's/^/    /' "$tmp/$name"
}

# Median latency of a size from dnp_pingpong's table on node 0,0,0.
lat() { awk -v s="$2" '$1 == "[0,0,0]" && $2 == s { print $5 }' "$tmp/$1"; }
bw() { awk -v s="$2" '$1 == "[0,0,0]" && $2 == s { print $4 }' "$tmp/$1"; }

echo "SoftDNP demo: 8 daemons (2x2x2 torus, shm links), one program instance per node"
if ! $only_lofamo; then
step near dnp_pingpong --sizes 8,4096,65536,1M --iters 100
step far dnp_pingpong --peer 1,1,1 --sizes 8,4096,65536 --iters 100
step bw dnp_bw --sizes 4096,65536,1M --iters 300
step alltoall dnp_alltoall

# A relay daemon killed under traffic and started again with the same arguments.
rejoin=$(dirname "$0")/../tests/integration/rejoin.sh
echo
echo "=== rejoin: kill -9 a daemon of a 4x1x1 ring under traffic, start it again"
if [ -x "$rejoin" ]; then
	if "$rejoin" "$build" shm >"$tmp/rejoin" 2>&1; then
		echo "ok" >"$tmp/rejoin.rc"
	else
		echo "FAILED" >"$tmp/rejoin.rc"
		status=1
	fi
	grep -Ev '^ +[0-9]|^#|bytes +iterations' "$tmp/rejoin" | sed 's/^/    /'
else
	echo "skipped (no source tree next to the demo)" >"$tmp/rejoin.rc"
fi
fi # only_lofamo

# LO|FA|MO: kill a daemon, the supervisor's map, restart it, the map healed.
echo
echo "=== lofamo: kill -9 a daemon, the fault supervisor's map, restart it, the map healed"
if [ -x "$build/lofamo/dnp-supervisor" ] && [ -x "$build/lofamo/dnp-hfm" ]; then
	# The live fault map on any free local port, when the supervisor was built
	# with libmicrohttpd (meson option http); node 0 prints its URL.
	http=
	if ldd "$build/lofamo/dnp-supervisor" 2>/dev/null | grep -q libmicrohttpd; then
		http=127.0.0.1:0
	else
		echo "    (no live fault map: dnp-supervisor was built without libmicrohttpd)"
	fi
	# Node 0's lines as they come, so that the URL is there while the map lives.
	{
		DNPCTL=$build/dnp-core/dnpd/dnpctl DNP_SUPERVISOR_HTTP=$http "$run" --torus 2x2x2 \
			--transport shm --timeout 120 --drill -- "$0" --drill-inner 2>&1
		echo $? >"$tmp/lofamo.code"
	} | tee "$tmp/lofamo" | sed -un 's/^\[0,0,0\] /    /p'
	if [ "$(cat "$tmp/lofamo.code")" = 0 ]; then
		echo "ok" >"$tmp/lofamo.rc"
	else
		echo "FAILED" >"$tmp/lofamo.rc"
		status=1
	fi
	grep -v '^\[' "$tmp/lofamo" | sed 's/^/    /'
else
	echo "skipped (dnp-supervisor or dnp-hfm not built)" >"$tmp/lofamo.rc"
fi

if $only_lofamo; then
	echo "lofamo drill: $(cat "$tmp/lofamo.rc")"
	exit $status
fi
echo
echo "=== Summary"
printf '  %-42s %s\n' "ping-pong 0,0,0 <-> 1,0,0 (1 hop), 8 B" "$(lat near 8) us half round trip ($(cat "$tmp/near.rc"))"
printf '  %-42s %s\n' "ping-pong 0,0,0 <-> 1,1,1 (3 hops), 8 B" "$(lat far 8) us half round trip ($(cat "$tmp/far.rc"))"
printf '  %-42s %s\n' "ping-pong 1 hop, 1 MiB" "$(lat near 1048576) us"
printf '  %-42s %s\n' "PUT bandwidth 1 hop, 1 MiB messages" "$(bw bw 1048576) MB/s ($(cat "$tmp/bw.rc"))"
printf '  %-42s %s\n' "all-to-all (8 nodes x 7 peers x 3 sizes)" \
	"$(grep -c 'all bytes verified' "$tmp/alltoall") of 8 nodes verified every byte ($(cat "$tmp/alltoall.rc"))"
printf '  %-42s %s\n' "daemon killed and rejoined (shm)" \
	"$(sed -n 's/^restart -> //p' "$tmp/rejoin" 2>/dev/null) ($(cat "$tmp/rejoin.rc"))"
printf '  %-42s %s\n' "LO|FA|MO: daemon killed, seen, restarted" \
	"$(sed -n 's/^\[0,0,0\] healed: links UP and the map all-healthy \([0-9]*\) ms.*/healed \1 ms after the restart/p' \
		"$tmp/lofamo" 2>/dev/null) ($(cat "$tmp/lofamo.rc"))"
if [ $status -eq 0 ]; then
	echo "  demo OK"
else
	echo "  demo FAILED (see the output above)"
fi
exit $status
