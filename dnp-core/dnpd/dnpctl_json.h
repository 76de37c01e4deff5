/* SPDX-License-Identifier: MIT */
/*
 * dnpctl_json — `dnpctl stats --json`: the daemon's stats report (lines of
 * "section [name] key value key value ...", dnp-core/dnpd/ctl.c) as one JSON
 * object, so that scripts need no parser of their own:
 *
 *   {"node": {"id", "coord", "torus", "transport", "idle", "uptime_ms"},
 *    "files": {"lofamo": PATH, "impair": PATH},
 *    "engine": {...}, "routes": {...}, "bounds": {...}, "daemon": {...},
 *    "links": {"X+": {"state", "local", "remote", counters..., "vc": [{...}],
 *              "impair": {"spec", ...}, "transport": {...}, "wiring": TEXT},
 *              "Y+": null, ...},
 *    "other": [lines of no known shape]}
 *
 * A value made of digits (with an optional minus sign) is a number, any
 * other a string. The text comes from a daemon over a socket: nothing in it
 * is trusted, every string is escaped, and a line of an unknown shape lands
 * in "other" whole rather than being guessed at.
 */
#ifndef DNPCTL_JSON_H
#define DNPCTL_JSON_H

#include <stdio.h>

/* dnpctl_stats_json() - writes text as JSON to out. 0, or -ENOMEM. */
int dnpctl_stats_json(const char *text, FILE *out);

#endif
