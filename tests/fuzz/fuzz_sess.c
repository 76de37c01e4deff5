/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for dnpd's socket requests (dnp-core/dnpd/sess.c): the
 * bytes that applications and dnpctl write to DIR/node-<id>.sock. (The
 * shared-memory path of a session is fuzz_app.c's.)
 *
 * Each input builds a fresh session server on a real Unix socket and runs
 * a small program read from the input, over up to four client connections:
 * connect, switch client, write raw bytes (split records, bad magic, any
 * type), write a well-formed request (HELLO, ATTACH, REGISTER, UNREGISTER,
 * STATS, unknown types; addresses raw or inside the session heap), let the
 * daemon service its socket (dnpd_sess_service, as the poll loop does),
 * read the replies (descriptors received are closed), disconnect. The
 * port operations are a fake engine that keeps the buffers of each port.
 *
 * What must hold, whatever the bytes: no crash (ASan/UBSan); every reply
 * carries the magic and version, and a STATS reply's text is as long as it
 * says; a buffer handed to the engine with a daemon mapping (priv) lies
 * inside that session's heap; the session's count of live buffers equals
 * the engine's and never exceeds port_buffers; ports are opened once and
 * closed once, and all are closed when the clients have gone; connection
 * counts stay within their limits.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "dnpd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* sess.c logs through these (conf.c in the daemon); quiet here. */
int dnpd_log_level = -1;
void dnpd_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

#define CHECK(c)                                                                           \
	do {                                                                               \
		if (!(c)) {                                                                \
			fprintf(stderr, "fuzz_sess: %s:%d: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                           \
		}                                                                          \
	} while (0)

#define MAX_PORTS 4u
#define PORT_BUFFERS 4u
#define HEAP_DEFAULT 65536u
#define HEAP_MAX (256u * 1024u)
#define APP_HEAP_VA 0x7f0000000000ull
#define NCLIENTS 4u
#define MAX_BUFS 16u

/* ------------------------------------------------------- the fake engine */

struct fbuf {
	uint64_t va;
	uint32_t key;
};

static struct {
	struct dnpd_sess_srv *s;
	bool open[MAX_PORTS];
	struct fbuf bufs[MAX_PORTS][MAX_BUFS];
	unsigned nbufs[MAX_PORTS];
	uint32_t next_key;
} F;

static int op_port_open(void *ctx, unsigned port)
{
	(void)ctx;
	CHECK(port < MAX_PORTS && !F.open[port]);
	F.open[port] = true;
	F.nbufs[port] = 0;
	return 0;
}

static void op_port_close(void *ctx, unsigned port)
{
	(void)ctx;
	CHECK(port < MAX_PORTS && F.open[port]);
	F.open[port] = false;
	F.nbufs[port] = 0;
}

static int op_reg(void *ctx, unsigned port, uint64_t va, uint64_t len, unsigned flags,
		  uintptr_t priv, uint32_t *key)
{
	struct dnpd_session *se;

	(void)ctx;
	CHECK(port < MAX_PORTS && F.open[port]);
	se = F.s->by_port[port];
	CHECK(se && se->is_app && se->ready);
	if (priv) {
		/* The daemon's mapping of the buffer: inside this session's heap. */
		CHECK(priv >= (uintptr_t)se->heap &&
		      len <= se->heap_size - (priv - (uintptr_t)se->heap));
		CHECK(priv - (uintptr_t)se->heap == va - se->app_heap);
	}
	if (flags & ~0xffu)
		return -EINVAL;
	if (F.nbufs[port] == MAX_BUFS)
		return -ENOSPC;
	F.bufs[port][F.nbufs[port]] = (struct fbuf){ .va = va, .key = ++F.next_key };
	*key = F.bufs[port][F.nbufs[port]++].key;
	return 0;
}

static int op_unreg(void *ctx, unsigned port, uint64_t va)
{
	(void)ctx;
	CHECK(port < MAX_PORTS && F.open[port]);
	for (unsigned i = 0; i < F.nbufs[port]; i++) {
		if (F.bufs[port][i].va == va) {
			F.bufs[port][i] = F.bufs[port][--F.nbufs[port]];
			return 0;
		}
	}
	return -ENOENT;
}

static size_t op_stats(void *ctx, char *buf, size_t cap)
{
	int n;

	(void)ctx;
	n = snprintf(buf, cap, "ports %u %u %u %u\n", F.open[0], F.open[1], F.open[2], F.open[3]);
	return n < 0 ? 0 : (size_t)n >= cap ? cap - 1 : (size_t)n;
}

static const struct dnpd_sess_ops ops = {
	.port_open = op_port_open,
	.port_close = op_port_close,
	.reg = op_reg,
	.unreg = op_unreg,
	.stats = op_stats,
};

/* -------------------------------------------------------------- clients */

struct client {
	int fd;
	uint8_t rx[sizeof(struct dnp_sess_msg)];
	unsigned rx_len;
	uint64_t text_left; /* STATS text still to come */
};

static struct client C[NCLIENTS];
static char sock_path[108], bell_path[108];

/* Reads what the daemon sent; checks each reply's header. */
static void drain(struct client *c)
{
	static uint8_t buf[DNP_SESS_STATS_MAX + 256];

	if (c->fd < 0)
		return;
	for (;;) {
		union {
			char b[CMSG_SPACE(sizeof(int) * DNP_SESS_NFDS)];
			struct cmsghdr align;
		} cbuf;
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = cbuf.b,
				     .msg_controllen = sizeof(cbuf.b) };
		ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		struct cmsghdr *cm;
		size_t i = 0;

		if (n <= 0)
			return;
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				int fds[DNP_SESS_NFDS];

				CHECK(nfd <= DNP_SESS_NFDS);
				memcpy(fds, CMSG_DATA(cm), nfd * sizeof(int));
				for (size_t k = 0; k < nfd; k++)
					close(fds[k]);
			}
		}
		while (i < (size_t)n) {
			if (c->text_left) {
				size_t take = (size_t)n - i < c->text_left ? (size_t)n - i :
									     (size_t)c->text_left;

				i += take;
				c->text_left -= take;
				continue;
			}
			c->rx[c->rx_len++] = buf[i++];
			if (c->rx_len == sizeof(c->rx)) {
				struct dnp_sess_msg m;

				memcpy(&m, c->rx, sizeof(m));
				c->rx_len = 0;
				CHECK(m.magic == DNP_SESS_MAGIC && m.version == DNP_SESS_VERSION);
				CHECK(m.status <= 0);
				if (m.type == DNP_SESS_STATS && m.status == 0) {
					CHECK(m.len < DNP_SESS_STATS_MAX);
					c->text_left = m.len;
				}
			}
		}
	}
}

static void client_close(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->rx_len = 0;
	c->text_left = 0;
}

static void client_open(struct client *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	client_close(c);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	CHECK(c->fd >= 0);
	strcpy(sa.sun_path, sock_path);
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)))
		client_close(c); /* the backlog is full: fine, a refused client */
}

