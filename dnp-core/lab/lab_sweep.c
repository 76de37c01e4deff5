/* SPDX-License-Identifier: MIT */
/*
 * lab_sweep.c — `dnp-lab sweep`: the standard synthetic traffic patterns
 * (uniform, transpose, tornado, bit-complement, nearest neighbour, hot spot)
 * on the real engine in the lab's virtual time, under an open-loop ladder of
 * offered loads, beside each pattern's channel-load ideal (docs/lab.md,
 * "Sweep").
 *
 * Units: time is the lab's time unit (one cycle of the modelled link);
 * throughput is in words (16-byte flits of the whole data frame, header and
 * CRC included) per node per time unit, averaged over every node of the
 * torus. A link carries at most conf.bw words per unit.
 *
 * One point: every sending node releases one single-packet PUT per time unit
 * with probability q = offered / frame_words (Bernoulli), from 0 to
 * warm + measure; the lab submits each message at its release time or later
 * (the source queue is unbounded) and runs until every message is delivered.
 * Accepted throughput counts the data-frame words that arrived inside the
 * measurement window [warm, warm + measure); latency is release to arrival
 * (source queueing included) of the messages released inside it.
 *
 * The configuration dimension (struct sweep_config) is what one more
 * protocol option becomes: a name, how it sets up the lab, and how its
 * routing loads the channels: dor, adaptive (minimal adaptive, its ideal
 * from the load spread evenly over the productive directions at every hop),
 * each of them with congestion management (+ecn), and valiant (two DOR
 * phases through a uniformly chosen intermediate node), chosen with --configs.
 *
 * --hot-rate R gives the hot spot's senders their own offered load (R words
 * per unit each, 0: silent) apart from the ladder, which then offers, and
 * whose ideal counts, the uniform background of the other nodes only:
 * accepted_bg is the background's accepted throughput, the figure congestion
 * management protects (docs/lab.md, "Sweep").
 */
#include "lab_internal.h"

#include "arb.h"

#include <assert.h>
#include <getopt.h>
#include <sys/stat.h>

#include "route.h"

enum sweep_pattern {
	SW_UNIFORM = 0,
	SW_TRANSPOSE,
	SW_TORNADO,
	SW_BITCOMP,
	SW_NEIGHBOUR,
	SW_HOTSPOT,
	SW_NPAT
};

static const char *const sw_names[SW_NPAT] = { "uniform", "transpose", "tornado",
					       "bitcomp", "neighbour", "hotspot" };

#define SW_MAX_HOT 8u     /* senders of the hot spot */
#define SW_MAX_LOADS 24u  /* points of the ladder */
#define SW_CMPL_WORDS 4u  /* a CMPL frame reporting one message */
#define SW_SATURATED 0.90 /* accepted below this x offered: past saturation */
#define SW_PLOT_CMD "gnuplot"
#define SW_MAX_CONFIGS 12u

struct sweep;

/*
 * A configuration: a column of the CSV. apply() sets the lab up for it;
 * loads() adds, for every directed channel, the words per time unit it
 * carries when every sender injects one word per unit of the pattern (the
 * routing's channel loads). A new routing mode adds one entry.
 */
struct sweep_config {
	const char *name;
	const char *routing;
	const char *congestion;
	const char *classes; /* "off", or "strict": the hot spot's background in the top class */
	int (*apply)(const struct sweep *s, struct dnp_lab_conf *c);
	int (*loads)(const struct sweep *s, enum sweep_pattern p, double *load, double *cmpl);
};

struct sweep {
	struct dnp_torus torus;
	uint32_t n;
	unsigned size; /* payload bytes of a message (one packet) */
	unsigned fw;   /* its frame in words */
	unsigned vcs;
	uint32_t bw;
	uint8_t credit_model; /* enum dnp_credit_model: the lab's default is the hardware's */
	uint32_t hotspot, hot[SW_MAX_HOT];
	unsigned nhot;
	uint64_t warm, measure, seed;
	double loads[SW_MAX_LOADS]; /* offered load ladder, fractions of the ideal */
	unsigned nloads;
	bool pat[SW_NPAT];
	bool cfg[SW_MAX_CONFIGS]; /* configurations chosen (--configs) */
	double hot_rate;          /* words/unit of each hot-spot sender; < 0: the ladder's */
	uint32_t cg_window, cg_threshold; /* +ecn configurations (0: the engine's defaults) */
	uint32_t rx_bufs;                 /* engine.h rx_bufs (0: the engine's default) */
	struct dnp_router *arouters;      /* adaptive routers, for the adaptive channel loads */
	double *nw;                       /* scratch of the adaptive loads: weight per node */
	uint32_t *nq;                     /* and the nodes in visiting order */
	bool plot, quick;
	bool classes; /* --classes: each chosen configuration also as +tc */
	const char *out;
	struct dnp_router *routers; /* one per node, for the channel loads */
	uint32_t *dst;              /* scratch: destinations of one source */
	double *w;                  /* and their probabilities */
	FILE *csv;
	unsigned failures;
};

struct sweep_row {
	double frac, offered, offered_meas, accepted, ideal, ideal_cmpl;
	double accepted_bg; /* of the messages neither from a hot-spot sender nor to the hot spot */
	double lat_mean;
	uint64_t lat_p99, lat_bg_p99;
	uint64_t cg_marked, cg_held; /* congestion management's counters, every node's */
	uint64_t messages, delivered, end;
	int status;
};

/* ------------------------------------------------------------- patterns */

static bool sw_is_hot(const struct sweep *s, uint32_t id)
{
	for (unsigned i = 0; i < s->nhot; i++)
		if (s->hot[i] == id)
			return true;
	return false;
}

/* The node a permutation pattern maps src to (may be src itself). */
static uint32_t sw_permute(const struct sweep *s, enum sweep_pattern p, uint32_t src)
{
	const struct dnp_torus *t = &s->torus;
	struct dnp_coord c = dnp_torus_coord(t, src), d = c;
	unsigned v[3] = { c.x, c.y, c.z }, o[3];

	for (int i = 0; i < 3; i++) {
		unsigned k = t->dim[i];

		switch (p) {
		case SW_TRANSPOSE: /* (x, y, z) -> (y, z, x), each modulo its dimension */
			o[i] = v[(i + 1) % 3] % k;
			break;
		case SW_TORNADO: /* ceil(k/2) - 1 ahead in every dimension */
			o[i] = (v[i] + (k + 1) / 2 - 1) % k;
			break;
		default: /* SW_BITCOMP: k - 1 - x, the bit complement when k is a power of 2 */
			o[i] = k - 1 - v[i];
			break;
		}
	}
	d.x = (uint8_t)o[0];
	d.y = (uint8_t)o[1];
	d.z = (uint8_t)o[2];
	return dnp_torus_id(t, d);
}

