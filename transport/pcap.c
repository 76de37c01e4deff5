/* SPDX-License-Identifier: MIT */
/*
 * pcap — pcapng capture of DNP frames (contract in pcap.h).
 *
 * File layout (pcapng, host byte order, which readers tell from the byte-order
 * magic): a Section Header Block, six Interface Description Blocks (link type
 * 1, Ethernet; if_name the direction; if_tsresol 9, nanoseconds), then one
 * Enhanced Packet Block per frame with an epb_flags option for its direction.
 */
#include "pcap.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF_BYTES (1u << 20)
#define NDIRS 6u
#define SNAP_MAX (65535u - DNP_PCAP_HDR_BYTES) /* the fragment header's u16 length */

#define BT_SHB 0x0A0D0D0Au
#define BT_IDB 0x00000001u
#define BT_EPB 0x00000006u
#define LINKTYPE_ETHERNET 1u
#define OPT_END 0u
#define OPT_SHB_USERAPPL 4u
#define OPT_IF_NAME 2u
#define OPT_IF_TSRESOL 9u
#define OPT_EPB_FLAGS 2u
#define EPB_INBOUND 1u
#define EPB_OUTBOUND 2u
/* EPB: 28 bytes of header, data, epb_flags (8), end of options (4), trailing length (4) */
#define EPB_FIXED (28u + 8u + 4u + 4u)

struct dnp_pcap {
	int fd;
	int err; /* first write error (negative errno), then nothing more is written */
	uint32_t fill;
	uint64_t oldest_ms; /* coarse monotonic time of the oldest record in buf */
	struct dnp_pcap_stats st;
	uint8_t buf[BUF_BYTES];
};

static const char *const if_names[NDIRS] = { "xp", "xm", "yp", "ym", "zp", "zm" };

static uint64_t coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint32_t pad4(uint32_t n)
{
	return (n + 3u) & ~3u;
}

static void put32(uint8_t *b, uint32_t *off, uint32_t v)
{
	memcpy(b + *off, &v, 4);
	*off += 4;
}

static void put16(uint8_t *b, uint32_t *off, uint16_t v)
{
	memcpy(b + *off, &v, 2);
	*off += 2;
}

/* An option (code, value of n bytes) padded to 4. */
static void put_opt(uint8_t *b, uint32_t *off, uint16_t code, const void *v, uint16_t n)
{
	put16(b, off, code);
	put16(b, off, n);
	memcpy(b + *off, v, n);
	memset(b + *off + n, 0, pad4(n) - n);
	*off += pad4(n);
}

/* Writes buf[0..fill) with as few write() calls as the kernel allows. */
static int write_all(struct dnp_pcap *p)
{
	uint32_t done = 0;

	while (done < p->fill) {
		ssize_t w = write(p->fd, p->buf + done, p->fill - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			p->err = w < 0 ? -errno : -EIO;
			break;
		}
		done += (uint32_t)w;
		p->st.bytes += (uint64_t)w;
	}
	p->fill = 0;
	return p->err;
}

int dnp_pcap_flush(struct dnp_pcap *p)
{
	if (!p)
		return 0;
	if (p->fill && !p->err)
		return write_all(p);
	p->fill = 0;
	return p->err;
}

void dnp_pcap_tick(struct dnp_pcap *p)
{
	if (p && p->fill && coarse_ms() - p->oldest_ms >= DNP_PCAP_FLUSH_MS)
		(void)dnp_pcap_flush(p);
}

/* Section header and one interface per direction, into buf. */
static void put_head(struct dnp_pcap *p)
{
	static const char app[] = "SoftDNP dnpd";
	uint8_t *b = p->buf;
	uint32_t off = 0, start, len;
	uint8_t tsresol = 9;

	start = off;
	put32(b, &off, BT_SHB);
	put32(b, &off, 0); /* total length, below */
	put32(b, &off, 0x1A2B3C4Du);
	put16(b, &off, 1);
	put16(b, &off, 0);
	put32(b, &off, 0xFFFFFFFFu); /* section length: unknown */
	put32(b, &off, 0xFFFFFFFFu);
	put_opt(b, &off, OPT_SHB_USERAPPL, app, sizeof(app) - 1);
	put32(b, &off, OPT_END);
	len = off - start + 4;
	put32(b, &off, len);
	memcpy(b + start + 4, &len, 4);

	for (unsigned d = 0; d < NDIRS; d++) {
		start = off;
		put32(b, &off, BT_IDB);
		put32(b, &off, 0);
		put16(b, &off, LINKTYPE_ETHERNET);
		put16(b, &off, 0);
		put32(b, &off, SNAP_MAX + DNP_PCAP_HDR_BYTES);
		put_opt(b, &off, OPT_IF_NAME, if_names[d], 2);
		put_opt(b, &off, OPT_IF_TSRESOL, &tsresol, 1);
		put32(b, &off, OPT_END);
		len = off - start + 4;
		put32(b, &off, len);
		memcpy(b + start + 4, &len, 4);
	}
	p->fill = off;
}

