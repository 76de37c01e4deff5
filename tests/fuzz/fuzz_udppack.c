/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the udp link's receive split (transport/udp_pack.c,
 * docs/protocol.md "The udp link's datagrams"). The input is a datagram from
 * the network: dnp_udp_unpack must refuse it or give frames that lie inside
 * it, in order, none empty, no longer than the link's largest frame; and a
 * datagram it accepts, packed again from those frames, must split into the
 * same frames. The input is also cut into frames (its first byte sets the
 * sizes) that the send side packs as it would: what it writes must never be
 * longer than frame_max and must split back into exactly those frames.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "udp_priv.h"

#define FRAME_MAX 4160u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t dgram[FRAME_MAX + 64];

static void check_split(const uint8_t *d, uint32_t len)
{
	struct dnp_rx_frame out[DNP_UDP_PACK_MAX], again[DNP_UDP_PACK_MAX];
	struct dnp_tx_frame tx[DNP_UDP_PACK_MAX];
	int k = dnp_udp_unpack(d, len, FRAME_MAX, out);
	const uint8_t *prev = d;

	if (k == DNP_UDP_ANNOUNCE || k == DNP_UDP_ANNOUNCE_HEARD) {
		if (len != FRAME_MAX + DNP_UDP_ANNOUNCE_EXTRA)
			abort();
		return;
	}
	if (k < 0)
		return;
	if (k == 0 || k > (int)DNP_UDP_PACK_MAX || len > FRAME_MAX)
		abort();
	for (int i = 0; i < k; i++) {
		if (out[i].len == 0 || out[i].len > FRAME_MAX || out[i].data < prev ||
		    out[i].data + out[i].len > d + len)
			abort();
		prev = out[i].data + out[i].len;
		tx[i] = (struct dnp_tx_frame){ .data = out[i].data, .len = out[i].len };
	}
	/* the frames, packed again, fit and split the same */
	if (dnp_udp_pack_fit(tx, (unsigned)k, FRAME_MAX) != (unsigned)k)
		abort();
	len = dnp_udp_pack_write(dgram, tx, (unsigned)k);
	if (len > FRAME_MAX || dnp_udp_unpack(dgram, len, FRAME_MAX, again) != k)
		abort();
	for (int i = 0; i < k; i++)
		if (again[i].len != out[i].len || memcmp(again[i].data, out[i].data, out[i].len))
			abort();
}

/* The send side: frames cut from the input, packed as tx_burst packs them. */
static void check_pack(const uint8_t *data, size_t size)
{
	struct dnp_tx_frame tx[64];
	struct dnp_rx_frame out[DNP_UDP_PACK_MAX];
	unsigned n = 0, done = 0;
	size_t off = 1;

	while (n < 64 && off < size) {
		uint32_t len = 1u + (uint32_t)((data[0] * 131u + n * 977u) % 400u);

		if (len > size - off)
			len = (uint32_t)(size - off);
		tx[n++] = (struct dnp_tx_frame){ .data = data + off, .len = len };
		off += len;
	}
	while (done < n) {
		unsigned k = dnp_udp_pack_plan(tx + done, n - done, FRAME_MAX, true);
		uint32_t len;

		if (k == 0) { /* plain: it must not read as packed */
			if (dnp_udp_is_packed(tx[done].data, tx[done].len))
				abort();
			done++;
			continue;
		}
		len = dnp_udp_pack_write(dgram, tx + done, k);
		if (len > FRAME_MAX || dnp_udp_unpack(dgram, len, FRAME_MAX, out) != (int)k)
			abort();
		for (unsigned i = 0; i < k; i++)
			if (out[i].len != tx[done + i].len ||
			    memcmp(out[i].data, tx[done + i].data, out[i].len))
				abort();
		done += k;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	if (size > FRAME_MAX + 64)
		return 0;
	/* an exact-size copy, so that ASan sees any read past the datagram */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	check_split(copy, (uint32_t)size);
	if (size > 0)
		check_pack(copy, size);
	free(copy);
	return 0;
}
