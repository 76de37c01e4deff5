/* SPDX-License-Identifier: MIT */
/*
 * dpdk_glue — dnpd's calls into the DPDK backend (built when DPDK is found;
 * nodpdk_glue.c otherwise): the EAL is started once before the first link
 * opens and released after the last one closed (docs/dpdk.md, "EAL").
 */
#include <errno.h>
#include <string.h>

#include "dnpd.h"
#include "dpdk.h"

const char dnpd_eal_default[] = DNP_DPDK_EAL_DEFAULT;

int dnpd_dpdk_init(const char *eal_args)
{
	int r = dnp_dpdk_eal_init_str("dnpd", eal_args && *eal_args ? eal_args :
				      dnpd_eal_default);

	if (r)
		dnpd_log(DNPD_ERR, "DPDK EAL init (%s): %s", eal_args && *eal_args ? eal_args :
			 dnpd_eal_default, strerror(-r));
	return r;
}

void dnpd_dpdk_fini(void)
{
	if (dnp_dpdk_eal_ready())
		dnp_dpdk_eal_cleanup();
}
