/* SPDX-License-Identifier: MIT */
/*
 * conf — dnpd's command line and topology file into struct dnpd_conf, and
 * the link addresses derived from it (docs/dnpd.md, "Run directory").
 */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "arb.h"
#include "dnp_log.h"
#include "dnp_parse.h"
#include "dnp_version.h"
#include "dnpd.h"
#include "engine.h"
#include "pkt.h"
#include "route.h"
#include "transport.h"

/* The log from here on: standard error, the level asked, this node's id and coordinates. */
static void dnpd_log_start(const struct dnpd_conf *c)
{
	char node[64];

	dnp_log_setup("dnpd", stderr, (enum dnp_log_level)c->log_level);
	snprintf(node, sizeof(node), "node %u (%u,%u,%u)", dnp_torus_id(&c->torus, c->self),
		 c->self.x, c->self.y, c->self.z);
	dnp_log_set_node(node);
}

/* The daemon's log lines, in the format of common/dnp_log.h. */
void dnpd_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dnp_vlog(level, fmt, ap);
	va_end(ap);
}

void dnpd_conf_default(struct dnpd_conf *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->transport, "shm");
	c->udp_base_port = DNPD_UDP_BASE_DEFAULT;
	c->idle = DNPD_IDLE_ADAPTIVE;
	c->cpu = -1;
	c->log_level = DNPD_WARN;
	c->heap_default = DNP_SESS_HEAP_DEFAULT;
	c->cmd_timeout_ms = DNPD_CMD_TIMEOUT_MS_DEFAULT;
	c->vcs = DNP_MAX_VC; /* VCs 2-3 are what detours around failures route on */
}

/* The EAL arguments the dpdk backend starts with by default (from the registry). */
static const char *dnpd_eal_default(void)
{
	const struct dnp_transport_ops *dpdk = dnp_transport_find("dpdk");

	return dpdk && dpdk->init_default ? dpdk->init_default : "none: built without DPDK";
}

