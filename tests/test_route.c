/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for dnp-core/route: known-answer paths, reachability in exactly
 * the torus distance, the channel-dependency-graph proof that dateline VCs are
 * deadlock-free (and that a single VC is not), and the override table.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "route.h"

#define MAX_NODES 64
#define MAX_PATH 64

struct net {
	struct dnp_torus t;
	struct dnp_router r[MAX_NODES]; /* one router per node, indexed by id */
};

/* One hop of a path: the node it leaves, the direction and the VC. */
struct step {
	uint32_t node;
	uint8_t dir, vc;
};

static struct dnp_coord C(unsigned x, unsigned y, unsigned z)
{
	struct dnp_coord c = { (uint8_t)x, (uint8_t)y, (uint8_t)z };

	return c;
}

static struct net *net_new(unsigned x, unsigned y, unsigned z, enum dnp_vc_mode mode)
{
	struct net *n = calloc(1, sizeof(*n));

	assert_non_null(n);
	assert_int_equal(dnp_torus_init(&n->t, x, y, z), 0);
	assert_true(dnp_torus_size(&n->t) <= MAX_NODES);
	for (uint32_t id = 0; id < dnp_torus_size(&n->t); id++)
		assert_int_equal(dnp_route_init(&n->r[id], &n->t, dnp_torus_coord(&n->t, id),
						mode), 0);
	return n;
}

/* Follows next hops from src to dst; returns the hop count, fills p. */
static unsigned walk(const struct net *n, uint32_t src, uint32_t dst, struct step *p)
{
	struct dnp_coord d = dnp_torus_coord(&n->t, dst);
	uint32_t cur = src;
	unsigned in_dir = DNP_DIR_LOCAL, in_vc = 0, hops = 0;

	for (;;) {
		struct dnp_hop h;

		assert_int_equal(dnp_route_next(&n->r[cur], d, in_dir, in_vc, &h), 0);
		if (h.dir == DNP_DIR_LOCAL) {
			assert_int_equal(cur, dst);
			assert_int_equal(h.vc, 0);
			return hops;
		}
		assert_true(h.dir < DNP_NDIRS);
		assert_true(h.vc <= 1);
		assert_true(hops < MAX_PATH);
		p[hops].node = cur;
		p[hops].dir = h.dir;
		p[hops].vc = h.vc;
		hops++;
		cur = dnp_torus_id(&n->t, dnp_torus_neighbour(&n->t, dnp_torus_coord(&n->t, cur),
							       h.dir));
		in_dir = dnp_torus_opposite(h.dir);
		in_vc = h.vc;
	}
}

static void check_path(const struct net *n, struct dnp_coord s, struct dnp_coord d,
		       const struct step *want, unsigned nwant)
{
	struct step got[MAX_PATH];
	unsigned k = walk(n, dnp_torus_id(&n->t, s), dnp_torus_id(&n->t, d), got);

	assert_int_equal(k, nwant);
	for (unsigned i = 0; i < k; i++) {
		assert_int_equal(got[i].node, want[i].node);
		assert_int_equal(got[i].dir, want[i].dir);
		assert_int_equal(got[i].vc, want[i].vc);
	}
}

#define CHECK_PATH(n, s, d, ...)                                                         \
	do {                                                                             \
		static const struct step w_[] = { __VA_ARGS__ };                         \
		check_path(n, s, d, w_, sizeof(w_) / sizeof(w_[0]));                     \
	} while (0)

