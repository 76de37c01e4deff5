/* SPDX-License-Identifier: MIT */
/*
 * app_common — see app_common.h.
 */
#include "app_common.h"

#include "app_cli.h"
#include "dnp_parse.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define APP_MAX_ALLOCS 256u
#define APP_TAG_HELLO 0x48454c4fu /* "HELO": app_greet; programs use small tags */
#define APP_GREET_FIRST_MS 2u
#define APP_GREET_MAX_MS 100u

struct app_alloc_rec {
	void *p;
	bool heap;
};

/* Allocations are few (a handful per program), a small table is enough. */
static struct app_alloc_rec app_allocs[APP_MAX_ALLOCS];

uint64_t app_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int app_env_int(const char *name, int def)
{
	const char *s = getenv(name);
	uint64_t v;

	if (!s || !*s || dnp_parse_u64_max(s, 1000000, &v))
		return def;
	return (int)v;
}

static uint8_t *app_slot(const struct app *a, unsigned i)
{
	return a->mbox + (size_t)i * APP_MBOX_SLOT_SIZE;
}

static int app_post_slot(struct app *a, unsigned i)
{
	uint32_t key;
	int r;

	/* A consumed SEND buffer may or may not still be registered: re-post it either way. */
	r = dnp_unregister(a->d, app_slot(a, i));
	if (r < 0 && r != -ENOENT)
		return r;
	return dnp_register(a->d, app_slot(a, i), APP_MBOX_SLOT_SIZE, DNP_BUF_SEND_TARGET, &key);
}

int app_open(struct app *a, const char *prog)
{
	const char *pp;
	unsigned i;
	uint64_t v;
	int r;

	memset(a, 0, sizeof(*a));
	a->timeout_ms = app_env_int("DNP_APP_TIMEOUT", 30) * 1000;
	a->next_cookie = 1;
	a->debug = app_env_int("DNP_APP_DEBUG", 0);
	/* app_greet's nonce: only needs to differ from the last program's on the port */
	if (getrandom(&a->nonce, sizeof(a->nonce), GRND_NONBLOCK) != (ssize_t)sizeof(a->nonce))
		a->nonce = app_now_ns() ^ ((uint64_t)getpid() << 32);
	a->nonce |= 1; /* never 0, the "not heard yet" of a HELLO */
	r = dnp_open(NULL, &a->d);
	if (r < 0) {
		const char *sock = getenv("DNP_SOCKET");

		if (r == -ENOENT || r == -ECONNREFUSED)
			fprintf(stderr,
				"%s: the daemon is not running: no dnpd listens on %s (%s; start "
				"the program under dnp-run, or set DNP_SOCKET)\n",
				prog, sock && *sock ? sock : "/run/dnp/dnpd.sock",
				sock && *sock ? "$DNP_SOCKET" : "the default, DNP_SOCKET unset");
		else
			fprintf(stderr, "%s: cannot connect to dnpd (DNP_SOCKET=%s): %s\n", prog,
				sock ? sock : "(unset)", dnp_strerror(r));
		return r;
	}
	r = dnp_self(a->d, &a->self, &a->dims);
	if (r < 0) {
		fprintf(stderr, "%s: dnp_self: %s\n", prog, dnp_strerror(r));
		goto err_close;
	}
	a->nnodes = a->dims.x * a->dims.y * a->dims.z;
	a->id = app_id_of(a, a->self);
	a->port = dnp_port(a->d);
	pp = getenv("DNP_PEER_PORT");
	a->peer_port = a->port;
	if (pp && *pp && dnp_parse_u64_max(pp, 255, &v)) {
		r = -EINVAL;
		fprintf(stderr, "%s: DNP_PEER_PORT=%s is not a port (0..255)\n", prog, pp);
		goto err_close;
	}
	if (pp && *pp)
		a->peer_port = (unsigned)v;

	a->stash = calloc(APP_STASH, sizeof(*a->stash));
	a->msgq = calloc(APP_MSGQ, sizeof(*a->msgq));
	a->mbox = app_alloc(a, (size_t)APP_MBOX_SLOTS * APP_MBOX_SLOT_SIZE);
	if (!a->stash || !a->msgq || !a->mbox) {
		r = -ENOMEM;
		fprintf(stderr, "%s: out of memory\n", prog);
		goto err_close;
	}
	for (i = 0; i < APP_MBOX_SLOTS; i++) {
		r = app_post_slot(a, i);
		if (r < 0) {
			fprintf(stderr, "%s: registering SEND slot %u: %s\n", prog, i,
				dnp_strerror(r));
			goto err_close;
		}
		a->mbox_registered++;
	}
	return 0;

err_close:
	app_close(a);
	return r;
}

