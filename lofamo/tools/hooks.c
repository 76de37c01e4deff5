/* SPDX-License-Identifier: MIT */
/* hooks — the supervisor's on-fault / on-heal commands (hooks.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dnp_log.h"
#include "hooks.h"

extern char **environ;

#define HOOK_NAME 16
#define HOOK_NVARS 7

struct hook_node {
	bool faulty;     /* the state now */
	bool told;       /* the state the last hook started announced */
	bool killed;     /* its running hook was sent SIGKILL (timeout) */
	bool run_faulty; /* which hook runs */
	pid_t pid;       /* its running hook, 0 if none */
	uint64_t started_ms;
	uint64_t t_ms;
	char host[HOOK_NAME], dnp[HOOK_NAME], path[HOOK_NAME];
};

struct dnp_hooks {
	struct dnp_hooks_conf c;
	struct hook_node *node;
	unsigned running;
	uint64_t started, failed;
};

/* One line of the supervisor's log (dnp_log.h format), "hook " and the message. */
static void hook_log(const struct dnp_hooks *h, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void hook_log(const struct dnp_hooks *h, int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!h->c.log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	dnp_log_to(h->c.log, level, "hook %s", msg);
}

static bool hook_has(const char *cmd)
{
	return cmd && *cmd;
}

int dnp_hooks_create(const struct dnp_hooks_conf *c, struct dnp_hooks **out)
{
	struct dnp_hooks *h;

	if (!c->nnodes || !c->max_running || !c->timeout_ms ||
	    (uint64_t)c->dim[0] * c->dim[1] * c->dim[2] != c->nnodes)
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->node = calloc(c->nnodes, sizeof(*h->node));
	if (!h->node) {
		free(h);
		return -ENOMEM;
	}
	h->c = *c;
	*out = h;
	return 0;
}

void dnp_hooks_destroy(struct dnp_hooks *h)
{
	if (!h)
		return;
	for (uint32_t i = 0; i < h->c.nnodes; i++) {
		struct hook_node *n = &h->node[i];

		if (!n->pid)
			continue;
		kill(-n->pid, SIGKILL);
		while (waitpid(n->pid, NULL, 0) < 0 && errno == EINTR)
			;
		hook_log(h, DNP_LOG_INFO, "%s node %u: killed, the supervisor stops",
			 n->run_faulty ? "on-fault" : "on-heal", i);
	}
	free(h->node);
	free(h);
}

/* A state name for the environment and the JSON: [a-z_-] only, at most HOOK_NAME-1. */
static void hook_name(char *dst, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i < HOOK_NAME - 1; i++) {
		char ch = src[i];

		dst[i] = ((ch >= 'a' && ch <= 'z') || ch == '_' || ch == '-') ? ch : '?';
	}
	dst[i] = '\0';
	if (!i)
		snprintf(dst, HOOK_NAME, "unknown");
}

int dnp_hooks_set(struct dnp_hooks *h, uint32_t node, const struct dnp_hooks_state *st)
{
	struct hook_node *n;

	if (node >= h->c.nnodes)
		return -ERANGE;
	n = &h->node[node];
	n->faulty = st->faulty;
	n->t_ms = st->t_ms;
	hook_name(n->host, st->host);
	hook_name(n->dnp, st->dnp);
	hook_name(n->path, st->path);
	return 0;
}

/* The hook's environment: its variables first (they win over inherited ones), then environ. */
struct hook_env {
	char var[HOOK_NVARS][320];
	char **envp;
};

static int hook_env_build(const struct dnp_hooks *h, uint32_t id, struct hook_env *e)
{
	const struct hook_node *n = &h->node[id];
	const char *ev = n->faulty ? "fault" : "heal";
	uint32_t x = id % h->c.dim[0], y = id / h->c.dim[0] % h->c.dim[1],
		 z = id / h->c.dim[0] / h->c.dim[1];
	size_t nenv = 0;

	while (environ && environ[nenv])
		nenv++;
	e->envp = calloc(nenv + HOOK_NVARS + 1, sizeof(char *));
	if (!e->envp)
		return -ENOMEM;
	snprintf(e->var[0], sizeof(e->var[0]), "DNP_EVENT=%s", ev);
	snprintf(e->var[1], sizeof(e->var[1]), "DNP_NODE_ID=%u", id);
	snprintf(e->var[2], sizeof(e->var[2]), "DNP_NODE_COORD=%u,%u,%u", x, y, z);
	snprintf(e->var[3], sizeof(e->var[3]), "DNP_HOST_STATE=%s", n->host);
	snprintf(e->var[4], sizeof(e->var[4]), "DNP_DNP_STATE=%s", n->dnp);
	snprintf(e->var[5], sizeof(e->var[5]), "DNP_PATH=%s", n->path);
	snprintf(e->var[6], sizeof(e->var[6]),
		 "DNP_EVENT_JSON={\"event\":\"%s\",\"node\":%u,\"coord\":[%u,%u,%u],"
		 "\"host\":\"%s\",\"dnp\":\"%s\",\"path\":\"%s\",\"t_ms\":%" PRIu64 "}",
		 ev, id, x, y, z, n->host, n->dnp, n->path, n->t_ms);
	for (size_t i = 0; i < HOOK_NVARS; i++)
		e->envp[i] = e->var[i];
	for (size_t i = 0; i < nenv; i++)
		e->envp[HOOK_NVARS + i] = environ[i];
	return 0;
}

