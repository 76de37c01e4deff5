/* SPDX-License-Identifier: MIT */
/*
 * link — credits and reliability of one virtual link (contract in link.h).
 *
 * Flow control follows the APEnet+ LINK CTRL (EURETILE report, torus link
 * bandwidth and latency): the receiver reports its RX FIFO occupancy in a
 * credit every credit period, the sender keeps an estimate of the remote
 * occupancy and stops at T_RED. The reliability layer (sequence numbers,
 * cumulative acks, go-back-N) is SoftDNP's own: the hardware link relies on
 * CRC and a lossless cable, a software transport can lose frames.
 *
 * Everything is allocated in dnp_link_create; the calls after it only touch
 * the struct and the unacked ring.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link.h"
#include "route.h" /* enum dnp_routing, for the hello's refusal in words */

/* One unacked packet: the caller's pointer, its seq and when it was last sent. */
struct dnp_link_slot {
	void *pkt;
	uint32_t seq;
	uint32_t ntx; /* transmissions so far (dnp_link_sent) */
	uint64_t sent_time;
	uint64_t sent_order; /* the link's transmission count at its last one (0: never sent) */
	bool sacked;         /* the peer holds it (last selective ack) */
	bool retx_due;       /* marked lost: resend it */
};

/* One frame held by the receiver beyond a gap. */
struct dnp_link_held {
	void *pkt; /* NULL: empty */
	uint32_t seq;
	uint32_t words;
	uint8_t vc;
};

struct dnp_link_vc {
	/* sender side: what we believe about the peer's FIFO */
	uint32_t est;  /* estimated remote occupancy, words */
	uint32_t sent; /* cumulative new words committed (wraps) */
	bool stopped;  /* STOP_AT_RED: reached t_red, waiting for est < t_yellow */
	bool stalling; /* the last can_start said no (counts each stall once) */
	/*
	 * Buffer credit, sender side: the peer's free buffers as of its last
	 * usable credit (DNP_BUFS_NONE: it counts none), the highest 'received'
	 * heard this epoch, and where each buffer frame in flight ends in
	 * 'sent' (a ring of bf_n from bf_head).
	 */
	uint32_t bf_free;
	uint32_t bf_rx;
	uint32_t bf_head, bf_n;
	uint32_t bf_end[DNP_BUFS_MAX];
	/* receiver side: our own FIFO */
	uint32_t occ;                 /* words in the RX FIFO */
	uint32_t bocc;                /* frames that take a buffer, in the FIFO or held */
	uint32_t received;            /* cumulative words accepted (wraps) */
	struct dnp_credit_vc latched; /* HW: value latched at the start of the period */
	struct dnp_credit_vc told;    /* the state as of the last credit we sent */
};

struct dnp_link {
	struct dnp_link_conf c;
	enum dnp_link_state state;
	struct dnp_link_vc vc[DNP_MAX_VC];

	/* time */
	uint64_t created;     /* start of the init_timeout */
	uint64_t last_credit; /* last credit from the peer (UP liveness) */
	uint64_t next_credit; /* when our next credit is due */

	/* reliability: ring[head & mask .. tail & mask) are unacked, oldest first */
	struct dnp_link_slot *ring;
	uint32_t mask;
	uint32_t head, tail; /* free-running */
	uint32_t next_seq;   /* seq of the next pushed packet */
	uint32_t rx_expected;
	uint64_t retx_deadline; /* valid when something is unacked and !retx_pending */
	bool retx_pending;      /* RETX reported, waiting for dnp_link_retx_done */
	uint32_t retries;       /* RETX rounds since the last ack progress */
	uint64_t tx_order;      /* transmissions so far (orders the slots' sent_order) */
	uint32_t nretx_due;     /* slots with retx_due */
	uint32_t nresent;       /* unacked slots sent more than once */
	/*
	 * False only when no unacked slot after the oldest is marked sacked
	 * (the last selective ack said nothing, and slots are pushed unmarked):
	 * a selective ack of 0 then changes nothing.
	 */
	bool sack_held;
	uint64_t probe_at; /* when to look for a lost resend (UINT64_MAX: none) */
	/* RFC 6298 state, time units */
	uint64_t srtt, rttvar, rto; /* srtt 0: no sample yet */

	/* receiver: frames held beyond a gap, at held[seq & mask] */
	struct dnp_link_held *held;
	uint32_t nheld;
	uint32_t held_words[DNP_MAX_VC];

	/* epochs: the agreed one while UP, the proposal otherwise (0: none yet) */
	uint8_t epoch;
	bool announce;       /* an announce is owed (we just came UP, or a probe asked) */
	bool probe_now;      /* send a probe at once (the peer proposed something older) */
	bool leaving;        /* this end is stopping: RESET frames say DNP_RESET_LEAVING */
	uint32_t peer_nonce; /* the peer we agreed the epoch with (0: none yet) */
	uint64_t next_probe; /* BROKEN: when the next probe goes out */

	struct dnp_link_refusal refusal; /* the handshake's verdict on the last hello */
	struct dnp_link_stats st;
};

static bool conf_ok(const struct dnp_link_conf *c)
{
	if (!c)
		return false;
	if (c->fifo_words == 0 || c->t_red > c->fifo_words || c->t_yellow >= c->t_red)
		return false;
	if (c->credit_period == 0 || c->rto == 0)
		return false;
	if ((c->min_rto && c->min_rto > c->rto) || (c->max_rto && c->max_rto < c->rto))
		return false;
	if (c->window == 0 || c->window > 65536u || (c->window & (c->window - 1u)) != 0)
		return false;
	if (c->nvc == 0 || c->nvc > DNP_MAX_VC)
		return false;
	if (c->rule != DNP_START_VCT && c->rule != DNP_START_STOP_AT_RED)
		return false;
	if (c->credit_model != DNP_CREDIT_HW && c->credit_model != DNP_CREDIT_EXACT)
		return false;
	return c->bufs <= DNP_BUFS_MAX;
}

/* Does a frame of this size take a buffer credit on this link's receiver? */
static bool buf_frame(uint32_t words)
{
	return words >= DNP_BUF_MIN_WORDS;
}

/* The buffer credit this end gives on v now: its free buffers, or DNP_BUFS_NONE. */
static uint8_t rx_bufs_free(const struct dnp_link *l, const struct dnp_link_vc *v)
{
	if (!l->c.bufs)
		return DNP_BUFS_NONE;
	return (uint8_t)(v->bocc >= l->c.bufs ? 0 : l->c.bufs - v->bocc);
}

