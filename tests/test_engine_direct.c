/* SPDX-License-Identifier: MIT */
/*
 * test_engine_direct — direct receive (dnp_engine_conf.rx_direct): data
 * frames for the node are delivered from the caller's frame, without a copy
 * into a packet buffer first. Checked: the bytes and events are those of the
 * copying path, the path is taken, a replayed frame is not applied twice,
 * credits keep flowing through a long message, and a peer that rewrites the
 * frame while it is delivered changes nothing but payload bytes. Engines on
 * an X ring wired frame by frame (test_engine_harness.h).
 */
#include "test_engine_harness.h"

/* The frame being handed to dnp_engine_rx (pump's buffer, through pump_mangle). */
static uint8_t *cur_frame;
static uint32_t cur_len;
static bool rewrite;      /* node 1's next write rewrites cur_frame first (a hostile peer) */
static unsigned rewrites; /* rewrites done */
static uint32_t evq1;     /* node 1's event queue slots (0: the default) */
static uint8_t replay[DNP_MAX_FRAME]; /* the last PUT frame node 0 sent */
static uint32_t replay_len;

static void note_frame(unsigned from, uint8_t *frame, uint32_t len)
{
	struct dnp_pkt_hdr h;
	const uint8_t *pl;

	cur_frame = frame;
	cur_len = len;
	if (from == 0 && dnp_pkt_decode(frame, len, &h, &pl) == 0 && h.kind == DNP_PKT_PUT) {
		memcpy(replay, frame, len);
		replay_len = len;
	}
}

/*
 * Node 1's writes: with 'rewrite', the frame's header and footer are
 * scribbled over first, after the engine checked them (its va, key, length,
 * flags, message id and length): as a peer daemon writing a shm slot could.
 */
static int direct_write(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va,
			const void *src, size_t len)
{
	if (rewrite && cur_frame && (struct node *)ctx == &nodes[1]) {
		memset(cur_frame + 16, 0x77, 32); /* H0 (but its first word) and H1 */
		memset(cur_frame + cur_len - 16, 0x77, 16);
		rewrites++;
	}
	return mem_write(ctx, port, b, va, src, len);
}

static const struct dnp_mem_ops direct_ops = { .read = mem_read, .write = direct_write };

/* Two nodes as dnpd sets them (exact credits, prompt), node i with rx_direct = direct[i]. */
static void setup_direct(bool d0, bool d1)
{
	nnodes = 2;
	now = 0;
	for (unsigned i = 0; i < 2; i++) {
		struct dnp_engine_conf c;

		for (unsigned p = 0; p < NPORTS; p++) {
			nodes[i].mem[p] = calloc(1, ARENA);
			assert_non_null(nodes[i].mem[p]);
		}
		dnp_engine_conf_default(&c);
		dnp_torus_init(&c.torus, 2, 1, 1);
		c.self = (struct dnp_coord){ (uint8_t)i, 0, 0 };
		c.max_ports = NPORTS;
		c.mem = &direct_ops;
		c.mem_ctx = &nodes[i];
		c.key_secret[0] = 1234 + i;
		c.link.credit_model = DNP_CREDIT_EXACT;
		c.prompt_credits = true;
		c.link.credit_period = 1000000000;
		c.link.credit_timeout = 4000000000;
		c.rx_direct = i ? d1 : d0;
		if (i == 1 && evq1)
			c.event_queue = evq1;
		assert_int_equal(dnp_engine_create(&c, now, &nodes[i].e), 0);
		for (unsigned p = 0; p < NPORTS; p++)
			assert_int_equal(dnp_engine_port_open(nodes[i].e, p), 0);
	}
	pump_mangle = note_frame;
}

static int teardown_direct(void **state)
{
	cur_frame = NULL;
	rewrite = false;
	rewrites = 0;
	replay_len = 0;
	evq1 = 0;
	return teardown(state);
}

static const struct dnp_engine_stats *st(unsigned n)
{
	return dnp_engine_stats(nodes[n].e);
}

/* One event, reduced to what both paths must agree on. */
struct evrec {
	uint8_t type, op;
	int8_t status;
	uint32_t len;
	uint64_t va, cookie;
};

#define MAXEV 256
struct trace {
	struct evrec ev[2][MAXEV];
	unsigned n[2];
	uint64_t sum[2]; /* of node i's port 0 and 1 memory */
	uint64_t delivered[2], bytes[2];
};

static void drain(struct trace *t)
{
	struct dnp_event ev;

	for (unsigned i = 0; i < 2; i++)
		for (unsigned p = 0; p < NPORTS; p++)
			while (dnp_engine_poll_events(nodes[i].e, p, &ev, 1) == 1) {
				if (ev.type == DNP_EV_LINK)
					continue;
				assert_true(t->n[i] < MAXEV);
				t->ev[i][t->n[i]++] = (struct evrec){ ev.type, ev.op, ev.status,
								      ev.len,  ev.va, ev.cookie };
			}
}

