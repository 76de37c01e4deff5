/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of Presto's matching and protocols, without a daemon: the test
 * includes presto.c and links it against an in-process loopback in place of
 * libdnp, a 1x1x1 torus whose one rank sends to itself. The loopback keeps
 * libdnp's rules that Presto relies on: a buffer table with keys and flags
 * (PUT target, SEND target, GET source; overlapping registrations refused),
 * SEND targets filled in registration order and dropped once used, PUT and
 * GET checked against the key and the range (an ERROR event otherwise), and
 * one completion event per command. Every command completes at once, so
 * Presto's own matching, ordering, eager / rendez-vous choice and truncation
 * are what the tests see.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../presto/presto.c"

/* ---------------------------------------------------------- loopback libdnp */

#define LB_BUFS 4096
#define LB_EVQ 65536

struct lb_buf {
	uint8_t *addr;
	size_t len;
	uint32_t key;
	unsigned flags;
	uint64_t order; /* SEND targets: registration order */
	bool used;
};

static struct lb_buf lb_buf[LB_BUFS];
static struct dnp_event lb_evq[LB_EVQ];
static unsigned lb_head, lb_n;
static uint32_t lb_next_key;
static uint64_t lb_order;
static unsigned lb_gets, lb_puts, lb_sends;
static int lb_dummy;
/* traffic classes seen: Presto messages by header type (EAGER, RTS, ...), and GETs */
static unsigned lb_tc_msg[8][8], lb_tc_get[8];

/* Counts the class of a PUT or SEND that carries a Presto header. */
static void lb_tc_note(const void *src, size_t len, unsigned flags)
{
	struct p_hdr h;

	if (len < P_HDR)
		return;
	memcpy(&h, src, sizeof(h));
	if (h.type < 8)
		lb_tc_msg[h.type][DNP_TC_OF(flags)]++;
}

static void lb_reset(void)
{
	memset(lb_buf, 0, sizeof(lb_buf));
	lb_head = lb_n = 0;
	lb_next_key = 0x5a5a0001u;
	lb_order = 0;
	lb_gets = lb_puts = lb_sends = 0;
	memset(lb_tc_msg, 0, sizeof(lb_tc_msg));
	memset(lb_tc_get, 0, sizeof(lb_tc_get));
}

static void lb_push(const struct dnp_event *ev)
{
	assert_true(lb_n < LB_EVQ);
	lb_evq[(lb_head + lb_n++) % LB_EVQ] = *ev;
}

static void lb_done(uint8_t type, uint64_t cookie, const void *local, int status)
{
	struct dnp_event ev = {
		.type = type, .cookie = cookie, .va = (uintptr_t)local, .status = (int8_t)status
	};

	lb_push(&ev);
}

/* The buffer holding [va, va+len) opened by key with flag, or NULL. */
static struct lb_buf *lb_find(uint64_t va, size_t len, uint32_t key, unsigned flag)
{
	unsigned i;

	for (i = 0; i < LB_BUFS; i++) {
		struct lb_buf *b = &lb_buf[i];

		if (!b->used || b->key != key || !(b->flags & flag))
			continue;
		if (va >= (uintptr_t)b->addr && va - (uintptr_t)b->addr + len <= b->len)
			return b;
	}
	return NULL;
}

int dnp_open(const char *path, struct dnp **out)
{
	(void)path;
	*out = (struct dnp *)&lb_dummy;
	return 0;
}

void dnp_close(struct dnp *d)
{
	(void)d;
}

int dnp_self(const struct dnp *d, struct dnp_coords *self, struct dnp_coords *dims)
{
	(void)d;
	self->x = self->y = self->z = 0;
	dims->x = dims->y = dims->z = 1;
	return 0;
}

unsigned dnp_port(const struct dnp *d)
{
	(void)d;
	return 3;
}

void *dnp_alloc(struct dnp *d, size_t len)
{
	(void)d;
	(void)len;
	return NULL; /* Presto then uses private pages */
}

void dnp_free(struct dnp *d, void *p)
{
	(void)d;
	(void)p;
}

