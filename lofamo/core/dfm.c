/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "dfm.h"
#include "le.h"
#include "regs.h"

/* The engine's link states, as the DFM needs them (link.h: INIT 0, UP 1, BROKEN 2). */
#define DFM_LINK_BROKEN 2u
#define DFM_REMOTE_EXPIRY 3u /* T_read periods without DIAG before a remote entry expires */

struct dfm_remote {
	uint8_t kind; /* enum dnp_lfm_rfd_kind */
	uint8_t hstat;
	uint32_t node;
	unsigned count;
	uint64_t last; /* time of the last DIAG */
};

/*
 * An undecided CRC window spans at most this many T_read periods; its oldest
 * period then ages out. 16 x T_read is 4 s at the default 250 ms.
 */
#define DFM_CRC_AGE 16

struct dnp_dfm {
	struct dnp_dfm_conf c;
	struct dnp_lfm_regs *r;
	uint32_t self_id;
	uint32_t tw, tr; /* accepted periods, ms */
	bool timer_refused;
	uint64_t next_write, next_read;
	/* links */
	uint64_t win_frames[DNP_LFM_NDIRS], win_crc[DNP_LFM_NDIRS]; /* at window start */
	/* an undecided window's period ends, oldest first (see judge_crc) */
	uint64_t age_frames[DNP_LFM_NDIRS][DFM_CRC_AGE], age_crc[DNP_LFM_NDIRS][DFM_CRC_AGE];
	uint8_t age_head[DNP_LFM_NDIRS], age_n[DNP_LFM_NDIRS];
	bool sick[DNP_LFM_NDIRS];
	uint8_t link_rep[DNP_LFM_NDIRS]; /* last reported enum dnp_lfm_link */
	uint8_t sensor_rep[DNP_LFM_NSENSORS];
	/* host */
	bool host_seen;               /* the host validated its register at least once */
	bool host_grace;              /* the next read is the late reader's second look */
	uint64_t grace;               /* how long that second look waits, time units */
	struct dnp_lfm_health health; /* this node's recent scheduling delay (regs.h) */
	uint8_t host;                 /* enum dnp_lfm_host */
	uint64_t host_status;         /* last Host Watchdog status word */
	uint64_t next_diag;
	uint32_t diag_seq;
	bool diag_recovered; /* send one "recovered" DIAG at the next tick */
	/* first neighbours */
	struct dnp_coord nb[DNP_LFM_NDIRS];
	struct dfm_remote rem[DNP_LFM_NDIRS];
	uint64_t last_status;
	bool dirty; /* write the register now, not at the next T_write */
	struct dnp_dfm_stats st;
};

/*
 * Layout: 0 magic u16, 2 version u8, 3 kind u8, 4 node u32, 8 host_status
 * u64, 16 dnp_status u64, 24 seq u32, 28 reserved u32 (zero).
 */
int dnp_dfm_diag_encode(const struct dnp_dfm_diag_msg *m, void *buf, size_t cap)
{
	uint8_t *p = buf;

	if (cap < DNP_DFM_DIAG_BYTES)
		return -ENOBUFS;
	memset(p, 0, DNP_DFM_DIAG_BYTES);
	lfm_put16(p, DNP_DFM_DIAG_MAGIC);
	p[2] = 1;
	p[3] = m->kind;
	lfm_put32(p + 4, m->node);
	lfm_put64(p + 8, m->host_status);
	lfm_put64(p + 16, m->dnp_status);
	lfm_put32(p + 24, m->seq);
	return (int)DNP_DFM_DIAG_BYTES;
}

int dnp_dfm_diag_decode(const void *buf, size_t len, struct dnp_dfm_diag_msg *m)
{
	const uint8_t *p = buf;

	if (len != DNP_DFM_DIAG_BYTES || lfm_get16(p) != DNP_DFM_DIAG_MAGIC || p[2] != 1 ||
	    p[3] > DNP_LFM_RFD_HOST_PERIPHERY || lfm_get32(p + 28) != 0)
		return -EBADMSG;
	m->kind = p[3];
	m->node = lfm_get32(p + 4);
	m->host_status = lfm_get64(p + 8);
	m->dnp_status = lfm_get64(p + 16);
	m->seq = lfm_get32(p + 24);
	return 0;
}

