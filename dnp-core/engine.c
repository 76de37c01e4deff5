/* SPDX-License-Identifier: MIT */
/*
 * engine.c — one DNP node, sans-I/O. See engine.h for the contract and
 * docs/architecture.md for the walk of a packet through it.
 *
 * Packet buffers come from two preallocated pools (small frames and full
 * frames). A packet is owned by exactly one place at a time: an input FIFO
 * (per link and VC, plus the local control FIFO), a link's unacked list
 * (sent or waiting for its first transmission), or the free list.
 */
#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
	uint8_t cframe[DNP_CREDIT_MAX_FRAME]; /* credits of VCs 2-3 need the payload word */
	uint8_t rframe[DNP_FRAME_OVERHEAD];   /* RESET frame (may go out beside a credit) */
};

/* The ack or our FIFO changed: a credit is due (now if urgent, else see ack_delay). */
static inline void ack_mark(struct xlink *x, uint64_t now, bool urgent)
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
	uint32_t next;   /* injection queue link */
	uint32_t msg_id; /* on the wire */
	uint64_t offset; /* bytes injected so far */
	uint64_t t_submit;
	struct dnp_cmd c;
	struct dnp_coord dst;
	uint16_t via;   /* route plan (route.h): 0 direct, else through a via */
	uint8_t hop_vc; /* VC of its first hop, as routed while router.ver was rver */
	uint32_t rver;
	uint64_t got; /* GET: response bytes received */
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
	uint32_t reserved;   /* slots promised to outstanding commands */
	bool open;
	/*
	 * A message gave up waiting for room (deliver_timeout): until the
	 * application drains an event, the next ones fail at once instead of
	 * each waiting again.
	 */
	bool overrun;
	uint32_t send_head, send_tail; /* SEND-target posts, indices into e->posts */
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
	uint8_t down;
	uint8_t pend;
	uint16_t ver;
};
#define CABLES 256
#define ROUTE_ENTRY 8u /* node u32, dim u8, down u8, ver u16 */
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
	uint32_t ids[1 + DNP_CMPL_MAX_EXTRA];
};
#define CMPLB 4u /* batches open at once (distinct senders in one pass) */
#define CMPL_FRAME_MAX (DNP_FRAME_OVERHEAD + DNP_CMPL_MAX_EXTRA * 4u) /* the largest CMPL frame */
static_assert(CMPL_FRAME_MAX <= SMALL_FRAME, "a full batch fits a small packet buffer");

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
	struct slot *slots;
	uint32_t free_slot; /* free list through slot.next */
	uint32_t nactive;
	uint32_t gen;
	uint32_t qhead[NIN], qtail[NIN];
	struct pktq resp[NIN]; /* GET responder jobs, by first-hop direction */
	struct evq *ports;
	struct dnp_event *evmem;
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
	struct puttrack *puts; /* by source node id modulo nputs */
	uint32_t nputs;
	struct hopc hopc[HOPC];
	struct cmplb cmplb[CMPLB];
	uint32_t ncmplb;     /* batches with n > 0 */
	uint32_t cmplb_next; /* the batch a new sender takes over when all are open */
	struct dnp_engine_stats st;
};

void dnp_engine_conf_default(struct dnp_engine_conf *c)
{
	memset(c, 0, sizeof(*c));
	dnp_torus_init(&c->torus, 1, 1, 1);
	c->link.fifo_words = 2048;
	c->link.t_red = 2048 - 6;
	c->link.t_yellow = 1024;
	c->link.credit_period = 35;
	c->link.credit_timeout = 100000;
	c->link.init_timeout = 0;
	c->link.rto = 2000;
	c->link.max_retries = 16;
	c->link.window = 256;
	c->link.nvc = 2;
	c->link.rule = DNP_START_VCT;
	c->link.credit_model = DNP_CREDIT_HW;
	c->vc_mode = DNP_VC_DATELINE;
	c->max_buffers = 4096;
	c->max_ports = 8;
	c->max_commands = 1024;
	c->event_queue = 4096;
	c->max_sends = 256;
	c->key_secret[0] = 0x5eed;
	c->key_secret[1] = 0x5eed5eed;
}

/* ---------------------------------------------------------------- pools */

static struct pkt *pkt_get(struct dnp_engine *e, uint32_t flen)
{
	struct pkt **fl = flen <= SMALL_FRAME ? &e->free_small : &e->free_big;
	struct pkt *p = *fl;

	if (!p && flen <= SMALL_FRAME)
		fl = &e->free_big, p = *fl; /* a small frame may borrow a big buffer */
	if (!p)
		return NULL;
	*fl = p->next;
	p->next = NULL;
	e->pkts_used++;
	return p;
}

static void pkt_put(struct dnp_engine *e, struct pkt *p)
{
	struct pkt **fl = p->big ? &e->free_big : &e->free_small;

	p->next = *fl;
	*fl = p;
	e->pkts_used--;
}

static bool pool_has(const struct dnp_engine *e, uint32_t flen)
{
	return flen <= SMALL_FRAME ? (e->free_small || e->free_big) : e->free_big != NULL;
}

