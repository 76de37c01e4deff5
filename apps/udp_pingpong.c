/* SPDX-License-Identifier: MIT */
/*
 * udp_pingpong — the baseline for bench/run.sh: a plain UDP ping-pong between
 * two processes over loopback, no DNP in the path. Same table as
 * dnp_pingpong (half round trip). Messages above one datagram are split into
 * 65000-byte datagrams (loopback does not lose them while the socket buffers
 * are large enough; a loss shows up as a receive timeout and the run fails).
 *
 * --busy: non-blocking receive in a busy loop (what a polled daemon does)
 * instead of blocking recv.
 * --tcp: the same over one TCP connection (TCP_NODELAY) instead of UDP.
 * --cpus A,B: pin the measuring process to CPU A and the echoing one to B
 * (A = B: both on one CPU). Without it the scheduler places them, and a
 * blocking receiver's wake-up costs what that placement costs: a context
 * switch on one CPU, or waking an idle (in a VM: halted) CPU on two. It can
 * change in the middle of a run, which is why the bench pins them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app_cli.h"
#include "dnp_parse.h"

#define PROG "udp_pingpong"
#define MAX_SIZES 64
#define CHUNK 65000u

struct opts {
	uint64_t sizes[MAX_SIZES];
	unsigned nsizes, iters, warmup;
	bool csv, busy, tcp;
	int cpu[2]; /* -1: not pinned */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static unsigned iters_for(const struct opts *o, uint64_t size)
{
	uint64_t n;

	if (o->iters)
		return o->iters;
	n = (64ull << 20) / (size ? size : 1);
	return n > 1000 ? 1000 : n < 20 ? 20 : (unsigned)n;
}

static int cmp_double(const void *p, const void *q)
{
	double x = *(const double *)p, y = *(const double *)q;

	return x < y ? -1 : x > y;
}

static int send_msg(int s, const uint8_t *buf, uint64_t len)
{
	uint64_t off = 0;
	size_t n;
	ssize_t w;

	do {
		n = len - off < CHUNK ? (size_t)(len - off) : CHUNK;
		w = send(s, buf + off, n, 0);
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		off += (uint64_t)w; /* TCP may take part of it; a UDP datagram goes whole */
	} while (off < len);
	return 0;
}

static int recv_msg(int s, uint8_t *buf, uint64_t len, bool busy)
{
	uint64_t got = 0;
	ssize_t n;

	do {
		n = recv(s, buf + got, len - got < CHUNK ? (size_t)(len - got) : CHUNK,
			 busy ? MSG_DONTWAIT : 0);
		if (n < 0) {
			if (busy && (errno == EAGAIN || errno == EWOULDBLOCK))
				continue;
			return -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		got += (uint64_t)n;
	} while (got < len);
	return got == len ? 0 : -EPROTO;
}

static int mksock(struct sockaddr_in *addr)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), sz = 16 << 20;
	socklen_t al = sizeof(*addr);
	struct timeval tv = { 5, 0 };

	if (s < 0)
		return -errno;
	/* Large buffers so multi-datagram messages are not dropped; FORCE needs root. */
	if (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
		setsockopt(s, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (setsockopt(s, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) < 0)
		setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s, (struct sockaddr *)addr, sizeof(*addr)) < 0 ||
	    getsockname(s, (struct sockaddr *)addr, &al) < 0) {
		close(s);
		return -errno;
	}
	return s;
}

/* A connected TCP pair over loopback: *a and *b. */
static int tcp_pair(int *a, int *b)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t al = sizeof(addr);
	int l, one = 1, sz = 16 << 20;
	struct timeval tv = { 5, 0 };

	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return -errno;
	if (bind(l, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&addr, &al) < 0)
		goto fail;
	*a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*a < 0 || connect(*a, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		goto fail;
	*b = accept(l, NULL, NULL);
	if (*b < 0)
		goto fail;
	close(l);
	for (int i = 0; i < 2; i++) {
		int s = i ? *b : *a;

		setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(s, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	return 0;
fail:
	close(l);
	return -errno;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		fprintf(stderr, PROG ": cannot pin to CPU %d: %s\n", cpu, strerror(errno));
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [--sizes LIST] [--iters N] [--warmup N] [--busy] [--tcp]\n"
		"                    [--cpus A,B] [--csv] [--help] [--version]\n"
		"  UDP (or TCP) ping-pong between two processes over loopback (half round trip).\n");
}

static int parse_cpus(const char *s, int cpu[2])
{
	uint64_t v[2];
	char a[32];
	const char *comma = strchr(s, ',');

	if (!comma || (size_t)(comma - s) >= sizeof(a))
		return -EINVAL;
	memcpy(a, s, (size_t)(comma - s));
	a[comma - s] = 0;
	if (dnp_parse_u64_max(a, CPU_SETSIZE - 1, &v[0]) ||
	    dnp_parse_u64_max(comma + 1, CPU_SETSIZE - 1, &v[1]))
		return -EINVAL;
	cpu[0] = (int)v[0];
	cpu[1] = (int)v[1];
	return 0;
}

/* Parses the command line into o. Returns -1 to go on, else the exit status. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "busy", no_argument, NULL, 'b' },
		{ "tcp", no_argument, NULL, 't' },
		{ "cpus", required_argument, NULL, 'C' },
		{ "csv", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c, r;

	memset(o, 0, sizeof(*o));
	o->warmup = 10;
	o->cpu[0] = o->cpu[1] = -1;
	for (uint64_t s = 8; s <= (2u << 20); s *= 4)
		o->sizes[o->nsizes++] = s;
	o->sizes[o->nsizes++] = 4u << 20;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:n:w:btC:chV", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			r = app_cli_sizes(optarg, o->sizes, MAX_SIZES);
			if (r < 0)
				return app_cli_bad_value(PROG, usage, "--sizes", optarg);
			o->nsizes = (unsigned)r;
			break;
		case 'n':
		case 'w':
			if (dnp_parse_u64_max(optarg, UINT32_MAX, &v))
				return app_cli_bad_value(PROG, usage,
							 c == 'n' ? "--iters" : "--warmup", optarg);
			*(c == 'n' ? &o->iters : &o->warmup) = (unsigned)v;
			break;
		case 'b':
			o->busy = true;
			break;
		case 't':
			o->tcp = true;
			break;
		case 'C':
			if (parse_cpus(optarg, o->cpu) < 0)
				return app_cli_bad_value(PROG, usage, "--cpus", optarg);
			break;
		case 'c':
			o->csv = true;
			break;
		default: /* --help, --version, usage errors */
			return app_cli_other(PROG, usage, c, argv);
		}
	}
	if (optind < argc)
		return app_cli_usage_error(PROG, usage, "unexpected argument '%s'", argv[optind]);
	return -1;
}