int dnp_register(struct dnp *d, void *addr, size_t len, unsigned flags, uint32_t *key)
{
	unsigned i, fi = LB_BUFS;

	(void)d;
	if (!addr || !len || !flags || (flags & ~DNP_BUF_ALL) || !key)
		return -EINVAL;
	for (i = 0; i < LB_BUFS; i++) {
		struct lb_buf *b = &lb_buf[i];

		if (!b->used) {
			if (fi == LB_BUFS)
				fi = i;
			continue;
		}
		if ((uint8_t *)addr < b->addr + b->len && b->addr < (uint8_t *)addr + len)
			return -EEXIST;
	}
	if (fi == LB_BUFS)
		return -ENOSPC;
	lb_buf[fi] = (struct lb_buf){ .addr = addr,
				      .len = len,
				      .key = lb_next_key,
				      .flags = flags,
				      .order = lb_order++,
				      .used = true };
	lb_next_key = lb_next_key * 2654435761u + 7u;
	if (!lb_next_key)
		lb_next_key = 1;
	*key = lb_buf[fi].key;
	return 0;
}

int dnp_unregister(struct dnp *d, void *addr)
{
	unsigned i;

	(void)d;
	for (i = 0; i < LB_BUFS; i++)
		if (lb_buf[i].used && lb_buf[i].addr == addr) {
			lb_buf[i].used = false;
			return 0;
		}
	return -ENOENT;
}

static int lb_dst_ok(struct dnp_coords dst, unsigned port)
{
	return dst.x == 0 && dst.y == 0 && dst.z == 0 && port == 3 ? 0 : -EINVAL;
}

int dnp_send(struct dnp *d, const void *src, size_t len, struct dnp_coords dst, unsigned port,
	     uint64_t cookie, unsigned flags)
{
	struct lb_buf *t = NULL;
	struct dnp_event ev = { .type = DNP_EV_RX_SEND, .port = 3 };
	unsigned i;

	(void)d;
	if (lb_dst_ok(dst, port))
		return -EINVAL;
	lb_sends++;
	lb_tc_note(src, len, flags);
	for (i = 0; i < LB_BUFS; i++)
		if (lb_buf[i].used && (lb_buf[i].flags & DNP_BUF_SEND_TARGET) &&
		    (!t || lb_buf[i].order < t->order))
			t = &lb_buf[i];
	if (!t) {
		lb_done(DNP_EV_ERROR, cookie, src, -ENOBUFS);
		return 0;
	}
	if (len > t->len) {
		lb_done(DNP_EV_ERROR, cookie, src, -EMSGSIZE);
		return 0;
	}
	memcpy(t->addr, src, len);
	ev.va = (uintptr_t)t->addr;
	ev.len = (uint32_t)len;
	t->used = false; /* a SEND target is used once */
	lb_push(&ev);
	lb_done(DNP_EV_TX_DONE, cookie, src, 0);
	return 0;
}

int dnp_put(struct dnp *d, const void *src, size_t len, struct dnp_coords dst, unsigned port,
	    uint64_t remote_va, uint32_t remote_key, uint64_t cookie, unsigned flags)
{
	struct dnp_event ev = { .type = DNP_EV_RX_PUT, .port = 3 };
	struct lb_buf *t;

	(void)d;
	if (lb_dst_ok(dst, port))
		return -EINVAL;
	lb_puts++;
	lb_tc_note(src, len, flags);
	t = lb_find(remote_va, len, remote_key, DNP_BUF_PUT_TARGET);
	if (!t) {
		lb_done(DNP_EV_ERROR, cookie, src, -EACCES);
		return 0;
	}
	memmove((void *)(uintptr_t)remote_va, src, len);
	ev.va = remote_va;
	ev.len = (uint32_t)len;
	lb_push(&ev);
	lb_done(DNP_EV_TX_DONE, cookie, src, 0);
	return 0;
}

int dnp_get(struct dnp *d, void *dst, size_t len, uint32_t local_key, struct dnp_coords src,
	    unsigned port, uint64_t remote_va, uint32_t remote_key, uint64_t cookie, unsigned flags)
{
	(void)d;
	if (lb_dst_ok(src, port))
		return -EINVAL;
	lb_gets++;
	lb_tc_get[DNP_TC_OF(flags)]++;
	if (!lb_find((uintptr_t)dst, len, local_key, DNP_BUF_PUT_TARGET) ||
	    !lb_find(remote_va, len, remote_key, DNP_BUF_GET_SOURCE)) {
		lb_done(DNP_EV_ERROR, cookie, dst, -EACCES);
		return 0;
	}
	memmove(dst, (const void *)(uintptr_t)remote_va, len);
	lb_done(DNP_EV_GET_DONE, cookie, dst, 0);
	return 0;
}

