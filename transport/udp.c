/* SPDX-License-Identifier: MIT */
/*
 * udp — kernel UDP virtual link: a socket bound to conf.local and connected
 * to conf.remote, one datagram per DNP frame, or several small frames of one
 * tx_burst packed in one datagram (udp_pack.c; option pack=auto|on|off|none,
 * docs/protocol.md "The udp link's datagrams"). Two paths behind one ops table:
 *   plain: non-blocking sendmmsg/recvmmsg, one system call per burst,
 *          zero-copy on send (iovecs point at the caller's frames);
 *   uring: io_uring (udp_uring.c), used when the option mode=uring is given
 *          or by default when it measured faster (DNP_UDP_DEFAULT_URING).
 * Losses (full socket buffers, peer not yet up) are not errors: the DNP link
 * layer retransmits. Large socket buffers keep bursts of 4 KiB frames whole.
 */
#include "transport_priv.h"
#include "udp_priv.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/*
 * Which path "udp" takes without a mode option. Measured 2026-11-30 with
 * transport/tp_pingpong (median round trip, two busy-polling processes on
 * loopback, 2 noisy cores, 20k iterations, 4 runs):
 *   64 B:   plain 4.8-6.0 us, io_uring (DEFER_TASKRUN) 6.7-9.1 us,
 *           io_uring (COOP_TASKRUN) 7.4-9.5 us;
 *   4160 B: plain 6.3-6.7 us, io_uring 9.7-9.8 us.
 * The io_uring path pays a poll wake-up plus task work per datagram on top
 * of the same two system calls per round trip, so plain is the default.
 */
#ifndef DNP_UDP_DEFAULT_URING
#define DNP_UDP_DEFAULT_URING 0
#endif

#define DNP_UDP_DEFAULT_BUFSIZE (4u << 20)

static inline struct dnp_udp *to_udp(struct dnp_transport *t)
{
	return (struct dnp_udp *)(void *)t;
}

static inline const struct dnp_udp *to_udp_c(const struct dnp_transport *t)
{
	return (const struct dnp_udp *)(const void *)t;
}

