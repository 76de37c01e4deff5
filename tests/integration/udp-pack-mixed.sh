#!/bin/sh
# SPDX-License-Identifier: MIT
# udp packing with a peer that restarts as another build (docs/protocol.md,
# "The udp link's datagrams", mixed versions): two udp daemons agree to pack;
# node 1 is killed and started again with pack=none, which reads datagrams as
# a build without packing does (a packed one is a malformed frame to it).
# Node 0 ran on: it must hear the peer start over (peer_resets), stop packing
# (peer_packs 0) and an 8-byte stream must cross, every message checked.
# Node 1 is then started again with packing: the two agree again and the
# stream's PUTs go packed. Without the reset node 0 packs on to the new peer
# and the stream times out.
#
# Usage: udp-pack-mixed.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (not built).
set -u
build=$1

. "$(dirname "$0")/lib.sh"
dnp_tools "$build"
bw=$build/apps/dnp_bw
need_built "$dnpd" "$ctl" "$bw"
run_dir /dev/shm/udp-pack-mixed-$$
base=$(port_base)
fail=0

start_node() { # ID [DNP_UDP_PACK value]
	DNP_UDP_PACK=${2:-} "$dnpd" --torus 2x1x1 --coord "$1,0,0" --run-dir "$dir" \
		--transport udp --udp-base-port "$base" >>"$dir/dnpd-$1.log" 2>&1 &
	eval "pid$1=$!"
	pids="$pids $!"
}

# udp FIELD summed over node ID's links
field() {
	"$ctl" --socket "$dir/node-$1.sock" stats | awk -v f="$2" '
	$1 == "link" && $3 == "udp" { for (i = 4; i < NF; i += 2) if ($i == f) s += $(i + 1) }
	END { print s + 0 }'
}

stream() { # LABEL: an 8-byte stream 0 -> 1, every message checked
	DNP_SOCKET=$dir/node-1.sock "$bw" --sizes 8 --iters 3000 --verify --csv \
		>"$dir/bw-1.out" 2>&1 &
	b=$!
	DNP_SOCKET=$dir/node-0.sock "$bw" --sizes 8 --iters 3000 --verify --csv \
		>"$dir/bw-0.out" 2>&1
	ra=$?
	wait "$b"
	rb=$?
	if [ $ra -ne 0 ] || [ $rb -ne 0 ]; then
		bad "$1: the stream failed"
		tail -n 3 "$dir"/bw-*.out "$dir"/dnpd-*.log
		return 1
	fi
}

restart1() { # DNP_UDP_PACK value of the new node 1
	kill -9 "$pid1"
	wait "$pid1" 2>/dev/null
	rm -f "$dir/node-1.up"
	start_node 1 "$1"
	wait_for 30 test -e "$dir/node-1.up" || { bad "restarted node 1 never came UP"; return 1; }
	wait_for 30 test -e "$dir/node-0.up" || { bad "node 0 never came back UP"; return 1; }
}

export DNP_APP_TIMEOUT=10
start_node 0
start_node 1
for id in 0 1; do
	wait_for 20 test -e "$dir/node-$id.up" || { echo "FAIL: node $id links never came UP"; exit 1; }
done
stream "both pack" || exit 1
p0=$(field 0 peer_packs) t0=$(field 0 tx_packed_frames)
echo "both pack: node 0 peer_packs $p0 tx_packed_frames $t0"
[ "$p0" = 2 ] || bad "both pack: node 0 packs to $p0 of 2 links"
[ "$t0" -ge 1500 ] || bad "both pack: node 0 sent $t0 of 3000 frames packed"

restart1 none || exit 1
stream "peer restarted without packing" || exit 1
p0=$(field 0 peer_packs) r0=$(field 0 peer_resets) b1=$(field 1 rx_packed)
echo "peer without packing: node 0 peer_packs $p0 peer_resets $r0; node 1 rx_packed $b1"
[ "$p0" = 0 ] || bad "node 0 still packs to $p0 links of a peer without packing"
[ "$r0" -ge 2 ] || bad "node 0 heard its peer start over on $r0 links"
[ "$b1" = 0 ] || bad "node 1 (pack=none) split $b1 datagrams"

restart1 "" || exit 1
stream "peer restarted with packing" || exit 1
p0=$(field 0 peer_packs) t1=$(field 0 tx_packed_frames)
echo "peer with packing again: node 0 peer_packs $p0 tx_packed_frames $t0 -> $t1"
[ "$p0" = 2 ] || bad "node 0 packs to $p0 of 2 links of a peer that packs again"
[ "$t1" -ge $((t0 + 1500)) ] || bad "node 0 sent $((t1 - t0)) of 3000 frames packed again"
[ $fail = 0 ] && echo "PASS: udp-pack-mixed"
exit $fail
