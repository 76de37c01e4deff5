/* SPDX-License-Identifier: MIT */
/*
 * engine_route.c — the switch and routing state: input FIFO heads move to
 * their next link or are delivered here; cable states are learnt, adopted
 * and announced in ROUTE packets (docs/routing.md). Contract: engine_priv.h,
 * "routing".
 */
#include "engine_priv.h"

/*
 * The route plan for a packet of this node's to dst: 0 (direct) when none
 * avoids the known faults, so that its link refuses it as before.
 */
uint16_t engine_via_for(struct dnp_engine *e, struct dnp_coord dst)
{
	uint16_t via;

	if (!e->router.n_faults)
		return 0; /* no known fault: every plan is direct (dnp_route_plan) */
	return dnp_route_plan(&e->router, dst, &via) < 0 ? 0 : via;
}

/*
 * Valiant routing (route.h, dnp_route_valiant): a message of one packet
 * (a GET request, or at most the lowest class's largest payload) takes the
 * intermediate node its message id hashes to; a longer one the node its
 * source and destination hash to (key 0), so that the multi-packet
 * messages of one source to one target share one path and stay in order
 * (docs/routing.md, "Valiant routing"). In another mode: DOR's plan.
 */
int engine_plan_msg(struct dnp_engine *e, const struct slot *s, uint16_t *via)
{
	bool one = s->c.op == DNP_OP_GET || s->c.len <= engine_seg_max(e, 0);

	if (e->router.routing != DNP_ROUTING_VALIANT)
		return dnp_route_plan(&e->router, s->dst, via);
	return dnp_route_valiant(&e->router, s->dst, one ? s->msg_id : 0, via);
}

/*
 * dnp_route_step(router, self, dst, via, DNP_DIR_LOCAL, 0, hop) for a packet
 * that starts at this node, remembered while the router is unchanged.
 */
int engine_local_hop(struct dnp_engine *e, struct dnp_coord dst, uint16_t via, struct dnp_hop *hop)
{
	if (!dnp_torus_contains(&e->c.torus, dst))
		return dnp_route_step(&e->router, e->c.self, dst, via, DNP_DIR_LOCAL, 0, hop);
	uint32_t id = dnp_torus_id(&e->c.torus, dst);
	struct hopc *c = &e->hopc[id & (HOPC - 1)];

	if (c->ver == e->router.ver && c->dst_id == id && c->via == via) {
		*hop = c->hop;
		return 0;
	}
	int rc = dnp_route_step(&e->router, e->c.self, dst, via, DNP_DIR_LOCAL, 0, hop);
	if (rc == 0)
		*c = (struct hopc){ .ver = e->router.ver, .dst_id = id, .via = via, .hop = *hop };
	return rc;
}

/* Bits of the links this node has. */
static uint8_t links_mask(const struct dnp_engine *e)
{
	uint8_t m = 0;

	for (unsigned d = 0; d < DNP_NDIRS; d++)
		if (e->links[d].l)
			m |= (uint8_t)(1u << d);
	return m;
}

static struct cable *cable_find(struct dnp_engine *e, uint32_t node, unsigned dim)
{
	for (uint32_t i = 0; i < e->ncables; i++)
		if (e->cables[i].node == node && e->cables[i].dim == dim)
			return &e->cables[i];
	return NULL;
}

/* A new entry (state up, version 0), or NULL when the table is full. */
static struct cable *cable_new(struct dnp_engine *e, uint32_t node, unsigned dim)
{
	if (e->ncables == CABLES) {
		e->st.route_overflow++;
		return NULL;
	}
	struct cable *c = &e->cables[e->ncables++];
	*c = (struct cable){ .node = node, .dim = (uint8_t)dim };
	return c;
}

/* Adopts a state: the router learns it, and every link is to be told. */
static void cable_set(struct dnp_engine *e, struct cable *c, uint8_t state, uint16_t ver)
{
	c->state = state;
	c->ver = ver;
	c->pend = links_mask(e);
	if (dnp_route_set_cable(&e->router, dnp_torus_coord(&e->c.torus, c->node), 2u * c->dim,
				state) < 0)
		e->st.route_overflow++;
	e->st.route_changes++;
	e->dirty = true;
}

