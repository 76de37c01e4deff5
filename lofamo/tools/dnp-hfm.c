/* SPDX-License-Identifier: MIT */
/*
 * dnp-hfm — the Host Fault Manager of one node (EURETILE report, LO|FA|MO:
 * HFM). It maps its DNP's register block (lofamo_abi.h, DIR/node-<id>.lofamo),
 * and:
 *   - every T_write checks the host (memory, service network, CPU load,
 *     thermal zones) and writes and validates the Host Watchdog Register;
 *   - every T_read takes and invalidates the DNP Watchdog Register: found
 *     not validated, the DNP has an omission fault; a read that came late
 *     (more than a tenth of T_write after its due time: this process was
 *     kept off the CPU, and the DNP may have been too) first gives the DNP
 *     one more T_write and looks again (dfm.h, the same rule as the DFM's);
 *   - raises an alarm for every change of what the DNP reports (links,
 *     sensors, first-neighbour hosts relayed over the torus) and of its own
 *     devices, and sends HEALTH datagrams to the Fault Supervisor every
 *     T_write (at once when an alarm is new), repeating every alarm until the
 *     supervisor acknowledges it (lofamo/core/svc.h);
 *   - sets the timer and mask registers when asked to (--t-write/--t-read,
 *     --mask), refusing a timer with T_write >= T_read.
 * The service network is considered cut when the supervisor, once heard,
 * acknowledged nothing for T_read + T_write (a supervisor that starts after
 * the HFM is late, not a cut). Each run draws an incarnation id that every
 * HEALTH carries: the supervisor then knows a restarted HFM's alarms, which
 * count from 1 again, are new (svc.h). SIGUSR1 simulates a cut of this node's service network (every
 * datagram in or out is dropped) and a second SIGUSR1 mends it.
 *
 *   dnp-hfm --regs PATH --node ID --supervisor HOST:PORT [--t-write MS --t-read MS]
 *           [--mask HEX] [--key-file FILE]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
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

#include "dfm.h"
#include "dnp_log.h"
#include "dnp_parse.h"
#include "dnp_version.h"
#include "regs.h"
#include "svc.h"
#include "tool.h"

#define HFM_MAX_PENDING 64u

static atomic_bool hfm_stop;
static atomic_bool hfm_cut;

static void on_stop(int sig)
{
	(void)sig;
	atomic_store(&hfm_stop, true);
}

static void on_cut(int sig)
{
	(void)sig;
	atomic_store(&hfm_cut, !atomic_load(&hfm_cut));
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct hfm {
	const char *regs_path;
	uint32_t node;
	struct dnp_lfm_regs *r;
	int fd;
	uint32_t tw, tr; /* ms */
	uint32_t seq, next_id;
	struct dnp_svc_alarm pend[HFM_MAX_PENDING];
	unsigned npend;
	bool dnp_seen, dnp_alive;
	bool dnp_grace;               /* the next read is the late reader's second look */
	struct dnp_lfm_health health; /* this node's recent scheduling delay, ns (regs.h) */
	uint64_t late_reads;
	uint64_t last_dnp; /* DNP status word at the last alarm check */
	uint64_t last_rfd_kind[DNP_LFM_NDIRS];
	uint64_t host_status;
	uint64_t start_ns;
	struct dnp_svc_watch svc; /* the supervisor's acknowledgements (svc.h) */
	uint32_t incarnation;     /* random, non-zero: this run of the HFM (svc.h) */
	bool keyed;               /* --key-file: HEALTHs signed, only signed ACKs taken */
	struct dnp_svc_key key;
	bool urgent;
};

/*
 * An alarm in words, as the supervisor's event log says it ("link X+ sick",
 * "sensor temp alarm", "hostdev svcnet warning"); the log level is warn for
 * a fault and info for a return to normal.
 */
