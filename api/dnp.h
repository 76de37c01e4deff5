/* SPDX-License-Identifier: MIT */
/*
 * libdnp — the DNP RDMA API for applications (APEnet v5 paper, the RDMA API:
 * put/send, register_buffer/unregister_buffer, wait_event; EURETILE report,
 * TX acceleration and event queue: command ring and completion event queue).
 *
 * An application opens a connection to its node's daemon (dnpd) over a Unix
 * socket; the command ring, the event queue and a shared heap arrive as
 * memfds. Commands are asynchronous: dnp_put/dnp_send/dnp_get return once the
 * command is queued. Every command ends in exactly one completion event
 * (DNP_EV_TX_DONE, DNP_EV_GET_DONE or DNP_EV_ERROR) carrying its cookie,
 * except a success flagged DNP_NO_EVENT, which ends with none; DNP_SRC_EVENT
 * asks for an earlier DNP_EV_TX_READ, which is never a completion.
 * Received data is announced by DNP_EV_RX_PUT / DNP_EV_RX_SEND events.
 *
 * All functions return 0 (or a count) or a negative errno. A struct dnp is
 * used by one thread at a time. docs/api.md describes the calls, the events
 * and the errors, with examples.
 */
#ifndef DNP_H
#define DNP_H

#include <stddef.h>
#include <stdint.h>

#include "dnp_abi.h" /* struct dnp_event, enum dnp_ev_type, DNP_BUF_* flags */

struct dnp;

struct dnp_coords {
	unsigned x, y, z;
};

/* Flags of dnp_put, dnp_send and dnp_get (docs/api.md, "Events and flags"). */
#define DNP_NONBLOCK 0x1u /* -EAGAIN instead of waiting when the queue is full */
/*
 * PUT, SEND (GET: -EINVAL): a DNP_EV_TX_READ event once the daemon has read
 * the whole source, before the completion: the buffer may be reused from
 * then on. A command that fails before its source was read whole ends with
 * DNP_EV_ERROR alone. The daemon cannot send such a command again on its own
 * (docs/protocol.md, "Outcome queries"): where it would, it fails with
 * -ENOLINK, data DNP_DATA_NOT_DELIVERED.
 */
#define DNP_SRC_EVENT 0x2u
/*
 * No completion event when the command succeeds (the DNP's dummy command);
 * a failure still ends it with DNP_EV_ERROR. The command still counts
 * against the queue until it ends.
 */
#define DNP_NO_EVENT 0x4u
/*
 * Traffic class of the command (docs/api.md, "Traffic classes"): DNP_TC(0)
 * (the lowest, also what no class bits mean) .. DNP_TC(7) (the top). With
 * arbitration on in the daemons (--arbitration strict|wrr) a higher class
 * goes first at injection and at every router output; with it off, the
 * default, classes change nothing. Packets of one class keep their order.
 */
#define DNP_TC(n) (((unsigned)(n)&0x7u) << 8)
#define DNP_TC_MASK 0x700u
#define DNP_TC_OF(flags) (((flags)&DNP_TC_MASK) >> 8)
/*
 * PUT only (SEND, GET: -EINVAL; with DNP_SRC_EVENT: -EINVAL): the payload,
 * at most DNP_INLINE_MAX bytes, is copied into the command itself, so the
 * daemon never reads our memory for it, and src may be reused as soon as
 * dnp_put returns. Its events carry va 0. docs/api.md, "Inline PUTs".
 */
#define DNP_INLINE 0x8u
#define DNP_INLINE_MAX 24u
/*
 * Completion counters (docs/api.md, "Completion counters"): DNP_CNTR(n),
 * n < DNP_CNTR_MAX (64), makes the command bump counter n of our port when
 * it ends, its 'ok' count on success, its 'err' count on failure, whether or
 * not an event reports it (pair it with DNP_NO_EVENT). Other n: -EINVAL.
 */
#define DNP_CNTR(n) ((((unsigned)(n)) + 1u) << 16)
#define DNP_CNTR_MASK 0xff0000u

