/* SPDX-License-Identifier: MIT */
/*
 * engine.c — one DNP node, sans-I/O: the glue. See engine.h for the contract,
 * engine_priv.h for how the engine is split into files, and
 * docs/architecture.md for the walk of a packet through it.
 *
 * Here: configuration, create/destroy, the run loop (link ticks, timeouts,
 * ROUTE announcements, then rounds of switch, injection and report batches),
 * tx_burst (what each link sends), events, ports and buffers.
 */
#include "engine_priv.h"

void dnp_engine_conf_default(struct dnp_engine_conf *c)
{
	memset(c, 0, sizeof(*c));
	dnp_torus_init(&c->torus, 1, 1, 1);
	c->link.fifo_words = 2048;
	c->link.t_red = 2048 - 6;
	c->link.t_yellow = 1024;
	c->link.credit_period = 35;
	c->link.credit_timeout = 100000;
	c->link.init_timeout = 0;
	c->link.rto = 2000;
	c->link.max_retries = 16;
	c->link.window = 256;
	c->link.nvc = 2;
	c->link.rule = DNP_START_VCT;
	c->link.credit_model = DNP_CREDIT_HW;
	c->vc_mode = DNP_VC_DATELINE;
	c->max_buffers = 4096;
	c->max_ports = 8;
	c->max_commands = 1024;
	c->event_queue = 4096;
	c->max_sends = 256;
	c->key_secret[0] = 0x5eed;
	c->key_secret[1] = 0x5eed5eed;
	c->coll_groups = 16; /* collectives (coll.h) */
	c->coll_max_bytes = DNP_COLL_MAX_BYTES;
}

/* How often timeouts are checked: a quarter of the shortest one (0: never). */
static uint64_t timeout_period(const struct dnp_engine *e)
{
	uint64_t t = e->c.cmd_timeout;

	if (e->c.reasm_timeout && (!t || e->c.reasm_timeout < t))
		t = e->c.reasm_timeout;
	if (e->c.query_timeout && (!t || e->c.query_timeout < t))
		t = e->c.query_timeout;
	return t ? t / 4 + 1 : 0;
}

static void check_timeouts(struct dnp_engine *e, uint64_t now)
{
	uint64_t period = timeout_period(e);

	if (!period || now < e->next_timeout_check)
		return;
	e->next_timeout_check = now + period;
	if ((e->c.cmd_timeout || e->c.query_timeout) && e->nactive)
		for (uint32_t i = 0; i < e->c.max_commands; i++) {
			struct slot *s = &e->slots[i];
			if (s->state != SLOT_ACTIVE)
				continue;
			if (e->c.cmd_timeout && now - s->t_submit > e->c.cmd_timeout)
				engine_fail_cmd(e, s, -ETIMEDOUT); /* the last resort */
			else if (e->c.query_timeout && !s->injecting && s->c.op != DNP_OP_GET &&
				 !dnp_op_is_coll(s->c.op) && /* no packets of its own */
				 (s->ask || now - s->t_wait >= e->c.query_timeout))
				engine_query_due(e, s, now); /* its report is late: ask */
		}
	if (e->c.reasm_timeout && e->nsends)
		for (uint32_t i = 0; i < e->c.max_sends; i++) {
			struct sendasm *a = &e->sends[i];
			if (a->active && now - a->t_last > e->c.reasm_timeout)
				engine_send_timeout(e, a);
		}
}

void dnp_engine_run(struct dnp_engine *e, uint64_t now)
{
	e->now = now;
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		struct xlink *x = &e->links[d];
		if (!x->l)
			continue;
		unsigned ev = dnp_link_tick(x->l, now);
		if (ev & DNP_LINK_EV_CREDIT_DUE)
			x->credit_pending = true;
		if (ev & DNP_LINK_EV_RETX) /* the link marked what to resend */
			dnp_link_retx_done(x->l, now);
		if (ev & DNP_LINK_EV_BROKEN)
			engine_link_broken(e, d, now);
	}
	check_timeouts(e, now);
	if (e->sick_held)
		engine_sick_release(e, now);
	if (e->ncables)
		engine_route_announce(e, now);
	for (unsigned r = 0; r < MAX_RUN_ROUNDS; r++) {
		bool progress;

		if (e->c.arbitration) {
			progress = engine_arb_round(e, now);
		} else {
			progress = engine_route_inputs(e, now);
			progress |= engine_inject(e, now);
		}
		if (e->ncmplb) /* this round's success reports, one frame per sender */
			progress |= engine_cmplb_flush_all(e, now);
		if (engine_coll_running(e)) /* collectives (coll.c) */
			progress |= engine_coll_pump(e, now);
		if (!progress)
			break;
	}
	e->dirty = e->ncmplb != 0;       /* a batch no buffer could take yet */
	e->dirty |= engine_coll_busy(e); /* a collective waits for a packet buffer */
}

