#!/bin/bash
# SPDX-License-Identifier: MIT
# guest.sh — runs inside the Soft-RoCE VM (tests/verbs/vm.sh): builds a torus
# of veth pairs with one rxe device on each end, starts one dnpd per node over
# the verbs transport and runs the scenarios.
#
#   guest.sh BUILD_DIR SCENARIO...
#
# Scenarios: pingpong (2x1x1, dnp_pingpong --verify), rejoin (2x1x1, node 1
# killed with SIGKILL and started again, then a verified ping-pong), rc (both
# again with RC QPs),
# alltoall (2x2x1, dnp_alltoall), cut (2x2x1: one link's veth pair down under
# a ping-pong that then detours), perftest (ib_send_lat, ib_write_lat,
# ib_write_bw and dnp_pingpong/dnp_bw on the same rxe devices; figures to
# /tmp/vmout/bench.txt, for bench/verbs.sh). Scenarios sharing a torus run on
# one set of daemons.
#
# The rxe devices: Linux 6.1's rxe sends and receives in the initial network
# namespace only, so every veth pair stays in it; link k of the torus is the
# pair (n<a>k, n<b>k) with 10.77.k.1 and 10.77.k.2, and accept_local lets a
# host take UDP from one of its own addresses arriving on another port.
set -u
build=$1
shift
dnpd=$build/dnp-core/dnpd/dnpd
ctl=$build/dnp-core/dnpd/dnpctl
pp=$build/apps/dnp_pingpong
a2a=$build/apps/dnp_alltoall
bw=$build/apps/dnp_bw
run=/tmp/dnp-verbs
out=/tmp/vmout
mkdir -p "$run"
pids=""
rc=0
IFACES=()

