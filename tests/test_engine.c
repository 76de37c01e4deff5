/* SPDX-License-Identifier: MIT */
/*
 * test_engine — two engines on a 2x1x1 torus (and loopback on one node),
 * wired frame by frame in this test, no lab and no transport.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine.h"

#define ARENA (4u << 20)
#define BASE 0x100000ull
#define NPORTS 2

struct node {
	struct dnp_engine *e;
	uint8_t *mem[NPORTS];
};

/*
 * Deferred writes (engine.h, struct dnp_mem_ops: flush), as dnpd does for
 * memory outside an application's heap: with 'defer' set, mem_write only
 * queues, and flush writes what is queued, except bytes inside a poisoned
 * range, whose writes fail.
 */
static struct node nodes[4];

#define MAXQ 64
struct qwrite {
	unsigned node, port;
	uint64_t va;
	uint32_t len;
	uint8_t data[DNP_MAX_PAYLOAD];
};
static bool defer;
static struct qwrite queued[MAXQ];
static unsigned nqueued, flushes;
static uint64_t poison_lo, poison_hi; /* [lo, hi) of node 1, port 0: writes there fail */
static bool poison_failed;            /* a flushed write hit it since the last flush */
/* The engine's reads of node 0 port 0 and node 1 port 0, as it tagged them. */
#define MAXREADS 64
static struct dnp_mem_seq reads[2][MAXREADS];
static unsigned nreads[2];

static int mem_read(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va, void *dst,
		    size_t len, const struct dnp_mem_seq *seq)
{
	struct node *n = ctx;
	unsigned ni = (unsigned)(n - nodes);
	if (port >= NPORTS || va < BASE || va + len > BASE + ARENA)
		return -EFAULT;
	if (port == 0 && ni < 2 && nreads[ni] < MAXREADS)
		reads[ni][nreads[ni]++] = seq ? *seq : (struct dnp_mem_seq){ 0, 0 };
	memcpy(dst, n->mem[port] + (va - BASE), len);
	return 0;
}

static int mem_write(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va,
		     const void *src, size_t len)
{
	struct node *n = ctx;
	if (port >= NPORTS || va < BASE || va + len > BASE + ARENA)
		return -EFAULT;
	if (defer) {
		assert_true(nqueued < MAXQ && len <= DNP_MAX_PAYLOAD);
		queued[nqueued] = (struct qwrite){
			.node = (unsigned)(n - nodes), .port = port, .va = va, .len = (uint32_t)len
		};
		memcpy(queued[nqueued++].data, src, len);
		return 0;
	}
	memcpy(n->mem[port] + (va - BASE), src, len);
	return 0;
}

static int mem_flush(void *ctx, unsigned port, uint64_t va, uint64_t len)
{
	struct node *n = ctx;
	unsigned ni = (unsigned)(n - nodes), k = 0;
	int rc = 0;

	flushes++;
	for (unsigned i = 0; i < nqueued; i++) {
		struct qwrite *q = &queued[i];

		if (q->node != ni || q->port != port) {
			queued[k++] = *q;
			continue;
		}
		if (ni == 1 && port == 0 && q->va < poison_hi && poison_lo < q->va + q->len)
			poison_failed = true;
		else
			memcpy(n->mem[port] + (q->va - BASE), q->data, q->len);
	}
	nqueued = k;
	if (poison_failed && ni == 1 && port == 0 && va < poison_hi && poison_lo < va + len) {
		poison_failed = false;
		rc = -EFAULT;
	}
	return rc;
}

static const struct dnp_mem_ops ops = { .read = mem_read, .write = mem_write };
static const struct dnp_mem_ops ops_flush = { .read = mem_read,
					      .write = mem_write,
					      .flush = mem_flush };

/* Per-test settings applied by setup_nodes (reset by teardown). */
static uint64_t t_cmd, t_reasm, t_deliver; /* the engine's timeouts (0 = none) */
static uint32_t evq_slots;                 /* event queue size of node evq_node (0 = default) */
static unsigned evq_node = 1;
static int pool_node = -1;                 /* this node gets the pools below */
static uint32_t pool_small_n, pool_big_n;  /* its packet buffers (0: the engine sizes them) */
static int drop_node = -1, drop_kind = -1; /* pump drops these frames */
static int64_t drop_seq = -1;              /* pump drops node 0's first frame with this seq */
static int hold_node = -1; /* pump neither runs nor drains this node (its input piles up) */
static unsigned nnodes;
static uint64_t now;
static bool exact_prompt;                /* dnpd's link settings instead of the hardware's */
static uint64_t ack_delay;               /* with exact_prompt: engine.h's ack_delay */
static uint64_t reset_period;            /* links come back (0: BROKEN is final) */
static uint8_t last_data[DNP_MAX_FRAME]; /* the last data frame pump() carried */
static uint32_t last_data_len;

static void create_node(unsigned i, unsigned x, uint32_t seed)
{
	struct dnp_engine_conf c;
	dnp_engine_conf_default(&c);
	dnp_torus_init(&c.torus, x, 1, 1);
	c.self = (struct dnp_coord){ (uint8_t)i, 0, 0 };
	c.max_ports = NPORTS;
	c.mem = defer ? &ops_flush : &ops;
	c.mem_ctx = &nodes[i];
	c.key_secret[0] = seed;
	c.cmd_timeout = t_cmd;
	c.reasm_timeout = t_reasm;
	c.deliver_timeout = t_deliver;
	if (evq_slots && i == evq_node)
		c.event_queue = evq_slots;
	if ((int)i == pool_node) {
		c.pool_small = pool_small_n;
		c.pool_big = pool_big_n;
	}
	c.link.reset_period = reset_period;
	if (exact_prompt) {
		c.link.credit_model = DNP_CREDIT_EXACT;
		c.prompt_credits = true;
		c.link.credit_period = 1000000000; /* keep-alive only */
		c.link.credit_timeout = 4000000000;
		c.ack_delay = ack_delay;
	}
	assert_int_equal(dnp_engine_create(&c, now, &nodes[i].e), 0);
	for (unsigned p = 0; p < NPORTS; p++)
		assert_int_equal(dnp_engine_port_open(nodes[i].e, p), 0);
}

static void setup_nodes(unsigned x)
{
	nnodes = x;
	now = 0;
	for (unsigned i = 0; i < x; i++) {
		for (unsigned p = 0; p < NPORTS; p++) {
			nodes[i].mem[p] = calloc(1, ARENA);
			assert_non_null(nodes[i].mem[p]);
		}
		create_node(i, x, 1234 + i);
	}
}

static int teardown(void **state)
{
	for (unsigned i = 0; i < nnodes; i++) {
		dnp_engine_destroy(nodes[i].e);
		for (unsigned p = 0; p < NPORTS; p++)
			free(nodes[i].mem[p]);
	}
	memset(nodes, 0, sizeof(nodes));
	exact_prompt = false;
	ack_delay = 0;
	reset_period = 0;
	t_cmd = t_reasm = t_deliver = 0;
	evq_slots = 0;
	evq_node = 1;
	pool_node = -1;
	pool_small_n = pool_big_n = 0;
	drop_node = drop_kind = -1;
	drop_seq = -1;
	hold_node = -1;
	defer = false;
	nqueued = flushes = 0;
	poison_lo = poison_hi = 0;
	poison_failed = false;
	memset(nreads, 0, sizeof(nreads));
	return 0;
}

/* Moves frames between the nodes for 'steps' time units. */
static void pump(unsigned steps)
{
	struct dnp_frame f[16];

	for (unsigned s = 0; s < steps; s++, now++) {
		for (unsigned i = 0; i < nnodes; i++)
			if ((int)i != hold_node)
				dnp_engine_run(nodes[i].e, now);
		for (unsigned i = 0; i < nnodes; i++) {
			for (unsigned d = 0; d < DNP_NDIRS; d++) {
				unsigned n = (int)i == hold_node ?
						     0 :
						     dnp_engine_tx_burst(nodes[i].e, d, f, 16, now);
				for (unsigned k = 0; k < n; k++) {
					uint8_t copy[DNP_MAX_FRAME];
					memcpy(copy, f[k].data, f[k].len);
					if (copy[3] & DNP_LINK_F_SEQ) {
						memcpy(last_data, copy, f[k].len);
						last_data_len = f[k].len;
					}
					/* X ring: + goes to i+1, - to i-1 */
					unsigned peer = d == DNP_DIR_XP ? (i + 1) % nnodes :
									  (i + nnodes - 1) % nnodes;
					struct dnp_pkt_hdr h;
					const uint8_t *pl;
					if ((int)i == drop_node &&
					    dnp_pkt_decode(copy, f[k].len, &h, &pl) == 0 &&
					    (int)h.kind == drop_kind)
						continue; /* lost on the wire */
					if (i == 0 && drop_seq >= 0 && (copy[3] & DNP_LINK_F_SEQ) &&
					    dnp_pkt_decode(copy, f[k].len, &h, &pl) == 0 &&
					    h.seq == (uint32_t)drop_seq) {
						drop_seq = -1; /* once */
						continue;
					}
					(void)dnp_engine_rx(nodes[peer].e, dnp_torus_opposite(d),
							    copy, f[k].len, now);
				}
			}
		}
	}
}

static bool next_event(unsigned node, unsigned port, struct dnp_event *ev, unsigned max_steps)
{
	for (unsigned s = 0; s < max_steps; s++) {
		if (dnp_engine_poll_events(nodes[node].e, port, ev, 1) == 1)
			return true;
		pump(1);
	}
	return false;
}