/*
 * Connects to the daemon. A daemon listens on <run dir>/node-<id>.sock, or on
 * the path of its `socket` setting; path NULL: $DNP_SOCKET (dnp-run sets it),
 * else /run/dnp/dnpd.sock (where a host's daemon listens with socket =
 * /run/dnp/dnpd.sock, docs/cluster.md). In $DNP_SOCKET, Slurm's patterns name
 * each node's daemon on a shared file system: %N node name
 * ($SLURMD_NODENAME, else the host name), %n $SLURM_NODEID, %t $SLURM_PROCID,
 * %l $SLURM_LOCALID, %% '%' (-EINVAL for another pattern or an unset
 * variable). Environment: DNP_PORT asks for a given port (default: the lowest
 * free one), DNP_HEAP_SIZE for the shared heap size (bytes, K/M/G suffixes;
 * default: the daemon's, 64 MiB), DNP_WAIT_BLOCK=1 makes waits block at once
 * on a CPU where a pinned neighbour of our daemon polls (dnp-run --pin;
 * docs/performance.md, "Pinned hand-off"; default 0). Errors:
 * -ENOENT/-ECONNREFUSED (no daemon), -EPROTO (ABI mismatch), -EBUSY (no free
 * port or the asked port is taken), -EINVAL (port, heap size or
 * DNP_WAIT_BLOCK out of range, bad DNP_SOCKET pattern), -errno.
 */
int dnp_open(const char *path, struct dnp **out);
void dnp_close(struct dnp *d);

/* Own coordinates, torus dimensions, own port. */
int dnp_self(const struct dnp *d, struct dnp_coords *self, struct dnp_coords *dims);
unsigned dnp_port(const struct dnp *d);

/* Shared heap (zero-copy path). dnp_alloc returns NULL when out of memory. */
void *dnp_alloc(struct dnp *d, size_t len);
void dnp_free(struct dnp *d, void *p);

/*
 * Registers [addr, addr+len) with flags DNP_BUF_PUT_TARGET | DNP_BUF_SEND_TARGET |
 * DNP_BUF_GET_SOURCE. Any memory of the process may be registered; memory
 * outside the shared heap is accessed by the daemon with process_vm_readv/writev,
 * which needs ptrace access to this process (same user and, under Yama
 * ptrace_scope 1, prctl(PR_SET_PTRACER, daemon pid); docs/security.md,
 * "Memory outside the shared heap").
 * DNP_BUF_POPULATE (with at least one of those) first faults every page of
 * the range in, writable, in this process (madvise MADV_POPULATE_WRITE,
 * Linux 5.14+, else a write of one byte per page that keeps its value), so
 * that transfers into fresh memory take no page faults; it costs the faults
 * at registration instead (docs/performance.md, "Proactive page-in"). The
 * range must then be writable (-EFAULT otherwise).
 * *key receives the key a remote PUT/GET must present (unguessable from
 * other keys; never 0). Errors: -EINVAL (bad argument or flags), -EEXIST
 * (overlaps a buffer of ours), -ENOSPC (the node's buffer table, or its
 * SEND queue, is full), -EDQUOT (this port already holds the daemon's
 * per-port quota of buffers, 1024), -EPERM (outside the shared heap and the
 * daemon has no ptrace access to this process), -EFAULT (outside the heap
 * and not mapped), -ESRCH (the process that opened the session is gone),
 * -EPROTO (session in a bad state), -EIO (daemon gone).
 * Memory the daemon later cannot reach shows up as -EFAULT in the events of
 * the commands that use it.
 */
int dnp_register(struct dnp *d, void *addr, size_t len, unsigned flags, uint32_t *key);
/*
 * Unregisters the buffer that starts at addr. Its key opens nothing any
 * more; traffic still on its way fails at the target with -EACCES (PUT/GET)
 * or -ENOENT (SEND). Errors: -EINVAL, -ENOENT (no buffer starts at addr), -EIO.
 */
int dnp_unregister(struct dnp *d, void *addr);

