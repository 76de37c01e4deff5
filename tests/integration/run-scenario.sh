#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs integration scenarios: real daemons on a 2x2x2 torus via dnp-run.
# usage: run-scenario.sh BUILD_DIR shm|udp|dpdk|memif SCENARIO[,SCENARIO...]
# memif: DPDK memif ports between daemons on this host (no namespaces).
# dpdk: every node in its own network namespace, links on veth pairs
# (dnp-run --transport dpdk builds and removes the testbed).
# A list runs every scenario in turn on one torus (one start-up instead of
# one each): each node runs this script in node mode (--node), which runs
# the scenario's program, keeps its lines (prefixed [x,y,z], as dnp-run
# does) in a file per scenario and node, and waits at a barrier (a file per
# node) before the next scenario; a node that fails stops them all. Each
# scenario is then judged on its own lines.
# Exit: 0 pass, 1 fail, 77 skip (the daemon or the apps are not built; dpdk:
# not root, or DPDK not built).
set -u

# bench PROGRAM ITERS SIZES [OPTION...]: a benchmark program in test mode, ITERS
# times each of the sizes (a comma-separated list); node 0 prints a line per
# size, "SIZE ITERS ...", which the scenario must show for every size.
bench() {
	prog=$1
	iters=$2
	sizes=$3
	shift 3
	cmd="$prog --verify --sizes $sizes --iters $iters $*"
	want_pat="^\\[0,0,0\\] +[0-9]+ +$iters "
	want_n=$(echo "$sizes" | tr , '\n' | wc -l)
}

# scenario NAME: its program and arguments in cmd, and the grep -E pattern
# with the count its output lines must reach (besides every instance exiting
# 0) in want_pat and want_n. The benchmark programs run in test mode
# (--verify): both sides check every message they receive.
scenario() {
	cmd=
	want_pat=
	want_n=0
	case $1 in
	loopback)
		bench dnp_pingpong 50 8,4096,65536 --loopback ;;
	pingpong)
		bench dnp_pingpong 50 8,4096,65536,1M ;;
	pingpong-inline)
		# DNP_INLINE up to DNP_INLINE_MAX (24), the usual path beyond, every byte checked
		bench dnp_pingpong 50 1,8,24,25,4096 --inline ;;
	pingpong-far)
		bench dnp_pingpong 50 8,4096,100000 --peer 1,1,1 ;;
	bw)
		bench dnp_bw 200 64,4096,1M --window 16 ;;
	alltoall)
		cmd="dnp_alltoall"
		want_pat='all bytes verified'; want_n=8 ;;
	alltoall-private)
		# sources and targets outside the shared heap (the process_vm path)
		DNP_APP_NOHEAP=1
		export DNP_APP_NOHEAP
		cmd="dnp_alltoall --sizes 1,4095,200000"
		want_pat='all bytes verified'; want_n=8 ;;
	kill-mid-send)
		# a SEND that stops in the middle (its sender killed): the receiver's
		# reassembly bound (5 s in dnpd) reclaims the buffer
		cmd="dnp_check kill-mid-send"
		want_pat='^\[[01],0,0\] PASS'; want_n=2 ;;
	private-fault)
		# a fault in a private PUT target fails that PUT only (gathered writes)
		cmd="dnp_check private-fault"
		want_pat='^\[[01],0,0\] PASS'; want_n=2 ;;
	kill)
		cmd="dnp_check kill-survivor"
		want_pat='^\[[01],0,0\] PASS'; want_n=2 ;;
	farthest)
		cmd="dnp_check farthest"
		want_pat='PASS farthest'; want_n=8 ;;
	bad-args)
		cmd="dnp_check bad-args"
		want_pat='PASS bad-args'; want_n=1 ;;
	slow-drain)
		# B (1,0,0) stops draining events while A floods it and sends transit
		# traffic through it to D (1,1,0); B resumes when A creates the flag.
		DNP_CHECK_FLAG=${DNP_CHECK_FLAG:-$(mktemp -u "${TMPDIR:-/tmp}/dnp-slow-drain.XXXXXX")}
		export DNP_CHECK_FLAG
		cmd="dnp_check slow-drain"
		want_pat='PASS slow-drain'; want_n=8 ;;
	flags)
		# DNP_SRC_EVENT (TX_READ before TX_DONE) and DNP_NO_EVENT (docs/api.md);
		# completion counters (DNP_CNTR) and inline PUTs (DNP_INLINE)
		cmd="dnp_check flags"
		want_pat='^\[[01],0,0\] (PASS flags|ok: (21 PUTs flagged|3000 event-less|3045 PUTs arrived|counter 0 reached 3000|24 inline PUTs))'
		want_n=7 ;;
	send-order | get | bad-key | out-of-bounds | outstanding-1000 | blocking-20000)
		cmd="dnp_check $1"
		want_pat="^\[[01],0,0\] PASS $1"; want_n=2 ;;
	*)
		echo "unknown scenario $1"
		exit 1 ;;
	esac
}

