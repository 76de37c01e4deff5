/* SPDX-License-Identifier: MIT */
/*
 * dnpctl_cmd — commands of dnpctl in files of their own (dnpctl.c describes
 * the tool): `dnpctl list` (dnpctl_list.c), the daemons reachable on this
 * host, as ibv_devices lists devices, and `dnpctl capture`
 * (dnpctl_capture.c), which has a running daemon record its frames.
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
#ifndef DNPCTL_CMD_H
#define DNPCTL_CMD_H

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

/*
 * capture opens FILE itself (created or truncated, with the caller's
 * rights) and hands the daemon the descriptor over its socket
 * (DNP_SESS_CAPTURE, api/abi/dnp_session.h): the daemon writes the frames of
 * every link into it (transport/pcap.h) and never opens a path for it. With
 * duration_ms it stops the capture after that long (or at SIGINT/SIGTERM);
 * without, the capture runs until `capture --stop` or the daemon's end.
 *
 * dnpctl_capture() - start (file) or stop (file NULL) the capture of the
 * daemon at sock; says what happened on stdout/stderr. Returns the exit
 * status: 0, 1 (the daemon refused or is unreachable), 2 (a file that
 * cannot be a capture).
 */
int dnpctl_capture(const char *sock, const char *file, uint64_t duration_ms);

#endif
