/* SPDX-License-Identifier: MIT */
/*
 * dnp_fi_priv.h — the parts of the libfabric provider "dnp" and what each
 * promises the others (dnp_fi.h fixes the wire format, docs/mpi.md the use).
 * The provider is split after libfabric's own object families:
 *
 *   dnp_fi_attr.c    everything fi_getinfo advertises (caps, attributes, the
 *                    checks of an application's hints) and the provider entry
 *   dnp_fi_fabric.c  fabric, event queue and domain objects; the provider lock
 *   dnp_fi_ep.c      endpoints: their peers and requests, binding, enabling,
 *                    closing, and progress (the daemon's events dispatched)
 *   dnp_fi_cq.c      completion queues: entries and error entries written by
 *                    the other parts, read (with progress) by the application
 *   dnp_fi_cntr.c    counters: operations that ended, by kind, and waits on them
 *   dnp_fi_mr.c      memory registration (fi_mr_reg: DNP buffers and keys)
 *                    and the rendez-vous registrations of user buffers
 *   dnp_fi_av.c      address vectors of struct dfi_addr
 *   dnp_fi_msg.c     FI_MSG and FI_TAGGED: the eager ring protocol, credits,
 *                    rendez-vous, matching, fi_cancel
 *   dnp_fi_rma.c     FI_RMA: fi_read as a DNP GET, fi_write as a DNP PUT
 *   dnp_fi_coll.c    FI_COLLECTIVE: AV sets, fi_join_collective, barrier,
 *                    broadcast and allreduce as the daemons' collectives
 *
 * Locking: every entry point called by the application takes dfi_lock
 * (FI_THREAD_SAFE), but data calls and CQ reads on a domain opened
 * FI_THREAD_DOMAIN (DOM_LOCKED); every function declared here expects it
 * held (or its domain serialized) unless its comment says otherwise. Errors are 0 or a negative FI_* errno.
 */
#ifndef DNP_FI_PRIV_H
#define DNP_FI_PRIV_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>

#include "dnp.h"
#include "dnp_fi.h"
#include "dnp_yield.h"
#include "regcache.h"
#include "reqtab.h"
#include "stage.h"

#define DFI_NAME "dnp"
#define DFI_FABRIC "dnp-torus"

/* Kinds of DNP command cookies (dnp_reqtab_cookie). */
enum {
	C_STAGE = 1,
	C_CREDIT = 2,
	C_GET = 3,
	C_RMA = 4,
	C_COLL = 5 /* a collective (or a join) of dnp_fi_coll.c */
};
/* States of a staging slot (stage.h). */
enum {
	S_FREE = DNP_STAGE_FREE,
	S_PENDING = DNP_STAGE_PENDING,
	S_INFLIGHT = DNP_STAGE_INFLIGHT
};
/* Kinds of requests. */
enum {
	R_SEND = 1,
	R_RECV,
	R_RMA,
	R_COLL, /* a collective (dnp_fi_coll.c) */
	R_JOIN  /* an fi_join_collective (dnp_fi_coll.c) */
};

/* The provider-wide lock (dnp_fi_fabric.c). */
extern pthread_mutex_t dfi_lock;

static inline uint64_t dfi_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ objects */

struct dfi_cq_ent {
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	bool err;
	struct fi_cq_err_entry ee;
};

struct dfi_cq {
	struct fid_cq cq;
	struct dfi_domain *dom;
	enum fi_cq_format format;
	struct dfi_cq_ent *ent;
	size_t cap, head, n;
	unsigned idle;                       /* empty reads since the last yield */
	struct dnp_yield yield;              /* yield only when somebody else wants the CPU */
	uint64_t pin_back;                   /* when the last hand-off yield returned (0: never) */
	uint64_t empty, handoffs, pin_spins; /* empty reads, hand-off yields, polls not yielded */
	uint64_t blocks;                     /* sleeps in a blocking window (dfi_wait_block) */
	bool err_told;                       /* the first error entry was said on stderr */
};

struct dfi_av {
	struct fid_av av;
	struct dfi_domain *dom;
	enum fi_av_type type;
	struct dfi_addr *tab;
	bool *used;
	size_t n, cap;
};

struct dfi_mr {
	struct fid_mr mr;
	struct dfi_domain *dom;
	void *buf;
	size_t len;
	bool registered;
	bool put_target; /* a GET may land in it (fi_read's destination) */
};

