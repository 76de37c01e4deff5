/* SPDX-License-Identifier: MIT */
/*
 * pkt — encode, decode and validate DNP frames. The byte layout is the one
 * drawn in docs/protocol.md; the offsets below are its single source in code.
 *
 * The 64 bytes of framing per packet mirror the APEnet+ torus link, where a
 * packet of up to 4096 payload bytes costs Magic + Start + Header + Footer =
 * four 16-byte words (EURETILE report, torus link bandwidth and latency: P =
 * 64 bytes, E1 = 0.985). Here the link word takes the place of Magic/Start,
 * H0 + H1 are the header and the footer carries the CRC-32 (EURETILE report,
 * HW instrumentation for debugging: CRC_TX appends the check value of header
 * + payload + footer to the footer).
 *
 * Fields are moved with memcpy and <endian.h> conversions: no per-byte loops
 * except inside zlib's CRC.
 */
#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "crc.h"
#include "pkt.h"

/* word 0: link word */
#define LW_MAGIC 0u   /* u16 */
#define LW_VERSION 2u /* u8 */
#define LW_LFLAGS 3u  /* u8 */
#define LW_SEQ 4u     /* u32 */
#define LW_ACK 8u     /* u32 */
#define LW_FLEN 12u   /* u16: whole frame in bytes */
#define LW_SRCDIR 14u /* u8 */
#define LW_EPOCH 15u  /* u8: link epoch */

/* word 1: H0 */
#define H0_DST 16u /* x, y, z */
#define H0_SRC 19u /* x, y, z */
#define H0_DPORT 22u
#define H0_SPORT 23u
#define H0_KVF 24u /* kind 0-3 | vc 4-5 | FIRST 6 | LAST 7 */
#define H0_STATUS 25u
#define H0_LEN 26u   /* u16 */
#define H0_MSGID 28u /* u32 */

/* word 2: H1 */
#define H1_VA 32u     /* u64 */
#define H1_KEY 40u    /* u32 */
#define H1_OFFSET 44u /* u32 */
/*
 * word 2 of a CREDIT frame: credit[vc] at 32 + 8 * vc for vc 0..1; the
 * payload word of a credit frame continues the same layout for vc 2..3, so
 * credit[vc] sits at 32 + 8 * vc for every vc.
 */
#define H1_CREDIT 32u

#define PAYLOAD_OFF 48u

/* footer, relative to frame length - 16 */
#define FT_CRC 0u /* u32 */
#define FT_FSTATUS 4u
#define FT_HOPS 5u
#define FT_VIA 6u     /* u16: via code (route.h), 0 for a direct route */
#define FT_TS 8u      /* u32 */
#define FT_MSGLEN 12u /* u32 */

#define KVF_KIND_MASK 0x0fu
#define KVF_VC_SHIFT 4u
#define KVF_VC_MASK 0x03u
#define KVF_FIRST 0x40u
#define KVF_LAST 0x80u

static_assert(DNP_PAYLOAD_OFF == PAYLOAD_OFF, "pkt.h names the payload offset");
static_assert(DNP_FRAME_OVERHEAD == PAYLOAD_OFF + DNP_WORD_BYTES,
	      "three words before the payload, one after");
static_assert(DNP_MAX_FRAME <= UINT16_MAX, "frame length fits the u16 length field");
static_assert(DNP_MAX_VC == KVF_VC_MASK + 1u, "the 2-bit VC field encodes every VC");
static_assert(H1_CREDIT + 8u * DNP_H1_VCS == PAYLOAD_OFF &&
		      8u * (DNP_MAX_VC - DNP_H1_VCS) == DNP_CREDIT_EXT_BYTES,
	      "credit[0..1] fill H1, credit[2..3] one payload word");

static inline void put8(uint8_t *p, unsigned off, uint8_t v)
{
	p[off] = v;
}

static inline void put16(uint8_t *p, unsigned off, uint16_t v)
{
	v = htole16(v);
	memcpy(p + off, &v, sizeof(v));
}

static inline void put32(uint8_t *p, unsigned off, uint32_t v)
{
	v = htole32(v);
	memcpy(p + off, &v, sizeof(v));
}

static inline void put64(uint8_t *p, unsigned off, uint64_t v)
{
	v = htole64(v);
	memcpy(p + off, &v, sizeof(v));
}

static inline uint16_t get16(const uint8_t *p, unsigned off)
{
	uint16_t v;

	memcpy(&v, p + off, sizeof(v));
	return le16toh(v);
}

static inline uint32_t get32(const uint8_t *p, unsigned off)
{
	uint32_t v;

	memcpy(&v, p + off, sizeof(v));
	return le32toh(v);
}

static inline uint64_t get64(const uint8_t *p, unsigned off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return le64toh(v);
}

static bool kind_known(unsigned kind)
{
	return kind >= DNP_PKT_PUT && kind <= DNP_PKT_COLL;
}

/* Kinds that move message bytes and so travel sequenced (retransmittable). */
static bool kind_is_data(unsigned kind)
{
	return kind == DNP_PKT_PUT || kind == DNP_PKT_SEND || kind == DNP_PKT_GET_REQ ||
	       kind == DNP_PKT_GET_RESP || kind == DNP_PKT_COLL;
}

/* Kinds whose H1/footer describe a fragment of a message. */
static bool kind_is_fragment(unsigned kind)
{
	return kind == DNP_PKT_PUT || kind == DNP_PKT_SEND || kind == DNP_PKT_GET_RESP ||
	       kind == DNP_PKT_COLL;
}

/* First checks, shared by encode and decode: -E2BIG, -EBADMSG, -ERANGE. */
static int check_class(const struct dnp_pkt_hdr *h)
{
	if (h->len > DNP_MAX_PAYLOAD)
		return -E2BIG;
	if (!kind_known(h->kind))
		return -EBADMSG;
	if (h->vc >= DNP_MAX_VC)
		return -ERANGE;
	return 0;
}

