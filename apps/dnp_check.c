/* SPDX-License-Identifier: MIT */
/*
 * dnp_check — functional checks of a running SoftDNP torus, one mode per
 * scenario of the integration tests. Run it under dnp-run: node A is
 * (0,0,0), node B its +X neighbour (or --peer); other nodes exit 0 unless
 * the mode uses every node.
 *
 *   send-order        A streams SENDs with a bounded window; B checks they
 *                     arrive complete and in order
 *   get               A GETs ranges of B's GET-source buffer and checks the
 *                     bytes; a bad key and an overrun fail with -EACCES/-ERANGE
 *   bad-key           PUT with a wrong key: A gets ERROR -EACCES, B's buffer
 *                     is unchanged, a following good PUT works
 *   out-of-bounds     PUT running past the end of B's buffer: ERROR -ERANGE,
 *                     buffer unchanged
 *   outstanding-1000  A keeps up to 1000 PUTs in flight; every one completes
 *                     once and every byte arrives
 *   blocking-20000    A issues 20,000 blocking PUTs without reading a single
 *                     event (libdnp must not deadlock: it stashes events while
 *                     it waits for ring room), then reads all completions:
 *                     each exactly once, in order; B verifies every word
 *   bad-args          invalid calls return -EINVAL (or the documented errno)
 *                     and the session still works afterwards (node A only)
 *   kill-survivor     A starts a second application on its node (kill-victim)
 *                     that streams PUTs to B, kills it with SIGKILL mid-traffic,
 *                     then completes its own transfers through the same daemon
 *   farthest          every node PUTs to its farthest node; hop counts in the
 *                     RX events (and of all-pairs SENDs) equal the torus distance
 *   link-drill        fault drill (tests/integration/dpdk-drill.sh): A streams
 *                     PUTs to B (window 64) while the test breaks the link
 *                     under them; every PUT must complete exactly once, as
 *                     TX_DONE or as an ERROR event (nothing hangs, nothing is
 *                     silently lost), and once the break is known the PUTs
 *                     must go on through the detour (docs/routing.md): the
 *                     500 issued after it all end in TX_DONE.
 *                     Synchronised with the test by files named from
 *                     $DNP_DRILL_FLAG: A creates FLAG once 200 PUTs completed
 *                     (content: its DNP_SOCKET); the test breaks the link and
 *                     creates FLAG.cut once node A's daemon reports it BROKEN;
 *                     A creates FLAG.broken when the PUTs after it completed
 *                     and every PUT was reaped, then waits for the test's
 *                     FLAG.checked (it read `dnpctl stats` meanwhile) and
 *                     creates FLAG.done, on which B exits.
 *   slow-drain        B (1,0,0) stops draining its events while A floods it
 *                     with PUTs and, interleaved, PUTs to D (1,1,0) that cross
 *                     B on the same link: once B's queues are full, A's PUTs
 *                     to B fail with -EOVERFLOW (after the daemon's bound,
 *                     then at once) while every PUT to D completes; every
 *                     PUT completes exactly once, B gets exactly the RX
 *                     events of the PUTs that succeeded. B resumes when A
 *                     creates $DNP_CHECK_FLAG (content: that count).
 *   kill-mid-send     A starts a second application on its node
 *                     (kill-send-victim) that SENDs 8 MiB to a second port
 *                     of B, of which only the first half can be read (the
 *                     rest is unmapped: the message stops in the middle),
 *                     and kills it with SIGKILL. B's port gets exactly one
 *                     DNP_EV_RX_ERROR -ETIMEDOUT for the SEND (after the
 *                     daemon's reassembly bound), its buffer comes back, and
 *                     A's next SEND lands in that same buffer.
 *   private-fault     B's PUT target is 1 MiB of its own memory outside the
 *                     shared heap (the daemon writes it with process_vm_writev,
 *                     gathered), with one page in its middle unmapped after
 *                     registration. A's 1 MiB PUT into it fails with -EFAULT
 *                     and B gets no RX event for it; A's PUT into the first
 *                     quarter of the same buffer, and a 1 MiB PUT into a
 *                     second private buffer, complete and arrive intact.
 *
 * Exit status 0 when every check passed, 1 when one failed, 2 on bad usage.
 *
 * This file: the helpers every mode uses and the driver (options, which node
 * plays which part, the verdict); the modes are in check_transfer.c and
 * check_faults.c (check.h).
 */
