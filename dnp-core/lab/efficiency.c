/* SPDX-License-Identifier: MIT */
/*
 * lab/efficiency — cycle-by-cycle simulation of one saturated APEnet+ torus
 * link against the efficiency model of the EURETILE report (torus link
 * bandwidth and latency). The contract is in efficiency.h, the derivation
 * and the figures in docs/efficiency.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efficiency.h"

#include "dnp_parse.h"

#define EFF_WIRE_SLOTS 1024u /* > L_R + L_L: words in flight, indexed by visibility time */
#define EFF_FRAMING 4u       /* magic, start, header, footer (report: P = 64 bytes) */
#define EFF_TOLERANCE 0.05
#define EFF_MIN_PERIODS 4u     /* measure at least this many stall-resume periods */
#define EFF_MAX_EXTRA 1000000u /* ... but stop this many cycles after 'cycles' anyway */

enum eff_word_kind {
	EFF_NONE = 0,
	EFF_FRAME = 1,   /* framing word of a packet */
	EFF_PAYLOAD = 2, /* payload word of a packet */
	EFF_CREDIT = 3,  /* the credit word (its magic has no effect at the far end) */
};

struct eff_word {
	uint8_t kind;
	struct dnp_credit_vc cr[DNP_MAX_VC];
};

/* One end of the link: its dnp_link and the TX's credit slot state. */
struct eff_side {
	struct dnp_link *l;
	struct eff_word *out; /* the wire towards the peer */
	bool credit_next;     /* the magic went out last cycle, the credit word goes now */
	struct dnp_credit_vc cr[DNP_MAX_VC];
};

void dnp_lab_eff_conf_default(struct dnp_lab_eff_conf *c, int rule, unsigned fifo_x)
{
	memset(c, 0, sizeof(*c));
	c->warmup = 20000;
	c->cycles = 200000;
	c->credit_period = 35;  /* report: C = 35 maximises E_T */
	c->remote_latency = 35; /* L_R */
	c->local_latency = 20;  /* L_L */
	c->fifo_words = 512u * fifo_x;
	c->t_red = c->fifo_words - 6u; /* report: T_RED = 506 for 512 words */
	c->t_yellow = c->fifo_words / 2u;
	c->payload_words = 256;
	c->frame_words = 256 + EFF_FRAMING;
	c->phase = 0;
	c->rule = (uint8_t)rule;
	c->credit_model = DNP_CREDIT_HW;
}

static bool conf_ok(const struct dnp_lab_eff_conf *c)
{
	return c->credit_period > 0 && c->remote_latency + c->local_latency + 2u < EFF_WIRE_SLOTS &&
	       c->fifo_words > 0 && c->t_red <= c->fifo_words && c->t_yellow < c->t_red &&
	       c->payload_words > 0 && c->frame_words == c->payload_words + EFF_FRAMING &&
	       (c->rule == DNP_START_VCT || c->rule == DNP_START_STOP_AT_RED) &&
	       (c->credit_model == DNP_CREDIT_HW || c->credit_model == DNP_CREDIT_EXACT) &&
	       c->cycles > 0;
}

/*
 * EURETILE report: E1 = S/(P+S), E2 = C/(C+2), W = L_T + C with L_T = 2 L_R +
 * 2 L_L, E3 = B/(B+W) where B is what the sender can send between two credit
 * waits: T_RED words under stop-at-red, n packets of S_MAX under VCT (the
 * report's n = 1 case counts S_MAX = 256 words; we keep that convention).
 */
