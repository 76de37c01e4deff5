/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "keygen.h"
#include "le.h"
#include "svc.h"

#define HDR 16u
#define HEALTH_FIXED (HDR + 32u + 8u * DNP_LFM_NDIRS + 8u)
#define ALARM_BYTES 16u
#define AGG_FIXED (HDR + 16u)
#define AGG_REC 16u
#define AGG_RFD 8u

static bool zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static void agg_fixed(uint8_t *p, uint32_t count, uint32_t inc, uint32_t first_alarm, unsigned nrec,
		      unsigned nalarm, uint8_t flags)
{
	lfm_put32(p, count);
	lfm_put32(p + 4, inc);
	lfm_put32(p + 8, first_alarm);
	lfm_put16(p + 12, (uint16_t)nrec);
	p[14] = (uint8_t)nalarm;
	p[15] = flags;
}

static int agg_decode(const uint8_t *p, size_t len, struct dnp_svc_msg *m);

int dnp_svc_encode(const struct dnp_svc_msg *m, void *buf, size_t cap)
{
	uint8_t *p = buf;
	size_t len;

	switch (m->type) {
	case DNP_SVC_HEALTH:
		if (m->u.health.nalarm > DNP_SVC_MAX_ALARMS)
			return -EINVAL;
		len = HEALTH_FIXED + ALARM_BYTES * m->u.health.nalarm;
		break;
	case DNP_SVC_ACK:
	case DNP_SVC_STATUS:
		len = HDR + 8u;
		break;
	case DNP_SVC_TEXT:
		if (m->u.text.len > DNP_SVC_TEXT_MAX)
			return -EINVAL;
		len = HDR + m->u.text.len;
		break;
	case DNP_SVC_PAGE:
		if (m->u.page.len > DNP_SVC_PAGE_MAX)
			return -EINVAL;
		len = HDR + DNP_SVC_PAGE_HDR + m->u.page.len;
		break;
	case DNP_SVC_AGG:
		/* The body is taken as it is: build one with dnp_svc_agg_start(). */
		if (m->u.agg.body_len > DNP_SVC_TEXT_MAX - 16u || m->u.agg.nrec > 0xffffu ||
		    m->u.agg.nalarm > DNP_SVC_AGG_MAX_ALARMS)
			return -EINVAL;
		len = AGG_FIXED + m->u.agg.body_len;
		break;
	default:
		return -EINVAL;
	}
	if (cap < len)
		return -ENOBUFS;
	memset(p, 0, len < HEALTH_FIXED ? len : HEALTH_FIXED);
	lfm_put32(p, DNP_SVC_MAGIC);
	p[4] = DNP_SVC_VERSION;
	p[5] = m->type;
	lfm_put32(p + 8, m->node);
	lfm_put32(p + 12, m->seq);
	p += HDR;
	switch (m->type) {
	case DNP_SVC_HEALTH:
		lfm_put64(p, m->u.health.host_status);
		lfm_put64(p + 8, m->u.health.dnp_status);
		lfm_put32(p + 16, m->u.health.flags);
		lfm_put16(p + 20, m->u.health.t_write_ms);
		lfm_put16(p + 22, m->u.health.t_read_ms);
		lfm_put32(p + 24, m->u.health.epoch);
		lfm_put32(p + 28, m->u.health.incarnation);
		p += 32;
		for (unsigned i = 0; i < DNP_LFM_NDIRS; i++, p += 8)
			lfm_put64(p, m->u.health.rfd[i]);
		p[0] = (uint8_t)m->u.health.nalarm;
		p += 8;
		for (unsigned i = 0; i < m->u.health.nalarm; i++, p += ALARM_BYTES) {
			const struct dnp_svc_alarm *a = &m->u.health.alarm[i];

			memset(p, 0, ALARM_BYTES);
			lfm_put32(p, a->id);
			p[4] = a->kind;
			p[5] = a->subject;
			p[6] = a->level;
			lfm_put32(p + 8, a->node);
		}
		break;
	case DNP_SVC_ACK:
		lfm_put32(p, m->u.ack.ack);
		lfm_put32(p + 4, m->u.ack.incarnation);
		break;
	case DNP_SVC_STATUS:
		lfm_put32(p, m->u.status.flags);
		lfm_put32(p + 4, m->u.status.offset);
		break;
	case DNP_SVC_TEXT:
		memcpy(p, m->u.text.text, m->u.text.len);
		break;
	case DNP_SVC_PAGE:
		lfm_put32(p, m->u.page.snap);
		lfm_put32(p + 4, m->u.page.offset);
		lfm_put32(p + 8, m->u.page.total);
		lfm_put32(p + 12, 0);
		memcpy(p + DNP_SVC_PAGE_HDR, m->u.page.text, m->u.page.len);
		break;
	case DNP_SVC_AGG:
		agg_fixed(p, m->u.agg.count, m->u.agg.incarnation, m->u.agg.first_alarm,
			  m->u.agg.nrec, m->u.agg.nalarm, m->u.agg.flags);
		if (m->u.agg.body_len)
			memcpy(p + 16, m->u.agg.body, m->u.agg.body_len);
		break;
	}
	return (int)len;
}

