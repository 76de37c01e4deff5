/* SPDX-License-Identifier: MIT */
/*
 * dnpctl_list.c — `dnpctl list` (contract in dnpctl_cmd.h): find the
 * sockets, ask each for its report, print a table or JSON.
 */
#include "dnpctl_cmd.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>

#define LIST_MAX 8192u       /* sockets looked at, at most */
#define LIST_TIMEOUT_MS 1000 /* per connect and per read */

static const char *const dir_names[6] = { "X+", "X-", "Y+", "Y-", "Z+", "Z-" };

struct daemon_entry {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t dev;
	ino_t ino;
	int err; /* 0: answered; else why it did not (-errno) */
	pid_t pid;
	bool parsed; /* the node line had the expected shape */
	unsigned id, coord[3], dim[3];
	char transport[16];
	unsigned long long uptime_ms;
	char link[6][8]; /* state per direction, "" when the node has no such link */
};

struct list {
	struct daemon_entry *e;
	unsigned n;
};

/* Adds path if it is a socket not seen yet (the same inode under two names counts once). */
static int list_add(struct list *l, const char *path)
{
	struct stat st;

	if (strlen(path) >= sizeof(l->e[0].path) || stat(path, &st) || !S_ISSOCK(st.st_mode))
		return 0;
	for (unsigned i = 0; i < l->n; i++)
		if (l->e[i].dev == st.st_dev && l->e[i].ino == st.st_ino)
			return 0;
	if (l->n == LIST_MAX)
		return -E2BIG;
	if (l->n % 64 == 0) {
		struct daemon_entry *ne = realloc(l->e, (l->n + 64) * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		l->e = ne;
	}
	memset(&l->e[l->n], 0, sizeof(l->e[0]));
	strcpy(l->e[l->n].path, path);
	l->e[l->n].dev = st.st_dev;
	l->e[l->n].ino = st.st_ino;
	l->n++;
	return 0;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

/*
 * The sockets of directory dir: node-<id>.sock always, dnpd.sock and any
 * other *.sock when any_sock; with runs, also those of its dnp-run.*
 * subdirectories (one level, never through a symbolic link).
 */
static int list_scan(struct list *l, const char *dir, bool any_sock, bool runs)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char p[PATH_MAX];
	int r = 0;

	if (!d)
		return 0; /* absent or not ours: nothing to list there */
	while (!r && (de = readdir(d)) != NULL) {
		struct stat st;

		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, de->d_name) >= sizeof(p))
			continue;
		if (ends_with(de->d_name, ".sock") &&
		    (any_sock || !strncmp(de->d_name, "node-", 5) ||
		     !strcmp(de->d_name, "dnpd.sock")))
			r = list_add(l, p);
		else if (runs && !strncmp(de->d_name, "dnp-run.", 8) && !lstat(p, &st) &&
			 S_ISDIR(st.st_mode))
			r = list_scan(l, p, false, false);
	}
	closedir(d);
	return r;
}

/* The usual places (dnpctl_cmd.h). */
static int list_usual(struct list *l)
{
	const char *env = getenv("DNP_SOCKET"), *xdg = getenv("XDG_RUNTIME_DIR");
	int r = 0;

	if (env && *env)
		r = list_add(l, env);
	if (!r)
		r = list_scan(l, "/run/dnp", true, false);
	if (!r && xdg && *xdg)
		r = list_scan(l, xdg, false, true);
	if (!r)
		r = list_scan(l, "/dev/shm", false, true);
	if (!r)
		r = list_scan(l, "/tmp", false, true);
	return r;
}

/* Takes the fields of the expected shape from an (untrusted) report. */
static void list_parse(struct daemon_entry *e, const char *text)
{
	const char *line = text;

	for (; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		char dir[3], state[8];

		if (!e->parsed &&
		    sscanf(line,
			   "node %u (%u,%u,%u) of %ux%ux%u transport %15[A-Za-z0-9_.-] idle %*s "
			   "uptime_ms %llu",
			   &e->id, &e->coord[0], &e->coord[1], &e->coord[2], &e->dim[0], &e->dim[1],
			   &e->dim[2], e->transport, &e->uptime_ms) == 9)
			e->parsed = true;
		if (sscanf(line, "link %2[XYZ+-] state %7[A-Z?]", dir, state) == 2) {
			for (unsigned i = 0; i < 6; i++)
				if (!strcmp(dir, dir_names[i]))
					strcpy(e->link[i], state);
		}
	}
}

static int entry_cmp(const void *a, const void *b)
{
	const struct daemon_entry *x = a, *y = b;

	return strverscmp(x->path, y->path);
}

