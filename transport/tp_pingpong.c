/* SPDX-License-Identifier: MIT */
/*
 * tp_pingpong — median round trip of one frame between two processes over a
 * transport backend (built, not run by the tests; gives the lead figures).
 *
 *   tp_pingpong [all|shm|udp-uring|udp-coop|udp-plain] [iterations] [frame bytes]
 *   tp_pingpong stream KIND [frames] [frame bytes]
 *
 * Ping-pong: the parent sends a frame, the forked child echoes it back; both
 * busy-poll rx_burst (no sleeping), so on 2 cores each side owns one.
 * Stream: the parent sends bursts of 32 as fast as tx_burst takes them; the
 * child counts what arrives (UDP may drop: the goodput and loss are printed).
 * udp-coop is the io_uring fallback ring (COOP_TASKRUN|TASKRUN_FLAG).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "transport.h"

#define WARMUP 1000u

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int open_side(const char *kind, unsigned side, const char *shm_path, unsigned port,
		     struct dnp_transport **t, const struct dnp_transport_ops **ops)
{
	char a[64], b[64];
	struct dnp_transport_conf c = {
		.side = side,
		.frame_max = 4160,
		.depth = 256,
	};

	if (strcmp(kind, "shm") == 0) {
		*ops = dnp_transport_find("shm");
		c.local = shm_path;
		c.remote = shm_path;
	} else {
		*ops = dnp_transport_find("udp");
		snprintf(a, sizeof(a), "127.0.0.1:%u", port + side);
		snprintf(b, sizeof(b), "127.0.0.1:%u", port + 1 - side);
		c.local = a;
		c.remote = b;
		c.options = strcmp(kind, "udp-uring") == 0 ? "mode=uring" :
			    strcmp(kind, "udp-coop") == 0  ? "mode=uring,uring_setup=coop" :
							     "mode=plain";
	}
	return (*ops)->open(&c, t);
}

/* Sends f until taken; returns -1 on error. */
static int send1(const struct dnp_transport_ops *ops, struct dnp_transport *t,
		 const struct dnp_tx_frame *f)
{
	int r;

	while ((r = ops->tx_burst(t, f, 1)) == 0)
		;
	return r < 0 ? -1 : 0;
}

static int run(const char *kind, unsigned iters, uint32_t size)
{
	const struct dnp_transport_ops *ops;
	struct dnp_transport *t;
	struct dnp_rx_frame rx;
	uint8_t buf[4160] = { 0 };
	struct dnp_tx_frame tx = { .data = buf, .len = size };
	char path[64];
	unsigned port = 20000u + (unsigned)getpid() % 20000u * 2u % 40000u;
	uint64_t *rtt;
	pid_t pid;
	int ret, status;

	snprintf(path, sizeof(path), "/dev/shm/tp-pingpong-%d", (int)getpid());
	unlink(path);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* echo side */
		if (open_side(kind, 1, path, port, &t, &ops) != 0)
			_exit(2);
		for (unsigned i = 0; i < iters + WARMUP; i++) {
			struct dnp_tx_frame e;

			while ((ret = ops->rx_burst(t, &rx, 1)) == 0)
				;
			if (ret < 0)
				_exit(3);
			e.data = rx.data;
			e.len = rx.len;
			if (send1(ops, t, &e))
				_exit(4);
		}
		usleep(100000); /* let the last echo leave before close */
		ops->close(t);
		_exit(0);
	}
	ret = open_side(kind, 0, path, port, &t, &ops);
	if (ret) {
		fprintf(stderr, "%s: open: %s\n", kind, strerror(-ret));
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return -1;
	}
	if (strcmp(kind, "shm") != 0)
		usleep(100000); /* the echo side binds its port */
	rtt = calloc(iters, sizeof(*rtt));
	if (!rtt) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return -1;
	}
	for (unsigned i = 0; i < iters + WARMUP; i++) {
		uint64_t t0 = now_ns();

		if (send1(ops, t, &tx))
			break;
		while ((ret = ops->rx_burst(t, &rx, 1)) == 0)
			;
		if (ret < 0)
			break;
		if (i >= WARMUP)
			rtt[i - WARMUP] = now_ns() - t0;
	}
	waitpid(pid, &status, 0);
	if (strncmp(kind, "udp-", 4) == 0 && strcmp(kind, "udp-plain") != 0 &&
	    !dnp_transport_udp_uses_uring(t))
		printf("(io_uring not available, plain path measured)\n");
	ops->close(t);
	unlink(path);
	qsort(rtt, iters, sizeof(*rtt), cmp_u64);
	printf("%-10s %5u B  round trip median %8.2f us  p10 %8.2f  p90 %8.2f  p99 %8.2f\n", kind,
	       size, rtt[iters / 2] / 1e3, rtt[iters / 10] / 1e3, rtt[iters * 9 / 10] / 1e3,
	       rtt[iters * 99 / 100] / 1e3);
	free(rtt);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

