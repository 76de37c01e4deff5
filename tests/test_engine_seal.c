/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the sender's per-run header template and one-step seal
 * (pkt.h: dnp_pkt_tmpl_init, dnp_pkt_tmpl_encode, dnp_pkt_seal_seq;
 * docs/performance.md, "Sender, per-run header template"): every frame and
 * header they make is compared byte for byte with those of the existing
 * encoder (dnp_pkt_encode_unsealed) and restamp (dnp_pkt_set_epoch +
 * dnp_pkt_restamp), over varied fields; each error is the encoder's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pkt.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

static uint32_t rnd_below(uint32_t n)
{
	return rnd() % n;
}

static const uint8_t data_kinds[] = { DNP_PKT_PUT, DNP_PKT_SEND, DNP_PKT_GET_REQ,
				      DNP_PKT_GET_RESP };

/* A run's fields, varied: every value the encoder takes for a data packet. */
static void rnd_run_hdr(struct dnp_pkt_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->lflags = DNP_LINK_F_SEQ;
	h->kind = data_kinds[rnd_below(4)];
	h->vc = (uint8_t)rnd_below(DNP_MAX_VC);
	h->dst = (struct dnp_coord){ (uint8_t)rnd(), (uint8_t)rnd(), (uint8_t)rnd() };
	h->src = (struct dnp_coord){ (uint8_t)rnd(), (uint8_t)rnd(), (uint8_t)rnd() };
	h->dst_port = (uint8_t)rnd();
	h->src_port = (uint8_t)rnd();
	h->status = (uint8_t)rnd_below(2);
	h->fstatus = (uint8_t)(rnd() & (DNP_FT_RETX | DNP_FT_CE | DNP_FT_TC_MASK));
	h->hops = (uint8_t)rnd();
	h->via = (uint16_t)(rnd() & ~DNP_PKT_VIA_RSVD & 0xffffu);
	h->timestamp = rnd();
	/* fields a run's packets never carry before the seal, varied all the same */
	h->seq = rnd();
	h->ack = rnd();
	h->src_dir = (uint8_t)rnd_below(DNP_DIR_LOCAL + 1);
	h->epoch = (uint8_t)rnd();
}

/* One packet's own fields, within the rules of kind. */
static void rnd_var(uint8_t kind, struct dnp_pkt_var *v)
{
	static const uint16_t lens[] = { 0, 1, 8, 15, 16, 17, 100, 1023, 1024, 4095, 4096 };

	v->va = (uint64_t)rnd() << 32 | rnd();
	v->msg_id = rnd();
	v->key = rnd();
	if (kind == DNP_PKT_GET_REQ) {
		v->len = DNP_GET_DESC_BYTES;
		v->offset = rnd(); /* a GET request is no fragment: its offset is free */
		v->msg_len = rnd();
		v->flags = (uint8_t)rnd_below(4);
		return;
	}
	v->len = rnd_below(3) ? lens[rnd_below(sizeof(lens) / sizeof(lens[0]))] :
				(uint16_t)rnd_below(DNP_MAX_PAYLOAD + 1);
	switch (rnd_below(4)) {
	case 0: /* the whole message */
		v->offset = 0;
		v->msg_len = v->len;
		v->flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST;
		break;
	case 1: /* first of several */
		v->offset = 0;
		v->msg_len = v->len + 1 + rnd_below(1u << 20);
		v->flags = DNP_PKT_F_FIRST;
		break;
	case 2: /* the last */
		v->offset = 1 + rnd_below(1u << 20);
		v->msg_len = v->offset + v->len;
		v->flags = DNP_PKT_F_LAST;
		break;
	default: /* in the middle */
		v->offset = 1 + rnd_below(1u << 20);
		v->msg_len = v->offset + v->len + 1 + rnd_below(4096);
		v->flags = 0;
		break;
	}
}

/* The header the existing encoder is given for run h and packet v. */
static void hdr_with(const struct dnp_pkt_hdr *run, const struct dnp_pkt_var *v,
		     struct dnp_pkt_hdr *h)
{
	*h = *run;
	h->va = v->va;
	h->msg_id = v->msg_id;
	h->key = v->key;
	h->offset = v->offset;
	h->msg_len = v->msg_len;
	h->len = v->len;
	h->flags = v->flags;
}

