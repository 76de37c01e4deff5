/* SPDX-License-Identifier: MIT */
/*
 * engine — one DNP node as a sans-I/O state machine.
 *
 * Inputs: application commands (dnp_engine_submit), frames received on a
 * virtual link (dnp_engine_rx), and the current time (every call takes 'now',
 * in the caller's time unit: nanoseconds in dnpd, cycles in the lab).
 * Outputs: frames to send on each link (dnp_engine_tx_burst), reads and
 * writes of application memory (through the caller's struct dnp_mem_ops),
 * and completion events per port (dnp_engine_poll_events).
 *
 * Inside: per link a struct dnp_link (credits per VC, sequence/ack,
 * retransmission); per input (six links and the local injection port) and VC
 * a FIFO of packets; a router (dimension order, dateline VCs); the buffer
 * table; a table of outstanding commands. A packet moves from its input FIFO
 * to a link only when that link's VC has credit; a packet for this node is
 * delivered (buffer lookup, memory write, event) when its port's event queue
 * has room — otherwise it waits, and back-pressure reaches the sender.
 *
 * Every accepted command ends in exactly one completion event: TX_DONE (PUT,
 * SEND: the target wrote every byte), GET_DONE, or ERROR with a negative
 * errno; a success of a command flagged DNP_CMD_F_NO_EVENT ends with none
 * (dnp_engine_quiet_take counts it), and a PUT or SEND flagged
 * DNP_CMD_F_SRC_EVENT gets one DNP_EV_TX_READ before its completion, once its
 * last packet left (its whole source was read). A command whose cntr byte
 * names a completion counter bumps it when it ends (dnp_engine_cntr_take);
 * an inline PUT (DNP_CMD_F_INLINE) is read from the engine's copy of the
 * slot, never through mem->read. The errors:
 *   -EACCES        no buffer at that address opened by the key (checked
 *                  first: a wrong key learns nothing of the buffer)
 *   -ERANGE        the range runs past the buffer the key opens
 *   -EPERM         wrong kind of buffer (not PUT_TARGET / GET_SOURCE)
 *   -ECONNREFUSED  the target port is not open
 *   -ECONNRESET    the command's own port closed; or, for a GET, the target
 *                  port closed while answering it
 *   -EMSGSIZE      SEND larger than the target's head SEND buffer
 *   -ENOBUFS       no SEND buffer posted (or the SEND's first fragment was refused)
 *   -ENOENT        a SEND fragment's bytes fall outside every SEND-target buffer
 *   -EBUSY         more than max_sends multi-packet SENDs arriving at once
 *   -EOVERFLOW     the target port's event queue stayed full for deliver_timeout
 *   -EHOSTUNREACH  destination outside the torus / no route (also when a
 *                  query is due and no route to ask over is left)
 *   -ENOLINK       a link on the path broke; or the target declared the
 *                  PUT/SEND not delivered and its resends failed too
 *   -ETIMEDOUT     not completed within cmd_timeout and no answer to be had
 *                  (outcome queries: query_timeout; docs/protocol.md)
 *   -EFAULT        application memory could not be read or written
 *   -EINVAL        bad command (dnp_cmd_check)
 * Besides completions, a port gets RX_PUT / RX_SEND for messages that
 * arrived, and RX_ERROR for a SEND that timed out in reassembly
 * (-ETIMEDOUT, reasm_timeout). Bounds and what holds where: docs/protocol.md,
 * "Completion under faults".
 *
 * Links come back (link.h, "Epochs"): with link.reset_period set, a BROKEN
 * link keeps probing its peer; when they agree on a new epoch it is UP again
 * with fresh sequence numbers and credits. Packets of the old epoch are never
 * delivered; what failed while it was down stays failed. Every open port gets
 * a DNP_EV_LINK event (len = direction) when a link breaks (status -ENOLINK)
 * and when it is UP again (status 0); the first UP is not reported.
 *
 * Memory: everything is allocated by dnp_engine_create; the per-packet path
 * allocates nothing. Frames returned by dnp_engine_tx_burst point into the
 * engine and stay valid until the next call into the engine.
 * Threads: one thread owns an engine; different engines are independent.
 */
#ifndef DNP_ENGINE_H
#define DNP_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buftab.h"
#include "cmd.h"
#include "keygen.h"
#include "link.h"
#include "pkt.h"
#include "route.h"
#include "torus.h"

