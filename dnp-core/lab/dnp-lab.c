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

#include "lab.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dnp-lab run [options]\n"
		"       dnp-lab efficiency [options]\n"
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
		"  --rule vct|stop-at-red packet start rule (vct)\n"
		"  --credit-model hw|exact\n"
		"  --vcs 1|2              virtual channels; 1 = no dateline (can deadlock)\n"
		"  --loss P --corrupt P --dup P --reorder P   per-frame fault probabilities\n"
		"  --silence NODE:DIR[@T] drop every frame node NODE sends on DIR (0..5) from T\n"
		"  --rto T --credit-timeout T --max-retries N --window N --max-commands N\n"
		"  --seed S               PRNG seed (1)\n"
		"  --max-time T           stop (failure) at this virtual time\n"
		"  --stall T              no progress for T time units = deadlock\n"
		"  --csv                  machine-readable output\n"
		"  --verbose              print the first verification errors\n");
}

enum {
	OPT_TORUS = 256, OPT_PATTERN, OPT_SIZES, OPT_COUNT, OPT_HOTSPOT, OPT_SHIFT, OPT_LATENCY,
	OPT_BW, OPT_FIFO, OPT_TRED, OPT_TYELLOW, OPT_CREDIT_PERIOD, OPT_RULE, OPT_CREDIT_MODEL,
	OPT_VCS, OPT_LOSS, OPT_CORRUPT, OPT_DUP, OPT_REORDER, OPT_SILENCE, OPT_RTO,
	OPT_CREDIT_TIMEOUT, OPT_MAX_RETRIES, OPT_WINDOW, OPT_MAX_COMMANDS, OPT_SEED, OPT_MAX_TIME,
	OPT_STALL, OPT_CSV, OPT_VERBOSE, OPT_HELP,
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
	{ NULL, 0, NULL, 0 },
};

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return (end == s || *end || errno || *s == '-') ? -EINVAL : 0;
}