int dnp_dfm_create(const struct dnp_dfm_conf *c, struct dnp_lfm_regs *regs, uint64_t now,
		   struct dnp_dfm **out)
{
	struct dnp_dfm *d;

	if (!c || !regs || !c->unit_per_ms || !dnp_torus_contains(&c->torus, c->self) ||
	    dnp_lfm_regs_check(regs))
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->c = *c;
	d->r = regs;
	d->self_id = dnp_torus_id(&c->torus, c->self);
	d->tw = DNP_LFM_T_WRITE_DEFAULT;
	d->tr = DNP_LFM_T_READ_DEFAULT;
	for (unsigned i = 0; i < DNP_LFM_NDIRS; i++)
		d->nb[i] = dnp_torus_neighbour(&c->torus, c->self, (enum dnp_dir)i);
	/* A restarted DNP forgets what it knew of its neighbours. */
	for (unsigned i = 0; i < DNP_LFM_NDIRS; i++) {
		atomic_store_explicit(&regs->rfd[i].desc, 0, memory_order_relaxed);
		atomic_store_explicit(&regs->rfd[i].timestamp, 0, memory_order_relaxed);
	}
	d->next_write = now;
	d->next_read = now + (uint64_t)d->tr * c->unit_per_ms;
	d->next_diag = UINT64_MAX;
	d->dirty = true;
	*out = d;
	return 0;
}

void dnp_dfm_destroy(struct dnp_dfm *d)
{
	free(d);
}

const struct dnp_dfm_stats *dnp_dfm_stats(const struct dnp_dfm *d)
{
	return &d->st;
}

static void alarm(struct dnp_dfm_out *o, unsigned kind, unsigned subject, unsigned level,
		  uint32_t node)
{
	if (o->nalarm < DNP_DFM_MAX_ALARMS)
		o->alarm[o->nalarm++] = (struct dnp_dfm_alarm){
			.kind = (uint8_t)kind,
			.subject = (uint8_t)subject,
			.level = (uint8_t)level,
			.node = node,
		};
}

/* The timer register is untrusted: a refused pair leaves the periods as they were. */
static void read_timer(struct dnp_dfm *d, struct dnp_dfm_out *o)
{
	uint32_t tr = atomic_load_explicit(&d->r->t_read_ms, memory_order_acquire);
	uint32_t tw = atomic_load_explicit(&d->r->t_write_ms, memory_order_relaxed);
	bool bad = dnp_lfm_timer_check(tw, tr) != 0;

	if (bad != d->timer_refused) {
		d->timer_refused = bad;
		atomic_store_explicit(&d->r->timer_error, bad ? 1u : 0u, memory_order_relaxed);
		alarm(o, DNP_DFM_AL_TIMER, 0, bad, d->self_id);
	}
	if (!bad) {
		d->tw = tw;
		d->tr = tr;
	}
}

static unsigned sensor_level(const struct dnp_lfm_regs *r, unsigned s, int32_t v)
{
	int32_t warn = atomic_load_explicit(&r->th.warn[s], memory_order_relaxed);
	int32_t al = atomic_load_explicit(&r->th.alarm[s], memory_order_relaxed);

	if (v >= al)
		return DNP_LFM_ALARM;
	if (s == 1) { /* voltage: under-thresholds too */
		if (v <= atomic_load_explicit(&r->th.volt_alarm_low, memory_order_relaxed))
			return DNP_LFM_ALARM;
		if (v <= atomic_load_explicit(&r->th.volt_warn_low, memory_order_relaxed))
			return DNP_LFM_WARNING;
	}
	return v >= warn ? DNP_LFM_WARNING : DNP_LFM_NORMAL;
}

