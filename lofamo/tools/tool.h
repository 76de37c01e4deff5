/* SPDX-License-Identifier: MIT */
/*
 * tool.h — what the LO|FA|MO processes (dnp-hfm, dnp-supervisor,
 * dnp-lab-lofamo) share on their command lines: numbers through
 * common/dnp_parse.h, the timer pair checked against the register rule
 * (T_write < T_read, lofamo_abi.h), and the end of every option switch
 * (--help to standard output with status 0, anything unknown to standard
 * error with status 2). Each prints why it refused, prefixed with the
 * program's name.
 */
#ifndef LOFAMO_TOOL_H
#define LOFAMO_TOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dnp_log.h"

/* --opt's value as a number in 0..max. 0, or -EINVAL after printing why. */
int lfm_tool_u32(const char *prog, const char *opt, const char *arg, uint32_t max, uint32_t *out);
/* T_write and T_read (ms) as the timer register takes them. 0, or -EINVAL after printing why. */
int lfm_tool_timer(const char *prog, uint32_t tw, uint32_t tr);
struct dnp_svc_key;
/*
 * The cluster key from a file (32 hex digits on its first line; the file
 * should be readable by its owner only: a warning otherwise). 0, or
 * -EINVAL/-errno after printing why.
 */
int lfm_tool_key(const char *prog, const char *path, struct dnp_svc_key *key);
/*
 * The default branch of an option switch: c is 'h' (--help: usage on
 * standard output, returns 0) or anything else (usage on standard error,
 * returns 2). The caller exits with the result.
 */
int lfm_tool_usage_exit(int c, void (*usage)(FILE *f));

/* What the options every LO|FA|MO process takes set (lfm_tool_common_opt). */
struct lfm_tool_common {
	struct dnp_svc_key *key; /* --key-file */
	bool *keyed;
	enum dnp_log_level *log_level; /* --log-level */
	bool *normal_priority;         /* --normal-priority (NULL: not an option of this tool) */
};
/*
 * The options every LO|FA|MO process takes, by their getopt codes: 'K'
 * --key-file, 'g' --log-level, 'V' --version, 'P' --normal-priority (where
 * normal_priority is set); anything else is the default
 * branch (lfm_tool_usage_exit). Returns -1 when the option was taken and
 * parsing goes on, else the exit status (0: --help or --version, 2: a usage
 * error, said).
 */
int lfm_tool_common_opt(const char *prog, int c, const char *arg, const struct lfm_tool_common *o,
			void (*usage)(FILE *f));

/*
 * The scheduling of a fault manager (dnp-hfm, dnp-supervisor), called once
 * after the options: unless normal (--normal-priority), SCHED_RR at the
 * lowest real-time priority, else nice -10 when that is refused, else the
 * normal priority; logged at info. These processes sleep between short
 * duties, so a higher priority costs the others nothing, and it keeps their
 * watchdog duties on time beside CPU-bound processes (docs/lofamo.md, "A
 * node under CPU pressure"), as heartbeat daemons such as corosync do. A
 * command they start (--on-fault) runs at the normal priority
 * (SCHED_RESET_ON_FORK).
 */
void lfm_tool_priority(bool normal);

#endif
