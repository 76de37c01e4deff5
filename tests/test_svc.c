/* SPDX-License-Identifier: MIT */
/* The service-network protocol's AGG, a group supervisor's report to the top (lofamo/core/svc.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "svc.h"

/* An AGG of group 16..31 with two alarms and three records (one with two RFDs). */
static int agg_sample(uint8_t *buf, size_t cap, struct dnp_svc_agg_rec rec[3])
{
	struct dnp_svc_agg_writer w;
	struct dnp_svc_agg_alarm al[2] = {
		{ .from = 17, .kind = DNP_SVC_AL_DNP, .level = 1, .node = 17 },
		{ .from = 31, .kind = DNP_SVC_AL_REMOTE, .subject = 4, .level = 2, .node = 47 },
	};

	rec[0] = (struct dnp_svc_agg_rec){ .node = 16,
					   .age_ms = 12,
					   .flags = DNP_SVC_F_DNP_ALIVE | DNP_SVC_F_DNP_SEEN,
					   .host_status = 0x21,
					   .dnp_status = 0x155555 | 0x3full << 32 };
	rec[1] = (struct dnp_svc_agg_rec){ .node = 17,
					   .age_ms = 65535,
					   .flags = DNP_SVC_F_DNP_SEEN };
	rec[2] = (struct dnp_svc_agg_rec){ .node = 31, .dnp_status = 0x3000000 };
	rec[2].rfd[1] = dnp_lfm_rfd_make(DNP_LFM_RFD_HOST_OMISSION, 0x3, 47, 9);
	rec[2].rfd[5] = dnp_lfm_rfd_make(DNP_LFM_RFD_HOST_PERIPHERY, 0x8, 15, 1);
	assert_int_equal(dnp_svc_agg_start(&w, buf, cap, 16, 16, 7, 0xabcdef01u, 41, 0), 0);
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(dnp_svc_agg_add_alarm(&w, &al[i]), 0);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(dnp_svc_agg_add_rec(&w, &rec[i]), 0);
	/* an alarm after a record, a record outside the group: refused */
	assert_int_equal(dnp_svc_agg_add_alarm(&w, &al[0]), -EINVAL);
	assert_int_equal(dnp_svc_agg_add_rec(&w, &(struct dnp_svc_agg_rec){ .node = 32 }), -EINVAL);
	assert_int_equal(dnp_svc_agg_add_rec(&w, &(struct dnp_svc_agg_rec){ .node = 15 }), -EINVAL);
	assert_int_equal(
		dnp_svc_agg_add_rec(
			&w, &(struct dnp_svc_agg_rec){ .node = 20, .dnp_status = 1ull << 40 }),
		-EINVAL);
	return (int)dnp_svc_agg_finish(&w);
}

/* Every field through the wire and back; the bytes re-encode the same. */
static void test_svc_agg_roundtrip(void **state)
{
	struct dnp_svc_agg_rec rec[3], r;
	struct dnp_svc_agg_alarm a;
	struct dnp_svc_msg m;
	uint8_t buf[1024], again[1024];
	size_t off = 0;
	unsigned i = 0;
	int n;

	(void)state;
	n = agg_sample(buf, sizeof(buf), rec);
	/* 32 fixed + 2 x 16 alarms + 3 x 16 records + 2 x 8 RFDs */
	assert_int_equal(n, 32 + 32 + 48 + 16);
	assert_int_equal(dnp_svc_decode(buf, (size_t)n, &m), 0);
	assert_int_equal(m.type, DNP_SVC_AGG);
	assert_int_equal(m.node, 16);
	assert_int_equal(m.seq, 7);
	assert_int_equal(m.u.agg.count, 16);
	assert_int_equal(m.u.agg.incarnation, 0xabcdef01u);
	assert_int_equal(m.u.agg.first_alarm, 41);
	assert_int_equal(m.u.agg.nalarm, 2);
	assert_int_equal(m.u.agg.nrec, 3);
	dnp_svc_agg_alarm(&m, 1, &a);
	assert_int_equal(a.from, 31);
	assert_int_equal(a.kind, DNP_SVC_AL_REMOTE);
	assert_int_equal(a.subject, 4);
	assert_int_equal(a.level, 2);
	assert_int_equal(a.node, 47);
	while (dnp_svc_agg_rec_next(&m, &off, &r)) {
		assert_true(i < 3);
		assert_memory_equal(&r, &rec[i], sizeof(r));
		i++;
	}
	assert_int_equal(i, 3);
	assert_int_equal(dnp_svc_encode(&m, again, sizeof(again)), n);
	assert_memory_equal(again, buf, (size_t)n);
}