void dnpd_conf_usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s --torus XxYxZ --coord X,Y,Z --run-dir DIR [options]\n"
		"\n"
		"One DNP node of a 3D torus. Applications connect to DIR/node-<id>.sock\n"
		"(id = x + X*(y + Y*z)); DIR/node-<id>.up exists while all links are UP.\n"
		"\n"
		"  --torus XxYxZ            torus dimensions, each 1..256\n"
		"  --coord X,Y,Z            this node's coordinates\n"
		"  --run-dir DIR            socket, doorbell, shm link and .up files\n"
		"  --socket PATH            the application socket instead of\n"
		"                           DIR/node-<id>.sock (e.g. /run/dnp/dnpd.sock, the\n"
		"                           default of dnp_open(NULL))\n"
		"  --transport shm|udp|dpdk|verbs  virtual-link backend (default shm; dpdk,\n"
		"                           verbs when built; verbs: docs/verbs.md)\n"
		"  --verbs-dev NAME, --gid-index N  verbs: RDMA device and GID index (default:\n"
		"                           the GID of the link's local address)\n"
		"  --eal \"ARGS\"             dpdk: EAL arguments, blank-separated (default\n"
		"                           \"%s\")\n"
		"  --dpdk-links af_packet|memif  dpdk links without --config addresses:\n"
		"                           af_packet (default) on the testbed's veths, or\n"
		"                           memif between daemons of one host (sockets in DIR)\n"
		"  --udp-base-port P        udp: node id, direction dir uses port\n"
		"                           P + id*8 + dir on 127.0.0.1 (default %u)\n"
		"  --idle adaptive|busy     adaptive (default): sched_yield() on empty passes\n"
		"                           until 1 ms after the last work (commands, frames,\n"
		"                           events, requests), then sleep on the doorbell\n"
		"                           (udp, verbs: in poll()) until the next timer, at most\n"
		"                           10 ms (dpdk: 100 us); after 3 ms without work\n"
		"                           the engine runs only every 5 ms (dpdk sleeps\n"
		"                           5 ms) until work shows up. busy: spin, never\n"
		"                           sleep (benchmarks on dedicated cores)\n"
		"  --cpu N                  pin the polling thread to CPU N (and its NUMA node)\n"
		"  --config FILE            INI topology file (torus=, coord=, transport=,\n"
		"                           run_dir=, eal=, xp= xm= yp= ym= zp= zm= link\n"
		"                           addresses \"LOCAL[,REMOTE]\"); dpdk without them:\n"
		"                           af_packet:d<id>-<dir> (tests/testbed/netns.sh names)\n"
		"                           command-line options override it\n"
		"  --log-level L            error, warn (default), info, debug (or 0..3)\n"
		"  --credit-period-us N     keep-alive credit period; data is credited at\n"
		"                           once (default 10000)\n"
		"  --credit-timeout-ms N    an UP link without credit this long is BROKEN\n"
		"                           (default 1000)\n"
		"  --heap-size BYTES        session heap when the app asks none (default 64M)\n"
		"  --impair SPEC            impair the frames this node sends (repeatable):\n"
		"                           dir=all|xp|..|zm,loss=P%%,corrupt=P%%,dup=P%%,\n"
		"                           reorder=P%%,delay=Nus,seed=N (docs/dnpd.md)\n"
		"  --pcap FILE              write every frame of every link to a pcapng file\n"
		"                           (docs/protocol.md, \"Capturing and reading frames\")\n"
		"  --cmd-timeout-ms N       a command not completed N ms after its submission\n"
		"                           fails with -ETIMEDOUT (default %u; 0 = never)\n"
		"  --vcs N                  virtual channels per link, 2..%u (default %u);\n"
		"                           neighbours must use the same N\n"
		"  --routing dor|adaptive|valiant  dimension-ordered (default), minimal\n"
		"                           adaptive with DOR on VCs 0/1 as the escape (3+\n"
		"                           VCs), or Valiant through a hashed intermediate\n"
		"                           node (4 VCs); every node of the torus the same;\n"
		"                           docs/routing.md\n"
		"  --congestion off|ecn     congestion management: none (default), or marks\n"
		"                           on congested VCs echoed in completion reports and a\n"
		"                           window per destination (docs/protocol.md,\n"
		"                           \"Congestion marks\")\n"
		"  --arbitration off|strict|wrr  traffic classes: off (default, classes change\n"
		"                           nothing), strict priority with a starvation bound,\n"
		"                           or weighted round robin (docs/routing.md)\n"
		"  --low-payload BYTES      with arbitration on: low classes go in packets of at\n"
		"                           most BYTES payload (16..4096, a multiple of 16;\n"
		"                           default 0, off; docs/routing.md \"Top-class latency\")\n"
		"  --top-reserve WORDS      with arbitration on: RX FIFO words low classes may\n"
		"                           not take (default 0, off)\n"
		"  --link-queue BYTES       with arbitration on: hand a link more frames only\n"
		"                           while its transport holds under BYTES the peer has\n"
		"                           not taken (1..16777216; default 0, off; shm only;\n"
		"                           docs/routing.md, \"a byte-queue limit per link\")\n"
		"  --rx-bufs N              buffer credits: big packet buffers backed per input\n"
		"                           VC, 1..%u (default 0: the engine's, 64 here;\n"
		"                           docs/protocol.md, \"Buffer credits\")\n"
		"  -h, --help               this text\n"
		"  -V, --version            the version\n"
		"\n"
		"SIGTERM or SIGINT stops the daemon cleanly and removes its files.\n",
		prog, dnpd_eal_default(), DNPD_UDP_BASE_DEFAULT, DNPD_CMD_TIMEOUT_MS_DEFAULT,
		DNP_MAX_VC, DNP_MAX_VC, DNP_BUFS_MAX);
}

/*
 * A number of the command line or topology file, with the size suffixes of
 * dnp_parse_size (common/dnp_parse.h: "64K", "1M", 0x...; a value that
 * overflows is refused, never wrapped), at most max. 0 or -EINVAL.
 */