/* Two buffers for small frames free (an error report and the batch before it)? */
static bool pool_has_two_small(const struct dnp_engine *e)
{
	return e->npkts - e->pkts_used >= 2; /* any free buffer takes a small frame */
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

static bool pool_has_rx(const struct dnp_engine *e, uint32_t flen)
{
	return pool_has(e, flen) && e->npkts - e->pkts_used > RX_RESERVE;
}

static void q_push(struct pktq *q, struct pkt *p)
{
	p->next = NULL;
	if (q->tail)
		q->tail->next = p;
	else
		q->head = p;
	q->tail = p;
	q->n++;
}

/* Queues p on input FIFO (in, vc), which route_inputs then visits. */
static void in_push(struct dnp_engine *e, unsigned in, unsigned vc, struct pkt *p)
{
	q_push(&e->in[in][vc], p);
	e->in_mask |= 1u << (in * DNP_MAX_VC + vc);
}

static struct pkt *q_pop(struct pktq *q)
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

/* ---------------------------------------------------------------- events */

static uint32_t evq_used(const struct evq *q)
{
	return q->tail - q->head;
}

/* Room for an event nobody reserved (RX events). */
static bool evq_room(const struct dnp_engine *e, const struct evq *q)
{
	return evq_used(q) + q->reserved < e->c.event_queue;
}

static void evq_push(struct dnp_engine *e, struct evq *q, const struct dnp_event *ev)
{
	q->ev[q->tail & (e->c.event_queue - 1)] = *ev;
	q->tail++;
	e->st.events++;
}

/* ---------------------------------------------------------------- commands */

static struct slot *slot_by_msg(struct dnp_engine *e, uint32_t msg_id)
{
	uint32_t i = msg_id & 0xffffu;

	if (i >= e->c.max_commands)
		return NULL;
	struct slot *s = &e->slots[i];
	if (s->state != SLOT_ACTIVE || s->msg_id != msg_id)
		return NULL;
	return s;
}

static void slot_free(struct dnp_engine *e, struct slot *s)
{
	s->state = SLOT_FREE;
	s->next = e->free_slot;
	e->free_slot = (uint32_t)(s - e->slots);
	e->nactive--;
}

/* Ends a command with its one completion event (status 0 or -errno). */
static void complete(struct dnp_engine *e, struct slot *s, int status)
{
	if (s->injecting)
		return; /* still queued: the injector completes it when it dequeues */
	{
		struct evq *q = &e->ports[s->port];

		if (status == 0)
			e->st.cmds_ok++;
		else
			e->st.cmds_failed++;
		if (!s->orphan && q->open) {
			struct dnp_event ev = {
				.type = status ? DNP_EV_ERROR :
						 (s->c.op == DNP_OP_GET ? DNP_EV_GET_DONE :
									  DNP_EV_TX_DONE),
				.op = s->c.op,
				.port = s->c.dst_port,
				.peer_x = s->dst.x,
				.peer_y = s->dst.y,
				.peer_z = s->dst.z,
				.status = (int8_t)status,
				.msg_id = s->msg_id,
				.len = (uint32_t)s->c.len,
				.va = s->c.local_va,
				.cookie = s->c.cookie,
			};
			q->reserved--;
			evq_push(e, q, &ev);
		}
	}
	slot_free(e, s);
}

/* Failing a command that may still sit in an injection queue. */
static void fail_cmd(struct dnp_engine *e, struct slot *s, int status)
{
	if (s->injecting) {
		/* let the injector drop it: mark it done with this status */
		s->offset = UINT64_MAX;
		s->c.rsvd3 = (uint64_t)(int64_t)status;
		return;
	}
	complete(e, s, status);
}

static void inj_push(struct dnp_engine *e, unsigned qi, struct slot *s)
{
	uint32_t i = (uint32_t)(s - e->slots);

	s->queue = (uint8_t)qi;
	s->next = NO_SLOT;
	s->injecting = 1;
	if (e->qtail[qi] == NO_SLOT)
		e->qhead[qi] = i;
	else
		e->slots[e->qtail[qi]].next = i;
	e->qtail[qi] = i;
}

static void inj_pop(struct dnp_engine *e, unsigned qi)
{
	struct slot *s = &e->slots[e->qhead[qi]];

	e->qhead[qi] = s->next;
	if (e->qhead[qi] == NO_SLOT)
		e->qtail[qi] = NO_SLOT;
	s->injecting = 0;
	if (qi == DNP_DIR_LOCAL)
		e->lo_wait.on = false; /* a new head */
}

static struct slot *slot_alloc(struct dnp_engine *e)
{
	if (e->free_slot == NO_SLOT)
		return NULL;
	struct slot *s = &e->slots[e->free_slot];

	e->free_slot = s->next;
	uint32_t idx = (uint32_t)(s - e->slots);
	memset(s, 0, sizeof(*s));
	e->gen++;
	s->msg_id = (e->gen << 16) | idx;
	s->state = SLOT_ACTIVE;
	e->nactive++;
	return s;
}

/* ---------------------------------------------------------------- packets */

static bool coord_self(const struct dnp_engine *e, struct dnp_coord c)
{
	return dnp_coord_eq(c, e->c.self);
}

/* The node whose command a data packet serves (where errors must go). */
static struct dnp_coord pkt_owner(const struct dnp_pkt_hdr *h, uint8_t *port)
{
	if (h->kind == DNP_PKT_GET_RESP) {
		*port = h->dst_port;
		return h->dst;
	}
	*port = h->src_port;
	return h->src;
}

static void handle_cmpl(struct dnp_engine *e, uint32_t msg_id, int status)
{
	struct slot *s = slot_by_msg(e, msg_id);

	if (s)
		fail_cmd(e, s, status);
}

/*
 * Queues a completion report for 'to' (or completes locally). Returns
 * -EAGAIN when no buffer is free (the caller retries later).
 */
static int send_cmpl(struct dnp_engine *e, struct dnp_coord to, uint8_t to_port, uint32_t msg_id,
		     int status, uint64_t now);

/*
 * The route plan for a packet of this node's to dst: 0 (direct) when none
 * avoids the known faults, so that its link refuses it as before.
 */
static uint16_t via_for(struct dnp_engine *e, struct dnp_coord dst)
{
	uint16_t via;

	if (!e->router.n_faults)
		return 0; /* no known fault: every plan is direct (dnp_route_plan) */
	return dnp_route_plan(&e->router, dst, &via) < 0 ? 0 : via;
}

/*
 * dnp_route_step(router, self, dst, via, DNP_DIR_LOCAL, 0, hop) for a packet
 * that starts at this node, remembered while the router is unchanged.
 */
static int local_hop(struct dnp_engine *e, struct dnp_coord dst, uint16_t via, struct dnp_hop *hop)
{
	if (!dnp_torus_contains(&e->c.torus, dst))
		return dnp_route_step(&e->router, e->c.self, dst, via, DNP_DIR_LOCAL, 0, hop);
	uint32_t id = dnp_torus_id(&e->c.torus, dst);
	struct hopc *c = &e->hopc[id & (HOPC - 1)];

	if (c->ver == e->router.ver && c->dst_id == id && c->via == via) {
		*hop = c->hop;
		return 0;
	}
	int rc = dnp_route_step(&e->router, e->c.self, dst, via, DNP_DIR_LOCAL, 0, hop);
	if (rc == 0)
		*c = (struct hopc){ .ver = e->router.ver, .dst_id = id, .via = via, .hop = *hop };
	return rc;
}

/* ---------------------------------------------------------------- cables */

static_assert(DNP_VIA_RSVD == DNP_PKT_VIA_RSVD, "route.h and pkt.h agree on the via code");
static_assert(NIN * DNP_MAX_VC <= 32, "every input FIFO has a bit in in_mask");

static bool link_usable(const struct dnp_engine *e, unsigned dir);

/* Bits of the links this node has. */
static uint8_t links_mask(const struct dnp_engine *e)
{
	uint8_t m = 0;

	for (unsigned d = 0; d < DNP_NDIRS; d++)
		if (e->links[d].l)
			m |= (uint8_t)(1u << d);
	return m;
}

static struct cable *cable_find(struct dnp_engine *e, uint32_t node, unsigned dim)
{
	for (uint32_t i = 0; i < e->ncables; i++)
		if (e->cables[i].node == node && e->cables[i].dim == dim)
			return &e->cables[i];
	return NULL;
}

/* A new entry (state up, version 0), or NULL when the table is full. */
static struct cable *cable_new(struct dnp_engine *e, uint32_t node, unsigned dim)
{
	if (e->ncables == CABLES) {
		e->st.route_overflow++;
		return NULL;
	}
	struct cable *c = &e->cables[e->ncables++];
	*c = (struct cable){ .node = node, .dim = (uint8_t)dim };
	return c;
}

/* Adopts a state: the router learns it, and every link is to be told. */
static void cable_set(struct dnp_engine *e, struct cable *c, bool down, uint16_t ver)
{
	c->down = down;
	c->ver = ver;
	c->pend = links_mask(e);
	if (dnp_route_set_cable(&e->router, dnp_torus_coord(&e->c.torus, c->node), 2u * c->dim,
				down) < 0)
		e->st.route_overflow++;
	e->st.route_changes++;
	e->dirty = true;
}

/* The cable behind own link dir: the + link of self, or of the - neighbour. */
static uint32_t cable_node(const struct dnp_engine *e, unsigned dir)
{
	if (!(dir & 1u))
		return e->self_id;
	return dnp_torus_id(&e->c.torus,
			    dnp_torus_neighbour(&e->c.torus, e->c.self, (enum dnp_dir)dir));
}

/* Own link dir went BROKEN (down) or UP: a new version of its cable's state. */
static void cable_local(struct dnp_engine *e, unsigned dir, bool down)
{
	uint32_t node = cable_node(e, dir);
	struct cable *c = cable_find(e, node, dir / 2);

	if (!c && !down)
		return; /* never known broken: nothing to tell */
	if (!c && !(c = cable_new(e, node, dir / 2)))
		return;
	if (c->down != down || !c->ver)
		cable_set(e, c, down, (uint16_t)(c->ver + 1));
}

/* Whether the cable (node, dim) is own link dir, for some dir (set in *dir). */
static bool cable_is_own(const struct dnp_engine *e, uint32_t node, unsigned dim, unsigned *dir)
{
	for (unsigned d = 2 * dim; d < 2 * dim + 2; d++)
		if (e->links[d].l && cable_node(e, d) == node) {
			*dir = d;
			return true;
		}
	return false;
}

/*
 * A neighbour's ROUTE packet: entries of node u32, dim u8, down u8, ver u16.
 * A newer state is adopted (and passed on); a report on one of this node's
 * own cables that contradicts its link is answered with a newer version of
 * the truth, so stale reports die out.
 */
static void route_take(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload)
{
	uint32_t size = dnp_torus_size(&e->c.torus);

	if (h->len % ROUTE_ENTRY || h->len > ROUTE_ENTRY * ROUTE_MAX_ENTRIES) {
		e->st.rx_malformed++;
		return;
	}
	e->st.route_rx++;
	for (unsigned i = 0; i < h->len / ROUTE_ENTRY; i++) {
		const uint8_t *b = payload + i * ROUTE_ENTRY;
		uint32_t node = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
				(uint32_t)b[3] << 24;
		unsigned dim = b[4], down = b[5], own_dir;
		uint16_t ver = (uint16_t)(b[6] | b[7] << 8);

		if (node >= size || dim > 2 || down > 1) {
			e->st.rx_malformed++;
			return;
		}
		struct cable *c = cable_find(e, node, dim);
		bool newer = !c || (int16_t)(ver - c->ver) > 0;

		if (cable_is_own(e, node, dim, &own_dir)) {
			bool truth = !link_usable(e, own_dir);

			if (!c && !(c = cable_new(e, node, dim)))
				continue;
			if (down != truth && (newer || ver == c->ver))
				cable_set(e, c, truth, (uint16_t)((newer ? ver : c->ver) + 1));
			else if (newer)
				cable_set(e, c, down, ver);
			continue;
		}
		if (!newer)
			continue;
		if (!c && !down)
			continue; /* an unknown cable that is fine: nothing to learn */
		if (!c && !(c = cable_new(e, node, dim)))
			continue;
		cable_set(e, c, down, ver);
	}
}

/* Tells each UP link the cable states it has not heard yet, in ROUTE packets. */
static void route_announce(struct dnp_engine *e, uint64_t now)
{
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		struct xlink *x = &e->links[d];
		uint8_t bit = (uint8_t)(1u << d);
		uint8_t buf[ROUTE_ENTRY * ROUTE_MAX_ENTRIES];

		if (!x->l || dnp_link_state(x->l) != DNP_LINK_UP)
			continue;
		for (;;) {
			unsigned n = 0;

			for (uint32_t i = 0; i < e->ncables && n < ROUTE_MAX_ENTRIES; i++) {
				const struct cable *c = &e->cables[i];

				if (!(c->pend & bit))
					continue;
				uint8_t *b = buf + n++ * ROUTE_ENTRY;
				b[0] = (uint8_t)c->node;
				b[1] = (uint8_t)(c->node >> 8);
				b[2] = (uint8_t)(c->node >> 16);
				b[3] = (uint8_t)(c->node >> 24);
				b[4] = c->dim;
				b[5] = c->down;
				b[6] = (uint8_t)c->ver;
				b[7] = (uint8_t)(c->ver >> 8);
			}
			if (!n)
				break;
			struct pkt *p = pkt_get(e, (uint32_t)dnp_pkt_frame_len(n * ROUTE_ENTRY));
			if (!p)
				return; /* no buffer: told later */
			struct dnp_coord nb =
				dnp_torus_neighbour(&e->c.torus, e->c.self, (enum dnp_dir)d);
			struct dnp_pkt_hdr h = {
				.lflags = DNP_LINK_F_SEQ,
				.dst = nb,
				.src = e->c.self,
				.kind = DNP_PKT_ROUTE,
				.flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST,
				.len = (uint16_t)(n * ROUTE_ENTRY),
				.msg_len = n * ROUTE_ENTRY,
				.timestamp = (uint32_t)now,
			};
			int len = dnp_pkt_encode(&h, buf, p->frame, DNP_MAX_FRAME);
			if (len < 0) {
				pkt_put(e, p);
				return;
			}
			p->h = h;
			p->flen = (uint32_t)len;
			p->words = (uint32_t)len / DNP_WORD_BYTES;
			p->in_dir = DNP_DIR_LOCAL;
			p->in_vc = 0;
			p->hops_tx = 0;
			in_push(e, DNP_DIR_LOCAL, 0, p);
			e->st.route_tx++;
			e->dirty = true;
			/* those entries are on their way */
			for (uint32_t i = 0, k = 0; i < e->ncables && k < n; i++)
				if (e->cables[i].pend & bit) {
					e->cables[i].pend &= (uint8_t)~bit;
					k++;
				}
		}
	}
}

/*
 * One CMPL packet from here to (to, to_port) reporting ids[0..n) with one
 * status, into the local input FIFO. -EAGAIN: no buffer free.
 */
static int cmpl_packet(struct dnp_engine *e, struct dnp_coord to, uint8_t to_port,
		       const uint32_t *ids, unsigned n, int status, uint64_t now)
{
	uint16_t len = (uint16_t)((n - 1) * 4u);
	struct pkt *p = pkt_get(e, (uint32_t)dnp_pkt_frame_len(len));
	if (!p)
		return -EAGAIN;
	struct dnp_pkt_hdr *h = &p->h; /* built in place */

	*h = (struct dnp_pkt_hdr){
		.lflags = DNP_LINK_F_SEQ,
		.dst = to,
		.src = e->c.self,
		.dst_port = to_port,
		.kind = DNP_PKT_CMPL,
		.via = via_for(e, to),
		.status = (uint8_t)(status < 0 ? -status : status),
		.len = len,
		.msg_id = ids[0],
		.timestamp = (uint32_t)now,
	};
	uint8_t *pl = p->frame + DNP_PAYLOAD_OFF; /* the payload in place */
	for (unsigned i = 1; i < n; i++) {
		uint32_t v = htole32(ids[i]);
		memcpy(pl + (i - 1) * 4u, &v, 4);
	}
	/* sealed (CRC) by dnp_pkt_restamp when it leaves on a link */
	int r = dnp_pkt_encode_unsealed(h, len ? pl : NULL, p->frame, DNP_MAX_FRAME);
	if (r < 0) {
		pkt_put(e, p);
		return r;
	}
	p->flen = (uint32_t)r;
	p->words = (uint32_t)r / DNP_WORD_BYTES;
	p->in_dir = DNP_DIR_LOCAL;
	p->in_vc = 0;
	p->hops_tx = 0;
	in_push(e, DNP_DIR_LOCAL, 0, p);
	e->dirty = true;
	e->st.cmpl_frames++;
	return 0;
}

/* Sends batch b as one CMPL packet and empties it. -EAGAIN: no buffer (b stays). */
static int cmplb_flush(struct dnp_engine *e, struct cmplb *b, uint64_t now)
{
	if (!b->n)
		return 0;
	int r = cmpl_packet(e, b->to, b->port, b->ids, b->n, 0, now);
	if (r == -EAGAIN)
		return r;
	/* any other error cannot happen for a well-formed header; the batch goes either way */
	b->n = 0;
	e->ncmplb--;
	return 0;
}

/* Every open batch out; true if one left. */
static bool cmplb_flush_all(struct dnp_engine *e, uint64_t now)
{
	bool sent = false;

	for (unsigned i = 0; i < CMPLB && e->ncmplb; i++)
		if (e->cmplb[i].n && cmplb_flush(e, &e->cmplb[i], now) == 0)
			sent = true;
	return sent;
}

static struct cmplb *cmplb_find(struct dnp_engine *e, struct dnp_coord to, uint8_t port)
{
	for (unsigned i = 0; i < CMPLB; i++) {
		struct cmplb *b = &e->cmplb[i];
		if (b->n && b->port == port && dnp_coord_eq(b->to, to))
			return b;
	}
	return NULL;
}

/*
 * A success report joins the batch of its sender and port, which leaves as
 * one CMPL frame at the end of the engine round (dnp_engine_run) or when it
 * is full. An error report goes at once, after that batch, so that a
 * sender's reports keep the order of delivery; with one buffer left it goes
 * alone and the batch follows (the error is never held back or lost for the
 * sake of order).
 */
static int send_cmpl(struct dnp_engine *e, struct dnp_coord to, uint8_t to_port, uint32_t msg_id,
		     int status, uint64_t now)
{
	if (coord_self(e, to)) {
		handle_cmpl(e, msg_id, status);
		return 0;
	}
	struct cmplb *b = cmplb_find(e, to, to_port);

	if (status) {
		if (b && pool_has_two_small(e))
			(void)cmplb_flush(e, b, now); /* cannot fail: two buffers are free */
		return cmpl_packet(e, to, to_port, &msg_id, 1, status, now);
	}
	if (b && b->n == 1 + DNP_CMPL_MAX_EXTRA && cmplb_flush(e, b, now) < 0)
		return -EAGAIN;
	if (!b || !b->n) {
		if (!b) {
			for (unsigned i = 0; i < CMPLB && !b; i++)
				if (!e->cmplb[i].n)
					b = &e->cmplb[i];
			if (!b) { /* all open for other senders: the next one in turn leaves */
				b = &e->cmplb[e->cmplb_next++ % CMPLB];
				if (cmplb_flush(e, b, now) < 0)
					return -EAGAIN;
			}
		}
		b->to = to;
		b->port = to_port;
		e->ncmplb++;
	}
	b->ids[b->n++] = msg_id;
	e->dirty = true;
	return 0;
}

