/* SPDX-License-Identifier: MIT */
/*
 * sess — dnpd's application sessions over DIR/node-<id>.sock (protocol and
 * shared-memory layout: api/abi/dnp_session.h).
 *
 * Every socket is non-blocking and serviced from the poll loop by
 * dnpd_sess_service (one poll() with a zero timeout, then non-blocking
 * accept/recv/send): the loop never blocks here. Messages are fixed 32-byte
 * records; a partial record is kept in the session until the rest arrives.
 * A reply that does not fit in the socket at once means a client that does
 * not read its replies: it is disconnected.
 *
 * Memory: sessions are allocated at accept and freed at close (control path
 * only); the session memfd and heap memfd are mapped here and unmapped when
 * the session closes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "dnp_futex.h"
#include "dnpd.h"

int dnpd_sess_create(const struct dnpd_sess_conf *c, struct dnpd_sess_srv **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct dnpd_sess_srv *s;
	struct stat st;
	int r;

	if (!c->sock_path || !c->bell_path || !c->ops || c->max_ports < 1 || c->max_ports > 256)
		return -EINVAL;
	if (strlen(c->sock_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->conf = *c;
	s->listen_fd = s->bell_fd = s->wake_fd = -1;
	strcpy(s->sock_path, c->sock_path);
	s->conf.sock_path = s->sock_path;

	s->bell_fd = open(c->bell_path, O_RDWR | O_CLOEXEC);
	if (s->bell_fd < 0)
		goto err_errno;
	s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->wake_fd < 0)
		goto err_errno;
	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0)
		goto err_errno;
	/* A socket file left by a daemon that was killed is replaced; anything else is not. */
	if (lstat(s->sock_path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(s->sock_path);
	strcpy(sa.sun_path, s->sock_path);
	if (bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(s->listen_fd, 64))
		goto err_errno;
	*out = s;
	return 0;

err_errno:
	r = -errno;
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	if (s->bell_fd >= 0)
		close(s->bell_fd);
	free(s);
	return r;
}

static void dnpd_sess_unmap(struct dnpd_session *se)
{
	if (se->heap)
		munmap(se->heap, se->heap_size);
	if (se->ctl)
		munmap(se->ctl, se->map_size);
	se->heap = NULL;
	se->ctl = NULL;
}

/* Drops connection i: closes its port (the engine forgets its buffers and commands). */
static void dnpd_sess_drop(struct dnpd_sess_srv *s, unsigned i)
{
	struct dnpd_session *se = s->conn[i];
	unsigned k;

	if (se->is_app) {
		s->conf.ops->port_close(s->conf.ctx, se->port);
		s->by_port[se->port] = NULL;
		for (k = 0; k < s->nports; k++) {
			if (s->ports[k] == se->port) {
				s->ports[k] = s->ports[--s->nports];
				break;
			}
		}
		/* An app still alive (dropped for a protocol error) must not sleep forever. */
		atomic_store_explicit(&se->ctl->state, DNP_SESS_CLOSED, memory_order_release);
		atomic_fetch_add_explicit(&se->ctl->ev_seq, 1, memory_order_seq_cst);
		dnp_futex_wake(&se->ctl->ev_seq);
		dnpd_log(DNPD_INFO, "port %u closed (pid %d)", se->port, (int)se->pid);
	}
	dnpd_sess_unmap(se);
	close(se->fd);
	free(se);
	s->conn[i] = s->conn[--s->nconn];
}

void dnpd_sess_destroy(struct dnpd_sess_srv *s)
{
	if (!s)
		return;
	while (s->nconn)
		dnpd_sess_drop(s, s->nconn - 1);
	close(s->listen_fd);
	unlink(s->sock_path);
	close(s->wake_fd);
	close(s->bell_fd);
	free(s);
}

unsigned dnpd_sess_pollfds(const struct dnpd_sess_srv *s, struct pollfd *out, unsigned max)
{
	unsigned i, n = 0;

	if (max == 0)
		return 0;
	out[n++] = (struct pollfd){ .fd = s->listen_fd, .events = POLLIN };
	for (i = 0; i < s->nconn && n < max; i++)
		out[n++] = (struct pollfd){ .fd = s->conn[i]->fd, .events = POLLIN };
	return n;
}

void *dnpd_sess_heap_addr(const struct dnpd_session *se, uint64_t va, uint64_t len)
{
	uint64_t off;

	if (!se->app_heap || va < se->app_heap)
		return NULL;
	off = va - se->app_heap;
	if (off >= se->heap_size || len > se->heap_size - off)
		return NULL;
	return se->heap + off;
}

void dnpd_sess_notify(struct dnpd_session *se)
{
	/* Event count (dnp_session.h): bump, then look for a sleeper; seq_cst on both. */
	atomic_fetch_add_explicit(&se->ctl->ev_seq, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&se->ctl->ev_waiters, memory_order_seq_cst))
		dnp_futex_wake(&se->ctl->ev_seq);
}

