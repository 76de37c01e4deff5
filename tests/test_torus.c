/* SPDX-License-Identifier: MIT */
/* Unit tests for dnp-core/torus: ids, ring distances, neighbours, parsing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "torus.h"

static struct dnp_coord C(unsigned x, unsigned y, unsigned z) {
	struct dnp_coord c = { (uint8_t)x, (uint8_t)y, (uint8_t)z };

	return c;
}

static void
assert_coord(struct dnp_coord c, unsigned x, unsigned y, unsigned z)
{
	assert_int_equal(c.x, x);
	assert_int_equal(c.y, y);
	assert_int_equal(c.z, z);
}

static void test_torus_init_limits(void **state)
{
	struct dnp_torus t;

	assert_int_equal(dnp_torus_init(&t, 0, 1, 1), -EINVAL);
	assert_int_equal(dnp_torus_init(&t, 1, 0, 1), -EINVAL);
	assert_int_equal(dnp_torus_init(&t, 1, 1, 0), -EINVAL);
	assert_int_equal(dnp_torus_init(&t, 257, 1, 1), -EINVAL);
	assert_int_equal(dnp_torus_init(&t, 1, 1, 257), -EINVAL);
	assert_int_equal(dnp_torus_init(&t, 256, 256, 256), 0);
	assert_int_equal(dnp_torus_size(&t), 256u * 256u * 256u);
	assert_int_equal(dnp_torus_id(&t, C(255, 255, 255)), 256u * 256u * 256u - 1);
	assert_coord(dnp_torus_coord(&t, 256u * 256u * 256u - 1), 255, 255, 255);
}

/* Known answers: id = x + X*(y + Y*z), both ways (id of coordinates, coordinates of id). */
static void test_torus_ids_known_answers(void **state)
{
	static const struct {
		unsigned dim[3], size;
		struct {
			unsigned x, y, z, id;
		} at[7];
	} cases[] = {
		{ { 4, 4, 4 },
		  64,
		  { { 0, 0, 0, 0 },
		    { 1, 0, 0, 1 },
		    { 0, 1, 0, 4 },
		    { 0, 0, 1, 16 },
		    { 1, 2, 3, 57 },
		    { 2, 1, 1, 22 },
		    { 3, 3, 3, 63 } } },
		{ { 3, 2, 5 },
		  30,
		  { { 1, 0, 0, 1 },
		    { 0, 1, 0, 3 },
		    { 0, 0, 1, 6 },
		    { 1, 0, 2, 13 },
		    { 2, 1, 2, 17 },
		    { 2, 1, 4, 29 },
		    { 0, 0, 0, 0 } } },
	};
	struct dnp_torus t;

	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		assert_int_equal(
			dnp_torus_init(&t, cases[k].dim[0], cases[k].dim[1], cases[k].dim[2]), 0);
		assert_int_equal(dnp_torus_size(&t), cases[k].size);
		for (unsigned i = 0; i < sizeof(cases[k].at) / sizeof(cases[k].at[0]); i++) {
			unsigned x = cases[k].at[i].x, y = cases[k].at[i].y, z = cases[k].at[i].z;

			assert_int_equal(dnp_torus_id(&t, C(x, y, z)), cases[k].at[i].id);
			assert_coord(dnp_torus_coord(&t, cases[k].at[i].id), x, y, z);
		}
	}
	/* t is the 3x2x5 torus */
	assert_true(dnp_torus_contains(&t, C(2, 1, 4)));
	assert_false(dnp_torus_contains(&t, C(3, 0, 0)));
	assert_false(dnp_torus_contains(&t, C(0, 2, 0)));
	assert_false(dnp_torus_contains(&t, C(0, 0, 5)));
}

static void test_torus_id_roundtrip(void **state)
{
	static const unsigned dims[][3] = { { 4, 4, 4 }, { 3, 2, 5 }, { 1, 7, 2 } };

	for (unsigned k = 0; k < 3; k++) {
		struct dnp_torus t;
		uint32_t next = 0;

		assert_int_equal(dnp_torus_init(&t, dims[k][0], dims[k][1], dims[k][2]), 0);
		/* x varies fastest, then y, then z. */
		for (unsigned z = 0; z < dims[k][2]; z++)
			for (unsigned y = 0; y < dims[k][1]; y++)
				for (unsigned x = 0; x < dims[k][0]; x++) {
					assert_int_equal(dnp_torus_id(&t, C(x, y, z)), next);
					assert_coord(dnp_torus_coord(&t, next), x, y, z);
					next++;
				}
		assert_int_equal(next, dnp_torus_size(&t));
	}
}

