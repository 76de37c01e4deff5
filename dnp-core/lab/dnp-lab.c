/* SPDX-License-Identifier: MIT */
/*
 * dnp-lab — runs the DNP engine on a simulated torus in virtual time.
 *
 *   dnp-lab run [options]        traffic pattern, verification, statistics
 *   dnp-lab efficiency [...]     link-efficiency experiment (efficiency.c)
 *
 * Exit status: 0 success, 1 verification failure / deadlock / timeout, 2 usage.
 * See docs/lab.md.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnp_parse.h"
#include "dnp_version.h"
#include "impair.h"
#include "lab.h"

/* One lab time unit is one cycle of the modelled link: --link-mhz says how long. */
#define LAB_LINK_MHZ_DEFAULT 350u
/*
 * The host model of --coll-host (docs/lab.md, "Host-based collectives in the
 * lab"): an event's hand-off from the daemon to a busy-polling program and
 * the program's next command back (docs/performance.md, "Where the time of
 * one 8-byte PUT goes": 1.02 us), and an int64 sum at 55 ns per KiB.
 */
#define LAB_HOST_EVENT_NS 1020u
#define LAB_HOST_REDUCE_NS 55u

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dnp-lab run [options]\n"
		"       dnp-lab efficiency [options]\n"
		"       dnp-lab sweep [options]  synthetic patterns, offered-load ladder\n"
		"       dnp-lab --help | --version\n"
		"run options:\n"
		"  --torus XxYxZ          torus size (2x2x2)\n"
		"  --pattern P            all-to-all|neighbour|hotspot|random|shift (all-to-all)\n"
		"  --sizes LIST           message sizes, e.g. 1,4097,1M (4096)\n"
		"  --count K              messages per destination and size; random: per node (1)\n"
		"  --hotspot N            target node of the hotspot pattern (0)\n"
		"  --shift DX,DY,DZ       destination offset of the shift pattern (1,0,0)\n"
		"  --latency T            link flight time, time units (35)\n"
		"  --bw W                 link bandwidth, 16-byte words per time unit (1)\n"
		"  --fifo WORDS           RX FIFO depth per VC (512)\n"
		"  --t-red W --t-yellow W credit thresholds (506 / 256; scaled with --fifo)\n"
		"  --credit-period C      time units between credits (35)\n"
		"  --credit-period-us U   the same in microseconds (dnpd's name; --link-mhz)\n"
		"  --rule vct|stop-at-red packet start rule (vct)\n"
		"  --credit-model hw|exact\n"
		"  --vcs 1..4             virtual channels (4, as dnpd); 1 = no dateline (can\n"
		"                         deadlock); 2 = the hardware's two dateline VCs; 4 lets\n"
		"                         detours go through an intermediate node\n"
		"  --routing dor|adaptive|valiant  dimension-ordered (dor), minimal adaptive with\n"
		"                         DOR on VCs 0/1 as the escape (needs --vcs 3 or 4), or\n"
		"                         Valiant: DOR to a hashed intermediate node on VCs 0/1,\n"
		"                         then on 2/3 (needs --vcs 4; docs/routing.md)\n"
		"  --congestion off|ecn   congestion management: none (off), or marks on congested\n"
		"                         VCs and a window per destination (docs/lab.md)\n"
		"  --arbitration off|strict|wrr  traffic-class arbitration of the engines (off)\n"
		"  --tc N                 class 0..7 of the pattern's messages (0)\n"
		"  --pingpong A,B         a ping-pong flow between node ids A and B beside the\n"
		"                         pattern: --pingpong-count messages (100) of\n"
		"                         --pingpong-size bytes (8) in class --pingpong-tc (7)\n"
		"  --pingpong-start T     the ping-pong's first message no earlier than time T (0)\n"
		"  --pingpong-warmup N    its first N messages are not measured (0)\n"
		"  --pingpong-measure during|all  measure its messages while the pattern runs\n"
		"                         (during), or after it too, as dnp_pingpong (all)\n"
		"  --app-window N         at most N of a node's pattern messages outstanding, as\n"
		"                         dnp_alltoall --window (0: no limit but --max-commands)\n"
		"  --order rotated|by-destination  all-to-all submission order (rotated);\n"
		"                         by-destination is dnp_alltoall's\n"
		"  --low-payload BYTES    with arbitration: packets of classes 0..6 carry at most\n"
		"                         BYTES (16..4096; 0 = 4096)\n"
		"  --top-reserve WORDS    with arbitration: words of every VC FIFO that classes\n"
		"                         0..6 may not take (0)\n"
		"  --loss P --corrupt P --dup P --reorder P   per-frame fault probabilities,\n"
		"                         0..1 or N%%\n"
		"  --impair SPEC          the same in dnpd's spelling: loss=N%%,corrupt=N%%,dup=N%%,\n"
		"                         reorder=N%%[,dir=all] (every link; no delay=, seed=: use\n"
		"                         --latency, --seed)\n"
		"  --silence NODE:DIR[@T] drop every frame node NODE sends on DIR (0..5) from T\n"
		"  --fault SPEC           a failure at virtual time T (repeatable): cut@T:X,Y,Z:DIR,\n"
		"                         mend@T:X,Y,Z:DIR (DIR xp..zm), kill@T:X,Y,Z, revive@T:X,Y,Z\n"
		"  --random-faults C,K,T  C random cable cuts and K node deaths in [0, T), each\n"
		"                         repaired later (docs/lab.md, failures and repairs)\n"
		"  --timeline W           also print bytes delivered per window of W time units\n"
		"  --rto T --credit-timeout T --max-retries N --window N --max-commands N\n"
		"  --credit-timeout-ms M  --credit-timeout in milliseconds (dnpd's name)\n"
		"  --cmd-timeout T        command deadline: -ETIMEDOUT after T (0 = none)\n"
		"  --cmd-timeout-ms M     the same in milliseconds (dnpd's name)\n"
		"  --link-mhz F           the modelled link's clock, for the options in real\n"
		"                         time: one time unit = one cycle (350, APEnet+)\n"
		"  --seed S               PRNG seed (1)\n"
		"  --max-time T           stop (failure) at this virtual time\n"
		"  --stall T              no progress for T time units = deadlock\n"
		"  --csv                  machine-readable output\n"
		"  --verbose              print the first verification errors\n"
		"  --coll allreduce|barrier|bcast  instead of the pattern: every node joins one\n"
		"                         group and runs --coll-count collectives (10) of\n"
		"                         --coll-size bytes (8), run by the engines\n"
		"  --coll-host            run --coll as the hosts do (Presto's algorithms over\n"
		"                         PUTs, applications modelled), not in the engines\n"
		"  --coll-host-alg presto|rd  allreduce: reduce + broadcast trees (presto) or\n"
		"                         recursive doubling (rd)\n"
		"  --host-event-ns N      host time from an event to acting on it (1020)\n"
		"  --host-reduce-ns-per-kib N  host time to reduce 1 KiB (55)\n");
}