/*
 * Commands. dnp_put, dnp_send and dnp_get return 0 once the command is
 * queued, or, with nothing queued: -EINVAL (bad argument: length, port,
 * coordinates outside the torus, flags), -EAGAIN (command queue full and
 * DNP_NONBLOCK), -EIO (daemon gone), -EOVERFLOW or -ENOMEM (below).
 *
 * Without DNP_NONBLOCK a full queue is waited for, never for ever: while
 * waiting the call moves delivered events to a private queue that
 * dnp_poll_events/dnp_wait_event return first (in order, each once), so an
 * application that does not poll still progresses; -EOVERFLOW once that
 * queue holds 2^20 unread events, -ENOMEM if it cannot grow.
 *
 * A queued command ends in exactly one event carrying its cookie: TX_DONE
 * (PUT, SEND: the target wrote every byte), GET_DONE, or ERROR with status
 * (with DNP_NO_EVENT: ERROR only; with DNP_SRC_EVENT a TX_READ may come
 * first, never after it):
 *   -EACCES        PUT/GET: no buffer at that address that the key opens
 *                  (wrong key, no buffer there, or unregistered; the same
 *                  error whatever the range); GET: also our local_key
 *   -ERANGE        PUT/GET: the range runs past the end of that buffer
 *   -EPERM         PUT/GET: the buffer is not a PUT target / GET source
 *   -ECONNREFUSED  the destination port is not open
 *   -ECONNRESET    our port closed while the command was pending; GET: the
 *                  target's application went while answering it
 *   -EMSGSIZE      SEND: longer than the target's next SEND buffer
 *   -ENOBUFS       SEND: no SEND buffer posted at the target (retry later)
 *   -ENOENT        SEND: the target's SEND buffer went away meanwhile
 *   -EBUSY         SEND: the target node is receiving too many multi-packet
 *                  SENDs at once (retry later)
 *   -EOVERFLOW     PUT/SEND: the target application did not drain its
 *                  events within the daemon's bound (1 s in dnpd)
 *   -EHOSTUNREACH  no route to the destination
 *   -ENOLINK       a link on the path broke
 *   -ETIMEDOUT     not completed within the command deadline (dnpd
 *                  --cmd-timeout-ms, 30 s by default), e.g. its completion
 *                  report was lost; the target may hold all, part or none
 *                  of the data
 *   -EFAULT        our local memory (source / GET destination) or the
 *                  target's could not be read or written
 *   -EINVAL        the daemon refused the command
 * The event's 'data' says what happened to the data (enum dnp_ev_data):
 * DELIVERED with status 0; NOT_DELIVERED when nothing left, or the target
 * refused it (a retry cannot apply it twice); UNKNOWN when no answer could
 * be had (-ETIMEDOUT, -EHOSTUNREACH after it left, a report from a node on
 * the way). docs/api.md, "What happened to the data".
 * docs/protocol.md ("Buffer table", "Completion under faults") has the rules.
 */

/* PUT local [src, src+len) into node dst, port dst_port, at remote_va (a
 * PUT-target buffer registered there with remote_key). */
int dnp_put(struct dnp *d, const void *src, size_t len, struct dnp_coords dst, unsigned dst_port,
	    uint64_t remote_va, uint32_t remote_key, uint64_t cookie, unsigned flags);
/* SEND into the destination port's next SEND-target buffer, in order. */
int dnp_send(struct dnp *d, const void *src, size_t len, struct dnp_coords dst, unsigned dst_port,
	     uint64_t cookie, unsigned flags);
/* GET remote [remote_va, +len) (a GET-source buffer) into local dst (a PUT-target buffer of ours, local_key). */
int dnp_get(struct dnp *d, void *dst, size_t len, uint32_t local_key, struct dnp_coords src,
	    unsigned src_port, uint64_t remote_va, uint32_t remote_key, uint64_t cookie,
	    unsigned flags);

