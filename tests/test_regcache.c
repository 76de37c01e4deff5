/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for presto/regcache.h: the registration cache of Presto and of
 * the libfabric provider. libdnp is replaced by a buffer table that keeps
 * its rules the cache relies on (overlapping registrations refused with
 * -EEXIST, unregister by start address) and counts every call, so the tests
 * see exactly what the cache asks of the daemon and when.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../presto/regcache.h"

/* ------------------------------------------------------ stand-in libdnp */

#define SB_BUFS 64

struct sb_buf {
	uint8_t *addr;
	size_t len;
	uint32_t key;
	bool used;
};

static struct sb_buf sb_buf[SB_BUFS];
static unsigned sb_regs, sb_unregs; /* calls that succeeded */
static unsigned sb_refused;         /* dnp_register calls refused */
static int sb_fail;                 /* if < 0, a dnp_register returns it ... */
static unsigned sb_fail_skip;       /* ... once this many more calls went through */
static uint32_t sb_next_key;
static int sb_dummy;
#define SB_D ((struct dnp *)&sb_dummy)

int dnp_register(struct dnp *d, void *addr, size_t len, unsigned flags, uint32_t *key)
{
	unsigned i, fi = SB_BUFS;

	assert_ptr_equal(d, SB_D);
	assert_int_equal(flags, DNP_BUF_PUT_TARGET | DNP_BUF_GET_SOURCE);
	if (sb_fail < 0 && sb_fail_skip) {
		sb_fail_skip--;
	} else if (sb_fail < 0) {
		int r = sb_fail;

		sb_fail = 0;
		sb_refused++;
		return r;
	}
	for (i = 0; i < SB_BUFS; i++) {
		struct sb_buf *b = &sb_buf[i];

		if (!b->used) {
			if (fi == SB_BUFS)
				fi = i;
			continue;
		}
		if ((uint8_t *)addr < b->addr + b->len && b->addr < (uint8_t *)addr + len) {
			sb_refused++;
			return -EEXIST;
		}
	}
	assert_true(fi < SB_BUFS);
	sb_buf[fi] =
		(struct sb_buf){ .addr = addr, .len = len, .key = ++sb_next_key, .used = true };
	*key = sb_buf[fi].key;
	sb_regs++;
	return 0;
}

int dnp_unregister(struct dnp *d, void *addr)
{
	unsigned i;

	assert_ptr_equal(d, SB_D);
	for (i = 0; i < SB_BUFS; i++)
		if (sb_buf[i].used && sb_buf[i].addr == addr) {
			sb_buf[i].used = false;
			sb_unregs++;
			return 0;
		}
	fail_msg("unregister of %p, which is not registered", addr);
	return -ENOENT;
}

/* Whether [addr, +len) is registered with the stand-in, exactly. */
static bool sb_registered(const void *addr, size_t len)
{
	unsigned i;

	for (i = 0; i < SB_BUFS; i++)
		if (sb_buf[i].used && sb_buf[i].addr == addr && sb_buf[i].len == len)
			return true;
	return false;
}

static unsigned sb_live(void)
{
	unsigned i, n = 0;

	for (i = 0; i < SB_BUFS; i++)
		n += sb_buf[i].used;
	return n;
}

static int setup(void **state)
{
	(void)state;
	memset(sb_buf, 0, sizeof(sb_buf));
	sb_regs = sb_unregs = sb_refused = 0;
	sb_fail = 0;
	sb_fail_skip = 0;
	sb_next_key = 0x100;
	return 0;
}

/* ------------------------------------------------------------ helpers */

#define N_RANGES 24u
#define RANGE 256u

static uint8_t mem[N_RANGES][RANGE];

static struct dnp_regcache mkcache(void)
{
	struct dnp_regcache c;

	dnp_regcache_init(&c, SB_D);
	assert_null(c.regs);
	assert_int_equal(c.ncached, 0);
	return c;
}

/* Uses range i once: get, then put. */
static void use_once(struct dnp_regcache *c, unsigned i)
{
	struct dnp_regcache_ent *g = NULL;

	assert_int_equal(dnp_regcache_get(c, mem[i], RANGE, &g), 0);
	assert_non_null(g);
	assert_int_equal(g->refs, 1);
	dnp_regcache_put(c, g);
}

