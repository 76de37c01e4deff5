/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for dnp-core/link: start rules, credit models, the RX FIFO
 * model, the credit schedule, sequence/ack/retransmission and liveness.
 *
 * The .c is included (as in wireguard's fuzz harnesses) so that two tests can
 * put the 32-bit counters next to their wrap point without pushing 2^32
 * packets; every other test goes through the public API only.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "link.c"

static struct dnp_link_conf base_conf(void)
{
	struct dnp_link_conf c = {
		.fifo_words = 512,
		.t_red = 506,
		.t_yellow = 256,
		.credit_period = 35,
		.credit_timeout = 0,
		.init_timeout = 0,
		.rto = 100,
		.max_retries = 2,
		.window = 8,
		.nvc = 2,
		.rule = DNP_START_VCT,
		.credit_model = DNP_CREDIT_HW,
	};

	return c;
}

static struct dnp_link *mk(const struct dnp_link_conf *c, uint64_t now)
{
	struct dnp_link *l = NULL;

	assert_int_equal(dnp_link_create(c, now, &l), 0);
	assert_non_null(l);
	return l;
}

static void credit1(struct dnp_link *l, uint32_t occ, uint32_t received, uint64_t now)
{
	/* a peer that counts no buffers (link.h, "Buffer credits") */
	struct dnp_credit_vc cr[DNP_MAX_VC] = {
		{ .occupancy = occ, .received = received, .bufs = DNP_BUFS_NONE },
		{ .bufs = DNP_BUFS_NONE },
	};

	dnp_link_on_credit(l, cr, now);
}

static void test_link_create_rejects_bad_conf(void **state)
{
	struct dnp_link_conf c;
	struct dnp_link *l = NULL;

	(void)state;
	c = base_conf();
	c.t_red = 513;
	assert_int_equal(dnp_link_create(&c, 0, &l), -EINVAL);
	c = base_conf();
	c.t_yellow = 506;
	assert_int_equal(dnp_link_create(&c, 0, &l), -EINVAL);
	c = base_conf();
	c.credit_period = 0;
	assert_int_equal(dnp_link_create(&c, 0, &l), -EINVAL);
	c = base_conf();
	c.rto = 0;
	assert_int_equal(dnp_link_create(&c, 0, &l), -EINVAL);
	c = base_conf();
	c.window = 6;
	assert_int_equal(dnp_link_create(&c, 0, &l), -EINVAL);
	c = base_conf();
	c.window = 131072;
	assert_int_equal(dnp_link_create(&c, 0, &l), -EINVAL);
	c = base_conf();
	c.nvc = 0;
	assert_int_equal(dnp_link_create(&c, 0, &l), -EINVAL);
	c = base_conf();
	c.nvc = DNP_MAX_VC + 1;
	assert_int_equal(dnp_link_create(&c, 0, &l), -EINVAL);
	c = base_conf();
	c.rule = 2;
	assert_int_equal(dnp_link_create(&c, 0, &l), -EINVAL);
	c = base_conf();
	c.credit_model = 2;
	assert_int_equal(dnp_link_create(&c, 0, &l), -EINVAL);
	assert_null(l);
	assert_int_equal(dnp_link_create(NULL, 0, &l), -EINVAL);

	c = base_conf();
	c.window = 65536;
	l = mk(&c, 0);
	assert_int_equal(dnp_link_state(l), DNP_LINK_INIT);
	assert_int_equal(dnp_link_estimate(l, 0), 0);
	dnp_link_destroy(l);
}

/*
 * EURETILE report, torus link: after one 4 KiB packet the space left
 * (506 - 260) is too small for another.
 */
static void test_link_vct_refuses_full_packet(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *l = mk(&c, 0);

	(void)state;
	assert_true(dnp_link_can_start(l, 0, 260));
	dnp_link_commit(l, 0, 260);
	assert_int_equal(dnp_link_estimate(l, 0), 260);
	assert_false(dnp_link_can_start(l, 0, 260)); /* 520 > 506 */
	assert_int_equal(dnp_link_stats(l)->credit_stalls, 1);
	assert_true(dnp_link_can_start(l, 0, 246)); /* 506 <= 506: exact fit */
	assert_false(dnp_link_can_start(l, 0, 247));
	assert_int_equal(dnp_link_stats(l)->credit_stalls, 2);
	/* The other VC is independent. */
	assert_true(dnp_link_can_start(l, 1, 260));
	/* Out-of-range VC never starts. */
	assert_false(dnp_link_can_start(l, 2, 1));
	dnp_link_destroy(l);
}

static void test_link_stop_at_red_stops_and_resumes_below_yellow(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *l;
	unsigned i;

	(void)state;
	c.rule = DNP_START_STOP_AT_RED;
	c.credit_model = DNP_CREDIT_EXACT;
	l = mk(&c, 0);
	/* Word by word: 506 words flow, the 507th does not. */
	for (i = 0; i < 506; i++) {
		assert_true(dnp_link_can_start(l, 0, 1));
		dnp_link_commit(l, 0, 1);
	}
	assert_int_equal(dnp_link_estimate(l, 0), 506);
	assert_false(dnp_link_can_start(l, 0, 1));
	/* All arrived, 300 still in the FIFO: est 300 < t_red but >= t_yellow: still stopped. */
	credit1(l, 300, 506, 10);
	assert_int_equal(dnp_link_estimate(l, 0), 300);
	assert_false(dnp_link_can_start(l, 0, 1));
	credit1(l, 256, 506, 20);
	assert_false(dnp_link_can_start(l, 0, 1)); /* 256 is not < 256 */
	credit1(l, 255, 506, 30);
	assert_int_equal(dnp_link_estimate(l, 0), 255);
	assert_true(dnp_link_can_start(l, 0, 1));
	/* Stops again exactly when est reaches t_red once more. */
	dnp_link_commit(l, 0, 250);
	assert_true(dnp_link_can_start(l, 0, 1));
	dnp_link_commit(l, 0, 1);
	assert_int_equal(dnp_link_estimate(l, 0), 506);
	assert_false(dnp_link_can_start(l, 0, 1));
	dnp_link_destroy(l);
}

static void test_link_stop_at_red_hw_resumes_only_on_fresh_credit(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *l;

	(void)state;
	c.rule = DNP_START_STOP_AT_RED;
	l = mk(&c, 0);
	dnp_link_commit(l, 0, 506);
	assert_false(dnp_link_can_start(l, 0, 1));
	/* Stale: latched before the last 6 words arrived; FIFO looks empty but est stays. */
	credit1(l, 0, 500, 10);
	assert_int_equal(dnp_link_estimate(l, 0), 506);
	assert_false(dnp_link_can_start(l, 0, 1));
	/* Fresh but the FIFO is still above yellow. */
	credit1(l, 400, 506, 20);
	assert_int_equal(dnp_link_estimate(l, 0), 400);
	assert_false(dnp_link_can_start(l, 0, 1));
	credit1(l, 3, 506, 30);
	assert_int_equal(dnp_link_estimate(l, 0), 3);
	assert_true(dnp_link_can_start(l, 0, 1));
	dnp_link_destroy(l);
}

static void test_link_hw_ignores_stale_credit(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *l = mk(&c, 0);

	(void)state;
	dnp_link_commit(l, 0, 260);
	dnp_link_commit(l, 1, 40);
	/* VC0 stale (200 of 260 arrived), VC1 fresh. */
	{
		struct dnp_credit_vc cr[DNP_MAX_VC] = {
			{ .occupancy = 0, .received = 200, .bufs = DNP_BUFS_NONE },
			{ .occupancy = 7, .received = 40, .bufs = DNP_BUFS_NONE },
		};

		dnp_link_on_credit(l, cr, 5);
	}
	assert_int_equal(dnp_link_estimate(l, 0), 260);
	assert_int_equal(dnp_link_estimate(l, 1), 7);
	assert_false(dnp_link_can_start(l, 0, 260));
	/* Fresh: everything arrived, 10 words still queued. */
	credit1(l, 10, 260, 6);
	assert_int_equal(dnp_link_estimate(l, 0), 10);
	assert_true(dnp_link_can_start(l, 0, 260));
	/* A credit latched after more words were sent is stale again. */
	dnp_link_commit(l, 0, 260);
	credit1(l, 0, 260, 7);
	assert_int_equal(dnp_link_estimate(l, 0), 270);
	assert_int_equal(dnp_link_stats(l)->rx_credits, 3);
	dnp_link_destroy(l);
}

static void test_link_exact_accounting(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *l;

	(void)state;
	c.credit_model = DNP_CREDIT_EXACT;
	l = mk(&c, 0);
	dnp_link_commit(l, 0, 300);
	/* 200 arrived, 50 of them still queued, 100 in flight: 150. */
	credit1(l, 50, 200, 1);
	assert_int_equal(dnp_link_estimate(l, 0), 150);
	dnp_link_commit(l, 0, 10);
	assert_int_equal(dnp_link_estimate(l, 0), 160);
	/* An older credit is used too: the bound is still exact. */
	credit1(l, 0, 100, 2);
	assert_int_equal(dnp_link_estimate(l, 0), 210);
	credit1(l, 0, 310, 3);
	assert_int_equal(dnp_link_estimate(l, 0), 0);
	/* A peer ahead of us counts as nothing in flight. */
	credit1(l, 5, 400, 4);
	assert_int_equal(dnp_link_estimate(l, 0), 5);

	/* Word counters wrap: sent = 10 after the wrap, received 5 words before it. */
	l->vc[0].sent = UINT32_MAX - 9;
	dnp_link_commit(l, 0, 20);
	assert_int_equal(l->vc[0].sent, 10);
	credit1(l, 3, UINT32_MAX - 4, 5); /* 15 in flight + 3 queued */
	assert_int_equal(dnp_link_estimate(l, 0), 18);
	dnp_link_destroy(l);
}

static void test_link_fifo_overflow(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *l = mk(&c, 0);

	(void)state;
	assert_int_equal(dnp_link_rx_accept(l, 0, 500), 0);
	assert_int_equal(dnp_link_rx_accept(l, 0, 13), -ENOBUFS);
	assert_int_equal(dnp_link_stats(l)->rx_overflow, 1);
	assert_int_equal(dnp_link_rx_occupancy(l, 0), 500);
	assert_int_equal(dnp_link_rx_accept(l, 0, 12), 0);
	assert_int_equal(dnp_link_rx_occupancy(l, 0), 512);
	assert_int_equal(dnp_link_rx_accept(l, 0, 1), -ENOBUFS);
	assert_int_equal(dnp_link_rx_occupancy(l, 1), 0);
	dnp_link_rx_release(l, 0, 100);
	assert_int_equal(dnp_link_rx_occupancy(l, 0), 412);
	dnp_link_rx_release(l, 0, 1000); /* clamps */
	assert_int_equal(dnp_link_rx_occupancy(l, 0), 0);
	assert_int_equal(dnp_link_rx_accept(l, 2, 1), -EINVAL);
	dnp_link_destroy(l);
}

static void test_link_credit_schedule(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *l = mk(&c, 1000);
	struct dnp_credit_vc cr[DNP_MAX_VC];

	(void)state;
	/* The first credit is due at once. */
	assert_int_equal(dnp_link_next_deadline(l), 1000);
	assert_true(dnp_link_tick(l, 1000) & DNP_LINK_EV_CREDIT_DUE);
	dnp_link_take_credit(l, 1000, cr);
	assert_int_equal(dnp_link_next_deadline(l), 1035);
	assert_false(dnp_link_tick(l, 1034) & DNP_LINK_EV_CREDIT_DUE);
	assert_true(dnp_link_tick(l, 1035) & DNP_LINK_EV_CREDIT_DUE);
	/* Still due until taken. */
	assert_true(dnp_link_tick(l, 1040) & DNP_LINK_EV_CREDIT_DUE);
	/* Taken 5 late: the grid is kept (1070, not 1075). */
	dnp_link_take_credit(l, 1040, cr);
	assert_int_equal(dnp_link_next_deadline(l), 1070);
	/* Taken more than a period late: restart from now. */
	dnp_link_take_credit(l, 1200, cr);
	assert_int_equal(dnp_link_next_deadline(l), 1235);
	/* Taken early: one full period from now. */
	dnp_link_take_credit(l, 1210, cr);
	assert_int_equal(dnp_link_next_deadline(l), 1245);
	assert_int_equal(dnp_link_stats(l)->tx_credits, 4);
	dnp_link_destroy(l);
}

/* HW: the value sent was latched one period before; EXACT: the value now. */
static void test_link_credit_latch_models(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *l;
	struct dnp_credit_vc cr[DNP_MAX_VC];

	(void)state;
	l = mk(&c, 0);
	dnp_link_take_credit(l, 0, cr);
	assert_int_equal(cr[0].occupancy, 0);
	assert_int_equal(cr[0].received, 0);
	assert_int_equal(dnp_link_rx_accept(l, 0, 100), 0);
	assert_int_equal(dnp_link_rx_accept(l, 1, 7), 0);
	dnp_link_take_credit(l, 35, cr); /* latched at 0 */
	assert_int_equal(cr[0].occupancy, 0);
	assert_int_equal(cr[0].received, 0);
	dnp_link_rx_release(l, 0, 40);
	assert_int_equal(dnp_link_rx_accept(l, 0, 5), 0);
	dnp_link_take_credit(l, 70, cr); /* latched at 35 */
	assert_int_equal(cr[0].occupancy, 100);
	assert_int_equal(cr[0].received, 100);
	assert_int_equal(cr[1].occupancy, 7);
	assert_int_equal(cr[1].received, 7);
	dnp_link_take_credit(l, 105, cr); /* latched at 70 */
	assert_int_equal(cr[0].occupancy, 65);
	assert_int_equal(cr[0].received, 105);
	dnp_link_destroy(l);

	c.credit_model = DNP_CREDIT_EXACT;
	l = mk(&c, 0);
	assert_int_equal(dnp_link_rx_accept(l, 0, 100), 0);
	dnp_link_rx_release(l, 0, 30);
	dnp_link_take_credit(l, 0, cr);
	assert_int_equal(cr[0].occupancy, 70);
	assert_int_equal(cr[0].received, 100);
	dnp_link_destroy(l);
}

static void test_link_first_credit_brings_up(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *l = mk(&c, 0);

	(void)state;
	assert_int_equal(dnp_link_state(l), DNP_LINK_INIT);
	dnp_link_stats_rx(l, 3); /* a data frame does not bring the link up */
	assert_int_equal(dnp_link_state(l), DNP_LINK_INIT);
	credit1(l, 0, 0, 10);
	assert_int_equal(dnp_link_state(l), DNP_LINK_UP);
	assert_int_equal(dnp_link_stats(l)->rx_frames, 1);
	assert_int_equal(dnp_link_stats(l)->rx_words, 3);
	dnp_link_stats_tx(l, 260, false);
	dnp_link_stats_tx(l, 260, true);
	assert_int_equal(dnp_link_stats(l)->tx_frames, 2);
	assert_int_equal(dnp_link_stats(l)->tx_words, 520);
	assert_int_equal(dnp_link_stats(l)->tx_retx_frames, 1);
	dnp_link_destroy(l);
}

static void test_link_ack_pops_in_order(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *l = mk(&c, 0);
	int pk[8];
	void *freed[8];
	uint32_t seq = 99;
	unsigned i;

	(void)state;
	for (i = 0; i < 5; i++)
		assert_int_equal(dnp_link_seq_push(l, &pk[i], i), i);
	assert_int_equal(dnp_link_unacked(l), 5);
	assert_int_equal(dnp_link_on_ack(l, 3, freed, 8, 10), 3);
	assert_ptr_equal(freed[0], &pk[0]);
	assert_ptr_equal(freed[1], &pk[1]);
	assert_ptr_equal(freed[2], &pk[2]);
	assert_int_equal(dnp_link_unacked(l), 2);
	assert_ptr_equal(dnp_link_unacked_at(l, 0, &seq), &pk[3]);
	assert_int_equal(seq, 3);
	assert_ptr_equal(dnp_link_unacked_at(l, 1, &seq), &pk[4]);
	assert_int_equal(seq, 4);
	assert_null(dnp_link_unacked_at(l, 2, &seq));
	/* Same ack again: nothing. */
	assert_int_equal(dnp_link_on_ack(l, 3, freed, 8, 11), 0);
	/* max limits each call; call again while it returns max. */
	assert_int_equal(dnp_link_on_ack(l, 5, freed, 1, 12), 1);
	assert_ptr_equal(freed[0], &pk[3]);
	assert_int_equal(dnp_link_on_ack(l, 5, freed, 1, 12), 1);
	assert_ptr_equal(freed[0], &pk[4]);
	assert_int_equal(dnp_link_unacked(l), 0);
	assert_int_equal(dnp_link_on_ack(l, 5, freed, 8, 13), 0);
	dnp_link_destroy(l);
}

static void test_link_ack_outside_window_ignored(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *l = mk(&c, 0);
	int pk[4];
	void *freed[8];
	unsigned i;

	(void)state;
	for (i = 0; i < 4; i++)
		dnp_link_seq_push(l, &pk[i], 0);
	assert_int_equal(dnp_link_on_ack(l, 2, freed, 8, 1), 2);
	/* Behind the oldest (stale) and beyond next_seq (bogus). */
	assert_int_equal(dnp_link_on_ack(l, 1, freed, 8, 2), 0);
	assert_int_equal(dnp_link_on_ack(l, 5, freed, 8, 2), 0);
	assert_int_equal(dnp_link_on_ack(l, UINT32_MAX, freed, 8, 2), 0);
	assert_int_equal(dnp_link_unacked(l), 2);
	assert_int_equal(dnp_link_on_ack(l, 4, freed, 8, 3), 2);
	dnp_link_destroy(l);
}

static void test_link_window_full(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *l;
	int pk[4];
	void *freed[4];

	(void)state;
	c.window = 4;
	l = mk(&c, 0);
	for (unsigned i = 0; i < 4; i++) {
		assert_false(dnp_link_window_full(l));
		dnp_link_seq_push(l, &pk[i], 0);
	}
	assert_true(dnp_link_window_full(l));
	assert_int_equal(dnp_link_on_ack(l, 1, freed, 4, 1), 1);
	assert_false(dnp_link_window_full(l));
	/* The ring index wraps: the next push reuses slot 0. */
	assert_int_equal(dnp_link_seq_push(l, &pk[0], 2), 4);
	assert_ptr_equal(dnp_link_unacked_at(l, 3, NULL), &pk[0]);
	dnp_link_destroy(l);
}

static void test_link_ack_wrap_near_uint32_max(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *l = mk(&c, 0);
	int pk[4];
	void *freed[8];
	uint32_t seq;

	(void)state;
	l->next_seq = UINT32_MAX - 1; /* as after 2^32 - 2 packets */
	assert_int_equal(dnp_link_seq_push(l, &pk[0], 0), UINT32_MAX - 1);
	assert_int_equal(dnp_link_seq_push(l, &pk[1], 0), UINT32_MAX);
	assert_int_equal(dnp_link_seq_push(l, &pk[2], 0), 0);
	assert_int_equal(dnp_link_seq_push(l, &pk[3], 0), 1);
	/* ack UINT32_MAX: pops only the first. */
	assert_int_equal(dnp_link_on_ack(l, UINT32_MAX, freed, 8, 1), 1);
	assert_ptr_equal(freed[0], &pk[0]);
	/* ack 1 (after the wrap): pops UINT32_MAX and 0. */
	assert_int_equal(dnp_link_on_ack(l, 1, freed, 8, 2), 2);
	assert_ptr_equal(freed[0], &pk[1]);
	assert_ptr_equal(freed[1], &pk[2]);
	assert_ptr_equal(dnp_link_unacked_at(l, 0, &seq), &pk[3]);
	assert_int_equal(seq, 1);
	/* Old acks from before the wrap are outside the window. */
	assert_int_equal(dnp_link_on_ack(l, UINT32_MAX - 1, freed, 8, 3), 0);
	assert_int_equal(dnp_link_on_ack(l, 2, freed, 8, 3), 1);
	assert_int_equal(dnp_link_unacked(l), 0);
	dnp_link_destroy(l);
}

static void test_link_rx_seq_duplicates_and_gaps(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *l = mk(&c, 0);

	(void)state;
	assert_int_equal(dnp_link_ack_value(l), 0);
	assert_int_equal(dnp_link_rx_seq(l, 0), 0);
	assert_int_equal(dnp_link_rx_seq(l, 0), -EALREADY);
	assert_int_equal(dnp_link_rx_seq(l, 2), -EAGAIN);
	assert_int_equal(dnp_link_ack_value(l), 1);
	assert_int_equal(dnp_link_rx_seq(l, 1), 0);
	assert_int_equal(dnp_link_rx_seq(l, 2), 0);
	assert_int_equal(dnp_link_ack_value(l), 3);
	assert_int_equal(dnp_link_stats(l)->rx_dup, 1);
	assert_int_equal(dnp_link_stats(l)->rx_out_of_order, 1);

	/* Around the wrap: seq 0 follows UINT32_MAX, and UINT32_MAX is then old. */
	l->rx_expected = UINT32_MAX;
	assert_int_equal(dnp_link_rx_seq(l, 0), -EAGAIN);
	assert_int_equal(dnp_link_rx_seq(l, UINT32_MAX - 5), -EALREADY);
	assert_int_equal(dnp_link_rx_seq(l, UINT32_MAX), 0);
	assert_int_equal(dnp_link_ack_value(l), 0);
	assert_int_equal(dnp_link_rx_seq(l, UINT32_MAX), -EALREADY);
	assert_int_equal(dnp_link_rx_seq(l, 1), -EAGAIN);
	assert_int_equal(dnp_link_rx_seq(l, 0), 0);
	assert_int_equal(dnp_link_ack_value(l), 1);
	assert_int_equal(dnp_link_stats(l)->rx_dup, 3);
	assert_int_equal(dnp_link_stats(l)->rx_out_of_order, 3);
	dnp_link_destroy(l);
}

static struct dnp_link_conf quiet_conf(void)
{
	struct dnp_link_conf c = base_conf();

	c.credit_period = 1000000; /* keep CREDIT_DUE out of the way */
	return c;
}

static struct dnp_link *mk_quiet(const struct dnp_link_conf *c)
{
	struct dnp_link *l = mk(c, 0);
	struct dnp_credit_vc cr[DNP_MAX_VC];

	dnp_link_take_credit(l, 0, cr);
	return l;
}

/* Queues pkt and puts it on the wire at once, as the engine does on an idle link. */
static void push_sent(struct dnp_link *l, void *pkt, uint64_t now)
{
	dnp_link_seq_push(l, pkt, now);
	dnp_link_sent(l, dnp_link_unacked(l) - 1, now);
}

/* After a timeout: restarts the timer and resends what the link marked; returns how many. */
static unsigned resend_marked(struct dnp_link *l, uint64_t now)
{
	unsigned n = 0;
	int i;

	dnp_link_retx_done(l, now);
	while ((i = dnp_link_retx_next(l)) >= 0) {
		dnp_link_sent(l, (unsigned)i, now);
		n++;
	}
	return n;
}

static void test_link_retx_timer_and_broken(void **state)
{
	struct dnp_link_conf c = quiet_conf();
	struct dnp_link *l = mk_quiet(&c); /* rto 100, max_retries 2 */
	int pk[2];

	(void)state;
	assert_int_equal(dnp_link_tick(l, 500), 0); /* nothing unacked: no timer */
	dnp_link_seq_push(l, &pk[0], 10);
	dnp_link_seq_push(l, &pk[1], 60);
	assert_int_equal(dnp_link_next_deadline(l), 110);
	assert_int_equal(dnp_link_tick(l, 109), 0);
	assert_int_equal(dnp_link_tick(l, 110), DNP_LINK_EV_RETX);
	/* Reported once per round, until retx_done. */
	assert_int_equal(dnp_link_tick(l, 111), 0);
	assert_int_equal(dnp_link_next_deadline(l), 1000000);
	dnp_link_retx_done(l, 150);
	assert_int_equal(dnp_link_next_deadline(l), 250);
	assert_int_equal(dnp_link_tick(l, 249), 0);
	assert_int_equal(dnp_link_tick(l, 250), DNP_LINK_EV_RETX);
	dnp_link_retx_done(l, 250);
	/* Third expiry without progress: max_retries (2) rounds done -> BROKEN, once. */
	assert_int_equal(dnp_link_tick(l, 349), 0);
	assert_int_equal(dnp_link_tick(l, 350), DNP_LINK_EV_BROKEN);
	assert_int_equal(dnp_link_state(l), DNP_LINK_BROKEN);
	assert_int_equal(dnp_link_tick(l, 351), 0);
	assert_int_equal(dnp_link_tick(l, 100000000), 0);
	assert_int_equal(dnp_link_stats(l)->retx_rounds, 2);
	assert_int_equal(dnp_link_next_deadline(l), UINT64_MAX);
	assert_false(dnp_link_can_start(l, 0, 1));
	dnp_link_destroy(l);
}

static void test_link_ack_progress_resets_retries(void **state)
{
	struct dnp_link_conf c = quiet_conf();
	struct dnp_link *l = mk_quiet(&c);
	int pk[3];
	void *freed[3];

	(void)state;
	push_sent(l, &pk[0], 0);
	push_sent(l, &pk[1], 50);
	push_sent(l, &pk[2], 80);
	assert_int_equal(dnp_link_tick(l, 100), DNP_LINK_EV_RETX);
	assert_int_equal(resend_marked(l, 100), 3); /* nothing is held by the peer: all */
	assert_int_equal(dnp_link_tick(l, 200), DNP_LINK_EV_RETX);
	assert_int_equal(resend_marked(l, 200), 3);
	/* Progress: the retry count restarts and the timer follows the new oldest. */
	assert_int_equal(dnp_link_on_ack(l, 1, freed, 3, 230), 1);
	assert_int_equal(dnp_link_next_deadline(l), 300);
	assert_int_equal(dnp_link_tick(l, 300), DNP_LINK_EV_RETX);
	assert_int_equal(resend_marked(l, 300), 2);
	assert_int_equal(dnp_link_tick(l, 400), DNP_LINK_EV_RETX);
	assert_int_equal(resend_marked(l, 400), 2);
	assert_int_equal(dnp_link_tick(l, 500), DNP_LINK_EV_BROKEN);
	assert_int_equal(dnp_link_stats(l)->retx_rounds, 4);
	dnp_link_destroy(l);

	/* Without a retransmission, the timer after an ack runs from the new oldest's send time. */
	l = mk_quiet(&c);
	dnp_link_seq_push(l, &pk[0], 0);
	dnp_link_seq_push(l, &pk[1], 40);
	assert_int_equal(dnp_link_on_ack(l, 1, freed, 3, 90), 1);
	assert_int_equal(dnp_link_next_deadline(l), 140);
	assert_int_equal(dnp_link_on_ack(l, 2, freed, 3, 95), 1);
	assert_int_equal(dnp_link_tick(l, 10000), 0); /* nothing unacked, no timer */
	dnp_link_destroy(l);

	/* An ack that empties the window during a round: the next packet gets a timer. */
	l = mk_quiet(&c);
	dnp_link_seq_push(l, &pk[0], 0);
	assert_int_equal(dnp_link_tick(l, 100), DNP_LINK_EV_RETX);
	assert_int_equal(dnp_link_on_ack(l, 1, freed, 3, 110), 1);
	dnp_link_seq_push(l, &pk[1], 120);
	assert_int_equal(dnp_link_next_deadline(l), 220);
	assert_int_equal(dnp_link_tick(l, 220), DNP_LINK_EV_RETX);
	dnp_link_destroy(l);
}

static void test_link_credit_timeout_broken_once(void **state)
{
	struct dnp_link_conf c = quiet_conf();
	struct dnp_link *l;

	(void)state;
	c.credit_timeout = 1000;
	l = mk_quiet(&c);
	/* INIT with init_timeout 0: the credit timeout does not apply yet. */
	assert_int_equal(dnp_link_tick(l, 5000), 0);
	credit1(l, 0, 0, 5100);
	assert_int_equal(dnp_link_state(l), DNP_LINK_UP);
	credit1(l, 0, 0, 5900); /* refreshes */
	assert_int_equal(dnp_link_next_deadline(l), 6900);
	assert_int_equal(dnp_link_tick(l, 6899), 0);
	assert_int_equal(dnp_link_tick(l, 6900), DNP_LINK_EV_BROKEN);
	assert_int_equal(dnp_link_state(l), DNP_LINK_BROKEN);
	assert_int_equal(dnp_link_tick(l, 6901), 0);
	assert_int_equal(dnp_link_tick(l, 99999), 0);
	/* A late credit does not revive it. */
	credit1(l, 0, 0, 7000);
	assert_int_equal(dnp_link_state(l), DNP_LINK_BROKEN);
	assert_int_equal(dnp_link_tick(l, 7001), 0);
	dnp_link_destroy(l);
}

static void test_link_init_timeout(void **state)
{
	struct dnp_link_conf c = quiet_conf();
	struct dnp_link *l;

	(void)state;
	c.init_timeout = 500;
	c.credit_timeout = 100;
	l = mk_quiet(&c);
	assert_int_equal(dnp_link_next_deadline(l), 500);
	assert_int_equal(dnp_link_tick(l, 499), 0);
	assert_int_equal(dnp_link_tick(l, 500), DNP_LINK_EV_BROKEN);
	assert_int_equal(dnp_link_tick(l, 501), 0);
	dnp_link_destroy(l);

	/* A credit before the deadline: UP, and then only credit_timeout counts. */
	l = mk_quiet(&c);
	credit1(l, 0, 0, 450);
	assert_int_equal(dnp_link_tick(l, 520), 0);
	assert_int_equal(dnp_link_tick(l, 550), DNP_LINK_EV_BROKEN);
	dnp_link_destroy(l);

	/* init_timeout 0: never. */
	c.init_timeout = 0;
	l = mk_quiet(&c);
	assert_false(dnp_link_tick(l, UINT64_MAX / 2) & DNP_LINK_EV_BROKEN);
	assert_int_equal(dnp_link_state(l), DNP_LINK_INIT);
	dnp_link_destroy(l);
}

static void test_link_set_broken_and_drain(void **state)
{
	struct dnp_link_conf c = quiet_conf();
	struct dnp_link *l = mk_quiet(&c);
	int pk[5];
	void *out[3];
	unsigned i;

	(void)state;
	for (i = 0; i < 5; i++)
		dnp_link_seq_push(l, &pk[i], 0);
	assert_true(dnp_link_set_broken(l));
	assert_false(dnp_link_set_broken(l));
	assert_int_equal(dnp_link_state(l), DNP_LINK_BROKEN);
	/* The caller learnt it from set_broken: tick does not report it again. */
	assert_int_equal(dnp_link_tick(l, 1000), 0);
	assert_int_equal(dnp_link_drain(l, out, 3), 3);
	assert_ptr_equal(out[0], &pk[0]);
	assert_ptr_equal(out[2], &pk[2]);
	assert_int_equal(dnp_link_drain(l, out, 3), 2);
	assert_ptr_equal(out[0], &pk[3]);
	assert_ptr_equal(out[1], &pk[4]);
	assert_int_equal(dnp_link_drain(l, out, 3), 0);
	assert_int_equal(dnp_link_unacked(l), 0);
	dnp_link_destroy(l);
}

static void test_link_next_deadline_is_earliest(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *l;
	struct dnp_credit_vc cr[DNP_MAX_VC];
	int pk;

	(void)state;
	c.credit_period = 300;
	c.credit_timeout = 250;
	c.rto = 400;
	l = mk(&c, 0);
	dnp_link_take_credit(l, 0, cr);
	assert_int_equal(dnp_link_next_deadline(l), 300); /* INIT, no init_timeout */
	credit1(l, 0, 0, 10);
	assert_int_equal(dnp_link_next_deadline(l), 260); /* liveness first */
	credit1(l, 0, 0, 100);
	assert_int_equal(dnp_link_next_deadline(l), 300); /* credit first */
	dnp_link_seq_push(l, &pk, 0);
	assert_int_equal(dnp_link_next_deadline(l), 300); /* rto 400 */
	dnp_link_destroy(l);

	c.rto = 50;
	l = mk(&c, 0);
	dnp_link_take_credit(l, 0, cr);
	dnp_link_seq_push(l, &pk, 20);
	assert_int_equal(dnp_link_next_deadline(l), 70); /* retransmission first */
	dnp_link_destroy(l);
}

/*
 * Credits travel between b (receiver) and a (sender) through a real CREDIT
 * frame: encoded with the payload length of a link of 'nvc' VCs, decoded,
 * and given to a.
 */
static void credit_via_frame(struct dnp_link *b, struct dnp_link *a, unsigned nvc, uint64_t now)
{
	uint8_t f[DNP_CREDIT_MAX_FRAME];
	struct dnp_pkt_hdr h = { .kind = DNP_PKT_CREDIT, .len = dnp_pkt_credit_len(nvc) }, d;
	int n;

	dnp_link_take_credit(b, now, h.credit);
	h.timestamp = dnp_pkt_credit_stamp(h.credit);
	n = dnp_pkt_encode(&h, NULL, f, sizeof(f));
	assert_int_equal(n, nvc > 2 ? 80 : 64);
	assert_int_equal(dnp_pkt_decode(f, (size_t)n, &d, NULL), 0);
	dnp_link_on_credit(a, d.credit, now);
}

/*
 * Four VCs: each has its own FIFO, estimate and credits. VC 0 blocked on
 * credit does not hold VC 3 back, and the credits of VCs 2-3 come back in
 * the payload word of the CREDIT frame (a 2-VC frame would not free VC 3).
 */
static void test_link_four_vcs_flow_control_independently(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *a, *b;

	(void)state;
	c.nvc = 4;
	a = mk(&c, 0);
	b = mk(&c, 0);
	/* VC 0: two 4 KiB packets can not both start (506 words of room). */
	assert_true(dnp_link_can_start(a, 0, 260));
	dnp_link_commit(a, 0, 260);
	assert_false(dnp_link_can_start(a, 0, 260));
	/* VC 3 (and VC 2) are not held back by VC 0. */
	assert_true(dnp_link_can_start(a, 3, 260));
	assert_true(dnp_link_can_start(a, 2, 260));
	dnp_link_commit(a, 3, 260);
	assert_false(dnp_link_can_start(a, 3, 260));
	assert_true(dnp_link_can_start(a, 2, 260));
	assert_int_equal(dnp_link_estimate(a, 0), 260);
	assert_int_equal(dnp_link_estimate(a, 3), 260);
	assert_int_equal(dnp_link_estimate(a, 2), 0);
	assert_int_equal(dnp_link_stats(a)->vc[0].credit_stalls, 1);
	assert_int_equal(dnp_link_stats(a)->vc[3].credit_stalls, 1);
	assert_int_equal(dnp_link_stats(a)->vc[2].credit_stalls, 0);
	assert_int_equal(dnp_link_stats(a)->vc[3].tx_words, 260);

	/* At b both arrive, each in its own FIFO; VC 3's leaves, VC 0's stays. */
	assert_int_equal(dnp_link_rx_accept(b, 0, 260), 0);
	assert_int_equal(dnp_link_rx_accept(b, 3, 260), 0);
	assert_int_equal(dnp_link_rx_occupancy(b, 3), 260);
	/* VC 3's FIFO holds its own 512 words, whatever VC 0 holds. */
	assert_int_equal(dnp_link_rx_accept(b, 3, 253), -ENOBUFS);
	assert_int_equal(dnp_link_stats(b)->vc[3].rx_overflow, 1);
	assert_int_equal(dnp_link_stats(b)->vc[0].rx_overflow, 0);
	dnp_link_rx_release(b, 3, 260);
	assert_int_equal(dnp_link_rx_occupancy(b, 3), 0);
	assert_int_equal(dnp_link_rx_occupancy(b, 0), 260);

	/* HW model: the first credit was latched at 0, the second carries it all. */
	credit_via_frame(b, a, 4, 35);
	assert_false(dnp_link_can_start(a, 3, 260));
	/* A frame in the 2-VC format says nothing about VC 3: it stays blocked. */
	credit_via_frame(b, a, 2, 70);
	assert_false(dnp_link_can_start(a, 3, 260));
	assert_int_equal(dnp_link_estimate(a, 0), 260);
	/* The 4-VC frame: VC 3 fresh and empty, VC 0 still full. */
	credit_via_frame(b, a, 4, 105);
	assert_int_equal(dnp_link_estimate(a, 3), 0);
	assert_true(dnp_link_can_start(a, 3, 260));
	assert_int_equal(dnp_link_estimate(a, 0), 260);
	assert_false(dnp_link_can_start(a, 0, 260));
	/* VCs beyond the link's own count do not exist. */
	assert_false(dnp_link_can_start(a, DNP_MAX_VC, 1));
	assert_int_equal(dnp_link_rx_accept(b, DNP_MAX_VC, 1), -EINVAL);
	dnp_link_destroy(a);
	dnp_link_destroy(b);
}

/* ---- epochs and the reset handshake ---- */

static struct dnp_link *mk_nonce(struct dnp_link_conf c, uint32_t nonce, uint64_t now)
{
	c.nonce = nonce;
	return mk(&c, now);
}

/* Delivers one RESET frame from 'from' to 'to' (both sides of the API). */
static unsigned reset_to(struct dnp_link *from, struct dnp_link *to, uint64_t now)
{
	struct dnp_credit_vc cr[DNP_MAX_VC];
	uint8_t e = dnp_link_take_reset(from, now, cr);

	return dnp_link_on_reset(to, e, cr, now);
}

static void test_link_fresh_ends_agree_on_epoch_1(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *a = mk_nonce(c, 11, 0), *b = mk_nonce(c, 22, 0);

	assert_true(dnp_link_sends_reset(a));
	assert_int_equal(dnp_link_epoch(a), 0);
	assert_true(dnp_link_tick(a, 0) & DNP_LINK_EV_CREDIT_DUE); /* the first probe */
	/* A's probe reaches B: B is UP in epoch 1 and owes an announce. */
	assert_int_equal(reset_to(a, b, 1), DNP_LINK_RST_UP);
	assert_int_equal(dnp_link_state(b), DNP_LINK_UP);
	assert_int_equal(dnp_link_epoch(b), 1);
	assert_true(dnp_link_reset_due(b));
	/* B's announce brings A UP in the same epoch; nobody answers an announce. */
	assert_int_equal(reset_to(b, a, 2), DNP_LINK_RST_UP);
	assert_int_equal(dnp_link_state(a), DNP_LINK_UP);
	assert_int_equal(dnp_link_epoch(a), 1);
	assert_false(dnp_link_reset_due(b));
	assert_int_equal(
		dnp_link_on_reset(b, 1,
				  (struct dnp_credit_vc[2]){ { .received = 11 },
							     { .received = DNP_RESET_ANNOUNCE } },
				  3),
		0);
	assert_false(dnp_link_reset_due(b));
	assert_int_equal(dnp_link_state(b), DNP_LINK_UP);
	/* Frames of the agreed epoch pass, others are dropped and counted. */
	assert_int_equal(dnp_link_rx_epoch(a, 1, 3), 0);
	assert_int_equal(dnp_link_rx_epoch(a, 0, 3), -ESTALE);
	assert_int_equal(dnp_link_rx_epoch(a, 2, 3), -ESTALE);
	assert_int_equal(dnp_link_stats(a)->rx_stale, 2);
	dnp_link_destroy(a);
	dnp_link_destroy(b);
}

static void test_link_late_handshake_copies_do_not_break(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *a = mk_nonce(c, 11, 0), *b = mk_nonce(c, 22, 0);
	struct dnp_credit_vc old_probe[DNP_MAX_VC];

	(void)dnp_link_take_reset(a, 0, old_probe); /* a probe of epoch 0 from A */
	assert_int_equal(dnp_link_on_reset(b, 0, old_probe, 1), DNP_LINK_RST_UP);
	assert_int_equal(reset_to(b, a, 2), DNP_LINK_RST_UP);
	/*
	 * A's first probe again (a late copy, or A missed B's announce and
	 * probes on): same nonce, older epoch: no break, only an announce.
	 */
	struct dnp_credit_vc scratch[DNP_MAX_VC];
	(void)dnp_link_take_reset(b, 2, scratch); /* B's owed announce goes out */
	assert_false(dnp_link_reset_due(b));
	assert_int_equal(dnp_link_on_reset(b, 0, old_probe, 3), 0);
	assert_int_equal(dnp_link_state(b), DNP_LINK_UP);
	assert_true(dnp_link_reset_due(b));
	assert_int_equal(dnp_link_stats(b)->breaks, 0);
	/* A probe of the current epoch from the known peer is answered, not a break. */
	struct dnp_credit_vc probe1[DNP_MAX_VC] = { { .received = 11 } };
	(void)dnp_link_take_reset(b, 3, scratch); /* clear b's owed announce */
	assert_int_equal(dnp_link_on_reset(b, 1, probe1, 4), 0);
	assert_true(dnp_link_reset_due(b));
	assert_int_equal(dnp_link_stats(b)->breaks, 0);
	dnp_link_destroy(a);
	dnp_link_destroy(b);
}

/* The peer restarts (new nonce, fresh): the UP end breaks, proposes epoch + 1, both come back. */
static void test_link_restarted_peer_rejoins(void **state)
{
	struct dnp_link_conf c = base_conf();
	c.reset_period = 1000;
	struct dnp_link *a = mk_nonce(c, 11, 0), *b = mk_nonce(c, 22, 0);
	void *freed[8];
	int pkt[3];

	assert_int_equal(reset_to(a, b, 0), DNP_LINK_RST_UP);
	assert_int_equal(reset_to(b, a, 0), DNP_LINK_RST_UP);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(dnp_link_seq_push(a, &pkt[i], 1), i);
		dnp_link_commit(a, 0, 4);
	}
	assert_int_equal(dnp_link_rx_seq(b, 0), 0);
	/* B is killed; B2 starts afresh with another nonce. */
	dnp_link_destroy(b);
	struct dnp_link *b2 = mk_nonce(c, 33, 10);
	assert_int_equal(reset_to(b2, a, 10), DNP_LINK_RST_DOWN);
	assert_int_equal(dnp_link_state(a), DNP_LINK_BROKEN);
	assert_int_equal(dnp_link_epoch(a), 2);
	assert_true(dnp_link_reset_due(a)); /* it answers with its proposal at once */
	/* The caller drains what was sent in epoch 1: it is never resent. */
	assert_int_equal(dnp_link_drain(a, freed, 8), 3);
	assert_int_equal(dnp_link_unacked(a), 0);
	/* A's proposal: B2 adopts epoch 2, announces; A is UP again. */
	assert_int_equal(reset_to(a, b2, 11), DNP_LINK_RST_UP);
	assert_int_equal(dnp_link_epoch(b2), 2);
	assert_int_equal(reset_to(b2, a, 12), DNP_LINK_RST_UP);
	assert_int_equal(dnp_link_state(a), DNP_LINK_UP);
	assert_int_equal(dnp_link_epoch(a), 2);
	/* Sequence numbers and credit counters restarted on both ends. */
	assert_int_equal(dnp_link_seq_push(a, &pkt[0], 13), 0);
	assert_int_equal(dnp_link_ack_value(a), 0);
	assert_int_equal(dnp_link_rx_seq(b2, 0), 0);
	assert_int_equal(dnp_link_estimate(a, 0), 0);
	assert_int_equal(dnp_link_stats(a)->breaks, 1);
	assert_int_equal(dnp_link_stats(a)->ups, 2);
	dnp_link_destroy(a);
	dnp_link_destroy(b2);
}

