/* SPDX-License-Identifier: MIT */
/*
 * Presto: matching, eager and rendez-vous protocols, credits and collectives
 * on libdnp. The contract is in presto.h; the wire format and the protocol
 * are described in docs/presto.md.
 *
 * Every message between two ranks is one DNP SEND of a 64-byte header
 * (plus the payload for eager messages) into one of the receiver's posted
 * SEND-target slots. Headers carry a per-pair sequence number: the receiver
 * hands messages to matching strictly in sequence order (holding early ones
 * aside), so a SEND that had to be retried (the peer was not up yet) cannot
 * overtake, and a duplicate is dropped.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dnp.h"
#include "dnp_yield.h"
#include "presto.h"
#include "regcache.h"
#include "reqtab.h"
#include "stage.h"

#define P_MAGIC 0x5052u /* "PR" */
#define P_HDR 64u
#define P_DEFAULT_SLOT 4096u
#define P_DEFAULT_CREDITS 16u
/*
 * Default eager limit: the slot payload. presto_bench measured eager faster
 * than rendez-vous up to 256 KiB (docs/mpi.md), so the limit is set by the
 * memory the slots take, not by the switch-over.
 */
#define P_DEFAULT_EAGER 4032u
#define P_CTX_USER 0
#define P_CTX_COLL 1
#define P_EV_BATCH 32u

enum p_type {
	M_EAGER = 1,
	M_RTS = 2,
	M_FIN = 3,
	M_HELLO = 4
};
enum p_cookie {
	C_SEND = 1,
	C_CREDIT = 2,
	C_GET = 3,
	C_COLL = 4 /* a collective run by the daemons (p_coll_*) */
};
enum p_slot_state {
	S_FREE = DNP_STAGE_FREE,
	S_PENDING = DNP_STAGE_PENDING,
	S_INFLIGHT = DNP_STAGE_INFLIGHT
};

struct p_hdr {
	uint16_t magic;
	uint8_t type; /* enum p_type */
	uint8_t ctx;  /* P_CTX_* */
	uint32_t src; /* sender's rank */
	uint32_t seq; /* per (sender, receiver) pair, from 0 */
	int32_t tag;
	uint64_t len;      /* EAGER: payload bytes; RTS: message bytes */
	uint64_t va;       /* RTS: sender's buffer; HELLO: credit array */
	uint32_t key;      /* RTS / HELLO: key of va */
	int32_t status;    /* FIN: 0 or -errno of the receiver's GET */
	uint64_t id;       /* RTS / FIN: the sender's request id */
	uint64_t ring_va;  /* HELLO: our eager ring (PUT target), the sender's part at */
	uint32_t ring_key; /*   ring_va + rank * credits * slot */
	uint8_t tc;        /* EAGER, RTS: the message's class (its data and the GET of it) */
	uint8_t rsvd[3];
};
_Static_assert(sizeof(struct p_hdr) == P_HDR, "header is 64 bytes");

enum p_req_kind {
	R_SEND = 1,
	R_RECV = 2
};

struct presto_req {
	enum p_req_kind kind;
	bool done, get_pending;
	bool getting; /* RECV: its rendez-vous GET is issued, its completion awaited */
	uint32_t idx, gen;
	int ctx, src, tag; /* RECV: what to match */
	void *buf;         /* RECV: destination */
	size_t cap;
	size_t got;                   /* RECV rendez-vous: bytes being fetched */
	struct p_hdr rts;             /* RECV rendez-vous: the request being served */
	struct dnp_regcache_ent *reg; /* rendez-vous registration */
	void *bounce;                 /* rendez-vous through a private copy */
	struct presto_status st;
	struct presto_req *next; /* posted list / pending GETs */
};

/* A message waiting for a credit and a staging slot. */
struct p_out {
	struct p_hdr h;
	const void *payload;
	size_t plen;
	struct presto_req *req; /* eager send completed once staged */
	struct p_out *next;
};

/* Arrived and not matched yet (EAGER with its bytes, or RTS). */
struct p_unexp {
	struct p_hdr h;
	void *data;
	struct p_unexp *next;
};

/* Arrived ahead of its sequence number. */
struct p_held {
	struct p_hdr h;
	void *data;
	struct p_held *next;
};

struct p_stage {
	uint8_t state; /* enum p_slot_state */
	bool put;      /* eager ring PUT (else SEND) */
	uint32_t len;
	uint32_t seq;
	uint64_t not_before;
};

struct p_peer {
	struct dnp_coords c;
	/* sending */
	struct p_out *q_head, *q_tail;
	struct p_stage *stage; /* credits entries */
	uint8_t *stage_mem;
	uint32_t next_seq;
	uint64_t sent;    /* SENDs issued (first time) */
	unsigned pending; /* stages in S_PENDING */
	/* receiving */
	uint32_t expect_seq;
	struct p_held *held;
	uint64_t consumed;    /* slots of ours this peer used */
	uint64_t *credit_out; /* value of our last credit PUT (stable until TX_DONE) */
	bool credit_busy, hello, stalled;
	uint64_t credit_va; /* its credit array, our entry */
	uint32_t credit_key;
	uint64_t ring_va; /* its eager ring, our part */
	uint32_t ring_key;
	uint64_t credit_retry_at;
};

