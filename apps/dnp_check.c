/* SPDX-License-Identifier: MIT */
/*
 * dnp_check — functional checks of a running SoftDNP torus, one mode per
 * scenario of the integration tests. Run it under dnp-run: node A is
 * (0,0,0), node B its +X neighbour (or --peer); other nodes exit 0 unless
 * the mode uses every node.
 *
 *   send-order        A streams SENDs with a bounded window; B checks they
 *                     arrive complete and in order
 *   get               A GETs ranges of B's GET-source buffer and checks the
 *                     bytes; a bad key and an overrun fail with -EACCES/-ERANGE
 *   bad-key           PUT with a wrong key: A gets ERROR -EACCES, B's buffer
 *                     is unchanged, a following good PUT works
 *   out-of-bounds     PUT running past the end of B's buffer: ERROR -ERANGE,
 *                     buffer unchanged
 *   outstanding-1000  A keeps up to 1000 PUTs in flight; every one completes
 *                     once and every byte arrives
 *   blocking-20000    A issues 20,000 blocking PUTs without reading a single
 *                     event (libdnp must not deadlock: it stashes events while
 *                     it waits for ring room), then reads all completions:
 *                     each exactly once, in order; B verifies every word
 *   bad-args          invalid calls return -EINVAL (or the documented errno)
 *                     and the session still works afterwards (node A only)
 *   kill-survivor     A starts a second application on its node (kill-victim)
 *                     that streams PUTs to B, kills it with SIGKILL mid-traffic,
 *                     then completes its own transfers through the same daemon
 *   farthest          every node PUTs to its farthest node; hop counts in the
 *                     RX events (and of all-pairs SENDs) equal the torus distance
 *   link-drill        fault drill (tests/integration/dpdk-drill.sh): A streams
 *                     PUTs to B (window 64) while the test breaks the link
 *                     under them; every PUT must complete exactly once, as
 *                     TX_DONE or as an ERROR event (nothing hangs, nothing is
 *                     silently lost), and once the break is known the PUTs
 *                     must go on through the detour (docs/routing.md): the
 *                     500 issued after it all end in TX_DONE.
 *                     Synchronised with the test by files named from
 *                     $DNP_DRILL_FLAG: A creates FLAG once 200 PUTs completed
 *                     (content: its DNP_SOCKET); the test breaks the link and
 *                     creates FLAG.cut once node A's daemon reports it BROKEN;
 *                     A creates FLAG.broken when the PUTs after it completed
 *                     and every PUT was reaped, then waits for the test's
 *                     FLAG.checked (it read `dnpctl stats` meanwhile) and
 *                     creates FLAG.done, on which B exits.
 *   slow-drain        B (1,0,0) stops draining its events while A floods it
 *                     with PUTs and, interleaved, PUTs to D (1,1,0) that cross
 *                     B on the same link: once B's queues are full, A's PUTs
 *                     to B fail with -EOVERFLOW (after the daemon's bound,
 *                     then at once) while every PUT to D completes; every
 *                     PUT completes exactly once, B gets exactly the RX
 *                     events of the PUTs that succeeded. B resumes when A
 *                     creates $DNP_CHECK_FLAG (content: that count).
 *   kill-mid-send     A starts a second application on its node
 *                     (kill-send-victim) that SENDs 8 MiB to a second port
 *                     of B, of which only the first half can be read (the
 *                     rest is unmapped: the message stops in the middle),
 *                     and kills it with SIGKILL. B's port gets exactly one
 *                     DNP_EV_RX_ERROR -ETIMEDOUT for the SEND (after the
 *                     daemon's reassembly bound), its buffer comes back, and
 *                     A's next SEND lands in that same buffer.
 *   private-fault     B's PUT target is 1 MiB of its own memory outside the
 *                     shared heap (the daemon writes it with process_vm_writev,
 *                     gathered), with one page in its middle unmapped after
 *                     registration. A's 1 MiB PUT into it fails with -EFAULT
 *                     and B gets no RX event for it; A's PUT into the first
 *                     quarter of the same buffer, and a 1 MiB PUT into a
 *                     second private buffer, complete and arrive intact.
 *
 * Exit status 0 when every check passed, 1 when one failed, 2 on bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app_common.h"

#define PROG "dnp_check"

enum {
	TAG_ADDR = 21,
	TAG_DONE,
	TAG_VERDICT,
	TAG_SEQ,
	TAG_CREDIT,
	TAG_BARRIER,
	TAG_FAR_DONE,
	TAG_SLOW,
	TAG_PORT2,
	TAG_RXERR,
};

struct chk {
	struct app a;
	struct dnp_coords peer;
	unsigned peer_id;
	bool is_a;
	unsigned fails;
	uint64_t cookie;
};

static void fail(struct chk *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(struct chk *k, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	k->fails++;
}

static void *xalloc(struct chk *k, size_t len)
{
	void *p = app_alloc(&k->a, len);

	if (!p) {
		fprintf(stderr, PROG ": out of memory (%zu bytes)\n", len);
		exit(1);
	}
	return p;
}

static int reg(struct chk *k, void *p, size_t len, unsigned flags, uint32_t *key)
{
	int r = dnp_register(k->a.d, p, len, flags, key);

	if (r < 0)
		fail(k, "register %zu bytes (flags %#x): %s", len, flags, dnp_strerror(r));
	return r;
}

/* A and B swap a message of tag TAG_ADDR (a..d as the mode wants). */
static int exchange(struct chk *k, const struct app_ctrl *mine, struct app_msg *theirs)
{
	struct app_ctrl c = *mine;
	int r;

	c.tag = TAG_ADDR;
	r = app_ctrl_send(&k->a, k->peer_id, &c);
	if (r == 0)
		r = app_ctrl_recv(&k->a, k->peer_id, TAG_ADDR, theirs);
	if (r < 0)
		fail(k, "handshake with node %u: %s", k->peer_id, dnp_strerror(r));
	return r;
}

static int send_tag(struct chk *k, unsigned dst, uint32_t tag, uint64_t val)
{
	struct app_ctrl c;
	int r;

	memset(&c, 0, sizeof(c));
	c.tag = tag;
	c.a = val;
	r = app_ctrl_send(&k->a, dst, &c);
	if (r < 0)
		fail(k, "control message %u to node %u: %s", tag, dst, dnp_strerror(r));
	return r;
}

static int recv_tag(struct chk *k, unsigned src, uint32_t tag, uint64_t *val)
{
	struct app_msg m;
	int r = app_ctrl_recv(&k->a, src, tag, &m);

	if (r < 0) {
		fail(k, "control message %u from node %u: %s", tag, src, dnp_strerror(r));
		return r;
	}
	if (val)
		*val = m.c.a;
	return 0;
}

/* A waits for B's verdict (number of failures B found). */
static void verdict_a(struct chk *k)
{
	uint64_t v;

	if (recv_tag(k, k->peer_id, TAG_VERDICT, &v) == 0 && v)
		fail(k, "node %u reports %llu failed checks", k->peer_id, (unsigned long long)v);
}

/* Issues a PUT and waits for its completion; returns the event status (0 ok). */
static int put_wait(struct chk *k, const void *src, size_t len, struct dnp_coords dst, uint64_t va,
		    uint32_t key, struct dnp_event *ev)
{
	uint64_t cookie = ++k->cookie;
	int r;

	r = dnp_put(k->a.d, src, len, dst, k->a.peer_port, va, key, cookie, 0);
	if (r < 0)
		return r;
	r = app_wait_completion(&k->a, cookie, ev);
	if (r < 0)
		return r;
	return ev->type == DNP_EV_TX_DONE ? 0 : ev->status ? ev->status : -EIO;
}

static void expect_status(struct chk *k, const char *what, int got, int want)
{
	if (got == want)
		printf("ok: %s -> %s\n", what, want ? dnp_strerror(want) : "completed");
	else
		fail(k, "%s: got %d (%s), expected %d (%s)", what, got, dnp_strerror(got), want,
		     dnp_strerror(want));
}

/* Discards queued events (RX reports, completions already accounted for). */
static unsigned drain(struct chk *k, unsigned type)
{
	struct dnp_event ev;
	unsigned n = 0;

	while (app_next_event(&k->a, &ev, 0) == 1)
		n += ev.type == type;
	return n;
}

/* ---- send-order ------------------------------------------------------- */

#define SEQ_N 600u
#define SEQ_WINDOW 40u /* < APP_MBOX_SLOTS: B always has a slot posted */
#define SEQ_CREDIT_EVERY 10u

static size_t seq_len(unsigned i)
{
	return offsetof(struct app_ctrl, payload) + (i * 37u) % (APP_CTRL_PAYLOAD + 1);
}

