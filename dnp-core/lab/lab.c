/* SPDX-License-Identifier: MIT */
/*
 * lab — see lab.h. A discrete-event simulation of N DNP engines joined by
 * simulated links, with generated traffic and byte-exact verification.
 */
#include "lab.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Every node uses the same virtual layout: its source arena and its PUT target. */
#define LAB_TX_BASE 0x100000000000ull
#define LAB_RX_BASE 0x200000000000ull
#define LAB_PORT 0u
#define LAB_MAX_FRAME_SER(bw) (((uint64_t)DNP_MAX_FRAME / DNP_WORD_BYTES + (bw)-1) / (bw))

enum {
	LAB_EV_ARRIVE = 0,
	LAB_EV_WAKE = 1,
	LAB_EV_FAULT = 2
};

struct lab_ev {
	uint64_t t;
	uint64_t seq; /* insertion order: ties break deterministically */
	uint32_t node;
	uint32_t slot; /* frame slot (ARRIVE), failure index (FAULT) */
	uint8_t kind;
	uint8_t dir; /* arrival direction at node */
};

struct lab_slot {
	uint8_t *data;
	uint32_t len;
};

/* xoshiro256** seeded with splitmix64: one stream per directed link and per node. */
struct lab_rng {
	uint64_t s[4];
};

struct lab_msg {
	uint32_t src, dst, size;
	uint8_t ncompl, nrx;
	uint8_t resolved;  /* counted out of open_msgs */
	uint8_t excused;   /* an endpoint was killed: not verified */
	uint16_t attempts; /* submissions after the first (failures) */
	uint64_t retry_at; /* when it may be submitted again */
	int32_t status;    /* 1 until completed */
	uint32_t mismatches;
	uint64_t seed; /* pattern of the message's bytes */
	uint64_t tx_va, rx_va;
	uint64_t written;
	uint64_t t_submit, t_done;
};

struct lab_link {
	bool present;
	bool silenced;
	bool cut; /* a scheduled failure: frames both ways are lost */
	uint32_t peer;
	uint64_t busy_until;
	struct lab_rng rng;
	struct dnp_lab_link_info info;
};

struct lab_node {
	struct dnp_lab *lab;
	struct dnp_engine *e;
	uint32_t id;
	struct dnp_coord c;
	uint32_t *out; /* message indices in submission order (tx_va ascending) */
	uint32_t nout, next_submit;
	uint32_t *in; /* incoming message indices, rx_va ascending */
	uint32_t nin;
	uint32_t *retry; /* failed messages to submit again, a FIFO of nout + 1 */
	uint32_t retry_head, retry_tail;
	bool dead;            /* killed: no engine */
	uint32_t incarnation; /* engines this node has had, minus one */
	uint64_t tx_size, rx_size;
	uint32_t rx_key;
	uint64_t next_wake;
	uint64_t delivered_seen;
	uint64_t bytes_seen, routes_seen; /* engine counters already accounted for */
	bool touched;
	struct lab_link link[DNP_NDIRS];
};

struct dnp_lab {
	struct dnp_lab_conf conf;
	uint32_t n;
	struct lab_node *nodes;
	struct lab_msg *msgs;
	uint32_t nmsgs;
	uint32_t open_msgs; /* not yet completed (and received, when successful) */
	uint64_t now;
	uint64_t last_progress;
	uint64_t max_ser;
	/* event heap */
	struct lab_ev *heap;
	size_t heap_len, heap_cap;
	uint64_t ev_seq;
	/* frame slots */
	struct lab_slot *slots;
	uint32_t *free_slots;
	uint32_t nslots, nfree;
	uint32_t *touched;
	uint32_t ntouched;
	unsigned reported;
	uint64_t writes;
	unsigned faults_done; /* scheduled failures applied so far */
	uint64_t *timeline;   /* bytes delivered per conf.timeline window */
	unsigned ntimeline;   /* windows used */
	uint8_t scratch[DNP_MAX_PAYLOAD];
	struct dnp_lab_result res;
};

