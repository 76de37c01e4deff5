/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the engine's receive path: a hostile neighbour sends
 * any frames on any link of a node (raw bytes, or well-formed frames built
 * from fuzzer-chosen header fields, so that they pass the CRC and reach the
 * delivery handlers), while the node's applications register, unregister
 * and close ports. The engine must never crash, and must read or write
 * application memory only inside buffers registered on that port (a write
 * only inside one registered as PUT or SEND target, a read only inside a
 * GET source): the memory callbacks abort otherwise.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NPORTS 4
#define NBUF 8
#define ARENA (1u << 20)

struct reg {
	bool used;
	unsigned port, flags;
	uint64_t va, len;
};

static struct reg regs[NBUF];
static uint8_t arena[NPORTS][ARENA];

/* Is [va, va+len) inside a registered buffer of port with one of flags? */
static bool inside(unsigned port, uint64_t va, size_t len, unsigned flags)
{
	for (unsigned i = 0; i < NBUF; i++) {
		const struct reg *r = &regs[i];
		if (r->used && r->port == port && (r->flags & flags) && va >= r->va &&
		    len <= r->len && va - r->va <= r->len - len)
			return true;
	}
	return false;
}

static int mem_read(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va, void *dst,
		    size_t len, const struct dnp_mem_seq *seq)
{
	(void)seq;
	(void)ctx;
	(void)b;
	if (port >= NPORTS || !inside(port, va, len, DNP_BUF_GET_SOURCE))
		abort();
	memcpy(dst, &arena[port][va], len);
	return 0;
}

static int mem_write(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va,
		     const void *src, size_t len)
{
	(void)ctx;
	(void)b;
	if (port >= NPORTS || !inside(port, va, len, DNP_BUF_PUT_TARGET | DNP_BUF_SEND_TARGET))
		abort();
	memcpy(&arena[port][va], src, len);
	return 0;
}

static const struct dnp_mem_ops ops = { .read = mem_read, .write = mem_write };

static void app_op(struct dnp_engine *e, struct fuzz_in *in)
{
	unsigned what = (unsigned)fuzz_take(in, 1) % 4, i = (unsigned)fuzz_take(in, 1) % NBUF;
	struct reg *r = &regs[i];

	if (what == 0 && !r->used) {
		r->port = (unsigned)fuzz_take(in, 1) % NPORTS;
		r->flags = (unsigned)fuzz_take(in, 1) % DNP_BUF_ALL + 1;
		r->va = fuzz_take(in, 3) % ARENA;
		r->len = fuzz_take(in, 3) % (ARENA - r->va) + 1;
		if (dnp_engine_register(e, r->port, r->va, r->len, r->flags, 0, NULL) == 0)
			r->used = true;
	} else if (what == 1 && r->used) {
		if (dnp_engine_unregister(e, r->port, r->va) == 0)
			r->used = false;
	} else if (what == 2) {
		unsigned port = (unsigned)fuzz_take(in, 1) % NPORTS;
		if (dnp_engine_port_close(e, port) == 0) {
			for (unsigned k = 0; k < NBUF; k++)
				if (regs[k].port == port)
					regs[k].used = false;
			(void)dnp_engine_port_open(e, port);
		}
	} else {
		struct dnp_event ev[8];
		(void)dnp_engine_poll_events(e, (unsigned)fuzz_take(in, 1) % NPORTS, ev, 8);
	}
}

