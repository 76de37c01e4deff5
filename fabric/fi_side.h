/* SPDX-License-Identifier: MIT */
/*
 * fi_side — what the provider's test programs (fabric/fi_dnp_check and
 * tests/conformance/fi_conform) share: one endpoint with its fabric, domain,
 * AV and CQ, opened and closed in one call, a failed-check counter and the
 * data pattern they send. Works with any libfabric provider; naming a
 * SoftDNP daemon socket puts the endpoint on that daemon's node.
 */
#ifndef FI_SIDE_H
#define FI_SIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

/* Failed checks so far (CHECK counts them; programs add their own). */
extern int fails;

/* A check: when c is false, prints where and why (printf arguments) and counts a failure. */
#define CHECK(c, ...)                                                                          \
	do {                                                                                   \
		if (!(c)) {                                                                    \
			fprintf(stderr, "check failed (%s:%d): %s: ", __FILE__, __LINE__, #c); \
			fprintf(stderr, __VA_ARGS__);                                          \
			fputc('\n', stderr);                                                   \
			fails++;                                                               \
		}                                                                              \
	} while (0)

struct fi_side {
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_ep *ep;
	struct fid_av *av;
	struct fid_cq *cq;
	fi_addr_t peer; /* the other side in this side's AV */
	/* counters (may be NULL) that fi_side_open_ep binds, with their flags, before enabling */
	struct fid_cntr *cntr[2];
	uint64_t cntr_flags[2];
};

/*
 * Opens s's fabric and domain for fi, then its endpoint (fi_side_open_ep).
 * sock: a SoftDNP daemon socket, set as DNP_SOCKET before the domain opens,
 * or NULL (the environment as it is). With sock the endpoint takes any
 * address of that daemon's node: fi's src_addr, which names the node fi was
 * asked on, is left out. Returns 0 or a negative FI_* errno; what was
 * opened before a failure stays in s for fi_side_close.
 */
int fi_side_open(struct fi_side *s, struct fi_info *fi, const char *sock, enum fi_av_type avt,
		 uint64_t cq_flags);

/*
 * In s->dom (already open): an AV of type avt, a CQ (FI_CQ_FORMAT_TAGGED, 256
 * entries) bound for FI_TRANSMIT | FI_RECV | cq_flags, the endpoint of fi
 * with s->cntr bound, enabled. Returns 0 or a negative FI_* errno.
 */
int fi_side_open_ep(struct fi_side *s, struct fi_info *fi, enum fi_av_type avt, uint64_t cq_flags);

/* Closes what of s is open (any part may be NULL, counters included) and clears s. */
void fi_side_close(struct fi_side *s);

/* Writes, or checks, the byte pattern of seed over n bytes. */
void fi_side_fill(uint8_t *b, size_t n, unsigned seed);
bool fi_side_same(const uint8_t *b, size_t n, unsigned seed);

#endif
