/* SPDX-License-Identifier: MIT */
/*
 * verbs — DNP virtual links over RDMA verbs; contract in verbs.h, design and
 * figures in docs/verbs.md. This file: the queue pair's life (init, connect,
 * reset), the handshake state machine, the data path and the ops table.
 * Device selection and the handshake socket are in verbs_setup.c.
 *
 * Every work request's wr_id is (generation << 32 | slot). A reset (peer
 * restart, RC failure) bumps the generation, empties the send ring and
 * reposts every receive slot, so completions of the previous incarnation
 * still in a CQ are recognised and ignored.
 */
#include "transport_priv.h"
#include "verbs_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static inline struct dnp_verbs *to_vb(struct dnp_transport *t)
{
	return (struct dnp_verbs *)(void *)t;
}

static inline const struct dnp_verbs *to_vb_c(const struct dnp_transport *t)
{
	return (const struct dnp_verbs *)(const void *)t;
}

static uint64_t vb_random(void)
{
	uint64_t r = 0;

	while (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r) || r == 0)
		;
	return r;
}

static inline uint8_t *vb_rx_slot(const struct dnp_verbs *v, uint32_t i)
{
	return v->mem + ((size_t)v->depth + i) * v->slot;
}

static inline uint64_t vb_wr_id(const struct dnp_verbs *v, uint32_t slot)
{
	return (uint64_t)v->gen << 32 | slot;
}

/* Posts receive slots, chained DNP_VERBS_BATCH at a time. */
static int vb_post_recv(struct dnp_verbs *v, const uint32_t *slots, unsigned n)
{
	for (unsigned done = 0; done < n;) {
		unsigned k = n - done < DNP_VERBS_BATCH ? n - done : DNP_VERBS_BATCH;
		struct ibv_recv_wr *bad;

		for (unsigned i = 0; i < k; i++) {
			uint32_t s = slots[done + i];

			v->rsge[i].addr = (uintptr_t)vb_rx_slot(v, s);
			v->rsge[i].length = v->slot;
			v->rsge[i].lkey = v->mr->lkey;
			v->rwr[i].wr_id = vb_wr_id(v, s);
			v->rwr[i].sg_list = &v->rsge[i];
			v->rwr[i].num_sge = 1;
			v->rwr[i].next = i + 1 < k ? &v->rwr[i + 1] : NULL;
		}
		if (ibv_post_recv(v->qp, v->rwr, &bad))
			return -EIO;
		done += k;
	}
	return 0;
}

/* RESET -> INIT, then every receive slot posted. */
static int vb_qp_init(struct dnp_verbs *v)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = v->port,
		.qp_access_flags = 0,
	};
	uint32_t *all = v->repost;
	int r;

	r = ibv_modify_qp(v->qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (r)
		return -r;
	for (uint32_t i = 0; i < v->depth; i++)
		all[i] = i;
	r = vb_post_recv(v, all, v->depth);
	v->n_repost = 0;
	return r;
}

/* INIT -> RTR -> RTS towards the peer of h. */
static int vb_qp_connect(struct dnp_verbs *v, const struct dnp_verbs_hello *h)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = (enum ibv_mtu)(h->mtu < v->port_mtu ? h->mtu : v->port_mtu),
		.dest_qp_num = h->qpn,
		.rq_psn = h->psn,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = v->roce,
			.dlid = h->lid,
			.port_num = v->port,
			.grh = { .sgid_index = (uint8_t)v->gid_index, .hop_limit = 64 },
		},
	};
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	bool rc = v->qp_type == IBV_QPT_RC;
	int r;

	memcpy(a.ah_attr.grh.dgid.raw, h->gid, sizeof(h->gid));
	if (rc)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	r = ibv_modify_qp(v->qp, &a, mask);
	if (r)
		return -r;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = v->psn;
	/* RC: ~67 ms ack timeout, 7 retries, endless RNR retries. */
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (rc)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	r = ibv_modify_qp(v->qp, &a, mask);
	return r ? -r : 0;
}

/* Back to RESET and INIT: a new generation, an empty send ring, all receives posted. */
static int vb_qp_reset(struct dnp_verbs *v)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc[DNP_VERBS_BATCH];
	int r;

	v->st.resets++;
	v->connected = false;
	r = ibv_modify_qp(v->qp, &a, IBV_QP_STATE);
	if (r)
		return -r;
	v->gen++;
	v->tx_head = v->tx_tail = 0;
	/* What the CQs still hold is of the old generation: drop it now. */
	while (ibv_poll_cq(v->scq, DNP_VERBS_BATCH, wc) > 0)
		;
	while (ibv_poll_cq(v->rcq, DNP_VERBS_BATCH, wc) > 0)
		;
	return vb_qp_init(v);
}

