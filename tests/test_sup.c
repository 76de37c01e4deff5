/* SPDX-License-Identifier: MIT */
/* The service-network protocol and the Fault Supervisor's picture (lofamo/core/svc.h, lofamo/core/sup.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sup.h"

static struct dnp_torus T;

/* A DNP status word with every existing link in state ls (2x2x2: all six exist). */
static uint64_t dnp_word(unsigned ls)
{
	uint64_t w = 0;

	for (unsigned d = 0; d < DNP_LFM_NDIRS; d++)
		w |= (uint64_t)ls << DNP_LFM_DNP_LINK_SHIFT(d);
	return w;
}

static int health(struct dnp_sup *s, uint32_t node, uint64_t now, uint64_t dnp, uint32_t flags,
		  const struct dnp_svc_alarm *al, unsigned nal, uint32_t *ack)
{
	static uint32_t seq;
	struct dnp_svc_msg m = { .type = DNP_SVC_HEALTH, .node = node, .seq = ++seq }, a;
	uint8_t buf[512], rep[64];
	int n, r;

	m.u.health.dnp_status = dnp;
	m.u.health.flags = flags;
	m.u.health.nalarm = nal;
	if (nal)
		memcpy(m.u.health.alarm, al, nal * sizeof(*al));
	n = dnp_svc_encode(&m, buf, sizeof(buf));
	assert_true(n > 0);
	r = dnp_sup_on_msg(s, buf, (size_t)n, now, rep, sizeof(rep));
	if (r > 0) {
		assert_int_equal(dnp_svc_decode(rep, (size_t)r, &a), 0);
		assert_int_equal(a.type, DNP_SVC_ACK);
		if (ack)
			*ack = a.u.ack.ack;
	}
	return r;
}

static const uint32_t ALIVE = DNP_SVC_F_DNP_ALIVE | DNP_SVC_F_DNP_SEEN;

static struct dnp_sup *all_healthy_stall(uint64_t now, uint64_t stall_ms)
{
	struct dnp_sup_conf c = { .silence_ms = 600, .stall_ms = stall_ms };
	struct dnp_sup *s;

	dnp_torus_init(&T, 2, 2, 2);
	c.torus = T;
	assert_int_equal(dnp_sup_create(&c, now, &s), 0);
	for (uint32_t i = 0; i < 8; i++)
		assert_true(health(s, i, now, dnp_word(DNP_LFM_LINK_OK), ALIVE, NULL, 0, NULL) > 0);
	for (uint32_t i = 0; i < 8; i++) {
		assert_int_equal(dnp_sup_node(s, i)->host, SUP_H_OK);
		assert_int_equal(dnp_sup_node(s, i)->dnp, SUP_D_OK);
	}
	return s;
}

static struct dnp_sup *all_healthy(uint64_t now)
{
	return all_healthy_stall(now, 0);
}

static bool logged(const struct dnp_sup *s, uint32_t node, const char *what, unsigned path)
{
	for (uint64_t i = 0; i < dnp_sup_nevents(s); i++) {
		const struct dnp_sup_event *e = dnp_sup_event(s, i);
		if (e && e->node == node && !strcmp(e->what, what) && e->path == path)
			return true;
	}
	return false;
}

