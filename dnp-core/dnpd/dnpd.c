/* SPDX-License-Identifier: MIT */
/*
 * dnpd — one DNP node: the engine (dnp-core/engine.h), its virtual links
 * (transport/transport.h), application sessions (sess.c) and the poll loop
 * that drives them from a single thread, run to completion:
 *
 *   app command rings -> dnp_engine_submit
 *   transport rx_burst -> dnp_engine_rx
 *   dnp_engine_run
 *   dnp_engine_tx_burst -> transport tx_burst (copied out before the next
 *                          engine call; what the transport cannot take now
 *                          is copied to a per-link backlog and sent first)
 *   dnp_engine_poll_events -> each port's event ring (+ wake a sleeping app)
 *   every DNPD_HOUSE_NS: sockets (accept, requests, closed apps), link
 *                        carrier, the .up file
 *
 * Idle policy (docs/dnpd.md): 'busy' spins; 'adaptive' calls sched_yield()
 * on every empty pass until DNPD_YIELD_NS after the last work, then sleeps
 * on the daemon's doorbell (futex; poll() for udp links) until the engine's
 * next deadline. Once nothing but link credits happened for DNPD_ACTIVE_NS
 * the daemon is 'quiet': incoming credits are absorbed (dnp_engine_rx) but
 * the engine runs, and so sends our own credits, only every DNPD_COARSE_NS,
 * until real work shows up (a command, a frame that is not a credit, a
 * socket request). Without this, credits of 8 idle daemons wake each other
 * in a chain at every credit period (measured on 2 shared cores; docs/dnpd.md).
 * Links without a wait fd (dpdk) cannot wake the daemon: its sleeps are
 * capped at DNPD_NOWAIT_SLEEP_NS, or DNPD_NOWAIT_QUIET_SLEEP_NS when quiet.
 *
 * Time is CLOCK_MONOTONIC in nanoseconds, read once per loop iteration.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "dnp_parse.h"
#include "dnp_shmguard.h"
#include "dnpd_int.h"
#include "notify.h"
#include "pcap.h"

static atomic_bool dnpd_stop;
static struct dnp_doorbell *dnpd_sig_bell;
static int dnpd_sig_wake_fd = -1;

static void dnpd_on_signal(int sig)
{
	uint64_t one = 1;

	(void)sig;
	atomic_store_explicit(&dnpd_stop, true, memory_order_relaxed);
	/* Async-signal-safe: atomics and system calls only. */
	if (dnpd_sig_bell)
		dnp_doorbell_ring(dnpd_sig_bell);
	if (dnpd_sig_wake_fd >= 0 && write(dnpd_sig_wake_fd, &one, sizeof(one)) < 0)
		(void)0;
}

static void dnpd_up_file(struct dnpd *d, bool all_up)
{
	if (all_up && !d->up_file) {
		int fd = open(d->up_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd >= 0) {
			close(fd);
			d->up_file = true;
			dnpd_log(DNPD_INFO, "all links UP: %s", d->up_path);
			dnpd_notify_links(true);
		}
	} else if (!all_up && d->up_file) {
		unlink(d->up_path);
		d->up_file = false;
		dnpd_notify_links(false);
	}
}

static void dnpd_impair_poll(struct dnpd *d, uint64_t now);
static void dnpd_kick_link_up(struct dnpd *d, unsigned dir);

/*
 * A link lost is a fault (warn) while the daemon runs, and part of an
 * orderly shutdown (info) once it was asked to stop.
 */
static int dnpd_fault_level(void)
{
	return atomic_load_explicit(&dnpd_stop, memory_order_relaxed) ? DNPD_INFO : DNPD_WARN;
}

/*
 * The link's peer started over (RESET frames received since the last look):
 * the backend forgets what it agreed with the peer before (transport.h,
 * peer_reset; udp: packing, which a restarted peer of an older build does
 * not read: docs/protocol.md, "The udp link's datagrams").
 */
static void dnpd_peer_reset(struct dnpd *d, unsigned dir)
{
	struct dnpd_link *l = &d->link[dir];
	const struct dnp_link_stats *ls = dnp_engine_link_stats(d->e, dir);
	const struct dnp_transport_ops *bo = dnp_transport_ops_of(l->backend);

	if (!ls || ls->rx_resets == l->rx_resets)
		return;
	l->rx_resets = ls->rx_resets;
	if (bo->peer_reset)
		bo->peer_reset(l->backend);
}

/* Slow work: sockets, link carrier, link states. Returns socket requests handled. */
static unsigned dnpd_house(struct dnpd *d, uint64_t now)
{
	unsigned dir, work;
	bool all_up = true;

	work = dnpd_sess_service(d->sess);
	dnpd_impair_poll(d, now);
	dnp_pcap_tick(d->pcap);
	for (dir = 0; dir < DNP_NDIRS; dir++) {
		struct dnpd_link *l = &d->link[dir];
		enum dnp_link_state st;

		if (!l->exists)
			continue;
		/*
		 * Broken when up() turns false (carrier lost, port down, peer
		 * closed). When it is true again the engine's reset handshake
		 * brings the link back (engine.h), so we only watch for the
		 * next time it goes down.
		 */
		{
			bool up = l->ops->up(l->t);

			if (up) {
				if (l->down_reported)
					dnpd_log(DNPD_INFO,
						 "link %s: transport %s reports the link up again",
						 dnpd_dir_names[dir], l->ops->name);
				l->seen_up = true;
				l->down_reported = false;
			} else if (l->seen_up && !l->down_reported) {
				dnpd_log(dnpd_fault_level(),
					 "link %s: transport %s reports the link down",
					 dnpd_dir_names[dir], l->ops->name);
				dnp_engine_link_down(d->e, dir, now);
				l->down_reported = true;
			}
		}
		st = dnp_engine_link_state(d->e, dir);
		if (st != l->state) {
			const struct dnp_link_stats *ls = dnp_engine_link_stats(d->e, dir);
			bool left = ls && ls->peer_left != l->peer_left;

			/* a neighbour that said it is stopping left in order: not a fault */
			dnpd_log(st == DNP_LINK_BROKEN && !left ? dnpd_fault_level() : DNPD_INFO,
				 "link %s %s -> %s%s", dnpd_dir_names[dir],
				 dnpd_state_name(l->state), dnpd_state_name(st),
				 left && st == DNP_LINK_BROKEN ? " (the neighbour is stopping)" :
								 "");
			if (ls)
				l->peer_left = ls->peer_left;
			l->state = (uint8_t)st;
			if (st == DNP_LINK_UP)
				dnpd_kick_link_up(d, dir);
		}
		all_up = all_up && st == DNP_LINK_UP;
		dnpd_peer_reset(d, dir);
	}
	dnpd_up_file(d, all_up);
	dnpd_lfm_house(&d->lfm, d->e, now);
	return work;
}

/* Frames still to send: the backlog, or frames the impairment holds (delay, reorder). */
static bool dnpd_backlogged(struct dnpd *d)
{
	unsigned dir;
	bool any = false;

	for (dir = 0; dir < DNP_NDIRS; dir++) {
		if (!d->link[dir].exists)
			continue;
		if (d->link[dir].bl_n || dnp_impair_flush(d->link[dir].t))
			any = true;
	}
	return any;
}

/* Sum of counters that move only with real traffic (not with link credits). */
static uint64_t dnpd_activity(const struct dnpd *d)
{
	const struct dnp_engine_stats *es = dnp_engine_stats(d->e);

	return es->cmds_accepted + es->pkts_injected + es->pkts_forwarded + es->pkts_delivered +
	       es->events;
}

