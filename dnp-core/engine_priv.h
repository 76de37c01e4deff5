/* SPDX-License-Identifier: MIT */
/*
 * engine_priv.h — the inside of the engine (engine.h is its contract): the
 * struct dnp_engine, its small shared helpers, and the functions the engine's
 * files call in each other. Nothing outside dnp-core/engine*.c includes it.
 *
 * The engine is one sans-I/O state machine split by concern:
 *   engine.c          glue: configuration, create/destroy, the run loop
 *                     (dnp_engine_run), timeouts, tx_burst, events, ports,
 *                     buffers and the link accessors
 *   engine_cmd.c      command intake (dnp_engine_submit), the command slots,
 *                     injection of command packets and GET responses
 *   engine_deliver.c  delivery of packets addressed to this node (PUT,
 *                     GET request and response; SEND via engine_send.c)
 *   engine_send.c     SEND targets (posts) and SEND reassembly
 *   engine_cmpl.c     completion reports: CMPL packets and their batching
 *   engine_route.c    the switch (input FIFO heads to links or delivery) and
 *                     routing state (cables, ROUTE announcements, first hops)
 *   engine_link.c     link events (broken, up again) and frame intake
 *                     (dnp_engine_rx)
 *   engine_outcome.c  outcome history, QUERY packets and resends (completion
 *                     recovery, docs/protocol.md "Outcome queries")
 *   engine_diag.c     DIAG packets of the LO|FA|MO fault manager
 * The library is built as one unity translation unit (dnp-core/meson.build),
 * so functions declared here are still inlined across these files; every
 * file also compiles on its own (the fuzz harnesses do so).
 *
 * Packet buffers come from two preallocated pools (small frames and full
 * frames). A packet is owned by exactly one place at a time: an input FIFO
 * (per link and VC, plus the local control FIFO), a link's unacked list
 * (sent or waiting for its first transmission), a GET responder queue, or
 * the free list.
 */
#ifndef DNP_ENGINE_PRIV_H
#define DNP_ENGINE_PRIV_H

#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arb.h"
#include "coll.h"
#include "engine.h"

#define NIN (DNP_NDIRS + 1) /* six links and the local input */
#define SMALL_FRAME 256u    /* frames up to this size use the small pool */
#define MAX_RUN_ROUNDS 64   /* bound on work done by one dnp_engine_run */
#define NO_SLOT UINT32_MAX

struct pkt {
	struct pkt *next;
	struct dnp_pkt_hdr h;
	uint32_t flen;
	uint32_t words;
	uint32_t seq;
	uint8_t in_dir, in_vc;
	uint8_t big;
	uint8_t hops_tx; /* hop count the frame carries on its next link */
	uint8_t tc;      /* class it is arbitrated by (engine_pkt_class), set on input */
	uint8_t *frame;
	/*
	 * A delivered GET request becomes its own responder job: h describes
	 * the request, these fields what is left to send back.
	 */
	uint64_t job_off;    /* bytes of the response sent so far */
	uint64_t job_dst_va; /* requester's buffer */
	uint32_t job_dst_key;
	uint32_t job_len;
	uint8_t job_q;    /* responder queue (first-hop direction towards the requester) */
	uint16_t job_via; /* route plan towards the requester */
	/*
	 * One pass (conf.tx_direct): the payload is not in frame but in port
	 * desc_port's memory at desc_va (h.len bytes), read at each write-out
	 * (engine.c, tx_desc_write); frame holds the header and footer, its
	 * CRC field stays zero. Cleared when the buffer is freed.
	 */
	uint8_t desc;
	uint8_t desc_port;
	uint64_t desc_va;
};

struct pktq {
	struct pkt *head, *tail;
	uint32_t n;
};

struct xlink {
	struct dnp_link *l;
	bool credit_pending;
	bool ack_dirty;     /* ack or FIFO occupancy changed since the last credit we sent */
	bool ack_urgent;    /* ... and the peer must hear it at once (duplicate or gap) */
	uint64_t ack_since; /* when ack_dirty was set */
	uint32_t ack_told;  /* the ack of the last frame we sent */
	uint32_t next_tx;   /* unacked[0..next_tx) were sent; unacked[next_tx] goes next */
	bool was_up;        /* UP at least once: later UPs are reported as LINK events */
	bool direct;        /* its driver uses dnp_engine_tx_burst_into (conf.tx_direct) */
	/*
	 * The header template of the last injection run on this link (tmpl_ok:
	 * made; engine_cmd.c, inj_run_encode): kept from run to run, used
	 * while a packet's fields match the ones it fixes.
	 */
	bool tmpl_ok;
	struct dnp_pkt_tmpl tmpl;
	uint8_t cframe[DNP_CREDIT_MAX_FRAME]; /* credits of VCs 2-3 need the payload word */
	uint8_t rframe[DNP_FRAME_OVERHEAD + DNP_HELLO_BYTES]; /* RESET frame with its hello */
};

/* The ack or our FIFO changed: a credit is due (now if urgent, else see ack_delay). */
static inline void engine_ack_mark(struct xlink *x, uint64_t now, bool urgent)
{
	if (!x->ack_dirty) {
		x->ack_dirty = true;
		x->ack_since = now;
	}
	x->ack_urgent |= urgent;
}

enum slot_state {
	SLOT_FREE = 0,
	SLOT_ACTIVE
};

