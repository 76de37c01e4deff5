/* SPDX-License-Identifier: MIT */
/* The service-network protocol and the Fault Supervisor's picture (lofamo/core/svc.h, lofamo/core/sup.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
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

/*
 * Hands the supervisor the HEALTH m with the alarms al[nal] at now. Returns
 * its answer's length (> 0: the answer, decoded, is in *a).
 */
static int feed_health(struct dnp_sup *s, struct dnp_svc_msg *m, const struct dnp_svc_alarm *al,
		       unsigned nal, uint64_t now, struct dnp_svc_msg *a)
{
	uint8_t buf[512], rep[64];
	int n, r;

	m->u.health.nalarm = nal;
	if (nal)
		memcpy(m->u.health.alarm, al, nal * sizeof(*al));
	n = dnp_svc_encode(m, buf, sizeof(buf));
	assert_true(n > 0);
	r = dnp_sup_on_msg(s, buf, (size_t)n, now, rep, sizeof(rep));
	if (r > 0)
		assert_int_equal(dnp_svc_decode(rep, (size_t)r, a), 0);
	return r;
}

static int health(struct dnp_sup *s, uint32_t node, uint64_t now, uint64_t dnp, uint32_t flags,
		  const struct dnp_svc_alarm *al, unsigned nal, uint32_t *ack)
{
	static uint32_t seq;
	struct dnp_svc_msg m = { .type = DNP_SVC_HEALTH, .node = node, .seq = ++seq }, a;
	int r;

	m.u.health.dnp_status = dnp;
	m.u.health.flags = flags;
	r = feed_health(s, &m, al, nal, now, &a);
	if (r > 0) {
		assert_int_equal(a.type, DNP_SVC_ACK);
		if (ack)
			*ack = a.u.ack.ack;
	}
	return r;
}

static const uint32_t ALIVE = DNP_SVC_F_DNP_ALIVE | DNP_SVC_F_DNP_SEEN;

/* The supervisor's picture of node id: its host and its DNP. */
static void assert_node(const struct dnp_sup *s, uint32_t id, int host, int dnp)
{
	assert_int_equal(dnp_sup_node(s, id)->host, host);
	assert_int_equal(dnp_sup_node(s, id)->dnp, dnp);
}

static struct dnp_sup *all_healthy_stall(uint64_t now, uint64_t stall_ms)
{
	struct dnp_sup_conf c = { .silence_ms = 600, .stall_ms = stall_ms };
	struct dnp_sup *s;

