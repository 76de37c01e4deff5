#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The supervisor's picture of a 16x16x16 torus through dnpctl status: asked in
# pages and joined, it must be whole (valid JSON naming all 4096 nodes, and a
# map ending with the last node's line), where one datagram used to cut it at
# 60,000 bytes mid-token. No daemon: the supervisor alone, every node unknown.
#   status-big.sh BUILD
set -euo pipefail
build=$(cd "$1" && pwd)
command -v python3 >/dev/null || { echo "SKIP: no python3 to check the JSON"; exit 77; }
tmp=$(mktemp -d)
sup=
cleanup() {
	[ -n "$sup" ] && kill "$sup" 2>/dev/null && wait "$sup" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
# A loopback UDP port picked and bound by the kernel, held from the pick on
# (udp_listen_free): no other test can take it between.
. "$(dirname "$0")/lib.sh"
udp_listen_free "$tmp/sup.port" "$build/lofamo/dnp-supervisor" --torus 16x16x16 --log "$tmp/sup.log" &
sup=$!
port=$(wait_port "$tmp/sup.port" 10) || { echo "FAIL: the supervisor got no port"; exit 1; }
ctl() { "$build/dnp-core/dnpd/dnpctl" --supervisor "127.0.0.1:$port" status "$@"; }
for _ in $(seq 50); do ctl --log >/dev/null 2>&1 && break; sleep 0.1; done
ctl --json >"$tmp/pic.json"
python3 - "$tmp/pic.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["torus"] == [16, 16, 16], d["torus"]
assert len(d["nodes"]) == 4096, len(d["nodes"])
assert [n["id"] for n in d["nodes"]] == list(range(4096)), "node ids out of order"
print("status-big: JSON picture of %d nodes, %d bytes" % (len(d["nodes"]), len(open(sys.argv[1], "rb").read())))
PY
ctl >"$tmp/map.txt"
tail -n 1 "$tmp/map.txt" | grep -q '^node 4095: host unknown' ||
	{ echo "FAIL: the map does not end with node 4095's line"; tail -n 3 "$tmp/map.txt"; exit 1; }
echo "PASS: dnpctl status printed the whole 16x16x16 picture (JSON and map)"
