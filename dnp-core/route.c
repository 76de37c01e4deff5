/* SPDX-License-Identifier: MIT */
/*
 * route — dimension-ordered next hop with dateline virtual channels (route.h).
 *
 * The DNP router applies "a dimension-ordered routing policy with Virtual
 * Cut-Through" (APEnet v5 paper, the DNP) and gives each of the 6 channels
 * two receive FIFOs "to ensure a deadlock free routing (virtual-channel)"
 * (EURETILE report, torus link bandwidth and latency). Dimension order alone
 * removes cycles between dimensions; inside a ring the wrap-around link
 * closes a cycle, which the dateline breaks: a packet switches to VC 1 when
 * it crosses the wrap link and stays there until it leaves the dimension, so
 * VC 0 never uses the wrap link and VC 1 never gets back to it (a minimal
 * path is shorter than the ring).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "route.h"

int dnp_route_init(struct dnp_router *r, const struct dnp_torus *t, struct dnp_coord self,
		   enum dnp_vc_mode vc_mode)
{
	if (!dnp_torus_contains(t, self))
		return -EINVAL;
	if (vc_mode != DNP_VC_DATELINE && vc_mode != DNP_VC_SINGLE)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->torus = *t;
	r->self = self;
	r->vc_mode = vc_mode;
	r->nvc = 2;
	r->gen = 1;
	r->ver = 1;
	return 0;
}

/* Something dnp_route_step depends on changed (struct dnp_router.ver). */
static void ver_bump(struct dnp_router *r)
{
	if (++r->ver == 0)
		r->ver = 1;
}

static unsigned coord_k(struct dnp_coord c, unsigned k)
{
	return k == 0 ? c.x : k == 1 ? c.y : c.z;
}

/*
 * Whether going from self along dimension k, the + way if plus, up to
 * coordinate 'to' crosses a known broken cable, or with 'sick' a known broken
 * or sick one. A cable is named by the node its + link leaves: going + from
 * 'from' uses the cables at from .. to-1, going - uses those at to .. from-1
 * (all around the ring).
 */
static bool arc_blocked(const struct dnp_router *r, struct dnp_coord self, unsigned k, bool plus,
			unsigned to, bool sick)
{
	unsigned n = r->torus.dim[k], from = coord_k(self, k);
	unsigned len = plus ? (to + n - from) % n : (from + n - to) % n;

	for (uint32_t i = 0; i < r->n_faults; i++) {
		const struct dnp_route_cable *f = &r->faults[i];
		struct dnp_coord fc;
		unsigned pos, off;
		bool same_ring = true;

		if (f->dim != k || (f->sick && !sick))
			continue;
		fc = dnp_torus_coord(&r->torus, f->node);
		for (unsigned j = 0; j < 3; j++)
			if (j != k && coord_k(fc, j) != coord_k(self, j))
				same_ring = false;
		if (!same_ring)
			continue;
		pos = coord_k(fc, k);
		off = plus ? (pos + n - from) % n : (from + 2 * n - 1 - pos) % n;
		if (off < len)
			return true;
	}
	return false;
}

/*
 * The way round ring k from self to coordinate 'to': the shorter one (ties:
 * +), unless it crosses a known broken cable and the other way does not, or
 * a sick one and the other way is clear of both.
 */
static unsigned choose_dir(const struct dnp_router *r, struct dnp_coord self, unsigned k,
			   unsigned to)
{
	int delta = dnp_torus_ring_delta(r->torus.dim[k], coord_k(self, k), to);
	bool plus = delta > 0;

	if (r->n_faults) {
		bool hard = arc_blocked(r, self, k, plus, to, false);
		bool other_hard = arc_blocked(r, self, k, !plus, to, false);

		if (hard && !other_hard)
			plus = !plus;
		else if (!hard && r->n_sick && arc_blocked(r, self, k, plus, to, true) &&
			 !arc_blocked(r, self, k, !plus, to, true))
			plus = !plus;
	}
	return plus ? 2 * k : 2 * k + 1;
}

