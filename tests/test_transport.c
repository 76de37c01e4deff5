/* SPDX-License-Identifier: MIT */
/*
 * test_transport — shm and udp virtual links between two processes, and the
 * doorbell. Frames are generated from (direction, index) so the receiver can
 * check length, content and order without shared state.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "doorbell.h"
#include "impair.h"
#include "test_proc.h"
#include "transport.h"

#define FRAME_MAX 4160u
#define DEPTH 256u
#define NFRAMES 10000u
#define UDP_WINDOW 64u
#define EXCHANGE_TIMEOUT_NS (30ull * 1000000000ull)

static char dir_path[128];
static unsigned port_base;
static unsigned skipped; /* cases that skipped: all of them makes the exit status 77 */

#define TEST_SKIP(msg)                    \
	do {                              \
		print_message("%s", msg); \
		skipped++;                \
		skip();                   \
	} while (0)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* Frame i sent by side dir: 64..4160 bytes of reproducible content. */
static uint32_t gen_frame(unsigned dir, uint32_t i, uint8_t *buf)
{
	uint64_t s = mix(((uint64_t)dir << 32) | i);
	uint32_t len = 64u + (uint32_t)(s % (FRAME_MAX - 64u + 1u));

	for (uint32_t j = 0; j < len; j += 8) {
		s = mix(s + j);
		memcpy(buf + j, &s, len - j < 8 ? len - j : 8);
	}
	return len;
}

static void conf_shm(struct dnp_transport_conf *c, unsigned side, const char *path)
{
	memset(c, 0, sizeof(*c));
	c->local = path;
	c->remote = path;
	c->side = side;
	c->frame_max = FRAME_MAX;
	c->depth = DEPTH;
	c->options = "wait_ms=5000";
}

static void conf_udp(struct dnp_transport_conf *c, unsigned side, unsigned port, const char *mode,
		     char *a, char *b)
{
	memset(c, 0, sizeof(*c));
	sprintf(a, "127.0.0.1:%u", port + side);
	sprintf(b, "127.0.0.1:%u", port + 1 - side);
	c->local = a;
	c->remote = b;
	c->side = side;
	c->frame_max = FRAME_MAX;
	c->depth = DEPTH;
	c->options = mode;
}

/*
 * Sends n frames of direction side and receives n of direction 1 - side,
 * checking each. window > 0 bounds frames sent ahead of frames received (UDP
 * has no back-pressure). Returns 0, or a line-specific code on failure.
 */
static int exchange(const struct dnp_transport_ops *ops, struct dnp_transport *t, unsigned side,
		    uint32_t n, uint32_t window)
{
	static uint8_t txbuf[16][FRAME_MAX], want[FRAME_MAX];
	uint32_t sent = 0, got = 0;
	uint64_t deadline = now_ns() + EXCHANGE_TIMEOUT_NS;

	while (sent < n || got < n) {
		struct dnp_tx_frame tx[16];
		struct dnp_rx_frame rx[32];
		unsigned k = 0;
		int r;

		while (k < 16 && sent + k < n && (!window || sent + k < got + window)) {
			tx[k].data = txbuf[k];
			tx[k].len = gen_frame(side, sent + k, txbuf[k]);
			k++;
		}
		if (k) {
			r = ops->tx_burst(t, tx, k);
			if (r < 0)
				return 10;
			sent += (uint32_t)r;
		}
		r = ops->rx_burst(t, rx, 32);
		if (r < 0)
			return 11;
		for (int i = 0; i < r; i++, got++) {
			uint32_t len;

			if (got >= n)
				return 12;
			len = gen_frame(1 - side, got, want);
			if (rx[i].len != len || memcmp(rx[i].data, want, len) != 0)
				return 13;
		}
		if (now_ns() > deadline)
			return 14;
	}
	return 0;
}

static int wait_child(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) :
				   100 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* Reads one byte from fd within timeout_ms; returns it, or -1. */
static int read_byte(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	unsigned char b;

	if (poll(&pfd, 1, timeout_ms) != 1 || read(fd, &b, 1) != 1)
		return -1;
	return b;
}

static bool write_byte(int fd, char b)
{
	return write(fd, &b, 1) == 1;
}

enum pair_order {
	OPEN_ANY,
	OPEN_PARENT_FIRST,
	OPEN_CHILD_FIRST
};

/*
 * One side in a child, the other in the parent, synchronised by two pipes
 * (no sleeps): 'order' decides which end opens first (the other waits for
 * its byte), both ends are open before either sends, so UDP loses nothing to
 * a port not yet bound, and the child closes only after the parent has
 * received everything (a close may cancel sends still queued in io_uring).
 */
static void run_pair(const struct dnp_transport_ops *ops, struct dnp_transport_conf *c0,
		     struct dnp_transport_conf *c1, uint32_t n, uint32_t window,
		     enum pair_order order)
{
	struct dnp_transport *t;
	int up[2], go[2], ret;
	pid_t pid;

	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(up[0]);
		close(go[1]);
		if (order == OPEN_PARENT_FIRST && read_byte(go[0], 10000) != 'o')
			_exit(3);
		if (ops->open(c1, &t) != 0)
			_exit(1);
		if (!write_byte(up[1], 'u') || read_byte(go[0], 10000) != 'g')
			_exit(2);
		ret = exchange(ops, t, 1, n, window);
		/* the parent may still be receiving our last frames: wait for its word */
		if (ret == 0 && (!write_byte(up[1], 'd') || read_byte(go[0], 60000) != 'c'))
			ret = 4;
		ops->close(t);
		_exit(ret);
	}
	close(up[1]);
	close(go[0]);
	ret = 0;
	if (order == OPEN_CHILD_FIRST && read_byte(up[0], 10000) != 'u')
		ret = -EPIPE;
	if (ret == 0)
		ret = ops->open(c0, &t);
	if (ret == 0 && order == OPEN_PARENT_FIRST && !write_byte(go[1], 'o'))
		ret = -EPIPE;
	if (ret == 0 && order != OPEN_CHILD_FIRST && read_byte(up[0], 10000) != 'u')
		ret = -EPIPE;
	if (ret == 0 && !write_byte(go[1], 'g'))
		ret = -EPIPE;
	if (ret) {
		kill(pid, SIGKILL);
		wait_child(pid);
		close(up[0]);
		close(go[1]);
	}
	assert_int_equal(ret, 0);
	ret = exchange(ops, t, 0, n, window);
	/* the child's 'd' (it received all) then our 'c' (so did we): it may close */
	if (read_byte(up[0], 60000) != 'd' || !write_byte(go[1], 'c'))
		ret = ret ? ret : 20;
	close(up[0]);
	close(go[1]);
	assert_int_equal(wait_child(pid), 0);
	assert_int_equal(ret, 0);
	ops->close(t);
}

static void shm_path(char *path, size_t len, const char *name)
{
	snprintf(path, len, "%s/%s", dir_path, name);
}

/* Opens both ends of the shm link NAME, whose path goes into path[256]; both opens must pass. */
static void open_shm_pair(const char *name, char *path, struct dnp_transport **t0,
			  struct dnp_transport **t1)
{
	struct dnp_transport_conf c0, c1;

	shm_path(path, 256, name);
	conf_shm(&c0, 0, path);
	conf_shm(&c1, 1, path);
	assert_int_equal(dnp_transport_shm.open(&c0, t0), 0);
	assert_int_equal(dnp_transport_shm.open(&c1, t1), 0);
}