#include "check.h"

#include <getopt.h>
#include <stdarg.h>

#include "app_cli.h"

void fail(struct chk *k, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	k->fails++;
}

void *xalloc(struct chk *k, size_t len)
{
	void *p = app_alloc(&k->a, len);

	if (!p) {
		fprintf(stderr, PROG ": out of memory (%zu bytes)\n", len);
		exit(1);
	}
	return p;
}

int reg(struct chk *k, void *p, size_t len, unsigned flags, uint32_t *key)
{
	int r = dnp_register(k->a.d, p, len, flags, key);

	if (r < 0)
		fail(k, "register %zu bytes (flags %#x): %s", len, flags, dnp_strerror(r));
	return r;
}

/* A and B swap a message of tag TAG_ADDR (a..d as the mode wants). */
int exchange(struct chk *k, const struct app_ctrl *mine, struct app_msg *theirs)
{
	struct app_ctrl c = *mine;
	int r;

	c.tag = TAG_ADDR;
	r = app_ctrl_send(&k->a, k->peer_id, &c);
	if (r == 0)
		r = app_ctrl_recv(&k->a, k->peer_id, TAG_ADDR, theirs);
	if (r < 0)
		fail(k, "handshake with node %u: %s", k->peer_id, dnp_strerror(r));
	return r;
}

int send_tag(struct chk *k, unsigned dst, uint32_t tag, uint64_t val)
{
	struct app_ctrl c;
	int r;

	memset(&c, 0, sizeof(c));
	c.tag = tag;
	c.a = val;
	r = app_ctrl_send(&k->a, dst, &c);
	if (r < 0)
		fail(k, "control message %u to node %u: %s", tag, dst, dnp_strerror(r));
	return r;
}

int recv_tag(struct chk *k, unsigned src, uint32_t tag, uint64_t *val)
{
	struct app_msg m;
	int r = app_ctrl_recv(&k->a, src, tag, &m);

	if (r < 0) {
		fail(k, "control message %u from node %u: %s", tag, src, dnp_strerror(r));
		return r;
	}
	if (val)
		*val = m.c.a;
	return 0;
}

/* A: tells B it is done (TAG_DONE), then takes B's verdict. Returns 0. */
int a_done(struct chk *k)
{
	send_tag(k, k->peer_id, TAG_DONE, 0);
	verdict_a(k);
	return 0;
}

int b_verdict(struct chk *k, const char *ok_fmt, ...)
{
	va_list ap;

	if (!k->fails) {
		printf("ok: ");
		va_start(ap, ok_fmt);
		vprintf(ok_fmt, ap);
		va_end(ap);
		putchar('\n');
	}
	return send_tag(k, k->peer_id, TAG_VERDICT, k->fails);
}

/* A waits for B's verdict (number of failures B found). */
void verdict_a(struct chk *k)
{
	uint64_t v;

	if (recv_tag(k, k->peer_id, TAG_VERDICT, &v) == 0 && v)
		fail(k, "node %u reports %llu failed checks", k->peer_id, (unsigned long long)v);
}

/* Issues a PUT and waits for its completion; returns the event status (0 ok). */
int put_wait(struct chk *k, const void *src, size_t len, struct dnp_coords dst, uint64_t va,
	     uint32_t key, struct dnp_event *ev)
{
	uint64_t cookie = ++k->cookie;
	int r;

	r = dnp_put(k->a.d, src, len, dst, k->a.peer_port, va, key, cookie, 0);
	if (r < 0)
		return r;
	r = app_wait_completion(&k->a, cookie, ev);
	if (r < 0)
		return r;
	return ev->type == DNP_EV_TX_DONE ? 0 : ev->status ? ev->status : -EIO;
}

void expect_status(struct chk *k, const char *what, int got, int want)
{
	if (got == want)
		printf("ok: %s -> %s\n", what, want ? dnp_strerror(want) : "completed");
	else
		fail(k, "%s: got %d (%s), expected %d (%s)", what, got, dnp_strerror(got), want,
		     dnp_strerror(want));
}

/* Discards queued events (RX reports, completions already accounted for). */
unsigned drain(struct chk *k, unsigned type)
{
	struct dnp_event ev;
	unsigned n = 0;

	while (app_next_event(&k->a, &ev, 0) == 1)
		n += ev.type == type;
	return n;
}