static void test_sup_codec_rejects(void **state)
{
	struct dnp_svc_msg m = { .type = DNP_SVC_HEALTH, .node = 3 }, back;
	uint8_t buf[512];
	int n;

	(void)state;
	m.u.health.nalarm = 1;
	m.u.health.alarm[0] = (struct dnp_svc_alarm){
		.id = 1, .kind = DNP_SVC_AL_LINK, .subject = 2, .level = 3
	};
	n = dnp_svc_encode(&m, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(dnp_svc_decode(buf, (size_t)n, &back), 0);
	assert_int_equal(back.u.health.alarm[0].subject, 2);
	assert_int_equal(dnp_svc_decode(buf, (size_t)n - 1, &back), -EBADMSG);
	buf[(size_t)n - 16 + 4] = 99; /* alarm kind */
	assert_int_equal(dnp_svc_decode(buf, (size_t)n, &back), -EBADMSG);
	m.u.health.nalarm = 9;
	assert_int_equal(dnp_svc_encode(&m, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(dnp_svc_encode(&(struct dnp_svc_msg){ .type = DNP_SVC_ACK }, buf, 4),
			 -ENOBUFS);
}

/* Alarms are logged once and acknowledged cumulatively; repeats are not logged again. */
static void test_sup_ack(void **state)
{
	struct dnp_sup *s = all_healthy(1000);
	struct dnp_svc_alarm al[2] = {
		{ .id = 1, .kind = DNP_SVC_AL_SENSOR, .subject = 0, .level = DNP_LFM_ALARM },
		{ .id = 2, .kind = DNP_SVC_AL_DNP, .level = 1 },
	};
	uint64_t before;
	uint32_t ack = 0;

	(void)state;
	health(s, 5, 1010, dnp_word(1), ALIVE, al, 2, &ack);
	assert_int_equal(ack, 2);
	before = dnp_sup_nevents(s);
	health(s, 5, 1020, dnp_word(1), ALIVE, al, 2, &ack);
	assert_int_equal(ack, 2);
	assert_int_equal(dnp_sup_nevents(s), before);
	assert_true(logged(s, 5, "alarm sensor temp alarm", SUP_P_SERVICE));
	dnp_sup_destroy(s);
}

/* The DNP missed its watchdog: its HFM says so over the service network. */
static void test_sup_dnp_faulty_by_service(void **state)
{
	struct dnp_sup *s = all_healthy(1000);

	(void)state;
	health(s, 7, 1100, dnp_word(1), DNP_SVC_F_DNP_SEEN, NULL, 0, NULL);
	assert_int_equal(dnp_sup_node(s, 7)->dnp, SUP_D_FAULTY);
	assert_int_equal(dnp_sup_node(s, 7)->host, SUP_H_OK);
	assert_true(logged(s, 7, "dnp faulty", SUP_P_SERVICE));
	dnp_sup_destroy(s);
}

/* The HFM of node 7 is silent, but a neighbour's DNP got its DIAG: host faulty by relay. */
static void test_sup_relay(void **state)
{
	struct dnp_sup *s = all_healthy(1000);
	struct dnp_svc_msg m = { .type = DNP_SVC_HEALTH, .node = 6, .seq = 1000 };
	uint8_t buf[512], rep[64];
	int n;

	(void)state;
	/* node 6 = (0,1,1) sees node 7 = (1,1,1) in X+ and X- */
	m.u.health.dnp_status = dnp_word(1) | 1ull << (DNP_LFM_DNP_REMOTE_SHIFT + DNP_DIR_XP);
	m.u.health.flags = ALIVE;
	m.u.health.rfd[DNP_DIR_XP] = dnp_lfm_rfd_make(DNP_LFM_RFD_HOST_OMISSION, 0, 7, 1);
	n = dnp_svc_encode(&m, buf, sizeof(buf));
	for (uint32_t i = 0; i < 7; i++)
		if (i != 6)
			health(s, i, 1700, dnp_word(1), ALIVE, NULL, 0, NULL);
	assert_true(dnp_sup_on_msg(s, buf, (size_t)n, 1700, rep, sizeof(rep)) > 0);
	dnp_sup_tick(s, 1700);
	assert_int_equal(dnp_sup_node(s, 7)->host, SUP_H_FAULTY);
	assert_int_equal(dnp_sup_node(s, 7)->dnp, SUP_D_OK);
	assert_int_equal(dnp_sup_node(s, 7)->path, SUP_P_RELAY);
	assert_true(logged(s, 7, "host faulty", SUP_P_RELAY));
	dnp_sup_destroy(s);
}

/* Host and DNP of node 7 silent, every neighbour reports its links to it broken: dead. */
static void test_sup_inference(void **state)
{
	struct dnp_sup *s = all_healthy(1000);
	/* neighbours of 7 = (1,1,1): 6 (X), 5 (Y), 3 (Z); each loses both links to it */
	const struct {
		uint32_t node;
		unsigned d0, d1;
	} nb[3] = {
		{ 6, DNP_DIR_XP, DNP_DIR_XM },
		{ 5, DNP_DIR_YP, DNP_DIR_YM },
		{ 3, DNP_DIR_ZP, DNP_DIR_ZM },
	};

	(void)state;
	for (uint32_t i = 0; i < 7; i++)
		health(s, i, 1500, dnp_word(1), ALIVE, NULL, 0, NULL);
	dnp_sup_tick(s, 1700); /* 7 silent: not dead yet, links fine */
	assert_int_equal(dnp_sup_node(s, 7)->host, SUP_H_SILENT);
	for (unsigned k = 0; k < 2; k++) {
		uint64_t w = dnp_word(1);

		w &= ~(3ull << DNP_LFM_DNP_LINK_SHIFT(nb[k].d0) |
		       3ull << DNP_LFM_DNP_LINK_SHIFT(nb[k].d1));
		w |= 3ull << DNP_LFM_DNP_LINK_SHIFT(nb[k].d0) |
		     3ull << DNP_LFM_DNP_LINK_SHIFT(nb[k].d1);
		health(s, nb[k].node, 1800, w, ALIVE, NULL, 0, NULL);
	}
	dnp_sup_tick(s, 1800);
	assert_int_equal(dnp_sup_node(s, 7)->host,
			 SUP_H_SILENT); /* the Z neighbour still sees it */
	{
		uint64_t w = dnp_word(1);

		w |= 3ull << DNP_LFM_DNP_LINK_SHIFT(nb[2].d0) |
		     3ull << DNP_LFM_DNP_LINK_SHIFT(nb[2].d1);
		health(s, nb[2].node, 1810, w, ALIVE, NULL, 0, NULL);
	}
	dnp_sup_tick(s, 1810);
	assert_int_equal(dnp_sup_node(s, 7)->host, SUP_H_DEAD);
	assert_int_equal(dnp_sup_node(s, 7)->dnp, SUP_D_DEAD);
	assert_true(logged(s, 7, "host dead", SUP_P_INFERENCE));
	assert_int_equal(dnp_sup_node(s, 7)->link[DNP_DIR_XP], DNP_LFM_LINK_BROKEN);
	dnp_sup_destroy(s);
}

/*
 * The supervisor itself off the CPU for 2 s while every HFM kept reporting
 * (their datagrams wait in its socket): the first datagram it then takes
 * must not make the others silent. With the stall rule nobody turns silent;
 * a node that really stopped (7) is declared one silence period after the
 * supervisor came back, not before. Without the rule (stall_ms 0) the same
 * sequence calls node 7's neighbours silent at once.
 */
static void test_sup_own_stall(void **state)
{
	for (int rule = 0; rule < 2; rule++) {
		struct dnp_sup *s = all_healthy_stall(1000, rule ? 100 : 0);
		uint64_t n, ms;

		(void)state;
		health(s, 0, 3000, dnp_word(1), ALIVE, NULL, 0, NULL);
		if (!rule) {
			assert_int_equal(dnp_sup_node(s, 1)->host, SUP_H_SILENT);
			dnp_sup_destroy(s);
			continue;
		}
		for (uint32_t i = 0; i < 8; i++)
			assert_int_equal(dnp_sup_node(s, i)->host, SUP_H_OK);
		dnp_sup_stalls(s, &n, &ms);
		assert_int_equal(n, 1);
		assert_int_equal(ms, 2000);
		/* from now on the supervisor runs every 20 ms; all but 7 report */
		for (uint64_t t = 3000; t <= 3700; t += 20) {
			if (t % 100 == 0)
				for (uint32_t i = 0; i < 7; i++)
					health(s, i, t, dnp_word(1), ALIVE, NULL, 0, NULL);
			dnp_sup_tick(s, t);
			for (uint32_t i = 0; i < 7; i++)
				assert_int_equal(dnp_sup_node(s, i)->host, SUP_H_OK);
			if (t < 3600)
				assert_int_equal(dnp_sup_node(s, 7)->host, SUP_H_OK);
		}
		assert_int_equal(dnp_sup_node(s, 7)->host, SUP_H_SILENT);
		dnp_sup_stalls(s, &n, &ms);
		assert_int_equal(n, 1);
		dnp_sup_destroy(s);
	}
}

static void test_sup_render(void **state)
{
	struct dnp_sup *s = all_healthy(1000);
	char buf[16384];
	size_t n;

	(void)state;
	n = dnp_sup_render(s, DNP_SVC_Q_JSON, 1000, buf, sizeof(buf));
	assert_true(n > 100 && n < sizeof(buf));
	assert_non_null(strstr(buf, "\"healthy\":8"));
	n = dnp_sup_render(s, 0, 1000, buf, sizeof(buf));
	assert_non_null(strstr(buf, "8 of 8 nodes healthy"));
	assert_non_null(strstr(buf, "plane z=1"));
	assert_null(strchr(buf, '\033'));
	n = dnp_sup_render(s, DNP_SVC_Q_COLOUR, 1000, buf, sizeof(buf));
	assert_non_null(strchr(buf, '\033'));
	n = dnp_sup_render(s, 0, 1000, buf, 10);
	assert_int_equal(n, 9);
	dnp_sup_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sup_codec_rejects),
		cmocka_unit_test(test_sup_ack),
		cmocka_unit_test(test_sup_dnp_faulty_by_service),
		cmocka_unit_test(test_sup_relay),
		cmocka_unit_test(test_sup_inference),
		cmocka_unit_test(test_sup_own_stall),
		cmocka_unit_test(test_sup_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
