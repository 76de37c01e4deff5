/* SPDX-License-Identifier: MIT */
/*
 * test_engine_burst — burst receive (dnp_engine_rx_burst): two engines of a
 * 2x1x1 torus as dnpd sets them (exact credits, prompt, rx_direct), node 0
 * PUTs to node 1, and node 0's data frames are handed to node 1 as one
 * burst built by each test: with a frame whose CRC is broken, with a frame
 * of the other link, out of sequence, and with deliveries that must wait
 * for room in the event queue; and, on a ring of 3, a burst whose frames
 * carry the only ack of node 1's report frame, which the burst must apply.
 * Each test checks the per-frame results, the fast-path count, the bytes
 * written, and, after the rest is pumped, that every PUT was written and
 * completed exactly once, in order.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine.h"
#include "link.h"
#include "pkt.h"
#include "torus.h"

#define ARENA (64u << 10)
#define BASE 0x100000ull

#include "test_arena.h"
#include "test_engine_setup.h"

#define NPUT 8
#define SLOT 64 /* bytes between the PUTs' targets */
#define MAXF TEST_ENGINE_MAXF

static uint8_t mem[3][ARENA];
static struct dnp_engine *eng[3];
static unsigned nn = 2; /* nodes on the X ring: 2, or 3 (test_acks_per_burst) */
static uint32_t key0, key1;
static uint64_t now;
static uint32_t evq1; /* node 1's event queue slots (0: the default) */

static struct test_engine_cap cap; /* node 0's data frames to node 1, when captured */
static bool capture;               /* this round keeps them in cap */
static bool hold_all;  /* ... and node 0's other frames to node 1 are lost on the wire */
static unsigned nlost; /* frames lost so */

static const struct dnp_mem_ops ops = { .read = test_engine_mem_read,
					.write = test_engine_mem_write };

/*
 * Whether a frame crosses: all do, except node 0's data frames to node 1
 * while 'capture' (kept in cap, in order; with hold_all, node 0's other
 * frames to node 1 are lost).
 */
static bool wire(unsigned from, unsigned to, unsigned dir, const struct dnp_frame *f)
{
	if (!capture || from != 0 || to != 1)
		return true;
	if (f->data[3] & DNP_LINK_F_SEQ) {
		test_engine_keep(&cap, dir, f);
		return false;
	}
	if (hold_all)
		nlost++;
	return !hold_all;
}

/* One round: every frame goes across as one burst per link, but what wire() keeps. */
static void round_trip(bool keep)
{
	capture = keep;
	test_engine_round(eng, nn, &now, wire);
}

static int setup(void **state)
{
	(void)state;
	now = 1;
	cap.n = 0;
	nlost = 0;
	hold_all = false;
	capture = false;
	for (unsigned i = 0; i < nn; i++) {
		struct dnp_engine_conf c;

		test_engine_conf(&c, nn, i, &ops, mem[i], 77 + i);
		if (i == 1 && evq1)
			c.event_queue = evq1;
		test_engine_open(&c, now, &eng[i]);
	}
	assert_int_equal(dnp_engine_register(eng[1], 0, BASE, ARENA, DNP_BUF_PUT_TARGET, 0, &key1),
			 0);
	assert_int_equal(dnp_engine_register(eng[0], 0, BASE, ARENA, DNP_BUF_PUT_TARGET, 0, &key0),
			 0);
	test_engine_links_up(eng, nn, &now, wire);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (unsigned i = 0; i < nn; i++)
		dnp_engine_destroy(eng[i]);
	evq1 = 0;
	nn = 2;
	return 0;
}

static int setup_ring3(void **state)
{
	nn = 3;
	return setup(state);
}

static int setup_small_evq(void **state)
{
	evq1 = 4;
	return setup(state);
}

/* Node 0 PUTs [lo, hi) of the 8-byte values (PUT i: bytes 0x10 + i at slot i), frames kept. */
static void put_range(unsigned lo, unsigned hi)
{
	for (unsigned i = lo; i < hi; i++) {
		struct dnp_cmd c = { .op = DNP_OP_PUT,
				     .dst_x = 1,
				     .remote_key = key1,
				     .remote_va = BASE + i * SLOT,
				     .len = 8,
				     .local_va = BASE + i * SLOT,
				     .cookie = 100 + i };

		memset(mem[0] + i * SLOT, 0x10 + (int)i, 8);
		assert_int_equal(dnp_engine_submit(eng[0], 0, &c, now), 0);
	}
	for (unsigned r = 0; r < 4 && cap.n < hi; r++)
		round_trip(true);
	assert_int_equal(cap.n, hi);
}

