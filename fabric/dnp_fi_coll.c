/* SPDX-License-Identifier: MIT */
/*
 * FI_COLLECTIVE of the provider "dnp" (contract: dnp_fi_priv.h): the
 * collectives the daemons run (docs/api.md, "Collectives") behind
 * libfabric's collective API.
 *   - An AV set is a list of AV addresses; the group's ranks are its members
 *     sorted by (x, y, z, port), whatever order each member listed them in
 *     (libfabric names a broadcast's root by address, never by rank).
 *   - fi_join_collective makes the set a daemon group: its id is a hash of
 *     the sorted member list and of how often this endpoint joined that
 *     same set before, so every member computes the same id without
 *     talking, and the daemons see the same list in the same order; the
 *     group's JOIN command ends in FI_JOIN_COMPLETE (or an error entry) on
 *     the endpoint's EQ.
 *   - fi_barrier, fi_broadcast and fi_allreduce are one daemon command each
 *     and complete in one CQ entry (FI_COLLECTIVE) or one CQ error entry.
 *     The daemon runs one collective of a group at a time: later ones wait
 *     here, in order, and are issued as the one before ends.
 * What the daemons do not run (other collectives, operations, datatypes,
 * more than DNP_COLL_MAX_BYTES) is refused at the call: -FI_ENOSYS for a
 * collective, -FI_EOPNOTSUPP for an operation, datatype or size;
 * fi_query_collective says exactly the same.
 */
#include <stdlib.h>
#include <string.h>

#include "dnp_fi_priv.h"

/* ------------------------------------------------------------ datatypes */

/* Bytes of an element of dt (0: not one the provider moves). */
static size_t dfi_dt_size(enum fi_datatype dt)
{
	switch (dt) {
	case FI_INT8:
	case FI_UINT8:
		return 1;
	case FI_INT16:
	case FI_UINT16:
		return 2;
	case FI_INT32:
	case FI_UINT32:
	case FI_FLOAT:
		return 4;
	case FI_INT64:
	case FI_UINT64:
	case FI_DOUBLE:
	case FI_FLOAT_COMPLEX:
		return 8;
	case FI_DOUBLE_COMPLEX:
		return 16;
	default:
		return 0;
	}
}

/* The daemon's type for an allreduce on dt (0: none). */
static unsigned dfi_dt_dnp(enum fi_datatype dt)
{
	switch (dt) {
	case FI_INT32:
		return DNP_TYPE_INT32;
	case FI_INT64:
		return DNP_TYPE_INT64;
	case FI_FLOAT:
		return DNP_TYPE_FLOAT;
	case FI_DOUBLE:
		return DNP_TYPE_DOUBLE;
	default:
		return 0;
	}
}

/* The daemon's reduction for op on dnp type t (0: none; bitwise ones on integers only). */
static unsigned dfi_op_dnp(enum fi_op op, unsigned t)
{
	bool integer = t == DNP_TYPE_INT32 || t == DNP_TYPE_INT64;

	if (!t)
		return 0;
	switch (op) {
	case FI_SUM:
		return DNP_RED_SUM;
	case FI_MIN:
		return DNP_RED_MIN;
	case FI_MAX:
		return DNP_RED_MAX;
	case FI_BAND:
		return integer ? DNP_RED_BAND : 0;
	case FI_BOR:
		return integer ? DNP_RED_BOR : 0;
	default:
		return 0;
	}
}

int dfi_query_collective(struct fid_domain *dom, enum fi_collective_op coll,
			 struct fi_collective_attr *attr, uint64_t flags)
{
	size_t sz = 0;

