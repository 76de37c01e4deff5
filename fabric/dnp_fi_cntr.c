/* SPDX-License-Identifier: MIT */
/*
 * Counters of the provider "dnp" (contract: dnp_fi_priv.h). A counter bound
 * to the endpoint with FI_SEND, FI_RECV, FI_READ or FI_WRITE counts the
 * operations of that kind that end: successes in its value, failures in its
 * error count, whether or not they write a CQ entry (fi_inject* included).
 * Peeks and canceled receives are not counted. Remote counters
 * (FI_REMOTE_READ, FI_REMOTE_WRITE) need FI_RMA_EVENT, which the provider
 * does not offer: a DNP PUT or GET leaves no event at its target.
 * Reads and waits make progress (FI_PROGRESS_MANUAL); fi_cntr_wait polls,
 * yielding the CPU, until the threshold, a new error or its timeout.
 *
 * Daemon counters (issue 27): each counter takes one of the port's
 * DNP_CNTR_MAX completion counters when it opens. An fi_write that needs no
 * CQ entry (FI_SELECTIVE_COMPLETION without FI_COMPLETION, or
 * fi_inject_write) on an endpoint whose FI_WRITE counter has one is issued
 * with DNP_NO_EVENT | DNP_CNTR(n) (dnp_fi_rma.c): no request, no event on
 * success, the daemon counts it. A read adds the daemon's counts to the
 * provider's own.
 */
#include <sched.h>
#include <stdlib.h>

#include "dnp_fi_priv.h"

#define CNTR(f) container_of(f, struct dfi_cntr, cntr)

void dfi_count(struct dfi_ep *ep, uint64_t flags, bool err)
{
	struct dfi_cntr *c;

	if (flags & FI_RECV)
		c = ep->cntr[DFI_CNT_RECV];
	else if (flags & FI_SEND)
		c = ep->cntr[DFI_CNT_SEND];
	else if (flags & FI_READ)
		c = ep->cntr[DFI_CNT_READ];
	else if (flags & FI_WRITE)
		c = ep->cntr[DFI_CNT_WRITE];
	else
		c = NULL;
	if (!c)
		return;
	if (err)
		c->err++;
	else
		c->val++;
}

unsigned dfi_cntr_flag(const struct dfi_ep *ep, unsigned k)
{
	const struct dfi_cntr *c = ep->cntr[k];

	return c && c->dn >= 0 ? DNP_CNTR(c->dn) : 0;
}

/* The daemon's counts of c (0 without a daemon counter). */
static void dfi_cntr_daemon(const struct dfi_cntr *c, uint64_t *ok, uint64_t *err)
{
	*ok = *err = 0;
	if (c->dn >= 0)
		dnp_cntr_read(c->dom->d, (unsigned)c->dn, ok, err);
}

int dfi_cntr_bind(struct dfi_ep *ep, struct dfi_cntr *c, uint64_t flags)
{
	static const uint64_t kinds[DFI_CNT_N] = {
		[DFI_CNT_SEND] = FI_SEND,
		[DFI_CNT_RECV] = FI_RECV,
		[DFI_CNT_READ] = FI_READ,
		[DFI_CNT_WRITE] = FI_WRITE,
	};
	unsigned k;

	if (c->dom != ep->dom || !flags || (flags & ~(FI_SEND | FI_RECV | FI_READ | FI_WRITE)))
		return -FI_EINVAL;
	for (k = 0; k < DFI_CNT_N; k++) {
		if (!(flags & kinds[k]))
			continue;
		if (ep->cntr[k])
			ep->cntr[k]->bound--;
		ep->cntr[k] = c;
		c->bound++;
	}
	return 0;
}

/* Progress on the domain's endpoint (the one that counts into c). */
static void dfi_cntr_progress(struct dfi_cntr *c)
{
	if (c->dom->ep)
		dfi_progress(c->dom->ep);
}

/* The value (err: the error count), after progress. */
static uint64_t dfi_cntr_get(struct fid_cntr *fc, bool err)
{
	struct dfi_cntr *c = CNTR(fc);
	uint64_t v, dok, derr;

	bool yield = false;

	pthread_mutex_lock(&dfi_lock);
	dfi_cntr_progress(c);
	dfi_cntr_daemon(c, &dok, &derr);
	v = err ? c->err + derr : c->val + dok;
	/*
	 * An application spinning on fi_cntr_read must leave the core to the
	 * daemon that brings the count (as CQ reads do, dnp_fi_cq.c): every
	 * few reads that found nothing new.
	 */
	if (c->val + dok + c->err + derr != c->last) {
		c->last = c->val + dok + c->err + derr;
		c->idle = 0;
	} else if (++c->idle >= 4) {
		c->idle = 0;
		yield = true;
	}
	pthread_mutex_unlock(&dfi_lock);
	if (yield)
		dnp_yield_step(&c->yield, dnp_yield_now());
	return v;
}

static uint64_t dfi_cntr_read(struct fid_cntr *fc)
{
	return dfi_cntr_get(fc, false);
}

static uint64_t dfi_cntr_readerr(struct fid_cntr *fc)
{
	return dfi_cntr_get(fc, true);
}