static void assert_hdr_equal(const struct dnp_pkt_hdr *a, const struct dnp_pkt_hdr *b)
{
	assert_int_equal(a->lflags, b->lflags);
	assert_int_equal(a->src_dir, b->src_dir);
	assert_int_equal(a->epoch, b->epoch);
	assert_int_equal(a->seq, b->seq);
	assert_int_equal(a->ack, b->ack);
	assert_int_equal(a->sack, b->sack);
	assert_memory_equal(&a->dst, &b->dst, sizeof(a->dst));
	assert_memory_equal(&a->src, &b->src, sizeof(a->src));
	assert_int_equal(a->dst_port, b->dst_port);
	assert_int_equal(a->src_port, b->src_port);
	assert_int_equal(a->kind, b->kind);
	assert_int_equal(a->vc, b->vc);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->status, b->status);
	assert_int_equal(a->len, b->len);
	assert_int_equal(a->msg_id, b->msg_id);
	assert_int_equal(a->va, b->va);
	assert_int_equal(a->key, b->key);
	assert_int_equal(a->offset, b->offset);
	for (unsigned vc = 0; vc < DNP_MAX_VC; vc++) {
		assert_int_equal(a->credit[vc].occupancy, b->credit[vc].occupancy);
		assert_int_equal(a->credit[vc].received, b->credit[vc].received);
		assert_int_equal(a->credit[vc].bufs, b->credit[vc].bufs);
	}
	assert_int_equal(a->fstatus, b->fstatus);
	assert_int_equal(a->hops, b->hops);
	assert_int_equal(a->via, b->via);
	assert_int_equal(a->timestamp, b->timestamp);
	assert_int_equal(a->msg_len, b->msg_len);
}

static uint8_t fa[DNP_MAX_FRAME + 32], fb[DNP_MAX_FRAME + 32];

/*
 * 300 runs of 12 packets: each frame the template makes is the encoder's,
 * byte for byte (padding zeroed over what was there), and nothing after it
 * is written; the header it returns is the one the encoder was given.
 */
static void test_tmpl_matches_encoder(void **state)
{
	(void)state;
	for (unsigned run = 0; run < 300; run++) {
		struct dnp_pkt_hdr rh, want, got;
		struct dnp_pkt_tmpl t;

		rnd_run_hdr(&rh);
		assert_int_equal(dnp_pkt_tmpl_init(&t, &rh), 0);
		for (unsigned i = 0; i < 12; i++) {
			struct dnp_pkt_var v;

			rnd_var(rh.kind, &v);
			hdr_with(&rh, &v, &want);
			memset(fa, 0xa5, sizeof(fa));
			for (unsigned k = 0; k < v.len; k++)
				fa[DNP_PAYLOAD_OFF + k] = (uint8_t)rnd();
			memcpy(fb, fa, sizeof(fb));
			memset(&got, 0x5a, sizeof(got));
			int n = dnp_pkt_encode_unsealed(&want, fa + DNP_PAYLOAD_OFF, fa,
							DNP_MAX_FRAME);
			int m = dnp_pkt_tmpl_encode(&t, &v, &got, fb, DNP_MAX_FRAME);
			assert_true(n > 0);
			assert_int_equal(m, n);
			assert_memory_equal(fa, fb,
					    sizeof(fa)); /* the frame, and untouched after it */
			assert_hdr_equal(&got, &want);
			assert_int_equal(dnp_pkt_tmpl_encode(&t, &v, NULL, fb, (size_t)n), n);
			assert_memory_equal(fa, fb, sizeof(fa));
		}
	}
}