/* The cable behind own link dir: the + link of self, or of the - neighbour. */
static uint32_t cable_node(const struct dnp_engine *e, unsigned dir)
{
	if (!(dir & 1u))
		return e->self_id;
	return dnp_torus_id(&e->c.torus,
			    dnp_torus_neighbour(&e->c.torus, e->c.self, (enum dnp_dir)dir));
}

/* What this node says of the cable behind own link dir. */
static uint8_t own_state(const struct dnp_engine *e, unsigned dir, bool down)
{
	if (down)
		return DNP_CABLE_BROKEN;
	return e->sick[dir].avoid ? DNP_CABLE_SICK : DNP_CABLE_OK;
}

void engine_cable_local(struct dnp_engine *e, unsigned dir, bool down)
{
	uint32_t node = cable_node(e, dir);
	struct cable *c = cable_find(e, node, dir / 2);
	uint8_t state = own_state(e, dir, down);

	if (!c && state == DNP_CABLE_OK)
		return; /* never known broken or sick: nothing to tell */
	if (!c && !(c = cable_new(e, node, dir / 2)))
		return;
	if (c->state != state || !c->ver)
		cable_set(e, c, state, (uint16_t)(c->ver + 1));
}

int dnp_engine_link_sick(struct dnp_engine *e, unsigned dir, bool sick, uint64_t now)
{
	struct sickness *k;
	uint8_t bit = (uint8_t)(1u << dir);

	if (dir >= DNP_NDIRS || !e->links[dir].l)
		return -EINVAL;
	k = &e->sick[dir];
	if (k->sick == sick)
		return 0;
	k->sick = sick;
	if (!sick) { /* let go after the hold (at once without one) */
		k->release_at = now + k->mult * e->c.sick_hold;
		e->sick_held |= bit;
		engine_sick_release(e, now);
		return 0;
	}
	e->sick_held &= (uint8_t)~bit;
	if (k->avoid)
		return 0; /* sick again within its hold: still avoided */
	if (k->released && now - k->released_at < SICK_MULT_MAX * e->c.sick_hold)
		k->mult = (uint8_t)(k->mult * 2 > SICK_MULT_MAX ? SICK_MULT_MAX : k->mult * 2);
	else
		k->mult = 1;
	k->avoid = true;
	e->st.sick_avoided++;
	engine_cable_local(e, dir, !engine_link_usable(e, dir));
	return 0;
}

void engine_sick_release(struct dnp_engine *e, uint64_t now)
{
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		struct sickness *k = &e->sick[d];

		if (!(e->sick_held & (1u << d)) || now < k->release_at)
			continue;
		e->sick_held &= (uint8_t) ~(1u << d);
		k->avoid = false;
		k->released = true;
		k->released_at = now;
		engine_cable_local(e, d, !engine_link_usable(e, d));
	}
}

/* Whether the cable (node, dim) is own link dir, for some dir (set in *dir). */
static bool cable_is_own(const struct dnp_engine *e, uint32_t node, unsigned dim, unsigned *dir)
{
	for (unsigned d = 2 * dim; d < 2 * dim + 2; d++)
		if (e->links[d].l && cable_node(e, d) == node) {
			*dir = d;
			return true;
		}
	return false;
}

/*
 * A neighbour's ROUTE packet: entries of node u32, dim u8, state u8 (enum
 * dnp_cable_state), ver u16. A newer state is adopted (and passed on); a
 * report on one of this node's own cables that contradicts its link is
 * answered with a newer version of the truth, so stale reports die out. A
 * SICK report on an own cable whose link works is not a contradiction: the
 * far end judged the frames it receives.
 */
