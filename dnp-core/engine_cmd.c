/* SPDX-License-Identifier: MIT */
/*
 * engine_cmd.c — command intake and injection: dnp_engine_submit, the
 * command slots and their one completion event, and the injectors that turn
 * the head command (or GET responder job) of each queue into packets when
 * the link can take them. Contract: engine_priv.h, "commands".
 */
#include "engine_priv.h"

static_assert(DNP_PKT_RETRY == 1, "slot.retry is the status byte of its packets");

struct slot *engine_slot_by_msg(struct dnp_engine *e, uint32_t msg_id)
{
	uint32_t i = msg_id & 0xffffu;

	if (i >= e->c.max_commands)
		return NULL;
	struct slot *s = &e->slots[i];
	if (s->state != SLOT_ACTIVE || s->msg_id != msg_id)
		return NULL;
	return s;
}

static void slot_free(struct dnp_engine *e, struct slot *s)
{
	s->state = SLOT_FREE;
	s->next = e->free_slot;
	e->free_slot = (uint32_t)(s - e->slots);
	e->nactive--;
}

/* The fields a command's events share (completion or TX_READ). */
static struct dnp_event cmd_event(const struct slot *s, uint8_t type, int status, uint8_t data)
{
	return (struct dnp_event){
		.type = type,
		.op = s->c.op,
		.port = s->c.dst_port,
		.data = data,
		.peer_x = s->dst.x,
		.peer_y = s->dst.y,
		.peer_z = s->dst.z,
		.status = (int8_t)status,
		.msg_id = s->msg_id,
		.len = (uint32_t)s->c.len,
		.va = s->c.flags & DNP_CMD_F_INLINE ? 0 : s->c.local_va, /* inline: data there */
		.cookie = s->c.cookie,
	};
}

/* A command that named counter i ended with status. */
static void cntr_bump(struct evq *q, unsigned i, int status)
{
	if (status == 0)
		q->cntr[i].ok++;
	else
		q->cntr[i].err++;
	q->cntr_dirty |= 1ull << i;
}

static void desc_fill_port(struct dnp_engine *e, unsigned port, bool all, uint32_t msg_id);

/*
 * Ends a command with its one completion event (status 0 or -errno), none
 * for a success of DNP_CMD_F_NO_EVENT (counted in the port's 'quiet' for
 * the driver, dnp_engine_quiet_take), and frees its slot. A TX_READ still
 * due is not sent: the completion frees the source as well.
 */
void engine_complete(struct dnp_engine *e, struct slot *s, int status)
{
	if (s->injecting)
		return; /* still queued: the injector completes it when it dequeues */
	struct evq *q = &e->ports[s->port];

	if (s->cg_on)
		engine_cg_done(e, s, status);
	if (status == 0)
		e->st.cmds_ok++;
	else
		e->st.cmds_failed++;
	/*
	 * One pass: a PUT that failed gives its source back while packets of it
	 * may still be resent; they keep the bytes they have now. (After a
	 * success every packet reached the next node: a resend is a duplicate
	 * it drops.) A port that closes did this for all its packets.
	 */
	if (status && e->c.tx_direct && s->sent && !s->orphan && s->c.op == DNP_OP_PUT)
		desc_fill_port(e, s->port, false, s->msg_id);
	if (!s->orphan && q->open) {
		uint8_t data = status == 0 ? DNP_DATA_DELIVERED :
			       s->data     ? s->data :
			       s->sent     ? DNP_DATA_UNKNOWN :
					     DNP_DATA_NOT_DELIVERED;
		uint8_t type = status                ? DNP_EV_ERROR :
			       s->c.op == DNP_OP_GET ? DNP_EV_GET_DONE :
						       DNP_EV_TX_DONE;

		q->reserved -= 1u + s->rd_ev;
		if (s->c.cntr && s->c.cntr <= DNP_CNTR_MAX)
			cntr_bump(q, s->c.cntr - 1u, status);
		if (status == 0 && (s->c.flags & DNP_CMD_F_NO_EVENT)) {
			q->quiet++;
		} else {
			struct dnp_event ev = cmd_event(s, type, status, data);

			engine_evq_push(e, q, &ev);
		}
	}
	slot_free(e, s);
}

/*
 * The last packet of s left, or was delivered here: every byte of its
 * source has been copied out of the application's memory (into packet
 * buffers, or the scratch buffer of a loopback delivery), so its TX_READ,
 * if it asked for one, goes now, ahead of any completion. Called once per
 * command: a command whose source was released is never read again
 * (engine_handle_cmpl does not resend it).
 */
static void src_read_done(struct dnp_engine *e, struct slot *s)
{
	struct evq *q = &e->ports[s->port];

	s->rd_ev = 0;
	if (s->orphan || !q->open)
		return;
	struct dnp_event ev = cmd_event(s, DNP_EV_TX_READ, 0, DNP_DATA_UNKNOWN);

	q->reserved--;
	engine_evq_push(e, q, &ev);
}

