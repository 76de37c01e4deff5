/* SPDX-License-Identifier: MIT */
/*
 * dnpd — the node daemon: configuration, application sessions and the poll
 * loop that drives one struct dnp_engine (docs/dnpd.md).
 *
 * Modules of the daemon (private to dnp-core/dnpd/):
 *   conf     command line and INI topology file -> struct dnpd_conf (parsed
 *            once at start-up; nothing reads the environment afterwards);
 *   sess     the Unix socket, application sessions (shared rings, heap,
 *            control requests) and dnpctl connections; engine calls are made
 *            through struct dnpd_sess_ops so tests can run it without one;
 *   place    CPU pinning and NUMA memory binding;
 *   lfm      the LO|FA|MO fault manager's driver (below the rest: it sees
 *            the daemon only through struct dnpd_diag_hook);
 *   dnpd.c, io.c, mem.c, ctl.c, wire.c   engine, links, memory operations,
 *            dnpctl's report, wiring, the poll loop, idle policy
 *            (dnpd_int.h describes each).
 *
 * Threads: everything runs on the daemon's single polling thread; the only
 * cross-thread object is the stop flag set from signal handlers.
 */
#ifndef DNPD_H
#define DNPD_H

#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "dnp_abi.h"
#include "dnp_session.h"
#include "ring.h"
#include "torus.h"

enum dnpd_idle {
	DNPD_IDLE_ADAPTIVE = 0, /* spin, then sched_yield, then sleep on the doorbell */
	DNPD_IDLE_BUSY = 1,     /* spin forever */
};

#define DNPD_ADDR_MAX 256
#define DNPD_UDP_BASE_DEFAULT 47000u
/*
 * Every command completes: a command whose completion report is lost fails
 * with -ETIMEDOUT this long after its submission (--cmd-timeout-ms).
 */
#define DNPD_CMD_TIMEOUT_MS_DEFAULT 30000u

/* Which fields were given (command line or config file). */
#define DNPD_HAS_TORUS 0x1u
#define DNPD_HAS_COORD 0x2u
#define DNPD_HAS_RUNDIR 0x4u

struct dnpd_conf {
	unsigned has;
	struct dnp_torus torus;
	struct dnp_coord self;
	char run_dir[PATH_MAX];
	char socket[PATH_MAX]; /* application socket ("" = RUN_DIR/node-<id>.sock) */
	char transport[16];    /* "shm" (default), "udp" or "dpdk" */
	char eal[512];         /* dpdk: EAL arguments ("" = the backend's init_default) */
	char topts[256];       /* verbs: backend options "dev=..,gid=..,qp=.." or "" */
	bool dpdk_memif;       /* dpdk links default to memif sockets in run_dir */
	unsigned udp_base_port;
	enum dnpd_idle idle;
	int cpu;                    /* -1: no pinning */
	int log_level;              /* enum dnp_log_level: 0 errors .. 3 debug; default 1 */
	uint64_t credit_period_us;  /* 0: the engine's default */
	uint64_t credit_timeout_ms; /* 0: the engine's default */
	uint64_t heap_default;      /* session heap when the app asks none */
	uint64_t cmd_timeout_ms;    /* command deadline; 0 = none */
	unsigned vcs;               /* virtual channels per link, 2..DNP_MAX_VC */
	unsigned routing;           /* enum dnp_routing: DOR (default) or adaptive (3+ VCs) */
	unsigned congestion;        /* enum dnp_congestion: off (default) or ecn */
	uint8_t arbitration;        /* enum dnp_arbitration (arb.h): off (default), strict, wrr */
	uint16_t low_payload;  /* engine arb_low_payload: low-class packet payload cap, 0 = off */
	uint16_t top_reserve;  /* engine arb_top_reserve: FIFO words kept for the top class */
	char config[PATH_MAX]; /* --config FILE or "" */
	char impair[1024];     /* --impair specs joined by ';' (transport/impair.h), or "" */
	char pcap[PATH_MAX];   /* --pcap FILE: capture every link's frames (transport/pcap.h) */
	/* Link addresses per direction; empty strings are derived (dnpd_conf_link_addr). */
	char addr_local[DNP_NDIRS][DNPD_ADDR_MAX];
	char addr_remote[DNP_NDIRS][DNPD_ADDR_MAX];
	/* h-dprio: the byte-queue limit per link (transport/linkq.h), bytes; 0 = off */
	uint32_t link_queue;
	/*
	 * h-obs2: buffer credits per input VC (engine.h rx_bufs, docs/protocol.md
	 * "Buffer credits"), 1..DNP_BUFS_MAX; 0 = the engine's default (64 here)
	 */
	uint32_t rx_bufs;
};

