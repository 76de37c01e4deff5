/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the receive path of the libfabric provider "dnp":
 * peers PUT headers and payloads into our eager rings and credit arrays,
 * and the daemon hands us events, so both are outside bytes. The harness
 * includes the provider's sources and replaces libdnp with a stand-in (a 2x2x1 torus,
 * every command completing at once). One endpoint with an AV entry, a
 * tagged, an untagged and a directed receive posted; then each 40-byte
 * record of the input becomes one event (type, peer, status, length,
 * cookie, and an address in the rings, the credit arrays or anywhere),
 * preceded by up to 96 bytes of input written at that address, as the
 * daemon would. The CQ is drained (entries and errors) after each event.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../fabric/dnp_fi_attr.c"
#include "../../fabric/dnp_fi_av.c"
#include "../../fabric/dnp_fi_cntr.c"
#include "../../fabric/dnp_fi_coll.c"
#include "../../fabric/dnp_fi_cq.c"
#include "../../fabric/dnp_fi_ep.c"
#include "../../fabric/dnp_fi_fabric.c"
#include "../../fabric/dnp_fi_mr.c"
#include "../../fabric/dnp_fi_msg.c"
#include "../../fabric/dnp_fi_rma.c"
#include "fuzz_libdnp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- libdnp stand-in (fuzz_libdnp.h, and what is this harness's own) ---- */

static void *fz_mem[64];
static unsigned fz_nmem;

void *dnp_alloc(struct dnp *d, size_t len)
{
	void *m;

	if (fz_nmem == 64)
		return NULL;
	m = aligned_alloc(4096, (len + 4095) / 4096 * 4096);
	if (m)
		fz_mem[fz_nmem++] = m;
	return m;
}

int dnp_send(struct dnp *d, const void *src, size_t len, struct dnp_coords dst, unsigned port,
	     uint64_t cookie, unsigned flags)
{
	fz_done(DNP_EV_TX_DONE, cookie);
	return 0;
}

/* ---- harness ---- */

static void fz_drain(struct dfi_cq *cq)
{
	struct fi_cq_tagged_entry e[4];
	struct fi_cq_err_entry ee;

	while (dfi_cq_readfrom_locked(cq, e, 4, NULL) > 0)
		;
	while (dfi_cq_readerr(&cq->cq, &ee, 0) == 1)
		while (dfi_cq_readfrom_locked(cq, e, 4, NULL) > 0)
			;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t rbuf[3][512];
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	struct dfi_addr peer = { .x = 1,
				 .port = 0,
				 .ring_key = 7,
				 .ring_va = 0x10000,
				 .credit_va = 0x20000,
				 .credit_key = 7,
				 .magic = DFI_ADDR_MAGIC };
	struct fid_domain *fdom;
	struct fid_av *fav;
	struct fid_cq *fcq;
	struct fid_ep *fep;
	struct dfi_ep *ep;
	fi_addr_t pa;
	unsigned k;

	fz_qn = fz_nmem = 0;
	if (dfi_domain(NULL, NULL, &fdom, NULL) || dfi_av_open(fdom, &ava, &fav, NULL) ||
	    dfi_cq_open(fdom, &cqa, &fcq, NULL) || dfi_endpoint(fdom, NULL, &fep, NULL))
		abort();
	fep->fid.ops->bind(&fep->fid, &fav->fid, 0);
	fep->fid.ops->bind(&fep->fid, &fcq->fid, FI_TRANSMIT | FI_RECV);
	fep->fid.ops->control(&fep->fid, FI_ENABLE, NULL);
	ep = (struct dfi_ep *)fep;
	dfi_av_insert(fav, &peer, 1, &pa, 0, NULL);
	dfi_recv_common(ep, rbuf[0], sizeof(rbuf[0]), FI_ADDR_UNSPEC, 0, ~0ull, NULL, 0,
			DFI_OP_TAGGED);
	dfi_recv_common(ep, rbuf[1], 8, FI_ADDR_UNSPEC, 0, 0, NULL, 0, 0);
	dfi_recv_common(ep, rbuf[2], sizeof(rbuf[2]), pa, 5, 0, NULL, 0, DFI_OP_TAGGED);
	while (size >= 40) {
		struct dnp_event ev;
		uint8_t *base;
		size_t span, unit, off, n;

		memcpy(&ev, data, sizeof(ev));
		span = (size_t)ep->dom->nidx * DFI_K * DFI_SLOT;
		switch (data[32] % 3) {
		case 0:
			base = ep->ring, unit = DFI_SLOT;
			break;
		case 1:
			/* the credit array is smaller than one ring slot: its unit is one
			 * 64-bit credit word */
			base = (uint8_t *)ep->credit_in, span = dfi_cred_len(ep->dom);
			unit = sizeof(uint64_t);
			break;
		default:
			base = NULL, span = 0, unit = 1;
			break;
		}
		off = (size_t)(data[33] | data[34] << 8 | (data[35] & 0xf) << 16);
		n = data[36] % 97;
		k = data[37];
		data += 40, size -= 40;
		if (base) {
			off = k & 1 ? off % span : off % (span / unit) * unit;
			ev.va = fz_land(base, span, off, n, &data, &size);
		}
		dfi_event(ep, &ev);
		dfi_progress(ep);
		fz_drain((struct dfi_cq *)fcq);
	}
	fep->fid.ops->close(&fep->fid);
	fcq->fid.ops->close(&fcq->fid);
	fav->fid.ops->close(&fav->fid);
	fdom->fid.ops->close(&fdom->fid);
	for (k = 0; k < fz_nmem; k++)
		free(fz_mem[k]);
	return 0;
}
