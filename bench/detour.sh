#!/bin/sh
# SPDX-License-Identifier: MIT
# Detour figures (docs/routing.md): traffic between surviving nodes before,
# during and after a failure.
#   1. Real daemons, a 4x2x1 torus over shm and udp: every node runs
#      dnp-drill-traffic (4 KiB PUTs to every other node, 32 outstanding);
#      the sum of the daemons' bytes_delivered is sampled every 0.2 s. The
#      cable (0,0,0) X+ -- (1,0,0) X- is cut at 2 s (both ends drop what they
#      send on it) and mended at 5 s; the run stops at 8 s. Phases: before
#      (0.6-2 s), during (from the moment every daemon knows the cut to the
#      repair), after (from X+ UP again + 0.4 s to 8 s); median MB/s of the
#      samples in each, and the commands that failed.
#   2. The lab, 8x8x8 (uniform random 4 KiB PUTs, 16 outstanding per node):
#      a cable cut and a node killed at t=4000, both repaired at t=12000;
#      bytes delivered per 1000 time units, median of each phase.
# Writes bench/results/detour.txt (and prints it). Not a test: run it alone
# (flock /tmp/softdnp-heavy.lock).
# usage: bench/detour.sh BUILD_DIR
set -u
build=$1
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/bench/results/detour.txt
dnpd=$build/dnp-core/dnpd/dnpd
ctl=$build/dnp-core/dnpd/dnpctl
traffic=$build/lofamo/dnp-drill-traffic
lab=$build/dnp-core/lab/dnp-lab
for p in "$dnpd" "$ctl" "$traffic" "$lab"; do
	[ -x "$p" ] || { echo "bench/detour.sh: $p is not built" >&2; exit 1; }
done
tmp=$(mktemp -d)
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

now() { date +%s%3N; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit }
	if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
stats() { "$ctl" --socket "$dir/node-$1.sock" stats 2>/dev/null; }
bytes_all() {
	for id in 0 1 2 3 4 5 6 7; do stats $id; done |
		awk '/^engine / { for (i = 1; i < NF; i++) if ($i == "bytes_delivered") s += $(i + 1) }
			END { print s + 0 }'
}
know() { # N: every daemon knows N broken cables
	for id in 0 1 2 3 4 5 6 7; do
		stats "$id" | grep -q "^routes broken_cables $1 " || return 1
	done
}