/* This end failed (RC error, bad completion): a new instance, announced afresh. */
static void vb_self_reset(struct dnp_verbs *v)
{
	if (vb_qp_reset(v)) {
		v->fatal = true;
		return;
	}
	v->nonce = vb_random();
	v->psn = (uint32_t)vb_random() & 0xffffffu;
	v->peer_nonce = 0;
	v->acked = false;
	v->next_hello = 0;
	v->next_check = 0;
}

/* A valid hello h from the peer: (re)connect when it is news, answer when needed. */
static void vb_hs_handle(struct dnp_verbs *v, const struct dnp_verbs_hello *h)
{
	if (!v->connected || h->nonce != v->peer_nonce || h->qpn != v->peer_qpn ||
	    h->psn != v->peer_psn) {
		int r = v->connected ? vb_qp_reset(v) : 0;

		if (!r)
			r = vb_qp_connect(v, h);
		if (r) {
			/*
			 * No route (carrier down, address gone): stay unconnected and
			 * try again at the peer's next hello; say it once.
			 */
			if (!v->connect_warned)
				fprintf(stderr, "verbs: connecting QP %u to peer QP %u: %s\n",
					v->qp->qp_num, h->qpn, strerror(-r));
			v->connect_warned = true;
			v->st.connect_errors++;
			if (vb_qp_reset(v))
				v->fatal = true;
			return;
		}
		v->connect_warned = false;
		v->peer_nonce = h->nonce;
		v->peer_qpn = h->qpn;
		v->peer_psn = h->psn;
		v->connected = true;
		v->was_connected = true;
		v->acked = false;
		v->st.connects++;
	}
	if (h->peer == v->nonce)
		v->acked = true;
	/* The peer does not know this instance, or does not know that we know it. */
	if (h->peer != v->nonce || !(h->flags & DNP_VERBS_HELLO_ACKED))
		dnp_verbs_hs_send(v);
}

static void vb_hs_poll(struct dnp_verbs *v, uint64_t now)
{
	struct dnp_verbs_hello h;

	for (int i = 0; i < 8; i++) {
		int r = dnp_verbs_hs_recv(v, &h);

		if (r == 0)
			break;
		if (r == -EPROTO)
			continue;
		if (r < 0) {
			fprintf(stderr, "verbs: handshake socket: %s\n", strerror(-r));
			v->fatal = true;
			return;
		}
		vb_hs_handle(v, &h);
	}
	if (!v->acked && now >= v->next_hello) {
		dnp_verbs_hs_send(v);
		v->next_hello = now + DNP_VERBS_HELLO_NS;
	}
	v->next_check = now + DNP_VERBS_CHECK_NS;
}

/* Retires completed sends; true when a send failed (RC retries exhausted). */
static bool vb_tx_reap(struct dnp_verbs *v)
{
	struct ibv_wc wc[DNP_VERBS_BATCH];
	bool failed = false;
	int got;

	do {
		got = ibv_poll_cq(v->scq, DNP_VERBS_BATCH, wc);
		for (int i = 0; i < got; i++) {
			if ((uint32_t)(wc[i].wr_id >> 32) != v->gen)
				continue;
			/* One QP: sends complete in order. */
			v->tx_tail++;
			v->st.tx_completions++;
			if (wc[i].status != IBV_WC_SUCCESS && wc[i].status != IBV_WC_WR_FLUSH_ERR) {
				v->st.tx_errors++;
				failed = true;
			}
		}
	} while (got == (int)DNP_VERBS_BATCH);
	return failed;
}