	dnp_torus_init(&T, 2, 2, 2);
	c.torus = T;
	assert_int_equal(dnp_sup_create(&c, now, &s), 0);
	for (uint32_t i = 0; i < 8; i++)
		assert_true(health(s, i, now, dnp_word(DNP_LFM_LINK_OK), ALIVE, NULL, 0, NULL) > 0);
	for (uint32_t i = 0; i < 8; i++)
		assert_node(s, i, SUP_H_OK, SUP_D_OK);
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
	assert_node(s, 7, SUP_H_OK, SUP_D_FAULTY);
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
	assert_node(s, 7, SUP_H_FAULTY, SUP_D_OK);
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
	assert_node(s, 7, SUP_H_DEAD, SUP_D_DEAD);
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

/*
 * A clock stepped back 1 s under the supervisor: its callers must give it a
 * monotonic clock (dnp-supervisor does), but even a now that goes back is no
 * silence. Before, every node whose last report was "in the future" turned
 * silent at once (16 false events on the 2x2x2 torus: host silent, dnp
 * unknown). The wall clock only stamps: an offset given to dnp_sup_wall moves
 * the events' times and nothing else.
 */
static void test_sup_clock_step(void **state)
{
	struct dnp_sup *s = all_healthy(1000);
	struct dnp_svc_alarm al = { .id = 1, .kind = DNP_SVC_AL_SENSOR, .level = DNP_LFM_ALARM };
	const struct dnp_sup_event *e;
	uint64_t before;

	(void)state;
	for (uint64_t t = 1000; t < 1600; t += 20) {
		if (t % 100 == 0)
			for (uint32_t i = 0; i < 8; i++)
				health(s, i, t, dnp_word(1), ALIVE, NULL, 0, NULL);
		dnp_sup_tick(s, t);
	}
	before = dnp_sup_nevents(s);
	/* the clock steps back by 1 s and runs on from there */
	for (uint64_t t = 1600; t < 2600; t += 20) {
		if (t % 100 == 0)
			for (uint32_t i = 0; i < 8; i++)
				health(s, i, t - 1000, dnp_word(1), ALIVE, NULL, 0, NULL);
		dnp_sup_tick(s, t - 1000);
		for (uint32_t i = 0; i < 8; i++)
			assert_int_equal(dnp_sup_node(s, i)->host, SUP_H_OK);
	}
	assert_int_equal(dnp_sup_nevents(s), before);
	/* monotonic time, wall clock 1 s behind it: stamps follow the wall clock */
	dnp_sup_wall(s, -1000);
	health(s, 5, 1700, dnp_word(1), ALIVE, &al, 1, NULL);
	e = dnp_sup_event(s, dnp_sup_nevents(s) - 1);
	assert_non_null(e);
	assert_int_equal(e->t_ms, 700);
	dnp_sup_destroy(s);
}

/* A HEALTH of a given sequence number and incarnation, with alarms; returns the ACK. */
static struct dnp_svc_msg health_inc(struct dnp_sup *s, uint32_t node, uint64_t now, uint32_t seq,
				     uint32_t inc, const struct dnp_svc_alarm *al, unsigned nal)
{
	struct dnp_svc_msg m = { .type = DNP_SVC_HEALTH, .node = node, .seq = seq }, a = { 0 };

	m.u.health.dnp_status = dnp_word(1);
	m.u.health.flags = ALIVE;
	m.u.health.incarnation = inc;
	assert_true(feed_health(s, &m, al, nal, now, &a) > 0);
	return a;
}

/*
 * An HFM restarts: its alarm ids count from 1 again. Its first HEALTH
 * carries no alarm (before, that reset nothing and set last.seq low, so the
 * old counter stayed and the new alarms 1..3 were acknowledged as repeats
 * and never logged). Its new incarnation id makes them new; an ACK names
 * the incarnation, and an HFM takes only its own (dnp_svc_ack_mine).
 */
static void test_sup_hfm_restart(void **state)
{
	struct dnp_sup *s = all_healthy(1000);
	struct dnp_svc_alarm al[3];
	struct dnp_svc_msg a;
	uint64_t alarms, msgs, bad;

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		al[i] = (struct dnp_svc_alarm){ .id = i + 1,
						.kind = DNP_SVC_AL_SENSOR,
						.subject = (uint8_t)i,
						.level = DNP_LFM_WARNING };
	for (uint32_t q = 1; q <= 50; q++)
		a = health_inc(s, 6, 1000 + q, q, 0xaaaa, al, 3);
	assert_int_equal(a.u.ack.ack, 3);
	assert_int_equal(a.u.ack.incarnation, 0xaaaa);
	/* more alarms of the first run: 4..5 */
	al[0].id = 4;
	al[1].id = 5;
	a = health_inc(s, 6, 1100, 51, 0xaaaa, al, 2);
	assert_int_equal(a.u.ack.ack, 5);
	dnp_sup_counts(s, &msgs, &alarms, &bad);
	assert_int_equal(alarms, 5);
	/* restarted: a plain HEALTH first, then its alarms 1..2 */
	a = health_inc(s, 6, 1200, 1, 0xbbbb, NULL, 0);
	assert_int_equal(a.u.ack.incarnation, 0xbbbb);
	assert_false(dnp_svc_ack_mine(&a, 6, 0xaaaa));
	assert_true(dnp_svc_ack_mine(&a, 6, 0xbbbb));
	assert_false(dnp_svc_ack_mine(&a, 5, 0xbbbb));
	al[0] = (struct dnp_svc_alarm){ .id = 1, .kind = DNP_SVC_AL_DNP, .level = 1 };
	al[1] = (struct dnp_svc_alarm){ .id = 2, .kind = DNP_SVC_AL_DNP, .level = 0 };
	a = health_inc(s, 6, 1210, 2, 0xbbbb, al, 2);
	assert_int_equal(a.u.ack.ack, 2);
	dnp_sup_counts(s, &msgs, &alarms, &bad);
	assert_int_equal(alarms, 7);
	assert_true(logged(s, 6, "alarm dnp omission", SUP_P_SERVICE));
	assert_true(logged(s, 6, "alarm dnp back", SUP_P_SERVICE));
	dnp_sup_destroy(s);
}

/*
 * The HFM's view of the service network: a supervisor that starts late is
 * not a cut (before, an HFM that had never heard one raised the svcnet
 * alarm T_read + T_write after its own start); once heard, silence for
 * longer than the limit is.
 */
static void test_svc_watch_late_supervisor(void **state)
{
	struct dnp_svc_watch w = { 0 };

	(void)state;
	assert_false(dnp_svc_watch_cut(&w, 10000, 350));
	dnp_svc_watch_ack(&w, 10000);
	assert_false(dnp_svc_watch_cut(&w, 10350, 350));
	assert_true(dnp_svc_watch_cut(&w, 10351, 350));
	assert_false(dnp_svc_watch_cut(&w, 9000, 350)); /* a time before the ACK: no age */
}

/*
 * A tiny JSON checker (RFC 8259 grammar, no number or escape subtleties
 * beyond what the picture uses): returns the position after one value, or
 * NULL when the text is not JSON there.
 */
static const char *json_value(const char *p);

static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\' && !*++p)
			return NULL;
		p++;
	}
	return *p == '"' ? p + 1 : NULL;
}

