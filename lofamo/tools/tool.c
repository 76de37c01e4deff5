/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "dnp_parse.h"
#include "dnp_version.h"
#include "regs.h"
#include "svc.h"
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

int lfm_tool_key(const char *prog, const char *path, struct dnp_svc_key *key)
{
	char line[80] = "";
	struct stat st;
	FILE *f = fopen(path, "re");
	int e;

	if (!f) {
		e = -errno;
		fprintf(stderr, "%s: key file %s: %s\n", prog, path, strerror(errno));
		return e;
	}
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077))
		fprintf(stderr, "%s: warning: key file %s is readable by others\n", prog, path);
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	if (dnp_svc_key_parse(line, key)) {
		fprintf(stderr, "%s: key file %s: want 32 hex digits on its first line\n", prog,
			path);
		return -EINVAL;
	}
	return 0;
}

int lfm_tool_common_opt(const char *prog, int c, const char *arg, const struct lfm_tool_common *o,
			void (*usage)(FILE *f))
{
	switch (c) {
	case 'K':
		if (lfm_tool_key(prog, arg, o->key))
			return 2;
		*o->keyed = true;
		return -1;
	case 'g':
		if (dnp_log_level_parse(arg, o->log_level)) {
			fprintf(stderr, "%s: bad --log-level '%s' (error, warn, info, debug)\n",
				prog, arg);
			return 2;
		}
		return -1;
	case 'V':
		return dnp_version_print(prog);
	case 'P':
		if (!o->normal_priority)
			return lfm_tool_usage_exit(c, usage);
		*o->normal_priority = true;
		return -1;
	default:
		return lfm_tool_usage_exit(c, usage);
	}
}

void lfm_tool_priority(bool normal)
{
	struct sched_param sp = { .sched_priority = 1 };

	if (normal) {
		dnp_log(DNP_LOG_INFO, "normal priority (--normal-priority)");
		return;
	}
	if (!sched_setscheduler(0, SCHED_RR | SCHED_RESET_ON_FORK, &sp)) {
		dnp_log(DNP_LOG_INFO, "real-time priority (SCHED_RR 1)");
		return;
	}
	if (!setpriority(PRIO_PROCESS, 0, -10)) {
		dnp_log(DNP_LOG_INFO, "nice -10 (SCHED_RR refused: %s)", strerror(errno));
		return;
	}
	dnp_log(DNP_LOG_INFO, "normal priority (no right to raise it: %s)", strerror(errno));
}
