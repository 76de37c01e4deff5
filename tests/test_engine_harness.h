/* SPDX-License-Identifier: MIT */
/*
 * test_engine_harness.h — the wiring shared by the engine's unit tests
 * (test_engine.c, test_engine_links.c, test_engine_cmpl.c): up to four
 * engines on an X ring (2x1x1 by default, and loopback on one node), wired
 * frame by frame by pump(), no lab and no transport. Application memory is
 * an arena per node and port at BASE; writes may be deferred to a flush
 * (defer) or fail in a poisoned range; the knobs below are reset by
 * teardown() after every test.
 */
#ifndef TEST_ENGINE_HARNESS_H
#define TEST_ENGINE_HARNESS_H

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
static uint64_t t_query;                   /* query_timeout (0 = no outcome queries) */
static uint64_t t_sick_hold;               /* sick_hold (0 = a sick link is let go at once) */
static uint8_t routing, nvcs;              /* enum dnp_routing, link VCs (0: the default) */
static uint8_t arbitration;                /* enum dnp_arbitration (arb.h), 0: off */
static uint16_t low_payload, top_reserve;  /* engine.h arb_low_payload, arb_top_reserve */
static uint32_t evq_slots;                 /* event queue size of node evq_node (0 = default) */
static unsigned evq_node = 1;
static int pool_node = -1;                 /* this node gets the pools below */
static uint32_t pool_small_n, pool_big_n;  /* its packet buffers (0: the engine sizes them) */
static int drop_node = -1, drop_kind = -1; /* pump drops these frames */
static int drop_dir = -1;                  /* ... sent on this link only (-1: any) */
static int64_t drop_seq = -1;              /* pump drops node 0's first frame with this seq */
static int hold_node = -1; /* pump neither runs nor drains this node (its input piles up) */
/* pump keeps the frames node stash_node sends on link stash_dir; stash_release() delivers them */
static int stash_node = -1, stash_dir = -1;
#define STASH_MAX 256
static struct stashed {
	unsigned peer;
	uint32_t len;
	uint8_t data[DNP_MAX_FRAME];
} stash[STASH_MAX];
static unsigned nstash;
static unsigned nnodes;
static bool grid; /* 4 nodes on a 2x2x1 torus, node i at (i & 1, i >> 1), instead of a ring */
static uint64_t now;
static bool exact_prompt;                /* dnpd's link settings instead of the hardware's */
static uint64_t ack_delay;               /* with exact_prompt: engine.h's ack_delay */
static uint64_t reset_period;            /* links come back (0: BROKEN is final) */
static uint8_t last_data[DNP_MAX_FRAME]; /* the last data frame pump() carried */
/* pump hands every frame to this before its receiver (a forger on the wire); NULL: none */
static void (*pump_mangle)(unsigned from, uint8_t *frame, uint32_t len);
static uint32_t last_data_len;

static void create_node(unsigned i, unsigned x, uint32_t seed)
{
	struct dnp_engine_conf c;
	dnp_engine_conf_default(&c);
	dnp_torus_init(&c.torus, grid ? 2 : x, grid ? 2 : 1, 1);
	c.self = grid ? (struct dnp_coord){ (uint8_t)(i & 1), (uint8_t)(i >> 1), 0 } :
			(struct dnp_coord){ (uint8_t)i, 0, 0 };
	c.max_ports = NPORTS;
	c.mem = defer ? &ops_flush : &ops;
	c.mem_ctx = &nodes[i];
	c.key_secret[0] = seed;
	c.cmd_timeout = t_cmd;
	c.reasm_timeout = t_reasm;
	c.deliver_timeout = t_deliver;
	c.query_timeout = t_query;
	c.sick_hold = t_sick_hold;
	c.routing = routing;
	c.arbitration = arbitration;
	c.arb_low_payload = low_payload;
	c.arb_top_reserve = top_reserve;
	if (nvcs)
		c.link.nvc = nvcs;
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
	t_cmd = t_reasm = t_deliver = t_query = t_sick_hold = 0;
	routing = nvcs = 0;
	arbitration = 0;
	low_payload = top_reserve = 0;
	evq_slots = 0;
	evq_node = 1;
	pool_node = -1;
	pool_small_n = pool_big_n = 0;
	drop_node = drop_kind = drop_dir = -1;
	drop_seq = -1;
	hold_node = -1;
	stash_node = stash_dir = -1;
	nstash = 0;
	grid = false;
	defer = false;
	nqueued = flushes = 0;
	poison_lo = poison_hi = 0;
	poison_failed = false;
	memset(nreads, 0, sizeof(nreads));
	pump_mangle = NULL;
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
					/* X ring: + goes to i+1, - to i-1 (grid: the other node of the ring) */
					unsigned peer = grid            ? i ^ (d / 2 ? 2u : 1u) :
							d == DNP_DIR_XP ? (i + 1) % nnodes :
									  (i + nnodes - 1) % nnodes;
					struct dnp_pkt_hdr h;
					const uint8_t *pl;
					if ((int)i == drop_node &&
					    (drop_dir < 0 || (int)d == drop_dir) &&
					    dnp_pkt_decode(copy, f[k].len, &h, &pl) == 0 &&
					    (int)h.kind == drop_kind)
						continue; /* lost on the wire */
					if (i == 0 && drop_seq >= 0 && (copy[3] & DNP_LINK_F_SEQ) &&
					    dnp_pkt_decode(copy, f[k].len, &h, &pl) == 0 &&
					    h.seq == (uint32_t)drop_seq) {
						drop_seq = -1; /* once */
						continue;
					}
					if ((int)i == stash_node && (int)d == stash_dir) {
						if (nstash <
						    STASH_MAX) { /* beyond: lost on the wire */
							stash[nstash].peer = peer;
							stash[nstash].len = f[k].len;
							memcpy(stash[nstash++].data, copy,
							       f[k].len);
						}
						continue;
					}
					if (pump_mangle)
						pump_mangle(i, copy, f[k].len);
					(void)dnp_engine_rx(nodes[peer].e, dnp_torus_opposite(d),
							    copy, f[k].len, now);
				}
			}
		}
	}
}