/* Sends a reply (plus fds, plus a text payload); false if it could not be sent whole. */
static bool dnpd_sess_reply(struct dnpd_session *se, struct dnp_sess_msg *m, const int *fds,
			    unsigned nfds, const void *text, size_t text_len)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * DNP_SESS_NFDS)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov[2] = {
		{ m, sizeof(*m) },
		{ (void *)text, text_len },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = text_len ? 2 : 1 };
	ssize_t n;

	m->magic = DNP_SESS_MAGIC;
	m->version = DNP_SESS_VERSION;
	if (nfds) {
		struct cmsghdr *c;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(se->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)(sizeof(*m) + text_len);
}

static int dnpd_sess_pick_port(struct dnpd_sess_srv *s, uint32_t want)
{
	unsigned p;

	if (want != DNP_SESS_PORT_ANY) {
		if (want >= s->conf.max_ports)
			return -EINVAL;
		return s->by_port[want] ? -EBUSY : (int)want;
	}
	for (p = 0; p < s->conf.max_ports; p++)
		if (!s->by_port[p])
			return (int)p;
	return -EBUSY;
}

static int dnpd_memfd(const char *name, uint64_t size, void **map)
{
	void *p;
	int fd;

	fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size))
		goto err;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto err;
	*map = p;
	return fd;
err:
	{
		int r = -errno;

		close(fd);
		return r;
	}
}

/* HELLO: a port, the session memory and the heap; replies with the descriptors. */
static bool dnpd_sess_hello(struct dnpd_sess_srv *s, struct dnpd_session *se,
			    struct dnp_sess_msg *m)
{
	struct dnp_sess_msg rep = { .type = DNP_SESS_HELLO };
	uint64_t heap = m->va ? m->va : s->conf.heap_default;
	size_t cmd_sz = dnp_ring_memsize(DNP_SESS_CMD_SLOTS, sizeof(struct dnp_cmd));
	size_t ev_sz = dnp_ring_memsize(DNP_SESS_EV_SLOTS, sizeof(struct dnp_event));
	uint64_t cmd_off = DNP_SESS_ALIGN_UP(sizeof(struct dnp_sess_ctl));
	uint64_t ev_off = DNP_SESS_ALIGN_UP(cmd_off + cmd_sz);
	uint64_t map_size = DNP_SESS_ALIGN_UP(ev_off + ev_sz);
	int fds[DNP_SESS_NFDS] = { -1, -1, s->bell_fd, s->wake_fd };
	struct dnp_sess_ctl *ctl;
	void *map = NULL, *hmap = NULL;
	int port, r;
	bool ok;

	if (se->is_app || se->ctl) {
		rep.status = -EPROTO;
		dnpd_sess_reply(se, &rep, NULL, 0, NULL, 0);
		return false;
	}
	port = dnpd_sess_pick_port(s, m->arg32);
	if (port < 0) {
		r = port;
		goto fail;
	}
	if (heap > s->conf.heap_max) {
		r = -EINVAL;
		goto fail;
	}
	heap = DNP_SESS_ALIGN_UP(heap);

