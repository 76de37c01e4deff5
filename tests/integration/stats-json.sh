#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# dnpctl stats --json: a 2x1x1 shm torus of two daemons (one with an
# impairment, so that every kind of line is in its report), and the JSON of
# node 0's report checked field by field against the text report: it parses,
# names the node, the torus, both links with their VCs, buffer-credit,
# impairment and transport counters, and leaves nothing unread ("other"
# empty). A flag stats does not take is refused with exit 2.
#   stats-json.sh BUILD
set -eu
build=$(cd "$1" && pwd)
dnpd=$build/dnp-core/dnpd/dnpd
ctl=$build/dnp-core/dnpd/dnpctl
. "$(dirname "$0")/lib.sh"
need_built "$dnpd" "$ctl"
command -v python3 >/dev/null || { echo "SKIP: no python3 to check the JSON"; exit 77; }
fail() {
	echo "FAIL: $*"
	exit 1
}
run_dir "$(mktemp -d)"
for id in 0 1; do
	imp=
	[ $id = 0 ] && imp="--impair loss=1%"
	# shellcheck disable=SC2086
	"$dnpd" --torus 2x1x1 --coord $id,0,0 --run-dir "$dir" --transport shm $imp \
		>"$dir/dnpd-$id.log" 2>&1 &
	pids="$pids $!"
done
wait_links_up 20 0 1
"$ctl" --socket "$dir/node-0.sock" stats >"$dir/stats.txt" || fail "dnpctl stats"
"$ctl" --socket "$dir/node-0.sock" stats --json >"$dir/stats.json" || fail "dnpctl stats --json"
python3 - "$dir/stats.json" "$dir/stats.txt" <<'PY' || fail "the JSON does not match the report"
import json, sys
d = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read().split("\n")
assert d["node"]["id"] == 0 and d["node"]["coord"] == [0, 0, 0], d["node"]
assert d["node"]["torus"] == [2, 1, 1] and d["node"]["transport"] == "shm", d["node"]
for dirn in ("X+", "X-"):
    l = d["links"][dirn]
    assert l["state"] == "UP", (dirn, l["state"])
    assert [v["vc"] for v in l["vc"]] == list(range(len(l["vc"]))) and len(l["vc"]) >= 2
    assert isinstance(l["tx_frames"], int) and l["tx_frames"] > 0
    # buffer credits (docs/protocol.md): each counter beside the one it is part of
    for part, whole in (("buf_stalls", "credit_stalls"), ("rx_buf_overflow", "rx_overflow")):
        assert isinstance(l[part], int) and 0 <= l[part] <= l[whole], (dirn, part, l)
    assert "tx_frames" in l["transport"] and "dropped" in l["impair"]
    assert l["impair"]["spec"].startswith("dir=all,loss=1"), l["impair"]
    assert "wiring" in l
for dirn in ("Y+", "Y-", "Z+", "Z-"):
    assert d["links"][dirn] is None, dirn
for sec in ("engine", "routes", "bounds", "daemon"):
    line = next(t for t in text if t.startswith(sec + " ")).split()
    want = {line[i]: int(line[i + 1]) for i in range(1, len(line), 2)}
    assert set(want) == set(d[sec]), (sec, set(want) ^ set(d[sec]))
    if sec != "daemon":  # the loop's counters move between the two reports
        assert want == d[sec], (sec, want, d[sec])
assert d["files"]["lofamo"].endswith("node-0.lofamo"), d["files"]
assert d["other"] == [], d["other"]
print("stats-json: %d links, %d engine counters" % (2, len(d["engine"])))
PY
set +e
"$ctl" --socket "$dir/node-0.sock" stats --log >/dev/null 2>"$dir/err"
rc=$?
set -e
[ $rc = 2 ] && grep -q 'does not take --log' "$dir/err" || fail "stats --log: exit $rc, $(cat "$dir/err")"
echo "PASS: dnpctl stats --json parses and matches the text report"
