/* SPDX-License-Identifier: MIT */
/*
 * coll_ref.h — the reference of the collectives' checks, shared by dnp_coll
 * (apps/dnp_coll.c, on real daemons) and the engine's unit test
 * (tests/test_coll.c): element i of rank r's source is coll_ref_val(r, i,
 * salt), small integers, so that every sum, float and double included, is
 * exact in any order; the expected result of a reduction over n ranks is
 * coll_ref_elem.
 */
#ifndef DNP_COLL_REF_H
#define DNP_COLL_REF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dnp_abi.h" /* DNP_TYPE_*, DNP_RED_* */

/* Element i of rank r's source, in -1000..1000. */
static inline int64_t coll_ref_val(unsigned r, size_t i, unsigned salt)
{
	return (int64_t)((r * 7919u + i * 104729u + salt * 31u) % 2001u) - 1000;
}

/* Bytes of an element of type t. */
static inline size_t coll_ref_esize(unsigned t)
{
	return t == DNP_TYPE_INT32 || t == DNP_TYPE_FLOAT ? 4 : 8;
}

/* Writes v as an element of type t at p (floats: v / 2, doubles: v / 4, both exact). */
static inline void coll_ref_put(uint8_t *p, unsigned t, int64_t v)
{
	int32_t i32 = (int32_t)v;
	float f = (float)v * 0.5f;
	double d = (double)v * 0.25;

	if (t == DNP_TYPE_INT32)
		memcpy(p, &i32, 4);
	else if (t == DNP_TYPE_INT64)
		memcpy(p, &v, 8);
	else if (t == DNP_TYPE_FLOAT)
		memcpy(p, &f, 4);
	else
		memcpy(p, &d, 8);
}

/* Element i of the reduction op over ranks 0..n-1, reduced in rank order. */
static inline int64_t coll_ref_elem(unsigned op, unsigned n, size_t i, unsigned salt)
{
	int64_t acc = coll_ref_val(0, i, salt);

	for (unsigned r = 1; r < n; r++) {
		int64_t v = coll_ref_val(r, i, salt);

		acc = op == DNP_RED_SUM  ? acc + v :
		      op == DNP_RED_MIN  ? (v < acc ? v : acc) :
		      op == DNP_RED_MAX  ? (v > acc ? v : acc) :
		      op == DNP_RED_BAND ? (acc & v) :
					   (acc | v);
	}
	return acc;
}

#endif /* DNP_COLL_REF_H */