/*
 * A mix both ways: a 1 MiB PUT, fifty 8-byte PUTs, a 10 KiB SEND, a 20 KiB
 * GET, and a PUT to a wrong key. Returns what the nodes saw.
 */
static void workload(bool d0, bool d1, struct trace *t)
{
	uint32_t k1, k0;

	memset(t, 0, sizeof(*t));
	setup_direct(d0, d1);
	k1 = reg_buf(1, 0, BASE, 2u << 20, DNP_BUF_PUT_TARGET | DNP_BUF_GET_SOURCE);
	k0 = reg_buf(0, 0, BASE + (2u << 20), 1u << 20, DNP_BUF_PUT_TARGET);
	(void)reg_buf(1, 1, BASE, 64u << 10, DNP_BUF_SEND_TARGET);
	fill(nodes[0].mem[0], 2u << 20, 3);
	fill(nodes[1].mem[0], 2u << 20, 5);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, k1, 1u << 20, 1);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	for (unsigned i = 0; i < 50; i++) {
		c = put_cmd(1, 0, BASE + 8 * i, BASE + (1u << 20) + 64 * i, k1, 8, 100 + i);
		while (dnp_engine_submit(nodes[0].e, 0, &c, now) == -EAGAIN) {
			pump(1);
			drain(t);
		}
	}
	c = send_cmd(1, 1, BASE + 4096, 10u << 10, 7);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	c = get_cmd(1, 0, BASE + 4096, k1, 20u << 10, BASE + (2u << 20), k0, 8);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	c = put_cmd(1, 0, BASE, BASE, k1 ^ 0x5a5a, 64, 9);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	for (unsigned s = 0; s < 20000; s++) {
		pump(1);
		drain(t);
	}
	for (unsigned i = 0; i < 2; i++) {
		for (unsigned p = 0; p < NPORTS; p++)
			for (size_t b = 0; b < ARENA; b += 8) {
				uint64_t w;

				memcpy(&w, nodes[i].mem[p] + b, 8);
				t->sum[i] = t->sum[i] * 31 + w;
			}
		t->delivered[i] = st(i)->pkts_delivered;
		t->bytes[i] = st(i)->bytes_delivered;
	}
}

static int evcmp(const void *x, const void *y)
{
	const struct evrec *a = x, *b = y;

	if (a->cookie != b->cookie)
		return a->cookie < b->cookie ? -1 : 1;
	return memcmp(a, b, sizeof(*a));
}

/*
 * The same mix with and without direct receive: the same events (in the same
 * order where one source and link make it), the same memory, the same packets and bytes delivered; the direct
 * path delivered most data frames, the copying path none.
 */
static void test_direct_same_as_copy(void **state)
{
	static struct trace a, b;
	uint64_t direct;

	workload(false, false, &a);
	assert_int_equal(st(0)->rx_direct + st(1)->rx_direct, 0);
	teardown_direct(state);
	workload(true, true, &b);
	direct = st(1)->rx_direct;
	/* 256 + 50 + 3 data frames reach node 1, 5 node 0 (GET responses) */
	assert_true(direct >= 300);
	assert_true(st(0)->rx_direct >= 5);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(a.n[i], b.n[i]);
		/*
		 * Node 1 hears one source through one link: the same sequence.
		 * Node 0's completions may come in another order: a GET's data
		 * is delivered as it arrives, no longer at the next run.
		 */
		if (i == 0) {
			qsort(a.ev[0], a.n[0], sizeof(a.ev[0][0]), evcmp);
			qsort(b.ev[0], b.n[0], sizeof(b.ev[0][0]), evcmp);
		}
		assert_memory_equal(a.ev[i], b.ev[i], a.n[i] * sizeof(a.ev[i][0]));
		assert_true(a.sum[i] == b.sum[i]);
		assert_int_equal(a.delivered[i], b.delivered[i]);
		assert_int_equal(a.bytes[i], b.bytes[i]);
	}
	/* and the mix did what it says: 1 + 50 PUTs, a SEND, a GET done, one refused */
	assert_int_equal(b.n[1], 52);
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], 8);
	assert_memory_equal(nodes[1].mem[0] + (1u << 20) - 4096,
			    nodes[0].mem[0] + (1u << 20) - 4096, 4096);
}

/* A PUT frame delivered directly, then replayed: refused as a duplicate, applied once. */
static void test_direct_replay(void **state)
{
	setup_direct(false, true);
	uint32_t k1 = reg_buf(1, 0, BASE, 4096, DNP_BUF_PUT_TARGET);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, k1, 32, 1);

	fill(nodes[0].mem[0], 32, 1);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_event_nolink(1, 0, 5000, DNP_EV_RX_PUT);
	expect_event_nolink(0, 0, 5000, DNP_EV_TX_DONE);
	assert_int_equal(st(1)->rx_direct, 1);
	assert_true(replay_len > 0);
	memset(nodes[1].mem[0], 0, 32);
	assert_int_equal(dnp_engine_rx(nodes[1].e, DNP_DIR_XM, replay, replay_len, now), -EALREADY);
	expect_quiet(1, 0, 200);
	assert_int_equal(nodes[1].mem[0][0], 0); /* not written again */
	assert_int_equal(st(1)->rx_direct, 1);
}

