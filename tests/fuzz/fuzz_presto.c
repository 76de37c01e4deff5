/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for Presto's receive path: what peers write into our
 * receive slots and eager rings, and the events the daemon hands us, are
 * outside bytes. The harness includes presto.c and replaces libdnp with a
 * stand-in: during presto_init every rank of a 2x2x1 torus answers our HELLO
 * (a mirror world); then each 40-byte record of the input becomes one event
 * (type, peer, status, length, cookie, and an address inside the SEND slots,
 * the eager ring, the credit array, or anywhere), preceded by up to 96 bytes
 * of input written into our memory at that address, as the daemon would. A
 * receive of each kind is posted, so matching and delivery run too. Any
 * crash or sanitizer report is a finding.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../presto/presto.c"
#include "fuzz_libdnp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- libdnp stand-in (fuzz_libdnp.h, and what is this harness's own) ---- */

static bool fz_mirror;

void *dnp_alloc(struct dnp *d, size_t len)
{
	return NULL; /* Presto falls back to private pages */
}

int dnp_send(struct dnp *d, const void *src, size_t len, struct dnp_coords dst, unsigned port,
	     uint64_t cookie, unsigned flags)
{
	struct dnp_event ev;
	struct p_hdr h;

	fz_done(DNP_EV_TX_DONE, cookie);
	if (!fz_mirror || len < P_HDR || !fz_nslots)
		return 0;
	/* the peer sends us the same message (HELLO) into our next posted slot */
	memcpy(&h, src, P_HDR);
	h.src = dst.x + 2 * dst.y;
	memset(&ev, 0, sizeof(ev));
	ev.type = DNP_EV_RX_SEND;
	ev.peer_x = (uint8_t)dst.x, ev.peer_y = (uint8_t)dst.y;
	ev.len = P_HDR;
	ev.va = (uintptr_t)fz_slots[0];
	memcpy(fz_slots[0], &h, P_HDR);
	memmove(fz_slots, fz_slots + 1, --fz_nslots * sizeof(void *));
	fz_push(&ev);
	return 0;
}

/* ---- harness ---- */

static struct presto *fz_world(void)
{
	struct presto_conf c = {
		.eager_max = (size_t)-1, .slot_size = 256, .credits = 4, .timeout_ms = 1000
	};
	struct presto *p;

	fz_qn = fz_nslots = 0;
	fz_mirror = true;
	if (presto_init(&c, &p) < 0)
		abort(); /* the mirror world always answers */
	fz_mirror = false;
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t rbuf[3][512];
	struct presto_req *rq[3];
	struct presto *p = fz_world();
	int k;

	presto_irecv(p, rbuf[0], sizeof(rbuf[0]), PRESTO_ANY_SOURCE, PRESTO_ANY_TAG, &rq[0]);
	presto_irecv(p, rbuf[1], 8, 1, 7, &rq[1]);
	presto_irecv(p, rbuf[2], sizeof(rbuf[2]), 2, PRESTO_ANY_TAG, &rq[2]);
	while (size >= 40) {
		struct dnp_event ev;
		uint8_t *base;
		size_t span, off, n;

		memcpy(&ev, data, sizeof(ev));
		switch (data[32] % 4) {
		case 0:
			base = p->rx_mem, span = (size_t)p->nslots * p->slot;
			break;
		case 1:
			base = p->ring_mem, span = (size_t)p->nslots * p->slot;
			break;
		case 2:
			base = (uint8_t *)p->credit_in, span = (size_t)p->size * 8;
			break;
		default:
			base = NULL, span = 0;
			break;
		}
		off = (size_t)(data[33] | data[34] << 8);
		n = data[35] % 97;
		data += 40, size -= 40;
		if (base) {
			off = data[-4] & 1 || span < p->slot ? off % span :
							       off % (span / p->slot) * p->slot;
			ev.va = fz_land(base, span, off, n, &data, &size);
		}
		p_event(p, &ev);
		p_progress(p);
	}
	for (k = 0; k < 3; k++)
		if (rq[k] && rq[k]->done)
			p_finish(p, &rq[k], NULL);
	p_teardown(p);
	return 0;
}
