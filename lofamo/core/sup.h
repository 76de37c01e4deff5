/* SPDX-License-Identifier: MIT */
/*
 * sup — the Fault Supervisor's state (EURETILE report, LO|FA|MO: Fault
 * Supervisor), sans-I/O: dnp-supervisor feeds it the datagrams of the
 * service network and the time; it acknowledges alarms, builds the systemic
 * picture and keeps a time-stamped event log, and renders them (torus map,
 * JSON, log). The lab can drive the very same code.
 *
 * The picture, per node: its host, its DNP, each of its links and sensors,
 * and how the supervisor knows (the report path):
 *   service    the node's own HFM said so over the service network;
 *   relay      the node's HFM is silent, but a neighbour's DNP received DIAG
 *              packets from the node's DNP (torus relay) and its HFM
 *              reported them;
 *   inference  host and DNP silent, no relay, and every neighbour that
 *              reports sees its links to the node BROKEN: the node is dead;
 *   silence    the node's HFM stopped reporting, nothing else is known yet.
 * A report is fresh for 'silence_ms' after it arrived.
 *
 * The supervisor's own lateness: when it is called (a datagram or a tick)
 * more than 'stall_ms' after its previous call, it was off the CPU, and the
 * reports that arrived meanwhile still wait in its socket. The time it was
 * away is not held against the nodes: every node's report is taken as that
 * much younger, so nobody turns silent for the supervisor's own stall, and a
 * node that really died is declared at most the stall's length later. This
 * is the late-reader rule of the mutual watchdog, on the service network.
 *
 * Time: every now_ms is the caller's monotonic clock (dnp-supervisor:
 * CLOCK_MONOTONIC; the lab: virtual time). Silences, stalls and freshness are
 * measured on it only, and a now_ms earlier than a report's arrival counts
 * as no age (never a silence). The wall clock only stamps: events and the
 * JSON picture carry now_ms + the offset given to dnp_sup_wall (0 by
 * default), so a wall clock stepped back or forth moves the stamps and
 * nothing else.
 *
 * A hierarchy (docs/lofamo.md, "A hierarchy of supervisors"). A group
 * supervisor (conf group_count > 0) takes HEALTH from its nodes only, acks
 * them and runs these rules for them as a flat one would; dnp_sup_agg() then
 * gives the AGG datagrams for the top: every node whose report changed since
 * it was last forwarded, every node heard after dnp_sup_agg_digest(), and the
 * HFM alarms the top has not acknowledged (dnp_sup_agg_ack). The top is a
 * plain supervisor that also takes AGG: each record stands for the node's
 * HEALTH, heard age_ms before the AGG came, so the top's silence, relay and
 * inference rules run on the whole torus as they would on direct reports.
 * A group whose AGGs stop for silence_ms is logged silent, and its nodes turn
 * silent as their reports age: never healthy on stale news.
 *
 * Memory: allocated by dnp_sup_create; the event log is a ring of
 * DNP_SUP_LOG entries; the last picture served in pages is kept until the
 * next first page. One thread.
 */
#ifndef DNP_SUP_H
#define DNP_SUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "svc.h"
#include "torus.h"

enum dnp_sup_host {
	SUP_H_UNKNOWN,
	SUP_H_OK,
	SUP_H_WARN,
	SUP_H_FAULTY,
	SUP_H_SILENT,
	SUP_H_DEAD
};
enum dnp_sup_dnp {
	SUP_D_UNKNOWN,
	SUP_D_OK,
	SUP_D_FAULTY,
	SUP_D_DEAD
};
enum dnp_sup_path {
	SUP_P_NONE,
	SUP_P_SERVICE,
	SUP_P_RELAY,
	SUP_P_INFERENCE,
	SUP_P_SILENCE
};

struct dnp_sup_node {
	uint8_t host, dnp, path;          /* enum dnp_sup_host / _dnp / _path */
	uint8_t link[DNP_LFM_NDIRS];      /* enum dnp_lfm_link, as best known */
	uint8_t sensor[DNP_LFM_NSENSORS]; /* enum dnp_lfm_level */
	uint8_t hdev[DNP_LFM_NHDEV];      /* host devices, enum dnp_lfm_level */
	/* last report */
	bool heard;
	uint64_t last_ms;
	struct dnp_svc_msg last;
	uint32_t next_alarm; /* alarms below this id were logged and acked */
	uint64_t msgs;
	uint32_t group; /* top: the first node of the group that last reported it, +1 (0: none) */
};

#define DNP_SUP_LOG 4096u
struct dnp_sup_event {
	uint64_t t_ms;
	uint32_t node;
	uint8_t path;
	char what[48];
};

struct dnp_sup_conf {
	struct dnp_torus torus;
	uint64_t silence_ms; /* > 0 */
	uint64_t stall_ms;   /* 0: no stall rule; dnp-supervisor uses T_write */
	/* A group supervisor: its nodes group_first .. +group_count-1 (count 0: flat or top). */
	uint32_t group_first, group_count;
	uint32_t group_incarnation; /* random, non-zero: this run of the group supervisor */
};