fail() {
	echo "FAIL: $*"
	for f in "$run"/dnpd-*.log "$run"/pp-*.out; do
		[ -e "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
	done
	rc=1
}

sysset() { echo "$2" >"/proc/sys/$1"; }

# torus_up X Y: veth pairs and rxe devices for an XxYx1 torus, config files.
torus_up() {
	local X=$1 Y=$2 k=0 n x y d
	declare -gA addr
	sysset net/ipv4/conf/all/rp_filter 0
	sysset net/ipv4/conf/all/accept_local 1
	for ((y = 0; y < Y; y++)); do
		for ((x = 0; x < X; x++)); do
			n=$((y * X + x))
			for d in x y; do
				local size=$X nb
				[ $d = y ] && size=$Y
				[ "$size" -gt 1 ] || continue
				if [ $d = x ]; then nb=$((y * X + (x + 1) % X)); else nb=$((((y + 1) % Y) * X + x)); fi
				ip link add "n${n}k$k" mtu 9000 type veth peer name "n${nb}k$k" mtu 9000
				for i in 1 2; do
					local ifc=n${n}k$k
					[ $i = 2 ] && ifc=n${nb}k$k
					ip addr add "10.77.$k.$i/24" dev "$ifc"
					sysset "net/ipv4/conf/$ifc/rp_filter" 0
					sysset "net/ipv4/conf/$ifc/accept_local" 1
					ip link set "$ifc" up
					rdma link add "rxe${ifc#n}" type rxe netdev "$ifc" || return 1
					IFACES+=("$ifc")
				done
				addr[$n,${d}p]="10.77.$k.1:7000,10.77.$k.2:7000"
				addr[$nb,${d}m]="10.77.$k.2:7000,10.77.$k.1:7000"
				k=$((k + 1))
			done
		done
	done
	for ((n = 0; n < X * Y; n++)); do
		{
			echo "torus = ${X}x${Y}x1"
			echo "coord = $((n % X)),$((n / X)),0"
			echo "run_dir = $run"
			echo "transport = verbs"
			for d in xp xm yp ym; do
				[ -n "${addr[$n,$d]:-}" ] && echo "$d = ${addr[$n,$d]}"
			done
		} >"$run/node-$n.ini"
	done
	NODES=$((X * Y))
}

torus_down() {
	stop_all
	for l in "${IFACES[@]}"; do rdma link delete "rxe${l#n}" 2>/dev/null; done
	for l in "${IFACES[@]}"; do ip link del "$l" 2>/dev/null; done
	IFACES=()
	unset addr
	rm -f "$run"/*
}

start_node() { # ID [extra dnpd args]
	local id=$1
	shift
	"$dnpd" --config "$run/node-$id.ini" --log-level 2 "$@" >>"$run/dnpd-$id.log" 2>&1 &
	eval "pid$id=$!"
	pids="$pids $!"
}

stop_all() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	pids=""
}

wait_up() { # ID SECONDS
	local i=0
	while [ ! -e "$run/node-$1.up" ]; do
		i=$((i + 1))
		[ $i -le $(($2 * 10)) ] || return 1
		sleep 0.1
	done
}

all_up() {
	for ((n = 0; n < NODES; n++)); do start_node $n "$@"; done
	for ((n = 0; n < NODES; n++)); do
		wait_up $n 60 || {
			fail "node $n links never came UP over verbs"
			return 1
		}
	done
}

# pingpong FROM TO ITERS SIZES [extra]: a verified PUT ping-pong between two nodes.
pingpong() {
	local a=$1 b=$2 it=$3 sizes=$4 peer
	shift 4
	peer=$((b % 2)),$((b / 2)),0
	[ "$NODES" = 2 ] && peer=1,0,0
	DNP_APP_TIMEOUT=60 DNP_SOCKET=$run/node-$b.sock "$pp" --peer "$peer" --sizes "$sizes" \
		--iters "$it" "$@" >"$run/pp-b.out" 2>&1 &
	local bp=$!
	DNP_APP_TIMEOUT=60 DNP_SOCKET=$run/node-$a.sock "$pp" --peer "$peer" --sizes "$sizes" \
		--iters "$it" "$@" >"$run/pp-a.out" 2>&1
	local ra=$?
	wait $bp
	local rb=$?
	cat "$run/pp-a.out"
	[ $ra -eq 0 ] && [ $rb -eq 0 ]
}

verbs_stats() { # ID: the link lines of dnpctl stats
	"$ctl" --socket "$run/node-$1.sock" stats | grep -E '^link [XY][+-] (state|epoch)'
}

sc_pingpong() {
	pingpong 0 1 200 8,4096,65536,1M --verify || {
		fail "verified ping-pong 0 <-> 1 over verbs"
		return
	}
	grep -q "verified" "$run/pp-a.out" || grep -q "8 " "$run/pp-a.out" ||
		fail "ping-pong printed no figures"
	echo "PASS: verbs-pingpong"
}

sc_rejoin() {
	echo "+ kill -9 dnpd of node 1"
	kill -9 "$pid1"
	wait "$pid1" 2>/dev/null
	rm -f "$run/node-1.up"
	start_node 1
	wait_up 1 60 || {
		fail "restarted node 1 never had its links UP"
		return
	}
	wait_up 0 60 || {
		fail "node 0 links never came back UP"
		return
	}
	pingpong 0 1 100 8,4096,65536 --verify || {
		fail "verified ping-pong after the restart"
		return
	}
	verbs_stats 0 | sed 's/^/node 0: /'
	verbs_stats 0 | grep -Eq '^link X[+-] epoch ([2-9]|[1-9][0-9]+) .* breaks [1-9]' ||
		fail "node 0 shows no link break and new epoch after the restart"
	echo "PASS: verbs-rejoin"
}

sc_alltoall() {
	local fails=0 n
	for ((n = 0; n < NODES; n++)); do
		DNP_APP_TIMEOUT=60 DNP_SOCKET=$run/node-$n.sock DNP_NODE_ID=$n DNP_NNODES=$NODES \
			DNP_TORUS=2x2x1 DNP_COORD=$((n % 2)),$((n / 2)),0 \
			"$a2a" >"$run/a2a-$n.out" 2>&1 &
		eval "a2a$n=$!"
	done
	for ((n = 0; n < NODES; n++)); do
		eval "wait \$a2a$n" || fails=$((fails + 1))
		grep -q 'all bytes verified' "$run/a2a-$n.out" || fails=$((fails + 1))
	done
	[ $fails = 0 ] || {
		cat "$run"/a2a-*.out
		fail "all-to-all on 2x2x1 over verbs ($fails failures)"
		return
	}
	echo "PASS: verbs-alltoall"
}

link_state() { # ID DIR: the state word of dnpctl stats
	"$ctl" --socket "$run/node-$1.sock" stats 2>/dev/null |
		awk -v d="$2" '$1 == "link" && $2 == d && $3 == "state" {print $4; exit}'
}

sc_cut() {
	# The cable of node 0's X+ (n0k0 <-> n1k0) is cut under a ping-pong 0 <-> 1:
	# PUTs in flight on it may fail ("a link on the path broke"); then both
	# ends report it BROKEN and new PUTs take the detour (X-, the other cable).
	DNP_APP_TIMEOUT=20 DNP_SOCKET=$run/node-1.sock "$pp" --peer 1,0,0 --sizes 4096 \
		--iters 100000000 >/dev/null 2>&1 &
	local b=$!
	DNP_APP_TIMEOUT=20 DNP_SOCKET=$run/node-0.sock "$pp" --peer 1,0,0 --sizes 4096 \
		--iters 100000000 >"$run/pp-cut.out" 2>&1 &
	local a=$! i=0
	sleep 2
	echo "+ ip link set n0k0 down; ip link set n1k0 down (node 0 X+ <-> node 1 X-)"
	ip link set n0k0 down
	ip link set n1k0 down
	until [ "$(link_state 0 X+)" = BROKEN ] && [ "$(link_state 1 X-)" = BROKEN ]; do
		i=$((i + 1))
		[ $i -le 300 ] || break
		sleep 0.1
	done
	kill $a $b 2>/dev/null
	wait $a $b 2>/dev/null
	echo "node 0 X+ $(link_state 0 X+), X- $(link_state 0 X-); node 1 X- $(link_state 1 X-)"
	[ "$(link_state 0 X+)" = BROKEN ] || fail "node 0 does not report its cut X+ link BROKEN"
	[ "$(link_state 1 X-)" = BROKEN ] || fail "node 1 does not report its cut X- link BROKEN"
	pingpong 0 1 100 8,4096,65536 --verify || {
		fail "verified ping-pong 0 <-> 1 on the detour"
		return
	}
	echo "PASS: verbs-cut"
}

# perf_pair CMD ARGS...: a perftest server on rxe0k0 and its client on rxe1k0
# (the devices of node 0's X+ link and node 1's X-); prints the client's output.
perf_pair() {
	local cmd=$1
	shift
	timeout 120 "$cmd" -d rxe0k0 -x 1 -F "$@" >"$run/perf-srv.out" 2>&1 &
	local s=$!
	sleep 1
	timeout 120 "$cmd" -d rxe1k0 -x 1 -F "$@" 10.77.0.1 2>&1
	wait $s
}

# dnp_figures VARIANT ROUND: 8-byte ping-pong median and 1 MiB PUT bandwidth.
dnp_figures() {
	local v=$1 r=$2 med mbps
	DNP_APP_TIMEOUT=120 DNP_SOCKET=$run/node-1.sock "$pp" --peer 1,0,0 --sizes 8 \
		--iters 3000 --csv >/dev/null 2>&1 &
	local b=$!
	med=$(DNP_APP_TIMEOUT=120 DNP_SOCKET=$run/node-0.sock "$pp" --peer 1,0,0 --sizes 8 \
		--iters 3000 --csv 2>/dev/null | awk -F, '$1 == 8 {print $4}')
	wait $b
	DNP_APP_TIMEOUT=120 DNP_SOCKET=$run/node-1.sock "$bw" --peer 1,0,0 --sizes 1M \
		--iters 300 --csv >/dev/null 2>&1 &
	b=$!
	mbps=$(DNP_APP_TIMEOUT=120 DNP_SOCKET=$run/node-0.sock "$bw" --peer 1,0,0 --sizes 1M \
		--iters 300 --csv 2>/dev/null | awk -F, '$1 == 1048576 {print $3}')
	wait $b
	echo "$r dnp-$v lat8_us ${med:--}" >>"$out/bench.txt"
	echo "$r dnp-$v bw1M_MBps ${mbps:--}" >>"$out/bench.txt"
}

# Figures for bench/verbs.sh: perftest and SoftDNP on the same rxe pair, in
# alternating rounds (BENCH_ROUNDS, default 3); "ROUND NAME METRIC VALUE" lines
# in /tmp/vmout/bench.txt. SoftDNP variants: uc and rc QPs (adaptive idle),
# uc with --idle busy.
sc_perftest() {
	local r v t
	for ((r = 1; r <= ${BENCH_ROUNDS:-3}; r++)); do
		stop_all
		t=$(perf_pair ib_send_lat -s 8 -n 5000 | awk '$1 == 8 {print $5}')
		echo "$r ib_send_lat lat8_us ${t:--}" >>"$out/bench.txt"
		t=$(perf_pair ib_write_lat -s 8 -n 5000 | awk '$1 == 8 {print $5}')
		echo "$r ib_write_lat lat8_us ${t:--}" >>"$out/bench.txt"
		t=$(perf_pair ib_write_bw -s 1048576 -n 300 | awk '$1 == 1048576 {print $4}')
		echo "$r ib_write_bw bw1M_MBps ${t:--}" >>"$out/bench.txt"
		for v in uc rc uc-busy; do
			stop_all
			rm -f "$run"/node-*.up
			for n in 0 1; do
				sed -i '/^verbs_qp/d' "$run/node-$n.ini"
				echo "verbs_qp = ${v%-busy}" >>"$run/node-$n.ini"
			done
			if [ "$v" = uc-busy ]; then all_up --idle busy; else all_up; fi || continue
			dnp_figures "$v" "$r"
		done
	done
	stop_all
	cat "$out/bench.txt"
}

# rc: the same torus restarted with RC QPs (verbs_qp = rc): a verified
# ping-pong, then node 1 killed and restarted (the survivor's RC QP fails or is
# reset by the new instance's handshake) and a verified ping-pong again.
sc_rc() {
	stop_all
	rm -f "$run"/node-*.up
	for n in 0 1; do echo "verbs_qp = rc" >>"$run/node-$n.ini"; done
	all_up || return
	pingpong 0 1 100 8,4096,65536 --verify || {
		fail "verified ping-pong 0 <-> 1 over RC QPs"
		return
	}
	echo "+ rejoin with RC QPs"
	sc_rejoin
	echo "PASS: verbs-rc"
}

for sc in "$@"; do
	case $sc in
	pingpong | rejoin | perftest | rc)
		[ "${TORUS:-}" = 2x1 ] || {
			torus_down
			torus_up 2 1 || fail "rxe testbed 2x1x1"
			TORUS=2x1
			all_up || continue
			ibv_devices
		}
		sc_$sc ;;
	alltoall | cut)
		[ "${TORUS:-}" = 2x2 ] || {
			torus_down
			torus_up 2 2 || fail "rxe testbed 2x2x1"
			TORUS=2x2
			all_up || continue
		}
		sc_$sc ;;
	*)
		echo "guest.sh: unknown scenario $sc"
		rc=2 ;;
	esac
done
torus_down
exit $rc