void engine_route_take(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload)
{
	uint32_t size = dnp_torus_size(&e->c.torus);

	if (h->len % ROUTE_ENTRY || h->len > ROUTE_ENTRY * ROUTE_MAX_ENTRIES) {
		e->st.rx_malformed++;
		return;
	}
	e->st.route_rx++;
	for (unsigned i = 0; i < h->len / ROUTE_ENTRY; i++) {
		const uint8_t *b = payload + i * ROUTE_ENTRY;
		uint32_t node = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
				(uint32_t)b[3] << 24;
		unsigned dim = b[4], state = b[5], own_dir;
		uint16_t ver = (uint16_t)(b[6] | b[7] << 8);

		if (node >= size || dim > 2 || state > DNP_CABLE_SICK) {
			e->st.rx_malformed++;
			return;
		}
		struct cable *c = cable_find(e, node, dim);
		bool newer = !c || (int16_t)(ver - c->ver) > 0;

		if (cable_is_own(e, node, dim, &own_dir)) {
			uint8_t truth = own_state(e, own_dir, !engine_link_usable(e, own_dir));
			/* the far end may see errors this end cannot: its SICK stands */
			bool agree = state == truth ||
				     (state == DNP_CABLE_SICK && truth == DNP_CABLE_OK);

			if (!c && !(c = cable_new(e, node, dim)))
				continue;
			if (!agree && (newer || ver == c->ver))
				cable_set(e, c, truth, (uint16_t)((newer ? ver : c->ver) + 1));
			else if (newer)
				cable_set(e, c, (uint8_t)state, ver);
			continue;
		}
		if (!newer)
			continue;
		if (!c && state == DNP_CABLE_OK)
			continue; /* an unknown cable that is fine: nothing to learn */
		if (!c && !(c = cable_new(e, node, dim)))
			continue;
		cable_set(e, c, (uint8_t)state, ver);
	}
}

/* Tells each UP link the cable states it has not heard yet, in ROUTE packets. */
void engine_route_announce(struct dnp_engine *e, uint64_t now)
{
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		struct xlink *x = &e->links[d];
		uint8_t bit = (uint8_t)(1u << d);
		uint8_t buf[ROUTE_ENTRY * ROUTE_MAX_ENTRIES];

		if (!x->l || dnp_link_state(x->l) != DNP_LINK_UP)
			continue;
		for (;;) {
			unsigned n = 0;

			for (uint32_t i = 0; i < e->ncables && n < ROUTE_MAX_ENTRIES; i++) {
				const struct cable *c = &e->cables[i];

				if (!(c->pend & bit))
					continue;
				uint8_t *b = buf + n++ * ROUTE_ENTRY;
				b[0] = (uint8_t)c->node;
				b[1] = (uint8_t)(c->node >> 8);
				b[2] = (uint8_t)(c->node >> 16);
				b[3] = (uint8_t)(c->node >> 24);
				b[4] = c->dim;
				b[5] = c->state;
				b[6] = (uint8_t)c->ver;
				b[7] = (uint8_t)(c->ver >> 8);
			}
			if (!n)
				break;
			struct pkt *p =
				engine_pkt_get(e, (uint32_t)dnp_pkt_frame_len(n * ROUTE_ENTRY));
			if (!p)
				return; /* no buffer: told later */
			struct dnp_coord nb =
				dnp_torus_neighbour(&e->c.torus, e->c.self, (enum dnp_dir)d);
			struct dnp_pkt_hdr h = {
				.lflags = DNP_LINK_F_SEQ,
				.dst = nb,
				.src = e->c.self,
				.kind = DNP_PKT_ROUTE,
				.flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST,
				.len = (uint16_t)(n * ROUTE_ENTRY),
				.msg_len = n * ROUTE_ENTRY,
				.timestamp = (uint32_t)now,
			};
			int len = dnp_pkt_encode(&h, buf, p->frame, DNP_MAX_FRAME);
			if (len < 0) {
				engine_pkt_put(e, p);
				return;
			}
			p->h = h;
			engine_local_push(e, p, (uint32_t)len);
			e->st.route_tx++;
			/* those entries are on their way */
			for (uint32_t i = 0, k = 0; i < e->ncables && k < n; i++)
				if (e->cables[i].pend & bit) {
					e->cables[i].pend &= (uint8_t)~bit;
					k++;
				}
		}
	}
}

