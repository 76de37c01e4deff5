/* SPDX-License-Identifier: MIT */
/*
 * ctl.c — dnpd's answers to its sessions and to dnpctl: the session
 * callbacks (port open/close, buffer registration) and the text of
 * `dnpctl stats` (engine, routes, links with their wiring, VC and transport
 * counters, daemon counters, ports, and with DNPD_STATS_TORUS the other
 * nodes' wiring). The report is cut at the caller's capacity, never overrun.
 * And `dnpctl capture`: a capture of every link's frames started and stopped
 * while the daemon runs, into a file the requester opened.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arb.h"
#include "dnpd_int.h"
#include "pcap.h"

/* ------------------------------------------------------- session ops */

static int dnpd_op_port_open(void *ctx, unsigned port)
{
	struct dnpd *d = ctx;

	return dnp_engine_port_open(d->e, port);
}

static void dnpd_op_port_close(void *ctx, unsigned port)
{
	struct dnpd *d = ctx;

	dnp_engine_port_close(d->e, port);
}

static int dnpd_op_reg(void *ctx, unsigned port, uint64_t va, uint64_t len, unsigned flags,
		       uintptr_t priv, uint32_t *key)
{
	struct dnpd *d = ctx;

	return dnp_engine_register(d->e, port, va, len, flags, priv, key);
}

static int dnpd_op_unreg(void *ctx, unsigned port, uint64_t va)
{
	struct dnpd *d = ctx;

	return dnp_engine_unregister(d->e, port, va);
}

const char *const dnpd_dir_names[DNP_NDIRS] = { "X+", "X-", "Y+", "Y-", "Z+", "Z-" };

const char *dnpd_state_name(unsigned s)
{
	switch (s) {
	case DNP_LINK_INIT:
		return "INIT";
	case DNP_LINK_UP:
		return "UP";
	case DNP_LINK_BROKEN:
		return "BROKEN";
	default:
		return "?";
	}
}

void dnpd_out(struct dnpd_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->len + 1 >= o->cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len = o->len + (size_t)n < o->cap ? o->len + (size_t)n : o->cap - 1;
}