int dnp_route_via_coord(const struct dnp_torus *t, struct dnp_coord src, struct dnp_coord dst,
			uint16_t via, struct dnp_coord *out)
{
	struct dnp_coord base;
	uint8_t c[3];

	if (!(via & DNP_VIA_ON)) {
		*out = dst;
		return 0;
	}
	if (via & DNP_VIA_RSVD)
		return -EINVAL;
	base = via & DNP_VIA_REL_DST ? dst : src;
	for (unsigned k = 0; k < 3; k++) {
		int d = (int)((via >> (4 * k)) & 0xfu);
		int n = t->dim[k];

		if (d >= 8)
			d -= 16;
		c[k] = (uint8_t)((((int)coord_k(base, k) + d) % n + n) % n);
	}
	*out = (struct dnp_coord){ c[0], c[1], c[2] };
	return 0;
}

/* The next hop at node 'self' (route.h, dnp_route_step). */
static int hop_at(const struct dnp_router *r, struct dnp_coord self, struct dnp_coord src,
		  struct dnp_coord dst, uint16_t via, unsigned in_dir, unsigned in_vc,
		  struct dnp_hop *out)
{
	bool arrived = in_dir < DNP_NDIRS;
	bool phase2 = arrived && in_vc >= 2;
	bool fresh = !arrived;
	struct dnp_coord t = dst;
	unsigned dir, k, base;

	if (!dnp_torus_contains(&r->torus, dst))
		return -EHOSTUNREACH;
	if (via & DNP_VIA_RSVD)
		return -EINVAL;
	if (phase2 && r->routing == DNP_ROUTING_ADAPTIVE) {
		/* off an adaptive VC: the escape route starts here (no vias then) */
		if (via & DNP_VIA_ON)
			return -EINVAL;
		phase2 = false;
		fresh = true;
	}
	if (phase2 && !(via & DNP_VIA_ON))
		return -EINVAL;
	if ((via & DNP_VIA_ON) && !phase2) {
		struct dnp_coord v;

		if (dnp_route_via_coord(&r->torus, src, dst, via, &v) < 0)
			return -EINVAL;
		if (dnp_coord_eq(self, v)) {
			phase2 = true; /* the via: phase 2 starts here, afresh */
			fresh = true;
		} else {
			t = v;
		}
	}
	if (dnp_coord_eq(t, self)) {
		out->dir = DNP_DIR_LOCAL;
		out->vc = 0;
		return 0;
	}
	/* The first dimension still to correct. */
	for (k = 0; k < 3 && coord_k(self, k) == coord_k(t, k); k++)
		;
	/*
	 * A packet already travelling in dimension k keeps its way round the
	 * ring; one entering k picks it (choose_dir).
	 */
	if (!fresh && in_dir / 2 == k)
		dir = dnp_torus_opposite((enum dnp_dir)in_dir);
	else
		dir = choose_dir(r, self, k, coord_k(t, k));

	out->dir = (uint8_t)dir;
	base = phase2 ? 2 : 0;
	if (r->vc_mode == DNP_VC_SINGLE) {
		out->vc = (uint8_t)base;
		return 0;
	}
	/*
	 * Dateline rule within the phase's pair of VCs: the upper one on the
	 * wrap link itself, and after it while the packet stays in the
	 * dimension it arrived in; the lower one otherwise (fresh injection,
	 * start of phase 2, or a dimension change).
	 */
	k = dir / 2;
	unsigned n = r->torus.dim[k];
	bool plus = (dir & 1u) == 0;
	if ((plus && coord_k(self, k) == n - 1) || (!plus && coord_k(self, k) == 0))
		out->vc = (uint8_t)(base + 1);
	else if (!fresh && in_dir / 2 == k && in_vc == base + 1)
		out->vc = (uint8_t)(base + 1);
	else
		out->vc = (uint8_t)base;
	return 0;
}

