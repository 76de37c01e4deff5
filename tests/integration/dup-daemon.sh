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
. "$(dirname "$0")/lib.sh"
dnp_tools "$build"
need_built "$dnpd" "$ctl"
run_dir /dev/shm/dnp-dup-$$

fail() {
	echo "FAIL: $*"
	exit 1
}
start() { # ID -> $! (logs to DIR/dnpd-ID.log, appended)
	"$dnpd" --torus 2x1x1 --coord "$1,0,0" --run-dir "$dir" --transport shm \
		>>"$dir/dnpd-$1.log" 2>&1 &
}
answers() { "$ctl" --socket "$dir/node-0.sock" stats >/dev/null 2>&1; }
gone() { ! kill -0 "$1" 2>/dev/null; } # PID

start 0
p0=$!
pids="$pids $p0"
start 1
p1=$!
pids="$pids $p1"
wait_links_up 20 0 1

# A second node 0: refused, says who runs, touches nothing of the live one.
"$dnpd" --torus 2x1x1 --coord 0,0,0 --run-dir "$dir" --transport shm \
	>"$dir/dup.log" 2>&1 &
dup=$!
if ! wait_for 10 gone "$dup"; then
	kill -9 "$dup" 2>/dev/null
	fail "the second node-0 daemon kept running"
fi
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
# its socket file is the killed one's until the new daemon replaces it
wait_for 20 answers || fail "the restarted node 0 does not answer"
[ -e "$dir/node-0.up" ] && fail "the restarted node 0 left its predecessor's stale node-0.up"
[ "$(cat "$dir/node-0.lock")" = "$p0" ] || fail "node-0.lock does not hold the new pid $p0"
echo "PASS: duplicate refused with the live daemon's files intact; stale .up removed at restart"
exit 0