	if (!attr)
		return -FI_EINVAL;
	if (flags & FI_SCATTER) /* reduce-scatter */
		return -FI_EOPNOTSUPP;
	switch (coll) {
	case FI_BARRIER:
		break;
	case FI_BROADCAST:
		sz = dfi_dt_size(attr->datatype);
		if (!sz)
			return -FI_EOPNOTSUPP;
		break;
	case FI_ALLREDUCE:
		if (!dfi_op_dnp(attr->op, dfi_dt_dnp(attr->datatype)))
			return -FI_EOPNOTSUPP;
		sz = dfi_dt_size(attr->datatype);
		break;
	default:
		return -FI_EOPNOTSUPP;
	}
	attr->datatype_attr.size = sz;
	attr->datatype_attr.count = sz ? DNP_COLL_MAX_BYTES / sz : 0;
	attr->max_members = DNP_COLL_MAX_MEMBERS;
	attr->mode = 0;
	return 0;
}

/* ------------------------------------------------------------ AV sets */

static int dfi_set_has(const struct dfi_av_set *s, fi_addr_t a)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->addr[i] == a)
			return (int)i;
	return -1;
}

static int dfi_set_add(struct dfi_av_set *s, fi_addr_t a)
{
	if (a >= s->av->n || !s->av->used[a])
		return -FI_EINVAL;
	if (dfi_set_has(s, a) >= 0)
		return -FI_EINVAL;
	if (s->n == DNP_COLL_MAX_MEMBERS)
		return -FI_ENOSPC;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		fi_addr_t *t = realloc(s->addr, cap * sizeof(*t));

		if (!t)
			return -FI_ENOMEM;
		s->addr = t;
		s->cap = cap;
	}
	s->addr[s->n++] = a;
	return 0;
}

static void dfi_set_del(struct dfi_av_set *s, size_t i)
{
	memmove(&s->addr[i], &s->addr[i + 1], (s->n - i - 1) * sizeof(*s->addr));
	s->n--;
}

static int dfi_set_insert(struct fid_av_set *fs, fi_addr_t a)
{
	return (int)LOCKED(dfi_set_add((struct dfi_av_set *)fs, a));
}

static int dfi_set_remove_locked(struct dfi_av_set *s, fi_addr_t a)
{
	int i = dfi_set_has(s, a);

	if (i < 0)
		return -FI_EINVAL;
	dfi_set_del(s, (size_t)i);
	return 0;
}

static int dfi_set_remove(struct fid_av_set *fs, fi_addr_t a)
{
	return (int)LOCKED(dfi_set_remove_locked((struct dfi_av_set *)fs, a));
}

/* dst = dst with src's addresses appended (union), or only those in src (intersect), or not. */
static int dfi_set_combine(struct fid_av_set *fd, const struct fid_av_set *fsrc, int how)
{
	struct dfi_av_set *d = (struct dfi_av_set *)fd;
	const struct dfi_av_set *s = (const struct dfi_av_set *)fsrc;
	size_t i;
	int r = 0;

	if (d->av != s->av)
		return -FI_EINVAL;
	pthread_mutex_lock(&dfi_lock);
	if (how == 0) {
		for (i = 0; i < s->n && !r; i++)
			if (dfi_set_has(d, s->addr[i]) < 0)
				r = dfi_set_add(d, s->addr[i]);
	} else {
		for (i = d->n; i-- > 0;)
			if ((dfi_set_has(s, d->addr[i]) >= 0) != (how == 1))
				dfi_set_del(d, i);
	}
	pthread_mutex_unlock(&dfi_lock);
	return r;
}

static int dfi_set_union(struct fid_av_set *d, const struct fid_av_set *s)
{
	return dfi_set_combine(d, s, 0);
}

static int dfi_set_intersect(struct fid_av_set *d, const struct fid_av_set *s)
{
	return dfi_set_combine(d, s, 1);
}

static int dfi_set_diff(struct fid_av_set *d, const struct fid_av_set *s)
{
	return dfi_set_combine(d, s, 2);
}

/* The set's address (for fi_join_collective): the set itself. */
static int dfi_set_addr(struct fid_av_set *fs, fi_addr_t *coll_addr)
{
	*coll_addr = (fi_addr_t)(uintptr_t)fs;
	return 0;
}

static int dfi_set_close(struct fid *fid)
{
	struct dfi_av_set *s = (struct dfi_av_set *)fid;

	free(s->addr);
	free(s);
	return 0;
}