static struct dnp_cmd put_cmd(unsigned dst_x, unsigned dst_port, uint64_t local_va,
			      uint64_t remote_va, uint32_t key, uint64_t len, uint64_t cookie)
{
	return (struct dnp_cmd){ .op = DNP_OP_PUT,
				 .dst_port = (uint8_t)dst_port,
				 .dst_x = (uint8_t)dst_x,
				 .remote_key = key,
				 .remote_va = remote_va,
				 .len = len,
				 .local_va = local_va,
				 .cookie = cookie };
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 31u + seed);
}

static void test_engine_put_multi_fragment(void **state)
{
	setup_nodes(2);
	uint32_t key;
	const size_t len = 3 * DNP_MAX_PAYLOAD + 123;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 1, BASE + 4096, 65536, DNP_BUF_PUT_TARGET, 0, &key),
		0);
	fill(nodes[0].mem[0], len, 7);
	struct dnp_cmd c = put_cmd(1, 1, BASE, BASE + 4096 + 16, key, len, 0xc0ffee);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);

	struct dnp_event ev;
	assert_true(next_event(1, 1, &ev, 5000));
	assert_int_equal(ev.type, DNP_EV_RX_PUT);
	assert_int_equal(ev.len, len);
	assert_int_equal(ev.va, BASE + 4096 + 16);
	assert_int_equal(ev.peer_x, 0);
	assert_int_equal(ev.hops, 1);
	assert_memory_equal(nodes[1].mem[1] + 4096 + 16, nodes[0].mem[0], len);
	assert_true(next_event(0, 0, &ev, 5000));
	assert_int_equal(ev.type, DNP_EV_TX_DONE);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.cookie, 0xc0ffee);
	/* exactly one completion */
	pump(200);
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 0);
	assert_int_equal(dnp_engine_stats(nodes[1].e)->rx_crc_errors, 0);
	/* four data packets went 0 -> 1 on X+ VC 0 (no wrap-around hop): counted per VC */
	const struct dnp_link_stats *tx = dnp_engine_link_stats(nodes[0].e, DNP_DIR_XP);
	const struct dnp_link_stats *rx = dnp_engine_link_stats(nodes[1].e, DNP_DIR_XM);
	assert_int_equal(tx->vc[0].tx_packets, 4);
	assert_int_equal(tx->vc[1].tx_packets, 0);
	assert_int_equal(rx->vc[0].rx_packets, 4);
	assert_int_equal(rx->vc[0].rx_words, tx->vc[0].tx_words);
}

static void expect_error(unsigned node, unsigned port, int err)
{
	struct dnp_event ev;
	do
		assert_true(next_event(node, port, &ev, 5000));
	while (ev.type == DNP_EV_LINK);
	assert_int_equal(ev.type, DNP_EV_ERROR);
	assert_int_equal(ev.status, err);
}

static void test_engine_put_bad_key_writes_nothing(void **state)
{
	setup_nodes(2);
	uint32_t key;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	fill(nodes[0].mem[0], 10000, 3);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key ^ 1, 10000, 1);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_error(0, 0, -EACCES);
	pump(200);
	for (size_t i = 0; i < 65536; i++)
		assert_int_equal(nodes[1].mem[0][i], 0);
	struct dnp_event ev;
	assert_int_equal(dnp_engine_poll_events(nodes[1].e, 0, &ev, 1), 0);
}

static void test_engine_put_out_of_bounds_writes_nothing(void **state)
{
	setup_nodes(2);
	uint32_t key;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE + 8192, 8192, DNP_BUF_PUT_TARGET, 0, &key),
		0);
	fill(nodes[0].mem[0], 12000, 3);
	/* starts inside, runs past the end: no fragment may land */
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE + 8192 + 100, key, 12000, 1);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_error(0, 0, -ERANGE);
	/* starts before the buffer: the later fragments fall inside it but must not land */
	c = put_cmd(1, 0, BASE, BASE + 4096, key, 12000, 2);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_error(0, 0, -EACCES); /* no buffer at the start that the key opens */
	pump(200);
	for (size_t i = 0; i < 3 * 8192; i++)
		assert_int_equal(nodes[1].mem[0][i], 0);
}

static void test_engine_send_in_order(void **state)
{
	setup_nodes(2);
	uint64_t bufs[3] = { BASE + 0x10000, BASE + 0x20000, BASE + 0x30000 };

	for (int i = 0; i < 3; i++)
		assert_int_equal(dnp_engine_register(nodes[1].e, 0, bufs[i], 0x8000,
						     DNP_BUF_SEND_TARGET, 0, NULL),
				 0);
	for (int i = 0; i < 3; i++) {
		fill(nodes[0].mem[1] + i * 0x8000, 5000 + i, (unsigned)i);
		struct dnp_cmd c = { .op = DNP_OP_SEND,
				     .dst_x = 1,
				     .dst_port = 0,
				     .local_va = BASE + i * 0x8000,
				     .len = 5000 + i,
				     .cookie = (uint64_t)i };
		assert_int_equal(dnp_engine_submit(nodes[0].e, 1, &c, now), 0);
	}
	for (int i = 0; i < 3; i++) {
		struct dnp_event ev;
		assert_true(next_event(1, 0, &ev, 5000));
		assert_int_equal(ev.type, DNP_EV_RX_SEND);
		assert_int_equal(ev.va, bufs[i]);
		assert_int_equal(ev.len, 5000 + i);
		assert_int_equal(ev.port, 1);
		assert_memory_equal(nodes[1].mem[0] + (bufs[i] - BASE),
				    nodes[0].mem[1] + i * 0x8000, 5000 + i);
	}
	/* a fourth SEND finds no posted buffer */
	struct dnp_cmd c = { .op = DNP_OP_SEND, .dst_x = 1, .local_va = BASE, .len = 10 };
	assert_int_equal(dnp_engine_submit(nodes[0].e, 1, &c, now), 0);
	int done = 0;
	for (int k = 0; k < 4; k++) {
		struct dnp_event ev;
		assert_true(next_event(0, 1, &ev, 5000));
		if (ev.type == DNP_EV_ERROR) {
			assert_int_equal(ev.status, -ENOBUFS);
			done++;
		} else {
			assert_int_equal(ev.type, DNP_EV_TX_DONE);
		}
	}
	assert_int_equal(done, 1);
}

static void test_engine_get(void **state)
{
	setup_nodes(2);
	uint32_t rkey, lkey;

	fill(nodes[1].mem[0], 20000, 9);
	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 20000, DNP_BUF_GET_SOURCE, 0, &rkey), 0);
	assert_int_equal(dnp_engine_register(nodes[0].e, 1, BASE + 0x40000, 20000,
					     DNP_BUF_PUT_TARGET, 0, &lkey),
			 0);
	struct dnp_cmd c = { .op = DNP_OP_GET,
			     .dst_x = 1,
			     .dst_port = 0,
			     .remote_va = BASE,
			     .remote_key = rkey,
			     .len = 20000,
			     .local_va = BASE + 0x40000,
			     .local_key = lkey,
			     .cookie = 77 };
	assert_int_equal(dnp_engine_submit(nodes[0].e, 1, &c, now), 0);
	struct dnp_event ev;
	assert_true(next_event(0, 1, &ev, 5000));
	assert_int_equal(ev.type, DNP_EV_GET_DONE);
	assert_int_equal(ev.cookie, 77);
	assert_memory_equal(nodes[0].mem[1] + 0x40000, nodes[1].mem[0], 20000);
	/* wrong remote key */
	c.remote_key ^= 5;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 1, &c, now), 0);
	expect_error(0, 1, -EACCES);
}

static void test_engine_loopback_put(void **state)
{
	setup_nodes(1);
	uint32_t key;

	assert_int_equal(dnp_engine_register(nodes[0].e, 1, BASE + 0x1000, 0x10000,
					     DNP_BUF_PUT_TARGET, 0, &key),
			 0);
	fill(nodes[0].mem[0], 9000, 1);
	struct dnp_cmd c = put_cmd(0, 1, BASE, BASE + 0x1000, key, 9000, 5);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	struct dnp_event ev;
	assert_true(next_event(0, 1, &ev, 10));
	assert_int_equal(ev.type, DNP_EV_RX_PUT);
	assert_int_equal(ev.hops, 0);
	assert_true(next_event(0, 0, &ev, 10));
	assert_int_equal(ev.type, DNP_EV_TX_DONE);
	assert_int_equal(ev.cookie, 5);
	assert_memory_equal(nodes[0].mem[1] + 0x1000, nodes[0].mem[0], 9000);
}

/*
 * With writes that land only when the engine flushes them (dnpd's gathered
 * writes outside the heap), every event that says a message arrived finds
 * its bytes in memory: a PUT of several fragments, a SEND, a GET.
 */
