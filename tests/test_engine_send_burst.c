/* SPDX-License-Identifier: MIT */
/*
 * test_engine_send_burst — the send-side burst (engine.h, conf.tx_single;
 * docs/performance.md "Send-side burst") against the one-at-a-time path.
 * Two worlds run the same script: two engines of a 2x1x1 torus wired back
 * to back, as dnpd sets them (exact credits, prompt credits, rx_direct);
 * world 0 builds and sends packets in runs (the default), world 1 one at a
 * time (tx_single). Every frame each engine's tx_burst returns (with its
 * node and link) and every event each port hears are appended to a trace,
 * in order. The traces, both nodes' memory and the engines' statistics
 * must be identical, byte for byte, after mixed bursts of PUT, SEND and GET
 * (0 bytes to several packets, inline, TX_READ events, a source that cannot
 * be read, a wrong key; world 0 submits them in bursts), a full command
 * table, a full window, a peer that returns no credit for a
 * while, a short packet pool, and a link that goes down mid-burst. Each
 * test also checks that runs were built and that every command ended with
 * exactly one completion.
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

#define ARENA (256u << 10)
#define BASE 0x100000ull

#include "test_arena.h"
#include "test_engine_setup.h"

#define SENDBUF (16u << 10) /* node 1's SEND buffers, in the arena's upper half */
#define NSENDBUF 8u
#define TRACE (8u << 20)

struct world {
	struct dnp_engine *e[2];
	uint8_t mem[2][ARENA];
	uint8_t *tr; /* frames and events, in order */
	size_t trn;
	uint32_t key[2];
	uint64_t now;
	unsigned done; /* completions heard by node 0 (TX_DONE, GET_DONE, ERROR) */
};

/* A scenario: link and pool settings, and how the wire behaves. */
struct scen {
	uint32_t window, fifo_words, pool_big;
	unsigned txmax; /* frames per tx_burst call */
	bool ecn;       /* congestion marks: injection one at a time, tx_burst in runs */
	uint32_t max_commands;
};

static struct world W[2]; /* 0: runs (default), 1: one at a time */
static unsigned drop1;    /* rounds left in which node 1's frames are lost */

static void trace(struct world *w, char tag, unsigned node, unsigned dir, const void *p,
		  uint32_t len);

/*
 * Reads are traced too, with the registered buffer the engine passed for
 * the source (the send-side run looks it up once for the reads it holds).
 */
static int mem_read(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va, void *dst,
		    size_t len, const struct dnp_mem_seq *seq)
{
	uint8_t *m = ctx;

	for (unsigned k = 0; k < 2; k++)
		for (unsigned i = 0; i < 2; i++)
			if (m == W[k].mem[i]) {
				uint64_t rec[6] = { port,          va, len, seq->id, b ? b->va : 0,
						    b ? b->len : 0 };

				trace(&W[k], 'R', i, 0, rec, sizeof(rec));
			}
	return test_engine_mem_read(ctx, port, b, va, dst, len, seq);
}

static const struct dnp_mem_ops ops = { .read = mem_read, .write = test_engine_mem_write };

static void trace(struct world *w, char tag, unsigned node, unsigned dir, const void *p,
		  uint32_t len)
{
	uint8_t hd[8] = { (uint8_t)tag, (uint8_t)node, (uint8_t)dir, 0 };

	memcpy(hd + 4, &len, 4);
	assert_true(w->trn + sizeof(hd) + len <= TRACE);
	memcpy(w->tr + w->trn, hd, sizeof(hd));
	memcpy(w->tr + w->trn + sizeof(hd), p, len);
	w->trn += sizeof(hd) + len;
}

/* One round: both engines run, every frame crosses (or is lost), events are polled. */
static void round_trip(struct world *w, unsigned txmax, bool lose1)
{
	struct dnp_frame f[64];
	struct dnp_event ev[16];

	for (unsigned i = 0; i < 2; i++)
		dnp_engine_run(w->e[i], w->now);
	for (unsigned i = 0; i < 2; i++)
		for (unsigned d = DNP_DIR_XP; d <= DNP_DIR_XM; d++) {
			unsigned n = dnp_engine_tx_burst(w->e[i], d, f, txmax, w->now);

			for (unsigned k = 0; k < n; k++)
				trace(w, 'F', i, d, f[k].data, f[k].len);
			if (!(lose1 && i == 1))
				(void)dnp_engine_rx_burst(w->e[1 - i], dnp_torus_opposite(d), f, n,
							  NULL, w->now);
		}
	for (unsigned i = 0; i < 2; i++) {
		unsigned n;

		while ((n = dnp_engine_poll_events(w->e[i], 0, ev, 16)) > 0)
			for (unsigned k = 0; k < n; k++) {
				trace(w, 'E', i, 0, &ev[k], sizeof(ev[k]));
				if (i == 0 &&
				    (ev[k].type == DNP_EV_TX_DONE ||
				     ev[k].type == DNP_EV_GET_DONE || ev[k].type == DNP_EV_ERROR))
					w->done++;
			}
	}
	w->now += 1000;
}