static void test_transport_find(void **state)
{
	assert_ptr_equal(dnp_transport_find("shm"), &dnp_transport_shm);
	assert_ptr_equal(dnp_transport_find("udp"), &dnp_transport_udp);
	assert_null(dnp_transport_find("carrier-pigeon"));
	assert_null(dnp_transport_find(NULL));
}

static void test_transport_shm_exchange(void **state)
{
	struct dnp_transport_conf c0, c1;
	char path[256];
	struct stat st;

	shm_path(path, sizeof(path), "x.link");
	conf_shm(&c0, 0, path);
	conf_shm(&c1, 1, path);
	run_pair(&dnp_transport_shm, &c0, &c1, NFRAMES, 0, OPEN_ANY);
	/* the last end to close removes the link file */
	assert_int_equal(stat(path, &st), -1);
}

static void test_transport_shm_open_order(void **state)
{
	struct dnp_transport_conf c0, c1;
	char path[256];

	shm_path(path, sizeof(path), "order.link");
	conf_shm(&c0, 0, path);
	conf_shm(&c1, 1, path);
	/* side 1 (child) comes first and creates; then side 0 first */
	run_pair(&dnp_transport_shm, &c0, &c1, 200, 0, OPEN_CHILD_FIRST);
	run_pair(&dnp_transport_shm, &c0, &c1, 200, 0, OPEN_PARENT_FIRST);
}

static void test_transport_shm_full_ring(void **state)
{
	const struct dnp_transport_ops *ops = &dnp_transport_shm;
	struct dnp_transport *t0, *t1;
	struct dnp_rx_frame rx[DEPTH];
	struct dnp_tx_frame tx;
	static uint8_t big[FRAME_MAX + 1];
	uint8_t buf[64];
	char path[256];
	unsigned sent = 0;

	open_shm_pair("full.link", path, &t0, &t1);
	assert_int_equal(ops->mtu(t0), FRAME_MAX);
	assert_int_equal(ops->wait_fd(t0), -1);
	assert_true(ops->up(t0));
	tx.data = buf;
	tx.len = sizeof(buf);
	for (unsigned i = 0; i < DEPTH + 10; i++) {
		buf[0] = (uint8_t)i;
		int r = ops->tx_burst(t0, &tx, 1);

		assert_true(r == 0 || r == 1);
		sent += (unsigned)r;
	}
	assert_int_equal(sent, DEPTH);
	assert_int_equal(ops->tx_burst(t0, &tx, 1), 0);
	/* a frame above frame_max is refused, not truncated */
	tx.data = big;
	tx.len = FRAME_MAX + 1;
	assert_int_equal(ops->tx_burst(t1, &tx, 1), -EMSGSIZE);
	/* receiving frees slots only at the next rx_burst (zero-copy) */
	assert_int_equal(ops->rx_burst(t1, rx, DEPTH), DEPTH);
	for (unsigned i = 0; i < DEPTH; i++) {
		assert_int_equal(rx[i].len, 64);
		assert_int_equal(rx[i].data[0], (uint8_t)i);
	}
	tx.data = buf;
	tx.len = sizeof(buf);
	assert_int_equal(ops->tx_burst(t0, &tx, 1), 0);
	assert_int_equal(ops->rx_burst(t1, rx, DEPTH), 0);
	assert_int_equal(ops->tx_burst(t0, &tx, 1), 1);
	ops->close(t1);
	assert_false(ops->up(t0));
	ops->close(t0);
}

static void test_transport_shm_rings_peer_doorbell(void **state)
{
	const struct dnp_transport_ops *ops = &dnp_transport_shm;
	struct dnp_transport_conf c0, c1;
	struct dnp_transport *t0, *t1;
	struct dnp_doorbell *in_file, *node_bell;
	struct dnp_tx_frame tx;
	uint8_t buf[64] = { 0 };
	char path[256], bell[256];
	uint32_t s;

	/* without peer_bell: the receiver's doorbell inside the link file */
	open_shm_pair("bell.link", path, &t0, &t1);
	in_file = dnp_transport_shm_doorbell(t1);
	assert_non_null(in_file);
	tx.data = buf;
	tx.len = sizeof(buf);
	/* an awake receiver's bell is not written */
	s = dnp_doorbell_seq(in_file);
	assert_int_equal(ops->tx_burst(t0, &tx, 1), 1);
	assert_int_equal(dnp_doorbell_seq(in_file), s);
	/* an armed one's is */
	s = dnp_doorbell_arm(in_file);
	assert_int_equal(ops->tx_burst(t0, &tx, 1), 1);
	assert_int_not_equal(dnp_doorbell_seq(in_file), s);
	dnp_doorbell_disarm(in_file);
	ops->close(t1);
	ops->close(t0);

	/* with peer_bell: the peer daemon's own doorbell file */
	shm_path(bell, sizeof(bell), "node-1.bell");
	assert_int_equal(dnp_doorbell_map(bell, &node_bell), 0);
	conf_shm(&c0, 0, path);
	conf_shm(&c1, 1, path);
	c0.peer_bell = bell;
	assert_int_equal(ops->open(&c0, &t0), 0);
	assert_int_equal(ops->open(&c1, &t1), 0);
	s = dnp_doorbell_arm(node_bell);
	assert_int_equal(ops->tx_burst(t0, &tx, 1), 1);
	assert_int_not_equal(dnp_doorbell_seq(node_bell), s);
	dnp_doorbell_disarm(node_bell);
	ops->close(t1);
	ops->close(t0);
	dnp_doorbell_unmap(node_bell);
}

/* A slot length beyond frame_max (a corrupt or hostile peer) breaks the link. */
static void test_transport_shm_rejects_bad_slot(void **state)
{
	const struct dnp_transport_ops *ops = &dnp_transport_shm;
	struct dnp_transport *t0, *t1;
	struct dnp_rx_frame rx[4];
	uint8_t buf[64] = { 0 };
	struct dnp_tx_frame tx = { .data = buf, .len = sizeof(buf) };
	char path[256];
	uint32_t *len0;
	void *map;
	int fd;

	open_shm_pair("bad.link", path, &t0, &t1);
	assert_int_equal(ops->tx_burst(t0, &tx, 1), 1);
	/* file layout (shm.c): 4096-byte header, then ring 0; a slot starts with its u32 length */
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	map = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(map != MAP_FAILED);
	len0 = (uint32_t *)(void *)((uint8_t *)map + 4096);
	assert_int_equal(*len0, sizeof(buf));
	*len0 = FRAME_MAX + 1;
	assert_int_equal(ops->rx_burst(t1, rx, 4), -EPROTO);
	assert_false(ops->up(t1));
	munmap(map, 8192);
	ops->close(t1);
	ops->close(t0);
}

/*
 * The receiver goes by each slot's seq (the frame's index + 1), never by the
 * sender's tail: a tail scribbled far ahead hands out nothing more, and a
 * slot whose seq is not its index's is not read until it is.
 */
