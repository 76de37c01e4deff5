/* SPDX-License-Identifier: MIT */
/*
 * io.c — one pass of dnpd's data path: commands from the apps' rings into
 * the engine (a refused one still gets its completion event), frames from
 * the links into the engine (credits only absorbed while quiet), the
 * engine's frames out to the transports (what a transport cannot take now is
 * copied to the link's backlog and sent first next time), and the engine's
 * events to the apps' rings (with their wake-ups).
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "dnpd_int.h"

/*
 * A command the engine refused outright still owes the app its one
 * completion event. The caller made sure the event ring has room for it.
 */
static void dnpd_reject(struct dnpd *d, struct dnpd_session *se, const struct dnp_cmd *c, int r)
{
	struct dnp_event ev = {
		.type = DNP_EV_ERROR,
		.op = c->op,
		.port = c->dst_port,
		.peer_x = c->dst_x,
		.peer_y = c->dst_y,
		.peer_z = c->dst_z,
		.status = (int8_t)r,
		.len = (uint32_t)c->len,
		.va = c->flags & DNP_CMD_F_INLINE ? 0 : c->local_va,
		.cookie = c->cookie,
	};

	d->cmd_rejects++;
	dnpd_sess_ev_push(se, &ev, 1);
}

unsigned dnpd_poll_cmds(struct dnpd *d, uint64_t now)
{
	unsigned k, work = 0;

	for (k = 0; k < d->sess->nports; k++) {
		struct dnpd_session *se = d->sess->by_port[d->sess->ports[k]];
		/* commands that succeeded with no event (DNP_CMD_F_NO_EVENT) leave the quota too */
		uint32_t quiet = dnp_engine_quiet_take(d->e, se->port);

		se->inflight -= quiet < se->inflight ? quiet : se->inflight;
		if (se->pend_i == se->pend_n) {
			se->pend_i = 0;
			se->pend_n = dnpd_sess_cmd_pop(se, se->pend, DNPD_CMD_BURST);
		}
		while (se->pend_i < se->pend_n) {
			int r = 0;
			/* a burst: it stops, untouched, at the first command not accepted */
			unsigned got =
				dnp_engine_submit_burst(d->e, se->port, &se->pend[se->pend_i],
							se->pend_n - se->pend_i, &r, now);

			se->pend_i += got;
			work += got;
			/* -EAGAIN: the node's command table is full: keep it, retry next pass. */
			if (r == 0 || r == -EAGAIN)
				break;
			/*
			 * Refused without being accepted (no side effect): it
			 * waits for event room rather than lose its event.
			 */
			if (dnpd_sess_ev_room(se) == 0)
				break;
			dnpd_reject(d, se, &se->pend[se->pend_i], r);
			se->pend_i++;
			work++;
		}
	}
	return work;
}

/*
 * Link credits only (peeked while quiet). The kind's byte as sent (H0 byte
 * 8 of the frame, low four bits: docs/protocol.md), not a decode: a hint for
 * the work count, trusted for nothing else, and no CRC pass over a frame the
 * engine checks anyway (docs/performance.md, "Passes over the payload").
 */
#define DNPD_KVF_OFF 24u
static bool dnpd_is_credit(const struct dnp_rx_frame *f)
{
	return f->len >= DNP_FRAME_OVERHEAD && (f->data[DNPD_KVF_OFF] & 0x0fu) == DNP_PKT_CREDIT;
}

/*
 * Links whose receive is a system call (udp) and which have nothing: one
 * poll() for all of them instead of one empty receive call each (1.0 us
 * each here; poll of 2 or 6 sockets 0.8 or 1.4 us). Returns the bit mask
 * of directions to skip this pass.
 */
static unsigned dnpd_rx_idle(struct dnpd *d)
{
	struct pollfd pf[DNP_NDIRS];
	unsigned dir, n = 0, skip = 0, dirs[DNP_NDIRS];

	for (dir = 0; dir < DNP_NDIRS; dir++) {
		struct dnpd_link *l = &d->link[dir];
		int fd;

		if (!l->exists || !l->ops->rx_gate_fd || (fd = l->ops->rx_gate_fd(l->t)) < 0)
			continue;
		pf[n] = (struct pollfd){ .fd = fd, .events = POLLIN };
		dirs[n++] = dir;
	}
	if (n < 2 || poll(pf, n, 0) < 0) /* one link: its receive call is the cheaper look */
		return 0;
	for (unsigned i = 0; i < n; i++)
		if (!pf[i].revents)
			skip |= 1u << dirs[i];
	return skip;
}