uint32_t dnp_engine_quiet_take(struct dnp_engine *e, unsigned port)
{
	if (port >= e->c.max_ports)
		return 0;
	uint32_t n = e->ports[port].quiet;

	e->ports[port].quiet = 0;
	return n;
}

uint64_t dnp_engine_cntr_take(struct dnp_engine *e, unsigned port,
			      const struct dnp_engine_cntr **vals)
{
	static_assert(DNP_CNTR_MAX <= 64, "one bit per counter in a uint64_t");
	if (port >= e->c.max_ports)
		return 0;
	struct evq *q = &e->ports[port];
	uint64_t m = q->cntr_dirty;

	q->cntr_dirty = 0;
	*vals = q->cntr;
	return m;
}

/* Failing a command that may still sit in an injection queue. */
void engine_fail_cmd(struct dnp_engine *e, struct slot *s, int status)
{
	if (s->injecting) {
		/* let the injector drop it: mark it done with this status */
		s->offset = UINT64_MAX;
		s->c.rsvd3 = (uint64_t)(int64_t)status;
		return;
	}
	engine_complete(e, s, status);
}

void engine_inj_push(struct dnp_engine *e, unsigned qi, struct slot *s)
{
	uint32_t i = (uint32_t)(s - e->slots);
	unsigned tc = e->c.arbitration ? s->c.tc : 0; /* checked: <= DNP_TC_MAX */

	s->queue = (uint8_t)qi;
	s->qtc = (uint8_t)tc;
	s->next = NO_SLOT;
	s->injecting = 1;
	if (e->qtail[qi][tc] == NO_SLOT)
		e->qhead[qi][tc] = i;
	else
		e->slots[e->qtail[qi][tc]].next = i;
	e->qtail[qi][tc] = i;
}

void engine_inj_pop(struct dnp_engine *e, unsigned qi, unsigned tc)
{
	struct slot *s = &e->slots[e->qhead[qi][tc]];

	e->qhead[qi][tc] = s->next;
	if (e->qhead[qi][tc] == NO_SLOT)
		e->qtail[qi][tc] = NO_SLOT;
	s->injecting = 0;
	if (qi == DNP_DIR_LOCAL)
		e->lo_wait.on = false; /* a new head */
}

static struct slot *slot_alloc(struct dnp_engine *e)
{
	if (e->free_slot == NO_SLOT)
		return NULL;
	struct slot *s = &e->slots[e->free_slot];

	e->free_slot = s->next;
	uint32_t idx = (uint32_t)(s - e->slots);
	memset(s, 0, sizeof(*s));
	e->gen++;
	s->msg_id = (e->gen << 16) | idx;
	s->state = SLOT_ACTIVE;
	e->nactive++;
	return s;
}

/* Header of the next packet of an application command. */
static inline __attribute__((always_inline)) void build_cmd_hdr(struct dnp_engine *e,
								const struct slot *s, uint32_t len,
								struct dnp_pkt_hdr *h, uint64_t now)
{
	memset(h, 0, sizeof(*h));
	h->lflags = DNP_LINK_F_SEQ;
	h->dst = s->dst;
	h->via = s->via;
	h->src = e->c.self;
	h->dst_port = s->c.dst_port;
	h->src_port = s->port;
	h->msg_id = s->msg_id;
	h->key = s->c.remote_key;
	h->timestamp = (uint32_t)now;
	h->flags = 0;
	h->status = s->retry; /* DNP_PKT_RETRY: sent again after "not delivered" */
	h->fstatus = dnp_ft_tc(s->c.tc);
	if (s->c.op == DNP_OP_GET) {
		h->kind = DNP_PKT_GET_REQ;
		h->va = s->c.remote_va;
		h->len = DNP_GET_DESC_BYTES;
		h->flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST;
		h->msg_len = DNP_GET_DESC_BYTES;
		return;
	}
	h->kind = s->c.op == DNP_OP_SEND ? DNP_PKT_SEND : DNP_PKT_PUT;
	h->va = s->c.op == DNP_OP_SEND ? 0 : s->c.remote_va + s->offset;
	h->offset = (uint32_t)s->offset;
	h->len = (uint16_t)len;
	h->msg_len = (uint32_t)s->c.len;
	if (s->offset == 0)
		h->flags |= DNP_PKT_F_FIRST;
	if (s->offset + len == s->c.len)
		h->flags |= DNP_PKT_F_LAST;
}

/* Header of the next GET response packet of a responder job. */
static void build_resp_hdr(struct dnp_engine *e, const struct pkt *job, uint32_t len,
			   struct dnp_pkt_hdr *h, uint64_t now)
{
	memset(h, 0, sizeof(*h));
	h->lflags = DNP_LINK_F_SEQ;
	h->kind = DNP_PKT_GET_RESP;
	h->dst = job->h.src;
	h->via = job->job_via;
	h->src = e->c.self;
	h->dst_port = job->h.src_port;
	h->src_port = job->h.dst_port;
	h->msg_id = job->h.msg_id; /* the requester's id: it completes its GET with it */
	h->va = job->job_dst_va + job->job_off;
	h->key = job->job_dst_key;
	h->offset = (uint32_t)job->job_off;
	h->len = (uint16_t)len;
	h->msg_len = job->job_len;
	h->timestamp = (uint32_t)now;
	h->fstatus = dnp_ft_tc(dnp_pkt_tc(&job->h)); /* the class of its request */
	if (job->job_off == 0)
		h->flags |= DNP_PKT_F_FIRST;
	if (job->job_off + len == job->job_len)
		h->flags |= DNP_PKT_F_LAST;
}

