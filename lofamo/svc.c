/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "svc.h"

#define HDR 16u
#define HEALTH_FIXED (HDR + 32u + 8u * DNP_LFM_NDIRS + 8u)
#define ALARM_BYTES 16u

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}
static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}
static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t get32(const uint8_t *p)
{
	return get16(p) | (uint32_t)get16(p + 2) << 16;
}
static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

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
	put32(p, DNP_SVC_MAGIC);
	p[4] = DNP_SVC_VERSION;
	p[5] = m->type;
	put32(p + 8, m->node);
	put32(p + 12, m->seq);
	p += HDR;
	switch (m->type) {
	case DNP_SVC_HEALTH:
		put64(p, m->u.health.host_status);
		put64(p + 8, m->u.health.dnp_status);
		put32(p + 16, m->u.health.flags);
		put16(p + 20, m->u.health.t_write_ms);
		put16(p + 22, m->u.health.t_read_ms);
		put32(p + 24, m->u.health.epoch);
		p += 32;
		for (unsigned i = 0; i < DNP_LFM_NDIRS; i++, p += 8)
			put64(p, m->u.health.rfd[i]);
		p[0] = (uint8_t)m->u.health.nalarm;
		p += 8;
		for (unsigned i = 0; i < m->u.health.nalarm; i++, p += ALARM_BYTES) {
			const struct dnp_svc_alarm *a = &m->u.health.alarm[i];

			memset(p, 0, ALARM_BYTES);
			put32(p, a->id);
			p[4] = a->kind;
			p[5] = a->subject;
			p[6] = a->level;
			put32(p + 8, a->node);
		}
		break;
	case DNP_SVC_ACK:
		put32(p, m->u.ack.ack);
		break;
	case DNP_SVC_STATUS:
		put32(p, m->u.status.flags);
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
	if (len < HDR || get32(p) != DNP_SVC_MAGIC || p[4] != DNP_SVC_VERSION || p[6] || p[7])
		return -EBADMSG;
	m->type = p[5];
	m->node = get32(p + 8);
	m->seq = get32(p + 12);
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
		m->u.health.host_status = get64(p);
		m->u.health.dnp_status = get64(p + 8);
		m->u.health.flags = get32(p + 16);
		m->u.health.t_write_ms = get16(p + 20);
		m->u.health.t_read_ms = get16(p + 22);
		m->u.health.epoch = get32(p + 24);
		p += 32;
		for (unsigned i = 0; i < DNP_LFM_NDIRS; i++, p += 8)
			m->u.health.rfd[i] = get64(p);
		p += 8;
		m->u.health.nalarm = n;
		for (unsigned i = 0; i < n; i++, p += ALARM_BYTES) {
			struct dnp_svc_alarm *a = &m->u.health.alarm[i];

			a->id = get32(p);
			a->kind = p[4];
			a->subject = p[5];
			a->level = p[6];
			a->node = get32(p + 8);
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
			m->u.ack.ack = get32(p);
		else
			m->u.status.flags = get32(p);
		return 0;
	case DNP_SVC_TEXT:
		m->u.text.text = (const char *)p;
		m->u.text.len = len - HDR;
		return 0;
	default:
		return -EBADMSG;
	}
}
