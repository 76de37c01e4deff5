/* SPDX-License-Identifier: MIT */
/*
 * lofamo_abi.h — the LO|FA|MO registers: the block of shared memory between
 * a node's DNP Fault Manager (run by dnpd, lofamo/core/dfm.h) and its Host Fault
 * Manager (dnp-hfm). dnpd creates it as the file DIR/node-<id>.lofamo in its
 * run directory; dnp-hfm and dnpctl map the same file. As on the APEnet+
 * card, the registers live "inside the DNP" and both sides reach them
 * (EURETILE report, LO|FA|MO registers and watchdog implementation).
 *
 * Layout: fixed-width fields, explicit padding, a magic and version word,
 * static_assert on every offset that matters. Every field either side may
 * change while the other reads it is a C11 atomic; each register's status is
 * one 64-bit word, so a reader never sees half an update.
 *
 * The mutual watchdog. Each watchdog register has an owner:
 *   - the DNP Watchdog Register is written by the DFM, read by the HFM;
 *   - the Host Watchdog Register is written by the HFM, read by the DFM.
 * Every T_write the owner stores its status word and timestamp, bumps seq,
 * then sets valid = 1 (release). Every T_read the other side takes the valid
 * bit and clears it in one atomic exchange (acq_rel) and then reads the
 * status. Since T_write < T_read, a live owner always validates the register
 * between two reads; a reader that finds valid still 0 declares an omission
 * fault of the writer.
 *
 * Everything here is untrusted by both sides: a reader copies a word once,
 * checks it, and ignores values that make no sense (timer register out of
 * range: the DFM keeps its previous periods).
 */
#ifndef DNP_LOFAMO_ABI_H
#define DNP_LOFAMO_ABI_H

#include <assert.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define DNP_LFM_MAGIC 0x4f4d464cu /* "LFMO" little-endian */
#define DNP_LFM_VERSION 1u
#define DNP_LFM_NDIRS 6u
#define DNP_LFM_NSENSORS 3u /* temperature, voltage, power */

/* ---- DNP Watchdog Register status word ---- */
/* Local part: 2 bits per link (direction 0..5 = X+ X- Y+ Y- Z+ Z-). */
enum dnp_lfm_link {
	DNP_LFM_LINK_NONE = 0, /* no link in that direction (dimension of size 1) */
	DNP_LFM_LINK_OK = 1,
	DNP_LFM_LINK_SICK = 2,   /* CRC-error ratio over the threshold */
	DNP_LFM_LINK_BROKEN = 3, /* credit or ack timeout, or the transport lost it */
};
/* Local part: 2 bits per sensor (0 temperature, 1 voltage, 2 power). */
enum dnp_lfm_level {
	DNP_LFM_NORMAL = 0,
	DNP_LFM_WARNING = 1,
	DNP_LFM_ALARM = 2,
};
/* The DFM's verdict on its own host (from the Host Watchdog Register). */
enum dnp_lfm_host {
	DNP_LFM_HOST_OK = 0,
	DNP_LFM_HOST_OMISSION = 1,  /* Host Watchdog Register not validated in time */
	DNP_LFM_HOST_PERIPHERY = 2, /* the host reports a faulty device */
};
#define DNP_LFM_DNP_LINK_SHIFT(dir) (2u * (dir))     /* bits 0..11 */
#define DNP_LFM_DNP_SENSOR_SHIFT(s) (12u + 2u * (s)) /* bits 12..17 */
#define DNP_LFM_DNP_ENGINE_SHIFT 20u                 /* bits 20..21: 0 ok, 1 degraded */
#define DNP_LFM_DNP_HOST_SHIFT 24u                   /* bits 24..25: enum dnp_lfm_host */
/* Remote part: bit per direction, the first-neighbour host there is faulty. */
#define DNP_LFM_DNP_REMOTE_SHIFT 32u /* bits 32..37 */