/* Removes a SEND post of port q whose buffer starts at va (if any). */
static void post_remove(struct dnp_engine *e, struct evq *q, uint64_t va)
{
	uint32_t *pp = &q->send_head, prev = NO_SLOT;

	while (*pp != NO_SLOT) {
		struct post *po = &e->posts[*pp];
		if (po->va == va) {
			uint32_t idx = *pp;
			*pp = po->next;
			if (q->send_tail == idx)
				q->send_tail = prev;
			po->next = e->free_post;
			po->used = 0;
			e->free_post = idx;
			return;
		}
		prev = *pp;
		pp = &po->next;
	}
}

static struct sendasm *send_find(struct dnp_engine *e, const struct dnp_pkt_hdr *h)
{
	for (uint32_t i = 0; i < e->c.max_sends; i++) {
		struct sendasm *a = &e->sends[i];
		if (a->active && a->msg_id == h->msg_id && a->src_port == h->src_port &&
		    a->dst_port == h->dst_port && dnp_coord_eq(a->src, h->src))
			return a;
	}
	return NULL;
}

static struct sendasm *send_new(struct dnp_engine *e)
{
	for (uint32_t i = 0; i < e->c.max_sends; i++)
		if (!e->sends[i].active)
			return &e->sends[i];
	return NULL;
}

/* A DIAG for the fault manager: queued, or counted as dropped when its queue is full. */
static void diag_take(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload)
{
	if (e->diag_tail - e->diag_head == DNP_ENGINE_DIAG_QUEUE || h->len > DNP_ENGINE_DIAG_MAX) {
		e->st.diag_dropped++;
		return;
	}
	unsigned i = e->diag_tail++ % DNP_ENGINE_DIAG_QUEUE;
	e->diag[i].src = h->src;
	e->diag[i].len = (uint8_t)h->len;
	memcpy(e->diag[i].data, payload, h->len);
	e->st.diag_rx++;
}

int dnp_engine_diag_send(struct dnp_engine *e, struct dnp_coord dst, const void *payload,
			 size_t len, uint64_t now)
{
	if (len > DNP_ENGINE_DIAG_MAX || !dnp_torus_contains(&e->c.torus, dst) ||
	    coord_self(e, dst))
		return -EINVAL;
	struct pkt *p = pkt_get(e, (uint32_t)dnp_pkt_frame_len(len));
	if (!p)
		return -EAGAIN;
	struct dnp_pkt_hdr h = {
		.lflags = DNP_LINK_F_SEQ,
		.dst = dst,
		.src = e->c.self,
		.kind = DNP_PKT_DIAG,
		.via = via_for(e, dst),
		.flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST,
		.len = (uint16_t)len,
		.msg_len = (uint32_t)len,
		.timestamp = (uint32_t)now,
	};
	int n = dnp_pkt_encode(&h, payload, p->frame, DNP_MAX_FRAME);
	if (n < 0) {
		pkt_put(e, p);
		return n;
	}
	p->h = h;
	p->flen = (uint32_t)n;
	p->words = (uint32_t)n / DNP_WORD_BYTES;
	p->in_dir = DNP_DIR_LOCAL;
	p->in_vc = 0;
	p->hops_tx = 0;
	in_push(e, DNP_DIR_LOCAL, 0, p);
	e->dirty = true;
	e->st.diag_tx++;
	return 0;
}

int dnp_engine_diag_poll(struct dnp_engine *e, struct dnp_coord *src, void *buf, size_t cap)
{
	if (e->diag_head == e->diag_tail)
		return 0;
	unsigned i = e->diag_head % DNP_ENGINE_DIAG_QUEUE;
	if (cap < e->diag[i].len)
		return -ENOBUFS;
	*src = e->diag[i].src;
	memcpy(buf, e->diag[i].data, e->diag[i].len);
	e->diag_head++;
	return e->diag[i].len;
}

/* The reassembly slot is free again (a single-packet SEND never took one). */
static void send_end(struct dnp_engine *e, struct sendasm *a)
{
	if (a->active) {
		a->active = false;
		e->nsends--;
	}
}

/*
 * A SEND that took buffer va of port failed before its end: the buffer
 * goes back to the head of the port's SEND queue, if it is still a
 * registered SEND target (a free post exists: every post is a registered
 * SEND buffer, and this one has none).
 */
static void post_front(struct dnp_engine *e, uint8_t port, uint64_t va, uint64_t len)
{
	struct evq *q = &e->ports[port];
	const struct dnp_buf *b = dnp_buftab_find(e->bt, port, va, len);

	if (!q->open || !b || b->va != va || !(b->flags & DNP_BUF_SEND_TARGET) ||
	    e->free_post == NO_SLOT)
		return;
	for (uint32_t k = q->send_head; k != NO_SLOT; k = e->posts[k].next)
		if (e->posts[k].va == va)
			return; /* registered anew meanwhile: already posted */
	uint32_t i = e->free_post;
	struct post *po = &e->posts[i];
	e->free_post = po->next;
	*po = (struct post){ .va = va, .len = len, .next = q->send_head, .used = 1 };
	q->send_head = i;
	if (q->send_tail == NO_SLOT)
		q->send_tail = i;
}

/*
 * A multi-packet SEND gets no fragment for reasm_timeout (its sender died,
 * or its path broke): its slot and buffer are reclaimed, and its port hears
 * DNP_EV_RX_ERROR -ETIMEDOUT (counted in rx_events_lost if the port's event
 * queue is full).
 */
static void send_timeout(struct dnp_engine *e, struct sendasm *a)
{
	struct evq *q = &e->ports[a->dst_port];
	struct dnp_event ev = {
		.type = DNP_EV_RX_ERROR,
		.op = DNP_OP_SEND,
		.port = a->src_port,
		.peer_x = a->src.x,
		.peer_y = a->src.y,
		.peer_z = a->src.z,
		.status = -ETIMEDOUT,
		.msg_id = a->msg_id,
		.len = a->msg_len,
		.va = a->va,
	};

	send_end(e, a);
	e->st.reasm_timeouts++;
	post_front(e, a->dst_port, a->va, a->len);
	if (q->open && evq_room(e, q))
		evq_push(e, q, &ev);
	else
		e->st.rx_events_lost++;
}

/* The packet became a GET responder job: the caller moves it to e->resp[p->job_q]. */
#define DELIVER_KEPT 1
/* The last fragment of a PUT/SEND waits for room in its port's event queue. */
#define DELIVER_FULL 2

/*
 * A data packet refused at delivery (rc < 0): count it and tell its owner,
 * once per message (on its first and on its last fragment). The caller
 * checked that a buffer for the report is free. Returns 0 (handled).
 */
static int deliver_fail(struct dnp_engine *e, const struct dnp_pkt_hdr *h, int rc, uint64_t now)
{
	uint8_t oport;
	struct dnp_coord owner = pkt_owner(h, &oport);

	e->st.deliver_errors++;
	if ((h->flags & (DNP_PKT_F_FIRST | DNP_PKT_F_LAST)) || h->kind == DNP_PKT_GET_REQ)
		(void)send_cmpl(e, owner, oport, h->msg_id, rc, now);
	return 0;
}

/*
 * The last fragment of a PUT or SEND was written: event 'type' for the
 * receiving port (its room was checked), then the report to the sender.
 */
static int deliver_rx_done(struct dnp_engine *e, const struct dnp_pkt_hdr *h, struct evq *q,
			   uint8_t type, uint8_t op, uint64_t va, uint64_t now)
{
	uint8_t oport;
	struct dnp_coord owner = pkt_owner(h, &oport);
	struct dnp_event ev = {
		.type = type,
		.op = op,
		.port = h->src_port,
		.hops = h->hops,
		.peer_x = h->src.x,
		.peer_y = h->src.y,
		.peer_z = h->src.z,
		.msg_id = h->msg_id,
		.len = h->msg_len,
		.va = va,
	};

	evq_push(e, q, &ev);
	e->st.hops_total += h->hops;
	return send_cmpl(e, owner, oport, h->msg_id, 0, now);
}

/*
 * Writes the payload of a keyed packet (PUT, GET_RESP) into the PUT-target
 * buffer it names. Every fragment checks the whole message range: all or
 * nothing. Returns 0, or -ENOENT, -ERANGE, -EACCES, -EPERM (as the sender
 * sees it), -EFAULT.
 */
static int write_keyed(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload)
{
	const struct dnp_buf *b;
	uint64_t start = h->va - h->offset;
	int rc = dnp_buftab_lookup(e->bt, h->dst_port, start, h->msg_len ? h->msg_len : 1, h->key,
				   DNP_BUF_PUT_TARGET, &b);

	if (rc < 0)
		return rc;
	if (h->len && e->c.mem->write(e->c.mem_ctx, h->dst_port, b, h->va, payload, h->len))
		return -EFAULT;
	e->st.bytes_delivered += h->len;
	return 0;
}

/*
 * The writes of a message into [va, va + len) of port have landed (struct
 * dnp_mem_ops, flush): 0, or -EFAULT if one of them failed.
 */
static int mem_settle(struct dnp_engine *e, unsigned port, uint64_t va, uint64_t len)
{
	if (!e->c.mem->flush)
		return 0;
	return e->c.mem->flush(e->c.mem_ctx, port, va, len) ? -EFAULT : 0;
}

/* Follows the fragment sequence of PUTs from h's source; true if h completes one whole. */
static bool put_track(struct dnp_engine *e, const struct dnp_pkt_hdr *h)
{
	uint32_t src = dnp_torus_id(&e->c.torus, h->src);
	/* nputs is the torus size unless that is above PUTTRACK_MAX: no division then */
	struct puttrack *t = &e->puts[src < e->nputs ? src : src % e->nputs];
	bool same = t->src_id == src && t->msg_id == h->msg_id && t->port == h->src_port;

	if (h->flags & DNP_PKT_F_FIRST) {
		*t = (struct puttrack){ .src_id = src,
					.msg_id = h->msg_id,
					.port = h->src_port,
					.next = h->offset + h->len,
					.ok = h->offset == 0 };
	} else if (same && t->ok && h->offset == t->next) {
		t->next += h->len;
	} else {
		if (same)
			t->ok = 0;
		e->st.rx_incomplete++;
		return false;
	}
	return t->ok && t->next == h->msg_len;
}

static int deliver_put(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload,
		       struct evq *q, uint64_t now)
{
	int rc = write_keyed(e, h, payload);

	if (rc < 0) {
		if (h->flags & DNP_PKT_F_LAST)
			(void)mem_settle(e, h->dst_port, h->va - h->offset, h->msg_len);
		return deliver_fail(e, h, rc, now);
	}
	bool whole = put_track(e, h);
	if (!(h->flags & DNP_PKT_F_LAST))
		return 0;
	rc = mem_settle(e, h->dst_port, h->va - h->offset, h->msg_len);
	if (!whole)
		return deliver_fail(e, h, -ENOLINK, now); /* fragments lost on the way */
	if (rc < 0)
		return deliver_fail(e, h, rc, now);
	return deliver_rx_done(e, h, q, DNP_EV_RX_PUT, DNP_OP_PUT, h->va - h->offset, now);
}

static int deliver_get_resp(struct dnp_engine *e, const struct dnp_pkt_hdr *h,
			    const uint8_t *payload, uint64_t now)
{
	int rc = write_keyed(e, h, payload);

	if (rc < 0) {
		if (h->flags & DNP_PKT_F_LAST)
			(void)mem_settle(e, h->dst_port, h->va - h->offset, h->msg_len);
		return deliver_fail(e, h, rc, now);
	}
	struct slot *s = slot_by_msg(e, h->msg_id);
	if (s)
		s->got += h->len;
	if (h->flags & DNP_PKT_F_LAST) {
		rc = mem_settle(e, h->dst_port, h->va - h->offset, h->msg_len);
		if (s) {
			s->c.rsvd1 = h->hops;
			/* every byte, or some were lost with a link on the way */
			complete(e, s, s->got != s->c.len ? -ENOLINK : rc);
		}
	}
	return 0;
}

/*
 * The reassembly state of a SEND fragment: on the first fragment the head
 * post of the port is consumed (a new slot is taken for a multi-packet
 * message, 'single' is used for a one-packet one). Returns 0 with *out set,
 * or -ENOBUFS, -EMSGSIZE, -EBUSY.
 */