/* ring_delta[from][to] on rings of 5 and 4; on 4 the distance-2 ties go +. */
static void test_torus_ring_delta_tables(void **state)
{
	static const int r5[5][5] = {
		{ 0, 1, 2, -2, -1 }, { -1, 0, 1, 2, -2 }, { -2, -1, 0, 1, 2 },
		{ 2, -2, -1, 0, 1 }, { 1, 2, -2, -1, 0 },
	};
	static const int r4[4][4] = {
		{ 0, 1, 2, -1 },
		{ -1, 0, 1, 2 },
		{ 2, -1, 0, 1 },
		{ 1, 2, -1, 0 },
	};

	for (unsigned f = 0; f < 5; f++)
		for (unsigned t = 0; t < 5; t++)
			assert_int_equal(dnp_torus_ring_delta(5, f, t), r5[f][t]);
	for (unsigned f = 0; f < 4; f++)
		for (unsigned t = 0; t < 4; t++)
			assert_int_equal(dnp_torus_ring_delta(4, f, t), r4[f][t]);
	assert_int_equal(dnp_torus_ring_delta(1, 0, 0), 0);
	assert_int_equal(dnp_torus_ring_delta(2, 0, 1), 1);
	assert_int_equal(dnp_torus_ring_delta(2, 1, 0), 1); /* tie: + way */
	assert_int_equal(dnp_torus_ring_delta(256, 0, 128), 128);
	assert_int_equal(dnp_torus_ring_delta(256, 0, 129), -127);
	assert_int_equal(dnp_torus_ring_delta(256, 255, 0), 1);
}

static void test_torus_distance(void **state)
{
	struct dnp_torus t;

	assert_int_equal(dnp_torus_init(&t, 4, 4, 4), 0);
	assert_int_equal(dnp_torus_distance(&t, C(0, 0, 0), C(0, 0, 0)), 0);
	assert_int_equal(dnp_torus_distance(&t, C(0, 0, 0), C(2, 3, 1)), 4);
	assert_int_equal(dnp_torus_distance(&t, C(0, 0, 0), C(2, 2, 2)), 6);
	assert_int_equal(dnp_torus_distance(&t, C(3, 3, 3), C(0, 0, 0)), 3);
	assert_int_equal(dnp_torus_init(&t, 3, 2, 5), 0);
	assert_int_equal(dnp_torus_distance(&t, C(0, 0, 0), C(2, 1, 3)), 1 + 1 + 2);
	assert_int_equal(dnp_torus_distance(&t, C(2, 1, 4), C(0, 0, 0)), 1 + 1 + 1);
	/* Symmetric and bounded by the sum of the half-rings. */
	for (uint32_t a = 0; a < 30; a++)
		for (uint32_t b = 0; b < 30; b++) {
			struct dnp_coord ca = dnp_torus_coord(&t, a), cb = dnp_torus_coord(&t, b);
			unsigned d = dnp_torus_distance(&t, ca, cb);

			assert_int_equal(d, dnp_torus_distance(&t, cb, ca));
			assert_true(d <= 1 + 1 + 2);
			assert_int_equal(d == 0, a == b);
		}
}

static void test_torus_neighbours_wrap(void **state)
{
	struct dnp_torus t;
	struct dnp_coord c = C(3, 0, 2);

	assert_int_equal(dnp_torus_init(&t, 4, 4, 4), 0);
	assert_coord(dnp_torus_neighbour(&t, c, DNP_DIR_XP), 0, 0, 2);
	assert_coord(dnp_torus_neighbour(&t, c, DNP_DIR_XM), 2, 0, 2);
	assert_coord(dnp_torus_neighbour(&t, c, DNP_DIR_YP), 3, 1, 2);
	assert_coord(dnp_torus_neighbour(&t, c, DNP_DIR_YM), 3, 3, 2);
	assert_coord(dnp_torus_neighbour(&t, c, DNP_DIR_ZP), 3, 0, 3);
	assert_coord(dnp_torus_neighbour(&t, c, DNP_DIR_ZM), 3, 0, 1);
	assert_coord(dnp_torus_neighbour(&t, c, DNP_DIR_LOCAL), 3, 0, 2);
	assert_coord(dnp_torus_neighbour(&t, C(0, 3, 3), DNP_DIR_XM), 3, 3, 3);
	assert_coord(dnp_torus_neighbour(&t, C(0, 3, 3), DNP_DIR_YP), 0, 0, 3);
	assert_coord(dnp_torus_neighbour(&t, C(0, 3, 3), DNP_DIR_ZP), 0, 3, 0);

	/* A dimension of 1 is a ring of one: the neighbour is the node itself. */
	assert_int_equal(dnp_torus_init(&t, 3, 1, 2), 0);
	assert_coord(dnp_torus_neighbour(&t, C(2, 0, 1), DNP_DIR_YP), 2, 0, 1);
	assert_coord(dnp_torus_neighbour(&t, C(2, 0, 1), DNP_DIR_YM), 2, 0, 1);
	assert_coord(dnp_torus_neighbour(&t, C(2, 0, 1), DNP_DIR_XP), 0, 0, 1);
	assert_coord(dnp_torus_neighbour(&t, C(2, 0, 1), DNP_DIR_ZP), 2, 0, 0);

	/* Every hop and its opposite lead back, everywhere on a 3x2x5 torus. */
	assert_int_equal(dnp_torus_init(&t, 3, 2, 5), 0);
	for (uint32_t id = 0; id < dnp_torus_size(&t); id++) {
		struct dnp_coord a = dnp_torus_coord(&t, id);

		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			struct dnp_coord b = dnp_torus_neighbour(&t, a, d);

			assert_true(dnp_torus_contains(&t, b));
			assert_int_equal(dnp_torus_distance(&t, a, b), 1);
			assert_true(
				dnp_coord_eq(dnp_torus_neighbour(&t, b, dnp_torus_opposite(d)), a));
		}
	}
}

