/* SPDX-License-Identifier: MIT */
/*
 * cmd — command and event layouts (the shared-memory ABI lives in
 * api/dnp_abi.h) and their names for logs and tools.
 */
#ifndef DNP_CMD_H
#define DNP_CMD_H

#include "dnp_abi.h"

const char *dnp_ev_type_name(unsigned type);
const char *dnp_op_name(unsigned op);

#endif
