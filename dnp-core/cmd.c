/* SPDX-License-Identifier: MIT */
/*
 * cmd — validation of the 64-byte command slots that applications write into
 * their ring (the DNP's TX ring of Header/Footer/CMD0/CMD1 words, EURETILE
 * report, TX acceleration), and printable names for ops and event types.
 *
 * The slot lives in memory another process can scribble on while we look, so
 * dnp_cmd_check must be called on a private copy the engine then acts on.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "cmd.h"

static bool op_known(unsigned op)
{
	return op == DNP_OP_PUT || op == DNP_OP_SEND || op == DNP_OP_GET;
}

/*
 * An inline PUT carries its payload in word 2 and rsvd3 (dnp_abi.h): those
 * fields are data, not checked; there is no local range to read nor a
 * source to give back.
 */
static bool inline_ok(const struct dnp_cmd *c)
{
	return c->op == DNP_OP_PUT && !(c->flags & DNP_CMD_F_SRC_EVENT) &&
	       c->len <= DNP_CMD_INLINE_MAX;
}

/* [va, va + len) must be representable: its end may not wrap past 2^64. */
static bool range_wraps(uint64_t va, uint64_t len)
{
	return len > UINT64_MAX - va;
}

/*
 * Only the torus dimensions are needed, so this reads t->dim directly and
 * does not depend on torus.c.
 */
static bool dst_in_torus(const struct dnp_cmd *c, const struct dnp_torus *t)
{
	return c->dst_x < t->dim[0] && c->dst_y < t->dim[1] && c->dst_z < t->dim[2];
}

int dnp_cmd_check(const struct dnp_cmd *c, const struct dnp_torus *t, unsigned max_ports)
{
	if (dnp_op_is_coll(c->op))
		return dnp_cmd_check_coll(c);
	if (!op_known(c->op))
		return -EINVAL;
	if (c->flags & ~DNP_CMD_F_ALL)
		return -EINVAL;
	/* a GET's source is remote: there is no local read to report */
	if (c->op == DNP_OP_GET && (c->flags & DNP_CMD_F_SRC_EVENT))
		return -EINVAL;
	if (c->cntr > DNP_CNTR_MAX || c->rsvd1b || c->tc > DNP_TC_MAX)
		return -EINVAL;
	if (c->flags & DNP_CMD_F_INLINE) {
		if (!inline_ok(c))
			return -EINVAL;
	} else if (c->rsvd2 || c->rsvd3) {
		return -EINVAL;
	}
	if (c->rsvd1)
		return -EINVAL;
	if (c->len > DNP_MAX_MSG)
		return -EINVAL;
	/* PUT/SEND read local_va, GET writes it: every op touches the local range. */
	if (!(c->flags & DNP_CMD_F_INLINE) && range_wraps(c->local_va, c->len))
		return -EINVAL;
	/* SEND lands in the target's next SEND buffer: no remote address nor key. */
	if (c->op == DNP_OP_SEND) {
		if (c->remote_key)
			return -EINVAL;
	} else if (range_wraps(c->remote_va, c->len)) {
		return -EINVAL;
	}
	if (c->dst_port >= max_ports)
		return -EINVAL;
	if (!dst_in_torus(c, t))
		return -EHOSTUNREACH;
	return 0;
}

const char *dnp_ev_type_name(unsigned type)
{
	static const char *const names[] = {
		[DNP_EV_TX_DONE] = "TX_DONE",   [DNP_EV_RX_PUT] = "RX_PUT",
		[DNP_EV_RX_SEND] = "RX_SEND",   [DNP_EV_GET_DONE] = "GET_DONE",
		[DNP_EV_ERROR] = "ERROR",       [DNP_EV_LINK] = "LINK",
		[DNP_EV_RX_ERROR] = "RX_ERROR", [DNP_EV_OVERFLOW] = "OVERFLOW",
		[DNP_EV_TX_READ] = "TX_READ",
	};

	if (type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "?";
}

const char *dnp_op_name(unsigned op)
{
	static const char *const names[] = {
		[DNP_OP_PUT] = "PUT",
		[DNP_OP_SEND] = "SEND",
		[DNP_OP_GET] = "GET",
		/* collectives (h-coll) */
		[DNP_OP_COLL_JOIN] = "COLL_JOIN",
		[DNP_OP_COLL_LEAVE] = "COLL_LEAVE",
		[DNP_OP_ALLREDUCE] = "ALLREDUCE",
		[DNP_OP_BARRIER] = "BARRIER",
		[DNP_OP_BCAST] = "BCAST",
	};

	if (op < sizeof(names) / sizeof(names[0]) && names[op])
		return names[op];
	return "?";
}

/* Bytes of one element of a DNP_TYPE_*, 0 for an unknown type. */
static unsigned coll_type_size(unsigned t)
{
	return t == DNP_TYPE_INT32 || t == DNP_TYPE_FLOAT  ? 4 :
	       t == DNP_TYPE_INT64 || t == DNP_TYPE_DOUBLE ? 8 :
							     0;
}

/* An ALLREDUCE's parameter word: a known reduction on a type it applies to, root 0. */
static bool coll_reduce_ok(uint32_t param)
{
	unsigned op = DNP_COLL_REDOP(param), t = DNP_COLL_DTYPE(param);

	if (op < DNP_RED_SUM || op > DNP_RED_BOR || !coll_type_size(t) || DNP_COLL_ROOT(param))
		return false;
	return op <= DNP_RED_MAX || t == DNP_TYPE_INT32 || t == DNP_TYPE_INT64;
}

int dnp_cmd_check_coll(const struct dnp_cmd *c)
{
	if ((c->flags & ~DNP_CMD_F_NO_EVENT) || !c->remote_key || c->dst_port || c->dst_x ||
	    c->dst_y || c->dst_z || c->tc || c->cntr || c->rsvd1b || c->rsvd1 || c->rsvd2 ||
	    c->rsvd3)
		return -EINVAL;
	if (range_wraps(c->local_va, c->len) || range_wraps(c->remote_va, c->len))
		return -EINVAL;
	switch (c->op) {
	case DNP_OP_COLL_JOIN:
		if (c->coll_param || c->remote_va || !c->len ||
		    c->len % sizeof(struct dnp_coll_member) ||
		    c->len / sizeof(struct dnp_coll_member) > DNP_COLL_MAX_MEMBERS)
			return -EINVAL;
		return 0;
	case DNP_OP_COLL_LEAVE:
	case DNP_OP_BARRIER:
		return c->coll_param || c->remote_va || c->local_va || c->len ? -EINVAL : 0;
	case DNP_OP_ALLREDUCE:
		if (!coll_reduce_ok(c->coll_param) ||
		    c->len % coll_type_size(DNP_COLL_DTYPE(c->coll_param)))
			return -EINVAL;
		return c->len > DNP_COLL_MAX_BYTES ? -EMSGSIZE : 0;
	default: /* DNP_OP_BCAST */
		if (DNP_COLL_REDOP(c->coll_param) || DNP_COLL_DTYPE(c->coll_param) || c->remote_va)
			return -EINVAL;
		return c->len > DNP_COLL_MAX_BYTES ? -EMSGSIZE : 0;
	}
}