static void test_torus_opposite(void **state)
{
	assert_int_equal(dnp_torus_opposite(DNP_DIR_XP), DNP_DIR_XM);
	assert_int_equal(dnp_torus_opposite(DNP_DIR_XM), DNP_DIR_XP);
	assert_int_equal(dnp_torus_opposite(DNP_DIR_YP), DNP_DIR_YM);
	assert_int_equal(dnp_torus_opposite(DNP_DIR_YM), DNP_DIR_YP);
	assert_int_equal(dnp_torus_opposite(DNP_DIR_ZP), DNP_DIR_ZM);
	assert_int_equal(dnp_torus_opposite(DNP_DIR_ZM), DNP_DIR_ZP);
	assert_int_equal(dnp_torus_opposite(DNP_DIR_LOCAL), DNP_DIR_LOCAL);
}

static void test_torus_parse(void **state)
{
	static const char *const bad[] = {
		"",        "2",         "2x2",    "2x2x",    "x2x2",    "2x2x2x2", "2x2x2 ",
		" 2x2x2",  "-2x2x2",    "+2x2x2", "2X2X2",   "2,2,2",   "0x2x2",   "2x0x2",
		"257x1x1", "99999x1x1", "2xx2x2", "2x2x2\n", "2.0x2x2",
	};
	struct dnp_torus t = { { 9, 9, 9 } };

	assert_int_equal(dnp_torus_parse("2x2x2", &t), 0);
	assert_int_equal(t.dim[0], 2);
	assert_int_equal(t.dim[1], 2);
	assert_int_equal(t.dim[2], 2);
	assert_int_equal(dnp_torus_parse("3x2x5", &t), 0);
	assert_int_equal(t.dim[0], 3);
	assert_int_equal(t.dim[1], 2);
	assert_int_equal(t.dim[2], 5);
	assert_int_equal(dnp_torus_parse("256x1x016", &t), 0);
	assert_int_equal(t.dim[0], 256);
	assert_int_equal(t.dim[2], 16);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct dnp_torus u = { { 7, 7, 7 } };

		assert_int_equal(dnp_torus_parse(bad[i], &u), -EINVAL);
		assert_int_equal(u.dim[0], 7); /* untouched on error */
	}
	assert_int_equal(dnp_torus_parse(NULL, &t), -EINVAL);
}

static void test_torus_coord_parse(void **state)
{
	static const char *const bad[] = {
		"",      "1",     "1,0",    "1,0,",   ",0,1",   "1,0,1,", "1,0,1,2",   "a,b,c",
		"1;0;1", "1x0x1", " 1,0,1", "1,0,1 ", "-1,0,0", "1,,1",   "10000,0,0",
	};
	struct dnp_torus t;
	struct dnp_coord c;

	assert_int_equal(dnp_torus_init(&t, 2, 2, 2), 0);
	assert_int_equal(dnp_coord_parse("1,0,1", &t, &c), 0);
	assert_coord(c, 1, 0, 1);
	assert_int_equal(dnp_coord_parse("0,1,0", NULL, &c), 0);
	assert_coord(c, 0, 1, 0);
	assert_int_equal(dnp_coord_parse("255,255,255", NULL, &c), 0);
	assert_coord(c, 255, 255, 255);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(dnp_coord_parse(bad[i], &t, &c), -EINVAL);
	c = C(9, 9, 9);
	assert_int_equal(dnp_coord_parse("2,0,0", &t, &c), -ERANGE);
	assert_int_equal(dnp_coord_parse("0,0,2", &t, &c), -ERANGE);
	assert_int_equal(dnp_coord_parse("256,0,0", NULL, &c), -ERANGE);
	assert_coord(c, 9, 9, 9); /* untouched on error */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_torus_init_limits),
		cmocka_unit_test(test_torus_ids_known_answers),
		cmocka_unit_test(test_torus_id_roundtrip),
		cmocka_unit_test(test_torus_ring_delta_tables),
		cmocka_unit_test(test_torus_distance),
		cmocka_unit_test(test_torus_neighbours_wrap),
		cmocka_unit_test(test_torus_opposite),
		cmocka_unit_test(test_torus_parse),
		cmocka_unit_test(test_torus_coord_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