int dnp_route_next(const struct dnp_router *r, struct dnp_coord dst, unsigned in_dir,
		   unsigned in_vc, struct dnp_hop *out)
{
	return hop_at(r, r->self, r->self, dst, 0, in_dir, in_vc, out);
}

int dnp_route_step(const struct dnp_router *r, struct dnp_coord src, struct dnp_coord dst,
		   uint16_t via, unsigned in_dir, unsigned in_vc, struct dnp_hop *out)
{
	/*
	 * The common case first: a direct packet for this node (what hop_at
	 * concludes too: self is in the torus, and no via or phase-2 VC rule
	 * applies to it).
	 */
	if (!via && (in_dir >= DNP_NDIRS || in_vc < 2) && dnp_coord_eq(dst, r->self)) {
		out->dir = DNP_DIR_LOCAL;
		out->vc = 0;
		return 0;
	}
	return hop_at(r, r->self, src, dst, via, in_dir, in_vc, out);
}

/* ---------------------------------------------------------------- faults */

/* The cable behind node's link in dir, named by the node its + link leaves. */
static struct dnp_route_cable cable_of(const struct dnp_torus *t, struct dnp_coord node,
				       unsigned dir)
{
	struct dnp_route_cable c = { .dim = (uint8_t)(dir / 2) };

	if (dir & 1u)
		node = dnp_torus_neighbour(t, node, (enum dnp_dir)dir);
	c.node = dnp_torus_id(t, node);
	return c;
}

static int fault_find(const struct dnp_router *r, struct dnp_route_cable c)
{
	for (uint32_t i = 0; i < r->n_faults; i++)
		if (r->faults[i].node == c.node && r->faults[i].dim == c.dim)
			return (int)i;
	return -1;
}

int dnp_route_set_cable(struct dnp_router *r, struct dnp_coord node, unsigned dir, unsigned state)
{
	struct dnp_route_cable c;
	int i;

	if (dir >= DNP_NDIRS || !dnp_torus_contains(&r->torus, node) || state > DNP_CABLE_SICK)
		return -EINVAL;
	c = cable_of(&r->torus, node, dir);
	c.sick = state == DNP_CABLE_SICK;
	i = fault_find(r, c);
	if (state == DNP_CABLE_OK && i < 0)
		return 0;
	if (state != DNP_CABLE_OK && i >= 0 && r->faults[i].sick == c.sick)
		return 0;
	if (i >= 0) {
		r->n_sick -= r->faults[i].sick;
		if (state == DNP_CABLE_OK)
			r->faults[i] = r->faults[--r->n_faults];
		else
			r->faults[i].sick = c.sick;
	} else {
		if (r->n_faults >= DNP_ROUTE_MAX_FAULTS)
			return -ENOSPC;
		r->faults[r->n_faults++] = c;
	}
	r->n_sick += c.sick && state != DNP_CABLE_OK;
	if (++r->gen == 0)
		r->gen = 1;
	ver_bump(r);
	return 0;
}

enum dnp_cable_state dnp_route_cable(const struct dnp_router *r, struct dnp_coord node,
				     unsigned dir)
{
	int i;

	if (dir >= DNP_NDIRS || !dnp_torus_contains(&r->torus, node))
		return DNP_CABLE_OK;
	i = fault_find(r, cable_of(&r->torus, node, dir));
	if (i < 0)
		return DNP_CABLE_OK;
	return r->faults[i].sick ? DNP_CABLE_SICK : DNP_CABLE_BROKEN;
}

void dnp_route_clear_faults(struct dnp_router *r)
{
	if (!r->n_faults)
		return;
	r->n_faults = 0;
	r->n_sick = 0;
	if (++r->gen == 0)
		r->gen = 1;
	ver_bump(r);
}

int dnp_route_set_vcs(struct dnp_router *r, unsigned nvc)
{
	if (nvc < 1 || nvc > 4)
		return -EINVAL;
	if (r->routing == DNP_ROUTING_ADAPTIVE && nvc < DNP_ROUTE_ADAPT_MIN_VCS)
		return -EINVAL;
	if (r->routing == DNP_ROUTING_VALIANT && nvc < DNP_ROUTE_VALIANT_VCS)
		return -EINVAL;
	r->nvc = (uint8_t)nvc;
	if (++r->gen == 0)
		r->gen = 1;
	ver_bump(r);
	return 0;
}