static int dnpd_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (dnp_parse_size(s, &v) || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int dnpd_copy(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n >= len)
		return -EINVAL;
	memcpy(dst, src, n + 1);
	return 0;
}

static const char *const dnpd_dir_keys[DNP_NDIRS] = { "xp", "xm", "yp", "ym", "zp", "zm" };

/*
 * "LOCAL[,REMOTE]": REMOTE defaults to LOCAL (right for shm, where both ends
 * name one file); neither may be empty ("LOCAL," is refused).
 */
static int dnpd_set_link(struct dnpd_conf *c, unsigned dir, const char *v)
{
	const char *comma = strchr(v, ',');
	const char *remote = comma ? comma + 1 : v;
	size_t n = comma ? (size_t)(comma - v) : strlen(v);

	/* Checked whole before either end is written: a refused value leaves the link as it was. */
	if (n == 0 || n >= DNPD_ADDR_MAX || !*remote || strlen(remote) >= DNPD_ADDR_MAX)
		return -EINVAL;
	memcpy(c->addr_local[dir], v, n);
	c->addr_local[dir][n] = 0;
	return dnpd_copy(c->addr_remote[dir], DNPD_ADDR_MAX, remote);
}

/*
 * Key routing: dor, adaptive or valiant (route.h, enum dnp_routing); key arbitration:
 * off, strict or wrr (arb.h, enum dnp_arbitration); keys low_payload (0 or
 * 16..DNP_MAX_PAYLOAD, a multiple of 16) and top_reserve (words, 0..65535;
 * dnpd checks it against its FIFO at start-up): the top-class remedies of
 * engine.h, refused by dnpd_conf_parse with arbitration off; so is key
 * link_queue (bytes, 0..DNPD_LINK_QUEUE_MAX), the byte-queue limit per link
 * (transport/linkq.h); key rx_bufs (0..DNP_BUFS_MAX), the buffer credits per
 * input VC (engine.h rx_bufs; 0: the engine's default).
 */
#define DNPD_LINK_QUEUE_MAX (16u << 20)
static int dnpd_set_congestion(struct dnpd_conf *c, const char *v);

/* Keys routing, arbitration, congestion, rx_bufs...: how packets go and who goes first. */
static int dnpd_set_routing(struct dnpd_conf *c, const char *key, const char *v)
{
	uint64_t u;

	if (!strcmp(key, "arbitration"))
		return dnp_arb_parse(v, &c->arbitration);
	if (!strcmp(key, "congestion"))
		return dnpd_set_congestion(c, v);
	if (!strcmp(key, "low_payload"))
		return dnpd_parse_u64(v, DNP_MAX_PAYLOAD, &u) || u % DNP_WORD_BYTES ?
			       -EINVAL :
			       (c->low_payload = (uint16_t)u, 0);
	if (!strcmp(key, "top_reserve"))
		return dnpd_parse_u64(v, UINT16_MAX, &u) ? -EINVAL :
							   (c->top_reserve = (uint16_t)u, 0);
	if (!strcmp(key, "link_queue"))
		return dnpd_parse_u64(v, DNPD_LINK_QUEUE_MAX, &u) ?
			       -EINVAL :
			       (c->link_queue = (uint32_t)u, 0);
	if (!strcmp(key, "rx_bufs")) /* the lab's range (dnp-lab sweep --rx-bufs); 0: default */
		return dnpd_parse_u64(v, DNP_BUFS_MAX, &u) ? -EINVAL :
							     (c->rx_bufs = (uint32_t)u, 0);
	int m = dnp_routing_parse(v);

	if (m < 0)
		return -EINVAL;
	c->routing = (unsigned)m;
	return 0;
}

/* Key congestion: off or ecn (engine.h, enum dnp_congestion). */
static int dnpd_set_congestion(struct dnpd_conf *c, const char *v)
{
	/* spelled out, not dnp_congestion_parse: the config fuzzer links no engine */
	if (!strcmp(v, "off"))
		c->congestion = DNP_CONGESTION_OFF;
	else if (!strcmp(v, "ecn"))
		c->congestion = DNP_CONGESTION_ECN;
	else
		return -EINVAL;
	return 0;
}

