#!/bin/sh
# SPDX-License-Identifier: MIT
# DNP frames in Wireshark: dnpd --pcap captures and the Lua dissector
# (tools/wireshark/dnp.lua, docs/protocol.md "Capturing and reading frames"),
# read back with tshark and checked against what the test sent.
#
# A 2x1x1 torus of two real daemons, twice:
#   shm: node 0 captures (--pcap). A PUT ping-pong of 8, 100 and 5000 bytes
#     (dnp_pingpong --verify), `dnpctl topo --all` (a wiring query and its
#     answer, DIAG packets) and a dnp-hfm for node 1 killed with kill -9 (node
#     1's DNP then sends LO|FA|MO DIAGs, HOST_OMISSION). Checked: every frame
#     dissects as DNP with a good CRC and a length field that matches its
#     payload length; the PUT fragments are exactly those the sizes make
#     (msg_len, len, offset, FIRST, LAST), from 0,0,0 to 1,0,0 when sent and
#     back when received; on each link the sent sequence numbers grow by one,
#     and the peer's last ack is the last seq + 1; credit counters never go
#     back; the wiring query/answer and the DIAG fields (magic "DG", node 1,
#     HOST_OMISSION, seq growing by one); the buffer credits: every hello of
#     version 2, every CREDIT frame (RESET frames included) with one free
#     buffer count per VC of its sender's hello, none beyond what its sender's
#     hello frames offered, and no other frame with any.
#   udp: node 0 captures and corrupts 5% of what it sends (--impair), and
#     dumpcap captures the loopback interface (root only, else that half is
#     skipped). Checked: every datagram on the daemons' ports (the dissector's
#     port preference, heuristic off) dissects as DNP; the frames whose CRC
#     the dissector finds bad are exactly the ones node 0 sent, as many in its
#     own capture as on the wire, and there are some; node 1 sent none.
# usage: pcap.sh BUILD_DIR DISSECTOR.lua
# Exit: 0 pass, 1 fail, 77 skip (tshark missing, daemon or apps not built).
set -u
build=$1
lua=$2
hfm=$build/lofamo/dnp-hfm
iters=3

. "$(dirname "$0")/lib.sh"
command -v tshark >/dev/null 2>&1 || skip "tshark is not installed (Debian: apt-get install tshark)"
dnp_tools "$build"
need_built "$dnpd" "$ctl" "$pp" "$hfm"

run_dir /dev/shm/softdnp-pcap-$$
base=$(port_base)

fail() { fail_logs "$@"; }

# tshark with the dissector; stderr kept apart (it warns when run as root).
ts() {
	timeout 60 tshark -n -X lua_script:"$lua" "$@" 2>>"$dir/tshark.log"
}
[ -r "$lua" ] || fail "no dissector at $lua"

# One line per frame, tab-separated; several values of a field joined by ','.
FIELDS="frame.interface_name frame.packet_flags_direction udp.srcport dnp.flen dnp.kind
 dnp.lflags.seq dnp.seq dnp.ack dnp.src dnp.dst dnp.len dnp.offset dnp.flags.first
 dnp.flags.last dnp.msg_len dnp.crc.status dnp.fstatus.retx dnp.credit.received
 dnp.wire.kind dnp.wire.heard dnp.diag.magic dnp.diag.kind dnp.diag.node dnp.diag.seq
 dnp.lflags.reset dnp.src_dir dnp.hello.version dnp.hello.nvc dnp.bufs dnp.bufs.vc
 dnp.udp.count"
table() { # FILE [tshark options] > TSV
	f=$1
	shift
	set -- -r "$f" -T fields -E separator=/t -E occurrence=a -E aggregator=, "$@"
	for x in $FIELDS; do set -- "$@" -e "$x"; done
	ts "$@"
}
# Column numbers of the fields above, for awk.
C='BEGIN { FS = "\t"; IF = 1; DIR = 2; UPORT = 3; FLEN = 4; KIND = 5; LSEQ = 6; SEQ = 7;
	ACK = 8; SRC = 9; DST = 10; LEN = 11; OFF = 12; FIRST = 13; LAST = 14; MLEN = 15;
	CRC = 16; RETX = 17; RECV = 18; WKIND = 19; WHEARD = 20; DMAGIC = 21; DKIND = 22;
	DNODE = 23; DSEQ = 24; RESET = 25; SDIR = 26; HVER = 27; HNVC = 28; BUFS = 29;
	BVC = 30; UCOUNT = 31 }'
