/* SPDX-License-Identifier: MIT */
/*
 * libdnp — the application side of a dnpd session (api/dnp.h).
 *
 * Session set-up follows api/abi/dnp_session.h: a HELLO over the Unix socket
 * brings four descriptors (session memfd with the control block and both
 * rings, heap memfd, the daemon's bell, its wake eventfd); an ATTACH tells
 * the daemon where the heap was mapped so it can translate addresses.
 * Commands go into the command ring (we are its only producer), events come
 * out of the event ring (we are its only consumer), which is why a struct
 * dnp is used by one thread at a time.
 *
 * A blocking command that finds the command ring full moves the events it
 * finds into a private queue (the stash) while it waits: the daemon can
 * only take more commands once their completions have somewhere to go, and
 * an application that submits without polling would otherwise wait for
 * ever. dnp_poll_events and dnp_wait_event return stashed events first, so
 * the order is kept and every event is returned once.
 *
 * The heap allocator is client-side and keeps its bookkeeping out of band
 * (two sorted extent arrays in malloc'd memory), so a stray remote PUT into
 * the heap cannot corrupt it.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dnp.h"
#include "dnp_futex.h"
#include "dnp_parse.h"
#include "dnp_session.h"
#include "dnp_yield.h"
#include "ring.h"

#define DNP_DEFAULT_SOCKET "/run/dnp/dnpd.sock"
#define DNP_HEAP_ALIGN 64u
#define DNP_PORTS_MAX 256u /* dst_port is one byte on the wire */
#define DNP_REPLY_TIMEOUT_MS 10000
#define DNP_YIELD_NS 1000000u /* then sched_yield() this long before sleeping on the futex */
/*
 * After DNP_LONG_WAITS waits in a row that each took at least DNP_LONG_WAIT_NS,
 * a wait yields only DNP_YIELD_SHORT_NS before it sleeps (dnp_wait_event).
 */
#define DNP_LONG_WAIT_NS 100000u
#define DNP_LONG_WAITS 4u
#define DNP_YIELD_SHORT_NS 30000u
#define DNP_SLEEP_SLICE_MS 100   /* a sleeper re-checks that the daemon lives this often */
#define DNP_STASH_MAX (1u << 20) /* events held for an app that does not poll: 32 MiB */

struct dnp_ext {
	uint64_t off, len;
};

/* Out-of-band first-fit allocator over the shared heap. Invariant: nfree <= nused + 1. */
struct dnp_heap {
	uint8_t *base;
	uint64_t size;
	struct dnp_ext *free;       /* sorted by off, coalesced */
	struct dnp_ext *used;       /* sorted by off */
	uint32_t nfree, nused, cap; /* cap: capacity of used; free has cap + 1 */
};

struct dnp {
	int sock;
	int wake_fd;
	bool dead;
	struct dnp_sess_ctl *ctl;
	size_t map_size;
	struct dnp_sess_bell *bell;
	struct dnp_ring cmd; /* private handles of the shared rings (ring.h) */
	struct dnp_ring ev;
	/* Events taken off the ring by a blocked submit: a FIFO, oldest at head. */
	struct dnp_event *stash;
	uint32_t stash_head, stash_n, stash_cap; /* cap: a power of two */
	struct dnp_heap heap;
	struct dnp_coords self, dims;
	unsigned port;
	struct dnp_yield yield;      /* waits: yield only when somebody else wants the CPU */
	bool hold;                   /* waits look a moment after a yield (bell->hold) */
	unsigned long_waits;         /* waits in a row that took >= DNP_LONG_WAIT_NS */
	int cpu;                     /* the CPU last published in ctl->app_cpu */
	bool wait_block;             /* DNP_WAIT_BLOCK=1: block on the bell's kick_cpus too */
	bool posted;                 /* a command was queued since the last wait's first yield */
	uint64_t pin_back;           /* when our last pinned hand-off yield returned */
	struct dnp_sess_cntr *cntrs; /* completion counters (DNP_CNTR_MAX), written by the daemon */
};

static uint64_t dnp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A spin-wait hint: lets the sibling hyperthread run and saves power. */
#if defined(__x86_64__) || defined(__i386__)
static inline void dnp_cpu_relax(void)
{
	__builtin_ia32_pause();
}
#else
static inline void dnp_cpu_relax(void)
{
	atomic_signal_fence(memory_order_seq_cst);
}
#endif

/* ------------------------------------------------------------------ heap */

static int dnp_heap_init(struct dnp_heap *h, void *base, uint64_t size)
{
	memset(h, 0, sizeof(*h));
	h->base = base;
	h->size = size;
	h->cap = 64;
	h->used = malloc(sizeof(*h->used) * h->cap);
	h->free = malloc(sizeof(*h->free) * (h->cap + 1));
	if (!h->used || !h->free) {
		free(h->used);
		free(h->free);
		return -ENOMEM;
	}
	h->free[0] = (struct dnp_ext){ 0, size };
	h->nfree = size ? 1 : 0;
	return 0;
}

static void dnp_heap_fini(struct dnp_heap *h)
{
	free(h->used);
	free(h->free);
	h->used = h->free = NULL;
}

static int dnp_heap_reserve(struct dnp_heap *h)
{
	struct dnp_ext *u, *f;
	uint32_t cap;

	if (h->nused < h->cap)
		return 0;
	cap = h->cap * 2;
	u = realloc(h->used, sizeof(*u) * cap);
	if (!u)
		return -ENOMEM;
	h->used = u;
	f = realloc(h->free, sizeof(*f) * (cap + 1));
	if (!f)
		return -ENOMEM;
	h->free = f;
	h->cap = cap;
	return 0;
}