/*
 * Copies len bytes of port's memory at va into dst: e->scratch for a
 * loopback delivery, else straight into the payload of the packet buffer
 * that will carry it (a private copy either way, taken once).
 */
static int read_local(struct dnp_engine *e, unsigned port, uint64_t va, uint32_t len, uint8_t *dst,
		      const struct dnp_mem_seq *seq)
{
	if (!len)
		return 0;
	/* a registered source is passed on so the reader can use its mapping */
	const struct dnp_buf *b = dnp_buftab_find(e->bt, (uint8_t)port, va, len);
	return e->c.mem->read(e->c.mem_ctx, port, b, va, dst, len, seq) ? -EFAULT : 0;
}

/* Where the payload of the next packet towards output qi goes (see read_local). */
static uint8_t *payload_buf(struct dnp_engine *e, unsigned qi, uint32_t len, struct pkt **p)
{
	if (qi == DNP_DIR_LOCAL) {
		*p = NULL;
		return e->scratch;
	}
	*p = engine_pkt_get(e, (uint32_t)dnp_pkt_frame_len(len)); /* out_ready saw one free */
	return (*p)->frame + DNP_PAYLOAD_OFF;
}

/*
 * May a packet of len payload bytes for dst leave through output qi now?
 * Credit, window and a buffer are checked before any memory is read, so
 * memory is read only for a packet that can leave. Loopback always may.
 */
static bool out_ready(struct dnp_engine *e, unsigned qi, unsigned tc, struct dnp_coord dst,
		      uint16_t via, uint32_t len, int known_vc, uint8_t *vc)
{
	*vc = 0;
	if (qi == DNP_DIR_LOCAL)
		return true;
	struct xlink *x = &e->links[qi];
	struct dnp_hop hop;
	uint32_t flen = (uint32_t)dnp_pkt_frame_len(len);

	if (known_vc >= 0) /* routed to qi, and the router has not changed since */
		hop.vc = (uint8_t)known_vc;
	else if (dnp_route_step(&e->router, e->c.self, dst, via, DNP_DIR_LOCAL, 0, &hop) < 0 ||
		 hop.dir != qi)
		hop.vc = 0; /* routes changed since it was queued: keep the queue's link */
	if (!engine_pool_has_inj(e, flen) || dnp_link_state(x->l) != DNP_LINK_UP ||
	    dnp_link_window_full(x->l) || !engine_out_free(e, qi) ||
	    !engine_can_start(e, x->l, hop.vc, tc, flen / DNP_WORD_BYTES))
		return false;
	*vc = hop.vc;
	return true;
}

/*
 * Sends h with its payload (from payload_buf): onto link qi in packet p, or
 * delivered here for loopback (p NULL, payload in e->scratch). Returns 0,
 * -EAGAIN or DELIVER_FULL (loopback delivery must wait), or the encoder's
 * error; p is consumed unless the delivery must wait.
 */
static int out_send(struct dnp_engine *e, unsigned qi, struct dnp_pkt_hdr *h, uint8_t vc,
		    struct pkt *p, uint64_t now)
{
	if (qi == DNP_DIR_LOCAL) {
		int rc = engine_deliver(e, h, e->scratch, NULL, now);
		if (rc == -EAGAIN || rc == DELIVER_FULL)
			return rc;
		e->lo_wait.on = false;
		e->st.pkts_injected++;
		e->st.pkts_delivered++;
		return 0;
	}
	h->vc = vc;
	h->hops = 1;
	/* the payload is in place; the CRC is computed once, by the restamp at send time */
	int n = dnp_pkt_encode_unsealed(h, p->frame + DNP_PAYLOAD_OFF, p->frame, DNP_MAX_FRAME);
	if (n < 0) {
		engine_pkt_put(e, p);
		return n;
	}
	if (h != &p->h)
		p->h = *h;
	p->flen = (uint32_t)n;
	p->words = (uint32_t)n / DNP_WORD_BYTES;
	p->in_dir = DNP_DIR_LOCAL;
	p->hops_tx = 1;
	engine_link_enqueue(e, qi, vc, p, now);
	e->st.pkts_injected++;
	return 0;
}

/* Takes the head command off queue qi and ends it with err. */
static bool inj_abort(struct dnp_engine *e, unsigned qi, struct slot *s, int err)
{
	engine_inj_pop(e, qi, s->qtc);
	engine_complete(e, s, err);
	return true;
}

