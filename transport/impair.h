/* SPDX-License-Identifier: MIT */
/*
 * impair — link impairment below the link layer, the same for every backend:
 * a transport (transport.h) that wraps another one and, on the frames this end
 * sends, injects loss, bit corruption, duplication, reordering and delay.
 * Real daemons cannot use netem here; fault drills, tests and benchmarks use
 * this instead (docs/dnpd.md, "Impairment").
 *
 * Spec (dnpd --impair, dnpctl impair): comma-separated key=value, any order:
 *   dir=all|xp|xm|yp|ym|zp|zm   the links it applies to (default all; the
 *                              daemon's own outgoing frames on them)
 *   loss=P%  corrupt=P%  dup=P%  reorder=P%   probabilities per frame,
 *                              0..100 with up to 4 decimals ("0.01%")
 *   delay=Nus|Nms|Nns          every frame is held this long (max 1 s)
 *   seed=N                     u64 seed (default 1); each link mixes in its
 *                              direction, so a run is reproducible
 * "off" (or "") clears the impairment. Unknown keys, bad numbers, values out
 * of range: -EINVAL. Each frame: lost with P(loss); else corrupted (one bit
 * flipped, so the receiver's CRC check fails) with P(corrupt); sent twice with
 * P(dup); held back and sent after the next frame with P(reorder).
 *
 * Counters are per wrapped link. Owned by the daemon's polling thread, like
 * the link it wraps; held frames (delay, reorder) are sent by later tx_burst
 * or rx_burst calls, or dnp_impair_flush.
 */
#ifndef DNP_IMPAIR_H
#define DNP_IMPAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport.h"

#define DNP_IMPAIR_PPM 1000000u /* probabilities are in parts per million */

struct dnp_impair_conf {
	uint8_t dirs;                         /* bit d: direction d (0..5) is impaired */
	uint32_t loss, corrupt, dup, reorder; /* parts per million, <= DNP_IMPAIR_PPM */
	uint64_t delay_ns;                    /* <= 1e9 */
	uint64_t seed;
};

struct dnp_impair_stats {
	uint64_t frames; /* frames offered */
	uint64_t dropped, corrupted, duplicated, reordered, delayed;
};

/*
 * Parses spec into c (zeroed first; dirs = all, seed = 1). Returns 0 or
 * -EINVAL. Never reads beyond the NUL; spec up to 4096 bytes.
 */
int dnp_impair_parse(const char *spec, struct dnp_impair_conf *c);
/* Writes c back as a spec string ("off" when nothing is impaired). */
void dnp_impair_format(const struct dnp_impair_conf *c, char *buf, size_t len);
/* True if c injects anything. */
bool dnp_impair_active(const struct dnp_impair_conf *c);

/*
 * Wraps 'inner' (which the wrapper owns from now on: closing the wrapper
 * closes it) for direction dir. Errors: -EINVAL, -ENOMEM.
 */
int dnp_impair_wrap(struct dnp_transport *inner, unsigned dir, const struct dnp_impair_conf *c,
		    struct dnp_transport **out);
/* Changes the impairment at run time (only its part for this link's direction counts). */
void dnp_impair_set(struct dnp_transport *t, const struct dnp_impair_conf *c);
const struct dnp_impair_stats *dnp_impair_stats(const struct dnp_transport *t);
/* Sends the held frames that are due; true while some are still held. */
bool dnp_impair_flush(struct dnp_transport *t);
/* The wrapper's ops (to recognise a wrapped link). */
extern const struct dnp_transport_ops dnp_transport_impair;

#endif
