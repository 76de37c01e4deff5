/* SPDX-License-Identifier: MIT */
/*
 * dnp_faults — completion under a daemon fault (issue 25): run on every node
 * by dnp-run (bench/faults.sh, tests/integration/faults.sh). Every node PUTs
 * 8-byte messages to every other node, round robin, a round every 5 ms, up
 * to WINDOW outstanding; each PUT writes its own value (its sequence number
 * + 1) into its own slot of the target's buffer. Node 0 conducts: after
 * --warm-ms it stops (SIGSTOP) the daemon of node --victim for --hold-ms and
 * lets it go on (SIGCONT), or kills it (--fault kill, SIGKILL); traffic goes
 * on for --after-ms; then every node drains its completions (up to
 * --drain-ms), logs each command (DIR/faults-<id>.out: "dst seq status data
 * t_done_ms", t_done -1 when it never ended), and after node 0's signal
 * lists the slots written in its buffer (DIR/faults-<id>.rx: "src seq").
 * Node 0 then checks and prints one line per status and data class and:
 *   "faults: cmds N ended E pending P dup D latest_after_fault_ms L"
 *   "faults: written_but_etimedout W ok_not_written O notdeliv_written R"
 *   "PASS faults" or "FAIL faults: WHY"
 * Commands of a killed victim and data sent to it are not checked (its memory
 * is gone); everything else must end exactly once, with status 0 exactly
 * when the data was written, and never -ETIMEDOUT for data that was written.
 * With --no-drain-victim the victim's program never takes an event (a
 * receiver that does not drain) nor sends. DIR/node-<id>.pid (dnp-run
 * --daemon-death continue) names the daemons. Exit: 0, or 1 (set-up failed,
 * or, on node 0, a check failed).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app_cli.h"
#include "dnp.h"

#define WINDOW 32u
#define NSEQ 8192u /* PUTs per (source, target) pair at most */
#define MAX_NODES 64u
#define ROUND_MS 5u
#define WAIT_MS 20000u /* for peers' files */

struct rec {
	uint16_t dst;
	uint8_t done, data;
	int16_t status;
	int64_t t_issue, t_done;
};

struct fl {
	struct dnp *d;
	char dir[4096];
	unsigned n, id, victim, next;
	bool kill, nodrain;
	uint64_t warm, hold, after, drain;
	struct dnp_coords dims;
	uint64_t peer_va[MAX_NODES];
	uint32_t peer_key[MAX_NODES];
	uint32_t seq[MAX_NODES];
	uint64_t *sbuf, *rbuf;
	struct rec *rec; /* by cookie: dst * NSEQ + seq */
	uint64_t nrec, outstanding, dup;
};

static int64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void path_of(const struct fl *g, char *p, size_t n, const char *name, int id)
{
	if (id < 0)
		snprintf(p, n, "%s/%s", g->dir, name);
	else
		snprintf(p, n, "%s/%s-%d", g->dir, name, id);
}

/* Waits up to ms for a file; true when it is there. */
static bool wait_file(const char *p, int64_t ms)
{
	int64_t t0 = ms_now();

	while (access(p, F_OK) != 0) {
		if (ms_now() - t0 > ms)
			return false;
		usleep(5000);
	}
	return true;
}

/* Writes a file under a temporary name, then renames it (readers see it whole). */
static void put_file(const char *p, const char *text)
{
	char tmp[4300];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
	rename(tmp, p);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dnp_faults [--fault stop|kill] [--victim ID] [--warm-ms MS]"
		" [--hold-ms MS] [--after-ms MS] [--drain-ms MS] [--no-drain-victim]\n"
		"       dnp_faults --help | --version\n"
		"Run on every node by dnp-run: completion under a daemon fault (docs/apps.md).\n");
}