static const char *json_list(const char *p, char close, bool members)
{
	p = json_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (members) {
			p = json_string(json_ws(p));
			if (!p || *(p = json_ws(p)) != ':')
				return NULL;
			p++;
		}
		p = json_value(p);
		if (!p)
			return NULL;
		p = json_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static const char *json_value(const char *p)
{
	p = json_ws(p);
	if (*p == '{')
		return json_list(p, '}', true);
	if (*p == '[')
		return json_list(p, ']', false);
	if (*p == '"')
		return json_string(p);
	if (*p == '-' || (*p >= '0' && *p <= '9')) {
		p += *p == '-';
		while ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' ||
		       *p == '+' || *p == '-')
			p++;
		return p;
	}
	for (const char *lit = "true\0false\0null\0"; *lit; lit += strlen(lit) + 1)
		if (!strncmp(p, lit, strlen(lit)))
			return p + strlen(lit);
	return NULL;
}

static bool json_ok(const char *text)
{
	const char *end = json_value(text);

	return end && !*json_ws(end);
}

/*
 * The picture of an all-healthy 16x16x16 torus (4096 nodes, about 1 MB of
 * JSON): asked whole, the answer no longer ends mid-token (before, it was
 * cut at 60,000 bytes: invalid JSON from about 150 nodes on); asked in
 * pages, it arrives whole, byte for byte the rendering, valid JSON.
 */
