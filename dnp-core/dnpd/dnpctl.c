/* SPDX-License-Identifier: MIT */
/*
 * dnpctl — asks a running dnpd for its state over its application socket
 * (a control connection, api/abi/dnp_session.h: no port, no memory).
 *
 *   dnpctl [--socket DIR/node-<id>.sock] stats [--json] | topo
 *   dnpctl [--socket ...] [--wait-ms MS] topo --all
 *   dnpctl [--supervisor HOST:PORT] status [--json | --log]
 *   dnpctl [--socket ...] sensor temp|volt|power VALUE|off
 *   dnpctl [--socket ...] timer T_WRITE_MS T_READ_MS
 *   dnpctl [--socket DIR/node-<id>.sock] impair SPEC|off
 *   dnpctl list [--json] [DIR...]
 *   dnpctl [--socket ...] capture FILE [--duration S] | capture --stop
 *
 * impair checks SPEC (transport/impair.h; several joined by ';') and writes
 * it to the daemon's impairment file (a new file renamed over the old one),
 * which the daemon applies within 50 ms; `dnpctl stats` shows it per link.
 * The daemon names its files in its report ("file impair PATH", "file
 * lofamo PATH"), whatever its socket is called; a daemon that does not answer
 * has them next to a socket named DIR/node-<id>.sock.
 *
 * list finds the daemons of this host, capture has a running daemon record
 * its frames into a file dnpctl opened (dnpctl_cmd.h).
 *
 * The socket defaults to $DNP_SOCKET, else /run/dnp/dnpd.sock; the
 * supervisor to $DNP_SUPERVISOR. topo prints the node line and the "wiring"
 * lines of stats: each link's expected and discovered neighbour
 * (docs/cluster.md, "The cabling check"); topo --all adds every other node's,
 * which the daemon asks over the torus (exit 4 when a node did not answer).
 * status asks the LO|FA|MO Fault Supervisor for its picture (a torus map per
 * plane, coloured on a terminal; JSON; or the event log). sensor and timer
 * write the node's LO|FA|MO registers (the daemon's register block,
 * RUN_DIR/node-<id>.lofamo): a simulated sensor reading (m°C, mV, mW) or the timer register
 * (T_write < T_read, refused otherwise). Exit status: 0, 1 (daemon or
 * supervisor error or unreachable), 2 (usage or a refused value), 3 (topo: a
 * link is MISWIRED), 4 (topo --all: a node did not answer).
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
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>

#include "dnp_parse.h"
#include "dnp_session.h"
#include "dnp_version.h"
#include "dnpctl_cmd.h"
#include "dnpctl_json.h"
#include "dnpd.h"
#include "impair.h"
#include "regs.h"
#include "svc.h"

static void dnpctl_usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [--socket PATH] stats [--json] | topo\n"
		"       dnpctl [--socket PATH] [--wait-ms MS] topo --all\n"
		"       %s [--supervisor HOST:PORT] status [--json | --log]\n"
		"       %s [--socket PATH] sensor temp|volt|power VALUE|off\n"
		"       %s [--socket PATH] timer T_WRITE_MS T_READ_MS\n"
		"       dnpctl [--socket PATH] impair SPEC|off\n"
		"       dnpctl list [--json] [DIR...]\n"
		"       dnpctl [--socket PATH] capture FILE [--duration S] | --stop\n"
		"\n"
		"  --socket PATH   the daemon's socket (default $DNP_SOCKET, else\n"
		"                  /run/dnp/dnpd.sock)\n"
		"  stats           engine counters, link states and counters, daemon loop\n"
		"                  counters and open ports (--json: as one JSON object)\n"
		"  topo            each link's expected and discovered neighbour (exit 3\n"
		"                  when one is MISWIRED)\n"
		"  topo --all      the same for every node of the torus: the daemon asks\n"
		"                  each node over the torus; nodes silent after --wait-ms\n"
		"                  (default 2000) are listed (exit 4 if so, 3 if MISWIRED)\n"
		"  status          the LO|FA|MO supervisor's picture: a torus map per plane\n"
		"                  (colour on a terminal), --json, or --log (event log)\n"
		"  sensor          simulate a DNP sensor reading (m°C, mV, mW); off: real one\n"
		"  timer           set the LO|FA|MO timer register (T_write < T_read, ms)\n"
		"  --supervisor A  the supervisor's address (default $DNP_SUPERVISOR)\n"
		"  impair SPEC     change the daemon's link impairment at run time:\n"
		"                  dir=all|xp|..|zm,loss=P%%,corrupt=P%%,dup=P%%,reorder=P%%,\n"
		"                  delay=Nus,seed=N; several joined by ';'; off clears it\n"
		"  list            the daemons on this host: node, coordinates, torus,\n"
		"                  transport, uptime, pid, link states, socket; sockets\n"
		"                  that do not answer within 1 s are listed as stale.\n"
		"                  Looks in $DNP_SOCKET, /run/dnp, $XDG_RUNTIME_DIR and\n"
		"                  the dnp-run.* run directories there, in /dev/shm and\n"
		"                  /tmp; or in the DIRs given (--json: one JSON object)\n"
		"  capture FILE    the daemon records every link's frames into FILE\n"
		"                  (pcapng, as dnpd --pcap: docs/protocol.md); dnpctl\n"
		"                  opens FILE and hands the daemon the open file. Until\n"
		"                  capture --stop, or for --duration S (a bare number is\n"
		"                  seconds; SIGINT stops it early)\n"
		"  -h, --help      this text\n"
		"  -V, --version   the version\n",
		prog, prog, prog, prog);
}

/* Reads exactly len bytes, waiting at most timeout_ms for each piece. */
static int dnpctl_read(int fd, void *buf, size_t len, int timeout_ms)
{
	size_t done = 0;

	while (done < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, timeout_ms) <= 0)
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

