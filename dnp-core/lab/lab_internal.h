/* SPDX-License-Identifier: MIT */
/*
 * lab_internal.h — the lab's private state, shared by its parts (lab.h is
 * the public contract):
 *
 *   lab.c          the network model: the event heap in virtual time, the
 *                  memory the engines read and write, links (flight time,
 *                  bandwidth, faults, impairments), the run loop
 *   lab_conf.c     the configuration: defaults, the parsers of patterns,
 *                  sizes and faults, random fault plans
 *   lab_traffic.c  traffic generation: the plan of messages, their bytes,
 *                  submitting them and taking their completions and arrivals
 *   lab_report.c   results: the summary of a run, counters, the report
 *
 * Single-threaded; a struct dnp_lab belongs to one caller. Nothing here is
 * visible outside the dnplab library.
 */
#ifndef DNP_LAB_INTERNAL_H
#define DNP_LAB_INTERNAL_H

#include "lab.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Every node uses the same virtual layout: its source arena and its PUT target. */
#define LAB_TX_BASE 0x100000000000ull
#define LAB_RX_BASE 0x200000000000ull
#define LAB_PORT 0u
#define LAB_MAX_FRAME_SER(bw) (((uint64_t)DNP_MAX_FRAME / DNP_WORD_BYTES + (bw)-1) / (bw))

enum {
	LAB_EV_ARRIVE = 0,
	LAB_EV_WAKE = 1,
	LAB_EV_FAULT = 2
};

struct lab_ev {
	uint64_t t;
	uint64_t seq; /* insertion order: ties break deterministically */
	uint32_t node;
	uint32_t slot; /* frame slot (ARRIVE), failure index (FAULT) */
	uint8_t kind;
	uint8_t dir; /* arrival direction at node */
};

struct lab_slot {
	uint8_t *data;
	uint32_t len;
};

/* xoshiro256** seeded with splitmix64: one stream per directed link and per node. */
struct lab_rng {
	uint64_t s[4];
};

struct lab_msg {
	uint32_t src, dst, size;
	uint8_t ncompl, nrx;
	uint8_t resolved;  /* counted out of open_msgs */
	uint8_t excused;   /* an endpoint was killed: not verified */
	uint8_t pp;        /* of the ping-pong flow: submitted when the one before arrived */
	uint8_t tc;        /* the plan's class (0: conf.tc) */
	uint16_t attempts; /* submissions after the first (failures) */
	uint64_t retry_at; /* when it may be submitted again */
	int32_t status;    /* 1 until completed */
	uint32_t mismatches;
	uint64_t seed; /* pattern of the message's bytes */
	uint64_t tx_va, rx_va;
	uint64_t written;
	uint64_t t_submit, t_done;
	uint64_t release, t_rx; /* conf.plan's release time; first RX event */
};

struct lab_link {
	bool present;
	bool silenced;
	bool cut; /* a scheduled failure: frames both ways are lost */
	uint32_t peer;
	uint64_t busy_until;
	struct lab_rng rng;
	struct dnp_lab_link_info info;
};

struct lab_node {
	struct dnp_lab *lab;
	struct dnp_engine *e;
	uint32_t id;
	struct dnp_coord c;
	uint32_t *out; /* message indices in submission order (tx_va ascending) */
	uint32_t nout, next_submit;
	uint32_t *in; /* incoming message indices, rx_va ascending */
	uint32_t nin;
	uint32_t *retry; /* failed messages to submit again, a FIFO of nout + 1 */
	uint32_t retry_head, retry_tail;
	bool dead;            /* killed: no engine */
	uint32_t incarnation; /* engines this node has had, minus one */
	uint64_t tx_size, rx_size;
	uint32_t pp_due;  /* its ping-pong message to submit now (UINT32_MAX: none) */
	uint32_t app_out; /* pattern messages submitted, not completed (conf.app_window) */
	uint32_t rx_key;
	uint64_t next_wake;
	uint64_t delivered_seen;
	uint64_t bytes_seen, routes_seen; /* engine counters already accounted for */
	bool touched;
	struct lab_link link[DNP_NDIRS];
};

struct dnp_lab {
	struct dnp_lab_conf conf;
	uint32_t n;
	struct lab_node *nodes;
	struct lab_msg *msgs;
	uint32_t nmsgs;
	uint32_t open_msgs; /* not yet completed (and received, when successful) */
	uint64_t now;
	uint64_t last_progress;
	uint64_t max_ser;
	/* event heap */
	struct lab_ev *heap;
	size_t heap_len, heap_cap;
	uint64_t ev_seq;
	/* frame slots */
	struct lab_slot *slots;
	uint32_t *free_slots;
	uint32_t nslots, nfree;
	uint32_t *touched;
	uint32_t ntouched;
	unsigned reported;
	uint64_t writes;
	unsigned faults_done; /* scheduled failures applied so far */
	uint64_t *timeline;   /* bytes delivered per conf.timeline window */
	unsigned ntimeline;   /* windows used */
	uint8_t scratch[DNP_MAX_PAYLOAD];
	struct dnp_lab_result res;
	struct lab_coll *coll; /* conf.coll_op: the collectives' state (lab_coll.c) */
};

/* lab.c */
uint64_t lab_splitmix64(uint64_t *x);
void lab_rng_seed(struct lab_rng *r, uint64_t seed);
uint64_t lab_rng_below(struct lab_rng *r, uint64_t n);
struct lab_msg *lab_msg_find(struct dnp_lab *lab, const uint32_t *list, uint32_t n, uint64_t va,
			     bool rx);
void lab_verify_fail(struct dnp_lab *lab, const char *what, uint64_t a, uint64_t b);
int lab_schedule_wake(struct dnp_lab *lab, struct lab_node *nd, uint64_t t);
uint64_t lab_pending_total(const struct dnp_lab *lab);

/* lab_traffic.c */
void lab_pattern_fill(uint64_t seed, uint64_t off, uint8_t *dst, size_t len);
uint64_t lab_pattern_check(uint64_t seed, uint64_t off, const uint8_t *src, size_t len);
void lab_plan(struct dnp_lab *lab);
void lab_touch(struct dnp_lab *lab, uint32_t id);
bool lab_poll_events(struct dnp_lab *lab, struct lab_node *nd);
bool lab_submit(struct dnp_lab *lab, struct lab_node *nd);

/* lab_coll.c: conf.coll_op replaces the traffic of lab_traffic.c */
#define LAB_COLL_BASE 0x300000000000ull /* members, source and result of every node */
int lab_coll_create(struct dnp_lab *lab);
void lab_coll_destroy(struct dnp_lab *lab);
bool lab_coll_poll(struct dnp_lab *lab, struct lab_node *nd);
bool lab_coll_submit(struct dnp_lab *lab, struct lab_node *nd);
int lab_coll_read(struct lab_node *nd, uint64_t va, void *dst, size_t len);
int lab_coll_write(struct lab_node *nd, uint64_t va, const void *src, size_t len);
void lab_coll_finish(struct dnp_lab *lab);
/* lab_report.c */
void lab_finish(struct dnp_lab *lab);

#endif