static void udp_set_bufs(int fd, int size)
{
	/* FORCE variants pass rmem_max/wmem_max when privileged; else best effort. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

static void udp_setup(int fd, void *ctx)
{
	udp_set_bufs(fd, *(const int *)ctx);
}

static int udp_socket(const struct dnp_transport_conf *c, int bufsize)
{
	return dnp_transport_dgram(c->local, c->remote, udp_setup, &bufsize);
}

/* A connected UDP socket reports an earlier ICMP "port unreachable" once: not fatal. */
static bool udp_transient(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == ECONNREFUSED || err == EINTR ||
	       err == ENOBUFS || err == EHOSTUNREACH || err == ENETUNREACH;
}

void dnp_udp_announce_tick(struct dnp_udp *u)
{
	bool due;

	if (u->pack_mode == DNP_UDP_PACK_OFF || u->pack_mode == DNP_UDP_PACK_NONE)
		return;
	due = u->ann_due || (!u->peer_packs && u->ann_since % DNP_UDP_ANNOUNCE_EVERY == 0);
	u->ann_since++;
	if (!due)
		return;
	/* a loss is no harm: the next due tick sends it again */
	if (send(u->fd, u->ann_buf, dnp_udp_pack_announce(u->ann_buf, u->frame_max, u->peer_packs),
		 MSG_DONTWAIT) >= 0) {
		u->ann_due = false;
		u->tx_announce++;
	}
}

unsigned dnp_udp_take_packed(struct dnp_udp *u, const uint8_t *d, uint32_t len)
{
	int k = dnp_udp_unpack(d, len, u->frame_max, u->rest);

	u->rest_n = u->rest_i = 0;
	if (k == DNP_UDP_ANNOUNCE || k == DNP_UDP_ANNOUNCE_HEARD) {
		u->rx_announce++;
		/* it has not heard ours yet: answer once on the next send */
		if (k == DNP_UDP_ANNOUNCE && u->pack_mode != DNP_UDP_PACK_OFF)
			u->ann_due = true;
		u->peer_packs = true;
		return 0;
	}
	if (k < 0) {
		u->rx_pack_bad++;
		return 0;
	}
	u->peer_packs = true;
	u->rx_packed++;
	u->rx_packed_frames += (unsigned)k;
	u->rest_n = (unsigned)k;
	return (unsigned)k;
}

/* Fills message m with the frames from f[0..n) that go in one datagram; returns how many. */
static unsigned udp_plain_msg(struct dnp_udp *u, unsigned m, const struct dnp_tx_frame *f,
			      unsigned n, bool pack)
{
	unsigned k = dnp_udp_pack_plan(f, n, u->frame_max, pack);

	if (k > 0) {
		uint8_t *buf = u->tx_pack + (size_t)m * u->buf_size;

		u->tx_iov[m].iov_base = buf;
		u->tx_iov[m].iov_len = dnp_udp_pack_write(buf, f, k);
		return k;
	}
	u->tx_iov[m].iov_base = (void *)f[0].data;
	u->tx_iov[m].iov_len = f[0].len;
	return 1;
}

static int udp_plain_tx(struct dnp_udp *u, const struct dnp_tx_frame *f, unsigned n)
{
	unsigned done = 0;
	int retries = 2;
	bool pack = dnp_udp_packs(u);

	dnp_udp_announce_tick(u);
	while (done < n) {
		unsigned k = 0, taken = 0;
		int sent;

		while (k < DNP_UDP_BATCH && done + taken < n &&
		       f[done + taken].len <= u->frame_max) {
			u->tx_nfr[k] =
				udp_plain_msg(u, k, f + done + taken, n - done - taken, pack);
			taken += u->tx_nfr[k++];
		}
		if (k == 0)
			return done ? (int)done : -EMSGSIZE;
		sent = sendmmsg(u->fd, u->tx_msgs, k, MSG_DONTWAIT);
		if (sent < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			if (udp_transient(errno) && retries-- > 0)
				continue;
			if (udp_transient(errno)) {
				/* still failing: drop this datagram, the link layer resends */
				done += u->tx_nfr[0];
				continue;
			}
			u->down = true;
			return done ? (int)done : -errno;
		}
		for (int i = 0; i < sent; i++) {
			done += u->tx_nfr[i];
			/* packed: the message points at its packing buffer */
			if (u->tx_iov[i].iov_base == u->tx_pack + (size_t)i * u->buf_size) {
				u->tx_packed++;
				u->tx_packed_frames += u->tx_nfr[i];
			}
		}
		if ((unsigned)sent < k)
			break;
	}
	return (int)done;
}

/* Hands out frames of the datagrams the last recvmmsg brought, from where the last call stopped. */
static unsigned udp_plain_drain(struct dnp_udp *u, struct dnp_rx_frame *f, unsigned n)
{
	unsigned out = 0;

	while (out < n) {
		const struct mmsghdr *m;
		const uint8_t *d;

		if (u->rest_i < u->rest_n) {
			f[out++] = u->rest[u->rest_i++];
			continue;
		}
		if (u->rx_next >= u->rx_got)
			break;
		m = &u->rx_msgs[u->rx_next];
		d = u->rx_bufs + (size_t)u->rx_next * u->buf_size;
		u->rx_next++;
		/* A datagram larger than the buffer is not ours: drop it. */
		if (m->msg_hdr.msg_flags & MSG_TRUNC)
			continue;
		if (dnp_udp_reads_packed(u, d, m->msg_len)) {
			dnp_udp_take_packed(u, d, m->msg_len);
			continue;
		}
		if (m->msg_len > u->frame_max)
			continue;
		f[out].data = d;
		f[out].len = m->msg_len;
		out++;
	}
	return out;
}

static int udp_plain_rx(struct dnp_udp *u, struct dnp_rx_frame *f, unsigned n)
{
	unsigned k = n < DNP_UDP_BATCH ? n : DNP_UDP_BATCH;
	int got;

	if (k == 0)
		return 0;
	/* Frames left from the last receive call come first, without a system call. */
	if (u->rest_i < u->rest_n || u->rx_next < u->rx_got)
		return (int)udp_plain_drain(u, f, n);
	got = recvmmsg(u->fd, u->rx_msgs, k, MSG_DONTWAIT, NULL);
	if (got < 0) {
		if (udp_transient(errno))
			return 0;
		u->down = true;
		return -errno;
	}
	u->rx_got = (unsigned)got;
	u->rx_next = 0;
	return (int)udp_plain_drain(u, f, n);
}

static void udp_free(struct dnp_udp *u)
{
	free(u->tx_msgs);
	free(u->tx_iov);
	free(u->rx_msgs);
	free(u->rx_iov);
	free(u->rx_bufs);
	free(u->tx_pack);
	free(u->ann_buf);
	free(u);
}

static int udp_plain_init(struct dnp_udp *u)
{
	u->tx_msgs = calloc(DNP_UDP_BATCH, sizeof(*u->tx_msgs));
	u->tx_iov = calloc(DNP_UDP_BATCH, sizeof(*u->tx_iov));
	u->rx_msgs = calloc(DNP_UDP_BATCH, sizeof(*u->rx_msgs));
	u->rx_iov = calloc(DNP_UDP_BATCH, sizeof(*u->rx_iov));
	u->rx_bufs = aligned_alloc(64, (size_t)DNP_UDP_BATCH * u->buf_size);
	u->tx_pack = aligned_alloc(64, (size_t)DNP_UDP_BATCH * u->buf_size);
	if (!u->tx_msgs || !u->tx_iov || !u->rx_msgs || !u->rx_iov || !u->rx_bufs || !u->tx_pack)
		return -ENOMEM;
	for (unsigned i = 0; i < DNP_UDP_BATCH; i++) {
		u->tx_msgs[i].msg_hdr.msg_iov = &u->tx_iov[i];
		u->tx_msgs[i].msg_hdr.msg_iovlen = 1;
		u->rx_iov[i].iov_base = u->rx_bufs + (size_t)i * u->buf_size;
		u->rx_iov[i].iov_len = u->buf_size;
		u->rx_msgs[i].msg_hdr.msg_iov = &u->rx_iov[i];
		u->rx_msgs[i].msg_hdr.msg_iovlen = 1;
	}
	u->tx = udp_plain_tx;
	u->rx = udp_plain_rx;
	u->wait_fd = u->fd;
	return 0;
}

/*
 * Option pack=auto|on|off|none: enum dnp_udp_pack_mode, or -EINVAL. Without the
 * option, the environment's DNP_UDP_PACK (the same words; tests and
 * benchmarks reach dnpd's links this way), else auto.
 */
static int udp_pack_opt(const char *options)
{
	char v[8];
	const char *env = getenv("DNP_UDP_PACK");

	if (!dnp_transport_opt(options, "pack", v, sizeof(v))) {
		if (!env || !*env)
			return DNP_UDP_PACK_AUTO;
		if (strlen(env) >= sizeof(v))
			return -EINVAL;
		snprintf(v, sizeof(v), "%s", env);
	}
	if (strcmp(v, "auto") == 0)
		return DNP_UDP_PACK_AUTO;
	if (strcmp(v, "on") == 0)
		return DNP_UDP_PACK_ON;
	if (strcmp(v, "off") == 0)
		return DNP_UDP_PACK_OFF;
	if (strcmp(v, "none") == 0)
		return DNP_UDP_PACK_NONE;
	return -EINVAL;
}

static int udp_open(const struct dnp_transport_conf *c, struct dnp_transport **out)
{
	char mode[16] = "";
	uint64_t bufsize;
	bool want_uring = DNP_UDP_DEFAULT_URING, forced = false, coop = false;
	struct dnp_udp *u;
	int ret;

	if (!c || !out || c->frame_max == 0 || c->frame_max > 65000 || c->depth < 2 ||
	    (c->depth & (c->depth - 1)) != 0 || c->depth > 32768)
		return -EINVAL;
	if (dnp_transport_opt(c->options, "mode", mode, sizeof(mode))) {
		forced = true;
		if (strcmp(mode, "uring") == 0)
			want_uring = true;
		else if (strcmp(mode, "plain") == 0)
			want_uring = false;
		else
			return -EINVAL;
	}
	if (dnp_transport_opt(c->options, "uring_setup", mode, sizeof(mode))) {
		if (strcmp(mode, "coop") == 0)
			coop = true;
		else if (strcmp(mode, "defer") != 0)
			return -EINVAL;
	}
	ret = dnp_transport_opt_u64(c->options, "bufsize", DNP_UDP_DEFAULT_BUFSIZE, &bufsize);
	if (ret)
		return ret;
	if (bufsize > (1u << 30))
		return -EINVAL;
	ret = udp_pack_opt(c->options);
	if (ret < 0)
		return ret;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->pack_mode = (uint8_t)ret;
	u->ann_buf = malloc(c->frame_max + DNP_UDP_ANNOUNCE_EXTRA);
	if (!u->ann_buf) {
		ret = -ENOMEM;
		goto err_free;
	}
	u->base.ops = &dnp_transport_udp;
	u->frame_max = c->frame_max;
	/* One spare line: a datagram longer than frame_max shows up as such. */
	u->buf_size = ((c->frame_max + 63u) & ~63u) + 64u;
	u->depth = c->depth;
	u->uring_coop = coop;
	u->fd = udp_socket(c, (int)bufsize);
	if (u->fd < 0) {
		ret = u->fd;
		goto err_free;
	}
	if (want_uring) {
		ret = dnp_udp_uring_init(u);
		/* Forced uring fails loudly; the default silently falls back to plain. */
		if (ret && forced)
			goto err_close;
	}
	if (!u->ur) {
		ret = udp_plain_init(u);
		if (ret)
			goto err_close;
	}
	*out = (struct dnp_transport *)(void *)u;
	return 0;

err_close:
	close(u->fd);
err_free:
	udp_free(u);
	return ret;
}

static void udp_close(struct dnp_transport *t)
{
	struct dnp_udp *u = to_udp(t);

	if (!u)
		return;
	if (u->ur)
		dnp_udp_uring_fini(u);
	close(u->fd);
	udp_free(u);
}

static int udp_tx_burst(struct dnp_transport *t, const struct dnp_tx_frame *f, unsigned n)
{
	struct dnp_udp *u = to_udp(t);

	return u->tx(u, f, n);
}

static int udp_rx_burst(struct dnp_transport *t, struct dnp_rx_frame *f, unsigned n)
{
	struct dnp_udp *u = to_udp(t);

	return u->rx(u, f, n);
}

static uint32_t udp_mtu(const struct dnp_transport *t)
{
	return to_udp_c(t)->frame_max;
}

static int udp_wait_fd(const struct dnp_transport *t)
{
	return to_udp_c(t)->wait_fd;
}

/* The plain path receives only from its socket; io_uring may hold completions. */
static int udp_rx_gate_fd(const struct dnp_transport *t)
{
	const struct dnp_udp *u = to_udp_c(t);

	/* frames kept from the last receive call do not make the socket readable */
	if (u->rx != udp_plain_rx || u->rest_i < u->rest_n || u->rx_next < u->rx_got)
		return -1;
	return u->fd;
}

static size_t udp_counters(const struct dnp_transport *t, char *buf, size_t cap)
{
	const struct dnp_udp *u = to_udp_c(t);
	int w;

	if (cap == 0)
		return 0;
	w = snprintf(
		buf, cap,
		"pack_mode %u peer_packs %u tx_packed %llu tx_packed_frames %llu rx_packed %llu "
		"rx_packed_frames %llu rx_pack_bad %llu tx_announce %llu rx_announce %llu "
		"peer_resets %llu",
		(unsigned)u->pack_mode, (unsigned)u->peer_packs, (unsigned long long)u->tx_packed,
		(unsigned long long)u->tx_packed_frames, (unsigned long long)u->rx_packed,
		(unsigned long long)u->rx_packed_frames, (unsigned long long)u->rx_pack_bad,
		(unsigned long long)u->tx_announce, (unsigned long long)u->rx_announce,
		(unsigned long long)u->peer_resets);
	if (w < 0)
		return 0;
	return (size_t)w < cap ? (size_t)w : cap - 1;
}

/*
 * The peer started over (transport.h): it may be another build now, one
 * that does not read packed datagrams. Pack again only once it says so; our
 * announcement goes with the next send and asks for its answer.
 */
static void udp_peer_reset(struct dnp_transport *t)
{
	struct dnp_udp *u = to_udp(t);

	u->peer_resets++;
	u->peer_packs = false;
	u->ann_due = u->pack_mode == DNP_UDP_PACK_AUTO || u->pack_mode == DNP_UDP_PACK_ON;
}

static bool udp_up(const struct dnp_transport *t)
{
	/* UDP has no carrier: only a fatal socket error takes the link down. */
	return !to_udp_c(t)->down;
}

const struct dnp_transport_ops dnp_transport_udp = {
	.name = "udp",
	.open = udp_open,
	.close = udp_close,
	.tx_burst = udp_tx_burst,
	.rx_burst = udp_rx_burst,
	.mtu = udp_mtu,
	.wait_fd = udp_wait_fd,
	.up = udp_up,
	.rx_gate_fd = udp_rx_gate_fd,
	.counters = udp_counters,
	.peer_reset = udp_peer_reset,
};

bool dnp_transport_udp_uses_uring(const struct dnp_transport *t)
{
	return to_udp_c(t)->ur != NULL;
}

unsigned dnp_transport_udp_uring_flags(const struct dnp_transport *t)
{
	return dnp_udp_uring_flags(to_udp_c(t));
}