struct presto {
	struct dnp *d;
	int rank, size;
	unsigned port, peer_port;
	size_t slot, eager_max;
	unsigned credits, nslots;
	int timeout_ms;
	uint64_t wait_timeout_ns;
	uint8_t *rx_mem;   /* nslots SEND receive slots */
	uint8_t *ring_mem; /* eager ring: credits slots per sender, one PUT target */
	uint32_t ring_key;
	bool eager_put; /* eager messages by PUT into the ring (PRESTO_EAGER=put) */
	struct {
		unsigned slot;
		int src;
	} * repost; /* filled slots not re-posted yet */
	unsigned nrepost;
	uint64_t *credit_in; /* [size]: messages of ours each peer consumed (PUT by them) */
	uint32_t credit_key;
	struct p_peer *peers;
	struct dnp_reqtab reqs; /* requests by (idx, gen): RTS ids, GET cookies */
	struct presto_req *posted_head, *posted_tail;
	struct p_unexp *unexp_head, *unexp_tail;
	struct presto_req *gets;  /* rendez-vous GETs not yet accepted by the queue */
	struct dnp_regcache regs; /* ranges registered for rendez-vous */
	int fatal;
	unsigned idle_tests;
	struct dnp_yield yield; /* test() loops: yield only when somebody else wants the CPU */
	bool closing;
	struct presto_stats stats;
	void *priv[3];           /* rx_mem, credit_in, ring_mem if not in the heap */
	void **priv_peer;        /* per peer: its stage memory if private */
	bool coll_ok, coll_done; /* p_coll_*: every rank joined; the running one ended */
	int coll_status;
	unsigned tc; /* class of the messages started from now on (presto_set_class) */
};

static uint64_t p_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long p_env_long(const char *name, long def, long lo, long hi)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	v = strtol(s, &end, 0);
	if (*end == 'K' || *end == 'k')
		v *= 1024, end++;
	else if (*end == 'M' || *end == 'm')
		v *= 1024 * 1024, end++;
	if (*end || v < lo || v > hi)
		return -1;
	return v;
}

/*
 * Memory the daemon touches: from the session heap when possible (freed with
 * the session), else private pages, recorded in *priv for p_teardown.
 */
static void *p_alloc(struct presto *p, size_t len, void **priv)
{
	void *m = dnp_alloc(p->d, len);

	*priv = NULL;
	if (!m) {
		m = aligned_alloc(4096, (len + 4095) / 4096 * 4096);
		*priv = m;
	}
	if (m)
		memset(m, 0, len);
	return m;
}

/* ---- requests: ids that cross the wire are checked against the table (reqtab.h) ---- */

static struct presto_req *p_req_new(struct presto *p, enum p_req_kind kind)
{
	struct presto_req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->kind = kind;
	r->gen = (uint32_t)(p_now() >> 10) | 1u;
	if (dnp_reqtab_add(&p->reqs, r, r->gen, &r->idx) < 0) {
		free(r);
		return NULL;
	}
	return r;
}

static void p_req_free(struct presto *p, struct presto_req *r)
{
	dnp_reqtab_remove(&p->reqs, r->idx);
	free(r);
}

/*
 * ---- registrations (regcache.h; an exact range may be shared, e.g. bcast's
 * sends, and a range overlapping one in use goes through a private copy) ----
 */

static int p_reg_user(struct presto *p, struct presto_req *q, void *buf, size_t len, bool copy_in)
{
	int r = dnp_regcache_get_user(&p->regs, buf, len, copy_in, &q->reg, &q->bounce);

	if (r == 0 && q->bounce)
		p->stats.bounce++;
	return r;
}

static void p_unreg_user(struct presto *p, struct presto_req *q)
{
	dnp_regcache_put_user(&p->regs, &q->reg, &q->bounce);
}

/* ---- sending ---- */