/* One frame into frame[]: raw bytes, or a well-formed packet of fuzzed fields. Its length. */
static size_t frame_make(struct fuzz_in *in, uint8_t *frame)
{
	static uint8_t payload[DNP_MAX_PAYLOAD];
	struct dnp_pkt_hdr h;
	size_t len;

	if (fuzz_take(in, 1) & 1) { /* raw bytes */
		len = (size_t)fuzz_take(in, 2) % (DNP_MAX_FRAME + 32);
		for (size_t i = 0; i < len; i++)
			frame[i % DNP_MAX_FRAME] = (uint8_t)fuzz_take(in, 1);
		return len > DNP_MAX_FRAME ? DNP_MAX_FRAME : len;
	}
	memset(&h, 0, sizeof(h));
	h.lflags = (uint8_t)(fuzz_take(in, 1) & 1);
	h.src_dir = (uint8_t)(fuzz_take(in, 1) % 7);
	h.seq = (uint32_t)fuzz_take(in, 1);
	h.ack = (uint32_t)fuzz_take(in, 1);
	h.dst = (struct dnp_coord){ (uint8_t)(fuzz_take(in, 1) % 3), 0, 0 };
	h.src = (struct dnp_coord){ (uint8_t)(fuzz_take(in, 1) % 3), 0, 0 };
	h.dst_port = (uint8_t)fuzz_take(in, 1);
	h.src_port = (uint8_t)fuzz_take(in, 1);
	h.kind = (uint8_t)(fuzz_take(in, 1) % 11); /* DNP_PKT_COLL included */
	h.vc = (uint8_t)(fuzz_take(in, 1) % DNP_MAX_VC);
	h.flags = (uint8_t)(fuzz_take(in, 1) % 4);
	h.status = (uint8_t)fuzz_take(in, 1);
	h.len = (uint16_t)(fuzz_take(in, 2) % (DNP_MAX_PAYLOAD + 1));
	h.msg_id = (uint32_t)fuzz_take(in, 2);
	h.va = fuzz_take(in, 3);
	h.key = (uint32_t)fuzz_take(in, 4);
	h.offset = (uint32_t)fuzz_take(in, 3);
	h.hops = (uint8_t)fuzz_take(in, 1);
	h.msg_len = (uint32_t)fuzz_take(in, 3);
	h.via = (uint16_t)(fuzz_take(in, 2) & ~DNP_PKT_VIA_RSVD); /* route through a via */
	for (unsigned i = 0; i < h.len; i++)
		payload[i] = (uint8_t)fuzz_take(in, 1);
	int n = dnp_pkt_encode(&h, payload, frame, DNP_MAX_FRAME);
	return n > 0 ? (size_t)n : 0;
}

/*
 * Frames from a link: one through dnp_engine_rx, or (burst) 1..4 through
 * dnp_engine_rx_burst, dnpd's receive path (docs/performance.md, "Batched
 * receive"), whose results must match the per-frame ones.
 */
static void frame_op(struct dnp_engine *e, struct fuzz_in *in, uint64_t now, bool burst)
{
	static uint8_t frames[4][DNP_MAX_FRAME];
	unsigned dir = (unsigned)fuzz_take(in, 1) % DNP_NDIRS;
	struct dnp_frame f[4];
	int rc[4];
	unsigned k = burst ? 1 + (unsigned)fuzz_take(in, 1) % 4 : 1, m = 0;

	for (unsigned i = 0; i < k; i++) {
		size_t len = frame_make(in, frames[m]);

		if (len) {
			f[m].data = frames[m];
			f[m].len = (uint32_t)len;
			m++;
		}
	}
	if (!burst) {
		if (m)
			(void)dnp_engine_rx(e, dir, f[0].data, f[0].len, now);
		return;
	}
	unsigned dropped = dnp_engine_rx_burst(e, dir, f, m, rc, now), bad = 0;

	for (unsigned i = 0; i < m; i++)
		bad += rc[i] < 0;
	if (bad != dropped) /* the count returned is the frames refused */
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dnp_engine_conf c;
	struct dnp_engine *e;
	struct fuzz_in in = { data, size };
	struct dnp_frame out[16];
	uint64_t now = 0;

	dnp_engine_conf_default(&c);
	dnp_torus_init(&c.torus, 3, 1, 1);
	c.self = (struct dnp_coord){ 1, 0, 0 };
	c.max_ports = NPORTS;
	c.max_buffers = NBUF;
	c.max_commands = 16;
	c.event_queue = 8;
	c.max_sends = 2;
	c.cmd_timeout = 500;
	c.reasm_timeout = 300;
	c.deliver_timeout = 200;
	c.link.fifo_words = 1024;
	c.link.t_red = 1000;
	c.link.t_yellow = 500;
	c.mem = &ops;
	/* both receive paths: the copying one, and direct receive (dnpd's) */
	c.rx_direct = size > 0 && (data[size - 1] & 0x80);
	/* and frames one by one, or in bursts (dnpd's way) */
	bool burst = size > 0 && (data[size - 1] & 0x40);
	memset(regs, 0, sizeof(regs));
	if (dnp_engine_create(&c, 0, &e))
		abort();
	for (unsigned p = 0; p < NPORTS; p++)
		(void)dnp_engine_port_open(e, p);
	while (in.n) {
		now += fuzz_take(&in, 1) % 64;
		if (fuzz_take(&in, 1) % 4 == 0)
			app_op(e, &in);
		else
			frame_op(e, &in, now, burst);
		dnp_engine_run(e, now);
		for (unsigned d = 0; d < DNP_NDIRS; d++)
			(void)dnp_engine_tx_burst(e, d, out, 16, now);
	}
	/* let every timer fire */
	for (unsigned i = 0; i < 8; i++) {
		now += 1000;
		dnp_engine_run(e, now);
		for (unsigned d = 0; d < DNP_NDIRS; d++)
			(void)dnp_engine_tx_burst(e, d, out, 16, now);
	}
	dnp_engine_destroy(e);
	return 0;
}
