/* SPDX-License-Identifier: MIT */
/*
 * udp_uring — the io_uring path of the UDP link (liburing).
 *
 * Receive: one multishot recv SQE on the socket, fed by a provided-buffer
 * ring of depth buffers; each CQE is one datagram in one buffer. Buffers
 * handed out by rx_burst go back to the kernel on the next rx_burst (the
 * transport contract: rx data is valid until then), so receive is zero-copy
 * from the kernel's copy onwards. The multishot SQE is re-armed when the
 * kernel ends it (no buffers left, an ICMP error).
 *
 * Send: frames are copied into depth pre-allocated send buffers (the caller
 * may reuse its memory on return, the send may complete later), one send SQE
 * each (or one per packed datagram of several small frames, udp_pack.c), one
 * io_uring_submit_and_get_events per tx_burst. A packed datagram received
 * keeps its buffer until its last frame has been handed out.
 *
 * Ring set-up tries SINGLE_ISSUER|DEFER_TASKRUN|TASKRUN_FLAG first, then
 * without TASKRUN_FLAG, then COOP_TASKRUN|TASKRUN_FLAG (measured on 2 cores:
 * default flags with a spinning peek cost ~105 us per round trip, these
 * 11.5-13 us). With TASKRUN_FLAG an idle rx_burst makes no system call: it
 * enters the kernel (io_uring_get_events) only when the kernel has flagged
 * pending completion work. The ring is created disabled and enabled on
 * first use, so SINGLE_ISSUER binds to the polling thread, not the opener.
 *
 * wait_fd is the socket, as for the plain path: with deferred task work the
 * datagrams stay in the socket queue until rx_burst enters the kernel, so the
 * socket is readable exactly while unseen frames wait. (Polling the ring fd
 * does not wake on deferred work here, and a registered eventfd would need a
 * read to re-arm.) Call rx_burst until it returns fewer than asked before
 * sleeping: reaped but undelivered datagrams do not make the socket readable.
 */
#include "udp_priv.h"

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DNP_UDP_BGID 7u
#define DNP_UDP_TAG_RECV (1ull << 62)
#define DNP_UDP_TAG_TX (1ull << 61)
#define DNP_UDP_TAG_CANCEL (1ull << 60)

struct dnp_udp_rxent {
	uint16_t bid;
	uint32_t len;
};

struct dnp_udp_uring {
	struct io_uring ring;
	unsigned flags;    /* setup flags obtained */
	bool enabled;      /* IORING_REGISTER_ENABLE_RINGS done */
	bool recv_armed;   /* a multishot recv is outstanding */
	bool taskrun_flag; /* IORING_SQ_TASKRUN tells when to enter the kernel */
	unsigned nbufs;    /* receive buffers (power of two) */
	struct io_uring_buf_ring *br;
	size_t br_len;
	uint8_t *rx_bufs;
	/* datagrams reaped but not yet handed out (FIFO; each owns one buffer) */
	struct dnp_udp_rxent *pend;
	unsigned pend_head, pend_tail;
	/* buffers handed out by the last rx_burst, recycled by the next */
	uint16_t *held;
	unsigned nheld;
	/* send buffers */
	uint8_t *tx_bufs;
	uint16_t *tx_free; /* stack of free send-buffer indices */
	unsigned tx_nfree;
};

static int uring_setup(struct dnp_udp_uring *r, unsigned entries, unsigned cq_entries,
		       bool coop_only)
{
	static const unsigned tries[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
	};
	int ret = -ENOTSUP;

	for (size_t i = coop_only ? 2 : 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		struct io_uring_params p = {
			.flags = tries[i] | IORING_SETUP_CQSIZE | IORING_SETUP_R_DISABLED,
			.cq_entries = cq_entries,
		};

		ret = io_uring_queue_init_params(entries, &r->ring, &p);
		if (ret == 0) {
			r->flags = tries[i];
			r->taskrun_flag = (tries[i] & IORING_SETUP_TASKRUN_FLAG) != 0;
			return 0;
		}
	}
	return ret;
}

