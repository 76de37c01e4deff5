/* SPDX-License-Identifier: MIT */
/*
 * check_flags.c — the dnp_check mode 'flags': libdnp's command flags against
 * real daemons (docs/api.md, "Events and flags"). A puts to B:
 *   source-read events: PUTs of 4 KiB, 64 KiB and 1 MiB flagged
 *   DNP_SRC_EVENT, one at a time. Each gets DNP_EV_TX_READ, then TX_DONE,
 *   once each; A overwrites its source as soon as TX_READ comes, and B must
 *   still find the original bytes. How much earlier TX_READ comes is
 *   printed (medians), not checked.
 *   event-less commands: FL_QUIET PUTs flagged DNP_NO_EVENT, more than the
 *   port's quota of outstanding commands (2048), so a quota that event-less
 *   commands did not give back would stall them; then one to a wrong key.
 *   A must get exactly one event, the ERROR -EACCES of the last; B gets
 *   every RX_PUT, with the right bytes. They all name completion counter 0:
 *   dnp_cntr_wait for FL_QUIET + 1 must return, with ok FL_QUIET and err 1.
 *   inline PUTs: one of each length 1 .. DNP_INLINE_MAX flagged DNP_INLINE
 *   and counter 1; A overwrites the source as soon as dnp_put returns, and
 *   B must still find the original bytes; TX_DONE carries va 0, and
 *   counter 1 ends at ok DNP_INLINE_MAX, err 0.
 */
#include <stdint.h>

#include "check.h"

#define FL_ITERS 7u
#define FL_STRIDE (1u << 20)
#define FL_NSIZES 3u
#define FL_COOKIE 7000u
#define FL_QUIET 3000u
#define FL_QLEN 512u
#define FL_QCOOKIE 20000u
#define FL_BADCOOKIE 30000u
#define FL_ICOOKIE 40000u
#define FL_IOFF (FL_STRIDE / 2) /* inline PUT n lands at FL_IOFF + n * 64 of B's first stride */

