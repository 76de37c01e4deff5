/* SPDX-License-Identifier: MIT */
/*
 * dnpctl — asks a running dnpd for its state over its application socket
 * (a control connection, api/abi/dnp_session.h: no port, no memory).
 *
 *   dnpctl [--socket DIR/node-<id>.sock] stats|topo
 *   dnpctl [--supervisor HOST:PORT] status [--json | --log]
 *   dnpctl [--socket ...] sensor temp|volt|power VALUE|off
 *   dnpctl [--socket ...] timer T_WRITE_MS T_READ_MS
 *   dnpctl [--socket DIR/node-<id>.sock] impair SPEC|off
 *
 * impair checks SPEC (transport/impair.h; several joined by ';') and writes
 * it to DIR/node-<id>.impair (a new file renamed over the old one), which the
 * daemon applies within 50 ms; `dnpctl stats` shows it per link.
 *
 * The socket defaults to $DNP_SOCKET, else /run/dnp/dnpd.sock; the
 * supervisor to $DNP_SUPERVISOR. topo prints the node line and the "wiring"
 * lines of stats: each link's expected and discovered neighbour
 * (docs/cluster.md, "The cabling check").
 * status asks the LO|FA|MO Fault Supervisor for its picture (a torus map per
 * plane, coloured on a terminal; JSON; or the event log). sensor and timer
 * write the node's LO|FA|MO registers (DIR/node-<id>.lofamo, next to the
 * socket): a simulated sensor reading (m°C, mV, mW) or the timer register
 * (T_write < T_read, refused otherwise). Exit status: 0, 1 (daemon or
 * supervisor error or unreachable), 2 (usage or a refused value), 3 (topo: a
 * link is MISWIRED).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>

#include "dnp_session.h"
#include "impair.h"
#include "regs.h"
#include "svc.h"

static void dnpctl_usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [--socket PATH] stats|topo\n"
		"       %s [--supervisor HOST:PORT] status [--json | --log]\n"
		"       %s [--socket PATH] sensor temp|volt|power VALUE|off\n"
		"       %s [--socket PATH] timer T_WRITE_MS T_READ_MS\n"
		"       dnpctl [--socket PATH] impair SPEC|off\n"
		"\n"
		"  --socket PATH   the daemon's socket (default $DNP_SOCKET, else\n"
		"                  /run/dnp/dnpd.sock)\n"
		"  stats           engine counters, link states and counters, daemon loop\n"
		"                  counters and open ports\n"
		"  topo            each link's expected and discovered neighbour (exit 3\n"
		"                  when one is MISWIRED)\n"
		"  status          the LO|FA|MO supervisor's picture: a torus map per plane\n"
		"                  (colour on a terminal), --json, or --log (event log)\n"
		"  sensor          simulate a DNP sensor reading (m°C, mV, mW); off: real one\n"
		"  timer           set the LO|FA|MO timer register (T_write < T_read, ms)\n"
		"  --supervisor A  the supervisor's address (default $DNP_SUPERVISOR)\n"
		"  impair SPEC     change the daemon's link impairment at run time:\n"
		"                  dir=all|xp|..|zm,loss=P%%,corrupt=P%%,dup=P%%,reorder=P%%,\n"
		"                  delay=Nus,seed=N; several joined by ';'; off clears it\n"
		"  -h, --help      this text\n",
		prog, prog, prog, prog);
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

static int dnpctl_status(const char *addr, unsigned flags)
{
	static uint8_t buf[DNP_SVC_MAX_DGRAM];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct dnp_svc_msg q = { .type = DNP_SVC_STATUS, .seq = (uint32_t)getpid() }, a;
	const char *colon = addr ? strrchr(addr, ':') : NULL;
	char host[64];
	int fd, n;

	if (!colon || (size_t)(colon - addr) >= sizeof(host))
		return -EDESTADDRREQ;
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = 0;
	sa.sin_port = htons((uint16_t)strtoul(colon + 1, NULL, 10));
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -EINVAL;
	q.u.status.flags = flags;
	n = dnp_svc_encode(&q, buf, sizeof(buf));
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		n = -errno;
		goto out;
	}
	for (int tries = 0; tries < 5; tries++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (send(fd, buf, (size_t)n, 0) < 0) {
			n = -errno;
			goto out;
		}
		if (poll(&p, 1, 1000) <= 0)
			continue;
		ssize_t got = recv(fd, buf, sizeof(buf), 0);
		if (got < 0 || dnp_svc_decode(buf, (size_t)got, &a) || a.type != DNP_SVC_TEXT)
			continue;
		fwrite(a.u.text.text, 1, a.u.text.len, stdout);
		n = 0;
		goto out;
	}
	n = -ETIMEDOUT;
out:
	close(fd);
	return n;
}

/* The register block next to the daemon's socket: DIR/node-<id>.sock -> DIR/node-<id>.lofamo. */
static int dnpctl_regs(const char *sock, struct dnp_lfm_regs **r)
{
	char path[PATH_MAX];
	size_t n = strlen(sock);
	unsigned dim[3] = { 0, 0, 0 };

	if (n < 5 || strcmp(sock + n - 5, ".sock") || n + 3 >= sizeof(path))
		return -EINVAL;
	snprintf(path, sizeof(path), "%.*s.lofamo", (int)(n - 5), sock);
	return dnp_lfm_regs_map(path, false, 0, dim, r);
}

