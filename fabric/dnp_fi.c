/* SPDX-License-Identifier: MIT */
/*
 * The libfabric provider "dnp": see dnp_fi.h for the protocol and
 * docs/mpi.md for its use. All entry points take one provider-wide lock
 * (FI_THREAD_SAFE); progress is manual and happens in CQ reads and in every
 * data call.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
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

#define DFI_NAME "dnp"
#define DFI_FABRIC "dnp-torus"
#define DFI_VERSION FI_VERSION(0, 1)
#define DFI_CAPS                                                                               \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | \
	 FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM)
#define DFI_MR_MODE (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED)
#define DFI_EV_BATCH 32
#define DFI_IDLE_READS 4 /* empty CQ reads between two yields */

enum {
	C_STAGE = 1,
	C_CREDIT = 2,
	C_GET = 3,
	C_RMA = 4
};
enum {
	S_FREE = 0,
	S_PENDING,
	S_INFLIGHT
};
enum {
	R_SEND = 1,
	R_RECV,
	R_RMA
};

static pthread_mutex_t dfi_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t dfi_now(void)
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
	unsigned idle;          /* empty reads since the last yield */
	struct dnp_yield yield; /* yield only when somebody else wants the CPU */
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
	bool registered;
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
	struct dfi_req *next;
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

struct dfi_domain {
	struct fid_domain dom;
	struct dnp *d;
	struct dnp_coords self, dims;
	unsigned nnodes, port, nidx, my_idx;
	struct dfi_ep *ep;
	struct dnp_regcache regs; /* ranges registered for rendez-vous */
};

struct dfi_ep {
	struct fid_ep ep;
	struct dfi_domain *dom;
	struct dfi_av *av;
	struct dfi_cq *tx_cq, *rx_cq;
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
	struct dfi_req *gets;
	struct dnp_reqtab reqs; /* requests by (idx, gen): RTS ids, GET and RMA cookies */
	uint64_t gen;
	int fatal;
};

/* ---------------------------------------- operations not offered */

/*
 * libfabric's answer for an optional operation a provider does not offer
 * (binding a wait set, ops_open extensions, service-name AV inserts, ...):
 * -FI_ENOSYS. docs/mpi.md lists what the provider leaves out.
 */
static int dfi_enosys_fid(void)
{
	return -FI_ENOSYS;
}

#define NOSYS(fn) ((void *)dfi_enosys_fid)

/* ------------------------------------------------------------ CQ */

static struct dfi_cq_ent *dfi_cq_slot(struct dfi_cq *cq)
{
	struct dfi_cq_ent *e;

	if (cq->n == cq->cap) {
		size_t cap = cq->cap * 2, i;
		struct dfi_cq_ent *ne = calloc(cap, sizeof(*ne));

		if (!ne)
			return NULL;
		for (i = 0; i < cq->n; i++)
			ne[i] = cq->ent[(cq->head + i) % cq->cap];
		free(cq->ent);
		cq->ent = ne;
		cq->cap = cap;
		cq->head = 0;
	}
	e = &cq->ent[(cq->head + cq->n) % cq->cap];
	memset(e, 0, sizeof(*e));
	cq->n++;
	return e;
}

static void dfi_cq_write(struct dfi_cq *cq, void *ctx, uint64_t flags, size_t len, void *buf,
			 uint64_t tag, fi_addr_t src)
{
	struct dfi_cq_ent *e;

	if (!cq || !(e = dfi_cq_slot(cq)))
		return;
	e->e.op_context = ctx;
	e->e.flags = flags;
	e->e.len = len;
	e->e.buf = buf;
	e->e.tag = tag;
	e->src = src;
}

static void dfi_cq_error(struct dfi_cq *cq, void *ctx, uint64_t flags, size_t len, void *buf,
			 uint64_t tag, size_t olen, int err)
{
	struct dfi_cq_ent *e;

	if (!cq || !(e = dfi_cq_slot(cq)))
		return;
	e->err = true;
	e->ee.op_context = ctx;
	e->ee.flags = flags;
	e->ee.len = len;
	e->ee.buf = buf;
	e->ee.tag = tag;
	e->ee.olen = olen;
	e->ee.err = err;
	e->ee.prov_errno = -err;
}

static void dfi_progress(struct dfi_ep *ep);

static ssize_t dfi_cq_readfrom_locked(struct dfi_cq *cq, void *buf, size_t count, fi_addr_t *src)
{
	size_t i = 0;

	if (cq->dom->ep)
		dfi_progress(cq->dom->ep);
	while (i < count && cq->n) {
		struct dfi_cq_ent *e = &cq->ent[cq->head];

		if (e->err)
			break;
		switch (cq->format) {
		case FI_CQ_FORMAT_CONTEXT:
			((struct fi_cq_entry *)buf)[i].op_context = e->e.op_context;
			break;
		case FI_CQ_FORMAT_MSG: {
			struct fi_cq_msg_entry *m = &((struct fi_cq_msg_entry *)buf)[i];

			m->op_context = e->e.op_context;
			m->flags = e->e.flags;
			m->len = e->e.len;
			break;
		}
		case FI_CQ_FORMAT_DATA: {
			struct fi_cq_data_entry *m = &((struct fi_cq_data_entry *)buf)[i];

			m->op_context = e->e.op_context;
			m->flags = e->e.flags;
			m->len = e->e.len;
			m->buf = e->e.buf;
			m->data = 0;
			break;
		}
		default:
			((struct fi_cq_tagged_entry *)buf)[i] = e->e;
			break;
		}
		if (src)
			src[i] = e->src;
		cq->head = (cq->head + 1) % cq->cap;
		cq->n--;
		i++;
	}
	if (i)
		return (ssize_t)i;
	if (cq->n)
		return -FI_EAVAIL;
	/*
	 * An application spinning on the CQ must leave the core to the daemon
	 * (four pollers on two cores: the daemon that has our next event often
	 * waits for this CPU): every DFI_IDLE_READS empty reads. NetPIPE 8 B
	 * side by side (bench/results/mpi-opt-2026-12-02.md): yielding every
	 * 32 reads, or at every read, was slower than every 4 to 16 over shm;
	 * over udp only every 4 was faster than every 32.
	 * A yield that finds nobody else to run is a wasted system call, so
	 * alone on the CPU we yield only to measure again (dnp_yield.h).
	 */
	if (++cq->idle >= DFI_IDLE_READS) {
		cq->idle = 0;
		dnp_yield_step(&cq->yield, dnp_yield_now());
	}
	return -FI_EAGAIN;
}

static ssize_t dfi_cq_readfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src)
{
	struct dfi_cq *cq = (struct dfi_cq *)fcq;
	ssize_t r;

	pthread_mutex_lock(&dfi_lock);
	r = dfi_cq_readfrom_locked(cq, buf, count, src);
	pthread_mutex_unlock(&dfi_lock);
	return r;
}

static ssize_t dfi_cq_read(struct fid_cq *fcq, void *buf, size_t count)
{
	return dfi_cq_readfrom(fcq, buf, count, NULL);
}

static ssize_t dfi_cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct dfi_cq *cq = (struct dfi_cq *)fcq;
	ssize_t r = -FI_EAGAIN;

	pthread_mutex_lock(&dfi_lock);
	if (cq->n && cq->ent[cq->head].err) {
		struct fi_cq_err_entry *e = &cq->ent[cq->head].ee;

		buf->op_context = e->op_context;
		buf->flags = e->flags;
		buf->len = e->len;
		buf->buf = e->buf;
		buf->data = 0;
		buf->tag = e->tag;
		buf->olen = e->olen;
		buf->err = e->err;
		buf->prov_errno = e->prov_errno;
		/* no provider error data (err_data_size in/out since API 1.5) */
		buf->err_data_size = 0;
		cq->head = (cq->head + 1) % cq->cap;
		cq->n--;
		r = 1;
	}
	pthread_mutex_unlock(&dfi_lock);
	return r;
}

static ssize_t dfi_cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src,
				const void *cond, int timeout)
{
	uint64_t deadline = timeout >= 0 ? dfi_now() + (uint64_t)timeout * 1000000ull : 0;
	ssize_t r;

	for (;;) {
		r = dfi_cq_readfrom(fcq, buf, count, src);
		if (r != -FI_EAGAIN)
			return r;
		if (deadline && dfi_now() >= deadline)
			return -FI_EAGAIN;
		/* the empty read yielded already when it should (dfi_cq_readfrom_locked) */
	}
}

static ssize_t dfi_cq_sread(struct fid_cq *fcq, void *buf, size_t count, const void *cond,
			    int timeout)
{
	return dfi_cq_sreadfrom(fcq, buf, count, NULL, cond, timeout);
}

static const char *dfi_cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data,
				   char *buf, size_t len)
{
	const char *s = dnp_strerror(-prov_errno);

	if (buf && len) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	return s;
}

static int dfi_cq_close(struct fid *fid)
{
	struct dfi_cq *cq = (struct dfi_cq *)fid;

	free(cq->ent);
	free(cq);
	return 0;
}

static struct fi_ops dfi_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dfi_cq_close,
	.bind = NOSYS(bind),
	.control = NOSYS(control),
	.ops_open = NOSYS(ops_open),
};

static struct fi_ops_cq dfi_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = dfi_cq_read,
	.readfrom = dfi_cq_readfrom,
	.readerr = dfi_cq_readerr,
	.sread = dfi_cq_sread,
	.sreadfrom = dfi_cq_sreadfrom,
	.signal = NOSYS(signal),
	.strerror = dfi_cq_strerror,
};

