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
 * the daemons did); 1 otherwise; 2 on bad usage.
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
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROG "dnp-run"
#define LINE_MAX_BUF 65536u
/*
 * How long a daemon or program may take to stop after SIGTERM before it is
 * killed. A DPDK daemon releases its ports and the EAL on the way out, which
 * on a loaded 2-core machine running eight of them has taken more than 3 s.
 */
#define GRACE_MS 10000
#define DRAIN_MS 2000
#define MAX_NODES 4096u
#define MAX_EXTRA 32
#define MAX_RESTARTS 1000u

enum {
	DEATH_FAIL = 0,
	DEATH_CONTINUE,
	DEATH_RESTART
};

extern char **environ;

struct stream {
	int fd;    /* read end of the pipe, -1 once closed */
	FILE *out; /* where its lines go */
	char *buf;
	size_t len;
};

struct node {
	unsigned x, y, z;
	char prefix[48];
	pid_t dpid; /* its dnpd, 0 once reaped */
	int dstatus;
	bool dexpected;    /* we asked it to stop */
	unsigned restarts; /* --daemon-death restart: times it was started again */
	pid_t apid;        /* the program, 0 once reaped (or never started) */
	pid_t apgid;       /* its process group (= its first PID), kept after reaping */
	int astatus;
	bool astarted, aexited;
	struct stream s[2]; /* stdout, stderr */
};

struct run {
	unsigned dim[3], n;
	const char *transport, *idle, *dnpd;
	bool netns;   /* daemons and programs in the testbed's namespaces */
	bool ns_made; /* we ran "netns.sh up": run "down" at the end */
	const char *testbed, *testbed_dir, *eal;
	char ns_prefix[64];
	char topo_dir[PATH_MAX];
	char netns_sh[PATH_MAX + 64];
	char ip_path[PATH_MAX + 64];
	const char *extra[MAX_EXTRA];
	unsigned nextra;
	int udp_base;
	unsigned timeout_s, up_timeout_s;
	bool keep_going, keep_dir, verbose, pin;
	int daemon_death; /* DEATH_* */
	cpu_set_t cpus;   /* dnp-run's own affinity (--pin hands these out) */
	char dir[PATH_MAX];
	char selfdir[PATH_MAX];
	char dnpd_path[PATH_MAX + 64];
	char prog_path[PATH_MAX + 64];
	char **argv; /* PROGRAM ARGS... */
	struct node *nodes;
	int sfd;
	sigset_t oldmask;
	bool failed, interrupted, aborting;
	uint64_t abort_at;
	/* LO|FA|MO (docs/lofamo.md): a supervisor and one dnp-hfm per node */
	bool no_lofamo, drill;
	const char *lfm_args[8];
	unsigned nlfm_args;
	char sup_addr[32];
	char svc_ns[80]; /* the testbed's service network namespace ("" if none) */
	char svc_ip[16]; /* the supervisor's address there */
	unsigned svc_port;
	pid_t sup_pid;
	pid_t *hfm_pid;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void msg(const char *fmt, ...)
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
		"  --drill               daemons and HFMs may die (fault drills): not a failure\n"
		"SIGUSR1 to dnp-run (DNP_RUN_PID) restarts every daemon that died.\n"
		"PROGRAM without a slash is looked up next to dnp-run first, then in $PATH.\n"
		"Each instance gets DNP_SOCKET, DNP_NODE_ID, DNP_NNODES, DNP_TORUS, DNP_COORD.\n");
}

static int parse_torus(const char *s, unsigned dim[3])
{
	int n = 0;

	if (sscanf(s, "%ux%ux%u%n", &dim[0], &dim[1], &dim[2], &n) != 3 || s[n])
		return -EINVAL;
	if (!dim[0] || !dim[1] || !dim[2] || dim[0] > 256 || dim[1] > 256 || dim[2] > 256)
		return -EINVAL;
	return 0;
}

/* A decimal number 0..max; -EINVAL (and a message naming the option) otherwise. */
static int parse_uint(const char *opt, const char *s, unsigned long max, unsigned *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max || s[0] == '-') {
		msg("bad --%s '%s' (want 0..%lu)", opt, s, max);
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

/* What the command line says nothing about. */
static void run_defaults(struct run *r)
{
	r->transport = "shm";
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
	default:
		return 0;
	}
}

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
	default:
		v = (unsigned)parse_netns_opt(r, c, arg);
		return v ? 1 : parse_lofamo_opt(r, c, arg);
	}
}

