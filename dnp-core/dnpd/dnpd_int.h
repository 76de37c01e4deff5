/* SPDX-License-Identifier: MIT */
/*
 * dnpd_int.h — what the daemon's own files share (private to dnp-core/dnpd/):
 * the daemon state (struct dnpd), its tuning constants, and the entry points
 * of its parts. Each part owns a slice of struct dnpd and touches the rest
 * only through these functions:
 *
 *   mem.c   the engine's memory callbacks (struct dnp_mem_ops): the session
 *           heap, process_vm_* read-ahead and gathered writes;
 *   ctl.c   the session callbacks (struct dnpd_sess_ops) and the report of
 *           `dnpctl stats` (engine, links, daemon, ports);
 *   wire.c  the cabling check and the torus-wide wiring query (DIAG packets,
 *           `dnpctl topo --all`);
 *   io.c    the data path of one pass: app commands in, link frames in,
 *           engine frames out (with per-link backlogs), events to the apps;
 *   dnpd.c  set-up, the poll loop and its idle policy, the slow path
 *           (sockets, carrier, .up file, impairment file, LO|FA|MO), main.
 *
 * Dependencies go one way: dnpd.c calls the others; lfm.c (the fault
 * manager's driver) knows nothing of struct dnpd and reaches the wiring query
 * through the DIAG hook it is given (dnpd.h, struct dnpd_diag_hook).
 * Everything runs on the daemon's single polling thread.
 */
#ifndef DNPD_INT_H
#define DNPD_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <time.h>

#include "dnp_yield.h"
#include "dnpd.h"
#include "doorbell.h"
#include "engine.h"
#include "impair.h"
#include "linkq.h"
#include "transport.h"

#define DNPD_BURST 32u
#define DNPD_EV_BURST 64u
#define DNPD_HOUSE_NS 100000ull       /* sockets and link checks while busy: 100 us */
#define DNPD_YIELD_NS 1000000ull      /* then sched_yield() until this much idle time */
#define DNPD_ACTIVE_NS 3000000ull     /* no real work this long: quiet */
#define DNPD_COARSE_NS 5000000ull     /* quiet: engine runs (credits) this often */
#define DNPD_FUTEX_MAX_NS 10000000ull /* futex sleep cap: new connections are not rung */
#define DNPD_POLL_MAX_NS 200000000ull /* poll() sees connections itself */
/*
 * Links without a wait fd (dpdk: no PMD here has RX interrupts) cannot wake a
 * sleeping daemon, so its sleep is capped: short while traffic was recent,
 * longer once the torus is quiet (a first frame then waits at most this
 * long; credit timeouts are 200x longer). Quiet, eight such daemons on two
 * cores wake 1600 times a second in all instead of stealing the cores from
 * the two that carry traffic. Applications still wake a daemon at once
 * (doorbell futex).
 */
#define DNPD_NOWAIT_SLEEP_NS 100000ull        /* 100 us */
#define DNPD_NOWAIT_QUIET_SLEEP_NS 5000000ull /* 5 ms */
/*
 * Two hosts (docs/performance.md, "udp in the two-host placement"): events
 * that are only completions, for an app blocked on our CPU, wait this long
 * in the engine for the data that most likely follows them (dnpd_coalesce).
 */
#define DNPD_COALESCE_NS 8000ull
/* dnpd_coalesce: the bound of its score (holds joined minus those run out) */
#define DNPD_COALESCE_SCORE 8
/* dnpd_coalesce, not holding: how long the next events count as what a hold would have joined */
#define DNPD_COALESCE_WATCH_NS (4 * DNPD_COALESCE_NS)
#define DNPD_LINK_DEPTH 256u
/*
 * Cabling check: a link is reported miswired after this many link-control
 * frames in a row from the same wrong end (160 ms of 10 ms keep-alives). A
 * few stray frames are normal while DPDK af_packet ports start (a packet
 * socket sees every interface until it is bound to its own).
 */
#define DNPD_MISWIRED_FRAMES 16u
/* Outstanding commands of the node (docs/dnpd.md, "Session limits"). */
#define DNPD_NODE_COMMANDS 16384u