/* Adds v to (add) or sets (!add) the value (err: the error count). */
static int dfi_cntr_change(struct fid_cntr *fc, uint64_t v, bool add, bool err)
{
	struct dfi_cntr *c = CNTR(fc);
	uint64_t *p = err ? &c->err : &c->val, dok, derr;

	pthread_mutex_lock(&dfi_lock);
	dfi_cntr_daemon(c, &dok, &derr);
	*p = add ? *p + v : v - (err ? derr : dok); /* set: the daemon's part counts from here */
	pthread_mutex_unlock(&dfi_lock);
	return 0;
}

static int dfi_cntr_add(struct fid_cntr *fc, uint64_t v)
{
	return dfi_cntr_change(fc, v, true, false);
}

static int dfi_cntr_set(struct fid_cntr *fc, uint64_t v)
{
	return dfi_cntr_change(fc, v, false, false);
}

static int dfi_cntr_adderr(struct fid_cntr *fc, uint64_t v)
{
	return dfi_cntr_change(fc, v, true, true);
}

static int dfi_cntr_seterr(struct fid_cntr *fc, uint64_t v)
{
	return dfi_cntr_change(fc, v, false, true);
}

/*
 * Waits until the value reaches threshold (0), the error count grows
 * (-FI_EAVAIL), timeout ms pass (-FI_ETIMEDOUT; < 0: no limit) or the
 * endpoint fails for good, e.g. its daemon died (-FI_EIO).
 */
static int dfi_cntr_wait(struct fid_cntr *fc, uint64_t threshold, int timeout)
{
	struct dfi_cntr *c = CNTR(fc);
	uint64_t deadline = timeout >= 0 ? dfi_now() + (uint64_t)timeout * 1000000ull : 0;
	uint64_t err0, dok, derr;
	int r;

	pthread_mutex_lock(&dfi_lock);
	dfi_cntr_daemon(c, &dok, &derr);
	err0 = c->err + derr;
	for (;;) {
		dfi_cntr_progress(c);
		dfi_cntr_daemon(c, &dok, &derr);
		if (c->val + dok >= threshold) {
			r = 0;
			break;
		}
		if (c->err + derr != err0) {
			r = -FI_EAVAIL;
			break;
		}
		if (c->dom->ep && c->dom->ep->fatal) {
			r = -FI_EIO;
			break;
		}
		if (deadline && dfi_now() >= deadline) {
			r = -FI_ETIMEDOUT;
			break;
		}
		pthread_mutex_unlock(&dfi_lock);
		sched_yield(); /* the daemon that brings the next event may want this CPU */
		pthread_mutex_lock(&dfi_lock);
	}
	pthread_mutex_unlock(&dfi_lock);
	return r;
}

static int dfi_cntr_close(struct fid *fid)
{
	struct dfi_cntr *c = CNTR(fid);

	pthread_mutex_lock(&dfi_lock);
	if (c->bound) {
		pthread_mutex_unlock(&dfi_lock);
		return -FI_EBUSY; /* still bound to an open endpoint */
	}
	if (c->dn >= 0)
		c->dom->cntr_used &= ~(1ull << c->dn);
	pthread_mutex_unlock(&dfi_lock);
	free(c);
	return 0;
}

static struct fi_ops dfi_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dfi_cntr_close,
	.bind = NOSYS(bind),
	.control = NOSYS(control),
	.ops_open = NOSYS(ops_open),
};

static struct fi_ops_cntr dfi_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = dfi_cntr_read,
	.readerr = dfi_cntr_readerr,
	.add = dfi_cntr_add,
	.set = dfi_cntr_set,
	.wait = dfi_cntr_wait,
	.adderr = dfi_cntr_adderr,
	.seterr = dfi_cntr_seterr,
};

int dfi_cntr_open(struct fid_domain *fdom, struct fi_cntr_attr *attr, struct fid_cntr **out,
		  void *context)
{
	struct dfi_cntr *c;

	if (attr && (attr->events != FI_CNTR_EVENTS_COMP || attr->wait_set))
		return -FI_ENOSYS;
	if (attr && attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC &&
	    attr->wait_obj != FI_WAIT_YIELD)
		return -FI_ENOSYS; /* no wait objects (fd, mutex/cond, set) */
	if (attr && attr->flags)
		return -FI_EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	c->dom = (struct dfi_domain *)fdom;
	c->dn = -1;
	pthread_mutex_lock(&dfi_lock);
	for (unsigned n = 0; n < DNP_CNTR_MAX && !getenv("DNP_FI_NO_DAEMON_CNTR"); n++)
		if (!(c->dom->cntr_used & (1ull << n))) {
			uint64_t dok, derr;

			c->dom->cntr_used |= 1ull << n;
			c->dn = (int)n;
			dfi_cntr_daemon(c, &dok,
					&derr); /* a counter used before counts from here */
			c->val = -dok;
			c->err = -derr;
			break;
		}
	pthread_mutex_unlock(&dfi_lock);
	c->cntr.fid.fclass = FI_CLASS_CNTR;
	c->cntr.fid.context = context;
	c->cntr.fid.ops = &dfi_cntr_fi_ops;
	c->cntr.ops = &dfi_cntr_ops;
	*out = &c->cntr;
	return 0;
}