static struct fi_ops dfi_set_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dfi_set_close,
	.bind = NOSYS(bind),
	.control = NOSYS(control),
	.ops_open = NOSYS(ops_open),
};

static struct fi_ops_av_set dfi_set_ops = {
	.size = sizeof(struct fi_ops_av_set),
	.set_union = dfi_set_union,
	.intersect = dfi_set_intersect,
	.diff = dfi_set_diff,
	.insert = dfi_set_insert,
	.remove = dfi_set_remove,
	.addr = dfi_set_addr,
};

/* The set's first members: the whole AV (FI_UNIVERSE), or start..end by stride, count at most. */
static int dfi_set_fill(struct dfi_av_set *s, const struct fi_av_set_attr *attr)
{
	fi_addr_t a;
	int r = 0;

	if (attr->flags & FI_UNIVERSE) {
		for (a = 0; a < s->av->n && !r; a++)
			if (s->av->used[a])
				r = dfi_set_add(s, a);
		return r;
	}
	if (!attr->count || attr->start_addr == FI_ADDR_NOTAVAIL)
		return 0;
	if (!attr->stride || attr->end_addr < attr->start_addr)
		return -FI_EINVAL;
	for (a = attr->start_addr; a <= attr->end_addr && s->n < attr->count && !r;
	     a += attr->stride)
		r = dfi_set_add(s, a);
	return r;
}

int dfi_av_set(struct fid_av *fav, struct fi_av_set_attr *attr, struct fid_av_set **out,
	       void *context)
{
	struct dfi_av_set *s;
	int r;

	if (!attr || (attr->flags & ~FI_UNIVERSE) || attr->comm_key_size)
		return -FI_EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -FI_ENOMEM;
	s->av = (struct dfi_av *)fav;
	pthread_mutex_lock(&dfi_lock);
	r = dfi_set_fill(s, attr);
	pthread_mutex_unlock(&dfi_lock);
	if (r < 0) {
		free(s->addr);
		free(s);
		return r;
	}
	s->set.fid.fclass = FI_CLASS_AV_SET;
	s->set.fid.context = context;
	s->set.fid.ops = &dfi_set_fi_ops;
	s->set.ops = &dfi_set_ops;
	*out = &s->set;
	return 0;
}

/* ------------------------------------------------------------ groups */

static uint64_t dfi_coll_cookie(const struct dfi_req *q)
{
	return dnp_reqtab_cookie(C_COLL, q->idx, q->gen);
}

/* Issues q's command; 0, -EAGAIN (the daemon's queue is full) or another -errno. */
static int dfi_coll_issue(struct dfi_ep *ep, struct dfi_req *q)
{
	struct dnp *d = ep->dom->d;
	struct dfi_mc *mc = q->mc;
	unsigned fl = DNP_NONBLOCK;

	switch (q->coll) {
	case DNP_OP_BARRIER:
		return dnp_barrier(d, mc->id, dfi_coll_cookie(q), fl);
	case DNP_OP_BCAST:
		return dnp_bcast(d, mc->id, q->buf, q->len, q->root, dfi_coll_cookie(q), fl);
	default:
		return dnp_allreduce(d, mc->id, q->csrc, q->buf, q->cap, q->dtype, q->redop,
				     dfi_coll_cookie(q), fl);
	}
}

/* Takes q off its group (running or waiting). */
static void dfi_coll_unlink(struct dfi_mc *mc, struct dfi_req *q)
{
	struct dfi_req **p;

	if (mc->run == q) {
		mc->run = NULL;
		return;
	}
	for (p = &mc->q_head; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			break;
		}
	mc->q_tail = NULL;
	for (q = mc->q_head; q; q = q->next)
		mc->q_tail = q;
}

/* Errno of the daemon (negative) to a positive FI_* errno. */
static int dfi_fi_err(int st)
{
	return st < 0 ? -st : FI_EIO;
}

