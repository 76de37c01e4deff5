#!/bin/sh
# SPDX-License-Identifier: MIT
# DPDK against UDP on the multi-host namespace testbed (docs/dpdk.md, "Benchmarks").
#
#   bench/run_dpdk.sh [BUILD_DIR]          (root; DPDK built; ~3-5 min)
#
# One 2x2x2 torus of network namespaces (tests/testbed/netns.sh, veth pairs at
# MTU 9000, each pair also given an IPv4 /30 from 198.18.0.0/15), used by every
# test of the run, REPS times each (default 3, env REPS):
#   - dnp_pingpong and dnp_bw between nodes 0,0,0 and 1,0,0 (one hop, veth
#     d0-xp <-> d1-xm) with all 8 daemons running, over dpdk (af_packet PMD on
#     the veths) and over udp (kernel UDP on the same veths), dnp-run --pin
#     (node i's daemon and program on CPU i mod 2, the same for both);
#   - the baseline: raw DPDK frame ping-pong and stream between the same two
#     namespaces on the same veth (transport/dpdk/dpdk_pingpong, two
#     busy-polling processes pinned to CPUs 0 and 1, no daemon).
# Writes $BENCH_OUT/<date>-<host>-dpdk.md and .csv (default results/bench/, ignored by
# git; ./dnp bench-dpdk --save: bench/results/) (raw per-run rows); the
# tables hold the median over runs of each run's median (latency) or rate.
set -u
build=${1:-build}
reps=${REPS:-3}
lat_sizes=${BENCH_LAT_SIZES:-8,64,512,4096,65536,1048576,4194304}
bw_sizes=${BENCH_BW_SIZES:-8,512,4096,65536,1048576,4194304}
raw_sizes=64,1518,4192
here=$(cd "$(dirname "$0")" && pwd)
netns_sh=$here/../tests/testbed/netns.sh
outdir=${BENCH_OUT:-$(cd "$here/.." && pwd)/results/bench}
stamp=$(date -u +%Y-%m-%d)
host=$(hostname -s 2>/dev/null || hostname)
md=$outdir/$stamp-$host-dpdk.md
csv=$outdir/$stamp-$host-dpdk.csv
run=$build/apps/dnp-run
pp=$build/transport/dpdk/dpdk_pingpong
P=dnpbd$$
EAL="--no-huge --no-pci --no-shconf --no-telemetry -m 256 --log-level=*:error"
AF="framesz=8192,blocksz=8192,framecnt=4096"

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (network namespaces)" >&2; exit 1; }
for p in "$run" "$pp" "$build/apps/dnp_pingpong" "$build/apps/dnp_bw" \
	"$build/dnp-core/dnpd/dnpd"; do
	if [ ! -x "$p" ]; then
		echo "bench: $p is not built (DPDK missing?)" >&2
		exit 1
	fi
