/* SPDX-License-Identifier: MIT */
/*
 * dnpctl_capture.c — `dnpctl capture FILE [--duration S]` and
 * `dnpctl capture --stop` (contract in dnpctl_cmd.h).
 */
#include "dnpctl_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dnp_session.h"

#define CAPTURE_TIMEOUT_MS 5000

static volatile sig_atomic_t capture_stop_now;

static void capture_on_signal(int sig)
{
	(void)sig;
	capture_stop_now = 1;
}

/*
 * One CAPTURE request (arg 1 with fd attached: start; 0: stop) on a new
 * control connection; *rep gets the reply. Returns 0 (the reply's status is
 * in rep->status) or -errno of the exchange, -ETIMEDOUT, -EPROTO.
 */
static int capture_ask(const char *sock, uint32_t arg, int fd, struct dnp_sess_msg *rep)
{
	struct dnp_sess_msg m = {
		.magic = DNP_SESS_MAGIC,
		.version = DNP_SESS_VERSION,
		.type = DNP_SESS_CAPTURE,
		.arg32 = arg,
	};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	size_t got = 0;
	int s = dnpctl_connect(sock, CAPTURE_TIMEOUT_MS, NULL), r = 0;

	if (s < 0)
		return s;
	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	if (sendmsg(s, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(m)) {
		r = -errno;
		goto out;
	}
	while (got < sizeof(*rep)) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, CAPTURE_TIMEOUT_MS) <= 0) {
			r = -ETIMEDOUT;
			goto out;
		}
		n = recv(s, (char *)rep + got, sizeof(*rep) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			goto out;
		}
		got += (size_t)n;
	}
	if (rep->magic != DNP_SESS_MAGIC || rep->type != DNP_SESS_CAPTURE)
		r = -EPROTO;
out:
	close(s);
	return r;
}

static const char *capture_why(int status, bool start)
{
	switch (status) {
	case -EBUSY:
		return "the daemon is already capturing (dnpctl capture --stop ends it)";
	case -ENOENT:
		return "the daemon is not capturing";
	case -EINVAL:
		return start ? "not a regular empty file, or a daemon without dnpctl capture" :
			       "a daemon without dnpctl capture";
	case -EBADF:
		return "the file is not open for writing";
	default:
		return strerror(-status);
	}
}

static int capture_stop(const char *sock)
{
	struct dnp_sess_msg rep;
	int r = capture_ask(sock, 0, -1, &rep);

	if (r) {
		fprintf(stderr, "dnpctl: capture --stop: %s: %s\n", sock, strerror(-r));
		return 1;
	}
	if (rep.status && rep.status != -ENOENT)
		fprintf(stderr, "dnpctl: capture: the capture was cut by a write error: %s\n",
			strerror(-rep.status));
	if (rep.status == -ENOENT) {
		fprintf(stderr, "dnpctl: capture --stop: %s\n", capture_why(rep.status, false));
		return 1;
	}
	printf("capture stopped: %" PRIu64 " frames, %" PRIu64 " bytes\n", rep.va, rep.len);
	return rep.status ? 1 : 0;
}

/* Sleeps ms, or until SIGINT/SIGTERM. */
static void capture_wait(uint64_t ms)
{
	struct sigaction sa = { .sa_handler = capture_on_signal };
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!capture_stop_now && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int dnpctl_capture(const char *sock, const char *file, uint64_t duration_ms)
{
	struct dnp_sess_msg rep;
	struct stat st;
	bool existed;
	int fd, r;

	if (!file)
		return capture_stop(sock);
	existed = stat(file, &st) == 0;
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
	if (fd < 0) {
		fprintf(stderr, "dnpctl: capture: %s: %s\n", file, strerror(errno));
		return 2;
	}
	r = capture_ask(sock, 1, fd, &rep);
	close(fd); /* the daemon has its own copy of the descriptor */
	if (r || rep.status) {
		if (!existed)
			unlink(file);
		if (r)
			fprintf(stderr, "dnpctl: capture: %s: %s\n", sock, strerror(-r));
		else
			fprintf(stderr, "dnpctl: capture %s: %s\n", file,
				capture_why(rep.status, true));
		return r == 0 && rep.status == -EINVAL ? 2 : 1;
	}
	printf("capturing the frames of %s into %s\n", sock, file);
	if (!duration_ms)
		return 0;
	fflush(stdout);
	capture_wait(duration_ms);
	return capture_stop(sock);
}