static void world_setup(struct world *w, bool single, const struct scen *sc)
{
	for (unsigned i = 0; i < 2; i++) /* a second scenario in one test */
		if (w->e[i])
			dnp_engine_destroy(w->e[i]);
	w->now = 1;
	w->trn = 0;
	w->done = 0;
	if (!w->tr)
		w->tr = malloc(TRACE);
	assert_non_null(w->tr);
	for (unsigned i = 0; i < 2; i++) {
		struct dnp_engine_conf c;

		for (unsigned b = 0; b < ARENA; b++)
			w->mem[i][b] = (uint8_t)(b * 7 + i * 13 + (b >> 9));
		dnp_engine_conf_default(&c);
		dnp_torus_init(&c.torus, 2, 1, 1);
		c.self = (struct dnp_coord){ (uint8_t)i, 0, 0 };
		c.max_ports = 1;
		c.mem = &ops;
		c.mem_ctx = w->mem[i];
		c.key_secret[0] = 77 + i;
		c.link.credit_model = DNP_CREDIT_EXACT;
		c.prompt_credits = true;
		c.rx_direct = true;
		c.tx_single = single;
		if (sc->window)
			c.link.window = sc->window;
		if (sc->fifo_words) {
			c.link.fifo_words = sc->fifo_words;
			c.link.t_red = sc->fifo_words - 6;
			c.link.t_yellow = sc->fifo_words / 2;
		}
		c.pool_big = sc->pool_big;
		if (sc->max_commands)
			c.max_commands = sc->max_commands;
		if (sc->ecn) {
			c.congestion = DNP_CONGESTION_ECN;
			c.cg_threshold = 64; /* words: a few 4 KiB frames in flight mark */
		}
		assert_int_equal(dnp_engine_create(&c, w->now, &w->e[i]), 0);
		assert_int_equal(dnp_engine_port_open(w->e[i], 0), 0);
		assert_int_equal(dnp_engine_register(w->e[i], 0, BASE, ARENA / 2,
						     DNP_BUF_PUT_TARGET | DNP_BUF_GET_SOURCE, 0,
						     &w->key[i]),
				 0);
	}
	for (unsigned k = 0; k < NSENDBUF; k++) {
		uint32_t key;

		assert_int_equal(dnp_engine_register(w->e[1], 0, BASE + ARENA / 2 + k * SENDBUF,
						     SENDBUF, DNP_BUF_SEND_TARGET, 0, &key),
				 0);
	}
	for (unsigned r = 0; r < 50; r++) /* the links' handshake */
		round_trip(w, sc->txmax, false);
	assert_true(dnp_engine_has_link(w->e[0], DNP_DIR_XP));
}

static int teardown(void **state)
{
	(void)state;
	for (unsigned k = 0; k < 2; k++) {
		for (unsigned i = 0; i < 2; i++) {
			dnp_engine_destroy(W[k].e[i]);
			W[k].e[i] = NULL;
		}
		free(W[k].tr);
		W[k].tr = NULL;
	}
	drop1 = 0;
	return 0;
}

