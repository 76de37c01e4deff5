/* SPDX-License-Identifier: MIT */
/*
 * test_engine_rx8 — the delivery run of dnp_engine_rx_burst (engine_rx8.h)
 * and mapped buffers (conf.rx_map_priv): two engines of a 2x1x1 torus as
 * dnpd sets them, node 0 PUTs 8 bytes at a time to node 1, node 0's data
 * frames are captured and handed to node 1 as one burst. Each test checks
 * the per-frame results, what was written where, that the driver's write
 * was (or was not) called, the RX events in order, and that every PUT
 * completes once at node 0 with the status its frame deserved:
 *  - a long burst through a mapped buffer, across a full report batch;
 *  - a wrong key, a range past a buffer's end, and another buffer, each in
 *    the middle of a burst that the cache serves;
 *  - an event queue that fills in the middle of a burst;
 *  - PUTs of two source ports alternating (two report batches);
 *  - a driver write that fails in the middle of a burst (no mapping).
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
#include "pkt.h"
#include "torus.h"

#define ARENA (64u << 10)
#define BASE 0x100000ull

#include "test_arena.h"
#include "test_engine_setup.h"

#define SLOT 64 /* bytes between the PUTs' targets */
#define MAXF TEST_ENGINE_MAXF
#define SMALL 4096u /* buffer A: [BASE, BASE + SMALL); buffer B: [BASE + 2 SMALL, BASE + ARENA) */

static uint8_t mem[2][ARENA];
static struct dnp_engine *eng[2];
static uint32_t key_a, key_b, key0;
static uint64_t now;
static uint32_t evq1;    /* node 1's event queue slots (0: the default) */
static bool map = true;  /* node 1: rx_map_priv, buffers registered with their mapping */
static unsigned nwrites; /* node 1's driver writes */
static uint64_t fail_va; /* node 1's driver fails a write there (0: never) */

static struct test_engine_cap cap; /* node 0's data frames, when captured */
static bool capture;               /* this round keeps them in cap */
static unsigned ncmpl_ids; /* ids node 1's CMPL frames reported, each checked by cmpl_check */

/*
 * A frame node 1 sends: if it is a CMPL frame, each id it reports belongs
 * to a captured PUT of the port it is addressed to (one batch per sender's
 * port).
 */
static void cmpl_check(const uint8_t *f, uint32_t len)
{
	struct dnp_pkt_hdr h, d;
	const uint8_t *pl, *dpl;

	if (dnp_pkt_decode(f, len, &h, &pl) < 0 || h.kind != DNP_PKT_CMPL)
		return;
	for (unsigned k = 0; k <= h.len / 4u; k++) {
		uint32_t id = h.msg_id;
		bool found = false;

		if (k)
			memcpy(&id, pl + (k - 1) * 4u, 4);
		for (unsigned i = 0; i < cap.n && !found; i++) {
			assert_int_equal(dnp_pkt_decode(cap.data[i], cap.len[i], &d, &dpl), 0);
			if (d.msg_id == id) {
				assert_int_equal(d.src_port, h.dst_port);
				found = true;
			}
		}
		assert_true(found);
		ncmpl_ids++;
	}
}

/* Node 1's driver write: counted, and it fails at fail_va. */
static int mem_write(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va,
		     const void *src, size_t len)
{
	if (ctx == mem[1])
		nwrites++;
	if (fail_va && va == fail_va)
		return -EFAULT;
	return test_engine_mem_write(ctx, port, b, va, src, len);
}

static const struct dnp_mem_ops ops = { .read = test_engine_mem_read, .write = mem_write };

/*
 * Whether a frame crosses: all do, but node 0's data frames while 'capture'
 * (kept in cap, in order); node 1's are checked first (cmpl_check).
 */
static bool wire(unsigned from, unsigned to, unsigned dir, const struct dnp_frame *f)
{
	(void)to;
	if (from == 1)
		cmpl_check(f->data, f->len);
	if (!capture || from != 0 || !(f->data[3] & DNP_LINK_F_SEQ))
		return true;
	test_engine_keep(&cap, dir, f);
	return false;
}

/* One round: every frame goes across as one burst per link, node 0's data frames captured if asked. */
static void round_trip(bool keep)
{
	capture = keep;
	test_engine_round(eng, 2, &now, wire);
}

