/* SPDX-License-Identifier: MIT */
/* udp_nouring — stands in for udp_uring.c when liburing is not available. */
#include <errno.h>

#include "udp_priv.h"

int dnp_udp_uring_init(struct dnp_udp *u)
{
	return -ENOTSUP;
}

void dnp_udp_uring_fini(struct dnp_udp *u)
{
}

unsigned dnp_udp_uring_flags(const struct dnp_udp *u)
{
	return 0;
}