static int send_slot(struct dnp_engine *e, const struct dnp_pkt_hdr *h, struct evq *q,
		     struct sendasm *single, struct sendasm **out)
{
	struct sendasm *a;

	if (!(h->flags & DNP_PKT_F_FIRST)) {
		*out = send_find(e, h);
		return *out ? 0 : -ENOBUFS; /* its first fragment was refused */
	}
	if (q->send_head == NO_SLOT)
		return -ENOBUFS;
	struct post *po = &e->posts[q->send_head];
	if (h->msg_len > po->len)
		return -EMSGSIZE;
	if (h->flags & DNP_PKT_F_LAST) {
		a = single;
		*a = (struct sendasm){ .va = po->va, .len = po->len };
	} else {
		a = send_new(e);
		/*
		 * Too many multi-packet SENDs arriving at once. Waiting here
		 * would block this input FIFO behind messages whose rest may sit
		 * in it: refuse instead.
		 */
		if (!a)
			return -EBUSY;
		*a = (struct sendasm){ .active = true,
				       .src = h->src,
				       .src_port = h->src_port,
				       .dst_port = h->dst_port,
				       .msg_id = h->msg_id,
				       .va = po->va,
				       .len = po->len,
				       .msg_len = h->msg_len };
		e->nsends++;
	}
	post_remove(e, q, po->va);
	*out = a;
	return 0;
}

static int deliver_send(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload,
			struct evq *q, uint64_t now)
{
	struct sendasm *a, single;
	int rc = send_slot(e, h, q, &single, &a);

	if (rc < 0)
		return deliver_fail(e, h, rc, now);
	/* SEND-target buffers are chosen by the receiver: no key to check */
	const struct dnp_buf *b = dnp_buftab_find(e->bt, h->dst_port, a->va + h->offset, h->len);
	rc = b && (b->flags & DNP_BUF_SEND_TARGET) ? 0 : -ENOENT;
	if (rc == 0 && h->len &&
	    e->c.mem->write(e->c.mem_ctx, h->dst_port, b, a->va + h->offset, payload, h->len))
		rc = -EFAULT;
	if (h->flags & DNP_PKT_F_LAST) {
		int src = mem_settle(e, h->dst_port, a->va, h->msg_len);

		if (rc == 0)
			rc = src;
	}
	if (rc < 0) {
		send_end(e, a);
		post_front(e, h->dst_port, a->va,
			   a->len); /* the message failed: its buffer is free */
		return deliver_fail(e, h, rc, now);
	}
	e->st.bytes_delivered += h->len;
	a->t_last = now;
	if (!(h->flags & DNP_PKT_F_LAST))
		return 0;
	send_end(e, a);
	return deliver_rx_done(e, h, q, DNP_EV_RX_SEND, DNP_OP_SEND, a->va, now);
}

/*
 * A GET request: the request itself becomes the responder job, so accepting
 * a GET never waits for anything: a request that had to wait for a free
 * responder would block its input FIFO, and two nodes GETting from each
 * other could then wait on each other for ever.
 */
static int deliver_get_req(struct dnp_engine *e, const struct dnp_pkt_hdr *h,
			   const uint8_t *payload, struct pkt *p, uint64_t now)
{
	struct dnp_get_desc d;
	const struct dnp_buf *b;
	struct dnp_hop hop;

	memcpy(&d.dst_va, payload, 8);
	memcpy(&d.dst_key, payload + 8, 4);
	memcpy(&d.len, payload + 12, 4);
	d.dst_va = le64toh(d.dst_va);
	d.dst_key = le32toh(d.dst_key);
	d.len = le32toh(d.len);
	int rc = dnp_buftab_lookup(e->bt, h->dst_port, h->va, d.len ? d.len : 1, h->key,
				   DNP_BUF_GET_SOURCE, &b);
	if (rc < 0)
		return deliver_fail(e, h, rc, now);
	uint16_t via;
	if (dnp_route_plan(&e->router, h->src, &via) < 0 ||
	    dnp_route_step(&e->router, e->c.self, h->src, via, DNP_DIR_LOCAL, 0, &hop) < 0)
		return deliver_fail(e, h, -EHOSTUNREACH, now);
	struct pkt *job = p ? p : pkt_get(e, DNP_FRAME_OVERHEAD);
	if (!job)
		return -EAGAIN;
	job->h = *h;
	job->job_off = 0;
	job->job_dst_va = d.dst_va;
	job->job_dst_key = d.dst_key;
	job->job_len = d.len;
	job->job_q = hop.dir;
	job->job_via = via;
	e->dirty = true;
	if (p)
		return DELIVER_KEPT; /* still at the head of its FIFO: the caller moves it */
	q_push(&e->resp[hop.dir], job);
	return 0;
}

/*
 * A packet for this node; p is its buffer (NULL for loopback, where the
 * header and payload live on the stack). Returns 0 when handled,
 * DELIVER_KEPT when p now belongs to a responder queue, DELIVER_FULL when
 * its port's event queue has no room, or -EAGAIN when no buffer for the
 * answer is free: it then stays where it is.
 */
static int deliver(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload,
		   struct pkt *p, uint64_t now)
{
	struct evq *q = h->dst_port < e->c.max_ports ? &e->ports[h->dst_port] : NULL;
	uint8_t oport;

	switch (h->kind) {
	case DNP_PKT_CMPL:
		handle_cmpl(e, h->msg_id, -(int)h->status);
		for (unsigned i = 0; i + 4u <= h->len; i += 4u) { /* the batch (pkt.h) */
			uint32_t id;
			memcpy(&id, payload + i, 4);
			handle_cmpl(e, le32toh(id), -(int)h->status);
		}
		return 0;
	case DNP_PKT_DIAG:
		diag_take(e, h, payload);
		return 0;
	case DNP_PKT_ROUTE:
		route_take(e, h, payload);
		return 0;
	case DNP_PKT_CREDIT:
		return 0;
	default:
		break;
	}

	/*
	 * Everything below may answer with a completion report, which needs at
	 * most one buffer (send_cmpl: a success report joins its batch or
	 * flushes one; an error report takes the buffer a batch would). With
	 * it checked here, send_cmpl cannot refuse the report of a message
	 * already written.
	 */
	if (!coord_self(e, pkt_owner(h, &oport)) && !pool_has(e, CMPL_FRAME_MAX))
		return -EAGAIN;
	if ((h->flags & DNP_PKT_F_LAST) && q && q->open &&
	    (h->kind == DNP_PKT_PUT || h->kind == DNP_PKT_SEND) && !evq_room(e, q))
		return DELIVER_FULL;
	if (!q || !q->open)
		return deliver_fail(e, h, -ECONNREFUSED, now);

	switch (h->kind) {
	case DNP_PKT_PUT:
		return deliver_put(e, h, payload, q, now);
	case DNP_PKT_GET_RESP:
		return deliver_get_resp(e, h, payload, now);
	case DNP_PKT_SEND:
		return deliver_send(e, h, payload, q, now);
	case DNP_PKT_GET_REQ:
		return deliver_get_req(e, h, payload, p, now);
	default:
		return deliver_fail(e, h, -EBADMSG, now);
	}
}

/*
 * The last fragment h of a PUT or SEND waited deliver_timeout for room in
 * its port's event queue (the application stopped draining its events):
 * the message fails back to its sender with -EOVERFLOW, so that the traffic
 * behind it in the FIFO (transit traffic of other nodes) moves on. A SEND's
 * buffer goes back to the head of the port's queue. The caller checked
 * that a buffer for the report is free.
 */
static void deliver_give_up(struct dnp_engine *e, const struct dnp_pkt_hdr *h, uint64_t now)
{
	if (h->kind == DNP_PKT_SEND && !(h->flags & DNP_PKT_F_FIRST)) {
		struct sendasm *a = send_find(e, h);
		if (a) {
			send_end(e, a);
			post_front(e, a->dst_port, a->va, a->len);
		}
	}
	e->st.deliver_timeouts++;
	if (h->dst_port < e->c.max_ports)
		e->ports[h->dst_port].overrun = true;
	(void)deliver_fail(e, h, -EOVERFLOW, now);
}

/*
 * A message for 'port' waits for room in its event queue (w: the wait of
 * the queue head it sits at). True when it waited deliver_timeout, or at
 * once if the port is already overrun.
 */
static bool full_wait_over(struct dnp_engine *e, struct inwait *w, uint8_t port, uint64_t now)
{
	if (!e->c.deliver_timeout)
		return false;
	if (port < e->c.max_ports && e->ports[port].overrun)
		return true;
	if (!w->on) {
		w->on = true;
		w->since = now;
	}
	return now - w->since >= e->c.deliver_timeout;
}

/* ---------------------------------------------------------------- links */

static bool link_usable(const struct dnp_engine *e, unsigned dir)
{
	return dir < DNP_NDIRS && e->links[dir].l &&
	       dnp_link_state(e->links[dir].l) != DNP_LINK_BROKEN;
}

/* Hands p to link dir (credit was checked). */
static void link_enqueue(struct dnp_engine *e, unsigned dir, unsigned vc, struct pkt *p,
			 uint64_t now)
{
	struct xlink *x = &e->links[dir];

	p->h.vc = (uint8_t)vc;
	dnp_pkt_set_vc(p->frame, vc); /* the CRC is recomputed when it is sent */
	p->seq = dnp_link_seq_push(x->l, p, now);
	dnp_link_commit(x->l, vc, p->words);
}

/* A data packet that cannot go anywhere: tell its owner, free it. */
static void drop_unroutable(struct dnp_engine *e, struct pkt *p, int status, uint64_t now)
{
	uint8_t oport;
	struct dnp_coord owner = pkt_owner(&p->h, &oport);

	if (p->h.kind != DNP_PKT_CMPL && p->h.kind != DNP_PKT_CREDIT && p->h.kind != DNP_PKT_DIAG &&
	    p->h.kind != DNP_PKT_ROUTE)
		(void)send_cmpl(e, owner, oport, p->h.msg_id, status, now);
	pkt_put(e, p);
}

/*
 * A LINK event to every open port (len = direction, status 0 = UP again,
 * -ENOLINK = broken). Informational: dropped when a queue has no room that
 * is not promised to a command's completion.
 */
static void link_event(struct dnp_engine *e, unsigned dir, int status)
{
	struct dnp_event ev = {
		.type = DNP_EV_LINK,
		.peer_x = e->c.self.x,
		.peer_y = e->c.self.y,
		.peer_z = e->c.self.z,
		.status = (int8_t)status,
		.len = dir,
	};

	for (unsigned p = 0; p < e->c.max_ports; p++) {
		struct evq *q = &e->ports[p];
		if (!q->open)
			continue;
		if (evq_room(e, q))
			evq_push(e, q, &ev);
		else
			e->st.link_events_dropped++;
	}
}

static void link_broken(struct dnp_engine *e, unsigned dir, uint64_t now);

/* The link module reported DNP_LINK_RST_* bits: drain on DOWN, restart on UP. */
static void link_transition(struct dnp_engine *e, unsigned dir, unsigned bits, uint64_t now)
{
	struct xlink *x = &e->links[dir];

	if (bits & DNP_LINK_RST_DOWN)
		link_broken(e, dir, now);
	if (bits & DNP_LINK_RST_UP) {
		x->next_tx = 0;
		x->credit_pending = true;
		x->ack_dirty = false;
		x->ack_urgent = false;
		if (x->was_up)
			link_event(e, dir, 0);
		x->was_up = true;
		/* the neighbour (maybe just restarted) hears every state we know */
		cable_local(e, dir, false);
		for (uint32_t i = 0; i < e->ncables; i++)
			e->cables[i].pend |= (uint8_t)(1u << dir);
	}
	e->dirty = true;
}

