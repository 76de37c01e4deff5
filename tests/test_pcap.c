/* SPDX-License-Identifier: MIT */
/*
 * test_pcap — the pcapng capture of transport/pcap.h: the file's blocks byte
 * by byte, records gathered until a flush or a full buffer, a failed write,
 * and the hook in the impairment wrapper (what a link sends after its
 * impairment, what it receives, nothing once detached).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "impair.h"
#include "pcap.h"
#include "transport.h"

#define HEAD_BYTES (48u + 6u * 40u) /* SHB with its userappl option, six IDBs */

static char path[128];

static int setup(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "/tmp/test_pcap.%d.pcapng", (int)getpid());
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static uint8_t *slurp(size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	b = malloc((size_t)n);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static uint32_t u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint16_t u16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static off_t file_size(void)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

static void fill(uint8_t *f, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		f[i] = (uint8_t)(seed + i * 7u);
}

/* Checks one EPB at b: interface, direction, the headers in front, the frame. */
static size_t check_epb(const uint8_t *b, unsigned dir, bool out, const uint8_t *frame,
			uint32_t len)
{
	uint32_t blen = u32(b + 4), plen = u32(b + 20);
	const uint8_t *e = b + 28;
	const uint8_t *opt = e + ((plen + 3u) & ~3u);

	assert_int_equal(u32(b), 6);
	assert_int_equal(u32(b + 8), dir);
	assert_int_equal(plen, len + DNP_PCAP_HDR_BYTES);
	assert_int_equal(u32(b + 24), len + DNP_PCAP_HDR_BYTES);
	assert_int_equal(u32(b + blen - 4), blen);
	/* Ethernet: the neighbour's made-up MAC on the side away from us */
	assert_int_equal(e[out ? 5 : 11], dir);
	assert_int_equal(e[out ? 4 : 10], 1);
	assert_int_equal(e[out ? 10 : 4], 0);
	assert_int_equal(e[12], 0x88);
	assert_int_equal(e[13], 0xB5);
	/* fragment header: version 1, chan = dir, whole frame, lengths big-endian */
	assert_int_equal(e[14], 1);
	assert_int_equal(e[15], dir);
	assert_int_equal(e[16], 0);
	assert_int_equal(e[17], 1);
	assert_int_equal(e[20] << 8 | e[21], len);
	assert_int_equal(e[24] << 8 | e[25], len);
	assert_memory_equal(e + DNP_PCAP_HDR_BYTES, frame, len);
	/* epb_flags: inbound 1, outbound 2; then the end of options */
	assert_int_equal(u16(opt), 2);
	assert_int_equal(u16(opt + 2), 4);
	assert_int_equal(u32(opt + 4), out ? 2u : 1u);
	assert_int_equal(u32(opt + 8), 0);
	assert_int_equal(opt + 12 + 4, b + blen);
	return blen;
}

static void test_pcap_layout(void **state)
{
	static const char *const names[6] = { "xp", "xm", "yp", "ym", "zp", "zm" };
	uint8_t a[64], c[100], r[4160];
	struct dnp_tx_frame tx[2] = { { a, sizeof(a) }, { c, sizeof(c) } };
	struct dnp_rx_frame rx[1] = { { r, sizeof(r) } };
	struct dnp_pcap *p;
	uint8_t *b;
	size_t len, off;

	(void)state;
	fill(a, sizeof(a), 1);
	fill(c, sizeof(c), 2);
	fill(r, sizeof(r), 3);
	assert_int_equal(dnp_pcap_open(path, &p), 0);
	dnp_pcap_tx(p, 2, tx, 2);
	dnp_pcap_rx(p, 5, rx, 1);
	assert_int_equal(dnp_pcap_stats(p)->frames, 3);
	assert_int_equal(dnp_pcap_close(p), 0);

	b = slurp(&len);
	/* section header: type, byte-order magic, version 1.0, length unknown */
	assert_int_equal(u32(b), 0x0A0D0D0Au);
	assert_int_equal(u32(b + 8), 0x1A2B3C4Du);
	assert_int_equal(u16(b + 12), 1);
	assert_int_equal(u16(b + 14), 0);
	off = u32(b + 4);
	assert_int_equal(u32(b + off - 4), off);
	for (unsigned d = 0; d < 6; d++) {
		const uint8_t *i = b + off;

		assert_int_equal(u32(i), 1);
		assert_int_equal(u16(i + 8), 1); /* Ethernet */
		assert_int_equal(u16(i + 16), 2);
		assert_int_equal(u16(i + 18), 2);
		assert_memory_equal(i + 20, names[d], 2);
		assert_int_equal(u16(i + 24), 9); /* if_tsresol */
		assert_int_equal(i[28], 9);
		off += u32(i + 4);
	}
	assert_int_equal(off, HEAD_BYTES);
	off += check_epb(b + off, 2, true, a, sizeof(a));
	off += check_epb(b + off, 2, true, c, sizeof(c));
	off += check_epb(b + off, 5, false, r, sizeof(r));
	assert_int_equal(off, len);
	free(b);
}

static void test_pcap_batches(void **state)
{
	static uint8_t big[4160];
	struct dnp_tx_frame tx[32];
	struct dnp_pcap *p;
	off_t before;

	(void)state;
	for (unsigned i = 0; i < 32; i++)
		tx[i] = (struct dnp_tx_frame){ big, sizeof(big) };
	assert_int_equal(dnp_pcap_open(path, &p), 0);
	assert_int_equal(file_size(), HEAD_BYTES);
	dnp_pcap_tx(p, 0, tx, 1);
	dnp_pcap_tick(p); /* not 100 ms old yet */
	assert_int_equal(file_size(), HEAD_BYTES);
	assert_int_equal(dnp_pcap_flush(p), 0);
	before = file_size();
	assert_true(before > (off_t)(HEAD_BYTES + sizeof(big)));
	/* 1 MiB of records goes out in one write when the buffer is full */
	for (unsigned i = 0; i < 8; i++)
		dnp_pcap_tx(p, 0, tx, 32);
	assert_true(file_size() > before);
	assert_true(file_size() < before + 256 * (off_t)(sizeof(big) + 76));
	usleep((DNP_PCAP_FLUSH_MS + 20) * 1000);
	dnp_pcap_tick(p);
	assert_int_equal(file_size(), before + 256 * (off_t)(sizeof(big) + 76));
	assert_int_equal(dnp_pcap_stats(p)->frames, 257);
	assert_int_equal(dnp_pcap_close(p), 0);
	/* NULL captures are allowed where a daemon has none */
	dnp_pcap_tx(NULL, 0, tx, 1);
	dnp_pcap_tick(NULL);
	assert_int_equal(dnp_pcap_close(NULL), 0);
}

static void test_pcap_errors(void **state)
{
	struct dnp_pcap *p;

	(void)state;
	assert_int_equal(dnp_pcap_open(NULL, &p), -EINVAL);
	assert_int_equal(dnp_pcap_open(path, NULL), -EINVAL);
	assert_int_equal(dnp_pcap_open("/nonexistent-dir/x.pcapng", &p), -ENOENT);
	if (access("/dev/full", W_OK) == 0)
		assert_int_equal(dnp_pcap_open("/dev/full", &p), -ENOSPC);
}

/* ---- the hook in the impairment wrapper, over a backend that keeps what it gets ---- */

struct fake {
	struct dnp_transport_base base;
	unsigned sent;
	uint8_t rxf[64];
};

static int fake_tx(struct dnp_transport *t, const struct dnp_tx_frame *f, unsigned n)
{
	(void)f;
	((struct fake *)(void *)t)->sent += n;
	return (int)n;
}

static int fake_rx(struct dnp_transport *t, struct dnp_rx_frame *f, unsigned n)
{
	struct fake *k = (struct fake *)(void *)t;

	if (!n)
		return 0;
	f[0].data = k->rxf;
	f[0].len = sizeof(k->rxf);
	return 1;
}

static uint32_t fake_mtu(const struct dnp_transport *t)
{
	(void)t;
	return 4160;
}

static int fake_fd(const struct dnp_transport *t)
{
	(void)t;
	return -1;
}

static bool fake_up(const struct dnp_transport *t)
{
	(void)t;
	return true;
}

static void fake_close(struct dnp_transport *t)
{
	free(t);
}

static const struct dnp_transport_ops fake_ops = {
	.name = "fake",
	.close = fake_close,
	.tx_burst = fake_tx,
	.rx_burst = fake_rx,
	.mtu = fake_mtu,
	.wait_fd = fake_fd,
	.up = fake_up,
};

static void test_pcap_impair_hook(void **state)
{
	struct fake *k = calloc(1, sizeof(*k));
	struct dnp_impair_conf c;
	struct dnp_transport *w;
	struct dnp_rx_frame rx[4];
	struct dnp_pcap *p;
	uint8_t fr[3][80], want_rx[64];
	struct dnp_tx_frame tx[3];
	uint8_t *b;
	size_t len, off, diff = 0;
	const uint8_t *got;

	(void)state;
	assert_non_null(k);
	k->base.ops = &fake_ops;
	fill(k->rxf, sizeof(k->rxf), 9);
	for (unsigned i = 0; i < 3; i++) {
		fill(fr[i], sizeof(fr[i]), (uint8_t)(20 + i));
		tx[i] = (struct dnp_tx_frame){ fr[i], sizeof(fr[i]) };
	}
	assert_int_equal(dnp_impair_parse("off", &c), 0);
	assert_int_equal(dnp_impair_wrap((struct dnp_transport *)(void *)k, 1, &c, &w), 0);
	assert_int_equal(dnp_pcap_open(path, &p), 0);
	dnp_impair_capture(w, p);

	/* unimpaired: 3 sent, 1 received */
	assert_int_equal(dnp_transport_impair.tx_burst(w, tx, 3), 3);
	assert_int_equal(dnp_transport_impair.rx_burst(w, rx, 4), 1);
	/* every frame corrupted: recorded as sent, one bit off */
	assert_int_equal(dnp_impair_parse("corrupt=100%", &c), 0);
	dnp_impair_set(w, &c);
	assert_int_equal(dnp_transport_impair.tx_burst(w, tx, 1), 1);
	/* every frame lost: not recorded */
	assert_int_equal(dnp_impair_parse("loss=100%", &c), 0);
	dnp_impair_set(w, &c);
	assert_int_equal(dnp_transport_impair.tx_burst(w, tx, 2), 2);
	/* detached: nothing more */
	assert_int_equal(dnp_impair_parse("off", &c), 0);
	dnp_impair_set(w, &c);
	dnp_impair_capture(w, NULL);
	assert_int_equal(dnp_transport_impair.tx_burst(w, tx, 3), 3);
	assert_int_equal(dnp_transport_impair.rx_burst(w, rx, 4), 1);
	assert_int_equal(dnp_pcap_stats(p)->frames, 5);
	assert_int_equal(k->sent, 7);
	assert_int_equal(dnp_pcap_close(p), 0);
	dnp_transport_impair.close(w);

	b = slurp(&len);
	off = HEAD_BYTES;
	for (unsigned i = 0; i < 3; i++)
		off += check_epb(b + off, 1, true, fr[i], sizeof(fr[i]));
	fill(want_rx, sizeof(want_rx), 9);
	off += check_epb(b + off, 1, false, want_rx, sizeof(want_rx));
	got = b + off + 28 + DNP_PCAP_HDR_BYTES;
	for (unsigned i = 0; i < sizeof(fr[0]); i++)
		for (uint8_t x = (uint8_t)(got[i] ^ fr[0][i]); x; x &= (uint8_t)(x - 1))
			diff++;
	assert_int_equal(diff, 1);
	off += u32(b + off + 4);
	assert_int_equal(off, len);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pcap_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pcap_batches, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pcap_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pcap_impair_hook, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
