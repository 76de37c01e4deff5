/* SPDX-License-Identifier: MIT */
/*
 * dnpctl_list — `dnpctl list`: the daemons reachable on this host, as
 * ibv_devices lists devices, and `dnpctl capture`, which asks a running
 * daemon to record its frames (dnpctl.c describes the commands).
 *
 * list looks for daemon sockets where dnpd and dnp-run put them: $DNP_SOCKET,
 * /run/dnp (dnpd.sock, node-<id>.sock), $XDG_RUNTIME_DIR (the same names),
 * and the run directories of dnp-run (dnp-run.* in $XDG_RUNTIME_DIR,
 * /dev/shm and /tmp: node-<id>.sock); or only in the directories given.
 * Each socket is asked for its report (a control connection, bounded: 1 s to
 * connect, 1 s per read); one that does not answer is listed as stale with
 * the reason, never waited on longer. A report is untrusted text: only
 * fields of the expected shape are taken, names are restricted to
 * [A-Za-z0-9_.-].
 */
#ifndef DNPCTL_LIST_H
#define DNPCTL_LIST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* dnpctl.c: a connection to a daemon's socket (see there). */
int dnpctl_connect(const char *path, int timeout_ms, pid_t *pid);
/* dnpctl.c: one STATS request and its report (see there). */
int dnpctl_ask_pid(const char *path, uint32_t arg, int timeout_ms, char **text, pid_t *pid);

/*
 * Lists the daemons found in dirs (ndirs of them; 0: the usual places) as
 * a table or (json) one JSON object. Returns 0 (also when none was found)
 * or -ENOMEM.
 */
int dnpctl_list(const char *const *dirs, unsigned ndirs, bool json);

#endif
