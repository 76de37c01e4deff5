/* SPDX-License-Identifier: MIT */
/* place — pin to a CPU (built without libnuma: no memory binding). */
#include <errno.h>
#include <sched.h>

#include "dnpd.h"

int dnpd_place(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}
