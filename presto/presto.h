/* SPDX-License-Identifier: MIT */
/*
 * Presto — a small MPI-like message-passing library on the DNP RDMA API
 * (EURETILE APEnet+ report, "Presto": eager or rendez-vous transfers on top
 * of the DNP RDMA API, a thin layer with MPI-like primitives).
 *
 * Ranks. One process per torus node, started by dnp-run (or one per host on
 * a cluster): rank = x + X*(y + Y*z) of the node's coordinates, size = X*Y*Z.
 * Every rank uses the same DNP port (each is the first application of its
 * daemon; DNP_PEER_PORT overrides the peer port).
 *
 * Point to point. presto_isend / presto_irecv return a request that
 * presto_wait / presto_test complete; presto_send / presto_recv are the
 * blocking forms. Receives match on (source, tag) with PRESTO_ANY_SOURCE and
 * PRESTO_ANY_TAG; messages between one pair of ranks match in the order they
 * were sent (MPI's non-overtaking rule). A message longer than the receive
 * buffer fills the buffer and completes with status error -EMSGSIZE.
 *
 * Protocols. A message of at most the eager limit travels as one DNP SEND
 * into SEND-target slots the receiver posted beforehand (copied once on each
 * side). A longer one is a rendez-vous: the sender registers its buffer as a
 * GET source and SENDs a request; when a receive matches, the receiver
 * registers its buffer and GETs the data straight into it, then SENDs a
 * FIN that completes the send. The eager limit defaults to the slot payload
 * (the switch-over presto_bench measured lies above it, docs/mpi.md);
 * PRESTO_EAGER_MAX sets it. Eager messages go by PUT into a ring per sender
 * (default) or, with PRESTO_EAGER=send, by DNP SEND into posted slots.
 *
 * Flow control. Each sender holds PRESTO_CREDITS credits per receiver; each
 * SEND uses one, and the receiver hands them back by PUTting its count of
 * consumed messages into the sender's credit array. So a slow receiver stops
 * its senders (their requests stay pending; wait() keeps progressing
 * everything else) but never makes a SEND fail for want of a slot.
 *
 * Progress happens inside every presto_* call (no thread). A struct presto
 * is used by one thread at a time. Errors: 0 or a negative errno.
 */
#ifndef PRESTO_H
#define PRESTO_H

#include <stddef.h>
#include <stdint.h>

struct presto;
struct presto_req;

#define PRESTO_ANY_SOURCE (-1)
#define PRESTO_ANY_TAG (-1)
#define PRESTO_TAG_MAX 0x3fffffff /* user tags are 0 .. PRESTO_TAG_MAX */

struct presto_status {
	int source; /* sender's rank */
	int tag;    /* message tag */
	size_t len; /* bytes received (<= the buffer) */
	int error;  /* 0, -EMSGSIZE (truncated), or the transfer's -errno */
};

enum presto_type {
	PRESTO_INT,
	PRESTO_LONG,
	PRESTO_DOUBLE
};
enum presto_op {
	PRESTO_SUM,
	PRESTO_MIN,
	PRESTO_MAX
};

/* Tuning read by presto_init from the environment when conf is NULL. */
struct presto_conf {
	size_t eager_max; /* PRESTO_EAGER_MAX: longest eager message (<= slot payload) */
	size_t slot_size; /* PRESTO_SLOT_SIZE: receive slot bytes incl. header (default 4096) */
	unsigned credits; /* PRESTO_CREDITS: slots per sender (default 16) */
	int timeout_ms;   /* PRESTO_TIMEOUT (s): init waits this long for every peer */
};

/*
 * Connects to the node's daemon ($DNP_SOCKET), posts the receive slots and
 * exchanges credit addresses with every rank (waits for all of them).
 * Errors: those of dnp_open, -ENOMEM, -ETIMEDOUT (a rank did not answer),
 * -EINVAL (bad configuration).
 */
int presto_init(const struct presto_conf *conf, struct presto **out);
/* Synchronises with every rank, completes pending traffic, disconnects. */
void presto_finalize(struct presto *p);

int presto_rank(const struct presto *p);
int presto_size(const struct presto *p);
size_t presto_eager_max(const struct presto *p);
/*
 * Sets the eager limit for this rank's later sends (the receiver accepts
 * either protocol, so ranks need not agree). -EINVAL if above the slot
 * payload (PRESTO_SLOT_SIZE - 64).
 */
int presto_set_eager_max(struct presto *p, size_t n);
/*
 * Traffic class (issue 30; docs/api.md, "Traffic classes": 0 the lowest and
 * the default .. 7 the top) of the messages this rank starts from now on:
 * each message keeps the class it was started with, so setting it between
 * two presto_isend calls gives each its own. The class goes with the eager
 * data or the rendez-vous request, and the receiver GETs a rendez-vous
 * message's data in it; credits and FINs travel in class 0. Collectives
 * use the class current when they are called. -EINVAL above 7.
 */
int presto_set_class(struct presto *p, unsigned tc);
unsigned presto_class(const struct presto *p);

/*
 * Starts a send of [buf, buf+len) to rank dst with tag (0..PRESTO_TAG_MAX).
 * buf must stay untouched until the request completes. Errors: -EINVAL (bad
 * rank, tag, or NULL with len > 0), -ENOMEM.
 */
int presto_isend(struct presto *p, const void *buf, size_t len, int dst, int tag,
		 struct presto_req **req);
/* Starts a receive into [buf, buf+cap) from src (or ANY_SOURCE) with tag (or ANY_TAG). -EINVAL, -ENOMEM. */
int presto_irecv(struct presto *p, void *buf, size_t cap, int src, int tag,
		 struct presto_req **req);
/*
 * Waits for *req, frees it and sets *req to NULL; st (may be NULL) receives
 * the status. Returns 0 or the request's error (status.error); -EIO if the
 * daemon is gone; -ETIMEDOUT after PRESTO_WAIT_TIMEOUT seconds (default:
 * none) without completion.
 */
int presto_wait(struct presto *p, struct presto_req **req, struct presto_status *st);
/* Like wait without blocking: *flag 1 if done (then as wait), 0 otherwise. */
int presto_test(struct presto *p, struct presto_req **req, int *flag, struct presto_status *st);

int presto_send(struct presto *p, const void *buf, size_t len, int dst, int tag);
int presto_recv(struct presto *p, void *buf, size_t cap, int src, int tag,
		struct presto_status *st);

/* Collectives: every rank calls them in the same order. -EINVAL, transfer errors. */
int presto_barrier(struct presto *p);
int presto_bcast(struct presto *p, void *buf, size_t len, int root);
/* rbuf is used at root only (may equal sbuf there). count elements of type. */
int presto_reduce(struct presto *p, const void *sbuf, void *rbuf, size_t count,
		  enum presto_type type, enum presto_op op, int root);
int presto_allreduce(struct presto *p, const void *sbuf, void *rbuf, size_t count,
		     enum presto_type type, enum presto_op op);
/* Root receives rank i's len bytes at rbuf + i*len (its own included). */
int presto_gather(struct presto *p, const void *sbuf, size_t len, void *rbuf, int root);

/* Counters (for tests and benchmarks). */
struct presto_stats {
	uint64_t eager_sent, rndv_sent, retries, unexpected, held_out_of_order, duplicates,
		/* credit_stalls: times a queue to a peer ran out of credits */
		credit_stalls, bounce;
};
void presto_get_stats(const struct presto *p, struct presto_stats *st);

#endif