int dnp_poll_events(struct dnp *d, struct dnp_event *ev, unsigned max)
{
	unsigned n = 0;

	(void)d;
	while (n < max && lb_n) {
		ev[n++] = lb_evq[lb_head];
		lb_head = (lb_head + 1) % LB_EVQ;
		lb_n--;
	}
	return (int)n;
}

/* No collectives in this stand-in (Presto keeps to its host-based ones). */
#include "libdnp_nocoll.h"

int dnp_wait_event(struct dnp *d, struct dnp_event *ev, int timeout_ms)
{
	(void)timeout_ms;
	return dnp_poll_events(d, ev, 1);
}

const char *dnp_strerror(int err)
{
	return strerror(-err);
}

/* ---------------------------------------------------------------- fixtures */

static int setup_mode(void **state, const char *eager)
{
	struct presto_conf c = {
		.eager_max = (size_t)-1, .slot_size = 4096, .credits = 4, .timeout_ms = 2000
	};
	struct presto *p;

	lb_reset();
	setenv("PRESTO_EAGER", eager, 1);
	assert_int_equal(presto_init(&c, &p), 0);
	assert_int_equal(presto_rank(p), 0);
	assert_int_equal(presto_size(p), 1);
	*state = p;
	return 0;
}

/* eager messages PUT into the receiver's ring */
static int setup(void **state)
{
	return setup_mode(state, "put");
}

/* eager messages SENT into the receiver's posted SEND slots */
static int setup_send(void **state)
{
	return setup_mode(state, "send");
}

static int teardown(void **state)
{
	presto_finalize(*state);
	return 0;
}

static void fill(uint8_t *b, size_t n, unsigned salt)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 31u + salt * 7u + (i >> 8));
}

/*
 * Send to ourselves, then receive: a rendez-vous send completes only once
 * matched, so the send is nonblocking and waited for after the receive.
 */
static void send_recv(struct presto *p, const void *sb, size_t n, int tag, void *rb, size_t cap,
		      int rtag, struct presto_status *st)
{
	struct presto_status ss;
	struct presto_req *s;
	int r;

	assert_int_equal(presto_isend(p, sb, n, 0, tag, &s), 0);
	/* presto_recv returns the status's error (-EMSGSIZE: truncated) */
	r = presto_recv(p, rb, cap, 0, rtag, st);
	assert_int_equal(r, st->error);
	assert_int_equal(presto_wait(p, &s, &ss), 0);
	assert_int_equal(ss.error, 0);
}

/* ------------------------------------------------------------------ tests */

/* Directed tags: each message lands in the receive that names its tag. */
static void test_tags(void **state)
{
	struct presto *p = *state;
	struct presto_req *r1, *r2, *r3;
	struct presto_status st;
	int a = 0, b = 0, c = 0, x = 11, y = 22, z = 33;

	assert_int_equal(presto_irecv(p, &a, sizeof(a), 0, 1, &r1), 0);
	assert_int_equal(presto_irecv(p, &b, sizeof(b), 0, 2, &r2), 0);
	assert_int_equal(presto_send(p, &y, sizeof(y), 0, 2), 0);
	assert_int_equal(presto_send(p, &x, sizeof(x), 0, 1), 0);
	assert_int_equal(presto_wait(p, &r2, &st), 0);
	assert_int_equal(st.tag, 2);
	assert_int_equal(b, 22);
	assert_int_equal(presto_wait(p, &r1, &st), 0);
	assert_int_equal(st.tag, 1);
	assert_int_equal(a, 11);
	/* unexpected first: the message with tag 3 waits for its receive */
	assert_int_equal(presto_send(p, &z, sizeof(z), 0, 3), 0);
	assert_int_equal(presto_irecv(p, &c, sizeof(c), 0, 4, &r3), 0);
	assert_int_equal(presto_recv(p, &a, sizeof(a), 0, 3, &st), 0);
	assert_int_equal(a, 33);
	assert_int_equal(st.tag, 3);
	{
		int flag = 1;

		assert_int_equal(presto_test(p, &r3, &flag, &st), 0);
		assert_int_equal(flag, 0); /* tag 4 never sent */
	}
	assert_int_equal(presto_send(p, &x, sizeof(x), 0, 4), 0);
	assert_int_equal(presto_wait(p, &r3, &st), 0);
	assert_int_equal(c, 11);
}

