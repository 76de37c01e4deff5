/* SPDX-License-Identifier: MIT */
/*
 * dpdk — DNP virtual links over DPDK poll-mode Ethernet ports (docs/dpdk.md).
 *
 * Each DNP frame travels in raw Ethernet frames of EtherType 0x88B5 (IEEE 802
 * "local experimental EtherType 1", reserved for private protocols and never
 * routed): one Ethernet frame when the port's MTU holds the whole DNP frame
 * (jumbo, e.g. 4160 bytes in an MTU 9000 frame), several fragments otherwise
 * (MTU 1500). Every Ethernet payload starts with struct dnp_dpdk_fhdr.
 *
 * A link is (port, neighbour MAC, channel):
 *   conf.local   the port: a port id ("0"), an ethdev name created by the EAL
 *                arguments ("net_af_packet0"), or a vdev devargs string
 *                ("net_af_packet_xp,iface=d0-xp,framesz=8192,...") that open()
 *                hot-plugs when no port of that name exists yet, or a short
 *                comma-free form (for "LOCAL,REMOTE" config syntaxes):
 *                  "af_packet:IFNAME" = "net_af_packet_IFNAME,iface=IFNAME,"
 *                                       DNP_DPDK_AF_PACKET_ARGS
 *                  "memif:PATH"       = "net_memif_<basename>,role=R,
 *                                       socket=PATH,socket-abstract=no,"
 *                                       DNP_DPDK_MEMIF_ARGS, R
 *                                       server on side 0, client on side 1;
 *                                       Ethernet MTU 9000 by default;
 *   conf.side    memif short form only: which end creates the socket;
 *   conf.remote  the neighbour's MAC "aa:bb:cc:dd:ee:ff" (destination of
 *                transmitted frames; in shared mode also the RX demux key).
 *                Dedicated ports may leave it empty or equal to conf.local:
 *                frames then go to the broadcast address;
 *   conf.options "k=v,k=v":
 *     shared       several links on one port (up to DNP_DPDK_PORT_LINKS):
 *                  received frames are demultiplexed by (source MAC, chan)
 *                  into per-link software rings. Without it the port belongs
 *                  to this link alone and every 0x88B5 frame on it is this
 *                  link's (torus cabling: one port per direction).
 *     chan=N       this end's channel (0..255, default 0): received frames
 *                  must carry it (shared mode only);
 *     peer_chan=N  the channel written into transmitted frames (default 0).
 *                  Torus links in shared mode: direction d uses chan=d and
 *                  peer_chan=d^1 (X+ of one node is X- of its neighbour), so
 *                  the X+ and X- links to the same neighbour of a dimension of
 *                  size 2 stay apart.
 *     mtu=N        Ethernet payload bytes per frame (default: the kernel MTU of
 *                  the port's interface when it has one, 9000 for the memif
 *                  short form, else the ethdev MTU);
 *     mbuf_size=N  mbuf data room (default 8192 for kernel-backed ports, which
 *                  af_packet needs for framesz=8192; else the MTU + headers);
 *     reasm=N      reassembly slots per link (power of two, default 64);
 *     links=N      shared ports: links the mbuf pool is sized for (default 6);
 *     link_poll_ms=N  up() re-reads the link state at most this often (10);
 *     wait_ms=N    memif client: how long open() waits for the server's
 *                  socket and then the connection (default 10000; then
 *                  -ETIMEDOUT). The server's open() returns at once; its
 *                  up() turns true when the client connects.
 * The port (queues, mbuf pool) is configured by the first link that opens it
 * and released by the last close; options that shape the port (mtu, mbuf_size,
 * links) are taken from that first link.
 *
 * Threads: EAL initialisation once per process (dnp_dpdk_eal_init) before any
 * open; afterwards all links of one port are driven by one thread (the
 * daemon's poll loop): one RX and one TX queue per port, no locks. Memory:
 * mbufs come from one pool per port sized at open; rx_burst returns pointers
 * into mbufs or reassembly slots owned by the link, valid until the next
 * rx_burst on the same link.
 */
#ifndef DNP_TRANSPORT_DPDK_H
#define DNP_TRANSPORT_DPDK_H

#include <stdbool.h>
#include <stdint.h>

#include "transport.h"

#define DNP_DPDK_ETHERTYPE 0x88B5u /* IEEE 802 local experimental EtherType 1 */
#define DNP_DPDK_VERSION 1u
#define DNP_DPDK_PORT_LINKS 8u /* links per shared port */
#define DNP_DPDK_MAX_FRAGS 64u /* fragments per DNP frame (one u64 bitmap) */
#define DNP_DPDK_AF_PACKET "af_packet:"
#define DNP_DPDK_MEMIF "memif:"
/*
 * memif buffers holding a whole jumbo frame: DPDK 22.11's memif loses a
 * frame when one spanning several 2 KiB buffers meets the ring's wrap.
 */
