/* SPDX-License-Identifier: MIT */
/*
 * lab — a deterministic multi-node DNP torus in one process, in virtual time.
 *
 * The lab instantiates one struct dnp_engine per node of an X x Y x Z torus
 * and connects them with simulated links: each directed link has a latency
 * (time units), a bandwidth (16-byte words per time unit: a frame of L bytes
 * occupies the link for ceil(L / 16 / bw) units, at least 1) and seeded fault
 * injection (loss, a flipped bit, reordering by extra delay, duplication).
 * Time is an integer (one unit = one cycle of the modelled link); nothing
 * reads a clock, so a run is reproducible from its configuration and seed.
 *
 * The simulation is event driven: a binary heap holds frame arrivals and node
 * wake-ups. At each instant the lab delivers the arrivals (dnp_engine_rx),
 * then, for every node touched, runs the engine, polls port 0's events,
 * submits the node's next commands, and sends at most one frame on every
 * idle link (dnp_engine_tx_burst, copied because the engine reuses it). Time
 * then jumps to the next event or engine deadline.
 *
 * Traffic: every node opens port 0, registers one PUT-target buffer and
 * submits PUT commands from a pattern (all-to-all, nearest neighbour,
 * hotspot, uniform random, shift). Application memory is simulated: the
 * source bytes of a message are a pseudo-random function of (src, dst,
 * message index, offset), generated when the engine reads them; the target
 * memory compares every byte the engine writes against the same function and
 * counts it, so every byte is verified without holding 64 x 63 MiB in RAM.
 * Accesses outside the arenas fail with -EFAULT. Verification: every RX
 * event matches exactly one expected message, all its bytes were written
 * correctly and exactly once, its hop count equals dnp_torus_distance; every
 * command gets exactly one completion, with status 0 unless errors are
 * allowed (e.g. a silenced link).
 *
 * Progress: if no packet is delivered and no command completes for
 * 'stall_limit' time units while some engine still holds work, the run stops
 * with -EDEADLK.
 *
 * Memory: dnp_lab_create allocates everything the run needs except frame
 * slots, which are pooled and reused (the pool grows to the peak number of
 * frames in flight). One thread owns a lab.
 */
#ifndef DNP_LAB_H
#define DNP_LAB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "engine.h"

#define DNP_LAB_MAX_SIZES 16u
#define DNP_LAB_MAX_FAULTS 256u

/*
 * Scheduled failures (docs/lab.md, "Failures and repairs"): at time 'at',
 * CUT the cable behind (node, dir) (frames both ways are lost until MEND),
 * or KILL a node (its engine is gone; frames to it are lost) and REVIVE it
 * (a fresh engine, as a restarted daemon). Messages whose source or target
 * is ever killed are excused: whatever happens to them is counted, not
 * verified. Commands of live endpoints that fail because of a failure
 * (-ENOLINK, -EHOSTUNREACH, -ETIMEDOUT, -ECONNRESET) are submitted again
 * after retry_delay, as an application would, so that every message whose
 * endpoints stayed alive must in the end be delivered byte-exact. With
 * failures set, a hop count above the torus distance is a detour (counted),
 * not an error.
 */
enum dnp_lab_fault_kind {
	DNP_LAB_CUT = 0,
	DNP_LAB_MEND = 1,
	DNP_LAB_KILL = 2,
	DNP_LAB_REVIVE = 3,
};

struct dnp_lab_fault {
	uint64_t at;
	uint32_t node;
	uint8_t dir;  /* CUT, MEND */
	uint8_t kind; /* enum dnp_lab_fault_kind */
};

enum dnp_lab_pattern {
	DNP_LAB_ALL_TO_ALL = 0, /* every node to every other node */
	DNP_LAB_NEIGHBOUR = 1,  /* every node to each distinct neighbour */
	DNP_LAB_HOTSPOT = 2,    /* every node to node 'hotspot' */
	DNP_LAB_RANDOM = 3,     /* every node 'count' messages to uniform random others */
	DNP_LAB_SHIFT = 4,      /* every node to (x+sx, y+sy, z+sz) */
};

