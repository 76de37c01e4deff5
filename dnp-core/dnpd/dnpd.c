/* SPDX-License-Identifier: MIT */
/*
 * dnpd — one DNP node: the engine (dnp-core/engine.h), its virtual links
 * (transport/transport.h), application sessions (sess.c) and the poll loop
 * that drives them from a single thread, run to completion:
 *
 *   app command rings -> dnp_engine_submit
 *   transport rx_burst -> dnp_engine_rx
 *   dnp_engine_run
 *   dnp_engine_tx_burst -> transport tx_burst (copied out before the next
 *                          engine call; what the transport cannot take now
 *                          is copied to a per-link backlog and sent first)
 *   dnp_engine_poll_events -> each port's event ring (+ wake a sleeping app)
 *   every DNPD_HOUSE_NS: sockets (accept, requests, closed apps), link
 *                        carrier, the .up file
 *
 * Idle policy (docs/dnpd.md): 'busy' spins; 'adaptive' calls sched_yield()
 * on every empty pass until DNPD_YIELD_NS after the last work, then sleeps
 * on the daemon's doorbell (futex; poll() for udp links) until the engine's
 * next deadline. Once nothing but link credits happened for DNPD_ACTIVE_NS
 * the daemon is 'quiet': incoming credits are absorbed (dnp_engine_rx) but
 * the engine runs, and so sends our own credits, only every DNPD_COARSE_NS,
 * until real work shows up (a command, a frame that is not a credit, a
 * socket request). Without this, credits of 8 idle daemons wake each other
 * in a chain at every credit period (measured on 2 shared cores; docs/dnpd.md).
 * Links without a wait fd (dpdk) cannot wake the daemon: its sleeps are
 * capped at DNPD_NOWAIT_SLEEP_NS, or DNPD_NOWAIT_QUIET_SLEEP_NS when quiet.
 *
 * Time is CLOCK_MONOTONIC in nanoseconds, read once per loop iteration.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "dnp_yield.h"
#include "dnpd.h"
#include "doorbell.h"
#include "engine.h"
#include "impair.h"
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
	uint8_t state;                       /* last seen enum dnp_link_state */
	const struct dnp_transport_ops *ops; /* dnp_transport_impair: it wraps the backend's */
	struct dnp_transport *t;
	struct dnp_impair_conf impair;
	char local[DNPD_ADDR_MAX], remote[DNPD_ADDR_MAX];
	unsigned side;
	/* frames the transport did not take yet (copied: engine frames die at the next call) */
	unsigned bl_n, bl_i;
	uint32_t bl_len[DNPD_BURST];
	uint8_t *bl_data;
	uint64_t tx_frames, rx_frames, tx_backlogged, tx_errors, rx_errors, rx_dropped;
	/* Cabling check: the last other node/direction heard on this link (docs/cluster.md). */
	bool miswired; /* seen_n reached DNPD_MISWIRED_FRAMES while not UP */
	struct dnp_coord seen;
	uint8_t seen_dir;
	unsigned seen_n; /* link-control frames from seen/seen_dir in a row */
	uint64_t miswired_frames;
};