/* ---- conf.c ---- */
void dnpd_conf_default(struct dnpd_conf *c);
/*
 * Parses argv (and the --config file it names, whose keys the command line
 * overrides), then sets up the log (common/dnp_log.h). Returns 0, 1 when --help or
 * --version was printed, or -EINVAL after printing why.
 */
int dnpd_conf_parse(struct dnpd_conf *c, int argc, char **argv);
void dnpd_conf_usage(FILE *f, const char *prog);
/* Applies one "key = value" of the topology file. 0, -EINVAL, -ENOENT (unknown key). */
int dnpd_conf_set(struct dnpd_conf *c, const char *key, const char *value);
/* Reads an INI topology file (conf_ini.c with inih, conf_noini.c without). */
int dnpd_conf_load(struct dnpd_conf *c, const char *path);
/* Fills the paths of the run directory. */
int dnpd_path(const struct dnpd_conf *c, const char *fmt_suffix, char *out, size_t len);
/*
 * The transport addresses and side for the link in direction dir (derived
 * unless the config file set them). Link naming is documented in docs/dnpd.md.
 */
int dnpd_conf_link_addr(const struct dnpd_conf *c, unsigned dir, char *local, char *remote,
			size_t len, unsigned *side, char *peer_bell, size_t bell_len);

/* ---- log: common/dnp_log.h's format, level and node (set by dnpd_conf_parse) ---- */
void dnpd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define DNPD_ERR 0
#define DNPD_WARN 1
#define DNPD_INFO 2
#define DNPD_DEBUG 3

/* ---- lfm.c: the LO|FA|MO DNP Fault Manager's driver ---- */
struct dnp_engine;
struct dnp_dfm;
struct dnp_lfm_regs;
/*
 * The engine has one DIAG queue; DIAGs that are not the DFM's (the daemon's
 * wiring query, wire.c) are offered to this hook first: take() returns true
 * when it consumed the payload. Keeps lfm.c below the rest of the daemon.
 */
struct dnpd_diag_hook {
	bool (*take)(void *ctx, struct dnp_coord src, const void *payload, size_t len,
		     uint64_t now);
	void *ctx;
};
struct dnpd_lfm {
	char path[PATH_MAX]; /* DIR/node-<id>.lofamo */
	struct dnp_lfm_regs *regs;
	struct dnp_dfm *dfm;
	uint8_t state[DNP_NDIRS];       /* link states last fed */
	uint64_t crc_errors[DNP_NDIRS]; /* frames dropped for a bad CRC, per link */
	/* link breaks and peer_left counts when last logged: breaks that were all leaves are info */
	uint64_t breaks[DNP_NDIRS], left[DNP_NDIRS];
	uint64_t rapl_uj, rapl_t;
	int32_t power_mw;
	bool power_ok;
	uint64_t diag_send_failed;
	uint64_t diag_dropped;      /* DIAGs that were neither the DFM's nor the hook's */
	struct dnpd_diag_hook hook; /* set after dnpd_lfm_start (which clears it) */
};
/* Maps the register block and creates the DFM. Errors of dnp_lfm_regs_map, dnp_dfm_create. */
int dnpd_lfm_start(struct dnpd_lfm *m, const struct dnpd_conf *c, struct dnp_engine *e,
		   uint64_t now);
