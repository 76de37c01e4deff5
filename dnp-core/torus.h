/* SPDX-License-Identifier: MIT */
/*
 * torus — the geometry of an X x Y x Z torus (each dimension 1..256).
 *
 * Node ids are x + X*(y + Y*z). Directions are numbered X+, X-, Y+, Y-, Z+, Z-
 * (0..5); DNP_DIR_LOCAL (6) names the node's own network interface.
 * Pure functions over a small value type: no allocation, callable from any thread.
 */
#ifndef DNP_TORUS_H
#define DNP_TORUS_H

#include <stdbool.h>
#include <stdint.h>

enum dnp_dir {
	DNP_DIR_XP = 0,
	DNP_DIR_XM = 1,
	DNP_DIR_YP = 2,
	DNP_DIR_YM = 3,
	DNP_DIR_ZP = 4,
	DNP_DIR_ZM = 5,
	DNP_NDIRS = 6,
	DNP_DIR_LOCAL = 6,
};

#define DNP_TORUS_MAX_DIM 256

struct dnp_coord {
	uint8_t x, y, z;
};

struct dnp_torus {
	uint16_t dim[3]; /* 1..256 each */
};

/* Errors: -EINVAL if a dimension is 0 or above 256. */
int dnp_torus_init(struct dnp_torus *t, unsigned x, unsigned y, unsigned z);
/*
 * The small queries the per-packet path asks several times per packet are
 * inline here (no call, and the compiler sees through them).
 */
static inline uint32_t dnp_torus_size(const struct dnp_torus *t)
{
	return (uint32_t)t->dim[0] * t->dim[1] * t->dim[2];
}

static inline bool dnp_torus_contains(const struct dnp_torus *t, struct dnp_coord c)
{
	return c.x < t->dim[0] && c.y < t->dim[1] && c.z < t->dim[2];
}

static inline uint32_t dnp_torus_id(const struct dnp_torus *t, struct dnp_coord c)
{
	return c.x + (uint32_t)t->dim[0] * (c.y + (uint32_t)t->dim[1] * c.z);
}
/* id must be < size. */
struct dnp_coord dnp_torus_coord(const struct dnp_torus *t, uint32_t id);
struct dnp_coord dnp_torus_neighbour(const struct dnp_torus *t, struct dnp_coord c, enum dnp_dir d);
/* The direction a frame arrives from when it was sent towards d (X+ <-> X-). */
static inline enum dnp_dir dnp_torus_opposite(enum dnp_dir d)
{
	if ((unsigned)d >= DNP_NDIRS)
		return DNP_DIR_LOCAL;
	return (enum dnp_dir)((unsigned)d ^ 1u);
}
/*
 * Minimal signed offset from 'from' to 'to' on a ring of 'n' nodes; when both
 * ways are equally short (n even, distance n/2) the positive way is chosen.
 */
static inline int dnp_torus_ring_delta(unsigned n, unsigned from, unsigned to)
{
	unsigned fwd;

	if (n == 0)
		return 0;
	if (from >= n || to >= n) { /* coordinates are normally in range: no division then */
		from %= n;
		to %= n;
	}
	fwd = to >= from ? to - from : to + n - from;
	/* 2*fwd == n is the tie: the + way wins, so the rule is deterministic. */
	if (2 * fwd <= n)
		return (int)fwd;
	return (int)fwd - (int)n;
}
/* Shortest-path hop count between a and b (sum of |ring_delta| per dimension). */
unsigned dnp_torus_distance(const struct dnp_torus *t, struct dnp_coord a, struct dnp_coord b);
static inline bool dnp_coord_eq(struct dnp_coord a, struct dnp_coord b)
{
	return a.x == b.x && a.y == b.y && a.z == b.z;
}
/* Parses "XxYxZ" (e.g. "2x2x2"); -EINVAL on anything else. */
int dnp_torus_parse(const char *s, struct dnp_torus *t);
/* Parses "X,Y,Z"; -EINVAL on syntax, -ERANGE if outside t (t may be NULL). */
int dnp_coord_parse(const char *s, const struct dnp_torus *t, struct dnp_coord *c);

#endif