int dnp_lab_eff_model(const struct dnp_lab_eff_conf *c, struct dnp_lab_eff_result *r)
{
	double w, b;

	if (!conf_ok(c))
		return -EINVAL;
	w = 2.0 * c->remote_latency + 2.0 * c->local_latency + c->credit_period;
	r->w_model = w;
	r->e1 = (double)c->payload_words / c->frame_words;
	r->e2 = (double)c->credit_period / (c->credit_period + 2.0);
	r->burst_packets = c->t_red / c->frame_words;
	if (c->rule == DNP_START_VCT) {
		if (r->burst_packets == 0)
			return -EINVAL;
		b = (double)r->burst_packets * c->payload_words;
	} else {
		b = c->t_red;
	}
	r->e3 = b / (b + w);
	r->model = r->e1 * r->e2 * r->e3;

	/*
	 * HW credits: the credit that sees the last word is latched at the
	 * next period start (phase uniform in 0..C+1, mean (C+1)/2), sent a
	 * period of C + 2 cycles later, the credit word one cycle after its
	 * magic. B words take B (C + 2) / C cycles on the wire.
	 */
	if (c->rule == DNP_START_VCT)
		b = (double)r->burst_packets * c->frame_words;
	r->w_hw = 2.0 * c->remote_latency + 2.0 * c->local_latency + (c->credit_period + 2.0) +
		  1.0 + (c->credit_period + 1.0) / 2.0;
	r->model_hw = r->e1 * b / (b / r->e2 + r->w_hw);

	/*
	 * EXACT credits count the words in flight, so with a reader at link
	 * speed the estimate never reaches T_RED: the sender never waits
	 * (E3 = 1) and the link carries E1 x E2 whatever the rule and depth.
	 */
	if (c->credit_model == DNP_CREDIT_EXACT) {
		r->e3 = 1.0;
		r->model = r->model_hw = r->e1 * r->e2;
	}
	return 0;
}

static int make_link(const struct dnp_lab_eff_conf *c, uint64_t now, struct dnp_link **out)
{
	struct dnp_link_conf lc = {
		.fifo_words = c->fifo_words,
		.t_red = c->t_red,
		.t_yellow = c->t_yellow,
		/* a credit slot every C data cycles: the grid period is C + 2 */
		.credit_period = c->credit_period + 2u,
		.credit_timeout = 100u * (c->credit_period + 2u),
		.init_timeout = 0,
		.rto = 1, /* unused: the reliability layer is not exercised here */
		.max_retries = 0,
		.window = 1,
		.nvc = 1,
		.rule = c->rule,
		.credit_model = c->credit_model,
	};

	return dnp_link_create(&lc, now, out);
}

/*
 * The TX's credit slot: when the link says a credit is due, the magic word
 * goes out this cycle and the credit word the next one. Returns 1 if the
 * cycle was used, 0 if it is free for data, -EPIPE if the link broke.
 */
static int side_credit_slot(struct eff_side *s, uint64_t t, uint64_t delay)
{
	struct eff_word *w;
	unsigned ev;

	if (s->credit_next) {
		w = &s->out[(t + delay) & (EFF_WIRE_SLOTS - 1u)];
		w->kind = EFF_CREDIT;
		memcpy(w->cr, s->cr, sizeof(w->cr));
		s->credit_next = false;
		return 1;
	}
	ev = dnp_link_tick(s->l, t);
	if (ev & DNP_LINK_EV_BROKEN)
		return -EPIPE;
	if (ev & DNP_LINK_EV_CREDIT_DUE) {
		dnp_link_take_credit(s->l, t, s->cr);
		s->credit_next = true;
		return 1;
	}
	return 0;
}

struct eff_meter {
	bool stalled, measuring;
	uint64_t last_sent;
	uint64_t r_first, r_last, p_first, p_last;
	uint64_t burst, burst_sum, wait_sum;
};

static void meter_resume(struct eff_meter *m, const struct dnp_lab_eff_conf *c,
			 struct dnp_lab_eff_result *r, uint64_t t, uint64_t sent_payload)
{
	uint64_t wait = t - m->last_sent;

