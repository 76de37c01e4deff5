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

#include "engine.h"
#include "pkt.h"
#include "test_pkt_hdr.h"

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
	v->timestamp = rnd();
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
	h->timestamp = v->timestamp;
	h->len = v->len;
	h->flags = v->flags;
}

/* test_pkt_hdr.h's comparison and the fields it leaves out */
static void assert_hdr_equal_all(const struct dnp_pkt_hdr *a, const struct dnp_pkt_hdr *b)
{
	assert_hdr_equal(a, b);
	assert_int_equal(a->sack, b->sack);
	for (unsigned vc = 0; vc < DNP_MAX_VC; vc++)
		assert_int_equal(a->credit[vc].bufs, b->credit[vc].bufs);
	assert_int_equal(a->via, b->via);
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
			assert_hdr_equal_all(&got, &want);
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

/*
 * In the engine: one run of commands whose fields differ from one command
 * to the next (source port, destination port, class, key, address, kind,
 * size) must make a template anew for each difference. Node 0 of a 2x1x1
 * torus sends them in one burst; every data frame it puts on the wire is
 * decoded and compared with its command.
 */
#define ARENA (64u << 10)
#define BASE 0x100000ull
static uint8_t mem[2][ARENA];

static int mem_read(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va, void *dst,
		    size_t len, const struct dnp_mem_seq *seq)
{
	(void)port, (void)b, (void)seq;
	if (va < BASE || va - BASE > ARENA || len > ARENA - (va - BASE))
		return -EFAULT;
	memcpy(dst, (uint8_t *)ctx + (va - BASE), len);
	return 0;
}

static int mem_write(void *ctx, unsigned port, const struct dnp_buf *b, uint64_t va,
		     const void *src, size_t len)
{
	(void)port, (void)b;
	if (va < BASE || va - BASE > ARENA || len > ARENA - (va - BASE))
		return -EFAULT;
	memcpy((uint8_t *)ctx + (va - BASE), src, len);
	return 0;
}

static const struct dnp_mem_ops ops = { .read = mem_read, .write = mem_write };

static void pump(struct dnp_engine *e[2], uint64_t *now)
{
	struct dnp_frame f[64];
	struct dnp_event ev[64];

	for (unsigned i = 0; i < 2; i++)
		dnp_engine_run(e[i], *now);
	for (unsigned i = 0; i < 2; i++) {
		for (unsigned d = DNP_DIR_XP; d <= DNP_DIR_XM; d++) {
			unsigned n = dnp_engine_tx_burst(e[i], d, f, 64, *now);

			(void)dnp_engine_rx_burst(e[1 - i], dnp_torus_opposite(d), f, n, NULL,
						  *now);
		}
		for (unsigned port = 0; port < 4; port++)
			while (dnp_engine_poll_events(e[i], port, ev, 64) > 0)
				;
	}
	*now += 1000;
}

static void test_engine_run_fields(void **state)
{
	(void)state;
	struct dnp_engine *e[2];
	uint64_t now = 1;

	for (unsigned i = 0; i < 2; i++) {
		struct dnp_engine_conf c;

		dnp_engine_conf_default(&c);
		dnp_torus_init(&c.torus, 2, 1, 1);
		c.self = (struct dnp_coord){ (uint8_t)i, 0, 0 };
		c.max_ports = 4;
		c.mem = &ops;
		c.mem_ctx = mem[i];
		c.key_secret[0] = 5 + i;
		c.link.credit_model = DNP_CREDIT_EXACT;
		c.prompt_credits = true;
		assert_int_equal(dnp_engine_create(&c, now, &e[i]), 0);
		for (unsigned port = 0; port < 4; port++)
			assert_int_equal(dnp_engine_port_open(e[i], port), 0);
	}
	for (unsigned r = 0; r < 50; r++) /* the link's handshake */
		pump(e, &now);
	assert_true(dnp_engine_has_link(e[0], DNP_DIR_XP));

	/*
	 * 4 bursts (source ports 0-3) of 6 commands; from one command to the
	 * next exactly one field the template fixes changes (the source port at
	 * a burst's start, then the destination port, the class, the kind
	 * twice), or none (the template is used again), while the packet's own
	 * fields (key, address, size) vary.
	 */
	struct dnp_cmd cmds[30];
	uint8_t dport = 0, tc = 0, op = DNP_OP_PUT;
	for (unsigned i = 0; i < 30; i++) {
		unsigned j = i < 24 ? i % 6 : 0; /* 24-29: a later run, the template kept */

		dport = j == 1 ? (uint8_t)((dport + 1) % 4) : dport;
		tc = j == 3 ? (uint8_t)((tc + 1) % 8) : tc;
		op = j == 4 ? DNP_OP_SEND : j == 5 ? DNP_OP_PUT : op;
		cmds[i] = (struct dnp_cmd){ .op = op,
					    .dst_x = 1,
					    .dst_port = dport,
					    .tc = tc,
					    .remote_key = op == DNP_OP_SEND ? 0 : 0x1000u + i % 2,
					    .remote_va = BASE + 64u * i, /* a SEND's: ignored */
					    .len = i % 5 == 2 ? 24 : 8,
					    .local_va = BASE + 32u * i,
					    .cookie = i };
		for (unsigned k = 0; k < cmds[i].len; k++)
			mem[0][32u * i + k] = (uint8_t)(i * 31 + k);
	}
	for (unsigned port = 0; port < 4; port++) {
		int rc = 1;

		assert_int_equal(dnp_engine_submit_burst(e[0], port, &cmds[port * 6], 6, &rc, now),
				 6);
		assert_int_equal(rc, 0);
	}
	unsigned seen = 0;
	bool later = false;
	for (unsigned r = 0; r < 40 && seen < 30; r++) {
		struct dnp_frame f[64], b[64];
		struct dnp_event ev[64];

		if (seen == 24 && !later) { /* the same fields as the last one, from port 3 */
			int rc = 1;

			assert_int_equal(dnp_engine_submit_burst(e[0], 3, &cmds[24], 6, &rc, now),
					 6);
			later = true;
		}

		for (unsigned i = 0; i < 2; i++)
			dnp_engine_run(e[i], now);
		unsigned n = dnp_engine_tx_burst(e[0], DNP_DIR_XP, f, 64, now);
		for (unsigned k = 0; k < n; k++) {
			struct dnp_pkt_hdr h;
			const uint8_t *pl;

			assert_int_equal(dnp_pkt_decode(f[k].data, f[k].len, &h, &pl), 0);
			if (h.kind == DNP_PKT_CREDIT)
				continue;
			assert_true(seen < 30);
			const struct dnp_cmd *c = &cmds[seen];
			assert_int_equal(h.kind, c->op == DNP_OP_SEND ? DNP_PKT_SEND : DNP_PKT_PUT);
			assert_int_equal(h.src_port, seen < 24 ? seen / 6 : 3);
			assert_int_equal(h.timestamp, (uint32_t)now); /* injected in this round */
			assert_int_equal(h.dst_port, c->dst_port);
			assert_int_equal(h.fstatus & DNP_FT_TC_MASK, dnp_ft_tc(c->tc));
			assert_int_equal(h.key, c->remote_key);
			assert_int_equal(h.va, c->op == DNP_OP_SEND ? 0 : c->remote_va);
			assert_int_equal(h.len, c->len);
			assert_int_equal(h.msg_len, c->len);
			assert_int_equal(h.flags, DNP_PKT_F_FIRST | DNP_PKT_F_LAST);
			assert_int_equal(h.dst.x, 1);
			assert_int_equal(h.src.x, 0);
			assert_int_equal(h.hops, 1);
			assert_memory_equal(pl, &mem[0][32u * seen], c->len);
			seen++;
		}
		(void)dnp_engine_rx_burst(e[1], DNP_DIR_XM, f, n, NULL, now);
		n = dnp_engine_tx_burst(e[1], DNP_DIR_XM, b, 64, now);
		(void)dnp_engine_rx_burst(e[0], DNP_DIR_XP, b, n, NULL, now);
		for (unsigned i = 0; i < 2; i++)
			for (unsigned port = 0; port < 4; port++)
				while (dnp_engine_poll_events(e[i], port, ev, 64) > 0)
					;
		now += 1000;
	}
	assert_int_equal(seen, 30);
	for (unsigned i = 0; i < 2; i++)
		dnp_engine_destroy(e[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tmpl_matches_encoder),
		cmocka_unit_test(test_tmpl_encode_errors),
		cmocka_unit_test(test_tmpl_init_errors),
		cmocka_unit_test(test_seal_matches_restamp),
		cmocka_unit_test(test_seal_errors),
		cmocka_unit_test(test_engine_run_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
