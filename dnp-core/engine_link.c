/* SPDX-License-Identifier: MIT */
/*
 * engine_link.c — the engine side of links: a broken link drained and its
 * queued commands detoured, a link up again, and frame intake
 * (dnp_engine_rx: copy, decode, epoch, ack, sequence, FIFO). Contract:
 * engine_priv.h, "links", and engine.h.
 */
#include "engine_rx8.h"

/* A data packet that cannot go anywhere: tell its owner, free it. */
void engine_drop_unroutable(struct dnp_engine *e, struct pkt *p, int status, uint64_t now)
{
	uint8_t oport;
	struct dnp_coord owner = engine_pkt_owner(&p->h, &oport);

	if (p->h.kind != DNP_PKT_CMPL && p->h.kind != DNP_PKT_CREDIT && p->h.kind != DNP_PKT_DIAG &&
	    p->h.kind != DNP_PKT_ROUTE && p->h.kind != DNP_PKT_QUERY && p->h.kind != DNP_PKT_COLL &&
	    !(status == -ENOLINK && engine_coord_self(e, owner) &&
	      engine_query_soon(e, p->h.msg_id)))
		(void)engine_send_cmpl(e, owner, oport, p->h.msg_id, status, now);
	engine_pkt_put(e, p);
}

/*
 * A LINK event to every open port (len = direction, status 0 = UP again,
 * -ENOLINK = broken). Informational: dropped when a queue has no room that
 * is not promised to a command's completion.
 */
static void link_event(struct dnp_engine *e, unsigned dir, int status)
{
	struct dnp_event ev = {
		.type = DNP_EV_LINK,
		.peer_x = e->c.self.x,
		.peer_y = e->c.self.y,
		.peer_z = e->c.self.z,
		.status = (int8_t)status,
		.len = dir,
	};

	for (unsigned p = 0; p < e->c.max_ports; p++) {
		struct evq *q = &e->ports[p];
		if (!q->open)
			continue;
		if (engine_evq_room(e, q))
			engine_evq_push(e, q, &ev);
		else
			e->st.link_events_dropped++;
	}
}

/*
 * Commands of class tc queued for broken link dir: those that can take a
 * detour are appended to the list moved..moved_tail (through slot.next, in
 * order), the others end (engine_link_broken).
 */
static void detour_queued(struct dnp_engine *e, unsigned dir, unsigned tc, uint32_t *moved,
			  uint32_t *moved_tail)
{
	uint32_t i;

	while ((i = e->qhead[dir][tc]) != NO_SLOT) {
		struct slot *s = &e->slots[i];
		struct dnp_hop hop;

		engine_inj_pop(e, dir, tc);
		/*
		 * Some of its packets left on the link: lost or written, the
		 * rest never will be. With outcome queries its target says
		 * which (not delivered: it is sent again whole on a detour).
		 */
		if (s->offset != 0 && engine_query_soon(e, s->msg_id))
			continue;
		if (s->offset != 0 || dnp_route_plan(&e->router, s->dst, &s->via) < 0 ||
		    dnp_route_step(&e->router, e->c.self, s->dst, s->via, DNP_DIR_LOCAL, 0, &hop) <
			    0 ||
		    hop.dir == dir || !engine_link_usable(e, hop.dir)) {
			engine_complete(e, s, -ENOLINK);
			continue;
		}
		s->queue = hop.dir;
		s->hop_vc = hop.vc;
		s->rver = e->router.ver;
		s->next = NO_SLOT;
		if (*moved_tail == NO_SLOT)
			*moved = i;
		else
			e->slots[*moved_tail].next = i;
		*moved_tail = i;
	}
}

/* The link module reported DNP_LINK_RST_* bits: drain on DOWN, restart on UP. */
static void link_transition(struct dnp_engine *e, unsigned dir, unsigned bits, uint64_t now)
{
	struct xlink *x = &e->links[dir];

	if (bits & DNP_LINK_RST_DOWN)
		engine_link_broken(e, dir, now);
	if (bits & DNP_LINK_RST_UP) {
		x->next_tx = 0;
		x->credit_pending = true;
		x->ack_dirty = false;
		x->ack_urgent = false;
		if (x->was_up)
			link_event(e, dir, 0);
		x->was_up = true;
		/* the neighbour (maybe just restarted) hears every state we know */
		engine_cable_local(e, dir, false);
		for (uint32_t i = 0; i < e->ncables; i++)
			e->cables[i].pend |= (uint8_t)(1u << dir);
	}
	e->dirty = true;
}

