#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Side by side, two builds, alternating rounds: the 8-byte ping-pong in the
# two-host placement and the default rows (docs/performance.md, "udp in the
# two-host placement").
#
#   bench/trace-2host-sbs.sh OLD_BUILD NEW_BUILD [ROUNDS]     (default 5)
#
# Each round runs, for OLD then NEW (NEW first in even rounds), the SoftDNP
# ping-pongs udp-2host, shm-2host (bench/lib.sh, two_host_wrappers), udp and
# shm (dnp-run --pin), each twice under GNU time, N/5 and N round trips
# (N = SBS_N, default 20000), as bench/run.sh part 'hand' counts them: CPU
# per message (user + system of every process of the run, differenced over
# the extra messages) and switches per half round trip (voluntary +
# involuntary, differenced); the half round trip is the longer run's median.
# Then bench/trace-2host.sh (perf, 5000 round trips) of udp-2host: switches
# and program wake-ups per half round trip of the daemons and programs alone.
# Once per round, the peer: libfabric fi_pingpong over udp;ofi_rxd, server on
# CPU 1 and client on CPU 0 (its two-host placement is its pinned one), the
# same two runs. Every run holds the heavy-run lock (flock
# /tmp/softdnp-heavy.lock), one at a time.
# Output: CSV rows round,build,test,lat_us,cpu_us_per_msg,csw_per_half on
# stdout as they come, then the medians over rounds and NEW/OLD ratios.
set -uo pipefail
old=$(cd "${1:?usage: bench/trace-2host-sbs.sh OLD_BUILD NEW_BUILD [ROUNDS]}" && pwd)
new=$(cd "${2:?usage: bench/trace-2host-sbs.sh OLD_BUILD NEW_BUILD [ROUNDS]}" && pwd)
rounds=${3:-5}
n=${SBS_N:-20000}
lo=$((n / 5))
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
lock=/tmp/softdnp-heavy.lock
tmp=$(mktemp -d /tmp/trace-2host-sbs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
two_host_wrappers "$tmp/old" "$old"
two_host_wrappers "$tmp/new" "$new"
csv=$tmp/rows.csv

# one BUILD_DIR WRAPPERS TEST ITERS RUSAGE_OUT: one SoftDNP ping-pong; the median in $tmp/lat
one() {
	local b=$1 w=$2 t=$3 it=$4 tp opts prog
	tp=${t%%-*}
	case $t in
	*-2host) opts=(--dnpd "$w/dnpd") prog=$w/dnp_pingpong ;;
	*) opts=(--pin) prog=dnp_pingpong ;;
	esac
	flock "$lock" timeout 200 /usr/bin/time -f '%U %S %w %c' -o "$5" "$b/apps/dnp-run" \
		--torus 2x1x1 --transport "$tp" "${opts[@]}" --timeout 150 -- "$prog" --sizes 8 \
		--iters "$it" --warmup 100 --csv >"$tmp/out" 2>&1 || return 1
	sed -n 's/^\[0,0,0\] 8,[0-9]*,[^,]*,\([^,]*\),.*/\1/p' "$tmp/out" >"$tmp/lat"
}
# row ROUND LABEL TEST LAT RUS_HI RUS_LO
row() {
	local rh rl
	rh=$(rus_sum "$5")
	rl=$(rus_sum "$6")
	echo "$rh $rl" | awk -v r="$1" -v b="$2" -v t="$3" -v l="$4" -v m=$((2 * (n - lo))) '{
		printf "%s,%s,%s,%s,%.2f,%.2f\n", r, b, t, l, ($1 - $3) * 1e6 / m, ($2 - $4) / m }' |
		tee -a "$csv"
}
# fi ITERS SUFFIX: fi_pingpong udp;ofi_rxd, GNU time of both sides in $tmp/rus-fi$SUFFIX
fi_one() {
	local p
	p=$((20000 + RANDOM % 20000))
	flock "$lock" bash -c '
		/usr/bin/time -f "%U %S %w %c" -o "$1.s" taskset -c 1 timeout 120 fi_pingpong \
			-p "udp;ofi_rxd" -e rdm -B "$2" -S 8 -I "$3" >/dev/null 2>&1 &
		spid=$!
		for i in $(seq 100); do ss -Hltn "sport = :$2" | grep -q . && break; sleep 0.1; done
		/usr/bin/time -f "%U %S %w %c" -o "$1.c" taskset -c 0 timeout 120 fi_pingpong \
			-p "udp;ofi_rxd" -e rdm -P "$2" -S 8 -I "$3" 127.0.0.1 >"$1.out" 2>&1
		rc=$?
		wait $spid
		exit $rc' _ "$tmp/rus-fi$2" "$p" "$1" || return 1
	cat "$tmp/rus-fi$2.s" "$tmp/rus-fi$2.c" >"$tmp/rus-fi$2"
	awk 'h && NF >= 8 { print $7; exit } $1 == "bytes" { h = 1 }' "$tmp/rus-fi$2.out" >"$tmp/lat"
}

