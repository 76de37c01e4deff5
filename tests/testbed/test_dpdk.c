/* SPDX-License-Identifier: MIT */
/*
 * test_dpdk — the dpdk transport (transport/dpdk/dpdk.h) end to end, through
 * its ops table, between two processes in two network namespaces joined by
 * veth pairs (tests/testbed/netns.sh up 2x1x1), each process with its own EAL
 * and an af_packet port:
 *   - 10k DNP-sized frames (64..4160 bytes) both ways, MTU 9000: one Ethernet
 *     frame per DNP frame, content and order verified;
 *   - the same at MTU 1500: fragmentation and reassembly;
 *   - two links sharing one port, told apart by channel;
 *   - the same 10k frames over memif ("memif:PATH", the socket crossing the
 *     namespaces), no neighbour MAC given;
 *   - the veth taken down: up() turns false, tx_burst still returns;
 *   - a 2x2x2 torus (8 namespaces, 24 veth pairs, 8 processes): every node
 *     exchanges frames on its six links at once, each arriving from the right
 *     neighbour and direction.
 * Needs root, iproute2 and DPDK with the af_packet PMD: otherwise exits 77.
 * The parent process runs cmocka and the namespaces; each side is a forked
 * child that enters its namespace before rte_eal_init. Pipes synchronise the
 * start (both ports open before the first frame) and the link-down step.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dpdk.h"

#define FRAMES 10000u
#define FRAME_MIN 64u
#define FRAME_MAX 4160u
#define WINDOW 32u
#define CHILD_TIMEOUT_MS 20000u

struct end {
	char ns[64];
	char ifname[16];
	char mac[32]; /* own MAC */
	char peer_mac[32];
};

/* The two veth pairs between node 0 and node 1 of a 2x1x1 torus. */
static struct end pair_a[2]; /* node0 xp <-> node1 xm */
static struct end pair_b[2]; /* node0 xm <-> node1 xp */
static char prefix[32];
static const char *netns_sh;

enum role {
	ROLE_EXCHANGE,
	ROLE_SHARED,
	ROLE_DOWN,
	ROLE_TORUS,
	ROLE_MEMIF,
};

/* One node's link of the 2x2x2 torus (a line of PREFIX.topo). */
struct tlink {
	unsigned id, dir, peer;
	char ifname[16];
	char peer_mac[32];
};

#define TORUS_NODES 8u
#define TORUS_FRAMES 300u
static struct tlink torus[TORUS_NODES * 6];
static unsigned ntorus;
static char tprefix[32];