enum {
	OPT_TORUS = 256,
	OPT_PATTERN,
	OPT_SIZES,
	OPT_COUNT,
	OPT_HOTSPOT,
	OPT_SHIFT,
	OPT_LATENCY,
	OPT_BW,
	OPT_FIFO,
	OPT_TRED,
	OPT_TYELLOW,
	OPT_CREDIT_PERIOD,
	OPT_RULE,
	OPT_CREDIT_MODEL,
	OPT_VCS,
	OPT_LOSS,
	OPT_CORRUPT,
	OPT_DUP,
	OPT_REORDER,
	OPT_SILENCE,
	OPT_RTO,
	OPT_CREDIT_TIMEOUT,
	OPT_MAX_RETRIES,
	OPT_WINDOW,
	OPT_MAX_COMMANDS,
	OPT_SEED,
	OPT_MAX_TIME,
	OPT_STALL,
	OPT_CSV,
	OPT_VERBOSE,
	OPT_HELP,
	OPT_CMD_TIMEOUT,
	OPT_FAULT,
	OPT_RANDOM_FAULTS,
	OPT_TIMELINE,
	OPT_IMPAIR,
	OPT_CREDIT_PERIOD_US,
	OPT_CREDIT_TIMEOUT_MS,
	OPT_CMD_TIMEOUT_MS,
	OPT_LINK_MHZ,
	OPT_ROUTING,
	OPT_CONGESTION,
	OPT_ARBITRATION, /* traffic classes: dnp_lab_class_opt (lab_conf.c) */
	OPT_TC,
	OPT_PINGPONG,
	OPT_PP_COUNT,
	OPT_PP_SIZE,
	OPT_PP_TC,
	OPT_COLL, /* collectives (lab_coll.c) */
	OPT_COLL_SIZE,
	OPT_COLL_COUNT,
	OPT_LOW_PAYLOAD, /* top-class remedies: dnp_lab_class_opt */
	OPT_TOP_RESERVE,
	OPT_COLL_HOST, /* host-based collectives (lab_coll.c) */
	OPT_COLL_HOST_ALG,
	OPT_HOST_EVENT_NS,
	OPT_HOST_REDUCE_NS,
	OPT_PP_START, /* the daemons' experiment (h-lab30): dnp_lab_class_opt */
	OPT_PP_WARMUP,
	OPT_APP_WINDOW,
	OPT_ORDER,
	OPT_PP_MEASURE,
};