/* First index whose off is >= off. */
static uint32_t dnp_ext_lower(const struct dnp_ext *a, uint32_t n, uint64_t off)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (a[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void *dnp_heap_alloc(struct dnp_heap *h, size_t len)
{
	uint64_t sz, off;
	uint32_t i, pos;

	if (len == 0 || len > h->size)
		return NULL;
	sz = ((uint64_t)len + DNP_HEAP_ALIGN - 1) & ~(uint64_t)(DNP_HEAP_ALIGN - 1);
	if (dnp_heap_reserve(h))
		return NULL;
	for (i = 0; i < h->nfree; i++)
		if (h->free[i].len >= sz)
			break;
	if (i == h->nfree)
		return NULL;
	off = h->free[i].off;
	h->free[i].off += sz;
	h->free[i].len -= sz;
	if (h->free[i].len == 0) {
		memmove(&h->free[i], &h->free[i + 1], (h->nfree - i - 1) * sizeof(*h->free));
		h->nfree--;
	}
	pos = dnp_ext_lower(h->used, h->nused, off);
	memmove(&h->used[pos + 1], &h->used[pos], (h->nused - pos) * sizeof(*h->used));
	h->used[pos] = (struct dnp_ext){ off, sz };
	h->nused++;
	return h->base + off;
}

static void dnp_heap_release(struct dnp_heap *h, void *p)
{
	uint64_t off;
	struct dnp_ext e;
	uint32_t i, pos;
	bool join_prev, join_next;

	if ((uint8_t *)p < h->base || (uint8_t *)p >= h->base + h->size)
		return;
	off = (uint64_t)((uint8_t *)p - h->base);
	i = dnp_ext_lower(h->used, h->nused, off);
	if (i == h->nused || h->used[i].off != off)
		return; /* not a block of ours: ignore, like free() of garbage would not */
	e = h->used[i];
	memmove(&h->used[i], &h->used[i + 1], (h->nused - i - 1) * sizeof(*h->used));
	h->nused--;

	/* Insert into the free list, merging with neighbours; capacity is reserved. */
	pos = dnp_ext_lower(h->free, h->nfree, e.off);
	join_prev = pos > 0 && h->free[pos - 1].off + h->free[pos - 1].len == e.off;
	join_next = pos < h->nfree && e.off + e.len == h->free[pos].off;
	if (join_prev && join_next) {
		h->free[pos - 1].len += e.len + h->free[pos].len;
		memmove(&h->free[pos], &h->free[pos + 1], (h->nfree - pos - 1) * sizeof(*h->free));
		h->nfree--;
	} else if (join_prev) {
		h->free[pos - 1].len += e.len;
	} else if (join_next) {
		h->free[pos].off = e.off;
		h->free[pos].len += e.len;
	} else {
		memmove(&h->free[pos + 1], &h->free[pos], (h->nfree - pos) * sizeof(*h->free));
		h->free[pos] = e;
		h->nfree++;
	}
}

/* --------------------------------------------------------------- socket */

static int dnp_send_msg(int sock, const struct dnp_sess_msg *m)
{
	ssize_t n;

	do
		n = send(sock, m, sizeof(*m), MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(*m) ? 0 : -EIO;
}

/* Reads exactly len bytes (and up to nfds descriptors with the first chunk). */
static int dnp_recv_full(int sock, void *buf, size_t len, int *fds, unsigned nfds,
			 unsigned *got_fds)
{
	size_t done = 0;

	if (got_fds)
		*got_fds = 0;
	while (done < len) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * DNP_SESS_NFDS)];
			struct cmsghdr align;
		} cbuf;
		struct iovec iov = { (char *)buf + done, len - done };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		struct pollfd pfd = { .fd = sock, .events = POLLIN };
		struct cmsghdr *c;
		ssize_t n;
		int r;

		r = poll(&pfd, 1, DNP_REPLY_TIMEOUT_MS);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -ETIMEDOUT;
		if (fds && done == 0) {
			mh.msg_control = cbuf.buf;
			mh.msg_controllen = sizeof(cbuf.buf);
		}
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		for (c = CMSG_FIRSTHDR(&mh); fds && c; c = CMSG_NXTHDR(&mh, c)) {
			unsigned k, cnt;

			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			cnt = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			for (k = 0; k < cnt; k++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
				if (*got_fds < nfds)
					fds[(*got_fds)++] = fd;
				else
					close(fd);
			}
		}
		done += (size_t)n;
	}
	return 0;
}

/* Announces work published before the call (dnp_session.h: daemon bell). */
static void dnp_bell_ring(struct dnp *d)
{
	/*
	 * The doorbell protocol (transport/doorbell.h): a seq_cst fence after
	 * the ring tail store, then a load of 'sleeping', against the daemon's
	 * seq_cst increment of 'sleeping' and fence before its second look at
	 * the rings: either the daemon sees our command or we see it armed.
	 * A daemon that is awake is not disturbed: nothing is written.
	 */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&d->bell->sleeping, memory_order_relaxed) == 0)
		return;
	atomic_fetch_add_explicit(&d->bell->seq, 1, memory_order_release);
	if (atomic_load_explicit(&d->bell->poll_mode, memory_order_relaxed)) {
		uint64_t one = 1;

		if (write(d->wake_fd, &one, sizeof(one)) < 0)
			(void)0; /* counter saturated: the daemon has a wake-up pending anyway */
	} else {
		dnp_futex_wake(&d->bell->seq);
	}
}

