/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness that plays a hostile application against dnpd's
 * session layer (dnp-core/dnpd/sess.c) and a real engine, in one process.
 *
 * Each input builds a fresh session server, opens one session through
 * dnpd_sess_setup (the very memory layout HELLO hands out) and runs a small
 * program read from the input: the "application" writes random ring
 * headers, random command slots, random heap bytes and control-block
 * fields straight into the shared memory, interleaved with legal traffic
 * (well-formed commands pushed and events popped through its own ring
 * handles, buffers registered in its heap); the "daemon" steps as dnpd's
 * poll loop does (commands -> engine, engine -> events, through the
 * session functions). The torus is 1x1x1, so every command is delivered
 * back to the node and touches the heap.
 *
 * What must hold, whatever the bytes: no crash and no access outside the
 * mappings (ASan/UBSan), the daemon's private ring geometry never changes,
 * and no step moves more than a ring's worth of slots. Memory outside the
 * heap is never touched: the session has no pidfd, so process_vm_* is
 * refused (-ESRCH) before it is tried.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dnpd.h"
#include "engine.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* sess.c logs through these (conf.c in the daemon); quiet here. */
int dnpd_log_level = -1;
void dnpd_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

#define APP_HEAP_VA 0x7f0000000000ull /* where the "application" says its heap is */
#define HEAP_SIZE 65536u

struct harness {
	struct dnp_engine *e;
	struct dnpd_sess_srv *s;
	struct dnpd_session *se;
	struct dnp_ring app_cmd, app_ev; /* the application's own handles */
	uint32_t cmd_off, ev_off; /* the application's copies: it scribbles the control block */
	uint32_t cntr_off;
	uint32_t keys[4];
	unsigned nkeys;
	struct dnp_engine_cntr seen[DNP_CNTR_MAX]; /* the counts last published: they only grow */
};

static struct harness H;

/* ------------------------------------------------- engine <-> session glue */

static void *mem_addr(const struct dnp_buf *buf, uint64_t va, size_t len)
{
	if (buf && buf->priv)
		return (uint8_t *)buf->priv + (va - buf->va);
	return dnpd_sess_heap_addr(H.se, va, len);
}

/* Both directions of the memory callbacks: only the session's port, else -EFAULT. */
static int mem_io(unsigned port, const struct dnp_buf *buf, uint64_t va, void *data, size_t len,
		  bool write)
{
	void *p;

	if (!H.se || port != H.se->port)
		return -EFAULT;
	if (len == 0)
		return 0;
	p = mem_addr(buf, va, len);
	if (p) {
		if (write)
			memcpy(p, data, len);
		else
			memcpy(data, p, len);
		return 0;
	}
	return dnpd_sess_vm_io(H.se, va, data, len, write, 0) ? -EFAULT : 0;
}

static int mem_read(void *ctx, unsigned port, const struct dnp_buf *buf, uint64_t va, void *dst,
		    size_t len, const struct dnp_mem_seq *seq)
{
	(void)ctx;
	(void)seq;
	return mem_io(port, buf, va, dst, len, false);
}

static int mem_write(void *ctx, unsigned port, const struct dnp_buf *buf, uint64_t va,
		     const void *src, size_t len)
{
	(void)ctx;
	return mem_io(port, buf, va, (void *)src, len, true);
}

static const struct dnp_mem_ops mem_ops = { .read = mem_read, .write = mem_write };

static int op_open(void *ctx, unsigned port)
{
	(void)ctx;
	return dnp_engine_port_open(H.e, port);
}

static void op_close(void *ctx, unsigned port)
{
	(void)ctx;
	dnp_engine_port_close(H.e, port);
}

static int op_reg(void *ctx, unsigned port, uint64_t va, uint64_t len, unsigned flags,
		  uintptr_t priv, uint32_t *key)
{
	(void)ctx;
	return dnp_engine_register(H.e, port, va, len, flags, priv, key);
}

static int op_unreg(void *ctx, unsigned port, uint64_t va)
{
	(void)ctx;
	return dnp_engine_unregister(H.e, port, va);
}

static const struct dnpd_sess_ops sess_ops = {
	.port_open = op_open,
	.port_close = op_close,
	.reg = op_reg,
	.unreg = op_unreg,
};

/* ------------------------------------------------------------ the daemon */

/*
 * Completion counters as dnpd_push_events publishes them: what lands in the
 * shared page is the engine's own count, whatever the app wrote there, and
 * a count never goes down.
 */
