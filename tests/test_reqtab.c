/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for presto/reqtab.h: the request table of Presto and of the
 * libfabric provider. The names it hands out come back from peers and from
 * the daemon, so every way of naming a request that is not (or no longer)
 * there must give NULL.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../presto/reqtab.h"

#define N_BIG 1000u /* well past DNP_REQTAB_INIT */

static struct dnp_reqtab mktab(uint32_t max)
{
	struct dnp_reqtab t;

	assert_int_equal(dnp_reqtab_init(&t, max), 0);
	return t;
}

static void test_reqtab_init_errors(void **state)
{
	struct dnp_reqtab t;
	uint32_t idx = 77;
	int x;

	assert_int_equal(dnp_reqtab_init(&t, 0), -EINVAL);
	t = mktab(8);
	assert_int_equal(dnp_reqtab_add(&t, NULL, 1, &idx), -EINVAL);
	assert_int_equal(idx, 77);
	/* an empty table knows no name, and allocated nothing */
	assert_null(dnp_reqtab_find(&t, 0, 1));
	assert_null(dnp_reqtab_find(&t, 0, 0));
	assert_null(t.ent);
	assert_int_equal(dnp_reqtab_remove(&t, 0), -ENOENT);
	assert_int_equal(dnp_reqtab_add(&t, &x, 1, &idx), 0);
	assert_int_equal(idx, 0);
	dnp_reqtab_fini(&t, NULL);
}

static void test_reqtab_add_find(void **state)
{
	struct dnp_reqtab t = mktab(DNP_REQTAB_MAX24);
	int obj[3];
	uint32_t idx[3], i;

	for (i = 0; i < 3; i++) {
		assert_int_equal(dnp_reqtab_add(&t, &obj[i], 0x100u + i, &idx[i]), 0);
		assert_int_equal(idx[i], i); /* a fresh table hands out 0, 1, 2 */
	}
	for (i = 0; i < 3; i++) {
		assert_ptr_equal(dnp_reqtab_find(&t, idx[i], 0x100u + i), &obj[i]);
		assert_ptr_equal(dnp_reqtab_find_id(&t, dnp_reqtab_id(idx[i], 0x100u + i)),
				 &obj[i]);
		/* the right index with another entry's generation, or none */
		assert_null(dnp_reqtab_find(&t, idx[i], 0x100u + (i + 1) % 3));
		assert_null(dnp_reqtab_find(&t, idx[i], 0));
	}
	dnp_reqtab_fini(&t, NULL);
}

/* Removed indices come back, the last removed first; the old names stay dead. */
static void test_reqtab_free_list_reuse(void **state)
{
	struct dnp_reqtab t = mktab(DNP_REQTAB_MAX24);
	int obj[8], again[3];
	uint32_t idx, i;

	for (i = 0; i < 8; i++) {
		assert_int_equal(dnp_reqtab_add(&t, &obj[i], 1, &idx), 0);
		assert_int_equal(idx, i);
	}
	assert_int_equal(dnp_reqtab_remove(&t, 3), 0);
	assert_int_equal(dnp_reqtab_remove(&t, 6), 0);
	/* a second removal is refused (the free list would hold 6 twice) */
	assert_int_equal(dnp_reqtab_remove(&t, 6), -ENOENT);
	assert_null(dnp_reqtab_find(&t, 3, 1));
	assert_null(dnp_reqtab_find(&t, 6, 1));

	assert_int_equal(dnp_reqtab_add(&t, &again[0], 3, &idx), 0);
	assert_int_equal(idx, 6);
	assert_int_equal(dnp_reqtab_add(&t, &again[1], 5, &idx), 0);
	assert_int_equal(idx, 3);
	/* free list empty: the next index is a new one */
	assert_int_equal(dnp_reqtab_add(&t, &again[2], 7, &idx), 0);
	assert_int_equal(idx, 8);

	/* a FIN for the request that used to be at 6 does not reach its successor */
	assert_null(dnp_reqtab_find(&t, 6, 1));
	assert_ptr_equal(dnp_reqtab_find(&t, 6, 3), &again[0]);
	assert_null(dnp_reqtab_find(&t, 3, 1));
	assert_ptr_equal(dnp_reqtab_find(&t, 3, 5), &again[1]);
	/* the others are untouched */
	assert_ptr_equal(dnp_reqtab_find(&t, 0, 1), &obj[0]);
	assert_ptr_equal(dnp_reqtab_find(&t, 7, 1), &obj[7]);
	dnp_reqtab_fini(&t, NULL);
}

