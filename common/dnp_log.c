/* SPDX-License-Identifier: MIT */
/*
 * dnp_log — see dnp_log.h.
 */
#include "dnp_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const char *const dnp_log_names[] = { "error", "warn", "info", "debug" };

static struct {
	const char *prog;
	FILE *f;
	bool journal;
	enum dnp_log_level level;
	char node[64];
} dnp_logger = { .prog = "?", .level = DNP_LOG_INFO };

const char *dnp_log_level_name(int level)
{
	return level >= 0 && level <= DNP_LOG_DEBUG ? dnp_log_names[level] : "?";
}

int dnp_log_priority(int level)
{
	static const int prio[] = { 3, 4, 6, 7 }; /* LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG */

	return level >= 0 && level <= DNP_LOG_DEBUG ? prio[level] : 6;
}

int dnp_log_level_parse(const char *s, enum dnp_log_level *out)
{
	static const struct {
		const char *name;
		enum dnp_log_level level;
	} alias[] = { { "error", DNP_LOG_ERR }, { "err", DNP_LOG_ERR },
		      { "warn", DNP_LOG_WARN }, { "warning", DNP_LOG_WARN },
		      { "info", DNP_LOG_INFO }, { "debug", DNP_LOG_DEBUG },
		      { "0", DNP_LOG_ERR },     { "1", DNP_LOG_WARN },
		      { "2", DNP_LOG_INFO },    { "3", DNP_LOG_DEBUG } };

	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++) {
		if (!strcasecmp(s, alias[i].name)) {
			*out = alias[i].level;
			return 0;
		}
	}
	return -EINVAL;
}

bool dnp_log_journal_match(const char *journal_stream, unsigned long long dev,
			   unsigned long long ino)
{
	unsigned long long d, i;
	char *end;

	if (!journal_stream || !*journal_stream)
		return false;
	errno = 0;
	d = strtoull(journal_stream, &end, 10);
	if (errno || end == journal_stream || *end != ':')
		return false;
	journal_stream = end + 1;
	i = strtoull(journal_stream, &end, 10);
	if (errno || end == journal_stream || *end)
		return false;
	return d == dev && i == ino;
}

/* Appends at most what fits; returns the new length (never past cap - 1). */
static size_t dnp_log_put(char *buf, size_t cap, size_t n, const char *s)
{
	size_t len = strlen(s);

	if (n + len > cap - 1)
		len = cap - 1 - n;
	memcpy(buf + n, s, len);
	buf[n + len] = 0;
	return n + len;
}

size_t dnp_log_format(char *buf, size_t cap, const struct dnp_log_fields *f)
{
	char head[64];
	size_t n = 0;

	if (cap < 16)
		return 0;
	buf[0] = 0;
	if (f->journal) {
		snprintf(head, sizeof(head), "<%d>", dnp_log_priority(f->level));
	} else {
		struct tm tm;
		time_t sec = f->ts.tv_sec;

		gmtime_r(&sec, &tm);
		snprintf(head, sizeof(head), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, (long)(f->ts.tv_nsec / 1000000) % 1000);
	}
	n = dnp_log_put(buf, cap, n, head);
	n = dnp_log_put(buf, cap, n, dnp_log_level_name(f->level));
	n = dnp_log_put(buf, cap, n, " ");
	n = dnp_log_put(buf, cap, n, f->prog ? f->prog : "?");
	if (f->node && *f->node) {
		n = dnp_log_put(buf, cap, n, " ");
		n = dnp_log_put(buf, cap, n, f->node);
	}
	n = dnp_log_put(buf, cap, n, ": ");
	n = dnp_log_put(buf, cap, n, f->msg ? f->msg : "");
	/* one line: a newline inside the message would forge another */
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	if (n + 1 >= cap) { /* cut: say so */
		n = cap - 5;
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n++] = '\n';
	buf[n] = 0;
	return n;
}

static bool dnp_log_is_journal(FILE *f)
{
	struct stat st;

	if (fstat(fileno(f), &st) < 0)
		return false;
	return dnp_log_journal_match(getenv("JOURNAL_STREAM"), (unsigned long long)st.st_dev,
				     (unsigned long long)st.st_ino);
}

void dnp_log_setup(const char *prog, FILE *f, enum dnp_log_level level)
{
	dnp_logger.prog = prog ? prog : "?";
	dnp_logger.f = f ? f : stderr;
	dnp_logger.level = level;
	dnp_logger.journal = dnp_log_is_journal(dnp_logger.f);
}

void dnp_log_set_node(const char *node)
{
	snprintf(dnp_logger.node, sizeof(dnp_logger.node), "%s", node ? node : "");
}

void dnp_log_set_level(enum dnp_log_level level)
{
	dnp_logger.level = level;
}

enum dnp_log_level dnp_log_get_level(void)
{
	return dnp_logger.level;
}

bool dnp_log_enabled(int level)
{
	return level <= (int)dnp_logger.level;
}

static void dnp_log_write(FILE *f, bool journal, int level, const char *fmt, va_list ap)
{
	char msg[DNP_LOG_LINE_MAX], line[DNP_LOG_LINE_MAX + 128];
	struct dnp_log_fields lf = {
		.level = (enum dnp_log_level)level,
		.journal = journal,
		.prog = dnp_logger.prog,
		.node = dnp_logger.node,
		.msg = msg,
	};

	vsnprintf(msg, sizeof(msg), fmt, ap);
	clock_gettime(CLOCK_REALTIME, &lf.ts);
	dnp_log_format(line, sizeof(line), &lf);
	fputs(line, f);
	fflush(f);
}

void dnp_vlog(int level, const char *fmt, va_list ap)
{
	if (!dnp_log_enabled(level))
		return;
	dnp_log_write(dnp_logger.f ? dnp_logger.f : stderr, dnp_logger.journal, level, fmt, ap);
}

void dnp_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dnp_vlog(level, fmt, ap);
	va_end(ap);
}

void dnp_log_to(FILE *f, int level, const char *fmt, ...)
{
	va_list ap;

	if (!f || !dnp_log_enabled(level))
		return;
	va_start(ap, fmt);
	dnp_log_write(f, f == dnp_logger.f ? dnp_logger.journal : dnp_log_is_journal(f), level, fmt,
		      ap);
	va_end(ap);
}
