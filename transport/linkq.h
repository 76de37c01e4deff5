/* SPDX-License-Identifier: MIT */
/*
 * linkq — a byte-queue limit on what a daemon hands one link (dnpd
 * --link-queue, config key link_queue; docs/routing.md, "Top-class latency on
 * daemons: a byte-queue limit per link"), in the manner of Linux's BQL.
 *
 * A link's transport is a FIFO (shm: a ring of 256 slots) and the engine's
 * traffic-class arbitration happens before it: once a frame is in the ring,
 * a top-class frame handed later waits for it, however low its class. With a
 * limit, the daemon asks the engine for the link's next frames only while
 * the transport holds fewer than 'limit' bytes the peer has not taken
 * (transport.h, tx_queued), so the ring stays short and the packet the
 * arbitration picks last stays in the engine, where a top-class packet still
 * overtakes it. One hand-off may cross the limit by at most the frames the
 * engine has ready then (with arbitration on: one data frame per output, a
 * credit, resends).
 *
 * The counters show how deep the link's FIFO was when frames were handed:
 * 'ahead' is the bytes already queued then, which each handed frame waits
 * behind.
 */
#ifndef DNP_LINKQ_H
#define DNP_LINKQ_H

#include <stdbool.h>
#include <stdint.h>

#include "transport.h"

struct dnp_linkq {
	uint32_t limit;     /* bytes; 0 = off (no limit, no counters) */
	bool held;          /* the last look found the link at its limit */
	uint64_t holds;     /* looks that found it at its limit */
	uint64_t handoffs;  /* hand-offs of one frame or more (dnp_linkq_sent) */
	uint64_t ahead_sum; /* bytes queued at those hand-offs, summed */
	uint32_t ahead_max; /* and the largest */
	uint32_t last;      /* bytes queued at the last look */
};

/*
 * May the daemon hand link t more frames now? True while the bytes t holds
 * are under q->limit (always true when the limit is off or t cannot tell).
 * Updates q->held, q->holds and q->last.
 */
static inline bool dnp_linkq_open(struct dnp_linkq *q, const struct dnp_transport *t)
{
	const struct dnp_transport_ops *o;
	uint32_t b;

	if (!q->limit)
		return true;
	o = dnp_transport_ops_of(t);
	if (!o->tx_queued)
		return true;
	b = o->tx_queued(t);
	q->last = b;
	q->held = b >= q->limit;
	if (q->held)
		q->holds++;
	return !q->held;
}

/* Frames went to the link after dnp_linkq_open said yes: count what they found ahead. */
static inline void dnp_linkq_sent(struct dnp_linkq *q)
{
	if (!q->limit)
		return;
	q->handoffs++;
	q->ahead_sum += q->last;
	if (q->last > q->ahead_max)
		q->ahead_max = q->last;
}

#endif