/*
 * Does the ack or occupancy change of link x need a CREDIT frame in this
 * tx_burst (prompt credits, engine.h: ack_delay)?
 */
static bool credit_due(const struct dnp_engine *e, const struct xlink *x, uint64_t now)
{
	if (!e->c.prompt_credits || !x->ack_dirty)
		return false;
	if (!e->c.ack_delay || x->ack_urgent || now - x->ack_since >= e->c.ack_delay)
		return true;
	/* the peer's window fills, a gap to report, or its view of our FIFO matters */
	return dnp_link_ack_value(x->l) - x->ack_told >= e->c.link.window / 4 ||
	       dnp_link_sack(x->l) != 0 || dnp_link_credit_stale(x->l);
}

/*
 * One pass: writes descriptor packet p into buf: its header, its payload
 * read from the application's memory straight into buf, its padding and
 * footer, CRC field zero (the restamp that follows computes the CRC over
 * buf's bytes, just written and still in cache: never over the
 * application's memory, which may change at any time). False when the read
 * failed: p is then an ordinary packet its target refuses
 * (engine_desc_fill), to be sent from its packet buffer.
 */
static bool tx_desc_write(struct dnp_engine *e, struct pkt *p, uint8_t *buf)
{
	uint32_t len = p->h.len;

	memcpy(buf, p->frame, DNP_PAYLOAD_OFF);
	if (e->c.mem->read(e->c.mem_ctx, p->desc_port, NULL, p->desc_va, buf + DNP_PAYLOAD_OFF, len,
			   NULL)) {
		(void)engine_desc_fill(e, p, true); /* reads again, fails, refuses the packet */
		return false;
	}
	memcpy(buf + DNP_PAYLOAD_OFF + len, p->frame + DNP_PAYLOAD_OFF + len,
	       p->flen - DNP_PAYLOAD_OFF - len);
	dnp_pkt_unseal(buf, p->flen);
	e->st.tx_onepass++;
	return true;
}

/*
 * Where packet p's frame is built for the wire: p->frame, or buf (one
 * pass: a descriptor packet written into the caller's buffer). A
 * descriptor packet going out through dnp_engine_tx_burst gets its bytes
 * in its packet buffer first.
 */
static uint8_t *tx_frame_of(struct dnp_engine *e, struct pkt *p, uint8_t *buf)
{
	if (__builtin_expect(!p->desc, 1))
		return p->frame;
	if (buf && tx_desc_write(e, p, buf))
		return buf;
	if (p->desc)
		(void)engine_desc_fill(e, p, true);
	return p->frame;
}

/* Puts unacked packet i of link x on the wire (into *out; buf: tx_frame_of); returns 1. */
static unsigned tx_seq(struct dnp_engine *e, struct xlink *x, unsigned i, bool retx, unsigned dir,
		       uint32_t ack, struct dnp_frame *out, uint8_t *buf, uint64_t now)
{
	uint32_t seq = 0;
	struct pkt *p = dnp_link_unacked_at(x->l, i, &seq);
	uint8_t *f = tx_frame_of(e, p, buf);

	dnp_pkt_set_epoch(f, dnp_link_epoch(x->l));
	dnp_pkt_restamp(
		f, p->flen, DNP_LINK_F_SEQ, seq, ack, (uint8_t)dir,
		(uint8_t)((retx ? DNP_FT_RETX : 0) | (p->h.fstatus & (DNP_FT_CE | DNP_FT_TC_MASK))),
		p->hops_tx);
	*out = (struct dnp_frame){ f, p->flen };
	dnp_link_stats_tx(x->l, p->words, retx);
	dnp_link_sent(x->l, i, now);
	return 1;
}

/*
 * Send-side burst: the packets of link x never sent, from x->next_tx on, up
 * to max frames into out: each restamped as tx_seq does (same epoch, seq,
 * ack, flags; the CRC computed there), then the link told once that they
 * left (dnp_link_sent_run). bufs: NULL, or the caller's buffers for one
 * pass (tx_frame_of). Returns the count.
 */
static unsigned tx_new_run(struct dnp_engine *e, struct xlink *x, unsigned dir, uint32_t ack,
			   struct dnp_frame *out, uint8_t *const *bufs, unsigned max, uint64_t now)
{
	unsigned unacked = dnp_link_unacked(x->l), first = x->next_tx, n = 0;
	/* the link word's fields the run shares, taken once; one seal per frame */
	const struct dnp_pkt_stamp st = { .ack = ack,
					  .src_dir = (uint8_t)dir,
					  .epoch = dnp_link_epoch(x->l) };
	uint32_t words = 0, seq = 0;

