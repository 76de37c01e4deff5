/* SPDX-License-Identifier: MIT */
/*
 * dnp-lab-lofamo — LO|FA|MO at scale, in virtual time (`./dnp lab lofamo`).
 *
 * Every node of an XxYxZ torus runs the real DNP Fault Manager
 * (lofamo/core/dfm.c) on its own register block, beside a simulated Host Fault
 * Manager (the watchdog duties and reports of dnp-hfm: Host Watchdog
 * Register every T_write, DNP Watchdog Register taken every T_read, a
 * HEALTH datagram every T_write with the alarms not yet acknowledged); one
 * real Fault Supervisor (lofamo/core/sup.c) takes the datagrams of a simulated
 * service network. DIAG packets go to first neighbours with a torus hop
 * latency; a dead DNP's links are BROKEN at its neighbours after the link
 * timeout. Time advances in steps of --step ms; nothing here reads a clock.
 *
 * For each torus and scenario it injects the fault on the node in the
 * middle of the torus after a warm-up and prints the awareness time at the
 * supervisor, the LO|FA|MO traffic per node on the torus (DIAG frames) and on
 * the service network (HEALTH and ACK datagrams), in steady state and during
 * the fault, and the supervisor's load (datagrams per second).
 *
 *   dnp-lab-lofamo [--torus XxYxZ[,XxYxZ...]] [--scenario S[,S...]] [--csv]
 *                  [--t-write MS] [--t-read MS] [--link-timeout MS] [--step MS]
 *                  [--expect S:PATH:MS[,...]] [--picture FILE] [--group-size N]
 *
 * --group-size N runs the hierarchy of supervisors (docs/lofamo.md, "A
 * hierarchy of supervisors"): the HFMs of nodes k*N..k*N+N-1 report to group
 * supervisor k (sup.c in group mode), which sends the top its AGGs every
 * 20 ms (changes) and every T_read (digest); awareness is read at the top,
 * and the load is given per process (the top, the busiest group).
 *
 * The lab is deterministic: --expect S:PATH:MS makes a scenario assert
 * the report path and the awareness time (virtual ms) it must show.
 *
 * Exit status 1 when a scenario's fault never reached the supervisor's
 * picture (awareness -1) or did not match its --expect, 2 on bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dfm.h"
#include "dnp_parse.h"
#include "dnp_version.h"
#include "regs.h"
#include "sup.h"
#include "tool.h"

#define MS 1000000ull        /* DFM time unit: ns, like dnpd */
#define DIAG_FRAME_BYTES 96u /* 64 bytes of DNP framing + 32 of payload */
#define UDP_OVERHEAD 28u     /* IPv4 + UDP headers */
#define HOP_MS 1u            /* torus: one hop, frame and credit, rounded up */
#define SVC_MS 1u            /* service network: one datagram */
#define MAX_PEND 64u

enum scen {
	S_KILL_DNPD,
	S_KILL_HFM,
	S_BOTH,
	S_SENSOR,
	S_SVCNET,
	S_N
};
static const char *const scen_name[S_N] = { "kill-dnpd", "kill-hfm", "both", "sensor",
					    "svcnet-cut" };
static const char *const scen_want[S_N] = { "dnp faulty", "host faulty", "host dead",
					    "sensor temp alarm", "hostdev svcnet alarm" };

struct hfm {
	bool alive, cut;
	bool dnp_seen, dnp_alive;
	uint64_t last_dnp, host_status;
	struct dnp_svc_watch svc; /* acknowledgements, as dnp-hfm judges them */
	uint8_t rfd_kind[DNP_LFM_NDIRS];
	uint32_t seq, next_id;
	struct dnp_svc_alarm pend[MAX_PEND];
	unsigned npend;
	bool urgent;
	uint64_t next_w, next_r, next_hb;
};

struct node {
	struct dnp_lfm_regs regs;
	struct dnp_dfm *dfm;
	bool dnp_alive;
	uint64_t dnp_dead_at;
	uint8_t links_broken; /* bit per direction, as last fed to the DFM */
	struct hfm h;
};

struct diag_msg {
	uint64_t at;
	uint32_t to;
	struct dnp_coord from;
	uint8_t data[DNP_DFM_DIAG_BYTES];
};

