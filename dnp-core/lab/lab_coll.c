/* SPDX-License-Identifier: MIT */
/*
 * lab_coll.c — collectives in the lab (conf.coll_op, lab.h): every node's
 * port 0 joins one group of all nodes, then runs conf.coll_count
 * collectives back to back, the engine's own (dnp-core/coll.c). The
 * members' memory is simulated like the traffic's: the member list and the
 * sources are functions of the node, and every result the engine writes is
 * checked as it is written (lab_internal.h lists the parts).
 *
 * With conf.coll_host the same collectives run as the hosts run them
 * (Presto's host-based algorithms, presto/presto_hcoll.h): no group, each
 * node's application follows its list of steps (send its current value to
 * a peer, or wait for a peer's message and reduce it in), the messages
 * being PUTs of a 64-byte header and the payload into a landing slot of
 * the peer's, the host's time modelled per event and per reduced byte
 * (lab.h). Its memory is real here: the value of every step, and the
 * landing slots; each member's result is checked when it has it.
 */
#include "lab_internal.h"

#define COLL_GID 0x1ab
#define COLL_MEMBERS LAB_COLL_BASE
#define COLL_SRC (LAB_COLL_BASE + 0x100000ull)
#define COLL_DST (LAB_COLL_BASE + 0x200000ull)

struct lab_coll_node {
	uint32_t done; /* commands ended: the join, then collectives */
	bool busy;
	uint64_t t_sub;
};

/* ---- host-based mode (conf.coll_host) ---- */
#define HC_HDR 64u /* Presto's eager header, before the payload */
#define HC_MAGIC 0x4c4f4348u
#define HC_SEND (LAB_COLL_BASE + 0x1000000000ull) /* step i's message at + i * stride */
#define HC_RECV (LAB_COLL_BASE + 0x2000000000ull) /* landing slots, the PUT target */

enum {
	HS_SEND = 0,
	HS_RECV = 1,
	HS_TAKE = 2
}; /* TAKE: a receive whose bytes replace */

struct hc_step {
	uint32_t peer;
	uint8_t kind; /* HS_* */
	uint8_t slot; /* landing slot at the receiver */
	uint8_t ver;  /* SEND: the value version sent; RECV/TAKE: ver -> ver + 1 */
};

struct hc_node {
	uint32_t c;        /* collective under way, 0-based */
	uint32_t pc;       /* next step */
	uint32_t nsteps;   /* steps of a collective */
	uint32_t inflight; /* PUTs without their completion */
	uint64_t busy;     /* the host's CPU is busy until then (and the program at this point) */
	uint64_t t_start;
	bool got;     /* collective c's result is in */
	bool waiting; /* done with c, its sends too: waits for the others */
	bool over;    /* all collectives done */
};

struct lab_coll {
	uint32_t len; /* bytes per collective */
	/* host-based mode: S landing slots, V value versions, steps of each node */
	bool host;
	uint32_t stride, nslots, nver, maxsteps;
	struct hc_node *hn;
	struct hc_step *steps;  /* n x maxsteps */
	uint32_t *keys;         /* each node's landing buffer key */
	uint8_t *val;           /* n x nver x len */
	uint8_t *land;          /* n x coll_count x nslots x stride */
	uint64_t *handled;      /* 1 + the time the host handled each landing's RX event, 0: not */
	uint32_t cur;           /* the collective under way */
	uint32_t ready, failed; /* members waiting for the next one; members that failed */
	struct lab_coll_node *nodes;
	uint64_t *lat; /* per member and collective */
	uint64_t nlat;
	uint64_t t_first, t_last;
};

static int hc_create(struct dnp_lab *lab, struct lab_coll *co);