int dnpd_conf_set(struct dnpd_conf *c, const char *key, const char *v)
{
	uint64_t u;
	unsigned i;

	if (!strcmp(key, "torus")) {
		if (dnp_torus_parse(v, &c->torus))
			return -EINVAL;
		c->has |= DNPD_HAS_TORUS;
		return 0;
	}
	if (!strcmp(key, "coord")) {
		if (dnp_coord_parse(v, NULL, &c->self))
			return -EINVAL;
		c->has |= DNPD_HAS_COORD;
		return 0;
	}
	if (!strcmp(key, "run_dir") || !strcmp(key, "run-dir")) {
		if (dnpd_copy(c->run_dir, sizeof(c->run_dir), v) || !*v)
			return -EINVAL;
		c->has |= DNPD_HAS_RUNDIR;
		return 0;
	}
	if (!strcmp(key, "socket"))
		return !*v ? -EINVAL : dnpd_copy(c->socket, sizeof(c->socket), v);
	if (!strcmp(key, "transport"))
		return strcmp(v, "shm") && strcmp(v, "udp") && strcmp(v, "dpdk") &&
				       strcmp(v, "verbs") ?
			       -EINVAL :
			       dnpd_copy(c->transport, sizeof(c->transport), v);
	if (!strcmp(key, "eal"))
		return dnpd_copy(c->eal, sizeof(c->eal), v);
	/* verbs (transport/verbs.h): backend options, the latest first (it wins). */
	if (!strcmp(key, "verbs_dev") || !strcmp(key, "gid_index") || !strcmp(key, "verbs_qp")) {
		char old[sizeof(c->topts)];
		const char *k = key[0] == 'g' ? "gid" : key[6] == 'd' ? "dev" : "qp";
		int w;

		memcpy(old, c->topts, sizeof(old));
		w = snprintf(c->topts, sizeof(c->topts), "%s=%s%s%s", k, v, old[0] ? "," : "", old);
		if (!*v || strchr(v, ',') || w < 0 || (size_t)w >= sizeof(c->topts))
			return -EINVAL;
		return 0;
	}
	if (!strcmp(key, "dpdk_links") || !strcmp(key, "dpdk-links")) {
		if (strcmp(v, "af_packet") && strcmp(v, "memif"))
			return -EINVAL;
		c->dpdk_memif = !strcmp(v, "memif");
		return 0;
	}
	if (!strcmp(key, "udp_base_port") || !strcmp(key, "udp-base-port")) {
		if (dnpd_parse_u64(v, 65535, &u) || u == 0)
			return -EINVAL;
		c->udp_base_port = (unsigned)u;
		return 0;
	}
	if (!strcmp(key, "idle")) {
		if (!strcmp(v, "adaptive"))
			c->idle = DNPD_IDLE_ADAPTIVE;
		else if (!strcmp(v, "busy"))
			c->idle = DNPD_IDLE_BUSY;
		else
			return -EINVAL;
		return 0;
	}
	if (!strcmp(key, "cpu")) {
		if (dnpd_parse_u64(v, 4095, &u))
			return -EINVAL;
		c->cpu = (int)u;
		return 0;
	}
	if (!strcmp(key, "log_level") || !strcmp(key, "log-level")) {
		enum dnp_log_level l;

		if (dnp_log_level_parse(v, &l))
			return -EINVAL;
		c->log_level = (int)l;
		return 0;
	}
	if (!strcmp(key, "credit_period_us") || !strcmp(key, "credit-period-us"))
		return dnpd_parse_u64(v, 60000000ull, &c->credit_period_us) ? -EINVAL :
		       c->credit_period_us                                  ? 0 :
									      -EINVAL;
	if (!strcmp(key, "credit_timeout_ms") || !strcmp(key, "credit-timeout-ms"))
		return dnpd_parse_u64(v, 3600000ull, &c->credit_timeout_ms) ? -EINVAL :
		       c->credit_timeout_ms                                 ? 0 :
									      -EINVAL;
	if (!strcmp(key, "impair")) {
		size_t have = strlen(c->impair), add = strlen(v);

		/* checked by dnpd at start-up (dnp_impair_parse) */
		if (!add || strchr(v, ';') || have + add + 2 > sizeof(c->impair))
			return -EINVAL;
		if (have)
			c->impair[have++] = ';';
		memcpy(c->impair + have, v, add + 1);
		return 0;
	}
	if (!strcmp(key, "pcap"))
		return dnpd_copy(c->pcap, sizeof(c->pcap), v) || !v[0] ? -EINVAL : 0;
	if (!strcmp(key, "cmd_timeout_ms") || !strcmp(key, "cmd-timeout-ms"))
		return dnpd_parse_u64(v, 86400000ull, &c->cmd_timeout_ms) ? -EINVAL : 0;
	if (!strcmp(key, "vcs")) {
		/* At least the two dateline VCs: with one, a torus ring can deadlock. */
		if (dnpd_parse_u64(v, DNP_MAX_VC, &u) || u < 2)
			return -EINVAL;
		return c->vcs = (unsigned)u, 0;
	}
	if (!strcmp(key, "routing") || !strcmp(key, "arbitration") || !strcmp(key, "congestion") ||
	    !strcmp(key, "low_payload") || !strcmp(key, "top_reserve") ||
	    !strcmp(key, "link_queue") || !strcmp(key, "rx_bufs"))
		return dnpd_set_routing(c, key, v);
	if (!strcmp(key, "heap_size") || !strcmp(key, "heap-size"))
		return dnpd_parse_u64(v, DNP_SESS_HEAP_MAX, &c->heap_default) ? -EINVAL :
		       c->heap_default                                        ? 0 :
										-EINVAL;
	for (i = 0; i < DNP_NDIRS; i++)
		if (!strcmp(key, dnpd_dir_keys[i]))
			return dnpd_set_link(c, i, v);
	return -ENOENT;
}

