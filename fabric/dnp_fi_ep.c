/* SPDX-License-Identifier: MIT */
/*
 * Endpoints of the provider "dnp" and their progress (contract: dnp_fi_priv.h).
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnp_fi_priv.h"

#define DFI_EV_BATCH 32
#define DFI_SLEEP_US 1000u /* the longest sleep of a blocking window's idle step */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DFI_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(DFI_ASAN)
#define DFI_SPARE_REQS 0 /* ASan must see a request used after it ended */
#else
#define DFI_SPARE_REQS 64 /* freed requests an endpoint keeps for reuse */
#endif
#define DFI_ALIVE_NS 100000000ull /* a poll that finds no event checks the daemon at this period */
#define DFI_ALIVE_POLLS 16u       /* empty polls between two looks at the clock for it */

/* ------------------------------------------------------------ requests */

/* A request's index travels in 24 bits of a cookie: the table stops at DNP_REQTAB_MAX24. */
struct dfi_req *dfi_req_new(struct dfi_ep *ep, int kind)
{
	struct dfi_req *r = ep->spare;

	if (r) {
		ep->spare = r->next;
		ep->nspare--;
		memset(r, 0, sizeof(*r));
	} else if (!(r = calloc(1, sizeof(*r)))) {
		return NULL;
	}
	r->kind = kind;
	r->gen = (uint32_t)(ep->gen + 1) | 1u;
	if (dnp_reqtab_add(&ep->reqs, r, r->gen, &r->idx) < 0) {
		free(r);
		return NULL;
	}
	ep->gen++;
	return r;
}

void dfi_req_free(struct dfi_ep *ep, struct dfi_req *r)
{
	dnp_reqtab_remove(&ep->reqs, r->idx);
	if (ep->nspare + 1 > DFI_SPARE_REQS) { /* (not ">=": a limit of 0 would always hold) */
		free(r);
		return;
	}
	r->next = ep->spare;
	ep->spare = r;
	ep->nspare++;
}

/* ------------------------------------------------------------ peers */

/* Bytes of an endpoint's credit arrays (credit_in, credit_out), page aligned. */
size_t dfi_cred_len(const struct dfi_domain *dom)
{
	return ((size_t)dom->nidx * 2 * sizeof(uint64_t) + 4095) / 4096 * 4096;
}

struct dfi_peer *dfi_peer(struct dfi_ep *ep, unsigned idx)
{
	struct dfi_domain *dom = ep->dom;
	struct dfi_peer *pe = ep->peers[idx];
	unsigned node = idx / DFI_LOCAL;

	if (pe)
		return pe;
	pe = calloc(1, sizeof(*pe));
	if (!pe)
		return NULL;
	pe->stage_mem = dnp_alloc(dom->d, (size_t)DFI_K * DFI_SLOT);
	if (!pe->stage_mem) {
		free(pe);
		return NULL;
	}
	pe->c.x = node % dom->dims.x;
	pe->c.y = node / dom->dims.x % dom->dims.y;
	pe->c.z = node / (dom->dims.x * dom->dims.y);
	pe->port = ~0u;
	pe->fiaddr = FI_ADDR_NOTAVAIL;
	ep->peers[idx] = pe;
	return pe;
}

/* The peer (and its ring) for an AV address; NULL with *err set otherwise. */
struct dfi_peer *dfi_peer_of(struct dfi_ep *ep, fi_addr_t fa, unsigned *idx, int *err)
{
	struct dfi_av *av = ep->av;
	const struct dfi_addr *a;
	struct dfi_peer *pe;

	if (!av || fa >= av->n || !av->used[fa]) {
		*err = -FI_EINVAL;
		return NULL;
	}
	a = &av->tab[fa];
	*idx = dfi_idx(ep->dom, a->x, a->y, a->z, a->port);
	pe = dfi_peer(ep, *idx);
	if (!pe) {
		*err = -FI_ENOMEM;
		return NULL;
	}
	if (pe->port != ~0u && pe->port != a->port) {
		*err = -FI_EADDRINUSE; /* two endpoints of one node share a ring index */
		return NULL;
	}
	if (pe->have_ring && pe->ring_key != a->ring_key)
		dfi_peer_reset(ep, *idx); /* a new endpoint on that port */
	pe->port = a->port;
	pe->ring_va = a->ring_va + (uint64_t)ep->dom->my_idx * DFI_K * DFI_SLOT;
	pe->ring_key = a->ring_key;
	pe->have_ring = true;
	if (!pe->have_credit) {
		pe->credit_va = a->credit_va + (uint64_t)ep->dom->my_idx * sizeof(uint64_t);
		pe->credit_key = a->credit_key;
		pe->have_credit = true;
	}
	pe->fiaddr = fa;
	return pe;
}

