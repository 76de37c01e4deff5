/* SPDX-License-Identifier: MIT */
/*
 * FI_MSG and FI_TAGGED of the provider "dnp": the protocol of dnp_fi.h
 * (contract: dnp_fi_priv.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnp_fi_priv.h"

/* ------------------------------------------------------------ sending */

void dfi_fail(struct dfi_ep *ep, int err, const char *what)
{
	if (!ep->fatal)
		fprintf(stderr, "dnp provider: %s: %s\n", what, dnp_strerror(err));
	if (!ep->fatal)
		ep->fatal = err;
}

static void dfi_stage_issue(struct dfi_ep *ep, unsigned idx, unsigned k)
{
	struct dfi_peer *pe = ep->peers[idx];
	struct dfi_stage *s = &pe->st[k];
	int r;

	r = dnp_put(ep->dom->d, pe->stage_mem + (size_t)k * DFI_SLOT, s->len, pe->c, pe->port,
		    pe->ring_va + (uint64_t)(s->seq % DFI_K) * DFI_SLOT, pe->ring_key,
		    dnp_reqtab_cookie(C_STAGE, idx, k), DNP_NONBLOCK | ep->dom->tc);
	dnp_stage_issued(&s->state, &pe->pending, r);
	ep->dom->posted |= r == 0;
	if (r == -EAGAIN)
		ep->peer_work = true; /* issued again by a later poll */
	else if (r != 0)
		dfi_fail(ep, r, "PUT");
}

/*
 * A free staging slot for our next message to peer idx, or DFI_K if there is
 * none or the peer has DFI_K of our messages not yet consumed (credits).
 */
static unsigned dfi_slot_free(struct dfi_ep *ep, unsigned idx)
{
	struct dfi_peer *pe = ep->peers[idx];
	uint64_t back = __atomic_load_n(&ep->credit_in[idx], __ATOMIC_ACQUIRE);
	unsigned k;

	if (back < pe->ack_in)
		back = pe->ack_in;
	if (pe->sent - back >= DFI_K)
		return DFI_K; /* out of credits: wait for the receiver */
	for (k = 0; k < DFI_K; k++)
		if (pe->st[k].state == S_FREE)
			break;
	return k;
}

/* Header fields every message to peer idx carries: where its credits go. */
static void dfi_hdr_fill(struct dfi_ep *ep, unsigned idx, struct dfi_hdr *h)
{
	h->magic = DFI_MAGIC;
	h->credit_va = (uintptr_t)ep->credit_in + (uint64_t)idx * sizeof(uint64_t);
	h->credit_key = ep->credit_key;
}

/*
 * Message h (its next sequence number and our credits for the peer are set
 * here) plus plen bytes of payload into free staging slot k, and its PUT.
 */
static void dfi_stage_msg(struct dfi_ep *ep, unsigned idx, unsigned k, struct dfi_hdr *h,
			  const void *payload, size_t plen)
{
	struct dfi_peer *pe = ep->peers[idx];
	uint8_t *m = pe->stage_mem + (size_t)k * DFI_SLOT;

	h->seq = pe->next_seq++;
	/* Credits for the peer's messages ride along (no credit PUT needed). */
	h->ack = (uint32_t)pe->consumed;
	pe->acked = pe->consumed;
	memcpy(m, h, DFI_HDR);
	if (plen)
		memcpy(m + DFI_HDR, payload, plen);
	pe->st[k].len = (uint32_t)(DFI_HDR + plen);
	pe->st[k].seq = h->seq;
	pe->st[k].state = S_PENDING;
	pe->pending++;
	pe->sent++;
	dfi_stage_issue(ep, idx, k);
}

void dfi_push(struct dfi_ep *ep, unsigned idx)
{
	struct dfi_peer *pe = ep->peers[idx];
	unsigned k;

	if (pe->pending)
		for (k = 0; k < DFI_K; k++)
			if (pe->st[k].state == S_PENDING)
				dfi_stage_issue(ep, idx, k);
	while (pe->q_head) {
		struct dfi_out *o = pe->q_head;

		k = dfi_slot_free(ep, idx);
		if (k == DFI_K)
			return;
		pe->q_head = o->next;
		if (!pe->q_head)
			pe->q_tail = NULL;
		dfi_stage_msg(ep, idx, k, &o->h, o->copy ? o->copy : o->payload, o->plen);
		if (o->req) { /* eager send: the buffer may be reused */
			struct dfi_req *q = o->req;

			if (q->comp)
				dfi_cq_write(ep->tx_cq, q->context, q->flags, 0, NULL, 0,
					     FI_ADDR_NOTAVAIL);
			dfi_count(ep, q->flags, false);
			dfi_req_free(ep, q);
		}
		free(o->copy);
		free(o);
	}
}

