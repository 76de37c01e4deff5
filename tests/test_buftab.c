/* SPDX-License-Identifier: MIT */
/* Unit tests for dnp-core/buftab: the RDMA buffer table. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "buftab.h"

#define NBUF 4096

static struct dnp_buf mkbuf(uint8_t port, uint64_t va, uint64_t len, uint32_t key, uint16_t flags)
{
	struct dnp_buf b = { .va = va, .len = len, .key = key, .flags = flags, .port = port };

	b.priv = (uintptr_t)(va ^ 0x5a5a);
	return b;
}

/* dnp_buftab_insert() of mkbuf(port, va, len, key, flags). */
static int insert(struct dnp_buftab *bt, uint8_t port, uint64_t va, uint64_t len, uint32_t key,
		  uint16_t flags)
{
	struct dnp_buf b = mkbuf(port, va, len, key, flags);

	return dnp_buftab_insert(bt, &b);
}

static struct dnp_buftab *mktab(uint32_t cap)
{
	struct dnp_buftab *bt = NULL;

	assert_int_equal(dnp_buftab_create(cap, &bt), 0);
	assert_non_null(bt);
	assert_int_equal(dnp_buftab_count(bt), 0);
	return bt;
}

/* Deterministic xorshift so failures reproduce. */
static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Buffer i of the big test: 64 KiB apart, lengths 1..0xfc00, never touching. */
static uint64_t big_va(uint32_t i)
{
	return 0x7f0000000000ull + (uint64_t)i * 0x10000 + (i % 61) * 8;
}

static uint64_t big_len(uint32_t i)
{
	return 1 + (uint64_t)(i * 2654435761u) % 0xfc00;
}

static void test_buftab_create_errors(void **state)
{
	struct dnp_buftab *bt = NULL;

	assert_int_equal(dnp_buftab_create(0, &bt), -EINVAL);
	assert_null(bt);
	bt = mktab(1);
	assert_null(dnp_buftab_at(bt, 0));
	dnp_buftab_destroy(bt);
	dnp_buftab_destroy(NULL);
}

static void test_buftab_4096_random_order(void **state)
{
	struct dnp_buftab *bt = mktab(NBUF);
	static uint32_t order[NBUF];
	uint32_t seed = 0x12345678;
	const struct dnp_buf *e;

	for (uint32_t i = 0; i < NBUF; i++)
		order[i] = i;
	for (uint32_t i = NBUF - 1; i > 0; i--) {
		uint32_t j = rnd(&seed) % (i + 1), tmp = order[i];

		order[i] = order[j];
		order[j] = tmp;
	}
	for (uint32_t k = 0; k < NBUF; k++) {
		uint32_t i = order[k];

		assert_int_equal(insert(bt, 3, big_va(i), big_len(i), i * 7 + 1, DNP_BUF_ALL), 0);
	}
	assert_int_equal(dnp_buftab_count(bt), NBUF);
	/* Iteration is in va order: entry i is buffer i. */
	for (uint32_t i = 0; i < NBUF; i++) {
		e = dnp_buftab_at(bt, i);
		assert_non_null(e);
		assert_int_equal(e->va, big_va(i));
	}
	assert_null(dnp_buftab_at(bt, NBUF));

	for (uint32_t i = 0; i < NBUF; i++) {
		uint64_t va = big_va(i), len = big_len(i);
		uint32_t key = i * 7 + 1;

		e = NULL;
		assert_int_equal(dnp_buftab_lookup(bt, 3, va, 1, key, 0, &e), 0);
		assert_non_null(e);
		assert_int_equal(e->va, va);
		assert_int_equal(e->len, len);
		assert_int_equal(e->priv, (uintptr_t)(va ^ 0x5a5a));
		e = NULL;
		assert_int_equal(dnp_buftab_lookup(bt, 3, va + len - 1, 1, key, 0, &e), 0);
		assert_int_equal(e->va, va);
		e = NULL;
		assert_int_equal(dnp_buftab_lookup(bt, 3, va, len, key, DNP_BUF_ALL, &e), 0);
		assert_int_equal(e->va, va);
		/* One byte before and one after are in the gaps between buffers. */
		assert_int_equal(dnp_buftab_lookup(bt, 3, va - 1, 1, key, 0, &e), -EACCES);
		assert_int_equal(dnp_buftab_lookup(bt, 3, va + len, 1, key, 0, &e), -EACCES);
		assert_int_equal(dnp_buftab_lookup(bt, 3, va, len + 1, key, 0, &e), -ERANGE);
		/* Same addresses, another port: a different address space. */
		assert_int_equal(dnp_buftab_lookup(bt, 2, va, 1, key, 0, &e), -EACCES);
	}
	dnp_buftab_destroy(bt);
}

