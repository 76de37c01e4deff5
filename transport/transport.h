/* SPDX-License-Identifier: MIT */
/*
 * transport — how dnpd moves DNP frames over one virtual link (one torus
 * direction). Each backend is a const struct dnp_transport_ops; dnpd picks one
 * by name at start-up (dnp_transport_find). A link is opened once and then
 * driven from the daemon's single polling thread: tx_burst/rx_burst never
 * block and make no system call per frame where a batch will do.
 *
 * Backends: "shm" (same host, SPSC rings in shared memory), "udp" (kernel UDP,
 * io_uring via liburing when available, plain non-blocking sockets
 * otherwise), "dpdk" (DPDK poll-mode Ethernet, transport/dpdk/dpdk.h and
 * docs/dpdk.md; registered only when the build found DPDK), "verbs" (RDMA
 * verbs: RoCE, InfiniBand, Soft-RoCE; transport/verbs.h and docs/verbs.md;
 * registered only when the build found libibverbs).
 *
 * Addresses are strings whose meaning is the backend's:
 *   shm: a path of a file in /dev/shm (or any tmpfs) naming the link; both
 *        ends open the same path (local; remote is ignored). Whichever end
 *        comes first creates it (O_EXCL) and initialises it, publishing a
 *        magic word last with release; the other waits for the magic (up to
 *        "wait_ms", default 10000) but never for the peer process: open
 *        returns at once for the creator, frames sent before the peer
 *        attaches wait in the ring. A side already claimed in an existing
 *        file by a live process gives -EBUSY; a side whose process died
 *        (kill -9: the file records each side's pid) or closed is taken over,
 *        so a restarted daemon reattaches to its running neighbours (frames
 *        left in the rings are of an old link epoch: the engine drops them). Geometry (frame_max, depth)
 *        differing from the creator's gives -EPROTO. up() turns false when
 *        the peer closes or writes a malformed slot (rx_burst: -EPROTO).
 *        The file holds two SPSC rings of slots
 *        (u32 length + frame_max bytes), ring i carrying side i -> side 1-i,
 *        and one doorbell per side. rx_burst is zero-copy: it returns
 *        pointers into the ring slots, released on the next rx_burst.
 *        tx_burst copies into slots (no system call) and then rings the
 *        peer's doorbell (a futex wake only if the peer sleeps):
 *          - conf.peer_bell != NULL: the doorbell file of the PEER daemon
 *            ("<dir>/node-<peer id>.bell", see doorbell.h), so each daemon
 *            sleeps on ONE futex word for all its links and applications;
 *          - conf.peer_bell == NULL: the receiving side's doorbell inside the
 *            link file (dnp_transport_shm_doorbell gives it to the receiver).
 *        Both ends of a link must make the same choice. The last end to close
 *        unlinks the file. Options: "wait_ms=N".
 *   udp: "host:port" for local (bind) and remote (connect); IPv4 or IPv6
 *        ("[v6addr]:port").
 *        Options: "mode=uring|plain" (default: the faster here, see udp.c),
 *        "bufsize=N" socket buffer bytes (default 4 MiB), "uring_setup=coop"
 *        (skip SINGLE_ISSUER|DEFER_TASKRUN: exercises the fallback ring),
 *        "pack=auto|on|off|none" (default auto: small frames of one
 *        tx_burst go in one datagram once the peer announced it splits
 *        them, agreed again after peer_reset; none: as a build without
 *        packing; docs/protocol.md "The udp link's datagrams"; rx_burst
 *        keeps the rest of a datagram it could not hand out for the next
 *        call; without the option, the environment's DNP_UDP_PACK).
 *        mode=uring fails with -ENOTSUP without liburing (the default falls
 *        back to plain). The io_uring ring binds to the thread of the first
 *        tx/rx_burst (SINGLE_ISSUER), which need not be the opener's.
 *        wait_fd: the socket, for both paths (readable while frames wait;
 *        call rx_burst until it returns fewer than asked before sleeping).
 *        Datagram losses are silent (the link layer retransmits); up() is
 *        false only after a fatal socket error.
 *
 * Waking an idle daemon: for shm links, sleep on the daemon's doorbell
 * (doorbell.h); for udp links, poll() the wait_fd()s. A daemon with both
 * kinds must bound its poll() timeout (a shm peer cannot interrupt poll()).
 */
#ifndef DNP_TRANSPORT_H
#define DNP_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dnp_transport_conf {
	const char *local;     /* backend address of this end */
	const char *remote;    /* backend address of the peer */
	unsigned side;         /* 0 or 1: which end of the link this is (shm ring roles) */
	uint32_t frame_max;    /* largest frame to carry (DNP_MAX_FRAME) */
	uint32_t depth;        /* frames buffered per direction (power of two) */
	const char *options;   /* backend-specific "k=v,k=v" (may be NULL) */
	const char *peer_bell; /* shm: path of the peer daemon's doorbell file, or NULL */
};

/* One received frame: data valid until the next rx_burst on the same link. */
struct dnp_rx_frame {
	const uint8_t *data;
	uint32_t len;
};

struct dnp_tx_frame {
	const uint8_t *data;
	uint32_t len;
};

struct dnp_transport; /* a backend's link; starts with struct dnp_transport_base */

struct dnp_transport_ops;

/* First member of every backend's link, so generic code can reach the ops. */
struct dnp_transport_base {
	const struct dnp_transport_ops *ops;
};