/*
 * A lower confidence bound of a Poisson rate, in thousandths of an event:
 * with e events seen, the true mean is above crc_lo_milli(e) / 1000 with
 * 99.9 % confidence (one-sided: chi2(0.001, 2e) / 2, tabulated to e = 12,
 * then the Wilson-Hilferty form e (1 - 1/9e - 3.09/3 sqrt(e))^3, within 1 %).
 */
static uint64_t crc_lo_milli(uint64_t e)
{
	static const uint16_t lo[13] = { 0,    1,    45,   191,  429,  739, 1107,
					 1520, 1971, 2452, 2961, 3491, 4042 };
	double x = (double)e, r = x, c;

	if (e < 13)
		return lo[e];
	for (unsigned i = 0; i < 64 && r * r - x > 1e-6 * x; i++)
		r = 0.5 * (r + x / r); /* sqrt(x), without libm */
	c = 1.0 - 1.0 / (9.0 * x) - 3.09 / (3.0 * r);
	return (uint64_t)(x * c * c * c * 1000.0);
}

/*
 * One window of a link's counters, from T_read to T_read: SICK only when the
 * error rate is over crc_ppm with confidence, i.e. when even the lower 99.9 %
 * bound of the CRC errors seen, over the frames of the window, exceeds
 * crc_ppm per million. One error in a few thousand frames is then not enough
 * (a 100 ppm threshold takes 3 errors in 1,900 frames, 10 in 29,000), while a
 * burst on a quiet link is judged at once. A window is judged healthy once
 * it holds crc_min_frames frames and its own ratio is at most crc_ppm; a
 * window in between (over the threshold, not yet with confidence, or too
 * short) is not thrown away: it grows into the next T_read until one verdict
 * is certain, and the previous verdict stands meanwhile. It grows for at
 * most DFM_CRC_AGE periods, then drops its oldest period at each T_read: a
 * few errors left over from a fault that has ended (one error in 500 frames
 * is over 100 ppm, yet says nothing with confidence) would otherwise need
 * 10,000 clean frames to be diluted below the threshold, and a link carrying
 * little traffic would stay SICK long after it healed. The price: a link just
 * over the threshold is only found if its errors show with confidence within
 * DFM_CRC_AGE periods of traffic.
 */
static void judge_crc(struct dnp_dfm *d, const struct dnp_dfm_input *in)
{
	uint32_t ppm = atomic_load_explicit(&d->r->th.crc_ppm, memory_order_relaxed);
	uint32_t min = atomic_load_explicit(&d->r->th.crc_min_frames, memory_order_relaxed);

	for (unsigned i = 0; i < DNP_LFM_NDIRS; i++) {
		uint64_t f = in->rx_frames[i] - d->win_frames[i];
		uint64_t e = in->crc_errors[i] - d->win_crc[i];
		uint64_t all = f + e;
		bool sick = crc_lo_milli(e) * 1000u > (uint64_t)ppm * all;
		unsigned k;

		if (!sick && (all < (min ? min : 1) || e * 1000000u > (uint64_t)ppm * all)) {
			/* no verdict yet: keep the window and the last verdict */
			k = (d->age_head[i] + d->age_n[i]) % DFM_CRC_AGE;
			d->age_frames[i][k] = in->rx_frames[i];
			d->age_crc[i][k] = in->crc_errors[i];
			if (++d->age_n[i] < DFM_CRC_AGE)
				continue;
			k = d->age_head[i]; /* full: the window now starts one period later */
			d->win_frames[i] = d->age_frames[i][k];
			d->win_crc[i] = d->age_crc[i][k];
			d->age_head[i] = (uint8_t)((k + 1) % DFM_CRC_AGE);
			d->age_n[i]--;
			continue;
		}
		d->win_frames[i] = in->rx_frames[i];
		d->win_crc[i] = in->crc_errors[i];
		d->age_n[i] = 0;
		d->sick[i] = sick;
	}
}

