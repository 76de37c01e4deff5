/* SPDX-License-Identifier: MIT */
/*
 * dnp_session.h — the session ABI between libdnp and dnpd: the messages on
 * the Unix socket DIR/node-<id>.sock and the layout of the shared memory
 * they hand over.
 *
 * Handshake (every message is one struct dnp_sess_msg of 32 bytes):
 *   app    -> HELLO  (va = heap bytes wanted or 0, arg32 = port wanted or DNP_SESS_PORT_ANY)
 *   daemon -> HELLO  reply (status, arg32 = port) + SCM_RIGHTS, in this order:
 *             [0] session memfd: struct dnp_sess_ctl at offset 0, then the
 *                 command ring (app produces, daemon consumes, 64-byte slots)
 *                 and the event ring (daemon produces, app consumes, 32-byte
 *                 slots) at the offsets the control block names; both are
 *                 dnp-core/ring.h rings, whose consumer reads a slot once
 *                 bit 7 of its first byte (a command's op, an event's type)
 *                 says it is full for the lap;
 *             [1] heap memfd (heap_size bytes, the app's dnp_alloc arena);
 *             [2] the daemon's bell file: struct dnp_sess_bell at offset 0;
 *             [3] an eventfd the app writes when the bell is in poll_mode.
 *   app    -> ATTACH (va = where the app mapped the heap)
 *   daemon -> ATTACH reply (status)
 * Then any number of REGISTER / UNREGISTER / STATS requests, each answered
 * by one reply of the same type. A STATS reply is followed by 'len' bytes of
 * text. A connection whose first message is STATS is a control connection
 * (dnpctl): it gets no port and no memory.
 *
 * Doorbells (C11 atomics on shared memory, futex on the same words; an
 * event count, as in transport/doorbell.h):
 *   daemon bell (struct dnp_sess_bell, the daemon's file
 *   "<run dir>/node-<id>.bell", also rung by neighbour daemons over shm
 *   links): a producer publishes its work (ring tail store, or a socket
 *   request), then a seq_cst fence and a load of 'sleeping'; only when it
 *   is not 0 does it increment 'seq' and wake the daemon: FUTEX_WAKE on
 *   'seq', or, when 'poll_mode' is 1 (a udp daemon sleeping in poll()), a
 *   write of 1 to the eventfd. An awake daemon's bell is never written. The
 *   daemon, before it sleeps, increments 'sleeping' (seq_cst, then a fence),
 *   takes 'seq', looks at every source once more, and sleeps only if it
 *   found nothing and 'seq' is unchanged: one of the two sides always sees
 *   the other's write (Dekker). Version 2: version 1 producers always
 *   bumped 'seq', and version 1 daemons sleep on a 'seq' taken before
 *   their last look, which a version 2 producer would not wake.
 *   event bell (ev_seq/ev_waiters in struct dnp_sess_ctl): the same event
 *   count with the roles swapped; the daemon bumps ev_seq after pushing
 *   events and wakes the app only when ev_waiters is not 0.
 *
 * Layout rules: fixed-width little-endian fields, explicit padding,
 * static_assert on sizes and offsets; anything that changes them bumps
 * DNP_SESS_VERSION. Structures are written by one side only, as each
 * field's comment says.
 */
#ifndef DNP_SESSION_H
#define DNP_SESSION_H

#include <assert.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define DNP_SESS_MAGIC 0x53504e44u /* "DNPS" */
/*
 * 9: the bell's kick_cpus and the kick line after the bell (struct
 * dnp_sess_kick: a neighbour daemon that woke an app on our CPU says so);
 * 8: the bell's home_cpu (a waiter on its daemon's CPU blocks at once);
 * 7: the bell's solo_cpu (a waiter on another CPU needs no yield);
 * 6: the traffic class byte of struct dnp_cmd (tc, was rsvd0), completion
 * counters (struct dnp_sess_cntr at ctl.cntr_off, the command's cntr byte)
 * and inline PUTs (DNP_CMD_F_INLINE); 5: command flags NO_EVENT and
 * SRC_EVENT, event TX_READ (dnp_abi.h); 4:
 * the rings' slots carry their full bit (ring.h); 3: app_cpu
 */
#define DNP_SESS_VERSION 9u

#define DNP_SESS_PORT_ANY 0xffffffffu
#define DNP_SESS_CMD_SLOTS 1024u /* command ring slots (64 bytes each) */
#define DNP_SESS_EV_SLOTS 4096u  /* event ring slots (32 bytes each) */
#define DNP_SESS_HEAP_DEFAULT (64ull << 20)
#define DNP_SESS_HEAP_MAX (4ull << 30)
#define DNP_SESS_NFDS 4u
#define DNP_SESS_STATS_MAX 65536u /* largest STATS text */

