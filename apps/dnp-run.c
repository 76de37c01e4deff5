/* SPDX-License-Identifier: MIT */
/*
 * dnp-run — runs a program on every node of a SoftDNP torus on this machine.
 *
 *   dnp-run --torus XxYxZ [--transport shm|udp|dpdk|memif] [--netns] [--testbed PREFIX]
 *           [--dnpd PATH] [--timeout SEC] [--keep-going] -- PROGRAM ARGS...
 *
 * It creates a run directory, starts one dnpd per node, waits until every
 * daemon has announced that its links are up (DIR/node-<id>.up), then starts
 * PROGRAM once per node with DNP_SOCKET, DNP_NODE_ID, DNP_NNODES, DNP_TORUS
 * and DNP_COORD set, and copies each output line prefixed with "[x,y,z] ".
 * When the programs are done (or one fails, a daemon dies, the timeout
 * expires, or dnp-run gets SIGINT/SIGTERM) it stops every process it started
 * (SIGTERM, then SIGKILL after a grace period, always by PID) and removes the
 * run directory. Exit status: 0 if every program exited 0 and every daemon
 * lived until the end (or, with --daemon-death continue|restart, whatever
 * the daemons did); 1 otherwise; 2 on bad usage (a daemon that exits 2 before
 * the programs start refused an argument dnp-run passed on: 2 as well) or a
 * torus too large for this machine (run_guard.c; --oversubscribe).
 *
 * Whatever ends dnp-run, SIGKILL included, ends what it started: every
 * process is started through its guard mode (run_guard.c).
 *
 * Daemons that die (fault drills): DIR/node-<id>.pid holds each daemon's PID.
 * --daemon-death fail (default) stops the run; continue lets it go on
 * without that daemon; restart starts it again at once with the same
 * arguments (its log is appended to), and it rejoins the running torus
 * (docs/dnpd.md, "Rejoin"). So `kill -9 $(cat DIR/node-3.pid)` restarts node 3.
 * SIGUSR1 to dnp-run (programs find its PID in DNP_RUN_PID) starts again, with
 * the same arguments, every daemon that died and was not restarted (with
 * --daemon-death continue, or --drill): a drill restarts a killed daemon
 * when it chooses, e.g. once the supervisor is aware of the fault.
 *
 * Network namespaces (--transport dpdk, or --netns with udp; root only): the
 * torus is built with tests/testbed/netns.sh (one namespace PREFIX-<id> per
 * node, one veth pair per link), each daemon and each program runs inside its
 * node's namespace (ip netns exec), the daemon's [links] come from
 * "netns.sh ini", and the testbed is removed at the end (netns.sh down, which
 * also removes /var/run/dpdk/rte). --testbed PREFIX uses a testbed that
 * already exists (made by "netns.sh up", with NETNS_IPV4=1 for udp) and
 * leaves it in place. The run directory is in /dev/shm, which all
 * namespaces share (sockets, doorbells, logs). When the testbed has a
 * service network (netns.sh: namespace PREFIX-svc with a bridge, a "svc"
 * veth in every node's namespace), the LO|FA|MO supervisor runs in PREFIX-svc
 * and each node's dnp-hfm in its node's namespace, so cutting a node's "svc"
 * veth cuts its service network alone; programs get DNP_TESTBED=PREFIX.
 * Without one, the supervisor and the HFMs stay on this namespace's loopback.
 *
 * Single-threaded: one poll() loop over the output pipes and a signalfd.
 * This file: the options and main; dnp-run.h lists the other parts.
 */
#include "dnp-run.h"