void dfi_coll_fail(struct dfi_ep *ep, struct dfi_req *q, int err)
{
	struct dfi_mc *mc = q->mc;

	if (q->kind == R_JOIN) {
		if (mc) {
			mc->state = -err;
			if (ep->eq)
				dfi_eq_error(ep->eq, &mc->mc.fid, q->context, err);
		}
	} else {
		if (mc)
			dfi_coll_unlink(mc, q);
		dfi_cq_error(ep->tx_cq, q->context, FI_COLLECTIVE, 0, q->buf, 0, 0, err);
	}
	dfi_req_free(ep, q);
}

/* Issues the head of mc's queue when nothing of mc runs (-EAGAIN: later). */
static void dfi_coll_kick(struct dfi_ep *ep, struct dfi_mc *mc)
{
	while (!mc->run && mc->q_head) {
		struct dfi_req *q = mc->q_head;
		int r = dfi_coll_issue(ep, q);

		if (r == -EAGAIN)
			return;
		mc->q_head = q->next;
		if (!mc->q_head)
			mc->q_tail = NULL;
		q->next = NULL;
		if (r < 0) {
			q->mc = NULL;
			dfi_coll_fail(ep, q, dfi_fi_err(r));
			continue;
		}
		mc->run = q;
	}
}

void dfi_coll_progress(struct dfi_ep *ep)
{
	struct dfi_mc *mc;

	for (mc = ep->mcs; mc; mc = mc->next)
		if (!mc->run && mc->q_head)
			dfi_coll_kick(ep, mc);
}

void dfi_coll_event(struct dfi_ep *ep, struct dfi_req *q, const struct dnp_event *ev)
{
	struct dfi_mc *mc = q->mc;
	bool ok = ev->type == DNP_EV_TX_DONE;

	if (ev->type != DNP_EV_TX_DONE && ev->type != DNP_EV_ERROR)
		return;
	if (!ok) {
		dfi_coll_fail(ep, q, dfi_fi_err(ev->status));
	} else if (q->kind == R_JOIN) {
		if (mc) {
			mc->state = 1;
			dfi_eq_write(ep->eq, FI_JOIN_COMPLETE, &mc->mc.fid, q->context);
		}
		dfi_req_free(ep, q);
	} else {
		if (mc)
			dfi_coll_unlink(mc, q);
		dfi_cq_write(ep->tx_cq, q->context, FI_COLLECTIVE, q->len,
			     q->coll == DNP_OP_BARRIER ? NULL : q->buf, 0, FI_ADDR_NOTAVAIL);
		dfi_req_free(ep, q);
	}
	if (mc)
		dfi_coll_kick(ep, mc);
}

/* The group a collective names (coll_addr from fi_mc_addr) if joined; NULL otherwise. */
static struct dfi_mc *dfi_mc_of(struct dfi_ep *ep, fi_addr_t coll_addr)
{
	struct dfi_mc *mc;

	for (mc = ep->mcs; mc; mc = mc->next)
		if ((fi_addr_t)(uintptr_t)mc == coll_addr)
			return mc->state == 1 ? mc : NULL;
	return NULL;
}

/* Leaves the daemon's group (no event on success) and drops what waits (FI_ECANCELED). */
static void dfi_mc_leave(struct dfi_ep *ep, struct dfi_mc *mc)
{
	struct dfi_mc **p;

	while (mc->q_head)
		dfi_coll_fail(ep, mc->q_head, FI_ECANCELED);
	if (mc->run)
		mc->run->mc = NULL; /* its event still comes; it completes without the group */
	mc->run = NULL;
	if ((mc->state == 0 || mc->state == 1) && !ep->fatal)
		dnp_coll_group_destroy(ep->dom->d, mc->id, dnp_reqtab_cookie(C_COLL, 0, 0),
				       DNP_NO_EVENT);
	for (p = &ep->mcs; *p; p = &(*p)->next)
		if (*p == mc) {
			*p = mc->next;
			break;
		}
	/* a join still pending completes (the request holds mc): it must not write to it */
	{
		uint32_t i;

		for (i = 0; i < ep->reqs.n; i++) {
			struct dfi_req *q = ep->reqs.ent[i].obj;

			if (q && q->kind == R_JOIN && q->mc == mc)
				q->mc = NULL;
		}
	}
	mc->ep = NULL;
}

