/* SPDX-License-Identifier: MIT */
/*
 * dpdk_pingpong — raw DPDK baseline under the dpdk transport: two processes,
 * port 0 of each, Ethernet frames of EtherType 0x88B5 bounced back and forth
 * (no DNP header, no fragmentation, no transport code). Shows what the port
 * itself costs (af_packet on veth between namespaces, memif between two
 * processes on the host), so the transport's overhead can be told apart.
 *
 *   dpdk_pingpong EAL-ARGS -- pong
 *   dpdk_pingpong EAL-ARGS -- ping [-s SIZES] [-n ITERS] [-t STREAM_MS]
 *   dpdk_pingpong EAL-ARGS -- tpong [-o OPTIONS] [-m PEER_MAC]
 *   dpdk_pingpong EAL-ARGS -- tping [-s SIZES] [-n ITERS] [-t STREAM_MS] [-o ..] [-m ..]
 *
 * tping/tpong do the same through the dpdk transport's ops table (a link on
 * port 0, OPTIONS as conf.options, e.g. "mtu=1500"; sizes are DNP frame
 * bytes, default "64,4160"), so the two sets of figures side by side give the
 * transport's own cost (header, copies, fragmentation, reassembly).
 *
 * ping prints, per frame size (Ethernet frame bytes, default "64,4096"), the
 * median / 1st / 99th percentile round trip of ITERS (default 20000) frames,
 * then a one-way stream of the largest size for STREAM_MS (default 1000 ms;
 * 0: none): frames sent, frames the pong counted, Gbit/s of Ethernet frames
 * delivered. It ends the pong with a quit frame. Busy-polls; use -l to put the
 * two processes on different cores. Frames go to the broadcast address, so no
 * MAC has to be configured.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#include "dpdk.h"

#define ETYPE 0x88B5u
#define BURST 32u
#define MAX_SIZES 8u

enum msg {
	MSG_ECHO = 1,   /* pong sends it back */
	MSG_DATA = 2,   /* stream: pong counts it */
	MSG_REPORT = 3, /* pong answers with MSG_COUNT */
	MSG_COUNT = 4,
	MSG_QUIT = 5,
};

struct body {
	uint8_t msg;
	uint8_t pad[3];
	uint32_t seq;
	uint64_t count;
} __attribute__((packed));

static struct rte_mempool *pool;
static struct rte_ether_addr self;
static const uint16_t port;

static struct rte_mbuf *make(uint32_t size, enum msg msg, uint32_t seq, uint64_t count)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct rte_ether_hdr *eh;
	struct body *b;

	if (!m)
		return NULL;
	eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	memset(&eh->dst_addr, 0xff, sizeof(eh->dst_addr));
	eh->src_addr = self;
	eh->ether_type = rte_cpu_to_be_16(ETYPE);
	b = (struct body *)(void *)(eh + 1);
	memset(b, 0, sizeof(*b));
	b->msg = (uint8_t)msg;
	b->seq = seq;
	b->count = count;
	m->data_len = (uint16_t)size;
	m->pkt_len = size;
	return m;
}

static bool send1(struct rte_mbuf *m)
{
	for (int tries = 0; tries < 1000000; tries++)
		if (rte_eth_tx_burst(port, 0, &m, 1) == 1)
			return true;
	rte_pktmbuf_free(m);
	return false;
}

static const struct body *body_of(struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);

	if (m->data_len < sizeof(*eh) + sizeof(struct body) ||
	    eh->ether_type != rte_cpu_to_be_16(ETYPE))
		return NULL;
	return (const struct body *)(const void *)(eh + 1);
}

