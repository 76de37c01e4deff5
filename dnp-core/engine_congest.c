/* SPDX-License-Identifier: MIT */
/*
 * engine_congest.c — congestion management (congestion ecn): the window per
 * destination node that gates the start of PUTs and SENDs, the choice of the
 * command that may start in an injection queue, and what a report (marked or
 * not) does to a window. Marking is engine_cg_mark (engine_priv.h), called
 * where a packet takes a link; the echo rides on the CMPL frame
 * (engine_cmpl.c). Contract: engine_priv.h, "congestion management";
 * docs/protocol.md, "Congestion marks".
 */
#include "engine_priv.h"

/* Commands of an injection queue looked at for one that may start. */
#define CG_SCAN 16u
/* A destination's first window (packets), at most the ceiling. */
#define CG_WND_START 8u

const char *dnp_congestion_name(unsigned mode)
{
	switch (mode) {
	case DNP_CONGESTION_OFF:
		return "off";
	case DNP_CONGESTION_ECN:
		return "ecn";
	default:
		return NULL;
	}
}

int dnp_congestion_parse(const char *name)
{
	if (!name)
		return -EINVAL;
	if (!strcmp(name, "off"))
		return DNP_CONGESTION_OFF;
	if (!strcmp(name, "ecn"))
		return DNP_CONGESTION_ECN;
	return -EINVAL;
}

int engine_cg_create(struct dnp_engine *e)
{
	const struct dnp_engine_conf *c = &e->c;
	uint32_t n = dnp_torus_size(&c->torus);

	if (c->congestion == DNP_CONGESTION_OFF)
		return 0;
	if (c->congestion != DNP_CONGESTION_ECN || c->cg_window > 65536)
		return -EINVAL;
	e->cg_thresh = c->cg_threshold ? c->cg_threshold : c->link.t_red / 4;
	if (!e->cg_thresh)
		e->cg_thresh = 1;
	e->cg_max = c->cg_window ? c->cg_window : 64;
	e->cg = calloc(n, sizeof(*e->cg));
	if (!e->cg)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		e->cg[i].wnd = e->cg_max < CG_WND_START ? e->cg_max : CG_WND_START;
	return 0;
}

/* Packets of a PUT or SEND of len bytes (a zero-length one is one packet). */
static uint32_t cg_packets(uint64_t len)
{
	uint64_t n = len ? (len + DNP_MAX_PAYLOAD - 1) / DNP_MAX_PAYLOAD : 1;

	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* Does the window of s's destination decide whether s may start now? */
static bool cg_gated(const struct slot *s, unsigned qi)
{
	return qi != DNP_DIR_LOCAL && !s->cg_on && s->offset == 0 && !s->orphan &&
	       (s->c.op == DNP_OP_PUT || s->c.op == DNP_OP_SEND);
}

/* The window entry of s's destination. */
static struct cgdst *cg_of(struct dnp_engine *e, const struct slot *s)
{
	return &e->cg[dnp_torus_id(&e->c.torus, s->dst)];
}

/* s starts: its packets count against its destination's window. */
static void cg_start(struct dnp_engine *e, struct slot *s)
{
	struct cgdst *d = cg_of(e, s);

	s->cg_on = 1;
	s->cg_pkts = cg_packets(s->c.len);
	s->cg_seq = d->seq++;
	d->inflight =
		d->inflight + s->cg_pkts < d->inflight ? UINT32_MAX : d->inflight + s->cg_pkts;
}

/* Moves slot i (after prev in queue qi of class tc) to the head of the queue. */
static void cg_to_head(struct dnp_engine *e, unsigned qi, unsigned tc, uint32_t prev, uint32_t i)
{
	struct slot *s = &e->slots[i];

	e->slots[prev].next = s->next;
	if (e->qtail[qi][tc] == i)
		e->qtail[qi][tc] = prev;
	s->next = e->qhead[qi][tc];
	e->qhead[qi][tc] = i;
}

bool engine_cg_pick(struct dnp_engine *e, unsigned qi, unsigned tc)
{
	uint32_t held[CG_SCAN], nheld = 0, prev = NO_SLOT;
	uint32_t i = e->qhead[qi][tc];

	for (unsigned k = 0; i != NO_SLOT && k < CG_SCAN; k++) {
		struct slot *s = &e->slots[i];
		uint32_t id = dnp_torus_id(&e->c.torus, s->dst);
		bool behind = false; /* an older held command goes to the same node */

		for (uint32_t j = 0; j < nheld; j++)
			behind |= held[j] == id;
		if (!behind && (!cg_gated(s, qi) || e->cg[id].inflight < e->cg[id].wnd)) {
			if (cg_gated(s, qi))
				cg_start(e, s);
			if (prev != NO_SLOT) {
				cg_to_head(e, qi, tc, prev, i);
				e->st.cg_bypassed++;
			}
			return true;
		}
		if (!s->cg_held) {
			s->cg_held = 1;
			e->st.cg_held++;
		}
		held[nheld++] = id;
		prev = i;
		i = s->next;
	}
	return false;
}

void engine_cg_done(struct dnp_engine *e, struct slot *s, int status)
{
	struct cgdst *d = cg_of(e, s);

	s->cg_on = 0;
	d->inflight -= s->cg_pkts < d->inflight ? s->cg_pkts : d->inflight;
	if (status)
		return; /* an error says nothing of the path's load */
	if (!e->cg_rx_ce) {
		d->wnd = d->wnd + s->cg_pkts < e->cg_max && d->wnd + s->cg_pkts > d->wnd ?
				 d->wnd + s->cg_pkts :
				 e->cg_max;
		return;
	}
	e->st.cg_echoes++;
	if ((int32_t)(s->cg_seq - d->seq_cut) < 0)
		return; /* started before the last halving: that one answered it */
	d->wnd = d->wnd > 1 ? d->wnd / 2 : 1;
	d->seq_cut = d->seq;
	e->st.cg_cuts++;
}
