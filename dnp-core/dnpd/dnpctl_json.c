/* SPDX-License-Identifier: MIT */
/*
 * dnpctl_json.c — the stats report as JSON (contract in dnpctl_json.h).
 *
 * Two passes over the lines: the first writes every section but the links
 * and collects unknown lines; the second writes the links, one object per
 * direction in the order the daemon reports them, gathering each link's
 * lines wherever they stand.
 */
#include "dnpctl_json.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 128

struct line {
	char *tok[MAX_TOKENS];
	unsigned n;
};

/* The characters of s, escaped for a JSON string (no quotes around them). */
static void put_chars(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
}

static void put_str(FILE *f, const char *s)
{
	fputc('"', f);
	put_chars(f, s);
	fputc('"', f);
}

/* The tokens of l from 'from' on, joined by spaces, as one JSON string. */
static void put_words(FILE *f, const struct line *l, unsigned from)
{
	fputc('"', f);
	for (unsigned k = from; k < l->n; k++) {
		if (k > from)
			fputc(' ', f);
		put_chars(f, l->tok[k]);
	}
	fputc('"', f);
}

static bool is_number(const char *s)
{
	if (*s == '-')
		s++;
	if (!*s || strlen(s) > 19 || (s[0] == '0' && s[1]))
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static void put_value(FILE *f, const char *s)
{
	if (is_number(s))
		fputs(s, f);
	else
		put_str(f, s);
}

/* "key value key value ..." from token 'from': members of an open object. */
static void put_pairs(FILE *f, const struct line *l, unsigned from, bool *first)
{
	for (unsigned i = from; i + 1 < l->n; i += 2) {
		fputs(*first ? "" : ",", f);
		*first = false;
		put_str(f, l->tok[i]);
		fputc(':', f);
		put_value(f, l->tok[i + 1]);
	}
}

static void split(char *s, struct line *l)
{
	char *save = NULL;

	l->n = 0;
	for (char *t = strtok_r(s, " ", &save); t && l->n < MAX_TOKENS;
	     t = strtok_r(NULL, " ", &save))
		l->tok[l->n++] = t;
}

/* Pairs after the section name take an even count; the known sections. */
static bool is_pairs_section(const struct line *l)
{
	static const char *const sec[] = { "engine", "routes",     "bounds",
					   "daemon", "congestion", "classes" };

	for (size_t i = 0; i < sizeof(sec) / sizeof(sec[0]); i++)
		if (!strcmp(l->tok[0], sec[i]))
			return l->n % 2 == 1;
	return false;
}

/* "node ID (X,Y,Z) of AxBxC transport T idle P uptime_ms U" */
static bool node_shape(const struct line *l)
{
	unsigned x, y, z, a, b, c;

	return l->n >= 5 && l->n % 2 == 1 && is_number(l->tok[1]) && !strcmp(l->tok[3], "of") &&
	       sscanf(l->tok[2], "(%u,%u,%u)", &x, &y, &z) == 3 &&
	       sscanf(l->tok[4], "%ux%ux%u", &a, &b, &c) == 3;
}

static void put_node(FILE *f, const struct line *l)
{
	unsigned x, y, z, a, b, c;
	bool first = false;

	(void)sscanf(l->tok[2], "(%u,%u,%u)", &x, &y, &z);
	(void)sscanf(l->tok[4], "%ux%ux%u", &a, &b, &c);
	fprintf(f, "\"node\":{\"id\":%s,\"coord\":[%u,%u,%u],\"torus\":[%u,%u,%u]", l->tok[1], x, y,
		z, a, b, c);
	put_pairs(f, l, 5, &first);
	fputc('}', f);
}

/* One link's lines: everything whose second token is dir. */
static void put_link(FILE *f, struct line *ls, unsigned nl, const char *dir)
{
	bool first = true, none = false, vc_first = true;

	for (unsigned i = 0; i < nl; i++)
		if (ls[i].n == 3 && !strcmp(ls[i].tok[0], "link") && !strcmp(ls[i].tok[1], dir) &&
		    !strcmp(ls[i].tok[2], "none"))
			none = true;
	put_str(f, dir);
	if (none) {
		fputs(":null", f);
		return;
	}
	fputs(":{", f);
	for (unsigned i = 0; i < nl; i++) {
		struct line *l = &ls[i];

		if (l->n < 3 || strcmp(l->tok[1], dir))
			continue;
		if (!strcmp(l->tok[0], "wiring")) {
			fputs(first ? "" : ",", f);
			first = false;
			fputs("\"wiring\":", f);
			put_words(f, l, 2);
			continue;
		}
		if (strcmp(l->tok[0], "link"))
			continue;
		if (!strcmp(l->tok[2], "vc") && l->n >= 4 && l->n % 2 == 0) {
			bool f2 = false;

			fputs(vc_first ? (first ? "\"vc\":[" : ",\"vc\":[") : ",", f);
			vc_first = first = false;
			fprintf(f, "{\"vc\":");
			put_value(f, l->tok[3]);
			put_pairs(f, l, 4, &f2);
			fputc('}', f);
			continue;
		}
		if (!vc_first) { /* the vc lines are together in the report */
			fputc(']', f);
			vc_first = true;
		}
		/* "link DIR NAME k v ...": impair, transport, a backend's own (verbs) */
		if (!strcmp(l->tok[2], "impair") || !strcmp(l->tok[2], "transport") ||
		    (l->n % 2 == 1 && !is_number(l->tok[2]))) {
			bool f2 = true;

			fputs(first ? "" : ",", f);
			first = false;
			put_str(f, l->tok[2]);
			fputs(":{", f);
			if (!strcmp(l->tok[2], "impair") && l->n % 2 == 0) {
				fputs("\"spec\":", f);
				put_str(f, l->tok[3]);
				f2 = false;
				put_pairs(f, l, 4, &f2);
			} else {
				put_pairs(f, l, 3, &f2);
			}
			fputc('}', f);
			continue;
		}
		if (l->n % 2 == 0)
			put_pairs(f, l, 2, &first);
	}
	if (!vc_first)
		fputc(']', f);
	fputc('}', f);
}

static bool known_line(const struct line *l)
{
	if (!l->n)
		return true;
	if (!strcmp(l->tok[0], "link") || !strcmp(l->tok[0], "wiring"))
		return l->n >= 3;
	if (!strcmp(l->tok[0], "node"))
		return node_shape(l);
	if (!strcmp(l->tok[0], "file"))
		return l->n == 3;
	return is_pairs_section(l);
}

int dnpctl_stats_json(const char *text, FILE *out)
{
	static const char *const dirs[] = { "X+", "X-", "Y+", "Y-", "Z+", "Z-" };
	char *copy = strdup(text), *save = NULL;
	struct line *ls = NULL;
	unsigned nl = 0, cap = 0;
	bool first = true, files = false;

	if (!copy)
		return -ENOMEM;
	for (char *s = strtok_r(copy, "\n", &save); s; s = strtok_r(NULL, "\n", &save)) {
		if (nl == cap) {
			struct line *n = realloc(ls, (cap = cap ? cap * 2 : 64) * sizeof(*ls));

			if (!n) {
				free(ls);
				free(copy);
				return -ENOMEM;
			}
			ls = n;
		}
		split(s, &ls[nl++]);
	}
	fputc('{', out);
	for (unsigned i = 0; i < nl; i++) {
		struct line *l = &ls[i];

		if (l->n && !strcmp(l->tok[0], "node") && node_shape(l)) {
			fputs(first ? "" : ",", out);
			first = false;
			put_node(out, l);
		} else if (l->n == 3 && !strcmp(l->tok[0], "file")) {
			fputs(files ? "," : first ? "\"files\":{" : ",\"files\":{", out);
			first = false;
			files = true;
			put_str(out, l->tok[1]);
			fputc(':', out);
			put_str(out, l->tok[2]);
			if (i + 1 >= nl || ls[i + 1].n != 3 || strcmp(ls[i + 1].tok[0], "file")) {
				fputc('}', out);
				files = false;
			}
		} else if (l->n && is_pairs_section(l)) {
			bool f2 = true;

			fputs(first ? "" : ",", out);
			first = false;
			put_str(out, l->tok[0]);
			fputs(":{", out);
			put_pairs(out, l, 1, &f2);
			fputc('}', out);
		}
	}
	fputs(first ? "\"links\":{" : ",\"links\":{", out);
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		fputs(d ? "," : "", out);
		put_link(out, ls, nl, dirs[d]);
	}
	fputs("},\"other\":[", out);
	first = true;
	for (unsigned i = 0; i < nl; i++) {
		if (known_line(&ls[i]))
			continue;
		fputs(first ? "" : ",", out);
		first = false;
		put_words(out, &ls[i], 0);
	}
	fputs("]}\n", out);
	free(ls);
	free(copy);
	return 0;
}