# Node mode (a list's program, one per node under dnp-run):
# run-scenario.sh --node BUILD_DIR LIST DIR
if [ "${1:-}" = --node ]; then
	build=$2
	dir=$4
	rc=0
	for sc in $(echo "$3" | tr , ' '); do
		[ -e "$dir/abort" ] && exit 1
		(
			scenario "$sc" >/dev/null
			# shellcheck disable=SC2086 # cmd is a word list
			"$build/apps/"$cmd >"$dir/$sc.raw.$DNP_NODE_ID" 2>&1
		)
		rc=$?
		sed "s/^/[$DNP_COORD] /" "$dir/$sc.raw.$DNP_NODE_ID" >"$dir/$sc.out.$DNP_NODE_ID"
		echo "== $sc"
		cat "$dir/$sc.raw.$DNP_NODE_ID"
		if [ $rc -ne 0 ]; then
			echo "$sc: node $DNP_NODE_ID exited $rc" >>"$dir/abort"
			exit 1
		fi
		: >"$dir/$sc.done.$DNP_NODE_ID"
		i=0 # the barrier: every node done with it (60 s at most)
		while [ "$(find "$dir" -name "$sc.done.*" | wc -l)" -lt "$DNP_NNODES" ]; do
			[ -e "$dir/abort" ] && exit 1
			i=$((i + 1))
			[ $i -le 1200 ] || { echo "$sc: barrier timed out" >>"$dir/abort"; exit 1; }
			sleep 0.05
		done
	done
	exit 0
fi

. "$(dirname "$0")/lib.sh"
build=$1
tr=$2
list=$3
run=$build/apps/dnp-run
dnpd=$build/dnp-core/dnpd/dnpd

if [ ! -x "$dnpd" ]; then
	echo "SKIP: $dnpd is not built in this configuration"
	exit 77
fi
if [ "$tr" = memif ] && [ "${DNP_HAVE_DPDK:-1}" != 1 ]; then
	echo "SKIP: this build has no DPDK (meson found no libdpdk)"
	exit 77
fi
if [ "$tr" = dpdk ]; then
	need_dpdk_testbed
fi
for p in "$run" "$build/apps/dnp_check"; do
	if [ ! -x "$p" ]; then
		echo "SKIP: $p is not built (libdnp missing?)"
		exit 77
	fi
done

out=$(mktemp)
bdir=$(mktemp -d)
DNP_CHECK_FLAG=$(mktemp -u "${TMPDIR:-/tmp}/dnp-slow-drain.XXXXXX")
export DNP_CHECK_FLAG
trap 'rm -rf "$out" "$bdir" "$DNP_CHECK_FLAG"' EXIT
DNP_APP_TIMEOUT=40
export DNP_APP_TIMEOUT
case $list in
*,*)
	echo "+ dnp-run --torus 2x2x2 --transport $tr -- (scenarios $list, in turn)"
	"$run" --torus 2x2x2 --transport "$tr" --timeout 300 -- \
		/bin/sh "$(cd "$(dirname "$0")" && pwd)/run-scenario.sh" --node "$build" "$list" \
		"$bdir" >"$out" 2>&1 ;;
*)
	scenario "$list" || exit 1
	# shellcheck disable=SC2086 # cmd is a word list
	set -- $cmd
	echo "+ dnp-run --torus 2x2x2 --transport $tr -- $*"
	"$run" --torus 2x2x2 --transport "$tr" --timeout 100 -- "$@" >"$out" 2>&1 ;;
esac
rc=$?
cat "$out"

# fail WHY: the verdict after the run's output (whose last lines are daemon
# shutdown messages), then the lines that say what went wrong: the programs'
# (prefixed [x,y,z]), dnp-run's summary, the daemons' errors; so that meson
# test --print-errorlogs (the last 100 lines) shows them.
fail() {
	echo "FAIL: $tr-$list: $*"
	echo "--- the programs' lines naming a problem"
	grep -E '^\[[0-9]+,[0-9]+,[0-9]+\] ' "$out" |
		grep -Ei 'fail|error|unrecognized|unknown|invalid|timed? ?out|abort|mismatch|unexpected|refused|sanitizer|assert|expected' |
		grep -Ev '\] PASS' | tail -n 30
	[ -e "$bdir/abort" ] && { echo "--- the scenarios that stopped"; cat "$bdir/abort"; }
	echo "--- dnp-run"
	grep -E '^dnp-run:' "$out" | tail -n 12
	echo "--- the daemons' errors"
	grep -E '^\[dnpd ' "$out" | grep -Ei 'error|fail|abort|sanitizer|assert|overflow|refused' | tail -n 10
	echo "FAIL: $tr-$list: $*"
	exit 1
}
[ $rc -eq 0 ] || fail "dnp-run exited $rc"
case $list in
*,*)
	for sc in $(echo "$list" | tr , ' '); do
		scenario "$sc"
		n=$(cat "$bdir/$sc.out."* 2>/dev/null | grep -Ec "$want_pat")
		[ "$n" -ge "$want_n" ] || fail "$sc: expected $want_n lines matching '$want_pat', found $n"
		echo "PASS: $tr-$sc"
	done ;;
*)
	n=$(grep -Ec "$want_pat" "$out")
	[ "$n" -ge "$want_n" ] || fail "expected $want_n lines matching '$want_pat', found $n" ;;
esac
echo "PASS: $tr-$list"
exit 0
