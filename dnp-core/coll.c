/* SPDX-License-Identifier: MIT */
/*
 * coll.c — collectives run by the engine: groups, the per-rank programs of
 * allreduce (recursive doubling with a fold) and broadcast (binomial tree),
 * the reductions, and COLL packets out and in. Contract: coll.h; the wire
 * format: docs/protocol.md, "Collective packets".
 */
#include "coll.h"

#include "engine_priv.h"

#define NTAGS_MAX 15u /* fold, up to 12 doubling steps, the result back: lg + 2 <= 14 */
#define PROG_MAX 32u
#define OP_ABORT 0xffu       /* a COLL packet saying a member left (va bits 48-55) */
#define KEY_EMPTY (1u << 24) /* a broadcast's step from a member without the data yet */
#define CHUNK DNP_COLL_CHUNK_BYTES
#define WIN DNP_COLL_WINDOW /* chunks a member runs at once */
#define NSLOT (2u * WIN)    /* chunks a member keeps state for (coll.h: why twice) */

enum {
	ST_SEND = 1,
	ST_RECV,
	ST_DONE
};
enum {
	RX_COPY = 0,
	RX_ACC_IN,
	RX_IN_ACC
}; /* result = in; op(acc, in); op(in, acc) */

struct cstep {
	uint8_t what; /* ST_* */
	uint8_t tag;  /* which of the collective's messages */
	uint8_t mode; /* ST_RECV: RX_* */
	uint16_t peer;
};

/*
 * One chunk of a collective, at position pos of the group's chunk stream:
 * running here, or its early packets kept. Slot pos % NSLOT.
 */
struct cchunk {
	bool used;
	bool started; /* this member runs it (its source read) */
	bool done;    /* its result is in the application's buffer */
	bool have;    /* broadcast: acc holds the root's data */
	uint8_t ci;   /* its collective: g->in[ci] */
	uint8_t pc;
	uint32_t pos;
	uint32_t out_off;         /* bytes of the current send step queued */
	uint16_t got[NTAGS_MAX];  /* fragments of each tag received */
	uint16_t seen[NTAGS_MAX]; /* ... as a bit per fragment (offset / DNP_MAX_PAYLOAD) */
	uint8_t empty[NTAGS_MAX]; /* broadcast: the tag came without the data (KEY_EMPTY) */
	uint8_t *acc, *stash;     /* the partial result; a buffer per tag */
};

/* One collective of a group, seq: running here, or its early packets kept. */
struct cinst {
	uint32_t seq;
	bool used;    /* holds packets of seq, or runs it */
	bool running; /* its command is live (slot_id) */
	bool known;   /* params set (by the command or the first packet): prog built */
	bool bad;     /* packets disagree with the params: -EBADMSG */
	uint8_t op, redop, dtype;
	uint16_t root;
	uint32_t len;
	uint32_t slot_id;
	uint32_t base;        /* the position of its chunk 0 */
	uint32_t nch;         /* its chunks (known) */
	uint32_t next, ndone; /* chunks started here, and done */
	uint8_t nprog;
	struct cstep prog[PROG_MAX];
};

struct cgroup {
	bool used;
	bool aborted; /* a member left: collectives from abort_seq on fail */
	uint8_t port;
	uint32_t gid;
	uint32_t n, rank, p2, lg;
	uint32_t seq; /* collectives started here so far */
	uint32_t abort_seq;
	uint32_t next_base; /* the position of the next collective's chunk 0 */
	uint32_t lo;        /* the lowest position not done here */
	struct dnp_coll_member *m;
	uint8_t *mem;
	struct cinst in[2];
	struct cchunk ch[NSLOT];
};

struct dnp_coll {
	uint32_t ngroups;
	uint32_t nrunning;
	uint32_t max_len; /* the largest collective (conf.coll_max_bytes) */
	uint32_t bsz;     /* per buffer: a chunk, or max_len if smaller; a multiple of 64 */
	struct dnp_coll_stats st;
	struct cgroup g[];
};

int engine_coll_create(struct dnp_engine *e)
{
	uint32_t n = e->c.coll_groups;

	if (e->c.coll_max_bytes > DNP_COLL_MAX_BYTES || (n && !e->c.coll_max_bytes))
		return -EINVAL;
	e->coll = calloc(1, sizeof(*e->coll) + (size_t)n * sizeof(struct cgroup));
	if (!e->coll)
		return -ENOMEM;
	e->coll->ngroups = n;
	e->coll->max_len = e->c.coll_max_bytes;
	e->coll->bsz = ((e->c.coll_max_bytes < CHUNK ? e->c.coll_max_bytes : CHUNK) + 63u) & ~63u;
	return 0;
}

static void group_free(struct dnp_coll *co, struct cgroup *g)
{
	co->nrunning -= g->in[0].running + g->in[1].running;
	free(g->m);
	free(g->mem);
	memset(g, 0, sizeof(*g));
}

