/* SPDX-License-Identifier: MIT */
/*
 * route — dimension-ordered next-hop selection with dateline virtual channels.
 *
 * Rule (docs/protocol.md, "Routing"): correct X first, then Y, then Z, each the
 * shorter way around its ring (ties: the + way, see dnp_torus_ring_delta).
 * Deadlock freedom uses two virtual channels per link and a dateline per ring:
 * a packet enters each dimension on VC 0; the hop that takes the wrap-around
 * link of that ring (from coordinate n-1 to 0 going +, or 0 to n-1 going -) and
 * every later hop in the same dimension use VC 1. With DNP_VC_SINGLE every hop
 * uses VC 0 (kept to show that rings then can deadlock).
 *
 * A per-node override table is consulted first: per destination node (exact
 * match) and per output direction (remap a direction to another one, e.g. to
 * steer around a failed link). Overrides change the direction only; the VC
 * is then recomputed with the dateline rule for that hop.
 *
 * The table is owned by the caller (fixed size, no allocation); one thread.
 */
#ifndef DNP_ROUTE_H
#define DNP_ROUTE_H

#include "torus.h"

enum dnp_vc_mode {
	DNP_VC_DATELINE = 0,
	DNP_VC_SINGLE = 1,
};

#define DNP_ROUTE_MAX_OVERRIDES 64

struct dnp_route_override {
	uint32_t dst_id;
	uint8_t dir; /* enum dnp_dir */
};

struct dnp_router {
	struct dnp_torus torus;
	struct dnp_coord self;
	enum dnp_vc_mode vc_mode;
	uint8_t dir_remap[DNP_NDIRS]; /* identity unless remapped */
	uint32_t n_overrides;         /* sorted by dst_id */
	struct dnp_route_override overrides[DNP_ROUTE_MAX_OVERRIDES];
};

struct dnp_hop {
	uint8_t dir; /* enum dnp_dir, or DNP_DIR_LOCAL when dst == self */
	uint8_t vc;
};

/* Errors: -EINVAL if self is outside the torus or vc_mode is unknown. */
int dnp_route_init(struct dnp_router *r, const struct dnp_torus *t, struct dnp_coord self,
		   enum dnp_vc_mode vc_mode);
/*
 * Next hop for a packet at r->self bound for dst. in_dir is the direction the
 * packet arrived from (the neighbour's side, e.g. a packet sent X+ by the
 * neighbour arrives on DNP_DIR_XM) or DNP_DIR_LOCAL if injected here; in_vc is
 * the VC it arrived on.
 * Errors: -EHOSTUNREACH if dst is outside the torus.
 */
int dnp_route_next(const struct dnp_router *r, struct dnp_coord dst, unsigned in_dir,
		   unsigned in_vc, struct dnp_hop *out);
/* Errors: -EINVAL bad dir or dst, -ENOSPC table full. Replaces an existing entry. */
int dnp_route_set_override(struct dnp_router *r, uint32_t dst_id, unsigned dir);
int dnp_route_clear_override(struct dnp_router *r, uint32_t dst_id); /* -ENOENT */
/* Remap output direction 'from' to 'to' (to == from restores). -EINVAL bad dir. */
int dnp_route_remap_dir(struct dnp_router *r, unsigned from, unsigned to);

#endif
