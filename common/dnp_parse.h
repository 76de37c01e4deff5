/* SPDX-License-Identifier: MIT */
/*
 * dnp_parse.h — one parser per concept for what people type: numbers, sizes,
 * size lists, durations and IPv4 host:port addresses.
 *
 * Every tool of the project (dnpd, dnpctl, dnp-run, the lab, the apps, the
 * fault managers, the benchmarks) and libdnp's environment variables read
 * these through this module, so that "64K" or "250ms" means the same thing
 * everywhere and no copy forgets a check. Each parser takes the whole string:
 * trailing garbage, an empty string, a sign and a value that does not fit
 * are errors, never a silent wrap (17179869185G is -ERANGE, not 1 GiB).
 *
 * Pure functions of their arguments: no allocation, no global state, safe
 * from any thread. The output is written only on success.
 *
 * Errors, for every parser: -EINVAL for a malformed string (NULL, empty,
 * garbage, a negative number, an unknown suffix), -ERANGE for a well-formed
 * value outside the representable or the caller's range.
 */
#ifndef DNP_PARSE_H
#define DNP_PARSE_H

#include <netinet/in.h>
#include <stdint.h>

/*
 * dnp_parse_u64() - an unsigned integer: decimal, or hexadecimal with 0x.
 * No suffix, no sign, no white space. Leading zeros are decimal ("010" is 10).
 * Returns 0, -EINVAL or -ERANGE (more than 2^64 - 1).
 */
int dnp_parse_u64(const char *s, uint64_t *out);

/*
 * dnp_parse_u64_max() - dnp_parse_u64() with an upper bound: -ERANGE above max.
 */
int dnp_parse_u64_max(const char *s, uint64_t max, uint64_t *out);

/*
 * dnp_parse_size() - a byte count with an optional binary suffix:
 * K, M, G, T (case-insensitive, powers of 1024), optionally followed by "i"
 * and/or "B" ("64K", "64KiB", "64KB", "1M", "4096", "0x1000", "12B").
 * Returns 0, -EINVAL or -ERANGE (the product does not fit in 64 bits).
 */
int dnp_parse_size(const char *s, uint64_t *out);

/*
 * dnp_parse_sizes() - a comma-separated list of dnp_parse_size() values, at
 * most max of them, stored in order. Returns the count (>= 1), -EINVAL (an
 * element malformed, an empty element, more than max elements, an empty
 * list) or -ERANGE (an element too large).
 */
int dnp_parse_sizes(const char *s, uint64_t *sizes, unsigned max);

/*
 * dnp_parse_duration_ns() - a duration in nanoseconds: a non-negative number
 * with an optional fraction ("1.5") and a unit among ns, us, ms, s, min.
 * A bare number is in default_unit_ns (1000000 for milliseconds, so that a
 * "--timeout-ms 250"-style option still takes 250); default_unit_ns must be
 * one of 1, 1000, 1000000, 1000000000 or 60000000000. A fraction finer than
 * a nanosecond is dropped.
 * Returns 0, -EINVAL (also for a bad default_unit_ns) or -ERANGE (more than
 * 2^64 - 1 ns, about 584 years).
 */
int dnp_parse_duration_ns(const char *s, uint64_t default_unit_ns, uint64_t *out_ns);

/*
 * dnp_parse_duration_ms() - dnp_parse_duration_ns() in whole milliseconds,
 * a bare number being milliseconds; a duration that is not a whole number of
 * milliseconds is rounded up (a 1 us timeout is not 0, which often means
 * "never"). Returns 0, -EINVAL or -ERANGE.
 */
int dnp_parse_duration_ms(const char *s, uint64_t *out_ms);

/*
 * dnp_parse_ipv4_port() - "A.B.C.D:PORT" into an AF_INET address (network
 * byte order). The host must be a dotted quad (no name look-up: a parser
 * never blocks on DNS); the port 1..65535. Returns 0, -EINVAL or -ERANGE
 * (a port of 0 or above 65535).
 */
int dnp_parse_ipv4_port(const char *s, struct sockaddr_in *out);

#endif /* DNP_PARSE_H */