static void test_engine_deferred_writes_land_before_events(void **state)
{
	defer = true;
	setup_nodes(2);
	uint32_t key, rkey, lkey;
	const size_t len = 3 * DNP_MAX_PAYLOAD + 123;
	struct dnp_event ev;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE + 4096, 65536, DNP_BUF_PUT_TARGET, 0, &key),
		0);
	fill(nodes[0].mem[0], len, 7);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE + 4096, key, len, 1);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	assert_true(next_event(1, 0, &ev, 5000));
	assert_int_equal(ev.type, DNP_EV_RX_PUT);
	assert_memory_equal(nodes[1].mem[0] + 4096, nodes[0].mem[0], len);
	assert_true(next_event(0, 0, &ev, 5000));
	assert_int_equal(ev.type, DNP_EV_TX_DONE);
	assert_int_equal(ev.status, 0);

	/* SEND */
	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE + 0x80000, 0x8000,
					     DNP_BUF_SEND_TARGET, 0, NULL),
			 0);
	fill(nodes[0].mem[0] + 0x20000, 9000, 3);
	c = (struct dnp_cmd){ .op = DNP_OP_SEND,
			      .dst_x = 1,
			      .dst_port = 0,
			      .local_va = BASE + 0x20000,
			      .len = 9000,
			      .cookie = 2 };
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	assert_true(next_event(1, 0, &ev, 5000));
	assert_int_equal(ev.type, DNP_EV_RX_SEND);
	assert_memory_equal(nodes[1].mem[0] + 0x80000, nodes[0].mem[0] + 0x20000, 9000);
	assert_true(next_event(0, 0, &ev, 5000));
	assert_int_equal(ev.type, DNP_EV_TX_DONE);

	/* GET: node 1 reads node 0's memory into its own (node 1 writes) */
	fill(nodes[0].mem[1], 20000, 9);
	assert_int_equal(
		dnp_engine_register(nodes[0].e, 1, BASE, 20000, DNP_BUF_GET_SOURCE, 0, &rkey), 0);
	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE + 0x40000, 20000,
					     DNP_BUF_PUT_TARGET, 0, &lkey),
			 0);
	c = (struct dnp_cmd){ .op = DNP_OP_GET,
			      .dst_x = 0,
			      .dst_port = 1,
			      .remote_va = BASE,
			      .remote_key = rkey,
			      .len = 20000,
			      .local_va = BASE + 0x40000,
			      .local_key = lkey,
			      .cookie = 3 };
	assert_int_equal(dnp_engine_submit(nodes[1].e, 0, &c, now), 0);
	do
		assert_true(next_event(1, 0, &ev, 5000));
	while (ev.type == DNP_EV_LINK);
	assert_int_equal(ev.type, DNP_EV_GET_DONE);
	assert_int_equal(ev.status, 0);
	assert_memory_equal(nodes[1].mem[0] + 0x40000, nodes[0].mem[1], 20000);
	assert_true(flushes >= 3);
}

/*
 * A deferred write that fails when flushed fails its message with -EFAULT
 * (never an RX event for bytes that did not land); a message into another
 * range of the same buffer is not hit by it.
 */
static void test_engine_deferred_write_fault_fails_message(void **state)
{
	defer = true;
	setup_nodes(2);
	uint32_t key, lkey, rkey;
	const size_t len = 3 * DNP_MAX_PAYLOAD;
	struct dnp_event ev;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 0x100000, DNP_BUF_PUT_TARGET, 0, &key), 0);
	fill(nodes[0].mem[0], len, 5);
	poison_lo = BASE + 0x10000 + DNP_MAX_PAYLOAD; /* the second fragment's page */
	poison_hi = poison_lo + 16;
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE + 0x10000, key, len, 1);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_error(0, 0, -EFAULT);
	pump(200);
	assert_int_equal(dnp_engine_poll_events(nodes[1].e, 0, &ev, 1), 0);

	/* the same buffer, elsewhere: arrives */
	c = put_cmd(1, 0, BASE, BASE + 0x40000, key, len, 2);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	assert_true(next_event(1, 0, &ev, 5000));
	assert_int_equal(ev.type, DNP_EV_RX_PUT);
	assert_memory_equal(nodes[1].mem[0] + 0x40000, nodes[0].mem[0], len);
	assert_true(next_event(0, 0, &ev, 5000));
	assert_int_equal(ev.type, DNP_EV_TX_DONE);
	assert_int_equal(ev.status, 0);

	/* a GET whose local target is poisoned ends in -EFAULT, not GET_DONE */
	fill(nodes[0].mem[1], 8000, 1);
	assert_int_equal(
		dnp_engine_register(nodes[0].e, 1, BASE, 8000, DNP_BUF_GET_SOURCE, 0, &rkey), 0);
	assert_int_equal(dnp_engine_unregister(nodes[1].e, 0, BASE), 0);
	assert_int_equal(dnp_engine_register(nodes[1].e, 0, poison_lo - 100, 8000,
					     DNP_BUF_PUT_TARGET, 0, &lkey),
			 0);
	c = (struct dnp_cmd){ .op = DNP_OP_GET,
			      .dst_x = 0,
			      .dst_port = 1,
			      .remote_va = BASE,
			      .remote_key = rkey,
			      .len = 8000,
			      .local_va = poison_lo - 100,
			      .local_key = lkey,
			      .cookie = 3 };
	assert_int_equal(dnp_engine_submit(nodes[1].e, 0, &c, now), 0);
	expect_error(1, 0, -EFAULT);
}

/*
 * The engine tags each read of a message's source (struct dnp_mem_seq): one
 * id for all reads of a PUT, ending at its end; another for the next PUT;
 * a GET's reads at the responder carry bit 63 and end at the GET's end.
 */
static void test_engine_read_seq_tags(void **state)
{
	setup_nodes(2);
	uint32_t key, rkey, lkey;
	const size_t len = 3 * DNP_MAX_PAYLOAD + 5;
	struct dnp_event ev;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 1, BASE, 0x40000, DNP_BUF_PUT_TARGET, 0, &key), 0);
	for (unsigned m = 0; m < 2; m++) {
		struct dnp_cmd c = put_cmd(1, 1, BASE + m * 0x10000, BASE, key, len, m);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
		assert_true(next_event(0, 0, &ev, 5000));
		assert_int_equal(ev.type, DNP_EV_TX_DONE);
	}
	assert_int_equal(nreads[0], 8);
	for (unsigned i = 0; i < 8; i++) {
		assert_int_equal(reads[0][i].id, reads[0][i / 4 * 4].id);
		assert_int_equal(reads[0][i].end, BASE + i / 4 * 0x10000 + len);
	}
	assert_true(reads[0][0].id != reads[0][4].id);
	assert_int_equal(reads[0][0].id >> 63, 0);

	fill(nodes[1].mem[0], 10000, 2);
	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 10000, DNP_BUF_GET_SOURCE, 0, &rkey), 0);
	assert_int_equal(
		dnp_engine_register(nodes[0].e, 1, BASE, 10000, DNP_BUF_PUT_TARGET, 0, &lkey), 0);
	struct dnp_cmd g = { .op = DNP_OP_GET,
			     .dst_x = 1,
			     .dst_port = 0,
			     .remote_va = BASE + 100,
			     .remote_key = rkey,
			     .len = 9000,
			     .local_va = BASE,
			     .local_key = lkey };
	assert_int_equal(dnp_engine_submit(nodes[0].e, 1, &g, now), 0);
	assert_true(next_event(0, 1, &ev, 5000));
	assert_int_equal(ev.type, DNP_EV_GET_DONE);
	assert_int_equal(nreads[1], 3);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(reads[1][i].id, reads[1][0].id);
		assert_int_equal(reads[1][i].end, BASE + 100 + 9000);
	}
	assert_int_equal(reads[1][0].id >> 63, 1);
	assert_memory_equal(nodes[0].mem[1], nodes[1].mem[0] + 100, 9000);
}

static void test_engine_bad_command_one_error(void **state)
{
	setup_nodes(2);
	struct dnp_cmd c = put_cmd(7, 0, BASE, BASE, 1, 10, 9); /* x = 7 outside 2x1x1 */
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_error(0, 0, -EHOSTUNREACH);
	c = put_cmd(1, 0, BASE, BASE, 1, 10, 9);
	c.op = 42;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_error(0, 0, -EINVAL);
	struct dnp_event ev;
	pump(100);
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 0);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 5, &c, now), -ENOENT);
}

static void test_engine_closed_port_refused(void **state)
{
	setup_nodes(2);
	assert_int_equal(dnp_engine_port_close(nodes[1].e, 1), 0);
	struct dnp_cmd c = put_cmd(1, 1, BASE, BASE, 1, 100, 9);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_error(0, 0, -ECONNREFUSED);
}

static void test_engine_link_down_fails_commands(void **state)
{
	setup_nodes(2);
	uint32_t key;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	pump(100);
	for (unsigned d = 0; d < 2; d++)
		dnp_engine_link_down(nodes[0].e, d, now);
	assert_int_equal(dnp_engine_link_state(nodes[0].e, DNP_DIR_XP), DNP_LINK_BROKEN);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, 100, 9);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	/* both cables to node 1 are known broken: no route at all */
	expect_error(0, 0, -EHOSTUNREACH);
}

/*
 * A ring of 4 with the cable 0-1 broken: node 0 sends to 1 the long way
 * round, and node 3, whose shorter way (3 -> 0 -> 1) crosses the cable,
 * learns of it from ROUTE packets and goes 3 -> 2 -> 1 (docs/routing.md).
 */
