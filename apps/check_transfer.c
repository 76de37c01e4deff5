/* SPDX-License-Identifier: MIT */
/*
 * check_transfer — the dnp_check modes that check the data path of a healthy
 * torus: send-order, get, bad-key, out-of-bounds, outstanding-1000,
 * blocking-20000 and farthest (dnp_check.c describes each; check.h states
 * the contract between the modes and the driver).
 */
#include "check.h"

/* ---- send-order ------------------------------------------------------- */

#define SEQ_N 600u
#define SEQ_WINDOW 40u /* < APP_MBOX_SLOTS: B always has a slot posted */
#define SEQ_CREDIT_EVERY 10u

static size_t seq_len(unsigned i)
{
	return offsetof(struct app_ctrl, payload) + (i * 37u) % (APP_CTRL_PAYLOAD + 1);
}

int mode_send_order_a(struct chk *k)
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

int mode_send_order_b(struct chk *k)
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

/* A GET of len bytes at rva into dst; its status (0: GET_DONE). */
static int get_status(struct chk *k, uint8_t *dst, size_t len, uint32_t key, uint64_t rva,
		      uint32_t rkey)
{
	uint64_t cookie = ++k->cookie;
	struct dnp_event ev;
	int r;

	r = dnp_get(k->a.d, dst, len, key, k->peer, k->a.peer_port, rva, rkey, cookie, 0);
	if (r == 0)
		r = app_wait_completion(&k->a, cookie, &ev);
	if (r)
		return r;
	return ev.type == DNP_EV_ERROR ? ev.status : 0;
}

int mode_get_a(struct chk *k)
{
	static const struct {
		uint64_t off, len;
	} ranges[] = { { 0, 1 }, { 5, 4096 }, { 100, 70000 }, { 4095, 8193 }, { 0, GET_SRC_LEN } };
	struct app *a = &k->a;
	uint8_t *dst = xalloc(k, GET_SRC_LEN), *want = xalloc(k, GET_SRC_LEN);
	struct app_msg m;
	struct dnp_event ev;
	uint64_t rva, cookie;
	uint32_t key, rkey;
	unsigned i;
	int r;

	app_pattern_fill(want, GET_SRC_LEN, k->peer_id, 0, GET_SRC_LEN, 5);
	if (reg(k, dst, GET_SRC_LEN, DNP_BUF_PUT_TARGET, &key) < 0)
		return -EIO;
	if (take_offer(k, &m) < 0)
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
	expect_status(k, "GET with a wrong key",
		      get_status(k, dst, 64, key, rva, rkey ^ 0x5a5a5a5au), -EACCES);
	expect_status(k, "GET past the end of the source",
		      get_status(k, dst, 4096, key, rva + GET_SRC_LEN - 100, rkey), -ERANGE);
	send_tag(k, k->peer_id, TAG_DONE, 0);
	verdict_a(k);
	dnp_unregister(a->d, dst);
	return 0;
}

