/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the LO|FA|MO parsers of outside bytes: the DIAG
 * payload (dnp_dfm_diag_decode, torus frames) and the service-network
 * datagram (dnp_svc_decode, then the supervisor taking it). What decodes
 * must re-encode to the very same bytes (both formats are canonical);
 * nothing may crash. A STATUS is answered (whole or a page), a PAGE is fed
 * to the client's page assembler, a signed datagram has its tag checked.
 * The first input byte picks the parser.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dfm.h"
#include "sup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dnp_sup *sup;
	static struct dnp_svc_pages pages;
	static uint8_t out[DNP_SVC_MAX_DGRAM];

	if (size < 1)
		return 0;
	if (!sup) {
		struct dnp_sup_conf c = { .silence_ms = 600 };

		dnp_torus_init(&c.torus, 4, 4, 4);
		if (dnp_sup_create(&c, 0, &sup))
			abort();
		dnp_svc_pages_init(&pages, DNP_SVC_Q_JSON, 0);
	}
	if (data[0] & 1) {
		struct dnp_dfm_diag_msg m;

		if (dnp_dfm_diag_decode(data + 1, size - 1, &m) == 0 &&
		    (dnp_dfm_diag_encode(&m, out, sizeof(out)) != (int)(size - 1) ||
		     memcmp(out, data + 1, size - 1)))
			abort();
		return 0;
	}
	if (data[0] & 2) { /* a signed datagram: the tag check must never crash */
		static const struct dnp_svc_key key = { { 0x0123456789abcdefull, 42 } };
		static uint8_t copy[DNP_SVC_MAX_DGRAM];
		size_t len = size - 1 < sizeof(copy) ? size - 1 : sizeof(copy);
		int v;

		memcpy(copy, data + 1, len);
		v = dnp_svc_verify(copy, len, &key);
		if (v >= 0 && (copy[6] || (size_t)v + DNP_SVC_TAG != len))
			abort();
		return 0;
	}
	{
		struct dnp_svc_msg m;
		int n;

		if (dnp_svc_decode(data + 1, size - 1, &m) == 0) {
			n = dnp_svc_encode(&m, out, sizeof(out));
			if (n != (int)(size - 1) || memcmp(out, data + 1, size - 1))
				abort();
			if (m.type == DNP_SVC_STATUS)
				(void)dnp_sup_on_status(sup, &m, 1000, out, sizeof(out));
			else if (m.type == DNP_SVC_PAGE && dnp_svc_pages_take(&pages, &m) == 1) {
				dnp_svc_pages_fini(&pages); /* whole: start a new one */
				dnp_svc_pages_init(&pages, DNP_SVC_Q_JSON, 0);
			}
		}
		(void)dnp_sup_on_msg(sup, data + 1, size - 1, 1000, out, sizeof(out));
		dnp_sup_tick(sup, 1000);
	}
	return 0;
}
