/* SPDX-License-Identifier: MIT */
/*
 * The collective calls of libdnp for the test programs that link Presto
 * against a stand-in of libdnp (tests/test_presto.c, tests/fuzz/fuzz_libdnp.h):
 * the stand-ins have no daemon to run a collective, so every call answers
 * -EOPNOTSUPP, and Presto keeps to its host-based collectives. Include it
 * once, in the file that defines the rest of the stand-in.
 */
#ifndef DNP_TEST_LIBDNP_NOCOLL_H
#define DNP_TEST_LIBDNP_NOCOLL_H

#include <errno.h>

#include "dnp.h"

int dnp_coll_group_create(struct dnp *d, uint32_t id, const struct dnp_coll_member *members,
			  unsigned n, uint64_t cookie, unsigned flags)
{
	return -EOPNOTSUPP;
}

int dnp_coll_group_destroy(struct dnp *d, uint32_t id, uint64_t cookie, unsigned flags)
{
	return -ENOENT; /* no group was ever created */
}

int dnp_allreduce(struct dnp *d, uint32_t id, const void *src, void *dst, size_t count,
		  unsigned dtype, unsigned redop, uint64_t cookie, unsigned flags)
{
	return -EOPNOTSUPP;
}

int dnp_barrier(struct dnp *d, uint32_t id, uint64_t cookie, unsigned flags)
{
	return -EOPNOTSUPP;
}

int dnp_bcast(struct dnp *d, uint32_t id, void *buf, size_t len, unsigned root, uint64_t cookie,
	      unsigned flags)
{
	return -EOPNOTSUPP;
}

#endif