static void test_engine_detour_around_broken_cable(void **state)
{
	setup_nodes(4);
	uint32_t key;
	struct dnp_event ev;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	pump(100);
	dnp_engine_link_down(nodes[0].e, DNP_DIR_XP, now);
	dnp_engine_link_down(nodes[1].e, DNP_DIR_XM, now);
	pump(200);
	assert_true(dnp_engine_stats(nodes[3].e)->route_rx > 0);
	assert_true(dnp_engine_stats(nodes[2].e)->route_changes > 0);
	for (unsigned src = 0; src < 4; src += 3) {
		fill(nodes[src].mem[0], 5000, (uint8_t)(src + 1));
		struct dnp_cmd c = put_cmd(1, 0, BASE, BASE + 8192 * src, key, 5000, src);
		assert_int_equal(dnp_engine_submit(nodes[src].e, 0, &c, now), 0);
		do
			assert_true(next_event(1, 0, &ev, 5000));
		while (ev.type == DNP_EV_LINK);
		assert_int_equal(ev.type, DNP_EV_RX_PUT);
		assert_int_equal(ev.hops, src == 0 ? 3 : 2);
		assert_memory_equal(nodes[1].mem[0] + 8192 * src, nodes[src].mem[0], 5000);
		do
			assert_true(next_event(src, 0, &ev, 5000));
		while (ev.type == DNP_EV_LINK);
		assert_int_equal(ev.type, DNP_EV_TX_DONE);
		assert_int_equal(ev.status, 0);
	}
	/* both detours went through node 2 (2 packets each); nothing was dropped */
	assert_true(dnp_engine_stats(nodes[2].e)->pkts_forwarded >= 4);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->cmds_failed, 0);
	assert_int_equal(dnp_engine_stats(nodes[3].e)->cmds_failed, 0);
}

/* A 1 MiB PUT from node 0 to node 1 arrives byte-exact, completes, never resent, before max_now. */
static void put_stream_1mib(unsigned seed, uint64_t max_now)
{
	uint32_t key;
	const size_t len = 1u << 20;

	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE, len, DNP_BUF_PUT_TARGET, 0, &key),
			 0);
	fill(nodes[0].mem[0], len, seed);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, len, 3);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	struct dnp_event ev;
	/* 256 packets of 4 KiB */
	assert_true(next_event(1, 0, &ev, 20000));
	assert_int_equal(ev.type, DNP_EV_RX_PUT);
	assert_int_equal(ev.len, len);
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], len);
	assert_true(next_event(0, 0, &ev, 1000));
	assert_int_equal(ev.type, DNP_EV_TX_DONE);
	assert_true(now < max_now);
	assert_int_equal(dnp_engine_link_stats(nodes[0].e, DNP_DIR_XP)->tx_retx_frames, 0);
}

/* With EXACT credits a stream is paced by prompt credits, not by the credit period. */
static void test_engine_prompt_credits_stream(void **state)
{
	exact_prompt = true;
	setup_nodes(2);
	put_stream_1mib(11, 1000000000); /* far fewer steps than one credit period */
}

/* CREDIT frames both nodes sent, over every link. */
static uint64_t credits_sent(void)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < nnodes; i++)
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			const struct dnp_link_stats *st = dnp_engine_link_stats(nodes[i].e, d);
			if (st)
				n += st->tx_credits;
		}
	return n;
}

/*
 * 'rounds' 8-byte PUT ping-pongs between nodes 0 and 1; every message and
 * completion arrives. Returns the CREDIT frames sent meanwhile.
 */
static uint64_t pingpong_credits(unsigned rounds)
{
	uint32_t key[2];
	struct dnp_event ev;

	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(dnp_engine_register(nodes[i].e, 1, BASE + 0x1000, 4096,
						     DNP_BUF_PUT_TARGET, 0, &key[i]),
				 0);
	pump(200); /* links up, their first credits out */
	uint64_t c0 = credits_sent();
	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned i = 0; i < 2; i++) {
			unsigned j = 1 - i;
			nodes[i].mem[0][0] = (uint8_t)(r * 2 + i);
			struct dnp_cmd c = put_cmd(j, 1, BASE, BASE + 0x1000, key[j], 8, r);
			assert_int_equal(dnp_engine_submit(nodes[i].e, 0, &c, now), 0);
			assert_true(next_event(j, 1, &ev, 1000));
			assert_int_equal(ev.type, DNP_EV_RX_PUT);
			assert_int_equal(nodes[j].mem[1][0x1000], (uint8_t)(r * 2 + i));
			assert_true(next_event(i, 0, &ev, 1000));
			assert_int_equal(ev.type, DNP_EV_TX_DONE);
			assert_int_equal(ev.cookie, r);
		}
	}
	return credits_sent() - c0;
}

/* Prompt credits without a delay: a credit for (nearly) every frame that arrived. */
static void test_engine_prompt_credits_per_frame(void **state)
{
	exact_prompt = true;
	setup_nodes(2);
	/* 20 rounds: 40 data frames and 40 completions */
	assert_true(pingpong_credits(20) >= 40);
}

/*
 * dnpd's delayed credits (ack_delay): the same ping-pong sends almost no
 * CREDIT frame (the acks wait, or ride on frames going back), yet an idle
 * link's pending credit still goes out once the delay has passed.
 */
static void test_engine_ack_delay_pingpong(void **state)
{
	exact_prompt = true;
	ack_delay = 5000;
	setup_nodes(2);
	assert_true(pingpong_credits(20) <= 4);
	uint64_t c0 = credits_sent();
	uint64_t dl = dnp_engine_next_deadline(nodes[1].e);
	assert_true(dl <= now + ack_delay);
	pump((unsigned)(dl - now) + 2);
	assert_true(credits_sent() > c0);
	pump((unsigned)ack_delay + 2); /* the other node's, too */
	for (unsigned i = 0; i < 2; i++)
		assert_false(dnp_engine_has_work(nodes[i].e));
}

/* A 1 MiB stream under delayed credits: its credits come as the FIFO matters, no stall. */
static void test_engine_ack_delay_stream(void **state)
{
	exact_prompt = true;
	ack_delay = 1000000; /* longer than the whole test: only stale-credit rules act */
	setup_nodes(2);
	put_stream_1mib(13, 20000);
}

static void one_loss_one_resend(void);

/* A lost frame under delayed credits: the gap is reported at once, one resend. */
static void test_engine_ack_delay_one_loss(void **state)
{
	exact_prompt = true;
	ack_delay = 1000000;
	setup_nodes(2);
	one_loss_one_resend();
}

/*
 * One data frame of a 16-frame PUT is lost: the receiver holds the 12 frames
 * behind the gap, its selective ack gets exactly that frame resent within a
 * round trip (long before the retransmission timeout), and the message is
 * written once, byte for byte, with one completion.
 */
static void one_loss_one_resend(void)
{
	uint32_t key;
	const size_t len = 16 * DNP_MAX_PAYLOAD;

	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE, len, DNP_BUF_PUT_TARGET, 0, &key),
			 0);
	fill(nodes[0].mem[0], len, 5);
	drop_seq = 3;
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, len, 9);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	struct dnp_event ev;
	assert_true(next_event(1, 0, &ev, 5000));
	assert_int_equal(ev.type, DNP_EV_RX_PUT);
	assert_int_equal(ev.len, len);
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], len);
	assert_true(next_event(0, 0, &ev, 1000));
	assert_int_equal(ev.type, DNP_EV_TX_DONE);
	assert_int_equal(ev.status, 0);
	assert_int_equal(drop_seq, -1); /* the frame was dropped */
	assert_true(now < 2000);        /* the engine's default rto: no timeout was waited for */
	const struct dnp_link_stats *tx = dnp_engine_link_stats(nodes[0].e, DNP_DIR_XP);
	const struct dnp_link_stats *rx = dnp_engine_link_stats(nodes[1].e, DNP_DIR_XM);
	assert_int_equal(tx->tx_retx_frames, 1);
	assert_int_equal(tx->fast_retx, 1);
	assert_int_equal(tx->retx_rounds, 0);
	assert_true(rx->rx_held > 0);
	assert_int_equal(rx->vc[0].rx_packets, 16);
	pump(500);
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 0); /* one completion */
	assert_int_equal(dnp_engine_poll_events(nodes[1].e, 0, &ev, 1), 0);
}

static void test_engine_one_loss_one_resend(void **state)
{
	exact_prompt = true;
	setup_nodes(2);
	one_loss_one_resend();
}

/*
 * Two nodes fill their command tables with GETs from each other: the slots
 * kept for responders let every GET finish instead of both waiting for ever.
 */
static void test_engine_mutual_get_storm(void **state)
{
	setup_nodes(2);
	uint32_t src_key[2], dst_key[2];
	unsigned issued[2] = { 0, 0 }, done[2] = { 0, 0 };

	for (unsigned n = 0; n < 2; n++) {
		fill(nodes[n].mem[0], 65536, n + 1);
		assert_int_equal(dnp_engine_register(nodes[n].e, 0, BASE, 65536, DNP_BUF_GET_SOURCE,
						     0, &src_key[n]),
				 0);
		assert_int_equal(dnp_engine_register(nodes[n].e, 0, BASE + 0x100000, 65536,
						     DNP_BUF_PUT_TARGET, 0, &dst_key[n]),
				 0);
	}
	for (unsigned n = 0; n < 2; n++) {
		for (;;) {
			unsigned i = issued[n];
			struct dnp_cmd c = { .op = DNP_OP_GET,
					     .dst_x = (uint8_t)(1 - n),
					     .remote_va = BASE + (i % 1024) * 64,
					     .remote_key = src_key[1 - n],
					     .len = 64,
					     .local_va = BASE + 0x100000 + (i % 1024) * 64,
					     .local_key = dst_key[n],
					     .cookie = i };
			if (dnp_engine_submit(nodes[n].e, 0, &c, now) == -EAGAIN)
				break;
			issued[n]++;
		}
		assert_true(issued[n] > 500);
	}
	for (unsigned step = 0; step < 200000 && (done[0] < issued[0] || done[1] < issued[1]);
	     step++) {
		struct dnp_event ev[64];
		pump(1);
		for (unsigned n = 0; n < 2; n++) {
			unsigned k = dnp_engine_poll_events(nodes[n].e, 0, ev, 64);
			for (unsigned j = 0; j < k; j++) {
				assert_int_equal(ev[j].type, DNP_EV_GET_DONE);
				done[n]++;
			}
		}
	}
	assert_int_equal(done[0], issued[0]);
	assert_int_equal(done[1], issued[1]);
	assert_memory_equal(nodes[0].mem[0] + 0x100000, nodes[1].mem[0], 65536);
}