static void link_broken(struct dnp_engine *e, unsigned dir, uint64_t now)
{
	struct xlink *x = &e->links[dir];
	void *out[64];
	unsigned n;

	while ((n = dnp_link_drain(x->l, out, 64)) > 0)
		for (unsigned i = 0; i < n; i++)
			drop_unroutable(e, out[i], -ENOLINK, now);
	/* Frames held beyond a gap belong to the old epoch: never delivered. */
	while ((n = dnp_link_rx_drain(x->l, out, 64)) > 0)
		for (unsigned i = 0; i < n; i++)
			pkt_put(e, out[i]);
	x->next_tx = 0;
	x->credit_pending = false;
	x->ack_dirty = false;
	x->ack_urgent = false;
	link_event(e, dir, -ENOLINK);
	cable_local(e, dir, true);
	/*
	 * Commands and GET responses waiting to be injected on this link: one
	 * that has not sent a packet yet takes the detour when there is one
	 * (docs/routing.md); one that has, lost packets with the link, and
	 * fails. Moved commands keep their order.
	 */
	uint32_t moved = NO_SLOT, moved_tail = NO_SLOT;
	while (e->qhead[dir] != NO_SLOT) {
		uint32_t i = e->qhead[dir];
		struct slot *s = &e->slots[i];
		struct dnp_hop hop;

		inj_pop(e, dir);
		if (s->offset != 0 || dnp_route_plan(&e->router, s->dst, &s->via) < 0 ||
		    dnp_route_step(&e->router, e->c.self, s->dst, s->via, DNP_DIR_LOCAL, 0, &hop) <
			    0 ||
		    hop.dir == dir || !link_usable(e, hop.dir)) {
			complete(e, s, -ENOLINK);
			continue;
		}
		s->queue = hop.dir;
		s->hop_vc = hop.vc;
		s->rver = e->router.ver;
		s->next = NO_SLOT;
		if (moved_tail == NO_SLOT)
			moved = i;
		else
			e->slots[moved_tail].next = i;
		moved_tail = i;
	}
	while (moved != NO_SLOT) {
		struct slot *s = &e->slots[moved];

		moved = s->next;
		inj_push(e, s->queue, s);
	}
	struct pkt *job;
	struct pktq jobs = { 0 };
	while ((job = q_pop(&e->resp[dir])) != NULL) {
		struct dnp_hop hop;
		uint16_t via;

		if (job->job_off == 0 && dnp_route_plan(&e->router, job->h.src, &via) == 0 &&
		    dnp_route_step(&e->router, e->c.self, job->h.src, via, DNP_DIR_LOCAL, 0,
				   &hop) == 0 &&
		    hop.dir != dir && link_usable(e, hop.dir)) {
			job->job_q = hop.dir;
			job->job_via = via;
			q_push(&jobs, job);
			continue;
		}
		(void)send_cmpl(e, job->h.src, job->h.src_port, job->h.msg_id, -ENOLINK, now);
		pkt_put(e, job);
	}
	while ((job = q_pop(&jobs)) != NULL)
		q_push(&e->resp[job->job_q], job);
	e->dirty = true;
}

/* ---------------------------------------------------------------- routing */

/* Words left the RX FIFO of link input 'in': the peer may be waiting to hear it. */
static void in_release(struct dnp_engine *e, unsigned in, unsigned vc, uint32_t words)
{
	e->wait[in][vc].on = false; /* the head moved */
	if (in >= DNP_NDIRS)
		return;
	dnp_link_rx_release(e->links[in].l, vc, words);
	ack_mark(&e->links[in], e->now, false);
}

/* Tries to move the head of input (dir, vc). Returns true on progress. */
static bool route_one(struct dnp_engine *e, unsigned in, unsigned vc, uint64_t now)
{
	struct pktq *q = &e->in[in][vc];
	struct pkt *p = q->head;
	struct dnp_hop hop;

	if (!p)
		return false;
	/* a packet made here (a report, DIAG, ROUTE) starts like a command */
	int rrc = in == DNP_DIR_LOCAL && vc == 0 && coord_self(e, p->h.src) ?
			  local_hop(e, p->h.dst, p->h.via, &hop) :
			  dnp_route_step(&e->router, p->h.src, p->h.dst, p->h.via, in, vc, &hop);
	if (rrc < 0) {
		q_pop(q);
		in_release(e, in, vc, p->words);
		e->st.rx_misrouted++;
		drop_unroutable(e, p, -EHOSTUNREACH, now);
		return true;
	}
	if (hop.dir == DNP_DIR_LOCAL) {
		const uint8_t *payload = p->frame + DNP_PAYLOAD_OFF;
		int rc = deliver(e, &p->h, payload, p, now);
		if (rc == -EAGAIN)
			return false;
		if (rc == DELIVER_FULL) {
			if (!full_wait_over(e, &e->wait[in][vc], p->h.dst_port, now))
				return false;
			deliver_give_up(e, &p->h, now);
		}
		q_pop(q);
		in_release(e, in, vc, p->words);
		e->st.pkts_delivered++;
		if (rc == DELIVER_KEPT)
			q_push(&e->resp[p->job_q], p);
		else
			pkt_put(e, p);
		return true;
	}
	if (!link_usable(e, hop.dir)) {
		q_pop(q);
		in_release(e, in, vc, p->words);
		drop_unroutable(e, p, -ENOLINK, now);
		return true;
	}
	struct xlink *x = &e->links[hop.dir];
	/* Nothing is queued on a link before it is UP: going UP restarts its counters. */
	if (dnp_link_state(x->l) != DNP_LINK_UP || dnp_link_window_full(x->l) ||
	    !dnp_link_can_start(x->l, hop.vc, p->words))
		return false;
	q_pop(q);
	if (in < DNP_NDIRS)
		e->st.pkts_forwarded++;
	in_release(e, in, vc, p->words);
	p->hops_tx = (uint8_t)(p->h.hops + 1);
	link_enqueue(e, hop.dir, hop.vc, p, now);
	return true;
}

/*
 * Visits the inputs round-robin, starting one further each call; only the
 * FIFOs in in_mask can hold a packet (an empty one is skipped, as
 * route_one would do nothing with it).
 */
static bool route_inputs(struct dnp_engine *e, uint64_t now)
{
	bool progress = false;
	unsigned in = e->rr;

	for (unsigned k = 0; k < NIN && e->in_mask; k++, in = in + 1 == NIN ? 0 : in + 1) {
		uint32_t bits = (e->in_mask >> (in * DNP_MAX_VC)) & ((1u << DNP_MAX_VC) - 1u);

		for (unsigned vc = 0; bits && vc < e->c.link.nvc; vc++, bits >>= 1) {
			if (!(bits & 1u))
				continue;
			while (route_one(e, in, vc, now))
				progress = true;
			if (!e->in[in][vc].head)
				e->in_mask &= ~(1u << (in * DNP_MAX_VC + vc));
		}
	}
	e->rr = (uint8_t)(e->rr + 1 == NIN ? 0 : e->rr + 1);
	return progress;
}

/* ---------------------------------------------------------------- injection */

/* Header of the next packet of an application command. */
static void build_cmd_hdr(struct dnp_engine *e, const struct slot *s, uint32_t len,
			  struct dnp_pkt_hdr *h, uint64_t now)
{
	memset(h, 0, sizeof(*h));
	h->lflags = DNP_LINK_F_SEQ;
	h->dst = s->dst;
	h->via = s->via;
	h->src = e->c.self;
	h->dst_port = s->c.dst_port;
	h->src_port = s->port;
	h->msg_id = s->msg_id;
	h->key = s->c.remote_key;
	h->timestamp = (uint32_t)now;
	h->flags = 0;
	if (s->c.op == DNP_OP_GET) {
		h->kind = DNP_PKT_GET_REQ;
		h->va = s->c.remote_va;
		h->len = DNP_GET_DESC_BYTES;
		h->flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST;
		h->msg_len = DNP_GET_DESC_BYTES;
		return;
	}
	h->kind = s->c.op == DNP_OP_SEND ? DNP_PKT_SEND : DNP_PKT_PUT;
	h->va = s->c.op == DNP_OP_SEND ? 0 : s->c.remote_va + s->offset;
	h->offset = (uint32_t)s->offset;
	h->len = (uint16_t)len;
	h->msg_len = (uint32_t)s->c.len;
	if (s->offset == 0)
		h->flags |= DNP_PKT_F_FIRST;
	if (s->offset + len == s->c.len)
		h->flags |= DNP_PKT_F_LAST;
}

/* Header of the next GET response packet of a responder job. */
static void build_resp_hdr(struct dnp_engine *e, const struct pkt *job, uint32_t len,
			   struct dnp_pkt_hdr *h, uint64_t now)
{
	memset(h, 0, sizeof(*h));
	h->lflags = DNP_LINK_F_SEQ;
	h->kind = DNP_PKT_GET_RESP;
	h->dst = job->h.src;
	h->via = job->job_via;
	h->src = e->c.self;
	h->dst_port = job->h.src_port;
	h->src_port = job->h.dst_port;
	h->msg_id = job->h.msg_id; /* the requester's id: it completes its GET with it */
	h->va = job->job_dst_va + job->job_off;
	h->key = job->job_dst_key;
	h->offset = (uint32_t)job->job_off;
	h->len = (uint16_t)len;
	h->msg_len = job->job_len;
	h->timestamp = (uint32_t)now;
	if (job->job_off == 0)
		h->flags |= DNP_PKT_F_FIRST;
	if (job->job_off + len == job->job_len)
		h->flags |= DNP_PKT_F_LAST;
}

/*
 * Copies len bytes of port's memory at va into dst: e->scratch for a
 * loopback delivery, else straight into the payload of the packet buffer
 * that will carry it (a private copy either way, taken once).
 */
static int read_local(struct dnp_engine *e, unsigned port, uint64_t va, uint32_t len, uint8_t *dst,
		      const struct dnp_mem_seq *seq)
{
	if (!len)
		return 0;
	/* a registered source is passed on so the reader can use its mapping */
	const struct dnp_buf *b = dnp_buftab_find(e->bt, (uint8_t)port, va, len);
	return e->c.mem->read(e->c.mem_ctx, port, b, va, dst, len, seq) ? -EFAULT : 0;
}

/* Where the payload of the next packet towards output qi goes (see read_local). */
static uint8_t *payload_buf(struct dnp_engine *e, unsigned qi, uint32_t len, struct pkt **p)
{
	if (qi == DNP_DIR_LOCAL) {
		*p = NULL;
		return e->scratch;
	}
	*p = pkt_get(e, (uint32_t)dnp_pkt_frame_len(len)); /* out_ready saw one free */
	return (*p)->frame + DNP_PAYLOAD_OFF;
}

/*
 * May a packet of len payload bytes for dst leave through output qi now?
 * Credit, window and a buffer are checked before any memory is read, so
 * memory is read only for a packet that can leave. Loopback always may.
 */
static bool out_ready(struct dnp_engine *e, unsigned qi, struct dnp_coord dst, uint16_t via,
		      uint32_t len, int known_vc, uint8_t *vc)
{
	*vc = 0;
	if (qi == DNP_DIR_LOCAL)
		return true;
	struct xlink *x = &e->links[qi];
	struct dnp_hop hop;
	uint32_t flen = (uint32_t)dnp_pkt_frame_len(len);

	if (known_vc >= 0) /* routed to qi, and the router has not changed since */
		hop.vc = (uint8_t)known_vc;
	else if (dnp_route_step(&e->router, e->c.self, dst, via, DNP_DIR_LOCAL, 0, &hop) < 0 ||
		 hop.dir != qi)
		hop.vc = 0; /* routes changed since it was queued: keep the queue's link */
	if (!pool_has(e, flen) || dnp_link_state(x->l) != DNP_LINK_UP ||
	    dnp_link_window_full(x->l) || !dnp_link_can_start(x->l, hop.vc, flen / DNP_WORD_BYTES))
		return false;
	*vc = hop.vc;
	return true;
}

/*
 * Sends h with its payload (from payload_buf): onto link qi in packet p, or
 * delivered here for loopback (p NULL, payload in e->scratch). Returns 0,
 * -EAGAIN or DELIVER_FULL (loopback delivery must wait), or the encoder's
 * error; p is consumed unless the delivery must wait.
 */
static int out_send(struct dnp_engine *e, unsigned qi, struct dnp_pkt_hdr *h, uint8_t vc,
		    struct pkt *p, uint64_t now)
{
	if (qi == DNP_DIR_LOCAL) {
		int rc = deliver(e, h, e->scratch, NULL, now);
		if (rc == -EAGAIN || rc == DELIVER_FULL)
			return rc;
		e->lo_wait.on = false;
		e->st.pkts_injected++;
		e->st.pkts_delivered++;
		return 0;
	}
	h->vc = vc;
	h->hops = 1;
	/* the payload is in place; the CRC is computed once, by the restamp at send time */
	int n = dnp_pkt_encode_unsealed(h, p->frame + DNP_PAYLOAD_OFF, p->frame, DNP_MAX_FRAME);
	if (n < 0) {
		pkt_put(e, p);
		return n;
	}
	if (h != &p->h)
		p->h = *h;
	p->flen = (uint32_t)n;
	p->words = (uint32_t)n / DNP_WORD_BYTES;
	p->in_dir = DNP_DIR_LOCAL;
	p->hops_tx = 1;
	link_enqueue(e, qi, vc, p, now);
	e->st.pkts_injected++;
	return 0;
}

