/* SPDX-License-Identifier: MIT */
/*
 * app_common — shared plumbing of the SoftDNP test and benchmark programs
 * (dnp_pingpong, dnp_bw, dnp_alltoall, dnp_check).
 *
 * The programs are SPMD: dnp-run starts one instance per torus node, each
 * connected to its own node's dnpd (DNP_SOCKET). Every instance is the first
 * application of its daemon, so all instances own the same port number and
 * a peer's port is assumed equal to our own (override: DNP_PEER_PORT).
 *
 * Control messages (handshakes, acks, barriers) travel as DNP SENDs into a
 * mailbox of separately registered SEND-target slots. A SEND that finds the
 * peer not ready (port not open yet, no slot posted) completes with an error
 * and is retried until a deadline, so start-up order does not matter.
 * Because each control SEND waits for its completion before the next one,
 * control messages between two instances arrive in order.
 *
 * Programs run one after another on the same nodes (a ping-pong, then a
 * bandwidth test) get the same port. A SEND to a peer's port can then reach
 * the peer's previous program, still exiting, and complete: the message is
 * gone with it. So before its first own message to a peer, a program greets
 * it (app_greet): each instance has a random nonce and sends HELLO (its
 * nonce, and the peer's nonce as far as it has heard it) until it has heard
 * the peer's nonce, the peer has echoed its own, and it has echoed the
 * peer's. A HELLO lost to a previous program is sent again (after 2 ms,
 * doubling up to 100 ms). app_run_pair and app_ctrl_exchange_all greet.
 *
 * Events that the caller is not waiting for are kept in a FIFO stash
 * (RX_SEND events are consumed by the mailbox: the message is copied out and
 * its slot re-posted). Everything is single-threaded; memory is owned by the
 * struct app and freed by app_close.
 */
#ifndef DNP_APP_COMMON_H
#define DNP_APP_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <getopt.h>

#include "dnp.h"

#define APP_MBOX_SLOTS 64u
#define APP_MBOX_SLOT_SIZE 256u
#define APP_CTRL_MAGIC 0x444e5043u /* "DNPC" */
#define APP_CTRL_PAYLOAD 192u
#define APP_STASH 8192u
#define APP_MSGQ 1024u

struct app_ctrl {
	uint32_t magic;
	uint32_t tag;        /* what the message is (program-defined) */
	uint32_t src;        /* node id of the sender */
	uint32_t seq;        /* program-defined */
	uint64_t a, b, c, d; /* program-defined (addresses, keys, counts) */
	uint32_t plen;       /* bytes used in payload */
	uint8_t payload[APP_CTRL_PAYLOAD];
};

struct app_msg {
	struct app_ctrl c;
	unsigned hops; /* hop count of the RX_SEND event */
};

struct app {
	struct dnp *d;
	struct dnp_coords self, dims;
	unsigned id, nnodes, port, peer_port;
	int timeout_ms; /* deadline for each blocking helper (DNP_APP_TIMEOUT seconds) */
	int debug;      /* DNP_APP_DEBUG: 1 traces control messages, 2 every event (stderr) */
	uint64_t next_cookie;
	/* mailbox */
	uint8_t *mbox;
	unsigned mbox_registered;
	/* control messages received and not yet taken */
	struct app_msg *msgq;
	unsigned msgq_n;
	/* events not yet taken */
	struct dnp_event *stash;
	unsigned stash_head, stash_n;
	uint64_t events_dropped;
	/* app_greet: our nonce; once greeted, late HELLOs are dropped */
	uint64_t nonce;
	bool greeted;
};

/* Time in nanoseconds (CLOCK_MONOTONIC). */
uint64_t app_now_ns(void);

/* Connects (DNP_SOCKET), learns coordinates, posts the mailbox. Prints why on failure. */
int app_open(struct app *a, const char *prog);
void app_close(struct app *a);