/*
 * One message of an explicit traffic plan (conf.plan, used by the sweep,
 * dnp-core/lab/lab_sweep.c): a PUT of size bytes from src to dst (src !=
 * dst), submitted no earlier than time 'release'. Per source, releases must
 * not decrease along the plan (messages are submitted in plan order).
 */
struct dnp_lab_plan_msg {
	uint32_t src, dst, size;
	uint64_t release;
	uint8_t tc; /* its class, 0..7 (0: conf.tc) */
};

struct dnp_lab_conf {
	struct dnp_torus torus;
	/* engine settings (from dnp_engine_conf_default). link.rto, credit_timeout
	 * and init_timeout left 0 are derived from latency, bw, C and the FIFO by
	 * dnp_lab_create; stall_limit 0 likewise. */
	struct dnp_link_conf link;
	uint8_t vc_mode;       /* enum dnp_vc_mode */
	uint8_t routing;       /* enum dnp_routing: DOR (default) or adaptive (3+ VCs) */
	uint32_t max_commands; /* outstanding commands per node */
	uint32_t event_queue;
	uint64_t cmd_timeout;
	/* simulated links */
	uint64_t latency; /* time units from the end of serialisation to arrival */
	uint32_t bw;      /* words per time unit, >= 1 */
	double loss, corrupt, dup, reorder; /* per frame probabilities, 0..1 */
	uint64_t seed;
	/* one silenced direction: frames sent by node silence_node on silence_dir at
	 * or after silence_at are dropped (silence_node < 0: none) */
	int silence_node;
	unsigned silence_dir;
	uint64_t silence_at;
	bool allow_errors; /* completions with errors are counted, not failures */
	/* scheduled failures and repairs (see above), and the resubmission delay
	 * (0: derived from the link timers when failures are set) */
	struct dnp_lab_fault faults[DNP_LAB_MAX_FAULTS];
	unsigned nfaults;
	uint64_t retry_delay;
	/* bytes delivered per window of this many time units (0: not kept) */
	uint64_t timeline;
	/* traffic */
	enum dnp_lab_pattern pattern;
	uint32_t sizes[DNP_LAB_MAX_SIZES];
	unsigned nsizes;
	unsigned count;   /* repetitions (random: messages per node per size) */
	unsigned hotspot; /* node id */
	int shift[3];
	/* explicit plan (NULL: the pattern above): replaces pattern, sizes and
	 * count; the caller keeps it alive until dnp_lab_create returns */
	const struct dnp_lab_plan_msg *plan;
	uint32_t nplan;
	/* run control */
	uint64_t max_time;    /* stop with -ETIME after this */
	uint64_t stall_limit; /* no progress for this long -> -EDEADLK */
	bool verbose;         /* report each verification error (first few) on stderr */
	/* self-test of the verifier: flip one byte of the n-th memory write the
	 * engine makes (1-based; 0 = never), as a broken memory path would */
	uint64_t tamper_write;
	/* congestion management (engine.h): enum dnp_congestion, and
	 * the engine's cg_threshold (words) and cg_window (packets), 0: defaults */
	uint8_t congestion;
	uint32_t cg_threshold, cg_window;
	/*
	 * Traffic classes (docs/lab.md, "Traffic classes"): the engines'
	 * arbitration (enum dnp_arbitration, arb.h; 0 off), the class of the
	 * pattern's (or plan's) messages, and a ping-pong flow beside them:
	 * pp_count messages of pp_size bytes in class pp_tc, pp_a -> pp_b, then
	 * pp_b -> pp_a, and so on, each submitted when the one before it
	 * arrived (the first at time 0); pp_count 0: none.
	 */
	uint8_t arbitration;
	uint8_t tc;
	uint8_t pp_tc;
	uint32_t pp_count, pp_size, pp_a, pp_b;
	/*
	 * Collectives (lab_coll.c, docs/lab.md "Collectives"): coll_op
	 * (DNP_OP_ALLREDUCE, DNP_OP_BARRIER, DNP_OP_BCAST; 0: none) replaces the
	 * traffic: port 0 of every node joins one group of all nodes (rank =
	 * node id) and runs coll_count collectives of coll_size bytes (allreduce:
	 * int64 sums, rounded down to whole elements, at least one; broadcast:
	 * from rank 0), each member starting its next one when its last ended.
	 * Every result is checked against the sum (or the root's bytes).
	 */
	uint8_t coll_op;
	uint32_t coll_size;
	unsigned coll_count;
	/*
	 * Top-class latency remedies (engine.h arb_low_payload and
	 * arb_top_reserve; docs/lab.md, "Traffic classes"), with arbitration
	 * on: the largest payload of a low-class packet (bytes, 0: 4096) and the
	 * words of each VC FIFO kept for the top class (0: none).
	 */
	uint16_t low_payload;
	uint16_t top_reserve;
	/* h-dl: the engines' buffer credits per input VC (engine.h rx_bufs; 0: the default) */
	uint32_t rx_bufs;
	/*
	 * Host-based collectives (lab_coll.c; docs/lab.md, "Host-based
	 * collectives in the lab"). coll_host: coll_op runs as the hosts run
	 * it, not in the engines: each node's application submits PUTs of a
	 * 64-byte header and the payload (Presto's eager message) and reduces
	 * in software, on its RX_PUT events. coll_host_alg 0: Presto's
	 * algorithms (presto/presto_hcoll.h: allreduce = binomial reduce to
	 * rank 0, then binomial broadcast; broadcast: binomial tree from rank
	 * 0; barrier: dissemination); 1: allreduce by recursive doubling (the
	 * number of nodes a power of two). The host's costs, in time units:
	 * host_event from an event posted to the application acting on it
	 * (hand-off, wake-up, handling; one per RX event, one CPU per node),
	 * host_reduce_kib to reduce 1 KiB (pro rata, at least 1 per reduction
	 * when set). No faults with coll_host.
	 */
	bool coll_host;
	uint8_t coll_host_alg;
	uint64_t host_event;
	uint64_t host_reduce_kib;
	/*
	 * The daemons' experiment, run in the lab (h-lab30; docs/lab.md, "The
	 * daemons' experiment"). pp_start: the ping-pong flow's first message
	 * is submitted no earlier than this time (0: at time 0), as a program
	 * started once the bulk is under way. pp_warmup: its first pp_warmup
	 * messages are not measured (dnp_pingpong --warmup W is 2W messages).
	 * app_window: at most this many of a node's pattern (or plan) messages
	 * outstanding, submitted but not completed, as dnp_alltoall --window
	 * (0: only max_commands limits; not with faults). a2a_order: the
	 * all-to-all's submission order, 0 rotated (for each repetition and
	 * size, destinations src+1, src+2, ...), 1 by destination, as
	 * dnp_alltoall sends (destinations by id, each one's count x sizes
	 * messages in a row). pp_measure_all: the ping-pong's messages after
	 * the rest of the traffic ended are measured too, as dnp_pingpong
	 * measures every round trip after its warm-up (false: only those
	 * that arrived while the rest still ran).
	 */
	uint64_t pp_start;
	uint32_t pp_warmup;
	uint32_t app_window;
	uint8_t a2a_order;
	bool pp_measure_all;
};

