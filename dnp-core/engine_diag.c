/* SPDX-License-Identifier: MIT */
/*
 * engine_diag.c — DIAG packets for the LO|FA|MO fault manager: sent from
 * here (dnp_engine_diag_send), queued on arrival (dnp_engine_diag_poll).
 * Contract: engine.h.
 */
#include "engine_priv.h"

/* A DIAG for the fault manager: queued, or counted as dropped when its queue is full. */
void engine_diag_take(struct dnp_engine *e, const struct dnp_pkt_hdr *h, const uint8_t *payload)
{
	if (e->diag_tail - e->diag_head == DNP_ENGINE_DIAG_QUEUE || h->len > DNP_ENGINE_DIAG_MAX) {
		e->st.diag_dropped++;
		return;
	}
	unsigned i = e->diag_tail++ % DNP_ENGINE_DIAG_QUEUE;
	e->diag[i].src = h->src;
	e->diag[i].len = (uint8_t)h->len;
	memcpy(e->diag[i].data, payload, h->len);
	e->st.diag_rx++;
}

int dnp_engine_diag_send(struct dnp_engine *e, struct dnp_coord dst, const void *payload,
			 size_t len, uint64_t now)
{
	if (len > DNP_ENGINE_DIAG_MAX || !dnp_torus_contains(&e->c.torus, dst) ||
	    engine_coord_self(e, dst))
		return -EINVAL;
	struct pkt *p = engine_pkt_get(e, (uint32_t)dnp_pkt_frame_len(len));
	if (!p)
		return -EAGAIN;
	struct dnp_pkt_hdr h = {
		.lflags = DNP_LINK_F_SEQ,
		.dst = dst,
		.src = e->c.self,
		.kind = DNP_PKT_DIAG,
		.via = engine_via_for(e, dst),
		.flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST,
		.len = (uint16_t)len,
		.msg_len = (uint32_t)len,
		.timestamp = (uint32_t)now,
	};
	int n = dnp_pkt_encode(&h, payload, p->frame, DNP_MAX_FRAME);
	if (n < 0) {
		engine_pkt_put(e, p);
		return n;
	}
	p->h = h;
	engine_local_push(e, p, (uint32_t)n);
	e->st.diag_tx++;
	return 0;
}

int dnp_engine_diag_poll(struct dnp_engine *e, struct dnp_coord *src, void *buf, size_t cap)
{
	if (e->diag_head == e->diag_tail)
		return 0;
	unsigned i = e->diag_head % DNP_ENGINE_DIAG_QUEUE;
	if (cap < e->diag[i].len)
		return -ENOBUFS;
	*src = e->diag[i].src;
	memcpy(buf, e->diag[i].data, e->diag[i].len);
	e->diag_head++;
	return e->diag[i].len;
}
