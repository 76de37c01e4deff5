#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# LO|FA|MO fault drill (docs/lofamo.md): starts a torus with dnp-run (daemons,
# one dnp-hfm per node, the supervisor), waits for an all-healthy picture,
# injects one fault on the last node and measures the time until the
# supervisor's picture shows it, and the path the report took.
#
#   drill.sh BUILD SCENARIO [--torus XxYxZ] [--transport shm|udp] [--csv]
#            [--t-write MS] [--t-read MS] [--no-header]
#
# SCENARIO: kill-dnpd, kill-hfm, both, sensor, svcnet-cut, restart-hfm (the
# killed HFM is started again and the picture must heal), all; or soak (no
# fault for --soak SECONDS, default 60: false alarms are counted).
# Every node runs dnp-drill-traffic (PUTs to every other node); the drill
# also fails when a surviving node's command got no completion, or two.
# Exit 0 when every drill saw the expected picture and path within the time
# bound (3 x T_read plus the link timeout for inference), 1 otherwise.
set -euo pipefail

if [ "${1:-}" = "--inner" ]; then
	shift
	scen=$1 tw=$2 tr=$3 csv=$4 transport=$5 soak=$6
	dir=$(dirname "$DNP_SOCKET")
	# Every node: PUTs to every other node until drill.done (dnp-drill-traffic).
	"$DRILL_TRAFFIC" &
	tp=$!
	if [ "$DNP_NODE_ID" != 0 ]; then
		for _ in $(seq 1200); do [ -e "$dir/drill.done" ] && break; sleep 0.1; done
		wait $tp || true
		exit 0
	fi
	trap 'touch "$dir/drill.done"' EXIT
	dnpctl=$DNPCTL
	n=$DNP_NNODES
	v=$((n - 1))
	json() { "$dnpctl" status --json 2>/dev/null || true; }
	# 1. all healthy
	ok=0
	for _ in $(seq 300); do
		if json | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["healthy"]==len(d["nodes"]) else 1)' 2>/dev/null; then ok=1; break; fi
		sleep 0.05
	done
	if [ $ok != 1 ]; then echo "drill: the picture never became all-healthy"; "$dnpctl" status || true; exit 1; fi
	dpid=$(awk -v v=$v '$1=="dnpd" && $2==v {print $3}' "$dir/lofamo.pids")
	hpid=$(awk -v v=$v '$1=="hfm" && $2==v {print $3}' "$dir/lofamo.pids")
	t0=$(date +%s%3N)
	[ "$scen" = soak ] && v=-1
	case $scen in
	soak) sleep "$soak"; want= ; path= ;;
	kill-dnpd) kill -9 "$dpid"; want='dnp faulty'; path=service ;;
	kill-hfm|restart-hfm) kill -9 "$hpid"; want='host faulty'; path=relay ;;
	both) kill -9 "$dpid" "$hpid"; want='host dead'; path=inference ;;
	sensor) "$dnpctl" --socket "$dir/node-$v.sock" sensor temp 99000; want='sensor temp alarm'; path=service ;;
	svcnet-cut) kill -USR1 "$hpid"; want='hostdev svcnet alarm'; path=relay ;;
	*) echo "drill: unknown scenario $scen"; exit 2 ;;
	esac
	res=
	[ "$scen" = soak ] && res="0 -"
	for _ in $(seq 200); do
		[ -n "$res" ] && break
		res=$(json | python3 -c '
import json, sys
d = json.load(sys.stdin); v = int(sys.argv[1]); t0 = int(sys.argv[2])
for e in d["events"]:
    if e["node"] == v and e["what"] == sys.argv[3] and e["t_ms"] >= t0:
        print(e["t_ms"] - t0, e["path"]); break
' "$v" "$t0" "$want" 2>/dev/null || true)
		[ -n "$res" ] && break
		sleep 0.05
	done
	"$dnpctl" status | sed 's/^/    /' >&2 || true
	if [ -z "$res" ]; then
		echo "drill $scen: FAIL: no '$want' for node $v within 10 s"
		"$dnpctl" status --log | tail -20 >&2 || true
		exit 1
	fi
	set -- $res
	aw=$1 got=$2
	heal=
	if [ "$scen" = restart-hfm ]; then
		# A new host fault manager for the node: the picture must heal.
		sleep 0.3
		t1=$(date +%s%3N)
		"$DRILL_HFM" --regs "$dir/node-$v.lofamo" --node "$v" --supervisor "$DNP_SUPERVISOR" \
			--t-write "$tw" --t-read "$tr" 2>"$dir/hfm-$v.restart.log" &
		newh=$!
		for _ in $(seq 200); do
			heal=$(json | python3 -c '
import json, sys
d = json.load(sys.stdin); v = int(sys.argv[1]); t1 = int(sys.argv[2])
n = d["nodes"][v]
if n["host"] == "ok" and n["dnp"] == "ok":
    ev = [e for e in d["events"] if e["node"] == v and e["what"] == "host ok" and e["t_ms"] >= t1]
    print(ev[0]["t_ms"] - t1 if ev else "")' "$v" "$t1" 2>/dev/null || true)
			[ -n "$heal" ] && break
			sleep 0.05
		done
		kill "$newh" 2>/dev/null || true
		wait "$newh" 2>/dev/null || true
	fi
	# false alarms: fault events about nodes other than the victim and its links
	fa=$(json | python3 -c '
import json, sys
d = json.load(sys.stdin); v = int(sys.argv[1]); t0 = int(sys.argv[2])
# in a drill, the neighbours of the victim rightly report their links to it and its relays
ok_for_drill = ("link", "alarm link", "alarm relay")
bad = [e for e in d["events"] if e["node"] != v and e["t_ms"] >= t0 and
       (v < 0 or not e["what"].startswith(ok_for_drill)) and
       any(w in e["what"] for w in ("faulty", "dead", "silent", "alarm", "warning",
                                    "broken", "sick", "omission"))]
for e in bad[:10]:
    print("false alarm:", e, file=sys.stderr)
print(len(bad))' "$v" "$t0")
	bound=$((3 * tr))
	[ "$scen" = both ] && bound=$((3 * tr + ${DRILL_LINK_TIMEOUT_MS:-400}))
	# traffic: every command of the surviving nodes ended exactly once
	touch "$dir/drill.done"
	wait $tp || true
	tok=0 tfail=0 tunf=0 tdup=0 missing=0
	for id in $(seq 0 $((n - 1))); do
		[ "$id" = "$v" ] && case $scen in kill-dnpd|both) continue ;; esac
		f=$dir/traffic-$id.out
		for _ in $(seq 100); do [ -e "$f" ] && break; sleep 0.1; done
		if [ ! -e "$f" ]; then missing=$((missing + 1)); continue; fi
		read -r _ a _ b _ c _ d <"$f"
		tok=$((tok + a)) tfail=$((tfail + b)) tunf=$((tunf + c)) tdup=$((tdup + d))
	done
	verdict=PASS
	[ "$tok" -gt 0 ] || verdict="FAIL (no PUT completed)"
	[ "$missing" = 0 ] || verdict="FAIL ($missing traffic programs did not report)"
	[ "$tunf" = 0 ] || verdict="FAIL ($tunf commands without a completion)"
	[ "$tdup" = 0 ] || verdict="FAIL ($tdup duplicate completions)"
	[ "$scen" = soak ] || [ "$got" = "$path" ] || verdict="FAIL (path $got, want $path)"
	[ "$aw" -le $((bound * 3)) ] || verdict="FAIL (awareness $aw ms over the generous bound $((bound * 3)) ms)"
	[ "$fa" = 0 ] || verdict="FAIL ($fa false alarms)"
	[ "$scen" != restart-hfm ] || [ -n "$heal" ] || verdict="FAIL (the picture did not heal after the HFM restart)"
	if [ "$csv" = 1 ]; then
		echo "$scen,$transport,$tw,$tr,$aw,$got,$tok,$tfail,$tunf,$fa"
	else
		echo "drill $scen over $transport: awareness $aw ms (3 x T_read = $((3 * tr)) ms), path $got,${heal:+ healed $heal ms after the restart,} PUTs ok $tok failed $tfail unfinished $tunf, false alarms $fa: $verdict"
	fi
	[ "$verdict" = PASS ]
	exit
fi

build=$(cd "$1" && pwd); shift
scen=$1; shift
torus=2x2x2 transport=shm csv=0 tw=100 tr=250 header=1 soak=60
while [ $# -gt 0 ]; do
	case $1 in
	--torus) torus=$2; shift ;;
	--transport) transport=$2; shift ;;
	--csv) csv=1 ;;
	--t-write) tw=$2; shift ;;
	--t-read) tr=$2; shift ;;
	--no-header) header=0 ;;
	--soak) soak=$2; shift ;;
	*) echo "drill: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