unsigned app_id_of(const struct app *a, struct dnp_coords c);
struct dnp_coords app_coords_of(const struct app *a, unsigned id);
unsigned app_distance(const struct app *a, struct dnp_coords p, struct dnp_coords q);
/* The node farthest from c (first by id among the farthest). */
struct dnp_coords app_farthest(const struct app *a, struct dnp_coords c);
bool app_coords_eq(struct dnp_coords p, struct dnp_coords q);
/* Parses "X,Y,Z". -EINVAL. */
int app_parse_coords(const char *s, struct dnp_coords *c);

/* A buffer for data: from the shared heap when possible, else page-aligned memory. */
void *app_alloc(struct app *a, size_t len);
void app_free(struct app *a, void *p);

/*
 * Next event with type not RX_SEND (those go to the message queue), stashed
 * ones first. Returns 1, 0 on timeout (timeout_ms as in dnp_wait_event), -errno.
 */
int app_next_event(struct app *a, struct dnp_event *ev, int timeout_ms);
/* Puts an event back at the end of the stash (for events meant for later). */
void app_stash_event(struct app *a, const struct dnp_event *ev);

/*
 * Waits for the completion (TX_DONE, GET_DONE or ERROR) of the command with
 * this cookie; other events are stashed. 0 / -ETIMEDOUT / -errno.
 */
int app_wait_completion(struct app *a, uint64_t cookie, struct dnp_event *ev);

/*
 * Sends a control message to node dst (our port) and waits for its
 * completion, retrying while the peer is not ready. Other events met while
 * waiting are stashed. Returns 0 or -errno (-ETIMEDOUT).
 */
int app_ctrl_send(struct app *a, unsigned dst, struct app_ctrl *c);
/* Waits for a control message with this tag from src (src ~0u: any). 0 / -ETIMEDOUT / -errno. */
int app_ctrl_recv(struct app *a, unsigned src, uint32_t tag, struct app_msg *out);
/* Same without waiting (one poll of the event queue): 0 or -EAGAIN. */
int app_ctrl_recv_nowait(struct app *a, unsigned src, uint32_t tag, struct app_msg *out);
/*
 * Registers buf as a PUT target and sends node dst its address (a) and key
 * (b) in a control message of this tag. 0 or -errno (printed, prog first).
 */
int app_offer_buffer(struct app *a, unsigned dst, uint32_t tag, void *buf, size_t len,
		     const char *prog);
/*
 * Greets the nodes ids[0..n) (the header's comment): returns once each of
 * them has heard this program's nonce from this program and answered it, so
 * that control messages sent from now on reach the peers' current programs.
 * Other events met meanwhile are stashed; control messages are queued.
 * 0, -ETIMEDOUT (a peer did not answer within the timeout), -ENOMEM, -errno.
 */
int app_greet(struct app *a, const unsigned *ids, unsigned n);
/* Every node sends (tag) to every other and waits for theirs. */
int app_barrier(struct app *a, uint32_t tag);
/*
 * Sends mine (its tag included) to every other node, then receives the
 * message of that tag from each; theirs (NULL: dropped) has a slot per node
 * id. The first call greets every other node first (app_greet). 0 or -errno.
 */
int app_ctrl_exchange_all(struct app *a, const struct app_ctrl *mine, struct app_msg *theirs);

/* Deterministic pattern of message (src, dst, size, salt): byte i. */
void app_pattern_fill(void *buf, size_t len, uint32_t src, uint32_t dst, uint64_t size,
		      uint32_t salt);
/* Offset of the first byte differing from the pattern, or -1 if all match. */
long long app_pattern_check(const void *buf, size_t len, uint32_t src, uint32_t dst, uint64_t size,
			    uint32_t salt);

/* Sizes: "8,64,4K,1M" (dnp_parse_sizes). Returns the count, -EINVAL, -ERANGE. */
int app_parse_sizes(const char *s, uint64_t *sizes, unsigned max);
/* A size with an optional K/M/G/T suffix (dnp_parse_size). 0, -EINVAL, -ERANGE. */
int app_parse_size(const char *s, uint64_t *out);
/* A count (dnp_parse_u64) of at least min, at most UINT32_MAX. 0, -EINVAL, -ERANGE. */
int app_parse_count(const char *s, unsigned min, unsigned *out);

