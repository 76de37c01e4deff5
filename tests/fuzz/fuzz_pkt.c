/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for dnp_pkt_decode/encode/restamp and the RESET frame's
 * hello (dnp_pkt_hello_decode/encode): frames come from the
 * network, so decode must survive any bytes, and whatever it accepts must
 * re-encode to the very same bytes (the format is canonical) and decode to
 * the same header. Aborts on any mismatch.
 *
 * Most random mutations break the CRC, so each input is also tried with its
 * CRC fixed up, which lets the fuzzer reach the field checks behind it.
 *
 * pkt.c is included (white box): decode's fast path for the common frame
 * (decode_fast) must accept only frames the full decode (decode_full)
 * accepts, with the very same header, padding bytes included.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crc.h"
#include "pkt.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool hdr_equal(const struct dnp_pkt_hdr *a, const struct dnp_pkt_hdr *b)
{
	bool eq = a->lflags == b->lflags && a->src_dir == b->src_dir && a->seq == b->seq &&
		  a->ack == b->ack && a->sack == b->sack && a->dst.x == b->dst.x &&
		  a->dst.y == b->dst.y && a->dst.z == b->dst.z && a->src.x == b->src.x &&
		  a->src.y == b->src.y && a->src.z == b->src.z && a->dst_port == b->dst_port &&
		  a->src_port == b->src_port && a->kind == b->kind && a->vc == b->vc &&
		  a->flags == b->flags && a->status == b->status && a->len == b->len &&
		  a->msg_id == b->msg_id && a->va == b->va && a->key == b->key &&
		  a->offset == b->offset && a->fstatus == b->fstatus && a->hops == b->hops &&
		  a->timestamp == b->timestamp && a->msg_len == b->msg_len;

	for (unsigned vc = 0; vc < DNP_MAX_VC; vc++)
		eq = eq && a->credit[vc].occupancy == b->credit[vc].occupancy &&
		     a->credit[vc].received == b->credit[vc].received;
	return eq;
}

/*
 * A RESET frame's hello (the link handshake): any bytes are safe, and a hello
 * it accepts re-encodes to the very same bytes (version 1 is canonical).
 */
static void check_hello(const uint8_t *p, size_t len)
{
	uint8_t again[DNP_HELLO_BYTES];
	struct dnp_pkt_hello h;

	if (dnp_pkt_hello_decode(p, len, &h))
		return;
	if (len != DNP_HELLO_BYTES || h.version != DNP_HELLO_VERSION)
		abort();
	dnp_pkt_hello_encode(&h, again);
	if (memcmp(again, p, DNP_HELLO_BYTES))
		abort();
}

static void check_frame(const uint8_t *f, size_t size)
{
	static uint8_t again[DNP_MAX_FRAME];
	struct dnp_pkt_hdr h, h2;
	const uint8_t *pl = NULL, *pl2 = NULL;
	int n;

	if (dnp_pkt_decode(f, size, &h, &pl))
		return;
	if (size != dnp_pkt_frame_len(h.len) || pl != f + 48)
		abort();
	n = dnp_pkt_encode(&h, pl, again, sizeof(again));
	if (n < 0 || (size_t)n != size || memcmp(again, f, size))
		abort();
	if (dnp_pkt_decode(again, (size_t)n, &h2, &pl2) || !hdr_equal(&h, &h2))
		abort();

	/* Restamping with new per-hop fields keeps it valid and changes only those. */
	if (dnp_pkt_restamp(again, size, h.lflags, h.seq + 1, h.ack ^ 0x5a5a5a5au,
			    (uint8_t)((h.src_dir + 1) % 7), h.fstatus ^ DNP_FT_RETX,
			    (uint8_t)(h.hops + 1)))
		abort();
	if (dnp_pkt_decode(again, size, &h2, NULL))
		abort();
	h.seq += 1;
	h.ack ^= 0x5a5a5a5au;
	h.src_dir = (uint8_t)((h.src_dir + 1) % 7);
	h.fstatus ^= DNP_FT_RETX;
	h.hops = (uint8_t)(h.hops + 1);
	if (!hdr_equal(&h, &h2) || memcmp(again + 48, f + 48, size - 64))
		abort();
	if (h.kind == DNP_PKT_CREDIT && (h.lflags & DNP_LINK_F_RESET))
		check_hello(pl, h.len);
}

/* decode_fast against decode_full on a frame of plausible size (CRC not looked at). */
static void check_fast(const uint8_t *f, size_t size)
{
	struct dnp_pkt_hdr hf, hs;
	const uint8_t *pl = NULL;

	if (size < DNP_FRAME_OVERHEAD || size > DNP_MAX_FRAME || size % DNP_WORD_BYTES)
		return;
	memset(&hf, 0xa5, sizeof(hf)); /* padding the fast path failed to clear would show */
	memset(&hs, 0x5a, sizeof(hs));
	if (!decode_fast(f, size, &hf))
		return;
	if (decode_full(f, size, &hs, &pl) != 0 || memcmp(&hf, &hs, sizeof(hf)) != 0 ||
	    pl != f + PAYLOAD_OFF)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[DNP_MAX_FRAME + 64];
	uint32_t crc;

	check_frame(data, size);
	check_fast(data, size);
	check_hello(data, size); /* the hello parser alone, on the raw bytes */

	if (size < DNP_FRAME_OVERHEAD || size > sizeof(buf))
		return 0;
	memcpy(buf, data, size);
	/* restamp must stay memory-safe on anything, whatever it returns */
	(void)dnp_pkt_restamp(buf, size, buf[3], 1, 2, buf[14], buf[size - 12], 9);

	memcpy(buf, data, size);
	memset(buf + size - 16, 0, 4);
	crc = dnp_crc32(0, buf, size);
	buf[size - 16] = (uint8_t)crc;
	buf[size - 15] = (uint8_t)(crc >> 8);
	buf[size - 14] = (uint8_t)(crc >> 16);
	buf[size - 13] = (uint8_t)(crc >> 24);
	check_frame(buf, size);
	return 0;
}
