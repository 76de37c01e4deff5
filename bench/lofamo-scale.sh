#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Supervision at scale with real processes (docs/lofamo.md, "A hierarchy of
# supervisors"): dnp-svc-load speaks the service protocol as every HFM of a
# torus (one HEALTH per node every T_write = 100 ms, over UDP loopback) into
#   flat  one dnp-supervisor, or
#   hier  group supervisors of GROUP nodes each (--group, --upstream) and a top.
# Per run: 5 s to settle, then each supervisor's CPU (utime + stime from
# /proc/PID/stat) over WINDOW seconds, the top's datagrams per second over the
# same window (AGGs, from the groups' counters in its JSON picture; flat: the
# HEALTHs the generator sent), then the generator stops one node and the
# awareness time is the top's "node N host silent" event (wall-clock stamp)
# minus the moment it stopped. Prints the median of RUNS runs per size and
# mode, and the load average. Writes nothing outside a temporary directory.
#   bench/lofamo-scale.sh BUILD [RUNS] [WINDOW]
#   env: SCALE_TORI="8x8x8 16x16x16" SCALE_MODES="flat hier" SCALE_GROUP=256
set -euo pipefail
build=$(cd "${1:?usage: lofamo-scale.sh BUILD [RUNS] [WINDOW]}" && pwd)
runs=${2:-3}
window=${3:-20}
tori=${SCALE_TORI:-8x8x8 16x16x16}
modes=${SCALE_MODES:-flat hier}
gsize=${SCALE_GROUP:-256}
sup="$build/lofamo/dnp-supervisor"
load="$build/lofamo/dnp-svc-load"
ctl="$build/dnp-core/dnpd/dnpctl"
hz=$(getconf CLK_TCK)
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# CPU ticks (utime + stime) of a process.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
now_ms() { date +%s%3N; }
# Sum of the AGGs the top took from every group so far (0 without groups).
top_aggs() {
	"$ctl" --supervisor "127.0.0.1:$1" status --json 2>/dev/null |
		python3 -c 'import json,sys; print(sum(g["aggs"] for g in json.load(sys.stdin).get("groups", [])))'
}
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# one_run TORUS MODE: prints "top_cpu% max_group_cpu% gen_cpu% top_msgs/s group_msgs/s aware_ms"
one_run() {
	local torus=$1 mode=$2 n ngrp ports top i list="" t0 t1 c0 c1 a0 a1 m0 m1 victim
	local -a gp=() gc0=()
	n=$(($(echo "$torus" | tr x '*')))
	ngrp=$(((n + gsize - 1) / gsize))
	[ "$mode" = flat ] && ngrp=0
	read -r -a ports < <(python3 -c '
import socket, sys
s = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))' $((ngrp + 1)))
	top=${ports[0]}
	pids=()
	rm -f "$tmp"/*.log # the supervisors append
	"$sup" --torus "$torus" --listen "127.0.0.1:$top" --log "$tmp/top.log" &
	local toppid=$!
	pids+=("$toppid")
	for ((i = 0; i < ngrp; i++)); do
		local last=$(((i + 1) * gsize - 1))
		((last >= n)) && last=$((n - 1))
		"$sup" --torus "$torus" --listen "127.0.0.1:${ports[i + 1]}" \
			--group "$((i * gsize))-$last" --upstream "127.0.0.1:$top" \
			--log "$tmp/group$i.log" &
		gp+=($!)
		pids+=($!)
		list+="${list:+,}127.0.0.1:${ports[i + 1]}"
	done
	local per=$gsize
	[ "$mode" = flat ] && list="127.0.0.1:$top" && per=$n
	victim=$((n / 2 + 3))
	"$load" --torus "$torus" --supervisor "$list" --group-size "$per" \
		--duration $(((window + 9) * 1000)) --stop-node "$victim" \
		--stop-at $(((window + 6) * 1000)) >"$tmp/load.out" &
	local genpid=$!
	pids+=("$genpid")
	sleep 5
	a0=$(top_aggs "$top")
	t0=$(now_ms)
	c0=$(ticks "$toppid")
	m0=$(ticks "$genpid")
	for p in "${gp[@]}"; do gc0+=("$(ticks "$p")"); done
	sleep "$window"
	c1=$(ticks "$toppid")
	m1=$(ticks "$genpid")
	t1=$(now_ms)
	local gmax=0 k=0
	for p in "${gp[@]}"; do
		local d=$(($(ticks "$p") - gc0[k]))
		((d > gmax)) && gmax=$d
		k=$((k + 1))
	done
	a1=$(top_aggs "$top")
	wait "$genpid" || true
	local stop_ms aware
	stop_ms=$(awk '/^stopped node/ { print $NF }' "$tmp/load.out")
	aware=$(awk -v v="$victim" -v s="$stop_ms" \
		'$2 == "node" && $3 == v && $4 == "host" && $5 == "silent" { split($1, t, "."); print t[1] * 1000 + t[2] - s; exit }' \
		"$tmp/top.log")
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	pids=()
	local secs=$(((t1 - t0)))
	local sent
	sent=$(awk '/^sent/ { print $2 }' "$tmp/load.out")
	python3 - "$c1" "$c0" "$gmax" "$m1" "$m0" "$hz" "$secs" "$a1" "$a0" "$sent" "$window" "$ngrp" "$n" "${aware:--1}" <<'PY'
import sys
c1, c0, gmax, m1, m0, hz, ms, a1, a0, sent, window, ngrp, n, aware = map(float, sys.argv[1:])
secs = ms / 1000.0
top_cpu = (c1 - c0) / hz / secs * 100
grp_cpu = gmax / hz / secs * 100
gen_cpu = (m1 - m0) / hz / secs * 100
run_s = window + 9
health = sent / run_s  # HEALTHs the generator sent per second (all nodes)
top_msgs = (a1 - a0) / secs if ngrp else health
grp_msgs = health / ngrp if ngrp else 0
print("%.1f %.1f %.1f %.0f %.0f %.0f" % (top_cpu, grp_cpu, gen_cpu, top_msgs, grp_msgs, aware))
PY
}

echo "lofamo-scale: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, runs $runs, window ${window}s, group size $gsize"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %-5s %6s %10s %12s %10s %12s %14s %9s\n' torus mode groups "top CPU%" "group CPU%" "gen CPU%" "top msg/s" "group msg/s" "aware ms"
for torus in $tori; do
	for mode in $modes; do
		: >"$tmp/rows"
		for ((r = 0; r < runs; r++)); do
			one_run "$torus" "$mode" >>"$tmp/rows"
		done
		n=$(($(echo "$torus" | tr x '*')))
		ng=$(((n + gsize - 1) / gsize))
		[ "$mode" = flat ] && ng=0
		printf '%-10s %-5s %6s' "$torus" "$mode" "$ng"
		for col in 1 2 3 4 5 6; do
			v=$(awk -v c=$col '{ print $c }' "$tmp/rows" | median)
			printf ' %10s' "$v"
		done
		printf '   (runs: %s)\n' "$(awk '{ printf "%s%s", (NR > 1 ? "; " : ""), $0 }' "$tmp/rows")"
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