void app_close(struct app *a)
{
	unsigned i;
	int linger = app_env_int("DNP_APP_LINGER_MS", 0);

	/* test knob: the port stays open, slots posted, as in a slow exit (app_greet) */
	if (a->d && linger > 0)
		usleep((useconds_t)linger * 1000u);
	if (a->d) {
		for (i = 0; i < a->mbox_registered; i++)
			dnp_unregister(a->d, app_slot(a, i));
		if (a->mbox)
			app_free(a, a->mbox);
		dnp_close(a->d);
	}
	free(a->stash);
	free(a->msgq);
	memset(a, 0, sizeof(*a));
}

unsigned app_id_of(const struct app *a, struct dnp_coords c)
{
	return c.x + a->dims.x * (c.y + a->dims.y * c.z);
}

struct dnp_coords app_coords_of(const struct app *a, unsigned id)
{
	struct dnp_coords c;

	c.x = id % a->dims.x;
	c.y = (id / a->dims.x) % a->dims.y;
	c.z = id / (a->dims.x * a->dims.y);
	return c;
}

static unsigned app_ring_dist(unsigned n, unsigned p, unsigned q)
{
	unsigned d = p > q ? p - q : q - p;

	return d < n - d ? d : n - d;
}

unsigned app_distance(const struct app *a, struct dnp_coords p, struct dnp_coords q)
{
	return app_ring_dist(a->dims.x, p.x, q.x) + app_ring_dist(a->dims.y, p.y, q.y) +
	       app_ring_dist(a->dims.z, p.z, q.z);
}

struct dnp_coords app_farthest(const struct app *a, struct dnp_coords c)
{
	struct dnp_coords best = c, q;
	unsigned id, d, bd = 0;

	for (id = 0; id < a->nnodes; id++) {
		q = app_coords_of(a, id);
		d = app_distance(a, c, q);
		if (d > bd) {
			bd = d;
			best = q;
		}
	}
	return best;
}

bool app_coords_eq(struct dnp_coords p, struct dnp_coords q)
{
	return p.x == q.x && p.y == q.y && p.z == q.z;
}

int app_parse_coords(const char *s, struct dnp_coords *c)
{
	unsigned x, y, z;
	int n = 0;

	if (sscanf(s, "%u,%u,%u%n", &x, &y, &z, &n) != 3 || s[n])
		return -EINVAL;
	c->x = x;
	c->y = y;
	c->z = z;
	return 0;
}

void *app_alloc(struct app *a, size_t len)
{
	static const size_t page = 4096;
	bool use_heap = !getenv("DNP_APP_NOHEAP") || !*getenv("DNP_APP_NOHEAP");
	void *p = NULL;
	bool heap = false;
	unsigned i;

	for (i = 0; i < APP_MAX_ALLOCS && app_allocs[i].p; i++)
		;
	if (i == APP_MAX_ALLOCS)
		return NULL;
	if (use_heap && a->d) {
		p = dnp_alloc(a->d, len);
		heap = p != NULL;
	}
	if (!p)
		p = aligned_alloc(page, (len + page - 1) / page * page);
	if (!p)
		return NULL;
	app_allocs[i].p = p;
	app_allocs[i].heap = heap;
	return p;
}

void app_free(struct app *a, void *p)
{
	unsigned i;

	if (!p)
		return;
	for (i = 0; i < APP_MAX_ALLOCS; i++) {
		if (app_allocs[i].p != p)
			continue;
		if (app_allocs[i].heap)
			dnp_free(a->d, p);
		else
			free(p);
		app_allocs[i].p = NULL;
		return;
	}
}