/* Prints the node and wiring lines of a report; 3 if one is MISWIRED. */
static int dnpctl_print_topo(char *text)
{
	bool miswired = false;
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "node ", 5) && strncmp(line, "wiring ", 7))
			continue;
		puts(line);
		if (strstr(line, " MISWIRED"))
			miswired = true;
	}
	return miswired ? 3 : 0;
}

/*
 * A connection to the daemon's socket at path, connected within timeout_ms
 * (a listener whose backlog is full does not hold us); *pid gets the peer's
 * pid (SO_PEERCRED) when pid is not NULL. Returns the socket (non-blocking)
 * or -errno of socket/connect, -ETIMEDOUT, -ENAMETOOLONG.
 */
int dnpctl_connect(const char *path, int timeout_ms, pid_t *pid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		socklen_t el = sizeof(r);

		r = -errno;
		if (r != -EAGAIN && r != -EINPROGRESS)
			goto fail;
		r = -ETIMEDOUT;
		if (poll(&p, 1, timeout_ms) <= 0)
			goto fail;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &r, &el) || r) {
			r = r ? -r : -errno;
			goto fail;
		}
	}
	if (pid) {
		struct ucred cred;
		socklen_t cl = sizeof(cred);

		*pid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) ? 0 : cred.pid;
	}
	return fd;
fail:
	close(fd);
	return r;
}

/*
 * One STATS request (arg32: dnpd.h DNPD_STATS_*) on a new connection,
 * bounded by timeout_ms per step; *text gets the report (malloc'd,
 * NUL-terminated), *pid the daemon's pid (pid may be NULL). Errors: those of
 * dnpctl_connect, -errno of send, -ETIMEDOUT, -EIO, -EPROTO, -ENOMEM, the
 * daemon's status.
 */