static int dfi_cq_open(struct fid_domain *fdom, struct fi_cq_attr *attr, struct fid_cq **out,
		       void *context)
{
	struct dfi_cq *cq;

	if (attr && attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
		return -FI_ENOSYS;
	if (attr && attr->format > FI_CQ_FORMAT_TAGGED)
		return -FI_EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->cap = 256;
	cq->ent = calloc(cq->cap, sizeof(*cq->ent));
	if (!cq->ent) {
		free(cq);
		return -FI_ENOMEM;
	}
	cq->dom = (struct dfi_domain *)fdom;
	cq->format =
		attr && attr->format != FI_CQ_FORMAT_UNSPEC ? attr->format : FI_CQ_FORMAT_CONTEXT;
	cq->cq.fid.fclass = FI_CLASS_CQ;
	cq->cq.fid.context = context;
	cq->cq.fid.ops = &dfi_cq_fi_ops;
	cq->cq.ops = &dfi_cq_ops;
	*out = &cq->cq;
	return 0;
}

/* ------------------------------------------------------------ AV */

static unsigned dfi_idx(const struct dfi_domain *dom, unsigned x, unsigned y, unsigned z,
			unsigned port)
{
	unsigned node = x + dom->dims.x * (y + dom->dims.y * z);

	return node * DFI_LOCAL + port % DFI_LOCAL;
}

static bool dfi_addr_ok(const struct dfi_domain *dom, const struct dfi_addr *a)
{
	return a->magic == DFI_ADDR_MAGIC && a->x < dom->dims.x && a->y < dom->dims.y &&
	       a->z < dom->dims.z && a->ring_key && a->credit_key;
}

static int dfi_av_insert(struct fid_av *fav, const void *addr, size_t count, fi_addr_t *fi_addr,
			 uint64_t flags, void *context)
{
	struct dfi_av *av = (struct dfi_av *)fav;
	const struct dfi_addr *a = addr;
	size_t i;
	int ok = 0;

	pthread_mutex_lock(&dfi_lock);
	for (i = 0; i < count; i++) {
		if (!dfi_addr_ok(av->dom, &a[i])) {
			if (fi_addr)
				fi_addr[i] = FI_ADDR_NOTAVAIL;
			continue;
		}
		if (av->n == av->cap) {
			size_t cap = av->cap ? av->cap * 2 : 64;
			struct dfi_addr *t = realloc(av->tab, cap * sizeof(*t));
			bool *u;

			if (!t)
				break;
			av->tab = t;
			u = realloc(av->used, cap * sizeof(*u));
			if (!u)
				break;
			av->used = u;
			av->cap = cap;
		}
		av->tab[av->n] = a[i];
		av->used[av->n] = true;
		if (fi_addr)
			fi_addr[i] = av->n;
		av->n++;
		ok++;
	}
	pthread_mutex_unlock(&dfi_lock);
	return ok;
}

static int dfi_av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct dfi_av *av = (struct dfi_av *)fav;
	size_t i;

	pthread_mutex_lock(&dfi_lock);
	for (i = 0; i < count; i++)
		if (fi_addr[i] < av->n)
			av->used[fi_addr[i]] = false;
	if (av->dom->ep && av->dom->ep->peers)
		for (i = 0; i < av->dom->nidx; i++)
			if (av->dom->ep->peers[i])
				av->dom->ep->peers[i]->fiaddr = FI_ADDR_NOTAVAIL;
	pthread_mutex_unlock(&dfi_lock);
	return 0;
}

static int dfi_av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	struct dfi_av *av = (struct dfi_av *)fav;
	int r = 0;

	pthread_mutex_lock(&dfi_lock);
	if (fi_addr >= av->n || !av->used[fi_addr]) {
		r = -FI_EINVAL;
	} else {
		memcpy(addr, &av->tab[fi_addr],
		       *addrlen < sizeof(struct dfi_addr) ? *addrlen : sizeof(struct dfi_addr));
		*addrlen = sizeof(struct dfi_addr);
	}
	pthread_mutex_unlock(&dfi_lock);
	return r;
}

static const char *dfi_av_straddr(struct fid_av *fav, const void *addr, char *buf, size_t *len)
{
	const struct dfi_addr *a = addr;
	char s[64];
	int n = snprintf(s, sizeof(s), "dnp://%u,%u,%u:%u", a->x, a->y, a->z, a->port);

	if (buf && *len)
		snprintf(buf, *len, "%s", s);
	*len = (size_t)n + 1;
	return buf;
}

static int dfi_av_close(struct fid *fid)
{
	struct dfi_av *av = (struct dfi_av *)fid;

	free(av->tab);
	free(av->used);
	free(av);
	return 0;
}

static struct fi_ops dfi_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dfi_av_close,
	.bind = NOSYS(bind),
	.control = NOSYS(control),
	.ops_open = NOSYS(ops_open),
};

static struct fi_ops_av dfi_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = dfi_av_insert,
	.insertsvc = NOSYS(insertsvc),
	.insertsym = NOSYS(insertsym),
	.remove = dfi_av_remove,
	.lookup = dfi_av_lookup,
	.straddr = dfi_av_straddr,
	.av_set = NOSYS(av_set),
};

static int dfi_av_open(struct fid_domain *fdom, struct fi_av_attr *attr, struct fid_av **out,
		       void *context)
{
	struct dfi_av *av;

	if (attr && attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP &&
	    attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	if (attr && (attr->name || attr->rx_ctx_bits))
		return -FI_ENOSYS;
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->dom = (struct dfi_domain *)fdom;
	av->type = attr && attr->type != FI_AV_UNSPEC ? attr->type : FI_AV_TABLE;
	av->av.fid.fclass = FI_CLASS_AV;
	av->av.fid.context = context;
	av->av.fid.ops = &dfi_av_fi_ops;
	av->av.ops = &dfi_av_ops;
	*out = &av->av;
	return 0;
}

/* ------------------------------------------------------------ registrations */

/* Registers a user range, or a private copy when it overlaps one in use (regcache.h). */
static int dfi_reg_user(struct dfi_domain *dom, struct dfi_req *q, void *buf, size_t len,
			bool copy_in)
{
	return dnp_regcache_get_user(&dom->regs, buf, len, copy_in, &q->reg, &q->bounce);
}

static void dfi_unreg_user(struct dfi_domain *dom, struct dfi_req *q)
{
	dnp_regcache_put_user(&dom->regs, &q->reg, &q->bounce);
}

/* ------------------------------------------------------------ MR */

static int dfi_mr_close(struct fid *fid)
{
	struct dfi_mr *mr = (struct dfi_mr *)fid;

	pthread_mutex_lock(&dfi_lock);
	if (mr->registered)
		dnp_unregister(mr->dom->d, mr->buf);
	pthread_mutex_unlock(&dfi_lock);
	free(mr);
	return 0;
}

static struct fi_ops dfi_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dfi_mr_close,
	.bind = NOSYS(bind),
	.control = NOSYS(control),
	.ops_open = NOSYS(ops_open),
};

static int dfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		      uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **out,
		      void *context)
{
	struct dfi_domain *dom = container_of(fid, struct dfi_domain, dom.fid);
	struct dfi_mr *mr;
	unsigned bflags = 0;
	uint32_t key = 0;
	int r;

	if (flags)
		return -FI_EBADFLAGS;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	if (access & (FI_REMOTE_WRITE | FI_READ))
		bflags |= DNP_BUF_PUT_TARGET;
	if (access & FI_REMOTE_READ)
		bflags |= DNP_BUF_GET_SOURCE;
	/* Memory only sent or received from needs no registration here. */
	if (bflags && len) {
		pthread_mutex_lock(&dfi_lock);
		r = dnp_register(dom->d, (void *)(uintptr_t)buf, len, bflags, &key);
		pthread_mutex_unlock(&dfi_lock);
		if (r < 0) {
			free(mr);
			return r;
		}
		mr->registered = true;
	}
	mr->dom = dom;
	mr->buf = (void *)(uintptr_t)buf;
	mr->mr.fid.fclass = FI_CLASS_MR;
	mr->mr.fid.context = context;
	mr->mr.fid.ops = &dfi_mr_fi_ops;
	mr->mr.mem_desc = mr;
	mr->mr.key = key;
	*out = &mr->mr;
	return 0;
}

static int dfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		       uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		       void *context)
{
	if (count != 1)
		return -FI_ENOSYS;
	return dfi_mr_reg(fid, iov[0].iov_base, iov[0].iov_len, access, offset, requested_key,
			  flags, mr, context);
}

static int dfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
			  struct fid_mr **mr)
{
	return dfi_mr_regv(fid, attr->mr_iov, attr->iov_count, attr->access, attr->offset,
			   attr->requested_key, flags, mr, attr->context);
}

static struct fi_ops_mr dfi_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = dfi_mr_reg,
	.regv = dfi_mr_regv,
	.regattr = dfi_mr_regattr,
};

/* ------------------------------------------------------------ requests */

/* A request's index travels in 24 bits of a cookie: the table stops at DNP_REQTAB_MAX24. */
static struct dfi_req *dfi_req_new(struct dfi_ep *ep, int kind)
{
	struct dfi_req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->kind = kind;
	r->gen = (uint32_t)(ep->gen + 1) | 1u;
	if (dnp_reqtab_add(&ep->reqs, r, r->gen, &r->idx) < 0) {
		free(r);
		return NULL;
	}
	ep->gen++;
	return r;
}