enum {
	OPT_TORUS = 256,
	OPT_COORD,
	OPT_RUNDIR,
	OPT_TRANSPORT,
	OPT_UDP_BASE,
	OPT_IDLE,
	OPT_CPU,
	OPT_CONFIG,
	OPT_LOG,
	OPT_CREDIT_PERIOD,
	OPT_CREDIT_TIMEOUT,
	OPT_HEAP,
	OPT_EAL,
	OPT_DPDK_LINKS,
	OPT_SOCKET,
	OPT_CMD_TIMEOUT,
	OPT_IMPAIR,
	OPT_VCS,
	OPT_VERBS_DEV,
	OPT_GID_INDEX,
	OPT_PCAP,
	OPT_ROUTING,
	OPT_CONGESTION,
	OPT_ARBITRATION,
	OPT_LOW_PAYLOAD,
	OPT_TOP_RESERVE,
	OPT_LINK_QUEUE, /* h-dprio */
	OPT_RX_BUFS,    /* h-obs2 */
};

static const struct option dnpd_opts[] = {
	{ "torus", required_argument, NULL, OPT_TORUS },
	{ "coord", required_argument, NULL, OPT_COORD },
	{ "run-dir", required_argument, NULL, OPT_RUNDIR },
	{ "transport", required_argument, NULL, OPT_TRANSPORT },
	{ "udp-base-port", required_argument, NULL, OPT_UDP_BASE },
	{ "idle", required_argument, NULL, OPT_IDLE },
	{ "cpu", required_argument, NULL, OPT_CPU },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "log-level", required_argument, NULL, OPT_LOG },
	{ "credit-period-us", required_argument, NULL, OPT_CREDIT_PERIOD },
	{ "credit-timeout-ms", required_argument, NULL, OPT_CREDIT_TIMEOUT },
	{ "heap-size", required_argument, NULL, OPT_HEAP },
	{ "eal", required_argument, NULL, OPT_EAL },
	{ "dpdk-links", required_argument, NULL, OPT_DPDK_LINKS },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "cmd-timeout-ms", required_argument, NULL, OPT_CMD_TIMEOUT },
	{ "impair", required_argument, NULL, OPT_IMPAIR }, /* indexed by OPT_* - 256 */
	{ "vcs", required_argument, NULL, OPT_VCS },
	{ "verbs-dev", required_argument, NULL, OPT_VERBS_DEV },
	{ "gid-index", required_argument, NULL, OPT_GID_INDEX },
	{ "pcap", required_argument, NULL, OPT_PCAP },
	{ "routing", required_argument, NULL, OPT_ROUTING },
	{ "congestion", required_argument, NULL, OPT_CONGESTION },
	{ "arbitration", required_argument, NULL, OPT_ARBITRATION },
	{ "low-payload", required_argument, NULL, OPT_LOW_PAYLOAD },
	{ "top-reserve", required_argument, NULL, OPT_TOP_RESERVE },
	{ "link-queue", required_argument, NULL, OPT_LINK_QUEUE },
	{ "rx-bufs", required_argument, NULL, OPT_RX_BUFS },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* The configuration key each option sets (dnpd_conf_set), indexed by OPT_* - OPT_TORUS. */