/* Per directed link (node, dir). */
struct dnp_lab_link_info {
	bool present;
	uint64_t busy; /* time units spent serialising frames */
	uint64_t frames, bytes;
	uint64_t lost, corrupted, duplicated, reordered, silenced;
	uint64_t
		broken_at; /* first time the sender's engine reported BROKEN, UINT64_MAX if never */
};

struct dnp_lab_result {
	int status;    /* 0, -EIO (verification), -EDEADLK, -ETIME */
	uint64_t time; /* virtual time at the end */
	uint64_t events_processed;
	uint64_t messages, bytes;
	uint64_t completions_ok, completions_err, rx_events;
	uint64_t verify_errors; /* any mismatch, missing/extra event, bad hop count */
	uint64_t byte_mismatches, bad_hops, double_completions, unknown_events;
	uint64_t err_nolink, err_other;
	uint64_t pending_at_end;
	/* latency of commands, submit -> completion, time units */
	uint64_t lat_min, lat_median, lat_p99, lat_max;
	double lat_mean;
	/* faults injected on all links; *_seq: on sequenced (data) frames;
	 * duplicated_seq: duplicates of a data frame whose two copies arrived intact
	 * (one of them must be dropped as a duplicate or after a gap) */
	uint64_t lost, lost_seq, corrupted, corrupted_seq, duplicated, duplicated_seq;
	uint64_t reordered, silenced;
	/* sequenced frames of which no copy arrived intact (each forces a retransmission) */
	uint64_t undelivered_seq;
	uint64_t rx_rejected_crc,
		rx_rejected_other; /* dnp_engine_rx returned -EILSEQ / another error */
	/* failures: events applied, frames lost to cut cables or dead nodes,
	 * commands resubmitted, messages that arrived by a longer path, and
	 * messages excused (an endpoint was killed) */
	uint64_t faults_applied, cut_frames, retries, detoured, excused;
	uint64_t last_route_change; /* when a node last adopted a cable state */
	/* sums of every node's engine and link counters */
	struct dnp_engine_stats engine;
	struct dnp_link_stats link;
	/*
	 * The ping-pong flow (conf.pp_count): its messages that arrived
	 * (pp_all), those of them that arrived while the rest of the traffic
	 * still ran (pp_msgs; all of them when there is no other traffic), and
	 * the one-way latency of those (submission -> RX event at the target),
	 * time units; pp_end: when its last message arrived; pp_bulk_end: when
	 * the last other message completed (0: none). With conf.pp_warmup, the
	 * first pp_warmup messages count in pp_all only; with
	 * conf.pp_measure_all, pp_msgs counts those after the rest ended too.
	 */
	uint64_t pp_all, pp_msgs, pp_lat_median, pp_lat_p99, pp_lat_max, pp_end, pp_bulk_end;
	/*
	 * Collectives (conf.coll_op): completed and failed, each member's time
	 * from submitting one to its completion (median and maximum over every
	 * member and collective, join excluded), and the time from the first
	 * submission of the first collective to the last completion of the last,
	 * divided by coll_count.
	 */
	uint64_t coll_done, coll_failed, coll_lat_median, coll_lat_max;
	double coll_per_op;
};