	m->stalled = false;
	if (t < c->warmup)
		goto out;
	if (!m->measuring) {
		m->measuring = true;
		m->r_first = t;
		m->p_first = sent_payload;
		r->wait_min = UINT64_MAX;
		goto mark;
	}
	r->stalls++;
	m->wait_sum += wait;
	m->burst_sum += m->burst;
	if (wait < r->wait_min)
		r->wait_min = wait;
	if (wait > r->wait_max)
		r->wait_max = wait;
mark:
	m->r_last = t;
	m->p_last = sent_payload;
out:
	m->burst = 0;
}

/* The measured efficiency: over the stall periods, else over the plain window after warm-up. */
static void eff_result(const struct dnp_lab_eff_conf *c, const struct eff_meter *m, uint64_t end,
		       uint64_t payload_after_warmup, struct dnp_lab_eff_result *r)
{
	if (r->stalls > 0) {
		r->window = m->r_last - m->r_first;
		r->payload = m->p_last - m->p_first;
		r->wait_mean = (double)m->wait_sum / r->stalls;
		r->period = (double)r->window / r->stalls;
		r->burst_words = (double)m->burst_sum / r->stalls;
	} else {
		/* Never stalled in the window: plain window. */
		r->window = end - c->warmup;
		r->payload = payload_after_warmup;
		r->wait_min = 0;
	}
	r->measured = (double)r->payload / r->window;
}

int dnp_lab_eff_simulate(const struct dnp_lab_eff_conf *c, struct dnp_lab_eff_result *r)
{
	const uint64_t delay = (uint64_t)c->remote_latency + c->local_latency;
	const uint32_t mask = EFF_WIRE_SLOTS - 1u;
	struct eff_word *ab = NULL, *ba = NULL;
	struct eff_side a = { 0 }, b = { 0 };
	struct eff_meter m = { 0 };
	uint64_t end = UINT64_MAX, t, sent_payload = 0, delivered = 0, p_warm = 0;
	uint32_t pos = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = dnp_lab_eff_model(c, r);
	if (rc < 0)
		return rc;
	ab = calloc(EFF_WIRE_SLOTS, sizeof(*ab));
	ba = calloc(EFF_WIRE_SLOTS, sizeof(*ba));
	if (!ab || !ba) {
		rc = -ENOMEM;
		goto out;
	}
	rc = make_link(c, 0, &a.l);
	if (rc < 0)
		goto out;
	rc = make_link(c, c->phase, &b.l);
	if (rc < 0)
		goto out;
	a.out = ab;
	b.out = ba;

	/*
	 * A sends for warmup + cycles, longer if fewer than EFF_MIN_PERIODS
	 * periods were measured, and stops at 'end'; the last delay + 1 cycles
	 * let its last words land.
	 */
	for (t = 0; end == UINT64_MAX || t < end + delay + 1; t++) {
		struct eff_word *w = &ab[t & mask];
		bool go;

		/* B: the reader takes one word (read speed = write speed), then arrivals. */
		if (dnp_link_rx_occupancy(b.l, 0) > 0)
			dnp_link_rx_release(b.l, 0, 1);
		if (w->kind == EFF_FRAME || w->kind == EFF_PAYLOAD) {
			if (dnp_link_rx_accept(b.l, 0, 1) < 0)
				r->overflows++;
			else if (w->kind == EFF_PAYLOAD)
				delivered++;
		} else if (w->kind == EFF_CREDIT) {
			dnp_link_on_credit(b.l, w->cr, t);
		}
		w->kind = EFF_NONE;
		if (dnp_link_rx_occupancy(b.l, 0) > r->max_occupancy)
			r->max_occupancy = dnp_link_rx_occupancy(b.l, 0);
		/* A: a credit from B reaches the TX control. */
		w = &ba[t & mask];
		if (w->kind == EFF_CREDIT)
			dnp_link_on_credit(a.l, w->cr, t);
		w->kind = EFF_NONE;

		/* B sends only credits. */
		rc = side_credit_slot(&b, t, delay);
		if (rc < 0)
			goto out;
		rc = side_credit_slot(&a, t, delay);
		if (rc < 0)
			goto out;
		if (t == c->warmup)
			p_warm = sent_payload;
		if (end == UINT64_MAX && t >= c->warmup + c->cycles &&
		    (r->stalls >= EFF_MIN_PERIODS || t >= c->warmup + c->cycles + EFF_MAX_EXTRA))
			end = t;
		if (rc > 0 || t >= end)
			continue;

		/* A's data cycle: VCT decides per packet, stop-at-red per word. */
		if (c->rule == DNP_START_VCT)
			go = pos != 0 || dnp_link_can_start(a.l, 0, c->frame_words);
		else
			go = dnp_link_can_start(a.l, 0, 1);
		if (!go) {
			m.stalled = true;
			continue;
		}
		if (m.stalled)
			meter_resume(&m, c, r, t, sent_payload);
		w = &ab[(t + delay) & mask];
		if (pos >= 3 && pos < 3 + c->payload_words) { /* magic, start, header first */
			w->kind = EFF_PAYLOAD;
			sent_payload++;
		} else {
			w->kind = EFF_FRAME;
		}
		dnp_link_commit(a.l, 0, 1);
		pos = pos + 1 == c->frame_words ? 0 : pos + 1;
		m.last_sent = t;
		m.burst++;
	}
	rc = 0;
	if (r->overflows == 0 && delivered != sent_payload) {
		rc = -EIO; /* a word was lost on the simulated wire: a bug here */
		goto out;
	}
	eff_result(c, &m, end, sent_payload - p_warm, r);
out:
	dnp_link_destroy(a.l);
	dnp_link_destroy(b.l);
	free(ab);
	free(ba);
	return rc;
}

