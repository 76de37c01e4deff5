/* SPDX-License-Identifier: MIT */
/*
 * presto_hcoll.h — Presto's host-based collectives (barrier, bcast, reduce,
 * allreduce, gather over its own point-to-point messages in the collective
 * context), a part of presto.c (included there, once, after the public
 * point-to-point calls), split out of it like presto_coll.h to keep each
 * file readable. Where the daemons' collectives can do a call
 * (presto_coll.h), they are used instead.
 */
#ifndef PRESTO_HCOLL_H
#define PRESTO_HCOLL_H

/* ---- collectives (context P_CTX_COLL: never matched by user receives) ---- */

enum {
	T_BARRIER = 1,
	T_BCAST,
	T_REDUCE,
	T_GATHER
};

static int p_sendrecv_wait(struct presto *p, struct presto_req *a, struct presto_req *b)
{
	int r1 = a ? presto_wait(p, &a, NULL) : 0;
	int r2 = b ? presto_wait(p, &b, NULL) : 0;

	return r1 ? r1 : r2;
}

#include "presto_coll.h" /* collectives run by the daemons */
int presto_barrier(struct presto *p)
{
	struct presto_req *s, *r;
	int k, rc;

	if (p->coll_ok)
		return p_coll_wait(p, dnp_barrier(p->d, P_COLL_GID, p_coll_cookie(p), 0));
	/* Dissemination: round k talks to rank +-2^k; log2(size) rounds. */
	for (k = 1; k < p->size; k <<= 1) {
		rc = p_irecv(p, NULL, 0, (p->rank - k + p->size) % p->size, T_BARRIER, P_CTX_COLL,
			     &r);
		if (rc < 0)
			return rc;
		rc = p_isend(p, NULL, 0, (p->rank + k) % p->size, T_BARRIER, P_CTX_COLL, &s);
		if (rc < 0)
			return rc;
		rc = p_sendrecv_wait(p, s, r);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int presto_bcast(struct presto *p, void *buf, size_t len, int root)
{
	int n = p->size, vr, mask, rc;
	struct presto_req *q;

	if (root < 0 || root >= n || (!buf && len))
		return -EINVAL;
	if (p->coll_ok && len <= P_COLL_MAX)
		return p_coll_wait(p, dnp_bcast(p->d, P_COLL_GID, buf, len, (unsigned)root,
						p_coll_cookie(p), 0));
	vr = (p->rank - root + n) % n;
	/* Binomial tree: receive from the parent, then send to the children. */
	for (mask = 1; mask < n; mask <<= 1)
		if (vr & mask) {
			rc = p_irecv(p, buf, len, (vr - mask + root) % n, T_BCAST, P_CTX_COLL, &q);
			if (rc == 0)
				rc = presto_wait(p, &q, NULL);
			if (rc < 0)
				return rc;
			break;
		}
	for (mask >>= 1; mask > 0; mask >>= 1) {
		if (vr + mask >= n)
			continue;
		rc = p_isend(p, buf, len, (vr + mask + root) % n, T_BCAST, P_CTX_COLL, &q);
		if (rc == 0)
			rc = presto_wait(p, &q, NULL);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static size_t p_type_size(enum presto_type t)
{
	switch (t) {
	case PRESTO_INT:
		return sizeof(int);
	case PRESTO_LONG:
		return sizeof(long);
	case PRESTO_DOUBLE:
		return sizeof(double);
	}
	return 0;
}

#define P_COMBINE(T)                                                            \
	do {                                                                    \
		T *x = acc;                                                     \
		const T *y = in;                                                \
		for (i = 0; i < count; i++)                                     \
			x[i] = op == PRESTO_SUM ? x[i] + y[i] :                 \
			       op == PRESTO_MIN ? (y[i] < x[i] ? y[i] : x[i]) : \
						  (y[i] > x[i] ? y[i] : x[i]);  \
	} while (0)

static void p_combine(void *acc, const void *in, size_t count, enum presto_type type,
		      enum presto_op op)
{
	size_t i;

	switch (type) {
	case PRESTO_INT:
		P_COMBINE(int);
		break;
	case PRESTO_LONG:
		P_COMBINE(long);
		break;
	case PRESTO_DOUBLE:
		P_COMBINE(double);
		break;
	}
}

int presto_reduce(struct presto *p, const void *sbuf, void *rbuf, size_t count,
		  enum presto_type type, enum presto_op op, int root)
{
	size_t es = p_type_size(type), bytes = count * es;
	int n = p->size, vr, mask, rc = 0;
	struct presto_req *q;
	void *acc, *tmp;

	if (!es || op > PRESTO_MAX || root < 0 || root >= n || (!sbuf && count) ||
	    (p->rank == root && !rbuf && count) || (count && bytes / count != es))
		return -EINVAL;
	acc = malloc(bytes ? bytes : 1);
	tmp = malloc(bytes ? bytes : 1);
	if (!acc || !tmp) {
		free(acc);
		free(tmp);
		return -ENOMEM;
	}
	if (bytes)
		memcpy(acc, sbuf, bytes);
	vr = (p->rank - root + n) % n;
	/* Binomial tree towards the root; children combine in a fixed order. */
	for (mask = 1; mask < n; mask <<= 1) {
		if (vr & mask) {
			rc = p_isend(p, acc, bytes, (vr - mask + root) % n, T_REDUCE, P_CTX_COLL,
				     &q);
			if (rc == 0)
				rc = presto_wait(p, &q, NULL);
			break;
		}
		if (vr + mask < n) {
			rc = p_irecv(p, tmp, bytes, (vr + mask + root) % n, T_REDUCE, P_CTX_COLL,
				     &q);
			if (rc == 0)
				rc = presto_wait(p, &q, NULL);
			if (rc < 0)
				break;
			p_combine(acc, tmp, count, type, op);
		}
	}
	if (rc == 0 && vr == 0 && bytes)
		memcpy(rbuf, acc, bytes);
	free(acc);
	free(tmp);
	return rc;
}

int presto_allreduce(struct presto *p, const void *sbuf, void *rbuf, size_t count,
		     enum presto_type type, enum presto_op op)
{
	int rc;

	if (!rbuf && count)
		return -EINVAL;
	if (p_coll_allreduce(p, sbuf, rbuf, count, type, op, &rc))
		return rc;
	rc = presto_reduce(p, sbuf, rbuf, count, type, op, 0);
	if (rc < 0)
		return rc;
	return presto_bcast(p, rbuf, count * p_type_size(type), 0);
}

int presto_gather(struct presto *p, const void *sbuf, size_t len, void *rbuf, int root)
{
	struct presto_req **qs;
	int i, rc = 0, r;

	if (root < 0 || root >= p->size || (!sbuf && len) || (p->rank == root && !rbuf && len))
		return -EINVAL;
	if (p->rank != root) {
		struct presto_req *q;

		rc = p_isend(p, sbuf, len, root, T_GATHER, P_CTX_COLL, &q);
		return rc < 0 ? rc : presto_wait(p, &q, NULL);
	}
	qs = calloc((size_t)p->size, sizeof(*qs));
	if (!qs)
		return -ENOMEM;
	for (i = 0; i < p->size && rc == 0; i++)
		if (i != root)
			rc = p_irecv(p, (uint8_t *)rbuf + (size_t)i * len, len, i, T_GATHER,
				     P_CTX_COLL, &qs[i]);
	if (len)
		memmove((uint8_t *)rbuf + (size_t)root * len, sbuf, len);
	for (i = 0; i < p->size; i++)
		if (qs[i]) {
			r = presto_wait(p, &qs[i], NULL);
			if (r < 0 && rc == 0)
				rc = r;
		}
	free(qs);
	return rc;
}

#endif