	while (n < max && first + n < unacked) {
		struct pkt *p = dnp_link_unacked_at(x->l, first + n, &seq);
		uint8_t *f = tx_frame_of(e, p, bufs ? bufs[n] : NULL);

		dnp_pkt_seal_seq(f, p->flen, &st, seq,
				 (uint8_t)(p->h.fstatus & (DNP_FT_CE | DNP_FT_TC_MASK)),
				 p->hops_tx);
		out[n++] = (struct dnp_frame){ f, p->flen };
		words += p->words;
	}
	dnp_link_sent_run(x->l, first, n, words, now);
	x->next_tx += n;
	return n;
}

/* dnp_engine_tx_burst; bufs: NULL, or the caller's buffers (dnp_engine_tx_burst_into). */
static unsigned tx_burst(struct dnp_engine *e, unsigned dir, struct dnp_frame *out,
			 uint8_t *const *bufs, unsigned max, uint64_t now)
{
	unsigned n = 0;

	if (dir >= DNP_NDIRS || !e->links[dir].l || !max)
		return 0;
	struct xlink *x = &e->links[dir];
	enum dnp_link_state st = dnp_link_state(x->l);
	if (st == DNP_LINK_BROKEN && !dnp_link_recovers(x->l))
		return 0;
	uint32_t ack = dnp_link_ack_value(x->l);
	bool up = st == DNP_LINK_UP;

	if (dnp_link_sends_reset(x->l) && (x->credit_pending || dnp_link_reset_due(x->l))) {
		/* Not UP: a probe instead of a credit. UP: an announce (link.h). */
		uint8_t hello[DNP_HELLO_BYTES];
		struct dnp_pkt_hdr h = {
			.kind = DNP_PKT_CREDIT,
			.lflags = DNP_LINK_F_RESET,
			.len = DNP_HELLO_BYTES,
			.ack = ack,
			.src_dir = (uint8_t)dir,
			.dst = e->c.self,
			.src = e->c.self,
		};
		h.epoch = dnp_link_take_reset(x->l, now, h.credit);
		h.timestamp = dnp_pkt_credit_stamp(h.credit); /* the buffer credits (pkt.h) */
		dnp_link_hello(x->l, hello);
		int len = dnp_pkt_encode(&h, hello, x->rframe, sizeof(x->rframe));
		if (len > 0) {
			out[n++] = (struct dnp_frame){ x->rframe, (uint32_t)len };
			dnp_link_stats_tx(x->l, (uint32_t)len / DNP_WORD_BYTES, false);
		}
		if (!up) {
			x->credit_pending = false;
			return n;
		}
	}
	if (!up)
		return 0;
	if (n < max && (x->credit_pending || credit_due(e, x, now))) {
		struct dnp_pkt_hdr h = {
			.kind = DNP_PKT_CREDIT,
			.len = dnp_pkt_credit_len(e->c.link.nvc),
			.epoch = dnp_link_epoch(x->l),
			.ack = ack,
			.src_dir = (uint8_t)dir,
			.dst = e->c.self,
			.src = e->c.self,
		};
		dnp_link_take_credit(x->l, now, h.credit);
		h.timestamp = dnp_pkt_credit_stamp(h.credit); /* the buffer credits (pkt.h) */
		h.sack = dnp_link_sack(x->l);
		if (h.sack)
			h.lflags |= DNP_LINK_F_SACK;
		int len = dnp_pkt_encode(&h, NULL, x->cframe, sizeof(x->cframe));
		if (len > 0) {
			out[n++] = (struct dnp_frame){ x->cframe, (uint32_t)len };
			dnp_link_stats_tx(x->l, (uint32_t)len / DNP_WORD_BYTES, false);
		}
		x->credit_pending = false;
		x->ack_dirty = false;
		x->ack_urgent = false;
	}
	/* Resends first (what the link marked lost), then packets never sent. */
	unsigned seq0 = n;
	int ri;
	while (n < max && (ri = dnp_link_retx_next(x->l)) >= 0 && (unsigned)ri < x->next_tx)
		n += tx_seq(e, x, (unsigned)ri, true, dir, ack, &out[n], bufs ? bufs[n] : NULL,
			    now);
	unsigned unacked = dnp_link_unacked(x->l), first = x->next_tx;
	if (!e->c.tx_single)
		n += tx_new_run(e, x, dir, ack, &out[n], bufs ? bufs + n : NULL, max - n, now);
	while (n < max && x->next_tx < unacked) { /* conf.tx_single: one at a time */
		n += tx_seq(e, x, x->next_tx, false, dir, ack, &out[n], bufs ? bufs[n] : NULL, now);
		x->next_tx++;
	}
	/* arbitration: the output is free again, the next packet may be chosen (engine_out_free) */
	if (e->c.arbitration && x->next_tx != first)
		e->dirty = true;
	/* They carry the ack: a delayed credit has only the occupancy left to say. */
	if (n > seq0 && x->ack_dirty && e->c.ack_delay)
		x->ack_since = now;
	if (n)
		x->ack_told = ack;
	return n;
}