static void app_stash_push(struct app *a, const struct dnp_event *ev)
{
	if (a->stash_n == APP_STASH) {
		a->events_dropped++;
		return;
	}
	a->stash[(a->stash_head + a->stash_n) % APP_STASH] = *ev;
	a->stash_n++;
}

void app_stash_event(struct app *a, const struct dnp_event *ev)
{
	app_stash_push(a, ev);
}

/* Copies a control message out of its mailbox slot and re-posts the slot. */
static void app_mbox_take(struct app *a, const struct dnp_event *ev, unsigned slot)
{
	struct app_msg *m;
	size_t len = ev->len < sizeof(m->c) ? ev->len : sizeof(m->c);
	int r;

	if (a->msgq_n == APP_MSGQ) {
		fprintf(stderr, "app: control queue full, message dropped\n");
	} else {
		m = &a->msgq[a->msgq_n];
		memset(m, 0, sizeof(*m));
		memcpy(&m->c, (const void *)(uintptr_t)ev->va, len);
		m->hops = ev->hops;
		if (m->c.magic == APP_CTRL_MAGIC && m->c.tag == APP_TAG_HELLO && a->greeted)
			; /* a peer's HELLO sent again before it heard our last one: done with */
		else if (m->c.magic == APP_CTRL_MAGIC)
			a->msgq_n++;
		else
			fprintf(stderr, "app: stray SEND of %u bytes from %u,%u,%u ignored\n",
				ev->len, ev->peer_x, ev->peer_y, ev->peer_z);
	}
	r = app_post_slot(a, slot);
	if (r < 0)
		fprintf(stderr, "app: re-posting SEND slot %u: %s\n", slot, dnp_strerror(r));
}

/* True if ev was a control message (consumed). */
static bool app_mbox_event(struct app *a, const struct dnp_event *ev)
{
	uint64_t base = (uintptr_t)a->mbox;
	uint64_t off;

	if (ev->type != DNP_EV_RX_SEND || ev->va < base)
		return false;
	off = ev->va - base;
	if (off >= (uint64_t)APP_MBOX_SLOTS * APP_MBOX_SLOT_SIZE)
		return false;
	app_mbox_take(a, ev, (unsigned)(off / APP_MBOX_SLOT_SIZE));
	return true;
}

static int app_remaining(uint64_t deadline, int timeout_ms)
{
	uint64_t now;

	if (timeout_ms < 0)
		return -1;
	now = app_now_ns();
	if (now >= deadline)
		return 0;
	return (int)((deadline - now + 999999) / 1000000);
}

/*
 * One raw event. Returns 1 with *ev (not a control message), 2 when a control
 * message was taken into the queue (callers waiting for one re-check it),
 * 0 on timeout, -errno.
 */
static int app_raw_event(struct app *a, struct dnp_event *ev, int timeout_ms)
{
	int r = dnp_wait_event(a->d, ev, timeout_ms);

	if (r <= 0)
		return r;
	if (a->debug > 1)
		app_print_event("app", "trace", ev);
	return app_mbox_event(a, ev) ? 2 : 1;
}

int app_next_event(struct app *a, struct dnp_event *ev, int timeout_ms)
{
	uint64_t deadline = app_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000;
	int r;

	if (a->stash_n) {
		*ev = a->stash[a->stash_head];
		a->stash_head = (a->stash_head + 1) % APP_STASH;
		a->stash_n--;
		return 1;
	}
	do {
		r = app_raw_event(a, ev, app_remaining(deadline, timeout_ms));
	} while (r == 2);
	return r;
}

/* Removes and returns the first stashed completion with this cookie. */
static bool app_stash_take_cookie(struct app *a, uint64_t cookie, struct dnp_event *ev)
{
	unsigned i, j, k;

	for (i = 0; i < a->stash_n; i++) {
		k = (a->stash_head + i) % APP_STASH;
		if (a->stash[k].cookie != cookie ||
		    (a->stash[k].type != DNP_EV_TX_DONE && a->stash[k].type != DNP_EV_ERROR &&
		     a->stash[k].type != DNP_EV_GET_DONE))
			continue;
		*ev = a->stash[k];
		for (j = i; j + 1 < a->stash_n; j++)
			a->stash[(a->stash_head + j) % APP_STASH] =
				a->stash[(a->stash_head + j + 1) % APP_STASH];
		a->stash_n--;
		return true;
	}
	return false;
}

