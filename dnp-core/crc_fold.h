/* SPDX-License-Identifier: MIT */
/*
 * crc_fold.h — the DNP CRC-32 (crc.h) of short buffers without a library
 * call: private to the CRC module, included by its one backend file
 * (crc_isal.c or crc.c), which sends buffers of up to DNP_CRC_SHORT_MAX
 * bytes here. A frame of a small message (80 bytes for an 8-byte PUT) then
 * costs about 70 instructions, where ISA-L's call, dispatch and set-up for
 * long buffers brought it to about 95.
 *
 * The method is the folding one of carry-less multiplication (as ISA-L's
 * and zlib's own SIMD paths do it), written here for one 16-byte lane:
 *   - The message is a polynomial over GF(2), its first bit the highest
 *     power; in the reflected convention of this CRC, bit j of a 16-byte
 *     word loaded little-endian is the coefficient of x^(127-j), and bit j
 *     of a 32-bit register the coefficient of x^(31-j).
 *   - A carry-less product of two such 64-bit halves a, b read as a
 *     reflected 128-bit word is x * a * b (the product has degree 126).
 *     A 32-bit constant k = x^(n-33) mod P in the low half of a lane is
 *     x^32 * k as a 64-bit half, so the product is a * x^n modulo P.
 *   - Folding: the running 128-bit remainder T followed by the next word B
 *     is T * x^128 + B = lo * x^192 + hi * x^128 + B; two products and
 *     two XORs keep it 128 bits wide, congruent modulo P.
 *   - The end: the CRC register of the last 128 bits T is T * x^32 mod P,
 *     taken as two 64-bit steps (the register of the first half is XORed
 *     into the first four bytes of the second, as any CRC chains). Each
 *     step reduces W * x^32 (deg W < 64) by Barrett's method: the quotient
 *     is q = floor(W * mu / x^64), mu = floor(x^96 / P) = x^64 + mu', that
 *     is W plus the top of one product; the remainder is the low 32
 *     coefficients of q * (P - x^32).
 * The constants are computed at start-up from the polynomial alone; buffers
 * not a multiple of 16 bytes end with a byte table, and a CPU without
 * PCLMUL takes the byte table throughout (dnp_crc32 then keeps to the
 * library). tests/test_crc.c compares it with zlib's crc32() for every
 * length 0..4096 and every start offset mod 16.
 */
#ifndef DNP_CRC_FOLD_H
#define DNP_CRC_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CRCF_POLY 0xedb88320u         /* the CRC-32 polynomial, reflected, without x^32 */
#define CRCF_POLY_FULL 0x104c11db7ull /* the same, not reflected, with x^32 */

static uint32_t crcf_tab[256]; /* register after one byte v, from register v */

/* The byte table: each entry is its index shifted through the register 8 times. */
static void crcf_tab_fill(void)
{
	for (unsigned v = 0; v < 256; v++) {
		uint32_t r = v;

		for (unsigned b = 0; b < 8; b++)
			r = (r >> 1) ^ (CRCF_POLY & (0u - (r & 1u)));
		crcf_tab[v] = r;
	}
}

/* Bytes p[0..n) into register r (reflected, no preset or final XOR). */
static uint32_t crcf_bytes(uint32_t r, const uint8_t *p, size_t n)
{
	while (n--)
		r = crcf_tab[(r ^ *p++) & 0xffu] ^ (r >> 8);
	return r;
}

#if defined(__x86_64__)
#include <wmmintrin.h>

static bool crcf_clmul; /* the CPU multiplies carry-less (PCLMULQDQ, with AVX encodings) */
/*
 * crcf_k[0..1]: the folding constants, x^(192-33) and x^(128-33) mod P;
 * crcf_k[2..3]: Barrett's, mu' = floor(x^96 / P) - x^64 (reflected 64
 * bits) and P - x^32 in the high half of a lane.
 */
static uint64_t crcf_k[4] __attribute__((aligned(16)));

/* x^n modulo P, as a reflected 32-bit register. */
static uint32_t crcf_xpow(unsigned n)
{
	uint32_t r = 0x80000000u; /* the polynomial 1 */

	while (n--)
		r = (r >> 1) ^ (CRCF_POLY & (0u - (r & 1u)));
	return r;
}