done
mkdir -p "$outdir"
tmp=$(mktemp -d)
cleanup() {
	"$netns_sh" down "$P" /tmp >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
echo "test,bytes,rep,t_min_us,t_median_us,t_p99_us,MBps,msgps" >"$csv"

NETNS_IPV4=1 "$netns_sh" up 2x2x2 "$P" /tmp >/dev/null || { echo "bench: testbed" >&2; exit 1; }

collect() { # TEST REP FILE KIND
	awk -F, -v t="$1" -v r="$2" -v k="$4" '
		{ sub(/^\[[0-9]+,[0-9]+,[0-9]+\] /, "") }
		/^[0-9]+,/ {
			if (k == "lat") printf "%s,%s,%s,%s,%s,%s,,\n", t, $1, r, $3, $4, $5
			else printf "%s,%s,%s,,,,%s,%s\n", t, $1, r, $3, $4
		}' "$3" >>"$csv"
}

bench() { # TEST KIND REP COMMAND...
	t=$1 k=$2 r=$3
	shift 3
	if ! "$@" >"$tmp/out" 2>&1; then
		echo "bench: $t (run $r) failed:" >&2
		sed 's/^/    /' "$tmp/out" >&2
		return 1
	fi
	collect "$t" "$r" "$tmp/out" "$k"
}

dnp() { # TRANSPORT PROGRAM ARGS...
	tr=$1
	shift
	"$run" --torus 2x2x2 --transport "$tr" --testbed "$P" --pin --timeout 300 -- "$@"
}

# Raw DPDK between the namespaces of nodes 0 and 1, veth d0-xp <-> d1-xm:
# rtt lines give the round trip (halved into the CSV), stream lines Gbit/s.
raw() { # REP
	ip netns exec "$P-1" taskset -c 1 "$pp" $EAL -l 1 \
		--vdev=net_af_packet0,iface=d1-xm,$AF -- pong >"$tmp/pong" 2>&1 &
	pong=$!
	sleep 1
	ip netns exec "$P-0" taskset -c 0 "$pp" $EAL -l 0 \
		--vdev=net_af_packet0,iface=d0-xp,$AF -- ping -n 20000 -t 500 \
		-s "$raw_sizes" >"$tmp/raw" 2>&1
	rc=$?
	wait "$pong"
	if [ $rc -ne 0 ]; then
		echo "bench: raw dpdk_pingpong (run $1) failed:" >&2
		sed 's/^/    /' "$tmp/raw" "$tmp/pong" >&2
		return 1
	fi
	awk -v r="$1" '
		/^rtt/ { b = $2; med = $5; p1 = $8; p99 = $10
			printf "raw-dpdk-pingpong,%s,%s,%.3f,%.3f,%.3f,,\n", b, r, p1 / 2, med / 2, p99 / 2 }
		/^stream/ { b = $2; for (i = 1; i <= NF; i++) if ($i == "Gbit/s") g = $(i - 1)
			printf "raw-dpdk-stream,%s,%s,,,,%.1f,\n", b, r, g * 1000 / 8 }' \
		"$tmp/raw" >>"$csv"
}

echo "bench: $reps runs of each test on testbed $P (2x2x2, nodes 0,0,0 <-> 1,0,0)"
r=1
while [ "$r" -le "$reps" ]; do
	echo "bench: run $r of $reps"
	bench dpdk-pingpong lat "$r" dnp dpdk dnp_pingpong --sizes "$lat_sizes" --csv
	bench udp-pingpong lat "$r" dnp udp dnp_pingpong --sizes "$lat_sizes" --csv
	bench dpdk-bw bw "$r" dnp dpdk dnp_bw --sizes "$bw_sizes" --csv
	bench udp-bw bw "$r" dnp udp dnp_bw --sizes "$bw_sizes" --csv
	raw "$r"
	r=$((r + 1))
done

. "$(dirname "$0")/lib.sh"
machine_info
{
	echo "# SoftDNP on DPDK vs UDP, namespace testbed, $stamp, host $host"
	echo
	echo "| machine | |"
	echo "| --- | --- |"
	echo "| CPUs (nproc) | $(nproc) |"
	echo "| CPU model | ${cpu:-unknown} |"
	echo "| memory | $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) |"
	echo "| kernel | $(uname -sr) |"
	echo "| DPDK | $(pkg-config --modversion libdpdk 2>/dev/null || echo '?') (af_packet PMD, framesz 8192) |"
	echo "| build | buildtype $btype |"
	echo "| testbed | 2x2x2 torus, 8 namespaces, 24 veth pairs, MTU 9000, 8 daemons running |"
	echo "| placement | dnp-run --pin: node i's daemon on CPU i mod 2, its program on the other |"
	echo "| runs per test | $reps (tables: median of the per-run values) |"
	echo "| load average at the end | $(cut -d' ' -f1-3 /proc/loadavg) |"
	echo
	echo "Method: dnp_pingpong = PUT ping-pong, half round trip; dnp_bw = PUT stream with a"
	echo "window of 32, timed to the receiver's acknowledgement; both between nodes 0,0,0 and"
	echo "1,0,0 (one hop on veth d0-xp <-> d1-xm). dpdk: dnpd --transport dpdk, af_packet"
	echo "PMD on the veths; udp: dnpd --transport udp on the veths' 198.18.x.y/30 addresses."
	echo "Raw DPDK: dpdk_pingpong between the same two namespaces and veth, Ethernet frame"
	echo "bytes (64 B is the smallest frame), two busy-polling processes, no daemon."
	echo
	echo "## Latency (us, half round trip, median)"
	echo
	echo "| bytes | dpdk | udp | udp / dpdk | dpdk p99 | udp p99 |"
	echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
	for b in $(echo "$lat_sizes" | tr ',' ' '); do
		d=$(med dpdk-pingpong "$b" 5)
		u=$(med udp-pingpong "$b" 5)
		echo "| $b | ${d:--} | ${u:--} | $(ratio "$u" "$d") | $(med dpdk-pingpong "$b" 6) | $(med udp-pingpong "$b" 6) |"
	done
	echo
	echo "Raw DPDK frame ping-pong (half round trip, us):"
	echo
	echo "| Ethernet bytes | median | p1 | p99 |"
	echo "| ---: | ---: | ---: | ---: |"
	for b in $(echo "$raw_sizes" | tr ',' ' '); do
		echo "| $b | $(med raw-dpdk-pingpong "$b" 5) | $(med raw-dpdk-pingpong "$b" 4) | $(med raw-dpdk-pingpong "$b" 6) |"
	done
	echo
	echo "## Bandwidth (one-way PUT stream, MB/s = 10^6 bytes/s)"
	echo
	echo "| bytes | dpdk MB/s | udp MB/s | dpdk / udp | dpdk msg/s | udp msg/s |"
	echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
	for b in $(echo "$bw_sizes" | tr ',' ' '); do
		d=$(med dpdk-bw "$b" 7)
		u=$(med udp-bw "$b" 7)
		echo "| $b | ${d:--} | ${u:--} | $(ratio "$d" "$u") | $(med dpdk-bw "$b" 8) | $(med udp-bw "$b" 8) |"
	done
	echo
	echo "Raw DPDK stream (dpdk_pingpong streams its largest size only; no flow control;"
	echo "MB/s of Ethernet frames delivered):"
	echo
	for b in $(echo "$raw_sizes" | tr ',' ' '); do
		v=$(med raw-dpdk-stream "$b" 7)
		[ -z "$v" ] || echo "- $b B frames: $v MB/s"
	done
	echo
	echo "## Goals"
	echo
	d8=$(med dpdk-pingpong 8 5)
	u8=$(med udp-pingpong 8 5)
	r64=$(med raw-dpdk-pingpong 64 5)
	dbw=$(med dpdk-bw 1048576 7)
	ubw=$(med udp-bw 1048576 7)
	l=$(ratio "$u8" "$d8")
	w=$(ratio "$dbw" "$ubw")
	echo "- 8 B latency: dpdk ${d8:--} us, udp ${u8:--} us: udp / dpdk = $l (goal >= 1.5:" \
		"$(awk -v x="$l" 'BEGIN { print (x + 0 >= 1.5) ? "met" : "NOT met" }'));" \
		"raw DPDK 64 B frame ${r64:--} us, dpdk / raw = $(ratio "$d8" "$r64")."
	echo "- 1 MiB bandwidth: dpdk ${dbw:--} MB/s, udp ${ubw:--} MB/s: dpdk / udp = $w (goal >= 1:" \
		"$(awk -v x="$w" 'BEGIN { print (x + 0 >= 1.0) ? "met" : "NOT met" }'))."
	echo
	echo "Raw rows (one per run and size): $(basename "$csv")."
} >"$md"
cat "$md"
echo "bench: wrote $md and $csv"