static void dfi_req_free(struct dfi_ep *ep, struct dfi_req *r)
{
	dnp_reqtab_remove(&ep->reqs, r->idx);
	free(r);
}

/* ------------------------------------------------------------ peers */

/* Bytes of an endpoint's credit arrays (credit_in, credit_out), page aligned. */
static size_t dfi_cred_len(const struct dfi_domain *dom)
{
	return ((size_t)dom->nidx * 2 * sizeof(uint64_t) + 4095) / 4096 * 4096;
}

static struct dfi_peer *dfi_peer(struct dfi_ep *ep, unsigned idx)
{
	struct dfi_domain *dom = ep->dom;
	struct dfi_peer *pe = ep->peers[idx];
	unsigned node = idx / DFI_LOCAL;

	if (pe)
		return pe;
	pe = calloc(1, sizeof(*pe));
	if (!pe)
		return NULL;
	pe->stage_mem = dnp_alloc(dom->d, (size_t)DFI_K * DFI_SLOT);
	if (!pe->stage_mem) {
		free(pe);
		return NULL;
	}
	pe->c.x = node % dom->dims.x;
	pe->c.y = node / dom->dims.x % dom->dims.y;
	pe->c.z = node / (dom->dims.x * dom->dims.y);
	pe->port = ~0u;
	pe->fiaddr = FI_ADDR_NOTAVAIL;
	ep->peers[idx] = pe;
	return pe;
}

/* The peer (and its ring) for an AV address; NULL with *err set otherwise. */
static struct dfi_peer *dfi_peer_of(struct dfi_ep *ep, fi_addr_t fa, unsigned *idx, int *err)
{
	struct dfi_av *av = ep->av;
	const struct dfi_addr *a;
	struct dfi_peer *pe;

	if (!av || fa >= av->n || !av->used[fa]) {
		*err = -FI_EINVAL;
		return NULL;
	}
	a = &av->tab[fa];
	*idx = dfi_idx(ep->dom, a->x, a->y, a->z, a->port);
	pe = dfi_peer(ep, *idx);
	if (!pe) {
		*err = -FI_ENOMEM;
		return NULL;
	}
	if (pe->port != ~0u && pe->port != a->port) {
		*err = -FI_EADDRINUSE; /* two endpoints of one node share a ring index */
		return NULL;
	}
	pe->port = a->port;
	pe->ring_va = a->ring_va + (uint64_t)ep->dom->my_idx * DFI_K * DFI_SLOT;
	pe->ring_key = a->ring_key;
	pe->have_ring = true;
	if (!pe->have_credit) {
		pe->credit_va = a->credit_va + (uint64_t)ep->dom->my_idx * sizeof(uint64_t);
		pe->credit_key = a->credit_key;
		pe->have_credit = true;
	}
	pe->fiaddr = fa;
	return pe;
}

static fi_addr_t dfi_src_addr(struct dfi_ep *ep, struct dfi_peer *pe)
{
	struct dfi_av *av = ep->av;
	size_t i;

	if (pe->fiaddr != FI_ADDR_NOTAVAIL || !av)
		return pe->fiaddr;
	for (i = 0; i < av->n; i++)
		if (av->used[i] && av->tab[i].x == pe->c.x && av->tab[i].y == pe->c.y &&
		    av->tab[i].z == pe->c.z && av->tab[i].port == pe->port) {
			pe->fiaddr = i;
			break;
		}
	return pe->fiaddr;
}

/* ------------------------------------------------------------ sending */

static void dfi_fail(struct dfi_ep *ep, int err, const char *what)
{
	if (!ep->fatal)
		fprintf(stderr, "dnp provider: %s: %s\n", what, dnp_strerror(err));
	if (!ep->fatal)
		ep->fatal = err;
}

static void dfi_stage_issue(struct dfi_ep *ep, unsigned idx, unsigned k)
{
	struct dfi_peer *pe = ep->peers[idx];
	struct dfi_stage *s = &pe->st[k];
	int r;

	r = dnp_put(ep->dom->d, pe->stage_mem + (size_t)k * DFI_SLOT, s->len, pe->c, pe->port,
		    pe->ring_va + (uint64_t)(s->seq % DFI_K) * DFI_SLOT, pe->ring_key,
		    dnp_reqtab_cookie(C_STAGE, idx, k), DNP_NONBLOCK);
	if (r == 0) {
		if (s->state == S_PENDING)
			pe->pending--;
		s->state = S_INFLIGHT;
		return;
	}
	if (s->state != S_PENDING) {
		s->state = S_PENDING;
		pe->pending++;
	}
	if (r != -EAGAIN)
		dfi_fail(ep, r, "PUT");
}

/*
 * A free staging slot for our next message to peer idx, or DFI_K if there is
 * none or the peer has DFI_K of our messages not yet consumed (credits).
 */
static unsigned dfi_slot_free(struct dfi_ep *ep, unsigned idx)
{
	struct dfi_peer *pe = ep->peers[idx];
	uint64_t back = __atomic_load_n(&ep->credit_in[idx], __ATOMIC_ACQUIRE);
	unsigned k;

	if (back < pe->ack_in)
		back = pe->ack_in;
	if (pe->sent - back >= DFI_K)
		return DFI_K; /* out of credits: wait for the receiver */
	for (k = 0; k < DFI_K; k++)
		if (pe->st[k].state == S_FREE)
			break;
	return k;
}

/* Header fields every message to peer idx carries: where its credits go. */
static void dfi_hdr_fill(struct dfi_ep *ep, unsigned idx, struct dfi_hdr *h)
{
	h->magic = DFI_MAGIC;
	h->credit_va = (uintptr_t)ep->credit_in + (uint64_t)idx * sizeof(uint64_t);
	h->credit_key = ep->credit_key;
}

/*
 * Message h (its next sequence number and our credits for the peer are set
 * here) plus plen bytes of payload into free staging slot k, and its PUT.
 */
static void dfi_stage_msg(struct dfi_ep *ep, unsigned idx, unsigned k, struct dfi_hdr *h,
			  const void *payload, size_t plen)
{
	struct dfi_peer *pe = ep->peers[idx];
	uint8_t *m = pe->stage_mem + (size_t)k * DFI_SLOT;

	h->seq = pe->next_seq++;
	/* Credits for the peer's messages ride along (no credit PUT needed). */
	h->ack = (uint32_t)pe->consumed;
	pe->acked = pe->consumed;
	memcpy(m, h, DFI_HDR);
	if (plen)
		memcpy(m + DFI_HDR, payload, plen);
	pe->st[k].len = (uint32_t)(DFI_HDR + plen);
	pe->st[k].seq = h->seq;
	pe->st[k].state = S_PENDING;
	pe->pending++;
	pe->sent++;
	dfi_stage_issue(ep, idx, k);
}

static void dfi_push(struct dfi_ep *ep, unsigned idx)
{
	struct dfi_peer *pe = ep->peers[idx];
	unsigned k;

	if (pe->pending)
		for (k = 0; k < DFI_K; k++)
			if (pe->st[k].state == S_PENDING)
				dfi_stage_issue(ep, idx, k);
	while (pe->q_head) {
		struct dfi_out *o = pe->q_head;

		k = dfi_slot_free(ep, idx);
		if (k == DFI_K)
			return;
		pe->q_head = o->next;
		if (!pe->q_head)
			pe->q_tail = NULL;
		dfi_stage_msg(ep, idx, k, &o->h, o->copy ? o->copy : o->payload, o->plen);
		if (o->req) { /* eager send: the buffer may be reused */
			struct dfi_req *q = o->req;

			if (q->comp)
				dfi_cq_write(ep->tx_cq, q->context, q->flags, 0, NULL, 0,
					     FI_ADDR_NOTAVAIL);
			dfi_req_free(ep, q);
		}
		free(o->copy);
		free(o);
	}
}

static int dfi_enqueue(struct dfi_ep *ep, unsigned idx, struct dfi_hdr *h, const void *payload,
		       size_t plen, bool copy, struct dfi_req *req)
{
	struct dfi_peer *pe = ep->peers[idx];
	struct dfi_out *o = calloc(1, sizeof(*o));

	if (!o)
		return -FI_ENOMEM;
	dfi_hdr_fill(ep, idx, h);
	o->h = *h;
	o->payload = payload;
	o->plen = plen;
	o->req = req;
	if (copy && plen) {
		o->copy = malloc(plen);
		if (!o->copy) {
			free(o);
			return -FI_ENOMEM;
		}
		memcpy(o->copy, payload, plen);
	}
	if (pe->q_tail)
		pe->q_tail->next = o;
	else
		pe->q_head = o;
	pe->q_tail = o;
	return 0;
}

/*
 * Credits go back in the headers of our own messages to that peer (ack);
 * a credit PUT only once DFI_CREDIT_BATCH or more are owed (a one-way
 * stream), or again after a credit PUT failed. Never stuck: a sender out
 * of credits has DFI_K > DFI_CREDIT_BATCH messages that we consume.
 */
static void dfi_credit_return(struct dfi_ep *ep, unsigned idx)
{
	struct dfi_peer *pe = ep->peers[idx];
	uint64_t owed;
	int r;

	if (!pe || pe->credit_busy || !pe->have_credit)
		return;
	owed = pe->consumed - pe->acked;
	if (owed == 0 || (owed < DFI_CREDIT_BATCH && !pe->credit_force))
		return;
	if (pe->credit_retry_at && dfi_now() < pe->credit_retry_at)
		return;
	ep->credit_out[idx] = pe->consumed;
	r = dnp_put(ep->dom->d, &ep->credit_out[idx], sizeof(uint64_t), pe->c, pe->port,
		    pe->credit_va, pe->credit_key, dnp_reqtab_cookie(C_CREDIT, idx, 0),
		    DNP_NONBLOCK);
	if (r == 0) {
		pe->credit_busy = true;
		pe->acked = pe->consumed;
	} else if (r != -EAGAIN) {
		dfi_fail(ep, r, "credit PUT");
	}
}