static void test_route_init_errors(void **state)
{
	struct dnp_torus t;
	struct dnp_router r;
	struct dnp_hop h = { 9, 9 };

	assert_int_equal(dnp_torus_init(&t, 4, 4, 4), 0);
	assert_int_equal(dnp_route_init(&r, &t, C(4, 0, 0), DNP_VC_DATELINE), -EINVAL);
	assert_int_equal(dnp_route_init(&r, &t, C(0, 0, 0), (enum dnp_vc_mode)7), -EINVAL);
	assert_int_equal(dnp_route_init(&r, &t, C(1, 2, 3), DNP_VC_DATELINE), 0);
	for (unsigned d = 0; d < DNP_NDIRS; d++)
		assert_int_equal(r.dir_remap[d], d);
	assert_int_equal(r.n_overrides, 0);
	assert_int_equal(dnp_route_next(&r, C(0, 0, 4), DNP_DIR_LOCAL, 0, &h), -EHOSTUNREACH);
	assert_int_equal(dnp_route_next(&r, C(1, 2, 3), DNP_DIR_XM, 1, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_LOCAL);
	assert_int_equal(h.vc, 0);
}

/* Paths on 4x4x4; node ids are x + 4*(y + 4*z). */
static void test_route_known_paths_4x4x4(void **state)
{
	struct net *n = net_new(4, 4, 4, DNP_VC_DATELINE);

	/* X tie (3->1 is 2 either way) goes +, over the wrap: VC 1 from there on in X,
	 * then Y starts again on VC 0. */
	CHECK_PATH(n, C(3, 0, 0), C(1, 2, 0),
		   { 3, DNP_DIR_XP, 1 }, { 0, DNP_DIR_XP, 1 },
		   { 1, DNP_DIR_YP, 0 }, { 5, DNP_DIR_YP, 0 });
	/* Every dimension entered through its wrap link: VC 1 each time. */
	CHECK_PATH(n, C(0, 0, 0), C(3, 3, 3),
		   { 0, DNP_DIR_XM, 1 }, { 3, DNP_DIR_YM, 1 }, { 15, DNP_DIR_ZM, 1 });
	/* No wrap anywhere: VC 0 throughout; Y tie 1->3 goes +. */
	CHECK_PATH(n, C(1, 1, 1), C(2, 3, 0),
		   { 21, DNP_DIR_XP, 0 }, { 22, DNP_DIR_YP, 0 }, { 26, DNP_DIR_YP, 0 },
		   { 30, DNP_DIR_ZM, 0 });
	/* The dateline in the middle of a dimension: VC 0, then 1 from the wrap. */
	CHECK_PATH(n, C(2, 0, 0), C(0, 0, 0), { 2, DNP_DIR_XP, 0 }, { 3, DNP_DIR_XP, 1 });
	CHECK_PATH(n, C(0, 2, 1), C(0, 0, 3),
		   { 24, DNP_DIR_YP, 0 }, { 28, DNP_DIR_YP, 1 }, { 16, DNP_DIR_ZP, 0 },
		   { 32, DNP_DIR_ZP, 0 });
	free(n);

	/* DNP_VC_SINGLE: the same directions, VC 0 everywhere. */
	n = net_new(4, 4, 4, DNP_VC_SINGLE);
	CHECK_PATH(n, C(3, 0, 0), C(1, 2, 0),
		   { 3, DNP_DIR_XP, 0 }, { 0, DNP_DIR_XP, 0 },
		   { 1, DNP_DIR_YP, 0 }, { 5, DNP_DIR_YP, 0 });
	CHECK_PATH(n, C(0, 0, 0), C(3, 3, 3),
		   { 0, DNP_DIR_XM, 0 }, { 3, DNP_DIR_YM, 0 }, { 15, DNP_DIR_ZM, 0 });
	free(n);
}

static void test_route_known_paths_ring5(void **state)
{
	struct net *n = net_new(5, 1, 1, DNP_VC_DATELINE);

	CHECK_PATH(n, C(3, 0, 0), C(1, 0, 0), { 3, DNP_DIR_XM, 0 }, { 2, DNP_DIR_XM, 0 });
	CHECK_PATH(n, C(4, 0, 0), C(1, 0, 0), { 4, DNP_DIR_XP, 1 }, { 0, DNP_DIR_XP, 1 });
	CHECK_PATH(n, C(1, 0, 0), C(4, 0, 0), { 1, DNP_DIR_XM, 0 }, { 0, DNP_DIR_XM, 1 });
	CHECK_PATH(n, C(0, 0, 0), C(3, 0, 0), { 0, DNP_DIR_XM, 1 }, { 4, DNP_DIR_XM, 1 });
	CHECK_PATH(n, C(3, 0, 0), C(0, 0, 0), { 3, DNP_DIR_XP, 0 }, { 4, DNP_DIR_XP, 1 });
	CHECK_PATH(n, C(0, 0, 0), C(2, 0, 0), { 0, DNP_DIR_XP, 0 }, { 1, DNP_DIR_XP, 0 });
	free(n);
}

static void reach_all(unsigned x, unsigned y, unsigned z, enum dnp_vc_mode mode)
{
	struct net *n = net_new(x, y, z, mode);
	uint32_t size = dnp_torus_size(&n->t);
	struct step p[MAX_PATH];

	for (uint32_t s = 0; s < size; s++)
		for (uint32_t d = 0; d < size; d++) {
			unsigned hops = walk(n, s, d, p);

			assert_int_equal(hops, dnp_torus_distance(&n->t, dnp_torus_coord(&n->t, s),
								  dnp_torus_coord(&n->t, d)));
			/* Dimension order: the dimension index never decreases. */
			for (unsigned i = 1; i < hops; i++)
				assert_true(p[i].dir / 2 >= p[i - 1].dir / 2);
		}
	free(n);
}

static void test_route_reaches_every_dst_in_distance(void **state)
{
	reach_all(4, 4, 4, DNP_VC_DATELINE);
	reach_all(3, 2, 5, DNP_VC_DATELINE);
	reach_all(4, 4, 4, DNP_VC_SINGLE);
	reach_all(2, 2, 2, DNP_VC_DATELINE);
	reach_all(8, 1, 1, DNP_VC_DATELINE);
}

/*
 * Channel dependency graph (Dally & Seitz): a channel is (node, out dir, vc);
 * a route that holds channel a and next asks for channel b adds edge a -> b.
 * Routing is deadlock-free when this graph over all routes is acyclic.
 */
struct cdg {
	unsigned nch;
	uint8_t *edge;  /* nch x nch */
	uint8_t *color; /* 0 white, 1 on stack, 2 done */
};

static unsigned chan(uint32_t node, unsigned dir, unsigned vc)
{
	return (node * DNP_NDIRS + dir) * 2 + vc;
}

static bool dfs_cycle(struct cdg *g, unsigned v)
{
	g->color[v] = 1;
	for (unsigned w = 0; w < g->nch; w++) {
		if (!g->edge[(size_t)v * g->nch + w])
			continue;
		if (g->color[w] == 1)
			return true;
		if (g->color[w] == 0 && dfs_cycle(g, w))
			return true;
	}
	g->color[v] = 2;
	return false;
}

/* Builds the CDG of all routes on x*y*z and returns whether it has a cycle. */
static bool cdg_has_cycle(unsigned x, unsigned y, unsigned z, enum dnp_vc_mode mode,
			  unsigned *n_edges)
{
	struct net *n = net_new(x, y, z, mode);
	uint32_t size = dnp_torus_size(&n->t);
	struct cdg g;
	struct step p[MAX_PATH];
	bool cycle = false;

	g.nch = size * DNP_NDIRS * 2;
	g.edge = calloc((size_t)g.nch * g.nch, 1);
	g.color = calloc(g.nch, 1);
	assert_non_null(g.edge);
	assert_non_null(g.color);
	*n_edges = 0;
	for (uint32_t s = 0; s < size; s++)
		for (uint32_t d = 0; d < size; d++) {
			unsigned hops = walk(n, s, d, p);

			for (unsigned i = 1; i < hops; i++) {
				size_t e = (size_t)chan(p[i - 1].node, p[i - 1].dir, p[i - 1].vc) *
						   g.nch +
					   chan(p[i].node, p[i].dir, p[i].vc);

				*n_edges += !g.edge[e];
				g.edge[e] = 1;
			}
		}
	for (unsigned v = 0; v < g.nch && !cycle; v++)
		if (g.color[v] == 0)
			cycle = dfs_cycle(&g, v);
	free(g.edge);
	free(g.color);
	free(n);
	return cycle;
}

static void test_route_cdg_dateline_acyclic_single_cyclic(void **state)
{
	unsigned e;

	/* 8-node ring. */
	assert_false(cdg_has_cycle(8, 1, 1, DNP_VC_DATELINE, &e));
	assert_true(e > 0);
	assert_true(cdg_has_cycle(8, 1, 1, DNP_VC_SINGLE, &e));
	/* 4x4 torus (Z of 1). */
	assert_false(cdg_has_cycle(4, 4, 1, DNP_VC_DATELINE, &e));
	assert_true(e > 0);
	assert_true(cdg_has_cycle(4, 4, 1, DNP_VC_SINGLE, &e));
	/* Odd ring and a small 3D torus, for good measure. */
	assert_false(cdg_has_cycle(5, 1, 1, DNP_VC_DATELINE, &e));
	assert_true(cdg_has_cycle(5, 1, 1, DNP_VC_SINGLE, &e));
	assert_false(cdg_has_cycle(3, 2, 3, DNP_VC_DATELINE, &e));
}

/* The detector itself: a hand-made cycle must be found, a chain must not. */
static void test_route_cdg_detector(void **state)
{
	uint8_t edge[9] = { 0 }, color[3] = { 0 };
	struct cdg g = { 3, edge, color };

	edge[0 * 3 + 1] = 1;
	edge[1 * 3 + 2] = 1;
	assert_false(dfs_cycle(&g, 0));
	memset(color, 0, sizeof(color));
	edge[2 * 3 + 0] = 1;
	assert_true(dfs_cycle(&g, 0));
}

static void test_route_vc_continuation(void **state)
{
	struct dnp_torus t;
	struct dnp_router r;
	struct dnp_hop h;

	assert_int_equal(dnp_torus_init(&t, 4, 4, 4), 0);
	assert_int_equal(dnp_route_init(&r, &t, C(1, 0, 0), DNP_VC_DATELINE), 0);
	/* Arrived travelling X+ on VC 1 and continuing X+: stays on VC 1. */
	assert_int_equal(dnp_route_next(&r, C(2, 0, 0), DNP_DIR_XM, 1, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_XP);
	assert_int_equal(h.vc, 1);
	/* Same, arrived on VC 0: stays on VC 0. */
	assert_int_equal(dnp_route_next(&r, C(2, 0, 0), DNP_DIR_XM, 0, &h), 0);
	assert_int_equal(h.vc, 0);
	/* Injected locally: VC 0 regardless of in_vc. */
	assert_int_equal(dnp_route_next(&r, C(2, 0, 0), DNP_DIR_LOCAL, 1, &h), 0);
	assert_int_equal(h.vc, 0);
	/* Changing dimension resets to VC 0. */
	assert_int_equal(dnp_route_next(&r, C(1, 1, 0), DNP_DIR_XM, 1, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_YP);
	assert_int_equal(h.vc, 0);
	/* ...unless the first hop in the new dimension is its wrap link. */
	assert_int_equal(dnp_route_next(&r, C(1, 3, 0), DNP_DIR_XP, 0, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_YM);
	assert_int_equal(h.vc, 1);
}

static void test_route_overrides(void **state)
{
	struct dnp_torus t;
	struct dnp_router r;
	struct dnp_hop h;
	uint32_t dst;

	assert_int_equal(dnp_torus_init(&t, 4, 4, 4), 0);
	assert_int_equal(dnp_route_init(&r, &t, C(0, 0, 0), DNP_VC_DATELINE), 0);
	dst = dnp_torus_id(&t, C(2, 0, 0));

	assert_int_equal(dnp_route_next(&r, C(2, 0, 0), DNP_DIR_LOCAL, 0, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_XP);
	assert_int_equal(h.vc, 0);

	assert_int_equal(dnp_route_set_override(&r, dst, DNP_DIR_YP), 0);
	assert_int_equal(dnp_route_next(&r, C(2, 0, 0), DNP_DIR_LOCAL, 0, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_YP);
	assert_int_equal(h.vc, 0);
	/* Other destinations unaffected. */
	assert_int_equal(dnp_route_next(&r, C(1, 0, 0), DNP_DIR_LOCAL, 0, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_XP);

	/* Replacing the entry; the VC is recomputed: Y- from y=0 is the wrap link. */
	assert_int_equal(dnp_route_set_override(&r, dst, DNP_DIR_YM), 0);
	assert_int_equal(r.n_overrides, 1);
	assert_int_equal(dnp_route_next(&r, C(2, 0, 0), DNP_DIR_LOCAL, 0, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_YM);
	assert_int_equal(h.vc, 1);

	assert_int_equal(dnp_route_clear_override(&r, dst), 0);
	assert_int_equal(r.n_overrides, 0);
	assert_int_equal(dnp_route_clear_override(&r, dst), -ENOENT);
	assert_int_equal(dnp_route_next(&r, C(2, 0, 0), DNP_DIR_LOCAL, 0, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_XP);

	assert_int_equal(dnp_route_set_override(&r, 64, DNP_DIR_XP), -EINVAL);
	assert_int_equal(dnp_route_set_override(&r, 1, DNP_DIR_LOCAL), -EINVAL);
	assert_int_equal(dnp_route_set_override(&r, 1, 99), -EINVAL);
	assert_int_equal(r.n_overrides, 0);
}

static void test_route_override_table_sorted_and_full(void **state)
{
	struct dnp_torus t;
	struct dnp_router r;
	struct dnp_hop h;

	assert_int_equal(dnp_torus_init(&t, 8, 8, 8), 0);
	assert_int_equal(dnp_route_init(&r, &t, C(0, 0, 0), DNP_VC_DATELINE), 0);
	/* 64 entries inserted in a scrambled order (37 is coprime with 64). */
	for (uint32_t i = 0; i < DNP_ROUTE_MAX_OVERRIDES; i++) {
		uint32_t id = 1 + ((i * 37) % 64) * 7;

		assert_int_equal(dnp_route_set_override(&r, id, (id % 6)), 0);
	}
	assert_int_equal(r.n_overrides, DNP_ROUTE_MAX_OVERRIDES);
	for (uint32_t i = 1; i < r.n_overrides; i++)
		assert_true(r.overrides[i - 1].dst_id < r.overrides[i].dst_id);
	assert_int_equal(dnp_route_set_override(&r, 2, DNP_DIR_XP), -ENOSPC);
	/* Replacing an existing entry still works when full. */
	assert_int_equal(dnp_route_set_override(&r, 8, DNP_DIR_ZM), 0);
	for (uint32_t i = 0; i < DNP_ROUTE_MAX_OVERRIDES; i++) {
		uint32_t id = 1 + i * 7;

		assert_int_equal(dnp_route_next(&r, dnp_torus_coord(&t, id), DNP_DIR_LOCAL, 0, &h),
				 0);
		assert_int_equal(h.dir, id == 8 ? DNP_DIR_ZM : id % 6);
	}
	/* Clear from the middle keeps the rest sorted and found. */
	assert_int_equal(dnp_route_clear_override(&r, 1 + 30 * 7), 0);
	assert_int_equal(dnp_route_clear_override(&r, 1 + 30 * 7), -ENOENT);
	assert_int_equal(dnp_route_set_override(&r, 2, DNP_DIR_YM), 0);
	for (uint32_t i = 1; i < r.n_overrides; i++)
		assert_true(r.overrides[i - 1].dst_id < r.overrides[i].dst_id);
	assert_int_equal(dnp_route_next(&r, dnp_torus_coord(&t, 2), DNP_DIR_LOCAL, 0, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_YM);
	for (uint32_t i = 0; i < DNP_ROUTE_MAX_OVERRIDES; i++)
		(void)dnp_route_clear_override(&r, 1 + i * 7);
	assert_int_equal(dnp_route_clear_override(&r, 2), 0);
	assert_int_equal(r.n_overrides, 0);
}

static void test_route_remap_dir(void **state)
{
	struct dnp_torus t;
	struct dnp_router r;
	struct dnp_hop h;

	assert_int_equal(dnp_torus_init(&t, 4, 4, 4), 0);
	assert_int_equal(dnp_route_init(&r, &t, C(3, 0, 0), DNP_VC_DATELINE), 0);
	/* Normally X+ over the wrap link, VC 1. */
	assert_int_equal(dnp_route_next(&r, C(0, 0, 0), DNP_DIR_LOCAL, 0, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_XP);
	assert_int_equal(h.vc, 1);
	/* Steer X+ traffic to Y+: the VC follows the new hop (not a wrap: 0). */
	assert_int_equal(dnp_route_remap_dir(&r, DNP_DIR_XP, DNP_DIR_YP), 0);
	assert_int_equal(dnp_route_next(&r, C(0, 0, 0), DNP_DIR_LOCAL, 0, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_YP);
	assert_int_equal(h.vc, 0);
	/* Arrived on VC 1 in X, leaves in Y: a dimension change, VC 0. */
	assert_int_equal(dnp_route_next(&r, C(0, 0, 0), DNP_DIR_XM, 1, &h), 0);
	assert_int_equal(h.vc, 0);
	/* Other directions untouched. */
	assert_int_equal(dnp_route_next(&r, C(2, 0, 0), DNP_DIR_LOCAL, 0, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_XM);
	/* Remap to Y-: from y=0 that is the wrap link, VC 1. */
	assert_int_equal(dnp_route_remap_dir(&r, DNP_DIR_XP, DNP_DIR_YM), 0);
	assert_int_equal(dnp_route_next(&r, C(0, 0, 0), DNP_DIR_LOCAL, 0, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_YM);
	assert_int_equal(h.vc, 1);
	/* A per-destination entry is explicit and is not remapped again. */
	assert_int_equal(dnp_route_set_override(&r, 0, DNP_DIR_XP), 0);
	assert_int_equal(dnp_route_next(&r, C(0, 0, 0), DNP_DIR_LOCAL, 0, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_XP);
	assert_int_equal(h.vc, 1);
	assert_int_equal(dnp_route_clear_override(&r, 0), 0);
	/* to == from restores. */
	assert_int_equal(dnp_route_remap_dir(&r, DNP_DIR_XP, DNP_DIR_XP), 0);
	assert_int_equal(dnp_route_next(&r, C(0, 0, 0), DNP_DIR_LOCAL, 0, &h), 0);
	assert_int_equal(h.dir, DNP_DIR_XP);
	assert_int_equal(h.vc, 1);
	assert_int_equal(dnp_route_remap_dir(&r, DNP_DIR_LOCAL, DNP_DIR_XP), -EINVAL);
	assert_int_equal(dnp_route_remap_dir(&r, DNP_DIR_XP, DNP_DIR_LOCAL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route_init_errors),
		cmocka_unit_test(test_route_known_paths_4x4x4),
		cmocka_unit_test(test_route_known_paths_ring5),
		cmocka_unit_test(test_route_reaches_every_dst_in_distance),
		cmocka_unit_test(test_route_cdg_detector),
		cmocka_unit_test(test_route_cdg_dateline_acyclic_single_cyclic),
		cmocka_unit_test(test_route_vc_continuation),
		cmocka_unit_test(test_route_overrides),
		cmocka_unit_test(test_route_override_table_sorted_and_full),
		cmocka_unit_test(test_route_remap_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