enum dnp_sess_msg_type {
	DNP_SESS_HELLO = 1,
	DNP_SESS_ATTACH = 2,
	DNP_SESS_REGISTER = 3,   /* va, len, arg32 = DNP_BUF_* flags; reply arg32 = key */
	DNP_SESS_UNREGISTER = 4, /* va */
	DNP_SESS_STATS = 5,      /* reply len = bytes of text that follow */
	/*
	 * Control connections only (dnpctl capture): arg32 1 = start recording
	 * the daemon's frames (transport/pcap.h) into the regular, empty file
	 * whose descriptor comes with the request (SCM_RIGHTS); 0 = stop. The
	 * daemon never opens a path for it. Reply status: 0, -EBUSY (already
	 * recording), -ENOENT (stop: nothing recorded), -EBADF (no descriptor,
	 * or not open for writing), -EINVAL (not a regular empty file), a write
	 * error; va = frames recorded, len = bytes written so far.
	 */
	DNP_SESS_CAPTURE = 6,
};

struct dnp_sess_msg {
	uint32_t magic;   /* DNP_SESS_MAGIC */
	uint16_t version; /* DNP_SESS_VERSION */
	uint16_t type;    /* enum dnp_sess_msg_type; a reply repeats it */
	int32_t status;   /* replies: 0 or a negative errno; requests: 0 */
	uint32_t arg32;   /* see enum dnp_sess_msg_type */
	uint64_t va;
	uint64_t len;
};
static_assert(sizeof(struct dnp_sess_msg) == 32, "socket message is 32 bytes");

/*
 * The daemon's doorbell: one per daemon, shared by all its sessions and its
 * shm neighbours. Its first three words are transport/doorbell.h's struct
 * dnp_doorbell (dnpd static_asserts the match); poll_mode is ours.
 */
struct dnp_sess_bell {
	alignas(64) _Atomic uint32_t seq; /* futex word: every ring increments it */
	_Atomic uint32_t sleeping;        /* daemon threads inside their sleep */
	_Atomic uint32_t magic;           /* 0x444e5042 "DNPB" once mapped */
	_Atomic uint32_t poll_mode;       /* 1: wake with the eventfd, not the futex */
	_Atomic uint32_t hold;            /* 1: waits look a moment after a yield (client.c) */
	/*
	 * Version 7: CPU + 1 of a daemon pinned to one CPU that has no links
	 * (so no other daemon carries this node's traffic), else 0. An app
	 * waiting on another CPU waits for nobody on its own: it does not
	 * yield (client.c, wait_slow).
	 */
	_Atomic uint32_t solo_cpu;
	/*
	 * Version 8: CPU + 1 of a daemon pinned to one CPU, links or not, else
	 * 0. An app waiting on that same CPU can only delay its daemon by
	 * polling: it blocks on the event bell at once, and the daemon, which
	 * then wakes it, gives it the CPU straight away (client.c, wait_slow;
	 * dnpd.c, dnpd_engine_pass; docs/performance.md, "Hand-off and context
	 * switches").
	 */
	_Atomic uint32_t home_cpu;
	/*
	 * Version 9: bit c set (c < 32): a neighbour daemon of ours is pinned
	 * to CPU c and reads its kick line (struct dnp_sess_kick). An app
	 * waiting on CPU c then blocks on its event bell at once, as on
	 * home_cpu: when we wake it we kick that daemon, which gives it the CPU
	 * (client.c, wait_slow; dnpd.c, dnpd_kick_nbrs; docs/performance.md,
	 * "Pinned hand-off"). Written by the daemon, at start and every
	 * house-keeping pass; 0 unless we are pinned and adaptive.
	 */
	_Atomic uint32_t kick_cpus;
	uint32_t reserved[8];
};
static_assert(sizeof(struct dnp_sess_bell) == 64, "bell is one cache line");
static_assert(offsetof(struct dnp_sess_bell, home_cpu) == 24 &&
		      offsetof(struct dnp_sess_bell, kick_cpus) == 28,
	      "tests/integration/hand-pin.sh and solo.sh read the bell at these offsets");