unsigned dnp_engine_tx_burst(struct dnp_engine *e, unsigned dir, struct dnp_frame *out,
			     unsigned max, uint64_t now)
{
	return tx_burst(e, dir, out, NULL, max, now);
}

unsigned dnp_engine_tx_burst_into(struct dnp_engine *e, unsigned dir, uint8_t *const *bufs,
				  uint32_t cap, unsigned n, uint32_t *lens, uint64_t now)
{
	struct dnp_frame out[64];
	unsigned m;

	if (dir >= DNP_NDIRS || !e->links[dir].l || cap < DNP_MAX_FRAME || !n)
		return 0;
	dnp_engine_link_direct(e, dir); /* later PUTs on it may keep their bytes at home */
	m = tx_burst(e, dir, out, bufs, n < 64 ? n : 64, now);
	for (unsigned i = 0; i < m; i++) {
		if (out[i].data != bufs[i])
			memcpy(bufs[i], out[i].data, out[i].len);
		lens[i] = out[i].len;
	}
	return m;
}

void dnp_engine_link_direct(struct dnp_engine *e, unsigned dir)
{
	if (dir < DNP_NDIRS && e->links[dir].l && e->c.tx_direct && e->c.mem->stable)
		e->links[dir].direct = true;
}

unsigned dnp_engine_tx_due(const struct dnp_engine *e, unsigned dir, uint64_t now)
{
	if (dir >= DNP_NDIRS || !e->links[dir].l)
		return 0;
	const struct xlink *x = &e->links[dir];
	enum dnp_link_state st = dnp_link_state(x->l);
	unsigned due = DNP_TX_DUE | (e->st.tx_onepass_held ? DNP_TX_DUE_DIRECT : 0);
	if (st == DNP_LINK_BROKEN && !dnp_link_recovers(x->l))
		return 0;
	/* the conditions under which tx_burst makes a frame, in its order */
	if (dnp_link_sends_reset(x->l) && (x->credit_pending || dnp_link_reset_due(x->l)))
		return due;
	if (st != DNP_LINK_UP)
		return 0;
	return x->credit_pending || credit_due(e, x, now) || dnp_link_retx_next(x->l) >= 0 ||
			       x->next_tx < dnp_link_unacked(x->l) ?
		       due :
		       0;
}

unsigned dnp_engine_poll_events(struct dnp_engine *e, unsigned port, struct dnp_event *ev,
				unsigned max)
{
	if (port >= e->c.max_ports)
		return 0;
	struct evq *q = &e->ports[port];
	unsigned n = 0;

	while (n < max && q->head != q->tail) {
		ev[n++] = q->ev[q->head & (e->c.event_queue - 1)];
		q->head++;
	}
	if (n) {
		e->dirty = true; /* room for deliveries that waited */
		q->overrun = false;
	}
	return n;
}

bool dnp_engine_has_work(const struct dnp_engine *e)
{
	if (e->dirty)
		return true;
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		const struct xlink *x = &e->links[d];
		if (!x->l)
			continue;
		enum dnp_link_state st = dnp_link_state(x->l);
		if (st == DNP_LINK_BROKEN && !dnp_link_recovers(x->l))
			continue;
		if (dnp_link_reset_due(x->l) || x->credit_pending)
			return true;
		if (st == DNP_LINK_UP &&
		    (credit_due(e, x, e->now) || x->next_tx < dnp_link_unacked(x->l) ||
		     dnp_link_retx_due(x->l)))
			return true;
	}
	return false;
}