struct slot {
	uint8_t state;
	uint8_t orphan;    /* its port closed: complete silently */
	uint8_t injecting; /* still in an injection queue */
	uint8_t port;
	uint8_t queue;   /* injection queue index (first-hop dir, or LOCAL) */
	uint8_t qtc;     /* ... and its class (0 with arbitration off: one queue per dir) */
	uint32_t next;   /* injection queue link */
	uint32_t msg_id; /* on the wire */
	uint64_t offset; /* bytes injected so far */
	uint64_t t_submit;
	struct dnp_cmd c;
	struct dnp_coord dst;
	uint16_t via;   /* route plan (route.h): 0 direct, else through a via */
	uint8_t hop_vc; /* VC of its first hop, as routed while router.ver was rver */
	uint32_t rver;
	uint64_t got;    /* GET: response bytes received */
	uint64_t t_wait; /* its last packet or its last QUERY left (query_timeout) */
	uint8_t retry;   /* sent again after "not delivered": its packets say so */
	uint8_t resends; /* times it was sent again */
	uint8_t ask;     /* a QUERY is due at once (a link broke under its packets) */
	uint8_t sent;    /* a packet of this attempt left: the target may hold some of it */
	uint8_t data;    /* enum dnp_ev_data when known before it ends (else from 'sent') */
	uint8_t rd_ev;   /* DNP_CMD_F_SRC_EVENT: its TX_READ is due, an event slot reserved */
	/* congestion management (engine_congest.c) */
	uint8_t cg_on;    /* its packets count in its destination's window */
	uint8_t cg_held;  /* it waited for that window (counted once in cg_held) */
	uint32_t cg_pkts; /* its packets, counted while cg_on */
	uint32_t cg_seq;  /* its place in its destination's sequence when it started */
};

/*
 * The PUT a source node is sending here, fragment by fragment: a source
 * sends one message after the other to a node, in order on one path, so a
 * fragment out of that sequence means some were lost with a link (a path
 * that broke, and then came back or was rerouted): the message then ends
 * with an error instead of an RX event (docs/routing.md).
 */
struct puttrack {
	uint32_t src_id;
	uint32_t msg_id;
	uint32_t next; /* offset of the fragment expected next */
	uint8_t port;  /* source port */
	uint8_t ok;    /* every fragment so far arrived, in order */
};
#define PUTTRACK_MAX 65536u

struct evq {
	struct dnp_event *ev;
	uint32_t head, tail; /* free-running */
	uint32_t reserved;   /* slots promised to outstanding commands (and their TX_READs) */
	uint32_t quiet;      /* commands ended with no event, not yet taken by the driver */
	bool open;
	/*
	 * A message gave up waiting for room (deliver_timeout): until the
	 * application drains an event, the next ones fail at once instead of
	 * each waiting again.
	 */
	bool overrun;
	uint32_t send_head, send_tail; /* SEND-target posts, indices into e->posts */
	/* Completion counters (dnp_engine_cntr_take): DNP_CNTR_MAX of them, in e->cntrmem. */
	struct dnp_engine_cntr *cntr;
	uint64_t cntr_dirty; /* bit i: counter i changed since the driver last took them */
};

struct post {
	uint64_t va, len;
	uint32_t next;
	uint8_t used;
};

struct sendasm {
	bool active;
	struct dnp_coord src;
	uint8_t src_port, dst_port;
	uint32_t msg_id;
	uint64_t va, len;
	uint32_t msg_len;
	uint32_t got;    /* payload bytes written so far (whole: got == msg_len) */
	uint64_t t_last; /* when its latest fragment arrived (reasm_timeout) */
};

/*
 * What this node knows of a cable's state (docs/routing.md): the cable is
 * the + link of 'node' in dimension 'dim'; 'ver' orders reports (newer
 * wins, compared as serial numbers); 'pend' has a bit per own link on which
 * the state must still be told.
 */
struct cable {
	uint32_t node;
	uint8_t dim;
	uint8_t state; /* enum dnp_cable_state */
	uint8_t pend;
	uint16_t ver;
};
#define CABLES 256
#define ROUTE_ENTRY 8u /* node u32, dim u8, state u8, ver u16 */

/*
 * LO|FA|MO's verdict on an own link (dnp_engine_link_sick) and its
 * hysteresis: the link is avoided while 'avoid'; after the verdict turns
 * healthy it is let go at release_at (sick_hold x mult later). mult doubles,
 * up to SICK_MULT_MAX, when the link turns sick again within
 * SICK_MULT_MAX x sick_hold of being let go, and starts at 1 otherwise.
 */
struct sickness {
	bool sick, avoid, released;
	uint8_t mult;
	uint64_t release_at, released_at;
};
#define SICK_MULT_MAX 8u
#define ROUTE_MAX_ENTRIES 32u

/*
 * First hops of packets that start here, by destination: dnp_route_step
 * from this node at injection (DNP_DIR_LOCAL, VC 0) depends only on the
 * router, whose version says when it changed, and on dst and via.
 */
struct hopc {
	uint32_t ver; /* router.ver it was computed under (0: empty) */
	uint32_t dst_id;
	uint16_t via;
	struct dnp_hop hop;
};
#define HOPC 64u /* entries, direct-mapped by destination id */

/*
 * Success reports waiting to leave as one CMPL frame (docs/protocol.md,
 * "Completion reports"): the ids of messages this node delivered whose
 * sender is 'to', port 'port'. n == 0: unused.
 */
