/* SPDX-License-Identifier: MIT */
/*
 * dnp_version — see dnp_version.h.
 */
#include "dnp_version.h"

#include <stdio.h>

#include "dnp_version_gen.h"

const char *dnp_version(void)
{
	return DNP_VERSION_FULL;
}

int dnp_version_print(const char *prog)
{
	printf("%s (SoftDNP) %s\n", prog, DNP_VERSION_FULL);
	return 0;
}
