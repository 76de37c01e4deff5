#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs each libFuzzer harness for SECONDS, as many at once as there are CPUs,
# on a seed corpus made from the golden vectors of tests/test_pkt.c (and, for
# fuzz_app, a short program of legal traffic), and fails if any harness finds
# a crash.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS
# (BUILD_DIR configured with: CC=clang meson setup BUILD_DIR -Dfuzz=true)
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 BUILD_DIR SECONDS" >&2
	exit 2
fi
build=$1
secs=$2

tmp=$(mktemp -d /tmp/dnp-fuzz.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Writes the bytes spelled by a hex string to a file.
unhex() {
	printf '%b' "$(printf '%s' "$1" | sed 's/../\\x&/g')" >"$2"
}

# Golden frames (see tests/test_pkt.c): a PUT with "hello, DNP!" and a CREDIT.
put=444e0101040302010d0c0b0a500001000102030000010205d1000b00efbeadde
put+=78563412007f00000df0feca0000000068656c6c6f2c20444e50210000000000
put+=0747063c01030000443322110b000000
credit=444e0100000000000001000040000400010000000000000006000000000000
credit+=002000000078563412f9010000f0ffffff9d9caf4900000000f0debc9a00000000
# A CREDIT of a 4-VC link: credit[2..3] in a one-word payload.
credit4=444e0100000000002a0000005000020500010000000000000600100000000000
credit4+=10000000111111110000000022000000f00100003333333307000000feffffffcc9cb901000000000403020100000000
# A RESET frame (an announce of epoch 2) with its hello: 2x1x1, shm, 4 VCs.
reset=444e0102000000000700000060000102010000010000000006002000000000000c000000b979379e00000000
reset+=01000000484c01010200010001000401004000004010000000000000000000000000000032bbfc1200000000
reset+=3412000000000000
# A CMPL from node 1,0,0 reporting three messages (msg_id and two ids in its payload).
cmpl=444e01010100000000000000500001000000000100000000050008000100010000000000000000000000000000000000020001000300010000000000000000003b2274a8000000000000000000000000

# Commands: a PUT, a SEND, a GET to node 1,1,1 port 1 (then the port count 4).
cmd_put=0100010001010100341200000000000000000000007f00000000010000000000
cmd_put+=00000000007e00000000000000000000efbefecacefaedfe000000000000000004
cmd_send=0200010001010100000000000000000000000000000000000000010000000000
cmd_send+=00000000007e00000000000000000000efbefecacefaedfe000000000000000004
cmd_get=0300010001010100341200000000000000000000007f00000000010000000000
cmd_get+=00000000007e00009900000000000000efbefecacefaedfe000000000000000004

# fuzz_app programs (see fuzz_app.c, run_program): register a buffer, queue
# legal commands, let the daemon run, drain events; then the same with a
# scribbled command-ring header in the middle.
app_legal=0500001000200705000000000010000003000000000001020304050607080900ff0708
app_legal+=0300100010001005000000000000000000000000000000000000000000000000000009ff0f0710
app_hostile=0500001000200702000000000010000001000000000001020304050607080900ff
app_hostile+=00000004ffff0000001000000000000000090100070f
app_hostile+=0110000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000ff
app_hostile+=09ff0f0710

mkdir -p "$tmp/pkt" "$tmp/cmd" "$tmp/engine" "$tmp/app" "$tmp/impair" "$tmp/artifacts"
unhex "$put" "$tmp/pkt/put"
unhex "$credit" "$tmp/pkt/credit"
unhex "$credit4" "$tmp/pkt/credit4"
unhex "$cmpl" "$tmp/pkt/cmpl"
unhex "$reset" "$tmp/pkt/reset"
unhex "$cmd_put" "$tmp/cmd/put"
unhex "$cmd_send" "$tmp/cmd/send"
unhex "$cmd_get" "$tmp/cmd/get"
unhex "$app_legal" "$tmp/app/legal"
unhex "$app_hostile" "$tmp/app/hostile"
# The engine harness builds its frames from the bytes: the golden ones are seeds too.
cp "$tmp/pkt/put" "$tmp/pkt/credit" "$tmp/pkt/credit4" "$tmp/pkt/cmpl" "$tmp/pkt/reset" "$tmp/engine/"
# One pass (fuzz_engine.c, last byte 0x20): a PUT target on the neighbour, the
# links up, a 4 KiB PUT written out from its source; the same with its write-out read
# failing; and a PUT failing in the middle of a send-side run (a finding, now fixed).
op_put=0a0005000000000000f0ff0f003f000101003f000101003f000101003f000101003f000101003f000101003f
op_put+=000101003f000101003f000101003f000101003f000101003f00010100010004000000000000000e00100000
op_put+=3f000101003f000101003f000101003f000101003f000101003f000101003f000101003f000101003f000101
op_put+=003f000101003f000101003f000101003f000101003f000101003f000101003f000101003f000101003f0001
op_put+=01003f000101003f0001010020
op_fault=0a0005000000000000f0ff0f003f000101003f000101003f000101003f000101003f000101003f000101003f
op_fault+=000101003f000101003f000101003f000101003f000101003f00010100010006000100010004000000000000
op_fault+=000e001000003f000101003f000101003f000101003f000101003f000101003f000101003f000101003f0001
op_fault+=01003f000101003f000101003f000101003f000101003f000101003f000101003f000101003f000101003f00
op_fault+=0101003f000101003f000101003f0001010020
op_runfail=0a0005000000000000f0ff0f003f000101003f000101003f000101003f000101003f000101003f000101003f
op_runfail+=000101003f000101003f000101003f000101003f000101003f0001010001000400000000000000f2ffefffff
op_runfail+=c0fffe01003f000101003f000101003f000101003f000101003f000101003f3a01010d00000101003f000101
op_runfail+=003efff701003f000101003f000101003f000101003f000101003f0001010d00000101003f00969696960101
op_runfail+=003f000101003f000101003f0001010020
unhex "$op_put" "$tmp/engine/onepass-put"
unhex "$op_fault" "$tmp/engine/onepass-fault"
unhex "$op_runfail" "$tmp/engine/onepass-run-fail"
# LO|FA|MO: a DIAG payload (first byte odd) and an ACK datagram (first byte even).
mkdir -p "$tmp/lofamo"
unhex 014447010105000000000000000000000000000000000000000100000000000000 "$tmp/lofamo/diag"
unhex 004c465356010200000300000007000000050000000000000000 "$tmp/lofamo/ack"
# Impairment specs (transport/impair.h).
printf 'dir=xp,loss=1%%,reorder=0.5%%,dup=0.1%%,corrupt=0.01%%,delay=50us,seed=7' >"$tmp/impair/full"
printf 'off' >"$tmp/impair/off"
printf 'loss=100%%,dir=zm' >"$tmp/impair/loss"

# Presto (fuzz_presto.c): one 40-byte event record, an RX_PUT into the eager ring.
mkdir -p "$tmp/presto"
unhex 02010000010000000000000040000000000000000000000000000000000000000100004000000000 "$tmp/presto/rxput"
# The libfabric provider (fuzz_fi.c, built when libfabric-dev is installed): the same record.
mkdir -p "$tmp/fi"
cp "$tmp/presto/rxput" "$tmp/fi/rxput"
# Regression: a GET completion naming a posted receive that never issued one
# (it dereferenced a peer that did not exist).
unhex 0902900100dc0100000100000000000000000000020100000100000000000000400000000000000000000d00000000000000000001000000000000020100b7080100000000000003030303210000000000000000000000000026000000a900000000000000003d000100000000000040002002010100000000000020ff0400004000004f00 "$tmp/fi/forged-get-done"

# dnpd's topology file, then NUL-separated command-line words (fuzz_conf.c).
mkdir -p "$tmp/conf"
printf '[node]\ntorus = 2x2x1\ncoord = 1,0,0\nrun_dir = /tmp/x\ntransport = udp\n[links]\nxp = 10.0.0.1:5,10.0.0.2:6\n' \
	>"$tmp/conf/file"
printf 'torus=4x1x1\nrun_dir=/r\nrx_bufs=8\n\0--coord\0003,0,0\0--heap-size\0002M\0--idle\0busy\0--rx-bufs\0002' \
	>"$tmp/conf/argv"
printf 'shared=1,chan=3,mtu=1500,links' >"$tmp/conf/options"
# Socket requests (fuzz_sess.c, run_program): connect, HELLO, service, ATTACH,
# service, REGISTER in the heap, service, read, STATS, service, read.
mkdir -p "$tmp/sess"
unhex 000300010100000005050603010101050603020200001000000100050603040101000000050506 "$tmp/sess/handshake"

# dnpctl stats --json (fuzz_ctljson.c): a daemon's stats report.
mkdir -p "$tmp/ctljson"
printf '%s\n' 'node 0 (0,0,0) of 2x1x1 transport shm idle adaptive uptime_ms 789' \
	'file lofamo /tmp/x/node-0.lofamo' 'engine cmds_accepted 0 cmds_ok 0' \
	'wiring X+ expected 1,0,0 X- found - (nothing heard)' \
	'link X+ state UP local a remote b' 'link X+ vc 0 tx_packets 0 rx_fifo 0' \
	'link X+ impair off frames 0 dropped 0' 'link X+ transport tx_frames 72' 'link Y+ none' \
	'daemon iterations 288 sleeps 143' >"$tmp/ctljson/report"

# The udp link's datagrams (fuzz_udppack.c): a packed CMPL + PUT (header:
# magic "DP", version 1, two frames of 80 and 64 bytes), and an empty one.
mkdir -p "$tmp/udppack"
printf 'DP\001\002\0\0\0\0\120\0\100\0\0\0\0\0' >"$tmp/udppack/two"
head -c 144 /dev/zero | tr '\0' 'a' >>"$tmp/udppack/two"
: >"$tmp/udppack/empty"

# the AGG datagrams of group supervisors (fuzz_svcagg.c): no seeds, it starts empty
mkdir -p "$tmp/svcagg"

# One harness: its verdict goes to $tmp/$f.rc, its summary to $tmp/$f.out.
fuzz_one() {
	local f=$1 bin=$build/tests/fuzz/fuzz_$1 quiet=() rc=0
	# The parsers under test print their complaints: keep libFuzzer's own output only.
	case $f in conf | sess) quiet=(-close_fd_mask=3) ;; esac
	{
		echo "fuzz: fuzz_$f for ${secs}s"
		# Seeds are copied so the corpus directory the fuzzer grows is the temp one.
		if ! "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 \
			-max_len=4224 -print_final_stats=1 "${quiet[@]}" \
			-artifact_prefix="$tmp/artifacts/$f-" "$tmp/$f" >"$tmp/$f.log" 2>&1; then
			echo "fuzz: fuzz_$f FAILED; last lines of its log:"
			tail -n 40 "$tmp/$f.log"
			rc=1
		fi
		grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$tmp/$f.log" || true
	} >"$tmp/$f.out" 2>&1
	echo "$rc" >"$tmp/$f.rc"
}