/* Daemon link timing defaults (nanoseconds). */
#define DNPD_CREDIT_PERIOD_NS 10000000ull /* keep-alive: data is credited promptly */
#define DNPD_CREDIT_TIMEOUT_NS 1000000000ull
#define DNPD_RTO_NS 20000000ull
/*
 * RX FIFO of each link VC, in 16-byte words: 256 KiB. The EURETILE report
 * (torus link) found the RX LINK FIFO the limit of the link's bandwidth (512
 * words there, T_RED 506: never two 4 KiB packets in it at once) and proposed
 * four or eight times that; the engine's default, 2048 words, is the fourfold
 * one. Here a FIFO is only memory, and with 32 KiB a stream had at most seven
 * 4 KiB frames in flight before credit came back across two daemons that
 * share their CPUs with programs (docs/performance.md, "Deeper link FIFOs").
 */
#define DNPD_FIFO_WORDS 16384u
/* A credit only about our FIFO waits this long for news (engine.h: ack_delay). */
#define DNPD_ACK_DELAY_NS 100000ull
/* One process_vm_readv fetches this much of a message's source (dnpd_read_private). */
#define DNPD_READAHEAD (64u << 10)
/* One process_vm_writev writes this much of a message's target (dnpd_mem_write). */
#define DNPD_GATHER (64u << 10)
#define DNPD_MAX_RETRIES 50u
#define DNPD_RESET_PERIOD_NS 20000000ull /* a BROKEN link probes its peer this often */
/* A SEND reassembly without a new fragment this long is dropped (docs/protocol.md). */
#define DNPD_REASM_TIMEOUT_NS 5000000000ull
/* A message for a port whose event queue stays full this long fails back (-ENOSPC). */
#define DNPD_DELIVER_TIMEOUT_NS 1000000000ull

static_assert(offsetof(struct dnp_sess_bell, seq) == offsetof(struct dnp_doorbell, seq) &&
		      offsetof(struct dnp_sess_bell, sleeping) ==
			      offsetof(struct dnp_doorbell, sleeping) &&
		      offsetof(struct dnp_sess_bell, magic) ==
			      offsetof(struct dnp_doorbell, magic) &&
		      sizeof(struct dnp_sess_bell) == sizeof(struct dnp_doorbell),
	      "the session bell is the transport doorbell");

struct dnpd_link {
	bool exists;
	bool seen_up; /* up() was true once (a memif server is down until its client comes) */
	bool down_reported;
	uint64_t peer_left; /* the link's peer_left count when its state was last logged */
	uint64_t rx_resets; /* the link's rx_resets when the backend was last told (peer_reset) */
	uint8_t state;      /* last seen enum dnp_link_state */
	const struct dnp_transport_ops *ops; /* dnp_transport_impair: it wraps the backend's */
	struct dnp_transport *t;
	struct dnp_transport *backend; /* the backend's own link inside t (its counters) */
	struct dnp_impair_conf impair;
	char local[DNPD_ADDR_MAX], remote[DNPD_ADDR_MAX];
	unsigned side;
	bool guard_down; /* its shm ring file shrank under us (dnp_shmguard.h): logged, down */
	/* frames the transport did not take yet (copied: engine frames die at the next call) */
	unsigned bl_n, bl_i;
	uint32_t bl_len[DNPD_BURST];
	uint8_t *bl_data;
	uint64_t tx_frames, rx_frames, tx_backlogged, tx_errors, rx_errors, rx_dropped;
	struct dnp_linkq lq; /* --link-queue: the byte-queue limit on this link (linkq.h) */
	/* Cabling check: the last other node/direction heard on this link (docs/cluster.md). */
	bool miswired; /* seen_n reached DNPD_MISWIRED_FRAMES while not UP */
	struct dnp_coord seen;
	uint8_t seen_dir;
	unsigned seen_n; /* link-control frames from seen/seen_dir in a row */
	uint64_t miswired_frames;
	/* Handshake refusals (wire.c): the end refused, and the last one logged. */
	struct dnp_coord refused_from;
	uint8_t refused_dir;
	uint32_t refused_episode; /* of the refusal record last logged (link.h) */
	uint64_t refused_logged;  /* when (0: never) */
};