/* B: registers one or two buffers and tells A (a, b: the first; c, d: the second). */
int offer(struct chk *k, void *p1, size_t len1, unsigned flags, void *p2, size_t len2)
{
	struct app_ctrl c;
	struct app_msg m;
	uint32_t key1, key2 = 0;

	if (reg(k, p1, len1, flags, &key1) < 0 || (p2 && reg(k, p2, len2, flags, &key2) < 0))
		return -EIO;
	memset(&c, 0, sizeof(c));
	c.a = (uintptr_t)p1;
	c.b = key1;
	c.c = (uintptr_t)p2;
	c.d = key2;
	return exchange(k, &c, &m) < 0 ? -EIO : 0;
}

/* A: learns the buffer(s) B offers (the message's a..d). */
int take_offer(struct chk *k, struct app_msg *m)
{
	struct app_ctrl c;

	memset(&c, 0, sizeof(c));
	return exchange(k, &c, m) < 0 ? -EIO : 0;
}

int next_completion(struct chk *k, struct dnp_event *ev, unsigned done, unsigned total)
{
	int r;

	for (;;) {
		r = app_next_event(&k->a, ev, k->a.timeout_ms);
		if (r <= 0) {
			fail(k, "%u of %u PUTs completed: %s", done, total,
			     r ? dnp_strerror(r) : "timed out");
			return -EIO;
		}
		if (ev->type == DNP_EV_TX_DONE || ev->type == DNP_EV_ERROR)
			return 0;
	}
}

bool cookie_once(struct chk *k, uint64_t cookie, uint64_t base, uint64_t n, uint8_t *seen)
{
	if (cookie < base || cookie >= base + n || seen[cookie - base]++) {
		fail(k, "unexpected or duplicate completion cookie %llu",
		     (unsigned long long)cookie);
		return false;
	}
	return true;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [--peer X,Y,Z] MODE\n"
		   "       " PROG " --help | --version\n"
		   "  MODE: send-order get bad-key out-of-bounds outstanding-1000 blocking-20000\n"
		   "        bad-args kill-survivor farthest link-drill slow-drain kill-mid-send\n"
		   "        private-fault flags\n"
		   "        (kill-victim and kill-send-victim are internal)\n"
		   "  Run it under dnp-run on a torus of at least two nodes.\n");
}

/* Which node does what in a mode. */
enum role {
	ROLE_PAIR,   /* A and B (a_fn, b_fn); other nodes exit 0 */
	ROLE_A_ONLY, /* A alone (a_fn) */
	ROLE_ALL,    /* every node (all_fn) */
};

struct mode {
	const char *name;
	enum role role;
	const char *env; /* an environment variable the mode needs, or NULL */
	int (*a_fn)(struct chk *k);
	int (*b_fn)(struct chk *k);
	int (*all_fn)(struct chk *k, const char *env);
};

static int bad_key_a(struct chk *k)
{
	return mode_reject_a(k, true);
}
static int bad_key_b(struct chk *k)
{
	return mode_reject_b(k, true);
}
static int oob_a(struct chk *k)
{
	return mode_reject_a(k, false);
}
static int oob_b(struct chk *k)
{
	return mode_reject_b(k, false);
}
static int drill_a(struct chk *k)
{
	return mode_drill_a(k, getenv("DNP_DRILL_FLAG"));
}
static int drill_b(struct chk *k)
{
	return mode_drill_b(k, getenv("DNP_DRILL_FLAG"));
}
static int farthest(struct chk *k, const char *env)
{
	(void)env;
	return mode_farthest(k);
}

static const struct mode modes[] = {
	{ "send-order", ROLE_PAIR, NULL, mode_send_order_a, mode_send_order_b, NULL },
	{ "get", ROLE_PAIR, NULL, mode_get_a, mode_get_b, NULL },
	{ "bad-key", ROLE_PAIR, NULL, bad_key_a, bad_key_b, NULL },
	{ "out-of-bounds", ROLE_PAIR, NULL, oob_a, oob_b, NULL },
	{ "outstanding-1000", ROLE_PAIR, NULL, mode_outstanding_a, mode_outstanding_b, NULL },
	{ "blocking-20000", ROLE_PAIR, NULL, mode_blocking_a, mode_blocking_b, NULL },
	{ "bad-args", ROLE_A_ONLY, NULL, mode_bad_args, NULL, NULL },
	{ "kill-survivor", ROLE_PAIR, NULL, mode_kill_survivor_a, mode_kill_survivor_b, NULL },
	{ "farthest", ROLE_ALL, NULL, NULL, NULL, farthest },
	{ "link-drill", ROLE_PAIR, "DNP_DRILL_FLAG", drill_a, drill_b, NULL },
	{ "slow-drain", ROLE_ALL, "DNP_CHECK_FLAG", NULL, NULL, mode_slow_drain },
	{ "kill-mid-send", ROLE_PAIR, NULL, midsend_a, midsend_b, NULL },
	{ "private-fault", ROLE_PAIR, NULL, mode_private_fault_a, mode_private_fault_b, NULL },
	{ "flags", ROLE_PAIR, NULL, mode_flags_a, mode_flags_b, NULL },
};

