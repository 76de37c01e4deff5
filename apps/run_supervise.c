/* SPDX-License-Identifier: MIT */
/*
 * run_supervise — dnp-run's supervision: signals, reaping children, daemon
 * deaths (fail, continue, restart), the poll loop over the programs' output,
 * the teardown (SIGTERM, then SIGKILL after a grace period, always by PID)
 * and the summary of a failed run (dnp-run.h states the contract).
 */
#include "dnp-run.h"

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

void abort_apps(struct run *r, const char *why)
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
				if (WIFEXITED(status) && WEXITSTATUS(status) == 2 &&
				    !nd->restarts && !nd->astarted) {
					/* dnpd's usage error: an argument dnp-run passed on */
					msg("dnpd of node %u,%u,%u refused its arguments (exit 2, "
					    "its log follows)",
					    nd->x, nd->y, nd->z);
					r->usage_error = true;
					r->failed = true;
					abort_apps(r, NULL);
					break;
				}
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
void read_signals(struct run *r)
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

void main_loop(struct run *r)
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
void teardown(struct run *r)
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

void summary(const struct run *r)
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