static inline unsigned dnp_lfm_dnp_link(uint64_t w, unsigned dir)
{
	return (unsigned)(w >> DNP_LFM_DNP_LINK_SHIFT(dir)) & 3u;
}
static inline unsigned dnp_lfm_dnp_sensor(uint64_t w, unsigned s)
{
	return (unsigned)(w >> DNP_LFM_DNP_SENSOR_SHIFT(s)) & 3u;
}
static inline unsigned dnp_lfm_dnp_engine(uint64_t w)
{
	return (unsigned)(w >> DNP_LFM_DNP_ENGINE_SHIFT) & 3u;
}
static inline unsigned dnp_lfm_dnp_host(uint64_t w)
{
	return (unsigned)(w >> DNP_LFM_DNP_HOST_SHIFT) & 3u;
}
static inline unsigned dnp_lfm_dnp_remote(uint64_t w)
{
	return (unsigned)(w >> DNP_LFM_DNP_REMOTE_SHIFT) & 0x3fu;
}

/* ---- Host Watchdog Register status word: 2 bits per host device ---- */
enum dnp_lfm_hdev {
	DNP_LFM_HDEV_MEMORY = 0,
	DNP_LFM_HDEV_SVCNET = 1, /* the service network (no answer from the supervisor) */
	DNP_LFM_HDEV_CPU = 2,    /* load */
	DNP_LFM_HDEV_THERMAL = 3,
	DNP_LFM_NHDEV = 4,
};
/* Each device: enum dnp_lfm_level (normal / warning / alarm = faulty). */
static inline unsigned dnp_lfm_host_dev(uint64_t w, unsigned dev)
{
	return (unsigned)(w >> (2u * dev)) & 3u;
}

/* ---- Remote Fault Descriptor word (one per direction) ---- */
enum dnp_lfm_rfd_kind {
	DNP_LFM_RFD_NONE = 0,
	DNP_LFM_RFD_HOST_OMISSION = 1,  /* the neighbour's host stopped answering its DNP */
	DNP_LFM_RFD_HOST_PERIPHERY = 2, /* the neighbour's host reports a faulty device */
};
/* bits 0..7 kind, 8..15 the neighbour's Host Watchdog status (devices, low byte),
 * 16..47 the neighbour's node id, 48..63 DIAG packets received about it (saturates). */
static inline uint64_t dnp_lfm_rfd_make(unsigned kind, unsigned hstat, uint32_t node,
					unsigned count)
{
	return (uint64_t)(kind & 0xffu) | (uint64_t)(hstat & 0xffu) << 8 | (uint64_t)node << 16 |
	       (uint64_t)(count > 0xffffu ? 0xffffu : count) << 48;
}
static inline unsigned dnp_lfm_rfd_kind(uint64_t w)
{
	return (unsigned)w & 0xffu;
}
static inline unsigned dnp_lfm_rfd_hstat(uint64_t w)
{
	return (unsigned)(w >> 8) & 0xffu;
}
static inline uint32_t dnp_lfm_rfd_node(uint64_t w)
{
	return (uint32_t)(w >> 16);
}
static inline unsigned dnp_lfm_rfd_count(uint64_t w)
{
	return (unsigned)(w >> 48);
}

/* ---- Mask register: a set bit means the fault kind is reported ---- */
#define DNP_LFM_MASK_LINK_SICK 0x01u
#define DNP_LFM_MASK_LINK_BROKEN 0x02u
#define DNP_LFM_MASK_SENSOR 0x04u
#define DNP_LFM_MASK_HOST 0x08u   /* host faults: detection and DIAG relay */
#define DNP_LFM_MASK_REMOTE 0x10u /* neighbours' DIAG recorded in the remote part */
#define DNP_LFM_MASK_ALL 0x1fu

/* ---- Timer register limits and defaults (milliseconds; docs/lofamo.md) ---- */
#define DNP_LFM_T_WRITE_DEFAULT 100u
#define DNP_LFM_T_READ_DEFAULT 250u
#define DNP_LFM_T_MIN 5u
#define DNP_LFM_T_MAX 60000u

/* One watchdog register: 32 bytes. */
struct dnp_lfm_wd {
	_Atomic uint32_t valid;     /* 1: written since the reader last cleared it */
	_Atomic uint32_t seq;       /* owner's write count */
	_Atomic uint64_t status;    /* the status word (layouts above) */
	_Atomic uint64_t timestamp; /* owner's clock at the write, ns (CLOCK_MONOTONIC) */
	/* owner's recent lateness: a decaying maximum of how late its writes came, ns */
	_Atomic uint64_t late;
};
static_assert(sizeof(struct dnp_lfm_wd) == 32, "watchdog register is 32 bytes");