static void daemon_cntrs(struct dnpd_session *se)
{
	const struct dnp_engine_cntr *cv;
	uint64_t cm = dnp_engine_cntr_take(H.e, se->port, &cv);

	dnpd_sess_cntr_publish(se, cm, cv);
	for (unsigned i = 0; i < DNP_CNTR_MAX; i++) {
		if (!(cm & (1ull << i)))
			continue;
		if (atomic_load(&se->cntrs[i].ok) != cv[i].ok ||
		    atomic_load(&se->cntrs[i].err) != cv[i].err)
			abort();
		if (cv[i].ok < H.seen[i].ok || cv[i].err < H.seen[i].err ||
		    cv[i].ok + cv[i].err == H.seen[i].ok + H.seen[i].err)
			abort(); /* a bit set for a counter that did not move */
		H.seen[i] = cv[i];
	}
}

/* One pass of dnpd's loop for our session (dnpd.c: dnpd_poll_cmds, dnpd_push_events). */
static void daemon_step(uint64_t now)
{
	struct dnpd_session *se = H.se;
	struct dnp_cmd c[DNPD_CMD_BURST];
	struct dnp_event ev[64];
	unsigned n, i;
	uint32_t room;

	/*
	 * Commands: a refused one gets its ERROR event at once (dnpd would
	 * wait for room; here a full ring exercises the lost-event count).
	 */
	/* commands that succeeded with no event leave the quota too (dnpd_poll_cmds) */
	n = dnp_engine_quiet_take(H.e, se->port);
	se->inflight -= n < se->inflight ? n : se->inflight;
	n = dnpd_sess_cmd_pop(se, c, DNPD_CMD_BURST);
	if (n > DNPD_CMD_BURST)
		abort();
	for (i = 0; i < n; i++) {
		int r;

		if (c[i].src_port != se->port)
			abort();
		r = dnp_engine_submit(H.e, se->port, &c[i], now);
		if (r && r != -EAGAIN) {
			struct dnp_event rej = { .type = DNP_EV_ERROR,
						 .op = c[i].op,
						 .status = (int8_t)r,
						 .cookie = c[i].cookie };

			dnpd_sess_ev_push(se, &rej, 1);
		}
	}
	dnp_engine_run(H.e, now);
	room = dnpd_sess_ev_room(se);
	if (room > DNP_SESS_EV_SLOTS)
		abort();
	n = dnp_engine_poll_events(H.e, se->port, ev, room < 64 ? room : 64);
	if (dnpd_sess_ev_push(se, ev, n) < n && !se->ev_lost)
		abort(); /* what did not fit must be counted */
	if (se->inflight > DNPD_PORT_COMMANDS_DEFAULT)
		abort();
	daemon_cntrs(se);
	/* The daemon's view of the rings is its own. */
	if (se->cmd->slots != DNP_SESS_CMD_SLOTS || se->cmd->slot_size != sizeof(struct dnp_cmd) ||
	    se->ev->slots != DNP_SESS_EV_SLOTS || se->ev->slot_size != sizeof(struct dnp_event) ||
	    se->cmd->mask != DNP_SESS_CMD_SLOTS - 1 || se->ev->mask != DNP_SESS_EV_SLOTS - 1)
		abort();
}

/* ------------------------------------------------------ the application */

static uint8_t *shm(void)
{
	return (uint8_t *)H.se->ctl;
}

