/* SPDX-License-Identifier: MIT */
/*
 * Memory registration of the provider "dnp" (contract: dnp_fi_priv.h).
 */
#include <stdlib.h>

#include "dnp_fi_priv.h"

/* ------------------------------------------------------------ registrations */

/* Registers a user range, or a private copy when it overlaps one in use (regcache.h). */
int dfi_reg_user(struct dfi_domain *dom, struct dfi_req *q, void *buf, size_t len, bool copy_in)
{
	return dnp_regcache_get_user(&dom->regs, buf, len, copy_in, &q->reg, &q->bounce);
}

void dfi_unreg_user(struct dfi_domain *dom, struct dfi_req *q)
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
		mr->put_target = bflags & DNP_BUF_PUT_TARGET;
	}
	mr->dom = dom;
	mr->buf = (void *)(uintptr_t)buf;
	mr->len = len;
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

struct fi_ops_mr dfi_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = dfi_mr_reg,
	.regv = dfi_mr_regv,
	.regattr = dfi_mr_regattr,
};