/*
 * Slow-path work: DIAGs in (the hook's first, also when the DFM is off), DFM
 * tick when due (or a link changed), DIAGs out.
 */
void dnpd_lfm_house(struct dnpd_lfm *m, struct dnp_engine *e, uint64_t now);
/*
 * When dnpd_lfm_house next has DFM work (the DNP Watchdog Register's T_write,
 * the host's T_read, a relay): a sleeping daemon wakes for it, or the host
 * sees its DNP miss a T_write. UINT64_MAX without a DFM.
 */
uint64_t dnpd_lfm_next_deadline(const struct dnpd_lfm *m);
void dnpd_lfm_stop(struct dnpd_lfm *m);

/* ---- place.c / place_numa.c ---- */
/* Pins the calling thread to cpu (>= 0) and binds its memory to the CPU's node. */
int dnpd_place(int cpu);

/* ---- sess.c ---- */
struct dnpd_sess_ops {
	int (*port_open)(void *ctx, unsigned port);
	void (*port_close)(void *ctx, unsigned port);
	int (*reg)(void *ctx, unsigned port, uint64_t va, uint64_t len, unsigned flags,
		   uintptr_t priv, uint32_t *key);
	int (*unreg)(void *ctx, unsigned port, uint64_t va);
	/* Writes a text report (NUL-terminated, truncated to cap); returns its length. */
	size_t (*stats)(void *ctx, char *buf, size_t cap);
	/*
	 * DNP_SESS_CAPTURE: fd >= 0 starts a capture into fd (taken on success,
	 * left to the caller on error), fd < 0 stops it; *frames and *bytes get
	 * its figures. Returns 0 or a negative errno (api/abi/dnp_session.h).
	 */
	int (*capture)(void *ctx, int fd, uint64_t *frames, uint64_t *bytes);
};

/* Session limits (docs/security.md, "A hostile application"); 0 in the conf means these. */
#define DNPD_MAX_PENDING_DEFAULT 16u     /* connections still in their handshake */
#define DNPD_HANDSHAKE_MS_DEFAULT 5000u  /* to finish HELLO + ATTACH (or a first STATS) */
#define DNPD_PORT_BUFFERS_DEFAULT 1024u  /* registered buffers per port */
#define DNPD_PORT_COMMANDS_DEFAULT 2048u /* commands taken from a port's ring, not yet completed */

struct dnpd_sess_conf {
	const char *sock_path; /* created (an old socket file is replaced) */
	const char *bell_path; /* the daemon's doorbell file, passed to apps */
	struct dnp_torus torus;
	struct dnp_coord self;
	uint32_t max_ports;    /* 1..256 */
	uint64_t heap_default; /* bytes */
	uint64_t heap_max;
	bool poll_mode;         /* the daemon sleeps in poll(): apps write the eventfd */
	uint32_t max_pending;   /* connections not past their handshake; more are refused */
	uint32_t handshake_ms;  /* a connection still in its handshake after this is dropped */
	uint32_t port_buffers;  /* REGISTER beyond this many live buffers: -EDQUOT */
	uint32_t port_commands; /* a port's outstanding commands; more wait in its ring */
	const struct dnpd_sess_ops *ops;
	void *ctx;
};

/*
 * STATS request arg32 bits (dnpctl): DNPD_STATS_TORUS also asks every other
 * node's wiring over the torus and appends the answers so far ("peer" lines).
 */
#define DNPD_STATS_TORUS 0x1u

#define DNPD_CMD_BURST 32u