uint64_t dnp_engine_next_deadline(const struct dnp_engine *e)
{
	uint64_t t = UINT64_MAX;

	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		if (!e->links[d].l)
			continue;
		uint64_t ld = dnp_link_next_deadline(e->links[d].l);
		if (ld < t)
			t = ld;
		const struct xlink *x = &e->links[d];
		if (e->c.prompt_credits && e->c.ack_delay && x->ack_dirty &&
		    x->ack_since + e->c.ack_delay < t)
			t = x->ack_since + e->c.ack_delay;
	}
	if ((((e->c.cmd_timeout || e->c.query_timeout) && e->nactive) ||
	     (e->c.reasm_timeout && e->nsends)) &&
	    e->next_timeout_check < t)
		t = e->next_timeout_check;
	if (e->c.deliver_timeout && e->lo_wait.on && e->lo_wait.since + e->c.deliver_timeout < t)
		t = e->lo_wait.since + e->c.deliver_timeout;
	for (unsigned d = 0; e->sick_held && d < DNP_NDIRS; d++)
		if ((e->sick_held & (1u << d)) && e->sick[d].release_at < t)
			t = e->sick[d].release_at;
	if (e->c.deliver_timeout)
		for (unsigned in = 0; in < NIN; in++)
			for (unsigned vc = 0; vc < e->c.link.nvc; vc++) {
				const struct inwait *w = &e->wait[in][vc];
				if (w->on && w->since + e->c.deliver_timeout < t)
					t = w->since + e->c.deliver_timeout;
			}
	return t;
}

uint64_t dnp_engine_pending(const struct dnp_engine *e)
{
	return (uint64_t)e->pkts_used + e->nactive;
}

int dnp_engine_port_open(struct dnp_engine *e, unsigned port)
{
	if (port >= e->c.max_ports)
		return -EINVAL;
	struct evq *q = &e->ports[port];
	if (q->open)
		return -EBUSY;
	q->open = true;
	q->overrun = false;
	q->head = q->tail = 0;
	q->reserved = 0;
	q->quiet = 0;
	q->send_head = q->send_tail = NO_SLOT;
	memset(q->cntr, 0, DNP_CNTR_MAX * sizeof(*q->cntr)); /* a new application counts from 0 */
	q->cntr_dirty = 0;
	return 0;
}

/*
 * The port's application is gone: its GET responder jobs stop reading its
 * memory now (a new application may soon be given the same port), and their
 * requesters hear -ECONNRESET. Packets already on a link were read while
 * the old application was there.
 */
static void resp_abort_port(struct dnp_engine *e, unsigned port, uint64_t now)
{
	for (unsigned qi = 0; qi < NIN; qi++) {
		struct pktq keep = { 0 };
		struct pkt *job;

		while ((job = engine_q_pop(&e->resp[qi])) != NULL) {
			if (job->h.dst_port != port) {
				engine_q_push(&keep, job);
				continue;
			}
			(void)engine_send_cmpl(e, job->h.src, job->h.src_port, job->h.msg_id,
					       -ECONNRESET, now);
			engine_pkt_put(e, job);
		}
		e->resp[qi] = keep;
	}
}

int dnp_engine_port_close(struct dnp_engine *e, unsigned port)
{
	if (port >= e->c.max_ports || !e->ports[port].open)
		return -ENOENT;
	struct evq *q = &e->ports[port];

	engine_desc_port_closed(e, port); /* while its memory is still there */
	dnp_buftab_remove_port(e->bt, (uint8_t)port);
	resp_abort_port(e, port, e->now);
	while (q->send_head != NO_SLOT)
		engine_post_remove(e, q, e->posts[q->send_head].va);
	for (uint32_t i = 0; i < e->c.max_sends; i++)
		if (e->sends[i].active && e->sends[i].dst_port == port) {
			/* its rest is refused as it comes, never sent again to a new application */
			engine_outcome_record(e, dnp_torus_id(&e->c.torus, e->sends[i].src),
					      e->sends[i].msg_id, -ECONNRESET);
			engine_send_end(e, &e->sends[i]);
		}
	for (uint32_t i = 0; i < e->c.max_commands; i++) {
		struct slot *s = &e->slots[i];
		if (s->state != SLOT_ACTIVE || s->port != port)
			continue;
		s->orphan = 1;
		if (!s->injecting)
			engine_complete(e, s, -ECONNRESET);
	}
	engine_coll_port_closed(e, port, e->now); /* its groups are left */
	q->open = false;
	q->head = q->tail = 0;
	q->reserved = 0;
	e->dirty = true;
	return 0;
}