int dnpctl_ask_pid(const char *path, uint32_t arg, int timeout_ms, char **text, pid_t *pid)
{
	struct dnp_sess_msg m = {
		.magic = DNP_SESS_MAGIC,
		.version = DNP_SESS_VERSION,
		.type = DNP_SESS_STATS,
		.arg32 = arg,
	};
	int fd, r;

	*text = NULL;
	fd = dnpctl_connect(path, timeout_ms, pid);
	if (fd < 0)
		return fd;
	if (send(fd, &m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m)) {
		r = -errno;
		goto out;
	}
	r = dnpctl_read(fd, &m, sizeof(m), timeout_ms);
	if (r)
		goto out;
	if (m.magic != DNP_SESS_MAGIC || m.type != DNP_SESS_STATS || m.len > DNP_SESS_STATS_MAX) {
		r = -EPROTO;
		goto out;
	}
	if (m.status) {
		r = m.status < 0 ? m.status : -EPROTO;
		goto out;
	}
	*text = malloc(m.len + 1);
	if (!*text) {
		r = -ENOMEM;
		goto out;
	}
	r = dnpctl_read(fd, *text, m.len, timeout_ms);
	if (r == 0) {
		(*text)[m.len] = 0;
	} else {
		free(*text);
		*text = NULL;
	}
out:
	close(fd);
	return r;
}

static int dnpctl_ask(const char *path, uint32_t arg, char **text)
{
	return dnpctl_ask_pid(path, arg, 5000, text, NULL);
}

/* stats (the whole report) or topo (its node and wiring lines; 3 when MISWIRED). */
static int dnpctl_stats(const char *path, bool topo, bool json)
{
	char *text;
	int r = dnpctl_ask(path, 0, &text);

	if (r)
		return r;
	if (topo) {
		r = dnpctl_print_topo(text);
	} else if (json) {
		r = dnpctl_stats_json(text, stdout);
	} else {
		fputs(text, stdout);
		r = 0;
	}
	free(text);
	return r;
}

static uint64_t dnpctl_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * True when every "peer" of the report answered within the last max_age_ms
 * (i.e. since we first asked); counts them.
 */
static bool dnpctl_all_fresh(const char *text, uint64_t max_age_ms, unsigned *npeer,
			     unsigned *nfresh)
{
	const char *line = text;

	*npeer = *nfresh = 0;
	for (; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		unsigned id;
		char tail[32];
		unsigned long long age;

		if (sscanf(line, "peer %u (%*u,%*u,%*u) %31s", &id, tail) != 2 ||
		    (strncmp(tail, "age_ms", 6) && strncmp(tail, "no", 2)))
			continue;
		(*npeer)++;
		if (sscanf(line, "peer %u (%*u,%*u,%*u) age_ms %llu", &id, &age) == 2 &&
		    age <= max_age_ms)
			(*nfresh)++;
	}
	return *npeer == *nfresh;
}

/*
 * topo --all: the asked daemon queries every other node over the torus
 * (dnpd.c, "The torus-wide wiring view"); we ask it again every 50 ms until
 * every node answered since we began, or wait_ms passed. Prints each node's
 * line and wiring lines in node-id order, "no answer" for the silent ones.
 * Returns 3 if a link is MISWIRED, 4 if a node did not answer, else 0.
 */