static void test_buftab_lookup_error_order(void **state)
{
	struct dnp_buftab *bt = mktab(16);
	struct dnp_buf b = mkbuf(1, 0x1000, 0x100, 42, DNP_BUF_PUT_TARGET);
	const struct dnp_buf *e = NULL;

	assert_int_equal(dnp_buftab_insert(bt, &b), 0);
	/* -EACCES: nothing at va, whatever the key and flags. */
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0xfff, 1, 0, DNP_BUF_ALL, &e), -EACCES);
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x1100, 1, 42, 0, &e), -EACCES);
	assert_int_equal(dnp_buftab_lookup(bt, 0, 0x1000, 1, 42, 0, &e), -EACCES);
	assert_int_equal(dnp_buftab_lookup(bt, 2, 0x1000, 1, 42, 0, &e), -EACCES);
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0, 1, 42, 0, &e), -EACCES);
	assert_int_equal(dnp_buftab_lookup(bt, 1, UINT64_MAX, 1, 42, 0, &e), -EACCES);
	/* The key before -ERANGE: a wrong key learns nothing of the bounds. */
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x10ff, 2, 0, DNP_BUF_ALL, &e), -EACCES);
	/* -ERANGE (right key) before -EPERM. */
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x10ff, 2, 42, DNP_BUF_ALL, &e), -ERANGE);
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x1000, 0x101, 42, 0, &e), -ERANGE);
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x1080, UINT64_MAX, 42, 0, &e), -ERANGE);
	/* -EACCES before -EPERM. */
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x1000, 0x100, 43, DNP_BUF_GET_SOURCE, &e),
			 -EACCES);
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x1000, 0x100, 42, DNP_BUF_GET_SOURCE, &e),
			 -EPERM);
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x1000, 0x100, 42,
					   DNP_BUF_PUT_TARGET | DNP_BUF_SEND_TARGET, &e),
			 -EPERM);
	assert_null(e); /* untouched on every error */
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x1000, 0x100, 42, DNP_BUF_PUT_TARGET, &e), 0);
	assert_non_null(e);
	assert_int_equal(e->va, 0x1000);
	/* len 0 counts as one byte: valid on the last byte, nothing past it. */
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x10ff, 0, 42, 0, &e), 0);
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x1100, 0, 42, 0, &e), -EACCES);
	dnp_buftab_destroy(bt);
}

/* Issue 7: a wrong key gets one error, whatever the range it names. */
static void test_buftab_wrong_key_no_bounds_leak(void **state)
{
	struct dnp_buftab *bt = mktab(16);
	struct dnp_buf b = mkbuf(1, 0x1000, 0x100, 42, DNP_BUF_PUT_TARGET | DNP_BUF_GET_SOURCE);
	struct dnp_buf b2 = mkbuf(1, 0x4000, 0x100, 77, DNP_BUF_PUT_TARGET);
	const struct dnp_buf *e = NULL;
	const uint64_t vas[] = { 0, 0xfff, 0x1000, 0x1080, 0x10ff, 0x1100, 0x4000, UINT64_MAX };
	const uint64_t lens[] = { 0, 1, 0x80, 0x100, 0x101, 0x10000, UINT64_MAX };

	assert_int_equal(dnp_buftab_insert(bt, &b), 0);
	assert_int_equal(dnp_buftab_insert(bt, &b2), 0);
	for (size_t i = 0; i < sizeof(vas) / sizeof(vas[0]); i++)
		for (size_t j = 0; j < sizeof(lens) / sizeof(lens[0]); j++)
			for (unsigned f = 0; f <= DNP_BUF_ALL; f++) {
				assert_int_equal(
					dnp_buftab_lookup(bt, 1, vas[i], lens[j], 43, f, &e),
					-EACCES);
				assert_int_equal(
					dnp_buftab_lookup(bt, 1, vas[i], lens[j], 0, f, &e),
					-EACCES);
			}
	/* Each key opens its own buffer only. */
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x4000, 1, 42, 0, &e), -EACCES);
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x1000, 1, 77, 0, &e), -EACCES);
	assert_null(e);
	dnp_buftab_destroy(bt);
}