#define DNP_MAX_PORTS 256u

/*
 * A read that is one of a message's reads of its source, made in increasing
 * address order up to 'end' (exclusive): the callee may read ahead as far as
 * end and serve the same message's later reads from its copy. 'id' stays
 * the same for every read of one message, and no two messages read at the
 * same time share it.
 */
struct dnp_mem_seq {
	uint64_t id;
	uint64_t end;
};

/*
 * Access to application memory. 'buf' is the registered buffer that holds
 * the range (NULL for a local PUT/SEND source that is not registered); 'seq'
 * (read only, may be NULL) says which message the read belongs to. Return 0
 * or -EFAULT. Called from the engine's thread.
 *
 * flush is optional. Without it a write has landed when write returns. With
 * it, write may queue its bytes and return 0; flush(port, va, len) makes
 * every write queued for port land, and returns -EFAULT if a write into
 * [va, va + len) failed since that range was last flushed, else 0. The engine
 * calls it for a message's whole target range after writing the message's
 * last fragment and before any event or report says that it arrived (a
 * failure then fails the message with -EFAULT), and when such a message
 * fails for another reason (result ignored).
 */
struct dnp_mem_ops {
	int (*read)(void *ctx, unsigned port, const struct dnp_buf *buf, uint64_t va, void *dst,
		    size_t len, const struct dnp_mem_seq *seq);
	int (*write)(void *ctx, unsigned port, const struct dnp_buf *buf, uint64_t va,
		     const void *src, size_t len);
	int (*flush)(void *ctx, unsigned port, uint64_t va, uint64_t len);
	/*
	 * Optional (one pass, conf.tx_direct): true when read(ctx, port, NULL,
	 * va, dst, len, NULL) copies [va, va + len) straight from memory that
	 * stays mapped and readable for as long as port is open, so that it
	 * may be read again later (dnpd: the session's sealed heap; not
	 * process_vm_* memory). NULL: never.
	 */
	bool (*stable)(void *ctx, unsigned port, uint64_t va, size_t len);
};

/* Times a PUT or SEND is sent again after its target said it was never applied. */
#define DNP_ENGINE_RESENDS 3u

