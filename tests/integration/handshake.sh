#!/bin/sh
# SPDX-License-Identifier: MIT
# The link handshake refuses a neighbour whose settings differ
# (docs/protocol.md, "The link handshake"): on a 2x1x1 torus (shm or udp),
#   - node 0 started with --vcs 2 and node 1 with --vcs 4: both daemons log,
#     once per link, "handshake ... refused: vcs here N peer M" with their own
#     value first; neither link comes UP, `dnpctl stats` shows the wiring line
#     "REFUSED: vcs ..." on both nodes, and the refusal is logged once per
#     link, not per frame, while the probes go on;
#   - node 0 restarted with --vcs 4: both links come UP on both nodes.
# usage: handshake.sh BUILD_DIR shm|udp
# Exit: 0 pass, 1 fail, 77 skip (daemon not built).
set -u
build=$1
tr=$2
dnpd=$build/dnp-core/dnpd/dnpd
ctl=$build/dnp-core/dnpd/dnpctl

. "$(dirname "$0")/lib.sh"
need_built "$dnpd" "$ctl"

run_dir /dev/shm/dnp-handshake-$$
base=$(port_base)

fail() {
	echo "FAIL: $*"
	for f in "$dir"/dnpd-*.log; do
		[ -e "$f" ] && { echo "--- $f"; tail -n 15 "$f"; }
	done
	exit 1
}

start_node() { # ID VCS
	"$dnpd" --torus 2x1x1 --coord "$1,0,0" --run-dir "$dir" --transport "$tr" \
		--udp-base-port "$base" --vcs "$2" >>"$dir/dnpd-$1.log" 2>&1 &
	eval "pid$1=$!"
	pids="$pids $!"
}

refusals() { grep -c "handshake with .* refused: vcs here $2 peer $3" "$dir/dnpd-$1.log"; }
logged() { [ "$(refusals "$1" "$2" "$3")" -ge 2 ]; } # ID HERE PEER: both links said it

start_node 0 2
start_node 1 4
wait_for 15 logged 0 2 4 || fail "node 0 did not log the refusal of both links (vcs here 2 peer 4)"
wait_for 15 logged 1 4 2 || fail "node 1 did not log the refusal of both links (vcs here 4 peer 2)"
sleep 1 # many more probes are refused meanwhile: the log must not grow with them
for n in "0 2 4" "1 4 2"; do
	set -- $n
	c=$(refusals "$1" "$2" "$3")
	[ "$c" -eq 2 ] || fail "node $1 logged the refusal $c times (once per link expected)"
	s=$(node_stats "$1")
	echo "$s" | grep -q "^link X[+-] state UP" && fail "node $1 has a link UP with mismatched --vcs"
	[ "$(echo "$s" | grep -c "^wiring X[+-] .* REFUSED: vcs here $2 peer $3")" -eq 2 ] ||
		fail "node $1 stats do not show both links REFUSED: $(echo "$s" | grep '^wiring')"
done
[ -e "$dir/node-0.up" ] && fail "node 0 reports its links up"
[ -e "$dir/node-1.up" ] && fail "node 1 reports its links up"
echo "refused on both sides: $(grep -m1 'handshake with' "$dir/dnpd-0.log")"
echo "                       $(grep -m1 'handshake with' "$dir/dnpd-1.log")"

# Node 0 restarted with the right value: the probes that went on bring it UP.
kill "$pid0"
wait "$pid0" 2>/dev/null
start_node 0 4
wait_links_up 20 0 1
for id in 0 1; do
	[ "$(node_stats "$id" | grep -c '^link X[+-] state UP')" -eq 2 ] ||
		fail "node $id: not both links UP after the restart"
	node_stats "$id" | grep -q "REFUSED" && fail "node $id still shows a refusal once UP"
done
echo "PASS: --vcs 2 vs 4 refused and named on both nodes ($tr); UP once node 0 runs --vcs 4"
exit 0