/*
 * One pass (engine.h, conf.tx_direct): may the next packet of command s (len
 * payload bytes, out through link qi) keep its payload in the application's
 * memory until it is written out? PUTs only (a failed read at write-out is
 * then refused by the target's key check: engine_desc_fill), from memory
 * the driver calls stable, not flagged SRC_EVENT (whose TX_READ gives the
 * source back before the packet is acked).
 */
static bool desc_ok(const struct dnp_engine *e, unsigned qi, const struct slot *s, uint32_t len)
{
	return e->c.tx_direct && len >= DNP_ONEPASS_MIN && qi < DNP_NDIRS && e->links[qi].direct &&
	       s->c.op == DNP_OP_PUT && !(s->c.flags & (DNP_CMD_F_INLINE | DNP_CMD_F_SRC_EVENT)) &&
	       e->c.mem->stable(e->c.mem_ctx, s->port, s->c.local_va + s->offset, len);
}

/* p carries the next packet of s as a descriptor (desc_ok): no byte read now. */
static void desc_set(struct dnp_engine *e, struct pkt *p, const struct slot *s)
{
	e->st.tx_onepass_held++;
	p->desc = 1;
	p->desc_port = (uint8_t)s->port;
	p->desc_va = s->c.local_va + s->offset;
}

int engine_desc_fill(struct dnp_engine *e, struct pkt *p, bool fail_cmd)
{
	uint8_t *pl = p->frame + DNP_PAYLOAD_OFF;

	p->desc = 0;
	e->st.tx_onepass_held--;
	/* the frame stays unsealed (CRC field zero): its restamp computes the CRC */
	if (!e->c.mem->read(e->c.mem_ctx, p->desc_port, NULL, p->desc_va, pl, p->h.len, NULL))
		return 0;
	/*
	 * Its sequence number is taken, so it must go; but no byte we could not
	 * read may arrive as data: key 0 opens nothing (keygen.h), the target
	 * refuses it (-EACCES), and its command fails here with -EFAULT.
	 */
	e->st.tx_onepass_faults++;
	memset(pl, 0, p->h.len);
	p->h.key = 0;
	(void)dnp_pkt_encode_unsealed(&p->h, pl, p->frame, DNP_MAX_FRAME);
	if (fail_cmd) {
		struct slot *s = engine_slot_by_msg(e, p->h.msg_id);

		if (s && s->port == p->desc_port && !s->orphan)
			engine_fail_cmd(e, s, -EFAULT);
	}
	return -EFAULT;
}

/* Reads now the bytes of port's descriptor packets (of message msg_id only, unless all). */
static void desc_fill_port(struct dnp_engine *e, unsigned port, bool all, uint32_t msg_id)
{
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		struct xlink *x = &e->links[d];

		if (!x->l || !x->direct)
			continue;
		unsigned n = dnp_link_unacked(x->l);
		for (unsigned i = 0; i < n; i++) {
			uint32_t seq;
			struct pkt *p = dnp_link_unacked_at(x->l, i, &seq);

			if (p->desc && p->desc_port == port && (all || p->h.msg_id == msg_id))
				(void)engine_desc_fill(e, p, false); /* its command is ending */
		}
	}
}

void engine_desc_port_closed(struct dnp_engine *e, unsigned port)
{
	if (e->c.tx_direct)
		desc_fill_port(e, port, true, 0);
}

/* Puts the next packet's payload of command s in dst. */
static int load_cmd_payload(struct dnp_engine *e, const struct slot *s, uint32_t len, uint8_t *dst)
{
	if (s->c.op == DNP_OP_GET) {
		uint64_t va = htole64(s->c.local_va);
		uint32_t k = htole32(s->c.local_key), l = htole32((uint32_t)s->c.len);

		memcpy(dst, &va, 8);
		memcpy(dst + 8, &k, 4);
		memcpy(dst + 12, &l, 4);
		return 0;
	}
	if (s->c.flags & DNP_CMD_F_INLINE) { /* the payload is in the slot: no memory read */
		dnp_cmd_inline_get(&s->c, dst, len);
		return 0;
	}
	/* a command's reads: its own id (msg_id is unique among live slots) */
	const struct dnp_mem_seq seq = { .id = s->msg_id, .end = s->c.local_va + s->c.len };

	return read_local(e, s->port, s->c.local_va + s->offset, len, dst, &seq);
}