static int app_wait_cookie(struct app *a, uint64_t cookie, struct dnp_event *ev, uint64_t deadline)
{
	int r;

	if (app_stash_take_cookie(a, cookie, ev))
		return 1;
	for (;;) {
		r = app_raw_event(a, ev, app_remaining(deadline, 0));
		if (r == 0 && app_now_ns() < deadline)
			continue;
		if (r <= 0)
			return r;
		if (r == 2)
			continue;
		if (ev->cookie == cookie &&
		    (ev->type == DNP_EV_TX_DONE || ev->type == DNP_EV_ERROR ||
		     ev->type == DNP_EV_GET_DONE))
			return 1;
		app_stash_push(a, ev);
	}
}

int app_wait_completion(struct app *a, uint64_t cookie, struct dnp_event *ev)
{
	int r = app_wait_cookie(a, cookie, ev, app_now_ns() + (uint64_t)a->timeout_ms * 1000000);

	return r == 0 ? -ETIMEDOUT : r < 0 ? r : 0;
}

static bool app_retryable(int status)
{
	return status == -ECONNREFUSED || status == -ENOBUFS || status == -ENOENT;
}

int app_ctrl_send(struct app *a, unsigned dst, struct app_ctrl *c)
{
	uint64_t deadline = app_now_ns() + (uint64_t)a->timeout_ms * 1000000;
	struct dnp_event ev;
	uint64_t cookie;
	int r;

	c->magic = APP_CTRL_MAGIC;
	c->src = a->id;
	for (;;) {
		/* Control cookies have the top bit set so they never meet a program's own. */
		cookie = (1ull << 63) | a->next_cookie++;
		r = dnp_send(a->d, c, sizeof(*c), app_coords_of(a, dst), a->peer_port, cookie, 0);
		if (r < 0)
			return r;
		r = app_wait_cookie(a, cookie, &ev, deadline);
		if (a->debug)
			fprintf(stderr, "app: control SEND to node %u: %d %s status %d\n", dst, r,
				r == 1 ? app_ev_name(ev.type) : "", r == 1 ? ev.status : 0);
		if (r < 0)
			return r;
		if (r == 0)
			return -ETIMEDOUT;
		if (ev.type == DNP_EV_TX_DONE)
			return 0;
		if (!app_retryable(ev.status))
			return ev.status ? ev.status : -EIO;
		if (app_now_ns() >= deadline)
			return ev.status;
		usleep(1000); /* the peer is not ready yet: port not open or no slot posted */
	}
}

static bool app_msgq_take(struct app *a, unsigned src, uint32_t tag, struct app_msg *out)
{
	unsigned i;

	for (i = 0; i < a->msgq_n; i++) {
		if (a->msgq[i].c.tag != tag || (src != ~0u && a->msgq[i].c.src != src))
			continue;
		*out = a->msgq[i];
		memmove(&a->msgq[i], &a->msgq[i + 1], (a->msgq_n - i - 1) * sizeof(a->msgq[0]));
		a->msgq_n--;
		return true;
	}
	return false;
}

int app_ctrl_recv_nowait(struct app *a, unsigned src, uint32_t tag, struct app_msg *out)
{
	struct dnp_event ev;
	int r;

	if (app_msgq_take(a, src, tag, out))
		return 0;
	r = app_raw_event(a, &ev, 0);
	if (r < 0)
		return r;
	if (r == 1)
		app_stash_push(a, &ev);
	return app_msgq_take(a, src, tag, out) ? 0 : -EAGAIN;
}

int app_ctrl_recv(struct app *a, unsigned src, uint32_t tag, struct app_msg *out)
{
	uint64_t deadline = app_now_ns() + (uint64_t)a->timeout_ms * 1000000;
	struct dnp_event ev;
	int r;

	for (;;) {
		if (app_msgq_take(a, src, tag, out))
			return 0;
		r = app_raw_event(a, &ev, app_remaining(deadline, 0));
		if (r < 0)
			return r;
		if (r == 0 && app_now_ns() >= deadline)
			return -ETIMEDOUT;
		if (r == 1)
			app_stash_push(a, &ev);
	}
}

