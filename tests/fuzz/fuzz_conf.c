/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for dnpd's configuration parsers (dnp-core/dnpd/conf.c,
 * conf_ini.c with inih, dnp_torus_parse/dnp_coord_parse of torus.c): the
 * topology file and the command line are outside bytes.
 *
 * Input: the bytes up to the first NUL are a topology file, written to a
 * memfd and read through its /proc/self/fd path by the daemon's own loader
 * (dnpd_conf_load, i.e. ini_parse from a path, exactly as --config does).
 * The rest, split at NUL bytes, is a command line: it is parsed by
 * dnpd_conf_parse after "--config <that memfd>" (so the command line
 * overrides the file, as in the daemon).
 *
 * What must hold, whatever the bytes: no crash (ASan/UBSan); every string
 * of struct dnpd_conf stays NUL-terminated inside its array; a file the
 * loader accepts leaves a torus of 1..256 per dimension and link
 * addresses given whole (LOCAL and REMOTE) or not at all; a command line dnpd_conf_parse accepts (0) gives a
 * configuration the daemon can run with: torus, coordinates and run
 * directory given, the node inside the torus, a known transport, udp ports
 * that fit, and every derived path and link address either formed
 * (NUL-terminated, within its buffer) or refused with -ENAMETOOLONG.
 *
 * The file's bytes are also a backend's "k=v,k=v" option string
 * (transport/options.c, the one parser of every backend's options): a value
 * found is NUL-terminated within its buffer, a number within its bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dnpd.h"
#include "pkt.h"
#include "transport.h"
#include "transport_priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* conf.c asks the transport registry only for the usage text's dpdk default. */
const struct dnp_transport_ops *dnp_transport_find(const char *name)
{
	(void)name;
	return NULL;
}

#define MAX_ARGS 64

static int memfd = -1;
static char memfd_path[64];

#define CHECK(c)                                                                           \
	do {                                                                               \
		if (!(c)) {                                                                \
			fprintf(stderr, "fuzz_conf: %s:%d: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                           \
		}                                                                          \
	} while (0)

#define TERMINATED(a) CHECK(memchr((a), 0, sizeof(a)) != NULL)

static void check_strings(const struct dnpd_conf *c)
{
	TERMINATED(c->transport);
	TERMINATED(c->run_dir);
	TERMINATED(c->socket);
	TERMINATED(c->eal);
	TERMINATED(c->config);
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		TERMINATED(c->addr_local[d]);
		TERMINATED(c->addr_remote[d]);
	}
	CHECK(!strcmp(c->transport, "shm") || !strcmp(c->transport, "udp") ||
	      !strcmp(c->transport, "dpdk") || !strcmp(c->transport, "verbs"));
}

/* The values of an accepted file or command line (a refused one may be half set). */
static void check_values(const struct dnpd_conf *c)
{
	if (c->has & DNPD_HAS_TORUS)
		for (unsigned i = 0; i < 3; i++)
			CHECK(c->torus.dim[i] >= 1 && c->torus.dim[i] <= DNP_TORUS_MAX_DIM);
	CHECK(c->log_level >= DNPD_ERR && c->log_level <= DNPD_DEBUG);
	CHECK(c->cpu >= -1 && c->cpu <= 4095);
	CHECK(c->udp_base_port >= 1 && c->udp_base_port <= 65535);
	CHECK(c->heap_default >= 1 && c->heap_default <= DNP_SESS_HEAP_MAX);
	CHECK(c->cmd_timeout_ms <= 86400000ull);
	CHECK(c->rx_bufs <= DNP_BUFS_MAX); /* 0: the engine's default */
	/* A link address is given whole (LOCAL and REMOTE, neither empty), or not at all. */
	for (unsigned d = 0; d < DNP_NDIRS; d++)
		CHECK(!c->addr_local[d][0] == !c->addr_remote[d][0]);
}

/* What the daemon does with an accepted configuration must stay in bounds. */
static void check_usable(const struct dnpd_conf *c)
{
	char path[PATH_MAX], local[DNPD_ADDR_MAX], remote[DNPD_ADDR_MAX], bell[PATH_MAX];
	unsigned side;
	int r;

	CHECK((c->has & (DNPD_HAS_TORUS | DNPD_HAS_COORD | DNPD_HAS_RUNDIR)) ==
	      (DNPD_HAS_TORUS | DNPD_HAS_COORD | DNPD_HAS_RUNDIR));
	CHECK(dnp_torus_contains(&c->torus, c->self));
	CHECK(c->run_dir[0] != 0);
	if (!strcmp(c->transport, "udp"))
		CHECK(c->udp_base_port + (uint64_t)dnp_torus_size(&c->torus) * 8u <= 65536u);
	r = dnpd_path(c, ".sock", path, sizeof(path));
	CHECK(r == 0 || r == -ENAMETOOLONG);
	if (r == 0)
		CHECK(strlen(path) < sizeof(path));
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		memset(local, 0x55, sizeof(local));
		memset(remote, 0x55, sizeof(remote));
		r = dnpd_conf_link_addr(c, d, local, remote, sizeof(local), &side, bell,
					sizeof(bell));
		CHECK(r == 0 || r == -ENAMETOOLONG);
		if (r == 0) {
			CHECK(memchr(local, 0, sizeof(local)) && memchr(remote, 0, sizeof(remote)));
			CHECK(local[0] && remote[0]);
			CHECK(side <= 1);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char argbuf[8192];
	char *argv[MAX_ARGS + 4];
	const uint8_t *nul = memchr(data, 0, size);
	size_t flen = nul ? (size_t)(nul - data) : size;
	struct dnpd_conf c;
	int argc = 0, r;

	if (memfd < 0) {
		memfd = memfd_create("fuzz-conf", MFD_CLOEXEC);
		CHECK(memfd >= 0);
		snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
	}
	CHECK(ftruncate(memfd, 0) == 0);
	CHECK(pwrite(memfd, data, flen, 0) == (ssize_t)flen);

	/* 1. The topology file alone, through the daemon's loader. */
	dnpd_conf_default(&c);
	r = dnpd_conf_load(&c, memfd_path);
	CHECK(r == 0 || r == -EINVAL);
	check_strings(&c);
	if (r == 0)
		check_values(&c);

	/* 2. The same bytes as a backend's option string. */
	if (flen < sizeof(argbuf)) {
		static const char *const keys[] = { "shared", "chan", "mtu", "links", "" };
		char val[16];
		uint32_t u32;
		uint64_t u64;

		memcpy(argbuf, data, flen);
		argbuf[flen] = 0;
		for (unsigned k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			memset(val, 0x55, sizeof(val));
			if (dnp_transport_opt(argbuf, keys[k], val, sizeof(val)))
				CHECK(memchr(val, 0, sizeof(val)) != NULL);
			r = dnp_transport_opt_u32(argbuf, keys[k], 7, 4096, &u32);
			CHECK(r == -EINVAL || (r == 0 && u32 <= 4096));
			r = dnp_transport_opt_u64(argbuf, keys[k], 7, &u64);
			CHECK(r == 0 || r == -EINVAL);
		}
	}

	/* 3. A command line naming the file; its options override the file's keys. */
	argv[argc++] = "dnpd";
	argv[argc++] = "--config";
	argv[argc++] = memfd_path;
	if (nul) {
		size_t alen = size - flen - 1;

		if (alen >= sizeof(argbuf))
			alen = sizeof(argbuf) - 1;
		memcpy(argbuf, nul + 1, alen);
		argbuf[alen] = 0;
		for (char *p = argbuf; p <= argbuf + alen && argc < MAX_ARGS + 3;) {
			argv[argc++] = p;
			p += strlen(p) + 1;
		}
	}
	argv[argc] = NULL;
	dnpd_conf_default(&c);
	r = dnpd_conf_parse(&c, argc, argv);
	CHECK(r == 0 || r == 1 || r == -EINVAL || r == -ENOENT);
	check_strings(&c);
	if (r == 0) {
		check_values(&c);
		check_usable(&c);
	}
	return 0;
}
