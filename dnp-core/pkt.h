/* SPDX-License-Identifier: MIT */
/*
 * pkt — the DNP frame on a virtual link: encode, decode, validate.
 *
 * A frame is a sequence of 16-byte words (all multi-byte fields little-endian):
 *
 *   word 0      link word   magic, version, link seq/ack, frame length
 *   word 1      header H0   routing: dst/src coords, ports, kind, VC, flags,
 *                           payload length, message id
 *   word 2      header H1   RDMA: 64-bit destination VA, key, fragment offset
 *   payload     0..4096 bytes, padded with zeros to a multiple of 16
 *   last word   footer      CRC-32, status bits, hop count, via, timestamp, message length
 *
 * The framing overhead is exactly DNP_FRAME_OVERHEAD = 64 bytes per packet,
 * like the APEnet+ link (magic + start + header + footer). The CRC-32 covers
 * the whole frame with the CRC field taken as zero. The exact bit layout is
 * in docs/protocol.md, and golden vectors in tests/test_pkt.c pin it.
 *
 * Link control (credits and acks) travels in frames of kind DNP_PKT_CREDIT;
 * H1 then carries the credit state of VCs 0 and 1 (see struct
 * dnp_pkt_hdr.credit). A link with more than two VCs sends the state of
 * VCs 2 and 3 in a one-word payload (DNP_CREDIT_EXT_BYTES); a link with one
 * or two sends no payload, so its credit frames are the 64-byte ones of the
 * two-VC format. A RESET frame (DNP_LINK_F_RESET) carries the sender's hello
 * in its payload instead (struct dnp_pkt_hello).
 *
 * Sealing. A frame's CRC field is either the CRC of the frame as it stands
 * (sealed: by dnp_pkt_encode, dnp_pkt_restamp, or a frame that decoded) or
 * zero (unknown, as dnp_pkt_encode_unsealed leaves it), and dnp_pkt_restamp,
 * dnp_pkt_set_vc and dnp_pkt_set_epoch keep it so. Restamping a sealed frame
 * of 1 KiB or more updates its CRC for the bytes it changes: the CRCs of two
 * frames of equal length differ by the raw CRC of their XOR (a few table
 * lookups and one multiplication by x^(8n), no pass over the payload). So a
 * retransmission or a forward costs no CRC pass. A smaller frame, or one whose
 * field is zero (a first transmission), gets a CRC over the whole frame. The
 * bytes on the wire are exactly those of a CRC over the whole frame
 * (tests/test_pkt.c). After encoding, a frame's bytes may change only through
 * these calls: a byte changed any other way stays a CRC error at the receiver
 * for a large sealed frame (as does a retransmission buffer corrupted in
 * memory).
 *
 * Pure functions on caller buffers; no allocation; any thread.
 */
#ifndef DNP_PKT_H
#define DNP_PKT_H

#include <stddef.h>
#include <stdint.h>

#include "torus.h"

#define DNP_WORD_BYTES 16u
#define DNP_MAX_PAYLOAD 4096u
#define DNP_FRAME_OVERHEAD 64u
#define DNP_PAYLOAD_OFF 48u /* the payload starts after three header words */
#define DNP_MAX_FRAME (DNP_MAX_PAYLOAD + DNP_FRAME_OVERHEAD)
#define DNP_MAX_VC 4u
#define DNP_H1_VCS 2u /* VCs whose credit state fits in H1 */
/* Payload of a CREDIT frame of a link with more than DNP_H1_VCS VCs: credit[2..3]. */
#define DNP_CREDIT_EXT_BYTES 16u
#define DNP_CREDIT_MAX_FRAME (DNP_FRAME_OVERHEAD + DNP_CREDIT_EXT_BYTES)
#define DNP_PKT_MAGIC 0x4e44u /* "DN" on the wire */
#define DNP_PKT_VERSION 1u