static int alarm_words(char *buf, size_t len, unsigned kind, unsigned subject, unsigned level,
		       unsigned node)
{
	static const char *const dirs[DNP_LFM_NDIRS] = { "X+", "X-", "Y+", "Y-", "Z+", "Z-" };
	static const char *const links[4] = { "none", "ok", "sick", "broken" };
	static const char *const sensors[DNP_LFM_NSENSORS] = { "temp", "volt", "power" };
	static const char *const hdevs[DNP_LFM_NHDEV] = { "memory", "svcnet", "cpu", "thermal" };
	static const char *const levels[4] = { "normal", "warning", "alarm", "?" };
	static const char *const rfds[3] = { "recovered", "omission", "periphery" };

	switch (kind) {
	case DNP_SVC_AL_DNP:
		snprintf(buf, len, "dnp %s", level ? "omission" : "back");
		return level ? DNP_LOG_WARN : DNP_LOG_INFO;
	case DNP_SVC_AL_LINK:
		snprintf(buf, len, "link %s %s", dirs[subject % DNP_LFM_NDIRS], links[level & 3]);
		return level == DNP_LFM_LINK_OK ? DNP_LOG_INFO : DNP_LOG_WARN;
	case DNP_SVC_AL_SENSOR:
		snprintf(buf, len, "sensor %s %s", sensors[subject % DNP_LFM_NSENSORS],
			 levels[level & 3]);
		return level == DNP_LFM_NORMAL ? DNP_LOG_INFO : DNP_LOG_WARN;
	case DNP_SVC_AL_REMOTE:
		snprintf(buf, len, "neighbour %s (node %u) host %s", dirs[subject % DNP_LFM_NDIRS],
			 node, rfds[level < 3 ? level : 0]);
		return level == DNP_LFM_RFD_NONE ? DNP_LOG_INFO : DNP_LOG_WARN;
	case DNP_SVC_AL_HOST:
		snprintf(buf, len, "hostdev %s %s", hdevs[subject % DNP_LFM_NHDEV],
			 levels[level & 3]);
		return level == DNP_LFM_NORMAL ? DNP_LOG_INFO : DNP_LOG_WARN;
	}
	snprintf(buf, len, "of unknown kind %u (subject %u, level %u)", kind, subject, level);
	return DNP_LOG_WARN;
}

static void raise_alarm(struct hfm *h, unsigned kind, unsigned subject, unsigned level,
			uint32_t node)
{
	if (h->npend == HFM_MAX_PENDING) { /* the oldest goes: the supervisor is unreachable */
		memmove(h->pend, h->pend + 1, sizeof(h->pend[0]) * (HFM_MAX_PENDING - 1));
		h->npend--;
	}
	h->pend[h->npend++] = (struct dnp_svc_alarm){
		.id = ++h->next_id,
		.kind = (uint8_t)kind,
		.subject = (uint8_t)subject,
		.level = (uint8_t)level,
		.node = node,
	};
	h->urgent = true;
	/* Stamped (wall clock, as the supervisor logs): a slow awareness splits in two. */
	char what[96];
	int lvl = alarm_words(what, sizeof(what), kind, subject, level, node);

	dnp_log(lvl, "alarm %s on node %u (alarm %u to the supervisor)", what, h->node, h->next_id);
}

/* Memory from /proc/meminfo: available under 5 % alarm, under 10 % warning. */
static unsigned check_memory(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	unsigned long long total = 0, avail = 0, v;
	char key[64];
	unsigned lv = DNP_LFM_NORMAL;

	if (!f)
		return DNP_LFM_NORMAL;
	while (fscanf(f, "%63s %llu kB\n", key, &v) == 2) {
		if (!strcmp(key, "MemTotal:"))
			total = v;
		else if (!strcmp(key, "MemAvailable:"))
			avail = v;
	}
	fclose(f);
	if (total && avail * 20 < total)
		lv = DNP_LFM_ALARM;
	else if (total && avail * 10 < total)
		lv = DNP_LFM_WARNING;
	return lv;
}

/*
 * CPU: a 1-minute load over 16 per CPU is a warning (the host is swamped; a
 * busy shared machine runs at 5-10 per CPU and is not faulty).
 */
static unsigned check_cpu(void)
{
	double load[1];
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (getloadavg(load, 1) != 1 || n < 1)
		return DNP_LFM_NORMAL;
	return load[0] > 16.0 * (double)n ? DNP_LFM_WARNING : DNP_LFM_NORMAL;
}

/* Thermal zones of the host (none on many VMs): 85 °C warning, 95 °C alarm. */
static unsigned check_thermal(void)
{
	unsigned lv = DNP_LFM_NORMAL;

	for (unsigned z = 0; z < 16; z++) {
		char p[64];
		long mc;
		FILE *f;

		snprintf(p, sizeof(p), "/sys/class/thermal/thermal_zone%u/temp", z);
		f = fopen(p, "re");
		if (!f)
			break;
		if (fscanf(f, "%ld", &mc) == 1) {
			if (mc >= 95000)
				lv = DNP_LFM_ALARM;
			else if (mc >= 85000 && lv < DNP_LFM_WARNING)
				lv = DNP_LFM_WARNING;
		}
		fclose(f);
	}
	return lv;
}

