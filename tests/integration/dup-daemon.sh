#!/bin/sh
# SPDX-License-Identifier: MIT
# One daemon per node and run directory (docs/dnpd.md, "One daemon per
# node"): on a 2x1x1 shm torus,
#   - a second dnpd with node 0's coordinates and run directory is refused
#     with "node 0 already runs here (pid N)" and leaves every file of the
#     live daemon (node-0.bell, .up, .sock, .lock) in place; the live daemon
#     still answers dnpctl;
#   - node 0 killed with SIGKILL leaves its .up file behind; started again
#     while its neighbour is down, it removes that stale .up (its link is not
#     up) and holds the node's lock with its own pid.
# usage: dup-daemon.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (daemon not built).
set -u
build=$1
dnpd=$build/dnp-core/dnpd/dnpd
ctl=$build/dnp-core/dnpd/dnpctl
for p in "$dnpd" "$ctl"; do
	if [ ! -x "$p" ]; then
		echo "SKIP: $p is not built"
		exit 77
	fi
done

dir=/dev/shm/dnp-dup-$$
mkdir -p "$dir" || exit 1
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
	echo "FAIL: $*"
	exit 1
}
start() { # ID -> $! (logs to DIR/dnpd-ID.log, appended)
	"$dnpd" --torus 2x1x1 --coord "$1,0,0" --run-dir "$dir" --transport shm \
		>>"$dir/dnpd-$1.log" 2>&1 &
}
wait_file() { # PATH SECONDS
	i=0
	while [ ! -e "$1" ]; do
		i=$((i + 1))
		[ $i -gt $(($2 * 20)) ] && return 1
		sleep 0.05
	done
	return 0
}

start 0
p0=$!
pids="$pids $p0"
start 1
p1=$!
pids="$pids $p1"
wait_file "$dir/node-0.up" 20 || fail "node 0's links never came up"
wait_file "$dir/node-1.up" 20 || fail "node 1's links never came up"

# A second node 0: refused, says who runs, touches nothing of the live one.
"$dnpd" --torus 2x1x1 --coord 0,0,0 --run-dir "$dir" --transport shm \
	>"$dir/dup.log" 2>&1 &
dup=$!
i=0
while kill -0 "$dup" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 200 ]; then
		kill -9 "$dup" 2>/dev/null
		fail "the second node-0 daemon kept running"
	fi
	sleep 0.05
done
wait "$dup"
rc=$?
[ "$rc" -ne 0 ] || fail "the second node-0 daemon exited with status 0"
grep -q "node 0 already runs here (pid $p0" "$dir/dup.log" ||
	fail "no 'node 0 already runs here (pid $p0)' in: $(cat "$dir/dup.log")"
grep -qi "busy" "$dir/dup.log" && fail "the refusal still speaks of a busy link: $(cat "$dir/dup.log")"
for f in bell up sock lock; do
	[ -e "$dir/node-0.$f" ] || fail "the refused daemon removed node-0.$f of the live one"
done
[ "$(cat "$dir/node-0.lock")" = "$p0" ] || fail "node-0.lock does not hold the live pid $p0"
"$ctl" --socket "$dir/node-0.sock" stats | grep -q "^link X+ state UP" ||
	fail "the live node 0 no longer answers with its link UP"
echo "duplicate refused: $(grep 'already runs' "$dir/dup.log")"

# Node 0 killed: its .up stays behind; restarted alone, it removes it.
kill -9 "$p0"
wait "$p0" 2>/dev/null
[ -e "$dir/node-0.up" ] || fail "expected the killed daemon's stale node-0.up"
kill "$p1"
wait "$p1" 2>/dev/null
start 0
p0=$!
pids="$pids $p0"
i=0 # its socket file is the killed one's until the new daemon replaces it
until "$ctl" --socket "$dir/node-0.sock" stats >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -gt 400 ] && fail "the restarted node 0 does not answer"
	sleep 0.05
done
[ -e "$dir/node-0.up" ] && fail "the restarted node 0 left its predecessor's stale node-0.up"
[ "$(cat "$dir/node-0.lock")" = "$p0" ] || fail "node-0.lock does not hold the new pid $p0"
echo "PASS: duplicate refused with the live daemon's files intact; stale .up removed at restart"
exit 0
