/* SPDX-License-Identifier: MIT */
/*
 * dpdk — DNP virtual links over DPDK Ethernet ports; contract in dpdk.h,
 * design and figures in docs/dpdk.md.
 *
 * Per port (process-wide table, opened by the first link, released by the
 * last unless it came from the EAL command line, see port_release): one RX
 * and one TX queue, one mbuf pool. Per link:
 *   TX: each DNP frame is cut into ceil(len / (mtu - 18)) Ethernet frames
 *       built in mbufs allocated in bulk; they go to a small backlog flushed
 *       with rte_eth_tx_burst, so a frame is never half-sent: what the PMD
 *       refuses stays in the backlog for the next call (tx_burst or
 *       rx_burst), and a full backlog is back-pressure (tx_burst returns 0).
 *   RX: mbufs come from the port (dedicated) or from the link's software
 *       ring filled by whichever link polled the shared port; whole frames in
 *       one contiguous mbuf are returned zero-copy (the mbuf is freed on the
 *       next rx_burst), fragments are copied into a direct-mapped reassembly
 *       slot (frame_id & (reasm - 1)). A slot still holding an older
 *       incomplete frame is simply reused: that frame is dropped and the DNP
 *       link layer retransmits it (docs/protocol.md, link layer).
 * No allocation other than mbufs and no system call per packet; up() reads
 * the kernel carrier at most every link_poll_ms.
 */
#include "dpdk.h"
#include "transport_priv.h"

#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "dnp_parse.h"

#define DNP_DPDK_BURST 32u
#define DNP_DPDK_MIN_MTU 256u
#define DNP_DPDK_DEFAULT_REASM 64u
#define DNP_DPDK_DEFAULT_LINKS 6u
#define DNP_DPDK_KERNEL_MBUF 8192u /* af_packet framesz=8192 needs this data room */
#define DNP_DPDK_MAX_DESC 4096u
#define DNP_DPDK_MIN_DESC 256u
#define DNP_DPDK_MAX_ARGS 64

static_assert(sizeof(struct dnp_dpdk_fhdr) == DNP_DPDK_FHDR_LEN, "fragment header layout");
static_assert(DNP_DPDK_DATA_OFF % 8 == 0, "DNP bytes 8-byte aligned in the mbuf");

enum dnp_dpdk_slot_state {
	DNP_DPDK_SLOT_FREE = 0,
	DNP_DPDK_SLOT_BUSY = 1, /* collecting fragments */
	DNP_DPDK_SLOT_LENT = 2, /* complete, returned by the last rx_burst */
};

struct dnp_dpdk_slot {
	uint64_t have; /* bitmap of received fragment indices */
	uint32_t got;  /* bytes received */
	uint16_t id;
	uint16_t total;
	uint8_t cnt;
	uint8_t state; /* enum dnp_dpdk_slot_state */
	uint8_t *buf;  /* frame_max bytes */
};

struct dnp_dpdk_link;

struct dnp_dpdk_port {
	uint16_t id;
	bool shared;
	bool hotplugged; /* rte_dev_probe'd by us: removed on last close */
	unsigned nlinks;
	struct dnp_dpdk_link *links[DNP_DPDK_PORT_LINKS];
	struct rte_mempool *pool;
	struct rte_ether_addr mac;
	uint32_t eth_mtu;    /* Ethernet payload bytes (before per-link option) */
	uint16_t ethdev_mtu; /* what the PMD accepts as its MTU */
	bool jumbo;          /* no kernel MTU to ask, but jumbo-capable (memif) */
	uint32_t data_room;  /* mbuf bytes after headroom */
	int ctl_fd;          /* ioctl socket for the kernel interface, or -1 */
	char ifname[IF_NAMESIZE];
	char devname[RTE_ETH_NAME_MAX_LEN];
	uint64_t state_tsc;    /* when state_up was read */
	uint64_t state_period; /* TSC cycles between reads */
	bool state_up;
	bool memif_client;   /* reconnected by hand when its server comes back */
	uint64_t redial_tsc; /* last reconnection attempt */
	uint64_t unknown;    /* frames no link claimed */
};

struct dnp_dpdk_link {
	struct dnp_transport_base base;
	struct dnp_dpdk_port *port;
	struct rte_ether_hdr eth; /* prebuilt: dst = peer, src = port, type */
	struct rte_ether_addr peer;
	uint8_t chan, peer_chan;
	uint32_t frame_max;
	uint32_t eth_mtu;
	uint32_t frag_payload; /* eth_mtu - DNP_DPDK_FHDR_LEN */
	uint16_t tx_id;

	/* shared mode: frames demultiplexed to this link, not yet processed */
	struct rte_mbuf **sw;
	uint32_t sw_mask, sw_head, sw_tail;

	/* mbufs pulled and not yet processed */
	struct rte_mbuf *stage[DNP_DPDK_BURST];
	unsigned stage_pos, stage_n;

	/* mbufs lent to the caller by the last rx_burst */
	struct rte_mbuf *held[DNP_DPDK_BURST];
	unsigned nheld;

	/* built and not yet accepted by the PMD */
	struct rte_mbuf **txb;
	unsigned txb_n, txb_cap;

	struct dnp_dpdk_slot *slots;
	uint32_t slot_mask;
	uint8_t *slot_mem;
	uint32_t lent[DNP_DPDK_BURST]; /* slot indices lent by the last rx_burst */
	unsigned nlent;

	struct dnp_dpdk_stats st;
};

/* Process-wide: ports opened by links. Touched at open/close time only. */
static struct dnp_dpdk_port *dnp_dpdk_ports[RTE_MAX_ETHPORTS];
static bool dnp_dpdk_eal_done;
static char *dnp_dpdk_eal_args; /* the argument strings EAL may still point into */

