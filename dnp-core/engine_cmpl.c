/* SPDX-License-Identifier: MIT */
/*
 * engine_cmpl.c — completion reports: CMPL packets to the node whose command
 * a delivery served, successes batched per sender and port (docs/protocol.md,
 * "Completion reports"). Contract: engine_priv.h, "completion reports".
 */
#include "engine_rx8.h"

void engine_handle_cmpl(struct dnp_engine *e, const struct dnp_coord *from, uint32_t msg_id,
			int status)
{
	struct slot *s = engine_slot_by_msg(e, msg_id);

	if (!s)
		return;
	if (status == 0) { /* the usual case first */
		engine_fail_cmd(e, s, 0);
		return;
	}
	if (status == -(int)DNP_CMPL_NOT_DELIVERED) { /* the answer to a QUERY */
		/*
		 * The first answer is final: the target refuses the original for
		 * good. A later one may predate the arrival of a resend still on
		 * its way, which the target may yet apply: the data stays unknown.
		 */
		if (!s->injecting && !s->retry)
			s->sent = 0;
		/*
		 * Its TX_READ gave the source back to the application, which
		 * may have changed it: sending it again would send other data.
		 * It fails instead, not delivered; the application may submit
		 * it again.
		 */
		if ((s->c.flags & DNP_CMD_F_SRC_EVENT) && !s->rd_ev && !s->injecting) {
			engine_complete(e, s, -ENOLINK);
			return;
		}
		engine_outcome_resend(e, s, e->now);
		return;
	}
	/*
	 * A node on the way dropped a packet of it where a link broke: that copy
	 * may have passed before (its ack lost with the link). Ask the target.
	 */
	if (status == -ENOLINK && !dnp_coord_eq(*from, s->dst) && engine_query_soon(e, msg_id))
		return;
	if (status < 0 && dnp_coord_eq(*from, s->dst))
		s->data = DNP_DATA_NOT_DELIVERED; /* its target refused it */
	engine_fail_cmd(e, s, status);
}

/*
 * One CMPL packet from here to (to, to_port) reporting ids[0..n) with one
 * status, into the local input FIFO. -EAGAIN: no buffer free.
 */
static int cmpl_packet(struct dnp_engine *e, struct dnp_coord to, uint8_t to_port,
		       const uint32_t *ids, unsigned n, int status, uint8_t fstatus, uint64_t now)
{
	uint16_t len = (uint16_t)((n - 1) * 4u);
	struct pkt *p = engine_pkt_get(e, (uint32_t)dnp_pkt_frame_len(len));
	if (!p)
		return -EAGAIN;
	struct dnp_pkt_hdr *h = &p->h; /* built in place */

	*h = (struct dnp_pkt_hdr){
		.lflags = DNP_LINK_F_SEQ,
		.dst = to,
		.src = e->c.self,
		.dst_port = to_port,
		.kind = DNP_PKT_CMPL,
		.via = engine_via_for(e, to),
		.status = (uint8_t)(status < 0 ? -status : status),
		.len = len,
		.msg_id = ids[0],
		.fstatus = fstatus,
		.timestamp = (uint32_t)now,
	};
	uint8_t *pl = p->frame + DNP_PAYLOAD_OFF; /* the payload in place */
	for (unsigned i = 1; i < n; i++) {
		uint32_t v = htole32(ids[i]);
		memcpy(pl + (i - 1) * 4u, &v, 4);
	}
	/* sealed (CRC) by dnp_pkt_restamp when it leaves on a link */
	int r = dnp_pkt_encode_unsealed(h, len ? pl : NULL, p->frame, DNP_MAX_FRAME);
	if (r < 0) {
		engine_pkt_put(e, p);
		return r;
	}
	engine_local_push(e, p, (uint32_t)r);
	e->st.cmpl_frames++;
	return 0;
}

/* Sends batch b as one CMPL packet and empties it. -EAGAIN: no buffer (b stays). */
static int cmplb_flush(struct dnp_engine *e, struct cmplb *b, uint64_t now)
{
	if (!b->n)
		return 0;
	int r = cmpl_packet(e, b->to, b->port, b->ids, b->n, 0, b->ce ? DNP_FT_CE : 0, now);
	if (r == -EAGAIN)
		return r;
	/* any other error cannot happen for a well-formed header; the batch goes either way */
	b->n = 0;
	e->ncmplb--;
	return 0;
}

