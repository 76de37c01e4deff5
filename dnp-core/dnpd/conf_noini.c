/* SPDX-License-Identifier: MIT */
/* conf_noini — built when inih is missing: --config is refused. */
#include <errno.h>

#include "dnpd.h"

int dnpd_conf_load(struct dnpd_conf *c, const char *path)
{
	fprintf(stderr, "dnpd: --config %s: built without inih (libinih-dev)\n", path);
	return -ENOTSUP;
}
