/* SPDX-License-Identifier: MIT */
/*
 * dnp_file.h — reading the small files through which the kernel tells a
 * value (sysfs attributes, /proc/PID/stat).
 *
 * Such a file is produced whole by the kernel on each read, so one read(2)
 * from offset 0 gets a consistent value. The caller owns the buffer; nothing
 * is allocated and no state is kept: safe from any thread.
 */
#ifndef DNP_FILE_H
#define DNP_FILE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * dnp_read_small() - read the file at path with one read(2) into buf, at
 * most size - 1 bytes, and end them with a NUL (a longer file is cut).
 * Returns the number of bytes read (at least 1), or -EINVAL (size 0),
 * -ENODATA (an empty file), or open(2)'s or read(2)'s negative errno
 * (-ENOENT where the file does not exist). buf is a C string on success only.
 */
ssize_t dnp_read_small(const char *path, char *buf, size_t size);

#endif /* DNP_FILE_H */