/*
 * Node 1 is killed under traffic and a fresh engine takes its place (same
 * coordinates, another incarnation). Node 0's links break and come back in a
 * new epoch: the PUT in flight fails exactly once, both LINK events reach
 * the application, a frame of the old epoch is never delivered, and a new PUT
 * flows through the rejoined links.
 */
static void test_engine_restarted_node_rejoins(void **state)
{
	reset_period = 500;
	setup_nodes(2);
	uint32_t key;
	const size_t len = 1u << 20;
	struct dnp_event ev;

	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE, len, DNP_BUF_PUT_TARGET, 0, &key),
			 0);
	fill(nodes[0].mem[0], len, 5);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, len, 77);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	pump(30);
	assert_true(last_data_len > 0);
	uint8_t stale[DNP_MAX_FRAME];
	uint32_t stale_len = last_data_len;
	memcpy(stale, last_data, stale_len);

	/* kill -9 and restart node 1: new engine, new nonce, empty memory */
	dnp_engine_destroy(nodes[1].e);
	memset(nodes[1].mem[0], 0, ARENA);
	create_node(1, 2, 999);
	unsigned failed = 0, done = 0, down = 0, up = 0;
	for (unsigned s = 0; s < 20000 && (up < 2 || failed + done < 1); s++) {
		pump(1);
		while (dnp_engine_poll_events(nodes[0].e, 0, &ev, 1) == 1) {
			if (ev.type == DNP_EV_LINK) {
				if (ev.status == -ENOLINK)
					down++;
				else if (ev.status == 0)
					up++;
			} else if (ev.cookie == 77) {
				if (ev.type == DNP_EV_ERROR)
					failed++;
				else
					done++;
			}
		}
	}
	assert_int_equal(failed, 1);
	assert_int_equal(done, 0);
	assert_int_equal(down, 2); /* X+ and X- both lead to node 1 on a 2-ring */
	assert_int_equal(up, 2);
	for (unsigned d = 0; d < 2; d++) {
		assert_int_equal(dnp_engine_link_state(nodes[0].e, d), DNP_LINK_UP);
		assert_int_equal(dnp_engine_link_state(nodes[1].e, d), DNP_LINK_UP);
	}
	pump(5000);
	while (dnp_engine_poll_events(nodes[0].e, 0, &ev, 1) == 1)
		assert_true(ev.cookie != 77); /* never a second completion */

	/* A frame of the old epoch is dropped: nothing is written. */
	uint64_t stale0 = dnp_engine_link_stats(nodes[1].e, DNP_DIR_XM)->rx_stale;
	assert_int_equal(dnp_engine_rx(nodes[1].e, DNP_DIR_XM, stale, stale_len, now), -ESTALE);
	assert_int_equal(dnp_engine_link_stats(nodes[1].e, DNP_DIR_XM)->rx_stale, stale0 + 1);
	pump(100);
	assert_int_equal(dnp_engine_poll_events(nodes[1].e, 0, &ev, 1), 0);

	/* New commands flow: a PUT to the restarted node arrives byte-exact. */
	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE, len, DNP_BUF_PUT_TARGET, 0, &key),
			 0);
	fill(nodes[0].mem[0], 65536, 9);
	c = put_cmd(1, 0, BASE, BASE, key, 65536, 78);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	assert_true(next_event(0, 0, &ev, 20000));
	assert_int_equal(ev.type, DNP_EV_TX_DONE);
	assert_int_equal(ev.cookie, 78);
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], 65536);
}

/*
 * Issue 7: a PUT or GET with a wrong key gets the same error whatever the
 * range it names (inside, across the end, before, far away): it learns
 * nothing about the buffer, not even its bounds.
 */
static void test_engine_wrong_key_same_error_any_range(void **state)
{
	setup_nodes(2);
	uint32_t key, lkey;
	const uint64_t off[] = { 0, 100, 8192 - 1, 8192, 4096 * 3, 0x200000 };
	const uint64_t lens[] = { 1, 100, 8192, 20000 };

	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE + 8192, 8192,
					     DNP_BUF_PUT_TARGET | DNP_BUF_GET_SOURCE, 0, &key),
			 0);
	assert_int_equal(dnp_engine_register(nodes[0].e, 0, BASE + 0x100000, 0x10000,
					     DNP_BUF_PUT_TARGET, 0, &lkey),
			 0);
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
		for (size_t j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
			uint64_t va = BASE + 8192 + off[i];
			struct dnp_cmd c = put_cmd(1, 0, BASE, va, key ^ 0x10, lens[j], i);
			assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
			expect_error(0, 0, -EACCES);
			c = (struct dnp_cmd){ .op = DNP_OP_GET,
					      .dst_x = 1,
					      .dst_port = 0,
					      .remote_va = va,
					      .remote_key = key + 1,
					      .len = lens[j],
					      .local_va = BASE + 0x100000,
					      .local_key = lkey,
					      .cookie = 9 };
			assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
			expect_error(0, 0, -EACCES);
		}
	/* the same ranges with a key that opens nothing at all, and before the buffer */
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, 0, 100, 1);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_error(0, 0, -EACCES);
	/* with the right key the bounds are told */
	c = put_cmd(1, 0, BASE, BASE + 8192 + 100, key, 8192, 2);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_error(0, 0, -ERANGE);
}

/*
 * Issue 7, port reuse: a GET is being answered from port 0 of node 1 when
 * its application goes; a new application opens port 0 and registers a
 * buffer at the same address. The old GET's responder must not go on
 * reading: not one byte of the new application may reach the old reader,
 * and the GET ends in an error.
 */
static void test_engine_port_reuse_aborts_get_responder(void **state)
{
	setup_nodes(2);
	uint32_t rkey, lkey, newkey;
	const size_t len = 256u << 10;
	uint8_t *dst = nodes[0].mem[1] + 0x200000;

	memset(nodes[1].mem[0], 0xaa, len); /* the old application's data */
	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, len, DNP_BUF_GET_SOURCE, 0, &rkey), 0);
	assert_int_equal(dnp_engine_register(nodes[0].e, 1, BASE + 0x200000, len,
					     DNP_BUF_PUT_TARGET, 0, &lkey),
			 0);
	struct dnp_cmd c = { .op = DNP_OP_GET,
			     .dst_x = 1,
			     .dst_port = 0,
			     .remote_va = BASE,
			     .remote_key = rkey,
			     .len = len,
			     .local_va = BASE + 0x200000,
			     .local_key = lkey,
			     .cookie = 5 };
	assert_int_equal(dnp_engine_submit(nodes[0].e, 1, &c, now), 0);
	for (unsigned i = 0; i < 5000 && dst[0] != 0xaa; i++)
		pump(1);
	assert_int_equal(dst[0], 0xaa);
	assert_int_not_equal(dst[len - 1], 0xaa); /* caught in the middle */

	/* The application of port 0 goes, another one comes with its own data. */
	assert_int_equal(dnp_engine_port_close(nodes[1].e, 0), 0);
	memset(nodes[1].mem[0], 0x55, len);
	assert_int_equal(dnp_engine_port_open(nodes[1].e, 0), 0);
	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE, len,
					     DNP_BUF_GET_SOURCE | DNP_BUF_PUT_TARGET, 0, &newkey),
			 0);
	struct dnp_event ev;
	assert_true(next_event(0, 1, &ev, 20000));
	assert_int_equal(ev.type, DNP_EV_ERROR);
	assert_int_equal(ev.status, -ECONNRESET);
	assert_int_equal(ev.cookie, 5);
	pump(2000);
	for (size_t i = 0; i < len; i++)
		if (dst[i] == 0x55)
			fail_msg("byte %zu of the new application reached the old reader", i);
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 1, &ev, 1), 0); /* exactly once */
}

/*
 * Port reuse, SEND side: a multi-packet SEND is being reassembled into a
 * buffer of port 0 when its application goes; the next application of
 * port 0 posts a buffer at the same address. The rest of the old message
 * must not land in it, and the sender gets one error.
 */