static const char *const dnpd_opt_keys[] = {
	[OPT_TORUS - OPT_TORUS] = "torus",
	[OPT_COORD - OPT_TORUS] = "coord",
	[OPT_RUNDIR - OPT_TORUS] = "run_dir",
	[OPT_TRANSPORT - OPT_TORUS] = "transport",
	[OPT_UDP_BASE - OPT_TORUS] = "udp_base_port",
	[OPT_IDLE - OPT_TORUS] = "idle",
	[OPT_CPU - OPT_TORUS] = "cpu",
	[OPT_CONFIG - OPT_TORUS] = NULL, /* read in pass 1 */
	[OPT_LOG - OPT_TORUS] = "log_level",
	[OPT_CREDIT_PERIOD - OPT_TORUS] = "credit_period_us",
	[OPT_CREDIT_TIMEOUT - OPT_TORUS] = "credit_timeout_ms",
	[OPT_HEAP - OPT_TORUS] = "heap_size",
	[OPT_EAL - OPT_TORUS] = "eal",
	[OPT_DPDK_LINKS - OPT_TORUS] = "dpdk_links",
	[OPT_SOCKET - OPT_TORUS] = "socket",
	[OPT_CMD_TIMEOUT - OPT_TORUS] = "cmd_timeout_ms",
	[OPT_IMPAIR - OPT_TORUS] = "impair",
	[OPT_VCS - OPT_TORUS] = "vcs",
	[OPT_VERBS_DEV - OPT_TORUS] = "verbs_dev",
	[OPT_GID_INDEX - OPT_TORUS] = "gid_index",
	[OPT_PCAP - OPT_TORUS] = "pcap",
	[OPT_ROUTING - OPT_TORUS] = "routing",
	[OPT_CONGESTION - OPT_TORUS] = "congestion",
	[OPT_ARBITRATION - OPT_TORUS] = "arbitration",
	[OPT_LOW_PAYLOAD - OPT_TORUS] = "low_payload",
	[OPT_TOP_RESERVE - OPT_TORUS] = "top_reserve",
	[OPT_LINK_QUEUE - OPT_TORUS] = "link_queue",
	[OPT_RX_BUFS - OPT_TORUS] = "rx_bufs",
};
static_assert(sizeof(dnpd_opt_keys) / sizeof(dnpd_opt_keys[0]) == OPT_RX_BUFS - OPT_TORUS + 1,
	      "one key per option");

