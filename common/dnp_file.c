/* SPDX-License-Identifier: MIT */
/*
 * dnp_file.c — small kernel-made files read in one go (dnp_file.h states the
 * contract).
 */
#include "dnp_file.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

ssize_t dnp_read_small(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd, e;

	if (size == 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	e = errno;
	close(fd);
	if (n < 0)
		return -e;
	if (n == 0)
		return -ENODATA;
	buf[n] = 0;
	return n;
}