static int pong(void)
{
	uint64_t counted = 0;

	for (;;) {
		struct rte_mbuf *mb[BURST];
		uint16_t n = rte_eth_rx_burst(port, 0, mb, BURST);

		for (uint16_t i = 0; i < n; i++) {
			const struct body *b = body_of(mb[i]);
			uint8_t msg = b ? b->msg : 0;

			if (msg == MSG_ECHO) {
				struct rte_ether_hdr *eh =
					rte_pktmbuf_mtod(mb[i], struct rte_ether_hdr *);

				eh->src_addr = self;
				send1(mb[i]);
				continue;
			}
			rte_pktmbuf_free(mb[i]);
			if (msg == MSG_DATA) {
				counted++;
			} else if (msg == MSG_REPORT) {
				struct rte_mbuf *r = make(64, MSG_COUNT, 0, counted);

				if (r)
					send1(r);
				counted = 0;
			} else if (msg == MSG_QUIT) {
				return 0;
			}
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Waits for a frame of type msg and sequence seq (others, e.g. late replies to
 * an earlier ping, are dropped); returns it or NULL after us.
 */
static struct rte_mbuf *wait_for(uint8_t msg, uint32_t seq, uint64_t us)
{
	uint64_t end = rte_get_tsc_cycles() + rte_get_tsc_hz() / 1000000 * us;

	while (rte_get_tsc_cycles() < end) {
		struct rte_mbuf *m;

		if (rte_eth_rx_burst(port, 0, &m, 1) == 0)
			continue;
		if (body_of(m) && body_of(m)->msg == msg && body_of(m)->seq == seq)
			return m;
		rte_pktmbuf_free(m);
	}
	return NULL;
}

/*
 * The round-trip loop both modes share: iters measured round trips of one()
 * after warm-up ones; one(ctx, i) sends ping i and waits for its echo,
 * returning its round trip in TSC cycles, or 0 when it was lost (tried
 * again, the run given up after 100 losses). Prints LABEL: the median, p1
 * and p99.
 */
static void rtt_loop(const char *label, uint64_t (*one)(void *ctx, unsigned i), void *ctx,
		     unsigned iters)
{
	uint64_t *s = calloc(iters, sizeof(*s));
	double us_per_tsc = 1e6 / (double)rte_get_tsc_hz();
	unsigned lost = 0, warm = iters / 10 + 10;

	if (!s)
		return;
	for (unsigned i = 0; i < iters + warm; i++) {
		uint64_t dt = one(ctx, i);

		if (!dt) {
			lost++;
			i--;
			if (lost > 100)
				break;
			continue;
		}
		if (i >= warm)
			s[i - warm] = dt;
	}
	qsort(s, iters, sizeof(*s), cmp_u64);
	printf("%s: median %6.2f us  p1 %6.2f  p99 %7.2f  (%u frames, %u lost)\n", label,
	       s[iters / 2] * us_per_tsc, s[iters / 100] * us_per_tsc,
	       s[iters - 1 - iters / 100] * us_per_tsc, iters, lost);
	free(s);
}

/* One raw ping (ping_rtt): its round trip, 0 if lost. */
static uint64_t ping_one(void *ctx, unsigned i)
{
	uint32_t size = *(const uint32_t *)ctx;
	struct rte_mbuf *m = make(size, MSG_ECHO, i, 0), *r;
	uint64_t t0 = rte_rdtsc(), dt;

	if (!m || !send1(m))
		return 0;
	r = wait_for(MSG_ECHO, i, 100000);
	if (!r)
		return 0;
	dt = rte_rdtsc() - t0;
	rte_pktmbuf_free(r);
	return dt ? dt : 1;
}

static void ping_rtt(uint32_t size, unsigned iters)
{
	char label[32];

	snprintf(label, sizeof(label), "rtt %5u B", size);
	rtt_loop(label, ping_one, &size, iters);
}

static void ping_stream(uint32_t size, unsigned ms)
{
	uint64_t hz = rte_get_tsc_hz(), t0, t1, sent = 0, counted = 0;
	struct rte_mbuf *r;

	t0 = rte_get_tsc_cycles();
	t1 = t0 + hz / 1000 * ms;
	while (rte_get_tsc_cycles() < t1) {
		struct rte_mbuf *mb[BURST];
		unsigned n = 0;
		uint16_t k;

		while (n < BURST && (mb[n] = make(size, MSG_DATA, (uint32_t)(sent + n), 0)))
			n++;
		k = rte_eth_tx_burst(port, 0, mb, (uint16_t)n);
		sent += k;
		if (k < n)
			rte_pktmbuf_free_bulk(mb + k, n - k);
	}
	t1 = rte_get_tsc_cycles();
	usleep(100000); /* let the pong drain its ring */
	for (int tries = 0; tries < 5; tries++) {
		struct rte_mbuf *q = make(64, MSG_REPORT, 0, 0);

		if (q)
			send1(q);
		r = wait_for(MSG_COUNT, 0, 200000);
		if (r) {
			counted = body_of(r)->count;
			rte_pktmbuf_free(r);
			break;
		}
	}
	printf("stream %5u B for %u ms: sent %" PRIu64 ", delivered %" PRIu64
	       " (%.1f%%), %.2f Gbit/s delivered\n",
	       size, ms, sent, counted, sent ? 100.0 * (double)counted / (double)sent : 0.0,
	       (double)counted * size * 8 / ((double)(t1 - t0) / (double)hz) / 1e9);
}

/* ---- through the transport (tping/tpong) ---- */

static struct dnp_transport *tl;

static void t_send(const uint8_t *buf, uint32_t len)
{
	struct dnp_tx_frame f = { .data = buf, .len = len };

	for (int tries = 0; tries < 1000000; tries++)
		if (dnp_transport_dpdk.tx_burst(tl, &f, 1) == 1)
			return;
}

static void t_msg(uint8_t *buf, uint32_t len, enum msg msg, uint32_t seq, uint64_t count)
{
	struct body b = { .msg = (uint8_t)msg, .seq = seq, .count = count };

	memset(buf, 0, len);
	memcpy(buf, &b, sizeof(b));
}

static int t_pong(void)
{
	static uint8_t out[64];
	uint64_t counted = 0;

	for (;;) {
		struct dnp_rx_frame rx[32];
		int n = dnp_transport_dpdk.rx_burst(tl, rx, 32);

		for (int i = 0; i < n; i++) {
			struct body b;

			if (rx[i].len < sizeof(b))
				continue;
			memcpy(&b, rx[i].data, sizeof(b));
			if (b.msg == MSG_ECHO) {
				t_send(rx[i].data, rx[i].len);
			} else if (b.msg == MSG_DATA) {
				counted++;
			} else if (b.msg == MSG_REPORT) {
				t_msg(out, sizeof(out), MSG_COUNT, 0, counted);
				t_send(out, sizeof(out));
				counted = 0;
			} else if (b.msg == MSG_QUIT) {
				return 0;
			}
		}
	}
}

/* Waits for a frame of type msg and sequence seq; copies its body; false after us. */
static bool t_wait(uint8_t msg, uint32_t seq, uint64_t us, struct body *out)
{
	uint64_t end = rte_get_tsc_cycles() + rte_get_tsc_hz() / 1000000 * us;

	while (rte_get_tsc_cycles() < end) {
		struct dnp_rx_frame rx[32];
		int n = dnp_transport_dpdk.rx_burst(tl, rx, 32);

		for (int i = 0; i < n; i++) {
			if (rx[i].len < sizeof(*out))
				continue;
			memcpy(out, rx[i].data, sizeof(*out));
			if (out->msg == msg && out->seq == seq)
				return true;
		}
	}
	return false;
}

/* One ping through the transport (t_rtt): its round trip, 0 if lost. */
static uint64_t t_one(void *ctx, unsigned i)
{
	static uint8_t buf[65536];
	uint32_t size = *(const uint32_t *)ctx;
	struct body b;
	uint64_t t0, dt;

	t_msg(buf, size, MSG_ECHO, i, 0);
	t0 = rte_rdtsc();
	t_send(buf, size);
	if (!t_wait(MSG_ECHO, i, 100000, &b))
		return 0;
	dt = rte_rdtsc() - t0;
	return dt ? dt : 1;
}

static void t_rtt(uint32_t size, unsigned iters)
{
	char label[64];

	snprintf(label, sizeof(label), "transport rtt %5u B (eth mtu %u)", size,
		 dnp_dpdk_eth_mtu(tl));
	rtt_loop(label, t_one, &size, iters);
}

static void t_stream(uint32_t size, unsigned ms)
{
	static uint8_t buf[65536];
	uint64_t hz = rte_get_tsc_hz(), t0, t1, sent = 0, counted = 0;
	struct dnp_tx_frame f[BURST];
	struct body b;

	t_msg(buf, size, MSG_DATA, 0, 0);
	for (unsigned i = 0; i < BURST; i++) {
		f[i].data = buf;
		f[i].len = size;
	}
	t0 = rte_get_tsc_cycles();
	t1 = t0 + hz / 1000 * ms;
	while (rte_get_tsc_cycles() < t1) {
		int k = dnp_transport_dpdk.tx_burst(tl, f, BURST);

		if (k > 0)
			sent += (uint64_t)k;
	}
	t1 = rte_get_tsc_cycles();
	usleep(100000);
	for (int tries = 0; tries < 5; tries++) {
		t_msg(buf, 64, MSG_REPORT, 0, 0);
		t_send(buf, 64);
		if (t_wait(MSG_COUNT, 0, 200000, &b)) {
			counted = b.count;
			break;
		}
	}
	printf("transport stream %5u B for %u ms: sent %" PRIu64 ", delivered %" PRIu64
	       " (%.1f%%), %.2f Gbit/s of DNP frames delivered\n",
	       size, ms, sent, counted, sent ? 100.0 * (double)counted / (double)sent : 0.0,
	       (double)counted * size * 8 / ((double)(t1 - t0) / (double)hz) / 1e9);
}

static int t_main(bool ping, const char *options, const char *peer, const uint32_t *sizes,
		  unsigned nsizes, unsigned iters, unsigned stream_ms)
{
	struct dnp_transport_conf c = {
		.local = "0",
		.remote = peer,
		.frame_max = 16384,
		.depth = 256,
		.options = options,
	};
	uint32_t max = 0;
	int ret = dnp_transport_dpdk.open(&c, &tl);

	if (ret < 0) {
		fprintf(stderr, "open: %s\n", strerror(-ret));
		return 1;
	}
	for (int i = 0; i < 10000 && !dnp_transport_dpdk.up(tl); i++)
		usleep(1000);
	if (!ping)
		return t_pong();
	usleep(200000);
	for (unsigned i = 0; i < nsizes; i++) {
		t_rtt(sizes[i], iters);
		if (sizes[i] > max)
			max = sizes[i];
	}
	if (stream_ms)
		t_stream(max, stream_ms);
	{
		static uint8_t q[64];

		t_msg(q, sizeof(q), MSG_QUIT, 0, 0);
		t_send(q, sizeof(q));
	}
	usleep(10000);
	dnp_transport_dpdk.close(tl);
	return 0;
}

static void usage(const char *p)
{
	fprintf(stderr,
		"usage: %s EAL-ARGS -- pong | ping [-s SIZES] [-n ITERS] [-t STREAM_MS]\n"
		"       %s EAL-ARGS -- tpong | tping [-s ..] [-n ..] [-t ..] [-o OPTIONS] [-m MAC]\n",
		p, p);
}

int main(int argc, char **argv)
{
	uint32_t sizes[MAX_SIZES] = { 64, 4096 };
	unsigned nsizes = 2, iters = 20000, stream_ms = 1000, max = 0;
	const char *options = NULL, *peer = NULL;
	struct rte_eth_conf ec;
	struct rte_eth_link link;
	bool is_ping, transport;
	int ret, opt, neal = 1;

	/* EAL arguments end at "--"; dnp_dpdk_eal_init keeps the transport happy. */
	while (neal < argc && strcmp(argv[neal], "--") != 0)
		neal++;
	ret = dnp_dpdk_eal_init(neal, argv);
	if (ret < 0) {
		fprintf(stderr, "EAL init failed: %s\n", strerror(-ret));
		return 1;
	}
	argv[neal] = argv[0];
	argc -= neal;
	argv += neal;
	if (argc < 2) {
		usage(argv[0]);
		return 2;
	}
	transport = argv[1][0] == 't';
	is_ping = strcmp(argv[1] + transport, "ping") == 0;
	if (!is_ping && strcmp(argv[1] + transport, "pong") != 0) {
		usage(argv[0]);
		return 2;
	}
	if (transport)
		sizes[1] = 4160;
	optind = 2;
	while ((opt = getopt(argc, argv, "s:n:t:o:m:")) != -1) {
		char *p, *tok, *save = NULL;

		switch (opt) {
		case 's':
			nsizes = 0;
			p = optarg;
			while (nsizes < MAX_SIZES && (tok = strtok_r(p, ",", &save))) {
				sizes[nsizes++] = (uint32_t)atoi(tok);
				p = NULL;
			}
			break;
		case 'n':
			iters = (unsigned)atoi(optarg);
			break;
		case 't':
			stream_ms = (unsigned)atoi(optarg);
			break;
		case 'o':
			options = optarg;
			break;
		case 'm':
			peer = optarg;
			break;
		default:
			usage(argv[0]);
			return 2;
		}
	}
	if (transport)
		return t_main(is_ping, options, peer, sizes, nsizes, iters, stream_ms);
	if (rte_eth_dev_count_avail() < 1) {
		fprintf(stderr, "no port (give a --vdev)\n");
		return 1;
	}
	for (unsigned i = 0; i < nsizes; i++) {
		if (sizes[i] < 64 || sizes[i] > 9018) {
			fprintf(stderr, "size %u outside 64..9018\n", sizes[i]);
			return 2;
		}
		if (sizes[i] > max)
			max = sizes[i];
	}

	pool = rte_pktmbuf_pool_create("pp", 8191, 256, 0, RTE_PKTMBUF_HEADROOM + 9216,
				       rte_socket_id());
	memset(&ec, 0, sizeof(ec));
	if (!pool || rte_eth_dev_configure(port, 1, 1, &ec) < 0 ||
	    rte_eth_rx_queue_setup(port, 0, 1024, rte_socket_id(), NULL, pool) < 0 ||
	    rte_eth_tx_queue_setup(port, 0, 1024, rte_socket_id(), NULL) < 0 ||
	    rte_eth_dev_start(port) < 0) {
		fprintf(stderr, "port setup failed\n");
		return 1;
	}
	rte_eth_macaddr_get(port, &self);
	/* memif connects asynchronously: wait for its link. */
	for (int i = 0; i < 10000; i++) {
		if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status)
			break;
		usleep(1000);
	}
	if (!is_ping)
		return pong();

	usleep(200000); /* the pong may still be starting its port */
	for (unsigned i = 0; i < nsizes; i++)
		ping_rtt(sizes[i], iters);
	if (stream_ms)
		ping_stream(max, stream_ms);
	{
		struct rte_mbuf *q = make(64, MSG_QUIT, 0, 0);

		if (q)
			send1(q);
	}
	usleep(10000);
	rte_eth_dev_stop(port);
	rte_eal_cleanup();
	return 0;
}