/* Distinct neighbours of src (a dimension of size 2 has one). */
static unsigned sw_neighbours(const struct sweep *s, uint32_t src, uint32_t *out)
{
	struct dnp_coord c = dnp_torus_coord(&s->torus, src);
	unsigned n = 0;

	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		uint32_t id = dnp_torus_id(&s->torus, dnp_torus_neighbour(&s->torus, c, d));
		bool dup = id == src;

		for (unsigned i = 0; i < n; i++)
			dup |= out[i] == id;
		if (!dup)
			out[n++] = id;
	}
	return n;
}

/*
 * The destinations of src under pattern p with their probabilities, into
 * s->dst and s->w; returns how many (0: src sends nothing).
 */
static uint32_t sw_dests(struct sweep *s, enum sweep_pattern p, uint32_t src)
{
	uint32_t n = 0;

	if (p == SW_HOTSPOT && sw_is_hot(s, src)) {
		if (s->hot_rate >= 0)
			return 0; /* their own rate: the ladder and the ideal are the background's */
		s->dst[0] = s->hotspot;
		s->w[0] = 1.0;
		return 1;
	}
	switch (p) {
	case SW_UNIFORM:
	case SW_HOTSPOT: /* the background: uniform over the other nodes */
		for (uint32_t d = 0; d < s->n; d++)
			if (d != src)
				s->dst[n++] = d;
		break;
	case SW_NEIGHBOUR:
		n = sw_neighbours(s, src, s->dst);
		break;
	default: {
		uint32_t d = sw_permute(s, p, src);

		if (d != src)
			s->dst[n++] = d;
		break;
	}
	}
	for (uint32_t i = 0; i < n; i++)
		s->w[i] = 1.0 / n;
	return n;
}

/* One random destination of src (false: src sends nothing). */
static bool sw_pick(struct sweep *s, enum sweep_pattern p, uint32_t src, struct lab_rng *rng,
		    uint32_t *dst)
{
	uint32_t nb[DNP_NDIRS], n;

	if (p == SW_HOTSPOT && sw_is_hot(s, src)) {
		*dst = s->hotspot;
		return true;
	}
	switch (p) {
	case SW_UNIFORM:
	case SW_HOTSPOT:
		if (s->n < 2)
			return false;
		n = (uint32_t)lab_rng_below(rng, s->n - 1);
		*dst = n >= src ? n + 1 : n;
		return true;
	case SW_NEIGHBOUR:
		n = sw_neighbours(s, src, nb);
		if (!n)
			return false;
		*dst = nb[lab_rng_below(rng, n)];
		return true;
	default:
		*dst = sw_permute(s, p, src);
		return *dst != src;
	}
}

/* The hot spot: node 0, and up to SW_MAX_HOT distinct random senders. */
static void sw_choose_hot(struct sweep *s)
{
	struct lab_rng rng;

	lab_rng_seed(&rng, s->seed ^ 0x407u);
	s->hotspot = 0;
	s->nhot = 0;
	while (s->nhot < SW_MAX_HOT && s->nhot + 1 < s->n) {
		uint32_t id = (uint32_t)lab_rng_below(&rng, s->n);

		if (id != s->hotspot && !sw_is_hot(s, id))
			s->hot[s->nhot++] = id;
	}
}

/* ------------------------------------------------------- channel loads */

/* Adds w to every channel of the path src -> dst under the engine's routing. */
static int sw_walk(const struct sweep *s, uint32_t src, uint32_t dst, double w, double *load)
{
	struct dnp_coord cur = dnp_torus_coord(&s->torus, src);
	struct dnp_coord to = dnp_torus_coord(&s->torus, dst);
	unsigned in_dir = DNP_DIR_LOCAL, in_vc = 0;

	for (unsigned hops = 0; hops <= 3u * DNP_TORUS_MAX_DIM; hops++) {
		uint32_t id = dnp_torus_id(&s->torus, cur);
		struct dnp_hop h;
		int ret = dnp_route_next(&s->routers[id], to, in_dir, in_vc, &h);

		if (ret)
			return ret;
		if (h.dir == DNP_DIR_LOCAL)
			return 0;
		load[(size_t)id * DNP_NDIRS + h.dir] += w;
		cur = dnp_torus_neighbour(&s->torus, cur, (enum dnp_dir)h.dir);
		in_dir = dnp_torus_opposite((enum dnp_dir)h.dir);
		in_vc = h.vc;
	}
	return -ELOOP;
}

/* How a message's data words load the channels: sw_walk (DOR) or sw_spread (adaptive). */
typedef int (*sw_fwd_fn)(const struct sweep *s, uint32_t src, uint32_t dst, double w, double *load);

/*
 * Channel loads of every message of pattern p: load[] per data word injected
 * per unit, routed by fwd; cmpl[] adds the CMPL frame that answers every
 * message on the way back (SW_CMPL_WORDS per message, always DOR: reports
 * take no adaptive hop).
 */
