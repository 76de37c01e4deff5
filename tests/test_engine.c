// SPDX-License-Identifier: MIT
/*
 * test_engine — two engines on a 2x1x1 torus (and loopback on one node),
 * wired frame by frame in this test, no lab and no transport.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

static int mem_read(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va, void *dst,
		    size_t len)
{
	struct node *n = ctx;
	if (port >= NPORTS || va < BASE || va + len > BASE + ARENA)
		return -EFAULT;
	memcpy(dst, n->mem[port] + (va - BASE), len);
	return 0;
}

static int mem_write(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va,
		     const void *src, size_t len)
{
	struct node *n = ctx;
	if (port >= NPORTS || va < BASE || va + len > BASE + ARENA)
		return -EFAULT;
	memcpy(n->mem[port] + (va - BASE), src, len);
	return 0;
}

static const struct dnp_mem_ops ops = { mem_read, mem_write };

static struct node nodes[2];
static unsigned nnodes;
static uint64_t now;
static bool exact_prompt; /* dnpd's link settings instead of the hardware's */
static uint64_t reset_period; /* links come back (0: BROKEN is final) */
static uint8_t last_data[DNP_MAX_FRAME]; /* the last data frame pump() carried */
static uint32_t last_data_len;

static void create_node(unsigned i, unsigned x, uint32_t seed)
{
	struct dnp_engine_conf c;
	dnp_engine_conf_default(&c);
	dnp_torus_init(&c.torus, x, 1, 1);
	c.self = (struct dnp_coord){ (uint8_t)i, 0, 0 };
	c.max_ports = NPORTS;
	c.mem = &ops;
	c.mem_ctx = &nodes[i];
	c.key_seed = seed;
	c.link.reset_period = reset_period;
	if (exact_prompt) {
		c.link.credit_model = DNP_CREDIT_EXACT;
		c.prompt_credits = true;
		c.link.credit_period = 1000000000; /* keep-alive only */
		c.link.credit_timeout = 4000000000;
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
	reset_period = 0;
	return 0;
}

/* Moves frames between the nodes for 'steps' time units. */
static void pump(unsigned steps)
{
	struct dnp_frame f[16];

	for (unsigned s = 0; s < steps; s++, now++) {
		for (unsigned i = 0; i < nnodes; i++)
			dnp_engine_run(nodes[i].e, now);
		for (unsigned i = 0; i < nnodes; i++) {
			for (unsigned d = 0; d < DNP_NDIRS; d++) {
				unsigned n = dnp_engine_tx_burst(nodes[i].e, d, f, 16, now);
				for (unsigned k = 0; k < n; k++) {
					uint8_t copy[DNP_MAX_FRAME];
					memcpy(copy, f[k].data, f[k].len);
					if (copy[3] & DNP_LINK_F_SEQ) {
						memcpy(last_data, copy, f[k].len);
						last_data_len = f[k].len;
					}
					unsigned peer = (i + 1) % nnodes;
					(void)dnp_engine_rx(nodes[peer].e, dnp_torus_opposite(d), copy,
							    f[k].len, now);
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
	return (struct dnp_cmd){ .op = DNP_OP_PUT, .dst_port = (uint8_t)dst_port,
				 .dst_x = (uint8_t)dst_x, .remote_key = key,
				 .remote_va = remote_va, .len = len, .local_va = local_va,
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

	assert_int_equal(dnp_engine_register(nodes[1].e, 1, BASE + 4096, 65536,
					     DNP_BUF_PUT_TARGET, 0, &key), 0);
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

	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0,
					     &key), 0);
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

	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE + 8192, 8192,
					     DNP_BUF_PUT_TARGET, 0, &key), 0);
	fill(nodes[0].mem[0], 12000, 3);
	/* starts inside, runs past the end: no fragment may land */
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE + 8192 + 100, key, 12000, 1);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_error(0, 0, -ERANGE);
	/* starts before the buffer: the later fragments fall inside it but must not land */
	c = put_cmd(1, 0, BASE, BASE + 4096, key, 12000, 2);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_error(0, 0, -ENOENT);
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
						     DNP_BUF_SEND_TARGET, 0, NULL), 0);
	for (int i = 0; i < 3; i++) {
		fill(nodes[0].mem[1] + i * 0x8000, 5000 + i, (unsigned)i);
		struct dnp_cmd c = { .op = DNP_OP_SEND, .dst_x = 1, .dst_port = 0,
				     .local_va = BASE + i * 0x8000, .len = 5000 + i,
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
	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE, 20000, DNP_BUF_GET_SOURCE, 0,
					     &rkey), 0);
	assert_int_equal(dnp_engine_register(nodes[0].e, 1, BASE + 0x40000, 20000,
					     DNP_BUF_PUT_TARGET, 0, &lkey), 0);
	struct dnp_cmd c = { .op = DNP_OP_GET, .dst_x = 1, .dst_port = 0, .remote_va = BASE,
			     .remote_key = rkey, .len = 20000, .local_va = BASE + 0x40000,
			     .local_key = lkey, .cookie = 77 };
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
					     DNP_BUF_PUT_TARGET, 0, &key), 0);
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

	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE, 65536, DNP_BUF_PUT_TARGET, 0,
					     &key), 0);
	pump(100);
	for (unsigned d = 0; d < 2; d++)
		dnp_engine_link_down(nodes[0].e, d, now);
	assert_int_equal(dnp_engine_link_state(nodes[0].e, DNP_DIR_XP), DNP_LINK_BROKEN);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, 100, 9);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_error(0, 0, -ENOLINK);
}