static int vb_tx_burst(struct dnp_transport *t, const struct dnp_tx_frame *f, unsigned n)
{
	struct dnp_verbs *v = to_vb(t);
	struct ibv_send_wr *bad = NULL;
	unsigned k, room;
	int r;

	if (v->fatal)
		return -EIO;
	if (vb_tx_reap(v)) {
		vb_self_reset(v);
		return 0;
	}
	if (!v->connected) {
		v->st.tx_dropped += n;
		return (int)n;
	}
	room = v->depth - (v->tx_head - v->tx_tail);
	if (n > room)
		n = room;
	if (n > DNP_VERBS_BATCH)
		n = DNP_VERBS_BATCH;
	for (k = 0; k < n; k++) {
		uint32_t s = (v->tx_head + k) & (v->depth - 1);
		uint8_t *slot = v->mem + (size_t)s * v->slot;

		if (f[k].len > v->frame_max || f[k].len == 0)
			break;
		memcpy(slot, f[k].data, f[k].len);
		v->ssge[k].addr = (uintptr_t)slot;
		v->ssge[k].length = f[k].len;
		v->ssge[k].lkey = v->mr->lkey;
		v->swr[k].wr_id = vb_wr_id(v, s);
		v->swr[k].sg_list = &v->ssge[k];
		v->swr[k].num_sge = 1;
		v->swr[k].opcode = IBV_WR_SEND;
		v->swr[k].send_flags =
			IBV_SEND_SIGNALED | (f[k].len <= v->max_inline ? IBV_SEND_INLINE : 0);
		v->swr[k].next = &v->swr[k + 1];
	}
	if (k == 0)
		return n == 0 ? 0 : -EMSGSIZE;
	v->swr[k - 1].next = NULL;
	r = ibv_post_send(v->qp, v->swr, &bad);
	if (r) {
		unsigned posted = bad ? (unsigned)(bad - v->swr) : 0;

		v->tx_head += posted;
		v->st.tx_frames += posted;
		/* A full queue is back-pressure; anything else loses the rest (resent above). */
		if (r == ENOMEM)
			return (int)posted;
		v->st.tx_dropped += k - posted;
		return (int)k;
	}
	v->tx_head += k;
	v->st.tx_frames += k;
	return (int)k;
}

