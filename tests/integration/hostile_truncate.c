/* SPDX-License-Identifier: MIT */
/*
 * hostile_truncate — an application that tries to crash its daemon through
 * shared memory (tests/integration/hostile-truncate.sh): it opens a session
 * by hand (api/abi/dnp_session.h: HELLO, ATTACH), then truncates to 0 bytes
 * the session memfd, the heap memfd and the daemon's bell file it was given,
 * and keeps the session open for HOLD_MS so the daemon goes on using them.
 * Prints one line per descriptor: "truncate NAME: ok" or "truncate NAME:
 * <strerror>" (a sealed memfd: "Operation not permitted"), then "held".
 * usage: hostile_truncate SOCKET HOLD_MS
 * Exit: 0 when the handshake worked (whatever the truncations did), 1 else.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dnp_session.h"

static int sess_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || strlen(path) >= sizeof(sa.sun_path))
		return -1;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One request, one reply (with up to DNP_SESS_NFDS descriptors into fds). */
static int sess_call(int fd, uint16_t type, uint32_t arg32, uint64_t va, uint64_t len, int *fds)
{
	struct dnp_sess_msg m = { .magic = DNP_SESS_MAGIC,
				  .version = DNP_SESS_VERSION,
				  .type = type,
				  .arg32 = arg32,
				  .va = va,
				  .len = len };
	char cbuf[CMSG_SPACE(sizeof(int) * DNP_SESS_NFDS)];
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;

	if (send(fd, &m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m))
		return -1;
	if (recvmsg(fd, &mh, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof(m) || m.status != 0)
		return -1;
	c = CMSG_FIRSTHDR(&mh);
	if (fds && c && c->cmsg_type == SCM_RIGHTS)
		memcpy(fds, CMSG_DATA(c), c->cmsg_len - CMSG_LEN(0));
	return 0;
}

static void truncate_one(const char *name, int fd)
{
	if (ftruncate(fd, 0) == 0)
		printf("truncate %s: ok\n", name);
	else
		printf("truncate %s: %s\n", name, strerror(errno));
}

int main(int argc, char **argv)
{
	int fds[DNP_SESS_NFDS] = { -1, -1, -1, -1 };
	struct timespec hold;
	struct stat st;
	void *heap;
	long ms;
	int fd;

	if (argc != 3)
		return 1;
	ms = strtol(argv[2], NULL, 10);
	fd = sess_connect(argv[1]);
	if (fd < 0 || sess_call(fd, DNP_SESS_HELLO, DNP_SESS_PORT_ANY, 0, 0, fds) || fds[1] < 0 ||
	    fds[2] < 0) {
		fprintf(stderr, "hostile_truncate: no session on %s\n", argv[1]);
		return 1;
	}
	if (fstat(fds[1], &st) < 0)
		return 1;
	heap = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
	if (heap == MAP_FAILED ||
	    sess_call(fd, DNP_SESS_ATTACH, 0, (uintptr_t)heap, (uint64_t)st.st_size, NULL)) {
		fprintf(stderr, "hostile_truncate: ATTACH failed\n");
		return 1;
	}
	truncate_one("session", fds[0]);
	truncate_one("heap", fds[1]);
	truncate_one("bell", fds[2]);
	fflush(stdout);
	hold.tv_sec = ms / 1000;
	hold.tv_nsec = (ms % 1000) * 1000000L;
	nanosleep(&hold, NULL);
	printf("held\n");
	return 0;
}