struct lab {
	struct dnp_torus t;
	uint32_t n;
	unsigned tw, tr, link_ms, step;
	struct node *nodes;
	struct dnp_sup *sup; /* the flat supervisor, or the top of the hierarchy */
	struct diag_msg *dq;
	/* --group-size: the group supervisors and what each took */
	unsigned gsize, ngrp;
	struct dnp_sup **grp;
	uint64_t *grp_msgs, top_msgs;
	size_t dq_n, dq_cap;
	/* counters */
	uint64_t diag_bytes, svc_bytes, sup_msgs;
};

static void hfm_alarm(struct hfm *h, unsigned kind, unsigned subject, unsigned level, uint32_t node)
{
	if (h->npend == MAX_PEND) {
		memmove(h->pend, h->pend + 1, sizeof(h->pend[0]) * (MAX_PEND - 1));
		h->npend--;
	}
	h->pend[h->npend++] = (struct dnp_svc_alarm){ .id = ++h->next_id,
						      .kind = (uint8_t)kind,
						      .subject = (uint8_t)subject,
						      .level = (uint8_t)level,
						      .node = node };
	h->urgent = true;
}

/* The simulated dnp-hfm of node id at time t (ms): the same duties, no I/O. */
static void hfm_step(struct lab *L, uint32_t id, uint64_t t)
{
	struct node *nd = &L->nodes[id];
	struct hfm *h = &nd->h;
	uint8_t buf[512], rep[64];

	if (!h->alive)
		return;
	if (t >= h->next_w) {
		uint64_t w = h->host_status & ~(3ull << (2 * DNP_LFM_HDEV_SVCNET));

		if (dnp_svc_watch_cut(&h->svc, t, (uint64_t)L->tr + L->tw))
			w |= (uint64_t)DNP_LFM_ALARM << (2 * DNP_LFM_HDEV_SVCNET);
		if (w != h->host_status)
			hfm_alarm(h, DNP_SVC_AL_HOST, DNP_LFM_HDEV_SVCNET,
				  dnp_lfm_host_dev(w, DNP_LFM_HDEV_SVCNET), id);
		h->host_status = w;
		dnp_lfm_wd_write(&nd->regs.host, w, t * MS);
		h->next_w = t + L->tw;
	}
	if (t >= h->next_r) {
		uint64_t w;
		bool valid = dnp_lfm_wd_take(&nd->regs.dnp, &w);

		if (valid) {
			if (!h->dnp_alive && h->dnp_seen)
				hfm_alarm(h, DNP_SVC_AL_DNP, 0, 0, id);
			if (!h->dnp_alive)
				h->last_dnp = w;
			h->dnp_seen = h->dnp_alive = true;
		} else if (h->dnp_alive) {
			h->dnp_alive = false;
			hfm_alarm(h, DNP_SVC_AL_DNP, 0, 1, id);
		}
		h->next_r = t + L->tr;
	}
	if (h->dnp_alive) {
		uint64_t w = atomic_load(&nd->regs.dnp.status);

		for (unsigned d = 0; d < DNP_LFM_NDIRS; d++)
			if (dnp_lfm_dnp_link(w, d) != dnp_lfm_dnp_link(h->last_dnp, d) &&
			    dnp_lfm_dnp_link(h->last_dnp, d) != DNP_LFM_LINK_NONE)
				hfm_alarm(h, DNP_SVC_AL_LINK, d, dnp_lfm_dnp_link(w, d), id);
		for (unsigned s = 0; s < DNP_LFM_NSENSORS; s++)
			if (dnp_lfm_dnp_sensor(w, s) != dnp_lfm_dnp_sensor(h->last_dnp, s))
				hfm_alarm(h, DNP_SVC_AL_SENSOR, s, dnp_lfm_dnp_sensor(w, s), id);
		for (unsigned d = 0; d < DNP_LFM_NDIRS; d++) {
			uint64_t rfd = atomic_load(&nd->regs.rfd[d].desc);

			if (dnp_lfm_rfd_kind(rfd) != h->rfd_kind[d])
				hfm_alarm(h, DNP_SVC_AL_REMOTE, d, dnp_lfm_rfd_kind(rfd),
					  dnp_lfm_rfd_node(rfd));
			h->rfd_kind[d] = (uint8_t)dnp_lfm_rfd_kind(rfd);
		}
		h->last_dnp = w;
	}
	if (h->urgent || t >= h->next_hb) {
		struct dnp_svc_msg m = { .type = DNP_SVC_HEALTH, .node = id, .seq = ++h->seq }, a;
		int len, r;

		m.u.health.host_status = h->host_status;
		m.u.health.dnp_status = atomic_load(&nd->regs.dnp.status);
		m.u.health.flags = (h->dnp_alive ? DNP_SVC_F_DNP_ALIVE : 0) |
				   (h->dnp_seen ? DNP_SVC_F_DNP_SEEN : 0);
		m.u.health.t_write_ms = (uint16_t)L->tw;
		m.u.health.t_read_ms = (uint16_t)L->tr;
		for (unsigned d = 0; d < DNP_LFM_NDIRS; d++)
			m.u.health.rfd[d] = atomic_load(&nd->regs.rfd[d].desc);
		m.u.health.nalarm = h->npend < DNP_SVC_MAX_ALARMS ? h->npend : DNP_SVC_MAX_ALARMS;
		memcpy(m.u.health.alarm, h->pend, sizeof(h->pend[0]) * m.u.health.nalarm);
		len = dnp_svc_encode(&m, buf, sizeof(buf));
		h->urgent = false;
		h->next_hb = t + L->tw;
		if (len <= 0 || h->cut)
			return;
		/* The service network delivers within one step (SVC_MS <= step). */
		L->svc_bytes += (uint64_t)len + UDP_OVERHEAD;
		L->sup_msgs++;
		if (L->gsize)
			L->grp_msgs[id / L->gsize]++;
		r = dnp_sup_on_msg(L->gsize ? L->grp[id / L->gsize] : L->sup, buf, (size_t)len,
				   t + SVC_MS, rep, sizeof(rep));
		if (r > 0 && dnp_svc_decode(rep, (size_t)r, &a) == 0) {
			unsigned k = 0;

			L->svc_bytes += (uint64_t)r + UDP_OVERHEAD;
			dnp_svc_watch_ack(&h->svc, t);
			while (k < h->npend && h->pend[k].id <= a.u.ack.ack)
				k++;
			memmove(h->pend, h->pend + k, sizeof(h->pend[0]) * (h->npend - k));
			h->npend -= k;
		}
	}
}