/* True once the daemon has closed the session or the socket. */
static bool dnp_check_dead(struct dnp *d)
{
	char c;
	ssize_t n;

	if (d->dead)
		return true;
	if (atomic_load_explicit(&d->ctl->state, memory_order_acquire) != DNP_SESS_OPEN) {
		d->dead = true;
		return true;
	}
	n = recv(d->sock, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		d->dead = true;
	return d->dead;
}

/* One request, one reply. */
static int dnp_request(struct dnp *d, struct dnp_sess_msg *m)
{
	struct dnp_sess_msg rep;
	uint16_t type = m->type;
	int r;

	if (d->dead)
		return -EIO;
	m->magic = DNP_SESS_MAGIC;
	m->version = DNP_SESS_VERSION;
	r = dnp_send_msg(d->sock, m);
	if (r == 0) {
		/* A sleeping daemon does not watch its sockets: wake it. */
		dnp_bell_ring(d);
		r = dnp_recv_full(d->sock, &rep, sizeof(rep), NULL, 0, NULL);
	}
	if (r) {
		d->dead = true;
		return -EIO;
	}
	if (rep.magic != DNP_SESS_MAGIC || rep.type != type) {
		d->dead = true;
		return -EIO;
	}
	*m = rep;
	return rep.status;
}

/* ----------------------------------------------------------------- open */

/*
 * A number from the environment (dnp_parse_size: decimal or 0x, K/M/G/T
 * suffixes); unset or empty: dflt. 0, or -EINVAL for a malformed value or one
 * that does not fit (never a silent wrap).
 */
static int dnp_env_u64(const char *name, uint64_t dflt, uint64_t *out)
{
	const char *s = getenv(name);

	if (!s || !*s) {
		*out = dflt;
		return 0;
	}
	return dnp_parse_size(s, out) ? -EINVAL : 0;
}

static int dnp_map_session(struct dnp *d, const int *fds)
{
	struct dnp_sess_ctl *ctl;
	struct stat st;
	void *p;
	int r;

	if (fstat(fds[0], &st) || (uint64_t)st.st_size < DNP_SESS_PAGE)
		return -EPROTO;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (p == MAP_FAILED)
		return -errno;
	d->ctl = ctl = p;
	d->map_size = (size_t)st.st_size;
	if (ctl->magic != DNP_SESS_MAGIC || ctl->version != DNP_SESS_VERSION ||
	    ctl->map_size != (uint64_t)st.st_size)
		return -EPROTO;
	if ((uint64_t)ctl->cmd_off >= ctl->map_size || (uint64_t)ctl->ev_off >= ctl->map_size)
		return -EPROTO;
	/* the counters: every one of them inside the map, 8-byte aligned */
	if (ctl->cntr_num < DNP_CNTR_MAX || (ctl->cntr_off & 7u) ||
	    (uint64_t)ctl->cntr_off + DNP_CNTR_MAX * sizeof(struct dnp_sess_cntr) > ctl->map_size)
		return -EPROTO;
	d->cntrs = (struct dnp_sess_cntr *)(void *)((uint8_t *)p + ctl->cntr_off);
	r = dnp_ring_attach((uint8_t *)p + ctl->cmd_off, ctl->map_size - ctl->cmd_off,
			    sizeof(struct dnp_cmd), &d->cmd);
	if (r)
		return -EPROTO;
	r = dnp_ring_attach((uint8_t *)p + ctl->ev_off, ctl->map_size - ctl->ev_off,
			    sizeof(struct dnp_event), &d->ev);
	if (r)
		return -EPROTO;

	if (fstat(fds[1], &st) || (uint64_t)st.st_size != ctl->heap_size)
		return -EPROTO;
	p = MAP_FAILED;
	if (ctl->heap_size)
		p = mmap(NULL, ctl->heap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
	if (ctl->heap_size && p == MAP_FAILED)
		return -errno;
	r = dnp_heap_init(&d->heap, p == MAP_FAILED ? NULL : p, ctl->heap_size);
	if (r) {
		if (p != MAP_FAILED)
			munmap(p, ctl->heap_size);
		return r;
	}

	if (fstat(fds[2], &st) || (uint64_t)st.st_size < sizeof(struct dnp_sess_bell))
		return -EPROTO;
	p = mmap(NULL, sizeof(struct dnp_sess_bell), PROT_READ | PROT_WRITE, MAP_SHARED, fds[2], 0);
	if (p == MAP_FAILED)
		return -errno;
	d->bell = p;
	d->wake_fd = fds[3];

	d->port = ctl->port;
	d->cpu = -1; /* as the daemon set app_cpu */
	d->hold = atomic_load_explicit(&d->bell->hold, memory_order_relaxed) == 1;
	d->self = (struct dnp_coords){ ctl->self[0], ctl->self[1], ctl->self[2] };
	d->dims = (struct dnp_coords){ ctl->dims[0], ctl->dims[1], ctl->dims[2] };
	if (!d->dims.x || !d->dims.y || !d->dims.z || d->self.x >= d->dims.x ||
	    d->self.y >= d->dims.y || d->self.z >= d->dims.z || d->port >= ctl->max_ports)
		return -EPROTO;
	return 0;
}

static void dnp_unmap(struct dnp *d)
{
	if (d->heap.base)
		munmap(d->heap.base, d->heap.size);
	dnp_heap_fini(&d->heap);
	if (d->bell)
		munmap(d->bell, sizeof(struct dnp_sess_bell));
	if (d->ctl)
		munmap(d->ctl, d->map_size);
	free(d->stash);
	d->stash = NULL;
	d->stash_n = d->stash_cap = 0;
	d->heap.base = NULL;
	d->bell = NULL;
	d->ctl = NULL;
}

/*
 * The socket path of $DNP_SOCKET with Slurm's file-name patterns, so that one
 * value names each node's daemon when the nodes share a file system: %N the
 * node name ($SLURMD_NODENAME, else the host name), %n the node index in the
 * job ($SLURM_NODEID), %t the rank ($SLURM_PROCID), %l the rank on the node
 * ($SLURM_LOCALID), %% a '%'. -EINVAL for another pattern or a variable that
 * is not set, -ENAMETOOLONG.
 */
static int dnp_socket_expand(const char *pat, char *out, size_t cap)
{
	char host[HOST_NAME_MAX + 1];
	size_t n = 0, k;

	for (; *pat; pat++) {
		const char *v = NULL;
		char one[2] = { *pat, 0 };

		if (*pat != '%') {
			v = one;
		} else {
			switch (*++pat) {
			case '%':
				v = "%";
				break;
			case 'n':
				v = getenv("SLURM_NODEID");
				break;
			case 't':
				v = getenv("SLURM_PROCID");
				break;
			case 'l':
				v = getenv("SLURM_LOCALID");
				break;
			case 'N':
				v = getenv("SLURMD_NODENAME");
				if ((!v || !*v) && !gethostname(host, sizeof(host))) {
					host[sizeof(host) - 1] = 0;
					v = host;
				}
				break;
			default:
				return -EINVAL;
			}
			if (!v || !*v)
				return -EINVAL;
		}
		k = strlen(v);
		if (n + k >= cap)
			return -ENAMETOOLONG;
		memcpy(out + n, v, k);
		n += k;
	}
	out[n] = 0;
	return 0;
}

int dnp_open(const char *path, struct dnp **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct dnp_sess_msg m = { 0 };
	int fds[DNP_SESS_NFDS] = { -1, -1, -1, -1 };
	unsigned nfds = 0, i;
	uint64_t env_port, env_block = 0;
	struct dnp *d;
	int r;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!path && getenv("DNP_SOCKET") && *getenv("DNP_SOCKET")) {
		r = dnp_socket_expand(getenv("DNP_SOCKET"), sa.sun_path, sizeof(sa.sun_path));
		if (r)
			return r;
	} else {
		if (!path)
			path = DNP_DEFAULT_SOCKET;
		if (strlen(path) >= sizeof(sa.sun_path))
			return -ENAMETOOLONG;
		strcpy(sa.sun_path, path);
	}

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->wake_fd = -1;
	d->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (d->sock < 0) {
		r = -errno;
		goto err_free;
	}
	if (connect(d->sock, (struct sockaddr *)&sa, sizeof(sa))) {
		r = -errno;
		goto err_sock;
	}

	m.magic = DNP_SESS_MAGIC;
	m.version = DNP_SESS_VERSION;
	m.type = DNP_SESS_HELLO;
	r = dnp_env_u64("DNP_PORT", DNP_SESS_PORT_ANY, &env_port);
	if (!r)
		r = dnp_env_u64("DNP_HEAP_SIZE", 0, &m.va);
	if (!r)
		r = dnp_env_u64("DNP_WAIT_BLOCK", 0, &env_block);
	if (!r && (env_port > UINT32_MAX || env_block > 1))
		r = -EINVAL;
	if (r)
		goto err_sock;
	d->wait_block = env_block == 1;
	m.arg32 = (uint32_t)env_port;
	r = dnp_send_msg(d->sock, &m);
	if (r)
		goto err_sock;
	r = dnp_recv_full(d->sock, &m, sizeof(m), fds, DNP_SESS_NFDS, &nfds);
	if (r)
		goto err_fds;
	if (m.magic != DNP_SESS_MAGIC || m.version != DNP_SESS_VERSION ||
	    m.type != DNP_SESS_HELLO) {
		r = -EPROTO;
		goto err_fds;
	}
	if (m.status < 0) {
		r = m.status;
		goto err_fds;
	}
	if (nfds != DNP_SESS_NFDS) {
		r = -EPROTO;
		goto err_fds;
	}
	r = dnp_map_session(d, fds);
	if (r)
		goto err_map;
	/* The wake eventfd is kept; the memfds are no longer needed once mapped. */
	for (i = 0; i < 3; i++)
		close(fds[i]);

	memset(&m, 0, sizeof(m));
	m.type = DNP_SESS_ATTACH;
	m.va = (uint64_t)(uintptr_t)d->heap.base;
	m.len = d->heap.size;
	r = dnp_request(d, &m);
	if (r)
		goto err_unmap;
	*out = d;
	return 0;

err_map:
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	d->wake_fd = -1;
err_unmap:
	dnp_unmap(d);
	if (d->wake_fd >= 0)
		close(d->wake_fd);
	goto err_sock;
err_fds:
	for (i = 0; i < nfds; i++)
		close(fds[i]);
err_sock:
	close(d->sock);
err_free:
	free(d);
	return r;
}

void dnp_close(struct dnp *d)
{
	if (!d)
		return;
	/* Closing the socket is what tells the daemon to close our port. */
	close(d->sock);
	dnp_unmap(d);
	if (d->wake_fd >= 0)
		close(d->wake_fd);
	free(d);
}

int dnp_self(const struct dnp *d, struct dnp_coords *self, struct dnp_coords *dims)
{
	if (!d)
		return -EINVAL;
	if (self)
		*self = d->self;
	if (dims)
		*dims = d->dims;
	return 0;
}

unsigned dnp_port(const struct dnp *d)
{
	return d ? d->port : 0;
}

void *dnp_alloc(struct dnp *d, size_t len)
{
	return d ? dnp_heap_alloc(&d->heap, len) : NULL;
}

void dnp_free(struct dnp *d, void *p)
{
	if (d && p)
		dnp_heap_release(&d->heap, p);
}

/*
 * DNP_BUF_POPULATE: every page of [addr, addr+len) faulted in, writable.
 * MADV_POPULATE_WRITE where the kernel has it; else a no-op atomic add on one
 * byte of each page (a write fault that keeps the byte, even if a thread
 * writes it meanwhile; the range must then be writable, as dnp.h says).
 * 0 or -EFAULT (not mapped; with madvise also not writable).
 */
static int dnp_populate(void *addr, size_t len)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)addr & ~(pg - 1);