int lab_coll_create(struct dnp_lab *lab)
{
	const struct dnp_lab_conf *c = &lab->conf;
	struct lab_coll *co;

	if ((c->coll_op != DNP_OP_ALLREDUCE && c->coll_op != DNP_OP_BARRIER &&
	     c->coll_op != DNP_OP_BCAST) ||
	    c->coll_size > DNP_COLL_MAX_BYTES || !c->coll_count ||
	    (lab->n > DNP_COLL_MAX_MEMBERS && !c->coll_host))
		return -EINVAL;
	co = calloc(1, sizeof(*co));
	if (!co)
		return -ENOMEM;
	lab->coll = co;
	co->len = c->coll_op == DNP_OP_BARRIER ? 0 :
		  c->coll_op == DNP_OP_BCAST   ? c->coll_size :
		  c->coll_size >= 8            ? c->coll_size / 8 * 8 :
						 8;
	co->nodes = calloc(lab->n, sizeof(*co->nodes));
	co->lat = calloc((size_t)lab->n * c->coll_count, sizeof(*co->lat));
	if (!co->nodes || !co->lat)
		return -ENOMEM;
	co->t_first = 0; /* everybody starts at time 0 */
	if (c->coll_host)
		return hc_create(lab, co);
	co->t_first = UINT64_MAX;
	lab->open_msgs += lab->n * (c->coll_count + 1);
	return 0;
}

void lab_coll_destroy(struct dnp_lab *lab)
{
	if (!lab->coll)
		return;
	free(lab->coll->nodes);
	free(lab->coll->lat);
	free(lab->coll->hn);
	free(lab->coll->steps);
	free(lab->coll->keys);
	free(lab->coll->val);
	free(lab->coll->land);
	free(lab->coll->handled);
	free(lab->coll);
	lab->coll = NULL;
}

/* Element k of node id's source: int64. */
static int64_t src_val(uint32_t id, uint64_t k)
{
	return (int64_t)id * 1000003 + (int64_t)k;
}

/* Byte b of node id's source (broadcast: the root's bytes, the same everywhere). */
static uint8_t src_byte(const struct dnp_lab *lab, uint32_t id, uint64_t b)
{
	return lab->conf.coll_op == DNP_OP_BCAST ?
		       (uint8_t)(b * 7 + 1) :
		       (uint8_t)((uint64_t)src_val(id, b / 8) >> (8 * (b % 8)));
}

/* Byte b of every member's result: the sum over all nodes, or the root's byte. */
static uint8_t coll_want(const struct dnp_lab *lab, uint64_t b)
{
	uint64_t n = lab->n;
	int64_t sum = (int64_t)(n * (n - 1) / 2) * 1000003 + (int64_t)(n * (b / 8));

	return lab->conf.coll_op == DNP_OP_BCAST ? (uint8_t)(b * 7 + 1) :
						   (uint8_t)((uint64_t)sum >> (8 * (b % 8)));
}

/* ------------------------------------------------ host-based mode */

static unsigned co_log2(uint32_t n)
{
	unsigned lg = 0;

	while ((1ull << lg) < n)
		lg++;
	return lg;
}

static unsigned hc_push(struct hc_step *s, unsigned k, uint8_t kind, uint32_t peer, unsigned slot,
			unsigned *ver)
{
	s[k] = (struct hc_step){
		.peer = peer, .kind = kind, .slot = (uint8_t)slot, .ver = (uint8_t)*ver
	};
	if (kind != HS_SEND)
		++*ver;
	return k + 1;
}

/*
 * Presto's binomial broadcast from rank 0 (presto_bcast): receive from the
 * parent into 'slot', then send to the children, the farthest first.
 */
static unsigned hc_bcast(struct hc_step *s, unsigned k, uint32_t n, uint32_t r, unsigned slot,
			 unsigned *ver)
{
	uint32_t mask;

	for (mask = 1; mask < n; mask <<= 1)
		if (r & mask) {
			k = hc_push(s, k, HS_TAKE, r - mask, slot, ver);
			break;
		}
	for (mask >>= 1; mask > 0; mask >>= 1)
		if (r + mask < n)
			k = hc_push(s, k, HS_SEND, r + mask, slot, ver);
	return k;
}