/* Field and per-kind rules, shared by encode and decode: -EINVAL, -EOVERFLOW. */
static int check_rules(const struct dnp_pkt_hdr *h)
{
	uint64_t end;

	if ((h->lflags & ~(DNP_LINK_F_SEQ | DNP_LINK_F_RESET | DNP_LINK_F_SACK)) ||
	    h->src_dir > DNP_DIR_LOCAL || (h->flags & ~(DNP_PKT_F_FIRST | DNP_PKT_F_LAST)) ||
	    (h->fstatus & ~(DNP_FT_RETX | DNP_FT_CE | DNP_FT_TC_MASK)))
		return -EINVAL;

	if (h->kind == DNP_PKT_CREDIT) {
		/*
		 * Link control: never sequenced (it carries the acks), no message;
		 * a payload for the credit state of VCs 2-3, or a RESET's hello.
		 */
		if ((h->lflags & DNP_LINK_F_SEQ) || h->flags || h->vc || h->status || h->msg_id ||
		    h->msg_len || h->via || (h->fstatus & DNP_FT_TC_MASK))
			return -EINVAL;
		if (h->len != 0 && !(h->lflags & DNP_LINK_F_RESET) &&
		    h->len != DNP_CREDIT_EXT_BYTES)
			return -EINVAL;
		if (h->len != 0 && (h->lflags & DNP_LINK_F_RESET) &&
		    (h->len < DNP_HELLO_BYTES || h->len > DNP_HELLO_MAX_BYTES ||
		     h->len % DNP_WORD_BYTES))
			return -EINVAL;
		/* A selective ack says something (non-zero) and is no reset. */
		if ((h->lflags & DNP_LINK_F_SACK) &&
		    ((h->lflags & DNP_LINK_F_RESET) || h->sack == 0))
			return -EINVAL;
		return 0;
	}
	if (h->lflags & DNP_LINK_F_SACK)
		return -EINVAL; /* only link control carries a selective ack */
	if (h->lflags & DNP_LINK_F_RESET)
		return -EINVAL; /* only link control resets a link */
	if (h->via & DNP_PKT_VIA_RSVD)
		return -EINVAL;
	if (kind_is_data(h->kind) && !(h->lflags & DNP_LINK_F_SEQ))
		return -EINVAL;
	if (h->kind == DNP_PKT_GET_REQ && h->len != DNP_GET_DESC_BYTES)
		return -EINVAL;
	if ((h->kind == DNP_PKT_CMPL || h->kind == DNP_PKT_QUERY) &&
	    (h->len % 4u || h->len > DNP_CMPL_MAX_EXTRA * 4u))
		return -EINVAL;

	if (!kind_is_fragment(h->kind))
		return 0;
	end = (uint64_t)h->offset + h->len;
	if (end > h->msg_len)
		return -EOVERFLOW;
	if ((h->flags & DNP_PKT_F_FIRST) && h->offset)
		return -EOVERFLOW;
	if ((h->flags & DNP_PKT_F_LAST) && end != h->msg_len)
		return -EOVERFLOW;
	return 0;
}

/*
 * The CRC of a frame is taken with its CRC field zero, and the field sits at
 * a fixed distance from the end. CRC-32 is affine, so for frames of equal
 * length CRC(F with the field zeroed) = CRC(F) ^ L(c), where c is the
 * field's value and L the CRC register contribution (no preset, no final
 * XOR) of c followed by the footer's remaining bytes as zeros; L is linear,
 * so it is four table lookups, one per byte of c. This lets the receiver
 * check every byte of a frame with one pass over the buffer as received.
 */
#define FT_AFTER_CRC (DNP_WORD_BYTES - FT_CRC - 4u) /* bytes after the CRC field */
static uint32_t crc_field_tab[4][256];

__attribute__((constructor)) static void crc_field_tab_init(void)
{
	for (unsigned i = 0; i < 4; i++) {
		for (unsigned v = 0; v < 256; v++) {
			uint32_t r = 0;

			/* byte i of the field holds v, the other three zero, then the zeros after it */
			for (unsigned k = 0; k < 4 + FT_AFTER_CRC; k++) {
				r ^= k == i ? v : 0;
				for (unsigned b = 0; b < 8; b++)
					r = (r >> 1) ^ (0xedb88320u & (0u - (r & 1u)));
			}
			crc_field_tab[i][v] = r;
		}
	}
}

/*
 * CRC arithmetic without the payload (pkt.h, "Sealing"). A CRC register is a
 * polynomial over GF(2) modulo the CRC-32 polynomial, bit-reflected: bit 31
 * is x^0, bit 0 is x^31. Feeding n zero bytes through the register (no
 * preset, no final XOR) multiplies it by x^(8n); crc_pow16[k] is x^(128k),
 * i.e. k zero words, for every distance inside a frame.
 */
#define CRC_POLY_REFL 0xedb88320u
#define CRC_ONE 0x80000000u /* the polynomial 1 */
/*
 * A sealed frame of at least this many bytes has its CRC updated when it is
 * restamped; a smaller one gets a CRC over the frame at each restamp. An
 * update (30-50 ns here) costs what ISA-L's CRC takes over about 1 KiB in cache.
 */
#define SEAL_EARLY_MIN 1024u
static uint32_t crc_pow16[DNP_MAX_FRAME / DNP_WORD_BYTES + 1];

/* a * b modulo the CRC polynomial (both reflected); 32 steps, no branch on data. */
static uint32_t crc_mulmod_bits(uint32_t a, uint32_t b)
{
	uint32_t r = 0;

	for (unsigned i = 0; i < 32; i++) {
		r ^= b & (0u - ((a >> (31 - i)) & 1u)); /* a's coefficient of x^i times b */
		b = (b >> 1) ^ (CRC_POLY_REFL & (0u - (b & 1u))); /* b *= x */
	}
	return r;
}