static inline struct dnp_dpdk_link *to_link(struct dnp_transport *t)
{
	return (struct dnp_dpdk_link *)(void *)t;
}

static inline const struct dnp_dpdk_link *to_link_c(const struct dnp_transport *t)
{
	return (const struct dnp_dpdk_link *)(const void *)t;
}

/* ---- options (same "k=v,k=v" syntax as transport_priv.h; kept local so this
 * library does not depend on dnptransport, which lists it) ---- */

static uint32_t pow2_ceil(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* ---- EAL ---- */

int dnp_dpdk_eal_init(int argc, char **argv)
{
	char *args[DNP_DPDK_MAX_ARGS + 1];
	cpu_set_t cpus;
	bool have_cpus;
	int ret;

	if (dnp_dpdk_eal_done)
		return 0;
	if (argc < 1 || argc > DNP_DPDK_MAX_ARGS || !argv)
		return -EINVAL;
	/* rte_eal_init permutes its argv: give it a copy of the pointers. */
	memcpy(args, argv, (size_t)argc * sizeof(*args));
	args[argc] = NULL;
	have_cpus = sched_getaffinity(0, sizeof(cpus), &cpus) == 0;
	ret = rte_eal_init(argc, args);
	if (ret < 0)
		return rte_errno ? -rte_errno : -EINVAL;
	/* EAL pinned this thread to its main lcore; the daemon places itself. */
	if (have_cpus)
		sched_setaffinity(0, sizeof(cpus), &cpus);
	dnp_dpdk_eal_done = true;
	return 0;
}

int dnp_dpdk_eal_init_str(const char *prog, const char *args)
{
	char *argv[DNP_DPDK_MAX_ARGS + 1];
	char *copy, *save = NULL, *tok;
	int argc = 0, ret;

	if (dnp_dpdk_eal_done)
		return 0;
	copy = strdup(args ? args : "");
	if (!copy)
		return -ENOMEM;
	argv[argc++] = (char *)(prog ? prog : "dnpd");
	for (tok = strtok_r(copy, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		if (argc == DNP_DPDK_MAX_ARGS) {
			free(copy);
			return -E2BIG;
		}
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	ret = dnp_dpdk_eal_init(argc, argv);
	/* EAL keeps pointers into argv for some options (e.g. --vdev): keep copy. */
	if (ret < 0)
		free(copy);
	else
		dnp_dpdk_eal_args = copy;
	return ret;
}

bool dnp_dpdk_eal_ready(void)
{
	return dnp_dpdk_eal_done;
}

static bool port_is_memif(const struct dnp_dpdk_port *p)
{
	return strncmp(p->devname, "net_memif", 9) == 0;
}

bool dnp_dpdk_eal_cleanup(void)
{
	if (!dnp_dpdk_eal_done)
		return false;
	bool memif = false;
	for (unsigned i = 0; i < RTE_MAX_ETHPORTS; i++) {
		struct dnp_dpdk_port *p = dnp_dpdk_ports[i];

		if (p && !p->nlinks)
			memif |= port_is_memif(p);
	}
	if (memif) {
		/*
		 * DPDK 22.11's memif PMD tears a connection down (memif_disconnect:
		 * frees its messages, unmaps its regions) both in rte_eth_dev_stop
		 * on the caller's thread and in the EAL interrupt thread when the
		 * peer's control socket closes, with no lock between the two. When
		 * the daemons of a torus stop together, a stop here meets the
		 * peer's close there: a double rte_free ("EAL: Error: Invalid
		 * memory") or a SIGSEGV. So a memif port is never stopped or
		 * closed at exit: only the interrupt thread disconnects, and the
		 * process exit ends it. The same PMD unmaps a region under a
		 * receive burst that is still running when the peer goes away; the
		 * linger below keeps this process's sockets open until peers that
		 * stop at the same time have left their poll loops (the caller
		 * polls no link any more). The caller leaves with _exit(), so no
		 * destructor runs under the interrupt thread either.
		 */
		usleep(DNP_DPDK_MEMIF_LINGER_MS * 1000);
		return true;
	}
	/* ports from the EAL command line stay open between links: close them now */
	for (unsigned i = 0; i < RTE_MAX_ETHPORTS; i++) {
		struct dnp_dpdk_port *p = dnp_dpdk_ports[i];

		if (!p || p->nlinks)
			continue;
		rte_eth_dev_stop(p->id);
		rte_eth_dev_close(p->id);
		rte_mempool_free(p->pool);
		if (p->ctl_fd >= 0)
			close(p->ctl_fd);
		dnp_dpdk_ports[i] = NULL;
		free(p);
	}
	rte_eal_cleanup();
	free(dnp_dpdk_eal_args);
	dnp_dpdk_eal_args = NULL;
	dnp_dpdk_eal_done = false;
	return false;
}

/* ---- ports ---- */

struct port_req {
	const char *local;
	bool shared;
	uint32_t frame_max;
	uint32_t depth;
	uint32_t mtu_opt;  /* 0: derive */
	uint32_t mbuf_opt; /* 0: derive */
	uint32_t links;
	uint32_t poll_ms;
	uint32_t wait_ms;
	unsigned side;
};

/* Kernel interface behind the port (af_packet, af_xdp ...): MTU and carrier. */
static void port_kernel_if(struct dnp_dpdk_port *p, const struct rte_eth_dev_info *info)
{
	p->ctl_fd = -1;
	if (info->if_index == 0 || !if_indextoname(info->if_index, p->ifname))
		return;
	p->ctl_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
}

/* The interface's MTU now (it may change between two opens of one port), or 0. */
static uint32_t port_kernel_mtu(const struct dnp_dpdk_port *p)
{
	struct ifreq ifr;

	if (p->ctl_fd < 0)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, p->ifname, sizeof(p->ifname));
	if (ioctl(p->ctl_fd, SIOCGIFMTU, &ifr) != 0 || ifr.ifr_mtu <= 0)
		return 0;
	return (uint32_t)ifr.ifr_mtu;
}

/*
 * Ethernet payload per frame for the links opened now: the mtu option, else
 * the kernel's, else 9000 for memif, else the ethdev's; never more than one
 * mbuf holds (single-segment TX). af_packet moreover drops, silently, frames
 * above its ring frame size less 32 bytes of tpacket header, and its mbuf
 * data room is sized like that frame.
 */
static int port_set_mtu(struct dnp_dpdk_port *p, const struct port_req *r)
{
	uint32_t kernel_mtu = port_kernel_mtu(p), slack = p->ctl_fd >= 0 ? 32u : 0u;

	if (r->mtu_opt)
		p->eth_mtu = r->mtu_opt;
	else if (kernel_mtu)
		p->eth_mtu = kernel_mtu;
	else if (p->jumbo)
		p->eth_mtu = DNP_DPDK_JUMBO_MTU;
	else
		p->eth_mtu = p->ethdev_mtu;
	if (p->eth_mtu + RTE_ETHER_HDR_LEN + slack > p->data_room)
		p->eth_mtu = p->data_room - RTE_ETHER_HDR_LEN - slack;
	if (p->eth_mtu > UINT16_MAX)
		p->eth_mtu = UINT16_MAX;
	return p->eth_mtu < DNP_DPDK_MIN_MTU ? -EINVAL : 0;
}

/*
 * Port id for conf.local: a number, an ethdev name, devargs to hot-plug, or
 * one of the comma-free short forms (for config syntaxes that split on
 * commas): "af_packet:IFNAME", "memif:PATH" (server on side 0, client on
 * side 1). *jumbo is set for memif, which has no kernel MTU to ask.
 */

/*
 * A memif server's socket file left by a server that was killed (nobody
 * accepts on it) is removed, so that the restarted daemon can listen there
 * again (docs/dnpd.md, "Rejoin"). A live server's socket is left alone.
 */
static void memif_drop_stale_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path) || access(path, F_OK) != 0)
		return;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno == ECONNREFUSED)
		unlink(path);
	close(fd);
}