/* ANY_SOURCE / ANY_TAG match anything and report what matched. */
static void test_any(void **state)
{
	struct presto *p = *state;
	struct presto_status st;
	int v = 7, w = 0;

	assert_int_equal(presto_send(p, &v, sizeof(v), 0, 12345), 0);
	assert_int_equal(presto_recv(p, &w, sizeof(w), PRESTO_ANY_SOURCE, PRESTO_ANY_TAG, &st), 0);
	assert_int_equal(w, 7);
	assert_int_equal(st.source, 0);
	assert_int_equal(st.tag, 12345);
	assert_int_equal(st.len, sizeof(w));
	assert_int_equal(st.error, 0);
	/* a directed source with any tag */
	assert_int_equal(presto_send(p, &v, sizeof(v), 0, 9), 0);
	w = 0;
	assert_int_equal(presto_recv(p, &w, sizeof(w), 0, PRESTO_ANY_TAG, &st), 0);
	assert_int_equal(st.tag, 9);
	/* bad arguments */
	assert_int_equal(presto_recv(p, &w, sizeof(w), 1, 0, &st), -EINVAL);
	assert_int_equal(presto_recv(p, &w, sizeof(w), 0, PRESTO_TAG_MAX + 1, &st), -EINVAL);
}

/*
 * Non-overtaking: messages with equal tags are received in sending order,
 * whether the receives were posted before (matching in posting order) or
 * after (the unexpected queue in arrival order), and an ANY_TAG receive
 * takes the oldest message.
 */
static void test_ordering(void **state)
{
	struct presto *p = *state;
	struct presto_req *r[40];
	struct presto_status st;
	int in[40], v, i;

	for (i = 0; i < 40; i++)
		assert_int_equal(presto_irecv(p, &in[i], sizeof(in[i]), 0, 5, &r[i]), 0);
	for (i = 0; i < 40; i++)
		assert_int_equal(presto_send(p, &i, sizeof(i), 0, 5), 0);
	for (i = 0; i < 40; i++) {
		assert_int_equal(presto_wait(p, &r[i], &st), 0);
		assert_int_equal(in[i], i);
	}
	/* unexpected, with another tag mixed in */
	for (i = 0; i < 30; i++)
		assert_int_equal(presto_send(p, &i, sizeof(i), 0, i % 3 ? 6 : 7), 0);
	for (i = 0; i < 30; i += 3) {
		assert_int_equal(presto_recv(p, &v, sizeof(v), 0, 7, &st), 0);
		assert_int_equal(v, i);
	}
	for (i = 0; i < 30; i++) {
		if (i % 3 == 0)
			continue;
		assert_int_equal(presto_recv(p, &v, sizeof(v), 0, PRESTO_ANY_TAG, &st), 0);
		assert_int_equal(v, i);
		assert_int_equal(st.tag, 6);
	}
}

/*
 * The protocol follows the eager limit: up to it one eager transfer (no
 * GET), above it a rendez-vous (the receiver GETs the data); byte-exact
 * both ways, posted before or after the message arrived.
 */
static void test_eager_rndv_switch(void **state)
{
	struct presto *p = *state;
	static uint8_t sb[70000], rb[70000];
	struct presto_stats s0, s1;
	struct presto_status st;
	struct presto_req *rq;
	size_t lim = 1000, sizes[] = { 0, 1, 999, 1000, 1001, 4000, 65536 };
	unsigned k;

	assert_int_equal(presto_set_eager_max(p, lim), 0);
	assert_int_equal(presto_eager_max(p), lim);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		unsigned gets = lb_gets;
		bool eager = n <= lim;

		fill(sb, n, k);
		memset(rb, 0xee, sizeof(rb));
		presto_get_stats(p, &s0);
		if (k % 2) {
			assert_int_equal(presto_irecv(p, rb, sizeof(rb), 0, 40 + (int)k, &rq), 0);
			assert_int_equal(presto_send(p, sb, n, 0, 40 + (int)k), 0);
			assert_int_equal(presto_wait(p, &rq, &st), 0);
		} else {
			send_recv(p, sb, n, 40 + (int)k, rb, sizeof(rb), 40 + (int)k, &st);
		}
		presto_get_stats(p, &s1);
		assert_int_equal(st.error, 0);
		assert_int_equal(st.len, n);
		assert_memory_equal(rb, sb, n);
		assert_int_equal(rb[n], 0xee); /* nothing past the message */
		assert_int_equal(s1.eager_sent - s0.eager_sent, eager ? 1 : 0);
		assert_int_equal(s1.rndv_sent - s0.rndv_sent, eager ? 0 : 1);
		if (eager)
			assert_int_equal(lb_gets, gets);
		else
			assert_true(lb_gets > gets);
	}
	/* the limit cannot exceed a slot's payload */
	assert_int_not_equal(presto_set_eager_max(p, (size_t)1 << 40), 0);
}

