/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "dnp_parse.h"
#include "regs.h"
#include "tool.h"

int lfm_tool_u32(const char *prog, const char *opt, const char *arg, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (dnp_parse_u64_max(arg, max, &v)) {
		fprintf(stderr, "%s: bad --%s '%s' (want 0..%u)\n", prog, opt, arg, max);
		return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

int lfm_tool_timer(const char *prog, uint32_t tw, uint32_t tr)
{
	int e = dnp_lfm_timer_check(tw, tr);

	if (e)
		fprintf(stderr, "%s: T_write %u ms, T_read %u ms refused: %s\n", prog, tw, tr,
			dnp_lfm_timer_strerror(e));
	return e ? -EINVAL : 0;
}

int lfm_tool_usage_exit(int c, void (*usage)(FILE *f))
{
	usage(c == 'h' ? stdout : stderr);
	return c == 'h' ? 0 : 2;
}