/* posix_spawn of sh -c CMD for node id. The child's pid, or a negative errno. */
static pid_t hook_spawn(const struct dnp_hooks *h, uint32_t id, const char *cmd)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	struct hook_env *e = malloc(sizeof(*e));
	sigset_t none, all;
	pid_t pid = 0;
	int r;

	if (!e || hook_env_build(h, id, e)) {
		free(e);
		return -ENOMEM;
	}
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	r = posix_spawn(&pid, "/bin/sh", &fa, &at, argv, e->envp);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	free(e->envp);
	free(e);
	return r ? -r : pid;
}

/* Node id's running hook finished (status from waitpid): said when it failed. */
static void hook_done(struct dnp_hooks *h, uint32_t id, int status, uint64_t now_ms)
{
	struct hook_node *n = &h->node[id];
	const char *kind = n->run_faulty ? "on-fault" : "on-heal";
	uint64_t ms = now_ms - n->started_ms;

	if (n->killed) {
		hook_log(h, DNP_LOG_WARN,
			 "%s node %u: killed after %" PRIu64 " ms (timeout %" PRIu64 " ms)", kind,
			 id, ms, h->c.timeout_ms);
		h->failed++;
	} else if (WIFEXITED(status) && WEXITSTATUS(status)) {
		hook_log(h, DNP_LOG_WARN, "%s node %u: exited %d after %" PRIu64 " ms", kind, id,
			 WEXITSTATUS(status), ms);
		h->failed++;
	} else if (WIFSIGNALED(status)) {
		hook_log(h, DNP_LOG_WARN, "%s node %u: killed by signal %d after %" PRIu64 " ms",
			 kind, id, WTERMSIG(status), ms);
		h->failed++;
	}
	n->pid = 0;
	n->killed = false;
	h->running--;
}

/* Starts node id's pending hook (a slot is free). */
static void hook_start(struct dnp_hooks *h, uint32_t id, uint64_t now_ms)
{
	struct hook_node *n = &h->node[id];
	const char *cmd = n->faulty ? h->c.on_fault : h->c.on_heal;
	const char *kind = n->faulty ? "on-fault" : "on-heal";
	pid_t pid;

	n->told = n->faulty;
	if (!hook_has(cmd))
		return;
	pid = hook_spawn(h, id, cmd);
	h->started++;
	if (pid < 0) {
		hook_log(h, DNP_LOG_WARN, "%s node %u: cannot start /bin/sh: %s", kind, id,
			 strerror((int)-pid));
		h->failed++;
		return;
	}
	n->pid = pid;
	n->run_faulty = n->faulty;
	n->started_ms = now_ms;
	h->running++;
	hook_log(h, DNP_LOG_INFO, "%s node %u: started (pid %d, host %s, dnp %s, %s)", kind, id,
		 (int)pid, n->host, n->dnp, n->path);
}

void dnp_hooks_poll(struct dnp_hooks *h, uint64_t now_ms)
{
	for (uint32_t i = 0; i < h->c.nnodes && h->running; i++) {
		struct hook_node *n = &h->node[i];
		int status;
		pid_t r;

		if (!n->pid)
			continue;
		r = waitpid(n->pid, &status, WNOHANG);
		if (r == n->pid || (r < 0 && errno == ECHILD)) {
			hook_done(h, i, r == n->pid ? status : 0, now_ms);
		} else if (!n->killed && now_ms - n->started_ms > h->c.timeout_ms) {
			kill(-n->pid, SIGKILL);
			n->killed = true;
		}
	}
	for (uint32_t i = 0; i < h->c.nnodes && h->running < h->c.max_running; i++) {
		const struct hook_node *n = &h->node[i];

		if (!n->pid && n->faulty != n->told)
			hook_start(h, i, now_ms);
	}
}

void dnp_hooks_counts(const struct dnp_hooks *h, uint64_t *started, uint64_t *failed,
		      unsigned *running)
{
	*started = h->started;
	*failed = h->failed;
	*running = h->running;
}

uint64_t dnp_hooks_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}