static int mode_send_order_a(struct chk *k)
{
	struct app *a = &k->a;
	struct app_ctrl *msgs = xalloc(k, SEQ_N * sizeof(*msgs));
	unsigned sent = 0, credit = 0, done = 0, i;
	struct dnp_event ev;
	struct app_msg m;
	int r;

	for (i = 0; i < SEQ_N; i++) {
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].magic = APP_CTRL_MAGIC;
		msgs[i].tag = TAG_SEQ;
		msgs[i].src = a->id;
		msgs[i].seq = i;
		msgs[i].plen = (uint32_t)(seq_len(i) - offsetof(struct app_ctrl, payload));
		app_pattern_fill(msgs[i].payload, msgs[i].plen, a->id, k->peer_id, i, 4);
	}
	/* B's mailbox must be posted before the stream starts (else -ENOBUFS). */
	memset(&m.c, 0, sizeof(m.c));
	if (exchange(k, &m.c, &m) < 0)
		return -EIO;
	while (done < SEQ_N) {
		if (sent < SEQ_N && sent - credit < SEQ_WINDOW) {
			r = dnp_send(a->d, &msgs[sent], seq_len(sent), k->peer, a->peer_port,
				     1000 + sent, 0);
			if (r < 0) {
				fail(k, "send %u: %s", sent, dnp_strerror(r));
				return r;
			}
			sent++;
			continue;
		}
		/* Take B's credits as they come, without blocking on them. */
		while (app_ctrl_recv_nowait(a, k->peer_id, TAG_CREDIT, &m) == 0)
			credit = m.c.a > credit ? (unsigned)m.c.a : credit;
		r = app_next_event(a, &ev, 10);
		if (r < 0) {
			fail(k, "wait_event: %s", dnp_strerror(r));
			return r;
		}
		if (r == 0)
			continue;
		if (ev.type == DNP_EV_ERROR) {
			app_print_event(PROG, "send-order", &ev);
			fail(k, "SEND %llu failed", (unsigned long long)ev.cookie - 1000);
			return -EIO;
		}
		if (ev.type == DNP_EV_TX_DONE && ev.cookie >= 1000)
			done++;
	}
	printf("ok: %u SENDs of %zu..%zu bytes completed (window %u)\n", SEQ_N, seq_len(0),
	       sizeof(struct app_ctrl), SEQ_WINDOW);
	verdict_a(k);
	return 0;
}

static int mode_send_order_b(struct chk *k)
{
	struct app *a = &k->a;
	unsigned i, bad = 0;
	struct app_msg m;
	size_t want_plen;
	int r;

	memset(&m.c, 0, sizeof(m.c));
	if (exchange(k, &m.c, &m) < 0)
		return -EIO;
	for (i = 0; i < SEQ_N; i++) {
		r = app_ctrl_recv(a, k->peer_id, TAG_SEQ, &m);
		if (r < 0) {
			fail(k, "SEND %u never arrived: %s", i, dnp_strerror(r));
			return r;
		}
		want_plen = seq_len(i) - offsetof(struct app_ctrl, payload);
		if (m.c.seq != i) {
			fail(k, "SEND %u arrived in place %u", m.c.seq, i);
			bad++;
		} else if (m.c.plen != want_plen ||
			   app_pattern_check(m.c.payload, m.c.plen, k->peer_id, a->id, i, 4) >= 0) {
			fail(k, "SEND %u: content wrong (payload %u bytes, expected %zu)", i,
			     m.c.plen, want_plen);
			bad++;
		}
		if ((i + 1) % SEQ_CREDIT_EVERY == 0 &&
		    send_tag(k, k->peer_id, TAG_CREDIT, i + 1) < 0)
			return -EIO;
	}
	if (!bad)
		printf("ok: %u SENDs arrived in order with the right content\n", SEQ_N);
	return send_tag(k, k->peer_id, TAG_VERDICT, k->fails);
}

/* ---- get -------------------------------------------------------------- */

#define GET_SRC_LEN (1048576u + 3u)

static int mode_get_a(struct chk *k)
{
	static const struct {
		uint64_t off, len;
	} ranges[] = { { 0, 1 }, { 5, 4096 }, { 100, 70000 }, { 4095, 8193 }, { 0, GET_SRC_LEN } };
	struct app *a = &k->a;
	uint8_t *dst = xalloc(k, GET_SRC_LEN), *want = xalloc(k, GET_SRC_LEN);
	struct app_ctrl c;
	struct app_msg m;
	struct dnp_event ev;
	uint64_t rva, cookie;
	uint32_t key, rkey;
	unsigned i;
	int r;

	app_pattern_fill(want, GET_SRC_LEN, k->peer_id, 0, GET_SRC_LEN, 5);
	if (reg(k, dst, GET_SRC_LEN, DNP_BUF_PUT_TARGET, &key) < 0)
		return -EIO;
	memset(&c, 0, sizeof(c));
	if (exchange(k, &c, &m) < 0)
		return -EIO;
	rva = m.c.a;
	rkey = (uint32_t)m.c.b;
	for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		memset(dst, 0xee, GET_SRC_LEN);
		cookie = ++k->cookie;
		r = dnp_get(a->d, dst + ranges[i].off, ranges[i].len, key, k->peer, a->peer_port,
			    rva + ranges[i].off, rkey, cookie, 0);
		if (r == 0)
			r = app_wait_completion(a, cookie, &ev);
		if (r < 0 || ev.type != DNP_EV_GET_DONE) {
			if (r == 0)
				app_print_event(PROG, "get", &ev);
			fail(k, "GET of %llu bytes at %llu: %s", (unsigned long long)ranges[i].len,
			     (unsigned long long)ranges[i].off, dnp_strerror(r ? r : ev.status));
			continue;
		}
		if (memcmp(dst + ranges[i].off, want + ranges[i].off, ranges[i].len) ||
		    (ranges[i].off && dst[ranges[i].off - 1] != 0xee) ||
		    (ranges[i].off + ranges[i].len < GET_SRC_LEN &&
		     dst[ranges[i].off + ranges[i].len] != 0xee))
			fail(k, "GET of %llu bytes at %llu: wrong bytes",
			     (unsigned long long)ranges[i].len, (unsigned long long)ranges[i].off);
		else
			printf("ok: GET %llu bytes at offset %llu\n",
			       (unsigned long long)ranges[i].len,
			       (unsigned long long)ranges[i].off);
	}
	/* A wrong remote key and a range past the end of the source fail. */
	cookie = ++k->cookie;
	r = dnp_get(a->d, dst, 64, key, k->peer, a->peer_port, rva, rkey ^ 0x5a5a5a5au, cookie, 0);
	if (r == 0)
		r = app_wait_completion(a, cookie, &ev);
	expect_status(k, "GET with a wrong key",
		      r                       ? r :
		      ev.type == DNP_EV_ERROR ? ev.status :
						0,
		      -EACCES);
	cookie = ++k->cookie;
	r = dnp_get(a->d, dst, 4096, key, k->peer, a->peer_port, rva + GET_SRC_LEN - 100, rkey,
		    cookie, 0);
	if (r == 0)
		r = app_wait_completion(a, cookie, &ev);
	expect_status(k, "GET past the end of the source",
		      r                       ? r :
		      ev.type == DNP_EV_ERROR ? ev.status :
						0,
		      -ERANGE);
	send_tag(k, k->peer_id, TAG_DONE, 0);
	verdict_a(k);
	dnp_unregister(a->d, dst);
	return 0;
}

static int mode_get_b(struct chk *k)
{
	uint8_t *src = xalloc(k, GET_SRC_LEN);
	struct app_ctrl c;
	struct app_msg m;
	uint32_t key;

	app_pattern_fill(src, GET_SRC_LEN, k->a.id, 0, GET_SRC_LEN, 5);
	if (reg(k, src, GET_SRC_LEN, DNP_BUF_GET_SOURCE, &key) < 0)
		return -EIO;
	memset(&c, 0, sizeof(c));
	c.a = (uintptr_t)src;
	c.b = key;
	if (exchange(k, &c, &m) < 0)
		return -EIO;
	if (recv_tag(k, k->peer_id, TAG_DONE, NULL) < 0)
		return -EIO;
	if (app_pattern_check(src, GET_SRC_LEN, k->a.id, 0, GET_SRC_LEN, 5) >= 0)
		fail(k, "GET modified the source buffer");
	drain(k, 0);
	return send_tag(k, k->peer_id, TAG_VERDICT, k->fails);
}

/* ---- bad-key, out-of-bounds ------------------------------------------- */

#define TGT_LEN 4096u
#define TGT_FILL 0x5a

static int mode_reject_a(struct chk *k, bool badkey)
{
	uint8_t *src = xalloc(k, 2 * TGT_LEN);
	struct app_ctrl c;
	struct app_msg m;
	struct dnp_event ev;
	uint64_t tva, gva;
	uint32_t tkey, gkey;
	int r;

	app_pattern_fill(src, 2 * TGT_LEN, k->a.id, k->peer_id, TGT_LEN, 6);
	memset(&c, 0, sizeof(c));
	if (exchange(k, &c, &m) < 0)
		return -EIO;
	tva = m.c.a;
	tkey = (uint32_t)m.c.b;
	gva = m.c.c;
	gkey = (uint32_t)m.c.d;
	if (badkey) {
		r = put_wait(k, src, 64, k->peer, tva, tkey ^ 0x00ff00ffu, &ev);
		expect_status(k, "PUT with a wrong key", r, -EACCES);
		r = put_wait(k, src, 64, k->peer, tva, 0, &ev);
		expect_status(k, "PUT with key 0", r, -EACCES);
	} else {
		r = put_wait(k, src, 100, k->peer, tva + TGT_LEN - 50, tkey, &ev);
		expect_status(k, "PUT of 100 bytes at 50 before the end", r, -ERANGE);
		r = put_wait(k, src, 2 * TGT_LEN, k->peer, tva, tkey, &ev);
		expect_status(k, "PUT of twice the buffer length", r, -ERANGE);
		r = put_wait(k, src, 1, k->peer, tva + TGT_LEN - 1, tkey, &ev);
		expect_status(k, "PUT of the last byte (in bounds)", r, 0);
	}
	/* The session and the path still work after the rejected commands. */
	r = put_wait(k, src, TGT_LEN, k->peer, gva, gkey, &ev);
	expect_status(k, "PUT of 4096 bytes with the right key", r, 0);
	send_tag(k, k->peer_id, TAG_DONE, badkey ? 0 : 1);
	verdict_a(k);
	return 0;
}