struct stream_result {
	uint64_t frames;
	uint64_t ns;
};

static int stream(const char *kind, unsigned nframes, uint32_t size)
{
	const struct dnp_transport_ops *ops;
	struct dnp_transport *t;
	static uint8_t buf[4160];
	struct dnp_tx_frame tx[32];
	struct stream_result res = { 0 };
	char path[64], b = 0;
	unsigned port = 20000u + (unsigned)getpid() % 20000u * 2u % 40000u;
	int up[2], rep[2], status, ret;
	uint64_t t0, sent = 0;
	pid_t pid;

	snprintf(path, sizeof(path), "/dev/shm/tp-stream-%d", (int)getpid());
	unlink(path);
	if (pipe(up) || pipe(rep))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct dnp_rx_frame rx[64];
		uint64_t first = 0, last = 0, idle_since;

		if (open_side(kind, 1, path, port, &t, &ops) != 0)
			_exit(2);
		if (write(up[1], &b, 1) != 1)
			_exit(3);
		idle_since = now_ns();
		while (res.frames < nframes && now_ns() - idle_since < 300000000u) {
			ret = ops->rx_burst(t, rx, 64);
			if (ret < 0)
				_exit(4);
			if (ret == 0)
				continue;
			last = idle_since = now_ns();
			if (!first)
				first = last;
			res.frames += (unsigned)ret;
		}
		res.ns = last - first;
		if (write(rep[1], &res, sizeof(res)) != sizeof(res))
			_exit(5);
		ops->close(t);
		_exit(0);
	}
	ret = open_side(kind, 0, path, port, &t, &ops);
	if (ret || read(up[0], &b, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return -1;
	}
	for (unsigned i = 0; i < 32; i++) {
		tx[i].data = buf;
		tx[i].len = size;
	}
	t0 = now_ns();
	while (sent < nframes) {
		unsigned k = nframes - sent < 32 ? (unsigned)(nframes - sent) : 32;

		ret = ops->tx_burst(t, tx, k);
		if (ret < 0)
			break;
		sent += (unsigned)ret;
		if (ret == 0) {
			struct dnp_rx_frame rx[8];

			ops->rx_burst(t, rx, 8); /* lets the io_uring path reap its sends */
		}
	}
	t0 = now_ns() - t0;
	if (read(rep[0], &res, sizeof(res)) != sizeof(res))
		res.frames = 0;
	waitpid(pid, &status, 0);
	ops->close(t);
	unlink(path);
	printf("%-10s %5u B  stream: sent %" PRIu64 " in %.1f ms, received %" PRIu64
	       " (%.1f%% lost), goodput %.2f Gbit/s\n",
	       kind, size, sent, t0 / 1e6, res.frames,
	       sent ? 100.0 * (double)(sent - res.frames) / (double)sent : 0.0,
	       res.ns ? (double)res.frames * size * 8.0 / (double)res.ns : 0.0);
	return 0;
}

int main(int argc, char **argv)
{
	const char *kinds[] = { "shm", "udp-uring", "udp-coop", "udp-plain" };
	const char *which = argc > 1 ? argv[1] : "all";

	if (strcmp(which, "stream") == 0) {
		unsigned n = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 200000u;
		uint32_t sz = argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 0) : 4160u;

		if (argc < 3 || n == 0 || sz == 0 || sz > 4160) {
			fprintf(stderr, "usage: %s stream KIND [frames] [1..4160]\n", argv[0]);
			return 2;
		}
		return stream(argv[2], n, sz) ? 1 : 0;
	}

	unsigned iters = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 20000u;
	uint32_t size = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 0) : 64u;
	int rc = 0;

	if (iters == 0 || size == 0 || size > 4160) {
		fprintf(stderr, "usage: %s [all|shm|udp-uring|udp-plain] [iterations] [1..4160]\n",
			argv[0]);
		return 2;
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(which, "all") == 0 || strcmp(which, kinds[i]) == 0)
			rc |= run(kinds[i], iters, size);
	return rc ? 1 : 0;
}