#include "app_cli.h"
#include "dnp_parse.h"
#include "impair.h"
#include "torus.h"

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void msg(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " --torus XxYxZ [options] -- PROGRAM [ARGS...]\n"
		"  --torus XxYxZ         torus dimensions (e.g. 2x2x2)\n"
		"  --transport shm|udp|dpdk|memif  link transport of the daemons (default shm);\n"
		"                        memif: DPDK memif ports between daemons on this host;\n"
		"                        dpdk: every node in its own network namespace, af_packet\n"
		"                        on veth pairs (root)\n"
		"  --netns               udp: the same namespace torus, UDP over its veths\n"
		"  --testbed PREFIX      use the existing testbed PREFIX-<id> (netns.sh up ...\n"
		"                        PREFIX [DIR]) instead of building one; kept at the end\n"
		"  --testbed-dir DIR     where its PREFIX.topo is (default /tmp)\n"
		"  --netns-sh PATH       the testbed script (default $DNP_NETNS_SH, else the\n"
		"                        source tree's tests/testbed/netns.sh)\n"
		"  --eal \"ARGS\"          dpdk: EAL arguments for every dnpd (dnpd --eal)\n"
		"  --pin                 node i's daemon on the (i mod n)-th of the n CPUs\n"
		"                        dnp-run may use, its program on the next one\n"
		"  --dnpd PATH           daemon binary (default $DNPD, else the build tree's\n"
		"                        ../dnp-core/dnpd/dnpd, else dnpd next to dnp-run or in $PATH)\n"
		"  --timeout SEC         fail if the programs run longer (default 300, 0 = none)\n"
		"  --up-timeout SEC      how long daemons may take to bring links up (default 20)\n"
		"  --keep-going          let the other programs finish when one fails\n"
		"  --impair SPEC         link impairment for every dnpd (dnpd --impair, e.g.\n"
		"                        'loss=1%%,reorder=0.5%%,dup=0.1%%,corrupt=0.01%%,seed=7')\n"
		"  --routing dor|adaptive|valiant  routing of every dnpd (dnpd --routing;\n"
		"                        adaptive needs 3+ VCs, valiant 4, dnpd's default is 4;\n"
		"                        docs/routing.md)\n"
		"  --congestion off|ecn  congestion management of every dnpd (dnpd --congestion)\n"
		"  --arbitration off|strict|wrr  traffic-class arbitration of every dnpd\n"
		"                        (dnpd --arbitration; default off)\n"
		"  --low-payload BYTES   --top-reserve WORDS  top-class latency remedies of\n"
		"                        every dnpd (dnpd --low-payload, --top-reserve; need\n"
		"                        --arbitration strict or wrr; docs/routing.md)\n"
		"  --link-queue BYTES    byte-queue limit per link of every dnpd (dnpd\n"
		"                        --link-queue; needs --arbitration strict or wrr)\n"
		"  --daemon-death fail|continue|restart  when a dnpd dies: stop the run\n"
		"                        (default), go on without it, or start it again\n"
		"                        (it rejoins the torus; DIR/node-<id>.pid has its PID)\n"
		"  --udp-base-port P     first UDP port of the daemons (default: a free range)\n"
		"  --idle adaptive|busy  daemon idle policy (passed to dnpd)\n"
		"  --dnpd-arg ARG        extra argument for every dnpd (repeatable)\n"
		"  --keep-dir            keep the run directory (daemon logs) afterwards\n"
		"  --verbose             print the daemon logs at the end even on success\n"
		"  --no-lofamo           do not start the fault supervisor and the dnp-hfm of each\n"
		"                        node (started by default; DNP_SUPERVISOR is set for programs)\n"
		"                        namespace testbed: on its service network (PREFIX-svc)\n"
		"  --lofamo-arg ARG      extra argument for every dnp-hfm (repeatable)\n"
		"  --lofamo-groups N     a hierarchy: N group supervisors (dnp-supervisor --group),\n"
		"                        each for a run of consecutive node ids, report to the top\n"
		"                        one; each HFM reports to its group's (loopback only)\n"
		"  --drill               daemons and HFMs may die (fault drills): not a failure\n"
		"  --output all|raw|nodeN  all (default): every line with its node's prefix;\n"
		"                        raw: no prefix; nodeN: node N's standard output alone,\n"
		"                        without prefix (every node's stderr stays, prefixed)\n"
		"  --print-run-dir       say the run directory (stderr: \"dnp-run: run directory: DIR\")\n"
		"  --oversubscribe       start a torus larger than this machine holds (by default\n"
		"                        refused: about 32 MiB and one CPU share per node)\n"
		"  --help, --version\n"
		"SIGUSR1 to dnp-run (DNP_RUN_PID) restarts every daemon that died.\n"
		"PROGRAM without a slash is looked up next to dnp-run first, then in $PATH.\n"
		"Each instance gets DNP_SOCKET, DNP_NODE_ID, DNP_NNODES, DNP_TORUS, DNP_COORD.\n");
}