	r = dnpd_memfd("dnp-session", map_size, &map);
	if (r < 0)
		goto fail;
	fds[0] = r;
	r = dnpd_memfd("dnp-heap", heap, &hmap);
	if (r < 0)
		goto fail_map;
	fds[1] = r;
	se->ctl = ctl = map;
	se->map_size = map_size;
	se->heap = hmap;
	se->heap_size = heap;
	if (dnp_ring_init((uint8_t *)map + cmd_off, DNP_SESS_CMD_SLOTS, sizeof(struct dnp_cmd),
			  &se->cmd) ||
	    dnp_ring_init((uint8_t *)map + ev_off, DNP_SESS_EV_SLOTS, sizeof(struct dnp_event),
			  &se->ev)) {
		r = -EINVAL;
		goto fail_unmap;
	}
	ctl->magic = DNP_SESS_MAGIC;
	ctl->version = DNP_SESS_VERSION;
	ctl->port = (uint32_t)port;
	ctl->node_id = dnp_torus_id(&s->conf.torus, s->conf.self);
	ctl->self[0] = s->conf.self.x;
	ctl->self[1] = s->conf.self.y;
	ctl->self[2] = s->conf.self.z;
	ctl->dims[0] = s->conf.torus.dim[0];
	ctl->dims[1] = s->conf.torus.dim[1];
	ctl->dims[2] = s->conf.torus.dim[2];
	ctl->cmd_off = (uint32_t)cmd_off;
	ctl->cmd_slots = DNP_SESS_CMD_SLOTS;
	ctl->ev_off = (uint32_t)ev_off;
	ctl->ev_slots = DNP_SESS_EV_SLOTS;
	ctl->map_size = map_size;
	ctl->heap_size = heap;
	ctl->max_ports = s->conf.max_ports;
	atomic_store_explicit(&ctl->state, DNP_SESS_OPEN, memory_order_release);

	r = s->conf.ops->port_open(s->conf.ctx, (unsigned)port);
	if (r)
		goto fail_unmap;
	se->is_app = true;
	se->port = (unsigned)port;
	s->by_port[port] = se;
	s->ports[s->nports++] = (uint16_t)port;

	rep.arg32 = (uint32_t)port;
	ok = dnpd_sess_reply(se, &rep, fds, DNP_SESS_NFDS, NULL, 0);
	/* The mappings keep the memory; the app holds its own descriptors now. */
	close(fds[0]);
	close(fds[1]);
	dnpd_log(DNPD_INFO, "port %u opened by pid %d (heap %llu bytes)", se->port, (int)se->pid,
		 (unsigned long long)heap);
	return ok;

fail_unmap:
	dnpd_sess_unmap(se);
	se->cmd = se->ev = NULL;
	close(fds[1]);
	close(fds[0]);
	goto fail;
fail_map:
	munmap(map, map_size);
	close(fds[0]);
fail:
	rep.status = r;
	dnpd_sess_reply(se, &rep, NULL, 0, NULL, 0);
	return false;
}

static bool dnpd_sess_stats(struct dnpd_sess_srv *s, struct dnpd_session *se)
{
	struct dnp_sess_msg rep = { .type = DNP_SESS_STATS };
	char *buf = malloc(DNP_SESS_STATS_MAX);
	size_t n = 0;
	bool ok;

	if (buf && s->conf.ops->stats)
		n = s->conf.ops->stats(s->conf.ctx, buf, DNP_SESS_STATS_MAX);
	if (!buf)
		rep.status = -ENOMEM;
	rep.len = n;
	ok = dnpd_sess_reply(se, &rep, NULL, 0, buf, n);
	free(buf);
	return ok;
}

