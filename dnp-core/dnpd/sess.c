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
 *
 * Shrinking memory: both memfds are sealed (F_SEAL_SHRINK | F_SEAL_GROW |
 * F_SEAL_SEAL) once sized, so an application's ftruncate fails with EPERM
 * and cannot make our next access of the rings or the heap fault with
 * SIGBUS. Both mappings are also registered with the SIGBUS guard
 * (dnp_shmguard.h), should a kernel without seals ever hand them out:
 * dnpd_sess_guard_check then closes the session.
 *
 * The application is untrusted (docs/security.md): the rings are used
 * through private handles (ring.h), nothing of the control block is read
 * back, a connection gets DNPD_HANDSHAKE_MS to finish its handshake and only
 * max_pending connections may be in it at once, a port holds at most
 * port_buffers registered buffers, and the peer process is named by a pidfd
 * taken at connect time, not by a pid that may be recycled.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dnp_futex.h"
#include "dnp_shmguard.h"
#include "dnp_yield.h"
#include "dnpd.h"
#include "engine.h" /* struct dnp_engine_cntr: a layout only, no engine call */

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5; older kernels answer ENOPROTOOPT */
#endif

/* Event slots known free before the app's head is looked at again (dnpd_sess_ev_room). */
#define DNPD_SESS_EV_WANT 64u

static uint64_t dnpd_sess_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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
	if (!s->conf.max_pending)
		s->conf.max_pending = DNPD_MAX_PENDING_DEFAULT;
	if (!s->conf.handshake_ms)
		s->conf.handshake_ms = DNPD_HANDSHAKE_MS_DEFAULT;
	if (!s->conf.port_buffers)
		s->conf.port_buffers = DNPD_PORT_BUFFERS_DEFAULT;
	if (!s->conf.port_commands)
		s->conf.port_commands = DNPD_PORT_COMMANDS_DEFAULT;
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
	if (bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(s->listen_fd, 64))
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
	if (se->heap) {
		dnp_shmguard_del(se->heap);
		munmap(se->heap, se->heap_size);
	}
	if (se->ctl) {
		dnp_shmguard_del(se->ctl);
		munmap(se->ctl, se->map_size);
	}
	se->heap = NULL;
	se->ctl = NULL;
	se->cmd = se->ev = NULL;
	se->cntrs = NULL;
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
	if (!se->ready)
		s->npending--;
	dnpd_sess_unmap(se);
	if (se->pidfd >= 0)
		close(se->pidfd);
	if (se->rx_fd >= 0)
		close(se->rx_fd);
	close(se->fd);
	free(se->ra);
	free(se->wb); /* gathered writes for a gone app are dropped */
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
	/*
	 * Event count (dnp_session.h, dnp_yield.h): bump, then look for a
	 * sleeper; seq_cst on both. ev_waiters is the app's: any value only
	 * decides whether we make the wake-up call.
	 */
	if (!dnp_evc_notify(&se->ctl->ev_seq, &se->ctl->ev_waiters))
		return;
	/*
	 * We woke it: note where it waits, so that a neighbour daemon pinned
	 * there is told (dnpd.c, dnpd_kick_nbrs). The app's word, read once:
	 * any value only decides whom we kick.
	 */
	int32_t cpu = atomic_load_explicit(&se->ctl->app_cpu, memory_order_relaxed);

	if (cpu >= 0 && cpu < 64)
		se->woke = (uint32_t)cpu + 1;
}

void dnpd_sess_cntr_publish(struct dnpd_session *se, uint64_t mask,
			    const struct dnp_engine_cntr *vals)
{
	if (!se->cntrs || !mask)
		return;
	for (unsigned i = 0; i < DNP_CNTR_MAX; i++) {
		if (!(mask & (1ull << i)))
			continue;
		/* release: what the commands wrote is seen by whoever sees the count */
		atomic_store_explicit(&se->cntrs[i].ok, vals[i].ok, memory_order_release);
		atomic_store_explicit(&se->cntrs[i].err, vals[i].err, memory_order_release);
	}
	dnpd_sess_notify(se); /* a waiter sleeps on ev_seq, as for events */
}

unsigned dnpd_sess_cmd_pop(struct dnpd_session *se, struct dnp_cmd *c, unsigned max)
{
	unsigned i, n;

	if (!se->cmd)
		return 0;
	/* The quota: what is over it waits in the app's ring (back-pressure). */
	if (se->inflight >= se->quota_cmds)
		return 0;
	if (max > se->quota_cmds - se->inflight)
		max = se->quota_cmds - se->inflight;
	n = dnp_ring_pop_burst(se->cmd, c, max);
	for (i = 0; i < n; i++)
		c[i].src_port = (uint8_t)se->port; /* never trust the app's */
	se->inflight += n;
	return n;
}