struct dfi_req {
	int kind;
	uint32_t idx, gen;
	void *context;
	uint64_t flags; /* completion flags */
	bool comp;      /* write a CQ entry */
	void *buf;
	size_t len, cap, got;
	fi_addr_t src;
	uint64_t tag, ignore;
	bool tagged;
	struct dfi_hdr rts; /* receive side of a rendez-vous */
	uint32_t rts_peer;
	bool getting;                 /* its rendez-vous GET is issued, its completion awaited */
	struct dnp_regcache_ent *reg; /* rendez-vous registration */
	void *bounce;                 /* rendez-vous through a private copy */
	uint64_t data;                /* fi_writedata: remote CQ data, sent once the PUT is done */
	bool wdata;                   /* fi_writedata */
	void *inject;                 /* fi_inject_write: the private copy written */
	struct dfi_req *next;
	/* R_COLL, R_JOIN (dnp_fi_coll.c) */
	struct dfi_mc *mc;
	unsigned coll, dtype, redop, root; /* DNP_OP_*, DNP_TYPE_*, DNP_RED_*, root rank */
	const void *csrc;                  /* allreduce: the source */
};

/* An event queue: FI_JOIN_COMPLETE entries and their errors (dnp_fi_fabric.c). */
struct dfi_eq_ent {
	uint32_t event;
	bool err;
	struct fi_eq_entry e;
	struct fi_eq_err_entry ee;
};

#define DFI_EQ_EPS 16 /* endpoints one event queue progresses */

struct dfi_eq {
	struct fid_eq eq;
	struct dfi_eq_ent *ent;
	size_t cap, head, n;
	struct dfi_ep *eps[DFI_EQ_EPS]; /* bound endpoints: reads progress them */
	unsigned neps;
};

/* An AV set: an ordered list of AV addresses (dnp_fi_coll.c). */
struct dfi_av_set {
	struct fid_av_set set;
	struct dfi_av *av;
	fi_addr_t *addr;
	size_t n, cap;
};

/* A collective group joined by an endpoint: one group of the daemon (dnp_fi_coll.c). */
struct dfi_mc {
	struct fid_mc mc;
	struct dfi_ep *ep; /* NULL once the endpoint closed */
	uint32_t id;       /* the daemon's group id, the same on every member */
	struct dnp_coll_member *m;
	unsigned n, rank;
	int state;                       /* 0 joining, 1 joined, else -FI_* of the join */
	struct dfi_req *run;             /* the collective the daemon runs */
	struct dfi_req *q_head, *q_tail; /* collectives waiting for it, in order */
	struct dfi_mc *next;             /* the endpoint's groups */
};

struct dfi_out {
	struct dfi_hdr h;
	const void *payload;
	void *copy; /* inject: a private copy of the payload */
	size_t plen;
	struct dfi_req *req; /* eager send: completes once staged */
	struct dfi_out *next;
};

struct dfi_unexp {
	struct dfi_hdr h;
	uint32_t peer;
	void *data;
	struct dfi_unexp *next;
};

struct dfi_held {
	struct dfi_hdr h;
	void *data;
	struct dfi_held *next;
};

struct dfi_stage {
	uint8_t state;
	uint32_t len, seq;
};

struct dfi_peer {
	struct dnp_coords c;
	unsigned port;
	bool have_ring;
	uint64_t ring_va; /* its ring for us */
	uint32_t ring_key;
	fi_addr_t fiaddr; /* in our AV, or FI_ADDR_NOTAVAIL */
	/* sending */
	struct dfi_out *q_head, *q_tail;
	struct dfi_stage st[DFI_K];
	uint8_t *stage_mem;
	uint32_t next_seq;
	uint64_t sent;
	unsigned pending;
	/* receiving */
	uint32_t expect_seq;
	struct dfi_held *held;
	uint64_t consumed;
	uint64_t acked;  /* the count of consumed the sender was last given */
	uint64_t ack_in; /* messages of ours it consumed, from its headers */
	bool credit_busy, have_credit, credit_force;
	uint64_t credit_va;
	uint32_t credit_key;
	uint64_t credit_retry_at;
};

struct dfi_ep;

/* The kinds of operations an endpoint counts (fi_ep_bind of a counter). */
enum {
	DFI_CNT_SEND,
	DFI_CNT_RECV,
	DFI_CNT_READ,
	DFI_CNT_WRITE,
	DFI_CNT_N
};