static int sw_loads(const struct sweep *s, enum sweep_pattern p, sw_fwd_fn fwd, double *load,
		    double *cmpl)
{
	struct sweep *m = (struct sweep *)s; /* scratch arrays only */

	for (uint32_t src = 0; src < s->n; src++) {
		uint32_t nd = sw_dests(m, p, src);

		for (uint32_t i = 0; i < nd; i++) {
			int ret = fwd(s, src, s->dst[i], s->w[i], load);

			if (!ret)
				ret = sw_walk(s, s->dst[i], src, s->w[i] * SW_CMPL_WORDS / s->fw,
					      cmpl);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* Channel loads of the routers' own route (dimension order). */
static int sw_loads_route(const struct sweep *s, enum sweep_pattern p, double *load, double *cmpl)
{
	return sw_loads(s, p, sw_walk, load, cmpl);
}

/*
 * Adds w to the channels of src -> dst under minimal adaptive routing, taken
 * as spreading its load evenly: at every node the weight that reached it is
 * split in equal parts over the productive directions (dnp_route_adaptive),
 * so every minimal path carries its share. Nodes are visited in order of
 * their distance from src (each hop is one nearer dst), so a node's weight
 * is whole before it is split.
 */
static int sw_spread(const struct sweep *s, uint32_t src, uint32_t dst, double w, double *load)
{
	struct dnp_coord to = dnp_torus_coord(&s->torus, dst);
	uint32_t head = 0, tail = 0;

	s->nw[src] = w;
	s->nq[tail++] = src;
	while (head < tail) {
		uint32_t id = s->nq[head++];
		double x = s->nw[id];
		uint8_t dirs[DNP_ROUTE_MAX_PRODUCTIVE];
		unsigned nd;

		s->nw[id] = 0;
		if (id == dst)
			continue;
		nd = dnp_route_adaptive(&s->arouters[id], to, dirs);
		if (!nd)
			return -EHOSTUNREACH;
		for (unsigned i = 0; i < nd; i++) {
			struct dnp_coord c = dnp_torus_coord(&s->torus, id);
			uint32_t nb =
				dnp_torus_id(&s->torus, dnp_torus_neighbour(&s->torus, c, dirs[i]));

			load[(size_t)id * DNP_NDIRS + dirs[i]] += x / nd;
			if (s->nw[nb] == 0) {
				if (tail == s->n)
					return -ELOOP;
				s->nq[tail++] = nb;
			}
			s->nw[nb] += x / nd;
		}
	}
	return 0;
}

/* Channel loads of minimal adaptive routing (one-packet messages; the CMPL frames keep to DOR). */
static int sw_loads_adaptive(const struct sweep *s, enum sweep_pattern p, double *load,
			     double *cmpl)
{
	return sw_loads(s, p, sw_spread, load, cmpl);
}

/*
 * Channel loads of Valiant routing (route.h, dnp_route_valiant): every
 * message goes to an intermediate node uniform over the torus (rings of 16
 * or fewer), by DOR, then by DOR from it to its destination. With a uniform
 * intermediate the first phase's load depends only on the source and the
 * second's only on the destination, so each is a sweep over all nodes: a
 * source's whole weight, a destination's whole weight, spread evenly over
 * the N intermediates (a node that is the source or the destination itself
 * adds the direct route, as the engine sends it). The CMPL frames keep to DOR.
 * Errors: -ERANGE a ring longer than 16.
 */
static int sw_loads_valiant(const struct sweep *s, enum sweep_pattern p, double *load, double *cmpl)
{
	struct sweep *m = (struct sweep *)s; /* scratch arrays only */
	double *in = s->nw;                  /* the weight each node receives */
	int ret = 0;

	for (unsigned k = 0; k < 3; k++)
		if (s->torus.dim[k] > 16)
			return -ERANGE;
	memset(in, 0, s->n * sizeof(*in));
	for (uint32_t src = 0; src < s->n && !ret; src++) {
		uint32_t nd = sw_dests(m, p, src);
		double out = 0;

		for (uint32_t i = 0; i < nd && !ret; i++) {
			out += s->w[i];
			in[s->dst[i]] += s->w[i];
			ret = sw_walk(s, s->dst[i], src, s->w[i] * SW_CMPL_WORDS / s->fw, cmpl);
		}
		for (uint32_t v = 0; v < s->n && out > 0 && !ret; v++)
			ret = sw_walk(s, src, v, out / s->n, load);
	}
	for (uint32_t dst = 0; dst < s->n && !ret; dst++)
		for (uint32_t v = 0; v < s->n && in[dst] > 0 && !ret; v++)
			ret = sw_walk(s, v, dst, in[dst] / s->n, load);
	memset(in, 0, s->n * sizeof(*in));
	return ret;
}

static int sw_apply_dor(const struct sweep *s, struct dnp_lab_conf *c)
{
	(void)s;
	c->vc_mode = DNP_VC_DATELINE;
	return 0;
}

/* Adaptive: VCs 0/1 the escape, 2 and up adaptive; with --vcs 2 it takes a third. */
static int sw_apply_adaptive(const struct sweep *s, struct dnp_lab_conf *c)
{
	(void)s;
	c->vc_mode = DNP_VC_DATELINE;
	c->routing = DNP_ROUTING_ADAPTIVE;
	if (c->link.nvc < DNP_ROUTE_ADAPT_MIN_VCS)
		c->link.nvc = DNP_ROUTE_ADAPT_MIN_VCS;
	return 0;
}

/* Valiant: phase 1 on VCs 0/1, phase 2 on VCs 2/3; it always takes 4 VCs. */
static int sw_apply_valiant(const struct sweep *s, struct dnp_lab_conf *c)
{
	(void)s;
	c->vc_mode = DNP_VC_DATELINE;
	c->routing = DNP_ROUTING_VALIANT;
	c->link.nvc = DNP_ROUTE_VALIANT_VCS;
	return 0;
}

static int sw_apply_dor_ecn(const struct sweep *s, struct dnp_lab_conf *c)
{
	c->congestion = DNP_CONGESTION_ECN;
	c->cg_window = s->cg_window;
	c->cg_threshold = s->cg_threshold;
	return sw_apply_dor(s, c);
}

static int sw_apply_adaptive_ecn(const struct sweep *s, struct dnp_lab_conf *c)
{
	c->congestion = DNP_CONGESTION_ECN;
	c->cg_window = s->cg_window;
	c->cg_threshold = s->cg_threshold;
	return sw_apply_adaptive(s, c);
}

/*
 * +tc: the same with classes (strict arbitration); in the hot-spot pattern
 * the background goes in the top class and the hot senders in class 0, so
 * the pair shows what classes do for the traffic they protect; in the other
 * patterns every message is of class 0 and the pair shows what arbitration
 * costs.
 */
#define SW_APPLY_TC(name, base)                                        \
	static int name(const struct sweep *s, struct dnp_lab_conf *c) \
	{                                                              \
		c->arbitration = DNP_ARB_STRICT;                       \
		return base(s, c);                                     \
	}
SW_APPLY_TC(sw_apply_dor_tc, sw_apply_dor)
SW_APPLY_TC(sw_apply_adaptive_tc, sw_apply_adaptive)
SW_APPLY_TC(sw_apply_dor_ecn_tc, sw_apply_dor_ecn)
SW_APPLY_TC(sw_apply_adaptive_ecn_tc, sw_apply_adaptive_ecn)
SW_APPLY_TC(sw_apply_valiant_tc, sw_apply_valiant)

/*
 * The configurations, in CSV and plot order; --configs chooses among them;
 * --classes adds the +tc one of each chosen (index + SW_NBASE).
 */
static const struct sweep_config sw_configs[] = {
	{ "dor", "dor", "off", "off", sw_apply_dor, sw_loads_route },
	{ "adaptive", "adaptive", "off", "off", sw_apply_adaptive, sw_loads_adaptive },
	{ "dor+ecn", "dor", "ecn", "off", sw_apply_dor_ecn, sw_loads_route },
	{ "adaptive+ecn", "adaptive", "ecn", "off", sw_apply_adaptive_ecn, sw_loads_adaptive },
	{ "valiant", "valiant", "off", "off", sw_apply_valiant, sw_loads_valiant },
	{ "dor+tc", "dor", "off", "strict", sw_apply_dor_tc, sw_loads_route },
	{ "adaptive+tc", "adaptive", "off", "strict", sw_apply_adaptive_tc, sw_loads_adaptive },
	{ "dor+ecn+tc", "dor", "ecn", "strict", sw_apply_dor_ecn_tc, sw_loads_route },
	{ "adaptive+ecn+tc", "adaptive", "ecn", "strict", sw_apply_adaptive_ecn_tc,
	  sw_loads_adaptive },
	{ "valiant+tc", "valiant", "off", "strict", sw_apply_valiant_tc, sw_loads_valiant },
};
#define SW_NBASE 5u
#define SW_NCONFIGS (sizeof(sw_configs) / sizeof(sw_configs[0]))
static_assert(SW_NCONFIGS <= SW_MAX_CONFIGS, "room for every configuration");

/* Senders of the pattern (nodes with at least one destination). */
static uint32_t sw_senders(struct sweep *s, enum sweep_pattern p)
{
	uint32_t k = 0;

	for (uint32_t src = 0; src < s->n; src++)
		k += sw_dests(s, p, src) > 0;
	return k;
}

/*
 * The ideal throughput (words per node per unit, over all nodes) of pattern
 * p under configuration cf: bw / the most loaded channel's load, scaled by
 * the share of nodes that send. *with_cmpl: the same counting the CMPL
 * frames. Errors: -ENOMEM, a routing error; -EDOM when nothing is sent.
 */
static int sw_ideal(struct sweep *s, const struct sweep_config *cf, enum sweep_pattern p,
		    double *ideal, double *with_cmpl)
{
	size_t nc = (size_t)s->n * DNP_NDIRS;
	double *load = calloc(nc, sizeof(double)), *cm = calloc(nc, sizeof(double));
	double max = 0, maxc = 0;
	uint32_t senders = sw_senders(s, p);
	int ret = -ENOMEM;

	if (load && cm)
		ret = cf->loads(s, p, load, cm);
	for (size_t i = 0; !ret && i < nc; i++) {
		if (load[i] > max)
			max = load[i];
		if (load[i] + cm[i] > maxc)
			maxc = load[i] + cm[i];
	}
	free(load);
	free(cm);
	if (ret)
		return ret;
	if (max <= 0 || !senders)
		return -EDOM;
	*ideal = s->bw / max * senders / s->n;
	*with_cmpl = s->bw / maxc * senders / s->n;
	return 0;
}

/* ------------------------------------------------------------- one point */

struct sw_plan {
	struct dnp_lab_plan_msg *m;
	uint32_t n, cap;
};

static int sw_plan_add(struct sw_plan *pl, uint32_t src, uint32_t dst, unsigned size, uint64_t t)
{
	if (pl->n == pl->cap) {
		uint32_t cap = pl->cap ? pl->cap * 2 : 4096;
		struct dnp_lab_plan_msg *m;

		if (cap <= pl->cap)
			return -E2BIG;
		m = realloc(pl->m, (size_t)cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		pl->m = m;
		pl->cap = cap;
	}
	pl->m[pl->n++] =
		(struct dnp_lab_plan_msg){ .src = src, .dst = dst, .size = size, .release = t };
	return 0;
}

/*
 * Bernoulli releases at q per unit from every sender, in release order
 * (with --hot-rate, the hot spot's senders at their own rate).
 */
static int sw_plan_build(struct sweep *s, enum sweep_pattern p, double q, struct sw_plan *pl)
{
	uint64_t end = s->warm + s->measure;
	uint64_t thr = (uint64_t)(q * 0x1.0p53);
	uint64_t thr_hot = s->hot_rate >= 0 ? (uint64_t)(s->hot_rate / s->fw * 0x1.0p53) : thr;
	struct lab_rng *rng = calloc(s->n, sizeof(*rng));

	if (!rng)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->n; i++)
		lab_rng_seed(&rng[i], s->seed * 0x9e3779b97f4a7c15ull + i * 7919u + p);
	for (uint64_t t = 0; t < end; t++) {
		for (uint32_t src = 0; src < s->n; src++) {
			uint32_t dst;
			int ret;

			bool hot = p == SW_HOTSPOT && sw_is_hot(s, src);

			if (lab_rng_below(&rng[src], 1ull << 53) >= (hot ? thr_hot : thr))
				continue;
			if (!sw_pick(s, p, src, &rng[src], &dst))
				continue;
			ret = sw_plan_add(pl, src, dst, s->size, t);
			if (ret) {
				free(rng);
				return ret;
			}
		}
	}
	free(rng);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Throughput and latency of a finished run, into row. */
static int sw_measure(struct sweep *s, enum sweep_pattern p, struct dnp_lab *lab,
		      struct sweep_row *row)
{
	uint64_t end = s->warm + s->measure, acc = 0, acc_bg = 0, off = 0, sum = 0;
	uint32_t nm = dnp_lab_messages(lab), nl = 0, nb = 0;
	uint64_t *lat = malloc(((size_t)nm + 1) * sizeof(uint64_t));
	uint64_t *lbg = malloc(((size_t)nm + 1) * sizeof(uint64_t));
	double span = (double)s->n * (double)s->measure;

	if (!lat || !lbg) {
		free(lat);
		free(lbg);
		return -ENOMEM;
	}
	row->messages = nm;
	row->delivered = 0;
	for (uint32_t i = 0; i < nm; i++) {
		struct dnp_lab_msg_info mi;

		if (dnp_lab_msg_info(lab, i, &mi))
			continue;
		if (mi.received != UINT64_MAX && mi.rx_events >= 1 && mi.status == 0)
			row->delivered++;
		/* the background: what neither comes from a hot sender nor goes to the hot spot */
		bool bg = !(p == SW_HOTSPOT && (sw_is_hot(s, mi.src) || mi.dst == s->hotspot));

		if (mi.received != UINT64_MAX && mi.received >= s->warm && mi.received < end) {
			acc += s->fw;
			acc_bg += bg ? s->fw : 0;
		}
		if (mi.released < s->warm || mi.released >= end)
			continue;
		off += s->fw;
		if (mi.received != UINT64_MAX) {
			lat[nl++] = mi.received - mi.released;
			sum += mi.received - mi.released;
			if (bg)
				lbg[nb++] = mi.received - mi.released;
		}
	}
	row->accepted = acc / span;
	row->accepted_bg = acc_bg / span;
	row->offered_meas = off / span;
	row->lat_mean = nl ? (double)sum / nl : 0;
	qsort(lat, nl, sizeof(uint64_t), cmp_u64);
	row->lat_p99 = nl ? lat[(nl - 1) * 99 / 100] : 0;
	qsort(lbg, nb, sizeof(uint64_t), cmp_u64);
	row->lat_bg_p99 = nb ? lbg[(nb - 1) * 99 / 100] : 0;
	row->cg_marked = dnp_lab_result(lab)->engine.cg_marked;
	row->cg_held = dnp_lab_result(lab)->engine.cg_held;
	free(lat);
	free(lbg);
	return 0;
}

/* The lab configuration shared by every point (the lab's hardware-like link). */
static void sw_lab_conf(const struct sweep *s, struct dnp_lab_conf *c)
{
	dnp_lab_conf_default(c);
	c->torus = s->torus;
	c->bw = s->bw;
	c->seed = s->seed;
	c->link.nvc = (uint8_t)s->vcs;
	c->vc_mode = DNP_VC_DATELINE;
	c->link.credit_model = s->credit_model;
	c->rx_bufs = s->rx_bufs;
	/* a run ends when all is delivered; past saturation the backlog drains
	 * slower than it came, so allow it many windows */
	c->max_time = 40 * (s->warm + s->measure) + 1000000;
}

/* Runs one point: pattern p, configuration cf, offered load row->offered. */
static int sw_point(struct sweep *s, const struct sweep_config *cf, enum sweep_pattern p,
		    struct sweep_row *row)
{
	struct sw_plan pl = { 0 };
	struct dnp_lab_conf c;
	struct dnp_lab *lab = NULL;
	uint32_t senders = sw_senders(s, p);
	/* offered is over all nodes: a sender offers n / senders times more */
	double q = row->offered * s->n / senders / s->fw;
	int ret;

	if (q > 1.0)
		return -ERANGE; /* more than one packet per unit: use bigger packets */
	ret = sw_plan_build(s, p, q, &pl);
	if (ret)
		goto out;
	sw_lab_conf(s, &c);
	c.plan = pl.m;
	c.nplan = pl.n;
	ret = cf->apply(s, &c);
	for (uint32_t i = 0; c.arbitration && p == SW_HOTSPOT && i < pl.n; i++)
		if (!sw_is_hot(s, pl.m[i].src) && pl.m[i].dst != s->hotspot)
			pl.m[i].tc = DNP_TC_MAX; /* +tc: the background in the top class */
	if (!ret)
		ret = pl.n ? dnp_lab_create(&c, &lab) : -EDOM;
	if (ret)
		goto out;
	row->status = dnp_lab_run(lab);
	row->end = dnp_lab_now(lab);
	if (row->status) { /* the lab's own report says what stuck */
		fprintf(stderr, "dnp-lab sweep: %s at load %.2f failed:\n", sw_names[p], row->frac);
		dnp_lab_report(lab, stderr, false);
	}
	ret = sw_measure(s, p, lab, row);
out:
	dnp_lab_destroy(lab);
	free(pl.m);
	return ret;
}

/* -------------------------------------------------------------- output */

static const char *sw_status(int st)
{
	switch (st) {
	case 0:
		return "ok";
	case -EDEADLK:
		return "deadlock";
	case -ETIME:
		return "timeout";
	case -EIO:
		return "verify";
	default:
		return "error";
	}
}

/*
 * The VCs configuration cf runs with (adaptive takes a third when --vcs is
 * 2; Valiant always runs with 4).
 */
static unsigned sw_vcs(const struct sweep *s, const struct sweep_config *cf)
{
	if (!strcmp(cf->routing, "valiant"))
		return DNP_ROUTE_VALIANT_VCS;
	return !strcmp(cf->routing, "adaptive") && s->vcs < DNP_ROUTE_ADAPT_MIN_VCS ?
		       DNP_ROUTE_ADAPT_MIN_VCS :
		       s->vcs;
}

#define SW_CSV_HEADER                                                                          \
	"config,routing,pattern,torus,payload_bytes,frame_words,load_frac,offered,"            \
	"offered_measured,accepted,ideal,ideal_with_cmpl,lat_mean,lat_p99,messages,delivered," \
	"end_time,status,vcs,congestion,accepted_bg,lat_bg_p99,cg_marked,cg_held,classes\n"

static void sw_row_out(struct sweep *s, const struct sweep_config *cf, enum sweep_pattern p,
		       const struct sweep_row *r)
{
	const struct dnp_torus *t = &s->torus;

	fprintf(s->csv,
		"%s,%s,%s,%ux%ux%u,%u,%u,%.3f,%.5f,%.5f,%.5f,%.5f,%.5f,%.1f,%" PRIu64 ",%" PRIu64
		",%" PRIu64 ",%" PRIu64 ",%s,%u,%s,%.5f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s\n",
		cf->name, cf->routing, sw_names[p], t->dim[0], t->dim[1], t->dim[2], s->size, s->fw,
		r->frac, r->offered, r->offered_meas, r->accepted, r->ideal, r->ideal_cmpl,
		r->lat_mean, r->lat_p99, r->messages, r->delivered, r->end, sw_status(r->status),
		sw_vcs(s, cf), cf->congestion, r->accepted_bg, r->lat_bg_p99, r->cg_marked,
		r->cg_held, cf->classes);
	fflush(s->csv);
	printf("%-5s %-10s load %.2f  offered %.4f  accepted %.4f  (ideal %.4f)  latency mean "
	       "%.0f p99 %" PRIu64 "  %" PRIu64 "/%" PRIu64 " delivered  %s",
	       cf->name, sw_names[p], r->frac, r->offered_meas, r->accepted, r->ideal, r->lat_mean,
	       r->lat_p99, r->delivered, r->messages, sw_status(r->status));
	if (p == SW_HOTSPOT)
		printf("  background %.4f p99 %" PRIu64, r->accepted_bg, r->lat_bg_p99);
	if (r->cg_marked || r->cg_held)
		printf("  marked %" PRIu64 " held %" PRIu64, r->cg_marked, r->cg_held);
	printf("\n");
	fflush(stdout);
}

/*
 * The ladder of one pattern and configuration: points until two in a row
 * are saturated (accepted < SW_SATURATED x offered). *sat: the highest
 * accepted throughput. Counts failed runs in s->failures.
 */
static int sw_ladder(struct sweep *s, const struct sweep_config *cf, enum sweep_pattern p,
		     double *sat, double *ideal)
{
	struct sweep_row r = { 0 };
	unsigned saturated = 0;
	int ret = sw_ideal(s, cf, p, &r.ideal, &r.ideal_cmpl);

	*sat = 0;
	*ideal = r.ideal;
	if (ret)
		return ret;
	for (unsigned i = 0; i < s->nloads && saturated < 2; i++) {
		r.frac = s->loads[i];
		r.offered = s->loads[i] * r.ideal;
		ret = sw_point(s, cf, p, &r);
		if (ret == -EDOM)
			continue; /* nothing released at this load */
		if (ret)
			return ret;
		if (r.status || r.delivered != r.messages)
			s->failures++;
		sw_row_out(s, cf, p, &r);
		if (r.accepted > *sat)
			*sat = r.accepted;
		saturated = r.accepted < SW_SATURATED * r.offered_meas ? saturated + 1 : 0;
	}
	return 0;
}

/* One PNG per pattern (latency against accepted throughput, a line per
 * configuration) and one of accepted against offered for every pattern. */
static void sw_plot(const struct sweep *s)
{
	char cmd[4200];
	FILE *g;

	snprintf(cmd, sizeof(cmd), "cd '%s' && " SW_PLOT_CMD, s->out);
	g = popen(cmd, "w");
	if (!g) {
		fprintf(stderr, "dnp-lab sweep: cannot start %s, no plots\n", SW_PLOT_CMD);
		return;
	}
	fprintf(g, "set datafile separator ','\nset terminal pngcairo size 900,600\n"
		   "set key top left\nset grid\n");
	for (unsigned p = 0; p < SW_NPAT; p++) {
		if (!s->pat[p])
			continue;
		fprintf(g,
			"set output 'sweep-%s.png'\nset title 'lab sweep: %s, %ux%ux%u, %u-word "
			"packets'\nset xlabel 'accepted throughput (words/node/unit)'\n"
			"set ylabel 'latency (units)'\nset logscale y\nplot ",
			sw_names[p], sw_names[p], s->torus.dim[0], s->torus.dim[1], s->torus.dim[2],
			s->fw);
		for (unsigned k = 0, first = 1; k < SW_NCONFIGS; k++) {
			if (!s->cfg[k])
				continue;
			fprintf(g,
				"%s'sweep.csv' using (strcol(1) eq '%s' && strcol(3) eq '%s' ? "
				"$10 : NaN):13 with linespoints title '%s mean', '' using "
				"(strcol(1) eq '%s' && strcol(3) eq '%s' ? $10 : NaN):14 with "
				"linespoints dt 2 title '%s p99'",
				first ? "" : ", ", sw_configs[k].name, sw_names[p],
				sw_configs[k].name, sw_configs[k].name, sw_names[p],
				sw_configs[k].name);
			first = 0;
		}
		fprintf(g, "\nunset logscale y\n");
	}
	fprintf(g, "set output 'sweep-throughput.png'\nset title 'lab sweep: accepted against "
		   "offered'\nset xlabel 'offered (words/node/unit)'\n"
		   "set ylabel 'accepted (words/node/unit)'\nset logscale xy\nplot x title "
		   "'accepted = offered' lc rgb 'gray'");
	for (unsigned k = 0; k < SW_NCONFIGS; k++)
		for (unsigned p = 0; p < SW_NPAT; p++)
			if (s->pat[p] && s->cfg[k])
				fprintf(g,
					", 'sweep.csv' using (strcol(1) eq '%s' && strcol(3) eq "
					"'%s' ? $9 : NaN):10 with linespoints title '%s %s'",
					sw_configs[k].name, sw_names[p], sw_configs[k].name,
					sw_names[p]);
	fprintf(g, "\n");
	if (pclose(g))
		fprintf(stderr, "dnp-lab sweep: %s failed, plots may be missing\n", SW_PLOT_CMD);
}

/* ------------------------------------------------------------- options */

static void sw_usage(FILE *f)
{
	fprintf(f,
		"usage: dnp-lab sweep [options]   synthetic patterns under an offered-load ladder\n"
		"  --quick              4x4x4, short windows, loads 0.4 and 0.8 (the test's run)\n"
		"  --torus XxYxZ        torus (8x8x8; dimensions up to %u)\n"
		"  --patterns LIST      uniform,transpose,tornado,bitcomp,neighbour,hotspot (all)\n"
		"  --configs LIST       dor,adaptive,dor+ecn,adaptive+ecn,valiant (dor,adaptive,\n"
		"                       dor+ecn; --quick: dor); adaptive takes a third VC with\n"
		"                       --vcs 2, valiant always runs with 4 (rings up to 16);\n"
		"                       each also as NAME+tc (strict arbitration)\n"
		"  --classes            every chosen configuration also with classes (+tc): the\n"
		"                       hot spot's background in the top class\n"
		"  --hot-rate R         each hot-spot sender offers R words/unit (0: silent); the\n"
		"                       ladder and its ideal are then the background's alone\n"
		"  --cg-window P --cg-threshold W  +ecn: window ceiling (packets) and marking\n"
		"                       threshold (words); the engine's defaults otherwise\n"
		"  --out DIR            CSV and PNGs go there (results/lab-sweep)\n"
		"  --size BYTES         payload of a message, one packet (256)\n"
		"  --vcs N              virtual channels (2, the hardware's dateline pair)\n"
		"  --bw W               link words per time unit (1)\n"
		"  --credit-model hw|exact  credit interpretation (hw, the lab's; dnp-core/link.h)\n"
		"  --rx-bufs N          buffer credits per input VC (1..254; engine.h rx_bufs)\n"
		"  --loads LIST         offered loads, fractions of the ideal\n"
		"                       (0.1,0.2,...,1.0,1.1,1.2)\n"
		"  --warm T --measure T warm-up and measurement windows (3000, 6000)\n"
		"  --seed S             PRNG seed (1)\n"
		"  --no-plot            CSV only\n"
		"Throughput: words (16-byte flits of the data frame) per node per time unit;\n"
		"latency: time units from release to arrival. docs/lab.md, \"Sweep\".\n",
		DNP_TORUS_MAX_DIM);
}

static int sw_parse_patterns(struct sweep *s, const char *arg)
{
	char buf[256], *save = NULL;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, arg);
	memset(s->pat, 0, sizeof(s->pat));
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned p;

		for (p = 0; p < SW_NPAT && strcmp(tok, sw_names[p]); p++)
			;
		if (p == SW_NPAT)
			return -EINVAL;
		s->pat[p] = true;
	}
	return 0;
}

static int sw_parse_configs(struct sweep *s, const char *arg)
{
	char buf[256], *save = NULL;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, arg);
	memset(s->cfg, 0, sizeof(s->cfg));
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned k;

		for (k = 0; k < SW_NCONFIGS && strcmp(tok, sw_configs[k].name); k++)
			;
		if (k == SW_NCONFIGS)
			return -EINVAL;
		s->cfg[k] = true;
	}
	return 0;
}