static int parse_u32(const char *s, uint32_t *v)
{
	uint64_t x;

	if (parse_u64(s, &x) || x > UINT32_MAX)
		return -EINVAL;
	*v = (uint32_t)x;
	return 0;
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

static int parse_silence(const char *s, struct dnp_lab_conf *c)
{
	unsigned node, dir;
	unsigned long long at = 0;
	int n;

	if (sscanf(s, "%u:%u%n", &node, &dir, &n) != 2 || dir >= DNP_NDIRS || node > 0xffffff)
		return -EINVAL;
	if (s[n] == '@') {
		if (sscanf(s + n + 1, "%llu", &at) != 1)
			return -EINVAL;
	} else if (s[n]) {
		return -EINVAL;
	}
	c->silence_node = (int)node;
	c->silence_dir = dir;
	c->silence_at = at;
	c->allow_errors = true;
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	struct dnp_lab_conf c;
	struct dnp_lab *lab;
	bool csv = false, fifo_set = false, red_set = false, yellow_set = false;
	uint32_t vcs = 2, u32 = 0;
	uint64_t u64;
	int opt, ret;

	dnp_lab_conf_default(&c);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", run_opts, NULL)) != -1) {
		ret = 0;
		switch (opt) {
		case OPT_TORUS:
			ret = dnp_torus_parse(optarg, &c.torus);
			break;
		case OPT_PATTERN:
			ret = dnp_lab_pattern_parse(optarg, &c.pattern);
			break;
		case OPT_SIZES:
			ret = dnp_lab_parse_sizes(optarg, &c);
			break;
		case OPT_COUNT:
			ret = parse_u32(optarg, &u32);
			c.count = u32;
			break;
		case OPT_HOTSPOT:
			ret = parse_u32(optarg, &u32);
			c.hotspot = u32;
			break;
		case OPT_SHIFT:
			ret = sscanf(optarg, "%d,%d,%d", &c.shift[0], &c.shift[1], &c.shift[2]) == 3 ?
				      0 :
				      -EINVAL;
			break;
		case OPT_LATENCY:
			ret = parse_u64(optarg, &c.latency);
			break;
		case OPT_BW:
			ret = parse_u32(optarg, &c.bw);
			break;
		case OPT_FIFO:
			ret = parse_u32(optarg, &c.link.fifo_words);
			fifo_set = true;
			break;
		case OPT_TRED:
			ret = parse_u32(optarg, &c.link.t_red);
			red_set = true;
			break;
		case OPT_TYELLOW:
			ret = parse_u32(optarg, &c.link.t_yellow);
			yellow_set = true;
			break;
		case OPT_CREDIT_PERIOD:
			ret = parse_u64(optarg, &c.link.credit_period);
			break;
		case OPT_RULE:
			if (!strcmp(optarg, "vct"))
				c.link.rule = DNP_START_VCT;
			else if (!strcmp(optarg, "stop-at-red"))
				c.link.rule = DNP_START_STOP_AT_RED;
			else
				ret = -EINVAL;
			break;
		case OPT_CREDIT_MODEL:
			if (!strcmp(optarg, "hw"))
				c.link.credit_model = DNP_CREDIT_HW;
			else if (!strcmp(optarg, "exact"))
				c.link.credit_model = DNP_CREDIT_EXACT;
			else
				ret = -EINVAL;
			break;
		case OPT_VCS:
			ret = parse_u32(optarg, &vcs);
			if (!ret && (vcs < 1 || vcs > DNP_MAX_VC))
				ret = -EINVAL;
			break;
		case OPT_LOSS:
			ret = parse_prob(optarg, &c.loss);
			break;
		case OPT_CORRUPT:
			ret = parse_prob(optarg, &c.corrupt);
			break;
		case OPT_DUP:
			ret = parse_prob(optarg, &c.dup);
			break;
		case OPT_REORDER:
			ret = parse_prob(optarg, &c.reorder);
			break;
		case OPT_SILENCE:
			ret = parse_silence(optarg, &c);
			break;
		case OPT_RTO:
			ret = parse_u64(optarg, &c.link.rto);
			break;
		case OPT_CREDIT_TIMEOUT:
			ret = parse_u64(optarg, &c.link.credit_timeout);
			break;
		case OPT_MAX_RETRIES:
			ret = parse_u32(optarg, &c.link.max_retries);
			break;
		case OPT_WINDOW:
			ret = parse_u32(optarg, &c.link.window);
			break;
		case OPT_MAX_COMMANDS:
			ret = parse_u32(optarg, &c.max_commands);
			break;
		case OPT_SEED:
			ret = parse_u64(optarg, &c.seed);
			break;
		case OPT_MAX_TIME:
			ret = parse_u64(optarg, &c.max_time);
			break;
		case OPT_STALL:
			ret = parse_u64(optarg, &c.stall_limit);
			break;
		case OPT_CSV:
			csv = true;
			break;
		case OPT_VERBOSE:
			c.verbose = true;
			break;
		case OPT_HELP:
		case 'h':
			usage(stdout);
			return 0;
		default:
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
	c.link.nvc = (uint8_t)vcs;
	c.vc_mode = vcs == 1 ? DNP_VC_SINGLE : DNP_VC_DATELINE;
	/* thresholds follow the FIFO as in the hardware (506 of 512) unless given */
	if (fifo_set && !red_set) {
		u64 = (uint64_t)c.link.fifo_words * 506 / 512;
		c.link.t_red = (uint32_t)u64;
	}
	/* the engine needs a full frame of headroom above T_RED under stop-at-red */
	if (c.link.rule == DNP_START_STOP_AT_RED && !red_set &&
	    c.link.fifo_words >= dnp_pkt_frame_words(DNP_MAX_PAYLOAD) + 2 &&
	    c.link.t_red + dnp_pkt_frame_words(DNP_MAX_PAYLOAD) > c.link.fifo_words) {
		c.link.t_red = c.link.fifo_words - dnp_pkt_frame_words(DNP_MAX_PAYLOAD);
		red_set = true;
	}
	if ((fifo_set || red_set) && !yellow_set)
		c.link.t_yellow = c.link.t_red / 2;
	ret = dnp_lab_create(&c, &lab);
	if (ret) {
		fprintf(stderr, "dnp-lab: cannot set up the lab: %s\n", strerror(-ret));
		if (ret == -EINVAL && c.link.rule == DNP_START_STOP_AT_RED)
			fprintf(stderr, "dnp-lab: stop-at-red needs T_RED + %u <= FIFO\n",
				dnp_pkt_frame_words(DNP_MAX_PAYLOAD));
		return 2;
	}
	ret = dnp_lab_run(lab);
	dnp_lab_report(lab, stdout, csv);
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
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "dnp-lab: unknown command %s\n", argv[1]);
	usage(stderr);
	return 2;
}