static int mode_reject_b(struct chk *k, bool badkey)
{
	uint8_t *tgt = xalloc(k, TGT_LEN), *good = xalloc(k, TGT_LEN);
	struct app_ctrl c;
	struct app_msg m;
	uint32_t tkey, gkey;
	unsigned i, errs;

	memset(tgt, TGT_FILL, TGT_LEN);
	memset(good, 0, TGT_LEN);
	if (reg(k, tgt, TGT_LEN, DNP_BUF_PUT_TARGET, &tkey) < 0 ||
	    reg(k, good, TGT_LEN, DNP_BUF_PUT_TARGET, &gkey) < 0)
		return -EIO;
	memset(&c, 0, sizeof(c));
	c.a = (uintptr_t)tgt;
	c.b = tkey;
	c.c = (uintptr_t)good;
	c.d = gkey;
	if (exchange(k, &c, &m) < 0)
		return -EIO;
	if (recv_tag(k, k->peer_id, TAG_DONE, NULL) < 0)
		return -EIO;
	for (i = 0; i < TGT_LEN - (badkey ? 0 : 1); i++)
		if (tgt[i] != TGT_FILL)
			break;
	if (i < TGT_LEN - (badkey ? 0 : 1))
		fail(k, "rejected PUT changed the target buffer at byte %u", i);
	else
		printf("ok: target buffer unchanged by the rejected PUTs\n");
	if (app_pattern_check(good, TGT_LEN, k->peer_id, k->a.id, TGT_LEN, 6) >= 0)
		fail(k, "the good PUT after the rejected ones did not arrive intact");
	errs = drain(k, DNP_EV_ERROR);
	if (errs)
		printf("note: %u RX-side error reports on the target\n", errs);
	return send_tag(k, k->peer_id, TAG_VERDICT, k->fails);
}

/* ---- outstanding-1000 ------------------------------------------------- */

#define OUT_N 1000u
#define OUT_STRIDE 4096u

static size_t out_len(unsigned i)
{
	return 1 + (i * 613u) % OUT_STRIDE;
}

static int mode_outstanding_a(struct chk *k)
{
	struct app *a = &k->a;
	uint8_t *src = xalloc(k, (size_t)OUT_N * OUT_STRIDE), *seen = xalloc(k, OUT_N);
	unsigned issued = 0, done = 0, inflight_max = 0, i;
	struct dnp_event ev;
	struct app_ctrl c;
	struct app_msg m;
	uint64_t rva;
	uint32_t rkey;
	int r;

	memset(seen, 0, OUT_N);
	for (i = 0; i < OUT_N; i++)
		app_pattern_fill(src + (size_t)i * OUT_STRIDE, out_len(i), a->id, k->peer_id, i, 8);
	memset(&c, 0, sizeof(c));
	if (exchange(k, &c, &m) < 0)
		return -EIO;
	rva = m.c.a;
	rkey = (uint32_t)m.c.b;
	while (done < OUT_N) {
		if (issued < OUT_N) {
			r = dnp_put(a->d, src + (size_t)issued * OUT_STRIDE, out_len(issued),
				    k->peer, a->peer_port, rva + (uint64_t)issued * OUT_STRIDE,
				    rkey, 5000 + issued, DNP_NONBLOCK);
			if (r == 0) {
				issued++;
				if (issued - done > inflight_max)
					inflight_max = issued - done;
				continue;
			}
			if (r != -EAGAIN) {
				fail(k, "put %u: %s", issued, dnp_strerror(r));
				return r;
			}
		}
		/* Queue full (or all issued): reap completions. */
		r = app_next_event(a, &ev, a->timeout_ms);
		if (r <= 0) {
			fail(k, "%u of %u PUTs completed: %s", done, OUT_N,
			     r ? dnp_strerror(r) : "timed out");
			return -EIO;
		}
		if (ev.type == DNP_EV_ERROR) {
			app_print_event(PROG, "outstanding", &ev);
			fail(k, "PUT %llu failed", (unsigned long long)ev.cookie - 5000);
			done++;
			continue;
		}
		if (ev.type != DNP_EV_TX_DONE)
			continue;
		if (ev.cookie < 5000 || ev.cookie >= 5000 + OUT_N || seen[ev.cookie - 5000]++) {
			fail(k, "unexpected or duplicate completion cookie %llu",
			     (unsigned long long)ev.cookie);
			continue;
		}
		done++;
	}
	printf("ok: %u PUTs completed, each once; up to %u were in flight at once\n", OUT_N,
	       inflight_max);
	if (inflight_max < OUT_N)
		fail(k, "the command queue accepted only %u outstanding PUTs", inflight_max);
	send_tag(k, k->peer_id, TAG_DONE, 0);
	verdict_a(k);
	return 0;
}

static int mode_outstanding_b(struct chk *k)
{
	struct app *a = &k->a;
	size_t len = (size_t)OUT_N * OUT_STRIDE;
	uint8_t *dst = xalloc(k, len), *seen = xalloc(k, OUT_N);
	uint64_t base = (uintptr_t)dst, off;
	struct dnp_event ev;
	struct app_ctrl c;
	struct app_msg m;
	unsigned i, rx = 0;
	uint32_t key;

	memset(dst, 0, len);
	memset(seen, 0, OUT_N);
	if (reg(k, dst, len, DNP_BUF_PUT_TARGET, &key) < 0)
		return -EIO;
	memset(&c, 0, sizeof(c));
	c.a = base;
	c.b = key;
	if (exchange(k, &c, &m) < 0)
		return -EIO;
	if (recv_tag(k, k->peer_id, TAG_DONE, NULL) < 0)
		return -EIO;
	while (rx < OUT_N && app_next_event(a, &ev, 2000) == 1) {
		if (ev.type != DNP_EV_RX_PUT)
			continue;
		off = ev.va - base;
		i = (unsigned)(off / OUT_STRIDE);
		if (ev.va < base || off % OUT_STRIDE || i >= OUT_N || ev.len != out_len(i) ||
		    seen[i]++) {
			app_print_event(PROG, "unexpected RX_PUT", &ev);
			k->fails++;
			continue;
		}
		rx++;
	}
	if (rx != OUT_N)
		fail(k, "%u RX_PUT events, expected %u", rx, OUT_N);
	for (i = 0; i < OUT_N; i++)
		if (app_pattern_check(dst + (size_t)i * OUT_STRIDE, out_len(i), k->peer_id, a->id,
				      i, 8) >= 0) {
			fail(k, "PUT %u: wrong bytes", i);
			break;
		}
	if (!k->fails)
		printf("ok: %u PUTs received, every byte verified\n", OUT_N);
	return send_tag(k, k->peer_id, TAG_VERDICT, k->fails);
}

/* ---- blocking-20000 --------------------------------------------------- */

#define BLK_N 20000u

static int mode_blocking_a(struct chk *k)
{
	struct app *a = &k->a;
	uint64_t *src = xalloc(k, (size_t)BLK_N * sizeof(uint64_t));
	struct dnp_event ev;
	struct app_ctrl c;
	struct app_msg m;
	unsigned i, done = 0;
	uint64_t rva;
	uint32_t rkey;
	int r;

	for (i = 0; i < BLK_N; i++)
		src[i] = 0xb10c000000000000ull | i;
	memset(&c, 0, sizeof(c));
	if (exchange(k, &c, &m) < 0)
		return -EIO;
	rva = m.c.a;
	rkey = (uint32_t)m.c.b;
	/* No event is read until every PUT was queued: blocking calls only. */
	for (i = 0; i < BLK_N; i++) {
		r = dnp_put(a->d, &src[i], sizeof(src[i]), k->peer, a->peer_port,
			    rva + (uint64_t)i * sizeof(uint64_t), rkey, 7000000 + i, 0);
		if (r) {
			fail(k, "blocking put %u: %s", i, dnp_strerror(r));
			return r;
		}
	}
	while (done < BLK_N) {
		r = app_next_event(a, &ev, a->timeout_ms);
		if (r <= 0) {
			fail(k, "%u of %u PUTs completed: %s", done, BLK_N,
			     r ? dnp_strerror(r) : "timed out");
			return -EIO;
		}
		if (ev.type != DNP_EV_TX_DONE && ev.type != DNP_EV_ERROR)
			continue;
		if (ev.type == DNP_EV_ERROR || ev.cookie != 7000000 + done) {
			app_print_event(PROG, "blocking", &ev);
			fail(k, "completion %u: not the TX_DONE of PUT %u", done, done);
			return -EIO;
		}
		done++;
	}
	printf("ok: %u blocking PUTs without polling, every completion once and in order\n", BLK_N);
	send_tag(k, k->peer_id, TAG_DONE, 0);
	verdict_a(k);
	return 0;
}

static int mode_blocking_b(struct chk *k)
{
	struct app *a = &k->a;
	size_t len = (size_t)BLK_N * sizeof(uint64_t);
	uint64_t *dst = xalloc(k, len);
	struct dnp_event ev;
	struct app_ctrl c;
	struct app_msg m;
	unsigned i, rx = 0;
	uint32_t key;

	memset(dst, 0, len);
	if (reg(k, dst, len, DNP_BUF_PUT_TARGET, &key) < 0)
		return -EIO;
	memset(&c, 0, sizeof(c));
	c.a = (uintptr_t)dst;
	c.b = key;
	if (exchange(k, &c, &m) < 0)
		return -EIO;
	/* B keeps reading: only A is the application that does not poll. */
	while (rx < BLK_N && app_next_event(a, &ev, a->timeout_ms) == 1)
		if (ev.type == DNP_EV_RX_PUT)
			rx++;
	if (rx != BLK_N)
		fail(k, "%u RX_PUT events, expected %u", rx, BLK_N);
	if (recv_tag(k, k->peer_id, TAG_DONE, NULL) < 0)
		return -EIO;
	for (i = 0; i < BLK_N; i++)
		if (dst[i] != (0xb10c000000000000ull | i)) {
			fail(k, "PUT %u: wrong word %#llx", i, (unsigned long long)dst[i]);
			break;
		}
	if (!k->fails)
		printf("ok: %u PUTs received, every word verified\n", BLK_N);
	return send_tag(k, k->peer_id, TAG_VERDICT, k->fails);
}