int dnp_engine_register(struct dnp_engine *e, unsigned port, uint64_t va, uint64_t len,
			unsigned flags, uintptr_t priv, uint32_t *key)
{
	if (port >= e->c.max_ports || !e->ports[port].open)
		return -ENOENT;
	if (!flags || (flags & ~DNP_BUF_ALL))
		return -EINVAL;
	struct dnp_buf b = { .va = va,
			     .len = len,
			     .key = dnp_keygen_next(&e->keys),
			     .flags = (uint16_t)flags,
			     .port = (uint8_t)port,
			     .priv = priv };
	if ((flags & DNP_BUF_SEND_TARGET) && e->free_post == NO_SLOT)
		return -ENOSPC;
	int rc = dnp_buftab_insert(e->bt, &b);
	if (rc < 0)
		return rc;
	if (flags & DNP_BUF_SEND_TARGET) {
		struct evq *q = &e->ports[port];
		uint32_t i = e->free_post;
		struct post *po = &e->posts[i];
		e->free_post = po->next;
		*po = (struct post){ .va = va, .len = len, .next = NO_SLOT, .used = 1 };
		if (q->send_tail == NO_SLOT)
			q->send_head = i;
		else
			e->posts[q->send_tail].next = i;
		q->send_tail = i;
	}
	if (key)
		*key = b.key;
	e->dirty = true;
	return 0;
}

int dnp_engine_unregister(struct dnp_engine *e, unsigned port, uint64_t va)
{
	if (port >= e->c.max_ports || !e->ports[port].open)
		return -ENOENT;
	int rc = dnp_buftab_remove(e->bt, (uint8_t)port, va, NULL);
	if (rc == 0)
		engine_post_remove(e, &e->ports[port], va);
	return rc;
}

bool dnp_engine_has_link(const struct dnp_engine *e, unsigned dir)
{
	return dir < DNP_NDIRS && e->links[dir].l;
}

enum dnp_link_state dnp_engine_link_state(const struct dnp_engine *e, unsigned dir)
{
	if (!dnp_engine_has_link(e, dir))
		return DNP_LINK_BROKEN;
	return dnp_link_state(e->links[dir].l);
}

void dnp_engine_link_down(struct dnp_engine *e, unsigned dir, uint64_t now)
{
	if (dnp_engine_has_link(e, dir) && dnp_link_set_broken(e->links[dir].l))
		engine_link_broken(e, dir, now);
}

const struct dnp_link_stats *dnp_engine_link_stats(const struct dnp_engine *e, unsigned dir)
{
	return dnp_engine_has_link(e, dir) ? dnp_link_stats(e->links[dir].l) : NULL;
}

const struct dnp_link *dnp_engine_link(const struct dnp_engine *e, unsigned dir)
{
	return dnp_engine_has_link(e, dir) ? e->links[dir].l : NULL;
}

const struct dnp_engine_stats *dnp_engine_stats(const struct dnp_engine *e)
{
	return &e->st;
}

struct dnp_router *dnp_engine_router(struct dnp_engine *e)
{
	return &e->router;
}

static bool pow2(uint32_t v)
{
	return v >= 2 && (v & (v - 1)) == 0;
}

/*
 * The outcome history (docs/protocol.md, "Outcome queries"): an entry per
 * source node and command slot, none when that is too big. 0 or -ENOMEM.
 */
static int outcome_create(struct dnp_engine *e, const struct dnp_engine_conf *c)
{
	/* the outcome history: a slot per source node and command slot (no history if too big) */
	e->outcome_slots = 1;
	while (e->outcome_slots < c->max_commands)
		e->outcome_slots <<= 1;
	e->outcome_rows = dnp_torus_size(&c->torus);
	if ((uint64_t)e->outcome_rows * e->outcome_slots > OUTCOME_MAX)
		e->outcome_slots = 0; /* no history: queries get no answer */
	else if (!(e->outcomes = calloc((size_t)dnp_torus_size(&c->torus) * e->outcome_slots,
					sizeof(*e->outcomes))))
		return -ENOMEM;
	/*
	 * Message ids start from a generation drawn from the key secret: a
	 * restarted node (dnpd draws a new secret) does not reuse the ids its
	 * peers' outcome histories hold, but by chance (one in 65,536 per slot).
	 */
	e->gen = (uint32_t)(c->key_secret[0] ^ c->key_secret[0] >> 32 ^ c->key_secret[1] ^
			    c->key_secret[1] >> 32) &
		 0xffffu;
	return 0;
}

/* The packet buffers onto their free lists: the first nbig are big. */
static void pool_init(struct dnp_engine *e, uint32_t nbig, uint32_t fifos)
{
	uint32_t spare = nbig - e->bufs_resv; /* big buffers no input VC backs */

	uint8_t *f = e->frames;

	for (uint32_t i = 0; i < e->npkts; i++) {
		struct pkt *p = &e->pkts[i];

		p->big = i < nbig;
		p->frame = f;
		f += p->big ? DNP_MAX_FRAME : SMALL_FRAME;
		p->next = p->big ? e->free_big : e->free_small;
		if (p->big)
			e->free_big = p;
		else
			e->free_small = p;
	}
	e->big_free = nbig;
	/*
	 * Of the buffers no input VC backs, injection leaves one per input
	 * FIFO and the report reserve to forwarding and reception.
	 */
	e->inj_reserve = fifos + RX_RESERVE < spare / 2 ? fifos + RX_RESERVE : spare / 2;
}