static int dfi_enqueue(struct dfi_ep *ep, unsigned idx, struct dfi_hdr *h, const void *payload,
		       size_t plen, bool copy, struct dfi_req *req)
{
	struct dfi_peer *pe = ep->peers[idx];
	struct dfi_out *o = calloc(1, sizeof(*o));

	if (!o)
		return -FI_ENOMEM;
	dfi_hdr_fill(ep, idx, h);
	o->h = *h;
	o->payload = payload;
	o->plen = plen;
	o->req = req;
	if (copy && plen) {
		o->copy = malloc(plen);
		if (!o->copy) {
			free(o);
			return -FI_ENOMEM;
		}
		memcpy(o->copy, payload, plen);
	}
	if (pe->q_tail)
		pe->q_tail->next = o;
	else
		pe->q_head = o;
	pe->q_tail = o;
	ep->peer_work = true;
	return 0;
}

int dfi_notify_write(struct dfi_ep *ep, unsigned idx, uint64_t len, uint64_t data)
{
	struct dfi_hdr h = { .type = DFI_WDATA, .flags = DFI_HF_DATA, .len = len };
	int r;

	h.data = (uint32_t)data;
	r = dfi_enqueue(ep, idx, &h, NULL, 0, false, NULL);
	if (r == 0)
		dfi_push(ep, idx);
	return r;
}

/*
 * Credits go back in the headers of our own messages to that peer (ack);
 * a credit PUT only once DFI_CREDIT_BATCH or more are owed (a one-way
 * stream), or again after a credit PUT failed. Never stuck: a sender out
 * of credits has DFI_K > DFI_CREDIT_BATCH messages that we consume.
 */
void dfi_credit_return(struct dfi_ep *ep, unsigned idx)
{
	struct dfi_peer *pe = ep->peers[idx];
	uint64_t owed;
	int r;

	if (!pe || pe->credit_busy || !pe->have_credit)
		return;
	owed = pe->consumed - pe->acked;
	if (owed == 0 || (owed < DFI_CREDIT_BATCH && !pe->credit_force))
		return;
	ep->peer_work = true; /* until the PUT below is issued and its event came */
	if (pe->credit_retry_at && dfi_now() < pe->credit_retry_at)
		return;
	ep->credit_out[idx] = pe->consumed;
	r = dnp_put(ep->dom->d, &ep->credit_out[idx], sizeof(uint64_t), pe->c, pe->port,
		    pe->credit_va, pe->credit_key, dnp_reqtab_cookie(C_CREDIT, idx, 0),
		    DNP_NONBLOCK | ep->dom->tc);
	if (r == 0) {
		ep->dom->posted = true;
		pe->credit_busy = true;
		pe->acked = pe->consumed;
	} else if (r != -EAGAIN) {
		dfi_fail(ep, r, "credit PUT");
	}
}

/* Piggybacked credits (32 bits of a count): never more than we sent. */
static void dfi_ack_in(struct dfi_peer *pe, uint32_t ack)
{
	int32_t d = (int32_t)(ack - (uint32_t)pe->ack_in);

	if (d > 0 && pe->ack_in + (uint64_t)d <= pe->sent)
		pe->ack_in += (uint64_t)d;
}

/* ------------------------------------------------------------ receiving */

static bool dfi_match(const struct dfi_req *q, const struct dfi_hdr *h, fi_addr_t src)
{
	if (q->src != FI_ADDR_UNSPEC && q->src != src)
		return false;
	return !(h->flags & DFI_HF_TAGGED) || ((q->tag ^ h->tag) & ~q->ignore) == 0;
}

static uint64_t dfi_rx_flags(const struct dfi_hdr *h)
{
	return FI_RECV | (h->flags & DFI_HF_TAGGED ? FI_TAGGED : FI_MSG) |
	       (h->flags & DFI_HF_DATA ? FI_REMOTE_CQ_DATA : 0);
}

static void dfi_recv_complete(struct dfi_ep *ep, struct dfi_req *q, const struct dfi_hdr *h,
			      size_t n, fi_addr_t src, int err)
{
	if (err == -FI_ETRUNC)
		dfi_cq_error(ep->rx_cq, q->context, dfi_rx_flags(h), n, q->buf, h->tag, h->len - n,
			     FI_ETRUNC);
	else if (err)
		dfi_cq_error(ep->rx_cq, q->context, dfi_rx_flags(h), 0, q->buf, h->tag, 0, -err);
	else if (q->comp)
		dfi_cq_write_data(ep->rx_cq, q->context, dfi_rx_flags(h), n, q->buf, h->tag,
				  dfi_hdr_data(h), src);
	dfi_count(ep, FI_RECV, err != 0);
	dfi_req_free(ep, q);
}