/* Drains pending CQ events (non-blocking channel), then asks for the next one. */
static void vb_arm(struct dnp_verbs *v)
{
	struct ibv_cq *cq;
	void *cq_ctx;

	while (ibv_get_cq_event(v->chan, &cq, &cq_ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		v->st.cq_events++;
	}
	if (ibv_req_notify_cq(v->rcq, 0) == 0) {
		v->armed = true;
		v->st.cq_arms++;
	}
}

/* A completion came while armed: its event is (or will be) on the channel. */
static void vb_disarm(struct dnp_verbs *v)
{
	struct ibv_cq *cq;
	void *cq_ctx;

	if (ibv_get_cq_event(v->chan, &cq, &cq_ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		v->st.cq_events++;
	}
	v->armed = false;
}

/*
 * Polls the receive CQ. Only after DNP_VERBS_ARM_POLLS empty polls in a row
 * (the daemon is about to go idle) is the CQ armed, so that the channel fd
 * wakes a sleeping daemon; a stream of completions costs no system call.
 */
static int vb_rx_poll(struct dnp_verbs *v, struct ibv_wc *wc, unsigned n)
{
	int got = n ? ibv_poll_cq(v->rcq, (int)n, wc) : 0;

	if (got > 0) {
		v->empty = 0;
		if (v->armed)
			vb_disarm(v);
	} else if (got == 0 && n && v->chan && !v->armed && ++v->empty >= DNP_VERBS_ARM_POLLS) {
		vb_arm(v);
		/* What completed before the arming raised no event: look again. */
		got = ibv_poll_cq(v->rcq, (int)n, wc);
	}
	return got;
}

static int vb_rx_burst(struct dnp_transport *t, struct dnp_rx_frame *f, unsigned n)
{
	struct dnp_verbs *v = to_vb(t);
	struct ibv_wc wc[DNP_VERBS_BATCH];
	bool failed = false;
	int got, out = 0;

	if (v->fatal)
		return -EIO;
	if (v->n_repost) {
		if (vb_post_recv(v, v->repost, v->n_repost)) {
			v->fatal = true;
			return -EIO;
		}
		v->n_repost = 0;
	}
	if ((v->polls++ & 63u) == 0) {
		uint64_t now = dnp_verbs_now();

		if (now >= v->next_check)
			vb_hs_poll(v, now);
		if (v->fatal)
			return -EIO;
	}
	if (n > DNP_VERBS_BATCH)
		n = DNP_VERBS_BATCH;
	got = vb_rx_poll(v, wc, n);
	for (int i = 0; i < got; i++) {
		uint32_t s = (uint32_t)wc[i].wr_id;

		if ((uint32_t)(wc[i].wr_id >> 32) != v->gen || s >= v->depth)
			continue;
		v->repost[v->n_repost++] = s;
		if (wc[i].status != IBV_WC_SUCCESS || wc[i].byte_len > v->frame_max ||
		    wc[i].byte_len == 0) {
			v->st.rx_bad++;
			if (wc[i].status != IBV_WC_SUCCESS && wc[i].status != IBV_WC_WR_FLUSH_ERR) {
				v->st.rx_errors++;
				failed = true;
			}
			continue;
		}
		f[out].data = vb_rx_slot(v, s);
		f[out].len = wc[i].byte_len;
		out++;
	}
	if (failed) {
		/* The QP is in error (a malformed or oversized message): start over. */
		vb_self_reset(v);
		return 0;
	}
	v->st.rx_frames += (unsigned)out;
	return out;
}

static void vb_free(struct dnp_verbs *v)
{
	if (v->qp)
		ibv_destroy_qp(v->qp);
	if (v->scq)
		ibv_destroy_cq(v->scq);
	if (v->rcq) {
		if (v->armed)
			vb_disarm(v);
		ibv_destroy_cq(v->rcq);
	}
	if (v->chan)
		ibv_destroy_comp_channel(v->chan);
	if (v->mr)
		ibv_dereg_mr(v->mr);
	if (v->pd)
		ibv_dealloc_pd(v->pd);
	if (v->ctx)
		ibv_close_device(v->ctx);
	if (v->hfd >= 0)
		close(v->hfd);
	free(v->mem);
	free(v->repost);
	free(v->swr);
	free(v->ssge);
	free(v->rwr);
	free(v->rsge);
	free(v);
}

/* Protection domain, registered slots, CQs and the QP (in RESET). */
static int vb_create(struct dnp_verbs *v)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = v->qp_type,
		.sq_sig_all = 0,
		.cap = {
			.max_send_wr = v->depth,
			.max_recv_wr = v->depth,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = 64,
		},
	};
	size_t bytes = (size_t)2 * v->depth * v->slot;
	int cqe = (int)(2 * v->depth + DNP_VERBS_BATCH);

	v->pd = ibv_alloc_pd(v->ctx);
	if (!v->pd)
		return -(errno ? errno : ENOMEM);
	v->mem = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
	if (!v->mem)
		return -ENOMEM;
	memset(v->mem, 0, bytes);
	v->mr = ibv_reg_mr(v->pd, v->mem, bytes, IBV_ACCESS_LOCAL_WRITE);
	if (!v->mr) {
		fprintf(stderr, "verbs: registering %zu bytes: %s (RLIMIT_MEMLOCK?)\n", bytes,
			strerror(errno));
		return -(errno ? errno : ENOMEM);
	}
	if (v->want_wait) {
		v->chan = ibv_create_comp_channel(v->ctx);
		if (!v->chan)
			return -(errno ? errno : ENOMEM);
		if (fcntl(v->chan->fd, F_SETFL, fcntl(v->chan->fd, F_GETFL) | O_NONBLOCK) < 0)
			return -errno;
	}
	v->scq = ibv_create_cq(v->ctx, cqe, NULL, NULL, 0);
	v->rcq = ibv_create_cq(v->ctx, cqe, NULL, v->chan, 0);
	if (!v->scq || !v->rcq)
		return -(errno ? errno : ENOMEM);
	qa.send_cq = v->scq;
	qa.recv_cq = v->rcq;
	v->qp = ibv_create_qp(v->pd, &qa);
	if (!v->qp) {
		/* Some devices take no inline data. */
		qa.cap.max_inline_data = 0;
		v->qp = ibv_create_qp(v->pd, &qa);
	}
	if (!v->qp) {
		fprintf(stderr, "verbs: creating a %s QP of %u WRs: %s\n",
			v->qp_type == IBV_QPT_RC ? "RC" : "UC", v->depth, strerror(errno));
		return -(errno ? errno : ENOMEM);
	}
	v->max_inline = qa.cap.max_inline_data;
	return 0;
}

static int vb_parse(struct dnp_verbs *v, const struct dnp_transport_conf *c)
{
	char qp[8] = "uc";
	uint32_t w;

	if (!c->local || !c->remote || c->frame_max == 0 || c->frame_max > 65000 || c->depth < 2 ||
	    (c->depth & (c->depth - 1)) != 0 || c->depth > 32768)
		return -EINVAL;
	dnp_transport_opt(c->options, "qp", qp, sizeof(qp));
	if (strcmp(qp, "uc") == 0)
		v->qp_type = IBV_QPT_UC;
	else if (strcmp(qp, "rc") == 0)
		v->qp_type = IBV_QPT_RC;
	else
		return -EINVAL;
	if (dnp_transport_opt_u32(c->options, "wait", 1, 1, &w))
		return -EINVAL;
	v->want_wait = w != 0;
	v->frame_max = c->frame_max;
	v->depth = c->depth;
	v->slot = (c->frame_max + 63u) & ~63u;
	return 0;
}