/* The reflected 64-bit form of a polynomial of degree < 64 (bit i: x^i). */
static uint64_t crcf_reflect64(uint64_t v)
{
	uint64_t r = 0;

	for (unsigned i = 0; i < 64; i++)
		r |= ((v >> i) & 1u) << (63 - i);
	return r;
}

__attribute__((constructor)) static void crcf_init(void)
{
	unsigned __int128 num = (unsigned __int128)1 << 96;
	uint64_t q = 0;

	crcf_tab_fill();
	crcf_k[0] = crcf_xpow(192 - 33);
	crcf_k[1] = crcf_xpow(128 - 33);
	crcf_k[3] = (uint64_t)CRCF_POLY << 32;
	/* long division of x^96 by P; the quotient's x^64 term is left out */
	for (int d = 96; d >= 32; d--) {
		if ((num >> d) & 1u) {
			num ^= (unsigned __int128)CRCF_POLY_FULL << (d - 32);
			q |= d - 32 < 64 ? (uint64_t)1 << (d - 32) : 0;
		}
	}
	crcf_k[2] = crcf_reflect64(q);
	__builtin_cpu_init();
	crcf_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("avx");
}

/*
 * The register of the 8 bytes in lane 0 of x (little-endian) from register
 * 0, by Barrett's method (above), in lane 0 of the result (32 bits; lane 1
 * zero). m holds mu' in lane 0 and P - x^32 in the high half of lane 1.
 */
__attribute__((target("pclmul,avx"))) static inline __m128i crcf_barrett(__m128i x, __m128i m)
{
	__m128i q = _mm_xor_si128(x, _mm_slli_epi64(_mm_clmulepi64_si128(x, m, 0x00), 1));

	return _mm_srli_epi64(_mm_srli_si128(_mm_clmulepi64_si128(q, m, 0x10), 8), 31);
}

/*
 * The DNP CRC of p[0..n) chained on crc (crc.h), n >= 16, by folding (the
 * preset and final inversions included, so that a caller only jumps here).
 */
__attribute__((target("pclmul,avx"))) static uint32_t crcf_fold(uint32_t crc, const uint8_t *p,
								size_t n)
{
	const __m128i k = _mm_load_si128((const __m128i *)(const void *)&crcf_k[0]);
	const __m128i m = _mm_load_si128((const __m128i *)(const void *)&crcf_k[2]);
	const uint8_t *end = p + (n & ~(size_t)15);
	__m128i t = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)p),
				  _mm_cvtsi32_si128((int)~crc));

	for (p += 16; p != end; p += 16)
		t = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(t, k, 0x00),
						_mm_clmulepi64_si128(t, k, 0x11)),
				  _mm_loadu_si128((const __m128i *)(const void *)p));
	/* the first half's register chains into the second's first four bytes */
	t = crcf_barrett(_mm_xor_si128(_mm_srli_si128(t, 8), crcf_barrett(t, m)), m);
	return ~crcf_bytes((uint32_t)_mm_cvtsi128_si32(t), p, n & 15u);
}

/* The DNP CRC-32 of buf[0..len) chained on crc (crc.h), without a library call. */
static inline uint32_t crcf_crc32(uint32_t crc, const void *buf, size_t len)
{
	if (len >= 16 && crcf_clmul)
		return crcf_fold(crc, buf, len);
	return ~crcf_bytes(~crc, buf, len);
}

/*
 * True if dnp_crc32 takes crcf_fold for a buffer of len bytes: 16 to
 * DNP_CRC_SHORT_MAX, and the CPU has the instructions.
 */
static inline bool crcf_short(size_t len)
{
	return len - 16u <= DNP_CRC_SHORT_MAX - 16u && crcf_clmul;
}
#else
__attribute__((constructor)) static void crcf_init(void)
{
	crcf_tab_fill();
}

static inline uint32_t crcf_crc32(uint32_t crc, const void *buf, size_t len)
{
	return ~crcf_bytes(~crc, buf, len);
}

static inline bool crcf_short(size_t len)
{
	(void)len;
	return false;
}

static inline uint32_t crcf_fold(uint32_t crc, const uint8_t *p, size_t n)
{
	return ~crcf_bytes(~crc, p, n);
}
#endif

#endif
