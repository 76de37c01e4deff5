/* SPDX-License-Identifier: MIT */
/*
 * engine_outcome.c — end-to-end completion recovery: the outcome history a
 * target keeps per source node, QUERY packets and their answers, resends
 * after "not delivered" (docs/protocol.md, "Outcome queries"). Contract:
 * engine_priv.h, "outcome queries".
 */
#include "engine_priv.h"

void engine_outcome_record_slow(struct dnp_engine *e, struct outcome *o, uint32_t msg_id,
				int status)
{
	bool resent = o->msg_id == msg_id; /* else a later message of that slot replaces it */

	if (status == -(int)DNP_CMPL_NOT_DELIVERED)
		return; /* the answer to a QUERY: the entry says so already */
	if (!resent)
		e->nrefused--;
	*o = (struct outcome){ .msg_id = msg_id,
			       .state = resent ? OUT_RETRIED : OUT_DONE,
			       .status = (uint8_t)(status < 0 ? -status : status) };
}

bool engine_outcome_refuse(struct dnp_engine *e, const struct dnp_pkt_hdr *h, uint64_t now)
{
	struct outcome *o = engine_outcome_at(e, h->src, h->msg_id);

	if (h->kind != DNP_PKT_PUT && h->kind != DNP_PKT_SEND)
		return false; /* GETs are never declared not delivered */
	if (!o || o->msg_id != h->msg_id || o->state == OUT_EMPTY)
		return false; /* a message this node has no outcome for: the usual case */
	bool resend = h->status == DNP_PKT_RETRY;

	switch (o->state) {
	case OUT_REFUSED:
		if (!resend)
			return true; /* the original, late: declared not delivered */
		if (h->flags & DNP_PKT_F_FIRST)
			o->state = OUT_RETRYING;
		return !(h->flags & DNP_PKT_F_FIRST); /* a resend starts with its first packet */
	case OUT_RETRYING:
		return !resend;
	case OUT_DONE:
		if (!resend)
			return false; /* a new message that reuses an id (the source restarted) */
		break;
	default: /* OUT_RETRIED */
		if (!resend)
			return true; /* the original, late: declared not delivered */
		break;
	}
	/* a resend of a message already reported: the report again, on its last packet */
	if (h->flags & DNP_PKT_F_LAST)
		(void)engine_send_cmpl(e, h->src, h->src_port, h->msg_id, -(int)o->status, now);
	return true;
}

/*
 * Is SEND msg_id of src being reassembled now (some of its fragments were
 * written)? It then ends by itself (its last fragment, or reasm_timeout).
 * A PUT with some fragments written is declared not delivered instead: the
 * rest is refused, and its resend writes it whole.
 */
static bool outcome_in_progress(struct dnp_engine *e, struct dnp_coord src, uint32_t msg_id)
{
	for (uint32_t i = 0; e->nsends && i < e->c.max_sends; i++) {
		const struct sendasm *a = &e->sends[i];
		if (a->active && a->msg_id == msg_id && dnp_coord_eq(a->src, src))
			return true;
	}
	return false;
}

/* Answers one queried id; -EAGAIN when no buffer is free for the answer. */
static int query_answer(struct dnp_engine *e, const struct dnp_pkt_hdr *h, uint32_t msg_id,
			uint64_t now)
{
	struct outcome *o = engine_outcome_at(e, h->src, msg_id);

	if (!o)
		return 0; /* no history here: the source waits for its deadline */
	if (o->msg_id == msg_id && o->state != OUT_EMPTY) {
		switch (o->state) {
		case OUT_DONE:
		case OUT_RETRIED:
			return engine_send_cmpl(e, h->src, h->src_port, msg_id, -(int)o->status,
						now);
		case OUT_REFUSED:
			break;
		default:
			return 0; /* its resend is being applied: its report follows */
		}
	} else if (outcome_in_progress(e, h->src, msg_id)) {
		return 0;
	} else {
		if (o->state < OUT_REFUSED)
			e->nrefused++;
		*o = (struct outcome){ .msg_id = msg_id, .state = OUT_REFUSED };
	}
	return engine_send_cmpl(e, h->src, h->src_port, msg_id, -(int)DNP_CMPL_NOT_DELIVERED, now);
}

