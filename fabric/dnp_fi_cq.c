/* SPDX-License-Identifier: MIT */
/*
 * Completion queues of the provider "dnp" (contract: dnp_fi_priv.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnp_fi_priv.h"

#define DFI_IDLE_READS 4 /* empty CQ reads between two yields */
#define DFI_CQ_CAP0 256u /* entries a CQ starts with (a power of two: it doubles) */

/* ------------------------------------------------------------ CQ */

/*
 * The next free entry (its fields are the caller's to set), or NULL when
 * the queue cannot grow. cap is a power of two (DFI_CQ_CAP0, doubled).
 */
static struct dfi_cq_ent *dfi_cq_slot(struct dfi_cq *cq)
{
	struct dfi_cq_ent *e;

	if (cq->n == cq->cap) {
		size_t cap = cq->cap * 2, i;
		struct dfi_cq_ent *ne = calloc(cap, sizeof(*ne));

		if (!ne)
			return NULL;
		for (i = 0; i < cq->n; i++)
			ne[i] = cq->ent[(cq->head + i) & (cq->cap - 1)];
		free(cq->ent);
		cq->ent = ne;
		cq->cap = cap;
		cq->head = 0;
	}
	e = &cq->ent[(cq->head + cq->n) & (cq->cap - 1)];
	cq->n++;
	return e;
}

void dfi_cq_write(struct dfi_cq *cq, void *ctx, uint64_t flags, size_t len, void *buf, uint64_t tag,
		  fi_addr_t src)
{
	dfi_cq_write_data(cq, ctx, flags, len, buf, tag, 0, src);
}

void dfi_cq_write_data(struct dfi_cq *cq, void *ctx, uint64_t flags, size_t len, void *buf,
		       uint64_t tag, uint64_t data, fi_addr_t src)
{
	struct dfi_cq_ent *e;

	if (!cq || !(e = dfi_cq_slot(cq)))
		return;
	e->err = false;
	e->e.op_context = ctx;
	e->e.flags = flags;
	e->e.len = len;
	e->e.buf = buf;
	e->e.tag = tag;
	e->e.data = data;
	e->src = src;
}