/* A frame that takes a buffer came in (+1) or left (-1) on v. */
static void rx_bufs_add(struct dnp_link *l, struct dnp_link_vc *v, int d)
{
	v->bocc += (uint32_t)d;
	if (l->c.node_bufs)
		*l->c.node_bufs += (uint32_t)d;
}

/*
 * Sender: a fresh link (free: DNP_BUFS_NONE, as nothing of ours is in the
 * peer), or a new epoch (0: the peer's FIFOs may still hold frames of the
 * old one, its first credit tells).
 */
static void tx_bufs_reset(struct dnp_link_vc *v, uint32_t free)
{
	v->bf_free = free;
	v->bf_rx = 0;
	v->bf_head = 0;
	v->bf_n = 0;
}

int dnp_link_create(const struct dnp_link_conf *c, uint64_t now, struct dnp_link **out)
{
	struct dnp_link *l;

	if (!out || !conf_ok(c))
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->ring = calloc(c->window, sizeof(*l->ring));
	l->held = calloc(c->window, sizeof(*l->held));
	if (!l->ring || !l->held) {
		free(l->ring);
		free(l->held);
		free(l);
		return -ENOMEM;
	}
	l->c = *c;
	if (!l->c.nonce)
		l->c.nonce = 1;
	if (!l->c.max_rto)
		l->c.max_rto = l->c.rto;
	if (!l->c.min_rto)
		l->c.min_rto = l->c.rto / 4 ? l->c.rto / 4 : 1;
	l->rto = l->c.rto;
	l->probe_at = UINT64_MAX;
	l->mask = c->window - 1u;
	l->state = DNP_LINK_INIT;
	for (unsigned i = 0; i < DNP_MAX_VC; i++) {
		tx_bufs_reset(&l->vc[i], DNP_BUFS_NONE);
		l->vc[i].latched.bufs = rx_bufs_free(l, &l->vc[i]);
	}
	l->created = now;
	l->last_credit = now;
	/* The first credit goes out at once: it is what brings the peer UP. */
	l->next_credit = now;
	*out = l;
	return 0;
}

void dnp_link_destroy(struct dnp_link *l)
{
	if (!l)
		return;
	free(l->ring);
	free(l->held);
	free(l);
}

enum dnp_link_state dnp_link_state(const struct dnp_link *l)
{
	return l->state;
}

const struct dnp_link_stats *dnp_link_stats(const struct dnp_link *l)
{
	return &l->st;
}

/* ---- sender: credits ---- */

/* The DNP_MAX_VC bound is implied by conf_ok; it also tells the compiler. */
static bool vc_ok(const struct dnp_link *l, unsigned vc)
{
	return vc < DNP_MAX_VC && vc < l->c.nvc;
}

static uint32_t sat_add(uint32_t a, uint32_t b)
{
	return a > UINT32_MAX - b ? UINT32_MAX : a + b;
}

/*
 * Start rules (EURETILE report, torus link bandwidth and latency): VCT is the
 * ROUTER's rule ("no transaction starts if the receiving module does not have
 * sufficient space to accommodate the entire message"), STOP_AT_RED the LINK
 * CTRL's (stop at T_RED, resume when the FIFO has emptied below T_YELLOW).
 */
bool dnp_link_can_start_room(struct dnp_link *l, unsigned vc, uint32_t words, uint32_t room)
{
	struct dnp_link_vc *v;
	bool ok, buf_ok = true;

	if (!vc_ok(l, vc) || l->state == DNP_LINK_BROKEN)
		return false;
	v = &l->vc[vc];
	if (l->c.rule == DNP_START_VCT) {
		ok = (uint64_t)v->est + room <= l->c.t_red;
	} else {
		if (v->est >= l->c.t_red)
			v->stopped = true;
		ok = !v->stopped;
	}
	/* Buffer credit: a buffer the peer backs and no frame in flight takes. */
	if (buf_frame(words) && v->bf_free != DNP_BUFS_NONE && v->bf_free <= v->bf_n)
		buf_ok = false;
	if (!(ok && buf_ok) && !v->stalling) {
		l->st.credit_stalls++;
		l->st.vc[vc].credit_stalls++;
		if (!buf_ok)
			l->st.buf_stalls++;
	}
	v->stalling = !(ok && buf_ok);
	return ok && buf_ok;
}

bool dnp_link_can_start(struct dnp_link *l, unsigned vc, uint32_t words)
{
	return dnp_link_can_start_room(l, vc, words, words);
}

uint32_t dnp_link_bufs_avail(const struct dnp_link *l, unsigned vc)
{
	const struct dnp_link_vc *v;

	if (!vc_ok(l, vc))
		return 0;
	v = &l->vc[vc];
	if (v->bf_free == DNP_BUFS_NONE)
		return UINT32_MAX;
	return v->bf_free > v->bf_n ? v->bf_free - v->bf_n : 0;
}

void dnp_link_commit(struct dnp_link *l, unsigned vc, uint32_t words)
{
	struct dnp_link_vc *v;

	if (!vc_ok(l, vc))
		return;
	v = &l->vc[vc];
	v->est = sat_add(v->est, words);
	v->sent += words;
	/* A frame that takes a buffer: in flight until a credit's 'received' passes its end. */
	if (buf_frame(words) && v->bf_free != DNP_BUFS_NONE && v->bf_n < DNP_BUFS_MAX) {
		v->bf_end[(v->bf_head + v->bf_n) % DNP_BUFS_MAX] = v->sent;
		v->bf_n++;
	}
	l->st.vc[vc].tx_packets++;
	l->st.vc[vc].tx_words += words;
	/* Stop-at-red is checked per word: the word that reaches t_red stops the flow. */
	if (l->c.rule == DNP_START_STOP_AT_RED && v->est >= l->c.t_red)
		v->stopped = true;
}

/*
 * Buffer credit from a credit frame: the frames its 'received' covers have
 * arrived; its free count then holds (link.h). Any credit model: the two
 * values were latched together, so 'free' less the frames still in flight
 * never overstates the buffers free now. An older credit than one heard
 * (reordered) is not used.
 */