enum dnp_pkt_kind {
	DNP_PKT_PUT = 1,      /* write payload at va in a PUT-target buffer */
	DNP_PKT_SEND = 2,     /* append to the port's current SEND-target buffer */
	DNP_PKT_GET_REQ = 3,  /* payload: struct dnp_get_desc */
	DNP_PKT_GET_RESP = 4, /* like PUT, into the requester's buffer */
	DNP_PKT_CMPL = 5,     /* end-to-end completion report(s); status = errno */
	DNP_PKT_CREDIT = 6,   /* link control: credits + ack, never forwarded */
	DNP_PKT_DIAG = 7,     /* LO|FA|MO diagnostics, delivered to the fault manager */
	DNP_PKT_ROUTE = 8,    /* link states a node tells its neighbours (docs/routing.md) */
	DNP_PKT_QUERY = 9,    /* outcome query for msg_id (+ ids in payload, as CMPL) */
	DNP_PKT_COLL = 10,    /* a collective's data between daemons (coll.h, docs/protocol.md) */
};

/*
 * CMPL status answering a QUERY: the target never applied the message and
 * never will (docs/protocol.md, "Outcome queries"). Not an errno (< 256).
 */
#define DNP_CMPL_NOT_DELIVERED 255u
/*
 * Status byte of a PUT or SEND packet (0 otherwise): the message is sent
 * again after its target answered DNP_CMPL_NOT_DELIVERED (docs/protocol.md,
 * "Outcome queries").
 */
#define DNP_PKT_RETRY 1u

/* Reserved bits of the footer's via code (route.h: DNP_VIA_RSVD). */
#define DNP_PKT_VIA_RSVD 0x3000u

/* H0 flags */
#define DNP_PKT_F_FIRST 0x1u /* first fragment of a message */
#define DNP_PKT_F_LAST 0x2u  /* last fragment of a message */

/* Link word flags */
#define DNP_LINK_F_SEQ 0x1u /* frame carries a sequenced packet (seq valid) */
/*
 * CREDIT frames only: a link reset frame (docs/protocol.md, "Link epochs"):
 * epoch is the proposed or agreed epoch, credit[0..1].occupancy the sender's
 * RX FIFO occupancies of VCs 0 and 1, credit[0].received its incarnation
 * nonce and credit[1].received DNP_RESET_* flags. Its payload is the hello
 * below, never credits (credit[2..3] decode as zero whatever the sender's VC
 * count).
 */
#define DNP_LINK_F_RESET 0x2u
#define DNP_RESET_ANNOUNCE 0x1u /* the sender is UP in 'epoch' (else it is still probing) */
/*
 * The sender is stopping (an orderly shutdown, docs/protocol.md "Link
 * epochs"): the receiver takes the link as BROKEN at once, as if its credit
 * timeout had expired, and says the neighbour left rather than failed.
 */
#define DNP_RESET_LEAVING 0x2u
/*
 * The payload of a RESET frame is the sender's hello (struct dnp_pkt_hello):
 * DNP_HELLO_BYTES in versions 1 and 2, up to DNP_HELLO_MAX_BYTES for later versions
 * (a multiple of 16); a RESET frame of an older SoftDNP has none. Never one
 * word: that is the credit payload, which a RESET frame does not carry.
 */
#define DNP_HELLO_BYTES 32u
#define DNP_HELLO_MAX_BYTES 64u
#define DNP_HELLO_MAGIC 0x4c48u /* "HL" on the wire */
/*
 * 2: CREDIT frames carry buffer credits in the footer's timestamp field
 * (struct dnp_credit_vc.bufs); a peer of version 1 reads them as a time
 * stamp and would overrun our buffers, so it is refused at the handshake.
 */
#define DNP_HELLO_VERSION 2u
/*
 * CREDIT frames only, never with DNP_LINK_F_RESET: the frame carries a
 * selective ack (struct dnp_pkt_hdr.sack, non-zero) in the two fields a
 * CREDIT frame has no use for, H0 msg_id (bits 0-31) and the footer's
 * msg_len (bits 32-63). Bit i set: the sender holds frame ack + 1 + i,
 * received beyond the gap at ack (docs/protocol.md, "Selective acks").
 */
#define DNP_LINK_F_SACK 0x4u