/* What app_greet knows of one peer. */
struct app_greet_peer {
	unsigned id;
	uint64_t heard;       /* its nonce (0: not heard yet) */
	uint64_t echoed;      /* the nonce our last delivered HELLO carried for it */
	bool sent, confirmed; /* a HELLO of ours delivered; it echoed our nonce */
	uint64_t resend_at;
	unsigned backoff_ms;
};

static bool app_greet_done(const struct app_greet_peer *p)
{
	return p->heard && p->confirmed && p->sent && p->echoed == p->heard;
}

/* Takes the HELLOs queued so far into the peers' state. */
static void app_greet_take(struct app *a, struct app_greet_peer *ps, unsigned n)
{
	struct app_msg m;

	while (app_msgq_take(a, ~0u, APP_TAG_HELLO, &m)) {
		for (unsigned i = 0; i < n; i++) {
			struct app_greet_peer *p = &ps[i];

			if (p->id != m.c.src || m.c.a == 0)
				continue;
			if (m.c.a != p->heard) { /* first word from this program */
				p->heard = m.c.a;
				p->confirmed = false;
			}
			p->confirmed |= m.c.b == a->nonce;
		}
	}
}

int app_greet(struct app *a, const unsigned *ids, unsigned n)
{
	uint64_t deadline = app_now_ns() + (uint64_t)a->timeout_ms * 1000000;
	struct app_greet_peer *ps = calloc(n ? n : 1, sizeof(*ps));
	int r = 0;

	if (!ps)
		return -ENOMEM;
	a->greeted = false;
	for (unsigned i = 0; i < n; i++)
		ps[i] = (struct app_greet_peer){ .id = ids[i], .backoff_ms = APP_GREET_FIRST_MS };
	for (;;) {
		uint64_t now, wake = UINT64_MAX;
		struct dnp_event ev;
		unsigned left = 0;

		app_greet_take(a, ps, n);
		for (unsigned i = 0; i < n; i++) {
			struct app_greet_peer *p = &ps[i];
			struct app_ctrl c;

			if (app_greet_done(p))
				continue;
			now = app_now_ns();
			if (!p->sent || p->echoed != p->heard || now >= p->resend_at) {
				memset(&c, 0, sizeof(c));
				c.tag = APP_TAG_HELLO;
				c.a = a->nonce;
				c.b = p->heard;
				r = app_ctrl_send(a, p->id, &c);
				if (r < 0)
					break;
				p->sent = true;
				p->echoed = c.b;
				/* delivered, but maybe to the program before the peer's current one */
				p->resend_at = app_now_ns() + (uint64_t)p->backoff_ms * 1000000;
				if (p->backoff_ms < APP_GREET_MAX_MS)
					p->backoff_ms *= 2;
				app_greet_take(a, ps, n);
				if (app_greet_done(p))
					continue;
			}
			left++;
			if (p->resend_at < wake)
				wake = p->resend_at;
		}
		if (r < 0 || left == 0)
			break;
		now = app_now_ns();
		if (now >= deadline) {
			r = -ETIMEDOUT;
			break;
		}
		if (wake > deadline)
			wake = deadline;
		/* one event (or the next resend): a HELLO is queued, anything else stashed */
		r = app_raw_event(a, &ev, wake > now ? (int)((wake - now + 999999) / 1000000) : 0);
		if (r == 1)
			app_stash_push(a, &ev);
		if (r < 0)
			break;
		r = 0;
	}
	free(ps);
	if (r == 0)
		a->greeted = true;
	if (a->debug)
		fprintf(stderr, "app: greeted %u node(s): %d\n", n, r);
	return r;
}

