/* SPDX-License-Identifier: MIT */
/*
 * notify — dnpd's word to the service manager (systemd's sd_notify, for
 * dnpd@.service's Type=notify): READY=1 when all its links are first UP (when
 * the RUN_DIR/node-<id>.up file is written, which stays for scripts), a
 * STATUS= line when the links go down or up again, STOPPING=1 at shutdown.
 * Built from notify.c with libsystemd, from notify_none.c (which does nothing)
 * without; outside systemd (no NOTIFY_SOCKET) sd_notify does nothing either.
 * The poll loop's thread only; never blocks for long (a datagram).
 */
#ifndef DNPD_NOTIFY_H
#define DNPD_NOTIFY_H

#include <stdbool.h>

/* The links' state changed: all UP (READY=1 the first time), or not any more. */
void dnpd_notify_links(bool all_up);
/* The daemon is stopping (STOPPING=1). */
void dnpd_notify_stopping(void);

#endif