/* 0 to run, 'h' (--help), 'V' (--version) or -EINVAL (a usage error). */
static int parse_args(struct fl *g, int argc, char **argv)
{
	g->victim = 2;
	g->warm = 1000;
	g->hold = 1500;
	g->after = 2000;
	g->drain = 8000;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--no-drain-victim")) {
			g->nodrain = true;
			continue;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			return 'h';
		if (!strcmp(a, "--version"))
			return 'V';
		if (!v)
			return -EINVAL;
		i++;
		if (!strcmp(a, "--fault") && (!strcmp(v, "stop") || !strcmp(v, "kill")))
			g->kill = !strcmp(v, "kill");
		else if (!strcmp(a, "--victim"))
			g->victim = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--warm-ms"))
			g->warm = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--hold-ms"))
			g->hold = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--after-ms"))
			g->after = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--drain-ms"))
			g->drain = strtoull(v, NULL, 10);
		else
			return -EINVAL;
	}
	return 0;
}

/* Session, buffers, our key in DIR/fkey-<id>, then every peer's. */
static int setup(struct fl *g)
{
	const char *sock = getenv("DNP_SOCKET");
	char p[4300], line[128];
	struct dnp_coords self;
	uint32_t key;
	size_t sz;

	if (!sock || strlen(sock) >= sizeof(g->dir) || !strrchr(sock, '/'))
		return -EINVAL;
	snprintf(g->dir, sizeof(g->dir), "%s", sock);
	*strrchr(g->dir, '/') = 0;
	if (dnp_open(NULL, &g->d))
		return -EIO;
	dnp_self(g->d, &self, &g->dims);
	g->n = g->dims.x * g->dims.y * g->dims.z;
	g->id = self.x + g->dims.x * (self.y + g->dims.y * self.z);
	if (g->n > MAX_NODES || g->victim == 0 || g->victim >= g->n)
		return -EINVAL;
	sz = (size_t)NSEQ * g->n * 8u;
	g->sbuf = dnp_alloc(g->d, sz);
	g->rbuf = dnp_alloc(g->d, sz);
	g->rec = calloc((size_t)NSEQ * g->n, sizeof(*g->rec));
	if (!g->sbuf || !g->rbuf || !g->rec ||
	    dnp_register(g->d, g->rbuf, sz, DNP_BUF_PUT_TARGET, &key))
		return -ENOMEM;
	memset(g->rbuf, 0, sz);
	for (size_t i = 0; i < (size_t)NSEQ * g->n; i++)
		g->sbuf[i] = i % NSEQ + 1;
	snprintf(line, sizeof(line), "%" PRIu64 " %u\n", (uint64_t)(uintptr_t)g->rbuf, key);
	path_of(g, p, sizeof(p), "fkey", (int)g->id);
	put_file(p, line);
	for (unsigned i = 0; i < g->n; i++) {
		FILE *f;
		int ok;

		path_of(g, p, sizeof(p), "fkey", (int)i);
		if (!wait_file(p, WAIT_MS))
			return -ENOENT;
		f = fopen(p, "r");
		ok = f && fscanf(f, "%" SCNu64 " %u", &g->peer_va[i], &g->peer_key[i]) == 2;
		if (f)
			fclose(f);
		if (!ok)
			return -ENOENT;
	}
	return 0;
}

/* One round of PUTs (one to every other node) while the window allows. */
static void issue(struct fl *g)
{
	for (unsigned k = 1; k < g->n && g->outstanding < WINDOW; k++) {
		unsigned p = (g->id + k + g->next) % g->n;
		struct dnp_coords dst = { p % g->dims.x, (p / g->dims.x) % g->dims.y,
					  p / (g->dims.x * g->dims.y) };

		if (p == g->id || g->seq[p] >= NSEQ)
			continue;
		uint64_t c = (uint64_t)p * NSEQ + g->seq[p];
		uint64_t off = ((uint64_t)g->id * NSEQ + g->seq[p]) * 8u;
		int r = dnp_put(g->d, &g->sbuf[c], 8, dst, 0, g->peer_va[p] + off, g->peer_key[p],
				c, DNP_NONBLOCK);
		if (r)
			break; /* ring full (or our daemon is gone) */
		g->seq[p]++;
		g->rec[c].dst = (uint16_t)p;
		g->rec[c].t_done = -1;
		g->rec[c].t_issue = ms_now();
		g->nrec++;
		g->outstanding++;
	}
	g->next++;
}

