#!/bin/sh
# SPDX-License-Identifier: MIT
# Side-by-side benchmarks of SoftDNP on this machine.
#
#   bench/run.sh [BUILD_DIR]        (./dnp bench passes a release build)
#
# Runs, REPS times each (default 5, env REPS), and keeps the median of the
# per-run medians:
#   - loopback latency: dnp_pingpong --loopback on a 1x1x1 torus (PUT to self,
#     time to TX_DONE + RX_PUT, APEnet v5 paper, results);
#   - 2-node PUT ping-pong and bandwidth over shm, then over udp
#     (a 2x1x1 torus, env BENCH_TORUS to change; nodes 0,0,0 and 1,0,0);
#   - the baseline: plain UDP ping-pong between two processes (udp_pingpong),
#     blocking and busy-polling receive.
# Writes bench/results/<date>-<host>.md and .csv (raw per-run rows).
set -u
build=${1:-build}
reps=${REPS:-5}
torus=${BENCH_TORUS:-2x1x1}
lat_sizes=${BENCH_LAT_SIZES:-8,64,512,4096,65536,1048576}
bw_sizes=${BENCH_BW_SIZES:-4096,65536,1048576}
here=$(cd "$(dirname "$0")" && pwd)
outdir=$here/results
stamp=$(date -u +%Y-%m-%d)
host=$(hostname -s 2>/dev/null || hostname)
md=$outdir/$stamp-$host.md
csv=$outdir/$stamp-$host.csv
run=$build/apps/dnp-run

for p in "$run" "$build/apps/dnp_pingpong" "$build/apps/dnp_bw" "$build/apps/udp_pingpong" \
	"$build/dnp-core/dnpd/dnpd"; do
	if [ ! -x "$p" ]; then
		echo "bench: $p is not built" >&2
		exit 1
	fi
done
mkdir -p "$outdir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "test,bytes,rep,t_min_us,t_median_us,t_p99_us,MBps,msgps" >"$csv"

# collect TEST REP FILE KIND: append the CSV rows of one run (KIND lat or bw).
collect() {
	awk -F, -v t="$1" -v r="$2" -v k="$4" '
		{ sub(/^\[[0-9]+,[0-9]+,[0-9]+\] /, "") }
		/^[0-9]+,/ {
			if (k == "lat") printf "%s,%s,%s,%s,%s,%s,,\n", t, $1, r, $3, $4, $5
			else printf "%s,%s,%s,,,,%s,%s\n", t, $1, r, $3, $4
		}' "$3" >>"$csv"
}

# bench TEST KIND REP COMMAND...: one run; its output is kept on failure.
bench() {
	t=$1 k=$2 r=$3
	shift 3
	if ! "$@" >"$tmp/out" 2>&1; then
		echo "bench: $t (run $r) failed:" >&2
		sed 's/^/    /' "$tmp/out" >&2
		return 1
	fi
	collect "$t" "$r" "$tmp/out" "$k"
}

dnp() { # TOPOLOGY TRANSPORT [DNP-RUN OPTIONS (--pin, --idle busy)] PROGRAM ARGS...
	topo=$1 tr=$2
	shift 2
	opts=()
	while [ "${1#--}" != "$1" ]; do
		opts+=("$1")
		[ "$1" = --idle ] && { shift; opts+=("$1"); }
		shift
	done
	"$run" --torus "$topo" --transport "$tr" "${opts[@]}" --timeout 300 -- "$@"
}

echo "bench: $reps runs of each test; torus $torus for the 2-node tests"
r=1
while [ "$r" -le "$reps" ]; do
	echo "bench: run $r of $reps"
	bench loopback lat "$r" dnp 1x1x1 shm --pin dnp_pingpong --loopback --sizes "$lat_sizes" --csv
	bench shm-pingpong lat "$r" dnp "$torus" shm dnp_pingpong --sizes "$lat_sizes" --csv
	bench shm-bw bw "$r" dnp "$torus" shm dnp_bw --sizes "$bw_sizes" --csv
	# dedicated polling: daemons never yield, each program on the other CPU
	bench shm-busy-pingpong lat "$r" dnp "$torus" shm --pin --idle busy dnp_pingpong \
		--sizes "$lat_sizes" --csv
	bench shm-busy-bw bw "$r" dnp "$torus" shm --pin --idle busy dnp_bw --sizes "$bw_sizes" --csv
	bench udp-pingpong lat "$r" dnp "$torus" udp dnp_pingpong --sizes "$lat_sizes" --csv
	bench udp-bw bw "$r" dnp "$torus" udp dnp_bw --sizes "$bw_sizes" --csv
	bench kernel-udp-blocking lat "$r" "$build/apps/udp_pingpong" --sizes "$lat_sizes" --csv
	bench kernel-udp-busy lat "$r" "$build/apps/udp_pingpong" --busy --sizes "$lat_sizes" --csv
	r=$((r + 1))
done