static void test_buftab_insert_errors(void **state)
{
	struct dnp_buftab *bt = mktab(16);

	assert_int_equal(insert(bt, 0, 0x1000, 0, 1, 0), -EINVAL);
	assert_int_equal(insert(bt, 0, 0x1000, 0x10, 1, 0x8), -EINVAL);
	assert_int_equal(insert(bt, 0, 0x1000, 0x10, 1, 0xffff), -EINVAL);
	assert_int_equal(insert(bt, 0, UINT64_MAX, 1, 1, 0), -EINVAL);
	assert_int_equal(insert(bt, 0, 2, UINT64_MAX - 1, 1, 0), -EINVAL);
	assert_int_equal(dnp_buftab_count(bt), 0);
	dnp_buftab_destroy(bt);
}

static void test_buftab_overlap_per_port(void **state)
{
	/* [0x1000, 0x2000) on port 5; candidates and whether they collide. */
	static const struct {
		uint64_t va, len;
		int want;
	} cases[] = {
		{ 0x1000, 0x1000, -EEXIST }, /* identical */
		{ 0x1000, 1, -EEXIST },      /* same start */
		{ 0x0800, 0x0801, -EEXIST }, /* ends on the first byte */
		{ 0x1fff, 0x10, -EEXIST },   /* starts on the last byte */
		{ 0x1800, 0x10, -EEXIST },   /* inside */
		{ 0x0800, 0x2000, -EEXIST }, /* around */
		{ 0x0000, 0x1000, 0 },       /* touches the start */
		{ 0x2000, 0x1000, 0 },       /* touches the end */
	};
	struct dnp_buftab *bt = mktab(64);
	struct dnp_buf b = mkbuf(5, 0x1000, 0x1000, 9, DNP_BUF_ALL);
	const struct dnp_buf *e;

	assert_int_equal(dnp_buftab_insert(bt, &b), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct dnp_buf c = mkbuf(5, cases[i].va, cases[i].len, 1, 0);
		uint32_t before = dnp_buftab_count(bt);

		assert_int_equal(dnp_buftab_insert(bt, &c), cases[i].want);
		assert_int_equal(dnp_buftab_count(bt), before + (cases[i].want == 0));
		if (cases[i].want == 0)
			assert_int_equal(dnp_buftab_remove(bt, 5, cases[i].va, NULL), 0);
		/* The same range on other ports is always fine. */
		c.port = 4;
		assert_int_equal(dnp_buftab_insert(bt, &c), 0);
		c.port = 6;
		assert_int_equal(dnp_buftab_insert(bt, &c), 0);
		assert_int_equal(dnp_buftab_remove(bt, 4, cases[i].va, NULL), 0);
		assert_int_equal(dnp_buftab_remove(bt, 6, cases[i].va, NULL), 0);
	}
	assert_int_equal(dnp_buftab_count(bt), 1);
	/* Both neighbours at once, then a filler exactly in the hole between them. */
	assert_int_equal(insert(bt, 5, 0x3000, 0x100, 2, 0), 0);
	assert_int_equal(insert(bt, 5, 0x2000, 0x1001, 3, 0), -EEXIST);
	assert_int_equal(insert(bt, 5, 0x2000, 0x1000, 3, 0), 0);
	assert_int_equal(dnp_buftab_lookup(bt, 5, 0x1000, 0x2100, 9, 0, &e), -ERANGE);
	assert_int_equal(dnp_buftab_lookup(bt, 5, 0x2fff, 1, 3, 0, &e), 0);
	assert_int_equal(e->key, 3);
	assert_int_equal(dnp_buftab_lookup(bt, 5, 0x3000, 1, 2, 0, &e), 0);
	assert_int_equal(e->key, 2);
	dnp_buftab_destroy(bt);
}