static uint64_t local_status(struct dnp_dfm *d, const struct dnp_dfm_input *in,
			     struct dnp_dfm_out *o)
{
	uint32_t mask = atomic_load_explicit(&d->r->mask, memory_order_relaxed);
	uint64_t w = 0;

	for (unsigned i = 0; i < DNP_LFM_NDIRS; i++) {
		unsigned s = DNP_LFM_LINK_NONE;

		if (d->c.links & (1u << i)) {
			s = DNP_LFM_LINK_OK;
			if (in->link_state[i] == DFM_LINK_BROKEN &&
			    (mask & DNP_LFM_MASK_LINK_BROKEN))
				s = DNP_LFM_LINK_BROKEN;
			else if (d->sick[i] && (mask & DNP_LFM_MASK_LINK_SICK))
				s = DNP_LFM_LINK_SICK;
		}
		if (s != d->link_rep[i]) {
			if (d->link_rep[i] != DNP_LFM_LINK_NONE || s != DNP_LFM_LINK_OK)
				alarm(o, DNP_DFM_AL_LINK, i, s, d->self_id);
			d->link_rep[i] = (uint8_t)s;
			d->dirty = true;
		}
		w |= (uint64_t)s << DNP_LFM_DNP_LINK_SHIFT(i);
	}
	for (unsigned s = 0; s < DNP_LFM_NSENSORS; s++) {
		const struct dnp_lfm_sim *sim = &d->r->sim[s];
		int32_t v = INT32_MIN;
		unsigned lv = DNP_LFM_NORMAL;

		if (atomic_load_explicit(&sim->on, memory_order_relaxed) == 1)
			v = atomic_load_explicit(&sim->value, memory_order_relaxed);
		else if (in->sensor_present & (1u << s))
			v = in->sensor[s];
		atomic_store_explicit(&d->r->reading[s], v, memory_order_relaxed);
		if (v != INT32_MIN && (mask & DNP_LFM_MASK_SENSOR))
			lv = sensor_level(d->r, s, v);
		if (lv != d->sensor_rep[s]) {
			alarm(o, DNP_DFM_AL_SENSOR, s, lv, d->self_id);
			d->sensor_rep[s] = (uint8_t)lv;
			d->dirty = true;
		}
		w |= (uint64_t)lv << DNP_LFM_DNP_SENSOR_SHIFT(s);
	}
	w |= (uint64_t)(in->engine_ok ? 0u : 1u) << DNP_LFM_DNP_ENGINE_SHIFT;
	w |= (uint64_t)d->host << DNP_LFM_DNP_HOST_SHIFT;
	for (unsigned i = 0; i < DNP_LFM_NDIRS; i++)
		if (d->rem[i].kind != DNP_LFM_RFD_NONE)
			w |= 1ull << (DNP_LFM_DNP_REMOTE_SHIFT + i);
	return w;
}

/* Queues a DIAG about our host to every first neighbour whose link is not broken. */
static void send_diag(struct dnp_dfm *d, const struct dnp_dfm_input *in, unsigned kind,
		      struct dnp_dfm_out *o)
{
	struct dnp_dfm_diag_msg m = {
		.kind = (uint8_t)kind,
		.node = d->self_id,
		.host_status = d->host_status,
		.dnp_status = d->last_status,
		.seq = ++d->diag_seq,
	};

	for (unsigned i = 0; i < DNP_LFM_NDIRS && o->ndiag < DNP_LFM_NDIRS; i++) {
		bool dup = false;

		if (!(d->c.links & (1u << i)) || in->link_state[i] == DFM_LINK_BROKEN)
			continue;
		/* In a dimension of size 2 both directions reach the same node: once. */
		for (unsigned j = 0; j < o->ndiag; j++)
			dup |= dnp_coord_eq(o->diag[j].dst, d->nb[i]);
		if (dup)
			continue;
		struct dnp_dfm_diag *g = &o->diag[o->ndiag++];
		g->dir = (uint8_t)i;
		g->dst = d->nb[i];
		(void)dnp_dfm_diag_encode(&m, g->data, sizeof(g->data));
		d->st.diag_tx++;
	}
	atomic_store_explicit(&d->r->diag_tx, d->st.diag_tx, memory_order_relaxed);
}