struct dnp_sup;

/* Errors: -EINVAL, -ENOMEM. */
int dnp_sup_create(const struct dnp_sup_conf *c, uint64_t now_ms, struct dnp_sup **out);
void dnp_sup_destroy(struct dnp_sup *s);
/*
 * A datagram from the service network. For a HEALTH, writes the ACK to send
 * back into reply and returns its length; 0 when nothing is to be answered.
 * Errors: -EBADMSG (does not decode), -ERANGE (node outside the torus),
 * -EPROTO (a type the supervisor does not take), -EALREADY (a HEALTH not
 * newer than the last one of the same HFM incarnation: late or replayed).
 * A flat or top supervisor also takes AGG (answered with an ACK; -ERANGE
 * when the group reaches past the torus, -EALREADY when not newer than the
 * last of the group's incarnation); a group supervisor refuses HEALTH from
 * outside its group (-ERANGE) and AGG (-EPROTO).
 */
int dnp_sup_on_msg(struct dnp_sup *s, const void *buf, size_t len, uint64_t now_ms, void *reply,
		   size_t cap);
/* Re-derives the picture at now_ms (silence, relay, inference), logging changes. */
void dnp_sup_tick(struct dnp_sup *s, uint64_t now_ms);
/* The wall clock minus the clock of now_ms, in ms: what event stamps add (see above). */
void dnp_sup_wall(struct dnp_sup *s, int64_t wall_minus_now_ms);
/*
 * A decoded STATUS query: writes the answer into reply and returns its
 * length. Without DNP_SVC_Q_PAGED one TEXT with the whole picture, or, when
 * it exceeds DNP_SVC_TEXT_MAX, a short answer that is still well-formed (JSON:
 * an object with "error" and "bytes"). With it, the PAGE at the asked offset
 * of a picture rendered at offset 0 and kept for the later pages (svc.h,
 * struct dnp_svc_pages). Errors: -EPROTO (not a STATUS), -ERANGE (offset past
 * the picture), -ENOMEM, dnp_svc_encode's.
 */
int dnp_sup_on_status(struct dnp_sup *s, const struct dnp_svc_msg *q, uint64_t now_ms, void *reply,
		      size_t cap);

const struct dnp_sup_node *dnp_sup_node(const struct dnp_sup *s, uint32_t id);
/* Events logged so far (monotonic count) and the i-th (NULL once overwritten). */
uint64_t dnp_sup_nevents(const struct dnp_sup *s);
const struct dnp_sup_event *dnp_sup_event(const struct dnp_sup *s, uint64_t i);
/* Counters: HEALTH datagrams taken, alarms acknowledged, bad datagrams. */
void dnp_sup_counts(const struct dnp_sup *s, uint64_t *msgs, uint64_t *alarms, uint64_t *bad);
/* The supervisor's own stalls (calls more than stall_ms apart) and their total length. */
void dnp_sup_stalls(const struct dnp_sup *s, uint64_t *count, uint64_t *total_ms);

/*
 * Group side. The next AGG for the top at now_ms: its length, 0 when nothing
 * is left to send this round (call until 0), or dnp_svc_agg_start's errors;
 * -EPROTO when the supervisor is not a group's.
 */
int dnp_sup_agg(struct dnp_sup *s, uint64_t now_ms, void *buf, size_t cap);
/* The next dnp_sup_agg calls carry every node heard, and resend unacknowledged alarms. */
void dnp_sup_agg_digest(struct dnp_sup *s);
/*
 * The top's ACK of an AGG: alarms up to its 'ack' are taken. 0, or -EPROTO
 * (not an ACK of this group supervisor's incarnation).
 */
int dnp_sup_agg_ack(struct dnp_sup *s, const struct dnp_svc_msg *ack, uint64_t now_ms);
/* Group side: alarms queued, dropped (the queue was full: the top unreachable). */
void dnp_sup_agg_counts(const struct dnp_sup *s, uint64_t *queued, uint64_t *dropped);

/* Top side: one group as heard (first node, size, silent or not, AGGs taken). */
struct dnp_sup_group {
	uint32_t first, count;
	bool silent;
	uint64_t last_ms, aggs;
};
/* The i-th group heard so far (in order of first node), false past the last. */
bool dnp_sup_group(const struct dnp_sup *s, unsigned i, struct dnp_sup_group *g);

/* Renders into buf (NUL-terminated, truncated to cap); returns the length.
 * flags: DNP_SVC_Q_JSON, DNP_SVC_Q_COLOUR (map), DNP_SVC_Q_LOG. */
size_t dnp_sup_render(const struct dnp_sup *s, unsigned flags, uint64_t now_ms, char *buf,
		      size_t cap);
/* The whole rendering, never cut, in a malloc'ed *text (NUL-terminated). 0 or -ENOMEM. */
int dnp_sup_render_all(const struct dnp_sup *s, unsigned flags, uint64_t now_ms, char **text,
		       size_t *len);

const char *dnp_sup_host_name(unsigned h);
const char *dnp_sup_dnp_name(unsigned d);
const char *dnp_sup_path_name(unsigned p);

#endif
