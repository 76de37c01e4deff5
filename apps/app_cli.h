/* SPDX-License-Identifier: MIT */
/*
 * app_cli — the command-line conventions every SoftDNP program of apps/
 * follows (dnp-run, udp_pingpong, dnp_pingpong, dnp_bw, dnp_alltoall,
 * dnp_check): --help prints the usage on stdout and exits 0, --version
 * prints "PROG (SoftDNP) VERSION" (dnp_version.h) and exits 0, a usage error prints one
 * line naming the bad option or value, then the usage, on stderr, and exits
 * 2. Needs nothing but libc (dnp-run and udp_pingpong do not link libdnp).
 *
 * Callers run getopt_long with a short-option string that starts with ':'
 * (so a missing value is told apart from an unknown option) and hand every
 * ':' and '?' to app_cli_getopt_error().
 */
#ifndef DNP_APP_CLI_H
#define DNP_APP_CLI_H

#include <stdint.h>
#include <stdio.h>

/* Prints the usage text to f. */
typedef void (*app_usage_fn)(FILE *f);

/* Prints "PROG: MESSAGE" and the usage on stderr. Returns 2 (the exit status). */
int app_cli_usage_error(const char *prog, app_usage_fn usage, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "bad value 'VAL' for OPT": app_cli_usage_error() for one option. Returns 2. */
int app_cli_bad_value(const char *prog, app_usage_fn usage, const char *opt, const char *val);

/*
 * getopt_long returned c (':' or '?'): names the option that has no value or
 * that is unknown, from argv and optind/optopt. Returns 2.
 */
int app_cli_getopt_error(const char *prog, app_usage_fn usage, int c, char **argv);

/*
 * Whatever getopt_long returned that is not an option of the program: 'h'
 * (--help: usage on stdout), 'V' (--version), ':' or '?' (a usage error).
 * Returns the exit status: 0 or 2.
 */
int app_cli_other(const char *prog, app_usage_fn usage, int c, char **argv);

/*
 * A size list ("8,64,4K,1M": dnp_parse_sizes, K/M/G/T suffixes, overflow
 * refused); empty elements ("1,,2," ) are skipped. Returns the count,
 * -EINVAL or -ERANGE.
 */
int app_cli_sizes(const char *s, uint64_t *sizes, unsigned max);

/* Prints "PROG (SoftDNP) VERSION" on stdout (dnp_version_print). Returns 0 (the exit status). */
int app_cli_version(const char *prog);

#endif