/* Words left the RX FIFO of link input 'in': the peer may be waiting to hear it. */
static void in_release(struct dnp_engine *e, unsigned in, unsigned vc, uint32_t words)
{
	e->wait[in][vc].on = false; /* the head moved */
	if (in >= DNP_NDIRS)
		return;
	dnp_link_rx_release(e->links[in].l, vc, words);
	engine_ack_mark(&e->links[in], e->now, false);
}

/*
 * Adaptive routing (route.h): a single-packet message without a via may
 * take a productive direction on an adaptive VC, the one with the most
 * credit left (ties: the first direction, then the lower VC, so the lab
 * stays deterministic). Returns true with *hop set when one can start now;
 * false leaves the escape hop to the caller. Multi-packet messages keep to
 * the escape network, so their packets stay in order (docs/routing.md,
 * "Ordering").
 */
static bool adaptive_hop(struct dnp_engine *e, const struct pkt *p, struct dnp_hop *hop)
{
	const unsigned whole = DNP_PKT_F_FIRST | DNP_PKT_F_LAST;
	uint8_t dirs[DNP_ROUTE_MAX_PRODUCTIVE];
	uint32_t t_red = e->c.link.t_red, best_room = 0;
	struct dnp_hop best = { 0 };

	if ((p->h.flags & whole) != whole || p->h.via)
		return false;
	unsigned n = dnp_route_adaptive(&e->router, p->h.dst, dirs);
	for (unsigned i = 0; i < n; i++) {
		const struct dnp_link *l = e->links[dirs[i]].l;

		if (!l || !engine_link_usable(e, dirs[i]) || dnp_link_state(l) != DNP_LINK_UP ||
		    dnp_link_window_full(l) || !engine_out_free(e, dirs[i]))
			continue;
		for (unsigned vc = DNP_ROUTE_ADAPT_VC; vc < e->c.link.nvc; vc++) {
			uint32_t est = dnp_link_estimate(l, vc);
			uint32_t room = est + p->words <= t_red ? t_red - est : 0;

			if (room > best_room) {
				best_room = room;
				best = (struct dnp_hop){ .dir = dirs[i], .vc = (uint8_t)vc };
			}
		}
	}
	if (!best_room || !engine_can_start(e, e->links[best.dir].l, best.vc, p->tc, p->words))
		return false;
	*hop = best;
	return true;
}

/*
 * Takes p off input FIFO (in, vc): the head, or with arbitration on the
 * packet after prev (a higher class passing lower ones), and gives its
 * words back to the FIFO.
 */
static inline __attribute__((always_inline)) void in_take(struct dnp_engine *e, unsigned in,
							  unsigned vc, struct pkt *prev,
							  struct pkt *p)
{
	struct pktq *q = &e->in[in][vc];

	if (!prev) {
		engine_q_pop(q);
	} else {
		prev->next = p->next;
		if (q->tail == p)
			q->tail = prev;
		q->n--;
		p->next = NULL;
	}
	in_release(e, in, vc, p->words);
	if (e->c.arbitration && !--e->in_tc[in][vc][p->tc])
		e->tc_mask[p->tc] &= ~(1u << (in * DNP_MAX_VC + vc));
}

/*
 * Tries to move the packet after prev in input (dir, vc) (prev NULL: the
 * head). Returns true on progress.
 */