/* ---------------------------------------------------------------- PRNG */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rng_seed(struct lab_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct lab_rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

static bool rng_chance(struct lab_rng *r, double p)
{
	if (p <= 0.0)
		return false;
	return (double)(rng_next(r) >> 11) * 0x1.0p-53 < p;
}

static uint64_t rng_below(struct lab_rng *r, uint64_t n)
{
	return n ? rng_next(r) % n : 0;
}

/* ------------------------------------------------------ message bytes */

/*
 * The 8-byte word w of a message: stateless, so any range can be generated
 * or checked on its own. One multiply per word keeps 64 x 63 MiB cheap; a
 * byte written at the wrong offset or into the wrong message still differs.
 */
static inline uint64_t pattern_word(uint64_t seed, uint64_t w)
{
	uint64_t z = (seed ^ (w * 0xd1b54a32d192ed03ull)) * 0x9e3779b97f4a7c15ull;

	return z ^ (z >> 29);
}

static inline uint8_t pattern_byte(uint64_t seed, uint64_t off)
{
	return (uint8_t)(pattern_word(seed, off / 8) >> (8 * (off % 8)));
}

/* Little-endian host: byte i of a word is bits 8i..8i+7, as pattern_byte says. */
static void pattern_fill(uint64_t seed, uint64_t off, uint8_t *dst, size_t len)
{
	for (; len && off % 8; len--)
		*dst++ = pattern_byte(seed, off++);
	for (uint64_t w = off / 8; len >= 8; len -= 8, dst += 8, off += 8) {
		uint64_t v = pattern_word(seed, w++);

		memcpy(dst, &v, 8);
	}
	for (; len; len--)
		*dst++ = pattern_byte(seed, off++);
}

/* Number of bytes of src[0..len) that differ from the pattern at off. */
static uint64_t pattern_check(uint64_t seed, uint64_t off, const uint8_t *src, size_t len)
{
	uint64_t bad = 0;

	for (; len && off % 8; len--)
		bad += *src++ != pattern_byte(seed, off++);
	for (uint64_t w = off / 8; len >= 8; len -= 8, src += 8, off += 8) {
		uint64_t v, x;

		memcpy(&v, src, 8);
		x = v ^ pattern_word(seed, w++);
		if (x) {
			for (int i = 0; i < 8; i++)
				bad += ((x >> (8 * i)) & 0xff) != 0;
		}
	}
	for (; len; len--)
		bad += *src++ != pattern_byte(seed, off++);
	return bad;
}

/* ----------------------------------------------------------- memory */

/* The message of list[0..n) (sorted by the va returned by key) that holds va. */
static struct lab_msg *msg_find(struct dnp_lab *lab, const uint32_t *list, uint32_t n, uint64_t va,
				bool rx)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		struct lab_msg *m = &lab->msgs[list[mid]];
		uint64_t start = rx ? m->rx_va : m->tx_va;

		if (start <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &lab->msgs[list[lo - 1]] : NULL;
}

static void verify_fail(struct dnp_lab *lab, const char *what, uint64_t a, uint64_t b)
{
	lab->res.verify_errors++;
	if (lab->conf.verbose && lab->reported < 20) {
		lab->reported++;
		fprintf(stderr, "dnp-lab: t=%" PRIu64 ": %s (%" PRIu64 ", %" PRIu64 ")\n", lab->now,
			what, a, b);
	}
}

static int lab_mem_read(void *ctx, unsigned port, const struct dnp_buf *buf, uint64_t va, void *dst,
			size_t len, const struct dnp_mem_seq *seq)
{
	(void)seq;
	struct lab_node *n = ctx;
	struct lab_msg *m;

	if (port != LAB_PORT || va < LAB_TX_BASE || va - LAB_TX_BASE > n->tx_size ||
	    len > n->tx_size - (va - LAB_TX_BASE))
		return -EFAULT;
	if (!len)
		return 0;
	m = msg_find(n->lab, n->out, n->nout, va, false);
	if (!m || va + len > m->tx_va + m->size)
		return -EFAULT; /* straddles two messages: the engine read the wrong range */
	pattern_fill(m->seed, va - m->tx_va, dst, len);
	return 0;
}

static int lab_mem_write(void *ctx, unsigned port, const struct dnp_buf *buf, uint64_t va,
			 const void *src, size_t len)
{
	struct lab_node *n = ctx;
	struct dnp_lab *lab = n->lab;
	struct lab_msg *m;
	uint64_t bad;

	if (port != LAB_PORT || va < LAB_RX_BASE || va - LAB_RX_BASE > n->rx_size ||
	    len > n->rx_size - (va - LAB_RX_BASE))
		return -EFAULT;
	if (!len)
		return 0;
	m = msg_find(lab, n->in, n->nin, va, true);
	if (!m || va + len > m->rx_va + m->size) {
		verify_fail(lab, "write across message bounds", n->id, va - LAB_RX_BASE);
		return 0;
	}
	if (++lab->writes == lab->conf.tamper_write && len <= sizeof(lab->scratch)) {
		memcpy(lab->scratch, src, len);
		lab->scratch[len / 2] ^= 0x40;
		src = lab->scratch;
	}
	bad = pattern_check(m->seed, va - m->rx_va, src, len);
	if (bad) {
		m->mismatches++;
		lab->res.byte_mismatches += bad;
		verify_fail(lab, "byte mismatch (msg, bytes)", (uint64_t)(m - lab->msgs), bad);
	}
	m->written += len;
	return 0;
}

static const struct dnp_mem_ops lab_mem_ops = {
	.read = lab_mem_read,
	.write = lab_mem_write,
};

/* -------------------------------------------------------------- heap */

static bool ev_before(const struct lab_ev *a, const struct lab_ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int heap_push(struct dnp_lab *lab, struct lab_ev ev)
{
	size_t i;

	if (lab->heap_len == lab->heap_cap) {
		size_t cap = lab->heap_cap * 2;
		struct lab_ev *h = realloc(lab->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		lab->heap = h;
		lab->heap_cap = cap;
	}
	ev.seq = lab->ev_seq++;
	i = lab->heap_len++;
	while (i) {
		size_t p = (i - 1) / 2;

		if (!ev_before(&ev, &lab->heap[p]))
			break;
		lab->heap[i] = lab->heap[p];
		i = p;
	}
	lab->heap[i] = ev;
	return 0;
}

static struct lab_ev heap_pop(struct dnp_lab *lab)
{
	struct lab_ev top = lab->heap[0];
	struct lab_ev last = lab->heap[--lab->heap_len];
	size_t n = lab->heap_len, i = 0;

	while (n) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && ev_before(&lab->heap[c + 1], &lab->heap[c]))
			c++;
		if (!ev_before(&lab->heap[c], &last))
			break;
		lab->heap[i] = lab->heap[c];
		i = c;
	}
	if (n)
		lab->heap[i] = last;
	return top;
}

/* ------------------------------------------------------------- slots */

static int slot_get(struct dnp_lab *lab, uint32_t *out)
{
	if (!lab->nfree) {
		uint32_t n = lab->nslots ? lab->nslots * 2 : 256;
		struct lab_slot *s = realloc(lab->slots, n * sizeof(*s));
		uint32_t *f;

		if (!s)
			return -ENOMEM;
		lab->slots = s;
		f = realloc(lab->free_slots, n * sizeof(*f));
		if (!f)
			return -ENOMEM;
		lab->free_slots = f;
		for (uint32_t i = lab->nslots; i < n; i++) {
			s[i].data = malloc(DNP_MAX_FRAME);
			if (!s[i].data) {
				lab->nslots = i;
				return -ENOMEM;
			}
			f[lab->nfree++] = n - 1 - (i - lab->nslots);
		}
		lab->nslots = n;
	}
	*out = lab->free_slots[--lab->nfree];
	return 0;
}

static void slot_put(struct dnp_lab *lab, uint32_t i)
{
	lab->free_slots[lab->nfree++] = i;
}

/* ------------------------------------------------------------- setup */

void dnp_lab_conf_default(struct dnp_lab_conf *c)
{
	struct dnp_engine_conf ec;

	memset(c, 0, sizeof(*c));
	dnp_engine_conf_default(&ec);
	dnp_torus_init(&c->torus, 2, 2, 2);
	c->link = ec.link;
	/* The APEnet+ link (EURETILE report, torus link): 512-word FIFO, T_RED 506,
	 * C 35 cycles, one word per cycle, 35 cycles of flight time. */
	c->link.fifo_words = 512;
	c->link.t_red = 506;
	c->link.t_yellow = 256;
	c->link.credit_period = 35;
	c->link.rule = DNP_START_VCT;
	c->link.credit_model = DNP_CREDIT_HW;
	c->link.nvc = 2;
	/* timers in lab time units: derived from latency/bw in dnp_lab_create when 0 */
	c->link.rto = 0;
	c->link.credit_timeout = 0;
	c->link.init_timeout = 0;
	c->vc_mode = DNP_VC_DATELINE;
	/* the engine's pools are sized for a daemon; 64 lab nodes need less */
	c->max_commands = ec.max_commands < 256 ? ec.max_commands : 256;
	c->event_queue = ec.event_queue < 1024 ? ec.event_queue : 1024;
	c->cmd_timeout = 0;
	c->latency = 35;
	c->bw = 1;
	c->seed = 1;
	c->silence_node = -1;
	c->pattern = DNP_LAB_ALL_TO_ALL;
	c->sizes[0] = 4096;
	c->nsizes = 1;
	c->count = 1;
	c->max_time = UINT64_MAX / 4;
}

static const char *const pattern_names[] = {
	[DNP_LAB_ALL_TO_ALL] = "all-to-all", [DNP_LAB_NEIGHBOUR] = "neighbour",
	[DNP_LAB_HOTSPOT] = "hotspot",       [DNP_LAB_RANDOM] = "random",
	[DNP_LAB_SHIFT] = "shift",
};

const char *dnp_lab_pattern_name(enum dnp_lab_pattern p)
{
	return (unsigned)p < sizeof(pattern_names) / sizeof(pattern_names[0]) ? pattern_names[p] :
										"?";
}

int dnp_lab_pattern_parse(const char *s, enum dnp_lab_pattern *p)
{
	for (unsigned i = 0; i < sizeof(pattern_names) / sizeof(pattern_names[0]); i++) {
		if (!strcmp(s, pattern_names[i])) {
			*p = (enum dnp_lab_pattern)i;
			return 0;
		}
	}
	if (!strcmp(s, "alltoall") || !strcmp(s, "all2all")) {
		*p = DNP_LAB_ALL_TO_ALL;
		return 0;
	}
	if (!strcmp(s, "neighbor")) {
		*p = DNP_LAB_NEIGHBOUR;
		return 0;
	}
	return -EINVAL;
}

int dnp_lab_parse_sizes(const char *s, struct dnp_lab_conf *c)
{
	unsigned n = 0;

	while (*s) {
		char *end;
		unsigned long long v;

		if (n == DNP_LAB_MAX_SIZES)
			return -E2BIG;
		errno = 0;
		v = strtoull(s, &end, 0);
		if (end == s || errno)
			return -EINVAL;
		if (*end == 'K' || *end == 'k') {
			v <<= 10;
			end++;
		} else if (*end == 'M' || *end == 'm') {
			v <<= 20;
			end++;
		}
		if (v > UINT32_MAX)
			return -EINVAL;
		c->sizes[n++] = (uint32_t)v;
		if (*end == ',')
			end++;
		else if (*end)
			return -EINVAL;
		s = end;
	}
	if (!n)
		return -EINVAL;
	c->nsizes = n;
	return 0;
}

/* Appends a message src->dst of size to the plan (msgs may be NULL: counting pass). */
static int fault_add(struct dnp_lab_conf *c, uint64_t at, uint32_t node, unsigned dir,
		     unsigned kind)
{
	if (c->nfaults >= DNP_LAB_MAX_FAULTS)
		return -E2BIG;
	c->faults[c->nfaults++] = (struct dnp_lab_fault){
		.at = at, .node = node, .dir = (uint8_t)dir, .kind = (uint8_t)kind
	};
	return 0;
}

int dnp_lab_fault_parse(const char *s, struct dnp_lab_conf *c)
{
	static const char *const kinds[] = { "cut", "mend", "kill", "revive" };
	static const char *const dirs[DNP_NDIRS] = { "xp", "xm", "yp", "ym", "zp", "zm" };
	char buf[96], *at, *coord, *dir, *end;
	struct dnp_coord xyz;
	unsigned kind, d = 0;
	uint64_t t;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	at = strchr(buf, '@');
	if (!at)
		return -EINVAL;
	*at++ = '\0';
	for (kind = 0; kind < 4 && strcmp(buf, kinds[kind]); kind++)
		;
	if (kind == 4)
		return -EINVAL;
	coord = strchr(at, ':');
	if (!coord)
		return -EINVAL;
	*coord++ = '\0';
	errno = 0;
	t = strtoull(at, &end, 0);
	if (end == at || *end || errno || *at == '-')
		return -EINVAL;
	dir = strchr(coord, ':');
	if (dir)
		*dir++ = '\0';
	if ((kind <= DNP_LAB_MEND) != (dir != NULL))
		return -EINVAL;
	if (dnp_coord_parse(coord, &c->torus, &xyz))
		return -EINVAL;
	if (dir) {
		for (d = 0; d < DNP_NDIRS && strcmp(dir, dirs[d]); d++)
			;
		if (d == DNP_NDIRS || c->torus.dim[d / 2] < 2)
			return -EINVAL;
	}
	return fault_add(c, t, dnp_torus_id(&c->torus, xyz), d, kind);
}

int dnp_lab_random_faults(struct dnp_lab_conf *c, unsigned cuts, unsigned kills, uint64_t t_end,
			  uint64_t seed)
{
	uint32_t n = dnp_torus_size(&c->torus);
	struct lab_rng r;
	int ret;

	if (!t_end || (cuts && c->torus.dim[0] < 2 && c->torus.dim[1] < 2 && c->torus.dim[2] < 2))
		return -EINVAL;
	if (c->nfaults + 2ull * (cuts + kills) > DNP_LAB_MAX_FAULTS || kills > n)
		return -E2BIG;
	rng_seed(&r, seed ^ 0xfa11ed5eedull);
	for (unsigned i = 0; i < cuts; i++) {
		uint32_t node = (uint32_t)rng_below(&r, n);
		unsigned dir;
		uint64_t at = rng_below(&r, t_end);
		uint64_t len = 1 + rng_below(&r, t_end / 2 + 1);

		do
			dir = (unsigned)rng_below(&r, DNP_NDIRS);
		while (c->torus.dim[dir / 2] < 2);
		if ((ret = fault_add(c, at, node, dir, DNP_LAB_CUT)) ||
		    (ret = fault_add(c, at + len, node, dir, DNP_LAB_MEND)))
			return ret;
	}
	/* kills one after the other: slot k of t_end / kills holds one death */
	for (unsigned k = 0; k < kills; k++) {
		uint64_t slot = t_end / kills, base = k * slot;
		uint64_t at = base + rng_below(&r, slot / 2 + 1);
		uint64_t len = 1 + rng_below(&r, slot / 2 + 1);
		uint32_t node = (uint32_t)rng_below(&r, n);

		for (unsigned j = 0; j < c->nfaults; j++)
			if (c->faults[j].kind == DNP_LAB_KILL && c->faults[j].node == node) {
				node = (node + 1) % n; /* each node dies at most once */
				j = (unsigned)-1;
			}
		if ((ret = fault_add(c, at, node, 0, DNP_LAB_KILL)) ||
		    (ret = fault_add(c, at + len, node, 0, DNP_LAB_REVIVE)))
			return ret;
	}
	return 0;
}

static void plan_add(struct dnp_lab *lab, uint32_t src, uint32_t dst, uint32_t size)
{
	if (lab->msgs) {
		struct lab_msg *m = &lab->msgs[lab->nmsgs];
		uint64_t s = lab->conf.seed ^ ((uint64_t)lab->nmsgs << 20);

		memset(m, 0, sizeof(*m));
		m->src = src;
		m->dst = dst;
		m->size = size;
		m->status = 1;
		m->seed = splitmix64(&s);
		m->t_submit = UINT64_MAX;
		m->t_done = UINT64_MAX;
	}
	lab->nmsgs++;
}

/* Generates the traffic: called twice, to count and then to fill lab->msgs. */
static void plan(struct dnp_lab *lab)
{
	const struct dnp_lab_conf *c = &lab->conf;
	uint32_t n = lab->n;

	lab->nmsgs = 0;
	for (uint32_t src = 0; src < n; src++) {
		struct lab_rng rng;
		struct dnp_coord sc = dnp_torus_coord(&c->torus, src);

		rng_seed(&rng, c->seed * 0x100000001b3ull + src + 0x5eed);
		for (unsigned k = 0; k < c->count; k++) {
			for (unsigned si = 0; si < c->nsizes; si++) {
				uint32_t size = c->sizes[si];

				switch (c->pattern) {
				case DNP_LAB_ALL_TO_ALL:
					/* rotate the starting peer so that links share the load */
					for (uint32_t j = 1; j < n; j++)
						plan_add(lab, src, (src + j) % n, size);
					break;
				case DNP_LAB_NEIGHBOUR: {
					uint32_t seen[DNP_NDIRS];
					unsigned ns = 0;

					for (unsigned d = 0; d < DNP_NDIRS; d++) {
						struct dnp_coord nc = dnp_torus_neighbour(
							&c->torus, sc, (enum dnp_dir)d);
						uint32_t id = dnp_torus_id(&c->torus, nc);
						bool dup = id == src;

						for (unsigned i = 0; i < ns; i++)
							dup |= seen[i] == id;
						if (dup)
							continue;
						seen[ns++] = id;
						plan_add(lab, src, id, size);
					}
					break;
				}
				case DNP_LAB_HOTSPOT:
					if (src != c->hotspot)
						plan_add(lab, src, c->hotspot, size);
					break;
				case DNP_LAB_RANDOM:
					if (n > 1) {
						uint32_t d = (uint32_t)rng_below(&rng, n - 1);

						plan_add(lab, src, d >= src ? d + 1 : d, size);
					}
					break;
				case DNP_LAB_SHIFT: {
					struct dnp_coord dc;
					int v[3] = { sc.x, sc.y, sc.z };

					for (int i = 0; i < 3; i++) {
						int dim = c->torus.dim[i];

						v[i] = ((v[i] + c->shift[i]) % dim + dim) % dim;
					}
					dc.x = (uint8_t)v[0];
					dc.y = (uint8_t)v[1];
					dc.z = (uint8_t)v[2];
					if (!dnp_coord_eq(dc, sc))
						plan_add(lab, src, dnp_torus_id(&c->torus, dc),
							 size);
					break;
				}
				}
			}
		}
	}
}

static uint64_t slot_len(uint32_t size)
{
	/* every message owns at least 16 bytes of address space, so vas are unique */
	return size ? ((uint64_t)size + 15u) & ~15ull : 16u;
}

/* Fills in derived timers that were left 0, in lab time units. */
static void fit_timers(struct dnp_lab_conf *c, uint64_t max_ser)
{
	uint64_t rtt = 2 * (c->latency + max_ser) + c->link.credit_period;
	/* The engine starts a packet's retransmit timer when credit admits it to
	 * the link, so the timer also covers the wait behind up to t_red words
	 * per VC already queued on that link. */
	uint64_t queue = ((uint64_t)c->link.t_red * c->link.nvc + c->bw - 1) / c->bw;

	if (!c->link.rto)
		c->link.rto = 2 * (rtt + queue) + 16;
	if (!c->link.credit_timeout)
		c->link.credit_timeout = 8 * (c->link.credit_period + max_ser + c->latency) + 64;
	if (!c->link.init_timeout)
		c->link.init_timeout = 2 * c->link.credit_timeout;
	if (!c->stall_limit)
		c->stall_limit = 4 * ((uint64_t)(c->link.max_retries + 2) * c->link.rto +
				      c->link.credit_timeout) +
				 10000;
	if (!c->nfaults)
		return;
	/*
	 * Failures: links must be able to come back (probe a BROKEN link), a
	 * command whose completion report was lost with a cable must end by
	 * its deadline, and a failed command is resubmitted once the failure
	 * had time to be detected and told to every node.
	 */
	if (!c->link.reset_period)
		c->link.reset_period = c->link.credit_timeout / 4 + 1;
	if (!c->cmd_timeout)
		c->cmd_timeout = c->stall_limit / 2;
	if (!c->retry_delay)
		c->retry_delay = c->link.credit_timeout;
}

static int build_nodes(struct dnp_lab *lab)
{
	const struct dnp_lab_conf *c = &lab->conf;
	uint32_t *in_count = calloc(lab->n, sizeof(*in_count));
	uint32_t *out_count = calloc(lab->n, sizeof(*out_count));
	int ret = -ENOMEM;

	if (!in_count || !out_count)
		goto out;
	for (uint32_t i = 0; i < lab->nmsgs; i++) {
		out_count[lab->msgs[i].src]++;
		in_count[lab->msgs[i].dst]++;
	}
	for (uint32_t id = 0; id < lab->n; id++) {
		struct lab_node *nd = &lab->nodes[id];

		nd->lab = lab;
		nd->id = id;
		nd->c = dnp_torus_coord(&c->torus, id);
		nd->out = malloc((out_count[id] + 1) * sizeof(uint32_t));
		nd->in = malloc((in_count[id] + 1) * sizeof(uint32_t));
		nd->retry = malloc((out_count[id] + 1) * sizeof(uint32_t));
		if (!nd->out || !nd->in || !nd->retry)
			goto out;
		nd->next_wake = UINT64_MAX;
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			struct lab_link *l = &nd->link[d];
			struct dnp_coord pc =
				dnp_torus_neighbour(&c->torus, nd->c, (enum dnp_dir)d);

			l->present = c->torus.dim[d / 2] > 1;
			l->peer = dnp_torus_id(&c->torus, pc);
			l->silenced = c->silence_node == (int)id && c->silence_dir == d;
			l->info.present = l->present;
			l->info.broken_at = UINT64_MAX;
			rng_seed(&l->rng, c->seed ^ (0xd1b54a32d192ed03ull * (id * 8 + d + 1)));
		}
	}
	/* sources in submission order, targets in order of arrival in the plan */
	for (uint32_t i = 0; i < lab->nmsgs; i++) {
		struct lab_msg *m = &lab->msgs[i];
		struct lab_node *s = &lab->nodes[m->src], *d = &lab->nodes[m->dst];

		m->tx_va = LAB_TX_BASE + s->tx_size;
		s->tx_size += slot_len(m->size);
		s->out[s->nout++] = i;
		m->rx_va = LAB_RX_BASE + d->rx_size;
		d->rx_size += slot_len(m->size);
		d->in[d->nin++] = i;
	}
	ret = 0;
out:
	free(in_count);
	free(out_count);
	return ret;
}