#if defined(__x86_64__)
#include <wmmintrin.h>

/* x32_tab[i][v]: the reflected polynomial (v << 8i) times x^32, modulo the CRC polynomial. */
static uint32_t x32_tab[4][256];
static bool have_clmul;

/*
 * The same with one carry-less multiplication: bit i of the 64-bit product
 * of two reflected words is the coefficient of x^(62 - i); shifted left by
 * one, its high half is the reflected remainder of degree < 32 and its low
 * half the part L to take times x^32, four table lookups (x32_tab).
 */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc_mulmod_clmul(uint32_t a, uint32_t b)
{
	__m128i p = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)a), _mm_cvtsi32_si128((int)b), 0);
	uint64_t c = (uint64_t)_mm_cvtsi128_si64(p) << 1;
	uint32_t lo = (uint32_t)c;

	return (uint32_t)(c >> 32) ^ x32_tab[0][lo & 0xff] ^ x32_tab[1][(lo >> 8) & 0xff] ^
	       x32_tab[2][(lo >> 16) & 0xff] ^ x32_tab[3][lo >> 24];
}

static inline uint32_t crc_mulmod(uint32_t a, uint32_t b)
{
	return have_clmul ? crc_mulmod_clmul(a, b) : crc_mulmod_bits(a, b);
}
#else
#define crc_mulmod crc_mulmod_bits
#endif

/* The register r followed by k zero words: r * x^(128k). */
static inline uint32_t crc_shift16(uint32_t r, size_t k)
{
	return crc_mulmod(crc_pow16[k], r);
}

/*
 * word_tab[j][v]: the raw register (no preset, no final XOR) after a word of
 * zeros but for byte j = v, from register 0; the raw CRC of a word is the XOR
 * over its bytes (16 lookups, no call: the words a restamp changes are short).
 */
static uint32_t word_tab[DNP_WORD_BYTES][256];

static uint32_t crc_word_raw(const uint8_t w[DNP_WORD_BYTES])
{
	uint32_t r = 0;

	for (unsigned j = 0; j < DNP_WORD_BYTES; j++)
		r ^= word_tab[j][w[j]];
	return r;
}

__attribute__((constructor)) static void crc_pow16_init(void)
{
	uint32_t x128 = CRC_ONE;

#if defined(__x86_64__)
	for (unsigned i = 0; i < 4; i++) {
		for (unsigned v = 0; v < 256; v++) {
			uint32_t r = (uint32_t)v << (8 * i);

			for (unsigned b = 0; b < 32; b++)
				r = (r >> 1) ^ (CRC_POLY_REFL & (0u - (r & 1u)));
			x32_tab[i][v] = r;
		}
	}
	__builtin_cpu_init();
	have_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif

	for (unsigned i = 0; i < 128; i++)
		x128 = (x128 >> 1) ^ (CRC_POLY_REFL & (0u - (x128 & 1u)));
	for (unsigned j = 0; j < DNP_WORD_BYTES; j++) {
		for (unsigned v = 0; v < 256; v++) {
			uint32_t r = v;

			for (unsigned b = 0; b < 8 * (DNP_WORD_BYTES - j); b++)
				r = (r >> 1) ^ (CRC_POLY_REFL & (0u - (r & 1u)));
			word_tab[j][v] = r;
		}
	}
	crc_pow16[0] = CRC_ONE;
	for (size_t k = 1; k < sizeof(crc_pow16) / sizeof(crc_pow16[0]); k++)
		crc_pow16[k] = crc_mulmod(crc_pow16[k - 1], x128);
}

/*
 * What restamping changes in the CRC of a sealed frame: the CRCs of two
 * frames of equal length differ by the raw CRC of their XOR, here the change
 * of the link word, zeros, the change of the footer (CRC fields zero).
 */
static uint32_t restamp_delta(const uint8_t *p, size_t len, const uint8_t lw_old[16],
			      uint8_t ft_old[16])
{
	const uint8_t *ft = p + len - DNP_WORD_BYTES;
	uint8_t d[DNP_WORD_BYTES];
	uint32_t r;

	memset(ft_old + FT_CRC, 0, 4);
	for (unsigned i = 0; i < DNP_WORD_BYTES; i++)
		d[i] = p[i] ^ lw_old[i];
	r = crc_shift16(crc_word_raw(d), (len - DNP_WORD_BYTES) / DNP_WORD_BYTES);
	for (unsigned i = 0; i < DNP_WORD_BYTES; i++)
		d[i] = ft[i] ^ ft_old[i];
	return r ^ crc_word_raw(d);
}

/* CRC of frame[0..flen) with the footer's CRC field taken as zero (one pass). */
static uint32_t frame_crc(const uint8_t *p, size_t flen)
{
	const uint8_t *c = p + flen - DNP_WORD_BYTES + FT_CRC;

	return dnp_crc32(0, p, flen) ^ crc_field_tab[0][c[0]] ^ crc_field_tab[1][c[1]] ^
	       crc_field_tab[2][c[2]] ^ crc_field_tab[3][c[3]];
}