void dnp_engine_leave(struct dnp_engine *e)
{
	for (unsigned d = 0; d < DNP_NDIRS; d++)
		if (e->links[d].l) {
			dnp_link_leave(e->links[d].l);
			e->links[d].credit_pending = true;
		}
	e->dirty = true;
}

void engine_link_broken(struct dnp_engine *e, unsigned dir, uint64_t now)
{
	struct xlink *x = &e->links[dir];
	void *out[64];
	unsigned n;

	while ((n = dnp_link_drain(x->l, out, 64)) > 0)
		for (unsigned i = 0; i < n; i++)
			engine_drop_unroutable(e, out[i], -ENOLINK, now);
	/* Frames held beyond a gap belong to the old epoch: never delivered. */
	while ((n = dnp_link_rx_drain(x->l, out, 64)) > 0)
		for (unsigned i = 0; i < n; i++)
			engine_pkt_put(e, out[i]);
	x->next_tx = 0;
	x->credit_pending = false;
	x->ack_dirty = false;
	x->ack_urgent = false;
	link_event(e, dir, -ENOLINK);
	engine_cable_local(e, dir, true);
	/*
	 * Commands and GET responses waiting to be injected on this link: one
	 * that has not sent a packet yet takes the detour when there is one
	 * (docs/routing.md); one that has, lost packets with the link: its
	 * target is asked about it when queries are on, else it fails. Moved
	 * commands keep their order.
	 */
	uint32_t moved = NO_SLOT, moved_tail = NO_SLOT;
	for (unsigned tc = 0; tc < DNP_ARB_CLASSES; tc++)
		detour_queued(e, dir, tc, &moved, &moved_tail);
	while (moved != NO_SLOT) {
		struct slot *s = &e->slots[moved];

		moved = s->next;
		engine_inj_push(e, s->queue, s);
	}
	struct pkt *job;
	struct pktq jobs = { 0 };
	while ((job = engine_q_pop(&e->resp[dir])) != NULL) {
		struct dnp_hop hop;
		uint16_t via;

		if (job->job_off == 0 && dnp_route_plan(&e->router, job->h.src, &via) == 0 &&
		    dnp_route_step(&e->router, e->c.self, job->h.src, via, DNP_DIR_LOCAL, 0,
				   &hop) == 0 &&
		    hop.dir != dir && engine_link_usable(e, hop.dir)) {
			job->job_q = hop.dir;
			job->job_via = via;
			engine_q_push(&jobs, job);
			continue;
		}
		(void)engine_send_cmpl(e, job->h.src, job->h.src_port, job->h.msg_id, -ENOLINK,
				       now);
		engine_pkt_put(e, job);
	}
	while ((job = engine_q_pop(&jobs)) != NULL)
		engine_q_push(&e->resp[job->job_q], job);
	e->dirty = true;
}

/*
 * Is h a frame of link dir? The peer at the other end sends from its output
 * in the opposite direction, and a link-control frame names the neighbour
 * itself as its source. A frame recorded on another link (in a ring of size
 * 2 both links join the same two nodes, and each has its own sequence space)
 * fails here before its seq or ack is looked at.
 * (A link epoch, once links have one, is checked here too.)
 */
static inline __attribute__((always_inline)) bool rx_on_own_link(const struct dnp_engine *e,
								 unsigned dir,
								 const struct dnp_pkt_hdr *h)
{
	if (h->src_dir != (uint8_t)dnp_torus_opposite((enum dnp_dir)dir))
		return false;
	if (h->kind == DNP_PKT_CREDIT &&
	    !dnp_coord_eq(h->src, dnp_torus_neighbour(&e->c.torus, e->c.self, (enum dnp_dir)dir)))
		return false;
	return true;
}