int app_run_pair(struct app *a, const struct app_bench_opts *o, const char *prog, const char *hint,
		 int (*run)(struct app *a, void *ctx, struct dnp_coords peer, bool is_a), void *ctx)
{
	struct dnp_coords peer, origin = { 0, 0, 0 };
	int r = app_pick_pair(a, o, prog, hint, &peer);
	unsigned peer_id;

	if (r > 0) {
		peer_id = app_id_of(a, peer);
		r = app_greet(a, &peer_id, 1);
		if (r < 0)
			fprintf(stderr, "%s: greeting node %u,%u,%u: %s\n", prog, peer.x, peer.y,
				peer.z, dnp_strerror(r));
		else
			r = run(a, ctx, peer, app_coords_eq(a->self, origin));
		r = r < 0 ? 1 : 0;
	} else {
		r = r < 0 ? 2 : 0; /* 0: not part of this measurement */
	}
	app_close(a);
	return r;
}

int app_ctrl_exchange_all(struct app *a, const struct app_ctrl *mine, struct app_msg *theirs)
{
	struct app_ctrl c;
	struct app_msg m;
	unsigned id;
	int r;

	if (!a->greeted) {
		unsigned *ids = calloc(a->nnodes, sizeof(*ids)), n = 0;

		if (!ids)
			return -ENOMEM;
		for (id = 0; id < a->nnodes; id++)
			if (id != a->id)
				ids[n++] = id;
		r = app_greet(a, ids, n);
		free(ids);
		if (r < 0)
			return r;
	}
	for (id = 0; id < a->nnodes; id++) {
		if (id == a->id)
			continue;
		c = *mine;
		r = app_ctrl_send(a, id, &c);
		if (r < 0)
			return r;
	}
	for (id = 0; id < a->nnodes; id++) {
		if (id == a->id)
			continue;
		r = app_ctrl_recv(a, id, mine->tag, theirs ? &theirs[id] : &m);
		if (r < 0)
			return r;
	}
	return 0;
}

int app_offer_buffer(struct app *a, unsigned dst, uint32_t tag, void *buf, size_t len,
		     const char *prog)
{
	struct app_ctrl c;
	uint32_t key;
	int r = dnp_register(a->d, buf, len, DNP_BUF_PUT_TARGET, &key);

	if (r < 0) {
		fprintf(stderr, "%s: register %zu bytes: %s\n", prog, len, dnp_strerror(r));
		return r;
	}
	memset(&c, 0, sizeof(c));
	c.tag = tag;
	c.a = (uintptr_t)buf;
	c.b = key;
	r = app_ctrl_send(a, dst, &c);
	if (r < 0)
		fprintf(stderr, "%s: sending the buffer address to node %u: %s\n", prog, dst,
			dnp_strerror(r));
	return r;
}

int app_barrier(struct app *a, uint32_t tag)
{
	struct app_ctrl c;

	memset(&c, 0, sizeof(c));
	c.tag = tag;
	return app_ctrl_exchange_all(a, &c, NULL);
}

int app_pick_pair(const struct app *a, const struct app_bench_opts *o, const char *prog,
		  const char *hint, struct dnp_coords *peer)
{
	struct dnp_coords origin = { 0, 0, 0 }, p = { 1 % a->dims.x, 0, 0 };

	if (o->have_peer)
		p = o->peer;
	if (!app_coords_eq(a->self, origin) && !app_coords_eq(a->self, p))
		return 0;
	if (p.x >= a->dims.x || p.y >= a->dims.y || p.z >= a->dims.z || app_coords_eq(p, origin)) {
		fprintf(stderr, "%s: peer %u,%u,%u is not another node of the %ux%ux%u torus%s\n",
			prog, p.x, p.y, p.z, a->dims.x, a->dims.y, a->dims.z, hint ? hint : "");
		return -EINVAL;
	}
	*peer = app_coords_eq(a->self, origin) ? p : origin;
	return 1;
}

/* splitmix64: a cheap, well-mixed generator for the data patterns. */
static uint64_t app_mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t app_seed(uint32_t src, uint32_t dst, uint64_t size, uint32_t salt)
{
	uint64_t s = ((uint64_t)src << 40) ^ ((uint64_t)dst << 20) ^ size, t = salt;

	/* every bit of the salt counts (per-message salts of --verify run to millions) */
	s ^= app_mix(&t);
	app_mix(&s);
	return s;
}