/* The "link" lines of direction i: state, wiring, link, VC, impairment and transport counters. */
static void ctl_link(const struct dnpd *d, struct dnpd_out *o, unsigned i)
{
	const struct dnpd_link *l = &d->link[i];
	const struct dnp_link_stats *ls;

	if (!l->exists) {
		dnpd_out(o, "link %s none\n", dnpd_dir_names[i]);
		return;
	}
	ls = dnp_engine_link_stats(d->e, i);
	dnpd_wiring_line(d, o, i);
	dnpd_out(o, "link %s state %s local %s remote %s\n", dnpd_dir_names[i],
		 dnpd_state_name(dnp_engine_link_state(d->e, i)), l->local, l->remote);
	if (ls)
		dnpd_out(o,
			 "link %s epoch %u rx_stale %" PRIu64 " tx_resets %" PRIu64
			 " rx_resets %" PRIu64 " breaks %" PRIu64 " ups %" PRIu64 "\n",
			 dnpd_dir_names[i], dnp_link_epoch(dnp_engine_link(d->e, i)), ls->rx_stale,
			 ls->tx_resets, ls->rx_resets, ls->breaks, ls->ups);
	if (ls)
		dnpd_out(o,
			 "link %s tx_frames %" PRIu64 " tx_words %" PRIu64
			 " tx_retx_frames %" PRIu64 " retx_rounds %" PRIu64 " tx_credits %" PRIu64
			 " rx_frames %" PRIu64 " rx_words %" PRIu64 " rx_credits %" PRIu64
			 " rx_dup %" PRIu64 " rx_out_of_order %" PRIu64 " rx_overflow %" PRIu64
			 " credit_stalls %" PRIu64 " buf_stalls %" PRIu64
			 " rx_buf_overflow %" PRIu64 " fast_retx %" PRIu64 " rx_held %" PRIu64
			 " rtt_samples %" PRIu64 " rto %" PRIu64 "\n",
			 dnpd_dir_names[i], ls->tx_frames, ls->tx_words, ls->tx_retx_frames,
			 ls->retx_rounds, ls->tx_credits, ls->rx_frames, ls->rx_words,
			 ls->rx_credits, ls->rx_dup, ls->rx_out_of_order, ls->rx_overflow,
			 ls->credit_stalls, ls->buf_stalls, ls->rx_buf_overflow, ls->fast_retx,
			 ls->rx_held, ls->rtt_samples, dnp_link_rto(dnp_engine_link(d->e, i)));
	for (unsigned vc = 0; ls && vc < d->conf.vcs && vc < DNP_MAX_VC; vc++) {
		const struct dnp_link *dl = dnp_engine_link(d->e, i);

		dnpd_out(o,
			 "link %s vc %u tx_packets %" PRIu64 " tx_words %" PRIu64
			 " rx_packets %" PRIu64 " rx_words %" PRIu64 " rx_overflow %" PRIu64
			 " credit_stalls %" PRIu64 " remote_estimate %u rx_fifo %u\n",
			 dnpd_dir_names[i], vc, ls->vc[vc].tx_packets, ls->vc[vc].tx_words,
			 ls->vc[vc].rx_packets, ls->vc[vc].rx_words, ls->vc[vc].rx_overflow,
			 ls->vc[vc].credit_stalls, dnp_link_estimate(dl, vc),
			 dnp_link_rx_occupancy(dl, vc));
	}
	{
		const struct dnp_impair_stats *is = dnp_impair_stats(l->t);
		char spec[256];

		dnp_impair_format(&l->impair, spec, sizeof(spec));
		dnpd_out(o,
			 "link %s impair %s frames %" PRIu64 " dropped %" PRIu64
			 " corrupted %" PRIu64 " duplicated %" PRIu64 " reordered %" PRIu64
			 " delayed %" PRIu64 "\n",
			 dnpd_dir_names[i], dnp_impair_active(&l->impair) ? spec : "off",
			 is->frames, is->dropped, is->corrupted, is->duplicated, is->reordered,
			 is->delayed);
	}
	dnpd_out(o,
		 "link %s transport tx_frames %" PRIu64 " rx_frames %" PRIu64
		 " tx_backlogged %" PRIu64 " tx_errors %" PRIu64 " rx_errors %" PRIu64
		 " rx_dropped %" PRIu64 "\n",
		 dnpd_dir_names[i], l->tx_frames, l->rx_frames, l->tx_backlogged, l->tx_errors,
		 l->rx_errors, l->rx_dropped);
	if (l->lq.limit) /* --link-queue (transport/linkq.h): bytes ahead at each hand-off */
		dnpd_out(o,
			 "link %s queue limit %u holds %" PRIu64 " handoffs %" PRIu64
			 " ahead_mean %" PRIu64 " ahead_max %u\n",
			 dnpd_dir_names[i], l->lq.limit, l->lq.holds, l->lq.handoffs,
			 l->lq.handoffs ? l->lq.ahead_sum / l->lq.handoffs : 0, l->lq.ahead_max);
	if (l->backend && dnp_transport_ops_of(l->backend)->counters) {
		const struct dnp_transport_ops *bo = dnp_transport_ops_of(l->backend);
		char c[512];

		if (bo->counters(l->backend, c, sizeof(c)) > 0)
			dnpd_out(o, "link %s %s %s\n", dnpd_dir_names[i], bo->name, c);
	}
}

/* The "daemon" line and one "port" line per application session. */
static void ctl_daemon(const struct dnpd *d, struct dnpd_out *o)
{
	unsigned i;

	dnpd_out(o,
		 "daemon iterations %" PRIu64 " sleeps %" PRIu64 " quiet_periods %" PRIu64
		 " timer_wakeups %" PRIu64 " mem_copies %" PRIu64 " mem_vm %" PRIu64
		 " mem_faults %" PRIu64 " cmd_rejects %" PRIu64 " yields %" PRIu64
		 " yields_alone %" PRIu64 " held_passes %" PRIu64 " mem_readahead_hits %" PRIu64
		 " mem_gathered_writes %" PRIu64 " handoffs %" PRIu64 " kicks %" PRIu64
		 " kicked %" PRIu64 " pin_handoffs %" PRIu64 " pin_spins %" PRIu64
		 " busy_blocks %" PRIu64 " co_holds %" PRIu64 " co_joined %" PRIu64
		 " co_missed %" PRIu64 " rx_after %" PRIu64 "\n",
		 d->iters, d->sleeps, d->quiets, d->wakeups_timer, d->mem_copies, d->mem_vm,
		 d->mem_faults, d->cmd_rejects, d->yield.yields, d->yield.alone, d->holds,
		 d->mem_ra_hits, d->mem_gathered, d->handoffs, d->kicks, d->kicked, d->pin_handoffs,
		 d->pin_spins, d->yield.busy, d->co_holds, d->co_joined, d->co_missed, d->rx_after);
	for (i = 0; i < d->sess->nports; i++) {
		const struct dnpd_session *se = d->sess->by_port[d->sess->ports[i]];

		dnpd_out(o,
			 "port %u pid %d cmd_queued %u ev_queued %u heap %" PRIu64
			 " buffers %u outstanding %u ring_faults %" PRIu64 " ev_lost %" PRIu64
			 " vm_denied %" PRIu64 "\n",
			 se->port, (int)se->pid, dnp_ring_count(se->cmd), dnp_ring_count(se->ev),
			 se->heap_size, se->nbufs, se->inflight, se->cmd->faults + se->ev->faults,
			 se->ev_lost, se->vm_denied);
	}
}