/* Drops a received frame (p: its private copy, or NULL) and returns rc. */
static int rx_drop(struct dnp_engine *e, struct pkt *p, int rc)
{
	if (p)
		engine_pkt_put(e, p);
	return rc;
}

/* Records an accepted (or held) frame's header (if not decoded there) and origin in its packet. */
static void rx_fill(struct pkt *p, const struct dnp_pkt_hdr *h, size_t len, uint32_t words,
		    unsigned dir)
{
	if (h != &p->h)
		p->h = *h;
	p->flen = (uint32_t)len;
	p->words = words;
	p->in_dir = (uint8_t)dir;
	p->in_vc = h->vc;
}

/*
 * A private copy of a frame from a link: into a packet buffer when a spare
 * one is free (returned), else into e->rxcopy (NULL returned), so that its
 * ack and credits are still heard. *copy says where it went.
 */
static struct pkt *rx_copy(struct dnp_engine *e, const void *frame, size_t len, uint8_t **copy)
{
	struct pkt *p =
		engine_pool_has_rx(e, (uint32_t)len) ? engine_pkt_get(e, (uint32_t)len) : NULL;

	*copy = p ? p->frame : e->rxcopy;
	if (!p)
		e->st.rx_nobuf++;
	memcpy(*copy, frame, len);
	return p;
}

/*
 * A data frame in copy (no buffer yet) that its input VC gave buffer credit
 * for (docs/protocol.md, "Buffer credits") takes one of the buffers kept
 * for it; NULL when it has none (no buffer credits, a small frame, or
 * beyond the credit given).
 */
static struct pkt *rx_keep(struct dnp_engine *e, struct xlink *x, const struct dnp_pkt_hdr *h,
			   const uint8_t *copy, size_t len)
{
	uint32_t words = (uint32_t)(len / DNP_WORD_BYTES);
	struct pkt *p;

	if (!e->bufs_resv || words < DNP_BUF_MIN_WORDS ||
	    !dnp_link_rx_buf_room(x->l, h->vc, words) || !(p = engine_pkt_get_kept(e)))
		return NULL;
	memcpy(p->frame, copy, len);
	return p;
}

/*
 * The frames held beyond the gap that the frame just accepted on link dir
 * closed follow it onto their input FIFOs, in order. One that overflows its
 * FIFO is freed (counted as an overflow; the peer resends it), and the rest
 * stay held.
 */
static inline __attribute__((always_inline)) void rx_unhold_all(struct dnp_engine *e,
								struct xlink *x, unsigned dir)
{
	struct pkt *p;

	while ((p = dnp_link_rx_unhold(x->l)) != NULL) {
		if (dnp_link_rx_accept(x->l, p->in_vc, p->words) < 0) {
			engine_pkt_put(e, p);
			break;
		}
		(void)dnp_link_rx_seq(x->l, p->h.seq);
		engine_in_push(e, dir, p->in_vc, p);
	}
}

/*
 * A data frame of link dir that passed the link checks (decoded into h; p
 * its buffer, or NULL when no spare one was free and it is in copy): held
 * beyond a gap, dropped (duplicate, FIFO or buffer credit overrun), or
 * queued on its input FIFO in sequence, followed by the held frames whose
 * gap it closed.
 */
