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
#include <stdlib.h>

#include "link.h"

/* One unacked packet: the caller's pointer, its seq and when it was last sent. */
struct dnp_link_slot {
	void *pkt;
	uint32_t seq;
	uint64_t sent_time;
};

struct dnp_link_vc {
	/* sender side: what we believe about the peer's FIFO */
	uint32_t est;  /* estimated remote occupancy, words */
	uint32_t sent; /* cumulative new words committed (wraps) */
	bool stopped;  /* STOP_AT_RED: reached t_red, waiting for est < t_yellow */
	bool stalling; /* the last can_start said no (counts each stall once) */
	/* receiver side: our own FIFO */
	uint32_t occ;      /* words in the RX FIFO */
	uint32_t received; /* cumulative words accepted (wraps) */
	struct dnp_credit_vc latched; /* HW: value latched at the start of the period */
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

	/* epochs: the agreed one while UP, the proposal otherwise (0: none yet) */
	uint8_t epoch;
	bool announce;       /* an announce is owed (we just came UP, or a probe asked) */
	bool probe_now;      /* send a probe at once (the peer proposed something older) */
	uint32_t peer_nonce; /* the peer we agreed the epoch with (0: none yet) */
	uint64_t next_probe; /* BROKEN: when the next probe goes out */

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
	if (c->window == 0 || c->window > 65536u || (c->window & (c->window - 1u)) != 0)
		return false;
	if (c->nvc == 0 || c->nvc > DNP_MAX_VC)
		return false;
	if (c->rule != DNP_START_VCT && c->rule != DNP_START_STOP_AT_RED)
		return false;
	if (c->credit_model != DNP_CREDIT_HW && c->credit_model != DNP_CREDIT_EXACT)
		return false;
	return true;
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
	if (!l->ring) {
		free(l);
		return -ENOMEM;
	}
	l->c = *c;
	if (!l->c.nonce)
		l->c.nonce = 1;
	l->mask = c->window - 1u;
	l->state = DNP_LINK_INIT;
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
bool dnp_link_can_start(struct dnp_link *l, unsigned vc, uint32_t words)
{
	struct dnp_link_vc *v;
	bool ok;

	if (!vc_ok(l, vc) || l->state == DNP_LINK_BROKEN)
		return false;
	v = &l->vc[vc];
	if (l->c.rule == DNP_START_VCT) {
		ok = (uint64_t)v->est + words <= l->c.t_red;
	} else {
		if (v->est >= l->c.t_red)
			v->stopped = true;
		ok = !v->stopped;
	}
	if (!ok && !v->stalling) {
		l->st.credit_stalls++;
		l->st.vc[vc].credit_stalls++;
	}
	v->stalling = !ok;
	return ok;
}

void dnp_link_commit(struct dnp_link *l, unsigned vc, uint32_t words)
{
	struct dnp_link_vc *v;

	if (!vc_ok(l, vc))
		return;
	v = &l->vc[vc];
	v->est = sat_add(v->est, words);
	v->sent += words;
	l->st.vc[vc].tx_packets++;
	l->st.vc[vc].tx_words += words;
	/* Stop-at-red is checked per word: the word that reaches t_red stops the flow. */
	if (l->c.rule == DNP_START_STOP_AT_RED && v->est >= l->c.t_red)
		v->stopped = true;
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
	if ((uint64_t)v->occ + words > l->c.fifo_words) {
		l->st.rx_overflow++;
		l->st.vc[vc].rx_overflow++;
		return -ENOBUFS;
	}
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
}

uint32_t dnp_link_rx_occupancy(const struct dnp_link *l, unsigned vc)
{
	return vc_ok(l, vc) ? l->vc[vc].occ : 0;
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
		struct dnp_credit_vc cur = { .occupancy = v->occ, .received = v->received };

		if (l->c.credit_model == DNP_CREDIT_HW) {
			credit[i] = v->latched;
			v->latched = cur;
		} else {
			credit[i] = cur;
		}
	}
	l->st.tx_credits++;

