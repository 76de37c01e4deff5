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
#define DFI_MR_MODE (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED)

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
