/* SPDX-License-Identifier: MIT */
/*
 * Endpoint opening shared by the provider's test programs (contract: fi_side.h).
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "fi_side.h"

int fails;

int fi_side_open_ep(struct fi_side *s, struct fi_info *fi, enum fi_av_type avt, uint64_t cq_flags)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED, .size = 256 };
	struct fi_av_attr ava = { .type = avt };
	int r = fi_av_open(s->dom, &ava, &s->av, NULL);

	if (!r)
		r = fi_cq_open(s->dom, &cqa, &s->cq, NULL);
	if (!r)
		r = fi_endpoint(s->dom, fi, &s->ep, NULL);
	if (!r)
		r = fi_ep_bind(s->ep, &s->av->fid, 0);
	if (!r)
		r = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV | cq_flags);
	for (int i = 0; i < 2 && !r; i++)
		if (s->cntr[i])
			r = fi_ep_bind(s->ep, &s->cntr[i]->fid, s->cntr_flags[i]);
	if (!r)
		r = fi_enable(s->ep);
	return r;
}

int fi_side_open(struct fi_side *s, struct fi_info *fi, const char *sock, enum fi_av_type avt,
		 uint64_t cq_flags)
{
	struct fi_info *own = NULL;
	int r;

	if (sock) {
		setenv("DNP_SOCKET", sock, 1);
		if (fi->src_addr) {
			own = fi_dupinfo(fi);
			if (!own)
				return -FI_ENOMEM;
			free(own->src_addr);
			own->src_addr = NULL;
			own->src_addrlen = 0;
			fi = own;
		}
	}
	r = fi_fabric(fi->fabric_attr, &s->fab, NULL);
	if (!r)
		r = fi_domain(s->fab, fi, &s->dom, NULL);
	if (!r)
		r = fi_side_open_ep(s, fi, avt, cq_flags);
	fi_freeinfo(own);
	return r;
}

void fi_side_close(struct fi_side *s)
{
	if (s->ep)
		fi_close(&s->ep->fid);
	if (s->cq)
		fi_close(&s->cq->fid);
	for (int i = 0; i < 2; i++)
		if (s->cntr[i])
			fi_close(&s->cntr[i]->fid);
	if (s->av)
		fi_close(&s->av->fid);
	if (s->dom)
		fi_close(&s->dom->fid);
	if (s->fab)
		fi_close(&s->fab->fid);
	memset(s, 0, sizeof(*s));
}

void fi_side_fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

bool fi_side_same(const uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 8)))
			return false;
	return true;
}