static void dfi_fin(struct dfi_ep *ep, unsigned idx, uint64_t id, int status)
{
	struct dfi_hdr h = { .type = DFI_FIN, .id = id, .status = status };

	if (dfi_enqueue(ep, idx, &h, NULL, 0, false, NULL) < 0)
		dfi_fail(ep, -ENOMEM, "FIN");
}

void dfi_get_issue(struct dfi_ep *ep, struct dfi_req *q)
{
	struct dfi_peer *pe = ep->peers[q->rts_peer];
	int r;

	r = dnp_get(ep->dom->d, q->bounce ? q->bounce : q->buf, q->got, q->reg->key, pe->c,
		    pe->port, q->rts.va, q->rts.key, dnp_reqtab_cookie(C_GET, q->idx, q->gen),
		    DNP_NONBLOCK | ep->dom->tc);
	if (r == 0) {
		ep->dom->posted = true;
		q->getting = true;
		return;
	}
	if (r == -EAGAIN) {
		q->next = ep->gets;
		ep->gets = q;
		return;
	}
	dfi_unreg_user(ep->dom, q);
	dfi_fin(ep, q->rts_peer, q->rts.id, r);
	dfi_recv_complete(ep, q, &q->rts, 0, pe->fiaddr, r);
}

void dfi_get_done(struct dfi_ep *ep, struct dfi_req *q, const struct dnp_event *ev)
{
	struct dfi_peer *sp = ep->peers[q->rts_peer];
	int st = ev->type == DNP_EV_GET_DONE ? 0 : ev->status ? ev->status : -EIO;

	/* only a receive whose GET we issued: any other is a forged event */
	if (!q->getting || !sp)
		return;
	q->getting = false;
	if (!st && q->bounce)
		memcpy(q->buf, q->bounce, q->got);
	dfi_unreg_user(ep->dom, q);
	dfi_fin(ep, q->rts_peer, q->rts.id, st);
	dfi_recv_complete(ep, q, &q->rts, st ? 0 : q->got, dfi_src_addr(ep, sp),
			  st                  ? st :
			  q->rts.len > q->cap ? -FI_ETRUNC :
						0);
}

static void dfi_deliver(struct dfi_ep *ep, struct dfi_req *q, const struct dfi_hdr *h,
			const void *data, unsigned idx)
{
	fi_addr_t src = dfi_src_addr(ep, ep->peers[idx]);
	size_t n = h->len < q->cap ? h->len : q->cap;
	int r;

	if (h->type == DFI_EAGER_MSG) {
		if (n)
			memcpy(q->buf, data, n);
		dfi_recv_complete(ep, q, h, n, src, h->len > q->cap ? -FI_ETRUNC : 0);
		return;
	}
	/* rendez-vous: fetch what fits straight into the receive buffer */
	q->rts = *h;
	q->rts_peer = idx;
	q->got = n;
	if (n == 0) {
		dfi_fin(ep, idx, h->id, 0);
		dfi_recv_complete(ep, q, h, 0, src, h->len ? -FI_ETRUNC : 0);
		return;
	}
	r = dfi_reg_user(ep->dom, q, q->buf, n, false);
	if (r < 0) {
		dfi_fin(ep, idx, h->id, r);
		dfi_recv_complete(ep, q, h, 0, src, r);
		return;
	}
	dfi_get_issue(ep, q);
}

static void dfi_incoming(struct dfi_ep *ep, const struct dfi_hdr *h, const void *data, unsigned idx)
{
	int t = h->flags & DFI_HF_TAGGED ? 1 : 0;
	fi_addr_t src = dfi_src_addr(ep, ep->peers[idx]);
	struct dfi_req **pp, *q = NULL, *prev = NULL;
	struct dfi_unexp *u;

	for (pp = &ep->posted[t]; *pp; prev = *pp, pp = &(*pp)->next)
		if (dfi_match(*pp, h, src)) {
			q = *pp;
			*pp = q->next;
			if (ep->posted_tail[t] == q)
				ep->posted_tail[t] = prev;
			break;
		}
	if (q) {
		dfi_deliver(ep, q, h, data, idx);
		return;
	}
	u = calloc(1, sizeof(*u));
	if (!u || (h->type == DFI_EAGER_MSG && h->len && !(u->data = malloc(h->len)))) {
		free(u);
		dfi_fail(ep, -ENOMEM, "unexpected message");
		return;
	}
	u->h = *h;
	u->peer = idx;
	if (h->type == DFI_EAGER_MSG && h->len)
		memcpy(u->data, data, h->len);
	if (ep->unexp_tail[t])
		ep->unexp_tail[t]->next = u;
	else
		ep->unexp[t] = u;
	ep->unexp_tail[t] = u;
}

