/* SPDX-License-Identifier: MIT */
/*
 * pcap — a capture of the DNP frames a daemon's links send and receive, in a
 * pcapng file that Wireshark and tshark read with the DNP dissector
 * (tools/wireshark/dnp.lua, docs/protocol.md "Capturing and reading frames").
 *
 * Every backend's frames (shm, udp, dpdk) are written the same way, as the
 * DPDK backend puts them on Ethernet (transport/dpdk/dpdk.h): link type
 * Ethernet, EtherType 0x88B5, the 18-byte fragment header as one whole
 * fragment (frag_cnt 1), then the DNP frame as the link carried it. The
 * file has one interface per torus direction, named "xp", "xm", "yp", "ym",
 * "zp", "zm" (interface id = direction 0..5), nanosecond timestamps
 * (CLOCK_REALTIME, one reading per burst) and each packet's direction in its
 * epb_flags (inbound: received by this node; outbound: sent). In the fragment
 * header, chan is the link direction; the MAC addresses are made up:
 * 02:44:4e:00:00:00 is this node, 02:44:4e:00:01:0D its neighbour in
 * direction D.
 *
 * The capture sits where the impairment sits (impair.h): an outbound frame is
 * recorded as it leaves for the backend, after its impairment (a corrupted
 * frame shows a bad CRC, a dropped one is absent, a duplicated one appears
 * twice); an inbound frame as the backend returned it, before any check.
 *
 * Records are gathered in a 1 MiB buffer and written with one write() when it
 * fills, when dnp_pcap_tick finds it older than 100 ms, and at close: never a
 * system call per frame. A link without a capture pays one NULL test per
 * burst. A write error stops the capture (the file keeps what was written
 * before it); dnp_pcap_close reports it.
 *
 * Not thread-safe: one capture is used by one thread (the daemon's polling
 * thread), like the links it records.
 */
#ifndef DNP_PCAP_H
#define DNP_PCAP_H

#include <stdbool.h>
#include <stdint.h>

#include "transport.h"

#define DNP_PCAP_ETHERTYPE 0x88B5u /* as DNP_DPDK_ETHERTYPE */
#define DNP_PCAP_HDR_BYTES 32u     /* Ethernet header + fragment header before the frame */
#define DNP_PCAP_FLUSH_MS 100u

struct dnp_pcap;

struct dnp_pcap_stats {
	uint64_t frames; /* frames recorded */
	uint64_t bytes;  /* bytes written to the file */
	uint64_t lost;   /* frames not recorded after a write error */
};

/*
 * Creates (truncates) the file at path, writes its section and interface
 * blocks. Errors: -EINVAL (NULL argument), -ENOMEM, -errno of open/write.
 */
int dnp_pcap_open(const char *path, struct dnp_pcap **out);

/*
 * The same on a descriptor open for writing (the file as the caller made
 * it, written from its current offset). On success the capture owns fd (it
 * closes it); on error the caller still does. Errors: -EINVAL (fd < 0 or
 * NULL out), -ENOMEM, -errno of write.
 */
int dnp_pcap_open_fd(int fd, struct dnp_pcap **out);

/* Record n frames of link dir (0..5) as sent (tx) or received (rx). p may be NULL. */
void dnp_pcap_tx(struct dnp_pcap *p, unsigned dir, const struct dnp_tx_frame *f, unsigned n);
void dnp_pcap_rx(struct dnp_pcap *p, unsigned dir, const struct dnp_rx_frame *f, unsigned n);

/* Writes the gathered records if they are DNP_PCAP_FLUSH_MS old. p may be NULL. */
void dnp_pcap_tick(struct dnp_pcap *p);

/* Writes the gathered records now. Returns 0 or the capture's write error. */
int dnp_pcap_flush(struct dnp_pcap *p);

const struct dnp_pcap_stats *dnp_pcap_stats(const struct dnp_pcap *p);

/*
 * Flushes, closes and frees (p may be NULL: returns 0). Returns 0, or the
 * -errno of the first failed write (the capture stopped there).
 */
int dnp_pcap_close(struct dnp_pcap *p);

/*
 * Records the frames of a link wrapped by dnp_impair_wrap (impair.h) into p
 * (NULL: stop recording). Defined in impair.c, where the frames pass.
 */
void dnp_impair_capture(struct dnp_transport *impaired, struct dnp_pcap *p);

#endif