static void put_and_capture(void)
{
	put_range(0, NPUT);
	for (unsigned i = 1; i < NPUT; i++)
		assert_int_equal(cap.dir[i], cap.dir[0]); /* one link carries them */
}

static bool written(unsigned i)
{
	for (unsigned b = 0; b < 8; b++)
		if (mem[1][i * SLOT + b] != 0x10 + i)
			return false;
	return true;
}

/* node 1's link that receives what node 0 sent on cap.dir[0] */
static unsigned rxdir(void)
{
	return dnp_torus_opposite((enum dnp_dir)cap.dir[0]);
}

/* Hands cap.data[order[0..n)] to node 1 as one burst; rc[] gets the results. */
static unsigned burst(const unsigned *order, unsigned n, int *rc)
{
	struct dnp_frame f[MAXF];

	for (unsigned i = 0; i < n; i++) {
		f[i].data = cap.data[order[i]];
		f[i].len = cap.len[order[i]];
	}
	return dnp_engine_rx_burst(eng[1], rxdir(), f, n, rc, now);
}

/*
 * Pumps until node 0 has every completion; checks that each PUT completed
 * exactly once and successfully, that node 1 saw one RX_PUT per PUT, in
 * the order sent, and that every value was written.
 */
static void finish(void)
{
	unsigned done[NPUT] = { 0 }, rx = 0, ndone = 0;
	struct dnp_event ev;

	hold_all = false;
	for (unsigned r = 0; r < 2000 && (ndone < NPUT || rx < NPUT); r++) {
		round_trip(false);
		while (dnp_engine_poll_events(eng[0], 0, &ev, 1) == 1) {
			if (ev.type == DNP_EV_LINK)
				continue;
			assert_int_equal(ev.type, DNP_EV_TX_DONE);
			assert_int_equal(ev.status, 0);
			assert_true(ev.cookie >= 100 && ev.cookie < 100 + NPUT);
			done[ev.cookie - 100]++;
			ndone++;
		}
		while (dnp_engine_poll_events(eng[1], 0, &ev, 1) == 1) {
			if (ev.type == DNP_EV_LINK)
				continue;
			assert_int_equal(ev.type, DNP_EV_RX_PUT);
			assert_true(rx < NPUT);
			assert_int_equal(ev.va, BASE + rx * SLOT); /* in the order sent */
			rx++;
		}
	}
	assert_int_equal(rx, NPUT);
	for (unsigned i = 0; i < NPUT; i++) {
		assert_int_equal(done[i], 1);
		assert_true(written(i));
	}
}

/* A burst with a broken frame in the middle: it alone is dropped, and resent. */
static void test_bad_crc_in_the_middle(void **state)
{
	const unsigned order[NPUT] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	const struct dnp_engine_stats *st = dnp_engine_stats(eng[1]);
	int rc[NPUT];

	(void)state;
	put_and_capture();
	cap.data[3][cap.len[3] - 20] ^= 0x01; /* a payload bit: only the CRC can tell */
	assert_int_equal(burst(order, NPUT, rc), 1);
	for (unsigned i = 0; i < NPUT; i++)
		assert_int_equal(rc[i], i == 3 ? -EILSEQ : 0); /* 4..7: held beyond the gap */
	assert_int_equal(st->rx_crc_errors, 1);
	assert_int_equal(st->rx_burst_fast, 3);
	for (unsigned i = 0; i < NPUT; i++)
		assert_true(written(i) == (i < 3));
	finish(); /* frame 3 is resent (the selective ack names what is held) */
}