static void dfi_dispatch(struct dfi_ep *ep, const struct dfi_hdr *h, const void *data, unsigned idx)
{
	struct dfi_req *q;

	if (h->type == DFI_WDATA) {
		dfi_cq_write_data(ep->rx_cq, NULL, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
				  h->len, NULL, 0, dfi_hdr_data(h),
				  dfi_src_addr(ep, ep->peers[idx]));
		return;
	}
	if (h->type != DFI_FIN) {
		dfi_incoming(ep, h, data, idx);
		return;
	}
	q = dnp_reqtab_find_id(&ep->reqs, h->id);
	if (!q || q->kind != R_SEND)
		return;
	dfi_unreg_user(ep->dom, q);
	if (h->status)
		dfi_cq_error(ep->tx_cq, q->context, q->flags, 0, NULL, 0, 0, -h->status);
	else if (q->comp)
		dfi_cq_write(ep->tx_cq, q->context, q->flags, 0, NULL, 0, FI_ADDR_NOTAVAIL);
	dfi_count(ep, q->flags, h->status != 0);
	dfi_req_free(ep, q);
}

void dfi_rx(struct dfi_ep *ep, const struct dnp_event *ev)
{
	uint64_t base = (uintptr_t)ep->ring, off;
	struct dfi_domain *dom = ep->dom;
	struct dfi_peer *pe;
	struct dfi_hdr h;
	const uint8_t *slot;
	unsigned idx;

	if (ev->va < base || ev->va >= base + (uint64_t)dom->nidx * DFI_K * DFI_SLOT)
		return; /* a credit update: read from credit_in */
	off = ev->va - base;
	idx = (unsigned)(off / ((uint64_t)DFI_K * DFI_SLOT));
	slot = ep->ring + off;
	if (off % DFI_SLOT || ev->len < DFI_HDR || ev->len > DFI_SLOT ||
	    idx != dfi_idx(dom, ev->peer_x, ev->peer_y, ev->peer_z, ev->port))
		return;
	memcpy(&h, slot, DFI_HDR);
	if (h.magic != DFI_MAGIC || (h.flags & ~(DFI_HF_TAGGED | DFI_HF_DATA)) ||
	    (h.type == DFI_EAGER_MSG && h.len != ev->len - DFI_HDR) ||
	    (h.type != DFI_EAGER_MSG && ev->len != DFI_HDR) || h.type < DFI_EAGER_MSG ||
	    h.type > DFI_WDATA || !h.credit_key)
		return;
	pe = dfi_peer(ep, idx);
	if (!pe)
		return;
	if (pe->have_credit && pe->credit_key != h.credit_key)
		dfi_peer_reset(ep, idx); /* a new endpoint on the old one's port */
	if (pe->port == ~0u)
		pe->port = ev->port;
	pe->credit_va = h.credit_va;
	pe->credit_key = h.credit_key;
	pe->have_credit = true;
	dfi_ack_in(pe, h.ack);
	if (!pe->have_ring) {
		/*
		 * Not in our AV (yet): the sender's credit arrays and rings are one
		 * registered area, so its header tells where our ring is.
		 */
		uint64_t area = h.credit_va - (uint64_t)dom->my_idx * sizeof(uint64_t);

		pe->ring_va = area + dfi_cred_len(dom) + (uint64_t)dom->my_idx * DFI_K * DFI_SLOT;
		pe->ring_key = h.credit_key;
		pe->have_ring = true;
	}
	pe->consumed++;
	if (h.seq == pe->expect_seq) {
		pe->expect_seq++;
		dfi_dispatch(ep, &h, slot + DFI_HDR, idx);
	} else if ((int32_t)(h.seq - pe->expect_seq) > 0) {
		struct dfi_held *e = calloc(1, sizeof(*e)), **pp;

		if (!e || (ev->len > DFI_HDR && !(e->data = malloc(ev->len - DFI_HDR)))) {
			free(e);
			dfi_fail(ep, -ENOMEM, "out-of-order message");
			return;
		}
		e->h = h;
		if (ev->len > DFI_HDR)
			memcpy(e->data, slot + DFI_HDR, ev->len - DFI_HDR);
		for (pp = &pe->held; *pp && (int32_t)((*pp)->h.seq - h.seq) < 0; pp = &(*pp)->next)
			;
		e->next = *pp;
		*pp = e;
	}
	while (pe->held && pe->held->h.seq == pe->expect_seq) {
		struct dfi_held *e = pe->held;

		pe->held = e->next;
		pe->expect_seq++;
		dfi_dispatch(ep, &e->h, e->data, idx);
		free(e->data);
		free(e);
	}
	dfi_credit_return(ep, idx);
}

/* ------------------------------------------------------------ data calls */

/* An unexpected message taken out of its list: its data are freed, an RTS's sender is answered. */
static void dfi_unexp_discard(struct dfi_ep *ep, struct dfi_unexp *u)
{
	if (u->h.type == DFI_RTS)
		dfi_fin(ep, u->peer, u->h.id, 0); /* the sender's send completes */
	free(u->data);
	free(u);
}

