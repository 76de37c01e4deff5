/* SPDX-License-Identifier: MIT */
/*
 * dnp_abi.h — what crosses shared memory between libdnp and dnpd: the
 * command slot (64 bytes, four 16-byte words), the completion event (32 bytes,
 * two words) and the buffer flags. Fixed-width little-endian fields, explicit
 * padding, static_assert on sizes. The session layout (rings, heap, magic and
 * version word) is in dnp_session.h.
 *
 * As in the DNP's TX ring (EURETILE report, TX acceleration), a command
 * carries the packet Header and Footer material (destination, remote address,
 * key) and CMD0 (local DMA: local address and length) and CMD1 (completion:
 * the cookie returned in the event). Every command ends in exactly one
 * completion event (DNP_EV_TX_DONE, DNP_EV_GET_DONE or DNP_EV_ERROR), which
 * DNP_CMD_F_NO_EVENT leaves out when the command succeeds; DNP_CMD_F_SRC_EVENT
 * adds one earlier event, DNP_EV_TX_READ, that is never a completion.
 */
#ifndef DNP_ABI_H
#define DNP_ABI_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum dnp_op {
	DNP_OP_PUT = 1,  /* local [local_va, +len) -> remote PUT-target buffer at remote_va */
	DNP_OP_SEND = 2, /* local [local_va, +len) -> remote port's next SEND-target buffer */
	DNP_OP_GET =
		3, /* remote GET-source [remote_va, +len) -> local PUT-target buffer at local_va */
};

/*
 * Command flags (docs/api.md, "Events and flags"). The daemon refuses a
 * command with any other bit set (DNP_EV_ERROR -EINVAL).
 *
 * DNP_CMD_F_NO_EVENT: no completion event when the command succeeds, like
 * the DNP's dummy CMD1 (EURETILE report, TX acceleration); a failure still
 * ends it with DNP_EV_ERROR. Any op.
 * DNP_CMD_F_SRC_EVENT: PUT and SEND only (GET: -EINVAL). DNP_EV_TX_READ once
 * the daemon has copied the whole source out of the application's memory,
 * before the completion; see DNP_EV_TX_READ.
 */
#define DNP_CMD_F_NO_EVENT 0x1u
#define DNP_CMD_F_SRC_EVENT 0x2u
/*
 * DNP_CMD_F_INLINE: a PUT whose payload (len <= DNP_CMD_INLINE_MAX bytes)
 * travels in the slot itself, in the fields an inline PUT does not need
 * (dnp_cmd_inline_set): the daemon never reads application memory for it,
 * and its events carry va 0. PUT only, and not with SRC_EVENT (there is no
 * source to give back): -EINVAL.
 */
#define DNP_CMD_F_INLINE 0x4u
#define DNP_CMD_F_ALL 0x7u /* every flag the daemon knows */

/*
 * Traffic classes (docs/api.md, "Traffic classes"): struct dnp_cmd.tc, 0 the
 * lowest .. DNP_TC_MAX the top. A daemon with arbitration on serves a higher
 * class first at injection and at every router output; with it off (the
 * default) the class travels but changes nothing.
 */
#define DNP_TC_MAX 7u
#define DNP_TC_LEVELS 8u

struct dnp_cmd {
	/* word 0: Header — where the packets go */
	uint8_t op;       /* enum dnp_op; bit 7 is the command ring's full bit (ring.h) */
	uint8_t flags;    /* DNP_CMD_F_* */
	uint8_t dst_port; /* destination port on the remote node */
	uint8_t src_port; /* filled by the daemon from the session; ignored from apps */
	uint8_t dst_x, dst_y, dst_z;
	uint8_t tc;          /* traffic class, 0 (lowest) .. DNP_TC_MAX (top); above: -EINVAL */
	uint32_t remote_key; /* key of the remote buffer (PUT target / GET source); SEND: 0 */
	uint8_t cntr;   /* 0, or 1 + the completion counter this command bumps (DNP_CNTR_MAX) */
	uint8_t rsvd1b; /* 0 */
	uint16_t rsvd1;
	/* word 1: Footer — remote address and length */
	uint64_t remote_va; /* PUT/GET: remote address; SEND: ignored */
	uint64_t len;       /* bytes, 0 .. DNP_MAX_MSG */
	/* word 2: CMD0 — the local side of the transfer */
	uint64_t local_va; /* PUT/SEND: source; GET: destination (a PUT-target buffer) */
	union {
		uint32_t local_key;  /* GET: key of the local destination buffer */
		uint32_t coll_param; /* collectives: DNP_COLL_PARAM(redop, dtype, root) */
	};
	uint32_t rsvd2;
	/* word 3: CMD1 — completion */
	uint64_t cookie; /* returned in the completion event */
	uint64_t rsvd3;
};
static_assert(sizeof(struct dnp_cmd) == 64, "command slot is four 16-byte words");