struct cmplb {
	struct dnp_coord to;
	uint8_t port;
	uint8_t n;
	uint8_t ce; /* congestion ecn: a message it reports came marked (DNP_FT_CE) */
	uint32_t ids[1 + DNP_CMPL_MAX_EXTRA];
};
#define CMPLB 4u /* batches open at once (distinct senders in one pass) */
#define CMPL_FRAME_MAX (DNP_FRAME_OVERHEAD + DNP_CMPL_MAX_EXTRA * 4u) /* the largest CMPL frame */
static_assert(CMPL_FRAME_MAX <= SMALL_FRAME, "a full batch fits a small packet buffer");

/*
 * The outcome of a message this node received from one source node, by the
 * slot index of its id (msg_id & 0xffff, < outcome_slots): kept until a
 * later message of the same slot replaces it (docs/protocol.md, "Outcome
 * queries").
 */
enum outcome_state {
	OUT_EMPTY = 0,
	OUT_DONE,     /* reported with 'status' */
	OUT_REFUSED,  /* declared not delivered: its packets are not applied */
	OUT_RETRYING, /* ... and its resend is being applied */
	OUT_RETRIED   /* the resend was reported with 'status'; the original stays refused */
};
struct outcome {
	uint32_t msg_id;
	uint8_t state;  /* enum outcome_state */
	uint8_t status; /* positive errno, 0 = success */
};
/* Outcome entries at most (source nodes x slots): beyond it, no history. */
#define OUTCOME_MAX (1u << 23)

/* The head of an input FIFO waiting for room in a port's event queue. */
struct inwait {
	bool on;
	uint64_t since;
};

struct dnp_engine {
	struct dnp_engine_conf c;
	struct dnp_router router;
	struct dnp_buftab *bt;
	uint32_t self_id;
	struct xlink links[DNP_NDIRS];
	struct pktq in[NIN][DNP_MAX_VC];
	uint32_t in_mask; /* bit in * DNP_MAX_VC + vc: in[in][vc] may hold packets */
	struct inwait wait[NIN][DNP_MAX_VC]; /* deliver_timeout */
	struct inwait lo_wait; /* the same for the head of the loopback injection queue */
	struct pkt *free_small, *free_big;
	struct pkt *pkts;
	uint8_t *frames;
	uint32_t npkts, pkts_used;
	uint32_t big_free;    /* buffers on free_big */
	uint32_t inj_reserve; /* big buffers injection leaves to reception (engine_pool_has_inj) */
	/*
	 * Buffer credits: big buffers the input VCs back (each link's
	 * conf.bufs per VC), and how many of those the links count in use
	 * (link.h, node_bufs). The rest, bufs_resv - bufs_used, stays free.
	 */
	uint32_t bufs_resv, bufs_used;
	struct slot *slots;
	uint32_t free_slot; /* free list through slot.next */
	uint32_t nactive;
	uint32_t gen;
	uint32_t qhead[NIN][DNP_ARB_CLASSES], qtail[NIN][DNP_ARB_CLASSES];
	struct pktq resp[NIN]; /* GET responder jobs, by first-hop direction */
	struct evq *ports;
	struct dnp_event *evmem;
	struct dnp_engine_cntr *cntrmem; /* max_ports * DNP_CNTR_MAX completion counters */
	struct post *posts;
	uint32_t free_post;
	struct sendasm *sends;
	uint32_t nsends; /* active reassemblies */
	struct dnp_keygen keys;
	uint64_t next_timeout_check;
	uint64_t now; /* the latest time the driver gave (for calls that take none) */
	bool dirty;
	uint8_t scratch[DNP_MAX_PAYLOAD];
	uint8_t rxcopy[DNP_MAX_FRAME]; /* private copy of a frame no packet buffer could take */
	uint8_t rr;
	/* LO|FA|MO: DIAG packets delivered here, waiting for the fault manager. */
	struct {
		struct dnp_coord src;
		uint8_t len;
		uint8_t data[DNP_ENGINE_DIAG_MAX];
	} diag[DNP_ENGINE_DIAG_QUEUE];
	uint32_t diag_head, diag_tail; /* free-running */
	struct cable cables[CABLES];
	uint32_t ncables;
	struct sickness sick[DNP_NDIRS];
	uint8_t sick_held;     /* bit per own link avoided, healthy again, waiting for release_at */
	struct puttrack *puts; /* by source node id modulo nputs */
	uint32_t nputs;
	struct hopc hopc[HOPC];
	struct outcome *outcomes; /* by source node id, then slot index; NULL: none */
	uint32_t outcome_slots;   /* per source node, a power of two */
	uint32_t outcome_rows;    /* source nodes: the torus size */
	uint32_t nrefused;        /* entries in state OUT_REFUSED, OUT_RETRYING or OUT_RETRIED */
	struct cmplb cmplb[CMPLB];
	uint32_t ncmplb;     /* batches with n > 0 */
	uint32_t cmplb_next; /* the batch a new sender takes over when all are open */
	struct dnp_engine_stats st;
	/* congestion management (engine_congest.c); NULL when it is off */
	struct cgdst *cg;
	uint32_t cg_thresh; /* words of a VC's estimated remote occupancy that mark a packet */
	uint32_t cg_max;    /* window ceiling, packets */
	bool cg_rx_ce;      /* the packet being delivered carries DNP_FT_CE */
	/*
	 * Traffic classes (arbitration on; engine_route.c, "class arbiter"):
	 * the arbiter's state, packets of each class in each input FIFO, a bit
	 * per FIFO (in * DNP_MAX_VC + vc) holding some of class c, and where
	 * each class's round robin over its candidates resumes.
	 */
	struct dnp_arb arb;
	uint32_t in_tc[NIN][DNP_MAX_VC][DNP_ARB_CLASSES];
	uint32_t tc_mask[DNP_ARB_CLASSES];
	uint8_t arb_rr[DNP_ARB_CLASSES];
	struct dnp_coll *coll; /* collectives (coll.c): groups and their running instances */
};

