/* SPDX-License-Identifier: MIT */
/*
 * transport_reg_dpdk — the registry's optional backends when DPDK is built
 * (transport/meson.build picks this file or transport_reg_none.c).
 */
#include "dpdk.h"
#include "transport.h"
#include "transport_priv.h"

const struct dnp_transport_ops *const dnp_transport_optional[] = {
	&dnp_transport_dpdk,
	NULL,
};