static int encode(const struct dnp_pkt_hdr *h, const void *payload, void *frame, size_t cap,
		  bool seal)
{
	uint8_t *p = frame;
	uint8_t *ft;
	size_t flen;
	bool sack;
	int ret;

	ret = check_class(h);
	if (ret == -E2BIG)
		return ret;
	if (ret || check_rules(h))
		return -EINVAL;
	/* A CREDIT frame's payload is its credits, a RESET frame's the caller's hello. */
	if (h->len && !payload && (h->kind != DNP_PKT_CREDIT || (h->lflags & DNP_LINK_F_RESET)))
		return -EINVAL;
	flen = dnp_pkt_frame_len(h->len);
	if (cap < flen)
		return -ENOBUFS;

	/* Payload first: memmove allows it to sit in place at frame + 48 already. */
	if (h->len && payload && h->kind != DNP_PKT_CREDIT && payload != p + PAYLOAD_OFF)
		memmove(p + PAYLOAD_OFF, payload, h->len);
	memset(p + PAYLOAD_OFF + h->len, 0, flen - DNP_WORD_BYTES - PAYLOAD_OFF - h->len);

	put16(p, LW_MAGIC, DNP_PKT_MAGIC);
	put8(p, LW_VERSION, DNP_PKT_VERSION);
	put8(p, LW_LFLAGS, h->lflags);
	put32(p, LW_SEQ, h->seq);
	put32(p, LW_ACK, h->ack);
	put16(p, LW_FLEN, (uint16_t)flen);
	put8(p, LW_SRCDIR, h->src_dir);
	put8(p, LW_EPOCH, h->epoch);

	put8(p, H0_DST + 0, h->dst.x);
	put8(p, H0_DST + 1, h->dst.y);
	put8(p, H0_DST + 2, h->dst.z);
	put8(p, H0_SRC + 0, h->src.x);
	put8(p, H0_SRC + 1, h->src.y);
	put8(p, H0_SRC + 2, h->src.z);
	put8(p, H0_DPORT, h->dst_port);
	put8(p, H0_SPORT, h->src_port);
	put8(p, H0_KVF,
	     (uint8_t)(h->kind | h->vc << KVF_VC_SHIFT |
		       (h->flags & DNP_PKT_F_FIRST ? KVF_FIRST : 0) |
		       (h->flags & DNP_PKT_F_LAST ? KVF_LAST : 0)));
	put8(p, H0_STATUS, h->status);
	put16(p, H0_LEN, h->len);
	put32(p, H0_MSGID, h->msg_id);
	sack = h->kind == DNP_PKT_CREDIT && (h->lflags & DNP_LINK_F_SACK);
	if (sack)
		put32(p, H0_MSGID, (uint32_t)h->sack);

	if (h->kind == DNP_PKT_CREDIT) {
		unsigned nvc = h->len ? DNP_MAX_VC : DNP_H1_VCS;

		if (h->lflags & DNP_LINK_F_RESET) {
			nvc = DNP_H1_VCS; /* the payload is the hello */
			if (h->len && payload != p + PAYLOAD_OFF)
				memmove(p + PAYLOAD_OFF, payload, h->len);
		}

		for (unsigned vc = 0; vc < nvc; vc++) {
			put32(p, H1_CREDIT + 8 * vc, h->credit[vc].occupancy);
			put32(p, H1_CREDIT + 8 * vc + 4, h->credit[vc].received);
		}
	} else {
		put64(p, H1_VA, h->va);
		put32(p, H1_KEY, h->key);
		put32(p, H1_OFFSET, h->offset);
	}

	ft = p + flen - DNP_WORD_BYTES;
	put32(ft, FT_CRC, 0);
	put8(ft, FT_FSTATUS, h->fstatus);
	put8(ft, FT_HOPS, h->hops);
	put16(ft, FT_VIA, h->via);
	put32(ft, FT_TS, h->timestamp);
	put32(ft, FT_MSGLEN, sack ? (uint32_t)(h->sack >> 32) : h->msg_len);
	/*
	 * dnp_pkt_encode_unsealed leaves the CRC to the restamp at send time,
	 * which computes it over the frame once; it is kept up to date from
	 * then on (pkt.h, "Sealing"). Sealing a large frame here instead, over
	 * the payload just copied in, measured slower side by side
	 * (bench/results/2026-12-05-h-copy-send-pass.md).
	 */
	put32(ft, FT_CRC, seal ? dnp_crc32(0, p, flen) : 0);
	return (int)flen;
}

int dnp_pkt_encode(const struct dnp_pkt_hdr *h, const void *payload, void *frame, size_t cap)
{
	return encode(h, payload, frame, cap, true);
}

int dnp_pkt_encode_unsealed(const struct dnp_pkt_hdr *h, const void *payload, void *frame,
			    size_t cap)
{
	return encode(h, payload, frame, cap, false);
}

/* True if the zero padding after len payload bytes really is zero. */
static inline bool padding_is_zero(const uint8_t *p, unsigned len)
{
	unsigned r = len & 15u;
	uint64_t lo, hi;

	if (!r)
		return true;
	/* The last payload word, as two little-endian halves: byte i is bits 8i.. */
	lo = get64(p, PAYLOAD_OFF + (len & ~15u));
	hi = get64(p, PAYLOAD_OFF + (len & ~15u) + 8);
	if (r < 8)
		return (lo >> (8 * r)) == 0 && hi == 0;
	return (hi >> (8 * (r - 8))) == 0;
}

/* Kinds whose frames decode_fast takes: the sequenced fragments (kind_is_fragment). */
#define FAST_KINDS \
	(1u << DNP_PKT_PUT | 1u << DNP_PKT_SEND | 1u << DNP_PKT_GET_RESP | 1u << DNP_PKT_COLL)
/* Bytes 0-3 of a fast frame: magic, version, and exactly DNP_LINK_F_SEQ as link flags. */
#define FAST_LW_HEAD \
	((uint32_t)DNP_PKT_MAGIC | (uint32_t)DNP_PKT_VERSION << 16 | (uint32_t)DNP_LINK_F_SEQ << 24)
#define FT_STATUS_OK (DNP_FT_RETX | DNP_FT_CE | DNP_FT_TC_MASK)

/*
 * memset(h, 0, sizeof(*h)), padding too (callers compare headers whole), as
 * eight 16-byte stores: the compiler's memset is a string instruction here,
 * which costs a frame's decode more than its checks.
 */