/* Unlinks u from list t of unexpected messages (prev: its predecessor or NULL). */
static void dfi_unexp_unlink(struct dfi_ep *ep, int t, struct dfi_unexp *u, struct dfi_unexp *prev)
{
	if (prev)
		prev->next = u->next;
	else
		ep->unexp[t] = u->next;
	if (ep->unexp_tail[t] == u)
		ep->unexp_tail[t] = prev;
	u->next = NULL;
}

/*
 * fi_trecvmsg / fi_recvmsg with FI_PEEK or FI_CLAIM (fi_tagged(3)):
 *   FI_PEEK            the first matching unexpected message is reported
 *                      (length, tag, source, data), or FI_ENOMSG; nothing moves
 *   FI_PEEK|FI_CLAIM   the same, and the message is set aside for this
 *                      context (a struct fi_context that the claim keeps)
 *   FI_PEEK|FI_DISCARD the message found is dropped (its sender completes)
 *   FI_CLAIM           the message claimed with this context is received
 *                      into buf (FI_DISCARD: dropped instead)
 * Errors: -FI_EINVAL (FI_CLAIM without a context, or one that holds no
 * claimed message), -FI_ENOMEM.
 */
static ssize_t dfi_peek(struct dfi_ep *ep, void *buf, size_t len, fi_addr_t src, uint64_t tag,
			uint64_t ignore, bool tagged, void *context, uint64_t flags)
{
	struct fi_context *fc = context;
	struct dfi_unexp *u, *prev = NULL;
	struct dfi_req *q;
	int t = tagged ? 1 : 0;

	if (flags & FI_PEEK) {
		struct dfi_req probe = { .src = src, .tag = tag, .ignore = ignore };

		for (u = ep->unexp[t]; u; prev = u, u = u->next)
			if (dfi_match(&probe, &u->h, dfi_src_addr(ep, ep->peers[u->peer])))
				break;
		if (!u) {
			dfi_cq_error(ep->rx_cq, context, FI_RECV | (tagged ? FI_TAGGED : FI_MSG), 0,
				     NULL, tag, 0, FI_ENOMSG);
			return 0;
		}
		if ((flags & FI_CLAIM) && !fc)
			return -FI_EINVAL;
		dfi_cq_write_data(ep->rx_cq, context, dfi_rx_flags(&u->h), u->h.len, NULL, u->h.tag,
				  dfi_hdr_data(&u->h), dfi_src_addr(ep, ep->peers[u->peer]));
		if (flags & (FI_CLAIM | FI_DISCARD))
			dfi_unexp_unlink(ep, t, u, prev);
		if (flags & FI_DISCARD) {
			dfi_unexp_discard(ep, u);
		} else if (flags & FI_CLAIM) {
			u->next = ep->claimed;
			ep->claimed = u;
			fc->internal[0] = u;
		}
		return 0;
	}
	/* FI_CLAIM: the context names a message we set aside (checked, never trusted) */
	for (u = ep->claimed; u && fc; prev = u, u = u->next)
		if (u == fc->internal[0])
			break;
	if (!u || !fc)
		return -FI_EINVAL;
	if (prev)
		prev->next = u->next;
	else
		ep->claimed = u->next;
	fc->internal[0] = NULL;
	if (flags & FI_DISCARD) {
		dfi_cq_write(ep->rx_cq, context, dfi_rx_flags(&u->h), 0, NULL, u->h.tag,
			     dfi_src_addr(ep, ep->peers[u->peer]));
		dfi_count(ep, FI_RECV, false);
		dfi_unexp_discard(ep, u);
		return 0;
	}
	q = dfi_req_new(ep, R_RECV);
	if (!q) {
		u->next = ep->claimed;
		ep->claimed = u;
		fc->internal[0] = u;
		return -FI_ENOMEM;
	}
	q->context = context;
	q->buf = buf;
	q->cap = len;
	q->src = FI_ADDR_UNSPEC;
	q->tagged = tagged;
	q->comp = true;
	dfi_deliver(ep, q, &u->h, u->data, u->peer);
	free(u->data);
	free(u);
	return 0;
}

/* How a data call was made (dfi_send_common, dfi_recv_common). */
#define DFI_OP_TAGGED 1u   /* FI_TAGGED, else FI_MSG */
#define DFI_OP_EXPLICIT 2u /* the *msg calls: flags given, else the endpoint's op_flags */
#define DFI_OP_NOCOMP 4u   /* fi_inject, fi_injectdata: never a completion */

