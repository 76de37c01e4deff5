/* SPDX-License-Identifier: MIT */
/*
 * engine_rx8.h — the delivery run of dnp_engine_rx_burst (h-rx8,
 * docs/performance.md "Receive side, second round"): what one burst's fast
 * single-packet PUTs share, looked up once per burst instead of once per
 * packet, and the delivery that uses it (engine_deliver.c). Engine-internal:
 * included by engine_link.c and engine_deliver.c only.
 *
 * A run caches, for the frames of one burst:
 *  - the target port's event queue and the events it still has room for
 *    (nothing drains it during the burst: only dnp_engine_poll_events does);
 *  - the source (coordinates and port), its node id and the open report
 *    batch its successes join;
 *  - the buffer-table entry the last lookup found, with the table's
 *    generation (dnp_buftab_gen) at that time;
 *  - the counters of the delivered packets, added to the engine's
 *    statistics once (rx8_run_end).
 * Every packet is still checked on its own against what is cached: the
 * port, the source, the key, the range and the batch's room; anything that
 * differs, or anything the run does not cover, goes to engine_deliver.
 * The cache lives in one dnp_engine_rx_burst call and is dropped
 * (rx8_run_drop) whenever anything else may have changed what it holds: a
 * frame that takes another path, a delivery by engine_deliver.
 */
#ifndef DNP_ENGINE_RX8_H
#define DNP_ENGINE_RX8_H

#include "engine_priv.h"

/* engine_deliver_run: not a case for the run; engine_deliver decides (nothing was done). */
#define DELIVER_SLOW 3

struct rx8_run {
	/* the port: q NULL when nothing is cached */
	struct evq *q;
	uint32_t ev_room; /* events q still takes in this burst */
	uint8_t port;
	/* the source: sb NULL when nothing is cached */
	uint8_t sport;
	struct dnp_coord src;
	uint32_t src_id;     /* dnp_torus_id(src) */
	struct cmplb *sb;    /* its open report batch (to src, sport) */
	struct dnp_event ev; /* its RX_PUT events' common fields (type, op, port, peer) */
	/* the buffer: buf NULL when nothing is cached */
	const struct dnp_buf *buf;
	uint32_t buf_gen;
	/* counted per run, added to e->st by rx8_run_end */
	uint32_t events;
	uint64_t bytes, hops;
};

/* Forgets what the run caches (its counters stay). */
static inline void rx8_run_drop(struct rx8_run *r)
{
	r->q = NULL;
	r->sb = NULL;
	r->buf = NULL;
}

/* Adds the run's counters to the engine's statistics and clears them. */
static inline void rx8_run_end(struct dnp_engine *e, struct rx8_run *r)
{
	e->st.events += r->events;
	e->st.hops_total += r->hops;
	e->st.bytes_delivered += r->bytes;
	r->events = 0;
	r->hops = 0;
	r->bytes = 0;
}

/*
 * Copies len bytes to a mapped buffer (conf.rx_map_priv): 8 to 16 bytes, a
 * small PUT's payload, as two overlapping 8-byte moves rather than a call.
 */
static inline void rx8_copy_mapped(uint8_t *dst, const uint8_t *src, size_t len)
{
	uint64_t a, b;

	if (len < 8 || len > 16) {
		memcpy(dst, src, len);
		return;
	}
	memcpy(&a, src, 8);
	memcpy(&b, src + len - 8, 8);
	memcpy(dst, &a, 8);
	memcpy(dst + len - 8, &b, 8);
}

/* The run's rarer steps, out of line (engine_deliver.c; once per burst, or on errors). */
/* Caches port's queue when it is open with room for an event; false otherwise. */
__attribute__((noinline)) bool engine_rx8_port(struct dnp_engine *e, struct rx8_run *r,
					       uint8_t port);
/* Caches h's source when it is another node with an open report batch; false otherwise. */
__attribute__((noinline)) bool engine_rx8_source(struct dnp_engine *e, struct rx8_run *r,
						 const struct dnp_pkt_hdr *h);
/*
 * Caches the buffer a lookup finds for h's message [start, start + len)
 * with PUT_TARGET; false on any lookup error (engine_deliver reports it).
 */
__attribute__((noinline)) bool engine_rx8_lookup(struct dnp_engine *e, struct rx8_run *r,
						 const struct dnp_pkt_hdr *h, uint64_t start,
						 uint64_t len);
/*
 * A run's PUT into a buffer without a mapping: the driver's write, then its
 * message settled (as write_keyed and deliver_put). 0, or 1 when the PUT
 * was refused and its error reported (the run dropped: the report may open
 * or flush batches).
 */
