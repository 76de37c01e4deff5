#!/bin/sh
# SPDX-License-Identifier: MIT
# Rejoin drill: a daemon killed with kill -9 under traffic and started again
# with the same arguments rejoins the running torus, nobody else restarts.
# 4x1x1 ring of real dnpd daemons (shm or udp); node 0 ping-pongs with node 2,
# two hops away, through node 1 or node 3 (whichever dimension order picks:
# the relay is found from its pkts_forwarded). Then
#   - a long ping-pong runs while the relay's dnpd is killed with SIGKILL;
#   - the relay is started again with the same arguments: its links come back
#     (its .up file appears; so do the neighbours' again), the neighbours'
#     `dnpctl stats` show the break and the new link epoch;
#   - a new ping-pong 0 <-> 2 passes, and the restarted relay forwarded its
#     packets (its counters start from zero: the traffic went through it).
# With BENCH_OUT=FILE it appends "transport restart_to_up_ms first_put_ms"
# (time from the restart to the relay's links all UP, and to the end of the
# first 8-byte round trip through it) for bench/rejoin.sh.
# usage: rejoin.sh BUILD_DIR shm|udp|memif   (memif: DPDK memif ports between
# the daemons of this host)
# Exit: 0 pass, 1 fail, 77 skip (daemon or apps not built).
set -u
build=$1
tr=$2

. "$(dirname "$0")/lib.sh"
dnp_tools "$build"
need_built "$dnpd" "$ctl" "$pp"

run_dir /dev/shm/selfheal-rejoin-$$
base=$(port_base)
bgpid=""
on_exit() { [ -n "$bgpid" ] && kill "$bgpid" 2>/dev/null; }

now_ms() { date +%s%3N; }

if [ "$tr" = memif ]; then
	if [ "${DNP_HAVE_DPDK:-1}" != 1 ]; then
		echo "SKIP: this build has no DPDK (meson found no libdpdk)"
		exit 77
	fi
	set -- --transport dpdk --dpdk-links memif
else
	set -- --transport "$tr"
fi
start_node() { # ID
	id=$1; shift; "$dnpd" --torus 4x1x1 --coord "$id,0,0" --run-dir "$dir" "$@" \
		--udp-base-port "$base" >>"$dir/dnpd-$id.log" 2>&1 &
	eval "pid$id=$!"
	pids="$pids $!"
}

wait_up() { wait_for "$2" test -e "$dir/node-$1.up"; } # ID SECONDS

stat_of() { # ID FIELD: first value of FIELD on the engine line
	"$ctl" --socket "$dir/node-$1.sock" stats | awk -v f="$2" '
		$1 == "engine" { for (i = 2; i < NF; i++) if ($i == f) { print $(i + 1); exit } }'
}

pingpong() { # ITERS SIZES [background]
	DNP_SOCKET=$dir/node-2.sock "$pp" --peer 2,0,0 --sizes "$2" --iters "$1" \
		>"$dir/pp-b.out" 2>&1 &
	b=$!
	DNP_SOCKET=$dir/node-0.sock "$pp" --peer 2,0,0 --sizes "$2" --iters "$1" \
		>"$dir/pp-a.out" 2>&1
	ra=$?
	wait "$b"
	rb=$?
	[ $ra -eq 0 ] && [ $rb -eq 0 ]
}

fail() {
	echo "FAIL: $*"
	for f in "$dir"/dnpd-*.log "$dir"/pp-*.out; do
		[ -e "$f" ] && { echo "--- $f"; tail -n 15 "$f"; }
	done
	exit 1
}

DNP_APP_TIMEOUT=20
export DNP_APP_TIMEOUT
for id in 0 1 2 3; do start_node $id "$@"; done
for id in 0 1 2 3; do wait_up $id 20 || fail "node $id links never came UP"; done
pingpong 50 8,4096 || fail "first ping-pong 0 <-> 2"
f1=$(stat_of 1 pkts_forwarded)
f3=$(stat_of 3 pkts_forwarded)
if [ "${f1:-0}" -gt 0 ]; then relay=1; else relay=3; fi
[ "$(stat_of $relay pkts_forwarded)" -gt 0 ] || fail "no relay forwarded (1: $f1, 3: $f3)"
echo "relay of 0 <-> 2 is node $relay"

# Traffic through the relay while it is killed.
DNP_APP_TIMEOUT=5 DNP_SOCKET=$dir/node-2.sock "$pp" --peer 2,0,0 --sizes 4096 \
	--iters 100000000 >/dev/null 2>&1 &
bgpid=$!
DNP_APP_TIMEOUT=5 DNP_SOCKET=$dir/node-0.sock "$pp" --peer 2,0,0 --sizes 4096 \
	--iters 100000000 >"$dir/pp-bg.out" 2>&1 &
bgpid="$bgpid $!"
sleep 0.5
eval "victim=\$pid$relay"
echo "+ kill -9 $victim (dnpd of node $relay)"
kill -9 "$victim"
wait "$victim" 2>/dev/null
sleep 0.2
rm -f "$dir/node-$relay.up" # left by the killed daemon (the new one would remove it too)
t0=$(now_ms)
start_node $relay "$@"
wait_up $relay 30 || fail "restarted node $relay never had all links UP"
t_up=$(now_ms)
for id in 0 2; do wait_up $id 30 || fail "node $id links never came back UP"; done
for p in $bgpid; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
bgpid=""
pingpong 1 8 || fail "first ping-pong through the restarted relay"
t_put=$(now_ms)
pingpong 50 8,4096,65536 || fail "ping-pong 0 <-> 2 after the rejoin"
fw=$(stat_of $relay pkts_forwarded)
[ "${fw:-0}" -gt 0 ] || fail "the restarted relay forwarded nothing"
for id in 0 2; do
	st=$("$ctl" --socket "$dir/node-$id.sock" stats)
	echo "$st" | grep -E '^link [XY][+-] (state|epoch)' | sed "s/^/node $id: /"
	echo "$st" | grep -Eq '^link X[+-] epoch ([2-9]|[1-9][0-9]+) .* breaks [1-9]' ||
		fail "node $id shows no link break and new epoch"
	echo "$st" | grep -q 'state BROKEN' && fail "node $id still has a BROKEN link"
done
echo "restart -> all links UP: $((t_up - t0)) ms; -> first round trip through it: $((t_put - t0)) ms"
[ -n "${BENCH_OUT:-}" ] && echo "$tr $((t_up - t0)) $((t_put - t0))" >>"$BENCH_OUT"
echo "PASS: $tr-rejoin"
exit 0
