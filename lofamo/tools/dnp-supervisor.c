/* SPDX-License-Identifier: MIT */
/*
 * dnp-supervisor — the Fault Supervisor (EURETILE report, LO|FA|MO: Fault
 * Supervisor): one process on a master node. It listens on the service
 * network (UDP), acknowledges every HEALTH datagram of the Host Fault
 * Managers (lofamo/core/svc.h), builds the systemic picture (lofamo/core/sup.h),
 * appends every change to a time-stamped event log, and answers STATUS
 * queries (dnpctl status) with the torus map, JSON or the log.
 *
 *   dnp-supervisor --torus XxYxZ --listen HOST:PORT [--listen-fd N] [--silence-ms MS]
 *                  [--t-write MS --t-read MS] [--log FILE] [--http HOST:PORT]
 *                  [--on-fault CMD] [--on-heal CMD] [--key-file FILE]
 *
 * --listen-fd: the UDP socket is already bound (by dnp-run) and open as
 * descriptor N; HOST:PORT is then only what the log says.
 *
 * --http (or DNP_SUPERVISOR_HTTP): the live fault map, a page that draws the
 * picture in a browser (lofamo/tools/web/web.h). Port 0 takes any free port;
 * the log says the URL.
 *
 * --on-fault CMD, --on-heal CMD (or DNP_SUPERVISOR_ON_FAULT / _ON_HEAL, e.g.
 * from /etc/dnp/supervisor.env): "sh -c CMD" once when a node turns faulty
 * and once when it is healthy again, the event in its environment
 * (DNP_EVENT, DNP_NODE_ID, ..., DNP_EVENT_JSON: tools/hooks.h).
 *
 * The supervisor's rules (silence, stalls) run on CLOCK_MONOTONIC only: a
 * wall clock stepped back or forth changes no verdict. The wall clock only
 * stamps: times in the picture and the log are CLOCK_REALTIME milliseconds
 * (so that drills can compare them with the moment they injected a fault),
 * read afresh at every call (dnp_sup_wall).
 *
 * --group FIRST-LAST --upstream HOST:PORT [--digest-ms MS]: a group
 * supervisor in a hierarchy (docs/lofamo.md, "A hierarchy of supervisors").
 * It takes the HEALTH of nodes FIRST..LAST only, acknowledges them and keeps
 * their picture as a flat supervisor would, and sends the top supervisor at
 * HOST:PORT an AGG datagram every 20 ms with what changed, and one with every
 * node it heard each digest period (default T_read). The top is a plain
 * dnp-supervisor: it takes AGG beside HEALTH. Without --group nothing changes.
 *
 * A picture larger than one datagram is served in pages (svc.h,
 * DNP_SVC_Q_PAGED): a client that asks for the whole one in a single TEXT
 * then gets a short, still well-formed answer that says so.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "dnp_log.h"
#include "dnp_parse.h"
#include "dnp_version.h"
#include "hooks.h"
#include "regs.h"
#include "sup.h"
#include "tool.h"
#include "web.h"

static atomic_bool stop;

static void on_stop(int sig)
{
	(void)sig;
	atomic_store(&stop, true);
}

static uint64_t clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

static uint64_t real_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

/* The supervisor's time (monotonic); its stamps get the wall clock's offset now. */
static uint64_t sup_now(struct dnp_sup *s)
{
	uint64_t mono = clock_ms(CLOCK_MONOTONIC);

	dnp_sup_wall(s, (int64_t)(real_ms() - mono));
	return mono;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dnp-supervisor --torus XxYxZ --listen HOST:PORT [--silence-ms MS]\n"
		"                      [--t-write MS --t-read MS] [--log FILE]\n"
		"  --silence-ms MS   an HFM silent this long is 'silent' (default 2 x T_read + T_write)\n"
		"  --log FILE        append the event log to FILE (default: standard output)\n"
		"  --http HOST:PORT  serve the live fault map there (default: $DNP_SUPERVISOR_HTTP;\n"
		"                    use a loopback address unless the network is trusted)\n"
		"  --on-fault CMD    run 'sh -c CMD' when a node turns faulty (default:\n"
		"                    $DNP_SUPERVISOR_ON_FAULT); the event is in DNP_EVENT_JSON\n"
		"  --on-heal CMD     the same when it is healthy again ($DNP_SUPERVISOR_ON_HEAL)\n"
		"  --key-file FILE   cluster key (32 hex digits): only signed HEALTHs are taken,\n"
		"                    and STATUS only signed or from a loopback address\n"
		"  --log-level L     error, warn, info (default) or debug\n"
		"  --normal-priority do not raise the priority (default: SCHED_RR 1, or nice -10)\n"

		"  --group FIRST-LAST  be a group supervisor: take the HEALTH of these nodes,\n"
		"                    report them to the top supervisor (needs --upstream)\n"
		"  --upstream HOST:PORT  the top supervisor (a plain dnp-supervisor)\n"
		"  --digest-ms MS    a group's full report every MS (default T_read)\n"
		"  --help, --version\n");
}