static const struct option run_opts[] = {
	{ "torus", required_argument, NULL, OPT_TORUS },
	{ "pattern", required_argument, NULL, OPT_PATTERN },
	{ "sizes", required_argument, NULL, OPT_SIZES },
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "hotspot", required_argument, NULL, OPT_HOTSPOT },
	{ "shift", required_argument, NULL, OPT_SHIFT },
	{ "latency", required_argument, NULL, OPT_LATENCY },
	{ "bw", required_argument, NULL, OPT_BW },
	{ "fifo", required_argument, NULL, OPT_FIFO },
	{ "t-red", required_argument, NULL, OPT_TRED },
	{ "t-yellow", required_argument, NULL, OPT_TYELLOW },
	{ "credit-period", required_argument, NULL, OPT_CREDIT_PERIOD },
	{ "rule", required_argument, NULL, OPT_RULE },
	{ "credit-model", required_argument, NULL, OPT_CREDIT_MODEL },
	{ "vcs", required_argument, NULL, OPT_VCS },
	{ "loss", required_argument, NULL, OPT_LOSS },
	{ "corrupt", required_argument, NULL, OPT_CORRUPT },
	{ "dup", required_argument, NULL, OPT_DUP },
	{ "reorder", required_argument, NULL, OPT_REORDER },
	{ "silence", required_argument, NULL, OPT_SILENCE },
	{ "rto", required_argument, NULL, OPT_RTO },
	{ "credit-timeout", required_argument, NULL, OPT_CREDIT_TIMEOUT },
	{ "max-retries", required_argument, NULL, OPT_MAX_RETRIES },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "max-commands", required_argument, NULL, OPT_MAX_COMMANDS },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "max-time", required_argument, NULL, OPT_MAX_TIME },
	{ "stall", required_argument, NULL, OPT_STALL },
	{ "csv", no_argument, NULL, OPT_CSV },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "cmd-timeout", required_argument, NULL, OPT_CMD_TIMEOUT },
	{ "fault", required_argument, NULL, OPT_FAULT },
	{ "random-faults", required_argument, NULL, OPT_RANDOM_FAULTS },
	{ "timeline", required_argument, NULL, OPT_TIMELINE },
	{ "impair", required_argument, NULL, OPT_IMPAIR },
	{ "credit-period-us", required_argument, NULL, OPT_CREDIT_PERIOD_US },
	{ "credit-timeout-ms", required_argument, NULL, OPT_CREDIT_TIMEOUT_MS },
	{ "cmd-timeout-ms", required_argument, NULL, OPT_CMD_TIMEOUT_MS },
	{ "link-mhz", required_argument, NULL, OPT_LINK_MHZ },
	{ "routing", required_argument, NULL, OPT_ROUTING },
	{ "congestion", required_argument, NULL, OPT_CONGESTION },
	{ "arbitration", required_argument, NULL, OPT_ARBITRATION },
	{ "tc", required_argument, NULL, OPT_TC },
	{ "pingpong", required_argument, NULL, OPT_PINGPONG },
	{ "pingpong-count", required_argument, NULL, OPT_PP_COUNT },
	{ "pingpong-size", required_argument, NULL, OPT_PP_SIZE },
	{ "pingpong-tc", required_argument, NULL, OPT_PP_TC },
	{ "coll", required_argument, NULL, OPT_COLL },
	{ "coll-size", required_argument, NULL, OPT_COLL_SIZE },
	{ "coll-count", required_argument, NULL, OPT_COLL_COUNT },
	{ "low-payload", required_argument, NULL, OPT_LOW_PAYLOAD },
	{ "top-reserve", required_argument, NULL, OPT_TOP_RESERVE },
	{ "coll-host", no_argument, NULL, OPT_COLL_HOST },
	{ "coll-host-alg", required_argument, NULL, OPT_COLL_HOST_ALG },
	{ "host-event-ns", required_argument, NULL, OPT_HOST_EVENT_NS },
	{ "host-reduce-ns-per-kib", required_argument, NULL, OPT_HOST_REDUCE_NS },
	{ "pingpong-start", required_argument, NULL, OPT_PP_START },
	{ "pingpong-warmup", required_argument, NULL, OPT_PP_WARMUP },
	{ "app-window", required_argument, NULL, OPT_APP_WINDOW },
	{ "order", required_argument, NULL, OPT_ORDER },
	{ "pingpong-measure", required_argument, NULL, OPT_PP_MEASURE },
	{ NULL, 0, NULL, 0 },
};