fi_addr_t dfi_src_addr(struct dfi_ep *ep, struct dfi_peer *pe)
{
	struct dfi_av *av = ep->av;
	size_t i;

	if (pe->fiaddr != FI_ADDR_NOTAVAIL || !av)
		return pe->fiaddr;
	for (i = 0; i < av->n; i++)
		if (av->used[i] && av->tab[i].x == pe->c.x && av->tab[i].y == pe->c.y &&
		    av->tab[i].z == pe->c.z && av->tab[i].port == pe->port &&
		    (!pe->have_credit || av->tab[i].credit_key == pe->credit_key)) {
			pe->fiaddr = i;
			break;
		}
	return pe->fiaddr;
}

static void dfi_event(struct dfi_ep *ep, const struct dnp_event *ev)
{
	struct dfi_peer *pe;
	struct dfi_req *q;
	unsigned kind;
	uint32_t a, b;

	dnp_reqtab_cookie_split(ev->cookie, &kind, &a, &b);
	if (ev->type == DNP_EV_RX_PUT) {
		dfi_rx(ep, ev);
		return;
	}
	if (ev->type == DNP_EV_RX_SEND || ev->type == DNP_EV_LINK)
		return;
	if (kind == C_STAGE && a < ep->dom->nidx && b < DFI_K && (pe = ep->peers[a])) {
		if (pe->st[b].state != S_INFLIGHT)
			return;
		pe->st[b].state = S_FREE;
		if (ev->type == DNP_EV_ERROR)
			dfi_fail(ep, ev->status ? ev->status : -EIO, "eager PUT failed");
		return;
	}
	if (kind == C_CREDIT && a < ep->dom->nidx && (pe = ep->peers[a])) {
		pe->credit_busy = false;
		pe->credit_force = false;
		if (ev->type == DNP_EV_ERROR && pe->acked == ep->credit_out[a]) {
			/* the peer may not have this count, nor a later one: again, later */
			pe->credit_force = true;
			pe->acked--;
			pe->credit_retry_at = dfi_now() + 200000;
		}
		dfi_credit_return(ep, a);
		return;
	}
	if (kind == C_RMA && a == 0 && b == 0) {
		/* a write the daemon counted (dnp_fi_rma.c) failed: its counter has the error */
		if (ev->type == DNP_EV_ERROR)
			dfi_cq_error(ep->tx_cq, NULL, FI_RMA | FI_WRITE, 0, NULL, 0, 0,
				     ev->status ? -ev->status : FI_EIO);
		return;
	}
	q = dnp_reqtab_find(&ep->reqs, a, b);
	if (!q)
		return;
	if (kind == C_COLL && (q->kind == R_COLL || q->kind == R_JOIN))
		dfi_coll_event(ep, q, ev);
	else if (kind == C_GET && q->kind == R_RECV)
		dfi_get_done(ep, q, ev);
	else if (kind == C_RMA && q->kind == R_RMA)
		dfi_rma_done(ep, q, ev);
}

/* Frees the messages queued for peer pe; those of a request fail it with err. */
static void dfi_drop_queue(struct dfi_ep *ep, struct dfi_peer *pe, int err)
{
	while (pe->q_head) {
		struct dfi_out *o = pe->q_head;

		pe->q_head = o->next;
		if (o->req && err) {
			dfi_cq_error(ep->tx_cq, o->req->context, o->req->flags, 0, NULL, 0, 0, err);
			dfi_count(ep, o->req->flags, true);
			dfi_req_free(ep, o->req);
		}
		free(o->copy);
		free(o);
	}
	pe->q_tail = NULL;
}