struct dnp_transport_ops {
	const char *name;
	/* Errors: -EINVAL, -ENOMEM, -errno of the system call that failed. */
	int (*open)(const struct dnp_transport_conf *c, struct dnp_transport **out);
	void (*close)(struct dnp_transport *t);
	/* Copies out up to n frames; returns how many were taken (0 when full), or -errno. */
	int (*tx_burst)(struct dnp_transport *t, const struct dnp_tx_frame *f, unsigned n);
	/* Returns up to n received frames, or -errno. */
	int (*rx_burst)(struct dnp_transport *t, struct dnp_rx_frame *f, unsigned n);
	/* Largest frame this link carries in one piece. */
	uint32_t (*mtu)(const struct dnp_transport *t);
	/* A file descriptor that becomes readable when frames arrive, or -1 (then poll). */
	int (*wait_fd)(const struct dnp_transport *t);
	/* False once the backend knows the peer or the carrier is gone. */
	bool (*up)(const struct dnp_transport *t);
	/*
	 * Optional (NULL: never): a file descriptor that is readable whenever
	 * rx_burst could return a frame or has work to do, so that a caller
	 * may skip rx_burst while it is not; -1 when the backend cannot promise
	 * that right now. A daemon with several links then finds the busy ones
	 * with one poll() instead of one receive call per link (udp).
	 */
	int (*rx_gate_fd)(const struct dnp_transport *t);
	/*
	 * Optional, process-wide (NULL when the backend needs none; dpdk: the
	 * EAL): init once before the first open, with the backend's start-up
	 * arguments (dnpd --eal; NULL or "": init_default), fini after the last
	 * close. Errors of init: -EINVAL, -ENOMEM, -errno of the backend.
	 * fini returns true when threads of the backend still run and the
	 * process must end with _exit() (no destructors under them).
	 */
	int (*init)(const char *args);
	bool (*fini)(void);
	const char *init_default; /* the arguments init uses by default, for usage texts */
	/*
	 * Optional (NULL: none): the backend's own counters of link t, written
	 * into buf as blank-separated "name value" pairs (names and values
	 * without blanks), NUL-terminated and cut at cap; returns the length
	 * written. dnpctl stats shows them as "link DIR <name> ..." (verbs).
	 */
	size_t (*counters)(const struct dnp_transport *t, char *buf, size_t cap);
	/*
	 * Optional (NULL: nothing to forget): the link layer above has heard
	 * its peer start over (a RESET frame received: the peer daemon
	 * restarted, or the first handshake). The backend forgets what it
	 * agreed with the peer that was there before and agrees again with
	 * the one there now (udp: whether the peer reads packed datagrams).
	 */
	void (*peer_reset)(struct dnp_transport *t);
	/*
	 * Optional (NULL: the backend cannot tell): bytes of the frames this
	 * end's tx_burst took that the peer has not taken off the link yet
	 * (shm: frames in this side's ring the receiver has not released;
	 * UINT32_MAX at most). A byte-queue limit above the backend
	 * (transport/linkq.h, dnpd --link-queue) hands a link more frames only
	 * while this is under its limit, so the link's FIFO stays short and
	 * the engine's class arbitration, above it, decides what goes next.
	 */
	uint32_t (*tx_queued)(const struct dnp_transport *t);
	/*
	 * Optional, together (NULL: copy with tx_burst): frames written in
	 * place (one pass, docs/performance.md "One pass on the first
	 * transmission"). tx_reserve points bufs[0..k) at the next k free
	 * places of the link (k <= n, returned; 0 when full, or -errno;
	 * -ENOTSUP: not now, send this time with tx_burst), each *cap bytes,
	 * in the order they go out; it changes nothing, and a later call
	 * gives the same places again until a commit. tx_commit sends the
	 * first n of them (n <= the last reserve's count), frame i being
	 * lens[i] bytes written into bufs[i], exactly as tx_burst would send
	 * them (same ordering and doorbell); returns n or -errno (-EMSGSIZE: a
	 * length over the cap, -EINVAL: more than were reserved; nothing
	 * sent). The caller writes the places only between the two calls, and
	 * nothing else is sent on the link in between.
	 */
	int (*tx_reserve)(struct dnp_transport *t, uint8_t **bufs, uint32_t *cap, unsigned n);
	int (*tx_commit)(struct dnp_transport *t, const uint32_t *lens, unsigned n);
};

extern const struct dnp_transport_ops dnp_transport_shm;
extern const struct dnp_transport_ops dnp_transport_udp;

/* Backend by name ("shm", "udp", "dpdk", ...) or NULL if not built in. */
const struct dnp_transport_ops *dnp_transport_find(const char *name);

struct dnp_doorbell;
/*
 * shm only: the doorbell inside the link file that the PEER rings when its
 * conf.peer_bell is NULL (this end's receive doorbell); NULL for other backends.
 */
struct dnp_doorbell *dnp_transport_shm_doorbell(struct dnp_transport *t);
/*
 * The neighbour's doorbell an shm link rings (the file named peer_bell in its
 * conf, mapped with dnp_doorbell_map), or NULL (not shm, or no peer_bell):
 * for dnp_doorbell_remap when that file was truncated under us.
 */
struct dnp_doorbell *dnp_transport_shm_peer_bell(struct dnp_transport *t);

/* udp only: true when the link runs on io_uring (false: sendmmsg/recvmmsg). */
bool dnp_transport_udp_uses_uring(const struct dnp_transport *t);
/* udp only: the IORING_SETUP_* flags the link's ring got (0 on the plain path). */
unsigned dnp_transport_udp_uring_flags(const struct dnp_transport *t);

/* Ops of an open link (every link starts with struct dnp_transport_base). */
static inline const struct dnp_transport_ops *dnp_transport_ops_of(const struct dnp_transport *t)
{
	return ((const struct dnp_transport_base *)(const void *)t)->ops;
}

#endif