#define DNP_DPDK_MEMIF_ARGS "bsize=9216,rsize=9"
#define DNP_DPDK_JUMBO_MTU 9000u
/* How long a process with memif ports waits at exit (dnp_dpdk_eal_cleanup). */
#define DNP_DPDK_MEMIF_LINGER_MS 200u
/*
 * af_packet ring for jumbo frames: the default 512 x 2 KiB drops 4 KiB frames.
 * 512 slots of 8 KiB (4 MiB per ring) are twice the 4 KiB frames a link's
 * credits let in flight (four VCs of 256 KiB); 4096 slots made the kernel
 * clear 384 MiB per daemon of a 2x2x2 torus at start-up and were slower
 * (docs/dpdk.md).
 */
#define DNP_DPDK_AF_PACKET_ARGS "framesz=8192,blocksz=8192,framecnt=512"

/*
 * Header in front of every (fragment of a) DNP frame, right after the 14-byte
 * Ethernet header; multi-byte fields big-endian. 18 bytes, so the DNP frame
 * starts 32 bytes into the Ethernet frame (8-byte aligned in the mbuf).
 */
struct dnp_dpdk_fhdr {
	uint8_t version;     /* DNP_DPDK_VERSION */
	uint8_t chan;        /* the receiving link's channel (option peer_chan of the sender) */
	uint8_t frag_idx;    /* 0 .. frag_cnt - 1 */
	uint8_t frag_cnt;    /* 1 .. DNP_DPDK_MAX_FRAGS; 1 = whole frame */
	uint16_t frame_id;   /* per link, counts fragmented frames only (0 when frag_cnt == 1) */
	uint16_t total_len;  /* DNP frame length */
	uint16_t offset;     /* of this fragment's bytes in the DNP frame */
	uint16_t len;        /* bytes of DNP frame in this fragment */
	uint8_t reserved[6]; /* zero */
} __attribute__((packed));

#define DNP_DPDK_FHDR_LEN 18u
#define DNP_DPDK_DATA_OFF (14u + DNP_DPDK_FHDR_LEN) /* DNP bytes in an Ethernet frame */

extern const struct dnp_transport_ops dnp_transport_dpdk;

/*
 * Initialises the DPDK EAL once per process with argv[0..argc) as on a
 * command line (argv[0] is the program name; e.g. "--no-huge --no-pci
 * --no-shconf --no-telemetry -m 256 --vdev=net_af_packet0,iface=..."). The
 * calling thread's CPU affinity is restored afterwards (EAL pins its main
 * thread to the first lcore, which would undo the daemon's own placement).
 * A second call does nothing and returns 0.
 * Errors: -EINVAL (bad arguments), -errno from rte_eal_init (rte_errno).
 */
int dnp_dpdk_eal_init(int argc, char **argv);

/*
 * The same with the arguments in one string separated by blanks (no quoting),
 * e.g. from a config file. prog may be NULL ("dnpd"). Errors as above, -E2BIG
 * beyond 64 arguments.
 */
int dnp_dpdk_eal_init_str(const char *prog, const char *args);

/* The EAL arguments open() uses when no one initialised the EAL before. */
#define DNP_DPDK_EAL_DEFAULT \
	"--no-huge --no-pci --no-shconf --no-telemetry -m 256 --log-level=*:warning"

bool dnp_dpdk_eal_ready(void);

/*
 * At process exit, after every link is closed: releases the EAL (ports from
 * the EAL command line included). The EAL cannot be initialised again.
 * Returns true when it could not: memif ports were open, whose PMD (DPDK
 * 22.11) may still run a disconnect handler in the EAL interrupt thread.
 * Those ports are left connected (never stopped: see dpdk.c), and the call
 * first waits DNP_DPDK_MEMIF_LINGER_MS, so that peers stopping at the same
 * time have left their poll loops before this process's sockets close. The
 * process must then end with _exit(), running no destructor under that
 * thread (dnpd does).
 */
bool dnp_dpdk_eal_cleanup(void);

struct dnp_dpdk_stats {
	uint64_t tx_frames;     /* DNP frames taken by tx_burst */
	uint64_t tx_eth;        /* Ethernet frames handed to the port */
	uint64_t rx_frames;     /* DNP frames returned by rx_burst */
	uint64_t rx_eth;        /* Ethernet frames processed */
	uint64_t rx_bad;        /* wrong EtherType, version or header: dropped */
	uint64_t rx_reasm_drop; /* partial frames evicted (a fragment was lost) */
	uint64_t rx_ring_drop;  /* shared port: this link's software ring was full */
	uint64_t port_unknown;  /* shared port: frames no link claimed (whole port) */
};

/* Counters of an open dpdk link (t must come from dnp_transport_dpdk.open). */
void dnp_dpdk_stats(const struct dnp_transport *t, struct dnp_dpdk_stats *s);

/* Ethernet payload bytes per frame the link sends (fragmentation above it). */
uint32_t dnp_dpdk_eth_mtu(const struct dnp_transport *t);

/* The port's own MAC address (what the neighbour must use as conf.remote). */
void dnp_dpdk_mac(const struct dnp_transport *t, uint8_t mac[6]);

#endif
