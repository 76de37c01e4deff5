/* SPDX-License-Identifier: MIT */
/*
 * transport_priv — helpers shared by the backends of transport/ and
 * transport/dpdk/ (not installed, not used outside these folders). Open-time
 * only; never on the hot path. The option parser is options.c.
 */
#ifndef DNP_TRANSPORT_PRIV_H
#define DNP_TRANSPORT_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Finds key in a "k=v,k=v" option string (NULL = empty) and copies its value
 * (NUL-terminated, truncated to len - 1) into val. A bare "k" has value "".
 * Returns false when the key is absent.
 */
bool dnp_transport_opt(const char *options, const char *key, char *val, size_t len);

/*
 * Backends built only with their optional dependency ("dpdk"), NULL-terminated:
 * defined by transport_reg_dpdk.c or transport_reg_none.c, whichever the build
 * selects, so that dnp_transport_find needs no #ifdef.
 */
extern const struct dnp_transport_ops *const dnp_transport_optional[];

struct addrinfo;
/*
 * Splits a link address "host:port" ("[v6]:port" for IPv6) and resolves it
 * (numeric port; a host name may block on DNS, so open time only). On 0 the
 * caller frees *res with freeaddrinfo. Errors: -EINVAL (malformed or not
 * resolvable).
 */
int dnp_transport_resolve(const char *addr, struct addrinfo **res);

/*
 * A non-blocking datagram socket bound to the link address local and
 * connected to remote (dnp_transport_resolve() forms). setup(fd, ctx), when
 * not NULL, runs between socket() and bind() (buffer sizes, a device). A
 * local address still held by a link that a process which just went had
 * open is retried for about 200 ms. Open time only. Returns the descriptor,
 * or a negative errno: -EINVAL (an address), or socket(2)'s, bind(2)'s
 * (-EADDRINUSE after the retries) or connect(2)'s.
 */
int dnp_transport_dgram(const char *local, const char *remote, void (*setup)(int fd, void *ctx),
			void *ctx);

/* Parses an unsigned option; returns def when absent, -EINVAL when malformed. */
int dnp_transport_opt_u64(const char *options, const char *key, uint64_t def, uint64_t *out);
/* The same for a 32-bit value at most max (-EINVAL above it). */
int dnp_transport_opt_u32(const char *options, const char *key, uint32_t def, uint32_t max,
			  uint32_t *out);

#endif