static int dnpctl_topo_all(const char *path, unsigned wait_ms)
{
	uint64_t t0 = dnpctl_ms();
	unsigned npeer = 0, nfresh = 0;
	bool miswired = false, silent = false;
	char *text = NULL, *line, *save = NULL;
	int r;

	for (;;) {
		free(text);
		r = dnpctl_ask(path, DNPD_STATS_TORUS, &text);
		if (r)
			return r;
		if (!strstr(text, "\ntorus_query "))
			return -EOPNOTSUPP; /* a daemon without the torus query */
		if (dnpctl_all_fresh(text, dnpctl_ms() - t0, &npeer, &nfresh) ||
		    dnpctl_ms() - t0 >= wait_ms)
			break;
		usleep(50000);
	}
	printf("torus: %u of %u other nodes answered over the torus\n", nfresh, npeer);
	{
		uint64_t elapsed = dnpctl_ms() - t0;
		unsigned cur = UINT_MAX;
		bool cur_fresh = false;

		for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			unsigned id;
			unsigned long long age;
			int off = 0, clen;

			if (!strncmp(line, "node ", 5)) {
				printf("%s (asked)\n", line);
			} else if (!strncmp(line, "wiring ", 7)) {
				puts(line);
				miswired = miswired || strstr(line, " MISWIRED");
			} else if (sscanf(line, "peer %u %n", &id, &off) == 1 && off) {
				const char *c = line + off;

				if (!strncmp(c, "wiring ", 7)) {
					/* a wiring line of the peer just printed, if it answered */
					if (id == cur && cur_fresh) {
						puts(c);
						miswired = miswired || strstr(c, " MISWIRED");
					}
					continue;
				}
				clen = (int)strcspn(c, " ");
				cur = id;
				cur_fresh = sscanf(c + clen, " age_ms %llu", &age) == 1 &&
					    age <= elapsed;
				if (cur_fresh) {
					printf("node %u %.*s answered\n", id, clen, c);
				} else {
					printf("node %u %.*s no answer over the torus within %u ms\n",
					       id, clen, c, wait_ms);
					silent = true;
				}
			}
		}
	}
	free(text);
	return miswired ? 3 : silent ? 4 : 0;
}

/*
 * The path of one of the daemon's files ("lofamo": its LO|FA|MO register
 * block, "impair": the impairment file it watches), as its report names it
 * ("file KIND PATH"). A daemon that cannot be asked: derived from a socket
 * named DIR/node-<id>.sock (DIR/node-<id>.SUFFIX), the run directory's
 * default layout. Errors: -ENOENT (the daemon has no such file), -EINVAL
 * (not asked and the socket name says nothing), -ENAMETOOLONG.
 */
static int dnpctl_file(const char *sock, const char *kind, const char *suffix, char *out,
		       size_t cap)
{
	char *text, key[32];
	size_t n = strlen(sock);
	int r = dnpctl_ask(sock, 0, &text);

	if (r == 0) {
		const char *l = text;
		size_t klen = (size_t)snprintf(key, sizeof(key), "file %s ", kind);

		r = -ENOENT;
		for (; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
			size_t len = strcspn(l + klen, "\n");

			if (strncmp(l, key, klen))
				continue;
			if (len >= cap) {
				r = -ENAMETOOLONG;
				break;
			}
			memcpy(out, l + klen, len);
			out[len] = 0;
			r = 0;
			break;
		}
		free(text);
		return r;
	}
	if (n < 5 || strcmp(sock + n - 5, ".sock") ||
	    strncmp(strrchr(sock, '/') ? strrchr(sock, '/') + 1 : sock, "node-", 5))
		return -EINVAL;
	if (n - 5 + strlen(suffix) >= cap)
		return -ENAMETOOLONG;
	memcpy(out, sock, n - 5);
	strcpy(out + n - 5, suffix);
	return 0;
}