/* Piggybacked credits (32 bits of a count): never more than we sent. */
static void dfi_ack_in(struct dfi_peer *pe, uint32_t ack)
{
	int32_t d = (int32_t)(ack - (uint32_t)pe->ack_in);

	if (d > 0 && pe->ack_in + (uint64_t)d <= pe->sent)
		pe->ack_in += (uint64_t)d;
}

/* ------------------------------------------------------------ receiving */

static bool dfi_match(const struct dfi_req *q, const struct dfi_hdr *h, fi_addr_t src)
{
	if (q->src != FI_ADDR_UNSPEC && q->src != src)
		return false;
	return !h->tagged || ((q->tag ^ h->tag) & ~q->ignore) == 0;
}

static uint64_t dfi_rx_flags(const struct dfi_hdr *h)
{
	return FI_RECV | (h->tagged ? FI_TAGGED : FI_MSG);
}

static void dfi_recv_complete(struct dfi_ep *ep, struct dfi_req *q, const struct dfi_hdr *h,
			      size_t n, fi_addr_t src, int err)
{
	if (err == -FI_ETRUNC)
		dfi_cq_error(ep->rx_cq, q->context, dfi_rx_flags(h), n, q->buf, h->tag, h->len - n,
			     FI_ETRUNC);
	else if (err)
		dfi_cq_error(ep->rx_cq, q->context, dfi_rx_flags(h), 0, q->buf, h->tag, 0, -err);
	else if (q->comp)
		dfi_cq_write(ep->rx_cq, q->context, dfi_rx_flags(h), n, q->buf, h->tag, src);
	dfi_req_free(ep, q);
}

static void dfi_fin(struct dfi_ep *ep, unsigned idx, uint64_t id, int status)
{
	struct dfi_hdr h = { .type = DFI_FIN, .id = id, .status = status };

	if (dfi_enqueue(ep, idx, &h, NULL, 0, false, NULL) < 0)
		dfi_fail(ep, -ENOMEM, "FIN");
}

static void dfi_get_issue(struct dfi_ep *ep, struct dfi_req *q)
{
	struct dfi_peer *pe = ep->peers[q->rts_peer];
	int r;

	r = dnp_get(ep->dom->d, q->bounce ? q->bounce : q->buf, q->got, q->reg->key, pe->c,
		    pe->port, q->rts.va, q->rts.key, dnp_reqtab_cookie(C_GET, q->idx, q->gen),
		    DNP_NONBLOCK);
	if (r == 0) {
		q->getting = true;
		return;
	}
	if (r == -EAGAIN) {
		q->next = ep->gets;
		ep->gets = q;
		return;
	}
	dfi_unreg_user(ep->dom, q);
	dfi_fin(ep, q->rts_peer, q->rts.id, r);
	dfi_recv_complete(ep, q, &q->rts, 0, pe->fiaddr, r);
}

static void dfi_deliver(struct dfi_ep *ep, struct dfi_req *q, const struct dfi_hdr *h,
			const void *data, unsigned idx)
{
	fi_addr_t src = dfi_src_addr(ep, ep->peers[idx]);
	size_t n = h->len < q->cap ? h->len : q->cap;
	int r;

	if (h->type == DFI_EAGER_MSG) {
		if (n)
			memcpy(q->buf, data, n);
		dfi_recv_complete(ep, q, h, n, src, h->len > q->cap ? -FI_ETRUNC : 0);
		return;
	}
	/* rendez-vous: fetch what fits straight into the receive buffer */
	q->rts = *h;
	q->rts_peer = idx;
	q->got = n;
	if (n == 0) {
		dfi_fin(ep, idx, h->id, 0);
		dfi_recv_complete(ep, q, h, 0, src, h->len ? -FI_ETRUNC : 0);
		return;
	}
	r = dfi_reg_user(ep->dom, q, q->buf, n, false);
	if (r < 0) {
		dfi_fin(ep, idx, h->id, r);
		dfi_recv_complete(ep, q, h, 0, src, r);
		return;
	}
	dfi_get_issue(ep, q);
}

static void dfi_incoming(struct dfi_ep *ep, const struct dfi_hdr *h, const void *data, unsigned idx)
{
	int t = h->tagged ? 1 : 0;
	fi_addr_t src = dfi_src_addr(ep, ep->peers[idx]);
	struct dfi_req **pp, *q = NULL, *prev = NULL;
	struct dfi_unexp *u;

	for (pp = &ep->posted[t]; *pp; prev = *pp, pp = &(*pp)->next)
		if (dfi_match(*pp, h, src)) {
			q = *pp;
			*pp = q->next;
			if (ep->posted_tail[t] == q)
				ep->posted_tail[t] = prev;
			break;
		}
	if (q) {
		dfi_deliver(ep, q, h, data, idx);
		return;
	}
	u = calloc(1, sizeof(*u));
	if (!u || (h->type == DFI_EAGER_MSG && h->len && !(u->data = malloc(h->len)))) {
		free(u);
		dfi_fail(ep, -ENOMEM, "unexpected message");
		return;
	}
	u->h = *h;
	u->peer = idx;
	if (h->type == DFI_EAGER_MSG && h->len)
		memcpy(u->data, data, h->len);
	if (ep->unexp_tail[t])
		ep->unexp_tail[t]->next = u;
	else
		ep->unexp[t] = u;
	ep->unexp_tail[t] = u;
}

static void dfi_dispatch(struct dfi_ep *ep, const struct dfi_hdr *h, const void *data, unsigned idx)
{
	struct dfi_req *q;

	if (h->type != DFI_FIN) {
		dfi_incoming(ep, h, data, idx);
		return;
	}
	q = dnp_reqtab_find_id(&ep->reqs, h->id);
	if (!q || q->kind != R_SEND)
		return;
	dfi_unreg_user(ep->dom, q);
	if (h->status)
		dfi_cq_error(ep->tx_cq, q->context, q->flags, 0, NULL, 0, 0, -h->status);
	else if (q->comp)
		dfi_cq_write(ep->tx_cq, q->context, q->flags, 0, NULL, 0, FI_ADDR_NOTAVAIL);
	dfi_req_free(ep, q);
}

static void dfi_rx(struct dfi_ep *ep, const struct dnp_event *ev)
{
	uint64_t base = (uintptr_t)ep->ring, off;
	struct dfi_domain *dom = ep->dom;
	struct dfi_peer *pe;
	struct dfi_hdr h;
	const uint8_t *slot;
	unsigned idx;

	if (ev->va < base || ev->va >= base + (uint64_t)dom->nidx * DFI_K * DFI_SLOT)
		return; /* a credit update: read from credit_in */
	off = ev->va - base;
	idx = (unsigned)(off / ((uint64_t)DFI_K * DFI_SLOT));
	slot = ep->ring + off;
	if (off % DFI_SLOT || ev->len < DFI_HDR || ev->len > DFI_SLOT ||
	    idx != dfi_idx(dom, ev->peer_x, ev->peer_y, ev->peer_z, ev->port))
		return;
	memcpy(&h, slot, DFI_HDR);
	if (h.magic != DFI_MAGIC || h.tagged > 1 ||
	    (h.type == DFI_EAGER_MSG && h.len != ev->len - DFI_HDR) ||
	    (h.type != DFI_EAGER_MSG && ev->len != DFI_HDR) || h.type < DFI_EAGER_MSG ||
	    h.type > DFI_FIN || !h.credit_key)
		return;
	pe = dfi_peer(ep, idx);
	if (!pe)
		return;
	if (pe->port == ~0u)
		pe->port = ev->port;
	pe->credit_va = h.credit_va;
	pe->credit_key = h.credit_key;
	pe->have_credit = true;
	dfi_ack_in(pe, h.ack);
	if (!pe->have_ring) {
		/*
		 * Not in our AV (yet): the sender's credit arrays and rings are one
		 * registered area, so its header tells where our ring is.
		 */
		uint64_t area = h.credit_va - (uint64_t)dom->my_idx * sizeof(uint64_t);

		pe->ring_va = area + dfi_cred_len(dom) + (uint64_t)dom->my_idx * DFI_K * DFI_SLOT;
		pe->ring_key = h.credit_key;
		pe->have_ring = true;
	}
	pe->consumed++;
	if (h.seq == pe->expect_seq) {
		pe->expect_seq++;
		dfi_dispatch(ep, &h, slot + DFI_HDR, idx);
	} else if ((int32_t)(h.seq - pe->expect_seq) > 0) {
		struct dfi_held *e = calloc(1, sizeof(*e)), **pp;

		if (!e || (ev->len > DFI_HDR && !(e->data = malloc(ev->len - DFI_HDR)))) {
			free(e);
			dfi_fail(ep, -ENOMEM, "out-of-order message");
			return;
		}
		e->h = h;
		if (ev->len > DFI_HDR)
			memcpy(e->data, slot + DFI_HDR, ev->len - DFI_HDR);
		for (pp = &pe->held; *pp && (int32_t)((*pp)->h.seq - h.seq) < 0; pp = &(*pp)->next)
			;
		e->next = *pp;
		*pp = e;
	}
	while (pe->held && pe->held->h.seq == pe->expect_seq) {
		struct dfi_held *e = pe->held;

		pe->held = e->next;
		pe->expect_seq++;
		dfi_dispatch(ep, &e->h, e->data, idx);
		free(e->data);
		free(e);
	}
	dfi_credit_return(ep, idx);
}