/*
 * Events besides completions (status 0 unless said):
 *   RX_PUT / RX_SEND  a message arrived: va, len, the sender in port/peer_*
 *   RX_ERROR          a message for us failed on arrival (status < 0):
 *                     -ETIMEDOUT a SEND whose rest never came (its sender
 *                     died or its path broke); va = the SEND buffer it had
 *                     taken, back at the head of our SEND queue
 *   LINK              a link changed state: len = direction, status
 *                     -ENOLINK when it broke
 *   TX_READ           the source of a command flagged DNP_SRC_EVENT was
 *                     read whole (its cookie; not a completion)
 *   OVERFLOW          the daemon had events for us and no room for them:
 *                     len = how many were lost, status -EOVERFLOW (comes
 *                     before any newer event; docs/security.md)
 *
 * Waits up to timeout_ms (-1: forever, 0: poll) for one event. Spins briefly,
 * then sleeps. Returns 1 with *ev filled, 0 on timeout, or -EINVAL (d or ev
 * NULL), -EIO (daemon gone).
 */
int dnp_wait_event(struct dnp *d, struct dnp_event *ev, int timeout_ms);
/* Up to max events without waiting; returns the count, or -EINVAL. */
int dnp_poll_events(struct dnp *d, struct dnp_event *ev, unsigned max);

/*
 * How dnp_wait_event waits at this moment, for callers that poll with
 * dnp_poll_events and wait their own way (the libfabric provider;
 * docs/performance.md, "Pinned hand-off"). Read from the daemon's bell (its
 * hints: untrusted, each read once) and the CPU we last polled on (noted
 * again here). *how gets 0 (no placement: the wait yields every few looks)
 * or bits:
 *   DNP_WAIT_PIN_HANDOFF  a pinned neighbour daemon polls on our CPU: after
 *                         queuing a command, yield once even when alone,
 *                         then look 5 us without yielding
 *   DNP_WAIT_BLOCKS       a pinned daemon of ours gives us this CPU when our
 *                         event is there: block on the event bell at once
 *   DNP_WAIT_ELSEWHERE    the only daemon we wait for runs alone on another
 *                         CPU: a yield gives our CPU to nobody of the run
 * A hint only: a wrong answer costs yields or a sleep, never an event.
 * Cheap enough to ask once per message: it reads no line the daemon writes
 * per event. Errors: -EINVAL (d or how NULL), -EIO (the daemon is known to
 * be gone: an earlier call saw it).
 */
#define DNP_WAIT_PIN_HANDOFF 0x1u
#define DNP_WAIT_BLOCKS 0x2u
#define DNP_WAIT_ELSEWHERE 0x4u
int dnp_wait_placement(struct dnp *d, unsigned *how);

/*
 * Event count for callers that sleep without holding d (a thread that must
 * let others use d while it sleeps): dnp_event_seq gives the count, then
 * the caller looks (dnp_poll_events) and, if it found nothing, may call
 * dnp_event_sleep with that count; the sleep ends once the daemon
 * announced events or counters after the count was taken, or after
 * timeout_us. dnp_event_sleep, unlike every other call, may run while
 * another thread uses d: it touches only shared words of the session, takes
 * no event and changes nothing of d; d must stay open meanwhile. The events
 * are then taken by whoever polls next.
 * dnp_event_seq: 0, or -EINVAL (d or seq NULL).
 * dnp_event_sleep: 1 (the count moved, or a wake-up), 0 (timeout_us
 * passed), -EINVAL (d NULL, timeout_us 0 or over 1 s), -EIO (the daemon
 * closed the session).
 */
int dnp_event_seq(struct dnp *d, uint32_t *seq);
int dnp_event_sleep(struct dnp *d, uint32_t seq, unsigned timeout_us);

/*
 * Completion counters of our port (DNP_CNTR(n) above). Both count from 0
 * when the port opened and only grow; the daemon alone writes them.
 * dnp_cntr_read: *ok and *err (either may be NULL) get counter n's counts.
 * Errors: -EINVAL (d NULL, n >= DNP_CNTR_MAX).
 * dnp_cntr_wait: waits up to timeout_ms (-1: forever, 0: look once) until
 * ok + err of counter n reaches threshold, as Portals 4's counting events
 * do: every command that named the counter ends in exactly one of the two,
 * so waiting for base + k, base being ok + err before k commands were
 * posted, returns once all k ended, whether they failed or not. Events that
 * arrive meanwhile are kept for dnp_poll_events/dnp_wait_event (so the
 * daemon never waits for event room). Returns 1 (reached), 0 (timeout), or
 * -EINVAL (d NULL, n >= DNP_CNTR_MAX), -EIO (daemon gone), -EOVERFLOW or
 * -ENOMEM (kept events, as in dnp_put).
 */