static ssize_t dfi_send_inner(struct dfi_ep *ep, const void *buf, size_t len, fi_addr_t dest,
			      uint64_t tag, uint64_t data, void *context, uint64_t flags,
			      unsigned how)
{
	bool tagged = how & DFI_OP_TAGGED, inject = flags & FI_INJECT, comp;
	struct dfi_hdr h = { .flags = tagged ? DFI_HF_TAGGED : 0, .tag = tag, .len = len };
	struct dfi_peer *pe;
	struct dfi_req *q;
	unsigned idx, k;
	int err = 0;
	ssize_t r;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (ep->fatal)
		return -FI_EIO;
	if (inject && len > DFI_EAGER)
		return -FI_EMSGSIZE;
	if (flags & FI_REMOTE_CQ_DATA) {
		h.flags |= DFI_HF_DATA;
		h.data = (uint32_t)data; /* cq_data_size is 4 */
	}
	pe = dfi_peer_of(ep, dest, &idx, &err);
	if (!pe)
		return err;
	comp = !(how & DFI_OP_NOCOMP) &&
	       dfi_want_comp(ep->tx_flags, how & DFI_OP_EXPLICIT ? flags : ep->tx_op_flags);
	if (len <= DFI_EAGER) {
		/*
		 * Nothing queued before it and a slot with credit free: staged
		 * (copied) at once, so it completes now, with no request, queue
		 * entry or private copy to allocate.
		 */
		if (pe->pending)
			dfi_push(ep, idx);
		if (!pe->q_head && (k = dfi_slot_free(ep, idx)) < DFI_K) {
			h.type = DFI_EAGER_MSG;
			dfi_hdr_fill(ep, idx, &h);
			dfi_stage_msg(ep, idx, k, &h, buf, len);
			if (comp)
				dfi_cq_write(ep->tx_cq, context,
					     FI_SEND | (tagged ? FI_TAGGED : FI_MSG), 0, NULL, 0,
					     FI_ADDR_NOTAVAIL);
			dfi_count(ep, FI_SEND, false);
			return 0;
		}
	}
	q = dfi_req_new(ep, R_SEND);
	if (!q)
		return -FI_ENOMEM;
	q->context = context;
	q->flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
	q->rts_peer = idx;
	q->comp = comp;
	if (len <= DFI_EAGER) {
		h.type = DFI_EAGER_MSG;
		r = dfi_enqueue(ep, idx, &h, buf, len, inject, q);
	} else {
		h.type = DFI_RTS;
		r = dfi_reg_user(ep->dom, q, (void *)(uintptr_t)buf, len, true);
		if (r == 0) {
			h.va = (uintptr_t)(q->bounce ? q->bounce : buf);
			h.key = q->reg->key;
			h.id = dnp_reqtab_id(q->idx, q->gen);
			r = dfi_enqueue(ep, idx, &h, NULL, 0, false, NULL);
			if (r < 0)
				dfi_unreg_user(ep->dom, q);
		}
	}
	if (r < 0) {
		dfi_req_free(ep, q);
		return r;
	}
	dfi_push(ep, idx);
	return 0;
}

static ssize_t dfi_recv_inner(struct dfi_ep *ep, void *buf, size_t len, fi_addr_t src, uint64_t tag,
			      uint64_t ignore, void *context, uint64_t flags, unsigned how)
{
	bool tagged = how & DFI_OP_TAGGED;
	int t = tagged ? 1 : 0;
	struct dfi_unexp **pp, *u, *prev = NULL;
	struct dfi_req *q;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (ep->fatal)
		return -FI_EIO;
	if (!ep->directed)
		src = FI_ADDR_UNSPEC;
	if (src != FI_ADDR_UNSPEC && (!ep->av || src >= ep->av->n))
		return -FI_EINVAL;
	/*
	 * A peek must see what has arrived: it makes progress first. A receive
	 * does not: it matches what the provider holds, then waits in the
	 * posted list, where the next progress (CQ read) delivers straight into
	 * its buffer a message that an earlier progress would have copied into
	 * the unexpected list.
	 */
	if (flags & (FI_PEEK | FI_CLAIM)) {
		dfi_progress(ep);
		return dfi_peek(ep, buf, len, src, tag, ignore, tagged, context, flags);
	}
	q = dfi_req_new(ep, R_RECV);
	if (!q)
		return -FI_ENOMEM;
	q->context = context;
	q->buf = buf;
	q->cap = len;
	q->src = src;
	q->tag = tag;
	q->ignore = ignore;
	q->tagged = tagged;
	q->comp = dfi_want_comp(ep->rx_flags, how & DFI_OP_EXPLICIT ? flags : ep->rx_op_flags);
	for (pp = &ep->unexp[t]; *pp; prev = *pp, pp = &(*pp)->next) {
		u = *pp;
		if (!dfi_match(q, &u->h, dfi_src_addr(ep, ep->peers[u->peer])))
			continue;
		*pp = u->next;
		if (ep->unexp_tail[t] == u)
			ep->unexp_tail[t] = prev;
		dfi_deliver(ep, q, &u->h, u->data, u->peer);
		free(u->data);
		free(u);
		return 0;
	}
	if (ep->posted_tail[t])
		ep->posted_tail[t]->next = q;
	else
		ep->posted[t] = q;
	ep->posted_tail[t] = q;
	return 0;
}