struct child_conf {
	enum role role;
	unsigned side; /* ROLE_TORUS: the node id */
	const struct end *e;
	uint32_t expect_mtu;
	int to_parent, from_parent;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* ---- frame contents ---- */

static uint32_t frame_len(uint32_t i)
{
	if (i % 97 == 1)
		return FRAME_MAX;
	if (i % 97 == 2)
		return FRAME_MIN;
	return FRAME_MIN + (uint32_t)((i * 2654435761u) >> 7) % (FRAME_MAX - FRAME_MIN + 1);
}

static uint8_t frame_byte(uint32_t i, uint32_t j, unsigned tag)
{
	return (uint8_t)(i * 7u + j * 13u + tag * 101u + (j >> 8));
}

static void frame_fill(uint8_t *buf, uint32_t i, unsigned tag)
{
	uint32_t len = frame_len(i);

	for (uint32_t j = 0; j < len; j++)
		buf[j] = frame_byte(i, j, tag);
	memcpy(buf, &i, sizeof(i));
}

static bool frame_check(const struct dnp_rx_frame *f, uint32_t i, unsigned tag)
{
	uint32_t idx;

	if (f->len != frame_len(i))
		return false;
	memcpy(&idx, f->data, sizeof(idx));
	if (idx != i)
		return false;
	for (uint32_t j = sizeof(idx); j < f->len; j++)
		if (f->data[j] != frame_byte(i, j, tag))
			return false;
	return true;
}

/* ---- child side ---- */

static int child_eal(const struct child_conf *c)
{
	char ns[128], args[512];
	int fd, ret;

	snprintf(ns, sizeof(ns), "/var/run/netns/%s", c->e->ns);
	fd = open(ns, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
		fprintf(stderr, "side %u: cannot enter %s: %s\n", c->side, ns, strerror(errno));
		return -1;
	}
	close(fd);
	/*
	 * Side 0 names its port on the EAL command line, side 1 lets open()
	 * hot-plug it from devargs or "af_packet:IFNAME": every way of giving
	 * conf.local is exercised.
	 */
	snprintf(args, sizeof(args),
		 "--no-huge --no-pci --no-shconf --no-telemetry -m 128 --log-level=*:error %s%s%s",
		 c->side == 0 ? "--vdev=net_af_packet0,iface=" : "",
		 c->side == 0 ? c->e->ifname : "",
		 c->side == 0 ? ",framesz=8192,blocksz=8192,framecnt=4096" : "");
	ret = dnp_dpdk_eal_init_str("test_dpdk", args);
	if (ret < 0)
		fprintf(stderr, "side %u: EAL init: %s\n", c->side, strerror(-ret));
	return ret;
}

static int child_open(const struct child_conf *c, const char *options, struct dnp_transport **t)
{
	char local[256];
	struct dnp_transport_conf tc = {
		.remote = c->e->peer_mac,
		.side = c->side,
		.frame_max = FRAME_MAX,
		.depth = 64,
		.options = options,
	};
	int ret;

	/* side 1: full devargs for the exchanges, the short form otherwise */
	if (c->side == 0)
		snprintf(local, sizeof(local), "net_af_packet0");
	else if (c->role == ROLE_MEMIF)
		snprintf(local, sizeof(local), "memif:/tmp/%s.memif", prefix);
	else if (c->role == ROLE_EXCHANGE)
		snprintf(local, sizeof(local),
			 "net_af_packet_t1,iface=%s,framesz=8192,blocksz=8192,framecnt=4096",
			 c->e->ifname);
	else
		snprintf(local, sizeof(local), "af_packet:%s", c->e->ifname);
	if (c->role == ROLE_MEMIF) {
		/* both ends name the socket; side 0 serves it */
		snprintf(local, sizeof(local), "memif:/tmp/%s.memif", prefix);
		tc.remote = local; /* dnpd's "LOCAL" alone: broadcast on a dedicated port */
	}
	tc.local = local;
	ret = dnp_transport_dpdk.open(&tc, t);
	if (ret < 0)
		fprintf(stderr, "side %u: open %s: %s\n", c->side, local, strerror(-ret));
	return ret;
}

static int child_sync(const struct child_conf *c, char tell)
{
	char b;

	if (write(c->to_parent, &tell, 1) != 1)
		return -1;
	if (read(c->from_parent, &b, 1) != 1)
		return -1;
	return 0;
}

struct flow {
	struct dnp_transport *t;
	unsigned tx_tag, rx_tag;
	uint32_t sent, recvd;
};

/*
 * Sends FRAMES frames on each flow and receives as many, at most WINDOW
 * ahead of what came back, so nothing overflows the kernel rings: any loss or
 * reordering is then the transport's fault and fails the test.
 */
static int exchange(struct flow *fl, unsigned nfl, unsigned side, uint32_t frames)
{
	static uint8_t buf[WINDOW][FRAME_MAX];
	uint64_t deadline = now_ms() + CHILD_TIMEOUT_MS;
	bool done = false;

	while (!done) {
		bool progress = false;

		done = true;
		for (unsigned k = 0; k < nfl; k++) {
			struct flow *f = &fl[k];
			struct dnp_tx_frame tx[8];
			struct dnp_rx_frame rx[32];
			unsigned ntx = 0;
			int n;

			while (ntx < 8 && f->sent + ntx < frames &&
			       f->sent + ntx < f->recvd + WINDOW) {
				uint32_t i = f->sent + ntx;

				frame_fill(buf[i % WINDOW], i, f->tx_tag);
				tx[ntx].data = buf[i % WINDOW];
				tx[ntx].len = frame_len(i);
				ntx++;
			}
			if (ntx) {
				n = dnp_transport_dpdk.tx_burst(f->t, tx, ntx);
				if (n < 0) {
					fprintf(stderr, "side %u: tx_burst %d\n", side, n);
					return 2;
				}
				f->sent += (uint32_t)n;
				progress |= n > 0;
			}
			n = dnp_transport_dpdk.rx_burst(f->t, rx, 32);
			if (n < 0) {
				fprintf(stderr, "side %u: rx_burst %d\n", side, n);
				return 2;
			}
			for (int r = 0; r < n; r++) {
				if (f->recvd >= frames ||
				    !frame_check(&rx[r], f->recvd, f->rx_tag)) {
					uint32_t idx = 0;

					memcpy(&idx, rx[r].data, sizeof(idx));
					fprintf(stderr,
						"side %u flow %u: frame %u: got index %u len %u"
						" (want len %u)\n",
						side, k, f->recvd, idx, rx[r].len,
						frame_len(f->recvd));
					return 4;
				}
				f->recvd++;
			}
			progress |= n > 0;
			if (f->sent < frames || f->recvd < frames)
				done = false;
		}
		if (now_ms() > deadline) {
			for (unsigned k = 0; k < nfl; k++)
				fprintf(stderr, "side %u flow %u: timeout sent %u received %u\n",
					side, k, fl[k].sent, fl[k].recvd);
			return 3;
		}
		if (!progress)
			sched_yield();
	}
	/* Let rx_burst flush anything the PMD did not take yet. */
	for (uint64_t end = now_ms() + 100; now_ms() < end;) {
		struct dnp_rx_frame rx[32];

		for (unsigned k = 0; k < nfl; k++)
			dnp_transport_dpdk.rx_burst(fl[k].t, rx, 32);
		sched_yield();
	}
	return 0;
}

static int child_exchange(const struct child_conf *c)
{
	struct dnp_dpdk_stats st;
	struct flow f = { .tx_tag = c->side, .rx_tag = 1 - c->side };
	int ret;

	if (child_open(c, NULL, &f.t) < 0)
		return 1;
	/* Jumbo: whatever the port allows above one whole DNP frame; else exactly. */
	if (c->expect_mtu >= FRAME_MAX + DNP_DPDK_FHDR_LEN ?
		    dnp_dpdk_eth_mtu(f.t) < FRAME_MAX + DNP_DPDK_FHDR_LEN :
		    dnp_dpdk_eth_mtu(f.t) != c->expect_mtu) {
		fprintf(stderr, "side %u: Ethernet MTU %u, want %u\n", c->side,
			dnp_dpdk_eth_mtu(f.t), c->expect_mtu);
		return 5;
	}
	/* memif connects after both ends opened: wait for the link. */
	for (uint64_t end = now_ms() + 5000; !dnp_transport_dpdk.up(f.t);) {
		if (now_ms() > end) {
			fprintf(stderr, "side %u: link not up\n", c->side);
			return 8;
		}
		usleep(1000);
	}
	if (child_sync(c, 'R') < 0)
		return 1;
	ret = exchange(&f, 1, c->side, FRAMES);
	dnp_dpdk_stats(f.t, &st);
	fprintf(stderr,
		"side %u: tx %lu frames in %lu Ethernet frames, rx %lu in %lu, bad %lu,"
		" reassembly drops %lu\n",
		c->side, (unsigned long)st.tx_frames, (unsigned long)st.tx_eth,
		(unsigned long)st.rx_frames, (unsigned long)st.rx_eth, (unsigned long)st.rx_bad,
		(unsigned long)st.rx_reasm_drop);
	if (ret == 0 && (st.tx_frames != FRAMES || st.rx_frames != FRAMES || st.rx_bad))
		ret = 6;
	/* At MTU 1500 the large frames must have gone in several pieces. */
	if (ret == 0 && c->expect_mtu < FRAME_MAX && st.tx_eth <= st.tx_frames)
		ret = 7;
	if (ret == 0 && c->expect_mtu >= FRAME_MAX + DNP_DPDK_FHDR_LEN && st.tx_eth != st.tx_frames)
		ret = 7;
	/*
	 * Close only once the peer stopped polling: DPDK 22.11's memif can
	 * crash a process polling a port whose peer disconnects meanwhile.
	 */
	if (child_sync(c, 'D') < 0 && ret == 0)
		ret = 1;
	dnp_transport_dpdk.close(f.t);
	return ret;
}

static int child_shared(const struct child_conf *c)
{
	/* Link k: chan k, peer_chan 1 - k, so side 0 link 0 talks to side 1 link 1. */
	static const char *const opts[2] = { "shared,chan=0,peer_chan=1",
					     "shared,chan=1,peer_chan=0" };
	struct flow f[2];
	int ret;

	for (unsigned k = 0; k < 2; k++) {
		memset(&f[k], 0, sizeof(f[k]));
		if (child_open(c, opts[k], &f[k].t) < 0)
			return 1;
		/* tag = (side, chan); what arrives on chan k was sent by the peer's chan 1 - k */
		f[k].tx_tag = 10 + c->side * 2 + k;
		f[k].rx_tag = 10 + (1 - c->side) * 2 + (1 - k);
	}
	if (child_sync(c, 'R') < 0)
		return 1;
	ret = exchange(f, 2, c->side, FRAMES / 5);
	for (unsigned k = 0; k < 2; k++)
		dnp_transport_dpdk.close(f[k].t);
	return ret;
}

static int child_down(const struct child_conf *c)
{
	struct dnp_transport *t;
	uint64_t deadline;
	char b = 'U';

	if (child_open(c, "link_poll_ms=1", &t) < 0)
		return 1;
	if (child_sync(c, 'R') < 0)
		return 1;
	deadline = now_ms() + 3000;
	while (!dnp_transport_dpdk.up(t)) {
		if (now_ms() > deadline) {
			fprintf(stderr, "side %u: link never up\n", c->side);
			return 8;
		}
		usleep(1000);
	}
	/* Side 0 reports "up seen"; the parent then takes the peer's veth down. */
	if (write(c->to_parent, &b, 1) != 1)
		return 1;
	deadline = now_ms() + 5000;
	while (dnp_transport_dpdk.up(t)) {
		if (now_ms() > deadline) {
			fprintf(stderr, "side %u: link still up 5 s after the veth went down\n",
				c->side);
			return 9;
		}
		usleep(1000);
	}
	/* A dead link must not block the daemon: sending just loses the frames. */
	{
		static uint8_t big[FRAME_MAX];
		struct dnp_tx_frame f[8];
		uint64_t end = now_ms() + 2000;

		for (unsigned i = 0; i < 8; i++) {
			f[i].data = big;
			f[i].len = FRAME_MAX;
		}
		for (unsigned i = 0; i < 1000 && now_ms() < end; i++) {
			if (dnp_transport_dpdk.tx_burst(t, f, 8) < 0) {
				fprintf(stderr, "side %u: tx_burst failed on a down link\n",
					c->side);
				return 10;
			}
			dnp_transport_dpdk.rx_burst(t, NULL, 0);
		}
	}
	dnp_transport_dpdk.close(t);
	return 0;
}

/*
 * One node of the 2x2x2 torus: opens its six links ("af_packet:d<id>-<dir>",
 * peer MAC from the topology) and exchanges frames on all of them at once;
 * what arrives on direction d must come from the neighbour's direction d^1.
 */
static int child_torus(const struct child_conf *c)
{
	struct flow f[6];
	char path[128], local[64];
	unsigned nfl = 0;
	int fd, ret;

	snprintf(path, sizeof(path), "/var/run/netns/%s-%u", tprefix, c->side);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
		fprintf(stderr, "node %u: cannot enter %s\n", c->side, path);
		return 1;
	}
	close(fd);
	ret = dnp_dpdk_eal_init_str("test_dpdk",
				    "--no-huge --no-pci --no-shconf --no-telemetry -m 160 "
				    "--log-level=*:error");
	if (ret < 0)
		return 1;
	for (unsigned i = 0; i < ntorus; i++) {
		const struct tlink *l = &torus[i];
		struct dnp_transport_conf tc = {
			.local = local,
			.remote = l->peer_mac,
			.side = l->id < l->peer ? 0 : 1,
			.frame_max = FRAME_MAX,
			.depth = 64,
		};

		if (l->id != c->side)
			continue;
		snprintf(local, sizeof(local), "af_packet:%s", l->ifname);
		memset(&f[nfl], 0, sizeof(f[nfl]));
		f[nfl].tx_tag = l->id * 8 + l->dir;
		f[nfl].rx_tag = l->peer * 8 + (l->dir ^ 1);
		ret = dnp_transport_dpdk.open(&tc, &f[nfl].t);
		if (ret < 0) {
			fprintf(stderr, "node %u: open %s: %s\n", c->side, local, strerror(-ret));
			return 1;
		}
		nfl++;
	}
	if (nfl != 6) {
		fprintf(stderr, "node %u: %u links, want 6\n", c->side, nfl);
		return 1;
	}
	if (child_sync(c, 'R') < 0)
		return 1;
	ret = exchange(f, nfl, c->side, TORUS_FRAMES);
	for (unsigned k = 0; k < nfl; k++)
		dnp_transport_dpdk.close(f[k].t);
	return ret;
}

