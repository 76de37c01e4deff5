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
 * Detours (docs/routing.md). The router also holds the faults this node
 * knows of: broken cables, a dead node being six of them. With faults known,
 * a packet still travels X, then Y, then Z, but the node where it enters a
 * dimension picks the way round that ring that avoids every known broken
 * cable, and the nodes after it keep going the same way. When no such path
 * exists (a dead node at a corner of the path), the source sends the packet
 * through an intermediate node, the "via", carried in the footer: phase 1
 * goes to the via on VCs 0/1, phase 2 from the via to the destination on VCs
 * 2/3, each phase with the dateline rule, so the channel dependency graph
 * stays acyclic (tests/test_route.c checks it for every single failure of
 * 4x4x4). Two-phase routes need links with four VCs.
 *
 * Sick cables (docs/routing.md, "Sick links"): a cable LO|FA|MO judged sick
 * (CRC errors over the threshold) still works, so it is avoided where a
 * route exists without it and used where none does: the way round a ring
 * avoids a sick arc when the other way is clear of broken and sick cables,
 * and a source plans a detour around sick cables first, and around broken
 * ones only when that fails. The same VC rules apply, so deadlock freedom is
 * that of the broken-cable detours.
 *
 * Adaptive routing (docs/routing.md, "Adaptive routing"; dnp_route_set_routing):
 * minimal adaptive routing made deadlock-free by an escape network, after
 * Duato. The escape network is the dimension-ordered routing above on VCs
 * 0/1 (dateline rule, ways round rings chosen around broken cables); VCs 2
 * and up are adaptive: a packet there may take any productive direction
 * (dnp_route_adaptive) and may always fall back to its escape hop, which a
 * packet arriving on an adaptive VC computes as if it started at this node.
 * Packets are forwarded whole (cut-through), so a packet on an adaptive VC
 * holds no escape channel: the escape dependencies are those of escape
 * routes starting at a source or after an adaptive hop, and their graph is
 * acyclic (tests/test_route.c checks it with every adaptive choice). Two-
 * phase detours need VCs 2/3, so adaptive mode plans none: what only a via
 * reaches is unreachable there. Adaptive routing needs three VCs or more.
 *
 * Valiant routing (docs/routing.md, "Valiant routing"; dnp_route_valiant):
 * non-minimal and oblivious. The source sends a message through an
 * intermediate node chosen by a hash of source, destination and a key, and
 * carries it as a via: phase 1 goes to it on VCs 0/1, phase 2 from it to
 * the destination on VCs 2/3, each phase dimension-ordered with the
 * dateline, exactly as a two-phase detour does; so the channel dependency
 * graph is the DOR graph on VCs 0/1, the same on VCs 2/3, and edges from
 * the first pair to the second only (tests/test_route.c checks every
 * intermediate on 4x4x4, and the vias chosen under every single failure).
 * With known faults a via is taken only if its two-phase route avoids them
 * (a few other keys are tried), else the packet falls back to DOR's plan
 * (direct, or a detour). Valiant routing needs four VCs.
 *
 * The tables are owned by the caller (fixed size, no allocation); one thread.
 */
#ifndef DNP_ROUTE_H
#define DNP_ROUTE_H

#include <stdbool.h>

#include "torus.h"

enum dnp_vc_mode {
	DNP_VC_DATELINE = 0,
	DNP_VC_SINGLE = 1,
};

/* Routing modes (dnp_route_set_routing). */
enum dnp_routing {
	DNP_ROUTING_DOR = 0,      /* dimension-ordered (the DNP's, the default) */
	DNP_ROUTING_ADAPTIVE = 1, /* minimal adaptive, DOR as the escape (VCs 0/1) */
	DNP_ROUTING_VALIANT = 2,  /* through an intermediate node: DOR on VCs 0/1, then 2/3 */
};

#define DNP_ROUTE_ADAPT_VC 2u       /* the first adaptive VC in adaptive mode */
#define DNP_ROUTE_ADAPT_MIN_VCS 3u  /* VCs adaptive mode needs: 2 escape, 1 adaptive */
#define DNP_ROUTE_MAX_PRODUCTIVE 6u /* productive directions at most (ties in 3 rings) */
#define DNP_ROUTE_VALIANT_VCS 4u    /* VCs Valiant routing needs: 2 per phase */
#define DNP_ROUTE_VALIANT_TRIES 4u  /* keys tried for a via clear of known faults */

