/* SPDX-License-Identifier: MIT */
/*
 * wire.c — cabling: each link's check of who is at its other end (a link
 * whose link-control frames keep coming from the wrong node or direction is
 * MISWIRED), and the torus-wide wiring query of `dnpctl topo --all`, asked
 * and answered in DIAG packets that share the engine's DIAG queue with the
 * fault manager (lfm.c hands them over through dnpd_wire_take).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dnpd_int.h"
#include "le.h" /* lofamo/core: little-endian fields */

/*
 * "wiring X+ expected 0,0,0 X- found 0,0,0 X- ok": the neighbour this link
 * should reach and the one it does (dnpctl topo prints these lines). An UP
 * link passed the engine's own-link check, so it reaches the expected end;
 * "found" names another end when its link-control frames were refused as
 * another link's (the link then never comes up); "-" when nothing was heard.
 * The same line describes another node's link from its wiring answer (self
 * is that node; prefix "peer <id> ").
 */
#define DNPD_WIRE_UP 0x1u       /* the link is UP */
#define DNPD_WIRE_MISWIRED 0x2u /* its frames come from 'seen', not the expected end */
#define DNPD_WIRE_EXISTS 0x4u   /* the node has a link in this direction */

static void dnpd_wiring_fmt(const struct dnp_torus *t, struct dnpd_out *o, const char *prefix,
			    struct dnp_coord self, unsigned dir, unsigned flags,
			    struct dnp_coord seen, unsigned seen_dir, uint64_t frames,
			    const char *refusal)
{
	struct dnp_coord p = dnp_torus_neighbour(t, self, (enum dnp_dir)dir);
	unsigned opp = (unsigned)dnp_torus_opposite((enum dnp_dir)dir);

	dnpd_out(o, "%swiring %s expected %u,%u,%u %s ", prefix, dnpd_dir_names[dir], p.x, p.y, p.z,
		 dnpd_dir_names[opp]);
	if (refusal && refusal[0] && !(flags & DNPD_WIRE_UP))
		dnpd_out(o, "found %u,%u,%u %s REFUSED: %s\n", seen.x, seen.y, seen.z,
			 dnpd_dir_names[seen_dir % DNP_NDIRS], refusal);
	else if ((flags & DNPD_WIRE_MISWIRED) && !(flags & DNPD_WIRE_UP))
		dnpd_out(o, "found %u,%u,%u %s MISWIRED frames %" PRIu64 "\n", seen.x, seen.y,
			 seen.z, dnpd_dir_names[seen_dir % DNP_NDIRS], frames);
	else if (flags & DNPD_WIRE_UP)
		dnpd_out(o, "found %u,%u,%u %s ok\n", p.x, p.y, p.z, dnpd_dir_names[opp]);
	else
		dnpd_out(o, "found - (nothing heard)\n");
}

static unsigned dnpd_wiring_flags(const struct dnpd *d, unsigned dir)
{
	const struct dnpd_link *l = &d->link[dir];
	unsigned f = l->exists ? DNPD_WIRE_EXISTS : 0;

	if (l->exists && dnp_engine_link_state(d->e, dir) == DNP_LINK_UP)
		f |= DNPD_WIRE_UP;
	else if (l->miswired && l->seen_n >= DNPD_MISWIRED_FRAMES)
		f |= DNPD_WIRE_MISWIRED;
	return f;
}

void dnpd_wiring_line(const struct dnpd *d, struct dnpd_out *o, unsigned dir)
{
	const struct dnpd_link *l = &d->link[dir];
	const struct dnp_link *dl = l->exists ? dnp_engine_link(d->e, dir) : NULL;
	char why[96] = "";

	/* A link whose neighbour's hello was refused: "found ... REFUSED: vcs here 2 peer 4". */
	if (dl && dnp_link_refusal(dl)->field != DNP_REFUSE_NONE) {
		dnp_link_refusal_str(dnp_link_refusal(dl), why, sizeof(why));
		dnpd_wiring_fmt(&d->conf.torus, o, "", d->conf.self, dir, dnpd_wiring_flags(d, dir),
				l->refused_from, l->refused_dir, dnp_link_stats(dl)->rx_refused,
				why);
		return;
	}
	dnpd_wiring_fmt(&d->conf.torus, o, "", d->conf.self, dir, dnpd_wiring_flags(d, dir),
			l->seen, l->seen_dir, l->miswired_frames, NULL);
}

