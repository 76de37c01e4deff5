/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sup.h"

/* Group side: what was last forwarded to the top about a node of the group. */
struct sup_gnode {
	struct dnp_svc_agg_rec fwd;
	bool sent, dirty;
};
#define SUP_AGG_ALARMS 1024u /* alarms kept for the top until it acknowledges them */

/* Top side: a group supervisor, by its first node. */
struct sup_grp {
	bool heard, silent;
	uint32_t count, incarnation, seq, next_alarm;
	uint64_t last_ms, aggs;
};

struct dnp_sup {
	struct dnp_sup_conf c;
	uint32_t n;
	struct dnp_sup_node *nodes;
	struct dnp_sup_event *log;
	uint64_t nlog;
	uint64_t msgs, alarms, bad;
	uint64_t last_call_ms; /* time of the previous on_msg or tick */
	/*
	 * No report turns stale before this (a lower bound): until then a tick
	 * has nothing to re-derive, every report having been derived on arrival.
	 */
	uint64_t next_expiry;
	uint64_t stalls, stalled_ms;
	int64_t wall_off; /* wall clock - the caller's monotonic clock, ms: stamps only */
	/* The last rendering served in pages (dnp_sup_on_status). */
	char *page;
	size_t page_len;
	uint32_t page_snap, page_flags;
	/* A group supervisor's side of the hierarchy (c.group_count > 0). */
	struct sup_gnode *gn;
	struct dnp_svc_agg_alarm *aq; /* alarm id k at aq[(k - 1) % SUP_AGG_ALARMS] */
	uint32_t aq_next, aq_acked, aq_sent;
	uint64_t aq_dropped, aq_queued;
	uint32_t agg_seq;
	/* The top's side: groups heard, indexed by first node (allocated at the first AGG). */
	struct sup_grp *grp;
};

static const char *const dir_names[DNP_LFM_NDIRS] = { "X+", "X-", "Y+", "Y-", "Z+", "Z-" };
static const char *const sensor_names[DNP_LFM_NSENSORS] = { "temp", "volt", "power" };
static const char *const hdev_names[DNP_LFM_NHDEV] = { "memory", "svcnet", "cpu", "thermal" };
static const char *const link_names[4] = { "none", "ok", "sick", "broken" };
static const char *const level_names[4] = { "normal", "warning", "alarm", "?" };

const char *dnp_sup_host_name(unsigned h)
{
	static const char *const n[] = { "unknown", "ok", "warning", "faulty", "silent", "dead" };
	return h < 6 ? n[h] : "?";
}

const char *dnp_sup_dnp_name(unsigned d)
{
	static const char *const n[] = { "unknown", "ok", "faulty", "dead" };
	return d < 4 ? n[d] : "?";
}

const char *dnp_sup_path_name(unsigned p)
{
	static const char *const n[] = { "none", "service", "relay", "inference", "silence" };
	return p < 5 ? n[p] : "?";
}

