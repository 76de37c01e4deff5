#!/bin/sh
# SPDX-License-Identifier: MIT
# Impairment drill: a 2x2x2 torus of real dnpd daemons whose every link loses
# 5% of the frames, reorders 1%, duplicates 0.5% and corrupts 0.1%
# (dnpd --impair, transport/impair.h; seeded per node). Then
#   - dnp_alltoall: every node PUTs every size to every other node, and every
#     byte is verified (all 8 report "all bytes verified");
#     corrupt frames get links judged sick, and a message may go round one
#     (--detours: a longer path) or have its packets reordered when a route
#     changes under it (the target declares it not delivered and it is sent
#     again: docs/protocol.md, "Incomplete messages");
#   - the counters account for the faults: the sum of the receivers' CRC
#     errors equals the sum of the frames the senders corrupted (each has one
#     bit flipped, which the CRC always catches); frames were dropped, and the
#     senders retransmitted; duplicated frames were seen as duplicates, and
#     reordered ones as out of order, by the receivers;
#   - `dnpctl impair off` turns it off at run time (before the counters are
#     read, so that keep-alive credits do not meet new faults meanwhile); the
#     counters are read once they stand still (two reads alike), and a second
#     all-to-all after that must leave the injection counters unchanged.
# No fixed sleeps: every wait is for a file or a state, with a bound.
# usage: impair.sh BUILD_DIR shm|udp
# Exit: 0 pass, 1 fail, 77 skip (daemon or apps not built).
set -u
build=$1
tr=$2
spec='loss=5%,reorder=1%,dup=0.5%,corrupt=0.1%'

. "$(dirname "$0")/lib.sh"
dnp_tools "$build"
need_built "$dnpd" "$ctl" "$a2a"

run_dir /dev/shm/selfheal-impair-$$
base=$(port_base)

# fail WHY: the verdict, then the counters and the logs' last lines, all within
# the last 100 lines that meson test --print-errorlogs shows.
fail() {
	echo "FAIL: $tr-impair: $*"
	[ -e "$dir/stats" ] && { echo "--- counters"; grep -E '^engine ' "$dir/stats" | head -n 8; }
	for f in "$dir"/dnpd-*.log; do
		[ -e "$f" ] && { echo "--- $f"; tail -n 4 "$f"; }
	done
	for f in "$dir"/a2a-*.out; do
		[ -e "$f" ] && { echo "--- $f"; tail -n 2 "$f"; }
	done
	exit 1
}

for id in 0 1 2 3 4 5 6 7; do
	x=$((id % 2)); y=$((id / 2 % 2)); z=$((id / 4))
	"$dnpd" --torus 2x2x2 --coord "$x,$y,$z" --run-dir "$dir" --transport "$tr" \
		--udp-base-port "$base" --impair "$spec,seed=$((7 + id))" \
		>"$dir/dnpd-$id.log" 2>&1 &
	pids="$pids $!"
done
wait_links_up 30 0 1 2 3 4 5 6 7

echo "+ dnp_alltoall on 8 daemons, every link: $spec"
DNP_APP_TIMEOUT=60
export DNP_APP_TIMEOUT
# alltoall SIZES WHEN: dnp_alltoall on every node; each must pass and verify its bytes
# (WHEN ends the failure messages).
alltoall() {
	apids=""
	for id in 0 1 2 3 4 5 6 7; do
		DNP_SOCKET=$dir/node-$id.sock "$a2a" --detours --sizes "$1" >"$dir/a2a-$id.out" 2>&1 &
		apids="$apids $!"
	done
	rc=0
	for p in $apids; do wait "$p" || rc=1; done
	[ $rc -eq 0 ] || fail "an all-to-all instance failed$2"
	n=$(cat "$dir"/a2a-*.out | grep -c 'all bytes verified')
	[ "$n" -eq 8 ] || fail "$n of 8 instances verified their bytes$2"
}
alltoall 1,4095,65536,300000 ""