/* A new engine for node id (at start, or revived as a restarted daemon). */
static int build_engine(struct dnp_lab *lab, uint32_t id)
{
	const struct dnp_lab_conf *c = &lab->conf;
	{
		struct lab_node *nd = &lab->nodes[id];
		struct dnp_engine_conf ec;
		int ret;

		dnp_engine_conf_default(&ec);
		ec.torus = c->torus;
		ec.self = nd->c;
		ec.link = c->link;
		ec.vc_mode = c->vc_mode;
		ec.max_buffers = 16;
		ec.max_ports = 1;
		ec.max_commands = c->max_commands;
		ec.event_queue = c->event_queue;
		if (ec.max_sends > 4)
			ec.max_sends = 4;
		ec.cmd_timeout = c->cmd_timeout;
		/* reproducible keys: the secret follows the lab's seed and the node */
		ec.key_secret[0] = c->seed * 0x9e3779b97f4a7c15ull + id + 1;
		ec.key_secret[1] = ~c->seed ^ ((uint64_t)id << 32);
		ec.mem = &lab_mem_ops;
		ec.mem_ctx = nd;
		/* a revived node is a new incarnation: its links say so in RESET frames */
		ec.link.nonce =
			nd->incarnation ? (uint32_t)(id * 131u + nd->incarnation * 7919u + 2u) : 0;
		ret = dnp_engine_create(&ec, lab->now, &nd->e);
		if (ret)
			return ret;
		ret = dnp_engine_port_open(nd->e, LAB_PORT);
		if (ret)
			return ret;
		ret = dnp_engine_register(nd->e, LAB_PORT, LAB_RX_BASE,
					  nd->rx_size ? nd->rx_size : 16, DNP_BUF_PUT_TARGET, 0,
					  &nd->rx_key);
		if (ret)
			return ret;
	}
	return 0;
}