static void test_sup_picture_paged(void **state)
{
	static uint8_t buf[DNP_SVC_MAX_DGRAM];
	struct dnp_sup_conf c = { .silence_ms = 600 };
	struct dnp_svc_msg q = { .type = DNP_SVC_STATUS, .seq = 7 }, a;
	struct dnp_svc_pages pg;
	struct dnp_sup *s;
	char *whole;
	size_t len;
	unsigned pages = 0;
	int r;

	(void)state;
	dnp_torus_init(&c.torus, 16, 16, 16);
	assert_int_equal(dnp_sup_create(&c, 1000, &s), 0);
	for (uint32_t i = 0; i < 4096; i++) {
		uint8_t h[512], rep[64];
		struct dnp_svc_msg m = { .type = DNP_SVC_HEALTH, .node = i, .seq = 1 };

		m.u.health.dnp_status = dnp_word(1);
		m.u.health.flags = ALIVE;
		r = dnp_svc_encode(&m, h, sizeof(h));
		assert_true(dnp_sup_on_msg(s, h, (size_t)r, 1000, rep, sizeof(rep)) > 0);
	}
	/* whole: one TEXT, still valid JSON */
	q.u.status.flags = DNP_SVC_Q_JSON;
	r = dnp_sup_on_status(s, &q, 1010, buf, sizeof(buf));
	assert_true(r > 0);
	assert_int_equal(dnp_svc_decode(buf, (size_t)r, &a), 0);
	assert_int_equal(a.type, DNP_SVC_TEXT);
	{
		char *t = strndup(a.u.text.text, a.u.text.len);

		assert_true(json_ok(t));
		assert_non_null(strstr(t, "\"error\""));
		free(t);
	}
	/* in pages: the whole rendering */
	dnp_svc_pages_init(&pg, DNP_SVC_Q_JSON, 9);
	do {
		struct dnp_svc_msg qq;

		r = dnp_svc_pages_request(&pg, buf, sizeof(buf));
		assert_true(r > 0);
		assert_int_equal(dnp_svc_decode(buf, (size_t)r, &qq), 0);
		r = dnp_sup_on_status(s, &qq, 1020, buf, sizeof(buf));
		assert_true(r > 0 && r <= (int)DNP_SVC_MAX_DGRAM);
		assert_int_equal(dnp_svc_decode(buf, (size_t)r, &a), 0);
		r = dnp_svc_pages_take(&pg, &a);
		assert_true(r >= 0);
		pages++;
	} while (r == 0);
	assert_true(pages > 10);
	assert_int_equal(dnp_sup_render_all(s, DNP_SVC_Q_JSON, 1020, &whole, &len), 0);
	assert_int_equal(pg.got, len);
	assert_memory_equal(pg.buf, whole, len);
	assert_true(json_ok(pg.buf));
	assert_non_null(strstr(pg.buf, "\"healthy\":4096"));
	/* a page of a new snapshot starts the assembly over */
	pg.started = true;
	pg.snap += 1000;
	a.u.page.offset = 0;
	assert_int_equal(dnp_svc_pages_take(&pg, &a), -EAGAIN);
	assert_int_equal(pg.got, 0);
	dnp_svc_pages_fini(&pg);
	free(whole);
	/* the map of 4096 nodes still fits one datagram: whole */
	q.u.status.flags = 0;
	r = dnp_sup_on_status(s, &q, 1030, buf, sizeof(buf));
	assert_int_equal(dnp_svc_decode(buf, (size_t)r, &a), 0);
	assert_int_equal(dnp_sup_render_all(s, 0, 1030, &whole, &len), 0);
	assert_int_equal(a.u.text.len, len);
	assert_memory_equal(a.u.text.text, whole, len);
	assert_non_null(strstr(whole, "4096 of 4096 nodes healthy"));
	free(whole);
	dnp_sup_destroy(s);
}

/*
 * The cluster key (docs/security.md, "The service network"): a signed HEALTH
 * verifies under its key only, any changed byte breaks it, an unsigned one is
 * refused, and a signed one is not taken by dnp_svc_decode before its tag was
 * checked. A replayed HEALTH of the same HFM incarnation is dropped.
 */