int dnp_svc_decode(const void *buf, size_t len, struct dnp_svc_msg *m)
{
	const uint8_t *p = buf;

	memset(m, 0, sizeof(*m));
	if (len < HDR || lfm_get32(p) != DNP_SVC_MAGIC || p[4] != DNP_SVC_VERSION || p[6] || p[7])
		return -EBADMSG;
	m->type = p[5];
	m->node = lfm_get32(p + 8);
	m->seq = lfm_get32(p + 12);
	p += HDR;
	switch (m->type) {
	case DNP_SVC_HEALTH: {
		unsigned n;

		if (len < HEALTH_FIXED)
			return -EBADMSG;
		n = p[32 + 8 * DNP_LFM_NDIRS];
		if (n > DNP_SVC_MAX_ALARMS || len != HEALTH_FIXED + ALARM_BYTES * n ||
		    !zero(p + 32 + 8 * DNP_LFM_NDIRS + 1, 7))
			return -EBADMSG;
		m->u.health.host_status = lfm_get64(p);
		m->u.health.dnp_status = lfm_get64(p + 8);
		m->u.health.flags = lfm_get32(p + 16);
		m->u.health.t_write_ms = lfm_get16(p + 20);
		m->u.health.t_read_ms = lfm_get16(p + 22);
		m->u.health.epoch = lfm_get32(p + 24);
		m->u.health.incarnation = lfm_get32(p + 28);
		p += 32;
		for (unsigned i = 0; i < DNP_LFM_NDIRS; i++, p += 8)
			m->u.health.rfd[i] = lfm_get64(p);
		p += 8;
		m->u.health.nalarm = n;
		for (unsigned i = 0; i < n; i++, p += ALARM_BYTES) {
			struct dnp_svc_alarm *a = &m->u.health.alarm[i];

			a->id = lfm_get32(p);
			a->kind = p[4];
			a->subject = p[5];
			a->level = p[6];
			a->node = lfm_get32(p + 8);
			if (!a->id || a->kind < 1 || a->kind > DNP_SVC_AL_MAX || a->level > 3 ||
			    p[7] || !zero(p + 12, 4) || a->subject >= 8)
				return -EBADMSG;
		}
		return 0;
	}
	case DNP_SVC_ACK:
	case DNP_SVC_STATUS:
		if (len != HDR + 8u)
			return -EBADMSG;
		if (m->type == DNP_SVC_ACK) {
			m->u.ack.ack = lfm_get32(p);
			m->u.ack.incarnation = lfm_get32(p + 4);
		} else {
			m->u.status.flags = lfm_get32(p);
			m->u.status.offset = lfm_get32(p + 4);
			if (!(m->u.status.flags & DNP_SVC_Q_PAGED) && m->u.status.offset)
				return -EBADMSG;
		}
		return 0;
	case DNP_SVC_TEXT:
		m->u.text.text = (const char *)p;
		m->u.text.len = len - HDR;
		return 0;
	case DNP_SVC_PAGE:
		if (len < HDR + DNP_SVC_PAGE_HDR ||
		    len - HDR - DNP_SVC_PAGE_HDR > DNP_SVC_PAGE_MAX || !zero(p + 12, 4))
			return -EBADMSG;
		m->u.page.snap = lfm_get32(p);
		m->u.page.offset = lfm_get32(p + 4);
		m->u.page.total = lfm_get32(p + 8);
		m->u.page.text = (const char *)p + DNP_SVC_PAGE_HDR;
		m->u.page.len = len - HDR - DNP_SVC_PAGE_HDR;
		if (m->u.page.offset > m->u.page.total ||
		    m->u.page.len > m->u.page.total - m->u.page.offset)
			return -EBADMSG;
		return 0;
	case DNP_SVC_AGG:
		return agg_decode(p, len - HDR, m);
	default:
		return -EBADMSG;
	}
}

