/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for dnp-core/crc: known answers of CRC-32/IEEE, chaining, and
 * that every single-bit error in a maximum-size frame is caught (EURETILE
 * report, HW instrumentation for debugging: CRC_RX recomputes the check value
 * and compares).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "crc.h"
#include "pkt.h"

static void test_crc_known_answers(void **state)
{
	static const char fox[] = "The quick brown fox jumps over the lazy dog";

	/* The CRC-32 (ISO-HDLC / IEEE 802.3) check value. */
	assert_int_equal(dnp_crc32(0, "123456789", 9), 0xcbf43926u);
	assert_int_equal(dnp_crc32(0, fox, strlen(fox)), 0x414fa339u);
	assert_int_equal(dnp_crc32(0, "a", 1), 0xe8b7be43u);
	/* Empty input leaves the running value alone, even with a NULL buffer. */
	assert_int_equal(dnp_crc32(0, NULL, 0), 0);
	assert_int_equal(dnp_crc32(0x12345678u, NULL, 0), 0x12345678u);
	assert_int_equal(dnp_crc32(0x12345678u, "x", 0), 0x12345678u);
}

/* The library's CRC (zlib's crc32() is the DNP CRC, crc.c), for comparison. */
static uint32_t lib_crc32(uint32_t crc, const uint8_t *p, size_t len)
{
	return (uint32_t)crc32(crc, p, (uInt)len);
}

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint8_t rnd8(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint8_t)(rng >> 24);
}

/* The short-buffer path (crc_fold.h) on the standard check values. */
static void test_crc_short_known_answers(void **state)
{
	static const char fox[] = "The quick brown fox jumps over the lazy dog";
	uint8_t zeros[32] = { 0 }, ones[32];

	memset(ones, 0xff, sizeof(ones));
	assert_int_equal(dnp_crc32_short(0, "123456789", 9), 0xcbf43926u);
	assert_int_equal(dnp_crc32_short(0, fox, strlen(fox)), 0x414fa339u);
	assert_int_equal(dnp_crc32_short(0, "a", 1), 0xe8b7be43u);
	assert_int_equal(dnp_crc32_short(0x12345678u, NULL, 0), 0x12345678u);
	/* 32 bytes of zeros and of ones (CRC-32/ISO-HDLC catalogue values) */
	assert_int_equal(dnp_crc32_short(0, zeros, 32), 0x190a55adu);
	assert_int_equal(dnp_crc32_short(0, ones, 32), 0xff6cab0bu);
	assert_int_equal(dnp_crc32(0, zeros, 32), 0x190a55adu);
	assert_int_equal(dnp_crc32(0, ones, 32), 0xff6cab0bu);
}

/*
 * dnp_crc32_short and dnp_crc32 against the library for every length
 * 0..4096, random data, start offsets 0..15 (unaligned loads) and a random
 * running value to chain on.
 */
static void test_crc_short_equals_library_every_len(void **state)
{
	static uint8_t buf[4096 + 16];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = rnd8();
	for (size_t len = 0; len <= 4096; len++) {
		size_t off = len % 16;
		uint32_t seed = (uint32_t)rnd8() << 24 | (uint32_t)rnd8() << 8 | rnd8();
		uint32_t want = lib_crc32(0, buf + off, len);

		if (dnp_crc32_short(0, buf + off, len) != want)
			fail_msg("short CRC of %zu bytes at offset %zu differs", len, off);
		if (dnp_crc32(0, buf + off, len) != want)
			fail_msg("CRC of %zu bytes at offset %zu differs", len, off);
		if (dnp_crc32_short(seed, buf + off, len) != lib_crc32(seed, buf + off, len))
			fail_msg("short CRC of %zu bytes chained on %08x differs", len, seed);
		buf[rnd8() % sizeof(buf)] ^= (uint8_t)(1u << (rnd8() % 8)); /* new data each time */
	}
}

static void test_crc_chaining_equals_one_shot(void **state)
{
	static uint8_t buf[10007];
	uint32_t whole, part;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + (i >> 7));
	whole = dnp_crc32(0, buf, sizeof(buf));
	for (size_t cut = 0; cut <= sizeof(buf); cut += 97) {
		part = dnp_crc32(0, buf, cut);
		part = dnp_crc32(part, buf + cut, sizeof(buf) - cut);
		assert_int_equal(part, whole);
	}
	/* three pieces, byte by byte for the first few */
	part = 0;
	for (size_t i = 0; i < 16; i++)
		part = dnp_crc32(part, buf + i, 1);
	part = dnp_crc32(part, buf + 16, 4000);
	part = dnp_crc32(part, buf + 4016, sizeof(buf) - 4016);
	assert_int_equal(part, whole);
}

static uint32_t stored_crc(const uint8_t *f, size_t len)
{
	const uint8_t *c = f + len - 16;

	return (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
}

/* The footer check value as CRC_RX computes it: CRC field taken as zero. */
static uint32_t computed_crc(const uint8_t *f, size_t len)
{
	static const uint8_t zero[4];
	uint32_t crc = dnp_crc32(0, f, len - 16);

	crc = dnp_crc32(crc, zero, 4);
	return dnp_crc32(crc, f + len - 12, 12);
}

static void test_crc_every_single_bit_flip_detected(void **state)
{
	static uint8_t payload[DNP_MAX_PAYLOAD], frame[DNP_MAX_FRAME];
	struct dnp_pkt_hdr h, d;
	size_t n;

	memset(&h, 0, sizeof(h));
	h.lflags = DNP_LINK_F_SEQ;
	h.seq = 77;
	h.dst = (struct dnp_coord){ 1, 1, 0 };
	h.kind = DNP_PKT_PUT;
	h.flags = DNP_PKT_F_FIRST;
	h.len = DNP_MAX_PAYLOAD;
	h.msg_len = 3 * DNP_MAX_PAYLOAD;
	h.va = 0x1000;
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i ^ (i >> 8));
	assert_int_equal(dnp_pkt_encode(&h, payload, frame, sizeof(frame)), DNP_MAX_FRAME);
	n = DNP_MAX_FRAME;
	assert_int_equal(computed_crc(frame, n), stored_crc(frame, n));
	assert_int_equal(dnp_pkt_decode(frame, n, &d, NULL), 0);

	for (size_t bit = 0; bit < 8 * n; bit++) {
		frame[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		/* the CRC alone catches it ... */
		if (computed_crc(frame, n) == stored_crc(frame, n))
			fail_msg("bit %zu flipped undetected by the CRC", bit);
		/* ... and decode never accepts the frame */
		if (dnp_pkt_decode(frame, n, &d, NULL) == 0)
			fail_msg("bit %zu flipped and the frame still decodes", bit);
		frame[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	assert_int_equal(dnp_pkt_decode(frame, n, &d, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc_known_answers),
		cmocka_unit_test(test_crc_short_known_answers),
		cmocka_unit_test(test_crc_short_equals_library_every_len),
		cmocka_unit_test(test_crc_chaining_equals_one_shot),
		cmocka_unit_test(test_crc_every_single_bit_flip_detected),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