/* Lab defaults: hardware-like link (bw 1, latency 35, C 35, 512-word FIFO, T_RED 506). */
void dnp_lab_conf_default(struct dnp_lab_conf *c);
/* Parses "1,4097,1M" (dnp_parse_sizes: K, M, G suffixes; each at most 4 GiB - 1)
 * into c->sizes. -EINVAL / -E2BIG (more than DNP_LAB_MAX_SIZES). */
int dnp_lab_parse_sizes(const char *s, struct dnp_lab_conf *c);
const char *dnp_lab_pattern_name(enum dnp_lab_pattern p);
/*
 * The traffic-class options of the lab (dnp-lab's long names): "arbitration"
 * off|strict|wrr, "tc" N, "pingpong" A,B (node ids; also sets pp_count 100,
 * pp_size 8 and pp_tc 7 unless given), "pingpong-count" N,
 * "pingpong-size" BYTES, "pingpong-tc" N, "pingpong-start" T (time units),
 * "pingpong-warmup" N (messages),
 * "pingpong-measure" during|all, "low-payload" BYTES (16..4096, a
 * multiple of 16), "top-reserve" WORDS. Classes 0..7.
 * Errors: -EINVAL (bad value or unknown name).
 */
int dnp_lab_class_opt(struct dnp_lab_conf *c, const char *name, const char *arg);
/* -EINVAL if unknown. */
int dnp_lab_pattern_parse(const char *s, enum dnp_lab_pattern *p);
/*
 * Parses one failure, "cut@T:X,Y,Z:DIR", "mend@T:X,Y,Z:DIR", "kill@T:X,Y,Z"
 * or "revive@T:X,Y,Z" (DIR xp|xm|yp|ym|zp|zm), and appends it to c.
 * Errors: -EINVAL syntax or outside c->torus; -E2BIG too many.
 */