static int port_resolve(const char *local, unsigned side, uint32_t wait_ms, uint16_t *id,
			bool *hotplugged, bool *jumbo, bool *client)
{
	char name[RTE_ETH_NAME_MAX_LEN], devargs[PATH_MAX + 128];
	const char *comma;
	size_t nlen;
	uint64_t v;
	int ret;

	*hotplugged = false;
	*jumbo = false;
	*client = false;
	if (!local || !*local)
		return -EINVAL;
	if (strncmp(local, DNP_DPDK_AF_PACKET, strlen(DNP_DPDK_AF_PACKET)) == 0) {
		const char *ifn = local + strlen(DNP_DPDK_AF_PACKET);

		if (!*ifn || strlen(ifn) >= IF_NAMESIZE || strchr(ifn, ','))
			return -EINVAL;
		snprintf(devargs, sizeof(devargs), "net_af_packet_%s,iface=%s,%s", ifn, ifn,
			 DNP_DPDK_AF_PACKET_ARGS);
		local = devargs;
	} else if (strncmp(local, DNP_DPDK_MEMIF, strlen(DNP_DPDK_MEMIF)) == 0) {
		const char *path = local + strlen(DNP_DPDK_MEMIF);
		const char *base = strrchr(path, '/');

		base = base ? base + 1 : path;
		if (!*base || strlen(path) >= PATH_MAX || strchr(path, ','))
			return -EINVAL;
		/* ethdev names are at most 63 bytes: the socket's last 40 characters */
		if (strlen(base) > 40)
			base += strlen(base) - 40;
		snprintf(devargs, sizeof(devargs),
			 "net_memif_%s,role=%s,socket=%s,socket-abstract=no,%s", base,
			 side == 0 ? "server" : "client", path, DNP_DPDK_MEMIF_ARGS);
		local = devargs;
		*jumbo = true;
		*client = side != 0;
		if (side == 0)
			memif_drop_stale_socket(path);
		/* A memif client fails to probe until the server's socket exists. */
		for (uint32_t waited = 0; side != 0 && access(path, F_OK) != 0; waited += 10) {
			if (waited >= wait_ms)
				return -ETIMEDOUT;
			usleep(10000);
		}
	}
	if (dnp_parse_u64(local, &v) == 0) {
		if (v >= RTE_MAX_ETHPORTS || !rte_eth_dev_is_valid_port((uint16_t)v))
			return -ENODEV;
		*id = (uint16_t)v;
		return 0;
	}
	comma = strchr(local, ',');
	nlen = comma ? (size_t)(comma - local) : strlen(local);
	if (nlen == 0 || nlen >= sizeof(name))
		return -EINVAL;
	memcpy(name, local, nlen);
	name[nlen] = '\0';
	if (rte_eth_dev_get_port_by_name(name, id) == 0)
		return 0;
	ret = rte_dev_probe(local);
	if (ret < 0)
		return ret;
	if (rte_eth_dev_get_port_by_name(name, id) != 0)
		return -ENODEV;
	*hotplugged = true;
	return 0;
}

/*
 * Last link closed. A port we hot-plugged goes away (its devargs can be
 * probed again); a port from the EAL command line stays configured and
 * started for the next open: af_packet's dev_stop closes its sockets for
 * good, so stopping it would leave it unusable for the rest of the process.
 */
