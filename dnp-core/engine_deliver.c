/* SPDX-License-Identifier: MIT */
/*
 * engine_deliver.c — delivery of packets addressed to this node: PUT, GET
 * request (it becomes a responder job), GET response, and the control kinds
 * (CMPL, DIAG, ROUTE) handed to their owners. Contract: engine_priv.h,
 * "delivery".
 */
#include "engine_rx8.h"

/*
 * A data packet refused at delivery (rc < 0): count it and tell its owner,
 * once per message (on its first and on its last fragment). The caller
 * checked that a buffer for the report is free. Returns 0 (handled).
 */
int engine_deliver_fail(struct dnp_engine *e, const struct dnp_pkt_hdr *h, int rc, uint64_t now)
{
	uint8_t oport;
	struct dnp_coord owner = engine_pkt_owner(h, &oport);

	e->st.deliver_errors++;
	if ((h->flags & (DNP_PKT_F_FIRST | DNP_PKT_F_LAST)) || h->kind == DNP_PKT_GET_REQ)
		(void)engine_send_cmpl(e, owner, oport, h->msg_id, rc, now);
	return 0;
}

/*
 * The last fragment of a PUT or SEND was written: event 'type' for the
 * receiving port (its room was checked), then the report to the sender.
 */
static inline __attribute__((always_inline)) int rx_done(struct dnp_engine *e,
							 const struct dnp_pkt_hdr *h, uint32_t src,
							 struct evq *q, uint8_t type, uint8_t op,
							 uint64_t va, uint64_t now)
{
	uint8_t oport;
	struct dnp_coord owner = engine_pkt_owner(h, &oport);

	/*
	 * engine_evq_push, with the event written straight into its slot (one
	 * run of stores, no copy of it through the stack).
	 */
	q->ev[q->tail & (e->c.event_queue - 1)] = (struct dnp_event){
		.type = type,
		.op = op,
		.port = h->src_port,
		.hops = h->hops,
		.peer_x = h->src.x,
		.peer_y = h->src.y,
		.peer_z = h->src.z,
		.msg_id = h->msg_id,
		.len = h->msg_len,
		.va = va,
	};
	q->tail++;
	e->st.events++;
	e->st.hops_total += h->hops;
	engine_outcome_record(e, src, h->msg_id, 0); /* for queries, even if the report is lost */
	return engine_send_cmpl(e, owner, oport, h->msg_id, 0, now);
}

int engine_deliver_rx_done(struct dnp_engine *e, const struct dnp_pkt_hdr *h, uint32_t src,
			   struct evq *q, uint8_t type, uint8_t op, uint64_t va, uint64_t now)
{
	return rx_done(e, h, src, q, type, op, va, now);
}

/*
 * Writes the payload of a keyed packet (PUT, GET_RESP) into the PUT-target
 * buffer it names. Every fragment checks the whole message range: all or
 * nothing. A fragment that fails settles the writes of its message when
 * it is the last one (engine_mem_settle). *mapped: the buffer is mapped
 * (conf.rx_map_priv and its priv), written here, and its message needs no
 * settling. Returns 0, or -ENOENT, -ERANGE, -EACCES, -EPERM (as the sender
 * sees it), -EFAULT.
 */
static inline __attribute__((always_inline)) int write_keyed(struct dnp_engine *e,
							     const struct dnp_pkt_hdr *h,
							     const uint8_t *payload, bool *mapped)
{
	const struct dnp_buf *b;
	uint64_t start = h->va - h->offset;
	int rc = dnp_buftab_lookup(e->bt, h->dst_port, start, h->msg_len ? h->msg_len : 1, h->key,
				   DNP_BUF_PUT_TARGET, &b);

	*mapped = rc == 0 && e->c.rx_map_priv && b->priv;
	if (*mapped)
		rx8_copy_mapped((uint8_t *)b->priv + (h->va - b->va), payload, h->len);
	else if (rc == 0 && h->len &&
		 e->c.mem->write(e->c.mem_ctx, h->dst_port, b, h->va, payload, h->len))
		rc = -EFAULT;
	if (rc < 0) {
		if (h->flags & DNP_PKT_F_LAST)
			(void)engine_mem_settle(e, h->dst_port, start, h->msg_len);
		return rc;
	}
	e->st.bytes_delivered += h->len;
	return 0;
}

/*
 * The writes of a message into [va, va + len) of port have landed (struct
 * dnp_mem_ops, flush): 0, or -EFAULT if one of them failed.
 */
