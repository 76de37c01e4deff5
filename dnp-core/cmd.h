/* SPDX-License-Identifier: MIT */
/*
 * cmd — command and event layouts (the shared-memory ABI lives in
 * api/abi/dnp_abi.h) and their names for logs and tools.
 */
#ifndef DNP_CMD_H
#define DNP_CMD_H

#include "dnp_abi.h"

#include "torus.h"

/*
 * Checks a command read from an application's ring before the engine acts
 * on it (the bytes come from another process: trust nothing).
 * Errors: -EINVAL (unknown op, non-zero reserved fields, tc above
 * DNP_TC_MAX, unknown flags or DNP_CMD_F_SRC_EVENT on a GET, cntr above
 * DNP_CNTR_MAX, DNP_CMD_F_INLINE on anything but a PUT of at most
 * DNP_CMD_INLINE_MAX bytes without DNP_CMD_F_SRC_EVENT (an inline PUT's
 * word 2 and rsvd3 are its payload),
 * len above DNP_MAX_MSG, va + len overflowing, dst_port >= max_ports),
 * -EHOSTUNREACH (destination outside the torus).
 */
int dnp_cmd_check(const struct dnp_cmd *c, const struct dnp_torus *t, unsigned max_ports);

/*
 * Collective commands (dnp_abi.h, DNP_OP_COLL_JOIN..DNP_OP_BCAST): checked by
 * dnp_cmd_check with their own rules: -EINVAL (unknown flags or flag
 * SRC_EVENT, group id 0, a field the op does not use not zero, unknown
 * reduction or type, BAND/BOR on a floating type, len not a multiple of the
 * type or of a member, no member or more than DNP_COLL_MAX_MEMBERS, a range
 * that wraps), -EMSGSIZE (len above DNP_COLL_MAX_BYTES). Whether the group
 * exists and the root is a member is the engine's to check (coll.h).
 */
static inline int dnp_op_is_coll(unsigned op)
{
	return op >= DNP_OP_COLL_JOIN && op <= DNP_OP_BCAST;
}
int dnp_cmd_check_coll(const struct dnp_cmd *c);

const char *dnp_ev_type_name(unsigned type);
const char *dnp_op_name(unsigned op);

#endif