/* The steps of rank r in one collective (at most co->maxsteps), their number. */
static unsigned hc_build(const struct dnp_lab *lab, uint32_t r, struct hc_step *s)
{
	uint32_t n = lab->n, mask;
	unsigned k = 0, ver = 0, lg = 0;

	if (lab->conf.coll_op == DNP_OP_BCAST)
		return hc_bcast(s, 0, n, r, 0, &ver);
	for (mask = 1; mask < n; mask <<= 1, lg++) {
		if (lab->conf.coll_op == DNP_OP_BARRIER) { /* dissemination (presto_barrier) */
			k = hc_push(s, k, HS_SEND, (r + mask) % n, lg, &ver);
			k = hc_push(s, k, HS_RECV, (r + n - mask) % n, lg, &ver);
		} else if (lab->conf.coll_host_alg == 1) { /* recursive doubling */
			k = hc_push(s, k, HS_SEND, r ^ mask, lg, &ver);
			k = hc_push(s, k, HS_RECV, r ^ mask, lg, &ver);
		} else if (r & mask) { /* presto_reduce: to the parent, then wait for the result */
			k = hc_push(s, k, HS_SEND, r - mask, lg, &ver);
			break;
		} else if (r + mask < n) {
			k = hc_push(s, k, HS_RECV, r + mask, lg, &ver);
		}
	}
	if (lab->conf.coll_op == DNP_OP_ALLREDUCE && lab->conf.coll_host_alg == 0)
		k = hc_bcast(s, k, n, r, co_log2(n), &ver);
	return k;
}

static struct hc_step *hc_steps(struct lab_coll *co, uint32_t id)
{
	return &co->steps[(size_t)id * co->maxsteps];
}

static uint8_t *hc_val(struct lab_coll *co, uint32_t id, unsigned ver)
{
	return &co->val[((size_t)id * co->nver + ver) * co->len];
}

/* Landing slot (collective c, slot) of node id: its index among the node's. */
static size_t hc_land(const struct dnp_lab *lab, uint32_t id, uint32_t c, unsigned slot)
{
	const struct lab_coll *co = lab->coll;

	return ((size_t)id * lab->conf.coll_count + c) * co->nslots + slot;
}

static int hc_create(struct dnp_lab *lab, struct lab_coll *co)
{
	const struct dnp_lab_conf *c = &lab->conf;
	unsigned lg = co_log2(lab->n);
	uint64_t nland, bytes;

	if (c->nfaults ||
	    (c->coll_host_alg == 1 && (c->coll_op != DNP_OP_ALLREDUCE || lab->n != 1u << lg)) ||
	    c->coll_host_alg > 1)
		return -EINVAL;
	co->host = true;
	co->stride = (HC_HDR + co->len + 63) / 64 * 64;
	co->nslots = lg + 1;
	co->nver = lg + 2;
	co->maxsteps = 2 * lg + 2;
	nland = (uint64_t)lab->n * c->coll_count * co->nslots;
	bytes = nland * co->stride;
	if (bytes > (1ull << 31) || (uint64_t)co->nslots * c->coll_count * co->stride > UINT32_MAX)
		return -E2BIG; /* landing memory: fewer nodes, collectives or bytes */
	co->hn = calloc(lab->n, sizeof(*co->hn));
	co->steps = calloc((size_t)lab->n * co->maxsteps, sizeof(*co->steps));
	co->keys = calloc(lab->n, sizeof(*co->keys));
	co->val = calloc((size_t)lab->n * co->nver, co->len ? co->len : 1);
	co->land = calloc(nland, co->stride);
	co->handled = calloc(nland, sizeof(*co->handled));
	if (!co->hn || !co->steps || !co->keys || !co->val || !co->land || !co->handled)
		return -ENOMEM;
	for (uint32_t id = 0; id < lab->n; id++) {
		struct hc_node *h = &co->hn[id];
		int ret = dnp_engine_register(lab->nodes[id].e, LAB_PORT, HC_RECV,
					      (uint64_t)c->coll_count * co->nslots * co->stride,
					      DNP_BUF_PUT_TARGET, 0, &co->keys[id]);

		if (ret)
			return ret;
		h->nsteps = hc_build(lab, id, hc_steps(co, id));
		for (uint32_t b = 0; b < co->len; b++)
			hc_val(co, id, 0)[b] = src_byte(lab, id, b);
	}
	lab->open_msgs += lab->n * c->coll_count;
	return 0;
}