static void on_credit_bufs(struct dnp_link_vc *v, const struct dnp_credit_vc *c)
{
	if ((int32_t)(c->received - v->bf_rx) < 0)
		return;
	v->bf_rx = c->received;
	while (v->bf_n && (int32_t)(c->received - v->bf_end[v->bf_head]) >= 0) {
		v->bf_head = (v->bf_head + 1) % DNP_BUFS_MAX;
		v->bf_n--;
	}
	v->bf_free = c->bufs;
}

void dnp_link_on_credit(struct dnp_link *l, const struct dnp_credit_vc *credit, uint64_t now)
{
	unsigned i;

	l->st.rx_credits++;
	if (l->state == DNP_LINK_BROKEN)
		return;
	if (l->state == DNP_LINK_INIT)
		l->state = DNP_LINK_UP;
	l->last_credit = now;

	for (i = 0; i < l->c.nvc; i++) {
		struct dnp_link_vc *v = &l->vc[i];
		uint32_t inflight = v->sent - credit[i].received;

		on_credit_bufs(v, &credit[i]);

		if (l->c.credit_model == DNP_CREDIT_HW) {
			/*
			 * The hardware trusts only a credit latched after every
			 * word it sent had arrived; an older one says nothing
			 * about the words still in flight.
			 */
			if (inflight != 0)
				continue;
			v->est = credit[i].occupancy;
		} else {
			/* A peer ahead of us (after a reset) counts as nothing in flight. */
			if ((int32_t)inflight < 0)
				inflight = 0;
			v->est = sat_add(credit[i].occupancy, inflight);
		}
		if (v->stopped && v->est < l->c.t_yellow)
			v->stopped = false;
	}
}

uint32_t dnp_link_estimate(const struct dnp_link *l, unsigned vc)
{
	return vc_ok(l, vc) ? l->vc[vc].est : 0;
}

/* ---- receiver: FIFO model and credit generation ---- */

int dnp_link_rx_accept(struct dnp_link *l, unsigned vc, uint32_t words)
{
	struct dnp_link_vc *v;

	if (!vc_ok(l, vc))
		return -EINVAL;
	v = &l->vc[vc];
	if ((uint64_t)v->occ + words > l->c.fifo_words || !dnp_link_rx_buf_room(l, vc, words)) {
		if ((uint64_t)v->occ + words <= l->c.fifo_words)
			l->st.rx_buf_overflow++;
		l->st.rx_overflow++;
		l->st.vc[vc].rx_overflow++;
		return -ENOBUFS;
	}
	if (l->c.bufs && buf_frame(words))
		rx_bufs_add(l, v, 1);
	v->occ += words;
	v->received += words;
	l->st.vc[vc].rx_packets++;
	l->st.vc[vc].rx_words += words;
	return 0;
}

void dnp_link_rx_release(struct dnp_link *l, unsigned vc, uint32_t words)
{
	struct dnp_link_vc *v;

	if (!vc_ok(l, vc))
		return;
	v = &l->vc[vc];
	v->occ = words > v->occ ? 0 : v->occ - words;
	if (l->c.bufs && buf_frame(words) && v->bocc)
		rx_bufs_add(l, v, -1);
}

bool dnp_link_rx_buf_room(const struct dnp_link *l, unsigned vc, uint32_t words)
{
	if (!vc_ok(l, vc))
		return false;
	return !l->c.bufs || !buf_frame(words) || l->vc[vc].bocc < l->c.bufs;
}

uint32_t dnp_link_rx_occupancy(const struct dnp_link *l, unsigned vc)
{
	return vc_ok(l, vc) ? l->vc[vc].occ : 0;
}

int dnp_link_rx_pass(struct dnp_link *l, unsigned vc, uint32_t seq, uint32_t words)
{
	struct dnp_link_vc *v;

	if (!vc_ok(l, vc) || seq != l->rx_expected)
		return -EINVAL;
	v = &l->vc[vc];
	l->rx_expected++;
	/* accept and release at once: occupancy and buffers in use end where they were */
	v->received += words;
	l->st.vc[vc].rx_packets++;
	l->st.vc[vc].rx_words += words;
	return 0;
}

/*
 * HW: "the receiving node takes C cycles to submit the proper credit"
 * (EURETILE report, torus link): the value sent now was latched at the
 * previous credit, and the current state is latched for the next one. The
 * schedule keeps a fixed grid of credit_period so that a late poll does not
 * shift every later credit.
 */
void dnp_link_take_credit(struct dnp_link *l, uint64_t now, struct dnp_credit_vc *credit)
{
	uint64_t next;
	unsigned i;

	for (i = 0; i < l->c.nvc; i++) {
		struct dnp_link_vc *v = &l->vc[i];
		struct dnp_credit_vc cur = { .occupancy = v->occ,
					     .received = v->received,
					     .bufs = rx_bufs_free(l, v) };

		if (l->c.credit_model == DNP_CREDIT_HW) {
			credit[i] = v->latched;
			v->latched = cur;
		} else {
			credit[i] = cur;
		}
		v->told = cur;
	}
	l->st.tx_credits++;

	next = (now >= l->next_credit ? l->next_credit : now) + l->c.credit_period;
	if (next <= now)
		next = now + l->c.credit_period;
	l->next_credit = next;
}

bool dnp_link_credit_stale(const struct dnp_link *l)
{
	for (unsigned i = 0; i < l->c.nvc; i++) {
		const struct dnp_link_vc *v = &l->vc[i];
		/* the peer's estimate, but for frames still in flight to us */
		uint32_t view = v->told.occupancy + (v->received - v->told.received);

		if (view > v->occ && view >= l->c.t_yellow / 2)
			return true;
		/* the peer was told half the buffers or fewer, and more are free now */
		if (l->c.bufs && v->told.bufs <= l->c.bufs / 2 && rx_bufs_free(l, v) > v->told.bufs)
			return true;
	}
	return false;
}

/* ---- reliability ---- */

static unsigned unacked_count(const struct dnp_link *l)
{
	return l->tail - l->head;
}

bool dnp_link_window_full(const struct dnp_link *l)
{
	return unacked_count(l) >= l->c.window;
}

uint32_t dnp_link_seq_push(struct dnp_link *l, void *pkt, uint64_t now)
{
	struct dnp_link_slot *s;
	uint32_t seq = l->next_seq;

	assert(!dnp_link_window_full(l));
	if (dnp_link_window_full(l))
		return seq;
	if (unacked_count(l) == 0) {
		/* A round the caller never closed has nothing left to resend. */
		l->retx_pending = false;
		l->retx_deadline = now + l->rto;
	}
	s = &l->ring[l->tail & l->mask];
	*s = (struct dnp_link_slot){ .pkt = pkt, .seq = seq, .sent_time = now };
	l->tail++;
	l->next_seq++;
	return seq;
}