int dnp_lab_efficiency_run(int rule, unsigned fifo_x, double *measured, double *model)
{
	struct dnp_lab_eff_conf c;
	struct dnp_lab_eff_result r;
	int rc;

	if ((rule != DNP_START_VCT && rule != DNP_START_STOP_AT_RED) || fifo_x == 0 || fifo_x > 64)
		return -EINVAL;
	dnp_lab_eff_conf_default(&c, rule, fifo_x);
	rc = dnp_lab_eff_simulate(&c, &r);
	if (rc < 0)
		return rc;
	if (measured)
		*measured = r.measured;
	if (model)
		*model = r.model;
	return r.overflows ? -EIO : 0;
}

/* ---- command line ---- */

struct eff_opts {
	bool csv, exact, sweep;
	uint64_t cycles;
	uint32_t credit_period, t_red, t_yellow, phase;
	bool have_t_red, have_t_yellow;
};

static const char *rule_name(int rule)
{
	return rule == DNP_START_VCT ? "vct" : "stop-at-red";
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dnp-lab efficiency [--csv] [--cycles N] [--credit-period C]\n"
		"                          [--t-red N] [--t-yellow N] [--phase P] [--exact]\n"
		"                          [--sweep-phase]\n"
		"  One saturated APEnet+ link, cycle by cycle, against E_T = E1 x E2 x E3\n"
		"  (EURETILE report, torus link), for VCT and stop-at-red and FIFOs x1,x2,x4,x8.\n"
		"  --t-red/--t-yellow set the x1 thresholds; deeper FIFOs keep the same\n"
		"  T_RED margin below the depth and scale T_YELLOW. --phase delays the\n"
		"  receiver's credit grid; --sweep-phase runs every phase 0..C+1 (x1).\n"
		"  Exit status 1 if an x1 case is more than 5%% off the model.\n");
}

static int parse_u64(const char *s, uint64_t max, uint64_t *v)
{
	return dnp_parse_u64_max(s, max, v);
}

