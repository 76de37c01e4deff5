/* SPDX-License-Identifier: MIT */
/*
 * dfm — the DNP Fault Manager (EURETILE report, LO|FA|MO: the DFM) as a
 * sans-I/O state machine, like the engine: it never reads a clock, a sensor
 * or a socket. Its driver (dnpd in real time, the lab in virtual time) feeds
 * it the time, the engine's link states and counters, sensor readings and
 * DIAG packets received from first neighbours; the DFM works on the register
 * block the driver hands it (lofamo_abi.h: it writes the DNP Watchdog
 * Register, the Remote Fault Descriptors and its raw readings, reads and
 * invalidates the Host Watchdog Register, reads the timer, mask and
 * threshold registers) and returns what to do: DIAG packets to send to
 * first neighbours, and alarms (for the driver's log).
 *
 * Periods come from the timer register (milliseconds, conf.unit_per_ms time
 * units each). Every T_write: the local part (links, sensors, engine health,
 * the verdict on the host) and the remote part (first-neighbour hosts) are
 * written and validated. Every T_read: the Host Watchdog Register is taken
 * and invalidated; found not validated (once the host has shown up at all),
 * it is an omission fault of the host; validated with a device at alarm
 * level, a periphery fault. A read that comes more than a tenth of T_write
 * after its due time (the driver itself was kept off the CPU, and so may the
 * host have been), or on a node under CPU pressure lately (regs.h, local
 * health: the DFM's own lateness and the host's published one), does not
 * judge a cleared register at once: it looks again after
 * dnp_lfm_health_grace() (at least T_write, at most T_read - T_write) and
 * only then declares the omission. A dead host is so declared at most
 * 2 x T_read after its last validation by an on-time reader on a quiet
 * node, and at most 3 x T_read - T_write plus the reader's own lateness
 * otherwise. The DFM publishes its own lateness in the DNP Watchdog
 * Register for the HFM. While the host is faulty the DFM sends a DIAG
 * packet to every first neighbour every T_read (the "last chance" relay of
 * the report over the torus) and one more when the host recovers. A DIAG
 * received from a neighbour is recorded in the remote part and the Remote
 * Fault Descriptor of its direction; without a DIAG for 3 x T_read the entry
 * expires. A link is BROKEN when the engine says so; SICK when over a
 * window of one to 16 T_reads its CRC errors per million frames exceed the
 * threshold with 99.9 % confidence, ok again when a window of enough frames
 * is at or under it.
 *
 * Memory: dnp_dfm_create allocates once; nothing else allocates.
 * Threads: one thread owns a DFM (dnpd's poll loop).
 */
#ifndef DNP_DFM_H
#define DNP_DFM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lofamo_abi.h"
#include "torus.h"

struct dnp_dfm_conf {
	struct dnp_torus torus;
	struct dnp_coord self;
	uint64_t unit_per_ms; /* time units per millisecond: 1000000 for ns, > 0 */
	uint8_t links;        /* bit dir set: a link exists in direction dir */
};

/* What the driver observed since the last call (counters are cumulative). */
struct dnp_dfm_input {
	uint8_t link_state[DNP_LFM_NDIRS];  /* enum dnp_link_state */
	uint64_t rx_frames[DNP_LFM_NDIRS];  /* valid frames received per link */
	uint64_t crc_errors[DNP_LFM_NDIRS]; /* frames dropped for a bad CRC per link */
	int32_t sensor[DNP_LFM_NSENSORS];   /* m°C, mV, mW */
	uint8_t sensor_present;             /* bit s: sensor[s] is a real reading */
	bool engine_ok;
};

/* A DIAG packet's payload (little-endian on the wire, DNP_DFM_DIAG_BYTES). */
#define DNP_DFM_DIAG_BYTES 32u
#define DNP_DFM_DIAG_MAGIC 0x4744u /* "DG" */
struct dnp_dfm_diag_msg {
	uint8_t kind;         /* enum dnp_lfm_rfd_kind; NONE = the host recovered */
	uint32_t node;        /* the sender's node id */
	uint64_t host_status; /* its last Host Watchdog status word */
	uint64_t dnp_status;  /* its DNP Watchdog status word */
	uint32_t seq;         /* per sender, counts DIAGs */
};

struct dnp_dfm_diag {
	uint8_t dir;          /* the link it leaves on */
	struct dnp_coord dst; /* the first neighbour there */
	uint8_t data[DNP_DFM_DIAG_BYTES];
};

enum dnp_dfm_alarm_kind {
	DNP_DFM_AL_LINK = 1,   /* subject dir, level enum dnp_lfm_link */
	DNP_DFM_AL_SENSOR = 2, /* subject sensor, level enum dnp_lfm_level */
	DNP_DFM_AL_HOST = 3,   /* level enum dnp_lfm_host */
	DNP_DFM_AL_REMOTE = 4, /* subject dir, level enum dnp_lfm_rfd_kind, node */
	DNP_DFM_AL_TIMER = 5,  /* level 1: the timer register was refused, 0: accepted */
};

struct dnp_dfm_alarm {
	uint8_t kind, subject, level;
	uint32_t node;
};

#define DNP_DFM_MAX_ALARMS 32u
struct dnp_dfm_out {
	unsigned ndiag;
	struct dnp_dfm_diag diag[DNP_LFM_NDIRS];
	unsigned nalarm;
	struct dnp_dfm_alarm alarm[DNP_DFM_MAX_ALARMS];
};

struct dnp_dfm;

/* Errors: -EINVAL (bad conf or register block), -ENOMEM. */
int dnp_dfm_create(const struct dnp_dfm_conf *c, struct dnp_lfm_regs *regs, uint64_t now,
		   struct dnp_dfm **out);
void dnp_dfm_destroy(struct dnp_dfm *d);

/* Does what is due at 'now'; out is cleared first. */
void dnp_dfm_tick(struct dnp_dfm *d, uint64_t now, const struct dnp_dfm_input *in,
		  struct dnp_dfm_out *out);
/* Earliest time at which dnp_dfm_tick has something to do. */
uint64_t dnp_dfm_next_deadline(const struct dnp_dfm *d);

/*
 * A DIAG packet from src arrived. Appends alarms to out (not cleared).
 * Errors: -EBADMSG (payload does not decode), -EINVAL (src is not a first
 * neighbour, or the payload names another node); nothing is recorded then.
 */
int dnp_dfm_on_diag(struct dnp_dfm *d, struct dnp_coord src, const void *payload, size_t len,
		    uint64_t now, struct dnp_dfm_out *out);

/* DIAG payload codec. encode: returns DNP_DFM_DIAG_BYTES or -ENOBUFS.
 * decode: 0, or -EBADMSG (length, magic, version, kind or reserved bytes). */
int dnp_dfm_diag_encode(const struct dnp_dfm_diag_msg *m, void *buf, size_t cap);
int dnp_dfm_diag_decode(const void *buf, size_t len, struct dnp_dfm_diag_msg *m);

/* Counters for the lab and dnpctl. */
struct dnp_dfm_stats {
	uint64_t wd_writes, host_reads, host_omissions, diag_tx, diag_rx, diag_bad;
	uint64_t host_late_reads; /* late reads that gave the host a second look */
};

const struct dnp_dfm_stats *dnp_dfm_stats(const struct dnp_dfm *d);

#endif
