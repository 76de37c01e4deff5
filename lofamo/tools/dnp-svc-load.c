/* SPDX-License-Identifier: MIT */
/*
 * dnp-svc-load — many Host Fault Managers from one process, for measuring
 * supervisors (docs/lofamo.md, "A hierarchy of supervisors").
 *
 * It speaks the service protocol (lofamo/core/svc.h) as every node of a torus
 * would: each simulated HFM sends a HEALTH every T_write (all healthy: host
 * devices normal, the DNP alive, every link ok), staggered evenly over the
 * period, and counts the ACKs that come back. Node i goes to supervisor
 * i / GROUP_SIZE of the --supervisor list (one address: every node to it).
 * --stop-node ID --stop-at MS makes node ID fall silent MS after the start,
 * as a dead host would; the wall-clock time of that moment is printed so that
 * a bench can compare it with the supervisor's event stamps.
 *
 *   dnp-svc-load --torus XxYxZ --supervisor HOST:PORT[,HOST:PORT...]
 *                [--group-size N] [--t-write MS] [--duration MS]
 *                [--stop-node ID --stop-at MS]
 *
 * Datagrams go out and come in by batches (sendmmsg/recvmmsg) over one UDP
 * socket. At the end it prints one line:
 *   sent N acks M stop_node ID stop_wall_ms T
 * Exit status 2 on bad usage, 1 when the socket fails.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>

#include "dnp_parse.h"
#include "svc.h"
#include "tool.h"
#include "torus.h"

#define PROG "dnp-svc-load"
#define MAX_SUPS 4096u
#define BATCH 64u
#define HEALTH_MAX 256u

static atomic_bool stop;

static void on_stop(int sig)
{
	(void)sig;
	atomic_store(&stop, true);
}

static uint64_t now_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

struct load {
	struct dnp_torus torus;
	uint32_t n, group_size, tw, duration, stop_node, stop_at;
	bool have_stop;
	struct sockaddr_in sup[MAX_SUPS];
	unsigned nsup;
	uint32_t *seq, *inc;
	int fd;
	uint64_t sent, acks, stop_wall;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dnp-svc-load --torus XxYxZ --supervisor HOST:PORT[,HOST:PORT...]\n"
		"                    [--group-size N] [--t-write MS] [--duration MS]\n"
		"                    [--stop-node ID --stop-at MS]\n"
		"  node i reports to supervisor i / N of the list (default N: all to the first)\n"
		"  --duration MS   run that long (default 30000)\n"
		"  --stop-node/--stop-at  node ID stops reporting MS after the start\n");
}

/* "A:P,A:P,..." into l->sup. 0, or -EINVAL after printing why. */
static int load_sups(struct load *l, const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	for (char *it = strtok_r(copy, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
		if (l->nsup == MAX_SUPS || dnp_parse_ipv4_port(it, &l->sup[l->nsup])) {
			fprintf(stderr, PROG ": bad --supervisor entry '%s'\n", it);
			r = -EINVAL;
			break;
		}
		l->nsup++;
	}
	free(copy);
	return r;
}

/* The command line into l. Returns -1 to go on, else the exit status. */
static int load_args(int argc, char **argv, struct load *l)
{
	static const struct option lo[] = {
		{ "torus", required_argument, NULL, 't' },
		{ "supervisor", required_argument, NULL, 's' },
		{ "group-size", required_argument, NULL, 'g' },
		{ "t-write", required_argument, NULL, 'w' },
		{ "duration", required_argument, NULL, 'd' },
		{ "stop-node", required_argument, NULL, 'n' },
		{ "stop-at", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_torus = false, have_at = false;
	int c, r = 0;

	while ((c = getopt_long(argc, argv, "t:s:g:w:d:n:a:h", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			if (dnp_torus_parse(optarg, &l->torus)) {
				fprintf(stderr, PROG ": bad --torus '%s'\n", optarg);
				return 2;
			}
			have_torus = true;
			break;
		case 's':
			r = load_sups(l, optarg);
			break;
		case 'g':
			r = lfm_tool_u32(PROG, "group-size", optarg, UINT32_MAX, &l->group_size);
			break;
		case 'w':
			r = lfm_tool_u32(PROG, "t-write", optarg, DNP_LFM_T_MAX, &l->tw);
			break;
		case 'd':
			r = lfm_tool_u32(PROG, "duration", optarg, 3600000, &l->duration);
			break;
		case 'n':
			r = lfm_tool_u32(PROG, "stop-node", optarg, UINT32_MAX, &l->stop_node);
			l->have_stop = true;
			break;
		case 'a':
			r = lfm_tool_u32(PROG, "stop-at", optarg, 3600000, &l->stop_at);
			have_at = true;
			break;
		default:
			return lfm_tool_usage_exit(c, usage);
		}
		if (r)
			return 2;
	}
	if (!have_torus || !l->nsup || optind != argc || l->have_stop != have_at)
		return lfm_tool_usage_exit('?', usage);
	l->n = dnp_torus_size(&l->torus);
	if (!l->group_size)
		l->group_size = l->n;
	if (l->tw < DNP_LFM_T_MIN || (l->have_stop && l->stop_node >= l->n) ||
	    (l->n + l->group_size - 1) / l->group_size > l->nsup) {
		fprintf(stderr,
			PROG ": --t-write at least %u ms, --stop-node inside the torus, and "
			     "one supervisor per group of --group-size nodes\n",
			DNP_LFM_T_MIN);
		return 2;
	}
	return -1;
}

/* Node id's HEALTH: all healthy, every link of the torus ok. Its length. */
static size_t load_health(struct load *l, uint32_t id, uint8_t *buf)
{
	struct dnp_svc_msg m = { .type = DNP_SVC_HEALTH, .node = id, .seq = ++l->seq[id] };
	int len;

	m.u.health.flags = DNP_SVC_F_DNP_ALIVE | DNP_SVC_F_DNP_SEEN;
	for (unsigned d = 0; d < DNP_LFM_NDIRS; d++)
		if (l->torus.dim[d / 2] > 1)
			m.u.health.dnp_status |= (uint64_t)DNP_LFM_LINK_OK
						 << DNP_LFM_DNP_LINK_SHIFT(d);
	m.u.health.t_write_ms = (uint16_t)l->tw;
	m.u.health.t_read_ms = (uint16_t)(l->tw * 5 / 2);
	m.u.health.incarnation = l->inc[id];
	len = dnp_svc_encode(&m, buf, HEALTH_MAX);
	return len > 0 ? (size_t)len : 0;
}

/* Every ACK waiting: counted (the simulated HFMs raise no alarm to clear). */
static void load_drain(struct load *l)
{
	static uint8_t bufs[BATCH][64];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	int r;

	do {
		memset(msgs, 0, sizeof(msgs));
		for (unsigned i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){ bufs[i], sizeof(bufs[i]) };
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		r = recvmmsg(l->fd, msgs, BATCH, MSG_DONTWAIT, NULL);
		for (int i = 0; i < r; i++) {
			struct dnp_svc_msg m;

			if (dnp_svc_decode(bufs[i], msgs[i].msg_len, &m) == 0 &&
			    m.type == DNP_SVC_ACK)
				l->acks++;
		}
	} while (r == (int)BATCH);
}

/*
 * Sends every HEALTH due by t (ms since the start). HEALTH k of the run
 * (node k % n, period k / n) is due at (k / n) * T_write + (k % n) * T_write / n:
 * the nodes evenly staggered over the period, in id order.
 */
static void load_send_due(struct load *l, uint64_t t)
{
	static uint8_t bufs[BATCH][HEALTH_MAX];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	unsigned nb = 0;

	for (;;) {
		uint64_t k = l->sent, due = k / l->n * l->tw + k % l->n * l->tw / l->n;
		uint32_t id = (uint32_t)(k % l->n);
		bool quiet = l->have_stop && id == l->stop_node && t >= l->stop_at;

		if (due > t || nb == BATCH) {
			if (nb)
				(void)sendmmsg(l->fd, msgs, nb, MSG_DONTWAIT);
			if (due > t)
				return;
			nb = 0;
		}
		l->sent++;
		if (quiet)
			continue;
		memset(&msgs[nb], 0, sizeof(msgs[nb]));
		iov[nb] = (struct iovec){ bufs[nb], load_health(l, id, bufs[nb]) };
		msgs[nb].msg_hdr.msg_iov = &iov[nb];
		msgs[nb].msg_hdr.msg_iovlen = 1;
		msgs[nb].msg_hdr.msg_name = &l->sup[id / l->group_size];
		msgs[nb].msg_hdr.msg_namelen = sizeof(l->sup[0]);
		nb++;
	}
}

static void load_run(struct load *l)
{
	uint64_t start = now_ms(CLOCK_MONOTONIC);

	while (!atomic_load(&stop)) {
		struct pollfd p = { .fd = l->fd, .events = POLLIN };
		uint64_t t = now_ms(CLOCK_MONOTONIC) - start;

		if (t >= l->duration)
			break;
		if (l->have_stop && !l->stop_wall && t >= l->stop_at) {
			l->stop_wall = now_ms(CLOCK_REALTIME);
			printf("stopped node %u at wall_ms %" PRIu64 "\n", l->stop_node,
			       l->stop_wall);
			fflush(stdout);
		}
		load_send_due(l, t);
		load_drain(l);
		(void)poll(&p, 1, 1);
	}
}

int main(int argc, char **argv)
{
	static struct load l = { .tw = DNP_LFM_T_WRITE_DEFAULT, .duration = 30000, .fd = -1 };
	struct sigaction act = { 0 };
	int r = load_args(argc, argv, &l), buf = 4 << 20;

	if (r >= 0)
		return r;
	l.seq = calloc(l.n, sizeof(*l.seq));
	l.inc = calloc(l.n, sizeof(*l.inc));
	if (!l.seq || !l.inc) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	for (uint32_t i = 0; i < l.n; i++)
		if (getrandom(&l.inc[i], sizeof(l.inc[i]), 0) != sizeof(l.inc[i]) || !l.inc[i])
			l.inc[i] = i + 1u;
	l.fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (l.fd < 0) {
		perror(PROG ": socket");
		return 1;
	}
	(void)setsockopt(l.fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	act.sa_handler = on_stop;
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	load_run(&l);
	printf("sent %" PRIu64 " acks %" PRIu64 " stop_node %d stop_wall_ms %" PRIu64 "\n", l.sent,
	       l.acks, l.have_stop ? (int)l.stop_node : -1, l.stop_wall);
	close(l.fd);
	free(l.seq);
	free(l.inc);
	return 0;
}