/* Takes the head command off queue qi and ends it with err. */
static bool inj_abort(struct dnp_engine *e, unsigned qi, struct slot *s, int err)
{
	inj_pop(e, qi);
	complete(e, s, err);
	return true;
}

/* Puts the next packet's payload of command s in dst. */
static int load_cmd_payload(struct dnp_engine *e, const struct slot *s, uint32_t len, uint8_t *dst)
{
	if (s->c.op == DNP_OP_GET) {
		uint64_t va = htole64(s->c.local_va);
		uint32_t k = htole32(s->c.local_key), l = htole32((uint32_t)s->c.len);

		memcpy(dst, &va, 8);
		memcpy(dst + 8, &k, 4);
		memcpy(dst + 12, &l, 4);
		return 0;
	}
	/* a command's reads: its own id (msg_id is unique among live slots) */
	const struct dnp_mem_seq seq = { .id = s->msg_id, .end = s->c.local_va + s->c.len };

	return read_local(e, s->port, s->c.local_va + s->offset, len, dst, &seq);
}

/* One packet of the command at the head of injection queue qi. */
static bool inject_one(struct dnp_engine *e, unsigned qi, uint64_t now)
{
	if (e->qhead[qi] == NO_SLOT)
		return false;
	struct slot *s = &e->slots[e->qhead[qi]];

	if (s->offset == UINT64_MAX) /* failed while queued */
		return inj_abort(e, qi, s, (int)(int64_t)s->c.rsvd3);
	if (s->orphan)
		return inj_abort(e, qi, s, -ECONNRESET);
	if (qi != DNP_DIR_LOCAL && !link_usable(e, qi))
		return inj_abort(e, qi, s, -ENOLINK);

	bool is_getreq = s->c.op == DNP_OP_GET;
	uint64_t remaining = s->c.len - s->offset;
	uint32_t len = is_getreq                   ? DNP_GET_DESC_BYTES :
		       remaining > DNP_MAX_PAYLOAD ? DNP_MAX_PAYLOAD :
						     (uint32_t)remaining;
	struct dnp_pkt_hdr hl, *h;
	uint8_t vc;

	struct pkt *p;
	uint8_t *buf;

	if (!out_ready(e, qi, s->dst, s->via, len, s->rver == e->router.ver ? s->hop_vc : -1, &vc))
		return false;
	buf = payload_buf(e, qi, len, &p);
	if (load_cmd_payload(e, s, len, buf) < 0) {
		if (p)
			pkt_put(e, p);
		return inj_abort(e, qi, s, -EFAULT);
	}
	h = p ? &p->h : &hl; /* built where the packet keeps it (loopback: on the stack) */
	build_cmd_hdr(e, s, len, h, now);
	int rc = out_send(e, qi, h, vc, p, now);
	if (rc == DELIVER_FULL) {
		/*
		 * Loopback to a port whose event queue stays full: bounded like
		 * arriving traffic, or it would hold up every other port's
		 * loopback commands queued behind it.
		 */
		if (!full_wait_over(e, &e->lo_wait, h->dst_port, now))
			return false;
		deliver_give_up(e, h, now); /* reports to ourselves: marks s failed */
		return inj_abort(e, qi, s, -EOVERFLOW);
	}
	if (rc == -EAGAIN)
		return false;
	if (rc < 0) /* cannot happen for a checked command; fail it loudly */
		return inj_abort(e, qi, s, rc);
	if (s->offset == UINT64_MAX) /* loopback: completed (or failed) by its own delivery */
		return inj_abort(e, qi, s, (int)(int64_t)s->c.rsvd3);
	s->offset += is_getreq ? s->c.len : len;
	if (s->offset >= s->c.len || is_getreq)
		inj_pop(e, qi); /* it now waits for its completion report */
	return true;
}

/* Ends the responder job at the head of resp[qi], telling the requester err. */
static bool resp_abort(struct dnp_engine *e, unsigned qi, int err, uint64_t now)
{
	struct pkt *job = q_pop(&e->resp[qi]);

	(void)send_cmpl(e, job->h.src, job->h.src_port, job->h.msg_id, err, now);
	pkt_put(e, job);
	return true;
}

/* One packet of the GET response at the head of resp[qi]. */
static bool respond_one(struct dnp_engine *e, unsigned qi, uint64_t now)
{
	struct pkt *job = e->resp[qi].head;

	if (!job)
		return false;
	if (qi != DNP_DIR_LOCAL && !link_usable(e, qi))
		return resp_abort(e, qi, -ENOLINK, now);

	uint64_t remaining = job->job_len - job->job_off;
	uint32_t len = remaining > DNP_MAX_PAYLOAD ? DNP_MAX_PAYLOAD : (uint32_t)remaining;
	struct dnp_pkt_hdr hl, *h;
	uint8_t vc;

	struct pkt *p;
	uint8_t *buf;

	if (!out_ready(e, qi, job->h.src, job->job_via, len, -1, &vc))
		return false;
	buf = payload_buf(e, qi, len, &p);
	/* a GET's reads: bit 63 and the requester's node, port and id */
	const struct dnp_mem_seq seq = {
		.id = 1ull << 63 | (uint64_t)dnp_torus_id(&e->c.torus, job->h.src) << 40 |
		      (uint64_t)job->h.src_port << 32 | job->h.msg_id,
		.end = job->h.va + job->job_len,
	};
	if (read_local(e, job->h.dst_port, job->h.va + job->job_off, len, buf, &seq) < 0) {
		if (p)
			pkt_put(e, p);
		return resp_abort(e, qi, -EFAULT, now);
	}
	h = p ? &p->h : &hl; /* built where the packet keeps it (loopback: on the stack) */
	build_resp_hdr(e, job, len, h, now);
	int rc = out_send(e, qi, h, vc, p, now);
	if (rc == -EAGAIN)
		return false;
	if (rc < 0)
		return resp_abort(e, qi, rc, now);
	job->job_off += len;
	if (job->job_off >= job->job_len) {
		q_pop(&e->resp[qi]);
		pkt_put(e, job);
	}
	return true;
}

static bool inject(struct dnp_engine *e, uint64_t now)
{
	bool progress = false;

	for (unsigned qi = 0; qi < NIN; qi++) {
		if (e->qhead[qi] == NO_SLOT && !e->resp[qi].head)
			continue;
		/* GET responses first: a requester is waiting on them */
		for (unsigned k = 0; k < 64 && respond_one(e, qi, now); k++)
			progress = true;
		for (unsigned k = 0; k < 64 && inject_one(e, qi, now); k++)
			progress = true;
	}
	return progress;
}

/* ---------------------------------------------------------------- inputs */

/*
 * Is h a frame of link dir? The peer at the other end sends from its output
 * in the opposite direction, and a link-control frame names the neighbour
 * itself as its source. A frame recorded on another link (in a ring of size
 * 2 both links join the same two nodes, and each has its own sequence space)
 * fails here before its seq or ack is looked at.
 * (A link epoch, once links have one, is checked here too.)
 */
static bool rx_on_own_link(const struct dnp_engine *e, unsigned dir, const struct dnp_pkt_hdr *h)
{
	if (h->src_dir != (uint8_t)dnp_torus_opposite((enum dnp_dir)dir))
		return false;
	if (h->kind == DNP_PKT_CREDIT &&
	    !dnp_coord_eq(h->src, dnp_torus_neighbour(&e->c.torus, e->c.self, (enum dnp_dir)dir)))
		return false;
	return true;
}

/* Drops a received frame (p: its private copy, or NULL) and returns rc. */
static int rx_drop(struct dnp_engine *e, struct pkt *p, int rc)
{
	if (p)
		pkt_put(e, p);
	return rc;
}

/* Records an accepted (or held) frame's header (if not decoded there) and origin in its packet. */
static void rx_fill(struct pkt *p, const struct dnp_pkt_hdr *h, size_t len, uint32_t words,
		    unsigned dir)
{
	if (h != &p->h)
		p->h = *h;
	p->flen = (uint32_t)len;
	p->words = words;
	p->in_dir = (uint8_t)dir;
	p->in_vc = h->vc;
}

int dnp_engine_rx(struct dnp_engine *e, unsigned dir, const void *frame, size_t len, uint64_t now)
{
	struct dnp_pkt_hdr hbuf, *h;
	const uint8_t *payload;
	void *freed[64];
	unsigned n;

	if (dir >= DNP_NDIRS || !e->links[dir].l)
		return -ENODEV;
	struct xlink *x = &e->links[dir];
	if (dnp_link_state(x->l) == DNP_LINK_BROKEN && !dnp_link_recovers(x->l))
		return -ENOLINK;
	if (len > DNP_MAX_FRAME) {
		e->st.rx_malformed++;
		return -EMSGSIZE;
	}
	/*
	 * The frame may sit in memory the peer can still write (shm links):
	 * copy it first, then decode and use only the copy. The copy goes
	 * into the packet buffer that will hold it, or, when none is free,
	 * into e->rxcopy so that its ack and credits are still heard.
	 */
	struct pkt *p = pool_has_rx(e, (uint32_t)len) ? pkt_get(e, (uint32_t)len) : NULL;
	uint8_t *copy = p ? p->frame : e->rxcopy;

	if (!p)
		e->st.rx_nobuf++;
	memcpy(copy, frame, len);
	h = p ? &p->h : &hbuf; /* decoded where the packet keeps it: no second copy */
	int rc = dnp_pkt_decode(copy, len, h, &payload);
	if (rc < 0) {
		if (rc == -EILSEQ)
			e->st.rx_crc_errors++;
		else
			e->st.rx_malformed++;
		return rx_drop(e, p, rc);
	}
	if (!rx_on_own_link(e, dir, h)) {
		e->st.rx_wrong_link++;
		return rx_drop(e, p, -EXDEV);
	}
	uint32_t words = (uint32_t)(len / DNP_WORD_BYTES);
	dnp_link_stats_rx(x->l, words);
	e->dirty = true;

	/* Epochs (link.h): a RESET frame drives the handshake, others must match. */
	if (h->lflags & DNP_LINK_F_RESET) {
		link_transition(e, dir, dnp_link_on_reset(x->l, h->epoch, h->credit, now), now);
		return rx_drop(e, p, 0);
	}
	rc = dnp_link_rx_epoch(x->l, h->epoch, now);
	if (rc < 0)
		return rx_drop(e, p, rc);
	if (rc)
		link_transition(e, dir, (unsigned)rc, now);

	/* The peer's cumulative ack frees our unacked packets. */
	while ((n = dnp_link_on_ack(x->l, h->ack, freed, 64, now)) > 0) {
		for (unsigned i = 0; i < n; i++)
			pkt_put(e, freed[i]);
		x->next_tx = x->next_tx > n ? x->next_tx - n : 0;
		if (n < 64)
			break;
	}
	if (h->kind == DNP_PKT_CREDIT) {
		/* What the peer holds beyond a gap: resend only what it lacks. */
		(void)dnp_link_on_sack(x->l, h->ack, h->sack, now);
		dnp_link_on_credit(x->l, h->credit, now);
		return rx_drop(e, p, 0);
	}
	if (h->vc >= e->c.link.nvc) { /* a VC this link does not have: never indexes in[][] */
		e->st.rx_malformed++;
		return rx_drop(e, p, -ERANGE);
	}
	/* accepted, or a duplicate/gap the peer must hear about at once */
	ack_mark(x, now, h->seq != dnp_link_ack_value(x->l));
	if (h->seq != dnp_link_ack_value(x->l)) {
		rc = dnp_link_rx_seq(x->l, h->seq); /* duplicate or gap */
		if (rc == -EAGAIN && p) {
			/* Beyond a gap: held until the gap fills (link.h), or dropped. */
			rx_fill(p, h, len, words, dir);
			if (dnp_link_rx_hold(x->l, h->seq, h->vc, words, p) == 0)
				return 0;
		}
		return rx_drop(e, p, rc);
	}
	if (dnp_link_rx_occupancy(x->l, h->vc) + words > e->c.link.fifo_words) {
		(void)dnp_link_rx_accept(x->l, h->vc, words); /* counts the overflow */
		return rx_drop(e, p, -ENOBUFS);
	}
	if (!p) {
		/*
		 * The expected frame, and no buffer: the frames held beyond its
		 * gap would wait for it for ever. They go (their sender resends
		 * them, as the selective ack no longer names them) and it takes
		 * a buffer they leave, if the reserve allows.
		 */
		void *held[64];
		unsigned k;

		while ((k = dnp_link_rx_drain(x->l, held, 64)) > 0)
			for (unsigned i = 0; i < k; i++)
				pkt_put(e, held[i]);
		if (!pool_has_rx(e, (uint32_t)len))
			return -ENOBUFS;
		p = pkt_get(e, (uint32_t)len);
		memcpy(p->frame, copy, len);
	}
	(void)dnp_link_rx_seq(x->l, h->seq); /* the expected one: accepted */
	(void)dnp_link_rx_accept(x->l, h->vc, words);
	rx_fill(p, h, len, words, dir);
	in_push(e, dir, h->vc, p);
	/* The frames held behind the gap it closed follow, in order. */
	while ((p = dnp_link_rx_unhold(x->l)) != NULL) {
		if (dnp_link_rx_accept(x->l, p->in_vc, p->words) < 0) {
			pkt_put(e, p); /* counted as an overflow; the peer resends it */
			break;
		}
		(void)dnp_link_rx_seq(x->l, p->h.seq);
		in_push(e, dir, p->in_vc, p);
	}
	return 0;
}