static bool dnpd_is_completion(const struct dnp_event *ev)
{
	return ev->type == DNP_EV_TX_DONE || ev->type == DNP_EV_GET_DONE ||
	       ev->type == DNP_EV_ERROR;
}

/* Completions leave the port's count of outstanding commands. */
static void dnpd_sess_completed(struct dnpd_session *se, const struct dnp_event *ev, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (dnpd_is_completion(&ev[i]) && se->inflight)
			se->inflight--;
}

uint32_t dnpd_sess_ev_room(struct dnpd_session *se)
{
	uint32_t room;

	if (!se->ev)
		return 0;
	/* a burst's worth known free is enough: the app's head line stays in its cache */
	room = dnp_ring_room_min(se->ev, DNPD_SESS_EV_WANT);
	if (se->ev_lost && room)
		room--; /* the DNP_EV_OVERFLOW report goes first */
	return room;
}

unsigned dnpd_sess_ev_push(struct dnpd_session *se, const struct dnp_event *ev, unsigned n)
{
	unsigned done = 0;

	dnpd_sess_completed(se, ev, n); /* delivered or counted lost: either way they ended */
	if (!se->ev) {
		se->ev_lost += n;
		return 0;
	}
	if (se->ev_lost && dnp_ring_room(se->ev)) {
		struct dnp_event ov = {
			.type = DNP_EV_OVERFLOW,
			.status = -EOVERFLOW,
			.len = se->ev_lost > UINT32_MAX ? UINT32_MAX : (uint32_t)se->ev_lost,
		};

		if (dnp_ring_push(se->ev, &ov) == 0) {
			dnpd_log(DNPD_WARN, "port %u: reported %llu lost events", se->port,
				 (unsigned long long)se->ev_lost);
			se->ev_lost = 0;
			done = 1;
		}
	}
	if (n) {
		unsigned k = dnp_ring_push_burst(se->ev, ev, n);

		se->ev_lost += n - k;
		done += k;
	}
	if (done)
		dnpd_sess_notify(se);
	return done;
}

/* The process behind the pidfd has not exited (a pidfd polls readable once it has). */
static bool dnpd_sess_alive(const struct dnpd_session *se)
{
	struct pollfd p = { .fd = se->pidfd, .events = POLLIN };

	if (se->pidfd < 0)
		return false;
	return poll(&p, 1, 0) == 0;
}

/*
 * Linux has no process_vm_* that takes a pidfd, so the pid is used only
 * between two checks that its process (the pidfd's) lives: alive after the
 * call means the pid named that process for the whole call, so a read is
 * good; a process that died meanwhile fails the operation with -ESRCH. The
 * check before narrows a write's window to the kernel's own pid lookup
 * (docs/security.md); when the process was seen alive earlier in the same
 * daemon pass (pass != 0, a few microseconds ago), that check stands for it:
 * a pid is reused only after its process died, was reaped and the kernel's
 * pid counter came round to it again.
 */
int dnpd_sess_vm_io(struct dnpd_session *se, uint64_t va, void *local, size_t len, bool wr,
		    uint64_t pass)
{
	bool seen = pass && se->alive_pass == pass;
	size_t done = 0;

	while (done < len) {
		struct iovec l = { (uint8_t *)local + done, len - done };
		struct iovec r = { (void *)(uintptr_t)(va + done), len - done };
		ssize_t n;

		if (!seen && !dnpd_sess_alive(se))
			return -ESRCH;
		n = wr ? process_vm_writev(se->pid, &l, 1, &r, 1, 0) :
			 process_vm_readv(se->pid, &l, 1, &r, 1, 0);
		if (!dnpd_sess_alive(se))
			return -ESRCH;
		seen = true;
		se->alive_pass = pass;
		if (n < 0 && (errno == EPERM || errno == EACCES)) {
			se->vm_denied++;
			return -EPERM;
		}
		if (n < 0 && errno == ESRCH)
			return -ESRCH;
		if (n <= 0)
			return -EFAULT;
		done += (size_t)n;
	}
	return 0;
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

	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size))
		goto err;
	/* The app gets this fd: it may neither shrink (SIGBUS for us) nor grow it, nor unseal. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		goto err;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto err;
	/* Defence in depth (sealed already): a full table only loses the second layer. */
	(void)dnp_shmguard_add(p, size);
	*map = p;
	return fd;
