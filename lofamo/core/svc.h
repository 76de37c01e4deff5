/* SPDX-License-Identifier: MIT */
/*
 * svc — the LO|FA|MO service-network protocol: UDP datagrams between each
 * node's Host Fault Manager and the Fault Supervisor, separate from the
 * torus data path (EURETILE report, LO|FA|MO: service network).
 *
 *   HFM -> supervisor   HEALTH  every T_write, and at once when an alarm is
 *                               raised: the Host Watchdog status, the last
 *                               DNP Watchdog status and whether the DNP
 *                               validated it, the Remote Fault Descriptors,
 *                               and every alarm not yet acknowledged (oldest
 *                               first, at most DNP_SVC_MAX_ALARMS)
 *   supervisor -> HFM   ACK     answers every HEALTH: alarms up to 'ack' (cumulative id)
 *                               of the HFM incarnation it names
 *   dnpctl -> supervisor STATUS asks for the picture (map, JSON or event log),
 *                               whole (one TEXT) or, with DNP_SVC_Q_PAGED, the
 *                               page at byte 'offset'
 *   supervisor -> dnpctl TEXT   the whole answer in one datagram; a picture
 *                               larger than DNP_SVC_TEXT_MAX is never cut
 *                               mid-token: the answer then says to ask in pages
 *   supervisor -> dnpctl PAGE   one page of a picture rendered once (snapshot
 *                               'snap', 'total' bytes); struct dnp_svc_pages
 *                               asks for and joins the pages
 *   group -> top         AGG    in a hierarchy (docs/lofamo.md, "A hierarchy of
 *                               supervisors"): a group supervisor's compact
 *                               report of its nodes, the changed ones at once
 *                               and all of them every digest period, with the
 *                               HFM alarms it took; the top answers with an
 *                               ACK (node: the group's first node, ack: the
 *                               last group alarm id taken, incarnation: the
 *                               group supervisor's)
 *
 * Incarnations: an HFM draws a random non-zero incarnation id at start and
 * sends it in every HEALTH. Its alarm ids count from 1 in each incarnation,
 * so a new incarnation tells the supervisor to forget the old alarm counter;
 * an ACK names the incarnation it acknowledges, so an ACK meant for a
 * predecessor never clears a newer HFM's alarms.
 *
 * All fields little-endian, a 16-byte header (magic, version, type, node,
 * seq). Pure functions on caller buffers (the page assembler alone allocates
 * its picture); any thread. Datagrams come from
 * the network: dnp_svc_decode checks every length and field.
 */
#ifndef DNP_SVC_H
#define DNP_SVC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lofamo_abi.h"

#define DNP_SVC_MAGIC 0x5653464cu /* "LFSV" */
#define DNP_SVC_VERSION 1u
#define DNP_SVC_MAX_ALARMS 8u
#define DNP_SVC_TEXT_MAX 60000u
#define DNP_SVC_TAG 8u /* SipHash-2-4 tag under the cluster key (dnp_svc_sign) */
#define DNP_SVC_MAX_DGRAM (16u + DNP_SVC_TEXT_MAX + DNP_SVC_TAG)
#define DNP_SVC_PAGE_HDR 16u /* snap, offset, total, reserved */
#define DNP_SVC_PAGE_MAX (DNP_SVC_TEXT_MAX - DNP_SVC_PAGE_HDR)

enum dnp_svc_type {
	DNP_SVC_HEALTH = 1,
	DNP_SVC_ACK = 2,
	DNP_SVC_STATUS = 3,
	DNP_SVC_TEXT = 4,
	DNP_SVC_PAGE = 5,
	DNP_SVC_AGG = 6,
};

/* What an HFM alarm is about. */
enum dnp_svc_alarm_kind {
	DNP_SVC_AL_DNP = 1,    /* level 1: the DNP missed its watchdog (omission), 0: back */
	DNP_SVC_AL_LINK = 2,   /* subject dir, level enum dnp_lfm_link */
	DNP_SVC_AL_SENSOR = 3, /* subject sensor, level enum dnp_lfm_level */
	DNP_SVC_AL_REMOTE = 4, /* subject dir, level enum dnp_lfm_rfd_kind, node: the neighbour */
	DNP_SVC_AL_HOST = 5,   /* subject enum dnp_lfm_hdev, level enum dnp_lfm_level */
	DNP_SVC_AL_MAX = 5,
};

struct dnp_svc_alarm {
	uint32_t id; /* per HFM, from 1, increasing */
	uint8_t kind, subject, level;
	uint32_t node;
};

/* HEALTH flags */
#define DNP_SVC_F_DNP_ALIVE 0x1u /* the DNP validated its register at the last read */
#define DNP_SVC_F_DNP_SEEN 0x2u  /* the register block exists and was validated once */

/* STATUS flags */
#define DNP_SVC_Q_JSON 0x1u
#define DNP_SVC_Q_COLOUR 0x2u
#define DNP_SVC_Q_LOG 0x4u
#define DNP_SVC_Q_PAGED 0x8u /* answer with the PAGE at 'offset' */