static int diag_push(struct lab *L, const struct diag_msg *m)
{
	if (L->dq_n == L->dq_cap) {
		size_t cap = L->dq_cap ? L->dq_cap * 2 : 1024;
		struct diag_msg *q = realloc(L->dq, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		L->dq = q;
		L->dq_cap = cap;
	}
	L->dq[L->dq_n++] = *m;
	return 0;
}

static void dfm_step(struct lab *L, uint32_t id, uint64_t t)
{
	struct node *nd = &L->nodes[id];
	struct dnp_coord c = dnp_torus_coord(&L->t, id);
	struct dnp_dfm_input in = { .engine_ok = true };
	struct dnp_dfm_out o;
	uint8_t broken = 0;

	if (!nd->dnp_alive)
		return;
	for (unsigned d = 0; d < DNP_LFM_NDIRS; d++) {
		uint32_t m = dnp_torus_id(&L->t, dnp_torus_neighbour(&L->t, c, (enum dnp_dir)d));
		const struct node *mn = &L->nodes[m];

		in.link_state[d] = 1;
		if (!mn->dnp_alive && t - mn->dnp_dead_at >= L->link_ms)
			in.link_state[d] = 2; /* BROKEN: no credit for the link timeout */
		if (in.link_state[d] == 2)
			broken |= (uint8_t)(1u << d);
	}
	/* like dnpd: tick when due, or at once when a link changed */
	if (t * MS < dnp_dfm_next_deadline(nd->dfm) && broken == nd->links_broken)
		return;
	nd->links_broken = broken;
	dnp_dfm_tick(nd->dfm, t * MS, &in, &o);
	for (unsigned i = 0; i < o.ndiag; i++) {
		struct diag_msg m = { .at = t + HOP_MS,
				      .to = dnp_torus_id(&L->t, o.diag[i].dst),
				      .from = c };

		memcpy(m.data, o.diag[i].data, sizeof(m.data));
		L->diag_bytes += DIAG_FRAME_BYTES;
		(void)diag_push(L, &m);
	}
}

static void deliver_diags(struct lab *L, uint64_t t)
{
	size_t k = 0;

	for (size_t i = 0; i < L->dq_n; i++) {
		struct diag_msg *m = &L->dq[i];
		struct node *to = &L->nodes[m->to];
		struct dnp_dfm_out o = { 0 };

		if (m->at > t) {
			L->dq[k++] = *m;
			continue;
		}
		if (to->dnp_alive)
			(void)dnp_dfm_on_diag(to->dfm, m->from, m->data, sizeof(m->data), t * MS,
					      &o);
	}
	L->dq_n = k;
}

/*
 * The groups' 20 ms round: each ticks, marks a digest every T_read, and its
 * AGGs reach the top one service-network hop later; the top's ACKs go back.
 */
static void groups_step(struct lab *L, uint64_t t, bool digest)
{
	static uint8_t buf[DNP_SVC_MAX_DGRAM];
	uint8_t rep[64];
	int n;

	for (unsigned g = 0; g < L->ngrp; g++) {
		dnp_sup_tick(L->grp[g], t);
		if (digest)
			dnp_sup_agg_digest(L->grp[g]);
		while ((n = dnp_sup_agg(L->grp[g], t, buf, sizeof(buf))) > 0) {
			struct dnp_svc_msg a;
			int r = dnp_sup_on_msg(L->sup, buf, (size_t)n, t + SVC_MS, rep,
					       sizeof(rep));

			L->svc_bytes += (uint64_t)n + UDP_OVERHEAD;
			L->top_msgs++;
			if (r > 0 && dnp_svc_decode(rep, (size_t)r, &a) == 0) {
				L->svc_bytes += (uint64_t)r + UDP_OVERHEAD;
				(void)dnp_sup_agg_ack(L->grp[g], &a, t + 2 * SVC_MS);
			}
		}
	}
}

/* --group-size: the group supervisors, one per gsize nodes. 0 or -ENOMEM/-EINVAL. */
static int groups_create(struct lab *L, const struct dnp_sup_conf *top)
{
	L->ngrp = (L->n + L->gsize - 1) / L->gsize;
	L->grp = calloc(L->ngrp, sizeof(*L->grp));
	L->grp_msgs = calloc(L->ngrp, sizeof(*L->grp_msgs));
	if (!L->grp || !L->grp_msgs)
		return -ENOMEM;
	for (unsigned g = 0; g < L->ngrp; g++) {
		struct dnp_sup_conf c = *top;
		int r;

		c.group_first = g * L->gsize;
		c.group_count = L->n - c.group_first < L->gsize ? L->n - c.group_first : L->gsize;
		c.group_incarnation = 1000u + g;
		r = dnp_sup_create(&c, 0, &L->grp[g]);
		if (r)
			return r;
	}
	return 0;
}

struct result {
	long awareness_ms;
	unsigned path; /* enum dnp_sup_path of the event that made the supervisor aware */
	double diag_steady, diag_fault, svc_steady, svc_fault, sup_steady, sup_fault;
	double top_fault,
		grp_fault; /* --group-size: datagrams/s taken by the top, the busiest group */
};

/*
 * The supervisor's JSON picture at now, asked for in pages and joined as
 * dnpctl does (svc.h, struct dnp_svc_pages), written to path: the code that
 * serves a real supervisor's picture, on a torus of any size.
 */
static int lab_picture(struct dnp_sup *sup, uint64_t now, const char *path)
{
	static uint8_t buf[DNP_SVC_MAX_DGRAM];
	struct dnp_svc_pages pg;
	FILE *f;
	int r;

	dnp_svc_pages_init(&pg, DNP_SVC_Q_JSON, 1);
	do {
		struct dnp_svc_msg q, a;

		r = dnp_svc_pages_request(&pg, buf, sizeof(buf));
		if (r > 0)
			r = dnp_svc_decode(buf, (size_t)r, &q) ?:
				    dnp_sup_on_status(sup, &q, now, buf, sizeof(buf));
		if (r > 0)
			r = dnp_svc_decode(buf, (size_t)r, &a) ?: dnp_svc_pages_take(&pg, &a);
	} while (r == 0 || r == -EAGAIN);
	if (r == 1) {
		f = fopen(path, "we");
		r = f && fwrite(pg.buf, 1, pg.got, f) == pg.got ? 0 : -EIO;
		if (f && fclose(f))
			r = -EIO;
	}
	dnp_svc_pages_fini(&pg);
	return r < 0 ? r : 0;
}

/* The scenario's fault on the victim at now. */
static void lab_inject(struct lab *L, uint32_t victim, enum scen sc, uint64_t now)
{
	struct node *v = &L->nodes[victim];

	switch (sc) {
	case S_KILL_DNPD:
		v->dnp_alive = false;
		v->dnp_dead_at = now;
		break;
	case S_KILL_HFM:
		v->h.alive = false;
		break;
	case S_BOTH:
		v->dnp_alive = false;
		v->dnp_dead_at = now;
		v->h.alive = false;
		break;
	case S_SENSOR:
		atomic_store(&v->regs.sim[0].value, 99000);
		atomic_store(&v->regs.sim[0].on, 1);
		break;
	case S_SVCNET:
		v->h.cut = true;
		break;
	default:
		break;
	}
}

static int run_one(const struct dnp_torus *t, enum scen sc, unsigned tw, unsigned tr,
		   unsigned link_ms, unsigned step, unsigned gsize, const char *picture,
		   struct result *res)
{
	struct lab L = {
		.t = *t, .tw = tw, .tr = tr, .link_ms = link_ms, .step = step, .gsize = gsize
	};
	struct dnp_sup_conf sc_conf = { .torus = *t, .silence_ms = 2ull * tr + tw, .stall_ms = tw };
	unsigned dim[3] = { t->dim[0], t->dim[1], t->dim[2] };
	const uint64_t warm = 3000, fault_len = 3000;
	/* off the period grid, so that no fault lands exactly on a write */
	uint64_t t_fault = warm + 7 * step, t_end = t_fault + fault_len, sup_next = 0;
	uint64_t d0 = 0, s0 = 0, m0 = 0, d1 = 0, s1 = 0, m1 = 0, ev0 = 0, tm0 = 0, gm0 = 0;
	uint64_t *g0 = NULL;
	uint32_t victim;
	int r = 0;

	L.n = dnp_torus_size(t);
	victim = dnp_torus_id(t, (struct dnp_coord){ (uint8_t)(t->dim[0] / 2),
						     (uint8_t)(t->dim[1] / 2),
						     (uint8_t)(t->dim[2] / 2) });
	L.nodes = calloc(L.n, sizeof(*L.nodes));
	if (!L.nodes || dnp_sup_create(&sc_conf, 0, &L.sup))
		return -ENOMEM;
	if (gsize && (r = groups_create(&L, &sc_conf)) != 0)
		goto out;
	for (uint32_t i = 0; i < L.n; i++) {
		struct node *nd = &L.nodes[i];
		struct dnp_dfm_conf dc = { .torus = *t,
					   .self = dnp_torus_coord(t, i),
					   .unit_per_ms = MS };

		for (unsigned d = 0; d < DNP_LFM_NDIRS; d++)
			if (t->dim[d / 2] > 1)
				dc.links |= (uint8_t)(1u << d);
		dnp_lfm_regs_init(&nd->regs, i, dim);
		(void)dnp_lfm_timer_set(&nd->regs, tw, tr);
		/* DNPs start at different times: staggered periods */
		r = dnp_dfm_create(&dc, &nd->regs, (uint64_t)((i * 7919u) % tw / step * step) * MS,
				   &nd->dfm);
		if (r)
			goto out;
		nd->dnp_alive = true;
		nd->h.alive = true;
		/* stagger the periods as real processes would be */
		nd->h.next_w = (i * 104729u) % tw / step * step;
		nd->h.next_r = tr + (i * 104729u) % tr / step * step;
		nd->h.next_hb = nd->h.next_w;
	}
	res->awareness_ms = -1;
	for (uint64_t now = 0; now <= t_end; now += step) {
		if (now == t_fault) {
			d0 = L.diag_bytes, s0 = L.svc_bytes, m0 = L.sup_msgs;
			ev0 = dnp_sup_nevents(L.sup);
			tm0 = L.top_msgs;
			if (gsize && (g0 = malloc(L.ngrp * sizeof(*g0))) != NULL)
				memcpy(g0, L.grp_msgs, L.ngrp * sizeof(*g0));
			lab_inject(&L, victim, sc, now);
		}
		deliver_diags(&L, now);
		for (uint32_t i = 0; i < L.n; i++)
			dfm_step(&L, i, now);
		for (uint32_t i = 0; i < L.n; i++)
			hfm_step(&L, i, now);
		if (now >= sup_next) {
			if (gsize)
				groups_step(&L, now, now % tr < 20);
			dnp_sup_tick(L.sup, now);
			sup_next = now + 20;
		}
		if (now == t_fault - 1000 / step * step) {
			d1 = L.diag_bytes, s1 = L.svc_bytes, m1 = L.sup_msgs;
		}
		if (now > t_fault && res->awareness_ms < 0) {
			for (uint64_t e = ev0; e < dnp_sup_nevents(L.sup); e++) {
				const struct dnp_sup_event *ev = dnp_sup_event(L.sup, e);

				if (ev && ev->node == victim && !strcmp(ev->what, scen_want[sc])) {
					res->awareness_ms = (long)(ev->t_ms - t_fault);
					res->path = ev->path;
					break;
				}
			}
			ev0 = dnp_sup_nevents(L.sup);
		}
	}
	/* steady state: the second before the fault; fault: the 3 s after it */
	res->diag_steady = (double)(d0 - d1) / L.n;
	res->svc_steady = (double)(s0 - s1) / L.n;
	res->sup_steady = (double)(m0 - m1);
	res->diag_fault = (double)(L.diag_bytes - d0) / L.n / (fault_len / 1000.0);
	res->svc_fault = (double)(L.svc_bytes - s0) / L.n / (fault_len / 1000.0);
	res->sup_fault = (double)(L.sup_msgs - m0) / (fault_len / 1000.0);
	res->top_fault = (double)(L.top_msgs - tm0) / (fault_len / 1000.0);
	for (unsigned g = 0; g0 && g < L.ngrp; g++) {
		uint64_t d = L.grp_msgs[g] - g0[g];

		gm0 = d > gm0 ? d : gm0;
	}
	res->grp_fault = (double)gm0 / (fault_len / 1000.0);
	if (picture)
		r = lab_picture(L.sup, t_end, picture);
out:
	for (uint32_t i = 0; i < L.n; i++)
		dnp_dfm_destroy(L.nodes[i].dfm);
	free(L.nodes);
	free(L.dq);
	dnp_sup_destroy(L.sup);
	for (unsigned g = 0; L.grp && g < L.ngrp; g++)
		dnp_sup_destroy(L.grp[g]);
	free(L.grp);
	free(L.grp_msgs);
	free(g0);
	return r;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dnp-lab-lofamo [--torus XxYxZ[,...]] [--scenario S[,...]] [--csv]\n"
		"                      [--t-write MS] [--t-read MS] [--link-timeout MS] [--step MS]\n"
		"                      [--expect S:PATH:MS[,...]] [--picture FILE]\n"
		"  default: tori 4x4x4,8x8x8,16x16x16, every scenario (kill-dnpd, kill-hfm,\n"
		"  both, sensor, svcnet-cut), T_write 100, T_read 250, link timeout 400, step 5\n"
		"  --expect: the scenario's fault must reach the picture by this report path\n"
		"  (service, relay, inference, silence) exactly MS virtual ms after it\n"
		"  --picture: the supervisor's JSON picture at the end of each run, asked in\n"
		"  pages as dnpctl does, written to FILE (the last run's stays)\n"
		"  --group-size N: group supervisors of N nodes each under one top (the CSV\n"
		"  adds groups,top_msgs_per_s,max_group_msgs_per_s)\n"
		"  --help, --version\n");
}

