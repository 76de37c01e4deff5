#!/bin/sh
# SPDX-License-Identifier: MIT
# The Wireshark dissector (tools/wireshark/dnp.lua) on outcome-query frames
# (docs/protocol.md, "Outcome queries"): a QUERY with one more id in its
# payload, its 'not delivered' answer (CMPL status 255), a resend (PUT status
# DNP_PKT_RETRY) and an error report, built here as UDP datagrams with a
# correct CRC, must dissect with a good CRC and be named as such. Then buffer
# credits (docs/protocol.md, "Buffer credits"): after a sender's hello of
# version 1 its CREDIT frames' timestamp is no buffer credit; after one of
# version 2 (2 VCs) byte v of it is the free count of VC v, 255 "none".
# usage: pcap-query.sh DISSECTOR.lua
# Exit: 0 pass, 1 fail, 77 skip (tshark or python3 missing).
set -u
lua=$1
for c in tshark python3; do
	command -v $c >/dev/null 2>&1 || { echo "SKIP: $c is not installed"; exit 77; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$dir/q.pcap" <<'PY' || { echo "FAIL: could not build the capture"; exit 1; }
import struct, sys, zlib
def frame(kind, status, msg_id, payload=b'', lflags=1, ts=0):
    plen = len(payload)
    flen = 64 + ((plen + 15) & ~15)
    lw = struct.pack('<HBBIIHBB', 0x4e44, 1, lflags, 7, 3, flen, 0, 0)
    h0 = bytes([1, 0, 0, 0, 0, 0, 0, 0, kind, status]) + struct.pack('<HI', plen, msg_id)
    ft = bytes(8) + struct.pack('<II', ts, 0)
    f = lw + h0 + bytes(16) + payload + bytes(flen - 64 - plen) + ft
    return f[:-16] + struct.pack('<I', zlib.crc32(f) & 0xffffffff) + ft[4:]
def hello(version, nvc):  # struct dnp_pkt_hello on the wire (pkt.c)
    return struct.pack('<HBBHHHBBIHB', 0x4c48, version, 1, 2, 1, 1, nvc, 0, 16384, 4160, 0) + bytes(13)
def udp(data):
    u = struct.pack('>HHHH', 40000, 47000, 8 + len(data), 0) + data
    ip = struct.pack('>BBHHHBBH4s4s', 0x45, 0, 20 + len(u), 0, 0, 64, 17, 0,
                     bytes([127, 0, 0, 1]), bytes([127, 0, 0, 1]))
    return bytes(12) + b'\x08\x00' + ip + u
frames = [frame(9, 0, 65541, struct.pack('<I', 65542)), frame(5, 255, 65541),
          frame(1, 1, 65541, b'12345678'), frame(5, 113, 65543),
          frame(6, 0, 0, hello(1, 2), 2, 0x01020304), frame(6, 0, 0, b'', 0, 0x01020304),
          frame(6, 0, 0, hello(2, 2), 2, 0x0605), frame(6, 0, 0, b'', 0, 0xff07)]
out = struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)
for i, f in enumerate(frames):
    p = udp(f)
    out += struct.pack('<IIII', i, 0, len(p), len(p)) + p
open(sys.argv[1], 'wb').write(out)
PY
timeout 60 tshark -n -X lua_script:"$lua" -r "$dir/q.pcap" -T fields -e _ws.col.Info \
	-e dnp.crc.status -e dnp.query.msg_id -e dnp.outcome >"$dir/out" 2>"$dir/err"
cat "$dir/out"
check() { # LINE PATTERN
	sed -n "$1p" "$dir/out" | grep -Eq "$2" || { echo "FAIL: frame $1 does not match '$2'"; exit 1; }
}
check 1 '^QUERY .* id=65541	1	65542	$'
check 2 '^CMPL .* id=65541 NOT_DELIVERED	1		not delivered'
check 3 '^PUT .* id=65541 RESEND	1'
check 4 '^CMPL .* id=65543 status=-113	1		error -113$'
timeout 60 tshark -n -X lua_script:"$lua" -r "$dir/q.pcap" -T fields -e dnp.crc.status \
	-e dnp.hello.version -e dnp.timestamp -e dnp.bufs -e dnp.bufs.vc >"$dir/out" 2>>"$dir/err"
cat "$dir/out"
check 5 '^1	1	16909060		$'
check 6 '^1		16909060		$'
check 7 '^1	2	1541	5,6	0,1$'
check 8 '^1		65287	7,255	0,1$'
echo "PASS: pcap-query"
