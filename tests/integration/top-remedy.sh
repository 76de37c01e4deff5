#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The top-class latency remedies as daemon options (docs/routing.md,
# "Top-class latency"; docs/dnpd.md): dnpd refuses --low-payload and
# --top-reserve with arbitration off, a payload that is no multiple of 16 and
# a reserve its FIFO cannot hold, each with a clear message; dnp-run hands
# --arbitration strict --low-payload 256 --top-reserve 16 to every dnpd of a
# 2x1x1 shm torus, where dnp_alltoall in class 0 runs byte-exact, `dnpctl
# stats` has the "classes" line with both values (and `stats --json` its
# object), and the 100000-byte PUT goes in 256-byte packets (pkts_injected
# counts them: 4096-byte packets would make some 40 in all). The same run has
# --link-queue 16 (transport/linkq.h): refused with arbitration off or above
# 16 MiB; every hand-off to a link found it empty ("link DIR queue" lines).
#   top-remedy.sh BUILD
set -eu
build=$(cd "$1" && pwd)
. "$(dirname "$0")/lib.sh"
dnp_tools "$build"
run=$build/apps/dnp-run
need_built "$dnpd" "$ctl" "$a2a" "$run"
command -v python3 >/dev/null || skip "no python3 to check the JSON"
fail() { fail_logs "$*"; }
run_dir "$(mktemp -d)"

# refused: each case and the words its message must hold
refused() {
	local want=$1
	shift
	set +e
	timeout 20 "$dnpd" --torus 1x1x1 --coord 0,0,0 --run-dir "$dir/bad" "$@" >"$dir/bad.out" 2>&1
	local rc=$?
	set -e
	[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "dnpd $* was not refused (exit $rc)"
	grep -q -- "$want" "$dir/bad.out" || fail "dnpd $*: no clear refusal: $(cat "$dir/bad.out")"
}
mkdir -p "$dir/bad"
refused "need --arbitration strict or wrr" --low-payload 256
refused "need --arbitration strict or wrr" --top-reserve 16 --arbitration off
refused "a multiple of 16" --low-payload 100 --arbitration strict
refused "a multiple of 16" --low-payload 8192 --arbitration strict
refused "at most 16118 words" --top-reserve 16200 --arbitration strict
refused "need --arbitration strict or wrr" --link-queue 8192
refused "link-queue: 0 (off) .. 16777216 bytes" --link-queue 16777217 --arbitration strict
set +e
"$run" --torus 2x1x1 --low-payload big -- true >"$dir/bad.out" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q "bad --low-payload 'big'" "$dir/bad.out" ||
	fail "dnp-run took --low-payload big: $(cat "$dir/bad.out")"

cat >"$dir/node.sh" <<EOF
#!/usr/bin/env bash
set -eu
DNP_APP_TIMEOUT=60 "$a2a" --tc 0 --sizes 1,4096,100000 >"$dir/a2a-\$DNP_NODE_ID.out" 2>&1
"$ctl" --socket "\$DNP_SOCKET" stats >"$dir/stats-\$DNP_NODE_ID.txt"
"$ctl" --socket "\$DNP_SOCKET" stats --json >"$dir/stats-\$DNP_NODE_ID.json"
EOF
chmod +x "$dir/node.sh"
"$run" --torus 2x1x1 --transport shm --no-lofamo --timeout 120 --arbitration strict \
	--low-payload 256 --top-reserve 16 --link-queue 16 -- "$dir/node.sh" >"$dir/run.out" 2>&1 ||
	fail "dnp-run with the remedies: $(tail -n 20 "$dir/run.out")"
for id in 0 1; do
	grep -qx 'classes arbitration strict low_payload 256 top_reserve 16 link_queue 16' \
		"$dir/stats-$id.txt" ||
		fail "node $id: no 'classes ... top_reserve 16 link_queue 16' line in dnpctl stats"
	# --link-queue 16: frames went to a link only while it held under 16 bytes,
	# so no hand-off found a frame ahead (a link without the limit often does)
	awk '$1 == "link" && $3 == "queue" { n++; h += $9; if ($13 >= 16) bad = 1 }
		END { exit !(n == 2 && h > 0 && !bad) }' "$dir/stats-$id.txt" ||
		fail "node $id: the link queue limit did not hold: $(grep ' queue ' "$dir/stats-$id.txt")"
	inj=$(awk '$1 == "engine" { for (i = 2; i < NF; i++) if ($i == "pkts_injected") print $(i + 1) }' \
		"$dir/stats-$id.txt")
	[ "${inj:-0}" -ge 391 ] || fail "node $id: $inj packets injected, not cut to 256 bytes"
	grep -q ' rx_direct [0-9]' "$dir/stats-$id.txt" || fail "node $id: no rx_direct in stats"
done
python3 - "$dir/stats-0.json" <<'PY' || fail "the JSON has no classes object"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["classes"]
assert c == {"arbitration": "strict", "low_payload": 256, "top_reserve": 16,
             "link_queue": 16}, c
assert d["links"]["X+"]["queue"]["limit"] == 16, d["links"]["X+"]
assert isinstance(d["engine"]["rx_direct"], int), d["engine"]
assert d["other"] == [], d["other"]
PY
echo "top-remedy: dnpd refused 7 bad settings; 2 daemons with low_payload 256 top_reserve 16" \
	"link_queue 16" \
	"injected $(awk '$1 == "engine" { for (i = 2; i < NF; i++) if ($i == "pkts_injected") print $(i + 1) }' \
		"$dir/stats-0.txt") packets on node 0"