unsigned dnp_link_window_room(const struct dnp_link *l)
{
	return unacked_count(l) >= l->c.window ? 0 : l->c.window - unacked_count(l);
}

uint32_t dnp_link_seq_push_run(struct dnp_link *l, void *const *pkts, unsigned n, uint64_t now)
{
	uint32_t seq0 = l->next_seq;

	assert(n <= dnp_link_window_room(l));
	if (!n || n > dnp_link_window_room(l))
		return seq0;
	if (unacked_count(l) == 0) { /* as dnp_link_seq_push for the first of them */
		l->retx_pending = false;
		l->retx_deadline = now + l->rto;
	}
	for (unsigned i = 0; i < n; i++)
		l->ring[(l->tail + i) & l->mask] =
			(struct dnp_link_slot){ .pkt = pkts[i], .seq = seq0 + i, .sent_time = now };
	l->tail += n;
	l->next_seq += n;
	return seq0;
}

static uint64_t clamp_rto(const struct dnp_link *l, uint64_t rto)
{
	if (rto < l->c.min_rto)
		return l->c.min_rto;
	return rto > l->c.max_rto ? l->c.max_rto : rto;
}

/* RFC 6298, section 2: one round-trip sample r (>= 1 time unit). */
static void rtt_sample(struct dnp_link *l, uint64_t r)
{
	uint64_t var4;

	if (r == 0)
		r = 1;
	if (l->srtt == 0) {
		l->srtt = r;
		l->rttvar = r / 2;
	} else {
		uint64_t d = l->srtt > r ? l->srtt - r : r - l->srtt;

		l->rttvar = (3 * l->rttvar + d) / 4;
		l->srtt = (7 * l->srtt + r) / 8;
		if (l->srtt == 0)
			l->srtt = 1;
	}
	var4 = l->rttvar ? 4 * l->rttvar : 1; /* max(G, 4 RTTVAR), G = 1 unit */
	l->rto = clamp_rto(l, l->srtt + var4);
	l->st.rtt_samples++;
}

/* Takes the oldest unacked slot off the ring. */
static void *pop_slot(struct dnp_link *l)
{
	struct dnp_link_slot *s = &l->ring[l->head & l->mask];

	if (s->retx_due)
		l->nretx_due--;
	if (s->ntx > 1)
		l->nresent--;
	l->head++;
	return s->pkt;
}

unsigned dnp_link_on_ack(struct dnp_link *l, uint32_t ack, void **freed, unsigned max, uint64_t now)
{
	unsigned n = unacked_count(l);
	uint32_t oldest = l->next_seq - n;
	uint32_t progress = ack - oldest; /* modulo 2^32 */
	unsigned popped = 0;
	bool karn = true;    /* every packet this ack covers was sent exactly once */
	uint64_t newest = 0; /* the latest send time among them */

	/* Valid acks lie in [oldest, next_seq]: anything else is stale or bogus. */
	if (n == 0 || progress == 0 || progress > n)
		return 0;
	while (popped < max && popped < progress) {
		const struct dnp_link_slot *s = &l->ring[l->head & l->mask];

		if (s->ntx != 1)
			karn = false;
		else if (s->sent_time > newest)
			newest = s->sent_time;
		freed[popped] = pop_slot(l);
		popped++;
	}
	if (popped > 0) {
		/*
		 * Karn's rule: an ack covering a resent packet is ambiguous (which
		 * copy does it answer?), so it gives no sample at all.
		 */
		if (karn && now >= newest)
			rtt_sample(l, now - newest);
		l->retries = 0;
		if (unacked_count(l) > 0)
			l->retx_deadline = l->ring[l->head & l->mask].sent_time + l->rto;
		else
			l->retx_pending = false;
	}
	return popped;
}

unsigned dnp_link_on_sack(struct dnp_link *l, uint32_t ack, uint64_t sack, uint64_t now)
{
	unsigned n = unacked_count(l), i, last = 0, marked = 0;
	uint64_t order = 0; /* latest transmission among the packets the peer holds */

	(void)now;
	if (n == 0 || ack != l->next_seq - n)
		return 0; /* stale, or not about what we hold */
	if (!sack && !l->sack_held)
		return 0; /* the loops below would only clear marks that are clear */
	for (i = 1; i < n; i++) {
		struct dnp_link_slot *s = &l->ring[(l->head + i) & l->mask];

		s->sacked = i <= 64 && (sack >> (i - 1) & 1u);
		if (s->sacked) {
			last = i;
			if (s->sent_order > order)
				order = s->sent_order;
			if (s->retx_due) { /* it arrived after all */
				s->retx_due = false;
				l->nretx_due--;
			}
		}
	}
	l->sack_held = last > 0;
	/*
	 * A packet the peer does not hold, sent before one it holds, was lost
	 * (or overtaken): resend it. A resend is newer than everything the peer
	 * held at that time, so it is marked again only when a packet sent after
	 * it arrives first: at most once per round trip.
	 */
	for (i = 0; i < last; i++) {
		struct dnp_link_slot *s = &l->ring[(l->head + i) & l->mask];

		if (!s->sacked && !s->retx_due && s->ntx > 0 && s->sent_order < order) {
			s->retx_due = true;
			l->nretx_due++;
			marked++;
		}
	}
	l->st.fast_retx += marked;
	return marked;
}

int dnp_link_retx_next(const struct dnp_link *l)
{
	uint32_t i;

	if (l->nretx_due == 0)
		return -1;
	for (i = l->head; i != l->tail; i++)
		if (l->ring[i & l->mask].retx_due)
			return (int)(i - l->head);
	return -1;
}

unsigned dnp_link_retx_due(const struct dnp_link *l)
{
	return l->nretx_due;
}

uint64_t dnp_link_rto(const struct dnp_link *l)
{
	return l->rto;
}

uint64_t dnp_link_srtt(const struct dnp_link *l)
{
	return l->srtt;
}

static bool is_held(const struct dnp_link *l, uint32_t seq)
{
	const struct dnp_link_held *h = &l->held[seq & l->mask];

	return h->pkt && h->seq == seq;
}