/* Handles one complete message; false: drop the connection. */
static bool dnpd_sess_handle(struct dnpd_sess_srv *s, struct dnpd_session *se,
			     struct dnp_sess_msg *m)
{
	struct dnp_sess_msg rep = { .type = m->type };
	uintptr_t priv;

	if (m->magic != DNP_SESS_MAGIC || m->version != DNP_SESS_VERSION) {
		rep.status = -EPROTO;
		dnpd_sess_reply(se, &rep, NULL, 0, NULL, 0);
		return false;
	}
	switch (m->type) {
	case DNP_SESS_HELLO:
		return dnpd_sess_hello(s, se, m);
	case DNP_SESS_STATS:
		return dnpd_sess_stats(s, se);
	case DNP_SESS_ATTACH:
		if (!se->is_app || se->app_heap || m->len != se->heap_size || !m->va)
			rep.status = -EINVAL;
		else
			se->app_heap = m->va;
		break;
	case DNP_SESS_REGISTER:
		if (!se->is_app) {
			rep.status = -EPROTO;
			break;
		}
		/* priv: our mapping of the buffer when it lies in the heap (a memcpy away). */
		priv = (uintptr_t)dnpd_sess_heap_addr(se, m->va, m->len);
		rep.status = s->conf.ops->reg(s->conf.ctx, se->port, m->va, m->len, m->arg32,
					      priv, &rep.arg32);
		break;
	case DNP_SESS_UNREGISTER:
		rep.status = se->is_app ? s->conf.ops->unreg(s->conf.ctx, se->port, m->va) :
			-EPROTO;
		break;
	default:
		rep.status = -EINVAL;
		break;
	}
	return dnpd_sess_reply(se, &rep, NULL, 0, NULL, 0);
}

static void dnpd_sess_accept(struct dnpd_sess_srv *s)
{
	for (;;) {
		struct dnpd_session *se;
		struct ucred cred;
		socklen_t cl = sizeof(cred);
		int fd;

		fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) ||
		    (cred.uid != geteuid() && cred.uid != 0)) {
			/* process_vm_readv/writev would fail for another user anyway. */
			dnpd_log(DNPD_WARN, "refused a connection from uid %u", (unsigned)cred.uid);
			close(fd);
			continue;
		}
		se = s->nconn < DNPD_MAX_CONN ? calloc(1, sizeof(*se)) : NULL;
		if (!se) {
			close(fd);
			continue;
		}
		se->fd = fd;
		se->pid = cred.pid;
		s->conn[s->nconn++] = se;
	}
}

/* Reads what the connection has; false: drop it (closed, error or protocol violation). */
static bool dnpd_sess_read(struct dnpd_sess_srv *s, struct dnpd_session *se, unsigned *handled)
{
	for (;;) {
		ssize_t n = recv(se->fd, se->rx + se->rx_len, sizeof(se->rx) - se->rx_len,
				 MSG_DONTWAIT);

		if (n == 0)
			return false;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
		se->rx_len += (unsigned)n;
		if (se->rx_len == sizeof(se->rx)) {
			struct dnp_sess_msg m;

			memcpy(&m, se->rx, sizeof(m));
			se->rx_len = 0;
			(*handled)++;
			if (!dnpd_sess_handle(s, se, &m))
				return false;
		}
	}
}

unsigned dnpd_sess_service(struct dnpd_sess_srv *s)
{
	unsigned n, i, handled = 0;

	n = dnpd_sess_pollfds(s, s->pfd, DNPD_MAX_CONN + 1);
	if (poll(s->pfd, n, 0) <= 0)
		return 0;
	/* Backwards: dropping connection i moves the last one (already visited) into i. */
	for (i = n - 1; i >= 1; i--) {
		if (!s->pfd[i].revents)
			continue;
		if (!dnpd_sess_read(s, s->conn[i - 1], &handled))
			dnpd_sess_drop(s, i - 1);
	}
	if (s->pfd[0].revents)
		dnpd_sess_accept(s);
	return handled;
}