static int sw_parse_loads(struct sweep *s, const char *arg)
{
	const char *q = arg;

	s->nloads = 0;
	while (*q) {
		char *end;
		double v = strtod(q, &end);

		if (end == q || !(v > 0) || v > 100 || s->nloads == SW_MAX_LOADS)
			return -EINVAL;
		s->loads[s->nloads++] = v;
		q = end;
		if (*q == ',')
			q++;
		else if (*q)
			return -EINVAL;
	}
	return s->nloads ? 0 : -EINVAL;
}

static int sw_parse_u64(const char *arg, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno || end == arg || *end || arg[0] == '-' || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static void sw_defaults(struct sweep *s)
{
	static const double ladder[] = {
		0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2
	};

	memset(s, 0, sizeof(*s));
	dnp_torus_init(&s->torus, 8, 8, 8);
	s->size = 256;
	s->vcs = 2;
	s->bw = 1;
	s->credit_model = DNP_CREDIT_HW;
	s->warm = 3000;
	s->measure = 6000;
	s->seed = 1;
	s->plot = true;
	s->out = "results/lab-sweep";
	memcpy(s->loads, ladder, sizeof(ladder));
	s->nloads = sizeof(ladder) / sizeof(ladder[0]);
	for (unsigned p = 0; p < SW_NPAT; p++)
		s->pat[p] = true;
	for (unsigned k = 0; k < 3; k++) /* dor, adaptive, dor+ecn */
		s->cfg[k] = true;
	s->hot_rate = -1;
}

/* --quick: small and short, for the test; options after it still apply. */
static void sw_quick(struct sweep *s)
{
	dnp_torus_init(&s->torus, 4, 4, 4);
	s->warm = 250;
	s->measure = 700;
	s->loads[0] = 0.4;
	s->loads[1] = 0.8;
	s->nloads = 2;
	s->quick = true;
	memset(s->cfg, 0, sizeof(s->cfg));
	s->cfg[0] = true; /* dor; --configs after --quick adds others */
}

enum {
	SW_OPT_QUICK = 256,
	SW_OPT_TORUS,
	SW_OPT_PATTERNS,
	SW_OPT_OUT,
	SW_OPT_SIZE,
	SW_OPT_VCS,
	SW_OPT_BW,
	SW_OPT_LOADS,
	SW_OPT_WARM,
	SW_OPT_MEASURE,
	SW_OPT_SEED,
	SW_OPT_NOPLOT,
	SW_OPT_CREDIT,
	SW_OPT_HELP,
	SW_OPT_CONFIGS,
	SW_OPT_HOT_RATE,
	SW_OPT_CG_WINDOW,
	SW_OPT_CG_THRESHOLD,
	SW_OPT_CLASSES,
	SW_OPT_RX_BUFS,
};

static const struct option sw_opts[] = {
	{ "quick", no_argument, NULL, SW_OPT_QUICK },
	{ "torus", required_argument, NULL, SW_OPT_TORUS },
	{ "patterns", required_argument, NULL, SW_OPT_PATTERNS },
	{ "out", required_argument, NULL, SW_OPT_OUT },
	{ "size", required_argument, NULL, SW_OPT_SIZE },
	{ "vcs", required_argument, NULL, SW_OPT_VCS },
	{ "bw", required_argument, NULL, SW_OPT_BW },
	{ "loads", required_argument, NULL, SW_OPT_LOADS },
	{ "warm", required_argument, NULL, SW_OPT_WARM },
	{ "measure", required_argument, NULL, SW_OPT_MEASURE },
	{ "seed", required_argument, NULL, SW_OPT_SEED },
	{ "no-plot", no_argument, NULL, SW_OPT_NOPLOT },
	{ "credit-model", required_argument, NULL, SW_OPT_CREDIT },
	{ "help", no_argument, NULL, SW_OPT_HELP },
	{ "configs", required_argument, NULL, SW_OPT_CONFIGS },
	{ "hot-rate", required_argument, NULL, SW_OPT_HOT_RATE },
	{ "cg-window", required_argument, NULL, SW_OPT_CG_WINDOW },
	{ "cg-threshold", required_argument, NULL, SW_OPT_CG_THRESHOLD },
	{ "classes", no_argument, NULL, SW_OPT_CLASSES },
	{ "rx-bufs", required_argument, NULL, SW_OPT_RX_BUFS },
	{ NULL, 0, NULL, 0 },
};

/* One option: 0, 1 (--help: done), or -EINVAL. */
static int sw_option(struct sweep *s, int o, const char *arg)
{
	uint64_t v;

	switch (o) {
	case SW_OPT_QUICK:
		sw_quick(s);
		return 0;
	case SW_OPT_TORUS:
		return dnp_torus_parse(arg, &s->torus) ? -EINVAL : 0;
	case SW_OPT_PATTERNS:
		return sw_parse_patterns(s, arg);
	case SW_OPT_OUT:
		s->out = arg;
		return strlen(arg) < 4000 ? 0 : -EINVAL;
	case SW_OPT_SIZE:
		if (sw_parse_u64(arg, 1, DNP_MAX_PAYLOAD, &v))
			return -EINVAL;
		s->size = (unsigned)v;
		return 0;
	case SW_OPT_VCS:
		if (sw_parse_u64(arg, 2, DNP_MAX_VC, &v))
			return -EINVAL; /* one VC has no dateline: it may deadlock */
		s->vcs = (unsigned)v;
		return 0;
	case SW_OPT_BW:
		if (sw_parse_u64(arg, 1, 1024, &v))
			return -EINVAL;
		s->bw = (uint32_t)v;
		return 0;
	case SW_OPT_LOADS:
		return sw_parse_loads(s, arg);
	case SW_OPT_WARM:
		return sw_parse_u64(arg, 0, 1ull << 32, &s->warm);
	case SW_OPT_MEASURE:
		return sw_parse_u64(arg, 1, 1ull << 32, &s->measure);
	case SW_OPT_SEED:
		return sw_parse_u64(arg, 0, UINT64_MAX, &s->seed);
	case SW_OPT_NOPLOT:
		s->plot = false;
		return 0;
	case SW_OPT_CREDIT:
		if (strcmp(arg, "hw") && strcmp(arg, "exact"))
			return -EINVAL;
		s->credit_model = strcmp(arg, "hw") ? DNP_CREDIT_EXACT : DNP_CREDIT_HW;
		return 0;
	case SW_OPT_HELP:
		sw_usage(stdout);
		return 1;
	case SW_OPT_CONFIGS:
		return sw_parse_configs(s, arg);
	case SW_OPT_CLASSES:
		s->classes = true;
		return 0;
	case SW_OPT_CG_WINDOW:
		if (sw_parse_u64(arg, 1, 65536, &v))
			return -EINVAL;
		s->cg_window = (uint32_t)v;
		return 0;
	case SW_OPT_CG_THRESHOLD:
		if (sw_parse_u64(arg, 1, 1u << 20, &v))
			return -EINVAL;
		s->cg_threshold = (uint32_t)v;
		return 0;
	case SW_OPT_RX_BUFS:
		if (sw_parse_u64(arg, 1, DNP_BUFS_MAX, &v))
			return -EINVAL;
		s->rx_bufs = (uint32_t)v;
		return 0;
	case SW_OPT_HOT_RATE: {
		char *end;

		s->hot_rate = strtod(arg, &end);
		return end != arg && !*end && s->hot_rate >= 0 && s->hot_rate <= 64 ? 0 : -EINVAL;
	}
	default:
		return -EINVAL;
	}
}

/* mkdir -p: 0 or -errno. */
static int sw_mkdirs(const char *dir)
{
	char p[4096];
	size_t n = strlen(dir);

	if (!n || n >= sizeof(p))
		return -EINVAL;
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0777) && errno != EEXIST)
			return -errno;
		if (i < n)
			p[i] = '/';
	}
	return 0;
}