/* Footer status bits */
#define DNP_FT_RETX 0x1u /* this transmission is a retransmission */
/*
 * Congestion mark (docs/protocol.md, "Congestion marks"): on a PUT or SEND
 * packet, a router on the way found the VC it took filled above the
 * congestion threshold; on a CMPL packet, the echo of such a mark to the
 * sender (routers never mark CMPL packets). Carried from hop to hop.
 */
#define DNP_FT_CE 0x10u
/*
 * Bits 1-3: the packet's traffic class, 0 (lowest) .. 7 (top), set at
 * injection from the command's class (a GET response takes its request's)
 * and kept on every hop, so each router arbitrates by it (docs/protocol.md,
 * "Traffic classes"). CREDIT frames carry none.
 */
#define DNP_FT_TC_MASK 0x0eu
#define DNP_FT_TC_SHIFT 1u

/* Footer status bits for class tc (0..7). */
static inline uint8_t dnp_ft_tc(unsigned tc)
{
	return (uint8_t)((tc << DNP_FT_TC_SHIFT) & DNP_FT_TC_MASK);
}

struct dnp_credit_vc {
	uint32_t occupancy; /* words in the RX FIFO of this VC when the credit was latched */
	uint32_t received;  /* cumulative words accepted on this VC (wraps) */
	/*
	 * Buffer credit (docs/protocol.md, "Buffer credits"): packet buffers
	 * the receiver still backs on this VC for frames of at least
	 * DNP_BUF_MIN_WORDS words, latched with the two fields above, or
	 * DNP_BUFS_NONE (it counts no buffers: word credit alone). On the wire
	 * byte vc of a CREDIT frame's footer timestamp field (RESET frames
	 * included): the sender sets the timestamp to
	 * dnp_pkt_credit_stamp(credit), decode fills bufs from it.
	 */
	uint8_t bufs;
};
/* Frames of more than 256 bytes (17 words and up) take a buffer credit. */
#define DNP_BUF_MIN_WORDS 17u
#define DNP_BUFS_MAX 254u  /* the most buffers a receiver backs per VC */
#define DNP_BUFS_NONE 255u /* "I count no buffers" */

/* Decoded view of a frame's link word, header and footer. */
struct dnp_pkt_hdr {
	/* link word */
	uint8_t lflags;  /* DNP_LINK_F_* */
	uint8_t src_dir; /* sender's output direction (diagnostic) */
	uint8_t epoch;   /* link epoch of the sender (0: none yet) */
	uint32_t seq;    /* link sequence number, valid if DNP_LINK_F_SEQ */
	uint32_t ack;    /* cumulative ack: next seq expected from the peer */
	uint64_t
		sack; /* CREDIT with DNP_LINK_F_SACK: frames held beyond ack (bit i: ack + 1 + i) */
	/* H0 */
	struct dnp_coord dst, src;
	uint8_t dst_port, src_port;
	uint8_t kind;   /* enum dnp_pkt_kind */
	uint8_t vc;     /* < DNP_MAX_VC */
	uint8_t flags;  /* DNP_PKT_F_* */
	uint8_t status; /* CMPL: positive errno of the remote outcome, 0 = success */
	uint16_t len;   /* payload bytes, 0..4096 */
	uint32_t msg_id;
	/*
	 * H1 (for CREDIT frames: credit[0..1] instead; credit[2..3] travel in
	 * the payload when len == DNP_CREDIT_EXT_BYTES, else they are zero)
	 */
	uint64_t va;
	uint32_t key;
	uint32_t offset; /* byte offset of this fragment in its message */
	struct dnp_credit_vc credit[DNP_MAX_VC];
	/* footer */
	uint8_t fstatus; /* DNP_FT_* */
	uint8_t hops;
	uint16_t via;       /* route through an intermediate node (route.h), 0 if direct */
	uint32_t timestamp; /* injection time, low 32 bits of the sender's clock */
	uint32_t msg_len;   /* total message length in bytes */
};