/* The text of `dnpctl stats`: engine, links (state and counters), daemon, ports. */
static size_t dnpd_op_stats(void *ctx, char *buf, size_t cap)
{
	struct dnpd *d = ctx;
	const struct dnp_engine_stats *es = dnp_engine_stats(d->e);
	struct dnpd_out o = { buf, cap, 0 };
	struct dnp_coord s = d->conf.self;
	unsigned i;

	dnpd_out(&o, "node %u (%u,%u,%u) of %ux%ux%u transport %s idle %s uptime_ms %" PRIu64 "\n",
		 dnp_torus_id(&d->conf.torus, s), s.x, s.y, s.z, d->conf.torus.dim[0],
		 d->conf.torus.dim[1], d->conf.torus.dim[2], d->conf.transport,
		 d->conf.idle == DNPD_IDLE_BUSY ? "busy" : "adaptive",
		 (uint64_t)((dnpd_now() - d->start) / 1000000u));
	/* Where dnpctl sensor|timer and impair find this daemon's files (any socket name). */
	if (d->lfm.regs)
		dnpd_out(&o, "file lofamo %s\n", d->lfm.path);
	dnpd_out(&o, "file impair %s\n", d->impair_path);
	dnpd_out(&o,
		 "engine cmds_accepted %" PRIu64 " cmds_ok %" PRIu64 " cmds_failed %" PRIu64
		 " pkts_injected %" PRIu64 " pkts_forwarded %" PRIu64 " pkts_delivered %" PRIu64
		 " bytes_delivered %" PRIu64 " rx_crc_errors %" PRIu64 " rx_malformed %" PRIu64
		 " rx_misrouted %" PRIu64 " deliver_errors %" PRIu64 " events %" PRIu64
		 " hops_total %" PRIu64 " cmpl_frames %" PRIu64 " pending %" PRIu64
		 " rx_nobuf %" PRIu64 " rx_direct %" PRIu64 " rx_burst_fast %" PRIu64
		 " tx_onepass %" PRIu64 " tx_onepass_faults %" PRIu64 " tx_onepass_held %" PRIu64
		 "\n",
		 es->cmds_accepted, es->cmds_ok, es->cmds_failed, es->pkts_injected,
		 es->pkts_forwarded, es->pkts_delivered, es->bytes_delivered, es->rx_crc_errors,
		 es->rx_malformed, es->rx_misrouted, es->deliver_errors, es->events, es->hops_total,
		 es->cmpl_frames, dnp_engine_pending(d->e), es->rx_nobuf, es->rx_direct,
		 es->rx_burst_fast, es->tx_onepass, es->tx_onepass_faults, es->tx_onepass_held);
	dnpd_out(&o,
		 "routes broken_cables %u sick_cables %u route_tx %" PRIu64 " route_rx %" PRIu64
		 " route_changes %" PRIu64 " route_overflow %" PRIu64 " sick_avoided %" PRIu64
		 " adaptive_hops %" PRIu64 "\n",
		 (unsigned)(dnp_engine_router(d->e)->n_faults - dnp_engine_router(d->e)->n_sick),
		 (unsigned)dnp_engine_router(d->e)->n_sick, es->route_tx, es->route_rx,
		 es->route_changes, es->route_overflow, es->sick_avoided, es->adaptive_hops);
	if (d->conf.congestion) /* congestion management (docs/protocol.md, "Congestion marks") */
		dnpd_out(&o,
			 "congestion mode %s marked %" PRIu64 " echoes %" PRIu64 " cuts %" PRIu64
			 " held %" PRIu64 " bypassed %" PRIu64 "\n",
			 dnp_congestion_name(d->conf.congestion), es->cg_marked, es->cg_echoes,
			 es->cg_cuts, es->cg_held, es->cg_bypassed);
	if (d->conf.arbitration) /* traffic classes (docs/routing.md, "Top-class latency") */
		dnpd_out(&o, "classes arbitration %s low_payload %u top_reserve %u link_queue %u\n",
			 dnp_arb_name(d->conf.arbitration), d->conf.low_payload,
			 d->conf.top_reserve, d->conf.link_queue);
	dnpd_out(&o,
		 "bounds rx_wrong_link %" PRIu64 " deliver_timeouts %" PRIu64
		 " reasm_timeouts %" PRIu64 " rx_events_lost %" PRIu64 " rx_incomplete %" PRIu64
		 " rx_incomplete_msgs %" PRIu64 " rx_refused %" PRIu64 " query_resends %" PRIu64
		 "\n",
		 es->rx_wrong_link, es->deliver_timeouts, es->reasm_timeouts, es->rx_events_lost,
		 es->rx_incomplete, es->rx_incomplete_msgs, es->rx_refused, es->query_resends);
	for (i = 0; i < DNP_NDIRS; i++)
		ctl_link(d, &o, i);
	ctl_daemon(d, &o);
	if (d->sess->stats_arg & DNPD_STATS_TORUS) {
		uint64_t now = dnpd_now();
		int r = dnpd_wire_ask(d, now);

		dnpd_out(&o, "torus_query round %u error %d malformed %" PRIu64 "\n", d->wire_seq,
			 r, d->wire_bad);
		dnpd_wire_report(d, &o, now);
	}
	return o.len;
}