static void dnpd_sleep_poll(struct dnpd *d, uint32_t seen, uint64_t timeout)
{
	struct pollfd pfd[DNPD_MAX_CONN + 2 + DNP_NDIRS];
	struct timespec ts = { (time_t)(timeout / 1000000000ull), (long)(timeout % 1000000000ull) };
	unsigned n = 0, dir;
	uint64_t junk;

	pfd[n++] = (struct pollfd){ .fd = d->sess->wake_fd, .events = POLLIN };
	for (dir = 0; dir < DNP_NDIRS; dir++) {
		int fd;

		if (!d->link[dir].exists)
			continue;
		fd = d->link[dir].ops->wait_fd(d->link[dir].t);
		if (fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	n += dnpd_sess_pollfds(d->sess, pfd + n, DNPD_MAX_CONN + 1);

	/* Armed (doorbell.h): sleep only if nobody rang since, with poll() for FUTEX_WAIT. */
	if (dnp_doorbell_seq(d->bell) == seen &&
	    !atomic_load_explicit(&dnpd_stop, memory_order_relaxed))
		ppoll(pfd, n, &ts, NULL);
	dnp_doorbell_disarm(d->bell);
	if (read(d->sess->wake_fd, &junk, sizeof(junk)) < 0)
		(void)0; /* EAGAIN: nobody wrote it */
}

static void dnpd_sleep(struct dnpd *d, uint32_t seen, uint64_t now)
{
	uint64_t dl = d->quiet ? d->quiet_next : dnp_engine_next_deadline(d->e);
	uint64_t lfm = dnpd_lfm_next_deadline(&d->lfm);
	uint64_t cap = d->poll_mode ? DNPD_POLL_MAX_NS : DNPD_FUTEX_MAX_NS;

	/*
	 * The DFM's deadlines too: a daemon asleep past its T_write leaves the
	 * DNP Watchdog Register unvalidated, and its HFM declares an omission
	 * (measured: udp daemons slept up to 200 ms, the poll cap, beside a
	 * 100 ms T_write).
	 */
	if (lfm < dl)
		dl = lfm;
	uint64_t timeout = dl == UINT64_MAX ? cap : dl > now ? dl - now : 0;

	if (d->nowait_links) {
		uint64_t nw = d->quiet ? DNPD_NOWAIT_QUIET_SLEEP_NS : DNPD_NOWAIT_SLEEP_NS;

		if (cap > nw)
			cap = nw;
	}
	if (timeout > cap)
		timeout = cap;
	if (timeout == 0) {
		dnp_doorbell_disarm(d->bell);
		return;
	}
	d->sleeps++;
	if (d->poll_mode)
		dnpd_sleep_poll(d, seen, timeout);
	else if (dnp_doorbell_sleep(d->bell, seen, timeout) == -ETIMEDOUT)
		d->wakeups_timer++;
}

/* Work turned up on the second look: not going to sleep after all. */
static void dnpd_disarm(struct dnpd *d)
{
	if (d->armed) {
		dnp_doorbell_disarm(d->bell);
		d->armed = false;
	}
}

/*
 * Pinned hand-off (docs/performance.md, "Pinned hand-off"). With dnp-run
 * --pin each CPU holds one node's daemon and another node's program. A
 * program waiting on a CPU where a neighbour daemon of ours is pinned blocks
 * on its event bell at once (client.c; we publish those CPUs in the bell's
 * kick_cpus). When we wake it (dnpd_sess_notify notes its CPU) we increment
 * that daemon's kick word, and the daemon, at its next idle pass, gives the
 * CPU to the program at once (dnpd_kicked) instead of polling on without
 * yields until the end of its window (dnp_yield.h). Everything read from a
 * neighbour's line is a hint: a wrong value costs a yield or a kick.
 */
#define DNPD_NBR_RETRY_NS 100000000ull /* a neighbour's bell file not there yet: try again */

/* Notes the neighbour node reached by the link in direction dir (one entry per node). */
static void dnpd_nbr_add(struct dnpd *d, unsigned dir)
{
	struct dnp_coord peer =
		dnp_torus_neighbour(&d->conf.torus, d->conf.self, (enum dnp_dir)dir);
	uint32_t id = dnp_torus_id(&d->conf.torus, peer);
	unsigned i;

	if (id == dnp_torus_id(&d->conf.torus, d->conf.self))
		return;
	for (i = 0; i < d->nnbr && d->nbr[i].id != id; i++)
		;
	if (i == d->nnbr)
		d->nbr[d->nnbr++] = (struct dnpd_nbr){ .id = id, .cpu = -1 };
	d->nbr[i].dirs |= (uint8_t)(1u << dir);
}

static void dnpd_nbr_unmap(struct dnpd_nbr *n)
{
	if (n->kick) {
		dnp_shmguard_del((uint8_t *)n->kick - DNP_SESS_KICK_OFF);
		munmap((uint8_t *)n->kick - DNP_SESS_KICK_OFF,
		       DNP_SESS_KICK_OFF + sizeof(struct dnp_sess_kick));
	}
	n->kick = NULL;
	n->cpu = -1;
}

/*
 * Maps neighbour n's kick line, in its daemon's bell file. The file is never
 * created here: a neighbour on another host has none in our run directory.
 * Errors: -errno of open/mmap, -EPROTO (not a regular file, or too short).
 */
static int dnpd_nbr_map(struct dnpd *d, struct dnpd_nbr *n)
{
	char local[DNPD_ADDR_MAX], remote[DNPD_ADDR_MAX], path[PATH_MAX];
	size_t len = DNP_SESS_KICK_OFF + sizeof(struct dnp_sess_kick);
	unsigned side;
	struct stat st;
	void *p;
	int fd, r;

	r = dnpd_conf_link_addr(&d->conf, (unsigned)__builtin_ctz(n->dirs), local, remote,
				sizeof(local), &side, path, sizeof(path));
	if (r)
		return r;
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < len) {
		close(fd);
		return -EPROTO;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	r = p == MAP_FAILED ? -errno : 0;
	close(fd);
	if (r)
		return r;
	/* its file may shrink under us (dnpd_guard): zeros, not SIGBUS */
	(void)dnp_shmguard_add(p, len);
	n->kick = (struct dnp_sess_kick *)(void *)((uint8_t *)p + DNP_SESS_KICK_OFF);
	return 0;
}

/*
 * Polling hand-off of the pinned placement (docs/performance.md, "Pinned
 * hand-off"): on with kicks, when an app of ours polls on a neighbour's CPU
 * (its app_cpu hint, read once) and no neighbour shares our CPU (there a
 * poller that does not yield keeps the CPU from another daemon). Then the
 * neighbour's app most likely polls on ours: after forwarding app commands
 * we yield to it at once (it is the next to get work on this CPU), and
 * otherwise we poll without yielding for DNP_YIELD_PIN_NS after our last
 * work or our last such yield (we are the next: the reply comes to us).
 */
static void dnpd_pin_poll(struct dnpd *d)
{
	unsigned k;

	d->pin_poll = false;
	if (!d->kick_on || !d->nbr_cpus || d->nbr_shares)
		return;
	for (k = 0; k < d->sess->nports; k++) {
		struct dnpd_session *se = d->sess->by_port[d->sess->ports[k]];
		int32_t cpu = atomic_load_explicit(&se->ctl->app_cpu, memory_order_relaxed);

		if (cpu >= 0 && cpu < 64 && (d->nbr_cpus >> cpu & 1u)) {
			d->pin_poll = true;
			return;
		}
	}
}

/*
 * Pinned polling hand-off: true while this idle pass must not yield, less
 * than DNP_YIELD_PIN_NS after our last work (idle_since) or after our last
 * hand-off yield returned (which may be later than this pass's 'now').
 */
static bool dnpd_pin_spin(const struct dnpd *d, uint64_t now, uint64_t idle_since)
{
	uint64_t since = d->pin_back > idle_since ? d->pin_back : idle_since;

	return d->pin_poll && (since >= now || now - since < DNP_YIELD_PIN_NS);
}

/*
 * Every house-keeping pass: maps the neighbours' kick lines not mapped yet
 * (at most every DNPD_NBR_RETRY_NS), reads the CPU each publishes (once,
 * checked: 1..64, else none) and publishes the CPUs other than ours in the
 * bell's kick_cpus (written only when it changes; 0 while a neighbour shares
 * our CPU).
 */
static void dnpd_kick_house(struct dnpd *d, uint64_t now)
{
	bool retry = false;
	uint32_t mask;
	unsigned i;

	if (!d->kick_on)
		return;
	d->nbr_cpus = 0;
	d->nbr_shares = false;
	for (i = 0; i < d->nnbr; i++) {
		struct dnpd_nbr *n = &d->nbr[i];
		uint32_t v;

		if (!n->kick && now >= d->nbr_next && dnpd_nbr_map(d, n))
			retry = true;
		n->cpu = -1;
		if (!n->kick)
			continue;
		v = atomic_load_explicit(&n->kick->cpu, memory_order_relaxed);
		if (v >= 1 && v <= 64 && (int)v - 1 != d->home_cpu) {
			n->cpu = (int)v - 1;
			d->nbr_cpus |= 1ull << n->cpu;
		} else if (v >= 1 && (int)v - 1 == d->home_cpu) {
			d->nbr_shares = true;
		}
	}
	dnpd_pin_poll(d);
	if (retry)
		d->nbr_next = now + DNPD_NBR_RETRY_NS;
	/*
	 * Not where a neighbour shares our CPU (more daemons than CPUs, as a
	 * 2x2x2 torus under --pin): an app there that blocks or polls without
	 * yields would keep the CPU from the daemons beside it (measured: the
	 * 2x2x2 ping-pong 8.4-10.7 us against 6.1-6.2 us).
	 */
	mask = d->nbr_shares ? 0 : (uint32_t)d->nbr_cpus;
	if (mask != d->kick_cpus) {
		d->kick_cpus = mask;
		atomic_store_explicit(&((struct dnp_sess_bell *)(void *)d->bell)->kick_cpus, mask,
				      memory_order_relaxed);
	}
}

/* The link in direction dir came up: its neighbour may be a new daemon, with a new bell file. */
static void dnpd_kick_link_up(struct dnpd *d, unsigned dir)
{
	for (unsigned i = 0; i < d->nnbr; i++)
		if (d->nbr[i].dirs & (1u << dir)) {
			dnpd_nbr_unmap(&d->nbr[i]);
			d->nbr_next = 0;
		}
}

/*
 * After pushing events: the apps that dnpd_sess_notify woke (their CPUs in
 * se->woke); a neighbour pinned to one of those CPUs is kicked. The FUTEX_WAKE
 * came first, so the app is runnable when the neighbour sees the kick.
 */
static void dnpd_kick_nbrs(struct dnpd *d)
{
	uint64_t woke = 0;
	unsigned k;

	if (!d->nbr_cpus)
		return;
	for (k = 0; k < d->sess->nports; k++) {
		struct dnpd_session *se = d->sess->by_port[d->sess->ports[k]];

		if (se->woke >= 1 && se->woke <= 64)
			woke |= 1ull << (se->woke - 1);
		se->woke = 0;
	}
	if (!(woke & d->nbr_cpus))
		return;
	for (k = 0; k < d->nnbr; k++) {
		struct dnpd_nbr *n = &d->nbr[k];

		if (n->kick && n->cpu >= 0 && (woke >> n->cpu & 1u)) {
			atomic_fetch_add_explicit(&n->kick->seq, 1, memory_order_release);
			d->kicks++;
		}
	}
}

/* True once per kick of a neighbour (our kick line's seq moved since we last looked). */
static bool dnpd_kicked(struct dnpd *d)
{
	uint32_t v;

	if (!d->kick_on)
		return false;
	/* written by the neighbours: any value only means "yield once" */
	v = atomic_load_explicit(&d->kick->seq, memory_order_relaxed);
	if (v == d->kick_seen)
		return false;
	d->kick_seen = v;
	d->kicked++;
	return true;
}

/* At exit: neighbours stop kicking us, apps stop blocking for us. */
static void dnpd_kick_stop(struct dnpd *d)
{
	if (d->kick) {
		atomic_store_explicit(&d->kick->cpu, 0, memory_order_relaxed);
		atomic_store_explicit(&((struct dnp_sess_bell *)(void *)d->bell)->kick_cpus, 0,
				      memory_order_relaxed);
	}
	for (unsigned i = 0; i < d->nnbr; i++)
		dnpd_nbr_unmap(&d->nbr[i]);
	d->kick_on = false;
}

/* An app of ours sleeps in its wait on our CPU (its app_cpu and ev_waiters, hints read once). */
static bool dnpd_waiter_here(const struct dnpd *d)
{
	for (unsigned k = 0; k < d->sess->nports; k++) {
		const struct dnpd_session *se = d->sess->by_port[d->sess->ports[k]];

		if (atomic_load_explicit(&se->ctl->app_cpu, memory_order_relaxed) == d->home_cpu &&
		    atomic_load_explicit(&se->ctl->ev_waiters, memory_order_relaxed) != 0)
			return true;
	}
	return false;
}

/*
 * Two hosts (docs/performance.md, "udp in the two-host placement"): true to
 * keep the events of this pass in the engine for now. Over udp a message is
 * two datagrams, the completion report of the receiver's last PUT and the
 * new data, and the receiving daemon often reads the first before the
 * second is queued. Pushing the completion alone wakes the app blocked on our
 * CPU and hands it the CPU (the two-host hand-off below) only for it to find
 * no data and block again: two more context switches, on the path of the
 * data. So events that are all completions, for an app asleep on our CPU,
 * wait up to DNPD_COALESCE_NS while we keep polling; any other event (the
 * data) or the end of the window pushes them all with one wake-up. The
 * engine keeps the events meanwhile, as it does for a full ring: nothing is
 * lost.
 *
 * A hold only pays while data follows the completions. An app that waits for
 * its completion alone (a PUT, then its TX_DONE, and nothing comes back)
 * would get every completion a whole window late. So the holds keep a score
 * (co_score, -DNPD_COALESCE_SCORE..+DNPD_COALESCE_SCORE): a hold ended by
 * other events raises it by one, a window that ran out lowers it by one, and
 * completions are held only while the score is not negative, that is while
 * at least every other hold is joined (a join saves two context switches,
 * about 10 us here; a window that runs out costs up to DNPD_COALESCE_NS).
 * Below zero the completions go at once and only the next events are looked
 * at: other events within DNPD_COALESCE_WATCH_NS raise the score again, so a
 * ping-pong that was slow for a while gets its holds back. (That look is
 * longer than a hold's window: not holding, we hand our CPU to the woken app
 * and read the links again only once it blocks.)
 */
static bool dnpd_coalesce(struct dnpd *d, uint64_t now)
{
	const struct dnp_engine_stats *es = dnp_engine_stats(d->e);
	uint64_t done = es->cmds_ok + es->cmds_failed;
	uint64_t ev = es->events - d->co_events;
	bool other = ev > done - d->co_done;

	if (d->co_until) {
		if (!other && now < d->co_until)
			return true;
		if (other) {
			d->co_joined++;
			d->co_score += d->co_score < DNPD_COALESCE_SCORE;
		} else {
			d->co_missed++;
			d->co_score -= d->co_score > -DNPD_COALESCE_SCORE;
		}
		d->co_until = 0;
	} else {
		if (d->co_watch && (ev || now >= d->co_watch)) {
			d->co_score += other && now < d->co_watch;
			d->co_watch = 0;
		}
		if (ev && !other && d->home_cpu >= 0 && d->conf.idle != DNPD_IDLE_BUSY &&
		    !dnp_yield_blocking(&d->yield, now) && dnpd_waiter_here(d)) {
			if (d->co_score >= 0) {
				d->co_until = now + DNPD_COALESCE_NS;
				d->co_holds++;
				return true;
			}
			d->co_watch = now + DNPD_COALESCE_WATCH_NS;
		}
	}
	d->co_events = es->events;
	d->co_done = done;
	return false;
}

/*
 * The engine's part of a pass: run it, hand its events to the apps, send its
 * frames. Returns true when the send was deferred to let an app that just
 * got events run first (the caller yields and starts the next pass).
 */
static bool dnpd_engine_pass(struct dnpd *d, uint64_t now, unsigned *work)
{
	unsigned ev;
	bool here;

	dnp_engine_run(d->e, now);
	/*
	 * Events first: a delivery's event must not wait behind the
	 * transport send of the credit (or forwarded frame) it caused,
	 * a system call on kernel-backed links (udp, af_packet).
	 */
	d->ev_here = false;
	ev = dnpd_coalesce(d, now) ? 0 : dnpd_push_events(d);
	*work += ev;
	dnpd_kick_nbrs(d);
	/*
	 * An app just got events: let it run at once (on two
	 * shared cores it often waits for ours) rather than behind
	 * our transport sends (system calls on udp and af_packet
	 * links); they go out on the next pass, with whatever the
	 * app answered meanwhile. Never deferred twice in a row.
	 * Measured on the 2x2x2 namespace testbed: 8-byte
	 * ping-pong 14.5 -> 12.9 us (dpdk), 21 -> 19.8 us (udp).
	 * Alone on our CPU (dnp_yield.h), or with the apps that
	 * got events polling on other CPUs (their app_cpu hint),
	 * a yield helps nobody: no deferral. Except when busy:
	 * this is then the only yield a busy daemon makes, and
	 * with --pin the other node's app shares our CPU and
	 * needs it (without it the 2-node busy ping-pong stalls).
	 *
	 * Pinned, with an app on our CPU that got events (two hosts): that
	 * app blocks on its event bell while it waits (client.c: the bell's
	 * home_cpu is its CPU), so we have just woken it (dnpd_sess_notify)
	 * and were alone on the CPU a moment ago. Give it the CPU now, even
	 * though the last measurement said alone: one switch, and the reply it
	 * posts goes out with our deferred send (docs/performance.md,
	 * "Hand-off and context switches").
	 */
	here = ev && d->ev_here && d->home_cpu >= 0;
	/* Blocking beside busy processes (dnp_yield.h): the woken app runs first. */
	if (ev && (d->ev_here || d->conf.idle == DNPD_IDLE_BUSY) && !d->tx_deferred &&
	    (here || !dnp_yield_alone(&d->yield, now)) && !dnp_yield_blocking(&d->yield, now)) {
		dnpd_disarm(d);
		d->tx_deferred = true;
		if (here) {
			d->handoffs++;
			dnp_yield_handoff(&d->yield, now);
		} else {
			dnp_yield_step(&d->yield, now);
		}
		return true;
	}
	d->tx_deferred = false;
	/* Pinned: we just forwarded app commands; the app on our CPU gets work next. */
	if (dnpd_flush_tx(d, now) && d->pin_poll && d->pass_cmds && !ev) {
		d->pin_handoffs++;
		dnp_yield_handoff(&d->yield, now);
		d->pin_back = dnpd_now();
	}
	d->quiet_next = now + DNPD_COARSE_NS;
	return false;
}

/*
 * Hand-off by placement (docs/performance.md, "Hand-off and context
 * switches"): a daemon pinned to one CPU with no links is the only daemon
 * its apps wait for. It says so in the bell (solo_cpu), so an app polling on
 * another CPU does not yield; and when none of its apps last polled on its
 * own CPU (their app_cpu hints, untrusted: a wrong one costs a yield or a
 * spin, never a lost event) its idle passes do not yield either. A yield
 * then could only hand the CPU to a process outside the run (beside two
 * busy processes: a time slice, milliseconds, per wait). Called every
 * DNPD_HOUSE_NS; sessions come and go.
 */
static void dnpd_solo(struct dnpd *d)
{
	unsigned k;

	d->solo_spin = false;
	if (d->solo_cpu < 0)
		return;
	for (k = 0; k < d->sess->nports; k++) {
		struct dnpd_session *se = d->sess->by_port[d->sess->ports[k]];

		if (atomic_load_explicit(&se->ctl->app_cpu, memory_order_relaxed) == d->solo_cpu)
			return;
	}
	d->solo_spin = true;
}

/* At the start of the loop: d->solo_cpu and d->home_cpu, published in the bell. */
static void dnpd_solo_init(struct dnpd *d)
{
	cpu_set_t cs;
	unsigned dir, c;

	d->solo_cpu = -1;
	d->home_cpu = -1;
	for (dir = 0; dir < DNP_NDIRS; dir++)
		if (d->link[dir].exists)
			break;
	if (sched_getaffinity(0, sizeof(cs), &cs) == 0 && CPU_COUNT(&cs) == 1)
		for (c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &cs))
				d->home_cpu = (int)c;
	if (dir == DNP_NDIRS)
		d->solo_cpu = d->home_cpu;
	atomic_store_explicit(&((struct dnp_sess_bell *)(void *)d->bell)->solo_cpu,
			      (uint32_t)(d->solo_cpu + 1), memory_order_relaxed);
	atomic_store_explicit(&((struct dnp_sess_bell *)(void *)d->bell)->home_cpu,
			      (uint32_t)(d->home_cpu + 1), memory_order_relaxed);
	/* Pinned hand-off: our kick line follows the bell in its file (a page, doorbell.c). */
	d->kick = (struct dnp_sess_kick *)(void *)((uint8_t *)d->bell + DNP_SESS_KICK_OFF);
	d->kick_on = d->home_cpu >= 0 && d->home_cpu < 64 && d->nnbr &&
		     d->conf.idle == DNPD_IDLE_ADAPTIVE;
	d->kick_seen = atomic_load_explicit(&d->kick->seq, memory_order_relaxed);
	/* A busy daemon never sleeps: beside busy processes it keeps yielding (dnp_yield.h). */
	d->yield.no_block = d->conf.idle != DNPD_IDLE_ADAPTIVE;
	atomic_store_explicit(&d->kick->cpu, d->kick_on ? (uint32_t)d->home_cpu + 1 : 0u,
			      memory_order_relaxed);
}

/* What we keep in our bell's file, written again after dnp_doorbell_remap. */
static void dnpd_bell_publish(struct dnpd *d)
{
	struct dnp_sess_bell *b = (struct dnp_sess_bell *)(void *)d->bell;

	atomic_store_explicit(&b->poll_mode, d->poll_mode ? 1u : 0u, memory_order_relaxed);
	atomic_store_explicit(&b->hold, d->hold ? 1u : 0u, memory_order_relaxed);
	atomic_store_explicit(&b->solo_cpu, (uint32_t)(d->solo_cpu + 1), memory_order_relaxed);
	atomic_store_explicit(&b->home_cpu, (uint32_t)(d->home_cpu + 1), memory_order_relaxed);
	atomic_store_explicit(&b->kick_cpus, d->kick_cpus, memory_order_relaxed);
	atomic_store_explicit(&d->kick->cpu, d->kick_on ? (uint32_t)d->home_cpu + 1 : 0u,
			      memory_order_relaxed);
	d->kick_seen = atomic_load_explicit(&d->kick->seq, memory_order_relaxed);
}

/* dnpd_guard for the shm link in direction dir: its ring file, its neighbour's bell file. */
static void dnpd_guard_link(struct dnpd *d, unsigned dir)
{
	char local[DNPD_ADDR_MAX], remote[DNPD_ADDR_MAX], path[PATH_MAX];
	struct dnpd_link *l = &d->link[dir];
	struct dnp_transport *t = l->backend ? l->backend : l->t;
	struct dnp_doorbell *in = dnp_transport_shm_doorbell(t);
	struct dnp_doorbell *peer = dnp_transport_shm_peer_bell(t);
	unsigned side;
	int r;

	if (in && !l->guard_down && dnp_shmguard_faults(in)) {
		dnpd_log(DNPD_ERR, "link %s: its ring file %s was truncated under us: link down",
			 dnpd_dir_names[dir], l->local);
		l->guard_down = true; /* shm_up is false from now on: the engine resets it */
	}
	if (!peer || !dnp_shmguard_faults(peer))
		return;
	r = dnpd_conf_link_addr(&d->conf, dir, local, remote, sizeof(local), &side, path,
				sizeof(path));
	if (!r)
		r = dnp_doorbell_remap(path, peer);
	dnpd_log(r ? DNPD_ERR : DNPD_WARN, "link %s: the neighbour's bell file %s truncated: %s%s",
		 dnpd_dir_names[dir], r ? "?" : path, r ? "cannot map it again: " : "mapped again",
		 r ? strerror(-r) : "");
}

/*
 * Slow path, when the SIGBUS guard caught a fault (dnp_shmguard.h): some
 * process truncated a file we map, and the mapping is zero pages now. Our
 * bell: grown and mapped again; a neighbour's kick line: unmapped (mapped
 * again by dnpd_kick_house); an shm link's ring file: the link reports down
 * (shm.c) for good; a neighbour's bell an shm link rings: mapped again; a
 * session's memory: the session is closed.
 */
static void dnpd_guard(struct dnpd *d)
{
	unsigned i;
	int r;

	d->guard_seen = dnp_shmguard_total();
	dnpd_log(DNPD_WARN,
		 "shared memory shrank under the daemon (%" PRIu64
		 " SIGBUS caught so far): recovering",
		 d->guard_seen);
	if (dnp_shmguard_faults(d->bell)) {
		r = dnp_doorbell_remap(d->bell_path, d->bell);
		dnpd_log(r ? DNPD_ERR : DNPD_WARN, "doorbell %s truncated by another process: %s%s",
			 d->bell_path, r ? "cannot map it again: " : "mapped again",
			 r ? strerror(-r) : "");
		if (!r)
			dnpd_bell_publish(d);
	}
	for (i = 0; i < d->nnbr; i++) {
		struct dnpd_nbr *n = &d->nbr[i];

		if (n->kick && dnp_shmguard_faults(n->kick)) {
			dnpd_log(DNPD_WARN,
				 "node %u's bell file truncated: its kick line is mapped again",
				 n->id);
			dnpd_nbr_unmap(n);
		}
	}
	for (i = 0; i < DNP_NDIRS; i++)
		if (d->link[i].exists)
			dnpd_guard_link(d, i);
	if (d->lfm.regs && dnp_shmguard_faults(d->lfm.regs)) {
		struct dnpd_diag_hook hook = d->lfm.hook;

		dnpd_lfm_stop(&d->lfm);
		r = dnpd_lfm_start(&d->lfm, &d->conf, d->e, dnpd_now());
		d->lfm.hook = hook;
		dnpd_log(r ? DNPD_ERR : DNPD_WARN,
			 "lofamo: register block truncated by another process: %s%s",
			 r ? "fault manager off: " : "fault manager restarted",
			 r ? strerror(-r) : "");
	}
	dnpd_sess_guard_check(d->sess);
}

/*
 * The links' part of a pass. Two hosts: when the app we handed the CPU to
 * has posted its reply (commands this pass, our send deferred for it), the
 * reply leaves first (the deferred send, this pass) and the links are read on
 * the next pass: a poll() and maybe a receive call (1-3 us here) less ahead
 * of the reply.
 */
static unsigned dnpd_rx(struct dnpd *d, uint64_t now, unsigned cmds)
{
	if (cmds && d->tx_deferred && d->ev_here && d->home_cpu >= 0) {
		d->rx_after++;
		return 0;
	}
	return dnpd_poll_rx(d, now);
}

static void dnpd_loop(struct dnpd *d)
{
	uint64_t now = dnpd_now();
	uint64_t last_house = 0, idle_since = now, last_active = now;

	dnpd_solo_init(d);
	while (!atomic_load_explicit(&dnpd_stop, memory_order_relaxed)) {
		unsigned work_app;
		uint64_t act;

		now = dnpd_now();
		d->iters++;
		work_app = dnpd_poll_cmds(d, now);
		d->pass_cmds = work_app;
		work_app += dnpd_rx(d, now, work_app);
		if (work_app)
			d->quiet = false;
		/* Quiet: the engine (and so our credits) runs every DNPD_COARSE_NS only. */
		if ((!d->quiet || now >= d->quiet_next) && dnpd_engine_pass(d, now, &work_app))
			continue;
		if (!dnpd_coalesce(d, now))
			work_app += dnpd_push_events(d);
		dnpd_kick_nbrs(d);
		if (now - last_house >= DNPD_HOUSE_NS) {
			work_app += dnpd_house(d, now);
			dnpd_solo(d);
			dnpd_kick_house(d, now);
			if (dnp_shmguard_total() != d->guard_seen)
				dnpd_guard(d);
			last_house = now;
		}
		/*
		 * Link credits flow every credit period even on an idle torus:
		 * only real traffic (commands, packets, events, requests) or
		 * work still queued restarts the spin/yield/sleep escalation.
		 */
		act = dnpd_activity(d);
		if (work_app || act != d->activity) {
			d->activity = act;
			last_active = now;
			idle_since = now;
			d->quiet = false;
		}
		if (dnpd_backlogged(d) || (!d->quiet && dnp_engine_has_work(d->e))) {
			dnpd_disarm(d);
			d->quiet = false;
			idle_since = now;
			/* --link-queue: a link at its limit waits for a peer that may need our CPU */
			if (d->lq_held && !dnp_yield_step(&d->yield, now) &&
			    dnp_yield_blocking(&d->yield, now))
				sched_yield(); /* it cannot sleep: the peer still needs our CPU */
			continue;
		}
		/* Holding completions (dnpd_coalesce): poll on, the window is short. */
		if (d->co_until) {
			dnpd_disarm(d);
			continue;
		}
		/* A neighbour woke a program on our CPU: it runs now (dnpd_kick_nbrs). */
		if (dnpd_kicked(d)) {
			dnpd_disarm(d);
			dnp_yield_handoff(&d->yield, now);
			continue;
		}
		if (d->conf.idle == DNPD_IDLE_BUSY)
			continue;
		if (!d->quiet && now - last_active > DNPD_ACTIVE_NS) {
			d->quiet = true;
			d->quiets++;
		}
		/*
		 * No pure spinning: with daemons and applications sharing two
		 * cores a spinner keeps the CPU from the process that has the
		 * work (measured: 54 us 8-byte ping-pong with a 10 us spin, 5.5 us
		 * yielding at once). But a yield that finds nobody else to run
		 * still costs a system call (0.54 us here), so a daemon alone on
		 * its CPU polls without yielding for a while (dnp_yield.h).
		 * Beside busy processes, where a yield gives away a time slice,
		 * it sleeps at once instead (dnp_yield_blocking; the producers
		 * ring its doorbell and the woken daemon runs first).
		 */
		if (now - idle_since < DNPD_YIELD_NS && !dnp_yield_blocking(&d->yield, now)) {
			dnpd_disarm(d);
			/*
			 * Given the CPU back a moment ago: whoever gave it most
			 * likely just sent us work, so look for it a lone yield's
			 * time before handing the CPU back (dnp_yield.h).
			 */
			if (dnpd_pin_spin(d, now, idle_since))
				d->pin_spins++;
			else if (d->hold && dnp_yield_held(&d->yield, now, d->yield.fast_ns))
				d->holds++;
			else if (!d->solo_spin)
				dnp_yield_step(&d->yield, now);
			continue;
		}
		/*
		 * Arm the doorbell and look at every source once more (the next
		 * pass) before sleeping: a producer that rang before seeing us
		 * armed published its work before our second look (doorbell.h).
		 */
		if (!d->armed) {
			d->bell_seen = dnp_doorbell_arm(d->bell);
			d->armed = true;
			continue;
		}
		d->armed = false;
		dnpd_sleep(d, d->bell_seen, now);
		dnp_yield_reset(&d->yield);
		/*
		 * Whatever woke us, look at the sockets too. A wake-up that brings
		 * real work restarts the spinning (above); a credit or a timer
		 * alone goes back to sleep at once.
		 */
		last_house = 0;
	}
}

/* ---------------------------------------------------------- set-up */

/*
 * Impairment of each link from specs joined by ';' (later specs win for the
 * directions they name). -EINVAL names the bad spec.
 */
static int dnpd_impair_confs(const char *specs, struct dnp_impair_conf out[DNP_NDIRS])
{
	char buf[sizeof(((struct dnpd_conf *)0)->impair)];
	char *save = NULL, *sp;
	unsigned dir;

	for (dir = 0; dir < DNP_NDIRS; dir++)
		(void)dnp_impair_parse("off", &out[dir]);
	if (strlen(specs) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, specs);
	for (sp = strtok_r(buf, ";", &save); sp; sp = strtok_r(NULL, ";", &save)) {
		struct dnp_impair_conf c;

		if (dnp_impair_parse(sp, &c)) {
			dnpd_log(DNPD_ERR,
				 "bad impairment spec '%s' (docs/dnpd.md, \"Impairment\")", sp);
			return -EINVAL;
		}
		for (dir = 0; dir < DNP_NDIRS; dir++)
			if (c.dirs & (1u << dir))
				out[dir] = c;
	}
	return 0;
}

/*
 * dnpctl impair writes DIR/node-<id>.impair (atomically, by rename); we look
 * at it every DNPD_IMPAIR_CHECK_NS and apply it when it changed. Its content
 * is untrusted text: at most one line of specs, parsed before use.
 */
#define DNPD_IMPAIR_CHECK_NS 50000000ull
static void dnpd_impair_poll(struct dnpd *d, uint64_t now)
{
	struct dnp_impair_conf c[DNP_NDIRS];
	char text[sizeof(d->conf.impair)];
	struct stat st;
	unsigned dir;
	ssize_t n;
	int fd;

	if (now < d->impair_next)
		return;
	d->impair_next = now + DNPD_IMPAIR_CHECK_NS;
	if (stat(d->impair_path, &st) < 0)
		return;
	if (st.st_mtim.tv_sec == d->impair_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == d->impair_mtime.tv_nsec)
		return;
	d->impair_mtime = st.st_mtim;
	fd = open(d->impair_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0)
		return;
	text[n] = 0;
	text[strcspn(text, "\n")] = 0;
	if (dnpd_impair_confs(text, c))
		return;
	for (dir = 0; dir < DNP_NDIRS; dir++) {
		struct dnpd_link *l = &d->link[dir];

		if (!l->exists)
			continue;
		l->impair = c[dir];
		dnp_impair_set(l->t, &c[dir]);
	}
	dnpd_log(DNPD_WARN, "impairment changed: %s", text[0] ? text : "off");
}

static int dnpd_open_links(struct dnpd *d, const struct dnp_transport_ops *ops)
{
	struct dnp_impair_conf imp[DNP_NDIRS];
	unsigned dir;
	int r;

	r = dnpd_impair_confs(d->conf.impair, imp);
	if (r)
		return r;
	if (d->conf.pcap[0] && !d->pcap && (r = dnp_pcap_open(d->conf.pcap, &d->pcap))) {
		dnpd_log(DNPD_ERR, "--pcap %s: %s", d->conf.pcap, strerror(-r));
		return r;
	}
	for (dir = 0; dir < DNP_NDIRS; dir++) {
		struct dnpd_link *l = &d->link[dir];
		char bell[PATH_MAX];

		l->impair = imp[dir];
		struct dnp_transport_conf tc = { 0 };

		if (!dnp_engine_has_link(d->e, dir))
			continue;
		r = dnpd_conf_link_addr(&d->conf, dir, l->local, l->remote, sizeof(l->local),
					&l->side, bell, sizeof(bell));
		if (r)
			return r;
		l->bl_data = malloc((size_t)DNPD_BURST * DNP_MAX_FRAME);
		if (!l->bl_data)
			return -ENOMEM;
		tc.local = l->local;
		tc.remote = l->remote;
		tc.side = l->side;
		tc.frame_max = DNP_MAX_FRAME;
		tc.depth = DNPD_LINK_DEPTH;
		tc.options = d->conf.topts[0] ? d->conf.topts : NULL;
		/* shm: ring the neighbour's own doorbell, so it sleeps on one futex word. */
		tc.peer_bell = d->poll_mode ? NULL : bell;
		r = ops->open(&tc, &l->t);
		if (r) {
			dnpd_log(DNPD_ERR, "link %s: %s open %s: %s", dnpd_dir_names[dir],
				 ops->name, l->local, strerror(-r));
			return r;
		}
		{
			struct dnp_transport *w;

			r = dnp_impair_wrap(l->t, dir, &l->impair, &w);
			if (r) {
				ops->close(l->t);
				return r;
			}
			l->backend = l->t;
			l->t = w;
			l->lq.limit = d->conf.link_queue;
			dnp_impair_capture(w, d->pcap);
		}
		l->ops = &dnp_transport_impair;
		l->exists = true;
		dnpd_nbr_add(d, dir);
		if (d->conf.link_queue && !ops->tx_queued) {
			dnpd_log(DNPD_ERR, "--link-queue: the %s transport cannot tell its queue",
				 ops->name);
			return -ENOTSUP;
		}
		if (ops->wait_fd(l->t) < 0)
			d->nowait_links = true;
		dnpd_log(DNPD_INFO, "link %s: %s %s -> %s (side %u)", dnpd_dir_names[dir],
			 ops->name, l->local, l->remote, l->side);
		if (dnp_impair_active(&l->impair)) {
			char spec[256];

			dnp_impair_format(&l->impair, spec, sizeof(spec));
			dnpd_log(DNPD_INFO, "link %s: impaired: %s", dnpd_dir_names[dir], spec);
		}
	}
	return 0;
}

static void dnpd_close_links(struct dnpd *d)
{
	unsigned dir;

	for (dir = 0; dir < DNP_NDIRS; dir++) {
		struct dnpd_link *l = &d->link[dir];

		if (l->exists)
			l->ops->close(l->t);
		l->exists = false;
		free(l->bl_data);
		l->bl_data = NULL;
	}
}

static int dnpd_engine_setup(struct dnpd *d, uint64_t now)
{
	struct dnp_engine_conf ec;
	uint32_t low_words;

	dnp_engine_conf_default(&ec);
	ec.torus = d->conf.torus;
	ec.self = d->conf.self;
	ec.max_ports = 256;
	/*
	 * Outstanding commands of the node; each port may hold at most
	 * DNPD_PORT_COMMANDS_DEFAULT of them (sess.c), so one application
	 * never takes the whole table.
	 */
	ec.max_commands = DNPD_NODE_COMMANDS;
	ec.mem = &dnpd_mem_ops;
	ec.mem_ctx = d;
	ec.link.credit_model = DNP_CREDIT_EXACT;
	ec.link.nvc = (uint8_t)d->conf.vcs;
	ec.routing = (uint8_t)d->conf.routing;
	ec.congestion = (uint8_t)d->conf.congestion;
	ec.arbitration = d->conf.arbitration;
	ec.link.transport = dnp_xport_code(d->conf.transport); /* told in the handshake */
	ec.link.fifo_words = DNPD_FIFO_WORDS;
	ec.link.t_red = DNPD_FIFO_WORDS - 6;
	ec.link.t_yellow = DNPD_FIFO_WORDS / 2;
	/* Top-class remedies (engine.h; conf.c refused them with arbitration off). */
	ec.arb_low_payload = d->conf.low_payload;
	ec.arb_top_reserve = d->conf.top_reserve;
	ec.rx_bufs = d->conf.rx_bufs; /* 0: the engine's default (conf.c, --rx-bufs) */
	low_words =
		dnp_pkt_frame_words(d->conf.low_payload ? d->conf.low_payload : DNP_MAX_PAYLOAD);
	if (d->conf.top_reserve > ec.link.t_red - low_words) {
		dnpd_log(DNPD_ERR,
			 "--top-reserve %u: at most %u words (the largest low-class frame, %u "
			 "words, must fit under the FIFO's red threshold, %u words, beside it)",
			 d->conf.top_reserve, ec.link.t_red - low_words, low_words, ec.link.t_red);
		return -EINVAL;
	}
	/*
	 * A credit goes out in the next tx_burst after a frame is accepted or
	 * leaves a FIFO, so the sender's estimate follows the receiver at
	 * transport speed; the period only paces keep-alive credits, which
	 * idle daemons would otherwise trade at every period.
	 */
	ec.prompt_credits = true;
	/*
	 * But not a CREDIT frame for each change: on udp each is a datagram
	 * (a system call and the kernel's path, 1-3 us here), and a ping-pong
	 * made four per half round trip (data, its credit, the completion, its
	 * credit). Acks ride on the frames going back anyway; a credit goes at
	 * once only when the sender's view of our FIFO matters.
	 */
	ec.ack_delay = DNPD_ACK_DELAY_NS;
	/* frames for this node go from the link's buffer to the app (docs/performance.md) */
	ec.rx_direct = true;
	ec.tx_direct = true;   /* shm links: one pass from the heap into the slot (io.c) */
	ec.rx_map_priv = true; /* a heap buffer's priv is our mapping of it (mem.c) */
	ec.link.credit_period = d->conf.credit_period_us ? d->conf.credit_period_us * 1000ull :
							   DNPD_CREDIT_PERIOD_NS;
	ec.link.credit_timeout = d->conf.credit_timeout_ms ?
					 d->conf.credit_timeout_ms * 1000000ull :
					 DNPD_CREDIT_TIMEOUT_NS;
	ec.link.init_timeout = 0; /* neighbours start when they start */
	ec.link.rto = DNPD_RTO_NS;
	ec.link.max_retries = DNPD_MAX_RETRIES;
	ec.cmd_timeout = d->conf.cmd_timeout_ms * 1000000ull;
	ec.reasm_timeout = DNPD_REASM_TIMEOUT_NS;
	ec.deliver_timeout = DNPD_DELIVER_TIMEOUT_NS;
	/* outcome queries (engine.h): a late report is asked about after 100 ms */
	ec.query_timeout = ec.cmd_timeout ? 100000000ull : 0;
	/* a link LO|FA|MO judged sick is avoided 2 s past its healthy verdict */
	ec.sick_hold = 2000000000ull;
	/* Keys are the only protection of a buffer: their secret is random. */
	if (getrandom(ec.key_secret, sizeof(ec.key_secret), 0) != (ssize_t)sizeof(ec.key_secret)) {
		dnpd_log(DNPD_ERR, "getrandom: cannot draw the key secret");
		return -EIO;
	}
	/* Links come back (engine.h): a restarted daemon is told apart by its nonce. */
	ec.link.reset_period = DNPD_RESET_PERIOD_NS;
	if (getrandom(&ec.link.nonce, sizeof(ec.link.nonce), 0) != (ssize_t)sizeof(ec.link.nonce) ||
	    !ec.link.nonce)
		ec.link.nonce = (uint32_t)getpid() ^ (uint32_t)now ^ (uint32_t)(now >> 32);
	ec.link.nonce |= 1u;
	return dnp_engine_create(&ec, now, &d->e);
}

/*
 * The run directory and this node's files in it: the doorbell is mapped, a
 * killed predecessor's .up file removed. Errors: -errno of mkdir, the
 * doorbell's, -ENAMETOOLONG.
 */
/*
 * One daemon per node and run directory: DIR/node-<id>.lock, locked with
 * flock() for the daemon's life and holding its pid. A second daemon finds
 * it locked and stops before it touches any file of the live one (before,
 * it removed the live daemon's .up file, failed on a link with "Device or
 * resource busy", and its clean-up deleted the live daemon's doorbell).
 * The lock, not the file, says who runs: a killed daemon's file is taken
 * over. The file is locked only if it is still the one at the path (a
 * stopping daemon removes it). Errors: -EADDRINUSE (said why), -errno.
 */
static int dnpd_lock_node(struct dnpd *d)
{
	uint32_t id = dnp_torus_id(&d->conf.torus, d->conf.self);
	char buf[32];
	int fd, n;

	for (int tries = 0; tries < 8; tries++) {
		struct stat a, b;

		fd = open(d->pid_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0) {
			n = -errno;
			dnpd_log(DNPD_ERR, "%s: %s", d->pid_path, strerror(errno));
			return n;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			uint64_t pid = 0;

			n = (int)pread(fd, buf, sizeof(buf) - 1, 0);
			buf[n > 0 ? n : 0] = 0;
			buf[strcspn(buf, "\n")] = 0;
			(void)dnp_parse_u64(buf, &pid); /* 0 when the holder wrote none yet */
			close(fd);
			dnpd_log(DNPD_ERR, "node %u already runs here (pid %llu, %s): not starting",
				 id, (unsigned long long)pid, d->pid_path);
			return -EADDRINUSE;
		}
		if (fstat(fd, &a) == 0 && stat(d->pid_path, &b) == 0 && a.st_ino == b.st_ino &&
		    a.st_dev == b.st_dev)
			break;
		close(fd); /* removed by a daemon that stopped meanwhile: lock the new one */
		fd = -1;
	}
	if (fd < 0)
		return -EAGAIN;
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n)
		dnpd_log(DNPD_WARN, "%s: cannot write our pid", d->pid_path);
	d->pid_fd = fd;
	return 0;
}

