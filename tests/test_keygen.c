/* SPDX-License-Identifier: MIT */
/*
 * test_keygen — buffer keys: SipHash-2-4 against its reference vectors, and
 * keys that the old generator's relation (xorshift32: each key is the state
 * that yields the next) no longer predicts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine.h"
#include "keygen.h"

static const uint64_t ref_key[2] = { 0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull };

/* The reference vectors (key 00..0f, message 00 01 02 ... of each length). */
static void test_siphash_reference_vectors(void **state)
{
	uint8_t m[16];

	for (unsigned i = 0; i < sizeof(m); i++)
		m[i] = (uint8_t)i;
	assert_true(dnp_siphash24(ref_key, m, 15) == 0xa129ca6149be45e5ull);
	assert_true(dnp_siphash24(ref_key, m, 8) == 0x93f5f5799a932462ull);
	assert_true(dnp_siphash24(ref_key, m, 0) == 0x726fdb47dd0e0e31ull);
}

static uint32_t xorshift32(uint32_t x)
{
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

#define NKEYS 20000

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Keys are never 0, distinct, and the old relation next = xorshift(prev) fails. */
static void check_keys(const uint32_t *k, unsigned n)
{
	static uint32_t sorted[NKEYS];
	unsigned predicted = 0;

	for (unsigned i = 0; i < n; i++) {
		assert_int_not_equal(k[i], 0);
		if (i && k[i] == xorshift32(k[i - 1]))
			predicted++;
	}
	assert_int_equal(predicted, 0);
	memcpy(sorted, k, n * sizeof(*k));
	qsort(sorted, n, sizeof(*sorted), cmp_u32);
	for (unsigned i = 1; i < n; i++)
		assert_int_not_equal(sorted[i], sorted[i - 1]);
}

static void test_keygen_unpredictable(void **state)
{
	static uint32_t k[NKEYS];
	struct dnp_keygen g;
	const uint64_t secret[2] = { 0x0123456789abcdefull, 0xfedcba9876543210ull };

	dnp_keygen_init(&g, secret);
	for (unsigned i = 0; i < NKEYS; i++)
		k[i] = dnp_keygen_next(&g);
	check_keys(k, NKEYS);
	/* Another secret, other keys: the same counter gives nothing away. */
	const uint64_t other[2] = { secret[0] ^ 1, secret[1] };
	dnp_keygen_init(&g, other);
	unsigned same = 0;
	for (unsigned i = 0; i < NKEYS; i++)
		same += dnp_keygen_next(&g) == k[i];
	assert_true(same < 4);
	/* Low bits are not a counter either: about half of the keys are odd. */
	unsigned odd = 0;
	for (unsigned i = 0; i < NKEYS; i++)
		odd += k[i] & 1;
	assert_true(odd > NKEYS / 2 - NKEYS / 20 && odd < NKEYS / 2 + NKEYS / 20);
}

static int mem_rw(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va, void *p,
		  size_t len, const struct dnp_mem_seq *seq)
{
	(void)seq;
	return 0;
}

static int mem_w(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va, const void *p,
		 size_t len)
{
	return 0;
}

/* Through the engine: registered buffers get such keys. */
static void test_engine_register_keys(void **state)
{
	static const struct dnp_mem_ops ops = { .read = mem_rw, .write = mem_w };
	static uint32_t k[4000];
	struct dnp_engine_conf c;
	struct dnp_engine *e;

	dnp_engine_conf_default(&c);
	c.mem = &ops;
	c.max_buffers = 4096;
	c.key_secret[0] = 42;
	c.key_secret[1] = 4242;
	assert_int_equal(dnp_engine_create(&c, 0, &e), 0);
	assert_int_equal(dnp_engine_port_open(e, 0), 0);
	for (unsigned i = 0; i < 4000; i++)
		assert_int_equal(dnp_engine_register(e, 0, 0x1000 + i * 0x1000ull, 0x1000,
						     DNP_BUF_PUT_TARGET, 0, &k[i]),
				 0);
	check_keys(k, 4000);
	dnp_engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_siphash_reference_vectors),
		cmocka_unit_test(test_keygen_unpredictable),
		cmocka_unit_test(test_engine_register_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
