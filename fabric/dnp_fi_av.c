/* SPDX-License-Identifier: MIT */
/*
 * Address vectors of the provider "dnp" (contract: dnp_fi_priv.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnp_fi_priv.h"

/* ------------------------------------------------------------ AV */

unsigned dfi_idx(const struct dfi_domain *dom, unsigned x, unsigned y, unsigned z, unsigned port)
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
	.av_set = dfi_av_set,
};

int dfi_av_open(struct fid_domain *fdom, struct fi_av_attr *attr, struct fid_av **out,
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