int dnp_pcap_open_fd(int fd, struct dnp_pcap **out)
{
	struct dnp_pcap *p;
	int r;

	if (fd < 0 || !out)
		return -EINVAL;
	p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p, 0, offsetof(struct dnp_pcap, buf));
	p->fd = fd;
	put_head(p);
	r = write_all(p);
	if (r) {
		free(p);
		return r;
	}
	*out = p;
	return 0;
}

int dnp_pcap_open(const char *path, struct dnp_pcap **out)
{
	int fd, r;

	if (!path || !out)
		return -EINVAL;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	r = dnp_pcap_open_fd(fd, out);
	if (r)
		close(fd);
	return r;
}

/* One Enhanced Packet Block: Ethernet + fragment header + the frame. */
static void record(struct dnp_pcap *p, unsigned dir, bool out, uint64_t ts, const uint8_t *data,
		   uint32_t len)
{
	uint32_t cap = len <= SNAP_MAX ? len : SNAP_MAX;
	uint32_t plen = cap + DNP_PCAP_HDR_BYTES;
	uint32_t blen = EPB_FIXED + pad4(plen);
	uint32_t off, flags = out ? EPB_OUTBOUND : EPB_INBOUND;
	uint8_t *b, *e;

	if (p->err) {
		p->st.lost++;
		return;
	}
	if (p->fill + blen > BUF_BYTES && write_all(p)) {
		p->st.lost++;
		return;
	}
	if (!p->fill)
		p->oldest_ms = coarse_ms();
	b = p->buf + p->fill;
	off = 0;
	put32(b, &off, BT_EPB);
	put32(b, &off, blen);
	put32(b, &off, dir);
	put32(b, &off, (uint32_t)(ts >> 32));
	put32(b, &off, (uint32_t)ts);
	put32(b, &off, plen);
	put32(b, &off, len + DNP_PCAP_HDR_BYTES);

	/* Ethernet: destination, source (made up, pcap.h), EtherType (big-endian) */
	e = b + off;
	memset(e, 0, DNP_PCAP_HDR_BYTES);
	e[0] = e[6] = 0x02;
	e[1] = e[7] = 0x44;
	e[2] = e[8] = 0x4e;
	e[(out ? 0 : 6) + 4] = 1; /* the neighbour */
	e[(out ? 0 : 6) + 5] = (uint8_t)dir;
	e[12] = DNP_PCAP_ETHERTYPE >> 8;
	e[13] = DNP_PCAP_ETHERTYPE & 0xff;
	/* fragment header (dpdk.h struct dnp_dpdk_fhdr): one whole fragment */
	e[14] = 1;                   /* version */
	e[15] = (uint8_t)dir;        /* chan: the link direction */
	e[16] = 0;                   /* frag_idx */
	e[17] = 1;                   /* frag_cnt */
	e[20] = (uint8_t)(cap >> 8); /* total_len */
	e[21] = (uint8_t)cap;
	e[24] = (uint8_t)(cap >> 8); /* len; offset (22-23) and reserved stay 0 */
	e[25] = (uint8_t)cap;
	memcpy(e + DNP_PCAP_HDR_BYTES, data, cap);
	memset(e + plen, 0, pad4(plen) - plen);
	off += pad4(plen);
	put_opt(b, &off, OPT_EPB_FLAGS, &flags, 4);
	put32(b, &off, OPT_END);
	put32(b, &off, blen);
	p->fill += blen;
	p->st.frames++;
}

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void dnp_pcap_tx(struct dnp_pcap *p, unsigned dir, const struct dnp_tx_frame *f, unsigned n)
{
	uint64_t ts;

	if (!p || !n)
		return;
	ts = real_ns();
	for (unsigned i = 0; i < n; i++)
		record(p, dir, true, ts, f[i].data, f[i].len);
}

void dnp_pcap_rx(struct dnp_pcap *p, unsigned dir, const struct dnp_rx_frame *f, unsigned n)
{
	uint64_t ts;

	if (!p || !n)
		return;
	ts = real_ns();
	for (unsigned i = 0; i < n; i++)
		record(p, dir, false, ts, f[i].data, f[i].len);
}

const struct dnp_pcap_stats *dnp_pcap_stats(const struct dnp_pcap *p)
{
	return &p->st;
}

int dnp_pcap_close(struct dnp_pcap *p)
{
	int r;

	if (!p)
		return 0;
	r = dnp_pcap_flush(p);
	if (close(p->fd) < 0 && !r)
		r = -errno;
	free(p);
	return r;
}