struct dnp_engine_conf {
	struct dnp_torus torus;
	struct dnp_coord self;
	struct dnp_link_conf link; /* used for each of the node's links */
	uint8_t vc_mode;           /* enum dnp_vc_mode */
	/*
	 * enum dnp_routing (route.h): DOR (0, the default) or adaptive, which
	 * needs link.nvc >= 3 (dnp_engine_create: -EINVAL). Adaptive hops are
	 * for single-packet messages only (docs/routing.md, "Ordering").
	 */
	uint8_t routing;
	uint32_t max_buffers;  /* >= 1 (4096 by default in dnpd) */
	uint32_t max_ports;    /* 1..256 */
	uint32_t max_commands; /* outstanding commands per node, >= 1 */
	uint32_t event_queue;  /* per-port event queue slots, power of two >= 2 */
	uint32_t max_sends;    /* multi-packet SENDs being received at once, >= 1 */
	/*
	 * Bounds, in the caller's time unit; 0 = none (wait for ever, the
	 * hardware's behaviour and the lab's default). dnpd sets all three.
	 * cmd_timeout: a command not completed this long after its submission
	 *   fails with -ETIMEDOUT (covers a lost completion report).
	 * reasm_timeout: a multi-packet SEND that gets no fragment for this
	 *   long is dropped: slot and buffer reclaimed, DNP_EV_RX_ERROR
	 *   -ETIMEDOUT to its port.
	 * deliver_timeout: the last fragment of a PUT/SEND that waited this
	 *   long for room in its port's event queue fails back to its sender
	 *   with -EOVERFLOW, so that it does not block the FIFO (and the transit
	 *   traffic behind it) for ever; until the port's application polls an
	 *   event, later messages that find its queue full fail at once.
	 */
	uint64_t cmd_timeout;
	uint64_t reasm_timeout;
	uint64_t deliver_timeout;
	/*
	 * Outcome queries (docs/protocol.md, "Outcome queries"), in the
	 * caller's time unit; 0 = none (the lab's default).
	 * query_timeout: a PUT or SEND whose packets all left and whose report
	 *   has not come this long after (a few round trips) is asked about:
	 *   a QUERY to its target, again every query_timeout. The target
	 *   answers with the outcome it recorded (the command completes with
	 *   it), or that the message was never applied and never will be (the
	 *   command is sent again, at most DNP_ENGINE_RESENDS times, else
	 *   fails with -ENOLINK). When no route to the target is left at that
	 *   moment the command fails with -EHOSTUNREACH. GETs are not asked
	 *   about (their data is their report): cmd_timeout stays their bound.
	 * Every engine records the outcome of the messages it received
	 *   (max_commands per source node, rounded up to a power of two) and
	 *   answers queries whether or not it asks any itself.
	 */
	uint64_t query_timeout;
	/*
	 * How long (caller's time unit) an own link judged sick stays avoided
	 * after its verdict turned healthy (dnp_engine_link_sick); 0: let go
	 * at once. dnpd: 2 s.
	 */
	uint64_t sick_hold;
	/*
	 * Send a credit frame (with the current ack) in the next tx_burst after
	 * any frame was accepted, instead of only every credit_period. Meant
	 * for the EXACT credit model on real networks (dnpd); the lab keeps the
	 * hardware's periodic credits (false). credit_period then only paces
	 * keep-alive credits.
	 */
	bool prompt_credits;
	/*
	 * With prompt_credits: how long (time units) an ack or occupancy change
	 * that only a CREDIT frame would carry may wait. Meanwhile a sequenced
	 * frame to the peer carries the ack (every frame does), and a credit
	 * still goes out in the next tx_burst when the peer's estimate of our
	 * FIFO matters (dnp_link_credit_stale), when a selective ack has
	 * something to say, or after a duplicate or a gap. 0: every change is
	 * credited in the next tx_burst.
	 */
	uint64_t ack_delay;
	/*
	 * Secret of the key generator (keygen.h): keys are a PRF of a counter
	 * under it, never 0. dnpd fills it from getrandom(2); the lab derives it
	 * from its seed; the default is a fixed, public value (tests only).
	 */
	uint64_t key_secret[2];
	/*
	 * Packet buffers for frames of up to 256 bytes (small) and for full
	 * frames (big); 0: as many as every input FIFO and every link's window
	 * full at once need, plus room for local answers (dnpd and the lab).
	 * Tests set a few to run the engine short of buffers: it then takes in
	 * a frame's ack and credits without keeping the frame (the peer resends
	 * it, rx_nobuf), holds back deliveries whose report has no buffer, and
	 * still ends every command with exactly one completion.
	 */
	uint32_t pool_small, pool_big;
	const struct dnp_mem_ops *mem;
	void *mem_ctx;
	/*
	 * Congestion management (docs/protocol.md, "Congestion marks").
	 * congestion: enum dnp_congestion, OFF (0, the default: nothing below
	 * applies, no table is allocated) or ECN: this node marks (DNP_FT_CE)
	 * every PUT and SEND packet it sends on a VC whose estimated remote
	 * occupancy is at least cg_threshold words, echoes the mark of a
	 * delivered message in its completion report, and keeps a window per
	 * destination node: a PUT or SEND starts only while fewer than its
	 * window's packets to that node are unreported. A window starts at 8
	 * packets (cg_window if smaller), is halved (at least 1) by an echoed
	 * mark (at most once per window's worth of packets) and grows by one
	 * packet per packet of an unmarked report, up to cg_window. 0 in either
	 * field: its default (a quarter of link.t_red; 64 packets).
	 */
	uint8_t congestion;
	uint32_t cg_threshold;
	uint32_t cg_window;
	/*
	 * Traffic classes (docs/routing.md, "Traffic classes and virtual
	 * channels"): enum dnp_arbitration (arb.h). Off (0, the default): the
	 * class travels but the switch and injection keep their round robin and
	 * FIFO order. Strict or wrr: per-class injection queues, and every
	 * grant at injection and at the router outputs goes by class; classes
	 * share the VCs, so routes, VCs and credits are unchanged.
	 * arb_starve: strict's bound, 0 = DNP_ARB_STARVE_DEFAULT (-EINVAL for
	 * an unknown policy).
	 */
	uint8_t arbitration;
	uint16_t arb_starve;
	/*
	 * Collectives (coll.h). coll_groups: groups a node holds at once (its
	 * ports' joins; 0: every collective command fails -EOPNOTSUPP);
	 * coll_max_bytes: the largest ALLREDUCE or BCAST, 1..DNP_COLL_MAX_BYTES
	 * (a group keeps about 2 x (log2(members) + 3) buffers of this size,
	 * allocated when it is joined). Defaults: 16 and DNP_COLL_MAX_BYTES.
	 */
	uint32_t coll_groups;
	uint32_t coll_max_bytes;
	/*
	 * Direct receive (h-fast, docs/performance.md "Passes over the
	 * payload"): when true, dnp_engine_rx delivers an in-sequence PUT,
	 * SEND or GET response addressed to this node straight from the
	 * caller's frame, which may sit in memory the peer can still write
	 * (a shm slot), instead of copying it into a packet buffer first:
	 * only while its input FIFO is empty, so the order and the FIFO's
	 * credits are those of the copying path. The header is decoded once
	 * into private memory and every check (CRC, key, range) is made as
	 * before; the payload is only ever copied, as bytes. Any other frame,
	 * or one whose delivery must wait, takes the copying path. Default
	 * false: the lab keeps the copying path.
	 */
	bool rx_direct;
	/*
	 * Mapped buffers (h-rx8, docs/performance.md "Receive side, second
	 * round"): true when the driver registers every buffer with priv
	 * either 0 or the address at which [va, va + len) is mapped, writable,
	 * in this process for as long as the buffer stays registered (dnpd:
	 * a buffer in the session's shared heap). A PUT or GET response
	 * written into a buffer with priv is then copied there by the engine
	 * itself, after the same key, range and flag checks, with no
	 * mem->write call and no mem->flush for its message; a buffer with
	 * priv 0 goes through mem->write as before. Default false.
	 */
	bool rx_map_priv;
	/*
	 * Send-side burst (h-send, docs/performance.md "Send-side burst"): by
	 * default, injection builds a run of packets for one link in one pass
	 * (each packet's checks as before; one sequence step per run) and
	 * tx_burst restamps the new packets of a link in one pass (one
	 * "sent" step per run). The frames, their order, sequence numbers and
	 * the events are those of the one-at-a-time path. tx_single = true
	 * keeps the one-at-a-time path (tests compare the two with it).
	 */
	bool tx_single;
	/*
	 * Top-class latency remedies (docs/routing.md, "Top-class latency"),
	 * with arbitration on only; 0 (the default) leaves each off. Classes
	 * below the top one (DNP_ARB_CLASSES - 1, also the class of control
	 * packets) are the low classes.
	 * arb_low_payload: a low-class PUT, SEND or GET response is cut into
	 * packets of at most this many payload bytes (16..DNP_MAX_PAYLOAD, a
	 * multiple of 16), so a top-class packet waits behind shorter frames.
	 * arb_top_reserve: words of every VC's RX FIFO that a low-class packet
	 * may not take: it starts only while est + its words + reserve <=
	 * t_red, so a top-class packet finds room beside a FIFO full of bulk.
	 * Errors at create (-EINVAL): a payload out of range, or a reserve that
	 * leaves no room for the largest low-class frame under t_red.
	 */
	uint16_t arb_low_payload;
	uint16_t arb_top_reserve;
	/*
	 * Buffer credits (h-dl; docs/protocol.md, "Buffer credits"): big
	 * packet buffers the node backs per input VC (a FIFO of one link and
	 * VC), which every credit offers the sender, so a frame sent within
	 * credit always finds a buffer. 0: as many as the FIFO holds frames
	 * of more than 256 bytes (link.fifo_words / 17), at most 32 or the
	 * full-size frames a FIFO holds, whichever is more; a value set here
	 * is used up to link.fifo_words / 17; never more than 254. The pool
	 * grows by them (rx_bufs x links x VCs big buffers). A pool_big too
	 * small to keep them for every input VC beside a few more lowers
	 * them, or turns them off (the old refusal and resend).
	 */
	uint32_t rx_bufs;
	/*
	 * One pass on the first transmission (h-onepass, docs/performance.md
	 * "One pass on the first transmission"): with tx_direct, mem->stable
	 * set, and a link that its driver sends with dnp_engine_tx_burst_into,
	 * a PUT packet of at least DNP_ONEPASS_MIN payload bytes whose source
	 * mem->stable accepts keeps only its header and where its payload is
	 * (port, va) in its packet buffer: its bytes are read from the
	 * application's memory straight into the caller's buffer (a shm slot)
	 * each time the frame is written out, and its CRC is computed over
	 * that buffer after the copy. Not for inline PUTs, SENDs, GETs and
	 * their responses, commands flagged DNP_CMD_F_SRC_EVENT (their source
	 * is the application's again at TX_READ), or memory the driver does
	 * not call stable. A port's such packets are read into their packet
	 * buffers when the port closes, before dnp_engine_port_close returns.
	 * dnp_engine_tx_burst still works on every link (it reads the bytes
	 * into the packet buffer first). Default false (the lab, udp, tests).
	 */
	bool tx_direct;
};

