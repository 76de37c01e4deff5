/* SPDX-License-Identifier: MIT */
/*
 * shm_publish_cg — instructions per frame of the shm transport's publish
 * path (docs/performance.md, "shm: one publish path"), for callgrind: one
 * process holds both ends of a link and, ROUNDS times, sends a burst of
 * BURST frames of BYTES bytes (tx_burst: copied; or one pass: tx_reserve,
 * the same bytes written into the slots, tx_commit), then takes them on
 * the other end (rx_burst). No thread, no clock in the loop: the counts
 * repeat exactly. Built as BUILD/bench/shm_publish_cg:
 *   shm_publish_cg copy|onepass [ROUNDS] [BURST] [BYTES]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport.h"

int main(int argc, char **argv)
{
	const struct dnp_transport_ops *o = &dnp_transport_shm;
	bool onepass = argc > 1 && strcmp(argv[1], "onepass") == 0;
	unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 100000;
	unsigned burst = argc > 3 ? (unsigned)atoi(argv[3]) : 16;
	uint32_t bytes = argc > 4 ? (uint32_t)atoi(argv[4]) : 64;
	static uint8_t src[4160];
	struct dnp_transport_conf c[2];
	struct dnp_transport *t[2];
	struct dnp_tx_frame f[64];
	struct dnp_rx_frame r[64];
	uint32_t lens[64], cap;
	uint8_t *bufs[64];
	char path[128];
	unsigned long got = 0;

	if (burst == 0 || burst > 64 || bytes > sizeof(src))
		return 2;
	snprintf(path, sizeof(path), "/dev/shm/shm-publish-cg-%d", (int)getpid());
	unlink(path);
	for (unsigned s = 0; s < 2; s++) {
		c[s] = (struct dnp_transport_conf){
			.local = path, .side = s, .frame_max = 4160, .depth = 256
		};
		if (o->open(&c[s], &t[s]) != 0)
			return 1;
	}
	memset(src, 0x5a, sizeof(src));
	for (unsigned i = 0; i < burst; i++) {
		f[i] = (struct dnp_tx_frame){ src, bytes };
		lens[i] = bytes;
	}
	for (unsigned k = 0; k < rounds; k++) {
		int n;

		if (onepass) {
			n = o->tx_reserve(t[0], bufs, &cap, burst);
			for (int i = 0; i < n; i++)
				memcpy(bufs[i], src, bytes);
			n = o->tx_commit(t[0], lens, (unsigned)n);
		} else {
			n = o->tx_burst(t[0], f, burst);
		}
		if (n != (int)burst)
			return 1;
		n = o->rx_burst(t[1], r, burst);
		if (n != (int)burst)
			return 1;
		got += (unsigned long)n;
	}
	(void)o->rx_burst(t[1], r, 0); /* releases the last burst */
	o->close(t[1]);
	o->close(t[0]);
	printf("%s: %lu frames of %u bytes in bursts of %u\n", onepass ? "onepass" : "copy", got,
	       bytes, burst);
	return 0;
}