static void dfi_event(struct dfi_ep *ep, const struct dnp_event *ev)
{
	struct dfi_peer *pe;
	struct dfi_req *q;
	unsigned kind;
	uint32_t a, b;

	dnp_reqtab_cookie_split(ev->cookie, &kind, &a, &b);
	if (ev->type == DNP_EV_RX_PUT) {
		dfi_rx(ep, ev);
		return;
	}
	if (ev->type == DNP_EV_RX_SEND || ev->type == DNP_EV_LINK)
		return;
	if (kind == C_STAGE && a < ep->dom->nidx && b < DFI_K && (pe = ep->peers[a])) {
		if (pe->st[b].state != S_INFLIGHT)
			return;
		pe->st[b].state = S_FREE;
		if (ev->type == DNP_EV_ERROR)
			dfi_fail(ep, ev->status ? ev->status : -EIO, "eager PUT failed");
		return;
	}
	if (kind == C_CREDIT && a < ep->dom->nidx && (pe = ep->peers[a])) {
		pe->credit_busy = false;
		pe->credit_force = false;
		if (ev->type == DNP_EV_ERROR && pe->acked == ep->credit_out[a]) {
			/* the peer may not have this count, nor a later one: again, later */
			pe->credit_force = true;
			pe->acked--;
			pe->credit_retry_at = dfi_now() + 200000;
		}
		dfi_credit_return(ep, a);
		return;
	}
	q = dnp_reqtab_find(&ep->reqs, a, b);
	if (!q)
		return;
	if (kind == C_GET && q->kind == R_RECV) {
		struct dfi_peer *sp = ep->peers[q->rts_peer];
		int st = ev->type == DNP_EV_GET_DONE ? 0 : ev->status ? ev->status : -EIO;

		/* only a receive whose GET we issued: any other is a forged event */
		if (!q->getting || !sp)
			return;
		q->getting = false;
		if (!st && q->bounce)
			memcpy(q->buf, q->bounce, q->got);
		dfi_unreg_user(ep->dom, q);
		dfi_fin(ep, q->rts_peer, q->rts.id, st);
		dfi_recv_complete(ep, q, &q->rts, st ? 0 : q->got, dfi_src_addr(ep, sp),
				  st                  ? st :
				  q->rts.len > q->cap ? -FI_ETRUNC :
							0);
		return;
	}
	if (kind == C_RMA && q->kind == R_RMA) {
		dfi_unreg_user(ep->dom, q);
		if (ev->type == DNP_EV_ERROR)
			dfi_cq_error(ep->tx_cq, q->context, q->flags, 0, NULL, 0, 0,
				     ev->status ? -ev->status : EIO);
		else if (q->comp)
			dfi_cq_write(ep->tx_cq, q->context, q->flags, 0, NULL, 0, FI_ADDR_NOTAVAIL);
		dfi_req_free(ep, q);
	}
}

static void dfi_progress(struct dfi_ep *ep)
{
	struct dnp_event ev[DFI_EV_BATCH];
	unsigned i;
	int n, k;

	if (!ep->enabled)
		return;
	n = dnp_poll_events(ep->dom->d, ev, DFI_EV_BATCH);
	for (k = 0; k < n; k++)
		dfi_event(ep, &ev[k]);
	if (ep->gets) {
		struct dfi_req *l = ep->gets;

		ep->gets = NULL;
		while (l) {
			struct dfi_req *q = l;

			l = l->next;
			dfi_get_issue(ep, q);
		}
	}
	for (i = 0; i < ep->dom->nidx; i++) {
		struct dfi_peer *pe = ep->peers[i];

		if (!pe)
			continue;
		if (pe->q_head || pe->pending)
			dfi_push(ep, i);
		if (!pe->credit_busy && pe->consumed != pe->acked)
			dfi_credit_return(ep, i);
	}
}

/* ------------------------------------------------------------ data calls */

/*
 * With FI_SELECTIVE_COMPLETION on the CQ binding, an operation completes in
 * the CQ only with FI_COMPLETION: its own flags (the *msg calls) or the
 * endpoint's default op_flags (the other calls).
 */
static bool dfi_want_comp(uint64_t bind_flags, uint64_t op_flags)
{
	return !(bind_flags & FI_SELECTIVE_COMPLETION) || (op_flags & FI_COMPLETION);
}

static ssize_t dfi_send_common(struct dfi_ep *ep, const void *buf, size_t len, fi_addr_t dest,
			       uint64_t tag, bool tagged, void *context, uint64_t flags,
			       bool explicit_flags)
{
	struct dfi_hdr h = { .tagged = tagged, .tag = tag, .len = len };
	bool inject = flags & FI_INJECT, comp;
	struct dfi_peer *pe;
	struct dfi_req *q;
	unsigned idx, k;
	int err = 0;
	ssize_t r;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (ep->fatal)
		return -FI_EIO;
	if (inject && len > DFI_EAGER)
		return -FI_EMSGSIZE;
	pe = dfi_peer_of(ep, dest, &idx, &err);
	if (!pe)
		return err;
	comp = !inject && dfi_want_comp(ep->tx_flags, explicit_flags ? flags : ep->tx_op_flags);
	if (len <= DFI_EAGER) {
		/*
		 * Nothing queued before it and a slot with credit free: staged
		 * (copied) at once, so it completes now, with no request, queue
		 * entry or private copy to allocate.
		 */
		if (pe->pending)
			dfi_push(ep, idx);
		if (!pe->q_head && (k = dfi_slot_free(ep, idx)) < DFI_K) {
			h.type = DFI_EAGER_MSG;
			dfi_hdr_fill(ep, idx, &h);
			dfi_stage_msg(ep, idx, k, &h, buf, len);
			if (comp)
				dfi_cq_write(ep->tx_cq, context,
					     FI_SEND | (tagged ? FI_TAGGED : FI_MSG), 0, NULL, 0,
					     FI_ADDR_NOTAVAIL);
			return 0;
		}
	}
	q = dfi_req_new(ep, R_SEND);
	if (!q)
		return -FI_ENOMEM;
	q->context = context;
	q->flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
	q->comp = comp;
	if (len <= DFI_EAGER) {
		h.type = DFI_EAGER_MSG;
		r = dfi_enqueue(ep, idx, &h, buf, len, inject, q);
	} else {
		h.type = DFI_RTS;
		r = dfi_reg_user(ep->dom, q, (void *)(uintptr_t)buf, len, true);
		if (r == 0) {
			h.va = (uintptr_t)(q->bounce ? q->bounce : buf);
			h.key = q->reg->key;
			h.id = dnp_reqtab_id(q->idx, q->gen);
			r = dfi_enqueue(ep, idx, &h, NULL, 0, false, NULL);
			if (r < 0)
				dfi_unreg_user(ep->dom, q);
		}
	}
	if (r < 0) {
		dfi_req_free(ep, q);
		return r;
	}
	dfi_push(ep, idx);
	return 0;
}

static ssize_t dfi_recv_common(struct dfi_ep *ep, void *buf, size_t len, fi_addr_t src,
			       uint64_t tag, uint64_t ignore, bool tagged, void *context,
			       uint64_t flags, bool explicit_flags)
{
	int t = tagged ? 1 : 0;
	struct dfi_unexp **pp, *u, *prev = NULL;
	struct dfi_req *q;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (ep->fatal)
		return -FI_EIO;
	if (!ep->directed)
		src = FI_ADDR_UNSPEC;
	if (src != FI_ADDR_UNSPEC && (!ep->av || src >= ep->av->n))
		return -FI_EINVAL;
	dfi_progress(ep);
	if (flags & FI_PEEK) {
		/* Look among the unexpected messages only; nothing is consumed. */
		struct dfi_req probe = { .src = src, .tag = tag, .ignore = ignore };

		for (u = ep->unexp[t]; u; u = u->next)
			if (dfi_match(&probe, &u->h, dfi_src_addr(ep, ep->peers[u->peer])))
				break;
		if (flags & FI_CLAIM)
			return -FI_ENOSYS;
		if (u)
			dfi_cq_write(ep->rx_cq, context, dfi_rx_flags(&u->h), u->h.len, NULL,
				     u->h.tag, dfi_src_addr(ep, ep->peers[u->peer]));
		else
			dfi_cq_error(ep->rx_cq, context, FI_RECV | (tagged ? FI_TAGGED : FI_MSG), 0,
				     NULL, tag, 0, FI_ENOMSG);
		return 0;
	}
	q = dfi_req_new(ep, R_RECV);
	if (!q)
		return -FI_ENOMEM;
	q->context = context;
	q->buf = buf;
	q->cap = len;
	q->src = src;
	q->tag = tag;
	q->ignore = ignore;
	q->tagged = tagged;
	q->comp = dfi_want_comp(ep->rx_flags, explicit_flags ? flags : ep->rx_op_flags);
	for (pp = &ep->unexp[t]; *pp; prev = *pp, pp = &(*pp)->next) {
		u = *pp;
		if (!dfi_match(q, &u->h, dfi_src_addr(ep, ep->peers[u->peer])))
			continue;
		*pp = u->next;
		if (ep->unexp_tail[t] == u)
			ep->unexp_tail[t] = prev;
		dfi_deliver(ep, q, &u->h, u->data, u->peer);
		free(u->data);
		free(u);
		return 0;
	}
	if (ep->posted_tail[t])
		ep->posted_tail[t]->next = q;
	else
		ep->posted[t] = q;
	ep->posted_tail[t] = q;
	return 0;
}