static int rx_data(struct dnp_engine *e, struct xlink *x, unsigned dir, struct pkt *p,
		   const uint8_t *copy, const struct dnp_pkt_hdr *h, size_t len, uint64_t now)
{
	uint32_t words = (uint32_t)(len / DNP_WORD_BYTES);
	int rc;

	/* accepted, or a duplicate/gap the peer must hear about at once */
	engine_ack_mark(x, now, h->seq != dnp_link_ack_value(x->l));
	if (h->seq != dnp_link_ack_value(x->l)) {
		rc = dnp_link_rx_seq(x->l, h->seq); /* duplicate or gap */
		if (rc == -EAGAIN && !p)
			p = rx_keep(e, x, h, copy, len);
		if (rc == -EAGAIN && p) {
			/* Beyond a gap: held until the gap fills (link.h), or dropped. */
			rx_fill(p, h, len, words, dir);
			if (dnp_link_rx_hold(x->l, h->seq, h->vc, words, p) == 0)
				return 0;
		}
		return rx_drop(e, p, rc);
	}
	if (dnp_link_rx_occupancy(x->l, h->vc) + words > e->c.link.fifo_words ||
	    !dnp_link_rx_buf_room(x->l, h->vc, words)) {
		(void)dnp_link_rx_accept(x->l, h->vc, words); /* counts the overflow */
		return rx_drop(e, p, -ENOBUFS);
	}
	if (!p)
		p = rx_keep(e, x, h, copy, len);
	if (!p) {
		/*
		 * The expected frame, and no buffer: the frames held beyond its
		 * gap would wait for it for ever. They go (their sender resends
		 * them, as the selective ack no longer names them) and it takes
		 * a buffer they leave, if the reserve allows.
		 */
		void *held[64];
		unsigned k;

		while ((k = dnp_link_rx_drain(x->l, held, 64)) > 0)
			for (unsigned i = 0; i < k; i++)
				engine_pkt_put(e, held[i]);
		if (!engine_pool_has_rx(e, (uint32_t)len))
			return -ENOBUFS;
		p = engine_pkt_get(e, (uint32_t)len);
		memcpy(p->frame, copy, len);
	}
	(void)dnp_link_rx_seq(x->l, h->seq); /* the expected one: accepted */
	(void)dnp_link_rx_accept(x->l, h->vc, words);
	rx_fill(p, h, len, words, dir);
	engine_in_push(e, dir, h->vc, p);
	rx_unhold_all(e, x, dir); /* the frames held behind the gap it closed */
	return 0;
}

/*
 * A RESET frame of link dir (decoded into h, its bytes in copy; p its
 * buffer, or NULL). Its hello is looked at first (link.h, "The link
 * handshake"): one that differs from ours is refused before the own-link
 * check, so that a neighbour started with another torus is named as such
 * rather than as a miswired cable, and an UP link that hears one (its peer
 * restarted with other settings) breaks. Then the own-link check, and the
 * epoch rules (link.h, "Epochs"). Out of line: data frames never come here.
 */
static __attribute__((noinline)) int rx_reset(struct dnp_engine *e, struct xlink *x, unsigned dir,
					      struct pkt *p, const uint8_t *copy,
					      const struct dnp_pkt_hdr *h, size_t len, uint64_t now)
{
	e->dirty = true;
	if (dnp_link_on_hello(x->l, copy + DNP_PAYLOAD_OFF, h->len) < 0) {
		if (dnp_link_state(x->l) == DNP_LINK_UP && dnp_link_set_broken(x->l))
			link_transition(e, dir, DNP_LINK_RST_DOWN, now);
		return rx_drop(e, p, -ECONNREFUSED);
	}
	if (!rx_on_own_link(e, dir, h)) {
		e->st.rx_wrong_link++;
		return rx_drop(e, p, -EXDEV);
	}
	dnp_link_stats_rx(x->l, (uint32_t)(len / DNP_WORD_BYTES));
	link_transition(e, dir, dnp_link_on_reset(x->l, h->epoch, h->credit, now), now);
	return rx_drop(e, p, 0);
}

/*
 * Direct receive (dnp_engine_conf.rx_direct): may the frame be a data frame
 * for this node on an idle input FIFO? A hint from the raw bytes (offsets of
 * docs/protocol.md: H0 dst at 16, kind and VC at 24), read before anything is
 * checked and trusted for nothing: a wrong answer costs a second decode, or
 * a copy the frame would have had anyway. It keeps forwarded frames and
 * link control off the direct path, which would decode them twice.
 */
static inline bool rx_direct_hint(const struct dnp_engine *e, unsigned dir, const uint8_t *f,
				  size_t len)
{
	unsigned kvf, kind;

	if (len < DNP_FRAME_OVERHEAD)
		return false;
	kvf = f[24];
	kind = kvf & 0x0fu;
	return (kind == DNP_PKT_PUT || kind == DNP_PKT_SEND || kind == DNP_PKT_GET_RESP) &&
	       f[16] == e->c.self.x && f[17] == e->c.self.y && f[18] == e->c.self.z &&
	       !e->in[dir][(kvf >> 4) & 3u].head;
}