int dnp_engine_submit(struct dnp_engine *e, unsigned port, const struct dnp_cmd *c, uint64_t now)
{
	if (port >= e->c.max_ports || !e->ports[port].open)
		return -ENOENT;
	struct evq *q = &e->ports[port];
	if (evq_used(q) + q->reserved >= e->c.event_queue)
		return -EAGAIN; /* no room for its completion event */
	struct slot *s = slot_alloc(e);
	if (!s)
		return -EAGAIN;
	s->c = *c;
	s->c.src_port = (uint8_t)port;
	s->port = (uint8_t)port;
	s->t_submit = now;
	s->dst = (struct dnp_coord){ c->dst_x, c->dst_y, c->dst_z };
	q->reserved++;
	e->st.cmds_accepted++;
	e->dirty = true;

	int rc = dnp_cmd_check(c, &e->c.torus, e->c.max_ports);
	struct dnp_hop hop;
	/* dst is in the torus now: with no known fault its plan is direct (via 0) */
	if (rc == 0 && e->router.n_faults)
		rc = dnp_route_plan(&e->router, s->dst, &s->via);
	if (rc == 0)
		rc = local_hop(e, s->dst, s->via, &hop);
	if (rc == 0 && hop.dir != DNP_DIR_LOCAL && !link_usable(e, hop.dir))
		rc = -ENOLINK;
	if (rc < 0) {
		complete(e, s, rc);
		return 0;
	}
	s->hop_vc = hop.vc;
	s->rver = e->router.ver;
	inj_push(e, hop.dir, s);
	return 0;
}

/* ---------------------------------------------------------------- time */

/* How often timeouts are checked: a quarter of the shortest one (0: never). */
static uint64_t timeout_period(const struct dnp_engine *e)
{
	uint64_t t = e->c.cmd_timeout;

	if (e->c.reasm_timeout && (!t || e->c.reasm_timeout < t))
		t = e->c.reasm_timeout;
	return t ? t / 4 + 1 : 0;
}

static void check_timeouts(struct dnp_engine *e, uint64_t now)
{
	uint64_t period = timeout_period(e);

	if (!period || now < e->next_timeout_check)
		return;
	e->next_timeout_check = now + period;
	if (e->c.cmd_timeout)
		for (uint32_t i = 0; i < e->c.max_commands; i++) {
			struct slot *s = &e->slots[i];
			if (s->state == SLOT_ACTIVE && now - s->t_submit > e->c.cmd_timeout)
				fail_cmd(e, s, -ETIMEDOUT);
		}
	if (e->c.reasm_timeout && e->nsends)
		for (uint32_t i = 0; i < e->c.max_sends; i++) {
			struct sendasm *a = &e->sends[i];
			if (a->active && now - a->t_last > e->c.reasm_timeout)
				send_timeout(e, a);
		}
}

void dnp_engine_run(struct dnp_engine *e, uint64_t now)
{
	e->now = now;
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		struct xlink *x = &e->links[d];
		if (!x->l)
			continue;
		unsigned ev = dnp_link_tick(x->l, now);
		if (ev & DNP_LINK_EV_CREDIT_DUE)
			x->credit_pending = true;
		if (ev & DNP_LINK_EV_RETX) /* the link marked what to resend */
			dnp_link_retx_done(x->l, now);
		if (ev & DNP_LINK_EV_BROKEN)
			link_broken(e, d, now);
	}
	check_timeouts(e, now);
	if (e->ncables)
		route_announce(e, now);
	for (unsigned r = 0; r < MAX_RUN_ROUNDS; r++) {
		bool progress = route_inputs(e, now);
		progress |= inject(e, now);
		if (e->ncmplb) /* this round's success reports, one frame per sender */
			progress |= cmplb_flush_all(e, now);
		if (!progress)
			break;
	}
	e->dirty = e->ncmplb != 0; /* a batch no buffer could take yet */
}

/* ---------------------------------------------------------------- outputs */

/*
 * Does the ack or occupancy change of link x need a CREDIT frame in this
 * tx_burst (prompt credits, engine.h: ack_delay)?
 */
static bool credit_due(const struct dnp_engine *e, const struct xlink *x, uint64_t now)
{
	if (!e->c.prompt_credits || !x->ack_dirty)
		return false;
	if (!e->c.ack_delay || x->ack_urgent || now - x->ack_since >= e->c.ack_delay)
		return true;
	/* the peer's window fills, a gap to report, or its view of our FIFO matters */
	return dnp_link_ack_value(x->l) - x->ack_told >= e->c.link.window / 4 ||
	       dnp_link_sack(x->l) != 0 || dnp_link_credit_stale(x->l);
}

/* Puts unacked packet i of link x on the wire (into *out); returns 1. */
static unsigned tx_seq(struct xlink *x, unsigned i, bool retx, unsigned dir, uint32_t ack,
		       struct dnp_frame *out, uint64_t now)
{
	uint32_t seq = 0;
	struct pkt *p = dnp_link_unacked_at(x->l, i, &seq);

	dnp_pkt_set_epoch(p->frame, dnp_link_epoch(x->l));
	dnp_pkt_restamp(p->frame, p->flen, DNP_LINK_F_SEQ, seq, ack, (uint8_t)dir,
			retx ? DNP_FT_RETX : 0, p->hops_tx);
	*out = (struct dnp_frame){ p->frame, p->flen };
	dnp_link_stats_tx(x->l, p->words, retx);
	dnp_link_sent(x->l, i, now);
	return 1;
}

unsigned dnp_engine_tx_burst(struct dnp_engine *e, unsigned dir, struct dnp_frame *out,
			     unsigned max, uint64_t now)
{
	unsigned n = 0;

	if (dir >= DNP_NDIRS || !e->links[dir].l || !max)
		return 0;
	struct xlink *x = &e->links[dir];
	enum dnp_link_state st = dnp_link_state(x->l);
	if (st == DNP_LINK_BROKEN && !dnp_link_recovers(x->l))
		return 0;
	uint32_t ack = dnp_link_ack_value(x->l);
	bool up = st == DNP_LINK_UP;

	if (dnp_link_sends_reset(x->l) && (x->credit_pending || dnp_link_reset_due(x->l))) {
		/* Not UP: a probe instead of a credit. UP: an announce (link.h). */
		struct dnp_pkt_hdr h = {
			.kind = DNP_PKT_CREDIT,
			.lflags = DNP_LINK_F_RESET,
			.ack = ack,
			.src_dir = (uint8_t)dir,
			.dst = e->c.self,
			.src = e->c.self,
			.timestamp = (uint32_t)now,
		};
		h.epoch = dnp_link_take_reset(x->l, now, h.credit);
		int len = dnp_pkt_encode(&h, NULL, x->rframe, sizeof(x->rframe));
		if (len > 0) {
			out[n++] = (struct dnp_frame){ x->rframe, (uint32_t)len };
			dnp_link_stats_tx(x->l, (uint32_t)len / DNP_WORD_BYTES, false);
		}
		if (!up) {
			x->credit_pending = false;
			return n;
		}
	}
	if (!up)
		return 0;
	if (n < max && (x->credit_pending || credit_due(e, x, now))) {
		struct dnp_pkt_hdr h = {
			.kind = DNP_PKT_CREDIT,
			.len = dnp_pkt_credit_len(e->c.link.nvc),
			.epoch = dnp_link_epoch(x->l),
			.ack = ack,
			.src_dir = (uint8_t)dir,
			.dst = e->c.self,
			.src = e->c.self,
			.timestamp = (uint32_t)now,
		};
		dnp_link_take_credit(x->l, now, h.credit);
		h.sack = dnp_link_sack(x->l);
		if (h.sack)
			h.lflags |= DNP_LINK_F_SACK;
		int len = dnp_pkt_encode(&h, NULL, x->cframe, sizeof(x->cframe));
		if (len > 0) {
			out[n++] = (struct dnp_frame){ x->cframe, (uint32_t)len };
			dnp_link_stats_tx(x->l, (uint32_t)len / DNP_WORD_BYTES, false);
		}
		x->credit_pending = false;
		x->ack_dirty = false;
		x->ack_urgent = false;
	}
	/* Resends first (what the link marked lost), then packets never sent. */
	unsigned seq0 = n;
	int ri;
	while (n < max && (ri = dnp_link_retx_next(x->l)) >= 0 && (unsigned)ri < x->next_tx)
		n += tx_seq(x, (unsigned)ri, true, dir, ack, &out[n], now);
	unsigned unacked = dnp_link_unacked(x->l);
	while (n < max && x->next_tx < unacked) {
		n += tx_seq(x, x->next_tx, false, dir, ack, &out[n], now);
		x->next_tx++;
	}
	/* They carry the ack: a delayed credit has only the occupancy left to say. */
	if (n > seq0 && x->ack_dirty && e->c.ack_delay)
		x->ack_since = now;
	if (n)
		x->ack_told = ack;
	return n;
}

unsigned dnp_engine_poll_events(struct dnp_engine *e, unsigned port, struct dnp_event *ev,
				unsigned max)
{
	if (port >= e->c.max_ports)
		return 0;
	struct evq *q = &e->ports[port];
	unsigned n = 0;

	while (n < max && q->head != q->tail) {
		ev[n++] = q->ev[q->head & (e->c.event_queue - 1)];
		q->head++;
	}
	if (n) {
		e->dirty = true; /* room for deliveries that waited */
		q->overrun = false;
	}
	return n;
}

bool dnp_engine_has_work(const struct dnp_engine *e)
{
	if (e->dirty)
		return true;
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		const struct xlink *x = &e->links[d];
		if (!x->l)
			continue;
		enum dnp_link_state st = dnp_link_state(x->l);
		if (st == DNP_LINK_BROKEN && !dnp_link_recovers(x->l))
			continue;
		if (dnp_link_reset_due(x->l) || x->credit_pending)
			return true;
		if (st == DNP_LINK_UP &&
		    (credit_due(e, x, e->now) || x->next_tx < dnp_link_unacked(x->l) ||
		     dnp_link_retx_due(x->l)))
			return true;
	}
	return false;
}

uint64_t dnp_engine_next_deadline(const struct dnp_engine *e)
{
	uint64_t t = UINT64_MAX;

	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		if (!e->links[d].l)
			continue;
		uint64_t ld = dnp_link_next_deadline(e->links[d].l);
		if (ld < t)
			t = ld;
		const struct xlink *x = &e->links[d];
		if (e->c.prompt_credits && e->c.ack_delay && x->ack_dirty &&
		    x->ack_since + e->c.ack_delay < t)
			t = x->ack_since + e->c.ack_delay;
	}
	if (((e->c.cmd_timeout && e->nactive) || (e->c.reasm_timeout && e->nsends)) &&
	    e->next_timeout_check < t)
		t = e->next_timeout_check;
	if (e->c.deliver_timeout && e->lo_wait.on && e->lo_wait.since + e->c.deliver_timeout < t)
		t = e->lo_wait.since + e->c.deliver_timeout;
	if (e->c.deliver_timeout)
		for (unsigned in = 0; in < NIN; in++)
			for (unsigned vc = 0; vc < e->c.link.nvc; vc++) {
				const struct inwait *w = &e->wait[in][vc];
				if (w->on && w->since + e->c.deliver_timeout < t)
					t = w->since + e->c.deliver_timeout;
			}
	return t;
}