/* One application (port >= 0) or dnpctl (is_app false) connection. */
struct dnpd_session {
	int fd;
	bool is_app;
	bool ready;        /* handshake done: ATTACH (app) or a first STATS (dnpctl) */
	pid_t pid;         /* for process_vm_*; only trusted while pidfd says it lives */
	int pidfd;         /* the peer process at connect time, or -1 */
	uint64_t t_accept; /* CLOCK_MONOTONIC ns */
	unsigned port;
	unsigned nbufs;      /* live registered buffers */
	uint32_t inflight;   /* commands popped, completion event not yet pushed */
	uint32_t quota_cmds; /* conf.port_commands, copied at HELLO */
	uint64_t ev_lost;    /* error events that found no room (reported as DNP_EV_OVERFLOW) */
	uint64_t vm_denied;  /* process_vm_* refused (-EPERM) */
	uint64_t alive_pass; /* the daemon pass in which the pidfd last said "alive" (0: none) */
	/*
	 * Read-ahead of the app's memory outside the heap (dnpd.c, dnpd_mem_read):
	 * DNPD_READAHEAD bytes allocated at the first use, holding [ra_va, ra_va +
	 * ra_len) as read for the engine's message ra_id (struct dnp_mem_seq);
	 * used for that message's reads only.
	 */
	uint8_t *ra;
	uint64_t ra_va, ra_len, ra_id;
	/*
	 * Writes to the app's memory outside the heap, gathered (dnpd.c,
	 * dnpd_mem_write): [wb_va, wb_va + wb_len) waits in wb (DNPD_GATHER
	 * bytes, allocated at the first use) for one process_vm_writev.
	 * wb_fail[0..wb_nfail): ranges whose gathered write failed, not yet
	 * reported to the engine by a flush of a range that overlaps them.
	 */
	uint8_t *wb;
	uint64_t wb_va, wb_len;
	struct {
		uint64_t lo, hi;
	} wb_fail[4];
	unsigned wb_nfail;
	struct dnp_sess_ctl *ctl;
	size_t map_size;
	/* Private handles of the shared rings (ring.h): geometry never re-read. */
	struct dnp_ring cmd_ring, ev_ring;
	struct dnp_ring *cmd; /* &cmd_ring once the session has memory, else NULL */
	struct dnp_ring *ev;
	struct dnp_sess_cntr
		*cntrs; /* the completion counters in the session memory (write only) */
	uint8_t *heap;  /* daemon's mapping */
	uint64_t heap_size;
	uint64_t app_heap; /* app's mapping (0 until ATTACH) */
	/* Commands popped from the ring, not yet accepted by the engine (it said -EAGAIN). */
	unsigned pend_i, pend_n;
	struct dnp_cmd pend[DNPD_CMD_BURST];
	uint8_t rx[sizeof(struct dnp_sess_msg)];
	int rx_fd; /* a descriptor that came with the message in rx, or -1 */
	unsigned rx_len;
	/*
	 * CPU + 1 that the app said it polls on (app_cpu, read once) when
	 * dnpd_sess_notify last woke it, 0 when not since dnpd took it:
	 * dnpd.c then kicks a neighbour daemon pinned to that CPU.
	 */
	uint32_t woke;
};

#define DNPD_MAX_CONN 300u

struct dnpd_sess_srv {
	struct dnpd_sess_conf conf;
	char sock_path[PATH_MAX];
	int listen_fd;
	int bell_fd; /* the doorbell file, sent to apps */
	int wake_fd; /* eventfd, sent to apps, polled in poll mode */
	struct dnp_sess_bell *bell;
	unsigned nconn;
	unsigned npending; /* connections not ready yet */
	uint64_t refused, timed_out;
	uint32_t stats_arg; /* arg32 of the STATS request being answered (DNPD_STATS_*) */
	struct dnpd_session *conn[DNPD_MAX_CONN];
	struct dnpd_session *by_port[256];
	/* Ports with a session, compact, for the poll loop. */
	unsigned nports;
	uint16_t ports[256];
	struct pollfd pfd[DNPD_MAX_CONN + 1];
};