static void port_release(struct dnp_dpdk_port *p)
{
	if (!p->hotplugged)
		return;
	/*
	 * A memif port is neither stopped nor closed (see
	 * dnp_dpdk_eal_cleanup): the process exit ends its connection.
	 */
	if (port_is_memif(p))
		return;
	rte_eth_dev_stop(p->id);
	rte_eth_dev_close(p->id);
	if (p->hotplugged)
		rte_eal_hotplug_remove("vdev", p->devname);
	rte_mempool_free(p->pool);
	if (p->ctl_fd >= 0)
		close(p->ctl_fd);
	dnp_dpdk_ports[p->id] = NULL;
	free(p);
}

/* Descriptor ring sizes and mbuf count for a port carrying depth frames per link. */
static void port_sizes(const struct port_req *r, uint32_t eth_mtu, uint16_t *nb_desc,
		       uint32_t *nb_mbufs)
{
	uint32_t frags =
		(r->frame_max + eth_mtu - DNP_DPDK_FHDR_LEN - 1) / (eth_mtu - DNP_DPDK_FHDR_LEN);
	uint32_t desc = pow2_ceil(r->depth * frags);
	uint32_t per_link, links = r->shared ? r->links : 1, n;

	if (desc < DNP_DPDK_MIN_DESC)
		desc = DNP_DPDK_MIN_DESC;
	if (desc > DNP_DPDK_MAX_DESC)
		desc = DNP_DPDK_MAX_DESC;
	*nb_desc = (uint16_t)desc;
	/* tx backlog + staged + held, and the software ring when shared */
	per_link = 2 * DNP_DPDK_BURST * frags + 2 * DNP_DPDK_BURST;
	if (r->shared)
		per_link += desc;
	n = 2 * desc + links * per_link + 2 * DNP_DPDK_BURST;
	*nb_mbufs = pow2_ceil(n + 1) - 1; /* mempools are cheapest at 2^k - 1 */
}

/*
 * memif client: DPDK 22.11 connects once, at dev_start, and does not retry;
 * a server whose port is probed (socket there) but not started yet drops
 * the connection. Restart the port until the link is up or wait_ms passed.
 */
static int memif_client_connect(uint16_t id, uint32_t wait_ms)
{
	struct rte_eth_link el;

	for (uint32_t ms = 0; ms < wait_ms; ms++) {
		memset(&el, 0, sizeof(el));
		if (rte_eth_link_get_nowait(id, &el) == 0 && el.link_status == RTE_ETH_LINK_UP)
			return 0;
		if (ms % 250 == 249) {
			rte_eth_dev_stop(id);
			if (rte_eth_dev_start(id) < 0)
				return -EIO;
		}
		usleep(1000);
	}
	return -ETIMEDOUT;
}

/*
 * A port this process has open already: an idle one is reused (what arrived
 * meanwhile is dropped), a busy one is shared when both opens allow it.
 * 0, -EBUSY or the error of port_set_mtu().
 */
static int port_reuse(struct dnp_dpdk_port *p, const struct port_req *r, uint16_t id)
{
	if (p->nlinks == 0) {
		struct rte_mbuf *mb[DNP_DPDK_BURST];
		uint16_t n;

		while ((n = rte_eth_rx_burst(id, 0, mb, DNP_DPDK_BURST)) > 0)
			rte_pktmbuf_free_bulk(mb, n);
		p->shared = r->shared;
		return port_set_mtu(p, r);
	}
	if (!p->shared || !r->shared || p->nlinks == DNP_DPDK_PORT_LINKS)
		return -EBUSY;
	return 0;
}

/*
 * The ethdev MTU (what some PMDs accept; af_packet/memif cap it at 1500) and
 * the mbuf data room, fixed for the port's life (the pool) and sized by the
 * first open; then the port's MTU. 0 or -EINVAL.
 */
static int port_size_mtu(struct dnp_dpdk_port *p, const struct port_req *r,
			 const struct rte_eth_dev_info *info)
{
	uint32_t max_mtu = info->max_rx_pktlen > RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN ?
				   info->max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN :
				   RTE_ETHER_MTU;

	if (info->max_mtu && max_mtu > info->max_mtu)
		max_mtu = info->max_mtu;
	p->ethdev_mtu = (uint16_t)(max_mtu < 9000 ? max_mtu : 9000);
	if (r->mbuf_opt) {
		p->data_room = r->mbuf_opt;
	} else if (p->ctl_fd >= 0) {
		p->data_room = DNP_DPDK_KERNEL_MBUF;
	} else {
		p->data_room = 0xffffu - RTE_PKTMBUF_HEADROOM; /* no limit yet */
		if (port_set_mtu(p, r) == 0)
			p->data_room = (p->eth_mtu + RTE_ETHER_HDR_LEN + 63) & ~63u;
	}
	if (p->data_room + RTE_PKTMBUF_HEADROOM > UINT16_MAX || port_set_mtu(p, r) < 0)
		return -EINVAL;
	return 0;
}

