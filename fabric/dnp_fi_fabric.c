/* SPDX-License-Identifier: MIT */
/*
 * Fabric, event queue and domain of the provider "dnp" (contract:
 * dnp_fi_priv.h). All entry points take one provider-wide lock
 * (FI_THREAD_SAFE); progress is manual and happens in CQ reads and in every
 * data call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dnp_fi_priv.h"

pthread_mutex_t dfi_lock = PTHREAD_MUTEX_INITIALIZER;

int dfi_enosys_fid(void)
{
	return -FI_ENOSYS;
}

ssize_t dfi_enosys_op(void)
{
	return -FI_ENOSYS;
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
	.cntr_open = dfi_cntr_open,
	.poll_open = NOSYS(poll_open),
	.stx_ctx = NOSYS(stx_ctx),
	.srx_ctx = NOSYS(srx_ctx),
	.query_atomic = NOSYS(query_atomic),
	.query_collective = dfi_query_collective,
};

/*
 * The daemon of this process: DNP_SOCKET, or under ./dnp mpirun the node
 * of the job rank (rank mod DNP_FI_NNODES) in DNP_FI_RUN_DIR.
 */
const char *dfi_socket(char *buf, size_t len)
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

/*
 * DNP_FI_HANDOFF: unset or empty, libdnp says where we wait
 * (dnp_wait_placement); "pin" forces the pinned hand-off, any other value
 * turns it off (docs/mpi.md, "The wait: placement from libdnp").
 */
static unsigned char dfi_handoff_env(const char *v)
{
	if (!v || !*v)
		return DFI_HANDOFF_ASK;
	return strcmp(v, "pin") == 0 ? DFI_HANDOFF_PIN : DFI_HANDOFF_OFF;
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
	dom->nolock = info && info->domain_attr && info->domain_attr->threading == FI_THREAD_DOMAIN;
	dom->handoff = dfi_handoff_env(getenv("DNP_FI_HANDOFF"));
	dom->wait_block = getenv("DNP_FI_WAIT") && strcmp(getenv("DNP_FI_WAIT"), "block") == 0;
	dom->dom.fid.fclass = FI_CLASS_DOMAIN;
	dom->dom.fid.context = context;
	dom->dom.fid.ops = &dfi_domain_fi_ops;
	dom->dom.ops = &dfi_domain_ops;
	dom->dom.mr = &dfi_mr_ops;
	*out = &dom->dom;
	return 0;
}

/*
 * Event queue: RDM endpoints have no connection events; what comes is the
 * end of fi_join_collective (FI_JOIN_COMPLETE, or an error entry). Reads
 * progress the endpoints bound to it.
 */
static struct dfi_eq_ent *dfi_eq_slot(struct dfi_eq *eq)
{
	struct dfi_eq_ent *e;

	if (eq->n == eq->cap) {
		size_t cap = eq->cap ? eq->cap * 2 : 16, i;
		struct dfi_eq_ent *ne = calloc(cap, sizeof(*ne));

		if (!ne)
			return NULL;
		for (i = 0; i < eq->n; i++)
			ne[i] = eq->ent[(eq->head + i) % eq->cap];
		free(eq->ent);
		eq->ent = ne;
		eq->cap = cap;
		eq->head = 0;
	}
	e = &eq->ent[(eq->head + eq->n) % eq->cap];
	memset(e, 0, sizeof(*e));
	eq->n++;
	return e;
}

void dfi_eq_write(struct dfi_eq *eq, uint32_t event, fid_t fid, void *context)
{
	struct dfi_eq_ent *e = eq ? dfi_eq_slot(eq) : NULL;

	if (!e)
		return;
	e->event = event;
	e->e.fid = fid;
	e->e.context = context;
}

void dfi_eq_error(struct dfi_eq *eq, fid_t fid, void *context, int err)
{
	struct dfi_eq_ent *e = eq ? dfi_eq_slot(eq) : NULL;

	if (!e)
		return;
	e->err = true;
	e->event = FI_JOIN_COMPLETE;
	e->ee.fid = fid;
	e->ee.context = context;
	e->ee.err = err;
	e->ee.prov_errno = -err;
}