/* Returns the frames received; while quiet, only those that are not link credits. */
unsigned dnpd_poll_rx(struct dnpd *d, uint64_t now)
{
	struct dnp_rx_frame rx[DNPD_BURST];
	unsigned dir, work = 0, skip = dnpd_rx_idle(d);

	for (dir = 0; dir < DNP_NDIRS; dir++) {
		struct dnpd_link *l = &d->link[dir];
		int n, i;

		if (!l->exists || (skip & (1u << dir)))
			continue;
		n = l->ops->rx_burst(l->t, rx, DNPD_BURST);
		if (n < 0) {
			l->rx_errors++;
			continue;
		}
		struct dnp_frame fr[DNPD_BURST];
		int rcs[DNPD_BURST];

		for (i = 0; i < n; i++) {
			if (!d->quiet || !dnpd_is_credit(&rx[i]))
				work++;
			fr[i] = (struct dnp_frame){ rx[i].data, rx[i].len };
		}
		/* one pass over the burst, bookkeeping per burst (engine.h) */
		(void)dnp_engine_rx_burst(d->e, dir, fr, (unsigned)n, rcs, now);
		for (i = 0; i < n; i++) {
			int rr = rcs[i];

			if (rr < 0)
				l->rx_dropped++;
			if (rr == -EILSEQ)
				d->lfm.crc_errors[dir]++; /* the DFM's sick-link ratio */
			if (rr == -EXDEV)
				dnpd_wiring_seen(d, dir, &rx[i]);
			if (rr == -ECONNREFUSED)
				dnpd_handshake_refused(d, dir, &rx[i], now);
		}
		l->rx_frames += (unsigned)n;
	}
	return work;
}

/* Sends the backlog; true when it is empty. */
static bool dnpd_flush_backlog(struct dnpd_link *l)
{
	struct dnp_tx_frame tx[DNPD_BURST];
	unsigned i, n = l->bl_n - l->bl_i;
	int r;

	if (n == 0)
		return true;
	for (i = 0; i < n; i++) {
		tx[i].data = l->bl_data + (size_t)(l->bl_i + i) * DNP_MAX_FRAME;
		tx[i].len = l->bl_len[l->bl_i + i];
	}
	r = l->ops->tx_burst(l->t, tx, n);
	if (r < 0) {
		l->tx_errors++;
		return false;
	}
	l->tx_frames += (unsigned)r;
	l->bl_i += (unsigned)r;
	if (l->bl_i < l->bl_n)
		return false;
	l->bl_i = l->bl_n = 0;
	return true;
}

/*
 * One pass (docs/performance.md, "One pass on the first transmission"): the
 * engine writes link l's frames straight into the backend's free places
 * (tx_reserve/tx_commit), so a PUT's payload goes from the application's
 * heap into the shm slot in one copy; used while such PUTs wait
 * (DNP_TX_DUE_DIRECT), the copying path otherwise. A full ring leaves the
 * frames in the engine (no backlog). Returns the frames sent, or -1 when the backend says
 * to copy this time (an impairment or a capture on the link).
 */
static int dnpd_flush_direct(struct dnpd *d, struct dnpd_link *l, unsigned dir, uint64_t now)
{
	uint8_t *bufs[DNPD_BURST];
	uint32_t cap = 0, lens[DNPD_BURST];
	unsigned n;
	int k, r;

	k = l->ops->tx_reserve(l->t, bufs, &cap, DNPD_BURST);

	if (k == -ENOTSUP)
		return -1;
	if (k <= 0) {
		if (k < 0)
			l->tx_errors++;
		return 0;
	}
	n = dnp_engine_tx_burst_into(d->e, dir, bufs, cap, (unsigned)k, lens, now);
	if (n == 0)
		return 0;
	dnp_linkq_sent(&l->lq);
	r = l->ops->tx_commit(l->t, lens, n);
	if (r < 0) { /* cannot happen (the engine wrote within the caps): lost, the link resends */
		l->tx_errors++;
		r = 0;
	}
	l->tx_frames += (unsigned)r;
	return (int)n;
}