/* Sizes that give 0, 1 and several packets, an inline PUT, and packet boundaries. */
static const uint32_t sizes[] = { 8, 0, 4096, 24, 4097, 100, 3 * 4096 + 5, 1, 8192, 16 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/*
 * Command i of a mixed script: PUT, SEND and GET in turn (every fifth one a
 * run of PUTs), sizes from sizes[]; some ask for TX_READ; with faults, a
 * PUT whose source cannot be read and one with a wrong key; every seventh
 * one is a loopback (to node 0 itself).
 */
static struct dnp_cmd mixed_cmd(const struct world *w, unsigned i, bool faults)
{
	uint32_t len = sizes[i % NSIZES];
	unsigned op = i % 5 == 4 ? 0 : i % 3;
	struct dnp_cmd c = { .dst_x = 1, .cookie = 1000 + i };
	uint64_t off = (uint64_t)(i % 8) * 16384u;

	if (op == 1 && len > SENDBUF)
		len = SENDBUF;
	c.len = len;
	c.local_va = BASE + off;
	if (op == 0) {
		c.op = DNP_OP_PUT;
		c.remote_key = w->key[1];
		c.remote_va = BASE + off + 64;
		if (len <= DNP_CMD_INLINE_MAX && i % 2) {
			c.flags = DNP_CMD_F_INLINE;
			dnp_cmd_inline_set(&c, w->mem[0] + off, len);
		} else if (i % 4 == 1) {
			c.flags = DNP_CMD_F_SRC_EVENT;
		}
		if (faults && i % 11 == 3)
			c.local_va = BASE + 8 * ARENA; /* unreadable: -EFAULT at injection */
		if (faults && i % 13 == 5)
			c.remote_key ^= 0x55; /* refused by the target */
	} else if (op == 1) {
		c.op = DNP_OP_SEND;
		if (i % 4 == 1)
			c.flags = DNP_CMD_F_SRC_EVENT;
	} else {
		c.op = DNP_OP_GET;
		c.remote_key = w->key[1];
		c.remote_va = BASE + off + 128;
		c.local_key = w->key[0];
		c.local_va = BASE + ARENA / 4 + off / 2;
	}
	if (i % 7 == 6) { /* loopback: another first hop in the same burst */
		c.dst_x = 0;
		c.remote_key = c.op == DNP_OP_SEND ? 0 : w->key[0];
	}
	return c;
}

/* Submits commands [lo, hi) of the mixed script; returns how many were accepted. */
static unsigned submit_mixed(struct world *w, unsigned lo, unsigned hi, bool faults, bool puts)
{
	static struct dnp_cmd cmds[256];
	unsigned n = 0;

	assert_true(hi - lo <= 256);
	for (unsigned i = lo; i < hi; i++) {
		struct dnp_cmd c = mixed_cmd(w, i, faults);

		if (puts) { /* 8-byte PUTs only (a window or credit test) */
			c = (struct dnp_cmd){ .op = DNP_OP_PUT,
					      .dst_x = 1,
					      .remote_key = w->key[1],
					      .remote_va = BASE + 64 + (i % 512) * 8,
					      .len = i % 7 == 3 ? 4096 : 8,
					      .local_va = BASE + (i % 512) * 8,
					      .cookie = i };
		}
		cmds[i - lo] = c;
	}
	if (w == &W[1]) { /* one at a time; a refused command is skipped */
		for (unsigned i = 0; i < hi - lo; i++) {
			int rc = dnp_engine_submit(w->e[0], 0, &cmds[i], w->now);

			assert_true(rc == 0 || rc == -EAGAIN);
			n += rc == 0;
		}
		return n;
	}
	for (unsigned i = 0; i < hi - lo;) { /* in bursts, as the single world does */
		int rc = 1;
		unsigned k =
			dnp_engine_submit_burst(w->e[0], 0, &cmds[i], hi - lo - i, &rc, w->now);

		n += k;
		i += k;
		assert_int_equal(rc, i < hi - lo ? -EAGAIN : 0);
		i += i < hi - lo; /* refused, untouched: the next is tried */
	}
	return n;
}

/* Rounds until both nodes are idle and every accepted command ended (at most 'max'). */
static void settle(struct world *w, unsigned txmax, unsigned accepted, unsigned max)
{
	for (unsigned r = 0; r < max; r++) {
		round_trip(w, txmax, drop1 > 0);
		if (w->done >= accepted && !dnp_engine_has_work(w->e[0]) &&
		    !dnp_engine_has_work(w->e[1]))
			break;
	}
}

/* The two worlds: the same frames and events in the same order, the same memory and stats. */
static void compare_worlds(unsigned accepted, bool runs)
{
	struct world *a = &W[0], *b = &W[1];
	struct dnp_engine_stats sa, sb;
	size_t n = a->trn < b->trn ? a->trn : b->trn, k = 0;

	while (k < n && a->tr[k] == b->tr[k])
		k++;
	if (k != n || a->trn != b->trn)
		fprintf(stderr, "traces differ at byte %zu of %zu / %zu\n", k, a->trn, b->trn);
	assert_int_equal(a->trn, b->trn);
	assert_memory_equal(a->tr, b->tr, a->trn);
	for (unsigned i = 0; i < 2; i++) {
		assert_memory_equal(a->mem[i], b->mem[i], ARENA);
		sa = *dnp_engine_stats(a->e[i]);
		sb = *dnp_engine_stats(b->e[i]);
		if (i == 0 && runs)
			assert_true(sa.tx_run_pkts > 0); /* the runs were taken */
		assert_int_equal(sb.tx_run_pkts, 0);
		sa.tx_run_pkts = 0;
		assert_memory_equal(&sa, &sb, sizeof(sa));
		for (unsigned d = DNP_DIR_XP; d <= DNP_DIR_XM; d++)
			assert_memory_equal(dnp_engine_link_stats(a->e[i], d),
					    dnp_engine_link_stats(b->e[i], d),
					    sizeof(struct dnp_link_stats));
	}
	assert_int_equal(a->done, accepted); /* one completion per command */
	assert_int_equal(b->done, accepted);
}

/* Runs one scenario in both worlds; 'script' submits and steers the rounds. */
static void both(const struct scen *sc, unsigned (*script)(struct world *, const struct scen *))
{
	unsigned acc[2];

	for (unsigned k = 0; k < 2; k++) {
		world_setup(&W[k], k == 1, sc);
		acc[k] = script(&W[k], sc);
	}
	assert_int_equal(acc[0], acc[1]);
	assert_true(acc[0] > 0);
	compare_worlds(acc[0], !sc->ecn);
}

static unsigned script_mixed(struct world *w, const struct scen *sc)
{
	unsigned acc = 0;

	for (unsigned b = 0; b < 4; b++) { /* bursts of 12, two rounds apart */
		acc += submit_mixed(w, b * 12, b * 12 + 12, true, false);
		round_trip(w, sc->txmax, false);
		round_trip(w, sc->txmax, false);
	}
	settle(w, sc->txmax, acc, 600);
	return acc;
}

static unsigned script_puts(struct world *w, const struct scen *sc)
{
	unsigned acc = submit_mixed(w, 0, 200, false, true);

	settle(w, sc->txmax, acc, 800);
	return acc;
}

/* Node 1's frames (acks, credits) are lost for a few rounds in the middle of a stream. */
static unsigned script_no_credit(struct world *w, const struct scen *sc)
{
	unsigned acc = submit_mixed(w, 0, 60, false, true);

	round_trip(w, sc->txmax, false);
	drop1 = 6;
	for (; drop1; drop1--)
		round_trip(w, sc->txmax, true);
	acc += submit_mixed(w, 60, 80, true, false);
	settle(w, sc->txmax, acc, 800);
	return acc;
}

/* Link XP of node 0 goes down with packets sent, queued in runs and waiting. */
static unsigned script_link_down(struct world *w, const struct scen *sc)
{
	unsigned acc = submit_mixed(w, 0, 40, false, false);

	round_trip(w, sc->txmax, false);
	dnp_engine_run(w->e[0], w->now);
	dnp_engine_link_down(w->e[0], DNP_DIR_XP, w->now);
	acc += submit_mixed(w, 40, 60, true, false);
	settle(w, sc->txmax, acc, 800);
	return acc;
}

static void test_engine_send_burst_mixed(void **state)
{
	static const struct scen sc = { .txmax = 32 };

	(void)state;
	both(&sc, script_mixed);
}

/* A window of 4 packets and tx_burst calls of 3 frames: runs end on a full window. */
static void test_engine_send_burst_full_window(void **state)
{
	static const struct scen sc = { .window = 4, .txmax = 3 };

	(void)state;
	both(&sc, script_puts);
	both(&sc, script_mixed);
}

/* A command table of 16: submit bursts stop at -EAGAIN, the rest are tried again later. */
static void test_engine_send_burst_submit_full(void **state)
{
	static const struct scen sc = { .max_commands = 16, .txmax = 32 };
	int rc = 0;

	(void)state;
	both(&sc, script_mixed);
	assert_int_equal(dnp_engine_submit_burst(W[0].e[0], 5, NULL, 1, &rc, W[0].now), 0);
	assert_int_equal(rc, -ENOENT); /* no such port: nothing taken */
}

/* A small FIFO (credit for about two 4 KiB frames) and lost credits: runs end on credit. */
static void test_engine_send_burst_no_credit(void **state)
{
	static const struct scen sc = { .fifo_words = 640, .txmax = 8 };

	(void)state;
	both(&sc, script_no_credit);
}

/* Few packet buffers: runs end when the pool is short. */
static void test_engine_send_burst_short_pool(void **state)
{
	static const struct scen sc = { .pool_big = 12, .txmax = 16 };

	(void)state;
	both(&sc, script_mixed);
}

/* Congestion marks (CE) set at injection must leave in tx_burst's runs as before. */
static void test_engine_send_burst_ecn(void **state)
{
	static const struct scen sc = { .fifo_words = 1024, .txmax = 8, .ecn = true };

	(void)state;
	both(&sc, script_no_credit);
	assert_true(dnp_engine_stats(W[0].e[0])->cg_marked > 0);
}

static void test_engine_send_burst_link_down(void **state)
{
	static const struct scen sc = { .txmax = 5 };

	(void)state;
	both(&sc, script_link_down);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_engine_send_burst_mixed, teardown),
		cmocka_unit_test_teardown(test_engine_send_burst_full_window, teardown),
		cmocka_unit_test_teardown(test_engine_send_burst_submit_full, teardown),
		cmocka_unit_test_teardown(test_engine_send_burst_no_credit, teardown),
		cmocka_unit_test_teardown(test_engine_send_burst_short_pool, teardown),
		cmocka_unit_test_teardown(test_engine_send_burst_ecn, teardown),
		cmocka_unit_test_teardown(test_engine_send_burst_link_down, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
