/* SPDX-License-Identifier: MIT */
/*
 * What the provider "dnp" advertises: fi_getinfo (capabilities and
 * attributes, checked against the hints) and the provider entry point
 * (contract: dnp_fi_priv.h).
 */
#include <stdlib.h>
#include <string.h>

#include "dnp_fi_priv.h"

#define DFI_VERSION FI_VERSION(0, 1)
#define DFI_CAPS                                                                               \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | \
	 FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM)
/*
 * FI_COLLECTIVE only when asked (as libfabric's providers do): the daemons'
 * barrier, broadcast and allreduce (dnp_fi_coll.c, fi_query_collective).
 */
#define DFI_CAPS_ASKED FI_COLLECTIVE
#define DFI_MR_MODE (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED)

/* ------------------------------------------------------------ getinfo */

/*
 * Every capability and attribute the provider advertises is here; anything an
 * application's hints ask beyond them is refused with -FI_ENODATA (never
 * granted and then ignored). docs/mpi.md has the table, with the reasons.
 */
#define DFI_TX_CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_READ | FI_WRITE | FI_COLLECTIVE)
#define DFI_RX_CAPS                                                                 \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE | \
	 FI_DIRECTED_RECV | FI_SOURCE | FI_COLLECTIVE)
#define DFI_DOMAIN_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM)
#define DFI_ORDER FI_ORDER_SAS /* messages of a pair: sequence numbers; RMA: none */
#define DFI_QUEUE 1024         /* advertised tx/rx size (queues grow: a larger ask is met) */
#define DFI_CQ_CNT 16
#define DFI_CNTR_CNT 16 /* counters are memory only: as many as CQs */

/*
 * The DNP class (0 lowest .. 7 top; docs/mpi.md, "Traffic classes in the
 * provider") of a libfabric tclass; -1 for one the provider does not know.
 */
int dfi_tclass(uint32_t tclass)
{
	if (tclass & FI_TC_DSCP)
		return tclass & ~(uint32_t)(FI_TC_DSCP | 0x3f) ? -1 : (int)((tclass & 0x3f) >> 3);
	switch (tclass) {
	case FI_TC_UNSPEC:
	case FI_TC_SCAVENGER:
		return 0;
	case FI_TC_BULK_DATA:
		return 1;
	case FI_TC_BEST_EFFORT:
		return 2;
	case FI_TC_LOW_LATENCY:
		return 5;
	case FI_TC_DEDICATED_ACCESS:
		return 6;
	case FI_TC_NETWORK_CTRL:
		return 7;
	default:
		return -1;
	}
}

/* Capabilities for hints->caps: the primary ones asked, their implied modifiers. */
static uint64_t dfi_caps(uint64_t want)
{
	uint64_t caps = want | DFI_DOMAIN_CAPS;

	if (!want)
		return DFI_CAPS;
	if ((want & (FI_MSG | FI_TAGGED)) && !(want & (FI_SEND | FI_RECV)))
		caps |= FI_SEND | FI_RECV;
	if ((want & FI_RMA) && !(want & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)))
		caps |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	return caps;
}

static bool dfi_tx_ok(const struct fi_tx_attr *t)
{
	return !t || (!(t->caps & ~DFI_TX_CAPS) && !(t->msg_order & ~DFI_ORDER) && !t->comp_order &&
		      dfi_tclass(t->tclass) >= 0 && t->inject_size <= DFI_EAGER &&
		      t->iov_limit <= 1 && t->rma_iov_limit <= 1);
}

static bool dfi_rx_ok(const struct fi_rx_attr *r)
{
	return !r || (!(r->caps & ~DFI_RX_CAPS) && !(r->msg_order & ~DFI_ORDER) && !r->comp_order &&
		      r->iov_limit <= 1);
}

static bool dfi_ep_ok(const struct fi_ep_attr *e)
{
	return !e || ((e->type == FI_EP_UNSPEC || e->type == FI_EP_RDM) &&
		      e->protocol == FI_PROTO_UNSPEC && e->max_msg_size <= DNP_MAX_MSG &&
		      !e->msg_prefix_size && !e->max_order_raw_size && !e->max_order_war_size &&
		      !e->max_order_waw_size && e->tx_ctx_cnt <= 1 && e->rx_ctx_cnt <= 1 &&
		      !e->auth_key_size);
}

/*
 * The mr_mode to return for the hints' mode (-1: refused). Only RMA needs
 * registrations; messages copy or register internally.
 */