static uint64_t host_check(struct hfm *h, uint64_t now, bool slow)
{
	uint64_t w = h->host_status;
	unsigned svc = DNP_LFM_NORMAL;

	if (slow) {
		w &= ~(3ull << (2 * DNP_LFM_HDEV_MEMORY) | 3ull << (2 * DNP_LFM_HDEV_CPU) |
		       3ull << (2 * DNP_LFM_HDEV_THERMAL));
		w |= (uint64_t)check_memory() << (2 * DNP_LFM_HDEV_MEMORY);
		w |= (uint64_t)check_cpu() << (2 * DNP_LFM_HDEV_CPU);
		w |= (uint64_t)check_thermal() << (2 * DNP_LFM_HDEV_THERMAL);
	}
	/*
	 * Acknowledgements come every T_write: none for T_read + T_write (three
	 * and a half missed in a row with the defaults) is a cut. Under CPU
	 * pressure (regs.h, local health: a late supervisor is as likely as a
	 * late host) one more T_write at most. Any longer and the relay that
	 * follows (the DFM reads our register every T_read) would miss the 3 x
	 * T_read awareness budget.
	 */
	uint64_t tw_ns = (uint64_t)h->tw * 1000000ull, tr_ns = (uint64_t)h->tr * 1000000ull;
	uint64_t grace = dnp_lfm_health_grace(&h->health, 0, tw_ns, tr_ns);

	if (dnp_svc_watch_cut(&h->svc, now, tr_ns + tw_ns + (grace < tw_ns ? grace : tw_ns)))
		svc = DNP_LFM_ALARM;
	w &= ~(3ull << (2 * DNP_LFM_HDEV_SVCNET));
	w |= (uint64_t)svc << (2 * DNP_LFM_HDEV_SVCNET);
	for (unsigned d = 0; d < DNP_LFM_NHDEV; d++)
		if (dnp_lfm_host_dev(w, d) != dnp_lfm_host_dev(h->host_status, d))
			raise_alarm(h, DNP_SVC_AL_HOST, d, dnp_lfm_host_dev(w, d), h->node);
	h->host_status = w;
	return w;
}

/* Alarms for what changed in the DNP's report since the last look. */
static void dnp_check(struct hfm *h)
{
	uint64_t w = atomic_load_explicit(&h->r->dnp.status, memory_order_acquire);

	if (!h->dnp_alive)
		return;
	for (unsigned d = 0; d < DNP_LFM_NDIRS; d++)
		if (dnp_lfm_dnp_link(w, d) != dnp_lfm_dnp_link(h->last_dnp, d) &&
		    dnp_lfm_dnp_link(h->last_dnp, d) != DNP_LFM_LINK_NONE)
			raise_alarm(h, DNP_SVC_AL_LINK, d, dnp_lfm_dnp_link(w, d), h->node);
	for (unsigned s = 0; s < DNP_LFM_NSENSORS; s++)
		if (dnp_lfm_dnp_sensor(w, s) != dnp_lfm_dnp_sensor(h->last_dnp, s))
			raise_alarm(h, DNP_SVC_AL_SENSOR, s, dnp_lfm_dnp_sensor(w, s), h->node);
	for (unsigned d = 0; d < DNP_LFM_NDIRS; d++) {
		uint64_t rfd = atomic_load_explicit(&h->r->rfd[d].desc, memory_order_acquire);
		unsigned k = dnp_lfm_rfd_kind(rfd);

		if (k != h->last_rfd_kind[d])
			raise_alarm(h, DNP_SVC_AL_REMOTE, d, k, dnp_lfm_rfd_node(rfd));
		h->last_rfd_kind[d] = k;
	}
	h->last_dnp = w;
}