static int dnpctl_lofamo(const char *sock, int argc, char **argv)
{
	static const char *const names[DNP_LFM_NSENSORS] = { "temp", "volt", "power" };
	struct dnp_lfm_regs *r;
	int e;

	if (!sock)
		return -EDESTADDRREQ;
	if (!strcmp(argv[0], "timer")) {
		uint32_t tw = (uint32_t)strtoul(argv[1], NULL, 10);
		uint32_t tr = (uint32_t)strtoul(argv[2], NULL, 10);

		e = dnp_lfm_timer_check(tw, tr);
		if (e) {
			fprintf(stderr, "dnpctl: timer T_write %u ms, T_read %u ms refused: %s\n", tw,
				tr, dnp_lfm_timer_strerror(e));
			return 2;
		}
		if ((e = dnpctl_regs(sock, &r)) != 0)
			return e;
		e = dnp_lfm_timer_set(r, tw, tr);
		dnp_lfm_regs_unmap(r);
		return e;
	}
	for (unsigned s = 0; s < DNP_LFM_NSENSORS; s++) {
		if (strcmp(argv[1], names[s]))
			continue;
		if ((e = dnpctl_regs(sock, &r)) != 0)
			return e;
		if (!strcmp(argv[2], "off")) {
			atomic_store(&r->sim[s].on, 0);
		} else {
			char *end;
			long v = strtol(argv[2], &end, 10);

			if (*end || end == argv[2] || v < -1000000000L || v > 1000000000L) {
				dnp_lfm_regs_unmap(r);
				fprintf(stderr, "dnpctl: sensor value '%s': want an integer "
					"(m°C, mV or mW) or off\n", argv[2]);
				return 2;
			}
			atomic_store(&r->sim[s].value, (int32_t)v);
			atomic_store(&r->sim[s].on, 1);
		}
		dnp_lfm_regs_unmap(r);
		return 0;
	}
	fprintf(stderr, "dnpctl: unknown sensor '%s' (temp, volt, power)\n", argv[1]);
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "supervisor", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "log", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = getenv("DNP_SOCKET") && *getenv("DNP_SOCKET") ? getenv("DNP_SOCKET") :
			   "/run/dnp/dnpd.sock";
	const char *sup = getenv("DNP_SUPERVISOR");
	unsigned qflags = 0;
	bool topo;
	int opt, r;

	while ((opt = getopt_long(argc, argv, "s:S:jlh", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			path = optarg;
			break;
		case 'S':
			sup = optarg;
			break;
		case 'j':
			qflags |= DNP_SVC_Q_JSON;
			break;
		case 'l':
			qflags |= DNP_SVC_Q_LOG;
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
	if (optind == argc - 1 && !strcmp(argv[optind], "status")) {
		if (isatty(STDOUT_FILENO) && !getenv("NO_COLOR"))
			qflags |= DNP_SVC_Q_COLOUR;
		r = dnpctl_status(sup, qflags);
		if (r) {
			fprintf(stderr, "dnpctl: supervisor %s: %s\n", sup ? sup : "(none: set "
				"DNP_SUPERVISOR or --supervisor)", strerror(-r));
			return 1;
		}
		return 0;
	}
	if (optind == argc - 3 && (!strcmp(argv[optind], "sensor") ||
				   !strcmp(argv[optind], "timer"))) {
		r = dnpctl_lofamo(path, argc - optind, argv + optind);
		if (r < 0) {
			fprintf(stderr, "dnpctl: LO|FA|MO registers of %s: %s\n",
				path ? path : "(no socket)", strerror(-r));
			return 1;
		}
		return r;
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