static void test_engine_port_reuse_drops_send_reassembly(void **state)
{
	setup_nodes(2);
	const size_t len = 200u << 10;
	uint8_t *rx = nodes[1].mem[0];

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 256u << 10, DNP_BUF_SEND_TARGET, 0, NULL),
		0);
	memset(nodes[0].mem[1], 0xaa, len);
	struct dnp_cmd c = { .op = DNP_OP_SEND,
			     .dst_x = 1,
			     .dst_port = 0,
			     .local_va = BASE,
			     .len = len,
			     .cookie = 8 };
	assert_int_equal(dnp_engine_submit(nodes[0].e, 1, &c, now), 0);
	for (unsigned i = 0; i < 5000 && rx[0] != 0xaa; i++)
		pump(1);
	assert_int_equal(rx[0], 0xaa);
	assert_int_not_equal(rx[len - 1], 0xaa);

	assert_int_equal(dnp_engine_port_close(nodes[1].e, 0), 0);
	memset(rx, 0x55, 256u << 10);
	assert_int_equal(dnp_engine_port_open(nodes[1].e, 0), 0);
	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 256u << 10, DNP_BUF_SEND_TARGET, 0, NULL),
		0);
	struct dnp_event ev;
	assert_true(next_event(0, 1, &ev, 20000));
	assert_int_equal(ev.type, DNP_EV_ERROR);
	assert_int_equal(ev.cookie, 8);
	pump(2000);
	for (size_t i = 0; i < (256u << 10); i++)
		if (rx[i] != 0x55)
			fail_msg("byte %zu of the old message landed in the new application", i);
	assert_int_equal(dnp_engine_poll_events(nodes[1].e, 0, &ev, 1), 0);
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 1, &ev, 1), 0);
}

/*
 * Issue 7: a frame is accepted only on its own link. In a ring of size 2
 * both X links join the same two nodes, each with its own sequence space
 * starting at 0: the first PUT frame recorded on one link and replayed on
 * the other must be dropped (and counted), never delivered a second time.
 */
static void test_engine_replay_on_other_link_dropped(void **state)
{
	setup_nodes(2);
	uint32_t key;
	struct dnp_frame f[16];
	uint8_t rec[DNP_MAX_FRAME];
	uint32_t rec_len = 0;
	unsigned rec_dir = 0;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	pump(10);
	fill(nodes[0].mem[0], 1000, 4);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, 1000, 1);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	/* pump by hand, recording the PUT frame */
	for (unsigned step = 0; step < 200; step++, now++) {
		for (unsigned i = 0; i < 2; i++)
			dnp_engine_run(nodes[i].e, now);
		for (unsigned i = 0; i < 2; i++)
			for (unsigned d = 0; d < DNP_NDIRS; d++) {
				unsigned n = dnp_engine_tx_burst(nodes[i].e, d, f, 16, now);
				for (unsigned k = 0; k < n; k++) {
					struct dnp_pkt_hdr h;
					const uint8_t *pl;
					uint8_t copy[DNP_MAX_FRAME];
					memcpy(copy, f[k].data, f[k].len);
					assert_int_equal(dnp_pkt_decode(copy, f[k].len, &h, &pl),
							 0);
					if (i == 0 && h.kind == DNP_PKT_PUT && !rec_len) {
						memcpy(rec, copy, f[k].len);
						rec_len = f[k].len;
						rec_dir = d;
					}
					(void)dnp_engine_rx(nodes[1 - i].e, dnp_torus_opposite(d),
							    copy, f[k].len, now);
				}
			}
	}
	assert_true(rec_len > 0);
	struct dnp_event ev;
	assert_int_equal(dnp_engine_poll_events(nodes[1].e, 0, &ev, 1), 1);
	assert_int_equal(ev.type, DNP_EV_RX_PUT);
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 1);
	assert_int_equal(ev.type, DNP_EV_TX_DONE);

	/* Replay on node 1's other X link (the one node 0's rec_dir does not feed). */
	memset(nodes[1].mem[0], 0, 1000);
	uint64_t wrong = dnp_engine_stats(nodes[1].e)->rx_wrong_link;
	assert_int_equal(dnp_engine_rx(nodes[1].e, rec_dir, rec, rec_len, now), -EXDEV);
	assert_int_equal(dnp_engine_stats(nodes[1].e)->rx_wrong_link, wrong + 1);
	pump(500);
	assert_int_equal(dnp_engine_poll_events(nodes[1].e, 0, &ev, 1), 0);
	for (size_t i = 0; i < 1000; i++)
		assert_int_equal(nodes[1].mem[0][i], 0);
	/* On its own link it is a duplicate: dropped as well. */
	assert_int_equal(dnp_engine_rx(nodes[1].e, dnp_torus_opposite(rec_dir), rec, rec_len, now),
			 -EALREADY);
	pump(500);
	assert_int_equal(dnp_engine_poll_events(nodes[1].e, 0, &ev, 1), 0);
	/* And a credit frame naming another node than the neighbour is refused. */
	struct dnp_pkt_hdr h = { .kind = DNP_PKT_CREDIT,
				 .src_dir = DNP_DIR_XP,
				 .src = { 1, 0, 0 },
				 .dst = { 1, 0, 0 } };
	uint8_t cf[DNP_FRAME_OVERHEAD];
	assert_int_equal(dnp_pkt_encode(&h, NULL, cf, sizeof(cf)), (int)sizeof(cf));
	assert_int_equal(dnp_engine_rx(nodes[1].e, DNP_DIR_XM, cf, sizeof(cf), now), -EXDEV);
	h.src = (struct dnp_coord){ 0, 0, 0 };
	h.epoch = dnp_link_epoch(dnp_engine_link(nodes[1].e, DNP_DIR_XM)); /* the agreed one */
	assert_int_equal(dnp_pkt_encode(&h, NULL, cf, sizeof(cf)), (int)sizeof(cf));
	assert_int_equal(dnp_engine_rx(nodes[1].e, DNP_DIR_XM, cf, sizeof(cf), now), 0);
}

/*
 * Issue 7: frames are decoded from a private copy. A peer that shares the
 * frame's memory (shm links) flips payload bytes while the engine receives
 * it: the engine must deliver only bytes its CRC check saw. The flipper
 * runs only while dnp_engine_rx does (a handshake keeps it off while the
 * test encodes the next frame), so every delivered byte that is not the
 * original was changed between the check and the use. A race test: it
 * cannot fail when the engine is right; with the check before the copy it
 * failed within the first 1000 frames in every trial run here.
 */
enum {
	FLIP_OFF,
	FLIP_ON,
	FLIP_STOP
};
static _Atomic int flip_phase;
static _Atomic int flip_idle;
static _Atomic int flip_busy; /* the flipper is flipping (set after each round) */
static uint8_t *_Atomic flip_frame;

static void *flipper(void *arg)
{
	(void)arg;
	for (;;) {
		int ph = atomic_load(&flip_phase);
		if (ph == FLIP_STOP)
			return NULL;
		if (ph == FLIP_OFF) {
			atomic_store(&flip_idle, 1);
			continue; /* spin: it must be on a CPU when the next frame comes */
		}
		atomic_store(&flip_idle, 0);
		volatile uint8_t *pl = atomic_load(&flip_frame) + 3 * DNP_WORD_BYTES;
		for (unsigned i = 0; i < 64; i++)
			pl[1000 + i] = 0xee;
		for (unsigned i = 0; i < 64; i++)
			pl[1000 + i] = 0x11;
		atomic_store(&flip_busy, 1);
	}
}

static void test_engine_rx_decodes_private_copy(void **state)
{
	setup_nodes(2);
	uint32_t key;
	static uint8_t shared[DNP_MAX_FRAME];
	uint8_t payload[4096];
	pthread_t th;
	unsigned accepted = 0;

	pump(100); /* the links agree on an epoch: hand-made frames carry it */
	uint8_t epoch = dnp_link_epoch(dnp_engine_link(nodes[1].e, DNP_DIR_XM));
	assert_int_equal(dnp_engine_link_state(nodes[1].e, DNP_DIR_XM), DNP_LINK_UP);

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 4096, DNP_BUF_PUT_TARGET, 0, &key), 0);
	memset(payload, 0x11, sizeof(payload));
	atomic_store(&flip_frame, shared);
	atomic_store(&flip_phase, FLIP_OFF);
	assert_int_equal(pthread_create(&th, NULL, flipper, NULL), 0);
	for (uint32_t seq = 0, it = 0; it < 2000; it++) {
		/* A PUT from node 1 to itself, as if it came back over X-: no CMPL to route. */
		struct dnp_pkt_hdr h = { .lflags = DNP_LINK_F_SEQ,
					 .seq = seq,
					 .src_dir = DNP_DIR_XP,
					 .dst = { 1, 0, 0 },
					 .src = { 1, 0, 0 },
					 .kind = DNP_PKT_PUT,
					 .flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST,
					 .len = 4096,
					 .msg_len = 4096,
					 .msg_id = it,
					 .va = BASE,
					 .key = key,
					 .hops = 1,
					 .epoch = epoch };
		atomic_store(&flip_phase, FLIP_OFF);
		while (!atomic_load(&flip_idle))
			sched_yield();
		int n = dnp_pkt_encode(&h, payload, shared, sizeof(shared));
		assert_int_equal(n, (int)dnp_pkt_frame_len(4096));
		atomic_store(&flip_busy, 0);
		atomic_store(&flip_phase, FLIP_ON);
		while (!atomic_load(&flip_busy)) /* receive while the peer is at work */
			sched_yield();
		int rc = dnp_engine_rx(nodes[1].e, DNP_DIR_XM, shared, (size_t)n, now);
		atomic_store(&flip_phase, FLIP_OFF);
		if (rc == 0) {
			seq++;
			accepted++;
		}
		dnp_engine_run(nodes[1].e, ++now);
		struct dnp_event ev[8];
		(void)dnp_engine_poll_events(nodes[1].e, 0, ev, 8);
		for (size_t i = 0; i < 4096; i++)
			if (nodes[1].mem[0][i] != 0x11 && nodes[1].mem[0][i] != 0)
				fail_msg("frame %u: byte %zu changed after the CRC check", it, i);
		struct dnp_frame f[16];
		for (unsigned d = 0; d < DNP_NDIRS; d++)
			(void)dnp_engine_tx_burst(nodes[1].e, d, f, 16, now);
	}
	atomic_store(&flip_phase, FLIP_STOP);
	pthread_join(th, NULL);
	assert_true(accepted > 0);
}