/* A burst with a frame of the other link in it: that one is refused, the rest go fast. */
static void test_frame_of_two_links(void **state)
{
	const unsigned order[NPUT] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	const struct dnp_engine_stats *st = dnp_engine_stats(eng[1]);
	uint8_t other[DNP_MAX_FRAME];
	struct dnp_frame f[NPUT + 1];
	struct dnp_pkt_hdr h;
	const uint8_t *pl;
	int rc[NPUT + 1];
	int olen;

	(void)state;
	put_and_capture();
	/*
	 * Frame 4 as the other link's sender would have sent it (its output
	 * direction is the other one), resealed: every check but the link's passes.
	 */
	assert_int_equal(dnp_pkt_decode(cap.data[4], cap.len[4], &h, &pl), 0);
	h.src_dir = (uint8_t)(cap.dir[0] == DNP_DIR_XP ? DNP_DIR_XM : DNP_DIR_XP);
	olen = dnp_pkt_encode(&h, pl, other, sizeof(other));
	assert_int_equal(olen, (int)cap.len[4]);
	for (unsigned i = 0, k = 0; i < NPUT + 1; i++) {
		if (i == 4) {
			f[i].data = other;
			f[i].len = (uint32_t)olen;
			continue;
		}
		f[i].data = cap.data[order[k]];
		f[i].len = cap.len[order[k++]];
	}
	assert_int_equal(dnp_engine_rx_burst(eng[1], rxdir(), f, NPUT + 1, rc, now), 1);
	for (unsigned i = 0; i < NPUT + 1; i++)
		assert_int_equal(rc[i], i == 4 ? -EXDEV : 0);
	assert_int_equal(st->rx_wrong_link, 1);
	assert_int_equal(st->rx_burst_fast, NPUT); /* before and after it */
	for (unsigned i = 0; i < NPUT; i++)
		assert_true(written(i));
	finish();
}

/* Out of sequence: 0 2 1 4 3 5 6 7: held frames go first, the order is kept. */
static void test_out_of_sequence(void **state)
{
	const unsigned order[NPUT] = { 0, 2, 1, 4, 3, 5, 6, 7 };
	const struct dnp_engine_stats *st = dnp_engine_stats(eng[1]);
	int rc[NPUT];

	(void)state;
	put_and_capture();
	assert_int_equal(burst(order, NPUT, rc), 0);
	for (unsigned i = 0; i < NPUT; i++)
		assert_int_equal(rc[i], 0);
	/* 0 and 1 go fast; 2 was held, then queued behind 1, so 3.. wait their turn */
	assert_int_equal(st->rx_burst_fast, 2);
	assert_true(written(0) && written(1));
	assert_false(written(2) || written(7)); /* nothing overtakes a queued frame */
	finish();
	assert_int_equal(st->rx_burst_fast, 2);
}

/* Deliveries that must wait (node 1's event queue is full): queued, in order, once each. */
static void test_delivery_must_wait(void **state)
{
	const unsigned order[NPUT] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	const struct dnp_engine_stats *st = dnp_engine_stats(eng[1]);
	int rc[NPUT];
	unsigned fast;

	(void)state;
	put_and_capture();
	assert_int_equal(burst(order, NPUT, rc), 0);
	for (unsigned i = 0; i < NPUT; i++)
		assert_int_equal(rc[i], 0);
	fast = (unsigned)st->rx_burst_fast;
	assert_true(fast >= 1 && fast < NPUT); /* the queue of 4 slots filled up */
	for (unsigned i = 0; i < NPUT; i++)
		assert_true(written(i) == (i < fast));
	/* the same frames again (a peer's resend): duplicates, applied never */
	assert_int_equal(burst(order, fast, rc), fast);
	for (unsigned i = 0; i < fast; i++)
		assert_int_equal(rc[i], -EALREADY);
	finish();
}

/*
 * Acks per burst: on a ring of 3, node 1 answers node 0's PUTs with its
 * report frame on the same link, and node 0's later data frames carry the
 * only ack of it (node 0's credit frames are lost). The burst of those
 * frames, all on the fast path, must apply that ack: node 1 holds nothing
 * unacked after it.
 */
static void test_acks_per_burst(void **state)
{
	const unsigned order[NPUT] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	const struct dnp_engine_stats *st = dnp_engine_stats(eng[1]);
	int rc[NPUT];

	(void)state;
	hold_all = true;
	put_range(0, NPUT / 2);
	assert_int_equal(burst(order, NPUT / 2, rc), 0);
	round_trip(true); /* node 1's report (a sequenced frame) goes to node 0 */
	assert_true(dnp_link_unacked(dnp_engine_link(eng[1], rxdir())) > 0);
	put_range(NPUT / 2, NPUT);
	assert_true(nlost > 0);
	assert_true(dnp_link_unacked(dnp_engine_link(eng[1], rxdir())) > 0); /* no ack heard */
	assert_int_equal(burst(order + NPUT / 2, NPUT / 2, rc), 0);
	assert_int_equal(st->rx_burst_fast, NPUT);
	assert_int_equal(dnp_link_unacked(dnp_engine_link(eng[1], rxdir())), 0);
	finish();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bad_crc_in_the_middle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame_of_two_links, setup, teardown),
		cmocka_unit_test_setup_teardown(test_out_of_sequence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delivery_must_wait, setup_small_evq, teardown),
		cmocka_unit_test_setup_teardown(test_acks_per_burst, setup_ring3, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