/*
 * May h (decoded in place, checked) be delivered now from the caller's frame?
 * Only as the copying path would deliver it next: the expected frame of the
 * link, on an empty FIFO with room for it, routed to this node.
 */
static bool rx_direct_ok(struct dnp_engine *e, struct xlink *x, unsigned dir,
			 const struct dnp_pkt_hdr *h, uint32_t words)
{
	struct dnp_hop hop;

	return (h->kind == DNP_PKT_PUT || h->kind == DNP_PKT_SEND || h->kind == DNP_PKT_GET_RESP) &&
	       h->seq == dnp_link_ack_value(x->l) && !e->in[dir][h->vc].head &&
	       dnp_link_rx_occupancy(x->l, h->vc) + words <= e->c.link.fifo_words &&
	       dnp_link_rx_buf_room(x->l, h->vc, words) &&
	       dnp_route_step(&e->router, h->src, h->dst, h->via, dir, h->vc, &hop) == 0 &&
	       hop.dir == DNP_DIR_LOCAL;
}

/*
 * A data frame of link dir decoded in place into h (payload: in the caller's
 * frame). Delivered from there when rx_direct_ok allows and its delivery
 * need not wait: the link sees what the copying path does (ack, sequence,
 * the words accepted into the FIFO and released at once). Otherwise the
 * frame is copied as dnp_engine_rx does and decoded again from the copy; a
 * copy whose header differs from h (the peer rewrote the frame meanwhile)
 * is dropped as malformed (-EPROTO).
 */
static int rx_direct(struct dnp_engine *e, struct xlink *x, unsigned dir, const void *frame,
		     const struct dnp_pkt_hdr *h, const uint8_t *payload, size_t len, uint64_t now)
{
	uint32_t words = (uint32_t)(len / DNP_WORD_BYTES);
	struct dnp_pkt_hdr hbuf, *hc;
	const uint8_t *pl;

	if (rx_direct_ok(e, x, dir, h, words)) {
		int rc = engine_deliver(e, h, payload, NULL, now);

		if (rc != -EAGAIN && rc != DELIVER_FULL) {
			engine_ack_mark(x, now, false);
			(void)dnp_link_rx_seq(x->l, h->seq);
			(void)dnp_link_rx_accept(x->l, h->vc, words);
			dnp_link_rx_release(x->l, h->vc, words);
			e->wait[dir][h->vc].on = false;
			e->st.pkts_delivered++;
			e->st.rx_direct++;
			rx_unhold_all(e, x, dir);
			return 0;
		}
	}
	uint8_t *copy;
	struct pkt *p = rx_copy(e, frame, len, &copy);

	hc = p ? &p->h : &hbuf;
	/* decode memsets h first: equal headers compare equal, padding included */
	if (dnp_pkt_decode(copy, len, hc, &pl) < 0 || memcmp(hc, h, sizeof(*h)) != 0) {
		e->st.rx_malformed++;
		return rx_drop(e, p, -EPROTO);
	}
	return rx_data(e, x, dir, p, copy, hc, len, now);
}

/*
 * The link-level steps every frame takes before its kind matters: own link,
 * statistics, epoch, the peer's ack. Returns 0 to go on, or the frame's
 * result when it ends here (p dropped).
 */
static int rx_link(struct dnp_engine *e, struct xlink *x, unsigned dir, struct pkt *p,
		   const struct dnp_pkt_hdr *h, size_t len, uint64_t now)
{
	void *freed[64];
	unsigned n;
	int rc;

	if (!rx_on_own_link(e, dir, h)) {
		e->st.rx_wrong_link++;
		return rx_drop(e, p, -EXDEV);
	}
	dnp_link_stats_rx(x->l, (uint32_t)(len / DNP_WORD_BYTES));
	e->dirty = true;

	/* Epochs (link.h): frames but RESET frames must match the link's. */
	rc = dnp_link_rx_epoch(x->l, h->epoch, now);
	if (rc < 0)
		return rx_drop(e, p, rc);
	if (rc)
		link_transition(e, dir, (unsigned)rc, now);

	/* The peer's cumulative ack frees our unacked packets. */
	while ((n = dnp_link_on_ack(x->l, h->ack, freed, 64, now)) > 0) {
		for (unsigned i = 0; i < n; i++)
			engine_pkt_put(e, freed[i]);
		x->next_tx = x->next_tx > n ? x->next_tx - n : 0;
		if (n < 64)
			break;
	}
	return 0;
}