static int sw_setup(struct sweep *s)
{
	char path[4200];

	s->n = dnp_torus_size(&s->torus);
	s->fw = dnp_pkt_frame_words(s->size);
	s->routers = calloc(s->n, sizeof(*s->routers));
	s->arouters = calloc(s->n, sizeof(*s->arouters));
	s->dst = calloc(s->n, sizeof(*s->dst));
	s->w = calloc(s->n, sizeof(*s->w));
	s->nw = calloc(s->n, sizeof(*s->nw));
	s->nq = calloc(s->n, sizeof(*s->nq));
	if (!s->routers || !s->arouters || !s->dst || !s->w || !s->nw || !s->nq)
		return -ENOMEM;
	if (s->hot_rate > s->fw)
		return -ERANGE; /* more than one packet per unit */
	for (uint32_t i = 0; i < s->n; i++) {
		int ret = dnp_route_init(&s->routers[i], &s->torus, dnp_torus_coord(&s->torus, i),
					 DNP_VC_DATELINE);

		if (!ret)
			ret = dnp_route_set_vcs(&s->routers[i], s->vcs);
		if (!ret) /* the adaptive loads' routers: 3+ VCs, as sw_apply_adaptive */
			ret = dnp_route_init(&s->arouters[i], &s->torus,
					     dnp_torus_coord(&s->torus, i), DNP_VC_DATELINE);
		if (!ret)
			ret = dnp_route_set_vcs(&s->arouters[i], s->vcs < DNP_ROUTE_ADAPT_MIN_VCS ?
									 DNP_ROUTE_ADAPT_MIN_VCS :
									 s->vcs);
		if (!ret)
			ret = dnp_route_set_routing(&s->arouters[i], DNP_ROUTING_ADAPTIVE);
		if (ret)
			return ret;
	}
	sw_choose_hot(s);
	if (sw_mkdirs(s->out))
		return -errno ? -errno : -EIO;
	snprintf(path, sizeof(path), "%s/sweep.csv", s->out);
	s->csv = fopen(path, "w");
	if (!s->csv)
		return -errno;
	fputs(SW_CSV_HEADER, s->csv);
	return 0;
}