# As many harnesses at once as there are CPUs (each is single-threaded), so
# the run takes SECONDS x harnesses / CPUs.
jobs_max=$(nproc)
run=()
for f in pkt cmd engine app lofamo svcagg presto fi impair conf sess ctljson udppack; do
	bin=$build/tests/fuzz/fuzz_$f
	if [ "$f" = fi ] && [ ! -x "$bin" ]; then
		echo "fuzz: fuzz_fi not built (no libfabric-dev): skipped"
		continue
	fi
	if [ "$f" = conf ] && [ ! -x "$bin" ]; then
		echo "fuzz: fuzz_conf not built (no libinih-dev): skipped"
		continue
	fi
	if [ ! -x "$bin" ]; then
		echo "fuzz: $bin not built (configure with CC=clang and -Dfuzz=true)" >&2
		exit 1
	fi
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
		wait -n || true
	done
	fuzz_one "$f" &
	run+=("$f")
done
wait

status=0
for f in "${run[@]}"; do
	cat "$tmp/$f.out"
	[ "$(cat "$tmp/$f.rc" 2>/dev/null)" = 0 ] || status=1
done

if compgen -G "$tmp/artifacts/*" >/dev/null; then
	echo "fuzz: crash artifacts found:" >&2
	for a in "$tmp"/artifacts/*; do
		echo "  $(basename "$a"): $(xxd -p "$a" | tr -d '\n' | head -c 400)" >&2
	done
	status=1
fi
exit $status