/* A well-formed command to ourselves, into the heap, with a key we know or a guess. */
static void app_legal_cmd(struct fuzz_in *in)
{
	uint64_t off = fuzz_take(in, 2) % HEAP_SIZE, roff = fuzz_take(in, 2) % HEAP_SIZE;
	uint64_t len = fuzz_take(in, 2) % (HEAP_SIZE / 2);
	unsigned k = (unsigned)fuzz_take(in, 1);
	struct dnp_cmd c = {
		.op = (uint8_t)(1 + k % 3),
		.dst_port = (uint8_t)H.se->port,
		.len = len,
		.local_va = APP_HEAP_VA + off,
		.remote_va = APP_HEAP_VA + roff,
		.cookie = fuzz_take(in, 8),
	};

	if (c.op != DNP_OP_SEND)
		c.remote_key = H.nkeys ? H.keys[(k >> 2) % H.nkeys] : (uint32_t)fuzz_take(in, 4);
	if (c.op == DNP_OP_GET)
		c.local_key = H.nkeys ? H.keys[(k >> 4) % H.nkeys] : 0;
	/* a counter (one past the last is refused), event-less or not, maybe inline */
	unsigned x = (unsigned)fuzz_take(in, 1);
	c.cntr = (uint8_t)(x % (DNP_CNTR_MAX + 2));
	c.flags = (uint8_t)(k & 0x40 ? DNP_CMD_F_NO_EVENT : 0);
	if (c.op == DNP_OP_PUT && (k & 0x80)) {
		uint8_t pl[DNP_CMD_INLINE_MAX];

		c.len = len % (DNP_CMD_INLINE_MAX + 1);
		c.flags |= DNP_CMD_F_INLINE;
		for (unsigned i = 0; i < sizeof(pl); i++)
			pl[i] = (uint8_t)fuzz_take(in, 1);
		dnp_cmd_inline_set(&c, pl, (size_t)c.len);
	}
	if (k % 7 == 6) { /* a collective (coll.h): join a group of us, then run its ops */
		struct dnp_coll_member me = { 0, 0, 0, (uint8_t)H.se->port };

		memset(&c, 0, sizeof(c));
		c.op = (uint8_t)(DNP_OP_COLL_JOIN + (k >> 3) % 5);
		c.remote_key = 1 + (k >> 6);
		c.coll_param = c.op == DNP_OP_ALLREDUCE ?
				       DNP_COLL_PARAM(1 + k % 5, 1 + (k >> 2) % 4, 0) :
			       c.op == DNP_OP_BCAST ? DNP_COLL_PARAM(0, 0, k >> 7) :
						      0;
		c.cntr = (uint8_t)(x % (DNP_CNTR_MAX + 2));
		c.local_va = APP_HEAP_VA + off;
		c.remote_va = c.op == DNP_OP_ALLREDUCE ? APP_HEAP_VA + roff : 0;
		c.len = c.op == DNP_OP_BARRIER || c.op == DNP_OP_COLL_LEAVE ? 0 : len % 70000;
		if (c.op == DNP_OP_COLL_JOIN && off + sizeof(me) <= HEAP_SIZE && (k & 0x20)) {
			memcpy(H.se->heap + off, &me, sizeof(me)); /* a group of one: it runs */
			c.len = sizeof(me);
		}
		c.cookie = fuzz_take(in, 8);
	}
	(void)dnp_ring_push(&H.app_cmd, &c);
}

static void app_register(struct fuzz_in *in)
{
	uint64_t off = fuzz_take(in, 2) % HEAP_SIZE, len = 1 + fuzz_take(in, 2) % 8192;
	unsigned flags = 1 + (unsigned)fuzz_take(in, 1) % DNP_BUF_ALL;
	void *priv = dnpd_sess_heap_addr(H.se, APP_HEAP_VA + off, len);
	uint32_t key;

	if (H.nkeys < 4 && H.s->conf.ops->reg(H.s->conf.ctx, H.se->port, APP_HEAP_VA + off, len,
					      flags, (uintptr_t)priv, &key) == 0)
		H.keys[H.nkeys++] = key;
}

static void run_program(struct fuzz_in *in)
{
	uint64_t now = 1000;
	struct dnp_event ev[16];

	while (in->n) {
		unsigned op = (unsigned)fuzz_take(in, 1) % 12;

		switch (op) {
		case 0: { /* a word of a ring header: magic/geometry, head, tail, padding */
			uint32_t off = (uint32_t)fuzz_take(in, 1) % 48 * 4;
			uint32_t ring = (uint32_t)fuzz_take(in, 1) & 1 ? H.ev_off : H.cmd_off;
			uint32_t v = (uint32_t)fuzz_take(in, 4);

			memcpy(shm() + ring + off, &v, 4);
			break;
		}
		case 1: { /* raw bytes into a command slot, then maybe a tail bump */
			uint32_t slot = (uint32_t)fuzz_take(in, 2) % DNP_SESS_CMD_SLOTS;
			uint8_t *dst = shm() + H.cmd_off + 192 + slot * sizeof(struct dnp_cmd);
			uint32_t bump = (uint32_t)fuzz_take(in, 1);

			for (unsigned i = 0; i < sizeof(struct dnp_cmd); i++)
				dst[i] = (uint8_t)fuzz_take(in, 1);
			if (bump & 0x80) {
				_Atomic uint32_t *tail =
					(_Atomic uint32_t *)(void *)(shm() + H.cmd_off + 128);

				atomic_fetch_add(tail, bump & 0x7f);
			}
			break;
		}
		case 2:
		case 3:
			app_legal_cmd(in);
			break;
		case 4: { /* heap bytes */
			uint32_t off = (uint32_t)fuzz_take(in, 2) % HEAP_SIZE;
			uint32_t len = (uint32_t)fuzz_take(in, 1);

			for (uint32_t i = 0; i < len && off + i < HEAP_SIZE; i++)
				H.se->heap[off + i] = (uint8_t)fuzz_take(in, 1);
			break;
		}
		case 5:
			app_register(in);
			break;
		case 6: /* the control block: every field the app can reach */
		{
			uint32_t off = (uint32_t)fuzz_take(in, 1) % 32 * 4;
			uint32_t v = (uint32_t)fuzz_take(in, 4);

			memcpy(shm() + off, &v, 4);
			break;
		}
		case 7: /* the application drains some events */
			(void)dnp_ring_pop_burst(&H.app_ev, ev,
						 1 + (unsigned)fuzz_take(in, 1) % 16);
			break;
		case 8: { /* the app writes its counters page: the daemon must not care */
			uint32_t off = (uint32_t)fuzz_take(in, 2) %
				       (DNP_CNTR_MAX * sizeof(struct dnp_sess_cntr) / 8) * 8;
			uint64_t v = fuzz_take(in, 8);

			memcpy(shm() + H.cntr_off + off, &v, 8);
			break;
		}
		default: /* the daemon runs */
			now += 1 + fuzz_take(in, 2) * 1000;
			daemon_step(now);
			break;
		}
	}
	for (int i = 0; i < 8; i++)
		daemon_step(now += 1000000);
}

