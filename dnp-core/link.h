/* SPDX-License-Identifier: MIT */
/*
 * link — one virtual link of a DNP node: credit flow control per virtual
 * channel, and the reliability layer (sequence numbers, cumulative acks,
 * go-back-N retransmission, duplicate suppression, BROKEN detection).
 *
 * Sans-I/O: the caller feeds the current time and what it sent/received; the
 * link never reads a clock or touches a frame's bytes. Words are 16-byte
 * units, as in the APEnet+ LINK CTRL (EURETILE report, torus link bandwidth
 * and latency).
 *
 * Credits. The receiver models one RX FIFO per VC (fifo_words deep) and every
 * credit_period time units emits a credit carrying, per VC, its FIFO
 * occupancy and the cumulative number of words it has accepted. The sender
 * keeps an estimate 'est' of the remote occupancy per VC:
 *   - every word it commits adds to est;
 *   - DNP_CREDIT_HW (the hardware, and the lab's default): the credit value is
 *     latched at the start of a credit period and submitted at its end (the
 *     receiving node "takes C cycles to submit the proper credit"); the
 *     sender only trusts a *fresh* credit, one latched after every word it
 *     sent had arrived (received == sent): then est = occupancy. Older
 *     credits are ignored, so after a burst est stays high until a fresh
 *     credit comes back.
 *   - DNP_CREDIT_EXACT (the daemon's default): the credit is latched when it
 *     is submitted and every credit updates est = occupancy + (sent -
 *     received), the exact upper bound of the remote occupancy.
 * Every VC (up to DNP_MAX_VC = 4) has its own FIFO, counters and estimate;
 * the credit of VCs 2-3 travels in the payload word of the CREDIT frame
 * (pkt.h). A RESET frame carries the occupancies of VCs 0-1 only, so a link
 * that comes UP from one takes the peer's FIFOs of VCs 2-3 as full until the
 * first credit of the new epoch. Both ends must use the same VC count: a
 * credit without the payload word leaves VCs 2-3 of a 4-VC receiver without
 * credit (they stop once est reaches t_red, they never overflow).
 * Buffer credits (docs/protocol.md, "Buffer credits"). A word of FIFO room
 * is not a packet buffer: a receiver that keeps each frame in a buffer of its
 * own (the engine) may have words for a frame and no buffer for it. So a
 * receiver may back a number of buffers per VC (conf.bufs) and count, per
 * VC, the frames of at least DNP_BUF_MIN_WORDS words it holds (in the FIFO
 * or beyond a gap); every credit also says how many of those buffers are
 * free. The sender remembers where each such frame it sent ends in the VC's
 * word count: the credit's 'received' tells which have arrived (frames of a
 * VC arrive in order), the others are in flight, and a frame of that size
 * may start only while the free buffers outnumber the frames in flight. A
 * credit older than one already heard (a lower 'received') is not used for
 * buffers. A link that comes UP takes the free buffers the peer's RESET
 * frame reported (dnp_link_take_reset fills them too), or none until the
 * epoch's first credit when a data frame brought it UP; a fresh link used
 * without the handshake (the efficiency model, unit tests) starts without a
 * limit. Frames
 * committed word by word (dnp_link_commit of fewer words) never count.
 * Start rules: DNP_START_VCT (virtual cut-through): a packet of w words may
 * start only if est + w <= t_red. DNP_START_STOP_AT_RED: words flow while
 * est < t_red; once est reaches t_red the sender stops and resumes only when
 * a credit (fresh, under HW) shows est < t_yellow.
 *
 * Reliability. Every data frame gets a 32-bit sequence number; the receiver
 * accepts the next expected one, drops and counts duplicates, and holds a
 * frame that arrives beyond a gap (dnp_link_rx_hold: up to 'window' frames,
 * and no more words per VC than its FIFO has left) until the gap fills; it
 * acks cumulatively (the ack is "next expected", piggybacked on every frame)
 * and every CREDIT frame also carries a selective ack (dnp_link_sack): which
 * of the 64 frames after the ack it holds. The sender keeps up to 'window'
 * unacked packets (opaque pointers owned by the caller). A selective ack
 * marks a packet lost when a packet sent after it (by transmission order)
 * has arrived: it is resent alone, at once, and again only if a packet sent
 * after that resend arrives first (so at most once per round trip), or when
 * it has waited a probe interval (max(2 SRTT, SRTT + 4 RTTVAR), at most the
 * timeout) without news: a lost resend with nothing newer behind it. When the
 * oldest has waited the retransmission timeout, every sent packet the peer
 * does not hold is resent (a "round"; after the second round in a row the
 * selective acks are forgotten and everything is resent). The timeout is
 * RFC 6298's: SRTT + 4 RTTVAR from round trips measured on acks of packets
 * sent once (Karn's rule), clamped to [min_rto, max_rto], doubled by each
 * round up to max_rto; rto is its value before the first sample.
 * max_retries rounds in a row without progress, or no credit from the peer
 * for credit_timeout (init_timeout before the first one), make the link
 * BROKEN; that is reported once.
 *
 * Epochs and the reset handshake (docs/protocol.md, "Link epochs"). Every
 * frame carries the sender's link epoch (u8, 0 = none yet). A link that is not
 * UP sends RESET frames (CREDIT frames with DNP_LINK_F_RESET) instead of
 * credits and no data: a "probe" proposes an epoch, an "announce" says "I am
 * UP in this epoch". Each end has a nonce (its incarnation) in every RESET
 * frame, so a restarted peer is told apart from a late copy of a handshake.
 *   - INIT (fresh, proposal 0) and BROKEN (proposal = old epoch + 1) probe
 *     every credit_period (INIT) or reset_period (BROKEN; 0 = BROKEN is final:
 *     no probes and every frame dropped, the hardware's behaviour).
 *   - A probe or announce with the same non-zero proposal, or a newer epoch,
 *     brings a probing link UP (adopting the newer one); two fresh ends
 *     (both 0) agree on epoch 1. Going UP restarts the sequence numbers (at 0)
 *     and the credit counters; the remote FIFO estimate starts at the
 *     occupancy the peer's RESET frame reported. Unsent queued packets are
 *     renumbered; sent ones never survive a break (the caller drains them).
 *   - An UP link that hears a probe from a new nonce (the peer restarted) or
 *     a newer epoch (the peer saw the link break) breaks at once: it adopts a
 *     newer epoch, or proposes epoch + 1. Any other probe from the known
 *     nonce (the peer missed our announce, or a late copy) is answered with
 *     an announce; announces are never answered.
 *   - A frame that is not a RESET frame is accepted only by an UP link of the
 *     same epoch (or brings a probing link with that non-zero proposal UP:
 *     the peer adopted it); anything else is dropped and counted (rx_stale).
 *
 * Sequence and word counters wrap modulo 2^32. Owned by one thread.
 */
