/* SPDX-License-Identifier: MIT */
/* transport — the backend registry; see transport.h (options: options.c). */
#include "transport.h"
#include "transport_priv.h"

#include <string.h>

static const struct dnp_transport_ops *const backends[] = {
	&dnp_transport_shm,
	&dnp_transport_udp,
};

const struct dnp_transport_ops *dnp_transport_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	for (size_t i = 0; dnp_transport_optional[i]; i++)
		if (strcmp(dnp_transport_optional[i]->name, name) == 0)
			return dnp_transport_optional[i];
	return NULL;
}