/* Each packet whose own fields the encoder refuses is refused, with the encoder's error. */
static void test_tmpl_encode_errors(void **state)
{
	(void)state;
	for (unsigned run = 0; run < 200; run++) {
		struct dnp_pkt_hdr rh, h;
		struct dnp_pkt_tmpl t;
		struct dnp_pkt_var v;

		rnd_run_hdr(&rh);
		assert_int_equal(dnp_pkt_tmpl_init(&t, &rh), 0);
		rnd_var(rh.kind, &v);
		switch (run % 7) {
		case 0:
			v.len = DNP_MAX_PAYLOAD + 1 + (uint16_t)rnd_below(1000);
			break;
		case 1:
			v.flags |= (uint8_t)(4u << rnd_below(6));
			break;
		case 2: /* FIRST with an offset */
			v.offset = 1 + rnd_below(100);
			v.msg_len = v.offset + v.len;
			v.flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST;
			if (rh.kind == DNP_PKT_GET_REQ)
				v.len = 0;
			break;
		case 3: /* past the message's end */
			v.offset = 10;
			v.len = 8;
			v.msg_len = 17;
			v.flags = 0;
			break;
		case 4: /* LAST short of the end */
			v.flags = DNP_PKT_F_LAST;
			v.offset = 0;
			v.msg_len = v.len + 1;
			if (rh.kind == DNP_PKT_GET_REQ)
				v.len = 32;
			break;
		case 5: /* a GET request's payload is its descriptor, nothing else */
			if (rh.kind != DNP_PKT_GET_REQ)
				v.offset = UINT32_MAX, v.len = 2, v.msg_len = 0, v.flags = 0;
			else
				v.len = DNP_GET_DESC_BYTES - 1;
			break;
		default: { /* the frame does not fit */
			int m;

			memset(fb, 0, sizeof(fb));
			m = dnp_pkt_tmpl_encode(&t, &v, NULL, fb, dnp_pkt_frame_len(v.len) - 1);
			assert_int_equal(m, -ENOBUFS);
			continue;
		}
		}
		hdr_with(&rh, &v, &h);
		memset(fa, 0, sizeof(fa));
		memset(fb, 0, sizeof(fb));
		int n = dnp_pkt_encode_unsealed(&h, fa + DNP_PAYLOAD_OFF, fa, DNP_MAX_FRAME);
		int m = dnp_pkt_tmpl_encode(&t, &v, NULL, fb, DNP_MAX_FRAME);
		assert_true(n < 0);
		assert_int_equal(m, n);
	}
}

/* A run's header the encoder refuses, or one of no data kind, makes no template. */
static void test_tmpl_init_errors(void **state)
{
	(void)state;
	for (unsigned run = 0; run < 120; run++) {
		struct dnp_pkt_hdr h;
		struct dnp_pkt_tmpl t;

		rnd_run_hdr(&h);
		switch (run % 8) {
		case 0:
			h.kind = DNP_PKT_CREDIT;
			h.lflags = 0;
			break;
		case 1:
			h.kind = (uint8_t)(rnd_below(2) ? DNP_PKT_CMPL : DNP_PKT_ROUTE);
			break;
		case 2:
			h.lflags = 0;
			break;
		case 3:
			h.lflags |= DNP_LINK_F_RESET;
			break;
		case 4:
			h.via |= DNP_PKT_VIA_RSVD;
			break;
		case 5:
			h.fstatus |= 0x20;
			break;
		case 6:
			h.vc = DNP_MAX_VC;
			break;
		default:
			h.src_dir = DNP_DIR_LOCAL + 1;
			break;
		}
		assert_int_equal(dnp_pkt_tmpl_init(&t, &h), -EINVAL);
	}
}

/*
 * dnp_pkt_seal_seq gives the bytes of dnp_pkt_set_epoch + dnp_pkt_restamp,
 * on unsealed frames (a first transmission) and sealed ones (the CRC
 * updated above 1 KiB), and the frame decodes with the fields it was given.
 */
static void test_seal_matches_restamp(void **state)
{
	(void)state;
	for (unsigned i = 0; i < 2000; i++) {
		struct dnp_pkt_hdr rh, h, d;
		struct dnp_pkt_var v;
		const uint8_t *pl;
		bool sealed = rnd_below(2);

		rnd_run_hdr(&rh);
		rnd_var(rh.kind, &v);
		hdr_with(&rh, &v, &h);
		for (unsigned k = 0; k < v.len; k++)
			fa[DNP_PAYLOAD_OFF + k] = (uint8_t)rnd();
		int n = sealed ? dnp_pkt_encode(&h, fa + DNP_PAYLOAD_OFF, fa, DNP_MAX_FRAME) :
				 dnp_pkt_encode_unsealed(&h, fa + DNP_PAYLOAD_OFF, fa,
							 DNP_MAX_FRAME);
		assert_true(n > 0);
		memcpy(fb, fa, (size_t)n);

		const struct dnp_pkt_stamp st = { .ack = rnd(),
						  .src_dir = (uint8_t)rnd_below(DNP_DIR_LOCAL + 1),
						  .epoch = (uint8_t)rnd() };
		uint32_t seq = rnd();
		uint8_t fst = (uint8_t)(rnd() & (DNP_FT_RETX | DNP_FT_CE | DNP_FT_TC_MASK));
		uint8_t hops = (uint8_t)rnd();

		dnp_pkt_set_epoch(fa, st.epoch);
		assert_int_equal(dnp_pkt_restamp(fa, (size_t)n, DNP_LINK_F_SEQ, seq, st.ack,
						 st.src_dir, fst, hops),
				 0);
		assert_int_equal(dnp_pkt_seal_seq(fb, (size_t)n, &st, seq, fst, hops), 0);
		assert_memory_equal(fa, fb, (size_t)n);
		assert_int_equal(dnp_pkt_decode(fb, (size_t)n, &d, &pl), 0);
		assert_int_equal(d.seq, seq);
		assert_int_equal(d.ack, st.ack);
		assert_int_equal(d.epoch, st.epoch);
		assert_int_equal(d.src_dir, st.src_dir);
		assert_int_equal(d.fstatus, fst);
		assert_int_equal(d.hops, hops);
		assert_int_equal(d.msg_id, v.msg_id);
	}
}