static int64_t dfi_mr_mode(uint32_t version, int mode, bool rma)
{
	if (mode == FI_MR_SCALABLE)
		return -1; /* keys are the daemon's (FI_MR_PROV_KEY) */
	if (version < FI_VERSION(1, 5) || mode == FI_MR_BASIC)
		return FI_MR_BASIC; /* FI_MR_BASIC and FI_MR_UNSPEC of API 1.0..1.4 */
	if ((mode & DFI_MR_MODE) == DFI_MR_MODE)
		return DFI_MR_MODE;
	return rma ? -1 : 0;
}

static bool dfi_domain_ok(const struct fi_domain_attr *d)
{
	return !d || ((!d->name || !strcmp(d->name, DFI_NAME)) &&
		      d->control_progress != FI_PROGRESS_AUTO &&
		      d->data_progress != FI_PROGRESS_AUTO && !(d->caps & ~DFI_DOMAIN_CAPS) &&
		      (d->av_type == FI_AV_UNSPEC || d->av_type == FI_AV_MAP ||
		       d->av_type == FI_AV_TABLE) &&
		      d->mr_key_size <= 4 && d->cq_data_size <= DFI_CQ_DATA_SIZE &&
		      d->cq_cnt <= DFI_CQ_CNT && d->cntr_cnt <= DFI_CNTR_CNT && d->ep_cnt <= 1 &&
		      d->tx_ctx_cnt <= 1 && d->rx_ctx_cnt <= 1 && d->max_ep_tx_ctx <= 1 &&
		      d->max_ep_rx_ctx <= 1 && d->max_ep_stx_ctx == 0 && d->max_ep_srx_ctx == 0 &&
		      d->mr_iov_limit <= 1 && !d->auth_key_size && !d->max_err_data);
}

static bool dfi_src_addr_is(const void *addr, size_t len, struct dnp_coords self, unsigned port)
{
	struct dfi_addr a;

	if (len != sizeof(a))
		return false;
	memcpy(&a, addr, sizeof(a));
	return a.magic == DFI_ADDR_MAGIC && !a.ring_key && a.x == self.x && a.y == self.y &&
	       a.z == self.z && (a.port == DFI_PORT_ANY || a.port == port);
}

bool dfi_src_ok(const struct fi_info *info, struct dnp_coords self, unsigned port)
{
	return !info || !info->src_addr ||
	       dfi_src_addr_is(info->src_addr, info->src_addrlen, self, port);
}

/*
 * fi_info's src_addr (dnp_fi.h): the node of this process's daemon, learnt
 * from a short session with it (the port it lends is free again at once).
 * Returns 0 with fi->src_addr set, 1 when no daemon answers (no src_addr:
 * fi_getinfo needs no daemon), -FI_ENODATA when hints->src_addr is not a
 * source address of that node, -FI_ENOMEM.
 */
static int dfi_src_fill(const struct fi_info *hints, struct fi_info *fi)
{
	struct dnp_coords self, dims;
	struct dfi_addr *a;
	struct dnp *d;
	char path[4096];
	int r = dnp_open(dfi_socket(path, sizeof(path)), &d);

	if (r == 0) {
		r = dnp_self(d, &self, &dims);
		dnp_close(d);
	}
	if (r < 0)
		return hints && hints->src_addr ? -FI_ENODATA : 1;
	if (hints && hints->src_addr &&
	    !dfi_src_addr_is(hints->src_addr, hints->src_addrlen, self, DFI_PORT_ANY))
		return -FI_ENODATA;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -FI_ENOMEM;
	a->x = (uint8_t)self.x;
	a->y = (uint8_t)self.y;
	a->z = (uint8_t)self.z;
	a->port = DFI_PORT_ANY;
	a->magic = DFI_ADDR_MAGIC;
	fi->src_addr = a;
	fi->src_addrlen = sizeof(*a);
	return 0;
}

/* A dest_addr hint is an endpoint's address (from fi_getname); it is returned as given. */
static bool dfi_dest_ok(const struct fi_info *h)
{
	struct dfi_addr a;

	if (h->dest_addrlen != sizeof(a))
		return false;
	memcpy(&a, h->dest_addr, sizeof(a));
	return a.magic == DFI_ADDR_MAGIC && a.ring_key && a.credit_key;
}

