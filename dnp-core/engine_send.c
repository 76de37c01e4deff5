/* SPDX-License-Identifier: MIT */
/*
 * engine_send.c — SEND targets and SEND reassembly: posted buffers taken in
 * order, multi-packet SENDs followed fragment by fragment, buffers returned
 * when a SEND fails. Contract: engine_priv.h, "SEND reassembly".
 */
#include "engine_priv.h"

/* Removes a SEND post of port q whose buffer starts at va (if any). */
void engine_post_remove(struct dnp_engine *e, struct evq *q, uint64_t va)
{
	uint32_t *pp = &q->send_head, prev = NO_SLOT;

	while (*pp != NO_SLOT) {
		struct post *po = &e->posts[*pp];
		if (po->va == va) {
			uint32_t idx = *pp;
			*pp = po->next;
			if (q->send_tail == idx)
				q->send_tail = prev;
			po->next = e->free_post;
			po->used = 0;
			e->free_post = idx;
			return;
		}
		prev = *pp;
		pp = &po->next;
	}
}

struct sendasm *engine_send_find(struct dnp_engine *e, const struct dnp_pkt_hdr *h)
{
	for (uint32_t i = 0; i < e->c.max_sends; i++) {
		struct sendasm *a = &e->sends[i];
		if (a->active && a->msg_id == h->msg_id && a->src_port == h->src_port &&
		    a->dst_port == h->dst_port && dnp_coord_eq(a->src, h->src))
			return a;
	}
	return NULL;
}

static struct sendasm *send_new(struct dnp_engine *e)
{
	for (uint32_t i = 0; i < e->c.max_sends; i++)
		if (!e->sends[i].active)
			return &e->sends[i];
	return NULL;
}

/* The reassembly slot is free again (a single-packet SEND never took one). */
void engine_send_end(struct dnp_engine *e, struct sendasm *a)
{
	if (a->active) {
		a->active = false;
		e->nsends--;
	}
}

/*
 * A SEND that took buffer va of port failed before its end: the buffer
 * goes back to the head of the port's SEND queue, if it is still a
 * registered SEND target (a free post exists: every post is a registered
 * SEND buffer, and this one has none).
 */
void engine_post_front(struct dnp_engine *e, uint8_t port, uint64_t va, uint64_t len)
{
	struct evq *q = &e->ports[port];
	const struct dnp_buf *b = dnp_buftab_find(e->bt, port, va, len);

	if (!q->open || !b || b->va != va || !(b->flags & DNP_BUF_SEND_TARGET) ||
	    e->free_post == NO_SLOT)
		return;
	for (uint32_t k = q->send_head; k != NO_SLOT; k = e->posts[k].next)
		if (e->posts[k].va == va)
			return; /* registered anew meanwhile: already posted */
	uint32_t i = e->free_post;
	struct post *po = &e->posts[i];
	e->free_post = po->next;
	*po = (struct post){ .va = va, .len = len, .next = q->send_head, .used = 1 };
	q->send_head = i;
	if (q->send_tail == NO_SLOT)
		q->send_tail = i;
}

/*
 * A multi-packet SEND gets no fragment for reasm_timeout (its sender died,
 * or its path broke): its slot and buffer are reclaimed, and its port hears
 * DNP_EV_RX_ERROR -ETIMEDOUT (counted in rx_events_lost if the port's event
 * queue is full).
 */
void engine_send_timeout(struct dnp_engine *e, struct sendasm *a)
{
	struct evq *q = &e->ports[a->dst_port];
	struct dnp_event ev = {
		.type = DNP_EV_RX_ERROR,
		.op = DNP_OP_SEND,
		.port = a->src_port,
		.peer_x = a->src.x,
		.peer_y = a->src.y,
		.peer_z = a->src.z,
		.status = -ETIMEDOUT,
		.msg_id = a->msg_id,
		.len = a->msg_len,
		.va = a->va,
	};

	/* its rest, if it comes, is refused: the port heard the error */
	engine_outcome_record(e, dnp_torus_id(&e->c.torus, a->src), a->msg_id, -ETIMEDOUT);
	engine_send_end(e, a);
	e->st.reasm_timeouts++;
	engine_post_front(e, a->dst_port, a->va, a->len);
	if (q->open && engine_evq_room(e, q))
		engine_evq_push(e, q, &ev);
	else
		e->st.rx_events_lost++;
}