#ifdef MADV_POPULATE_WRITE
	if (madvise((void *)a, (uintptr_t)addr + len - a, MADV_POPULATE_WRITE) == 0)
		return 0;
	if (errno != EINVAL)
		return -EFAULT; /* EFAULT, ENOMEM (not mapped), EPERM, EHWPOISON */
#endif
	if (msync((void *)a, (uintptr_t)addr + len - a, MS_ASYNC) < 0)
		return -EFAULT; /* a hole: touching it would crash */
	for (uintptr_t p = (uintptr_t)addr; p < (uintptr_t)addr + len; p = (p & ~(pg - 1)) + pg)
		__atomic_fetch_add((volatile uint8_t *)p, 0, __ATOMIC_RELAXED);
	return 0;
}

int dnp_register(struct dnp *d, void *addr, size_t len, unsigned flags, uint32_t *key)
{
	struct dnp_sess_msg m = { 0 };
	int r;

	if (!d || !addr || !len || !key || !(flags & DNP_BUF_ALL) ||
	    (flags & ~(DNP_BUF_ALL | DNP_BUF_POPULATE)) || (uintptr_t)addr + len < (uintptr_t)addr)
		return -EINVAL;
	if ((flags & DNP_BUF_POPULATE) && (r = dnp_populate(addr, len)) < 0)
		return r;
	m.type = DNP_SESS_REGISTER;
	m.arg32 = flags & DNP_BUF_ALL; /* POPULATE is ours alone */
	m.va = (uint64_t)(uintptr_t)addr;
	m.len = len;
	r = dnp_request(d, &m);
	if (r == 0)
		*key = m.arg32;
	return r;
}

int dnp_unregister(struct dnp *d, void *addr)
{
	struct dnp_sess_msg m = { 0 };

	if (!d || !addr)
		return -EINVAL;
	m.type = DNP_SESS_UNREGISTER;
	m.va = (uint64_t)(uintptr_t)addr;
	return dnp_request(d, &m);
}

/* ------------------------------------------------------------- commands */

static bool dnp_coords_ok(const struct dnp *d, struct dnp_coords c)
{
	return c.x < d->dims.x && c.y < d->dims.y && c.z < d->dims.z;
}

/* Moves what the event ring holds to the stash. -EOVERFLOW: the stash is at DNP_STASH_MAX. */
static int dnp_stash_events(struct dnp *d)
{
	for (;;) {
		uint32_t tail, first, n;

		if (d->stash_n == d->stash_cap) {
			uint32_t cap = d->stash_cap ? d->stash_cap * 2 : 4096;
			struct dnp_event *ns;

			if (d->stash_cap >= DNP_STASH_MAX)
				return -EOVERFLOW;
			ns = malloc(sizeof(*ns) * cap);
			if (!ns)
				return -ENOMEM;
			/* Unwrap the FIFO into the new array. */
			for (n = 0; n < d->stash_n; n++)
				ns[n] = d->stash[(d->stash_head + n) & (d->stash_cap - 1)];
			free(d->stash);
			d->stash = ns;
			d->stash_cap = cap;
			d->stash_head = 0;
		}
		tail = (d->stash_head + d->stash_n) & (d->stash_cap - 1);
		first = d->stash_cap - tail; /* contiguous room from tail */
		if (first > d->stash_cap - d->stash_n)
			first = d->stash_cap - d->stash_n;
		n = dnp_ring_pop_burst(&d->ev, d->stash + tail, first);
		d->stash_n += n;
		if (n < first)
			return 0; /* the ring is empty */
	}
}

