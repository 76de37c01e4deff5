/* SPDX-License-Identifier: MIT */
/*
 * dnp-run.h — what the parts of dnp-run share (dnp-run.c describes the
 * program): the run (struct run, filled by the option parsing of dnp-run.c),
 * its nodes and their output streams.
 *
 *   dnp-run.c        options, usage, main (the order of the steps)
 *   run_torus.c      the run directory, the testbed, the daemons, the
 *                    LO|FA|MO supervisor and HFMs, waiting for the links
 *   run_apps.c       starting the program on every node, copying its output
 *   run_supervise.c  signals, reaping, restarts, the poll loop, teardown
 *
 * Single-threaded: every function runs in dnp-run's one thread and may
 * print with msg(). Functions returning int give 0 or a negative errno
 * (after saying why with msg()) unless their comment says otherwise.
 */
#ifndef DNP_RUN_H
#define DNP_RUN_H

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
	int fd;             /* read end of the pipe, -1 once closed */
	FILE *out;          /* where its lines go */
	const char *prefix; /* put before each line ("[x,y,z] " or "") */
	bool drop;          /* --output nodeN: another node's stdout is not shown */
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
	/* --lofamo-groups N: group supervisors between the HFMs and the top one */
	unsigned lfm_groups;
	pid_t *grp_pid;
	char (*grp_addr)[32];
	/* output and limits */
	bool print_dir;     /* --print-run-dir */
	bool oversubscribe; /* --oversubscribe: no fit check */
	int output;         /* OUTPUT_ALL, OUTPUT_RAW or a node id (its stdout only) */
	bool usage_error;   /* a daemon refused its arguments (exit 2) */
};

#define OUTPUT_ALL (-1)
#define OUTPUT_RAW (-2)
/* The hidden first option of dnp-run's guard mode (run_guard.c). */
#define RUN_GUARD_OPT "--guard"

/* Time in milliseconds (CLOCK_MONOTONIC). */
uint64_t now_ms(void);
/* "dnp-run: MESSAGE" on stderr (stdout flushed first). */
void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* run_torus.c */
int resolve_paths(struct run *r);
int make_run_dir(struct run *r);
void remove_run_dir(struct run *r);
int spawn_attr(posix_spawnattr_t *at);
int testbed_up(struct run *r);
void testbed_down(struct run *r);
void pin_for(const struct run *r, unsigned id);
void restore_affinity(const struct run *r);
unsigned netns_prefix(const struct run *r, unsigned id, const char **argv, char *ns, size_t len);
int spawn_daemon(struct run *r, unsigned id, bool restart);
int start_daemons(struct run *r);
void dump_logs(struct run *r);
int wait_up(struct run *r);
int lofamo_start(struct run *r);
void lofamo_stop(struct run *r);

/* run_guard.c */
/* Finds dnp-run's own path for guard_spawn(). 0 or -errno (said). */
int guard_init(void);
/* dnp-run --guard PPID SIG -- PROGRAM ARGS: never returns on success; the exit status otherwise. */
int guard_main(int argc, char **argv);
/*
 * posix_spawn() of argv through guard mode: the child gets sig when dnp-run
 * dies. Returns 0 or an errno value (as posix_spawn).
 */
int guard_spawn(pid_t *pid, const char *const *argv, const posix_spawn_file_actions_t *fa,
		const posix_spawnattr_t *at, char *const *env, int sig);
/* Does the torus fit this machine (memory, CPUs)? 0, or -E2BIG after saying what fits. */
int check_fit(const struct run *r);

/* run_apps.c */
int start_apps(struct run *r);
void emit_lines(struct node *nd, struct stream *s, bool flush_all);
void read_stream(struct node *nd, struct stream *s);
bool apps_running(const struct run *r);

/* run_supervise.c */
void abort_apps(struct run *r, const char *why);
void read_signals(struct run *r);
void main_loop(struct run *r);
void teardown(struct run *r);
void summary(const struct run *r);

#endif
