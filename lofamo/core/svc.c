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

static bool zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

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