int dnp_link_rx_seq(struct dnp_link *l, uint32_t seq)
{
	int32_t d = (int32_t)(seq - l->rx_expected);

	if (d == 0) {
		l->rx_expected++;
		return 0;
	}
	if (d < 0 || is_held(l, seq)) {
		l->st.rx_dup++;
		return -EALREADY;
	}
	l->st.rx_out_of_order++;
	return -EAGAIN;
}

int dnp_link_rx_hold(struct dnp_link *l, uint32_t seq, unsigned vc, uint32_t words, void *pkt)
{
	uint32_t d = seq - l->rx_expected;
	struct dnp_link_held *h;

	if (!vc_ok(l, vc) || !pkt)
		return -EINVAL;
	if (d == 0 || d >= l->c.window)
		return -ERANGE;
	if (is_held(l, seq))
		return -EALREADY;
	h = &l->held[seq & l->mask];
	if (h->pkt)
		return -ERANGE; /* a leftover the caller has not drained (cannot happen while UP) */
	/* What is held counts against the FIFO it will enter, and its buffers. */
	if ((uint64_t)l->vc[vc].occ + l->held_words[vc] + words > l->c.fifo_words ||
	    !dnp_link_rx_buf_room(l, vc, words))
		return -ENOBUFS;
	if (l->c.bufs && buf_frame(words))
		rx_bufs_add(l, &l->vc[vc], 1);
	*h = (struct dnp_link_held){ .pkt = pkt, .seq = seq, .words = words, .vc = (uint8_t)vc };
	l->nheld++;
	l->held_words[vc] += words;
	l->st.rx_held++;
	return 0;
}

static void *take_held(struct dnp_link *l, struct dnp_link_held *h)
{
	void *pkt = h->pkt;

	if (l->c.bufs && buf_frame(h->words) && l->vc[h->vc].bocc)
		rx_bufs_add(l, &l->vc[h->vc], -1);
	l->held_words[h->vc] -= h->words;
	l->nheld--;
	h->pkt = NULL;
	return pkt;
}

void *dnp_link_rx_unhold(struct dnp_link *l)
{
	struct dnp_link_held *h = &l->held[l->rx_expected & l->mask];

	if (l->nheld == 0 || !h->pkt || h->seq != l->rx_expected)
		return NULL;
	return take_held(l, h);
}

uint64_t dnp_link_sack(const struct dnp_link *l)
{
	uint64_t sack = 0;
	uint32_t i, span;

	if (l->nheld == 0)
		return 0;
	span = l->c.window - 1u < 64u ? l->c.window - 1u : 64u;
	for (i = 0; i < span; i++)
		if (is_held(l, l->rx_expected + 1u + i))
			sack |= 1ull << i;
	return sack;
}

unsigned dnp_link_rx_drain(struct dnp_link *l, void **out, unsigned max)
{
	unsigned n = 0;
	uint32_t i;

	for (i = 0; i < l->c.window && n < max && l->nheld; i++)
		if (l->held[i].pkt)
			out[n++] = take_held(l, &l->held[i]);
	return n;
}

uint32_t dnp_link_ack_value(const struct dnp_link *l)
{
	return l->rx_expected;
}

unsigned dnp_link_unacked(const struct dnp_link *l)
{
	return unacked_count(l);
}

void *dnp_link_unacked_at(const struct dnp_link *l, unsigned i, uint32_t *seq)
{
	const struct dnp_link_slot *s;

	if (i >= unacked_count(l))
		return NULL;
	s = &l->ring[(l->head + i) & l->mask];
	if (seq)
		*seq = s->seq;
	return s->pkt;
}

/*
 * How long a resend may go unanswered before it counts as lost too: two
 * round trips (at least SRTT + 4 RTTVAR), never more than the timeout. This
 * catches a lost resend when no later frame can reveal it (the sender has
 * nothing newer to send, or no credit to send it), without a timeout round.
 */
static uint64_t probe_interval(const struct dnp_link *l)
{
	uint64_t p = 2 * l->srtt, v = l->srtt + 4 * l->rttvar;

	if (v > p)
		p = v;
	if (p > l->rto)
		p = l->rto;
	return p ? p : 1;
}

/* Marks every resend that has waited a probe interval without news; reschedules. */
static void probe_resends(struct dnp_link *l, uint64_t now)
{
	uint64_t iv = probe_interval(l), next = UINT64_MAX;
	uint32_t i;

	for (i = l->head; i != l->tail; i++) {
		struct dnp_link_slot *s = &l->ring[i & l->mask];

		if (s->ntx < 2 || s->sacked || s->retx_due)
			continue;
		if (now >= s->sent_time + iv) {
			s->retx_due = true;
			l->nretx_due++;
			l->st.fast_retx++;
		} else if (s->sent_time + iv < next) {
			next = s->sent_time + iv;
		}
	}
	l->probe_at = next;
}

void dnp_link_sent(struct dnp_link *l, unsigned i, uint64_t now)
{
	struct dnp_link_slot *s;

	if (i >= unacked_count(l))
		return;
	s = &l->ring[(l->head + i) & l->mask];
	s->sent_time = now;
	s->sent_order = ++l->tx_order;
	s->ntx++;
	if (s->ntx == 2)
		l->nresent++;
	if (s->ntx > 1 && l->srtt && now + probe_interval(l) < l->probe_at)
		l->probe_at = now + probe_interval(l);
	if (s->retx_due) {
		s->retx_due = false;
		l->nretx_due--;
	}
	/* The timer runs from when the oldest packet actually left, not from when it was queued. */
	if (i == 0 && !l->retx_pending)
		l->retx_deadline = now + l->rto;
}

void dnp_link_sent_run(struct dnp_link *l, unsigned first, unsigned n, uint32_t words, uint64_t now)
{
	for (unsigned i = first; i < first + n; i++)
		dnp_link_sent(l, i, now);
	l->st.tx_frames += n;
	l->st.tx_words += words;
}

/* The marked packets are being resent now: they start waiting again. */
void dnp_link_retx_done(struct dnp_link *l, uint64_t now)
{
	uint32_t i;

	for (i = l->head; i != l->tail; i++)
		if (l->ring[i & l->mask].retx_due)
			l->ring[i & l->mask].sent_time = now;
	l->retx_pending = false;
	l->retx_deadline = now + l->rto;
}

/*
 * A timeout round: every sent packet the peer does not hold is resent. From
 * the second round in a row on, what the peer said it held is forgotten too
 * (RFC 2018: a receiver may discard what it selectively acked).
 */
