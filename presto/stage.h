/* SPDX-License-Identifier: MIT */
/*
 * stage — the staging slots of Presto (presto.c) and of the libfabric
 * provider (fabric/dnp_fi_msg.c): a message is copied into a slot of
 * registered memory and a DNP command sends it from there. The command is
 * issued without blocking; when the daemon is busy (-EAGAIN) the slot stays
 * pending and is issued again from the progress loop.
 *
 * A slot is FREE, PENDING (copied, its command not yet accepted) or INFLIGHT
 * (accepted; its completion event frees it). The owner counts its pending
 * slots so that progress can skip a peer with none.
 *
 * Header-only, like reqtab.h: the unit tests and fuzz harnesses include
 * presto.c and the provider's sources and link no library.
 */
#ifndef DNP_STAGE_H
#define DNP_STAGE_H

#include <stdint.h>

enum dnp_stage_state {
	DNP_STAGE_FREE = 0,
	DNP_STAGE_PENDING,
	DNP_STAGE_INFLIGHT
};

/*
 * The slot's command was issued with result r (0 or -errno): in flight on
 * success, else pending, counted once in *pending. The caller handles an
 * error other than -EAGAIN.
 */
static inline void dnp_stage_issued(uint8_t *state, unsigned *pending, int r)
{
	if (r == 0) {
		if (*state == DNP_STAGE_PENDING)
			(*pending)--;
		*state = DNP_STAGE_INFLIGHT;
		return;
	}
	if (*state != DNP_STAGE_PENDING) {
		*state = DNP_STAGE_PENDING;
		(*pending)++;
	}
}

#endif