/* One packet of the command at the head of injection queue qi of class tc. */
static inline __attribute__((always_inline)) bool inject_one(struct dnp_engine *e, unsigned qi,
							     unsigned tc, uint64_t now)
{
	if (e->qhead[qi][tc] == NO_SLOT || (e->cg && !engine_cg_pick(e, qi, tc)))
		return false;
	struct slot *s = &e->slots[e->qhead[qi][tc]];

	if (s->offset == UINT64_MAX) /* failed while queued */
		return inj_abort(e, qi, s, (int)(int64_t)s->c.rsvd3);
	if (s->orphan)
		return inj_abort(e, qi, s, -ECONNRESET);
	if (qi != DNP_DIR_LOCAL && !engine_link_usable(e, qi))
		return inj_abort(e, qi, s, -ENOLINK);

	bool is_getreq = s->c.op == DNP_OP_GET;
	uint64_t remaining = s->c.len - s->offset;
	uint32_t seg = engine_seg_max(e, tc);
	uint32_t len = is_getreq ? DNP_GET_DESC_BYTES : remaining > seg ? seg : (uint32_t)remaining;
	/* a TX_READ is due once this packet left: its source is then read whole */
	bool read_done = s->rd_ev && len == remaining;
	struct dnp_pkt_hdr hl, *h;
	uint8_t vc;

	struct pkt *p;
	uint8_t *buf;

	if (!out_ready(e, qi, tc, s->dst, s->via, len, s->rver == e->router.ver ? s->hop_vc : -1,
		       &vc))
		return false;
	buf = payload_buf(e, qi, len, &p);
	if (p && desc_ok(e, qi, s, len)) {
		desc_set(e, p, s);
	} else if (load_cmd_payload(e, s, len, buf) < 0) {
		if (p)
			engine_pkt_put(e, p);
		return inj_abort(e, qi, s, -EFAULT);
	}
	h = p ? &p->h : &hl; /* built where the packet keeps it (loopback: on the stack) */
	build_cmd_hdr(e, s, len, h, now);
	int rc = out_send(e, qi, h, vc, p, now);
	if (rc == DELIVER_FULL) {
		/*
		 * Loopback to a port whose event queue stays full: bounded like
		 * arriving traffic, or it would hold up every other port's
		 * loopback commands queued behind it.
		 */
		if (!engine_full_wait_over(e, &e->lo_wait, h->dst_port, now))
			return false;
		engine_deliver_give_up(e, h, now); /* reports to ourselves: marks s failed */
		return inj_abort(e, qi, s, -EOVERFLOW);
	}
	if (rc == -EAGAIN)
		return false;
	if (rc < 0) /* cannot happen for a checked command; fail it loudly */
		return inj_abort(e, qi, s, rc);
	s->sent = 1;
	if (read_done)
		src_read_done(e, s); /* before a loopback delivery's completion, below */
	if (s->offset == UINT64_MAX) /* loopback: completed (or failed) by its own delivery */
		return inj_abort(e, qi, s, (int)(int64_t)s->c.rsvd3);
	s->offset += is_getreq ? s->c.len : len;
	if (s->offset >= s->c.len || is_getreq) {
		engine_inj_pop(e, qi, tc); /* it now waits for its completion report */
		s->t_wait = now;
	}
	return true;
}

/*
 * Send-side burst (conf.tx_single false): the packets a run on link qi
 * built, not yet handed to the link's sequence (dnp_link_seq_push_run at the
 * end of the run: one step for all of them).
 */
struct inj_run {
	struct xlink *x;
	uint32_t room; /* packets the window still takes in this run */
	unsigned n;
	/*
	 * The registered buffer the last source read of the run was in (NULL:
	 * none yet). Buffers of a port never overlap and none is registered or
	 * removed during a run, so the one that holds a later read is this one
	 * whenever it holds the read's bytes: dnp_buftab_find would return it.
	 */
	const struct dnp_buf *src;
	void *pkts[64];
};

/* Kind of the packets of command op. */
static inline uint8_t cmd_kind(uint8_t op)
{
	return op == DNP_OP_GET ? DNP_PKT_GET_REQ : op == DNP_OP_SEND ? DNP_PKT_SEND : DNP_PKT_PUT;
}

/*
 * The link's header template (struct xlink.tmpl: the fields a run's packets
 * share, destination, ports, route, kind, VC, class and retry flag, encoded
 * and checked once by dnp_pkt_tmpl_init) fixes them for the next packet of
 * s on VC vc as build_cmd_hdr would.
 */
static inline bool inj_tmpl_fits(const struct xlink *x, const struct slot *s, uint8_t vc)
{
	const struct dnp_pkt_hdr *t = &x->tmpl.h;

	return x->tmpl_ok && t->kind == cmd_kind(s->c.op) && t->vc == vc && t->dst.x == s->dst.x &&
	       t->dst.y == s->dst.y && t->dst.z == s->dst.z && t->via == s->via &&
	       t->dst_port == s->c.dst_port && t->src_port == s->port && t->status == s->retry &&
	       t->fstatus == dnp_ft_tc(s->c.tc);
}

/*
 * Header (p->h) and unsealed frame of the next packet of s (len payload
 * bytes, already in place) on VC vc: those of build_cmd_hdr and
 * dnp_pkt_encode_unsealed, made from the link's template, which is made
 * anew (from build_cmd_hdr) when it does not fit. Returns the frame length
 * or the encoder's error.
 */