/* Ends request q with CQ error err (a positive FI_* errno). */
static void dfi_req_fail(struct dfi_ep *ep, struct dfi_req *q, int err)
{
	if (q->kind == R_COLL || q->kind == R_JOIN) {
		dfi_coll_fail(ep, q, err);
		return;
	}
	if (q->kind == R_RECV)
		dfi_cq_error(ep->rx_cq, q->context, FI_RECV | (q->tagged ? FI_TAGGED : FI_MSG), 0,
			     q->buf, q->tag, 0, err);
	else
		dfi_cq_error(ep->tx_cq, q->context, q->flags, 0, NULL, 0, 0, err);
	dfi_count(ep, q->kind == R_RECV ? FI_RECV : q->flags, true);
	dfi_unreg_user(ep->dom, q);
	free(q->inject);
	dfi_req_free(ep, q);
}

/*
 * Ends the requests still in the table that match: all (idx < 0), or the
 * sends waiting for peer idx's FIN (its old process is gone).
 */
static void dfi_fail_reqs(struct dfi_ep *ep, long idx, int err)
{
	uint32_t i;

	/* reqtab.h: entries [0, n) have been used, a free one holds NULL */
	for (i = 0; i < ep->reqs.n; i++) {
		struct dfi_req *q = ep->reqs.ent[i].obj;

		if (q && (idx < 0 || (q->kind == R_SEND && q->rts_peer == (uint32_t)idx)))
			dfi_req_fail(ep, q, err);
	}
}

/* The daemon is gone: every request ends in a CQ error entry, nothing more is issued. */
static void dfi_abort(struct dfi_ep *ep)
{
	unsigned i;

	dfi_fail(ep, -EIO, "daemon");
	for (i = 0; i < ep->dom->nidx; i++)
		if (ep->peers[i]) {
			dfi_drop_queue(ep, ep->peers[i], 0);
			ep->peers[i]->pending = 0;
		}
	ep->posted[0] = ep->posted[1] = ep->posted_tail[0] = ep->posted_tail[1] = NULL;
	ep->gets = NULL;
	dfi_fail_reqs(ep, -1, FI_EIO);
}

void dfi_peer_reset(struct dfi_ep *ep, unsigned idx)
{
	struct dfi_peer *pe = ep->peers[idx];
	unsigned k;

	dfi_drop_queue(ep, pe, FI_ECONNRESET);
	dfi_fail_reqs(ep, idx, FI_ECONNRESET);
	for (k = 0; k < DFI_K; k++)
		if (pe->st[k].state == S_PENDING)
			pe->st[k].state = S_FREE; /* in flight: its completion frees it */
	pe->pending = 0;
	pe->next_seq = 0;
	pe->sent = 0;
	pe->ack_in = 0;
	__atomic_store_n(&ep->credit_in[idx], 0, __ATOMIC_RELEASE);
	while (pe->held) {
		struct dfi_held *e = pe->held;

		pe->held = e->next;
		free(e->data);
		free(e);
	}
	pe->expect_seq = 0;
	pe->consumed = pe->acked = 0;
	pe->credit_force = false;
	pe->credit_retry_at = 0;
	pe->have_ring = pe->have_credit = false;
	pe->fiaddr = FI_ADDR_NOTAVAIL;
}

/* No event came: is the daemon still there? (a system call, so at most every DFI_ALIVE_NS) */
static void dfi_check_daemon(struct dfi_ep *ep)
{
	struct dnp_event ev;
	uint64_t now;
	int r;

	/* the clock itself is read every DFI_ALIVE_POLLS empty polls only */
	if (++ep->empty_polls < DFI_ALIVE_POLLS)
		return;
	ep->empty_polls = 0;
	now = dfi_now();
	if (now - ep->alive_at < DFI_ALIVE_NS)
		return;
	ep->alive_at = now;
	r = dnp_wait_event(ep->dom->d, &ev, 0); /* 0 ms: polls, and checks the daemon */
	if (r == 1) {
		dfi_event(ep, &ev);
		ep->peer_work = true; /* as after any event: the peers' loop runs */
	} else if (r < 0)
		dfi_abort(ep);
}

/* FI_THREAD_DOMAIN: libdnp's wait, up to 1 ms; the event it takes is handled here. */
static void dfi_wait_event(struct dfi_ep *ep)
{
	struct dnp_event ev;
	int r;

	r = dnp_wait_event(ep->dom->d, &ev, 1);
	if (r == 1) {
		dfi_event(ep, &ev);
		ep->peer_work = true;
	} else if (r < 0) {
		dfi_abort(ep);
	}
}