/* Smallest payload a packet must have to be sent in one pass (conf.tx_direct). */
#define DNP_ONEPASS_MIN 512u

/* Congestion management modes (struct dnp_engine_conf.congestion). */
enum dnp_congestion {
	DNP_CONGESTION_OFF = 0,
	DNP_CONGESTION_ECN = 1,
};
/* "off" or "ecn" (NULL for another value). */
const char *dnp_congestion_name(unsigned mode);
/* The mode a name gives ("off", "ecn"). Errors: -EINVAL an unknown name. */
int dnp_congestion_parse(const char *name);

/* Fills c with sensible defaults for a torus node (caller then sets torus, self, mem). */
void dnp_engine_conf_default(struct dnp_engine_conf *c);

struct dnp_frame {
	const uint8_t *data;
	uint32_t len;
};

struct dnp_engine_stats {
	uint64_t cmds_accepted, cmds_ok, cmds_failed;
	uint64_t pkts_injected;  /* packets made from local commands */
	uint64_t pkts_forwarded; /* packets passed on towards another node */
	uint64_t pkts_delivered; /* packets for this node handled */
	uint64_t bytes_delivered;
	uint64_t rx_crc_errors;  /* frames dropped for a bad CRC */
	uint64_t rx_malformed;   /* frames dropped for any other decode error, or on a VC >= nvc */
	uint64_t rx_misrouted;   /* frames whose destination/route made no sense here */
	uint64_t rx_wrong_link;  /* frames of another link (source direction/node) */
	uint64_t deliver_errors; /* packets refused at delivery (bad key, bounds, ...) */
	uint64_t deliver_timeouts; /* messages failed back after deliver_timeout (-EOVERFLOW) */
	uint64_t reasm_timeouts;   /* SEND reassemblies dropped after reasm_timeout */
	uint64_t rx_events_lost;   /* DNP_EV_RX_ERROR not queued: the port's queue was full */
	uint64_t events;           /* events queued to applications */
	uint64_t hops_total;       /* sum of hop counts of delivered last fragments */
	uint64_t diag_tx, diag_rx, diag_dropped; /* LO|FA|MO DIAG packets */
	uint64_t link_events_dropped; /* DNP_EV_LINK events a full event queue could not take */
	/* Detours (docs/routing.md): link states told to and heard from neighbours. */
	uint64_t route_tx, route_rx; /* ROUTE packets */
	uint64_t route_changes;      /* cable states this node adopted (its own included) */
	uint64_t sick_avoided;       /* times an own link judged sick began to be avoided */
	uint64_t route_overflow;     /* cable states not kept: a table was full */
	uint64_t rx_incomplete;      /* PUT fragments out of sequence (some were lost) */
	uint64_t rx_incomplete_msgs; /* PUTs/SENDs whose last fragment found them incomplete */
	uint64_t cmpl_frames;        /* CMPL packets made here (one may report many messages) */
	uint64_t rx_nobuf; /* frames that found no buffer free (most: ack and credits only) */
	/* Outcome queries (docs/protocol.md, "Outcome queries"). */
	uint64_t query_tx, query_rx; /* QUERY packets sent by this node / answered here */
	uint64_t query_resends;      /* commands sent again after "not delivered" */
	uint64_t rx_refused;         /* packets of a message declared not delivered, not applied */
	uint64_t adaptive_hops;      /* packets sent on an adaptive VC (routing adaptive) */
	/* Congestion management (congestion ecn; h-congest). */
	uint64_t cg_marked;   /* packets this node marked (DNP_FT_CE) on their way out */
	uint64_t cg_echoes;   /* reports of own messages that came back marked */
	uint64_t cg_cuts;     /* times a destination's window was halved */
	uint64_t cg_held;     /* messages that waited for their destination's window */
	uint64_t cg_bypassed; /* messages sent ahead of an older one held by its window */
	/* Direct receive (conf.rx_direct; h-fast). */
	uint64_t rx_direct; /* data frames delivered from the caller's frame, no copy first */
	/* Burst receive (h-fast): data frames that took dnp_engine_rx_burst's fast path. */
	uint64_t rx_burst_fast;
	/* Send-side burst (h-send): packets built by injection runs (conf.tx_single false). */
	uint64_t tx_run_pkts;
	/* One pass (conf.tx_direct; h-onepass). */
	uint64_t tx_onepass; /* frames written with their payload read straight from memory */
	uint64_t tx_onepass_faults; /* such reads that failed: the packet was refused (key 0) */
	uint64_t tx_onepass_held;   /* now: packets whose payload is still in application memory */
};