/*
 * Buffer credits (link.h): a receiver backing 2 buffers per VC counts the
 * frames of 17 words and up it holds (FIFO or beyond a gap), for the node
 * too, and refuses a third; its RESET frame and credits say how many are
 * free, and the sender starts such a frame only while one is free that no
 * frame in flight takes. Smaller frames pass; an older credit is not used.
 */
static void test_link_buffer_credits(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_credit_vc old[DNP_MAX_VC], cr[DNP_MAX_VC];
	uint32_t node = 0;
	struct dnp_link *a, *b;
	int dummy[2];

	(void)state;
	c.credit_model = DNP_CREDIT_EXACT;
	c.bufs = 2;
	c.node_bufs = &node;
	a = mk_nonce(c, 11, 0);
	b = mk_nonce(c, 22, 0);
	assert_int_equal(reset_to(a, b, 1), DNP_LINK_RST_UP);
	assert_int_equal(reset_to(b, a, 2), DNP_LINK_RST_UP);
	assert_int_equal(dnp_link_bufs_avail(a, 0), 2); /* from b's RESET frame */
	dnp_link_take_credit(b, 3, old);
	assert_int_equal(old[0].bufs, 2);

	/* a: two 20-word frames start, a third waits; a 16-word one does not need a buffer */
	for (unsigned k = 0; k < 2; k++) {
		assert_true(dnp_link_can_start(a, 0, 20));
		dnp_link_commit(a, 0, 20);
	}
	assert_false(dnp_link_can_start(a, 0, 20));
	assert_int_equal(dnp_link_stats(a)->buf_stalls, 1);
	assert_true(dnp_link_can_start(a, 0, 16));
	assert_true(dnp_link_can_start(a, 1, 20)); /* VC 1 has its own */

	/* b: both arrive and take the node's buffers; a third has none */
	assert_int_equal(dnp_link_rx_accept(b, 0, 20), 0);
	assert_int_equal(dnp_link_rx_accept(b, 0, 20), 0);
	assert_int_equal(node, 2);
	assert_false(dnp_link_rx_buf_room(b, 0, 20));
	assert_true(dnp_link_rx_buf_room(b, 0, 16));
	assert_int_equal(dnp_link_rx_accept(b, 0, 20), -ENOBUFS);
	assert_int_equal(dnp_link_stats(b)->rx_buf_overflow, 1);
	assert_int_equal(dnp_link_rx_occupancy(b, 0), 40);

	/* one leaves b's FIFO: the credit says 1 free, and a may send one more */
	dnp_link_rx_release(b, 0, 20);
	assert_int_equal(node, 1);
	dnp_link_take_credit(b, 4, cr);
	assert_int_equal(cr[0].bufs, 1);
	assert_int_equal(cr[0].received, 40);
	dnp_link_on_credit(a, cr, 5);
	assert_int_equal(dnp_link_bufs_avail(a, 0), 1);
	/* the credit latched before anything arrived comes late: not used */
	dnp_link_on_credit(a, old, 6);
	assert_int_equal(dnp_link_bufs_avail(a, 0), 1);
	assert_true(dnp_link_can_start(a, 0, 20));
	dnp_link_commit(a, 0, 20);
	assert_false(dnp_link_can_start(a, 0, 20));

	/* a frame held beyond a gap takes a buffer as well, and gives it back when drained */
	assert_int_equal(dnp_link_rx_hold(b, 1, 0, 20, &dummy[0]), 0);
	assert_int_equal(node, 2);
	assert_int_equal(dnp_link_rx_hold(b, 2, 0, 20, &dummy[1]), -ENOBUFS);
	void *out[2];
	assert_int_equal(dnp_link_rx_drain(b, out, 2), 1);
	assert_int_equal(node, 1);
	dnp_link_destroy(a);
	dnp_link_destroy(b);
}

