/* SPDX-License-Identifier: MIT */
/*
 * FI_RMA of the provider "dnp" (contract: dnp_fi_priv.h): fi_read is a DNP
 * GET, fi_write a DNP PUT; keys are DNP buffer keys, addresses virtual.
 *   - fi_read lands in the caller's registered buffer when its MR is a PUT
 *     target, else in a private PUT-target copy moved into place when the
 *     GET is done (a buffer registered for FI_REMOTE_READ only);
 *   - fi_inject_write writes from a private copy (the caller's buffer is
 *     free on return) and completes in no CQ entry unless it fails;
 *   - fi_writedata: once the PUT is done, a DFI_WDATA message carries the
 *     remote CQ data to the target, whose RX CQ reports it (FI_RMA |
 *     FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA); no receive is consumed.
 */
#include <stdlib.h>
#include <string.h>

#include "dnp_fi_priv.h"

#define DFI_RMA_READ 1u     /* else write */
#define DFI_RMA_EXPLICIT 2u /* the *msg calls: flags given, else the endpoint's op_flags */
#define DFI_RMA_NOCOMP 4u   /* the inject calls: no completion */

/* The local key a GET into [buf, +len) presents: q's own registration when mr cannot serve. */
static int dfi_read_dest(struct dfi_ep *ep, struct dfi_req *q, struct dfi_mr *mr, void *buf,
			 size_t len, uint32_t *lkey)
{
	int r;

	if (mr && mr->registered && mr->put_target && mr->mr.key &&
	    (uint8_t *)buf >= (uint8_t *)mr->buf &&
	    (uint8_t *)buf + len <= (uint8_t *)mr->buf + mr->len) {
		*lkey = (uint32_t)mr->mr.key;
		return 0;
	}
	/* registered (or a private copy when it overlaps a registration: regcache.h) */
	r = dfi_reg_user(ep->dom, q, buf, len, false);
	if (r < 0)
		return r;
	*lkey = q->reg->key;
	return 0;
}

/*
 * A write the daemon counts (dnp_fi_cntr.c): no request, no event on
 * success (DNP_NO_EVENT | cntr: DNP_CNTR(n)); a failure counts in the
 * counter's errors and comes back as an event with the cookie of no request
 * (C_RMA, 0, 0), which dfi_event turns into a CQ error entry without a context.
 * An inject is copied into the command (DNP_INLINE, up to DNP_INLINE_MAX).
 */
static ssize_t dfi_write_counted(struct dfi_ep *ep, struct dfi_peer *pe, const void *buf,
				 size_t len, uint64_t addr, uint64_t key, unsigned cntr,
				 bool inject)
{
	unsigned fl = DNP_NONBLOCK | DNP_NO_EVENT | cntr | ep->dom->tc | (inject ? DNP_INLINE : 0);
	int r = dnp_put(ep->dom->d, buf, len, pe->c, pe->port, addr, (uint32_t)key,
			dnp_reqtab_cookie(C_RMA, 0, 0), fl);

	ep->dom->posted |= r == 0;
	return r == -EAGAIN ? -FI_EAGAIN : r;
}

static ssize_t dfi_rma(struct dfi_ep *ep, void *buf, size_t len, void *desc, fi_addr_t peer,
		       uint64_t addr, uint64_t key, void *context, uint64_t flags, uint64_t data,
		       unsigned how)
{
	bool read = how & DFI_RMA_READ;
	struct dfi_peer *pe;
	struct dfi_req *q;
	unsigned idx;
	uint32_t lkey = 0;
	void *src = buf;
	int err = 0, r;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (ep->fatal)
		return -FI_EIO;
	if (!len || key > UINT32_MAX)
		return -FI_EINVAL;
	if ((flags & FI_INJECT) && (read || len > DFI_EAGER))
		return read ? -FI_EINVAL : -FI_EMSGSIZE;
	pe = dfi_peer_of(ep, peer, &idx, &err);
	if (!pe)
		return err;
	if (!read && !(flags & FI_REMOTE_CQ_DATA) &&
	    ((how & DFI_RMA_NOCOMP) ||
	     !dfi_want_comp(ep->tx_flags, how & DFI_RMA_EXPLICIT ? flags : ep->tx_op_flags))) {
		unsigned cf = dfi_cntr_flag(ep, DFI_CNT_WRITE);

		if (cf && (!(flags & FI_INJECT) || len <= DNP_INLINE_MAX))
			return dfi_write_counted(ep, pe, buf, len, addr, key, cf,
						 flags & FI_INJECT);
	}
	q = dfi_req_new(ep, R_RMA);
	if (!q)
		return -FI_ENOMEM;
	q->context = context;
	q->flags = FI_RMA | (read ? FI_READ : FI_WRITE);
	q->comp = !(how & DFI_RMA_NOCOMP) &&
		  dfi_want_comp(ep->tx_flags, how & DFI_RMA_EXPLICIT ? flags : ep->tx_op_flags);
	q->buf = buf;
	q->len = len;
	q->rts_peer = idx;
	q->wdata = !read && (flags & FI_REMOTE_CQ_DATA);
	q->data = data;
	if (read) {
		r = dfi_read_dest(ep, q, desc, buf, len, &lkey);
		if (r == 0)
			r = dnp_get(ep->dom->d, q->bounce ? q->bounce : buf, len, lkey, pe->c,
				    pe->port, addr, (uint32_t)key,
				    dnp_reqtab_cookie(C_RMA, q->idx, q->gen),
				    DNP_NONBLOCK | ep->dom->tc);
	} else {
		if (flags & FI_INJECT) {
			q->inject = malloc(len);
			if (!q->inject) {
				dfi_req_free(ep, q);
				return -FI_ENOMEM;
			}
			memcpy(q->inject, buf, len);
			src = q->inject;
		}
		r = dnp_put(ep->dom->d, src, len, pe->c, pe->port, addr, (uint32_t)key,
			    dnp_reqtab_cookie(C_RMA, q->idx, q->gen), DNP_NONBLOCK | ep->dom->tc);
	}
	if (r < 0) {
		dfi_unreg_user(ep->dom, q);
		free(q->inject);
		dfi_req_free(ep, q);
		return r == -EAGAIN ? -FI_EAGAIN : r;
	}
	ep->dom->posted = true;
	return 0;
}