/*
 * The torus-wide wiring view (dnpctl topo --all, docs/cluster.md "The
 * cabling check"): a STATS request with DNPD_STATS_TORUS makes this daemon
 * send a wiring query, a DIAG packet, to every other node; each daemon
 * answers with a DIAG carrying its six links' state and the end it heard
 * (dnpd_wiring_flags). The answers are kept per node with their arrival time
 * and printed as "peer" lines of the report; dnpctl asks again until every
 * node answered or its patience ends. DIAG packets are routed like any
 * packet: an answer whose route crosses a link that is down does not arrive,
 * which the report shows as "no answer".
 *
 * Payload (DNPD_WIRE_BYTES, multi-byte fields little-endian): 0 magic u16
 * "TW", 2 version u8 (1), 3 kind u8 (1 query, 2 answer), 4 round u32; then
 * per direction (X+ .. Z-) 9 bytes: flags u8 (DNPD_WIRE_*), heard end x, y,
 * z u8, its direction u8, refused link-control frames u32 (saturated).
 */
#define DNPD_WIRE_MAGIC 0x5754u /* "TW" */
#define DNPD_WIRE_BYTES (8u + 9u * DNP_NDIRS)
#define DNPD_WIRE_QUERY 1u
#define DNPD_WIRE_ANSWER 2u
#define DNPD_WIRE_ROUND_NS 250000000ull /* a new round of queries at most this often */

static_assert(DNPD_WIRE_BYTES <= DNP_ENGINE_DIAG_MAX, "a wiring answer fits one DIAG packet");

struct dnpd_wire_peer {
	uint64_t t; /* when its last answer arrived (0: never) */
	uint8_t link[DNP_NDIRS][9];
};

static void dnpd_wire_head(uint8_t *p, unsigned kind, uint32_t round)
{
	memset(p, 0, DNPD_WIRE_BYTES);
	p[0] = DNPD_WIRE_MAGIC & 0xff;
	p[1] = DNPD_WIRE_MAGIC >> 8;
	p[2] = 1;
	p[3] = (uint8_t)kind;
	lfm_put32(p + 4, round);
}

static bool dnpd_wire_is(const void *payload, size_t len)
{
	const uint8_t *p = payload;

	return len >= 2 && p[0] == (DNPD_WIRE_MAGIC & 0xff) && p[1] == DNPD_WIRE_MAGIC >> 8;
}

/* A wiring DIAG (lfm.c hands them over): answer a query, keep an answer of this round. */
static void dnpd_wire_diag(void *ctx, struct dnp_coord src, const void *payload, size_t len,
			   uint64_t now)
{
	struct dnpd *d = ctx;
	const uint8_t *p = payload;
	uint8_t out[DNPD_WIRE_BYTES];

	if (len != DNPD_WIRE_BYTES || p[2] != 1 || !dnp_torus_contains(&d->conf.torus, src) ||
	    dnp_coord_eq(src, d->conf.self)) {
		d->wire_bad++;
		return;
	}
	if (p[3] == DNPD_WIRE_QUERY) {
		dnpd_wire_head(out, DNPD_WIRE_ANSWER, lfm_get32(p + 4));
		for (unsigned dir = 0; dir < DNP_NDIRS; dir++) {
			const struct dnpd_link *l = &d->link[dir];
			uint8_t *q = out + 8 + 9 * dir;

			q[0] = (uint8_t)dnpd_wiring_flags(d, dir);
			q[1] = l->seen.x;
			q[2] = l->seen.y;
			q[3] = l->seen.z;
			q[4] = l->seen_dir;
			lfm_put32(q + 5, l->miswired_frames > UINT32_MAX ?
						 UINT32_MAX :
						 (uint32_t)l->miswired_frames);
		}
		/* -EAGAIN (no packet buffer): the asker's next round asks again. */
		(void)dnp_engine_diag_send(d->e, src, out, sizeof(out), now);
		return;
	}
	if (p[3] != DNPD_WIRE_ANSWER || !d->wire || lfm_get32(p + 4) != d->wire_seq) {
		d->wire_bad += p[3] != DNPD_WIRE_ANSWER;
		return; /* an answer to an older round, or to nothing we asked */
	}
	for (unsigned dir = 0; dir < DNP_NDIRS; dir++) {
		const uint8_t *q = p + 8 + 9 * dir;
		struct dnp_coord c = { q[1], q[2], q[3] };

		if ((q[0] & ~(DNPD_WIRE_UP | DNPD_WIRE_MISWIRED | DNPD_WIRE_EXISTS)) ||
		    ((q[0] & DNPD_WIRE_MISWIRED) &&
		     (!dnp_torus_contains(&d->conf.torus, c) || q[4] >= DNP_NDIRS))) {
			d->wire_bad++;
			return;
		}
	}
	{
		struct dnpd_wire_peer *w = &d->wire[dnp_torus_id(&d->conf.torus, src)];

		memcpy(w->link, p + 8, sizeof(w->link));
		w->t = now ? now : 1;
	}
}

