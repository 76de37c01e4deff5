/* SPDX-License-Identifier: MIT */
/*
 * check.h — what the dnp_check modes share (dnp_check.c lists the modes).
 *
 * A mode runs on one node, as A (the origin), as B (its peer) or on every
 * node; it returns 0 or a negative errno for a failure it did not report,
 * and reports each failed check with fail() (counted in k->fails). The
 * control-message helpers report their own failures. A mode on B ends by
 * sending A its failure count (TAG_VERDICT); A reads it with verdict_a().
 * Memory comes from xalloc(), which exits the program when there is none.
 */
#ifndef DNP_CHECK_H
#define DNP_CHECK_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_common.h"

#define PROG "dnp_check"

enum {
	TAG_ADDR = 21,
	TAG_DONE,
	TAG_VERDICT,
	TAG_SEQ,
	TAG_CREDIT,
	TAG_BARRIER,
	TAG_FAR_DONE,
	TAG_SLOW,
	TAG_PORT2,
	TAG_RXERR,
};

struct chk {
	struct app a;
	struct dnp_coords peer;
	unsigned peer_id;
	bool is_a;
	unsigned fails;
	uint64_t cookie;
};

/* Reports a failed check (stderr) and counts it. */
void fail(struct chk *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* dnp_check.c */
void *xalloc(struct chk *k, size_t len);
int reg(struct chk *k, void *p, size_t len, unsigned flags, uint32_t *key);
int exchange(struct chk *k, const struct app_ctrl *mine, struct app_msg *theirs);
int send_tag(struct chk *k, unsigned dst, uint32_t tag, uint64_t val);
int recv_tag(struct chk *k, unsigned src, uint32_t tag, uint64_t *val);
void verdict_a(struct chk *k);
/* A: TAG_DONE to B, then verdict_a(). Returns 0. */
int a_done(struct chk *k);
/* B: "ok: ..." (printf format) when no check failed, then its verdict to A. 0 / -errno. */
int b_verdict(struct chk *k, const char *ok_fmt, ...) __attribute__((format(printf, 2, 3)));
int put_wait(struct chk *k, const void *src, size_t len, struct dnp_coords dst, uint64_t va,
	     uint32_t key, struct dnp_event *ev);
void expect_status(struct chk *k, const char *what, int got, int want);
unsigned drain(struct chk *k, unsigned type);
/* B: registers p1 (and p2 unless NULL) with flags and tells A. 0 or -EIO. */
int offer(struct chk *k, void *p1, size_t len1, unsigned flags, void *p2, size_t len2);
/* A: the buffers B offers, in m->c.a..d. 0 or -EIO. */
int take_offer(struct chk *k, struct app_msg *m);
/*
 * Next completion (TX_DONE or ERROR) of a stream of total PUTs of which done
 * completed; other events are dropped. 0, or -EIO (timed out, reported).
 */
int next_completion(struct chk *k, struct dnp_event *ev, unsigned done, unsigned total);
/* Is cookie in [base, base + n) and seen for the first time? Reports it when not. */
bool cookie_once(struct chk *k, uint64_t cookie, uint64_t base, uint64_t n, uint8_t *seen);

/* check_transfer.c */
int mode_send_order_a(struct chk *k);
int mode_send_order_b(struct chk *k);
int mode_get_a(struct chk *k);
int mode_get_b(struct chk *k);
int mode_reject_a(struct chk *k, bool badkey);
int mode_reject_b(struct chk *k, bool badkey);
int mode_outstanding_a(struct chk *k);
int mode_outstanding_b(struct chk *k);
int mode_blocking_a(struct chk *k);
int mode_blocking_b(struct chk *k);
int mode_farthest(struct chk *k);

/* check_faults.c */
int mode_drill_a(struct chk *k, const char *flag);
int mode_drill_b(struct chk *k, const char *flag);
int mode_bad_args(struct chk *k);
int mode_kill_victim(void);
int mode_kill_survivor_a(struct chk *k);
int mode_kill_survivor_b(struct chk *k);
int mode_private_fault_a(struct chk *k);
int mode_private_fault_b(struct chk *k);
int mode_kill_send_victim(void);
int midsend_a(struct chk *k);
int midsend_b(struct chk *k);
int mode_slow_drain(struct chk *k, const char *flag);

/* check_flags.c */
int mode_flags_a(struct chk *k);
int mode_flags_b(struct chk *k);

#endif