#define DNP_ROUTE_MAX_FAULTS 64 /* broken cables a node keeps track of */
#define DNP_ROUTE_PLAN_CACHE 64 /* planned detours remembered (direct-mapped) */

/*
 * The via code, 16 bits in the packet footer: 0 for a direct route, else
 * DNP_VIA_ON, DNP_VIA_REL_DST if the via is given relative to the destination
 * (else to the source), and three 4-bit two's-complement offsets dx (bits
 * 0-3), dy (4-7), dz (8-11), each in -8..7, taken around the rings.
 */
#define DNP_VIA_ON 0x8000u
#define DNP_VIA_REL_DST 0x4000u
#define DNP_VIA_RSVD 0x3000u

/* A cable: the link from 'node' towards + in dimension 'dim' (its neighbour's - link). */
struct dnp_route_cable {
	uint32_t node;
	uint8_t dim;
	uint8_t sick; /* avoided where possible, not broken */
};

/* A cable's state as the router knows it (and as ROUTE packets carry it). */
enum dnp_cable_state {
	DNP_CABLE_OK = 0,
	DNP_CABLE_BROKEN = 1,
	DNP_CABLE_SICK = 2,
};

struct dnp_route_plan_entry {
	uint32_t gen; /* fault-set generation it was computed for (0: empty) */
	uint32_t dst_id;
	uint16_t via;
	int16_t rc; /* 0 or -EHOSTUNREACH */
};