/* The timestamp field of a CREDIT frame: credit[vc].bufs in byte vc. */
static inline uint32_t dnp_pkt_credit_stamp(const struct dnp_credit_vc *credit)
{
	return (uint32_t)credit[0].bufs | (uint32_t)credit[1].bufs << 8 |
	       (uint32_t)credit[2].bufs << 16 | (uint32_t)credit[3].bufs << 24;
}

/* The traffic class a header carries in its footer status. */
static inline unsigned dnp_pkt_tc(const struct dnp_pkt_hdr *h)
{
	return (h->fstatus & DNP_FT_TC_MASK) >> DNP_FT_TC_SHIFT;
}

/*
 * The hello of a RESET frame (docs/protocol.md, "The link handshake"): what
 * the two ends of a link must agree on before it comes UP. The sender's
 * coordinates and output direction are those of H0 src and the link word's
 * src_dir of the same frame.
 */
struct dnp_pkt_hello {
	uint8_t version;     /* DNP_HELLO_VERSION */
	uint8_t transport;   /* kind of transport under the link (link.h, DNP_XPORT_*) */
	uint16_t dim[3];     /* the torus size the sender was started with */
	uint8_t nvc;         /* virtual channels per link */
	uint8_t vc_mode;     /* enum dnp_vc_mode (route.h) */
	uint32_t fifo_words; /* RX FIFO depth per VC, words (what credits count against) */
	uint16_t max_frame;  /* largest frame it sends and takes, bytes (DNP_MAX_FRAME) */
	/*
	 * enum dnp_routing (route.h): 0 is DOR, which is what the zero byte of
	 * a hello written before this field existed says.
	 */
	uint8_t routing;
};

/*
 * A CMPL frame reports msg_id and, in its payload, up to DNP_CMPL_MAX_EXTRA
 * further message ids (u32, little-endian) of the same destination node and
 * port with the same status: len is a multiple of 4, at most
 * DNP_CMPL_MAX_EXTRA * 4 (a whole frame of 256 bytes).
 */
#define DNP_CMPL_MAX_EXTRA 48u

/* Payload of a GET request (16 bytes, little-endian). */
struct dnp_get_desc {
	uint64_t dst_va;  /* requester's buffer */
	uint32_t dst_key; /* requester's key for dst_va */
	uint32_t len;
};
#define DNP_GET_DESC_BYTES 16u

/* Frame size for a payload of len bytes (len <= 4096). */
static inline size_t dnp_pkt_frame_len(size_t len)
{
	return DNP_FRAME_OVERHEAD + ((len + 15u) & ~(size_t)15u);
}

/* Frame size in 16-byte words (what link credits count). */
static inline uint32_t dnp_pkt_frame_words(size_t len)
{
	return (uint32_t)(dnp_pkt_frame_len(len) / DNP_WORD_BYTES);
}

/*
 * Payload length of a CREDIT frame sent by a link with nvc VCs: 0 for up to
 * two VCs (the two-VC format), DNP_CREDIT_EXT_BYTES above.
 */
static inline uint16_t dnp_pkt_credit_len(unsigned nvc)
{
	return nvc > DNP_H1_VCS ? DNP_CREDIT_EXT_BYTES : 0;
}

/*
 * Encodes h and payload (h->len bytes) into frame, computes the CRC.
 * A CREDIT frame's payload (len 0 or DNP_CREDIT_EXT_BYTES) is made from
 * h->credit[2..3]; the payload argument is then ignored and may be NULL.
 * A RESET frame's (its hello) is taken from the payload argument.
 * Returns the frame length, or -EINVAL (bad field), -E2BIG (len > 4096),
 * -ENOBUFS (cap too small).
 */
int dnp_pkt_encode(const struct dnp_pkt_hdr *h, const void *payload, void *frame, size_t cap);

/*
 * The same, but the CRC field is left zero: for a frame that will be sealed
 * by dnp_pkt_restamp (which computes the CRC) before it leaves the node, so
 * that its CRC is computed once, not twice. Such a frame does not decode.
 * payload may already sit in place (frame + 48): it is then not copied.
 */
int dnp_pkt_encode_unsealed(const struct dnp_pkt_hdr *h, const void *payload, void *frame,
			    size_t cap);