static void test_buftab_remove(void **state)
{
	struct dnp_buftab *bt = mktab(64);
	struct dnp_buf out;
	const struct dnp_buf *e;

	for (uint8_t port = 0; port < 3; port++)
		for (uint64_t k = 0; k < 5; k++) {
			assert_int_equal(insert(bt, port, 0x10000 * (k + 1), 0x100,
						(uint32_t)(port * 10 + k), DNP_BUF_SEND_TARGET),
					 0);
		}
	assert_int_equal(dnp_buftab_count(bt), 15);
	/* Only the exact start of a buffer of that port removes it. */
	assert_int_equal(dnp_buftab_remove(bt, 1, 0x20001, &out), -ENOENT);
	assert_int_equal(dnp_buftab_remove(bt, 3, 0x20000, &out), -ENOENT);
	assert_int_equal(dnp_buftab_remove(bt, 1, 0x20000, &out), 0);
	assert_int_equal(out.port, 1);
	assert_int_equal(out.va, 0x20000);
	assert_int_equal(out.key, 11);
	assert_int_equal(out.flags, DNP_BUF_SEND_TARGET);
	assert_int_equal(dnp_buftab_remove(bt, 1, 0x20000, NULL), -ENOENT);
	assert_int_equal(dnp_buftab_count(bt), 14);
	/* After removal, traffic to it fails; its neighbours on every port remain. */
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x20000, 1, 11, 0, &e), -EACCES);
	assert_int_equal(dnp_buftab_lookup(bt, 0, 0x20000, 1, 1, 0, &e), 0);
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x30000, 1, 12, 0, &e), 0);

	assert_int_equal(dnp_buftab_remove_port(bt, 1), 4);
	assert_int_equal(dnp_buftab_remove_port(bt, 1), 0);
	assert_int_equal(dnp_buftab_remove_port(bt, 7), 0);
	assert_int_equal(dnp_buftab_count(bt), 10);
	for (uint32_t i = 0; i < dnp_buftab_count(bt); i++) {
		e = dnp_buftab_at(bt, i);
		assert_int_equal(e->port, i < 5 ? 0 : 2);
		assert_int_equal(e->va, 0x10000 * (i % 5 + 1));
	}
	assert_int_equal(dnp_buftab_remove_port(bt, 0), 5);
	assert_int_equal(dnp_buftab_remove_port(bt, 2), 5);
	assert_int_equal(dnp_buftab_count(bt), 0);
	dnp_buftab_destroy(bt);
}

static void test_buftab_near_uint64_max(void **state)
{
	struct dnp_buftab *bt = mktab(8);
	const struct dnp_buf *e;

	/* The end va + len may equal UINT64_MAX but not pass it. */
	assert_int_equal(insert(bt, 0, UINT64_MAX - 0x100, 0x101, 1, DNP_BUF_ALL), -EINVAL);
	assert_int_equal(insert(bt, 0, UINT64_MAX - 0x100, 0x100, 1, DNP_BUF_ALL), 0);
	assert_int_equal(insert(bt, 0, UINT64_MAX - 1, 1, 1, DNP_BUF_ALL), -EEXIST);
	assert_int_equal(insert(bt, 1, UINT64_MAX - 1, 1, 1, DNP_BUF_ALL), 0);

	assert_int_equal(dnp_buftab_lookup(bt, 0, UINT64_MAX - 0x100, 0x100, 1, 0, &e), 0);
	assert_int_equal(dnp_buftab_lookup(bt, 0, UINT64_MAX - 1, 1, 1, 0, &e), 0);
	assert_int_equal(e->va, UINT64_MAX - 0x100);
	assert_int_equal(dnp_buftab_lookup(bt, 0, UINT64_MAX - 1, 2, 1, 0, &e), -ERANGE);
	assert_int_equal(dnp_buftab_lookup(bt, 0, UINT64_MAX - 1, UINT64_MAX, 1, 0, &e), -ERANGE);
	assert_int_equal(dnp_buftab_lookup(bt, 0, UINT64_MAX - 0x80, UINT64_MAX - 0x10, 1, 0, &e),
			 -ERANGE);
	assert_int_equal(dnp_buftab_lookup(bt, 0, UINT64_MAX, 1, 1, 0, &e), -EACCES);
	assert_int_equal(dnp_buftab_lookup(bt, 0, UINT64_MAX, 0, 1, 0, &e), -EACCES);
	assert_int_equal(dnp_buftab_lookup(bt, 0, UINT64_MAX - 0x101, 1, 1, 0, &e), -EACCES);
	assert_int_equal(dnp_buftab_lookup(bt, 1, UINT64_MAX - 1, 1, 1, 0, &e), 0);
	assert_int_equal(e->port, 1);

	/* And the bottom of the address space. */
	assert_int_equal(insert(bt, 0, 0, 1, 2, 0), 0);
	assert_int_equal(dnp_buftab_lookup(bt, 0, 0, 1, 2, 0, &e), 0);
	assert_int_equal(dnp_buftab_lookup(bt, 0, 0, 2, 2, 0, &e), -ERANGE);
	assert_int_equal(dnp_buftab_lookup(bt, 0, 1, 1, 2, 0, &e), -EACCES);
	dnp_buftab_destroy(bt);
}

