// SPDX-License-Identifier: MIT
/*
 * dnpctl — asks a running dnpd for its state over its application socket
 * (a control connection, api/abi/dnp_session.h: no port, no memory).
 *
 *   dnpctl [--socket DIR/node-<id>.sock] stats
 *   dnpctl [--socket DIR/node-<id>.sock] impair SPEC|off
 *
 * impair checks SPEC (transport/impair.h; several joined by ';') and writes
 * it to DIR/node-<id>.impair (a new file renamed over the old one), which the
 * daemon applies within 50 ms; `dnpctl stats` shows it per link.
 *
 * The socket defaults to $DNP_SOCKET. Exit status: 0, 1 (daemon error or
 * unreachable), 2 (usage).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "dnp_session.h"
#include "impair.h"

static void dnpctl_usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [--socket PATH] stats | impair SPEC|off\n"
		"\n"
		"  --socket PATH   the daemon's socket, DIR/node-<id>.sock (default $DNP_SOCKET)\n"
		"  stats           engine counters, link states and counters, daemon loop\n"
		"                  counters and open ports\n"
		"  impair SPEC     change the daemon's link impairment at run time:\n"
		"                  dir=all|xp|..|zm,loss=P%%,corrupt=P%%,dup=P%%,reorder=P%%,\n"
		"                  delay=Nus,seed=N; several joined by ';'; off clears it\n"
		"  -h, --help      this text\n",
		prog);
}

/* Reads exactly len bytes, waiting at most 5 s for each piece. */
static int dnpctl_read(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 5000) <= 0)
			return -ETIMEDOUT;
		n = recv(fd, (char *)buf + done, len - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

static int dnpctl_stats(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct dnp_sess_msg m = {
		.magic = DNP_SESS_MAGIC, .version = DNP_SESS_VERSION, .type = DNP_SESS_STATS,
	};
	char *text;
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    send(fd, &m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m)) {
		r = -errno;
		goto out;
	}
	r = dnpctl_read(fd, &m, sizeof(m));
	if (r)
		goto out;
	if (m.magic != DNP_SESS_MAGIC || m.type != DNP_SESS_STATS || m.len > DNP_SESS_STATS_MAX) {
		r = -EPROTO;
		goto out;
	}
	if (m.status) {
		r = m.status;
		goto out;
	}
	text = malloc(m.len + 1);
	if (!text) {
		r = -ENOMEM;
		goto out;
	}
	r = dnpctl_read(fd, text, m.len);
	if (r == 0) {
		text[m.len] = 0;
		fputs(text, stdout);
	}
	free(text);
out:
	close(fd);
	return r;
}

/* Checks the specs and writes them where the daemon of 'sock' looks. */
static int dnpctl_impair(const char *sock, const char *specs)
{
	char path[4096], tmp[4200], buf[1024];
	char *save = NULL, *sp;
	size_t n = strlen(sock);
	FILE *f;

	if (n < 5 || strcmp(sock + n - 5, ".sock") || n + 8 > sizeof(path))
		return -EINVAL;
	if (strlen(specs) >= sizeof(buf))
		return -E2BIG;
	strcpy(buf, specs);
	for (sp = strtok_r(buf, ";", &save); sp; sp = strtok_r(NULL, ";", &save)) {
		struct dnp_impair_conf c;

		if (dnp_impair_parse(sp, &c)) {
			fprintf(stderr, "dnpctl: bad impairment spec '%s'\n", sp);
			return -EINVAL;
		}
	}
	memcpy(path, sock, n - 5);
	strcpy(path + n - 5, ".impair");
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%s\n", strcmp(specs, "off") ? specs : "");
	if (fclose(f) || rename(tmp, path)) {
		int e = -errno;

		unlink(tmp);
		return e;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = getenv("DNP_SOCKET");
	int opt, r;

	while ((opt = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			path = optarg;
			break;
		case 'h':
			dnpctl_usage(stdout, argv[0]);
			return 0;
		default:
			dnpctl_usage(stderr, argv[0]);
			return 2;
		}
	}
	if (path && optind == argc - 2 && !strcmp(argv[optind], "impair")) {
		r = dnpctl_impair(path, argv[optind + 1]);
		if (r) {
			fprintf(stderr, "dnpctl: impair: %s\n", strerror(-r));
			return r == -EINVAL ? 2 : 1;
		}
		return 0;
	}
	if (optind != argc - 1 || strcmp(argv[optind], "stats") || !path) {
		dnpctl_usage(stderr, argv[0]);
		return 2;
	}
	r = dnpctl_stats(path);
	if (r) {
		fprintf(stderr, "dnpctl: %s: %s\n", path, strerror(-r));
		return 1;
	}
	return 0;
}