/*
 * The class a packet is arbitrated by: its footer class for data packets;
 * reports, queries, ROUTE and DIAG packets go as the top class (small, and
 * they free resources at their sender).
 */
static inline unsigned engine_pkt_class(const struct dnp_pkt_hdr *h)
{
	if (h->kind == DNP_PKT_PUT || h->kind == DNP_PKT_SEND || h->kind == DNP_PKT_GET_REQ ||
	    h->kind == DNP_PKT_GET_RESP)
		return dnp_pkt_tc(h);
	return DNP_ARB_CLASSES - 1;
}

/*
 * Big buffers free beyond those kept for frames within buffer credit
 * (docs/protocol.md, "Buffer credits"). The pool keeps big_free >=
 * bufs_resv - bufs_used: a frame an input VC gave credit for takes one of
 * the kept buffers (engine_pkt_get_kept), every other use takes a spare one,
 * and a packet that leaves its input FIFO for a link's unacked list (its
 * buffer no longer counted by the input VC) needs a spare one too
 * (engine_can_start).
 */
static inline uint32_t engine_big_spare(const struct dnp_engine *e)
{
	uint32_t kept = e->bufs_resv - e->bufs_used;

	return e->big_free > kept ? e->big_free - kept : 0;
}

static inline struct pkt *pkt_take(struct dnp_engine *e, struct pkt **fl)
{
	struct pkt *p = *fl;

	*fl = p->next;
	p->next = NULL;
	e->pkts_used++;
	e->big_free -= p->big;
	return p;
}

/* A buffer for a frame of flen bytes (a small frame may borrow a spare big one), or NULL. */
static inline struct pkt *engine_pkt_get(struct dnp_engine *e, uint32_t flen)
{
	if (flen <= SMALL_FRAME && e->free_small)
		return pkt_take(e, &e->free_small);
	return engine_big_spare(e) ? pkt_take(e, &e->free_big) : NULL;
}

/* A big buffer for a frame an input VC gave buffer credit for: the kept ones too. */
static inline struct pkt *engine_pkt_get_kept(struct dnp_engine *e)
{
	return e->free_big ? pkt_take(e, &e->free_big) : NULL;
}

static inline void engine_pkt_put(struct dnp_engine *e, struct pkt *p)
{
	struct pkt **fl = p->big ? &e->free_big : &e->free_small;

	p->next = *fl;
	*fl = p;
	if (p->desc) {
		p->desc = 0;
		e->st.tx_onepass_held--;
	}
	e->pkts_used--;
	e->big_free += p->big;
}

static inline bool engine_pool_has(const struct dnp_engine *e, uint32_t flen)
{
	return (flen <= SMALL_FRAME && e->free_small) || engine_big_spare(e);
}

/* Buffers free for any use: small ones and spare big ones. */
static inline uint32_t engine_pool_spare(const struct dnp_engine *e)
{
	return e->npkts - e->pkts_used - e->big_free + engine_big_spare(e);
}

/*
 * May injection take a buffer for a frame of flen bytes? Only while more
 * than inj_reserve spare big buffers stay free for forwarding and for
 * frames from links without buffer credits (a pool set by hand too small
 * for them): without a reserve, nodes that inject as fast as their windows
 * allow (nearest-neighbour traffic near saturation, docs/lab.md "Sweep")
 * fill their pools with their own unacknowledged packets, and forward or
 * take in nothing until acks come back.
 */
static inline bool engine_pool_has_inj(const struct dnp_engine *e, uint32_t flen)
{
	return flen <= SMALL_FRAME ? engine_pool_has(e, flen) :
				     engine_big_spare(e) > e->inj_reserve;
}

/* Two buffers for small frames free (an error report and the batch before it)? */
static inline bool engine_pool_has_two_small(const struct dnp_engine *e)
{
	return engine_pool_spare(e) >= 2; /* any spare buffer takes a small frame */
}

/*
 * A frame from a link is kept only while this many buffers stay free for
 * the reports of the deliveries before it (an error report and the batch it
 * flushes): otherwise incoming frames could take the last buffers, and the
 * packets at the heads of the input FIFOs would wait for ever for a buffer
 * for their report, holding every buffer that could free one. A frame not
 * kept still gives its ack and credits; its sender sends it again.
 */
#define RX_RESERVE 2u

static inline bool engine_pool_has_rx(const struct dnp_engine *e, uint32_t flen)
{
	return engine_pool_has(e, flen) && engine_pool_spare(e) > RX_RESERVE;
}

static inline void engine_q_push(struct pktq *q, struct pkt *p)
{
	p->next = NULL;
	if (q->tail)
		q->tail->next = p;
	else
		q->head = p;
	q->tail = p;
	q->n++;
}

/* Queues p on input FIFO (in, vc), which engine_route_inputs then visits. */
static inline void engine_in_push(struct dnp_engine *e, unsigned in, unsigned vc, struct pkt *p)
{
	engine_q_push(&e->in[in][vc], p);
	e->in_mask |= 1u << (in * DNP_MAX_VC + vc);
	if (e->c.arbitration) {
		p->tc = (uint8_t)engine_pkt_class(&p->h);
		e->in_tc[in][vc][p->tc]++;
		e->tc_mask[p->tc] |= 1u << (in * DNP_MAX_VC + vc);
	}
}

