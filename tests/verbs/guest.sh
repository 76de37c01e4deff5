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
	"${DNPD_BIN:-$dnpd}" --config "$run/node-$id${CONF_SUFFIX:-}.ini" --log-level 2 "$@" \
		>>"$run/dnpd-$id.log" 2>&1 &
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
	check_counters
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

# The backend's own counters in dnpctl stats and --json: node 0's X+ QP is
# connected, has sent and completed frames, and no QP or completion failed.
check_counters() {
	local line js
	line=$("$ctl" --socket "$run/node-0.sock" stats | grep -E '^link X\+ verbs ')
	echo "node 0: $line"
	field() { echo "$line" | awk -v k="$1" '{ for (i = 3; i < NF; i++) if ($i == k) print $(i + 1) }'; }
	[ "$(field connected)" = 1 ] || fail "stats: node 0 X+ verbs QP not connected ($line)"
	[ "${line/qp uc/}" != "$line" ] || [ "${line/qp rc/}" != "$line" ] ||
		fail "stats: no QP type on the verbs line"
	[ "$(field tx_completions)" -gt 0 ] 2>/dev/null ||
		fail "stats: node 0 X+ verbs counted no send completion"
	[ "$(field rx_frames)" -gt 0 ] 2>/dev/null || fail "stats: node 0 X+ verbs received nothing"
	[ "$(field tx_errors)" = 0 ] && [ "$(field rx_errors)" = 0 ] ||
		fail "stats: completion errors on a healthy link ($line)"
	js=$("$ctl" --socket "$run/node-0.sock" stats --json)
	python3 -c 'import json, sys
v = json.load(sys.stdin)["links"]["X+"]["verbs"]
assert v["connected"] == 1 and v["tx_completions"] > 0 and v["qp"] in ("uc", "rc"), v' \
		<<<"$js" || fail "stats --json: no verbs object with the counters under links.X+"
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
	sc_mend
}