static int port_open(const struct port_req *r, struct dnp_dpdk_port **out)
{
	struct rte_eth_conf ec;
	struct rte_eth_dev_info info;
	struct dnp_dpdk_port *p;
	char pname[RTE_MEMPOOL_NAMESIZE];
	uint32_t nb_mbufs;
	uint16_t id, nb_rxd, nb_txd;
	bool hot, jumbo, client;
	int ret;

	ret = port_resolve(r->local, r->side, r->wait_ms, &id, &hot, &jumbo, &client);
	if (ret < 0)
		return ret;
	p = dnp_dpdk_ports[id];
	if (p) {
		ret = port_reuse(p, r, id);
		if (ret == 0)
			*out = p;
		return ret;
	}
	ret = rte_eth_dev_info_get(id, &info);
	if (ret < 0)
		return ret;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->id = id;
	p->shared = r->shared;
	p->hotplugged = hot;
	rte_eth_dev_get_name_by_port(id, p->devname);
	port_kernel_if(p, &info);
	p->jumbo = jumbo;

	ret = port_size_mtu(p, r, &info);
	if (ret < 0)
		goto err_free;

	memset(&ec, 0, sizeof(ec));
	ec.rxmode.mtu = p->ethdev_mtu;
	ret = rte_eth_dev_configure(id, 1, 1, &ec);
	if (ret < 0)
		goto err_free;
	port_sizes(r, p->eth_mtu, &nb_rxd, &nb_mbufs);
	nb_txd = nb_rxd;
	ret = rte_eth_dev_adjust_nb_rx_tx_desc(id, &nb_rxd, &nb_txd);
	if (ret < 0)
		goto err_close;
	snprintf(pname, sizeof(pname), "dnp_dpdk_%u", id);
	p->pool = rte_pktmbuf_pool_create(pname, nb_mbufs, DNP_DPDK_BURST, 0,
					  (uint16_t)(p->data_room + RTE_PKTMBUF_HEADROOM),
					  rte_socket_id());
	if (!p->pool) {
		ret = rte_errno ? -rte_errno : -ENOMEM;
		goto err_close;
	}
	ret = rte_eth_rx_queue_setup(id, 0, nb_rxd, rte_eth_dev_socket_id(id), NULL, p->pool);
	if (ret < 0)
		goto err_pool;
	ret = rte_eth_tx_queue_setup(id, 0, nb_txd, rte_eth_dev_socket_id(id), NULL);
	if (ret < 0)
		goto err_pool;
	/*
	 * A memif client connects to its server's socket in dev_start, and
	 * fails when the socket file exists but the server does not listen on
	 * it yet (or is restarting): try again until wait_ms has passed.
	 */
	ret = rte_eth_dev_start(id);
	for (uint32_t waited = 0; ret < 0 && client && waited < r->wait_ms; waited += 10) {
		usleep(10000);
		ret = rte_eth_dev_start(id);
	}
	if (ret < 0)
		goto err_pool;
	if (client) {
		ret = memif_client_connect(id, r->wait_ms);
		if (ret < 0)
			goto err_stop;
	}
	rte_eth_macaddr_get(id, &p->mac);
	p->state_period = rte_get_tsc_hz() / 1000 * r->poll_ms;
	p->state_tsc = 0;
	p->state_up = false;
	p->memif_client = client;
	dnp_dpdk_ports[id] = p;
	*out = p;
	return 0;

err_stop:
	rte_eth_dev_stop(id);
err_pool:
	rte_mempool_free(p->pool);
err_close:
	rte_eth_dev_close(id);
err_free:
	if (hot)
		rte_eal_hotplug_remove("vdev", p->devname);
	if (p->ctl_fd >= 0)
		close(p->ctl_fd);
	free(p);
	return ret;
}

/* ---- RX ---- */

/* Shared port: pulls one burst and hands each frame to the link that owns it. */
static void port_demux(struct dnp_dpdk_port *p)
{
	struct rte_mbuf *mb[DNP_DPDK_BURST];
	uint16_t n = rte_eth_rx_burst(p->id, 0, mb, DNP_DPDK_BURST);

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = mb[i];
		const struct rte_ether_hdr *eh;
		const struct dnp_dpdk_fhdr *fh;
		struct dnp_dpdk_link *l = NULL;

		if (m->data_len >= DNP_DPDK_DATA_OFF) {
			eh = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
			fh = (const struct dnp_dpdk_fhdr *)(const void *)(eh + 1);
			if (eh->ether_type == rte_cpu_to_be_16(DNP_DPDK_ETHERTYPE)) {
				for (unsigned k = 0; k < p->nlinks; k++) {
					struct dnp_dpdk_link *c = p->links[k];

					if (c->chan == fh->chan &&
					    rte_is_same_ether_addr(&c->peer, &eh->src_addr)) {
						l = c;
						break;
					}
				}
			}
		}
		if (!l) {
			p->unknown++;
			rte_pktmbuf_free(m);
			continue;
		}
		if (l->sw_tail - l->sw_head > l->sw_mask) {
			l->st.rx_ring_drop++;
			rte_pktmbuf_free(m);
			continue;
		}
		l->sw[l->sw_tail++ & l->sw_mask] = m;
	}
}

/* Refills the stage from the port (dedicated) or the software ring (shared). */
static unsigned link_pull(struct dnp_dpdk_link *l)
{
	unsigned n = 0;

	if (!l->port->shared) {
		n = rte_eth_rx_burst(l->port->id, 0, l->stage, DNP_DPDK_BURST);
	} else {
		if (l->sw_tail == l->sw_head)
			port_demux(l->port);
		while (n < DNP_DPDK_BURST && l->sw_head != l->sw_tail)
			l->stage[n++] = l->sw[l->sw_head++ & l->sw_mask];
	}
	l->stage_pos = 0;
	l->stage_n = n;
	return n;
}

/* Copies a fragment's bytes (possibly from a chained mbuf) into dst. */
static void frag_copy(const struct rte_mbuf *m, uint32_t off, uint32_t len, uint8_t *dst)
{
	const void *src = rte_pktmbuf_read(m, off, len, dst);

	if (src && src != dst)
		rte_memcpy(dst, src, len);
}

/*
 * Processes one Ethernet frame. Returns 1 when f now holds a complete DNP
 * frame, 0 when m was consumed without completing one, -EAGAIN when m needs a
 * reassembly slot still lent to the caller (m is kept for the next call).
 */
