/* SPDX-License-Identifier: MIT */
/*
 * run_guard — what keeps dnp-run's processes from outliving it, and what
 * keeps it from starting a torus this machine cannot hold (dnp-run.h states
 * the contract).
 *
 * Lifetimes: every process dnp-run starts (daemons, supervisor, HFMs,
 * programs, the testbed script) is started through dnp-run itself in guard
 * mode ("dnp-run --guard PPID SIG -- PROGRAM ARGS"), which asks the kernel
 * for SIG when its parent dies (PR_SET_PDEATHSIG, kept across execve),
 * checks that the parent is still PPID (it may have died before the
 * request), and execs PROGRAM. So a dnp-run killed by SIGKILL takes its
 * daemons (SIGTERM: they remove their files) and programs (SIGKILL) with it.
 * posix_spawn cannot make that request itself, hence the extra exec.
 * A program's own children are not covered (they are in its process group,
 * which dnp-run's normal teardown signals).
 *
 * Fit: a torus of n nodes needs n polled daemons, n HFMs and n programs.
 * Measured on the project's 2-core, 24 GiB machine (shm, 2x2x1): a dnpd's
 * resident set is about 26 MiB, a dnp-hfm's and a small program's about
 * 2 MiB each; so RUN_NODE_MIB (32 MiB) per node. dnp-run refuses a torus
 * whose nodes need more than three quarters of MemAvailable, or that puts
 * more than RUN_NODES_PER_CPU daemons on each CPU dnp-run may use, and says
 * what would fit; --oversubscribe starts it anyway.
 */
#include "dnp-run.h"

#include <sys/prctl.h>

#include "dnp_parse.h"

#define RUN_NODE_MIB 32u
#define RUN_NODES_PER_CPU 32u

static char guard_self[PATH_MAX];

int guard_init(void)
{
	ssize_t n = readlink("/proc/self/exe", guard_self, sizeof(guard_self) - 1);

	if (n <= 0) {
		msg("cannot find dnp-run's own path (/proc/self/exe): %s", strerror(errno));
		return -errno;
	}
	guard_self[n] = 0;
	return 0;
}

int guard_main(int argc, char **argv)
{
	uint64_t ppid, sig;

	if (argc < 6 || strcmp(argv[1], RUN_GUARD_OPT) || strcmp(argv[4], "--") ||
	    dnp_parse_u64_max(argv[2], INT32_MAX, &ppid) || dnp_parse_u64_max(argv[3], 64, &sig)) {
		fprintf(stderr, PROG ": %s is for dnp-run's own use\n", RUN_GUARD_OPT);
		return 2;
	}
	if (prctl(PR_SET_PDEATHSIG, (unsigned long)sig) < 0) {
		fprintf(stderr, PROG ": PR_SET_PDEATHSIG: %s\n", strerror(errno));
		return 127;
	}
	if ((uint64_t)getppid() != ppid)
		return 127; /* dnp-run died before the request took effect */
	execv(argv[5], &argv[5]);
	fprintf(stderr, PROG ": cannot run %s: %s\n", argv[5], strerror(errno));
	return 127;
}

int guard_spawn(pid_t *pid, const char *const *argv, const posix_spawn_file_actions_t *fa,
		const posix_spawnattr_t *at, char *const *env, int sig)
{
	const char **g;
	char ppid[24], signo[8];
	size_t n = 0;
	int e;

	while (argv[n])
		n++;
	g = calloc(n + 6, sizeof(*g));
	if (!g)
		return ENOMEM;
	snprintf(ppid, sizeof(ppid), "%d", (int)getpid());
	snprintf(signo, sizeof(signo), "%d", sig);
	g[0] = guard_self;
	g[1] = RUN_GUARD_OPT;
	g[2] = ppid;
	g[3] = signo;
	g[4] = "--";
	memcpy(&g[5], argv, (n + 1) * sizeof(*g));
	e = posix_spawn(pid, guard_self, fa, at, (char *const *)g, env);
	free(g);
	return e;
}

/* MemAvailable of /proc/meminfo in MiB, 0 if unknown. */
static uint64_t mem_available_mib(void)
{
	char line[256], num[32];
	uint64_t kib = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %31s kB", num) == 1 && dnp_parse_u64(num, &kib))
			kib = 0;
	fclose(f);
	return kib / 1024;
}

int check_fit(const struct run *r)
{
	cpu_set_t cpus;
	unsigned ncpu = 1, by_cpu, by_mem, fit, k;
	uint64_t avail = mem_available_mib(), need = (uint64_t)r->n * RUN_NODE_MIB;

	if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) > 0)
		ncpu = (unsigned)CPU_COUNT(&cpus);
	by_cpu = ncpu * RUN_NODES_PER_CPU;
	by_mem = avail ? (unsigned)(avail * 3 / 4 / RUN_NODE_MIB) : UINT32_MAX;
	fit = by_cpu < by_mem ? by_cpu : by_mem;
	if (r->n <= fit || r->oversubscribe)
		return 0;
	msg("a %ux%ux%u torus (%u nodes) does not fit this machine:", r->dim[0], r->dim[1],
	    r->dim[2], r->n);
	if (r->n > by_mem)
		msg("  about %u MiB per node (a dnpd's resident set is about 26 MiB) makes %llu MiB,"
		    " more than 3/4 of the %llu MiB available",
		    RUN_NODE_MIB, (unsigned long long)need, (unsigned long long)avail);
	if (r->n > by_cpu)
		msg("  %u polled daemons on %u CPU(s): at most %u per CPU", r->n, ncpu,
		    RUN_NODES_PER_CPU);
	for (k = 1; (k + 1) * (k + 1) * (k + 1) <= fit; k++)
		;
	msg("  at most %u nodes fit (e.g. --torus %ux%ux%u); --oversubscribe starts it anyway", fit,
	    k, k, k);
	return -E2BIG;
}
