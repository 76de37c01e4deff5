/* SPDX-License-Identifier: MIT */
/*
 * dnp-drill-traffic — the traffic of a LO|FA|MO fault drill: run on every
 * node by dnp-run (tests/integration/drill.sh), it PUTs 4 KiB messages to
 * every other node, round robin, with up to WINDOW commands outstanding,
 * until the file DIR/drill.done appears. It goes in rounds (one PUT to
 * every other node) that start at most every $DRILL_ROUND_MS ms (default
 * ROUND_MS; 0: as fast as the window allows): on one machine eight nodes'
 * traffic at full speed left the fault managers a sliver of two CPUs, while
 * the drill needs commands in flight at the fault, not a saturated torus.
 * Then it waits up to the daemon's command timeout ($DRILL_CMD_TIMEOUT_MS)
 * plus DRAIN_MS for the completions still due and writes
 * "ok N failed M unfinished U" to DIR/traffic-<id>.out. Every command must
 * end in exactly one completion event: a completion for a cookie that is not
 * outstanding counts as a duplicate (and fails the run).
 *
 * Buffer addresses and keys are exchanged out of band, through files
 * DIR/traffic-<id>.key (the drill is about faults, not about set-up).
 * Exit status: 0, or 1 (a bad $DRILL_ROUND_MS or $DRILL_CMD_TIMEOUT_MS, set-up
 * failed, or a duplicate completion).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dnp.h"
#include "dnp_parse.h"

#define MSG 4096u
#define WINDOW 32u
#define DRAIN_MS 2000u /* plus $DRILL_CMD_TIMEOUT_MS: a lost completion times out first */
#define MAX_NODES 64u
#define ROUND_MS 5u /* a round of n - 1 PUTs per 5 ms: 1400 PUTs/s on a 2x2x2 torus */

struct drill {
	struct dnp *d;
	char dir[4096], done[4200];
	struct dnp_coords self, dims;
	unsigned n, id, next;
	uint64_t peer_va[MAX_NODES];
	uint32_t peer_key[MAX_NODES];
	uint8_t *sbuf;
	uint8_t out_cookie[WINDOW]; /* 1: outstanding */
	uint64_t ok, failed, dup, outstanding, issued;
	uint64_t drain, round_ms, t_round;
	unsigned round_left;
};

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

static bool exists(const char *p)
{
	return access(p, F_OK) == 0;
}

/* $DRILL_ROUND_MS (0..60000) and $DRILL_CMD_TIMEOUT_MS; -EINVAL after saying which. */
static int drill_env(struct drill *g)
{
	const char *rms = getenv("DRILL_ROUND_MS"), *cto = getenv("DRILL_CMD_TIMEOUT_MS");
	uint64_t cmd_timeout = 30000u;

	g->round_ms = ROUND_MS;
	if (rms && dnp_parse_u64_max(rms, 60000, &g->round_ms)) {
		fprintf(stderr, "dnp-drill-traffic: DRILL_ROUND_MS '%s' is not 0..60000\n", rms);
		return -EINVAL;
	}
	if (cto && dnp_parse_u64_max(cto, 3600000, &cmd_timeout)) {
		fprintf(stderr, "dnp-drill-traffic: DRILL_CMD_TIMEOUT_MS '%s' is not 0..3600000\n",
			cto);
		return -EINVAL;
	}
	g->drain = DRAIN_MS + cmd_timeout;
	return 0;
}

/* Session, buffers, and our key published as DIR/traffic-<id>.key. */
static int drill_setup(struct drill *g)
{
	const char *sock = getenv("DNP_SOCKET");
	char path[4200], fin[4200];
	uint8_t *rbuf;
	uint32_t key;
	FILE *f;
	int r;

	if (!sock || strlen(sock) >= sizeof(g->dir) || !strrchr(sock, '/')) {
		fprintf(stderr, "dnp-drill-traffic: DNP_SOCKET not set\n");
		return -EINVAL;
	}
	snprintf(g->dir, sizeof(g->dir), "%s", sock);
	*strrchr(g->dir, '/') = 0;
	snprintf(g->done, sizeof(g->done), "%s/drill.done", g->dir);
	r = dnp_open(NULL, &g->d);
	if (r) {
		fprintf(stderr, "dnp-drill-traffic: dnp_open: %s\n", dnp_strerror(r));
		return r;
	}
	dnp_self(g->d, &g->self, &g->dims);
	g->n = g->dims.x * g->dims.y * g->dims.z;
	g->id = g->self.x + g->dims.x * (g->self.y + g->dims.y * g->self.z);
	if (g->n > MAX_NODES)
		return -E2BIG;
	rbuf = dnp_alloc(g->d, (size_t)MSG * g->n);
	g->sbuf = dnp_alloc(g->d, MSG);
	if (!rbuf || !g->sbuf ||
	    dnp_register(g->d, rbuf, (size_t)MSG * g->n, DNP_BUF_PUT_TARGET, &key))
		return -ENOMEM;
	memset(g->sbuf, (int)g->id, MSG);
	snprintf(path, sizeof(path), "%s/traffic-%u.key.tmp", g->dir, g->id);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "%" PRIu64 " %u %u\n", (uint64_t)(uintptr_t)rbuf, key, dnp_port(g->d));
	fclose(f);
	snprintf(fin, sizeof(fin), "%s/traffic-%u.key", g->dir, g->id);
	rename(path, fin);
	return 0;
}

