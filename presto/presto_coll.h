/* SPDX-License-Identifier: MIT */
/*
 * presto_coll.h — Presto's use of the collectives run by the daemons
 * (docs/presto.md, "Collectives"), a part of presto.c (included there, once,
 * after its progress engine): the group of all ranks and the calls that
 * go to it.
 */
#ifndef PRESTO_COLL_H
#define PRESTO_COLL_H

static size_t p_type_size(enum presto_type t);

/*
 * Collectives run by the daemons (dnp.h, "Collectives"): the group of every
 * rank, in rank order, joined at init unless PRESTO_COLL=host. The
 * collectives of that group are used whenever they can do the call
 * (allreduce of at most P_COLL_MAX bytes, barrier, bcast of at most that);
 * every rank decides alike, so all take the same path. P_COLL_MAX is 256
 * KiB, below the daemons' 4 MiB (DNP_COLL_MAX_BYTES): on 2x2x2 shm daemons the
 * offloaded allreduce and broadcast beat the host-based ones at 64 and 256 KiB
 * and lose at 1 MiB, where Presto's rendez-vous GETs move the data faster
 * than the daemons' pipelined 4 KiB packets
 * (bench/results/2026-12-05-h-pipe-coll-large.md).
 */
#define P_COLL_GID 0x9e570u
#define P_COLL_MAX (256u << 10)

/* Waits for the collective just queued (or its submission error rc). */
static int p_coll_wait(struct presto *p, int rc)
{
	uint64_t deadline = p->wait_timeout_ns ? p_now() + p->wait_timeout_ns : 0;

	while (rc == 0 && !p->coll_done) {
		if (p->fatal)
			return p->fatal;
		if (deadline && p_now() > deadline)
			return -ETIMEDOUT;
		if (p_progress(p) == 0)
			p_idle(p);
	}
	return rc ? rc : p->coll_status;
}

static uint64_t p_coll_cookie(struct presto *p)
{
	p->coll_done = false;
	return dnp_reqtab_cookie(C_COLL, 0, 0);
}

/*
 * Joins the group of every rank; coll_ok once every rank has (a host-based
 * allreduce of the outcome; a rank that could not join says so there). A
 * libdnp or daemon that refuses the join outright (no collectives: every
 * rank alike) leaves Presto host-based at once.
 */
static void p_coll_join(struct presto *p)
{
	const char *env = getenv("PRESTO_COLL");
	struct dnp_coll_member *m;
	int ok, all = 0, rc;

	if ((env && !strcmp(env, "host")) || p->size > (int)DNP_COLL_MAX_MEMBERS)
		return;
	m = calloc((size_t)p->size, sizeof(*m));
	for (int k = 0; m && k < p->size; k++)
		m[k] = (struct dnp_coll_member){ (uint8_t)p->peers[k].c.x, (uint8_t)p->peers[k].c.y,
						 (uint8_t)p->peers[k].c.z, (uint8_t)p->peer_port };
	rc = m ? dnp_coll_group_create(p->d, P_COLL_GID, m, (unsigned)p->size, p_coll_cookie(p),
				       0) :
		 -ENOMEM;
	if (rc == 0)
		rc = p_coll_wait(p, 0);
	free(m);
	if (rc == -EOPNOTSUPP || rc == -EINVAL)
		return;
	ok = rc == 0;
	/* host-based yet; a failure there is the next call's (p->fatal) */
	rc = presto_allreduce(p, &ok, &all, 1, PRESTO_INT, PRESTO_MIN);
	p->coll_ok = rc == 0 && all == 1;
}

/* An allreduce the daemons can do (*rc its result): true; else false (host-based). */
static bool p_coll_allreduce(struct presto *p, const void *sbuf, void *rbuf, size_t count,
			     enum presto_type type, enum presto_op op, int *rc)
{
	if (!(p->coll_ok && count && p_type_size(type) && op <= PRESTO_MAX &&
	      count <= P_COLL_MAX / p_type_size(type) && sbuf))
		return false;
	unsigned t = type == PRESTO_DOUBLE  ? DNP_TYPE_DOUBLE :
		     p_type_size(type) == 8 ? DNP_TYPE_INT64 :
					      DNP_TYPE_INT32;
	unsigned o = op == PRESTO_SUM ? DNP_RED_SUM : op == PRESTO_MIN ? DNP_RED_MIN : DNP_RED_MAX;

	*rc = p_coll_wait(
		p, dnp_allreduce(p->d, P_COLL_GID, sbuf, rbuf, count, t, o, p_coll_cookie(p), 0));
	return true;
}

#endif /* PRESTO_COLL_H */
