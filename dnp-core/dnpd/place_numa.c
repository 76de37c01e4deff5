/* SPDX-License-Identifier: MIT */
/* place_numa — pin to a CPU and prefer the memory of its NUMA node (libnuma). */
#include <errno.h>
#include <numa.h>
#include <sched.h>

#include "dnpd.h"

int dnpd_place(int cpu)
{
	cpu_set_t set;
	int node;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;
	if (numa_available() < 0)
		return 0; /* no NUMA support in this kernel: nothing to bind */
	node = numa_node_of_cpu(cpu);
	if (node >= 0)
		numa_set_preferred(node);
	return 0;
}
