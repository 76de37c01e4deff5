/* SPDX-License-Identifier: MIT */
/*
 * verbs_priv — the verbs link shared by verbs.c (queue pair, data path, ops
 * table) and verbs_setup.c (device, port and GID selection, the handshake
 * socket and its messages). Private to transport/.
 */
#ifndef DNP_VERBS_PRIV_H
#define DNP_VERBS_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

#include "verbs.h"

#define DNP_VERBS_BATCH 32u            /* completions polled and WRs chained per call */
#define DNP_VERBS_HELLO_NS 20000000ull /* handshake resend while unanswered: 20 ms */
#define DNP_VERBS_CHECK_NS 1000000ull  /* handshake socket looked at while connected: 1 ms */
#define DNP_VERBS_ARM_POLLS 16u        /* empty receive polls before arming the CQ event */
#define DNP_VERBS_MAGIC 0x44764231u    /* "DvB1" */
#define DNP_VERBS_VERSION 1u
#define DNP_VERBS_HELLO_ACKED 0x1u /* the sender has seen that the receiver knows it */

/* The handshake datagram (network byte order on the wire). */
struct dnp_verbs_hello {
	uint32_t magic;
	uint16_t version;
	uint8_t qp_type; /* IBV_QPT_UC or IBV_QPT_RC */
	uint8_t mtu;     /* enum ibv_mtu of the sender's port */
	uint64_t nonce;  /* the sender's instance */
	uint64_t peer;   /* the nonce of the receiver as the sender knows it, 0 if none */
	uint32_t qpn;    /* 24 bits */
	uint32_t psn;    /* 24 bits */
	uint32_t frame_max;
	uint16_t lid;
	uint16_t flags; /* DNP_VERBS_HELLO_ACKED */
	uint8_t gid[16];
};
_Static_assert(sizeof(struct dnp_verbs_hello) == 56, "handshake layout");

struct dnp_verbs {
	struct dnp_transport_base base;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_comp_channel *chan; /* rcq's events: the wait fd (NULL: option wait=0) */
	bool armed;                    /* rcq notification requested, event not consumed */
	uint32_t empty;                /* empty receive polls in a row */
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *mem; /* depth send slots, then depth receive slots */
	uint32_t slot;
	uint32_t depth;
	uint32_t frame_max;
	enum ibv_qp_type qp_type;
	uint8_t port;
	uint8_t port_mtu; /* enum ibv_mtu */
	int gid_index;
	union ibv_gid gid;
	int ifindex; /* the GID's network device (RoCE), or 0 */
	uint16_t lid;
	bool roce; /* Ethernet link layer: addressed by GID only */
	/* Send ring: slots [tx_tail, tx_head) await their completions. */
	uint32_t tx_head, tx_tail;
	/* Receive slots handed out by the last rx_burst, reposted by the next. */
	uint32_t *repost;
	unsigned n_repost;
	uint32_t gen; /* in every wr_id: completions of an earlier QP incarnation are stale */
	/* Handshake: this instance and the peer it is connected to. */
	int hfd;
	uint64_t nonce;
	uint32_t psn;
	uint64_t peer_nonce;
	uint32_t peer_qpn, peer_psn;
	uint64_t warned_nonce; /* a mismatched peer already reported */
	bool connected;        /* QP in RTS towards peer_* */
	bool acked;            /* the peer has shown it knows this instance */
	bool was_connected;
	bool connect_warned; /* the last connect failed and was reported */
	bool fatal;
	bool want_wait; /* option wait (default 1): a completion channel for wait_fd */
	uint64_t next_hello, next_check;
	uint32_t polls; /* rx_burst calls: the clock is read every 64th */
	uint32_t max_inline;
	struct ibv_send_wr *swr;
	struct ibv_sge *ssge;
	struct ibv_recv_wr *rwr;
	struct ibv_sge *rsge;
	struct dnp_verbs_stats st;
};

/* Monotonic nanoseconds (vDSO: no system call). */
uint64_t dnp_verbs_now(void);

/*
 * Opens the device, port and GID for v (options dev, port, gid; local is the
 * handshake address, matched against the GID table when no gid is given).
 * Sets ctx, port, port_mtu, gid_index, gid, lid, roce. Errors as in verbs.h.
 */
int dnp_verbs_pick_device(struct dnp_verbs *v, const char *options, const char *local);

/* Binds the handshake socket to local and connects it to remote (v->hfd). */
int dnp_verbs_hs_socket(struct dnp_verbs *v, const char *local, const char *remote);

/* Sends this instance's hello (best effort). */
void dnp_verbs_hs_send(struct dnp_verbs *v);

/*
 * Reads one handshake datagram into h (host byte order) and checks it.
 * Returns 1 when h holds a valid hello, 0 when none is waiting, -EPROTO for
 * a malformed or mismatched one (counted), -errno of a fatal socket error.
 */
int dnp_verbs_hs_recv(struct dnp_verbs *v, struct dnp_verbs_hello *h);

#endif
