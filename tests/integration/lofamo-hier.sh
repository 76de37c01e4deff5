#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A hierarchy of supervisors (docs/lofamo.md, "A hierarchy of supervisors"):
# 64 simulated nodes (dnp-svc-load, a 4x4x4 torus) report to 4 group
# supervisors (one per Z plane, 16 nodes each) that report to one top.
# Through `dnpctl status --json` against the top:
#   1. all 64 nodes healthy, 4 groups ok;
#   2. node 5, stopped by the generator, silent, the others healthy;
#   3. the supervisor of nodes 48-63 killed: its group silent, its 16 nodes
#      silent (never healthy on stale news), every other node as before.
# No daemon. Bounded: each wait is at most 10 s of looks.
#   lofamo-hier.sh BUILD [DNP-SVC-LOAD]
set -euo pipefail
build=$(cd "$1" && pwd)
command -v python3 >/dev/null || { echo "SKIP: no python3 to read the JSON"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
sup="$build/lofamo/dnp-supervisor"
load=${2:-$build/lofamo/dnp-svc-load}
# Each supervisor's loopback UDP port is picked and bound by the kernel and
# held from the pick on (udp_listen_free): no other test can take it between.
. "$(dirname "$0")/lib.sh"
udp_listen_free "$tmp/top.port" "$sup" --torus 4x4x4 --log "$tmp/top.log" &
pids+=($!)
sup_pids=($!)
top=$(wait_port "$tmp/top.port" 10) || { echo "FAIL: the top supervisor got no port"; exit 1; }
gports=()
gpid=()
for g in 0 1 2 3; do
	udp_listen_free "$tmp/group$g.port" "$sup" --torus 4x4x4 --group "$((g * 16))-$((g * 16 + 15))" \
		--upstream "127.0.0.1:$top" --log "$tmp/group$g.log" &
	pids+=($!)
	gpid+=($!)
	sup_pids+=($!)
done
for g in 0 1 2 3; do
	gp=$(wait_port "$tmp/group$g.port" 10) || { echo "FAIL: group supervisor $g got no port"; exit 1; }
	gports+=("$gp")
done
read -r g0 g1 g2 g3 <<<"${gports[*]}"
"$load" --torus 4x4x4 --group-size 16 --duration 25000 \
	--supervisor "127.0.0.1:$g0,127.0.0.1:$g1,127.0.0.1:$g2,127.0.0.1:$g3" \
	--stop-node 5 --stop-at 3000 >"$tmp/load.out" &
pids+=($!)

# look_for NAME PYTHON-CONDITION: looks at the top's picture (d) every 0.2 s, 50 times.
look_for() {
	local name=$1 cond=$2 p
	for _ in $(seq 50); do
		for p in "${sup_pids[@]}"; do
			kill -0 "$p" 2>/dev/null || { echo "FAIL: supervisor $p exited before: $name"; tail -n 5 "$tmp"/*.log; exit 1; }
		done
		if "$build/dnp-core/dnpd/dnpctl" --supervisor "127.0.0.1:$top" status --json \
			>"$tmp/pic.json" 2>/dev/null &&
			python3 - "$tmp/pic.json" "$cond" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = {x["id"]: x for x in d["nodes"]}
ok = lambda i: n[i]["host"] == "ok" and n[i]["dnp"] == "ok"
g = {x["first"]: x["state"] for x in d.get("groups", [])}
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
		then
			echo "ok: $name"
			return 0
		fi
		sleep 0.2
	done
	echo "FAIL: $name; the top's picture:"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print({k: d[k] for k in ("healthy", "groups") if k in d}); print([(x["id"], x["host"], x["dnp"], x["path"]) for x in d["nodes"] if x["host"] != "ok"])' "$tmp/pic.json" || true
	tail -n 20 "$tmp/top.log"
	exit 1
}

look_for "64 nodes healthy in 4 groups before the fault" \
	'all(ok(i) for i in range(64)) and g == {0: "ok", 16: "ok", 32: "ok", 48: "ok"}'
look_for "node 5, stopped, silent at the top; the other 63 healthy" \
	'n[5]["host"] == "silent" and all(ok(i) for i in range(64) if i != 5)'
kill "${gpid[3]}"
sup_pids=("${sup_pids[@]:0:4}") # the top and groups 0-2 must live on
look_for "group 48-63 killed: silent, its nodes silent; the rest unchanged" \
	'g[48] == "silent" and all(n[i]["host"] == "silent" and not ok(i) for i in range(48, 64)) and all(ok(i) for i in range(48) if i != 5) and n[5]["host"] == "silent"'
grep -q "group 48-63 silent" "$tmp/top.log" ||
	{ echo "FAIL: the top's log does not say the group is silent"; exit 1; }
grep -q "node 5 host silent (silence)" "$tmp/top.log" ||
	{ echo "FAIL: the top's log does not say node 5 is silent"; exit 1; }
echo "PASS: the top's picture follows the groups, a stopped node and a dead group supervisor"