__attribute__((noinline)) int engine_rx8_write(struct dnp_engine *e, struct rx8_run *r,
					       const struct dnp_pkt_hdr *h, const uint8_t *payload,
					       uint64_t now);

/*
 * Delivers h, a single-packet PUT for this node that dnp_engine_rx_burst
 * took on its fast path (decoded, checked, in sequence), when the run
 * covers it: its port is open with room for the RX event, its source has an
 * open report batch with room (so the report needs no buffer), the engine
 * has no congestion marks and no refused messages to look for, and its
 * buffer is the cached one or a lookup finds it (key, range, PUT_TARGET).
 * Returns 0 (delivered: written, RX_PUT event, outcome recorded, report
 * batched; or refused with -EFAULT reported, when mem->write or mem->flush
 * failed) or DELIVER_SLOW (nothing done: engine_deliver decides). Inline:
 * it runs once per packet of the burst loop.
 */
static inline int engine_deliver_run(struct dnp_engine *e, const struct dnp_pkt_hdr *h,
				     const uint8_t *payload, struct rx8_run *r, uint64_t now)
{
	uint64_t start = h->va - h->offset;
	uint64_t len = h->msg_len ? h->msg_len : 1;
	const struct dnp_buf *b;
	struct dnp_event *ev;
	struct cmplb *sb;
	struct evq *q;

	/*
	 * One whole PUT: the decoder's rules (pkt.h) make a FIRST fragment
	 * start at offset 0 and a LAST one end at msg_len, so h->len is the
	 * message's length and h->va its start.
	 */
	if (h->kind != DNP_PKT_PUT ||
	    (h->flags & (DNP_PKT_F_FIRST | DNP_PKT_F_LAST)) != (DNP_PKT_F_FIRST | DNP_PKT_F_LAST) ||
	    e->cg || e->nrefused)
		return DELIVER_SLOW;
	/* as deliver: a buffer for a report free, the port open with room for the event */
	if (!engine_pool_has(e, CMPL_FRAME_MAX) ||
	    ((!r->q || r->port != h->dst_port) && !engine_rx8_port(e, r, h->dst_port)) ||
	    !r->ev_room)
		return DELIVER_SLOW;
	/* the report joins its sender's open batch, which has room */
	if ((!r->sb || r->sport != h->src_port || !dnp_coord_eq(r->src, h->src)) &&
	    !engine_rx8_source(e, r, h))
		return DELIVER_SLOW;
	sb = r->sb;
	if (sb->n == 0 || sb->n >= 1 + DNP_CMPL_MAX_EXTRA)
		return DELIVER_SLOW;
	/*
	 * The buffer: the cached entry when the table has not changed since it
	 * was found and it holds the range for h's key (its PUT_TARGET flag was
	 * checked when it was found; buffers of a port never overlap, so an
	 * entry of the port that holds the start is the one a lookup finds),
	 * else a lookup.
	 */
	b = r->buf;
	if (!(b && r->buf_gen == dnp_buftab_gen(e->bt) && b->port == h->dst_port &&
	      b->key == h->key && start >= b->va && len <= b->len - (start - b->va))) {
		if (!engine_rx8_lookup(e, r, h, start, len))
			return DELIVER_SLOW;
		b = r->buf;
	}
	if (e->c.rx_map_priv && b->priv)
		rx8_copy_mapped((uint8_t *)b->priv + (h->va - b->va), payload, h->len);
	else if (engine_rx8_write(e, r, h, payload, now))
		return 0; /* refused: reported */
	/* as rx_done: the RX event in its slot (the source's fields, then the PUT's) */
	q = r->q;
	ev = &q->ev[q->tail & (e->c.event_queue - 1)];
	*ev = r->ev;
	ev->hops = h->hops;
	ev->msg_id = h->msg_id;
	ev->len = h->msg_len;
	ev->va = start;
	q->tail++;
	r->ev_room--;
	r->events++;
	r->hops += h->hops;
	r->bytes += h->len; /* as write_keyed */
	/* the outcome, for queries even if the report is lost; the report */
	engine_outcome_record(e, r->src_id, h->msg_id, 0);
	sb->ids[sb->n++] = h->msg_id;
	return 0;
}

/*
 * The open report batch to (to, port), or NULL (engine_cmpl.c). For the
 * run: a success joins it when it has room.
 */
struct cmplb *engine_cmplb_of(struct dnp_engine *e, struct dnp_coord to, uint8_t port);

#endif