static void mark_round(struct dnp_link *l)
{
	uint32_t i;

	for (i = l->head; i != l->tail; i++) {
		struct dnp_link_slot *s = &l->ring[i & l->mask];

		if (l->retries >= 2)
			s->sacked = false;
		if (s->ntx > 0 && !s->sacked && !s->retx_due) {
			s->retx_due = true;
			l->nretx_due++;
		}
	}
	/* RFC 6298 (5.5): back off; a new sample recomputes it. */
	l->rto = l->rto > l->c.max_rto / 2 ? l->c.max_rto : 2 * l->rto;
}

unsigned dnp_link_drain(struct dnp_link *l, void **out, unsigned max)
{
	unsigned n = 0;

	while (n < max && l->head != l->tail)
		out[n++] = pop_slot(l);
	if (l->head == l->tail)
		l->retx_pending = false;
	return n;
}

/* ---- time ---- */

static uint8_t epoch_next(uint8_t e)
{
	return e == UINT8_MAX ? 1 : (uint8_t)(e + 1u);
}

/* Is a newer than b (serial arithmetic mod 256; 0 is older than everything)? */
static bool epoch_newer(uint8_t a, uint8_t b)
{
	if (a == 0)
		return false;
	if (b == 0)
		return true;
	return (int8_t)(uint8_t)(a - b) > 0;
}

static void enter_broken(struct dnp_link *l, uint64_t now)
{
	if (l->state == DNP_LINK_UP)
		l->epoch = epoch_next(l->epoch);
	l->state = DNP_LINK_BROKEN;
	l->announce = false;
	l->probe_now = l->c.reset_period != 0;
	l->next_probe = now;
	l->st.breaks++;
}

static unsigned go_broken(struct dnp_link *l, uint64_t now)
{
	enter_broken(l, now);
	return DNP_LINK_EV_BROKEN;
}

/*
 * Liveness: "the TX logic can sense whether the cable is ok or not (credits
 * not received and timeout reached)" (EURETILE report, LO|FA|MO fault
 * detection). A timeout of 0 disables the check. BROKEN is reported by the
 * call that detects it and never again.
 */