/* Our completions; dnp_poll_events's result. */
static int reap(struct fl *g)
{
	struct dnp_event ev[64];
	int r = dnp_poll_events(g->d, ev, 64);

	for (int i = 0; i < r; i++) {
		struct rec *x;

		if (ev[i].type != DNP_EV_TX_DONE && ev[i].type != DNP_EV_ERROR)
			continue;
		x = ev[i].cookie < (uint64_t)NSEQ * g->n ? &g->rec[ev[i].cookie] : NULL;
		if (!x || x->done || x->t_done != -1) {
			g->dup++;
			continue;
		}
		x->done = 1;
		x->status = ev[i].status;
		x->data = ev[i].data;
		x->t_done = ms_now();
		g->outstanding--;
	}
	return r;
}

/* Node 0: the fault, at its times; records when it ended in DIR/fault.t. */
static void conduct(struct fl *g, int64_t t0, int *phase)
{
	int64_t now = ms_now();
	char p[4300], line[64];
	long pid = 0;
	FILE *f;

	if (*phase == 0 && now - t0 >= (int64_t)g->warm) {
		path_of(g, p, sizeof(p), "node", (int)g->victim);
		strcat(p, ".pid");
		f = fopen(p, "r");
		if (!f || fscanf(f, "%ld", &pid) != 1 || pid <= 1)
			pid = 0;
		if (f)
			fclose(f);
		if (pid)
			kill((pid_t)pid, g->kill ? SIGKILL : SIGSTOP);
		*phase = 1;
		if (g->kill || !pid)
			goto ended;
		return;
	}
	if (*phase == 1 && !g->kill && now - t0 >= (int64_t)(g->warm + g->hold)) {
		path_of(g, p, sizeof(p), "node", (int)g->victim);
		strcat(p, ".pid");
		f = fopen(p, "r");
		if (f && fscanf(f, "%ld", &pid) == 1 && pid > 1)
			kill((pid_t)pid, SIGCONT);
		if (f)
			fclose(f);
		goto ended;
	}
	return;
ended:
	snprintf(line, sizeof(line), "%" PRId64 "\n", ms_now());
	path_of(g, p, sizeof(p), "fault.t", -1);
	put_file(p, line);
	*phase = 2;
}

static void run(struct fl *g)
{
	int64_t t0 = ms_now(), t_round = 0, t_stop = 0;
	char done[4300];
	int phase = 0;

	path_of(g, done, sizeof(done), "faults.done", -1);
	bool idle = g->nodrain && g->id == g->victim;
	for (;;) {
		int64_t now = ms_now();

		if (g->id == 0 && phase < 2)
			conduct(g, t0, &phase);
		if (g->id == 0 && phase == 2 && !t_stop &&
		    now - t0 >= (int64_t)(g->warm + (g->kill ? 0 : g->hold) + g->after))
			put_file(done, "");
		if (!t_stop && access(done, F_OK) == 0)
			t_stop = now;
		if (idle) {
			if (t_stop)
				return;
			usleep(5000);
			continue;
		}
		if (!t_stop && now - t_round >= ROUND_MS) {
			t_round = now;
			issue(g);
		}
		if (reap(g) < 0)
			return; /* our daemon is gone */
		if (t_stop && (!g->outstanding || now - t_stop > (int64_t)g->drain))
			return;
		usleep(500);
	}
}

