/* SPDX-License-Identifier: MIT */
/*
 * keygen.c — SipHash-2-4 over a counter (see keygen.h). SipHash is
 * Aumasson and Bernstein's short-input PRF; this is a plain implementation
 * of its published algorithm, checked against its test vectors in
 * tests/test_keygen.c.
 */
#include <string.h>

#include "keygen.h"

static inline uint64_t rotl(uint64_t x, unsigned b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t load_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

struct sip {
	uint64_t v0, v1, v2, v3;
};

static void sip_round(struct sip *s)
{
	s->v0 += s->v1;
	s->v1 = rotl(s->v1, 13) ^ s->v0;
	s->v0 = rotl(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl(s->v3, 16) ^ s->v2;
	s->v0 += s->v3;
	s->v3 = rotl(s->v3, 21) ^ s->v0;
	s->v2 += s->v1;
	s->v1 = rotl(s->v1, 17) ^ s->v2;
	s->v2 = rotl(s->v2, 32);
}

static void sip_absorb(struct sip *s, uint64_t m)
{
	s->v3 ^= m;
	sip_round(s);
	sip_round(s);
	s->v0 ^= m;
}

uint64_t dnp_siphash24(const uint64_t k[2], const void *msg, size_t len)
{
	const uint8_t *p = msg;
	struct sip s = {
		.v0 = k[0] ^ 0x736f6d6570736575ull,
		.v1 = k[1] ^ 0x646f72616e646f6dull,
		.v2 = k[0] ^ 0x6c7967656e657261ull,
		.v3 = k[1] ^ 0x7465646279746573ull,
	};
	size_t i = 0;

	for (; i + 8 <= len; i += 8)
		sip_absorb(&s, load_le64(p + i));
	uint64_t last = (uint64_t)(len & 0xff) << 56;
	for (unsigned j = 0; i + j < len; j++)
		last |= (uint64_t)p[i + j] << (8 * j);
	sip_absorb(&s, last);
	s.v2 ^= 0xff;
	for (unsigned r = 0; r < 4; r++)
		sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

void dnp_keygen_init(struct dnp_keygen *g, const uint64_t secret[2])
{
	g->k[0] = secret[0];
	g->k[1] = secret[1];
	g->count = 0;
}

uint32_t dnp_keygen_next(struct dnp_keygen *g)
{
	for (;;) {
		uint8_t m[8];
		uint64_t c = g->count++;

		for (unsigned i = 0; i < 8; i++)
			m[i] = (uint8_t)(c >> (8 * i));
		uint32_t key = (uint32_t)dnp_siphash24(g->k, m, sizeof(m));
		if (key)
			return key;
	}
}
