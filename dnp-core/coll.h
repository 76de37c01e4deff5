/* SPDX-License-Identifier: MIT */
/*
 * coll — collectives run by the engine (docs/api.md, "Collectives";
 * docs/protocol.md, "Collective packets"): allreduce, barrier and broadcast
 * over a group of (node, port) members, driven by commands and by COLL
 * packets, the same code in dnpd and in the lab.
 *
 * A group is joined by each member's application with the same member list
 * and group id (DNP_OP_COLL_JOIN); a member's rank is its index in that
 * list. Every member numbers its collectives on a group 0, 1, 2...: the
 * n-th collective of each member is the same collective, and its packets
 * carry that number (seq). A member runs one collective per group at a time
 * (-EBUSY); another member may already be in the next one, whose packets
 * are kept until this one starts it (two instances per group).
 *
 * Algorithms (fixed by rank, so results are the same bits on every member
 * and from run to run, whatever order packets arrive in):
 *   allreduce, barrier: recursive doubling over the largest power of two p
 *     <= n; ranks p..n-1 first fold into rank - p and get the result back.
 *     In step k the partners r and r ^ 2^k both compute op(lower rank's
 *     partial, higher rank's partial), element by element: the same
 *     operands in the same order on both sides. A barrier is an allreduce
 *     of 0 bytes.
 *   broadcast: the same exchanges, where a member passes on the root's data
 *     once it has it, and an empty packet before (KEY_EMPTY). So every
 *     collective needs every member to have started it, and no member is
 *     ever more than one collective ahead of another (a tree broadcast
 *     would let the root run ahead without bound).
 * Pipelining: a collective of len bytes is cut into chunks of
 * DNP_COLL_CHUNK_BYTES (the last one the rest; a barrier is one chunk of 0
 * bytes), and each chunk runs the whole program above on its own bytes, so
 * the fixed reduction order holds per element whatever the chunking. The
 * chunks of a group's collectives, one after the other, form the group's
 * chunk stream: chunk k of the collective that starts at position b is at
 * position b + k on every member. A member runs the chunks at positions
 * [lo, lo + DNP_COLL_WINDOW) at once, lo being its lowest unfinished one,
 * and keeps state for [lo, lo + 2 * DNP_COLL_WINDOW): a member finishes a
 * chunk only after every member started it, so no member runs (sends) a
 * chunk more than 2 * DNP_COLL_WINDOW - 1 positions past another's lo, and
 * no packet of a member keeping to the window is ever dropped.
 * The data of each step travels in COLL packets (up to 4096 bytes each),
 * straight from the engine's buffers: no application memory is read or
 * written but the caller's source (a chunk as it starts) and result (a
 * chunk as it ends).
 *
 * Completion: one event per collective per member, when its result is in
 * the application's buffer (TX_DONE, op = the command's), or an ERROR:
 *   -EOPNOTSUPP   collectives are off (coll_groups 0)
 *   -ENOENT       JOIN: this node and port are not in the list; others: no
 *                 such group on this port
 *   -EEXIST       JOIN: the port already holds a group of that id
 *   -EINVAL       JOIN: a member twice or outside the torus or its ports;
 *                 BCAST: root >= members; a bad command (dnp_cmd_check_coll)
 *   -ENOSPC       JOIN: coll_groups groups held already
 *   -ENOMEM       JOIN: no memory for the group's buffers
 *   -EMSGSIZE     len above coll_max_bytes (at most DNP_COLL_MAX_BYTES)
 *   -EBUSY        a collective of this group is still running on this port
 *   -EBADMSG      another member runs another collective as this one (op,
 *                 type, length or root differ)
 *   -ECONNABORTED another member left the group or its application closed
 *                 its port during (or before) this collective
 *   -ETIMEDOUT    not done within cmd_timeout (a member died, its daemon
 *                 restarted, or a packet was lost with a link)
 *   -EFAULT       the source or result could not be read or written
 * Memory: a group's buffers are allocated when it is joined (a command,
 * off the packet path) and freed when it is left or its port closes:
 * 2 * DNP_COLL_WINDOW chunk slots of (lg + 3) buffers of min(chunk,
 * coll_max_bytes) bytes (lg: log2 of the members' largest power of two),
 * 768 KiB for 8 members, whatever the collectives' length. No packet and no
 * chunk allocates.
 */
#ifndef DNP_COLL_H
#define DNP_COLL_H

#include <stdbool.h>
#include <stdint.h>

/* A collective's chunk: the unit that runs the program (wire format: all members alike). */
#define DNP_COLL_CHUNK_BYTES 16384u
/* Chunks a member runs at once; it keeps state for twice as many. */
#define DNP_COLL_WINDOW 4u

struct dnp_engine;
struct dnp_pkt_hdr;
struct slot;

/* The group table of e (conf.coll_groups entries). 0 or -ENOMEM. */
int engine_coll_create(struct dnp_engine *e);
void engine_coll_destroy(struct dnp_engine *e);
/*
 * A checked collective command in slot s: started. Returns 0 (it completes
 * later, or completed already) or a negative errno (the caller completes
 * it with that error).
 */
int engine_coll_submit(struct dnp_engine *e, struct slot *s, uint64_t now);
/* A COLL packet for this node: kept, applied, or dropped (counted). */
void engine_coll_take(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload,
		      uint64_t now);
/* Does a collective run here (engine_coll_pump has something to do)? */
bool engine_coll_running(const struct dnp_engine *e);
/* Moves every running collective on (sends waiting for a buffer); true on progress. */
bool engine_coll_pump(struct dnp_engine *e, uint64_t now);
/* Something waits for a packet buffer: the driver should run the engine again. */
bool engine_coll_busy(const struct dnp_engine *e);
/* The port's application is gone: its groups are left (the other members told). */
void engine_coll_port_closed(struct dnp_engine *e, unsigned port, uint64_t now);

/* Counters of dnp_engine_coll_stats (engine.h). */
struct dnp_coll_stats {
	uint64_t started, done, failed; /* collectives of this node's members */
	uint64_t pkts_tx, pkts_rx;      /* COLL packets sent, and taken */
	uint64_t rx_dropped;            /* COLL packets dropped: no group, wrong sender, stale */
};

/* e's counters (all zero when it has no collectives). */
void dnp_engine_coll_stats(const struct dnp_engine *e, struct dnp_coll_stats *st);

#endif /* DNP_COLL_H */
