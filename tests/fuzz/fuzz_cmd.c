/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for dnp_cmd_check: the 64-byte command slot is written by
 * an application process, so any bytes must be either rejected or safe to
 * act on. Input: 64 bytes of command, then an optional byte giving the port
 * count. Each command is checked against a few torus shapes; whatever is
 * accepted is re-checked here against the rules of cmd.h (abort if not).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct dnp_torus shapes[] = {
	{ .dim = { 1, 1, 1 } }, { .dim = { 2, 2, 2 } },       { .dim = { 4, 2, 3 } },
	{ .dim = { 8, 1, 1 } }, { .dim = { 256, 256, 256 } },
};

/* A collective command accepted: the rules of cmd.h, "Collective commands". */
static void check_coll_accepted(const struct dnp_cmd *c)
{
	unsigned op = DNP_COLL_REDOP(c->coll_param), t = DNP_COLL_DTYPE(c->coll_param);
	unsigned esz = t == DNP_TYPE_INT32 || t == DNP_TYPE_FLOAT ? 4 : 8;

	if ((c->flags & ~DNP_CMD_F_NO_EVENT) || !c->remote_key || c->dst_port || c->dst_x ||
	    c->dst_y || c->dst_z || c->tc || c->cntr || c->rsvd1b || c->rsvd1 || c->rsvd2 ||
	    c->rsvd3)
		abort();
	if (c->local_va + c->len < c->local_va || c->remote_va + c->len < c->remote_va)
		abort();
	if (c->op == DNP_OP_COLL_JOIN &&
	    (c->coll_param || !c->len || c->len % 4 || c->len / 4 > DNP_COLL_MAX_MEMBERS))
		abort();
	if ((c->op == DNP_OP_COLL_LEAVE || c->op == DNP_OP_BARRIER) &&
	    (c->coll_param || c->len || c->local_va || c->remote_va))
		abort();
	if (c->op == DNP_OP_ALLREDUCE &&
	    (op < DNP_RED_SUM || op > DNP_RED_BOR || t < DNP_TYPE_INT32 || t > DNP_TYPE_DOUBLE ||
	     DNP_COLL_ROOT(c->coll_param) || c->len % esz || c->len > DNP_COLL_MAX_BYTES ||
	     (op > DNP_RED_MAX && t > DNP_TYPE_INT64)))
		abort();
	if (c->op == DNP_OP_BCAST && (op || t || c->remote_va || c->len > DNP_COLL_MAX_BYTES))
		abort();
}

static void check_accepted(const struct dnp_cmd *c, const struct dnp_torus *t, unsigned ports)
{
	if (dnp_op_is_coll(c->op)) {
		check_coll_accepted(c);
		return;
	}
	if (c->op < DNP_OP_PUT || c->op > DNP_OP_GET)
		abort();
	if ((c->flags & ~DNP_CMD_F_ALL) || c->tc > DNP_TC_MAX || c->rsvd1 || c->rsvd1b)
		abort();
	if (c->op == DNP_OP_GET && (c->flags & DNP_CMD_F_SRC_EVENT))
		abort();
	if (c->cntr > DNP_CNTR_MAX) /* 0: none, else 1 + a counter of the port */
		abort();
	if (c->flags & DNP_CMD_F_INLINE) {
		/* word 2 and rsvd3 are payload: a PUT that fits, with no source to give back */
		if (c->op != DNP_OP_PUT || c->len > DNP_CMD_INLINE_MAX ||
		    (c->flags & DNP_CMD_F_SRC_EVENT))
			abort();
	} else if (c->rsvd2 || c->rsvd3 || c->local_va + c->len < c->local_va) {
		abort();
	}
	if (c->len > DNP_MAX_MSG)
		abort();
	if (c->op != DNP_OP_SEND && c->remote_va + c->len < c->remote_va)
		abort();
	if (c->op == DNP_OP_SEND && c->remote_key)
		abort();
	if (c->dst_port >= ports)
		abort();
	if (c->dst_x >= t->dim[0] || c->dst_y >= t->dim[1] || c->dst_z >= t->dim[2])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dnp_cmd c;
	unsigned ports = 4;
	int ret, prev = 1;

	if (size < sizeof(c))
		return 0;
	memcpy(&c, data, sizeof(c));
	if (size > sizeof(c))
		ports = data[sizeof(c)];

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		ret = dnp_cmd_check(&c, &shapes[i], ports);
		if (ret == 0) {
			check_accepted(&c, &shapes[i], ports);
		} else if (ret == -EHOSTUNREACH) {
			/* only the destination may be wrong, and 256^3 holds every node */
			if (i == sizeof(shapes) / sizeof(shapes[0]) - 1)
				abort();
		} else if (ret != -EINVAL && !(ret == -EMSGSIZE && dnp_op_is_coll(c.op))) {
			abort();
		}
		/* -EINVAL does not depend on the torus */
		if (i &&
		    (ret == -EINVAL || ret == -EMSGSIZE) != (prev == -EINVAL || prev == -EMSGSIZE))
			abort();
		prev = ret;
	}
	return 0;
}
