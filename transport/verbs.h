/* SPDX-License-Identifier: MIT */
/*
 * verbs — DNP virtual links over RDMA verbs (RoCE, InfiniBand, Soft-RoCE);
 * built when meson finds libibverbs. Design and figures: docs/verbs.md.
 *
 * One queue pair per link, UC by default (option qp=rc for RC), carrying one
 * SEND per DNP frame. The DNP link layer above already does sequence numbers,
 * CRC, credits, epochs and retransmission, so the QP need not be reliable: a
 * lost or out-of-order UC message is simply a lost frame.
 *
 * Addresses: conf.local and conf.remote are "host:port" (IPv4, or "[v6]:port")
 * of a small UDP socket that carries the out-of-band handshake (QPN, PSN,
 * GID, LID, MTU, frame size and a random instance nonce). Both ends keep it
 * open for the link's lifetime: a peer that comes back (daemon restart) with
 * a new nonce, or an RC QP that failed, makes the ends reset their QPs (same
 * QPN, reposted receive ring) and connect again; the link epochs of the DNP
 * link layer do the rest.
 *
 * Device, port and GID: by default the device and GID whose address equals
 * the local host (the IPv4-mapped or IPv6 GID of RoCE v2, as rdma_cm picks
 * it); options "dev=NAME" (dnpd --verbs-dev), "port=N" (default 1) and
 * "gid=N" (dnpd --gid-index) override. A missing device, port or GID fails
 * open with a message on stderr.
 * Errors of open: -EINVAL (bad conf or option), -ENODEV (no such device, no
 * RDMA device at all), -ENXIO (no such port or GID, port not active),
 * -ENOMEM, -errno of the verbs or socket call that failed.
 *
 * Memory: per link one registered region holding depth send slots and depth
 * receive slots of frame_max bytes (64-byte multiples). tx_burst copies the
 * frames into send slots and posts them with one ibv_post_send; rx_burst
 * returns pointers into receive slots, reposted on the next rx_burst. Both
 * poll completion queues (no system call on the completion side; providers
 * such as rxe make one per post_send burst). Frames sent before the peer is
 * connected are dropped (counted by the link layer as losses).
 *
 * wait_fd is the fd of a completion channel of the receive CQ: rx_burst arms
 * the CQ only after DNP_VERBS_ARM_POLLS empty polls in a row (about to go
 * idle: one system call per idle period, none while completions stream), so
 * a daemon asleep in poll() wakes when a frame arrives. Option "wait=0": no
 * channel, wait_fd -1 (dnpd then sleeps in bounded steps, as with dpdk).
 * up() is false only after a fatal error, or between an RC QP failure and
 * its reconnection.
 * Single-threaded: every call of a link from one thread at a time.
 */
#ifndef DNP_TRANSPORT_VERBS_H
#define DNP_TRANSPORT_VERBS_H

#include "transport.h"

extern const struct dnp_transport_ops dnp_transport_verbs;

/* Counters of one verbs link (for tests and dnpctl-style reports). */
struct dnp_verbs_stats {
	uint64_t tx_frames;      /* posted sends */
	uint64_t tx_dropped;     /* frames dropped while not connected */
	uint64_t rx_frames;      /* frames returned by rx_burst */
	uint64_t rx_bad;         /* receive completions with an error or a bad length */
	uint64_t connects;       /* times the QP was connected to a peer */
	uint64_t resets;         /* times the QP was reset (peer restart, RC failure) */
	uint64_t hello_sent;     /* handshake datagrams sent */
	uint64_t hello_bad;      /* handshake datagrams rejected */
	uint64_t tx_completions; /* send completions reaped (this QP incarnation) */
	uint64_t tx_errors;      /* send completions in error, flushes excepted (QP failed) */
	uint64_t rx_errors;      /* receive completions in error, flushes excepted */
	uint64_t connect_errors; /* QP connections that failed (no route, bad peer) */
	uint64_t cq_arms;        /* receive CQ notifications requested (before idling) */
	uint64_t cq_events;      /* completion events consumed from the channel */
};

/* Counters of a link opened by dnp_transport_verbs (undefined for other backends). */
void dnp_transport_verbs_stats(const struct dnp_transport *t, struct dnp_verbs_stats *out);

#endif