/* Options about the run itself. 1 handled, 0 not ours, -EINVAL. */
static int parse_run_opt(struct run *r, int c, const char *arg, bool *have_torus, bool *have_up)
{
	switch (c) {
	case 't':
		if (parse_torus(arg, r->dim) < 0) {
			msg("bad --torus '%s' (want XxYxZ, each 1..256)", arg);
			return -EINVAL;
		}
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
	case 'J': /* dnpd checks the spec */
		if (r->nextra + 2 > MAX_EXTRA) {
			msg("too many daemon arguments");
			return -EINVAL;
		}
		r->extra[r->nextra++] = "--impair";
		r->extra[r->nextra++] = arg;
		return 1;
	case 'K':
		r->keep_dir = true;
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_torus = false, have_up = false;
	int c, ret;

	run_defaults(r);
	while ((c = getopt_long(argc, argv, "+t:T:d:o:u:kp:i:a:KvNB:D:S:E:PLA:RX:J:h", lo, NULL)) !=
	       -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		ret = parse_run_opt(r, c, optarg, &have_torus, &have_up);
		if (ret == 0)
			ret = parse_daemon_opt(r, c, optarg);
		if (ret <= 0)
			return -EINVAL; /* a bad value (said why), or an unknown option (getopt said) */
	}
	if (optind >= argc) {
		msg("no PROGRAM given (put it after --)");
		return -EINVAL;
	}
	r->argv = &argv[optind];
	return check_args(r, have_torus, have_up);
}

/* out = a "/" b; false when it does not fit. */
static bool path_join(char *out, size_t len, const char *a, const char *b)
{
	int n = snprintf(out, len, "%s/%s", a, b);

	return n > 0 && (size_t)n < len;
}

static bool is_exec(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* Looks name up in $PATH; true with out filled when found. */
static bool find_in_path(const char *name, char *out, size_t len)
{
	char *path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin"), *dir;
	char *save = NULL;
	bool found = false;

	if (!path)
		return false;
	for (dir = strtok_r(path, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save))
		found = path_join(out, len, *dir ? dir : ".", name) && is_exec(out);
	free(path);
	return found;
}

static int resolve_paths(struct run *r)
{
	char self[PATH_MAX], *slash;
	const char *prog = r->argv[0];
	ssize_t n;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		msg("cannot read /proc/self/exe: %s", strerror(errno));
		return -errno;
	}
	self[n] = 0;
	slash = strrchr(self, '/');
	*slash = 0;
	snprintf(r->selfdir, sizeof(r->selfdir), "%s", self[0] ? self : "/");

	if (r->dnpd)
		snprintf(r->dnpd_path, sizeof(r->dnpd_path), "%s", r->dnpd);
	else if (getenv("DNPD") && *getenv("DNPD"))
		snprintf(r->dnpd_path, sizeof(r->dnpd_path), "%s", getenv("DNPD"));
	else if (!path_join(r->dnpd_path, sizeof(r->dnpd_path), r->selfdir,
			    "../dnp-core/dnpd/dnpd") ||
		 !is_exec(r->dnpd_path))
		/* Installed: dnpd sits next to dnp-run (or is found in $PATH below). */
		path_join(r->dnpd_path, sizeof(r->dnpd_path), r->selfdir, "dnpd");
	if (!is_exec(r->dnpd_path) && !r->dnpd && !(getenv("DNPD") && *getenv("DNPD")))
		find_in_path("dnpd", r->dnpd_path, sizeof(r->dnpd_path));
	if (!is_exec(r->dnpd_path)) {
		msg("daemon '%s' is not an executable file (build dnpd, or use --dnpd / $DNPD)",
		    r->dnpd_path);
		return -ENOENT;
	}

	if (r->netns) {
		if (!r->netns_sh[0] && getenv("DNP_NETNS_SH") && *getenv("DNP_NETNS_SH"))
			snprintf(r->netns_sh, sizeof(r->netns_sh), "%s", getenv("DNP_NETNS_SH"));
		if (!r->netns_sh[0])
			snprintf(r->netns_sh, sizeof(r->netns_sh), "%s", DNP_NETNS_SH_DEFAULT);
		if (!is_exec(r->netns_sh) && !r->testbed) {
			msg("testbed script '%s' is not executable (use --netns-sh or $DNP_NETNS_SH)",
			    r->netns_sh);
			return -ENOENT;
		}
		if (!find_in_path("ip", r->ip_path, sizeof(r->ip_path)) &&
		    !is_exec(strcpy(r->ip_path, "/usr/sbin/ip")) &&
		    !is_exec(strcpy(r->ip_path, "/sbin/ip"))) {
			msg("'ip' (iproute2) not found: network namespaces need it");
			return -ENOENT;
		}
	}

	if (strchr(prog, '/')) {
		snprintf(r->prog_path, sizeof(r->prog_path), "%s", prog);
		if (is_exec(r->prog_path))
			return 0;
		msg("program '%s' is not an executable file", prog);
		return -ENOENT;
	}
	/* The built apps first (dnp-run lives in the apps build directory), then $PATH. */
	if (path_join(r->prog_path, sizeof(r->prog_path), r->selfdir, prog) &&
	    is_exec(r->prog_path))
		return 0;
	if (find_in_path(prog, r->prog_path, sizeof(r->prog_path)))
		return 0;
	msg("program '%s' not found in %s nor in $PATH", prog, r->selfdir);
	return -ENOENT;
}

static int make_run_dir(struct run *r)
{
	const char *base = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	/*
	 * Prefer a tmpfs: the daemons may keep shared-memory files next to their
	 * sockets. Namespaced nodes: /dev/shm, the same for every namespace.
	 */
	if (r->netns || !base || !*base || stat(base, &st) < 0 || !S_ISDIR(st.st_mode)) {
		base = "/dev/shm";
		if (stat(base, &st) < 0 || !S_ISDIR(st.st_mode) || access(base, W_OK) < 0)
			base = "/tmp";
	}
	snprintf(r->dir, sizeof(r->dir), "%s/dnp-run.XXXXXX", base);
	if (!mkdtemp(r->dir)) {
		msg("mkdtemp %s: %s", r->dir, strerror(errno));
		r->dir[0] = 0;
		return -errno;
	}
	return 0;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	if (remove(p) < 0 && errno != ENOENT)
		msg("cannot remove %s: %s", p, strerror(errno));
	return 0;
}

static void remove_run_dir(struct run *r)
{
	if (!r->dir[0])
		return;
	if (r->keep_dir) {
		msg("run directory kept: %s", r->dir);
		return;
	}
	nftw(r->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * Finds a range of UDP ports on 127.0.0.1 that can all be bound now. The
 * range stays below the kernel's ephemeral ports (32768 and up by default):
 * the fault managers, the supervisor and any other program on the machine
 * bind ephemeral ports at any time, and one of them taking a daemon's port
 * between this check and the daemon's bind would stop the daemon.
 */
static int pick_udp_base(unsigned span)
{
	enum {
		LOW = 20000,
		HIGH = 32768
	};
	struct sockaddr_in sa;
	unsigned attempt, i, slots;
	int base, s;
	bool ok;

	slots = span < HIGH - LOW ? (HIGH - LOW - span) / 64u + 1u : 1u;
	for (attempt = 0; attempt < 50; attempt++) {
		base = LOW + (int)((getpid() + attempt * 7919u) % slots) * 64;
		ok = true;
		for (i = 0; i < span && ok; i++) {
			s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			if (s < 0)
				return base;
			memset(&sa, 0, sizeof(sa));
			sa.sin_family = AF_INET;
			sa.sin_port = htons((uint16_t)(base + (int)i));
			sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			ok = bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
			close(s);
		}
		if (ok)
			return base;
	}
	return 20000;
}

static int spawn_attr(posix_spawnattr_t *at)
{
	sigset_t def;

	posix_spawnattr_init(at);
	sigemptyset(&def);
	sigaddset(&def, SIGINT);
	sigaddset(&def, SIGTERM);
	sigaddset(&def, SIGHUP);
	sigaddset(&def, SIGCHLD);
	sigaddset(&def, SIGPIPE);
	sigaddset(&def, SIGUSR1);
	posix_spawnattr_setsigdefault(at, &def);
	sigemptyset(&def);
	posix_spawnattr_setsigmask(at, &def);
	/*
	 * Each child leads its own process group: a terminal's ^C reaches only
	 * dnp-run, which stops everything in order, and a program's own
	 * children (e.g. dnp_check's victim) are stopped with it.
	 */
	posix_spawnattr_setpgroup(at, 0);
	return posix_spawnattr_setflags(at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
						    POSIX_SPAWN_SETPGROUP);
}

/* Runs argv to completion (stdout to out_path if not NULL); returns its exit status or -errno. */
static int run_wait(struct run *r, const char *const *argv, const char *out_path, char **env)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int e, status;
	pid_t pid;

	spawn_attr(&at);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (out_path)
		posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC,
						 0644);
	e = posix_spawn(&pid, argv[0], &fa, &at, (char *const *)argv, env ? env : environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (e) {
		msg("cannot start %s: %s", argv[0], strerror(e));
		return -e;
	}
	/* SIGCHLD is blocked (signalfd): this wait is the only reaper of pid. */
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * Builds the namespace torus (or checks the --testbed one) and writes each
 * daemon's [links] section to DIR/node-<id>.ini.
 */
static int testbed_up(struct run *r)
{
	char torus[64], id_s[16], ini[PATH_MAX + 32], topo[PATH_MAX + 80], line[128];
	const char *argv[8];
	unsigned id, dx, dy, dz;
	FILE *f;
	int st;

	if (geteuid() != 0) {
		msg("--transport %s%s needs root (network namespaces, veth, packet sockets)",
		    r->transport, strcmp(r->transport, "dpdk") ? " --netns" : "");
		return -EPERM;
	}
	snprintf(torus, sizeof(torus), "%ux%ux%u", r->dim[0], r->dim[1], r->dim[2]);
	if (r->testbed) {
		snprintf(r->ns_prefix, sizeof(r->ns_prefix), "%s", r->testbed);
		snprintf(r->topo_dir, sizeof(r->topo_dir), "%s",
			 r->testbed_dir ? r->testbed_dir : "/tmp");
	} else {
		char **env;
		unsigned j, k = 0;

		/* Letters and digits only (netns.sh); unique per dnp-run on this machine. */
		snprintf(r->ns_prefix, sizeof(r->ns_prefix), "dnprun%d", (int)getpid());
		snprintf(r->topo_dir, sizeof(r->topo_dir), "%s", r->dir);
		snprintf(ini, sizeof(ini), "%s/netns-up.log", r->dir);
		for (j = 0; environ[j]; j++)
			;
		env = calloc(j + 2, sizeof(*env));
		if (!env)
			return -ENOMEM;
		for (j = 0; environ[j]; j++)
			if (strncmp(environ[j], "NETNS_IPV4=", 11))
				env[k++] = environ[j];
		/* udp needs addresses on the veths; dpdk wants them silent. */
		env[k++] = !strcmp(r->transport, "udp") ? "NETNS_IPV4=1" : "NETNS_IPV4=0";
		argv[0] = r->netns_sh;
		argv[1] = "up";
		argv[2] = torus;
		argv[3] = r->ns_prefix;
		argv[4] = r->topo_dir;
		argv[5] = NULL;
		r->ns_made = true; /* "down" is harmless even if "up" cleaned up itself */
		st = run_wait(r, argv, ini, env);
		free(env);
		if (st) {
			msg("%s up %s %s failed (status %d)", r->netns_sh, torus, r->ns_prefix, st);
			return -EIO;
		}
	}
	snprintf(topo, sizeof(topo), "%s/%s.topo", r->topo_dir, r->ns_prefix);
	f = fopen(topo, "r");
	if (!f) {
		msg("testbed %s: cannot read %s: %s", r->ns_prefix, topo, strerror(errno));
		return -ENOENT;
	}
	st = -EINVAL;
	r->svc_ns[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		char ns[80], ip[16];
		unsigned port;

		if (sscanf(line, "# dims %u %u %u", &dx, &dy, &dz) == 3)
			st = dx == r->dim[0] && dy == r->dim[1] && dz == r->dim[2] ? 0 : -EINVAL;
		/* the service network (netns.sh): "# svc NAMESPACE ADDRESS PORT" */
		if (sscanf(line, "# svc %79s %15s %u", ns, ip, &port) == 3 && port > 0 &&
		    port < 65536) {
			snprintf(r->svc_ns, sizeof(r->svc_ns), "%s", ns);
			snprintf(r->svc_ip, sizeof(r->svc_ip), "%s", ip);
			r->svc_port = port;
		}
		if (line[0] != '#')
			break;
	}
	fclose(f);
	if (st) {
		msg("testbed %s is not a %s torus (%s)", r->ns_prefix, torus, topo);
		return st;
	}
	for (id = 0; id < r->n; id++) {
		snprintf(id_s, sizeof(id_s), "%u", id);
		snprintf(ini, sizeof(ini), "%s/node-%u.ini", r->dir, id);
		argv[0] = r->netns_sh;
		argv[1] = "ini";
		argv[2] = r->ns_prefix;
		argv[3] = id_s;
		argv[4] = r->topo_dir;
		argv[5] = r->transport;
		argv[6] = NULL;
		st = run_wait(r, argv, ini, NULL);
		if (st) {
			msg("%s ini %s %u failed (status %d)", r->netns_sh, r->ns_prefix, id, st);
			return -EIO;
		}
	}
	return 0;
}

static void testbed_down(struct run *r)
{
	const char *argv[] = { r->netns_sh, "down", r->ns_prefix, r->topo_dir, NULL };

	if (!r->ns_made)
		return;
	if (run_wait(r, argv, NULL, NULL))
		msg("%s down %s failed: remove the namespaces %s-* by hand", r->netns_sh,
		    r->ns_prefix, r->ns_prefix);
	r->ns_made = false;
}

/*
 * --pin: children inherit the affinity of dnp-run at spawn time, so set ours
 * to node id's CPU just before (restore_affinity afterwards). The daemon
 * keeps it (dnp_dpdk_eal_init gives back what the EAL took).
 */
static void pin_for(const struct run *r, unsigned id)
{
	unsigned n = (unsigned)CPU_COUNT(&r->cpus), k, c;
	cpu_set_t one;

	if (!r->pin || n == 0)
		return;
	k = id % n;
	for (c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &r->cpus) && k-- == 0)
			break;
	CPU_ZERO(&one);
	CPU_SET(c, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

static void restore_affinity(const struct run *r)
{
	if (r->pin)
		sched_setaffinity(0, sizeof(r->cpus), &r->cpus);
}

/* "ip netns exec PREFIX-<id>" in front of a command line; returns the words added. */
static unsigned netns_prefix(const struct run *r, unsigned id, const char **argv, char *ns,
			     size_t len)
{
	if (!r->netns)
		return 0;
	snprintf(ns, len, "%s-%u", r->ns_prefix, id);
	argv[0] = r->ip_path;
	argv[1] = "netns";
	argv[2] = "exec";
	argv[3] = ns;
	return 4;
}

/* DIR/node-<id>.pid: for fault drills (kill -9 $(cat ...)). */
static void write_pid_file(const struct run *r, unsigned id, pid_t pid)
{
	char path[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/node-%u.pid", r->dir, id);
	f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "%d\n", (int)pid);
	fclose(f);
}

/* Starts node id's daemon (again, if restart: its log is appended to). */
static int spawn_daemon(struct run *r, unsigned id, bool restart)
{
	char torus[64], coord[48], port[16], log[PATH_MAX + 32], ns[96], ini[PATH_MAX + 32];
	const char *argv[32 + MAX_EXTRA];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	unsigned k, i;
	int e;

	snprintf(torus, sizeof(torus), "%ux%ux%u", r->dim[0], r->dim[1], r->dim[2]);
	spawn_attr(&at);
	{
		struct node *nd = &r->nodes[id];

		snprintf(coord, sizeof(coord), "%u,%u,%u", nd->x, nd->y, nd->z);
		snprintf(log, sizeof(log), "%s/dnpd-%u.log", r->dir, id);
		/* ip netns exec execs dnpd itself: the PID we get is the daemon's. */
		k = netns_prefix(r, id, argv, ns, sizeof(ns));
		argv[k++] = r->dnpd_path;
		argv[k++] = "--torus";
		argv[k++] = torus;
		argv[k++] = "--coord";
		argv[k++] = coord;
		argv[k++] = "--run-dir";
		argv[k++] = r->dir;
		argv[k++] = "--transport";
		if (!strcmp(r->transport, "memif")) {
			/* DPDK on this host: memif sockets between the daemons, no namespaces */
			argv[k++] = "dpdk";
			argv[k++] = "--dpdk-links";
			argv[k++] = "memif";
		} else {
			argv[k++] = r->transport;
		}
		if (r->udp_base >= 0) {
			snprintf(port, sizeof(port), "%d", r->udp_base);
			argv[k++] = "--udp-base-port";
			argv[k++] = port;
		}
		if (r->idle) {
			argv[k++] = "--idle";
			argv[k++] = r->idle;
		}
		if (r->netns) {
			snprintf(ini, sizeof(ini), "%s/node-%u.ini", r->dir, id);
			argv[k++] = "--config";
			argv[k++] = ini;
		}
		if (r->eal) {
			argv[k++] = "--eal";
			argv[k++] = r->eal;
		}
		for (i = 0; i < r->nextra; i++)
			argv[k++] = r->extra[i];
		argv[k] = NULL;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
		posix_spawn_file_actions_addopen(
			&fa, 1, log, O_WRONLY | O_CREAT | (restart ? O_APPEND : O_TRUNC), 0644);
		posix_spawn_file_actions_adddup2(&fa, 1, 2);
		pin_for(r, id);
		e = posix_spawn(&nd->dpid, argv[0], &fa, &at, (char *const *)argv, environ);
		restore_affinity(r);
		posix_spawn_file_actions_destroy(&fa);
		if (e) {
			nd->dpid = 0;
			msg("cannot start %s: %s", r->dnpd_path, strerror(e));
			posix_spawnattr_destroy(&at);
			return -e;
		}
		write_pid_file(r, id, nd->dpid);
	}
	posix_spawnattr_destroy(&at);
	return 0;
}

static int start_daemons(struct run *r)
{
	unsigned id;
	int e;

	if (!strcmp(r->transport, "udp") && r->udp_base < 0 && !r->netns)
		r->udp_base = pick_udp_base(r->n * 8 > 64 ? r->n * 8 : 64);
	for (id = 0; id < r->n; id++) {
		e = spawn_daemon(r, id, false);
		if (e)
			return e;
	}
	return 0;
}

static void describe_status(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "status %#x", status);
}

static void abort_apps(struct run *r, const char *why)
{
	unsigned id;

	if (r->aborting)
		return;
	r->aborting = true;
	r->abort_at = now_ms();
	if (why)
		msg("%s: stopping the programs", why);
	for (id = 0; id < r->n; id++)
		if (r->nodes[id].apid > 0)
			kill(-r->nodes[id].apgid, SIGTERM);
}

/* Reaps every child that has exited; records what happened. */
static void reap(struct run *r)
{
	char how[96];
	unsigned id;
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (id = 0; id < r->n; id++) {
			struct node *nd = &r->nodes[id];

			if (pid == nd->dpid) {
				nd->dpid = 0;
				nd->dstatus = status;
				if (nd->dexpected)
					break;
				describe_status(status, how, sizeof(how));
				if (r->drill) {
					msg("drill: dnpd of node %u,%u,%u ended (%s)", nd->x, nd->y,
					    nd->z, how);
					break;
				}
				msg("dnpd of node %u,%u,%u died early (%s)", nd->x, nd->y, nd->z,
				    how);
				if (r->daemon_death == DEATH_CONTINUE && !r->aborting)
					break;
				if (r->daemon_death == DEATH_RESTART && !r->aborting &&
				    nd->restarts < MAX_RESTARTS) {
					nd->restarts++;
					if (spawn_daemon(r, id, true) == 0) {
						msg("dnpd of node %u,%u,%u restarted (pid %d)",
						    nd->x, nd->y, nd->z, (int)nd->dpid);
						break;
					}
				}
				r->failed = true;
				abort_apps(r, NULL);
				break;
			}
			if (pid == nd->apid) {
				nd->apid = 0;
				nd->astatus = status;
				nd->aexited = true;
				if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
					break;
				if (!r->aborting) {
					describe_status(status, how, sizeof(how));
					msg("program on node %u,%u,%u failed (%s)", nd->x, nd->y,
					    nd->z, how);
				}
				r->failed = true;
				if (!r->keep_going)
					abort_apps(r, NULL);
				break;
			}
		}
	}
}

/* SIGUSR1: starts again every daemon that died (not while shutting down). */
static void restart_dead(struct run *r)
{
	for (unsigned id = 0; id < r->n; id++) {
		struct node *nd = &r->nodes[id];

		if (nd->dpid > 0 || nd->dexpected || r->aborting || r->interrupted)
			continue;
		if (spawn_daemon(r, id, true) == 0)
			msg("dnpd of node %u,%u,%u restarted on request (pid %d)", nd->x, nd->y,
			    nd->z, (int)nd->dpid);
		else
			msg("dnpd of node %u,%u,%u: restart failed", nd->x, nd->y, nd->z);
	}
}

/* Handles pending signals (SIGINT/SIGTERM/SIGHUP start the shutdown) and reaps children. */
static void read_signals(struct run *r)
{
	struct signalfd_siginfo si;

	while (read(r->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			continue;
		if (si.ssi_signo == SIGUSR1) {
			reap(r);
			restart_dead(r);
			continue;
		}
		if (!r->interrupted)
			msg("got signal %u, shutting down", si.ssi_signo);
		r->interrupted = true;
		r->failed = true;
		abort_apps(r, NULL);
	}
	reap(r);
}

static void dump_logs(struct run *r)
{
	char path[PATH_MAX + 32], line[1024];
	unsigned id, total, skip, i;
	FILE *f;

	for (id = 0; id < r->n; id++) {
		snprintf(path, sizeof(path), "%s/dnpd-%u.log", r->dir, id);
		f = fopen(path, "r");
		if (!f)
			continue;
		total = 0;
		while (fgets(line, sizeof(line), f))
			total++;
		if (!total) {
			fclose(f);
			continue;
		}
		skip = total > 40 ? total - 40 : 0;
		rewind(f);
		fprintf(stderr, "---- dnpd %u,%u,%u log (%u lines%s) ----\n", r->nodes[id].x,
			r->nodes[id].y, r->nodes[id].z, total, skip ? ", last 40" : "");
		for (i = 0; fgets(line, sizeof(line), f); i++)
			if (i >= skip)
				fprintf(stderr, "[dnpd %u,%u,%u] %s%s", r->nodes[id].x,
					r->nodes[id].y, r->nodes[id].z, line,
					strchr(line, '\n') ? "" : "\n");
		fclose(f);
	}
}

static int wait_up(struct run *r)
{
	uint64_t deadline = now_ms() + (uint64_t)r->up_timeout_s * 1000;
	char path[PATH_MAX + 32];
	unsigned id, up;
	struct pollfd pfd = { .fd = r->sfd, .events = POLLIN };

	for (;;) {
		up = 0;
		for (id = 0; id < r->n; id++) {
			snprintf(path, sizeof(path), "%s/node-%u.up", r->dir, id);
			up += access(path, F_OK) == 0;
		}
		if (up == r->n)
			return 0;
		read_signals(r);
		if (r->failed)
			return -ECHILD;
		if (now_ms() >= deadline) {
			msg("timeout: only %u of %u daemons brought their links up within %u s "
			    "(transport %s)",
			    up, r->n, r->up_timeout_s, r->transport);
			for (id = 0; id < r->n; id++) {
				snprintf(path, sizeof(path), "%s/node-%u.up", r->dir, id);
				if (access(path, F_OK))
					msg("  node %u,%u,%u (id %u) not up", r->nodes[id].x,
					    r->nodes[id].y, r->nodes[id].z, id);
			}
			r->failed = true;
			return -ETIMEDOUT;
		}
		poll(&pfd, 1, 5);
	}
}

static char *env_str(const char *name, const char *val)
{
	size_t len = strlen(name) + strlen(val) + 2;
	char *s = malloc(len);

	if (s)
		snprintf(s, len, "%s=%s", name, val);
	return s;
}

static bool env_ours(const char *e)
{
	static const char *const ours[] = { "DNP_SOCKET=", "DNP_NODE_ID=", "DNP_NNODES=",
					    "DNP_TORUS=",  "DNP_COORD=",   "DNP_RUN_DIR=" };
	unsigned i;

	for (i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (!strncmp(e, ours[i], strlen(ours[i])))
			return true;
	return false;
}

static int start_apps(struct run *r)
{
	char val[PATH_MAX + 32], torus[64];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	unsigned nenv = 0, base, id, j, argc, k;
	int p[2][2], e;
	const char **argv;
	char **env, ns[96];

	for (argc = 0; r->argv[argc]; argc++)
		;
	argv = calloc(argc + 8, sizeof(*argv));
	for (j = 0; environ[j]; j++)
		;
	env = calloc(j + 8, sizeof(*env));
	if (!env || !argv) {
		free(env);
		free(argv);
		return -ENOMEM;
	}
	for (j = 0; environ[j]; j++)
		if (!env_ours(environ[j]))
			env[nenv++] = environ[j];
	base = nenv;
	snprintf(torus, sizeof(torus), "%ux%ux%u", r->dim[0], r->dim[1], r->dim[2]);
	spawn_attr(&at);
	for (id = 0; id < r->n; id++) {
		struct node *nd = &r->nodes[id];

		nenv = base;
		snprintf(val, sizeof(val), "%s/node-%u.sock", r->dir, id);
		env[nenv++] = env_str("DNP_SOCKET", val);
		snprintf(val, sizeof(val), "%u", id);
		env[nenv++] = env_str("DNP_NODE_ID", val);
		snprintf(val, sizeof(val), "%u", r->n);
		env[nenv++] = env_str("DNP_NNODES", val);
		env[nenv++] = env_str("DNP_TORUS", torus);
		snprintf(val, sizeof(val), "%u,%u,%u", nd->x, nd->y, nd->z);
		env[nenv++] = env_str("DNP_COORD", val);
		env[nenv++] = env_str("DNP_RUN_DIR", r->dir);
		env[nenv] = NULL;
		for (j = base; j < nenv; j++)
			if (!env[j]) {
				e = ENOMEM;
				goto out;
			}
		if (pipe2(p[0], O_CLOEXEC) < 0 || pipe2(p[1], O_CLOEXEC) < 0) {
			e = errno;
			msg("pipe: %s", strerror(e));
			goto out;
		}
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
		posix_spawn_file_actions_adddup2(&fa, p[0][1], 1);
		posix_spawn_file_actions_adddup2(&fa, p[1][1], 2);
		/* Inside the node's namespace when there is one (ip netns exec execs it). */
		k = netns_prefix(r, id, argv, ns, sizeof(ns));
		argv[k++] = r->prog_path;
		for (j = 1; j <= argc; j++)
			argv[k++] = r->argv[j];
		pin_for(r, id + 1); /* the program on the next CPU: it and its daemon both poll */
		e = posix_spawn(&nd->apid, argv[0], &fa, &at, (char *const *)argv, env);
		restore_affinity(r);
		posix_spawn_file_actions_destroy(&fa);
		close(p[0][1]);
		close(p[1][1]);
		nd->s[0].fd = p[0][0];
		nd->s[1].fd = p[1][0];
		fcntl(p[0][0], F_SETFL, O_NONBLOCK);
		fcntl(p[1][0], F_SETFL, O_NONBLOCK);
		if (e) {
			nd->apid = 0;
			msg("cannot start %s: %s", r->prog_path, strerror(e));
			goto out;
		}
		nd->astarted = true;
		nd->apgid = nd->apid;
		for (j = base; j < nenv; j++) {
			free(env[j]);
			env[j] = NULL;
		}
	}
	e = 0;
out:
	for (j = base; j < base + 6; j++)
		free(env[j]);
	free(env);
	free(argv);
	posix_spawnattr_destroy(&at);
	return -e;
}

/* Writes the complete lines of a stream with the node's prefix. */
static void emit_lines(struct node *nd, struct stream *s, bool flush_all)
{
	size_t start = 0, i;

	for (i = 0; i < s->len; i++) {
		if (s->buf[i] != '\n')
			continue;
		fprintf(s->out, "%s%.*s\n", nd->prefix, (int)(i - start), s->buf + start);
		start = i + 1;
	}
	if (flush_all && start < s->len) {
		fprintf(s->out, "%s%.*s\n", nd->prefix, (int)(s->len - start), s->buf + start);
		start = s->len;
	}
	memmove(s->buf, s->buf + start, s->len - start);
	s->len -= start;
	fflush(s->out);
}

static void read_stream(struct node *nd, struct stream *s)
{
	ssize_t n;

	for (;;) {
		if (s->len == LINE_MAX_BUF)
			emit_lines(nd, s, true); /* an overlong line is cut, not lost */
		n = read(s->fd, s->buf + s->len, LINE_MAX_BUF - s->len);
		if (n > 0) {
			s->len += (size_t)n;
			emit_lines(nd, s, false);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		emit_lines(nd, s, true); /* EOF (or error): the last partial line too */
		close(s->fd);
		s->fd = -1;
		return;
	}
}

static bool apps_running(const struct run *r)
{
	unsigned id;

	for (id = 0; id < r->n; id++)
		if (r->nodes[id].apid > 0)
			return true;
	return false;
}

static void main_loop(struct run *r)
{
	uint64_t deadline = r->timeout_s ? now_ms() + (uint64_t)r->timeout_s * 1000 : UINT64_MAX;
	uint64_t drain_until = 0, now;
	struct pollfd *pfd = calloc(2 * r->n + 1, sizeof(*pfd));
	struct stream **map = calloc(2 * r->n + 1, sizeof(*map));
	struct node **nmap = calloc(2 * r->n + 1, sizeof(*nmap));
	unsigned id, k, np;
	int timeout;

	if (!pfd || !map || !nmap) {
		msg("out of memory");
		r->failed = true;
		abort_apps(r, NULL);
		goto out;
	}
	for (;;) {
		now = now_ms();
		if (!apps_running(r)) {
			if (!drain_until) {
				drain_until = now + DRAIN_MS;
				/* Leftover children of the programs would hold the pipes open. */
				for (id = 0; id < r->n; id++)
					if (r->nodes[id].apgid > 0)
						kill(-r->nodes[id].apgid, SIGKILL);
			}
			if (now >= drain_until)
				break; /* a grandchild may hold a pipe open: do not wait for it */
		}
		if (now >= deadline && !r->aborting) {
			msg("timeout: the programs ran longer than %u s", r->timeout_s);
			r->failed = true;
			abort_apps(r, NULL);
		}
		if (r->aborting && now >= r->abort_at + GRACE_MS)
			for (id = 0; id < r->n; id++)
				if (r->nodes[id].apid > 0)
					kill(-r->nodes[id].apgid, SIGKILL);
		np = 0;
		pfd[np].fd = r->sfd;
		pfd[np++].events = POLLIN;
		for (id = 0; id < r->n; id++)
			for (k = 0; k < 2; k++) {
				if (r->nodes[id].s[k].fd < 0)
					continue;
				pfd[np].fd = r->nodes[id].s[k].fd;
				pfd[np].events = POLLIN;
				map[np] = &r->nodes[id].s[k];
				nmap[np++] = &r->nodes[id];
			}
		if (np == 1 && !apps_running(r))
			break;
		timeout = 200;
		if (deadline != UINT64_MAX && deadline > now && deadline - now < 200)
			timeout = (int)(deadline - now);
		if (poll(pfd, np, timeout) < 0 && errno != EINTR) {
			msg("poll: %s", strerror(errno));
			r->failed = true;
			abort_apps(r, NULL);
		}
		for (k = 1; k < np; k++)
			if (pfd[k].revents)
				read_stream(nmap[k], map[k]);
		read_signals(r);
	}
out:
	/* Flush what is left and close the pipes. */
	for (id = 0; id < r->n; id++)
		for (k = 0; k < 2; k++) {
			struct stream *s = &r->nodes[id].s[k];

			if (s->fd >= 0) {
				emit_lines(&r->nodes[id], s, true);
				close(s->fd);
				s->fd = -1;
			}
		}
	free(pfd);
	free(map);
	free(nmap);
}

static bool any_alive(const struct run *r, bool daemons)
{
	unsigned id;

	for (id = 0; id < r->n; id++)
		if ((daemons ? r->nodes[id].dpid : r->nodes[id].apid) > 0)
			return true;
	return false;
}

/* Stops every process still running: programs first, then daemons. */
static void teardown(struct run *r)
{
	struct pollfd pfd = { .fd = r->sfd, .events = POLLIN };
	uint64_t t0;
	unsigned id;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		bool daemons = pass == 1;

		for (id = 0; id < r->n; id++) {
			struct node *nd = &r->nodes[id];
			pid_t pid = daemons ? nd->dpid : nd->apid;

			if (pid <= 0)
				continue;
			if (daemons)
				nd->dexpected = true;
			kill(daemons ? pid : -nd->apgid, SIGTERM);
		}
		t0 = now_ms();
		while (any_alive(r, daemons) && now_ms() < t0 + GRACE_MS) {
			poll(&pfd, 1, 20);
			read_signals(r);
		}
		for (id = 0; id < r->n; id++) {
			struct node *nd = &r->nodes[id];
			pid_t pid = daemons ? nd->dpid : nd->apid;
			int status;

			if (pid <= 0)
				continue;
			msg("%s of node %u,%u,%u did not stop within %d ms: SIGKILL",
			    daemons ? "dnpd" : "program", nd->x, nd->y, nd->z, GRACE_MS);
			kill(daemons ? pid : -nd->apgid, SIGKILL);
			if (waitpid(pid, &status, 0) == pid) {
				if (daemons) {
					nd->dpid = 0;
					nd->dstatus = status;
				} else {
					nd->apid = 0;
					nd->astatus = status;
					nd->aexited = true;
				}
			}
			if (daemons)
				r->failed = true;
		}
	}
	/* A daemon that did not end cleanly on SIGTERM is a failure too (crash, sanitizer). */
	for (id = 0; id < r->n; id++) {
		struct node *nd = &r->nodes[id];
		int st = nd->dstatus;
		char how[96];

		if (!nd->dexpected)
			continue;
		if ((WIFEXITED(st) && WEXITSTATUS(st) == 0) ||
		    (WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM))
			continue;
		describe_status(st, how, sizeof(how));
		msg("dnpd of node %u,%u,%u ended badly on SIGTERM (%s)", nd->x, nd->y, nd->z, how);
		r->failed = true;
	}
}

static void summary(const struct run *r)
{
	unsigned id, ok = 0, started = 0;
	char how[96];

	for (id = 0; id < r->n; id++)
		started += r->nodes[id].astarted;
	for (id = 0; id < r->n && started; id++) {
		const struct node *nd = &r->nodes[id];

		if (nd->aexited && WIFEXITED(nd->astatus) && WEXITSTATUS(nd->astatus) == 0) {
			ok++;
			continue;
		}
		if (!nd->astarted)
			snprintf(how, sizeof(how), "not started");
		else
			describe_status(nd->astatus, how, sizeof(how));
		msg("  node %u,%u,%u: %s", nd->x, nd->y, nd->z, how);
	}
	msg("%u of %u programs succeeded%s", ok, r->n, r->failed ? "; run FAILED" : "");
}

/* ------------------------------------------------------------ LO|FA|MO */

static pid_t lfm_spawn(const char *const *argv, const char *log, int pass_fd)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	pid_t pid = 0;
	int e;

	spawn_attr(&at);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	if (pass_fd >= 0) /* dup2 clears FD_CLOEXEC on the copy */
		posix_spawn_file_actions_adddup2(&fa, pass_fd, 3);
	e = posix_spawn(&pid, argv[0], &fa, &at, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (e) {
		msg("cannot start %s: %s", argv[0], strerror(e));
		return 0;
	}
	return pid;
}

/*
 * The Fault Supervisor on a loopback UDP port the kernel picks (the service
 * network here; dnp-run binds it and hands the socket over, so it cannot
 * collide with the daemons' ports), then one dnp-hfm per node beside its daemon. Their PIDs go to
 * DIR/lofamo.pids ("supervisor PID", "hfm ID PID", "dnpd ID PID") for drills.
 */
static int lofamo_start(struct run *r)
{
	char torus[64], listen_at[48], path[PATH_MAX + 64], log[PATH_MAX + 32], regs[PATH_MAX + 32];
	char node[16], sup_log[PATH_MAX + 32], ns[96];
	const char *argv[32];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	unsigned id, k;
	int sfd = -1;
	FILE *f;

	if (r->svc_ns[0]) {
		/* The testbed's own service network: a private namespace, a fixed port. */
		snprintf(r->sup_addr, sizeof(r->sup_addr), "%s:%u", r->svc_ip, r->svc_port);
		setenv("DNP_TESTBED", r->ns_prefix, 1);
	} else {
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sfd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (sfd < 0 || bind(sfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    getsockname(sfd, (struct sockaddr *)&sa, &sl) < 0) {
			msg("service network socket: %s", strerror(errno));
			if (sfd >= 0)
				close(sfd);
			return -EADDRINUSE;
		}
		snprintf(r->sup_addr, sizeof(r->sup_addr), "127.0.0.1:%u", ntohs(sa.sin_port));
	}
	snprintf(torus, sizeof(torus), "%ux%ux%u", r->dim[0], r->dim[1], r->dim[2]);
	snprintf(listen_at, sizeof(listen_at), "%s", r->sup_addr);
	snprintf(path, sizeof(path), "%s/dnp-supervisor", r->selfdir);
	if (!is_exec(path))
		snprintf(path, sizeof(path), "%s/../lofamo/dnp-supervisor", r->selfdir);
	snprintf(log, sizeof(log), "%s/supervisor.out", r->dir);
	snprintf(sup_log, sizeof(sup_log), "%s/supervisor.log", r->dir);
	k = 0;
	if (r->svc_ns[0]) {
		argv[k++] = r->ip_path;
		argv[k++] = "netns";
		argv[k++] = "exec";
		argv[k++] = r->svc_ns;
	}
	argv[k++] = path;
	argv[k++] = "--torus";
	argv[k++] = torus;
	argv[k++] = "--listen";
	argv[k++] = listen_at;
	if (sfd >= 0) {
		argv[k++] = "--listen-fd";
		argv[k++] = "3";
	}
	argv[k++] = "--log";
	argv[k++] = sup_log;
	for (unsigned i = 0; i + 1 < r->nlfm_args; i += 2)
		if (!strcmp(r->lfm_args[i], "--t-write") || !strcmp(r->lfm_args[i], "--t-read")) {
			argv[k++] = r->lfm_args[i];
			argv[k++] = r->lfm_args[i + 1];
		}
	argv[k] = NULL;
	r->sup_pid = lfm_spawn(argv, log, sfd);
	if (sfd >= 0)
		close(sfd);
	if (!r->sup_pid)
		return -ENOENT;
	setenv("DNP_SUPERVISOR", r->sup_addr, 1);
	r->hfm_pid = calloc(r->n, sizeof(*r->hfm_pid));
	if (!r->hfm_pid)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/dnp-hfm", r->selfdir);
	if (!is_exec(path))
		snprintf(path, sizeof(path), "%s/../lofamo/dnp-hfm", r->selfdir);
	snprintf(log, sizeof(log), "%s/lofamo.pids", r->dir);
	f = fopen(log, "we");
	if (!f)
		return -errno;
	fprintf(f, "supervisor %d %s\n", (int)r->sup_pid, r->sup_addr);
	for (id = 0; id < r->n; id++) {
		snprintf(regs, sizeof(regs), "%s/node-%u.lofamo", r->dir, id);
		snprintf(node, sizeof(node), "%u", id);
		snprintf(log, sizeof(log), "%s/hfm-%u.log", r->dir, id);
		/* In its node's namespace when the testbed has a service network. */
		k = r->svc_ns[0] ? netns_prefix(r, id, argv, ns, sizeof(ns)) : 0;
		argv[k++] = path;
		argv[k++] = "--regs";
		argv[k++] = regs;
		argv[k++] = "--node";
		argv[k++] = node;
		argv[k++] = "--supervisor";
		argv[k++] = r->sup_addr;
		for (unsigned i = 0; i < r->nlfm_args; i++)
			argv[k++] = r->lfm_args[i];
		argv[k] = NULL;
		r->hfm_pid[id] = lfm_spawn(argv, log, -1);
		fprintf(f, "hfm %u %d\n", id, (int)r->hfm_pid[id]);
		fprintf(f, "dnpd %u %d\n", id, (int)r->nodes[id].dpid);
	}
	fclose(f);
	return 0;
}

static void lofamo_stop(struct run *r)
{
	int status;

	for (unsigned id = 0; r->hfm_pid && id < r->n; id++)
		if (r->hfm_pid[id] > 0)
			kill(r->hfm_pid[id], SIGTERM);
	if (r->sup_pid > 0)
		kill(r->sup_pid, SIGTERM);
	for (unsigned id = 0; r->hfm_pid && id < r->n; id++)
		if (r->hfm_pid[id] > 0)
			waitpid(r->hfm_pid[id], &status, 0);
	if (r->sup_pid > 0)
		waitpid(r->sup_pid, &status, 0);
	free(r->hfm_pid);
	r->hfm_pid = NULL;
}

int main(int argc, char **argv)
{
	static struct run run;
	struct run *r = &run;
	sigset_t mask;
	unsigned id;
	int e;

	if (parse_args(argc, argv, r) < 0) {
		usage(stderr);
		return 2;
	}
	if (strcmp(r->transport, "shm") && strcmp(r->transport, "udp") &&
	    strcmp(r->transport, "dpdk") && strcmp(r->transport, "memif"))
		msg("note: transport '%s' passed to dnpd as is", r->transport);
	if (resolve_paths(r) < 0)
		return 1;
	if (r->pin && sched_getaffinity(0, sizeof(r->cpus), &r->cpus) < 0) {
		msg("--pin: sched_getaffinity: %s", strerror(errno));
		return 1;
	}
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
		return 1;
	}
	{
		char pid[24];

		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		setenv("DNP_RUN_PID", pid, 1); /* for the programs: SIGUSR1 restarts dead daemons */
	}
	r->nodes = calloc(r->n, sizeof(*r->nodes));
	if (!r->nodes)
		return 1;
	for (id = 0; id < r->n; id++) {
		struct node *nd = &r->nodes[id];

		nd->x = id % r->dim[0];
		nd->y = (id / r->dim[0]) % r->dim[1];
		nd->z = id / (r->dim[0] * r->dim[1]);
		snprintf(nd->prefix, sizeof(nd->prefix), "[%u,%u,%u] ", nd->x, nd->y, nd->z);
		nd->s[0].fd = nd->s[1].fd = -1;
		nd->s[0].out = stdout;
		nd->s[1].out = stderr;
		nd->s[0].buf = malloc(LINE_MAX_BUF);
		nd->s[1].buf = malloc(LINE_MAX_BUF);
		if (!nd->s[0].buf || !nd->s[1].buf)
			return 1;
	}
	if (make_run_dir(r) < 0)
		return 1;
	e = r->netns ? testbed_up(r) : 0;
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
	if (e < 0)
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
	return r->failed ? 1 : 0;
}