static int child_main(const struct child_conf *c)
{
	if (c->role == ROLE_TORUS)
		return child_torus(c);
	if (child_eal(c) < 0)
		return 1;
	switch (c->role) {
	case ROLE_EXCHANGE:
	case ROLE_MEMIF:
		return child_exchange(c);
	case ROLE_SHARED:
		return child_shared(c);
	case ROLE_DOWN:
		return child_down(c);
	case ROLE_TORUS:
		break;
	}
	return 1;
}

/* ---- parent side ---- */

struct kid {
	pid_t pid;
	int rd, wr; /* from child, to child */
};

static void spawn(struct kid *k, enum role role, unsigned side, const struct end *e,
		  uint32_t expect_mtu)
{
	int up[2], down[2];
	pid_t pid;

	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct child_conf c = {
			.role = role,
			.side = side,
			.e = e,
			.expect_mtu = expect_mtu,
			.to_parent = up[1],
			.from_parent = down[0],
		};

		close(up[0]);
		close(down[1]);
		_exit(child_main(&c));
	}
	close(up[1]);
	close(down[0]);
	k->pid = pid;
	k->rd = up[0];
	k->wr = down[1];
}

/* Reads one byte from a child within ms; '\0' on timeout or EOF. */
static char kid_read(const struct kid *k, int ms)
{
	struct pollfd p = { .fd = k->rd, .events = POLLIN };
	char b;

	if (poll(&p, 1, ms) != 1 || read(k->rd, &b, 1) != 1)
		return '\0';
	return b;
}