struct dnp_svc_msg {
	uint8_t type;
	uint32_t node, seq;
	union {
		struct {
			uint64_t host_status, dnp_status;
			uint32_t flags;
			uint16_t t_write_ms, t_read_ms;
			uint32_t epoch;
			uint32_t incarnation; /* the HFM's, random, non-zero (0: an old HFM) */
			uint64_t rfd[DNP_LFM_NDIRS];
			unsigned nalarm;
			struct dnp_svc_alarm alarm[DNP_SVC_MAX_ALARMS];
		} health;
		struct {
			uint32_t ack;
			uint32_t incarnation; /* of the HEALTH it answers */
		} ack;
		struct {
			uint32_t flags;
			uint32_t offset; /* with DNP_SVC_Q_PAGED: the first byte wanted */
		} status;
		struct {
			const char *text; /* points into the datagram; not NUL-terminated */
			size_t len;
		} text;
		struct {
			uint32_t count;       /* nodes of the group, from the header's node */
			uint32_t incarnation; /* the group supervisor's, random, non-zero */
			uint32_t first_alarm; /* id of the first alarm carried (0: none) */
			uint8_t flags;        /* DNP_SVC_AGG_F_* */
			unsigned nalarm, nrec;
			const uint8_t *body; /* alarms, then records, as on the wire (checked) */
			size_t body_len;
		} agg;
		struct {
			uint32_t snap;    /* the rendering this page belongs to */
			uint32_t offset;  /* of its first byte in the whole picture */
			uint32_t total;   /* bytes of the whole picture */
			const char *text; /* points into the datagram; not NUL-terminated */
			size_t len;       /* <= DNP_SVC_PAGE_MAX */
		} page;
	} u;
};

/* Returns the datagram length, or -ENOBUFS (cap too small), -EINVAL (bad field). */
int dnp_svc_encode(const struct dnp_svc_msg *m, void *buf, size_t cap);
/* 0, or -EBADMSG (length, magic, version, type, counts, reserved bytes or kinds). */
int dnp_svc_decode(const void *buf, size_t len, struct dnp_svc_msg *m);

/*
 * AGG, a group supervisor's report to the top supervisor. After the 16-byte
 * header (node: the group's first node) come 16 bytes (count, incarnation,
 * first alarm id, record count, alarm count, flags), then nalarm alarms of 16
 * bytes (the reporting node, kind, subject, level, the node it is about),
 * then nrec node records of 16 bytes, each followed by 8 bytes per
 * Remote Fault Descriptor its mask names:
 *
 *   node u32 | age_ms u16 | flags u8 | rfd mask u8 | host u8 | 0 0 0 | dnp u32
 *
 * age_ms is how long before sending the group heard the node's last HEALTH
 * (saturates at 65535), flags the HEALTH's DNP_SVC_F_*, host the Host
 * Watchdog status (4 devices, 2 bits each), dnp the DNP Watchdog status's
 * defined bits (0-25 as they are, the remote part 32-37 in 26-31). Every
 * record's node lies in the group, every reserved byte is zero, and the
 * datagram ends exactly after the last record: dnp_svc_decode checks it all.
 */
#define DNP_SVC_AGG_F_DIGEST 0x1u /* this round carries every node the group heard */
#define DNP_SVC_AGG_MAX_REC 4096u
#define DNP_SVC_AGG_MAX_ALARMS 64u
#define DNP_SVC_AGG_DNP_MASK 0x3f03ffffffull /* the status bits a record keeps */

struct dnp_svc_agg_alarm {
	uint32_t from; /* the node whose HFM raised it */
	uint8_t kind, subject, level;
	uint32_t node; /* struct dnp_svc_alarm's node */
};
struct dnp_svc_agg_rec {
	uint32_t node;
	uint16_t age_ms;
	uint8_t flags;
	uint8_t host_status;
	uint64_t dnp_status; /* DNP_SVC_AGG_DNP_MASK bits only */
	uint64_t rfd[DNP_LFM_NDIRS];
};

/* Builds one AGG in a caller buffer: start, alarms, records, finish. */
struct dnp_svc_agg_writer {
	uint8_t *buf;
	size_t cap, len;
	uint32_t first, count;
	unsigned nalarm, nrec;
};
/* -ENOBUFS (cap under the fixed part), -EINVAL (count 0 or past 2^32). */
int dnp_svc_agg_start(struct dnp_svc_agg_writer *w, void *buf, size_t cap, uint32_t first,
		      uint32_t count, uint32_t seq, uint32_t incarnation, uint32_t first_alarm,
		      uint8_t flags);
/*
 * 0, -ENOBUFS (no room: finish this one), -EINVAL (after a record, a bad kind,
 * 'from' outside the group, or started with first_alarm 0).
 */
