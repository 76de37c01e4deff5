/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for dnp_impair_parse: impairment specs come from the
 * command line, the daemon's node-<id>.impair file (written by dnpctl, or by
 * anyone who can write the run directory) and dnp-run. Any bytes must be
 * refused or give a configuration inside the documented ranges, and what is
 * accepted must survive dnp_impair_format and a second parse unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "impair.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dnp_impair_conf c, again;
	char buf[512];
	char *s;

	if (size > 8192)
		return 0;
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	if (dnp_impair_parse(s, &c) == 0) {
		if (c.loss > DNP_IMPAIR_PPM || c.corrupt > DNP_IMPAIR_PPM ||
		    c.dup > DNP_IMPAIR_PPM || c.reorder > DNP_IMPAIR_PPM ||
		    c.delay_ns > 1000000000ull || !c.dirs || (c.dirs & ~0x3fu))
			abort();
		dnp_impair_format(&c, buf, sizeof(buf));
		if (dnp_impair_active(&c)) {
			if (dnp_impair_parse(buf, &again) != 0 || memcmp(&c, &again, sizeof(c)))
				abort();
		} else if (strcmp(buf, "off")) {
			abort();
		}
	}
	free(s);
	return 0;
}