/*
 * A counter is the provider's count plus, when it has one (dn >= 0), the
 * daemon's completion counter dn of the domain's port (DNP_CNTR): writes
 * that need no CQ entry are counted by the daemon alone. val and err hold
 * the provider's part less the daemon's counts when the counter opened (or
 * was set), modulo 2^64, so value = val + daemon ok, errors = err + daemon err.
 */
struct dfi_cntr {
	struct fid_cntr cntr;
	struct dfi_domain *dom;
	uint64_t val, err;
	unsigned bound; /* kinds of an endpoint it counts */
	int dn;         /* the daemon's counter, -1: none (all DNP_CNTR_MAX taken) */
	uint64_t last;  /* value + errors at the last read: unchanged reads are idle */
	unsigned idle;
	struct dnp_yield yield; /* as a CQ's: spinning reads leave the CPU to the daemon */
};

struct dfi_domain {
	struct fid_domain dom;
	struct dnp *d;
	struct dnp_coords self, dims;
	unsigned nnodes, port, nidx, my_idx;
	struct dfi_ep *ep;
	struct dnp_regcache regs; /* ranges registered for rendez-vous */
	uint64_t cntr_used;       /* daemon counters held by open fi_cntrs (bit n: DNP_CNTR(n)) */
	unsigned tc;              /* DNP_TC(n) of the endpoint's tx_attr->tclass (dnp_fi_ep.c) */
	/*
	 * Opened FI_THREAD_DOMAIN (the application serializes its calls on the
	 * domain's objects): data calls and CQ reads skip the provider lock.
	 */
	bool nolock;
	/*
	 * The wait's hand-off (dnp_fi_cq.c, dfi_cq_idle): posted is set when a
	 * command went to the daemon since the last empty CQ read; in the
	 * pinned placement (this rank polls on the CPU of another node's pinned
	 * daemon: libdnp's dnp_wait_placement says DNP_WAIT_PIN_HANDOFF, asked
	 * at each such read) that read's yield is a hand-off and then the reads
	 * poll DNP_YIELD_PIN_NS without yielding, as libdnp's waits do there
	 * (api/client.c, dnp_pin_wait). handoff: DFI_HANDOFF_ASK (libdnp
	 * decides), or the override of DNP_FI_HANDOFF: DFI_HANDOFF_PIN ("pin"),
	 * DFI_HANDOFF_OFF (any other value). wait_block (DNP_FI_WAIT=block):
	 * every idle step sleeps, as in a blocking window (dfi_wait_block).
	 */
	bool posted, wait_block;
	unsigned char handoff;
};

enum {
	DFI_HANDOFF_ASK,
	DFI_HANDOFF_PIN,
	DFI_HANDOFF_OFF
};

struct dfi_ep {
	struct fid_ep ep;
	struct dfi_domain *dom;
	struct dfi_av *av;
	struct dfi_cq *tx_cq, *rx_cq;
	struct dfi_cntr *cntr[DFI_CNT_N];  /* bound counters, by DFI_CNT_* */
	uint64_t tx_flags, rx_flags;       /* bind flags: FI_SELECTIVE_COMPLETION */
	uint64_t tx_op_flags, rx_op_flags; /* defaults of calls without flags */
	bool directed;                     /* FI_DIRECTED_RECV: receives honour src_addr */
	bool enabled;
	uint8_t *ring;
	uint32_t ring_key;
	uint64_t *credit_in;  /* [nidx] messages of ours each receiver consumed */
	uint64_t *credit_out; /* [nidx] our credit PUT in flight per sender */
	uint32_t credit_key;
	struct dfi_peer **peers;
	struct dfi_req *posted[2], *posted_tail[2]; /* [tagged] */
	struct dfi_unexp *unexp[2], *unexp_tail[2];
	struct dfi_unexp *claimed; /* set aside by FI_PEEK|FI_CLAIM for a later FI_CLAIM */
	struct dfi_req *gets;
	struct dnp_reqtab reqs; /* requests by (idx, gen): RTS ids, GET and RMA cookies */
	uint64_t gen;
	struct dfi_req *spare; /* freed requests kept for reuse (no malloc per message) */
	unsigned nspare;
	bool err_said; /* a data call's first hard error was said on stderr */
	/*
	 * Some peer may have work a poll without events must do: messages queued
	 * or staged but not issued, credits owed by a PUT (dfi_peer_work). Set
	 * where such work appears; an event always runs the peers' loop too.
	 */
	bool peer_work;
	unsigned empty_polls; /* polls without events since the clock was last read */
	int fatal;
	uint64_t alive_at; /* when the daemon was last seen alive (dfi_now) */
	/* FI_COLLECTIVE (dnp_fi_coll.c) */
	struct dfi_eq *eq;  /* bound event queue: FI_JOIN_COMPLETE */
	struct dfi_mc *mcs; /* joined (or joining) groups */
	uint32_t *join_h;   /* hashes of member lists joined, */
	unsigned *join_n;   /* and how often each */
	unsigned njoin;
};