static void dnpd_unlock_node(struct dnpd *d)
{
	if (d->pid_fd < 0)
		return;
	unlink(d->pid_path); /* while locked: nobody else holds this file */
	close(d->pid_fd);
	d->pid_fd = -1;
}

static int dnpd_files_open(struct dnpd *d)
{
	int r;

	if (mkdir(d->conf.run_dir, 0755) && errno != EEXIST) {
		r = -errno;
		dnpd_log(DNPD_ERR, "run dir %s: %s", d->conf.run_dir, strerror(errno));
		return r;
	}
	if (dnpd_path(&d->conf, ".bell", d->bell_path, sizeof(d->bell_path)) ||
	    dnpd_path(&d->conf, ".sock", d->sock_path, sizeof(d->sock_path)) ||
	    dnpd_path(&d->conf, ".up", d->up_path, sizeof(d->up_path)) ||
	    dnpd_path(&d->conf, ".impair", d->impair_path, sizeof(d->impair_path)) ||
	    dnpd_path(&d->conf, ".lock", d->pid_path, sizeof(d->pid_path))) {
		dnpd_log(DNPD_ERR, "run dir path too long");
		return -ENAMETOOLONG;
	}
	r = dnpd_lock_node(d);
	if (r)
		return r;   /* another daemon is this node: touch none of its files */
	unlink(d->up_path); /* left by a predecessor that was killed */

	r = dnp_doorbell_map(d->bell_path, &d->bell);
	if (r) {
		dnpd_log(DNPD_ERR, "doorbell %s: %s", d->bell_path, strerror(-r));
		dnpd_unlock_node(d);
		return r;
	}
	atomic_store_explicit(&((struct dnp_sess_bell *)(void *)d->bell)->poll_mode,
			      d->poll_mode ? 1u : 0u, memory_order_relaxed);
	atomic_store_explicit(&((struct dnp_sess_bell *)(void *)d->bell)->hold, d->hold ? 1u : 0u,
			      memory_order_relaxed);
	return 0;
}