int engine_mem_settle(struct dnp_engine *e, unsigned port, uint64_t va, uint64_t len)
{
	if (!e->c.mem->flush)
		return 0;
	return e->c.mem->flush(e->c.mem_ctx, port, va, len) ? -EFAULT : 0;
}

/*
 * Has the message of h, whose last fragment write_keyed just wrote, landed
 * whole without mem->flush? When it is this one packet, written through the
 * buffer's mapping. A message of several packets is settled through the
 * driver all the same: its earlier fragments may have gone through
 * mem->write (the buffer registered anew in between).
 */
static inline bool settled(bool mapped, const struct dnp_pkt_hdr *h)
{
	return mapped && (h->flags & DNP_PKT_F_FIRST);
}

/*
 * Follows the fragment sequence of PUTs from h's source; true if h completes
 * one whole. A single-packet PUT is whole by itself and leaves the sequence
 * alone: under adaptive routing it may arrive between the fragments of an
 * earlier multi-packet PUT of the same source (docs/routing.md, "Ordering").
 * The source is a source node id, or with arbitration a (node, class) key.
 */
static bool put_track(struct dnp_engine *e, const struct dnp_pkt_hdr *h, uint32_t src)
{
	/*
	 * With arbitration a higher class may pass a lower one's fragments, so
	 * each class of a source keeps its own sequence (packets of one class
	 * stay in order: docs/routing.md, "Traffic classes and virtual
	 * channels"). nputs is the number of keys unless that is above
	 * PUTTRACK_MAX: no division then.
	 */
	if ((h->flags & DNP_PKT_F_FIRST) && (h->flags & DNP_PKT_F_LAST))
		return h->offset == 0 && h->len == h->msg_len; /* before the table: not needed */
	if (e->c.arbitration)
		src = src * DNP_ARB_CLASSES + dnp_pkt_tc(h);
	struct puttrack *t = &e->puts[src < e->nputs ? src : src % e->nputs];
	bool same = t->src_id == src && t->msg_id == h->msg_id && t->port == h->src_port;

	if (h->flags & DNP_PKT_F_FIRST) {
		*t = (struct puttrack){ .src_id = src,
					.msg_id = h->msg_id,
					.port = h->src_port,
					.next = h->offset + h->len,
					.ok = h->offset == 0 };
	} else if (same && t->ok && h->offset == t->next) {
		t->next += h->len;
	} else {
		if (same)
			t->ok = 0;
		e->st.rx_incomplete++;
		return false;
	}
	return t->ok && t->next == h->msg_len;
}

static int deliver_put(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload,
		       struct evq *q, uint64_t now)
{
	bool mapped;
	int rc = write_keyed(e, h, payload, &mapped);

	if (rc < 0)
		return engine_deliver_fail(e, h, rc, now);
	uint32_t src = dnp_torus_id(&e->c.torus, h->src);
	bool whole = put_track(e, h, src);
	if (!(h->flags & DNP_PKT_F_LAST))
		return 0;
	rc = settled(mapped, h) ? 0 :
				  engine_mem_settle(e, h->dst_port, h->va - h->offset, h->msg_len);
	if (!whole) /* fragments lost, or late by another path */
		return engine_outcome_incomplete(e, h, now);
	if (rc < 0)
		return engine_deliver_fail(e, h, rc, now);
	return rx_done(e, h, src, q, DNP_EV_RX_PUT, DNP_OP_PUT, h->va - h->offset, now);
}

static int deliver_get_resp(struct dnp_engine *e, const struct dnp_pkt_hdr *h,
			    const uint8_t *payload, uint64_t now)
{
	bool mapped;
	int rc = write_keyed(e, h, payload, &mapped);

	if (rc < 0)
		return engine_deliver_fail(e, h, rc, now);
	struct slot *s = engine_slot_by_msg(e, h->msg_id);
	if (s)
		s->got += h->len;
	if (h->flags & DNP_PKT_F_LAST) {
		rc = settled(mapped, h) ?
			     0 :
			     engine_mem_settle(e, h->dst_port, h->va - h->offset, h->msg_len);
		if (s) {
			s->c.rsvd1 = h->hops;
			/* every byte, or some were lost with a link on the way */
			engine_complete(e, s, s->got != s->c.len ? -ENOLINK : rc);
		}
	}
	return 0;
}

/*
 * A GET request: the request itself becomes the responder job, so accepting
 * a GET never waits for anything: a request that had to wait for a free
 * responder would block its input FIFO, and two nodes GETting from each
 * other could then wait on each other for ever.
 */