/*
 * presto_set_class (issue 30): each message goes in the class current when
 * it was started, eager data and rendez-vous request alike, and the
 * receiver's GET of a rendez-vous message in that class too.
 */
static void test_class(void **state)
{
	struct presto *p = *state;
	static uint8_t sb[20000], rb[20000];
	struct presto_status st;
	struct presto_req *a, *b;

	assert_int_equal(presto_class(p), 0);
	assert_int_equal(presto_set_class(p, 8), -EINVAL);
	assert_int_equal(presto_set_class(p, 5), 0);
	assert_int_equal(presto_class(p), 5);
	fill(sb, sizeof(sb), 9);
	send_recv(p, sb, 100, 1, rb, sizeof(rb), 1, &st);
	assert_memory_equal(rb, sb, 100);
	assert_int_equal(lb_tc_msg[M_EAGER][5], 1);
	send_recv(p, sb, sizeof(sb), 2, rb, sizeof(rb), 2, &st); /* rendez-vous */
	assert_memory_equal(rb, sb, sizeof(sb));
	assert_int_equal(lb_tc_msg[M_RTS][5], 1);
	assert_int_equal(lb_tc_get[5], 1);
	/* two messages in a row, each in its own class */
	assert_int_equal(presto_isend(p, sb, 10, 0, 3, &a), 0);
	assert_int_equal(presto_set_class(p, 2), 0);
	assert_int_equal(presto_isend(p, sb, 20, 0, 3, &b), 0);
	assert_int_equal(presto_recv(p, rb, sizeof(rb), 0, 3, &st), 0);
	assert_int_equal(st.len, 10);
	assert_int_equal(presto_recv(p, rb, sizeof(rb), 0, 3, &st), 0);
	assert_int_equal(st.len, 20);
	assert_int_equal(presto_wait(p, &a, NULL), 0);
	assert_int_equal(presto_wait(p, &b, NULL), 0);
	assert_int_equal(lb_tc_msg[M_EAGER][5], 2);
	assert_int_equal(lb_tc_msg[M_EAGER][2], 1);
	/* back to the default: nothing more in class 5 */
	assert_int_equal(presto_set_class(p, 0), 0);
	send_recv(p, sb, sizeof(sb), 4, rb, sizeof(rb), 4, &st);
	assert_int_equal(lb_tc_get[5], 1);
	assert_int_equal(lb_tc_get[0], 1);
	assert_int_equal(lb_tc_msg[M_RTS][5], 1);
}

/*
 * A message longer than the receive buffer fills it, keeps nothing beyond
 * it, and completes with -EMSGSIZE (eager and rendez-vous); zero capacity
 * takes a message of zero bytes without error and truncates any other.
 */
static void test_truncation(void **state)
{
	struct presto *p = *state;
	static uint8_t sb[20000], rb[20000];
	struct presto_status st;
	size_t sizes[] = { 100, 3000, 20000 }, caps[] = { 10, 2999, 1 };
	unsigned k;

	assert_int_equal(presto_set_eager_max(p, 2048), 0);
	for (k = 0; k < 3; k++) {
		fill(sb, sizes[k], 100 + k);
		memset(rb, 0xee, sizeof(rb));
		send_recv(p, sb, sizes[k], 60, rb, caps[k], 60, &st);
		assert_int_equal(st.error, -EMSGSIZE);
		assert_int_equal(st.len, caps[k]);
		assert_memory_equal(rb, sb, caps[k]);
		assert_int_equal(rb[caps[k]], 0xee);
	}
	assert_int_equal(presto_send(p, sb, 0, 0, 61), 0);
	assert_int_equal(presto_recv(p, NULL, 0, 0, 61, &st), 0);
	assert_int_equal(st.error, 0);
	assert_int_equal(st.len, 0);
	assert_int_equal(presto_send(p, sb, 5, 0, 62), 0);
	assert_int_equal(presto_recv(p, NULL, 0, 0, 62, &st), -EMSGSIZE);
	assert_int_equal(st.error, -EMSGSIZE);
	assert_int_equal(st.len, 0);
	send_recv(p, sb, 5000, 63, NULL, 0, 63, &st);
	assert_int_equal(st.error, -EMSGSIZE);
}