static int dfi_mc_close(struct fid *fid)
{
	struct dfi_mc *mc = container_of(fid, struct dfi_mc, mc.fid);

	pthread_mutex_lock(&dfi_lock);
	if (mc->ep)
		dfi_mc_leave(mc->ep, mc);
	pthread_mutex_unlock(&dfi_lock);
	free(mc->m);
	free(mc);
	return 0;
}

void dfi_coll_close_ep(struct dfi_ep *ep)
{
	while (ep->mcs)
		dfi_mc_leave(ep, ep->mcs);
	free(ep->join_h);
	free(ep->join_n);
	ep->join_h = NULL;
	ep->join_n = NULL;
	ep->njoin = 0;
}

static struct fi_ops dfi_mc_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dfi_mc_close,
	.bind = NOSYS(bind),
	.control = NOSYS(control),
	.ops_open = NOSYS(ops_open),
};

/* FNV-1a over the members. */
static uint32_t dfi_members_hash(const struct dnp_coll_member *m, unsigned n)
{
	const uint8_t *b = (const uint8_t *)m;
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < (size_t)n * sizeof(*m); i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

/*
 * The group id of the next join of list m by this endpoint: the list's hash
 * mixed with how often it was joined before (never 0). -FI_ENOMEM.
 */
static int dfi_group_id(struct dfi_ep *ep, const struct dnp_coll_member *m, unsigned n,
			uint32_t *id)
{
	uint32_t h = dfi_members_hash(m, n), v;
	unsigned i;

	for (i = 0; i < ep->njoin && ep->join_h[i] != h; i++)
		;
	if (i == ep->njoin) {
		uint32_t *nh = realloc(ep->join_h, (i + 1) * sizeof(*nh));
		unsigned *nn;

		if (!nh)
			return -FI_ENOMEM;
		ep->join_h = nh;
		nn = realloc(ep->join_n, (i + 1) * sizeof(*nn));
		if (!nn)
			return -FI_ENOMEM;
		ep->join_n = nn;
		ep->join_h[i] = h;
		ep->join_n[i] = 0;
		ep->njoin++;
	}
	v = (h ^ (ep->join_n[i] * 0x9e3779b9u)) * 0x85ebca6bu;
	v ^= v >> 13;
	*id = v ? v : 1;
	ep->join_n[i]++;
	return 0;
}

static uint32_t dfi_member_key(const struct dnp_coll_member *m)
{
	return (uint32_t)m->x << 24 | (uint32_t)m->y << 16 | (uint32_t)m->z << 8 | m->port;
}

static int dfi_member_cmp(const void *a, const void *b)
{
	uint32_t x = dfi_member_key(a), y = dfi_member_key(b);

	return x < y ? -1 : x > y;
}

/* The members of set s, sorted (the ranks: see above), and this endpoint's rank among them. */
static int dfi_members(struct dfi_ep *ep, const struct dfi_av_set *s, struct dnp_coll_member **out,
		       unsigned *rank)
{
	struct dfi_domain *dom = ep->dom;
	struct dnp_coll_member *m;
	size_t i;

	if (!s->n || s->av != ep->av)
		return -FI_EINVAL;
	m = calloc(s->n, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	*rank = ~0u;
	for (i = 0; i < s->n; i++) {
		const struct dfi_addr *a;

		if (s->addr[i] >= s->av->n || !s->av->used[s->addr[i]]) {
			free(m);
			return -FI_EINVAL; /* removed from the AV since */
		}
		a = &s->av->tab[s->addr[i]];
		m[i] = (struct dnp_coll_member){ a->x, a->y, a->z, a->port };
	}
	qsort(m, s->n, sizeof(*m), dfi_member_cmp);
	for (i = 0; i < s->n; i++)
		if (m[i].x == dom->self.x && m[i].y == dom->self.y && m[i].z == dom->self.z &&
		    m[i].port == dom->port)
			*rank = (unsigned)i;
	if (*rank == ~0u) {
		free(m);
		return -FI_EINVAL; /* we are not a member */
	}
	*out = m;
	return 0;
}

static int dfi_join_locked(struct dfi_ep *ep, const struct fi_collective_addr *ca,
			   struct fid_mc **out, void *context)
{
	const struct dfi_av_set *s = (const struct dfi_av_set *)ca->set;
	struct dfi_mc *mc;
	struct dfi_req *q;
	int r;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!ep->eq)
		return -FI_ENOEQ;
	if (ep->fatal)
		return -FI_EIO;
	if (!s || (ca->coll_addr != FI_ADDR_NOTAVAIL && ca->coll_addr != (fi_addr_t)(uintptr_t)s))
		return -FI_EINVAL;
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -FI_ENOMEM;
	r = dfi_members(ep, s, &mc->m, &mc->rank);
	if (r == 0)
		r = dfi_group_id(ep, mc->m, (unsigned)s->n, &mc->id);
	q = r == 0 ? dfi_req_new(ep, R_JOIN) : NULL;
	if (r == 0 && !q)
		r = -FI_ENOMEM;
	if (r == 0) {
		mc->n = (unsigned)s->n;
		q->mc = mc;
		q->context = context;
		r = dnp_coll_group_create(ep->dom->d, mc->id, mc->m, mc->n, dfi_coll_cookie(q),
					  DNP_NONBLOCK);
		if (r < 0) {
			dfi_req_free(ep, q);
			r = r == -EAGAIN ? -FI_EAGAIN : r;
		}
	}
	if (r < 0) {
		free(mc->m);
		free(mc);
		return r;
	}
	mc->ep = ep;
	mc->mc.fid.fclass = FI_CLASS_MC;
	mc->mc.fid.context = context;
	mc->mc.fid.ops = &dfi_mc_fi_ops;
	mc->mc.fi_addr = (fi_addr_t)(uintptr_t)mc;
	mc->next = ep->mcs;
	ep->mcs = mc;
	*out = &mc->mc;
	return 0;
}

int dfi_join(struct fid_ep *fep, const void *addr, uint64_t flags, struct fid_mc **mc,
	     void *context)
{
	if (!(flags & FI_COLLECTIVE))
		return -FI_ENOSYS; /* multicast groups: none */
	if (!addr || !mc)
		return -FI_EINVAL;
	return (int)LOCKED(dfi_join_locked(EP(fep), addr, mc, context));
}

/* ------------------------------------------------------------ collectives */

/* Queues collective q on group coll_addr and issues it when the group is free. */
static ssize_t dfi_coll_post(struct dfi_ep *ep, fi_addr_t coll_addr, struct dfi_req *proto)
{
	struct dfi_mc *mc;
	struct dfi_req *q;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (ep->fatal)
		return -FI_EIO;
	mc = dfi_mc_of(ep, coll_addr);
	if (!mc)
		return -FI_EINVAL;
	if (proto->coll == DNP_OP_BCAST && proto->root >= mc->n)
		return -FI_EINVAL;
	q = dfi_req_new(ep, R_COLL);
	if (!q)
		return -FI_ENOMEM;
	q->context = proto->context;
	q->flags = FI_COLLECTIVE;
	q->coll = proto->coll;
	q->dtype = proto->dtype;
	q->redop = proto->redop;
	q->root = proto->root;
	q->csrc = proto->csrc;
	q->buf = proto->buf;
	q->len = proto->len;
	q->cap = proto->cap;
	q->mc = mc;
	if (mc->q_tail)
		mc->q_tail->next = q;
	else
		mc->q_head = q;
	mc->q_tail = q;
	dfi_coll_kick(ep, mc);
	return 0;
}

static ssize_t dfi_barrier(struct fid_ep *fep, fi_addr_t coll_addr, void *context)
{
	struct dfi_req p = { .coll = DNP_OP_BARRIER, .context = context };

	return LOCKED(dfi_coll_post(EP(fep), coll_addr, &p));
}

static ssize_t dfi_barrier2(struct fid_ep *fep, fi_addr_t coll_addr, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EOPNOTSUPP; /* no flags (FI_MORE, ...) for a barrier */
	return dfi_barrier(fep, coll_addr, context);
}

/* The rank of AV address root in group mc (~0u: not a member). */
static unsigned dfi_rank_of(struct dfi_ep *ep, struct dfi_mc *mc, fi_addr_t root)
{
	const struct dfi_addr *a;
	unsigned i;

	if (!ep->av || root >= ep->av->n || !ep->av->used[root])
		return ~0u;
	a = &ep->av->tab[root];
	for (i = 0; i < mc->n; i++)
		if (mc->m[i].x == a->x && mc->m[i].y == a->y && mc->m[i].z == a->z &&
		    mc->m[i].port == a->port)
			return i;
	return ~0u;
}

static ssize_t dfi_bcast_locked(struct dfi_ep *ep, void *buf, size_t count, fi_addr_t coll_addr,
				fi_addr_t root, enum fi_datatype dt, void *context)
{
	size_t sz = dfi_dt_size(dt);
	struct dfi_mc *mc = dfi_mc_of(ep, coll_addr);
	struct dfi_req p = { .coll = DNP_OP_BCAST, .context = context, .buf = buf };

	if (!sz || count > DNP_COLL_MAX_BYTES / sz)
		return -FI_EOPNOTSUPP;
	if (count && !buf)
		return -FI_EINVAL;
	if (!mc)
		return -FI_EINVAL;
	p.root = dfi_rank_of(ep, mc, root);
	if (p.root == ~0u)
		return -FI_EINVAL;
	p.len = count * sz;
	return dfi_coll_post(ep, coll_addr, &p);
}

static ssize_t dfi_broadcast(struct fid_ep *fep, void *buf, size_t count, void *desc,
			     fi_addr_t coll_addr, fi_addr_t root_addr, enum fi_datatype datatype,
			     uint64_t flags, void *context)
{
	return LOCKED(
		dfi_bcast_locked(EP(fep), buf, count, coll_addr, root_addr, datatype, context));
}

static ssize_t dfi_allreduce(struct fid_ep *fep, const void *buf, size_t count, void *desc,
			     void *result, void *result_desc, fi_addr_t coll_addr,
			     enum fi_datatype datatype, enum fi_op op, uint64_t flags,
			     void *context)
{
	unsigned t = dfi_dt_dnp(datatype), red = dfi_op_dnp(op, t);
	struct dfi_req p = { .coll = DNP_OP_ALLREDUCE,
			     .context = context,
			     .buf = result,
			     .csrc = buf,
			     .dtype = t,
			     .redop = red,
			     .cap = count };

	if (!t || !red || count > DNP_COLL_MAX_BYTES / dfi_dt_size(datatype))
		return -FI_EOPNOTSUPP;
	if (count && (!buf || !result))
		return -FI_EINVAL;
	p.len = count * dfi_dt_size(datatype);
	return LOCKED(dfi_coll_post(EP(fep), coll_addr, &p));
}

/* What the daemons do not run: -FI_ENOSYS. */
struct fi_ops_collective dfi_coll_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = dfi_barrier,
	.broadcast = dfi_broadcast,
	.alltoall = NOSYS_OP(coll),
	.allreduce = dfi_allreduce,
	.allgather = NOSYS_OP(coll),
	.reduce_scatter = NOSYS_OP(coll),
	.reduce = NOSYS_OP(coll),
	.scatter = NOSYS_OP(coll),
	.gather = NOSYS_OP(coll),
	.msg = NOSYS_OP(coll),
	.barrier2 = dfi_barrier2,
};