uint64_t dnp_engine_pending(const struct dnp_engine *e)
{
	return (uint64_t)e->pkts_used + e->nactive;
}

/* ---------------------------------------------------------------- ports, buffers */

int dnp_engine_port_open(struct dnp_engine *e, unsigned port)
{
	if (port >= e->c.max_ports)
		return -EINVAL;
	struct evq *q = &e->ports[port];
	if (q->open)
		return -EBUSY;
	q->open = true;
	q->overrun = false;
	q->head = q->tail = 0;
	q->reserved = 0;
	q->send_head = q->send_tail = NO_SLOT;
	return 0;
}

/*
 * The port's application is gone: its GET responder jobs stop reading its
 * memory now (a new application may soon be given the same port), and their
 * requesters hear -ECONNRESET. Packets already on a link were read while
 * the old application was there.
 */
static void resp_abort_port(struct dnp_engine *e, unsigned port, uint64_t now)
{
	for (unsigned qi = 0; qi < NIN; qi++) {
		struct pktq keep = { 0 };
		struct pkt *job;

		while ((job = q_pop(&e->resp[qi])) != NULL) {
			if (job->h.dst_port != port) {
				q_push(&keep, job);
				continue;
			}
			(void)send_cmpl(e, job->h.src, job->h.src_port, job->h.msg_id, -ECONNRESET,
					now);
			pkt_put(e, job);
		}
		e->resp[qi] = keep;
	}
}

int dnp_engine_port_close(struct dnp_engine *e, unsigned port)
{
	if (port >= e->c.max_ports || !e->ports[port].open)
		return -ENOENT;
	struct evq *q = &e->ports[port];

	dnp_buftab_remove_port(e->bt, (uint8_t)port);
	resp_abort_port(e, port, e->now);
	while (q->send_head != NO_SLOT)
		post_remove(e, q, e->posts[q->send_head].va);
	for (uint32_t i = 0; i < e->c.max_sends; i++)
		if (e->sends[i].active && e->sends[i].dst_port == port)
			send_end(e, &e->sends[i]);
	for (uint32_t i = 0; i < e->c.max_commands; i++) {
		struct slot *s = &e->slots[i];
		if (s->state != SLOT_ACTIVE || s->port != port)
			continue;
		s->orphan = 1;
		if (!s->injecting)
			complete(e, s, -ECONNRESET);
	}
	q->open = false;
	q->head = q->tail = 0;
	q->reserved = 0;
	e->dirty = true;
	return 0;
}

int dnp_engine_register(struct dnp_engine *e, unsigned port, uint64_t va, uint64_t len,
			unsigned flags, uintptr_t priv, uint32_t *key)
{
	if (port >= e->c.max_ports || !e->ports[port].open)
		return -ENOENT;
	if (!flags || (flags & ~DNP_BUF_ALL))
		return -EINVAL;
	struct dnp_buf b = { .va = va,
			     .len = len,
			     .key = dnp_keygen_next(&e->keys),
			     .flags = (uint16_t)flags,
			     .port = (uint8_t)port,
			     .priv = priv };
	if ((flags & DNP_BUF_SEND_TARGET) && e->free_post == NO_SLOT)
		return -ENOSPC;
	int rc = dnp_buftab_insert(e->bt, &b);
	if (rc < 0)
		return rc;
	if (flags & DNP_BUF_SEND_TARGET) {
		struct evq *q = &e->ports[port];
		uint32_t i = e->free_post;
		struct post *po = &e->posts[i];
		e->free_post = po->next;
		*po = (struct post){ .va = va, .len = len, .next = NO_SLOT, .used = 1 };
		if (q->send_tail == NO_SLOT)
			q->send_head = i;
		else
			e->posts[q->send_tail].next = i;
		q->send_tail = i;
	}
	if (key)
		*key = b.key;
	e->dirty = true;
	return 0;
}

int dnp_engine_unregister(struct dnp_engine *e, unsigned port, uint64_t va)
{
	if (port >= e->c.max_ports || !e->ports[port].open)
		return -ENOENT;
	int rc = dnp_buftab_remove(e->bt, (uint8_t)port, va, NULL);
	if (rc == 0)
		post_remove(e, &e->ports[port], va);
	return rc;
}

/* ---------------------------------------------------------------- links api */

bool dnp_engine_has_link(const struct dnp_engine *e, unsigned dir)
{
	return dir < DNP_NDIRS && e->links[dir].l;
}

enum dnp_link_state dnp_engine_link_state(const struct dnp_engine *e, unsigned dir)
{
	if (!dnp_engine_has_link(e, dir))
		return DNP_LINK_BROKEN;
	return dnp_link_state(e->links[dir].l);
}

void dnp_engine_link_down(struct dnp_engine *e, unsigned dir, uint64_t now)
{
	if (dnp_engine_has_link(e, dir) && dnp_link_set_broken(e->links[dir].l))
		link_broken(e, dir, now);
}

const struct dnp_link_stats *dnp_engine_link_stats(const struct dnp_engine *e, unsigned dir)
{
	return dnp_engine_has_link(e, dir) ? dnp_link_stats(e->links[dir].l) : NULL;
}

const struct dnp_link *dnp_engine_link(const struct dnp_engine *e, unsigned dir)
{
	return dnp_engine_has_link(e, dir) ? e->links[dir].l : NULL;
}

const struct dnp_engine_stats *dnp_engine_stats(const struct dnp_engine *e)
{
	return &e->st;
}

struct dnp_router *dnp_engine_router(struct dnp_engine *e)
{
	return &e->router;
}

/* ---------------------------------------------------------------- life */

static bool pow2(uint32_t v)
{
	return v >= 2 && (v & (v - 1)) == 0;
}

int dnp_engine_create(const struct dnp_engine_conf *c, uint64_t now, struct dnp_engine **out)
{
	if (!c || !out || !c->mem || !c->mem->read || !c->mem->write || !c->max_ports ||
	    c->max_ports > DNP_MAX_PORTS || !c->max_commands || c->max_commands > 65536 ||
	    !pow2(c->event_queue) || !c->max_sends || !c->max_buffers ||
	    !dnp_torus_contains(&c->torus, c->self) || !c->link.nvc || c->link.nvc > DNP_MAX_VC ||
	    c->link.fifo_words < DNP_MAX_FRAME / DNP_WORD_BYTES)
		return -EINVAL;
	/*
	 * The engine starts whole packets: under stop-at-red a packet may begin
	 * one word below T_RED, so the FIFO needs a full frame of headroom.
	 */
	if (c->link.rule == DNP_START_STOP_AT_RED &&
	    c->link.t_red + DNP_MAX_FRAME / DNP_WORD_BYTES > c->link.fifo_words)
		return -EINVAL;
	struct dnp_engine *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->c = *c;
	int rc = dnp_route_init(&e->router, &c->torus, c->self, c->vc_mode);
	if (rc == 0)
		rc = dnp_route_set_vcs(&e->router, c->link.nvc);
	if (rc < 0)
		goto fail;
	rc = dnp_buftab_create(c->max_buffers, &e->bt);
	if (rc < 0)
		goto fail;
	rc = -ENOMEM;
	e->self_id = dnp_torus_id(&c->torus, c->self);
	unsigned nlinks = 0;
	struct dnp_link_conf lc = c->link;
	if (!lc.nonce) /* deterministic for the lab: the caller sets a random one (dnpd) */
		lc.nonce = ((uint32_t)c->key_secret[0] ^ (uint32_t)(c->key_secret[1] >> 7) ^
			    (e->self_id * 0x9e3779b9u)) |
			   1u;
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		if (c->torus.dim[d / 2] < 2)
			continue;
		int lrc = dnp_link_create(&lc, now, &e->links[d].l);
		if (lrc < 0) {
			rc = lrc;
			goto fail;
		}
		nlinks++;
	}
	/*
	 * Pool sizing: every input FIFO full of its largest packets, every
	 * link's window, plus room for local answers. Small frames (credits,
	 * completions, tiny PUTs) come from a separate pool so a flood of
	 * them does not need 4 KiB buffers.
	 */
	uint32_t big_per_fifo = c->link.fifo_words / (DNP_MAX_FRAME / DNP_WORD_BYTES) + 1;
	uint32_t small_per_fifo = c->link.fifo_words / (DNP_FRAME_OVERHEAD / DNP_WORD_BYTES);
	uint32_t fifos = nlinks * c->link.nvc;
	uint32_t window = c->link.window;
	uint32_t nbig = fifos * big_per_fifo +
			nlinks * (window < 2 * big_per_fifo * c->link.nvc ?
					  window :
					  2 * big_per_fifo * c->link.nvc) +
			16;
	uint32_t nsmall = fifos * small_per_fifo + nlinks * window + c->max_commands + 64;
	if (nsmall > 65536)
		nsmall = 65536;
	if (c->pool_big)
		nbig = c->pool_big < 65536 ? c->pool_big : 65536;
	if (c->pool_small)
		nsmall = c->pool_small < 65536 ? c->pool_small : 65536;
	e->npkts = nbig + nsmall;
	e->pkts = calloc(e->npkts, sizeof(*e->pkts));
	e->frames = malloc((size_t)nbig * DNP_MAX_FRAME + (size_t)nsmall * SMALL_FRAME);
	e->slots = calloc(c->max_commands, sizeof(*e->slots));
	e->ports = calloc(c->max_ports, sizeof(*e->ports));
	e->evmem = calloc((size_t)c->max_ports * c->event_queue, sizeof(*e->evmem));
	e->posts = calloc(c->max_buffers, sizeof(*e->posts));
	e->sends = calloc(c->max_sends, sizeof(*e->sends));
	e->nputs =
		dnp_torus_size(&c->torus) < PUTTRACK_MAX ? dnp_torus_size(&c->torus) : PUTTRACK_MAX;
	e->puts = calloc(e->nputs, sizeof(*e->puts));
	if (!e->pkts || !e->frames || !e->slots || !e->ports || !e->evmem || !e->posts ||
	    !e->sends || !e->puts)
		goto fail;
	uint8_t *f = e->frames;
	for (uint32_t i = 0; i < e->npkts; i++) {
		struct pkt *p = &e->pkts[i];
		p->big = i < nbig;
		p->frame = f;
		f += p->big ? DNP_MAX_FRAME : SMALL_FRAME;
		p->next = p->big ? e->free_big : e->free_small;
		if (p->big)
			e->free_big = p;
		else
			e->free_small = p;
	}
	for (uint32_t i = 0; i < c->max_commands; i++)
		e->slots[i].next = i + 1 < c->max_commands ? i + 1 : NO_SLOT;
	e->free_slot = 0;
	for (uint32_t i = 0; i < c->max_buffers; i++)
		e->posts[i].next = i + 1 < c->max_buffers ? i + 1 : NO_SLOT;
	e->free_post = 0;
	for (uint32_t i = 0; i < c->max_ports; i++) {
		e->ports[i].ev = e->evmem + (size_t)i * c->event_queue;
		e->ports[i].send_head = e->ports[i].send_tail = NO_SLOT;
	}
	for (unsigned i = 0; i < NIN; i++)
		e->qhead[i] = e->qtail[i] = NO_SLOT;
	dnp_keygen_init(&e->keys, c->key_secret);
	*out = e;
	return 0;
fail:
	dnp_engine_destroy(e);
	return rc;
}

void dnp_engine_destroy(struct dnp_engine *e)
{
	if (!e)
		return;
	for (unsigned d = 0; d < DNP_NDIRS; d++)
		dnp_link_destroy(e->links[d].l);
	dnp_buftab_destroy(e->bt);
	free(e->pkts);
	free(e->frames);
	free(e->slots);
	free(e->ports);
	free(e->evmem);
	free(e->posts);
	free(e->sends);
	free(e->puts);
	free(e);
}