static int link_rx_one(struct dnp_dpdk_link *l, struct rte_mbuf *m, struct dnp_rx_frame *f)
{
	uint8_t hb[DNP_DPDK_DATA_OFF];
	const struct rte_ether_hdr *eh;
	const struct dnp_dpdk_fhdr *fh;
	struct dnp_dpdk_slot *s;
	uint32_t total, off, len, idx, cnt;
	uint16_t id;

	if (m->pkt_len < DNP_DPDK_DATA_OFF)
		goto bad;
	eh = rte_pktmbuf_read(m, 0, DNP_DPDK_DATA_OFF, hb);
	fh = (const struct dnp_dpdk_fhdr *)(const void *)(eh + 1);
	if (eh->ether_type != rte_cpu_to_be_16(DNP_DPDK_ETHERTYPE) ||
	    fh->version != DNP_DPDK_VERSION)
		goto bad;
	total = rte_be_to_cpu_16(fh->total_len);
	off = rte_be_to_cpu_16(fh->offset);
	len = rte_be_to_cpu_16(fh->len);
	idx = fh->frag_idx;
	cnt = fh->frag_cnt;
	/* Ethernet may pad short frames: trust len, never read past pkt_len. */
	if (total == 0 || total > l->frame_max || cnt == 0 || cnt > DNP_DPDK_MAX_FRAGS ||
	    idx >= cnt || len == 0 || off + len > total || DNP_DPDK_DATA_OFF + len > m->pkt_len)
		goto bad;
	l->st.rx_eth++;

	if (cnt == 1) {
		if (len != total)
			goto bad;
		if (m->nb_segs == 1) {
			f->data = rte_pktmbuf_mtod_offset(m, const uint8_t *, DNP_DPDK_DATA_OFF);
			f->len = total;
			l->held[l->nheld++] = m;
			return 1;
		}
	}

	/* Fragment (or a chained mbuf): copy into the slot of its frame id. */
	id = rte_be_to_cpu_16(fh->frame_id);
	s = &l->slots[id & l->slot_mask];
	if (s->state == DNP_DPDK_SLOT_LENT)
		return -EAGAIN;
	if (s->state == DNP_DPDK_SLOT_BUSY && (s->id != id || s->total != total || s->cnt != cnt)) {
		/* An older frame lost a fragment: drop it, the DNP link retransmits. */
		l->st.rx_reasm_drop++;
		s->state = DNP_DPDK_SLOT_FREE;
	}
	if (s->state == DNP_DPDK_SLOT_FREE) {
		s->state = DNP_DPDK_SLOT_BUSY;
		s->id = id;
		s->total = (uint16_t)total;
		s->cnt = (uint8_t)cnt;
		s->have = 0;
		s->got = 0;
	}
	if (!(s->have & (1ull << idx))) {
		frag_copy(m, DNP_DPDK_DATA_OFF, len, s->buf + off);
		s->have |= 1ull << idx;
		s->got += len;
	}
	rte_pktmbuf_free(m);
	if (s->got < total || (unsigned)__builtin_popcountll(s->have) < cnt)
		return 0;
	if (s->got != total) {
		/* overlapping fragments: not from a conforming sender */
		s->state = DNP_DPDK_SLOT_FREE;
		l->st.rx_bad++;
		return 0;
	}
	s->state = DNP_DPDK_SLOT_LENT;
	l->lent[l->nlent++] = (uint32_t)(s - l->slots);
	f->data = s->buf;
	f->len = total;
	return 1;

bad:
	l->st.rx_bad++;
	rte_pktmbuf_free(m);
	return 0;
}

static void link_tx_flush(struct dnp_dpdk_link *l);

static int dpdk_rx_burst(struct dnp_transport *t, struct dnp_rx_frame *f, unsigned n)
{
	struct dnp_dpdk_link *l = to_link(t);
	unsigned got = 0;

	if (l->txb_n)
		link_tx_flush(l);
	/* What the previous call lent is ours again. */
	if (l->nheld) {
		rte_pktmbuf_free_bulk(l->held, l->nheld);
		l->nheld = 0;
	}
	for (unsigned i = 0; i < l->nlent; i++)
		l->slots[l->lent[i]].state = DNP_DPDK_SLOT_FREE;
	l->nlent = 0;

	/*
	 * A memif client whose server went away (killed and restarted: docs/
	 * dnpd.md, "Rejoin") is not reconnected by DPDK 22.11: restart the
	 * port every 250 ms while it is down. Nothing is lent at this point.
	 */
	if (l->port->memif_client && l->port->state_tsc && !l->port->state_up) {
		uint64_t now = rte_get_tsc_cycles();

		if (now - l->port->redial_tsc > rte_get_tsc_hz() / 4) {
			l->port->redial_tsc = now;
			rte_eth_dev_stop(l->port->id);
			(void)rte_eth_dev_start(l->port->id);
			l->port->state_tsc = 0; /* read the link state again */
		}
	}
	if (n > DNP_DPDK_BURST)
		n = DNP_DPDK_BURST;
	while (got < n) {
		int r;

		if (l->stage_pos == l->stage_n && link_pull(l) == 0)
			break;
		r = link_rx_one(l, l->stage[l->stage_pos], &f[got]);
		if (r == -EAGAIN)
			break;
		l->stage_pos++;
		got += (unsigned)r;
	}
	l->st.rx_frames += got;
	return (int)got;
}

/* ---- TX ---- */

static void link_tx_flush(struct dnp_dpdk_link *l)
{
	uint16_t sent = rte_eth_tx_burst(l->port->id, 0, l->txb, (uint16_t)l->txb_n);

	l->st.tx_eth += sent;
	if (sent == l->txb_n) {
		l->txb_n = 0;
		return;
	}
	memmove(l->txb, l->txb + sent, (l->txb_n - sent) * sizeof(*l->txb));
	l->txb_n -= sent;
}