static int parse_u64(const char *s, uint64_t *v)
{
	return dnp_parse_u64(s, v);
}

static int parse_u32(const char *s, uint32_t *v)
{
	uint64_t x;
	int r = dnp_parse_u64_max(s, UINT32_MAX, &x);

	if (!r)
		*v = (uint32_t)x;
	return r;
}

static int parse_prob(const char *s, double *p)
{
	char *end;

	errno = 0;
	*p = strtod(s, &end);
	if (end == s || errno || *p < 0 || *p > 1)
		return -EINVAL;
	if (*end == '%') {
		*p /= 100.0;
		end++;
	}
	return *end ? -EINVAL : 0;
}

/* NODE:DIR[@T] */
static int parse_silence(const char *s, struct dnp_lab_conf *c)
{
	char buf[64], *dir, *at;
	uint64_t node, d, t = 0;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	dir = strchr(buf, ':');
	if (!dir)
		return -EINVAL;
	*dir++ = 0;
	at = strchr(dir, '@');
	if (at)
		*at++ = 0;
	if (dnp_parse_u64_max(buf, 0xffffff, &node) || dnp_parse_u64_max(dir, DNP_NDIRS - 1, &d) ||
	    (at && dnp_parse_u64(at, &t)))
		return -EINVAL;
	c->silence_node = (int)node;
	c->silence_dir = (unsigned)d;
	c->silence_at = t;
	c->allow_errors = true;
	return 0;
}

/* What dnp-lab run collects from its command line before the lab is set up. */
struct run_args {
	struct dnp_lab_conf c;
	bool csv, fifo_set, red_set, yellow_set;
	uint32_t vcs;
	/* failures are parsed once the torus is known */
	const char *faults[DNP_LAB_MAX_FAULTS];
	unsigned nfaults;
	const char *random_faults;
	/* dnpd's real-time spellings, turned into time units once --link-mhz is known */
	uint64_t link_mhz;
	bool rt_set[3];
	uint64_t rt_ns[3];   /* credit period, credit timeout, command timeout */
	uint64_t host_ns[2]; /* --host-event-ns, --host-reduce-ns-per-kib (docs/lab.md) */
};

#define NOT_MINE 1 /* an option parser that does not handle this option */