/* Creates the two connected sockets (UDP pair or one TCP connection). */
static int open_pair(const struct opts *o, int *sa, int *sb)
{
	struct sockaddr_in aa, ab;

	if (o->tcp) {
		*sa = *sb = -1;
		return tcp_pair(sa, sb);
	}
	*sa = mksock(&aa);
	*sb = mksock(&ab);
	if (*sa < 0 || *sb < 0 || connect(*sa, (struct sockaddr *)&ab, sizeof(ab)) < 0 ||
	    connect(*sb, (struct sockaddr *)&aa, sizeof(aa)) < 0)
		return -errno;
	return 0;
}

/* B: echoes every message back (the child process). */
static void echo_all(const struct opts *o, int sb, uint8_t *buf)
{
	pin(o->cpu[1]);
	for (unsigned k = 0; k < o->nsizes; k++) {
		unsigned n = iters_for(o, o->sizes[k]) + o->warmup;

		for (unsigned i = 0; i < n; i++)
			if (recv_msg(sb, buf, o->sizes[k], o->busy) < 0 ||
			    send_msg(sb, buf, o->sizes[k]) < 0)
				_exit(1);
	}
	_exit(0);
}

static void print_header(const struct opts *o)
{
	if (o->csv)
		printf("bytes,iterations,t_min_us,t_median_us,t_p99_us\n");
	else
		printf("# %s ping-pong over loopback (%s receive): half round trip\n"
		       "%10s %10s %12s %12s %12s\n",
		       o->tcp ? "TCP" : "UDP", o->busy ? "busy-poll" : "blocking", "bytes",
		       "iterations", "t_min[us]", "t_median[us]", "t_p99[us]");
}

/* A: times n round trips of one size (after the warm-up) and prints its row. */
static int measure(const struct opts *o, int sa, uint8_t *buf, uint64_t size, double *v)
{
	unsigned n = iters_for(o, size), i, p;
	uint64_t t0;
	double med;
	int r;

	for (i = 0; i < n + o->warmup; i++) {
		t0 = now_ns();
		r = send_msg(sa, buf, size);
		if (r == 0)
			r = recv_msg(sa, buf, size, o->busy);
		if (r < 0) {
			fprintf(stderr, PROG ": %llu bytes: %s\n", (unsigned long long)size,
				strerror(-r));
			return r;
		}
		if (i >= o->warmup)
			v[i - o->warmup] = (double)(now_ns() - t0) / 2000.0;
	}
	qsort(v, n, sizeof(*v), cmp_double);
	med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	p = (unsigned)((99ull * n + 99) / 100);
	if (o->csv)
		printf("%llu,%u,%.3f,%.3f,%.3f\n", (unsigned long long)size, n, v[0], med,
		       v[p - 1]);
	else
		printf("%10llu %10u %12.3f %12.3f %12.3f\n", (unsigned long long)size, n, v[0], med,
		       v[p - 1]);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t maxs = 1;
	unsigned k, nmax = 0;
	int sa, sb, r = 0, status;
	struct opts o;
	uint8_t *buf;
	double *v;
	pid_t pid;

	r = parse_opts(argc, argv, &o);
	if (r >= 0)
		return r;
	r = 0;
	for (k = 0; k < o.nsizes; k++) {
		if (o.sizes[k] > maxs)
			maxs = o.sizes[k];
		if (iters_for(&o, o.sizes[k]) > nmax)
			nmax = iters_for(&o, o.sizes[k]);
	}
	buf = malloc(maxs > CHUNK ? maxs : CHUNK);
	v = calloc(nmax, sizeof(*v));
	r = open_pair(&o, &sa, &sb);
	if (!buf || !v || r < 0) {
		fprintf(stderr, PROG ": setup failed: %s\n", strerror(r < 0 ? -r : ENOMEM));
		return 1;
	}
	memset(buf, 0xab, maxs > CHUNK ? maxs : CHUNK);
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror(PROG ": fork");
		return 1;
	}
	if (pid == 0) {
		close(sa);
		echo_all(&o, sb, buf);
	}
	close(sb);
	pin(o.cpu[0]);
	print_header(&o);
	for (k = 0; k < o.nsizes && r == 0; k++)
		r = measure(&o, sa, buf, o.sizes[k], v);
	if (r < 0)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	if (r == 0 && (!WIFEXITED(status) || WEXITSTATUS(status)))
		r = -EIO;
	return r < 0 ? 1 : 0;
}