struct dnp_engine;

/* Errors: -EINVAL (bad conf), -ENOMEM. 'now' starts the link timers. */
int dnp_engine_create(const struct dnp_engine_conf *c, uint64_t now, struct dnp_engine **out);
void dnp_engine_destroy(struct dnp_engine *e);

/*
 * Ports. open: -EINVAL (>= max_ports), -EBUSY. close: -ENOENT. Closing unregisters
 * the port's buffers and forgets its commands and events (the application is gone).
 * Nothing that refers to the old application survives it, so that a new one
 * given the same port never serves the old one's peers: its GET responder
 * jobs stop (their requesters get -ECONNRESET), its SEND reassemblies and
 * posted SEND buffers are dropped (the rest of such a message is refused
 * with -ENOBUFS), and its keys open nothing any more.
 */
int dnp_engine_port_open(struct dnp_engine *e, unsigned port);
int dnp_engine_port_close(struct dnp_engine *e, unsigned port);

/* Buffers. register: errors of dnp_buftab_insert plus -ENOENT (port not open). */
int dnp_engine_register(struct dnp_engine *e, unsigned port, uint64_t va, uint64_t len,
			unsigned flags, uintptr_t priv, uint32_t *key);
int dnp_engine_unregister(struct dnp_engine *e, unsigned port, uint64_t va);