/* Traffic: torus, pattern, sizes, counts. */
static int opt_traffic(struct run_args *a, int opt, const char *arg)
{
	struct dnp_lab_conf *c = &a->c;
	uint32_t u32 = 0;
	int ret;

	switch (opt) {
	case OPT_TORUS:
		return dnp_torus_parse(arg, &c->torus);
	case OPT_PATTERN:
		return dnp_lab_pattern_parse(arg, &c->pattern);
	case OPT_SIZES:
		return dnp_lab_parse_sizes(arg, c);
	case OPT_COUNT:
		ret = parse_u32(arg, &u32);
		c->count = u32;
		return ret;
	case OPT_HOTSPOT:
		ret = parse_u32(arg, &u32);
		c->hotspot = u32;
		return ret;
	case OPT_SHIFT:
		return sscanf(arg, "%d,%d,%d", &c->shift[0], &c->shift[1], &c->shift[2]) == 3 ?
			       0 :
			       -EINVAL;
	default:
		return NOT_MINE;
	}
}

/* Keyword options: "a" or "b" -> 0 or 1 into *out. */
static int parse_choice(const char *arg, const char *a, const char *b, unsigned *out)
{
	if (!strcmp(arg, a))
		*out = 0;
	else if (!strcmp(arg, b))
		*out = 1;
	else
		return -EINVAL;
	return 0;
}

/*
 * --impair SPEC, dnpd's spelling (transport/impair.h) of --loss, --corrupt,
 * --dup and --reorder. The lab impairs every link alike, and its delays and
 * random streams come from --latency and --seed: dir= other than all, delay=
 * and seed= are refused with a word rather than ignored.
 */
static int parse_impair(const char *arg, struct dnp_lab_conf *c)
{
	struct dnp_impair_conf ic;

	if (dnp_impair_parse(arg, &ic))
		return -EINVAL;
	if (ic.dirs != 0x3f || ic.delay_ns || strstr(arg, "seed=")) {
		fprintf(stderr,
			"dnp-lab: --impair %s: the lab impairs every link alike (no dir=; "
			"--silence NODE:DIR cuts one), and takes no delay= or seed= "
			"(--latency, --seed)\n",
			arg);
		return -EINVAL;
	}
	c->loss = ic.loss / (double)DNP_IMPAIR_PPM;
	c->corrupt = ic.corrupt / (double)DNP_IMPAIR_PPM;
	c->dup = ic.dup / (double)DNP_IMPAIR_PPM;
	c->reorder = ic.reorder / (double)DNP_IMPAIR_PPM;
	return 0;
}

/* A duration in real time (unit: default_ns for a bare number) for run_rt_units. */
static int parse_rt(struct run_args *a, unsigned k, const char *arg, uint64_t default_ns)
{
	a->rt_set[k] = true;
	return dnp_parse_duration_ns(arg, default_ns, &a->rt_ns[k]);
}

/* The links: timing, FIFO and credits, VCs, reliability. */
static int opt_link(struct run_args *a, int opt, const char *arg)
{
	struct dnp_link_conf *l = &a->c.link;
	unsigned k = 0;
	int ret;

	switch (opt) {
	case OPT_LATENCY:
		return parse_u64(arg, &a->c.latency);
	case OPT_BW:
		return parse_u32(arg, &a->c.bw);
	case OPT_FIFO:
		a->fifo_set = true;
		return parse_u32(arg, &l->fifo_words);
	case OPT_TRED:
		a->red_set = true;
		return parse_u32(arg, &l->t_red);
	case OPT_TYELLOW:
		a->yellow_set = true;
		return parse_u32(arg, &l->t_yellow);
	case OPT_CREDIT_PERIOD:
		return parse_u64(arg, &l->credit_period);
	case OPT_RULE:
		ret = parse_choice(arg, "vct", "stop-at-red", &k);
		l->rule = k ? DNP_START_STOP_AT_RED : DNP_START_VCT;
		return ret;
	case OPT_CREDIT_MODEL:
		ret = parse_choice(arg, "hw", "exact", &k);
		l->credit_model = k ? DNP_CREDIT_EXACT : DNP_CREDIT_HW;
		return ret;
	case OPT_VCS:
		ret = parse_u32(arg, &a->vcs);
		return !ret && (a->vcs < 1 || a->vcs > DNP_MAX_VC) ? -EINVAL : ret;
	case OPT_ROUTING:
		ret = dnp_routing_parse(arg);
		if (ret >= 0)
			a->c.routing = (uint8_t)ret;
		return ret < 0 ? ret : 0;
	case OPT_CONGESTION:
		ret = dnp_congestion_parse(arg);
		if (ret >= 0)
			a->c.congestion = (uint8_t)ret;
		return ret < 0 ? ret : 0;
	case OPT_RTO:
		return parse_u64(arg, &l->rto);
	case OPT_CREDIT_TIMEOUT:
		return parse_u64(arg, &l->credit_timeout);
	case OPT_MAX_RETRIES:
		return parse_u32(arg, &l->max_retries);
	case OPT_WINDOW:
		return parse_u32(arg, &l->window);
	case OPT_CREDIT_PERIOD_US:
		return parse_rt(a, 0, arg, 1000);
	case OPT_CREDIT_TIMEOUT_MS:
		return parse_rt(a, 1, arg, 1000000);
	case OPT_LINK_MHZ:
		return dnp_parse_u64_max(arg, 100000, &a->link_mhz) || !a->link_mhz ? -EINVAL : 0;
	default:
		return NOT_MINE;
	}
}