err : {
	int r = -errno;

	close(fd);
	return r;
}
}

int dnpd_sess_setup(struct dnpd_sess_srv *s, struct dnpd_session *se, uint32_t want, uint64_t heap,
		    int *fd_map, int *fd_heap)
{
	size_t cmd_sz = dnp_ring_memsize(DNP_SESS_CMD_SLOTS, sizeof(struct dnp_cmd));
	size_t ev_sz = dnp_ring_memsize(DNP_SESS_EV_SLOTS, sizeof(struct dnp_event));
	uint64_t cmd_off = DNP_SESS_ALIGN_UP(sizeof(struct dnp_sess_ctl));
	uint64_t ev_off = DNP_SESS_ALIGN_UP(cmd_off + cmd_sz);
	/* the completion counters: a page of their own after the event ring */
	uint64_t cntr_off = DNP_SESS_ALIGN_UP(ev_off + ev_sz);
	uint64_t map_size =
		DNP_SESS_ALIGN_UP(cntr_off + DNP_CNTR_MAX * sizeof(struct dnp_sess_cntr));
	struct dnp_sess_ctl *ctl;
	void *map = NULL, *hmap = NULL;
	int fds[2] = { -1, -1 };
	int port, r;

	if (se->is_app || se->ctl)
		return -EPROTO;
	if (!heap)
		heap = s->conf.heap_default;
	port = dnpd_sess_pick_port(s, want);
	if (port < 0)
		return port;
	if (heap > s->conf.heap_max)
		return -EINVAL;
	heap = DNP_SESS_ALIGN_UP(heap);

	r = dnpd_memfd("dnp-session", map_size, &map);
	if (r < 0)
		return r;
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
			  &se->cmd_ring) ||
	    dnp_ring_init((uint8_t *)map + ev_off, DNP_SESS_EV_SLOTS, sizeof(struct dnp_event),
			  &se->ev_ring)) {
		r = -EINVAL;
		goto fail_unmap;
	}
	se->cmd = &se->cmd_ring;
	se->ev = &se->ev_ring;
	se->quota_cmds = s->conf.port_commands;
	ctl->magic = DNP_SESS_MAGIC;
	ctl->version = DNP_SESS_VERSION;
	atomic_store_explicit(&ctl->app_cpu, -1, memory_order_relaxed);
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
	ctl->cntr_off = (uint32_t)cntr_off;
	ctl->cntr_num = DNP_CNTR_MAX;
	se->cntrs = (struct dnp_sess_cntr *)(void *)((uint8_t *)map + cntr_off);
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
	*fd_map = fds[0];
	*fd_heap = fds[1];
	return port;

fail_unmap:
	dnpd_sess_unmap(se);
	close(fds[1]);
	close(fds[0]);
	return r;
fail_map:
	munmap(map, map_size);
	close(fds[0]);
	return r;
}

unsigned dnpd_sess_guard_check(struct dnpd_sess_srv *s)
{
	unsigned i = s->nconn, closed = 0;

	while (i-- > 0) {
		struct dnpd_session *se = s->conn[i];
		bool ctl = se->ctl && dnp_shmguard_faults(se->ctl);
		bool heap = se->heap && dnp_shmguard_faults(se->heap);

		if (!ctl && !heap)
			continue;
		dnpd_log(DNPD_WARN,
			 "port %u (pid %d): the application truncated its %s memory under us: "
			 "session closed",
			 se->port, (int)se->pid, ctl ? "session" : "heap");
		dnpd_sess_drop(s, i);
		closed++;
	}
	return closed;
}

/* HELLO: a port, the session memory and the heap; replies with the descriptors. */
static bool dnpd_sess_hello(struct dnpd_sess_srv *s, struct dnpd_session *se,
			    struct dnp_sess_msg *m)
{
	struct dnp_sess_msg rep = { .type = DNP_SESS_HELLO };
	int fds[DNP_SESS_NFDS] = { -1, -1, s->bell_fd, s->wake_fd };
	int port;
	bool ok;

	port = dnpd_sess_setup(s, se, m->arg32, m->va, &fds[0], &fds[1]);
	if (port < 0) {
		rep.status = port;
		dnpd_sess_reply(se, &rep, NULL, 0, NULL, 0);
		return false;
	}
	rep.arg32 = (uint32_t)port;
	ok = dnpd_sess_reply(se, &rep, fds, DNP_SESS_NFDS, NULL, 0);
	/* The mappings keep the memory; the app holds its own descriptors now. */
	close(fds[0]);
	close(fds[1]);
	dnpd_log(DNPD_INFO, "port %u opened by pid %d (heap %llu bytes)", se->port, (int)se->pid,
		 (unsigned long long)se->heap_size);
	return ok;
}