#ifndef DNP_LINK_H
#define DNP_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include "pkt.h"

enum dnp_start_rule {
	DNP_START_VCT = 0,
	DNP_START_STOP_AT_RED = 1,
};

enum dnp_credit_model {
	DNP_CREDIT_HW = 0,
	DNP_CREDIT_EXACT = 1,
};

/* Kinds of transport under a link, as the handshake carries them. */
enum dnp_xport {
	DNP_XPORT_NONE = 0, /* not said (the lab, unit tests) */
	DNP_XPORT_SHM = 1,
	DNP_XPORT_UDP = 2,
	DNP_XPORT_DPDK = 3,
	DNP_XPORT_VERBS = 4,
};

enum dnp_link_state {
	DNP_LINK_INIT = 0, /* no credit seen from the peer yet */
	DNP_LINK_UP = 1,
	DNP_LINK_BROKEN = 2,
};

struct dnp_link_conf {
	uint32_t fifo_words;     /* RX FIFO depth per VC, words */
	uint32_t t_red;          /* <= fifo_words */
	uint32_t t_yellow;       /* < t_red */
	uint64_t credit_period;  /* C, time units, > 0 */
	uint64_t credit_timeout; /* UP link with no credit for this long -> BROKEN */
	uint64_t init_timeout;   /* INIT link with no credit for this long -> BROKEN (0: never) */
	uint64_t rto;            /* initial retransmit timeout (before an RTT sample), > 0 */
	uint64_t min_rto;        /* floor of the adaptive timeout (0: rto / 4, at least 1) */
	uint64_t max_rto;     /* ceiling, also of the backoff (0: rto); min_rto <= rto <= max_rto */
	uint32_t max_retries; /* retransmit rounds without progress before BROKEN */
	uint32_t window;      /* max unacked packets, power of two, 1..65536 */
	uint64_t reset_period; /* BROKEN: probe the peer this often to come back (0: never) */
	uint32_t nonce;        /* this end's incarnation, in RESET frames (0: taken as 1) */
	uint8_t nvc;           /* 1..DNP_MAX_VC */
	uint8_t rule;          /* enum dnp_start_rule */
	uint8_t credit_model;  /* enum dnp_credit_model */
	/* The handshake: what the peer's hello must match, with nvc and fifo_words. */
	uint8_t transport; /* enum dnp_xport */
	uint8_t vc_mode;   /* the node's enum dnp_vc_mode (dnp_engine_create fills it) */
	uint8_t routing;   /* the node's enum dnp_routing (dnp_engine_create fills it) */
	uint16_t dim[3];   /* the torus size (dnp_engine_create fills it) */
	/*
	 * Buffer credits (h-dl; docs/protocol.md, "Buffer credits"): packet
	 * buffers this end backs per VC for frames of DNP_BUF_MIN_WORDS words
	 * or more, 1..DNP_BUFS_MAX; 0: it counts none (its credits say
	 * DNP_BUFS_NONE). node_bufs: optional, a counter of the whole node to
	 * which the link adds every buffer it counts in use (and takes it off
	 * again), so the node can keep the buffers it backs free.
	 */
	uint8_t bufs;
	uint32_t *node_bufs;
};