# stats FILE: every daemon's counters into FILE (a dnpctl that fails fails the test).
stats() {
	: >"$1"
	for id in 0 1 2 3 4 5 6 7; do
		"$ctl" --socket "$dir/node-$id.sock" stats >>"$1" || fail "dnpctl stats on node $id"
	done
}
sum() { # LINE_FILTER FIELD [FILE]
	awk -v pat="$1" -v f="$2" '$0 ~ pat { for (i = 1; i < NF; i++) if ($i == f) s += $(i + 1) }
		END { print s + 0 }' "${3:-$dir/stats}"
}
# counted FILE: the counters the verdict compares, on one line
counted() {
	echo "$(sum ' impair ' frames "$1") $(sum ' impair ' corrupted "$1")" \
		"$(sum '^engine ' rx_crc_errors "$1") $(sum 'rx_dup' rx_dup "$1")"
}

# Impairment off everywhere (run time); what is in flight lands: the counters
# are read once every link says off (each daemon takes the change at its next
# housekeeping pass) and two reads in a row agree (10 s at most).
for id in 0 1 2 3 4 5 6 7; do
	"$ctl" --socket "$dir/node-$id.sock" impair off || fail "dnpctl impair off"
done
stats "$dir/stats"
i=0
while :; do
	stats "$dir/stats.next"
	[ "$(grep -c ' impair off ' "$dir/stats.next")" -eq 48 ] &&
		[ "$(counted "$dir/stats")" = "$(counted "$dir/stats.next")" ] && break
	mv "$dir/stats.next" "$dir/stats"
	i=$((i + 1))
	[ $i -le 100 ] || fail "the counters never stood still after impair off"
	sleep 0.1
done
mv "$dir/stats.next" "$dir/stats" # the read that saw every link off
corrupted=$(sum ' impair ' corrupted)
dropped=$(sum ' impair ' dropped)
duplicated=$(sum ' impair ' duplicated)
reordered=$(sum ' impair ' reordered)
frames=$(sum ' impair ' frames)
crc=$(sum '^engine ' rx_crc_errors)
retx=$(sum 'tx_retx_frames' tx_retx_frames)
rounds=$(sum 'retx_rounds' retx_rounds)
dups=$(sum 'rx_dup' rx_dup)
ooo=$(sum 'rx_out_of_order' rx_out_of_order)
echo "injected: frames $frames dropped $dropped corrupted $corrupted duplicated $duplicated reordered $reordered"
echo "seen:     crc_errors $crc retx_frames $retx retx_rounds $rounds rx_dup $dups rx_out_of_order $ooo"
echo "resent:   incomplete messages $(sum '^bounds ' rx_incomplete_msgs) query_resends $(sum '^bounds ' query_resends)"
[ "$frames" -gt 1000 ] || fail "too little traffic to judge ($frames frames)"
[ "$crc" -eq "$corrupted" ] || fail "CRC errors ($crc) != corrupted frames ($corrupted)"
[ "$dropped" -gt 0 ] && [ "$retx" -gt 0 ] && [ "$rounds" -gt 0 ] ||
	fail "losses without retransmissions"
[ "$duplicated" -gt 0 ] && [ "$dups" -gt 0 ] || fail "duplicates not seen as duplicates"
[ "$reordered" -gt 0 ] && [ "$ooo" -gt 0 ] || fail "reordering not seen"
grep -q 'state BROKEN' "$dir/stats" && fail "a link broke"

# Run-time change: every link says off, and a second all-to-all (traffic on
# every link) meets no fault: the injection counters do not move.
n=$(grep -c ' impair off ' "$dir/stats")
if [ "$n" -ne 48 ]; then
	grep -v ' impair off ' "$dir/stats" | grep ' impair ' >&2
	fail "$n of 48 links show 'impair off' after dnpctl impair off"
fi
alltoall 1,65536 " with impairment off"
stats "$dir/stats2"
f2=$(sum ' impair ' frames "$dir/stats2")
[ "$f2" -eq "$frames" ] || fail "frames were still impaired after off ($frames -> $f2)"
"$ctl" --socket "$dir/node-0.sock" impair 'loss=200%' 2>/dev/null && fail "a bad spec was accepted"
echo "PASS: $tr-impair"
exit 0