/* The buffer of an iov of at most one entry (iov_limit is 1): -FI_ENOSYS for more. */
static int dfi_iov1(const struct iovec *iov, size_t count, void **buf, size_t *len)
{
	if (count > 1)
		return -FI_ENOSYS;
	*buf = count ? iov[0].iov_base : NULL;
	*len = count ? iov[0].iov_len : 0;
	return 0;
}

/* The *v and *msg calls (an iov of at most one entry) and the inject calls, by what differs. */

/*
 * A data call's first hard error (not -FI_EAGAIN) is said on stderr, once per
 * endpoint: a middleware that maps the code to its own (Open MPI:
 * "MPI_ERR_OTHER: known error not in list") leaves the cause in the output.
 */
static ssize_t dfi_said(struct dfi_ep *ep, ssize_t r, const char *what)
{
	if (r < 0 && r != -FI_EAGAIN && !ep->err_said) {
		ep->err_said = true;
		fprintf(stderr, "dnp provider: %s failed: %s\n", what, fi_strerror((int)-r));
	}
	return r;
}

static ssize_t dfi_send_common(struct dfi_ep *ep, const void *buf, size_t len, fi_addr_t dest,
			       uint64_t tag, uint64_t data, void *context, uint64_t flags,
			       unsigned how)
{
	return dfi_said(ep, dfi_send_inner(ep, buf, len, dest, tag, data, context, flags, how),
			"a send");
}

static ssize_t dfi_recv_common(struct dfi_ep *ep, void *buf, size_t len, fi_addr_t src,
			       uint64_t tag, uint64_t ignore, void *context, uint64_t flags,
			       unsigned how)
{
	return dfi_said(ep, dfi_recv_inner(ep, buf, len, src, tag, ignore, context, flags, how),
			"a receive");
}

static ssize_t dfi_sendv_how(struct fid_ep *fep, const struct iovec *iov, size_t count,
			     fi_addr_t dest, uint64_t tag, uint64_t data, void *context,
			     uint64_t flags, unsigned how)
{
	void *b;
	size_t n;

	return dfi_iov1(iov, count, &b, &n) ?:
		       DOM_LOCKED(EP(fep)->dom, dfi_send_common(EP(fep), b, n, dest, tag, data,
								context, flags, how));
}

static ssize_t dfi_recvv_how(struct fid_ep *fep, const struct iovec *iov, size_t count,
			     fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
			     uint64_t flags, unsigned how)
{
	void *b;
	size_t n;

	return dfi_iov1(iov, count, &b, &n) ?:
		       DOM_LOCKED(EP(fep)->dom, dfi_recv_common(EP(fep), b, n, src, tag, ignore,
								context, flags, how));
}

static ssize_t dfi_inject_how(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest,
			      uint64_t tag, uint64_t data, uint64_t flags, unsigned how)
{
	return DOM_LOCKED(EP(fep)->dom, dfi_send_common(EP(fep), buf, len, dest, tag, data, NULL,
							FI_INJECT | flags,
							how | DFI_OP_EXPLICIT | DFI_OP_NOCOMP));
}

#define T DFI_OP_TAGGED
#define X DFI_OP_EXPLICIT

static ssize_t dfi_tsend(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			 fi_addr_t dest, uint64_t tag, void *context)
{
	return DOM_LOCKED(EP(fep)->dom,
			  dfi_send_common(EP(fep), buf, len, dest, tag, 0, context, 0, T));
}

static ssize_t dfi_tsendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			  fi_addr_t dest, uint64_t tag, void *context)
{
	return dfi_sendv_how(fep, iov, count, dest, tag, 0, context, 0, T);
}

static ssize_t dfi_tsendmsg(struct fid_ep *fep, const struct fi_msg_tagged *m, uint64_t flags)
{
	return dfi_sendv_how(fep, m->msg_iov, m->iov_count, m->addr, m->tag, m->data, m->context,
			     flags, T | X);
}

static ssize_t dfi_tinject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest,
			   uint64_t tag)
{
	return dfi_inject_how(fep, buf, len, dest, tag, 0, 0, T);
}

static ssize_t dfi_tsenddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			     uint64_t data, fi_addr_t dest, uint64_t tag, void *context)
{
	return DOM_LOCKED(EP(fep)->dom, dfi_send_common(EP(fep), buf, len, dest, tag, data, context,
							FI_REMOTE_CQ_DATA, T));
}