/*
 * A RESET frame carries the occupancies of VCs 0-1 only: a 4-VC link that
 * comes UP from one takes the peer's FIFOs of VCs 2-3 as full until the first
 * credit of the new epoch, which is due at once.
 */
static void test_link_four_vcs_reset_then_credit(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *a, *b;
	struct dnp_credit_vc cr[DNP_MAX_VC];

	(void)state;
	c.nvc = 4;
	a = mk_nonce(c, 11, 0);
	b = mk_nonce(c, 22, 0);
	assert_int_equal(dnp_link_rx_accept(b, 1, 30), 0);
	assert_int_equal(dnp_link_rx_accept(b, 2, 40), 0);
	(void)dnp_link_take_reset(b, 0, cr);
	assert_int_equal(cr[1].occupancy, 30);
	assert_int_equal(cr[2].occupancy, 0); /* not on the wire */
	assert_int_equal(cr[3].occupancy, 0);
	assert_int_equal(dnp_link_on_reset(a, 0, cr, 0), DNP_LINK_RST_UP);
	assert_int_equal(dnp_link_estimate(a, 1), 30);
	assert_int_equal(dnp_link_estimate(a, 2), c.fifo_words);
	assert_int_equal(dnp_link_estimate(a, 3), c.fifo_words);
	assert_true(dnp_link_can_start(a, 0, 260));
	assert_false(dnp_link_can_start(a, 2, 1));
	assert_false(dnp_link_can_start(a, 3, 1));
	assert_int_equal(reset_to(a, b, 1), DNP_LINK_RST_UP);
	/* b's first credit of the epoch (HW: latched when b came UP) frees them. */
	assert_true(dnp_link_tick(b, 1) & DNP_LINK_EV_CREDIT_DUE);
	credit_via_frame(b, a, 4, 1);
	assert_int_equal(dnp_link_estimate(a, 2), 40);
	assert_int_equal(dnp_link_estimate(a, 3), 0);
	assert_true(dnp_link_can_start(a, 3, 260));
	assert_true(dnp_link_can_start(a, 2, 260));
	dnp_link_destroy(a);
	dnp_link_destroy(b);
}