/* Up to max events: the stash first (older), then the ring. */
static unsigned dnp_take_events(struct dnp *d, struct dnp_event *ev, unsigned max)
{
	unsigned n = 0;

	while (n < max && d->stash_n) {
		ev[n++] = d->stash[d->stash_head];
		d->stash_head = (d->stash_head + 1) & (d->stash_cap - 1);
		d->stash_n--;
	}
	if (n < max)
		n += dnp_ring_pop_burst(&d->ev, ev + n, max - n);
	return n;
}

/*
 * Queues one command: waits (yielding) while the ring is full unless
 * DNP_NONBLOCK. While it waits it stashes the events the daemon delivers,
 * so that the daemon, whose commands wait for room for their completions,
 * can go on: a full ring never deadlocks an application that does not poll.
 */
static int dnp_submit(struct dnp *d, const struct dnp_cmd *c, unsigned flags)
{
	unsigned spins = 0;
	int r;

	if (d->dead)
		return -EIO;
	while (dnp_ring_push(&d->cmd, c) == -EAGAIN) {
		r = dnp_stash_events(d);
		/* The daemon may be asleep with our ring full: make sure it drains. */
		dnp_bell_ring(d);
		if (flags & DNP_NONBLOCK)
			return -EAGAIN;
		if (r)
			return r;
		if ((++spins & 255u) == 0 && dnp_check_dead(d))
			return -EIO;
		sched_yield();
	}
	dnp_bell_ring(d);
	d->posted = true;
	return 0;
}

/* The command flags that the call's flags ask for (dnp.h: DNP_SRC_EVENT, DNP_NO_EVENT, DNP_INLINE). */
static uint8_t dnp_cmd_flags(unsigned flags)
{
	return (uint8_t)((flags & DNP_SRC_EVENT ? DNP_CMD_F_SRC_EVENT : 0) |
			 (flags & DNP_NO_EVENT ? DNP_CMD_F_NO_EVENT : 0) |
			 (flags & DNP_INLINE ? DNP_CMD_F_INLINE : 0));
}

/* The flags of dnp_put/send/get; DNP_CNTR(n) checked on its own. */
#define DNP_CALL_FLAGS \
	(DNP_NONBLOCK | DNP_SRC_EVENT | DNP_NO_EVENT | DNP_INLINE | DNP_CNTR_MASK | DNP_TC_MASK)

static int dnp_cmd_fill(struct dnp *d, struct dnp_cmd *c, unsigned op, const void *local,
			size_t len, struct dnp_coords peer, unsigned peer_port, unsigned flags)
{
	if (!d || (len && !local) || (uint64_t)len > DNP_MAX_MSG || peer_port >= DNP_PORTS_MAX ||
	    (flags & ~DNP_CALL_FLAGS) || !dnp_coords_ok(d, peer))
		return -EINVAL;
	if (op == DNP_OP_GET && (flags & DNP_SRC_EVENT))
		return -EINVAL; /* a GET reads no local source */
	if ((flags & DNP_CNTR_MASK) > DNP_CNTR(DNP_CNTR_MAX - 1))
		return -EINVAL;
	/* an inline PUT: short, and its source is free at once (nothing to report) */
	if ((flags & DNP_INLINE) &&
	    (op != DNP_OP_PUT || len > DNP_INLINE_MAX || (flags & DNP_SRC_EVENT)))
		return -EINVAL;
	if ((uintptr_t)local + len < (uintptr_t)local)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->op = (uint8_t)op;
	c->flags = dnp_cmd_flags(flags);
	c->dst_port = (uint8_t)peer_port;
	c->src_port = (uint8_t)d->port;
	c->dst_x = (uint8_t)peer.x;
	c->dst_y = (uint8_t)peer.y;
	c->dst_z = (uint8_t)peer.z;
	c->tc = (uint8_t)DNP_TC_OF(flags);
	c->len = len;
	c->cntr = (uint8_t)((flags & DNP_CNTR_MASK) >> 16); /* 0, or 1 + the counter */
	if (flags & DNP_INLINE)
		dnp_cmd_inline_set(c, local, len); /* the slot carries the bytes */
	else
		c->local_va = (uint64_t)(uintptr_t)local;
	return 0;
}

int dnp_put(struct dnp *d, const void *src, size_t len, struct dnp_coords dst, unsigned dst_port,
	    uint64_t remote_va, uint32_t remote_key, uint64_t cookie, unsigned flags)
{
	struct dnp_cmd c;
	int r;

	r = dnp_cmd_fill(d, &c, DNP_OP_PUT, src, len, dst, dst_port, flags);
	if (r)
		return r;
	c.remote_va = remote_va;
	c.remote_key = remote_key;
	c.cookie = cookie;
	return dnp_submit(d, &c, flags);
}

int dnp_send(struct dnp *d, const void *src, size_t len, struct dnp_coords dst, unsigned dst_port,
	     uint64_t cookie, unsigned flags)
{
	struct dnp_cmd c;
	int r;

	r = dnp_cmd_fill(d, &c, DNP_OP_SEND, src, len, dst, dst_port, flags);
	if (r)
		return r;
	c.cookie = cookie;
	return dnp_submit(d, &c, flags);
}

int dnp_get(struct dnp *d, void *dst, size_t len, uint32_t local_key, struct dnp_coords src,
	    unsigned src_port, uint64_t remote_va, uint32_t remote_key, uint64_t cookie,
	    unsigned flags)
{
	struct dnp_cmd c;
	int r;

	r = dnp_cmd_fill(d, &c, DNP_OP_GET, dst, len, src, src_port, flags);
	if (r)
		return r;
	c.local_key = local_key;
	c.remote_va = remote_va;
	c.remote_key = remote_key;
	c.cookie = cookie;
	return dnp_submit(d, &c, flags);
}

/* --------------------------------------------------------------- events */

/*
 * Tells the daemon which CPU we poll for events on (dnp_session.h, app_cpu),
 * writing the shared line only when it changes: the daemon then yields after
 * pushing our events only if we share its CPU.
 */
static void dnp_note_cpu(struct dnp *d)
{
	int cpu = sched_getcpu();

	if (cpu != d->cpu) {
		d->cpu = cpu;
		atomic_store_explicit(&d->ctl->app_cpu, cpu, memory_order_relaxed);
	}
}