struct sup_main {
	struct dnp_sup_conf sc;
	uint32_t tw, tr;
	const char *listen_at, *log_path, *http_at;
	struct sockaddr_in sa;
	int fd;
	FILE *log;
	struct dnp_sup *s;
	uint64_t logged, nstall, stall_ms, seen_stalls;
	struct sockaddr_in http_sa;
	struct dnp_web *web; /* NULL without --http */
	char *json;          /* the picture rendered for the web */
	size_t json_cap;
	uint64_t next_publish;
	const char *on_fault, *on_heal;
	struct dnp_hooks *hooks; /* NULL without --on-fault and --on-heal */
	bool normal_priority;    /* --normal-priority */
	bool keyed;              /* --key-file: datagrams must be signed (svc.h) */
	struct dnp_svc_key key;
	uint64_t refused; /* unsigned or badly signed datagrams dropped */
	enum dnp_log_level log_level;
	/* --group: a group supervisor reporting to the top at --upstream */
	const char *group_arg, *up_at;
	struct sockaddr_in up;
	uint32_t digest_ms;
	uint64_t next_digest, aggs_sent, top_acks, last_top_ack;
	bool top_silent;
};

#define PROG "dnp-supervisor"

/* --http's A.B.C.D:PORT, where a port of 0 asks for any free one. 0 or -EINVAL. */
static int sup_parse_http(const char *s, struct sockaddr_in *sa)
{
	const char *colon = strrchr(s, ':');
	char tmp[INET_ADDRSTRLEN + 3];

	if (!colon || strcmp(colon + 1, "0"))
		return dnp_parse_ipv4_port(s, sa) ? -EINVAL : 0;
	if ((size_t)(colon - s) >= INET_ADDRSTRLEN)
		return -EINVAL;
	snprintf(tmp, sizeof(tmp), "%.*s:1", (int)(colon - s), s);
	if (dnp_parse_ipv4_port(tmp, sa))
		return -EINVAL;
	sa->sin_port = 0;
	return 0;
}

/*
 * --group FIRST-LAST with --upstream (both or neither), inside the torus; the
 * digest period must leave the top's silence rule room (under silence_ms).
 * 0, or -EINVAL after printing why.
 */
static int sup_group_args(struct sup_main *m)
{
	uint32_t n = dnp_torus_size(&m->sc.torus);
	unsigned long long a, b;
	char tail;

	if (!m->group_arg && !m->up_at)
		return 0;
	if (!m->group_arg || !m->up_at) {
		fprintf(stderr, PROG ": --group and --upstream go together\n");
		return -EINVAL;
	}
	if (sscanf(m->group_arg, "%llu-%llu%c", &a, &b, &tail) != 2 || a > b || b >= n) {
		fprintf(stderr, PROG ": bad --group '%s' (want FIRST-LAST, node ids under %u)\n",
			m->group_arg, n);
		return -EINVAL;
	}
	if (!m->digest_ms)
		m->digest_ms = m->tr;
	if (m->digest_ms + m->tw >= m->sc.silence_ms) {
		fprintf(stderr,
			PROG ": --digest-ms %u + T_write must stay under the silence %llu ms\n",
			m->digest_ms, (unsigned long long)m->sc.silence_ms);
		return -EINVAL;
	}
	m->sc.group_first = (uint32_t)a;
	m->sc.group_count = (uint32_t)(b - a + 1);
	if (getrandom(&m->sc.group_incarnation, sizeof(m->sc.group_incarnation), 0) !=
		    sizeof(m->sc.group_incarnation) ||
	    !m->sc.group_incarnation)
		m->sc.group_incarnation = (uint32_t)getpid() | 1u;
	return 0;
}