static void client_send(struct client *c, const void *p, size_t n)
{
	if (c->fd >= 0)
		(void)send(c->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* ------------------------------------------------------------ invariants */

static void check_server(void)
{
	struct dnpd_sess_srv *s = F.s;
	unsigned open = 0;

	CHECK(s->nconn <= DNPD_MAX_CONN && s->npending <= s->nconn);
	CHECK(s->nports <= MAX_PORTS);
	for (unsigned p = 0; p < MAX_PORTS; p++) {
		struct dnpd_session *se = s->by_port[p];

		CHECK(!se == !F.open[p]);
		if (!se)
			continue;
		open++;
		CHECK(se->port == p && se->is_app);
		CHECK(se->nbufs == F.nbufs[p] && se->nbufs <= PORT_BUFFERS);
		CHECK(se->heap_size >= 1 && se->heap_size <= HEAP_MAX);
	}
	CHECK(open == s->nports);
}

/* ---------------------------------------------------------------- input */

struct in {
	const uint8_t *p;
	size_t n;
};

static uint8_t take8(struct in *in)
{
	uint8_t v = 0;

	if (in->n) {
		v = *in->p++;
		in->n--;
	}
	return v;
}

static uint64_t take(struct in *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)take8(in) << (8 * i);
	return v;
}

/* A request with the right magic and version; addresses raw or in the heap. */
static void legal(struct in *in, struct client *c)
{
	static const uint16_t types[] = { DNP_SESS_HELLO,
					  DNP_SESS_ATTACH,
					  DNP_SESS_REGISTER,
					  DNP_SESS_UNREGISTER,
					  DNP_SESS_STATS,
					  0,
					  6 };
	struct dnp_sess_msg m = { .magic = DNP_SESS_MAGIC, .version = DNP_SESS_VERSION };
	uint8_t t = take8(in), how = take8(in);

	m.type = types[t % (sizeof(types) / sizeof(types[0]))];
	switch (how % 4) {
	case 0: /* raw */
		m.arg32 = (uint32_t)take(in, 4);
		m.va = take(in, 8);
		m.len = take(in, 8);
		break;
	case 1: /* HELLO's port and heap; ATTACH at the usual address with the default heap */
		m.arg32 = take8(in) & 1 ? DNP_SESS_PORT_ANY : take8(in) % (MAX_PORTS + 1);
		m.va = m.type == DNP_SESS_ATTACH ? APP_HEAP_VA : take(in, 3);
		m.len = HEAP_DEFAULT;
		break;
	default: /* a buffer in (or across the end of) the heap */
		m.arg32 = take8(in);
		m.va = APP_HEAP_VA + take(in, 3);
		m.len = take(in, 3);
		break;
	}
	client_send(c, &m, sizeof(m));
}

static void remove_bell(void)
{
	unlink(bell_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dnpd_sess_conf sc = {
		.sock_path = sock_path,
		.bell_path = bell_path,
		.max_ports = MAX_PORTS,
		.heap_default = HEAP_DEFAULT,
		.heap_max = HEAP_MAX,
		.max_pending = 3,
		.handshake_ms = 600000, /* no expiry within a run: deterministic */
		.port_buffers = PORT_BUFFERS,
		.port_commands = 8,
		.ops = &ops,
	};
	struct in in = { data, size };
	unsigned cur = 0, steps = 0;
	int r;

	if (!bell_path[0]) {
		int fd;

		snprintf(sock_path, sizeof(sock_path), "/tmp/dnp-fuzz-sess-%d.sock", (int)getpid());
		snprintf(bell_path, sizeof(bell_path), "/tmp/dnp-fuzz-sess-%d.bell", (int)getpid());
		fd = open(bell_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		CHECK(fd >= 0 && ftruncate(fd, 4096) == 0);
		close(fd);
		atexit(remove_bell);
		for (unsigned i = 0; i < NCLIENTS; i++)
			C[i].fd = -1;
	}
	CHECK(dnp_torus_init(&sc.torus, 1, 1, 1) == 0);
	memset(&F, 0, sizeof(F));
	r = dnpd_sess_create(&sc, &F.s);
	CHECK(r == 0);

	while (in.n && steps++ < 256) {
		uint8_t op = take8(&in);
		struct client *c = &C[cur];

		switch (op % 8) {
		case 0:
			client_open(c);
			break;
		case 1:
			cur = take8(&in) % NCLIENTS;
			break;
		case 2: { /* raw bytes */
			size_t n = take8(&in) % 48 + 1;

			if (n > in.n)
				n = in.n;
			client_send(c, in.p, n);
			in.p += n;
			in.n -= n;
			break;
		}
		case 3:
		case 4:
			legal(&in, c);
			break;
		case 5:
			dnpd_sess_service(F.s);
			break;
		case 6:
			drain(c);
			break;
		default:
			client_close(c);
			break;
		}
		check_server();
	}

	/* Every client leaves: every port must close. */
	dnpd_sess_service(F.s);
	for (unsigned i = 0; i < NCLIENTS; i++) {
		drain(&C[i]);
		client_close(&C[i]);
	}
	for (unsigned i = 0; i < 4 && F.s->nconn; i++)
		dnpd_sess_service(F.s);
	check_server();
	CHECK(F.s->nconn == 0 && F.s->nports == 0 && F.s->npending == 0);
	dnpd_sess_destroy(F.s);
	for (unsigned p = 0; p < MAX_PORTS; p++)
		CHECK(!F.open[p]);
	return 0;
}
