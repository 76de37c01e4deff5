/* SPDX-License-Identifier: MIT */
/*
 * udp_priv — the UDP link shared by udp.c (socket set-up, plain
 * sendmmsg/recvmmsg path, ops table) and udp_uring.c (io_uring path, built
 * only with liburing; udp_nouring.c stands in otherwise). Private to transport/.
 */
#ifndef DNP_UDP_PRIV_H
#define DNP_UDP_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "transport.h"

#define DNP_UDP_BATCH 64u /* frames per sendmmsg/recvmmsg call */

struct dnp_udp_uring;

struct dnp_udp {
	struct dnp_transport_base base;
	int fd; /* connected, non-blocking datagram socket */
	uint32_t frame_max;
	uint32_t buf_size; /* receive buffer per frame (>= frame_max, 64-byte multiple) */
	uint32_t depth;    /* frames buffered per direction (power of two) */
	bool down;         /* a fatal socket error was seen */
	bool uring_coop;   /* option uring_setup=coop: skip DEFER_TASKRUN (tests the fallback) */
	/* path in use: plain or io_uring */
	int (*tx)(struct dnp_udp *u, const struct dnp_tx_frame *f, unsigned n);
	int (*rx)(struct dnp_udp *u, struct dnp_rx_frame *f, unsigned n);
	int wait_fd;
	/* plain path: arrays of DNP_UDP_BATCH entries, allocated at open */
	struct mmsghdr *tx_msgs;
	struct iovec *tx_iov;
	struct mmsghdr *rx_msgs;
	struct iovec *rx_iov;
	uint8_t *rx_bufs;
	/* io_uring path */
	struct dnp_udp_uring *ur;
};

/*
 * Switches u to the io_uring path (u->fd, frame_max, buf_size, depth set).
 * Errors: -ENOTSUP (not built with liburing), -errno from io_uring set-up.
 */
int dnp_udp_uring_init(struct dnp_udp *u);
void dnp_udp_uring_fini(struct dnp_udp *u);
/* Setup flags the ring got (for the benchmark's report); 0 if none. */
unsigned dnp_udp_uring_flags(const struct dnp_udp *u);

#endif