/* Names a hostile peer or a corrupt cookie could present: all refused. */
static void test_reqtab_stale_and_out_of_range_refused(void **state)
{
	struct dnp_reqtab t = mktab(DNP_REQTAB_MAX24);
	int obj[4];
	uint32_t idx, i;

	for (i = 0; i < 4; i++)
		assert_int_equal(dnp_reqtab_add(&t, &obj[i], 9, &idx), 0);
	/* within the allocated capacity but never handed out */
	assert_true(t.cap > 4);
	assert_null(dnp_reqtab_find(&t, 4, 9));
	assert_null(dnp_reqtab_find(&t, t.cap - 1, 9));
	assert_null(dnp_reqtab_find(&t, t.cap, 9));
	assert_null(dnp_reqtab_find(&t, UINT32_MAX, 9));
	assert_null(dnp_reqtab_find_id(&t, dnp_reqtab_id(UINT32_MAX, 9)));
	assert_null(dnp_reqtab_find_id(&t, UINT64_MAX));
	/* the generation and index halves swapped */
	assert_null(dnp_reqtab_find_id(&t, (uint64_t)9 << 32 | 1));
	/* a stale name: removed, then never reused */
	assert_int_equal(dnp_reqtab_remove(&t, 2), 0);
	assert_null(dnp_reqtab_find(&t, 2, 9));
	assert_null(dnp_reqtab_find_id(&t, dnp_reqtab_id(2, 9)));
	assert_int_equal(dnp_reqtab_remove(&t, 4), -ENOENT);
	assert_int_equal(dnp_reqtab_remove(&t, UINT32_MAX), -ENOENT);
	assert_ptr_equal(dnp_reqtab_find(&t, 3, 9), &obj[3]);
	dnp_reqtab_fini(&t, NULL);
}

/* Past the first DNP_REQTAB_INIT entries: every entry stays where it was. */
static void test_reqtab_grows_past_initial_capacity(void **state)
{
	struct dnp_reqtab t = mktab(DNP_REQTAB_MAX24);
	int *obj = calloc(N_BIG, sizeof(*obj));
	uint32_t idx, i;

	assert_non_null(obj);
	for (i = 0; i < N_BIG; i++) {
		assert_int_equal(dnp_reqtab_add(&t, &obj[i], i * 2654435761u | 1u, &idx), 0);
		assert_int_equal(idx, i);
		if (i < DNP_REQTAB_INIT)
			assert_int_equal(t.cap, DNP_REQTAB_INIT);
	}
	assert_true(t.cap >= N_BIG);
	assert_int_equal(t.cap, 4 * DNP_REQTAB_INIT); /* 256, 512, 1024 */
	for (i = 0; i < N_BIG; i++)
		assert_ptr_equal(dnp_reqtab_find(&t, i, i * 2654435761u | 1u), &obj[i]);
	assert_null(dnp_reqtab_find(&t, N_BIG, N_BIG * 2654435761u | 1u));
	/* the free list holds every index at once */
	for (i = 0; i < N_BIG; i++)
		assert_int_equal(dnp_reqtab_remove(&t, i), 0);
	for (i = 0; i < N_BIG; i++) {
		assert_int_equal(dnp_reqtab_add(&t, &obj[i], 2, &idx), 0);
		assert_int_equal(idx, N_BIG - 1 - i);
	}
	assert_int_equal(t.cap, 4 * DNP_REQTAB_INIT); /* reuse did not grow it */
	dnp_reqtab_fini(&t, NULL);
	free(obj);
}

