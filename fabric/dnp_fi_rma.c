/* SPDX-License-Identifier: MIT */
/*
 * FI_RMA of the provider "dnp" (contract: dnp_fi_priv.h).
 */
#include "dnp_fi_priv.h"

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

void dfi_rma_done(struct dfi_ep *ep, struct dfi_req *q, const struct dnp_event *ev)
{
	dfi_unreg_user(ep->dom, q);
	if (ev->type == DNP_EV_ERROR)
		dfi_cq_error(ep->tx_cq, q->context, q->flags, 0, NULL, 0, 0,
			     ev->status ? -ev->status : EIO);
	else if (q->comp)
		dfi_cq_write(ep->tx_cq, q->context, q->flags, 0, NULL, 0, FI_ADDR_NOTAVAIL);
	dfi_req_free(ep, q);
}

struct fi_ops_rma dfi_rma_ops = {
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