int dnp_cntr_read(struct dnp *d, unsigned n, uint64_t *ok, uint64_t *err);
int dnp_cntr_wait(struct dnp *d, unsigned n, uint64_t threshold, int timeout_ms);

/*
 * Collectives run by the daemons (docs/api.md, "Collectives"). A group is
 * a list of members (struct dnp_coll_member: node coordinates and port, at
 * most DNP_COLL_MAX_MEMBERS) and an id (non-zero), the same list in the same
 * order and the same id on every member; a member's rank is its index in
 * the list. Every call returns 0 once its command is queued (or, with
 * nothing queued, -EINVAL for a bad argument, -EAGAIN, -EIO, -EOVERFLOW,
 * -ENOMEM as for dnp_put) and its command ends in one event carrying the
 * cookie: DNP_EV_TX_DONE with op = the call's DNP_OP_* once the result is
 * in this member's buffer, or DNP_EV_ERROR with status:
 *   -ENOENT        create: this node and port are not in the list; others:
 *                  no group of that id on this port
 *   -EEXIST        create: this port already holds a group of that id
 *   -EINVAL        create: a member twice, outside the torus or its ports;
 *                  bcast: root not a rank; the daemon refused the command
 *   -ENOSPC        create: the daemon holds as many groups as it can (16)
 *   -ENOMEM        create: the daemon has no memory for the group
 *   -EMSGSIZE      more than DNP_COLL_MAX_BYTES (4 MiB) of data, or more
 *                  than the daemon's own limit (engine coll_max_bytes)
 *   -EBUSY         a collective of this group is still running here
 *   -EBADMSG       another member runs another collective as this one (its
 *                  op, type, count or root differ)
 *   -ECONNABORTED  a member left the group (its application ended or it
 *                  called dnp_coll_group_destroy): this collective and every
 *                  later one fail; destroy the group
 *   -ETIMEDOUT     not done within the command deadline (dnpd
 *                  --cmd-timeout-ms): a member died, its daemon restarted,
 *                  or it never joined in
 *   -EFAULT        our buffers could not be read or written
 *   -EOPNOTSUPP    the daemon runs no collectives
 * Buffers (and the member list) must stay valid until the event. Each
 * member runs one collective of a group at a time, in the same order as
 * every other member. DNP_NONBLOCK and DNP_NO_EVENT apply as for dnp_put;
 * DNP_SRC_EVENT is -EINVAL.
 */
int dnp_coll_group_create(struct dnp *d, uint32_t id, const struct dnp_coll_member *members,
			  unsigned n, uint64_t cookie, unsigned flags);
/* Leaves the group: the other members' collectives from the next one on fail. */
int dnp_coll_group_destroy(struct dnp *d, uint32_t id, uint64_t cookie, unsigned flags);
/*
 * dst[i] = src[i] of rank 0 op src[i] of rank 1 op ... for count elements of
 * dtype (enum dnp_coll_dtype) and redop (enum dnp_coll_redop; BAND and BOR on
 * integers only). The same bits on every member, run after run: the order
 * of the operations is fixed by rank. dst may be src.
 */
int dnp_allreduce(struct dnp *d, uint32_t id, const void *src, void *dst, size_t count,
		  unsigned dtype, unsigned redop, uint64_t cookie, unsigned flags);
/* Ends on each member once every member has entered it. */
int dnp_barrier(struct dnp *d, uint32_t id, uint64_t cookie, unsigned flags);
/* The root's [buf, +len) into every other member's buf. */
int dnp_bcast(struct dnp *d, uint32_t id, void *buf, size_t len, unsigned root, uint64_t cookie,
	      unsigned flags);

/* A short text naming the cause of a negative errno of this API (the
 * status of an event included); strerror's text for other codes. */
const char *dnp_strerror(int err);

#endif