/* DIR/faults-<id>.out, then (after node 0's faults.scan) DIR/faults-<id>.rx. */
static void report(struct fl *g)
{
	char p[4300], scan[4300];
	FILE *f;

	path_of(g, p, sizeof(p), "faults.out", (int)g->id);
	strcat(p, ".tmp");
	f = fopen(p, "w");
	for (unsigned d = 0; f && d < g->n; d++)
		for (unsigned s = 0; s < g->seq[d]; s++) {
			const struct rec *x = &g->rec[(size_t)d * NSEQ + s];
			fprintf(f, "%u %u %d %u %" PRId64 " %" PRId64 "\n", d, s,
				x->done ? x->status : 1, x->data, x->t_done, x->t_issue);
		}
	if (f) {
		char fin[4300];

		fclose(f);
		snprintf(fin, sizeof(fin), "%s", p);
		*strrchr(fin, '.') = 0;
		rename(p, fin);
	}
	path_of(g, scan, sizeof(scan), "faults.scan", -1);
	if (!wait_file(scan, WAIT_MS))
		return;
	path_of(g, p, sizeof(p), "faults.rx", (int)g->id);
	strcat(p, ".tmp");
	f = fopen(p, "w");
	for (unsigned s = 0; f && s < g->n; s++)
		for (unsigned q = 0; q < NSEQ; q++)
			if (g->rbuf[(size_t)s * NSEQ + q] == q + 1u)
				fprintf(f, "%u %u\n", s, q);
	if (f) {
		char fin[4300];

		fclose(f);
		snprintf(fin, sizeof(fin), "%s", p);
		*strrchr(fin, '.') = 0;
		rename(p, fin);
	}
}

struct tally {
	uint64_t cmds, pending, wt, ok_unwritten, nd_written, unk_written, data_bad,
		enolink_written;
	uint64_t status[130], data[3];
	int64_t latest;
};

/* One source's log against what the targets hold (w: n x n x NSEQ, [dst][src][seq]). */
static void tally_source(struct tally *t, FILE *f, const uint8_t *w, unsigned n, unsigned src,
			 int dead, int64_t t_fault)
{
	unsigned d, q, data;
	int st;
	int64_t td, ti;

	while (fscanf(f, "%u %u %d %u %" SCNd64 " %" SCNd64, &d, &q, &st, &data, &td, &ti) == 6) {
		if (d >= n || q >= NSEQ || st > 1 || st < -128 || data > 2)
			continue;
		t->cmds++;
		if (st == 1) {
			t->pending++;
			continue;
		}
		t->status[-st]++;
		t->data[data]++;
		if (ti <= t_fault && td - t_fault > t->latest)
			t->latest =
				td - t_fault; /* of the commands issued before the fault ended */
		if ((st == 0) != (data == DNP_DATA_DELIVERED))
			t->data_bad++;
		if ((int)d == dead)
			continue; /* its memory is gone: nothing to compare */
		bool written = w[((size_t)d * n + src) * NSEQ + q];
		if (st == 0 && !written)
			t->ok_unwritten++;
		else if (st == -ETIMEDOUT && written)
			t->wt++;
		else if (st && written) {
			if (st == -ENOLINK && ++t->enolink_written <= 5)
				printf("faults: -ENOLINK but written: %u -> %u #%u data %u\n", src,
				       d, q, data);
			if (data != DNP_DATA_NOT_DELIVERED)
				t->unk_written++; /* said unknown: true, if not the best answer */
			else if (++t->nd_written <= 5)
				printf("faults: not delivered but written: %u -> %u #%u status %d\n",
				       src, d, q, st);
		}
	}
}