/*
 * A neighbour daemon's kick line (dnp_session.h, struct dnp_sess_kick), for
 * the pinned hand-off (dnpd.c, dnpd_kick_nbrs; docs/performance.md, "Pinned
 * hand-off"). One per neighbour node, however many links lead to it.
 */
struct dnpd_nbr {
	uint32_t id;                /* its node id */
	uint8_t dirs;               /* bit dir: a link to it (the first names its bell) */
	struct dnp_sess_kick *kick; /* its kick line, mapped, or NULL */
	int cpu;                    /* its kick line's cpu - 1 as last read, or -1 */
};

struct dnpd {
	struct dnpd_conf conf;
	struct dnp_engine *e;
	struct dnpd_link link[DNP_NDIRS];
	struct dnpd_sess_srv *sess;
	struct dnp_doorbell *bell;
	struct dnp_pcap *pcap; /* --pcap: the capture of every link, or NULL */
	bool poll_mode;
	bool nowait_links; /* some link has no wait fd: bounded sleeps (dpdk) */
	const struct dnp_transport_ops *tp_started; /* its process-wide init ran: fini at exit */
	bool up_file;
	bool tx_deferred; /* the last pass skipped its transport send */
	bool lq_held;     /* the last send found a link at its --link-queue limit */
	bool hold;        /* look a moment after a yield that ran somebody else */
	bool quick_exit;  /* the transport's threads still run: leave with _exit() */
	bool ev_here;     /* events went to an app on our CPU (dnpd_push_events) */
	int solo_cpu;     /* pinned to this CPU and no links, else -1 (dnpd_solo) */
	bool solo_spin;   /* solo, and no app polls on solo_cpu: idle passes do not yield */
	int home_cpu;     /* pinned to this CPU (links or not), else -1 (bell's home_cpu) */
	/* Pinned hand-off (dnpd_kick_*): pinned and adaptive, we kick and read kicks. */
	bool kick_on;
	struct dnp_sess_kick *kick; /* our own kick line, in the bell's file */
	uint32_t kick_seen;         /* its seq when last read */
	uint32_t kick_cpus;         /* the bell's kick_cpus as last published */
	uint64_t nbr_cpus;          /* bit c: a mapped neighbour kicks on CPU c (not ours) */
	unsigned nnbr;
	struct dnpd_nbr nbr[DNP_NDIRS];
	uint64_t nbr_next;      /* next try to map a neighbour's bell file */
	bool nbr_shares;        /* a neighbour is pinned to our own CPU */
	bool pin_poll;          /* kick_on, and an app of ours polls on a neighbour's CPU */
	unsigned pass_cmds;     /* app commands taken in this pass */
	uint64_t pin_back;      /* when our last pinned hand-off yield returned */
	uint64_t co_until;      /* dnpd_coalesce: holding events until then (0: not holding) */
	uint64_t co_events;     /* dnpd_coalesce: the engine's events count at the last push */
	uint64_t co_done;       /* dnpd_coalesce: its completions (cmds_ok + cmds_failed) then */
	uint64_t co_watch;      /* dnpd_coalesce: not holding, watching this window (0: none) */
	int co_score;           /* dnpd_coalesce: hold while >= 0 (joins +1, run-outs -1) */
	struct dnp_yield yield; /* idle passes: yield only when somebody else wants the CPU */
	bool quiet;             /* idle torus: run the engine every DNPD_COARSE_NS only */
	bool armed;             /* doorbell armed: this pass is the second look before sleeping */
	uint32_t bell_seen;     /* the doorbell's seq when armed */
	uint64_t guard_seen;    /* dnp_shmguard_total() when last looked at (dnpd_guard) */
	uint64_t quiet_next;    /* next engine run while quiet */
	char bell_path[PATH_MAX], sock_path[PATH_MAX], up_path[PATH_MAX], impair_path[PATH_MAX];
	char pid_path[PATH_MAX];      /* DIR/node-<id>.lock: our pid, flock()ed while we run */
	int pid_fd;                   /* its descriptor, or -1 */
	struct timespec impair_mtime; /* of DIR/node-<id>.impair when last applied */
	uint64_t impair_next;         /* next look at that file */
	uint64_t activity;            /* sum of engine counters that mean real traffic */
	uint64_t iters, sleeps, quiets, wakeups_timer, mem_copies, mem_vm, mem_faults, cmd_rejects;
	uint64_t holds;        /* idle passes that held the CPU instead of yielding */
	uint64_t handoffs;     /* yields to an app on home_cpu that just got events */
	uint64_t kicks;        /* neighbours told that we woke an app on their CPU */
	uint64_t kicked;       /* yields because a neighbour woke an app on our CPU */
	uint64_t pin_handoffs; /* yields right after forwarding app commands (pin_poll) */
	uint64_t pin_spins;    /* idle passes that polled on instead of yielding (pin_poll) */
	uint64_t co_holds;     /* completions held for an app blocked on our CPU (dnpd_coalesce) */
	uint64_t co_joined;    /* of the holds, ended by other events: one wake-up for both */
	uint64_t co_missed;    /* of the holds, ended by the end of the window: came late */
	uint64_t rx_after;     /* passes that sent an app's reply before reading the links */
	uint64_t mem_ra_hits;  /* reads of private memory served by a read-ahead */
	uint64_t mem_gathered; /* writes of private memory gathered into a later one */
	uint64_t start;
	struct dnpd_lfm lfm; /* LO|FA|MO DNP Fault Manager */
	/* dnpctl topo --all: the other nodes' wiring, asked over the torus (DIAG packets). */
	struct dnpd_wire_peer *wire; /* per node id; allocated at the first such request */
	uint32_t wire_seq;           /* the current query round */
	uint32_t wire_next;          /* next node id to ask in this round */
	uint64_t wire_round;         /* when the round began (0: none yet) */
	uint64_t wire_bad;           /* malformed wiring DIAGs */
};