static int inj_run_encode(struct dnp_engine *e, struct inj_run *r, const struct slot *s,
			  uint32_t len, uint8_t vc, struct pkt *p, uint64_t now)
{
	struct xlink *x = r->x;
	struct dnp_pkt_var v;

	if (!inj_tmpl_fits(x, s, vc)) {
		build_cmd_hdr(e, s, len, &p->h, now);
		p->h.vc = vc;
		p->h.hops = 1;
		x->tmpl_ok = dnp_pkt_tmpl_init(&x->tmpl, &p->h) == 0;
		if (!x->tmpl_ok) /* the encoder says why */
			return dnp_pkt_encode_unsealed(&p->h, p->frame + DNP_PAYLOAD_OFF, p->frame,
						       DNP_MAX_FRAME);
	}
	v.msg_id = s->msg_id;
	v.key = s->c.remote_key;
	v.timestamp = (uint32_t)now;
	if (s->c.op == DNP_OP_GET) {
		v.va = s->c.remote_va;
		v.offset = 0;
		v.len = DNP_GET_DESC_BYTES;
		v.msg_len = DNP_GET_DESC_BYTES;
		v.flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST;
	} else {
		v.va = s->c.op == DNP_OP_SEND ? 0 : s->c.remote_va + s->offset;
		v.offset = (uint32_t)s->offset;
		v.len = (uint16_t)len;
		v.msg_len = (uint32_t)s->c.len;
		v.flags = (uint8_t)((s->offset == 0 ? DNP_PKT_F_FIRST : 0) |
				    (s->offset + len == s->c.len ? DNP_PKT_F_LAST : 0));
	}
	return dnp_pkt_tmpl_encode(&x->tmpl, &v, &p->h, p->frame, DNP_MAX_FRAME);
}

/* load_cmd_payload in a run: the source's buffer looked up once for reads it holds. */
static int inj_run_load(struct dnp_engine *e, struct inj_run *r, const struct slot *s, uint32_t len,
			uint8_t *dst)
{
	if (s->c.op == DNP_OP_GET || (s->c.flags & DNP_CMD_F_INLINE) || !len)
		return load_cmd_payload(e, s, len, dst);

	const struct dnp_buf *b = r->src;
	uint64_t va = s->c.local_va + s->offset;
	const struct dnp_mem_seq seq = { .id = s->msg_id, .end = s->c.local_va + s->c.len };

	if (!b || b->port != s->port || va < b->va || len > b->len || va - b->va > b->len - len) {
		b = dnp_buftab_find(e->bt, s->port, va, len);
		if (b)
			r->src = b;
	}
	return e->c.mem->read(e->c.mem_ctx, s->port, b, va, dst, len, &seq) ? -EFAULT : 0;
}

/* The run's packets join the link's unacked list, in order, numbered there. */
static void inj_run_flush(struct dnp_engine *e, struct inj_run *r, uint64_t now)
{
	uint32_t seq = dnp_link_seq_push_run(r->x->l, r->pkts, r->n, now);

	for (unsigned i = 0; i < r->n; i++)
		((struct pkt *)r->pkts[i])->seq = seq + i;
	e->st.pkts_injected += r->n;
	e->st.tx_run_pkts += r->n;
	r->room -= r->n;
	r->n = 0;
}

/*
 * One packet of command s (the head of queue qi, class 0) in a run: the
 * checks of out_ready in its order (buffer, window, credit) with the link
 * known UP for the whole run, then payload, header and encoding as
 * inject_one and out_send, and the credit committed (dnp_link_commit), so
 * that the next packet's credit check sees it. 1: a packet was built (or s
 * ended); 0: nothing may leave now (nothing done).
 */
static int inj_run_one(struct dnp_engine *e, unsigned qi, struct slot *s, struct inj_run *r,
		       uint64_t now)
{
	bool is_getreq = s->c.op == DNP_OP_GET;
	uint64_t remaining = s->c.len - s->offset;
	uint32_t seg = engine_seg_max(e, 0);
	uint32_t len = is_getreq ? DNP_GET_DESC_BYTES : remaining > seg ? seg : (uint32_t)remaining;
	uint32_t flen = (uint32_t)dnp_pkt_frame_len(len);
	bool read_done = s->rd_ev && len == remaining;
	struct dnp_hop hop;
	struct pkt *p;

	if (s->rver == e->router.ver) /* routed to qi, and the router has not changed since */
		hop.vc = s->hop_vc;
	else if (dnp_route_step(&e->router, e->c.self, s->dst, s->via, DNP_DIR_LOCAL, 0, &hop) <
			 0 ||
		 hop.dir != qi)
		hop.vc = 0; /* routes changed since it was queued: keep the queue's link */
	if (!engine_pool_has_inj(e, flen) || r->n >= r->room ||
	    !engine_can_start(e, r->x->l, hop.vc, 0, flen / DNP_WORD_BYTES))
		return 0;
	p = engine_pkt_get(e, flen);
	if (desc_ok(e, qi, s, len))
		desc_set(e, p, s);
	else if (inj_run_load(e, r, s, len, p->frame + DNP_PAYLOAD_OFF) < 0) {
		engine_pkt_put(e, p);
		/* one pass: s's packets of this run join the link first, so its failure fills them */
		inj_run_flush(e, r, now);
		return inj_abort(e, qi, s, -EFAULT);
	}
	/* encoded with its VC: engine_link_enqueue's dnp_pkt_set_vc would change nothing */
	int n = inj_run_encode(e, r, s, len, hop.vc, p, now);
	if (n < 0) { /* cannot happen for a checked command; fail it loudly */
		engine_pkt_put(e, p);
		inj_run_flush(e, r, now); /* as for a failed read above */
		return inj_abort(e, qi, s, n);
	}
	p->flen = (uint32_t)n;
	p->words = (uint32_t)n / DNP_WORD_BYTES;
	p->in_dir = DNP_DIR_LOCAL;
	p->hops_tx = 1;
	dnp_link_commit(r->x->l, hop.vc, p->words);
	r->pkts[r->n++] = p;
	s->sent = 1;
	if (read_done)
		src_read_done(e, s);
	s->offset += is_getreq ? s->c.len : len;
	if (s->offset >= s->c.len || is_getreq) {
		engine_inj_pop(e, qi, 0); /* it now waits for its completion report */
		s->t_wait = now;
	}
	return 1;
}