/*
 * The peer rewrites each frame's header while its payload is being written
 * (after the CRC and every check): the message still lands where and as
 * its checked header said, whole, and both ends hear of it as sent.
 */
static void test_direct_rewritten_frame(void **state)
{
	setup_direct(false, true);
	uint32_t k1 = reg_buf(1, 0, BASE + 65536, 64u << 10, DNP_BUF_PUT_TARGET);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE + 65536, k1, 40000, 1);
	struct dnp_event ev;

	fill(nodes[0].mem[0], 40000, 7);
	rewrite = true;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	ev = expect_event_nolink(1, 0, 20000, DNP_EV_RX_PUT);
	assert_int_equal(ev.len, 40000);
	assert_int_equal(ev.va, BASE + 65536);
	ev = expect_event_nolink(0, 0, 20000, DNP_EV_TX_DONE);
	assert_int_equal(ev.status, 0);
	assert_int_equal(rewrites, 10); /* every fragment was rewritten under the engine */
	assert_memory_equal(nodes[1].mem[0] + 65536, nodes[0].mem[0], 40000);
	/* nothing written outside the target */
	for (unsigned i = 0; i < 65536; i++)
		assert_int_equal(nodes[1].mem[0][i], 0);
	for (unsigned i = 65536 + 40000; i < 4u << 20; i += 512)
		assert_int_equal(nodes[1].mem[0][i], 0);
	assert_int_equal(st(1)->rx_direct, 10);
}

/*
 * Deliveries that must wait (the port's event queue is full) take the
 * copying path and are delivered, in order, once there is room.
 */
static void test_direct_full_falls_back(void **state)
{
	evq1 = 8;
	setup_direct(false, true);
	uint32_t k1 = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
	struct dnp_event ev;
	unsigned got = 0;
	uint64_t direct;

	fill(nodes[0].mem[0], 65536, 2);
	for (unsigned i = 0; i < 40; i++) {
		struct dnp_cmd c = put_cmd(1, 0, BASE + 64 * i, BASE + 64 * i, k1, 64, i);

		while (dnp_engine_submit(nodes[0].e, 0, &c, now) == -EAGAIN)
			pump(1);
	}
	pump(3000); /* node 1's app reads nothing meanwhile */
	direct = st(1)->rx_direct;
	assert_true(direct < 40); /* some had to wait for room: copied */
	for (unsigned s = 0; s < 20000 && got < 40; s++) {
		while (dnp_engine_poll_events(nodes[1].e, 0, &ev, 1) == 1) {
			if (ev.type == DNP_EV_LINK)
				continue;
			assert_int_equal(ev.type, DNP_EV_RX_PUT);
			assert_int_equal(ev.va, BASE + 64 * got); /* in order */
			got++;
		}
		pump(1);
	}
	assert_int_equal(got, 40);
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], 40 * 64);
}

/*
 * A message waiting in the FIFO for room in port 0's event queue holds up
 * the packets behind it, a PUT to port 1 too, with or without direct
 * receive (a direct frame never passes a queued one).
 */
static void test_direct_fifo_order(void **state)
{
	for (unsigned d = 0; d < 2; d++) {
		evq1 = 8;
		setup_direct(false, d != 0);
		uint32_t k0 = reg_buf(1, 0, BASE, 65536, DNP_BUF_PUT_TARGET);
		uint32_t k1 = reg_buf(1, 1, BASE, 65536, DNP_BUF_PUT_TARGET);
		struct dnp_event ev;
		unsigned got = 0;

		for (unsigned i = 0; i < 12; i++) {
			struct dnp_cmd c = put_cmd(1, 0, BASE + 64 * i, BASE + 64 * i, k0, 64, i);

			while (dnp_engine_submit(nodes[0].e, 0, &c, now) == -EAGAIN)
				pump(1);
		}
		pump(2000);
		struct dnp_cmd c = put_cmd(1, 1, BASE, BASE, k1, 64, 99);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 1, &c, now), 0);
		pump(2000);
		assert_int_equal(dnp_engine_poll_events(nodes[1].e, 1, &ev, 1), 0); /* held up */
		for (unsigned s = 0; s < 20000 && got < 12; s++) {
			while (dnp_engine_poll_events(nodes[1].e, 0, &ev, 1) == 1)
				got += ev.type == DNP_EV_RX_PUT;
			pump(1);
		}
		assert_int_equal(got, 12);
		expect_event_nolink(1, 1, 5000, DNP_EV_RX_PUT);
		teardown_direct(state);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_direct_same_as_copy, teardown_direct),
		cmocka_unit_test_teardown(test_direct_replay, teardown_direct),
		cmocka_unit_test_teardown(test_direct_rewritten_frame, teardown_direct),
		cmocka_unit_test_teardown(test_direct_full_falls_back, teardown_direct),
		cmocka_unit_test_teardown(test_direct_fifo_order, teardown_direct),
	};

	(void)setup_nodes; /* the harness's own setup: not used here */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