#define EP(fep) ((struct dfi_ep *)(fep))
#define LOCKED(expr)                             \
	({                                       \
		ssize_t _r;                      \
		pthread_mutex_lock(&dfi_lock);   \
		_r = (expr);                     \
		pthread_mutex_unlock(&dfi_lock); \
		_r;                              \
	})

static ssize_t dfi_tsend(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			 fi_addr_t dest, uint64_t tag, void *context)
{
	return LOCKED(dfi_send_common(EP(fep), buf, len, dest, tag, true, context, 0, false));
}

static ssize_t dfi_tsendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			  fi_addr_t dest, uint64_t tag, void *context)
{
	if (count > 1)
		return -FI_ENOSYS;
	return dfi_tsend(fep, count ? iov[0].iov_base : NULL, count ? iov[0].iov_len : 0, NULL,
			 dest, tag, context);
}

static ssize_t dfi_tsendmsg(struct fid_ep *fep, const struct fi_msg_tagged *m, uint64_t flags)
{
	if (m->iov_count > 1)
		return -FI_ENOSYS;
	return LOCKED(dfi_send_common(EP(fep), m->iov_count ? m->msg_iov[0].iov_base : NULL,
				      m->iov_count ? m->msg_iov[0].iov_len : 0, m->addr, m->tag,
				      true, m->context, flags, true));
}

static ssize_t dfi_tinject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest,
			   uint64_t tag)
{
	return LOCKED(dfi_send_common(EP(fep), buf, len, dest, tag, true, NULL, FI_INJECT, true));
}

static ssize_t dfi_trecv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
			 uint64_t tag, uint64_t ignore, void *context)
{
	return LOCKED(
		dfi_recv_common(EP(fep), buf, len, src, tag, ignore, true, context, 0, false));
}

static ssize_t dfi_trecvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			  fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	if (count > 1)
		return -FI_ENOSYS;
	return dfi_trecv(fep, count ? iov[0].iov_base : NULL, count ? iov[0].iov_len : 0, NULL, src,
			 tag, ignore, context);
}

static ssize_t dfi_trecvmsg(struct fid_ep *fep, const struct fi_msg_tagged *m, uint64_t flags)
{
	if (m->iov_count > 1)
		return -FI_ENOSYS;
	return LOCKED(dfi_recv_common(EP(fep), m->iov_count ? m->msg_iov[0].iov_base : NULL,
				      m->iov_count ? m->msg_iov[0].iov_len : 0, m->addr, m->tag,
				      m->ignore, true, m->context, flags, true));
}

static ssize_t dfi_send(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest,
			void *context)
{
	return LOCKED(dfi_send_common(EP(fep), buf, len, dest, 0, false, context, 0, false));
}

static ssize_t dfi_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t dest, void *context)
{
	if (count > 1)
		return -FI_ENOSYS;
	return dfi_send(fep, count ? iov[0].iov_base : NULL, count ? iov[0].iov_len : 0, NULL, dest,
			context);
}

static ssize_t dfi_sendmsg(struct fid_ep *fep, const struct fi_msg *m, uint64_t flags)
{
	if (m->iov_count > 1)
		return -FI_ENOSYS;
	return LOCKED(dfi_send_common(EP(fep), m->iov_count ? m->msg_iov[0].iov_base : NULL,
				      m->iov_count ? m->msg_iov[0].iov_len : 0, m->addr, 0, false,
				      m->context, flags, true));
}

static ssize_t dfi_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest)
{
	return LOCKED(dfi_send_common(EP(fep), buf, len, dest, 0, false, NULL, FI_INJECT, true));
}

static ssize_t dfi_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
			void *context)
{
	return LOCKED(dfi_recv_common(EP(fep), buf, len, src, 0, 0, false, context, 0, false));
}

static ssize_t dfi_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t src, void *context)
{
	if (count > 1)
		return -FI_ENOSYS;
	return dfi_recv(fep, count ? iov[0].iov_base : NULL, count ? iov[0].iov_len : 0, NULL, src,
			context);
}

static ssize_t dfi_recvmsg(struct fid_ep *fep, const struct fi_msg *m, uint64_t flags)
{
	if (m->iov_count > 1)
		return -FI_ENOSYS;
	return LOCKED(dfi_recv_common(EP(fep), m->iov_count ? m->msg_iov[0].iov_base : NULL,
				      m->iov_count ? m->msg_iov[0].iov_len : 0, m->addr, 0, 0,
				      false, m->context, flags, true));
}

/* RMA: fi_read is a DNP GET, fi_write a DNP PUT; keys are DNP buffer keys. */
static ssize_t dfi_rma(struct dfi_ep *ep, bool read, void *buf, size_t len, void *desc,
		       fi_addr_t peer, uint64_t addr, uint64_t key, void *context, uint64_t flags,
		       bool explicit_flags)
{
	struct dfi_mr *mr = desc;
	struct dfi_peer *pe;
	struct dfi_req *q;
	unsigned idx;
	uint32_t lkey = 0;
	int err = 0, r;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!len || key > UINT32_MAX)
		return -FI_EINVAL;
	pe = dfi_peer_of(ep, peer, &idx, &err);
	if (!pe)
		return err;
	q = dfi_req_new(ep, R_RMA);
	if (!q)
		return -FI_ENOMEM;
	q->context = context;
	q->flags = FI_RMA | (read ? FI_READ : FI_WRITE);
	q->comp = dfi_want_comp(ep->tx_flags, explicit_flags ? flags : ep->tx_op_flags);
	if (read) {
		/* the destination must be a PUT-target buffer of ours */
		if (mr && mr->registered && mr->mr.key && (uint8_t *)buf >= (uint8_t *)mr->buf) {
			lkey = (uint32_t)mr->mr.key;
		} else {
			r = dfi_reg_user(ep->dom, q, buf, len, false);
			if (r < 0 || q->bounce) {
				dfi_unreg_user(ep->dom, q);
				dfi_req_free(ep, q);
				return r < 0 ? r : -FI_EINVAL;
			}
			lkey = q->reg->key;
		}
		r = dnp_get(ep->dom->d, buf, len, lkey, pe->c, pe->port, addr, (uint32_t)key,
			    dnp_reqtab_cookie(C_RMA, q->idx, q->gen), DNP_NONBLOCK);
	} else {
		r = dnp_put(ep->dom->d, buf, len, pe->c, pe->port, addr, (uint32_t)key,
			    dnp_reqtab_cookie(C_RMA, q->idx, q->gen), DNP_NONBLOCK);
	}
	if (r < 0) {
		dfi_unreg_user(ep->dom, q);
		dfi_req_free(ep, q);
		return r == -EAGAIN ? -FI_EAGAIN : r;
	}
	return 0;
}

static ssize_t dfi_read(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
			uint64_t addr, uint64_t key, void *context)
{
	return LOCKED(dfi_rma(EP(fep), true, buf, len, desc, src, addr, key, context, 0, false));
}

static ssize_t dfi_write(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			 fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	return LOCKED(dfi_rma(EP(fep), false, (void *)(uintptr_t)buf, len, desc, dest, addr, key,
			      context, 0, false));
}

static ssize_t dfi_readmsg(struct fid_ep *fep, const struct fi_msg_rma *m, uint64_t flags)
{
	if (m->iov_count != 1 || m->rma_iov_count != 1)
		return -FI_ENOSYS;
	return LOCKED(dfi_rma(EP(fep), true, m->msg_iov[0].iov_base, m->msg_iov[0].iov_len,
			      m->desc ? m->desc[0] : NULL, m->addr, m->rma_iov[0].addr,
			      m->rma_iov[0].key, m->context, flags, true));
}

static ssize_t dfi_writemsg(struct fid_ep *fep, const struct fi_msg_rma *m, uint64_t flags)
{
	if (m->iov_count != 1 || m->rma_iov_count != 1)
		return -FI_ENOSYS;
	return LOCKED(dfi_rma(EP(fep), false, m->msg_iov[0].iov_base, m->msg_iov[0].iov_len,
			      m->desc ? m->desc[0] : NULL, m->addr, m->rma_iov[0].addr,
			      m->rma_iov[0].key, m->context, flags, true));
}

/* fi_cancel: a posted receive whose context matches ends with FI_ECANCELED. */
static ssize_t dfi_cancel(fid_t fid, void *context)
{
	struct dfi_ep *ep = container_of(fid, struct dfi_ep, ep.fid);
	ssize_t r = -FI_ENOENT;
	int t;

	pthread_mutex_lock(&dfi_lock);
	for (t = 0; t < 2 && r; t++) {
		struct dfi_req **pp, *prev = NULL;

		for (pp = &ep->posted[t]; *pp; prev = *pp, pp = &(*pp)->next) {
			struct dfi_req *q = *pp;

			if (q->context != context)
				continue;
			*pp = q->next;
			if (ep->posted_tail[t] == q)
				ep->posted_tail[t] = prev;
			dfi_cq_error(ep->rx_cq, context, FI_RECV | (t ? FI_TAGGED : FI_MSG), 0,
				     q->buf, q->tag, 0, FI_ECANCELED);
			dfi_req_free(ep, q);
			r = 0;
			break;
		}
	}
	pthread_mutex_unlock(&dfi_lock);
	return r;
}