/* The engine reads step i's message: the header, then the value it sends. */
static int hc_read(struct lab_node *nd, uint64_t va, void *dst, size_t len)
{
	struct lab_coll *co = nd->lab->coll;
	struct hc_node *h = &co->hn[nd->id];
	uint64_t i = (va - HC_SEND) / co->stride, off = (va - HC_SEND) % co->stride;
	uint8_t *out = dst;

	if (va < HC_SEND || i >= h->nsteps || hc_steps(co, nd->id)[i].kind != HS_SEND ||
	    off + len > HC_HDR + co->len)
		return -EFAULT;
	const struct hc_step *st = &hc_steps(co, nd->id)[i];
	uint32_t hdr[HC_HDR / 4] = { HC_MAGIC, h->c, nd->id, st->slot };

	for (size_t k = 0; k < len; k++, off++)
		out[k] = off < HC_HDR ? ((const uint8_t *)hdr)[off] :
					hc_val(co, nd->id, st->ver)[off - HC_HDR];
	return 0;
}

/* The engine writes into a landing slot of node nd. */
static int hc_write(struct lab_node *nd, uint64_t va, const void *src, size_t len)
{
	struct dnp_lab *lab = nd->lab;
	struct lab_coll *co = lab->coll;
	uint64_t per = (uint64_t)lab->conf.coll_count * co->nslots;
	uint64_t i = (va - HC_RECV) / co->stride, off = (va - HC_RECV) % co->stride;

	if (va < HC_RECV || i >= per || off + len > HC_HDR + co->len)
		return -EFAULT;
	memcpy(co->land + (hc_land(lab, nd->id, 0, 0) + i) * co->stride + off, src, len);
	return 0;
}

/* Every member is done with the collective: all start the next one at once. */
static void hc_next(struct dnp_lab *lab)
{
	struct lab_coll *co = lab->coll;

	co->ready = 0;
	co->cur++;
	for (uint32_t id = 0; id < lab->n; id++) {
		struct hc_node *h = &co->hn[id];

		if (h->over)
			continue;
		if (co->cur == lab->conf.coll_count) {
			h->over = true;
			continue;
		}
		/* woken next time unit (touching a node while the lab runs them cannot be) */
		*h = (struct hc_node){ .c = co->cur,
				       .nsteps = h->nsteps,
				       .busy = lab->now + 1,
				       .t_start = lab->now + 1 };
		(void)lab_schedule_wake(lab, &lab->nodes[id], lab->now + 1);
	}
}

static void hc_fail(struct dnp_lab *lab, struct lab_node *nd, const char *what, uint64_t v)
{
	struct lab_coll *co = lab->coll;
	struct hc_node *h = &co->hn[nd->id];

	lab->res.coll_failed++;
	lab_verify_fail(lab, what, nd->id, v);
	if (h->over)
		return;
	/* this member stops: its open collectives are counted out, the others go on */
	lab->open_msgs -= lab->conf.coll_count - h->c - (h->waiting ? 1 : 0);
	co->ready -= h->waiting ? 1 : 0;
	co->failed++;
	h->over = true;
	if (co->ready && co->ready + co->failed == lab->n)
		hc_next(lab);
}