/* With EXACT credits a stream is paced by prompt credits, not by the credit period. */
static void test_engine_prompt_credits_stream(void **state)
{
	exact_prompt = true;
	setup_nodes(2);
	uint32_t key;
	const size_t len = 1u << 20;

	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE, len, DNP_BUF_PUT_TARGET, 0,
					     &key), 0);
	fill(nodes[0].mem[0], len, 11);
	struct dnp_cmd c = put_cmd(1, 0, BASE, BASE, key, len, 3);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	struct dnp_event ev;
	/* 256 packets of 4 KiB: far fewer steps than one credit period */
	assert_true(next_event(1, 0, &ev, 20000));
	assert_int_equal(ev.type, DNP_EV_RX_PUT);
	assert_int_equal(ev.len, len);
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], len);
	assert_true(next_event(0, 0, &ev, 1000));
	assert_int_equal(ev.type, DNP_EV_TX_DONE);
	assert_true(now < 1000000000);
	assert_int_equal(dnp_engine_link_stats(nodes[0].e, DNP_DIR_XP)->tx_retx_frames, 0);
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
						     0, &src_key[n]), 0);
		assert_int_equal(dnp_engine_register(nodes[n].e, 0, BASE + 0x100000, 65536,
						     DNP_BUF_PUT_TARGET, 0, &dst_key[n]), 0);
	}
	for (unsigned n = 0; n < 2; n++) {
		for (;;) {
			unsigned i = issued[n];
			struct dnp_cmd c = { .op = DNP_OP_GET, .dst_x = (uint8_t)(1 - n),
					     .remote_va = BASE + (i % 1024) * 64,
					     .remote_key = src_key[1 - n], .len = 64,
					     .local_va = BASE + 0x100000 + (i % 1024) * 64,
					     .local_key = dst_key[n], .cookie = i };
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

	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE, len, DNP_BUF_PUT_TARGET, 0,
					     &key), 0);
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
	assert_int_equal(dnp_engine_register(nodes[1].e, 0, BASE, len, DNP_BUF_PUT_TARGET, 0,
					     &key), 0);
	fill(nodes[0].mem[0], 65536, 9);
	c = put_cmd(1, 0, BASE, BASE, key, 65536, 78);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	assert_true(next_event(0, 0, &ev, 20000));
	assert_int_equal(ev.type, DNP_EV_TX_DONE);
	assert_int_equal(ev.cookie, 78);
	assert_memory_equal(nodes[1].mem[0], nodes[0].mem[0], 65536);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_engine_put_multi_fragment, teardown),
		cmocka_unit_test_teardown(test_engine_put_bad_key_writes_nothing, teardown),
		cmocka_unit_test_teardown(test_engine_put_out_of_bounds_writes_nothing, teardown),
		cmocka_unit_test_teardown(test_engine_send_in_order, teardown),
		cmocka_unit_test_teardown(test_engine_get, teardown),
		cmocka_unit_test_teardown(test_engine_loopback_put, teardown),
		cmocka_unit_test_teardown(test_engine_bad_command_one_error, teardown),
		cmocka_unit_test_teardown(test_engine_closed_port_refused, teardown),
		cmocka_unit_test_teardown(test_engine_link_down_fails_commands, teardown),
		cmocka_unit_test_teardown(test_engine_prompt_credits_stream, teardown),
		cmocka_unit_test_teardown(test_engine_mutual_get_storm, teardown),
		cmocka_unit_test_teardown(test_engine_restarted_node_rejoins, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
