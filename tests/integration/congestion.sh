#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Congestion management on real daemons (docs/protocol.md, "Congestion marks"):
# a 2x2x1 shm torus of daemons started with --congestion ecn runs dnp_alltoall
# on every node (every byte verified); each daemon's `dnpctl stats` then has a
# "congestion mode ecn" line, which `stats --json` turns into an object (nothing
# left in "other"); a daemon without the option prints no such line, and a
# value dnpd does not know is refused with a clear message.
#   congestion.sh BUILD
set -eu
build=$(cd "$1" && pwd)
. "$(dirname "$0")/lib.sh"
dnp_tools "$build"
need_built "$dnpd" "$ctl" "$a2a"
command -v python3 >/dev/null || skip "no python3 to check the JSON"
fail() { fail_logs "$*"; }
run_dir "$(mktemp -d)"

set +e
"$dnpd" --torus 2x1x1 --coord 0,0,0 --run-dir "$dir" --congestion qcn >"$dir/bad.out" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] || fail "dnpd took --congestion qcn"
grep -q "bad value for --congestion: 'qcn'" "$dir/bad.out" || fail "no clear refusal: $(cat "$dir/bad.out")"

ids="0 1 2 3"
for id in $ids; do
	"$dnpd" --torus 2x2x1 --coord $((id % 2)),$((id / 2)),0 --run-dir "$dir" --transport shm \
		--congestion ecn >"$dir/dnpd-$id.log" 2>&1 &
	pids="$pids $!"
done
wait_links_up 20 $ids
alltoall_on ecn "$ids"
for id in $ids; do
	node_stats "$id" >"$dir/stats-$id.txt"
	grep -Eq '^congestion mode ecn marked [0-9]+ echoes [0-9]+ cuts [0-9]+ held [0-9]+ bypassed [0-9]+$' \
		"$dir/stats-$id.txt" || fail "node $id: no congestion line in dnpctl stats"
done
"$ctl" --socket "$dir/node-0.sock" stats --json >"$dir/stats.json" || fail "dnpctl stats --json"
python3 - "$dir/stats.json" <<'PY' || fail "the JSON has no congestion object"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["congestion"]
assert c["mode"] == "ecn", c
assert all(isinstance(c[k], int) for k in ("marked", "echoes", "cuts", "held", "bypassed")), c
assert d["other"] == [], d["other"]
PY
mkdir -p "$dir/off"
"$dnpd" --torus 1x1x1 --coord 0,0,0 --run-dir "$dir/off" --transport shm >"$dir/dnpd-off.log" 2>&1 &
pids="$pids $!"
wait_for 20 test -S "$dir/off/node-0.sock" || fail "the daemon without --congestion did not start"
"$ctl" --socket "$dir/off/node-0.sock" stats >"$dir/stats-off.txt" || fail "dnpctl stats (off)"
! grep -q '^congestion' "$dir/stats-off.txt" || fail "a daemon without --congestion prints a congestion line"
echo "congestion: 4 daemons with ecn ran an all-to-all; $(grep -h '^congestion' "$dir"/stats-*.txt | awk '{s += $5} END {print s}') packets marked"