/* A silent link breaks on its timeout, probes every reset_period, and comes back. */
static void test_link_silent_link_comes_back(void **state)
{
	struct dnp_link_conf c = base_conf();
	c.credit_timeout = 500;
	c.reset_period = 200;
	struct dnp_link *a = mk_nonce(c, 11, 0), *b = mk_nonce(c, 22, 0);

	assert_int_equal(reset_to(a, b, 0), DNP_LINK_RST_UP);
	assert_int_equal(reset_to(b, a, 0), DNP_LINK_RST_UP);
	assert_int_equal(dnp_link_tick(a, 600) & DNP_LINK_EV_BROKEN, DNP_LINK_EV_BROKEN);
	assert_int_equal(dnp_link_epoch(a), 2);
	/* probes: at once, then every reset_period */
	assert_true(dnp_link_tick(a, 600) & DNP_LINK_EV_CREDIT_DUE);
	struct dnp_credit_vc cr[DNP_MAX_VC];
	assert_int_equal(dnp_link_take_reset(a, 600, cr), 2);
	assert_int_equal(cr[1].received & DNP_RESET_ANNOUNCE, 0);
	assert_int_equal(dnp_link_tick(a, 700), 0);
	assert_int_equal(dnp_link_next_deadline(a), 800);
	assert_true(dnp_link_tick(a, 800) & DNP_LINK_EV_CREDIT_DUE);
	/* Old-epoch frames from B (still UP in 1) are dropped, never accepted. */
	assert_int_equal(dnp_link_rx_epoch(a, 1, 810), -ESTALE);
	/* B hears the probe of epoch 2: it breaks too, adopts it and is UP again. */
	assert_int_equal(reset_to(a, b, 820), DNP_LINK_RST_DOWN | DNP_LINK_RST_UP);
	assert_int_equal(dnp_link_epoch(b), 2);
	/* A sees a frame of epoch 2 (B's announce may be lost): UP. */
	assert_int_equal(dnp_link_rx_epoch(a, 2, 830), DNP_LINK_RST_UP);
	assert_int_equal(dnp_link_state(a), DNP_LINK_UP);
	dnp_link_destroy(a);
	dnp_link_destroy(b);
}