static void sw_teardown(struct sweep *s)
{
	if (s->csv)
		fclose(s->csv);
	free(s->routers);
	free(s->arouters);
	free(s->dst);
	free(s->w);
	free(s->nw);
	free(s->nq);
}

/* All configurations and patterns, then the summary. */
static int sw_all(struct sweep *s)
{
	double sat[SW_NCONFIGS][SW_NPAT] = { { 0 } }, ideal[SW_NCONFIGS][SW_NPAT] = { { 0 } };

	for (unsigned k = 0; s->classes && k < SW_NBASE; k++)
		s->cfg[k + SW_NBASE] |= s->cfg[k]; /* the class / no class pair */

	printf("dnp-lab sweep: %ux%ux%u, %u-byte payload = %u-word packets, %u VCs, bw %u, %s "
	       "credits, windows %" PRIu64 " + %" PRIu64 " units, hot spot node %u with %u "
	       "senders\n",
	       s->torus.dim[0], s->torus.dim[1], s->torus.dim[2], s->size, s->fw, s->vcs, s->bw,
	       s->credit_model == DNP_CREDIT_HW ? "hw" : "exact", s->warm, s->measure, s->hotspot,
	       s->nhot);
	if (s->hot_rate >= 0)
		printf("hot spot: each sender offers %.3f words/unit; the ladder offers the uniform "
		       "background of the other nodes\n",
		       s->hot_rate);
	for (unsigned k = 0; k < SW_NCONFIGS; k++) {
		for (unsigned p = 0; p < SW_NPAT; p++) {
			int ret;

			if (!s->pat[p] || !s->cfg[k])
				continue;
			ret = sw_ladder(s, &sw_configs[k], (enum sweep_pattern)p, &sat[k][p],
					&ideal[k][p]);
			if (ret == -EDOM) {
				printf("%-5s %-10s sends nothing on this torus\n",
				       sw_configs[k].name, sw_names[p]);
				continue;
			}
			if (ret)
				return ret;
		}
	}
	printf("\nsaturation (highest accepted), words/node/unit:\nconfig       pattern    ideal     "
	       "accepted  accepted/ideal\n");
	for (unsigned k = 0; k < SW_NCONFIGS; k++)
		for (unsigned p = 0; p < SW_NPAT; p++)
			if (s->pat[p] && s->cfg[k] && ideal[k][p] > 0)
				printf("%-12s %-10s %.4f    %.4f    %.3f\n", sw_configs[k].name,
				       sw_names[p], ideal[k][p], sat[k][p],
				       sat[k][p] / ideal[k][p]);
	return 0;
}

