#!/bin/sh
# SPDX-License-Identifier: MIT
# Shared memory that shrinks under the daemon (docs/dnpd.md, "Shared memory
# that shrinks"): on a 2x1x1 shm torus an application (hostile_truncate)
# opens a session on node 0 by hand and truncates to 0 bytes
#   - its session memfd and heap memfd: sealed, ftruncate fails with EPERM;
#   - node 0's bell file (the descriptor the handshake gave it): allowed,
#     and the next access of that bell by node 0 (its own) or node 1 (its
#     links ring it) would be SIGBUS; the guard gives zero pages, and the
#     daemon that faulted logs the event, grows the file back and maps it
#     again (the other then finds the file whole);
# and holds the session open a while. Both daemons must stay up, node 0's
# logs must say what happened, the bell file must be a page again, and a
# ping-pong between the two nodes must then pass.
# usage: hostile-truncate.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (not built).
set -u
build=$1
. "$(dirname "$0")/lib.sh"
dnp_tools "$build"
hostile=$build/tests/integration/hostile_truncate
pingpong=$build/apps/dnp_pingpong
need_built "$dnpd" "$ctl" "$hostile" "$pingpong"
run_dir /dev/shm/dnp-hostile-$$

fail() {
	fail_logs "$@"
}
start() { # ID -> $!
	"$dnpd" --torus 2x1x1 --coord "$1,0,0" --run-dir "$dir" --transport shm \
		>>"$dir/dnpd-$1.log" 2>&1 &
}
alive() { kill -0 "$1" 2>/dev/null; }
logged() { cat "$dir"/dnpd-*.log | grep -q "$1"; }

start 0
p0=$!
pids="$pids $p0"
start 1
p1=$!
pids="$pids $p1"
wait_links_up 20 0 1

timeout 30 "$hostile" "$dir/node-0.sock" 1500 >"$dir/hostile.out" 2>&1 ||
	fail "hostile_truncate found no session: $(cat "$dir/hostile.out")"
cat "$dir/hostile.out"
grep -q "^truncate session: Operation not permitted" "$dir/hostile.out" ||
	fail "the session memfd is not sealed against shrinking"
grep -q "^truncate heap: Operation not permitted" "$dir/hostile.out" ||
	fail "the heap memfd is not sealed against shrinking"
grep -q "^truncate bell: ok" "$dir/hostile.out" || fail "the bell file was not truncated"
grep -q "^held" "$dir/hostile.out" || fail "hostile_truncate did not hold its session"

alive "$p0" || fail "node 0 died (SIGBUS?) after its bell file was truncated"
alive "$p1" || fail "node 1 died after node 0's bell file was truncated"
# Whoever touches the bell first faults and grows the file back: node 0 (its
# own bell) or node 1 (the bell its links ring); the other may see no fault.
wait_for 10 logged "node-0.bell truncated.*: mapped again" ||
	fail "no daemon logged the truncated bell of node 0"
grep "shrank\|truncated" "$dir"/dnpd-*.log
[ "$(stat -c %s "$dir/node-0.bell")" -ge 4096 ] || fail "node 0's bell file was not grown back"

# Both daemons still serve: a ping-pong across the link (ports of the same number).
for x in 0 1; do
	DNP_SOCKET=$dir/node-$x.sock timeout 60 "$pingpong" --sizes 8,4096 --iters 2000 --csv \
		>"$dir/pp-$x.out" 2>&1 &
	eval "pp$x=\$!"
	pids="$pids $!"
done
wait "$pp0" || fail "the ping-pong on node 0 failed after the truncation"
wait "$pp1" || fail "the ping-pong on node 1 failed after the truncation"
alive "$p0" && alive "$p1" || fail "a daemon died during the ping-pong"
node_stats 0 | grep -q "^link X+ state UP" || fail "node 0's link is no longer UP"
echo "PASS: sealed memfds refused the truncation; the truncated bell was caught, logged and mapped again; both daemons serve"
exit 0