void app_pattern_fill(void *buf, size_t len, uint32_t src, uint32_t dst, uint64_t size,
		      uint32_t salt)
{
	uint64_t s = app_seed(src, dst, size, salt), w;
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		w = app_mix(&s);
		memcpy(p + i, &w, 8);
	}
	if (i < len) {
		w = app_mix(&s);
		memcpy(p + i, &w, len - i);
	}
}

long long app_pattern_check(const void *buf, size_t len, uint32_t src, uint32_t dst, uint64_t size,
			    uint32_t salt)
{
	uint64_t s = app_seed(src, dst, size, salt), w;
	const uint8_t *p = buf;
	uint8_t want[8];
	size_t i, j, n;

	for (i = 0; i < len; i += 8) {
		w = app_mix(&s);
		memcpy(want, &w, 8);
		n = len - i < 8 ? len - i : 8;
		if (memcmp(p + i, want, n) == 0)
			continue;
		for (j = 0; j < n; j++)
			if (p[i + j] != want[j])
				return (long long)(i + j);
	}
	return -1;
}

int app_parse_size(const char *s, uint64_t *out)
{
	return dnp_parse_size(s, out);
}

int app_parse_sizes(const char *s, uint64_t *sizes, unsigned max)
{
	return app_cli_sizes(s, sizes, max);
}

int app_parse_count(const char *s, unsigned min, unsigned *out)
{
	uint64_t v;
	int r = dnp_parse_u64_max(s, UINT32_MAX, &v);

	if (r)
		return r;
	if (v < min)
		return -ERANGE;
	*out = (unsigned)v;
	return 0;
}