int mode_get_b(struct chk *k)
{
	uint8_t *src = xalloc(k, GET_SRC_LEN);

	app_pattern_fill(src, GET_SRC_LEN, k->a.id, 0, GET_SRC_LEN, 5);
	if (offer(k, src, GET_SRC_LEN, DNP_BUF_GET_SOURCE, NULL, 0) < 0)
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

int mode_reject_a(struct chk *k, bool badkey)
{
	uint8_t *src = xalloc(k, 2 * TGT_LEN);
	struct app_msg m;
	struct dnp_event ev;
	uint64_t tva, gva;
	uint32_t tkey, gkey;
	int r;

	app_pattern_fill(src, 2 * TGT_LEN, k->a.id, k->peer_id, TGT_LEN, 6);
	if (take_offer(k, &m) < 0)
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

int mode_reject_b(struct chk *k, bool badkey)
{
	uint8_t *tgt = xalloc(k, TGT_LEN), *good = xalloc(k, TGT_LEN);
	unsigned i, errs;

	memset(tgt, TGT_FILL, TGT_LEN);
	memset(good, 0, TGT_LEN);
	if (offer(k, tgt, TGT_LEN, DNP_BUF_PUT_TARGET, good, TGT_LEN) < 0)
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

int mode_outstanding_a(struct chk *k)
{
	struct app *a = &k->a;
	uint8_t *src = xalloc(k, (size_t)OUT_N * OUT_STRIDE), *seen = xalloc(k, OUT_N);
	unsigned issued = 0, done = 0, inflight_max = 0, i;
	struct dnp_event ev;
	struct app_msg m;
	uint64_t rva;
	uint32_t rkey;
	int r;

	memset(seen, 0, OUT_N);
	for (i = 0; i < OUT_N; i++)
		app_pattern_fill(src + (size_t)i * OUT_STRIDE, out_len(i), a->id, k->peer_id, i, 8);
	if (take_offer(k, &m) < 0)
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
		if (next_completion(k, &ev, done, OUT_N) < 0)
			return -EIO;
		if (ev.type == DNP_EV_ERROR) {
			app_print_event(PROG, "outstanding", &ev);
			fail(k, "PUT %llu failed", (unsigned long long)ev.cookie - 5000);
			done++;
			continue;
		}
		if (cookie_once(k, ev.cookie, 5000, OUT_N, seen))
			done++;
	}
	printf("ok: %u PUTs completed, each once; up to %u were in flight at once\n", OUT_N,
	       inflight_max);
	if (inflight_max < OUT_N)
		fail(k, "the command queue accepted only %u outstanding PUTs", inflight_max);
	return a_done(k);
}

int mode_outstanding_b(struct chk *k)
{
	struct app *a = &k->a;
	size_t len = (size_t)OUT_N * OUT_STRIDE;
	uint8_t *dst = xalloc(k, len), *seen = xalloc(k, OUT_N);
	uint64_t base = (uintptr_t)dst, off;
	struct dnp_event ev;
	unsigned i, rx = 0;

	memset(dst, 0, len);
	memset(seen, 0, OUT_N);
	if (offer(k, dst, len, DNP_BUF_PUT_TARGET, NULL, 0) < 0)
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
	return b_verdict(k, "%u PUTs received, every byte verified", OUT_N);
}

/* ---- blocking-20000 --------------------------------------------------- */

#define BLK_N 20000u

int mode_blocking_a(struct chk *k)
{
	struct app *a = &k->a;
	uint64_t *src = xalloc(k, (size_t)BLK_N * sizeof(uint64_t));
	struct dnp_event ev;
	struct app_msg m;
	unsigned i, done = 0;
	uint64_t rva;
	uint32_t rkey;
	int r;

	for (i = 0; i < BLK_N; i++)
		src[i] = 0xb10c000000000000ull | i;
	if (take_offer(k, &m) < 0)
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
		if (next_completion(k, &ev, done, BLK_N) < 0)
			return -EIO;
		if (ev.type == DNP_EV_ERROR || ev.cookie != 7000000 + done) {
			app_print_event(PROG, "blocking", &ev);
			fail(k, "completion %u: not the TX_DONE of PUT %u", done, done);
			return -EIO;
		}
		done++;
	}
	printf("ok: %u blocking PUTs without polling, every completion once and in order\n", BLK_N);
	return a_done(k);
}

int mode_blocking_b(struct chk *k)
{
	struct app *a = &k->a;
	size_t len = (size_t)BLK_N * sizeof(uint64_t);
	uint64_t *dst = xalloc(k, len);
	struct dnp_event ev;
	unsigned i, rx = 0;

	memset(dst, 0, len);
	if (offer(k, dst, len, DNP_BUF_PUT_TARGET, NULL, 0) < 0)
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
	return b_verdict(k, "%u PUTs received, every word verified", BLK_N);
}

/* ---- farthest --------------------------------------------------------- */

#define FAR_LEN 100003u

int mode_farthest(struct chk *k)
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