/* More messages than credits, none received yet: back-pressure, nothing lost. */
static void test_credits(void **state)
{
	struct presto *p = *state;
	struct presto_req *s[64];
	struct presto_status st;
	int vals[64], i, v;

	for (i = 0; i < 64; i++) {
		vals[i] = i;
		assert_int_equal(presto_isend(p, &vals[i], sizeof(vals[i]), 0, 70, &s[i]), 0);
	}
	for (i = 0; i < 64; i++) {
		assert_int_equal(presto_recv(p, &v, sizeof(v), 0, 70, &st), 0);
		assert_int_equal(v, i);
	}
	for (i = 0; i < 64; i++)
		assert_int_equal(presto_wait(p, &s[i], &st), 0);
}

/*
 * A rendez-vous from a private copy (the buffer overlaps a send in flight)
 * whose copy is the oldest unused range when it is released, with 16 other
 * ranges cached meanwhile: the release must trim the copy's registration
 * once, and every later transfer still works.
 */
static void test_private_copy_released_oldest(void **state)
{
	struct presto *p = *state;
	static uint8_t sb[4096 + 64], rb[2][4096], big[16][4096], got[16][4096];
	struct presto_stats s0, s1;
	struct presto_status st;
	struct presto_req *a, *b;
	unsigned k;

	assert_int_equal(presto_set_eager_max(p, 1000), 0);
	fill(sb, sizeof(sb), 9);
	presto_get_stats(p, &s0);
	assert_int_equal(presto_isend(p, sb, 4096, 0, 80, &a), 0);
	/* overlaps the range of the first send, which is still in use */
	assert_int_equal(presto_isend(p, sb + 64, 4096, 0, 81, &b), 0);
	presto_get_stats(p, &s1);
	assert_int_equal(s1.bounce - s0.bounce, 1);
	/* 8 rendez-vous, 16 ranges (send and receive side) registered and cached */
	for (k = 0; k < 16; k += 2) {
		fill(big[k], sizeof(big[k]), k);
		send_recv(p, big[k], sizeof(big[k]), 90 + (int)k, got[k], sizeof(got[k]),
			  90 + (int)k, &st);
		assert_int_equal(st.error, 0);
		assert_memory_equal(got[k], big[k], sizeof(big[k]));
	}
	/* the private copy is released last and is the oldest unused range */
	assert_int_equal(presto_recv(p, rb[1], sizeof(rb[1]), 0, 81, &st), 0);
	assert_memory_equal(rb[1], sb + 64, 4096);
	assert_int_equal(presto_wait(p, &b, &st), 0);
	assert_int_equal(st.error, 0);
	assert_int_equal(presto_recv(p, rb[0], sizeof(rb[0]), 0, 80, &st), 0);
	assert_memory_equal(rb[0], sb, 4096);
	assert_int_equal(presto_wait(p, &a, &st), 0);
	assert_int_equal(st.error, 0);
	/* and the cache still serves new ranges */
	for (k = 1; k < 16; k += 2) {
		fill(big[k], sizeof(big[k]), k);
		send_recv(p, big[k], sizeof(big[k]), 90 + (int)k, got[k], sizeof(got[k]),
			  90 + (int)k, &st);
		assert_int_equal(st.error, 0);
		assert_memory_equal(got[k], big[k], sizeof(big[k]));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_tags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_any, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ordering, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eager_rndv_switch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_credits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tags, setup_send, teardown),
		cmocka_unit_test_setup_teardown(test_ordering, setup_send, teardown),
		cmocka_unit_test_setup_teardown(test_eager_rndv_switch, setup_send, teardown),
		cmocka_unit_test_setup_teardown(test_truncation, setup_send, teardown),
		cmocka_unit_test_setup_teardown(test_credits, setup_send, teardown),
		cmocka_unit_test_setup_teardown(test_private_copy_released_oldest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_class, setup, teardown),
		cmocka_unit_test_setup_teardown(test_class, setup_send, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