int dnp_lab_sweep_main(int argc, char **argv)
{
	struct sweep s;
	int o, ret;

	sw_defaults(&s);
	optind = 1;
	while ((o = getopt_long(argc, argv, "", sw_opts, NULL)) != -1) {
		ret = sw_option(&s, o, optarg);
		if (ret == 1)
			return 0;
		if (ret) {
			if (o != '?')
				fprintf(stderr, "dnp-lab sweep: bad value for --%s: %s\n",
					sw_opts[o - SW_OPT_QUICK].name, optarg ? optarg : "");
			sw_usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "dnp-lab sweep: unexpected argument %s\n", argv[optind]);
		return 2;
	}
	ret = sw_setup(&s);
	if (!ret)
		ret = sw_all(&s);
	if (!ret && s.plot) {
		fflush(s.csv);
		sw_plot(&s);
	}
	if (s.csv)
		printf("\nCSV: %s/sweep.csv%s\n", s.out, s.plot ? " (PNGs beside it)" : "");
	sw_teardown(&s);
	if (ret) {
		fprintf(stderr, "dnp-lab sweep: %s\n", strerror(-ret));
		return 1;
	}
	if (s.failures)
		fprintf(stderr,
			"dnp-lab sweep: %u runs failed (deadlock, timeout or a message "
			"not delivered)\n",
			s.failures);
	return s.failures ? 1 : 0;
}