/* Errors: -errno of socket/bind/listen, -ENOMEM. */
int dnpd_sess_create(const struct dnpd_sess_conf *c, struct dnpd_sess_srv **out);
/* Marks every session closed (apps see -EIO), closes, removes the socket file. */
void dnpd_sess_destroy(struct dnpd_sess_srv *s);
/* Accepts, reads requests, drops closed sessions; never blocks. Returns requests handled. */
unsigned dnpd_sess_service(struct dnpd_sess_srv *s);
/* Descriptors to watch while sleeping (listen + connections); returns the count. */
unsigned dnpd_sess_pollfds(const struct dnpd_sess_srv *s, struct pollfd *out, unsigned max);
/*
 * Slow path: closes every session one of whose mappings the SIGBUS guard
 * caught shrinking under us (dnp_shmguard.h), with a log line. Returns how
 * many it closed.
 */
unsigned dnpd_sess_guard_check(struct dnpd_sess_srv *s);

/*
 * What HELLO does, without the socket: gives se a port (want, or
 * DNP_SESS_PORT_ANY), session memory with both rings, and a heap of 'heap'
 * bytes (0: the default); returns the port and the two memfds (the caller
 * closes them). Also used by tests/fuzz/fuzz_app.c. Errors: -EPROTO (se has
 * memory already), -EBUSY, -EINVAL (port or heap size), -errno of
 * memfd_create/ftruncate/mmap, the port_open op's errors.
 */
int dnpd_sess_setup(struct dnpd_sess_srv *s, struct dnpd_session *se, uint32_t want, uint64_t heap,
		    int *fd_map, int *fd_heap);
/* Daemon address of [va, va+len) of the session's heap, or NULL outside it. */
void *dnpd_sess_heap_addr(const struct dnpd_session *se, uint64_t va, uint64_t len);
/* After pushing events: wakes the app if it sleeps (event bell), noting its CPU in se->woke. */
void dnpd_sess_notify(struct dnpd_session *se);
/*
 * Publishes the port's completion counters whose bit is set in mask
 * (dnp_engine_cntr_take: the engine's own counts, DNP_CNTR_MAX of them) into
 * the session memory, then rings the event bell. Writes only: nothing the
 * app wrote there is read.
 */
struct dnp_engine_cntr;
void dnpd_sess_cntr_publish(struct dnpd_session *se, uint64_t mask,
			    const struct dnp_engine_cntr *vals);
/*
 * Up to max commands from the session's command ring (ring.h: bounded,
 * whatever the app wrote), and never more than the port's quota of
 * outstanding commands (conf.port_commands): each popped command counts
 * until dnpd_sess_ev_push passes its completion event (TX_DONE, GET_DONE or
 * ERROR), so the caller owes every popped command exactly one such event,
 * or takes it off se->inflight when it ended with none (dnpd_poll_cmds,
 * dnp_engine_quiet_take).
 * src_port is overwritten with the session's port.
 */
unsigned dnpd_sess_cmd_pop(struct dnpd_session *se, struct dnp_cmd *c, unsigned max);
/*
 * Room for events now (a count the next dnpd_sess_ev_push honours, whatever
 * the app writes meanwhile), minus one slot kept for a pending
 * DNP_EV_OVERFLOW report.
 */
uint32_t dnpd_sess_ev_room(struct dnpd_session *se);
/*
 * Pushes n events (n <= dnpd_sess_ev_room) and wakes the app. Before them
 * it reports earlier losses (se->ev_lost) with one DNP_EV_OVERFLOW event
 * when there is room. Events that do not fit are counted in se->ev_lost,
 * never dropped silently. Returns the events pushed.
 */
unsigned dnpd_sess_ev_push(struct dnpd_session *se, const struct dnp_event *ev, unsigned n);
/*
 * Reads or writes [va, va+len) of the session's process with
 * process_vm_readv/writev, trusting the pid only while the pidfd taken at
 * connect time says that process lives (checked before and after the call).
 * Errors: -ESRCH (the process is gone), -EPERM (no ptrace access to it:
 * docs/security.md, "Memory outside the shared heap"), -EFAULT (not mapped).
 */
int dnpd_sess_vm_io(struct dnpd_session *se, uint64_t va, void *local, size_t len, bool wr,
		    uint64_t pass);

#endif