static int build_engines(struct dnp_lab *lab)
{
	for (uint32_t id = 0; id < lab->n; id++) {
		int ret = build_engine(lab, id);

		if (ret)
			return ret;
	}
	return 0;
}

int dnp_lab_create(const struct dnp_lab_conf *conf, struct dnp_lab **out)
{
	struct dnp_lab *lab;
	int ret = -ENOMEM;

	if (!conf->bw || !conf->nsizes || conf->nsizes > DNP_LAB_MAX_SIZES || !conf->count ||
	    conf->loss < 0 || conf->loss > 1 || conf->corrupt < 0 || conf->corrupt > 1 ||
	    conf->dup < 0 || conf->dup > 1 || conf->reorder < 0 || conf->reorder > 1 ||
	    conf->silence_dir >= DNP_NDIRS)
		return -EINVAL;
	for (int i = 0; i < 3; i++) {
		if (!conf->torus.dim[i] || conf->torus.dim[i] > DNP_TORUS_MAX_DIM)
			return -EINVAL;
	}
	if (conf->nfaults > DNP_LAB_MAX_FAULTS)
		return -EINVAL;
	for (unsigned i = 0; i < conf->nfaults; i++)
		if (conf->faults[i].node >= dnp_torus_size(&conf->torus) ||
		    conf->faults[i].dir >= DNP_NDIRS || conf->faults[i].kind > DNP_LAB_REVIVE)
			return -EINVAL;
	lab = calloc(1, sizeof(*lab));
	if (!lab)
		return -ENOMEM;
	lab->conf = *conf;
	lab->n = dnp_torus_size(&conf->torus);
	if (conf->pattern == DNP_LAB_HOTSPOT && conf->hotspot >= lab->n) {
		free(lab);
		return -EINVAL;
	}
	lab->max_ser = LAB_MAX_FRAME_SER(conf->bw);
	fit_timers(&lab->conf, lab->max_ser);
	lab->res.lat_min = UINT64_MAX;
	plan(lab);
	lab->msgs = calloc(lab->nmsgs + 1, sizeof(*lab->msgs));
	lab->nodes = calloc(lab->n, sizeof(*lab->nodes));
	lab->touched = calloc(lab->n, sizeof(*lab->touched));
	lab->heap_cap = 1024;
	lab->heap = malloc(lab->heap_cap * sizeof(*lab->heap));
	if (conf->timeline)
		lab->timeline = calloc(DNP_LAB_TIMELINE_MAX, sizeof(*lab->timeline));
	if (!lab->msgs || !lab->nodes || !lab->touched || !lab->heap ||
	    (conf->timeline && !lab->timeline))
		goto fail;
	plan(lab);
	ret = build_nodes(lab);
	if (ret)
		goto fail;
	ret = build_engines(lab);
	if (ret)
		goto fail;
	lab->open_msgs = lab->nmsgs;
	lab->res.messages = lab->nmsgs;
	for (uint32_t i = 0; i < lab->nmsgs; i++)
		lab->res.bytes += lab->msgs[i].size;
	*out = lab;
	return 0;
fail:
	dnp_lab_destroy(lab);
	return ret;
}

void dnp_lab_destroy(struct dnp_lab *lab)
{
	if (!lab)
		return;
	if (lab->nodes) {
		for (uint32_t i = 0; i < lab->n; i++) {
			if (lab->nodes[i].e)
				dnp_engine_destroy(lab->nodes[i].e);
			free(lab->nodes[i].out);
			free(lab->nodes[i].in);
			free(lab->nodes[i].retry);
		}
	}
	for (uint32_t i = 0; i < lab->nslots; i++)
		free(lab->slots[i].data);
	free(lab->slots);
	free(lab->free_slots);
	free(lab->nodes);
	free(lab->msgs);
	free(lab->touched);
	free(lab->heap);
	free(lab->timeline);
	free(lab);
}

unsigned dnp_lab_timeline(const struct dnp_lab *lab, const uint64_t **out)
{
	*out = lab->timeline;
	return lab->ntimeline;
}

/* ------------------------------------------------------------ running */

static void touch(struct dnp_lab *lab, uint32_t id)
{
	struct lab_node *nd = &lab->nodes[id];

	if (!nd->touched) {
		nd->touched = true;
		lab->touched[lab->ntouched++] = id;
	}
}

static void msg_resolve(struct dnp_lab *lab, struct lab_msg *m)
{
	if (!m->resolved && m->ncompl == 1 && (m->status != 0 || m->nrx >= 1)) {
		m->resolved = 1;
		lab->open_msgs--;
	}
}

static int schedule_wake(struct dnp_lab *lab, struct lab_node *nd, uint64_t t);

/* Errors a failure in the torus causes, which an application retries. */
static bool retryable(int status)
{
	return status == -ENOLINK || status == -EHOSTUNREACH || status == -ETIMEDOUT ||
	       status == -ECONNRESET;
}

/* Queues m (failed, both endpoints alive) for a new submission by nd. */
static void retry_later(struct dnp_lab *lab, struct lab_node *nd, struct lab_msg *m)
{
	m->ncompl = 0;
	m->status = 1;
	m->attempts++;
	m->retry_at = lab->now + lab->conf.retry_delay;
	nd->retry[nd->retry_tail++ % (nd->nout + 1)] = (uint32_t)(m - lab->msgs);
	lab->res.retries++;
	(void)schedule_wake(lab, nd, m->retry_at);
}