# A packed udp datagram (docs/protocol.md, "The udp link's datagrams") is one
# line with several values per field: one line per frame instead, each field
# of as many values as frames giving the frame's own.
split_packed() { # TSV > TSV
	awk 'BEGIN { FS = OFS = "\t" }
	{
		k = split($4, fl, ",")
		if (k <= 1) { print; next }
		for (i = 1; i <= k; i++) {
			line = ""
			for (c = 1; c <= NF; c++) {
				v = $c
				if (split($c, vs, ",") == k) v = vs[i]
				line = line (c > 1 ? OFS : "") v
			}
			print line
		}
	}' "$1"
}

# start_torus TRANSPORT NODE0-ARGS...: two daemons, node 0 with the extra arguments.
start_torus() {
	tr=$1
	shift
	rm -f "$dir"/node-*
	"$dnpd" --torus 2x1x1 --coord 0,0,0 --run-dir "$dir" --transport "$tr" \
		--udp-base-port "$base" "$@" >"$dir/dnpd-0.log" 2>&1 &
	d0=$!
	"$dnpd" --torus 2x1x1 --coord 1,0,0 --run-dir "$dir" --transport "$tr" \
		--udp-base-port "$base" >"$dir/dnpd-1.log" 2>&1 &
	d1=$!
	pids="$pids $d0 $d1"
	wait_links_up 20 0 1
}

# pingpong SIZES: both instances, bounded; both must pass their checks.
pingpong() {
	DNP_APP_TIMEOUT=40
	export DNP_APP_TIMEOUT
	DNP_SOCKET=$dir/node-1.sock timeout 60 "$pp" --verify --sizes "$1" --iters $iters \
		>"$dir/pp-1.out" 2>&1 &
	a1=$!
	DNP_SOCKET=$dir/node-0.sock timeout 60 "$pp" --verify --sizes "$1" --iters $iters \
		>"$dir/pp-0.out" 2>&1 || fail "dnp_pingpong on node 0 failed"
	wait $a1 || fail "dnp_pingpong on node 1 failed"
}

# Stops both daemons (their captures are flushed at exit).
stop_torus() {
	sleep 0.1 # a keep-alive credit acks the last frames
	kill "$d0" "$d1"
	wait "$d0" || fail "dnpd 0 exited with an error"
	wait "$d1"
	pids=""
}

# ---- shm: node 0's capture, checked field by field ----
echo "+ shm: 2x1x1, node 0 with --pcap, PUT ping-pong 8,100,5000 x $iters"
start_torus shm --pcap "$dir/shm.pcapng"
pingpong 8,100,5000
timeout 20 "$ctl" --socket "$dir/node-0.sock" topo --all >"$dir/topo.out" 2>&1 ||
	fail "dnpctl topo --all"
"$hfm" --regs "$dir/node-1.lofamo" --node 1 --supervisor "127.0.0.1:$((base + 15))" \
	--t-write 50 --t-read 100 >"$dir/hfm.log" 2>&1 &
h=$!
sleep 0.5
kill -9 $h
wait $h 2>/dev/null
sleep 0.6 # node 1's DNP sees the omission within T_read and reports every T_read
stop_torus
[ -s "$dir/shm.pcapng" ] || fail "no capture written"
table "$dir/shm.pcapng" >"$dir/shm.tsv" || fail "tshark could not read the capture"
n=$(wc -l <"$dir/shm.tsv")
echo "  $n frames captured"
[ "$n" -ge 50 ] || fail "only $n frames in the capture"

# Every frame is DNP, its CRC good, its length field 64 + round16(len).
awk "$C"'
$FLEN == "" { print "frame " NR ": not dissected as DNP"; bad++; next }
$CRC != "1" { print "frame " NR ": CRC status " $CRC; bad++ }
$FLEN != 64 + int(($LEN + 15) / 16) * 16 { print "frame " NR ": length " $FLEN " for len " $LEN; bad++ }
END { exit bad > 0 }' "$dir/shm.tsv" || fail "frames misread"

# The PUT fragments of the ping-pong: exactly these (msg_len len offset FIRST LAST).
want="100 100 0 1 1
5000 4096 0 1 0
5000 904 4096 0 1
8 8 0 1 1"
for way in "0x00000002 0,0,0 1,0,0" "0x00000001 1,0,0 0,0,0"; do
	set -- $way
	got=$(awk "$C"' $KIND == 1 && $DIR == d && $SRC == s && $DST == t {
		print $MLEN, $LEN, $OFF, $FIRST, $LAST }' d="$1" s="$2" t="$3" "$dir/shm.tsv" | sort -u)
	[ "$got" = "$want" ] || fail "PUT fragments $2 -> $3 (direction $1): got