static int deliver_get_req(struct dnp_engine *e, const struct dnp_pkt_hdr *h,
			   const uint8_t *payload, struct pkt *p, uint64_t now)
{
	struct dnp_get_desc d;
	const struct dnp_buf *b;
	struct dnp_hop hop;

	memcpy(&d.dst_va, payload, 8);
	memcpy(&d.dst_key, payload + 8, 4);
	memcpy(&d.len, payload + 12, 4);
	d.dst_va = le64toh(d.dst_va);
	d.dst_key = le32toh(d.dst_key);
	d.len = le32toh(d.len);
	int rc = dnp_buftab_lookup(e->bt, h->dst_port, h->va, d.len ? d.len : 1, h->key,
				   DNP_BUF_GET_SOURCE, &b);
	if (rc < 0)
		return engine_deliver_fail(e, h, rc, now);
	uint16_t via;
	if (dnp_route_plan(&e->router, h->src, &via) < 0 ||
	    dnp_route_step(&e->router, e->c.self, h->src, via, DNP_DIR_LOCAL, 0, &hop) < 0)
		return engine_deliver_fail(e, h, -EHOSTUNREACH, now);
	struct pkt *job = p ? p : engine_pkt_get(e, DNP_FRAME_OVERHEAD);
	if (!job)
		return -EAGAIN;
	job->h = *h;
	job->job_off = 0;
	job->job_dst_va = d.dst_va;
	job->job_dst_key = d.dst_key;
	job->job_len = d.len;
	job->job_q = hop.dir;
	job->job_via = via;
	e->dirty = true;
	if (p)
		return DELIVER_KEPT; /* still at the head of its FIFO: the caller moves it */
	engine_q_push(&e->resp[hop.dir], job);
	return 0;
}

/*
 * A packet for this node; p is its buffer (NULL for loopback, where the
 * header and payload live on the stack). Returns 0 when handled,
 * DELIVER_KEPT when p now belongs to a responder queue, DELIVER_FULL when
 * its port's event queue has no room, or -EAGAIN when no buffer for the
 * answer is free: it then stays where it is.
 */
static int deliver(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload,
		   struct pkt *p, uint64_t now)
{
	struct evq *q = h->dst_port < e->c.max_ports ? &e->ports[h->dst_port] : NULL;
	uint8_t oport;

	switch (h->kind) {
	case DNP_PKT_CMPL:
		engine_handle_cmpl(e, &h->src, h->msg_id, -(int)h->status);
		for (unsigned i = 0; i + 4u <= h->len; i += 4u) { /* the batch (pkt.h) */
			uint32_t id;
			memcpy(&id, payload + i, 4);
			engine_handle_cmpl(e, &h->src, le32toh(id), -(int)h->status);
		}
		return 0;
	case DNP_PKT_QUERY:
		engine_query_take(e, h, payload, now);
		return 0;
	case DNP_PKT_DIAG:
		engine_diag_take(e, h, payload);
		return 0;
	case DNP_PKT_ROUTE:
		engine_route_take(e, h, payload);
		return 0;
	case DNP_PKT_COLL: /* collectives (coll.c) */
		engine_coll_take(e, h, payload, now);
		return 0;
	case DNP_PKT_CREDIT:
		return 0;
	default:
		break;
	}

	/*
	 * Everything below may answer with a completion report, which needs at
	 * most one buffer (engine_send_cmpl: a success report joins its batch or
	 * flushes one; an error report takes the buffer a batch would). With
	 * it checked here, engine_send_cmpl cannot refuse the report of a message
	 * already written.
	 */
	if (!engine_coord_self(e, engine_pkt_owner(h, &oport)) &&
	    !engine_pool_has(e, CMPL_FRAME_MAX))
		return -EAGAIN;
	/* a message declared not delivered to a QUERY is never applied but as its resend */
	if (e->nrefused && engine_outcome_refuse(e, h, now)) {
		e->st.rx_refused++;
		return 0;
	}
	if ((h->flags & DNP_PKT_F_LAST) && q && q->open &&
	    (h->kind == DNP_PKT_PUT || h->kind == DNP_PKT_SEND) && !engine_evq_room(e, q))
		return DELIVER_FULL;
	if (!q || !q->open)
		return engine_deliver_fail(e, h, -ECONNREFUSED, now);

	switch (h->kind) {
	case DNP_PKT_PUT:
		return deliver_put(e, h, payload, q, now);
	case DNP_PKT_GET_RESP:
		return deliver_get_resp(e, h, payload, now);
	case DNP_PKT_SEND:
		return engine_deliver_send(e, h, payload, q, now);
	case DNP_PKT_GET_REQ:
		return deliver_get_req(e, h, payload, p, now);
	default:
		return engine_deliver_fail(e, h, -EBADMSG, now);
	}
}

