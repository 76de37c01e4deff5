#!/bin/sh
# SPDX-License-Identifier: MIT
# Hand-off by placement (docs/performance.md, "Hand-off and context
# switches"): a daemon pinned to one CPU with no links (1x1x1, dnp-run --pin)
# says so in its bell (solo_cpu = its CPU + 1), and with its program polling on
# the other CPU its idle passes do not yield: a loopback ping-pong then counts
# no daemon yields (`yields` in `dnpctl stats`). A 2x1x1 torus (links) and an
# unpinned daemon publish 0 and yield as before.
# Two hosts (2x1x1, node x's daemon and program both on CPU x): each daemon
# publishes home_cpu = x + 1; the program, sharing its daemon's CPU, blocks
# in its waits (voluntary context switches, at least one per 4 PUTs received
# where it used to yield) and the daemon hands it the CPU after its events
# (`handoffs` in `dnpctl stats`).
# usage: solo.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (not built, or fewer than two CPUs).
set -u
build=$1
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

# Two hosts, inside dnp-run: node x's program on CPU x, under GNU time
# (voluntary switches); node 1 prints them, the bell's home_cpu and its daemon's handoffs.
if [ "${2:-}" = inner2 ]; then
	x=$DNP_NODE_ID
	/usr/bin/time -f 'vcsw %w' -o "$DNP_RUN_DIR/time-$x" taskset -c "$x" \
		"$build/apps/dnp_pingpong" --sizes 8 --iters 20000 --csv >/dev/null || exit 1
	[ "$x" = 1 ] || exit 0
	home=$(od -An -tu4 -j24 -N4 "$DNP_RUN_DIR/node-1.bell" | tr -d ' ')
	h=$("$build/dnp-core/dnpd/dnpctl" --socket "$DNP_SOCKET" stats |
		sed -n 's/.* handoffs \([0-9]*\).*/\1/p')
	v=$(sed -n 's/^vcsw \([0-9]*\)$/\1/p' "$DNP_RUN_DIR/time-1")
	[ -n "$home" ] && [ -n "$h" ] && [ -n "$v" ] || exit 1
	echo "home_cpu $home handoffs $h vcsw $v"
	exit 0
fi
# Inside dnp-run, on every node: the PUTs; on node 0 then the bell's solo_cpu and the daemon's yields.
if [ "${2:-}" = inner ]; then
	"$build/apps/dnp_pingpong" $3 --sizes 8 --iters 20000 --csv >/dev/null || exit 1
	[ "$DNP_NODE_ID" = 0 ] || exit 0
	solo=$(od -An -tu4 -j20 -N4 "$DNP_RUN_DIR/node-0.bell" | tr -d ' ')
	y=$("$build/dnp-core/dnpd/dnpctl" --socket "$DNP_SOCKET" stats |
		sed -n 's/.* yields \([0-9]*\).*/\1/p')
	[ -n "$solo" ] && [ -n "$y" ] || exit 1
	echo "solo_cpu $solo yields $y"
	exit 0
fi

. "$(dirname "$0")/lib.sh"
need_built "$build/dnp-core/dnpd/dnpd" "$build/dnp-core/dnpd/dnpctl" "$build/apps/dnp-run" \
	"$build/apps/dnp_pingpong"
if [ "$(nproc)" -lt 2 ]; then
	echo "SKIP: --pin needs two CPUs"
	exit 77
fi

# run LABEL TORUS PINGPONG-OPTION DNP-RUN-OPTIONS...: prints "solo_cpu N yields N" of node 0
run() {
	label=$1 torus=$2 ppopt=$3
	shift 3
	out=$("$build/apps/dnp-run" --torus "$torus" --timeout 120 --no-lofamo "$@" -- \
		"$self" "$build" inner "$ppopt" 2>&1) || {
		echo "FAIL: $label: the run failed" >&2
		echo "$out" | tail -n 20 >&2
		exit 1
	}
	line=$(echo "$out" | grep -o 'solo_cpu [0-9]* yields [0-9]*')
	[ -n "$line" ] || {
		echo "FAIL: $label: node 0 reported nothing" >&2
		echo "$out" | tail -n 20 >&2
		exit 1
	}
	echo "$label: $line" >&2
	echo "$line"
}

set -- $(run "1x1x1 --pin" 1x1x1 --loopback --transport shm --pin) || exit 1
solo=$2 yields=$4
[ "$solo" -ge 1 ] || { echo "FAIL: a pinned daemon without links published solo_cpu $solo"; exit 1; }
# a handful at start-up, before the program first polls (app_cpu unknown)
[ "$yields" -lt 2000 ] || { echo "FAIL: the solo daemon yielded $yields times"; exit 1; }
set -- $(run "1x1x1 unpinned" 1x1x1 --loopback --transport shm) || exit 1
[ "$2" -eq 0 ] || { echo "FAIL: an unpinned daemon published solo_cpu $2"; exit 1; }
set -- $(run "2x1x1 --pin" 2x1x1 "" --transport shm --pin) || exit 1
[ "$2" -eq 0 ] || { echo "FAIL: a daemon with links published solo_cpu $2"; exit 1; }

# Two hosts: a daemon wrapper that pins node x's dnpd to CPU x (as bench/lib.sh's two_host_wrappers)
if [ -x /usr/bin/time ] && command -v taskset >/dev/null; then
	w=$(mktemp -d /tmp/solo-2host.XXXXXX)
	trap 'rm -rf "$w"' EXIT
	two_host_dnpd "$build" "$w/dnpd"
	out=$("$build/apps/dnp-run" --torus 2x1x1 --timeout 120 --no-lofamo --transport shm \
		--dnpd "$w/dnpd" -- "$self" "$build" inner2 2>&1) || {
		echo "FAIL: two hosts: the run failed" >&2
		echo "$out" | tail -n 20 >&2
		exit 1
	}
	set -- $(echo "$out" | grep -o 'home_cpu [0-9]* handoffs [0-9]* vcsw [0-9]*')
	echo "2x1x1 two hosts: home_cpu ${2:-?} handoffs ${4:-?} vcsw ${6:-?}" >&2
	[ "${2:-0}" -eq 2 ] || { echo "FAIL: node 1's daemon on CPU 1 published home_cpu ${2:-none}"; exit 1; }
	[ "${4:-0}" -ge 5000 ] || { echo "FAIL: the daemon handed the CPU over ${4:-0} times"; exit 1; }
	[ "${6:-0}" -ge 5000 ] || { echo "FAIL: the program blocked ${6:-0} times in 20000 waits"; exit 1; }
else
	echo "two hosts: skipped (no /usr/bin/time or taskset)" >&2
fi
echo "PASS"
