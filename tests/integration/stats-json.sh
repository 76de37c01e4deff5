#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# dnpctl stats --json: a 2x1x1 shm torus of two daemons (one with an
# impairment, so that every kind of line is in its report), and the JSON of
# node 0's report checked field by field against the text report: it parses,
# names the node, the torus, both links with their VCs, buffer-credit,
# impairment and transport counters, and leaves nothing unread ("other"
# empty). A flag stats does not take is refused with exit 2.
#
# Buffer credits on real daemons (docs/protocol.md, "Buffer credits"): both
# daemons run with --rx-bufs 2 and a PUT ping-pong of 16 KiB (4 frames of
# 4 KiB on one VC) goes both ways first, so a sender must wait for buffer
# credit: buf_stalls > 0 on some link of each node, and rx_buf_overflow == 0
# on every link (a frame beyond the credit given would be a protocol bug).
# With tshark, node 1 captures (--pcap) and tools/wireshark/dnp.lua reads it:
# every hello offers 2 buffers per VC, no CREDIT frame more, and some CREDIT
# frame offers fewer (dnp.bufs below 2). Keep-alive credits every 100 ms, not
# 10, keep the capture short for tshark.
#   stats-json.sh BUILD
set -eu
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
dnp_tools "$build"
lua=$here/../../tools/wireshark/dnp.lua
need_built "$dnpd" "$ctl" "$pp"
command -v python3 >/dev/null || { echo "SKIP: no python3 to check the JSON"; exit 77; }
fail() {
	echo "FAIL: $*"
	exit 1
}
run_dir "$(mktemp -d)"
rx_bufs=2
cap=
command -v tshark >/dev/null 2>&1 && [ -r "$lua" ] && cap="--pcap $dir/node-1.pcapng"
for id in 0 1; do
	extra=$cap
	[ $id = 0 ] && extra="--impair loss=1%"
	# shellcheck disable=SC2086
	"$dnpd" --torus 2x1x1 --coord $id,0,0 --run-dir "$dir" --transport shm --rx-bufs $rx_bufs \
		--credit-period-us 100000 $extra >"$dir/dnpd-$id.log" 2>&1 &
	pids="$pids $!"
	d0=${d1:-}
	d1=$!
done
wait_links_up 20 0 1
export DNP_APP_TIMEOUT=40
DNP_SOCKET=$dir/node-1.sock timeout 60 "$pp" --verify --sizes 16384 --iters 2 >"$dir/pp-1.out" 2>&1 &
a1=$!
DNP_SOCKET=$dir/node-0.sock timeout 60 "$pp" --verify --sizes 16384 --iters 2 >"$dir/pp-0.out" 2>&1 ||
	fail "dnp_pingpong of 16 KiB on node 0: $(tail -3 "$dir/pp-0.out")"
wait $a1 || fail "dnp_pingpong of 16 KiB on node 1: $(tail -3 "$dir/pp-1.out")"
"$ctl" --socket "$dir/node-1.sock" stats --json >"$dir/stats-1.json" || fail "node 1's stats --json"
"$ctl" --socket "$dir/node-0.sock" stats >"$dir/stats.txt" || fail "dnpctl stats"
"$ctl" --socket "$dir/node-0.sock" stats --json >"$dir/stats.json" || fail "dnpctl stats --json"
if [ -n "$cap" ]; then
	kill "$d1" # node 1's capture is flushed when it stops
	wait "$d1" || fail "dnpd 1 exited with an error"
	pids=$d0 # reaped: at exit, only node 0 is left to stop
fi
# the JSON against the text report, then the buffer credits of both nodes
python3 - "$dir/stats.json" "$dir/stats.txt" "$dir/stats-1.json" <<'PY' || fail "stats --json"
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
# buffer credits with --rx-bufs 2, both nodes
for node, path in enumerate((sys.argv[1], sys.argv[3])):
    links = json.load(open(path))["links"]
    stalls = {k: l["buf_stalls"] for k, l in links.items() if l}
    over = {k: l["rx_buf_overflow"] for k, l in links.items() if l}
    print("node %d: buf_stalls %s, rx_buf_overflow %s" % (node, stalls, over))
    assert sum(stalls.values()) > 0, "node %d never waited for a buffer credit" % node
    assert not any(over.values()), "node %d: frames beyond its buffer credit" % node
PY
set +e
"$ctl" --socket "$dir/node-0.sock" stats --log >/dev/null 2>"$dir/err"
rc=$?
set -e
[ $rc = 2 ] && grep -q 'does not take --log' "$dir/err" || fail "stats --log: exit $rc, $(cat "$dir/err")"
if [ -n "$cap" ]; then
	# node 1's capture: hello and CREDIT frames (kind 6)
	timeout 60 tshark -n -X lua_script:"$lua" -r "$dir/node-1.pcapng" -Y dnp.kind==6 \
		-T fields -E separator=/t -E occurrence=a -E aggregator=, \
		-e dnp.hello.version -e dnp.bufs >"$dir/credits.tsv" 2>"$dir/tshark.log" ||
		fail "tshark could not read node 1's capture: $(tail -3 "$dir/tshark.log")"
	awk -F '\t' -v max=$rx_bufs '
	$2 == "" { next }
	{ n = split($2, b, ",") }
	$1 != "" { for (v = 1; v <= n; v++) if (b[v] != max) { print "hello offers " $2; bad++ }
		hellos++; next }
	{ for (v = 1; v <= n; v++) { if (b[v] > max) { print "credit offers " $2; bad++ }
		if (b[v] < max) low++ } credits++ }
	END { printf "  node 1 capture: %d hellos, %d credits, %d counts below %d\n",
		hellos, credits, low, max
		exit bad > 0 || hellos < 2 || low < 1 }' "$dir/credits.tsv" ||
		fail "buffer credits in node 1's capture (dnp.bufs)"
else
	echo "  (no tshark: the capture half is skipped)"
fi
echo "PASS: dnpctl stats --json parses and matches the text report"