typedef uint8_t hdr_chunk __attribute__((vector_size(16), aligned(1)));
static_assert(sizeof(struct dnp_pkt_hdr) == 8 * sizeof(hdr_chunk), "eight chunks");

static inline void hdr_clear(struct dnp_pkt_hdr *h)
{
	hdr_chunk *c = (hdr_chunk *)(void *)h;
	const hdr_chunk z = { 0 };

	/* written out: as a loop, the compiler makes it a memset again */
	c[0] = z;
	c[1] = z;
	c[2] = z;
	c[3] = z;
	c[4] = z;
	c[5] = z;
	c[6] = z;
	c[7] = z;
}

/*
 * The common frame, a sequenced data fragment (PUT, SEND, GET response,
 * COLL) of a valid CRC, decoded with straight loads and the cheapest
 * rejections first. True if every field is within the rules and h is
 * filled, exactly as decode_full fills it; false if any check of
 * decode_full might fail (or the frame has another shape): decode_full then
 * gives the verdict. Each condition is one of decode_full's checks, so a
 * frame accepted here is one decode_full accepts (fuzz_pkt compares them).
 */
static bool decode_fast(const uint8_t *p, size_t len, struct dnp_pkt_hdr *h)
{
	/*
	 * Each field is loaded once, into h (or a local), and the checks look
	 * at that copy: the frame may sit in memory its sender still writes
	 * (engine.h, conf.rx_direct). h is written before the verdict; on
	 * false, decode_full clears it and starts again.
	 */
	const uint8_t *ft = p + len - DNP_WORD_BYTES;
	unsigned kvf = p[H0_KVF];
	uint64_t end;

	if (get32(p, LW_MAGIC) != FAST_LW_HEAD || !((FAST_KINDS >> (kvf & KVF_KIND_MASK)) & 1u))
		return false;
	hdr_clear(h);
	h->len = get16(p, H0_LEN);
	/* plen <= 4096 and both length fields agree with the buffer */
	if (h->len > DNP_MAX_PAYLOAD || get16(p, LW_FLEN) != len ||
	    dnp_pkt_frame_len(h->len) != len)
		return false;
	h->src_dir = p[LW_SRCDIR];
	h->fstatus = ft[FT_FSTATUS];
	h->via = get16(ft, FT_VIA);
	if (h->src_dir > DNP_DIR_LOCAL || (h->fstatus & ~FT_STATUS_OK) ||
	    (h->via & DNP_PKT_VIA_RSVD))
		return false;
	h->offset = get32(p, H1_OFFSET);
	h->msg_len = get32(ft, FT_MSGLEN);
	end = (uint64_t)h->offset + h->len;
	if (end > h->msg_len || ((kvf & KVF_FIRST) && h->offset) ||
	    ((kvf & KVF_LAST) && end != h->msg_len))
		return false;
	if (!padding_is_zero(p, h->len))
		return false;

	h->lflags = DNP_LINK_F_SEQ;
	h->epoch = p[LW_EPOCH];
	h->seq = get32(p, LW_SEQ);
	h->ack = get32(p, LW_ACK);
	h->dst = (struct dnp_coord){ p[H0_DST], p[H0_DST + 1], p[H0_DST + 2] };
	h->src = (struct dnp_coord){ p[H0_SRC], p[H0_SRC + 1], p[H0_SRC + 2] };
	h->dst_port = p[H0_DPORT];
	h->src_port = p[H0_SPORT];
	h->kind = (uint8_t)(kvf & KVF_KIND_MASK);
	h->vc = (uint8_t)((kvf >> KVF_VC_SHIFT) & KVF_VC_MASK);
	h->flags = (uint8_t)((kvf & KVF_FIRST ? DNP_PKT_F_FIRST : 0) |
			     (kvf & KVF_LAST ? DNP_PKT_F_LAST : 0));
	h->status = p[H0_STATUS];
	h->msg_id = get32(p, H0_MSGID);
	h->va = get64(p, H1_VA);
	h->key = get32(p, H1_KEY);
	h->hops = ft[FT_HOPS];
	h->timestamp = get32(ft, FT_TS);
	return true;
}