/*
 * Send-side burst: up to 64 packets of the commands at the head of link
 * qi's injection queue (arbitration and congestion windows off), built in
 * one pass: the same packets, checks and events as up to 64 inject_one
 * calls, with the link's state checked once and its sequence numbers given
 * once for the run. Returns the number of steps inject_one would have
 * counted as progress.
 */
static unsigned inject_run(struct dnp_engine *e, unsigned qi, uint64_t now)
{
	struct inj_run r = { .x = &e->links[qi] };
	unsigned k;

	if (dnp_link_state(r.x->l) != DNP_LINK_UP) {
		for (k = 0; k < 64 && inject_one(e, qi, 0, now); k++)
			; /* aborts, or nothing: the one-at-a-time path says which */
		return k;
	}
	r.room = dnp_link_window_room(r.x->l);
	for (k = 0; k < 64 && e->qhead[qi][0] != NO_SLOT; k++) {
		struct slot *s = &e->slots[e->qhead[qi][0]];

		if (s->offset == UINT64_MAX) /* failed while queued */
			inj_abort(e, qi, s, (int)(int64_t)s->c.rsvd3);
		else if (s->orphan)
			inj_abort(e, qi, s, -ECONNRESET);
		else if (!inj_run_one(e, qi, s, &r, now))
			break;
	}
	inj_run_flush(e, &r, now);
	return k;
}

/* Ends the responder job at the head of resp[qi], telling the requester err. */
static bool resp_abort(struct dnp_engine *e, unsigned qi, int err, uint64_t now)
{
	struct pkt *job = engine_q_pop(&e->resp[qi]);

	(void)engine_send_cmpl(e, job->h.src, job->h.src_port, job->h.msg_id, err, now);
	engine_pkt_put(e, job);
	return true;
}

/* One packet of the GET response at the head of resp[qi]. */
static bool respond_one(struct dnp_engine *e, unsigned qi, uint64_t now)
{
	struct pkt *job = e->resp[qi].head;

	if (!job)
		return false;
	if (qi != DNP_DIR_LOCAL && !engine_link_usable(e, qi))
		return resp_abort(e, qi, -ENOLINK, now);

	uint64_t remaining = job->job_len - job->job_off;
	unsigned tc = engine_pkt_class(&job->h);
	uint32_t seg = e->c.arbitration ? engine_seg_max(e, tc) : DNP_MAX_PAYLOAD;
	uint32_t len = remaining > seg ? seg : (uint32_t)remaining;
	struct dnp_pkt_hdr hl, *h;
	uint8_t vc;

	struct pkt *p;
	uint8_t *buf;

	if (!out_ready(e, qi, e->c.arbitration ? tc : 0, job->h.src, job->job_via, len, -1, &vc))
		return false;
	buf = payload_buf(e, qi, len, &p);
	/* a GET's reads: bit 63 and the requester's node, port and id */
	const struct dnp_mem_seq seq = {
		.id = 1ull << 63 | (uint64_t)dnp_torus_id(&e->c.torus, job->h.src) << 40 |
		      (uint64_t)job->h.src_port << 32 | job->h.msg_id,
		.end = job->h.va + job->job_len,
	};
	if (read_local(e, job->h.dst_port, job->h.va + job->job_off, len, buf, &seq) < 0) {
		if (p)
			engine_pkt_put(e, p);
		return resp_abort(e, qi, -EFAULT, now);
	}
	h = p ? &p->h : &hl; /* built where the packet keeps it (loopback: on the stack) */
	build_resp_hdr(e, job, len, h, now);
	int rc = out_send(e, qi, h, vc, p, now);
	if (rc == -EAGAIN)
		return false;
	if (rc < 0)
		return resp_abort(e, qi, rc, now);
	job->job_off += len;
	if (job->job_off >= job->job_len) {
		engine_q_pop(&e->resp[qi]);
		engine_pkt_put(e, job);
	}
	return true;
}