static int dfi_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	if (level == FI_OPT_ENDPOINT && optname == FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	return -FI_ENOPROTOOPT;
}

static int dfi_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static ssize_t dfi_rx_size_left(struct fid_ep *ep)
{
	return 1024;
}

static int dfi_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct dfi_ep *ep = container_of(fid, struct dfi_ep, ep.fid);
	struct dfi_domain *dom = ep->dom;
	struct dfi_addr a = {
		.x = (uint8_t)dom->self.x,
		.y = (uint8_t)dom->self.y,
		.z = (uint8_t)dom->self.z,
		.port = (uint8_t)dom->port,
		.ring_key = ep->ring_key,
		.ring_va = (uintptr_t)ep->ring,
		.credit_va = (uintptr_t)ep->credit_in,
		.credit_key = ep->credit_key,
		.magic = DFI_ADDR_MAGIC,
	};
	size_t n = *addrlen;

	*addrlen = sizeof(a);
	if (n < sizeof(a))
		return -FI_ETOOSMALL;
	memcpy(addr, &a, sizeof(a));
	return 0;
}

static int dfi_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct dfi_ep *ep = container_of(fid, struct dfi_ep, ep.fid);

	switch (bfid->fclass) {
	case FI_CLASS_AV:
		ep->av = (struct dfi_av *)bfid;
		return 0;
	case FI_CLASS_EQ:
		return 0;
	case FI_CLASS_CQ:
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = (struct dfi_cq *)bfid;
			ep->tx_flags = flags;
		}
		if (flags & FI_RECV) {
			ep->rx_cq = (struct dfi_cq *)bfid;
			ep->rx_flags = flags;
		}
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static int dfi_ep_control(struct fid *fid, int command, void *arg)
{
	struct dfi_ep *ep = container_of(fid, struct dfi_ep, ep.fid);

	if (command != FI_ENABLE)
		return -FI_ENOSYS;
	if (!ep->av || !ep->tx_cq || !ep->rx_cq)
		return -FI_ENOCQ;
	ep->enabled = true;
	return 0;
}

static int dfi_ep_close(struct fid *fid)
{
	struct dfi_ep *ep = container_of(fid, struct dfi_ep, ep.fid);
	uint64_t deadline = dfi_now() + 2000000000ull;
	unsigned i, k;
	bool busy;

	pthread_mutex_lock(&dfi_lock);
	/* Let the last messages and credits leave before the port goes away. */
	do {
		busy = false;
		dfi_progress(ep);
		for (i = 0; i < ep->dom->nidx; i++) {
			struct dfi_peer *pe = ep->peers[i];

			if (!pe)
				continue;
			busy |= pe->q_head != NULL;
			for (k = 0; k < DFI_K; k++)
				busy |= pe->st[k].state != S_FREE;
		}
		if (busy)
			sched_yield();
	} while (busy && !ep->fatal && dfi_now() < deadline);
	for (i = 0; i < ep->dom->nidx; i++) {
		struct dfi_peer *pe = ep->peers[i];

		if (!pe)
			continue;
		while (pe->q_head) {
			struct dfi_out *o = pe->q_head;

			pe->q_head = o->next;
			free(o->copy);
			free(o);
		}
		while (pe->held) {
			struct dfi_held *e = pe->held;

			pe->held = e->next;
			free(e->data);
			free(e);
		}
		free(pe);
	}
	for (k = 0; k < 2; k++)
		while (ep->unexp[k]) {
			struct dfi_unexp *u = ep->unexp[k];

			ep->unexp[k] = u->next;
			free(u->data);
			free(u);
		}
	dnp_reqtab_fini(&ep->reqs, free);
	free(ep->peers);
	ep->dom->ep = NULL;
	pthread_mutex_unlock(&dfi_lock);
	free(ep);
	return 0;
}

static struct fi_ops dfi_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dfi_ep_close,
	.bind = dfi_ep_bind,
	.control = dfi_ep_control,
	.ops_open = NOSYS(ops_open),
};

static struct fi_ops_ep dfi_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = dfi_cancel,
	.getopt = dfi_getopt,
	.setopt = dfi_setopt,
	.tx_ctx = NOSYS(tx_ctx),
	.rx_ctx = NOSYS(rx_ctx),
	.rx_size_left = dfi_rx_size_left,
	.tx_size_left = dfi_rx_size_left,
};

static struct fi_ops_cm dfi_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = NOSYS(setname),
	.getname = dfi_getname,
	.getpeer = NOSYS(getpeer),
	.connect = NOSYS(connect),
	.listen = NOSYS(listen),
	.accept = NOSYS(accept),
	.reject = NOSYS(reject),
	.shutdown = NOSYS(shutdown),
	.join = NOSYS(join),
};

static struct fi_ops_msg dfi_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = dfi_recv,
	.recvv = dfi_recvv,
	.recvmsg = dfi_recvmsg,
	.send = dfi_send,
	.sendv = dfi_sendv,
	.sendmsg = dfi_sendmsg,
	.inject = dfi_inject,
	.senddata = NOSYS(senddata),
	.injectdata = NOSYS(injectdata),
};

static struct fi_ops_tagged dfi_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = dfi_trecv,
	.recvv = dfi_trecvv,
	.recvmsg = dfi_trecvmsg,
	.send = dfi_tsend,
	.sendv = dfi_tsendv,
	.sendmsg = dfi_tsendmsg,
	.inject = dfi_tinject,
	.senddata = NOSYS(senddata),
	.injectdata = NOSYS(injectdata),
};

static struct fi_ops_rma dfi_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = dfi_read,
	.readv = NOSYS(readv),
	.readmsg = dfi_readmsg,
	.write = dfi_write,
	.writev = NOSYS(writev),
	.writemsg = dfi_writemsg,
	.inject = NOSYS(inject),
	.writedata = NOSYS(writedata),
	.injectdata = NOSYS(injectdata),
};

static int dfi_endpoint(struct fid_domain *fdom, struct fi_info *info, struct fid_ep **out,
			void *context)
{
	struct dfi_domain *dom = (struct dfi_domain *)fdom;
	struct dfi_ep *ep;
	size_t ring_len = (size_t)dom->nidx * DFI_K * DFI_SLOT;
	size_t cred_len = dfi_cred_len(dom);
	uint8_t *area;
	int r;

	if (info && info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
	    info->ep_attr->type != FI_EP_UNSPEC)
		return -FI_EINVAL;
	pthread_mutex_lock(&dfi_lock);
	if (dom->ep) {
		pthread_mutex_unlock(&dfi_lock);
		return -FI_EBUSY; /* one endpoint per domain (one DNP port) */
	}
	ep = calloc(1, sizeof(*ep));
	r = -FI_ENOMEM;
	if (!ep)
		goto err;
	dnp_reqtab_init(&ep->reqs, DNP_REQTAB_MAX24);
	ep->dom = dom;
	ep->tx_op_flags = info && info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info && info->rx_attr ? info->rx_attr->op_flags : 0;
	ep->directed = !info || (info->caps & FI_DIRECTED_RECV);
	ep->peers = calloc(dom->nidx, sizeof(*ep->peers));
	/* One PUT target: the credit arrays, then the rings (see dfi_ring_of). */
	area = dnp_alloc(dom->d, cred_len + ring_len);
	if (!ep->peers || !area)
		goto err;
	memset(area, 0, cred_len);
	ep->credit_in = (uint64_t *)area;
	ep->credit_out = ep->credit_in + dom->nidx;
	ep->ring = area + cred_len;
	r = dnp_register(dom->d, area, cred_len + ring_len, DNP_BUF_PUT_TARGET, &ep->ring_key);
	if (r < 0)
		goto err;
	ep->credit_key = ep->ring_key;
	ep->ep.fid.fclass = FI_CLASS_EP;
	ep->ep.fid.context = context;
	ep->ep.fid.ops = &dfi_ep_fi_ops;
	ep->ep.ops = &dfi_ep_ops;
	ep->ep.cm = &dfi_cm_ops;
	ep->ep.msg = &dfi_msg_ops;
	ep->ep.tagged = &dfi_tagged_ops;
	ep->ep.rma = &dfi_rma_ops;
	dom->ep = ep;
	pthread_mutex_unlock(&dfi_lock);
	*out = &ep->ep;
	return 0;
err:
	if (ep) {
		free(ep->peers);
		free(ep);
	}
	pthread_mutex_unlock(&dfi_lock);
	return r;
}

/* ------------------------------------------------------------ domain, fabric */

static int dfi_domain_close(struct fid *fid)
{
	struct dfi_domain *dom = container_of(fid, struct dfi_domain, dom.fid);

	if (dom->ep)
		return -FI_EBUSY;
	dnp_regcache_fini(&dom->regs);
	dnp_close(dom->d); /* the daemon drops the session's buffers and heap */
	free(dom);
	return 0;
}

static struct fi_ops dfi_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dfi_domain_close,
	.bind = NOSYS(bind),
	.control = NOSYS(control),
	.ops_open = NOSYS(ops_open),
};

static struct fi_ops_domain dfi_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = dfi_av_open,
	.cq_open = dfi_cq_open,
	.endpoint = dfi_endpoint,
	.scalable_ep = NOSYS(scalable_ep),
	.cntr_open = NOSYS(cntr_open),
	.poll_open = NOSYS(poll_open),
	.stx_ctx = NOSYS(stx_ctx),
	.srx_ctx = NOSYS(srx_ctx),
	.query_atomic = NOSYS(query_atomic),
	.query_collective = NOSYS(query_collective),
};