/* ---------------------------------------------------------------- plans */

/*
 * Follows the route of a packet from r->self to dst through via, as every
 * node would route it if it knew what r knows. Returns the hop count, or -1
 * if the path crosses a known broken cable (or with 'sick' a sick one), needs
 * a VC the links lack, or does not arrive.
 */
static int simulate_from(const struct dnp_router *r, struct dnp_coord from, struct dnp_coord dst,
			 uint16_t via, bool sick)
{
	struct dnp_coord cur = from;
	unsigned in_dir = DNP_DIR_LOCAL, in_vc = 0;
	unsigned limit = 2u * (r->torus.dim[0] + r->torus.dim[1] + r->torus.dim[2]) + 4;

	for (unsigned hops = 0; hops <= limit; hops++) {
		struct dnp_hop h;

		int f;

		if (hop_at(r, cur, from, dst, via, in_dir, in_vc, &h) < 0)
			return -1;
		if (h.dir == DNP_DIR_LOCAL)
			return dnp_coord_eq(cur, dst) ? (int)hops : -1;
		if (h.vc >= r->nvc)
			return -1;
		f = fault_find(r, cable_of(&r->torus, cur, h.dir));
		if (f >= 0 && (sick || !r->faults[f].sick))
			return -1;
		cur = dnp_torus_neighbour(&r->torus, cur, (enum dnp_dir)h.dir);
		in_dir = dnp_torus_opposite((enum dnp_dir)h.dir);
		in_vc = h.vc;
	}
	return -1;
}

static int simulate(const struct dnp_router *r, struct dnp_coord dst, uint16_t via, bool sick)
{
	return simulate_from(r, r->self, dst, via, sick);
}

/* Whether offset d on a ring of n names a distinct node (no aliasing). */
static bool offset_ok(int d, unsigned n)
{
	int m = d < 0 ? -d : d;

	if (n == 1)
		return d == 0;
	return 2 * m < (int)n || (2 * m == (int)n && d > 0);
}

/*
 * The shortest two-phase route: vias within 3 hops (L1, around the rings)
 * of the source, then of the destination. One failure is always avoided
 * this way (tests/test_route.c checks every single failure of 4x4x4).
 */
static int plan_via(const struct dnp_router *r, struct dnp_coord dst, uint16_t *via, bool sick)
{
	int best = -1;

	for (unsigned rel = 0; rel < 2; rel++)
		for (int dx = -3; dx <= 3; dx++)
			for (int dy = -3; dy <= 3; dy++)
				for (int dz = -3; dz <= 3; dz++) {
					int l1 = abs(dx) + abs(dy) + abs(dz);
					struct dnp_coord v;
					uint16_t code;
					int hops;

					if (l1 == 0 || l1 > 3 || !offset_ok(dx, r->torus.dim[0]) ||
					    !offset_ok(dy, r->torus.dim[1]) ||
					    !offset_ok(dz, r->torus.dim[2]))
						continue;
					code = (uint16_t)(DNP_VIA_ON | (rel ? DNP_VIA_REL_DST : 0) |
							  ((unsigned)dx & 0xfu) |
							  ((unsigned)dy & 0xfu) << 4 |
							  ((unsigned)dz & 0xfu) << 8);
					dnp_route_via_coord(&r->torus, r->self, dst, code, &v);
					if (dnp_coord_eq(v, r->self) || dnp_coord_eq(v, dst))
						continue;
					hops = simulate(r, dst, code, sick);
					if (hops >= 0 && (best < 0 || hops < best)) {
						best = hops;
						*via = code;
					}
				}
	return best < 0 ? -EHOSTUNREACH : 0;
}