int dnp_sup_create(const struct dnp_sup_conf *c, uint64_t now_ms, struct dnp_sup **out)
{
	struct dnp_sup *s;

	if (!c || !c->silence_ms || !dnp_torus_size(&c->torus))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->c = *c;
	s->last_call_ms = now_ms;
	s->n = dnp_torus_size(&c->torus);
	s->nodes = calloc(s->n, sizeof(*s->nodes));
	s->log = calloc(DNP_SUP_LOG, sizeof(*s->log));
	if (c->group_count) {
		if ((uint64_t)c->group_first + c->group_count > s->n || !c->group_incarnation) {
			dnp_sup_destroy(s);
			return -EINVAL;
		}
		s->gn = calloc(c->group_count, sizeof(*s->gn));
		s->aq = calloc(SUP_AGG_ALARMS, sizeof(*s->aq));
		s->aq_next = 1;
		if (!s->gn || !s->aq) {
			dnp_sup_destroy(s);
			return -ENOMEM;
		}
	}
	if (!s->nodes || !s->log) {
		dnp_sup_destroy(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

void dnp_sup_destroy(struct dnp_sup *s)
{
	if (!s)
		return;
	free(s->nodes);
	free(s->log);
	free(s->page);
	free(s->gn);
	free(s->aq);
	free(s->grp);
	free(s);
}

static void logf_(struct dnp_sup *s, uint64_t t, uint32_t node, unsigned path, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void logf_(struct dnp_sup *s, uint64_t t, uint32_t node, unsigned path, const char *fmt, ...)
{
	struct dnp_sup_event *e = &s->log[s->nlog++ % DNP_SUP_LOG];
	va_list ap;

	e->t_ms = (uint64_t)((int64_t)t + s->wall_off);
	e->node = node;
	e->path = (uint8_t)path;
	va_start(ap, fmt);
	vsnprintf(e->what, sizeof(e->what), fmt, ap);
	va_end(ap);
}

/*
 * How long ago t was. A t in the future (a caller whose clock went back, as a
 * wall clock may) is no age at all: never a silence.
 */
static uint64_t age(uint64_t now, uint64_t t)
{
	return now > t ? now - t : 0;
}

/*
 * Called first by every entry that takes the time. A call more than stall_ms
 * after the previous one means the supervisor was not running: move every
 * report's arrival forward by the time it was away (see sup.h).
 */
static void catch_up(struct dnp_sup *s, uint64_t now)
{
	uint64_t gap;

	if (now <= s->last_call_ms)
		return;
	gap = now - s->last_call_ms;
	s->last_call_ms = now;
	if (!s->c.stall_ms || gap <= s->c.stall_ms)
		return;
	s->stalls++;
	s->stalled_ms += gap;
	for (uint32_t i = 0; i < s->n; i++) {
		struct dnp_sup_node *nd = &s->nodes[i];

		if (nd->heard)
			nd->last_ms = age(now, nd->last_ms) > gap ? nd->last_ms + gap : now;
	}
	for (uint32_t i = 0; s->grp && i < s->n; i++) {
		struct sup_grp *g = &s->grp[i];

		if (g->heard)
			g->last_ms = age(now, g->last_ms) > gap ? g->last_ms + gap : now;
	}
}

/* A report heard at t turns stale at t + silence_ms: the next tick must look then. */
static void note_expiry(struct dnp_sup *s, uint64_t t)
{
	if (t + s->c.silence_ms < s->next_expiry)
		s->next_expiry = t + s->c.silence_ms;
}

static bool fresh(const struct dnp_sup *s, const struct dnp_sup_node *nd, uint64_t now)
{
	return nd->heard && age(now, nd->last_ms) < s->c.silence_ms;
}

/* What the fresh neighbours of id say about it: a relayed host fault, and their links to it. */
static void neighbours_view(const struct dnp_sup *s, uint32_t id, uint64_t now, unsigned *relay,
			    unsigned *relay_hstat, unsigned *reporting, unsigned *broken,
			    uint8_t link[DNP_LFM_NDIRS])
{
	struct dnp_coord c = dnp_torus_coord(&s->c.torus, id);
	uint32_t seen[DNP_LFM_NDIRS];
	unsigned nseen = 0;

	*relay = DNP_LFM_RFD_NONE;
	*relay_hstat = 0;
	*reporting = *broken = 0;
	for (unsigned d = 0; d < DNP_LFM_NDIRS; d++) {
		struct dnp_coord mc = dnp_torus_neighbour(&s->c.torus, c, (enum dnp_dir)d);
		uint32_t m = dnp_torus_id(&s->c.torus, mc);
		const struct dnp_sup_node *mn = &s->nodes[m];
		unsigned e = dnp_torus_opposite((enum dnp_dir)d), ls;
		bool dup = false;

		link[d] = DNP_LFM_LINK_NONE;
		if (m == id || !fresh(s, mn, now) ||
		    !(mn->last.u.health.flags & DNP_SVC_F_DNP_ALIVE))
			continue;
		ls = dnp_lfm_dnp_link(mn->last.u.health.dnp_status, e);
		link[d] = (uint8_t)ls;
		for (unsigned k = 0; k < nseen; k++)
			dup |= seen[k] == m;
		if (!dup) {
			bool all_broken = true;

			seen[nseen++] = m;
			(*reporting)++;
			for (unsigned k = 0; k < DNP_LFM_NDIRS; k++) {
				uint64_t rfd = mn->last.u.health.rfd[k];
				struct dnp_coord kc =
					dnp_torus_neighbour(&s->c.torus, mc, (enum dnp_dir)k);

				if (!dnp_coord_eq(kc, c))
					continue;
				if (dnp_lfm_dnp_link(mn->last.u.health.dnp_status, k) !=
				    DNP_LFM_LINK_BROKEN)
					all_broken = false;
				if (dnp_lfm_rfd_kind(rfd) != DNP_LFM_RFD_NONE &&
				    dnp_lfm_rfd_node(rfd) == id) {
					*relay = dnp_lfm_rfd_kind(rfd);
					*relay_hstat = dnp_lfm_rfd_hstat(rfd);
				}
			}
			if (all_broken)
				(*broken)++;
		}
	}
}

static void derive(struct dnp_sup *s, uint32_t id, uint64_t now)
{
	struct dnp_sup_node *nd = &s->nodes[id], old = *nd;
	unsigned relay, rh, rep, brk;
	uint8_t nbl[DNP_LFM_NDIRS];
	bool links_from_nb = true;

	neighbours_view(s, id, now, &relay, &rh, &rep, &brk, nbl);
	if (fresh(s, nd, now)) {
		const struct dnp_svc_msg *m = &nd->last;
		unsigned worst = 0;

		for (unsigned k = 0; k < DNP_LFM_NHDEV; k++) {
			nd->hdev[k] = (uint8_t)dnp_lfm_host_dev(m->u.health.host_status, k);
			if (nd->hdev[k] > worst)
				worst = nd->hdev[k];
		}
		nd->host = worst >= DNP_LFM_ALARM   ? SUP_H_FAULTY :
			   worst == DNP_LFM_WARNING ? SUP_H_WARN :
						      SUP_H_OK;
		nd->path = SUP_P_SERVICE;
		if (m->u.health.flags & DNP_SVC_F_DNP_ALIVE) {
			nd->dnp = SUP_D_OK;
			links_from_nb = false;
			for (unsigned d = 0; d < DNP_LFM_NDIRS; d++)
				nd->link[d] = (uint8_t)dnp_lfm_dnp_link(m->u.health.dnp_status, d);
			for (unsigned k = 0; k < DNP_LFM_NSENSORS; k++)
				nd->sensor[k] =
					(uint8_t)dnp_lfm_dnp_sensor(m->u.health.dnp_status, k);
		} else {
			nd->dnp = m->u.health.flags & DNP_SVC_F_DNP_SEEN ? SUP_D_FAULTY :
									   SUP_D_UNKNOWN;
		}
	}
	if (relay != DNP_LFM_RFD_NONE) {
		/*
		 * The node's DNP reports over the torus that its host fails its
		 * watchdog or a device: newer than any report the host itself may
		 * still have sent (a killed HFM stays 'fresh' for silence_ms).
		 */
		nd->host = SUP_H_FAULTY;
		nd->dnp = SUP_D_OK;
		nd->path = SUP_P_RELAY;
		for (unsigned k = 0; k < DNP_LFM_NHDEV; k++)
			nd->hdev[k] = (uint8_t)dnp_lfm_host_dev(rh, k);
	} else if (fresh(s, nd, now)) {
		/* as reported above */
	} else if (rep > 0 && brk == rep) {
		nd->host = SUP_H_DEAD;
		nd->dnp = SUP_D_DEAD;
		nd->path = SUP_P_INFERENCE;
	} else if (nd->heard) {
		nd->host = SUP_H_SILENT;
		nd->dnp = SUP_D_UNKNOWN;
		nd->path = SUP_P_SILENCE;
	}
	if (links_from_nb)
		for (unsigned d = 0; d < DNP_LFM_NDIRS; d++)
			if (nbl[d] != DNP_LFM_LINK_NONE || nd->link[d] != DNP_LFM_LINK_NONE)
				nd->link[d] = nbl[d] ? nbl[d] : nd->link[d];

	if (nd->host != old.host)
		logf_(s, now, id, nd->path, "host %s", dnp_sup_host_name(nd->host));
	if (nd->dnp != old.dnp)
		logf_(s, now, id, nd->path, "dnp %s", dnp_sup_dnp_name(nd->dnp));
	for (unsigned d = 0; d < DNP_LFM_NDIRS; d++)
		if (nd->link[d] != old.link[d] && !(old.link[d] == 0 && nd->link[d] == 1))
			logf_(s, now, id, links_from_nb ? SUP_P_RELAY : SUP_P_SERVICE, "link %s %s",
			      dir_names[d], link_names[nd->link[d] & 3]);
	for (unsigned k = 0; k < DNP_LFM_NSENSORS; k++)
		if (nd->sensor[k] != old.sensor[k])
			logf_(s, now, id, nd->path, "sensor %s %s", sensor_names[k],
			      level_names[nd->sensor[k] & 3]);
	for (unsigned k = 0; k < DNP_LFM_NHDEV; k++)
		if (nd->hdev[k] != old.hdev[k])
			logf_(s, now, id, nd->path, "hostdev %s %s", hdev_names[k],
			      level_names[nd->hdev[k] & 3]);
}

static void derive_around(struct dnp_sup *s, uint32_t id, uint64_t now)
{
	struct dnp_coord c = dnp_torus_coord(&s->c.torus, id);

	derive(s, id, now);
	for (unsigned d = 0; d < DNP_LFM_NDIRS; d++) {
		uint32_t m = dnp_torus_id(&s->c.torus,
					  dnp_torus_neighbour(&s->c.torus, c, (enum dnp_dir)d));
		if (m != id)
			derive(s, m, now);
	}
}

static void log_alarm(struct dnp_sup *s, uint64_t now, uint32_t id, const struct dnp_svc_alarm *a)
{
	switch (a->kind) {
	case DNP_SVC_AL_DNP:
		logf_(s, now, id, SUP_P_SERVICE, "alarm dnp %s", a->level ? "omission" : "back");
		break;
	case DNP_SVC_AL_LINK:
		logf_(s, now, id, SUP_P_SERVICE, "alarm link %s %s", dir_names[a->subject % 6],
		      link_names[a->level & 3]);
		break;
	case DNP_SVC_AL_SENSOR:
		logf_(s, now, id, SUP_P_SERVICE, "alarm sensor %s %s",
		      sensor_names[a->subject % DNP_LFM_NSENSORS], level_names[a->level & 3]);
		break;
	case DNP_SVC_AL_REMOTE:
		logf_(s, now, a->node < s->n ? a->node : id, SUP_P_RELAY,
		      "alarm relay from %u: host %s", id,
		      a->level == DNP_LFM_RFD_HOST_OMISSION  ? "omission" :
		      a->level == DNP_LFM_RFD_HOST_PERIPHERY ? "periphery" :
							       "recovered");
		break;
	case DNP_SVC_AL_HOST:
		logf_(s, now, id, SUP_P_SERVICE, "alarm hostdev %s %s",
		      hdev_names[a->subject % DNP_LFM_NHDEV], level_names[a->level & 3]);
		break;
	}
}

/* ------------------------------------------------ hierarchy: group side */

/* A node's last report as a record for the top (svc.h: defined bits only). */
static void rec_of(const struct dnp_sup_node *nd, uint32_t id, struct dnp_svc_agg_rec *r)
{
	memset(r, 0, sizeof(*r));
	r->node = id;
	r->flags = (uint8_t)(nd->last.u.health.flags & (DNP_SVC_F_DNP_ALIVE | DNP_SVC_F_DNP_SEEN));
	r->host_status = (uint8_t)nd->last.u.health.host_status;
	r->dnp_status = nd->last.u.health.dnp_status & DNP_SVC_AGG_DNP_MASK;
	memcpy(r->rfd, nd->last.u.health.rfd, sizeof(r->rfd));
}

/* A HEALTH of node id was taken: forward it when it says something new. */
static void agg_note(struct dnp_sup *s, uint32_t id)
{
	struct sup_gnode *g = &s->gn[id - s->c.group_first];
	struct dnp_svc_agg_rec r;

	rec_of(&s->nodes[id], id, &r);
	if (!g->sent || memcmp(&r, &g->fwd, sizeof(r)))
		g->dirty = true;
}

static void agg_queue_alarm(struct dnp_sup *s, uint32_t from, const struct dnp_svc_alarm *a)
{
	if (s->aq_next - 1u - s->aq_acked >= SUP_AGG_ALARMS) {
		s->aq_acked++; /* full: the top has been unreachable; the oldest goes */
		s->aq_dropped++;
		if (s->aq_sent < s->aq_acked)
			s->aq_sent = s->aq_acked;
	}
	s->aq[(s->aq_next - 1u) % SUP_AGG_ALARMS] =
		(struct dnp_svc_agg_alarm){ .from = from,
					    .kind = a->kind,
					    .subject = a->subject,
					    .level = a->level,
					    .node = a->node };
	s->aq_next++;
	s->aq_queued++;
}

void dnp_sup_agg_digest(struct dnp_sup *s)
{
	for (uint32_t i = 0; s->gn && i < s->c.group_count; i++)
		if (s->nodes[s->c.group_first + i].heard)
			s->gn[i].dirty = true;
	s->aq_sent = s->aq_acked;
}

int dnp_sup_agg(struct dnp_sup *s, uint64_t now_ms, void *buf, size_t cap)
{
	struct dnp_svc_agg_writer w;
	uint32_t first_alarm = s->aq_sent + 1u;
	bool any = false;
	int r;

	if (!s->c.group_count)
		return -EPROTO;
	catch_up(s, now_ms);
	r = dnp_svc_agg_start(&w, buf, cap, s->c.group_first, s->c.group_count, s->agg_seq + 1u,
			      s->c.group_incarnation, first_alarm, 0);
	if (r)
		return r;
	while (s->aq_sent + 1u < s->aq_next &&
	       !dnp_svc_agg_add_alarm(&w, &s->aq[s->aq_sent % SUP_AGG_ALARMS])) {
		s->aq_sent++;
		any = true;
	}
	for (uint32_t i = 0; i < s->c.group_count; i++) {
		struct sup_gnode *g = &s->gn[i];
		const struct dnp_sup_node *nd = &s->nodes[s->c.group_first + i];
		struct dnp_svc_agg_rec rec;
		uint64_t a;

		if (!g->dirty)
			continue;
		rec_of(nd, s->c.group_first + i, &rec);
		a = age(now_ms, nd->last_ms);
		rec.age_ms = (uint16_t)(a > 0xffffu ? 0xffffu : a);
		if (dnp_svc_agg_add_rec(&w, &rec))
			break; /* full: the rest go in the next AGG */
		rec.age_ms = 0;
		g->fwd = rec;
		g->sent = true;
		g->dirty = false;
		any = true;
	}
	if (!any)
		return 0;
	s->agg_seq++;
	return (int)dnp_svc_agg_finish(&w);
}

int dnp_sup_agg_ack(struct dnp_sup *s, const struct dnp_svc_msg *ack, uint64_t now_ms)
{
	(void)now_ms;
	if (!s->c.group_count || !dnp_svc_ack_mine(ack, s->c.group_first, s->c.group_incarnation) ||
	    !ack->u.ack.incarnation)
		return -EPROTO;
	/* Cumulative; never past what was queued, never back. */
	if (ack->u.ack.ack > s->aq_acked && ack->u.ack.ack < s->aq_next)
		s->aq_acked = ack->u.ack.ack;
	if (s->aq_sent < s->aq_acked)
		s->aq_sent = s->aq_acked;
	return 0;
}

void dnp_sup_agg_counts(const struct dnp_sup *s, uint64_t *queued, uint64_t *dropped)
{
	*queued = s->aq_queued;
	*dropped = s->aq_dropped;
}

/* -------------------------------------------------- hierarchy: top side */

/* A record of a group's AGG, taken as the node's HEALTH heard age_ms ago. */
static void agg_take_rec(struct dnp_sup *s, uint32_t group, const struct dnp_svc_agg_rec *r,
			 uint64_t now)
{
	struct dnp_sup_node *nd = &s->nodes[r->node];
	uint64_t heard = now > r->age_ms ? now - r->age_ms : 0;
	struct dnp_svc_agg_rec had;
	bool same;

	rec_of(nd, r->node, &had);
	had.age_ms = r->age_ms;
	/* A digest repeating what a fresh node said changes nothing but its age. */
	same = fresh(s, nd, now) && !memcmp(&had, r, sizeof(had));
	if (!same) {
		memset(&nd->last, 0, sizeof(nd->last));
		nd->last.type = DNP_SVC_HEALTH;
		nd->last.node = r->node;
		nd->last.u.health.host_status = r->host_status;
		nd->last.u.health.dnp_status = r->dnp_status;
		nd->last.u.health.flags = r->flags;
		memcpy(nd->last.u.health.rfd, r->rfd, sizeof(r->rfd));
	}
	if (!nd->heard || heard > nd->last_ms)
		nd->last_ms = heard;
	note_expiry(s, nd->last_ms);
	nd->heard = true;
	nd->group = group + 1u;
	nd->msgs++;
	if (!same)
		derive_around(s, r->node, now);
}

static int on_agg(struct dnp_sup *s, const struct dnp_svc_msg *m, uint64_t now, void *reply,
		  size_t cap)
{
	struct dnp_svc_msg ack = { .type = DNP_SVC_ACK, .node = m->node, .seq = m->seq };
	struct dnp_svc_agg_rec r;
	struct sup_grp *g;
	size_t off = 0;

	if ((uint64_t)m->node + m->u.agg.count > s->n) {
		s->bad++;
		return -ERANGE;
	}
	if (!s->grp && !(s->grp = calloc(s->n, sizeof(*s->grp))))
		return -ENOMEM;
	g = &s->grp[m->node];
	if (g->heard && g->incarnation == m->u.agg.incarnation && m->seq <= g->seq) {
		s->bad++;
		return -EALREADY;
	}
	if (g->heard && g->incarnation != m->u.agg.incarnation)
		g->next_alarm = 0; /* a restarted group supervisor counts from 1 again */
	if (g->silent)
		logf_(s, now, m->node, SUP_P_SERVICE, "group %u-%u back", m->node,
		      m->node + m->u.agg.count - 1u);
	g->heard = true;
	g->silent = false;
	g->count = m->u.agg.count;
	g->incarnation = m->u.agg.incarnation;
	g->seq = m->seq;
	g->last_ms = now;
	note_expiry(s, now);
	g->aggs++;
	s->msgs++;
	for (unsigned i = 0; i < m->u.agg.nalarm; i++) {
		uint32_t id = m->u.agg.first_alarm + i;
		struct dnp_svc_agg_alarm a;
		struct dnp_svc_alarm al;

		if (id < g->next_alarm)
			continue; /* a repeat: our ACK was lost */
		dnp_svc_agg_alarm(m, i, &a);
		al = (struct dnp_svc_alarm){ .id = id,
					     .kind = a.kind,
					     .subject = a.subject,
					     .level = a.level,
					     .node = a.node };
		log_alarm(s, now, a.from, &al);
		s->alarms++;
		g->next_alarm = id + 1u;
	}
	while (dnp_svc_agg_rec_next(m, &off, &r))
		agg_take_rec(s, m->node, &r, now);
	ack.u.ack.ack = g->next_alarm ? g->next_alarm - 1u : 0;
	ack.u.ack.incarnation = g->incarnation;
	return dnp_svc_encode(&ack, reply, cap);
}

/* A group silent for silence_ms is logged so; its nodes age out on their own. */
static void groups_tick(struct dnp_sup *s, uint64_t now)
{
	for (uint32_t i = 0; s->grp && i < s->n; i++) {
		struct sup_grp *g = &s->grp[i];

		if (!g->heard || g->silent || age(now, g->last_ms) < s->c.silence_ms)
			continue;
		g->silent = true;
		logf_(s, now, i, SUP_P_SILENCE, "group %u-%u silent", i, i + g->count - 1u);
	}
}

bool dnp_sup_group(const struct dnp_sup *s, unsigned i, struct dnp_sup_group *out)
{
	for (uint32_t k = 0; s->grp && k < s->n; k++) {
		const struct sup_grp *g = &s->grp[k];

		if (!g->heard || i--)
			continue;
		*out = (struct dnp_sup_group){ .first = k,
					       .count = g->count,
					       .silent = g->silent,
					       .last_ms = g->last_ms,
					       .aggs = g->aggs };
		return true;
	}
	return false;
}

int dnp_sup_on_msg(struct dnp_sup *s, const void *buf, size_t len, uint64_t now_ms, void *reply,
		   size_t cap)
{
	struct dnp_svc_msg m, ack = { .type = DNP_SVC_ACK };
	struct dnp_sup_node *nd;

	catch_up(s, now_ms);
	if (dnp_svc_decode(buf, len, &m)) {
		s->bad++;
		return -EBADMSG;
	}
	if (m.type == DNP_SVC_AGG && !s->c.group_count)
		return on_agg(s, &m, now_ms, reply, cap);
	if (m.type != DNP_SVC_HEALTH) {
		s->bad++;
		return -EPROTO;
	}
	if (m.node >= s->n ||
	    (s->c.group_count &&
	     (m.node < s->c.group_first || m.node - s->c.group_first >= s->c.group_count))) {
		s->bad++;
		return -ERANGE;
	}
	nd = &s->nodes[m.node];
	/* Not newer than the last HEALTH of this incarnation: late or replayed. */
	if (nd->heard && m.u.health.incarnation &&
	    m.u.health.incarnation == nd->last.u.health.incarnation && m.seq <= nd->last.seq) {
		s->bad++;
		return -EALREADY;
	}
	s->msgs++;
	nd->msgs++;
	/*
	 * An HFM that restarted counts its alarms from 1 again: a new
	 * incarnation id says so (svc.h). An HFM without one (0) is taken as
	 * restarted when its sequence numbers start over.
	 */
	if (nd->heard && (m.u.health.incarnation != nd->last.u.health.incarnation ||
			  (!m.u.health.incarnation && m.seq < nd->last.seq)))
		nd->next_alarm = 0;
	for (unsigned i = 0; i < m.u.health.nalarm; i++) {
		const struct dnp_svc_alarm *a = &m.u.health.alarm[i];

		if (a->id < nd->next_alarm)
			continue; /* a repeat: already logged, the ACK was lost */
		log_alarm(s, now_ms, m.node, a);
		s->alarms++;
		nd->next_alarm = a->id + 1;
		if (s->c.group_count)
			agg_queue_alarm(s, m.node, a);
	}
	nd->heard = true;
	nd->last_ms = now_ms;
	note_expiry(s, now_ms);
	nd->last = m;
	nd->group = 0;
	if (s->c.group_count)
		agg_note(s, m.node);
	derive_around(s, m.node, now_ms);
	ack.node = m.node;
	ack.seq = m.seq;
	ack.u.ack.incarnation = m.u.health.incarnation;
	ack.u.ack.ack = nd->next_alarm ? nd->next_alarm - 1 : 0;
	return dnp_svc_encode(&ack, reply, cap);
}

/*
 * A node's picture depends on its report, its neighbours' and which of them
 * are fresh; every report is derived with its neighbours when it arrives. So
 * between arrivals only a report turning stale changes anything: a tick
 * before next_expiry has nothing to do (at 4096 nodes, re-deriving every node
 * every 20 ms was most of a supervisor's CPU). The pass that does run finds
 * the next expiry among the reports still fresh.
 */
void dnp_sup_tick(struct dnp_sup *s, uint64_t now_ms)
{
	uint32_t first = s->c.group_count ? s->c.group_first : 0;
	uint32_t count = s->c.group_count ? s->c.group_count : s->n;
	uint64_t next = UINT64_MAX;

	catch_up(s, now_ms);
	if (now_ms < s->next_expiry)
		return;
	groups_tick(s, now_ms);
	for (uint32_t i = 0; i < count; i++) {
		const struct dnp_sup_node *nd = &s->nodes[first + i];

		derive(s, first + i, now_ms); /* a group's rules are for its own nodes */
		if (nd->heard && nd->last_ms + s->c.silence_ms > now_ms &&
		    nd->last_ms + s->c.silence_ms < next)
			next = nd->last_ms + s->c.silence_ms;
	}
	for (uint32_t i = 0; s->grp && i < s->n; i++) {
		const struct sup_grp *g = &s->grp[i];

		if (g->heard && !g->silent && g->last_ms + s->c.silence_ms > now_ms &&
		    g->last_ms + s->c.silence_ms < next)
			next = g->last_ms + s->c.silence_ms;
	}
	s->next_expiry = next;
}

void dnp_sup_wall(struct dnp_sup *s, int64_t wall_minus_now_ms)
{
	s->wall_off = wall_minus_now_ms;
}

void dnp_sup_stalls(const struct dnp_sup *s, uint64_t *count, uint64_t *total_ms)
{
	*count = s->stalls;
	*total_ms = s->stalled_ms;
}

const struct dnp_sup_node *dnp_sup_node(const struct dnp_sup *s, uint32_t id)
{
	return id < s->n ? &s->nodes[id] : NULL;
}

uint64_t dnp_sup_nevents(const struct dnp_sup *s)
{
	return s->nlog;
}

const struct dnp_sup_event *dnp_sup_event(const struct dnp_sup *s, uint64_t i)
{
	if (i >= s->nlog || s->nlog - i > DNP_SUP_LOG)
		return NULL;
	return &s->log[i % DNP_SUP_LOG];
}

void dnp_sup_counts(const struct dnp_sup *s, uint64_t *msgs, uint64_t *alarms, uint64_t *bad)
{
	*msgs = s->msgs;
	*alarms = s->alarms;
	*bad = s->bad;
}

/* ------------------------------------------------------------- rendering */

struct out {
	char *b;
	size_t cap, len;
	size_t need; /* the length of the whole rendering, cut or not */
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	if (o->len + 1 >= o->cap)
		n = vsnprintf(NULL, 0, fmt, ap);
	else
		n = vsnprintf(o->b + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	o->need += (size_t)n;
	if (o->len + 1 < o->cap)
		o->len = o->len + (size_t)n < o->cap ? o->len + (size_t)n : o->cap - 1;
}

static bool node_healthy(const struct dnp_sup_node *nd)
{
	bool ok = nd->host == SUP_H_OK && nd->dnp == SUP_D_OK;

	for (unsigned d = 0; d < DNP_LFM_NDIRS; d++)
		ok &= nd->link[d] <= DNP_LFM_LINK_OK;
	for (unsigned k = 0; k < DNP_LFM_NSENSORS; k++)
		ok &= nd->sensor[k] == DNP_LFM_NORMAL;
	return ok;
}

/* The top's groups (none in a flat picture): "groups":[{...},...], */
static void render_groups_json(const struct dnp_sup *s, uint64_t now, struct out *o)
{
	struct dnp_sup_group g;

	if (!dnp_sup_group(s, 0, &g))
		return;
	put(o, "\"groups\":[");
	for (unsigned i = 0; dnp_sup_group(s, i, &g); i++)
		put(o,
		    "%s{\"first\":%u,\"count\":%u,\"state\":\"%s\",\"age_ms\":%" PRIu64
		    ",\"aggs\":%" PRIu64 "}",
		    i ? "," : "", g.first, g.count, g.silent ? "silent" : "ok", age(now, g.last_ms),
		    g.aggs);
	put(o, "],");
}

static void render_json(const struct dnp_sup *s, uint64_t now, struct out *o)
{
	uint64_t first = s->nlog > 200 ? s->nlog - 200 : 0;
	unsigned healthy = 0;

	put(o, "{\"t_ms\":%" PRIu64 ",\"torus\":[%u,%u,%u],\"silence_ms\":%" PRIu64 ",\"nodes\":[",
	    (uint64_t)((int64_t)now + s->wall_off), s->c.torus.dim[0], s->c.torus.dim[1],
	    s->c.torus.dim[2], s->c.silence_ms);
	for (uint32_t i = 0; i < s->n; i++) {
		const struct dnp_sup_node *nd = &s->nodes[i];
		struct dnp_coord c = dnp_torus_coord(&s->c.torus, i);

		healthy += node_healthy(nd);
		put(o,
		    "%s{\"id\":%u,\"coord\":[%u,%u,%u],\"host\":\"%s\",\"dnp\":\"%s\","
		    "\"path\":\"%s\",\"links\":{",
		    i ? "," : "", i, c.x, c.y, c.z, dnp_sup_host_name(nd->host),
		    dnp_sup_dnp_name(nd->dnp), dnp_sup_path_name(nd->path));
		for (unsigned d = 0; d < DNP_LFM_NDIRS; d++)
			put(o, "%s\"%s\":\"%s\"", d ? "," : "", dir_names[d],
			    link_names[nd->link[d] & 3]);
		put(o, "},\"sensors\":{");
		for (unsigned k = 0; k < DNP_LFM_NSENSORS; k++)
			put(o, "%s\"%s\":\"%s\"", k ? "," : "", sensor_names[k],
			    level_names[nd->sensor[k] & 3]);
		put(o, "},\"hostdev\":{");
		for (unsigned k = 0; k < DNP_LFM_NHDEV; k++)
			put(o, "%s\"%s\":\"%s\"", k ? "," : "", hdev_names[k],
			    level_names[nd->hdev[k] & 3]);
		put(o, "},\"msgs\":%" PRIu64 "}", nd->msgs);
	}
	put(o, "],\"healthy\":%u,", healthy);
	render_groups_json(s, now, o);
	put(o, "\"events_total\":%" PRIu64 ",\"events\":[", s->nlog);
	for (uint64_t i = first; i < s->nlog; i++) {
		const struct dnp_sup_event *e = dnp_sup_event(s, i);

		if (e)
			put(o,
			    "%s{\"t_ms\":%" PRIu64 ",\"node\":%u,\"what\":\"%s\",\"path\":\"%s\"}",
			    i > first ? "," : "", e->t_ms, e->node, e->what,
			    dnp_sup_path_name(e->path));
	}
	put(o, "]}\n");
}

static const char *colour_of(unsigned severity, bool colour)
{
	static const char *const c[] = { "\033[32m", "\033[33m", "\033[31m", "\033[90m" };
	return colour ? c[severity & 3] : "";
}

static unsigned host_sev(unsigned h)
{
	return h == SUP_H_OK                        ? 0 :
	       h == SUP_H_WARN || h == SUP_H_SILENT ? 1 :
	       h == SUP_H_UNKNOWN                   ? 3 :
						      2;
}

static unsigned dnp_sev(unsigned d)
{
	return d == SUP_D_OK ? 0 : d == SUP_D_UNKNOWN ? 3 : 2;
}

static unsigned link_sev(unsigned l)
{
	return l == DNP_LFM_LINK_OK     ? 0 :
	       l == DNP_LFM_LINK_SICK   ? 1 :
	       l == DNP_LFM_LINK_BROKEN ? 2 :
					  3;
}

static char host_ch(unsigned h)
{
	return "?oWFsX"[h < 6 ? h : 0];
}
static char dnp_ch(unsigned d)
{
	return "?oFX"[d < 4 ? d : 0];
}
static char link_ch(unsigned l, bool vertical)
{
	return l == DNP_LFM_LINK_OK     ? (vertical ? '|' : '-') :
	       l == DNP_LFM_LINK_SICK   ? '~' :
	       l == DNP_LFM_LINK_BROKEN ? 'x' :
					  ' ';
}

/*
 * One block per Z plane: each node is "[hd]" (host, DNP), X links between
 * cells (the wrap-around link at the row's end), Y links on the line below,
 * Z links as a digit list after the plane.
 */
static void render_map(const struct dnp_sup *s, bool colour, struct out *o)
{
	const char *rst = colour ? "\033[0m" : "";
	unsigned X = s->c.torus.dim[0], Y = s->c.torus.dim[1], Z = s->c.torus.dim[2];
	unsigned healthy = 0;
	struct dnp_sup_group g;

	for (uint32_t i = 0; i < s->n; i++)
		healthy += node_healthy(&s->nodes[i]);
	put(o,
	    "LO|FA|MO picture: %u of %u nodes healthy  (cell [host dnp]: o ok, W warning, "
	    "F faulty, s silent, X dead, ? unknown; links - | ok, ~ sick, x broken)\n",
	    healthy, s->n);
	for (unsigned z = 0; z < Z; z++) {
		put(o, "plane z=%u\n", z);
		for (unsigned y = 0; y < Y; y++) {
			put(o, "  ");
			for (unsigned x = 0; x < X; x++) {
				struct dnp_coord c = { (uint8_t)x, (uint8_t)y, (uint8_t)z };
				const struct dnp_sup_node *nd =
					&s->nodes[dnp_torus_id(&s->c.torus, c)];

				put(o, "[%s%c%s%s%c%s]", colour_of(host_sev(nd->host), colour),
				    host_ch(nd->host), rst, colour_of(dnp_sev(nd->dnp), colour),
				    dnp_ch(nd->dnp), rst);
				if (X > 1)
					put(o, "%s%c%s",
					    colour_of(link_sev(nd->link[DNP_DIR_XP]), colour),
					    link_ch(nd->link[DNP_DIR_XP], false), rst);
			}
			put(o, "\n  ");
			for (unsigned x = 0; Y > 1 && x < X; x++) {
				struct dnp_coord c = { (uint8_t)x, (uint8_t)y, (uint8_t)z };
				const struct dnp_sup_node *nd =
					&s->nodes[dnp_torus_id(&s->c.torus, c)];

				put(o, " %s%c%s   ",
				    colour_of(link_sev(nd->link[DNP_DIR_YP]), colour),
				    link_ch(nd->link[DNP_DIR_YP], true), rst);
			}
			put(o, "\n");
		}
		if (Z > 1) {
			put(o, "  Z+ links:");
			for (unsigned y = 0; y < Y; y++)
				for (unsigned x = 0; x < X; x++) {
					struct dnp_coord c = { (uint8_t)x, (uint8_t)y, (uint8_t)z };
					const struct dnp_sup_node *nd =
						&s->nodes[dnp_torus_id(&s->c.torus, c)];
					put(o, " %s%c%s",
					    colour_of(link_sev(nd->link[DNP_DIR_ZP]), colour),
					    link_ch(nd->link[DNP_DIR_ZP], true), rst);
				}
			put(o, "\n");
		}
	}
	for (uint32_t i = 0; i < s->n; i++) {
		const struct dnp_sup_node *nd = &s->nodes[i];

		if (node_healthy(nd))
			continue;
		put(o, "node %u: host %s, dnp %s (%s)", i, dnp_sup_host_name(nd->host),
		    dnp_sup_dnp_name(nd->dnp), dnp_sup_path_name(nd->path));
		for (unsigned d = 0; d < DNP_LFM_NDIRS; d++)
			if (nd->link[d] > DNP_LFM_LINK_OK)
				put(o, ", link %s %s", dir_names[d], link_names[nd->link[d]]);
		for (unsigned k = 0; k < DNP_LFM_NSENSORS; k++)
			if (nd->sensor[k])
				put(o, ", %s %s", sensor_names[k], level_names[nd->sensor[k] & 3]);
		put(o, "\n");
	}
	for (unsigned i = 0; dnp_sup_group(s, i, &g); i++)
		if (g.silent)
			put(o, "group %u-%u: silent (its supervisor sends nothing)\n", g.first,
			    g.first + g.count - 1u);
}

static void render(const struct dnp_sup *s, unsigned flags, uint64_t now_ms, struct out *out)
{
	struct out o = *out;

	if (o.cap)
		o.b[0] = 0;
	if (flags & DNP_SVC_Q_JSON) {
		render_json(s, now_ms, &o);
	} else if (flags & DNP_SVC_Q_LOG) {
		uint64_t first = s->nlog > 500 ? s->nlog - 500 : 0;

		for (uint64_t i = first; i < s->nlog; i++) {
			const struct dnp_sup_event *e = dnp_sup_event(s, i);
			if (e)
				put(&o, "%" PRIu64 ".%03u node %u %s (%s)\n", e->t_ms / 1000,
				    (unsigned)(e->t_ms % 1000), e->node, e->what,
				    dnp_sup_path_name(e->path));
		}
	} else {
		render_map(s, flags & DNP_SVC_Q_COLOUR, &o);
	}
	*out = o;
}

size_t dnp_sup_render(const struct dnp_sup *s, unsigned flags, uint64_t now_ms, char *buf,
		      size_t cap)
{
	struct out o = { buf, cap, 0, 0 };

	if (!cap)
		return 0;
	render(s, flags, now_ms, &o);
	return o.len;
}

int dnp_sup_render_all(const struct dnp_sup *s, unsigned flags, uint64_t now_ms, char **text,
		       size_t *len)
{
	struct out o = { NULL, 0, 0, 0 };
	char *b;

	render(s, flags, now_ms, &o); /* measures */
	b = malloc(o.need + 1);
	if (!b)
		return -ENOMEM;
	o = (struct out){ b, o.need + 1, 0, 0 };
	render(s, flags, now_ms, &o);
	*text = b;
	*len = o.len;
	return 0;
}

/*
 * A whole picture that does not fit one TEXT: never cut mid-token. JSON gets
 * a short valid object saying so, the map and the log their first lines and a
 * last one saying how much is missing.
 */
static size_t too_big(unsigned flags, const char *text, size_t len, char *buf, size_t cap)
{
	struct out o = { buf, cap, 0, 0 };
	size_t keep;

	if (flags & DNP_SVC_Q_JSON) {
		put(&o,
		    "{\"error\":\"the picture (%zu bytes) does not fit one datagram: ask for it in "
		    "pages (DNP_SVC_Q_PAGED)\",\"bytes\":%zu}\n",
		    len, len);
		return o.len;
	}
	keep = cap > 200 ? cap - 200 : 0;
	while (keep && text[keep - 1] != '\n')
		keep--;
	memcpy(buf, text, keep);
	o.len = keep;
	put(&o, "... %zu more bytes: ask for the picture in pages (DNP_SVC_Q_PAGED)\n", len - keep);
	return o.len;
}

int dnp_sup_on_status(struct dnp_sup *s, const struct dnp_svc_msg *q, uint64_t now_ms, void *reply,
		      size_t cap)
{
	struct dnp_svc_msg a = { .seq = q->seq };
	unsigned flags = q->u.status.flags & ~DNP_SVC_Q_PAGED;
	char *small;
	int r;

	if (q->type != DNP_SVC_STATUS)
		return -EPROTO;
	/* A first page (or another view) renders anew; later pages read that snapshot. */
	if (!(q->u.status.flags & DNP_SVC_Q_PAGED) || q->u.status.offset == 0 || !s->page ||
	    flags != s->page_flags) {
		char *text;
		size_t len;

		dnp_sup_tick(s, now_ms);
		r = dnp_sup_render_all(s, flags, now_ms, &text, &len);
		if (r)
			return r;
		free(s->page);
		s->page = text;
		s->page_len = len;
		s->page_flags = flags;
		s->page_snap++;
	}
	if (!(q->u.status.flags & DNP_SVC_Q_PAGED)) {
		a.type = DNP_SVC_TEXT;
		a.u.text.text = s->page;
		a.u.text.len = s->page_len;
		if (s->page_len <= DNP_SVC_TEXT_MAX)
			return dnp_svc_encode(&a, reply, cap);
		small = malloc(DNP_SVC_TEXT_MAX);
		if (!small)
			return -ENOMEM;
		a.u.text.text = small;
		a.u.text.len = too_big(flags, s->page, s->page_len, small, DNP_SVC_TEXT_MAX);
		r = dnp_svc_encode(&a, reply, cap);
		free(small);
		return r;
	}
	if (q->u.status.offset > s->page_len || s->page_len > UINT32_MAX)
		return -ERANGE;
	a.type = DNP_SVC_PAGE;
	a.u.page.snap = s->page_snap;
	a.u.page.offset = q->u.status.offset;
	a.u.page.total = (uint32_t)s->page_len;
	a.u.page.text = s->page + q->u.status.offset;
	a.u.page.len = s->page_len - q->u.status.offset;
	if (a.u.page.len > DNP_SVC_PAGE_MAX)
		a.u.page.len = DNP_SVC_PAGE_MAX;
	return dnp_svc_encode(&a, reply, cap);
}