/* Faults injected on the links. */
static int opt_fault(struct run_args *a, int opt, const char *arg)
{
	switch (opt) {
	case OPT_LOSS:
		return parse_prob(arg, &a->c.loss);
	case OPT_CORRUPT:
		return parse_prob(arg, &a->c.corrupt);
	case OPT_DUP:
		return parse_prob(arg, &a->c.dup);
	case OPT_REORDER:
		return parse_prob(arg, &a->c.reorder);
	case OPT_SILENCE:
		return parse_silence(arg, &a->c);
	case OPT_IMPAIR:
		return parse_impair(arg, &a->c);
	case OPT_FAULT:
		if (a->nfaults == DNP_LAB_MAX_FAULTS)
			return -E2BIG;
		a->faults[a->nfaults++] = arg;
		return 0;
	case OPT_RANDOM_FAULTS:
		a->random_faults = arg;
		return 0;
	default:
		return NOT_MINE;
	}
}

/* The run itself: limits, seed, output. */
static int opt_run(struct run_args *a, int opt, const char *arg)
{
	switch (opt) {
	case OPT_MAX_COMMANDS:
		return parse_u32(arg, &a->c.max_commands);
	case OPT_SEED:
		return parse_u64(arg, &a->c.seed);
	case OPT_MAX_TIME:
		return parse_u64(arg, &a->c.max_time);
	case OPT_STALL:
		return parse_u64(arg, &a->c.stall_limit);
	case OPT_CMD_TIMEOUT:
		return parse_u64(arg, &a->c.cmd_timeout);
	case OPT_CMD_TIMEOUT_MS:
		return parse_rt(a, 2, arg, 1000000);
	case OPT_TIMELINE:
		return parse_u64(arg, &a->c.timeline);
	case OPT_CSV:
		a->csv = true;
		return 0;
	case OPT_VERBOSE:
		a->c.verbose = true;
		return 0;
	case OPT_ARBITRATION:
	case OPT_TC:
	case OPT_PINGPONG:
	case OPT_PP_COUNT:
	case OPT_PP_SIZE:
	case OPT_PP_TC:
	case OPT_LOW_PAYLOAD:
	case OPT_TOP_RESERVE:
	case OPT_PP_START:
	case OPT_PP_WARMUP:
	case OPT_PP_MEASURE:
		return dnp_lab_class_opt(&a->c, run_opts[opt - OPT_TORUS].name, arg);
	case OPT_APP_WINDOW:
		return parse_u32(arg, &a->c.app_window);
	case OPT_ORDER: {
		unsigned k = 0;
		int ret = parse_choice(arg, "rotated", "by-destination", &k);

		a->c.a2a_order = (uint8_t)k;
		return ret;
	}
	case OPT_COLL: {
		unsigned k = 0;
		int ret = !strcmp(arg, "allreduce") ? 0 : parse_choice(arg, "barrier", "bcast", &k);

		a->c.coll_op = !strcmp(arg, "allreduce") ? DNP_OP_ALLREDUCE :
			       k                         ? DNP_OP_BCAST :
							   DNP_OP_BARRIER;
		a->c.coll_count = a->c.coll_count ? a->c.coll_count : 10;
		a->c.coll_size = a->c.coll_size ? a->c.coll_size : 8;
		return ret;
	}
	case OPT_COLL_SIZE:
		return parse_u32(arg, &a->c.coll_size);
	case OPT_COLL_COUNT:
		return parse_u32(arg, &a->c.coll_count);
	case OPT_COLL_HOST:
		a->c.coll_host = true;
		return 0;
	case OPT_COLL_HOST_ALG: {
		unsigned k = 0;
		int ret = parse_choice(arg, "presto", "rd", &k);

		a->c.coll_host_alg = (uint8_t)k;
		return ret;
	}
	case OPT_HOST_EVENT_NS:
	case OPT_HOST_REDUCE_NS:
		return dnp_parse_u64_max(arg, 1000000000, &a->host_ns[opt - OPT_HOST_EVENT_NS]);
	default:
		return NOT_MINE;
	}
}