static bool hc_poll(struct dnp_lab *lab, struct lab_node *nd)
{
	struct lab_coll *co = lab->coll;
	struct hc_node *h = &co->hn[nd->id];
	uint64_t per = (uint64_t)lab->conf.coll_count * co->nslots;
	struct dnp_event ev[32];
	bool any = false;
	unsigned n;

	while ((n = dnp_engine_poll_events(nd->e, LAB_PORT, ev, 32)) > 0) {
		any = true;
		lab->last_progress = lab->now;
		for (unsigned i = 0; i < n; i++) {
			uint64_t k = (ev[i].va - HC_RECV) / co->stride;

			if (ev[i].type == DNP_EV_LINK)
				continue;
			if (ev[i].type == DNP_EV_TX_DONE && !ev[i].status && h->inflight) {
				h->inflight--; /* Presto's eager send was done when staged */
			} else if (ev[i].type == DNP_EV_RX_PUT && ev[i].va >= HC_RECV && k < per &&
				   (ev[i].va - HC_RECV) % co->stride == 0 &&
				   ev[i].len == HC_HDR + co->len) {
				/* the host takes it when its CPU is free, for host_event */
				if (h->busy < lab->now)
					h->busy = lab->now;
				h->busy += lab->conf.host_event;
				co->handled[hc_land(lab, nd->id, 0, 0) + k] = h->busy + 1;
			} else {
				hc_fail(lab, nd, "host collective: unexpected event (node, type)",
					ev[i].type);
			}
		}
		if (n < 32)
			break;
	}
	return any;
}

/* A receive step: checks the landing's header, reduces (or takes) its payload. */
static void hc_take(struct dnp_lab *lab, struct lab_node *nd, const struct hc_step *st,
		    const uint8_t *m)
{
	struct lab_coll *co = lab->coll;
	struct hc_node *h = &co->hn[nd->id];
	const uint8_t *in = m + HC_HDR;
	uint8_t *acc = hc_val(co, nd->id, st->ver + 1u);
	uint32_t hdr[4];

	memcpy(hdr, m, sizeof(hdr));
	if (hdr[0] != HC_MAGIC || hdr[1] != h->c || hdr[2] != st->peer || hdr[3] != st->slot)
		lab_verify_fail(lab, "host collective: message from the wrong peer (node, peer)",
				nd->id, hdr[2]);
	if (st->kind == HS_TAKE) {
		memcpy(acc, in, co->len);
		return;
	}
	for (uint32_t b = 0; b + 8 <= co->len; b += 8) { /* int64 sums, as the engine's */
		int64_t x, y;

		memcpy(&x, hc_val(co, nd->id, st->ver) + b, 8);
		memcpy(&y, in + b, 8);
		x = (int64_t)((uint64_t)x + (uint64_t)y);
		memcpy(acc + b, &x, 8);
	}
	if (co->len && lab->conf.host_reduce_kib) /* the host's reduction, pro rata */
		h->busy += (lab->conf.host_reduce_kib * co->len + 1023) / 1024;
}

/* Collective c is over for this member: its result is checked, its latency kept. */
static void hc_result(struct dnp_lab *lab, struct lab_node *nd)
{
	struct lab_coll *co = lab->coll;
	struct hc_node *h = &co->hn[nd->id];
	unsigned ver = 0;
	const uint8_t *v;
	uint64_t bad = 0;

	for (uint32_t i = 0; i < h->nsteps; i++) /* the value after the last receive */
		ver += hc_steps(co, nd->id)[i].kind != HS_SEND;
	v = hc_val(co, nd->id, ver);
	if (lab->conf.coll_op != DNP_OP_BARRIER)
		for (uint32_t b = 0; b < co->len; b++)
			bad += v[b] != coll_want(lab, b);
	if (bad) {
		lab->res.byte_mismatches += bad;
		lab_verify_fail(lab, "collective result wrong (node, bytes)", nd->id, bad);
	}
	lab->res.coll_done++;
	co->lat[co->nlat++] = lab->now - h->t_start; /* the host is done by now (hc_run) */
	co->t_last = lab->now;
	h->got = true;
}