/* The handshake is over: the connection no longer counts against max_pending. */
static void dnpd_sess_set_ready(struct dnpd_sess_srv *s, struct dnpd_session *se)
{
	if (se->ready)
		return;
	se->ready = true;
	s->npending--;
}

/*
 * REGISTER: the port's quota, then, for memory outside the shared heap, a
 * one-byte read through process_vm_readv so that a daemon without ptrace
 * access to the app says so now (-EPERM), not at the first remote access.
 */
static int dnpd_sess_register(struct dnpd_sess_srv *s, struct dnpd_session *se,
			      const struct dnp_sess_msg *m, uint32_t *key)
{
	uintptr_t priv;
	int r;

	if (!se->is_app || !se->ready)
		return -EPROTO;
	if (se->nbufs >= s->conf.port_buffers)
		return -EDQUOT;
	/* priv: our mapping of the buffer when it lies in the heap (a memcpy away). */
	priv = (uintptr_t)dnpd_sess_heap_addr(se, m->va, m->len);
	if (!priv && m->len) {
		uint8_t probe;

		r = dnpd_sess_vm_io(se, m->va, &probe, 1, false, 0);
		if (r) {
			if (r == -EPERM)
				dnpd_log(DNPD_WARN,
					 "port %u: no ptrace access to pid %d for a buffer "
					 "outside the shared heap (docs/security.md)",
					 se->port, (int)se->pid);
			return r;
		}
	}
	r = s->conf.ops->reg(s->conf.ctx, se->port, m->va, m->len, m->arg32, priv, key);
	if (r == 0)
		se->nbufs++;
	return r;
}

static bool dnpd_sess_stats(struct dnpd_sess_srv *s, struct dnpd_session *se, uint32_t arg)
{
	struct dnp_sess_msg rep = { .type = DNP_SESS_STATS };
	char *buf = malloc(DNP_SESS_STATS_MAX);
	size_t n = 0;
	bool ok;

	if (!se->is_app)
		dnpd_sess_set_ready(s, se); /* a dnpctl connection */
	s->stats_arg = arg;
	if (buf && s->conf.ops->stats)
		n = s->conf.ops->stats(s->conf.ctx, buf, DNP_SESS_STATS_MAX);
	s->stats_arg = 0;
	if (!buf)
		rep.status = -ENOMEM;
	rep.len = n;
	ok = dnpd_sess_reply(se, &rep, NULL, 0, buf, n);
	free(buf);
	return ok;
}

/*
 * CAPTURE (dnpctl capture): start into the descriptor that came with the
 * request, or stop. Control connections only; the descriptor is the
 * requester's own open file, so the daemon opens no path on anyone's word.
 */
static bool dnpd_sess_capture(struct dnpd_sess_srv *s, struct dnpd_session *se,
			      const struct dnp_sess_msg *m)
{
	struct dnp_sess_msg rep = { .type = DNP_SESS_CAPTURE };
	int fd = se->rx_fd;

	se->rx_fd = -1;
	if (se->is_app || !s->conf.ops->capture || m->arg32 > 1) {
		rep.status = se->is_app ? -EPROTO : -EINVAL;
	} else if (m->arg32 == 1 && fd < 0) {
		rep.status = -EBADF;
	} else {
		dnpd_sess_set_ready(s, se);
		rep.status =
			s->conf.ops->capture(s->conf.ctx, m->arg32 ? fd : -1, &rep.va, &rep.len);
		if (rep.status == 0 && m->arg32)
			fd = -1; /* the capture has it now */
	}
	if (fd >= 0)
		close(fd);
	return dnpd_sess_reply(se, &rep, NULL, 0, NULL, 0);
}

/* Handles one complete message; false: drop the connection. */
static bool dnpd_sess_handle(struct dnpd_sess_srv *s, struct dnpd_session *se,
			     struct dnp_sess_msg *m)
{
	struct dnp_sess_msg rep = { .type = m->type };