static int kid_wait(struct kid *k, int ms)
{
	uint64_t deadline = now_ms() + (uint64_t)ms;
	int st;

	for (;;) {
		pid_t r = waitpid(k->pid, &st, WNOHANG);

		if (r == k->pid)
			break;
		if (now_ms() > deadline) {
			kill(k->pid, SIGKILL);
			waitpid(k->pid, &st, 0);
			break;
		}
		usleep(2000);
	}
	close(k->rd);
	close(k->wr);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Both sides up, both released at once, both exit 0. */
static void run_pair(enum role role, const struct end *e, uint32_t mtu)
{
	struct kid k[2];
	char go = 'G';
	int st0, st1;

	spawn(&k[0], role, 0, &e[0], mtu);
	spawn(&k[1], role, 1, &e[1], mtu);
	assert_int_equal(kid_read(&k[0], 10000), 'R');
	assert_int_equal(kid_read(&k[1], 10000), 'R');
	assert_int_equal(write(k[0].wr, &go, 1), 1);
	assert_int_equal(write(k[1].wr, &go, 1), 1);
	if (role == ROLE_EXCHANGE || role == ROLE_MEMIF) {
		/* both done before either closes (a child that failed sends nothing) */
		char d0 = kid_read(&k[0], 25000), d1 = kid_read(&k[1], 25000);

		assert_int_equal(write(k[0].wr, &go, 1), 1);
		assert_int_equal(write(k[1].wr, &go, 1), 1);
		st0 = kid_wait(&k[0], 25000);
		st1 = kid_wait(&k[1], 25000);
		assert_int_equal(st0, 0);
		assert_int_equal(st1, 0);
		assert_int_equal(d0, 'D');
		assert_int_equal(d1, 'D');
		return;
	}
	if (role == ROLE_DOWN) {
		assert_int_equal(kid_read(&k[0], 5000), 'U');
		assert_int_equal(kid_read(&k[1], 5000), 'U');
		assert_int_equal(run("ip -n %s link set dev %s down", e[1].ns, e[1].ifname), 0);
	}
	st0 = kid_wait(&k[0], 25000);
	st1 = kid_wait(&k[1], 25000);
	assert_int_equal(st0, 0);
	assert_int_equal(st1, 0);
}

static void set_mtu(const struct end *e, unsigned mtu)
{
	for (unsigned s = 0; s < 2; s++)
		assert_int_equal(run("ip -n %s link set dev %s mtu %u", e[s].ns, e[s].ifname, mtu),
				 0);
}

static void test_dpdk_jumbo_exchange(void **state)
{
	set_mtu(pair_a, 9000);
	run_pair(ROLE_EXCHANGE, pair_a, 9000);
}

static void test_dpdk_fragmented_exchange(void **state)
{
	set_mtu(pair_a, 1500);
	run_pair(ROLE_EXCHANGE, pair_a, 1500);
	set_mtu(pair_a, 9000);
}

static void test_dpdk_shared_port_demux(void **state)
{
	run_pair(ROLE_SHARED, pair_b, 9000);
}

static void test_dpdk_memif_exchange(void **state)
{
	run_pair(ROLE_MEMIF, pair_a, 9000);
}

static void test_dpdk_link_down(void **state)
{
	run_pair(ROLE_DOWN, pair_a, 9000);
}

static void test_dpdk_torus_all_links(void **state)
{
	struct kid k[TORUS_NODES];
	char go = 'G';

	for (unsigned n = 0; n < TORUS_NODES; n++)
		spawn(&k[n], ROLE_TORUS, n, NULL, 0);
	for (unsigned n = 0; n < TORUS_NODES; n++)
		assert_int_equal(kid_read(&k[n], 20000), 'R');
	for (unsigned n = 0; n < TORUS_NODES; n++)
		assert_int_equal(write(k[n].wr, &go, 1), 1);
	for (unsigned n = 0; n < TORUS_NODES; n++)
		assert_int_equal(kid_wait(&k[n], 30000), 0);
}

static int torus_setup(void **state)
{
	char topo[128], line[512], d[8], ns[64], mac[32], pif[16];
	FILE *f;

	snprintf(tprefix, sizeof(tprefix), "dnpT%d", (int)getpid());
	if (run("%s up 2x2x2 %s /tmp >/dev/null", netns_sh, tprefix) != 0)
		return -1;
	snprintf(topo, sizeof(topo), "/tmp/%s.topo", tprefix);
	f = fopen(topo, "r");
	if (!f)
		return -1;
	ntorus = 0;
	while (fgets(line, sizeof(line), f) && ntorus < TORUS_NODES * 6) {
		struct tlink *l = &torus[ntorus];

		if (line[0] == '#')
			continue;
		if (sscanf(line, "%u %7s %u %63s %15s %31s %u %15s %31s", &l->id, d, &l->dir, ns,
			   l->ifname, mac, &l->peer, pif, l->peer_mac) == 9)
			ntorus++;
	}
	fclose(f);
	return ntorus == TORUS_NODES * 6 ? 0 : -1;
}

static int torus_teardown(void **state)
{
	run("%s down %s /tmp", netns_sh, tprefix);
	return 0;
}

static bool topo_end(const char *path, const char *dir, struct end e[2])
{
	char line[512], id[16], d[8], dn[8], ns[64], ifn[16], mac[32], pid[16], pif[16], pmac[32];
	FILE *f = fopen(path, "r");
	bool found = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		if (sscanf(line, "%15s %7s %7s %63s %15s %31s %15s %15s %31s", id, d, dn, ns, ifn,
			   mac, pid, pif, pmac) != 9)
			continue;
		if (strcmp(id, "0") != 0 || strcmp(d, dir) != 0)
			continue;
		snprintf(e[0].ns, sizeof(e[0].ns), "%s", ns);
		snprintf(e[0].ifname, sizeof(e[0].ifname), "%s", ifn);
		snprintf(e[0].mac, sizeof(e[0].mac), "%s", mac);
		snprintf(e[0].peer_mac, sizeof(e[0].peer_mac), "%s", pmac);
		snprintf(e[1].ns, sizeof(e[1].ns), "%s-%s", prefix, pid);
		snprintf(e[1].ifname, sizeof(e[1].ifname), "%s", pif);
		snprintf(e[1].mac, sizeof(e[1].mac), "%s", pmac);
		snprintf(e[1].peer_mac, sizeof(e[1].peer_mac), "%s", mac);
		found = true;
	}
	fclose(f);
	return found;
}