/* s as a JSON string. */
static void put_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void list_json(const struct list *l)
{
	bool first = true;

	printf("{\"daemons\": [");
	for (unsigned i = 0; i < l->n; i++) {
		const struct daemon_entry *e = &l->e[i];

		if (e->err)
			continue;
		printf("%s\n  {\"socket\": ", first ? "" : ",");
		first = false;
		put_str(e->path);
		printf(", \"pid\": %d, \"node\": %u, \"coord\": [%u, %u, %u], "
		       "\"torus\": [%u, %u, %u], \"transport\": \"%s\", \"uptime_ms\": %llu, "
		       "\"links\": {",
		       (int)e->pid, e->id, e->coord[0], e->coord[1], e->coord[2], e->dim[0],
		       e->dim[1], e->dim[2], e->transport, e->uptime_ms);
		for (unsigned d = 0; d < 6; d++) {
			printf("%s\"%s\": ", d ? ", " : "", dir_names[d]);
			if (e->link[d][0])
				printf("\"%s\"", e->link[d]);
			else
				printf("null");
		}
		printf("}}");
	}
	printf("%s],\n \"stale\": [", first ? "" : "\n ");
	first = true;
	for (unsigned i = 0; i < l->n; i++) {
		const struct daemon_entry *e = &l->e[i];

		if (!e->err)
			continue;
		printf("%s\n  {\"socket\": ", first ? "" : ",");
		first = false;
		put_str(e->path);
		printf(", \"error\": ");
		put_str(strerror(-e->err));
		printf("}");
	}
	printf("%s]}\n", first ? "" : "\n ");
}

static void list_text(const struct list *l)
{
	unsigned live = 0;

	for (unsigned i = 0; i < l->n; i++)
		live += !l->e[i].err;
	if (live)
		printf("%-5s %-11s %-9s %-9s %10s %8s  %-35s %s\n", "NODE", "COORD", "TORUS",
		       "TRANSPORT", "UPTIME", "PID", "LINKS", "SOCKET");
	for (unsigned i = 0; i < l->n; i++) {
		const struct daemon_entry *e = &l->e[i];
		char coord[40], dim[40], links[64] = "";
		size_t n = 0;

		if (e->err)
			continue;
		snprintf(coord, sizeof(coord), "(%u,%u,%u)", e->coord[0], e->coord[1], e->coord[2]);
		snprintf(dim, sizeof(dim), "%ux%ux%u", e->dim[0], e->dim[1], e->dim[2]);
		for (unsigned d = 0; d < 6; d++)
			if (e->link[d][0] && n < sizeof(links))
				n += (size_t)snprintf(links + n, sizeof(links) - n, "%s%s %s",
						      n ? " " : "", dir_names[d], e->link[d]);
		printf("%-5u %-11s %-9s %-9s %9.1fs %8d  %-35s %s\n", e->id, coord, dim,
		       e->transport, (double)e->uptime_ms / 1000.0, (int)e->pid,
		       links[0] ? links : "(none)", e->path);
	}
	for (unsigned i = 0; i < l->n; i++)
		if (l->e[i].err)
			printf("stale %s: %s\n", l->e[i].path, strerror(-l->e[i].err));
	if (!l->n)
		printf("no dnpd found (looked for sockets in $DNP_SOCKET, /run/dnp, "
		       "$XDG_RUNTIME_DIR and the dnp-run.* directories there, in /dev/shm and "
		       "/tmp)\n");
}

int dnpctl_list(const char *const *dirs, unsigned ndirs, bool json)
{
	struct list l = { NULL, 0 };
	int r = 0;

	if (ndirs == 0)
		r = list_usual(&l);
	for (unsigned i = 0; !r && i < ndirs; i++)
		r = list_scan(&l, dirs[i], true, true);
	if (r == -ENOMEM) {
		free(l.e);
		return r;
	}
	if (r == -E2BIG)
		fprintf(stderr, "dnpctl: list: more than %u sockets, the rest not asked\n",
			LIST_MAX);
	if (l.n) /* qsort wants an array, even of none */
		qsort(l.e, l.n, sizeof(l.e[0]), entry_cmp);
	for (unsigned i = 0; i < l.n; i++) {
		struct daemon_entry *e = &l.e[i];
		char *text = NULL;

		e->err = dnpctl_ask_pid(e->path, 0, LIST_TIMEOUT_MS, &text, &e->pid);
		if (!e->err) {
			list_parse(e, text);
			if (!e->parsed)
				e->err = -EPROTO; /* it answered, but not as a dnpd does */
		}
		free(text);
	}
	if (json)
		list_json(&l);
	else
		list_text(&l);
	free(l.e);
	return 0;
}