/*
 * The options given in real time (dnpd's names), in time units: one unit is
 * one cycle at --link-mhz, rounded up (a 1 us timeout is never 0, "none").
 * 0, or -ERANGE (said) when a value does not fit.
 */
static int run_rt_units(struct run_args *a)
{
	static const char *const names[3] = { "--credit-period-us", "--credit-timeout-ms",
					      "--cmd-timeout-ms" };
	uint64_t *dst[3] = { &a->c.link.credit_period, &a->c.link.credit_timeout,
			     &a->c.cmd_timeout };

	for (unsigned k = 0; k < 3; k++) {
		unsigned __int128 u = (unsigned __int128)a->rt_ns[k] * a->link_mhz;

		if (!a->rt_set[k])
			continue;
		u = (u + 999) / 1000;
		if (u > UINT64_MAX / 4) {
			fprintf(stderr, "dnp-lab: %s: too long at %" PRIu64 " MHz\n", names[k],
				a->link_mhz);
			return -ERANGE;
		}
		*dst[k] = (uint64_t)u;
	}
	return 0;
}

/*
 * Parses the options of dnp-lab run into a. Returns 0, or the exit status
 * to end with: 0 after --help, 2 after a usage error (printed).
 */
static int run_parse_args(int argc, char **argv, struct run_args *a, bool *done)
{
	static int (*const parsers[])(struct run_args *, int, const char *) = {
		opt_traffic,
		opt_link,
		opt_fault,
		opt_run,
	};
	int opt;

	*done = false;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", run_opts, NULL)) != -1) {
		int ret = NOT_MINE;

		if (opt == OPT_HELP || opt == 'h') {
			usage(stdout);
			*done = true;
			return 0;
		}
		for (size_t i = 0; i < sizeof(parsers) / sizeof(parsers[0]) && ret == NOT_MINE; i++)
			ret = parsers[i](a, opt, optarg);
		if (ret == NOT_MINE) {
			usage(stderr);
			return 2;
		}
		if (ret) {
			fprintf(stderr, "dnp-lab: bad value for --%s: %s\n",
				run_opts[opt - OPT_TORUS].name, optarg);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "dnp-lab: unexpected argument %s\n", argv[optind]);
		return 2;
	}
	if (run_rt_units(a))
		return 2;
	for (unsigned i = 0; i < a->nfaults; i++)
		if (dnp_lab_fault_parse(a->faults[i], &a->c)) {
			fprintf(stderr, "dnp-lab: bad value for --fault: %s\n", a->faults[i]);
			return 2;
		}
	if (a->random_faults) {
		uint64_t v[3];

		/* C,K,T: three numbers (dnp_parse_sizes, which also takes a K/M suffix) */
		if (dnp_parse_sizes(a->random_faults, v, 3) != 3 || v[0] > UINT32_MAX ||
		    v[1] > UINT32_MAX ||
		    dnp_lab_random_faults(&a->c, (unsigned)v[0], (unsigned)v[1], v[2], a->c.seed)) {
			fprintf(stderr, "dnp-lab: bad value for --random-faults: %s\n",
				a->random_faults);
			return 2;
		}
	}
	return 0;
}