/* Accepts "--name V" and "--name=V". Returns 1 if argv[*i] is that option. */
static int opt_value(int argc, char **argv, int *i, const char *name, const char **val)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0)
		return 0;
	if (argv[*i][n] == '=') {
		*val = argv[*i] + n + 1;
		return 1;
	}
	if (argv[*i][n] != '\0')
		return 0;
	*val = *i + 1 < argc ? argv[++*i] : NULL;
	return 1;
}

static int parse_opts(int argc, char **argv, struct eff_opts *o)
{
	static const char *const names[] = { "--cycles", "--credit-period", "--t-red", "--t-yellow",
					     "--phase" };
	int i;

	memset(o, 0, sizeof(*o));
	o->cycles = 200000;
	o->credit_period = 35;
	for (i = 1; i < argc; i++) {
		const char *val = NULL;
		uint64_t v;
		unsigned k;

		if (!strcmp(argv[i], "--csv")) {
			o->csv = true;
			continue;
		}
		if (!strcmp(argv[i], "--exact")) {
			o->exact = true;
			continue;
		}
		if (!strcmp(argv[i], "--sweep-phase")) {
			o->sweep = true;
			continue;
		}
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 1;
		}
		for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			if (opt_value(argc, argv, &i, names[k], &val))
				break;
		if (k == sizeof(names) / sizeof(names[0]) || parse_u64(val, UINT32_MAX, &v) < 0) {
			fprintf(stderr, "efficiency: bad option or value: %s\n", argv[i]);
			return -EINVAL;
		}
		switch (k) {
		case 0:
			if (v == 0)
				return -EINVAL;
			o->cycles = v;
			break;
		case 1:
			if (v == 0)
				return -EINVAL;
			o->credit_period = (uint32_t)v;
			break;
		case 2:
			o->t_red = (uint32_t)v;
			o->have_t_red = true;
			break;
		case 3:
			o->t_yellow = (uint32_t)v;
			o->have_t_yellow = true;
			break;
		default:
			o->phase = (uint32_t)v;
			break;
		}
	}
	return 0;
}

static void conf_from_opts(struct dnp_lab_eff_conf *c, const struct eff_opts *o, int rule,
			   unsigned x)
{
	dnp_lab_eff_conf_default(c, rule, x);
	c->cycles = o->cycles;
	c->credit_period = o->credit_period;
	c->phase = o->phase;
	if (o->exact)
		c->credit_model = DNP_CREDIT_EXACT;
	/* The x1 thresholds carry over: same safety margin, T_YELLOW scaled. */
	if (o->have_t_red)
		c->t_red = c->fifo_words - (512u - o->t_red);
	if (o->have_t_yellow)
		c->t_yellow = o->t_yellow * x;
}

static double rel_diff(double measured, double model)
{
	return (measured - model) / model;
}

static int sweep_phase(const struct eff_opts *o)
{
	struct dnp_lab_eff_conf c;
	struct dnp_lab_eff_result r;
	uint32_t p;
	int rule, rc;

	printf("%-12s %5s %9s %7s %8s %10s\n", "rule", "phase", "measured", "model", "diff",
	       "wait");
	for (rule = DNP_START_VCT; rule <= DNP_START_STOP_AT_RED; rule++) {
		for (p = 0; p < o->credit_period + 2u; p++) {
			conf_from_opts(&c, o, rule, 1);
			c.phase = p;
			rc = dnp_lab_eff_simulate(&c, &r);
			if (rc < 0)
				return rc;
			printf("%-12s %5u %9.4f %7.4f %+7.2f%% %6.1f\n", rule_name(rule), p,
			       r.measured, r.model, 100.0 * rel_diff(r.measured, r.model),
			       r.wait_mean);
		}
	}
	return 0;
}