/* A limit refuses the entry beyond it (-ENOSPC) and caps the growth. */
static void test_reqtab_limit(void **state)
{
	struct dnp_reqtab t = mktab(300);
	int obj[301];
	uint32_t idx, i;

	for (i = 0; i < 300; i++)
		assert_int_equal(dnp_reqtab_add(&t, &obj[i], 1, &idx), 0);
	assert_int_equal(t.cap, 300);
	assert_int_equal(dnp_reqtab_add(&t, &obj[300], 1, &idx), -ENOSPC);
	assert_int_equal(dnp_reqtab_remove(&t, 17), 0);
	assert_int_equal(dnp_reqtab_add(&t, &obj[300], 3, &idx), 0);
	assert_int_equal(idx, 17);
	assert_int_equal(dnp_reqtab_add(&t, &obj[300], 3, &idx), -ENOSPC);
	dnp_reqtab_fini(&t, NULL);

	/* a limit below the first allocation */
	t = mktab(2);
	assert_int_equal(dnp_reqtab_add(&t, &obj[0], 1, &idx), 0);
	assert_int_equal(dnp_reqtab_add(&t, &obj[1], 1, &idx), 0);
	assert_int_equal(t.cap, 2);
	assert_int_equal(dnp_reqtab_add(&t, &obj[2], 1, &idx), -ENOSPC);
	dnp_reqtab_fini(&t, NULL);
}

/* The provider's limit: every index it can hand out survives a cookie. */
static void test_reqtab_max24_fits_a_cookie(void **state)
{
	uint32_t a, b, last = DNP_REQTAB_MAX24 - 1;
	unsigned kind;

	dnp_reqtab_cookie_split(dnp_reqtab_cookie(3, last, 0xdeadbeefu), &kind, &a, &b);
	assert_int_equal(kind, 3);
	assert_int_equal(a, last);
	assert_int_equal(b, 0xdeadbeefu);
	/* an index of 25 bits would come back as another one: hence the limit */
	dnp_reqtab_cookie_split(dnp_reqtab_cookie(3, 0x1000005u, 1), &kind, &a, &b);
	assert_int_equal(a, 5);
}

/* Known answers for the cookie layout: kind 8 bits, a 24 (masked), b 32. */
static void test_reqtab_cookie_layout(void **state)
{
	uint32_t a, b;
	unsigned kind;

	assert_int_equal(dnp_reqtab_cookie(3, 0x123456, 0xdeadbeefu), 0x03123456deadbeefull);
	assert_int_equal(dnp_reqtab_cookie(1, 0xffabcdefu, 5), 0x01abcdef00000005ull);
	dnp_reqtab_cookie_split(0xff00000100000002ull, &kind, &a, &b);
	assert_int_equal(kind, 0xff);
	assert_int_equal(a, 1);
	assert_int_equal(b, 2);
	assert_int_equal(dnp_reqtab_id(0x12, 0x34), 0x0000001200000034ull);
}

static unsigned dropped;
static int *drop_seen[4];

static void count_drop(void *obj)
{
	drop_seen[dropped++ % 4] = obj;
}

/* fini hands over exactly the objects still entered, and empties the table. */
static void test_reqtab_fini_drops_live_objects(void **state)
{
	struct dnp_reqtab t = mktab(16);
	int obj[3];
	uint32_t idx, i;

	for (i = 0; i < 3; i++)
		assert_int_equal(dnp_reqtab_add(&t, &obj[i], 1, &idx), 0);
	assert_int_equal(dnp_reqtab_remove(&t, 1), 0);
	dropped = 0;
	dnp_reqtab_fini(&t, count_drop);
	assert_int_equal(dropped, 2);
	assert_ptr_equal(drop_seen[0], &obj[0]);
	assert_ptr_equal(drop_seen[1], &obj[2]);
	assert_null(dnp_reqtab_find(&t, 0, 1));
	assert_int_equal(t.n, 0);
	assert_int_equal(t.max, 16);
	/* usable again */
	assert_int_equal(dnp_reqtab_add(&t, &obj[1], 4, &idx), 0);
	assert_int_equal(idx, 0);
	dnp_reqtab_fini(&t, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reqtab_init_errors),
		cmocka_unit_test(test_reqtab_add_find),
		cmocka_unit_test(test_reqtab_free_list_reuse),
		cmocka_unit_test(test_reqtab_stale_and_out_of_range_refused),
		cmocka_unit_test(test_reqtab_grows_past_initial_capacity),
		cmocka_unit_test(test_reqtab_limit),
		cmocka_unit_test(test_reqtab_max24_fits_a_cookie),
		cmocka_unit_test(test_reqtab_cookie_layout),
		cmocka_unit_test(test_reqtab_fini_drops_live_objects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