/*
 * Beside busy processes (the CQ's yields gave away time slices: a window of
 * dnp_yield_blocking) a poll that neither yields nor sleeps keeps the CPU
 * from the daemon for a whole slice. Sleep instead: up to 1 ms, ended by the
 * next event (the daemon wakes a sleeper). Called with the provider lock
 * held unless the domain is FI_THREAD_DOMAIN.
 *
 * FI_THREAD_DOMAIN (one thread at a time on the domain: Open MPI's MTL):
 * through libdnp's wait, which also takes the event; its CQ entry, if any,
 * is read next time.
 *
 * FI_THREAD_SAFE: the sleep must not hold the provider lock, or no other
 * thread could post or progress for up to 1 ms per sleep (docs/mpi.md,
 * "The wait: placement from libdnp, a sleep without the lock"). libdnp's
 * event count lets us sleep without using the struct dnp that the other
 * threads use meanwhile (dnp.h, dnp_event_sleep): take the count, look
 * once more under the lock, and sleep unlocked only if nothing came. The
 * events are taken by the next poll, under the lock, by whoever comes
 * first. Nothing read before the sleep is trusted after it: the endpoint
 * is looked up again (another thread may have closed it or seen it fail).
 */
void dfi_wait_block(struct dfi_domain *dom)
{
	struct dfi_ep *ep = dom->ep;
	struct dnp_event ev[DFI_EV_BATCH];
	uint32_t seq;
	int n, k, r;

	if (!ep || !ep->enabled || ep->fatal == -EIO)
		return;
	if (dom->nolock) {
		dfi_wait_event(ep);
		return;
	}
	(void)dnp_event_seq(dom->d, &seq); /* d is valid: it cannot fail */
	n = dnp_poll_events(dom->d, ev, DFI_EV_BATCH);
	for (k = 0; k < n; k++)
		dfi_event(ep, &ev[k]);
	if (n != 0) {
		ep->peer_work = n > 0;
		return;
	}
	pthread_mutex_unlock(&dfi_lock);
	r = dnp_event_sleep(dom->d, seq, DFI_SLEEP_US);
	pthread_mutex_lock(&dfi_lock);
	ep = dom->ep; /* looked up again: see above */
	if (r == -EIO && ep && ep->enabled && ep->fatal != -EIO)
		dfi_abort(ep);
}

void dfi_progress(struct dfi_ep *ep)
{
	struct dnp_event ev[DFI_EV_BATCH];
	bool work;
	unsigned i;
	int n, k;

	if (!ep->enabled || ep->fatal == -EIO)
		return;
	n = dnp_poll_events(ep->dom->d, ev, DFI_EV_BATCH);
	for (k = 0; k < n; k++)
		dfi_event(ep, &ev[k]);
	if (n == 0) {
		dfi_check_daemon(ep);
		if (ep->fatal == -EIO)
			return;
	}
	if (ep->gets) {
		struct dfi_req *l = ep->gets;

		ep->gets = NULL;
		while (l) {
			struct dfi_req *q = l;

			l = l->next;
			dfi_get_issue(ep, q);
		}
	}
	if (ep->mcs)
		dfi_coll_progress(ep);
	/*
	 * The peers' loop: after events (a slot or credits came back, a message
	 * was consumed), or while some peer has work left. An empty poll of a
	 * quiet endpoint thus costs no walk over every possible peer.
	 */
	if (n == 0 && !ep->peer_work)
		return;
	work = false;
	for (i = 0; i < ep->dom->nidx; i++) {
		struct dfi_peer *pe = ep->peers[i];

		if (!pe)
			continue;
		if (pe->q_head || pe->pending)
			dfi_push(ep, i);
		if (!pe->credit_busy && pe->consumed != pe->acked)
			dfi_credit_return(ep, i);
		work |= dfi_peer_work(pe);
	}
	ep->peer_work = work;
}

static int dfi_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	if (level == FI_OPT_ENDPOINT && optname == FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	return -FI_ENOPROTOOPT;
}