/* A lateness the other side published (ns, capped by dnp_lfm_wd_late), in our units. */
static uint64_t dfm_from_ns(const struct dnp_dfm *d, uint64_t ns)
{
	return ns / 1000000ull * d->c.unit_per_ms + ns % 1000000ull * d->c.unit_per_ms / 1000000ull;
}

/*
 * Takes the Host Watchdog Register. late: how long after its due time this
 * read came. Returns false when it found the register not validated but
 * gave the host a second look (d->grace from now) instead of a verdict:
 * because we woke late, or because this node has been under CPU pressure
 * lately (regs.h, local health).
 */
static bool read_host(struct dnp_dfm *d, uint64_t now, uint64_t late, struct dnp_dfm_out *o)
{
	uint32_t mask = atomic_load_explicit(&d->r->mask, memory_order_relaxed);
	uint64_t w, u = d->c.unit_per_ms;
	bool valid = dnp_lfm_wd_take(&d->r->host, &w);
	bool second = d->host_grace;
	unsigned h = d->host;

	d->st.host_reads++;
	d->host_grace = false;
	dnp_lfm_health_note(&d->health, late);
	dnp_lfm_health_note(&d->health, dfm_from_ns(d, dnp_lfm_wd_late(&d->r->host)));
	if (!valid && d->host_seen && !second) {
		/*
		 * Whatever kept us off the CPU (now, or lately) may have kept the
		 * host off it too, and it may not have had a fair T_write. Look
		 * again a little later (the register stays invalidated): still not
		 * validated then, it is an omission.
		 */
		d->grace = dnp_lfm_health_grace(&d->health, late, (uint64_t)d->tw * u,
						(uint64_t)d->tr * u);
		if (d->grace) {
			d->host_grace = true;
			d->st.host_late_reads++;
			return false;
		}
	}
	if (valid) {
		d->host_seen = true;
		d->host_status = w;
		h = DNP_LFM_HOST_OK;
		for (unsigned dev = 0; dev < DNP_LFM_NHDEV; dev++)
			if (dnp_lfm_host_dev(w, dev) == DNP_LFM_ALARM)
				h = DNP_LFM_HOST_PERIPHERY;
	} else if (d->host_seen) {
		/* Still cleared since our last read: the host missed its T_write. */
		d->st.host_omissions++;
		h = DNP_LFM_HOST_OMISSION;
	}
	if (!(mask & DNP_LFM_MASK_HOST))
		h = DNP_LFM_HOST_OK;
	if (h != d->host) {
		alarm(o, DNP_DFM_AL_HOST, 0, h, d->self_id);
		if (h == DNP_LFM_HOST_OK)
			d->diag_recovered = true;
		d->next_diag = h == DNP_LFM_HOST_OK ? UINT64_MAX : now; /* relay at once */
		d->host = (uint8_t)h;
		d->dirty = true;
	}
	return true;
}

static void expire_remote(struct dnp_dfm *d, uint64_t now, struct dnp_dfm_out *o)
{
	uint64_t life = (uint64_t)DFM_REMOTE_EXPIRY * d->tr * d->c.unit_per_ms;

	for (unsigned i = 0; i < DNP_LFM_NDIRS; i++) {
		struct dfm_remote *m = &d->rem[i];

		if (m->kind == DNP_LFM_RFD_NONE || now - m->last < life)
			continue;
		m->kind = DNP_LFM_RFD_NONE;
		atomic_store_explicit(&d->r->rfd[i].desc, dnp_lfm_rfd_make(0, 0, m->node, m->count),
				      memory_order_relaxed);
		alarm(o, DNP_DFM_AL_REMOTE, i, DNP_LFM_RFD_NONE, m->node);
		d->dirty = true;
	}
}