/* VCs and the credit thresholds that follow from the options given. */
static void run_derive(struct run_args *a)
{
	struct dnp_link_conf *l = &a->c.link;
	const uint32_t frame = dnp_pkt_frame_words(DNP_MAX_PAYLOAD);

	l->nvc = (uint8_t)a->vcs;
	a->c.vc_mode = a->vcs == 1 ? DNP_VC_SINGLE : DNP_VC_DATELINE;
	/* thresholds follow the FIFO as in the hardware (506 of 512) unless given */
	if (a->fifo_set && !a->red_set)
		l->t_red = (uint32_t)((uint64_t)l->fifo_words * 506 / 512);
	/* the engine needs a full frame of headroom above T_RED under stop-at-red */
	if (l->rule == DNP_START_STOP_AT_RED && !a->red_set && l->fifo_words >= frame + 2 &&
	    l->t_red + frame > l->fifo_words) {
		l->t_red = l->fifo_words - frame;
		a->red_set = true;
	}
	if ((a->fifo_set || a->red_set) && !a->yellow_set)
		l->t_yellow = l->t_red / 2;
}

static int cmd_run(int argc, char **argv)
{
	/* dnpd's default VCs (dnpd.h: DNP_MAX_VC), so the two agree without --vcs */
	struct run_args a = { .vcs = DNP_MAX_VC,
			      .link_mhz = LAB_LINK_MHZ_DEFAULT,
			      .host_ns = { LAB_HOST_EVENT_NS, LAB_HOST_REDUCE_NS } };
	struct dnp_lab *lab;
	bool done;
	int ret;

	dnp_lab_conf_default(&a.c);
	ret = run_parse_args(argc, argv, &a, &done);
	if (ret || done)
		return ret;
	run_derive(&a);
	/* the host model (--coll-host) in time units, rounded to the nearest */
	a.c.host_event = (a.host_ns[0] * a.link_mhz + 500) / 1000;
	a.c.host_reduce_kib = (a.host_ns[1] * a.link_mhz + 500) / 1000;
	if (a.c.routing == DNP_ROUTING_ADAPTIVE && a.vcs < DNP_ROUTE_ADAPT_MIN_VCS) {
		fprintf(stderr,
			"dnp-lab: --routing adaptive needs --vcs %u or more (2 escape VCs and "
			"an adaptive one), not %u\n",
			DNP_ROUTE_ADAPT_MIN_VCS, a.vcs);
		return 2;
	}
	if (a.c.routing == DNP_ROUTING_VALIANT && a.vcs < DNP_ROUTE_VALIANT_VCS) {
		fprintf(stderr,
			"dnp-lab: --routing valiant needs --vcs %u (2 VCs per phase), not %u\n",
			DNP_ROUTE_VALIANT_VCS, a.vcs);
		return 2;
	}
	ret = dnp_lab_create(&a.c, &lab);
	if (ret) {
		fprintf(stderr, "dnp-lab: cannot set up the lab: %s\n", strerror(-ret));
		if (ret == -EINVAL && a.c.link.rule == DNP_START_STOP_AT_RED)
			fprintf(stderr, "dnp-lab: stop-at-red needs T_RED + %u <= FIFO\n",
				dnp_pkt_frame_words(DNP_MAX_PAYLOAD));
		return 2;
	}
	ret = dnp_lab_run(lab);
	dnp_lab_report(lab, stdout, a.csv);
	dnp_lab_coll_report(lab, stdout); /* collectives (--coll) */
	if (a.c.timeline) {
		const uint64_t *tl;
		unsigned n = dnp_lab_timeline(lab, &tl);

		printf("timeline_start,bytes_delivered\n");
		for (unsigned i = 0; i < n; i++)
			printf("%" PRIu64 ",%" PRIu64 "\n", (uint64_t)i * a.c.timeline, tl[i]);
	}
	dnp_lab_destroy(lab);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "efficiency"))
		return dnp_lab_efficiency_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "sweep"))
		return dnp_lab_sweep_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		return dnp_version_print("dnp-lab");
	}
	fprintf(stderr, "dnp-lab: unknown command %s\n", argv[1]);
	usage(stderr);
	return 2;
}