static void uring_free(struct dnp_udp_uring *r)
{
	if (r->br)
		munmap(r->br, r->br_len);
	free(r->rx_bufs);
	free(r->pend);
	free(r->held);
	free(r->tx_bufs);
	free(r->tx_free);
	free(r);
}

/* First use from the polling thread: SINGLE_ISSUER binds the ring to it. */
static int uring_enable(struct dnp_udp_uring *r)
{
	/* liburing 2.3 declares io_uring_enable_rings but does not export it */
	if (syscall(__NR_io_uring_register, r->ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL,
		    0) < 0)
		return -errno;
	r->enabled = true;
	return 0;
}

static void uring_arm_recv(struct dnp_udp *u)
{
	struct dnp_udp_uring *r = u->ur;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);

	if (!sqe)
		return; /* SQ full of sends: re-armed on the next call */
	io_uring_prep_recv_multishot(sqe, u->fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = DNP_UDP_BGID;
	io_uring_sqe_set_data64(sqe, DNP_UDP_TAG_RECV);
	r->recv_armed = true;
}

/* Gives a receive buffer back to the kernel (made visible by uring_recycle_publish). */
static void uring_recycle(struct dnp_udp *u, uint16_t bid, unsigned *count)
{
	struct dnp_udp_uring *r = u->ur;

	io_uring_buf_ring_add(r->br, r->rx_bufs + (size_t)bid * u->buf_size, u->buf_size, bid,
			      io_uring_buf_ring_mask(r->nbufs), (int)*count);
	(*count)++;
}

/* Moves every ready CQE out of the CQ: sends free their buffer, datagrams queue up. */
static void uring_reap(struct dnp_udp *u)
{
	struct dnp_udp_uring *r = u->ur;
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0, recycled = 0;

	io_uring_for_each_cqe(&r->ring, head, cqe)
	{
		uint64_t tag = io_uring_cqe_get_data64(cqe);

		seen++;
		if (tag & DNP_UDP_TAG_TX) {
			/* send errors are losses: the link layer retransmits */
			r->tx_free[r->tx_nfree++] = (uint16_t)(tag & 0xffffu);
			continue;
		}
		if (tag & DNP_UDP_TAG_CANCEL)
			continue;
		if (!(cqe->flags & IORING_CQE_F_MORE))
			r->recv_armed = false;
		if (!(cqe->flags & IORING_CQE_F_BUFFER))
			continue; /* -ENOBUFS, -ECONNREFUSED, ...: re-arm and go on */
		{
			uint16_t bid = (uint16_t)(cqe->flags >> IORING_CQE_BUFFER_SHIFT);

			/* longer than a frame: not ours, unless an announcement (rx splits it) */
			if (cqe->res < 0 ||
			    ((uint32_t)cqe->res > u->frame_max &&
			     !dnp_udp_reads_packed(u, r->rx_bufs + (size_t)bid * u->buf_size,
						   (uint32_t)cqe->res))) {
				uring_recycle(u, bid, &recycled);
				continue;
			}
			r->pend[r->pend_tail & (r->nbufs - 1)].bid = bid;
			r->pend[r->pend_tail & (r->nbufs - 1)].len = (uint32_t)cqe->res;
			r->pend_tail++;
		}
	}
	if (seen)
		io_uring_cq_advance(&r->ring, seen);
	if (recycled)
		io_uring_buf_ring_advance(r->br, (int)recycled);
}