static int dpdk_tx_burst(struct dnp_transport *t, const struct dnp_tx_frame *f, unsigned n)
{
	struct dnp_dpdk_link *l = to_link(t);
	unsigned taken = 0;

	if (l->txb_n)
		link_tx_flush(l);
	for (; taken < n; taken++) {
		uint32_t len = f[taken].len, cnt, off = 0;
		struct rte_mbuf **mb = l->txb + l->txb_n;
		uint16_t id = 0;

		if (len == 0 || len > l->frame_max) {
			if (taken == 0)
				return -EINVAL;
			break;
		}
		cnt = (len + l->frag_payload - 1) / l->frag_payload;
		if (l->txb_cap - l->txb_n < cnt)
			break;
		if (rte_pktmbuf_alloc_bulk(l->port->pool, mb, cnt) != 0)
			break;
		if (cnt > 1)
			id = l->tx_id++;
		for (uint32_t i = 0; i < cnt; i++) {
			uint32_t seg = len - off < l->frag_payload ? len - off : l->frag_payload;
			uint8_t *d = rte_pktmbuf_mtod(mb[i], uint8_t *);
			struct dnp_dpdk_fhdr *fh = (struct dnp_dpdk_fhdr *)(void *)(d + 14);

			memcpy(d, &l->eth, sizeof(l->eth));
			fh->version = DNP_DPDK_VERSION;
			fh->chan = l->peer_chan;
			fh->frag_idx = (uint8_t)i;
			fh->frag_cnt = (uint8_t)cnt;
			fh->frame_id = rte_cpu_to_be_16(id);
			fh->total_len = rte_cpu_to_be_16((uint16_t)len);
			fh->offset = rte_cpu_to_be_16((uint16_t)off);
			fh->len = rte_cpu_to_be_16((uint16_t)seg);
			memset(fh->reserved, 0, sizeof(fh->reserved));
			rte_memcpy(d + DNP_DPDK_DATA_OFF, f[taken].data + off, seg);
			mb[i]->data_len = (uint16_t)(DNP_DPDK_DATA_OFF + seg);
			mb[i]->pkt_len = DNP_DPDK_DATA_OFF + seg;
			off += seg;
		}
		l->txb_n += cnt;
	}
	if (l->txb_n)
		link_tx_flush(l);
	l->st.tx_frames += taken;
	return (int)taken;
}

/* ---- open / close ---- */

static void link_free(struct dnp_dpdk_link *l)
{
	free(l->sw);
	free(l->txb);
	free(l->slots);
	free(l->slot_mem);
	free(l);
}

static int dpdk_open(const struct dnp_transport_conf *c, struct dnp_transport **out)
{
	struct port_req r = { 0 };
	struct dnp_dpdk_link *l;
	struct dnp_dpdk_port *p;
	uint32_t chan, peer_chan, reasm, mtu_link, frags;
	char v[8];
	int ret;

	if (!c || !out || c->frame_max == 0 || c->frame_max > UINT16_MAX || c->depth == 0 ||
	    (c->depth & (c->depth - 1)))
		return -EINVAL;
	if (!dnp_dpdk_eal_done) {
		ret = dnp_dpdk_eal_init_str("dnpd", DNP_DPDK_EAL_DEFAULT);
		if (ret < 0)
			return ret;
	}
	r.local = c->local;
	r.side = c->side;
	r.shared = dnp_transport_opt(c->options, "shared", v, sizeof(v)) && strcmp(v, "0") != 0;
	r.frame_max = c->frame_max;
	r.depth = c->depth;
	if (dnp_transport_opt_u32(c->options, "chan", 0, 255, &chan) ||
	    dnp_transport_opt_u32(c->options, "peer_chan", 0, 255, &peer_chan) ||
	    dnp_transport_opt_u32(c->options, "mtu", 0, UINT16_MAX, &r.mtu_opt) ||
	    dnp_transport_opt_u32(c->options, "mbuf_size", 0, UINT16_MAX - RTE_PKTMBUF_HEADROOM,
				  &r.mbuf_opt) ||
	    dnp_transport_opt_u32(c->options, "links", DNP_DPDK_DEFAULT_LINKS, DNP_DPDK_PORT_LINKS,
				  &r.links) ||
	    dnp_transport_opt_u32(c->options, "link_poll_ms", 10, 60000, &r.poll_ms) ||
	    dnp_transport_opt_u32(c->options, "wait_ms", 10000, 3600000, &r.wait_ms) ||
	    dnp_transport_opt_u32(c->options, "reasm", DNP_DPDK_DEFAULT_REASM, 4096, &reasm))
		return -EINVAL;
	if (reasm < DNP_DPDK_BURST || (reasm & (reasm - 1)) ||
	    (r.mtu_opt && r.mtu_opt < DNP_DPDK_MIN_MTU))
		return -EINVAL;
	if (r.links == 0)
		r.links = 1;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->base.ops = &dnp_transport_dpdk;
	l->frame_max = c->frame_max;
	l->chan = (uint8_t)chan;
	l->peer_chan = (uint8_t)peer_chan;
	/*
	 * A dedicated port needs no neighbour address (broadcast), e.g. memif;
	 * dnpd passes remote = local when its config gives only one address.
	 */
	if (c->remote && *c->remote && !(c->local && strcmp(c->remote, c->local) == 0)) {
		if (rte_ether_unformat_addr(c->remote, &l->peer) < 0) {
			free(l);
			return -EINVAL;
		}
	} else if (r.shared) {
		free(l); /* the demultiplexer needs the neighbour's address */
		return -EINVAL;
	} else {
		memset(&l->peer, 0xff, sizeof(l->peer));
	}

	ret = port_open(&r, &p);
	if (ret < 0) {
		free(l);
		return ret;
	}
	l->port = p;
	mtu_link = p->eth_mtu;
	if (r.mtu_opt && r.mtu_opt < mtu_link)
		mtu_link = r.mtu_opt;
	l->eth_mtu = mtu_link;
	l->frag_payload = mtu_link - DNP_DPDK_FHDR_LEN;
	frags = (c->frame_max + l->frag_payload - 1) / l->frag_payload;
	ret = -EINVAL;
	if (frags > DNP_DPDK_MAX_FRAGS)
		goto err;

	l->eth.dst_addr = l->peer;
	l->eth.src_addr = p->mac;
	l->eth.ether_type = rte_cpu_to_be_16(DNP_DPDK_ETHERTYPE);
	ret = -ENOMEM;
	l->txb_cap = 2 * DNP_DPDK_BURST * frags;
	l->txb = calloc(l->txb_cap, sizeof(*l->txb));
	l->slots = calloc(reasm, sizeof(*l->slots));
	l->slot_mem = aligned_alloc(64, (size_t)reasm * ((c->frame_max + 63) & ~63u));
	if (!l->txb || !l->slots || !l->slot_mem)
		goto err;
	l->slot_mask = reasm - 1;
	for (uint32_t i = 0; i < reasm; i++)
		l->slots[i].buf = l->slot_mem + (size_t)i * ((c->frame_max + 63) & ~63u);
	if (p->shared) {
		uint32_t ring = pow2_ceil(c->depth * frags);

		if (ring < DNP_DPDK_BURST * 2)
			ring = DNP_DPDK_BURST * 2;
		l->sw = calloc(ring, sizeof(*l->sw));
		if (!l->sw)
			goto err;
		l->sw_mask = ring - 1;
		/* two links with the same (peer, chan) could never be told apart */
		ret = -EEXIST;
		for (unsigned k = 0; k < p->nlinks; k++)
			if (p->links[k]->chan == l->chan &&
			    rte_is_same_ether_addr(&p->links[k]->peer, &l->peer))
				goto err;
	}
	p->links[p->nlinks++] = l;
	*out = (struct dnp_transport *)(void *)l;
	return 0;

err:
	if (p->nlinks == 0)
		port_release(p);
	link_free(l);
	return ret;
}

