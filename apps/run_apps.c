/* SPDX-License-Identifier: MIT */
/*
 * run_apps — dnp-run's programs: one instance per node with its environment
 * (DNP_SOCKET, DNP_NODE_ID, ...), and their output copied line by line with
 * the node's prefix (dnp-run.h states the contract).
 */
#include "dnp-run.h"

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

int start_apps(struct run *r)
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
		e = guard_spawn(&nd->apid, argv, &fa, &at, env, SIGKILL);
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

/* Writes the complete lines of a stream with its prefix (none, if dropped). */
void emit_lines(struct node *nd, struct stream *s, bool flush_all)
{
	size_t start = 0, i;

	for (i = 0; i < s->len; i++) {
		if (s->buf[i] != '\n')
			continue;
		if (!s->drop)
			fprintf(s->out, "%s%.*s\n", s->prefix, (int)(i - start), s->buf + start);
		start = i + 1;
	}
	if (flush_all && start < s->len) {
		if (!s->drop)
			fprintf(s->out, "%s%.*s\n", s->prefix, (int)(s->len - start),
				s->buf + start);
		start = s->len;
	}
	memmove(s->buf, s->buf + start, s->len - start);
	s->len -= start;
	fflush(s->out);
}

void read_stream(struct node *nd, struct stream *s)
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

bool apps_running(const struct run *r)
{
	unsigned id;

	for (id = 0; id < r->n; id++)
		if (r->nodes[id].apid > 0)
			return true;
	return false;
}