static void on_completion(struct dnp_lab *lab, struct lab_node *nd, const struct dnp_event *ev)
{
	struct lab_msg *m;

	if (!ev->cookie || ev->cookie > lab->nmsgs) {
		lab->res.unknown_events++;
		if (!(lab->conf.allow_errors && ev->type == DNP_EV_ERROR))
			verify_fail(lab, "completion with unknown cookie", nd->id, ev->cookie);
		return;
	}
	m = &lab->msgs[ev->cookie - 1];
	if (m->src != nd->id || ev->op != DNP_OP_PUT) {
		verify_fail(lab, "completion on the wrong node or op", nd->id, ev->cookie - 1);
		return;
	}
	if (m->ncompl++) {
		lab->res.double_completions++;
		verify_fail(lab, "second completion", nd->id, ev->cookie - 1);
		return;
	}
	lab->last_progress = lab->now;
	m->t_done = lab->now;
	if (ev->type == DNP_EV_TX_DONE && ev->status == 0) {
		m->status = 0;
		lab->res.completions_ok++;
		/* TX_DONE means the target wrote every byte (an earlier attempt may
		 * have written some twice) */
		if (!m->excused && (m->attempts ? m->written < m->size : m->written != m->size))
			verify_fail(lab, "TX_DONE before every byte was written", ev->cookie - 1,
				    m->written);
	} else {
		m->status = ev->status ? ev->status : -EIO;
		if (!m->excused && lab->conf.nfaults && retryable(m->status)) {
			retry_later(lab, nd, m);
			return;
		}
		lab->res.completions_err++;
		if (m->status == -ENOLINK)
			lab->res.err_nolink++;
		else
			lab->res.err_other++;
		if (!lab->conf.allow_errors && !m->excused)
			verify_fail(lab, "command failed (msg, -status)", ev->cookie - 1,
				    (uint64_t)-m->status);
	}
	msg_resolve(lab, m);
}

static void on_rx(struct dnp_lab *lab, struct lab_node *nd, const struct dnp_event *ev)
{
	struct lab_msg *m = msg_find(lab, nd->in, nd->nin, ev->va, true);
	struct lab_node *src;

	if (!m || m->rx_va != ev->va) {
		lab->res.unknown_events++;
		verify_fail(lab, "RX event for no expected message", nd->id, ev->va);
		return;
	}
	src = &lab->nodes[m->src];
	if (m->nrx++) {
		/* a resubmitted message may arrive twice; otherwise exactly once */
		if (!m->attempts && !m->excused)
			verify_fail(lab, "second RX event", (uint64_t)(m - lab->msgs), m->nrx);
		return;
	}
	lab->res.rx_events++;
	lab->last_progress = lab->now;
	if (ev->len != m->size || ev->peer_x != src->c.x || ev->peer_y != src->c.y ||
	    ev->peer_z != src->c.z || ev->op != DNP_OP_PUT)
		verify_fail(lab, "RX event fields (msg, len)", (uint64_t)(m - lab->msgs), ev->len);
	unsigned dist = dnp_torus_distance(&lab->conf.torus, src->c, nd->c);
	if (lab->conf.nfaults && ev->hops > dist) {
		lab->res.detoured++;
	} else if (ev->hops != dist) {
		lab->res.bad_hops++;
		verify_fail(lab, "hop count != torus distance (msg, hops)",
			    (uint64_t)(m - lab->msgs), ev->hops);
	}
	if (m->excused) {
		msg_resolve(lab, m);
		return;
	}
	if ((m->attempts ? m->written < m->size : m->written != m->size) || m->mismatches)
		verify_fail(lab, "RX event with bytes missing or wrong (msg, written)",
			    (uint64_t)(m - lab->msgs), m->written);
	msg_resolve(lab, m);
}

static bool poll_events(struct dnp_lab *lab, struct lab_node *nd)
{
	struct dnp_event ev[32];
	bool any = false;
	unsigned n;

	while ((n = dnp_engine_poll_events(nd->e, LAB_PORT, ev, 32)) > 0) {
		any = true;
		for (unsigned i = 0; i < n; i++) {
			switch (ev[i].type) {
			case DNP_EV_TX_DONE:
			case DNP_EV_ERROR:
				on_completion(lab, nd, &ev[i]);
				break;
			case DNP_EV_RX_PUT:
				on_rx(lab, nd, &ev[i]);
				break;
			case DNP_EV_LINK:
				break; /* link states are sampled after every step */
			default:
				lab->res.unknown_events++;
				verify_fail(lab, "unexpected event type", nd->id, ev[i].type);
				break;
			}
		}
		if (n < 32)
			break;
	}
	return any;
}

/* Submits message idx from nd: 0, -EAGAIN (try later), or the engine's refusal. */
static int submit_one(struct dnp_lab *lab, struct lab_node *nd, uint32_t idx)
{
	struct lab_msg *m = &lab->msgs[idx];
	struct lab_node *dst = &lab->nodes[m->dst];
	struct dnp_cmd cmd;
	int ret;

	memset(&cmd, 0, sizeof(cmd));
	cmd.op = DNP_OP_PUT;
	cmd.dst_port = LAB_PORT;
	cmd.src_port = LAB_PORT;
	cmd.dst_x = dst->c.x;
	cmd.dst_y = dst->c.y;
	cmd.dst_z = dst->c.z;
	cmd.remote_key = dst->rx_key;
	cmd.remote_va = m->rx_va;
	cmd.len = m->size;
	cmd.local_va = m->tx_va;
	cmd.cookie = (uint64_t)idx + 1;
	ret = dnp_engine_submit(nd->e, LAB_PORT, &cmd, lab->now);
	if (ret == -EAGAIN)
		return ret;
	if (!m->attempts)
		m->t_submit = lab->now;
	if (ret) {
		/* refused outright: no completion will follow */
		m->ncompl = 1;
		m->status = ret;
		m->t_done = lab->now;
		lab->res.completions_err++;
		lab->res.err_other++;
		verify_fail(lab, "submit refused (msg, -errno)", idx, (uint64_t)-ret);
		msg_resolve(lab, m);
	}
	return 0;
}

static bool submit(struct dnp_lab *lab, struct lab_node *nd)
{
	bool any = false;

	/* failed messages whose time has come, first */
	while (nd->retry_head != nd->retry_tail) {
		uint32_t idx = nd->retry[nd->retry_head % (nd->nout + 1)];
		struct lab_msg *m = &lab->msgs[idx];

		if (!m->excused) {
			if (m->retry_at > lab->now) {
				(void)schedule_wake(lab, nd, m->retry_at);
				break;
			}
			if (submit_one(lab, nd, idx) == -EAGAIN)
				break;
			any = true;
		}
		nd->retry_head++;
	}
	while (nd->next_submit < nd->nout) {
		uint32_t idx = nd->out[nd->next_submit];

		if (!lab->msgs[idx].excused && submit_one(lab, nd, idx) == -EAGAIN)
			break;
		nd->next_submit++;
		any = true;
	}
	return any;
}

/* Whatever was still open to or from a killed node is no longer verified. */
static void excuse(struct dnp_lab *lab, uint32_t node)
{
	for (uint32_t i = 0; i < lab->nmsgs; i++) {
		struct lab_msg *m = &lab->msgs[i];

		if ((m->src != node && m->dst != node) || m->resolved || m->excused)
			continue;
		m->excused = 1;
		m->resolved = 1;
		lab->open_msgs--;
		lab->res.excused++;
	}
}

/* Applies scheduled failure i (struct dnp_lab_fault). */
static int fault_apply(struct dnp_lab *lab, const struct dnp_lab_fault *f)
{
	struct lab_node *nd = &lab->nodes[f->node];
	int ret;

	lab->res.faults_applied++;
	lab->faults_done++;
	lab->last_progress = lab->now; /* a failure is not a deadlock of the traffic */
	switch (f->kind) {
	case DNP_LAB_CUT:
	case DNP_LAB_MEND: {
		struct lab_link *l = &nd->link[f->dir];

		if (!l->present)
			return 0;
		l->cut = f->kind == DNP_LAB_CUT;
		lab->nodes[l->peer].link[dnp_torus_opposite((enum dnp_dir)f->dir)].cut = l->cut;
		touch(lab, f->node);
		touch(lab, l->peer);
		return 0;
	}
	case DNP_LAB_KILL:
		if (nd->dead)
			return 0;
		excuse(lab, f->node);
		dnp_engine_destroy(nd->e);
		nd->e = NULL;
		nd->dead = true;
		nd->next_wake = UINT64_MAX;
		return 0;
	default: /* DNP_LAB_REVIVE */
		if (!nd->dead)
			return 0;
		nd->incarnation++;
		ret = build_engine(lab, f->node);
		if (ret)
			return ret;
		nd->dead = false;
		nd->next_submit = nd->nout; /* its messages were excused */
		nd->retry_head = nd->retry_tail;
		nd->delivered_seen = 0;
		nd->bytes_seen = 0;
		nd->routes_seen = 0;
		for (unsigned d = 0; d < DNP_NDIRS; d++)
			nd->link[d].busy_until = lab->now;
		touch(lab, f->node);
		return 0;
	}
}