static int vb_open(const struct dnp_transport_conf *c, struct dnp_transport **out)
{
	struct dnp_verbs *v;
	int r;

	if (!c || !out)
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->base.ops = &dnp_transport_verbs;
	v->hfd = -1;
	v->gid_index = -1;
	r = vb_parse(v, c);
	if (r)
		goto err;
	v->repost = calloc(v->depth, sizeof(*v->repost));
	v->swr = calloc(DNP_VERBS_BATCH, sizeof(*v->swr));
	v->ssge = calloc(DNP_VERBS_BATCH, sizeof(*v->ssge));
	v->rwr = calloc(DNP_VERBS_BATCH, sizeof(*v->rwr));
	v->rsge = calloc(DNP_VERBS_BATCH, sizeof(*v->rsge));
	r = -ENOMEM;
	if (!v->repost || !v->swr || !v->ssge || !v->rwr || !v->rsge)
		goto err;
	r = dnp_verbs_pick_device(v, c->options, c->local);
	if (r)
		goto err;
	r = vb_create(v);
	if (r)
		goto err;
	v->nonce = vb_random();
	v->psn = (uint32_t)vb_random() & 0xffffffu;
	r = vb_qp_init(v);
	if (r)
		goto err;
	r = dnp_verbs_hs_socket(v, c->local, c->remote);
	if (r)
		goto err;
	dnp_verbs_hs_send(v);
	v->next_hello = dnp_verbs_now() + DNP_VERBS_HELLO_NS;
	*out = (struct dnp_transport *)(void *)v;
	return 0;
err:
	vb_free(v);
	return r;
}

static void vb_close(struct dnp_transport *t)
{
	if (t)
		vb_free(to_vb(t));
}

static uint32_t vb_mtu(const struct dnp_transport *t)
{
	return to_vb_c(t)->frame_max;
}

static int vb_wait_fd(const struct dnp_transport *t)
{
	const struct dnp_verbs *v = to_vb_c(t);

	return v->chan ? v->chan->fd : -1;
}

static bool vb_up(const struct dnp_transport *t)
{
	const struct dnp_verbs *v = to_vb_c(t);

	return !v->fatal && (v->connected || !v->was_connected);
}

/* The link's counters and QP state for dnpctl stats ("link DIR verbs ..."). */
static size_t vb_counters(const struct dnp_transport *t, char *buf, size_t cap)
{
	const struct dnp_verbs *v = to_vb_c(t);
	const struct dnp_verbs_stats *s = &v->st;
	int n;

	if (cap == 0)
		return 0;
	n = snprintf(buf, cap,
		     "qp %s qpn %u connected %u tx_frames %" PRIu64 " tx_dropped %" PRIu64
		     " tx_completions %" PRIu64 " tx_errors %" PRIu64 " rx_frames %" PRIu64
		     " rx_bad %" PRIu64 " rx_errors %" PRIu64 " connects %" PRIu64
		     " connect_errors %" PRIu64 " resets %" PRIu64 " cq_arms %" PRIu64
		     " cq_events %" PRIu64 " hello_sent %" PRIu64 " hello_bad %" PRIu64,
		     v->qp_type == IBV_QPT_RC ? "rc" : "uc", v->qp ? v->qp->qp_num : 0u,
		     v->connected ? 1u : 0u, s->tx_frames, s->tx_dropped, s->tx_completions,
		     s->tx_errors, s->rx_frames, s->rx_bad, s->rx_errors, s->connects,
		     s->connect_errors, s->resets, s->cq_arms, s->cq_events, s->hello_sent,
		     s->hello_bad);
	if (n < 0) {
		buf[0] = '\0';
		return 0;
	}
	return (size_t)n < cap ? (size_t)n : cap - 1;
}

const struct dnp_transport_ops dnp_transport_verbs = {
	.name = "verbs",
	.open = vb_open,
	.close = vb_close,
	.tx_burst = vb_tx_burst,
	.rx_burst = vb_rx_burst,
	.mtu = vb_mtu,
	.wait_fd = vb_wait_fd,
	.up = vb_up,
	.counters = vb_counters,
};

void dnp_transport_verbs_stats(const struct dnp_transport *t, struct dnp_verbs_stats *out)
{
	*out = to_vb_c(t)->st;
}