int dnp_route_plan(struct dnp_router *r, struct dnp_coord dst, uint16_t *via)
{
	struct dnp_route_plan_entry *pe;
	uint32_t id;
	int rc = 0;

	*via = 0;
	if (!dnp_torus_contains(&r->torus, dst))
		return -EHOSTUNREACH;
	if (!r->n_faults || dnp_coord_eq(dst, r->self))
		return 0;
	id = dnp_torus_id(&r->torus, dst);
	pe = &r->plans[id % DNP_ROUTE_PLAN_CACHE];
	if (pe->gen == r->gen && pe->dst_id == id) {
		*via = pe->via;
		return pe->rc;
	}
	/* around sick cables too if a route does; around broken ones only if not */
	bool vias =
		r->vc_mode == DNP_VC_DATELINE && r->nvc >= 4 && r->routing != DNP_ROUTING_ADAPTIVE;
	if (r->n_sick &&
	    (simulate(r, dst, 0, true) >= 0 || (vias && plan_via(r, dst, via, true) == 0)))
		rc = 0;
	else if (simulate(r, dst, 0, false) < 0)
		rc = vias ? plan_via(r, dst, via, false) : -EHOSTUNREACH;
	else
		*via = 0;
	if (rc < 0)
		*via = 0;
	pe->gen = r->gen;
	pe->dst_id = id;
	pe->via = *via;
	pe->rc = (int16_t)rc;
	return rc;
}

/* ---------------------------------------------------------------- adaptive */

int dnp_route_set_routing(struct dnp_router *r, unsigned routing)
{
	if (routing != DNP_ROUTING_DOR && routing != DNP_ROUTING_ADAPTIVE &&
	    routing != DNP_ROUTING_VALIANT)
		return -EINVAL;
	if (routing == DNP_ROUTING_ADAPTIVE &&
	    (r->vc_mode != DNP_VC_DATELINE || r->nvc < DNP_ROUTE_ADAPT_MIN_VCS))
		return -EINVAL;
	if (routing == DNP_ROUTING_VALIANT &&
	    (r->vc_mode != DNP_VC_DATELINE || r->nvc < DNP_ROUTE_VALIANT_VCS))
		return -EINVAL;
	r->routing = (uint8_t)routing;
	if (++r->gen == 0)
		r->gen = 1; /* plans differ: adaptive mode plans no vias */
	ver_bump(r);
	return 0;
}

const char *dnp_routing_name(unsigned routing)
{
	return routing == DNP_ROUTING_DOR      ? "dor" :
	       routing == DNP_ROUTING_ADAPTIVE ? "adaptive" :
	       routing == DNP_ROUTING_VALIANT  ? "valiant" :
						 NULL;
}

int dnp_routing_parse(const char *name)
{
	if (name && !strcmp(name, "dor"))
		return DNP_ROUTING_DOR;
	if (name && !strcmp(name, "adaptive"))
		return DNP_ROUTING_ADAPTIVE;
	if (name && !strcmp(name, "valiant"))
		return DNP_ROUTING_VALIANT;
	return -EINVAL;
}

/*
 * Whether an adaptive hop from r->self in dir may be taken towards dst
 * (route.h, dnp_route_adaptive): a sound cable, and with faults known a
 * clean minimal escape route from the neighbour.
 */
static bool adaptive_ok(const struct dnp_router *r, struct dnp_coord dst, unsigned dir)
{
	if (!r->n_faults)
		return true;
	if (dnp_route_cable(r, r->self, dir) != DNP_CABLE_OK)
		return false;
	struct dnp_coord nb = dnp_torus_neighbour(&r->torus, r->self, (enum dnp_dir)dir);
	int hops = simulate_from(r, nb, dst, 0, true);
	return hops >= 0 && (unsigned)hops == dnp_torus_distance(&r->torus, nb, dst);
}