struct dnp_lfm_rfd {
	_Atomic uint64_t desc;      /* dnp_lfm_rfd_make() layout */
	_Atomic uint64_t timestamp; /* DFM clock of the last DIAG about it, ns */
};
static_assert(sizeof(struct dnp_lfm_rfd) == 16, "remote fault descriptor is 16 bytes");

/*
 * Thresholds. Sensor values are in milli-units: m°C, mV, mW. A reading is at
 * warning from warn[s] on and at alarm from alarm[s] on (over-threshold; the
 * voltage also has under-thresholds). crc_ppm: a link is sick when the CRC
 * errors per million received frames exceed it with 99.9 % confidence (the
 * lower bound of the errors seen over the window's frames; a window grows
 * over T_reads until a verdict is certain), healthy again after a window of
 * at least crc_min_frames frames at or under it (docs/lofamo.md). max_hops: a delivered packet
 * with more hops is counted as misrouted (recorded, not a fault by itself).
 */
struct dnp_lfm_thresholds {
	_Atomic int32_t warn[DNP_LFM_NSENSORS];
	_Atomic int32_t alarm[DNP_LFM_NSENSORS];
	_Atomic int32_t volt_warn_low, volt_alarm_low;
	_Atomic uint32_t crc_ppm;
	_Atomic uint32_t crc_min_frames;
	_Atomic uint32_t max_hops;
	uint32_t rsvd[5];
};
static_assert(sizeof(struct dnp_lfm_thresholds) == 64, "threshold registers are 64 bytes");

/* Simulated sensors: when 'on' is 1 the DFM uses 'value' instead of the real reading. */
struct dnp_lfm_sim {
	_Atomic uint32_t on;
	_Atomic int32_t value;
};

struct dnp_lfm_regs {
	/* word 0: identification (written once by dnpd before anyone maps it) */
	uint32_t magic;   /* DNP_LFM_MAGIC */
	uint16_t version; /* DNP_LFM_VERSION */
	uint16_t size;    /* sizeof(struct dnp_lfm_regs) */
	uint32_t node;    /* node id in the torus */
	uint8_t dim[3];   /* torus dimensions (1..255; 0 means 256) */
	uint8_t rsvd0;
	_Atomic uint32_t dfm_epoch; /* bumped at every dnpd start (a restarted DNP) */
	uint32_t rsvd1[3];
	/* the two watchdog registers */
	struct dnp_lfm_wd dnp;  /* DNP Watchdog Register (owner: DFM) */
	struct dnp_lfm_wd host; /* Host Watchdog Register (owner: HFM) */
	/* Remote Fault Descriptor Registers, per direction (written by the DFM) */
	struct dnp_lfm_rfd rfd[DNP_LFM_NDIRS];
	/* control registers (written by the HFM or dnpctl, read by the DFM) */
	_Atomic uint32_t t_write_ms; /* timer register: T_write < T_read */
	_Atomic uint32_t t_read_ms;
	_Atomic uint32_t mask;        /* mask register, DNP_LFM_MASK_* */
	_Atomic uint32_t timer_error; /* DFM: 1 while the timer register holds a refused pair */
	struct dnp_lfm_thresholds th;
	struct dnp_lfm_sim sim[DNP_LFM_NSENSORS];
	/* the DFM's latest raw readings, for dnpctl (m°C, mV, mW; INT32_MIN = none) */
	_Atomic int32_t reading[DNP_LFM_NSENSORS];
	uint32_t rsvd2;
	/* counters the DFM keeps (diagnostic traffic) */
	_Atomic uint64_t diag_tx, diag_rx;
};

static_assert(offsetof(struct dnp_lfm_regs, dnp) == 32, "DNP Watchdog Register at 32");
static_assert(offsetof(struct dnp_lfm_regs, host) == 64, "Host Watchdog Register at 64");
static_assert(offsetof(struct dnp_lfm_regs, rfd) == 96, "Remote Fault Descriptors at 96");
static_assert(offsetof(struct dnp_lfm_regs, t_write_ms) == 192, "timer register at 192");
static_assert(offsetof(struct dnp_lfm_regs, th) == 208, "thresholds at 208");
static_assert(offsetof(struct dnp_lfm_regs, sim) == 272, "simulated sensors at 272");
static_assert(sizeof(struct dnp_lfm_regs) == 328, "register block is 328 bytes");

#endif