/*
 * dnp_engine_rx with conf.rx_direct, for a frame rx_direct_hint picked: 1
 * when it must take the copying path after all (nothing done yet), else
 * the frame's result.
 */
static int rx_try_direct(struct dnp_engine *e, struct xlink *x, unsigned dir, const void *frame,
			 size_t len, uint64_t now)
{
	struct dnp_pkt_hdr h;
	const uint8_t *payload;
	int rc;

	/* each header byte read once into h, the private copy every check looks at */
	if (dnp_pkt_decode(frame, len, &h, &payload) < 0 || (h.lflags & DNP_LINK_F_RESET) ||
	    h.kind == DNP_PKT_CREDIT || h.vc >= e->c.link.nvc)
		return 1; /* errors and link control: counted and handled on the copy */
	rc = rx_link(e, x, dir, NULL, &h, len, now);
	if (rc)
		return rc;
	return rx_direct(e, x, dir, frame, &h, payload, len, now);
}

int dnp_engine_rx(struct dnp_engine *e, unsigned dir, const void *frame, size_t len, uint64_t now)
{
	struct dnp_pkt_hdr hbuf, *h;
	const uint8_t *payload;

	if (dir >= DNP_NDIRS || !e->links[dir].l)
		return -ENODEV;
	struct xlink *x = &e->links[dir];
	if (dnp_link_state(x->l) == DNP_LINK_BROKEN && !dnp_link_recovers(x->l))
		return -ENOLINK;
	if (len > DNP_MAX_FRAME) {
		e->st.rx_malformed++;
		return -EMSGSIZE;
	}
	if (e->c.rx_direct && rx_direct_hint(e, dir, frame, len)) {
		int rd = rx_try_direct(e, x, dir, frame, len, now);

		if (rd <= 0)
			return rd;
	}
	/*
	 * The frame may sit in memory the peer can still write (shm links):
	 * copy it first, then decode and use only the copy. The copy goes
	 * into the packet buffer that will hold it, or, when no spare one is
	 * free, into e->rxcopy (rx_copy): a data frame within buffer credit
	 * takes a kept buffer once its VC is known (rx_keep).
	 */
	uint8_t *copy;
	struct pkt *p = rx_copy(e, frame, len, &copy);

	h = p ? &p->h : &hbuf; /* decoded where the packet keeps it: no second copy */
	int rc = dnp_pkt_decode(copy, len, h, &payload);
	if (rc < 0) {
		if (rc == -EILSEQ)
			e->st.rx_crc_errors++;
		else
			e->st.rx_malformed++;
		return rx_drop(e, p, rc);
	}
	if (h->lflags & DNP_LINK_F_RESET) /* the handshake (link.h) */
		return rx_reset(e, x, dir, p, copy, h, len, now);
	rc = rx_link(e, x, dir, p, h, len, now);
	if (rc)
		return rc;
	if (h->kind == DNP_PKT_CREDIT) {
		/* What the peer holds beyond a gap: resend only what it lacks. */
		(void)dnp_link_on_sack(x->l, h->ack, h->sack, now);
		dnp_link_on_credit(x->l, h->credit, now);
		return rx_drop(e, p, 0);
	}
	if (h->vc >= e->c.link.nvc) { /* a VC this link does not have: never indexes in[][] */
		e->st.rx_malformed++;
		return rx_drop(e, p, -ERANGE);
	}
	return rx_data(e, x, dir, p, copy, h, len, now);
}

/*
 * Burst receive (dnp_engine_rx_burst): what the fast frames of a burst
 * owe the link and the statistics, applied once by rx_burst_flush, the hop
 * of the last source/destination/route/VC routed in the burst, and the
 * delivery run (engine_rx8.h).
 */