/*
 * Queues a command of 'port'. 0: accepted, exactly one completion event will
 * follow (possibly an immediate ERROR for an invalid command), or none for a
 * success with DNP_CMD_F_NO_EVENT. -EAGAIN: too many outstanding commands, or
 * no room in the port's event queue for its events, try later. -ENOENT: port
 * not open.
 */
int dnp_engine_submit(struct dnp_engine *e, unsigned port, const struct dnp_cmd *c, uint64_t now);

/*
 * Send-side burst (h-send): submits c[0..n) of 'port' in order, each with
 * exactly the checks and result of dnp_engine_submit (a command to the same
 * node by the same route as the one before it, while the routes have not
 * changed, reuses its first hop). Stops at the first command not accepted,
 * which is left untouched: its result in *rc (-EAGAIN or -ENOENT, as
 * dnp_engine_submit; 0 when all were accepted; rc may be NULL). Returns the
 * number accepted.
 */
unsigned dnp_engine_submit_burst(struct dnp_engine *e, unsigned port, const struct dnp_cmd *c,
				 unsigned n, int *rc, uint64_t now);

/*
 * A frame arrived on link 'dir'. 0, or a negative errno when it was dropped
 * (and counted): -ENODEV no such link, -ENOLINK link broken, -EMSGSIZE
 * longer than DNP_MAX_FRAME, an error of dnp_pkt_decode (rx_crc_errors,
 * rx_malformed), -EXDEV a frame of another link (rx_wrong_link: its source
 * direction is not the opposite of dir, or a link-control frame names
 * another node than the neighbour), -ECONNREFUSED a RESET frame whose
 * hello does not match ours (link.h, "The link handshake": the link's
 * refusal record and rx_refused say which field; an UP link breaks),
 * -ERANGE a VC the link does not have
 * (>= link.nvc; rx_malformed), -EALREADY a
 * duplicate, -EAGAIN a frame beyond a gap that cannot be held (frames
 * beyond a gap are normally held until it fills, and return 0;
 * dnp_link_rx_seq), -ENOBUFS no room (the peer resends it).
 * The frame may live in memory the peer still writes (shm links): the
 * engine copies it before it reads any byte, and uses only the copy; with
 * conf.rx_direct, a data frame for this node is decoded in place (each
 * header byte read once, into private memory) and its payload copied
 * straight to its destination. The frame is not used after the call.
 * -EPROTO (rx_malformed): a direct frame whose bytes changed between its
 * decode and the copy its delayed delivery needed.
 */