/* Counters; all monotonic. */
struct dnp_link_stats {
	uint64_t tx_frames, tx_words, tx_retx_frames, retx_rounds, tx_credits;
	uint64_t rx_frames, rx_words, rx_credits, rx_dup, rx_out_of_order, rx_overflow;
	uint64_t credit_stalls;        /* times a VC became blocked on credit (not polls) */
	uint64_t rx_stale;             /* frames of another epoch (or while not UP) dropped */
	uint64_t tx_resets, rx_resets; /* RESET frames sent and received */
	uint64_t breaks, ups;          /* transitions to BROKEN, and to UP (the first included) */
	uint64_t peer_left;            /* breaks because the peer said it was stopping */
	uint64_t fast_retx;   /* frames marked for resend by a selective ack (no timeout) */
	uint64_t rx_held;     /* frames received beyond a gap and held until it filled */
	uint64_t rtt_samples; /* round-trip samples taken (Karn: never from a resent frame) */
	uint64_t rx_refused;  /* RESET frames whose hello did not match ours (dropped) */
	uint64_t buf_stalls; /* times a VC became blocked on buffer credit (in credit_stalls too) */
	uint64_t rx_buf_overflow; /* frames beyond the buffer credit we gave (in rx_overflow too) */
	/* The same per virtual channel (new packets only; retransmissions are per link). */
	struct {
		uint64_t tx_packets, tx_words, rx_packets, rx_words, rx_overflow, credit_stalls;
	} vc[DNP_MAX_VC];
};

/* Bits returned by dnp_link_tick. */
#define DNP_LINK_EV_CREDIT_DUE 0x1u /* call dnp_link_take_credit and send a CREDIT frame */
#define DNP_LINK_EV_RETX 0x2u       /* timeout: packets were marked for resend (dnp_link_retx_*) */
#define DNP_LINK_EV_BROKEN 0x4u     /* the link just became BROKEN */

struct dnp_link;

/* Errors: -EINVAL (bad conf), -ENOMEM. */
int dnp_link_create(const struct dnp_link_conf *c, uint64_t now, struct dnp_link **out);
void dnp_link_destroy(struct dnp_link *l);
enum dnp_link_state dnp_link_state(const struct dnp_link *l);
const struct dnp_link_stats *dnp_link_stats(const struct dnp_link *l);

/* ---- sender: credits ---- */
/*
 * May a packet of 'words' words start on vc now (word and buffer credit)?
 * Counts a stall when not.
 */
bool dnp_link_can_start(struct dnp_link *l, unsigned vc, uint32_t words);
/* The same for a frame of 'words' words that must find 'room' words of credit (room >= words). */
bool dnp_link_can_start_room(struct dnp_link *l, unsigned vc, uint32_t words, uint32_t room);
/* Buffers the peer backs on vc that no frame in flight takes (UINT32_MAX: it counts none). */
uint32_t dnp_link_bufs_avail(const struct dnp_link *l, unsigned vc);
/* The sender committed 'words' new (not retransmitted) words on vc. */
void dnp_link_commit(struct dnp_link *l, unsigned vc, uint32_t words);
/* A CREDIT frame arrived (credit[] as decoded from it). Also refreshes liveness. */
void dnp_link_on_credit(struct dnp_link *l, const struct dnp_credit_vc *credit, uint64_t now);
/* Sender's current estimate of the remote occupancy of vc (for tests and the lab). */
uint32_t dnp_link_estimate(const struct dnp_link *l, unsigned vc);

