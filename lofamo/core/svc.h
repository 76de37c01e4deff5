/* SPDX-License-Identifier: MIT */
/*
 * svc — the LO|FA|MO service-network protocol: UDP datagrams between each
 * node's Host Fault Manager and the Fault Supervisor, separate from the
 * torus data path (EURETILE report, LO|FA|MO: service network).
 *
 *   HFM -> supervisor   HEALTH  every T_write, and at once when an alarm is
 *                               raised: the Host Watchdog status, the last
 *                               DNP Watchdog status and whether the DNP
 *                               validated it, the Remote Fault Descriptors,
 *                               and every alarm not yet acknowledged (oldest
 *                               first, at most DNP_SVC_MAX_ALARMS)
 *   supervisor -> HFM   ACK     answers every HEALTH: alarms up to 'ack' (cumulative id)
 *   dnpctl -> supervisor STATUS asks for the picture (map, JSON or event log)
 *   supervisor -> dnpctl TEXT   the answer (one datagram, truncated at DNP_SVC_TEXT_MAX)
 *
 * All fields little-endian, a 16-byte header (magic, version, type, node,
 * seq). Pure functions on caller buffers; any thread. Datagrams come from
 * the network: dnp_svc_decode checks every length and field.
 */
#ifndef DNP_SVC_H
#define DNP_SVC_H

#include <stddef.h>
#include <stdint.h>

#include "lofamo_abi.h"

#define DNP_SVC_MAGIC 0x5653464cu /* "LFSV" */
#define DNP_SVC_VERSION 1u
#define DNP_SVC_MAX_ALARMS 8u
#define DNP_SVC_TEXT_MAX 60000u
#define DNP_SVC_MAX_DGRAM (16u + DNP_SVC_TEXT_MAX)

enum dnp_svc_type {
	DNP_SVC_HEALTH = 1,
	DNP_SVC_ACK = 2,
	DNP_SVC_STATUS = 3,
	DNP_SVC_TEXT = 4,
};

/* What an HFM alarm is about. */
enum dnp_svc_alarm_kind {
	DNP_SVC_AL_DNP = 1,    /* level 1: the DNP missed its watchdog (omission), 0: back */
	DNP_SVC_AL_LINK = 2,   /* subject dir, level enum dnp_lfm_link */
	DNP_SVC_AL_SENSOR = 3, /* subject sensor, level enum dnp_lfm_level */
	DNP_SVC_AL_REMOTE = 4, /* subject dir, level enum dnp_lfm_rfd_kind, node: the neighbour */
	DNP_SVC_AL_HOST = 5,   /* subject enum dnp_lfm_hdev, level enum dnp_lfm_level */
	DNP_SVC_AL_MAX = 5,
};

struct dnp_svc_alarm {
	uint32_t id; /* per HFM, from 1, increasing */
	uint8_t kind, subject, level;
	uint32_t node;
};

/* HEALTH flags */
#define DNP_SVC_F_DNP_ALIVE 0x1u /* the DNP validated its register at the last read */
#define DNP_SVC_F_DNP_SEEN 0x2u  /* the register block exists and was validated once */

/* STATUS flags */
#define DNP_SVC_Q_JSON 0x1u
#define DNP_SVC_Q_COLOUR 0x2u
#define DNP_SVC_Q_LOG 0x4u

struct dnp_svc_msg {
	uint8_t type;
	uint32_t node, seq;
	union {
		struct {
			uint64_t host_status, dnp_status;
			uint32_t flags;
			uint16_t t_write_ms, t_read_ms;
			uint32_t epoch;
			uint64_t rfd[DNP_LFM_NDIRS];
			unsigned nalarm;
			struct dnp_svc_alarm alarm[DNP_SVC_MAX_ALARMS];
		} health;
		struct {
			uint32_t ack;
		} ack;
		struct {
			uint32_t flags;
		} status;
		struct {
			const char *text; /* points into the datagram; not NUL-terminated */
			size_t len;
		} text;
	} u;
};

/* Returns the datagram length, or -ENOBUFS (cap too small), -EINVAL (bad field). */
int dnp_svc_encode(const struct dnp_svc_msg *m, void *buf, size_t cap);
/* 0, or -EBADMSG (length, magic, version, type, counts, reserved bytes or kinds). */
int dnp_svc_decode(const void *buf, size_t len, struct dnp_svc_msg *m);

#endif