/* Untrusted bytes: every malformed AGG is refused, none is taken half. */
static void test_svc_agg_rejects(void **state)
{
	struct dnp_svc_agg_rec rec[3];
	struct dnp_svc_msg m;
	uint8_t buf[1024], bad[1024];
	int n;

	(void)state;
	n = agg_sample(buf, sizeof(buf), rec);
	/* each of these single-byte changes breaks one rule */
	static const struct {
		size_t at;
		uint8_t v;
	} cut[] = {
		{ 16, 0 },        /* count 0 (with the next three bytes 0) */
		{ 20, 0 },        /* incarnation 0 (all four bytes) */
		{ 31, 0x80 },     /* flags outside DIGEST */
		{ 30, 65 },       /* more alarms than DNP_SVC_AGG_MAX_ALARMS */
		{ 32 + 4, 9 },    /* alarm kind */
		{ 32 + 7, 1 },    /* alarm reserved byte */
		{ 32 + 0, 3 },    /* alarm from node 3: outside the group */
		{ 64 + 6, 0x10 }, /* record flags */
		{ 64 + 7, 0x40 }, /* RFD mask bit 6 */
		{ 64 + 9, 1 },    /* record reserved byte */
		{ 64 + 0, 40 },   /* record node outside the group */
		{ 64 + 7, 0x01 }, /* an RFD named that is not there: the length is off */
	};
	for (unsigned i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		memcpy(bad, buf, (size_t)n);
		if (cut[i].at == 16)
			memset(bad + 16, 0, 4);
		else if (cut[i].at == 20)
			memset(bad + 20, 0, 4); /* incarnation 0 */
		else
			bad[cut[i].at] = cut[i].v;
		assert_int_equal(dnp_svc_decode(bad, (size_t)n, &m), -EBADMSG);
	}
	/* length: one byte short, one byte long */
	assert_int_equal(dnp_svc_decode(buf, (size_t)n - 1, &m), -EBADMSG);
	memcpy(bad, buf, (size_t)n);
	bad[n] = 0;
	assert_int_equal(dnp_svc_decode(bad, (size_t)n + 1, &m), -EBADMSG);
	/* a named RFD of 0 (two encodings of one record): refused */
	memcpy(bad, buf, (size_t)n);
	memset(bad + (size_t)n - 8, 0, 8);
	assert_int_equal(dnp_svc_decode(bad, (size_t)n, &m), -EBADMSG);
	/* alarms without a first id, or a first id without alarms */
	memcpy(bad, buf, (size_t)n);
	memset(bad + 24, 0, 4);
	assert_int_equal(dnp_svc_decode(bad, (size_t)n, &m), -EBADMSG);
	/* a group reaching past 2^32 */
	memcpy(bad, buf, (size_t)n);
	memset(bad + 8, 0xff, 4);
	assert_int_equal(dnp_svc_decode(bad, (size_t)n, &m), -EBADMSG);
	assert_int_equal(dnp_svc_decode(buf, (size_t)n, &m), 0);
}

/* A writer stops at the datagram limit, and an AGG without alarms has no first id. */
static void test_svc_agg_full(void **state)
{
	static uint8_t buf[DNP_SVC_MAX_DGRAM];
	struct dnp_svc_agg_writer w;
	struct dnp_svc_msg m;
	unsigned n = 0;
	int r;

	(void)state;
	assert_int_equal(dnp_svc_agg_start(&w, buf, sizeof(buf), 0, 4096, 1, 5, 9, 1), 0);
	while ((r = dnp_svc_agg_add_rec(&w, &(struct dnp_svc_agg_rec){ .node = n })) == 0)
		n++;
	assert_int_equal(r, -ENOBUFS);
	assert_int_equal(n, (DNP_SVC_TEXT_MAX - 16u) / 16u);
	r = (int)dnp_svc_agg_finish(&w);
	assert_true(r <= (int)(16u + DNP_SVC_TEXT_MAX));
	assert_int_equal(dnp_svc_decode(buf, (size_t)r, &m), 0);
	assert_int_equal(m.u.agg.nrec, n);
	assert_int_equal(m.u.agg.first_alarm, 0);
	assert_int_equal(m.u.agg.flags, DNP_SVC_AGG_F_DIGEST);
	assert_int_equal(dnp_svc_agg_start(&w, buf, sizeof(buf), 0, 0, 1, 5, 0, 0), -EINVAL);
	assert_int_equal(dnp_svc_agg_start(&w, buf, sizeof(buf), 0, 4, 1, 0, 0, 0), -EINVAL);
	assert_int_equal(dnp_svc_agg_start(&w, buf, 31, 0, 4, 1, 5, 0, 0), -ENOBUFS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_svc_agg_roundtrip),
		cmocka_unit_test(test_svc_agg_rejects),
		cmocka_unit_test(test_svc_agg_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