/* fi_getinfo: one FI_EP_RDM entry, or -FI_ENODATA when the hints ask what we lack. */
static int dfi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info)
{
	const struct fi_info *h = hints;
	uint64_t caps = dfi_caps(h ? h->caps : 0);
	int64_t mr_mode;
	struct fi_info *fi;
	int r;

	if (node || service || (h && h->dest_addr && !dfi_dest_ok(h)))
		return -FI_ENODATA; /* no name resolution: addresses come from fi_getname */
	if (h &&
	    ((h->caps & ~(DFI_CAPS | DFI_CAPS_ASKED)) || h->addr_format != FI_FORMAT_UNSPEC ||
	     (h->fabric_attr && h->fabric_attr->name && strcmp(h->fabric_attr->name, DFI_FABRIC)) ||
	     !dfi_tx_ok(h->tx_attr) || !dfi_rx_ok(h->rx_attr) || !dfi_ep_ok(h->ep_attr) ||
	     !dfi_domain_ok(h->domain_attr)))
		return -FI_ENODATA;
	if (!h || !h->domain_attr) {
		mr_mode = dfi_mr_mode(version, DFI_MR_MODE, true);
	} else {
		mr_mode = dfi_mr_mode(version, h->domain_attr->mr_mode, caps & FI_RMA);
		/* RMA not asked for by name: offered only with the mr_mode it needs */
		if (mr_mode < 0 && !(h->caps & FI_RMA)) {
			caps &= ~(FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE);
			mr_mode = dfi_mr_mode(version, h->domain_attr->mr_mode, false);
		}
	}
	if (mr_mode < 0)
		return -FI_ENODATA;
	fi = fi_allocinfo();
	if (!fi)
		return -FI_ENOMEM;
	fi->caps = caps;
	fi->mode = 0;
	fi->addr_format = FI_FORMAT_UNSPEC;
	fi->tx_attr->caps = caps & DFI_TX_CAPS;
	fi->tx_attr->msg_order = DFI_ORDER;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = DFI_EAGER;
	fi->tx_attr->size =
		h && h->tx_attr && h->tx_attr->size > DFI_QUEUE ? h->tx_attr->size : DFI_QUEUE;
	fi->tx_attr->iov_limit = 1;
	fi->tx_attr->rma_iov_limit = 1;
	/* op_flags (FI_COMPLETION with selective completion) as the application asks */
	if (h && h->tx_attr) {
		fi->tx_attr->op_flags = h->tx_attr->op_flags;
		fi->tx_attr->tclass = h->tx_attr->tclass; /* dfi_tclass: every one it knows */
	}
	if (h && h->rx_attr)
		fi->rx_attr->op_flags = h->rx_attr->op_flags;
	fi->rx_attr->caps = caps & DFI_RX_CAPS;
	fi->rx_attr->msg_order = DFI_ORDER;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->size =
		h && h->rx_attr && h->rx_attr->size > DFI_QUEUE ? h->rx_attr->size : DFI_QUEUE;
	fi->rx_attr->iov_limit = 1;
	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->max_msg_size = DNP_MAX_MSG;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;
	fi->ep_attr->mem_tag_format = ~0ull; /* all 64 tag bits are matched */
	fi->domain_attr->name = strdup(DFI_NAME);
	/*
	 * FI_THREAD_DOMAIN when asked for (Open MPI's MTL without
	 * MPI_THREAD_MULTIPLE): no lock per data call or CQ read. Otherwise
	 * FI_THREAD_SAFE, under the provider lock.
	 */
	fi->domain_attr->threading =
		h && h->domain_attr && h->domain_attr->threading == FI_THREAD_DOMAIN ?
			FI_THREAD_DOMAIN :
			FI_THREAD_SAFE;
	fi->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type = h && h->domain_attr ? h->domain_attr->av_type : FI_AV_UNSPEC;
	fi->domain_attr->mr_mode = (int)mr_mode;
	fi->domain_attr->mr_key_size = 4;
	fi->domain_attr->cq_data_size = DFI_CQ_DATA_SIZE;
	fi->domain_attr->cq_cnt = DFI_CQ_CNT;
	fi->domain_attr->cntr_cnt = DFI_CNTR_CNT;
	fi->domain_attr->ep_cnt = 1; /* one endpoint per domain: a domain is one DNP port */
	fi->domain_attr->tx_ctx_cnt = 1;
	fi->domain_attr->rx_ctx_cnt = 1;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->mr_iov_limit = 1;
	fi->domain_attr->caps = DFI_DOMAIN_CAPS;
	fi->fabric_attr->name = strdup(DFI_FABRIC);
	fi->fabric_attr->prov_version = DFI_VERSION;
	if (!fi->domain_attr->name || !fi->fabric_attr->name) {
		fi_freeinfo(fi);
		return -FI_ENOMEM;
	}
	r = dfi_src_fill(h, fi);
	if (r >= 0 && h && h->dest_addr) {
		fi->dest_addr = malloc(sizeof(struct dfi_addr));
		r = fi->dest_addr ? 0 : -FI_ENOMEM;
		if (fi->dest_addr) {
			memcpy(fi->dest_addr, h->dest_addr, sizeof(struct dfi_addr));
			fi->dest_addrlen = sizeof(struct dfi_addr);
		}
	}
	if (r < 0) {
		fi_freeinfo(fi);
		return r;
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