int dfi_eq_bind(struct dfi_eq *eq, struct dfi_ep *ep)
{
	if (eq->neps == DFI_EQ_EPS)
		return -FI_ENOSPC;
	eq->eps[eq->neps++] = ep;
	ep->eq = eq;
	return 0;
}

void dfi_eq_unbind(struct dfi_eq *eq, struct dfi_ep *ep)
{
	unsigned i;

	for (i = 0; i < eq->neps; i++)
		if (eq->eps[i] == ep) {
			eq->eps[i] = eq->eps[--eq->neps];
			break;
		}
	ep->eq = NULL;
}

static ssize_t dfi_eq_read_locked(struct dfi_eq *eq, uint32_t *event, void *buf, size_t len,
				  uint64_t flags)
{
	struct dfi_eq_ent *e;
	unsigned i;

	for (i = 0; i < eq->neps; i++)
		dfi_progress(eq->eps[i]);
	if (!eq->n)
		return -FI_EAGAIN;
	e = &eq->ent[eq->head];
	if (e->err)
		return -FI_EAVAIL;
	if (len < sizeof(e->e))
		return -FI_ETOOSMALL;
	if (event)
		*event = e->event;
	memcpy(buf, &e->e, sizeof(e->e));
	if (!(flags & FI_PEEK)) {
		eq->head = (eq->head + 1) % eq->cap;
		eq->n--;
	}
	return (ssize_t)sizeof(e->e);
}

static ssize_t dfi_eq_read(struct fid_eq *feq, uint32_t *event, void *buf, size_t len,
			   uint64_t flags)
{
	return LOCKED(dfi_eq_read_locked((struct dfi_eq *)feq, event, buf, len, flags));
}

static ssize_t dfi_eq_readerr_locked(struct dfi_eq *eq, struct fi_eq_err_entry *buf)
{
	struct dfi_eq_ent *e;

	if (!eq->n || !eq->ent[eq->head].err)
		return -FI_EAGAIN;
	e = &eq->ent[eq->head];
	*buf = e->ee;
	eq->head = (eq->head + 1) % eq->cap;
	eq->n--;
	return (ssize_t)sizeof(*buf);
}

static ssize_t dfi_eq_readerr(struct fid_eq *feq, struct fi_eq_err_entry *buf, uint64_t flags)
{
	return LOCKED(dfi_eq_readerr_locked((struct dfi_eq *)feq, buf));
}

/* Reads with progress until an entry comes or timeout ms pass (< 0: for ever). */
static ssize_t dfi_eq_sread(struct fid_eq *feq, uint32_t *event, void *buf, size_t len, int timeout,
			    uint64_t flags)
{
	uint64_t end = dfi_now() + (uint64_t)(timeout < 0 ? 0 : timeout) * 1000000ull;
	ssize_t r;

	for (;;) {
		r = dfi_eq_read(feq, event, buf, len, flags);
		struct timespec ts = { 0, 200000 };

		if (r != -FI_EAGAIN || (timeout >= 0 && dfi_now() >= end))
			return r;
		nanosleep(&ts, NULL); /* joins take a round trip of the daemons: no need to spin */
	}
}

static const char *dfi_eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data,
				   char *buf, size_t len)
{
	return dfi_cq_strerror(NULL, prov_errno, err_data, buf, len);
}

static int dfi_eq_close(struct fid *fid)
{
	struct dfi_eq *eq = (struct dfi_eq *)fid;

	pthread_mutex_lock(&dfi_lock);
	while (eq->neps) /* endpoints still bound no longer report to it */
		dfi_eq_unbind(eq, eq->eps[0]);
	pthread_mutex_unlock(&dfi_lock);
	free(eq->ent);
	free(eq);
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
	.write = NOSYS_OP(write),
	.sread = dfi_eq_sread,
	.strerror = dfi_eq_strerror,
};

static int dfi_eq_open(struct fid_fabric *fab, struct fi_eq_attr *attr, struct fid_eq **out,
		       void *context)
{
	struct dfi_eq *eq = calloc(1, sizeof(*eq));

	if (!eq)
		return -FI_ENOMEM;
	eq->eq.fid.fclass = FI_CLASS_EQ;
	eq->eq.fid.context = context;
	eq->eq.fid.ops = &dfi_eq_fi_ops;
	eq->eq.ops = &dfi_eq_ops;
	*out = &eq->eq;
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

int dfi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **out, void *context)
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