/* find: the owner's own range check, ignoring key and flags. */
static void test_buftab_find(void **state)
{
	struct dnp_buftab *bt = mktab(8);
	struct dnp_buf b = mkbuf(2, 0x1000, 0x100, 7, 0);
	const struct dnp_buf *e;

	assert_int_equal(dnp_buftab_insert(bt, &b), 0);
	assert_int_equal(insert(bt, 2, UINT64_MAX - 0x10, 0x10, 8, DNP_BUF_ALL), 0);
	e = dnp_buftab_find(bt, 2, 0x1000, 0x100);
	assert_non_null(e);
	assert_int_equal(e->key, 7);
	assert_ptr_equal(dnp_buftab_find(bt, 2, 0x10ff, 0), e);
	assert_ptr_equal(dnp_buftab_find(bt, 2, 0x1080, 1), e);
	assert_null(dnp_buftab_find(bt, 2, 0x1000, 0x101));
	assert_null(dnp_buftab_find(bt, 2, 0x10ff, 2));
	assert_null(dnp_buftab_find(bt, 2, 0xfff, 1));
	assert_null(dnp_buftab_find(bt, 2, 0x1100, 0));
	assert_null(dnp_buftab_find(bt, 1, 0x1000, 1));
	assert_null(dnp_buftab_find(bt, 3, 0x1000, 1));
	e = dnp_buftab_find(bt, 2, UINT64_MAX - 1, 1);
	assert_non_null(e);
	assert_int_equal(e->key, 8);
	assert_null(dnp_buftab_find(bt, 2, UINT64_MAX - 1, UINT64_MAX));
	assert_null(dnp_buftab_find(bt, 2, UINT64_MAX, 1));
	dnp_buftab_destroy(bt);
}

/*
 * Lookups that alternate between a few buffers (what the hints serve) while
 * buffers come and go around them, against a plain scan of what is
 * registered: a hint that inserts and removes shifted must never answer
 * with the wrong entry, nor find a removed one.
 */
static void test_buftab_hints_follow_changes(void **state)
{
	enum {
		NB = 24
	};
	struct dnp_buftab *bt = mktab(64);
	bool in[NB] = { false };
	uint32_t seed = 0x1234567u;

	(void)state;
	for (unsigned round = 0; round < 20000; round++) {
		uint32_t r = rnd(&seed), i = r % NB;
		/* buffers 16 bytes apart on two ports, each 8 bytes long */
		uint8_t port = (uint8_t)(i & 1);
		uint64_t va = 0x1000 + 16 * (uint64_t)(i / 2);

		if ((r >> 8) % 8 == 0) {
			struct dnp_buf b = mkbuf(port, va, 8, 100 + i, DNP_BUF_ALL);

			if (in[i]) {
				assert_int_equal(dnp_buftab_remove(bt, port, va, NULL), 0);
			} else {
				assert_int_equal(dnp_buftab_insert(bt, &b), 0);
			}
			in[i] = !in[i];
			continue;
		}
		/* mostly two buffers in turn, sometimes any, sometimes a gap */
		if ((r >> 12) % 4)
			i = (round & 1) ? 2 : 7;
		port = (uint8_t)(i & 1);
		va = 0x1000 + 16 * (uint64_t)(i / 2) + (r >> 20) % 12; /* 8..11: the gap */
		const struct dnp_buf *e = dnp_buftab_find(bt, port, va, 1);
		const struct dnp_buf *l = NULL;
		int rc = dnp_buftab_lookup(bt, port, va, 1, 100 + i, 0, &l);

		if (in[i] && (va & 15u) < 8) {
			assert_non_null(e);
			assert_int_equal(e->key, 100 + i);
			assert_int_equal(e->port, port);
			assert_int_equal(rc, 0);
			assert_ptr_equal(l, e);
		} else {
			assert_null(e);
			assert_int_equal(rc, -EACCES);
		}
	}
	dnp_buftab_destroy(bt);
}

/*
 * A buffer deregistered while the hints point at it is never answered
 * again: not through its old hint, not when a buffer of another key (or
 * of another port) takes its index or its very range, not after the whole
 * port is dropped. A packet for it then fails its key check, so nothing is
 * ever written into memory its owner gave back.
 */