static void print_row(int rule, unsigned x, const struct dnp_lab_eff_conf *c,
		      const struct dnp_lab_eff_result *r)
{
	printf("%-12s x%-3u %5u %5u %6u %9.4f %7.4f %+7.2f%% %6.4f %9.1f/%" PRIu64 "/%" PRIu64
	       " %6.0f %7.1f %4u %8.4f%s\n",
	       rule_name(rule), x, c->fifo_words, c->t_red, c->t_yellow, r->measured, r->model,
	       100.0 * rel_diff(r->measured, r->model), r->e3, r->wait_mean, r->wait_min,
	       r->wait_max, r->burst_words, r->period, r->max_occupancy, r->model_hw,
	       r->overflows ? " OVERFLOW" : "");
}

int dnp_lab_efficiency_main(int argc, char **argv)
{
	static const unsigned xs[] = { 1, 2, 4, 8 };
	struct eff_opts o;
	int rule, rc, status = 0;
	unsigned i;

	rc = parse_opts(argc, argv, &o);
	if (rc > 0)
		return 0;
	if (rc < 0) {
		usage(stderr);
		return 2;
	}
	if ((o.have_t_red && (o.t_red == 0 || o.t_red > 512)) ||
	    (o.have_t_yellow && o.t_yellow >= (o.have_t_red ? o.t_red : 506u))) {
		fprintf(stderr, "efficiency: need T_YELLOW < T_RED <= 512\n");
		return 2;
	}
	if (o.sweep)
		return sweep_phase(&o) < 0 ? 2 : 0;

	if (o.csv) {
		printf("rule,fifo_x,measured,model\n");
	} else {
		struct dnp_lab_eff_conf c;

		conf_from_opts(&c, &o, DNP_START_VCT, 1);
		printf("one saturated link, cycle by cycle (EURETILE report, torus link)\n"
		       "C=%u L_R=%u L_L=%u -> W = L_T + C = %u cycles; packet %u+%u words; "
		       "credits %s; phase %u\n"
		       "hw-model: same alternation with W_hw = L_T + (C+2) + 1 + (C+1)/2 = %.1f\n",
		       c.credit_period, c.remote_latency, c.local_latency,
		       2 * c.remote_latency + 2 * c.local_latency + c.credit_period,
		       c.payload_words, EFF_FRAMING, o.exact ? "EXACT" : "HW", c.phase,
		       2.0 * c.remote_latency + 2.0 * c.local_latency + c.credit_period + 3.0 +
			       (c.credit_period + 1.0) / 2.0);
		printf("%-12s %4s %5s %5s %6s %9s %7s %8s %6s %17s %6s %7s %4s %8s\n", "rule",
		       "fifo", "depth", "t_red", "t_yel", "measured", "model", "diff", "E3",
		       "wait mean/min/max", "burst", "period", "occ", "hw-model");
	}
	for (rule = DNP_START_VCT; rule <= DNP_START_STOP_AT_RED; rule++) {
		for (i = 0; i < sizeof(xs) / sizeof(xs[0]); i++) {
			struct dnp_lab_eff_conf c;
			struct dnp_lab_eff_result r;
			double d;

			conf_from_opts(&c, &o, rule, xs[i]);
			rc = dnp_lab_eff_simulate(&c, &r);
			if (rc < 0) {
				fprintf(stderr, "efficiency: %s x%u: %s%s\n", rule_name(rule),
					xs[i], strerror(-rc),
					rc == -EINVAL ?
						" (VCT needs T_RED >= one packet, 260 words)" :
						"");
				return 2;
			}
			d = rel_diff(r.measured, r.model);
			if (r.overflows || (xs[i] == 1 && (d < 0 ? -d : d) > EFF_TOLERANCE))
				status = 1;
			if (o.csv) {
				printf("%s,%u,%.4f,%.4f\n", rule_name(rule), xs[i], r.measured,
				       r.model);
				continue;
			}
			print_row(rule, xs[i], &c, &r);
		}
	}
	if (!o.csv && status)
		printf("FAIL: an x1 case is more than 5%% off the model, or a FIFO overflowed\n");
	return status;
}