void dnp_svc_pages_init(struct dnp_svc_pages *p, uint32_t flags, uint32_t seq)
{
	memset(p, 0, sizeof(*p));
	p->flags = flags | DNP_SVC_Q_PAGED;
	p->seq = seq;
}

int dnp_svc_pages_request(const struct dnp_svc_pages *p, void *buf, size_t cap)
{
	struct dnp_svc_msg q = { .type = DNP_SVC_STATUS, .seq = p->seq };

	q.u.status.flags = p->flags;
	q.u.status.offset = p->got;
	return dnp_svc_encode(&q, buf, cap);
}

int dnp_svc_pages_take(struct dnp_svc_pages *p, const struct dnp_svc_msg *m)
{
	const uint32_t off = m->u.page.offset;

	if (m->type != DNP_SVC_PAGE || m->seq != p->seq)
		return -EBADMSG;
	if (p->started && m->u.page.snap != p->snap) {
		p->started = false; /* rendered anew meanwhile: start over */
		p->got = 0;
		return -EAGAIN;
	}
	if (off != p->got || (p->started && m->u.page.total != p->total))
		return -EBADMSG; /* a late duplicate of a page we have */
	if (!p->started) {
		char *b;

		if (m->u.page.total > DNP_SVC_PICTURE_MAX)
			return -EFBIG;
		b = realloc(p->buf, (size_t)m->u.page.total + 1);
		if (!b)
			return -ENOMEM;
		p->buf = b;
		p->snap = m->u.page.snap;
		p->total = m->u.page.total;
		p->started = true;
	}
	if (!m->u.page.len && p->got < p->total)
		return -EBADMSG; /* no progress */
	memcpy(p->buf + p->got, m->u.page.text, m->u.page.len);
	p->got += (uint32_t)m->u.page.len;
	p->buf[p->got] = 0;
	return p->got == p->total ? 1 : 0;
}

void dnp_svc_pages_fini(struct dnp_svc_pages *p)
{
	free(p->buf);
	p->buf = NULL;
}

bool dnp_svc_ack_mine(const struct dnp_svc_msg *m, uint32_t node, uint32_t incarnation)
{
	return m->type == DNP_SVC_ACK && m->node == node &&
	       (!m->u.ack.incarnation || m->u.ack.incarnation == incarnation);
}

void dnp_svc_watch_ack(struct dnp_svc_watch *w, uint64_t now)
{
	w->heard = true;
	w->last_ack = now;
}

bool dnp_svc_watch_cut(const struct dnp_svc_watch *w, uint64_t now, uint64_t limit)
{
	return w->heard && now > w->last_ack && now - w->last_ack > limit;
}

int dnp_svc_key_parse(const char *hex, struct dnp_svc_key *key)
{
	uint64_t k[2] = { 0, 0 };

	for (unsigned i = 0; i < 32; i++) {
		char ch = hex[i];
		unsigned v = ch >= '0' && ch <= '9' ? (unsigned)(ch - '0') :
			     ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10) :
			     ch >= 'A' && ch <= 'F' ? (unsigned)(ch - 'A' + 10) :
						      16u;

		if (v > 15)
			return -EINVAL;
		k[i / 16] = k[i / 16] << 4 | v;
	}
	if (hex[32] && hex[32] != '\n')
		return -EINVAL;
	key->k[0] = k[0];
	key->k[1] = k[1];
	return 0;
}

int dnp_svc_sign(void *buf, size_t len, size_t cap, const struct dnp_svc_key *key)
{
	uint8_t *p = buf;

	if (len < HDR || p[6])
		return -EBADMSG;
	if (cap < len + DNP_SVC_TAG)
		return -ENOBUFS;
	p[6] = DNP_SVC_F_TAGGED;
	lfm_put64(p + len, dnp_siphash24(key->k, p, len));
	return (int)(len + DNP_SVC_TAG);
}

int dnp_svc_verify(void *buf, size_t len, const struct dnp_svc_key *key)
{
	uint8_t *p = buf;
	uint64_t want, got, diff;

	if (len < HDR + DNP_SVC_TAG || p[6] != DNP_SVC_F_TAGGED)
		return -EACCES;
	len -= DNP_SVC_TAG;
	want = dnp_siphash24(key->k, p, len);
	got = lfm_get64(p + len);
	diff = want ^ got; /* no early exit on the first differing byte */
	if (diff)
		return -EACCES;
	p[6] = 0;
	return (int)len;
}

/* ------------------------------------------------------------------ AGG */

static void agg_alarm_get(const uint8_t *p, struct dnp_svc_agg_alarm *a)
{
	a->from = lfm_get32(p);
	a->kind = p[4];
	a->subject = p[5];
	a->level = p[6];
	a->node = lfm_get32(p + 8);
}