static int group_setup(void **state)
{
	char topo[128];

	snprintf(prefix, sizeof(prefix), "dnpt%d", (int)getpid());
	if (run("%s up 2x1x1 %s /tmp >/dev/null", netns_sh, prefix) != 0)
		return -1;
	snprintf(topo, sizeof(topo), "/tmp/%s.topo", prefix);
	if (!topo_end(topo, "xp", pair_a) || !topo_end(topo, "xm", pair_b))
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	run("%s down %s /tmp", netns_sh, prefix);
	run("rm -f /tmp/%s.memif", prefix);
	return 0;
}

static bool af_packet_available(void)
{
	/* Debian installs the PMDs as plugins; a static DPDK links them in. */
	return run("ls /usr/lib/*/dpdk/pmds-*/librte_net_af_packet.so* >/dev/null 2>&1") == 0 ||
	       run("ls /usr/local/lib*/dpdk/pmds-*/librte_net_af_packet.so* "
		   ">/dev/null 2>&1") == 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dpdk_jumbo_exchange),
		cmocka_unit_test(test_dpdk_fragmented_exchange),
		cmocka_unit_test(test_dpdk_shared_port_demux),
		cmocka_unit_test(test_dpdk_memif_exchange),
		cmocka_unit_test(test_dpdk_link_down),
	};
	const struct CMUnitTest torus_tests[] = {
		cmocka_unit_test(test_dpdk_torus_all_links),
	};
	int failed;

	if (geteuid() != 0) {
		printf("test_dpdk: SKIP: needs root (network namespaces and raw sockets)\n");
		return 77;
	}
	netns_sh = getenv("DNP_NETNS_SH");
	if (!netns_sh || access(netns_sh, X_OK) != 0) {
		printf("test_dpdk: SKIP: DNP_NETNS_SH does not name tests/testbed/netns.sh\n");
		return 77;
	}
	if (run("ip -V >/dev/null 2>&1") != 0 || run("ip netns list >/dev/null 2>&1") != 0) {
		printf("test_dpdk: SKIP: iproute2 with network namespace support is missing\n");
		return 77;
	}
	if (!af_packet_available()) {
		printf("test_dpdk: SKIP: the DPDK af_packet PMD is not installed\n");
		return 77;
	}
	failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
	failed += cmocka_run_group_tests_name("torus", torus_tests, torus_setup, torus_teardown);
	return failed ? 1 : 0;
}