int engine_outcome_incomplete(struct dnp_engine *e, const struct dnp_pkt_hdr *h, uint64_t now)
{
	uint8_t oport;
	struct dnp_coord owner = engine_pkt_owner(h, &oport);
	struct outcome *o = engine_outcome_at(e, h->src, h->msg_id);

	e->st.rx_incomplete_msgs++;
	if (!o || engine_coord_self(e, owner))
		return engine_deliver_fail(e, h, -ENOLINK, now); /* no history: lost for good */
	if (o->msg_id == h->msg_id && (o->state == OUT_REFUSED || o->state == OUT_RETRIED))
		return 0; /* declared already (its packets are refused before they get here) */
	if (o->msg_id != h->msg_id || o->state < OUT_REFUSED)
		e->nrefused++;
	*o = (struct outcome){ .msg_id = h->msg_id, .state = OUT_REFUSED };
	e->st.deliver_errors++;
	return engine_send_cmpl(e, owner, oport, h->msg_id, -(int)DNP_CMPL_NOT_DELIVERED, now);
}

void engine_query_take(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload,
		       uint64_t now)
{
	e->st.query_rx++;
	if (query_answer(e, h, h->msg_id, now) < 0)
		return;                                   /* asked again later */
	for (unsigned i = 0; i + 4u <= h->len; i += 4u) { /* more ids, as in a CMPL (pkt.h) */
		uint32_t id;
		memcpy(&id, payload + i, 4);
		if (query_answer(e, h, le32toh(id), now) < 0)
			return;
	}
}

/*
 * The first hop of a packet from here to dst over a route that avoids the
 * known faults: 0 with *hop and *via set, or -EHOSTUNREACH.
 */
static int outcome_route(struct dnp_engine *e, struct dnp_coord dst, uint16_t *via,
			 struct dnp_hop *hop)
{
	*via = 0;
	if (e->router.n_faults && dnp_route_plan(&e->router, dst, via) < 0)
		return -EHOSTUNREACH;
	if (engine_local_hop(e, dst, *via, hop) < 0 ||
	    (hop->dir != DNP_DIR_LOCAL && !engine_link_usable(e, hop->dir)))
		return -EHOSTUNREACH;
	return 0;
}

void engine_query_due(struct dnp_engine *e, struct slot *s, uint64_t now)
{
	struct dnp_hop hop;
	uint16_t via;

	s->t_wait = now;
	s->ask = 0;
	if (outcome_route(e, s->dst, &via, &hop) < 0) {
		engine_fail_cmd(e, s, -EHOSTUNREACH);
		return;
	}
	struct pkt *p = engine_pkt_get(e, DNP_FRAME_OVERHEAD);
	if (!p)
		return; /* asked at the next period */
	p->h = (struct dnp_pkt_hdr){
		.lflags = DNP_LINK_F_SEQ,
		.dst = s->dst,
		.src = e->c.self,
		.dst_port = s->c.dst_port,
		.src_port = s->port,
		.kind = DNP_PKT_QUERY,
		.via = via,
		.msg_id = s->msg_id,
		.timestamp = (uint32_t)now,
	};
	/* sealed (CRC) by dnp_pkt_restamp when it leaves on a link */
	int r = dnp_pkt_encode_unsealed(&p->h, NULL, p->frame, DNP_MAX_FRAME);
	if (r < 0) {
		engine_pkt_put(e, p);
		return;
	}
	engine_local_push(e, p, (uint32_t)r);
	e->st.query_tx++;
}

void engine_outcome_resend(struct dnp_engine *e, struct slot *s, uint64_t now)
{
	struct dnp_hop hop;
	uint16_t via;

	if (s->injecting || s->c.op == DNP_OP_GET)
		return;
	if (s->resends >= DNP_ENGINE_RESENDS) {
		engine_complete(e, s, -ENOLINK);
		return;
	}
	if (outcome_route(e, s->dst, &via, &hop) < 0) {
		engine_complete(e, s, -EHOSTUNREACH);
		return;
	}
	s->offset = 0;
	s->retry = 1;
	s->resends++;
	s->via = via;
	s->hop_vc = hop.vc;
	s->rver = e->router.ver;
	s->t_wait = now;
	engine_inj_push(e, hop.dir, s);
	e->st.query_resends++;
	e->dirty = true;
}

bool engine_query_soon(struct dnp_engine *e, uint32_t msg_id)
{
	struct slot *s = engine_slot_by_msg(e, msg_id);

	if (!e->c.query_timeout || !s || s->injecting || s->c.op == DNP_OP_GET)
		return false;
	s->ask = 1;
	e->next_timeout_check = e->now; /* asked in this engine round */
	return true;
}
