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

/*
 * Packed datagrams (docs/protocol.md, "The udp link's datagrams"): bytes
 * 0-1 magic 0x5044 ("DP", where a DNP frame has "DN"), 2 version, 3 count
 * of frames (0: an announcement), 4 flags, 5-7 zero, then count u16
 * lengths, zeros up to a multiple of 16, then the frames, each but the
 * last padded to 16 bytes. Never longer than frame_max; an announcement is
 * exactly frame_max + 16 bytes, which a build without packing drops unread.
 */
#define DNP_UDP_PACK_MAGIC 0x5044u
#define DNP_UDP_PACK_VERSION 1u
#define DNP_UDP_PACK_FIXED 8u
#define DNP_UDP_PACK_MAX 32u /* frames per packed datagram */
#define DNP_UDP_ANNOUNCE_EXTRA 16u
#define DNP_UDP_ANN_HEARD 0x01u /* flags of an announcement: the sender has heard ours */
#define DNP_UDP_ANNOUNCE 1000   /* dnp_udp_unpack: an announcement */
#define DNP_UDP_ANNOUNCE_HEARD 1001
#define DNP_UDP_ANNOUNCE_EVERY 64u /* tx_bursts between announcements while unanswered */

enum dnp_udp_pack_mode {
	DNP_UDP_PACK_OFF,
	DNP_UDP_PACK_ON,
	DNP_UDP_PACK_AUTO,
	DNP_UDP_PACK_NONE /* as a build without packing: no announcement, no split */
};

struct dnp_udp_uring;

struct dnp_udp {
	struct dnp_transport_base base;
	int fd; /* connected, non-blocking datagram socket */
	uint32_t frame_max;
	uint32_t buf_size; /* receive buffer per frame (>= frame_max, 64-byte multiple) */
	uint32_t depth;    /* frames buffered per direction (power of two) */
	bool down;         /* a fatal socket error was seen */
	bool uring_coop;   /* option uring_setup=coop: skip DEFER_TASKRUN (tests the fallback) */
	/* packing: option pack=auto|on|off|none */
	uint8_t pack_mode;  /* enum dnp_udp_pack_mode */
	bool peer_packs;    /* the peer announced or sent a packed datagram */
	bool ann_due;       /* the peer asked for our announcement */
	uint32_t ann_since; /* tx_bursts since our last announcement */
	uint8_t *ann_buf;   /* frame_max + 16 bytes */
	/* frames of a packed datagram not yet handed out (both paths) */
	struct dnp_rx_frame rest[DNP_UDP_PACK_MAX];
	unsigned rest_n, rest_i;
	uint16_t rest_bid; /* uring: the buffer they live in */
	/* plain path: datagrams of the last recvmmsg not yet looked at */
	unsigned rx_got, rx_next;
	uint8_t *tx_pack;               /* plain path: DNP_UDP_BATCH packing buffers of buf_size */
	uint32_t tx_nfr[DNP_UDP_BATCH]; /* plain path: frames in each message */
	/* counters (dnpctl stats: link DIR <name> ...) */
	uint64_t tx_packed, tx_packed_frames, rx_packed, rx_packed_frames, rx_pack_bad;
	uint64_t tx_announce, rx_announce, peer_resets;
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

/* udp_pack.c: the format, no I/O. */
/* Header bytes of a packed datagram of count frames. */
uint32_t dnp_udp_pack_hdr_len(unsigned count);
/* How many of f[0..n) fit in one packed datagram of at most frame_max bytes (0..32). */
unsigned dnp_udp_pack_fit(const struct dnp_tx_frame *f, unsigned n, uint32_t frame_max);
/*
 * What the next datagram of f[0..n) carries: k >= 1 frames packed, or 0:
 * f[0] plain (pack false, or no two fit and f[0] does not start as packed).
 */
unsigned dnp_udp_pack_plan(const struct dnp_tx_frame *f, unsigned n, uint32_t frame_max, bool pack);
/* Writes f[0..k) packed into buf (as fit allowed); returns the datagram's length. */
uint32_t dnp_udp_pack_write(uint8_t *buf, const struct dnp_tx_frame *f, unsigned k);
/* Writes an announcement (frame_max + 16 bytes) into buf; returns its length. */
uint32_t dnp_udp_pack_announce(uint8_t *buf, uint32_t frame_max, bool heard);
/* True when datagram d starts as a packed one (then it is that or malformed). */
bool dnp_udp_is_packed(const uint8_t *d, uint32_t len);
/*
 * Splits datagram d of len bytes (untrusted) into out[0..32): returns the
 * count of frames, each inside d, DNP_UDP_ANNOUNCE(_HEARD) for an
 * announcement, or -EBADMSG (malformed: drop the whole datagram).
 */
int dnp_udp_unpack(const uint8_t *d, uint32_t len, uint32_t frame_max, struct dnp_rx_frame *out);

/* udp.c, shared with udp_uring.c */
/* Sends the announcement if one is due (once per tx_burst at most). */
void dnp_udp_announce_tick(struct dnp_udp *u);
/*
 * A received packed datagram (or announcement) d: splits it into u->rest;
 * returns the frames now in rest (0: nothing to hand out; counted).
 */
unsigned dnp_udp_take_packed(struct dnp_udp *u, const uint8_t *d, uint32_t len);
/*
 * True when datagram d is to be read as packed: it starts so, and this end
 * splits packed datagrams (every mode but none, which takes it for a frame,
 * as a build without packing did).
 */
static inline bool dnp_udp_reads_packed(const struct dnp_udp *u, const uint8_t *d, uint32_t len)
{
	return u->pack_mode != DNP_UDP_PACK_NONE && dnp_udp_is_packed(d, len);
}

/* True while packed datagrams may go to the peer. */
static inline bool dnp_udp_packs(const struct dnp_udp *u)
{
	return u->pack_mode == DNP_UDP_PACK_ON ||
	       (u->pack_mode == DNP_UDP_PACK_AUTO && u->peer_packs);
}

/*
 * Switches u to the io_uring path (u->fd, frame_max, buf_size, depth set).
 * Errors: -ENOTSUP (not built with liburing), -errno from io_uring set-up.
 */
int dnp_udp_uring_init(struct dnp_udp *u);
void dnp_udp_uring_fini(struct dnp_udp *u);
/* Setup flags the ring got (for the benchmark's report); 0 if none. */
unsigned dnp_udp_uring_flags(const struct dnp_udp *u);

#endif