/* dnp_pkt_decode past the CRC: every shape, each malformation its own error (pkt.h). */
static int decode_full(const uint8_t *p, size_t len, struct dnp_pkt_hdr *h, const uint8_t **payload)
{
	const uint8_t *ft;
	unsigned kvf;
	size_t flen;
	int ret;

	if (get16(p, LW_MAGIC) != DNP_PKT_MAGIC)
		return -EPROTO;
	if (p[LW_VERSION] != DNP_PKT_VERSION)
		return -EPROTONOSUPPORT;

	memset(h, 0, sizeof(*h));
	h->len = get16(p, H0_LEN);
	if (h->len > DNP_MAX_PAYLOAD)
		return -E2BIG;
	flen = get16(p, LW_FLEN);
	if (flen != dnp_pkt_frame_len(h->len) || flen != len)
		return -EMSGSIZE;
	ft = p + flen - DNP_WORD_BYTES;

	h->lflags = p[LW_LFLAGS];
	h->seq = get32(p, LW_SEQ);
	h->ack = get32(p, LW_ACK);
	h->src_dir = p[LW_SRCDIR];
	h->epoch = p[LW_EPOCH];

	h->dst.x = p[H0_DST + 0];
	h->dst.y = p[H0_DST + 1];
	h->dst.z = p[H0_DST + 2];
	h->src.x = p[H0_SRC + 0];
	h->src.y = p[H0_SRC + 1];
	h->src.z = p[H0_SRC + 2];
	h->dst_port = p[H0_DPORT];
	h->src_port = p[H0_SPORT];
	kvf = p[H0_KVF];
	h->kind = kvf & KVF_KIND_MASK;
	h->vc = (kvf >> KVF_VC_SHIFT) & KVF_VC_MASK;
	h->flags = (kvf & KVF_FIRST ? DNP_PKT_F_FIRST : 0) | (kvf & KVF_LAST ? DNP_PKT_F_LAST : 0);
	h->status = p[H0_STATUS];
	h->msg_id = get32(p, H0_MSGID);

	if (h->kind == DNP_PKT_CREDIT) {
		/* credit[2..3] only from a payload of exactly one word (else left zero) */
		unsigned nvc = h->len == DNP_CREDIT_EXT_BYTES && !(h->lflags & DNP_LINK_F_RESET) ?
				       DNP_MAX_VC :
				       DNP_H1_VCS;

		for (unsigned vc = 0; vc < nvc; vc++) {
			h->credit[vc].occupancy = get32(p, H1_CREDIT + 8 * vc);
			h->credit[vc].received = get32(p, H1_CREDIT + 8 * vc + 4);
		}
	} else {
		h->va = get64(p, H1_VA);
		h->key = get32(p, H1_KEY);
		h->offset = get32(p, H1_OFFSET);
	}

	h->fstatus = ft[FT_FSTATUS];
	h->hops = ft[FT_HOPS];
	h->timestamp = get32(ft, FT_TS);
	/* A credit's buffer credits sit where it has no injection time (pkt.h). */
	if (h->kind == DNP_PKT_CREDIT)
		for (unsigned vc = 0; vc < DNP_MAX_VC; vc++)
			h->credit[vc].bufs = (uint8_t)(h->timestamp >> (8 * vc));
	h->msg_len = get32(ft, FT_MSGLEN);
	if (h->kind == DNP_PKT_CREDIT && (h->lflags & DNP_LINK_F_SACK)) {
		/* The selective ack sits where a credit has no message id/length. */
		h->sack = (uint64_t)h->msg_len << 32 | h->msg_id;
		h->msg_id = 0;
		h->msg_len = 0;
	}

	ret = check_class(h);
	if (ret)
		return ret;
	h->via = get16(ft, FT_VIA);
	if (!padding_is_zero(p, h->len))
		return -EINVAL;
	ret = check_rules(h);
	if (ret)
		return ret;
	if (payload)
		*payload = p + PAYLOAD_OFF;
	return 0;
}

int dnp_pkt_decode(const void *frame, size_t len, struct dnp_pkt_hdr *h, const uint8_t **payload)
{
	const uint8_t *p = frame;

	if (len < DNP_FRAME_OVERHEAD)
		return -ENODATA;
	if (len > DNP_MAX_FRAME || len % DNP_WORD_BYTES)
		return -EMSGSIZE;
	/*
	 * The CRC comes first (over the buffer as received, footer in its last
	 * word): a bit flipped anywhere, a field included, is a CRC error, which
	 * is what the link's error-rate ("sick") accounting must count
	 * (EURETILE report, HW instrumentation for debugging).
	 */
	if (frame_crc(p, len) != get32(p + len - DNP_WORD_BYTES, FT_CRC))
		return -EILSEQ;
	if (!decode_fast(p, len, h))
		return decode_full(p, len, h, payload);
	if (payload)
		*payload = p + PAYLOAD_OFF;
	return 0;
}

int dnp_pkt_restamp(void *frame, size_t len, uint8_t lflags, uint32_t seq, uint32_t ack,
		    uint8_t src_dir, uint8_t fstatus, uint8_t hops)
{
	uint8_t *p = frame;
	uint8_t *ft;
	unsigned kind;

	if (len < DNP_FRAME_OVERHEAD || len > DNP_MAX_FRAME || len % DNP_WORD_BYTES)
		return -EINVAL;
	if (get16(p, LW_MAGIC) != DNP_PKT_MAGIC || p[LW_VERSION] != DNP_PKT_VERSION ||
	    get16(p, LW_FLEN) != len)
		return -EINVAL;
	if ((lflags & ~(DNP_LINK_F_SEQ | DNP_LINK_F_RESET | DNP_LINK_F_SACK)) ||
	    src_dir > DNP_DIR_LOCAL || (fstatus & ~(DNP_FT_RETX | DNP_FT_CE | DNP_FT_TC_MASK)))
		return -EINVAL;
	/* Keep the sequencing rule of check_rules() so the result still decodes. */
	kind = p[H0_KVF] & KVF_KIND_MASK;
	if (kind != DNP_PKT_CREDIT && (lflags & DNP_LINK_F_RESET))
		return -EINVAL;
	if (kind == DNP_PKT_CREDIT && (lflags & DNP_LINK_F_SEQ))
		return -EINVAL;
	if (kind_is_data(kind) && !(lflags & DNP_LINK_F_SEQ))
		return -EINVAL;
	/* SACK stays what it was: set exactly when a credit carries a non-zero sack. */
	if (lflags & DNP_LINK_F_SACK) {
		if (kind != DNP_PKT_CREDIT || (lflags & DNP_LINK_F_RESET) ||
		    !(p[LW_LFLAGS] & DNP_LINK_F_SACK))
			return -EINVAL;
	} else if (p[LW_LFLAGS] & DNP_LINK_F_SACK) {
		return -EINVAL;
	}

	/*
	 * Only the link word and the footer change; the CRC field says how the
	 * new CRC is had without reading the payload (pkt.h, "Sealing").
	 */
	ft = p + len - DNP_WORD_BYTES;
	uint8_t lw_old[DNP_WORD_BYTES], ft_old[DNP_WORD_BYTES];
	uint32_t crc = get32(ft, FT_CRC);

	memcpy(lw_old, p, DNP_WORD_BYTES);
	memcpy(ft_old, ft, DNP_WORD_BYTES);
	put8(p, LW_LFLAGS, lflags);
	put32(p, LW_SEQ, seq);
	put32(p, LW_ACK, ack);
	put8(p, LW_SRCDIR, src_dir);
	put32(ft, FT_CRC, 0);
	put8(ft, FT_FSTATUS, fstatus);
	put8(ft, FT_HOPS, hops);
	if (crc && len >= SEAL_EARLY_MIN)
		crc ^= restamp_delta(p, len, lw_old, ft_old);
	else
		crc = dnp_crc32(0, p, len);
	put32(ft, FT_CRC, crc);
	return 0;
}