/*
 * Pool sizing (nlinks links of nvc VCs). Buffer credits: *bufs big buffers
 * kept per input VC (engine.h, rx_bufs). Then every link's window, and room
 * for local answers. Small frames (credits, completions, tiny PUTs) come
 * from a separate pool, sized for every FIFO full of them, so a flood of
 * them does not need 4 KiB buffers.
 */
static void pool_size(const struct dnp_engine_conf *c, uint32_t nlinks, uint32_t *nbig,
		      uint32_t *nsmall, uint32_t *bufs)
{
	uint32_t big_per_fifo = c->link.fifo_words / (DNP_MAX_FRAME / DNP_WORD_BYTES) + 1;
	uint32_t small_per_fifo = c->link.fifo_words / (DNP_FRAME_OVERHEAD / DNP_WORD_BYTES);
	uint32_t fifos = nlinks * c->link.nvc;
	uint32_t window = c->link.window;
	uint32_t b = c->link.fifo_words / DNP_BUF_MIN_WORDS;

	if (c->rx_bufs) {
		if (c->rx_bufs < b)
			b = c->rx_bufs;
	} else if (b > (big_per_fifo > 32 ? big_per_fifo : 32)) {
		b = big_per_fifo > 32 ? big_per_fifo : 32;
	}
	if (b > DNP_BUFS_MAX)
		b = DNP_BUFS_MAX;
	*nbig = fifos * b +
		nlinks * (window < 2 * big_per_fifo * c->link.nvc ?
				  window :
				  2 * big_per_fifo * c->link.nvc) +
		16;
	*nsmall = fifos * small_per_fifo + nlinks * window + c->max_commands + 64;
	if (*nsmall > 65536)
		*nsmall = 65536;
	if (c->pool_big)
		*nbig = c->pool_big < 65536 ? c->pool_big : 65536;
	if (c->pool_small)
		*nsmall = c->pool_small < 65536 ? c->pool_small : 65536;
	/* A pool set by hand keeps them only beside a spare buffer per link and two reserves. */
	uint32_t keep = nlinks + 2 * RX_RESERVE;
	if (fifos && (uint64_t)fifos * b + keep > *nbig)
		b = *nbig > keep ? (*nbig - keep) / fifos : 0;
	*bufs = b;
}