/* The application socket and its sessions. Errors of dnpd_sess_create. */
static int dnpd_sess_open(struct dnpd *d)
{
	struct dnpd_sess_conf sc = { 0 };
	int r;

	sc.sock_path = d->sock_path;
	sc.bell_path = d->bell_path;
	sc.torus = d->conf.torus;
	sc.self = d->conf.self;
	sc.max_ports = 256;
	sc.heap_default = d->conf.heap_default;
	sc.heap_max = DNP_SESS_HEAP_MAX;
	sc.poll_mode = d->poll_mode;
	sc.ops = &dnpd_sess_ops;
	sc.ctx = d;
	r = dnpd_sess_create(&sc, &d->sess);
	if (r) {
		dnpd_log(DNPD_ERR, "socket %s: %s", d->sock_path, strerror(-r));
		return r;
	}
	return 0;
}

/* SIGTERM and SIGINT stop the loop (and ring the doorbell); SIGPIPE is ignored. */
static void dnpd_signals(struct dnpd *d)
{
	struct sigaction sa = { 0 };

	dnpd_sig_bell = d->bell;
	dnpd_sig_wake_fd = d->sess->wake_fd;
	sa.sa_handler = dnpd_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int dnpd_run(struct dnpd *d)
{
	const struct dnp_transport_ops *ops;
	int r;

	d->start = dnpd_now();
	/*
	 * poll() when the links wake the daemon through file descriptors: udp's
	 * sockets and verbs' completion channels. On the futex doorbell a
	 * sleeping verbs daemon missed arriving frames until its next timer (up
	 * to DNPD_FUTEX_MAX_NS; docs/verbs.md, "Where the time goes").
	 */
	d->poll_mode = !strcmp(d->conf.transport, "udp") || !strcmp(d->conf.transport, "verbs");
	/*
	 * Hold only where it was measured to help (docs/performance.md,
	 * "Holding the CPU after a yield"): shm links and a daemon pinned to one
	 * CPU (dnp-run --pin), where each CPU keeps the same two processes.
	 * Unpinned, and over udp, it was slower.
	 */
	{
		cpu_set_t cs;

		d->hold = !strcmp(d->conf.transport, "shm") &&
			  sched_getaffinity(0, sizeof(cs), &cs) == 0 && CPU_COUNT(&cs) == 1;
	}
	ops = dnp_transport_find(d->conf.transport);
	if (!ops) {
		dnpd_log(DNPD_ERR, "transport %s is not built in", d->conf.transport);
		return -ENOTSUP;
	}
	if (d->conf.cpu >= 0) {
		r = dnpd_place(d->conf.cpu);
		if (r)
			dnpd_log(DNPD_WARN, "cannot pin to CPU %d: %s", d->conf.cpu, strerror(-r));
	}
	/* Before the first shared mapping: nobody's ftruncate may kill us (dnp_shmguard.h). */
	r = dnp_shmguard_install();
	if (r)
		dnpd_log(DNPD_WARN, "SIGBUS guard: %s: a shrunk shared file would kill us",
			 strerror(-r));
	r = dnpd_files_open(d);
	if (r)
		return r;

	r = dnpd_engine_setup(d, dnpd_now());
	if (r) {
		dnpd_log(DNPD_ERR, "engine: %s", strerror(-r));
		goto out_bell;
	}
	if (ops->init) {
		/* Once per process, before the first link opens (dpdk: the EAL, docs/dpdk.md). */
		r = ops->init(d->conf.eal);
		if (r) {
			dnpd_log(DNPD_ERR, "transport %s start-up (%s): %s", ops->name,
				 *d->conf.eal ? d->conf.eal : "defaults", strerror(-r));
			goto out_links;
		}
		d->tp_started = ops;
	}
	r = dnpd_open_links(d, ops);
	if (r)
		goto out_links;
	r = dnpd_lfm_start(&d->lfm, &d->conf, d->e, dnpd_now());
	if (r)
		dnpd_log(DNPD_WARN, "lofamo: no register block (%s): fault manager off",
			 strerror(-r));
	/* wiring DIAGs (dnpctl topo --all) come through the DFM's queue */
	d->lfm.hook = (struct dnpd_diag_hook){ .take = dnpd_wire_take, .ctx = d };

	r = dnpd_sess_open(d);
	if (r)
		goto out_links;

	dnpd_signals(d);
	dnpd_log(DNPD_INFO, "node %u ready on %s", dnp_torus_id(&d->conf.torus, d->conf.self),
		 d->sock_path);

	dnpd_loop(d);
	dnpd_kick_stop(d);

	dnpd_log(DNPD_INFO, "stopping");
	/* the neighbours hear that this is a stop, not a fault (DNP_RESET_LEAVING) */
	dnp_engine_leave(d->e);
	dnpd_flush_tx(d, dnpd_now());
	dnpd_notify_stopping();
	dnpd_sig_wake_fd = -1;
	dnpd_sess_destroy(d->sess);
	d->sess = NULL;
	r = 0;
out_links:
	dnpd_lfm_stop(&d->lfm);
	free(d->wire);
	d->wire = NULL;
	dnpd_close_links(d);
	if (dnp_pcap_close(d->pcap))
		dnpd_log(DNPD_ERR, "--pcap %s: a write failed, the capture is cut", d->conf.pcap);
	d->pcap = NULL;
	if (d->tp_started && d->tp_started->fini && d->tp_started->fini())
		d->quick_exit = true;
	d->tp_started = NULL;
	if (d->up_file)
		unlink(d->up_path);
	dnp_engine_destroy(d->e);
out_bell:
	dnpd_sig_bell = NULL;
	dnp_doorbell_unmap(d->bell);
	unlink(d->bell_path);
	dnpd_unlock_node(d);
	dnp_shmguard_uninstall(); /* every guarded mapping is gone */
	return r;
}

int main(int argc, char **argv)
{
	static struct dnpd d = { .pid_fd = -1 }; /* large (link backlogs hang off it) */
	int r;

	dnpd_conf_default(&d.conf);
	r = dnpd_conf_parse(&d.conf, argc, argv);
	if (r)
		return r > 0 ? 0 : 2;
	r = dnpd_run(&d);
	if (d.quick_exit) { /* transport.h: no destructor may run under its threads */
		fflush(NULL);
		_exit(r ? 1 : 0);
	}
	return r ? 1 : 0;
}