/* reset_period 0: BROKEN is final (the hardware): no probes, resets ignored. */
static void test_link_broken_final_without_reset_period(void **state)
{
	struct dnp_link_conf c = base_conf();
	struct dnp_link *a = mk_nonce(c, 11, 0), *b = mk_nonce(c, 22, 0);

	assert_int_equal(reset_to(a, b, 0), DNP_LINK_RST_UP);
	assert_int_equal(reset_to(b, a, 0), DNP_LINK_RST_UP);
	assert_true(dnp_link_set_broken(a));
	assert_false(dnp_link_reset_due(a));
	assert_int_equal(dnp_link_tick(a, 10000), 0);
	assert_int_equal(dnp_link_next_deadline(a), UINT64_MAX);
	assert_int_equal(reset_to(b, a, 10), 0);
	assert_int_equal(dnp_link_state(a), DNP_LINK_BROKEN);
	assert_int_equal(dnp_link_rx_epoch(a, 1, 10), -ESTALE);
	dnp_link_destroy(a);
	dnp_link_destroy(b);
}

/* Epochs wrap past 255 to 1 (0 means "none"), and stay ordered across the wrap. */
static void test_link_epoch_wrap(void **state)
{
	assert_int_equal(epoch_next(255), 1);
	assert_int_equal(epoch_next(1), 2);
	assert_true(epoch_newer(1, 255));
	assert_false(epoch_newer(255, 1));
	assert_true(epoch_newer(1, 0));
	assert_false(epoch_newer(0, 7));
}