/* Every open batch out; true if one left. */
bool engine_cmplb_flush_all(struct dnp_engine *e, uint64_t now)
{
	bool sent = false;

	for (unsigned i = 0; i < CMPLB && e->ncmplb; i++)
		if (e->cmplb[i].n && cmplb_flush(e, &e->cmplb[i], now) == 0)
			sent = true;
	return sent;
}

static inline __attribute__((always_inline)) struct cmplb *cmplb_find(struct dnp_engine *e,
								      struct dnp_coord to,
								      uint8_t port)
{
	for (unsigned i = 0; i < CMPLB; i++) {
		struct cmplb *b = &e->cmplb[i];
		if (b->n && b->port == port && dnp_coord_eq(b->to, to))
			return b;
	}
	return NULL;
}

struct cmplb *engine_cmplb_of(struct dnp_engine *e, struct dnp_coord to, uint8_t port)
{
	return cmplb_find(e, to, port);
}

/*
 * A success report joins the batch of its sender and port, which leaves as
 * one CMPL frame at the end of the engine round (dnp_engine_run) or when it
 * is full. An error report goes at once, after that batch, so that a
 * sender's reports keep the order of delivery; with one buffer left it goes
 * alone and the batch follows (the error is never held back or lost for the
 * sake of order).
 */
__attribute__((noinline)) static int send_cmpl_slow(struct dnp_engine *e, struct dnp_coord to,
						    uint8_t to_port, uint32_t msg_id, int status,
						    uint64_t now)
{
	if (engine_coord_self(e, to)) {
		engine_handle_cmpl(e, &e->c.self, msg_id, status);
		return 0;
	}
	if (status) /* for queries, even if this report is lost (successes: engine_deliver_rx_done) */
		engine_outcome_record(e, dnp_torus_id(&e->c.torus, to), msg_id, status);
	struct cmplb *b = cmplb_find(e, to, to_port);

	if (status) {
		if (b && engine_pool_has_two_small(e))
			(void)cmplb_flush(e, b, now); /* cannot fail: two buffers are free */
		return cmpl_packet(e, to, to_port, &msg_id, 1, status, 0, now);
	}
	if (b && b->n == 1 + DNP_CMPL_MAX_EXTRA && cmplb_flush(e, b, now) < 0)
		return -EAGAIN;
	if (!b || !b->n) {
		if (!b) {
			for (unsigned i = 0; i < CMPLB && !b; i++)
				if (!e->cmplb[i].n)
					b = &e->cmplb[i];
			if (!b) { /* all open for other senders: the next one in turn leaves */
				b = &e->cmplb[e->cmplb_next++ % CMPLB];
				if (cmplb_flush(e, b, now) < 0)
					return -EAGAIN;
			}
		}
		b->to = to;
		b->port = to_port;
		b->ce = 0;
		e->ncmplb++;
	}
	b->ce |= e->cg_rx_ce; /* congestion ecn: the mark of this message, echoed */
	b->ids[b->n++] = msg_id;
	e->dirty = true;
	return 0;
}

/*
 * The usual case first, with nothing else in the way: a success report
 * joining the open batch of its sender and port, which has room. It does
 * what send_cmpl_slow does for it (a batch is never opened for this node
 * itself, so none is found for it); anything else goes there.
 */
int engine_send_cmpl(struct dnp_engine *e, struct dnp_coord to, uint8_t to_port, uint32_t msg_id,
		     int status, uint64_t now)
{
	struct cmplb *b;

	if (status == 0 && !engine_coord_self(e, to) && (b = cmplb_find(e, to, to_port)) != NULL &&
	    b->n < 1 + DNP_CMPL_MAX_EXTRA) {
		b->ce |= e->cg_rx_ce; /* congestion ecn: the mark of this message, echoed */
		b->ids[b->n++] = msg_id;
		e->dirty = true;
		return 0;
	}
	return send_cmpl_slow(e, to, to_port, msg_id, status, now);
}