static bool route_at(struct dnp_engine *e, unsigned in, unsigned vc, struct pkt *prev, uint64_t now)
{
	struct pktq *q = &e->in[in][vc];
	struct pkt *p = prev ? prev->next : q->head;
	struct dnp_hop hop;

	if (!p)
		return false;
	/* a packet made here (a report, DIAG, ROUTE) starts like a command */
	int rrc = in == DNP_DIR_LOCAL && vc == 0 && engine_coord_self(e, p->h.src) ?
			  engine_local_hop(e, p->h.dst, p->h.via, &hop) :
			  dnp_route_step(&e->router, p->h.src, p->h.dst, p->h.via, in, vc, &hop);
	if (rrc < 0) {
		in_take(e, in, vc, prev, p);
		e->st.rx_misrouted++;
		engine_drop_unroutable(e, p, -EHOSTUNREACH, now);
		return true;
	}
	if (hop.dir == DNP_DIR_LOCAL) {
		const uint8_t *payload = p->frame + DNP_PAYLOAD_OFF;
		int rc = engine_deliver(e, &p->h, payload, p, now);
		if (rc == -EAGAIN)
			return false;
		if (rc == DELIVER_FULL) {
			if (!engine_full_wait_over(e, &e->wait[in][vc], p->h.dst_port, now))
				return false;
			engine_deliver_give_up(e, &p->h, now);
		}
		in_take(e, in, vc, prev, p);
		e->st.pkts_delivered++;
		if (rc == DELIVER_KEPT)
			engine_q_push(&e->resp[p->job_q], p);
		else
			engine_pkt_put(e, p);
		return true;
	}
	if (!engine_link_usable(e, hop.dir)) {
		in_take(e, in, vc, prev, p);
		engine_drop_unroutable(e, p, -ENOLINK, now);
		return true;
	}
	struct xlink *x = &e->links[hop.dir];
	/* Nothing is queued on a link before it is UP: going UP restarts its counters. */
	if (e->router.routing == DNP_ROUTING_ADAPTIVE && adaptive_hop(e, p, &hop))
		e->st.adaptive_hops++;
	else if (dnp_link_state(x->l) != DNP_LINK_UP || dnp_link_window_full(x->l) ||
		 !engine_out_free(e, hop.dir) ||
		 !engine_can_start(e, x->l, hop.vc, p->tc, p->words))
		return false;
	in_take(e, in, vc, prev, p);
	if (in < DNP_NDIRS)
		e->st.pkts_forwarded++;
	p->hops_tx = (uint8_t)(p->h.hops + 1);
	engine_link_enqueue(e, hop.dir, hop.vc, p, now);
	return true;
}

/*
 * Visits the inputs round-robin, starting one further each call; only the
 * FIFOs in in_mask can hold a packet (an empty one is skipped, as
 * route_one would do nothing with it).
 */
bool engine_route_inputs(struct dnp_engine *e, uint64_t now)
{
	bool progress = false;
	unsigned in = e->rr;

	for (unsigned k = 0; k < NIN && e->in_mask; k++, in = in + 1 == NIN ? 0 : in + 1) {
		uint32_t bits = (e->in_mask >> (in * DNP_MAX_VC)) & ((1u << DNP_MAX_VC) - 1u);

		for (unsigned vc = 0; bits && vc < e->c.link.nvc; vc++, bits >>= 1) {
			if (!(bits & 1u))
				continue;
			while (route_at(e, in, vc, NULL, now))
				progress = true;
			if (!e->in[in][vc].head)
				e->in_mask &= ~(1u << (in * DNP_MAX_VC + vc));
		}
	}
	e->rr = (uint8_t)(e->rr + 1 == NIN ? 0 : e->rr + 1);
	return progress;
}

bool engine_top_conf_ok(const struct dnp_engine_conf *c)
{
	uint32_t pay = c->arb_low_payload ? c->arb_low_payload : DNP_MAX_PAYLOAD;

	if (!c->arbitration)
		return !c->arb_low_payload && !c->arb_top_reserve;
	if (pay < DNP_WORD_BYTES || pay > DNP_MAX_PAYLOAD || pay % DNP_WORD_BYTES)
		return false;
	/* the largest low-class frame must still fit under T_RED beside the reserve */
	return (uint64_t)dnp_pkt_frame_len(pay) / DNP_WORD_BYTES + c->arb_top_reserve <=
	       (c->link.t_red ? c->link.t_red : c->link.fifo_words);
}