/* Points every open link's capture at p (NULL: none). */
static void ctl_capture_links(struct dnpd *d, struct dnp_pcap *p)
{
	for (unsigned i = 0; i < DNP_NDIRS; i++)
		if (d->link[i].exists)
			dnp_impair_capture(d->link[i].t, p);
}

/*
 * DNP_SESS_CAPTURE (dnpd.h, struct dnpd_sess_ops): the file is the
 * requester's (it came as a descriptor over the socket, from a process of
 * our user or root), so the daemon writes nothing it was only told the name
 * of. It must be a regular empty file open for writing: never a pipe or a
 * terminal the polling thread could block on, never one being overwritten.
 */
static int dnpd_op_capture(void *ctx, int fd, uint64_t *frames, uint64_t *bytes)
{
	struct dnpd *d = ctx;
	struct stat st;
	int r, fl;

	*frames = *bytes = 0;
	if (fd < 0) {
		if (!d->pcap)
			return -ENOENT;
		ctl_capture_links(d, NULL);
		dnp_pcap_flush(d->pcap);
		*frames = dnp_pcap_stats(d->pcap)->frames;
		*bytes = dnp_pcap_stats(d->pcap)->bytes;
		r = dnp_pcap_close(d->pcap);
		d->pcap = NULL;
		d->conf.pcap[0] = 0; /* links opened again later are not captured */
		dnpd_log(DNPD_INFO, "capture stopped: %" PRIu64 " frames, %" PRIu64 " bytes%s",
			 *frames, *bytes, r ? ", cut by a write error" : "");
		return r;
	}
	if (d->pcap)
		return -EBUSY;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || ((fl & O_ACCMODE) != O_WRONLY && (fl & O_ACCMODE) != O_RDWR))
		return -EBADF;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size != 0 ||
	    lseek(fd, 0, SEEK_CUR) != 0)
		return -EINVAL;
	r = dnp_pcap_open_fd(fd, &d->pcap);
	if (r) {
		d->pcap = NULL;
		return r;
	}
	ctl_capture_links(d, d->pcap);
	*bytes = dnp_pcap_stats(d->pcap)->bytes;
	dnpd_log(DNPD_INFO, "capture started (dnpctl capture)");
	return 0;
}

const struct dnpd_sess_ops dnpd_sess_ops = {
	.port_open = dnpd_op_port_open,
	.port_close = dnpd_op_port_close,
	.reg = dnpd_op_reg,
	.unreg = dnpd_op_unreg,
	.stats = dnpd_op_stats,
	.capture = dnpd_op_capture,
};
