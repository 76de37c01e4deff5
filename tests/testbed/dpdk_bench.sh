#!/bin/sh
# SPDX-License-Identifier: MIT
#
# dpdk_bench.sh — the figures of docs/dpdk.md: raw DPDK and dpdk-transport
# round trips and streams over af_packet on a veth pair between two
# namespaces (MTU 9000, then the transport at MTU 1500), memif between two
# processes on the host, and the CRC-32 timings.
#
#   dpdk_bench.sh BUILD_DIR [ITERS]      (root; ~30 s)
#
# Both processes busy-poll, pinned with taskset to cores 1 (echo side) and 0
# (measuring; dnp_dpdk_eal_init gives back the affinity EAL took).
# memif gets 9 KiB buffers: with the default 2 KiB ones DPDK 22.11 loses a
# frame spanning several buffers at the ring wrap (see docs/dpdk.md).
set -eu

B=${1:?usage: $0 BUILD_DIR [ITERS]}
N=${2:-20000}
HERE=$(cd "$(dirname "$0")" && pwd)
PP=$B/transport/dpdk/dpdk_pingpong
CRC=$B/transport/dpdk/dpdk_crcbench
P=dnpbench$$
EAL="--no-huge --no-pci --no-shconf --no-telemetry -m 256 --log-level=*:error"
AF="framesz=8192,blocksz=8192,framecnt=4096"
SOCK=/tmp/$P.memif

cleanup() {
	"$HERE/netns.sh" down "$P" /tmp >/dev/null 2>&1 || true
	rm -f "$SOCK"
}
trap cleanup EXIT INT TERM

"$HERE/netns.sh" up 2x1x1 "$P" /tmp >/dev/null

pair() { # mode-pong mode-ping args...
	pong=$1; ping=$2; shift 2
	ip netns exec "$P-1" taskset -c 1 "$PP" $EAL -l 1 --vdev=net_af_packet0,iface=d1-xm,$AF -- $pong "$@" &
	sleep 0.5
	ip netns exec "$P-0" taskset -c 0 "$PP" $EAL -l 0 --vdev=net_af_packet0,iface=d0-xp,$AF -- $ping \
		-n "$N" "$@"
	wait
}

echo "== af_packet on veth, raw DPDK (Ethernet frame bytes)"
pair pong ping -s 64,1518,4192
echo "== af_packet on veth, dpdk transport, MTU 9000 (DNP frame bytes)"
pair tpong tping -s 64,4160
echo "== af_packet on veth, dpdk transport, fragments of MTU 1500"
pair tpong tping -s 64,4160 -o mtu=1500

echo "== memif between two processes on the host, raw DPDK"
rm -f "$SOCK"
taskset -c 1 "$PP" $EAL -l 1 --vdev=net_memif0,role=server,socket=$SOCK,socket-abstract=no,bsize=9216,rsize=9 -- pong &
sleep 0.5
taskset -c 0 "$PP" $EAL -l 0 --vdev=net_memif0,role=client,socket=$SOCK,socket-abstract=no,bsize=9216,rsize=9 -- ping \
	-n "$N" -s 64,1518,4192
wait
echo "== memif, dpdk transport (mtu=9000 option: memif has no kernel MTU)"
rm -f "$SOCK"
taskset -c 1 "$PP" $EAL -l 1 --vdev=net_memif0,role=server,socket=$SOCK,socket-abstract=no,bsize=9216,rsize=9 -- tpong \
	-o mtu=9000 &
sleep 0.5
taskset -c 0 "$PP" $EAL -l 0 --vdev=net_memif0,role=client,socket=$SOCK,socket-abstract=no,bsize=9216,rsize=9 -- tping \
	-n "$N" -s 64,4160 -o mtu=9000
wait

echo "== CRC-32 of 4 KiB"
"$CRC" 4096
echo "== machine load: $(cut -d' ' -f1-3 /proc/loadavg)"