/* ---- receiver: FIFO model and credit generation ---- */
/*
 * A sequenced frame of 'words' was accepted into vc's FIFO. -ENOBUFS if it
 * does not fit, in words or in buffers (drop it).
 */
int dnp_link_rx_accept(struct dnp_link *l, unsigned vc, uint32_t words);
/*
 * Is a frame of 'words' on vc within the buffer credit this end gave (one
 * of the buffers it backs is free, or it counts none for such a frame)?
 */
bool dnp_link_rx_buf_room(const struct dnp_link *l, unsigned vc, uint32_t words);
/* 'words' left vc's FIFO (delivered or forwarded). */
void dnp_link_rx_release(struct dnp_link *l, unsigned vc, uint32_t words);
uint32_t dnp_link_rx_occupancy(const struct dnp_link *l, unsigned vc);
/*
 * Burst receive (h-fast, dnp_engine_rx_burst): the expected frame 'seq' of
 * 'words' on vc, which dnp_link_rx_buf_room and the FIFO's room allowed,
 * entered vc's FIFO and left it at once (delivered from the caller's
 * frame): the link ends as after dnp_link_rx_seq, dnp_link_rx_accept and
 * dnp_link_rx_release in a row. -EINVAL (nothing done) for a vc the link
 * lacks or another seq than dnp_link_ack_value.
 */
int dnp_link_rx_pass(struct dnp_link *l, unsigned vc, uint32_t seq, uint32_t words);
/* Does a frame of this epoch pass dnp_link_rx_epoch with 0 (link UP, same epoch)? No side effect. */
bool dnp_link_epoch_ok(const struct dnp_link *l, uint8_t epoch);
/*
 * How many unacked packets dnp_link_on_ack(ack) would free (all of them
 * with max large enough), 0 for a stale or bogus ack. No side effect.
 */
unsigned dnp_link_ack_progress(const struct dnp_link *l, uint32_t ack);
/* Fills credit[0..nvc) with the values to send now and schedules the next credit. */
void dnp_link_take_credit(struct dnp_link *l, uint64_t now, struct dnp_credit_vc *credit);
/*
 * Would a credit now tell the sender something that matters soon? True when,
 * on some VC, the sender's estimate as of our last credit plus the words
 * accepted since (what it believes, frames in flight aside) has reached
 * t_yellow / 2 and is above the real occupancy (words left the FIFO since).
 * Engines that delay credits (dnp_engine_conf.ack_delay) send one at once then.
 */
bool dnp_link_credit_stale(const struct dnp_link *l);

/* ---- reliability ---- */
bool dnp_link_window_full(const struct dnp_link *l);
/* Queues pkt as the next sequenced frame; returns its seq. Window must not be full. */
uint32_t dnp_link_seq_push(struct dnp_link *l, void *pkt, uint64_t now);
/* How many more packets the window takes now (0: full). */
unsigned dnp_link_window_room(const struct dnp_link *l);
/*
 * Send-side burst: queues pkts[0..n) as the next n sequenced frames, in
 * order, exactly as n calls of dnp_link_seq_push would; returns the seq of
 * the first (the others follow it). n must be <= dnp_link_window_room (else
 * nothing is queued).
 */
uint32_t dnp_link_seq_push_run(struct dnp_link *l, void *const *pkts, unsigned n, uint64_t now);
/*
 * Processes a cumulative ack from the peer: pops every packet with seq < ack
 * into freed[] (at most max; call again while it returns max). Returns the
 * number popped. Acks outside the window are ignored.
 */
unsigned dnp_link_on_ack(struct dnp_link *l, uint32_t ack, void **freed, unsigned max,
			 uint64_t now);
/*
 * Receiver: classify an arriving seq. 0 = accept (expected advances),
 * -EALREADY duplicate (older than expected, or already held), -EAGAIN
 * beyond a gap (the caller may dnp_link_rx_hold it).
 */
int dnp_link_rx_seq(struct dnp_link *l, uint32_t seq);
/*
 * Receiver: hold pkt (seq beyond a gap, words on vc) until the gap fills.
 * Errors: -ERANGE seq not within the window after the expected one,
 * -ENOBUFS its words do not fit beside the VC's FIFO occupancy and what is
 * held already, or it needs a buffer and none of those backed is free,
 * -EINVAL bad vc, -EALREADY held already.
 */