static const size_t fl_sizes[FL_NSIZES] = { 4096, 65536, 1u << 20 };

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static uint64_t median(uint64_t *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

/*
 * One PUT flagged DNP_SRC_EVENT of message j: TX_READ (the source is then
 * overwritten), then TX_DONE. t[0], t[1]: ns from the call to each.
 */
static int src_event_put(struct chk *k, uint8_t *src, size_t len, uint64_t rva, uint32_t rkey,
			 unsigned j, uint64_t t[2])
{
	struct app *a = &k->a;
	uint64_t cookie = FL_COOKIE + j, t0;
	bool got_read = false;
	struct dnp_event ev;
	int r;

	app_pattern_fill(src, len, a->id, k->peer_id, len, j);
	t0 = app_now_ns();
	r = dnp_put(a->d, src, len, k->peer, a->peer_port, rva, rkey, cookie, DNP_SRC_EVENT);
	if (r < 0) {
		fail(k, "put %u: %s", j, dnp_strerror(r));
		return r;
	}
	for (;;) {
		r = app_next_event(a, &ev, a->timeout_ms);
		if (r <= 0) {
			fail(k, "put %u: no completion (%s)", j, r ? dnp_strerror(r) : "timed out");
			return -EIO;
		}
		if (ev.cookie != cookie) {
			if (ev.cookie >= FL_COOKIE && ev.cookie < FL_COOKIE + FL_NSIZES * FL_ITERS)
				fail(k, "put %u: a late event (type %u) of put %llu", j, ev.type,
				     (unsigned long long)(ev.cookie - FL_COOKIE));
			continue;
		}
		if (ev.type == DNP_EV_TX_READ) {
			if (got_read)
				fail(k, "put %u: a second TX_READ", j);
			got_read = true;
			t[0] = app_now_ns() - t0;
			memset(src, 0x5a,
			       len); /* reused at once: the daemon must not read it again */
			continue;
		}
		t[1] = app_now_ns() - t0;
		if (ev.type != DNP_EV_TX_DONE) {
			app_print_event(PROG, "src-event", &ev);
			fail(k, "put %u: ended with event %u status %d", j, ev.type, ev.status);
		} else if (!got_read) {
			fail(k, "put %u: TX_DONE without a TX_READ before it", j);
		}
		return 0;
	}
}

static int quiet_counted(struct chk *k);

/* FL_QUIET event-less PUTs, then one to a wrong key: only its ERROR may come back. */
static int quiet_puts(struct chk *k, uint64_t rva, uint32_t rkey)
{
	struct app *a = &k->a;
	uint8_t *src = xalloc(k, (size_t)FL_QUIET * FL_QLEN);
	uint64_t deadline = app_now_ns() + (uint64_t)a->timeout_ms * 1000000;
	unsigned q = 0, stalls = 0;
	struct dnp_event ev;
	int r;

	for (unsigned i = 0; i < FL_QUIET; i++)
		app_pattern_fill(src + (size_t)i * FL_QLEN, FL_QLEN, a->id, k->peer_id, FL_QLEN,
				 100 + i);
	while (q < FL_QUIET) {
		r = dnp_put(a->d, src + (size_t)q * FL_QLEN, FL_QLEN, k->peer, a->peer_port,
			    rva + (uint64_t)q * FL_QLEN, rkey, FL_QCOOKIE + q,
			    DNP_NO_EVENT | DNP_NONBLOCK | DNP_CNTR(0));
		if (r == 0) {
			q++;
			continue;
		}
		if (r != -EAGAIN) {
			fail(k, "event-less put %u: %s", q, dnp_strerror(r));
			return r;
		}
		stalls++;
		if (app_now_ns() > deadline) {
			fail(k, "event-less puts stalled at %u of %u: the queue never drained", q,
			     FL_QUIET);
			return -EIO;
		}
		if (app_next_event(a, &ev, 1) == 1) {
			app_print_event(PROG, "event-less", &ev);
			fail(k, "an event for an event-less put");
		}
	}
	r = dnp_put(a->d, src, FL_QLEN, k->peer, a->peer_port, rva, rkey ^ 0x5a5a5a5au,
		    FL_BADCOOKIE, DNP_NO_EVENT | DNP_CNTR(0));
	if (r < 0) {
		fail(k, "event-less put to a wrong key: %s", dnp_strerror(r));
		return r;
	}
	r = app_next_event(a, &ev, a->timeout_ms);
	if (r <= 0)
		fail(k, "no ERROR for the event-less put to a wrong key");
	else if (ev.type != DNP_EV_ERROR || ev.status != -EACCES || ev.cookie != FL_BADCOOKIE)
		fail(k, "the first event after %u event-less puts: type %u status %d cookie %llu",
		     FL_QUIET, ev.type, ev.status, (unsigned long long)ev.cookie);
	else
		printf("ok: %u event-less PUTs (%u waits for room) gave no event; the one to a "
		       "wrong key gave ERROR -EACCES\n",
		       FL_QUIET, stalls);
	return quiet_counted(k);
}

/* Counter 0 has counted every event-less PUT: FL_QUIET successes, one error. */
static int quiet_counted(struct chk *k)
{
	uint64_t ok = 0, err = 0;
	int r = dnp_cntr_wait(k->a.d, 0, FL_QUIET + 1, k->a.timeout_ms);

	if (r != 1) {
		fail(k, "dnp_cntr_wait(0, %u): %s", FL_QUIET + 1,
		     r ? dnp_strerror(r) : "timed out");
		return -EIO;
	}
	(void)dnp_cntr_read(k->a.d, 0, &ok, &err);
	if (ok != FL_QUIET || err != 1)
		fail(k, "counter 0: ok %llu err %llu, want %u and 1", (unsigned long long)ok,
		     (unsigned long long)err, FL_QUIET);
	else
		printf("ok: counter 0 reached %u successes and 1 error\n", FL_QUIET);
	(void)dnp_cntr_read(k->a.d, 1, &ok, &err);
	if (ok || err)
		fail(k, "counter 1 moved before its commands: ok %llu err %llu",
		     (unsigned long long)ok, (unsigned long long)err);
	return 0;
}

/*
 * One inline PUT of each length 1 .. DNP_INLINE_MAX on counter 1, its
 * source overwritten as soon as dnp_put returns; each TX_DONE has va 0.
 */
static int inline_puts(struct chk *k, uint64_t rva, uint32_t rkey)
{
	struct app *a = &k->a;
	uint8_t src[DNP_INLINE_MAX];
	struct dnp_event ev;
	uint64_t ok = 0, err = 0;
	int r;

	for (unsigned n = 1; n <= DNP_INLINE_MAX; n++) {
		app_pattern_fill(src, n, a->id, k->peer_id, n, 500 + n);
		r = dnp_put(a->d, src, n, k->peer, a->peer_port, rva + FL_IOFF + n * 64u, rkey,
			    FL_ICOOKIE + n, DNP_INLINE | DNP_CNTR(1));
		memset(src, 0xee, sizeof(src)); /* reused at once */
		if (r < 0) {
			fail(k, "inline put of %u bytes: %s", n, dnp_strerror(r));
			return r;
		}
		r = app_next_event(a, &ev, a->timeout_ms);
		if (r <= 0) {
			fail(k, "inline put of %u bytes: no completion", n);
			return -EIO;
		}
		if (ev.type != DNP_EV_TX_DONE || ev.cookie != FL_ICOOKIE + n || ev.va != 0 ||
		    ev.len != n) {
			app_print_event(PROG, "inline", &ev);
			fail(k, "inline put of %u bytes: not its TX_DONE with va 0", n);
		}
	}
	if (dnp_cntr_wait(a->d, 1, DNP_INLINE_MAX, 0) != 1 || dnp_cntr_read(a->d, 1, &ok, &err) ||
	    ok != DNP_INLINE_MAX || err)
		fail(k, "counter 1: ok %llu err %llu after %u inline PUTs", (unsigned long long)ok,
		     (unsigned long long)err, DNP_INLINE_MAX);
	else
		printf("ok: %u inline PUTs completed, counted on counter 1\n", DNP_INLINE_MAX);
	return 0;
}

int mode_flags_a(struct chk *k)
{
	struct app *a = &k->a;
	uint8_t *src = xalloc(k, FL_STRIDE);
	uint64_t t[FL_NSIZES][FL_ITERS][2], gap[FL_ITERS], rd[FL_ITERS], done[FL_ITERS];
	struct dnp_event ev;
	struct app_msg m;

	if (take_offer(k, &m) < 0)
		return -EIO;
	for (unsigned s = 0; s < FL_NSIZES; s++)
		for (unsigned i = 0; i < FL_ITERS; i++) {
			unsigned j = s * FL_ITERS + i;

			if (src_event_put(k, src, fl_sizes[s], m.c.a + (uint64_t)j * FL_STRIDE,
					  (uint32_t)m.c.b, j, t[s][i]) < 0)
				return -EIO;
		}
	for (unsigned s = 0; s < FL_NSIZES && !k->fails; s++) {
		for (unsigned i = 0; i < FL_ITERS; i++) {
			rd[i] = t[s][i][0];
			done[i] = t[s][i][1];
			gap[i] = t[s][i][1] - t[s][i][0];
		}
		printf("note: %zu-byte PUT: TX_READ %.1f us, TX_DONE %.1f us after the call, "
		       "TX_READ %.1f us earlier (medians of %u)\n",
		       fl_sizes[s], median(rd, FL_ITERS) / 1e3, median(done, FL_ITERS) / 1e3,
		       median(gap, FL_ITERS) / 1e3, FL_ITERS);
	}
	if (!k->fails)
		printf("ok: %u PUTs flagged DNP_SRC_EVENT: TX_READ then TX_DONE, once each\n",
		       FL_NSIZES * FL_ITERS);
	if (quiet_puts(k, m.c.c, (uint32_t)m.c.d) < 0)
		return -EIO;
	if (inline_puts(k, m.c.a, (uint32_t)m.c.b) < 0)
		return -EIO;
	a_done(k);
	/* B has every message: nothing else may come (a late TX_DONE, say) */
	while (app_next_event(a, &ev, 300) == 1) {
		app_print_event(PROG, "late", &ev);
		fail(k, "an event after the last completion");
	}
	return 0;
}

/* Is an RX_PUT of A's one of its messages, with the right bytes? Returns its index or -1. */
static long rx_index(struct chk *k, const struct dnp_event *ev, const uint8_t *b1,
		     const uint8_t *b2)
{
	uint64_t va = ev->va;

	if (va >= (uintptr_t)b1 + FL_IOFF && va < (uintptr_t)b1 + FL_STRIDE) { /* inline */
		uint64_t n = (va - (uintptr_t)b1 - FL_IOFF) / 64u;

		if (n < 1 || n > DNP_INLINE_MAX || va != (uintptr_t)b1 + FL_IOFF + n * 64u ||
		    ev->len != n ||
		    app_pattern_check((const void *)(uintptr_t)va, n, k->peer_id, k->a.id, n,
				      500 + n) != -1)
			return -1;
		return FL_NSIZES * FL_ITERS + FL_QUIET + (long)n - 1;
	}
	if (va >= (uintptr_t)b1 &&
	    va < (uintptr_t)b1 + (uint64_t)FL_NSIZES * FL_ITERS * FL_STRIDE) {
		uint64_t off = va - (uintptr_t)b1;
		unsigned j = (unsigned)(off / FL_STRIDE);
		size_t len = fl_sizes[j / FL_ITERS];

		if (off % FL_STRIDE || ev->len != len ||
		    app_pattern_check(b1 + off, len, k->peer_id, k->a.id, len, j) != -1)
			return -1;
		return j;
	}
	if (va >= (uintptr_t)b2 && va < (uintptr_t)b2 + (uint64_t)FL_QUIET * FL_QLEN) {
		uint64_t off = va - (uintptr_t)b2;
		unsigned q = (unsigned)(off / FL_QLEN);

		if (off % FL_QLEN || ev->len != FL_QLEN ||
		    app_pattern_check(b2 + off, FL_QLEN, k->peer_id, k->a.id, FL_QLEN, 100 + q) !=
			    -1)
			return -1;
		return FL_NSIZES * FL_ITERS + q;
	}
	return -1;
}

int mode_flags_b(struct chk *k)
{
	struct app *a = &k->a;
	const unsigned want = FL_NSIZES * FL_ITERS + FL_QUIET + DNP_INLINE_MAX;
	size_t l1 = (size_t)FL_NSIZES * FL_ITERS * FL_STRIDE, l2 = (size_t)FL_QUIET * FL_QLEN;
	uint8_t *b1 = xalloc(k, l1), *b2 = xalloc(k, l2), *seen = xalloc(k, want);
	struct dnp_event ev;
	unsigned rx = 0;

	memset(seen, 0, want);
	if (offer(k, b1, l1, DNP_BUF_PUT_TARGET, b2, l2) < 0)
		return -EIO;
	while (rx < want && app_next_event(a, &ev, a->timeout_ms) == 1) {
		long i;

		if (ev.type != DNP_EV_RX_PUT)
			continue;
		i = rx_index(k, &ev, b1, b2);
		if (i < 0 || seen[i]++) {
			app_print_event(PROG, "unexpected RX_PUT", &ev);
			fail(k, "RX_PUT %ld: unexpected, repeated or with wrong bytes", i);
		}
		rx++;
	}
	if (rx < want)
		fail(k, "%u of %u PUTs arrived", rx, want);
	if (recv_tag(k, k->peer_id, TAG_DONE, NULL) < 0)
		return -EIO;
	if (drain(k, DNP_EV_RX_PUT))
		fail(k, "an RX_PUT beyond the %u expected (the wrong key's?)", want);
	return b_verdict(k, "%u PUTs arrived with the bytes of their call\n", want);
}
