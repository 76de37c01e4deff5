/* SPDX-License-Identifier: MIT */
/*
 * udp_pack — the udp link's packed datagrams (docs/protocol.md, "The udp
 * link's datagrams"): several frames of one tx_burst in one datagram, and
 * the receive side's split. No I/O, no allocation: udp.c and udp_uring.c
 * call these, and tests/fuzz/fuzz_udppack.c drives the split alone.
 */
#include "udp_priv.h"

#include <errno.h>
#include <string.h>

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline uint32_t round16(uint32_t v)
{
	return (v + 15u) & ~15u;
}

uint32_t dnp_udp_pack_hdr_len(unsigned count)
{
	return round16(DNP_UDP_PACK_FIXED + 2u * count);
}

unsigned dnp_udp_pack_fit(const struct dnp_tx_frame *f, unsigned n, uint32_t frame_max)
{
	uint32_t body = 0; /* frames so far, each but the last padded to 16 */
	unsigned k = 0;

	if (n > DNP_UDP_PACK_MAX)
		n = DNP_UDP_PACK_MAX;
	while (k < n) {
		uint32_t len = f[k].len, end = body + len;

		if (len == 0 || len > frame_max || dnp_udp_pack_hdr_len(k + 1) + end > frame_max)
			break;
		body = round16(end);
		k++;
	}
	return k;
}

unsigned dnp_udp_pack_plan(const struct dnp_tx_frame *f, unsigned n, uint32_t frame_max, bool pack)
{
	unsigned k;

	if (!pack)
		return 0;
	k = dnp_udp_pack_fit(f, n, frame_max);
	if (k >= 2)
		return k;
	/* a frame that would read as packed goes packed, alone, when it fits */
	return k == 1 && dnp_udp_is_packed(f[0].data, f[0].len) ? 1 : 0;
}

uint32_t dnp_udp_pack_write(uint8_t *buf, const struct dnp_tx_frame *f, unsigned k)
{
	uint32_t off = dnp_udp_pack_hdr_len(k);

	memset(buf, 0, off);
	put16(buf, DNP_UDP_PACK_MAGIC);
	buf[2] = DNP_UDP_PACK_VERSION;
	buf[3] = (uint8_t)k;
	for (unsigned i = 0; i < k; i++) {
		put16(buf + DNP_UDP_PACK_FIXED + 2u * i, (uint16_t)f[i].len);
		memcpy(buf + off, f[i].data, f[i].len);
		off += f[i].len;
		if (i + 1 < k) {
			memset(buf + off, 0, round16(off) - off);
			off = round16(off);
		}
	}
	return off;
}

uint32_t dnp_udp_pack_announce(uint8_t *buf, uint32_t frame_max, bool heard)
{
	uint32_t len = frame_max + DNP_UDP_ANNOUNCE_EXTRA;

	memset(buf, 0, len);
	put16(buf, DNP_UDP_PACK_MAGIC);
	buf[2] = DNP_UDP_PACK_VERSION;
	buf[3] = 0;
	buf[4] = heard ? DNP_UDP_ANN_HEARD : 0;
	return len;
}

bool dnp_udp_is_packed(const uint8_t *d, uint32_t len)
{
	return len >= 2 && get16(d) == DNP_UDP_PACK_MAGIC;
}

/* The announcement: header only, exactly frame_max + 16 bytes, zeros after it. */
static int unpack_announce(const uint8_t *d, uint32_t len, uint32_t frame_max)
{
	if (len != frame_max + DNP_UDP_ANNOUNCE_EXTRA || (d[4] & ~DNP_UDP_ANN_HEARD) || d[5] ||
	    d[6] || d[7])
		return -EBADMSG;
	return (d[4] & DNP_UDP_ANN_HEARD) ? DNP_UDP_ANNOUNCE_HEARD : DNP_UDP_ANNOUNCE;
}

int dnp_udp_unpack(const uint8_t *d, uint32_t len, uint32_t frame_max, struct dnp_rx_frame *out)
{
	uint32_t hdr, off;
	unsigned count;

	if (len < DNP_UDP_PACK_FIXED || get16(d) != DNP_UDP_PACK_MAGIC ||
	    d[2] != DNP_UDP_PACK_VERSION)
		return -EBADMSG;
	count = d[3];
	if (count == 0)
		return unpack_announce(d, len, frame_max);
	if (count > DNP_UDP_PACK_MAX || len > frame_max)
		return -EBADMSG;
	hdr = dnp_udp_pack_hdr_len(count);
	if (hdr > len || d[4] || d[5] || d[6] || d[7])
		return -EBADMSG;
	for (uint32_t i = DNP_UDP_PACK_FIXED + 2u * count; i < hdr; i++)
		if (d[i])
			return -EBADMSG;
	off = hdr;
	for (unsigned i = 0; i < count; i++) {
		uint32_t flen = get16(d + DNP_UDP_PACK_FIXED + 2u * i);

		/* off <= len here, so len - off cannot wrap */
		if (flen == 0 || flen > len - off)
			return -EBADMSG;
		out[i].data = d + off;
		out[i].len = flen;
		off += flen;
		if (i + 1 < count) {
			off = round16(off);
			if (off > len)
				return -EBADMSG;
		}
	}
	return off == len ? (int)count : -EBADMSG;
}