/*
 * The reassembly state of a SEND fragment: on the first fragment the head
 * post of the port is consumed (a new slot is taken for a multi-packet
 * message, 'single' is used for a one-packet one). Returns 0 with *out set,
 * or -ENOBUFS, -EMSGSIZE, -EBUSY.
 */
static int send_slot(struct dnp_engine *e, const struct dnp_pkt_hdr *h, struct evq *q,
		     struct sendasm *single, struct sendasm **out)
{
	struct sendasm *a;

	if (!(h->flags & DNP_PKT_F_FIRST)) {
		*out = engine_send_find(e, h);
		return *out ? 0 : -ENOBUFS; /* its first fragment was refused */
	}
	if (q->send_head == NO_SLOT)
		return -ENOBUFS;
	struct post *po = &e->posts[q->send_head];
	if (h->msg_len > po->len)
		return -EMSGSIZE;
	if (h->flags & DNP_PKT_F_LAST) {
		a = single;
		*a = (struct sendasm){ .va = po->va, .len = po->len };
	} else {
		a = send_new(e);
		/*
		 * Too many multi-packet SENDs arriving at once. Waiting here
		 * would block this input FIFO behind messages whose rest may sit
		 * in it: refuse instead.
		 */
		if (!a)
			return -EBUSY;
		*a = (struct sendasm){ .active = true,
				       .src = h->src,
				       .src_port = h->src_port,
				       .dst_port = h->dst_port,
				       .msg_id = h->msg_id,
				       .va = po->va,
				       .len = po->len,
				       .msg_len = h->msg_len };
		e->nsends++;
	}
	engine_post_remove(e, q, po->va);
	*out = a;
	return 0;
}

/*
 * Was SEND h (a fragment without reassembly state) reported already: its
 * first fragment refused with an error? Then the rest of it is refused the
 * same way; otherwise its first fragment is still on its way.
 */
static bool send_reported(struct dnp_engine *e, const struct dnp_pkt_hdr *h)
{
	const struct outcome *o = engine_outcome_at(e, h->src, h->msg_id);

	return !o || (o->msg_id == h->msg_id && o->state != OUT_EMPTY);
}

int engine_deliver_send(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload,
			struct evq *q, uint64_t now)
{
	struct sendasm *a, single;
	int rc = send_slot(e, h, q, &single, &a);

	if (rc == -ENOBUFS && (h->flags & DNP_PKT_F_LAST) && !(h->flags & DNP_PKT_F_FIRST) &&
	    !send_reported(e, h))
		return engine_outcome_incomplete(e, h, now); /* its first fragment is late */
	if (rc < 0)
		return engine_deliver_fail(e, h, rc, now);
	/* SEND-target buffers are chosen by the receiver: no key to check */
	const struct dnp_buf *b = dnp_buftab_find(e->bt, h->dst_port, a->va + h->offset, h->len);
	rc = b && (b->flags & DNP_BUF_SEND_TARGET) ? 0 : -ENOENT;
	if (rc == 0 && h->len &&
	    e->c.mem->write(e->c.mem_ctx, h->dst_port, b, a->va + h->offset, payload, h->len))
		rc = -EFAULT;
	if (h->flags & DNP_PKT_F_LAST) {
		int src = engine_mem_settle(e, h->dst_port, a->va, h->msg_len);

		if (rc == 0)
			rc = src;
	}
	if (rc < 0) {
		engine_send_end(e, a);
		engine_post_front(e, h->dst_port, a->va,
				  a->len); /* the message failed: its buffer is free */
		return engine_deliver_fail(e, h, rc, now);
	}
	e->st.bytes_delivered += h->len;
	a->t_last = now;
	a->got += h->len;
	if (!(h->flags & DNP_PKT_F_LAST))
		return 0;
	engine_send_end(e, a);
	if (a->got != h->msg_len) { /* fragments lost, or late by another path */
		engine_post_front(e, h->dst_port, a->va, a->len);
		return engine_outcome_incomplete(e, h, now);
	}
	return engine_deliver_rx_done(e, h, dnp_torus_id(&e->c.torus, h->src), q, DNP_EV_RX_SEND,
				      DNP_OP_SEND, a->va, now);
}
