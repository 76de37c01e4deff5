/* SPDX-License-Identifier: MIT */
/*
 * test_engine_setup.h — engines of an NX x 1 x 1 torus wired back to back
 * by hand, as dnpd sets them (exact credits, prompt credits, rx_direct;
 * nothing is resent while a test holds frames), for the burst-receive
 * tests: the driver's memory operations on one arena per node, each node's
 * configuration, a round in which every link's frames cross as one burst
 * unless the test keeps them back, the store of the frames it keeps, and
 * the links' handshake. The includer includes cmocka.h, defines ARENA and
 * BASE and includes test_arena.h first.
 */
#ifndef TEST_ENGINE_SETUP_H
#define TEST_ENGINE_SETUP_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine.h"
#include "torus.h"

#define TEST_ENGINE_MAXF 64 /* frames a test keeps at the most */

/* Frames a test kept back, in the order sent, and the link each left on. */
struct test_engine_cap {
	uint8_t data[TEST_ENGINE_MAXF][DNP_MAX_FRAME];
	uint32_t len[TEST_ENGINE_MAXF];
	unsigned dir[TEST_ENGINE_MAXF];
	unsigned n;
};

/* The driver's read from arena ctx (-EFAULT outside it). */
static inline int test_engine_mem_read(void *ctx, unsigned port, const struct dnp_buf *b,
				       uint64_t va, void *dst, size_t len,
				       const struct dnp_mem_seq *seq)
{
	uint8_t *at = test_arena_at(ctx, va, len);

	(void)port;
	(void)b;
	(void)seq;
	if (!at)
		return -EFAULT;
	memcpy(dst, at, len);
	return 0;
}

/* The driver's write into arena ctx (-EFAULT outside it). */
static inline int test_engine_mem_write(void *ctx, unsigned port, const struct dnp_buf *b,
					uint64_t va, const void *src, size_t len)
{
	uint8_t *at = test_arena_at(ctx, va, len);

	(void)port;
	(void)b;
	if (!at)
		return -EFAULT;
	memcpy(at, src, len);
	return 0;
}

/*
 * c: node 'self' of the nx x 1 x 1 torus as dnpd sets it, one port, its
 * memory through ops on 'arena' (ARENA bytes, cleared here), its keys from
 * 'secret'. The includer changes what its test needs, then opens it.
 */
static inline void test_engine_conf(struct dnp_engine_conf *c, unsigned nx, unsigned self,
				    const struct dnp_mem_ops *ops, uint8_t *arena, uint32_t secret)
{
	memset(arena, 0, ARENA);
	dnp_engine_conf_default(c);
	dnp_torus_init(&c->torus, nx, 1, 1);
	c->self = (struct dnp_coord){ (uint8_t)self, 0, 0 };
	c->max_ports = 1;
	c->mem = ops;
	c->mem_ctx = arena;
	c->key_secret[0] = secret;
	c->link.credit_model = DNP_CREDIT_EXACT;
	c->prompt_credits = true;
	c->link.credit_period = 1000000000;
	c->link.credit_timeout = 4000000000ull;
	c->link.rto = 4000000000ull; /* nothing is resent while a test holds frames */
	c->rx_direct = true;
}

/* Creates *e from c at now and opens its ports 0 .. c->max_ports - 1. */
static inline void test_engine_open(const struct dnp_engine_conf *c, uint64_t now,
				    struct dnp_engine **e)
{
	assert_int_equal(dnp_engine_create(c, now, e), 0);
	for (unsigned p = 0; p < c->max_ports; p++)
		assert_int_equal(dnp_engine_port_open(*e, p), 0);
}

/* Keeps frame f, sent on link dir, at the end of cap. */
static inline void test_engine_keep(struct test_engine_cap *cap, unsigned dir,
				    const struct dnp_frame *f)
{
	assert_true(cap->n < TEST_ENGINE_MAXF);
	memcpy(cap->data[cap->n], f->data, f->len);
	cap->len[cap->n] = f->len;
	cap->dir[cap->n++] = dir;
}

/*
 * One round at *now: the nx engines run, then each one's frames on each
 * X link (up to 32) go to the node at its other end as one burst, all but
 * those for which wire(from, to, dir, frame) says false (kept or lost);
 * *now moves on 1 us.
 */
static inline void test_engine_round(struct dnp_engine **eng, unsigned nx, uint64_t *now,
				     bool (*wire)(unsigned, unsigned, unsigned,
						  const struct dnp_frame *))
{
	struct dnp_frame f[32], pass[32];

	for (unsigned i = 0; i < nx; i++)
		dnp_engine_run(eng[i], *now);
	for (unsigned i = 0; i < nx; i++)
		for (unsigned d = DNP_DIR_XP; d <= DNP_DIR_XM; d++) {
			unsigned n = dnp_engine_tx_burst(eng[i], d, f, 32, *now), m = 0;
			unsigned peer = d == DNP_DIR_XP ? (i + 1) % nx : (i + nx - 1) % nx;

			for (unsigned k = 0; k < n; k++)
				if (wire(i, peer, d, &f[k]))
					pass[m++] = f[k];
			(void)dnp_engine_rx_burst(eng[peer], dnp_torus_opposite(d), pass, m, NULL,
						  *now);
		}
	*now += 1000;
}

/* The links' handshake: 50 rounds; then node 0's X+ link must be up. */
static inline void test_engine_links_up(struct dnp_engine **eng, unsigned nx, uint64_t *now,
					bool (*wire)(unsigned, unsigned, unsigned,
						     const struct dnp_frame *))
{
	for (unsigned r = 0; r < 50; r++)
		test_engine_round(eng, nx, now, wire);
	assert_true(dnp_engine_has_link(eng[0], DNP_DIR_XP));
}

#endif