/* The command line into m. Returns -1 to go on, else the exit status. */
static int sup_args(int argc, char **argv, struct sup_main *m)
{
	static const struct option lo[] = {
		{ "torus", required_argument, NULL, 't' },
		{ "listen", required_argument, NULL, 'l' },
		{ "silence-ms", required_argument, NULL, 's' },
		{ "t-write", required_argument, NULL, 'w' },
		{ "t-read", required_argument, NULL, 'R' },
		{ "log", required_argument, NULL, 'L' },
		{ "listen-fd", required_argument, NULL, 'F' },
		{ "http", required_argument, NULL, 'H' },
		{ "on-fault", required_argument, NULL, 'O' },
		{ "on-heal", required_argument, NULL, 'E' },
		{ "key-file", required_argument, NULL, 'K' },
		{ "log-level", required_argument, NULL, 'g' },
		{ "normal-priority", no_argument, NULL, 'P' },
		{ "group", required_argument, NULL, 'G' },
		{ "upstream", required_argument, NULL, 'U' },
		{ "digest-ms", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct lfm_tool_common common = { &m->key, &m->keyed, &m->log_level,
						&m->normal_priority };
	bool have_torus = false;
	uint32_t v;
	int c, r;

	m->on_fault = getenv("DNP_SUPERVISOR_ON_FAULT");
	m->on_heal = getenv("DNP_SUPERVISOR_ON_HEAL");
	m->http_at = getenv("DNP_SUPERVISOR_HTTP");
	if (m->http_at && !*m->http_at)
		m->http_at = NULL;
	while ((c = getopt_long(argc, argv, "t:l:s:w:R:L:F:H:O:E:K:g:G:U:D:PhV", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			if (dnp_torus_parse(optarg, &m->sc.torus)) {
				fprintf(stderr, PROG ": bad --torus '%s'\n", optarg);
				return 2;
			}
			have_torus = true;
			break;
		case 'l':
			m->listen_at = optarg;
			if (dnp_parse_ipv4_port(optarg, &m->sa)) {
				fprintf(stderr, PROG ": bad --listen '%s'\n", optarg);
				return 2;
			}
			break;
		case 's':
			if (lfm_tool_u32(PROG, "silence-ms", optarg, 3600000, &v))
				return 2;
			m->sc.silence_ms = v;
			break;
		case 'w':
			if (lfm_tool_u32(PROG, "t-write", optarg, UINT32_MAX, &m->tw))
				return 2;
			break;
		case 'R':
			if (lfm_tool_u32(PROG, "t-read", optarg, UINT32_MAX, &m->tr))
				return 2;
			break;
		case 'L':
			m->log_path = optarg;
			break;
		case 'F':
			if (lfm_tool_u32(PROG, "listen-fd", optarg, INT32_MAX, &v))
				return 2;
			m->fd = (int)v;
			break;
		case 'H':
			m->http_at = optarg;
			break;
		case 'O':
			m->on_fault = optarg;
			break;
		case 'E':
			m->on_heal = optarg;
			break;
		case 'G':
			m->group_arg = optarg;
			break;
		case 'U':
			m->up_at = optarg;
			if (dnp_parse_ipv4_port(optarg, &m->up)) {
				fprintf(stderr, PROG ": bad --upstream '%s'\n", optarg);
				return 2;
			}
			break;
		case 'D':
			if (lfm_tool_u32(PROG, "digest-ms", optarg, 60000, &m->digest_ms))
				return 2;
			break;
		default:
			if ((r = lfm_tool_common_opt(PROG, c, optarg, &common, usage)) >= 0)
				return r;
			break;
		}
	}
	if (!have_torus || !m->listen_at || optind != argc)
		return lfm_tool_usage_exit('?', usage);
	if (m->http_at && sup_parse_http(m->http_at, &m->http_sa)) {
		fprintf(stderr, PROG ": bad --http '%s' (want A.B.C.D:PORT, port 0 for any)\n",
			m->http_at);
		return 2;
	}
	if (lfm_tool_timer(PROG, m->tw, m->tr))
		return 2;
	if (!m->sc.silence_ms)
		m->sc.silence_ms = 2ull * m->tr + m->tw;
	if (sup_group_args(m))
		return 2;
	m->sc.stall_ms = m->tw; /* off the CPU for longer than T_write: the late-reader rule */
	return -1;
}

/* The log file and the bound socket (or the one dnp-run handed over). 0 or 1 (said why). */
static int sup_open(struct sup_main *m)
{
	if (m->log_path && !(m->log = fopen(m->log_path, "ae"))) {
		dnp_log(DNP_LOG_ERR, "--log %s: %s", m->log_path, strerror(errno));
		return 1;
	}
	if (m->fd >= 0) {
		/* Handed over by dnp-run, already bound: keep it out of any child. */
		if (fcntl(m->fd, F_SETFD, FD_CLOEXEC) < 0) {
			dnp_log(DNP_LOG_ERR, "--listen-fd %d: %s", m->fd, strerror(errno));
			return 1;
		}
		return 0;
	}
	m->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (m->fd < 0 || bind(m->fd, (struct sockaddr *)&m->sa, sizeof(m->sa)) < 0) {
		dnp_log(DNP_LOG_ERR, "bind %s: %s", m->listen_at, strerror(errno));
		return 1;
	}
	return 0;
}

/*
 * With a cluster key, what may be answered: a signed datagram (its tag is
 * checked and dropped: *signed_ set), or an unsigned STATUS from a loopback
 * address (a local dnpctl). Everything else is dropped unanswered, so an
 * outsider can neither feed the picture nor make us send a large answer to
 * an address it forged. Without a key everything is taken (a trusted
 * service network, docs/security.md).
 */
static bool sup_admit(struct sup_main *m, uint8_t *buf, ssize_t *n, const struct sockaddr_in *from,
		      bool *signed_)
{
	int v;

	*signed_ = false;
	if (!m->keyed)
		return true;
	v = dnp_svc_verify(buf, (size_t)*n, &m->key);
	if (v >= 0) {
		*n = v;
		*signed_ = true;
		return true;
	}
	if ((ntohl(from->sin_addr.s_addr) >> 24) == 127 && *n >= 16 && buf[5] == DNP_SVC_STATUS)
		return true;
	m->refused++;
	return false;
}

/* Every datagram waiting in the socket: HEALTHs acknowledged, STATUS queries answered. */
static void sup_receive(struct sup_main *m)
{
	static uint8_t buf[DNP_SVC_MAX_DGRAM], out[DNP_SVC_MAX_DGRAM];

	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(m->fd, buf, sizeof(buf), MSG_DONTWAIT,
				     (struct sockaddr *)&from, &fl);
		struct dnp_svc_msg q;
		uint64_t now;
		bool signed_;
		int r;

		if (n < 0)
			break;
		if (!sup_admit(m, buf, &n, &from, &signed_))
			continue;
		now = sup_now(m->s);
		if (dnp_svc_decode(buf, (size_t)n, &q) == 0 && q.type == DNP_SVC_STATUS) {
			r = dnp_sup_on_status(m->s, &q, now, out, sizeof(out));
		} else if (m->group_arg && q.type == DNP_SVC_ACK) {
			if (dnp_sup_agg_ack(m->s, &q, now) == 0) {
				m->top_acks++;
				m->last_top_ack = now;
			}
			continue;
		} else {
			r = dnp_sup_on_msg(m->s, buf, (size_t)n, now, out, sizeof(out));
		}
		if (r > 0 && signed_)
			r = dnp_svc_sign(out, (size_t)r, sizeof(out), &m->key);
		if (r > 0)
			(void)sendto(m->fd, out, (size_t)r, MSG_DONTWAIT, (struct sockaddr *)&from,
				     fl);
	}
}

/* The fault map: starts the HTTP side and says where. 0 or 1 (said why). */
static int sup_web_open(struct sup_main *m)
{
	char host[INET_ADDRSTRLEN];
	int r;

	if (!m->http_at)
		return 0;
	r = dnp_web_create(&m->http_sa, &m->web);
	if (r) {
		dnp_log(DNP_LOG_ERR, "--http %s: %s", m->http_at,
			r == -ENOTSUP ? "built without libmicrohttpd" : strerror(-r));
		return 1;
	}
	inet_ntop(AF_INET, &m->http_sa.sin_addr, host, sizeof(host));
	dnp_log(DNP_LOG_INFO, "fault map on http://%s:%u/", host, dnp_web_port(m->web));
	return 0;
}

/* --on-fault / --on-heal: at most 4 at once, each killed after 60 s. 0 or 1 (said why). */
static int sup_hooks_open(struct sup_main *m)
{
	struct dnp_hooks_conf hc = {
		.on_fault = m->on_fault,
		.on_heal = m->on_heal,
		.nnodes = dnp_torus_size(&m->sc.torus),
		.dim = { m->sc.torus.dim[0], m->sc.torus.dim[1], m->sc.torus.dim[2] },
		.max_running = 4,
		.timeout_ms = 60000,
		.log = m->log,
	};

	if ((!m->on_fault || !*m->on_fault) && (!m->on_heal || !*m->on_heal))
		return 0;
	if (dnp_hooks_create(&hc, &m->hooks)) {
		dnp_log(DNP_LOG_ERR, "out of memory");
		return 1;
	}
	dnp_log(DNP_LOG_INFO, "on-fault '%s', on-heal '%s'", m->on_fault ? m->on_fault : "",
		m->on_heal ? m->on_heal : "");
	return 0;
}

/*
 * The picture for the fault map, at most every 250 ms and only while a
 * browser asks (or before the first): rendered whole, however large the
 * torus (the buffer grows until the JSON fits).
 */
static void sup_web_publish(struct sup_main *m, uint64_t now)
{
	size_t len;

	if (!m->web || now < m->next_publish || !dnp_web_wanted(m->web, now, 5000))
		return;
	m->next_publish = now + 250;
	for (;;) {
		if (m->json_cap) {
			len = dnp_sup_render(m->s, DNP_SVC_Q_JSON, now, m->json, m->json_cap);
			if (len + 1 < m->json_cap)
				break;
		}
		if (m->json_cap >= (64u << 20)) /* a 16x16x16 picture is about 2 MB */
			return;
		free(m->json);
		m->json_cap = m->json_cap ? m->json_cap * 2 : (256u << 10);
		m->json = malloc(m->json_cap);
		if (!m->json) {
			m->json_cap = 0;
			return;
		}
	}
	(void)dnp_web_publish(m->web, m->json, len);
}

/* A node's state after an event, for --on-fault / --on-heal (once per transition: hooks.h). */
static void sup_hooks_note(struct sup_main *m, const struct dnp_sup_event *ev)
{
	const struct dnp_sup_node *n = dnp_sup_node(m->s, ev->node);
	struct dnp_hooks_state st = { .t_ms = ev->t_ms };

	if (!n)
		return;
	st.faulty = n->host == SUP_H_FAULTY || n->host == SUP_H_SILENT || n->host == SUP_H_DEAD ||
		    n->dnp == SUP_D_FAULTY || n->dnp == SUP_D_DEAD;
	st.host = dnp_sup_host_name(n->host);
	st.dnp = dnp_sup_dnp_name(n->dnp);
	st.path = dnp_sup_path_name(n->path);
	(void)dnp_hooks_set(m->hooks, ev->node, &st);
}

/*
 * An event's log level: info for a return to health ("host ok", "link X+
 * ok", "alarm sensor temp normal", "alarm dnp back"), warn for the rest (a
 * fault, a suspicion, an alarm).
 */
static int sup_event_level(const char *what)
{
	static const char *const good[] = { " ok", " normal", " back", " recovered", " none" };
	size_t n = strlen(what);

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		size_t k = strlen(good[i]);

		if (n >= k && !strcmp(what + n - k, good[i]))
			return DNP_LOG_INFO;
	}
	return DNP_LOG_WARN;
}

/* The supervisor's own stalls and the picture's new events, to the log. */
static void sup_log_news(struct sup_main *m)
{
	dnp_sup_stalls(m->s, &m->nstall, &m->stall_ms);
	if (m->nstall != m->seen_stalls) {
		dnp_log(DNP_LOG_WARN,
			"was off the CPU (%" PRIu64 " stalls, %" PRIu64
			" ms in all): silence deadlines moved by it",
			m->nstall, m->stall_ms);
		m->seen_stalls = m->nstall;
	}
	for (; m->logged < dnp_sup_nevents(m->s); m->logged++) {
		const struct dnp_sup_event *ev = dnp_sup_event(m->s, m->logged);

		if (ev)
			dnp_log(sup_event_level(ev->what), "node %u %s (%s)", ev->node, ev->what,
				dnp_sup_path_name(ev->path));
		if (ev && m->hooks)
			sup_hooks_note(m, ev);
	}
}

/*
 * A group supervisor's report to the top: what changed since the last
 * call, and every node heard once per digest period. The top's silence is
 * logged once (its acknowledgements stopped for the silence period).
 */
static void sup_report_up(struct sup_main *m, uint64_t now)
{
	static uint8_t out[DNP_SVC_MAX_DGRAM];
	int r;

	if (now >= m->next_digest) {
		dnp_sup_agg_digest(m->s);
		m->next_digest = now + m->digest_ms;
	}
	while ((r = dnp_sup_agg(m->s, now, out, sizeof(out) - DNP_SVC_TAG)) > 0) {
		if (m->keyed)
			r = dnp_svc_sign(out, (size_t)r, sizeof(out), &m->key);
		if (r > 0)
			(void)sendto(m->fd, out, (size_t)r, MSG_DONTWAIT, (struct sockaddr *)&m->up,
				     sizeof(m->up));
		m->aggs_sent++;
	}
	if (m->top_acks && !m->top_silent && now - m->last_top_ack > m->sc.silence_ms) {
		dnp_log(DNP_LOG_WARN, "the top at %s acknowledges nothing", m->up_at);
		m->top_silent = true;
	} else if (m->top_silent && now - m->last_top_ack <= m->sc.silence_ms) {
		dnp_log(DNP_LOG_INFO, "the top at %s answers again", m->up_at);
		m->top_silent = false;
	}
}

static void sup_serve(struct sup_main *m)
{
	uint64_t next_tick = sup_now(m->s);

	while (!atomic_load(&stop)) {
		struct pollfd p = { .fd = m->fd, .events = POLLIN };
		uint64_t now;

		(void)poll(&p, 1, 20);
		sup_receive(m);
		now = sup_now(m->s);
		if (now >= next_tick) {
			dnp_sup_tick(m->s, now);
			if (m->group_arg)
				sup_report_up(m, now);
			next_tick = now + 20;
		}
		sup_log_news(m);
		if (m->hooks)
			dnp_hooks_poll(m->hooks, dnp_hooks_now_ms());
		sup_web_publish(m, now);
	}
}

int main(int argc, char **argv)
{
	static struct sup_main m = {
		.tw = DNP_LFM_T_WRITE_DEFAULT,
		.tr = DNP_LFM_T_READ_DEFAULT,
		.fd = -1,
		.log_level = DNP_LOG_INFO,
	};
	struct sigaction act = { 0 };
	int r = sup_args(argc, argv, &m);

	if (r >= 0)
		return r;
	m.log = stdout;
	dnp_log_setup(PROG, stderr, m.log_level); /* until the log is open */
	if (sup_open(&m))
		return 1;
	dnp_log_setup(PROG, m.log, m.log_level);
	lfm_tool_priority(m.normal_priority);
	if (dnp_sup_create(&m.sc, clock_ms(CLOCK_MONOTONIC), &m.s)) {
		dnp_log(DNP_LOG_ERR, "out of memory");
		return 1;
	}
	act.sa_handler = on_stop;
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	dnp_log(DNP_LOG_INFO,
		"up: torus %ux%ux%u, T_write %u ms, T_read %u ms, silence %" PRIu64 " ms",
		m.sc.torus.dim[0], m.sc.torus.dim[1], m.sc.torus.dim[2], m.tw, m.tr,
		m.sc.silence_ms);
	if (m.group_arg)
		dnp_log(DNP_LOG_INFO,
			"group of nodes %u-%u, reporting to %s every 20 ms (changes) and %u ms "
			"(all)",
			m.sc.group_first, m.sc.group_first + m.sc.group_count - 1, m.up_at,
			m.digest_ms);
	if (sup_web_open(&m) || sup_hooks_open(&m))
		return 1;
	sup_serve(&m);
	if (m.refused)
		dnp_log(DNP_LOG_WARN, "%" PRIu64 " unsigned or badly signed datagrams dropped",
			m.refused);
	dnp_log(DNP_LOG_INFO, "stopped");
	dnp_hooks_destroy(m.hooks);
	dnp_web_destroy(m.web);
	free(m.json);
	dnp_sup_destroy(m.s);
	close(m.fd);
	if (m.log != stdout)
		fclose(m.log);
	return 0;
}