unsigned dnp_link_tick(struct dnp_link *l, uint64_t now)
{
	unsigned ev = 0;

	if (l->state == DNP_LINK_BROKEN) {
		if (l->c.reset_period && now >= l->next_probe)
			return DNP_LINK_EV_CREDIT_DUE; /* a probe */
		return 0;
	}
	if (l->state == DNP_LINK_INIT && l->c.init_timeout != 0 &&
	    now - l->created >= l->c.init_timeout)
		return go_broken(l, now);
	if (l->state == DNP_LINK_UP && l->c.credit_timeout != 0 &&
	    now - l->last_credit >= l->c.credit_timeout)
		return go_broken(l, now);
	if (now >= l->probe_at) {
		if (l->nresent > 0 && l->state == DNP_LINK_UP)
			probe_resends(l, now);
		else
			l->probe_at = UINT64_MAX;
	}

	if (unacked_count(l) > 0 && !l->retx_pending && now >= l->retx_deadline) {
		if (l->retries >= l->c.max_retries)
			return go_broken(l, now);
		l->retries++;
		l->retx_pending = true;
		l->st.retx_rounds++;
		mark_round(l);
		ev |= DNP_LINK_EV_RETX;
	}
	if (now >= l->next_credit)
		ev |= DNP_LINK_EV_CREDIT_DUE;
	return ev;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

uint64_t dnp_link_next_deadline(const struct dnp_link *l)
{
	uint64_t d;

	if (l->state == DNP_LINK_BROKEN)
		return l->c.reset_period ? l->next_probe : UINT64_MAX;
	d = l->next_credit;
	if (l->state == DNP_LINK_INIT && l->c.init_timeout != 0)
		d = min_u64(d, l->created + l->c.init_timeout);
	if (l->state == DNP_LINK_UP && l->c.credit_timeout != 0)
		d = min_u64(d, l->last_credit + l->c.credit_timeout);
	if (unacked_count(l) > 0 && !l->retx_pending)
		d = min_u64(d, l->retx_deadline);
	if (l->nresent > 0)
		d = min_u64(d, l->probe_at);
	return d;
}

/* The caller learns of the transition from the return value; tick will not report it. */
bool dnp_link_set_broken(struct dnp_link *l)
{
	if (l->state == DNP_LINK_BROKEN)
		return false;
	/* No clock here: the first probe goes out at the next tick. */
	enter_broken(l, 0);
	return true;
}

/* ---- epochs and the reset handshake ---- */

void dnp_link_leave(struct dnp_link *l)
{
	l->leaving = true;
}

uint8_t dnp_link_epoch(const struct dnp_link *l)
{
	return l->epoch;
}

bool dnp_link_sends_reset(const struct dnp_link *l)
{
	return l->state != DNP_LINK_UP || l->announce || l->leaving;
}

bool dnp_link_reset_due(const struct dnp_link *l)
{
	if (l->leaving)
		return true;
	if (l->state == DNP_LINK_BROKEN && !l->c.reset_period)
		return false;
	return l->announce || l->probe_now;
}

bool dnp_link_recovers(const struct dnp_link *l)
{
	return l->c.reset_period != 0;
}

uint8_t dnp_link_take_reset(struct dnp_link *l, uint64_t now, struct dnp_credit_vc *credit)
{
	unsigned i;

	/* A RESET frame has room for the occupancies of VCs 0-1 only (pkt.h). */
	for (i = 0; i < DNP_MAX_VC; i++) {
		credit[i].occupancy = i < l->c.nvc && i < DNP_H1_VCS ? l->vc[i].occ : 0;
		credit[i].received = 0;
		credit[i].bufs = i < l->c.nvc ? rx_bufs_free(l, &l->vc[i]) : 0;
	}
	credit[0].received = l->c.nonce;
	credit[1].received = (l->state == DNP_LINK_UP ? DNP_RESET_ANNOUNCE : 0) |
			     (l->leaving ? DNP_RESET_LEAVING : 0);
	l->st.tx_resets++;
	l->announce = false;
	l->probe_now = false;
	if (l->state == DNP_LINK_BROKEN)
		l->next_probe = now + l->c.reset_period;
	else if (l->state == DNP_LINK_INIT)
		l->next_credit = now + l->c.credit_period;
	return l->epoch;
}

/*
 * Now UP in epoch e with the peer 'nonce': a fresh sequence space and fresh
 * credit counters on both ends. Packets still queued were never sent (a link
 * that is not UP sends no data, and a break drains what was sent): they are
 * renumbered from 0. 'occ' is the peer's FIFO occupancy per VC, if known.
 */
static void go_up(struct dnp_link *l, uint8_t e, uint32_t nonce, const struct dnp_credit_vc *occ,
		  uint64_t now)
{
	unsigned i;
	uint32_t seq = 0;

	l->state = DNP_LINK_UP;
	l->epoch = e;
	if (nonce)
		l->peer_nonce = nonce;
	l->probe_now = false;
	for (i = 0; i < l->c.nvc && i < DNP_MAX_VC; i++) {
		struct dnp_link_vc *v = &l->vc[i];

		v->sent = 0;
		v->received = 0;
		/*
		 * A RESET frame does not carry the occupancy of VCs 2-3: until
		 * the first credit of the new epoch (sent at once) tells it,
		 * take their remote FIFOs as full rather than empty.
		 */
		if (!occ)
			v->est = 0;
		else if (i < DNP_H1_VCS)
			v->est = occ[i].occupancy;
		else
			v->est = l->c.fifo_words;
		if (v->est > l->c.fifo_words)
			v->est = l->c.fifo_words;
		v->stopped = l->c.rule == DNP_START_STOP_AT_RED && v->est >= l->c.t_yellow;
		v->stalling = false;
		v->latched = (struct dnp_credit_vc){ .occupancy = v->occ,
						     .received = 0,
						     .bufs = rx_bufs_free(l, v) };
		v->told = v->latched;
		/* the RESET frame's buffer credits, or none until the epoch's first credit */
		tx_bufs_reset(v, occ ? occ[i].bufs : 0);
	}
	for (uint32_t k = l->head; k != l->tail; k++) {
		struct dnp_link_slot *s = &l->ring[k & l->mask];

		*s = (struct dnp_link_slot){ .pkt = s->pkt, .seq = seq++, .sent_time = now };
	}
	l->nretx_due = 0;
	l->nresent = 0;
	l->probe_at = UINT64_MAX;
	l->next_seq = seq;
	l->rx_expected = 0;
	l->retries = 0;
	l->retx_pending = false;
	/* A new epoch may be a new peer: measure its round trip afresh. */
	l->srtt = l->rttvar = 0;
	l->rto = l->c.rto;
	if (l->head != l->tail)
		l->retx_deadline = now + l->rto;
	l->last_credit = now;
	l->next_credit = now; /* a credit (with the new epoch) goes out at once */
	l->st.ups++;
}

unsigned dnp_link_on_reset(struct dnp_link *l, uint8_t epoch, const struct dnp_credit_vc *credit,
			   uint64_t now)
{
	uint32_t nonce = credit[0].received;
	bool announce = (credit[1].received & DNP_RESET_ANNOUNCE) != 0;
	unsigned ret = 0;

	l->st.rx_resets++;
	if (credit[1].received & DNP_RESET_LEAVING) {
		/* the peer we agreed with is stopping: down now, not at the timeout */
		if (l->state != DNP_LINK_UP || nonce != l->peer_nonce)
			return 0;
		l->st.peer_left++;
		enter_broken(l, now);
		return DNP_LINK_RST_DOWN;
	}
	if (l->state == DNP_LINK_BROKEN && !l->c.reset_period)
		return 0; /* BROKEN is final */
	if (l->state == DNP_LINK_UP) {
		if (nonce == l->peer_nonce && !epoch_newer(epoch, l->epoch)) {
			l->last_credit = now;
			/*
			 * A probe from the peer we agreed with (its own proposal,
			 * or 0 while it is still fresh): it has not heard that we
			 * are UP, or it is a late copy; an announce is harmless
			 * either way. Announces are never answered.
			 */
			if (!announce)
				l->announce = true;
			return 0;
		}
		/* The peer restarted, or saw the link break: so does ours. */
		enter_broken(l, now);
		ret |= DNP_LINK_RST_DOWN;
	}
	/* INIT or BROKEN: probing with proposal l->epoch. */
	if (epoch_newer(epoch, l->epoch)) {
		go_up(l, epoch, nonce, credit, now);
		l->announce = true;
		return ret | DNP_LINK_RST_UP;
	}
	if (epoch == l->epoch && epoch != 0) {
		go_up(l, epoch, nonce, credit, now);
		l->announce = !announce; /* answer a probe; never an announce */
		return ret | DNP_LINK_RST_UP;
	}
	if (epoch == 0 && l->epoch == 0) {
		/* Two fresh ends: both take epoch 1. */
		go_up(l, 1, nonce, credit, now);
		l->announce = true;
		return ret | DNP_LINK_RST_UP;
	}
	/* Older than our proposal: say it again, the peer adopts it. */
	l->probe_now = true;
	return ret;
}

int dnp_link_rx_epoch(struct dnp_link *l, uint8_t epoch, uint64_t now)
{
	if (l->state == DNP_LINK_UP) {
		if (epoch == l->epoch)
			return 0;
	} else if (epoch != 0 && epoch == l->epoch &&
		   (l->state == DNP_LINK_INIT || l->c.reset_period)) {
		/* The peer adopted our proposal and is UP: so are we. */
		go_up(l, epoch, 0, NULL, now);
		return DNP_LINK_RST_UP;
	}
	l->st.rx_stale++;
	return -ESTALE;
}

bool dnp_link_epoch_ok(const struct dnp_link *l, uint8_t epoch)
{
	return l->state == DNP_LINK_UP && epoch == l->epoch;
}

unsigned dnp_link_ack_progress(const struct dnp_link *l, uint32_t ack)
{
	unsigned n = unacked_count(l);
	uint32_t progress = ack - (l->next_seq - n); /* modulo 2^32, as dnp_link_on_ack */

	return n == 0 || progress > n ? 0 : progress;
}

void dnp_link_stats_rx(struct dnp_link *l, uint32_t words)
{
	l->st.rx_frames++;
	l->st.rx_words += words;
}

void dnp_link_stats_tx(struct dnp_link *l, uint32_t words, bool retx)
{
	l->st.tx_frames++;
	l->st.tx_words += words;
	if (retx)
		l->st.tx_retx_frames++;
}

/* ---- the handshake's hello ---- */

static void hello_of(const struct dnp_link *l, struct dnp_pkt_hello *h)
{
	*h = (struct dnp_pkt_hello){
		.version = DNP_HELLO_VERSION,
		.transport = l->c.transport,
		.dim = { l->c.dim[0], l->c.dim[1], l->c.dim[2] },
		.nvc = l->c.nvc,
		.vc_mode = l->c.vc_mode,
		.fifo_words = l->c.fifo_words,
		.max_frame = DNP_MAX_FRAME,
		.routing = l->c.routing,
	};
}

void dnp_link_hello(const struct dnp_link *l, uint8_t out[DNP_HELLO_BYTES])
{
	struct dnp_pkt_hello h;

	hello_of(l, &h);
	dnp_pkt_hello_encode(&h, out);
}

static uint64_t dims_value(const uint16_t *d)
{
	return (uint64_t)d[0] | (uint64_t)d[1] << 16 | (uint64_t)d[2] << 32;
}

/* The first field of the peer's hello p that differs from ours (m), or DNP_REFUSE_NONE. */
static unsigned hello_diff(const struct dnp_pkt_hello *m, const struct dnp_pkt_hello *p,
			   uint64_t *here, uint64_t *peer)
{
	const struct {
		unsigned field;
		uint64_t a, b;
	} f[] = {
		{ DNP_REFUSE_TORUS, dims_value(m->dim), dims_value(p->dim) },
		{ DNP_REFUSE_TRANSPORT, m->transport, p->transport },
		{ DNP_REFUSE_VCS, m->nvc, p->nvc },
		{ DNP_REFUSE_VC_MODE, m->vc_mode, p->vc_mode },
		{ DNP_REFUSE_FIFO, m->fifo_words, p->fifo_words },
		{ DNP_REFUSE_MAX_FRAME, m->max_frame, p->max_frame },
		{ DNP_REFUSE_ROUTING, m->routing, p->routing },
	};

	for (unsigned i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (f[i].a != f[i].b) {
			*here = f[i].a;
			*peer = f[i].b;
			return f[i].field;
		}
	}
	return DNP_REFUSE_NONE;
}

int dnp_link_on_hello(struct dnp_link *l, const uint8_t *payload, size_t len)
{
	struct dnp_pkt_hello mine, peer;
	struct dnp_link_refusal *r = &l->refusal;
	uint64_t a = 0, b = 0;
	unsigned field;

	hello_of(l, &mine);
	switch (dnp_pkt_hello_decode(payload, len, &peer)) {
	case 0:
		field = hello_diff(&mine, &peer, &a, &b);
		break;
	case -ENODATA:
		field = DNP_REFUSE_NO_HELLO;
		break;
	case -EPROTONOSUPPORT:
		field = DNP_REFUSE_VERSION;
		a = DNP_HELLO_VERSION;
		b = peer.version;
		break;
	default:
		field = DNP_REFUSE_BAD;
		break;
	}
	if (field == DNP_REFUSE_NONE) {
		r->field = DNP_REFUSE_NONE;
		r->frames = 0;
		return 0;
	}
	if (r->field != field || r->here != a || r->peer != b) {
		r->field = (uint8_t)field;
		r->here = a;
		r->peer = b;
		r->frames = 0;
		r->episode++;
	}
	r->frames++;
	l->st.rx_refused++;
	return -ECONNREFUSED;
}

const struct dnp_link_refusal *dnp_link_refusal(const struct dnp_link *l)
{
	return &l->refusal;
}

static const char *const xport_names[] = {
	[DNP_XPORT_NONE] = "none", [DNP_XPORT_SHM] = "shm",     [DNP_XPORT_UDP] = "udp",
	[DNP_XPORT_DPDK] = "dpdk", [DNP_XPORT_VERBS] = "verbs",
};

const char *dnp_xport_name(unsigned x)
{
	return x < sizeof(xport_names) / sizeof(xport_names[0]) ? xport_names[x] : "?";
}

uint8_t dnp_xport_code(const char *name)
{
	for (unsigned i = 0; name && i < sizeof(xport_names) / sizeof(xport_names[0]); i++)
		if (!strcmp(name, xport_names[i]))
			return (uint8_t)i;
	return DNP_XPORT_NONE;
}

/* enum dnp_routing in words (route.c is not linked into link.c's unit test). */
static const char *routing_word(uint64_t v)
{
	return v == DNP_ROUTING_DOR ? "dor" : v == DNP_ROUTING_ADAPTIVE ? "adaptive" : "unknown";
}

int dnp_link_refusal_str(const struct dnp_link_refusal *r, char *buf, size_t cap)
{
	static const char *const names[] = {
		[DNP_REFUSE_VCS] = "vcs",
		[DNP_REFUSE_VC_MODE] = "vc_mode",
		[DNP_REFUSE_FIFO] = "fifo_words",
		[DNP_REFUSE_MAX_FRAME] = "max_frame",
		[DNP_REFUSE_VERSION] = "hello version",
	};
	uint64_t a = r->here, b = r->peer;

	switch (r->field) {
	case DNP_REFUSE_NONE:
		return snprintf(buf, cap, "%s", "");
	case DNP_REFUSE_NO_HELLO:
		return snprintf(buf, cap, "hello missing (the peer is an older SoftDNP)");
	case DNP_REFUSE_BAD:
		return snprintf(buf, cap, "hello malformed");
	case DNP_REFUSE_TORUS:
		return snprintf(buf, cap, "torus here %ux%ux%u peer %ux%ux%u",
				(unsigned)(a & 0xffff), (unsigned)(a >> 16 & 0xffff),
				(unsigned)(a >> 32 & 0xffff), (unsigned)(b & 0xffff),
				(unsigned)(b >> 16 & 0xffff), (unsigned)(b >> 32 & 0xffff));
	case DNP_REFUSE_TRANSPORT:
		return snprintf(buf, cap, "transport here %s peer %s", dnp_xport_name((unsigned)a),
				dnp_xport_name((unsigned)b));
	case DNP_REFUSE_ROUTING:
		return snprintf(buf, cap, "routing here %s peer %s", routing_word(a),
				routing_word(b));
	default:
		if (r->field < sizeof(names) / sizeof(names[0]) && names[r->field])
			return snprintf(buf, cap, "%s here %llu peer %llu", names[r->field],
					(unsigned long long)a, (unsigned long long)b);
		return snprintf(buf, cap, "field %u here %llu peer %llu", r->field,
				(unsigned long long)a, (unsigned long long)b);
	}
}