int dnp_svc_agg_add_alarm(struct dnp_svc_agg_writer *w, const struct dnp_svc_agg_alarm *a);
/* 0, -ENOBUFS (no room), -EINVAL (node outside the group, bits outside the masks). */
int dnp_svc_agg_add_rec(struct dnp_svc_agg_writer *w, const struct dnp_svc_agg_rec *r);
/* The datagram's length. */
size_t dnp_svc_agg_finish(struct dnp_svc_agg_writer *w);
/* The i-th alarm (i < nalarm) of a decoded AGG. */
void dnp_svc_agg_alarm(const struct dnp_svc_msg *m, unsigned i, struct dnp_svc_agg_alarm *a);
/*
 * The record at *off (start with 0) of a decoded AGG, moving *off past it.
 * Returns false after the last one.
 */
bool dnp_svc_agg_rec_next(const struct dnp_svc_msg *m, size_t *off, struct dnp_svc_agg_rec *r);

/*
 * Authentication with a cluster key (docs/security.md, "The service
 * network"). A signed datagram has header byte 6 set to DNP_SVC_F_TAGGED and
 * ends with an 8-byte SipHash-2-4 tag, under the 128-bit cluster key, of all
 * the bytes before it. dnp_svc_verify checks the tag and turns the datagram
 * back into a plain one (flag cleared, tag dropped) for dnp_svc_decode, which
 * refuses a datagram still flagged. A tag proves the sender knows the key,
 * not that the datagram is new: the supervisor drops a HEALTH that is not
 * newer than the last of its HFM incarnation.
 */
#define DNP_SVC_F_TAGGED 0x01u
struct dnp_svc_key {
	uint64_t k[2];
};
/* "32 hex digits" (a key file's first line) into a key. 0 or -EINVAL. */
int dnp_svc_key_parse(const char *hex, struct dnp_svc_key *key);
/* Signs the datagram buf[0..len): returns len + DNP_SVC_TAG, or -ENOBUFS, -EBADMSG. */
int dnp_svc_sign(void *buf, size_t len, size_t cap, const struct dnp_svc_key *key);
/*
 * Checks a signed datagram; on success clears its flag and returns its
 * length without the tag. -EACCES: not signed, or the tag is wrong.
 */
int dnp_svc_verify(void *buf, size_t len, const struct dnp_svc_key *key);

/*
 * The HFM's side (dnp-hfm, and the lab's simulated HFM). An ACK is ours when
 * it names our node and our incarnation (an ACK without one, 0, comes from
 * an older supervisor and is taken).
 */
bool dnp_svc_ack_mine(const struct dnp_svc_msg *m, uint32_t node, uint32_t incarnation);
/*
 * The service network as an HFM sees it: cut when the supervisor, once
 * heard, has acknowledged nothing for 'limit'. A supervisor that starts
 * later than the HFM is not a cut (as the DFM does not judge a host that has
 * not validated its register yet): until the first ACK nothing is judged.
 * Times in any one unit.
 */
struct dnp_svc_watch {
	bool heard;
	uint64_t last_ack;
};
void dnp_svc_watch_ack(struct dnp_svc_watch *w, uint64_t now);
bool dnp_svc_watch_cut(const struct dnp_svc_watch *w, uint64_t now, uint64_t limit);

/*
 * The client's side of a paged picture (dnpctl status): ask for offset 0,
 * then for each next offset, until the picture is whole. Every page must
 * belong to the same snapshot; when the supervisor rendered a new one
 * meanwhile (another client, a restart) the assembly starts over.
 *
 *   struct dnp_svc_pages p;
 *   dnp_svc_pages_init(&p, flags, seq);
 *   do { send(dnp_svc_pages_request(&p, buf, cap)); recv + decode -> m; }
 *   while ((r = dnp_svc_pages_take(&p, &m)) == 0 || r == -EAGAIN);
 *   fwrite(p.buf, 1, p.got, stdout); dnp_svc_pages_fini(&p);
 *
 * The buffer grows with malloc to the picture's size (at most
 * DNP_SVC_PICTURE_MAX); the caller owns p and frees it with _fini.
 */
#define DNP_SVC_PICTURE_MAX (64u << 20)
struct dnp_svc_pages {
	uint32_t flags, seq;
	uint32_t snap, total, got; /* got: bytes joined so far */
	bool started;              /* a first page fixed snap and total */
	char *buf;
};
void dnp_svc_pages_init(struct dnp_svc_pages *p, uint32_t flags, uint32_t seq);
/* The STATUS asking for the next page: its length, or dnp_svc_encode's errors. */
int dnp_svc_pages_request(const struct dnp_svc_pages *p, void *buf, size_t cap);
/*
 * Takes one answer. Returns 1 (the picture is whole in p->buf, p->got
 * bytes), 0 (ask for the next page), -EAGAIN (a new snapshot: start over,
 * already reset), -EBADMSG (not a PAGE of this request, or inconsistent;
 * ignore it and ask again), -EFBIG (over DNP_SVC_PICTURE_MAX), -ENOMEM.
 */
int dnp_svc_pages_take(struct dnp_svc_pages *p, const struct dnp_svc_msg *m);
void dnp_svc_pages_fini(struct dnp_svc_pages *p);

#endif
