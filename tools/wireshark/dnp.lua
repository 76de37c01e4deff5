-- SPDX-License-Identifier: MIT
-- SoftDNP: a Wireshark/tshark dissector for DNP frames (docs/protocol.md).
--
-- It reads DNP frames
--   * over Ethernet, EtherType 0x88B5, behind the 18-byte fragment header of
--     the DPDK backend (transport/dpdk/dpdk.h); the capture files of
--     `dnpd --pcap FILE` are written this way for every transport;
--   * over UDP, one frame per datagram, on the ports of the preference
--     "dnp.udp_ports" (dnpd's default 47000 + 8 x node id + direction), and
--     anywhere else through a heuristic (preference "dnp.heuristic"); a
--     packed datagram of the udp link (several frames, docs/protocol.md
--     "The udp link's datagrams") is shown as its frames, an announcement
--     of packing as such (fields dnp.udp.*).
-- Every field of the link word, H0, H1 and footer is shown under the name it
-- has in dnp-core/pkt.h (struct dnp_pkt_hdr); the CRC-32 is computed as
-- dnp-core/pkt.c computes it (over the whole frame, its CRC field taken as
-- zero) and compared; CREDIT frames show their credits, acks, selective acks
-- and reset fields, RESET frames their hello (the link handshake); the footer
-- timestamp of a CREDIT frame, RESET frames included, shows its buffer credits
-- (the free buffer count per VC, docs/protocol.md "Buffer credits") when its
-- sender's hello is of version 2; DIAG payloads are decoded (LO|FA|MO,
-- lofamo/dfm.c, and dnpd's wiring queries and answers), as are GET_REQ, CMPL, QUERY and ROUTE
-- payloads; an outcome QUERY's answer (a CMPL with status 255, "not
-- delivered") and a resend after it (PUT/SEND status 1) are named as such.
--
-- Use: tshark -X lua_script:dnp.lua -r FILE -Y dnp
--      or copy it to ~/.local/lib/wireshark/plugins/.
-- Written for Wireshark 4.0 (Lua 5.2, bit32).

local dnp = Proto("dnp", "SoftDNP frame")
local dnpeth = Proto("dnpeth", "SoftDNP Ethernet fragment header")
local dnpudp = Proto("dnpudp", "SoftDNP udp packed datagram")

local WORD = 16
local OVERHEAD = 64
local PAYLOAD_OFF = 48
local MAX_PAYLOAD = 4096
local MAGIC = 0x4e44
local ETHERTYPE = 0x88B5

local KIND = {
	[1] = "PUT", [2] = "SEND", [3] = "GET_REQ", [4] = "GET_RESP",
	[5] = "CMPL", [6] = "CREDIT", [7] = "DIAG", [8] = "ROUTE", [9] = "QUERY", [10] = "COLL",
}
local K_PUT, K_SEND, K_GET_REQ, K_GET_RESP, K_CMPL, K_CREDIT, K_DIAG, K_ROUTE = 1, 2, 3, 4, 5, 6, 7, 8
local K_QUERY = 9
local CMPL_NOT_DELIVERED = 255 -- DNP_CMPL_NOT_DELIVERED (pkt.h): the answer to a QUERY
local PKT_RETRY = 1            -- DNP_PKT_RETRY: a PUT/SEND sent again after that answer
local DIR = { [0] = "X+", [1] = "X-", [2] = "Y+", [3] = "Y-", [4] = "Z+", [5] = "Z-", [6] = "local" }
local CRC_STATUS = { [0] = "Bad", [1] = "Good", [2] = "Unverified" }
local DIAG_KIND = { [0] = "NONE (host recovered)", [1] = "HOST_OMISSION", [2] = "HOST_PERIPHERY" }
local WIRE_KIND = { [1] = "query", [2] = "answer" }
local XPORT = { [0] = "none", [1] = "shm", [2] = "udp", [3] = "dpdk", [4] = "verbs" } -- enum dnp_xport
local ROUTING = { [0] = "dor", [1] = "adaptive" } -- enum dnp_routing
local HELLO_MAGIC = 0x4c48 -- "HL"
local HELLO_BYTES = 32
-- Hello versions whose layout this dissector knows (DNP_HELLO_VERSION, pkt.h).
local HELLO_VERSION = {
	[1] = "1: CREDIT footers carry no buffer credits",
	[2] = "2: CREDIT footers carry buffer credits",
}
local BUFS_VERSION = 2 -- from this hello version on, a credit's timestamp field is its buffer credits
local BUFS_NONE = 255  -- DNP_BUFS_NONE (pkt.h)
local MAX_VC = 4

local f = dnp.fields
-- word 0: link word
f.magic = ProtoField.uint16("dnp.magic", "magic", base.HEX)
f.version = ProtoField.uint8("dnp.version", "version", base.DEC)
f.lflags = ProtoField.uint8("dnp.lflags", "lflags", base.HEX)
f.lf_seq = ProtoField.bool("dnp.lflags.seq", "DNP_LINK_F_SEQ", 8, nil, 0x01)
f.lf_reset = ProtoField.bool("dnp.lflags.reset", "DNP_LINK_F_RESET", 8, nil, 0x02)
f.lf_sack = ProtoField.bool("dnp.lflags.sack", "DNP_LINK_F_SACK", 8, nil, 0x04)
f.seq = ProtoField.uint32("dnp.seq", "seq", base.DEC)
f.ack = ProtoField.uint32("dnp.ack", "ack", base.DEC)
f.flen = ProtoField.uint16("dnp.flen", "frame length", base.DEC)
f.src_dir = ProtoField.uint8("dnp.src_dir", "src_dir", base.DEC, DIR)
f.epoch = ProtoField.uint8("dnp.epoch", "epoch", base.DEC)
-- word 1: H0
f.dst = ProtoField.string("dnp.dst", "dst")
f.dst_x = ProtoField.uint8("dnp.dst.x", "dst x", base.DEC)
f.dst_y = ProtoField.uint8("dnp.dst.y", "dst y", base.DEC)
f.dst_z = ProtoField.uint8("dnp.dst.z", "dst z", base.DEC)
f.src = ProtoField.string("dnp.src", "src")
f.src_x = ProtoField.uint8("dnp.src.x", "src x", base.DEC)
f.src_y = ProtoField.uint8("dnp.src.y", "src y", base.DEC)
f.src_z = ProtoField.uint8("dnp.src.z", "src z", base.DEC)
f.dst_port = ProtoField.uint8("dnp.dst_port", "dst_port", base.DEC)
f.src_port = ProtoField.uint8("dnp.src_port", "src_port", base.DEC)
f.kvf = ProtoField.uint8("dnp.kvf", "kind / vc / flags", base.HEX)
f.kind = ProtoField.uint8("dnp.kind", "kind", base.DEC, KIND, 0x0f)
f.vc = ProtoField.uint8("dnp.vc", "vc", base.DEC, nil, 0x30)
f.first = ProtoField.bool("dnp.flags.first", "DNP_PKT_F_FIRST", 8, nil, 0x40)
f.last = ProtoField.bool("dnp.flags.last", "DNP_PKT_F_LAST", 8, nil, 0x80)
f.status = ProtoField.uint8("dnp.status", "status", base.DEC)
f.len = ProtoField.uint16("dnp.len", "len (payload bytes)", base.DEC)
f.msg_id = ProtoField.uint32("dnp.msg_id", "msg_id", base.DEC)
f.sack = ProtoField.uint64("dnp.sack", "sack (bit i: ack + 1 + i held)", base.HEX)
-- word 2: H1
f.va = ProtoField.uint64("dnp.va", "va", base.HEX)
f.key = ProtoField.uint32("dnp.key", "key", base.HEX)
f.offset = ProtoField.uint32("dnp.offset", "offset", base.DEC)
f.credit_vc = ProtoField.uint8("dnp.credit.vc", "credit vc", base.DEC)
f.credit_occ = ProtoField.uint32("dnp.credit.occupancy", "occupancy (words)", base.DEC)
f.credit_recv = ProtoField.uint32("dnp.credit.received", "received (words)", base.DEC)
f.reset_nonce = ProtoField.uint32("dnp.reset.nonce", "incarnation nonce", base.HEX)
f.reset_flags = ProtoField.uint32("dnp.reset.flags", "reset flags", base.HEX)
f.reset_announce = ProtoField.bool("dnp.reset.announce", "DNP_RESET_ANNOUNCE", 32, nil, 0x1)
-- the hello of a RESET frame (DNP_HELLO_*, pkt.h: struct dnp_pkt_hello)
f.hello_magic = ProtoField.uint16("dnp.hello.magic", "magic", base.HEX)
f.hello_version = ProtoField.uint8("dnp.hello.version", "version", base.DEC, HELLO_VERSION)
f.hello_transport = ProtoField.uint8("dnp.hello.transport", "transport (enum dnp_xport)", base.DEC, XPORT)
f.hello_dim_x = ProtoField.uint16("dnp.hello.dim_x", "torus dim x", base.DEC)
f.hello_dim_y = ProtoField.uint16("dnp.hello.dim_y", "torus dim y", base.DEC)
f.hello_dim_z = ProtoField.uint16("dnp.hello.dim_z", "torus dim z", base.DEC)
f.hello_nvc = ProtoField.uint8("dnp.hello.nvc", "virtual channels (--vcs)", base.DEC)
f.hello_vc_mode = ProtoField.uint8("dnp.hello.vc_mode", "vc_mode (enum dnp_vc_mode)", base.DEC)
f.hello_fifo = ProtoField.uint32("dnp.hello.fifo_words", "RX FIFO per VC (words)", base.DEC)
f.hello_max_frame = ProtoField.uint16("dnp.hello.max_frame", "largest frame (bytes)", base.DEC)
f.hello_routing = ProtoField.uint8("dnp.hello.routing", "routing (enum dnp_routing)", base.DEC, ROUTING)
f.hello_rsvd = ProtoField.bytes("dnp.hello.reserved", "reserved")
-- payload
f.payload = ProtoField.bytes("dnp.payload", "payload")
f.padding = ProtoField.bytes("dnp.padding", "padding")
f.get_dst_va = ProtoField.uint64("dnp.get.dst_va", "dst_va", base.HEX)
f.get_dst_key = ProtoField.uint32("dnp.get.dst_key", "dst_key", base.HEX)
f.get_len = ProtoField.uint32("dnp.get.len", "len", base.DEC)
f.cmpl_id = ProtoField.uint32("dnp.cmpl.msg_id", "also completes msg_id", base.DEC)
f.query_id = ProtoField.uint32("dnp.query.msg_id", "also asks about msg_id", base.DEC)
f.outcome = ProtoField.string("dnp.outcome", "outcome")
f.route_node = ProtoField.uint32("dnp.route.node", "node", base.DEC)
f.route_dim = ProtoField.uint8("dnp.route.dim", "dim", base.DEC, { [0] = "X", [1] = "Y", [2] = "Z" })
f.route_state = ProtoField.uint8("dnp.route.state", "state", base.DEC, { [0] = "whole", [1] = "broken", [2] = "sick" })
f.route_ver = ProtoField.uint16("dnp.route.ver", "version", base.DEC)
f.diag_magic = ProtoField.uint16("dnp.diag.magic", "magic", base.HEX)
f.diag_version = ProtoField.uint8("dnp.diag.version", "version", base.DEC)
f.diag_kind = ProtoField.uint8("dnp.diag.kind", "kind (enum dnp_lfm_rfd_kind)", base.DEC, DIAG_KIND)
f.diag_node = ProtoField.uint32("dnp.diag.node", "node", base.DEC)
f.diag_host = ProtoField.uint64("dnp.diag.host_status", "host_status", base.HEX)
f.diag_dnp = ProtoField.uint64("dnp.diag.dnp_status", "dnp_status", base.HEX)
f.diag_seq = ProtoField.uint32("dnp.diag.seq", "seq", base.DEC)
f.diag_rsvd = ProtoField.uint32("dnp.diag.reserved", "reserved", base.HEX)
f.wire_magic = ProtoField.uint16("dnp.wire.magic", "magic", base.HEX)
f.wire_version = ProtoField.uint8("dnp.wire.version", "version", base.DEC)
f.wire_kind = ProtoField.uint8("dnp.wire.kind", "kind", base.DEC, WIRE_KIND)
f.wire_round = ProtoField.uint32("dnp.wire.round", "round", base.DEC)
f.wire_dir = ProtoField.uint8("dnp.wire.dir", "link", base.DEC, DIR)
f.wire_flags = ProtoField.uint8("dnp.wire.flags", "flags (1 UP, 2 MISWIRED, 4 EXISTS)", base.HEX)
f.wire_heard = ProtoField.string("dnp.wire.heard", "heard end")
f.wire_heard_dir = ProtoField.uint8("dnp.wire.heard_dir", "heard direction", base.DEC, DIR)
f.wire_refused = ProtoField.uint32("dnp.wire.refused", "refused link-control frames", base.DEC)
-- footer
f.crc = ProtoField.uint32("dnp.crc", "crc", base.HEX)
f.crc_computed = ProtoField.uint32("dnp.crc.computed", "crc computed", base.HEX)
f.crc_status = ProtoField.uint8("dnp.crc.status", "crc status", base.DEC, CRC_STATUS)
f.fstatus = ProtoField.uint8("dnp.fstatus", "fstatus", base.HEX)
f.retx = ProtoField.bool("dnp.fstatus.retx", "DNP_FT_RETX", 8, nil, 0x01)
-- congestion mark (data) or its echo (CMPL): docs/protocol.md, "Congestion marks"
f.ce = ProtoField.bool("dnp.fstatus.ce", "DNP_FT_CE", 8, nil, 0x10)
f.tc = ProtoField.uint8("dnp.fstatus.tc", "traffic class (0 lowest .. 7 top)", base.DEC, nil, 0x0e)
f.hops = ProtoField.uint8("dnp.hops", "hops", base.DEC)
f.via = ProtoField.uint16("dnp.via", "via", base.HEX)
f.timestamp = ProtoField.uint32("dnp.timestamp", "timestamp", base.DEC)
-- a CREDIT frame's timestamp field since hello version 2: byte vc, the free buffers of VC vc
f.bufs = ProtoField.uint8("dnp.bufs", "free buffers", base.DEC)
f.bufs_vc = ProtoField.uint8("dnp.bufs.vc", "vc", base.DEC)
f.bufs_version = ProtoField.uint8("dnp.bufs.hello_version", "hello version of the sender", base.DEC)
f.bufs_why = ProtoField.string("dnp.bufs.why", "read as buffer credits by")
f.bufs_unused = ProtoField.uint8("dnp.bufs.unused", "byte of no VC of the link", base.DEC)
f.msg_len = ProtoField.uint32("dnp.msg_len", "msg_len", base.DEC)

local e = {
	crc_bad = ProtoExpert.new("dnp.crc.bad", "CRC mismatch", expert.group.CHECKSUM, expert.severity.ERROR),
	short = ProtoExpert.new("dnp.short", "shorter than 64 bytes or not whole words",
		expert.group.MALFORMED, expert.severity.ERROR),
	bad_magic = ProtoExpert.new("dnp.magic.bad", "bad magic", expert.group.MALFORMED, expert.severity.ERROR),
	bad_version = ProtoExpert.new("dnp.version.bad", "unknown version", expert.group.MALFORMED,
		expert.severity.ERROR),
	bad_len = ProtoExpert.new("dnp.len.bad", "length field, payload length and frame disagree",
		expert.group.MALFORMED, expert.severity.ERROR),
	bad_kind = ProtoExpert.new("dnp.kind.bad", "unknown kind", expert.group.MALFORMED, expert.severity.ERROR),
	reserved = ProtoExpert.new("dnp.reserved", "reserved bits or padding not zero",
		expert.group.MALFORMED, expert.severity.WARN),
	fragment = ProtoExpert.new("dnp.fragment", "part of a DNP frame (fragmented on Ethernet)",
		expert.group.REASSEMBLE, expert.severity.NOTE),
	retx = ProtoExpert.new("dnp.retx", "retransmission", expert.group.SEQUENCE, expert.severity.NOTE),
}
dnp.experts = e

local fe = dnpeth.fields
fe.version = ProtoField.uint8("dnpeth.version", "version", base.DEC)
fe.chan = ProtoField.uint8("dnpeth.chan", "chan", base.DEC)
fe.frag_idx = ProtoField.uint8("dnpeth.frag_idx", "frag_idx", base.DEC)
fe.frag_cnt = ProtoField.uint8("dnpeth.frag_cnt", "frag_cnt", base.DEC)
fe.frame_id = ProtoField.uint16("dnpeth.frame_id", "frame_id", base.DEC)
fe.total_len = ProtoField.uint16("dnpeth.total_len", "total_len", base.DEC)
fe.offset = ProtoField.uint16("dnpeth.offset", "offset", base.DEC)
fe.len = ProtoField.uint16("dnpeth.len", "len", base.DEC)
fe.reserved = ProtoField.bytes("dnpeth.reserved", "reserved")

local fu = dnpudp.fields
fu.magic = ProtoField.uint16("dnp.udp.magic", "magic", base.HEX)
fu.version = ProtoField.uint8("dnp.udp.version", "version", base.DEC)
fu.count = ProtoField.uint8("dnp.udp.count", "frames (0: an announcement)", base.DEC)
fu.flags = ProtoField.uint8("dnp.udp.flags", "flags", base.HEX)
fu.heard = ProtoField.bool("dnp.udp.heard", "has heard the peer's announcement", 8, nil, 0x01)
fu.flen = ProtoField.uint16("dnp.udp.flen", "frame length", base.DEC)
local PACK_MAGIC = 0x5044 -- DNP_UDP_PACK_MAGIC ("DP")
local PACK_MAX = 32
local eu = {
	bad = ProtoExpert.new("dnp.udp.bad", "malformed packed datagram (the receiver drops it whole)",
		expert.group.MALFORMED, expert.severity.ERROR),
}
dnpudp.experts = eu

dnp.prefs.udp_ports = Pref.range("UDP ports", "47000-48023",
	"UDP ports of DNP links (dnpd: --udp-base-port + 8 x node id + direction)", 65535)
dnp.prefs.bufs_unknown = Pref.bool("Buffer credits without a hello", true,
	"Read a CREDIT frame's timestamp as buffer credits (hello version 2) when no hello of its "
	.. "sender precedes it in the capture")
dnp.prefs.heuristic = Pref.bool("Find DNP frames on other UDP ports", true,
	"Try every UDP datagram that looks like a DNP frame (magic, version, length)")

-- CRC-32 IEEE 802.3, reflected, init and xorout 0xFFFFFFFF (zlib's crc32), by table.
local band, bxor, rshift = bit32.band, bit32.bxor, bit32.rshift
local crc_tab = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if band(c, 1) ~= 0 then
			c = bxor(rshift(c, 1), 0xEDB88320)
		else
			c = rshift(c, 1)
		end
	end
	crc_tab[i] = c
end

-- CRC of the string s with its bytes zf .. zf + 3 (1-based) taken as zero.
local function frame_crc(s, zf)
	local c = 0xFFFFFFFF
	local n = #s
	local i = 1
	while i <= n do
		local j = i + 63
		if j > n then j = n end
		local bytes = { s:byte(i, j) }
		for k = 1, #bytes do
			local pos = i + k - 1
			local b = bytes[k]
			if pos >= zf and pos < zf + 4 then b = 0 end
			c = bxor(crc_tab[band(bxor(c, b), 0xFF)], rshift(c, 8))
		end
		i = j + 1
	end
	return bxor(c, 0xFFFFFFFF)
end

local function coord(tvb, off)
	return string.format("%d,%d,%d", tvb(off, 1):uint(), tvb(off + 1, 1):uint(), tvb(off + 2, 1):uint())
end

local function add_coord(t, tvb, off, fs, fx, fy, fz)
	local c = t:add(fs, tvb(off, 3), coord(tvb, off))
	c:add(fx, tvb(off, 1))
	c:add(fy, tvb(off + 1, 1))
	c:add(fz, tvb(off + 2, 1))
end

local function link_word(tvb, t)
	local w = t:add(dnp, tvb(0, WORD), "Link word")
	local m = w:add_le(f.magic, tvb(0, 2))
	if tvb(0, 2):le_uint() ~= MAGIC then m:add_proto_expert_info(e.bad_magic) end
	local v = w:add(f.version, tvb(2, 1))
	if tvb(2, 1):uint() ~= 1 then v:add_proto_expert_info(e.bad_version) end
	local lf = w:add(f.lflags, tvb(3, 1))
	lf:add(f.lf_seq, tvb(3, 1))
	lf:add(f.lf_reset, tvb(3, 1))
	lf:add(f.lf_sack, tvb(3, 1))
	if band(tvb(3, 1):uint(), 0xf8) ~= 0 then lf:add_proto_expert_info(e.reserved) end
	w:add_le(f.seq, tvb(4, 4))
	w:add_le(f.ack, tvb(8, 4))
	w:add_le(f.flen, tvb(12, 2))
	w:add(f.src_dir, tvb(14, 1))
	w:add(f.epoch, tvb(15, 1))
end

local function h0(tvb, t, kind, lflags)
	local w = t:add(dnp, tvb(16, WORD), "H0 (routing header)")
	add_coord(w, tvb, 16, f.dst, f.dst_x, f.dst_y, f.dst_z)
	add_coord(w, tvb, 19, f.src, f.src_x, f.src_y, f.src_z)
	w:add(f.dst_port, tvb(22, 1))
	w:add(f.src_port, tvb(23, 1))
	local k = w:add(f.kvf, tvb(24, 1))
	local ki = k:add(f.kind, tvb(24, 1))
	if not KIND[kind] then ki:add_proto_expert_info(e.bad_kind) end
	k:add(f.vc, tvb(24, 1))
	k:add(f.first, tvb(24, 1))
	k:add(f.last, tvb(24, 1))
	local st = w:add(f.status, tvb(25, 1))
	local sv = tvb(25, 1):uint()
	if kind == K_CMPL then
		local o = sv == 0 and "completed" or sv == CMPL_NOT_DELIVERED and
			"not delivered (answers a QUERY)" or ("error -" .. sv)
		st:append_text(" (" .. o .. ")")
		w:add(f.outcome, o):set_generated()
	elseif (kind == K_PUT or kind == K_SEND) and sv == PKT_RETRY then
		st:append_text(" (DNP_PKT_RETRY: resent after \"not delivered\")")
	end
	w:add_le(f.len, tvb(26, 2))
	if kind == K_CREDIT and band(lflags, 0x04) ~= 0 then
		local n = tvb:len()
		w:add(f.sack, tvb(28, 4), UInt64.new(tvb(28, 4):le_uint(), tvb(n - 4, 4):le_uint()))
			:append_text(" (H0 msg_id and footer msg_len)")
	else
		w:add_le(f.msg_id, tvb(28, 4))
	end
end

local function credit(t, tvb, off, vc, reset)
	local c = t:add(dnp, tvb(off, 8), string.format("credit[%d]", vc))
	c:add(f.credit_vc, vc):set_generated()
	c:add_le(f.credit_occ, tvb(off, 4))
	if reset and vc == 0 then
		c:add_le(f.reset_nonce, tvb(off + 4, 4))
	elseif reset and vc == 1 then
		local r = c:add_le(f.reset_flags, tvb(off + 4, 4))
		r:add_le(f.reset_announce, tvb(off + 4, 4))
	else
		c:add_le(f.credit_recv, tvb(off + 4, 4))
	end
end

local function h1(tvb, t, kind, lflags, plen)
	local w = t:add(dnp, tvb(32, WORD), kind == K_CREDIT and "H1 (credits of VCs 0-1)" or "H1 (RDMA header)")
	if kind == K_CREDIT then
		local reset = band(lflags, 0x02) ~= 0
		credit(w, tvb, 32, 0, reset)
		credit(w, tvb, 40, 1, reset)
	else
		w:add_le(f.va, tvb(32, 8))
		w:add_le(f.key, tvb(40, 4))
		w:add_le(f.offset, tvb(44, 4))
	end
end

local function diag_payload(p, t)
	if p:len() >= 8 and p(0, 2):le_uint() == 0x5754 then -- dnpd wiring query/answer, "TW"
		local w = t:add(dnp, p, "Wiring " .. (WIRE_KIND[p(3, 1):uint()] or "?") .. " (dnpctl topo --all)")
		w:add_le(f.wire_magic, p(0, 2))
		w:add(f.wire_version, p(2, 1))
		w:add(f.wire_kind, p(3, 1))
		w:add_le(f.wire_round, p(4, 4))
		for d = 0, 5 do
			local o = 8 + 9 * d
			if o + 9 > p:len() then break end
			local l = w:add(dnp, p(o, 9), "link " .. DIR[d])
			l:add(f.wire_dir, d):set_generated()
			l:add(f.wire_flags, p(o, 1))
			l:add(f.wire_heard, p(o + 1, 3), coord(p, o + 1))
			l:add(f.wire_heard_dir, p(o + 4, 1))
			l:add_le(f.wire_refused, p(o + 5, 4))
		end
		return "wiring " .. (WIRE_KIND[p(3, 1):uint()] or "?")
	end
	if p:len() == 32 and p(0, 2):le_uint() == 0x4744 then -- LO|FA|MO DIAG, "DG" (lofamo/dfm.c)
		local w = t:add(dnp, p, "LO|FA|MO DIAG")
		w:add_le(f.diag_magic, p(0, 2))
		w:add(f.diag_version, p(2, 1))
		w:add(f.diag_kind, p(3, 1))
		w:add_le(f.diag_node, p(4, 4))
		w:add_le(f.diag_host, p(8, 8))
		w:add_le(f.diag_dnp, p(16, 8))
		w:add_le(f.diag_seq, p(24, 4))
		local r = w:add_le(f.diag_rsvd, p(28, 4))
		if p(28, 4):le_uint() ~= 0 then r:add_proto_expert_info(e.reserved) end
		return "LO|FA|MO " .. (DIAG_KIND[p(3, 1):uint()] or "?") .. " node " .. p(4, 4):le_uint()
	end
	return nil
end

-- The hello of a RESET frame (docs/protocol.md, "The link handshake").
local function hello_payload(p, t)
	local w = t:add(dnp, p, "Hello (link handshake)")
	if p:len() < 3 or p(0, 2):le_uint() ~= HELLO_MAGIC then
		w:add_proto_expert_info(e.bad_magic)
		return "hello malformed"
	end
	w:add_le(f.hello_magic, p(0, 2))
	w:add(f.hello_version, p(2, 1))
	local v = p(2, 1):uint()
	if not HELLO_VERSION[v] or p:len() < HELLO_BYTES then
		if not HELLO_VERSION[v] then w:add_proto_expert_info(e.bad_version) end
		return "hello v" .. v
	end
	w:add(f.hello_transport, p(3, 1))
	w:add_le(f.hello_dim_x, p(4, 2))
	w:add_le(f.hello_dim_y, p(6, 2))
	w:add_le(f.hello_dim_z, p(8, 2))
	w:add(f.hello_nvc, p(10, 1))
	w:add(f.hello_vc_mode, p(11, 1))
	w:add_le(f.hello_fifo, p(12, 4))
	w:add_le(f.hello_max_frame, p(16, 2))
	w:add(f.hello_routing, p(18, 1))
	local r = w:add(f.hello_rsvd, p(19, HELLO_BYTES - 19))
	if p(19, HELLO_BYTES - 19):raw():find("[^%z]") then r:add_proto_expert_info(e.reserved) end
	return string.format("hello v%d %dx%dx%d %s vcs %d vc_mode %d fifo %d max_frame %d %s",
		v, p(4, 2):le_uint(), p(6, 2):le_uint(), p(8, 2):le_uint(),
		XPORT[p(3, 1):uint()] or ("transport " .. p(3, 1):uint()), p(10, 1):uint(),
		p(11, 1):uint(), p(12, 4):le_uint(), p(16, 2):le_uint(),
		ROUTING[p(18, 1):uint()] or ("routing " .. p(18, 1):uint()))
end

-- The hello version and VC count each sender (H0 src and link word src_dir)
-- last said, in capture order; and, by frame number, how each CREDIT frame's
-- timestamp field was read on the first pass, so that a later look (a click
-- in Wireshark) reads it the same way.
local senders, credit_reading = {}, {}

function dnp.init()
	senders, credit_reading = {}, {}
end

-- How to read the timestamp field of a CREDIT frame (docs/protocol.md,
-- "Buffer credits"): nil (as a plain field: its sender's hello is of version 1,
-- or unknown), or { version, nvc (the sender's VCs, nil if unknown), why }.
-- A RESET frame's own hello decides; a RESET frame without one is of an
-- older SoftDNP, version 1.
local function bufs_reading(tvb, pinfo, lflags, plen)
	if not pinfo.visited then
		local key = coord(tvb, 19) .. " " .. (DIR[tvb(14, 1):uint()] or tvb(14, 1):uint())
		local r
		if band(lflags, 0x02) ~= 0 then
			local v, nvc = 1, nil
			if plen >= 3 and tvb:len() >= PAYLOAD_OFF + HELLO_BYTES and
				tvb(PAYLOAD_OFF, 2):le_uint() == HELLO_MAGIC then
				v = tvb(PAYLOAD_OFF + 2, 1):uint()
				if plen >= HELLO_BYTES then nvc = tvb(PAYLOAD_OFF + 10, 1):uint() end
			end
			senders[key] = { version = v, nvc = nvc, frame = pinfo.number }
			r = { version = v, nvc = nvc, why = "this frame's hello" }
		elseif senders[key] then
			local s = senders[key]
			r = { version = s.version, nvc = s.nvc,
				why = string.format("hello of %s in frame %d", key, s.frame) }
		elseif dnp.prefs.bufs_unknown then
			r = { version = BUFS_VERSION, why = "no hello of " .. key ..
				" before: preference dnp.bufs_unknown" }
		end
		credit_reading[pinfo.number] = r or false
	end
	local r = credit_reading[pinfo.number]
	if not r or r.version < BUFS_VERSION or not HELLO_VERSION[r.version] then return nil end
	return r
end

-- The buffer credits of a CREDIT frame in its footer's timestamp field, ts:
-- byte vc for VC vc of the sender's VCs, zero beyond them.
local function bufs_tree(tvb, ts, fo, bufs, plen)
	ts:append_text(" (buffer credits)")
	ts:add(f.bufs_version, bufs.version):set_generated()
	ts:add(f.bufs_why, bufs.why):set_generated()
	local nvc = bufs.nvc or (plen >= 16 and MAX_VC or 2)
	local counts = {}
	for vc = 0, MAX_VC - 1 do
		local r = tvb(fo + 8 + vc, 1)
		if vc < nvc then
			local b = ts:add(f.bufs, r)
			b:append_text(" on VC " .. vc)
			if r:uint() == BUFS_NONE then
				b:append_text(" (DNP_BUFS_NONE: counts no buffers, word credit alone)")
			end
			b:add(f.bufs_vc, vc):set_generated()
			counts[#counts + 1] = r:uint() == BUFS_NONE and "none" or tostring(r:uint())
		else
			local u = ts:add(f.bufs_unused, r)
			if r:uint() ~= 0 then u:add_proto_expert_info(e.reserved) end
		end
	end
	return " bufs=" .. table.concat(counts, ",")
end

local function payload(tvb, t, kind, lflags, plen, avail)
	local n = plen
	if n > avail then n = avail end
	if n <= 0 then
		if kind == K_CREDIT and band(lflags, 0x02) ~= 0 then
			return "no hello: an older SoftDNP"
		end
		return nil
	end
	local p = tvb(PAYLOAD_OFF, n)
	local note
	if kind == K_CREDIT and band(lflags, 0x02) ~= 0 then
		return hello_payload(p, t)
	end
	if kind == K_CREDIT then
		local w = t:add(dnp, p, "credits of VCs 2-3")
		if n >= 16 then
			credit(w, tvb, 48, 2, false)
			credit(w, tvb, 56, 3, false)
		end
		return nil
	end
	local w = t:add(f.payload, p)
	if kind == K_GET_REQ and n >= 16 then
		w:add_le(f.get_dst_va, p(0, 8))
		w:add_le(f.get_dst_key, p(8, 4))
		w:add_le(f.get_len, p(12, 4))
	elseif kind == K_CMPL or kind == K_QUERY then
		local fid = kind == K_CMPL and f.cmpl_id or f.query_id
		for o = 0, n - 4, 4 do
			w:add_le(fid, p(o, 4))
		end
	elseif kind == K_ROUTE then
		for o = 0, n - 8, 8 do
			local r = w:add(dnp, p(o, 8), "cable state")
			r:add_le(f.route_node, p(o, 4))
			r:add(f.route_dim, p(o + 4, 1))
			r:add(f.route_state, p(o + 5, 1))
			r:add_le(f.route_ver, p(o + 6, 2))
		end
	elseif kind == K_DIAG then
		note = diag_payload(p, w)
	end
	return note
end

local function footer(tvb, t, whole, bufs, plen)
	local n = tvb:len()
	local fo = n - WORD
	local w = t:add(dnp, tvb(fo, WORD), "Footer")
	local crc = tvb(fo, 4):le_uint()
	local ci = w:add_le(f.crc, tvb(fo, 4))
	local good = false
	if whole then
		local computed = frame_crc(tvb:raw(0, n), fo + 1)
		good = computed == crc
		w:add(f.crc_computed, computed):set_generated()
		local s = w:add(f.crc_status, good and 1 or 0):set_generated()
		if not good then
			ci:add_proto_expert_info(e.crc_bad,
				string.format("CRC mismatch: frame says 0x%08x, computed 0x%08x", crc, computed))
		end
	else
		w:add(f.crc_status, 2):set_generated()
	end
	local fs = w:add(f.fstatus, tvb(fo + 4, 1))
	fs:add(f.retx, tvb(fo + 4, 1))
	fs:add(f.tc, tvb(fo + 4, 1))
	fs:add(f.ce, tvb(fo + 4, 1))
	if band(tvb(fo + 4, 1):uint(), 0xe0) ~= 0 then fs:add_proto_expert_info(e.reserved) end
	w:add(f.hops, tvb(fo + 5, 1))
	w:add_le(f.via, tvb(fo + 6, 2))
	local ts = w:add_le(f.timestamp, tvb(fo + 8, 4))
	local bufs_info
	if bufs then bufs_info = bufs_tree(tvb, ts, fo, bufs, plen) end
	w:add_le(f.msg_len, tvb(fo + 12, 4))
	return good, band(tvb(fo + 4, 1):uint(), 1) ~= 0, bufs_info
end

-- Dissects one DNP frame (whole: the footer is its last word; else a first
-- fragment, its header words only). Returns the bytes taken.
local function dissect_frame(tvb, pinfo, tree, whole)
	local n = tvb:len()
	pinfo.cols.protocol = "DNP"
	local t = tree:add(dnp, tvb(), "SoftDNP frame")
	if n < (whole and OVERHEAD or PAYLOAD_OFF) or (whole and n % WORD ~= 0) then
		t:add_proto_expert_info(e.short)
		pinfo.cols.info = "DNP malformed (" .. n .. " bytes)"
		if n < PAYLOAD_OFF then return n end
	end
	local lflags = tvb(3, 1):uint()
	local kind = band(tvb(24, 1):uint(), 0x0f)
	local plen = tvb(26, 2):le_uint()
	local flen = tvb(12, 2):le_uint()
	link_word(tvb, t)
	h0(tvb, t, kind, lflags)
	h1(tvb, t, kind, lflags, plen)
	local expect = OVERHEAD + band(plen + 15, 0xfff0)
	if plen > MAX_PAYLOAD or flen ~= expect or (whole and flen ~= n) then
		t:add_proto_expert_info(e.bad_len,
			string.format("length field %d, payload %d (frame of %d), captured %d", flen, plen, expect, n))
	end
	local note
	local good, retx, bufs_info = nil, false, nil
	if whole and n >= OVERHEAD and n % WORD == 0 then
		local avail = n - OVERHEAD
		note = payload(tvb, t, kind, lflags, plen, avail)
		if plen < avail then
			local pad = tvb(PAYLOAD_OFF + plen, avail - plen)
			local pi = t:add(f.padding, pad)
			local s = pad:raw()
			if s:find("[^%z]") then pi:add_proto_expert_info(e.reserved) end
		end
		local bufs = kind == K_CREDIT and bufs_reading(tvb, pinfo, lflags, plen) or nil
		good, retx, bufs_info = footer(tvb, t, true, bufs, plen)
		if retx then t:add_proto_expert_info(e.retx) end
	else
		note = payload(tvb, t, kind, lflags, plen, n - PAYLOAD_OFF)
		if not whole then t:add_proto_expert_info(e.fragment) end
	end

	local info = KIND[kind] or ("kind " .. kind)
	if kind == K_CREDIT then
		info = info .. (band(lflags, 0x02) ~= 0 and " RESET" or "")
		info = info .. string.format(" ack=%d rx0=%d rx1=%d", tvb(8, 4):le_uint(),
			tvb(36, 4):le_uint(), tvb(44, 4):le_uint())
		if band(lflags, 0x04) ~= 0 then info = info .. " SACK" end
		if bufs_info then info = info .. bufs_info end
	else
		info = info .. string.format(" %s:%d -> %s:%d", coord(tvb, 19), tvb(23, 1):uint(),
			coord(tvb, 16), tvb(22, 1):uint())
		if band(lflags, 0x01) ~= 0 then info = info .. " seq=" .. tvb(4, 4):le_uint() end
		info = info .. " ack=" .. tvb(8, 4):le_uint() .. " len=" .. plen
		if kind == K_PUT or kind == K_SEND or kind == K_GET_RESP then
			info = info .. string.format(" off=%d", tvb(44, 4):le_uint())
		end
		info = info .. " id=" .. tvb(28, 4):le_uint()
		local sv = tvb(25, 1):uint()
		if kind == K_CMPL and sv == CMPL_NOT_DELIVERED then
			info = info .. " NOT_DELIVERED"
		elseif kind == K_CMPL and sv ~= 0 then
			info = info .. " status=-" .. sv
		elseif (kind == K_PUT or kind == K_SEND) and sv == PKT_RETRY then
			info = info .. " RESEND"
		end
	end
	if note then info = info .. " [" .. note .. "]" end
	if retx then info = info .. " [RETX]" end
	if whole and good == false then info = info .. " [CRC BAD]" end
	if not whole then info = info .. " [first fragment]" end
	pinfo.cols.info = info
	return n
end

-- A packed datagram: header (magic, version, count, flags, 3 zero bytes,
-- count u16 lengths, zeros to 16), then the frames, each but the last padded
-- to 16. Checked as the receiver checks it; a bad one is named, not split.
local function dissect_packed(tvb, pinfo, tree)
	local n = tvb:len()
	pinfo.cols.protocol = "DNP"
	local t = tree:add(dnpudp, tvb())
	if n < 8 then
		t:add_proto_expert_info(eu.bad, "shorter than its header")
		pinfo.cols.info = "DNP udp: malformed packed datagram"
		return n
	end
	t:add_le(fu.magic, tvb(0, 2))
	t:add(fu.version, tvb(2, 1))
	t:add(fu.count, tvb(3, 1))
	local ft = t:add(fu.flags, tvb(4, 1))
	local count = tvb(3, 1):uint()
	if count == 0 then
		ft:add(fu.heard, tvb(4, 1))
		pinfo.cols.info = "DNP udp: announcement of packing" ..
			(band(tvb(4, 1):uint(), 1) ~= 0 and " (heard the peer's)" or "")
		return n
	end
	local hdr = band(8 + 2 * count + 15, 0xfff0)
	if tvb(2, 1):uint() ~= 1 or count > PACK_MAX or hdr > n then
		t:add_proto_expert_info(eu.bad, "version, count or header length")
		pinfo.cols.info = "DNP udp: malformed packed datagram"
		return n
	end
	local off, infos = hdr, {}
	for i = 0, count - 1 do
		local li = tvb(8 + 2 * i, 2)
		local flen = li:le_uint()
		t:add_le(fu.flen, li)
		if flen == 0 or off + flen > n then
			t:add_proto_expert_info(eu.bad, "frame " .. (i + 1) .. " past the datagram")
			break
		end
		dissect_frame(tvb(off, flen):tvb(), pinfo, tree, true)
		infos[#infos + 1] = tostring(pinfo.cols.info)
		off = off + flen
		if i + 1 < count then off = band(off + 15, 0xfffffff0) end
	end
	pinfo.cols.protocol = "DNP"
	pinfo.cols.info = string.format("[%d packed] ", count) .. table.concat(infos, " | ")
	return n
end

function dnp.dissector(tvb, pinfo, tree)
	if tvb:len() >= 2 and tvb(0, 2):le_uint() == PACK_MAGIC then
		return dissect_packed(tvb, pinfo, tree)
	end
	return dissect_frame(tvb, pinfo, tree, true)
end

function dnpeth.dissector(tvb, pinfo, tree)
	if tvb:len() < 18 then return 0 end
	pinfo.cols.protocol = "DNP"
	local t = tree:add(dnpeth, tvb(0, 18))
	t:add(fe.version, tvb(0, 1))
	t:add(fe.chan, tvb(1, 1))
	t:add(fe.frag_idx, tvb(2, 1))
	t:add(fe.frag_cnt, tvb(3, 1))
	t:add(fe.frame_id, tvb(4, 2))
	t:add(fe.total_len, tvb(6, 2))
	t:add(fe.offset, tvb(8, 2))
	t:add(fe.len, tvb(10, 2))
	t:add(fe.reserved, tvb(12, 6))
	local idx, cnt = tvb(2, 1):uint(), tvb(3, 1):uint()
	local len = tvb(10, 2):uint()
	if len > tvb:len() - 18 then len = tvb:len() - 18 end
	if len <= 0 then return tvb:len() end
	local body = tvb(18, len):tvb()
	if cnt == 1 and idx == 0 then
		dissect_frame(body, pinfo, tree, true)
	elseif idx == 0 then
		dissect_frame(body, pinfo, tree, false)
	else
		pinfo.cols.info = string.format("DNP fragment %d/%d of frame %d (bytes %d-%d of %d)", idx + 1, cnt,
			tvb(4, 2):uint(), tvb(8, 2):uint(), tvb(8, 2):uint() + len - 1, tvb(6, 2):uint())
		tree:add(dnp, body, "SoftDNP frame fragment")
	end
	return tvb:len()
end

local function heuristic(tvb, pinfo, tree)
	if not dnp.prefs.heuristic then return false end
	local n = tvb:len()
	if n >= 16 and tvb(0, 2):le_uint() == PACK_MAGIC and tvb(2, 1):uint() == 1 then
		dissect_packed(tvb, pinfo, tree)
		return true
	end
	if n < OVERHEAD or n % WORD ~= 0 or tvb(0, 2):le_uint() ~= MAGIC or tvb(2, 1):uint() ~= 1 or
		tvb(12, 2):le_uint() ~= n then
		return false
	end
	dissect_frame(tvb, pinfo, tree, true)
	return true
end

local udp_table = DissectorTable.get("udp.port")
local udp_ports = dnp.prefs.udp_ports

function dnp.prefs_changed()
	if udp_ports ~= dnp.prefs.udp_ports then
		udp_table:remove(udp_ports, dnp)
		udp_ports = dnp.prefs.udp_ports
		udp_table:add(udp_ports, dnp)
	end
end

udp_table:add(udp_ports, dnp)
DissectorTable.get("ethertype"):add(ETHERTYPE, dnpeth)
dnp:register_heuristic("udp", heuristic)