static int dfi_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static ssize_t dfi_rx_size_left(struct fid_ep *ep)
{
	return 1024;
}

static int dfi_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct dfi_ep *ep = container_of(fid, struct dfi_ep, ep.fid);
	struct dfi_domain *dom = ep->dom;
	struct dfi_addr a = {
		.x = (uint8_t)dom->self.x,
		.y = (uint8_t)dom->self.y,
		.z = (uint8_t)dom->self.z,
		.port = (uint8_t)dom->port,
		.ring_key = ep->ring_key,
		.ring_va = (uintptr_t)ep->ring,
		.credit_va = (uintptr_t)ep->credit_in,
		.credit_key = ep->credit_key,
		.magic = DFI_ADDR_MAGIC,
	};
	size_t n = *addrlen;

	*addrlen = sizeof(a);
	if (n < sizeof(a))
		return -FI_ETOOSMALL;
	memcpy(addr, &a, sizeof(a));
	return 0;
}

static int dfi_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct dfi_ep *ep = container_of(fid, struct dfi_ep, ep.fid);

	switch (bfid->fclass) {
	case FI_CLASS_AV:
		ep->av = (struct dfi_av *)bfid;
		return 0;
	case FI_CLASS_EQ:
		if (ep->eq)
			return -FI_EINVAL; /* one event queue per endpoint */
		return (int)LOCKED(dfi_eq_bind((struct dfi_eq *)bfid, ep));
	case FI_CLASS_CNTR:
		return (int)LOCKED(dfi_cntr_bind(ep, (struct dfi_cntr *)bfid, flags));
	case FI_CLASS_CQ:
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = (struct dfi_cq *)bfid;
			ep->tx_flags = flags;
		}
		if (flags & FI_RECV) {
			ep->rx_cq = (struct dfi_cq *)bfid;
			ep->rx_flags = flags;
		}
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static int dfi_ep_control(struct fid *fid, int command, void *arg)
{
	struct dfi_ep *ep = container_of(fid, struct dfi_ep, ep.fid);

	if (command != FI_ENABLE)
		return -FI_ENOSYS;
	if (!ep->av || !ep->tx_cq || !ep->rx_cq)
		return -FI_ENOCQ;
	ep->enabled = true;
	return 0;
}

static int dfi_ep_close(struct fid *fid)
{
	struct dfi_ep *ep = container_of(fid, struct dfi_ep, ep.fid);
	uint64_t deadline = dfi_now() + 2000000000ull;
	unsigned i, k;
	bool busy;

	pthread_mutex_lock(&dfi_lock);
	/* Let the last messages and credits leave before the port goes away. */
	do {
		busy = false;
		dfi_progress(ep);
		for (i = 0; i < ep->dom->nidx; i++) {
			struct dfi_peer *pe = ep->peers[i];

			if (!pe)
				continue;
			busy |= pe->q_head != NULL;
			for (k = 0; k < DFI_K; k++)
				busy |= pe->st[k].state != S_FREE;
		}
		if (busy)
			sched_yield();
	} while (busy && !ep->fatal && dfi_now() < deadline);
	for (i = 0; i < ep->dom->nidx; i++) {
		struct dfi_peer *pe = ep->peers[i];

		if (!pe)
			continue;
		while (pe->q_head) {
			struct dfi_out *o = pe->q_head;

			pe->q_head = o->next;
			free(o->copy);
			free(o);
		}
		while (pe->held) {
			struct dfi_held *e = pe->held;

			pe->held = e->next;
			free(e->data);
			free(e);
		}
		free(pe);
	}
	for (k = 0; k < 2; k++)
		while (ep->unexp[k]) {
			struct dfi_unexp *u = ep->unexp[k];

			ep->unexp[k] = u->next;
			free(u->data);
			free(u);
		}
	while (ep->claimed) {
		struct dfi_unexp *u = ep->claimed;

		ep->claimed = u->next;
		free(u->data);
		free(u);
	}
	dfi_coll_close_ep(ep);
	if (ep->eq)
		dfi_eq_unbind(ep->eq, ep);
	dnp_reqtab_fini(&ep->reqs, free);
	while (ep->spare) {
		struct dfi_req *q = ep->spare;

		ep->spare = q->next;
		free(q);
	}
	for (k = 0; k < DFI_CNT_N; k++)
		if (ep->cntr[k])
			ep->cntr[k]->bound--;
	free(ep->peers);
	ep->dom->ep = NULL;
	pthread_mutex_unlock(&dfi_lock);
	free(ep);
	return 0;
}