void engine_coll_destroy(struct dnp_engine *e)
{
	if (!e->coll)
		return;
	for (uint32_t i = 0; i < e->coll->ngroups; i++)
		if (e->coll->g[i].used)
			group_free(e->coll, &e->coll->g[i]);
	free(e->coll);
	e->coll = NULL;
}

void dnp_engine_coll_stats(const struct dnp_engine *e, struct dnp_coll_stats *st)
{
	*st = e->coll ? e->coll->st : (struct dnp_coll_stats){ 0 };
}

static struct cgroup *group_find(struct dnp_coll *co, unsigned port, uint32_t gid)
{
	for (uint32_t i = 0; i < co->ngroups; i++)
		if (co->g[i].used && co->g[i].port == port && co->g[i].gid == gid)
			return &co->g[i];
	return NULL;
}

/* ------------------------------------------------------------------ chunks */

/* Chunks a collective of len bytes takes (a barrier: one, of 0 bytes). */
static uint32_t nchunks(uint32_t len)
{
	return len ? (len + CHUNK - 1) / CHUNK : 1;
}

/* The bytes of chunk k of c. */
static uint32_t chunk_len(const struct cinst *c, uint32_t k)
{
	uint32_t off = k * CHUNK;

	return c->len - off > CHUNK ? CHUNK : c->len - off;
}

static uint32_t chunk_idx(const struct cinst *c, const struct cchunk *ch)
{
	return ch->pos - c->base;
}

static unsigned inst_idx(const struct cgroup *g, const struct cinst *c)
{
	return (unsigned)(c - g->in);
}

/*
 * The slot of position pos for collective c: its own, or a free one made
 * its own; NULL when the slot holds another position (cannot happen to
 * positions in [lo, lo + NSLOT): older ones are freed as lo passes them).
 */
static struct cchunk *chunk_get(struct cgroup *g, const struct cinst *c, uint32_t pos)
{
	struct cchunk *ch = &g->ch[pos % NSLOT];

	if (ch->used)
		return ch->pos == pos && ch->ci == inst_idx(g, c) ? ch : NULL;
	uint8_t *acc = ch->acc, *stash = ch->stash;

	memset(ch, 0, sizeof(*ch));
	ch->acc = acc;
	ch->stash = stash;
	ch->used = true;
	ch->pos = pos;
	ch->ci = (uint8_t)inst_idx(g, c);
	return ch;
}

/* Frees the slots of c's chunks. */
static void chunks_free(struct cgroup *g, const struct cinst *c)
{
	for (unsigned i = 0; i < NSLOT; i++)
		if (g->ch[i].used && g->ch[i].ci == inst_idx(g, c) &&
		    g->ch[i].pos - c->base < c->nch)
			g->ch[i].used = false;
}

/* ---------------------------------------------------------------- programs */

static void prog_add(struct cinst *c, uint8_t what, uint8_t tag, uint8_t mode, uint32_t peer)
{
	c->prog[c->nprog++] = (struct cstep){ what, tag, mode, (uint16_t)peer };
}

/* Recursive doubling among ranks < p2; ranks p2..n-1 fold into rank - p2 and get the result. */
static void prog_allreduce(const struct cgroup *g, struct cinst *c)
{
	uint32_t r = g->rank;

	if (r >= g->p2) {
		prog_add(c, ST_SEND, 0, 0, r - g->p2);
		prog_add(c, ST_RECV, (uint8_t)(g->lg + 1), RX_COPY, r - g->p2);
	} else {
		if (r + g->p2 < g->n)
			prog_add(c, ST_RECV, 0, RX_ACC_IN, r + g->p2);
		for (uint32_t k = 0; k < g->lg; k++) {
			uint32_t peer = r ^ (1u << k);

			prog_add(c, ST_SEND, (uint8_t)(1 + k), 0, peer);
			prog_add(c, ST_RECV, (uint8_t)(1 + k), peer > r ? RX_ACC_IN : RX_IN_ACC,
				 peer);
		}
		if (r + g->p2 < g->n)
			prog_add(c, ST_SEND, (uint8_t)(g->lg + 1), 0, r + g->p2);
	}
	prog_add(c, ST_DONE, 0, 0, 0);
}

static void prog_build(const struct cgroup *g, struct cinst *c)
{
	c->nprog = 0;
	prog_allreduce(g, c); /* a broadcast too: see coll.h */
	c->known = true;
}

/* The step that receives tag, or NULL. */
static const struct cstep *prog_recv(const struct cinst *c, unsigned tag)
{
	for (unsigned i = 0; i < c->nprog; i++)
		if (c->prog[i].what == ST_RECV && c->prog[i].tag == tag)
			return &c->prog[i];
	return NULL;
}

/* Packets a message of len bytes takes (a barrier's empty one: one). */
static uint32_t nfrags(uint32_t len)
{
	return len ? (len + DNP_MAX_PAYLOAD - 1) / DNP_MAX_PAYLOAD : 1;
}