/*
 * Validates frame[0..len) and decodes it. On success *payload points into
 * frame. The CRC is checked as soon as the buffer has a plausible size, so
 * any corruption of a well-sized frame is -EILSEQ; then each class of
 * malformed frame has its own error:
 *   -ENODATA   shorter than 64 bytes
 *   -EPROTO    bad magic
 *   -EPROTONOSUPPORT unknown version
 *   -EMSGSIZE  length field, payload length and buffer length disagree
 *   -E2BIG     payload length above 4096
 *   -EBADMSG   unknown kind
 *   -ERANGE    VC >= DNP_MAX_VC (unreachable while the 2-bit VC field
 *              encodes exactly DNP_MAX_VC values: the receiving link drops
 *              a VC beyond its own count)
 *   -EINVAL    reserved bits or padding not zero, flags invalid for the kind
 *              (a CREDIT frame with a payload other than 0 or 16 bytes, a
 *              RESET frame with one other than 0 or 32-64 bytes in words)
 *   -EOVERFLOW fragment offset/length inconsistent with the message length
 *   -EILSEQ    CRC mismatch (the footer's CRC over the buffer as given)
 */
int dnp_pkt_decode(const void *frame, size_t len, struct dnp_pkt_hdr *h, const uint8_t **payload);

/*
 * Rewrites the per-hop fields of an already encoded frame (link flags, seq,
 * ack, src_dir, footer status, hops) and updates its CRC for them (a sealed
 * frame of 1 KiB or more), or computes it over the frame ("Sealing" above);
 * the result is the same either way. The frame must
 * have been produced by dnp_pkt_encode. Returns 0 or -EINVAL (also when
 * lflags would add DNP_LINK_F_SACK to a frame without a selective ack, or
 * drop it from one that has one: the sack itself is not restamped).
 */
int dnp_pkt_restamp(void *frame, size_t len, uint8_t lflags, uint32_t seq, uint32_t ack,
		    uint8_t src_dir, uint8_t fstatus, uint8_t hops);

/*
 * Sets byte off (< 48: link word or header) of an encoded frame to val and
 * keeps its CRC field what "Sealing" above says it is: a sealed frame's CRC
 * is updated for the change (no pass over the payload).
 */
void dnp_pkt_edit_sealed(uint8_t *frame, unsigned off, uint8_t val);

/*
 * Sets the VC of an encoded frame (H0 byte 8, bits 4-5); a sealed frame's
 * CRC is kept right (dnp_pkt_edit_sealed), the caller restamps it anyway
 * before sending it.
 */
static inline void dnp_pkt_set_vc(uint8_t *frame, unsigned vc)
{
	const unsigned off = DNP_WORD_BYTES + 8;
	uint8_t b = (uint8_t)((frame[off] & ~0x30u) | ((vc & 3u) << 4));

	if (b != frame[off])
		dnp_pkt_edit_sealed(frame, off, b);
}

/* Writes h as a hello payload of DNP_HELLO_BYTES (version, magic and reserved bytes set). */
void dnp_pkt_hello_encode(const struct dnp_pkt_hello *h, uint8_t out[DNP_HELLO_BYTES]);

/*
 * Parses the payload of a RESET frame (len bytes; the frame decoded) into h.
 * Errors: -ENODATA no payload (an older SoftDNP, h zeroed), -EPROTO bad
 * magic, -EPROTONOSUPPORT another version (h->version says which, the rest
 * zero), -EINVAL a version 1 hello of another length or with reserved bytes
 * not zero. Pure; any bytes are safe.
 */
int dnp_pkt_hello_decode(const uint8_t *payload, size_t len, struct dnp_pkt_hello *h);

/* Short name of a kind ("PUT", ...) or "?". */
const char *dnp_pkt_kind_name(unsigned kind);

/*
 * Sets the link epoch of an encoded frame (link word byte 15); like
 * dnp_pkt_set_vc, a sealed frame's CRC is kept right.
 */
