/* SPDX-License-Identifier: MIT */
/*
 * transport_reg_verbs — the registry's optional backends when libibverbs is
 * built and DPDK is not (transport/meson.build picks one transport_reg_*.c).
 */
#include "transport.h"
#include "transport_priv.h"
#include "verbs.h"

const struct dnp_transport_ops *const dnp_transport_optional[] = {
	&dnp_transport_verbs,
	NULL,
};