/*
 * Is a data fragment (offset, flen) of a len-byte message one send_step
 * makes, and new? Fragments start at multiples of DNP_MAX_PAYLOAD and are
 * whole (the last one the rest); each counts once. A peer that sent the same
 * offset twice, or overlapping pieces, would otherwise complete the step with
 * bytes it never sent (frames from a link are not trusted).
 */
static bool frag_new(const struct cchunk *c, uint32_t tag, uint32_t len, uint32_t offset,
		     uint32_t flen)
{
	uint32_t k = offset / DNP_MAX_PAYLOAD, rest = len > offset ? len - offset : 0;

	if (offset % DNP_MAX_PAYLOAD || k >= 16 || (len && offset >= len))
		return false;
	if (flen != (rest > DNP_MAX_PAYLOAD ? DNP_MAX_PAYLOAD : rest))
		return false;
	return !(c->seen[tag] >> k & 1u);
}

/* -------------------------------------------------------------- reductions */

/* Elements are copied in and out, so buffers need no alignment. */
#define RED_LOOP(T, EXPR)                                          \
	for (size_t i = 0; i + sizeof(T) <= len; i += sizeof(T)) { \
		T u, v, w;                                         \
		memcpy(&u, a + i, sizeof(T));                      \
		memcpy(&v, b + i, sizeof(T));                      \
		w = (EXPR);                                        \
		memcpy(dst + i, &w, sizeof(T));                    \
	}

/* Integer sums wrap (two's complement) instead of overflowing. */
#define ISUM(T, U) (T)((U)u + (U)v)

static void reduce_i32(unsigned op, uint8_t *dst, const uint8_t *a, const uint8_t *b, size_t len)
{
	switch (op) {
	case DNP_RED_SUM:
		RED_LOOP(int32_t, ISUM(int32_t, uint32_t));
		break;
	case DNP_RED_MIN:
		RED_LOOP(int32_t, v < u ? v : u);
		break;
	case DNP_RED_MAX:
		RED_LOOP(int32_t, v > u ? v : u);
		break;
	case DNP_RED_BAND:
		RED_LOOP(int32_t, u & v);
		break;
	default:
		RED_LOOP(int32_t, u | v);
	}
}

static void reduce_i64(unsigned op, uint8_t *dst, const uint8_t *a, const uint8_t *b, size_t len)
{
	switch (op) {
	case DNP_RED_SUM:
		RED_LOOP(int64_t, ISUM(int64_t, uint64_t));
		break;
	case DNP_RED_MIN:
		RED_LOOP(int64_t, v < u ? v : u);
		break;
	case DNP_RED_MAX:
		RED_LOOP(int64_t, v > u ? v : u);
		break;
	case DNP_RED_BAND:
		RED_LOOP(int64_t, u & v);
		break;
	default:
		RED_LOOP(int64_t, u | v);
	}
}

static void reduce_f32(unsigned op, uint8_t *dst, const uint8_t *a, const uint8_t *b, size_t len)
{
	if (op == DNP_RED_SUM)
		RED_LOOP(float, u + v)
	else if (op == DNP_RED_MIN)
		RED_LOOP(float, v < u ? v : u)
	else
		RED_LOOP(float, v > u ? v : u)
}

static void reduce_f64(unsigned op, uint8_t *dst, const uint8_t *a, const uint8_t *b, size_t len)
{
	if (op == DNP_RED_SUM)
		RED_LOOP(double, u + v)
	else if (op == DNP_RED_MIN)
		RED_LOOP(double, v < u ? v : u)
	else
		RED_LOOP(double, v > u ? v : u)
}

/* dst = op(a, b) element by element: a is the lower ranks' partial, always the left operand. */
static void reduce(const struct cinst *c, uint8_t *dst, const uint8_t *a, const uint8_t *b,
		   size_t len)
{
	switch (c->dtype) {
	case DNP_TYPE_INT32:
		reduce_i32(c->redop, dst, a, b, len);
		break;
	case DNP_TYPE_INT64:
		reduce_i64(c->redop, dst, a, b, len);
		break;
	case DNP_TYPE_FLOAT:
		reduce_f32(c->redop, dst, a, b, len);
		break;
	case DNP_TYPE_DOUBLE:
		reduce_f64(c->redop, dst, a, b, len);
		break;
	default: /* a barrier: nothing to reduce */
		break;
	}
}

/* ----------------------------------------------------------------- packets */

/*
 * The COLL header: msg_id = group id; va = seq | root << 32 | op << 48;
 * key = tag | redop << 8 | dtype << 16; offset, len, msg_len as a PUT's.
 */