	if (m->magic != DNP_SESS_MAGIC || m->version != DNP_SESS_VERSION) {
		rep.status = -EPROTO;
		dnpd_sess_reply(se, &rep, NULL, 0, NULL, 0);
		return false;
	}
	switch (m->type) {
	case DNP_SESS_HELLO:
		return dnpd_sess_hello(s, se, m);
	case DNP_SESS_STATS:
		return dnpd_sess_stats(s, se, m->arg32);
	case DNP_SESS_CAPTURE:
		return dnpd_sess_capture(s, se, m);
	case DNP_SESS_ATTACH:
		if (!se->is_app || se->app_heap || m->len != se->heap_size || !m->va ||
		    m->va + m->len < m->va) {
			rep.status = -EINVAL;
		} else {
			se->app_heap = m->va;
			dnpd_sess_set_ready(s, se);
		}
		break;
	case DNP_SESS_REGISTER:
		rep.status = dnpd_sess_register(s, se, m, &rep.arg32);
		break;
	case DNP_SESS_UNREGISTER:
		rep.status = se->is_app && se->ready ?
				     s->conf.ops->unreg(s->conf.ctx, se->port, m->va) :
				     -EPROTO;
		if (rep.status == 0 && se->nbufs)
			se->nbufs--;
		break;
	default:
		rep.status = -EINVAL;
		break;
	}
	return dnpd_sess_reply(se, &rep, NULL, 0, NULL, 0);
}

/* A pidfd for the process at the other end of fd (SO_PEERPIDFD, else pidfd_open). */
static int dnpd_sess_pidfd(int fd, pid_t pid)
{
	socklen_t len = sizeof(int);
	int pfd = -1;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pfd, &len) == 0 && pfd >= 0)
		return pfd;
	/*
	 * Older kernels: the pid is the one the peer had at connect(); if it
	 * died since and the pid was reused, the app's requests fail (-ESRCH)
	 * once it is found dead, as ours do: the socket lives with its owner.
	 */
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return pfd;
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
		/* Handshakes that never finish must not keep out real applications. */
		if (s->npending >= s->conf.max_pending) {
			s->refused++;
			dnpd_log(DNPD_WARN, "refused a connection: %u still in their handshake",
				 s->npending);
			close(fd);
			continue;
		}
		se = s->nconn < DNPD_MAX_CONN ? calloc(1, sizeof(*se)) : NULL;
		if (!se) {
			s->refused++;
			close(fd);
			continue;
		}
		se->fd = fd;
		se->rx_fd = -1;
		se->pid = cred.pid;
		se->pidfd = dnpd_sess_pidfd(fd, cred.pid);
		se->t_accept = dnpd_sess_now();
		s->npending++;
		s->conn[s->nconn++] = se;
	}
}

/*
 * Receives into the connection's message buffer; a descriptor that comes
 * along (SCM_RIGHTS, only CAPTURE has one) is kept in se->rx_fd, one at
 * most: the last to come; every other is closed (and those beyond the room
 * of the control buffer the kernel closes itself).
 */
static ssize_t dnpd_sess_recv(struct dnpd_session *se)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm;
	struct iovec iov = { se->rx + se->rx_len, sizeof(se->rx) - se->rx_len };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cm.buf,
			     .msg_controllen = sizeof(cm.buf) };
	ssize_t n = recvmsg(se->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	struct cmsghdr *c;

	if (n < 0)
		return n;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t nfd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t k = 0; k < nfd; k++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
			if (se->rx_fd >= 0)
				close(se->rx_fd);
			se->rx_fd = fd;
		}
	}
	return n;
}

/* Reads what the connection has; false: drop it (closed, error or protocol violation). */
static bool dnpd_sess_read(struct dnpd_sess_srv *s, struct dnpd_session *se, unsigned *handled)
{
	for (;;) {
		ssize_t n = dnpd_sess_recv(se);

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
			if (se->rx_fd >= 0) { /* none is due with any other message */
				close(se->rx_fd);
				se->rx_fd = -1;
			}
		}
	}
}

/* Drops the connections whose handshake has lasted longer than handshake_ms. */
static void dnpd_sess_expire(struct dnpd_sess_srv *s)
{
	uint64_t now = dnpd_sess_now(), limit = (uint64_t)s->conf.handshake_ms * 1000000ull;
	unsigned i;

	for (i = s->nconn; i-- > 0;) {
		struct dnpd_session *se = s->conn[i];

		if (se->ready || now - se->t_accept < limit)
			continue;
		s->timed_out++;
		dnpd_log(DNPD_WARN, "dropped a connection (pid %d): no handshake within %u ms",
			 (int)se->pid, s->conf.handshake_ms);
		dnpd_sess_drop(s, i);
	}
}

unsigned dnpd_sess_service(struct dnpd_sess_srv *s)
{
	unsigned n, i, handled = 0;

	if (s->npending)
		dnpd_sess_expire(s);
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
