/* SPDX-License-Identifier: MIT */
/*
 * transport_reg_dpdk — the registry's optional backends when DPDK is built and libibverbs is not
 * (transport/meson.build picks one transport_reg_*.c).
 */
#include "dpdk.h"
#include "transport.h"
#include "transport_priv.h"

const struct dnp_transport_ops *const dnp_transport_optional[] = {
	&dnp_transport_dpdk,
	NULL,
};