/* Options shared by the benchmark programs (dnp_pingpong, dnp_bw). */
#define APP_MAX_SIZES 64
#define APP_OPT_TC 0x100 /* getopt value of --tc (no short letter) */
struct app_bench_opts {
	uint64_t sizes[APP_MAX_SIZES];
	unsigned nsizes;
	unsigned iters; /* 0: automatic per size */
	unsigned warmup;
	bool csv, have_peer;
	bool verify; /* test mode: every message has its own bytes, checked on arrival */
	struct dnp_coords peer;
	unsigned tc; /* --tc: traffic class of the measured messages (DNP_TC), 0..7 */
};
/* Defaults: sizes 8, 32, ..., 2M, 4M; no fixed iteration count. */
void app_bench_defaults(struct app_bench_opts *o, unsigned warmup);
/*
 * One shared option, by its getopt letter: p (--peer), s (--sizes),
 * n (--iters), w (--warmup), c (--csv), v (--verify), APP_OPT_TC (--tc,
 * long only). Returns 1 if handled,
 * 0 if the letter is not a shared one, -EINVAL for a bad value.
 */
int app_bench_opt(struct app_bench_opts *o, int c, const char *arg);
uint64_t app_bench_max_size(const struct app_bench_opts *o);
/* The usage lines every benchmark shares (sizes, --csv, --help, dnp-run). */
void app_bench_usage_common(FILE *f);
/* Iterations for a size: --iters if given, else budget bytes' worth within [lo, hi]. */
unsigned app_bench_iters(const struct app_bench_opts *o, uint64_t size, uint64_t budget,
			 unsigned lo, unsigned hi);

/* What a benchmark adds to the shared options (app_bench_parse). */
struct app_bench_cli {
	const char *prog;
	void (*usage)(FILE *f);
	struct option extra;     /* its own long option (name NULL: none) */
	const char *extra_short; /* its getopt letter ("W:", "l") */
	/* handles one of its own options: 0, or -EINVAL for a bad value */
	int (*opt)(void *ctx, int c, const char *arg);
};
/*
 * Parses a benchmark's command line (the shared options, --help, --version
 * and cli's own) into o, handing its own options to cli->opt(ctx, ...).
 * Returns -1 to go on, else the exit status: 0 after --help or --version,
 * 2 after a usage error (app_cli.h: printed with the usage).
 */
int app_bench_parse(int argc, char **argv, const struct app_bench_cli *cli,
		    struct app_bench_opts *o, void *ctx);
/*
 * Who plays what in a two-node measurement: A is (0,0,0), B its +X
 * neighbour or o->peer. Returns 1 with *peer set (B for A, A for B), 0 when
 * this node plays no part, -EINVAL (printed, with hint appended) when the
 * peer is not another node of the torus.
 */
int app_pick_pair(const struct app *a, const struct app_bench_opts *o, const char *prog,
		  const char *hint, struct dnp_coords *peer);
/*
 * app_pick_pair(), then on the two nodes of the pair app_greet and
 * run(a, ctx, peer, is_a), then app_close(a). Returns the exit status: 0
 * (run succeeded, or this node plays no part), 1 (greeting or run failed),
 * 2 (bad peer).
 */
int app_run_pair(struct app *a, const struct app_bench_opts *o, const char *prog, const char *hint,
		 int (*run)(struct app *a, void *ctx, struct dnp_coords peer, bool is_a),
		 void *ctx);

/* Statistics over n samples (sorted in place). */
/* perftest's figures: min, max, typical (median), average, stdev, 99% and 99.9% (nearest rank). */
struct app_stats {
	double min, max, median, mean, stdev, p99, p999;
};
void app_stats_compute(double *v, unsigned n, struct app_stats *st);

const char *app_ev_name(unsigned type);
void app_print_event(const char *prog, const char *what, const struct dnp_event *ev);

#endif