int dnp_engine_rx(struct dnp_engine *e, unsigned dir, const void *frame, size_t len, uint64_t now);

/*
 * Burst receive (h-fast; docs/performance.md, "Batched receive"): the frames
 * f[0..n) arrived on link dir, in this order. Each gets exactly the checks
 * and the result dnp_engine_rx would give it (rc[i], when rc is not NULL),
 * and the frames are taken in order. With conf.rx_direct, an in-sequence
 * data frame for this node on an idle input FIFO takes a burst fast path:
 * decoded once in place, delivered from the caller's frame, and the link's
 * bookkeeping is coalesced per burst: the peer's cumulative acks of the
 * run of such frames are applied once (the newest valid one, which frees
 * what each would have freed; it gives one RTT sample where each frame
 * could give one), the ack owed to the peer is marked once, and the hop of
 * frames with the same source, destination, route and VC is routed once.
 * Any other frame (link control, errors, a gap, a forward, a delivery that
 * must wait) takes dnp_engine_rx after the pending bookkeeping is applied,
 * so it sees the engine as a frame-by-frame caller would have left it.
 * Returns the number of frames dropped (rc[i] < 0). n may be 0.
 */
unsigned dnp_engine_rx_burst(struct dnp_engine *e, unsigned dir, const struct dnp_frame *f,
			     unsigned n, int *rc, uint64_t now);

/* Does the work that is due: timers, routing, delivery, segmentation of commands. */
void dnp_engine_run(struct dnp_engine *e, uint64_t now);

/* Up to max frames to send on link dir now (credits permitting). Returns the count. */
unsigned dnp_engine_tx_burst(struct dnp_engine *e, unsigned dir, struct dnp_frame *out,
			     unsigned max, uint64_t now);

/*
 * One pass (conf.tx_direct): as dnp_engine_tx_burst, but the frames are
 * written into the caller's buffers bufs[0..n) (at most 64 used), each of
 * cap bytes (0 frames when cap < DNP_MAX_FRAME), their lengths in lens;
 * returns the count. A packet whose payload stays in the application's
 * memory is written there in one pass: header, payload read through
 * mem->read straight into the buffer, then the CRC over the buffer's
 * bytes. Any other frame is copied. The buffers are written only (never
 * read back later); frame i is bufs[i]. Once called for a link with
 * conf.tx_direct and mem->stable, later PUTs on it may be such packets. A
 * read that fails turns the packet into one its target refuses (key 0)
 * and fails its command with -EFAULT (stats tx_onepass_faults).
 */
unsigned dnp_engine_tx_burst_into(struct dnp_engine *e, unsigned dir, uint8_t *const *bufs,
				  uint32_t cap, unsigned n, uint32_t *lens, uint64_t now);
/*
 * The driver of link dir writes its frames with dnp_engine_tx_burst_into
 * whenever dnp_engine_tx_due says DNP_TX_DUE_DIRECT (conf.tx_direct and
 * mem->stable set; nothing otherwise): PUTs on it may from now on keep
 * their payload in the application's memory. Idempotent; tx_burst_into
 * does it too.
 */
void dnp_engine_link_direct(struct dnp_engine *e, unsigned dir);
/*
 * 0 when dnp_engine_tx_burst(e, dir, ..., now) would certainly return no
 * frame (a driver may skip reserving room); else DNP_TX_DUE, with
 * DNP_TX_DUE_DIRECT when the engine holds packets whose payload is still in
 * application memory (one pass): the driver then writes the link's frames
 * with dnp_engine_tx_burst_into; otherwise dnp_engine_tx_burst and a copy
 * cost it less. Either call is correct in every case. A driver may look at
 * stats tx_onepass_held first: while it is 0, DNP_TX_DUE_DIRECT is never set.
 */
#define DNP_TX_DUE 1u
#define DNP_TX_DUE_DIRECT 2u
unsigned dnp_engine_tx_due(const struct dnp_engine *e, unsigned dir, uint64_t now);

/* Events of a port, oldest first. Returns the count. */
unsigned dnp_engine_poll_events(struct dnp_engine *e, unsigned port, struct dnp_event *ev,
				unsigned max);
/*
 * How many commands of the port ended since the last call with no event
 * (successes flagged DNP_CMD_F_NO_EVENT), and zeroes the count: a driver
 * that counts a port's outstanding commands by their completions ends these
 * too. 0 for a port out of range; a port opened anew starts at 0.
 */
