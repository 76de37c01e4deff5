#!/bin/sh
# SPDX-License-Identifier: MIT
# dnpctl capture: a running daemon records its frames on request, into a
# file dnpctl opened and handed over (the daemon opens no path), read back
# by tshark with the DNP dissector (tools/wireshark/dnp.lua).
#
# A 2x1x1 shm torus without --pcap. A PUT ping-pong of 8 bytes before the
# capture, of 100 bytes during it, of 5000 bytes after `capture --stop`.
# Checked: the capture holds every frame the stop reported, each dissects as
# DNP with a good CRC; its PUT fragments are exactly the 100-byte ones, both
# ways (nothing from before the start or after the stop). A second start
# while capturing is refused (busy), its file not left behind; a stop with
# no capture is refused; a file that is not a regular file (/dev/null) is
# refused by the daemon (exit 2); a file dnpctl cannot create is named
# (exit 2); --duration stops by itself and leaves a readable capture.
# usage: pcap-live.sh BUILD_DIR DISSECTOR.lua
# Exit: 0 pass, 1 fail, 77 skip (tshark missing, daemon or apps not built).
set -u
build=$1
lua=$2
dnpd=$build/dnp-core/dnpd/dnpd
ctl=$build/dnp-core/dnpd/dnpctl
pp=$build/apps/dnp_pingpong

if ! command -v tshark >/dev/null 2>&1; then
	echo "SKIP: tshark is not installed (Debian: apt-get install tshark)"
	exit 77
fi
. "$(dirname "$0")/lib.sh"
need_built "$dnpd" "$ctl" "$pp"
run_dir /dev/shm/softdnp-pcap-live-$$

fail() { fail_logs "$@"; }
[ -r "$lua" ] || fail "no dissector at $lua"
ts() { timeout 60 tshark -n -X lua_script:"$lua" "$@" 2>>"$dir/tshark.log"; }
c() { timeout 30 "$ctl" --socket "$dir/node-0.sock" "$@"; }

for id in 0 1; do
	"$dnpd" --torus 2x1x1 --coord $id,0,0 --run-dir "$dir" --transport shm \
		>"$dir/dnpd-$id.log" 2>&1 &
	pids="$pids $!"
done
wait_links_up 20 0 1

pingpong() {
	DNP_APP_TIMEOUT=40
	export DNP_APP_TIMEOUT
	DNP_SOCKET=$dir/node-1.sock timeout 60 "$pp" --verify --sizes "$1" --iters 3 \
		>"$dir/pp-1.out" 2>&1 &
	a1=$!
	DNP_SOCKET=$dir/node-0.sock timeout 60 "$pp" --verify --sizes "$1" --iters 3 \
		>"$dir/pp-0.out" 2>&1 || fail "dnp_pingpong on node 0 failed"
	wait $a1 || fail "dnp_pingpong on node 1 failed"
}

pingpong 8
c capture "$dir/live.pcapng" >"$dir/start.out" 2>&1 || fail "capture start: $(cat "$dir/start.out")"
c capture "$dir/second.pcapng" >"$dir/second.out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "already capturing" "$dir/second.out" ||
	fail "a second capture: exit $rc, $(cat "$dir/second.out")"
[ ! -e "$dir/second.pcapng" ] || fail "the refused capture left its file"
pingpong 100
sleep 0.1 # the keep-alive credits ack the last frames
c capture --stop >"$dir/stop.out" 2>&1 || fail "capture --stop: $(cat "$dir/stop.out")"
frames=$(sed -n 's/^capture stopped: \([0-9]*\) frames, [0-9]* bytes$/\1/p' "$dir/stop.out")
[ -n "$frames" ] && [ "$frames" -gt 0 ] || fail "the stop reported no frames: $(cat "$dir/stop.out")"
c capture --stop >"$dir/stop2.out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "not capturing" "$dir/stop2.out" || fail "stop without a capture: exit $rc"
pingpong 5000

ts -r "$dir/live.pcapng" -T fields -E separator=/t -E occurrence=a -E aggregator=, \
	-e frame.packet_flags_direction -e dnp.flen -e dnp.kind -e dnp.crc.status \
	-e dnp.msg_len -e dnp.src -e dnp.dst >"$dir/live.tsv" || fail "tshark could not read it"
n=$(wc -l <"$dir/live.tsv")
echo "  $n frames in the capture, $frames reported by the stop"
[ "$n" = "$frames" ] || fail "$n frames in the file, the daemon reported $frames"
awk -F'\t' '$2 == "" { print "frame " NR ": not DNP"; bad++; next }
$4 != "1" { print "frame " NR ": CRC status " $4; bad++ }
END { exit bad > 0 }' "$dir/live.tsv" || fail "frames misread"
got=$(awk -F'\t' '$3 == 1 { print $1, $5, $6, $7 }' "$dir/live.tsv" | sort -u)
want="0x00000001 100 1,0,0 0,0,0
0x00000002 100 0,0,0 1,0,0"
[ "$got" = "$want" ] || fail "PUT fragments (direction msg_len src dst): got
$got
want
$want"

c capture "$dir/flag.pcapng" --json >/dev/null 2>&1
[ $? = 2 ] && [ ! -e "$dir/flag.pcapng" ] || fail "capture --json should be a usage error"
c capture /dev/null >"$dir/null.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "not a regular empty file" "$dir/null.out" ||
	fail "/dev/null as a capture: exit $rc, $(cat "$dir/null.out")"
c capture "$dir/nosuch/x.pcapng" >"$dir/nodir.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "nosuch/x.pcapng" "$dir/nodir.out" || fail "an impossible file: exit $rc"
c capture "$dir/timed.pcapng" --duration 0.3 >"$dir/timed.out" 2>&1 ||
	fail "capture --duration: $(cat "$dir/timed.out")"
grep -q "^capture stopped: " "$dir/timed.out" || fail "--duration did not stop the capture"
n=$(ts -r "$dir/timed.pcapng" -Y dnp | wc -l)
[ "$n" -gt 0 ] || fail "the timed capture holds no DNP frame"
c capture --stop >/dev/null 2>&1 && fail "the timed capture still runs"
echo "pcap-live: ok ($frames frames; a timed capture of $n)"