/*
 * A packet made here (a report, DIAG or ROUTE; header in p->h, frame of flen
 * bytes encoded) joins the local input FIFO, where it starts like a command.
 */
static inline void engine_local_push(struct dnp_engine *e, struct pkt *p, uint32_t flen)
{
	p->flen = flen;
	p->words = flen / DNP_WORD_BYTES;
	p->in_dir = DNP_DIR_LOCAL;
	p->in_vc = 0;
	p->hops_tx = 0;
	engine_in_push(e, DNP_DIR_LOCAL, 0, p);
	e->dirty = true;
}

static inline struct pkt *engine_q_pop(struct pktq *q)
{
	struct pkt *p = q->head;

	if (p) {
		q->head = p->next;
		if (!q->head)
			q->tail = NULL;
		q->n--;
		p->next = NULL;
	}
	return p;
}

static inline uint32_t engine_evq_used(const struct evq *q)
{
	return q->tail - q->head;
}

/* Room for an event nobody reserved (RX events). */
static inline bool engine_evq_room(const struct dnp_engine *e, const struct evq *q)
{
	return engine_evq_used(q) + q->reserved < e->c.event_queue;
}

static inline void engine_evq_push(struct dnp_engine *e, struct evq *q, const struct dnp_event *ev)
{
	q->ev[q->tail & (e->c.event_queue - 1)] = *ev;
	q->tail++;
	e->st.events++;
}

static inline bool engine_coord_self(const struct dnp_engine *e, struct dnp_coord c)
{
	return dnp_coord_eq(c, e->c.self);
}

/* The node whose command a data packet serves (where errors must go). */
static inline struct dnp_coord engine_pkt_owner(const struct dnp_pkt_hdr *h, uint8_t *port)
{
	if (h->kind == DNP_PKT_GET_RESP) {
		*port = h->dst_port;
		return h->dst;
	}
	*port = h->src_port;
	return h->src;
}

static_assert(DNP_VIA_RSVD == DNP_PKT_VIA_RSVD, "route.h and pkt.h agree on the via code");
static_assert(NIN * DNP_MAX_VC <= 32, "every input FIFO has a bit in in_mask");
static_assert(SMALL_FRAME / DNP_WORD_BYTES + 1 == DNP_BUF_MIN_WORDS,
	      "exactly the frames too big for a small buffer take buffer credit");

static inline bool engine_link_usable(const struct dnp_engine *e, unsigned dir)
{
	return dir < DNP_NDIRS && e->links[dir].l &&
	       dnp_link_state(e->links[dir].l) != DNP_LINK_BROKEN;
}

/*
 * Arbitration on: may output dir take another packet? Only while nothing
 * waits there for its first transmission, so that the class order is
 * decided when the output is about to be free, not behind packets already
 * committed to it (a top-class packet then waits for at most the frame on
 * the wire and one more).
 */
static inline bool engine_out_free(const struct dnp_engine *e, unsigned dir)
{
	const struct xlink *x = &e->links[dir];

	return !e->c.arbitration || dnp_link_unacked(x->l) <= x->next_tx;
}

/*
 * Top-class remedies (engine.h, arb_low_payload, arb_top_reserve): the
 * largest payload of a packet of class tc, and whether a packet of class
 * tc and 'words' words may start on (l, vc) now.
 */
static inline uint32_t engine_seg_max(const struct dnp_engine *e, unsigned tc)
{
	return e->c.arb_low_payload && tc < DNP_ARB_CLASSES - 1 ? e->c.arb_low_payload :
								  DNP_MAX_PAYLOAD;
}

static inline bool engine_can_start(const struct dnp_engine *e, struct dnp_link *l, unsigned vc,
				    unsigned tc, uint32_t words)
{
	/* leaving an input FIFO that backed its buffer: a spare one takes its place */
	if (e->bufs_resv && words >= DNP_BUF_MIN_WORDS && !engine_big_spare(e))
		return false;
	return dnp_link_can_start_room(
		l, vc, words, tc < DNP_ARB_CLASSES - 1 ? words + e->c.arb_top_reserve : words);
}

/* The create-time check of those two settings (engine_route.c): both 0 with arbitration off. */
bool engine_top_conf_ok(const struct dnp_engine_conf *c);

/* The packet became a GET responder job: the caller moves it to e->resp[p->job_q]. */
#define DELIVER_KEPT 1
/* The last fragment of a PUT/SEND waits for room in its port's event queue. */
#define DELIVER_FULL 2

/* ------------------------------------------------ commands (engine_cmd.c) */
/*
 * A command lives in a slot from dnp_engine_submit to its one completion
 * event. While 'injecting' it sits in the injection queue of its first hop
 * (qhead/qtail by direction, DNP_DIR_LOCAL for loopback); after its last
 * packet left it waits for its completion report (engine_handle_cmpl).
 * Its port's event queue holds a slot for that event from submission on
 * (evq.reserved), and one more for its TX_READ when it asked for one
 * (slot.rd_ev), so neither ever waits for room. A success with
 * DNP_CMD_F_NO_EVENT gives its slot back and counts in evq.quiet instead.
 */

/* The live command with this wire id, or NULL (ended, or never ours). */
struct slot *engine_slot_by_msg(struct dnp_engine *e, uint32_t msg_id);
/*
 * Ends a command with its one completion event (status 0 or -errno) and
 * frees its slot; a command still in an injection queue is left for the
 * injector, which completes it when it dequeues.
 */