/* Node 0's verdict over every node's files; 0 when it passed. */
static int dnp_faults_check(const char *dir, unsigned n, unsigned victim, bool kill,
			    int64_t wait_ms)
{
	uint8_t *w = calloc((size_t)n * n * NSEQ, 1);
	static struct tally t;
	int dead = kill ? (int)victim : -1;
	int64_t t_fault = 0;
	char p[4300];
	FILE *f;

	if (!w)
		return 1;
	snprintf(p, sizeof(p), "%s/fault.t", dir);
	f = fopen(p, "r");
	if (!f || fscanf(f, "%" SCNd64, &t_fault) != 1)
		t_fault = 0;
	if (f)
		fclose(f);
	for (unsigned d = 0; d < n; d++) {
		unsigned s, q;

		if ((int)d == dead)
			continue;
		snprintf(p, sizeof(p), "%s/faults.rx-%u", dir, d);
		wait_file(p, wait_ms);
		f = fopen(p, "r");
		while (f && fscanf(f, "%u %u", &s, &q) == 2)
			if (s < n && q < NSEQ)
				w[((size_t)d * n + s) * NSEQ + q] = 1;
		if (f)
			fclose(f);
	}
	t.latest = INT64_MIN;
	for (unsigned s = 0; s < n; s++) {
		if ((int)s == dead)
			continue;
		snprintf(p, sizeof(p), "%s/faults.out-%u", dir, s);
		f = fopen(p, "r");
		if (!f) {
			printf("FAIL faults: no log from node %u\n", s);
			free(w);
			return 1;
		}
		tally_source(&t, f, w, n, s, dead, t_fault);
		fclose(f);
	}
	free(w);
	for (unsigned i = 0; i < 130; i++)
		if (t.status[i])
			printf("faults: status %d count %" PRIu64 "\n", -(int)i, t.status[i]);
	for (unsigned i = 0; i < 3; i++)
		printf("faults: data %u count %" PRIu64 "\n", i, t.data[i]);
	printf("faults: cmds %" PRIu64 " ended %" PRIu64 " pending %" PRIu64
	       " latest_after_fault_ms %" PRId64 "\n",
	       t.cmds, t.cmds - t.pending, t.pending, t_fault ? t.latest : -1);
	printf("faults: written_but_etimedout %" PRIu64 " ok_not_written %" PRIu64
	       " notdeliv_written %" PRIu64 " unknown_written %" PRIu64 " enolink_written %" PRIu64
	       " data_field_bad %" PRIu64 "\n",
	       t.wt, t.ok_unwritten, t.nd_written, t.unk_written, t.enolink_written, t.data_bad);
	const char *why = !t.cmds        ? "no command issued" :
			  t.pending      ? "commands never completed" :
			  t.wt           ? "-ETIMEDOUT for a PUT whose data was written" :
			  t.ok_unwritten ? "status 0 for a PUT whose data is not there" :
			  t.nd_written   ? "'not delivered' for a PUT whose data is there" :
			  t.data_bad     ? "data field disagrees with status" :
					   NULL;
	if (why) {
		printf("FAIL faults: %s\n", why);
		return 1;
	}
	printf("PASS faults\n");
	return 0;
}

int main(int argc, char **argv)
{
	static struct fl g;
	int r;

	r = parse_args(&g, argc, argv);
	if (r == 'h' || r == 'V')
		return app_cli_other("dnp_faults", usage, r, argv);
	if (r)
		return app_cli_usage_error("dnp_faults", usage, "bad arguments");
	r = setup(&g);
	if (r) {
		fprintf(stderr, "dnp_faults: set-up failed: %s\n", dnp_strerror(r));
		return 1;
	}
	run(&g);
	if (g.dup)
		printf("dnp_faults: node %u: %" PRIu64 " duplicate completions\n", g.id, g.dup);
	if (g.id != 0) {
		report(&g);
		dnp_close(g.d);
		return 0;
	}
	char scan[4300];
	/* node 0: the others' logs, then the scan of every buffer, then the check */
	for (unsigned i = 1; i < g.n; i++) {
		char p[4300];

		if (g.kill && i == g.victim)
			continue;
		path_of(&g, p, sizeof(p), "faults.out", (int)i);
		wait_file(p, WAIT_MS + g.drain);
	}
	path_of(&g, scan, sizeof(scan), "faults.scan", -1);
	put_file(scan, "");
	report(&g);
	r = dnp_faults_check(g.dir, g.n, g.victim, g.kill, WAIT_MS);
	dnp_close(g.d);
	return r || g.dup ? 1 : 0;
}