/* True when the kernel holds completion work that only io_uring_enter runs. */
static bool uring_work_pending(const struct dnp_udp_uring *r)
{
	if (!r->taskrun_flag)
		return true;
	/* relaxed is enough: a stale flag costs one extra or one delayed poll */
	return (__atomic_load_n(r->ring.sq.kflags, __ATOMIC_RELAXED) &
		(IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) != 0;
}

/* Hands out pending datagrams, splitting packed ones; returns the frames given. */
static unsigned uring_deliver(struct dnp_udp *u, struct dnp_rx_frame *f, unsigned n)
{
	struct dnp_udp_uring *r = u->ur;
	unsigned out = 0, recycled = 0;

	while (out < n) {
		const struct dnp_udp_rxent *e;
		const uint8_t *d;

		if (u->rest_i < u->rest_n) {
			f[out++] = u->rest[u->rest_i++];
			/* the buffer goes back once its last frame is out */
			if (u->rest_i == u->rest_n)
				r->held[r->nheld++] = u->rest_bid;
			continue;
		}
		if (r->pend_head == r->pend_tail)
			break;
		e = &r->pend[r->pend_head & (r->nbufs - 1)];
		r->pend_head++;
		d = r->rx_bufs + (size_t)e->bid * u->buf_size;
		if (dnp_udp_reads_packed(u, d, e->len)) {
			if (dnp_udp_take_packed(u, d, e->len))
				u->rest_bid = e->bid;
			else
				uring_recycle(u, e->bid, &recycled);
			continue;
		}
		f[out].data = d;
		f[out].len = e->len;
		r->held[r->nheld++] = e->bid;
		out++;
	}
	if (recycled)
		io_uring_buf_ring_advance(r->br, (int)recycled);
	return out;
}

static int uring_rx(struct dnp_udp *u, struct dnp_rx_frame *f, unsigned n)
{
	struct dnp_udp_uring *r = u->ur;
	unsigned recycled = 0;
	int ret;

	if (!r->enabled) {
		ret = uring_enable(r);
		if (ret)
			return ret;
	}
	for (unsigned i = 0; i < r->nheld; i++)
		uring_recycle(u, r->held[i], &recycled);
	r->nheld = 0;
	if (recycled)
		io_uring_buf_ring_advance(r->br, (int)recycled);

	if (r->pend_head == r->pend_tail && u->rest_i == u->rest_n) {
		uring_reap(u);
		if (r->pend_head == r->pend_tail && (!r->recv_armed || uring_work_pending(r))) {
			if (!r->recv_armed) {
				uring_arm_recv(u);
				ret = io_uring_submit_and_get_events(&r->ring);
			} else {
				ret = io_uring_get_events(&r->ring);
			}
			if (ret < 0 && ret != -EAGAIN && ret != -EINTR && ret != -EBUSY) {
				u->down = true;
				return ret;
			}
			uring_reap(u);
		}
	}
	return (int)uring_deliver(u, f, n);
}

static int uring_tx(struct dnp_udp *u, const struct dnp_tx_frame *f, unsigned n)
{
	struct dnp_udp_uring *r = u->ur;
	bool pack = dnp_udp_packs(u);
	unsigned i;
	int ret;

	if (!r->enabled) {
		ret = uring_enable(r);
		if (ret)
			return ret;
	}
	if (r->tx_nfree < n) {
		uring_reap(u);
		/* sends stuck behind a full socket buffer complete through task work */
		if (r->tx_nfree == 0 && uring_work_pending(r)) {
			io_uring_get_events(&r->ring);
			uring_reap(u);
		}
	}
	dnp_udp_announce_tick(u);
	for (i = 0; i < n && r->tx_nfree > 0;) {
		struct io_uring_sqe *sqe;
		uint16_t idx;
		uint8_t *buf;
		unsigned k = dnp_udp_pack_plan(f + i, n - i, u->frame_max, pack);
		uint32_t len;

		if (f[i].len > u->frame_max) {
			if (i == 0)
				return -EMSGSIZE;
			break;
		}
		sqe = io_uring_get_sqe(&r->ring);
		if (!sqe)
			break;
		idx = r->tx_free[--r->tx_nfree];
		buf = r->tx_bufs + (size_t)idx * u->buf_size;
		if (k > 0) {
			len = dnp_udp_pack_write(buf, f + i, k);
			u->tx_packed++;
			u->tx_packed_frames += k;
		} else {
			k = 1;
			len = f[i].len;
			memcpy(buf, f[i].data, len);
		}
		io_uring_prep_send(sqe, u->fd, buf, len, 0);
		io_uring_sqe_set_data64(sqe, DNP_UDP_TAG_TX | idx);
		i += k;
	}
	if (!r->recv_armed)
		uring_arm_recv(u);
	if (io_uring_sq_ready(&r->ring) == 0)
		return (int)i;
	/* One system call per burst; it also runs pending receive work. */
	ret = io_uring_submit_and_get_events(&r->ring);
	if (ret < 0 && ret != -EAGAIN && ret != -EINTR && ret != -EBUSY) {
		u->down = true;
		return i ? (int)i : ret;
	}
	return (int)i;
}

/*
 * Cancels the multishot recv and waits (briefly) for sends in flight, so that
 * no request still holds the socket when close() runs: otherwise the port
 * stays bound until the kernel's asynchronous ring teardown, and reopening
 * the link at once fails with EADDRINUSE. Only the polling thread can submit
 * (SINGLE_ISSUER); from another thread this gives up and teardown stays async.
 */
static void uring_quiesce(struct dnp_udp *u)
{
	struct dnp_udp_uring *r = u->ur;
	struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 10000000 };
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;

	if (!r->enabled)
		return;
	sqe = io_uring_get_sqe(&r->ring);
	if (!sqe)
		return;
	io_uring_prep_cancel_fd(sqe, u->fd, IORING_ASYNC_CANCEL_ALL);
	io_uring_sqe_set_data64(sqe, DNP_UDP_TAG_CANCEL);
	for (int i = 0; i < 20 && (r->recv_armed || r->tx_nfree < r->nbufs); i++) {
		int ret = io_uring_submit_and_wait_timeout(&r->ring, &cqe, 1, &ts, NULL);

		if (ret < 0 && ret != -ETIME && ret != -EINTR)
			return;
		uring_reap(u);
	}
}