static int setup(void **state)
{
	(void)state;
	now = 1;
	cap.n = 0;
	capture = false;
	ncmpl_ids = 0;
	nwrites = 0;
	fail_va = 0;
	for (unsigned i = 0; i < 2; i++) {
		struct dnp_engine_conf c;

		test_engine_conf(&c, 2, i, &ops, mem[i], 91 + i);
		c.max_ports = 2;
		c.rx_map_priv = i == 1 && map;
		if (i == 1 && evq1)
			c.event_queue = evq1;
		test_engine_open(&c, now, &eng[i]);
	}
	assert_int_equal(dnp_engine_register(eng[1], 0, BASE, SMALL, DNP_BUF_PUT_TARGET,
					     map ? (uintptr_t)mem[1] : 0, &key_a),
			 0);
	assert_int_equal(dnp_engine_register(eng[1], 0, BASE + 2 * SMALL, ARENA - 2 * SMALL,
					     DNP_BUF_PUT_TARGET,
					     map ? (uintptr_t)(mem[1] + 2 * SMALL) : 0, &key_b),
			 0);
	assert_int_equal(dnp_engine_register(eng[0], 0, BASE, ARENA, DNP_BUF_PUT_TARGET, 0, &key0),
			 0);
	test_engine_links_up(eng, 2, &now, wire);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (unsigned i = 0; i < 2; i++)
		dnp_engine_destroy(eng[i]);
	evq1 = 0;
	map = true;
	return 0;
}

static int setup_small_evq(void **state)
{
	evq1 = 8;
	return setup(state);
}

static int setup_unmapped(void **state)
{
	map = false;
	return setup(state);
}

/* PUT i: 8 bytes (0x20 + i) from node 0's port 'port' to va[i] with key[i]; frames captured. */
static void put_all(unsigned n, const uint64_t *va, const uint32_t *key, const uint8_t *port)
{
	for (unsigned i = 0; i < n; i++) {
		struct dnp_cmd c = { .op = DNP_OP_PUT,
				     .dst_x = 1,
				     .remote_key = key[i],
				     .remote_va = va[i],
				     .len = 8,
				     .local_va = BASE + i * SLOT,
				     .cookie = 100 + i };

		memset(mem[0] + i * SLOT, 0x20 + (int)i, 8);
		assert_int_equal(dnp_engine_submit(eng[0], port ? port[i] : 0, &c, now), 0);
	}
	for (unsigned r = 0; r < 8 && cap.n < n; r++)
		round_trip(true);
	assert_int_equal(cap.n, n);
}

/* Hands every captured frame to node 1 as one burst; rc[] gets the results. */
static unsigned burst_all(int *rc)
{
	struct dnp_frame f[MAXF];

	for (unsigned i = 0; i < cap.n; i++) {
		f[i].data = cap.data[i];
		f[i].len = cap.len[i];
	}
	return dnp_engine_rx_burst(eng[1], dnp_torus_opposite((enum dnp_dir)cap.dir[cap.n - 1]), f,
				   cap.n, rc, now);
}

static bool written_at(uint64_t va, unsigned i)
{
	for (unsigned b = 0; b < 8; b++)
		if (mem[1][va - BASE + b] != 0x20 + i)
			return false;
	return true;
}

/*
 * Pumps until node 0 has n completions; each PUT i completes once with
 * want[i] (cookie 100 + i, on its port), node 1 sees one RX_PUT per
 * successful PUT, in the order sent, at its va.
 */
static void finish(unsigned n, const uint64_t *va, const int *want, const uint8_t *port)
{
	unsigned done[MAXF] = { 0 }, ndone = 0, rx = 0, nok = 0, k = 0;
	struct dnp_event ev;

	for (unsigned i = 0; i < n; i++)
		nok += want[i] == 0;
	for (unsigned r = 0; r < 2000 && (ndone < n || rx < nok); r++) {
		round_trip(false);
		for (unsigned p = 0; p < 2; p++)
			while (dnp_engine_poll_events(eng[0], p, &ev, 1) == 1) {
				if (ev.type == DNP_EV_LINK)
					continue;
				assert_true(ev.cookie >= 100 && ev.cookie < 100 + n);
				unsigned i = (unsigned)(ev.cookie - 100);
				assert_int_equal(ev.status, want[i]);
				assert_int_equal(ev.type, want[i] ? DNP_EV_ERROR : DNP_EV_TX_DONE);
				assert_int_equal(p, port ? port[i] : 0);
				done[i]++;
				ndone++;
			}
		while (dnp_engine_poll_events(eng[1], 0, &ev, 1) == 1) {
			if (ev.type == DNP_EV_LINK)
				continue;
			while (k < n && want[k])
				k++;
			assert_true(k < n);
			assert_int_equal(ev.type, DNP_EV_RX_PUT);
			assert_int_equal(ev.va, va[k]); /* in the order sent */
			assert_int_equal(ev.len, 8);
			assert_int_equal(ev.port, port ? port[k] : 0);
			k++;
			rx++;
		}
	}
	assert_int_equal(rx, nok);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(done[i], 1);
		if (want[i] == 0)
			assert_true(written_at(va[i], i));
	}
}

/*
 * 60 PUTs into the mapped buffer B in one burst: all fast, none through the
 * driver, the bytes where they belong; the report batch (49 ids) fills in
 * the middle and the rest open the next one.
 */
