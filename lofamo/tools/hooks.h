/* SPDX-License-Identifier: MIT */
/*
 * hooks — the Fault Supervisor's responses (dnp-supervisor --on-fault CMD,
 * --on-heal CMD): a command run when a node turns faulty and when it is
 * healthy again, so that the system can act on the picture (drain the node in
 * the batch system, page someone), not only show it.
 *
 * A node is faulty while its host is faulty, silent or dead, or its DNP is
 * faulty or dead (the caller decides; dnp-supervisor uses
 * dnp_sup_node()). The hooks see the node's state, not the event lines: a
 * hook runs once per transition of that state, however many events the
 * supervisor logs about it. A node starts healthy: the first hook of a node
 * is always on-fault, and on-heal follows only an on-fault.
 *
 * Each hook is "/bin/sh -c CMD" started with posix_spawn in a process group of
 * its own, standard input /dev/null, standard output and error the
 * supervisor's. The event is in its environment:
 *   DNP_EVENT        fault | heal
 *   DNP_NODE_ID      the node id (x + X*(y + Y*z))
 *   DNP_NODE_COORD   X,Y,Z
 *   DNP_HOST_STATE   the host's state (ok, warning, faulty, silent, dead, unknown)
 *   DNP_DNP_STATE    the DNP's state (ok, faulty, dead, unknown)
 *   DNP_PATH         how the supervisor knows (service, relay, inference, silence)
 *   DNP_EVENT_JSON   all of the above and the time (wall clock ms) as one JSON object:
 *     {"event":"fault","node":3,"coord":[1,1,0],"host":"ok","dnp":"faulty",
 *      "path":"service","t_ms":1764900000123}
 *
 * The supervisor's loop never waits for a hook: dnp_hooks_poll() reaps the
 * finished ones (waitpid WNOHANG), kills (SIGKILL to its group) one that ran
 * longer than timeout_ms, and starts what is pending while fewer than
 * max_running run. A node runs at most one hook at a time: a heal while its
 * fault hook still runs waits for it (so a drain and its undo cannot race),
 * and a node that turned faulty and healthy again meanwhile runs nothing
 * more. A hook that exits non-zero, is killed or cannot start is logged.
 *
 * Memory: allocated by dnp_hooks_create. One thread.
 */
#ifndef LOFAMO_HOOKS_H
#define LOFAMO_HOOKS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct dnp_hooks_conf {
	const char *on_fault, *on_heal; /* sh -c commands; NULL or "": none */
	uint32_t nnodes;                /* > 0 */
	uint32_t dim[3];                /* the torus, for DNP_NODE_COORD */
	unsigned max_running;           /* > 0: hooks running at once */
	uint64_t timeout_ms;            /* > 0: a hook running longer is killed */
	FILE *log;                      /* where failures and starts are said */
};

/* A node's state as the hooks see it (strings are copied). */
struct dnp_hooks_state {
	bool faulty;
	const char *host, *dnp, *path;
	uint64_t t_ms; /* when the supervisor saw it (wall clock ms) */
};

struct dnp_hooks;

/* Errors: -EINVAL (no node, no slot, no timeout), -ENOMEM. */
int dnp_hooks_create(const struct dnp_hooks_conf *c, struct dnp_hooks **out);
/* Kills the hooks still running (SIGKILL to their groups), reaps them, frees h. */
void dnp_hooks_destroy(struct dnp_hooks *h);
/*
 * The node's current state. A change of 'faulty' makes a hook pending (started
 * by the next dnp_hooks_poll); the rest only updates what it will be told.
 * Errors: -ERANGE (node outside the torus).
 */
int dnp_hooks_set(struct dnp_hooks *h, uint32_t node, const struct dnp_hooks_state *st);
/* Reaps, kills the overdue, starts the pending. Never blocks. now_ms: dnp_hooks_now_ms(). */
void dnp_hooks_poll(struct dnp_hooks *h, uint64_t now_ms);
/* CLOCK_MONOTONIC in ms, for dnp_hooks_poll. */
uint64_t dnp_hooks_now_ms(void);
/* Hooks started, hooks that failed (exit != 0, signal, timeout, spawn error), running now. */
void dnp_hooks_counts(const struct dnp_hooks *h, uint64_t *started, uint64_t *failed,
		      unsigned *running);

#endif
