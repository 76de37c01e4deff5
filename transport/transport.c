/* SPDX-License-Identifier: MIT */
/* transport — backend registry and option parsing; see transport.h. */
#include "transport.h"
#include "transport_priv.h"

#include <errno.h>
#include <stdlib.h>
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

bool dnp_transport_opt(const char *options, const char *key, char *val, size_t len)
{
	size_t klen = strlen(key);
	const char *p = options;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t item = end ? (size_t)(end - p) : strlen(p);

		if (item >= klen && strncmp(p, key, klen) == 0 &&
		    (item == klen || p[klen] == '=')) {
			const char *v = item == klen ? p + klen : p + klen + 1;
			size_t vlen = item - (size_t)(v - p);

			if (len) {
				if (vlen > len - 1)
					vlen = len - 1;
				memcpy(val, v, vlen);
				val[vlen] = '\0';
			}
			return true;
		}
		p = end ? end + 1 : NULL;
	}
	return false;
}

int dnp_transport_opt_u64(const char *options, const char *key, uint64_t def, uint64_t *out)
{
	char buf[32], *end;
	unsigned long long v;

	if (!dnp_transport_opt(options, key, buf, sizeof(buf))) {
		*out = def;
		return 0;
	}
	errno = 0;
	v = strtoull(buf, &end, 0);
	if (errno || end == buf || *end != '\0')
		return -EINVAL;
	*out = v;
	return 0;
}