int dnp_link_rx_hold(struct dnp_link *l, uint32_t seq, unsigned vc, uint32_t words, void *pkt);
/*
 * Receiver: the held packet whose seq is the expected one, taken out of the
 * hold (the caller then accepts it like a fresh arrival), or NULL.
 */
void *dnp_link_rx_unhold(struct dnp_link *l);
/* Receiver: the selective ack: bit i set = frame ack + 1 + i is held. */
uint64_t dnp_link_sack(const struct dnp_link *l);
/* Receiver: takes every held packet out (link broken): fills out[] up to max, returns count. */
unsigned dnp_link_rx_drain(struct dnp_link *l, void **out, unsigned max);
/*
 * Sender: a selective ack arrived with cumulative 'ack' (after
 * dnp_link_on_ack with the same ack). Marks packets lost (see above) for
 * resending; returns how many were newly marked. Ignored unless ack is the
 * oldest unacked seq.
 */
unsigned dnp_link_on_sack(struct dnp_link *l, uint32_t ack, uint64_t sack, uint64_t now);
/* Sender: index (0 = oldest unacked) of the oldest packet marked for resend, or -1. */
int dnp_link_retx_next(const struct dnp_link *l);
/* Sender: number of packets marked for resend. */
unsigned dnp_link_retx_due(const struct dnp_link *l);
/* The current retransmission timeout and smoothed round trip (0 before a sample). */
uint64_t dnp_link_rto(const struct dnp_link *l);
uint64_t dnp_link_srtt(const struct dnp_link *l);
/* Receiver: the ack to piggyback on the next frame sent to the peer. */
uint32_t dnp_link_ack_value(const struct dnp_link *l);
/* Number of unacked packets, and the i-th oldest (0 = oldest) with its seq. */
unsigned dnp_link_unacked(const struct dnp_link *l);
void *dnp_link_unacked_at(const struct dnp_link *l, unsigned i, uint32_t *seq);
/*
 * The i-th oldest unacked packet (0 = oldest) was just put on the wire (first
 * time or resend; this clears its resend mark). The retransmission timer runs
 * from the oldest packet's last transmission, so a packet that waited in the
 * send queue is not resent early.
 */
void dnp_link_sent(struct dnp_link *l, unsigned i, uint64_t now);
/*
 * Send-side burst: unacked packets first..first+n (of 'words' words in all)
 * were just put on the wire for the first time, in this order: as
 * dnp_link_sent for each, then dnp_link_stats_tx for each (not resends).
 */
void dnp_link_sent_run(struct dnp_link *l, unsigned first, unsigned n, uint32_t words,
		       uint64_t now);
/*
 * After DNP_LINK_EV_RETX the caller calls dnp_link_retx_done(now) to restart
 * the timer and resends the marked packets (dnp_link_retx_next, then
 * dnp_link_sent for each), as it does after dnp_link_on_sack.
 */
void dnp_link_retx_done(struct dnp_link *l, uint64_t now);
/* Removes every unacked packet (link broken): fills out[] up to max, returns count. */
unsigned dnp_link_drain(struct dnp_link *l, void **out, unsigned max);

/* ---- epochs and the reset handshake ---- */
/* Epoch to stamp on frames sent now (the proposal while not UP). */
uint8_t dnp_link_epoch(const struct dnp_link *l);
/* Must a RESET frame go out now (an announce, or a prompt probe), before any credit? */
bool dnp_link_reset_due(const struct dnp_link *l);
/* Should control frames be RESET frames (not UP, or an announce is owed)? */
bool dnp_link_sends_reset(const struct dnp_link *l);
/* Does a BROKEN link come back (reset_period != 0)? */
bool dnp_link_recovers(const struct dnp_link *l);
/*
 * Fills the fields of a RESET frame to send now: returns its epoch; credit[]
 * gets the occupancies, our nonce and the DNP_RESET_* flags (pkt.h). Schedules
 * the next probe.
 */
uint8_t dnp_link_take_reset(struct dnp_link *l, uint64_t now, struct dnp_credit_vc *credit);
/* Bits returned by dnp_link_on_reset and dnp_link_rx_epoch. */
#define DNP_LINK_RST_DOWN 0x1u /* the link was UP and broke: drain and fail its packets */
#define DNP_LINK_RST_UP 0x2u   /* the link is UP in a new epoch (after DOWN, if both) */
/*
 * This end is stopping (an orderly shutdown): its RESET frames say so
 * (DNP_RESET_LEAVING), and one is due at once; the peer then takes the link
 * as BROKEN without waiting for its credit timeout.
 */
