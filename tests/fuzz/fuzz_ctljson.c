/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ctljson — dnpctl stats --json (dnp-core/dnpd/dnpctl_json.c) on any
 * text a daemon could send back: it must never crash, overrun or leak,
 * whatever the lines, tokens and bytes.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnpctl_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0'; /* the daemon's answer is a C string: an inner NUL ends it */
	if (!sink)
		sink = fopen("/dev/null", "w");
	if (sink)
		(void)dnpctl_stats_json(text, sink);
	free(text);
	return 0;
}
