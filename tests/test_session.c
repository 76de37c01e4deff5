/* SPDX-License-Identifier: MIT */
/*
 * test_session — libdnp against dnpd's session server (dnp-core/dnpd/sess.c)
 * with a fake engine: handshake and ABI checks, ports, the shared heap and
 * its allocator, control requests, command/event rings and their doorbells,
 * argument validation, and what an app sees when the daemon goes away.
 *
 * The server runs in a thread of this process (the session code is
 * single-threaded: only that thread touches it); the fake engine completes
 * every command with a TX_DONE event carrying the command's cookie.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/sockios.h>
#include <pthread.h>
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
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dnp.h"
#include "dnp_session.h"
#include "dnpd.h"
#include "engine.h" /* struct dnp_engine_cntr: the counts the fake engine publishes */
#include "test_proc.h"

struct fake {
	atomic_int opens, closes, regs, unregs, cmds;
	atomic_bool pause, stop, events_off;
	atomic_bool paused; /* the server's answer to pause: it pops nothing until pause clears */
	pthread_mutex_t mu; /* with cv: a port closed (wait_closes) */
	pthread_cond_t cv;
	int reg_ret;
	uintptr_t last_priv;
	uint64_t last_va, last_len;
	unsigned last_flags;
	struct dnp_cmd last_cmd;
};

struct fixture {
	char dir[64];
	char sock[128];
	char bell[128];
	struct dnpd_sess_srv *srv;
	pthread_t th;
	bool running;
	struct fake f;
	struct dnp_sess_bell *bellmap;
};

static struct fixture *fx; /* the fake's callbacks reach it through ctx; this is for helpers */

static int fake_open(void *ctx, unsigned port)
{
	struct fake *f = ctx;

	atomic_fetch_add(&f->opens, 1);
	return 0;
}

