/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for dnp-core/pkt: golden frames that pin every byte of the
 * layout in docs/protocol.md, random round trips, one malformed frame per
 * error class, restamping.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "crc.h"
#include "pkt.h"
#include "test_names.h"
#include "test_pkt_hdr.h"

/*
 * Golden PUT frame, one 16-byte word per line. Built independently from the
 * docs/protocol.md tables (Python struct.pack + zlib.crc32), not by pkt.c.
 */
static const char golden_put_hex[] =
	/* link word: magic 4e44, ver 1, lflags SEQ, seq 01020304, ack 0a0b0c0d,
	 * frame length 80, src_dir 1 (X-), reserved 0 */
	"444e0101"
	"04030201"
	"0d0c0b0a"
	"5000"
	"01"
	"00"
	/* H0: dst 1,2,3; src 0,0,1; dst_port 2; src_port 5;
	 * kvf d1 = PUT(1) | vc 1 << 4 | FIRST 0x40 | LAST 0x80; status 0; len 11;
	 * msg_id deadbeef */
	"010203"
	"000001"
	"02"
	"05"
	"d1"
	"00"
	"0b00"
	"efbeadde"
	/* H1: va 00007f0012345678, key cafef00d, offset 0 */
	"78563412007f0000"
	"0df0feca"
	"00000000"
	/* payload "hello, DNP!" + 5 zero bytes of padding */
	"68656c6c6f2c20444e5021"
	"0000000000"
	/* footer: crc 3c064707, fstatus RETX, hops 3, reserved 0, timestamp 11223344,
	 * msg_len 11 */
	"0747063c"
	"01"
	"03"
	"0000"
	"44332211"
	"0b000000";

/* Golden CREDIT frame. */
static const char golden_credit_hex[] =
	/* link word: magic, ver 1, lflags 0, seq 0, ack 0x100, length 64, src_dir 4 (Z+) */
	"444e0100"
	"00000000"
	"00010000"
	"4000"
	"04"
	"00"
	/* H0: dst 1,0,0; src 0,0,0; ports 0; kvf 06 = CREDIT, vc 0; status 0; len 0;
	 * msg_id 0 */
	"010000"
	"000000"
	"00"
	"00"
	"06"
	"00"
	"0000"
	"00000000"
	/* H1: credit[0] = {occupancy 0x20, received 0x12345678},
	 *     credit[1] = {occupancy 0x1f9, received 0xfffffff0} */
	"20000000"
	"78563412"
	"f9010000"
	"f0ffffff"
	/* footer: crc 49af9c9d, fstatus 0, hops 0, reserved 0, timestamp 9abcdef0,
	 * msg_len 0 */
	"9d9caf49"
	"00"
	"00"
	"0000"
	"f0debc9a"
	"00000000";

/*
 * Golden CREDIT frame of a link with 4 VCs: credit[0..1] in H1 as above,
 * credit[2..3] in a one-word payload (built the same independent way).
 */
static const char golden_credit4_hex[] =
	/* link word: magic, ver 1, lflags 0, seq 0, ack 0x2a, length 80, src_dir 2 (Y+),
	 * epoch 5 */
	"444e0100"
	"00000000"
	"2a000000"
	"5000"
	"02"
	"05"
	/* H0: dst 0,1,0; src 0,0,0; ports 0; kvf 06 = CREDIT, vc 0; status 0; len 16;
	 * msg_id 0 */
	"000100"
	"000000"
	"00"
	"00"
	"06"
	"00"
	"1000"
	"00000000"
	/* H1: credit[0] = {occupancy 0x10, received 0x11111111},
	 *     credit[1] = {occupancy 0, received 0x22} */
	"10000000"
	"11111111"
	"00000000"
	"22000000"
	/* payload: credit[2] = {occupancy 0x1f0, received 0x33333333},
	 *          credit[3] = {occupancy 7, received 0xfffffffe} */
	"f0010000"
	"33333333"
	"07000000"
	"feffffff"
	/* footer: crc 01b99ccc, fstatus 0, hops 0, reserved 0, timestamp 01020304,
	 * msg_len 0 */
	"cc9cb901"
	"00"
	"00"
	"0000"
	"04030201"
	"00000000";

