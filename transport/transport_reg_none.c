/* SPDX-License-Identifier: MIT */
/*
 * transport_reg_none — the registry's optional backends when neither DPDK nor libibverbs is built
 * (transport/meson.build picks one transport_reg_*.c).
 */
#include "transport.h"
#include "transport_priv.h"

const struct dnp_transport_ops *const dnp_transport_optional[] = {
	NULL,
};