static ssize_t dfi_tinjectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
			       fi_addr_t dest, uint64_t tag)
{
	return dfi_inject_how(fep, buf, len, dest, tag, data, FI_REMOTE_CQ_DATA, T);
}

static ssize_t dfi_trecv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
			 uint64_t tag, uint64_t ignore, void *context)
{
	return DOM_LOCKED(EP(fep)->dom,
			  dfi_recv_common(EP(fep), buf, len, src, tag, ignore, context, 0, T));
}

static ssize_t dfi_trecvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			  fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	return dfi_recvv_how(fep, iov, count, src, tag, ignore, context, 0, T);
}

static ssize_t dfi_trecvmsg(struct fid_ep *fep, const struct fi_msg_tagged *m, uint64_t flags)
{
	return dfi_recvv_how(fep, m->msg_iov, m->iov_count, m->addr, m->tag, m->ignore, m->context,
			     flags, T | X);
}

static ssize_t dfi_send(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest,
			void *context)
{
	return DOM_LOCKED(EP(fep)->dom,
			  dfi_send_common(EP(fep), buf, len, dest, 0, 0, context, 0, 0));
}

static ssize_t dfi_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t dest, void *context)
{
	return dfi_sendv_how(fep, iov, count, dest, 0, 0, context, 0, 0);
}

static ssize_t dfi_sendmsg(struct fid_ep *fep, const struct fi_msg *m, uint64_t flags)
{
	return dfi_sendv_how(fep, m->msg_iov, m->iov_count, m->addr, 0, m->data, m->context, flags,
			     X);
}

static ssize_t dfi_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest)
{
	return dfi_inject_how(fep, buf, len, dest, 0, 0, 0, 0);
}

static ssize_t dfi_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			    uint64_t data, fi_addr_t dest, void *context)
{
	return DOM_LOCKED(EP(fep)->dom, dfi_send_common(EP(fep), buf, len, dest, 0, data, context,
							FI_REMOTE_CQ_DATA, 0));
}

static ssize_t dfi_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
			      fi_addr_t dest)
{
	return dfi_inject_how(fep, buf, len, dest, 0, data, FI_REMOTE_CQ_DATA, 0);
}

static ssize_t dfi_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
			void *context)
{
	return DOM_LOCKED(EP(fep)->dom,
			  dfi_recv_common(EP(fep), buf, len, src, 0, 0, context, 0, 0));
}

static ssize_t dfi_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t src, void *context)
{
	return dfi_recvv_how(fep, iov, count, src, 0, 0, context, 0, 0);
}

static ssize_t dfi_recvmsg(struct fid_ep *fep, const struct fi_msg *m, uint64_t flags)
{
	return dfi_recvv_how(fep, m->msg_iov, m->iov_count, m->addr, 0, 0, m->context, flags, X);
}

#undef T
#undef X

/* fi_cancel: a posted receive whose context matches ends with FI_ECANCELED. */
ssize_t dfi_cancel(fid_t fid, void *context)
{
	struct dfi_ep *ep = container_of(fid, struct dfi_ep, ep.fid);
	ssize_t r = -FI_ENOENT;
	int t;

	pthread_mutex_lock(&dfi_lock);
	for (t = 0; t < 2 && r; t++) {
		struct dfi_req **pp, *prev = NULL;

		for (pp = &ep->posted[t]; *pp; prev = *pp, pp = &(*pp)->next) {
			struct dfi_req *q = *pp;

			if (q->context != context)
				continue;
			*pp = q->next;
			if (ep->posted_tail[t] == q)
				ep->posted_tail[t] = prev;
			dfi_cq_error(ep->rx_cq, context, FI_RECV | (t ? FI_TAGGED : FI_MSG), 0,
				     q->buf, q->tag, 0, FI_ECANCELED);
			dfi_req_free(ep, q);
			r = 0;
			break;
		}
	}
	pthread_mutex_unlock(&dfi_lock);
	return r;
}

struct fi_ops_msg dfi_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = dfi_recv,
	.recvv = dfi_recvv,
	.recvmsg = dfi_recvmsg,
	.send = dfi_send,
	.sendv = dfi_sendv,
	.sendmsg = dfi_sendmsg,
	.inject = dfi_inject,
	.senddata = dfi_senddata,
	.injectdata = dfi_injectdata,
};

struct fi_ops_tagged dfi_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = dfi_trecv,
	.recvv = dfi_trecvv,
	.recvmsg = dfi_trecvmsg,
	.send = dfi_tsend,
	.sendv = dfi_tsendv,
	.sendmsg = dfi_tsendmsg,
	.inject = dfi_tinject,
	.senddata = dfi_tsenddata,
	.injectdata = dfi_tinjectdata,
};