void dnp_link_leave(struct dnp_link *l);
/* A RESET frame arrived (epoch and credit[] as decoded). Returns DNP_LINK_RST_* bits. */
unsigned dnp_link_on_reset(struct dnp_link *l, uint8_t epoch, const struct dnp_credit_vc *credit,
			   uint64_t now);
/*
 * Any other valid frame arrived with 'epoch'. Returns -ESTALE (drop it:
 * another epoch, or the link is not UP), or DNP_LINK_RST_UP when it brought a
 * probing link UP (then process it), or 0.
 */
int dnp_link_rx_epoch(struct dnp_link *l, uint8_t epoch, uint64_t now);

/*
 * The link handshake (docs/protocol.md, "The link handshake"). Every RESET
 * frame carries the sender's hello: the torus size, the transport kind, the
 * VC count, the VC mode, the RX FIFO depth and the largest frame. A RESET
 * frame whose hello differs from this end's (or has none: an older SoftDNP)
 * is refused: it changes nothing but the refusal record, so the link never
 * comes UP with a peer it would misread, and the probes go on, so a peer
 * restarted with matching settings brings it UP.
 */
enum dnp_refuse_field {
	DNP_REFUSE_NONE = 0,
	DNP_REFUSE_NO_HELLO,  /* no hello: a peer of an older version */
	DNP_REFUSE_BAD,       /* a hello that does not parse (magic, length, reserved bytes) */
	DNP_REFUSE_VERSION,   /* another version of the hello */
	DNP_REFUSE_TORUS,     /* values: x | y << 16 | z << 32 */
	DNP_REFUSE_TRANSPORT, /* enum dnp_xport */
	DNP_REFUSE_VCS,
	DNP_REFUSE_VC_MODE, /* enum dnp_vc_mode */
	DNP_REFUSE_FIFO,    /* fifo_words */
	DNP_REFUSE_MAX_FRAME,
	DNP_REFUSE_ROUTING, /* enum dnp_routing: a DOR node drops adaptive packets as misrouted */
};

struct dnp_link_refusal {
	uint8_t field;       /* enum dnp_refuse_field; DNP_REFUSE_NONE: the last hello matched */
	uint64_t here, peer; /* this end's value and the peer's */
	uint64_t frames;     /* RESET frames refused since the last one accepted */
	uint32_t episode;    /* changes when a refusal starts, or its field or values change */
};

/* This end's hello, as a RESET frame's payload. */
void dnp_link_hello(const struct dnp_link *l, uint8_t out[DNP_HELLO_BYTES]);
/*
 * A RESET frame arrived with this payload (len bytes): 0 when its hello
 * matches (the refusal record clears; go on with dnp_link_on_reset), or
 * -ECONNREFUSED (the record names the first field that differs; drop the
 * frame). Only the frame's bytes are looked at: no time, no state change.
 */
int dnp_link_on_hello(struct dnp_link *l, const uint8_t *payload, size_t len);
const struct dnp_link_refusal *dnp_link_refusal(const struct dnp_link *l);
/*
 * The refusal in words, e.g. "vcs here 2 peer 4", "torus here 2x2x2 peer
 * 4x2x2", "hello missing (the peer is an older SoftDNP)"; "" when none. As
 * snprintf: returns the length it needed.
 */
int dnp_link_refusal_str(const struct dnp_link_refusal *r, char *buf, size_t cap);
/* "shm", "udp", "dpdk", "verbs", "none", or "?"; and back (DNP_XPORT_NONE if unknown). */
const char *dnp_xport_name(unsigned x);
uint8_t dnp_xport_code(const char *name);

/* ---- time ---- */
/* Returns DNP_LINK_EV_* bits due at 'now'. */
unsigned dnp_link_tick(struct dnp_link *l, uint64_t now);
/* Earliest time at which dnp_link_tick may return something new. */
uint64_t dnp_link_next_deadline(const struct dnp_link *l);
/* Force BROKEN (e.g. the transport lost carrier; it proposes a new epoch if it recovers).
 * Returns true if it was not BROKEN. */
bool dnp_link_set_broken(struct dnp_link *l);
/* Called for every valid frame from the peer (any kind): liveness for INIT->UP is credit-only. */
void dnp_link_stats_rx(struct dnp_link *l, uint32_t words);
void dnp_link_stats_tx(struct dnp_link *l, uint32_t words, bool retx);

#endif