/* The unregistrations a teardown would need: everything the cache still holds. */
static void finish(struct dnp_regcache *c)
{
	struct dnp_regcache_ent *g;
	unsigned n = 0;

	for (g = c->regs; g; g = g->next) {
		assert_true(sb_registered(g->addr, g->len));
		n++;
	}
	assert_int_equal(n, sb_live()); /* no registration leaked or lost */
	dnp_regcache_fini(c);
	assert_null(c->regs);
}

/* -------------------------------------------------------------- tests */

/* An exact range is registered once, shared, and stays registered unused. */
static void test_regcache_hit_shares_one_registration(void **state)
{
	struct dnp_regcache c = mkcache();
	struct dnp_regcache_ent *a, *b;

	(void)state;
	assert_int_equal(dnp_regcache_get(&c, mem[0], RANGE, &a), 0);
	assert_int_equal(dnp_regcache_get(&c, mem[0], RANGE, &b), 0);
	assert_ptr_equal(a, b);
	assert_int_equal(a->refs, 2);
	assert_int_equal(sb_regs, 1);
	assert_true(sb_registered(mem[0], RANGE));
	assert_int_not_equal(a->key, 0);
	dnp_regcache_put(&c, a);
	assert_int_equal(c.ncached, 0); /* still in use */
	dnp_regcache_put(&c, b);
	assert_int_equal(c.ncached, 1);
	assert_int_equal(sb_unregs, 0);
	/* a hit: no request to the daemon, same key */
	assert_int_equal(dnp_regcache_get(&c, mem[0], RANGE, &b), 0);
	assert_ptr_equal(b, a);
	assert_int_equal(c.ncached, 0);
	assert_int_equal(sb_regs, 1);
	/* the same address with another length is another range (it overlaps: refused) */
	assert_int_equal(dnp_regcache_get(&c, mem[0], RANGE / 2, &a), -EEXIST);
	assert_ptr_equal(a, b); /* *out untouched on error */
	dnp_regcache_put(&c, b);
	finish(&c);
}

/* Up to DNP_REGCACHE_KEEP unused ranges stay; one more trims the least recently used. */
static void test_regcache_trims_oldest(void **state)
{
	struct dnp_regcache c = mkcache();
	unsigned i;

	(void)state;
	for (i = 0; i < DNP_REGCACHE_KEEP; i++)
		use_once(&c, i);
	assert_int_equal(c.ncached, DNP_REGCACHE_KEEP);
	assert_int_equal(sb_regs, DNP_REGCACHE_KEEP);
	assert_int_equal(sb_unregs, 0);
	/* range 0 used again: now range 1 is the oldest */
	use_once(&c, 0);
	assert_int_equal(sb_regs, DNP_REGCACHE_KEEP);
	use_once(&c, DNP_REGCACHE_KEEP);
	assert_int_equal(c.ncached, DNP_REGCACHE_KEEP);
	assert_int_equal(sb_unregs, 1);
	assert_false(sb_registered(mem[1], RANGE));
	assert_true(sb_registered(mem[0], RANGE));
	/* then 2, then 3 */
	use_once(&c, DNP_REGCACHE_KEEP + 1);
	assert_false(sb_registered(mem[2], RANGE));
	use_once(&c, DNP_REGCACHE_KEEP + 2);
	assert_false(sb_registered(mem[3], RANGE));
	assert_int_equal(sb_unregs, 3);
	assert_int_equal(c.ncached, DNP_REGCACHE_KEEP);
	/* a trimmed range comes back as a new registration */
	use_once(&c, 1);
	assert_int_equal(sb_regs, DNP_REGCACHE_KEEP + 4);
	assert_false(sb_registered(mem[4], RANGE));
	finish(&c);
}