/* What dnp_pkt_restamp refuses for a sequenced frame, the seal refuses, the frame unchanged. */
static void test_seal_errors(void **state)
{
	(void)state;
	struct dnp_pkt_hdr h;
	struct dnp_pkt_var v;
	struct dnp_pkt_stamp st = { .ack = 7, .src_dir = 1, .epoch = 3 };

	rnd_run_hdr(&h);
	h.kind = DNP_PKT_PUT;
	rnd_var(h.kind, &v);
	v.len = 8, v.offset = 0, v.msg_len = 8, v.flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST;
	hdr_with(&h, &v, &h);
	int n = dnp_pkt_encode(&h, "abcdefgh", fa, DNP_MAX_FRAME);
	assert_int_equal(n, 80);
	memcpy(fb, fa, sizeof(fb));

	assert_int_equal(dnp_pkt_seal_seq(fb, 64, &st, 1, 0, 1), -EINVAL);    /* length field */
	assert_int_equal(dnp_pkt_seal_seq(fb, 88, &st, 1, 0, 1), -EINVAL);    /* not in words */
	assert_int_equal(dnp_pkt_seal_seq(fb, 48, &st, 1, 0, 1), -EINVAL);    /* too short */
	assert_int_equal(dnp_pkt_seal_seq(fb, 80, &st, 1, 0x20, 1), -EINVAL); /* fstatus */
	st.src_dir = DNP_DIR_LOCAL + 1;
	assert_int_equal(dnp_pkt_seal_seq(fb, 80, &st, 1, 0, 1), -EINVAL);
	st.src_dir = 1;
	fb[0] ^= 1; /* magic */
	assert_int_equal(dnp_pkt_seal_seq(fb, 80, &st, 1, 0, 1), -EINVAL);
	fb[0] ^= 1;
	fb[2] ^= 2; /* version */
	assert_int_equal(dnp_pkt_seal_seq(fb, 80, &st, 1, 0, 1), -EINVAL);
	fb[2] ^= 2;
	assert_memory_equal(fa, fb, sizeof(fb));

	/* a CREDIT frame, and one with a selective ack, are never sequenced */
	struct dnp_pkt_hdr c = { .kind = DNP_PKT_CREDIT, .dst = h.dst, .src = h.src };
	n = dnp_pkt_encode(&c, NULL, fa, DNP_MAX_FRAME);
	assert_true(n > 0);
	memcpy(fb, fa, sizeof(fb));
	assert_int_equal(dnp_pkt_seal_seq(fb, (size_t)n, &st, 1, 0, 1), -EINVAL);
	c.lflags = DNP_LINK_F_SACK;
	c.sack = 5;
	n = dnp_pkt_encode(&c, NULL, fa, DNP_MAX_FRAME);
	assert_true(n > 0);
	memcpy(fb, fa, sizeof(fb));
	assert_int_equal(dnp_pkt_seal_seq(fb, (size_t)n, &st, 1, 0, 1), -EINVAL);
	assert_memory_equal(fa, fb, sizeof(fb));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tmpl_matches_encoder),
		cmocka_unit_test(test_tmpl_encode_errors),
		cmocka_unit_test(test_tmpl_init_errors),
		cmocka_unit_test(test_seal_matches_restamp),
		cmocka_unit_test(test_seal_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