int dnp_pkt_tmpl_init(struct dnp_pkt_tmpl *t, const struct dnp_pkt_hdr *h)
{
	uint8_t f[DNP_FRAME_OVERHEAD + DNP_GET_DESC_BYTES];
	const uint8_t desc[DNP_GET_DESC_BYTES] = { 0 };
	struct dnp_pkt_hdr c = *h;
	int n;

	if ((c.kind != DNP_PKT_PUT && c.kind != DNP_PKT_SEND && c.kind != DNP_PKT_GET_REQ &&
	     c.kind != DNP_PKT_GET_RESP) ||
	    !(c.lflags & DNP_LINK_F_SEQ))
		return -EINVAL;
	/* the packet's own fields as those of a one-packet message, which every rule takes */
	c.va = 0;
	c.msg_id = 0;
	c.key = 0;
	c.offset = 0;
	c.len = c.kind == DNP_PKT_GET_REQ ? DNP_GET_DESC_BYTES : 0;
	c.msg_len = c.len;
	c.timestamp = 0;
	c.flags = DNP_PKT_F_FIRST | DNP_PKT_F_LAST;
	n = encode(&c, desc, f, sizeof(f), false);
	if (n < 0)
		return -EINVAL;
	c.flags = 0;
	t->h = c;
	memcpy(t->head, f, PAYLOAD_OFF);
	t->head[H0_KVF] &= (uint8_t) ~(KVF_FIRST | KVF_LAST);
	memcpy(t->foot, f + n - DNP_WORD_BYTES, DNP_WORD_BYTES);
	return 0;
}

int dnp_pkt_tmpl_encode(const struct dnp_pkt_tmpl *t, const struct dnp_pkt_var *v,
			struct dnp_pkt_hdr *h, void *frame, size_t cap)
{
	uint8_t *p = frame;
	uint8_t *ft;
	uint64_t end = (uint64_t)v->offset + v->len;
	size_t flen;

	if (v->len > DNP_MAX_PAYLOAD)
		return -E2BIG;
	if (v->flags & ~(DNP_PKT_F_FIRST | DNP_PKT_F_LAST))
		return -EINVAL;
	if (t->h.kind == DNP_PKT_GET_REQ) {
		if (v->len != DNP_GET_DESC_BYTES)
			return -EINVAL;
	} else if (end > v->msg_len || ((v->flags & DNP_PKT_F_FIRST) && v->offset) ||
		   ((v->flags & DNP_PKT_F_LAST) && end != v->msg_len)) {
		return -EINVAL; /* the fragment rules of check_rules */
	}
	flen = dnp_pkt_frame_len(v->len);
	if (cap < flen)
		return -ENOBUFS;
	/* the padding (under one word; the footer, written after, may take the rest) */
	memset(p + PAYLOAD_OFF + v->len, 0, DNP_WORD_BYTES);
	memcpy(p, t->head, PAYLOAD_OFF);
	put16(p, LW_FLEN, (uint16_t)flen);
	p[H0_KVF] = (uint8_t)(t->head[H0_KVF] | (v->flags & DNP_PKT_F_FIRST ? KVF_FIRST : 0) |
			      (v->flags & DNP_PKT_F_LAST ? KVF_LAST : 0));
	put16(p, H0_LEN, v->len);
	put32(p, H0_MSGID, v->msg_id);
	put64(p, H1_VA, v->va);
	put32(p, H1_KEY, v->key);
	put32(p, H1_OFFSET, v->offset);
	ft = p + flen - DNP_WORD_BYTES;
	memcpy(ft, t->foot, DNP_WORD_BYTES);
	put32(ft, FT_TS, v->timestamp);
	put32(ft, FT_MSGLEN, v->msg_len);
	if (h) {
		*h = t->h;
		h->va = v->va;
		h->msg_id = v->msg_id;
		h->key = v->key;
		h->offset = v->offset;
		h->msg_len = v->msg_len;
		h->timestamp = v->timestamp;
		h->len = v->len;
		h->flags = v->flags;
	}
	return (int)flen;
}

int dnp_pkt_seal_seq(void *frame, size_t len, const struct dnp_pkt_stamp *st, uint32_t seq,
		     uint8_t fstatus, uint8_t hops)
{
	uint8_t *p = frame;
	uint8_t *ft;
	uint8_t lw_old[DNP_WORD_BYTES], ft_old[DNP_WORD_BYTES];
	uint32_t crc;
	bool update;

	if (len < DNP_FRAME_OVERHEAD || len > DNP_MAX_FRAME || len % DNP_WORD_BYTES)
		return -EINVAL;
	if (get16(p, LW_MAGIC) != DNP_PKT_MAGIC || p[LW_VERSION] != DNP_PKT_VERSION ||
	    get16(p, LW_FLEN) != len)
		return -EINVAL;
	/* dnp_pkt_restamp's rules for DNP_LINK_F_SEQ: no CREDIT frame, no selective ack */
	if (st->src_dir > DNP_DIR_LOCAL ||
	    (fstatus & ~(DNP_FT_RETX | DNP_FT_CE | DNP_FT_TC_MASK)) ||
	    (p[H0_KVF] & KVF_KIND_MASK) == DNP_PKT_CREDIT || (p[LW_LFLAGS] & DNP_LINK_F_SACK))
		return -EINVAL;
	ft = p + len - DNP_WORD_BYTES;
	crc = get32(ft, FT_CRC);
	update = crc && len >= SEAL_EARLY_MIN; /* as dnp_pkt_restamp (pkt.h, "Sealing") */
	if (update) {
		memcpy(lw_old, p, DNP_WORD_BYTES);
		memcpy(ft_old, ft, DNP_WORD_BYTES);
	}
	put8(p, LW_LFLAGS, DNP_LINK_F_SEQ);
	put32(p, LW_SEQ, seq);
	put32(p, LW_ACK, st->ack);
	put8(p, LW_SRCDIR, st->src_dir);
	put8(p, LW_EPOCH, st->epoch);
	put32(ft, FT_CRC, 0);
	put8(ft, FT_FSTATUS, fstatus);
	put8(ft, FT_HOPS, hops);
	crc = update ? crc ^ restamp_delta(p, len, lw_old, ft_old) : dnp_crc32(0, p, len);
	put32(ft, FT_CRC, crc);
	return 0;
}