struct dnp_router {
	struct dnp_torus torus;
	struct dnp_coord self;
	enum dnp_vc_mode vc_mode;
	uint8_t nvc;     /* VCs the links carry: 4 allows two-phase detours */
	uint8_t routing; /* enum dnp_routing */
	uint32_t gen;    /* bumped whenever the fault set changes (never 0) */
	/*
	 * Bumped by every call that may change what dnp_route_step returns
	 * (faults, VCs; never 0): a caller may keep a hop it
	 * computed while ver stays the same.
	 */
	uint32_t ver;
	uint32_t n_faults; /* known broken and sick cables, unordered */
	uint32_t n_sick;   /* of which sick */
	struct dnp_route_cable faults[DNP_ROUTE_MAX_FAULTS];
	struct dnp_route_plan_entry plans[DNP_ROUTE_PLAN_CACHE];
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
/*
 * The same for a packet that may travel through a via (see above): src is
 * its source (the via may be relative to it), via its via code. A packet on
 * VC 0/1 with a via is in phase 1 until it reaches the via; on VC 2/3 it is
 * in phase 2. In adaptive mode VCs 2/3 are adaptive instead: a packet that
 * arrived on one gets its escape hop as if injected here. The hop may lead
 * onto a broken cable when nothing better is known; the caller checks its
 * link.
 * Errors: -EHOSTUNREACH dst outside the torus; -EINVAL a malformed via code,
 * a packet on VC 2/3 without a via (DOR, Valiant), or with one (adaptive).
 */
int dnp_route_step(const struct dnp_router *r, struct dnp_coord src, struct dnp_coord dst,
		   uint16_t via, unsigned in_dir, unsigned in_vc, struct dnp_hop *out);
/*
 * Chooses, at the source (r->self), how a new packet for dst travels: *via
 * = 0 for the direct route, else a via code. With no known fault this is
 * always direct. Plans are cached until the fault set changes.
 * Errors: -EHOSTUNREACH dst outside the torus, or no route avoids the known
 * faults (dst dead or cut off, or a detour would need four VCs).
 */
int dnp_route_plan(struct dnp_router *r, struct dnp_coord dst, uint16_t *via);
/* Errors: -EINVAL a malformed code. via 0 gives dst. */
int dnp_route_via_coord(const struct dnp_torus *t, struct dnp_coord src, struct dnp_coord dst,
			uint16_t via, struct dnp_coord *out);
/*
 * The VCs the links carry (1..4; default 2). Errors: -EINVAL (also fewer
 * than adaptive or Valiant routing needs while it is on).
 */
int dnp_route_set_vcs(struct dnp_router *r, unsigned nvc);
/*
 * Sets the state (enum dnp_cable_state) of the cable leaving node in dir.
 * Bumps r->gen when the set changes.
 * Errors: -EINVAL node outside the torus, bad dir or state; -ENOSPC the table
 * is full (the cable is then not recorded).
 */
int dnp_route_set_cable(struct dnp_router *r, struct dnp_coord node, unsigned dir, unsigned state);
/* The state of that cable (DNP_CABLE_OK for a bad node or dir). */
enum dnp_cable_state dnp_route_cable(const struct dnp_router *r, struct dnp_coord node,
				     unsigned dir);
static inline bool dnp_route_cable_broken(const struct dnp_router *r, struct dnp_coord node,
					  unsigned dir)
{
	return dnp_route_cable(r, node, dir) == DNP_CABLE_BROKEN;
}
/*
 * Chooses the routing mode (enum dnp_routing). Adaptive mode needs the
 * dateline VC mode and DNP_ROUTE_ADAPT_MIN_VCS VCs, Valiant mode the
 * dateline VC mode and DNP_ROUTE_VALIANT_VCS VCs (set them first).
 * Errors: -EINVAL an unknown mode, or adaptive or Valiant with a single VC
 * mode or too few VCs (the router is then unchanged).
 */
int dnp_route_set_routing(struct dnp_router *r, unsigned routing);
/* "dor", "adaptive" or "valiant" (NULL for another value). */
const char *dnp_routing_name(unsigned routing);
/* The mode a name gives ("dor", "adaptive", "valiant"). Errors: -EINVAL an unknown name. */
int dnp_routing_parse(const char *name);
/*
 * Valiant's intermediate node for a message from src to dst with key
 * (deterministic: a hash of the three). Each coordinate is uniform over its
 * ring when the ring has 16 nodes or fewer (the via code's offsets reach
 * all of it), else within -8..+7 of the source's. It may be src or dst.
 */
struct dnp_coord dnp_route_valiant_node(const struct dnp_torus *t, struct dnp_coord src,
					struct dnp_coord dst, uint32_t key);
/*
 * The via code (relative to src) that names node v, or 0 when v is src or
 * dst (the direct route). Errors: -ERANGE v is further from src than the
 * code's offsets reach (-8..7 around each ring).
 */
int dnp_route_via_code(const struct dnp_torus *t, struct dnp_coord src, struct dnp_coord dst,
		       struct dnp_coord v, uint16_t *via);
/*
 * Chooses, at the source (r->self), how a message for dst with key travels
 * in Valiant mode: *via names dnp_route_valiant_node's choice (0 when that
 * is the source or dst). With known faults the choice must have a two-phase
 * route clear of broken cables (and of sick ones if one is); else the keys
 * key+1 .. key+DNP_ROUTE_VALIANT_TRIES-1 are tried, and last dnp_route_plan
 * (DOR's plan around the faults). In another mode it is dnp_route_plan.
 * Errors: those of dnp_route_plan (-EHOSTUNREACH).
 */
int dnp_route_valiant(struct dnp_router *r, struct dnp_coord dst, uint32_t key, uint16_t *via);
/*
 * The productive (minimal) directions from r->self towards dst that an
 * adaptive hop may take, in dirs[] (direction order, X+ first): each
 * shortens the distance to dst, its cable is neither broken nor sick, and
 * when faults are known the escape route from the neighbour it leads to is
 * clear of them and minimal (so that adaptive hops never lead a packet
 * where only a longer way or a via remains). Returns the count (0 in DOR
 * mode, at dst, or for dst outside the torus). The caller picks one and an
 * adaptive VC (DNP_ROUTE_ADAPT_VC .. nvc-1), or takes the escape hop.
 */
unsigned dnp_route_adaptive(const struct dnp_router *r, struct dnp_coord dst,
			    uint8_t dirs[DNP_ROUTE_MAX_PRODUCTIVE]);
/* Forgets every fault. */
void dnp_route_clear_faults(struct dnp_router *r);

#endif