static void test_engine_rx8_mapped_long_burst(void **state)
{
	const struct dnp_engine_stats *st = dnp_engine_stats(eng[1]);
	uint64_t va[60];
	uint32_t key[60];
	int rc[60], want[60] = { 0 };

	(void)state;
	for (unsigned i = 0; i < 60; i++) {
		va[i] = BASE + 2 * SMALL + i * SLOT;
		key[i] = key_b;
	}
	put_all(60, va, key, NULL);
	assert_int_equal(burst_all(rc), 0);
	for (unsigned i = 0; i < 60; i++) {
		assert_int_equal(rc[i], 0);
		assert_true(written_at(va[i], i));
	}
	assert_int_equal(st->rx_burst_fast, 60);
	assert_int_equal(st->bytes_delivered, 60 * 8);
	assert_int_equal(nwrites, 0); /* the mapping, not the driver */
	finish(60, va, want, NULL);
	assert_int_equal(st->events, 60);
}

/*
 * In a burst into buffer A that the run caches: a wrong key, a range past
 * A's end, and a PUT into buffer B (another entry), each refused or
 * delivered as a lookup of its own would.
 */
static void test_engine_rx8_cache_checks_each_packet(void **state)
{
	uint64_t va[12];
	uint32_t key[12];
	int rc[12], want[12] = { 0 };

	(void)state;
	for (unsigned i = 0; i < 12; i++) {
		va[i] = BASE + i * SLOT;
		key[i] = key_a;
	}
	key[3] = key_a ^ 0x100;              /* the cached buffer's va, another key */
	va[6] = BASE + SMALL - 4;            /* runs past A's end by 4 bytes */
	va[8] = BASE + 2 * SMALL + 8 * SLOT; /* buffer B */
	key[8] = key_b;
	key[9] = key_b; /* A's va, B's key */
	want[3] = -EACCES;
	want[6] = -ERANGE;
	want[9] = -EACCES;
	put_all(12, va, key, NULL);
	assert_int_equal(burst_all(rc), 0);
	for (unsigned i = 0; i < 12; i++)
		assert_int_equal(rc[i], 0); /* each frame handled; the errors go back as reports */
	for (unsigned i = 0; i < 12; i++)
		assert_true(written_at(va[i], i) == (want[i] == 0));
	assert_int_equal(mem[1][SMALL - 4], 0); /* nothing of the refused range */
	assert_int_equal(nwrites, 0);
	finish(12, va, want, NULL);
}

/* An event queue of 8 fills in the middle of a burst of 14: the rest wait, then land in order. */
static void test_engine_rx8_event_queue_fills(void **state)
{
	const struct dnp_engine_stats *st = dnp_engine_stats(eng[1]);
	uint64_t va[14];
	uint32_t key[14];
	int rc[14], want[14] = { 0 };

	(void)state;
	for (unsigned i = 0; i < 14; i++) {
		va[i] = BASE + i * SLOT;
		key[i] = key_a;
	}
	put_all(14, va, key, NULL);
	(void)burst_all(rc);
	assert_int_equal(st->rx_burst_fast, 8); /* the queue's room, no more */
	assert_int_equal(st->events, 8);
	for (unsigned i = 0; i < 14; i++)
		assert_true(written_at(va[i], i) == (i < 8));
	finish(14, va, want, NULL);
}

/* PUTs of node 0's ports 0 and 1 alternating: two report batches, each PUT completes on its port. */
static void test_engine_rx8_two_source_ports(void **state)
{
	uint64_t va[20];
	uint32_t key[20];
	uint8_t port[20];
	int rc[20], want[20] = { 0 };

	(void)state;
	for (unsigned i = 0; i < 20; i++) {
		va[i] = BASE + i * SLOT;
		key[i] = key_a;
		port[i] = (uint8_t)(i % 3 == 1);
	}
	put_all(20, va, key, port);
	assert_int_equal(burst_all(rc), 0);
	for (unsigned i = 0; i < 20; i++)
		assert_int_equal(rc[i], 0);
	finish(20, va, want, port);
	assert_int_equal(ncmpl_ids, 20); /* each report in its port's batch (cmpl_check) */
}

/* No mapping: the driver writes each PUT, and one write that fails is that PUT's -EFAULT. */
static void test_engine_rx8_driver_write_fails(void **state)
{
	uint64_t va[10];
	uint32_t key[10];
	int rc[10], want[10] = { 0 };

	(void)state;
	for (unsigned i = 0; i < 10; i++) {
		va[i] = BASE + i * SLOT;
		key[i] = key_a;
	}
	want[4] = -EFAULT;
	fail_va = va[4];
	put_all(10, va, key, NULL);
	assert_int_equal(burst_all(rc), 0);
	assert_int_equal(nwrites, 10);
	for (unsigned i = 0; i < 10; i++)
		assert_true(written_at(va[i], i) == (i != 4));
	finish(10, va, want, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_engine_rx8_mapped_long_burst, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_rx8_cache_checks_each_packet, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_engine_rx8_event_queue_fills, setup_small_evq,
						teardown),
		cmocka_unit_test_setup_teardown(test_engine_rx8_two_source_ports, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_rx8_driver_write_fails, setup_unmapped,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