static void test_transport_shm_consumer_goes_by_seq(void **state)
{
	const struct dnp_transport_ops *ops = &dnp_transport_shm;
	const uint32_t slot_size = (16u + FRAME_MAX + 63u) & ~63u; /* shm.c's geometry */
	struct dnp_transport *t0, *t1;
	struct dnp_rx_frame rx[4];
	uint8_t buf[64] = { 0 };
	struct dnp_tx_frame tx = { .data = buf, .len = sizeof(buf) };
	char path[256];
	uint32_t *tail0, *seq1, v;
	uint8_t *map;
	int fd;

	open_shm_pair("seq.link", path, &t0, &t1);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	map = mmap(NULL, 4096 + 2 * (size_t)slot_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(map != MAP_FAILED);
	/* header lines 4-5: ring 0's head, then its tail; ring 0's slots at 4096 */
	tail0 = (uint32_t *)(void *)(map + 5 * 64);
	seq1 = (uint32_t *)(void *)(map + 4096 + slot_size + 4);

	assert_int_equal(ops->tx_burst(t0, &tx, 1), 1);
	assert_int_equal(*tail0, 1);
	*tail0 = 100; /* says a hundred frames */
	assert_int_equal(ops->rx_burst(t1, rx, 4), 1);
	assert_int_equal(rx[0].len, sizeof(buf));
	assert_int_equal(ops->rx_burst(t1, rx, 4), 0);

	assert_int_equal(ops->tx_burst(t0, &tx, 1), 1);
	v = *seq1;
	assert_int_equal(v, 2);
	*seq1 = 0; /* as if not written yet */
	assert_int_equal(ops->rx_burst(t1, rx, 4), 0);
	*seq1 = v;
	assert_int_equal(ops->rx_burst(t1, rx, 4), 1);
	assert_true(ops->up(t1));
	munmap(map, 4096 + 2 * (size_t)slot_size);
	ops->close(t1);
	ops->close(t0);
}

static void test_transport_shm_bad_conf(void **state)
{
	struct dnp_transport_conf c0, c1;
	struct dnp_transport *t0, *t1;
	char path[256];

	shm_path(path, sizeof(path), "conf.link");
	conf_shm(&c0, 0, path);
	c0.depth = 100; /* not a power of two */
	assert_int_equal(dnp_transport_shm.open(&c0, &t0), -EINVAL);
	conf_shm(&c0, 0, path);
	conf_shm(&c1, 1, path);
	c1.frame_max = 1024; /* disagrees with the creator */
	assert_int_equal(dnp_transport_shm.open(&c0, &t0), 0);
	assert_int_equal(dnp_transport_shm.open(&c1, &t1), -EPROTO);
	/* the same side twice: a stale file or a misconfiguration */
	conf_shm(&c1, 0, path);
	assert_int_equal(dnp_transport_shm.open(&c1, &t1), -EBUSY);
	dnp_transport_shm.close(t0);
}

/*
 * A side whose process was killed (kill -9: no close) is taken over by the
 * next opener, which then talks to the live peer through the same file.
 */
static void test_transport_shm_reattach_after_kill(void **state)
{
	const struct dnp_transport_ops *ops = &dnp_transport_shm;
	struct dnp_transport_conf c0, c1;
	struct dnp_transport *t0, *t1;
	struct dnp_rx_frame rx[4];
	uint8_t msg[64] = "after the restart";
	struct dnp_tx_frame tx = { msg, sizeof(msg) };
	char path[256];
	int status, n;
	pid_t pid;

	shm_path(path, sizeof(path), "reattach.link");
	conf_shm(&c0, 0, path);
	conf_shm(&c1, 1, path);
	assert_int_equal(ops->open(&c0, &t0), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct dnp_transport *tc;

		if (ops->open(&c1, &tc) != 0)
			_exit(3);
		raise(SIGKILL); /* dies holding side 1 */
		_exit(4);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* side 0 is live: a second opener of side 0 is still refused */
	assert_int_equal(ops->open(&c0, &t1), -EBUSY);
	/* side 1's process is dead: taken over */
	assert_int_equal(ops->open(&c1, &t1), 0);
	assert_true(ops->up(t0));
	assert_int_equal(ops->tx_burst(t0, &tx, 1), 1);
	n = ops->rx_burst(t1, rx, 4);
	assert_int_equal(n, 1);
	assert_memory_equal(rx[0].data, msg, sizeof(msg));
	ops->close(t1);
	ops->close(t0);
	/* the last close unlinked the file */
	assert_int_equal(access(path, F_OK), -1);
}

/* ---- impairment layer ---- */

static void test_impair_parse(void **state)
{
	struct dnp_impair_conf c;
	char buf[256];

	assert_int_equal(dnp_impair_parse("dir=xp,loss=1%,reorder=0.5%,dup=0.1%,corrupt=0.01%,"
					  "delay=50us,seed=7",
					  &c),
			 0);
	assert_int_equal(c.dirs, 1u << 0);
	assert_int_equal(c.loss, 10000);
	assert_int_equal(c.reorder, 5000);
	assert_int_equal(c.dup, 1000);
	assert_int_equal(c.corrupt, 100);
	assert_int_equal(c.delay_ns, 50000);
	assert_int_equal(c.seed, 7);
	assert_true(dnp_impair_active(&c));
	dnp_impair_format(&c, buf, sizeof(buf));
	struct dnp_impair_conf again;
	assert_int_equal(dnp_impair_parse(buf, &again), 0);
	assert_memory_equal(&c, &again, sizeof(c));
	assert_int_equal(dnp_impair_parse("off", &c), 0);
	assert_false(dnp_impair_active(&c));
	assert_int_equal(dnp_impair_parse("", &c), 0);
	assert_int_equal(dnp_impair_parse("loss=100%", &c), 0);
	assert_int_equal(c.loss, 1000000);
	assert_int_equal(c.dirs, 0x3f);
	assert_int_equal(dnp_impair_parse("dir=zm,delay=2ms", &c), 0);
	assert_int_equal(c.dirs, 1u << 5);
	assert_int_equal(c.delay_ns, 2000000);
	static const char *const bad[] = {
		"loss=101%",    "loss=1.00001%", "loss=",
		"loss=%",       "loss=x",        "dir=up",
		"loss",         "loss=1%,",      ",loss=1%",
		"bogus=1",      "delay=5",       "delay=2s",
		"delay=1001ms", "seed=-1",       "seed=18446744073709551616",
		"dup=1%%",      "loss=1%=2",
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(dnp_impair_parse(bad[i], &c), -EINVAL);
	assert_int_equal(dnp_impair_parse(NULL, &c), -EINVAL);
}

/* A backend that records what it is asked to send. */
#define REC_MAX 4096
struct rec {
	struct dnp_transport_base base;
	unsigned n;
	uint32_t len[REC_MAX];
	uint8_t data[REC_MAX][64];
};

static int rec_tx(struct dnp_transport *t, const struct dnp_tx_frame *f, unsigned n)
{
	struct rec *r = (struct rec *)(void *)t;
	unsigned i;

	for (i = 0; i < n && r->n < REC_MAX; i++, r->n++) {
		r->len[r->n] = f[i].len;
		memcpy(r->data[r->n], f[i].data, f[i].len);
	}
	return (int)i;
}
static int rec_rx(struct dnp_transport *t, struct dnp_rx_frame *f, unsigned n)
{
	return 0;
}
static uint32_t rec_mtu(const struct dnp_transport *t)
{
	return 64;
}
static int rec_fd(const struct dnp_transport *t)
{
	return -1;
}
static bool rec_up(const struct dnp_transport *t)
{
	return true;
}
static void rec_close(struct dnp_transport *t)
{
	free(t);
}
static const struct dnp_transport_ops rec_ops = {
	.name = "rec",
	.close = rec_close,
	.tx_burst = rec_tx,
	.rx_burst = rec_rx,
	.mtu = rec_mtu,
	.wait_fd = rec_fd,
	.up = rec_up,
};

static struct dnp_transport *impaired(const char *spec, unsigned dir, struct rec **inner)
{
	struct dnp_impair_conf c;
	struct dnp_transport *t;
	struct rec *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	r->base.ops = &rec_ops;
	assert_int_equal(dnp_impair_parse(spec, &c), 0);
	assert_int_equal(dnp_impair_wrap((struct dnp_transport *)(void *)r, dir, &c, &t), 0);
	*inner = r;
	return t;
}

/* Sends 1000 numbered 64-byte frames one by one. */
static void send_numbered(struct dnp_transport *t)
{
	for (unsigned i = 0; i < 1000; i++) {
		uint8_t b[64];
		struct dnp_tx_frame f = { b, sizeof(b) };

		memset(b, 0, sizeof(b));
		memcpy(b, &i, sizeof(i));
		assert_int_equal(dnp_transport_impair.tx_burst(t, &f, 1), 1);
	}
	while (dnp_impair_flush(t))
		;
}

static unsigned bits_differ(const uint8_t *a, const uint8_t *b, size_t n)
{
	unsigned d = 0;

	for (size_t i = 0; i < n; i++)
		d += (unsigned)__builtin_popcount((unsigned)(a[i] ^ b[i]));
	return d;
}

static void test_impair_faults_and_counters(void **state)
{
	struct rec *r;
	struct dnp_transport *t;
	const struct dnp_impair_stats *st;

	/* not our direction: untouched */
	t = impaired("dir=xm,loss=100%", 0, &r);
	send_numbered(t);
	assert_int_equal(r->n, 1000);
	dnp_transport_impair.close(t);

	t = impaired("loss=10%,seed=3", 0, &r);
	send_numbered(t);
	st = dnp_impair_stats(t);
	assert_int_equal(st->frames, 1000);
	assert_int_equal(r->n, 1000 - st->dropped);
	assert_in_range(st->dropped, 50, 150);
	dnp_transport_impair.close(t);

	t = impaired("corrupt=100%", 0, &r);
	send_numbered(t);
	assert_int_equal(r->n, 1000);
	for (unsigned i = 0; i < 1000; i++) {
		uint8_t b[64] = { 0 };

		memcpy(b, &i, sizeof(i));
		assert_int_equal(bits_differ(b, r->data[i], 64), 1); /* one bit flipped */
	}
	assert_int_equal(dnp_impair_stats(t)->corrupted, 1000);
	dnp_transport_impair.close(t);

	t = impaired("dup=100%", 0, &r);
	send_numbered(t);
	assert_int_equal(r->n, 2000);
	assert_memory_equal(r->data[0], r->data[1], 64);
	assert_int_equal(dnp_impair_stats(t)->duplicated, 1000);
	dnp_transport_impair.close(t);

	/* reordering: every frame arrives, not all in order */
	t = impaired("reorder=20%,seed=9", 0, &r);
	send_numbered(t);
	assert_int_equal(r->n, 1000);
	unsigned late = 0, seen[1000] = { 0 };
	for (unsigned i = 0; i < 1000; i++) {
		unsigned v;

		memcpy(&v, r->data[i], sizeof(v));
		assert_true(v < 1000);
		seen[v]++;
		if (v != i)
			late++;
	}
	for (unsigned i = 0; i < 1000; i++)
		assert_int_equal(seen[i], 1);
	assert_true(late > 0);
	assert_true(dnp_impair_stats(t)->reordered > 0);
	dnp_transport_impair.close(t);
}

/* The same seed gives the same fates; another seed others. */
static void test_impair_reproducible(void **state)
{
	struct rec *a, *b, *c;
	struct dnp_transport *ta = impaired("loss=5%,dup=5%,corrupt=5%,reorder=5%,seed=7", 2, &a);
	struct dnp_transport *tb = impaired("loss=5%,dup=5%,corrupt=5%,reorder=5%,seed=7", 2, &b);
	struct dnp_transport *tc = impaired("loss=5%,dup=5%,corrupt=5%,reorder=5%,seed=8", 2, &c);

	send_numbered(ta);
	send_numbered(tb);
	send_numbered(tc);
	assert_int_equal(a->n, b->n);
	assert_memory_equal(a->data, b->data, (size_t)a->n * 64);
	assert_true(a->n != c->n || memcmp(a->data, c->data, (size_t)a->n * 64) != 0);
	/* run-time change: off passes everything */
	struct dnp_impair_conf off;
	assert_int_equal(dnp_impair_parse("off", &off), 0);
	dnp_impair_set(ta, &off);
	unsigned before = a->n;
	send_numbered(ta);
	assert_int_equal(a->n, before + 1000);
	dnp_transport_impair.close(ta);
	dnp_transport_impair.close(tb);
	dnp_transport_impair.close(tc);
}

static void udp_exchange(const char *mode, unsigned port)
{
	struct dnp_transport_conf c0, c1;
	struct dnp_transport *probe;
	char a0[32], b0[32], a1[32], b1[32];

	conf_udp(&c0, 0, port, mode, a0, b0);
	conf_udp(&c1, 1, port, mode, a1, b1);
	if (strncmp(mode, "mode=uring", 10) == 0) {
		int r = dnp_transport_udp.open(&c0, &probe);

		if (r == -ENOTSUP)
			TEST_SKIP("io_uring not built in or refused: uring case skipped\n");
		assert_int_equal(r, 0);
		assert_true(dnp_transport_udp_uses_uring(probe));
		if (strstr(mode, "coop"))
			assert_true(dnp_transport_udp_uring_flags(probe) &
				    IORING_SETUP_COOP_TASKRUN);
		else
			print_message("io_uring setup flags 0x%x\n",
				      dnp_transport_udp_uring_flags(probe));
		dnp_transport_udp.close(probe);
	}
	run_pair(&dnp_transport_udp, &c0, &c1, NFRAMES, UDP_WINDOW, OPEN_ANY);
}

static void test_transport_udp_exchange_uring(void **state)
{
	udp_exchange("mode=uring", port_base);
}

static void test_transport_udp_exchange_plain(void **state)
{
	udp_exchange("mode=plain", port_base + 2);
}

static void test_transport_udp_exchange_uring_coop(void **state)
{
	udp_exchange("mode=uring,uring_setup=coop", port_base + 10);
}

/*
 * A peer's frame makes wait_fd readable; then rx_burst returns it. The child
 * sends only once our receive side is armed (it waits for our byte), and
 * closes only once we have the frame.
 */
static void udp_wait_fd(const char *mode, unsigned port)
{
	const struct dnp_transport_ops *ops = &dnp_transport_udp;
	struct dnp_transport_conf c0, c1;
	struct dnp_transport *t;
	struct dnp_rx_frame rx[4];
	char a0[32], b0[32], a1[32], b1[32];
	struct pollfd pfd;
	int up[2], go[2];
	pid_t pid;
	int r = 0;

	conf_udp(&c0, 0, port, mode, a0, b0);
	conf_udp(&c1, 1, port, mode, a1, b1);
	r = ops->open(&c0, &t);
	if (r == -ENOTSUP)
		TEST_SKIP("io_uring not built in or refused: uring case skipped\n");
	assert_int_equal(r, 0);
	assert_int_equal(ops->mtu(t), FRAME_MAX);
	assert_true(ops->up(t));
	/* arm the receive side (io_uring posts its recv on first use) */
	assert_int_equal(ops->rx_burst(t, rx, 4), 0);
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct dnp_transport *u;
		uint8_t buf[100] = { 42 };
		struct dnp_tx_frame tx = { .data = buf, .len = sizeof(buf) };

		close(up[0]);
		close(go[1]);
		if (ops->open(&c1, &u) != 0)
			_exit(1);
		if (!write_byte(up[1], 'u') || read_byte(go[0], 10000) != 'g')
			_exit(3);
		if (ops->tx_burst(u, &tx, 1) != 1)
			_exit(2);
		if (read_byte(go[0], 10000) != 'c')
			_exit(4);
		ops->close(u);
		_exit(0);
	}
	close(up[1]);
	close(go[0]);
	pfd.fd = ops->wait_fd(t);
	pfd.events = POLLIN;
	assert_true(pfd.fd >= 0);
	assert_int_equal(read_byte(up[0], 10000), 'u');
	assert_true(write_byte(go[1], 'g'));
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	/* readable: the frame is there, though io_uring may need a few looks */
	for (int i = 0; i < 100 && r == 0; i++) {
		r = ops->rx_burst(t, rx, 4);
		if (r == 0)
			poll(&pfd, 1, 10);
	}
	assert_int_equal(r, 1);
	assert_int_equal(rx[0].len, 100);
	assert_int_equal(rx[0].data[0], 42);
	assert_true(write_byte(go[1], 'c'));
	close(up[0]);
	close(go[1]);
	assert_int_equal(wait_child(pid), 0);
	ops->close(t);
}

static void test_transport_udp_wait_fd_uring(void **state)
{
	udp_wait_fd("mode=uring", port_base + 4);
}

static void test_transport_udp_wait_fd_plain(void **state)
{
	udp_wait_fd("mode=plain", port_base + 6);
}

/*
 * rx_gate_fd (transport.h): the plain path's socket is not readable while
 * rx_burst has nothing, and readable once a frame is there; the impairment
 * layer promises nothing while it holds a delayed frame (its rx_burst must
 * run to send it), then gives back the inner link's gate.
 */
static void test_transport_udp_rx_gate(void **state)
{
	const struct dnp_transport_ops *ops = &dnp_transport_udp;
	struct dnp_transport_conf c0, c1;
	struct dnp_transport *t0, *t1, *w;
	struct dnp_impair_conf ic;
	struct dnp_rx_frame rx[4];
	char a0[32], b0[32], a1[32], b1[32];
	uint8_t buf[100] = { 7 };
	struct dnp_tx_frame tx = { .data = buf, .len = sizeof(buf) };
	struct pollfd pfd = { .events = POLLIN };
	int fd1, r = 0;

	conf_udp(&c0, 0, port_base + 14, "mode=plain", a0, b0);
	conf_udp(&c1, 1, port_base + 14, "mode=plain", a1, b1);
	assert_int_equal(ops->open(&c0, &t0), 0);
	assert_int_equal(ops->open(&c1, &t1), 0);
	pfd.fd = ops->rx_gate_fd(t0);
	assert_true(pfd.fd >= 0);
	assert_int_equal(poll(&pfd, 1, 0), 0); /* nothing sent: rx_burst may be skipped */
	assert_int_equal(ops->rx_burst(t0, rx, 4), 0);
	fd1 = ops->rx_gate_fd(t1);
	assert_true(fd1 >= 0);

	/* the sender wrapped with a delay: while it holds the frame, no gate */
	assert_int_equal(dnp_impair_parse("delay=20ms", &ic), 0);
	assert_int_equal(dnp_impair_wrap(t1, 1, &ic, &w), 0);
	assert_int_equal(dnp_transport_impair.rx_gate_fd(w), fd1);
	assert_int_equal(dnp_transport_impair.tx_burst(w, &tx, 1), 1);
	assert_int_equal(dnp_transport_impair.rx_gate_fd(w), -1);
	while (dnp_impair_flush(w))
		poll(NULL, 0, 1);
	assert_int_equal(dnp_transport_impair.rx_gate_fd(w), fd1);

	/* the frame arrived: the gate is readable and rx_burst returns it */
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	r = ops->rx_burst(t0, rx, 4);
	assert_int_equal(r, 1);
	assert_int_equal(rx[0].len, sizeof(buf));
	assert_int_equal(rx[0].data[0], 7);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	dnp_transport_impair.close(w);
	ops->close(t0);
}

/* The io_uring path may hold completions its socket does not show: no gate. */
static void test_transport_udp_rx_gate_uring(void **state)
{
	struct dnp_transport_conf c;
	struct dnp_transport *t;
	char a[32], b[32];
	int r;

	conf_udp(&c, 0, port_base + 14, "mode=uring", a, b);
	r = dnp_transport_udp.open(&c, &t);
	if (r == -ENOTSUP)
		TEST_SKIP("io_uring not built in or refused: uring case skipped\n");
	assert_int_equal(r, 0);
	assert_int_equal(dnp_transport_udp.rx_gate_fd(t), -1);
	dnp_transport_udp.close(t);
}

/* A counter of the udp link's counters string ("name value ..."), or -1. */
static long long udp_counter(struct dnp_transport *t, const char *name)
{
	char buf[512], key[64];
	const char *p = buf;
	long long v;
	int used;

	assert_true(dnp_transport_udp.counters(t, buf, sizeof(buf)) > 0);
	while (sscanf(p, "%63s %lld%n", key, &v, &used) == 2) {
		if (strcmp(key, name) == 0)
			return v;
		p += used;
	}
	return -1;
}

/* Receives until n frames came or 5 s passed (io_uring may need a few looks). */
static int udp_rx_some(struct dnp_transport *t, struct dnp_rx_frame *rx, unsigned n)
{
	struct pollfd pfd = { .fd = dnp_transport_udp.wait_fd(t), .events = POLLIN };
	int r = 0;

	for (int i = 0; i < 500 && r == 0; i++) {
		r = dnp_transport_udp.rx_burst(t, rx, n);
		if (r == 0)
			poll(&pfd, 1, 10);
	}
	return r;
}

/*
 * Packing (docs/protocol.md, "The udp link's datagrams"): five small frames
 * of one tx_burst cross as one datagram and come out, in order and intact,
 * over three rx_burst calls of two; while frames of it are kept, the plain
 * path's gate promises nothing (-1), and a frame that starts as a packed
 * datagram would crosses packed, alone, and arrives whole.
 */
static void udp_pack_split(const char *mode, unsigned port)
{
	const struct dnp_transport_ops *ops = &dnp_transport_udp;
	struct dnp_transport_conf c0, c1;
	struct dnp_transport *t0, *t1;
	struct dnp_rx_frame rx[4];
	struct dnp_tx_frame tx[5];
	uint8_t buf[5][100], odd[64] = { 0x44, 0x50, 1, 1 };
	char a0[32], b0[32], a1[32], b1[32], opts[64];
	unsigned got = 0;
	int r;

	snprintf(opts, sizeof(opts), "%s,pack=on", mode);
	conf_udp(&c0, 0, port, opts, a0, b0);
	conf_udp(&c1, 1, port, opts, a1, b1);
	r = ops->open(&c0, &t0);
	if (r == -ENOTSUP)
		TEST_SKIP("io_uring not built in or refused: uring case skipped\n");
	assert_int_equal(r, 0);
	assert_int_equal(ops->open(&c1, &t1), 0);
	assert_int_equal(ops->rx_burst(t0, rx, 2), 0); /* arms io_uring's receive */
	for (unsigned i = 0; i < 5; i++) {
		memset(buf[i], (int)(0x10 + i), sizeof(buf[i]));
		tx[i] = (struct dnp_tx_frame){ .data = buf[i], .len = 64u + 8u * i };
	}
	assert_int_equal(ops->tx_burst(t1, tx, 5), 5);
	assert_int_equal(udp_counter(t1, "tx_packed"), 1);
	assert_int_equal(udp_counter(t1, "tx_packed_frames"), 5);
	while (got < 5) {
		r = udp_rx_some(t0, rx, 2);
		assert_true(r == 2 || (r == 1 && got == 4));
		for (int i = 0; i < r; i++, got++) {
			assert_int_equal(rx[i].len, 64u + 8u * got);
			assert_int_equal(rx[i].data[0], 0x10 + got);
			assert_int_equal(rx[i].data[rx[i].len - 1], 0x10 + got);
		}
		if (got < 5 && strstr(mode, "plain"))
			assert_int_equal(ops->rx_gate_fd(t0), -1);
	}
	assert_int_equal(udp_counter(t0, "rx_packed"), 1);
	assert_int_equal(udp_counter(t0, "rx_packed_frames"), 5);
	assert_int_equal(udp_counter(t0, "rx_pack_bad"), 0);
	if (strstr(mode, "plain"))
		assert_true(ops->rx_gate_fd(t0) >= 0);
	tx[0] = (struct dnp_tx_frame){ .data = odd, .len = sizeof(odd) };
	assert_int_equal(ops->tx_burst(t1, tx, 1), 1);
	assert_int_equal(udp_rx_some(t0, rx, 4), 1);
	assert_int_equal(rx[0].len, sizeof(odd));
	assert_memory_equal(rx[0].data, odd, sizeof(odd));
	assert_int_equal(udp_counter(t0, "rx_pack_bad"), 0);
	ops->close(t1);
	ops->close(t0);
}

static void test_transport_udp_pack_split_plain(void **state)
{
	udp_pack_split("mode=plain", port_base + 2);
}

static void test_transport_udp_pack_split_uring(void **state)
{
	udp_pack_split("mode=uring", port_base + 4);
}

/*
 * Malformed packed datagrams from the peer's address are dropped whole and
 * counted; the good frame after them still comes through.
 */
static void udp_pack_malformed(const char *mode, unsigned port)
{
	const struct dnp_transport_ops *ops = &dnp_transport_udp;
	struct dnp_transport_conf c0, c1;
	struct dnp_transport *t0, *t1;
	struct dnp_rx_frame rx[8];
	char a0[32], b0[32], a1[32], b1[32];
	/* header: magic, version, count, flags, 3 zero, lengths, pad to 16 */
	static const uint8_t bad[][48] = {
		{ 0x44, 0x50, 2, 1, 0, 0, 0, 0, 16, 0, 16, 0 },      /* version 2 */
		{ 0x44, 0x50, 1, 1, 0, 0, 0, 0, 40, 0 },             /* frame past the end */
		{ 0x44, 0x50, 1, 2, 0, 0, 0, 0, 8, 0, 0, 0 },        /* a zero length */
		{ 0x44, 0x50, 1, 33, 0, 0, 0, 0, 8, 0 },             /* more than 32 frames */
		{ 0x44, 0x50, 1, 1, 1, 0, 0, 0, 32, 0 },             /* flags set */
		{ 0x44, 0x50, 1, 1, 0, 0, 0, 0, 32, 0, 0, 0, 0, 9 }, /* header pad not zero */
		{ 0x44, 0x50, 1, 1, 0, 0, 0, 0, 16, 0 },             /* 16 bytes after the frame */
		{ 0x44, 0x50, 1, 0, 0, 0, 0, 0 },                    /* an announcement of 48 */
	};
	static const uint8_t good[48] = { 0x44, 0x50, 1, 1, 0, 0, 0, 0, 32, 0, [16] = 0x77 };
	int fd, r;

	conf_udp(&c0, 0, port, mode, a0, b0);
	conf_udp(&c1, 1, port, mode, a1, b1);
	r = ops->open(&c0, &t0);
	if (r == -ENOTSUP)
		TEST_SKIP("io_uring not built in or refused: uring case skipped\n");
	assert_int_equal(r, 0);
	assert_int_equal(ops->rx_burst(t0, rx, 8), 0);
	/* the peer's socket: a plain link end bound to its address */
	conf_udp(&c1, 1, port, "mode=plain,pack=off", a1, b1);
	assert_int_equal(ops->open(&c1, &t1), 0);
	fd = ops->wait_fd(t1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(send(fd, bad[i], sizeof(bad[i]), 0), (ssize_t)sizeof(bad[i]));
	assert_int_equal(send(fd, good, sizeof(good), 0), (ssize_t)sizeof(good));
	assert_int_equal(udp_rx_some(t0, rx, 8), 1);
	assert_int_equal(rx[0].len, 32);
	assert_int_equal(rx[0].data[0], 0x77);
	assert_int_equal(udp_counter(t0, "rx_pack_bad"), (long long)(sizeof(bad) / sizeof(bad[0])));
	assert_int_equal(udp_counter(t0, "rx_packed"), 1);
	ops->close(t1);
	ops->close(t0);
}

static void test_transport_udp_pack_malformed_plain(void **state)
{
	udp_pack_malformed("mode=plain", port_base + 2);
}

static void test_transport_udp_pack_malformed_uring(void **state)
{
	udp_pack_malformed("mode=uring", port_base + 4);
}

/* Four 80-byte frames of bytes 0x20..0x23 (two of them pack: docs/protocol.md). */
static void udp_small_frames(uint8_t buf[4][80], struct dnp_tx_frame tx[4])
{
	for (unsigned i = 0; i < 4; i++) {
		memset(buf[i], (int)(0x20 + i), sizeof(buf[i]));
		tx[i] = (struct dnp_tx_frame){ .data = buf[i], .len = sizeof(buf[i]) };
	}
}

/*
 * pack=auto (the default) packs only once the peer announced: towards a
 * peer that does not (pack=off, as a build without packing) every datagram
 * stays one frame; between two auto ends packing starts after one exchange.
 */
static void test_transport_udp_pack_auto(void **state)
{
	const struct dnp_transport_ops *ops = &dnp_transport_udp;
	struct dnp_transport_conf c0, c1;
	struct dnp_transport *t0, *t1;
	struct dnp_rx_frame rx[8];
	uint8_t buf[4][80];
	struct dnp_tx_frame tx[4];
	char a0[32], b0[32], a1[32], b1[32];

	udp_small_frames(buf, tx);
	conf_udp(&c0, 0, port_base + 2, "mode=plain", a0, b0);
	conf_udp(&c1, 1, port_base + 2, "mode=plain,pack=off", a1, b1);
	assert_int_equal(ops->open(&c0, &t0), 0);
	assert_int_equal(ops->open(&c1, &t1), 0);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(ops->tx_burst(t0, tx, 4), 4);
		assert_int_equal(udp_rx_some(t1, rx, 8), 4);
		assert_int_equal(ops->tx_burst(t1, tx, 4), 4);
		assert_int_equal(udp_rx_some(t0, rx, 8), 4);
	}
	assert_int_equal(udp_counter(t0, "tx_packed"), 0);
	assert_int_equal(udp_counter(t0, "peer_packs"), 0);
	assert_int_equal(udp_counter(t1, "tx_announce"), 0);
	ops->close(t1);

	conf_udp(&c1, 1, port_base + 2, "mode=plain", a1, b1);
	assert_int_equal(ops->open(&c1, &t1), 0);
	assert_int_equal(ops->tx_burst(t1, tx, 4), 4); /* announces, sends plain */
	assert_int_equal(udp_counter(t1, "tx_packed"), 0);
	assert_int_equal(udp_rx_some(t0, rx, 8), 4);
	assert_int_equal(udp_counter(t0, "peer_packs"), 1);
	assert_int_equal(ops->tx_burst(t0, tx, 4), 4); /* answers, packs */
	assert_int_equal(udp_counter(t0, "tx_packed"), 1);
	assert_int_equal(udp_rx_some(t1, rx, 8), 4);
	assert_int_equal(rx[3].data[0], 0x23);
	assert_int_equal(ops->tx_burst(t1, tx, 4), 4);
	assert_int_equal(udp_counter(t1, "tx_packed"), 1);
	ops->close(t1);
	ops->close(t0);
}

/*
 * A peer that starts over may be another build (docs/protocol.md, "The udp
 * link's datagrams"): t1 agreed to pack, then is replaced by a pack=none
 * end (a build without packing, which takes a packed datagram for one
 * malformed frame). Until peer_reset, t0 packs on; after it, t0 sends plain
 * and announces, which the none end drops unread. Replaced again by an auto
 * end, the two agree again after one exchange.
 */
static void test_transport_udp_pack_reset(void **state)
{
	const struct dnp_transport_ops *ops = &dnp_transport_udp;
	struct dnp_transport_conf c0, c1;
	struct dnp_transport *t0, *t1;
	struct dnp_rx_frame rx[8];
	uint8_t buf[4][80];
	struct dnp_tx_frame tx[4];
	char a0[32], b0[32], a1[32], b1[32];

	(void)state;
	assert_non_null(ops->peer_reset);
	udp_small_frames(buf, tx);
	conf_udp(&c0, 0, port_base + 10, "mode=plain", a0, b0);
	conf_udp(&c1, 1, port_base + 10, "mode=plain", a1, b1);
	assert_int_equal(ops->open(&c0, &t0), 0);
	assert_int_equal(ops->open(&c1, &t1), 0);
	assert_int_equal(ops->tx_burst(t1, tx, 4), 4); /* announces */
	assert_int_equal(udp_rx_some(t0, rx, 8), 4);
	assert_int_equal(udp_counter(t0, "peer_packs"), 1);
	ops->close(t1);

	/* the peer is now a build without packing: one "frame", starting DP */
	conf_udp(&c1, 1, port_base + 10, "mode=plain,pack=none", a1, b1);
	assert_int_equal(ops->open(&c1, &t1), 0);
	assert_int_equal(ops->tx_burst(t0, tx, 4), 4);
	assert_int_equal(udp_counter(t0, "tx_packed"), 1);
	assert_int_equal(udp_rx_some(t1, rx, 8), 1);
	assert_int_equal(rx[0].data[0], 0x44);
	assert_int_equal(rx[0].data[1], 0x50);
	assert_int_equal(udp_counter(t1, "rx_packed"), 0);

	ops->peer_reset(t0);
	assert_int_equal(udp_counter(t0, "peer_packs"), 0);
	assert_int_equal(udp_counter(t0, "peer_resets"), 1);
	assert_int_equal(ops->tx_burst(t0, tx, 4), 4); /* announces, sends plain */
	assert_int_equal(udp_counter(t0, "tx_packed"), 1);
	assert_int_equal(udp_counter(t0, "tx_announce"), 2);
	assert_int_equal(udp_rx_some(t1, rx, 8), 4); /* the announcement is dropped unread */
	assert_int_equal(rx[0].data[0], 0x20);
	assert_int_equal(rx[3].data[0], 0x23);
	assert_int_equal(udp_counter(t1, "rx_announce"), 0);
	assert_int_equal(ops->tx_burst(t1, tx, 4), 4); /* none: never announces */
	assert_int_equal(udp_counter(t1, "tx_announce"), 0);
	assert_int_equal(udp_rx_some(t0, rx, 8), 4);
	assert_int_equal(udp_counter(t0, "peer_packs"), 0);
	ops->close(t1);

	/* and a build with packing again */
	conf_udp(&c1, 1, port_base + 10, "mode=plain", a1, b1);
	assert_int_equal(ops->open(&c1, &t1), 0);
	ops->peer_reset(t0);
	assert_int_equal(ops->tx_burst(t0, tx, 4), 4); /* announces, plain */
	assert_int_equal(udp_rx_some(t1, rx, 8), 4);
	assert_int_equal(udp_counter(t1, "peer_packs"), 1);
	assert_int_equal(ops->tx_burst(t1, tx, 4), 4); /* answers, packs */
	assert_int_equal(udp_counter(t1, "tx_packed"), 1);
	assert_int_equal(udp_rx_some(t0, rx, 8), 4);
	assert_int_equal(udp_counter(t0, "peer_packs"), 1);
	assert_int_equal(ops->tx_burst(t0, tx, 4), 4);
	assert_int_equal(udp_counter(t0, "tx_packed"), 2);
	ops->close(t1);
	ops->close(t0);
}

static void test_transport_udp_bad_address(void **state)
{
	struct dnp_transport_conf c;
	struct dnp_transport *t;
	char a[32], b[32];

	conf_udp(&c, 0, port_base + 8, "mode=plain", a, b);
	c.remote = "no-port-here";
	assert_int_equal(dnp_transport_udp.open(&c, &t), -EINVAL);
	conf_udp(&c, 0, port_base + 8, "mode=bogus", a, b);
	assert_int_equal(dnp_transport_udp.open(&c, &t), -EINVAL);
}

/* Closing releases the port at once, even with io_uring requests outstanding. */
static void test_transport_udp_reopen_same_port(void **state)
{
	const char *modes[] = { "mode=uring", "mode=plain" };
	struct dnp_transport_conf c0, c1;
	struct dnp_transport *t0, *t1;
	struct dnp_rx_frame rx[4];
	uint8_t buf[64] = { 7 };
	struct dnp_tx_frame tx = { .data = buf, .len = sizeof(buf) };
	char a0[32], b0[32], a1[32], b1[32];

	for (unsigned m = 0; m < 2; m++) {
		conf_udp(&c0, 0, port_base + 12, modes[m], a0, b0);
		conf_udp(&c1, 1, port_base + 12, modes[m], a1, b1);
		for (int i = 0; i < 5; i++) {
			int r = dnp_transport_udp.open(&c0, &t0);

			if (r == -ENOTSUP)
				break;
			assert_int_equal(r, 0);
			assert_int_equal(dnp_transport_udp.open(&c1, &t1), 0);
			/* traffic both ways leaves sends and a multishot recv in the rings */
			assert_int_equal(dnp_transport_udp.rx_burst(t0, rx, 4), 0);
			assert_int_equal(dnp_transport_udp.rx_burst(t1, rx, 4), 0);
			assert_int_equal(dnp_transport_udp.tx_burst(t1, &tx, 1), 1);
			assert_int_equal(dnp_transport_udp.tx_burst(t0, &tx, 1), 1);
			r = 0;
			for (int k = 0; k < 1000 && r == 0; k++)
				r = dnp_transport_udp.rx_burst(t0, rx, 4);
			assert_int_equal(r, 1);
			assert_int_equal(rx[0].data[0], 7);
			dnp_transport_udp.close(t0);
			dnp_transport_udp.close(t1);
		}
	}
}

/* True when process pid is in an interruptible sleep ('S' in /proc/PID/stat). */
static bool proc_blocked(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	return test_proc_sleeping(path);
}

static void test_transport_doorbell_wakes_sleeper(void **state)
{
	struct dnp_doorbell *db;
	char path[256];
	pid_t pid;
	uint64_t t0;

	shm_path(path, sizeof(path), "node-0.bell");
	assert_int_equal(dnp_doorbell_map(path, &db), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct dnp_doorbell *mine;
		uint32_t seen;
		uint64_t start;
		int r;

		if (dnp_doorbell_map(path, &mine) != 0)
			_exit(1);
		seen = dnp_doorbell_arm(mine);
		start = now_ns();
		r = dnp_doorbell_sleep(mine, seen, 5000000000ull);
		/* woken (0) well before the 5 s timeout, and seq moved */
		if (r != 0 || now_ns() - start > 4000000000ull || dnp_doorbell_seq(mine) == seen)
			_exit(2);
		_exit(0);
	}
	/*
	 * Ring only once the child is really asleep, to exercise FUTEX_WAKE:
	 * it has announced itself (sleeping) and the kernel shows it blocked,
	 * which after that announcement can only be in FUTEX_WAIT.
	 */
	t0 = now_ns();
	while ((atomic_load(&db->sleeping) == 0 || !proc_blocked(pid)) &&
	       now_ns() - t0 < 3000000000ull)
		sched_yield();
	assert_int_equal(atomic_load(&db->sleeping), 1);
	assert_true(proc_blocked(pid));
	dnp_doorbell_ring(db);
	assert_int_equal(wait_child(pid), 0);
	assert_int_equal(atomic_load(&db->sleeping), 0);
	dnp_doorbell_unmap(db);
	unlink(path);
}

static void test_transport_doorbell_timeout_and_missed_ring(void **state)
{
	struct dnp_doorbell db __attribute__((aligned(64)));
	uint32_t seen;
	uint64_t t0;

	(void)state;
	dnp_doorbell_init(&db);
	/* nobody armed: a ring writes nothing */
	seen = dnp_doorbell_seq(&db);
	assert_false(dnp_doorbell_ring(&db));
	assert_int_equal(dnp_doorbell_seq(&db), seen);
	/* armed, nobody rings: the sleep times out, and disarms */
	seen = dnp_doorbell_arm(&db);
	assert_int_equal(atomic_load(&db.sleeping), 1);
	t0 = now_ns();
	assert_int_equal(dnp_doorbell_sleep(&db, seen, 20000000ull), -ETIMEDOUT);
	assert_true(now_ns() - t0 >= 15000000ull);
	assert_int_equal(atomic_load(&db.sleeping), 0);
	seen = dnp_doorbell_arm(&db);
	assert_int_equal(dnp_doorbell_sleep(&db, seen, 0), -ETIMEDOUT);
	/* a ring between arming and sleeping is not lost: no sleep at all */
	seen = dnp_doorbell_arm(&db);
	assert_true(dnp_doorbell_ring(&db));
	t0 = now_ns();
	assert_int_equal(dnp_doorbell_sleep(&db, seen, 5000000000ull), 0);
	assert_true(now_ns() - t0 < 1000000000ull);
	/* disarm without sleeping: rings write nothing again */
	seen = dnp_doorbell_arm(&db);
	dnp_doorbell_disarm(&db);
	assert_false(dnp_doorbell_ring(&db));
	assert_int_equal(dnp_doorbell_seq(&db), seen);
}

static int setup(void **state)
{
	snprintf(dir_path, sizeof(dir_path), "/dev/shm/test-transport-%d", (int)getpid());
	if (mkdir(dir_path, 0700) != 0) {
		snprintf(dir_path, sizeof(dir_path), "/tmp/test-transport-%d", (int)getpid());
		if (mkdir(dir_path, 0700) != 0)
			return -1;
	}
	/* 16 loopback ports below the kernel's ephemeral range (32768 on by default),
	 * where the integration scripts' port_base also draws, by PID */
	port_base = 10000u + ((unsigned)getpid() % 1423u) * 16u;
	return 0;
}

static int teardown(void **state)
{
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir_path);
	return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transport_find),
		cmocka_unit_test(test_transport_shm_exchange),
		cmocka_unit_test(test_transport_shm_open_order),
		cmocka_unit_test(test_transport_shm_full_ring),
		cmocka_unit_test(test_transport_shm_rings_peer_doorbell),
		cmocka_unit_test(test_transport_shm_rejects_bad_slot),
		cmocka_unit_test(test_transport_shm_consumer_goes_by_seq),
		cmocka_unit_test(test_transport_shm_bad_conf),
		cmocka_unit_test(test_transport_shm_reattach_after_kill),
		cmocka_unit_test(test_impair_parse),
		cmocka_unit_test(test_impair_faults_and_counters),
		cmocka_unit_test(test_impair_reproducible),
		cmocka_unit_test(test_transport_udp_exchange_plain),
		cmocka_unit_test(test_transport_udp_wait_fd_plain),
		cmocka_unit_test(test_transport_udp_rx_gate),
		cmocka_unit_test(test_transport_udp_bad_address),
		cmocka_unit_test(test_transport_udp_pack_split_plain),
		cmocka_unit_test(test_transport_udp_pack_malformed_plain),
		cmocka_unit_test(test_transport_udp_pack_auto),
		cmocka_unit_test(test_transport_udp_pack_reset),
		cmocka_unit_test(test_transport_udp_reopen_same_port),
		cmocka_unit_test(test_transport_doorbell_wakes_sleeper),
		cmocka_unit_test(test_transport_doorbell_timeout_and_missed_ring),
	};
	/* Run apart (argument "uring"), so that meson shows SKIP when io_uring is missing. */
	const struct CMUnitTest uring_tests[] = {
		cmocka_unit_test(test_transport_udp_exchange_uring),
		cmocka_unit_test(test_transport_udp_exchange_uring_coop),
		cmocka_unit_test(test_transport_udp_wait_fd_uring),
		cmocka_unit_test(test_transport_udp_rx_gate_uring),
		cmocka_unit_test(test_transport_udp_pack_split_uring),
		cmocka_unit_test(test_transport_udp_pack_malformed_uring),
	};
	int failed;

	if (argc > 1 && strcmp(argv[1], "uring") == 0) {
		failed = cmocka_run_group_tests_name("uring", uring_tests, setup, teardown);
		if (!failed && skipped == sizeof(uring_tests) / sizeof(uring_tests[0])) {
			printf("test_transport uring: SKIP: every case skipped (no io_uring)\n");
			return 77;
		}
		return failed ? 1 : 0;
	}
	failed = cmocka_run_group_tests(tests, setup, teardown);
	return failed ? 1 : 0;
}