static const char golden_put_payload[] = "hello, DNP!";

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = strlen(s) / 2;
	unsigned v;

	assert_true(n <= cap);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(sscanf(s + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
	return n;
}

static struct dnp_pkt_hdr golden_put_hdr(void)
{
	struct dnp_pkt_hdr h;

	memset(&h, 0, sizeof(h));
	h.lflags = DNP_LINK_F_SEQ;
	h.seq = 0x01020304;
	h.ack = 0x0a0b0c0d;
	h.src_dir = DNP_DIR_XM;
	h.dst = (struct dnp_coord){ 1, 2, 3 };
	h.src = (struct dnp_coord){ 0, 0, 1 };
	h.dst_port = 2;
	h.src_port = 5;
	h.kind = DNP_PKT_PUT;
	h.vc = 1;
	h.flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST;
	h.len = 11;
	h.msg_id = 0xdeadbeef;
	h.va = 0x00007f0012345678ull;
	h.key = 0xcafef00d;
	h.offset = 0;
	h.fstatus = DNP_FT_RETX;
	h.hops = 3;
	h.timestamp = 0x11223344;
	h.msg_len = 11;
	return h;
}

static struct dnp_pkt_hdr golden_credit_hdr(void)
{
	struct dnp_pkt_hdr h;

	memset(&h, 0, sizeof(h));
	h.ack = 0x100;
	h.src_dir = DNP_DIR_ZP;
	h.dst = (struct dnp_coord){ 1, 0, 0 };
	h.kind = DNP_PKT_CREDIT;
	h.credit[0] = (struct dnp_credit_vc){ .occupancy = 0x20, .received = 0x12345678 };
	h.credit[1] = (struct dnp_credit_vc){ .occupancy = 0x1f9, .received = 0xfffffff0 };
	h.timestamp = 0x9abcdef0;
	return h;
}

static struct dnp_pkt_hdr golden_credit4_hdr(void)
{
	struct dnp_pkt_hdr h;

	memset(&h, 0, sizeof(h));
	h.ack = 0x2a;
	h.src_dir = DNP_DIR_YP;
	h.epoch = 5;
	h.dst = (struct dnp_coord){ 0, 1, 0 };
	h.kind = DNP_PKT_CREDIT;
	h.len = dnp_pkt_credit_len(4);
	h.credit[0] = (struct dnp_credit_vc){ .occupancy = 0x10, .received = 0x11111111 };
	h.credit[1] = (struct dnp_credit_vc){ .occupancy = 0, .received = 0x22 };
	h.credit[2] = (struct dnp_credit_vc){ .occupancy = 0x1f0, .received = 0x33333333 };
	h.credit[3] = (struct dnp_credit_vc){ .occupancy = 7, .received = 0xfffffffe };
	h.timestamp = 0x01020304;
	return h;
}

/* Recomputes the footer CRC the way docs/protocol.md says (CRC field as zero). */
static void fix_crc(uint8_t *f, size_t len)
{
	uint32_t crc;

	memset(f + len - 16, 0, 4);
	crc = dnp_crc32(0, f, len);
	f[len - 16] = (uint8_t)crc;
	f[len - 15] = (uint8_t)(crc >> 8);
	f[len - 14] = (uint8_t)(crc >> 16);
	f[len - 13] = (uint8_t)(crc >> 24);
}

static void test_pkt_golden_put(void **state)
{
	uint8_t want[DNP_MAX_FRAME], got[DNP_MAX_FRAME];
	struct dnp_pkt_hdr h = golden_put_hdr(), d;
	const uint8_t *pl = NULL;
	size_t n = unhex(golden_put_hex, want, sizeof(want));

	assert_int_equal(n, 80);
	assert_int_equal(dnp_pkt_frame_len(11), 80);
	assert_int_equal(dnp_pkt_frame_words(11), 5);
	memset(got, 0xa5, sizeof(got));
	assert_int_equal(dnp_pkt_encode(&h, golden_put_payload, got, sizeof(got)), 80);
	assert_memory_equal(got, want, 80);
	assert_int_equal(got[80], 0xa5); /* nothing written past the frame */

	assert_int_equal(dnp_pkt_decode(want, n, &d, &pl), 0);
	assert_hdr_equal(&d, &h);
	assert_ptr_equal(pl, want + 48);
	assert_memory_equal(pl, golden_put_payload, 11);
}

/*
 * The golden PUT in traffic class 5: footer status 0x0b (RETX | 5 << 1),
 * new CRC d631af66 (Python zlib.crc32 over the frame with the CRC zeroed).
 * Restamping keeps the class bits; a CREDIT may carry none.
 */
static void test_pkt_golden_put_class(void **state)
{
	uint8_t want[DNP_MAX_FRAME], got[DNP_MAX_FRAME];
	struct dnp_pkt_hdr h = golden_put_hdr(), d;
	size_t n = unhex(golden_put_hex, want, sizeof(want));

	(void)state;
	want[n - 16] = 0x66, want[n - 15] = 0xaf, want[n - 14] = 0x31, want[n - 13] = 0xd6;
	want[n - 12] = 0x0b;
	h.fstatus = DNP_FT_RETX | dnp_ft_tc(5);
	assert_int_equal(h.fstatus, 0x0b);
	assert_int_equal(dnp_pkt_encode(&h, golden_put_payload, got, sizeof(got)), 80);
	assert_memory_equal(got, want, 80);
	assert_int_equal(dnp_pkt_decode(want, n, &d, NULL), 0);
	assert_int_equal(dnp_pkt_tc(&d), 5);
	assert_int_equal(d.fstatus & DNP_FT_RETX, DNP_FT_RETX);
	/* a hop restamps RETX off and keeps the class */
	assert_int_equal(dnp_pkt_restamp(got, 80, DNP_LINK_F_SEQ, 7, 8, 2, dnp_ft_tc(5), 4), 0);
	assert_int_equal(dnp_pkt_decode(got, 80, &d, NULL), 0);
	assert_int_equal(dnp_pkt_tc(&d), 5);
	assert_int_equal(d.fstatus, 0x0a);
	for (unsigned tc = 0; tc <= 7; tc++) {
		h.fstatus = dnp_ft_tc(tc);
		assert_int_equal(dnp_pkt_encode(&h, golden_put_payload, got, sizeof(got)), 80);
		assert_int_equal(dnp_pkt_decode(got, 80, &d, NULL), 0);
		assert_int_equal(dnp_pkt_tc(&d), tc);
	}
	/* bits above the class stay refused */
	h.fstatus = 0x20;
	assert_int_equal(dnp_pkt_encode(&h, golden_put_payload, got, sizeof(got)), -EINVAL);
	assert_int_equal(dnp_pkt_restamp(want, 80, DNP_LINK_F_SEQ, 7, 8, 2, 0x20, 4), -EINVAL);
	/* link control has no class */
	h = golden_credit_hdr();
	h.fstatus = dnp_ft_tc(1);
	assert_int_equal(dnp_pkt_encode(&h, NULL, got, sizeof(got)), -EINVAL);
}

static void test_pkt_golden_credit(void **state)
{
	uint8_t want[DNP_MAX_FRAME], got[DNP_MAX_FRAME];
	struct dnp_pkt_hdr h = golden_credit_hdr(), d;
	size_t n = unhex(golden_credit_hex, want, sizeof(want));

	assert_int_equal(n, 64);
	assert_int_equal(dnp_pkt_encode(&h, NULL, got, sizeof(got)), 64);
	assert_memory_equal(got, want, 64);
	assert_int_equal(dnp_pkt_decode(want, n, &d, NULL), 0);
	assert_hdr_equal(&d, &h);

	/* va/key/offset are not on the wire of a CREDIT frame: ignored by encode. */
	h.va = 1;
	h.key = 2;
	h.offset = 3;
	assert_int_equal(dnp_pkt_encode(&h, NULL, got, 64), 64);
	assert_memory_equal(got, want, 64);
}

static void test_pkt_golden_credit_4vc(void **state)
{
	uint8_t want[DNP_MAX_FRAME], got[DNP_MAX_FRAME];
	struct dnp_pkt_hdr h = golden_credit4_hdr(), d;
	const uint8_t *pl = NULL;
	size_t n = unhex(golden_credit4_hex, want, sizeof(want));

	assert_int_equal(n, 80);
	assert_int_equal(DNP_CREDIT_MAX_FRAME, 80);
	assert_int_equal(dnp_pkt_credit_len(1), 0);
	assert_int_equal(dnp_pkt_credit_len(2), 0);
	assert_int_equal(dnp_pkt_credit_len(3), DNP_CREDIT_EXT_BYTES);
	assert_int_equal(dnp_pkt_credit_len(4), DNP_CREDIT_EXT_BYTES);
	memset(got, 0xa5, sizeof(got));
	assert_int_equal(dnp_pkt_encode(&h, NULL, got, sizeof(got)), 80);
	assert_memory_equal(got, want, 80);
	assert_int_equal(got[80], 0xa5);
	assert_int_equal(dnp_pkt_encode(&h, NULL, got, 79), -ENOBUFS);
	assert_int_equal(dnp_pkt_decode(want, n, &d, &pl), 0);
	assert_hdr_equal(&d, &h);
	assert_ptr_equal(pl, want + 48);

	/* The payload argument is not used for a CREDIT frame: h->credit[2..3] is. */
	assert_int_equal(dnp_pkt_encode(&h, golden_put_payload, got, sizeof(got)), 80);
	assert_memory_equal(got, want, 80);

	/* The 2-VC format is unchanged, and says nothing about VCs 2-3. */
	n = unhex(golden_credit_hex, want, sizeof(want));
	h = golden_credit_hdr();
	h.credit[2] = (struct dnp_credit_vc){ .occupancy = 1, .received = 2 };
	h.credit[3] = (struct dnp_credit_vc){ .occupancy = 3, .received = 4 };
	assert_int_equal(dnp_pkt_encode(&h, NULL, got, sizeof(got)), 64);
	assert_memory_equal(got, want, 64);
	assert_int_equal(dnp_pkt_decode(want, n, &d, NULL), 0);
	for (unsigned vc = 2; vc < DNP_MAX_VC; vc++) {
		assert_int_equal(d.credit[vc].occupancy, 0);
		assert_int_equal(d.credit[vc].received, 0);
	}
}

/* CREDIT payloads: one word or none, and never on a RESET frame. */
static void test_pkt_credit_payload_rules(void **state)
{
	uint8_t f[DNP_MAX_FRAME];
	struct dnp_pkt_hdr h = golden_credit4_hdr(), d;
	const uint8_t *pl;
	size_t n;

	for (unsigned bad = 1; bad <= 64; bad++) {
		if (bad == DNP_CREDIT_EXT_BYTES)
			continue;
		h.len = (uint16_t)bad;
		assert_int_equal(dnp_pkt_encode(&h, NULL, f, sizeof(f)), -EINVAL);
	}
	h = golden_credit4_hdr();
	h.lflags = DNP_LINK_F_RESET;
	assert_int_equal(dnp_pkt_encode(&h, NULL, f, sizeof(f)), -EINVAL);
	h.len = 0;
	assert_int_equal(dnp_pkt_encode(&h, NULL, f, sizeof(f)), 64);

	/* On the wire: a RESET flag on the 4-VC credit, and a two-word credit payload. */
	n = unhex(golden_credit4_hex, f, sizeof(f));
	f[3] = DNP_LINK_F_RESET;
	fix_crc(f, n);
	assert_int_equal(dnp_pkt_decode(f, n, &d, NULL), -EINVAL);

	n = unhex(golden_credit4_hex, f, sizeof(f));
	memmove(f + 80, f + 64, 16); /* footer one word later */
	memset(f + 64, 0, 16);
	f[12] = 96; /* frame length */
	f[26] = 32; /* payload length */
	fix_crc(f, 96);
	assert_int_equal(dnp_pkt_decode(f, 96, &d, &pl), -EINVAL);
	f[12] = 80; /* and the one-word frame it was is valid */
	f[26] = 16;
	memmove(f + 64, f + 80, 16);
	fix_crc(f, 80);
	assert_int_equal(dnp_pkt_decode(f, 80, &d, &pl), 0);
	assert_int_equal(d.credit[3].received, 0xfffffffe);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic, so failures reproduce. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* A random header that obeys every rule of docs/protocol.md. */
static void random_hdr(struct dnp_pkt_hdr *h)
{
	uint64_t r = rnd();

	memset(h, 0, sizeof(*h));
	h->kind = (uint8_t)(1 + rnd() % 7);
	h->seq = (uint32_t)rnd();
	h->ack = (uint32_t)rnd();
	h->src_dir = (uint8_t)(rnd() % 7);
	h->dst = (struct dnp_coord){ (uint8_t)r, (uint8_t)(r >> 8), (uint8_t)(r >> 16) };
	h->src = (struct dnp_coord){ (uint8_t)(r >> 24), (uint8_t)(r >> 32), (uint8_t)(r >> 40) };
	h->dst_port = (uint8_t)(r >> 48);
	h->src_port = (uint8_t)(r >> 56);
	h->fstatus = (uint8_t)(rnd() & (DNP_FT_RETX | DNP_FT_TC_MASK));
	h->hops = (uint8_t)rnd();
	h->timestamp = (uint32_t)rnd();

	if (h->kind == DNP_PKT_CREDIT) {
		/* A 2-VC credit (no payload) or a 4-VC one; RESET frames have none. */
		unsigned nvc = rnd() & 1 ? DNP_MAX_VC : 2;

		h->fstatus &= DNP_FT_RETX; /* a credit has no class */
		h->len = dnp_pkt_credit_len(nvc);
		if (!h->len)
			h->lflags = (uint8_t)(rnd() & DNP_LINK_F_RESET);
		for (unsigned vc = 0; vc < nvc; vc++) {
			h->credit[vc].occupancy = (uint32_t)rnd();
			h->credit[vc].received = (uint32_t)rnd();
		}
		return;
	}
	h->vc = (uint8_t)(rnd() % DNP_MAX_VC);
	h->status = (uint8_t)rnd();
	h->msg_id = (uint32_t)rnd();
	h->va = rnd();
	h->key = (uint32_t)rnd();
	h->lflags = (uint8_t)(rnd() & DNP_LINK_F_SEQ);
	switch (h->kind) {
	case DNP_PKT_PUT:
	case DNP_PKT_SEND:
	case DNP_PKT_GET_RESP:
		h->lflags = DNP_LINK_F_SEQ;
		h->len = (uint16_t)(rnd() % (DNP_MAX_PAYLOAD + 1));
		h->flags = (uint8_t)(rnd() & 3);
		h->msg_len = h->len + (uint32_t)(rnd() % 100000);
		if (h->flags == (DNP_PKT_F_FIRST | DNP_PKT_F_LAST))
			h->msg_len = h->len;
		if (h->flags & DNP_PKT_F_LAST)
			h->offset = h->msg_len - h->len;
		else if (!(h->flags & DNP_PKT_F_FIRST))
			h->offset = (uint32_t)(rnd() % (h->msg_len - h->len + 1));
		break;
	case DNP_PKT_GET_REQ:
		h->lflags = DNP_LINK_F_SEQ;
		h->len = DNP_GET_DESC_BYTES;
		h->flags = (uint8_t)(rnd() & 3);
		h->offset = (uint32_t)rnd();
		h->msg_len = (uint32_t)rnd();
		break;
	case DNP_PKT_CMPL:
		h->flags = (uint8_t)(rnd() & 3);
		h->offset = (uint32_t)rnd();
		h->msg_len = (uint32_t)rnd();
		break;
	default: /* DIAG */
		h->len = (uint16_t)(rnd() % (DNP_MAX_PAYLOAD + 1));
		h->flags = (uint8_t)(rnd() & 3);
		h->offset = (uint32_t)rnd();
		h->msg_len = (uint32_t)rnd();
		break;
	}
}

static void test_pkt_roundtrip_random(void **state)
{
	static uint8_t payload[DNP_MAX_PAYLOAD + 8], frame[DNP_MAX_FRAME], again[DNP_MAX_FRAME];
	struct dnp_pkt_hdr h, d;
	const uint8_t *pl;
	int n;

	for (size_t i = 0; i < sizeof(payload); i += 8) {
		uint64_t v = rnd();

		memcpy(payload + i, &v, 8);
	}
	for (int iter = 0; iter < 20000; iter++) {
		random_hdr(&h);
		n = dnp_pkt_encode(&h, payload + (iter % 7), frame, sizeof(frame));
		assert_int_equal(n, (int)dnp_pkt_frame_len(h.len));
		assert_int_equal(n % 16, 0);
		assert_int_equal(dnp_pkt_decode(frame, (size_t)n, &d, &pl), 0);
		assert_hdr_equal(&d, &h);
		assert_ptr_equal(pl, frame + 48);
		if (h.kind != DNP_PKT_CREDIT) /* a credit's payload is credit[2..3] */
			assert_memory_equal(pl, payload + (iter % 7), h.len);
		/* The encoding is canonical: re-encoding the decoded header is byte-exact. */
		assert_int_equal(dnp_pkt_encode(&d, pl, again, sizeof(again)), n);
		assert_memory_equal(again, frame, (size_t)n);
	}
}

static void test_pkt_max_frame(void **state)
{
	static uint8_t payload[DNP_MAX_PAYLOAD], frame[DNP_MAX_FRAME];
	struct dnp_pkt_hdr h = golden_put_hdr(), d;
	const uint8_t *pl;

	memset(payload, 0x5a, sizeof(payload));
	h.len = DNP_MAX_PAYLOAD;
	h.msg_len = DNP_MAX_PAYLOAD;
	assert_int_equal(dnp_pkt_encode(&h, payload, frame, sizeof(frame)), 4160);
	assert_int_equal(frame[12], 4160 & 0xff);
	assert_int_equal(frame[13], 4160 >> 8);
	assert_int_equal(dnp_pkt_decode(frame, 4160, &d, &pl), 0);
	assert_memory_equal(pl, payload, DNP_MAX_PAYLOAD);
	assert_int_equal(dnp_pkt_frame_words(DNP_MAX_PAYLOAD), 260);
}

/* The payload may already sit at frame + 48 (zero-copy segmentation). */
static void test_pkt_encode_in_place(void **state)
{
	uint8_t want[128], frame[128];
	struct dnp_pkt_hdr h = golden_put_hdr();

	unhex(golden_put_hex, want, sizeof(want));
	memset(frame, 0xee, sizeof(frame));
	memcpy(frame + 48, golden_put_payload, 11);
	assert_int_equal(dnp_pkt_encode(&h, frame + 48, frame, sizeof(frame)), 80);
	assert_memory_equal(frame, want, 80);
}

static void test_pkt_encode_errors(void **state)
{
	uint8_t frame[DNP_MAX_FRAME + 16];
	static uint8_t payload[DNP_MAX_PAYLOAD + 16];
	struct dnp_pkt_hdr h;

	h = golden_put_hdr();
	assert_int_equal(dnp_pkt_encode(&h, golden_put_payload, frame, 79), -ENOBUFS);
	h.len = DNP_MAX_PAYLOAD + 1;
	h.msg_len = h.len;
	assert_int_equal(dnp_pkt_encode(&h, payload, frame, sizeof(frame)), -E2BIG);
	h = golden_put_hdr();
	assert_int_equal(dnp_pkt_encode(&h, NULL, frame, sizeof(frame)), -EINVAL);
	h.kind = 0;
	assert_int_equal(dnp_pkt_encode(&h, golden_put_payload, frame, sizeof(frame)), -EINVAL);
	h = golden_put_hdr();
	h.kind = 16;
	assert_int_equal(dnp_pkt_encode(&h, golden_put_payload, frame, sizeof(frame)), -EINVAL);
	h = golden_put_hdr();
	h.vc = DNP_MAX_VC;
	assert_int_equal(dnp_pkt_encode(&h, golden_put_payload, frame, sizeof(frame)), -EINVAL);
	h = golden_put_hdr();
	h.msg_len = 10; /* would be -EOVERFLOW on decode */
	assert_int_equal(dnp_pkt_encode(&h, golden_put_payload, frame, sizeof(frame)), -EINVAL);
	h = golden_put_hdr();
	h.flags = 4;
	assert_int_equal(dnp_pkt_encode(&h, golden_put_payload, frame, sizeof(frame)), -EINVAL);
	h = golden_put_hdr();
	h.src_dir = 7;
	assert_int_equal(dnp_pkt_encode(&h, golden_put_payload, frame, sizeof(frame)), -EINVAL);
	h = golden_credit_hdr();
	h.vc = 1;
	assert_int_equal(dnp_pkt_encode(&h, NULL, frame, sizeof(frame)), -EINVAL);
}

/* A CMPL frame carries up to DNP_CMPL_MAX_EXTRA further message ids, whole u32s only. */
static void test_pkt_cmpl_batch(void **state)
{
	uint8_t frame[DNP_MAX_FRAME], ids[DNP_CMPL_MAX_EXTRA * 4 + 4];
	struct dnp_pkt_hdr h = { .lflags = DNP_LINK_F_SEQ,
				 .dst = { 1, 0, 0 },
				 .kind = DNP_PKT_CMPL,
				 .msg_id = 0x10002 },
			   d;
	const uint8_t *pl;

	for (unsigned i = 0; i < sizeof(ids); i++)
		ids[i] = (uint8_t)(i * 7u + 1u);
	h.len = DNP_CMPL_MAX_EXTRA * 4;
	int n = dnp_pkt_encode(&h, ids, frame, sizeof(frame));
	assert_int_equal(n, 256); /* a whole small frame */
	assert_int_equal(dnp_pkt_decode(frame, (size_t)n, &d, &pl), 0);
	assert_int_equal(d.len, DNP_CMPL_MAX_EXTRA * 4);
	assert_int_equal(d.msg_id, 0x10002);
	assert_memory_equal(pl, ids, DNP_CMPL_MAX_EXTRA * 4);
	h.len = 8;
	assert_int_equal(dnp_pkt_encode(&h, ids, frame, sizeof(frame)), 80);
	assert_int_equal(dnp_pkt_decode(frame, 80, &d, &pl), 0);
	h.len = DNP_CMPL_MAX_EXTRA * 4 + 4; /* one id too many */
	assert_int_equal(dnp_pkt_encode(&h, ids, frame, sizeof(frame)), -EINVAL);
	h.len = 6; /* not whole ids */
	assert_int_equal(dnp_pkt_encode(&h, ids, frame, sizeof(frame)), -EINVAL);
}

/* Decodes f after an optional CRC fix and returns the error. */
static int decode_fixed(uint8_t *f, size_t len)
{
	struct dnp_pkt_hdr d;

	fix_crc(f, len);
	return dnp_pkt_decode(f, len, &d, NULL);
}

static size_t put_frame(uint8_t *f)
{
	return unhex(golden_put_hex, f, DNP_MAX_FRAME);
}

static size_t credit_frame(uint8_t *f)
{
	return unhex(golden_credit_hex, f, DNP_MAX_FRAME);
}

static void test_pkt_decode_enodata(void **state)
{
	uint8_t f[DNP_MAX_FRAME];
	struct dnp_pkt_hdr d;

	credit_frame(f);
	assert_int_equal(dnp_pkt_decode(f, 63, &d, NULL), -ENODATA);
	assert_int_equal(dnp_pkt_decode(f, 0, &d, NULL), -ENODATA);
}

static void test_pkt_decode_eproto(void **state)
{
	uint8_t f[DNP_MAX_FRAME];
	size_t n = put_frame(f);

	f[1] = 0x4f;
	assert_int_equal(decode_fixed(f, n), -EPROTO);
}

static void test_pkt_decode_eprotonosupport(void **state)
{
	uint8_t f[DNP_MAX_FRAME];
	size_t n = put_frame(f);

	f[2] = 2;
	assert_int_equal(decode_fixed(f, n), -EPROTONOSUPPORT);
}

static void test_pkt_decode_emsgsize(void **state)
{
	uint8_t f[DNP_MAX_FRAME + 16];
	struct dnp_pkt_hdr d;
	size_t n = put_frame(f);

	/* buffer not a whole number of words, or above the largest frame */
	assert_int_equal(dnp_pkt_decode(f, n + 1, &d, NULL), -EMSGSIZE);
	assert_int_equal(dnp_pkt_decode(f, DNP_MAX_FRAME + 16, &d, NULL), -EMSGSIZE);
	/* buffer a word longer than the frame: the footer is not where it should be */
	memset(f + n, 0, 16);
	assert_int_equal(dnp_pkt_decode(f, n + 16, &d, NULL), -EILSEQ);
	/* length field disagrees with the buffer */
	f[12] = 96;
	assert_int_equal(decode_fixed(f, n), -EMSGSIZE);
	/* payload length needs another word than the frame has */
	n = put_frame(f);
	f[26] = 17;
	assert_int_equal(decode_fixed(f, n), -EMSGSIZE);
}

static void test_pkt_decode_e2big(void **state)
{
	uint8_t f[DNP_MAX_FRAME];
	size_t n = put_frame(f);

	f[26] = 0x01; /* len = 0x1001 = 4097 */
	f[27] = 0x10;
	assert_int_equal(decode_fixed(f, n), -E2BIG);
}

static void test_pkt_decode_ebadmsg(void **state)
{
	uint8_t f[DNP_MAX_FRAME];
	size_t n = put_frame(f);

	f[24] = (uint8_t)((f[24] & 0xf0) | 0);
	assert_int_equal(decode_fixed(f, n), -EBADMSG);
	f[24] = (uint8_t)((f[24] & 0xf0) | 11); /* past DNP_PKT_COLL */
	assert_int_equal(decode_fixed(f, n), -EBADMSG);
}

/*
 * The 2-bit VC field encodes exactly DNP_MAX_VC values, so every VC on the
 * wire decodes (a link drops the VCs it does not have); encode refuses
 * vc >= DNP_MAX_VC.
 */
static void test_pkt_vc_range(void **state)
{
	uint8_t f[DNP_MAX_FRAME];
	struct dnp_pkt_hdr h = golden_put_hdr(), d;
	size_t n;

	assert_int_equal(DNP_MAX_VC, 4);
	for (unsigned vc = 0; vc < DNP_MAX_VC; vc++) {
		n = put_frame(f);
		f[24] = (uint8_t)((f[24] & 0xcf) | vc << 4);
		fix_crc(f, n);
		assert_int_equal(dnp_pkt_decode(f, n, &d, NULL), 0);
		assert_int_equal(d.vc, vc);
		h.vc = (uint8_t)vc;
		assert_int_equal(dnp_pkt_encode(&h, golden_put_payload, f, sizeof(f)), (int)n);
	}
	h.vc = DNP_MAX_VC;
	assert_int_equal(dnp_pkt_encode(&h, golden_put_payload, f, sizeof(f)), -EINVAL);
}

static void test_pkt_decode_einval(void **state)
{
	uint8_t f[DNP_MAX_FRAME];
	size_t n;

	n = put_frame(f);
	f[3] |= DNP_LINK_F_RESET; /* RESET on a frame that is not a CREDIT */
	assert_int_equal(decode_fixed(f, n), -EINVAL);
	n = put_frame(f);
	f[n - 16 + 7] = 0x10; /* reserved bits of the footer's via code */
	assert_int_equal(decode_fixed(f, n), -EINVAL);
	n = put_frame(f);
	f[63] = 1; /* last padding byte */
	assert_int_equal(decode_fixed(f, n), -EINVAL);
	n = put_frame(f);
	f[48 + 11] = 1; /* first padding byte */
	assert_int_equal(decode_fixed(f, n), -EINVAL);
	n = put_frame(f);
	f[3] = 0x03; /* unknown link flag */
	assert_int_equal(decode_fixed(f, n), -EINVAL);
	n = put_frame(f);
	f[14] = 7; /* src_dir beyond LOCAL */
	assert_int_equal(decode_fixed(f, n), -EINVAL);
	n = put_frame(f);
	f[n - 16 + 4] = 0x20; /* unknown footer status bit */
	assert_int_equal(decode_fixed(f, n), -EINVAL);
	n = put_frame(f);
	f[3] = 0; /* data kind without SEQ */
	assert_int_equal(decode_fixed(f, n), -EINVAL);
	n = credit_frame(f);
	f[3] = DNP_LINK_F_SEQ; /* CREDIT sequenced */
	assert_int_equal(decode_fixed(f, n), -EINVAL);
	n = credit_frame(f);
	f[24] |= 0x40; /* CREDIT with FIRST */
	assert_int_equal(decode_fixed(f, n), -EINVAL);
	n = credit_frame(f);
	f[24] |= 0x10; /* CREDIT on VC 1 */
	assert_int_equal(decode_fixed(f, n), -EINVAL);
	n = credit_frame(f);
	f[28] = 1; /* CREDIT with a msg_id */
	assert_int_equal(decode_fixed(f, n), -EINVAL);
	n = credit_frame(f);
	f[n - 4] = 1; /* CREDIT with a msg_len */
	assert_int_equal(decode_fixed(f, n), -EINVAL);
	n = put_frame(f);
	f[24] = (uint8_t)((f[24] & 0xf0) | DNP_PKT_GET_REQ); /* GET_REQ with 11 bytes */
	assert_int_equal(decode_fixed(f, n), -EINVAL);
	n = put_frame(f);
	f[24] = (uint8_t)((f[24] & 0xf0) | DNP_PKT_CMPL); /* CMPL with a payload */
	assert_int_equal(decode_fixed(f, n), -EINVAL);
}

static void test_pkt_decode_eoverflow(void **state)
{
	uint8_t f[DNP_MAX_FRAME];
	size_t n;

	n = put_frame(f);
	f[n - 4] = 10; /* msg_len 10 < offset 0 + len 11 */
	assert_int_equal(decode_fixed(f, n), -EOVERFLOW);
	n = put_frame(f);
	f[44] = 1; /* FIRST with offset 1 (msg_len 12 keeps LAST consistent) */
	f[n - 4] = 12;
	assert_int_equal(decode_fixed(f, n), -EOVERFLOW);
	n = put_frame(f);
	f[n - 4] = 20; /* LAST but offset + len = 11 != 20 */
	assert_int_equal(decode_fixed(f, n), -EOVERFLOW);
	n = put_frame(f);
	f[44] = 0xff; /* offset + len wraps 32 bits: must not be accepted */
	f[45] = 0xff;
	f[46] = 0xff;
	f[47] = 0xff;
	f[24] &= 0x3f; /* middle fragment */
	f[n - 4] = 0xff;
	f[n - 3] = 0xff;
	f[n - 2] = 0xff;
	f[n - 1] = 0xff;
	assert_int_equal(decode_fixed(f, n), -EOVERFLOW);
}

static void test_pkt_decode_eilseq(void **state)
{
	uint8_t f[DNP_MAX_FRAME];
	struct dnp_pkt_hdr d;
	size_t n = put_frame(f);

	f[50] ^= 0x20; /* payload bit */
	assert_int_equal(dnp_pkt_decode(f, n, &d, NULL), -EILSEQ);
	n = put_frame(f);
	f[n - 16] ^= 1; /* the CRC itself */
	assert_int_equal(dnp_pkt_decode(f, n, &d, NULL), -EILSEQ);
	n = credit_frame(f);
	f[40] ^= 0x80; /* credit value */
	assert_int_equal(dnp_pkt_decode(f, n, &d, NULL), -EILSEQ);
}

static bool is_stamped_byte(size_t i, size_t len)
{
	/* lflags, seq, ack, src_dir; footer crc, fstatus, hops */
	return (i >= 3 && i <= 11) || i == 14 || (i >= len - 16 && i <= len - 11);
}

static void test_pkt_restamp(void **state)
{
	uint8_t orig[DNP_MAX_FRAME], f[DNP_MAX_FRAME];
	struct dnp_pkt_hdr d, want = golden_put_hdr();
	const uint8_t *pl;
	size_t n = put_frame(orig);

	memcpy(f, orig, n);
	assert_int_equal(
		dnp_pkt_restamp(f, n, DNP_LINK_F_SEQ, 0xa1b2c3d4, 0x55667788, DNP_DIR_ZM, 0, 4), 0);
	for (size_t i = 0; i < n; i++)
		if (!is_stamped_byte(i, n))
			assert_int_equal(f[i], orig[i]);
	assert_int_equal(dnp_pkt_decode(f, n, &d, &pl), 0);
	want.seq = 0xa1b2c3d4;
	want.ack = 0x55667788;
	want.src_dir = DNP_DIR_ZM;
	want.fstatus = 0;
	want.hops = 4;
	assert_hdr_equal(&d, &want);
	assert_memory_equal(pl, golden_put_payload, 11);

	/* Restamping back to the original values gives back the golden bytes. */
	assert_int_equal(dnp_pkt_restamp(f, n, DNP_LINK_F_SEQ, 0x01020304, 0x0a0b0c0d, DNP_DIR_XM,
					 DNP_FT_RETX, 3),
			 0);
	assert_memory_equal(f, orig, n);

	/* CREDIT frames stay unsequenced. */
	n = credit_frame(f);
	assert_int_equal(dnp_pkt_restamp(f, n, 0, 0, 0x200, DNP_DIR_LOCAL, 0, 1), 0);
	assert_int_equal(dnp_pkt_decode(f, n, &d, NULL), 0);
	assert_int_equal(d.ack, 0x200);
	assert_int_equal(d.src_dir, DNP_DIR_LOCAL);
	assert_int_equal(d.hops, 1);
	assert_int_equal(d.credit[1].occupancy, 0x1f9);
}

/* dnp_pkt_set_vc edits H0 of a sealed frame and keeps its CRC right (pkt.h, "Sealing"). */
static void test_pkt_set_vc_then_restamp(void **state)
{
	uint8_t orig[DNP_MAX_FRAME], f[DNP_MAX_FRAME];
	struct dnp_pkt_hdr d, want = golden_put_hdr();
	size_t n = put_frame(orig);

	memcpy(f, orig, n);
	dnp_pkt_set_vc(f, 0);
	assert_int_equal(f[24], 0xc1);
	assert_int_equal(dnp_pkt_decode(f, n, &d, NULL), 0);
	assert_int_equal(d.vc, 0);
	assert_int_equal(dnp_pkt_restamp(f, n, DNP_LINK_F_SEQ, 0x01020304, 0x0a0b0c0d, DNP_DIR_XM,
					 DNP_FT_RETX, 3),
			 0);
	assert_int_equal(dnp_pkt_decode(f, n, &d, NULL), 0);
	want.vc = 0;
	assert_hdr_equal(&d, &want);
	for (size_t i = 0; i < n; i++)
		if (i != 24 && !is_stamped_byte(i, n))
			assert_int_equal(f[i], orig[i]);
	dnp_pkt_set_vc(f, 1);
	assert_int_equal(dnp_pkt_restamp(f, n, DNP_LINK_F_SEQ, 0x01020304, 0x0a0b0c0d, DNP_DIR_XM,
					 DNP_FT_RETX, 3),
			 0);
	assert_memory_equal(f, orig, n);
}

static void test_pkt_restamp_errors(void **state)
{
	uint8_t orig[DNP_MAX_FRAME], f[DNP_MAX_FRAME];
	size_t n = put_frame(orig);

	memcpy(f, orig, n);
	assert_int_equal(dnp_pkt_restamp(f, n, 0x2 | DNP_LINK_F_SEQ, 0, 0, 0, 0, 0), -EINVAL);
	assert_int_equal(dnp_pkt_restamp(f, n, DNP_LINK_F_SEQ, 0, 0, 7, 0, 0), -EINVAL);
	assert_int_equal(dnp_pkt_restamp(f, n, DNP_LINK_F_SEQ, 0, 0, 0, 0x20, 0), -EINVAL);
	assert_int_equal(dnp_pkt_restamp(f, n, 0, 0, 0, 0, 0, 0), -EINVAL); /* PUT needs SEQ */
	assert_int_equal(dnp_pkt_restamp(f, n - 16, DNP_LINK_F_SEQ, 0, 0, 0, 0, 0), -EINVAL);
	assert_int_equal(dnp_pkt_restamp(f, 48, DNP_LINK_F_SEQ, 0, 0, 0, 0, 0), -EINVAL);
	assert_memory_equal(f, orig, n); /* rejected calls leave the frame alone */
	f[0] = 0;
	assert_int_equal(dnp_pkt_restamp(f, n, DNP_LINK_F_SEQ, 0, 0, 0, 0, 0), -EINVAL);
	n = credit_frame(f);
	assert_int_equal(dnp_pkt_restamp(f, n, DNP_LINK_F_SEQ, 0, 0, 0, 0, 0), -EINVAL);
}

/* A PUT header of len payload bytes with random fields; per-hop fields as given. */
static void seal_hdr(struct dnp_pkt_hdr *h, uint16_t len)
{
	do
		random_hdr(h);
	while (h->kind != DNP_PKT_PUT);
	h->len = len;
	h->flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST;
	h->offset = 0;
	h->msg_len = len;
}

static void set_hop(struct dnp_pkt_hdr *h, uint32_t seq, uint32_t ack, uint8_t dir, uint8_t fstatus,
		    uint8_t hops)
{
	h->seq = seq;
	h->ack = ack;
	h->src_dir = dir;
	h->fstatus = fstatus;
	h->hops = hops;
}

/*
 * Restamping without a pass over the payload (pkt.h, "Sealing") gives the very
 * bytes of a frame encoded whole, for every payload length: after the epoch
 * set (first send), after set_epoch and set_vc (a retransmission or a forward
 * on another VC), and from no CRC at all.
 */
static void test_pkt_seal_combine_every_len(void **state)
{
	static uint8_t payload[DNP_MAX_PAYLOAD], f[DNP_MAX_FRAME], ref[DNP_MAX_FRAME];
	struct dnp_pkt_hdr h, d;
	const uint8_t *pl;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)rnd();
	for (unsigned len = 0; len <= DNP_MAX_PAYLOAD; len++) {
		uint32_t seq = (uint32_t)rnd(), ack = (uint32_t)rnd();
		uint8_t dir = (uint8_t)(rnd() % 7), tc = dnp_ft_tc((unsigned)rnd());
		int n;

		seal_hdr(&h, (uint16_t)len);
		/* first send: unsealed (CRC field zero), the epoch set, restamped */
		n = dnp_pkt_encode_unsealed(&h, payload, f, sizeof(f));
		assert_int_equal(n, (int)dnp_pkt_frame_len(len));
		assert_int_equal(dnp_pkt_encode(&h, payload, ref, sizeof(ref)), n);
		memset(ref + n - 16, 0, 4); /* the CRC is left to the restamp */
		assert_memory_equal(f, ref, (size_t)n);
		h.epoch = (uint8_t)(1 + rnd() % 255);
		dnp_pkt_set_epoch(f, h.epoch);
		set_hop(&h, seq, ack, dir, tc, 1);
		assert_int_equal(
			dnp_pkt_restamp(f, (size_t)n, DNP_LINK_F_SEQ, seq, ack, dir, tc, 1), 0);
		assert_int_equal(dnp_pkt_encode(&h, payload, ref, sizeof(ref)), n);
		assert_memory_equal(f, ref, (size_t)n);

		/* a retransmission in a new epoch on another VC: sealed CRC updated */
		h.epoch = (uint8_t)(h.epoch + 1);
		h.vc = (uint8_t)((h.vc + 1) % DNP_MAX_VC);
		dnp_pkt_set_epoch(f, h.epoch);
		dnp_pkt_set_vc(f, h.vc);
		assert_int_equal(dnp_pkt_decode(f, (size_t)n, &d, &pl), 0);
		assert_int_equal(d.vc, h.vc);
		set_hop(&h, seq + 1, ack + 7, (uint8_t)((dir + 1) % 7), tc | DNP_FT_RETX, 2);
		assert_int_equal(dnp_pkt_restamp(f, (size_t)n, DNP_LINK_F_SEQ, h.seq, h.ack,
						 h.src_dir, h.fstatus, 2),
				 0);
		assert_int_equal(dnp_pkt_encode(&h, payload, ref, sizeof(ref)), n);
		assert_memory_equal(f, ref, (size_t)n);

		/* no CRC: computed over the frame */
		memset(f + n - 16, 0, 4);
		assert_int_equal(dnp_pkt_restamp(f, (size_t)n, DNP_LINK_F_SEQ, h.seq, h.ack,
						 h.src_dir, h.fstatus, 2),
				 0);
		assert_memory_equal(f, ref, (size_t)n);
		assert_int_equal(dnp_pkt_decode(f, (size_t)n, &d, &pl), 0);
		assert_hdr_equal(&d, &h);
		assert_memory_equal(pl, payload, len);
	}
}

/* A large sealed frame's bytes changed behind the calls stay a CRC error after restamping. */
static void test_pkt_sealed_corruption_kept(void **state)
{
	static uint8_t payload[DNP_MAX_PAYLOAD], f[DNP_MAX_FRAME];
	struct dnp_pkt_hdr h;
	int n;

	seal_hdr(&h, DNP_MAX_PAYLOAD);
	n = dnp_pkt_encode(&h, payload, f, sizeof(f));
	assert_int_equal(n, (int)DNP_MAX_FRAME);
	f[50] ^= 0x10; /* a payload bit flipped in the retransmission buffer */
	assert_int_equal(dnp_pkt_restamp(f, (size_t)n, DNP_LINK_F_SEQ, 9, 9, DNP_DIR_XP, 0, 2), 0);
	assert_int_equal(dnp_pkt_decode(f, (size_t)n, &h, NULL), -EILSEQ);
}

static void test_pkt_kind_name(void **state)
{
	static const struct test_name kinds[] = {
		{ DNP_PKT_PUT, "PUT" },
		{ DNP_PKT_SEND, "SEND" },
		{ DNP_PKT_GET_REQ, "GET_REQ" },
		{ DNP_PKT_GET_RESP, "GET_RESP" },
		{ DNP_PKT_CMPL, "CMPL" },
		{ DNP_PKT_CREDIT, "CREDIT" },
		{ DNP_PKT_DIAG, "DIAG" },
		{ 0, "?" },
		{ DNP_PKT_ROUTE, "ROUTE" },
		{ DNP_PKT_QUERY, "QUERY" },
		{ DNP_PKT_COLL, "COLL" },
		{ 11, "?" },
		{ ~0u, "?" },
	};

	TEST_NAMES_CHECK(dnp_pkt_kind_name, kinds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pkt_golden_put),
		cmocka_unit_test(test_pkt_golden_credit),
		cmocka_unit_test(test_pkt_golden_put_class),
		cmocka_unit_test(test_pkt_golden_credit_4vc),
		cmocka_unit_test(test_pkt_credit_payload_rules),
		cmocka_unit_test(test_pkt_roundtrip_random),
		cmocka_unit_test(test_pkt_max_frame),
		cmocka_unit_test(test_pkt_encode_in_place),
		cmocka_unit_test(test_pkt_encode_errors),
		cmocka_unit_test(test_pkt_cmpl_batch),
		cmocka_unit_test(test_pkt_decode_enodata),
		cmocka_unit_test(test_pkt_decode_eproto),
		cmocka_unit_test(test_pkt_decode_eprotonosupport),
		cmocka_unit_test(test_pkt_decode_emsgsize),
		cmocka_unit_test(test_pkt_decode_e2big),
		cmocka_unit_test(test_pkt_decode_ebadmsg),
		cmocka_unit_test(test_pkt_vc_range),
		cmocka_unit_test(test_pkt_decode_einval),
		cmocka_unit_test(test_pkt_decode_eoverflow),
		cmocka_unit_test(test_pkt_decode_eilseq),
		cmocka_unit_test(test_pkt_restamp),
		cmocka_unit_test(test_pkt_set_vc_then_restamp),
		cmocka_unit_test(test_pkt_restamp_errors),
		cmocka_unit_test(test_pkt_kind_name),
		cmocka_unit_test(test_pkt_seal_combine_every_len),
		cmocka_unit_test(test_pkt_sealed_corruption_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
