/* SPDX-License-Identifier: MIT */
/*
 * run_torus — dnp-run's torus: the run directory, the network-namespace
 * testbed, one dnpd per node (started, restarted, their logs), the LO|FA|MO
 * supervisor and HFMs, and the wait until every daemon's links are up
 * (dnp-run.h states the contract).
 */
#include "dnp-run.h"

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

int resolve_paths(struct run *r)
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

int make_run_dir(struct run *r)
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

void remove_run_dir(struct run *r)
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

int spawn_attr(posix_spawnattr_t *at)
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
	e = guard_spawn(&pid, argv, &fa, &at, env ? env : environ, SIGTERM);
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
int testbed_up(struct run *r)
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

void testbed_down(struct run *r)
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
void pin_for(const struct run *r, unsigned id)
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

void restore_affinity(const struct run *r)
{
	if (r->pin)
		sched_setaffinity(0, sizeof(r->cpus), &r->cpus);
}

/* "ip netns exec PREFIX-<id>" in front of a command line; returns the words added. */
unsigned netns_prefix(const struct run *r, unsigned id, const char **argv, char *ns, size_t len)
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
int spawn_daemon(struct run *r, unsigned id, bool restart)
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
		e = guard_spawn(&nd->dpid, argv, &fa, &at, environ, SIGTERM);
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

int start_daemons(struct run *r)
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

void dump_logs(struct run *r)
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

int wait_up(struct run *r)
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
	e = guard_spawn(&pid, argv, &fa, &at, environ, SIGTERM);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (e) {
		msg("cannot start %s: %s", argv[0], strerror(e));
		return 0;
	}
	return pid;
}

/* A UDP socket on a loopback port the kernel picks; its address in addr. -1 (said why). */
static int lfm_loopback(char *addr, size_t cap)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		msg("service network socket: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	snprintf(addr, cap, "127.0.0.1:%u", ntohs(sa.sin_port));
	return fd;
}

/* The supervisor program's arguments after its path (k: the next free slot); returns k. */
static unsigned lfm_sup_args(const struct run *r, const char **argv, unsigned k, const char *torus,
			     const char *listen_at, bool fd3, const char *log)
{
	argv[k++] = "--torus";
	argv[k++] = torus;
	argv[k++] = "--listen";
	argv[k++] = listen_at;
	if (fd3) {
		argv[k++] = "--listen-fd";
		argv[k++] = "3";
	}
	argv[k++] = "--log";
	argv[k++] = log;
	for (unsigned i = 0; i + 1 < r->nlfm_args; i += 2)
		if (!strcmp(r->lfm_args[i], "--t-write") || !strcmp(r->lfm_args[i], "--t-read")) {
			argv[k++] = r->lfm_args[i];
			argv[k++] = r->lfm_args[i + 1];
		}
	return k;
}

/* Group g's node ids: consecutive runs, the first groups one node longer when n does not divide. */
static void lfm_group_range(const struct run *r, unsigned g, unsigned *first, unsigned *last)
{
	unsigned base = r->n / r->lfm_groups, extra = r->n % r->lfm_groups;

	*first = g * base + (g < extra ? g : extra);
	*last = *first + base + (g < extra ? 1 : 0) - 1;
}

/*
 * --lofamo-groups (docs/lofamo.md, "A hierarchy of supervisors"): one group
 * supervisor per run of node ids, reporting to the top supervisor at
 * r->sup_addr. Their PIDs and addresses go to lofamo.pids ("group G PID
 * ADDR"). 0, -ENOMEM or -ENOENT (said why).
 */
static int lfm_groups_start(struct run *r, const char *path, const char *torus, FILE *pids)
{
	char log[PATH_MAX + 32], out[PATH_MAX + 32], range[32];
	const char *argv[32];

	r->grp_pid = calloc(r->lfm_groups, sizeof(*r->grp_pid));
	r->grp_addr = calloc(r->lfm_groups, sizeof(*r->grp_addr));
	if (!r->grp_pid || !r->grp_addr)
		return -ENOMEM;
	for (unsigned g = 0; g < r->lfm_groups; g++) {
		unsigned first, last, k = 0;
		int fd = lfm_loopback(r->grp_addr[g], sizeof(r->grp_addr[g]));

		if (fd < 0)
			return -EADDRINUSE;
		lfm_group_range(r, g, &first, &last);
		snprintf(range, sizeof(range), "%u-%u", first, last);
		snprintf(log, sizeof(log), "%s/group-%u.log", r->dir, g);
		snprintf(out, sizeof(out), "%s/group-%u.out", r->dir, g);
		argv[k++] = path;
		k = lfm_sup_args(r, argv, k, torus, r->grp_addr[g], true, log);
		argv[k++] = "--group";
		argv[k++] = range;
		argv[k++] = "--upstream";
		argv[k++] = r->sup_addr;
		argv[k] = NULL;
		r->grp_pid[g] = lfm_spawn(argv, out, fd);
		close(fd);
		if (!r->grp_pid[g])
			return -ENOENT;
		fprintf(pids, "group %u %d %s\n", g, (int)r->grp_pid[g], r->grp_addr[g]);
	}
	return 0;
}