/* ---- selective acks and the adaptive timeout ---- */

/* The receiver side of one data frame: accept it, or hold it beyond a gap; unhold what follows. */
static void rx_frame(struct dnp_link *b, uint32_t seq, void *pkt, unsigned *delivered)
{
	int rc = dnp_link_rx_seq(b, seq);
	void *q;

	if (rc == -EAGAIN) {
		assert_int_equal(dnp_link_rx_hold(b, seq, 0, 4, pkt), 0);
		return;
	}
	if (rc != 0)
		return;
	(*delivered)++;
	while ((q = dnp_link_rx_unhold(b)) != NULL) {
		(void)q;
		assert_int_equal(dnp_link_rx_seq(b, dnp_link_ack_value(b)), 0);
		(*delivered)++;
	}
}

/*
 * One frame lost out of a window of 16: the selective ack that comes back
 * one round trip later marks exactly that frame, long before the timeout;
 * the resend fills the gap and the held frames are delivered behind it,
 * each exactly once. Under go-back-N the sender would have waited for the
 * timeout and then resent all 13 frames from the lost one on.
 */
static void test_link_one_loss_one_fast_resend(void **state)
{
	struct dnp_link_conf c = quiet_conf();
	struct dnp_link *a, *b;
	int pk[16];
	void *freed[16];
	unsigned delivered = 0, i;
	uint64_t rtt = 20;

	(void)state;
	c.window = 16;
	c.rto = 1000;
	a = mk_quiet(&c);
	b = mk_quiet(&c);
	for (i = 0; i < 16; i++) {
		push_sent(a, &pk[i], i);
		if (i != 3) /* frame 3 is lost */
			rx_frame(b, i, &pk[i], &delivered);
	}
	assert_int_equal(delivered, 3);
	assert_int_equal(dnp_link_ack_value(b), 3);
	assert_int_equal(dnp_link_sack(b), 0xfffull); /* seqs 4..15 held */
	assert_int_equal(dnp_link_stats(b)->rx_held, 12);

	/* The credit comes back one round trip after the last frame left. */
	uint64_t t = 15 + rtt;
	assert_int_equal(dnp_link_on_ack(a, dnp_link_ack_value(b), freed, 16, t), 3);
	assert_int_equal(dnp_link_on_sack(a, dnp_link_ack_value(b), dnp_link_sack(b), t), 1);
	assert_int_equal(dnp_link_retx_due(a), 1);
	assert_int_equal(dnp_link_retx_next(a), 0); /* the oldest unacked: seq 3 */
	uint32_t seq;
	assert_ptr_equal(dnp_link_unacked_at(a, 0, &seq), &pk[3]);
	assert_int_equal(seq, 3);
	assert_true(t < dnp_link_next_deadline(a)); /* no timeout was needed */
	dnp_link_sent(a, 0, t);
	assert_int_equal(dnp_link_retx_next(a), -1);
	/* The same selective ack again (before the resend can have arrived): nothing more. */
	assert_int_equal(dnp_link_on_sack(a, 3, 0xfffull, t + 1), 0);
	assert_int_equal(dnp_link_retx_due(a), 0);

	/* The resend arrives: all 13 frames are delivered, in order, once. */
	rx_frame(b, 3, &pk[3], &delivered);
	assert_int_equal(delivered, 16);
	assert_int_equal(dnp_link_ack_value(b), 16);
	assert_int_equal(dnp_link_sack(b), 0);
	assert_int_equal(dnp_link_on_ack(a, 16, freed, 16, t + rtt), 13);
	assert_int_equal(dnp_link_unacked(a), 0);
	assert_int_equal(dnp_link_stats(a)->fast_retx, 1);
	assert_int_equal(dnp_link_stats(a)->retx_rounds, 0);
	dnp_link_destroy(a);
	dnp_link_destroy(b);
}