/* ---- link-drill ------------------------------------------------------- */

#define DRILL_LEN 4096u
#define DRILL_WINDOW 64u
#define DRILL_MAX 400000u /* PUTs; at 64 B..4 KiB each, minutes of traffic */
#define DRILL_READY 200u
#define DRILL_AFTER 500u /* PUTs issued once the break is known: all must pass */

/*
 * Creates flag+suffix with its content in one step (written under a
 * temporary name, then renamed), so that a reader polling for the file never
 * opens it before its content is there.
 */
static int drill_touch(const char *flag, const char *suffix, const char *content)
{
	char path[4096], tmp[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", flag, suffix);
	snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid());
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	if (content)
		fputs(content, f);
	if (fclose(f)) {
		int err = -errno;

		unlink(tmp);
		return err;
	}
	if (rename(tmp, path)) {
		int err = -errno;

		unlink(tmp);
		return err;
	}
	return 0;
}

static bool drill_exists(const char *flag, const char *suffix)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s%s", flag, suffix);
	return access(path, F_OK) == 0;
}

static int mode_drill_a(struct chk *k, const char *flag)
{
	struct app *a = &k->a;
	uint8_t *src = xalloc(k, DRILL_LEN), *seen = xalloc(k, DRILL_MAX);
	unsigned issued = 0, ok = 0, err = 0, i, cut_at = 0, after_ok = 0;
	int first_status = 0;
	uint64_t rva, t0;
	struct dnp_event ev;
	struct app_ctrl c;
	struct app_msg m;
	uint32_t rkey;
	bool ready = false, cut = false;
	int r;

	memset(seen, 0, DRILL_MAX);
	app_pattern_fill(src, DRILL_LEN, a->id, k->peer_id, 0, 8);
	memset(&c, 0, sizeof(c));
	if (exchange(k, &c, &m) < 0)
		return -EIO;
	rva = m.c.a;
	rkey = (uint32_t)m.c.b;
	t0 = app_now_ns();
	/*
	 * Stream through the break; once the test says it is known (FLAG.cut),
	 * issue DRILL_AFTER more, then stop issuing and reap every PUT.
	 */
	for (;;) {
		bool more = issued < DRILL_MAX && (!cut || issued < cut_at + DRILL_AFTER);

		if (!more && ok + err == issued)
			break;
		if (ready && !cut && drill_exists(flag, ".cut")) {
			cut = true;
			cut_at = issued;
			printf("ok: the break is known after %u PUTs (%u ok, %u errors)\n", issued,
			       ok, err);
			fflush(stdout);
		}
		if (more && issued - ok - err < DRILL_WINDOW) {
			r = dnp_put(a->d, src, 64 + (issued * 613u) % (DRILL_LEN - 63), k->peer,
				    a->peer_port, rva, rkey, 100000 + issued, DNP_NONBLOCK);
			if (r == 0) {
				issued++;
				continue;
			}
			if (r != -EAGAIN) {
				fail(k, "put %u: %s", issued, dnp_strerror(r));
				return r;
			}
		}
		r = app_next_event(a, &ev, a->timeout_ms);
		if (r <= 0) {
			fail(k,
			     "HANG: %u of %u PUTs completed (%u ok, %u errors), none for %d ms: %s",
			     ok + err, issued, ok, err, a->timeout_ms,
			     r ? dnp_strerror(r) : "timed out");
			return -EIO;
		}
		if (ev.type != DNP_EV_TX_DONE && ev.type != DNP_EV_ERROR)
			continue;
		if (ev.cookie < 100000 || ev.cookie >= 100000ull + issued ||
		    seen[ev.cookie - 100000]++) {
			fail(k, "unexpected or duplicate completion cookie %llu",
			     (unsigned long long)ev.cookie);
			continue;
		}
		bool after = cut && ev.cookie - 100000 >= cut_at;
		if (ev.type == DNP_EV_TX_DONE) {
			ok++;
			after_ok += after;
		} else {
			if (!err++) {
				first_status = ev.status;
				app_print_event(PROG, "first error", &ev);
			}
			if (ev.status >= 0)
				fail(k, "ERROR event with status %d", ev.status);
			if (after)
				fail(k, "PUT %llu, issued after the break was known, failed: %s",
				     (unsigned long long)(ev.cookie - 100000),
				     dnp_strerror(ev.status));
		}
		if (!ready && ok >= DRILL_READY) {
			ready = true;
			if (drill_touch(flag, "", getenv("DNP_SOCKET")) < 0) {
				fail(k, "cannot create %s", flag);
				return -EIO;
			}
			printf("ok: %u PUTs completed, streaming; break the link now\n", ok);
			fflush(stdout);
		}
	}
	if (!cut) {
		fail(k, "%u PUTs, all completed: the test never said the link broke", issued);
		return -EIO;
	}
	for (i = 0; i < issued; i++)
		if (seen[i] != 1)
			fail(k, "PUT %u completed %u times", i, seen[i]);
	printf("ok: %u PUTs issued, %u TX_DONE + %u ERROR = every one exactly once%s%s "
	       "(%.1f ms of traffic); the %u issued after the break was known: %u TX_DONE "
	       "(through the detour)\n",
	       issued, ok, err, err ? "; first error " : "", err ? dnp_strerror(first_status) : "",
	       (double)(app_now_ns() - t0) / 1e6, issued - cut_at, after_ok);
	if (after_ok != issued - cut_at)
		fail(k, "only %u of the %u PUTs after the break passed", after_ok, issued - cut_at);
	if (drill_touch(flag, ".broken", NULL) < 0) {
		fail(k, "cannot create %s.broken", flag);
		return -EIO;
	}
	/* The test reads dnpctl stats now (the daemons must still run). */
	for (i = 0; i < 600 && !drill_exists(flag, ".checked"); i++)
		usleep(50000);
	if (i == 600)
		fail(k, "the test never created %s.checked", flag);
	drill_touch(flag, ".done", NULL);
	return 0;
}

static int mode_drill_b(struct chk *k, const char *flag)
{
	struct app *a = &k->a;
	uint8_t *dst = xalloc(k, DRILL_LEN);
	struct dnp_event ev;
	struct app_ctrl c;
	struct app_msg m;
	unsigned rx = 0, i;
	uint32_t key;

	if (reg(k, dst, DRILL_LEN, DNP_BUF_PUT_TARGET, &key) < 0)
		return -EIO;
	memset(&c, 0, sizeof(c));
	c.a = (uintptr_t)dst;
	c.b = key;
	if (exchange(k, &c, &m) < 0)
		return -EIO;
	/* A's PUTs take the detour once the link is down: count them, wait for its file. */
	for (i = 0; i < 2400 && !drill_exists(flag, ".done"); i++)
		while (app_next_event(a, &ev, 50) == 1)
			rx += ev.type == DNP_EV_RX_PUT;
	if (i == 2400)
		fail(k, "no %s.done within 120 s", flag);
	printf("ok: %u PUTs received\n", rx);
	return 0;
}

/* ---- bad-args --------------------------------------------------------- */

static void expect_ret(struct chk *k, const char *what, int got, int want, int alt)
{
	if (got == want || (alt && got == alt))
		printf("ok: %s -> %s\n", what, dnp_strerror(got));
	else
		fail(k, "%s: returned %d (%s), expected %s", what, got, dnp_strerror(got),
		     dnp_strerror(want));
}

