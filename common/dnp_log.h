/* SPDX-License-Identifier: MIT */
/*
 * dnp_log.h — the one log format of the long-running processes (dnpd,
 * dnp-hfm, dnp-supervisor), so that their lines read, sort and grep alike:
 *
 *     2026-12-05T04:14:22.123Z info dnpd node 3 (1,1,0): link X+ INIT -> UP
 *     TIMESTAMP                LEVEL PROG NODE:          MESSAGE
 *
 * TIMESTAMP is the wall clock in UTC, ISO-8601 with milliseconds (so that
 * the lines of several processes, and of several hosts, merge by time);
 * LEVEL is one of error, warn, info, debug; NODE is what the process speaks
 * for (a node's id and coordinates, or nothing for the supervisor); the
 * message is in words.
 *
 * When the stream is the systemd journal (the environment variable
 * JOURNAL_STREAM names the device and inode of the log's file descriptor),
 * the timestamp gives way to the syslog priority in angle brackets, as
 * sd-daemon(3) prescribes: "<6>info dnpd node 3 (1,1,0): ...". journald
 * strips it, stamps the line itself and keeps the priority.
 *
 * A process has one logger (global state, set up once by main() before any
 * thread starts); dnp_log() may then be called from its threads: each line
 * is written with one stdio call and flushed at once, so lines do not
 * interleave and none waits in a buffer when the process dies. dnp_log_format() and dnp_log_journal_match() are pure and are
 * what the unit test (tests/test_dnp_log.c) checks.
 */
#ifndef DNP_LOG_H
#define DNP_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

/* Levels, most severe first; a logger writes the levels <= its threshold. */
enum dnp_log_level {
	DNP_LOG_ERR = 0,
	DNP_LOG_WARN = 1,
	DNP_LOG_INFO = 2,
	DNP_LOG_DEBUG = 3,
};

#define DNP_LOG_LINE_MAX 1024 /* a longer message is cut (and ends with "...") */

/* One line's fields, for dnp_log_format(). */
struct dnp_log_fields {
	enum dnp_log_level level;
	bool journal;       /* "<N>" priority instead of the timestamp */
	struct timespec ts; /* CLOCK_REALTIME; ignored when journal */
	const char *prog;   /* "dnpd" */
	const char *node;   /* "node 3 (1,1,0)", or NULL / "" for none */
	const char *msg;    /* the message, without a newline */
};

/*
 * dnp_log_format() - one line (with its newline) into buf, NUL-terminated,
 * cut to cap - 1 bytes ("...\n" at the end when cut). Returns the length
 * written, or 0 when cap < 16.
 */
size_t dnp_log_format(char *buf, size_t cap, const struct dnp_log_fields *f);

/* The level's name ("error", "warn", "info", "debug"; "?" outside the enum). */
const char *dnp_log_level_name(int level);

/* The syslog priority of a level (3 err, 4 warning, 6 info, 7 debug). */
int dnp_log_priority(int level);

/*
 * dnp_log_level_parse() - a level by name (error, warn, info, debug, and
 * err, warning) or number (0..3). Returns 0 or -EINVAL.
 */
int dnp_log_level_parse(const char *s, enum dnp_log_level *out);

/*
 * dnp_log_journal_match() - whether JOURNAL_STREAM's value ("DEV:INO", as
 * systemd sets it) names the file whose device and inode are dev and ino.
 * A NULL, empty or malformed value is no match.
 */
bool dnp_log_journal_match(const char *journal_stream, unsigned long long dev,
			   unsigned long long ino);

/*
 * dnp_log_setup() - the process's logger: prog's lines go to f (NULL:
 * stderr) at threshold level; the journal prefix is used when f's file
 * descriptor is the one JOURNAL_STREAM names.
 * Call once from main() before any thread starts (and again to change the
 * stream). prog must outlive the logger.
 */
void dnp_log_setup(const char *prog, FILE *f, enum dnp_log_level level);

/* The node field of every later line ("" for none; cut at 63 bytes). */
void dnp_log_set_node(const char *node);

/* The threshold; lines of a higher (less severe) level are dropped. */
void dnp_log_set_level(enum dnp_log_level level);
enum dnp_log_level dnp_log_get_level(void);

/* Whether a line of this level would be written. */
bool dnp_log_enabled(int level);

/* dnp_log() - one line at level, printf-style message (no newline). */
void dnp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dnp_vlog(int level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/*
 * dnp_log_to() - dnp_log() to another stream f (a component handed its
 * own, as the supervisor's hooks are): the same format, prog and node, the
 * journal prefix when f is the journal stream. f NULL: nothing.
 */
void dnp_log_to(FILE *f, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