void dnp_pkt_edit_sealed(uint8_t *frame, unsigned off, uint8_t val)
{
	uint8_t d[DNP_WORD_BYTES] = { 0 };
	size_t flen = get16(frame, LW_FLEN);
	uint8_t *ft = frame + flen - DNP_WORD_BYTES;
	uint32_t crc;

	assert(off < PAYLOAD_OFF);
	if (flen < DNP_FRAME_OVERHEAD || flen > DNP_MAX_FRAME || flen % DNP_WORD_BYTES) {
		frame[off] = val; /* not a frame of ours: dnp_pkt_restamp refuses it anyway */
		return;
	}
	crc = get32(ft, FT_CRC);
	d[off % DNP_WORD_BYTES] = frame[off] ^ val;
	frame[off] = val;
	if (!crc)
		return; /* no CRC: the restamp computes it over the frame */
	/* the change, as a word followed by zeros up to the end of the frame */
	crc ^= crc_shift16(crc_word_raw(d),
			   (flen - DNP_WORD_BYTES * (off / DNP_WORD_BYTES + 1)) / 16);
	put32(ft, FT_CRC, crc);
}

/*
 * The hello of a RESET frame (docs/protocol.md, "The link handshake"),
 * little-endian: 0 magic u16, 2 version u8, 3 transport u8, 4 dim x u16,
 * 6 dim y u16, 8 dim z u16, 10 nvc u8, 11 vc_mode u8, 12 fifo_words u32,
 * 16 max_frame u16, 18 routing u8, 19-31 reserved (zero).
 */
#define HL_MAGIC 0u
#define HL_VERSION 2u
#define HL_TRANSPORT 3u
#define HL_DIM 4u
#define HL_NVC 10u
#define HL_VC_MODE 11u
#define HL_FIFO 12u
#define HL_MAX_FRAME 16u
#define HL_ROUTING 18u
#define HL_RSVD 19u

void dnp_pkt_hello_encode(const struct dnp_pkt_hello *h, uint8_t out[DNP_HELLO_BYTES])
{
	memset(out, 0, DNP_HELLO_BYTES);
	put16(out, HL_MAGIC, DNP_HELLO_MAGIC);
	put8(out, HL_VERSION, DNP_HELLO_VERSION);
	put8(out, HL_TRANSPORT, h->transport);
	for (unsigned i = 0; i < 3; i++)
		put16(out, HL_DIM + 2 * i, h->dim[i]);
	put8(out, HL_NVC, h->nvc);
	put8(out, HL_VC_MODE, h->vc_mode);
	put32(out, HL_FIFO, h->fifo_words);
	put16(out, HL_MAX_FRAME, h->max_frame);
	put8(out, HL_ROUTING, h->routing);
}

int dnp_pkt_hello_decode(const uint8_t *payload, size_t len, struct dnp_pkt_hello *h)
{
	memset(h, 0, sizeof(*h));
	if (!payload || len == 0)
		return -ENODATA;
	if (len < HL_VERSION + 1u || get16(payload, HL_MAGIC) != DNP_HELLO_MAGIC)
		return -EPROTO;
	h->version = payload[HL_VERSION];
	if (h->version != DNP_HELLO_VERSION)
		return -EPROTONOSUPPORT;
	if (len != DNP_HELLO_BYTES)
		return -EINVAL;
	for (unsigned i = HL_RSVD; i < DNP_HELLO_BYTES; i++)
		if (payload[i])
			return -EINVAL;
	h->transport = payload[HL_TRANSPORT];
	for (unsigned i = 0; i < 3; i++)
		h->dim[i] = get16(payload, HL_DIM + 2 * i);
	h->nvc = payload[HL_NVC];
	h->vc_mode = payload[HL_VC_MODE];
	h->fifo_words = get32(payload, HL_FIFO);
	h->max_frame = get16(payload, HL_MAX_FRAME);
	h->routing = payload[HL_ROUTING];
	return 0;
}

const char *dnp_pkt_kind_name(unsigned kind)
{
	static const char *const names[] = {
		[DNP_PKT_PUT] = "PUT",         [DNP_PKT_SEND] = "SEND",
		[DNP_PKT_GET_REQ] = "GET_REQ", [DNP_PKT_GET_RESP] = "GET_RESP",
		[DNP_PKT_CMPL] = "CMPL",       [DNP_PKT_CREDIT] = "CREDIT",
		[DNP_PKT_DIAG] = "DIAG",       [DNP_PKT_ROUTE] = "ROUTE",
		[DNP_PKT_QUERY] = "QUERY",     [DNP_PKT_COLL] = "COLL",
	};

	if (kind < sizeof(names) / sizeof(names[0]) && names[kind])
		return names[kind];
	return "?";
}