void dnp_dfm_tick(struct dnp_dfm *d, uint64_t now, const struct dnp_dfm_input *in,
		  struct dnp_dfm_out *out)
{
	uint64_t u = d->c.unit_per_ms;
	uint64_t status;

	memset(out, 0, sizeof(*out));
	read_timer(d, out);
	if (now >= d->next_read) {
		bool second = d->host_grace;

		if (read_host(d, now, now - d->next_read, out)) {
			/* the CRC window runs from one regular read to the next */
			if (!second)
				judge_crc(d, in);
			d->next_read = now + (uint64_t)d->tr * u;
		} else {
			judge_crc(d, in);
			d->next_read = now + d->grace;
		}
	}
	expire_remote(d, now, out);
	status = local_status(d, in, out);
	d->last_status = status;
	if (now >= d->next_write || d->dirty) {
		if (now >= d->next_write)
			dnp_lfm_health_note(&d->health, now - d->next_write);
		dnp_lfm_wd_write_late(&d->r->dnp, status, now,
				      d->health.pressure / u * 1000000ull +
					      d->health.pressure % u * 1000000ull / u);
		d->st.wd_writes++;
		d->next_write = now + (uint64_t)d->tw * u;
		d->dirty = false;
	}
	if (d->host != DNP_LFM_HOST_OK && now >= d->next_diag) {
		send_diag(d, in, d->host, out);
		d->next_diag = now + (uint64_t)d->tr * u;
	} else if (d->diag_recovered) {
		send_diag(d, in, DNP_LFM_RFD_NONE, out);
		d->diag_recovered = false;
	}
}

uint64_t dnp_dfm_next_deadline(const struct dnp_dfm *d)
{
	uint64_t t = d->next_write < d->next_read ? d->next_write : d->next_read;

	if (d->host != DNP_LFM_HOST_OK && d->next_diag < t)
		t = d->next_diag;
	return d->dirty || d->diag_recovered ? 0 : t;
}

int dnp_dfm_on_diag(struct dnp_dfm *d, struct dnp_coord src, const void *payload, size_t len,
		    uint64_t now, struct dnp_dfm_out *out)
{
	struct dnp_dfm_diag_msg m;
	uint32_t mask = atomic_load_explicit(&d->r->mask, memory_order_relaxed);
	bool found = false;

	if (dnp_dfm_diag_decode(payload, len, &m)) {
		d->st.diag_bad++;
		return -EBADMSG;
	}
	if (!dnp_torus_contains(&d->c.torus, src) || m.node != dnp_torus_id(&d->c.torus, src)) {
		d->st.diag_bad++;
		return -EINVAL;
	}
	for (unsigned i = 0; i < DNP_LFM_NDIRS; i++) {
		struct dfm_remote *r = &d->rem[i];

		if (!(d->c.links & (1u << i)) || !dnp_coord_eq(d->nb[i], src))
			continue;
		found = true;
		if (!(mask & DNP_LFM_MASK_REMOTE))
			continue;
		if (r->kind != m.kind || r->node != m.node) {
			if (m.kind != DNP_LFM_RFD_NONE || r->kind != DNP_LFM_RFD_NONE)
				alarm(out, DNP_DFM_AL_REMOTE, i, m.kind, m.node);
			d->dirty = true;
		}
		r->count = r->node == m.node ? r->count + 1 : 1;
		r->kind = m.kind;
		r->node = m.node;
		r->hstat = (uint8_t)m.host_status;
		r->last = now;
		atomic_store_explicit(&d->r->rfd[i].timestamp, now, memory_order_relaxed);
		atomic_store_explicit(&d->r->rfd[i].desc,
				      dnp_lfm_rfd_make(r->kind, r->hstat, r->node, r->count),
				      memory_order_release);
	}
	if (!found) {
		d->st.diag_bad++;
		return -EINVAL;
	}
	d->st.diag_rx++;
	atomic_store_explicit(&d->r->diag_rx, d->st.diag_rx, memory_order_relaxed);
	return 0;
}