static void send_health(struct hfm *h)
{
	struct dnp_svc_msg m = { .type = DNP_SVC_HEALTH, .node = h->node, .seq = ++h->seq };
	uint8_t buf[512];
	int n;

	m.u.health.host_status = h->host_status;
	m.u.health.flags =
		(h->dnp_alive ? DNP_SVC_F_DNP_ALIVE : 0) | (h->dnp_seen ? DNP_SVC_F_DNP_SEEN : 0);
	m.u.health.t_write_ms = (uint16_t)h->tw;
	m.u.health.t_read_ms = (uint16_t)h->tr;
	m.u.health.incarnation = h->incarnation;
	if (h->r) {
		m.u.health.dnp_status =
			atomic_load_explicit(&h->r->dnp.status, memory_order_acquire);
		m.u.health.epoch = atomic_load_explicit(&h->r->dfm_epoch, memory_order_relaxed);
		for (unsigned d = 0; d < DNP_LFM_NDIRS; d++)
			m.u.health.rfd[d] =
				atomic_load_explicit(&h->r->rfd[d].desc, memory_order_acquire);
	}
	m.u.health.nalarm = h->npend < DNP_SVC_MAX_ALARMS ? h->npend : DNP_SVC_MAX_ALARMS;
	memcpy(m.u.health.alarm, h->pend, sizeof(h->pend[0]) * m.u.health.nalarm);
	n = dnp_svc_encode(&m, buf, sizeof(buf));
	if (n > 0 && h->keyed)
		n = dnp_svc_sign(buf, (size_t)n, sizeof(buf), &h->key);
	if (n > 0 && !atomic_load(&hfm_cut))
		(void)send(h->fd, buf, (size_t)n, MSG_DONTWAIT);
}

static void recv_acks(struct hfm *h, uint64_t now)
{
	uint8_t buf[256];
	ssize_t n;

	while ((n = recv(h->fd, buf, sizeof(buf), MSG_DONTWAIT)) >= 0) {
		struct dnp_svc_msg m;
		unsigned k = 0;

		if (h->keyed && (n = dnp_svc_verify(buf, (size_t)n, &h->key)) < 0)
			continue; /* unsigned, or not signed with our key */
		if (atomic_load(&hfm_cut) || dnp_svc_decode(buf, (size_t)n, &m) ||
		    !dnp_svc_ack_mine(&m, h->node, h->incarnation))
			continue;
		dnp_svc_watch_ack(&h->svc, now);
		while (k < h->npend && h->pend[k].id <= m.u.ack.ack)
			k++;
		memmove(h->pend, h->pend + k, sizeof(h->pend[0]) * (h->npend - k));
		h->npend -= k;
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dnp-hfm --regs PATH --node ID --supervisor HOST:PORT\n"
		"               [--t-write MS --t-read MS] [--mask HEX]\n"
		"  --regs PATH       the DNP's register block (DIR/node-<id>.lofamo)\n"
		"  --t-write/--t-read  set the timer register (T_write < T_read, ms)\n"
		"  --mask HEX        set the DFM mask register (fault kinds reported)\n"
		"  --key-file FILE   cluster key (32 hex digits): sign HEALTHs, take signed ACKs\n"
		"  --log-level L     error, warn, info (default) or debug\n"
		"  --normal-priority do not raise the priority (default: SCHED_RR 1, or nice -10)\n"
		"  --help, --version\n"
		"SIGUSR1 toggles a simulated cut of this node's service network.\n");
}

#define PROG "dnp-hfm"

/* What the command line asks besides struct hfm's fields. */
struct hfm_args {
	struct sockaddr_in sup;
	uint32_t set_tw, set_tr; /* timer register to set (0: leave it) */
	long mask;               /* mask register to set (-1: leave it) */
	enum dnp_log_level log_level;
	bool normal_priority; /* --normal-priority */
};