static void dpdk_close(struct dnp_transport *t)
{
	struct dnp_dpdk_link *l;
	struct dnp_dpdk_port *p;

	if (!t)
		return;
	l = to_link(t);
	p = l->port;
	if (l->txb_n)
		rte_pktmbuf_free_bulk(l->txb, l->txb_n);
	if (l->nheld)
		rte_pktmbuf_free_bulk(l->held, l->nheld);
	for (unsigned i = l->stage_pos; i < l->stage_n; i++)
		rte_pktmbuf_free(l->stage[i]);
	while (l->sw && l->sw_head != l->sw_tail)
		rte_pktmbuf_free(l->sw[l->sw_head++ & l->sw_mask]);
	for (unsigned k = 0; k < p->nlinks; k++) {
		if (p->links[k] == l) {
			p->links[k] = p->links[--p->nlinks];
			break;
		}
	}
	if (p->nlinks == 0)
		port_release(p);
	link_free(l);
}

static uint32_t dpdk_mtu(const struct dnp_transport *t)
{
	return to_link_c(t)->frame_max;
}

static int dpdk_wait_fd(const struct dnp_transport *t)
{
	return -1; /* poll-mode: the daemon polls; no PMD here offers RX interrupts */
}

/*
 * Link state: the ethdev view (rte_eth_link_get_nowait), and for ports on a
 * kernel interface also its IFF_UP/IFF_RUNNING flags, because af_packet
 * reports "up" from dev_start on whatever the carrier does. One ioctl per
 * link_poll_ms at most.
 */
static bool dpdk_up(const struct dnp_transport *t)
{
	struct dnp_dpdk_port *p = to_link_c(t)->port;
	uint64_t now = rte_get_tsc_cycles();
	struct rte_eth_link el;
	struct ifreq ifr;
	bool up;

	if (p->state_tsc && now - p->state_tsc < p->state_period)
		return p->state_up;
	memset(&el, 0, sizeof(el));
	up = rte_eth_link_get_nowait(p->id, &el) == 0 && el.link_status == RTE_ETH_LINK_UP;
	if (up && p->ctl_fd >= 0) {
		memset(&ifr, 0, sizeof(ifr));
		memcpy(ifr.ifr_name, p->ifname, sizeof(p->ifname));
		up = ioctl(p->ctl_fd, SIOCGIFFLAGS, &ifr) == 0 &&
		     (ifr.ifr_flags & (IFF_UP | IFF_RUNNING)) == (IFF_UP | IFF_RUNNING);
	}
	p->state_up = up;
	p->state_tsc = now;
	return up;
}

void dnp_dpdk_stats(const struct dnp_transport *t, struct dnp_dpdk_stats *s)
{
	const struct dnp_dpdk_link *l = to_link_c(t);

	*s = l->st;
	s->port_unknown = l->port->unknown;
}

uint32_t dnp_dpdk_eth_mtu(const struct dnp_transport *t)
{
	return to_link_c(t)->eth_mtu;
}

void dnp_dpdk_mac(const struct dnp_transport *t, uint8_t mac[6])
{
	memcpy(mac, to_link_c(t)->port->mac.addr_bytes, 6);
}

/* The registry's process-wide hooks: the EAL, once, before the first link (dnpd --eal). */
static int dpdk_init(const char *args)
{
	return dnp_dpdk_eal_init_str("dnpd", args && *args ? args : DNP_DPDK_EAL_DEFAULT);
}

static bool dpdk_fini(void)
{
	return dnp_dpdk_eal_ready() && dnp_dpdk_eal_cleanup();
}

const struct dnp_transport_ops dnp_transport_dpdk = {
	.name = "dpdk",
	.init = dpdk_init,
	.fini = dpdk_fini,
	.init_default = DNP_DPDK_EAL_DEFAULT,
	.open = dpdk_open,
	.close = dpdk_close,
	.tx_burst = dpdk_tx_burst,
	.rx_burst = dpdk_rx_burst,
	.mtu = dpdk_mtu,
	.wait_fd = dpdk_wait_fd,
	.up = dpdk_up,
};