int dnp_poll_events(struct dnp *d, struct dnp_event *ev, unsigned max)
{
	unsigned n;

	if (!d || (!ev && max))
		return -EINVAL;
	n = dnp_take_events(d, ev, max > INT_MAX ? INT_MAX : max);
	if (n == 0 && max)
		dnp_note_cpu(d);
	return (int)n;
}

/*
 * True when the only process this wait waits for, a daemon with no links
 * pinned to one CPU (the bell's solo_cpu), runs on another CPU than ours:
 * a yield could then only give our CPU to a process outside the run
 * (docs/performance.md, "Hand-off and context switches"). Untrusted: a
 * wrong value costs yields or a spin until the sleep, never an event.
 */
static bool dnp_waits_elsewhere(struct dnp *d)
{
	uint32_t solo = atomic_load_explicit(&d->bell->solo_cpu, memory_order_relaxed);

	return solo != 0 && d->cpu >= 0 && (uint32_t)d->cpu != solo - 1;
}

/*
 * True when a pinned daemon of the run polls on the CPU we poll on and gives
 * us that CPU once our event is there, so the wait blocks on the event bell
 * at once: our own daemon (the bell's home_cpu, version 8), which yields to
 * us after waking us, or, under DNP_WAIT_BLOCK=1, a neighbour of it (the
 * bell's kick_cpus, version 9), which our daemon kicks after waking us
 * (dnpd.c, dnpd_kick_nbrs). Every look of ours on our own daemon's CPU only
 * keeps the CPU from it. On a neighbour's CPU (dnp-run --pin) blocking saves
 * switches and CPU time but puts two context switches on the path of every
 * message, which polling overlaps with the other CPU's work: a longer half
 * round trip on a quiet machine, so it is asked for (docs/performance.md,
 * "Pinned hand-off"). Untrusted, each word read once: a wrong value costs a
 * sleep or a yield, never an event.
 */
static bool dnp_blocks_here(struct dnp *d)
{
	uint32_t home = atomic_load_explicit(&d->bell->home_cpu, memory_order_relaxed);
	uint32_t kick;

	if (d->cpu < 0)
		return false;
	if (home != 0 && (uint32_t)d->cpu == home - 1)
		return true;
	if (!d->wait_block)
		return false;
	kick = atomic_load_explicit(&d->bell->kick_cpus, memory_order_relaxed);
	return d->cpu < 32 && (kick >> d->cpu & 1u);
}

/*
 * The pinned placement's polling hand-off (dnpd.c, dnpd_pin_poll): a wait
 * on a CPU where a pinned neighbour of our daemon polls (the bell's
 * kick_cpus), when it does not block there. Its first yield after we queued
 * a command is made even when we seemed alone (the daemon on this CPU gets
 * work next: the frame our daemon sends it); after that yield returns we
 * look without yielding for DNP_YIELD_PIN_NS (the event is ours next).
 * Returns true when the caller must not yield now. Untrusted bell word, read
 * once: a wrong value costs a yield or a short spin, never an event.
 */
static bool dnp_pin_wait(struct dnp *d, uint64_t now)
{
	uint32_t kick = atomic_load_explicit(&d->bell->kick_cpus, memory_order_relaxed);
	bool posted = d->posted;

	d->posted = false;
	if (d->wait_block || d->cpu < 0 || d->cpu >= 32 || !(kick >> d->cpu & 1u))
		return false;
	if (posted) {
		dnp_yield_handoff(&d->yield, now);
		d->pin_back = dnp_now_ns();
		return true;
	}
	return d->pin_back >= now || now - d->pin_back < DNP_YIELD_PIN_NS;
}

int dnp_wait_placement(struct dnp *d, unsigned *how)
{
	uint32_t kick;

	if (!d || !how)
		return -EINVAL;
	*how = 0;
	/*
	 * What we know already, no shared word: the session's state shares
	 * its line with ev_seq, which the daemon bumps at every event push,
	 * and a caller asks once per message.
	 */
	if (d->dead)
		return -EIO;
	dnp_note_cpu(d);
	/* the same words, and the same rules, as dnp_pin_wait and wait_slow */
	kick = atomic_load_explicit(&d->bell->kick_cpus, memory_order_relaxed);
	if (!d->wait_block && d->cpu >= 0 && d->cpu < 32 && (kick >> d->cpu & 1u))
		*how |= DNP_WAIT_PIN_HANDOFF;
	if (dnp_blocks_here(d))
		*how |= DNP_WAIT_BLOCKS;
	if (dnp_waits_elsewhere(d))
		*how |= DNP_WAIT_ELSEWHERE;
	return 0;
}

int dnp_event_seq(struct dnp *d, uint32_t *seq)
{
	if (!d || !seq)
		return -EINVAL;
	/* acquire: pairs with the daemon's bump after it pushed events (dnp_evc_notify) */
	*seq = atomic_load_explicit(&d->ctl->ev_seq, memory_order_acquire);
	return 0;
}

/*
 * Touches only the session's shared words (ev_seq, ev_waiters, state): d's
 * private state belongs to whichever thread uses d meanwhile (dnp.h).
 */
int dnp_event_sleep(struct dnp *d, uint32_t seq, unsigned timeout_us)
{
	struct timespec ts;
	int r;

	if (!d || timeout_us == 0 || timeout_us > 1000000u)
		return -EINVAL;
	if (atomic_load_explicit(&d->ctl->state, memory_order_acquire) != DNP_SESS_OPEN)
		return -EIO;
	ts.tv_sec = timeout_us / 1000000u;
	ts.tv_nsec = (long)(timeout_us % 1000000u) * 1000;
	r = dnp_evc_sleep(&d->ctl->ev_seq, &d->ctl->ev_waiters, seq, &ts);
	if (atomic_load_explicit(&d->ctl->state, memory_order_acquire) != DNP_SESS_OPEN)
		return -EIO;
	return r == -ETIMEDOUT ? 0 : 1;
}

/*
 * What a wait waits for: one event (into ev), or completion counter n at
 * threshold (ev NULL; the events that come meanwhile go to the stash).
 */
struct dnp_waiter {
	struct dnp_event *ev;
	unsigned n;
	uint64_t threshold;
};

static bool dnp_cntr_reached(struct dnp *d, unsigned n, uint64_t threshold);

/*
 * One look: 1 when what w waits for is there, 0 when not, a negative errno
 * when stashing events failed. 'full': a counter wait also stashes the
 * events that came (every 4th look and before a sleep, as ring reads cost).
 */