/* The command line into h and a. Returns -1 to go on, else the exit status. */
static int hfm_parse(int argc, char **argv, struct hfm *h, struct hfm_args *a)
{
	static const struct option lo[] = {
		{ "regs", required_argument, NULL, 'r' },
		{ "node", required_argument, NULL, 'n' },
		{ "supervisor", required_argument, NULL, 's' },
		{ "t-write", required_argument, NULL, 'w' },
		{ "t-read", required_argument, NULL, 'R' },
		{ "mask", required_argument, NULL, 'm' },
		{ "key-file", required_argument, NULL, 'K' },
		{ "log-level", required_argument, NULL, 'g' },
		{ "normal-priority", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct lfm_tool_common common = { &h->key, &h->keyed, &a->log_level,
						&a->normal_priority };
	bool have_node = false, have_sup = false;
	char *end;
	int c, r;

	while ((c = getopt_long(argc, argv, "r:n:s:w:R:m:K:g:PhV", lo, NULL)) != -1) {
		switch (c) {
		case 'r':
			h->regs_path = optarg;
			break;
		case 'n':
			if (lfm_tool_u32(PROG, "node", optarg, UINT32_MAX, &h->node))
				return 2;
			have_node = true;
			break;
		case 's':
			if (dnp_parse_ipv4_port(optarg, &a->sup)) {
				fprintf(stderr, PROG ": bad --supervisor '%s' (want IPv4:PORT)\n",
					optarg);
				return 2;
			}
			have_sup = true;
			break;
		case 'w':
			if (lfm_tool_u32(PROG, "t-write", optarg, UINT32_MAX, &a->set_tw))
				return 2;
			break;
		case 'R':
			if (lfm_tool_u32(PROG, "t-read", optarg, UINT32_MAX, &a->set_tr))
				return 2;
			break;
		case 'm':
			a->mask = strtol(optarg, &end, 16); /* a bit mask: hexadecimal */
			if (!*optarg || *end || a->mask < 0) {
				fprintf(stderr, PROG ": bad --mask '%s' (hexadecimal)\n", optarg);
				return 2;
			}
			break;
		default:
			if ((r = lfm_tool_common_opt(PROG, c, optarg, &common, usage)) >= 0)
				return r;
			break;
		}
	}
	if (!h->regs_path || !have_node || !have_sup || optind != argc)
		return lfm_tool_usage_exit('?', usage);
	if ((a->set_tw || a->set_tr) && lfm_tool_timer(PROG, a->set_tw, a->set_tr))
		return 2;
	if (a->mask >= 0 && (a->mask & ~(long)DNP_LFM_MASK_ALL)) {
		fprintf(stderr, PROG ": --mask %lx has bits outside 0x%x\n", a->mask,
			DNP_LFM_MASK_ALL);
		return 2;
	}
	return -1;
}

/*
 * The register block, once the daemon created it (until then the DNP is
 * simply not seen), with the timer and mask registers we were asked to set;
 * then the periods in force (a refused timer register keeps ours).
 */
static void hfm_regs(struct hfm *h, const struct hfm_args *a)
{
	if (!h->r) {
		unsigned dim[3] = { 0, 0, 0 };

		if (dnp_lfm_regs_map(h->regs_path, false, h->node, dim, &h->r) == 0) {
			if (a->set_tw)
				(void)dnp_lfm_timer_set(h->r, a->set_tw, a->set_tr);
			if (a->mask >= 0)
				atomic_store(&h->r->mask, (uint32_t)a->mask);
			dnp_log(DNP_LOG_INFO, "mapped the DNP's registers %s", h->regs_path);
		}
	}
	if (h->r) {
		uint32_t tw = atomic_load(&h->r->t_write_ms), tr = atomic_load(&h->r->t_read_ms);

		if (!dnp_lfm_timer_check(tw, tr)) {
			h->tw = tw;
			h->tr = tr;
		}
	}
}

/*
 * Takes the DNP Watchdog Register (due at *next_read): validated, the DNP is
 * alive; not validated, an omission fault, unless we woke late or the node
 * has been under CPU pressure lately (then a second look first: the
 * late-reader rule and local health, dfm.h and regs.h).
 */
static void hfm_read_dnp(struct hfm *h, uint64_t now, uint64_t *next_read)
{
	uint64_t w, late = now - *next_read, grace = 0;
	bool valid = dnp_lfm_wd_take(&h->r->dnp, &w);
	bool second = h->dnp_grace;

	h->dnp_grace = false;
	dnp_lfm_health_note(&h->health, late);
	dnp_lfm_health_note(&h->health, dnp_lfm_wd_late(&h->r->dnp)); /* capped there */
	if (!valid && h->dnp_alive && !second)
		grace = dnp_lfm_health_grace(&h->health, late, (uint64_t)h->tw * 1000000ull,
					     (uint64_t)h->tr * 1000000ull);
	if (grace) {
		h->dnp_grace = true;
		h->late_reads++;
		*next_read = now + grace;
	} else if (valid) {
		if (!h->dnp_alive && h->dnp_seen)
			raise_alarm(h, DNP_SVC_AL_DNP, 0, 0, h->node);
		if (!h->dnp_alive)
			h->last_dnp = w;
		h->dnp_seen = h->dnp_alive = true;
	} else if (h->dnp_alive) {
		/* Not validated since our last read: omission fault of the DNP. */
		h->dnp_alive = false;
		raise_alarm(h, DNP_SVC_AL_DNP, 0, 1, h->node);
	}
	if (!h->dnp_grace)
		*next_read = now + (uint64_t)h->tr * 1000000ull;
}

/* Sleeps until wake (at most 20 ms: relays travel on), or a datagram comes. */
static void hfm_sleep(const struct hfm *h, uint64_t wake)
{
	struct pollfd p = { .fd = h->fd, .events = POLLIN };
	uint64_t now = mono_ns(), slept;
	int ms = wake > now ? (int)((wake - now) / 1000000ull) : 0;

	if (ms > 20)
		ms = 20;
	(void)poll(&p, 1, ms);
	/* Woken more than T_write after it asked: say so (a drill's slow awareness). */
	slept = mono_ns() - now;
	if (slept > (uint64_t)ms * 1000000ull + (uint64_t)h->tw * 1000000ull)
		dnp_log(DNP_LOG_WARN, "woke %llu ms after a %d ms poll (off the CPU)",
			(unsigned long long)(slept / 1000000ull), ms);
}

static void hfm_run(struct hfm *h, const struct hfm_args *a)
{
	uint64_t next_write, next_read, next_hb, next_slow, wake;

	h->start_ns = mono_ns();
	next_write = next_hb = next_slow = h->start_ns;
	next_read = h->start_ns + (uint64_t)h->tr * 1000000ull;
	while (!atomic_load(&hfm_stop)) {
		uint64_t now = mono_ns();

		hfm_regs(h, a);
		recv_acks(h, now);
		if (now >= next_write) {
			bool slow = now >= next_slow;

			host_check(h, now, slow);
			if (slow)
				next_slow = now + (uint64_t)h->tr * 1000000ull;
			dnp_lfm_health_note(&h->health, now - next_write);
			if (h->r)
				dnp_lfm_wd_write_late(&h->r->host, h->host_status, now,
						      h->health.pressure);
			next_write = now + (uint64_t)h->tw * 1000000ull;
		}
		if (h->r && now >= next_read)
			hfm_read_dnp(h, now, &next_read);
		if (h->r)
			dnp_check(h);
		if (h->urgent || now >= next_hb) {
			send_health(h);
			h->urgent = false;
			next_hb = now + (uint64_t)h->tw * 1000000ull;
		}
		/*
		 * No read is due before the block is mapped: a next_read in the
		 * past would make this loop spin (about 1000 map attempts a second
		 * while a daemon started its EAL), so until then the block is
		 * looked for at the pace below.
		 */
		wake = h->r && next_read < next_write ? next_read : next_write;
		hfm_sleep(h, next_hb < wake ? next_hb : wake);
	}
}

int main(int argc, char **argv)
{
	static struct hfm h = { .fd = -1,
				.tw = DNP_LFM_T_WRITE_DEFAULT,
				.tr = DNP_LFM_T_READ_DEFAULT };
	struct hfm_args a = { .mask = -1, .log_level = DNP_LOG_INFO };
	struct sigaction act = { 0 };
	char node[32];
	int r = hfm_parse(argc, argv, &h, &a);

	if (r >= 0)
		return r;
	dnp_log_setup(PROG, stderr, a.log_level);
	snprintf(node, sizeof(node), "node %u", h.node);
	dnp_log_set_node(node);
	lfm_tool_priority(a.normal_priority);
	h.fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (h.fd < 0 || connect(h.fd, (struct sockaddr *)&a.sup, sizeof(a.sup)) < 0) {
		dnp_log(DNP_LOG_ERR, "service network socket: %s", strerror(errno));
		return 1;
	}
	act.sa_handler = on_stop;
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	act.sa_handler = on_cut;
	sigaction(SIGUSR1, &act, NULL);
	if (a.set_tw) {
		h.tw = a.set_tw;
		h.tr = a.set_tr;
	}
	if (getrandom(&h.incarnation, sizeof(h.incarnation), 0) != sizeof(h.incarnation) ||
	    !h.incarnation)
		h.incarnation = (uint32_t)getpid() | 1u;
	dnp_log(DNP_LOG_INFO, "started: supervisor %s:%u", inet_ntoa(a.sup.sin_addr),
		ntohs(a.sup.sin_port));
	hfm_run(&h, &a);
	if (h.late_reads)
		dnp_log(DNP_LOG_INFO, "%llu late reads of the DNP register gave it a second look",
			(unsigned long long)h.late_reads);
	dnp_log(DNP_LOG_INFO, "stopped");
	dnp_lfm_regs_unmap(h.r);
	close(h.fd);
	return 0;
}
