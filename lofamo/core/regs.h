/* SPDX-License-Identifier: MIT */
/*
 * regs — operations on the LO|FA|MO register block (lofamo_abi.h): defaults,
 * the timer register's rule, the watchdog protocol (owner write, reader
 * take-and-invalidate), and mapping the block from its file.
 *
 * Everything but dnp_lfm_regs_map/unmap is pure memory work on the block the
 * caller passes (the DFM and the lab use it without any I/O). Any thread or
 * process may call these on a mapped block; each function says which
 * register it touches.
 */
#ifndef DNP_LFM_REGS_H
#define DNP_LFM_REGS_H

#include <stdbool.h>
#include <stdint.h>

#include "lofamo_abi.h"

/* Fills a fresh block: identification, default timer, mask and thresholds,
 * both watchdog registers invalid, no remote faults. */
void dnp_lfm_regs_init(struct dnp_lfm_regs *r, uint32_t node, const unsigned dim[3]);

/* Checks the identification words. 0, or -EPROTO (magic/size), -EPROTONOSUPPORT (version). */
int dnp_lfm_regs_check(const struct dnp_lfm_regs *r);

/*
 * The timer register's rule: DNP_LFM_T_MIN <= t_write < t_read <= DNP_LFM_T_MAX
 * (milliseconds). Returns 0, -EINVAL (t_write >= t_read), -ERANGE (outside the
 * limits). dnp_lfm_timer_strerror() explains a refusal in words.
 */
int dnp_lfm_timer_check(uint32_t t_write_ms, uint32_t t_read_ms);
const char *dnp_lfm_timer_strerror(int err);
/* Checks, then stores both periods. Errors of dnp_lfm_timer_check (nothing stored). */
int dnp_lfm_timer_set(struct dnp_lfm_regs *r, uint32_t t_write_ms, uint32_t t_read_ms);

/* Owner side of a watchdog register: status and timestamp, seq + 1, then valid = 1. */
void dnp_lfm_wd_write(struct dnp_lfm_wd *w, uint64_t status, uint64_t now_ns);

/*
 * Local health of one side of the mutual watchdog (learnt from Lifeguard's
 * local health multiplier and the phi-accrual detector: judge a peer's
 * silence against the scheduling delay measured on this node, not against a
 * fixed timer alone). Both processes of a node share its CPUs: when the
 * reader itself runs late, or the writer says its writes came late, the
 * node is under CPU pressure and a cleared register is more likely a writer
 * kept off the CPU than a dead one.
 *
 * 'pressure' is a decaying maximum (each sample first takes an eighth off)
 * of the delays seen: the reader's own lateness at each read, the writer's
 * published lateness (struct dnp_lfm_wd.late), and the owner's lateness at
 * each of its own writes. Pure arithmetic; units are the caller's.
 */
struct dnp_lfm_health {
	uint64_t pressure; /* the node's recent scheduling delay, time units */
};

/* One sample of lateness (time units): decays the estimate by 1/8, then takes the max. */
void dnp_lfm_health_note(struct dnp_lfm_health *h, uint64_t late);

/*
 * After a read that found the register not validated: how long to wait
 * before the omission verdict (the second look), 0 to judge now. Nothing
 * to wait for on a quiet node (pressure and this read's lateness at most a
 * tenth of T_write). Under pressure: twice the delay seen, at least T_write
 * (the writer's fair chance) and at most T_read - T_write, so that a dead
 * writer is still declared within 3 x T_read of its last write.
 */
uint64_t dnp_lfm_health_grace(const struct dnp_lfm_health *h, uint64_t late, uint64_t t_write,
			      uint64_t t_read);

/*
 * Owner side with lateness: as dnp_lfm_wd_write, and publishes the owner's
 * own estimate of its lateness (h->pressure, ns) for the reader.
 */
void dnp_lfm_wd_write_late(struct dnp_lfm_wd *w, uint64_t status, uint64_t now_ns,
			   uint64_t late_ns);
/* The writer's published lateness (ns; shared memory: capped at DNP_LFM_T_MAX ms). */
uint64_t dnp_lfm_wd_late(const struct dnp_lfm_wd *w);
/*
 * Reader side: takes the valid bit and clears it atomically, and copies the
 * status. Returns true if the owner had validated the register since the
 * previous read, false for an omission (the status is then the stale one).
 */
bool dnp_lfm_wd_take(struct dnp_lfm_wd *w, uint64_t *status);

/*
 * Maps the block at path. create: dnpd makes the file (mode 0644) if needed,
 * initialises it unless it already holds a valid block of this node (a
 * restarted daemon keeps the HFM's settings), and bumps dfm_epoch. Without
 * create the file must exist and pass dnp_lfm_regs_check.
 * Errors: -errno of open/ftruncate/mmap, -EPROTO, -EPROTONOSUPPORT.
 */
int dnp_lfm_regs_map(const char *path, bool create, uint32_t node, const unsigned dim[3],
		     struct dnp_lfm_regs **out);
void dnp_lfm_regs_unmap(struct dnp_lfm_regs *r);

#endif