static inline void dnp_pkt_set_epoch(uint8_t *frame, uint8_t epoch)
{
	if (frame[15] != epoch)
		dnp_pkt_edit_sealed(frame, 15, epoch);
}

/*
 * Marks an encoded frame of len bytes (>= DNP_FRAME_OVERHEAD) unsealed: its
 * CRC field (the footer's first four bytes) becomes zero, so the next
 * dnp_pkt_restamp computes the CRC over the whole frame as it stands. For a
 * frame whose payload was written afresh after its header (one pass,
 * engine.h: conf.tx_direct).
 */
static inline void dnp_pkt_unseal(uint8_t *frame, size_t len)
{
	uint8_t *crc = frame + len - DNP_WORD_BYTES;

	crc[0] = crc[1] = crc[2] = crc[3] = 0;
}

/*
 * Per-run header template (docs/performance.md, "Sender, per-run header
 * template"): a run of data packets (PUT, SEND, GET_REQ, GET_RESP) that
 * share every header field except those of struct dnp_pkt_var. The link
 * word, H0, H1 and the footer are encoded and checked once
 * (dnp_pkt_tmpl_init); each packet then copies them and patches its own
 * fields (dnp_pkt_tmpl_encode). The frame is the one dnp_pkt_encode_unsealed
 * makes for the same header, byte for byte (tests/test_engine_seal.c).
 */
struct dnp_pkt_tmpl {
	struct dnp_pkt_hdr h;          /* the run's header (its own fields as init found them) */
	uint8_t head[DNP_PAYLOAD_OFF]; /* link word, H0, H1 */
	uint8_t foot[DNP_WORD_BYTES];  /* footer, CRC field zero */
};

/* The fields of a packet its run's template does not fix. */
struct dnp_pkt_var {
	uint64_t va;
	uint32_t msg_id;
	uint32_t key;
	uint32_t offset;
	uint32_t msg_len;
	uint32_t timestamp; /* the footer's: injection time */
	uint16_t len;
	uint8_t flags; /* DNP_PKT_F_* */
};

/*
 * Makes t from h (its dnp_pkt_var fields are ignored): every rule of
 * dnp_pkt_encode that does not depend on those fields is checked here,
 * once. Returns 0, or -EINVAL (not a data kind of the list above, a field
 * the encoder refuses, or DNP_LINK_F_SEQ missing).
 */
int dnp_pkt_tmpl_init(struct dnp_pkt_tmpl *t, const struct dnp_pkt_hdr *h);

/*
 * Encodes one packet of t's run into frame, unsealed (CRC field zero), with
 * its payload (v->len bytes) already in place at frame + 48; h, if not
 * NULL, gets the packet's header (t's with v's fields). The rules that
 * depend on v are checked per packet (length, flags, fragment bounds, a
 * GET request's length). Returns the frame length, or -E2BIG (len > 4096),
 * -EINVAL (a rule), -ENOBUFS (cap too small).
 */
int dnp_pkt_tmpl_encode(const struct dnp_pkt_tmpl *t, const struct dnp_pkt_var *v,
			struct dnp_pkt_hdr *h, void *frame, size_t cap);

/* What a run of sequenced frames sent on one link shares in its link word. */
struct dnp_pkt_stamp {
	uint32_t ack;
	uint8_t src_dir;
	uint8_t epoch;
};

/*
 * Seals a sequenced frame for the wire: the same bytes as
 * dnp_pkt_set_epoch(frame, st->epoch) followed by dnp_pkt_restamp(frame,
 * len, DNP_LINK_F_SEQ, seq, st->ack, st->src_dir, fstatus, hops), in one
 * step (one CRC over a small or unsealed frame, an update for a large
 * sealed one). Returns 0 or -EINVAL (as dnp_pkt_restamp: not a frame of
 * ours, a CREDIT frame, a bad src_dir or fstatus); on -EINVAL the frame is
 * unchanged.
 */
int dnp_pkt_seal_seq(void *frame, size_t len, const struct dnp_pkt_stamp *st, uint32_t seq,
		     uint8_t fstatus, uint8_t hops);

#endif