/* Runs node nd's application as far as it can go now. */
static bool hc_run(struct dnp_lab *lab, struct lab_node *nd)
{
	struct lab_coll *co = lab->coll;
	struct hc_node *h = &co->hn[nd->id];
	bool any = false;

	while (!h->over) {
		const struct hc_step *st = &hc_steps(co, nd->id)[h->pc];

		if (h->busy > lab->now) { /* the host is still at work */
			(void)lab_schedule_wake(lab, nd, h->busy);
			break;
		}
		if (h->pc == h->nsteps) {
			if (!h->got)
				hc_result(lab, nd);
			if (h->inflight || h->waiting) /* its sends' slots are reused next time */
				break;
			h->waiting = true; /* for the others: all start the next one together */
			lab->open_msgs--;
			lab->last_progress = lab->now;
			if (++co->ready + co->failed == lab->n)
				hc_next(lab);
			return true;
		}
		if (st->kind == HS_SEND) {
			struct lab_node *to = &lab->nodes[st->peer];
			struct dnp_cmd cmd = {
				.op = DNP_OP_PUT,
				.dst_port = LAB_PORT,
				.dst_x = to->c.x,
				.dst_y = to->c.y,
				.dst_z = to->c.z,
				.remote_key = co->keys[st->peer],
				.remote_va = HC_RECV +
					     ((uint64_t)h->c * co->nslots + st->slot) * co->stride,
				.len = HC_HDR + co->len,
				.local_va = HC_SEND + (uint64_t)h->pc * co->stride,
				.cookie = h->pc + 1,
			};
			int ret = dnp_engine_submit(nd->e, LAB_PORT, &cmd, lab->now);

			if (ret == -EAGAIN)
				break;
			if (ret) {
				hc_fail(lab, nd, "host collective: PUT refused (node, -errno)",
					(uint64_t)-ret);
				break;
			}
			h->inflight++;
		} else {
			size_t k = hc_land(lab, nd->id, h->c, st->slot);

			if (!co->handled[k])
				break; /* not arrived yet: its RX event wakes us */
			if (co->handled[k] - 1 > h->busy)
				h->busy = co->handled[k] - 1;
			hc_take(lab, nd, st, co->land + k * co->stride);
		}
		h->pc++;
		any = true;
	}
	return any;
}

int lab_coll_read(struct lab_node *nd, uint64_t va, void *dst, size_t len)
{
	struct dnp_lab *lab = nd->lab;
	uint8_t *out = dst;

	if (lab->coll->host)
		return hc_read(nd, va, dst, len);
	if (va >= COLL_MEMBERS && va + len <= COLL_MEMBERS + (uint64_t)lab->n * 4) {
		for (size_t i = 0; i < len; i++) { /* member j: node j, port 0 */
			uint64_t b = va - COLL_MEMBERS + i;
			struct dnp_coord c = dnp_torus_coord(&lab->conf.torus, (uint32_t)(b / 4));
			uint8_t m[4] = { c.x, c.y, c.z, LAB_PORT };

			out[i] = m[b % 4];
		}
		return 0;
	}
	if (va < COLL_SRC || va + len > COLL_SRC + lab->coll->len)
		return -EFAULT;
	for (size_t i = 0; i < len; i++)
		out[i] = src_byte(lab, nd->id, va - COLL_SRC + i);
	return 0;
}

int lab_coll_write(struct lab_node *nd, uint64_t va, const void *src, size_t len)
{
	struct dnp_lab *lab = nd->lab;
	const uint8_t *in = src;
	uint64_t bad = 0;

	if (lab->coll->host)
		return hc_write(nd, va, src, len);
	if (va < COLL_SRC || va + len > COLL_SRC + 2 * (COLL_DST - COLL_SRC))
		return -EFAULT;
	for (size_t i = 0; i < len; i++)
		bad += in[i] !=
		       coll_want(lab,
				 va - (lab->conf.coll_op == DNP_OP_BCAST ? COLL_SRC : COLL_DST) +
					 i);
	if (bad) {
		lab->res.byte_mismatches += bad;
		lab_verify_fail(lab, "collective result wrong (node, bytes)", nd->id, bad);
	}
	return 0;
}

