#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# LO|FA|MO fault drill (docs/lofamo.md): starts a torus with dnp-run (daemons,
# one dnp-hfm per node, the supervisor), waits for an all-healthy picture,
# injects one fault on the last node and measures the time until the
# supervisor's picture shows it, and the path the report took.
#
#   drill.sh BUILD SCENARIO [--torus XxYxZ] [--transport shm|udp|dpdk] [--csv]
#            [--t-write MS] [--t-read MS] [--no-header] [--lofamo-groups N]
#
# SCENARIO: kill-dnpd, kill-hfm, both, sensor, svcnet-cut, restart-hfm (the
# killed HFM is started again and the picture must heal), restart (the killed
# dnpd is started again by dnp-run, SIGUSR1, once the supervisor knows: its
# links come back UP, it forwards traffic again and the picture heals),
# link-down (the neighbour's frames to the victim all lost, `dnpctl impair
# loss=100%`, then restored), sick-link (5% of them corrupted, $DRILL_CORRUPT,
# far over the CRC threshold of 100 ppm, then restored), all; or soak (no fault for --soak SECONDS,
# default 60: false alarms are counted).
# --lofamo-groups N: the HFMs report to N group supervisors, which report to
# the top one the drill watches (dnp-run --lofamo-groups; docs/lofamo.md).
# dpdk: dnp-run builds the namespace testbed (tests/testbed/netns.sh: one
# namespace per node, af_packet on veth pairs, and a service network of its
# own: the supervisor in PREFIX-svc, each HFM in its node's namespace behind a
# veth "svc"). There link-down takes the victim's X+ veth down (ip link set
# dev d<id>-xp down, then up: both ends lose carrier, as when a cable is
# pulled) instead of impairing the neighbour's frames, and svcnet-cut takes
# the victim's "svc" veth down instead of signalling its HFM. Needs root and a
# DPDK build (exit 77 otherwise).
# Every node runs dnp-drill-traffic (PUTs to every other node); the drill
# also fails when a surviving node's command got no completion, or two.
# Exit 0 when every drill saw the expected picture and path within the time
# bound (3 x T_read plus the link timeout for inference), 1 otherwise.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [ "${1:-}" = "--inner" ]; then
	shift
	# Node 0 conducts the drill (drill_inner.py, one process for every look);
	# every other node runs its traffic until node 0 says drill.done.
	if [ "$DNP_NODE_ID" = 0 ]; then
		exec python3 "$(dirname "${BASH_SOURCE[0]}")/drill_inner.py" "$@"
	fi
	dir=$(dirname "$DNP_SOCKET")
	"$DRILL_TRAFFIC" &
	tp=$!
	for _ in $(seq 1800); do [ -e "$dir/drill.done" ] && break; sleep 0.1; done
	wait $tp || true
	exit 0
fi

build=$(cd "$1" && pwd); shift
scen=$1; shift
torus=2x2x2 transport=shm csv=0 tw=100 tr=250 header=1 soak=60 groups=()
while [ $# -gt 0 ]; do
	case $1 in
	--torus) torus=$2; shift ;;
	--transport) transport=$2; shift ;;
	--csv) csv=1 ;;
	--t-write) tw=$2; shift ;;
	--t-read) tr=$2; shift ;;
	--no-header) header=0 ;;
	--soak) soak=$2; shift ;;
	--lofamo-groups) groups=(--lofamo-groups "$2"); shift ;;
	*) echo "drill: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
scens=$scen
if [ "$transport" = dpdk ]; then
	need_dpdk_testbed
fi
[ "$scen" = all ] && scens="kill-dnpd kill-hfm both sensor svcnet-cut restart-hfm restart link-down sick-link"
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
err=$(mktemp /tmp/lofamo-drill.XXXXXX)
trap 'rm -f "$err"' EXIT
for s in $scens; do
	src=0
	out=$("$build/apps/dnp-run" --torus "$torus" --transport "$transport" --drill --timeout $((soak + 120)) \
		${groups[@]+"${groups[@]}"} \
		--dnpd-arg --credit-timeout-ms --dnpd-arg $DRILL_LINK_TIMEOUT_MS \
		--dnpd-arg --cmd-timeout-ms --dnpd-arg $DRILL_CMD_TIMEOUT_MS \
		--lofamo-arg --t-write --lofamo-arg "$tw" --lofamo-arg --t-read --lofamo-arg "$tr" \
		-- "$self" --inner "$s" "$tw" "$tr" "$csv" "$transport" "$soak" 2>"$err") || src=1
	if [ $src = 1 ]; then
		rc=1
		# A failing drill: node 0's verdict after the run's output, then the
		# lines of stderr that name a fault, then its last lines (meson test
		# --print-errorlogs shows the last 100 lines of stdout and stderr).
		v=$(echo "$out" | sed -n 's/^\[0,0,0\] //p')
		[ -n "$v" ] || v="FAIL: dnp-run exited non-zero and node 0 printed no verdict"
		echo "--- drill $s over $transport: verdict" >&2
		echo "$v" >&2
		echo "--- stderr of the run, lines naming a fault" >&2
		grep -Ei 'fail|error|false alarm|timed out|not heal|never|traceback|unknown' "$err" |
			tail -n 25 >&2
		echo "--- stderr of the run, last lines" >&2
		tail -n 25 "$err" >&2
		# and once more on stdout, for ./dnp drill's saved output and the CSV
		echo "$v"
	else
		echo "$out" | sed -n 's/^\[0,0,0\] //p'
	fi
done
exit $rc