/*
 * Version 9: the kick line, at offset DNP_SESS_KICK_OFF of the daemon's bell
 * file (the doorbell file is a page: transport/doorbell.c), on a line of its
 * own so that a kick does not move the bell's line under the apps that read
 * it. Apps do not map it; the daemon's neighbours (shm or udp links, on the
 * same host: the file is "<run dir>/node-<id>.bell") do.
 * - cpu: written by the owner: CPU + 1 while it is pinned to that CPU,
 *   adaptive, and reads 'seq' once per idle pass; else 0 (a daemon from
 *   before version 9 leaves it 0, and is never kicked).
 * - seq: incremented by a neighbour daemon each time it wakes an app (a
 *   FUTEX_WAKE on the app's event bell, made before the increment) that
 *   last polled on 'cpu'. The owner keeps the last value it saw; a new one
 *   makes it yield at once (dnp_yield_handoff), so the woken app runs
 *   instead of waiting for the end of the owner's poll without yields.
 * Both words are hints: a wrong value costs a yield or a wait for the
 * scheduler, never an event, and neither side reads anything else of the
 * other's from here.
 */
#define DNP_SESS_KICK_OFF 64u
struct dnp_sess_kick {
	alignas(64) _Atomic uint32_t seq;
	_Atomic uint32_t cpu;
	uint32_t reserved[14];
};
static_assert(sizeof(struct dnp_sess_kick) == 64 && offsetof(struct dnp_sess_kick, cpu) == 4,
	      "kick line is one cache line");

/* struct dnp_sess_ctl.state */
enum dnp_sess_state {
	DNP_SESS_OPEN = 1,
	DNP_SESS_CLOSED = 2, /* the daemon is shutting down or dropped the session */
};

/*
 * The control block at offset 0 of the session memfd. Line 0 is written by
 * the daemon before the HELLO reply and constant afterwards; line 1 is the
 * event doorbell.
 */
struct dnp_sess_ctl {
	/* line 0: constant */
	uint32_t magic;     /* DNP_SESS_MAGIC */
	uint32_t version;   /* DNP_SESS_VERSION */
	uint32_t port;      /* this session's port */
	uint32_t node_id;   /* dnp_torus_id of the node */
	uint64_t map_size;  /* bytes of the session memfd */
	uint64_t heap_size; /* bytes of the heap memfd */
	uint8_t self[4];    /* x, y, z, 0 */
	uint16_t dims[4];   /* X, Y, Z, 0 */
	uint32_t cmd_off;   /* offset of the command ring (struct dnp_ring) */
	uint32_t cmd_slots;
	uint32_t ev_off; /* offset of the event ring */
	uint32_t ev_slots;
	uint32_t max_ports;
	/* line 1: event doorbell and session state */
	alignas(64) _Atomic uint32_t ev_seq; /* futex word: the daemon increments it to wake */
	_Atomic uint32_t ev_waiters;         /* written by the app: 1 while it sleeps */
	_Atomic uint32_t state;              /* enum dnp_sess_state; written by the daemon */
	/*
	 * Written by the app, when it changes: the CPU it last polled for
	 * events on (-1: not known; the daemon sets -1 at attach). A hint only:
	 * the daemon yields after pushing events only to an app on its own CPU.
	 */
	_Atomic int32_t app_cpu;
	/*
	 * Completion counters (version 6): cntr_num struct dnp_sess_cntr at
	 * offset cntr_off of the session memfd. Written by the daemon before
	 * the HELLO reply, constant afterwards.
	 */
	uint32_t cntr_off;
	uint32_t cntr_num;
	uint8_t pad1[40];
};
static_assert(sizeof(struct dnp_sess_ctl) == 128, "control block is two lines");
static_assert(offsetof(struct dnp_sess_ctl, ev_seq) == 64, "doorbell on its own line");

/*
 * One completion counter of a port (dnp_abi.h, DNP_CNTR_MAX): commands that
 * ended well ('ok') and in error ('err') since the session opened, among
 * those that named it. Written by the daemon only, from its own private
 * counts (a store-release of each changed value, then a bump of ev_seq
 * that wakes the app like an event); the daemon never reads them, so what
 * the app writes there changes nothing but what it reads itself.
 */
struct dnp_sess_cntr {
	_Atomic uint64_t ok;
	_Atomic uint64_t err;
};
static_assert(sizeof(struct dnp_sess_cntr) == 16, "counter is ok, err");

/* Placement of the rings in the session memfd (page-aligned, so both sides agree). */
#define DNP_SESS_PAGE 4096u
#define DNP_SESS_ALIGN_UP(x) (((x) + (DNP_SESS_PAGE - 1)) & ~(uint64_t)(DNP_SESS_PAGE - 1))

#endif