static int p_enqueue(struct presto *p, int dst, const struct p_hdr *h, const void *payload,
		     size_t plen, struct presto_req *req)
{
	struct p_peer *pe = &p->peers[dst];
	struct p_out *o = calloc(1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	o->h = *h;
	o->h.magic = P_MAGIC;
	o->h.src = (uint32_t)p->rank;
	o->payload = payload;
	o->plen = plen;
	o->req = req;
	if (pe->q_tail)
		pe->q_tail->next = o;
	else
		pe->q_head = o;
	pe->q_tail = o;
	return 0;
}

static void p_fail(struct presto *p, int err, const char *what, int peer)
{
	if (!p->fatal)
		fprintf(stderr, "presto: rank %d: %s (rank %d): %s\n", p->rank, what, peer,
			dnp_strerror(err));
	if (!p->fatal)
		p->fatal = err;
}

/* Issues the SEND of stage k to dst; -EAGAIN leaves it pending. */
static void p_stage_issue(struct presto *p, int dst, unsigned k)
{
	struct p_peer *pe = &p->peers[dst];
	struct p_stage *s = &pe->stage[k];
	uint8_t *m = pe->stage_mem + (size_t)k * p->slot;
	unsigned fl = DNP_NONBLOCK | DNP_TC(((const struct p_hdr *)m)->tc); /* its header's */
	int r;

	if (s->put)
		r = dnp_put(p->d, m, s->len, pe->c, p->peer_port,
			    pe->ring_va + (uint64_t)(s->seq % p->credits) * p->slot, pe->ring_key,
			    dnp_reqtab_cookie(C_SEND, (uint32_t)dst, k), fl);
	else
		r = dnp_send(p->d, m, s->len, pe->c, p->peer_port,
			     dnp_reqtab_cookie(C_SEND, (uint32_t)dst, k), fl);
	dnp_stage_issued(&s->state, &pe->pending, r);
	if (r == 0)
		return;
	s->not_before = 0;
	if (r != -EAGAIN)
		p_fail(p, r, "SEND", dst);
}

static unsigned p_credits(const struct presto *p, int dst)
{
	const struct p_peer *pe = &p->peers[dst];
	uint64_t back = __atomic_load_n(&p->credit_in[dst], __ATOMIC_ACQUIRE);
	uint64_t out = pe->sent - back;

	/* A peer writing nonsense cannot give us more than credits slots. */
	return out >= p->credits ? 0 : p->credits - (unsigned)out;
}

/* Moves queued messages for dst into free stages while credits last. */
static void p_push(struct presto *p, int dst)
{
	struct p_peer *pe = &p->peers[dst];
	uint64_t now = 0;
	unsigned k;

	if (pe->pending) {
		for (k = 0; k < p->credits; k++) {
			if (pe->stage[k].state != S_PENDING)
				continue;
			if (pe->stage[k].not_before) {
				if (!now)
					now = p_now();
				if (now < pe->stage[k].not_before)
					continue;
			}
			p_stage_issue(p, dst, k);
		}
	}
	while (pe->q_head) {
		struct p_out *o = pe->q_head;
		uint8_t *m;

		if (!p_credits(p, dst)) {
			p->stats.credit_stalls += !pe->stalled;
			pe->stalled = true;
			return;
		}
		pe->stalled = false;
		for (k = 0; k < p->credits; k++)
			if (pe->stage[k].state == S_FREE)
				break;
		if (k == p->credits)
			return;
		o->h.seq = pe->next_seq++;
		m = pe->stage_mem + (size_t)k * p->slot;
		memcpy(m, &o->h, P_HDR);
		if (o->plen)
			memcpy(m + P_HDR, o->payload, o->plen);
		pe->stage[k].len = (uint32_t)(P_HDR + o->plen);
		pe->stage[k].seq = o->h.seq;
		/*
		 * Ring slot seq % credits is free: credits say the receiver has
		 * copied out message seq - credits (messages land and are
		 * consumed in order; a HELLO, the only SEND, comes first).
		 */
		pe->stage[k].put = p->eager_put && pe->hello && o->h.type != M_HELLO;
		pe->stage[k].state = S_PENDING;
		pe->stage[k].not_before = 0;
		pe->pending++;
		pe->sent++;
		pe->q_head = o->next;
		if (!pe->q_head)
			pe->q_tail = NULL;
		if (o->req) { /* eager: the user's buffer is free again */
			o->req->done = true;
			p->stats.eager_sent++;
		}
		free(o);
		p_stage_issue(p, dst, k);
	}
}

static void p_credit_return(struct presto *p, int src)
{
	struct p_peer *pe = &p->peers[src];
	int r;

	if (pe->credit_busy || !pe->hello || *pe->credit_out == pe->consumed)
		return;
	if (pe->credit_retry_at && p_now() < pe->credit_retry_at)
		return;
	/* One credit PUT in flight per peer: counts batch up behind it. */
	*pe->credit_out = pe->consumed;
	r = dnp_put(p->d, pe->credit_out, sizeof(uint64_t), pe->c, p->peer_port, pe->credit_va,
		    pe->credit_key, dnp_reqtab_cookie(C_CREDIT, (uint32_t)src, 0), DNP_NONBLOCK);
	if (r == 0)
		pe->credit_busy = true;
	else if (r != -EAGAIN)
		p_fail(p, r, "credit PUT", src);
}

/* ---- matching ---- */

static bool p_match(const struct presto_req *q, const struct p_hdr *h)
{
	if (q->ctx != h->ctx)
		return false;
	if (q->src != PRESTO_ANY_SOURCE && q->src != (int)h->src)
		return false;
	return q->tag == PRESTO_ANY_TAG || q->tag == h->tag;
}

static void p_get_issue(struct presto *p, struct presto_req *q);

static void p_fin(struct presto *p, int dst, uint64_t id, int status)
{
	struct p_hdr h = { .type = M_FIN, .id = id, .status = status };

	if (p_enqueue(p, dst, &h, NULL, 0, NULL) < 0) /* its only error */
		p_fail(p, -ENOMEM, "FIN", dst);
	p_push(p, dst); /* now: its sender waits, and we may not be called again for long */
}

static void p_recv_done(struct presto_req *q, const struct p_hdr *h, size_t n, int err)
{
	q->st.source = (int)h->src;
	q->st.tag = h->tag;
	q->st.len = n;
	q->st.error = err;
	q->done = true;
}

/* A matched rendez-vous: fetch the data with a GET into the receive buffer. */
static void p_rndv_start(struct presto *p, struct presto_req *q, const struct p_hdr *h)
{
	size_t n = h->len < q->cap ? h->len : q->cap;
	int r;

	q->rts = *h;
	q->got = n;
	if (n == 0) {
		p_fin(p, (int)h->src, h->id, 0);
		p_recv_done(q, h, 0, h->len ? -EMSGSIZE : 0);
		return;
	}
	r = p_reg_user(p, q, q->buf, n, false);
	if (r < 0) {
		p_fin(p, (int)h->src, h->id, r);
		p_recv_done(q, h, 0, r);
		return;
	}
	q->get_pending = true;
	p_get_issue(p, q);
}

static void p_get_issue(struct presto *p, struct presto_req *q)
{
	const struct p_hdr *h = &q->rts;
	void *dst = q->bounce ? q->bounce : q->buf;
	int r;

	r = dnp_get(p->d, dst, q->got, q->reg->key, p->peers[h->src].c, p->peer_port, h->va, h->key,
		    dnp_reqtab_cookie(C_GET, q->idx, q->gen), DNP_NONBLOCK | DNP_TC(h->tc));
	if (r == 0) {
		q->get_pending = false;
		q->getting = true;
		return;
	}
	if (r != -EAGAIN) {
		p_unreg_user(p, q);
		p_fin(p, (int)h->src, h->id, r);
		p_recv_done(q, h, 0, r);
		q->get_pending = false;
		return;
	}
	/* The command queue is full: retry from the progress loop. */
	q->next = p->gets;
	p->gets = q;
}

static void p_deliver(struct presto *p, struct presto_req *q, const struct p_hdr *h,
		      const void *data)
{
	size_t n;

	if (h->type == M_RTS) {
		p_rndv_start(p, q, h);
		return;
	}
	n = h->len < q->cap ? h->len : q->cap;
	if (n)
		memcpy(q->buf, data, n);
	p_recv_done(q, h, n, h->len > q->cap ? -EMSGSIZE : 0);
}

static void p_incoming(struct presto *p, const struct p_hdr *h, const void *data)
{
	struct presto_req **pp, *q;
	struct p_unexp *u;

	for (pp = &p->posted_head, q = NULL; *pp; pp = &(*pp)->next)
		if (p_match(*pp, h)) {
			q = *pp;
			*pp = q->next;
			if (p->posted_tail == q) {
				struct presto_req *t = p->posted_head;

				while (t && t->next)
					t = t->next;
				p->posted_tail = t;
			}
			q->next = NULL;
			break;
		}
	if (q) {
		p_deliver(p, q, h, data);
		return;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		p_fail(p, -ENOMEM, "unexpected message", (int)h->src);
		return;
	}
	u->h = *h;
	if (h->type == M_EAGER && h->len) {
		u->data = malloc(h->len);
		if (!u->data) {
			free(u);
			p_fail(p, -ENOMEM, "unexpected message", (int)h->src);
			return;
		}
		memcpy(u->data, data, h->len);
	}
	p->stats.unexpected++;
	if (p->unexp_tail)
		p->unexp_tail->next = u;
	else
		p->unexp_head = u;
	p->unexp_tail = u;
}

/* One message in sequence order. */
static void p_dispatch(struct presto *p, const struct p_hdr *h, const void *data)
{
	struct p_peer *pe = &p->peers[h->src];
	struct presto_req *q;

	switch (h->type) {
	case M_EAGER:
	case M_RTS:
		p_incoming(p, h, data);
		break;
	case M_FIN:
		q = dnp_reqtab_find_id(&p->reqs, h->id);
		if (!q || q->kind != R_SEND || q->done) {
			fprintf(stderr, "presto: rank %d: FIN for unknown request from rank %u\n",
				p->rank, h->src);
			break;
		}
		p_unreg_user(p, q);
		q->st.error = h->status;
		q->done = true;
		break;
	case M_HELLO:
		pe->credit_va = h->va + (uint64_t)p->rank * sizeof(uint64_t);
		pe->credit_key = h->key;
		pe->ring_va = h->ring_va + (uint64_t)p->rank * p->credits * p->slot;
		pe->ring_key = h->ring_key;
		pe->hello = true;
		break;
	}
}

/* Checks a header that arrived in one of our slots (the peer is untrusted). */
static bool p_hdr_ok(const struct presto *p, const struct p_hdr *h, size_t len,
		     const struct dnp_event *ev)
{
	const struct p_peer *pe;

	if (h->magic != P_MAGIC || h->src >= (uint32_t)p->size || h->ctx > P_CTX_COLL)
		return false;
	pe = &p->peers[h->src];
	if (pe->c.x != ev->peer_x || pe->c.y != ev->peer_y || pe->c.z != ev->peer_z)
		return false;
	switch (h->type) {
	case M_EAGER:
		return h->len == len - P_HDR && h->tag >= 0;
	case M_RTS:
		return len == P_HDR && h->tag >= 0 && h->len <= DNP_MAX_MSG;
	case M_FIN:
	case M_HELLO:
		return len == P_HDR;
	default:
		return false;
	}
}

static int p_post_slot(struct presto *p, unsigned i)
{
	uint8_t *s = p->rx_mem + (size_t)i * p->slot;
	uint32_t key;
	int r;

	/* A filled SEND slot stays registered but retired: re-register to re-post it. */
	r = dnp_unregister(p->d, s);
	if (r < 0 && r != -ENOENT)
		return r;
	return dnp_register(p->d, s, p->slot, DNP_BUF_SEND_TARGET, &key);
}

/*
 * A message in receive slot i: a SEND slot (put false: re-posted later) or
 * a slot of the eager ring (put true: slot i belongs to sender i / credits,
 * free again once copied out).
 */
static void p_rx_msg(struct presto *p, const struct dnp_event *ev, bool put)
{
	uint8_t *mem = put ? p->ring_mem : p->rx_mem;
	uint64_t base = (uintptr_t)mem, off;
	struct p_hdr h;
	struct p_peer *pe;
	const uint8_t *slot;
	bool valid = false;
	int credit_to = -1;
	unsigned i;

	if (ev->va < base || ev->va >= base + (uint64_t)p->nslots * p->slot)
		return;
	off = ev->va - base;
	i = (unsigned)(off / p->slot);
	slot = mem + (size_t)i * p->slot;
	if (off % p->slot || ev->len < P_HDR || ev->len > p->slot) {
		fprintf(stderr, "presto: rank %d: malformed SEND (len %u)\n", p->rank, ev->len);
		goto repost;
	}
	memcpy(&h, slot, P_HDR);
	if (!p_hdr_ok(p, &h, ev->len, ev) || (put && h.src != i / p->credits)) {
		fprintf(stderr, "presto: rank %d: bad message header from %u,%u,%u\n", p->rank,
			ev->peer_x, ev->peer_y, ev->peer_z);
		goto repost;
	}
	valid = true;
	pe = &p->peers[h.src];
	if (h.seq == pe->expect_seq) {
		pe->expect_seq++;
		credit_to = (int)h.src;
		p_dispatch(p, &h, slot + P_HDR);
	} else if ((int32_t)(h.seq - pe->expect_seq) > 0) {
		struct p_held *e = calloc(1, sizeof(*e)), **pp;

		credit_to = (int)h.src;
		if (!e || (ev->len > P_HDR && !(e->data = malloc(ev->len - P_HDR)))) {
			free(e);
			p_fail(p, -ENOMEM, "holding a message", (int)h.src);
			goto repost;
		}
		e->h = h;
		if (ev->len > P_HDR)
			memcpy(e->data, slot + P_HDR, ev->len - P_HDR);
		for (pp = &pe->held; *pp && (int32_t)((*pp)->h.seq - h.seq) < 0; pp = &(*pp)->next)
			;
		e->next = *pp;
		*pp = e;
		p->stats.held_out_of_order++;
	} else {
		p->stats.duplicates++;
	}
repost:
	if (put) {
		if (credit_to >= 0)
			p->peers[credit_to].consumed++;
		goto held;
	}
	/*
	 * Re-posting costs two requests to the daemon: it is deferred to the
	 * next idle progress round, off the path of the reply the application
	 * is about to send. The sender gets its credit back only then.
	 */
	p->repost[p->nrepost].slot = i;
	p->repost[p->nrepost].src = credit_to;
	p->nrepost++;
held:
	if (!valid)
		return;
	pe = &p->peers[h.src];
	while (pe->held && pe->held->h.seq == pe->expect_seq) {
		struct p_held *e = pe->held;

		pe->held = e->next;
		pe->expect_seq++;
		p_dispatch(p, &e->h, e->data);
		free(e->data);
		free(e);
	}
}

static void p_repost_flush(struct presto *p)
{
	unsigned k;
	int r;

	for (k = 0; k < p->nrepost; k++) {
		r = p_post_slot(p, p->repost[k].slot);
		if (r < 0)
			p_fail(p, r, "re-posting a receive slot", p->rank);
		else if (p->repost[k].src >= 0)
			p->peers[p->repost[k].src].consumed++;
	}
	p->nrepost = 0;
}

static bool p_retryable(int st)
{
	return st == -ECONNREFUSED || st == -ENOBUFS || st == -EBUSY || st == -ENOENT;
}

static void p_event(struct presto *p, const struct dnp_event *ev)
{
	struct presto_req *q;
	struct p_peer *pe;
	unsigned kind;
	uint32_t a, b;

	dnp_reqtab_cookie_split(ev->cookie, &kind, &a, &b);

	switch (ev->type) {
	case DNP_EV_RX_SEND:
		p_rx_msg(p, ev, false);
		return;
	case DNP_EV_RX_PUT: /* eager ring; credit updates are read from credit_in */
		p_rx_msg(p, ev, true);
		return;
	case DNP_EV_LINK:
		return;
	default:
		break;
	}
	/* Completions and errors of our own commands. */
	if (kind == C_COLL) { /* the collective in p_coll_wait */
		p->coll_done = true;
		p->coll_status = ev->type == DNP_EV_TX_DONE ? 0 : ev->status ? ev->status : -EIO;
		return;
	}
	if (kind == C_SEND && a < (uint32_t)p->size && b < p->credits) {
		pe = &p->peers[a];
		if (pe->stage[b].state != S_INFLIGHT)
			return;
		if (ev->type == DNP_EV_TX_DONE) {
			pe->stage[b].state = S_FREE;
			return;
		}
		if (p_retryable(ev->status)) {
			p->stats.retries++;
			pe->stage[b].state = S_PENDING;
			pe->stage[b].not_before = p_now() + 200000; /* peer not ready: 0.2 ms */
			pe->pending++;
			return;
		}
		pe->stage[b].state = S_FREE;
		p_fail(p, ev->status ? ev->status : -EIO, "SEND failed", (int)a);
		return;
	}
	if (kind == C_CREDIT && a < (uint32_t)p->size) {
		pe = &p->peers[a];
		pe->credit_busy = false;
		if (ev->type == DNP_EV_ERROR) {
			*pe->credit_out = 0; /* resend the count */
			pe->credit_retry_at = p_now() + 200000;
			if (!p->closing && !p_retryable(ev->status))
				p_fail(p, ev->status, "credit PUT failed", (int)a);
		} else {
			pe->credit_retry_at = 0;
		}
		p_credit_return(p, (int)a);
		return;
	}
	if (kind == C_GET) {
		/* the cookie holds 24 bits of the index */
		q = dnp_reqtab_find(&p->reqs, a, b);
		/* only a receive whose GET we issued: any other is a forged event */
		if (!q || q->kind != R_RECV || q->done || !q->getting)
			return;
		q->getting = false;
		if (q->bounce && ev->type == DNP_EV_GET_DONE)
			memcpy(q->buf, q->bounce, q->got);
		p_unreg_user(p, q);
		if (ev->type == DNP_EV_GET_DONE) {
			p_fin(p, (int)q->rts.src, q->rts.id, 0);
			p_recv_done(q, &q->rts, q->got, q->rts.len > q->cap ? -EMSGSIZE : 0);
		} else {
			int st = ev->status ? ev->status : -EIO;

			p_fin(p, (int)q->rts.src, q->rts.id, st);
			p_recv_done(q, &q->rts, 0, st);
		}
	}
}

/* One round of progress; returns the number of events handled. */
static int p_progress(struct presto *p)
{
	struct dnp_event ev[P_EV_BATCH];
	int n, i, dst;

	n = dnp_poll_events(p->d, ev, P_EV_BATCH);
	if (n < 0) {
		p_fail(p, n, "event queue", p->rank);
		return n;
	}
	for (i = 0; i < n; i++)
		p_event(p, &ev[i]);
	if (p->nrepost && (n == 0 || p->nrepost >= p->nslots / 2))
		p_repost_flush(p);
	if (p->gets) {
		struct presto_req *l = p->gets;

		p->gets = NULL;
		while (l) {
			struct presto_req *q = l;

			l = l->next;
			p_get_issue(p, q);
		}
	}
	for (dst = 0; dst < p->size; dst++) {
		struct p_peer *pe = &p->peers[dst];

		if (pe->q_head || pe->pending)
			p_push(p, dst);
		if (!pe->credit_busy && pe->hello && *pe->credit_out != pe->consumed)
			p_credit_return(p, dst);
	}
	return n;
}

/* Waits for one event when nothing is happening (keeps two cores usable). */
static int p_idle(struct presto *p)
{
	struct dnp_event ev;
	int r = dnp_wait_event(p->d, &ev, 1);

	if (r == 1)
		p_event(p, &ev);
	if (r < 0)
		p_fail(p, r, "event queue", p->rank);
	return r;
}

/* ---- public API ---- */

static int p_isend(struct presto *p, const void *buf, size_t len, int dst, int tag, int ctx,
		   struct presto_req **out)
{
	struct presto_req *q;
	struct p_hdr h = { .ctx = (uint8_t)ctx, .tag = tag, .len = len, .tc = (uint8_t)p->tc };
	int r;

	if (dst < 0 || dst >= p->size || tag < 0 || tag > PRESTO_TAG_MAX || (!buf && len) || !out ||
	    len > DNP_MAX_MSG)
		return -EINVAL;
	if (p->fatal)
		return p->fatal;
	q = p_req_new(p, R_SEND);
	if (!q)
		return -ENOMEM;
	q->st.source = p->rank;
	q->st.tag = tag;
	q->st.len = len;
	if (len <= p->eager_max) {
		h.type = M_EAGER;
		r = p_enqueue(p, dst, &h, buf, len, q);
	} else {
		h.type = M_RTS;
		r = p_reg_user(p, q, (void *)(uintptr_t)buf, len, true);
		if (r == 0) {
			h.va = (uintptr_t)(q->bounce ? q->bounce : buf);
			h.key = q->reg->key;
			h.id = dnp_reqtab_id(q->idx, q->gen);
			r = p_enqueue(p, dst, &h, NULL, 0, NULL);
			if (r < 0)
				p_unreg_user(p, q);
			else
				p->stats.rndv_sent++;
		}
	}
	if (r < 0) {
		p_req_free(p, q);
		return r;
	}
	*out = q;
	p_push(p, dst);
	return 0;
}

static int p_irecv(struct presto *p, void *buf, size_t cap, int src, int tag, int ctx,
		   struct presto_req **out)
{
	struct presto_req *q;
	struct p_unexp **pp, *u;

	if (src < PRESTO_ANY_SOURCE || src >= p->size || tag < PRESTO_ANY_TAG ||
	    tag > PRESTO_TAG_MAX || (!buf && cap) || !out)
		return -EINVAL;
	if (p->fatal)
		return p->fatal;
	q = p_req_new(p, R_RECV);
	if (!q)
		return -ENOMEM;
	q->ctx = ctx;
	q->src = src;
	q->tag = tag;
	q->buf = buf;
	q->cap = cap;
	*out = q;
	for (pp = &p->unexp_head; *pp; pp = &(*pp)->next) {
		if (!p_match(q, &(*pp)->h))
			continue;
		u = *pp;
		*pp = u->next;
		if (p->unexp_tail == u) {
			struct p_unexp *t = p->unexp_head;

			while (t && t->next)
				t = t->next;
			p->unexp_tail = t;
		}
		p_deliver(p, q, &u->h, u->data);
		free(u->data);
		free(u);
		return 0;
	}
	if (p->posted_tail)
		p->posted_tail->next = q;
	else
		p->posted_head = q;
	p->posted_tail = q;
	return 0;
}

int presto_isend(struct presto *p, const void *buf, size_t len, int dst, int tag,
		 struct presto_req **req)
{
	return p_isend(p, buf, len, dst, tag, P_CTX_USER, req);
}

int presto_irecv(struct presto *p, void *buf, size_t cap, int src, int tag, struct presto_req **req)
{
	return p_irecv(p, buf, cap, src, tag, P_CTX_USER, req);
}

static int p_finish(struct presto *p, struct presto_req **req, struct presto_status *st)
{
	struct presto_req *q = *req;
	int err = q->st.error;

	if (st)
		*st = q->st;
	p_req_free(p, q);
	*req = NULL;
	return err;
}

int presto_test(struct presto *p, struct presto_req **req, int *flag, struct presto_status *st)
{
	if (!req || !*req || !flag)
		return -EINVAL;
	*flag = 0;
	if (!(*req)->done && p_progress(p) == 0 && ++p->idle_tests >= 32) {
		/*
		 * A caller polling test() in a loop must not starve its daemon;
		 * alone on the CPU the yield is a wasted system call (dnp_yield.h).
		 */
		p->idle_tests = 0;
		dnp_yield_step(&p->yield, dnp_yield_now());
	}
	if (!(*req)->done)
		return p->fatal;
	*flag = 1;
	return p_finish(p, req, st);
}

int presto_wait(struct presto *p, struct presto_req **req, struct presto_status *st)
{
	uint64_t deadline = p->wait_timeout_ns ? p_now() + p->wait_timeout_ns : 0;
	unsigned idle = 0;

	if (!req || !*req)
		return -EINVAL;
	while (!(*req)->done) {
		if (p->fatal)
			return p->fatal;
		if (p_progress(p) > 0) {
			idle = 0;
			continue;
		}
		if (++idle > 64)
			p_idle(p);
		if (deadline && p_now() > deadline)
			return -ETIMEDOUT;
	}
	return p_finish(p, req, st);
}

int presto_send(struct presto *p, const void *buf, size_t len, int dst, int tag)
{
	struct presto_req *q;
	int r = presto_isend(p, buf, len, dst, tag, &q);

	return r < 0 ? r : presto_wait(p, &q, NULL);
}

int presto_recv(struct presto *p, void *buf, size_t cap, int src, int tag, struct presto_status *st)
{
	struct presto_req *q;
	int r = presto_irecv(p, buf, cap, src, tag, &q);

	return r < 0 ? r : presto_wait(p, &q, st);
}

int presto_rank(const struct presto *p)
{
	return p->rank;
}

int presto_size(const struct presto *p)
{
	return p->size;
}

size_t presto_eager_max(const struct presto *p)
{
	return p->eager_max;
}

int presto_set_eager_max(struct presto *p, size_t n)
{
	if (n > p->slot - P_HDR)
		return -EINVAL;
	p->eager_max = n;
	return 0;
}

int presto_set_class(struct presto *p, unsigned tc)
{
	if (tc > 7)
		return -EINVAL;
	p->tc = tc;
	return 0;
}

unsigned presto_class(const struct presto *p)
{
	return p->tc;
}

void presto_get_stats(const struct presto *p, struct presto_stats *st)
{
	*st = p->stats;
}

#include "presto_hcoll.h" /* host-based collectives (and those of the daemons) */

/* ---- set-up and tear-down ---- */

static int p_conf(struct presto *p, const struct presto_conf *c)
{
	struct presto_conf e;
	long v;

	if (!c) {
		memset(&e, 0, sizeof(e));
		v = p_env_long("PRESTO_SLOT_SIZE", P_DEFAULT_SLOT, 128, 1 << 20);
		if (v < 0)
			return -EINVAL;
		e.slot_size = (size_t)v;
		v = p_env_long("PRESTO_EAGER_MAX", -2, 0, 1 << 20);
		if (v == -1)
			return -EINVAL;
		e.eager_max = v == -2 ? (size_t)-1 : (size_t)v;
		v = p_env_long("PRESTO_CREDITS", P_DEFAULT_CREDITS, 2, 256);
		if (v < 0)
			return -EINVAL;
		e.credits = (unsigned)v;
		v = p_env_long("PRESTO_TIMEOUT", 60, 1, 86400);
		if (v < 0)
			return -EINVAL;
		e.timeout_ms = (int)v * 1000;
		c = &e;
	}
	if (c->slot_size < 128 || c->slot_size > (1u << 20) || c->credits < 2 || c->credits > 256 ||
	    c->timeout_ms <= 0)
		return -EINVAL;
	p->slot = (c->slot_size + 63) / 64 * 64;
	p->credits = c->credits;
	p->timeout_ms = c->timeout_ms;
	p->eager_max = c->eager_max == (size_t)-1 ? P_DEFAULT_EAGER : c->eager_max;
	if (p->eager_max > p->slot - P_HDR)
		p->eager_max = p->slot - P_HDR;
	{
		const char *how = getenv("PRESTO_EAGER");

		if (how && *how && strcmp(how, "put") && strcmp(how, "send"))
			return -EINVAL;
		p->eager_put = !how || !*how || !strcmp(how, "put");
	}
	v = p_env_long("PRESTO_WAIT_TIMEOUT", 0, 0, 86400);
	p->wait_timeout_ns = v > 0 ? (uint64_t)v * 1000000000ull : 0;
	return 0;
}

static void p_teardown(struct presto *p)
{
	int i;

	if (p->peers) {
		for (i = 0; i < p->size; i++) {
			struct p_peer *pe = &p->peers[i];

			while (pe->q_head) {
				struct p_out *o = pe->q_head;

				pe->q_head = o->next;
				free(o);
			}
			while (pe->held) {
				struct p_held *e = pe->held;

				pe->held = e->next;
				free(e->data);
				free(e);
			}
			free(pe->stage);
		}
	}
	while (p->unexp_head) {
		struct p_unexp *u = p->unexp_head;

		p->unexp_head = u->next;
		free(u->data);
		free(u);
	}
	dnp_regcache_fini(&p->regs);
	dnp_reqtab_fini(&p->reqs, free);
	free(p->peers);
	if (p->d)
		dnp_close(p->d); /* the daemon drops our buffers and the heap with the session */
	for (i = 0; i < 3; i++)
		free(p->priv[i]);
	for (i = 0; p->priv_peer && i < p->size; i++)
		free(p->priv_peer[i]);
	free(p->priv_peer);
	free(p->repost);
	free(p);
}

int presto_init(const struct presto_conf *conf, struct presto **out)
{
	struct dnp_coords self, dims;
	struct presto *p;
	const char *pp;
	uint64_t deadline;
	unsigned i;
	int r, k, have;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	/* No limit below 32 bits of index (a GET's cookie carries only 24 of them). */
	dnp_reqtab_init(&p->reqs, UINT32_MAX);
	r = p_conf(p, conf);
	if (r < 0)
		goto err;
	r = dnp_open(NULL, &p->d);
	if (r < 0)
		goto err;
	dnp_regcache_init(&p->regs, p->d);
	r = dnp_self(p->d, &self, &dims);
	if (r < 0)
		goto err;
	p->size = (int)(dims.x * dims.y * dims.z);
	p->rank = (int)(self.x + dims.x * (self.y + dims.y * self.z));
	p->port = dnp_port(p->d);
	pp = getenv("DNP_PEER_PORT");
	p->peer_port = pp && *pp ? (unsigned)atoi(pp) : p->port;
	p->nslots = p->credits * (unsigned)p->size;
	p->peers = calloc((size_t)p->size, sizeof(*p->peers));
	p->priv_peer = calloc((size_t)p->size, sizeof(void *));
	p->repost = calloc(p->nslots, sizeof(*p->repost));
	p->rx_mem = p_alloc(p, (size_t)p->nslots * p->slot, &p->priv[0]);
	p->credit_in = p_alloc(p, (size_t)p->size * sizeof(uint64_t) * 2, &p->priv[1]);
	p->ring_mem = p_alloc(p, (size_t)p->nslots * p->slot, &p->priv[2]);
	r = -ENOMEM;
	if (!p->peers || !p->priv_peer || !p->repost || !p->rx_mem || !p->credit_in || !p->ring_mem)
		goto err;
	for (k = 0; k < p->size; k++) {
		struct p_peer *pe = &p->peers[k];

		pe->c.x = (unsigned)k % dims.x;
		pe->c.y = (unsigned)k / dims.x % dims.y;
		pe->c.z = (unsigned)k / (dims.x * dims.y);
		pe->credit_out = &p->credit_in[p->size + k];
		pe->stage = calloc(p->credits, sizeof(*pe->stage));
		pe->stage_mem = p_alloc(p, (size_t)p->credits * p->slot, &p->priv_peer[k]);
		if (!pe->stage || !pe->stage_mem)
			goto err;
	}
	r = dnp_register(p->d, p->credit_in, (size_t)p->size * sizeof(uint64_t), DNP_BUF_PUT_TARGET,
			 &p->credit_key);
	if (r < 0)
		goto err;
	r = dnp_register(p->d, p->ring_mem, (size_t)p->nslots * p->slot, DNP_BUF_PUT_TARGET,
			 &p->ring_key);
	if (r < 0)
		goto err;
	for (i = 0; i < p->nslots; i++) {
		r = p_post_slot(p, i);
		if (r < 0)
			goto err;
	}
	/* HELLO to every rank (ourselves included): where to PUT credits back. */
	for (k = 0; k < p->size; k++) {
		struct p_hdr h = { .type = M_HELLO,
				   .va = (uintptr_t)p->credit_in,
				   .key = p->credit_key,
				   .ring_va = (uintptr_t)p->ring_mem,
				   .ring_key = p->ring_key };

		r = p_enqueue(p, k, &h, NULL, 0, NULL);
		if (r < 0)
			goto err;
		p_push(p, k);
	}
	deadline = p_now() + (uint64_t)p->timeout_ms * 1000000ull;
	for (;;) {
		for (k = 0, have = 0; k < p->size; k++)
			have += p->peers[k].hello;
		if (have == p->size)
			break;
		if (p->fatal) {
			r = p->fatal;
			goto err;
		}
		if (p_now() > deadline) {
			fprintf(stderr, "presto: rank %d: only %d of %d ranks answered\n", p->rank,
				have, p->size);
			r = -ETIMEDOUT;
			goto err;
		}
		if (p_progress(p) == 0)
			p_idle(p);
	}
	p_coll_join(p); /* collectives run by the daemons, when every rank has them */
	*out = p;
	return 0;
err:
	p_teardown(p);
	return r;
}

void presto_finalize(struct presto *p)
{
	uint64_t deadline;
	bool busy;
	int k;
	unsigned s;

	if (!p)
		return;
	presto_barrier(p);
	p->closing = true;
	/* Our last SENDs (and FINs) must land before the port closes. */
	deadline = p_now() + 2000000000ull;
	do {
		busy = false;
		for (k = 0; k < p->size; k++) {
			struct p_peer *pe = &p->peers[k];

			busy |= pe->q_head != NULL || pe->credit_busy;
			for (s = 0; s < p->credits; s++)
				busy |= pe->stage[s].state != S_FREE;
		}
		if (busy && p_progress(p) == 0)
			p_idle(p);
	} while (busy && !p->fatal && p_now() < deadline);
	p_teardown(p);
}
