/* SPDX-License-Identifier: MIT */
/*
 * test_engine_onepass_runfail.c — one pass (engine.h conf.tx_direct) when a
 * PUT fails in the middle of a send-side run: its first packet keeps its
 * payload in the source (a descriptor), the read of its second fails
 * (-EFAULT). The failure gives the source back to the application, so the
 * first packet must get its bytes then, not when it is written out later:
 * no read of the source after the error event, and the target gets the
 * bytes the source had, or none. Found by fuzz_engine's one-pass inputs.
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

#define ARENA (64u * 1024u)
#define BASE 0x200000ull

static struct dnp_engine *eng[2];
static uint8_t mem[2][ARENA];
static uint64_t now;
static unsigned src_reads; /* node 0's reads after the error event */
static bool ended;

static int mem_read(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va, void *dst,
		    size_t len, const struct dnp_mem_seq *seq)
{
	unsigned n = (unsigned)(uintptr_t)ctx;

	(void)b;
	(void)seq;
	if (port != 0 || va < BASE || va - BASE > ARENA || len > ARENA - (va - BASE))
		return -EFAULT;
	if (n == 0 && ended)
		src_reads++;
	memcpy(dst, mem[n] + (va - BASE), len);
	return 0;
}

static int mem_write(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va,
		     const void *src, size_t len)
{
	unsigned n = (unsigned)(uintptr_t)ctx;

	(void)b;
	if (port != 0 || va < BASE || va - BASE > ARENA || len > ARENA - (va - BASE))
		return -EFAULT;
	memcpy(mem[n] + (va - BASE), src, len);
	return 0;
}

/* Like dnpd's heap: inside the arena only (the PUT's second packet is outside). */
static bool mem_stable(void *ctx, unsigned port, uint64_t va, size_t len)
{
	(void)ctx;
	return port == 0 && va >= BASE && va - BASE <= ARENA && len <= ARENA - (va - BASE);
}

static const struct dnp_mem_ops ops = { .read = mem_read,
					.write = mem_write,
					.stable = mem_stable };

static int setup(void **state)
{
	(void)state;
	now = 0;
	src_reads = 0;
	ended = false;
	for (unsigned i = 0; i < 2; i++) {
		struct dnp_engine_conf c;

		dnp_engine_conf_default(&c);
		dnp_torus_init(&c.torus, 2, 1, 1);
		c.self = (struct dnp_coord){ (uint8_t)i, 0, 0 };
		c.max_ports = 1;
		c.mem = &ops;
		c.mem_ctx = (void *)(uintptr_t)i;
		c.key_secret[0] = 91 + i;
		c.tx_direct = i == 0;
		assert_int_equal(dnp_engine_create(&c, now, &eng[i]), 0);
		assert_int_equal(dnp_engine_port_open(eng[i], 0), 0);
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (unsigned i = 0; i < 2; i++)
		dnp_engine_destroy(eng[i]);
	return 0;
}

/* Node 0 writes its frames into buffers (as dnpd into shm slots); node 1 copies. */
static void pump(unsigned steps)
{
	static uint8_t slot[16][DNP_MAX_FRAME];
	uint32_t lens[16];
	struct dnp_frame f[16];

	for (unsigned s = 0; s < steps; s++, now++) {
		dnp_engine_run(eng[0], now);
		dnp_engine_run(eng[1], now);
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			uint8_t *bufs[16];

			for (unsigned k = 0; k < 16; k++)
				bufs[k] = slot[k];
			unsigned n = dnp_engine_tx_burst_into(eng[0], d, bufs, DNP_MAX_FRAME, 16,
							      lens, now);
			for (unsigned k = 0; k < n; k++)
				(void)dnp_engine_rx(eng[1], dnp_torus_opposite(d), slot[k], lens[k],
						    now);
			n = dnp_engine_tx_burst(eng[1], d, f, 16, now);
			for (unsigned k = 0; k < n; k++) {
				uint8_t copy[DNP_MAX_FRAME];

				memcpy(copy, f[k].data, f[k].len);
				(void)dnp_engine_rx(eng[0], dnp_torus_opposite(d), copy, f[k].len,
						    now);
			}
		}
	}
}

static void test_onepass_run_fail_fills_first(void **state)
{
	(void)state;
	const uint64_t off = ARENA - DNP_MAX_PAYLOAD; /* packet 1 inside, packet 2 beyond */
	uint32_t key = 0;
	struct dnp_event ev;

	assert_int_equal(dnp_engine_register(eng[1], 0, BASE, ARENA, DNP_BUF_PUT_TARGET, 0, &key),
			 0);
	pump(50); /* links up, and direct */
	for (size_t i = 0; i < DNP_MAX_PAYLOAD; i++)
		mem[0][off + i] = (uint8_t)(i * 13 + 1);
	memset(mem[1], 0x11, ARENA);
	struct dnp_cmd c = { .op = DNP_OP_PUT,
			     .dst_x = 1,
			     .remote_key = key,
			     .remote_va = BASE,
			     .len = 2 * DNP_MAX_PAYLOAD,
			     .local_va = BASE + off,
			     .cookie = 7 };
	assert_int_equal(dnp_engine_submit(eng[0], 0, &c, now), 0);
	dnp_engine_run(eng[0], now); /* the run: packet 1 a descriptor, packet 2's read fails */
	assert_int_equal(dnp_engine_poll_events(eng[0], 0, &ev, 1), 1);
	assert_int_equal(ev.type, DNP_EV_ERROR);
	assert_int_equal(ev.status, -EFAULT);
	/* the source is the application's again: it writes there, and must not be read */
	ended = true;
	memset(mem[0] + off, 0xee, DNP_MAX_PAYLOAD);
	assert_int_equal(dnp_engine_stats(eng[0])->tx_onepass_held, 0);
	pump(2000);
	assert_int_equal(src_reads, 0);
	assert_int_equal(dnp_engine_stats(eng[0])->tx_onepass, 0);
	for (size_t i = 0; i < DNP_MAX_PAYLOAD; i++) /* the old bytes, or none */
		if (mem[1][i] != 0x11 && mem[1][i] != (uint8_t)(i * 13 + 1))
			fail_msg("byte %zu of the target is 0x%02x", i, mem[1][i]);
	assert_int_equal(dnp_engine_poll_events(eng[0], 0, &ev, 1), 0); /* one end only */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_onepass_run_fail_fills_first, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
