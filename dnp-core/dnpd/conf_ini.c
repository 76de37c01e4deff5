/* SPDX-License-Identifier: MIT */
/* conf_ini — the topology file, parsed with inih (built when the inih dependency is found). */
#include <errno.h>
#include <ini.h>

#include "dnpd.h"

/* Keys may sit at the top or in any section ([node], [links], ...). */
static int dnpd_ini_handler(void *user, const char *section, const char *name, const char *value)
{
	int r = dnpd_conf_set(user, name, value);

	if (r == -ENOENT)
		fprintf(stderr, "dnpd: config: unknown key '%s' in [%s]\n", name, section);
	else if (r)
		fprintf(stderr, "dnpd: config: bad value for '%s': '%s'\n", name, value);
	return r == 0;
}

int dnpd_conf_load(struct dnpd_conf *c, const char *path)
{
	int r = ini_parse(path, dnpd_ini_handler, c);

	if (r < 0) {
		fprintf(stderr, "dnpd: cannot read config file %s\n", path);
		return -ENOENT;
	}
	if (r > 0) {
		fprintf(stderr, "dnpd: %s:%d: invalid line\n", path, r);
		return -EINVAL;
	}
	return 0;
}