/*
 * Issue 7, lost completion report: node 1 got the PUT but its CMPL never
 * reaches node 0 (every CMPL frame of node 1 is lost). With a command
 * deadline the PUT still completes, exactly once, with -ETIMEDOUT.
 */
static void test_engine_lost_cmpl_times_out(void **state)
{
	t_cmd = 5000;
	setup_nodes(2);
	uint32_t key;
	struct dnp_event ev;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	drop_node = 1;
	drop_kind = DNP_PKT_CMPL;
	fill(nodes[0].mem[0], 9000, 2);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, 9000, 44);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	assert_true(next_event(1, 0, &ev, 1000));
	assert_int_equal(ev.type, DNP_EV_RX_PUT);
	uint64_t t0 = now;
	assert_true(next_event(0, 0, &ev, 10000));
	assert_int_equal(ev.type, DNP_EV_ERROR);
	assert_int_equal(ev.status, -ETIMEDOUT);
	assert_int_equal(ev.cookie, 44);
	assert_true(now - t0 <= 5000 + 5000 / 4 + 2); /* the documented bound */
	pump(20000); /* the link gives up on the CMPL too: still one event only */
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 0);
}

/*
 * Issue 7, SEND reassembly: the sender goes (its port closes) in the middle
 * of a multi-packet SEND. The receiver reclaims the reassembly slot (there
 * is only one) and the buffer after reasm_timeout, tells its application
 * with DNP_EV_RX_ERROR -ETIMEDOUT, and the next SEND lands in that buffer.
 */
static void test_engine_send_reasm_timeout(void **state)
{
	t_reasm = 3000;
	setup_nodes(2);
	const size_t len = 200u << 10;
	uint8_t *rx = nodes[1].mem[0];
	struct dnp_event ev;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 256u << 10, DNP_BUF_SEND_TARGET, 0, NULL),
		0);
	memset(nodes[0].mem[1], 0xaa, len);
	struct dnp_cmd c = { .op = DNP_OP_SEND,
			     .dst_x = 1,
			     .dst_port = 0,
			     .local_va = BASE,
			     .len = len,
			     .cookie = 8 };
	assert_int_equal(dnp_engine_submit(nodes[0].e, 1, &c, now), 0);
	for (unsigned i = 0; i < 5000 && rx[0] != 0xaa; i++)
		pump(1);
	assert_int_equal(rx[0], 0xaa);
	assert_int_not_equal(rx[len - 1], 0xaa);
	assert_int_equal(dnp_engine_port_close(nodes[0].e, 1), 0); /* the sender is killed */
	uint64_t t0 = now;
	assert_true(next_event(1, 0, &ev, 10000));
	assert_int_equal(ev.type, DNP_EV_RX_ERROR);
	assert_int_equal(ev.status, -ETIMEDOUT);
	assert_int_equal(ev.va, BASE);
	assert_int_equal(ev.len, len);
	assert_int_equal(ev.port, 1);
	assert_true(now - t0 <= 3000 + 3000 / 4 + 100);
	assert_int_equal(dnp_engine_stats(nodes[1].e)->reasm_timeouts, 1);

	/* The slot and the buffer are back: a new SEND arrives in the same buffer. */
	assert_int_equal(dnp_engine_port_open(nodes[0].e, 1), 0);
	memset(nodes[0].mem[1], 0x77, len);
	c.cookie = 9;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 1, &c, now), 0);
	assert_true(next_event(1, 0, &ev, 20000));
	assert_int_equal(ev.type, DNP_EV_RX_SEND);
	assert_int_equal(ev.va, BASE);
	assert_int_equal(rx[0], 0x77);
	assert_int_equal(rx[len - 1], 0x77);
	assert_true(next_event(0, 1, &ev, 5000));
	assert_int_equal(ev.type, DNP_EV_TX_DONE);
	assert_int_equal(ev.cookie, 9);
	pump(5000);
	assert_int_equal(dnp_engine_poll_events(nodes[1].e, 0, &ev, 1), 0);
}

/*
 * Issue 7, a slow application: on a 4-node ring, node 1's application
 * (port 0) stops draining its events while node 0 floods it with PUTs. Node
 * 0's PUTs to node 2 cross node 1 on the same link and VC. The first blocked
 * PUT fails back after deliver_timeout with -EOVERFLOW, the next ones at once
 * (the port is overrun until it drains an event), so every transit PUT gets
 * through within about one deliver_timeout; every command of node 0
 * completes exactly once.
 */
static void test_engine_slow_app_does_not_block_transit(void **state)
{
	t_deliver = 20000;
	evq_slots = 4;
	setup_nodes(4);
	uint32_t k1, k2;
	unsigned issued = 0, done_ok = 0, done_nospc = 0, transit_ok = 0, rx2 = 0;
	uint8_t seen[64] = { 0 };

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &k1), 0);
	assert_int_equal(
		dnp_engine_register(nodes[2].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &k2), 0);
	/* alternate: to node 1 (never drained), to node 2 (transit through node 1) */
	for (unsigned i = 0; i < 24; i++) {
		struct dnp_cmd c = i % 2 ? put_cmd(2, 0, BASE, BASE + i * 1024, k2, 5000, i) :
					   put_cmd(1, 0, BASE, BASE + i * 1024, k1, 5000, i);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
		issued++;
	}
	uint64_t t_start = now;
	for (unsigned step = 0; step < 400000 && done_ok + done_nospc < issued; step++) {
		struct dnp_event ev[8];
		pump(1);
		unsigned n = dnp_engine_poll_events(nodes[0].e, 0, ev, 8);
		for (unsigned j = 0; j < n; j++) {
			assert_true(ev[j].cookie < issued);
			assert_int_equal(seen[ev[j].cookie]++, 0); /* exactly once */
			if (ev[j].type == DNP_EV_TX_DONE) {
				done_ok++;
				transit_ok += ev[j].cookie % 2;
			} else {
				assert_int_equal(ev[j].type, DNP_EV_ERROR);
				assert_int_equal(ev[j].status, -EOVERFLOW);
				assert_int_equal(ev[j].cookie % 2, 0); /* only PUTs to node 1 */
				done_nospc++;
			}
		}
		rx2 += dnp_engine_poll_events(nodes[2].e, 0, ev, 8);
	}
	assert_int_equal(done_ok + done_nospc, issued);
	fprintf(stderr, "slow-app: %u failed back, all done after %llu\n", done_nospc,
		(unsigned long long)(now - t_start));
	/* one wait of deliver_timeout, not one per message: the port is overrun */
	assert_true(now - t_start < 2 * t_deliver);
	assert_int_equal(transit_ok, issued / 2);
	assert_int_equal(rx2, issued / 2);
	assert_true(done_nospc > 0);
	assert_int_equal(dnp_engine_stats(nodes[1].e)->deliver_timeouts, done_nospc);
}

/*
 * The same bound for loopback: port 1 of a single node stops draining; a
 * loopback PUT to it must not hold up, for ever, the loopback PUT queued
 * behind it (here to port 0 itself).
 */
static void test_engine_slow_app_does_not_block_loopback(void **state)
{
	t_deliver = 2000;
	evq_slots = 8;
	evq_node = 0;
	setup_nodes(1);
	uint32_t k0, k1;
	struct dnp_event ev;

	assert_int_equal(dnp_engine_register(nodes[0].e, 0, BASE + 0x100000, 65536,
					     DNP_BUF_PUT_TARGET, 0, &k0),
			 0);
	assert_int_equal(
		dnp_engine_register(nodes[0].e, 1, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &k1), 0);
	/* fill port 1's event queue: 8 RX_PUT nobody reads */
	for (unsigned i = 0; i < 8; i++) {
		struct dnp_cmd c = put_cmd(0, 1, BASE, BASE + i * 64, k1, 64, 100 + i);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
		assert_true(next_event(0, 0, &ev, 100));
		assert_int_equal(ev.type, DNP_EV_TX_DONE);
	}
	struct dnp_cmd c = put_cmd(0, 1, BASE, BASE, k1, 5000, 1); /* blocked */
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	c = put_cmd(0, 0, BASE, BASE + 0x100000, k0, 100, 2); /* behind it */
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	uint64_t t0 = now;
	assert_true(next_event(0, 0, &ev, 10000));
	assert_int_equal(ev.type, DNP_EV_ERROR);
	assert_int_equal(ev.status, -EOVERFLOW);
	assert_int_equal(ev.cookie, 1);
	assert_true(now - t0 <= 2000 + 10);
	assert_true(next_event(0, 0, &ev, 100));
	assert_int_equal(ev.type, DNP_EV_RX_PUT);
	assert_true(next_event(0, 0, &ev, 100));
	assert_int_equal(ev.type, DNP_EV_TX_DONE);
	assert_int_equal(ev.cookie, 2);
	pump(3000);
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 0);
}

/*
 * Success reports travel in batches (one CMPL frame for the messages of one
 * sender that a pass delivered), an error report at once after the batch
 * before it: 100 PUTs, two with a bad key, end in 100 events at the sender,
 * in submission order, each once, in far fewer CMPL frames than messages.
 */
