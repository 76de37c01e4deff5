/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the hierarchy of supervisors (svc.h AGG, sup.h):
 * the input is a series of datagrams (2-byte little-endian length, then the
 * bytes), fed alternately to a group supervisor (nodes 16..31 of a 4x4x4
 * torus; it must refuse AGG and HEALTH from outside its group) and to a top
 * supervisor (it takes AGG and HEALTH). Whatever decodes as an AGG must
 * re-encode to the same bytes, and its records must iterate to the end;
 * every AGG the group then builds must decode and be taken by the top.
 * Nothing may crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_agg(const uint8_t *p, size_t n)
{
	static uint8_t out[DNP_SVC_MAX_DGRAM];
	struct dnp_svc_agg_rec r;
	struct dnp_svc_agg_alarm a;
	struct dnp_svc_msg m;
	size_t off = 0;
	unsigned recs = 0;

	if (dnp_svc_decode(p, n, &m) || m.type != DNP_SVC_AGG)
		return;
	if (dnp_svc_encode(&m, out, sizeof(out)) != (int)n || memcmp(out, p, n))
		abort();
	for (unsigned i = 0; i < m.u.agg.nalarm; i++) {
		dnp_svc_agg_alarm(&m, i, &a);
		if (a.from < m.node || a.from - m.node >= m.u.agg.count)
			abort();
	}
	while (dnp_svc_agg_rec_next(&m, &off, &r)) {
		if (r.node < m.node || r.node - m.node >= m.u.agg.count)
			abort();
		recs++;
	}
	if (recs != m.u.agg.nrec || off != m.u.agg.body_len)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[DNP_SVC_MAX_DGRAM], rep[DNP_SVC_MAX_DGRAM];
	struct dnp_sup_conf c = { .silence_ms = 600 };
	struct dnp_sup *top, *grp;
	uint64_t now = 1000;
	unsigned k = 0;
	int n;

	dnp_torus_init(&c.torus, 4, 4, 4);
	if (dnp_sup_create(&c, 0, &top))
		abort();
	c.group_first = 16;
	c.group_count = 16;
	c.group_incarnation = 7;
	if (dnp_sup_create(&c, 0, &grp))
		abort();
	while (size >= 2) {
		size_t len = (size_t)data[0] | (size_t)data[1] << 8;

		data += 2;
		size -= 2;
		if (len > size)
			len = size;
		check_agg(data, len);
		now += 7;
		if (k++ & 1) {
			(void)dnp_sup_on_msg(top, data, len, now, rep, sizeof(rep));
		} else {
			int r = dnp_sup_on_msg(grp, data, len, now, rep, sizeof(rep));
			struct dnp_svc_msg m;

			if (r == 0 && dnp_svc_decode(data, len, &m) == 0 && m.type == DNP_SVC_AGG)
				abort(); /* a group supervisor never takes an AGG */
		}
		data += len;
		size -= len;
		if (k % 4 == 0)
			dnp_sup_agg_digest(grp);
		while ((n = dnp_sup_agg(grp, now, out, sizeof(out))) > 0) {
			struct dnp_svc_msg a;
			int r;

			check_agg(out, (size_t)n);
			r = dnp_sup_on_msg(top, out, (size_t)n, now, rep, sizeof(rep));
			if (r <= 0 || dnp_svc_decode(rep, (size_t)r, &a))
				abort(); /* the group's own AGG must be taken */
			(void)dnp_sup_agg_ack(grp, &a, now);
		}
		dnp_sup_tick(top, now);
		dnp_sup_tick(grp, now);
	}
	(void)dnp_sup_render(top, DNP_SVC_Q_JSON, now, (char *)out, sizeof(out));
	dnp_sup_destroy(grp);
	dnp_sup_destroy(top);
	return 0;
}