/* ------------------------------------------------------------ class arbiter */
/*
 * Arbitration on (docs/routing.md, "Traffic classes and virtual channels"):
 * the candidates of a class are the input FIFOs holding packets of it
 * (bits 0..27 of a candidate mask: in * DNP_MAX_VC + vc) and the injection
 * queues with work of it (bits 32..38: 32 + queue). Each grant moves one
 * packet; the arbiter (arb.h) says which class goes next among those with a
 * candidate not yet found blocked in this round. Within a class the
 * candidates take turns (arb_rr), and within a FIFO the first packet of the
 * class goes, so packets of one class keep their order.
 */
#define CAND_INJ 32u
#define ARB_GRANTS_MAX 1024u /* grants per engine_arb_round */

static uint64_t class_cands(const struct dnp_engine *e, unsigned tc)
{
	uint64_t m = e->tc_mask[tc];

	for (unsigned qi = 0; qi < NIN; qi++)
		if (engine_inj_has(e, qi, tc))
			m |= 1ull << (CAND_INJ + qi);
	return m;
}

/* One packet of class tc from candidate bit b; true when it left. */
static bool arb_try(struct dnp_engine *e, unsigned tc, unsigned b, uint64_t now)
{
	if (b >= CAND_INJ)
		return engine_inject_class(e, b - CAND_INJ, tc, now);
	unsigned in = b / DNP_MAX_VC, vc = b % DNP_MAX_VC;
	struct pkt *prev = NULL, *p = e->in[in][vc].head;

	while (p && p->tc != tc)
		prev = p, p = p->next;
	if (!p) /* (the mask says there is one) */
		return false;
	bool moved = route_at(e, in, vc, prev, now);
	if (!e->in[in][vc].head)
		e->in_mask &= ~(1u << b);
	return moved;
}

/*
 * Serves class tc: its input FIFOs in turn from arb_rr, then its injection
 * queues (packets already in the network go first, as the round-robin
 * switch runs before injection); blocked candidates are marked in *blk.
 */
static bool arb_serve(struct dnp_engine *e, unsigned tc, uint64_t *blk, uint64_t now)
{
	uint64_t cand = class_cands(e, tc) & ~*blk;
	const unsigned nf = NIN * DNP_MAX_VC;

	for (unsigned k = 0, b = e->arb_rr[tc] % nf; (cand & ((1ull << nf) - 1)) && k < nf;
	     k++, b = b + 1 == nf ? 0 : b + 1) {
		if (!(cand >> b & 1u))
			continue;
		if (arb_try(e, tc, b, now)) {
			e->arb_rr[tc] = (uint8_t)(b + 1 == nf ? 0 : b + 1);
			return true;
		}
		*blk |= 1ull << b;
		cand &= ~(1ull << b);
	}
	for (unsigned qi = 0; qi < NIN; qi++) {
		unsigned b = CAND_INJ + qi;

		if (!(cand >> b & 1u))
			continue;
		if (arb_try(e, tc, b, now))
			return true;
		*blk |= 1ull << b;
	}
	return false;
}

bool engine_arb_round(struct dnp_engine *e, uint64_t now)
{
	uint64_t blk[DNP_ARB_CLASSES] = { 0 };
	bool progress = false;

	/* bounded like the round-robin switch's pass: the run loop comes back */
	for (unsigned grants = 0; grants < ARB_GRANTS_MAX;) {
		unsigned avail = 0;

		for (unsigned tc = 0; tc < DNP_ARB_CLASSES; tc++)
			if (class_cands(e, tc) & ~blk[tc])
				avail |= 1u << tc;
		int tc = dnp_arb_pick(&e->arb, avail);
		if (tc < 0)
			break;
		if (arb_serve(e, (unsigned)tc, &blk[tc], now)) {
			dnp_arb_grant(&e->arb, (unsigned)tc, avail);
			progress = true;
			grants++;
		}
	}
	return progress;
}