/*
 * libfabric's answer for an optional operation a provider does not offer
 * (binding a wait set, ops_open extensions, service-name AV inserts, ...):
 * -FI_ENOSYS. docs/mpi.md lists what the provider leaves out.
 */
int dfi_enosys_fid(void);
#define NOSYS(fn) ((void *)dfi_enosys_fid)
/* The same for an operation returning ssize_t (an int's -FI_ENOSYS would read as positive). */
ssize_t dfi_enosys_op(void);
#define NOSYS_OP(fn) ((void *)dfi_enosys_op)

#define EP(fep) ((struct dfi_ep *)(fep))
/* An entry point's body under the provider lock. */
#define LOCKED(expr)                             \
	({                                       \
		ssize_t _r;                      \
		pthread_mutex_lock(&dfi_lock);   \
		_r = (expr);                     \
		pthread_mutex_unlock(&dfi_lock); \
		_r;                              \
	})

/*
 * A data call's or CQ read's body: under the provider lock, unless the
 * domain was opened FI_THREAD_DOMAIN (dfi_domain.nolock).
 */
#define DOM_LOCKED(dom, expr)                            \
	({                                               \
		bool _lk = !(dom)->nolock;               \
		ssize_t _r;                              \
		if (_lk)                                 \
			pthread_mutex_lock(&dfi_lock);   \
		_r = (expr);                             \
		if (_lk)                                 \
			pthread_mutex_unlock(&dfi_lock); \
		_r;                                      \
	})

/*
 * With FI_SELECTIVE_COMPLETION on the CQ binding, an operation completes in
 * the CQ only with FI_COMPLETION: its own flags (the *msg calls) or the
 * endpoint's default op_flags (the other calls).
 */
static inline bool dfi_want_comp(uint64_t bind_flags, uint64_t op_flags)
{
	return !(bind_flags & FI_SELECTIVE_COMPLETION) || (op_flags & FI_COMPLETION);
}

/* The remote CQ data a message header carries (0 without DFI_HF_DATA). */
static inline uint64_t dfi_hdr_data(const struct dfi_hdr *h)
{
	return h->flags & DFI_HF_DATA ? h->data : 0;
}

/* ---- dnp_fi_fabric.c */
/* fi_fabric: -FI_ENODATA for another fabric name, -FI_ENOMEM. */
int dfi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **out, void *context);
/*
 * The daemon socket of this process (dnp_fi.h says which) written into buf;
 * NULL: libdnp's default ($DNP_SOCKET, else the host's daemon).
 */
const char *dfi_socket(char *buf, size_t len);

/* ---- dnp_fi_attr.c */
/*
 * Whether info's src_addr (none: true) is a source address of node self that
 * an endpoint on port may take (dnp_fi.h).
 */
bool dfi_src_ok(const struct fi_info *info, struct dnp_coords self, unsigned port);
/* The DNP class (0..7) of a libfabric tclass (tx_attr), -1 when unknown. */
int dfi_tclass(uint32_t tclass);

/* ---- dnp_fi_cq.c */
/* fi_cq_open: formats up to FI_CQ_FORMAT_TAGGED; -FI_ENOSYS for a wait object. */
int dfi_cq_open(struct fid_domain *fdom, struct fi_cq_attr *attr, struct fid_cq **out,
		void *context);
/* Queue a completion (cq may be NULL: nothing is written; so is a failed allocation). */
void dfi_cq_write(struct dfi_cq *cq, void *ctx, uint64_t flags, size_t len, void *buf, uint64_t tag,
		  fi_addr_t src);
/* The same with remote CQ data (flags should then hold FI_REMOTE_CQ_DATA). */
void dfi_cq_write_data(struct dfi_cq *cq, void *ctx, uint64_t flags, size_t len, void *buf,
		       uint64_t tag, uint64_t data, fi_addr_t src);