/* Checks the specs and writes them where the daemon of 'sock' looks. */
static int dnpctl_impair(const char *sock, const char *specs)
{
	char path[4096], tmp[4200], buf[1024];
	char *save = NULL, *sp;
	FILE *f;
	int r;

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
	r = dnpctl_file(sock, "impair", ".impair", path, sizeof(path));
	if (r)
		return r;
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

/*
 * The supervisor's picture, asked in pages (lofamo/core/svc.h,
 * DNP_SVC_Q_PAGED) and joined, so that a torus of any size prints whole.
 * A page that does not come within 1 s is asked again, five times at most in
 * a row; a new snapshot meanwhile starts the picture over.
 */
static int dnpctl_status(const char *addr, unsigned flags)
{
	static uint8_t buf[DNP_SVC_MAX_DGRAM];
	struct dnp_svc_pages pg;
	struct sockaddr_in sa;
	int fd, n, tries = 0;

	if (!addr)
		return -EDESTADDRREQ;
	if (dnp_parse_ipv4_port(addr, &sa))
		return -EINVAL;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	dnp_svc_pages_init(&pg, flags | DNP_SVC_Q_PAGED, (uint32_t)getpid());
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct dnp_svc_msg a;
		ssize_t got;

		n = dnp_svc_pages_request(&pg, buf, sizeof(buf));
		if (n < 0)
			break;
		if (send(fd, buf, (size_t)n, 0) < 0) {
			n = -errno;
			break;
		}
		if (poll(&p, 1, 1000) <= 0) {
			if (++tries == 5) {
				n = -ETIMEDOUT;
				break;
			}
			continue;
		}
		got = recv(fd, buf, sizeof(buf), 0);
		if (got < 0 || dnp_svc_decode(buf, (size_t)got, &a))
			continue;
		n = dnp_svc_pages_take(&pg, &a);
		if (n == 1) {
			fwrite(pg.buf, 1, pg.got, stdout);
			n = 0;
			break;
		}
		if (n == 0 || n == -EAGAIN)
			tries = 0; /* progress (or a fresh start): the budget is per page */
		else if (n != -EBADMSG)
			break;
	}
	dnp_svc_pages_fini(&pg);
	close(fd);
	return n;
}