/* A resend that is lost too is marked again once a frame sent after it arrives. */
static void test_link_lost_resend_marked_again(void **state)
{
	struct dnp_link_conf c = quiet_conf();
	struct dnp_link *a;
	int pk[8];
	void *freed[8];

	(void)state;
	c.rto = 1000;
	a = mk_quiet(&c);
	for (unsigned i = 0; i < 4; i++)
		push_sent(a, &pk[i], i);
	/* seq 0 lost, 1..3 held */
	assert_int_equal(dnp_link_on_sack(a, 0, 0x7, 20), 1);
	dnp_link_sent(a, 0, 20);                              /* resend of seq 0: lost again */
	push_sent(a, &pk[4], 21);                             /* sent after the resend */
	assert_int_equal(dnp_link_on_sack(a, 0, 0x7, 30), 0); /* old news */
	assert_int_equal(dnp_link_on_sack(a, 0, 0xf, 41), 1); /* seq 4 overtook the resend */
	assert_int_equal(dnp_link_retx_next(a), 0);
	assert_int_equal(dnp_link_on_ack(a, 5, freed, 8, 60), 5);
	assert_int_equal(dnp_link_retx_due(a), 0);
	/* A selective ack about another oldest seq is ignored. */
	push_sent(a, &pk[5], 61);
	push_sent(a, &pk[6], 62);
	assert_int_equal(dnp_link_on_sack(a, 4, 0x1, 70), 0);
	dnp_link_destroy(a);
}

/* A timeout resends only what the peer does not hold; the second in a row resends all. */
static void test_link_timeout_skips_held(void **state)
{
	struct dnp_link_conf c = quiet_conf();
	struct dnp_link *a;
	int pk[4];

	(void)state;
	c.max_retries = 5;
	a = mk_quiet(&c);
	for (unsigned i = 0; i < 4; i++)
		push_sent(a, &pk[i], 0);
	/* the peer holds seq 2 only; 0 and 1 are marked, then resent and lost */
	assert_int_equal(dnp_link_on_sack(a, 0, 0x2, 10), 2);
	dnp_link_sent(a, 0, 10);
	dnp_link_sent(a, 1, 10);
	assert_int_equal(dnp_link_tick(a, 110), DNP_LINK_EV_RETX);
	assert_int_equal(resend_marked(a, 110), 3); /* 0, 1 and 3: not 2 */
	assert_int_equal(dnp_link_tick(a, 210), DNP_LINK_EV_RETX);
	assert_int_equal(resend_marked(a, 210), 4); /* the peer may have dropped 2 */
	dnp_link_destroy(a);
}

/*
 * The timeout follows the measured round trip (RFC 6298): the first sample
 * R gives SRTT = R, RTTVAR = R/2, RTO = 3R; steady samples shrink RTTVAR;
 * the result stays within [min_rto, max_rto]; an ack that covers a resent
 * packet gives no sample (Karn); a timeout doubles it up to max_rto.
 */
static void test_link_rto_adapts_to_rtt(void **state)
{
	struct dnp_link_conf c = quiet_conf();
	struct dnp_link *a;
	int pk;
	void *freed[1];
	uint64_t t = 0;

	(void)state;
	c.rto = 1000;
	c.min_rto = 30;
	c.max_rto = 4000;
	c.max_retries = 10;
	a = mk_quiet(&c);
	assert_int_equal(dnp_link_rto(a), 1000);
	assert_int_equal(dnp_link_srtt(a), 0);
	push_sent(a, &pk, t);
	assert_int_equal(dnp_link_next_deadline(a), 1000);
	assert_int_equal(dnp_link_on_ack(a, 1, freed, 1, t + 50), 1);
	assert_int_equal(dnp_link_srtt(a), 50);
	assert_int_equal(dnp_link_rto(a), 150);
	for (uint32_t s = 1; s < 40; s++) {
		t += 100;
		push_sent(a, &pk, t);
		assert_int_equal(dnp_link_on_ack(a, s + 1, freed, 1, t + 50), 1);
	}
	assert_int_equal(dnp_link_srtt(a), 50);
	assert_true(dnp_link_rto(a) >= 50 && dnp_link_rto(a) < 60);
	/* the timer uses it */
	t += 100;
	push_sent(a, &pk, t);
	assert_int_equal(dnp_link_next_deadline(a), t + dnp_link_rto(a));
	uint64_t before = dnp_link_rto(a), samples = dnp_link_stats(a)->rtt_samples;
	/* timeout: doubled; the resent packet's ack gives no sample */
	assert_int_equal(dnp_link_tick(a, t + before), DNP_LINK_EV_RETX);
	assert_int_equal(dnp_link_rto(a), 2 * before);
	assert_int_equal(resend_marked(a, t + before), 1);
	assert_int_equal(dnp_link_on_ack(a, 41, freed, 1, t + before + 5), 1);
	assert_int_equal(dnp_link_stats(a)->rtt_samples, samples);
	assert_int_equal(dnp_link_rto(a), 2 * before);
	/* a much slower path: clamped to max_rto; a much faster one: to min_rto */
	for (uint32_t s = 41; s < 80; s++) {
		t += 100000;
		push_sent(a, &pk, t);
		assert_int_equal(dnp_link_on_ack(a, s + 1, freed, 1, t + 20000), 1);
	}
	assert_int_equal(dnp_link_rto(a), 4000);
	for (uint32_t s = 80; s < 200; s++) {
		t += 100;
		push_sent(a, &pk, t);
		assert_int_equal(dnp_link_on_ack(a, s + 1, freed, 1, t + 2), 1);
	}
	assert_int_equal(dnp_link_rto(a), 30);
	/* backoff stops at max_rto */
	push_sent(a, &pk, t);
	for (unsigned r = 0; r < 9; r++) {
		uint64_t d = a->retx_deadline; /* credits are due too: they are not taken here */
		assert_true(dnp_link_tick(a, d) & DNP_LINK_EV_RETX);
		resend_marked(a, d);
	}
	assert_int_equal(dnp_link_rto(a), 4000);
	dnp_link_destroy(a);
}