/* Queue an error entry: err is a positive FI_* errno, olen the bytes cut off. */
void dfi_cq_error(struct dfi_cq *cq, void *ctx, uint64_t flags, size_t len, void *buf, uint64_t tag,
		  size_t olen, int err);
const char *dfi_cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data, char *buf,
			    size_t len);

/* ---- dnp_fi_cntr.c */
/*
 * fi_cntr_open: FI_CNTR_EVENTS_COMP, wait objects none, unspecified or
 * yield (-FI_ENOSYS otherwise, and for a wait set); -FI_EINVAL for flags.
 */
int dfi_cntr_open(struct fid_domain *fdom, struct fi_cntr_attr *attr, struct fid_cntr **out,
		  void *context);
/* fi_ep_bind of a counter: flags FI_SEND, FI_RECV, FI_READ, FI_WRITE (else -FI_EINVAL). */
int dfi_cntr_bind(struct dfi_ep *ep, struct dfi_cntr *c, uint64_t flags);
/*
 * An operation with completion flags flags ended (err: in failure): the
 * counter bound for its kind (FI_RECV, FI_SEND, FI_READ, FI_WRITE) counts it.
 */
void dfi_count(struct dfi_ep *ep, uint64_t flags, bool err);
/*
 * The DNP_CNTR flag for an operation of kind k (DFI_CNT_*) that writes no CQ
 * entry, when the counter bound for k has a daemon counter; 0 otherwise
 * (the provider then counts it, dfi_count).
 */
unsigned dfi_cntr_flag(const struct dfi_ep *ep, unsigned k);

/* ---- dnp_fi_av.c */
/* fi_av_open: FI_AV_MAP / FI_AV_TABLE; -FI_EINVAL, -FI_ENOSYS (named or rx_ctx_bits). */
int dfi_av_open(struct fid_domain *fdom, struct fi_av_attr *attr, struct fid_av **out,
		void *context);
/* The ring index of endpoint (x, y, z, port) in this domain's torus. */
unsigned dfi_idx(const struct dfi_domain *dom, unsigned x, unsigned y, unsigned z, unsigned port);

/* ---- dnp_fi_mr.c */
extern struct fi_ops_mr dfi_mr_ops;
/* Registers a user range for q, or a private copy when it overlaps one in use (regcache.h). */
int dfi_reg_user(struct dfi_domain *dom, struct dfi_req *q, void *buf, size_t len, bool copy_in);
void dfi_unreg_user(struct dfi_domain *dom, struct dfi_req *q);

/* ---- dnp_fi_ep.c */
/*
 * fi_endpoint: FI_EP_RDM only, info's src_addr (if any) a source address of
 * the domain's node (-FI_EINVAL); -FI_EBUSY: the domain has one already.
 */
int dfi_endpoint(struct fid_domain *fdom, struct fi_info *info, struct fid_ep **out, void *context);
/* A new request of kind R_* in the endpoint's table; NULL when out of memory or ids. */
struct dfi_req *dfi_req_new(struct dfi_ep *ep, int kind);
void dfi_req_free(struct dfi_ep *ep, struct dfi_req *r);
/* Bytes of an endpoint's credit arrays (credit_in, credit_out), page aligned. */
size_t dfi_cred_len(const struct dfi_domain *dom);
/* Whether peer pe has work that a poll without events must do (ep->peer_work). */
static inline bool dfi_peer_work(const struct dfi_peer *pe)
{
	return pe->q_head || pe->pending || pe->credit_force ||
	       pe->consumed - pe->acked >= DFI_CREDIT_BATCH;
}
/* The peer of ring index idx, created on first use; NULL when out of memory. */
struct dfi_peer *dfi_peer(struct dfi_ep *ep, unsigned idx);
/* The peer (and its ring) for an AV address; NULL with *err set otherwise. */
struct dfi_peer *dfi_peer_of(struct dfi_ep *ep, fi_addr_t fa, unsigned *idx, int *err);
/* The peer's address in the endpoint's AV, FI_ADDR_NOTAVAIL if it is not there. */
fi_addr_t dfi_src_addr(struct dfi_ep *ep, struct dfi_peer *pe);
/* The endpoint fails for good with err (the first one is reported on stderr). */
void dfi_fail(struct dfi_ep *ep, int err, const char *what);
/*
 * Handles the daemon's pending events and issues what waits for resources.
 * When none came, checks every DFI_ALIVE_NS that the daemon lives; once it
 * is gone the endpoint fails (-FI_EIO): every request ends in a CQ error
 * entry and data calls and CQ reads return -FI_EIO.
 */