/*
 * The daemon of this process: DNP_SOCKET, or under ./dnp mpirun the node
 * of the job rank (rank mod DNP_FI_NNODES) in DNP_FI_RUN_DIR.
 */
static const char *dfi_socket(char *buf, size_t len)
{
	const char *dir = getenv("DNP_FI_RUN_DIR"), *nn = getenv("DNP_FI_NNODES");
	const char *vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK" };
	const char *rank = NULL;
	unsigned i;
	long r, n;

	if (!dir || !*dir || !nn)
		return NULL;
	for (i = 0; i < 3 && !rank; i++)
		rank = getenv(vars[i]);
	if (!rank)
		return NULL;
	r = strtol(rank, NULL, 10);
	n = strtol(nn, NULL, 10);
	if (r < 0 || n <= 0)
		return NULL;
	snprintf(buf, len, "%s/node-%ld.sock", dir, r % n);
	return buf;
}

static int dfi_domain(struct fid_fabric *fab, struct fi_info *info, struct fid_domain **out,
		      void *context)
{
	struct dfi_domain *dom = calloc(1, sizeof(*dom));
	char path[4096];
	int r;

	if (!dom)
		return -FI_ENOMEM;
	r = dnp_open(dfi_socket(path, sizeof(path)), &dom->d);
	if (r == 0)
		r = dnp_self(dom->d, &dom->self, &dom->dims);
	if (r < 0) {
		if (dom->d)
			dnp_close(dom->d);
		free(dom);
		return r == -ENOENT || r == -ECONNREFUSED ? -FI_ENODEV : r;
	}
	dnp_regcache_init(&dom->regs, dom->d);
	dom->nnodes = dom->dims.x * dom->dims.y * dom->dims.z;
	dom->port = dnp_port(dom->d);
	dom->nidx = dom->nnodes * DFI_LOCAL;
	dom->my_idx = dfi_idx(dom, dom->self.x, dom->self.y, dom->self.z, dom->port);
	dom->dom.fid.fclass = FI_CLASS_DOMAIN;
	dom->dom.fid.context = context;
	dom->dom.fid.ops = &dfi_domain_fi_ops;
	dom->dom.ops = &dfi_domain_ops;
	dom->dom.mr = &dfi_mr_ops;
	*out = &dom->dom;
	return 0;
}

/*
 * Event queue: RDM endpoints have no connection events, so it stays empty;
 * it exists because applications open and bind one anyway.
 */
static ssize_t dfi_eq_read(struct fid_eq *eq, uint32_t *event, void *buf, size_t len,
			   uint64_t flags)
{
	return -FI_EAGAIN;
}

static ssize_t dfi_eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf, uint64_t flags)
{
	return -FI_EAGAIN;
}

static ssize_t dfi_eq_sread(struct fid_eq *eq, uint32_t *event, void *buf, size_t len, int timeout,
			    uint64_t flags)
{
	return -FI_EAGAIN;
}

static const char *dfi_eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data,
				   char *buf, size_t len)
{
	return dfi_cq_strerror(NULL, prov_errno, err_data, buf, len);
}

static int dfi_eq_close(struct fid *fid)
{
	free(fid);
	return 0;
}

static struct fi_ops dfi_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dfi_eq_close,
	.bind = NOSYS(bind),
	.control = NOSYS(control),
	.ops_open = NOSYS(ops_open),
};

static struct fi_ops_eq dfi_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = dfi_eq_read,
	.readerr = dfi_eq_readerr,
	.write = NOSYS(write),
	.sread = dfi_eq_sread,
	.strerror = dfi_eq_strerror,
};

static int dfi_eq_open(struct fid_fabric *fab, struct fi_eq_attr *attr, struct fid_eq **out,
		       void *context)
{
	struct fid_eq *eq = calloc(1, sizeof(*eq));

	if (!eq)
		return -FI_ENOMEM;
	eq->fid.fclass = FI_CLASS_EQ;
	eq->fid.context = context;
	eq->fid.ops = &dfi_eq_fi_ops;
	eq->ops = &dfi_eq_ops;
	*out = eq;
	return 0;
}

static int dfi_fabric_close(struct fid *fid)
{
	free(fid);
	return 0;
}

static struct fi_ops dfi_fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dfi_fabric_close,
	.bind = NOSYS(bind),
	.control = NOSYS(control),
	.ops_open = NOSYS(ops_open),
};

static struct fi_ops_fabric dfi_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = dfi_domain,
	.passive_ep = NOSYS(passive_ep),
	.eq_open = dfi_eq_open,
	.wait_open = NOSYS(wait_open),
	.trywait = NOSYS(trywait),
};

static int dfi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **out, void *context)
{
	struct fid_fabric *f;

	if (attr && attr->name && strcmp(attr->name, DFI_FABRIC))
		return -FI_ENODATA;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -FI_ENOMEM;
	f->fid.fclass = FI_CLASS_FABRIC;
	f->fid.context = context;
	f->fid.ops = &dfi_fabric_fi_ops;
	f->ops = &dfi_fabric_ops;
	*out = f;
	return 0;
}

/* ------------------------------------------------------------ getinfo */

static int dfi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *fi;
	uint64_t caps = DFI_CAPS;
	bool rma = true;

	if (hints) {
		if (hints->caps & ~DFI_CAPS)
			return -FI_ENODATA;
		if (hints->caps)
			caps = hints->caps | FI_LOCAL_COMM | FI_REMOTE_COMM;
		rma = !hints->caps || (hints->caps & FI_RMA);
		if (hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC &&
		    hints->ep_attr->type != FI_EP_RDM)
			return -FI_ENODATA;
		if (hints->addr_format != FI_FORMAT_UNSPEC)
			return -FI_ENODATA;
		if (hints->fabric_attr && hints->fabric_attr->name &&
		    strcmp(hints->fabric_attr->name, DFI_FABRIC))
			return -FI_ENODATA;
		if (hints->domain_attr) {
			const struct fi_domain_attr *d = hints->domain_attr;

			if (d->name && strcmp(d->name, DFI_NAME))
				return -FI_ENODATA;
			if (d->control_progress == FI_PROGRESS_AUTO ||
			    d->data_progress == FI_PROGRESS_AUTO)
				return -FI_ENODATA;
			if (rma && d->mr_mode != FI_MR_UNSPEC && d->mr_mode != FI_MR_BASIC &&
			    (d->mr_mode & DFI_MR_MODE) != DFI_MR_MODE)
				return -FI_ENODATA;
		}
	}
	fi = fi_allocinfo();
	if (!fi)
		return -FI_ENOMEM;
	fi->caps = caps;
	fi->mode = 0;
	fi->addr_format = FI_FORMAT_UNSPEC;
	fi->tx_attr->caps = caps;
	fi->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAW | FI_ORDER_WAW;
	fi->tx_attr->inject_size = DFI_EAGER;
	fi->tx_attr->size = 1024;
	fi->tx_attr->iov_limit = 1;
	fi->tx_attr->rma_iov_limit = 1;
	/* op_flags (FI_COMPLETION with selective completion) as the application asks */
	if (hints && hints->tx_attr)
		fi->tx_attr->op_flags = hints->tx_attr->op_flags;
	if (hints && hints->rx_attr)
		fi->rx_attr->op_flags = hints->rx_attr->op_flags;
	fi->rx_attr->caps = caps;
	fi->rx_attr->msg_order = FI_ORDER_SAS;
	fi->rx_attr->size = 1024;
	fi->rx_attr->iov_limit = 1;
	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->max_msg_size = DNP_MAX_MSG;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;
	fi->ep_attr->mem_tag_format = ~0ull; /* all 64 tag bits are matched */
	fi->domain_attr->name = strdup(DFI_NAME);
	fi->domain_attr->threading = FI_THREAD_SAFE;
	fi->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type =
		hints && hints->domain_attr && hints->domain_attr->av_type != FI_AV_UNSPEC ?
			hints->domain_attr->av_type :
			FI_AV_UNSPEC;
	fi->domain_attr->mr_mode = version < FI_VERSION(1, 5) ? FI_MR_BASIC : DFI_MR_MODE;
	fi->domain_attr->mr_key_size = 4;
	fi->domain_attr->cq_data_size = 0;
	fi->domain_attr->cq_cnt = 16;
	fi->domain_attr->ep_cnt = 1;
	fi->domain_attr->tx_ctx_cnt = 1;
	fi->domain_attr->rx_ctx_cnt = 1;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->mr_iov_limit = 1;
	fi->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	fi->fabric_attr->name = strdup(DFI_FABRIC);
	fi->fabric_attr->prov_version = DFI_VERSION;
	if (!fi->domain_attr->name || !fi->fabric_attr->name) {
		fi_freeinfo(fi);
		return -FI_ENOMEM;
	}
	*info = fi;
	return 0;
}

static void dfi_cleanup(void)
{
}

static struct fi_provider dfi_prov = {
	.version = DFI_VERSION,
	.fi_version = FI_VERSION(1, 17),
	.name = DFI_NAME,
	.getinfo = dfi_getinfo,
	.fabric = dfi_fabric,
	.cleanup = dfi_cleanup,
};

/* libfabric's entry point for a DL provider (declared here: no header has it). */
struct fi_provider *fi_prov_ini(void);

FI_EXT_INI
{
	return &dfi_prov;
}