void dfi_cq_error(struct dfi_cq *cq, void *ctx, uint64_t flags, size_t len, void *buf, uint64_t tag,
		  size_t olen, int err)
{
	struct dfi_cq_ent *e;

	if (!cq)
		return;
	/*
	 * Said once per CQ: a middleware that only maps the entry to its own
	 * code (Open MPI: "MPI_ERR_OTHER: known error not in list") then still
	 * leaves the cause in the job's output.
	 */
	if (!cq->err_told) {
		cq->err_told = true;
		fprintf(stderr,
			"dnp provider: an operation failed: %s (later ones: fi_cq_readerr)\n",
			strerror(err < 0 ? -err : err));
	}
	if (!(e = dfi_cq_slot(cq)))
		return;
	memset(e, 0, sizeof(*e));
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

/*
 * An empty read. An application spinning on the CQ must leave the core to
 * the daemon (four pollers on two cores: the daemon that has our next event
 * often waits for this CPU): every DFI_IDLE_READS empty reads. NetPIPE 8 B
 * side by side (bench/results/mpi-opt-2026-12-02.md): yielding every 32
 * reads, or at every read, was slower than every 4 to 16 over shm; over udp
 * only every 4 was faster than every 32. A yield that finds nobody else to
 * run is a wasted system call, so alone on the CPU we yield only to measure
 * again (dnp_yield.h).
 *
 * In the pinned placement (libdnp's dnp_wait_placement says
 * DNP_WAIT_PIN_HANDOFF, or DNP_FI_HANDOFF=pin forces it; docs/mpi.md, "MPI
 * over udp") the first empty read after a command went to the daemon makes
 * a hand-off yield, even when
 * we seemed alone (on our CPU polls the other node's daemon, which gets our
 * message next), and for DNP_YIELD_PIN_NS after it returned we poll without
 * yielding: the reply comes to us next (api/client.c, dnp_pin_wait;
 * docs/performance.md, "Pinned hand-off"). A wrong placement costs a yield
 * or 5 us of polling, never an event. Elsewhere the reads keep the rule
 * above (a first yield at once after posting, as libdnp's wait makes, was
 * slower over shm unpinned: docs/performance.md, "MPI over udp").
 *
 * Beside busy processes (our yields gave away time slices:
 * dnp_yield_blocking) a yield is replaced by a sleep until the next event
 * (dfi_wait_block), as libdnp's wait sleeps on its event bell then.
 */
static bool dfi_pin_here(struct dfi_domain *dom)
{
	unsigned how;

	if (dom->handoff != DFI_HANDOFF_ASK)
		return dom->handoff == DFI_HANDOFF_PIN;
	return dnp_wait_placement(dom->d, &how) == 0 && (how & DNP_WAIT_PIN_HANDOFF);
}

static void dfi_cq_idle(struct dfi_cq *cq)
{
	struct dfi_domain *dom = cq->dom;
	bool posted = dom->posted && dfi_pin_here(dom);
	uint64_t now;

	dom->posted = false;
	cq->empty++;
	if (!posted && ++cq->idle < DFI_IDLE_READS)
		return;
	cq->idle = 0;
	now = dnp_yield_now();
	/*
	 * beside busy processes: sleep until the next event rather than spin
	 * (dfi_wait_block; on an FI_THREAD_SAFE domain without the lock, so
	 * the caller trusts nothing of before: it returns -FI_EAGAIN at once)
	 */
	if ((dom->wait_block || dnp_yield_blocking(&cq->yield, now)) && dom->ep) {
		cq->blocks++;
		dfi_wait_block(dom);
		return;
	}
	if (posted) {
		dnp_yield_handoff(&cq->yield, now);
		cq->handoffs++;
		cq->pin_back = dnp_yield_now();
		return;
	}
	/* pin_back is set by a hand-off only: 0 (never) in every other placement */
	if (cq->pin_back && now - cq->pin_back < DNP_YIELD_PIN_NS) {
		cq->pin_spins++;
		return;
	}
	dnp_yield_step(&cq->yield, now);
}

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
			m->data = e->e.data;
			break;
		}
		default:
			((struct fi_cq_tagged_entry *)buf)[i] = e->e;
			break;
		}
		if (src)
			src[i] = e->src;
		cq->head = (cq->head + 1) & (cq->cap - 1);
		cq->n--;
		i++;
	}
	if (i)
		return (ssize_t)i;
	if (cq->n)
		return -FI_EAVAIL;
	if (cq->dom->ep && cq->dom->ep->fatal)
		return -FI_EIO; /* the endpoint failed for good (its daemon died, ...) */
	dfi_cq_idle(cq);
	return -FI_EAGAIN;
}

static ssize_t dfi_cq_readfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src)
{
	struct dfi_cq *cq = (struct dfi_cq *)fcq;

	return DOM_LOCKED(cq->dom, dfi_cq_readfrom_locked(cq, buf, count, src));
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
		cq->head = (cq->head + 1) & (cq->cap - 1);
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

const char *dfi_cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data, char *buf,
			    size_t len)
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

	/* DNP_FI_STATS=1: how the empty reads waited (tests/integration/mpi.sh, case pin) */
	if (getenv("DNP_FI_STATS"))
		fprintf(stderr,
			"dnp provider: cq empty_reads %" PRIu64 " yields %" PRIu64
			" yields_alone %" PRIu64 " handoffs %" PRIu64 " pin_spins %" PRIu64
			" busy_windows %" PRIu64 " blocks %" PRIu64 "\n",
			cq->empty, cq->yield.yields, cq->yield.alone, cq->handoffs, cq->pin_spins,
			cq->yield.busy, cq->blocks);
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

int dfi_cq_open(struct fid_domain *fdom, struct fi_cq_attr *attr, struct fid_cq **out,
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
	cq->cap = DFI_CQ_CAP0;
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