static int mode_bad_args(struct chk *k)
{
	struct app *a = &k->a;
	uint8_t *buf = xalloc(k, 8192), *src = xalloc(k, 64);
	struct dnp_coords outside = { a->dims.x, 0, 0 };
	struct dnp_event ev;
	uint32_t key, key2;
	uint64_t cookie;
	int r;

	memset(src, 0x11, 64);
	expect_ret(k, "register len 0", dnp_register(a->d, buf, 0, DNP_BUF_PUT_TARGET, &key),
		   -EINVAL, 0);
	expect_ret(k, "register NULL", dnp_register(a->d, NULL, 4096, DNP_BUF_PUT_TARGET, &key),
		   -EINVAL, 0);
	expect_ret(k, "register without flags", dnp_register(a->d, buf, 4096, 0, &key), -EINVAL, 0);
	expect_ret(k, "register unknown flag", dnp_register(a->d, buf, 4096, 0x80, &key), -EINVAL,
		   0);
	expect_ret(k, "unregister an address never registered", dnp_unregister(a->d, buf + 17),
		   -ENOENT, -EINVAL);
	r = dnp_register(a->d, buf, 4096, DNP_BUF_PUT_TARGET, &key);
	expect_ret(k, "register 4096 bytes", r, 0, 0);
	expect_ret(k, "register an overlapping range",
		   dnp_register(a->d, buf + 100, 4096, DNP_BUF_PUT_TARGET, &key2), -EEXIST, 0);
	expect_ret(k, "put to port 256",
		   dnp_put(a->d, src, 16, a->self, 256, (uintptr_t)buf, key, 1, 0), -EINVAL, 0);
	expect_ret(k, "put NULL source",
		   dnp_put(a->d, NULL, 16, a->self, a->port, (uintptr_t)buf, key, 1, 0), -EINVAL,
		   0);
	if (sizeof(size_t) > 4)
		expect_ret(k, "put longer than DNP_MAX_MSG",
			   dnp_put(a->d, src, (size_t)DNP_MAX_MSG + 1, a->self, a->port,
				   (uintptr_t)buf, key, 1, 0),
			   -EINVAL, 0);
	expect_ret(k, "put with unknown flags",
		   dnp_put(a->d, src, 16, a->self, a->port, (uintptr_t)buf, key, 1, 0x80), -EINVAL,
		   0);
	expect_ret(k, "send to port 300", dnp_send(a->d, src, 16, a->self, 300, 1, 0), -EINVAL, 0);
	expect_ret(k, "send NULL source", dnp_send(a->d, NULL, 16, a->self, a->port, 1, 0), -EINVAL,
		   0);
	expect_ret(k, "get into NULL",
		   dnp_get(a->d, NULL, 16, key, a->self, a->port, (uintptr_t)buf, key, 1, 0),
		   -EINVAL, 0);
	/* Outside the torus: refused at the call, or completes with an error. */
	cookie = ++k->cookie;
	r = dnp_put(a->d, src, 16, outside, a->port, (uintptr_t)buf, key, cookie, 0);
	if (r == 0) {
		r = app_wait_completion(a, cookie, &ev);
		if (r == 0)
			r = ev.type == DNP_EV_ERROR ? ev.status : 0;
		if (r == -EHOSTUNREACH)
			r = -EINVAL;
	}
	expect_ret(k, "put to a node outside the torus", r, -EINVAL, 0);
	/* The session still works: a loopback PUT completes and lands. */
	memset(buf, 0, 4096);
	r = put_wait(k, src, 64, a->self, (uintptr_t)buf, key, &ev);
	/* put_wait sends to peer_port; on the own node that is our port too. */
	expect_status(k, "loopback PUT after the bad calls", r, 0);
	if (r == 0 && memcmp(buf, src, 64))
		fail(k, "loopback PUT data wrong");
	expect_ret(k, "unregister", dnp_unregister(a->d, buf), 0, 0);
	expect_ret(k, "unregister twice", dnp_unregister(a->d, buf), -ENOENT, -EINVAL);
	return 0;
}

/* ---- kill-survivor / kill-victim -------------------------------------- */

#define KILL_AREA (4u << 20)
#define KILL_MSG (1u << 20)
#define KILL_MAIN (1u << 20)
#define KILL_N 64u

static size_t kill_len(unsigned i)
{
	return 1 + (i * 7919u) % (KILL_MAIN / KILL_N);
}

/* Streams 1 MiB PUTs into the survivor's peer until killed. */
static int mode_kill_victim(void)
{
	const char *spec = getenv("DNP_CHECK_VICTIM"), *fds = getenv("DNP_CHECK_READY_FD");
	unsigned x, y, z, port, key, done = 0, issued = 0;
	unsigned long long va;
	struct dnp_coords dst;
	struct dnp_event ev;
	struct app a;
	uint8_t *src;
	int r, fd;

	if (!spec || !fds ||
	    sscanf(spec, "%u,%u,%u,%u,%llx,%x", &x, &y, &z, &port, &va, &key) != 6) {
		fprintf(stderr, PROG ": kill-victim is started by kill-survivor\n");
		return 2;
	}
	fd = atoi(fds);
	if (app_open(&a, PROG " (victim)") < 0)
		return 1;
	dst.x = x;
	dst.y = y;
	dst.z = z;
	src = app_alloc(&a, KILL_MSG);
	if (!src)
		return 1;
	memset(src, 0xdd, KILL_MSG);
	for (;;) {
		if (issued - done < 16) {
			r = dnp_put(a.d, src, KILL_MSG, dst, port, va + (issued % 4) * KILL_MSG,
				    key, issued, DNP_NONBLOCK);
			if (r == 0) {
				issued++;
				continue;
			}
			if (r != -EAGAIN) {
				fprintf(stderr, PROG " (victim): put: %s\n", dnp_strerror(r));
				return 1;
			}
		}
		r = app_next_event(&a, &ev, 1000);
		if (r < 0)
			return 1;
		if (r == 1 && (ev.type == DNP_EV_TX_DONE || ev.type == DNP_EV_ERROR)) {
			done++;
			if (done == 8 && write(fd, "R", 1) != 1)
				return 1;
		}
	}
}

static int mode_kill_survivor_a(struct chk *k)
{
	struct app *a = &k->a;
	uint8_t *src = xalloc(k, KILL_MAIN);
	char spec[128], fdbuf[16], self[4096];
	struct dnp_event ev;
	struct app_ctrl c;
	struct app_msg m;
	struct pollfd pfd;
	uint64_t mva, off;
	uint32_t mkey;
	unsigned i, done = 0;
	int pfds[2], status, r;
	ssize_t n;
	pid_t pid;
	char ch;

	memset(&c, 0, sizeof(c));
	if (exchange(k, &c, &m) < 0)
		return -EIO;
	mva = m.c.a;
	mkey = (uint32_t)m.c.b;
	snprintf(spec, sizeof(spec), "%u,%u,%u,%u,%llx,%x", k->peer.x, k->peer.y, k->peer.z,
		 a->peer_port, (unsigned long long)m.c.c, (unsigned)m.c.d);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || pipe(pfds) < 0) {
		fail(k, "cannot start the victim");
		return -EIO;
	}
	self[n] = 0;
	snprintf(fdbuf, sizeof(fdbuf), "%d", pfds[1]);
	pid = fork();
	if (pid == 0) {
		close(pfds[0]);
		setenv("DNP_CHECK_VICTIM", spec, 1);
		setenv("DNP_CHECK_READY_FD", fdbuf, 1);
		unsetenv("DNP_PEER_PORT");
		execl(self, self, "kill-victim", (char *)NULL);
		_exit(127);
	}
	close(pfds[1]);
	if (pid < 0) {
		fail(k, "fork: %s", strerror(errno));
		return -EIO;
	}
	pfd.fd = pfds[0];
	pfd.events = POLLIN;
	r = poll(&pfd, 1, a->timeout_ms);
	if (r != 1 || read(pfds[0], &ch, 1) != 1) {
		fail(k, "the victim application did not start streaming");
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		close(pfds[0]);
		return -EIO;
	}
	/* Let the stream run a little, then kill it in the middle of its PUTs. */
	usleep(30000);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(pfds[0]);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail(k, "victim ended with status %#x instead of SIGKILL", status);
	else
		printf("ok: victim application killed with SIGKILL during its PUT stream\n");
	/* The daemon must keep serving us: KILL_N PUTs to B with patterns. */
	for (i = 0, off = 0; i < KILL_N; i++) {
		app_pattern_fill(src + off, kill_len(i), a->id, k->peer_id, i, 9);
		r = dnp_put(a->d, src + off, kill_len(i), k->peer, a->peer_port, mva + off, mkey,
			    100 + i, 0);
		if (r < 0) {
			fail(k, "put after the kill: %s", dnp_strerror(r));
			return r;
		}
		off += kill_len(i);
	}
	while (done < KILL_N) {
		r = app_next_event(a, &ev, a->timeout_ms);
		if (r <= 0) {
			fail(k, "%u of %u PUTs after the kill completed", done, KILL_N);
			return -EIO;
		}
		if (ev.type == DNP_EV_ERROR) {
			app_print_event(PROG, "after the kill", &ev);
			fail(k, "PUT after the kill failed");
			done++;
		} else if (ev.type == DNP_EV_TX_DONE) {
			done++;
		}
	}
	printf("ok: %u PUTs after the kill completed\n", KILL_N);
	send_tag(k, k->peer_id, TAG_DONE, 0);
	verdict_a(k);
	return 0;
}

static int mode_kill_survivor_b(struct chk *k)
{
	uint8_t *mainbuf = xalloc(k, KILL_MAIN), *area = xalloc(k, KILL_AREA);
	uint64_t off = 0;
	struct app_ctrl c;
	struct app_msg m;
	uint32_t mkey, akey;
	unsigned i, victim_rx;

	memset(mainbuf, 0, KILL_MAIN);
	if (reg(k, mainbuf, KILL_MAIN, DNP_BUF_PUT_TARGET, &mkey) < 0 ||
	    reg(k, area, KILL_AREA, DNP_BUF_PUT_TARGET, &akey) < 0)
		return -EIO;
	memset(&c, 0, sizeof(c));
	c.a = (uintptr_t)mainbuf;
	c.b = mkey;
	c.c = (uintptr_t)area;
	c.d = akey;
	if (exchange(k, &c, &m) < 0)
		return -EIO;
	if (recv_tag(k, k->peer_id, TAG_DONE, NULL) < 0)
		return -EIO;
	for (i = 0; i < KILL_N; i++) {
		if (app_pattern_check(mainbuf + off, kill_len(i), k->peer_id, k->a.id, i, 9) >= 0) {
			fail(k, "survivor's PUT %u arrived wrong", i);
			break;
		}
		off += kill_len(i);
	}
	if (i == KILL_N)
		printf("ok: the survivor's %u PUTs arrived intact\n", KILL_N);
	victim_rx = drain(k, DNP_EV_RX_PUT) - KILL_N;
	printf("note: about %d PUTs of the victim arrived before it was killed\n", (int)victim_rx);
	return send_tag(k, k->peer_id, TAG_VERDICT, k->fails);
}