unsigned dnp_route_adaptive(const struct dnp_router *r, struct dnp_coord dst,
			    uint8_t dirs[DNP_ROUTE_MAX_PRODUCTIVE])
{
	unsigned n = 0;

	if (r->routing != DNP_ROUTING_ADAPTIVE || !dnp_torus_contains(&r->torus, dst))
		return 0;
	for (unsigned k = 0; k < 3; k++) {
		unsigned len = r->torus.dim[k], a = coord_k(r->self, k), b = coord_k(dst, k);
		int delta = dnp_torus_ring_delta(len, a, b);

		if (!delta)
			continue;
		/* a tie (half the ring) is productive both ways */
		bool plus = delta > 0;
		bool minus = delta < 0 || 2u * (unsigned)delta == len;

		if (plus && adaptive_ok(r, dst, 2 * k))
			dirs[n++] = (uint8_t)(2 * k);
		if (minus && adaptive_ok(r, dst, 2 * k + 1))
			dirs[n++] = (uint8_t)(2 * k + 1);
	}
	return n;
}

/* ---------------------------------------------------------------- Valiant */

/* A 64-bit mix of source, destination and key (the SplitMix64 finaliser). */
static uint64_t valiant_hash(uint32_t src, uint32_t dst, uint32_t key)
{
	uint64_t h = ((uint64_t)src << 32 | dst) ^ ((uint64_t)key * 0x9e3779b97f4a7c15ull);

	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return h;
}

struct dnp_coord dnp_route_valiant_node(const struct dnp_torus *t, struct dnp_coord src,
					struct dnp_coord dst, uint32_t key)
{
	uint64_t h = valiant_hash(dnp_torus_id(t, src), dnp_torus_id(t, dst), key);
	unsigned c[3];

	for (unsigned k = 0; k < 3; k++) {
		unsigned n = t->dim[k], s = coord_k(src, k);

		/* 16 bits of the hash per ring: a bias of at most n / 65536 */
		unsigned bits = (unsigned)(h & 0xffffu);

		h >>= 16;
		if (n <= 16)
			c[k] = bits % n;
		else
			c[k] = (unsigned)(((int)s + (int)(bits % 16) - 8 + (int)n) % (int)n);
	}
	return (struct dnp_coord){ (uint8_t)c[0], (uint8_t)c[1], (uint8_t)c[2] };
}

int dnp_route_via_code(const struct dnp_torus *t, struct dnp_coord src, struct dnp_coord dst,
		       struct dnp_coord v, uint16_t *via)
{
	uint16_t code = DNP_VIA_ON;

	*via = 0;
	if (dnp_coord_eq(v, src) || dnp_coord_eq(v, dst))
		return 0;
	for (unsigned k = 0; k < 3; k++) {
		int n = t->dim[k];
		int d = ((int)coord_k(v, k) - (int)coord_k(src, k) + n) % n;

		if (d > 7)
			d -= n; /* the other way round: -8 .. -1 when n <= 16 */
		if (d < -8 || d > 7)
			return -ERANGE;
		code |= (uint16_t)(((unsigned)d & 0xfu) << (4 * k));
	}
	*via = code;
	return 0;
}

int dnp_route_valiant(struct dnp_router *r, struct dnp_coord dst, uint32_t key, uint16_t *via)
{
	*via = 0;
	if (r->routing != DNP_ROUTING_VALIANT)
		return dnp_route_plan(r, dst, via);
	if (!dnp_torus_contains(&r->torus, dst))
		return -EHOSTUNREACH;
	if (dnp_coord_eq(dst, r->self))
		return 0;
	for (unsigned i = 0; i < DNP_ROUTE_VALIANT_TRIES; i++) {
		struct dnp_coord v = dnp_route_valiant_node(&r->torus, r->self, dst, key + i);
		uint16_t code;

		if (dnp_route_via_code(&r->torus, r->self, dst, v, &code) < 0)
			continue;
		/* no fault known: the first choice, unchecked (the common case) */
		if (!r->n_faults || simulate(r, dst, code, r->n_sick != 0) >= 0) {
			*via = code;
			return 0;
		}
	}
	return dnp_route_plan(r, dst, via);
}
