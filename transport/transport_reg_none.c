/* SPDX-License-Identifier: MIT */
/*
 * transport_reg_none — the registry's optional backends when none is built
 * (transport/meson.build picks this file or transport_reg_dpdk.c).
 */
#include "transport.h"
#include "transport_priv.h"

const struct dnp_transport_ops *const dnp_transport_optional[] = {
	NULL,
};