/* ---- farthest --------------------------------------------------------- */

#define FAR_LEN 100003u

static int mode_farthest(struct chk *k)
{
	struct app *a = &k->a;
	unsigned n = a->nnodes, id, expect_src = 0, got = 0, src_id, dist;
	struct dnp_coords far = app_farthest(a, a->self), pc;
	uint8_t *rbuf = xalloc(k, (size_t)FAR_LEN * n), *sbuf = xalloc(k, FAR_LEN);
	uint64_t *va = calloc(n, sizeof(*va)), base = (uintptr_t)rbuf;
	uint32_t *keys = calloc(n, sizeof(*keys)), key;
	unsigned far_id = app_id_of(a, far);
	struct dnp_event ev;
	struct app_ctrl c;
	struct app_msg m;
	int r;

	if (!va || !keys || n < 2) {
		fail(k, "farthest needs at least two nodes");
		return -EINVAL;
	}
	memset(rbuf, 0, (size_t)FAR_LEN * n);
	app_pattern_fill(sbuf, FAR_LEN, a->id, far_id, FAR_LEN, 10);
	if (reg(k, rbuf, (size_t)FAR_LEN * n, DNP_BUF_PUT_TARGET, &key) < 0)
		return -EIO;
	for (id = 0; id < n; id++)
		if (id != a->id && app_id_of(a, app_farthest(a, app_coords_of(a, id))) == a->id)
			expect_src++;
	/* All-pairs SENDs: each must arrive with hops equal to the distance. */
	for (id = 0; id < n; id++) {
		if (id == a->id)
			continue;
		memset(&c, 0, sizeof(c));
		c.tag = TAG_BARRIER;
		c.a = (uintptr_t)rbuf;
		c.b = key;
		if (app_ctrl_send(a, id, &c) < 0) {
			fail(k, "SEND to node %u failed", id);
			return -EIO;
		}
	}
	for (id = 0; id < n; id++) {
		if (id == a->id)
			continue;
		r = app_ctrl_recv(a, id, TAG_BARRIER, &m);
		if (r < 0) {
			fail(k, "SEND from node %u: %s", id, dnp_strerror(r));
			return r;
		}
		va[id] = m.c.a;
		keys[id] = (uint32_t)m.c.b;
		dist = app_distance(a, app_coords_of(a, id), a->self);
		if (m.hops != dist)
			fail(k, "SEND from node %u: hops %u, distance %u", id, m.hops, dist);
	}
	r = put_wait(k, sbuf, FAR_LEN, far, va[far_id] + (uint64_t)a->id * FAR_LEN, keys[far_id],
		     &ev);
	if (r)
		fail(k, "PUT to the farthest node %u,%u,%u: %s", far.x, far.y, far.z,
		     dnp_strerror(r));
	send_tag(k, far_id, TAG_FAR_DONE, 0);
	while (got < expect_src) {
		r = app_next_event(a, &ev, a->timeout_ms);
		if (r <= 0) {
			fail(k, "%u of %u PUTs from farthest nodes arrived", got, expect_src);
			break;
		}
		if (ev.type != DNP_EV_RX_PUT)
			continue;
		pc.x = ev.peer_x;
		pc.y = ev.peer_y;
		pc.z = ev.peer_z;
		src_id = app_id_of(a, pc);
		dist = app_distance(a, pc, a->self);
		got++;
		if (ev.hops != dist || ev.len != FAR_LEN ||
		    ev.va != base + (uint64_t)src_id * FAR_LEN)
			fail(k,
			     "RX_PUT from %u,%u,%u: hops %u (distance %u), len %u, va offset %lld",
			     pc.x, pc.y, pc.z, ev.hops, dist, ev.len, (long long)(ev.va - base));
		else if (app_pattern_check(rbuf + (size_t)src_id * FAR_LEN, FAR_LEN, src_id, a->id,
					   FAR_LEN, 10) >= 0)
			fail(k, "PUT from %u,%u,%u: wrong bytes", pc.x, pc.y, pc.z);
		else
			printf("ok: %u bytes from %u,%u,%u over %u hops\n", FAR_LEN, pc.x, pc.y,
			       pc.z, ev.hops);
	}
	/* Wait for the DONE of every node that targets us before leaving. */
	for (id = 0; id < n; id++)
		if (id != a->id && app_id_of(a, app_farthest(a, app_coords_of(a, id))) == a->id)
			recv_tag(k, id, TAG_FAR_DONE, NULL);
	if (!k->fails)
		printf("ok: all-pairs SEND hop counts equal the torus distance (max %u)\n",
		       app_distance(a, a->self, far));
	free(va);
	free(keys);
	return 0;
}

/* ----------------------------------------------------------------------- */

/* ---- private-fault ---------------------------------------------------- */

#define PRIV_LEN (1u << 20)
#define PRIV_HOLE (PRIV_LEN / 2) /* offset of the unmapped page */

static int mode_private_fault_a(struct chk *k)
{
	uint8_t *src = xalloc(k, PRIV_LEN);
	struct app_ctrl c;
	struct app_msg m;
	struct dnp_event ev;
	int r;

	app_pattern_fill(src, PRIV_LEN, k->a.id, k->peer_id, PRIV_LEN, 11);
	memset(&c, 0, sizeof(c));
	if (exchange(k, &c, &m) < 0)
		return -EIO;
	r = put_wait(k, src, PRIV_LEN, k->peer, m.c.a, (uint32_t)m.c.b, &ev);
	expect_status(k, "1 MiB PUT over an unmapped page of a private target", r, -EFAULT);
	r = put_wait(k, src, PRIV_LEN / 4, k->peer, m.c.a, (uint32_t)m.c.b, &ev);
	expect_status(k, "PUT into the first quarter of that target", r, 0);
	r = put_wait(k, src, PRIV_LEN, k->peer, m.c.c, (uint32_t)m.c.d, &ev);
	expect_status(k, "1 MiB PUT into a second private target", r, 0);
	send_tag(k, k->peer_id, TAG_DONE, 0);
	verdict_a(k);
	return 0;
}

