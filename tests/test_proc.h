/* SPDX-License-Identifier: MIT */
/*
 * test_proc.h — the unit tests' view of a task's scheduler state, for tests
 * that must see a thread or a process asleep in the kernel before they wake
 * it (a handshake with the kernel, not a sleep).
 */
#ifndef DNP_TEST_PROC_H
#define DNP_TEST_PROC_H

#include <stdbool.h>
#include <string.h>

#include "dnp_file.h"

/*
 * True when the task whose stat file is stat_path (/proc/PID/stat,
 * /proc/self/task/TID/stat) is in an interruptible sleep ('S'), false also
 * when the file cannot be read.
 */
static inline bool test_proc_sleeping(const char *stat_path)
{
	char buf[512], *p;

	if (dnp_read_small(stat_path, buf, sizeof(buf)) < 0)
		return false;
	p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
	return p && p[1] == ' ' && p[2] == 'S';
}

#endif /* DNP_TEST_PROC_H */