$got
want
$want"
	other=$(awk "$C"' $KIND == 1 && $DIR == d && !($SRC == s && $DST == t)' \
		d="$1" s="$2" t="$3" "$dir/shm.tsv" | wc -l)
	[ "$other" -eq 0 ] || fail "$other PUT frames in direction $1 not from $2 to $3"
	n=$(awk "$C"' $KIND == 1 && $DIR == d && $MLEN == 8' d="$1" "$dir/shm.tsv" | wc -l)
	[ "$n" -ge $iters ] || fail "$n PUTs of 8 bytes $2 -> $3, sent $iters at least"
done

# Sequence numbers and acks, per link: sent seq + 1 each time (retransmissions
# aside); the last ack the peer sent back is the last seq + 1; credit counters
# (received words, VC 0) never go back.
awk "$C"'
$DIR == "0x00000002" && $LSEQ == "1" && $RETX == "0" {
	if ($IF in last && $SEQ != last[$IF] + 1) {
		print $IF ": seq " $SEQ " after " last[$IF]; bad++
	}
	last[$IF] = $SEQ; sent[$IF]++
}
$DIR == "0x00000001" && $KIND == 6 && $RESET == "0" {
	ack[$IF] = $ACK
	split($RECV, r, ",")
	if ($IF in rx0 && r[1] < rx0[$IF]) { print $IF ": credit went back"; bad++ }
	rx0[$IF] = r[1]
}
END {
	for (i in sent) {
		if (ack[i] != last[i] + 1) { print i ": last ack " ack[i] ", last seq " last[i]; bad++ }
		links++
	}
	if (!("xp" in sent)) { print "no sequenced frame sent on X+"; bad++ }
	exit bad > 0
}' "$dir/shm.tsv" || fail "sequence numbers or acks misread"