int dnp_lab_fault_parse(const char *s, struct dnp_lab_conf *c);
/*
 * Appends 'cuts' random cable cuts and 'kills' random node deaths, each
 * starting at a random time in [0, t_end) and repaired (MEND, REVIVE) after
 * a random time up to t_end / 2, from seed. A node is killed at most once,
 * and never while another kill is unrepaired.
 * Errors: -E2BIG too many; -EINVAL t_end 0 or a torus without cables.
 */
int dnp_lab_random_faults(struct dnp_lab_conf *c, unsigned cuts, unsigned kills, uint64_t t_end,
			  uint64_t seed);

struct dnp_lab;
#define DNP_LAB_TIMELINE_MAX 65536u
/* The timeline (conf.timeline): *out points at n windows of delivered bytes. */
unsigned dnp_lab_timeline(const struct dnp_lab *lab, const uint64_t **out);

/* Errors: -EINVAL (bad conf), -ENOMEM, or an engine error. */
int dnp_lab_create(const struct dnp_lab_conf *c, struct dnp_lab **out);
void dnp_lab_destroy(struct dnp_lab *lab);
/* Runs to completion, deadlock or max_time. Returns result->status. */
int dnp_lab_run(struct dnp_lab *lab);
const struct dnp_lab_result *dnp_lab_result(const struct dnp_lab *lab);
/* Human-readable report, or CSV sections when csv. */
void dnp_lab_report(const struct dnp_lab *lab, FILE *f, bool csv);

/* One message of the traffic pattern (index = the command's cookie - 1). */
struct dnp_lab_msg_info {
	uint32_t src, dst;
	uint32_t size;
	int status; /* completion status (0 or negative errno); 1 = no completion yet */
	unsigned completions, rx_events;
	uint64_t written;              /* bytes the target's memory saw written */
	uint64_t submitted, completed; /* times; UINT64_MAX if not (yet) */
	uint64_t released, received;   /* plan release (0 without a plan), first RX event */
};

uint32_t dnp_lab_nodes(const struct dnp_lab *lab);
uint32_t dnp_lab_messages(const struct dnp_lab *lab);
/* -ERANGE if i >= dnp_lab_messages(). */
int dnp_lab_msg_info(const struct dnp_lab *lab, uint32_t i, struct dnp_lab_msg_info *out);
struct dnp_engine *dnp_lab_engine(struct dnp_lab *lab, uint32_t node);
void dnp_lab_link_info(const struct dnp_lab *lab, uint32_t node, unsigned dir,
		       struct dnp_lab_link_info *out);
uint64_t dnp_lab_now(const struct dnp_lab *lab);

/*
 * Link-efficiency experiment (dnp-core/lab/efficiency.c). rule: enum dnp_start_rule;
 * fifo_x: FIFO depth as a multiple of the hardware's 512 words.
 */
int dnp_lab_efficiency_main(int argc, char **argv);
int dnp_lab_efficiency_run(int rule, unsigned fifo_x, double *measured, double *model);
/* Collectives (lab_coll.c): the figures of a run with conf.coll_op, one line each, to f. */
void dnp_lab_coll_report(const struct dnp_lab *lab, FILE *f);
/* Synthetic-pattern sweep (dnp-core/lab/lab_sweep.c, docs/lab.md "Sweep"): exit status. */
int dnp_lab_sweep_main(int argc, char **argv);

#endif