# The cable cut by sc_cut mended: both ends come back UP (a new epoch), and a
# ping-pong takes the direct path again: node 0's X+ carries its frames and
# the detour (X-) does not.
xpackets() { # ID DIR: DNP packets sent on that link, every VC (not credits nor acks)
	"$ctl" --socket "$run/node-$1.sock" stats 2>/dev/null |
		awk -v d="$2" '$1 == "link" && $2 == d && $3 == "vc" && $5 == "tx_packets" {n += $6}
			END {print n + 0}'
}
sc_mend() {
	local i=0 xp0 xm0 xp1 xm1
	# Still cut after the detour's ping-pong: the UP below is the mend's doing.
	[ "$(link_state 0 X+)" = BROKEN ] && [ "$(link_state 1 X-)" = BROKEN ] || {
		fail "the cut link came back while its cable was down: node 0 X+ $(link_state 0 X+), node 1 X- $(link_state 1 X-)"
		return
	}
	echo "+ ip link set n0k0 up; ip link set n1k0 up (the cable mended)"
	ip link set n0k0 up
	ip link set n1k0 up
	until [ "$(link_state 0 X+)" = UP ] && [ "$(link_state 1 X-)" = UP ]; do
		i=$((i + 1))
		[ $i -le 600 ] || break
		sleep 0.1
	done
	echo "after $i looks 0.1 s apart: node 0 X+ $(link_state 0 X+); node 1 X- $(link_state 1 X-)"
	[ "$(link_state 0 X+)" = UP ] || {
		fail "node 0 X+ not UP again after the cable was mended"
		return
	}
	[ "$(link_state 1 X-)" = UP ] || {
		fail "node 1 X- not UP again after the cable was mended"
		return
	}
	xp0=$(xpackets 0 X+)
	xm0=$(xpackets 0 X-)
	pingpong 0 1 200 4096,65536 --verify || {
		fail "verified ping-pong 0 <-> 1 after the cable was mended"
		return
	}
	xp1=$(xpackets 0 X+)
	xm1=$(xpackets 0 X-)
	echo "node 0 packets during the ping-pong: X+ $((xp1 - xp0)), X- $((xm1 - xm0))"
	# 400 PUTs of 4 KiB and 64 KiB from node 0: all on the direct path, none
	# on the detour (which carries only its keep-alive credits, not counted).
	[ $((xp1 - xp0)) -ge 400 ] || fail "the direct path (node 0 X+) carried $((xp1 - xp0)) packets"
	[ $((xm1 - xm0)) = 0 ] ||
		fail "node 0 still sends on the detour X- ($((xm1 - xm0)) packets against $((xp1 - xp0)))"
	echo "PASS: verbs-mend"
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

# counters NODE: "iters sleeps timer_wakeups yields cq_arms cq_events" of a
# daemon (dnpctl stats; the verbs fields 0 when the daemon shows none), then
# the VM's context switches (/proc/stat ctxt) and the CPU time of its
# ksoftirqd threads in clock ticks (where rxe's deferred packet work runs).
counters() {
	local ks
	ks=$(cat /proc/[0-9]*/stat 2>/dev/null | awk '$2 ~ /^\(ksoftirqd/ {t += $14 + $15} END {print t + 0}')
	{
		"$ctl" --socket "$run/node-$1.sock" stats 2>/dev/null
		echo "vm ctxt $(awk '$1 == "ctxt" {print $2}' /proc/stat) ksoftirqd $ks"
	} | awk '
		function f(k) { for (i = 1; i < NF; i++) if ($i == k) return $(i + 1); return 0 }
		$1 == "daemon" { it = f("iterations"); sl = f("sleeps"); tw = f("timer_wakeups"); y = f("yields") }
		$1 == "link" && $3 == "verbs" { ar += f("cq_arms"); ev += f("cq_events") }
		$1 == "vm" { cs = f("ctxt"); ks = f("ksoftirqd") }
		END { print it + 0, sl + 0, tw + 0, y + 0, ar + 0, ev + 0, cs + 0, ks + 0 }'
}

# dnp_figures VARIANT ROUND: 8-byte ping-pong median and 1 MiB PUT bandwidth;
# with the ping-pong, what node 0's daemon did per round trip (loop passes,
# sleeps, timer wake-ups, yields, CQ arms and events).
dnp_figures() {
	local v=$1 r=$2 med mbps c0 c1 it=3000
	c0=$(counters 0)
	DNP_APP_TIMEOUT=120 DNP_SOCKET=$run/node-1.sock "$pp" --peer 1,0,0 --sizes 8 \
		--iters $it --csv >/dev/null 2>&1 &
	local b=$!
	med=$(DNP_APP_TIMEOUT=120 DNP_SOCKET=$run/node-0.sock "$pp" --peer 1,0,0 --sizes 8 \
		--iters $it --csv 2>/dev/null | awk -F, '$1 == 8 {print $4}')
	wait $b
	c1=$(counters 0)
	DNP_APP_TIMEOUT=120 DNP_SOCKET=$run/node-1.sock "$bw" --peer 1,0,0 --sizes 1M \
		--iters 300 --csv >/dev/null 2>&1 &
	b=$!
	mbps=$(DNP_APP_TIMEOUT=120 DNP_SOCKET=$run/node-0.sock "$bw" --peer 1,0,0 --sizes 1M \
		--iters 300 --csv 2>/dev/null | awk -F, '$1 == 1048576 {print $3}')
	wait $b
	echo "$r dnp-$v lat8_us ${med:--}" >>"$out/bench.txt"
	echo "$r dnp-$v bw1M_MBps ${mbps:--}" >>"$out/bench.txt"
	echo "$c0 $c1" | awk -v r="$r" -v v="$v" -v n=$it '{
		printf "%s dnp-%s per_rt passes %.1f sleeps %.2f timer_wakeups %.2f yields %.1f cq_arms %.2f cq_events %.2f ctxt %.1f ksoftirqd_us %.1f\n",
			r, v, ($9 - $1) / n, ($10 - $2) / n, ($11 - $3) / n, ($12 - $4) / n,
			($13 - $5) / n, ($14 - $6) / n, ($15 - $7) / n, ($16 - $8) * 10000 / n }' \
		>>"$out/counters.txt"
}

# variant_up VARIANT: node 0 and 1 (2x1x1) restarted as VARIANT wants:
# uc, rc (QP type), uc-busy (--idle busy), uc-before, rc-before (the daemon
# VERBS_BEFORE_DNPD, a build of an
# earlier commit, same apps), shm (the shm transport between the two daemons
# of the VM: the same four processes without RDMA).
variant_up() {
	local v=$1 n extra=()
	stop_all
	rm -f "$run"/node-*.up
	DNPD_BIN=
	CONF_SUFFIX=
	for n in 0 1; do
		sed -i '/^verbs_qp/d; /^transport_options/d' "$run/node-$n.ini"
		case $v in
		rc*) echo "verbs_qp = rc" >>"$run/node-$n.ini" ;;
		*) echo "verbs_qp = uc" >>"$run/node-$n.ini" ;;
		esac
		grep -v '^transport\|^[xyz][pm] =\|^verbs' "$run/node-$n.ini" >"$run/node-$n-shm.ini"
		echo "transport = shm" >>"$run/node-$n-shm.ini"
	done
	case $v in
	*-busy) extra=(--idle busy) ;;
	*-before)
		[ -x "${VERBS_BEFORE_DNPD:-}" ] || return 1
		DNPD_BIN=$VERBS_BEFORE_DNPD ;;
	shm) CONF_SUFFIX=-shm ;;
	esac
	all_up "${extra[@]}"
	local rc=$?
	DNPD_BIN=
	CONF_SUFFIX=
	return $rc
}