bool engine_inject(struct dnp_engine *e, uint64_t now)
{
	bool progress = false;

	for (unsigned qi = 0; qi < NIN; qi++) {
		if (e->qhead[qi][0] == NO_SLOT && !e->resp[qi].head)
			continue;
		/* GET responses first: a requester is waiting on them */
		for (unsigned k = 0; k < 64 && respond_one(e, qi, now); k++)
			progress = true;
		if (qi != DNP_DIR_LOCAL && !e->c.tx_single && !e->cg) {
			progress |= inject_run(e, qi, now) != 0;
			continue;
		}
		for (unsigned k = 0; k < 64 && inject_one(e, qi, 0, now); k++)
			progress = true;
	}
	return progress;
}

bool engine_inject_class(struct dnp_engine *e, unsigned qi, unsigned tc, uint64_t now)
{
	const struct pkt *job = e->resp[qi].head;

	if (job && engine_pkt_class(&job->h) == tc && respond_one(e, qi, now))
		return true;
	return inject_one(e, qi, tc, now);
}

/*
 * The first hop of the last command of a submit burst: a command to the
 * same node by the same route, while the router has not changed, has the
 * same one (engine_local_hop is a function of those and the router).
 */
struct hop_memo {
	bool ok;
	uint32_t ver;
	struct dnp_coord dst;
	uint16_t via;
	struct dnp_hop hop;
};

static int submit_hop(struct dnp_engine *e, const struct slot *s, struct hop_memo *m,
		      struct dnp_hop *hop)
{
	if (m && m->ok && m->ver == e->router.ver && m->via == s->via &&
	    dnp_coord_eq(m->dst, s->dst)) {
		*hop = m->hop;
		return 0;
	}
	int rc = engine_local_hop(e, s->dst, s->via, hop);
	if (m && rc == 0)
		*m = (struct hop_memo){
			.ok = true, .ver = e->router.ver, .dst = s->dst, .via = s->via, .hop = *hop
		};
	return rc;
}

/* dnp_engine_submit of an open port (m: the burst's hop memo, or NULL). */
static int submit_one(struct dnp_engine *e, unsigned port, const struct dnp_cmd *c,
		      struct hop_memo *m, uint64_t now)
{
	struct evq *q = &e->ports[port];
	/* room for its completion event, and for its TX_READ if it may ask for one */
	uint32_t need = 1u + ((c->flags & DNP_CMD_F_SRC_EVENT) != 0);
	if (engine_evq_used(q) + q->reserved + need > e->c.event_queue)
		return -EAGAIN;
	struct slot *s = slot_alloc(e);
	if (!s)
		return -EAGAIN;
	s->c = *c;
	s->c.src_port = (uint8_t)port;
	s->port = (uint8_t)port;
	s->t_submit = now;
	s->dst = (struct dnp_coord){ c->dst_x, c->dst_y, c->dst_z };
	q->reserved++;
	e->st.cmds_accepted++;
	e->dirty = true;

	int rc = dnp_cmd_check(c, &e->c.torus, e->c.max_ports);
	struct dnp_hop hop;
	if (dnp_op_is_coll(c->op)) { /* collectives (coll.c): never injected */
		if (rc == 0)
			rc = engine_coll_submit(e, s, now);
		if (rc < 0)
			engine_complete(e, s, rc);
		return 0;
	}
	if (rc == 0 && (s->c.flags & DNP_CMD_F_SRC_EVENT)) {
		s->rd_ev = 1; /* its TX_READ's slot: room was checked with it */
		q->reserved++;
	}
	/* dst is in the torus now: with no known fault DOR's plan is direct (via 0) */
	if (rc == 0 && (e->router.n_faults || e->router.routing == DNP_ROUTING_VALIANT))
		rc = engine_plan_msg(e, s, &s->via);
	if (rc == 0)
		rc = submit_hop(e, s, m, &hop);
	if (rc == 0 && hop.dir != DNP_DIR_LOCAL && !engine_link_usable(e, hop.dir))
		rc = -ENOLINK;
	if (rc < 0) {
		engine_complete(e, s, rc);
		return 0;
	}
	s->hop_vc = hop.vc;
	s->rver = e->router.ver;
	engine_inj_push(e, hop.dir, s);
	return 0;
}

int dnp_engine_submit(struct dnp_engine *e, unsigned port, const struct dnp_cmd *c, uint64_t now)
{
	if (port >= e->c.max_ports || !e->ports[port].open)
		return -ENOENT;
	return submit_one(e, port, c, NULL, now);
}

unsigned dnp_engine_submit_burst(struct dnp_engine *e, unsigned port, const struct dnp_cmd *c,
				 unsigned n, int *rc, uint64_t now)
{
	struct hop_memo m = { .ok = false };
	unsigned i;
	int r = 0;

	if (port >= e->c.max_ports || !e->ports[port].open)
		r = -ENOENT;
	for (i = 0; r == 0 && i < n; i++)
		if ((r = submit_one(e, port, &c[i], &m, now)) < 0)
			break;
	if (rc)
		*rc = i < n ? r : 0;
	return i;
}
