/* SPDX-License-Identifier: MIT */
/* nodpdk_glue — dnpd without DPDK: --transport dpdk is refused (see dpdk_glue.c). */
#include <errno.h>

#include "dnpd.h"

const char dnpd_eal_default[] = "";

int dnpd_dpdk_init(const char *eal_args)
{
	(void)eal_args;
	dnpd_log(DNPD_ERR, "transport dpdk: this dnpd was built without DPDK");
	return -ENOTSUP;
}

void dnpd_dpdk_fini(void)
{
}