/* The one local buffer and remote range of an RMA call (iov_limit, rma_iov_limit 1). */
static int dfi_rma_iov1(const struct fi_msg_rma *m, void **buf, size_t *len, void **desc)
{
	if (m->iov_count != 1 || m->rma_iov_count != 1)
		return -FI_ENOSYS;
	*buf = m->msg_iov[0].iov_base;
	*len = m->msg_iov[0].iov_len;
	*desc = m->desc ? m->desc[0] : NULL;
	return 0;
}

#define RD DFI_RMA_READ
#define X DFI_RMA_EXPLICIT

static ssize_t dfi_read(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
			uint64_t addr, uint64_t key, void *context)
{
	return LOCKED(dfi_rma(EP(fep), buf, len, desc, src, addr, key, context, 0, 0, RD));
}

static ssize_t dfi_readv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t src, uint64_t addr, uint64_t key, void *context)
{
	if (count != 1)
		return -FI_ENOSYS;
	return dfi_read(fep, iov[0].iov_base, iov[0].iov_len, desc ? desc[0] : NULL, src, addr, key,
			context);
}

static ssize_t dfi_readmsg(struct fid_ep *fep, const struct fi_msg_rma *m, uint64_t flags)
{
	void *b, *d;
	size_t n;

	return dfi_rma_iov1(m, &b, &n, &d) ?:
		       LOCKED(dfi_rma(EP(fep), b, n, d, m->addr, m->rma_iov[0].addr,
				      m->rma_iov[0].key, m->context, flags, 0, RD | X));
}

static ssize_t dfi_write(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			 fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	return LOCKED(dfi_rma(EP(fep), (void *)(uintptr_t)buf, len, desc, dest, addr, key, context,
			      0, 0, 0));
}

static ssize_t dfi_writev(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			  fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	if (count != 1)
		return -FI_ENOSYS;
	return dfi_write(fep, iov[0].iov_base, iov[0].iov_len, desc ? desc[0] : NULL, dest, addr,
			 key, context);
}

static ssize_t dfi_writemsg(struct fid_ep *fep, const struct fi_msg_rma *m, uint64_t flags)
{
	void *b, *d;
	size_t n;

	return dfi_rma_iov1(m, &b, &n, &d) ?:
		       LOCKED(dfi_rma(EP(fep), b, n, d, m->addr, m->rma_iov[0].addr,
				      m->rma_iov[0].key, m->context, flags, m->data, X));
}

static ssize_t dfi_inject_write(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest,
				uint64_t addr, uint64_t key)
{
	return LOCKED(dfi_rma(EP(fep), (void *)(uintptr_t)buf, len, NULL, dest, addr, key, NULL,
			      FI_INJECT, 0, X | DFI_RMA_NOCOMP));
}

static ssize_t dfi_writedata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			     uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key,
			     void *context)
{
	return LOCKED(dfi_rma(EP(fep), (void *)(uintptr_t)buf, len, desc, dest, addr, key, context,
			      FI_REMOTE_CQ_DATA, data, 0));
}

static ssize_t dfi_inject_writedata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
				    fi_addr_t dest, uint64_t addr, uint64_t key)
{
	return LOCKED(dfi_rma(EP(fep), (void *)(uintptr_t)buf, len, NULL, dest, addr, key, NULL,
			      FI_INJECT | FI_REMOTE_CQ_DATA, data, X | DFI_RMA_NOCOMP));
}

#undef RD
#undef X

void dfi_rma_done(struct dfi_ep *ep, struct dfi_req *q, const struct dnp_event *ev)
{
	int st = ev->type == DNP_EV_ERROR ? (ev->status ? ev->status : -EIO) : 0;

	if (!st && q->bounce && (q->flags & FI_READ))
		memcpy(q->buf, q->bounce, q->len);
	dfi_unreg_user(ep->dom, q);
	free(q->inject);
	q->inject = NULL;
	if (!st && q->wdata)
		st = dfi_notify_write(ep, q->rts_peer, q->len, q->data);
	if (st)
		dfi_cq_error(ep->tx_cq, q->context, q->flags, 0, NULL, 0, 0, -st);
	else if (q->comp)
		dfi_cq_write(ep->tx_cq, q->context, q->flags, 0, NULL, 0, FI_ADDR_NOTAVAIL);
	dfi_count(ep, q->flags, st != 0);
	dfi_req_free(ep, q);
}

struct fi_ops_rma dfi_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = dfi_read,
	.readv = dfi_readv,
	.readmsg = dfi_readmsg,
	.write = dfi_write,
	.writev = dfi_writev,
	.writemsg = dfi_writemsg,
	.inject = dfi_inject_write,
	.writedata = dfi_writedata,
	.injectdata = dfi_inject_writedata,
};