/*
 * Completion counters (docs/api.md, "Completion counters"): each port has
 * DNP_CNTR_MAX counters, each a count of successes and one of errors. A
 * command whose 'cntr' is 1 + i bumps counter i when it ends: 'ok' when it
 * succeeded (with or without its completion event), 'err' when it failed.
 * The daemon keeps the counts and publishes them in the session memory
 * (struct dnp_sess_cntr, dnp_session.h); it never reads them back.
 */
#define DNP_CNTR_MAX 64u

/*
 * Inline PUT payload (DNP_CMD_F_INLINE): bytes [0, 16) in word 2 (local_va,
 * local_key, rsvd2), bytes [16, 24) in rsvd3; unused bytes are 0. Both
 * sides go through these two helpers, so the layout is in one place.
 */
#define DNP_CMD_INLINE_MAX 24u
static_assert(offsetof(struct dnp_cmd, rsvd2) + 4 == offsetof(struct dnp_cmd, cookie) &&
		      offsetof(struct dnp_cmd, local_va) + 16 == offsetof(struct dnp_cmd, cookie),
	      "word 2 is local_va, local_key, rsvd2");

static inline void dnp_cmd_inline_set(struct dnp_cmd *c, const void *src, size_t len)
{
	uint8_t *w2 = (uint8_t *)c + offsetof(struct dnp_cmd, local_va);
	uint8_t *w3 = (uint8_t *)c + offsetof(struct dnp_cmd, rsvd3);
	size_t a = len < 16 ? len : 16;

	memset(w2, 0, 16);
	memset(w3, 0, 8);
	memcpy(w2, src, a);
	if (len > a)
		memcpy(w3, (const uint8_t *)src + a, len - a);
}

static inline void dnp_cmd_inline_get(const struct dnp_cmd *c, void *dst, size_t len)
{
	const uint8_t *w2 = (const uint8_t *)c + offsetof(struct dnp_cmd, local_va);
	const uint8_t *w3 = (const uint8_t *)c + offsetof(struct dnp_cmd, rsvd3);
	size_t a = len < 16 ? len : 16;

	memcpy(dst, w2, a);
	if (len > a)
		memcpy((uint8_t *)dst + a, w3, len - a);
}
/*
 * Collectives run by the daemons (docs/api.md, "Collectives"; the engine's
 * dnp-core/coll.h). Ops from 8 upward; each ends in one completion event
 * (DNP_EV_TX_DONE with the op, or DNP_EV_ERROR), none on success with
 * DNP_CMD_F_NO_EVENT; DNP_CMD_F_SRC_EVENT is refused. Fields of a
 * collective command: remote_key = the group id (non-zero, the same on every
 * member); coll_param = DNP_COLL_PARAM(redop, dtype, root) (it shares its
 * word with local_key, which a collective does not use); dst_*, dst_port, tc,
 * cntr (no class, no completion counter for a collective), rsvd1b, rsvd1,
 * rsvd2 and rsvd3 zero.
 *   JOIN       local_va/len: the members, struct dnp_coll_member[len / 4]
 *   LEAVE      nothing more
 *   ALLREDUCE  local_va: source, remote_va: result (may be the same), len
 *   BARRIER    len 0, no addresses
 *   BCAST      local_va/len: the root's source, every other member's result
 */
#define DNP_OP_COLL_JOIN 8u
#define DNP_OP_COLL_LEAVE 9u
#define DNP_OP_ALLREDUCE 10u
#define DNP_OP_BARRIER 11u
#define DNP_OP_BCAST 12u

enum dnp_coll_redop {
	DNP_RED_SUM = 1,
	DNP_RED_MIN = 2,
	DNP_RED_MAX = 3,
	DNP_RED_BAND = 4, /* integers only */
	DNP_RED_BOR = 5,  /* integers only */
};
enum dnp_coll_dtype {
	DNP_TYPE_INT32 = 1,
	DNP_TYPE_INT64 = 2,
	DNP_TYPE_FLOAT = 3,
	DNP_TYPE_DOUBLE = 4,
};
#define DNP_COLL_PARAM(redop, dtype, root) \
	((uint32_t)(redop) | (uint32_t)(dtype) << 8 | (uint32_t)(root) << 16)
#define DNP_COLL_REDOP(param) ((param)&0xffu)
#define DNP_COLL_DTYPE(param) (((param) >> 8) & 0xffu)
#define DNP_COLL_ROOT(param) ((param) >> 16)

/* A member of a group: a port on a node. */
struct dnp_coll_member {
	uint8_t x, y, z, port;
};
static_assert(sizeof(struct dnp_coll_member) == 4, "a member is one 32-bit word");
#define DNP_COLL_MAX_MEMBERS 4096u
/* largest ALLREDUCE or BCAST (-EMSGSIZE above); above 16 KiB they are pipelined (coll.h) */
#define DNP_COLL_MAX_BYTES (4u << 20)