static void fake_close(void *ctx, unsigned port)
{
	struct fake *f = ctx;

	pthread_mutex_lock(&f->mu);
	atomic_fetch_add(&f->closes, 1);
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

static int fake_reg(void *ctx, unsigned port, uint64_t va, uint64_t len, unsigned flags,
		    uintptr_t priv, uint32_t *key)
{
	struct fake *f = ctx;

	f->last_priv = priv;
	f->last_va = va;
	f->last_len = len;
	f->last_flags = flags;
	atomic_fetch_add(&f->regs, 1);
	*key = 0xabc00000u + (uint32_t)atomic_load(&f->regs);
	return f->reg_ret;
}

static int fake_unreg(void *ctx, unsigned port, uint64_t va)
{
	struct fake *f = ctx;

	atomic_fetch_add(&f->unregs, 1);
	return va == f->last_va ? 0 : -ENOENT;
}

static size_t fake_stats(void *ctx, char *buf, size_t cap)
{
	return (size_t)snprintf(buf, cap, "engine fake ok\n");
}

static const struct dnpd_sess_ops fake_ops = {
	.port_open = fake_open,
	.port_close = fake_close,
	.reg = fake_reg,
	.unreg = fake_unreg,
	.stats = fake_stats,
};

/*
 * A server thread's loop until f.stop: the sockets, then serve() for every
 * session, then idle_us microseconds of sleep (0: a yield). It first
 * answers f.pause with f.paused (fake_pause() waits for it); what a pause
 * means is up to serve().
 */
static void *srv_loop(struct fixture *x, void (*serve)(struct fixture *, struct dnpd_session *),
		      unsigned idle_us)
{
	while (!atomic_load(&x->f.stop)) {
		atomic_store(&x->f.paused, atomic_load(&x->f.pause));
		dnpd_sess_service(x->srv);
		for (unsigned k = 0; k < x->srv->nports; k++)
			serve(x, x->srv->by_port[x->srv->ports[k]]);
		if (idle_us)
			usleep(idle_us);
		else
			sched_yield();
	}
	return NULL;
}

/* The fake engine's completion of command c. */
static struct dnp_event done_event(const struct dnp_cmd *c)
{
	return (struct dnp_event){
		.type = DNP_EV_TX_DONE,
		.op = c->op,
		.port = c->dst_port,
		.len = (uint32_t)c->len,
		.va = c->local_va,
		.cookie = c->cookie,
	};
}

/* Completes every command at once, unless paused; no events with f.events_off. */
static void serve_all(struct fixture *x, struct dnpd_session *se)
{
	struct dnp_cmd c;

	if (atomic_load(&x->f.paused))
		return;
	while (dnp_ring_pop_burst(se->cmd, &c, 1)) {
		struct dnp_event ev = done_event(&c);

		x->f.last_cmd = c;
		atomic_fetch_add(&x->f.cmds, 1);
		if (atomic_load(&x->f.events_off))
			continue;
		dnp_ring_push(se->ev, &ev);
		dnpd_sess_notify(se);
	}
}

/* The server thread: sockets, plus a fake engine that completes every command. */
static void *srv_main(void *arg)
{
	return srv_loop(arg, serve_all, 100);
}

static void srv_stop(struct fixture *x)
{
	if (!x->running)
		return;
	atomic_store(&x->f.stop, true);
	pthread_join(x->th, NULL);
	dnpd_sess_destroy(x->srv);
	x->running = false;
}

/*
 * Starts the fixture's server (its socket and doorbell paths set) with the
 * limits 'tweak' sets, running 'loop' (srv_main or a variant) in its thread.
 */
static void srv_start(struct fixture *x, void (*tweak)(struct dnpd_sess_conf *),
		      void *(*loop)(void *))
{
	struct dnpd_sess_conf c = { 0 };

	dnp_torus_init(&c.torus, 2, 3, 4);
	c.self = (struct dnp_coord){ 1, 2, 0 };
	c.sock_path = x->sock;
	c.bell_path = x->bell;
	c.max_ports = 8;
	c.heap_default = 1 << 20;
	c.heap_max = 16 << 20;
	c.ops = &fake_ops;
	c.ctx = &x->f;
	if (tweak)
		tweak(&c);
	assert_int_equal(dnpd_sess_create(&c, &x->srv), 0);
	assert_int_equal(pthread_create(&x->th, NULL, loop, x), 0);
	x->running = true;
}

static int setup(void **state)
{
	struct fixture *x = calloc(1, sizeof(*x));
	void *p;
	int fd;

	assert_non_null(x);
	pthread_mutex_init(&x->f.mu, NULL);
	pthread_cond_init(&x->f.cv, NULL);
	strcpy(x->dir, "/tmp/dnp-test-session-XXXXXX");
	assert_non_null(mkdtemp(x->dir));
	snprintf(x->sock, sizeof(x->sock), "%s/node-5.sock", x->dir);
	snprintf(x->bell, sizeof(x->bell), "%s/node-5.bell", x->dir);
	fd = open(x->bell, O_RDWR | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	x->bellmap = p;
	close(fd);
	srv_start(x, NULL, srv_main);
	unsetenv("DNP_PORT");
	unsetenv("DNP_HEAP_SIZE");
	fx = x;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *x = *state;
	char cmd[160];

	srv_stop(x);
	munmap(x->bellmap, 4096);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", x->dir);
	assert_int_equal(system(cmd), 0);
	pthread_cond_destroy(&x->f.cv);
	pthread_mutex_destroy(&x->f.mu);
	free(x);
	fx = NULL;
	return 0;
}

/*
 * Waits until the daemon has closed 'want' ports in all: fake_close signals
 * every close (a handshake; the 30 s bound only keeps a broken daemon from
 * hanging the test).
 */
static void wait_closes(struct fixture *x, int want)
{
	struct timespec dl;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 30;
	pthread_mutex_lock(&x->f.mu);
	while (atomic_load(&x->f.closes) != want && r == 0)
		r = pthread_cond_timedwait(&x->f.cv, &x->f.mu, &dl);
	pthread_mutex_unlock(&x->f.mu);
	assert_int_equal(atomic_load(&x->f.closes), want);
}

/* Stops the fake engine and returns once it has acknowledged (a handshake, not a sleep). */
static void fake_pause(struct fixture *x)
{
	atomic_store(&x->f.pause, true);
	for (int i = 0; i < 2000000 && !atomic_load(&x->f.paused); i++)
		sched_yield();
	assert_true(atomic_load(&x->f.paused));
}

/* True when thread tid of this process is blocked in the kernel ('S'). */
static bool thread_blocked(pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	return test_proc_sleeping(path);
}

static void test_session_open_close(void **state)
{
	struct fixture *x = *state;
	struct dnp_coords self, dims;
	struct dnp *d;

	assert_int_equal(dnp_open(x->sock, &d), 0);
	assert_int_equal(dnp_port(d), 0);
	assert_int_equal(dnp_self(d, &self, &dims), 0);
	assert_int_equal(self.x, 1);
	assert_int_equal(self.y, 2);
	assert_int_equal(self.z, 0);
	assert_int_equal(dims.x, 2);
	assert_int_equal(dims.y, 3);
	assert_int_equal(dims.z, 4);
	assert_int_equal(atomic_load(&x->f.opens), 1);
	dnp_close(d);
	/*
	 * The daemon notices the closed socket and closes the port. The server
	 * thread forgets the port just after the engine's close, which wakes
	 * this thread: wait for that too (5 s at most).
	 */
	wait_closes(x, 1);
	for (int i = 0; i < 5000 && __atomic_load_n(&x->srv->by_port[0], __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	assert_null(__atomic_load_n(&x->srv->by_port[0], __ATOMIC_ACQUIRE));
}

static void test_session_env_socket(void **state)
{
	struct fixture *x = *state;
	struct dnp *d;

	setenv("DNP_SOCKET", x->sock, 1);
	assert_int_equal(dnp_open(NULL, &d), 0);
	unsetenv("DNP_SOCKET");
	dnp_close(d);
	assert_int_equal(dnp_open("/nonexistent/dnp.sock", &d), -ENOENT);
}

static void test_session_ports(void **state)
{
	struct fixture *x = *state;
	struct dnp *a, *b, *c, *e;

	assert_int_equal(dnp_open(x->sock, &a), 0);
	assert_int_equal(dnp_open(x->sock, &b), 0);
	assert_int_equal(dnp_port(a), 0);
	assert_int_equal(dnp_port(b), 1);
	setenv("DNP_PORT", "5", 1);
	assert_int_equal(dnp_open(x->sock, &c), 0);
	assert_int_equal(dnp_port(c), 5);
	assert_int_equal(dnp_open(x->sock, &e), -EBUSY); /* port 5 taken */
	setenv("DNP_PORT", "8", 1);
	assert_int_equal(dnp_open(x->sock, &e), -EINVAL); /* max_ports is 8 */
	unsetenv("DNP_PORT");
	dnp_close(a);
	wait_closes(x, 1);
	/* The freed port is handed out again; other sessions are untouched. */
	assert_int_equal(dnp_open(x->sock, &a), 0);
	assert_int_equal(dnp_port(a), 0);
	dnp_close(a);
	dnp_close(b);
	dnp_close(c);
	wait_closes(x, 4);
}

static void test_session_heap_allocator(void **state)
{
	struct fixture *x = *state;
	enum {
		N = 64
	};
	uint8_t *p[N];
	struct dnp *d;
	uint8_t *big;
	int i, j;

	setenv("DNP_HEAP_SIZE", "256K", 1);
	assert_int_equal(dnp_open(x->sock, &d), 0);
	unsetenv("DNP_HEAP_SIZE");
	assert_null(dnp_alloc(d, 0));
	for (i = 0; i < N; i++) {
		p[i] = dnp_alloc(d, 4000); /* rounds to 4032: 64 of them fit in 256 KiB */
		assert_non_null(p[i]);
		assert_int_equal((uintptr_t)p[i] % 64, 0);
		memset(p[i], i, 4000);
	}
	for (i = 0; i < N; i++) {
		for (j = 0; j < 4000; j++)
			if (p[i][j] != (uint8_t)i)
				fail_msg("block %d overwritten at %d", i, j);
	}
	assert_null(dnp_alloc(d, 8192)); /* 256 KiB - 64 * 4032 = 4096 left */
	assert_non_null(big = dnp_alloc(d, 4096));
	dnp_free(d, big);
	/* Free every other block, then the rest: the free list must coalesce to one extent. */
	for (i = 0; i < N; i += 2)
		dnp_free(d, p[i]);
	assert_null(dnp_alloc(d, 8192));
	assert_ptr_equal(dnp_alloc(d, 4032), p[0]); /* first fit */
	dnp_free(d, p[0]);
	for (i = 1; i < N; i += 2)
		dnp_free(d, p[i]);
	dnp_free(d, (uint8_t *)p[1] + 64); /* not a block: ignored */
	big = dnp_alloc(d, 256 << 10);
	assert_non_null(big);
	assert_ptr_equal(big, p[0]);
	assert_null(dnp_alloc(d, 1));
	dnp_free(d, big);
	dnp_close(d);
}

static void test_session_heap_shared_with_daemon(void **state)
{
	struct fixture *x = *state;
	static char outside[4096];
	struct dnp *d;
	uint32_t key;
	char *buf;

	assert_int_equal(dnp_open(x->sock, &d), 0);
	buf = dnp_alloc(d, 1000);
	assert_non_null(buf);
	memcpy(buf, "written by the app", 19);
	assert_int_equal(dnp_register(d, buf, 1000, DNP_BUF_PUT_TARGET, &key), 0);
	assert_int_equal(key, 0xabc00001u);
	assert_int_equal(x->f.last_va, (uint64_t)(uintptr_t)buf);
	assert_int_equal(x->f.last_len, 1000);
	assert_int_equal(x->f.last_flags, DNP_BUF_PUT_TARGET);
	/* priv is the daemon's own mapping of the same bytes. */
	assert_true(x->f.last_priv != 0);
	assert_string_equal((const char *)x->f.last_priv, "written by the app");
	strcpy((char *)x->f.last_priv, "written by the daemon");
	assert_string_equal(buf, "written by the daemon");
	/* Memory outside the heap has no mapping: the daemon will use process_vm_*. */
	assert_int_equal(dnp_register(d, outside, sizeof(outside), DNP_BUF_ALL, &key), 0);
	assert_true(x->f.last_priv == 0);
	assert_int_equal(dnp_unregister(d, outside), 0);
	assert_int_equal(dnp_unregister(d, buf), -ENOENT);
	x->f.reg_ret = -EEXIST;
	assert_int_equal(dnp_register(d, buf, 10, DNP_BUF_SEND_TARGET, &key), -EEXIST);
	/* Argument checks that never reach the daemon. */
	assert_int_equal(dnp_register(d, NULL, 10, DNP_BUF_ALL, &key), -EINVAL);
	assert_int_equal(dnp_register(d, buf, 0, DNP_BUF_ALL, &key), -EINVAL);
	assert_int_equal(dnp_register(d, buf, 10, 0x8, &key), -EINVAL);
	assert_int_equal(dnp_register(d, buf, 10, 0, &key), -EINVAL);
	assert_int_equal(dnp_register(d, buf, 10, DNP_BUF_ALL, NULL), -EINVAL);
	assert_int_equal(atomic_load(&x->f.regs), 3);
	dnp_close(d);
}

static void test_session_commands_and_events(void **state)
{
	struct fixture *x = *state;
	struct dnp_coords dst = { 1, 1, 3 };
	struct dnp_event ev;
	struct dnp *d;
	char src[64];

	assert_int_equal(dnp_open(x->sock, &d), 0);
	assert_int_equal(dnp_put(d, src, sizeof(src), dst, 7, 0x1000, 0x55, 42, 0), 0);
	assert_int_equal(dnp_wait_event(d, &ev, 2000), 1);
	assert_int_equal(ev.type, DNP_EV_TX_DONE);
	assert_int_equal(ev.op, DNP_OP_PUT);
	assert_int_equal(ev.cookie, 42);
	assert_int_equal(ev.len, sizeof(src));
	assert_int_equal(ev.va, (uint64_t)(uintptr_t)src);
	assert_int_equal(x->f.last_cmd.dst_x, 1);
	assert_int_equal(x->f.last_cmd.dst_y, 1);
	assert_int_equal(x->f.last_cmd.dst_z, 3);
	assert_int_equal(x->f.last_cmd.dst_port, 7);
	assert_int_equal(x->f.last_cmd.remote_va, 0x1000);
	assert_int_equal(x->f.last_cmd.remote_key, 0x55);

	assert_int_equal(dnp_send(d, src, 8, dst, 3, 43, 0), 0);
	assert_int_equal(dnp_get(d, src, 16, 0x77, dst, 2, 0x2000, 0x66, 44, 0), 0);
	assert_int_equal(dnp_wait_event(d, &ev, 2000), 1);
	assert_int_equal(ev.op, DNP_OP_SEND);
	assert_int_equal(ev.cookie, 43);
	assert_int_equal(dnp_wait_event(d, &ev, 2000), 1);
	assert_int_equal(ev.op, DNP_OP_GET);
	assert_int_equal(ev.cookie, 44);
	assert_int_equal(x->f.last_cmd.local_key, 0x77);
	assert_int_equal(dnp_poll_events(d, &ev, 1), 0);
	dnp_close(d);
}

static void test_session_invalid_arguments(void **state)
{
	struct fixture *x = *state;
	struct dnp_coords ok = { 1, 2, 3 };
	char b[8];
	struct dnp *d;

	assert_int_equal(dnp_open(x->sock, &d), 0);
	assert_int_equal(dnp_put(d, NULL, 8, ok, 0, 0, 0, 0, 0), -EINVAL);
	assert_int_equal(dnp_put(d, b, 8, (struct dnp_coords){ 2, 0, 0 }, 0, 0, 0, 0, 0), -EINVAL);
	assert_int_equal(dnp_put(d, b, 8, (struct dnp_coords){ 0, 3, 0 }, 0, 0, 0, 0, 0), -EINVAL);
	assert_int_equal(dnp_put(d, b, 8, (struct dnp_coords){ 0, 0, 4 }, 0, 0, 0, 0, 0), -EINVAL);
	assert_int_equal(dnp_put(d, b, 8, ok, 256, 0, 0, 0, 0), -EINVAL);
	assert_int_equal(dnp_put(d, b, 8, ok, 0, 0, 0, 0, 0x80), -EINVAL);
	assert_int_equal(dnp_send(d, b, (size_t)DNP_MAX_MSG + 1, ok, 0, 0, 0), -EINVAL);
	assert_int_equal(dnp_get(d, NULL, 8, 0, ok, 0, 0, 0, 0, 0), -EINVAL);
	assert_int_equal(dnp_wait_event(d, NULL, 0), -EINVAL);
	/* A zero-length SEND needs no buffer. */
	assert_int_equal(dnp_send(d, NULL, 0, ok, 0, 1, 0), 0);
	assert_int_equal(atomic_load(&x->f.cmds) <= 1, 1);
	assert_string_equal(dnp_strerror(-EACCES), "no buffer at that address opens with this key");
	assert_string_equal(dnp_strerror(-ENOENT), "no such buffer (or no daemon socket)");
	assert_string_equal(dnp_strerror(-ERANGE), "access runs past the end of the buffer");
	assert_non_null(dnp_strerror(-12345));
	dnp_close(d);
}

static void test_session_queue_full_nonblock(void **state)
{
	struct fixture *x = *state;
	struct dnp_coords dst = { 0, 0, 0 };
	struct dnp_event ev;
	struct dnp *d;
	unsigned i;
	int r = 0;

	assert_int_equal(dnp_open(x->sock, &d), 0);
	fake_pause(x);
	for (i = 0; i < DNP_SESS_CMD_SLOTS; i++)
		assert_int_equal(dnp_send(d, NULL, 0, dst, 0, i, DNP_NONBLOCK), 0);
	r = dnp_send(d, NULL, 0, dst, 0, 999, DNP_NONBLOCK);
	assert_int_equal(r, -EAGAIN);
	atomic_store(&x->f.pause, false);
	/* Blocking: waits until the daemon drains the ring. */
	assert_int_equal(dnp_send(d, NULL, 0, dst, 0, 1000, 0), 0);
	for (i = 0; i <= DNP_SESS_CMD_SLOTS; i++) {
		assert_int_equal(dnp_wait_event(d, &ev, 2000), 1);
		assert_int_equal(ev.cookie, i < DNP_SESS_CMD_SLOTS ? i : 1000);
	}
	dnp_close(d);
}

struct unpause {
	struct fixture *x;
	struct dnp_sess_ctl *ctl; /* the session of the app that waits */
	pid_t tid;                /* its thread */
	bool was_asleep;
};

/*
 * Releases the fake engine once the app sleeps in the futex: it has
 * announced itself (ev_waiters) and its thread is blocked in the kernel.
 */
static void *unpause_when_asleep(void *arg)
{
	struct unpause *u = arg;

	for (int i = 0; i < 2000000 && !u->was_asleep; i++) {
		u->was_asleep = atomic_load(&u->ctl->ev_waiters) != 0 && thread_blocked(u->tid);
		if (!u->was_asleep)
			sched_yield();
	}
	atomic_store(&u->x->f.pause, false);
	return NULL;
}

static void test_session_doorbells(void **state)
{
	struct fixture *x = *state;
	struct dnp_coords dst = { 0, 0, 0 };
	struct dnp_event ev;
	struct dnp *d;
	uint32_t seq;
	uint64_t t0;
	struct timespec ts;

	assert_int_equal(dnp_open(x->sock, &d), 0);
	/* A command leaves an awake daemon's bell alone (nothing written)... */
	seq = atomic_load(&x->bellmap->seq);
	assert_int_equal(dnp_send(d, NULL, 0, dst, 0, 1, 0), 0);
	assert_true(atomic_load(&x->bellmap->seq) == seq);
	assert_int_equal(dnp_wait_event(d, &ev, 2000), 1);
	/* ...and bumps the bell of one that is armed to sleep (doorbell.h). */
	atomic_fetch_add(&x->bellmap->sleeping, 1);
	assert_int_equal(dnp_send(d, NULL, 0, dst, 0, 1, 0), 0);
	assert_true(atomic_load(&x->bellmap->seq) != seq);
	atomic_fetch_sub(&x->bellmap->sleeping, 1);
	assert_int_equal(dnp_wait_event(d, &ev, 2000), 1);
	/* Timeout with nothing to wait for. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	assert_int_equal(dnp_wait_event(d, &ev, 60), 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	assert_true((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 - t0 >= 55);
	/* A sleeping app is woken by the event bell. */
	fake_pause(x);
	assert_int_equal(dnp_send(d, NULL, 0, dst, 0, 77, 0), 0);
	{
		struct unpause u = { .x = x,
				     .ctl = x->srv->by_port[dnp_port(d)]->ctl,
				     .tid = (pid_t)syscall(SYS_gettid) };
		pthread_t th;

		/* Releases the fake engine while we sleep in the futex. */
		assert_int_equal(pthread_create(&th, NULL, unpause_when_asleep, &u), 0);
		assert_int_equal(dnp_wait_event(d, &ev, -1), 1);
		pthread_join(th, NULL);
		assert_true(u.was_asleep);
	}
	assert_int_equal(ev.cookie, 77);
	dnp_close(d);
}

static void test_session_daemon_gone(void **state)
{
	struct fixture *x = *state;
	struct dnp_event ev;
	struct dnp *d;
	uint32_t key;
	char *b;

	assert_int_equal(dnp_open(x->sock, &d), 0);
	b = dnp_alloc(d, 64);
	assert_non_null(b);
	srv_stop(x);
	/* The mapping stays valid; the session says closed; the socket is at EOF. */
	assert_int_equal(dnp_wait_event(d, &ev, -1), -EIO);
	assert_int_equal(dnp_wait_event(d, &ev, 0), -EIO);
	assert_int_equal(dnp_register(d, b, 64, DNP_BUF_ALL, &key), -EIO);
	assert_int_equal(dnp_send(d, NULL, 0, (struct dnp_coords){ 0, 0, 0 }, 0, 0, 0), -EIO);
	memset(b, 1, 64);
	dnp_close(d);
	/* The socket file is gone with the daemon. */
	assert_int_equal(dnp_open(x->sock, &d), -ENOENT);
}

static int raw_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	strcpy(sa.sun_path, path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void test_session_stats_and_protocol(void **state)
{
	struct fixture *x = *state;
	struct dnp_sess_msg m = {
		.magic = DNP_SESS_MAGIC,
		.version = DNP_SESS_VERSION,
		.type = DNP_SESS_STATS,
	};
	char text[64] = { 0 };
	int fd;

	/* A control connection (dnpctl): STATS first, no port. */
	fd = raw_connect(x->sock);
	assert_int_equal(send(fd, &m, sizeof(m), 0), sizeof(m));
	assert_int_equal(recv(fd, &m, sizeof(m), MSG_WAITALL), sizeof(m));
	assert_int_equal(m.status, 0);
	assert_int_equal(m.len, strlen("engine fake ok\n"));
	assert_int_equal(recv(fd, text, m.len, MSG_WAITALL), (ssize_t)m.len);
	assert_string_equal(text, "engine fake ok\n");
	/* REGISTER on a control connection is refused. */
	m = (struct dnp_sess_msg){ .magic = DNP_SESS_MAGIC,
				   .version = DNP_SESS_VERSION,
				   .type = DNP_SESS_REGISTER,
				   .va = 4096,
				   .len = 1,
				   .arg32 = 1 };
	assert_int_equal(send(fd, &m, sizeof(m), 0), sizeof(m));
	assert_int_equal(recv(fd, &m, sizeof(m), MSG_WAITALL), sizeof(m));
	assert_int_equal(m.status, -EPROTO);
	close(fd);
	assert_int_equal(atomic_load(&x->f.opens), 0);

	/* A HELLO of another ABI version: -EPROTO, then the daemon hangs up. */
	fd = raw_connect(x->sock);
	m = (struct dnp_sess_msg){ .magic = DNP_SESS_MAGIC,
				   .version = DNP_SESS_VERSION + 1,
				   .type = DNP_SESS_HELLO };
	/* Sent in two pieces: the daemon reassembles partial records. */
	assert_int_equal(send(fd, &m, 10, 0), 10);
	/* the second piece only once the daemon has read the first (none left unread) */
	for (int i = 0, q = 1; i < 2000000 && q; i++) {
		assert_int_equal(ioctl(fd, SIOCOUTQ, &q), 0);
		if (q)
			sched_yield();
	}
	assert_int_equal(send(fd, (char *)&m + 10, sizeof(m) - 10, 0), sizeof(m) - 10);
	assert_int_equal(recv(fd, &m, sizeof(m), MSG_WAITALL), sizeof(m));
	assert_int_equal(m.status, -EPROTO);
	assert_int_equal(recv(fd, &m, sizeof(m), 0), 0);
	close(fd);
	assert_int_equal(atomic_load(&x->f.opens), 0);
}

static void test_session_abi_layout(void **state)
{
	(void)state;
	/* Known answers: changing any of these is an ABI break (bump DNP_SESS_VERSION). */
	assert_int_equal(sizeof(struct dnp_sess_msg), 32);
	assert_int_equal(offsetof(struct dnp_sess_msg, va), 16);
	assert_int_equal(sizeof(struct dnp_sess_ctl), 128);
	assert_int_equal(offsetof(struct dnp_sess_ctl, cmd_off), 44);
	assert_int_equal(offsetof(struct dnp_sess_ctl, map_size), 16);
	assert_int_equal(offsetof(struct dnp_sess_ctl, ev_seq), 64);
	assert_int_equal(offsetof(struct dnp_sess_ctl, state), 72);
	assert_int_equal(sizeof(struct dnp_sess_bell), 64);
	assert_int_equal(offsetof(struct dnp_sess_bell, poll_mode), 12);
	assert_int_equal(offsetof(struct dnp_sess_bell, solo_cpu), 20);
	assert_int_equal(sizeof(struct dnp_cmd), 64);
	assert_int_equal(sizeof(struct dnp_event), 32);
	assert_int_equal(DNP_SESS_MAGIC, 0x53504e44u);
}

/* dnpd_conf_link_addr() succeeds for dir (DNPD_ADDR_MAX addresses, a PATH_MAX bell). */
static void link_addr(const struct dnpd_conf *c, unsigned dir, char *local, char *remote,
		      unsigned *side, char *bell)
{
	assert_int_equal(
		dnpd_conf_link_addr(c, dir, local, remote, DNPD_ADDR_MAX, side, bell, PATH_MAX), 0);
}

/* Both ends of every link must compute the same shm name and udp port pair. */
static void test_session_link_names(void **state)
{
	struct dnpd_conf a, b;
	char la[DNPD_ADDR_MAX], ra[DNPD_ADDR_MAX], lb[DNPD_ADDR_MAX], rb[DNPD_ADDR_MAX];
	char bell[PATH_MAX];
	unsigned sa, sb;
	char *argv_a[] = {
		"dnpd", "--torus", "2x2x1", "--coord", "0,0,0", "--run-dir", "/r", NULL
	};
	char *argv_b[] = { "dnpd", "--torus",     "2x2x1", "--coord",         "1,0,0", "--run-dir",
			   "/r",   "--transport", "udp",   "--udp-base-port", "40000", NULL };

	(void)state;
	dnpd_conf_default(&a);
	assert_int_equal(dnpd_conf_parse(&a, 7, argv_a), 0);
	/* Node 0: X+ is the link 0 -> 1 of dimension 0; X- is 1 -> 0 (a distinct file). */
	link_addr(&a, DNP_DIR_XP, la, ra, &sa, bell);
	assert_string_equal(la, "/r/link-0-1-0.shm");
	assert_string_equal(ra, la);
	assert_string_equal(bell, "/r/node-1.bell");
	assert_int_equal(sa, 0);
	link_addr(&a, DNP_DIR_XM, la, ra, &sa, bell);
	assert_string_equal(la, "/r/link-1-0-0.shm");
	link_addr(&a, DNP_DIR_YM, la, ra, &sa, bell);
	assert_string_equal(la, "/r/link-2-0-1.shm");
	/* Node 1's X- is node 0's X+: same file, other side. */
	dnpd_conf_default(&b);
	assert_int_equal(dnpd_conf_parse(&b, 7, argv_a), 0);
	b.self.x = 1;
	link_addr(&b, DNP_DIR_XM, lb, rb, &sb, bell);
	assert_string_equal(lb, "/r/link-0-1-0.shm");
	assert_int_equal(sb, 1);
	/* udp: port P + id*8 + dir, remote = the neighbour's port for the opposite direction. */
	dnpd_conf_default(&b);
	assert_int_equal(dnpd_conf_parse(&b, 11, argv_b), 0);
	link_addr(&b, DNP_DIR_XP, lb, rb, &sb, bell);
	assert_string_equal(lb, "127.0.0.1:40008");
	assert_string_equal(rb, "127.0.0.1:40001");
	/* A config key overrides the derived address; REMOTE defaults to LOCAL. */
	assert_int_equal(dnpd_conf_set(&b, "xp", "10.0.0.1:5,10.0.0.2:6"), 0);
	assert_int_equal(dnpd_conf_set(&b, "ym", "/dev/shm/custom"), 0);
	assert_int_equal(dnpd_conf_set(&b, "nope", "1"), -ENOENT);
	assert_int_equal(dnpd_conf_set(&b, "idle", "lazy"), -EINVAL);
	link_addr(&b, DNP_DIR_XP, lb, rb, &sb, bell);
	assert_string_equal(lb, "10.0.0.1:5");
	assert_string_equal(rb, "10.0.0.2:6");
	link_addr(&b, DNP_DIR_YM, lb, rb, &sb, bell);
	assert_string_equal(rb, "/dev/shm/custom");
	/*
	 * Found by fuzz_conf: "LOCAL," (an empty REMOTE) was taken, leaving the
	 * transport an empty address. Refused now, and a refused value leaves
	 * the link's derived address in place.
	 */
	assert_int_equal(dnpd_conf_set(&b, "zp", "10.0.0.1:5,"), -EINVAL);
	assert_int_equal(dnpd_conf_set(&b, "zm", ",10.0.0.1:5"), -EINVAL);
	link_addr(&b, DNP_DIR_ZP, lb, rb, &sb, bell);
	assert_string_equal(lb, "127.0.0.1:40012");
	assert_string_equal(rb, "127.0.0.1:40013");
}

/*
 * --rx-bufs and key rx_bufs (engine.h rx_bufs): the lab's range, 1..254 buffer
 * credits per input VC, and 0 for the engine's default (so the command line can
 * undo a file's value); anything else refused, leaving the value as it was.
 */
static void test_session_conf_rx_bufs(void **state)
{
	struct dnpd_conf c;
	char *argv[] = { "dnpd",      "--torus", "2x1x1",     "--coord", "0,0,0",
			 "--run-dir", "/r",      "--rx-bufs", "254",     NULL };
	const char *bad[] = { "255", "256", "-1", "two", "", "2x", "1000000000000" };

	(void)state;
	dnpd_conf_default(&c);
	assert_int_equal(c.rx_bufs, 0);
	assert_int_equal(dnpd_conf_parse(&c, 9, argv), 0);
	assert_int_equal(c.rx_bufs, 254);
	assert_int_equal(dnpd_conf_set(&c, "rx_bufs", "1"), 0);
	assert_int_equal(c.rx_bufs, 1);
	assert_int_equal(dnpd_conf_set(&c, "rx_bufs", "0x10"), 0);
	assert_int_equal(c.rx_bufs, 16);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(dnpd_conf_set(&c, "rx_bufs", bad[i]), -EINVAL);
		assert_int_equal(c.rx_bufs, 16);
	}
	assert_int_equal(dnpd_conf_set(&c, "rx_bufs", "0"), 0);
	assert_int_equal(c.rx_bufs, 0);
	argv[8] = "255";
	dnpd_conf_default(&c);
	assert_int_equal(dnpd_conf_parse(&c, 9, argv), -EINVAL);
}

/* ------------------------------------------- the application is untrusted */

/*
 * Restarts the fixture's server with the limits 'tweak' sets, running
 * 'loop' (srv_main or one of the variants below) in its thread.
 */
static void restart_with(struct fixture *x, void (*tweak)(struct dnpd_sess_conf *),
			 void *(*loop)(void *))
{
	srv_stop(x);
	atomic_store(&x->f.stop, false);
	srv_start(x, tweak, loop);
}

/*
 * A fake engine with the real one's back-pressure: it takes a command only
 * when the event ring has room for its completion (dnpd_sess_ev_room), and
 * completes it through dnpd_sess_ev_push.
 */
static void serve_backpressure(struct fixture *x, struct dnpd_session *se)
{
	struct dnp_cmd c;

	while (dnpd_sess_ev_room(se) > 0 && dnpd_sess_cmd_pop(se, &c, 1)) {
		struct dnp_event ev = done_event(&c);

		atomic_fetch_add(&x->f.cmds, 1);
		assert_int_equal(dnpd_sess_ev_push(se, &ev, 1), 1);
	}
}

static void *srv_main_backpressure(void *arg)
{
	return srv_loop(arg, serve_backpressure, 0);
}

/*
 * The app scribbles on both rings' shared headers (geometry, head and tail)
 * and sets the full bits of command slots it never filled (so the daemon
 * takes whatever they hold as commands) while the daemon serves it: the
 * daemon must neither crash nor touch
 * memory outside the rings (run under ASan), and go on serving other
 * sessions. Raw offsets: the header is the ABI, whatever the C types.
 */
static void test_session_hostile_rings(void **state)
{
	struct fixture *x = *state;
	struct dnp_coords dst = { 0, 0, 0 };
	struct dnp_event ev;
	struct dnpd_session *se;
	struct dnp *d, *ok;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	uint8_t *rings[2];
	int i, got;

	assert_int_equal(dnp_open(x->sock, &d), 0);
	se = x->srv->by_port[dnp_port(d)];
	assert_non_null(se);
	rings[0] = (uint8_t *)se->ctl + se->ctl->cmd_off;
	rings[1] = (uint8_t *)se->ctl + se->ctl->ev_off;
	for (i = 0; i < 3000; i++) {
		uint8_t *h = rings[i & 1];
		uint32_t v;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		v = (uint32_t)(seed >> 16);
		/* slots, slot_size, mask at 4/8/12; head at 64; tail at 128. */
		memcpy(h + 4 + 4 * (seed % 3), &v, 4);
		if (seed & 0x100)
			memcpy(h + 64, &v, 4);
		if (seed & 0x200)
			memcpy(h + 128 + 0, (uint8_t *)&seed + 3, 4);
		if (seed & 0x400) /* slots start at 192; the command slots are 64 bytes */
			rings[0][192 + 64 * ((seed >> 24) % DNP_SESS_CMD_SLOTS)] ^=
				(uint8_t)(DNP_RING_FULL_BIT | (seed >> 40));
		/* Interleaved with legal traffic (which may or may not get through). */
		(void)dnp_send(d, NULL, 0, dst, 0, (uint64_t)i, DNP_NONBLOCK);
		(void)dnp_poll_events(d, &ev, 1);
	}
	/* The daemon lives and serves a new session as before. */
	assert_int_equal(dnp_open(x->sock, &ok), 0);
	assert_int_equal(dnp_send(ok, NULL, 0, dst, 0, 4242, 0), 0);
	got = dnp_wait_event(ok, &ev, 5000);
	assert_int_equal(got, 1);
	assert_int_equal(ev.cookie, 4242);
	dnp_close(ok);
	dnp_close(d);
	wait_closes(x, 2);
}

/*
 * 20,000 blocking puts from an app that never polls (the daemon takes a
 * command only when its completion has room): every put returns, and then
 * every completion comes out exactly once, in order. Without the stash in
 * dnp_submit this deadlocks after about 1024 + 4096 commands (the alarm
 * turns the hang into a failure).
 */
static void test_session_blocking_put_never_polls(void **state)
{
	struct fixture *x = *state;
	enum {
		N = 20000
	};
	struct dnp_coords dst = { 0, 1, 2 };
	struct dnp_event ev[64];
	struct dnp *d;
	char src[8] = "payload";
	unsigned next = 0;
	int i;

	restart_with(x, NULL, srv_main_backpressure);
	assert_int_equal(dnp_open(x->sock, &d), 0);
	alarm(60);
	for (i = 0; i < N; i++)
		assert_int_equal(dnp_put(d, src, sizeof(src), dst, 1, 0x1000, 7, (uint64_t)i, 0),
				 0);
	while (next < N) {
		int n = dnp_poll_events(d, ev, 64);

		assert_true(n >= 0);
		if (n == 0) {
			n = dnp_wait_event(d, ev, 5000);
			assert_int_equal(n, 1);
		}
		for (int k = 0; k < n; k++, next++) {
			assert_int_equal(ev[k].type, DNP_EV_TX_DONE);
			assert_int_equal(ev[k].cookie, next);
		}
	}
	alarm(0);
	assert_int_equal(dnp_poll_events(d, ev, 64), 0);
	assert_int_equal(atomic_load(&x->f.cmds), N);
	dnp_close(d);
}

/* Events with no room are counted and reported by one DNP_EV_OVERFLOW once room returns. */
static void test_session_event_overflow_reported(void **state)
{
	struct fixture *x = *state;
	struct dnp_event one = { .type = DNP_EV_RX_PUT, .len = 9 }, got;
	struct dnp_event *fill = calloc(DNP_SESS_EV_SLOTS, sizeof(*fill));
	struct dnpd_session *se;
	struct dnp *d;
	unsigned i;

	assert_non_null(fill);
	assert_int_equal(dnp_open(x->sock, &d), 0);
	/* No commands are sent, so the fake engine never pushes: this thread may. */
	se = x->srv->by_port[dnp_port(d)];
	assert_int_equal(dnpd_sess_ev_room(se), DNP_SESS_EV_SLOTS);
	for (i = 0; i < DNP_SESS_EV_SLOTS; i++)
		fill[i] = (struct dnp_event){ .type = DNP_EV_RX_SEND, .len = i };
	assert_int_equal(dnpd_sess_ev_push(se, fill, DNP_SESS_EV_SLOTS), DNP_SESS_EV_SLOTS);
	assert_int_equal(dnpd_sess_ev_room(se), 0);
	/* Five more find no room: counted, not silently dropped. */
	for (i = 0; i < 5; i++)
		assert_int_equal(dnpd_sess_ev_push(se, &one, 1), 0);
	assert_int_equal(se->ev_lost, 5);
	for (i = 0; i < DNP_SESS_EV_SLOTS; i++) {
		assert_int_equal(dnp_poll_events(d, &got, 1), 1);
		assert_int_equal(got.len, i);
	}
	/* Room again: the report goes first, then the new event. */
	assert_int_equal(dnpd_sess_ev_room(se), DNP_SESS_EV_SLOTS - 1);
	assert_int_equal(dnpd_sess_ev_push(se, &one, 1), 2);
	assert_int_equal(se->ev_lost, 0);
	assert_int_equal(dnp_wait_event(d, &got, 2000), 1);
	assert_int_equal(got.type, DNP_EV_OVERFLOW);
	assert_int_equal(got.status, -EOVERFLOW);
	assert_int_equal(got.len, 5);
	assert_int_equal(dnp_wait_event(d, &got, 2000), 1);
	assert_int_equal(got.type, DNP_EV_RX_PUT);
	assert_int_equal(got.len, 9);
	assert_int_equal(dnp_poll_events(d, &got, 1), 0);
	dnp_close(d);
	free(fill);
}

static void tweak_limits(struct dnpd_sess_conf *c)
{
	c->max_pending = 2;
	c->handshake_ms = 300;
	c->port_buffers = 3;
}

/* Blocks until the daemon closes fd (recv returns 0); fails after 10 s. */
static void expect_hangup(int fd)
{
	struct timeval tv = { 10, 0 };
	char b[64];
	ssize_t n;

	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	do
		n = recv(fd, b, sizeof(b), 0);
	while (n > 0);
	assert_int_equal(n, 0);
}

/*
 * Connections that never finish their handshake: at most max_pending at
 * once (more are closed at accept), each dropped after handshake_ms. A
 * session that finished its handshake is not.
 */
static void test_session_handshake_limits(void **state)
{
	struct fixture *x = *state;
	struct dnp_event ev;
	struct dnp *d;
	int a, b, c;

	restart_with(x, tweak_limits, srv_main);
	assert_int_equal(dnp_open(x->sock, &d), 0);
	a = raw_connect(x->sock);
	b = raw_connect(x->sock);
	/* Both are accepted (and pending) before the third comes. */
	for (int i = 0; i < 10000 && x->srv->npending < 2; i++)
		sched_yield(), usleep(100);
	assert_int_equal(x->srv->npending, 2);
	c = raw_connect(x->sock);
	expect_hangup(c);
	assert_true(x->srv->refused >= 1);
	/* The silent ones are dropped once their time is up. */
	expect_hangup(a);
	expect_hangup(b);
	assert_true(x->srv->timed_out >= 2);
	close(a);
	close(b);
	close(c);
	/* The finished session was kept through all that. */
	assert_int_equal(dnp_send(d, NULL, 0, (struct dnp_coords){ 0, 0, 0 }, 0, 5, 0), 0);
	assert_int_equal(dnp_wait_event(d, &ev, 5000), 1);
	assert_int_equal(ev.cookie, 5);
	dnp_close(d);
}

/* A port holds at most port_buffers registered buffers: then -EDQUOT. */
static void test_session_buffer_quota(void **state)
{
	struct fixture *x = *state;
	struct dnp *d;
	uint32_t key;
	char *b;

	restart_with(x, tweak_limits, srv_main);
	assert_int_equal(dnp_open(x->sock, &d), 0);
	b = dnp_alloc(d, 4096);
	assert_non_null(b);
	assert_int_equal(dnp_register(d, b, 100, DNP_BUF_ALL, &key), 0);
	assert_int_equal(dnp_register(d, b + 1000, 100, DNP_BUF_ALL, &key), 0);
	assert_int_equal(dnp_register(d, b + 2000, 100, DNP_BUF_ALL, &key), 0);
	assert_int_equal(dnp_register(d, b + 3000, 100, DNP_BUF_ALL, &key), -EDQUOT);
	assert_int_equal(atomic_load(&x->f.regs), 3); /* refused before the engine */
	assert_string_equal(dnp_strerror(-EDQUOT), "per-port quota reached (registered buffers)");
	assert_int_equal(dnp_unregister(d, b + 2000), 0);
	assert_int_equal(dnp_register(d, b + 3000, 100, DNP_BUF_ALL, &key), 0);
	dnp_close(d);
}

/* Drops CAP_SYS_PTRACE from this thread's effective set (capabilities are per thread). */
static bool drop_ptrace_cap(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct c[2];

	if (syscall(SYS_capget, &h, c))
		return false;
	c[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
	return syscall(SYS_capset, &h, c) == 0;
}

static void *srv_main_noptrace(void *arg)
{
	if (!drop_ptrace_cap())
		return NULL;
	return srv_main(arg);
}

static char outside_heap[4096];

/*
 * Memory outside the shared heap needs ptrace access: a daemon without it
 * (here: no CAP_SYS_PTRACE, and an app that made itself non-dumpable) answers
 * REGISTER with -EPERM at once, while heap buffers still register.
 */
static void test_session_register_needs_ptrace(void **state)
{
	struct fixture *x = *state;
	pid_t pid;
	int st;

	restart_with(x, NULL, srv_main_noptrace);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct dnp *d;
		uint32_t key;
		char *b;

		if (dnp_open(x->sock, &d))
			_exit(10);
		if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
			_exit(11);
		b = dnp_alloc(d, 64);
		if (!b || dnp_register(d, b, 64, DNP_BUF_ALL, &key))
			_exit(12);
		if (dnp_register(d, outside_heap, sizeof(outside_heap), DNP_BUF_ALL, &key) !=
		    -EPERM)
			_exit(13);
		dnp_close(d);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(atomic_load(&x->f.regs), 1);
}

static volatile uint64_t pid_probe = 0xa;

/* Reads pid_probe in process pid (the same address: both are forks of us). */
static bool process_vm_readv_probe(pid_t pid, uint64_t *out)
{
	struct iovec l = { out, sizeof(*out) };
	struct iovec r = { (void *)&pid_probe, sizeof(*out) };

	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof(*out);
}

/*
 * The session's process dies while its socket lives on (a child inherited
 * it) and its pid is given to a new process: the daemon must not read the
 * new process's memory through the old pid (-ESRCH), which a bare pid
 * would. Needs a writable ns_last_pid (root) to recycle the pid on purpose.
 */
/*
 * Completion counters (the fake engine counts like the real one: a command
 * with an odd cookie fails) and inline PUTs, through libdnp: dnp_cntr_wait
 * returns once ok + err reaches its threshold, times out short of it, and
 * what the application writes into the counter page is overwritten by the
 * daemon's own count at its next store. An inline PUT's slot carries the
 * bytes, not an address.
 */
static struct dnp_engine_cntr cvals[DNP_CNTR_MAX];

static void serve_cntr(struct fixture *x, struct dnpd_session *se)
{
	struct dnp_cmd c;
	uint64_t mask = 0;

	while (dnp_ring_pop_burst(se->cmd, &c, 1)) {
		x->f.last_cmd = c;
		atomic_fetch_add(&x->f.cmds, 1);
		if (c.cntr && c.cntr <= DNP_CNTR_MAX) {
			if (c.cookie & 1)
				cvals[c.cntr - 1].err++;
			else
				cvals[c.cntr - 1].ok++;
			mask |= 1ull << (c.cntr - 1);
		}
	}
	dnpd_sess_cntr_publish(se, mask, cvals);
}

static void *srv_cntr(void *arg)
{
	return srv_loop(arg, serve_cntr, 100);
}

static void test_session_counters_and_inline(void **state)
{
	struct fixture *x = *state;
	struct dnp_coords self, dims;
	struct dnp *d;
	uint64_t ok, err;
	uint8_t src[DNP_INLINE_MAX + 1], back[DNP_INLINE_MAX];

	memset(cvals, 0, sizeof(cvals));
	restart_with(x, NULL, srv_cntr);
	assert_int_equal(dnp_open(x->sock, &d), 0);
	assert_int_equal(dnp_self(d, &self, &dims), 0);
	assert_int_equal(dnp_cntr_read(d, 7, &ok, &err), 0);
	assert_true(ok == 0 && err == 0);
	assert_int_equal(dnp_cntr_read(d, DNP_CNTR_MAX, &ok, &err), -EINVAL);
	assert_int_equal(dnp_cntr_wait(d, DNP_CNTR_MAX, 1, 0), -EINVAL);
	assert_int_equal(dnp_put(d, src, 8, self, 0, 0, 1, 0, DNP_CNTR(DNP_CNTR_MAX)), -EINVAL);
	assert_int_equal(dnp_put(d, src, DNP_INLINE_MAX + 1, self, 0, 0, 1, 0, DNP_INLINE),
			 -EINVAL);
	assert_int_equal(dnp_put(d, src, 8, self, 0, 0, 1, 0, DNP_INLINE | DNP_SRC_EVENT), -EINVAL);
	assert_int_equal(dnp_send(d, src, 8, self, 0, 0, DNP_INLINE), -EINVAL);

	for (uint64_t i = 0; i < 10; i++)
		assert_int_equal(
			dnp_put(d, src, 8, self, 0, 0x1000, 1, i, DNP_NO_EVENT | DNP_CNTR(7)), 0);
	assert_int_equal(dnp_cntr_wait(d, 7, 10, 5000), 1);
	assert_int_equal(dnp_cntr_read(d, 7, &ok, &err), 0);
	assert_true(ok == 5 && err == 5); /* the odd cookies failed */
	assert_int_equal(dnp_cntr_wait(d, 7, 11, 0), 0);
	assert_int_equal(dnp_cntr_wait(d, 7, 11, 30), 0);
	assert_int_equal(x->f.last_cmd.cntr, 8);

	/* the application scribbles its counter: the daemon's next store is its own count */
	atomic_store(&x->srv->by_port[dnp_port(d)]->cntrs[7].ok, 999);
	assert_int_equal(dnp_put(d, src, 8, self, 0, 0x1000, 1, 20, DNP_NO_EVENT | DNP_CNTR(7)), 0);
	for (int i = 0; i < 5000 && (dnp_cntr_read(d, 7, &ok, &err), ok != 6); i++)
		usleep(1000);
	assert_int_equal(ok, 6);

	/* an inline PUT: the slot holds the bytes, the source is free at once */
	for (unsigned i = 0; i < DNP_INLINE_MAX; i++)
		src[i] = (uint8_t)(0xa0 + i);
	assert_int_equal(dnp_put(d, src, DNP_INLINE_MAX, self, 0, 0x2000, 1, 30, DNP_INLINE), 0);
	memset(src, 0, sizeof(src));
	for (int i = 0; i < 5000 && atomic_load(&x->f.cmds) < 12; i++)
		usleep(1000);
	assert_int_equal(atomic_load(&x->f.cmds), 12);
	assert_int_equal(x->f.last_cmd.flags, DNP_CMD_F_INLINE);
	assert_int_equal(x->f.last_cmd.len, DNP_INLINE_MAX);
	assert_int_equal(x->f.last_cmd.cookie, 30);
	dnp_cmd_inline_get(&x->f.last_cmd, back, DNP_INLINE_MAX);
	for (unsigned i = 0; i < DNP_INLINE_MAX; i++)
		assert_int_equal(back[i], 0xa0 + i);
	dnp_close(d);
}

static void test_session_pid_reuse(void **state)
{
	struct fixture *x = *state;
	int hold[2], gate[2];
	pid_t a, c = -1, b = -1;
	struct dnpd_session *se;
	uint64_t got = 0;
	char ch;
	int st, fd, tries, r;

	assert_int_equal(pipe(hold), 0);
	assert_int_equal(pipe(gate), 0);
	a = fork();
	assert_true(a >= 0);
	if (a == 0) {
		/* A: connects, hands the socket to B, and dies. */
		int s = raw_connect(x->sock);
		pid_t bb;

		close(hold[1]);
		bb = fork();

		if (bb == 0) {
			(void)s;
			if (read(hold[0], &ch, 1) < 0)
				_exit(1);
			_exit(0);
		}
		if (write(gate[1], &bb, sizeof(bb)) != sizeof(bb))
			_exit(1);
		_exit(bb > 0 ? 0 : 1);
	}
	assert_int_equal(read(gate[0], &b, sizeof(b)), sizeof(b));
	assert_int_equal(waitpid(a, &st, 0), a);
	for (tries = 0; tries < 10000 && x->srv->nconn < 1; tries++)
		usleep(100);
	assert_int_equal(x->srv->nconn, 1);
	se = x->srv->conn[0];
	assert_int_equal(se->pid, a);

	/* C takes A's pid: ns_last_pid = a - 1, then fork. */
	for (tries = 0; tries < 20 && c != a; tries++) {
		char v[32];

		if (c > 0) {
			kill(c, SIGKILL);
			waitpid(c, &st, 0);
		}
		fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
		if (fd < 0)
			break;
		snprintf(v, sizeof(v), "%d", (int)a - 1);
		r = (int)write(fd, v, strlen(v));
		close(fd);
		if (r < 0)
			break;
		c = fork();
		assert_true(c >= 0);
		if (c == 0) {
			close(hold[1]);
			pid_probe = 0xc;
			if (read(hold[0], &ch, 1) < 0)
				_exit(1);
			_exit(0);
		}
	}
	if (c == a) {
		/* The same address in C (forked from us, like A) holds 0xc once C has run. */
		for (tries = 0; tries < 10000; tries++) {
			if (process_vm_readv_probe(c, &got) && got == 0xc)
				break;
			usleep(100);
		}
		assert_int_equal(got, 0xc);
		got = 0;
		assert_int_equal(dnpd_sess_vm_io(se, (uint64_t)(uintptr_t)&pid_probe, &got,
						 sizeof(got), false, 0),
				 -ESRCH);
		assert_int_equal(got, 0);
		/*
		 * Claimed alive earlier in this pass (which a real pass could not
		 * claim here): the check after the call still refuses the read.
		 */
		se->alive_pass = 5;
		assert_int_equal(dnpd_sess_vm_io(se, (uint64_t)(uintptr_t)&pid_probe, &got,
						 sizeof(got), false, 5),
				 -ESRCH);
	} else {
		print_message("pid %d could not be recycled (ns_last_pid not writable or raced): "
			      "checking only that a dead session process gives -ESRCH\n",
			      (int)a);
		assert_int_equal(dnpd_sess_vm_io(se, (uint64_t)(uintptr_t)&pid_probe, &got,
						 sizeof(got), false, 0),
				 -ESRCH);
	}
	close(hold[1]);     /* B and C exit */
	waitpid(b, &st, 0); /* B is A's child, reparented: may not be ours */
	if (c > 0)
		waitpid(c, &st, 0);
	close(hold[0]);
	close(gate[0]);
	close(gate[1]);
}

static void tweak_cmd_quota(struct dnpd_sess_conf *c)
{
	c->port_commands = 100;
}

/*
 * A fake engine that takes commands (within the quota) and completes them
 * only when the test says so: f.pause holds completions, f.cmds counts the
 * commands taken.
 */
static struct dnp_cmd held[4096];
static unsigned nheld, nheld_done; /* taken, completed of them */

static void serve_hold(struct fixture *x, struct dnpd_session *se)
{
	unsigned n;

	n = dnpd_sess_cmd_pop(se, held + nheld, 4096 - nheld);
	nheld += n;
	atomic_fetch_add(&x->f.cmds, (int)n);
	while (!atomic_load(&x->f.pause) && nheld_done < nheld && dnpd_sess_ev_room(se) > 0) {
		struct dnp_event ev = { .type = DNP_EV_TX_DONE, .cookie = held[nheld_done].cookie };

		dnpd_sess_ev_push(se, &ev, 1);
		nheld_done++;
	}
	if (nheld_done == nheld)
		nheld_done = nheld = 0;
}

static void *srv_main_hold(void *arg)
{
	nheld = nheld_done = 0;
	return srv_loop(arg, serve_hold, 0);
}

/*
 * A port has at most port_commands outstanding: the daemon takes no more
 * from its ring until completions come (the rest waits in the ring, and a
 * DNP_NONBLOCK call then sees -EAGAIN); then everything completes once.
 */
static void test_session_command_quota(void **state)
{
	struct fixture *x = *state;
	struct dnp_coords dst = { 0, 0, 0 };
	struct dnp_event ev;
	struct dnp *d;
	unsigned i, n = 0;

	atomic_store(&x->f.pause, true);
	restart_with(x, tweak_cmd_quota, srv_main_hold);
	assert_int_equal(dnp_open(x->sock, &d), 0);
	/* 100 taken by the daemon (the rest of its burst stays), then the ring fills up. */
	for (i = 0; i < 150; i++)
		assert_int_equal(dnp_send(d, NULL, 0, dst, 0, i, DNP_NONBLOCK), 0);
	for (i = 0; i < 1000000 && atomic_load(&x->f.cmds) < 100; i++)
		sched_yield();
	assert_int_equal(atomic_load(&x->f.cmds), 100);
	for (i = 150; i < 100 + DNP_SESS_CMD_SLOTS; i++)
		assert_int_equal(dnp_send(d, NULL, 0, dst, 0, i, DNP_NONBLOCK), 0);
	assert_int_equal(x->srv->by_port[dnp_port(d)]->inflight, 100);
	assert_int_equal(dnp_send(d, NULL, 0, dst, 0, 999999, DNP_NONBLOCK), -EAGAIN);
	assert_int_equal(atomic_load(&x->f.cmds), 100);
	/* Completions free the quota: every command completes, once, in order. */
	atomic_store(&x->f.pause, false);
	while (n < 100 + DNP_SESS_CMD_SLOTS) {
		assert_int_equal(dnp_wait_event(d, &ev, 5000), 1);
		assert_int_equal(ev.cookie, n);
		n++;
	}
	assert_int_equal(dnp_poll_events(d, &ev, 1), 0);
	assert_int_equal(atomic_load(&x->f.cmds), 100 + DNP_SESS_CMD_SLOTS);
	dnp_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session_abi_layout),
		cmocka_unit_test(test_session_link_names),
		cmocka_unit_test(test_session_conf_rx_bufs),
		cmocka_unit_test_setup_teardown(test_session_open_close, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_env_socket, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_ports, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_heap_allocator, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_heap_shared_with_daemon, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_session_commands_and_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_invalid_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_queue_full_nonblock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_doorbells, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_daemon_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_stats_and_protocol, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_hostile_rings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_blocking_put_never_polls, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_session_event_overflow_reported, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_session_handshake_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_buffer_quota, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_command_quota, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_register_needs_ptrace, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_session_pid_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_counters_and_inline, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