struct rx_burst {
	unsigned ack_progress; /* dnp_link_ack_progress of ack; 0: no ack pending */
	uint32_t ack;
	bool mark; /* an ack is owed to the peer (engine_ack_mark) */
	bool hop_ok;
	struct dnp_coord src, dst;
	uint16_t via;
	uint8_t vc;
	uint8_t vcs;    /* bit per VC a fast frame passed: its delivery wait ends */
	uint32_t nfast; /* fast frames not yet counted in e->st */
	uint32_t self;  /* this node's coordinates as bytes 16-18 of a frame (H0 dst) */
	struct rx8_run run;
};

/* Applies what the burst's fast frames owe the link, as dnp_engine_rx would have. */
static void rx_burst_flush(struct dnp_engine *e, struct xlink *x, unsigned dir, struct rx_burst *b,
			   uint64_t now)
{
	void *freed[64];
	unsigned n;

	if (b->mark)
		engine_ack_mark(x, now, false);
	b->mark = false;
	if (b->ack_progress) {
		while ((n = dnp_link_on_ack(x->l, b->ack, freed, 64, now)) > 0) {
			for (unsigned i = 0; i < n; i++)
				engine_pkt_put(e, freed[i]);
			x->next_tx = x->next_tx > n ? x->next_tx - n : 0;
			if (n < 64)
				break;
		}
	}
	b->ack_progress = 0;
	b->hop_ok = false; /* the per-frame path may change the router */
	if (b->nfast) {
		e->st.pkts_delivered += b->nfast;
		e->st.rx_direct += b->nfast;
		e->st.rx_burst_fast += b->nfast;
		e->dirty = true;
		b->nfast = 0;
	}
	for (unsigned vc = 0; b->vcs; vc++, b->vcs >>= 1)
		if (b->vcs & 1u)
			e->wait[dir][vc].on = false;
	rx8_run_end(e, &b->run);
	rx8_run_drop(&b->run); /* the per-frame path may change what it caches */
}

/* rx_direct_ok, with the hop of the burst's last local frame remembered. */
static bool rx_burst_ok(struct dnp_engine *e, struct xlink *x, unsigned dir,
			const struct dnp_pkt_hdr *h, uint32_t words, struct rx_burst *b)
{
	struct dnp_hop hop;

	if (h->seq != dnp_link_ack_value(x->l) || e->in[dir][h->vc].head ||
	    dnp_link_rx_occupancy(x->l, h->vc) + words > e->c.link.fifo_words ||
	    !dnp_link_rx_buf_room(x->l, h->vc, words))
		return false;
	if (b->hop_ok && b->vc == h->vc && b->via == h->via && dnp_coord_eq(b->src, h->src) &&
	    dnp_coord_eq(b->dst, h->dst))
		return true;
	if (dnp_route_step(&e->router, h->src, h->dst, h->via, dir, h->vc, &hop) < 0 ||
	    hop.dir != DNP_DIR_LOCAL)
		return false;
	b->hop_ok = true;
	b->src = h->src;
	b->dst = h->dst;
	b->via = h->via;
	b->vc = h->vc;
	return true;
}

/*
 * rx_direct_hint for a burst: the destination's three bytes as one load
 * against b->self, the kind as a bit of a mask. The same hint, trusted for
 * nothing.
 */
static inline bool rx_burst_hint(const struct dnp_engine *e, unsigned dir, const uint8_t *f,
				 size_t len, const struct rx_burst *b)
{
	const unsigned kinds = 1u << DNP_PKT_PUT | 1u << DNP_PKT_SEND | 1u << DNP_PKT_GET_RESP;
	uint32_t dst;
	unsigned kvf;

	if (len < DNP_FRAME_OVERHEAD || len > DNP_MAX_FRAME)
		return false;
	memcpy(&dst, f + 16, 4);
	kvf = f[24];
	return ((le32toh(dst) ^ b->self) & 0xffffffu) == 0 && ((kinds >> (kvf & 0x0fu)) & 1u) &&
	       !e->in[dir][(kvf >> 4) & 3u].head;
}

