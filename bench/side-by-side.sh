#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Latency of two builds side by side, alternating, in one run: the loopback
# PUT (1x1x1, --pin, adaptive and busy idle policies) and the 8-byte
# ping-pong on 2x1x1 over shm (adaptive pinned and unpinned, busy) and udp
# (unpinned and pinned). For a change to the
# daemon or libdnp measured against the code before it (docs/performance.md).
# SBS_SET=private measures large messages instead: the 64 KiB and 1 MiB
# ping-pong and the 1 MiB stream (dnp_bw, MB/s) with buffers outside the shared
# heap (DNP_APP_NOHEAP=1, the daemon's process_vm path) over shm and udp, and
# the 1 MiB ping-pong and stream from the heap beside them.
# SBS_SET=hand measures the hand-off (docs/performance.md, "Hand-off and
# context switches"): the cache line (bench/cacheline, ns), the loopback PUT
# and the 8-byte shm and udp ping-pong in the default (--pin) and the two-host
# placement (node x's daemon and program on CPU x), each also with its context
# switches per half round trip (rows csw-*: voluntary + involuntary of dnp-run's
# whole tree, start-up included, over 2 x (iterations + warm-up)), and the
# loopback and the pinned shm ping-pong beside two busy processes (loaded-*:
# two shell loops started before and killed by PID after each run).
#   bench/side-by-side.sh BASE_BUILD NEW_BUILD [ROUNDS] [NAME]
# Writes bench/results/NAME-DATE.csv (or into $SBS_OUT) (build,round,test,median_us: each run's
# median of dnp_pingpong, or dnp_bw's MB/s for the rows named *-bw-*) and
# NAME-DATE.md (median over rounds, new / base).
set -euo pipefail
base=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
rounds=${3:-5}
name=${4:-side-by-side}
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
day=$(date -u +%Y-%m-%d)
csv=${SBS_OUT:-$top/bench/results}/$name-$day.csv
md=${SBS_OUT:-$top/bench/results}/$name-$day.md