static void coll_hdr(struct dnp_engine *e, const struct cgroup *g, const struct cinst *c,
		     uint32_t peer, struct dnp_pkt_hdr *h, uint64_t now)
{
	struct dnp_coord dst = { g->m[peer].x, g->m[peer].y, g->m[peer].z };

	*h = (struct dnp_pkt_hdr){
		.lflags = DNP_LINK_F_SEQ,
		.dst = dst,
		.src = e->c.self,
		.dst_port = g->m[peer].port,
		.src_port = g->port,
		.kind = DNP_PKT_COLL,
		.via = engine_coord_self(e, dst) ? 0 : engine_via_for(e, dst),
		.msg_id = g->gid,
		.va = c->seq | (uint64_t)c->root << 32 | (uint64_t)c->op << 48,
		.timestamp = (uint32_t)now,
	};
}

/* Queues one packet; false when no buffer may be taken now. */
static bool coll_out(struct dnp_engine *e, struct dnp_pkt_hdr *h, const uint8_t *payload)
{
	uint32_t flen = (uint32_t)dnp_pkt_frame_len(h->len);

	if (!engine_pool_has_inj(e, flen))
		return false;
	struct pkt *p = engine_pkt_get(e, flen);
	int n = dnp_pkt_encode(h, payload, p->frame, DNP_MAX_FRAME);

	if (n < 0) { /* cannot happen: every field was made here */
		engine_pkt_put(e, p);
		return true;
	}
	p->h = *h;
	engine_local_push(e, p, (uint32_t)n);
	e->coll->st.pkts_tx++;
	return true;
}

/*
 * Sends chunk ch's partial result (message 'tag') to rank peer; true once
 * every fragment left. Offsets are the collective's (chunk * CHUNK + the
 * fragment's place in the chunk); msg_len is the collective's length.
 */
static bool send_step(struct dnp_engine *e, const struct cgroup *g, const struct cinst *c,
		      struct cchunk *ch, const struct cstep *st, uint64_t now)
{
	uint32_t off0 = chunk_idx(c, ch) * CHUNK, clen = chunk_len(c, chunk_idx(c, ch));

	if (c->op == DNP_OP_BCAST && !ch->have) { /* nothing to pass on yet: say so */
		struct dnp_pkt_hdr h;

		coll_hdr(e, g, c, st->peer, &h, now);
		h.key = st->tag | KEY_EMPTY;
		h.offset = off0;
		h.msg_len = c->len;
		h.flags = (off0 == 0 ? DNP_PKT_F_FIRST : 0) | (c->len == 0 ? DNP_PKT_F_LAST : 0);
		return coll_out(e, &h, NULL);
	}
	do {
		uint32_t left = clen - ch->out_off;
		uint32_t fl = left > DNP_MAX_PAYLOAD ? DNP_MAX_PAYLOAD : left;
		uint32_t off = off0 + ch->out_off;
		struct dnp_pkt_hdr h;

		coll_hdr(e, g, c, st->peer, &h, now);
		h.key = st->tag | (uint32_t)c->redop << 8 | (uint32_t)c->dtype << 16;
		h.offset = off;
		h.len = (uint16_t)fl;
		h.msg_len = c->len;
		h.flags = (off == 0 ? DNP_PKT_F_FIRST : 0) |
			  (off + fl == c->len ? DNP_PKT_F_LAST : 0);
		if (!coll_out(e, &h, ch->acc + ch->out_off))
			return false;
		ch->out_off += fl;
	} while (ch->out_off < clen);
	ch->out_off = 0;
	return true;
}

/* Tells every other member that this one leaves from collective seq on (best effort). */
static void send_abort(struct dnp_engine *e, const struct cgroup *g, uint32_t seq, uint64_t now)
{
	struct cinst c = { .seq = seq, .op = OP_ABORT };

	for (uint32_t r = 0; r < g->n; r++) {
		struct dnp_pkt_hdr h;

		if (r == g->rank)
			continue;
		coll_hdr(e, g, &c, r, &h, now);
		h.flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST;
		if (!coll_out(e, &h, NULL))
			break; /* no buffer: the rest find out by their deadline */
	}
}

/* ----------------------------------------------------------- running them */

static void inst_reset(struct cinst *c, uint32_t seq, uint32_t base)
{
	memset(c, 0, sizeof(*c));
	c->seq = seq;
	c->base = base;
	c->used = true;
}

/*
 * Ends c with status (its command's one event, if the command is still
 * live). Its chunks' slots are freed and the group's stream moves past it.
 */
static void inst_end(struct dnp_engine *e, struct cgroup *g, struct cinst *c, int status)
{
	struct slot *s = engine_slot_by_msg(e, c->slot_id);

	chunks_free(g, c);
	g->lo = c->base + c->nch;
	c->running = false;
	c->used = false;
	e->coll->nrunning--;
	if (status)
		e->coll->st.failed++;
	else
		e->coll->st.done++;
	if (s)
		engine_complete(e, s, status);
}