void engine_complete(struct dnp_engine *e, struct slot *s, int status);
/* Fails a command that may still sit in an injection queue (marked, then ended there). */
void engine_fail_cmd(struct dnp_engine *e, struct slot *s, int status);
/*
 * Appends s to injection queue qi of its class (class 0 with arbitration
 * off) / takes the head off queue qi of class tc (the caller holds it).
 */
void engine_inj_push(struct dnp_engine *e, unsigned qi, struct slot *s);
void engine_inj_pop(struct dnp_engine *e, unsigned qi, unsigned tc);
/* Up to 64 packets of GET responses, then of commands, per queue; true on progress. */
bool engine_inject(struct dnp_engine *e, uint64_t now);
/*
 * Arbitration on: one packet of class tc from injection queue qi, a GET
 * response first when the responder job at the head of qi is of that class;
 * true when one left.
 */
bool engine_inject_class(struct dnp_engine *e, unsigned qi, unsigned tc, uint64_t now);
/* Does injection queue qi hold work of class tc (a command, or the head responder job)? */
static inline bool engine_inj_has(const struct dnp_engine *e, unsigned qi, unsigned tc)
{
	return e->qhead[qi][tc] != NO_SLOT ||
	       (e->resp[qi].head && engine_pkt_class(&e->resp[qi].head->h) == tc);
}

/* -------------------------------------- completion reports (engine_cmpl.c) */
/*
 * Every PUT, SEND and GET request delivered or refused here is reported to
 * the node whose command it serves (docs/protocol.md, "Completion reports"):
 * successes in batches (one CMPL frame per sender and port, flushed at the
 * end of each engine round or when full), errors at once and after the
 * batch of their sender, so the order of delivery is kept.
 */

/*
 * A report from node 'from' for this node's own command msg_id: ends it with
 * status (if still live). An error from its target says the data was not
 * taken; one from a node on the way leaves it unknown (docs/api.md).
 */
void engine_handle_cmpl(struct dnp_engine *e, const struct dnp_coord *from, uint32_t msg_id,
			int status);
/*
 * Queues a completion report for 'to' (or completes locally). Returns 0, or
 * -EAGAIN when no buffer is free (the caller retries later; delivery checks
 * first that one is, so a written message's report is never refused).
 */
int engine_send_cmpl(struct dnp_engine *e, struct dnp_coord to, uint8_t to_port, uint32_t msg_id,
		     int status, uint64_t now);
/* Every open batch out; true if one left. */
bool engine_cmplb_flush_all(struct dnp_engine *e, uint64_t now);

/* -------------------------------------------------- delivery (engine_deliver.c) */
/*
 * A packet addressed to this node is delivered at the head of its input
 * FIFO, or straight from the injector for loopback: memory written (all or
 * nothing per fragment, keys and bounds checked), RX event for the last
 * fragment, completion report to its owner. It waits (stays at the head)
 * while no buffer for the report is free or its port's event queue is full,
 * the latter for at most deliver_timeout.
 */

/*
 * Delivers h (p: its buffer, NULL for loopback). Returns 0 when handled,
 * DELIVER_KEPT when p now belongs to a responder queue, DELIVER_FULL when
 * its port's event queue has no room, or -EAGAIN when no buffer for the
 * answer is free: it then stays where it is.
 */
int engine_deliver(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload,
		   struct pkt *p, uint64_t now);
/* A refused data packet: counted and reported to its owner once per message. Returns 0. */
int engine_deliver_fail(struct dnp_engine *e, const struct dnp_pkt_hdr *h, int rc, uint64_t now);
/* The last fragment of a PUT/SEND was written: RX event (room checked) and report. */
int engine_deliver_rx_done(struct dnp_engine *e, const struct dnp_pkt_hdr *h, uint32_t src,
			   struct evq *q, uint8_t type, uint8_t op, uint64_t va, uint64_t now);
/* The writes into [va, va + len) of port landed (dnp_mem_ops.flush): 0 or -EFAULT. */
int engine_mem_settle(struct dnp_engine *e, unsigned port, uint64_t va, uint64_t len);
/* A message waited deliver_timeout for event room: it fails back with -EOVERFLOW. */
void engine_deliver_give_up(struct dnp_engine *e, const struct dnp_pkt_hdr *h, uint64_t now);
/* Has the wait w for room in port's event queue lasted deliver_timeout (or is it overrun)? */
bool engine_full_wait_over(struct dnp_engine *e, struct inwait *w, uint8_t port, uint64_t now);

/* ------------------------------------------ SEND reassembly (engine_send.c) */
/*
 * SEND targets are posted buffers, taken in order by arriving SENDs (a
 * port's send_head list of e->posts). A multi-packet SEND holds one of
 * max_sends reassembly slots from its first fragment to its last, or to
 * reasm_timeout; a SEND that fails gives its buffer back to the head.
 */

/* Removes a SEND post of port q whose buffer starts at va (if any). */
void engine_post_remove(struct dnp_engine *e, struct evq *q, uint64_t va);
/* The reassembly of h's message, or NULL. */
struct sendasm *engine_send_find(struct dnp_engine *e, const struct dnp_pkt_hdr *h);
/* The reassembly slot is free again (a single-packet SEND never took one). */
void engine_send_end(struct dnp_engine *e, struct sendasm *a);
/* A SEND that took buffer va of port failed: the buffer goes back to the head of its queue. */
void engine_post_front(struct dnp_engine *e, uint8_t port, uint64_t va, uint64_t len);
/* A reassembly got no fragment for reasm_timeout: reclaimed, RX_ERROR -ETIMEDOUT. */
void engine_send_timeout(struct dnp_engine *e, struct sendasm *a);
/* Delivers a SEND fragment (engine_deliver's contract for SEND). */
int engine_deliver_send(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload,
			struct evq *q, uint64_t now);