real_run() { # TRANSPORT
	tr=$1
	dir=$tmp/$tr
	mkdir -p "$dir"
	base=$((23000 + ($$ % 1000) * 16))
	pids=""
	for id in 0 1 2 3 4 5 6 7; do
		x=$((id % 4)); y=$((id / 4))
		"$dnpd" --torus 4x2x1 --coord "$x,$y,0" --run-dir "$dir" --transport "$tr" \
			--udp-base-port "$base" --cmd-timeout-ms 1500 >"$dir/dnpd-$id.log" 2>&1 &
		pids="$pids $!"
	done
	for id in 0 1 2 3 4 5 6 7; do
		i=0
		while [ ! -e "$dir/node-$id.up" ]; do
			i=$((i + 1)); [ $i -le 3000 ] || { echo "$tr: node $id never UP" >&2; return 1; }
			sleep 0.01
		done
	done
	tp=""
	for id in 0 1 2 3 4 5 6 7; do
		DNP_SOCKET=$dir/node-$id.sock DRILL_CMD_TIMEOUT_MS=1500 "$traffic" &
		tp="$tp $!"
	done
	t0=$(now)
	cut=0 mended=0 t_know=0 t_up=0
	: >"$dir/samples"
	while :; do
		t=$(($(now) - t0))
		echo "$t $(bytes_all)" >>"$dir/samples"
		if [ $cut = 0 ] && [ $t -ge 2000 ]; then
			"$ctl" --socket "$dir/node-0.sock" impair 'dir=xp,loss=100%'
			"$ctl" --socket "$dir/node-1.sock" impair 'dir=xm,loss=100%'
			cut=$t
		fi
		if [ $cut != 0 ] && [ $t_know = 0 ] && know 1; then t_know=$t; fi
		if [ $mended = 0 ] && [ $t -ge 5000 ]; then
			"$ctl" --socket "$dir/node-0.sock" impair off
			"$ctl" --socket "$dir/node-1.sock" impair off
			mended=$t
		fi
		if [ $mended != 0 ] && [ $t_up = 0 ] && stats 0 | grep -q '^link X+ state UP'; then
			t_up=$t
		fi
		[ $t -ge 8000 ] && break
		sleep 0.2
	done
	touch "$dir/drill.done"
	for p in $tp; do wait "$p"; done
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	pids=""
	okf=$(cat "$dir"/traffic-*.out 2>/dev/null | awk '{ ok += $2; f += $4; u += $6 } END { print ok + 0, f + 0, u + 0 }')
	[ $t_know = 0 ] && t_know=5000
	[ $t_up = 0 ] && t_up=8000
	awk 'NR > 1 { dt = $1 - t; if (dt > 0) print $1, ($2 - b) / dt / 1000 } { t = $1; b = $2 }' \
		"$dir/samples" >"$dir/rates"
	b=$(awk '$1 >= 600 && $1 < 2000 { print $2 }' "$dir/rates" | median)
	d=$(awk -v a="$t_know" -v z="$mended" '$1 > a && $1 <= z { print $2 }' "$dir/rates" | median)
	a=$(awk -v a="$((t_up + 400))" '$1 > a { print $2 }' "$dir/rates" | median)
	printf '%-6s %10s %10s %10s %8s %8s %12s\n' "$tr" "$b" "$d" "$a" \
		"$((t_know - cut))" "$((t_up - mended))" "$okf" >>"$tmp/real"
}

: >"$tmp/real"
for tr in shm udp; do real_run $tr; done

"$lab" run --torus 8x8x8 --pattern random --count 96 --sizes 4096 --bw 16 --latency 4 \
	--credit-period 64 --max-commands 16 --fault cut@4000:3,3,3:xp --fault kill@4000:5,5,5 \
	--fault mend@12000:3,3,3:xp --fault revive@12000:5,5,5 --timeline 1000 >"$tmp/lab" 2>&1
labst=$(awk '/^result:/ { print $2 }' "$tmp/lab")
tl() { awk -F, -v a="$1" -v z="$2" '/^[0-9]+,[0-9]+$/ && $1 >= a && $1 < z { print $2 / 1000 }' "$tmp/lab" | median; }
lb=$(tl 1000 4000)
ld=$(tl 5000 12000)
la=$(tl 13000 20000)

{
	echo "# Detours (bench/detour.sh, $(date -u +%Y-%m-%d)); machine: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) CPUs"
	echo "# Real daemons, 4x2x1, all-to-all 4 KiB PUTs (dnp-drill-traffic on every node);"
	echo "# cable (0,0,0)X+ cut at 2 s, mended at 5 s. Median MB/s delivered (all daemons)"
	echo "# per 0.2 s sample; know_ms: cut -> every daemon knows it; up_ms: repair -> X+ UP;"
	echo "# commands: ok failed unfinished (failed: lost with the cable, before the detour)."
	printf '%-6s %10s %10s %10s %8s %8s %12s\n' transport before during after know_ms up_ms commands
	cat "$tmp/real"
	echo
	echo "# Lab 8x8x8 (virtual time units), random 4 KiB PUTs: cable (3,3,3)X+ cut and node"
	echo "# (5,5,5) killed at t=4000, both repaired at t=12000; run $labst."
	echo "# Median kB delivered per 1000 time units (all nodes):"
	printf 'lab-8x8x8 before %s during %s after %s\n' "$lb" "$ld" "$la"
	grep -E '^ +(faults_applied|detoured)' "$tmp/lab"
} | tee "$out"
