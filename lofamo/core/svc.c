/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

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
		break;
	case DNP_SVC_STATUS:
		lfm_put32(p, m->u.status.flags);
		break;
	case DNP_SVC_TEXT:
		memcpy(p, m->u.text.text, m->u.text.len);
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
		    !zero(p + 28, 4) || !zero(p + 32 + 8 * DNP_LFM_NDIRS + 1, 7))
			return -EBADMSG;
		m->u.health.host_status = lfm_get64(p);
		m->u.health.dnp_status = lfm_get64(p + 8);
		m->u.health.flags = lfm_get32(p + 16);
		m->u.health.t_write_ms = lfm_get16(p + 20);
		m->u.health.t_read_ms = lfm_get16(p + 22);
		m->u.health.epoch = lfm_get32(p + 24);
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
		if (len != HDR + 8u || !zero(p + 4, 4))
			return -EBADMSG;
		if (m->type == DNP_SVC_ACK)
			m->u.ack.ack = lfm_get32(p);
		else
			m->u.status.flags = lfm_get32(p);
		return 0;
	case DNP_SVC_TEXT:
		m->u.text.text = (const char *)p;
		m->u.text.len = len - HDR;
		return 0;
	default:
		return -EBADMSG;
	}
}