# med, ratio, machine_info
. "$(dirname "$0")/lib.sh"
machine_info
{
	echo "# SoftDNP benchmarks, $stamp, host $host"
	echo
	echo "| machine | |"
	echo "| --- | --- |"
	echo "| CPUs (nproc) | $(nproc) |"
	echo "| CPU model | ${cpu:-unknown} |"
	echo "| kernel | $(uname -sr) |"
	echo "| build | buildtype $btype |"
	echo "| runs per test | $reps (tables show the median of the per-run values) |"
	echo "| 2-node torus | $torus, nodes 0,0,0 and 1,0,0 |"
	echo "| placement | loopback and \"busy\": dnp-run --pin (node i's daemon on CPU i mod 2, its program on the other); others: the scheduler's |"
	echo "| idle policy | adaptive (dnpd default: yield, then sleep); \"shm busy\": dnpd --idle busy |"
	echo
	echo "Method: dnp_pingpong = PUT ping-pong, half round trip (EURETILE report, test suite);"
	echo "loopback = PUT to self, time until TX_DONE and RX_PUT (APEnet v5 paper); dnp_bw = PUT stream"
	echo "with a window of 32, timed to the receiver's acknowledgement. Baseline: udp_pingpong,"
	echo "two processes exchanging UDP datagrams over loopback (no daemon in the path)."
	echo "Every figure is the median over runs of a per-run statistic; the machine is shared"
	echo "and noisy (2 cores for daemons and applications)."
	echo
	echo "## Latency (us, half round trip; loopback: full PUT completion)"
	echo
	echo "| bytes | loopback | shm | shm busy | udp | kernel UDP blocking | kernel UDP busy | shm p99 | udp p99 | shm / kernel UDP blocking | udp / kernel UDP blocking |"
	echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	for b in $(echo "$lat_sizes" | tr ',' ' '); do
		lo=$(med loopback "$b" 5)
		s=$(med shm-pingpong "$b" 5)
		sb=$(med shm-busy-pingpong "$b" 5)
		u=$(med udp-pingpong "$b" 5)
		kb=$(med kernel-udp-blocking "$b" 5)
		kp=$(med kernel-udp-busy "$b" 5)
		sp=$(med shm-pingpong "$b" 6)
		up=$(med udp-pingpong "$b" 6)
		echo "| $b | ${lo:--} | ${s:--} | ${sb:--} | ${u:--} | ${kb:--} | ${kp:--} | ${sp:--} | ${up:--} | $(ratio "$s" "$kb") | $(ratio "$u" "$kb") |"
	done
	echo
	echo "## Bandwidth (one-way PUT stream, MB/s = 10^6 bytes/s)"
	echo
	echo "| bytes | shm MB/s | shm msg/s | shm busy MB/s | udp MB/s | udp msg/s | shm / udp |"
	echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	for b in $(echo "$bw_sizes" | tr ',' ' '); do
		s=$(med shm-bw "$b" 7)
		sm=$(med shm-bw "$b" 8)
		sbb=$(med shm-busy-bw "$b" 7)
		u=$(med udp-bw "$b" 7)
		um=$(med udp-bw "$b" 8)
		echo "| $b | ${s:--} | ${sm:--} | ${sbb:--} | ${u:--} | ${um:--} | $(ratio "$s" "$u") |"
	done
	echo
	echo "## Ratios"
	echo
	s8=$(med shm-pingpong 8 5)
	u8=$(med udp-pingpong 8 5)
	kb8=$(med kernel-udp-blocking 8 5)
	kp8=$(med kernel-udp-busy 8 5)
	lo8=$(med loopback 8 5)
	sbw=$(med shm-bw 1048576 7)
	ubw=$(med udp-bw 1048576 7)
	echo "- 8 B half round trip: DNP over shm ${s8:--} us = $(ratio "$s8" "$kb8") x kernel UDP"
	echo "  blocking (${kb8:--} us), $(ratio "$s8" "$kp8") x kernel UDP busy-poll (${kp8:--} us);"
	echo "  DNP over udp ${u8:--} us = $(ratio "$u8" "$kb8") x kernel UDP blocking."
	sb8=$(med shm-busy-pingpong 8 5)
	sbbw=$(med shm-busy-bw 1048576 7)
	echo "- busy-polling daemons, pinned: shm 8 B half round trip ${sb8:--} us, 1 MiB PUT ${sbbw:--} MB/s."
	echo "- 8 B loopback PUT completion ${lo8:--} us; 2-node shm ping-pong / loopback = $(ratio "$s8" "$lo8")."
	echo "- 1 MiB PUT bandwidth: shm ${sbw:--} MB/s, udp ${ubw:--} MB/s (shm / udp = $(ratio "$sbw" "$ubw"))."
	echo
	echo "Raw rows (one per run and size): $(basename "$csv")."
} >"$md"
cat "$md"
echo "bench: wrote $md and $csv"
