/* SPDX-License-Identifier: MIT */
/*
 * dnp_parse.c — numbers, sizes, durations and addresses as people type them
 * (dnp_parse.h states the contract).
 *
 * Written without strtoull: it accepts a sign, leading white space and
 * wraps on "-1", three things a size or a port must never be.
 */
#include "dnp_parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* Reads the digits of base 10 or 16 at *p into *v, advancing *p. -EINVAL when
 * there is no digit, -ERANGE when the value passes 2^64 - 1. */
static int parse_digits(const char **p, unsigned base, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	bool any = false;

	for (;; s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		if (x > (UINT64_MAX - d) / base)
			return -ERANGE;
		x = x * base + d;
		any = true;
	}
	if (!any)
		return -EINVAL;
	*p = s;
	*v = x;
	return 0;
}

/* An unsigned number at *p, hexadecimal after 0x, advancing *p. */
static int parse_number(const char **p, uint64_t *v)
{
	if ((*p)[0] == '0' && ((*p)[1] == 'x' || (*p)[1] == 'X')) {
		*p += 2;
		return parse_digits(p, 16, v);
	}
	return parse_digits(p, 10, v);
}

int dnp_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v;
	int r;

	if (!s)
		return -EINVAL;
	r = parse_number(&s, &v);
	if (r)
		return r;
	if (*s)
		return -EINVAL;
	*out = v;
	return 0;
}

int dnp_parse_u64_max(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v;
	int r = dnp_parse_u64(s, &v);

	if (r)
		return r;
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* The shift of a binary size suffix, or -1 for none. */
static int size_shift(char c)
{
	switch (c) {
	case 'k':
	case 'K':
		return 10;
	case 'm':
	case 'M':
		return 20;
	case 'g':
	case 'G':
		return 30;
	case 't':
	case 'T':
		return 40;
	default:
		return -1;
	}
}

int dnp_parse_size(const char *s, uint64_t *out)
{
	uint64_t v;
	int r, sh;

	if (!s)
		return -EINVAL;
	r = parse_number(&s, &v);
	if (r)
		return r;
	sh = size_shift(*s);
	if (sh > 0) {
		if (v > UINT64_MAX >> sh)
			return -ERANGE;
		v <<= sh;
		s++;
		if (*s == 'i')
			s++;
	}
	if (*s == 'B')
		s++;
	if (*s)
		return -EINVAL;
	*out = v;
	return 0;
}

int dnp_parse_sizes(const char *s, uint64_t *sizes, unsigned max)
{
	unsigned n = 0;

	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		char tok[32];
		int r;

		if (!len || len >= sizeof(tok) || n == max)
			return -EINVAL;
		memcpy(tok, s, len);
		tok[len] = '\0';
		r = dnp_parse_size(tok, &sizes[n]);
		if (r)
			return r;
		n++;
		if (!comma)
			return (int)n;
		s = comma + 1;
	}
}

struct duration_unit {
	const char *name;
	uint64_t ns;
};

static const struct duration_unit duration_units[] = {
	{ "ns", 1 },
	{ "us", 1000 },
	{ "ms", 1000000 },
	{ "s", 1000000000 },
	{ "min", 60000000000ull },
};

static bool duration_unit_known(uint64_t ns)
{
	for (size_t i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++)
		if (duration_units[i].ns == ns)
			return true;
	return false;
}

int dnp_parse_duration_ns(const char *s, uint64_t default_unit_ns, uint64_t *out_ns)
{
	uint64_t whole, frac = 0, frac_div = 1, unit = default_unit_ns;
	unsigned __int128 ns;
	int r;

	if (!s || !duration_unit_known(default_unit_ns))
		return -EINVAL;
	r = parse_digits(&s, 10, &whole);
	if (r)
		return r;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		/* Digits past the 18th cannot change a result in nanoseconds of
		 * any unit here (the largest is 6e10 ns): they are read and dropped. */
		for (; *s >= '0' && *s <= '9'; s++) {
			if (frac_div < 1000000000000000000ull) {
				frac = frac * 10 + (uint64_t)(*s - '0');
				frac_div *= 10;
			}
		}
	}
	if (*s) {
		size_t i;

		for (i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++)
			if (!strcmp(s, duration_units[i].name))
				break;
		if (i == sizeof(duration_units) / sizeof(duration_units[0]))
			return -EINVAL;
		unit = duration_units[i].ns;
	}
	ns = (unsigned __int128)whole * unit + (unsigned __int128)frac * unit / frac_div;
	if (ns > UINT64_MAX)
		return -ERANGE;
	*out_ns = (uint64_t)ns;
	return 0;
}

int dnp_parse_duration_ms(const char *s, uint64_t *out_ms)
{
	uint64_t ns;
	int r = dnp_parse_duration_ns(s, 1000000, &ns);

	if (r)
		return r;
	*out_ms = ns / 1000000 + (ns % 1000000 != 0);
	return 0;
}

int dnp_parse_ipv4_port(const char *s, struct sockaddr_in *out)
{
	const char *colon;
	char host[INET_ADDRSTRLEN];
	struct in_addr a;
	uint64_t port;
	int r;

	if (!s)
		return -EINVAL;
	colon = strrchr(s, ':');
	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	if (inet_pton(AF_INET, host, &a) != 1)
		return -EINVAL;
	colon++;
	r = parse_digits(&colon, 10, &port);
	if (r == -ERANGE)
		return -ERANGE;
	if (r || *colon)
		return -EINVAL;
	if (!port || port > 65535)
		return -ERANGE;
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_addr = a;
	out->sin_port = htons((uint16_t)port);
	return 0;
}