/* A range in use is never trimmed nor evicted, however many ranges come and go. */
static void test_regcache_refs_protect_in_use(void **state)
{
	struct dnp_regcache c = mkcache();
	struct dnp_regcache_ent *held, *g;
	unsigned i;

	(void)state;
	assert_int_equal(dnp_regcache_get(&c, mem[0], RANGE, &held), 0);
	for (i = 1; i < N_RANGES; i++)
		use_once(&c, i);
	assert_int_equal(c.ncached, DNP_REGCACHE_KEEP);
	assert_int_equal(sb_unregs, N_RANGES - 1 - DNP_REGCACHE_KEEP);
	assert_true(sb_registered(mem[0], RANGE));
	assert_int_equal(held->refs, 1);
	/* overlapping a range in use: refused, the range untouched */
	assert_int_equal(dnp_regcache_get(&c, mem[0] + 1, RANGE, &g), -EEXIST);
	assert_true(sb_registered(mem[0], RANGE));
	/* overlapping an unused cached range: that one goes, the new one is registered */
	assert_true(sb_registered(mem[N_RANGES - 1], RANGE));
	assert_int_equal(dnp_regcache_get(&c, mem[N_RANGES - 1] + 8, 16, &g), 0);
	assert_false(sb_registered(mem[N_RANGES - 1], RANGE));
	assert_true(sb_registered(mem[N_RANGES - 1] + 8, 16));
	assert_int_equal(c.ncached, DNP_REGCACHE_KEEP - 1);
	dnp_regcache_put(&c, g);
	dnp_regcache_put(&c, held);
	/* held's release made 17 unused, held the oldest of them (last got first): it went */
	assert_int_equal(c.ncached, DNP_REGCACHE_KEEP);
	assert_false(sb_registered(mem[0], RANGE));
	assert_true(sb_registered(mem[N_RANGES - DNP_REGCACHE_KEEP], RANGE));
	finish(&c);
}

/* A user range overlapping a range in use goes through a private copy, not cached. */
static void test_regcache_overlap_copy(void **state)
{
	struct dnp_regcache c = mkcache();
	struct dnp_regcache_ent *held, *reg = NULL;
	void *copy = (void *)1;
	unsigned i, regs, unregs;

	(void)state;
	for (i = 0; i < 2 * RANGE; i++)
		((uint8_t *)mem)[i] = (uint8_t)(i * 7u + 3u); /* mem[0] and mem[1] */
	assert_int_equal(dnp_regcache_get_user(&c, mem[0], RANGE, true, &held, &copy), 0);
	assert_null(copy); /* no overlap: the range itself */
	regs = sb_regs;
	assert_int_equal(dnp_regcache_get_user(&c, mem[0] + 16, RANGE, true, &reg, &copy), 0);
	assert_non_null(copy);
	assert_non_null(reg);
	assert_ptr_equal(reg->addr, copy);
	assert_int_equal(reg->len, RANGE);
	assert_true(sb_registered(copy, RANGE));
	assert_memory_equal(copy, mem[0] + 16, RANGE); /* copy_in */
	assert_int_equal(sb_regs, regs + 1);
	assert_int_equal(c.ncached, 0);
	unregs = sb_unregs;
	dnp_regcache_put_user(&c, &reg, &copy);
	assert_null(reg);
	assert_null(copy);
	/* unregistered at once, and not counted as an unused range */
	assert_int_equal(sb_unregs, unregs + 1);
	assert_int_equal(c.ncached, 0);
	assert_int_equal(sb_live(), 1);
	/* the user range given back is cached as usual */
	dnp_regcache_put_user(&c, &held, &copy);
	assert_null(held);
	assert_int_equal(c.ncached, 1);
	assert_true(sb_registered(mem[0], RANGE));
	/* nothing to give back */
	dnp_regcache_put_user(&c, &reg, &copy);
	assert_int_equal(c.ncached, 1);
	finish(&c);
}

/*
 * The regression: a private copy released when 16 other unused ranges are
 * cached and the copy is the oldest of all. It must be unregistered exactly
 * once, never trimmed as a cached range (freed under its owner's feet) nor
 * cost a cached range its place.
 */
static void test_regcache_private_copy_released_oldest(void **state)
{
	struct dnp_regcache c = mkcache();
	struct dnp_regcache_ent *held, *reg, *g;
	void *copy = NULL, *held_copy = NULL, *addr;
	unsigned i;

	(void)state;
	assert_int_equal(dnp_regcache_get_user(&c, mem[0], RANGE, true, &held, &held_copy), 0);
	assert_int_equal(dnp_regcache_get_user(&c, mem[0] + 1, RANGE, false, &reg, &copy), 0);
	assert_non_null(copy);
	addr = copy;
	for (i = 1; i <= DNP_REGCACHE_KEEP; i++)
		use_once(&c, i);
	assert_int_equal(c.ncached, DNP_REGCACHE_KEEP);
	assert_int_equal(sb_unregs, 0);
	dnp_regcache_put_user(&c, &reg, &copy);
	assert_null(reg);
	assert_null(copy);
	assert_int_equal(sb_unregs, 1);
	assert_false(sb_registered(addr, RANGE));
	/* the 16 cached ranges are all still there: each is a hit */
	assert_int_equal(c.ncached, DNP_REGCACHE_KEEP);
	for (i = 1; i <= DNP_REGCACHE_KEEP; i++)
		assert_true(sb_registered(mem[i], RANGE));
	i = sb_regs;
	use_once(&c, DNP_REGCACHE_KEEP);
	assert_int_equal(sb_regs, i);
	/* and the range in use still is */
	assert_int_equal(dnp_regcache_get(&c, mem[0], RANGE, &g), 0);
	assert_ptr_equal(g, held);
	assert_int_equal(held->refs, 2);
	dnp_regcache_put(&c, g);
	dnp_regcache_put_user(&c, &held, &held_copy);
	assert_int_equal(c.ncached, DNP_REGCACHE_KEEP);
	assert_int_equal(sb_unregs, 2); /* range 1, the oldest, made room for range 0 */
	assert_false(sb_registered(mem[1], RANGE));
	finish(&c);
}