static void test_engine_cmpl_batch_in_order(void **state)
{
	setup_nodes(2);
	uint32_t key;
	const unsigned n = 100;

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	fill(nodes[0].mem[0], 64 * n, 5);
	for (unsigned i = 0; i < n; i++) {
		uint32_t k = i == 37 || i == 71 ? key ^ 1 : key;
		struct dnp_cmd c = put_cmd(1, 0, BASE + 64 * i, BASE + 64 * i, k, 64, i);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	}
	for (unsigned i = 0; i < n; i++) {
		struct dnp_event ev;
		assert_true(next_event(0, 0, &ev, 5000));
		assert_int_equal(ev.cookie, i);
		if (i == 37 || i == 71) {
			assert_int_equal(ev.type, DNP_EV_ERROR);
			assert_int_equal(ev.status, -EACCES);
		} else {
			assert_int_equal(ev.type, DNP_EV_TX_DONE);
			assert_int_equal(ev.status, 0);
			assert_memory_equal(nodes[1].mem[0] + 64 * i, nodes[0].mem[0] + 64 * i, 64);
		}
	}
	pump(500);
	struct dnp_event ev;
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 0);
	uint64_t frames = dnp_engine_stats(nodes[1].e)->cmpl_frames;
	assert_true(frames >= 3); /* at least the two errors and a batch between them */
	assert_true(frames <= n / 4);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->cmds_ok, n - 2);
	assert_int_equal(dnp_engine_stats(nodes[0].e)->cmds_failed, 2);
}

/*
 * More senders (node and port) than open batches: a new sender flushes the
 * batch of another, and every PUT still ends in exactly one TX_DONE.
 * Nodes 0, 2 and 3 of a 4-node ring PUT to node 1 from both their ports;
 * node 1 stands still until they all wait in its input FIFOs, so that one
 * round delivers the PUTs of six senders (four batches open at most).
 */
static void test_engine_cmpl_batch_many_senders(void **state)
{
	setup_nodes(4);
	uint32_t key;
	const unsigned per = 40, src[3] = { 0, 2, 3 };

	pump(100); /* links UP before node 1 stands still */

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	for (unsigned i = 0; i < per; i++)
		for (unsigned k = 0; k < 3; k++)
			for (unsigned p = 0; p < NPORTS; p++) {
				struct dnp_cmd c = put_cmd(1, 0, BASE, BASE + 8 * (k * 2 + p), key,
							   8, (uint64_t)k << 32 | p << 16 | i);
				assert_int_equal(dnp_engine_submit(nodes[src[k]].e, p, &c, now), 0);
			}
	hold_node = 1;
	pump(300);
	hold_node = -1;
	for (unsigned k = 0; k < 3; k++)
		for (unsigned p = 0; p < NPORTS; p++) {
			for (unsigned i = 0; i < per; i++) {
				struct dnp_event ev;
				assert_true(next_event(src[k], p, &ev, 5000));
				assert_int_equal(ev.type, DNP_EV_TX_DONE);
				assert_int_equal(ev.cookie, (uint64_t)k << 32 | p << 16 | i);
			}
		}
	pump(500);
	for (unsigned k = 0; k < 3; k++)
		for (unsigned p = 0; p < NPORTS; p++) {
			struct dnp_event ev;
			assert_int_equal(dnp_engine_poll_events(nodes[src[k]].e, p, &ev, 1), 0);
		}
	assert_true(dnp_engine_stats(nodes[1].e)->cmpl_frames < 3 * NPORTS * per / 2);
}

/*
 * Node 1 runs with a handful of packet buffers while node 0 sends it 300
 * small PUTs, every third with a wrong key: the receiver refuses frames it
 * has no buffer for (hearing their acks), holds deliveries whose report has
 * no buffer, and sends error reports beside its batches of success reports.
 * Every command still ends in exactly one completion with its own status,
 * every good PUT lands and no bad one writes.
 */
static void pool_short_body(void)
{
	enum {
		N = 300,
		STEP = 16
	};
	unsigned seen[N] = { 0 }, rx = 0, done = 0;
	uint32_t key;

	pool_node = 1;
	pool_small_n = 4;
	pool_big_n = 2;
	setup_nodes(2);
	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0, &key), 0);
	fill(nodes[0].mem[0], N * STEP, 9);
	for (unsigned i = 0; i < N; i++) {
		struct dnp_cmd c = put_cmd(1, 0, BASE + i * STEP, BASE + i * STEP,
					   i % 3 == 2 ? key ^ 1 : key, 8, i);
		assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	}
	for (unsigned s = 0; s < 400000 && done < N; s++) {
		struct dnp_event ev;

		pump(1);
		while (dnp_engine_poll_events(nodes[1].e, 0, &ev, 1) == 1) {
			assert_int_equal(ev.type, DNP_EV_RX_PUT);
			rx++;
		}
		while (dnp_engine_poll_events(nodes[0].e, 0, &ev, 1) == 1) {
			if (ev.type == DNP_EV_LINK)
				continue;
			assert_true(ev.cookie < N);
			seen[ev.cookie]++;
			done++;
			if (ev.cookie % 3 == 2) {
				assert_int_equal(ev.type, DNP_EV_ERROR);
				assert_int_equal(ev.status, -EACCES);
			} else {
				assert_int_equal(ev.type, DNP_EV_TX_DONE);
				assert_int_equal(ev.status, 0);
			}
		}
	}
	assert_int_equal(done, N);
	pump(20000); /* nothing more comes */
	struct dnp_event ev;
	assert_int_equal(dnp_engine_poll_events(nodes[0].e, 0, &ev, 1), 0);
	for (unsigned i = 0; i < N; i++) {
		assert_int_equal(seen[i], 1);
		if (i % 3 == 2)
			for (unsigned b = 0; b < 8; b++)
				assert_int_equal(nodes[1].mem[0][i * STEP + b], 0);
		else
			assert_memory_equal(nodes[1].mem[0] + i * STEP, nodes[0].mem[0] + i * STEP,
					    8);
	}
	assert_int_equal(rx, N - N / 3);
	/* the buffers really ran out: frames were heard without being kept */
	assert_true(dnp_engine_stats(nodes[1].e)->rx_nobuf > 0);
}

static void test_engine_pool_short_hw_credits(void **state)
{
	pool_short_body();
}

static void test_engine_pool_short_dnpd_links(void **state)
{
	exact_prompt = true;
	ack_delay = 100;
	pool_short_body();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_engine_put_multi_fragment, teardown),
		cmocka_unit_test_teardown(test_engine_cmpl_batch_in_order, teardown),
		cmocka_unit_test_teardown(test_engine_cmpl_batch_many_senders, teardown),
		cmocka_unit_test_teardown(test_engine_pool_short_hw_credits, teardown),
		cmocka_unit_test_teardown(test_engine_pool_short_dnpd_links, teardown),
		cmocka_unit_test_teardown(test_engine_put_bad_key_writes_nothing, teardown),
		cmocka_unit_test_teardown(test_engine_put_out_of_bounds_writes_nothing, teardown),
		cmocka_unit_test_teardown(test_engine_send_in_order, teardown),
		cmocka_unit_test_teardown(test_engine_get, teardown),
		cmocka_unit_test_teardown(test_engine_lost_cmpl_times_out, teardown),
		cmocka_unit_test_teardown(test_engine_send_reasm_timeout, teardown),
		cmocka_unit_test_teardown(test_engine_slow_app_does_not_block_transit, teardown),
		cmocka_unit_test_teardown(test_engine_slow_app_does_not_block_loopback, teardown),
		cmocka_unit_test_teardown(test_engine_rx_decodes_private_copy, teardown),
		cmocka_unit_test_teardown(test_engine_replay_on_other_link_dropped, teardown),
		cmocka_unit_test_teardown(test_engine_port_reuse_aborts_get_responder, teardown),
		cmocka_unit_test_teardown(test_engine_port_reuse_drops_send_reassembly, teardown),
		cmocka_unit_test_teardown(test_engine_wrong_key_same_error_any_range, teardown),
		cmocka_unit_test_teardown(test_engine_loopback_put, teardown),
		cmocka_unit_test_teardown(test_engine_deferred_writes_land_before_events, teardown),
		cmocka_unit_test_teardown(test_engine_deferred_write_fault_fails_message, teardown),
		cmocka_unit_test_teardown(test_engine_read_seq_tags, teardown),
		cmocka_unit_test_teardown(test_engine_bad_command_one_error, teardown),
		cmocka_unit_test_teardown(test_engine_closed_port_refused, teardown),
		cmocka_unit_test_teardown(test_engine_one_loss_one_resend, teardown),
		cmocka_unit_test_teardown(test_engine_link_down_fails_commands, teardown),
		cmocka_unit_test_teardown(test_engine_detour_around_broken_cable, teardown),
		cmocka_unit_test_teardown(test_engine_prompt_credits_stream, teardown),
		cmocka_unit_test_teardown(test_engine_prompt_credits_per_frame, teardown),
		cmocka_unit_test_teardown(test_engine_ack_delay_pingpong, teardown),
		cmocka_unit_test_teardown(test_engine_ack_delay_stream, teardown),
		cmocka_unit_test_teardown(test_engine_ack_delay_one_loss, teardown),
		cmocka_unit_test_teardown(test_engine_mutual_get_storm, teardown),
		cmocka_unit_test_teardown(test_engine_restarted_node_rejoins, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
