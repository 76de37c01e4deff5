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
	for (unsigned d = 0; d < DNP_NDIRS; d++)
		r->dir_remap[d] = (uint8_t)d;
	return 0;
}

/* Index of the first override whose dst_id is >= dst_id (n_overrides if none). */
static uint32_t override_lower_bound(const struct dnp_router *r, uint32_t dst_id)
{
	uint32_t lo = 0, hi = r->n_overrides;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->overrides[mid].dst_id < dst_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct dnp_route_override *override_find(const struct dnp_router *r,
						      uint32_t dst_id)
{
	uint32_t i = override_lower_bound(r, dst_id);

	if (i < r->n_overrides && r->overrides[i].dst_id == dst_id)
		return &r->overrides[i];
	return NULL;
}

/* Dimension-order direction: X first, then Y, then Z; ring_delta picks the way. */
static unsigned dor_dir(const struct dnp_router *r, struct dnp_coord dst)
{
	const uint8_t s[3] = { r->self.x, r->self.y, r->self.z };
	const uint8_t d[3] = { dst.x, dst.y, dst.z };

	for (unsigned dim = 0; dim < 3; dim++) {
		int delta = dnp_torus_ring_delta(r->torus.dim[dim], s[dim], d[dim]);

		if (delta > 0)
			return 2 * dim;
		if (delta < 0)
			return 2 * dim + 1;
	}
	return DNP_DIR_LOCAL;
}

/*
 * Dateline rule for the hop leaving self on out_dir: VC 1 on the wrap link
 * itself, VC 1 if the packet is already on VC 1 and stays in the dimension it
 * arrived in, VC 0 otherwise (fresh injection or a dimension change).
 */
static uint8_t dateline_vc(const struct dnp_router *r, unsigned out_dir, unsigned in_dir,
			   unsigned in_vc)
{
	const uint8_t s[3] = { r->self.x, r->self.y, r->self.z };
	unsigned dim = out_dir / 2;
	unsigned n = r->torus.dim[dim];
	bool plus = (out_dir & 1u) == 0;

	if ((plus && s[dim] == n - 1) || (!plus && s[dim] == 0))
		return 1;
	if (in_dir < DNP_NDIRS && in_dir / 2 == dim && in_vc == 1)
		return 1;
	return 0;
}

int dnp_route_next(const struct dnp_router *r, struct dnp_coord dst, unsigned in_dir,
		   unsigned in_vc, struct dnp_hop *out)
{
	const struct dnp_route_override *ov;
	unsigned dir;

	if (!dnp_torus_contains(&r->torus, dst))
		return -EHOSTUNREACH;
	if (dnp_coord_eq(dst, r->self)) {
		out->dir = DNP_DIR_LOCAL;
		out->vc = 0;
		return 0;
	}
	/*
	 * An exact per-destination entry is an explicit choice and is used as
	 * is; otherwise the dimension-order direction goes through the
	 * per-direction remap (identity unless a link is being avoided).
	 */
	ov = r->n_overrides ? override_find(r, dnp_torus_id(&r->torus, dst)) : NULL;
	if (ov)
		dir = ov->dir;
	else
		dir = r->dir_remap[dor_dir(r, dst)];

	out->dir = (uint8_t)dir;
	if (r->vc_mode == DNP_VC_SINGLE)
		out->vc = 0;
	else
		out->vc = dateline_vc(r, dir, in_dir, in_vc);
	return 0;
}

int dnp_route_set_override(struct dnp_router *r, uint32_t dst_id, unsigned dir)
{
	uint32_t i;

	if (dir >= DNP_NDIRS || dst_id >= dnp_torus_size(&r->torus))
		return -EINVAL;
	i = override_lower_bound(r, dst_id);
	if (i < r->n_overrides && r->overrides[i].dst_id == dst_id) {
		r->overrides[i].dir = (uint8_t)dir;
		return 0;
	}
	if (r->n_overrides >= DNP_ROUTE_MAX_OVERRIDES)
		return -ENOSPC;
	memmove(&r->overrides[i + 1], &r->overrides[i],
		(r->n_overrides - i) * sizeof(r->overrides[0]));
	r->overrides[i].dst_id = dst_id;
	r->overrides[i].dir = (uint8_t)dir;
	r->n_overrides++;
	return 0;
}

int dnp_route_clear_override(struct dnp_router *r, uint32_t dst_id)
{
	uint32_t i = override_lower_bound(r, dst_id);

	if (i >= r->n_overrides || r->overrides[i].dst_id != dst_id)
		return -ENOENT;
	memmove(&r->overrides[i], &r->overrides[i + 1],
		(r->n_overrides - i - 1) * sizeof(r->overrides[0]));
	r->n_overrides--;
	return 0;
}

int dnp_route_remap_dir(struct dnp_router *r, unsigned from, unsigned to)
{
	if (from >= DNP_NDIRS || to >= DNP_NDIRS)
		return -EINVAL;
	r->dir_remap[from] = (uint8_t)to;
	return 0;
}