/* ------------------------------------------------- routing (engine_route.c) */
/*
 * The switch moves the head of each input FIFO (six links and the local
 * one) to its next link when that link's VC has credit, or delivers it
 * here. Routing state: what this node knows of every cable (struct cable),
 * told to the neighbours in ROUTE packets and fed to the router, whose
 * version invalidates the cached first hops (struct hopc).
 */

/* The route plan for a packet of this node's to dst (0, direct, when none avoids the faults). */
uint16_t engine_via_for(struct dnp_engine *e, struct dnp_coord dst);
/* The via of a new message (dnp_route_plan, or Valiant's choice). Errors: -EHOSTUNREACH. */
int engine_plan_msg(struct dnp_engine *e, const struct slot *s, uint16_t *via);
/* dnp_route_step from this node at injection, cached while the router is unchanged. */
int engine_local_hop(struct dnp_engine *e, struct dnp_coord dst, uint16_t via, struct dnp_hop *hop);
/*
 * Own link dir went BROKEN (down) or UP, or its sickness changed: a new
 * version of its cable's state (broken; else sick while avoided; else ok).
 */
void engine_cable_local(struct dnp_engine *e, unsigned dir, bool down);
/* Lets go of own links whose sick hold is over (dnp_engine_run). */
void engine_sick_release(struct dnp_engine *e, uint64_t now);
/* A neighbour's ROUTE packet: newer states adopted and passed on. */
void engine_route_take(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload);
/* Tells each UP link the cable states it has not heard yet, in ROUTE packets. */
void engine_route_announce(struct dnp_engine *e, uint64_t now);
/* One round-robin pass of the switch over the input FIFOs; true on progress. */
bool engine_route_inputs(struct dnp_engine *e, uint64_t now);
/*
 * Arbitration on, instead of engine_route_inputs and engine_inject: grants
 * packets from the input FIFOs and the injection queues one at a time, in
 * the class order of the arbiter (arb.h), until none can go; true on
 * progress.
 */
bool engine_arb_round(struct dnp_engine *e, uint64_t now);

/* ------------------------------------------------------ links (engine_link.c) */
/*
 * A link that breaks drains what it held (owners told -ENOLINK), reports
 * a LINK event, marks its cable down and moves the commands queued on it to
 * a detour when they have sent nothing yet. Frames enter through
 * dnp_engine_rx (engine.h).
 */

/* ------------------------------------ congestion management (engine_congest.c) */
/*
 * With congestion ecn (engine.h): a PUT or SEND packet that leaves on a VC
 * whose estimated remote occupancy is at or above cg_thresh words is marked
 * (DNP_FT_CE, carried to its target); the target echoes the mark of the
 * message's last packet in the CMPL frame that reports it (a batch is marked
 * when any message in it was). Per destination node, the source keeps a
 * window in packets (struct cgdst): a PUT or SEND that has not started waits
 * while its destination's unreported packets fill the window, and a younger
 * command to another node in the same injection queue may go ahead of it
 * (never one to the same node, so the order per destination stays). An
 * echoed mark halves the window, once per window of packets; each packet of
 * an unmarked report adds one, up to cg_max. Loopback and GETs are never
 * held. Everything is sized at create: nothing is allocated per packet.
 */
struct cgdst {
	uint32_t inflight; /* packets started and not yet reported */
	uint32_t wnd;      /* window, packets: 1..cg_max */
	uint32_t seq;      /* messages started towards it (wraps) */
	uint32_t seq_cut;  /* seq at the last halving: older echoes do not halve again */
};

/* Sets up the tables (dnp_engine_create). 0, -EINVAL (bad mode) or -ENOMEM. */
int engine_cg_create(struct dnp_engine *e);
/* Marks p if the VC it takes on link l is congested (only with congestion ecn). */
static inline void engine_cg_mark(struct dnp_engine *e, const struct dnp_link *l, unsigned vc,
				  struct pkt *p)
{
	if ((p->h.kind == DNP_PKT_PUT || p->h.kind == DNP_PKT_SEND) &&
	    !(p->h.fstatus & DNP_FT_CE) && dnp_link_estimate(l, vc) >= e->cg_thresh) {
		p->h.fstatus |= DNP_FT_CE;
		e->st.cg_marked++;
	}
}
/*
 * Before the head of injection queue qi of class tc starts: when its window holds it,
 * moves the oldest command of the queue that may start (one whose
 * destination no older held command shares) to the head. False: nothing in
 * the queue may start now.
 */
bool engine_cg_pick(struct dnp_engine *e, unsigned qi, unsigned tc);
/* Command s ended with status (a report, marked when e->cg_rx_ce): its window learns it. */
void engine_cg_done(struct dnp_engine *e, struct slot *s, int status);

/* Hands p to link dir (credit was checked). */
static inline void engine_link_enqueue(struct dnp_engine *e, unsigned dir, unsigned vc,
				       struct pkt *p, uint64_t now)
{
	struct xlink *x = &e->links[dir];