set=${SBS_SET:-latency}
. "$top/bench/lib.sh"
# median of one dnp_pingpong run (its CSV's t_median_us) of node 0; FIELD=3: dnp_bw's MB/s
one() { # BUILD TORUS ARGS...
	local b=$1 t=$2
	shift 2
	# one torus at a time on the machine (the shared heavy-run lock)
	${DNP_BENCH_LOCK:-flock /tmp/softdnp-heavy.lock} "$b/apps/dnp-run" --torus "$t" --timeout 60 "$@" 2>/dev/null |
		grep '^\[0,0,0\] [0-9]' | tail -1 | cut -d' ' -f2 | cut -d, -f"${FIELD:-4}"
}
# hand_one BUILD NAME TORUS ARGS...: one run under GNU time; rows NAME (median,
# us) and csw-NAME (switches per half round trip); ITERS is the --iters given
hand_one() {
	local b=$1 n=$2 t=$3 out rus lat
	shift 3
	rus=$(mktemp /tmp/sbs-rus.XXXXXX)
	out=$(${DNP_BENCH_LOCK:-flock /tmp/softdnp-heavy.lock} /usr/bin/time -f '%U %S %w %c' -o "$rus" \
		"$b/apps/dnp-run" --torus "$t" --timeout 60 "$@" 2>/dev/null | grep '^\[0,0,0\] [0-9]' | tail -1) || true
	lat=$(echo "$out" | cut -d' ' -f2 | cut -d, -f4)
	row "$n" "$lat"
	[ -n "$lat" ] && row "csw-$n" "$(rus_sum "$rus" | awk -v m=$((2 * (ITERS + 100))) '{ printf "%.2f", $2 / m }')"
	rm -f "$rus"
}
# loaded CMD...: CMD beside two busy processes, started once the heavy-run lock
# is ours (so they never wait for it) and killed by PID after
loaded() {
	local h1 h2 rc=0
	# DNP_BENCH_LOCK set: the caller holds the lock (or wants none)
	[ -n "${DNP_BENCH_LOCK:-}" ] || {
		exec 9>>/tmp/softdnp-heavy.lock
		flock 9
	}
	sh -c 'while :; do :; done' &
	h1=$!
	sh -c 'while :; do :; done' &
	h2=$!
	DNP_BENCH_LOCK="env" "$@" || rc=$?
	kill "$h1" "$h2"
	wait "$h1" "$h2" 2>/dev/null || true
	[ -n "${DNP_BENCH_LOCK:-}" ] || {
		flock -u 9
		exec 9>&-
	}
	return $rc
}
hand_set() { # BUILD
	local b=$1 w=$wrap/$which lb
	lb="--sizes 8 --iters 50000 --warmup 100 --csv"
	[ -x "$w/dnpd" ] || two_host_wrappers "$w" "$b"
	row cacheline "$("$b/bench/cacheline" --cpus 0,1 2>/dev/null)"
	ITERS=50000 hand_one "$b" loopback 1x1x1 --transport shm --pin -- dnp_pingpong --loopback $lb
	ITERS=500 loaded hand_one "$b" loaded-loopback 1x1x1 --transport shm --pin -- dnp_pingpong \
		--loopback --sizes 8 --iters 500 --warmup 100 --csv
	lb="--sizes 8 --iters 20000 --warmup 100 --csv"
	ITERS=20000 hand_one "$b" shm 2x1x1 --transport shm --pin -- dnp_pingpong $lb
	ITERS=20000 hand_one "$b" udp 2x1x1 --transport udp --pin -- dnp_pingpong $lb
	ITERS=20000 hand_one "$b" shm-2host 2x1x1 --transport shm --dnpd "$w/dnpd" -- "$w/dnp_pingpong" $lb
	ITERS=20000 hand_one "$b" udp-2host 2x1x1 --transport udp --dnpd "$w/dnpd" -- "$w/dnp_pingpong" $lb
	ITERS=500 loaded hand_one "$b" loaded-shm 2x1x1 --transport shm --pin -- dnp_pingpong \
		--sizes 8 --iters 2000 --warmup 100 --csv
}
wrap=$(mktemp -d /tmp/sbs-wrap.XXXXXX)
trap 'rm -rf "$wrap"' EXIT
echo "build,round,test,median_us" >"$csv"
for r in $(seq "$rounds"); do
	for which in base new; do
		b=$base
		[ $which = new ] && b=$new
		row() { echo "$which,$r,$1,${2:-}" >>"$csv"; }
		if [ "$set" = hand ]; then
			hand_set "$b"
			continue
		fi
		if [ "$set" = private ]; then
			nh() { DNP_APP_NOHEAP=1 one "$@"; }
			row priv-shm-64K "$(nh "$b" 2x1x1 --transport shm -- dnp_pingpong --csv --sizes 64K --iters 2000)"
			row priv-shm-1M "$(nh "$b" 2x1x1 --transport shm -- dnp_pingpong --csv --sizes 1M --iters 300)"
			row priv-udp-1M "$(nh "$b" 2x1x1 --transport udp -- dnp_pingpong --csv --sizes 1M --iters 300)"
			row priv-shm-bw-1M "$(FIELD=3 nh "$b" 2x1x1 --transport shm -- dnp_bw --csv --sizes 1M --iters 1000)"
			row heap-shm-1M "$(one "$b" 2x1x1 --transport shm -- dnp_pingpong --csv --sizes 1M --iters 300)"
			row heap-shm-bw-1M "$(FIELD=3 one "$b" 2x1x1 --transport shm -- dnp_bw --csv --sizes 1M --iters 1000)"
			row heap-shm-8 "$(one "$b" 2x1x1 --transport shm -- dnp_pingpong --csv --sizes 8 --iters 20000)"
			continue
		fi
		row loopback "$(one "$b" 1x1x1 --transport shm --pin -- dnp_pingpong --loopback --sizes 8 --iters 50000 --csv)"
		row loopback-busy "$(one "$b" 1x1x1 --transport shm --pin --idle busy -- dnp_pingpong --loopback --sizes 8 --iters 50000 --csv)"
		row shm "$(one "$b" 2x1x1 --transport shm --pin -- dnp_pingpong --sizes 8 --iters 20000 --csv)"
		row shm-unpinned "$(one "$b" 2x1x1 --transport shm -- dnp_pingpong --sizes 8 --iters 20000 --csv)"
		row shm-busy "$(one "$b" 2x1x1 --transport shm --pin --idle busy -- dnp_pingpong --sizes 8 --iters 20000 --csv)"
		row udp "$(one "$b" 2x1x1 --transport udp -- dnp_pingpong --sizes 8 --iters 20000 --csv)"
		row udp-pin "$(one "$b" 2x1x1 --transport udp --pin -- dnp_pingpong --sizes 8 --iters 20000 --csv)"
	done
	echo "side-by-side: round $r of $rounds done" >&2
done
python3 - "$csv" "$base" "$new" "$rounds" >"$md" <<'PY'
import csv, statistics, sys, platform
rows = list(csv.DictReader(open(sys.argv[1])))
print("# Side by side: two builds, alternating, one run\n")
print(f"base: `{sys.argv[2]}`; new: `{sys.argv[3]}`; {sys.argv[4]} rounds; machine: "
      f"{platform.node()}, load average at the end {open('/proc/loadavg').read().split()[0]}.")
print("Each cell: the median over rounds of each run's median (us; rows named *-bw-*: MB/s of "
      "a dnp_bw stream; cacheline: ns; csw-*: context switches per half round trip); failed runs "
      "are left out.\n")
print("| test | base | new | new / base | runs ok base / new |")
print("|---|---:|---:|---:|---|")
tests = []
for r in rows:
    if r["test"] not in tests:
        tests.append(r["test"])
for t in tests:
    v = {w: [float(r["median_us"]) for r in rows if r["test"] == t and r["build"] == w and r["median_us"]]
         for w in ("base", "new")}
    n = {w: sum(1 for r in rows if r["test"] == t and r["build"] == w) for w in ("base", "new")}
    mb = statistics.median(v["base"]) if v["base"] else None
    mn = statistics.median(v["new"]) if v["new"] else None
    ratio = f"{mn / mb:.2f}" if mb and mn else "-"
    f = lambda x: f"{x:.3f}" if x else "-"
    print(f"| {t} | {f(mb)} | {f(mn)} | {ratio} | {len(v['base'])}/{n['base']} / {len(v['new'])}/{n['new']} |")
PY
cat "$md"