#define DNP_MAX_MSG 0xffffffffull /* messages up to 4 GiB - 1 (32-bit lengths in events) */

enum dnp_ev_type {
	DNP_EV_TX_DONE = 1,  /* PUT or SEND completed at the target (status 0) */
	DNP_EV_RX_PUT = 2,   /* a PUT message was written into one of our buffers */
	DNP_EV_RX_SEND = 3,  /* a SEND message arrived in one of our SEND-target buffers */
	DNP_EV_GET_DONE = 4, /* our GET's data is in our buffer */
	DNP_EV_ERROR = 5,    /* a command failed (status < 0), or an RX-side error report */
	DNP_EV_LINK = 6,     /* a link changed state: len = direction, status = -ENOLINK when
	                      * broken, 0 when UP again (docs/protocol.md, "Link epochs") */
	/*
	 * A message for us failed on arrival (status < 0; it is no completion of
	 * ours): a SEND whose rest never came (-ETIMEDOUT). va = the SEND-target
	 * buffer it had taken, back at the head of the port's SEND queue; len =
	 * the message length; port/peer_* = its sender.
	 */
	DNP_EV_RX_ERROR = 7,
	/*
	 * The daemon had events for this port and no room for them in the
	 * event ring: len = how many were lost since the last report
	 * (saturating at UINT32_MAX), status = -EOVERFLOW. Sent once room returns,
	 * before any newer event. dnpd holds its own events rather than lose
	 * them, so this reports a broken session (docs/security.md).
	 */
	DNP_EV_OVERFLOW = 8,
	/*
	 * The source of a PUT or SEND that asked for it (DNP_CMD_F_SRC_EVENT)
	 * has been read whole: every byte is in the daemon's hands, and the
	 * application may reuse the buffer. Not a completion: the command
	 * still ends in its one completion event (TX_DONE or ERROR; none on
	 * success with DNP_CMD_F_NO_EVENT), which always comes after it. At
	 * most one per command, and none when the command ended before its
	 * source was read whole (the completion then frees the buffer).
	 * Fields as in a completion (op, port, peer_*, msg_id, len, va =
	 * local_va, cookie), status 0, data DNP_DATA_UNKNOWN.
	 */
	DNP_EV_TX_READ = 9,
};
static_assert(DNP_OP_GET < 0x80 && DNP_EV_TX_READ < 0x80,
	      "ops and event types leave bit 7 of byte 0 to the rings");

struct dnp_event {
	/* word 0 */
	uint8_t type; /* enum dnp_ev_type; bit 7 is the event ring's full bit (ring.h) */
	uint8_t op;   /* the command's op (completions/errors) or the packet's */
	uint8_t port; /* the peer's port */
	union {
		uint8_t hops; /* RX events: hop count of the (last) packet */
		uint8_t data; /* completions and errors: enum dnp_ev_data */
	};
	uint8_t peer_x, peer_y, peer_z;
	int8_t status; /* 0 or a negative errno */
	uint32_t msg_id;
	uint32_t len; /* message length in bytes */
	/* word 1 */
	uint64_t va;     /* RX: first byte written; completions: the command's local_va */
	uint64_t cookie; /* completions: the command's cookie; RX: 0 */
};
static_assert(sizeof(struct dnp_event) == 32, "event is two 16-byte words");
static_assert(offsetof(struct dnp_event, data) == 3 && offsetof(struct dnp_event, hops) == 3,
	      "data shares byte 3 with hops");

/*
 * What a command's completion event says happened to its data (field
 * 'data'; docs/api.md, "What happened to the data"). For a PUT or SEND, the
 * target's buffer; for a GET, our local buffer. UNKNOWN is also what a
 * daemon older than the field writes (byte 3 was 0 in completions).
 */
enum dnp_ev_data {
	DNP_DATA_UNKNOWN = 0,       /* no answer could be had: all, part or none is there */
	DNP_DATA_DELIVERED = 1,     /* every byte was written (TX_DONE, GET_DONE) */
	DNP_DATA_NOT_DELIVERED = 2, /* the message was not taken: none of it, or a part a
				     * retry overwrites; the command can be submitted again */
};

#define DNP_BUF_PUT_TARGET 0x1u  /* remote PUT / GET response may write it */
#define DNP_BUF_SEND_TARGET 0x2u /* SEND messages land in it, in registration order */
#define DNP_BUF_GET_SOURCE 0x4u  /* remote GET may read it */
#define DNP_BUF_ALL 0x7u
/*
 * dnp_register only (libdnp): fault the pages in before registering (a
 * proactive page-in). Never sent to the daemon: the ABI is unchanged.
 */
#define DNP_BUF_POPULATE 0x8u

#endif