	if (e->cg)
		engine_cg_mark(e, x->l, vc, p);
	p->h.vc = (uint8_t)vc;
	dnp_pkt_set_vc(p->frame, vc); /* the CRC is recomputed when it is sent */
	p->seq = dnp_link_seq_push(x->l, p, now);
	dnp_link_commit(x->l, vc, p->words);
}
/*
 * One pass (conf.tx_direct): reads descriptor packet p's payload into its
 * packet buffer (p->desc cleared). A failed read makes p a packet its
 * target refuses (key 0, zero payload) and, when fail_cmd, fails its
 * command with -EFAULT. Returns 0 or -EFAULT.
 */
int engine_desc_fill(struct dnp_engine *e, struct pkt *p, bool fail_cmd);
/* Port closes: its descriptor packets in every link's window get their bytes now. */
void engine_desc_port_closed(struct dnp_engine *e, unsigned port);
/* A packet that cannot go anywhere: its owner is told status (data packets), p is freed. */
void engine_drop_unroutable(struct dnp_engine *e, struct pkt *p, int status, uint64_t now);
/* Link dir broke (the link module said so, or the driver did). */
void engine_link_broken(struct dnp_engine *e, unsigned dir, uint64_t now);

/* ------------------------------------------ outcome queries (engine_outcome.c) */
/*
 * A target records the outcome of each PUT and SEND it reports (and of a
 * message it declares not delivered), per source node and slot index of
 * the message id, so that a source can ask again (QUERY) for a report that
 * was lost. A message declared not delivered is never applied afterwards,
 * except as its resend (status DNP_PKT_RETRY), which is applied once.
 * The source asks about a PUT or SEND whose report is late (query_timeout),
 * sends it again when the answer is "not delivered", and fails it at once
 * when no route to its target is left.
 */

/* The entry of msg_id from source node id 'src' (< torus size), or NULL (no history for it). */
static inline struct outcome *engine_outcome_of(struct dnp_engine *e, uint32_t src, uint32_t msg_id)
{
	uint32_t idx = msg_id & 0xffffu;

	if (idx >= e->outcome_slots || src >= e->outcome_rows) /* outcome_slots 0: no history */
		return NULL;
	return &e->outcomes[(size_t)src * e->outcome_slots + idx];
}
/* The same by coordinates (any: out of the torus, NULL or another node's entry). */
static inline struct outcome *engine_outcome_at(struct dnp_engine *e, struct dnp_coord src,
						uint32_t msg_id)
{
	return engine_outcome_of(e, dnp_torus_id(&e->c.torus, src), msg_id);
}
/* engine_outcome_record for an entry that holds a message declared not delivered. */
void engine_outcome_record_slow(struct dnp_engine *e, struct outcome *o, uint32_t msg_id,
				int status);
/*
 * The report of msg_id from source node id src leaves with status (0 or
 * -errno): recorded. Successes are recorded at delivery, errors by
 * engine_send_cmpl.
 */
static inline void engine_outcome_record(struct dnp_engine *e, uint32_t src, uint32_t msg_id,
					 int status)
{
	struct outcome *o = engine_outcome_of(e, src, msg_id);

	if (!o)
		return;
	if (o->state >= OUT_REFUSED) { /* (an answer "not delivered" finds its entry so) */
		engine_outcome_record_slow(e, o, msg_id, status);
		return;
	}
	*o = (struct outcome){ .msg_id = msg_id,
			       .state = OUT_DONE,
			       .status = (uint8_t)(status < 0 ? -status : status) };
}
/*
 * Must this PUT or SEND packet not be applied (its message was declared
 * not delivered, or it is a resend of one already reported)? A resend of a
 * reported message has that report sent again (on its last packet). Only
 * asked while some message is declared not delivered (nrefused): a resend
 * follows such a declaration.
 */
bool engine_outcome_refuse(struct dnp_engine *e, const struct dnp_pkt_hdr *h, uint64_t now);
/*
 * The last fragment h of a PUT or SEND found its message incomplete: some
 * fragments were lost, or are still on their way by another path (a route
 * that changed under the message: a link judged sick, a cable state learnt).
 * With an outcome history for its source the message is declared not
 * delivered, as to a QUERY: what is left of it is refused, and its source
 * sends it again whole (docs/protocol.md, "Incomplete messages"). Without
 * one (the lab) it fails back with -ENOLINK. Returns 0, or -EAGAIN as
 * engine_send_cmpl (the caller checked that a buffer is free).
 */
int engine_outcome_incomplete(struct dnp_engine *e, const struct dnp_pkt_hdr *h, uint64_t now);
/* A QUERY from h->src: each id answered with its outcome, when known. */
void engine_query_take(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload,
		       uint64_t now);
/* The report of s is late: a QUERY to its target, or -EHOSTUNREACH with no route left. */
void engine_query_due(struct dnp_engine *e, struct slot *s, uint64_t now);
/*
 * Packets of this node's command msg_id were lost with a link, which may or
 * may not have delivered them: true when a QUERY will tell (query_timeout
 * set, a PUT or SEND whose packets all left), asked in this engine round.
 */
bool engine_query_soon(struct dnp_engine *e, uint32_t msg_id);
/* The target of s said it never applied it: sent again, or failed -ENOLINK. */
void engine_outcome_resend(struct dnp_engine *e, struct slot *s, uint64_t now);

/* ------------------------------------------------------- DIAG (engine_diag.c) */

/* A DIAG for the fault manager: queued, or counted as dropped when its queue is full. */
void engine_diag_take(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload);

#endif /* DNP_ENGINE_PRIV_H */