	next = (now >= l->next_credit ? l->next_credit : now) + l->c.credit_period;
	if (next <= now)
		next = now + l->c.credit_period;
	l->next_credit = next;
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
		l->retx_deadline = now + l->c.rto;
	}
	s = &l->ring[l->tail & l->mask];
	s->pkt = pkt;
	s->seq = seq;
	s->sent_time = now;
	l->tail++;
	l->next_seq++;
	return seq;
}

unsigned dnp_link_on_ack(struct dnp_link *l, uint32_t ack, void **freed, unsigned max, uint64_t now)
{
	unsigned n = unacked_count(l);
	uint32_t oldest = l->next_seq - n;
	uint32_t progress = ack - oldest; /* modulo 2^32 */
	unsigned popped = 0;

	/* Valid acks lie in [oldest, next_seq]: anything else is stale or bogus. */
	if (n == 0 || progress == 0 || progress > n)
		return 0;
	while (popped < max && popped < progress) {
		freed[popped] = l->ring[l->head & l->mask].pkt;
		l->head++;
		popped++;
	}
	if (popped > 0) {
		l->retries = 0;
		if (unacked_count(l) > 0)
			l->retx_deadline = l->ring[l->head & l->mask].sent_time + l->c.rto;
		else
			l->retx_pending = false;
	}
	return popped;
}

int dnp_link_rx_seq(struct dnp_link *l, uint32_t seq)
{
	int32_t d = (int32_t)(seq - l->rx_expected);

	if (d == 0) {
		l->rx_expected++;
		return 0;
	}
	if (d < 0) {
		l->st.rx_dup++;
		return -EALREADY;
	}
	l->st.rx_out_of_order++;
	return -EAGAIN;
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

void dnp_link_sent(struct dnp_link *l, unsigned i, uint64_t now)
{
	if (i >= unacked_count(l))
		return;
	l->ring[(l->head + i) & l->mask].sent_time = now;
	/* The timer runs from when the oldest packet actually left, not from when it was queued. */
	if (i == 0 && !l->retx_pending)
		l->retx_deadline = now + l->c.rto;
}

/* Every unacked packet was just resent: they all start waiting again. */
void dnp_link_retx_done(struct dnp_link *l, uint64_t now)
{
	uint32_t i;

	for (i = l->head; i != l->tail; i++)
		l->ring[i & l->mask].sent_time = now;
	l->retx_pending = false;
	l->retx_deadline = now + l->c.rto;
}

unsigned dnp_link_drain(struct dnp_link *l, void **out, unsigned max)
{
	unsigned n = 0;

	while (n < max && l->head != l->tail) {
		out[n++] = l->ring[l->head & l->mask].pkt;
		l->head++;
	}
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

	if (unacked_count(l) > 0 && !l->retx_pending && now >= l->retx_deadline) {
		if (l->retries >= l->c.max_retries)
			return go_broken(l, now);
		l->retries++;
		l->retx_pending = true;
		l->st.retx_rounds++;
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

uint8_t dnp_link_epoch(const struct dnp_link *l)
{
	return l->epoch;
}

bool dnp_link_sends_reset(const struct dnp_link *l)
{
	return l->state != DNP_LINK_UP || l->announce;
}

bool dnp_link_reset_due(const struct dnp_link *l)
{
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
	}
	credit[0].received = l->c.nonce;
	credit[1].received = l->state == DNP_LINK_UP ? DNP_RESET_ANNOUNCE : 0;
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
		v->latched = (struct dnp_credit_vc){ .occupancy = v->occ, .received = 0 };
	}
	for (uint32_t k = l->head; k != l->tail; k++)
		l->ring[k & l->mask].seq = seq++;
	l->next_seq = seq;
	l->rx_expected = 0;
	l->retries = 0;
	l->retx_pending = false;
	if (l->head != l->tail)
		l->retx_deadline = now + l->c.rto;
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
