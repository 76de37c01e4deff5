/* SPDX-License-Identifier: MIT */
/*
 * transport_reg_dpdk_verbs — the registry's optional backends when both DPDK
 * and libibverbs are built (transport/meson.build picks one transport_reg_*.c).
 */
#include "dpdk.h"
#include "transport.h"
#include "transport_priv.h"
#include "verbs.h"

const struct dnp_transport_ops *const dnp_transport_optional[] = {
	&dnp_transport_dpdk,
	&dnp_transport_verbs,
	NULL,
};