/* The supervisor node id's HFM reports to: its group's, or the top one. */
static const char *lfm_hfm_sup(const struct run *r, unsigned id)
{
	for (unsigned g = 0; g < r->lfm_groups; g++) {
		unsigned first, last;

		lfm_group_range(r, g, &first, &last);
		if (id >= first && id <= last)
			return r->grp_addr[g];
	}
	return r->sup_addr;
}

/*
 * The Fault Supervisor on a loopback UDP port the kernel picks (the service
 * network here; dnp-run binds it and hands the socket over, so it cannot
 * collide with the daemons' ports), then one dnp-hfm per node beside its daemon. Their PIDs go to
 * DIR/lofamo.pids ("supervisor PID", "hfm ID PID", "dnpd ID PID") for drills.
 */
int lofamo_start(struct run *r)
{
	char torus[64], listen_at[48], path[PATH_MAX + 64], log[PATH_MAX + 32], regs[PATH_MAX + 32];
	char node[16], sup_log[PATH_MAX + 32], ns[96];
	const char *argv[32];
	unsigned id, k;
	int sfd = -1, e;
	FILE *f;

	if (r->svc_ns[0]) {
		/* The testbed's own service network: a private namespace, a fixed port. */
		snprintf(r->sup_addr, sizeof(r->sup_addr), "%s:%u", r->svc_ip, r->svc_port);
		setenv("DNP_TESTBED", r->ns_prefix, 1);
	} else if ((sfd = lfm_loopback(r->sup_addr, sizeof(r->sup_addr))) < 0) {
		return -EADDRINUSE;
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
	k = lfm_sup_args(r, argv, k, torus, listen_at, sfd >= 0, sup_log);
	argv[k] = NULL;
	r->sup_pid = lfm_spawn(argv, log, sfd);
	if (sfd >= 0)
		close(sfd);
	if (!r->sup_pid)
		return -ENOENT;
	setenv("DNP_SUPERVISOR", r->sup_addr, 1);
	snprintf(log, sizeof(log), "%s/lofamo.pids", r->dir);
	f = fopen(log, "we");
	if (!f)
		return -errno;
	fprintf(f, "supervisor %d %s\n", (int)r->sup_pid, r->sup_addr);
	e = r->lfm_groups ? lfm_groups_start(r, path, torus, f) : 0;
	r->hfm_pid = calloc(r->n, sizeof(*r->hfm_pid));
	if (e || !r->hfm_pid) {
		fclose(f);
		return e ? e : -ENOMEM;
	}
	snprintf(path, sizeof(path), "%s/dnp-hfm", r->selfdir);
	if (!is_exec(path))
		snprintf(path, sizeof(path), "%s/../lofamo/dnp-hfm", r->selfdir);
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
		argv[k++] = lfm_hfm_sup(r, id);
		for (unsigned i = 0; i < r->nlfm_args; i++)
			argv[k++] = r->lfm_args[i];
		argv[k] = NULL;
		r->hfm_pid[id] = lfm_spawn(argv, log, -1);
		fprintf(f, "hfm %u %d\n", id, (int)r->hfm_pid[id]);
		fprintf(f, "dnpd %u %d\n", id, (int)r->nodes[id].dpid);
		fprintf(f, "hfmsup %u %s\n", id, lfm_hfm_sup(r, id));
	}
	fclose(f);
	return 0;
}

void lofamo_stop(struct run *r)
{
	int status;

	for (unsigned id = 0; r->hfm_pid && id < r->n; id++)
		if (r->hfm_pid[id] > 0)
			kill(r->hfm_pid[id], SIGTERM);
	for (unsigned g = 0; r->grp_pid && g < r->lfm_groups; g++)
		if (r->grp_pid[g] > 0)
			kill(r->grp_pid[g], SIGTERM);
	if (r->sup_pid > 0)
		kill(r->sup_pid, SIGTERM);
	for (unsigned id = 0; r->hfm_pid && id < r->n; id++)
		if (r->hfm_pid[id] > 0)
			waitpid(r->hfm_pid[id], &status, 0);
	for (unsigned g = 0; r->grp_pid && g < r->lfm_groups; g++)
		if (r->grp_pid[g] > 0)
			waitpid(r->grp_pid[g], &status, 0);
	if (r->sup_pid > 0)
		waitpid(r->sup_pid, &status, 0);
	free(r->hfm_pid);
	r->hfm_pid = NULL;
	free(r->grp_pid);
	r->grp_pid = NULL;
	free(r->grp_addr);
	r->grp_addr = NULL;
}
