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