void dfi_progress(struct dfi_ep *ep);
/* Sleep until the next event, at most 1 ms (a blocking window of the CQ's yields); on an
 * FI_THREAD_SAFE domain it drops and retakes dfi_lock around the sleep. */
void dfi_wait_block(struct dfi_domain *dom);
/* Peer idx is a new endpoint (another process on the old one's port): its state starts again. */
void dfi_peer_reset(struct dfi_ep *ep, unsigned idx);

/* ---- dnp_fi_msg.c */
extern struct fi_ops_msg dfi_msg_ops;
extern struct fi_ops_tagged dfi_tagged_ops;
/* fi_cancel: a posted receive whose context matches ends with FI_ECANCELED. */
ssize_t dfi_cancel(fid_t fid, void *context);
/* Issues the staged messages and queued ones that have credit, for peer idx. */
void dfi_push(struct dfi_ep *ep, unsigned idx);
/* Returns credits to peer idx by a PUT when enough are owed (see dnp_fi_msg.c). */
void dfi_credit_return(struct dfi_ep *ep, unsigned idx);
/* A PUT landed in our rings (or credit array): checked, then matched or held. */
void dfi_rx(struct dfi_ep *ep, const struct dnp_event *ev);
/* Issues the rendez-vous GET of receive q (queued on ep->gets while the daemon is busy). */
void dfi_get_issue(struct dfi_ep *ep, struct dfi_req *q);
/* Tells peer idx that an fi_writedata of len bytes landed, with its remote CQ data. */
int dfi_notify_write(struct dfi_ep *ep, unsigned idx, uint64_t len, uint64_t data);
/* The rendez-vous GET of receive q ended (event ev): FIN to the sender, q completes. */
void dfi_get_done(struct dfi_ep *ep, struct dfi_req *q, const struct dnp_event *ev);

/* ---- dnp_fi_fabric.c: event queues */
/* Queue an event (FI_JOIN_COMPLETE) for fid with context; a failed allocation drops it. */
void dfi_eq_write(struct dfi_eq *eq, uint32_t event, fid_t fid, void *context);
/* Queue an error entry for fid: err a positive FI_* errno. */
void dfi_eq_error(struct dfi_eq *eq, fid_t fid, void *context, int err);
/* Endpoint ep no longer progresses through eq (its close). */
void dfi_eq_unbind(struct dfi_eq *eq, struct dfi_ep *ep);
/* fi_ep_bind of an event queue: -FI_ENOSPC past DFI_EQ_EPS endpoints. */
int dfi_eq_bind(struct dfi_eq *eq, struct dfi_ep *ep);

/* ---- dnp_fi_coll.c */
extern struct fi_ops_collective dfi_coll_ops;
/* fi_av_set on av (FI_UNIVERSE or start/end/stride/count); -FI_EINVAL, -FI_ENOMEM. */
int dfi_av_set(struct fid_av *fav, struct fi_av_set_attr *attr, struct fid_av_set **out,
	       void *context);
/* fi_join (cm ops): FI_COLLECTIVE joins only (-FI_ENOSYS for multicast). */
int dfi_join(struct fid_ep *fep, const void *addr, uint64_t flags, struct fid_mc **mc,
	     void *context);
/* fi_query_collective: 0 for what the daemons run, -FI_EOPNOTSUPP otherwise. */
int dfi_query_collective(struct fid_domain *dom, enum fi_collective_op coll,
			 struct fi_collective_attr *attr, uint64_t flags);
/* The daemon's event for a C_COLL command (request q) came. */
void dfi_coll_event(struct dfi_ep *ep, struct dfi_req *q, const struct dnp_event *ev);
/* A collective or join request ends with err (a positive FI_* errno): its group forgets it. */
void dfi_coll_fail(struct dfi_ep *ep, struct dfi_req *q, int err);
/* Issues the collectives that wait for their group while the daemon can take them. */
void dfi_coll_progress(struct dfi_ep *ep);
/* The endpoint closes: its groups are left and no longer refer to it. */
void dfi_coll_close_ep(struct dfi_ep *ep);

/* ---- dnp_fi_rma.c */
extern struct fi_ops_rma dfi_rma_ops;
/* The DNP command of RMA request q ended (event ev): q completes. */
void dfi_rma_done(struct dfi_ep *ep, struct dfi_req *q, const struct dnp_event *ev);

#endif