# Figures for bench/verbs.sh: perftest and SoftDNP on the same rxe pair, in
# alternating rounds (BENCH_ROUNDS, default 3); "ROUND NAME METRIC VALUE" lines
# in /tmp/vmout/bench.txt, per round trip counters in /tmp/vmout/counters.txt.
# SoftDNP variants (VERBS_VARIANTS, default "uc rc uc-busy"): see variant_up.
sc_perftest() {
	local r v t c0 c1
	for ((r = 1; r <= ${BENCH_ROUNDS:-3}; r++)); do
		stop_all
		c0=$(counters 0)
		t=$(perf_pair ib_send_lat -s 8 -n 5000 | awk '$1 == 8 {print $5}')
		c1=$(counters 0)
		echo "$r ib_send_lat lat8_us ${t:--}" >>"$out/bench.txt"
		echo "$c0 $c1" | awk -v r="$r" -v n=5000 '{
			printf "%s ib_send_lat per_rt ctxt %.1f ksoftirqd_us %.1f\n", r,
				($15 - $7) / n, ($16 - $8) * 10000 / n }' >>"$out/counters.txt"
		t=$(perf_pair ib_write_lat -s 8 -n 5000 | awk '$1 == 8 {print $5}')
		echo "$r ib_write_lat lat8_us ${t:--}" >>"$out/bench.txt"
		t=$(perf_pair ib_write_bw -s 1048576 -n 300 | awk '$1 == 1048576 {print $4}')
		echo "$r ib_write_bw bw1M_MBps ${t:--}" >>"$out/bench.txt"
		for v in ${VERBS_VARIANTS:-uc rc uc-busy}; do
			variant_up "$v" || continue
			dnp_figures "$v" "$r"
		done
	done
	stop_all
	cat "$out/bench.txt" "$out/counters.txt"
}

# sc_sweep: the rows of `./dnp bench --transport verbs` (bench/run.sh), over
# BENCH_SIZES (comma-separated bytes) in BENCH_ROUNDS alternating rounds, as
# CSV rows "transport,peer,test,bytes,rep,value,unit" in /tmp/vmout/rows.csv:
# perftest ib_send_lat, ib_write_lat (t_typical, us), ib_write_bw (BW average,
# converted from 2^20 to 10^6 B/s, and MsgRate) on rxe0k0/rxe1k0, and dnpd
# over verbs (UC and RC QPs) on the same devices: dnp_pingpong (median half
# round trip) and dnp_bw (MB/s, messages/s).
sc_sweep() {
	local r b t v n sizes=${BENCH_SIZES:-8,4096,1048576} csv=$out/rows.csv
	for ((r = 1; r <= ${BENCH_ROUNDS:-3}; r++)); do
		stop_all
		for b in ${sizes//,/ }; do
			n=$((b >= 1048576 ? 200 : b >= 65536 ? 1000 : 3000))
			for t in ib_send_lat ib_write_lat; do
				perf_pair $t -s "$b" -n $n | awk -v t="${t#ib_}" -v r="$r" -v b="$b" \
					'$1 == b && NF >= 5 {printf "rxe-%s,perftest,lat,%s,%s,%s,us\n", t, b, r, $5}' \
					>>"$csv"
			done
			n=$((b >= 1048576 ? 200 : b >= 65536 ? 2000 : 20000))
			perf_pair ib_write_bw -s "$b" -n $n | awk -v r="$r" -v b="$b" '$1 == b && NF >= 5 {
				printf "rxe-write_bw,perftest,bw,%s,%s,%.2f,MBps\n", b, r, $4 * 1.048576
				printf "rxe-write_bw,perftest,msgrate,%s,%s,%.0f,msgps\n", b, r, $5 * 1e6 }' >>"$csv"
		done
		for v in uc rc; do
			variant_up "$v" || continue
			DNP_APP_TIMEOUT=300 DNP_SOCKET=$run/node-1.sock "$pp" --peer 1,0,0 --sizes "$sizes" \
				--csv >/dev/null 2>&1 &
			n=$!
			DNP_APP_TIMEOUT=300 DNP_SOCKET=$run/node-0.sock "$pp" --peer 1,0,0 --sizes "$sizes" \
				--csv 2>/dev/null | awk -F, -v t="verbs-$v" -v r="$r" \
				'$1 ~ /^[0-9]+$/ {printf "%s,,lat,%s,%s,%s,us\n", t, $1, r, $4}' >>"$csv"
			wait $n
			DNP_APP_TIMEOUT=300 DNP_SOCKET=$run/node-1.sock "$bw" --peer 1,0,0 --sizes "$sizes" \
				--csv >/dev/null 2>&1 &
			n=$!
			DNP_APP_TIMEOUT=300 DNP_SOCKET=$run/node-0.sock "$bw" --peer 1,0,0 --sizes "$sizes" \
				--csv 2>/dev/null | awk -F, -v t="verbs-$v" -v r="$r" '$1 ~ /^[0-9]+$/ {
				printf "%s,,bw,%s,%s,%s,MBps\n", t, $1, r, $3
				printf "%s,,msgrate,%s,%s,%s,msgps\n", t, $1, r, $4 }' >>"$csv"
			wait $n
		done
	done
	stop_all
	[ -s "$csv" ] || fail "sweep: no rows"
	wc -l "$csv"
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
	pingpong | rejoin | perftest | sweep | rc)
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
