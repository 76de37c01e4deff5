/* SPDX-License-Identifier: MIT */
/*
 * dnpctl — asks a running dnpd for its state over its application socket
 * (a control connection, api/abi/dnp_session.h: no port, no memory).
 *
 *   dnpctl [--socket DIR/node-<id>.sock] stats|topo
 *
 * The socket defaults to $DNP_SOCKET, else /run/dnp/dnpd.sock. topo prints
 * the node line and the "wiring" lines of stats: each link's expected and
 * discovered neighbour (docs/cluster.md, "Cabling check"). Exit status: 0,
 * 1 (daemon error or unreachable), 2 (usage), 3 (topo: a link is MISWIRED).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "dnp_session.h"

static void dnpctl_usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [--socket PATH] stats|topo\n"
		"\n"
		"  --socket PATH   the daemon's socket (default $DNP_SOCKET, else\n"
		"                  /run/dnp/dnpd.sock)\n"
		"  stats           engine counters, link states and counters, daemon loop\n"
		"                  counters and open ports\n"
		"  topo            each link's expected and discovered neighbour (exit 3\n"
		"                  when one is MISWIRED)\n"
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

/* Prints the report, or with topo only its node and wiring lines; 3 if one is MISWIRED. */
static int dnpctl_print(char *text, bool topo)
{
	bool miswired = false;
	char *line, *save = NULL;

	if (!topo) {
		fputs(text, stdout);
		return 0;
	}
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "node ", 5) && strncmp(line, "wiring ", 7))
			continue;
		puts(line);
		if (strstr(line, " MISWIRED"))
			miswired = true;
	}
	return miswired ? 3 : 0;
}

static int dnpctl_stats(const char *path, bool topo)
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
		r = dnpctl_print(text, topo);
	}
	free(text);
out:
	close(fd);
	return r;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = getenv("DNP_SOCKET") && *getenv("DNP_SOCKET") ? getenv("DNP_SOCKET") :
			   "/run/dnp/dnpd.sock";
	bool topo;
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
	if (optind != argc - 1 || (strcmp(argv[optind], "stats") && strcmp(argv[optind], "topo"))) {
		dnpctl_usage(stderr, argv[0]);
		return 2;
	}
	topo = !strcmp(argv[optind], "topo");
	r = dnpctl_stats(path, topo);
	if (r == 3)
		return 3;
	if (r) {
		fprintf(stderr, "dnpctl: %s: %s\n", path, strerror(-r));
		return 1;
	}
	return 0;
}
