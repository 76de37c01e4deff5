/* SPDX-License-Identifier: MIT */
/*
 * app_cli — see app_cli.h.
 */
#include "app_cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <string.h>

#include "dnp_parse.h"
#include "dnp_version.h"

int app_cli_usage_error(const char *prog, app_usage_fn usage, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (usage)
		usage(stderr);
	return 2;
}

int app_cli_bad_value(const char *prog, app_usage_fn usage, const char *opt, const char *val)
{
	return app_cli_usage_error(prog, usage, "bad value '%s' for %s", val, opt);
}

int app_cli_getopt_error(const char *prog, app_usage_fn usage, int c, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";

	if (c == ':')
		return app_cli_usage_error(prog, usage, "option '%s' needs a value", arg);
	if (optopt && optopt != '?')
		return app_cli_usage_error(prog, usage, "unknown option '-%c'", optopt);
	return app_cli_usage_error(prog, usage, "unknown option '%s'", arg);
}

int app_cli_version(const char *prog)
{
	return dnp_version_print(prog);
}

int app_cli_other(const char *prog, app_usage_fn usage, int c, char **argv)
{
	if (c == 'h') {
		usage(stdout);
		return 0;
	}
	if (c == 'V')
		return app_cli_version(prog);
	return app_cli_getopt_error(prog, usage, c, argv);
}

int app_cli_sizes(const char *s, uint64_t *sizes, unsigned max)
{
	char buf[1024];
	size_t n = 0;

	/* empty elements are skipped, as the programs' strtok parsers always did */
	for (; s && *s; s++) {
		if (*s == ',' && (n == 0 || buf[n - 1] == ','))
			continue;
		if (n + 1 >= sizeof(buf))
			return -EINVAL;
		buf[n++] = *s;
	}
	if (n && buf[n - 1] == ',')
		n--;
	buf[n] = 0;
	return dnp_parse_sizes(buf, sizes, max);
}