/* The daemon's register block, as it names it (dnpctl_file), mapped. */
static int dnpctl_regs(const char *sock, struct dnp_lfm_regs **r)
{
	char path[PATH_MAX];
	unsigned dim[3] = { 0, 0, 0 };
	int e = dnpctl_file(sock, "lofamo", ".lofamo", path, sizeof(path));

	if (e)
		return e;
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
		uint64_t v[2];
		uint32_t tw, tr;

		if (dnp_parse_u64_max(argv[1], UINT32_MAX, &v[0]) ||
		    dnp_parse_u64_max(argv[2], UINT32_MAX, &v[1])) {
			fprintf(stderr, "dnpctl: timer %s %s: want two numbers of milliseconds\n",
				argv[1], argv[2]);
			return 2;
		}
		tw = (uint32_t)v[0];
		tr = (uint32_t)v[1];
		e = dnp_lfm_timer_check(tw, tr);
		if (e) {
			fprintf(stderr, "dnpctl: timer T_write %u ms, T_read %u ms refused: %s\n",
				tw, tr, dnp_lfm_timer_strerror(e));
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
				fprintf(stderr,
					"dnpctl: sensor value '%s': want an integer "
					"(m°C, mV or mW) or off\n",
					argv[2]);
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

/* What the options said (dnpctl_opts). */
struct dnpctl_cli {
	const char *path, *sup;
	unsigned qflags, wait_ms;
	uint64_t duration_ms;
	bool all, stop, capture_opt;
};

/* Parses the options into c: -1 to go on, else the exit status. */
static int dnpctl_opts(int argc, char **argv, struct dnpctl_cli *c)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "supervisor", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "log", no_argument, NULL, 'l' },
		{ "all", no_argument, NULL, 'a' },
		{ "wait-ms", required_argument, NULL, 'w' },
		{ "duration", required_argument, NULL, 'D' },
		{ "stop", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int opt;

	while ((opt = getopt_long(argc, argv, "s:S:jlaw:hV", opts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			c->all = true;
			break;
		case 'w':
			if (dnp_parse_duration_ms(optarg, &v) || v > 600000) {
				fprintf(stderr, "dnpctl: --wait-ms %s: want 0..600000\n", optarg);
				return 2;
			}
			c->wait_ms = (unsigned)v;
			break;
		case 'D':
			if (dnp_parse_duration_ns(optarg, 1000000000ull, &v) || v == 0 ||
			    v > 86400000000000ull) {
				fprintf(stderr,
					"dnpctl: --duration %s: want a duration up to 24 h "
					"(a bare number is seconds)\n",
					optarg);
				return 2;
			}
			c->duration_ms = (v + 999999u) / 1000000u;
			c->capture_opt = true;
			break;
		case 'T':
			c->stop = c->capture_opt = true;
			break;
		case 's':
			c->path = optarg;
			break;
		case 'S':
			c->sup = optarg;
			break;
		case 'j':
			c->qflags |= DNP_SVC_Q_JSON;
			break;
		case 'l':
			c->qflags |= DNP_SVC_Q_LOG;
			break;
		case 'h':
			dnpctl_usage(stdout, argv[0]);
			return 0;
		case 'V':
			return dnp_version_print("dnpctl");
		default:
			dnpctl_usage(stderr, argv[0]);
			return 2;
		}
	}
	return -1;
}

/* capture and list, which take options of their own: -1 if the command is neither. */
static int dnpctl_capture_list(int argc, char **argv, const struct dnpctl_cli *c)
{
	int r;

	if (optind < argc && !strcmp(argv[optind], "capture")) {
		if (c->all || c->qflags) {
			fprintf(stderr, "dnpctl: capture does not take %s\n",
				c->all                    ? "--all" :
				c->qflags & DNP_SVC_Q_LOG ? "--log" :
							    "--json");
			return 2;
		}
		if (c->stop ? optind != argc - 1 || c->duration_ms : optind != argc - 2) {
			fprintf(stderr, "dnpctl: capture takes FILE [--duration S], or --stop\n");
			return 2;
		}
		return dnpctl_capture(c->path, c->stop ? NULL : argv[optind + 1], c->duration_ms);
	}
	if (c->capture_opt) {
		fprintf(stderr, "dnpctl: --duration and --stop are options of capture\n");
		return 2;
	}
	if (optind < argc && !strcmp(argv[optind], "list")) {
		if (c->all || (c->qflags & DNP_SVC_Q_LOG)) {
			fprintf(stderr, "dnpctl: list does not take %s\n",
				c->all ? "--all" : "--log");
			return 2;
		}
		r = dnpctl_list((const char *const *)argv + optind + 1,
				(unsigned)(argc - optind - 1), c->qflags & DNP_SVC_Q_JSON);
		if (r) {
			fprintf(stderr, "dnpctl: list: %s\n", strerror(-r));
			return 1;
		}
		return 0;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct dnpctl_cli c = {
		.path = getenv("DNP_SOCKET") && *getenv("DNP_SOCKET") ? getenv("DNP_SOCKET") :
									"/run/dnp/dnpd.sock",
		.sup = getenv("DNP_SUPERVISOR"),
		.wait_ms = 2000,
	};
	const char *path;
	unsigned qflags;
	bool topo, all;
	int r;

	if ((r = dnpctl_opts(argc, argv, &c)) >= 0 ||
	    (r = dnpctl_capture_list(argc, argv, &c)) >= 0)
		return r;
	path = c.path;
	qflags = c.qflags;
	all = c.all;
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
		r = dnpctl_status(c.sup, qflags);
		if (r) {
			fprintf(stderr, "dnpctl: supervisor %s: %s\n",
				c.sup ? c.sup :
					"(none: set "
					"DNP_SUPERVISOR or --supervisor)",
				strerror(-r));
			return 1;
		}
		return 0;
	}
	if (optind == argc - 3 &&
	    (!strcmp(argv[optind], "sensor") || !strcmp(argv[optind], "timer"))) {
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
	if ((all && !topo) || (qflags & DNP_SVC_Q_LOG) || (topo && (qflags & DNP_SVC_Q_JSON))) {
		fprintf(stderr, "dnpctl: %s does not take %s\n", argv[optind],
			all && !topo           ? "--all" :
			qflags & DNP_SVC_Q_LOG ? "--log" :
						 "--json");
		return 2;
	}
	r = all ? dnpctl_topo_all(path, c.wait_ms) :
		  dnpctl_stats(path, topo, qflags & DNP_SVC_Q_JSON);
	if (r == 3 || r == 4)
		return r;
	if (r) {
		fprintf(stderr, "dnpctl: %s: %s\n", path, strerror(-r));
		return 1;
	}
	return 0;
}