/* Chunk ch's result into the application's buffer. 0 or -EFAULT. */
static int write_result(struct dnp_engine *e, const struct cgroup *g, const struct cinst *c,
			const struct cchunk *ch, const struct slot *s)
{
	uint32_t k = chunk_idx(c, ch), clen = chunk_len(c, k);
	uint64_t va =
		(c->op == DNP_OP_ALLREDUCE ? s->c.remote_va : s->c.local_va) + (uint64_t)k * CHUNK;

	if (c->op == DNP_OP_BARRIER || !clen || (c->op == DNP_OP_BCAST && g->rank == c->root))
		return 0;
	const struct dnp_buf *b = dnp_buftab_find(e->bt, g->port, va, clen);

	if (e->c.mem->write(e->c.mem_ctx, g->port, b, va, ch->acc, clen))
		return -EFAULT;
	return engine_mem_settle(e, g->port, va, clen);
}

/*
 * Moves chunk ch of c on as far as it goes: 1 on progress, 0 without, or a
 * negative errno that ends the collective (its result could not be written).
 */
static int chunk_advance(struct dnp_engine *e, struct cgroup *g, struct cinst *c, struct cchunk *ch,
			 const struct slot *s, uint64_t now)
{
	uint32_t clen = chunk_len(c, chunk_idx(c, ch));
	int progress = 0;

	while (!ch->done) {
		const struct cstep *st = &c->prog[ch->pc];

		if (st->what == ST_SEND) {
			if (!send_step(e, g, c, ch, st, now))
				return progress;
		} else if (st->what == ST_RECV) {
			uint8_t *in = ch->stash + (size_t)st->tag * e->coll->bsz;

			if (ch->got[st->tag] < nfrags(clen) && !ch->empty[st->tag])
				return progress;
			if (c->op == DNP_OP_BCAST) { /* the data, from whichever side has it */
				if (!ch->empty[st->tag] && !ch->have)
					memcpy(ch->acc, in, clen);
				ch->have |= !ch->empty[st->tag];
			} else if (st->mode == RX_COPY)
				memcpy(ch->acc, in, clen);
			else if (st->mode == RX_ACC_IN)
				reduce(c, ch->acc, ch->acc, in, clen);
			else
				reduce(c, ch->acc, in, ch->acc, clen);
		} else {
			int rc = write_result(e, g, c, ch, s);

			if (rc < 0)
				return rc;
			ch->done = true;
			c->ndone++;
			return 1;
		}
		ch->pc++;
		progress = 1;
	}
	return progress;
}

static int read_app(struct dnp_engine *e, unsigned port, uint64_t va, void *dst, uint32_t len,
		    uint32_t id, uint64_t end);

/* Starts chunk ch of c here: its share of the source into acc. 0 or -EFAULT. */
static int chunk_start(struct dnp_engine *e, const struct cgroup *g, const struct cinst *c,
		       struct cchunk *ch, const struct slot *s)
{
	uint32_t k = chunk_idx(c, ch);
	bool src = c->op == DNP_OP_ALLREDUCE || (c->op == DNP_OP_BCAST && c->root == g->rank);

	ch->started = true;
	ch->have = c->op != DNP_OP_BCAST || c->root == g->rank;
	if (!src)
		return 0;
	return read_app(e, g->port, s->c.local_va + (uint64_t)k * CHUNK, ch->acc, chunk_len(c, k),
			s->msg_id, s->c.local_va + c->len);
}

/*
 * Moves c on as far as it goes; true on progress. Chunks start in order
 * while fewer than WIN positions from the group's lowest unfinished one;
 * each runs the same program on its own bytes.
 */
static bool advance(struct dnp_engine *e, struct cgroup *g, struct cinst *c, uint64_t now)
{
	bool progress = false, again = true;

	while (c->running && again) {
		struct slot *s = engine_slot_by_msg(e, c->slot_id);
		int rc = 0;

		again = false;
		if (!s) { /* ended without us (cmd_timeout): its packets are dropped from now */
			inst_end(e, g, c, -ETIMEDOUT);
			return true;
		}
		if (c->bad || (g->aborted && (int32_t)(c->seq - g->abort_seq) >= 0)) {
			inst_end(e, g, c, c->bad ? -EBADMSG : -ECONNABORTED);
			return true;
		}
		while (rc == 0 && c->next < c->nch && c->base + c->next - g->lo < WIN) {
			struct cchunk *ch = chunk_get(g, c, c->base + c->next);

			rc = ch ? chunk_start(e, g, c, ch, s) : -EPROTO;
			c->next++;
			again = true;
		}
		for (uint32_t k = 0; rc >= 0 && k < WIN; k++) {
			struct cchunk *ch = &g->ch[(g->lo + k) % NSLOT];

			if (ch->used && ch->started && !ch->done && ch->pos == g->lo + k &&
			    ch->ci == inst_idx(g, c))
				rc = chunk_advance(e, g, c, ch, s, now);
			again |= rc > 0;
		}
		if (rc < 0) {
			inst_end(e, g, c, rc);
			return true;
		}
		while (g->ch[g->lo % NSLOT].used && g->ch[g->lo % NSLOT].pos == g->lo &&
		       g->ch[g->lo % NSLOT].done) {
			g->ch[g->lo % NSLOT].used = false;
			g->lo++;
		}
		if (c->ndone == c->nch) {
			inst_end(e, g, c, 0);
			return true;
		}
		progress |= again;
	}
	return progress;
}