static bool agg_alarm_ok(const struct dnp_svc_agg_alarm *a)
{
	return a->kind >= 1 && a->kind <= DNP_SVC_AL_MAX && a->level <= 3 && a->subject < 8;
}

/* The status word's defined bits in 32 (svc.h) and back. */
static uint32_t agg_dnp_pack(uint64_t w)
{
	return (uint32_t)(w & 0x3ffffffu) | (uint32_t)((w >> 32) & 0x3fu) << 26;
}

static uint64_t agg_dnp_unpack(uint32_t v)
{
	return (uint64_t)(v & 0x3ffffffu) | (uint64_t)(v >> 26) << 32;
}

/* The record at p (avail bytes left): its length, or 0 when it is malformed. */
static size_t agg_rec_get(const uint8_t *p, size_t avail, struct dnp_svc_agg_rec *r)
{
	unsigned mask, k = 0;
	size_t need;

	if (avail < AGG_REC || p[6] & ~(DNP_SVC_F_DNP_ALIVE | DNP_SVC_F_DNP_SEEN) ||
	    p[7] >> DNP_LFM_NDIRS || !zero(p + 9, 3))
		return 0;
	mask = p[7];
	need = AGG_REC + AGG_RFD * (size_t)__builtin_popcount(mask);
	if (avail < need)
		return 0;
	memset(r, 0, sizeof(*r));
	r->node = lfm_get32(p);
	r->age_ms = lfm_get16(p + 4);
	r->flags = p[6];
	r->host_status = p[8];
	r->dnp_status = agg_dnp_unpack(lfm_get32(p + 12));
	for (unsigned d = 0; d < DNP_LFM_NDIRS; d++) {
		if (!(mask & 1u << d))
			continue;
		r->rfd[d] = lfm_get64(p + AGG_REC + AGG_RFD * k++);
		if (!r->rfd[d])
			return 0; /* a named descriptor is never empty: one encoding only */
	}
	return need;
}

/* p: the 16 bytes after the header; len: the bytes from there to the end. */
static int agg_decode(const uint8_t *p, size_t len, struct dnp_svc_msg *m)
{
	const uint8_t *b;
	size_t off = 0, blen;

	if (len < 16u || len > DNP_SVC_TEXT_MAX)
		return -EBADMSG;
	m->u.agg.count = lfm_get32(p);
	m->u.agg.incarnation = lfm_get32(p + 4);
	m->u.agg.first_alarm = lfm_get32(p + 8);
	m->u.agg.nrec = lfm_get16(p + 12);
	m->u.agg.nalarm = p[14];
	m->u.agg.flags = p[15];
	b = p + 16;
	blen = len - 16u;
	if (!m->u.agg.count || (uint64_t)m->node + m->u.agg.count > UINT32_MAX ||
	    !m->u.agg.incarnation || m->u.agg.flags & ~DNP_SVC_AGG_F_DIGEST ||
	    m->u.agg.nalarm > DNP_SVC_AGG_MAX_ALARMS || m->u.agg.nrec > DNP_SVC_AGG_MAX_REC ||
	    !m->u.agg.first_alarm != !m->u.agg.nalarm ||
	    (uint64_t)m->u.agg.first_alarm + m->u.agg.nalarm > (uint64_t)UINT32_MAX + 1u ||
	    blen < (size_t)m->u.agg.nalarm * ALARM_BYTES)
		return -EBADMSG;
	for (unsigned i = 0; i < m->u.agg.nalarm; i++, off += ALARM_BYTES) {
		struct dnp_svc_agg_alarm a;

		agg_alarm_get(b + off, &a);
		if (!agg_alarm_ok(&a) || b[off + 7] || !zero(b + off + 12, 4) || a.from < m->node ||
		    a.from - m->node >= m->u.agg.count)
			return -EBADMSG;
	}
	for (unsigned i = 0; i < m->u.agg.nrec; i++) {
		struct dnp_svc_agg_rec r;
		size_t n = agg_rec_get(b + off, blen - off, &r);

		if (!n || r.node < m->node || r.node - m->node >= m->u.agg.count)
			return -EBADMSG;
		off += n;
	}
	if (off != blen)
		return -EBADMSG;
	m->u.agg.body = b;
	m->u.agg.body_len = blen;
	return 0;
}