static int mode_private_fault_b(struct chk *k)
{
	uint8_t *tgt, *good;
	struct app_ctrl c;
	struct app_msg m;
	uint32_t tkey, gkey;
	unsigned n;

	tgt = mmap(NULL, PRIV_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	good = mmap(NULL, PRIV_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (tgt == MAP_FAILED || good == MAP_FAILED)
		return -ENOMEM;
	memset(tgt, 0, PRIV_LEN);
	memset(good, 0, PRIV_LEN);
	if (reg(k, tgt, PRIV_LEN, DNP_BUF_PUT_TARGET, &tkey) < 0 ||
	    reg(k, good, PRIV_LEN, DNP_BUF_PUT_TARGET, &gkey) < 0)
		return -EIO;
	munmap(tgt + PRIV_HOLE, 4096);
	memset(&c, 0, sizeof(c));
	c.a = (uintptr_t)tgt;
	c.b = tkey;
	c.c = (uintptr_t)good;
	c.d = gkey;
	if (exchange(k, &c, &m) < 0)
		return -EIO;
	if (recv_tag(k, k->peer_id, TAG_DONE, NULL) < 0)
		return -EIO;
	if (app_pattern_check(tgt, PRIV_LEN / 4, k->peer_id, k->a.id, PRIV_LEN, 11) >= 0)
		fail(k, "the PUT into the first quarter did not arrive intact");
	else if (app_pattern_check(good, PRIV_LEN, k->peer_id, k->a.id, PRIV_LEN, 11) >= 0)
		fail(k, "the 1 MiB PUT into the second target did not arrive intact");
	else
		printf("ok: both PUTs that completed arrived intact\n");
	n = drain(k, DNP_EV_RX_PUT);
	if (n != 2)
		fail(k, "%u RX_PUT events, expected 2 (none for the faulted PUT)", n);
	else
		printf("ok: no RX event for the faulted PUT\n");
	return send_tag(k, k->peer_id, TAG_VERDICT, k->fails);
}

/* ---- kill-mid-send ---------------------------------------------------- */

#define MIDSEND_LEN (8u << 20)
#define MIDSEND_SMALL 100000u

/* Submits an 8 MiB SEND whose second half is unmapped, then waits to be killed. */
static int mode_kill_send_victim(void)
{
	const char *spec = getenv("DNP_CHECK_VICTIM"), *fds = getenv("DNP_CHECK_READY_FD");
	unsigned x, y, z, port;
	struct dnp_coords dst;
	struct dnp_event ev;
	struct app a;
	uint8_t *src;
	int r, fd;

	if (!spec || !fds || sscanf(spec, "%u,%u,%u,%u", &x, &y, &z, &port) != 4) {
		fprintf(stderr, PROG ": kill-send-victim is started by kill-mid-send\n");
		return 2;
	}
	fd = atoi(fds);
	if (app_open(&a, PROG " (victim)") < 0)
		return 1;
	dst.x = x;
	dst.y = y;
	dst.z = z;
	src = mmap(NULL, MIDSEND_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED)
		return 1;
	memset(src, 0xdd, MIDSEND_LEN / 2);
	munmap(src + MIDSEND_LEN / 2, MIDSEND_LEN / 2);
	r = dnp_send(a.d, src, MIDSEND_LEN, dst, port, 1, 0);
	if (r < 0) {
		fprintf(stderr, PROG " (victim): send: %s\n", dnp_strerror(r));
		return 1;
	}
	/* Its first half left, then the daemon could read no more: -EFAULT. */
	r = app_wait_completion(&a, 1, &ev);
	if (r < 0 || ev.type != DNP_EV_ERROR || ev.status != -EFAULT) {
		fprintf(stderr, PROG " (victim): the SEND did not stop with -EFAULT\n");
		return 1;
	}
	if (write(fd, "R", 1) != 1)
		return 1;
	for (;;)
		pause();
}

static int midsend_a(struct chk *k)
{
	struct app *a = &k->a;
	uint8_t *src = xalloc(k, MIDSEND_SMALL);
	char spec[64], fdbuf[16], self[4096], ch;
	struct dnp_event ev;
	struct pollfd pfd;
	uint64_t port2, v;
	int pfds[2], status, r;
	ssize_t n;
	pid_t pid;

	if (recv_tag(k, k->peer_id, TAG_PORT2, &port2) < 0)
		return -EIO;
	snprintf(spec, sizeof(spec), "%u,%u,%u,%u", k->peer.x, k->peer.y, k->peer.z,
		 (unsigned)port2);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || pipe(pfds) < 0) {
		fail(k, "cannot start the victim");
		return -EIO;
	}
	self[n] = 0;
	snprintf(fdbuf, sizeof(fdbuf), "%d", pfds[1]);
	pid = fork();
	if (pid == 0) {
		close(pfds[0]);
		setenv("DNP_CHECK_VICTIM", spec, 1);
		setenv("DNP_CHECK_READY_FD", fdbuf, 1);
		execl(self, self, "kill-send-victim", (char *)NULL);
		_exit(127);
	}
	close(pfds[1]);
	if (pid < 0) {
		fail(k, "fork: %s", strerror(errno));
		return -EIO;
	}
	pfd.fd = pfds[0];
	pfd.events = POLLIN;
	r = poll(&pfd, 1, a->timeout_ms);
	if (r != 1 || read(pfds[0], &ch, 1) != 1)
		fail(k, "the victim's SEND did not stop half-way");
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(pfds[0]);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail(k, "victim ended with status %#x instead of SIGKILL", status);
	else
		printf("ok: victim killed with SIGKILL, its SEND stopped half-way\n");
	/* B saw the RX_ERROR: our SEND must land in the buffer that came back. */
	if (recv_tag(k, k->peer_id, TAG_RXERR, NULL) < 0)
		return -EIO;
	app_pattern_fill(src, MIDSEND_SMALL, a->id, k->peer_id, 0, 11);
	r = dnp_send(a->d, src, MIDSEND_SMALL, k->peer, (unsigned)port2, 77, 0);
	if (r == 0)
		r = app_wait_completion(a, 77, &ev);
	if (r < 0 || ev.type != DNP_EV_TX_DONE) {
		fail(k, "SEND into the reclaimed buffer: %s", dnp_strerror(r < 0 ? r : ev.status));
		return -EIO;
	}
	printf("ok: our SEND to B's second port completed\n");
	if (recv_tag(k, k->peer_id, TAG_VERDICT, &v) == 0 && v)
		fail(k, "node %u reports %llu failed checks", k->peer_id, (unsigned long long)v);
	return 0;
}

/* Next event of the second session (0 on timeout). */
static int midsend_next(struct dnp *d2, struct dnp_event *ev, int timeout_ms)
{
	return dnp_wait_event(d2, ev, timeout_ms);
}

static int midsend_b(struct chk *k)
{
	struct app *a = &k->a;
	struct dnp *d2;
	struct dnp_event ev;
	uint8_t *buf;
	uint32_t key;
	int r;

	r = dnp_open(NULL, &d2);
	if (r < 0) {
		fail(k, "second session: %s", dnp_strerror(r));
		return r;
	}
	buf = dnp_alloc(d2, MIDSEND_LEN);
	if (!buf || dnp_register(d2, buf, MIDSEND_LEN, DNP_BUF_SEND_TARGET, &key) < 0) {
		fail(k, "second session: no SEND buffer");
		dnp_close(d2);
		return -EIO;
	}
	if (send_tag(k, k->peer_id, TAG_PORT2, dnp_port(d2)) < 0) {
		dnp_close(d2);
		return -EIO;
	}
	r = midsend_next(d2, &ev, a->timeout_ms);
	if (r != 1)
		fail(k, "no event for the interrupted SEND: %s", r ? dnp_strerror(r) : "timed out");
	else if (ev.type != DNP_EV_RX_ERROR || ev.status != -ETIMEDOUT || ev.va != (uintptr_t)buf ||
		 ev.len != MIDSEND_LEN)
		app_print_event(PROG, "unexpected", &ev), k->fails++;
	else
		printf("ok: the interrupted SEND ended in one RX_ERROR -ETIMEDOUT for our buffer\n");
	send_tag(k, k->peer_id, TAG_RXERR, 0);
	r = midsend_next(d2, &ev, a->timeout_ms);
	if (r != 1 || ev.type != DNP_EV_RX_SEND || ev.va != (uintptr_t)buf ||
	    ev.len != MIDSEND_SMALL) {
		if (r == 1)
			app_print_event(PROG, "unexpected", &ev);
		fail(k, "A's SEND did not land in the reclaimed buffer");
	} else if (app_pattern_check(buf, MIDSEND_SMALL, k->peer_id, a->id, 0, 11) >= 0) {
		fail(k, "A's SEND arrived with wrong bytes");
	} else {
		printf("ok: the next SEND landed in the reclaimed buffer, bytes verified\n");
	}
	if (midsend_next(d2, &ev, 300) == 1) {
		app_print_event(PROG, "one event too many", &ev);
		k->fails++;
	}
	dnp_close(d2);
	return send_tag(k, k->peer_id, TAG_VERDICT, k->fails);
}

/* ---- slow-drain ------------------------------------------------------- */

#define SLOW_TO_B 12000u /* > the 8192 events a port can hold (ring + engine queue) */
#define SLOW_EVERY 6u    /* every 6th PUT goes to D */
#define SLOW_N (SLOW_TO_B + SLOW_TO_B / (SLOW_EVERY - 1))
#define SLOW_LEN 8u

static int slow_a(struct chk *k, unsigned b_id, unsigned d_id, const char *flag)
{
	struct app *a = &k->a;
	struct dnp_coords b = { 1, 0, 0 }, dc = { 1, 1, 0 };
	uint8_t *src = xalloc(k, (size_t)SLOW_N * SLOW_LEN), *seen = xalloc(k, SLOW_N);
	unsigned issued = 0, done = 0, ok_b = 0, ok_d = 0, overflow = 0, to_b = 0, i;
	uint64_t bva, dva, v;
	uint32_t bkey, dkey;
	struct app_msg m;
	struct dnp_event ev;
	char cnt[32];
	int r;

	memset(seen, 0, SLOW_N);
	for (i = 0; i < SLOW_N; i++)
		app_pattern_fill(src + (size_t)i * SLOW_LEN, SLOW_LEN, a->id, 0, i, 5);
	if (app_ctrl_recv(a, b_id, TAG_ADDR, &m) < 0)
		return -EIO;
	bva = m.c.a;
	bkey = (uint32_t)m.c.b;
	if (app_ctrl_recv(a, d_id, TAG_ADDR, &m) < 0)
		return -EIO;
	dva = m.c.a;
	dkey = (uint32_t)m.c.b;
	while (done < SLOW_N) {
		if (issued < SLOW_N) {
			bool d = issued % SLOW_EVERY == SLOW_EVERY - 1;
			unsigned j = d ? issued / SLOW_EVERY : issued - issued / SLOW_EVERY;

			r = dnp_put(a->d, src + (size_t)issued * SLOW_LEN, SLOW_LEN, d ? dc : b,
				    a->peer_port, (d ? dva : bva) + (uint64_t)j * SLOW_LEN,
				    d ? dkey : bkey, 7000 + issued, DNP_NONBLOCK);
			if (r == 0) {
				to_b += !d;
				issued++;
				continue;
			}
			if (r != -EAGAIN) {
				fail(k, "put %u: %s", issued, dnp_strerror(r));
				return r;
			}
		}
		r = app_next_event(a, &ev, a->timeout_ms);
		if (r <= 0) {
			fail(k, "%u of %u PUTs completed: %s", done, SLOW_N,
			     r ? dnp_strerror(r) : "timed out");
			return -EIO;
		}
		if (ev.type != DNP_EV_TX_DONE && ev.type != DNP_EV_ERROR)
			continue;
		if (ev.cookie < 7000 || ev.cookie >= 7000 + SLOW_N || seen[ev.cookie - 7000]++) {
			fail(k, "unexpected or duplicate completion cookie %llu",
			     (unsigned long long)ev.cookie);
			continue;
		}
		done++;
		bool to_d = (ev.cookie - 7000) % SLOW_EVERY == SLOW_EVERY - 1;
		if (ev.type == DNP_EV_TX_DONE) {
			ok_b += !to_d;
			ok_d += to_d;
		} else if (!to_d && ev.status == -EOVERFLOW) {
			overflow++;
		} else {
			app_print_event(PROG, "slow-drain", &ev);
			fail(k, "PUT %llu to %s failed", (unsigned long long)ev.cookie - 7000,
			     to_d ? "D (transit through B)" : "B");
		}
	}
	printf("ok: %u PUTs completed, each once: to B %u ok + %u -EOVERFLOW of %u, "
	       "to D (through B) %u ok of %u\n",
	       SLOW_N, ok_b, overflow, to_b, ok_d, SLOW_N - to_b);
	if (!overflow)
		fail(k, "no PUT to B failed with -EOVERFLOW: its queues never filled");
	if (ok_d != SLOW_N - to_b)
		fail(k, "transit PUTs to D: %u of %u completed", ok_d, SLOW_N - to_b);
	snprintf(cnt, sizeof(cnt), "%u\n", ok_b);
	r = drill_touch(flag, "", cnt); /* B resumes and checks its RX events */
	if (r < 0)
		fail(k, "cannot create %s: %s", flag, strerror(-r));
	send_tag(k, d_id, TAG_SLOW, SLOW_N - to_b);
	for (i = 0; i < 2; i++) {
		unsigned from = i ? d_id : b_id;
		if (recv_tag(k, from, TAG_VERDICT, &v) == 0 && v)
			fail(k, "node %u reports %llu failed checks", from, (unsigned long long)v);
	}
	return 0;
}

/* B or D: registers a target, tells A, then counts (and checks) its RX_PUTs. */
static int slow_target(struct chk *k, unsigned a_id, bool is_b, const char *flag)
{
	struct app *a = &k->a;
	size_t len = (size_t)SLOW_N * SLOW_LEN;
	uint8_t *dst = xalloc(k, len);
	uint64_t base = (uintptr_t)dst, want;
	struct dnp_event ev;
	struct app_ctrl c;
	unsigned rx = 0;
	uint32_t key;
	char buf[32] = "";

	memset(dst, 0, len);
	if (reg(k, dst, len, DNP_BUF_PUT_TARGET, &key) < 0)
		return -EIO;
	memset(&c, 0, sizeof(c));
	c.tag = TAG_ADDR;
	c.a = base;
	c.b = key;
	if (app_ctrl_send(a, a_id, &c) < 0) {
		fail(k, "cannot send the key to node %u", a_id);
		return -EIO;
	}
	if (is_b) {
		/* The slow application: no event is taken until A is done. */
		FILE *f = NULL;
		for (unsigned t = 0; t < (unsigned)a->timeout_ms && !f; t++) {
			f = fopen(flag, "r");
			if (!f)
				usleep(1000);
		}
		if (!f || !fgets(buf, sizeof(buf), f)) {
			fail(k, "A never said it was done (%s)", flag);
			if (f)
				fclose(f);
			return -EIO;
		}
		fclose(f);
		want = strtoull(buf, NULL, 10);
	} else if (recv_tag(k, a_id, TAG_SLOW, &want) < 0) {
		return -EIO;
	}
	while (rx < want && app_next_event(a, &ev, a->timeout_ms) == 1) {
		if (ev.type != DNP_EV_RX_PUT)
			continue;
		if (ev.va < base || ev.va + ev.len > base + len || ev.len != SLOW_LEN) {
			app_print_event(PROG, "unexpected RX_PUT", &ev);
			k->fails++;
			continue;
		}
		rx++;
	}
	/* exactly once: nothing more is queued (a failed PUT has no RX event) */
	while (app_next_event(a, &ev, 200) == 1)
		if (ev.type == DNP_EV_RX_PUT)
			fail(k, "an RX_PUT beyond the %llu PUTs A saw completed",
			     (unsigned long long)want);
	if (rx != want)
		fail(k, "%u RX_PUT events, expected %llu", rx, (unsigned long long)want);
	else
		printf("ok: %s got exactly the %u RX_PUT events of the PUTs that completed\n",
		       is_b ? "the slow application" : "the transit target", rx);
	return send_tag(k, a_id, TAG_VERDICT, k->fails);
}

static int mode_slow_drain(struct chk *k, const char *flag)
{
	struct app *a = &k->a;
	struct dnp_coords o = { 0, 0, 0 }, b = { 1, 0, 0 }, d = { 1, 1, 0 };

	if (a->dims.x < 2 || a->dims.y < 2) {
		fprintf(stderr, PROG ": slow-drain needs a torus of at least 2x2\n");
		return -EINVAL;
	}
	if (app_coords_eq(a->self, o))
		return slow_a(k, app_id_of(a, b), app_id_of(a, d), flag);
	if (app_coords_eq(a->self, b) || app_coords_eq(a->self, d))
		return slow_target(k, app_id_of(a, o), app_coords_eq(a->self, b), flag);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [--peer X,Y,Z] MODE\n"
		   "  MODE: send-order get bad-key out-of-bounds outstanding-1000 blocking-20000\n"
		   "        bad-args kill-survivor farthest link-drill slow-drain kill-mid-send\n"
		   "        private-fault\n"
		   "        (kill-victim and kill-send-victim are internal)\n"
		   "  Run it under dnp-run on a torus of at least two nodes.\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "peer", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dnp_coords origin = { 0, 0, 0 }, peer = { 0, 0, 0 };
	bool have_peer = false, is_b;
	static struct chk k;
	const char *mode;
	int c, r;

	while ((c = getopt_long(argc, argv, "p:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (app_parse_coords(optarg, &peer) < 0) {
				usage(stderr);
				return 2;
			}
			have_peer = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	mode = argv[optind];
	if (!strcmp(mode, "kill-victim"))
		return mode_kill_victim();
	if (!strcmp(mode, "kill-send-victim"))
		return mode_kill_send_victim();
	if (strcmp(mode, "send-order") && strcmp(mode, "get") && strcmp(mode, "bad-key") &&
	    strcmp(mode, "out-of-bounds") && strcmp(mode, "outstanding-1000") &&
	    strcmp(mode, "blocking-20000") && strcmp(mode, "bad-args") &&
	    strcmp(mode, "kill-survivor") && strcmp(mode, "farthest") &&
	    strcmp(mode, "link-drill") && strcmp(mode, "slow-drain") &&
	    strcmp(mode, "kill-mid-send") && strcmp(mode, "private-fault")) {
		fprintf(stderr, PROG ": unknown mode '%s'\n", mode);
		usage(stderr);
		return 2;
	}
	if (!strcmp(mode, "link-drill") && !getenv("DNP_DRILL_FLAG")) {
		fprintf(stderr, PROG ": link-drill needs DNP_DRILL_FLAG (see the header)\n");
		return 2;
	}
	if (app_open(&k.a, PROG) < 0)
		return 1;
	k.cookie = 1;
	if (!strcmp(mode, "farthest")) {
		r = mode_farthest(&k);
		goto out;
	}
	if (!strcmp(mode, "slow-drain")) {
		if (!getenv("DNP_CHECK_FLAG")) {
			fprintf(stderr,
				PROG ": slow-drain needs DNP_CHECK_FLAG (see the header)\n");
			app_close(&k.a);
			return 2;
		}
		r = mode_slow_drain(&k, getenv("DNP_CHECK_FLAG"));
		goto out;
	}
	if (!have_peer) {
		peer.x = 1 % k.a.dims.x;
		peer.y = 0;
		peer.z = 0;
	}
	k.is_a = app_coords_eq(k.a.self, origin);
	is_b = !k.is_a && app_coords_eq(k.a.self, peer);
	if (!strcmp(mode, "bad-args") && k.is_a) {
		r = mode_bad_args(&k);
		goto out;
	}
	if (!k.is_a && (!is_b || !strcmp(mode, "bad-args"))) {
		app_close(&k.a);
		return 0;
	}
	if (peer.x >= k.a.dims.x || peer.y >= k.a.dims.y || peer.z >= k.a.dims.z ||
	    app_coords_eq(peer, origin)) {
		fprintf(stderr, PROG ": peer %u,%u,%u is not another node of the torus\n", peer.x,
			peer.y, peer.z);
		app_close(&k.a);
		return 2;
	}
	k.peer = k.is_a ? peer : origin;
	k.peer_id = app_id_of(&k.a, k.peer);
	if (!strcmp(mode, "send-order"))
		r = k.is_a ? mode_send_order_a(&k) : mode_send_order_b(&k);
	else if (!strcmp(mode, "get"))
		r = k.is_a ? mode_get_a(&k) : mode_get_b(&k);
	else if (!strcmp(mode, "bad-key"))
		r = k.is_a ? mode_reject_a(&k, true) : mode_reject_b(&k, true);
	else if (!strcmp(mode, "out-of-bounds"))
		r = k.is_a ? mode_reject_a(&k, false) : mode_reject_b(&k, false);
	else if (!strcmp(mode, "outstanding-1000"))
		r = k.is_a ? mode_outstanding_a(&k) : mode_outstanding_b(&k);
	else if (!strcmp(mode, "kill-mid-send"))
		r = k.is_a ? midsend_a(&k) : midsend_b(&k);
	else if (!strcmp(mode, "private-fault"))
		r = k.is_a ? mode_private_fault_a(&k) : mode_private_fault_b(&k);
	else if (!strcmp(mode, "blocking-20000"))
		r = k.is_a ? mode_blocking_a(&k) : mode_blocking_b(&k);
	else if (!strcmp(mode, "link-drill"))
		r = k.is_a ? mode_drill_a(&k, getenv("DNP_DRILL_FLAG")) :
			     mode_drill_b(&k, getenv("DNP_DRILL_FLAG"));
	else
		r = k.is_a ? mode_kill_survivor_a(&k) : mode_kill_survivor_b(&k);
out:
	if (r < 0 && !k.fails)
		fail(&k, "%s: %s", mode, dnp_strerror(r));
	if (!k.fails)
		printf("PASS %s on node %u,%u,%u\n", mode, k.a.self.x, k.a.self.y, k.a.self.z);
	else
		printf("FAIL %s on node %u,%u,%u: %u failed checks\n", mode, k.a.self.x, k.a.self.y,
		       k.a.self.z, k.fails);
	app_close(&k.a);
	return k.fails ? 1 : 0;
}