bool engine_coll_pump(struct dnp_engine *e, uint64_t now)
{
	struct dnp_coll *co = e->coll;
	bool progress = false;

	for (uint32_t i = 0; co->nrunning && i < co->ngroups; i++)
		for (unsigned k = 0; co->g[i].used && k < 2; k++)
			if (co->g[i].in[k].running)
				progress |= advance(e, &co->g[i], &co->g[i].in[k], now);
	return progress;
}

bool engine_coll_running(const struct dnp_engine *e)
{
	return e->coll->nrunning != 0;
}

bool engine_coll_busy(const struct dnp_engine *e)
{
	const struct dnp_coll *co = e->coll;

	for (uint32_t i = 0; co && co->nrunning && i < co->ngroups; i++)
		for (unsigned k = 0; co->g[i].used && k < NSLOT; k++) {
			const struct cchunk *ch = &co->g[i].ch[k];
			const struct cinst *c = &co->g[i].in[ch->ci];

			if (ch->used && ch->started && !ch->done && c->running &&
			    c->prog[ch->pc].what == ST_SEND)
				return true;
		}
	return false;
}

/* ------------------------------------------------------------------ joining */

/* Reads len bytes at va of the application; end: where its command's reads end. */
static int read_app(struct dnp_engine *e, unsigned port, uint64_t va, void *dst, uint32_t len,
		    uint32_t id, uint64_t end)
{
	if (!len)
		return 0;
	const struct dnp_buf *b = dnp_buftab_find(e->bt, (uint8_t)port, va, len);
	/* a collective's reads: bit 62 and its command's id */
	const struct dnp_mem_seq seq = { .id = 1ull << 62 | id, .end = end };

	return e->c.mem->read(e->c.mem_ctx, port, b, va, dst, len, &seq) ? -EFAULT : 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Checks the member list (untrusted: the application's memory) and finds
 * our rank: every member in the torus and its ports, none twice (sorted
 * copy, so the check costs n log n whatever the torus size).
 */
static int members_check(struct dnp_engine *e, unsigned port, const struct dnp_coll_member *m,
			 uint32_t n, uint32_t *rank)
{
	uint64_t *keys = malloc((size_t)n * sizeof(*keys));
	int rc = -ENOENT;

	if (!keys)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct dnp_coord c = { m[i].x, m[i].y, m[i].z };

		if (!dnp_torus_contains(&e->c.torus, c) || m[i].port >= e->c.max_ports) {
			free(keys);
			return -EINVAL;
		}
		keys[i] = (uint64_t)dnp_torus_id(&e->c.torus, c) << 8 | m[i].port;
		if (engine_coord_self(e, c) && m[i].port == port) {
			*rank = i;
			rc = 0;
		}
	}
	qsort(keys, n, sizeof(*keys), u64_cmp);
	for (uint32_t i = 1; i < n; i++)
		if (keys[i] == keys[i - 1])
			rc = -EINVAL;
	free(keys);
	return rc;
}

static int coll_join(struct dnp_engine *e, const struct slot *s)
{
	struct dnp_coll *co = e->coll;
	uint32_t n = (uint32_t)(s->c.len / sizeof(struct dnp_coll_member)), rank = 0;
	struct cgroup *g = NULL;

	if (group_find(co, s->port, s->c.remote_key))
		return -EEXIST;
	for (uint32_t i = 0; i < co->ngroups && !g; i++)
		if (!co->g[i].used)
			g = &co->g[i];
	if (!g)
		return -ENOSPC;
	struct dnp_coll_member *m = malloc((size_t)n * sizeof(*m));
	if (!m)
		return -ENOMEM;
	int rc = read_app(e, s->port, s->c.local_va, m, (uint32_t)s->c.len, s->msg_id,
			  s->c.local_va + s->c.len);
	if (rc == 0)
		rc = members_check(e, s->port, m, n, &rank);
	uint32_t p2 = 1, lg = 0;
	while (p2 * 2 <= n)
		p2 *= 2, lg++;
	size_t per = (size_t)(lg + 3) * co->bsz; /* acc + lg + 2 tags, per chunk slot */
	uint8_t *mem = rc == 0 ? calloc(NSLOT, per) : NULL;
	if (rc == 0 && !mem)
		rc = -ENOMEM;
	if (rc < 0) {
		free(m);
		return rc;
	}
	*g = (struct cgroup){ .used = true,
			      .port = s->port,
			      .gid = s->c.remote_key,
			      .n = n,
			      .rank = rank,
			      .p2 = p2,
			      .lg = lg,
			      .m = m,
			      .mem = mem };
	for (unsigned k = 0; k < NSLOT; k++) {
		g->ch[k].acc = mem + k * per;
		g->ch[k].stash = g->ch[k].acc + co->bsz;
	}
	return 0;
}

/* This member leaves g: the others fail from its next collective on. */
static void coll_leave(struct dnp_engine *e, struct cgroup *g, uint64_t now)
{
	uint32_t seq = g->seq;

	for (unsigned k = 0; k < 2; k++)
		if (g->in[k].running && (int32_t)(g->in[k].seq - seq) < 0)
			seq = g->in[k].seq; /* one it will not finish */
	send_abort(e, g, seq, now);
	for (unsigned k = 0; k < 2; k++)
		if (g->in[k].running)
			inst_end(e, g, &g->in[k], -ECONNABORTED);
	group_free(e->coll, g);
}

void engine_coll_port_closed(struct dnp_engine *e, unsigned port, uint64_t now)
{
	struct dnp_coll *co = e->coll;

	for (uint32_t i = 0; co && i < co->ngroups; i++)
		if (co->g[i].used && co->g[i].port == port)
			coll_leave(e, &co->g[i], now);
}

/* ---------------------------------------------------------------- commands */

/* The instance a new collective of g takes (-EBUSY while one runs). */
static int inst_take(struct dnp_engine *e, struct cgroup *g, struct cinst **out)
{
	for (unsigned k = 0; k < 2; k++) {
		struct cinst *c = &g->in[k];

		if (c->running && engine_slot_by_msg(e, c->slot_id))
			return -EBUSY;
		if (c->running) /* its command timed out: nothing more to do for it */
			inst_end(e, g, c, -ETIMEDOUT);
	}
	struct cinst *c = &g->in[g->seq & 1];

	if (!c->used || c->seq != g->seq)
		inst_reset(c, g->seq, g->next_base);
	*out = c;
	return 0;
}

/* c could not start (rc): it is over here, its chunks and early packets dropped. */
static int start_fail(struct dnp_engine *e, struct cgroup *g, struct cinst *c, int rc)
{
	chunks_free(g, c);
	g->lo = g->next_base;
	c->used = false;
	e->coll->st.failed++;
	return rc;
}

static int coll_start(struct dnp_engine *e, struct cgroup *g, struct slot *s, uint64_t now)
{
	struct cinst *c;
	uint32_t root = DNP_COLL_ROOT(s->c.coll_param);
	int rc = inst_take(e, g, &c);

	if (rc < 0)
		return rc;
	if (s->c.op == DNP_OP_BCAST && root >= g->n)
		return -EINVAL;
	struct cinst want = { .op = s->c.op,
			      .redop = (uint8_t)DNP_COLL_REDOP(s->c.coll_param),
			      .dtype = (uint8_t)DNP_COLL_DTYPE(s->c.coll_param),
			      .root = (uint16_t)root,
			      .len = (uint32_t)s->c.len };
	/* from here on this collective is ours, done or failed, and its chunks */
	g->seq++;
	if (!c->known)
		c->nch = nchunks(want.len);
	g->next_base = c->base + nchunks(want.len);
	if (g->aborted && (int32_t)(c->seq - g->abort_seq) >= 0)
		rc = -ECONNABORTED;
	if (rc == 0 && c->known &&
	    (c->bad || c->op != want.op || c->redop != want.redop || c->dtype != want.dtype ||
	     c->root != want.root || c->len != want.len))
		rc = -EBADMSG;
	if (rc < 0)
		return start_fail(e, g, c, rc);
	if (!c->known) {
		c->op = want.op;
		c->redop = want.redop;
		c->dtype = want.dtype;
		c->root = want.root;
		c->len = want.len;
		prog_build(g, c);
	}
	c->next = c->ndone = 0;
	c->running = true;
	c->slot_id = s->msg_id;
	e->coll->nrunning++;
	e->coll->st.started++;
	advance(e, g, c, now);
	return 0;
}

int engine_coll_submit(struct dnp_engine *e, struct slot *s, uint64_t now)
{
	struct dnp_coll *co = e->coll;

	if (!co->ngroups)
		return -EOPNOTSUPP;
	if (s->c.op == DNP_OP_COLL_JOIN) {
		int rc = coll_join(e, s);
		if (rc == 0)
			engine_complete(e, s, 0);
		return rc;
	}
	struct cgroup *g = group_find(co, s->port, s->c.remote_key);

	if (!g)
		return -ENOENT;
	if (s->c.op == DNP_OP_COLL_LEAVE) {
		coll_leave(e, g, now);
		engine_complete(e, s, 0);
		return 0;
	}
	if (s->c.len > co->max_len)
		return -EMSGSIZE;
	return coll_start(e, g, s, now);
}

/* ----------------------------------------------------------------- arrivals */

/* A member left (an ABORT from a member): its collectives from seq on fail. */
static void take_abort(struct dnp_engine *e, struct cgroup *g, uint32_t seq)
{
	if (!g->aborted || (int32_t)(seq - g->abort_seq) < 0)
		g->abort_seq = seq;
	g->aborted = true;
	for (unsigned k = 0; k < 2; k++)
		if (g->in[k].running)
			advance(e, g, &g->in[k], e->now);
}

/* Is src (node, port) member r of g? */
static bool is_member(const struct cgroup *g, uint32_t r, const struct dnp_pkt_hdr *h)
{
	return r < g->n && g->m[r].x == h->src.x && g->m[r].y == h->src.y &&
	       g->m[r].z == h->src.z && g->m[r].port == h->src_port;
}

/* The instance a packet of seq belongs to (the running one, or the next), or NULL: stale. */
static struct cinst *inst_for(struct cgroup *g, uint32_t seq)
{
	struct cinst *c = &g->in[seq & 1];

	if (c->running)
		return c->seq == seq ? c : NULL;
	if (seq != g->seq)
		return NULL;
	if (!c->used || c->seq != seq)
		inst_reset(c, seq, g->next_base);
	return c;
}

/* The packet's params agree with c's (set them from it if c has none): else c is bad. */
static bool params_take(const struct cgroup *g, struct cinst *c, const struct dnp_pkt_hdr *h,
			uint32_t max_len)
{
	uint8_t op = (uint8_t)(h->va >> 48), redop = (uint8_t)(h->key >> 8),
		dtype = (uint8_t)(h->key >> 16);
	uint16_t root = (uint16_t)(h->va >> 32);

	if (c->known) {
		if (c->op != op || c->redop != redop || c->dtype != dtype || c->root != root ||
		    c->len != h->msg_len)
			c->bad = true;
		return !c->bad;
	}
	if ((op != DNP_OP_ALLREDUCE && op != DNP_OP_BARRIER && op != DNP_OP_BCAST) ||
	    h->msg_len > max_len || root >= g->n)
		return false;
	c->op = op;
	c->redop = redop;
	c->dtype = dtype;
	c->root = root;
	c->len = h->msg_len;
	c->nch = nchunks(c->len);
	prog_build(g, c);
	return true;
}

/*
 * The chunk slot a packet for c belongs to, or NULL: its chunk is past c's
 * end, or its position outside [lo, lo + NSLOT) (which no member keeping to
 * the window sends: coll.h).
 */
static struct cchunk *chunk_for(struct cgroup *g, const struct cinst *c,
				const struct dnp_pkt_hdr *h)
{
	uint32_t k = h->offset / CHUNK, pos = c->base + k;

	if (k >= c->nch || pos - g->lo >= NSLOT)
		return NULL;
	return chunk_get(g, c, pos);
}

/* Is a packet's fragment one the step of tag in chunk ch waits for, and new? */
static bool frag_ok(const struct cinst *c, const struct cchunk *ch, uint32_t tag,
		    const struct dnp_pkt_hdr *h)
{
	uint32_t clen = chunk_len(c, chunk_idx(c, ch)), off = h->offset - chunk_idx(c, ch) * CHUNK;
	bool empty = (h->key & KEY_EMPTY) != 0;

	if (ch->got[tag] >= nfrags(clen) || ch->empty[tag] || (uint64_t)off + h->len > clen)
		return false;
	if (empty)
		return c->op == DNP_OP_BCAST && !h->len && !ch->got[tag] && !off;
	return frag_new(ch, tag, clen, off, h->len);
}

void engine_coll_take(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload,
		      uint64_t now)
{
	struct dnp_coll *co = e->coll;
	struct cgroup *g = group_find(co, h->dst_port, h->msg_id);
	uint32_t seq = (uint32_t)h->va, tag = h->key & 0xffu;

	co->st.pkts_rx++;
	if (g && (uint8_t)(h->va >> 48) == OP_ABORT) {
		bool member = false;

		for (uint32_t r = 0; r < g->n && !member; r++)
			member = is_member(g, r, h);
		if (member) {
			take_abort(e, g, seq);
			return;
		}
	}
	if (!g || (uint8_t)(h->va >> 48) == OP_ABORT) {
		co->st.rx_dropped++;
		return;
	}
	struct cinst *c = inst_for(g, seq);
	const struct cstep *st;
	struct cchunk *ch;

	if (!c || !params_take(g, c, h, co->max_len) || !(st = prog_recv(c, tag)) ||
	    !is_member(g, st->peer, h) || !(ch = chunk_for(g, c, h)) || !frag_ok(c, ch, tag, h)) {
		co->st.rx_dropped++;
		if (c && c->running && c->bad)
			advance(e, g, c, now);
		return;
	}
	uint32_t off = h->offset - chunk_idx(c, ch) * CHUNK;

	memcpy(ch->stash + (size_t)tag * co->bsz + off, payload, h->len);
	ch->got[tag]++;
	if (h->key & KEY_EMPTY)
		ch->empty[tag] = 1;
	else /* frag_new checked the offset */
		ch->seen[tag] |= (uint16_t)(1u << (off / DNP_MAX_PAYLOAD));
	if (c->running)
		advance(e, g, c, now);
}