/* Starts or continues a round of queries (until the engine has no packet buffer). */
int dnpd_wire_ask(struct dnpd *d, uint64_t now)
{
	uint32_t n = d->conf.torus.dim[0] * d->conf.torus.dim[1] * d->conf.torus.dim[2];
	uint32_t self = dnp_torus_id(&d->conf.torus, d->conf.self);
	uint8_t q[DNPD_WIRE_BYTES];

	if (!d->wire) {
		d->wire = calloc(n, sizeof(*d->wire));
		if (!d->wire)
			return -ENOMEM;
	}
	if (!d->wire_round || now - d->wire_round >= DNPD_WIRE_ROUND_NS) {
		d->wire_seq++;
		d->wire_round = now;
		d->wire_next = 0;
	}
	dnpd_wire_head(q, DNPD_WIRE_QUERY, d->wire_seq);
	for (; d->wire_next < n; d->wire_next++) {
		if (d->wire_next == self)
			continue;
		if (dnp_engine_diag_send(d->e, dnp_torus_coord(&d->conf.torus, d->wire_next), q,
					 sizeof(q), now) == -EAGAIN)
			break;
	}
	return 0;
}

/* "peer <id> (x,y,z) age_ms A" and its wiring lines, or "... no answer", per other node. */
void dnpd_wire_report(struct dnpd *d, struct dnpd_out *o, uint64_t now)
{
	uint32_t n = d->conf.torus.dim[0] * d->conf.torus.dim[1] * d->conf.torus.dim[2];
	uint32_t self = dnp_torus_id(&d->conf.torus, d->conf.self);

	for (uint32_t id = 0; id < n && d->wire; id++) {
		const struct dnpd_wire_peer *w = &d->wire[id];
		struct dnp_coord c = dnp_torus_coord(&d->conf.torus, id);
		char prefix[32];

		if (id == self)
			continue;
		if (!w->t) {
			dnpd_out(o, "peer %u (%u,%u,%u) no answer\n", id, c.x, c.y, c.z);
			continue;
		}
		dnpd_out(o, "peer %u (%u,%u,%u) age_ms %" PRIu64 "\n", id, c.x, c.y, c.z,
			 (now - w->t) / 1000000u);
		snprintf(prefix, sizeof(prefix), "peer %u ", id);
		for (unsigned dir = 0; dir < DNP_NDIRS; dir++) {
			const uint8_t *q = w->link[dir];

			if (!(q[0] & DNPD_WIRE_EXISTS))
				continue;
			dnpd_wiring_fmt(&d->conf.torus, o, prefix, c, dir, q[0],
					(struct dnp_coord){ q[1], q[2], q[3] }, q[4],
					lfm_get32(q + 5), NULL);
		}
	}
}

/*
 * A frame the engine refused as another link's (-EXDEV): if it is link
 * control, its source names the node at the other end of our cable and the
 * direction it sends from. Logged once DNPD_MISWIRED_FRAMES in a row came
 * from the same end while the link is not UP. Only refused frames are
 * decoded here (a copy: shm peers may still write the original).
 */