static int wait_look(struct dnp *d, const struct dnp_waiter *w, bool full)
{
	int r;

	if (w->ev)
		return dnp_take_events(d, w->ev, 1) ? 1 : 0;
	if (dnp_cntr_reached(d, w->n, w->threshold))
		return 1;
	if (full) {
		r = dnp_stash_events(d);
		if (r)
			return r;
	}
	return 0;
}

/*
 * The one wait loop of dnp_wait_event and dnp_cntr_wait, once the first
 * look found nothing: poll, yielding the CPU every 4 looks (2
 * shared cores: a pure spinner would keep the daemon from producing the
 * event; every 4 rather than 64 looks: the 2-node shm ping-pong, four
 * processes on two CPUs, is about 10% faster), except while alone on the CPU
 * (dnp_yield.h), and only after yield_ns sleep on the event bell (ev_seq,
 * which the daemon bumps after it pushes events and after it publishes
 * counters), whose wake-up costs about 11 us. A wait's first yield is at
 * once (we may just have posted the command that the process sharing our
 * CPU must carry); a yield that ran somebody else is followed by half a lone
 * yield's time of looking before the next (dnp_yield_held: whoever gave us
 * the CPU likely just sent our event), when the daemon says so (bell->hold:
 * a pinned shm daemon; docs/performance.md, "Holding the CPU after a
 * yield"). On a CPU where a pinned daemon of the run polls, the wait blocks at
 * once (dnp_blocks_here) or makes the pinned placement's polling hand-off
 * (dnp_pin_wait). Beside busy processes (recent yields gave away time
 * slices: dnp_yield_blocking) it blocks at once wherever it runs. Returns 1
 * (there), 0 (deadline passed), -EIO (the daemon died) or an error of
 * dnp_stash_events.
 */
static int wait_slow(struct dnp *d, const struct dnp_waiter *w, uint64_t t0, uint64_t deadline,
		     uint64_t yield_ns)
{
	uint64_t now;
	unsigned i;
	bool quick, block = false;
	int r;

	d->yield.back = 0;
	for (i = 0;; i++) {
		r = wait_look(d, w, (i & 3u) == 0);
		if (r)
			return r;
		if ((i & 3u) != 0) {
			dnp_cpu_relax();
			continue;
		}
		now = dnp_now_ns();
		if (deadline && now >= deadline)
			return 0;
		if (now - t0 >= yield_ns)
			break;
		/* no pure spinning: the daemon may need this core (dnp_yield.h) */
		dnp_note_cpu(d);
		if (dnp_yield_blocking(&d->yield, now)) {
			block = true; /* beside busy processes: a yield costs a time slice */
			break;
		}
		if (dnp_blocks_here(d))
			break; /* block now: a daemon wakes us and gives way */
		if (dnp_pin_wait(d, now))
			continue;
		if (dnp_waits_elsewhere(d))
			continue;
		if (!d->hold || !dnp_yield_held(&d->yield, now, d->yield.fast_ns / 2))
			dnp_yield_step(&d->yield, now);
	}
	for (i = 0;; i++) {
		struct timespec ts;
		uint64_t slice = (uint64_t)DNP_SLEEP_SLICE_MS * 1000000ull;
		uint32_t seq;

		/*
		 * Event count: take ev_seq, look, announce the sleep (seq_cst
		 * against the daemon's seq_cst bump then load of ev_waiters),
		 * and sleep only if ev_seq has not moved since we looked
		 * (dnp_evc_sleep). The socket is asked whether the daemon
		 * lives before every sleep but a hand-off's first (one system
		 * call per message saved; a daemon that died without marking
		 * the session closed is then noticed one slice later).
		 */
		seq = atomic_load_explicit(&d->ctl->ev_seq, memory_order_acquire);
		r = wait_look(d, w, true);
		if (r)
			return r;
		quick = i == 0 && (block || dnp_blocks_here(d)) && !d->dead &&
			atomic_load_explicit(&d->ctl->state, memory_order_acquire) == DNP_SESS_OPEN;
		if (!quick && dnp_check_dead(d)) {
			r = wait_look(d, w, true);
			return r ? r : -EIO;
		}
		if (deadline) {
			now = dnp_now_ns();
			if (now >= deadline)
				return 0;
			if (deadline - now < slice)
				slice = deadline - now;
		}
		ts.tv_sec = (time_t)(slice / 1000000000ull);
		ts.tv_nsec = (long)(slice % 1000000000ull);
		(void)dnp_evc_sleep(&d->ctl->ev_seq, &d->ctl->ev_waiters, seq, &ts);
	}
}

int dnp_wait_event(struct dnp *d, struct dnp_event *ev, int timeout_ms)
{
	uint64_t deadline = 0, t0, yield_ns;
	int r;

	if (!d || !ev)
		return -EINVAL;
	if (dnp_take_events(d, ev, 1))
		return 1;
	if (timeout_ms == 0)
		return dnp_check_dead(d) ? -EIO : 0;
	t0 = dnp_now_ns();
	if (timeout_ms > 0)
		deadline = t0 + (uint64_t)timeout_ms * 1000000ull;
	/*
	 * An app whose recent waits were all long (a stream of large messages:
	 * a 1 MiB PUT takes 200-300 us here) sleeps after a short yield phase.
	 * Its daemon, usually on the same CPU, then has that CPU to itself
	 * instead of trading it with this poller at every idle moment, and
	 * the wake-up costs little against such a wait (docs/performance.md).
	 */
	yield_ns = d->long_waits >= DNP_LONG_WAITS ? DNP_YIELD_SHORT_NS : DNP_YIELD_NS;
	r = wait_slow(d, &(struct dnp_waiter){ .ev = ev }, t0, deadline, yield_ns);
	if (r == 1) {
		if (dnp_now_ns() - t0 >= DNP_LONG_WAIT_NS) {
			if (d->long_waits < DNP_LONG_WAITS)
				d->long_waits++;
		} else {
			d->long_waits = 0;
		}
	}
	return r;
}

/* ------------------------------------------------ completion counters */

int dnp_cntr_read(struct dnp *d, unsigned n, uint64_t *ok, uint64_t *err)
{
	if (!d || n >= DNP_CNTR_MAX)
		return -EINVAL;
	/* acquire: pairs with the daemon's release store of the count */
	if (ok)
		*ok = atomic_load_explicit(&d->cntrs[n].ok, memory_order_acquire);
	if (err)
		*err = atomic_load_explicit(&d->cntrs[n].err, memory_order_acquire);
	return 0;
}

static bool dnp_cntr_reached(struct dnp *d, unsigned n, uint64_t threshold)
{
	uint64_t ok, err;

	(void)dnp_cntr_read(d, n, &ok, &err);
	return ok + err >= threshold;
}