int dnp_engine_create(const struct dnp_engine_conf *c, uint64_t now, struct dnp_engine **out)
{
	if (!c || !out || !c->mem || !c->mem->read || !c->mem->write || !c->max_ports ||
	    c->max_ports > DNP_MAX_PORTS || !c->max_commands || c->max_commands > 65536 ||
	    !pow2(c->event_queue) || !c->max_sends || !c->max_buffers ||
	    !dnp_torus_contains(&c->torus, c->self) || !c->link.nvc || c->link.nvc > DNP_MAX_VC ||
	    c->link.fifo_words < DNP_MAX_FRAME / DNP_WORD_BYTES || c->arbitration > DNP_ARB_WRR ||
	    !engine_top_conf_ok(c))
		return -EINVAL;
	/*
	 * The engine starts whole packets: under stop-at-red a packet may begin
	 * one word below T_RED, so the FIFO needs a full frame of headroom.
	 */
	if (c->link.rule == DNP_START_STOP_AT_RED &&
	    c->link.t_red + DNP_MAX_FRAME / DNP_WORD_BYTES > c->link.fifo_words)
		return -EINVAL;
	struct dnp_engine *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->c = *c;
	int rc = dnp_route_init(&e->router, &c->torus, c->self, c->vc_mode);
	if (rc == 0)
		rc = dnp_route_set_vcs(&e->router, c->link.nvc);
	if (rc == 0)
		rc = dnp_route_set_routing(&e->router, c->routing);
	if (rc < 0)
		goto fail;
	rc = dnp_buftab_create(c->max_buffers, &e->bt);
	if (rc < 0)
		goto fail;
	rc = -ENOMEM;
	e->self_id = dnp_torus_id(&c->torus, c->self);
	unsigned nlinks = 0;
	uint32_t nbig, nsmall, bufs;
	struct dnp_link_conf lc = c->link;

	for (unsigned d = 0; d < DNP_NDIRS; d++)
		nlinks += c->torus.dim[d / 2] >= 2;
	pool_size(c, nlinks, &nbig, &nsmall, &bufs);
	/* the links count the buffers they back in use, for the whole node (engine_priv.h) */
	lc.bufs = (uint8_t)bufs;
	lc.node_bufs = &e->bufs_used;
	e->bufs_resv = nlinks * c->link.nvc * bufs;
	/* the handshake tells the neighbours the torus and VC mode (link.h) */
	for (unsigned i = 0; i < 3; i++)
		lc.dim[i] = c->torus.dim[i];
	lc.vc_mode = c->vc_mode;
	lc.routing = c->routing;
	if (!lc.nonce) /* deterministic for the lab: the caller sets a random one (dnpd) */
		lc.nonce = ((uint32_t)c->key_secret[0] ^ (uint32_t)(c->key_secret[1] >> 7) ^
			    (e->self_id * 0x9e3779b9u)) |
			   1u;
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		if (c->torus.dim[d / 2] < 2)
			continue;
		int lrc = dnp_link_create(&lc, now, &e->links[d].l);
		if (lrc < 0) {
			rc = lrc;
			goto fail;
		}
	}
	e->npkts = nbig + nsmall;
	e->pkts = calloc(e->npkts, sizeof(*e->pkts));
	e->frames = malloc((size_t)nbig * DNP_MAX_FRAME + (size_t)nsmall * SMALL_FRAME);
	e->slots = calloc(c->max_commands, sizeof(*e->slots));
	e->ports = calloc(c->max_ports, sizeof(*e->ports));
	e->evmem = calloc((size_t)c->max_ports * c->event_queue, sizeof(*e->evmem));
	e->cntrmem = calloc((size_t)c->max_ports * DNP_CNTR_MAX, sizeof(*e->cntrmem));
	e->posts = calloc(c->max_buffers, sizeof(*e->posts));
	e->sends = calloc(c->max_sends, sizeof(*e->sends));
	/* with arbitration, one PUT sequence per source node and class (engine_deliver.c) */
	uint32_t ntrack = dnp_torus_size(&c->torus) * (c->arbitration ? DNP_ARB_CLASSES : 1u);
	e->nputs = ntrack < PUTTRACK_MAX ? ntrack : PUTTRACK_MAX;
	e->puts = calloc(e->nputs, sizeof(*e->puts));
	if (outcome_create(e, c) < 0)
		goto fail;
	rc = engine_cg_create(e); /* congestion (engine_congest.c), collectives (coll.c) */
	if (rc < 0 || (rc = engine_coll_create(e)) < 0)
		goto fail;
	rc = -ENOMEM;
	if (!e->pkts || !e->frames || !e->slots || !e->ports || !e->evmem || !e->posts ||
	    !e->sends || !e->puts || !e->cntrmem)
		goto fail;
	pool_init(e, nbig, nlinks * c->link.nvc);
	for (uint32_t i = 0; i < c->max_commands; i++)
		e->slots[i].next = i + 1 < c->max_commands ? i + 1 : NO_SLOT;
	e->free_slot = 0;
	for (uint32_t i = 0; i < c->max_buffers; i++)
		e->posts[i].next = i + 1 < c->max_buffers ? i + 1 : NO_SLOT;
	e->free_post = 0;
	for (uint32_t i = 0; i < c->max_ports; i++) {
		e->ports[i].ev = e->evmem + (size_t)i * c->event_queue;
		e->ports[i].cntr = e->cntrmem + (size_t)i * DNP_CNTR_MAX;
		e->ports[i].send_head = e->ports[i].send_tail = NO_SLOT;
	}
	for (unsigned i = 0; i < NIN; i++)
		for (unsigned tc = 0; tc < DNP_ARB_CLASSES; tc++)
			e->qhead[i][tc] = e->qtail[i][tc] = NO_SLOT;
	dnp_arb_init(&e->arb, c->arbitration, c->arb_starve);
	dnp_keygen_init(&e->keys, c->key_secret);
	*out = e;
	return 0;
fail:
	dnp_engine_destroy(e);
	return rc;
}

void dnp_engine_destroy(struct dnp_engine *e)
{
	if (!e)
		return;
	for (unsigned d = 0; d < DNP_NDIRS; d++)
		dnp_link_destroy(e->links[d].l);
	dnp_buftab_destroy(e->bt);
	free(e->pkts);
	free(e->frames);
	free(e->slots);
	free(e->ports);
	free(e->evmem);
	free(e->cntrmem);
	free(e->posts);
	free(e->sends);
	free(e->puts);
	free(e->outcomes);
	free(e->cg);
	engine_coll_destroy(e);
	free(e);
}
