/* SPDX-License-Identifier: MIT */
/*
 * torus — geometry of the X x Y x Z torus (see torus.h for the contract).
 *
 * APEnet+ nodes sit on a 3D torus, each linked to its six neighbours (APEnet
 * v5 paper, the DNP). Everything here is a pure function of small values.
 */
#include <errno.h>
#include <stddef.h>

#include "torus.h"

static bool dim_ok(unsigned n)
{
	return n >= 1 && n <= DNP_TORUS_MAX_DIM;
}

int dnp_torus_init(struct dnp_torus *t, unsigned x, unsigned y, unsigned z)
{
	if (!dim_ok(x) || !dim_ok(y) || !dim_ok(z))
		return -EINVAL;
	t->dim[0] = (uint16_t)x;
	t->dim[1] = (uint16_t)y;
	t->dim[2] = (uint16_t)z;
	return 0;
}

struct dnp_coord dnp_torus_coord(const struct dnp_torus *t, uint32_t id)
{
	struct dnp_coord c;

	c.x = (uint8_t)(id % t->dim[0]);
	id /= t->dim[0];
	c.y = (uint8_t)(id % t->dim[1]);
	id /= t->dim[1];
	c.z = (uint8_t)id;
	return c;
}

/* One step around a ring of n, wrapping at both ends. */
static uint8_t ring_step(unsigned n, uint8_t v, bool plus)
{
	if (plus)
		return (uint8_t)(v + 1u >= n ? 0 : v + 1u);
	return (uint8_t)(v == 0 ? n - 1u : v - 1u);
}

struct dnp_coord dnp_torus_neighbour(const struct dnp_torus *t, struct dnp_coord c, enum dnp_dir d)
{
	bool plus = (d & 1u) == 0;

	switch (d) {
	case DNP_DIR_XP:
	case DNP_DIR_XM:
		c.x = ring_step(t->dim[0], c.x, plus);
		break;
	case DNP_DIR_YP:
	case DNP_DIR_YM:
		c.y = ring_step(t->dim[1], c.y, plus);
		break;
	case DNP_DIR_ZP:
	case DNP_DIR_ZM:
		c.z = ring_step(t->dim[2], c.z, plus);
		break;
	default: /* DNP_DIR_LOCAL: the node itself */
		break;
	}
	return c;
}

static unsigned iabs(int v)
{
	return v < 0 ? (unsigned)-v : (unsigned)v;
}

unsigned dnp_torus_distance(const struct dnp_torus *t, struct dnp_coord a, struct dnp_coord b)
{
	return iabs(dnp_torus_ring_delta(t->dim[0], a.x, b.x)) +
	       iabs(dnp_torus_ring_delta(t->dim[1], a.y, b.y)) +
	       iabs(dnp_torus_ring_delta(t->dim[2], a.z, b.z));
}

/*
 * Reads a decimal number of at most 4 digits (enough for 256, small enough
 * never to overflow); no sign, no blanks: strtoul would accept both.
 */
static const char *parse_num(const char *s, unsigned *v)
{
	unsigned n = 0, digits = 0;

	while (*s >= '0' && *s <= '9') {
		if (++digits > 4)
			return NULL;
		n = n * 10 + (unsigned)(*s - '0');
		s++;
	}
	if (digits == 0)
		return NULL;
	*v = n;
	return s;
}

/* Parses "A<sep>B<sep>C" into v[3]; false on any syntax error. */
static bool parse_triple(const char *s, char sep, unsigned v[3])
{
	for (int i = 0; i < 3; i++) {
		if (!s)
			return false;
		s = parse_num(s, &v[i]);
		if (!s)
			return false;
		if (i < 2) {
			if (*s != sep)
				return false;
			s++;
		}
	}
	return *s == '\0';
}

int dnp_torus_parse(const char *s, struct dnp_torus *t)
{
	unsigned v[3];

	if (!s || !t || !parse_triple(s, 'x', v))
		return -EINVAL;
	return dnp_torus_init(t, v[0], v[1], v[2]);
}

int dnp_coord_parse(const char *s, const struct dnp_torus *t, struct dnp_coord *c)
{
	unsigned v[3];
	struct dnp_coord r;

	if (!s || !c || !parse_triple(s, ',', v))
		return -EINVAL;
	if (v[0] >= DNP_TORUS_MAX_DIM || v[1] >= DNP_TORUS_MAX_DIM || v[2] >= DNP_TORUS_MAX_DIM)
		return -ERANGE;
	r.x = (uint8_t)v[0];
	r.y = (uint8_t)v[1];
	r.z = (uint8_t)v[2];
	if (t && !dnp_torus_contains(t, r))
		return -ERANGE;
	*c = r;
	return 0;
}