bool lab_coll_submit(struct dnp_lab *lab, struct lab_node *nd)
{
	struct lab_coll *co = lab->coll;
	struct lab_coll_node *cn = &co->nodes[nd->id];
	const struct dnp_lab_conf *c = &lab->conf;
	struct dnp_cmd cmd = { .remote_key = COLL_GID, .cookie = cn->done + 1 };

	if (co->host)
		return hc_run(lab, nd);
	if (cn->busy || cn->done > c->coll_count)
		return false;
	if (cn->done == 0) {
		cmd.op = DNP_OP_COLL_JOIN;
		cmd.local_va = COLL_MEMBERS;
		cmd.len = (uint64_t)lab->n * 4;
	} else {
		cmd.op = c->coll_op;
		cmd.len = co->len;
		if (c->coll_op == DNP_OP_ALLREDUCE) {
			cmd.coll_param = DNP_COLL_PARAM(DNP_RED_SUM, DNP_TYPE_INT64, 0);
			cmd.local_va = COLL_SRC;
			cmd.remote_va = COLL_DST;
		} else if (c->coll_op == DNP_OP_BCAST) {
			cmd.local_va = COLL_SRC;
		}
	}
	if (dnp_engine_submit(nd->e, LAB_PORT, &cmd, lab->now) < 0)
		return false;
	cn->busy = true;
	cn->t_sub = lab->now;
	if (cn->done == 1 && lab->now < co->t_first)
		co->t_first = lab->now;
	return true;
}

bool lab_coll_poll(struct dnp_lab *lab, struct lab_node *nd)
{
	struct lab_coll *co = lab->coll;
	struct lab_coll_node *cn = &co->nodes[nd->id];
	struct dnp_event ev[8];
	bool any = false;
	unsigned n;

	if (co->host)
		return hc_poll(lab, nd);
	while ((n = dnp_engine_poll_events(nd->e, LAB_PORT, ev, 8)) > 0) {
		any = true;
		for (unsigned i = 0; i < n; i++) {
			if (ev[i].type == DNP_EV_LINK)
				continue;
			if ((ev[i].type != DNP_EV_TX_DONE && ev[i].type != DNP_EV_ERROR) ||
			    !cn->busy || ev[i].cookie != cn->done + 1) {
				lab->res.unknown_events++;
				lab_verify_fail(lab, "unexpected event (node, type)", nd->id,
						ev[i].type);
				continue;
			}
			if (ev[i].status) {
				lab->res.coll_failed++;
				lab_verify_fail(lab, "collective failed (node, errno)", nd->id,
						(uint64_t)-ev[i].status);
			} else if (cn->done) {
				lab->res.coll_done++;
				co->lat[co->nlat++] = lab->now - cn->t_sub;
			}
			cn->busy = false;
			cn->done++;
			lab->open_msgs--;
			lab->last_progress = lab->now;
			co->t_last = lab->now;
		}
	}
	return any;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void lab_coll_finish(struct dnp_lab *lab)
{
	struct lab_coll *co = lab->coll;
	struct dnp_lab_result *r = &lab->res;

	if (!co->nlat)
		return;
	qsort(co->lat, co->nlat, sizeof(*co->lat), cmp_u64);
	r->coll_lat_median = co->lat[co->nlat / 2];
	r->coll_lat_max = co->lat[co->nlat - 1];
	if (co->t_last > co->t_first)
		r->coll_per_op = (double)(co->t_last - co->t_first) / lab->conf.coll_count;
}

void dnp_lab_coll_report(const struct dnp_lab *lab, FILE *f)
{
	const struct dnp_lab_result *r = &lab->res;
	static const char *const names[] = { [DNP_OP_ALLREDUCE] = "allreduce",
					     [DNP_OP_BARRIER] = "barrier",
					     [DNP_OP_BCAST] = "bcast" };

	if (!lab->coll)
		return;
	fprintf(f,
		"collective %s of %u B on %u nodes: %" PRIu64 " done, %" PRIu64
		" failed; member latency median %" PRIu64 " max %" PRIu64
		" time units; %.1f time units per collective\n",
		names[lab->conf.coll_op], lab->coll->len, lab->n, r->coll_done, r->coll_failed,
		r->coll_lat_median, r->coll_lat_max, r->coll_per_op);
	if (lab->coll->host)
		fprintf(f,
			"host-based (%s): host event %" PRIu64 " time units, reduction %" PRIu64
			" time units per KiB\n",
			lab->conf.coll_host_alg ? "recursive doubling" : "Presto's algorithm",
			lab->conf.host_event, lab->conf.host_reduce_kib);
}