#define PROG "dnp-lab-lofamo"
#define MAX_EXPECT 16u

struct lab_args {
	char tori[256], scens[256];
	unsigned tw, tr, link_ms, step, gsize;
	bool csv;
	const char *picture; /* --picture FILE: the last run's JSON picture, joined from pages */
	/* --expect: per scenario, the path and awareness time the run must show */
	unsigned nexpect;
	struct {
		unsigned scen, path;
		long ms;
	} expect[MAX_EXPECT];
};

/* "S:PATH:MS[,...]" into a->expect. 0, or -EINVAL after printing why. */
static int lab_expect(struct lab_args *a, const char *arg)
{
	char buf[512], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", arg);
	for (char *it = strtok_r(buf, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
		char *p1 = strchr(it, ':'), *p2 = p1 ? strchr(p1 + 1, ':') : NULL;
		unsigned s, p;
		uint64_t ms;

		if (!p2 || a->nexpect == MAX_EXPECT)
			goto bad;
		*p1++ = 0;
		*p2++ = 0;
		for (s = 0; s < S_N && strcmp(it, scen_name[s]); s++)
			;
		for (p = SUP_P_SERVICE; p <= SUP_P_SILENCE && strcmp(p1, dnp_sup_path_name(p)); p++)
			;
		if (s == S_N || p > SUP_P_SILENCE || dnp_parse_u64_max(p2, 3600000, &ms))
			goto bad;
		a->expect[a->nexpect].scen = s;
		a->expect[a->nexpect].path = p;
		a->expect[a->nexpect++].ms = (long)ms;
	}
	return 0;
bad:
	fprintf(stderr, PROG ": bad --expect '%s' (want SCENARIO:PATH:MS[,...])\n", arg);
	return -EINVAL;
}

/* The command line into a. Returns -1 to go on, else the exit status. */
static int lab_args(int argc, char **argv, struct lab_args *a)
{
	static const struct option lo[] = {
		{ "torus", required_argument, NULL, 't' },
		{ "scenario", required_argument, NULL, 's' },
		{ "csv", no_argument, NULL, 'c' },
		{ "t-write", required_argument, NULL, 'w' },
		{ "t-read", required_argument, NULL, 'r' },
		{ "link-timeout", required_argument, NULL, 'l' },
		{ "step", required_argument, NULL, 'S' },
		{ "expect", required_argument, NULL, 'e' },
		{ "picture", required_argument, NULL, 'p' },
		{ "group-size", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c, r = 0;

	while ((c = getopt_long(argc, argv, "t:s:cw:r:l:S:e:p:g:hV", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			snprintf(a->tori, sizeof(a->tori), "%s", optarg);
			break;
		case 's':
			snprintf(a->scens, sizeof(a->scens), "%s", optarg);
			break;
		case 'c':
			a->csv = true;
			break;
		case 'w':
			r = lfm_tool_u32(PROG, "t-write", optarg, 60000, &a->tw);
			break;
		case 'r':
			r = lfm_tool_u32(PROG, "t-read", optarg, 60000, &a->tr);
			break;
		case 'l':
			r = lfm_tool_u32(PROG, "link-timeout", optarg, 600000, &a->link_ms);
			break;
		case 'S':
			r = lfm_tool_u32(PROG, "step", optarg, 60000, &a->step);
			break;
		case 'e':
			r = lab_expect(a, optarg);
			break;
		case 'p':
			a->picture = optarg;
			break;
		case 'g':
			r = lfm_tool_u32(PROG, "group-size", optarg, 1u << 24, &a->gsize);
			if (!r && !a->gsize) {
				fprintf(stderr, PROG ": --group-size must be at least 1\n");
				r = -EINVAL;
			}
			break;
		case 'V':
			return dnp_version_print(PROG);
		default:
			return lfm_tool_usage_exit(c, usage);
		}
		if (r)
			return 2;
	}
	if (optind != argc)
		return lfm_tool_usage_exit('?', usage);
	if (lfm_tool_timer(PROG, a->tw, a->tr))
		return 2;
	if (!a->step || a->step > a->tw || a->tw % a->step || a->tr % a->step ||
	    a->link_ms % a->step) {
		fprintf(stderr, PROG ": --step must divide T_write, T_read and the link timeout\n");
		return 2;
	}
	return -1;
}

/* A run that --expect names must show that path and time. Returns 1 on a mismatch. */
static unsigned lab_check(const struct lab_args *a, const char *torus, unsigned s,
			  const struct result *res)
{
	unsigned bad = 0;

	for (unsigned i = 0; i < a->nexpect; i++) {
		if (a->expect[i].scen != s)
			continue;
		if (res->awareness_ms == a->expect[i].ms && res->path == a->expect[i].path)
			continue;
		fprintf(stderr, PROG ": %s %s: aware after %ld ms by %s, expected %ld ms by %s\n",
			torus, scen_name[s], res->awareness_ms,
			res->awareness_ms < 0 ? "nothing" : dnp_sup_path_name(res->path),
			a->expect[i].ms, dnp_sup_path_name(a->expect[i].path));
		bad = 1;
	}
	return bad;
}

static void lab_print(const struct lab_args *a, const char *ts, unsigned s,
		      const struct result *res, unsigned ngroups)
{
	if (a->csv && a->gsize)
		printf("%s,%s,%ld,%s,%.1f,%.1f,%.0f,%u,%.0f,%.0f\n", ts, scen_name[s],
		       res->awareness_ms,
		       res->awareness_ms < 0 ? "none" : dnp_sup_path_name(res->path),
		       res->diag_fault, res->svc_fault, res->sup_fault, ngroups, res->top_fault,
		       res->grp_fault);
	else if (a->csv)
		printf("%s,%s,%ld,%s,%.1f,%.1f,%.0f\n", ts, scen_name[s], res->awareness_ms,
		       res->awareness_ms < 0 ? "none" : dnp_sup_path_name(res->path),
		       res->diag_fault, res->svc_fault, res->sup_fault);
	else if (a->gsize)
		printf("%-10s %-11s %9ld %-9s %6u groups: top %8.0f msg/s, busiest group %8.0f "
		       "msg/s (all HEALTH %.0f/s)\n",
		       ts, scen_name[s], res->awareness_ms,
		       res->awareness_ms < 0 ? "none" : dnp_sup_path_name(res->path), ngroups,
		       res->top_fault, res->grp_fault, res->sup_fault);
	else
		printf("%-10s %-11s %9ld %-9s %12.1f / %-11.1f %12.1f / %-11.1f %10.0f / %-10.0f\n",
		       ts, scen_name[s], res->awareness_ms,
		       res->awareness_ms < 0 ? "none" : dnp_sup_path_name(res->path),
		       res->diag_steady, res->diag_fault, res->svc_steady, res->svc_fault,
		       res->sup_steady, res->sup_fault);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static struct lab_args a = { .tori = "4x4x4,8x8x8,16x16x16",
				     .tw = DNP_LFM_T_WRITE_DEFAULT,
				     .tr = DNP_LFM_T_READ_DEFAULT,
				     .link_ms = 400,
				     .step = 5 };
	unsigned missed = 0, wrong = 0;
	int e = lab_args(argc, argv, &a);

	if (e >= 0)
		return e;
	if (a.csv)
		printf("torus,scenario,awareness_ms,path,diag_torus_Bps_per_node,"
		       "service_Bps_per_node,supervisor_msgs_per_s%s\n",
		       a.gsize ? ",groups,top_msgs_per_s,max_group_msgs_per_s" : "");
	else
		printf("%-10s %-11s %9s %-9s %26s %26s %22s\n", "torus", "scenario", "aware ms",
		       "path", "torus DIAG B/s/node (st/f)", "service B/s/node (st/f)",
		       "supervisor msg/s (st/f)");
	for (char *ts = strtok(a.tori, ","); ts; ts = strtok(NULL, ",")) {
		struct dnp_torus t;

		if (dnp_torus_parse(ts, &t)) {
			fprintf(stderr, PROG ": bad torus %s\n", ts);
			return 2;
		}
		for (unsigned s = 0; s < S_N; s++) {
			struct result res = { .awareness_ms = -1 };

			if (a.scens[0] && !strstr(a.scens, scen_name[s]))
				continue;
			e = run_one(&t, (enum scen)s, a.tw, a.tr, a.link_ms, a.step, a.gsize,
				    a.picture, &res);
			if (e) {
				fprintf(stderr, PROG ": %s\n", strerror(-e));
				return 1;
			}
			lab_print(&a, ts, s, &res,
				  a.gsize ? (dnp_torus_size(&t) + a.gsize - 1) / a.gsize : 0);
			missed += res.awareness_ms < 0;
			wrong += lab_check(&a, ts, s, &res);
		}
	}
	if (missed)
		fprintf(stderr, PROG ": %u scenario(s) never reached the supervisor\n", missed);
	return missed || wrong ? 1 : 0;
}