/* Every node's key (each waited for up to 20 s). */
static int drill_peers(struct drill *g)
{
	char path[4200];

	for (unsigned p = 0; p < g->n; p++) {
		uint64_t t0 = ms_now();
		unsigned port;
		FILE *f;
		int ok;

		snprintf(path, sizeof(path), "%s/traffic-%u.key", g->dir, p);
		while (!exists(path) && ms_now() - t0 < 20000)
			usleep(10000);
		f = fopen(path, "r");
		ok = f &&
		     fscanf(f, "%" SCNu64 " %u %u", &g->peer_va[p], &g->peer_key[p], &port) == 3;
		if (f)
			fclose(f);
		if (!ok) {
			fprintf(stderr, "dnp-drill-traffic: no key from node %u\n", p);
			return -ENOENT;
		}
	}
	return 0;
}

/* PUTs while the window and the round allow. Returns false once our daemon refused one. */
static bool drill_issue(struct drill *g)
{
	while (g->outstanding < WINDOW && g->n > 1) {
		unsigned slot = 0, p = g->next % g->n;
		struct dnp_coords dst;
		int r;

		if (g->round_ms && !g->round_left) {
			uint64_t now = ms_now();

			if (now - g->t_round < g->round_ms)
				break;
			g->t_round = now;
			g->round_left = g->n - 1;
		}
		if (p == g->id) {
			g->next++;
			continue;
		}
		while (g->out_cookie[slot])
			slot++;
		dst.x = p % g->dims.x;
		dst.y = (p / g->dims.x) % g->dims.y;
		dst.z = p / (g->dims.x * g->dims.y);
		r = dnp_put(g->d, g->sbuf, MSG, dst, 0, g->peer_va[p] + (uint64_t)MSG * g->id,
			    g->peer_key[p], slot, DNP_NONBLOCK);
		if (r == -EAGAIN)
			break;
		if (r) /* refused before it was accepted: -EIO, our daemon is gone */
			return false;
		g->next++;
		if (g->round_left)
			g->round_left--;
		g->out_cookie[slot] = 1;
		g->outstanding++;
		g->issued++;
	}
	return true;
}

/* One completion event, matched to its outstanding cookie. */
static void drill_account(struct drill *g, const struct dnp_event *ev)
{
	if (ev->type != DNP_EV_TX_DONE && ev->type != DNP_EV_ERROR)
		return;
	if (ev->cookie >= WINDOW || !g->out_cookie[ev->cookie]) {
		g->dup++;
		return;
	}
	g->out_cookie[ev->cookie] = 0;
	g->outstanding--;
	if (ev->type == DNP_EV_TX_DONE)
		g->ok++;
	else
		g->failed++;
}

/* Completion events, each matched to its outstanding cookie. dnp_poll_events's result. */
static int drill_reap(struct drill *g)
{
	struct dnp_event ev[64];
	int r = dnp_poll_events(g->d, ev, 64);

	for (int i = 0; i < r; i++)
		drill_account(g, &ev[i]);
	return r;
}

/*
 * Whether our daemon is gone (killed by the drill): its commands will never
 * complete, so the drain need not wait for them. dnp_wait_event with no
 * wait looks at the session once; an event it returns is counted.
 */
static bool drill_daemon_gone(struct drill *g)
{
	struct dnp_event ev;
	int r = dnp_wait_event(g->d, &ev, 0);

	if (r == 1)
		drill_account(g, &ev);
	return r < 0;
}

/* Until DIR/drill.done (or our daemon is gone), then the drain of what is still due. */
static void drill_run(struct drill *g)
{
	uint64_t t_stop = 0;

	for (;;) {
		bool stop = t_stop || exists(g->done);
		int r;

		if (!stop && !drill_issue(g))
			stop = true;
		r = drill_reap(g);
		if (r < 0)
			break; /* our daemon is gone */
		if (stop) {
			if (!t_stop)
				t_stop = ms_now();
			if (!g->outstanding || ms_now() - t_stop > g->drain || drill_daemon_gone(g))
				break;
			usleep(1000);
			continue;
		}
		if (r == 0)
			usleep(g->round_ms ? 1000 : 200);
	}
}

/*
 * DIR/traffic-<id>.out, whole or not at all: node 0 reads it as soon as the
 * name exists (a reader between fopen and fclose found it empty), so it is
 * written under another name and renamed.
 */
static void drill_report(const struct drill *g)
{
	char path[4200], tmp[4300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/traffic-%u.out", g->dir, g->id);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "ok %" PRIu64 " failed %" PRIu64 " unfinished %" PRIu64 " dup %" PRIu64 "\n",
		g->ok, g->failed, g->outstanding, g->dup);
	if (fclose(f) == 0)
		(void)rename(tmp, path);
}

int main(void)
{
	static struct drill g;

	if (drill_env(&g) || drill_setup(&g) || drill_peers(&g))
		return 1;
	drill_run(&g);
	drill_report(&g);
	dnp_close(g.d);
	return g.dup ? 1 : 0;
}