/* A decimal number 0..max (dnp_parse_u64_max); -EINVAL (and a message naming the option) otherwise. */
static int parse_uint(const char *opt, const char *s, unsigned long max, unsigned *out)
{
	uint64_t v;

	if (dnp_parse_u64_max(s, max, &v)) {
		msg("bad --%s '%s' (want 0..%lu)", opt, s, max);
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

/* --output all|raw|nodeN. 1, or -EINVAL (said). */
static int parse_output(struct run *r, const char *arg)
{
	uint64_t id;

	if (!strcmp(arg, "all"))
		r->output = OUTPUT_ALL;
	else if (!strcmp(arg, "raw"))
		r->output = OUTPUT_RAW;
	else if (!strncmp(arg, "node", 4) && !dnp_parse_u64_max(arg + 4, MAX_NODES - 1, &id))
		r->output = (int)id;
	else {
		msg("bad --output '%s' (all, raw or nodeN, e.g. node0)", arg);
		return -EINVAL;
	}
	return 1;
}

/* What the command line says nothing about. */
static void run_defaults(struct run *r)
{
	r->transport = "shm";
	r->output = OUTPUT_ALL;
	r->timeout_s = 300;
	r->up_timeout_s = 20;
	r->udp_base = -1;
}

/* Options that name the daemons' set-up (--testbed etc.). 1 handled, 0 not ours, -EINVAL. */
static int parse_netns_opt(struct run *r, int c, const char *arg)
{
	switch (c) {
	case 'N':
		r->netns = true;
		return 1;
	case 'B':
		r->testbed = arg;
		r->netns = true;
		return 1;
	case 'D':
		r->testbed_dir = arg;
		return 1;
	case 'S':
		snprintf(r->netns_sh, sizeof(r->netns_sh), "%s", arg);
		return 1;
	case 'E':
		r->eal = arg;
		return 1;
	default:
		return 0;
	}
}

/* Options about LO|FA|MO (docs/lofamo.md). 1 handled, 0 not ours, -EINVAL. */
static int parse_lofamo_opt(struct run *r, int c, const char *arg)
{
	switch (c) {
	case 'L':
		r->no_lofamo = true;
		return 1;
	case 'A':
		if (r->nlfm_args == 8) {
			msg("at most 8 --lofamo-arg");
			return -EINVAL;
		}
		r->lfm_args[r->nlfm_args++] = arg;
		return 1;
	case 'R':
		r->drill = true;
		return 1;
	case 'Y': {
		char *end;
		unsigned long g = strtoul(arg, &end, 10);

		if (*arg < '0' || *arg > '9' || *end || g < 1 || g > 64) {
			msg("bad --lofamo-groups '%s' (1 to 64 groups)", arg);
			return -EINVAL;
		}
		r->lfm_groups = (unsigned)g;
		return 1;
	}
	default:
		return 0;
	}
}

/* Long options without a short letter (getopt codes above any character). */
#define RUN_OPT_CONGESTION 0x100
#define OPT_ARBITRATION 0x101
#define RUN_OPT_LOW_PAYLOAD 0x102
#define RUN_OPT_TOP_RESERVE 0x103
#define RUN_OPT_LINK_QUEUE 0x104 /* h-dprio */

/* Options about the daemons. 1 handled, 0 not ours, -EINVAL. */
static int parse_daemon_opt(struct run *r, int c, const char *arg)
{
	unsigned v;

	switch (c) {
	case 'T':
		r->transport = arg;
		return 1;
	case 'd':
		r->dnpd = arg;
		return 1;
	case 'p':
		if (parse_uint("udp-base-port", arg, 65535, &v) < 0)
			return -EINVAL;
		r->udp_base = (int)v;
		return 1;
	case 'i':
		r->idle = arg;
		return 1;
	case 'a':
		if (r->nextra == MAX_EXTRA) {
			msg("at most %u --dnpd-arg", MAX_EXTRA);
			return -EINVAL;
		}
		r->extra[r->nextra++] = arg;
		return 1;
	case 'P':
		r->pin = true;
		return 1;
	case OPT_ARBITRATION: /* checked here, applied by dnpd */
		if (strcmp(arg, "off") && strcmp(arg, "strict") && strcmp(arg, "wrr")) {
			msg("bad --arbitration '%s' (off, strict or wrr)", arg);
			return -EINVAL;
		}
		if (r->nextra + 2 > MAX_EXTRA) {
			msg("too many daemon arguments");
			return -EINVAL;
		}
		r->extra[r->nextra++] = "--arbitration";
		r->extra[r->nextra++] = arg;
		return 1;
	case RUN_OPT_LOW_PAYLOAD: /* the range is dnpd's to check (conf.c) */
	case RUN_OPT_TOP_RESERVE:
		if (parse_uint(c == RUN_OPT_LOW_PAYLOAD ? "low-payload" : "top-reserve", arg, 65535,
			       &v) < 0)
			return -EINVAL;
		if (r->nextra + 2 > MAX_EXTRA) {
			msg("too many daemon arguments");
			return -EINVAL;
		}
		r->extra[r->nextra++] =
			c == RUN_OPT_LOW_PAYLOAD ? "--low-payload" : "--top-reserve";
		r->extra[r->nextra++] = arg;
		return 1;
	case RUN_OPT_LINK_QUEUE: /* the range is dnpd's to check (conf.c) */
		if (parse_uint("link-queue", arg, UINT32_MAX, &v) < 0)
			return -EINVAL;
		if (r->nextra + 2 > MAX_EXTRA) {
			msg("too many daemon arguments");
			return -EINVAL;
		}
		r->extra[r->nextra++] = "--link-queue";
		r->extra[r->nextra++] = arg;
		return 1;
	default:
		v = (unsigned)parse_netns_opt(r, c, arg);
		return v ? 1 : parse_lofamo_opt(r, c, arg);
	}
}

/* Options about the run itself. 1 handled, 0 not ours, -EINVAL. */
static int parse_run_opt(struct run *r, int c, const char *arg, bool *have_torus, bool *have_up)
{
	struct dnp_impair_conf imp;
	struct dnp_torus t;

	switch (c) {
	case 't':
		if (dnp_torus_parse(arg, &t) < 0) {
			msg("bad --torus '%s' (want XxYxZ, each 1..256)", arg);
			return -EINVAL;
		}
		for (int i = 0; i < 3; i++)
			r->dim[i] = t.dim[i];
		*have_torus = true;
		return 1;
	case 'o':
		return parse_uint("timeout", arg, 1000000, &r->timeout_s) < 0 ? -EINVAL : 1;
	case 'u':
		*have_up = true;
		return parse_uint("up-timeout", arg, 1000000, &r->up_timeout_s) < 0 ? -EINVAL : 1;
	case 'k':
		r->keep_going = true;
		return 1;
	case 'X':
		if (!strcmp(arg, "fail"))
			r->daemon_death = DEATH_FAIL;
		else if (!strcmp(arg, "continue"))
			r->daemon_death = DEATH_CONTINUE;
		else if (!strcmp(arg, "restart"))
			r->daemon_death = DEATH_RESTART;
		else {
			msg("bad --daemon-death '%s' (fail, continue or restart)", arg);
			return -EINVAL;
		}
		return 1;
	case 'J':
		if (dnp_impair_parse(arg, &imp) < 0) {
			msg("bad --impair '%s' (dnpd --impair: dir=all|xp|..|zm,loss=P%%,corrupt=P%%,"
			    "dup=P%%,reorder=P%%,delay=Nus,seed=N; docs/dnpd.md)",
			    arg);
			return -EINVAL;
		}
		if (r->nextra + 2 > MAX_EXTRA) {
			msg("too many daemon arguments");
			return -EINVAL;
		}
		r->extra[r->nextra++] = "--impair";
		r->extra[r->nextra++] = arg;
		return 1;
	case 'G': /* checked here, applied by dnpd */
		if (strcmp(arg, "dor") && strcmp(arg, "adaptive") && strcmp(arg, "valiant")) {
			msg("bad --routing '%s' (dor, adaptive or valiant)", arg);
			return -EINVAL;
		}
		if (r->nextra + 2 > MAX_EXTRA) {
			msg("too many daemon arguments");
			return -EINVAL;
		}
		r->extra[r->nextra++] = "--routing";
		r->extra[r->nextra++] = arg;
		return 1;
	case RUN_OPT_CONGESTION: /* checked here, applied by dnpd */
		if (strcmp(arg, "off") && strcmp(arg, "ecn")) {
			msg("bad --congestion '%s' (off or ecn)", arg);
			return -EINVAL;
		}
		if (r->nextra + 2 > MAX_EXTRA) {
			msg("too many daemon arguments");
			return -EINVAL;
		}
		r->extra[r->nextra++] = "--congestion";
		r->extra[r->nextra++] = arg;
		return 1;
	case 'K':
		r->keep_dir = true;
		return 1;
	case 'O':
		return parse_output(r, arg);
	case 'Q':
		r->print_dir = true;
		return 1;
	case 'F':
		r->oversubscribe = true;
		return 1;
	case 'v':
		r->verbose = true;
		return 1;
	default:
		return 0;
	}
}

/* After the options: PROGRAM, and the combinations that cannot work. */
static int check_args(struct run *r, bool have_torus, bool have_up)
{
	if (!have_torus) {
		msg("--torus is required");
		return -EINVAL;
	}
	r->n = r->dim[0] * r->dim[1] * r->dim[2];
	if (!strcmp(r->transport, "dpdk"))
		r->netns = true;
	if (r->netns && strcmp(r->transport, "dpdk") && strcmp(r->transport, "udp")) {
		msg("--netns/--testbed work with --transport dpdk or udp, not '%s'", r->transport);
		return -EINVAL;
	}
	if (r->testbed && (!*r->testbed || strlen(r->testbed) >= sizeof(r->ns_prefix))) {
		msg("bad --testbed '%s'", r->testbed);
		return -EINVAL;
	}
	/* Eight EAL start-ups (0.2-0.35 s of CPU each) share two cores. */
	if (r->netns && !have_up)
		r->up_timeout_s = 60;
	if (r->n > MAX_NODES) {
		msg("%u nodes: at most %u on one machine", r->n, MAX_NODES);
		return -EINVAL;
	}
	if (r->lfm_groups && (r->netns || r->no_lofamo || r->lfm_groups > r->n)) {
		msg("--lofamo-groups: at most one group per node, on the loopback service network "
		    "(not with --netns, dpdk or --no-lofamo)");
		return -EINVAL;
	}
	if (r->output >= 0 && (unsigned)r->output >= r->n) {
		msg("--output node%d: the torus has nodes 0..%u", r->output, r->n - 1);
		return -EINVAL;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct run *r)
{
	static const struct option lo[] = {
		{ "torus", required_argument, NULL, 't' },
		{ "transport", required_argument, NULL, 'T' },
		{ "dnpd", required_argument, NULL, 'd' },
		{ "timeout", required_argument, NULL, 'o' },
		{ "up-timeout", required_argument, NULL, 'u' },
		{ "keep-going", no_argument, NULL, 'k' },
		{ "daemon-death", required_argument, NULL, 'X' },
		{ "impair", required_argument, NULL, 'J' },
		{ "routing", required_argument, NULL, 'G' },
		{ "congestion", required_argument, NULL, RUN_OPT_CONGESTION },
		{ "arbitration", required_argument, NULL, OPT_ARBITRATION },
		{ "low-payload", required_argument, NULL, RUN_OPT_LOW_PAYLOAD },
		{ "top-reserve", required_argument, NULL, RUN_OPT_TOP_RESERVE },
		{ "link-queue", required_argument, NULL, RUN_OPT_LINK_QUEUE },
		{ "udp-base-port", required_argument, NULL, 'p' },
		{ "idle", required_argument, NULL, 'i' },
		{ "dnpd-arg", required_argument, NULL, 'a' },
		{ "keep-dir", no_argument, NULL, 'K' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "netns", no_argument, NULL, 'N' },
		{ "testbed", required_argument, NULL, 'B' },
		{ "testbed-dir", required_argument, NULL, 'D' },
		{ "netns-sh", required_argument, NULL, 'S' },
		{ "eal", required_argument, NULL, 'E' },
		{ "pin", no_argument, NULL, 'P' },
		{ "no-lofamo", no_argument, NULL, 'L' },
		{ "lofamo-arg", required_argument, NULL, 'A' },
		{ "drill", no_argument, NULL, 'R' },
		{ "lofamo-groups", required_argument, NULL, 'Y' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "output", required_argument, NULL, 'O' },
		{ "print-run-dir", no_argument, NULL, 'Q' },
		{ "oversubscribe", no_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_torus = false, have_up = false;
	int c, ret;

	run_defaults(r);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:t:T:d:o:u:kp:i:a:KvNB:D:S:E:PLA:RG:Y:X:J:hVO:QF", lo,
				NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (c == 'V')
			exit(app_cli_version(PROG));
		if (c == ':' || c == '?')
			exit(app_cli_getopt_error(PROG, usage, c, argv));
		ret = parse_run_opt(r, c, optarg, &have_torus, &have_up);
		if (ret == 0)
			ret = parse_daemon_opt(r, c, optarg);
		if (ret <= 0)
			return -EINVAL; /* a bad value (said why) */
	}
	if (optind >= argc) {
		msg("no PROGRAM given (put it after --)");
		return -EINVAL;
	}
	r->argv = &argv[optind];
	return check_args(r, have_torus, have_up);
}

/* The signals dnp-run reads from a signalfd, and DNP_RUN_PID. 0 or -errno (said). */
static int setup_signals(struct run *r)
{
	char pid[24];
	sigset_t mask;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, &r->oldmask);
	r->sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (r->sfd < 0) {
		msg("signalfd: %s", strerror(errno));
		return -errno;
	}
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("DNP_RUN_PID", pid, 1); /* for the programs: SIGUSR1 restarts dead daemons */
	return 0;
}

/* The nodes and where their output goes (--output). 0 or -ENOMEM. */
static int setup_nodes(struct run *r)
{
	r->nodes = calloc(r->n, sizeof(*r->nodes));
	if (!r->nodes)
		return -ENOMEM;
	for (unsigned id = 0; id < r->n; id++) {
		struct node *nd = &r->nodes[id];

		nd->x = id % r->dim[0];
		nd->y = (id / r->dim[0]) % r->dim[1];
		nd->z = id / (r->dim[0] * r->dim[1]);
		snprintf(nd->prefix, sizeof(nd->prefix), "[%u,%u,%u] ", nd->x, nd->y, nd->z);
		nd->s[0].fd = nd->s[1].fd = -1;
		nd->s[0].out = stdout;
		nd->s[1].out = stderr;
		nd->s[0].prefix = r->output == OUTPUT_ALL ? nd->prefix : "";
		nd->s[1].prefix = r->output == OUTPUT_RAW ? "" : nd->prefix;
		nd->s[0].drop = r->output >= 0 && (unsigned)r->output != id;
		nd->s[0].buf = malloc(LINE_MAX_BUF);
		nd->s[1].buf = malloc(LINE_MAX_BUF);
		if (!nd->s[0].buf || !nd->s[1].buf)
			return -ENOMEM;
	}
	return 0;
}

/* Testbed, daemons, LO|FA|MO, links up, programs: 0 or -errno (the run then failed). */
static int start_run(struct run *r)
{
	int e = r->netns ? testbed_up(r) : 0;

	if (e == 0) {
		read_signals(r); /* a ^C during the testbed's set-up */
		if (r->interrupted)
			e = -EINTR;
	}
	if (e == 0)
		e = start_daemons(r);
	if (e == 0 && !r->no_lofamo)
		e = lofamo_start(r);
	if (e == 0)
		e = wait_up(r);
	if (e == 0 && !r->failed)
		e = start_apps(r);
	return e;
}

int main(int argc, char **argv)
{
	static struct run run;
	struct run *r = &run;
	unsigned id;

	if (argc > 1 && !strcmp(argv[1], RUN_GUARD_OPT))
		return guard_main(argc, argv);
	if (parse_args(argc, argv, r) < 0) {
		usage(stderr);
		return 2;
	}
	if (check_fit(r) < 0)
		return 2;
	if (strcmp(r->transport, "shm") && strcmp(r->transport, "udp") &&
	    strcmp(r->transport, "dpdk") && strcmp(r->transport, "memif"))
		msg("note: transport '%s' passed to dnpd as is", r->transport);
	if (resolve_paths(r) < 0 || guard_init() < 0)
		return 1;
	if (r->pin && sched_getaffinity(0, sizeof(r->cpus), &r->cpus) < 0) {
		msg("--pin: sched_getaffinity: %s", strerror(errno));
		return 1;
	}
	if (setup_signals(r) < 0 || setup_nodes(r) < 0 || make_run_dir(r) < 0)
		return 1;
	if (r->print_dir)
		msg("run directory: %s", r->dir);
	if (start_run(r) < 0)
		r->failed = true;
	if (r->failed)
		abort_apps(r, NULL);
	main_loop(r);
	lofamo_stop(r);
	teardown(r);
	testbed_down(r);
	if (r->failed || r->verbose)
		dump_logs(r);
	if (r->failed)
		summary(r);
	remove_run_dir(r);
	for (id = 0; id < r->n; id++) {
		free(r->nodes[id].s[0].buf);
		free(r->nodes[id].s[1].buf);
	}
	free(r->nodes);
	close(r->sfd);
	if (r->interrupted)
		return 130;
	if (r->usage_error)
		return 2;
	return r->failed ? 1 : 0;
}