void dnp_udp_uring_fini(struct dnp_udp *u)
{
	struct dnp_udp_uring *r = u->ur;

	if (!r)
		return;
	uring_quiesce(u);
	io_uring_queue_exit(&r->ring);
	uring_free(r);
	u->ur = NULL;
}

unsigned dnp_udp_uring_flags(const struct dnp_udp *u)
{
	return u->ur ? u->ur->flags : 0;
}

int dnp_udp_uring_init(struct dnp_udp *u)
{
	struct io_uring_buf_reg reg = { 0 };
	struct dnp_udp_uring *r;
	unsigned n = u->depth < 64 ? 64 : u->depth;
	int ret;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->nbufs = n;
	r->br_len = ((size_t)n * sizeof(struct io_uring_buf) + 4095u) & ~(size_t)4095u;
	r->br = mmap(NULL, r->br_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->br == MAP_FAILED) {
		r->br = NULL;
		ret = -errno;
		goto err_free;
	}
	r->rx_bufs = aligned_alloc(64, (size_t)n * u->buf_size);
	r->pend = calloc(n, sizeof(*r->pend));
	r->held = calloc(n, sizeof(*r->held));
	r->tx_bufs = aligned_alloc(64, (size_t)n * u->buf_size);
	r->tx_free = calloc(n, sizeof(*r->tx_free));
	if (!r->rx_bufs || !r->pend || !r->held || !r->tx_bufs || !r->tx_free) {
		ret = -ENOMEM;
		goto err_free;
	}
	for (unsigned i = 0; i < n; i++)
		r->tx_free[i] = (uint16_t)(n - 1 - i);
	r->tx_nfree = n;

	/* SQ: a full burst of sends plus the recv re-arm; CQ: sends and datagrams in flight. */
	ret = uring_setup(r, n + 8, 4 * n, u->uring_coop);
	if (ret)
		goto err_free;
	io_uring_buf_ring_init(r->br);
	reg.ring_addr = (unsigned long)(uintptr_t)r->br;
	reg.ring_entries = n;
	reg.bgid = DNP_UDP_BGID;
	ret = io_uring_register_buf_ring(&r->ring, &reg, 0);
	if (ret)
		goto err_ring;
	for (unsigned i = 0; i < n; i++)
		io_uring_buf_ring_add(r->br, r->rx_bufs + (size_t)i * u->buf_size, u->buf_size,
				      (unsigned short)i, io_uring_buf_ring_mask(n), (int)i);
	io_uring_buf_ring_advance(r->br, (int)n);

	u->ur = r;
	u->tx = uring_tx;
	u->rx = uring_rx;
	u->wait_fd = u->fd;
	return 0;

err_ring:
	io_uring_queue_exit(&r->ring);
err_free:
	uring_free(r);
	return ret;
}