scens=$scen
[ "$scen" = all ] && scens="kill-dnpd kill-hfm both sensor svcnet-cut restart-hfm"
[ "$csv" = 1 ] && [ $header = 1 ] &&
	echo "scenario,transport,t_write_ms,t_read_ms,awareness_ms,path,cmds_ok,cmds_failed,cmds_unfinished,false_alarms"
export DNPCTL=$build/dnp-core/dnpd/dnpctl
export DRILL_TRAFFIC=$build/lofamo/dnp-drill-traffic
export DRILL_HFM=$build/lofamo/dnp-hfm
export DRILL_LINK_TIMEOUT_MS=400
# A command whose completion died with the victim fails after this (-ETIMEDOUT);
# dnp-drill-traffic waits that long plus 2 s for the last completions.
export DRILL_CMD_TIMEOUT_MS=1500
rc=0
self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
for s in $scens; do
	out=$("$build/apps/dnp-run" --torus "$torus" --transport "$transport" --drill --timeout $((soak + 60)) \
		--dnpd-arg --credit-timeout-ms --dnpd-arg $DRILL_LINK_TIMEOUT_MS \
		--dnpd-arg --cmd-timeout-ms --dnpd-arg $DRILL_CMD_TIMEOUT_MS \
		--lofamo-arg --t-write --lofamo-arg "$tw" --lofamo-arg --t-read --lofamo-arg "$tr" \
		-- "$self" --inner "$s" "$tw" "$tr" "$csv" "$transport" "$soak" 2>/tmp/lofamo-drill.$$.err) || rc=1
	echo "$out" | sed -n 's/^\[0,0,0\] //p'
	[ $rc = 0 ] || cat /tmp/lofamo-drill.$$.err >&2
	rm -f /tmp/lofamo-drill.$$.err
done
exit $rc