void dnpd_wiring_seen(struct dnpd *d, unsigned dir, const struct dnp_rx_frame *f)
{
	static uint8_t copy[DNP_MAX_FRAME];
	struct dnpd_link *l = &d->link[dir];
	struct dnp_coord s = d->conf.self;
	struct dnp_coord p = dnp_torus_neighbour(&d->conf.torus, s, (enum dnp_dir)dir);
	unsigned opp = (unsigned)dnp_torus_opposite((enum dnp_dir)dir);
	const uint8_t *payload;
	struct dnp_pkt_hdr h;

	if (f->len > sizeof(copy))
		return;
	memcpy(copy, f->data, f->len);
	if (dnp_pkt_decode(copy, f->len, &h, &payload) || h.kind != DNP_PKT_CREDIT ||
	    h.src_dir >= DNP_NDIRS)
		return;
	l->miswired_frames++;
	if (!l->seen_n || !dnp_coord_eq(l->seen, h.src) || l->seen_dir != h.src_dir) {
		l->seen = h.src;
		l->seen_dir = h.src_dir;
		l->seen_n = 1;
		return;
	}
	if (l->seen_n >= DNPD_MISWIRED_FRAMES || ++l->seen_n < DNPD_MISWIRED_FRAMES)
		return;
	if (dnp_engine_link_state(d->e, dir) == DNP_LINK_UP) {
		l->seen_n = 0; /* stray frames of a link that works */
		return;
	}
	l->miswired = true;
	dnpd_log(DNPD_ERR,
		 "cabling: %s of %u,%u,%u reaches %u,%u,%u %s: expected %u,%u,%u %s; "
		 "the link stays down",
		 dnpd_dir_names[dir], s.x, s.y, s.z, h.src.x, h.src.y, h.src.z,
		 dnpd_dir_names[h.src_dir], p.x, p.y, p.z, dnpd_dir_names[opp]);
}

bool dnpd_wire_take(void *ctx, struct dnp_coord src, const void *payload, size_t len, uint64_t now)
{
	if (!dnpd_wire_is(payload, len))
		return false;
	dnpd_wire_diag(ctx, src, payload, len, now);
	return true;
}

/*
 * The handshake (dnp-core/link.h): the engine refused a RESET frame of link
 * dir, its hello does not match ours. Logged when the refusal starts or
 * changes (field or values), then at most every DNPD_REFUSED_LOG_NS while it
 * lasts: the neighbour probes every few milliseconds. Its end (H0 src and
 * direction) is kept for the wiring line; only refused frames are decoded
 * here (a copy, as in dnpd_wiring_seen).
 */
#define DNPD_REFUSED_LOG_NS 30000000000ull

void dnpd_handshake_refused(struct dnpd *d, unsigned dir, const struct dnp_rx_frame *f,
			    uint64_t now)
{
	static uint8_t copy[DNP_MAX_FRAME];
	struct dnpd_link *l = &d->link[dir];
	const struct dnp_link *dl = dnp_engine_link(d->e, dir);
	const struct dnp_link_refusal *r = dl ? dnp_link_refusal(dl) : NULL;
	struct dnp_coord s = d->conf.self;
	const uint8_t *payload;
	struct dnp_pkt_hdr h;
	char why[96];

	if (!r || r->field == DNP_REFUSE_NONE)
		return;
	if (f->len <= sizeof(copy)) {
		memcpy(copy, f->data, f->len);
		if (dnp_pkt_decode(copy, f->len, &h, &payload) == 0) {
			l->refused_from = h.src;
			l->refused_dir = h.src_dir < DNP_NDIRS ? h.src_dir : 0;
		}
	}
	if (l->refused_logged && r->episode == l->refused_episode &&
	    now - l->refused_logged < DNPD_REFUSED_LOG_NS)
		return;
	dnp_link_refusal_str(r, why, sizeof(why));
	dnpd_log(DNPD_ERR,
		 "link %s of %u,%u,%u: handshake with %u,%u,%u %s %srefused: %s; the link stays "
		 "down until the settings match",
		 dnpd_dir_names[dir], s.x, s.y, s.z, l->refused_from.x, l->refused_from.y,
		 l->refused_from.z, dnpd_dir_names[l->refused_dir],
		 r->episode == l->refused_episode ? "still " : "", why);
	l->refused_episode = r->episode;
	l->refused_logged = now ? now : 1;
}