# DIAG packets: the wiring query and its answer (node 1 heard 0,0,0 on both links) ...
q=$(awk "$C"' $KIND == 7 && $WKIND == 1 && $DIR == "0x00000002" && $SRC == "0,0,0" &&
	$DST == "1,0,0"' "$dir/shm.tsv" | wc -l)
a=$(awk "$C"' $KIND == 7 && $WKIND == 2 && $DIR == "0x00000001" && $SRC == "1,0,0" &&
	$DST == "0,0,0" && $WHEARD ~ /^0,0,0,0,0,0,/' "$dir/shm.tsv" | wc -l)
[ "$q" -ge 1 ] && [ "$a" -ge 1 ] || fail "wiring DIAGs: $q queries, $a answers"
# ... and LO|FA|MO DIAGs of node 1 once its HFM died.
awk "$C"'
$KIND == 7 && $DMAGIC != "" && $RETX == "0" {
	n++
	if ($DMAGIC != "0x4744" || $DNODE != 1 || $SRC != "1,0,0" || $DIR != "0x00000001") {
		print "DIAG " NR ": magic " $DMAGIC " node " $DNODE " from " $SRC; bad++
	}
	if (n > 1 && $DSEQ != seq + 1) { print "DIAG seq " $DSEQ " after " seq; bad++ }
	seq = $DSEQ
	if ($DKIND == 1) omission++
}
END {
	if (n < 2 || omission < 1) { print n " LO|FA|MO DIAGs, " omission " HOST_OMISSION"; bad++ }
	exit bad > 0
}' "$dir/shm.tsv" || fail "LO|FA|MO DIAGs misread"

# Buffer credits (docs/protocol.md, "Buffer credits"), per sender (H0 src and
# src_dir): its hellos are of version 2 and say nvc VCs; each of its CREDIT
# frames has a count for VCs 0..nvc-1 (the footer's timestamp bytes), in
# 1..254 in its hello frames (dnpd backs buffers), never above those after;
# no other kind of frame has any.
awk "$C"'
$KIND == 6 {
	s = $SRC "/" $SDIR
	if ($HVER != "") {
		if ($HVER != 2) { print "frame " NR ": hello version " $HVER; bad++ }
		nvc[s] = $HNVC
		vcs = "0"
		for (v = 1; v < $HNVC; v++) vcs = vcs "," v
		want[s] = vcs
	}
	if (!(s in nvc)) { # before its hello: read as buffer credits by the preference
		if ($BUFS == "") { print "frame " NR ": a credit without buffer credits"; bad++ }
		next
	}
	if ($BVC != want[s]) { print "frame " NR ": buffer credits of VCs " $BVC ", want " want[s]; bad++ }
	n = split($BUFS, b, ",")
	for (v = 1; v <= n; v++) {
		if ($HVER != "") {
			if (b[v] < 1 || b[v] > 254) { print "frame " NR ": hello with bufs " $BUFS; bad++ }
			if (b[v] > top[s]) top[s] = b[v]
		} else if (b[v] > top[s]) {
			print "frame " NR ": " s " offers " $BUFS ", its hellos " top[s]; bad++
		}
	}
	credits[s]++
	next
}
$BUFS != "" { print "frame " NR ": kind " $KIND " with buffer credits"; bad++ }
END {
	for (s in credits) {
		k++
		printf "  %s: %d credits, %s VCs, at most %d free buffers\n", s, credits[s], nvc[s], top[s]
	}
	if (k != 4) { print k " senders of credits, want 4 (two nodes, two links each)"; bad++ }
	exit bad > 0
}' "$dir/shm.tsv" || fail "buffer credits misread"
echo "  PUT fragments, seq/ack, credits, buffer credits, wiring and LO|FA|MO DIAGs as sent"

# ---- udp: corrupted frames, seen by node 0's capture and on the wire ----
echo "+ udp: 2x1x1, node 0 with --pcap and --impair corrupt=5%, ping-pong 8,5000 x $iters"
lo=
if [ "$(id -u)" -eq 0 ] && command -v dumpcap >/dev/null 2>&1; then
	lo=$dir/lo.pcapng
	dumpcap -q -i lo -f "udp portrange $base-$((base + 15))" -w "$lo" >"$dir/dumpcap.log" 2>&1 &
	dc=$!
	pids="$pids $dc"
	i=0
	until grep -q "Capturing on" "$dir/dumpcap.log"; do
		i=$((i + 1))
		[ $i -le 500 ] || fail "dumpcap did not start"
		sleep 0.01
	done
else
	echo "  (not root or no dumpcap: the loopback capture is skipped)"
fi
start_torus udp --pcap "$dir/udp.pcapng" --impair corrupt=5%,seed=3
pingpong 8,5000
stop_torus
if [ -n "$lo" ]; then
	sleep 0.2
	kill -INT $dc
	wait $dc
fi
table "$dir/udp.pcapng" >"$dir/udp.tsv" || fail "tshark could not read the udp capture"
nbad=$(awk "$C"' $CRC == "0"' "$dir/udp.tsv" | wc -l)
nbad_out=$(awk "$C"' $CRC == "0" && $DIR == "0x00000002"' "$dir/udp.tsv" | wc -l)
ngood=$(awk "$C"' $CRC == "1"' "$dir/udp.tsv" | wc -l)
echo "  node 0's capture: $ngood good, $nbad with a bad CRC"
[ "$nbad" -ge 1 ] || fail "no frame with a bad CRC (5% were corrupted)"
[ "$nbad" -eq "$nbad_out" ] || fail "$((nbad - nbad_out)) received frames with a bad CRC"
if [ -n "$lo" ]; then
	table "$lo" -o "dnp.heuristic:FALSE" -o "dnp.udp_ports:$base-$((base + 15))" \
		>"$dir/lo-dgram.tsv" || fail "tshark could not read the loopback capture"
	split_packed "$dir/lo-dgram.tsv" >"$dir/lo.tsv"
	awk "$C"'
	$UPORT == "" { print "frame " NR ": no UDP"; bad++ }
	$FLEN == "" && $UCOUNT != "0" { print "datagram " NR ": not dissected as DNP"; bad++ }
	END { exit bad > 0 }' "$dir/lo.tsv" || fail "datagrams on the daemons' ports misread"
	lbad0=$(awk "$C"' $CRC == "0" && $UPORT < b + 8' b="$base" "$dir/lo.tsv" | wc -l)
	lbad1=$(awk "$C"' $CRC == "0" && $UPORT >= b + 8' b="$base" "$dir/lo.tsv" | wc -l)
	lput=$(awk "$C"' $CRC == "1" && $KIND == 1 && $SRC == "0,0,0" && $DST == "1,0,0" &&
		$MLEN == 5000 && $LEN == 904 && $OFF == 4096' "$dir/lo.tsv" | wc -l)
	echo "  loopback: $(wc -l <"$dir/lo.tsv") datagrams, bad CRC: $lbad0 from node 0, $lbad1 from node 1"
	[ "$lbad0" -eq "$nbad" ] || fail "bad CRCs on the wire ($lbad0) != in node 0's capture ($nbad)"
	[ "$lbad1" -eq 0 ] || fail "$lbad1 frames of node 1 with a bad CRC (it corrupts nothing)"
	[ "$lput" -ge $iters ] || fail "$lput last fragments of 5000-byte PUTs on the wire"
fi
echo "PASS: pcap"
exit 0