uint32_t dnp_engine_quiet_take(struct dnp_engine *e, unsigned port);

/*
 * Completion counters (dnp_abi.h, DNP_CNTR_MAX per port): a command whose
 * cntr is 1 + i bumps counter i of its port when it ends, ok on success
 * (whether or not an event says so), err on failure; a command the engine
 * refused (dnp_cmd_check) counts too when its cntr is valid. A port opened
 * anew starts at 0. dnp_engine_cntr_take returns the mask of the port's
 * counters that changed since the last call (bit i: counter i; 0 for a port
 * out of range), clears it, and points *vals at the port's DNP_CNTR_MAX
 * counters, valid until the next call into the engine.
 */
struct dnp_engine_cntr {
	uint64_t ok, err;
};
uint64_t dnp_engine_cntr_take(struct dnp_engine *e, unsigned port,
			      const struct dnp_engine_cntr **vals);

/*
 * LO|FA|MO diagnostics (lofamo/dfm.h). A DIAG packet carries up to
 * DNP_ENGINE_DIAG_MAX bytes to a node's fault manager, routed like any
 * packet, and never answered: lost on a broken link, it is just gone.
 * diag_send: 0, -EINVAL (too long, outside the torus or this node), -EAGAIN
 * (no packet buffer now). diag_poll: copies the oldest DIAG delivered here
 * and its source; returns its length, 0 if none, -ENOBUFS if cap is too small.
 * At most DNP_ENGINE_DIAG_QUEUE wait; more are dropped (stats diag_dropped).
 */
#define DNP_ENGINE_DIAG_MAX 64u
#define DNP_ENGINE_DIAG_QUEUE 16u
int dnp_engine_diag_send(struct dnp_engine *e, struct dnp_coord dst, const void *payload,
			 size_t len, uint64_t now);
int dnp_engine_diag_poll(struct dnp_engine *e, struct dnp_coord *src, void *buf, size_t cap);

/* True if run/tx_burst would make progress without time passing. */
bool dnp_engine_has_work(const struct dnp_engine *e);
/* Earliest future time at which a timer fires (UINT64_MAX if none). */
uint64_t dnp_engine_next_deadline(const struct dnp_engine *e);
/* Packets held anywhere in the node plus outstanding commands (0 = idle). */
uint64_t dnp_engine_pending(const struct dnp_engine *e);

/* Links: whether a link exists in direction dir (dimensions of size 1 have none). */
bool dnp_engine_has_link(const struct dnp_engine *e, unsigned dir);
enum dnp_link_state dnp_engine_link_state(const struct dnp_engine *e, unsigned dir);
/*
 * This node is stopping (an orderly shutdown): every link's next tx_burst
 * carries a RESET frame saying so (DNP_RESET_LEAVING), after which the
 * neighbours take the link as BROKEN at once. Call it, then tx_burst each
 * link once more, before destroying the engine.
 */
void dnp_engine_leave(struct dnp_engine *e);
/* The transport lost the link (carrier down, peer gone): mark it BROKEN now. */
void dnp_engine_link_down(struct dnp_engine *e, unsigned dir, uint64_t now);
/*
 * LO|FA|MO judged own link dir sick (its CRC-error rate over the threshold)
 * or healthy again. A sick link stays UP and carries what no detour can
 * take, but routes avoid it where a way round exists (docs/routing.md, "Sick
 * links"): its cable is announced SICK to the torus. It is used again
 * c.sick_hold after the verdict turned healthy; the hold doubles, up to 8 x,
 * each time the link turns sick again within 8 x sick_hold of being let go,
 * so that a link on the edge of the threshold does not flap the routes.
 * Errors: -EINVAL bad dir, or no link in that direction.
 */
int dnp_engine_link_sick(struct dnp_engine *e, unsigned dir, bool sick, uint64_t now);
const struct dnp_link_stats *dnp_engine_link_stats(const struct dnp_engine *e, unsigned dir);
/* The link itself (NULL if none), for read-only queries: dnp_link_estimate, dnp_link_rx_occupancy. */
const struct dnp_link *dnp_engine_link(const struct dnp_engine *e, unsigned dir);
const struct dnp_engine_stats *dnp_engine_stats(const struct dnp_engine *e);
struct dnp_router *dnp_engine_router(struct dnp_engine *e);

#endif