static bool frame_is_seq(const uint8_t *data, uint32_t len)
{
	struct dnp_pkt_hdr h;
	const uint8_t *payload;

	if (dnp_pkt_decode(data, len, &h, &payload))
		return false;
	return h.lflags & DNP_LINK_F_SEQ;
}

static int transmit(struct dnp_lab *lab, struct lab_node *nd, unsigned dir,
		    const struct dnp_frame *f)
{
	const struct dnp_lab_conf *c = &lab->conf;
	struct lab_link *l = &nd->link[dir];
	uint64_t ser = ((uint64_t)f->len + (uint64_t)DNP_WORD_BYTES * c->bw - 1) /
		       ((uint64_t)DNP_WORD_BYTES * c->bw);
	unsigned copies = 1, intact = 0;
	bool seq = false, checked = false;

	if (!ser)
		ser = 1;
	l->busy_until = lab->now + ser;
	l->info.busy += ser;
	l->info.frames++;
	l->info.bytes += f->len;
	if (l->silenced && lab->now >= c->silence_at) {
		l->info.silenced++;
		lab->res.silenced++;
		return 0;
	}
	if (l->cut || lab->nodes[l->peer].dead) {
		lab->res.cut_frames++;
		return 0;
	}
	if (rng_chance(&l->rng, c->loss)) {
		l->info.lost++;
		lab->res.lost++;
		if (frame_is_seq(f->data, f->len)) {
			lab->res.lost_seq++;
			lab->res.undelivered_seq++;
		}
		return 0;
	}
	if (rng_chance(&l->rng, c->dup)) {
		copies = 2;
		l->info.duplicated++;
		lab->res.duplicated++;
	}
	for (unsigned k = 0; k < copies; k++) {
		struct lab_ev ev = { 0 };
		struct lab_slot *s;
		uint32_t si;
		uint64_t extra = 0;
		int ret = slot_get(lab, &si);

		if (ret)
			return ret;
		s = &lab->slots[si];
		memcpy(s->data, f->data, f->len);
		s->len = f->len;
		if (rng_chance(&l->rng, c->corrupt)) {
			uint64_t bit = rng_below(&l->rng, (uint64_t)f->len * 8);

			if (!checked) {
				seq = frame_is_seq(f->data, f->len);
				checked = true;
			}
			s->data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			l->info.corrupted++;
			lab->res.corrupted++;
			lab->res.corrupted_seq += seq;
		} else {
			intact++;
		}
		if (rng_chance(&l->rng, c->reorder)) {
			/* held back long enough for the next frames to overtake it */
			extra = 1 + rng_below(&l->rng, 4 * ser + c->latency + 1);
			l->info.reordered++;
			lab->res.reordered++;
		}
		ev.t = lab->now + ser + c->latency + extra + k * ser;
		ev.kind = LAB_EV_ARRIVE;
		ev.node = l->peer;
		ev.dir = (uint8_t)dnp_torus_opposite((enum dnp_dir)dir);
		ev.slot = si;
		ret = heap_push(lab, ev);
		if (ret)
			return ret;
	}
	if (copies == 2 || intact == 0) {
		if (!checked)
			seq = frame_is_seq(f->data, f->len);
		if (seq && copies == 2 && intact == 2)
			lab->res.duplicated_seq++;
		if (seq && intact == 0)
			lab->res.undelivered_seq++;
	}
	return 0;
}

static int schedule_wake(struct dnp_lab *lab, struct lab_node *nd, uint64_t t)
{
	struct lab_ev ev = { 0 };

	if (t <= lab->now)
		t = lab->now + 1;
	if (t >= nd->next_wake)
		return 0;
	nd->next_wake = t;
	ev.t = t;
	ev.kind = LAB_EV_WAKE;
	ev.node = nd->id;
	return heap_push(lab, ev);
}

static int process(struct dnp_lab *lab, struct lab_node *nd)
{
	uint64_t now = lab->now, wake;
	const struct dnp_engine_stats *st;
	bool work;
	int ret;

	if (nd->dead)
		return 0;
	for (int iter = 0; iter < 8; iter++) {
		bool prog = false;

		dnp_engine_run(nd->e, now);
		prog |= poll_events(lab, nd);
		if (submit(lab, nd)) {
			prog = true;
			dnp_engine_run(nd->e, now);
		}
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			struct dnp_frame f;

			if (!nd->link[d].present || nd->link[d].busy_until > now)
				continue;
			if (dnp_engine_tx_burst(nd->e, d, &f, 1, now) == 1) {
				ret = transmit(lab, nd, d, &f);
				if (ret)
					return ret;
				prog = true;
			}
		}
		if (!prog || !dnp_engine_has_work(nd->e))
			break;
	}
	st = dnp_engine_stats(nd->e);
	if (st->pkts_delivered != nd->delivered_seen) {
		nd->delivered_seen = st->pkts_delivered;
		lab->last_progress = now;
	}
	if (st->bytes_delivered != nd->bytes_seen) {
		uint64_t w = lab->timeline ? now / lab->conf.timeline : 0;

		if (lab->timeline && w < DNP_LAB_TIMELINE_MAX) {
			lab->timeline[w] += st->bytes_delivered - nd->bytes_seen;
			if (w + 1 > lab->ntimeline)
				lab->ntimeline = (unsigned)w + 1;
		}
		nd->bytes_seen = st->bytes_delivered;
	}
	if (st->route_changes != nd->routes_seen) {
		nd->routes_seen = st->route_changes;
		lab->res.last_route_change = now;
	}
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		struct lab_link *l = &nd->link[d];

		if (l->present && l->info.broken_at == UINT64_MAX &&
		    dnp_engine_link_state(nd->e, d) == DNP_LINK_BROKEN)
			l->info.broken_at = now;
	}
	wake = dnp_engine_next_deadline(nd->e);
	work = dnp_engine_has_work(nd->e);
	if (work) {
		bool busy = false;

		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			struct lab_link *l = &nd->link[d];

			if (l->present && l->busy_until > now) {
				busy = true;
				if (l->busy_until < wake)
					wake = l->busy_until;
			}
		}
		if (!busy)
			wake = now + 1;
	}
	if (wake != UINT64_MAX)
		return schedule_wake(lab, nd, wake);
	return 0;
}

/*
 * After failures: every link that can be UP (its cable whole, both ends
 * alive) is UP, and no live engine has work left (routes told).
 */
static bool settled(const struct dnp_lab *lab)
{
	for (uint32_t i = 0; i < lab->n; i++) {
		const struct lab_node *nd = &lab->nodes[i];

		if (nd->dead)
			continue;
		if (dnp_engine_has_work(nd->e))
			return false;
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			const struct lab_link *l = &nd->link[d];

			if (l->present && !l->cut && !lab->nodes[l->peer].dead &&
			    dnp_engine_link_state(nd->e, d) != DNP_LINK_UP)
				return false;
		}
	}
	return true;
}