static void test_buftab_removed_never_found(void **state)
{
	struct dnp_buftab *bt = mktab(16);
	const struct dnp_buf *e;

	(void)state;
	assert_int_equal(dnp_buftab_insert(bt, &(struct dnp_buf){ .va = 0x1000,
								  .len = 0x100,
								  .key = 7,
								  .port = 1,
								  .flags = DNP_BUF_ALL }),
			 0);
	for (unsigned i = 0; i < 3; i++) /* the hints now name it */
		assert_int_equal(dnp_buftab_lookup(bt, 1, 0x1010, 8, 7, DNP_BUF_PUT_TARGET, &e), 0);
	assert_int_equal(dnp_buftab_remove(bt, 1, 0x1000, NULL), 0);
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x1010, 8, 7, 0, &e), -EACCES);
	assert_null(dnp_buftab_find(bt, 1, 0x1010, 8));

	/* another port's buffer at index 0, then one of the same port, other key, same range */
	assert_int_equal(dnp_buftab_insert(bt, &(struct dnp_buf){ .va = 0x1000,
								  .len = 0x100,
								  .key = 7,
								  .port = 2,
								  .flags = DNP_BUF_ALL }),
			 0);
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x1010, 8, 7, 0, &e), -EACCES);
	assert_int_equal(dnp_buftab_insert(bt, &(struct dnp_buf){ .va = 0x1000,
								  .len = 0x100,
								  .key = 9,
								  .port = 1,
								  .flags = DNP_BUF_ALL }),
			 0);
	for (uint64_t va = 0x1000; va < 0x1100; va += 0x10)
		assert_int_equal(dnp_buftab_lookup(bt, 1, va, 8, 7, 0, &e), -EACCES);
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x1010, 8, 9, 0, &e), 0);
	assert_int_equal(e->key, 9);
	assert_int_equal(e->port, 1);

	/* the port dropped whole: its hinted entry goes too */
	assert_int_equal(dnp_buftab_remove_port(bt, 1), 1);
	assert_int_equal(dnp_buftab_lookup(bt, 1, 0x1010, 8, 9, 0, &e), -EACCES);
	assert_int_equal(dnp_buftab_lookup(bt, 2, 0x1010, 8, 7, 0, &e), 0);
	assert_int_equal(e->port, 2);
	dnp_buftab_destroy(bt);
}

static void test_buftab_capacity_full(void **state)
{
	struct dnp_buftab *bt = mktab(8);
	const struct dnp_buf *e;

	for (uint64_t k = 0; k < 8; k++) {
		assert_int_equal(insert(bt, 0, (8 - k) * 0x1000, 0x10, 0, 0), 0);
	}
	assert_int_equal(insert(bt, 0, 0x100000, 0x10, 0, 0), -ENOSPC);
	/* Overlap is reported before lack of room; invalid before both. */
	assert_int_equal(insert(bt, 0, 0x1000, 0x10, 0, 0), -EEXIST);
	assert_int_equal(insert(bt, 0, 0x100000, 0, 0, 0), -EINVAL);
	assert_int_equal(dnp_buftab_count(bt), 8);
	assert_int_equal(dnp_buftab_lookup(bt, 0, 0x8000, 0x10, 0, 0, &e), 0);
	/* Freeing one slot makes room again. */
	assert_int_equal(dnp_buftab_remove(bt, 0, 0x4000, NULL), 0);
	assert_int_equal(insert(bt, 0, 0x100000, 0x10, 0, 0), 0);
	assert_int_equal(dnp_buftab_count(bt), 8);
	dnp_buftab_destroy(bt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buftab_create_errors),
		cmocka_unit_test(test_buftab_4096_random_order),
		cmocka_unit_test(test_buftab_hints_follow_changes),
		cmocka_unit_test(test_buftab_removed_never_found),
		cmocka_unit_test(test_buftab_lookup_error_order),
		cmocka_unit_test(test_buftab_wrong_key_no_bounds_leak),
		cmocka_unit_test(test_buftab_insert_errors),
		cmocka_unit_test(test_buftab_overlap_per_port),
		cmocka_unit_test(test_buftab_remove),
		cmocka_unit_test(test_buftab_near_uint64_max),
		cmocka_unit_test(test_buftab_find),
		cmocka_unit_test(test_buftab_capacity_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