struct dnpd {
	struct dnpd_conf conf;
	struct dnp_engine *e;
	struct dnpd_link link[DNP_NDIRS];
	struct dnpd_sess_srv *sess;
	struct dnp_doorbell *bell;
	bool poll_mode;
	bool nowait_links; /* some link has no wait fd: bounded sleeps (dpdk) */
	const struct dnp_transport_ops *tp_started; /* its process-wide init ran: fini at exit */
	bool up_file;
	bool tx_deferred;       /* the last pass skipped its transport send */
	bool hold;              /* look a moment after a yield that ran somebody else */
	bool quick_exit;        /* the transport's threads still run: leave with _exit() */
	bool ev_here;           /* events went to an app on our CPU (dnpd_push_events) */
	struct dnp_yield yield; /* idle passes: yield only when somebody else wants the CPU */
	bool quiet;             /* idle torus: run the engine every DNPD_COARSE_NS only */
	bool armed;             /* doorbell armed: this pass is the second look before sleeping */
	uint32_t bell_seen;     /* the doorbell's seq when armed */
	uint64_t quiet_next;    /* next engine run while quiet */
	char bell_path[PATH_MAX], sock_path[PATH_MAX], up_path[PATH_MAX], impair_path[PATH_MAX];
	struct timespec impair_mtime; /* of DIR/node-<id>.impair when last applied */
	uint64_t impair_next;         /* next look at that file */
	uint64_t activity;            /* sum of engine counters that mean real traffic */
	uint64_t iters, sleeps, quiets, wakeups_timer, mem_copies, mem_vm, mem_faults, cmd_rejects;
	uint64_t holds;        /* idle passes that held the CPU instead of yielding */
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

static atomic_bool dnpd_stop;
static struct dnp_doorbell *dnpd_sig_bell;
static int dnpd_sig_wake_fd = -1;

static uint64_t dnpd_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void dnpd_on_signal(int sig)
{
	uint64_t one = 1;

	(void)sig;
	atomic_store_explicit(&dnpd_stop, true, memory_order_relaxed);
	/* Async-signal-safe: atomics and system calls only. */
	if (dnpd_sig_bell)
		dnp_doorbell_ring(dnpd_sig_bell);
	if (dnpd_sig_wake_fd >= 0 && write(dnpd_sig_wake_fd, &one, sizeof(one)) < 0)
		(void)0;
}

/* ------------------------------------------------------------ memory ops */

/* process_vm_* through the session's pidfd checks (sess.c); counted for dnpctl stats. */
static int dnpd_vm_io(struct dnpd *d, struct dnpd_session *se, uint64_t va, void *local, size_t len,
		      bool wr)
{
	int r;

	d->mem_vm++;
	r = dnpd_sess_vm_io(se, va, local, len, wr, d->iters);
	if (r)
		d->mem_faults++;
	return r ? -EFAULT : 0; /* the engine's contract (struct dnp_mem_ops) */
}

/*
 * A registered buffer inside the app's heap carries our mapping in priv; an
 * unregistered range may still be in the heap; anything else is another
 * process's memory, one process_vm_* call away.
 */
static void *dnpd_mem_addr(struct dnpd *d, struct dnpd_session *se, const struct dnp_buf *buf,
			   uint64_t va, size_t len)
{
	if (buf && buf->priv)
		return (uint8_t *)buf->priv + (va - buf->va);
	return dnpd_sess_heap_addr(se, va, len);
}

/*
 * Writes outside the heap are gathered: the engine writes a message one
 * packet at a time, in order, and one process_vm_writev (plus its liveness
 * checks) per 4 KiB packet was most of the cost of such a message
 * (docs/performance.md, "Private memory: one system call per 64 KiB"). A
 * write that continues the pending range [wb_va, wb_va + wb_len) is copied
 * behind it; anything else (another range, a full gather buffer, a read that
 * could see that memory, the engine's flush of a message) writes the pending
 * range first. Its failure is kept as a range in wb_fail, and the engine's
 * flush of a message whose range overlaps it fails that message (engine.h,
 * struct dnp_mem_ops): a fault is never reported as data that arrived.
 */
#define DNPD_WB_FAILS                                  \
	(sizeof(((struct dnpd_session *)0)->wb_fail) / \
	 sizeof(((struct dnpd_session *)0)->wb_fail[0]))

/* Sets the failed ranges to r[0..n): beyond the room, the last one grows to hold the rest. */
static void dnpd_wb_fails_set(struct dnpd_session *se, const uint64_t (*r)[2], unsigned n)
{
	se->wb_nfail = 0;
	for (unsigned i = 0; i < n; i++) {
		if (se->wb_nfail < DNPD_WB_FAILS) {
			se->wb_fail[se->wb_nfail].lo = r[i][0];
			se->wb_fail[se->wb_nfail++].hi = r[i][1];
			continue;
		}
		if (r[i][0] < se->wb_fail[DNPD_WB_FAILS - 1].lo)
			se->wb_fail[DNPD_WB_FAILS - 1].lo = r[i][0];
		if (r[i][1] > se->wb_fail[DNPD_WB_FAILS - 1].hi)
			se->wb_fail[DNPD_WB_FAILS - 1].hi = r[i][1];
	}
}

static void dnpd_wb_flush(struct dnpd *d, struct dnpd_session *se)
{
	if (!se->wb_len)
		return;
	if (dnpd_vm_io(d, se, se->wb_va, se->wb, se->wb_len, true)) {
		uint64_t r[DNPD_WB_FAILS + 1][2];
		unsigned n = se->wb_nfail;

		for (unsigned i = 0; i < n; i++) {
			r[i][0] = se->wb_fail[i].lo;
			r[i][1] = se->wb_fail[i].hi;
		}
		r[n][0] = se->wb_va;
		r[n][1] = se->wb_va + se->wb_len;
		dnpd_wb_fails_set(se, (const uint64_t(*)[2])r, n + 1);
	}
	se->wb_len = 0;
}

/*
 * The engine's flush (struct dnp_mem_ops): the pending writes land; -EFAULT
 * if a gathered write into [va, va + len) failed. The part of each failed
 * range that overlaps it is reported now and forgotten; the rest stays for
 * the message it belongs to.
 */
static int dnpd_mem_flush(void *ctx, unsigned port, uint64_t va, uint64_t len)
{
	struct dnpd *d = ctx;
	struct dnpd_session *se = port < 256 ? d->sess->by_port[port] : NULL;
	uint64_t end = va + len < va ? UINT64_MAX : va + len;
	uint64_t r[2 * DNPD_WB_FAILS][2];
	unsigned n = 0;
	int rc = 0;

	if (!se)
		return -EFAULT;
	dnpd_wb_flush(d, se);
	if (!se->wb_nfail)
		return 0;
	for (unsigned i = 0; i < se->wb_nfail; i++) {
		uint64_t lo = se->wb_fail[i].lo, hi = se->wb_fail[i].hi;

		if (hi <= va || lo >= end) {
			r[n][0] = lo, r[n++][1] = hi;
			continue;
		}
		rc = -EFAULT; /* reported now; what lies outside stays */
		if (lo < va)
			r[n][0] = lo, r[n++][1] = va;
		if (hi > end)
			r[n][0] = end, r[n++][1] = hi;
	}
	dnpd_wb_fails_set(se, (const uint64_t(*)[2])r, n);
	return rc;
}

/*
 * A read of the app's memory outside its heap (process_vm_readv, three system
 * calls with the liveness checks). The engine reads a message's source one
 * packet at a time, in order (a GET's responses, a PUT's packets), and says
 * which message and where it ends (struct dnp_mem_seq): one call fetches up to
 * DNPD_READAHEAD bytes of it from va on, and the message's next reads are
 * copies. A read-ahead serves only the message it was made for (a later
 * message from the same memory reads it again, as the application may have
 * changed it in between), and a write of ours into it drops it
 * (dnpd_mem_write). A read-ahead that fails (a page unmapped further on)
 * falls back to the exact read, with its own result. Pending gathered writes
 * that the read could see are written first.
 */
static int dnpd_read_private(struct dnpd *d, struct dnpd_session *se, uint64_t va, void *dst,
			     size_t len, const struct dnp_mem_seq *seq)
{
	uint64_t n = len;

	if (seq && seq->end > va && seq->end - va > len)
		n = seq->end - va > DNPD_READAHEAD ? DNPD_READAHEAD : seq->end - va;
	if (se->wb_len && se->wb_va < va + n && va < se->wb_va + se->wb_len)
		dnpd_wb_flush(d, se);
	if (seq && se->ra_len && se->ra_id == seq->id && va >= se->ra_va &&
	    va - se->ra_va <= se->ra_len && len <= se->ra_len - (va - se->ra_va)) {
		memcpy(dst, se->ra + (va - se->ra_va), len);
		d->mem_ra_hits++;
		return 0;
	}
	if (n > len) {
		if (!se->ra)
			se->ra = malloc(DNPD_READAHEAD);
		se->ra_len = 0;
		if (se->ra && dnpd_vm_io(d, se, va, se->ra, n, false) == 0) {
			se->ra_va = va;
			se->ra_len = n;
			se->ra_id = seq->id;
			memcpy(dst, se->ra, len);
			return 0;
		}
	}
	return dnpd_vm_io(d, se, va, dst, len, false);
}

static int dnpd_mem_read(void *ctx, unsigned port, const struct dnp_buf *buf, uint64_t va,
			 void *dst, size_t len, const struct dnp_mem_seq *seq)
{
	struct dnpd *d = ctx;
	struct dnpd_session *se = port < 256 ? d->sess->by_port[port] : NULL;
	void *p;

	if (!se)
		return -EFAULT;
	if (len == 0)
		return 0;
	p = dnpd_mem_addr(d, se, buf, va, len);
	if (p) {
		memcpy(dst, p, len);
		d->mem_copies++;
		return 0;
	}
	return dnpd_read_private(d, se, va, dst, len, seq);
}

static int dnpd_mem_write(void *ctx, unsigned port, const struct dnp_buf *buf, uint64_t va,
			  const void *src, size_t len)
{
	struct dnpd *d = ctx;
	struct dnpd_session *se = port < 256 ? d->sess->by_port[port] : NULL;
	void *p;

	if (!se)
		return -EFAULT;
	if (len == 0)
		return 0;
	p = dnpd_mem_addr(d, se, buf, va, len);
	if (p) {
		memcpy(p, src, len);
		d->mem_copies++;
		return 0;
	}
	if (se->ra_len && va < se->ra_va + se->ra_len && se->ra_va < va + len)
		se->ra_len = 0; /* the read-ahead no longer shows that memory */
	if (se->wb_len && (va != se->wb_va + se->wb_len || len > DNPD_GATHER - se->wb_len))
		dnpd_wb_flush(d, se);
	if (!se->wb && len <= DNPD_GATHER)
		se->wb = malloc(DNPD_GATHER);
	if (!se->wb || len > DNPD_GATHER)
		return dnpd_vm_io(d, se, va, (void *)src, len, true);
	if (!se->wb_len)
		se->wb_va = va;
	else
		d->mem_gathered++;
	memcpy(se->wb + se->wb_len, src, len);
	se->wb_len += len;
	return 0;
}

static const struct dnp_mem_ops dnpd_mem_ops = {
	.read = dnpd_mem_read,
	.write = dnpd_mem_write,
	.flush = dnpd_mem_flush,
};

/* ------------------------------------------------------- session ops */

static int dnpd_op_port_open(void *ctx, unsigned port)
{
	struct dnpd *d = ctx;

	return dnp_engine_port_open(d->e, port);
}

static void dnpd_op_port_close(void *ctx, unsigned port)
{
	struct dnpd *d = ctx;

	dnp_engine_port_close(d->e, port);
}

static int dnpd_op_reg(void *ctx, unsigned port, uint64_t va, uint64_t len, unsigned flags,
		       uintptr_t priv, uint32_t *key)
{
	struct dnpd *d = ctx;

	return dnp_engine_register(d->e, port, va, len, flags, priv, key);
}

static int dnpd_op_unreg(void *ctx, unsigned port, uint64_t va)
{
	struct dnpd *d = ctx;

	return dnp_engine_unregister(d->e, port, va);
}

static const char *const dnpd_dir_names[DNP_NDIRS] = { "X+", "X-", "Y+", "Y-", "Z+", "Z-" };

static const char *dnpd_state_name(unsigned s)
{
	switch (s) {
	case DNP_LINK_INIT:
		return "INIT";
	case DNP_LINK_UP:
		return "UP";
	case DNP_LINK_BROKEN:
		return "BROKEN";
	default:
		return "?";
	}
}

struct dnpd_out {
	char *buf;
	size_t cap, len;
};

static void dnpd_out(struct dnpd_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void dnpd_out(struct dnpd_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->len + 1 >= o->cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len = o->len + (size_t)n < o->cap ? o->len + (size_t)n : o->cap - 1;
}

/*
 * "wiring X+ expected 0,0,0 X- found 0,0,0 X- ok": the neighbour this link
 * should reach and the one it does (dnpctl topo prints these lines). An UP
 * link passed the engine's own-link check, so it reaches the expected end;
 * "found" names another end when its link-control frames were refused as
 * another link's (the link then never comes up); "-" when nothing was heard.
 * The same line describes another node's link from its wiring answer (self
 * is that node; prefix "peer <id> ").
 */
#define DNPD_WIRE_UP 0x1u       /* the link is UP */
#define DNPD_WIRE_MISWIRED 0x2u /* its frames come from 'seen', not the expected end */
#define DNPD_WIRE_EXISTS 0x4u   /* the node has a link in this direction */

static void dnpd_wiring_fmt(const struct dnp_torus *t, struct dnpd_out *o, const char *prefix,
			    struct dnp_coord self, unsigned dir, unsigned flags,
			    struct dnp_coord seen, unsigned seen_dir, uint64_t frames)
{
	struct dnp_coord p = dnp_torus_neighbour(t, self, (enum dnp_dir)dir);
	unsigned opp = (unsigned)dnp_torus_opposite((enum dnp_dir)dir);

	dnpd_out(o, "%swiring %s expected %u,%u,%u %s ", prefix, dnpd_dir_names[dir], p.x, p.y, p.z,
		 dnpd_dir_names[opp]);
	if ((flags & DNPD_WIRE_MISWIRED) && !(flags & DNPD_WIRE_UP))
		dnpd_out(o, "found %u,%u,%u %s MISWIRED frames %" PRIu64 "\n", seen.x, seen.y,
			 seen.z, dnpd_dir_names[seen_dir % DNP_NDIRS], frames);
	else if (flags & DNPD_WIRE_UP)
		dnpd_out(o, "found %u,%u,%u %s ok\n", p.x, p.y, p.z, dnpd_dir_names[opp]);
	else
		dnpd_out(o, "found - (nothing heard)\n");
}

static unsigned dnpd_wiring_flags(const struct dnpd *d, unsigned dir)
{
	const struct dnpd_link *l = &d->link[dir];
	unsigned f = l->exists ? DNPD_WIRE_EXISTS : 0;

	if (l->exists && dnp_engine_link_state(d->e, dir) == DNP_LINK_UP)
		f |= DNPD_WIRE_UP;
	else if (l->miswired && l->seen_n >= DNPD_MISWIRED_FRAMES)
		f |= DNPD_WIRE_MISWIRED;
	return f;
}

static void dnpd_wiring_line(const struct dnpd *d, struct dnpd_out *o, unsigned dir)
{
	const struct dnpd_link *l = &d->link[dir];

	dnpd_wiring_fmt(&d->conf.torus, o, "", d->conf.self, dir, dnpd_wiring_flags(d, dir),
			l->seen, l->seen_dir, l->miswired_frames);
}

/*
 * The torus-wide wiring view (dnpctl topo --all, docs/cluster.md "The
 * cabling check"): a STATS request with DNPD_STATS_TORUS makes this daemon
 * send a wiring query, a DIAG packet, to every other node; each daemon
 * answers with a DIAG carrying its six links' state and the end it heard
 * (dnpd_wiring_flags). The answers are kept per node with their arrival time
 * and printed as "peer" lines of the report; dnpctl asks again until every
 * node answered or its patience ends. DIAG packets are routed like any
 * packet: an answer whose route crosses a link that is down does not arrive,
 * which the report shows as "no answer".
 *
 * Payload (DNPD_WIRE_BYTES, multi-byte fields little-endian): 0 magic u16
 * "TW", 2 version u8 (1), 3 kind u8 (1 query, 2 answer), 4 round u32; then
 * per direction (X+ .. Z-) 9 bytes: flags u8 (DNPD_WIRE_*), heard end x, y,
 * z u8, its direction u8, refused link-control frames u32 (saturated).
 */
#define DNPD_WIRE_MAGIC 0x5754u /* "TW" */
#define DNPD_WIRE_BYTES (8u + 9u * DNP_NDIRS)
#define DNPD_WIRE_QUERY 1u
#define DNPD_WIRE_ANSWER 2u
#define DNPD_WIRE_ROUND_NS 250000000ull /* a new round of queries at most this often */

static_assert(DNPD_WIRE_BYTES <= DNP_ENGINE_DIAG_MAX, "a wiring answer fits one DIAG packet");

struct dnpd_wire_peer {
	uint64_t t; /* when its last answer arrived (0: never) */
	uint8_t link[DNP_NDIRS][9];
};

static void dnpd_wire_put32(uint8_t *p, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t dnpd_wire_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void dnpd_wire_head(uint8_t *p, unsigned kind, uint32_t round)
{
	memset(p, 0, DNPD_WIRE_BYTES);
	p[0] = DNPD_WIRE_MAGIC & 0xff;
	p[1] = DNPD_WIRE_MAGIC >> 8;
	p[2] = 1;
	p[3] = (uint8_t)kind;
	dnpd_wire_put32(p + 4, round);
}

bool dnpd_wire_is(const void *payload, size_t len)
{
	const uint8_t *p = payload;

	return len >= 2 && p[0] == (DNPD_WIRE_MAGIC & 0xff) && p[1] == DNPD_WIRE_MAGIC >> 8;
}

/* A wiring DIAG (lfm.c hands them over): answer a query, keep an answer of this round. */
void dnpd_wire_diag(void *ctx, struct dnp_coord src, const void *payload, size_t len, uint64_t now)
{
	struct dnpd *d = ctx;
	const uint8_t *p = payload;
	uint8_t out[DNPD_WIRE_BYTES];

	if (len != DNPD_WIRE_BYTES || p[2] != 1 || !dnp_torus_contains(&d->conf.torus, src) ||
	    dnp_coord_eq(src, d->conf.self)) {
		d->wire_bad++;
		return;
	}
	if (p[3] == DNPD_WIRE_QUERY) {
		dnpd_wire_head(out, DNPD_WIRE_ANSWER, dnpd_wire_get32(p + 4));
		for (unsigned dir = 0; dir < DNP_NDIRS; dir++) {
			const struct dnpd_link *l = &d->link[dir];
			uint8_t *q = out + 8 + 9 * dir;

			q[0] = (uint8_t)dnpd_wiring_flags(d, dir);
			q[1] = l->seen.x;
			q[2] = l->seen.y;
			q[3] = l->seen.z;
			q[4] = l->seen_dir;
			dnpd_wire_put32(q + 5, l->miswired_frames > UINT32_MAX ?
						       UINT32_MAX :
						       (uint32_t)l->miswired_frames);
		}
		/* -EAGAIN (no packet buffer): the asker's next round asks again. */
		(void)dnp_engine_diag_send(d->e, src, out, sizeof(out), now);
		return;
	}
	if (p[3] != DNPD_WIRE_ANSWER || !d->wire || dnpd_wire_get32(p + 4) != d->wire_seq) {
		d->wire_bad += p[3] != DNPD_WIRE_ANSWER;
		return; /* an answer to an older round, or to nothing we asked */
	}
	for (unsigned dir = 0; dir < DNP_NDIRS; dir++) {
		const uint8_t *q = p + 8 + 9 * dir;
		struct dnp_coord c = { q[1], q[2], q[3] };

		if ((q[0] & ~(DNPD_WIRE_UP | DNPD_WIRE_MISWIRED | DNPD_WIRE_EXISTS)) ||
		    ((q[0] & DNPD_WIRE_MISWIRED) &&
		     (!dnp_torus_contains(&d->conf.torus, c) || q[4] >= DNP_NDIRS))) {
			d->wire_bad++;
			return;
		}
	}
	{
		struct dnpd_wire_peer *w = &d->wire[dnp_torus_id(&d->conf.torus, src)];

		memcpy(w->link, p + 8, sizeof(w->link));
		w->t = now ? now : 1;
	}
}

/* Starts or continues a round of queries (until the engine has no packet buffer). */
static int dnpd_wire_ask(struct dnpd *d, uint64_t now)
{
	uint32_t n = d->conf.torus.dim[0] * d->conf.torus.dim[1] * d->conf.torus.dim[2];
	uint32_t self = dnp_torus_id(&d->conf.torus, d->conf.self);
	uint8_t q[DNPD_WIRE_BYTES];

	if (!d->wire) {
		d->wire = calloc(n, sizeof(*d->wire));
		if (!d->wire)
			return -ENOMEM;
	}
	if (!d->wire_round || now - d->wire_round >= DNPD_WIRE_ROUND_NS) {
		d->wire_seq++;
		d->wire_round = now;
		d->wire_next = 0;
	}
	dnpd_wire_head(q, DNPD_WIRE_QUERY, d->wire_seq);
	for (; d->wire_next < n; d->wire_next++) {
		if (d->wire_next == self)
			continue;
		if (dnp_engine_diag_send(d->e, dnp_torus_coord(&d->conf.torus, d->wire_next), q,
					 sizeof(q), now) == -EAGAIN)
			break;
	}
	return 0;
}

/* "peer <id> (x,y,z) age_ms A" and its wiring lines, or "... no answer", per other node. */
static void dnpd_wire_report(struct dnpd *d, struct dnpd_out *o, uint64_t now)
{
	uint32_t n = d->conf.torus.dim[0] * d->conf.torus.dim[1] * d->conf.torus.dim[2];
	uint32_t self = dnp_torus_id(&d->conf.torus, d->conf.self);

	for (uint32_t id = 0; id < n && d->wire; id++) {
		const struct dnpd_wire_peer *w = &d->wire[id];
		struct dnp_coord c = dnp_torus_coord(&d->conf.torus, id);
		char prefix[32];

		if (id == self)
			continue;
		if (!w->t) {
			dnpd_out(o, "peer %u (%u,%u,%u) no answer\n", id, c.x, c.y, c.z);
			continue;
		}
		dnpd_out(o, "peer %u (%u,%u,%u) age_ms %" PRIu64 "\n", id, c.x, c.y, c.z,
			 (now - w->t) / 1000000u);
		snprintf(prefix, sizeof(prefix), "peer %u ", id);
		for (unsigned dir = 0; dir < DNP_NDIRS; dir++) {
			const uint8_t *q = w->link[dir];

			if (!(q[0] & DNPD_WIRE_EXISTS))
				continue;
			dnpd_wiring_fmt(&d->conf.torus, o, prefix, c, dir, q[0],
					(struct dnp_coord){ q[1], q[2], q[3] }, q[4],
					dnpd_wire_get32(q + 5));
		}
	}
}

/*
 * A frame the engine refused as another link's (-EXDEV): if it is link
 * control, its source names the node at the other end of our cable and the
 * direction it sends from. Logged once DNPD_MISWIRED_FRAMES in a row came
 * from the same end while the link is not UP. Only refused frames are
 * decoded here (a copy: shm peers may still write the original).
 */
static void dnpd_wiring_seen(struct dnpd *d, unsigned dir, const struct dnp_rx_frame *f)
{
	static uint8_t copy[DNP_MAX_FRAME];
	struct dnpd_link *l = &d->link[dir];
	struct dnp_coord s = d->conf.self;
	struct dnp_coord p = dnp_torus_neighbour(&d->conf.torus, s, (enum dnp_dir)dir);
	unsigned opp = (unsigned)dnp_torus_opposite((enum dnp_dir)dir);
	const uint8_t *payload;
	struct dnp_pkt_hdr h;

	if (f->len > sizeof(copy))
		return;
	memcpy(copy, f->data, f->len);
	if (dnp_pkt_decode(copy, f->len, &h, &payload) || h.kind != DNP_PKT_CREDIT ||
	    h.src_dir >= DNP_NDIRS)
		return;
	l->miswired_frames++;
	if (!l->seen_n || !dnp_coord_eq(l->seen, h.src) || l->seen_dir != h.src_dir) {
		l->seen = h.src;
		l->seen_dir = h.src_dir;
		l->seen_n = 1;
		return;
	}
	if (l->seen_n >= DNPD_MISWIRED_FRAMES || ++l->seen_n < DNPD_MISWIRED_FRAMES)
		return;
	if (dnp_engine_link_state(d->e, dir) == DNP_LINK_UP) {
		l->seen_n = 0; /* stray frames of a link that works */
		return;
	}
	l->miswired = true;
	dnpd_log(DNPD_ERR,
		 "cabling: %s of %u,%u,%u reaches %u,%u,%u %s: expected %u,%u,%u %s; "
		 "the link stays down",
		 dnpd_dir_names[dir], s.x, s.y, s.z, h.src.x, h.src.y, h.src.z,
		 dnpd_dir_names[h.src_dir], p.x, p.y, p.z, dnpd_dir_names[opp]);
}

/* The text of `dnpctl stats`: engine, links (state and counters), daemon, ports. */
static size_t dnpd_op_stats(void *ctx, char *buf, size_t cap)
{
	struct dnpd *d = ctx;
	const struct dnp_engine_stats *es = dnp_engine_stats(d->e);
	struct dnpd_out o = { buf, cap, 0 };
	struct dnp_coord s = d->conf.self;
	unsigned i;

	dnpd_out(&o, "node %u (%u,%u,%u) of %ux%ux%u transport %s idle %s uptime_ms %" PRIu64 "\n",
		 dnp_torus_id(&d->conf.torus, s), s.x, s.y, s.z, d->conf.torus.dim[0],
		 d->conf.torus.dim[1], d->conf.torus.dim[2], d->conf.transport,
		 d->conf.idle == DNPD_IDLE_BUSY ? "busy" : "adaptive",
		 (uint64_t)((dnpd_now() - d->start) / 1000000u));
	/* Where dnpctl sensor|timer and impair find this daemon's files (any socket name). */
	if (d->lfm.regs)
		dnpd_out(&o, "file lofamo %s\n", d->lfm.path);
	dnpd_out(&o, "file impair %s\n", d->impair_path);
	dnpd_out(&o,
		 "engine cmds_accepted %" PRIu64 " cmds_ok %" PRIu64 " cmds_failed %" PRIu64
		 " pkts_injected %" PRIu64 " pkts_forwarded %" PRIu64 " pkts_delivered %" PRIu64
		 " bytes_delivered %" PRIu64 " rx_crc_errors %" PRIu64 " rx_malformed %" PRIu64
		 " rx_misrouted %" PRIu64 " deliver_errors %" PRIu64 " events %" PRIu64
		 " hops_total %" PRIu64 " cmpl_frames %" PRIu64 " pending %" PRIu64
		 " rx_nobuf %" PRIu64 "\n",
		 es->cmds_accepted, es->cmds_ok, es->cmds_failed, es->pkts_injected,
		 es->pkts_forwarded, es->pkts_delivered, es->bytes_delivered, es->rx_crc_errors,
		 es->rx_malformed, es->rx_misrouted, es->deliver_errors, es->events, es->hops_total,
		 es->cmpl_frames, dnp_engine_pending(d->e), es->rx_nobuf);
	dnpd_out(&o,
		 "routes broken_cables %u route_tx %" PRIu64 " route_rx %" PRIu64
		 " route_changes %" PRIu64 " route_overflow %" PRIu64 "\n",
		 (unsigned)dnp_engine_router(d->e)->n_faults, es->route_tx, es->route_rx,
		 es->route_changes, es->route_overflow);
	dnpd_out(&o,
		 "bounds rx_wrong_link %" PRIu64 " deliver_timeouts %" PRIu64
		 " reasm_timeouts %" PRIu64 " rx_events_lost %" PRIu64 "\n",
		 es->rx_wrong_link, es->deliver_timeouts, es->reasm_timeouts, es->rx_events_lost);
	for (i = 0; i < DNP_NDIRS; i++) {
		const struct dnpd_link *l = &d->link[i];
		const struct dnp_link_stats *ls;

		if (!l->exists) {
			dnpd_out(&o, "link %s none\n", dnpd_dir_names[i]);
			continue;
		}
		ls = dnp_engine_link_stats(d->e, i);
		dnpd_wiring_line(d, &o, i);
		dnpd_out(&o, "link %s state %s local %s remote %s\n", dnpd_dir_names[i],
			 dnpd_state_name(dnp_engine_link_state(d->e, i)), l->local, l->remote);
		if (ls)
			dnpd_out(&o,
				 "link %s epoch %u rx_stale %" PRIu64 " tx_resets %" PRIu64
				 " rx_resets %" PRIu64 " breaks %" PRIu64 " ups %" PRIu64 "\n",
				 dnpd_dir_names[i], dnp_link_epoch(dnp_engine_link(d->e, i)),
				 ls->rx_stale, ls->tx_resets, ls->rx_resets, ls->breaks, ls->ups);
		if (ls)
			dnpd_out(&o,
				 "link %s tx_frames %" PRIu64 " tx_words %" PRIu64
				 " tx_retx_frames %" PRIu64 " retx_rounds %" PRIu64
				 " tx_credits %" PRIu64 " rx_frames %" PRIu64 " rx_words %" PRIu64
				 " rx_credits %" PRIu64 " rx_dup %" PRIu64
				 " rx_out_of_order %" PRIu64 " rx_overflow %" PRIu64
				 " credit_stalls %" PRIu64 " fast_retx %" PRIu64 " rx_held %" PRIu64
				 " rtt_samples %" PRIu64 " rto %" PRIu64 "\n",
				 dnpd_dir_names[i], ls->tx_frames, ls->tx_words, ls->tx_retx_frames,
				 ls->retx_rounds, ls->tx_credits, ls->rx_frames, ls->rx_words,
				 ls->rx_credits, ls->rx_dup, ls->rx_out_of_order, ls->rx_overflow,
				 ls->credit_stalls, ls->fast_retx, ls->rx_held, ls->rtt_samples,
				 dnp_link_rto(dnp_engine_link(d->e, i)));
		for (unsigned vc = 0; ls && vc < d->conf.vcs && vc < DNP_MAX_VC; vc++) {
			const struct dnp_link *dl = dnp_engine_link(d->e, i);

			dnpd_out(&o,
				 "link %s vc %u tx_packets %" PRIu64 " tx_words %" PRIu64
				 " rx_packets %" PRIu64 " rx_words %" PRIu64 " rx_overflow %" PRIu64
				 " credit_stalls %" PRIu64 " remote_estimate %u rx_fifo %u\n",
				 dnpd_dir_names[i], vc, ls->vc[vc].tx_packets, ls->vc[vc].tx_words,
				 ls->vc[vc].rx_packets, ls->vc[vc].rx_words, ls->vc[vc].rx_overflow,
				 ls->vc[vc].credit_stalls, dnp_link_estimate(dl, vc),
				 dnp_link_rx_occupancy(dl, vc));
		}
		{
			const struct dnp_impair_stats *is = dnp_impair_stats(l->t);
			char spec[256];

			dnp_impair_format(&l->impair, spec, sizeof(spec));
			dnpd_out(&o,
				 "link %s impair %s frames %" PRIu64 " dropped %" PRIu64
				 " corrupted %" PRIu64 " duplicated %" PRIu64 " reordered %" PRIu64
				 " delayed %" PRIu64 "\n",
				 dnpd_dir_names[i], dnp_impair_active(&l->impair) ? spec : "off",
				 is->frames, is->dropped, is->corrupted, is->duplicated,
				 is->reordered, is->delayed);
		}
		dnpd_out(&o,
			 "link %s transport tx_frames %" PRIu64 " rx_frames %" PRIu64
			 " tx_backlogged %" PRIu64 " tx_errors %" PRIu64 " rx_errors %" PRIu64
			 " rx_dropped %" PRIu64 "\n",
			 dnpd_dir_names[i], l->tx_frames, l->rx_frames, l->tx_backlogged,
			 l->tx_errors, l->rx_errors, l->rx_dropped);
	}
	dnpd_out(&o,
		 "daemon iterations %" PRIu64 " sleeps %" PRIu64 " quiet_periods %" PRIu64
		 " timer_wakeups %" PRIu64 " mem_copies %" PRIu64 " mem_vm %" PRIu64
		 " mem_faults %" PRIu64 " cmd_rejects %" PRIu64 " yields %" PRIu64
		 " yields_alone %" PRIu64 " held_passes %" PRIu64 " mem_readahead_hits %" PRIu64
		 " mem_gathered_writes %" PRIu64 "\n",
		 d->iters, d->sleeps, d->quiets, d->wakeups_timer, d->mem_copies, d->mem_vm,
		 d->mem_faults, d->cmd_rejects, d->yield.yields, d->yield.alone, d->holds,
		 d->mem_ra_hits, d->mem_gathered);
	for (i = 0; i < d->sess->nports; i++) {
		const struct dnpd_session *se = d->sess->by_port[d->sess->ports[i]];

		dnpd_out(&o,
			 "port %u pid %d cmd_queued %u ev_queued %u heap %" PRIu64
			 " buffers %u outstanding %u ring_faults %" PRIu64 " ev_lost %" PRIu64
			 " vm_denied %" PRIu64 "\n",
			 se->port, (int)se->pid, dnp_ring_count(se->cmd), dnp_ring_count(se->ev),
			 se->heap_size, se->nbufs, se->inflight, se->cmd->faults + se->ev->faults,
			 se->ev_lost, se->vm_denied);
	}
	if (d->sess->stats_arg & DNPD_STATS_TORUS) {
		uint64_t now = dnpd_now();
		int r = dnpd_wire_ask(d, now);

		dnpd_out(&o, "torus_query round %u error %d malformed %" PRIu64 "\n", d->wire_seq,
			 r, d->wire_bad);
		dnpd_wire_report(d, &o, now);
	}
	return o.len;
}

static const struct dnpd_sess_ops dnpd_sess_ops = {
	.port_open = dnpd_op_port_open,
	.port_close = dnpd_op_port_close,
	.reg = dnpd_op_reg,
	.unreg = dnpd_op_unreg,
	.stats = dnpd_op_stats,
};

/* ------------------------------------------------------------- the loop */

/*
 * A command the engine refused outright still owes the app its one
 * completion event. The caller made sure the event ring has room for it.
 */
static void dnpd_reject(struct dnpd *d, struct dnpd_session *se, const struct dnp_cmd *c, int r)
{
	struct dnp_event ev = {
		.type = DNP_EV_ERROR,
		.op = c->op,
		.port = c->dst_port,
		.peer_x = c->dst_x,
		.peer_y = c->dst_y,
		.peer_z = c->dst_z,
		.status = (int8_t)r,
		.len = (uint32_t)c->len,
		.va = c->local_va,
		.cookie = c->cookie,
	};

	d->cmd_rejects++;
	dnpd_sess_ev_push(se, &ev, 1);
}

static unsigned dnpd_poll_cmds(struct dnpd *d, uint64_t now)
{
	unsigned k, work = 0;

	for (k = 0; k < d->sess->nports; k++) {
		struct dnpd_session *se = d->sess->by_port[d->sess->ports[k]];

		if (se->pend_i == se->pend_n) {
			se->pend_i = 0;
			se->pend_n = dnpd_sess_cmd_pop(se, se->pend, DNPD_CMD_BURST);
		}
		while (se->pend_i < se->pend_n) {
			struct dnp_cmd *c = &se->pend[se->pend_i];
			int r;

			/* -EAGAIN: the node's command table is full: keep it, retry next pass. */
			r = dnp_engine_submit(d->e, se->port, c, now);
			if (r == -EAGAIN)
				break;
			/*
			 * Refused without being accepted (no side effect): it
			 * waits for event room rather than lose its event.
			 */
			if (r && dnpd_sess_ev_room(se) == 0)
				break;
			if (r)
				dnpd_reject(d, se, c, r);
			se->pend_i++;
			work++;
		}
	}
	return work;
}

/* Link credits only (peeked while quiet: the engine will decode the frame again). */
static bool dnpd_is_credit(const struct dnp_rx_frame *f)
{
	struct dnp_pkt_hdr h;
	const uint8_t *payload;

	return dnp_pkt_decode(f->data, f->len, &h, &payload) == 0 && h.kind == DNP_PKT_CREDIT;
}

/*
 * Links whose receive is a system call (udp) and which have nothing: one
 * poll() for all of them instead of one empty receive call each (1.0 us
 * each here; poll of 2 or 6 sockets 0.8 or 1.4 us). Returns the bit mask
 * of directions to skip this pass.
 */
static unsigned dnpd_rx_idle(struct dnpd *d)
{
	struct pollfd pf[DNP_NDIRS];
	unsigned dir, n = 0, skip = 0, dirs[DNP_NDIRS];

	for (dir = 0; dir < DNP_NDIRS; dir++) {
		struct dnpd_link *l = &d->link[dir];
		int fd;

		if (!l->exists || !l->ops->rx_gate_fd || (fd = l->ops->rx_gate_fd(l->t)) < 0)
			continue;
		pf[n] = (struct pollfd){ .fd = fd, .events = POLLIN };
		dirs[n++] = dir;
	}
	if (n < 2 || poll(pf, n, 0) < 0) /* one link: its receive call is the cheaper look */
		return 0;
	for (unsigned i = 0; i < n; i++)
		if (!pf[i].revents)
			skip |= 1u << dirs[i];
	return skip;
}

/* Returns the frames received; while quiet, only those that are not link credits. */
static unsigned dnpd_poll_rx(struct dnpd *d, uint64_t now)
{
	struct dnp_rx_frame rx[DNPD_BURST];
	unsigned dir, work = 0, skip = dnpd_rx_idle(d);

	for (dir = 0; dir < DNP_NDIRS; dir++) {
		struct dnpd_link *l = &d->link[dir];
		int n, i;

		if (!l->exists || (skip & (1u << dir)))
			continue;
		n = l->ops->rx_burst(l->t, rx, DNPD_BURST);
		if (n < 0) {
			l->rx_errors++;
			continue;
		}
		for (i = 0; i < n; i++) {
			if (!d->quiet || !dnpd_is_credit(&rx[i]))
				work++;
			int rr = dnp_engine_rx(d->e, dir, rx[i].data, rx[i].len, now);

			if (rr < 0)
				l->rx_dropped++;
			if (rr == -EILSEQ)
				d->lfm.crc_errors[dir]++; /* the DFM's sick-link ratio */
			if (rr == -EXDEV)
				dnpd_wiring_seen(d, dir, &rx[i]);
		}
		l->rx_frames += (unsigned)n;
	}
	return work;
}

/* Sends the backlog; true when it is empty. */
static bool dnpd_flush_backlog(struct dnpd_link *l)
{
	struct dnp_tx_frame tx[DNPD_BURST];
	unsigned i, n = l->bl_n - l->bl_i;
	int r;

	if (n == 0)
		return true;
	for (i = 0; i < n; i++) {
		tx[i].data = l->bl_data + (size_t)(l->bl_i + i) * DNP_MAX_FRAME;
		tx[i].len = l->bl_len[l->bl_i + i];
	}
	r = l->ops->tx_burst(l->t, tx, n);
	if (r < 0) {
		l->tx_errors++;
		return false;
	}
	l->tx_frames += (unsigned)r;
	l->bl_i += (unsigned)r;
	if (l->bl_i < l->bl_n)
		return false;
	l->bl_i = l->bl_n = 0;
	return true;
}

static unsigned dnpd_flush_tx(struct dnpd *d, uint64_t now)
{
	struct dnp_frame fr[DNPD_BURST];
	struct dnp_tx_frame tx[DNPD_BURST];
	unsigned dir, work = 0;

	for (dir = 0; dir < DNP_NDIRS; dir++) {
		struct dnpd_link *l = &d->link[dir];
		unsigned n, i;
		int r;

		if (!l->exists)
			continue;
		if (!dnpd_flush_backlog(l)) {
			/* A BROKEN link's frames are the engine's business now: drop ours. */
			if (dnp_engine_link_state(d->e, dir) == DNP_LINK_BROKEN)
				l->bl_i = l->bl_n = 0;
			continue;
		}
		n = dnp_engine_tx_burst(d->e, dir, fr, DNPD_BURST, now);
		if (n == 0)
			continue;
		for (i = 0; i < n; i++) {
			tx[i].data = fr[i].data;
			tx[i].len = fr[i].len;
		}
		r = l->ops->tx_burst(l->t, tx, n);
		if (r < 0) {
			l->tx_errors++;
			r = 0;
		}
		l->tx_frames += (unsigned)r;
		/* The engine's frames die at its next call: keep copies of the rest. */
		for (i = (unsigned)r; i < n; i++) {
			uint32_t len = fr[i].len <= DNP_MAX_FRAME ? fr[i].len : DNP_MAX_FRAME;

			memcpy(l->bl_data + (size_t)l->bl_n * DNP_MAX_FRAME, fr[i].data, len);
			l->bl_len[l->bl_n++] = len;
			l->tx_backlogged++;
		}
		work += n;
	}
	return work;
}

/*
 * Pushes the engine's events to the apps. Sets d->ev_here when one of the
 * apps that got events last polled on our CPU (its app_cpu hint): only then
 * does a yield let it run (dnpd_loop).
 */
static unsigned dnpd_push_events(struct dnpd *d)
{
	struct dnp_event ev[DNPD_EV_BURST];
	unsigned k, work = 0;
	int cpu = -2;

	for (k = 0; k < d->sess->nports; k++) {
		struct dnpd_session *se = d->sess->by_port[d->sess->ports[k]];
		/* A room dnpd_sess_ev_push honours whatever the app writes (ring.h). */
		uint32_t room = dnpd_sess_ev_room(se);
		unsigned n;

		if (room == 0)
			continue; /* the engine keeps them: back-pressure reaches the senders */
		n = dnp_engine_poll_events(d->e, se->port, ev,
					   room < DNPD_EV_BURST ? room : DNPD_EV_BURST);
		if (n == 0 && !se->ev_lost)
			continue;
		dnpd_sess_ev_push(se, ev, n);
		work += n;
		if (n && !d->ev_here) {
			if (cpu == -2)
				cpu = sched_getcpu();
			/* untrusted, read once: a wrong value costs a yield or skips one */
			d->ev_here = atomic_load_explicit(&se->ctl->app_cpu,
							  memory_order_relaxed) == cpu;
		}
	}
	return work;
}

static void dnpd_up_file(struct dnpd *d, bool all_up)
{
	if (all_up && !d->up_file) {
		int fd = open(d->up_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd >= 0) {
			close(fd);
			d->up_file = true;
			dnpd_log(DNPD_INFO, "all links UP: %s", d->up_path);
		}
	} else if (!all_up && d->up_file) {
		unlink(d->up_path);
		d->up_file = false;
	}
}

static void dnpd_impair_poll(struct dnpd *d, uint64_t now);

/* Slow work: sockets, link carrier, link states. Returns socket requests handled. */
static unsigned dnpd_house(struct dnpd *d, uint64_t now)
{
	unsigned dir, work;
	bool all_up = true;

	work = dnpd_sess_service(d->sess);
	dnpd_impair_poll(d, now);
	for (dir = 0; dir < DNP_NDIRS; dir++) {
		struct dnpd_link *l = &d->link[dir];
		enum dnp_link_state st;

		if (!l->exists)
			continue;
		/*
		 * Broken when up() turns false (carrier lost, port down, peer
		 * closed). When it is true again the engine's reset handshake
		 * brings the link back (engine.h), so we only watch for the
		 * next time it goes down.
		 */
		{
			bool up = l->ops->up(l->t);

			if (up) {
				if (l->down_reported)
					dnpd_log(DNPD_INFO,
						 "link %s: transport %s reports the link up again",
						 dnpd_dir_names[dir], l->ops->name);
				l->seen_up = true;
				l->down_reported = false;
			} else if (l->seen_up && !l->down_reported) {
				dnpd_log(DNPD_WARN, "link %s: transport %s reports the link down",
					 dnpd_dir_names[dir], l->ops->name);
				dnp_engine_link_down(d->e, dir, now);
				l->down_reported = true;
			}
		}
		st = dnp_engine_link_state(d->e, dir);
		if (st != l->state) {
			dnpd_log(st == DNP_LINK_BROKEN ? DNPD_WARN : DNPD_INFO, "link %s %s -> %s",
				 dnpd_dir_names[dir], dnpd_state_name(l->state),
				 dnpd_state_name(st));
			l->state = (uint8_t)st;
		}
		all_up = all_up && st == DNP_LINK_UP;
	}
	dnpd_up_file(d, all_up);
	dnpd_lfm_house(&d->lfm, d->e, now);
	return work;
}

/* Frames still to send: the backlog, or frames the impairment holds (delay, reorder). */
static bool dnpd_backlogged(struct dnpd *d)
{
	unsigned dir;
	bool any = false;

	for (dir = 0; dir < DNP_NDIRS; dir++) {
		if (!d->link[dir].exists)
			continue;
		if (d->link[dir].bl_n || dnp_impair_flush(d->link[dir].t))
			any = true;
	}
	return any;
}

/* Sum of counters that move only with real traffic (not with link credits). */
static uint64_t dnpd_activity(const struct dnpd *d)
{
	const struct dnp_engine_stats *es = dnp_engine_stats(d->e);

	return es->cmds_accepted + es->pkts_injected + es->pkts_forwarded + es->pkts_delivered +
	       es->events;
}

static void dnpd_sleep_poll(struct dnpd *d, uint32_t seen, uint64_t timeout)
{
	struct pollfd pfd[DNPD_MAX_CONN + 2 + DNP_NDIRS];
	struct timespec ts = { (time_t)(timeout / 1000000000ull), (long)(timeout % 1000000000ull) };
	unsigned n = 0, dir;
	uint64_t junk;

	pfd[n++] = (struct pollfd){ .fd = d->sess->wake_fd, .events = POLLIN };
	for (dir = 0; dir < DNP_NDIRS; dir++) {
		int fd;

		if (!d->link[dir].exists)
			continue;
		fd = d->link[dir].ops->wait_fd(d->link[dir].t);
		if (fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	n += dnpd_sess_pollfds(d->sess, pfd + n, DNPD_MAX_CONN + 1);

	/* Armed (doorbell.h): sleep only if nobody rang since, with poll() for FUTEX_WAIT. */
	if (dnp_doorbell_seq(d->bell) == seen &&
	    !atomic_load_explicit(&dnpd_stop, memory_order_relaxed))
		ppoll(pfd, n, &ts, NULL);
	dnp_doorbell_disarm(d->bell);
	if (read(d->sess->wake_fd, &junk, sizeof(junk)) < 0)
		(void)0; /* EAGAIN: nobody wrote it */
}

static void dnpd_sleep(struct dnpd *d, uint32_t seen, uint64_t now)
{
	uint64_t dl = d->quiet ? d->quiet_next : dnp_engine_next_deadline(d->e);
	uint64_t cap = d->poll_mode ? DNPD_POLL_MAX_NS : DNPD_FUTEX_MAX_NS;
	uint64_t timeout = dl == UINT64_MAX ? cap : dl > now ? dl - now : 0;

	if (d->nowait_links) {
		uint64_t nw = d->quiet ? DNPD_NOWAIT_QUIET_SLEEP_NS : DNPD_NOWAIT_SLEEP_NS;

		if (cap > nw)
			cap = nw;
	}
	if (timeout > cap)
		timeout = cap;
	if (timeout == 0) {
		dnp_doorbell_disarm(d->bell);
		return;
	}
	d->sleeps++;
	if (d->poll_mode)
		dnpd_sleep_poll(d, seen, timeout);
	else if (dnp_doorbell_sleep(d->bell, seen, timeout) == -ETIMEDOUT)
		d->wakeups_timer++;
}

/* Work turned up on the second look: not going to sleep after all. */
static void dnpd_disarm(struct dnpd *d)
{
	if (d->armed) {
		dnp_doorbell_disarm(d->bell);
		d->armed = false;
	}
}

static void dnpd_loop(struct dnpd *d)
{
	uint64_t now = dnpd_now();
	uint64_t last_house = 0, idle_since = now, last_active = now;

	while (!atomic_load_explicit(&dnpd_stop, memory_order_relaxed)) {
		unsigned work_app, ev;
		uint64_t act;

		now = dnpd_now();
		d->iters++;
		work_app = dnpd_poll_cmds(d, now);
		work_app += dnpd_poll_rx(d, now);
		if (work_app)
			d->quiet = false;
		/* Quiet: the engine (and so our credits) runs every DNPD_COARSE_NS only. */
		if (!d->quiet || now >= d->quiet_next) {
			dnp_engine_run(d->e, now);
			/*
			 * Events first: a delivery's event must not wait behind the
			 * transport send of the credit (or forwarded frame) it caused,
			 * a system call on kernel-backed links (udp, af_packet).
			 */
			d->ev_here = false;
			ev = dnpd_push_events(d);
			work_app += ev;
			/*
			 * An app just got events: let it run at once (on two
			 * shared cores it often waits for ours) rather than behind
			 * our transport sends (system calls on udp and af_packet
			 * links); they go out on the next pass, with whatever the
			 * app answered meanwhile. Never deferred twice in a row.
			 * Measured on the 2x2x2 namespace testbed: 8-byte
			 * ping-pong 14.5 -> 12.9 us (dpdk), 21 -> 19.8 us (udp).
			 * Alone on our CPU (dnp_yield.h), or with the apps that
			 * got events polling on other CPUs (their app_cpu hint),
			 * a yield helps nobody: no deferral. Except when busy:
			 * this is then the only yield a busy daemon makes, and
			 * with --pin the other node's app shares our CPU and
			 * needs it (without it the 2-node busy ping-pong stalls).
			 */
			if (ev && (d->ev_here || d->conf.idle == DNPD_IDLE_BUSY) &&
			    !d->tx_deferred && !dnp_yield_alone(&d->yield, now)) {
				dnpd_disarm(d);
				d->tx_deferred = true;
				dnp_yield_step(&d->yield, now);
				continue;
			}
			d->tx_deferred = false;
			dnpd_flush_tx(d, now);
			d->quiet_next = now + DNPD_COARSE_NS;
		}
		work_app += dnpd_push_events(d);
		if (now - last_house >= DNPD_HOUSE_NS) {
			work_app += dnpd_house(d, now);
			last_house = now;
		}
		/*
		 * Link credits flow every credit period even on an idle torus:
		 * only real traffic (commands, packets, events, requests) or
		 * work still queued restarts the spin/yield/sleep escalation.
		 */
		act = dnpd_activity(d);
		if (work_app || act != d->activity) {
			d->activity = act;
			last_active = now;
			idle_since = now;
			d->quiet = false;
		}
		if (dnpd_backlogged(d) || (!d->quiet && dnp_engine_has_work(d->e))) {
			dnpd_disarm(d);
			d->quiet = false;
			idle_since = now;
			continue;
		}
		if (d->conf.idle == DNPD_IDLE_BUSY)
			continue;
		if (!d->quiet && now - last_active > DNPD_ACTIVE_NS) {
			d->quiet = true;
			d->quiets++;
		}
		/*
		 * No pure spinning: with daemons and applications sharing two
		 * cores a spinner keeps the CPU from the process that has the
		 * work (measured: 54 us 8-byte ping-pong with a 10 us spin, 5.5 us
		 * yielding at once). But a yield that finds nobody else to run
		 * still costs a system call (0.54 us here), so a daemon alone on
		 * its CPU polls without yielding for a while (dnp_yield.h).
		 */
		if (now - idle_since < DNPD_YIELD_NS) {
			dnpd_disarm(d);
			/*
			 * Given the CPU back a moment ago: whoever gave it most
			 * likely just sent us work, so look for it a lone yield's
			 * time before handing the CPU back (dnp_yield.h).
			 */
			if (d->hold && dnp_yield_held(&d->yield, now, d->yield.fast_ns))
				d->holds++;
			else
				dnp_yield_step(&d->yield, now);
			continue;
		}
		/*
		 * Arm the doorbell and look at every source once more (the next
		 * pass) before sleeping: a producer that rang before seeing us
		 * armed published its work before our second look (doorbell.h).
		 */
		if (!d->armed) {
			d->bell_seen = dnp_doorbell_arm(d->bell);
			d->armed = true;
			continue;
		}
		d->armed = false;
		dnpd_sleep(d, d->bell_seen, now);
		dnp_yield_reset(&d->yield);
		/*
		 * Whatever woke us, look at the sockets too. A wake-up that brings
		 * real work restarts the spinning (above); a credit or a timer
		 * alone goes back to sleep at once.
		 */
		last_house = 0;
	}
}

/* ---------------------------------------------------------- set-up */

/*
 * Impairment of each link from specs joined by ';' (later specs win for the
 * directions they name). -EINVAL names the bad spec.
 */
static int dnpd_impair_confs(const char *specs, struct dnp_impair_conf out[DNP_NDIRS])
{
	char buf[sizeof(((struct dnpd_conf *)0)->impair)];
	char *save = NULL, *sp;
	unsigned dir;

	for (dir = 0; dir < DNP_NDIRS; dir++)
		(void)dnp_impair_parse("off", &out[dir]);
	if (strlen(specs) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, specs);
	for (sp = strtok_r(buf, ";", &save); sp; sp = strtok_r(NULL, ";", &save)) {
		struct dnp_impair_conf c;

		if (dnp_impair_parse(sp, &c)) {
			dnpd_log(DNPD_ERR,
				 "bad impairment spec '%s' (docs/dnpd.md, \"Impairment\")", sp);
			return -EINVAL;
		}
		for (dir = 0; dir < DNP_NDIRS; dir++)
			if (c.dirs & (1u << dir))
				out[dir] = c;
	}
	return 0;
}

/*
 * dnpctl impair writes DIR/node-<id>.impair (atomically, by rename); we look
 * at it every DNPD_IMPAIR_CHECK_NS and apply it when it changed. Its content
 * is untrusted text: at most one line of specs, parsed before use.
 */
#define DNPD_IMPAIR_CHECK_NS 50000000ull
static void dnpd_impair_poll(struct dnpd *d, uint64_t now)
{
	struct dnp_impair_conf c[DNP_NDIRS];
	char text[sizeof(d->conf.impair)];
	struct stat st;
	unsigned dir;
	ssize_t n;
	int fd;

	if (now < d->impair_next)
		return;
	d->impair_next = now + DNPD_IMPAIR_CHECK_NS;
	if (stat(d->impair_path, &st) < 0)
		return;
	if (st.st_mtim.tv_sec == d->impair_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == d->impair_mtime.tv_nsec)
		return;
	d->impair_mtime = st.st_mtim;
	fd = open(d->impair_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0)
		return;
	text[n] = 0;
	text[strcspn(text, "\n")] = 0;
	if (dnpd_impair_confs(text, c))
		return;
	for (dir = 0; dir < DNP_NDIRS; dir++) {
		struct dnpd_link *l = &d->link[dir];

		if (!l->exists)
			continue;
		l->impair = c[dir];
		dnp_impair_set(l->t, &c[dir]);
	}
	dnpd_log(DNPD_WARN, "impairment changed: %s", text[0] ? text : "off");
}

static int dnpd_open_links(struct dnpd *d, const struct dnp_transport_ops *ops)
{
	struct dnp_impair_conf imp[DNP_NDIRS];
	unsigned dir;
	int r;

	r = dnpd_impair_confs(d->conf.impair, imp);
	if (r)
		return r;
	for (dir = 0; dir < DNP_NDIRS; dir++) {
		struct dnpd_link *l = &d->link[dir];
		char bell[PATH_MAX];

		l->impair = imp[dir];
		struct dnp_transport_conf tc = { 0 };

		if (!dnp_engine_has_link(d->e, dir))
			continue;
		r = dnpd_conf_link_addr(&d->conf, dir, l->local, l->remote, sizeof(l->local),
					&l->side, bell, sizeof(bell));
		if (r)
			return r;
		l->bl_data = malloc((size_t)DNPD_BURST * DNP_MAX_FRAME);
		if (!l->bl_data)
			return -ENOMEM;
		tc.local = l->local;
		tc.remote = l->remote;
		tc.side = l->side;
		tc.frame_max = DNP_MAX_FRAME;
		tc.depth = DNPD_LINK_DEPTH;
		/* shm: ring the neighbour's own doorbell, so it sleeps on one futex word. */
		tc.peer_bell = d->poll_mode ? NULL : bell;
		r = ops->open(&tc, &l->t);
		if (r) {
			dnpd_log(DNPD_ERR, "link %s: %s open %s: %s", dnpd_dir_names[dir],
				 ops->name, l->local, strerror(-r));
			return r;
		}
		{
			struct dnp_transport *w;

			r = dnp_impair_wrap(l->t, dir, &l->impair, &w);
			if (r) {
				ops->close(l->t);
				return r;
			}
			l->t = w;
		}
		l->ops = &dnp_transport_impair;
		l->exists = true;
		if (ops->wait_fd(l->t) < 0)
			d->nowait_links = true;
		dnpd_log(DNPD_INFO, "link %s: %s %s -> %s (side %u)", dnpd_dir_names[dir],
			 ops->name, l->local, l->remote, l->side);
		if (dnp_impair_active(&l->impair)) {
			char spec[256];

			dnp_impair_format(&l->impair, spec, sizeof(spec));
			dnpd_log(DNPD_INFO, "link %s: impaired: %s", dnpd_dir_names[dir], spec);
		}
	}
	return 0;
}

static void dnpd_close_links(struct dnpd *d)
{
	unsigned dir;

	for (dir = 0; dir < DNP_NDIRS; dir++) {
		struct dnpd_link *l = &d->link[dir];

		if (l->exists)
			l->ops->close(l->t);
		l->exists = false;
		free(l->bl_data);
		l->bl_data = NULL;
	}
}

static int dnpd_engine_setup(struct dnpd *d, uint64_t now)
{
	struct dnp_engine_conf ec;

	dnp_engine_conf_default(&ec);
	ec.torus = d->conf.torus;
	ec.self = d->conf.self;
	ec.max_ports = 256;
	/*
	 * Outstanding commands of the node; each port may hold at most
	 * DNPD_PORT_COMMANDS_DEFAULT of them (sess.c), so one application
	 * never takes the whole table.
	 */
	ec.max_commands = DNPD_NODE_COMMANDS;
	ec.mem = &dnpd_mem_ops;
	ec.mem_ctx = d;
	ec.link.credit_model = DNP_CREDIT_EXACT;
	ec.link.nvc = (uint8_t)d->conf.vcs;
	ec.link.fifo_words = DNPD_FIFO_WORDS;
	ec.link.t_red = DNPD_FIFO_WORDS - 6;
	ec.link.t_yellow = DNPD_FIFO_WORDS / 2;
	/*
	 * A credit goes out in the next tx_burst after a frame is accepted or
	 * leaves a FIFO, so the sender's estimate follows the receiver at
	 * transport speed; the period only paces keep-alive credits, which
	 * idle daemons would otherwise trade at every period.
	 */
	ec.prompt_credits = true;
	/*
	 * But not a CREDIT frame for each change: on udp each is a datagram
	 * (a system call and the kernel's path, 1-3 us here), and a ping-pong
	 * made four per half round trip (data, its credit, the completion, its
	 * credit). Acks ride on the frames going back anyway; a credit goes at
	 * once only when the sender's view of our FIFO matters.
	 */
	ec.ack_delay = DNPD_ACK_DELAY_NS;
	ec.link.credit_period = d->conf.credit_period_us ? d->conf.credit_period_us * 1000ull :
							   DNPD_CREDIT_PERIOD_NS;
	ec.link.credit_timeout = d->conf.credit_timeout_ms ?
					 d->conf.credit_timeout_ms * 1000000ull :
					 DNPD_CREDIT_TIMEOUT_NS;
	ec.link.init_timeout = 0; /* neighbours start when they start */
	ec.link.rto = DNPD_RTO_NS;
	ec.link.max_retries = DNPD_MAX_RETRIES;
	ec.cmd_timeout = d->conf.cmd_timeout_ms * 1000000ull;
	ec.reasm_timeout = DNPD_REASM_TIMEOUT_NS;
	ec.deliver_timeout = DNPD_DELIVER_TIMEOUT_NS;
	/* outcome queries (engine.h): a late report is asked about after 100 ms */
	ec.query_timeout = ec.cmd_timeout ? 100000000ull : 0;
	/* Keys are the only protection of a buffer: their secret is random. */
	if (getrandom(ec.key_secret, sizeof(ec.key_secret), 0) != (ssize_t)sizeof(ec.key_secret)) {
		dnpd_log(DNPD_ERR, "getrandom: cannot draw the key secret");
		return -EIO;
	}
	/* Links come back (engine.h): a restarted daemon is told apart by its nonce. */
	ec.link.reset_period = DNPD_RESET_PERIOD_NS;
	if (getrandom(&ec.link.nonce, sizeof(ec.link.nonce), 0) != (ssize_t)sizeof(ec.link.nonce) ||
	    !ec.link.nonce)
		ec.link.nonce = (uint32_t)getpid() ^ (uint32_t)now ^ (uint32_t)(now >> 32);
	ec.link.nonce |= 1u;
	return dnp_engine_create(&ec, now, &d->e);
}

static int dnpd_run(struct dnpd *d)
{
	const struct dnp_transport_ops *ops;
	struct dnpd_sess_conf sc = { 0 };
	struct sigaction sa = { 0 };
	int r;

	d->start = dnpd_now();
	d->poll_mode = !strcmp(d->conf.transport, "udp");
	/*
	 * Hold only where it was measured to help (docs/performance.md,
	 * "Holding the CPU after a yield"): shm links and a daemon pinned to one
	 * CPU (dnp-run --pin), where each CPU keeps the same two processes.
	 * Unpinned, and over udp, it was slower.
	 */
	{
		cpu_set_t cs;

		d->hold = !strcmp(d->conf.transport, "shm") &&
			  sched_getaffinity(0, sizeof(cs), &cs) == 0 && CPU_COUNT(&cs) == 1;
	}
	ops = dnp_transport_find(d->conf.transport);
	if (!ops) {
		dnpd_log(DNPD_ERR, "transport %s is not built in", d->conf.transport);
		return -ENOTSUP;
	}
	if (d->conf.cpu >= 0) {
		r = dnpd_place(d->conf.cpu);
		if (r)
			dnpd_log(DNPD_WARN, "cannot pin to CPU %d: %s", d->conf.cpu, strerror(-r));
	}
	if (mkdir(d->conf.run_dir, 0755) && errno != EEXIST) {
		r = -errno;
		dnpd_log(DNPD_ERR, "run dir %s: %s", d->conf.run_dir, strerror(errno));
		return r;
	}
	if (dnpd_path(&d->conf, ".bell", d->bell_path, sizeof(d->bell_path)) ||
	    dnpd_path(&d->conf, ".sock", d->sock_path, sizeof(d->sock_path)) ||
	    dnpd_path(&d->conf, ".up", d->up_path, sizeof(d->up_path)) ||
	    dnpd_path(&d->conf, ".impair", d->impair_path, sizeof(d->impair_path))) {
		dnpd_log(DNPD_ERR, "run dir path too long");
		return -ENAMETOOLONG;
	}
	unlink(d->up_path); /* left by a daemon that was killed */

	r = dnp_doorbell_map(d->bell_path, &d->bell);
	if (r) {
		dnpd_log(DNPD_ERR, "doorbell %s: %s", d->bell_path, strerror(-r));
		return r;
	}
	atomic_store_explicit(&((struct dnp_sess_bell *)(void *)d->bell)->poll_mode,
			      d->poll_mode ? 1u : 0u, memory_order_relaxed);
	atomic_store_explicit(&((struct dnp_sess_bell *)(void *)d->bell)->hold, d->hold ? 1u : 0u,
			      memory_order_relaxed);

	r = dnpd_engine_setup(d, dnpd_now());
	if (r) {
		dnpd_log(DNPD_ERR, "engine: %s", strerror(-r));
		goto out_bell;
	}
	if (ops->init) {
		/* Once per process, before the first link opens (dpdk: the EAL, docs/dpdk.md). */
		r = ops->init(d->conf.eal);
		if (r) {
			dnpd_log(DNPD_ERR, "transport %s start-up (%s): %s", ops->name,
				 *d->conf.eal ? d->conf.eal : "defaults", strerror(-r));
			goto out_links;
		}
		d->tp_started = ops;
	}
	r = dnpd_open_links(d, ops);
	if (r)
		goto out_links;
	r = dnpd_lfm_start(&d->lfm, &d->conf, d->e, dnpd_now());
	if (r)
		dnpd_log(DNPD_WARN, "lofamo: no register block (%s): fault manager off",
			 strerror(-r));
	d->lfm.wire_ctx = d; /* wiring DIAGs (dnpctl topo --all) come through the DFM's queue */

	sc.sock_path = d->sock_path;
	sc.bell_path = d->bell_path;
	sc.torus = d->conf.torus;
	sc.self = d->conf.self;
	sc.max_ports = 256;
	sc.heap_default = d->conf.heap_default;
	sc.heap_max = DNP_SESS_HEAP_MAX;
	sc.poll_mode = d->poll_mode;
	sc.ops = &dnpd_sess_ops;
	sc.ctx = d;
	r = dnpd_sess_create(&sc, &d->sess);
	if (r) {
		dnpd_log(DNPD_ERR, "socket %s: %s", d->sock_path, strerror(-r));
		goto out_links;
	}

	dnpd_sig_bell = d->bell;
	dnpd_sig_wake_fd = d->sess->wake_fd;
	sa.sa_handler = dnpd_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	dnpd_log(DNPD_INFO, "node %u ready on %s", dnp_torus_id(&d->conf.torus, d->conf.self),
		 d->sock_path);

	dnpd_loop(d);

	dnpd_log(DNPD_INFO, "stopping");
	dnpd_sig_wake_fd = -1;
	dnpd_sess_destroy(d->sess);
	d->sess = NULL;
	r = 0;
out_links:
	dnpd_lfm_stop(&d->lfm);
	free(d->wire);
	d->wire = NULL;
	dnpd_close_links(d);
	if (d->tp_started && d->tp_started->fini && d->tp_started->fini())
		d->quick_exit = true;
	d->tp_started = NULL;
	if (d->up_file)
		unlink(d->up_path);
	dnp_engine_destroy(d->e);
out_bell:
	dnpd_sig_bell = NULL;
	dnp_doorbell_unmap(d->bell);
	unlink(d->bell_path);
	return r;
}

int main(int argc, char **argv)
{
	static struct dnpd d; /* large (link backlogs hang off it); one per process */
	int r;

	dnpd_conf_default(&d.conf);
	r = dnpd_conf_parse(&d.conf, argc, argv);
	if (r)
		return r > 0 ? 0 : 2;
	r = dnpd_run(&d);
	if (d.quick_exit) { /* transport.h: no destructor may run under its threads */
		fflush(NULL);
		_exit(r ? 1 : 0);
	}
	return r ? 1 : 0;
}
