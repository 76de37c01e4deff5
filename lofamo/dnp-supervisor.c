/* SPDX-License-Identifier: MIT */
/*
 * dnp-supervisor — the Fault Supervisor (EURETILE report, LO|FA|MO: Fault
 * Supervisor): one process on a master node. It listens on the service
 * network (UDP), acknowledges every HEALTH datagram of the Host Fault
 * Managers (lofamo/svc.h), builds the systemic picture (lofamo/sup.h),
 * appends every change to a time-stamped event log, and answers STATUS
 * queries (dnpctl status) with the torus map, JSON or the log.
 *
 *   dnp-supervisor --torus XxYxZ --listen HOST:PORT [--listen-fd N] [--silence-ms MS]
 *                  [--t-write MS --t-read MS] [--log FILE]
 *
 * --listen-fd: the UDP socket is already bound (by dnp-run) and open as
 * descriptor N; HOST:PORT is then only what the log says.
 *
 * Times in the picture and the log are CLOCK_REALTIME milliseconds (so that
 * drills can compare them with the moment they injected a fault).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "regs.h"
#include "sup.h"

static atomic_bool stop;

static void on_stop(int sig)
{
	(void)sig;
	atomic_store(&stop, true);
}

static uint64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dnp-supervisor --torus XxYxZ --listen HOST:PORT [--silence-ms MS]\n"
		"                      [--t-write MS --t-read MS] [--log FILE]\n"
		"  --silence-ms MS   an HFM silent this long is 'silent' (default 2 x T_read + T_write)\n"
		"  --log FILE        append the event log to FILE (default: standard output)\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "torus", required_argument, NULL, 't' },
		{ "listen", required_argument, NULL, 'l' },
		{ "silence-ms", required_argument, NULL, 's' },
		{ "t-write", required_argument, NULL, 'w' },
		{ "t-read", required_argument, NULL, 'R' },
		{ "log", required_argument, NULL, 'L' },
		{ "listen-fd", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static uint8_t buf[DNP_SVC_MAX_DGRAM], out[DNP_SVC_MAX_DGRAM];
	static char text[DNP_SVC_TEXT_MAX];
	struct dnp_sup_conf sc = { 0 };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct sigaction act = { 0 };
	struct dnp_sup *s;
	uint32_t tw = DNP_LFM_T_WRITE_DEFAULT, tr = DNP_LFM_T_READ_DEFAULT;
	const char *listen_at = NULL, *log_path = NULL;
	bool have_torus = false;
	uint64_t logged = 0, next_tick, nstall = 0, stall_ms = 0, seen_stalls = 0;
	FILE *log = stdout;
	int c, fd = -1, e;

	while ((c = getopt_long(argc, argv, "t:l:s:w:R:L:F:h", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			if (dnp_torus_parse(optarg, &sc.torus)) {
				fprintf(stderr, "dnp-supervisor: bad --torus '%s'\n", optarg);
				return 2;
			}
			have_torus = true;
			break;
		case 'l':
			listen_at = optarg;
			break;
		case 's':
			sc.silence_ms = strtoull(optarg, NULL, 10);
			break;
		case 'w':
			tw = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'R':
			tr = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'L':
			log_path = optarg;
			break;
		case 'F':
			fd = atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!have_torus || !listen_at || optind != argc) {
		usage(stderr);
		return 2;
	}
	if ((e = dnp_lfm_timer_check(tw, tr)) != 0) {
		fprintf(stderr, "dnp-supervisor: T_write %u ms, T_read %u ms refused: %s\n", tw, tr,
			dnp_lfm_timer_strerror(e));
		return 2;
	}
	if (!sc.silence_ms)
		sc.silence_ms = 2ull * tr + tw;
	sc.stall_ms = tw; /* off the CPU for longer than T_write: the late-reader rule */
	{
		char host[64];
		const char *colon = strrchr(listen_at, ':');

		if (!colon || (size_t)(colon - listen_at) >= sizeof(host)) {
			fprintf(stderr, "dnp-supervisor: bad --listen '%s'\n", listen_at);
			return 2;
		}
		memcpy(host, listen_at, (size_t)(colon - listen_at));
		host[colon - listen_at] = 0;
		sa.sin_port = htons((uint16_t)strtoul(colon + 1, NULL, 10));
		if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 || !sa.sin_port) {
			fprintf(stderr, "dnp-supervisor: bad --listen '%s'\n", listen_at);
			return 2;
		}
	}
	if (log_path && !(log = fopen(log_path, "ae"))) {
		perror(log_path);
		return 1;
	}
	if (fd >= 0) {
		/* Handed over by dnp-run, already bound: keep it out of any child. */
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
			fprintf(stderr, "dnp-supervisor: --listen-fd %d: %s\n", fd,
				strerror(errno));
			return 1;
		}
	} else {
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			fprintf(stderr, "dnp-supervisor: bind %s: %s\n", listen_at,
				strerror(errno));
			return 1;
		}
	}
	if (dnp_sup_create(&sc, real_ms(), &s)) {
		fprintf(stderr, "dnp-supervisor: out of memory\n");
		return 1;
	}
	act.sa_handler = on_stop;
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	fprintf(log,
		"%" PRIu64 ".%03u supervisor up: torus %ux%ux%u, T_write %u ms, T_read %u ms, "
		"silence %" PRIu64 " ms\n",
		real_ms() / 1000, (unsigned)(real_ms() % 1000), sc.torus.dim[0], sc.torus.dim[1],
		sc.torus.dim[2], tw, tr, sc.silence_ms);
	fflush(log);
	next_tick = real_ms();
	while (!atomic_load(&stop)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now;

		(void)poll(&p, 1, 20);
		for (;;) {
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			ssize_t n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT,
					     (struct sockaddr *)&from, &fl);
			struct dnp_svc_msg q;
			int r;

			if (n < 0)
				break;
			now = real_ms();
			if (dnp_svc_decode(buf, (size_t)n, &q) == 0 && q.type == DNP_SVC_STATUS) {
				struct dnp_svc_msg t = { .type = DNP_SVC_TEXT, .seq = q.seq };

				dnp_sup_tick(s, now);
				t.u.text.text = text;
				t.u.text.len = dnp_sup_render(s, q.u.status.flags, now, text,
							      sizeof(text));
				r = dnp_svc_encode(&t, out, sizeof(out));
			} else {
				r = dnp_sup_on_msg(s, buf, (size_t)n, now, out, sizeof(out));
			}
			if (r > 0)
				(void)sendto(fd, out, (size_t)r, MSG_DONTWAIT,
					     (struct sockaddr *)&from, fl);
		}
		now = real_ms();
		if (now >= next_tick) {
			dnp_sup_tick(s, now);
			next_tick = now + 20;
		}
		dnp_sup_stalls(s, &nstall, &stall_ms);
		if (nstall != seen_stalls) {
			fprintf(log,
				"%" PRIu64 ".%03u supervisor was off the CPU (%" PRIu64
				" stalls, %" PRIu64 " ms in all): silence deadlines moved by it\n",
				now / 1000, (unsigned)(now % 1000), nstall, stall_ms);
			seen_stalls = nstall;
		}
		for (; logged < dnp_sup_nevents(s); logged++) {
			const struct dnp_sup_event *ev = dnp_sup_event(s, logged);

			if (ev)
				fprintf(log, "%" PRIu64 ".%03u node %u %s (%s)\n", ev->t_ms / 1000,
					(unsigned)(ev->t_ms % 1000), ev->node, ev->what,
					dnp_sup_path_name(ev->path));
		}
		fflush(log);
	}
	dnp_sup_destroy(s);
	close(fd);
	if (log != stdout)
		fclose(log);
	return 0;
}