static void test_svc_signed(void **state)
{
	struct dnp_svc_key key, other;
	struct dnp_svc_msg m = { .type = DNP_SVC_HEALTH, .node = 2, .seq = 9 }, back;
	uint8_t buf[512], copy[512];
	int n, s;

	(void)state;
	assert_int_equal(dnp_svc_key_parse("000102030405060708090a0b0c0d0e0f\n", &key), 0);
	assert_int_equal(dnp_svc_key_parse("000102030405060708090a0b0c0d0e1f", &other), 0);
	assert_int_equal(dnp_svc_key_parse("00010203", &other), -EINVAL);
	assert_int_equal(dnp_svc_key_parse("000102030405060708090a0b0c0d0eXf", &other), -EINVAL);
	assert_int_equal(dnp_svc_key_parse("000102030405060708090a0b0c0d0e1f", &other), 0);
	m.u.health.incarnation = 77;
	n = dnp_svc_encode(&m, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(dnp_svc_verify(buf, (size_t)n, &key), -EACCES); /* unsigned */
	s = dnp_svc_sign(buf, (size_t)n, sizeof(buf), &key);
	assert_int_equal(s, n + (int)DNP_SVC_TAG);
	assert_int_equal(dnp_svc_decode(buf, (size_t)s, &back), -EBADMSG); /* not verified yet */
	memcpy(copy, buf, (size_t)s);
	assert_int_equal(dnp_svc_verify(copy, (size_t)s, &other), -EACCES);
	for (int i = 0; i < s; i++) {
		memcpy(copy, buf, (size_t)s);
		copy[i] ^= 0x10;
		assert_int_equal(dnp_svc_verify(copy, (size_t)s, &key), -EACCES);
	}
	assert_int_equal(dnp_svc_verify(buf, (size_t)s, &key), n);
	assert_int_equal(dnp_svc_decode(buf, (size_t)n, &back), 0);
	assert_int_equal(back.u.health.incarnation, 77);
	assert_int_equal(dnp_svc_sign(buf, (size_t)n, (size_t)n + 4, &key), -ENOBUFS);
	/* replay: the same HEALTH again is not newer than the last one */
	{
		struct dnp_sup *sp = all_healthy(1000);
		uint8_t rep[64];

		n = dnp_svc_encode(&m, buf, sizeof(buf));
		assert_true(dnp_sup_on_msg(sp, buf, (size_t)n, 1010, rep, sizeof(rep)) > 0);
		assert_int_equal(dnp_sup_on_msg(sp, buf, (size_t)n, 1020, rep, sizeof(rep)),
				 -EALREADY);
		m.seq++;
		n = dnp_svc_encode(&m, buf, sizeof(buf));
		assert_true(dnp_sup_on_msg(sp, buf, (size_t)n, 1030, rep, sizeof(rep)) > 0);
		dnp_sup_destroy(sp);
	}
}

/* ------------------------------------------------------------ hierarchy */

/* A group supervisor of nodes first..first+count-1 of the 2x2x2 torus T. */
static struct dnp_sup *group_sup(uint32_t first, uint32_t count, uint32_t inc, uint64_t now)
{
	struct dnp_sup_conf c = { .torus = T,
				  .silence_ms = 600,
				  .group_first = first,
				  .group_count = count,
				  .group_incarnation = inc };
	struct dnp_sup *s;

	assert_int_equal(dnp_sup_create(&c, now, &s), 0);
	return s;
}

/*
 * Every AGG the group has for the top, delivered; the top's ACKs back.
 * Returns the number of node records carried (AGGs in *naggs).
 */
static unsigned pump(struct dnp_sup *g, struct dnp_sup *top, uint64_t now, unsigned *naggs)
{
	static uint8_t buf[DNP_SVC_MAX_DGRAM];
	unsigned recs = 0, aggs = 0;
	uint8_t rep[64];
	int n;

	while ((n = dnp_sup_agg(g, now, buf, sizeof(buf))) > 0) {
		struct dnp_svc_msg m, a;
		int r;

		assert_int_equal(dnp_svc_decode(buf, (size_t)n, &m), 0);
		recs += m.u.agg.nrec;
		aggs++;
		r = dnp_sup_on_msg(top, buf, (size_t)n, now, rep, sizeof(rep));
		assert_true(r > 0);
		assert_int_equal(dnp_svc_decode(rep, (size_t)r, &a), 0);
		assert_int_equal(dnp_sup_agg_ack(g, &a, now), 0);
	}
	assert_int_equal(n, 0);
	if (naggs)
		*naggs = aggs;
	return recs;
}

static bool healthy_node(const struct dnp_sup *s, uint32_t i)
{
	return dnp_sup_node(s, i)->host == SUP_H_OK && dnp_sup_node(s, i)->dnp == SUP_D_OK;
}

/*
 * A 2x2x2 torus under a top (silence 600 ms) and two groups, g[0] of nodes
 * 0-3 and g[1] of 4-7; with 'heard', every node's HEALTH reached its group
 * at time 0.
 */
static struct dnp_sup *hier_setup(struct dnp_sup *g[2], bool heard)
{
	struct dnp_sup_conf tc = { .silence_ms = 600 };
	struct dnp_sup *top;

	dnp_torus_init(&T, 2, 2, 2);
	tc.torus = T;
	assert_int_equal(dnp_sup_create(&tc, 0, &top), 0);
	g[0] = group_sup(0, 4, 11, 0);
	g[1] = group_sup(4, 4, 22, 0);
	for (uint32_t i = 0; heard && i < 8; i++)
		assert_true(health(g[i / 4], i, 0, dnp_word(1), ALIVE, NULL, 0, NULL) > 0);
	return top;
}

static void hier_teardown(struct dnp_sup *top, struct dnp_sup *g[2])
{
	dnp_sup_destroy(g[0]);
	dnp_sup_destroy(g[1]);
	dnp_sup_destroy(top);
}

/*
 * Two groups (nodes 0-3, 4-7) and a top: the top's picture is the merge, a
 * change travels alone (one record), the digest carries every node heard,
 * alarms reach the top's log once and are not resent once acknowledged.
 */
static void test_sup_hier_merge(void **state)
{
	struct dnp_sup *g[2], *top = hier_setup(g, false);
	struct dnp_svc_alarm al = { .id = 1, .kind = DNP_SVC_AL_DNP, .level = 1 };
	struct dnp_sup_group gi;
	uint8_t buf[512], rep[64];
	unsigned aggs;

	(void)state;
	/* a group takes its own nodes only */
	assert_int_equal(health(g[0], 4, 10, dnp_word(1), ALIVE, NULL, 0, NULL), -ERANGE);
	for (uint32_t i = 0; i < 8; i++)
		assert_true(health(g[i / 4], i, 10, dnp_word(1), ALIVE, NULL, 0, NULL) > 0);
	assert_int_equal(pump(g[0], top, 20, &aggs), 4);
	assert_int_equal(aggs, 1);
	assert_int_equal(pump(g[1], top, 20, NULL), 4);
	for (uint32_t i = 0; i < 8; i++)
		assert_true(healthy_node(top, i));
	/* the same news again: nothing to send */
	for (uint32_t i = 0; i < 8; i++)
		assert_true(health(g[i / 4], i, 110, dnp_word(1), ALIVE, NULL, 0, NULL) > 0);
	assert_int_equal(pump(g[0], top, 120, &aggs), 0);
	assert_int_equal(aggs, 0);
	/* node 6's DNP misses its watchdog: one record, and the alarm, reach the top */
	assert_true(health(g[1], 6, 130, 0, DNP_SVC_F_DNP_SEEN, &al, 1, NULL) > 0);
	assert_int_equal(pump(g[1], top, 140, NULL), 1);
	assert_int_equal(dnp_sup_node(top, 6)->dnp, SUP_D_FAULTY);
	assert_true(logged(top, 6, "dnp faulty", SUP_P_SERVICE));
	assert_true(logged(top, 6, "alarm dnp omission", SUP_P_SERVICE));
	/* acknowledged: a digest resends the nodes, not the alarm */
	dnp_sup_agg_digest(g[1]);
	{
		uint64_t before = dnp_sup_nevents(top);

		assert_int_equal(pump(g[1], top, 150, NULL), 4);
		assert_int_equal(dnp_sup_nevents(top), before);
	}
	/* the same AGG twice (a replay) is refused */
	assert_true(health(g[0], 1, 160, dnp_word(2), ALIVE, NULL, 0, NULL) > 0);
	{
		int n = dnp_sup_agg(g[0], 170, buf, sizeof(buf));

		assert_true(n > 0);
		assert_true(dnp_sup_on_msg(top, buf, (size_t)n, 170, rep, sizeof(rep)) > 0);
		assert_int_equal(dnp_sup_on_msg(top, buf, (size_t)n, 170, rep, sizeof(rep)),
				 -EALREADY);
		/* and a group supervisor takes no AGG */
		assert_int_equal(dnp_sup_on_msg(g[1], buf, (size_t)n, 170, rep, sizeof(rep)),
				 -EPROTO);
	}
	assert_int_equal(dnp_sup_node(top, 1)->link[0], DNP_LFM_LINK_SICK);
	assert_true(dnp_sup_group(top, 1, &gi));
	assert_int_equal(gi.first, 4);
	assert_int_equal(gi.count, 4);
	assert_false(dnp_sup_group(top, 2, &gi));
	hier_teardown(top, g);
}

/*
 * A group supervisor that stops: the top logs the group silent and its
 * nodes turn silent (never healthy on stale news), the other group's stay
 * healthy. A node's silence counts from when its group heard it (age_ms),
 * not from when the AGG came.
 */
static void test_sup_hier_group_silent(void **state)
{
	struct dnp_sup *g[2], *top = hier_setup(g, true);
	struct dnp_sup_group gi;

	(void)state;
	/* group 1's first report comes 400 ms after it heard its nodes */
	pump(g[0], top, 0, NULL);
	pump(g[1], top, 400, NULL);
	for (uint32_t i = 0; i < 8; i++)
		assert_true(healthy_node(top, i));
	/* group 0 goes on (its nodes report, digests every 200 ms); group 1 is dead */
	for (uint64_t t = 100; t <= 1600; t += 100) {
		for (uint32_t i = 0; i < 4; i++)
			assert_true(health(g[0], i, t, dnp_word(1), ALIVE, NULL, 0, NULL) > 0);
		if (t % 200 == 0)
			dnp_sup_agg_digest(g[0]);
		pump(g[0], top, t, NULL);
		dnp_sup_tick(top, t);
		if (t == 600) /* 600 ms after group 1 heard them, 200 after its AGG */
			for (uint32_t i = 4; i < 8; i++)
				assert_int_equal(dnp_sup_node(top, i)->host, SUP_H_SILENT);
	}
	for (uint32_t i = 0; i < 4; i++)
		assert_true(healthy_node(top, i));
	for (uint32_t i = 4; i < 8; i++) {
		assert_int_equal(dnp_sup_node(top, i)->host, SUP_H_SILENT);
		assert_true(logged(top, i, "host silent", SUP_P_SILENCE));
	}
	assert_true(logged(top, 4, "group 4-7 silent", SUP_P_SILENCE));
	assert_true(dnp_sup_group(top, 1, &gi));
	assert_true(gi.silent);
	assert_true(dnp_sup_group(top, 0, &gi));
	assert_false(gi.silent);
	hier_teardown(top, g);
}

/*
 * The top still infers a dead node whose neighbours report through another
 * group: node 3 (group 0) silent, its neighbours 1, 2 (group 0) and 7
 * (group 1) see their links to it broken.
 */
static void test_sup_hier_inference_across_groups(void **state)
{
	struct dnp_sup *g[2], *top = hier_setup(g, true);

	(void)state;
	pump(g[0], top, 0, NULL);
	pump(g[1], top, 0, NULL);
	for (uint64_t t = 100; t <= 1000; t += 100) {
		for (uint32_t i = 0; i < 8; i++) {
			/* in a 2x2x2 torus both links of a pair lead to the same node */
			uint64_t w = i == 1 || i == 2 || i == 7 ? dnp_word(DNP_LFM_LINK_BROKEN) :
								  dnp_word(1);

			if (i != 3)
				assert_true(health(g[i / 4], i, t, w, ALIVE, NULL, 0, NULL) > 0);
		}
		if (t % 200 == 0) { /* unchanged nodes reach the top by the digest only */
			dnp_sup_agg_digest(g[0]);
			dnp_sup_agg_digest(g[1]);
		}
		pump(g[0], top, t, NULL);
		pump(g[1], top, t, NULL);
		dnp_sup_tick(top, t);
	}
	assert_int_equal(dnp_sup_node(top, 3)->host, SUP_H_DEAD);
	assert_int_equal(dnp_sup_node(top, 3)->path, SUP_P_INFERENCE);
	hier_teardown(top, g);
}

/*
 * A tick re-derives only once a report can have turned stale (sup.c,
 * dnp_sup_tick): a node heard again after every report had gone stale must
 * still be called silent exactly one silence period later.
 */
static void test_sup_tick_expiry(void **state)
{
	struct dnp_sup *s = all_healthy(1000);

	(void)state;
	dnp_sup_tick(s, 1599);
	assert_int_equal(dnp_sup_node(s, 0)->host, SUP_H_OK);
	dnp_sup_tick(s, 1600); /* everyone silent: nothing left to expire */
	for (uint32_t i = 0; i < 8; i++)
		assert_int_equal(dnp_sup_node(s, i)->host, SUP_H_SILENT);
	assert_true(health(s, 0, 2100, dnp_word(1), ALIVE, NULL, 0, NULL) > 0);
	assert_int_equal(dnp_sup_node(s, 0)->host, SUP_H_OK);
	dnp_sup_tick(s, 2699);
	assert_int_equal(dnp_sup_node(s, 0)->host, SUP_H_OK);
	dnp_sup_tick(s, 2700);
	assert_int_equal(dnp_sup_node(s, 0)->host, SUP_H_SILENT);
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
		cmocka_unit_test(test_sup_clock_step),
		cmocka_unit_test(test_sup_hfm_restart),
		cmocka_unit_test(test_svc_watch_late_supervisor),
		cmocka_unit_test(test_sup_picture_paged),
		cmocka_unit_test(test_svc_signed),
		cmocka_unit_test(test_sup_tick_expiry),
		cmocka_unit_test(test_sup_hier_merge),
		cmocka_unit_test(test_sup_hier_group_silent),
		cmocka_unit_test(test_sup_hier_inference_across_groups),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