int dnp_svc_agg_start(struct dnp_svc_agg_writer *w, void *buf, size_t cap, uint32_t first,
		      uint32_t count, uint32_t seq, uint32_t incarnation, uint32_t first_alarm,
		      uint8_t flags)
{
	uint8_t *p = buf;

	if (!count || (uint64_t)first + count > UINT32_MAX || !incarnation ||
	    flags & ~DNP_SVC_AGG_F_DIGEST)
		return -EINVAL;
	if (cap < AGG_FIXED)
		return -ENOBUFS;
	memset(w, 0, sizeof(*w));
	w->buf = buf;
	w->cap = cap < HDR + DNP_SVC_TEXT_MAX ? cap : HDR + DNP_SVC_TEXT_MAX;
	w->len = AGG_FIXED;
	w->first = first;
	w->count = count;
	memset(p, 0, AGG_FIXED);
	lfm_put32(p, DNP_SVC_MAGIC);
	p[4] = DNP_SVC_VERSION;
	p[5] = DNP_SVC_AGG;
	lfm_put32(p + 8, first);
	lfm_put32(p + 12, seq);
	agg_fixed(p + HDR, count, incarnation, first_alarm, 0, 0, flags);
	return 0;
}

int dnp_svc_agg_add_alarm(struct dnp_svc_agg_writer *w, const struct dnp_svc_agg_alarm *a)
{
	uint8_t *p = w->buf + w->len;

	if (w->nrec || !agg_alarm_ok(a) || !lfm_get32(w->buf + HDR + 8) || a->from < w->first ||
	    a->from - w->first >= w->count)
		return -EINVAL;
	if (w->nalarm == DNP_SVC_AGG_MAX_ALARMS || w->cap - w->len < ALARM_BYTES)
		return -ENOBUFS;
	memset(p, 0, ALARM_BYTES);
	lfm_put32(p, a->from);
	p[4] = a->kind;
	p[5] = a->subject;
	p[6] = a->level;
	lfm_put32(p + 8, a->node);
	w->len += ALARM_BYTES;
	w->nalarm++;
	return 0;
}

int dnp_svc_agg_add_rec(struct dnp_svc_agg_writer *w, const struct dnp_svc_agg_rec *r)
{
	uint8_t *p = w->buf + w->len;
	unsigned mask = 0, k = 0;
	size_t need;

	if (r->node < w->first || r->node - w->first >= w->count ||
	    r->flags & ~(DNP_SVC_F_DNP_ALIVE | DNP_SVC_F_DNP_SEEN) ||
	    r->dnp_status & ~DNP_SVC_AGG_DNP_MASK)
		return -EINVAL;
	for (unsigned d = 0; d < DNP_LFM_NDIRS; d++)
		mask |= r->rfd[d] ? 1u << d : 0u;
	need = AGG_REC + AGG_RFD * (size_t)__builtin_popcount(mask);
	if (w->nrec == DNP_SVC_AGG_MAX_REC || w->cap - w->len < need)
		return -ENOBUFS;
	memset(p, 0, AGG_REC);
	lfm_put32(p, r->node);
	lfm_put16(p + 4, r->age_ms);
	p[6] = r->flags;
	p[7] = (uint8_t)mask;
	p[8] = r->host_status;
	lfm_put32(p + 12, agg_dnp_pack(r->dnp_status));
	for (unsigned d = 0; d < DNP_LFM_NDIRS; d++)
		if (r->rfd[d])
			lfm_put64(p + AGG_REC + AGG_RFD * k++, r->rfd[d]);
	w->len += need;
	w->nrec++;
	return 0;
}

size_t dnp_svc_agg_finish(struct dnp_svc_agg_writer *w)
{
	uint8_t *p = w->buf + HDR;

	lfm_put16(p + 12, (uint16_t)w->nrec);
	p[14] = (uint8_t)w->nalarm;
	if (!w->nalarm)
		lfm_put32(p + 8, 0); /* no alarm carried: no first id (one encoding only) */
	return w->len;
}

void dnp_svc_agg_alarm(const struct dnp_svc_msg *m, unsigned i, struct dnp_svc_agg_alarm *a)
{
	agg_alarm_get(m->u.agg.body + (size_t)i * ALARM_BYTES, a);
}

bool dnp_svc_agg_rec_next(const struct dnp_svc_msg *m, size_t *off, struct dnp_svc_agg_rec *r)
{
	size_t n;

	if (*off < (size_t)m->u.agg.nalarm * ALARM_BYTES)
		*off = (size_t)m->u.agg.nalarm * ALARM_BYTES;
	if (*off >= m->u.agg.body_len)
		return false;
	n = agg_rec_get(m->u.agg.body + *off, m->u.agg.body_len - *off, r);
	if (!n)
		return false;
	*off += n;
	return true;
}