/*
 * The last fragment h of a PUT or SEND waited deliver_timeout for room in
 * its port's event queue (the application stopped draining its events):
 * the message fails back to its sender with -EOVERFLOW, so that the traffic
 * behind it in the FIFO (transit traffic of other nodes) moves on. A SEND's
 * buffer goes back to the head of the port's queue. The caller checked
 * that a buffer for the report is free.
 */
void engine_deliver_give_up(struct dnp_engine *e, const struct dnp_pkt_hdr *h, uint64_t now)
{
	if (h->kind == DNP_PKT_SEND && !(h->flags & DNP_PKT_F_FIRST)) {
		struct sendasm *a = engine_send_find(e, h);
		if (a) {
			engine_send_end(e, a);
			engine_post_front(e, a->dst_port, a->va, a->len);
		}
	}
	e->st.deliver_timeouts++;
	if (h->dst_port < e->c.max_ports)
		e->ports[h->dst_port].overrun = true;
	(void)engine_deliver_fail(e, h, -EOVERFLOW, now);
}

/*
 * A message for 'port' waits for room in its event queue (w: the wait of
 * the queue head it sits at). True when it waited deliver_timeout, or at
 * once if the port is already overrun.
 */
bool engine_full_wait_over(struct dnp_engine *e, struct inwait *w, uint8_t port, uint64_t now)
{
	if (!e->c.deliver_timeout)
		return false;
	if (port < e->c.max_ports && e->ports[port].overrun)
		return true;
	if (!w->on) {
		w->on = true;
		w->since = now;
	}
	return now - w->since >= e->c.deliver_timeout;
}

int engine_deliver(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload,
		   struct pkt *p, uint64_t now)
{
	if (!e->cg)
		return deliver(e, h, payload, p, now);
	/* congestion ecn: a data packet's mark goes into its report, a report's is the echo */
	e->cg_rx_ce = (h->fstatus & DNP_FT_CE) != 0;
	int rc = deliver(e, h, payload, p, now);
	e->cg_rx_ce = false;
	return rc;
}

bool engine_rx8_port(struct dnp_engine *e, struct rx8_run *r, uint8_t port)
{
	struct evq *q;
	uint32_t used;

	if (port >= e->c.max_ports)
		return false;
	q = &e->ports[port];
	used = engine_evq_used(q) + q->reserved;
	if (!q->open || used >= e->c.event_queue)
		return false;
	r->q = q;
	r->port = port;
	r->ev_room = e->c.event_queue - used;
	return true;
}

bool engine_rx8_source(struct dnp_engine *e, struct rx8_run *r, const struct dnp_pkt_hdr *h)
{
	struct cmplb *b;

	if (engine_coord_self(e, h->src) || !(b = engine_cmplb_of(e, h->src, h->src_port)))
		return false;
	r->sb = b;
	r->src = h->src;
	r->sport = h->src_port;
	r->src_id = dnp_torus_id(&e->c.torus, h->src);
	/* what its RX_PUT events share, as rx_done writes them (hops, msg_id, len, va: per PUT) */
	r->ev = (struct dnp_event){
		.type = DNP_EV_RX_PUT,
		.op = DNP_OP_PUT,
		.port = h->src_port,
		.peer_x = h->src.x,
		.peer_y = h->src.y,
		.peer_z = h->src.z,
	};
	return true;
}

int engine_rx8_write(struct dnp_engine *e, struct rx8_run *r, const struct dnp_pkt_hdr *h,
		     const uint8_t *payload, uint64_t now)
{
	bool wrong = h->len &&
		     e->c.mem->write(e->c.mem_ctx, h->dst_port, r->buf, h->va, payload, h->len);
	int settle = engine_mem_settle(e, h->dst_port, h->va - h->offset, h->msg_len);

	if (!wrong && settle == 0)
		return 0;
	if (!wrong)
		r->bytes += h->len; /* written, then not settled */
	rx8_run_drop(r);
	(void)engine_deliver_fail(e, h, -EFAULT, now);
	return 1;
}

bool engine_rx8_lookup(struct dnp_engine *e, struct rx8_run *r, const struct dnp_pkt_hdr *h,
		       uint64_t start, uint64_t len)
{
	const struct dnp_buf *b;

	if (dnp_buftab_lookup(e->bt, h->dst_port, start, len, h->key, DNP_BUF_PUT_TARGET, &b) < 0)
		return false;
	r->buf = b;
	r->buf_gen = dnp_buftab_gen(e->bt);
	return true;
}