static uint64_t pending_total(const struct dnp_lab *lab)
{
	uint64_t p = 0;

	for (uint32_t i = 0; i < lab->n; i++)
		if (lab->nodes[i].e)
			p += dnp_engine_pending(lab->nodes[i].e);
	return p;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void finish(struct dnp_lab *lab)
{
	struct dnp_lab_result *r = &lab->res;
	uint64_t *lat = malloc((lab->nmsgs + 1) * sizeof(*lat));
	uint64_t nl = 0;
	double sum = 0;

	r->time = lab->now;
	r->pending_at_end = pending_total(lab);
	for (uint32_t i = 0; i < lab->nmsgs; i++) {
		const struct lab_msg *m = &lab->msgs[i];

		if (m->t_done != UINT64_MAX && m->t_submit != UINT64_MAX && lat)
			lat[nl++] = m->t_done - m->t_submit;
		if (r->status || m->excused)
			continue; /* a deadlock or timeout already says what is missing */
		if (m->ncompl != 1)
			verify_fail(lab, "message without completion", i, m->ncompl);
		else if (m->status == 0 && (m->attempts ? m->nrx < 1 || m->written < m->size :
							  m->nrx != 1 || m->written != m->size))
			verify_fail(lab, "completed message not received intact", i, m->written);
		else if (m->mismatches)
			verify_fail(lab, "message with wrong bytes", i, m->mismatches);
	}
	if (nl) {
		qsort(lat, nl, sizeof(*lat), cmp_u64);
		r->lat_min = lat[0];
		r->lat_median = lat[nl / 2];
		r->lat_p99 = lat[(nl * 99) / 100 < nl ? (nl * 99) / 100 : nl - 1];
		r->lat_max = lat[nl - 1];
		for (uint64_t i = 0; i < nl; i++)
			sum += (double)lat[i];
		r->lat_mean = sum / (double)nl;
	} else {
		r->lat_min = 0;
	}
	free(lat);
	memset(&r->engine, 0, sizeof(r->engine));
	memset(&r->link, 0, sizeof(r->link));
	for (uint32_t i = 0; i < lab->n; i++) {
		if (!lab->nodes[i].e)
			continue; /* killed, not revived: its counters went with it */
		const struct dnp_engine_stats *s = dnp_engine_stats(lab->nodes[i].e);

		r->engine.cmds_accepted += s->cmds_accepted;
		r->engine.cmds_ok += s->cmds_ok;
		r->engine.cmds_failed += s->cmds_failed;
		r->engine.pkts_injected += s->pkts_injected;
		r->engine.pkts_forwarded += s->pkts_forwarded;
		r->engine.pkts_delivered += s->pkts_delivered;
		r->engine.bytes_delivered += s->bytes_delivered;
		r->engine.rx_crc_errors += s->rx_crc_errors;
		r->engine.rx_malformed += s->rx_malformed;
		r->engine.rx_misrouted += s->rx_misrouted;
		r->engine.rx_wrong_link += s->rx_wrong_link;
		r->engine.deliver_errors += s->deliver_errors;
		r->engine.events += s->events;
		r->engine.hops_total += s->hops_total;
		r->engine.route_tx += s->route_tx;
		r->engine.route_rx += s->route_rx;
		r->engine.route_changes += s->route_changes;
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			const struct dnp_link_stats *ls;

			if (!lab->nodes[i].link[d].present)
				continue;
			ls = dnp_engine_link_stats(lab->nodes[i].e, d);
			if (!ls)
				continue;
			r->link.tx_frames += ls->tx_frames;
			r->link.tx_words += ls->tx_words;
			r->link.tx_retx_frames += ls->tx_retx_frames;
			r->link.retx_rounds += ls->retx_rounds;
			r->link.tx_credits += ls->tx_credits;
			r->link.rx_frames += ls->rx_frames;
			r->link.rx_words += ls->rx_words;
			r->link.rx_credits += ls->rx_credits;
			r->link.rx_dup += ls->rx_dup;
			r->link.rx_out_of_order += ls->rx_out_of_order;
			r->link.rx_overflow += ls->rx_overflow;
			r->link.credit_stalls += ls->credit_stalls;
		}
	}
	if (!r->status && r->verify_errors)
		r->status = -EIO;
}

int dnp_lab_run(struct dnp_lab *lab)
{
	const struct dnp_lab_conf *c = &lab->conf;
	struct dnp_lab_result *r = &lab->res;
	int ret = 0;

	lab->now = 0;
	lab->last_progress = 0;
	for (uint32_t i = 0; i < lab->n; i++)
		touch(lab, i);
	for (unsigned i = 0; i < c->nfaults; i++) {
		struct lab_ev ev = { .t = c->faults[i].at,
				     .kind = LAB_EV_FAULT,
				     .node = c->faults[i].node,
				     .slot = i };

		ret = heap_push(lab, ev);
		if (ret)
			goto out;
	}
	for (;;) {
		for (uint32_t i = 0; i < lab->ntouched; i++) {
			struct lab_node *nd = &lab->nodes[lab->touched[i]];

			nd->touched = false;
			ret = process(lab, nd);
			if (ret)
				goto out;
		}
		lab->ntouched = 0;
		/* with failures scheduled: also until all are applied and the torus healed */
		if (!lab->open_msgs && pending_total(lab) == 0 &&
		    (!c->nfaults || (lab->faults_done == c->nfaults && settled(lab))))
			break;
		if (lab->now - lab->last_progress > c->stall_limit) {
			/* traffic done, the torus not healed: said by the link states */
			if (!lab->open_msgs && c->nfaults && lab->faults_done == c->nfaults)
				break;
			/* Everything resolved but packets stuck (e.g. behind a broken
			 * link): not a deadlock of the traffic, reported as pending. */
			if (!lab->open_msgs && c->allow_errors)
				break;
			r->status = -EDEADLK;
			break;
		}
		if (!lab->heap_len) {
			r->status = -EDEADLK; /* nothing will ever happen again */
			break;
		}
		if (lab->heap[0].t > c->max_time) {
			lab->now = c->max_time;
			r->status = -ETIME;
			break;
		}
		lab->now = lab->heap[0].t;
		while (lab->heap_len && lab->heap[0].t == lab->now) {
			struct lab_ev ev = heap_pop(lab);
			struct lab_node *nd = &lab->nodes[ev.node];

			r->events_processed++;
			if (ev.kind == LAB_EV_FAULT) {
				ret = fault_apply(lab, &c->faults[ev.slot]);
				if (ret)
					goto out;
			} else if (ev.kind == LAB_EV_ARRIVE && nd->dead) {
				r->cut_frames++;
				slot_put(lab, ev.slot);
			} else if (ev.kind == LAB_EV_ARRIVE) {
				struct lab_slot *s = &lab->slots[ev.slot];
				int rx = dnp_engine_rx(nd->e, ev.dir, s->data, s->len, lab->now);

				if (rx == -EILSEQ)
					r->rx_rejected_crc++;
				else if (rx < 0)
					r->rx_rejected_other++;
				slot_put(lab, ev.slot);
			} else if (nd->next_wake == ev.t) {
				nd->next_wake = UINT64_MAX;
			}
			touch(lab, ev.node);
		}
	}
out:
	if (ret)
		r->status = ret;
	finish(lab);
	return r->status;
}

/* ------------------------------------------------------------ results */

const struct dnp_lab_result *dnp_lab_result(const struct dnp_lab *lab)
{
	return &lab->res;
}

uint32_t dnp_lab_nodes(const struct dnp_lab *lab)
{
	return lab->n;
}

uint32_t dnp_lab_messages(const struct dnp_lab *lab)
{
	return lab->nmsgs;
}

struct dnp_engine *dnp_lab_engine(struct dnp_lab *lab, uint32_t node)
{
	return node < lab->n ? lab->nodes[node].e : NULL;
}

uint64_t dnp_lab_now(const struct dnp_lab *lab)
{
	return lab->now;
}

void dnp_lab_link_info(const struct dnp_lab *lab, uint32_t node, unsigned dir,
		       struct dnp_lab_link_info *out)
{
	memset(out, 0, sizeof(*out));
	out->broken_at = UINT64_MAX;
	if (node < lab->n && dir < DNP_NDIRS)
		*out = lab->nodes[node].link[dir].info;
}

int dnp_lab_msg_info(const struct dnp_lab *lab, uint32_t i, struct dnp_lab_msg_info *out)
{
	const struct lab_msg *m;

	if (i >= lab->nmsgs)
		return -ERANGE;
	m = &lab->msgs[i];
	out->src = m->src;
	out->dst = m->dst;
	out->size = m->size;
	out->status = m->status;
	out->completions = m->ncompl;
	out->rx_events = m->nrx;
	out->written = m->written;
	out->submitted = m->t_submit;
	out->completed = m->t_done;
	return 0;
}

static const char *const dir_names[DNP_NDIRS] = { "X+", "X-", "Y+", "Y-", "Z+", "Z-" };

static const char *status_name(int status)
{
	switch (status) {
	case 0:
		return "OK";
	case -EIO:
		return "VERIFICATION FAILED";
	case -EDEADLK:
		return "DEADLOCK (no progress)";
	case -ETIME:
		return "TIMEOUT (max-time reached)";
	default:
		return "ERROR";
	}
}

struct lab_counter {
	const char *name;
	uint64_t v;
};

static unsigned counters(const struct dnp_lab *lab, struct lab_counter *k)
{
	const struct dnp_lab_result *r = &lab->res;
	unsigned n = 0;

#define K(nm, val) (k[n].name = (nm), k[n++].v = (val))
	K("cmds_accepted", r->engine.cmds_accepted);
	K("cmds_ok", r->engine.cmds_ok);
	K("cmds_failed", r->engine.cmds_failed);
	K("pkts_injected", r->engine.pkts_injected);
	K("pkts_forwarded", r->engine.pkts_forwarded);
	K("pkts_delivered", r->engine.pkts_delivered);
	K("bytes_delivered", r->engine.bytes_delivered);
	K("hops_total", r->engine.hops_total);
	K("events", r->engine.events);
	K("tx_frames", r->link.tx_frames);
	K("tx_words", r->link.tx_words);
	K("tx_retx_frames", r->link.tx_retx_frames);
	K("retx_rounds", r->link.retx_rounds);
	K("tx_credits", r->link.tx_credits);
	K("rx_frames", r->link.rx_frames);
	K("rx_credits", r->link.rx_credits);
	K("rx_dup", r->link.rx_dup);
	K("rx_out_of_order", r->link.rx_out_of_order);
	K("rx_overflow", r->link.rx_overflow);
	K("credit_stalls", r->link.credit_stalls);
	K("rx_crc_errors", r->engine.rx_crc_errors);
	K("rx_malformed", r->engine.rx_malformed);
	K("rx_misrouted", r->engine.rx_misrouted);
	K("rx_wrong_link", r->engine.rx_wrong_link);
	K("deliver_errors", r->engine.deliver_errors);
	K("inj_lost", r->lost);
	K("inj_lost_seq", r->lost_seq);
	K("inj_corrupted", r->corrupted);
	K("inj_corrupted_seq", r->corrupted_seq);
	K("inj_duplicated", r->duplicated);
	K("inj_duplicated_seq_intact", r->duplicated_seq);
	K("inj_reordered", r->reordered);
	K("inj_silenced", r->silenced);
	K("inj_undelivered_seq", r->undelivered_seq);
	K("rx_rejected_crc", r->rx_rejected_crc);
	K("rx_rejected_other", r->rx_rejected_other);
	K("faults_applied", r->faults_applied);
	K("fault_lost_frames", r->cut_frames);
	K("retries", r->retries);
	K("detoured", r->detoured);
	K("excused", r->excused);
	K("route_changes", r->engine.route_changes);
	K("last_route_change", r->last_route_change);
#undef K
	return n;
}

