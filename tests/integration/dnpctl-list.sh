#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# dnpctl list: a 2x1x1 shm torus started by dnp-run (its run directory in a
# private $XDG_RUNTIME_DIR, where dnp-run puts it) is found without being
# named: `dnpctl list --json` parses and names both nodes with their torus,
# transport, link states and pids (each pid a dnpd). A socket nobody listens
# on and one whose listener never answers are listed as stale, within the
# list's timeouts; the table names both nodes; an empty directory lists none.
#   dnpctl-list.sh BUILD
set -u
build=$(cd "$1" && pwd)
dnpd=$build/dnp-core/dnpd/dnpd
ctl=$build/dnp-core/dnpd/dnpctl
run=$build/apps/dnp-run
. "$(dirname "$0")/lib.sh"
need_built "$dnpd" "$ctl" "$run"
command -v python3 >/dev/null || { echo "SKIP: no python3 to check the JSON"; exit 77; }
fail() {
	echo "FAIL: $*"
	exit 1
}
run_dir "$(mktemp -d)"
export XDG_RUNTIME_DIR=$dir
unset DNP_SOCKET
on_exit() {
	[ -n "${runpid:-}" ] && kill "$runpid" 2>/dev/null && wait "$runpid" 2>/dev/null
	[ -n "${hung:-}" ] && kill "$hung" 2>/dev/null
}
"$run" --torus 2x1x1 --dnpd "$dnpd" -- sleep 60 >"$dir/run.log" 2>&1 &
runpid=$!
up() { ls "$dir"/dnp-run.*/node-0.up "$dir"/dnp-run.*/node-1.up >/dev/null 2>&1; }
wait_for 30 up || { cat "$dir/run.log"; fail "the torus never came up"; }
rd=$(echo "$dir"/dnp-run.*)

timeout 20 "$ctl" list --json >"$dir/list.json" || fail "dnpctl list --json"
python3 - "$dir/list.json" "$rd" <<'PY' || { cat "$dir/list.json"; fail "dnpctl list --json"; }
import json, sys
d = json.load(open(sys.argv[1]))
rd = sys.argv[2]
mine = {e["node"]: e for e in d["daemons"] if e["socket"].startswith(rd + "/")}
assert sorted(mine) == [0, 1], mine
for nid, e in mine.items():
    assert e["socket"] == "%s/node-%d.sock" % (rd, nid), e
    assert e["coord"] == [nid, 0, 0] and e["torus"] == [2, 1, 1], e
    assert e["transport"] == "shm" and e["uptime_ms"] >= 0, e
    assert e["links"]["X+"] == "UP" and e["links"]["X-"] == "UP", e["links"]
    assert all(e["links"][k] is None for k in ("Y+", "Y-", "Z+", "Z-")), e["links"]
    cmd = open("/proc/%d/cmdline" % e["pid"], "rb").read().split(b"\0")
    assert cmd[0].endswith(b"/dnpd"), cmd
assert d["stale"] == [], d["stale"]
print("list --json: nodes", sorted(mine), "pids", [mine[n]["pid"] for n in sorted(mine)])
PY
"$ctl" list >"$dir/list.txt" || fail "dnpctl list"
for id in 0 1; do
	grep -q "^$id .*(${id},0,0) *2x1x1 *shm .*X+ UP X- UP.*$rd/node-$id.sock\$" "$dir/list.txt" ||
		{ cat "$dir/list.txt"; fail "the table does not show node $id"; }
done

# Stale sockets: one bound and abandoned, one listening but never answering.
mkdir "$dir/other"
python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()' "$dir/other/node-7.sock"
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8); time.sleep(60)' \
	"$dir/other/node-8.sock" &
hung=$!
wait_for 10 test -S "$dir/other/node-8.sock" || fail "the silent listener did not start"
timeout 20 "$ctl" list --json "$dir/other" >"$dir/stale.json" || fail "dnpctl list DIR hung or failed"
python3 - "$dir/stale.json" "$dir/other" <<'PY' || { cat "$dir/stale.json"; fail "stale sockets"; }
import json, sys
d = json.load(open(sys.argv[1]))
o = sys.argv[2]
assert d["daemons"] == [], d
st = {e["socket"]: e["error"] for e in d["stale"]}
assert set(st) == {o + "/node-7.sock", o + "/node-8.sock"}, st
assert "refused" in st[o + "/node-7.sock"].lower(), st
assert "timed out" in st[o + "/node-8.sock"].lower(), st
print("stale:", st)
PY
"$ctl" list "$dir/other" | grep -q "^stale $dir/other/node-8.sock: " || fail "the table hides the stale socket"
mkdir "$dir/empty"
[ "$("$ctl" list --json "$dir/empty")" = '{"daemons": [],
 "stale": []}' ] || fail "an empty directory should list no daemon"
"$ctl" list --all >/dev/null 2>&1
[ $? = 2 ] || fail "list --all should be a usage error"
echo "dnpctl-list: ok"