/*
 * One frame of a burst on the fast path: 1 when it must take dnp_engine_rx
 * (nothing done yet), else its result. Only an in-sequence PUT, SEND or GET
 * response for this node, of link dir in its current epoch, on an idle
 * input FIFO, whose delivery need not wait, is taken here; its checks are
 * those of dnp_engine_rx (decode with CRC and rules, own link, epoch, VC,
 * FIFO and buffer room, route, then the delivery's key and range checks).
 * A single-packet PUT the delivery run covers is delivered there
 * (engine_deliver_run), anything else by engine_deliver.
 */
static int rx_burst_one(struct dnp_engine *e, struct xlink *x, unsigned dir, const uint8_t *frame,
			size_t len, struct rx_burst *b, uint64_t now)
{
	uint32_t words = (uint32_t)(len / DNP_WORD_BYTES);
	struct dnp_pkt_hdr h;
	const uint8_t *payload;
	unsigned progress;
	int rc;

	if (!rx_burst_hint(e, dir, frame, len, b))
		return 1;
	/* each header byte read once into h, the private copy every check looks at */
	if (dnp_pkt_decode(frame, len, &h, &payload) < 0 || (h.lflags & DNP_LINK_F_RESET) ||
	    (h.kind != DNP_PKT_PUT && h.kind != DNP_PKT_SEND && h.kind != DNP_PKT_GET_RESP) ||
	    h.vc >= e->c.link.nvc || !rx_on_own_link(e, dir, &h) ||
	    !dnp_link_epoch_ok(x->l, h.epoch) || !rx_burst_ok(e, x, dir, &h, words, b))
		return 1; /* errors, control, gaps, forwards: counted and handled per frame */
	rc = engine_deliver_run(e, &h, payload, &b->run, now);
	if (rc == DELIVER_SLOW) {
		rx8_run_drop(&b->run); /* engine_deliver may change what the run caches */
		rc = engine_deliver(e, &h, payload, NULL, now);
		if ((rc == -EAGAIN || rc == DELIVER_FULL) && b->ack_progress) {
			/* frame by frame, the acks before it would have freed buffers first */
			rx_burst_flush(e, x, dir, b, now);
			rc = engine_deliver(e, &h, payload, NULL, now);
		}
		if (rc == -EAGAIN || rc == DELIVER_FULL)
			return 1; /* must wait: queued on the copying path */
	}
	dnp_link_stats_rx(x->l, words);
	progress = dnp_link_ack_progress(x->l, h.ack);
	if (progress > b->ack_progress) {
		b->ack_progress = progress;
		b->ack = h.ack;
	}
	b->mark = true;
	(void)dnp_link_rx_pass(x->l, h.vc, h.seq, words);
	b->vcs |= (uint8_t)(1u << h.vc);
	b->nfast++;
	rx_unhold_all(e, x, dir);
	return 0;
}

unsigned dnp_engine_rx_burst(struct dnp_engine *e, unsigned dir, const struct dnp_frame *f,
			     unsigned n, int *rc, uint64_t now)
{
	struct rx_burst b = { 0 };
	unsigned dropped = 0;
	struct xlink *x;

	if (dir >= DNP_NDIRS || !e->links[dir].l) {
		for (unsigned i = 0; rc && i < n; i++)
			rc[i] = -ENODEV;
		return n;
	}
	x = &e->links[dir];
	b.self = (uint32_t)e->c.self.x | (uint32_t)e->c.self.y << 8 | (uint32_t)e->c.self.z << 16;
	for (unsigned i = 0; i < n; i++) {
		int r = e->c.rx_direct ? rx_burst_one(e, x, dir, f[i].data, f[i].len, &b, now) : 1;

		if (r > 0) {
			rx_burst_flush(e, x, dir, &b, now);
			r = dnp_engine_rx(e, dir, f[i].data, f[i].len, now);
		}
		if (r < 0)
			dropped++;
		if (rc)
			rc[i] = r;
	}
	rx_burst_flush(e, x, dir, &b, now);
	return dropped;
}
