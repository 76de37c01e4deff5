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
 * Delivers h, a single-packet PUT for this node that dnp_engine_rx_burst
 * took on its fast path (decoded, checked, in sequence), when the run
 * covers it: its port is open with room for the RX event, its source has an
 * open report batch with room (so the report needs no buffer), the engine
 * has no congestion marks and no refused messages to look for, and its
 * buffer is the cached one or a lookup finds it (key, range, PUT_TARGET).
 * Returns 0 (delivered: written, RX_PUT event, outcome recorded, report
 * batched; or refused with -EFAULT reported, when mem->write or mem->flush
 * failed) or DELIVER_SLOW (nothing done: engine_deliver decides).
 */
int engine_deliver_run(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload,
		       struct rx8_run *r, uint64_t now);

/*
 * The open report batch to (to, port), or NULL (engine_cmpl.c). For the
 * run: a success joins it when it has room.
 */
struct cmplb *engine_cmplb_of(struct dnp_engine *e, struct dnp_coord to, uint8_t port);

#endif