/* wait_slow with DNP_YIELD_NS of yielding, for the counter (events go to the stash). */
int dnp_cntr_wait(struct dnp *d, unsigned n, uint64_t threshold, int timeout_ms)
{
	uint64_t t0, deadline = 0;

	if (!d || n >= DNP_CNTR_MAX)
		return -EINVAL;
	if (dnp_cntr_reached(d, n, threshold))
		return 1;
	if (timeout_ms == 0)
		return dnp_check_dead(d) ? -EIO : 0;
	t0 = dnp_now_ns();
	if (timeout_ms > 0)
		deadline = t0 + (uint64_t)timeout_ms * 1000000ull;
	return wait_slow(d, &(struct dnp_waiter){ .n = n, .threshold = threshold }, t0, deadline,
			 DNP_YIELD_NS);
}

/* -------------------------------------------------------------- strerror */

const char *dnp_strerror(int err)
{
	const char *s;

	switch (err) {
	case 0:
		return "success";
	case -EINVAL:
		return "invalid argument or command";
	case -EAGAIN:
		return "command queue full";
	case -EIO:
		return "daemon gone";
	case -ENOENT:
		return "no such buffer (or no daemon socket)";
	case -ERANGE:
		return "access runs past the end of the buffer";
	case -EACCES:
		return "no buffer at that address opens with this key";
	case -EPERM:
		return "not permitted: the buffer is not registered for this kind of access, "
		       "or (dnp_register) the daemon has no ptrace access to memory outside "
		       "the shared heap";
	case -ECONNREFUSED:
		return "destination port not open (or no daemon)";
	case -EMSGSIZE:
		return "SEND larger than the receive buffer";
	case -ENOBUFS:
		return "no SEND buffer posted at the destination";
	case -EHOSTUNREACH:
		return "no route reaches the destination (outside the torus, or cut off)";
	case -ENOLINK:
		return "a link on the path broke";
	case -ETIMEDOUT:
		return "command timed out";
	case -ECONNRESET:
		return "the port closed while the command was pending";
	case -EOVERFLOW:
		return "events not read: an application (the destination, or ours) "
		       "does not drain its events";
	case -EPROTO:
		return "session ABI mismatch with the daemon";
	case -EBUSY:
		return "no free port (or port in use)";
	case -EEXIST:
		return "overlaps a registered buffer";
	case -ENOSPC:
		return "buffer table full";
	case -EFAULT:
		return "bad application address";
	case -ENOMEM:
		return "out of memory";
	case -EDQUOT:
		return "per-port quota reached (registered buffers)";
	case -ESRCH:
		return "the application process that opened the session is gone";
	default:
		break;
	}
	s = err < 0 ? strerrordesc_np(-err) : NULL;
	return s ? s : "unknown error";
}

/* ------------------------------------------------ collectives (h-coll) */

/* A collective command of group id: the fields every one shares. */
static int dnp_coll_fill(struct dnp *d, struct dnp_cmd *c, unsigned op, uint32_t id,
			 uint64_t cookie, unsigned flags)
{
	if (!d || !id || (flags & ~(DNP_NONBLOCK | DNP_NO_EVENT)))
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->op = (uint8_t)op;
	c->flags = dnp_cmd_flags(flags);
	c->remote_key = id;
	c->cookie = cookie;
	return 0;
}

int dnp_coll_group_create(struct dnp *d, uint32_t id, const struct dnp_coll_member *members,
			  unsigned n, uint64_t cookie, unsigned flags)
{
	struct dnp_cmd c;
	int r = dnp_coll_fill(d, &c, DNP_OP_COLL_JOIN, id, cookie, flags);

	if (r)
		return r;
	if (!members || !n || n > DNP_COLL_MAX_MEMBERS)
		return -EINVAL;
	c.local_va = (uint64_t)(uintptr_t)members;
	c.len = (uint64_t)n * sizeof(*members);
	return dnp_submit(d, &c, flags);
}

int dnp_coll_group_destroy(struct dnp *d, uint32_t id, uint64_t cookie, unsigned flags)
{
	struct dnp_cmd c;
	int r = dnp_coll_fill(d, &c, DNP_OP_COLL_LEAVE, id, cookie, flags);

	return r ? r : dnp_submit(d, &c, flags);
}

int dnp_allreduce(struct dnp *d, uint32_t id, const void *src, void *dst, size_t count,
		  unsigned dtype, unsigned redop, uint64_t cookie, unsigned flags)
{
	size_t esz = dtype == DNP_TYPE_INT32 || dtype == DNP_TYPE_FLOAT  ? 4 :
		     dtype == DNP_TYPE_INT64 || dtype == DNP_TYPE_DOUBLE ? 8 :
									   0;
	struct dnp_cmd c;
	int r = dnp_coll_fill(d, &c, DNP_OP_ALLREDUCE, id, cookie, flags);

	if (r)
		return r;
	if (!esz || redop < DNP_RED_SUM || redop > DNP_RED_BOR ||
	    (redop > DNP_RED_MAX && esz && (dtype == DNP_TYPE_FLOAT || dtype == DNP_TYPE_DOUBLE)) ||
	    count > DNP_COLL_MAX_BYTES / esz || (count && (!src || !dst)))
		return -EINVAL;
	c.coll_param = DNP_COLL_PARAM(redop, dtype, 0);
	c.local_va = (uint64_t)(uintptr_t)src;
	c.remote_va = (uint64_t)(uintptr_t)dst;
	c.len = count * esz;
	return dnp_submit(d, &c, flags);
}

int dnp_barrier(struct dnp *d, uint32_t id, uint64_t cookie, unsigned flags)
{
	struct dnp_cmd c;
	int r = dnp_coll_fill(d, &c, DNP_OP_BARRIER, id, cookie, flags);

	return r ? r : dnp_submit(d, &c, flags);
}

int dnp_bcast(struct dnp *d, uint32_t id, void *buf, size_t len, unsigned root, uint64_t cookie,
	      unsigned flags)
{
	struct dnp_cmd c;
	int r = dnp_coll_fill(d, &c, DNP_OP_BCAST, id, cookie, flags);

	if (r)
		return r;
	if (len > DNP_COLL_MAX_BYTES || (len && !buf) || root >= DNP_COLL_MAX_MEMBERS)
		return -EINVAL;
	c.coll_param = DNP_COLL_PARAM(0, 0, root);
	c.local_va = (uint64_t)(uintptr_t)buf;
	c.len = len;
	return dnp_submit(d, &c, flags);
}