/* The receiver's hold: bounded by the window and by the FIFO; duplicates; drain. */
static void test_link_rx_hold_bounds(void **state)
{
	struct dnp_link_conf c = base_conf(); /* window 8, fifo 512 words */
	struct dnp_link *b = mk(&c, 0);
	int pk[8];
	void *out[8];

	(void)state;
	assert_int_equal(dnp_link_rx_seq(b, 0), 0);
	assert_int_equal(dnp_link_rx_hold(b, 1, 0, 4, &pk[0]), -ERANGE); /* that is no gap */
	assert_int_equal(dnp_link_rx_hold(b, 9, 0, 4, &pk[0]), -ERANGE); /* beyond the window */
	assert_int_equal(dnp_link_rx_hold(b, 3, 2, 4, &pk[0]), -EINVAL);
	assert_int_equal(dnp_link_rx_hold(b, 3, 0, 260, &pk[3]), 0);
	assert_int_equal(dnp_link_rx_seq(b, 3), -EALREADY); /* a copy of a held frame */
	assert_int_equal(dnp_link_rx_hold(b, 3, 0, 260, &pk[3]), -EALREADY);
	assert_int_equal(dnp_link_rx_accept(b, 0, 200), 0);
	/* 200 in the FIFO + 260 held + 60 > 512 */
	assert_int_equal(dnp_link_rx_hold(b, 5, 0, 60, &pk[5]), -ENOBUFS);
	assert_int_equal(dnp_link_rx_hold(b, 5, 1, 60, &pk[5]), 0); /* the other VC has room */
	assert_int_equal(dnp_link_sack(b), 0x2 | 0x8);
	assert_null(dnp_link_rx_unhold(b)); /* 1 is still missing */
	assert_int_equal(dnp_link_rx_drain(b, out, 8), 2);
	assert_int_equal(dnp_link_sack(b), 0);
	assert_int_equal(dnp_link_rx_hold(b, 5, 0, 60, &pk[5]), 0); /* room again */
	dnp_link_destroy(b);
}

/* The selective ack on the wire: CREDIT frames only, non-zero, round trip exact. */
static void test_link_sack_wire_format(void **state)
{
	struct dnp_pkt_hdr h = { .kind = DNP_PKT_CREDIT,
				 .lflags = DNP_LINK_F_SACK,
				 .ack = 7,
				 .sack = 0x8000000100000005ull,
				 .src_dir = 1 };
	struct dnp_pkt_hdr d;
	uint8_t f[DNP_FRAME_OVERHEAD];
	int n;

	(void)state;
	n = dnp_pkt_encode(&h, NULL, f, sizeof(f));
	assert_int_equal(n, 64);
	assert_int_equal(f[28], 0x05); /* H0 msg_id: bits 0-31 */
	assert_int_equal(f[31], 0x00);
	assert_int_equal(f[48 + 12], 0x01); /* footer msg_len: bits 32-63 */
	assert_int_equal(f[48 + 15], 0x80);
	assert_int_equal(dnp_pkt_decode(f, (size_t)n, &d, NULL), 0);
	assert_int_equal(d.sack, h.sack);
	assert_int_equal(d.msg_id, 0);
	assert_int_equal(d.msg_len, 0);
	/* restamp keeps it, and refuses to add or drop the flag */
	assert_int_equal(dnp_pkt_restamp(f, 64, DNP_LINK_F_SACK, 0, 9, 1, 0, 0), 0);
	assert_int_equal(dnp_pkt_restamp(f, 64, 0, 0, 9, 1, 0, 0), -EINVAL);
	assert_int_equal(dnp_pkt_decode(f, 64, &d, NULL), 0);
	assert_int_equal(d.sack, h.sack);
	assert_int_equal(d.ack, 9);
	h.sack = 0; /* says nothing: refused */
	assert_int_equal(dnp_pkt_encode(&h, NULL, f, sizeof(f)), -EINVAL);
	h.sack = 1;
	h.lflags = DNP_LINK_F_SACK | DNP_LINK_F_RESET;
	assert_int_equal(dnp_pkt_encode(&h, NULL, f, sizeof(f)), -EINVAL);
	h.lflags = 0; /* without the flag, the sack is not carried: msg_id/msg_len stay zero */
	assert_int_equal(dnp_pkt_encode(&h, NULL, f, sizeof(f)), 64);
	assert_int_equal(dnp_pkt_decode(f, 64, &d, NULL), 0);
	assert_int_equal(d.sack, 0);
	struct dnp_pkt_hdr put = { .kind = DNP_PKT_PUT,
				   .lflags = DNP_LINK_F_SEQ | DNP_LINK_F_SACK,
				   .sack = 1,
				   .flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST };
	assert_int_equal(dnp_pkt_encode(&put, NULL, f, sizeof(f)), -EINVAL);
}

/*
 * A resend that is lost when nothing newer follows it (no selective ack can
 * reveal it) is marked again after a probe interval, 2 SRTT here, not after
 * the timeout.
 */
static void test_link_lost_resend_probed(void **state)
{
	struct dnp_link_conf c = quiet_conf();
	struct dnp_link *a;
	int pk[3];
	void *freed[3];

	(void)state;
	c.rto = 1000;
	c.min_rto = 10;
	a = mk_quiet(&c);
	credit1(a, 0, 0, 0); /* UP */
	push_sent(a, &pk[0], 0);
	assert_int_equal(dnp_link_on_ack(a, 1, freed, 3, 20), 1); /* srtt 20, rttvar 10 */
	push_sent(a, &pk[1], 100);
	push_sent(a, &pk[2], 101);
	assert_int_equal(dnp_link_on_sack(a, 1, 0x1, 121), 1); /* seq 1 lost, 2 held */
	dnp_link_sent(a, 0, 121);                              /* its resend is lost too */
	/* probe interval max(2 * 20, 20 + 4 * 10) = 60: before the timeout (rto 60 too, so raise it) */
	a->rto = 500;
	a->retx_deadline = 121 + 500;
	assert_int_equal(dnp_link_next_deadline(a), 121 + 60);
	assert_int_equal(dnp_link_tick(a, 180) & DNP_LINK_EV_RETX, 0);
	assert_int_equal(dnp_link_retx_due(a), 0);
	assert_int_equal(dnp_link_tick(a, 181) & DNP_LINK_EV_RETX, 0); /* no timeout round */
	assert_int_equal(dnp_link_retx_due(a), 1);
	assert_int_equal(dnp_link_retx_next(a), 0);
	assert_int_equal(dnp_link_stats(a)->retx_rounds, 0);
	dnp_link_sent(a, 0, 181);
	assert_int_equal(dnp_link_on_ack(a, 3, freed, 3, 200), 2);
	assert_int_equal(dnp_link_next_deadline(a), 1000000); /* nothing left to probe */
	dnp_link_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_link_create_rejects_bad_conf),
		cmocka_unit_test(test_link_vct_refuses_full_packet),
		cmocka_unit_test(test_link_stop_at_red_stops_and_resumes_below_yellow),
		cmocka_unit_test(test_link_stop_at_red_hw_resumes_only_on_fresh_credit),
		cmocka_unit_test(test_link_hw_ignores_stale_credit),
		cmocka_unit_test(test_link_exact_accounting),
		cmocka_unit_test(test_link_fifo_overflow),
		cmocka_unit_test(test_link_credit_schedule),
		cmocka_unit_test(test_link_credit_latch_models),
		cmocka_unit_test(test_link_four_vcs_flow_control_independently),
		cmocka_unit_test(test_link_first_credit_brings_up),
		cmocka_unit_test(test_link_ack_pops_in_order),
		cmocka_unit_test(test_link_ack_outside_window_ignored),
		cmocka_unit_test(test_link_window_full),
		cmocka_unit_test(test_link_ack_wrap_near_uint32_max),
		cmocka_unit_test(test_link_rx_seq_duplicates_and_gaps),
		cmocka_unit_test(test_link_retx_timer_and_broken),
		cmocka_unit_test(test_link_one_loss_one_fast_resend),
		cmocka_unit_test(test_link_lost_resend_marked_again),
		cmocka_unit_test(test_link_timeout_skips_held),
		cmocka_unit_test(test_link_lost_resend_probed),
		cmocka_unit_test(test_link_rto_adapts_to_rtt),
		cmocka_unit_test(test_link_rx_hold_bounds),
		cmocka_unit_test(test_link_sack_wire_format),
		cmocka_unit_test(test_link_ack_progress_resets_retries),
		cmocka_unit_test(test_link_credit_timeout_broken_once),
		cmocka_unit_test(test_link_init_timeout),
		cmocka_unit_test(test_link_set_broken_and_drain),
		cmocka_unit_test(test_link_next_deadline_is_earliest),
		cmocka_unit_test(test_link_fresh_ends_agree_on_epoch_1),
		cmocka_unit_test(test_link_late_handshake_copies_do_not_break),
		cmocka_unit_test(test_link_restarted_peer_rejoins),
		cmocka_unit_test(test_link_four_vcs_reset_then_credit),
		cmocka_unit_test(test_link_buffer_credits),
		cmocka_unit_test(test_link_silent_link_comes_back),
		cmocka_unit_test(test_link_broken_final_without_reset_period),
		cmocka_unit_test(test_link_epoch_wrap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