void dnp_lab_report(const struct dnp_lab *lab, FILE *f, bool csv)
{
	const struct dnp_lab_conf *c = &lab->conf;
	const struct dnp_lab_result *r = &lab->res;
	struct lab_counter k[64];
	unsigned nk = counters(lab, k);
	uint64_t t = r->time ? r->time : 1;
	double umin = 1e9, umax = 0, usum = 0;
	unsigned nlinks = 0;
	uint32_t bnode = 0;
	unsigned bdir = 0;
	uint64_t bbusy = 0;

	for (uint32_t i = 0; i < lab->n; i++) {
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			const struct dnp_lab_link_info *li = &lab->nodes[i].link[d].info;
			double u = (double)li->busy / (double)t;

			if (!li->present)
				continue;
			nlinks++;
			usum += u;
			umin = u < umin ? u : umin;
			umax = u > umax ? u : umax;
			if (li->busy > bbusy) {
				bbusy = li->busy;
				bnode = i;
				bdir = d;
			}
		}
	}
	if (!nlinks)
		umin = 0;

	if (csv) {
		fprintf(f, "# summary\nkey,value\n");
		fprintf(f, "status,%s\n", status_name(r->status));
		fprintf(f, "torus,%ux%ux%u\n", c->torus.dim[0], c->torus.dim[1], c->torus.dim[2]);
		fprintf(f, "pattern,%s\n", dnp_lab_pattern_name(c->pattern));
		fprintf(f, "seed,%" PRIu64 "\n", c->seed);
		fprintf(f, "time,%" PRIu64 "\n", r->time);
		fprintf(f, "events_processed,%" PRIu64 "\n", r->events_processed);
		fprintf(f, "messages,%" PRIu64 "\nbytes,%" PRIu64 "\n", r->messages, r->bytes);
		fprintf(f, "completions_ok,%" PRIu64 "\ncompletions_err,%" PRIu64 "\n",
			r->completions_ok, r->completions_err);
		fprintf(f, "err_nolink,%" PRIu64 "\nerr_other,%" PRIu64 "\n", r->err_nolink,
			r->err_other);
		fprintf(f, "rx_events,%" PRIu64 "\nverify_errors,%" PRIu64 "\n", r->rx_events,
			r->verify_errors);
		fprintf(f, "byte_mismatches,%" PRIu64 "\nbad_hops,%" PRIu64 "\n",
			r->byte_mismatches, r->bad_hops);
		fprintf(f, "pending_at_end,%" PRIu64 "\n", r->pending_at_end);
		fprintf(f, "\n# latency\nmin,median,p99,max,mean\n");
		fprintf(f, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.1f\n", r->lat_min,
			r->lat_median, r->lat_p99, r->lat_max, r->lat_mean);
		fprintf(f, "\n# counters\nname,value\n");
		for (unsigned i = 0; i < nk; i++)
			fprintf(f, "%s,%" PRIu64 "\n", k[i].name, k[i].v);
		fprintf(f, "\n# links\nnode,x,y,z,dir,busy,utilisation,frames,bytes,lost,corrupted,"
			   "duplicated,reordered,silenced,broken_at\n");
		for (uint32_t i = 0; i < lab->n; i++) {
			const struct lab_node *nd = &lab->nodes[i];

			for (unsigned d = 0; d < DNP_NDIRS; d++) {
				const struct dnp_lab_link_info *li = &nd->link[d].info;

				if (!li->present)
					continue;
				fprintf(f,
					"%u,%u,%u,%u,%s,%" PRIu64 ",%.4f,%" PRIu64 ",%" PRIu64
					",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
					",%" PRId64 "\n",
					i, nd->c.x, nd->c.y, nd->c.z, dir_names[d], li->busy,
					(double)li->busy / (double)t, li->frames, li->bytes,
					li->lost, li->corrupted, li->duplicated, li->reordered,
					li->silenced,
					li->broken_at == UINT64_MAX ? (int64_t)-1 :
								      (int64_t)li->broken_at);
			}
		}
		return;
	}

	fprintf(f,
		"dnp-lab: torus %ux%ux%u (%u nodes), pattern %s, %" PRIu64 " messages, %" PRIu64
		" bytes, seed %" PRIu64 "\n",
		c->torus.dim[0], c->torus.dim[1], c->torus.dim[2], lab->n,
		dnp_lab_pattern_name(c->pattern), r->messages, r->bytes, c->seed);
	fprintf(f, "result:    %s at time %" PRIu64 " (%" PRIu64 " events simulated)\n",
		status_name(r->status), r->time, r->events_processed);
	if (r->status == -EDEADLK)
		fprintf(f,
			"           no packet delivered and no command completed since %" PRIu64
			" (stall limit %" PRIu64 "), %" PRIu64 " still pending\n",
			lab->last_progress, c->stall_limit, r->pending_at_end);
	fprintf(f,
		"commands:  %" PRIu64 " ok, %" PRIu64 " failed (%" PRIu64 " -ENOLINK, %" PRIu64
		" other), %" PRIu64 " RX events\n",
		r->completions_ok, r->completions_err, r->err_nolink, r->err_other, r->rx_events);
	fprintf(f,
		"verify:    %" PRIu64 " errors (%" PRIu64 " bytes wrong, %" PRIu64
		" bad hop counts, %" PRIu64 " double completions, %" PRIu64
		" unknown events), pending at end %" PRIu64 "\n",
		r->verify_errors, r->byte_mismatches, r->bad_hops, r->double_completions,
		r->unknown_events, r->pending_at_end);
	fprintf(f,
		"latency:   submit->completion min %" PRIu64 " median %" PRIu64 " p99 %" PRIu64
		" max %" PRIu64 " mean %.1f (time units)\n",
		r->lat_min, r->lat_median, r->lat_p99, r->lat_max, r->lat_mean);
	fprintf(f, "links:     %u directed, utilisation min %.1f%% mean %.1f%% max %.1f%%", nlinks,
		100 * umin, nlinks ? 100 * usum / nlinks : 0.0, 100 * umax);
	if (nlinks)
		fprintf(f, " (busiest: node %u (%u,%u,%u) %s)", bnode, lab->nodes[bnode].c.x,
			lab->nodes[bnode].c.y, lab->nodes[bnode].c.z, dir_names[bdir]);
	fprintf(f, "\n");
	if (lab->n <= 16) {
		for (uint32_t i = 0; i < lab->n; i++) {
			const struct lab_node *nd = &lab->nodes[i];

			fprintf(f, "           node %u (%u,%u,%u):", i, nd->c.x, nd->c.y, nd->c.z);
			for (unsigned d = 0; d < DNP_NDIRS; d++) {
				const struct dnp_lab_link_info *li = &nd->link[d].info;

				if (li->present)
					fprintf(f, " %s %5.1f%%", dir_names[d],
						100.0 * (double)li->busy / (double)t);
			}
			fprintf(f, "\n");
		}
	}
	for (uint32_t i = 0; i < lab->n; i++) {
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			const struct dnp_lab_link_info *li = &lab->nodes[i].link[d].info;

			if (li->present && li->broken_at != UINT64_MAX)
				fprintf(f, "           link node %u %s BROKEN at %" PRIu64 "\n", i,
					dir_names[d], li->broken_at);
		}
	}
	fprintf(f, "counters:\n");
	for (unsigned i = 0; i < nk; i++)
		fprintf(f, "  %-26s %" PRIu64 "%s", k[i].name, k[i].v, i % 3 == 2 ? "\n" : "");
	if (nk % 3)
		fprintf(f, "\n");
}