static struct fi_ops dfi_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dfi_ep_close,
	.bind = dfi_ep_bind,
	.control = dfi_ep_control,
	.ops_open = NOSYS(ops_open),
};

static struct fi_ops_ep dfi_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = dfi_cancel,
	.getopt = dfi_getopt,
	.setopt = dfi_setopt,
	.tx_ctx = NOSYS(tx_ctx),
	.rx_ctx = NOSYS(rx_ctx),
	.rx_size_left = dfi_rx_size_left,
	.tx_size_left = dfi_rx_size_left,
};

static struct fi_ops_cm dfi_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = NOSYS(setname),
	.getname = dfi_getname,
	.getpeer = NOSYS(getpeer),
	.connect = NOSYS(connect),
	.listen = NOSYS(listen),
	.accept = NOSYS(accept),
	.reject = NOSYS(reject),
	.shutdown = NOSYS(shutdown),
	.join = dfi_join,
};

int dfi_endpoint(struct fid_domain *fdom, struct fi_info *info, struct fid_ep **out, void *context)
{
	struct dfi_domain *dom = (struct dfi_domain *)fdom;
	struct dfi_ep *ep;
	size_t ring_len = (size_t)dom->nidx * DFI_K * DFI_SLOT;
	size_t cred_len = dfi_cred_len(dom);
	uint8_t *area;
	int r, tc;

	if (info && info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
	    info->ep_attr->type != FI_EP_UNSPEC)
		return -FI_EINVAL;
	if (!dfi_src_ok(info, dom->self, dom->port))
		return -FI_EINVAL; /* src_addr of another node (or port) than the domain's */
	tc = info && info->tx_attr ? dfi_tclass(info->tx_attr->tclass) : 0;
	if (tc < 0)
		return -FI_EINVAL;
	pthread_mutex_lock(&dfi_lock);
	if (dom->ep) {
		pthread_mutex_unlock(&dfi_lock);
		return -FI_EBUSY; /* one endpoint per domain (one DNP port) */
	}
	ep = calloc(1, sizeof(*ep));
	r = -FI_ENOMEM;
	if (!ep)
		goto err;
	dnp_reqtab_init(&ep->reqs, DNP_REQTAB_MAX24);
	ep->dom = dom;
	dom->tc = DNP_TC(tc); /* every command of the endpoint carries its class */
	ep->tx_op_flags = info && info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info && info->rx_attr ? info->rx_attr->op_flags : 0;
	ep->directed = !info || (info->caps & FI_DIRECTED_RECV);
	ep->peers = calloc(dom->nidx, sizeof(*ep->peers));
	/* One PUT target: the credit arrays, then the rings (see dfi_ring_of). */
	area = dnp_alloc(dom->d, cred_len + ring_len);
	if (!ep->peers || !area)
		goto err;
	memset(area, 0, cred_len);
	ep->credit_in = (uint64_t *)area;
	ep->credit_out = ep->credit_in + dom->nidx;
	ep->ring = area + cred_len;
	r = dnp_register(dom->d, area, cred_len + ring_len, DNP_BUF_PUT_TARGET, &ep->ring_key);
	if (r < 0)
		goto err;
	ep->credit_key = ep->ring_key;
	ep->ep.fid.fclass = FI_CLASS_EP;
	ep->ep.fid.context = context;
	ep->ep.fid.ops = &dfi_ep_fi_ops;
	ep->ep.ops = &dfi_ep_ops;
	ep->ep.cm = &dfi_cm_ops;
	ep->ep.msg = &dfi_msg_ops;
	ep->ep.tagged = &dfi_tagged_ops;
	ep->ep.rma = &dfi_rma_ops;
	ep->ep.collective = &dfi_coll_ops;
	dom->ep = ep;
	pthread_mutex_unlock(&dfi_lock);
	*out = &ep->ep;
	return 0;
err:
	if (ep) {
		free(ep->peers);
		free(ep);
	}
	pthread_mutex_unlock(&dfi_lock);
	return r;
}