static int app_cmp_double(const void *p, const void *q)
{
	double x = *(const double *)p, y = *(const double *)q;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile (per mille) of n sorted samples. */
static double app_rank(const double *v, unsigned n, unsigned permille)
{
	uint64_t k = ((uint64_t)permille * n + 999) / 1000;

	return v[(k ? k : 1) - 1];
}

void app_stats_compute(double *v, unsigned n, struct app_stats *st)
{
	double sum = 0, sq = 0;
	unsigned i;

	memset(st, 0, sizeof(*st));
	if (!n)
		return;
	qsort(v, n, sizeof(*v), app_cmp_double);
	for (i = 0; i < n; i++)
		sum += v[i];
	st->min = v[0];
	st->max = v[n - 1];
	st->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	st->mean = sum / n;
	for (i = 0; i < n; i++)
		sq += (v[i] - st->mean) * (v[i] - st->mean);
	st->stdev = n > 1 ? sqrt(sq / (n - 1)) : 0;
	st->p99 = app_rank(v, n, 990);
	st->p999 = app_rank(v, n, 999);
}

const char *app_ev_name(unsigned type)
{
	static const char *const names[] = {
		[DNP_EV_TX_DONE] = "TX_DONE", [DNP_EV_RX_PUT] = "RX_PUT",
		[DNP_EV_RX_SEND] = "RX_SEND", [DNP_EV_GET_DONE] = "GET_DONE",
		[DNP_EV_ERROR] = "ERROR",     [DNP_EV_LINK] = "LINK",
	};

	if (type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "?";
}

void app_print_event(const char *prog, const char *what, const struct dnp_event *ev)
{
	fprintf(stderr,
		"%s: %s: event %s op %u peer %u,%u,%u port %u hops %u status %d (%s) len %u "
		"va 0x%llx cookie 0x%llx\n",
		prog, what, app_ev_name(ev->type), ev->op, ev->peer_x, ev->peer_y, ev->peer_z,
		ev->port, ev->hops, ev->status, ev->status ? dnp_strerror(ev->status) : "ok",
		ev->len, (unsigned long long)ev->va, (unsigned long long)ev->cookie);
}

void app_bench_defaults(struct app_bench_opts *o, unsigned warmup)
{
	memset(o, 0, sizeof(*o));
	o->warmup = warmup;
	for (uint64_t s = 8; s <= (2u << 20); s *= 4)
		o->sizes[o->nsizes++] = s;
	o->sizes[o->nsizes++] = 4u << 20;
}

int app_bench_opt(struct app_bench_opts *o, int c, const char *arg)
{
	int r;

	switch (c) {
	case 'p':
		if (app_parse_coords(arg, &o->peer) < 0)
			return -EINVAL;
		o->have_peer = true;
		return 1;
	case 's':
		r = app_parse_sizes(arg, o->sizes, APP_MAX_SIZES);
		if (r < 0)
			return r;
		o->nsizes = (unsigned)r;
		return 1;
	case 'n':
		r = app_parse_count(arg, 1, &o->iters);
		return r ? r : 1;
	case 'w':
		r = app_parse_count(arg, 0, &o->warmup);
		return r ? r : 1;
	case 'c':
		o->csv = true;
		return 1;
	case 'v':
		o->verify = true;
		return 1;
	case APP_OPT_TC:
		r = app_parse_count(arg, 0, &o->tc);
		return r ? r : o->tc > DNP_TC_MAX ? -EINVAL : 1;
	default:
		return 0;
	}
}

/* "--name" of the option with getopt value c. */
static const char *app_opt_name(const struct option *lo, int c, char *buf, size_t len)
{
	for (; lo->name; lo++)
		if (lo->val == c) {
			snprintf(buf, len, "--%s", lo->name);
			return buf;
		}
	snprintf(buf, len, "-%c", c);
	return buf;
}

int app_bench_parse(int argc, char **argv, const struct app_bench_cli *cli,
		    struct app_bench_opts *o, void *ctx)
{
	static const struct option shared[] = {
		{ "peer", required_argument, NULL, 'p' },
		{ "sizes", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "csv", no_argument, NULL, 'c' },
		{ "verify", no_argument, NULL, 'v' },
		{ "tc", required_argument, NULL, APP_OPT_TC },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
	};
	struct option lo[sizeof(shared) / sizeof(shared[0]) + 2];
	const size_t ns = sizeof(shared) / sizeof(shared[0]);
	char shorts[64], name[64];
	size_t n = 0;
	int c, r;

	memcpy(lo, shared, sizeof(shared));
	if (cli->extra.name)
		lo[ns + n++] = cli->extra;
	memset(&lo[ns + n], 0, sizeof(lo[0]));
	snprintf(shorts, sizeof(shorts), ":p:s:n:w:cvhV%s",
		 cli->extra_short ? cli->extra_short : "");
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		if (c == 'h' || c == 'V' || c == ':' || c == '?')
			return app_cli_other(cli->prog, cli->usage, c, argv);
		r = app_bench_opt(o, c, optarg);
		if (r == 0 && cli->opt)
			r = cli->opt(ctx, c, optarg) < 0 ? -EINVAL : 1;
		if (r < 0)
			return app_cli_bad_value(cli->prog, cli->usage,
						 app_opt_name(lo, c, name, sizeof(name)), optarg);
		if (r == 0)
			return app_cli_usage_error(cli->prog, cli->usage, "unknown option '%s'",
						   app_opt_name(lo, c, name, sizeof(name)));
	}
	if (optind != argc)
		return app_cli_usage_error(cli->prog, cli->usage, "unexpected argument '%s'",
					   argv[optind]);
	return -1;
}

unsigned app_bench_iters(const struct app_bench_opts *o, uint64_t size, uint64_t budget,
			 unsigned lo, unsigned hi)
{
	uint64_t n;

	if (o->iters)
		return o->iters;
	n = budget / (size ? size : 1);
	return n > hi ? hi : n < lo ? lo : (unsigned)n;
}

void app_bench_usage_common(FILE *f)
{
	fprintf(f, "  LIST: comma-separated sizes, K/M/G suffixes (default 8,32,...,2M,4M).\n"
		   "  --csv: machine-readable rows. --help, --version.\n"
		   "  --tc N: the measured PUTs in traffic class N, 0..7 (default 0).\n"
		   "  Run it under dnp-run; instances on other nodes exit 0.\n");
}

uint64_t app_bench_max_size(const struct app_bench_opts *o)
{
	uint64_t m = 1;

	for (unsigned i = 0; i < o->nsizes; i++)
		if (o->sizes[i] > m)
			m = o->sizes[i];
	return m;
}
