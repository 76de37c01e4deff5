// SPDX-License-Identifier: MIT
/*
 * Stand-in for tests/lab/efficiency.c while that file does not exist: the
 * experiment is reported as not built.
 */
#include <errno.h>
#include <stdio.h>

#include "lab.h"

int dnp_lab_efficiency_main(int argc, char **argv)
{
	fprintf(stderr, "dnp-lab: the efficiency experiment is not built (no efficiency.c)\n");
	return 2;
}

int dnp_lab_efficiency_run(int rule, unsigned fifo_x, double *measured, double *model)
{
	return -ENOSYS;
}