static char dir[64], sock[96], bell[96];

static void cleanup(void)
{
	unlink(sock);
	unlink(bell);
	rmdir(dir);
}

static int setup(void)
{
	struct dnpd_sess_conf sc = { 0 };
	struct dnp_engine_conf ec;
	int fd_map = -1, fd_heap = -1, port, fd;

	if (!dir[0]) {
		strcpy(dir, "/tmp/dnp-fuzz-app-XXXXXX");
		if (!mkdtemp(dir))
			return -1;
		snprintf(sock, sizeof(sock), "%s/node.sock", dir);
		snprintf(bell, sizeof(bell), "%s/node.bell", dir);
		fd = open(bell, O_RDWR | O_CREAT, 0600);
		if (fd < 0 || ftruncate(fd, 4096))
			return -1;
		close(fd);
		atexit(cleanup);
	}
	memset(&H, 0, sizeof(H));
	dnp_engine_conf_default(&ec);
	dnp_torus_init(&ec.torus, 1, 1, 1);
	ec.self = (struct dnp_coord){ 0, 0, 0 };
	ec.max_ports = 4;
	ec.max_commands = 64;
	ec.event_queue = 64;
	ec.max_buffers = 16;
	ec.max_sends = 4;
	ec.mem = &mem_ops;
	ec.mem_ctx = NULL;
	if (dnp_engine_create(&ec, 0, &H.e))
		return -1;
	sc.sock_path = sock;
	sc.bell_path = bell;
	sc.torus = ec.torus;
	sc.self = ec.self;
	sc.max_ports = 4;
	sc.heap_default = HEAP_SIZE;
	sc.heap_max = HEAP_SIZE;
	sc.ops = &sess_ops;
	if (dnpd_sess_create(&sc, &H.s))
		return -1;
	H.se = calloc(1, sizeof(*H.se));
	if (!H.se)
		return -1;
	H.se->fd = -1;
	H.se->pidfd = -1; /* no process behind it: process_vm_* is never tried */
	port = dnpd_sess_setup(H.s, H.se, DNP_SESS_PORT_ANY, HEAP_SIZE, &fd_map, &fd_heap);
	if (port < 0)
		return -1;
	close(fd_map);
	close(fd_heap);
	H.se->app_heap = APP_HEAP_VA;
	H.se->ready = true;
	H.s->conn[H.s->nconn++] = H.se; /* dnpd_sess_destroy frees it */
	/* The application attaches as libdnp does. */
	H.cmd_off = H.se->ctl->cmd_off;
	H.cntr_off = H.se->ctl->cntr_off;
	H.ev_off = H.se->ctl->ev_off;
	if (dnp_ring_attach(shm() + H.cmd_off, H.se->map_size - H.cmd_off, sizeof(struct dnp_cmd),
			    &H.app_cmd) ||
	    dnp_ring_attach(shm() + H.ev_off, H.se->map_size - H.ev_off, sizeof(struct dnp_event),
			    &H.app_ev))
		return -1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };

	if (setup())
		abort();
	run_program(&in);
	dnpd_sess_destroy(H.s);
	dnp_engine_destroy(H.e);
	memset(&H, 0, sizeof(H));
	return 0;
}
