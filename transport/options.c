/* SPDX-License-Identifier: MIT */
/*
 * options — the "k=v,k=v" option strings of every backend (transport_priv.h),
 * one parser for all of them. Open-time only.
 */
#include "transport_priv.h"

#include <errno.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dnp_parse.h"

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
	char buf[32];
	uint64_t v;

	if (!dnp_transport_opt(options, key, buf, sizeof(buf))) {
		*out = def;
		return 0;
	}
	if (dnp_parse_u64(buf, &v))
		return -EINVAL;
	*out = v;
	return 0;
}

int dnp_transport_opt_u32(const char *options, const char *key, uint32_t def, uint32_t max,
			  uint32_t *out)
{
	uint64_t v;

	if (dnp_transport_opt_u64(options, key, def, &v) || v > max)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

int dnp_transport_resolve(const char *addr, struct addrinfo **res)
{
	char host[256];
	const char *colon, *h = addr;
	size_t hlen;
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_DGRAM,
		.ai_flags = AI_NUMERICSERV,
	};

	if (!addr)
		return -EINVAL;
	colon = strrchr(addr, ':');
	if (!colon || colon == addr || colon[1] == '\0')
		return -EINVAL;
	hlen = (size_t)(colon - addr);
	if (addr[0] == '[' && hlen >= 2 && colon[-1] == ']') {
		h = addr + 1;
		hlen -= 2;
	}
	if (hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (getaddrinfo(host, colon + 1, &hints, res) != 0)
		return -EINVAL;
	return 0;
}

int dnp_transport_dgram(const char *local, const char *remote, void (*setup)(int fd, void *ctx),
			void *ctx)
{
	struct addrinfo *loc = NULL, *rem = NULL;
	int fd = -1, r;

	r = dnp_transport_resolve(local, &loc);
	if (r)
		return r;
	r = dnp_transport_resolve(remote, &rem);
	if (r)
		goto out;
	fd = socket(loc->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	if (setup)
		setup(fd, ctx);
	/*
	 * A link closed by a process that just exited may keep its port for a
	 * moment (io_uring tears rings down asynchronously; a restarted
	 * daemon's predecessor): retry for ~200 ms.
	 */
	for (int i = 0; bind(fd, loc->ai_addr, loc->ai_addrlen) < 0; i++) {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = 2000000 };

		if (errno != EADDRINUSE || i == 100) {
			r = -errno;
			goto out;
		}
		nanosleep(&ts, NULL);
	}
	if (connect(fd, rem->ai_addr, rem->ai_addrlen) < 0) {
		r = -errno;
		goto out;
	}
	r = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	if (loc)
		freeaddrinfo(loc);
	if (rem)
		freeaddrinfo(rem);
	return r;
}