/* CLOCK_MONOTONIC in nanoseconds: the daemon's only clock. */
static inline uint64_t dnpd_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- mem.c ---- */
extern const struct dnp_mem_ops dnpd_mem_ops; /* ctx: struct dnpd */

/* ---- ctl.c ---- */
extern const struct dnpd_sess_ops dnpd_sess_ops; /* ctx: struct dnpd */
extern const char *const dnpd_dir_names[DNP_NDIRS];
const char *dnpd_state_name(unsigned s);
/* A bounded text buffer: output beyond cap - 1 bytes is cut, always NUL-terminated. */
struct dnpd_out {
	char *buf;
	size_t cap, len;
};
void dnpd_out(struct dnpd_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- wire.c ---- */
/* The "wiring" line of the link in direction dir (dnpctl topo). */
void dnpd_wiring_line(const struct dnpd *d, struct dnpd_out *o, unsigned dir);
/* Cabling check: a link-control frame the engine refused as another link's. */
void dnpd_wiring_seen(struct dnpd *d, unsigned dir, const struct dnp_rx_frame *f);
/* A RESET frame the engine refused (its hello does not match ours): logged, rate-limited. */
void dnpd_handshake_refused(struct dnpd *d, unsigned dir, const struct dnp_rx_frame *f,
			    uint64_t now);
/* Starts or continues a round of wiring queries; 0 or an engine DIAG send error. */
int dnpd_wire_ask(struct dnpd *d, uint64_t now);
/* The "peer" lines: the other nodes' wiring answers of this round. */
void dnpd_wire_report(struct dnpd *d, struct dnpd_out *o, uint64_t now);
/* The DIAG hook for lfm.c: takes wiring DIAGs (true), leaves the DFM's (false). */
bool dnpd_wire_take(void *ctx, struct dnp_coord src, const void *payload, size_t len, uint64_t now);

/* ---- io.c: one pass of the data path; each returns the work it found ---- */
unsigned dnpd_poll_cmds(struct dnpd *d, uint64_t now);
unsigned dnpd_poll_rx(struct dnpd *d, uint64_t now);
unsigned dnpd_flush_tx(struct dnpd *d, uint64_t now);
/* Sets d->ev_here when an app that got events last polled on our CPU. */
unsigned dnpd_push_events(struct dnpd *d);

#endif