/* Errors of libdnp come back unchanged; nothing is cached or leaked on the way. */
static void test_regcache_errors(void **state)
{
	struct dnp_regcache c = mkcache();
	struct dnp_regcache_ent *held, *g = (void *)1;
	void *copy = (void *)1;

	(void)state;
	sb_fail = -ENOSPC;
	assert_int_equal(dnp_regcache_get(&c, mem[0], RANGE, &g), -ENOSPC);
	assert_ptr_equal(g, (void *)1);
	assert_null(c.regs);
	sb_fail = -EDQUOT;
	assert_int_equal(dnp_regcache_get_user(&c, mem[0], RANGE, true, &g, &copy), -EDQUOT);
	assert_ptr_equal(copy, (void *)1);
	/* an overlap, then the private copy's own registration refused: no copy left */
	assert_int_equal(dnp_regcache_get(&c, mem[0], RANGE, &held), 0);
	sb_refused = 0;
	sb_fail = -ENOSPC;
	sb_fail_skip = 1;
	assert_int_equal(dnp_regcache_get_user(&c, mem[0] + 1, 8, true, &g, &copy), -ENOSPC);
	assert_int_equal(sb_refused, 2); /* nothing to evict, so no retry of the first */
	assert_ptr_equal(copy, (void *)1);
	assert_int_equal(sb_live(), 1);
	/* the same once libdnp has room */
	assert_int_equal(dnp_regcache_get_user(&c, mem[0] + 1, 8, true, &g, &copy), 0);
	assert_ptr_not_equal(copy, (void *)1);
	assert_int_equal(sb_live(), 2);
	dnp_regcache_put_user(&c, &g, &copy);
	assert_int_equal(sb_live(), 1);
	/* -EEXIST with nothing to evict is asked once */
	sb_refused = 0;
	assert_int_equal(dnp_regcache_get(&c, mem[0] + 2, 8, &g), -EEXIST);
	assert_int_equal(sb_refused, 1);
	dnp_regcache_put(&c, NULL);
	dnp_regcache_put(&c, held);
	assert_int_equal(c.ncached, 1);
	finish(&c);
}

/* fini frees every entry, in use or not, and leaves the daemon's table alone. */
static void test_regcache_fini_frees_without_unregistering(void **state)
{
	struct dnp_regcache c = mkcache();
	struct dnp_regcache_ent *g;

	(void)state;
	use_once(&c, 0);
	use_once(&c, 1);
	assert_int_equal(dnp_regcache_get(&c, mem[2], RANGE, &g), 0);
	dnp_regcache_fini(&c);
	assert_null(c.regs);
	assert_int_equal(c.ncached, 0);
	assert_int_equal(sb_unregs, 0);
	assert_int_equal(sb_live(), 3);
	/* usable again */
	setup(NULL);
	use_once(&c, 0);
	assert_int_equal(c.ncached, 1);
	finish(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_regcache_hit_shares_one_registration, setup),
		cmocka_unit_test_setup(test_regcache_trims_oldest, setup),
		cmocka_unit_test_setup(test_regcache_refs_protect_in_use, setup),
		cmocka_unit_test_setup(test_regcache_overlap_copy, setup),
		cmocka_unit_test_setup(test_regcache_private_copy_released_oldest, setup),
		cmocka_unit_test_setup(test_regcache_errors, setup),
		cmocka_unit_test_setup(test_regcache_fini_frees_without_unregistering, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