for r in $(seq "$rounds"); do
	order=(old new)
	[ $((r % 2)) = 0 ] && order=(new old)
	for v in "${order[@]}"; do
		b=$old
		[ "$v" = new ] && b=$new
		for t in udp-2host shm-2host udp shm; do
			one "$b" "$tmp/$v" "$t" "$lo" "$tmp/rus-lo" &&
				one "$b" "$tmp/$v" "$t" "$n" "$tmp/rus-hi" &&
				row "$r" "$v" "$t" "$(cat "$tmp/lat")" "$tmp/rus-hi" "$tmp/rus-lo" ||
				echo "$r,$v,$t,failed,," | tee -a "$csv"
		done
		sw=$(flock "$lock" "$here/trace-2host.sh" "$b" 5000 udp 2>/dev/null |
			sed -n 's/^per half round trip: switches \([0-9.]*\) .*program wake-ups \([0-9.]*\),.*/\1 \2/p')
		set -- $sw
		echo "$r,$v,udp-2host-perf,,,${1:-},${2:-}" | tee -a "$csv"
	done
	if command -v fi_pingpong >/dev/null; then
		fi_one "$lo" lo && fi_one "$n" hi &&
			row "$r" peer "udp;ofi_rxd" "$(cat "$tmp/lat")" "$tmp/rus-fihi" "$tmp/rus-filo" ||
			echo "$r,peer,udp;ofi_rxd,failed,," | tee -a "$csv"
	fi
done

echo
echo "medians over $rounds rounds (half round trip us, CPU us per message, switches per half round trip; perf: switches, program wake-ups):"
python3 - "$csv" <<'EOF'
import csv, statistics, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) >= 6 and r[3] != "failed"]
def med(b, t, col):
    v = [float(r[col]) for r in rows if r[1] == b and r[2] == t and len(r) > col and r[col] != ""]
    return statistics.median(v) if v else None
def f(x):
    return "-" if x is None else f"{x:.2f}"
def rat(a, b):
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"
print("| test | old | new | new / old |")
print("| --- | ---: | ---: | ---: |")
for t in ("udp-2host", "shm-2host", "udp", "shm"):
    for col, name in ((3, "half RTT, us"), (4, "CPU per message, us"), (5, "switches per half RTT")):
        o, n = med("old", t, col), med("new", t, col)
        print(f"| {t} {name} | {f(o)} | {f(n)} | {rat(n, o)} |")
for col, name in ((5, "switches per half RTT (perf)"), (6, "program wake-ups per half RTT (perf)")):
    o, n = med("old", "udp-2host-perf", col), med("new", "udp-2host-perf", col)
    print(f"| udp-2host {name} | {f(o)} | {f(n)} | {rat(n, o)} |")
pl, pc = med("peer", "udp;ofi_rxd", 3), med("peer", "udp;ofi_rxd", 4)
print(f"\npeer libfabric udp;ofi_rxd (server CPU 1, client CPU 0): half RTT {f(pl)} us, CPU per message {f(pc)} us, "
      f"switches per half RTT {f(med('peer', 'udp;ofi_rxd', 5))}")
for b in ("old", "new"):
    l, c = med(b, "udp-2host", 3), med(b, "udp-2host", 4)
    print(f"{b}: udp-2host / peer: half RTT {rat(l, pl)}, CPU per message {rat(c, pc)}")
# per round ratios against the same round's peer
for b in ("old", "new"):
    rl, rc = [], []
    for r in sorted({x[0] for x in rows}, key=int):
        a = [x for x in rows if x[0] == r and x[1] == b and x[2] == "udp-2host"]
        p = [x for x in rows if x[0] == r and x[1] == "peer"]
        if a and p and float(p[0][3]) > 0 and float(p[0][4]) > 0:
            rl.append(float(a[0][3]) / float(p[0][3]))
            rc.append(float(a[0][4]) / float(p[0][4]))
    if rl:
        print(f"{b}: per-round ratios to the same round's peer, half RTT {' '.join(f'{x:.2f}' for x in rl)}"
              f" (median {statistics.median(rl):.2f}); CPU {' '.join(f'{x:.2f}' for x in rc)} (median {statistics.median(rc):.2f})")
EOF