/* The command line: the mode, and the peer when --peer gave one. -1 to go on, else the exit status. */
static int parse_cmdline(int argc, char **argv, const char **mode, struct dnp_coords *peer,
			 bool *have_peer)
{
	static const struct option lo[] = {
		{ "peer", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:hV", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (app_parse_coords(optarg, peer) < 0)
				return app_cli_bad_value(PROG, usage, "--peer", optarg);
			*have_peer = true;
			break;
		default: /* --help, --version, usage errors */
			return app_cli_other(PROG, usage, c, argv);
		}
	}
	if (optind >= argc)
		return app_cli_usage_error(PROG, usage, "no MODE given");
	if (optind + 1 < argc)
		return app_cli_usage_error(PROG, usage, "one MODE only ('%s' is extra)",
					   argv[optind + 1]);
	*mode = argv[optind];
	return -1;
}

/*
 * Which part this node plays in a pair mode: A (the origin) or B (the peer).
 * Returns 1 to run it, 0 when this node has no part, 2 for a bad peer.
 */
static int pick_pair(struct chk *k, const struct mode *m, struct dnp_coords peer, bool have_peer)
{
	struct dnp_coords origin = { 0, 0, 0 };
	struct app_bench_opts o = { .have_peer = have_peer, .peer = peer };
	int r;

	k->is_a = app_coords_eq(k->a.self, origin);
	if (m->role == ROLE_A_ONLY)
		return k->is_a;
	r = app_pick_pair(&k->a, &o, PROG, NULL, &k->peer);
	if (r <= 0)
		return r < 0 ? 2 : 0;
	k->peer_id = app_id_of(&k->a, k->peer);
	return 1;
}

static const struct mode *find_mode(const char *name)
{
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(modes[i].name, name))
			return &modes[i];
	return NULL;
}

int main(int argc, char **argv)
{
	struct dnp_coords peer = { 0, 0, 0 };
	bool have_peer = false;
	const struct mode *m;
	static struct chk k;
	const char *mode = NULL;
	int r;

	r = parse_cmdline(argc, argv, &mode, &peer, &have_peer);
	if (r >= 0)
		return r;
	if (!strcmp(mode, "kill-victim"))
		return mode_kill_victim();
	if (!strcmp(mode, "kill-send-victim"))
		return mode_kill_send_victim();
	m = find_mode(mode);
	if (!m)
		return app_cli_usage_error(PROG, usage, "unknown mode '%s'", mode);
	if (m->env && !getenv(m->env)) {
		fprintf(stderr, PROG ": %s needs %s (see the header of dnp_check.c)\n", mode,
			m->env);
		return 2;
	}
	if (app_open(&k.a, PROG) < 0)
		return 1;
	k.cookie = 1;
	if (m->role == ROLE_ALL) {
		r = m->all_fn(&k, m->env ? getenv(m->env) : NULL);
	} else {
		r = pick_pair(&k, m, peer, have_peer);
		if (r != 1) {
			app_close(&k.a);
			return r;
		}
		r = k.is_a ? m->a_fn(&k) : m->b_fn(&k);
	}
	if (r < 0 && !k.fails)
		fail(&k, "%s: %s", mode, dnp_strerror(r));
	if (!k.fails)
		printf("PASS %s on node %u,%u,%u\n", mode, k.a.self.x, k.a.self.y, k.a.self.z);
	else
		printf("FAIL %s on node %u,%u,%u: %u failed checks\n", mode, k.a.self.x, k.a.self.y,
		       k.a.self.z, k.fails);
	app_close(&k.a);
	return k.fails ? 1 : 0;
}