/* The stashed frames reach their peer now, in the order they were sent; stashing ends. */
static inline void stash_release(void)
{
	for (unsigned k = 0; k < nstash; k++)
		(void)dnp_engine_rx(nodes[stash[k].peer].e,
				    dnp_torus_opposite((enum dnp_dir)stash_dir), stash[k].data,
				    stash[k].len, now);
	nstash = 0;
	stash_node = stash_dir = -1;
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

/* The helpers below are inline: not every test program uses each of them. */
static inline struct dnp_cmd send_cmd(unsigned dst_x, unsigned dst_port, uint64_t local_va,
				      uint64_t len, uint64_t cookie)
{
	struct dnp_cmd c = put_cmd(dst_x, dst_port, local_va, 0, 0, len, cookie);

	c.op = DNP_OP_SEND;
	return c;
}

static inline struct dnp_cmd get_cmd(unsigned dst_x, unsigned dst_port, uint64_t remote_va,
				     uint32_t remote_key, uint64_t len, uint64_t local_va,
				     uint32_t local_key, uint64_t cookie)
{
	struct dnp_cmd c = put_cmd(dst_x, dst_port, local_va, remote_va, remote_key, len, cookie);

	c.op = DNP_OP_GET;
	c.local_key = local_key;
	return c;
}

/* Registers [va, va + len) of (node, port) as a DNP_BUF_* kind of buffer; returns its key. */
static inline uint32_t reg_buf(unsigned node, unsigned port, uint64_t va, uint64_t len,
			       unsigned flags)
{
	uint32_t key = 0;

	assert_int_equal(dnp_engine_register(nodes[node].e, port, va, len, flags, 0, &key), 0);
	return key;
}

/* The next event of (node, port) but LINK ones, within max_steps (each). */
static inline bool next_event_nolink(unsigned node, unsigned port, struct dnp_event *ev,
				     unsigned max_steps)
{
	do
		if (!next_event(node, port, ev, max_steps))
			return false;
	while (ev->type == DNP_EV_LINK);
	return true;
}

/*
 * The next event of (node, port), within max_steps (passing over LINK events
 * when skip_link), is of this type; it is returned.
 */
static inline struct dnp_event expect_next(unsigned node, unsigned port, unsigned max_steps,
					   unsigned type, bool skip_link)
{
	struct dnp_event ev;

	assert_true(skip_link ? next_event_nolink(node, port, &ev, max_steps) :
				next_event(node, port, &ev, max_steps));
	assert_int_equal(ev.type, type);
	return ev;
}

static inline struct dnp_event expect_event(unsigned node, unsigned port, unsigned max_steps,
					    unsigned type)
{
	return expect_next(node, port, max_steps, type, false);
}

static inline struct dnp_event expect_event_nolink(unsigned node, unsigned port, unsigned max_steps,
						   unsigned type)
{
	return expect_next(node, port, max_steps, type, true);
}

/* Nothing more comes to (node, port) within 'steps' time units. */
static inline void expect_quiet(unsigned node, unsigned port, unsigned steps)
{
	struct dnp_event ev;

	pump(steps);
	assert_int_equal(dnp_engine_poll_events(nodes[node].e, port, &ev, 1), 0);
}

/*
 * A 200 KiB SEND (cookie 8) from node 0, port 1, into a 256 KiB SEND buffer
 * at BASE of node 1, port 0, caught part-way: its first bytes (0xaa) have
 * landed, its last not yet. Returns its command.
 */
static inline struct dnp_cmd start_long_send(void)
{
	const size_t len = 200u << 10;
	uint8_t *rx = nodes[1].mem[0];
	struct dnp_cmd c = send_cmd(1, 0, BASE, len, 8);

	assert_int_equal(
		dnp_engine_register(nodes[1].e, 0, BASE, 256u << 10, DNP_BUF_SEND_TARGET, 0, NULL),
		0);
	memset(nodes[0].mem[1], 0xaa, len);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 1, &c, now), 0);
	for (unsigned i = 0; i < 5000 && rx[0] != 0xaa; i++)
		pump(1);
	assert_int_equal(rx[0], 0xaa);
	assert_int_not_equal(rx[len - 1], 0xaa);
	return c;
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 31u + seed);
}

/* The next event of (node, port) but LINK ones is an ERROR with err. */
static inline void expect_error(unsigned node, unsigned port, int err)
{
	assert_int_equal(expect_event_nolink(node, port, 5000, DNP_EV_ERROR).status, err);
}

#endif /* TEST_ENGINE_HARNESS_H */