unsigned dnpd_flush_tx(struct dnpd *d, uint64_t now)
{
	struct dnp_frame fr[DNPD_BURST];
	struct dnp_tx_frame tx[DNPD_BURST];
	unsigned dir, work = 0;

	d->lq_held = false;
	for (dir = 0; dir < DNP_NDIRS; dir++) {
		struct dnpd_link *l = &d->link[dir];
		unsigned n, i;
		int r;

		if (!l->exists)
			continue;
		if (!dnpd_flush_backlog(l)) {
			/* A BROKEN link's frames are the engine's business now: drop ours. */
			if (dnp_engine_link_state(d->e, dir) == DNP_LINK_BROKEN)
				l->bl_i = l->bl_n = 0;
			continue;
		}
		/* --link-queue: the backend's FIFO is at its limit, the engine keeps its frames */
		if (!dnp_linkq_open(&l->lq, l->backend)) {
			d->lq_held = true;
			continue;
		}
		if (l->ops->tx_reserve && l->ops->tx_commit && l->ops->mtu(l->t) >= DNP_MAX_FRAME) {
			int sent = -1;

			dnp_engine_link_direct(d->e, dir);
			/* only while PUTs wait whose payload is in the heap: else copy as before */
			if (dnp_engine_stats(d->e)->tx_onepass_held &&
			    (dnp_engine_tx_due(d->e, dir, now) & DNP_TX_DUE_DIRECT))
				sent = dnpd_flush_direct(d, l, dir, now);
			if (sent >= 0) {
				work += (unsigned)sent;
				continue;
			}
		}
		n = dnp_engine_tx_burst(d->e, dir, fr, DNPD_BURST, now);
		if (n == 0)
			continue;
		dnp_linkq_sent(&l->lq);
		for (i = 0; i < n; i++) {
			tx[i].data = fr[i].data;
			tx[i].len = fr[i].len;
		}
		r = l->ops->tx_burst(l->t, tx, n);
		if (r < 0) {
			l->tx_errors++;
			r = 0;
		}
		l->tx_frames += (unsigned)r;
		/* The engine's frames die at its next call: keep copies of the rest. */
		for (i = (unsigned)r; i < n; i++) {
			uint32_t len = fr[i].len <= DNP_MAX_FRAME ? fr[i].len : DNP_MAX_FRAME;

			memcpy(l->bl_data + (size_t)l->bl_n * DNP_MAX_FRAME, fr[i].data, len);
			l->bl_len[l->bl_n++] = len;
			l->tx_backlogged++;
		}
		work += n;
	}
	return work;
}

/*
 * Pushes the engine's events to the apps. Sets d->ev_here when one of the
 * apps that got events last polled on our CPU (its app_cpu hint): only then
 * does a yield let it run (dnpd_loop).
 */
unsigned dnpd_push_events(struct dnpd *d)
{
	struct dnp_event ev[DNPD_EV_BURST];
	unsigned k, work = 0;
	int cpu = -2;

	for (k = 0; k < d->sess->nports; k++) {
		struct dnpd_session *se = d->sess->by_port[d->sess->ports[k]];
		/* A room dnpd_sess_ev_push honours whatever the app writes (ring.h). */
		uint32_t room = dnpd_sess_ev_room(se);
		const struct dnp_engine_cntr *cv;
		uint64_t cm = dnp_engine_cntr_take(d->e, se->port, &cv);
		unsigned n;

		if (cm) /* counters first: they need no room */
			dnpd_sess_cntr_publish(se, cm, cv);
		if (room == 0)
			continue; /* the engine keeps them: back-pressure reaches the senders */
		n = dnp_engine_poll_events(d->e, se->port, ev,
					   room < DNPD_EV_BURST ? room : DNPD_EV_BURST);
		if (n == 0 && !se->ev_lost)
			continue;
		dnpd_sess_ev_push(se, ev, n);
		work += n;
		if (n && !d->ev_here) {
			if (cpu == -2)
				cpu = sched_getcpu();
			/* untrusted, read once: a wrong value costs a yield or skips one */
			d->ev_here = atomic_load_explicit(&se->ctl->app_cpu,
							  memory_order_relaxed) == cpu;
		}
	}
	return work;
}
