#!/bin/bash
# SPDX-License-Identifier: MIT
# Verbs figures: SoftDNP over the verbs transport beside perftest, on the same
# Soft-RoCE (rdma_rxe) device pair inside the VM of tests/verbs/vm.sh.
# In ROUNDS alternating rounds (guest.sh scenario perftest):
#   ib_send_lat -s 8, ib_write_lat -s 8 (t_typical, the median), ib_write_bw
#   -s 1M (average MB/s), then dnpd 2x1x1 in the variants of VERBS_VARIANTS
#   (default UC QPs, RC QPs and UC with --idle busy; guest.sh variant_up):
#   dnp_pingpong 8 bytes (median half round trip) and dnp_bw 1 MiB (MB/s),
#   and what node 0's daemon did per round trip (loop passes, sleeps, timer
#   wake-ups, yields, CQ arms and events; dnpctl stats before and after), with
#   the VM's context switches and ksoftirqd CPU time per round trip (also for
#   ib_send_lat).
# VERBS_BEFORE_DNPD=PATH: a dnpd built from an earlier commit, for the
#   variants uc-before and rc-before (before/after in one VM boot).
# Prints the medians over the rounds and the two ratios of the goals (8-byte
# half round trip / ib_send_lat, 1 MiB bandwidth / ib_write_bw); every line
# says whether the VM ran under KVM or TCG (figures of a TCG guest are only
# comparable as ratios). Raw output goes to OUTDIR (default
# /tmp/softdnp-verbs-bench), never into tracked files. Root only (vm.sh).
# usage: bench/verbs.sh BUILD_DIR [ROUNDS] [OUTDIR]
set -u
build=$(cd "$1" && pwd)
rounds=${2:-3}
out=${3:-/tmp/softdnp-verbs-bench}
top=$(cd "$(dirname "$0")/.." && pwd)

rm -rf "$out"
mkdir -p "$out"
BENCH_ROUNDS=$rounds
export BENCH_ROUNDS
lock=(flock /tmp/softdnp-heavy.lock)
[ "${VERBS_LOCKED:-0}" = 1 ] && lock=()
VERBS_TIMEOUT=${VERBS_TIMEOUT:-1500} "${lock[@]}" "$top/tests/verbs/vm.sh" "$out" \
	"$top/tests/verbs/guest.sh" "$build" perftest
rc=$?
accel=$(cat "$out/accel" 2>/dev/null || echo "?")
if [ $rc -ne 0 ] || [ ! -s "$out/bench.txt" ]; then
	echo "bench/verbs.sh: the VM run failed ($rc); see $out/guest.log" >&2
	exit 1
fi

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit }
		if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
med_of() { # NAME METRIC
	awk -v n="$1" -v m="$2" '$2 == n && $3 == m && $4 != "-" {print $4}' "$out/bench.txt" | median
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-";
	else printf "%.2f\n", a / b }'; }

names=$(awk '$2 ~ /^dnp-/ {print $2}' "$out/bench.txt" | awk '!seen[$0]++')
{
	echo "# SoftDNP verbs vs perftest on Soft-RoCE (bench/verbs.sh, $(date -u +%Y-%m-%dT%H:%MZ))"
	echo "# guest accelerator: $accel; medians over $rounds rounds; host: $(nproc) CPUs"
	printf '%-16s %-10s %10s  %s\n' name metric median accel
	for n in ib_send_lat ib_write_lat $names; do
		v=$(med_of "$n" lat8_us)
		[ "$v" = - ] || printf '%-16s %-10s %10s  %s\n' "$n" lat8_us "$v" "$accel"
	done
	for n in ib_write_bw $names; do
		v=$(med_of "$n" bw1M_MBps)
		[ "$v" = - ] || printf '%-16s %-10s %10s  %s\n' "$n" bw1M_MBps "$v" "$accel"
	done
	sl=$(med_of ib_send_lat lat8_us)
	wb=$(med_of ib_write_bw bw1M_MBps)
	for n in $names; do
		echo "ratio $n lat8/ib_send_lat $(ratio "$(med_of "$n" lat8_us)" "$sl") (goal <= 2)" \
			"bw1M/ib_write_bw $(ratio "$(med_of "$n" bw1M_MBps)" "$wb") (goal >= 0.5) [$accel]"
	done
	# node 0's daemon per 8-byte round trip (medians over the rounds)
	for n in ib_send_lat $names; do
		printf '%s per round trip [%s]:' "$n" "$accel"
		for k in passes sleeps timer_wakeups yields cq_arms cq_events ctxt ksoftirqd_us; do
			v=$(awk -v n="$n" -v k="$k" '$2 == n {
				for (i = 4; i < NF; i++) if ($i == k) print $(i + 1) }' \
				"$out/counters.txt" 2>/dev/null | median)
			[ "$v" = - ] || printf ' %s %s' "$k" "$v"
		done
		echo
	done
} | tee "$out/summary.txt"
