/* SPDX-License-Identifier: MIT */
/*
 * tp_pingpong — median round trip of one frame between two processes over a
 * transport backend (built, not run by the tests; gives the lead figures).
 *
 *   tp_pingpong [all|shm|udp-uring|udp-plain] [iterations] [frame bytes]
 *
 * The parent sends a frame, the forked child echoes it back; both busy-poll
 * rx_burst (no sleeping), so on 2 cores each side owns one.
 */
#include <errno.h>
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
		c.options = strcmp(kind, "udp-uring") == 0 ? "mode=uring" : "mode=plain";
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
	if (strcmp(kind, "udp-uring") == 0 && !dnp_transport_udp_uses_uring(t))
		printf("(io_uring not available, plain path measured)\n");
	ops->close(t);
	unlink(path);
	qsort(rtt, iters, sizeof(*rtt), cmp_u64);
	printf("%-10s %5u B  round trip median %8.2f us  p10 %8.2f  p90 %8.2f  p99 %8.2f\n",
	       kind, size, rtt[iters / 2] / 1e3, rtt[iters / 10] / 1e3,
	       rtt[iters * 9 / 10] / 1e3, rtt[iters * 99 / 100] / 1e3);
	free(rtt);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *kinds[] = { "shm", "udp-uring", "udp-plain" };
	const char *which = argc > 1 ? argv[1] : "all";
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