int dnpd_conf_parse(struct dnpd_conf *c, int argc, char **argv)
{
	int opt, r;

	/* Pass 1: --config, --help and --version only, so that the command line overrides the file. */
	opterr = 0;
	optind = 0;
	while ((opt = getopt_long(argc, argv, "hV", dnpd_opts, NULL)) != -1) {
		if (opt == 'h') {
			dnpd_conf_usage(stdout, argv[0]);
			return 1;
		}
		if (opt == 'V')
			return dnp_version_print("dnpd") + 1;
		if (opt == OPT_CONFIG && dnpd_copy(c->config, sizeof(c->config), optarg)) {
			fprintf(stderr, "dnpd: --config: path too long\n");
			return -EINVAL;
		}
	}
	if (c->config[0]) {
		r = dnpd_conf_load(c, c->config);
		if (r)
			return r;
	}

	opterr = 1;
	optind = 0;
	while ((opt = getopt_long(argc, argv, "hV", dnpd_opts, NULL)) != -1) {
		const char *key;

		if (opt == OPT_CONFIG)
			continue;
		if (opt < OPT_TORUS || opt > OPT_RX_BUFS) {
			dnpd_conf_usage(stderr, argv[0]);
			return -EINVAL;
		}
		key = dnpd_opt_keys[opt - OPT_TORUS];
		if (dnpd_conf_set(c, key, optarg)) {
			fprintf(stderr, "dnpd: bad value for --%s: '%s'\n",
				dnpd_opts[opt - 256].name, optarg);
			if (opt == OPT_LOW_PAYLOAD)
				fprintf(stderr,
					"dnpd: --low-payload: 0 (off) or %u..%u bytes, a "
					"multiple of %u\n",
					DNP_WORD_BYTES, DNP_MAX_PAYLOAD, DNP_WORD_BYTES);
			if (opt == OPT_TOP_RESERVE)
				fprintf(stderr, "dnpd: --top-reserve: 0 (off) .. 65535 words\n");
			if (opt == OPT_LINK_QUEUE)
				fprintf(stderr, "dnpd: --link-queue: 0 (off) .. %u bytes\n",
					DNPD_LINK_QUEUE_MAX);
			if (opt == OPT_RX_BUFS)
				fprintf(stderr,
					"dnpd: --rx-bufs: 1..%u buffer credits per input VC (0: "
					"the engine's default)\n",
					DNP_BUFS_MAX);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "dnpd: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if ((c->has & (DNPD_HAS_TORUS | DNPD_HAS_COORD | DNPD_HAS_RUNDIR)) !=
	    (DNPD_HAS_TORUS | DNPD_HAS_COORD | DNPD_HAS_RUNDIR)) {
		fprintf(stderr, "dnpd: --torus, --coord and --run-dir are required\n");
		dnpd_conf_usage(stderr, argv[0]);
		return -EINVAL;
	}
	if (!dnp_torus_contains(&c->torus, c->self)) {
		fprintf(stderr, "dnpd: coordinates %u,%u,%u outside the %ux%ux%u torus\n",
			c->self.x, c->self.y, c->self.z, c->torus.dim[0], c->torus.dim[1],
			c->torus.dim[2]);
		return -EINVAL;
	}
	if ((!strcmp(c->transport, "udp") || !strcmp(c->transport, "verbs")) &&
	    c->udp_base_port + (uint64_t)dnp_torus_size(&c->torus) * 8u > 65536u) {
		fprintf(stderr, "dnpd: --udp-base-port %u leaves no room for %u nodes\n",
			c->udp_base_port, dnp_torus_size(&c->torus));
		return -EINVAL;
	}
	if (c->routing == DNP_ROUTING_ADAPTIVE && c->vcs < DNP_ROUTE_ADAPT_MIN_VCS) {
		fprintf(stderr,
			"dnpd: routing adaptive needs %u VCs or more (2 escape VCs and an "
			"adaptive one), not %u\n",
			DNP_ROUTE_ADAPT_MIN_VCS, c->vcs);
		return -EINVAL;
	}
	if (c->routing == DNP_ROUTING_VALIANT && c->vcs < DNP_ROUTE_VALIANT_VCS) {
		fprintf(stderr, "dnpd: routing valiant needs %u VCs (2 per phase), not %u\n",
			DNP_ROUTE_VALIANT_VCS, c->vcs);
		return -EINVAL;
	}
	if ((c->low_payload || c->top_reserve || c->link_queue) && c->arbitration == DNP_ARB_OFF) {
		fprintf(stderr,
			"dnpd: --low-payload, --top-reserve and --link-queue (low_payload, "
			"top_reserve, link_queue) need --arbitration strict or wrr: with classes "
			"off they do nothing\n");
		return -EINVAL;
	}
	dnpd_log_start(c);
	return 0;
}

int dnpd_path(const struct dnpd_conf *c, const char *suffix, char *out, size_t len)
{
	int n = !strcmp(suffix, ".sock") && c->socket[0] ?
			snprintf(out, len, "%s", c->socket) :
			snprintf(out, len, "%s/node-%u%s", c->run_dir,
				 dnp_torus_id(&c->torus, c->self), suffix);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int dnpd_conf_link_addr(const struct dnpd_conf *c, unsigned dir, char *local, char *remote,
			size_t len, unsigned *side, char *peer_bell, size_t bell_len)
{
	struct dnp_coord peer = dnp_torus_neighbour(&c->torus, c->self, (enum dnp_dir)dir);
	uint32_t id = dnp_torus_id(&c->torus, c->self);
	uint32_t pid = dnp_torus_id(&c->torus, peer);
	int n, m;

	*side = id < pid ? 0 : 1;
	n = snprintf(peer_bell, bell_len, "%s/node-%u.bell", c->run_dir, pid);
	if (n < 0 || (size_t)n >= bell_len)
		return -ENAMETOOLONG;
	if (c->addr_local[dir][0]) {
		if (dnpd_copy(local, len, c->addr_local[dir]) ||
		    dnpd_copy(remote, len, c->addr_remote[dir]))
			return -ENAMETOOLONG;
		return 0;
	}
	uint32_t a = dir % 2 == 0 ? id : pid; /* the link's - end ... */
	uint32_t b = dir % 2 == 0 ? pid : id; /* ... and its + end */

	if (!strcmp(c->transport, "dpdk") && c->dpdk_memif) {
		/* Same-host daemons: one memif socket per link, named like the shm files. */
		n = snprintf(local, len, "memif:%s/link-%u-%u-%u.memif", c->run_dir, a, b, dir / 2);
		m = snprintf(remote, len, "%s", local);
	} else if (!strcmp(c->transport, "dpdk")) {
		/*
		 * The testbed's interface of this direction (tests/testbed/netns.sh:
		 * d<id>-<dir> inside the node's namespace); with no neighbour MAC
		 * known, remote = local: broadcast, fine on a point-to-point veth.
		 */
		n = snprintf(local, len, "af_packet:d%u-%s", id, dnpd_dir_keys[dir]);
		m = snprintf(remote, len, "%s", local);
	} else if (!strcmp(c->transport, "udp") || !strcmp(c->transport, "verbs")) {
		/* verbs: the handshake socket's address, as udp's (transport/verbs.h) */
		unsigned opp = (unsigned)dnp_torus_opposite((enum dnp_dir)dir);

		n = snprintf(local, len, "127.0.0.1:%u", c->udp_base_port + id * 8u + dir);
		m = snprintf(remote, len, "127.0.0.1:%u", c->udp_base_port + pid * 8u + opp);
	} else {
		/*
		 * The link between A and its + neighbour B in dimension d is
		 * "link-A-B-d.shm": node N's + link is (N, N+), its - link is
		 * (N-, N). In a dimension of size 2 the two links between the
		 * same nodes differ by the order of the ids.
		 */
		n = snprintf(local, len, "%s/link-%u-%u-%u.shm", c->run_dir, a, b, dir / 2);
		m = snprintf(remote, len, "%s", local);
	}
	if (n < 0 || (size_t)n >= len || m < 0 || (size_t)m >= len)
		return -ENAMETOOLONG;
	return 0;
}
