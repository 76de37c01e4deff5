/* SPDX-License-Identifier: MIT */
/*
 * lab.c — the lab's network model: engines on a simulated torus in virtual
 * time (the event heap, the memory the engines use, the links with their
 * flight time, bandwidth, faults and impairments, the run loop)
 * (lab_internal.h lists the parts, lab.h states the contract).
 */
#include "lab_internal.h"

/* ---------------------------------------------------------------- PRNG */

uint64_t lab_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void lab_rng_seed(struct lab_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = lab_splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct lab_rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

static bool rng_chance(struct lab_rng *r, double p)
{
	if (p <= 0.0)
		return false;
	return (double)(rng_next(r) >> 11) * 0x1.0p-53 < p;
}

uint64_t lab_rng_below(struct lab_rng *r, uint64_t n)
{
	return n ? rng_next(r) % n : 0;
}

/* ----------------------------------------------------------- memory */

/* The message of list[0..n) (sorted by the va returned by key) that holds va. */
struct lab_msg *lab_msg_find(struct dnp_lab *lab, const uint32_t *list, uint32_t n, uint64_t va,
			     bool rx)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		struct lab_msg *m = &lab->msgs[list[mid]];
		uint64_t start = rx ? m->rx_va : m->tx_va;

		if (start <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &lab->msgs[list[lo - 1]] : NULL;
}

void lab_verify_fail(struct dnp_lab *lab, const char *what, uint64_t a, uint64_t b)
{
	lab->res.verify_errors++;
	if (lab->conf.verbose && lab->reported < 20) {
		lab->reported++;
		fprintf(stderr, "dnp-lab: t=%" PRIu64 ": %s (%" PRIu64 ", %" PRIu64 ")\n", lab->now,
			what, a, b);
	}
}

static int lab_mem_read(void *ctx, unsigned port, const struct dnp_buf *buf, uint64_t va, void *dst,
			size_t len, const struct dnp_mem_seq *seq)
{
	(void)seq;
	struct lab_node *n = ctx;
	struct lab_msg *m;

	if (va >= LAB_COLL_BASE && n->lab->coll) /* collectives (lab_coll.c) */
		return lab_coll_read(n, va, dst, len);
	if (port != LAB_PORT || va < LAB_TX_BASE || va - LAB_TX_BASE > n->tx_size ||
	    len > n->tx_size - (va - LAB_TX_BASE))
		return -EFAULT;
	if (!len)
		return 0;
	m = lab_msg_find(n->lab, n->out, n->nout, va, false);
	if (!m || va + len > m->tx_va + m->size)
		return -EFAULT; /* straddles two messages: the engine read the wrong range */
	lab_pattern_fill(m->seed, va - m->tx_va, dst, len);
	return 0;
}

static int lab_mem_write(void *ctx, unsigned port, const struct dnp_buf *buf, uint64_t va,
			 const void *src, size_t len)
{
	struct lab_node *n = ctx;
	struct dnp_lab *lab = n->lab;
	struct lab_msg *m;
	uint64_t bad;

	if (va >= LAB_COLL_BASE && lab->coll) /* collectives (lab_coll.c) */
		return lab_coll_write(n, va, src, len);
	if (port != LAB_PORT || va < LAB_RX_BASE || va - LAB_RX_BASE > n->rx_size ||
	    len > n->rx_size - (va - LAB_RX_BASE))
		return -EFAULT;
	if (!len)
		return 0;
	m = lab_msg_find(lab, n->in, n->nin, va, true);
	if (!m || va + len > m->rx_va + m->size) {
		lab_verify_fail(lab, "write across message bounds", n->id, va - LAB_RX_BASE);
		return 0;
	}
	if (++lab->writes == lab->conf.tamper_write && len <= sizeof(lab->scratch)) {
		memcpy(lab->scratch, src, len);
		lab->scratch[len / 2] ^= 0x40;
		src = lab->scratch;
	}
	bad = lab_pattern_check(m->seed, va - m->rx_va, src, len);
	if (bad) {
		m->mismatches++;
		lab->res.byte_mismatches += bad;
		lab_verify_fail(lab, "byte mismatch (msg, bytes)", (uint64_t)(m - lab->msgs), bad);
	}
	m->written += len;
	return 0;
}

static const struct dnp_mem_ops lab_mem_ops = {
	.read = lab_mem_read,
	.write = lab_mem_write,
};

/* -------------------------------------------------------------- heap */

static bool ev_before(const struct lab_ev *a, const struct lab_ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int heap_push(struct dnp_lab *lab, struct lab_ev ev)
{
	size_t i;

	if (lab->heap_len == lab->heap_cap) {
		size_t cap = lab->heap_cap * 2;
		struct lab_ev *h = realloc(lab->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		lab->heap = h;
		lab->heap_cap = cap;
	}
	ev.seq = lab->ev_seq++;
	i = lab->heap_len++;
	while (i) {
		size_t p = (i - 1) / 2;

		if (!ev_before(&ev, &lab->heap[p]))
			break;
		lab->heap[i] = lab->heap[p];
		i = p;
	}
	lab->heap[i] = ev;
	return 0;
}

static struct lab_ev heap_pop(struct dnp_lab *lab)
{
	struct lab_ev top = lab->heap[0];
	struct lab_ev last = lab->heap[--lab->heap_len];
	size_t n = lab->heap_len, i = 0;

	while (n) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && ev_before(&lab->heap[c + 1], &lab->heap[c]))
			c++;
		if (!ev_before(&lab->heap[c], &last))
			break;
		lab->heap[i] = lab->heap[c];
		i = c;
	}
	if (n)
		lab->heap[i] = last;
	return top;
}

/* ------------------------------------------------------------- slots */

static int slot_get(struct dnp_lab *lab, uint32_t *out)
{
	if (!lab->nfree) {
		uint32_t n = lab->nslots ? lab->nslots * 2 : 256;
		struct lab_slot *s = realloc(lab->slots, n * sizeof(*s));
		uint32_t *f;

		if (!s)
			return -ENOMEM;
		lab->slots = s;
		f = realloc(lab->free_slots, n * sizeof(*f));
		if (!f)
			return -ENOMEM;
		lab->free_slots = f;
		for (uint32_t i = lab->nslots; i < n; i++) {
			s[i].data = malloc(DNP_MAX_FRAME);
			if (!s[i].data) {
				lab->nslots = i;
				return -ENOMEM;
			}
			f[lab->nfree++] = n - 1 - (i - lab->nslots);
		}
		lab->nslots = n;
	}
	*out = lab->free_slots[--lab->nfree];
	return 0;
}

static void slot_put(struct dnp_lab *lab, uint32_t i)
{
	lab->free_slots[lab->nfree++] = i;
}

static uint64_t slot_len(uint32_t size)
{
	/* every message owns at least 16 bytes of address space, so vas are unique */
	return size ? ((uint64_t)size + 15u) & ~15ull : 16u;
}

/* Fills in derived timers that were left 0, in lab time units. */
static void fit_timers(struct dnp_lab_conf *c, uint64_t max_ser)
{
	uint64_t rtt = 2 * (c->latency + max_ser) + c->link.credit_period;
	/* The engine starts a packet's retransmit timer when credit admits it to
	 * the link, so the timer also covers the wait behind up to t_red words
	 * per VC already queued on that link. */
	uint64_t queue = ((uint64_t)c->link.t_red * c->link.nvc + c->bw - 1) / c->bw;

	if (!c->link.rto)
		c->link.rto = 2 * (rtt + queue) + 16;
	if (!c->link.credit_timeout)
		c->link.credit_timeout = 8 * (c->link.credit_period + max_ser + c->latency) + 64;
	if (!c->link.init_timeout)
		c->link.init_timeout = 2 * c->link.credit_timeout;
	if (!c->stall_limit)
		c->stall_limit = 4 * ((uint64_t)(c->link.max_retries + 2) * c->link.rto +
				      c->link.credit_timeout) +
				 10000;
	if (!c->nfaults)
		return;
	/*
	 * Failures: links must be able to come back (probe a BROKEN link), a
	 * command whose completion report was lost with a cable must end by
	 * its deadline, and a failed command is resubmitted once the failure
	 * had time to be detected and told to every node.
	 */
	if (!c->link.reset_period)
		c->link.reset_period = c->link.credit_timeout / 4 + 1;
	if (!c->cmd_timeout)
		c->cmd_timeout = c->stall_limit / 2;
	if (!c->retry_delay)
		c->retry_delay = c->link.credit_timeout;
}

static int build_nodes(struct dnp_lab *lab)
{
	const struct dnp_lab_conf *c = &lab->conf;
	uint32_t *in_count = calloc(lab->n, sizeof(*in_count));
	uint32_t *out_count = calloc(lab->n, sizeof(*out_count));
	int ret = -ENOMEM;

	if (!in_count || !out_count)
		goto out;
	for (uint32_t i = 0; i < lab->nmsgs; i++) {
		out_count[lab->msgs[i].src]++;
		in_count[lab->msgs[i].dst]++;
	}
	for (uint32_t id = 0; id < lab->n; id++) {
		struct lab_node *nd = &lab->nodes[id];

		nd->lab = lab;
		nd->id = id;
		nd->c = dnp_torus_coord(&c->torus, id);
		nd->out = malloc((out_count[id] + 1) * sizeof(uint32_t));
		nd->in = malloc((in_count[id] + 1) * sizeof(uint32_t));
		nd->retry = malloc((out_count[id] + 1) * sizeof(uint32_t));
		if (!nd->out || !nd->in || !nd->retry)
			goto out;
		nd->next_wake = UINT64_MAX;
		nd->pp_due = UINT32_MAX;
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			struct lab_link *l = &nd->link[d];
			struct dnp_coord pc =
				dnp_torus_neighbour(&c->torus, nd->c, (enum dnp_dir)d);

			l->present = c->torus.dim[d / 2] > 1;
			l->peer = dnp_torus_id(&c->torus, pc);
			l->silenced = c->silence_node == (int)id && c->silence_dir == d;
			l->info.present = l->present;
			l->info.broken_at = UINT64_MAX;
			lab_rng_seed(&l->rng, c->seed ^ (0xd1b54a32d192ed03ull * (id * 8 + d + 1)));
		}
	}
	/* sources in submission order, targets in order of arrival in the plan */
	for (uint32_t i = 0; i < lab->nmsgs; i++) {
		struct lab_msg *m = &lab->msgs[i];
		struct lab_node *s = &lab->nodes[m->src], *d = &lab->nodes[m->dst];

		m->tx_va = LAB_TX_BASE + s->tx_size;
		s->tx_size += slot_len(m->size);
		s->out[s->nout++] = i;
		m->rx_va = LAB_RX_BASE + d->rx_size;
		d->rx_size += slot_len(m->size);
		d->in[d->nin++] = i;
		if (m->pp && (i == 0 || !lab->msgs[i - 1].pp))
			s->pp_due = i; /* the first of the ping-pong flow */
	}
	ret = 0;
out:
	free(in_count);
	free(out_count);
	return ret;
}

/* A new engine for node id (at start, or revived as a restarted daemon). */
static int build_engine(struct dnp_lab *lab, uint32_t id)
{
	const struct dnp_lab_conf *c = &lab->conf;
	{
		struct lab_node *nd = &lab->nodes[id];
		struct dnp_engine_conf ec;
		int ret;

		dnp_engine_conf_default(&ec);
		ec.torus = c->torus;
		ec.self = nd->c;
		ec.link = c->link;
		ec.vc_mode = c->vc_mode;
		ec.routing = c->routing;
		ec.congestion = c->congestion;
		ec.cg_threshold = c->cg_threshold;
		ec.cg_window = c->cg_window;
		ec.arbitration = c->arbitration;
		ec.arb_low_payload = c->low_payload;
		ec.arb_top_reserve = c->top_reserve;
		ec.rx_bufs = c->rx_bufs;
		ec.max_buffers = 16;
		ec.max_ports = 1;
		ec.max_commands = c->max_commands;
		ec.event_queue = c->event_queue;
		if (ec.max_sends > 4)
			ec.max_sends = 4;
		ec.cmd_timeout = c->cmd_timeout;
		/* collectives (lab_coll.c): one group, of the run's size */
		ec.coll_groups = c->coll_op ? 1 : 0;
		ec.coll_max_bytes = c->coll_size ? c->coll_size : 8;
		/* reproducible keys: the secret follows the lab's seed and the node */
		ec.key_secret[0] = c->seed * 0x9e3779b97f4a7c15ull + id + 1;
		ec.key_secret[1] = ~c->seed ^ ((uint64_t)id << 32);
		ec.mem = &lab_mem_ops;
		ec.mem_ctx = nd;
		/* a revived node is a new incarnation: its links say so in RESET frames */
		ec.link.nonce =
			nd->incarnation ? (uint32_t)(id * 131u + nd->incarnation * 7919u + 2u) : 0;
		ret = dnp_engine_create(&ec, lab->now, &nd->e);
		if (ret)
			return ret;
		ret = dnp_engine_port_open(nd->e, LAB_PORT);
		if (ret)
			return ret;
		ret = dnp_engine_register(nd->e, LAB_PORT, LAB_RX_BASE,
					  nd->rx_size ? nd->rx_size : 16, DNP_BUF_PUT_TARGET, 0,
					  &nd->rx_key);
		if (ret)
			return ret;
	}
	return 0;
}

static int build_engines(struct dnp_lab *lab)
{
	for (uint32_t id = 0; id < lab->n; id++) {
		int ret = build_engine(lab, id);

		if (ret)
			return ret;
	}
	return 0;
}

int dnp_lab_create(const struct dnp_lab_conf *conf, struct dnp_lab **out)
{
	struct dnp_lab *lab;
	int ret = -ENOMEM;

	if (!conf->bw || !conf->nsizes || conf->nsizes > DNP_LAB_MAX_SIZES || !conf->count ||
	    conf->loss < 0 || conf->loss > 1 || conf->corrupt < 0 || conf->corrupt > 1 ||
	    conf->dup < 0 || conf->dup > 1 || conf->reorder < 0 || conf->reorder > 1 ||
	    conf->silence_dir >= DNP_NDIRS)
		return -EINVAL;
	for (int i = 0; i < 3; i++) {
		if (!conf->torus.dim[i] || conf->torus.dim[i] > DNP_TORUS_MAX_DIM)
			return -EINVAL;
	}
	if (conf->nfaults > DNP_LAB_MAX_FAULTS)
		return -EINVAL;
	for (uint32_t i = 0; conf->plan && i < conf->nplan; i++) {
		const struct dnp_lab_plan_msg *p = &conf->plan[i];

		if (p->src >= dnp_torus_size(&conf->torus) ||
		    p->dst >= dnp_torus_size(&conf->torus) || p->src == p->dst ||
		    p->tc > DNP_TC_MAX)
			return -EINVAL;
	}
	for (unsigned i = 0; i < conf->nfaults; i++)
		if (conf->faults[i].node >= dnp_torus_size(&conf->torus) ||
		    conf->faults[i].dir >= DNP_NDIRS || conf->faults[i].kind > DNP_LAB_REVIVE)
			return -EINVAL;
	lab = calloc(1, sizeof(*lab));
	if (!lab)
		return -ENOMEM;
	lab->conf = *conf;
	lab->n = dnp_torus_size(&conf->torus);
	if ((conf->pattern == DNP_LAB_HOTSPOT && conf->hotspot >= lab->n) ||
	    conf->tc > DNP_TC_MAX || conf->pp_tc > DNP_TC_MAX ||
	    (conf->pp_count && (conf->pp_a >= lab->n || conf->pp_b >= lab->n ||
				conf->pp_a == conf->pp_b || !conf->pp_size)) ||
	    (conf->app_window && conf->nfaults) || conf->a2a_order > 1) {
		free(lab);
		return -EINVAL;
	}
	lab->max_ser = LAB_MAX_FRAME_SER(conf->bw);
	fit_timers(&lab->conf, lab->max_ser);
	lab->res.lat_min = UINT64_MAX;
	lab_plan(lab);
	lab->msgs = calloc(lab->nmsgs + 1, sizeof(*lab->msgs));
	lab->nodes = calloc(lab->n, sizeof(*lab->nodes));
	lab->touched = calloc(lab->n, sizeof(*lab->touched));
	lab->heap_cap = 1024;
	lab->heap = malloc(lab->heap_cap * sizeof(*lab->heap));
	if (conf->timeline)
		lab->timeline = calloc(DNP_LAB_TIMELINE_MAX, sizeof(*lab->timeline));
	if (!lab->msgs || !lab->nodes || !lab->touched || !lab->heap ||
	    (conf->timeline && !lab->timeline))
		goto fail;
	lab_plan(lab);
	ret = build_nodes(lab);
	if (ret)
		goto fail;
	ret = build_engines(lab);
	if (ret)
		goto fail;
	lab->open_msgs = lab->nmsgs;
	lab->res.messages = lab->nmsgs;
	ret = conf->coll_op ? lab_coll_create(lab) : 0; /* counts into open_msgs */
	if (ret)
		goto fail;
	for (uint32_t i = 0; i < lab->nmsgs; i++)
		lab->res.bytes += lab->msgs[i].size;
	*out = lab;
	return 0;
fail:
	dnp_lab_destroy(lab);
	return ret;
}

void dnp_lab_destroy(struct dnp_lab *lab)
{
	if (!lab)
		return;
	if (lab->nodes) {
		for (uint32_t i = 0; i < lab->n; i++) {
			if (lab->nodes[i].e)
				dnp_engine_destroy(lab->nodes[i].e);
			free(lab->nodes[i].out);
			free(lab->nodes[i].in);
			free(lab->nodes[i].retry);
		}
	}
	for (uint32_t i = 0; i < lab->nslots; i++)
		free(lab->slots[i].data);
	free(lab->slots);
	free(lab->free_slots);
	free(lab->nodes);
	free(lab->msgs);
	free(lab->touched);
	free(lab->heap);
	free(lab->timeline);
	lab_coll_destroy(lab);
	free(lab);
}

unsigned dnp_lab_timeline(const struct dnp_lab *lab, const uint64_t **out)
{
	*out = lab->timeline;
	return lab->ntimeline;
}

static void excuse(struct dnp_lab *lab, uint32_t node)
{
	for (uint32_t i = 0; i < lab->nmsgs; i++) {
		struct lab_msg *m = &lab->msgs[i];

		if ((m->src != node && m->dst != node) || m->resolved || m->excused)
			continue;
		m->excused = 1;
		m->resolved = 1;
		lab->open_msgs--;
		lab->res.excused++;
	}
}

/* Applies scheduled failure i (struct dnp_lab_fault). */
static int fault_apply(struct dnp_lab *lab, const struct dnp_lab_fault *f)
{
	struct lab_node *nd = &lab->nodes[f->node];
	int ret;

	lab->res.faults_applied++;
	lab->faults_done++;
	lab->last_progress = lab->now; /* a failure is not a deadlock of the traffic */
	switch (f->kind) {
	case DNP_LAB_CUT:
	case DNP_LAB_MEND: {
		struct lab_link *l = &nd->link[f->dir];

		if (!l->present)
			return 0;
		l->cut = f->kind == DNP_LAB_CUT;
		lab->nodes[l->peer].link[dnp_torus_opposite((enum dnp_dir)f->dir)].cut = l->cut;
		lab_touch(lab, f->node);
		lab_touch(lab, l->peer);
		return 0;
	}
	case DNP_LAB_KILL:
		if (nd->dead)
			return 0;
		excuse(lab, f->node);
		dnp_engine_destroy(nd->e);
		nd->e = NULL;
		nd->dead = true;
		nd->next_wake = UINT64_MAX;
		return 0;
	default: /* DNP_LAB_REVIVE */
		if (!nd->dead)
			return 0;
		nd->incarnation++;
		ret = build_engine(lab, f->node);
		if (ret)
			return ret;
		nd->dead = false;
		nd->next_submit = nd->nout; /* its messages were excused */
		nd->retry_head = nd->retry_tail;
		nd->delivered_seen = 0;
		nd->bytes_seen = 0;
		nd->routes_seen = 0;
		for (unsigned d = 0; d < DNP_NDIRS; d++)
			nd->link[d].busy_until = lab->now;
		lab_touch(lab, f->node);
		return 0;
	}
}

static bool frame_is_seq(const uint8_t *data, uint32_t len)
{
	struct dnp_pkt_hdr h;
	const uint8_t *payload;

	if (dnp_pkt_decode(data, len, &h, &payload))
		return false;
	return h.lflags & DNP_LINK_F_SEQ;
}

static int transmit(struct dnp_lab *lab, struct lab_node *nd, unsigned dir,
		    const struct dnp_frame *f)
{
	const struct dnp_lab_conf *c = &lab->conf;
	struct lab_link *l = &nd->link[dir];
	uint64_t ser = ((uint64_t)f->len + (uint64_t)DNP_WORD_BYTES * c->bw - 1) /
		       ((uint64_t)DNP_WORD_BYTES * c->bw);
	unsigned copies = 1, intact = 0;
	bool seq = false, checked = false;

	if (!ser)
		ser = 1;
	l->busy_until = lab->now + ser;
	l->info.busy += ser;
	l->info.frames++;
	l->info.bytes += f->len;
	if (l->silenced && lab->now >= c->silence_at) {
		l->info.silenced++;
		lab->res.silenced++;
		return 0;
	}
	if (l->cut || lab->nodes[l->peer].dead) {
		lab->res.cut_frames++;
		return 0;
	}
	if (rng_chance(&l->rng, c->loss)) {
		l->info.lost++;
		lab->res.lost++;
		if (frame_is_seq(f->data, f->len)) {
			lab->res.lost_seq++;
			lab->res.undelivered_seq++;
		}
		return 0;
	}
	if (rng_chance(&l->rng, c->dup)) {
		copies = 2;
		l->info.duplicated++;
		lab->res.duplicated++;
	}
	for (unsigned k = 0; k < copies; k++) {
		struct lab_ev ev = { 0 };
		struct lab_slot *s;
		uint32_t si;
		uint64_t extra = 0;
		int ret = slot_get(lab, &si);

		if (ret)
			return ret;
		s = &lab->slots[si];
		memcpy(s->data, f->data, f->len);
		s->len = f->len;
		if (rng_chance(&l->rng, c->corrupt)) {
			uint64_t bit = lab_rng_below(&l->rng, (uint64_t)f->len * 8);

			if (!checked) {
				seq = frame_is_seq(f->data, f->len);
				checked = true;
			}
			s->data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			l->info.corrupted++;
			lab->res.corrupted++;
			lab->res.corrupted_seq += seq;
		} else {
			intact++;
		}
		if (rng_chance(&l->rng, c->reorder)) {
			/* held back long enough for the next frames to overtake it */
			extra = 1 + lab_rng_below(&l->rng, 4 * ser + c->latency + 1);
			l->info.reordered++;
			lab->res.reordered++;
		}
		ev.t = lab->now + ser + c->latency + extra + k * ser;
		ev.kind = LAB_EV_ARRIVE;
		ev.node = l->peer;
		ev.dir = (uint8_t)dnp_torus_opposite((enum dnp_dir)dir);
		ev.slot = si;
		ret = heap_push(lab, ev);
		if (ret)
			return ret;
	}
	if (copies == 2 || intact == 0) {
		if (!checked)
			seq = frame_is_seq(f->data, f->len);
		if (seq && copies == 2 && intact == 2)
			lab->res.duplicated_seq++;
		if (seq && intact == 0)
			lab->res.undelivered_seq++;
	}
	return 0;
}

int lab_schedule_wake(struct dnp_lab *lab, struct lab_node *nd, uint64_t t)
{
	struct lab_ev ev = { 0 };

	if (t <= lab->now)
		t = lab->now + 1;
	if (t >= nd->next_wake)
		return 0;
	nd->next_wake = t;
	ev.t = t;
	ev.kind = LAB_EV_WAKE;
	ev.node = nd->id;
	return heap_push(lab, ev);
}

static int process(struct dnp_lab *lab, struct lab_node *nd)
{
	uint64_t now = lab->now, wake;
	const struct dnp_engine_stats *st;
	bool work;
	int ret;

	if (nd->dead)
		return 0;
	for (int iter = 0; iter < 8; iter++) {
		bool prog = false;

		dnp_engine_run(nd->e, now);
		prog |= lab_poll_events(lab, nd);
		if (lab_submit(lab, nd)) {
			prog = true;
			dnp_engine_run(nd->e, now);
		}
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			struct dnp_frame f;

			if (!nd->link[d].present || nd->link[d].busy_until > now)
				continue;
			if (dnp_engine_tx_burst(nd->e, d, &f, 1, now) == 1) {
				ret = transmit(lab, nd, d, &f);
				if (ret)
					return ret;
				prog = true;
			}
		}
		if (!prog || !dnp_engine_has_work(nd->e))
			break;
	}
	st = dnp_engine_stats(nd->e);
	if (st->pkts_delivered != nd->delivered_seen) {
		nd->delivered_seen = st->pkts_delivered;
		lab->last_progress = now;
	}
	if (st->bytes_delivered != nd->bytes_seen) {
		uint64_t w = lab->timeline ? now / lab->conf.timeline : 0;

		if (lab->timeline && w < DNP_LAB_TIMELINE_MAX) {
			lab->timeline[w] += st->bytes_delivered - nd->bytes_seen;
			if (w + 1 > lab->ntimeline)
				lab->ntimeline = (unsigned)w + 1;
		}
		nd->bytes_seen = st->bytes_delivered;
	}
	if (st->route_changes != nd->routes_seen) {
		nd->routes_seen = st->route_changes;
		lab->res.last_route_change = now;
	}
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		struct lab_link *l = &nd->link[d];

		if (l->present && l->info.broken_at == UINT64_MAX &&
		    dnp_engine_link_state(nd->e, d) == DNP_LINK_BROKEN)
			l->info.broken_at = now;
	}
	wake = dnp_engine_next_deadline(nd->e);
	work = dnp_engine_has_work(nd->e);
	if (work) {
		bool busy = false;

		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			struct lab_link *l = &nd->link[d];

			if (l->present && l->busy_until > now) {
				busy = true;
				if (l->busy_until < wake)
					wake = l->busy_until;
			}
		}
		if (!busy)
			wake = now + 1;
	}
	if (wake != UINT64_MAX)
		return lab_schedule_wake(lab, nd, wake);
	return 0;
}

/*
 * After failures: every link that can be UP (its cable whole, both ends
 * alive) is UP, and no live engine has work left (routes told).
 */
static bool settled(const struct dnp_lab *lab)
{
	for (uint32_t i = 0; i < lab->n; i++) {
		const struct lab_node *nd = &lab->nodes[i];

		if (nd->dead)
			continue;
		if (dnp_engine_has_work(nd->e))
			return false;
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			const struct lab_link *l = &nd->link[d];

			if (l->present && !l->cut && !lab->nodes[l->peer].dead &&
			    dnp_engine_link_state(nd->e, d) != DNP_LINK_UP)
				return false;
		}
	}
	return true;
}

uint64_t lab_pending_total(const struct dnp_lab *lab)
{
	uint64_t p = 0;

	for (uint32_t i = 0; i < lab->n; i++)
		if (lab->nodes[i].e)
			p += dnp_engine_pending(lab->nodes[i].e);
	return p;
}

int dnp_lab_run(struct dnp_lab *lab)
{
	const struct dnp_lab_conf *c = &lab->conf;
	struct dnp_lab_result *r = &lab->res;
	int ret = 0;

	lab->now = 0;
	lab->last_progress = 0;
	for (uint32_t i = 0; i < lab->n; i++)
		lab_touch(lab, i);
	for (unsigned i = 0; i < c->nfaults; i++) {
		struct lab_ev ev = { .t = c->faults[i].at,
				     .kind = LAB_EV_FAULT,
				     .node = c->faults[i].node,
				     .slot = i };

		ret = heap_push(lab, ev);
		if (ret)
			goto out;
	}
	for (;;) {
		for (uint32_t i = 0; i < lab->ntouched; i++) {
			struct lab_node *nd = &lab->nodes[lab->touched[i]];

			nd->touched = false;
			ret = process(lab, nd);
			if (ret)
				goto out;
		}
		lab->ntouched = 0;
		/* with failures scheduled: also until all are applied and the torus healed */
		if (!lab->open_msgs && lab_pending_total(lab) == 0 &&
		    (!c->nfaults || (lab->faults_done == c->nfaults && settled(lab))))
			break;
		if (lab->now - lab->last_progress > c->stall_limit) {
			/* traffic done, the torus not healed: said by the link states */
			if (!lab->open_msgs && c->nfaults && lab->faults_done == c->nfaults)
				break;
			/* Everything resolved but packets stuck (e.g. behind a broken
			 * link): not a deadlock of the traffic, reported as pending. */
			if (!lab->open_msgs && c->allow_errors)
				break;
			r->status = -EDEADLK;
			break;
		}
		if (!lab->heap_len) {
			r->status = -EDEADLK; /* nothing will ever happen again */
			break;
		}
		if (lab->heap[0].t > c->max_time) {
			lab->now = c->max_time;
			r->status = -ETIME;
			break;
		}
		lab->now = lab->heap[0].t;
		while (lab->heap_len && lab->heap[0].t == lab->now) {
			struct lab_ev ev = heap_pop(lab);
			struct lab_node *nd = &lab->nodes[ev.node];

			r->events_processed++;
			if (ev.kind == LAB_EV_FAULT) {
				ret = fault_apply(lab, &c->faults[ev.slot]);
				if (ret)
					goto out;
			} else if (ev.kind == LAB_EV_ARRIVE && nd->dead) {
				r->cut_frames++;
				slot_put(lab, ev.slot);
			} else if (ev.kind == LAB_EV_ARRIVE) {
				struct lab_slot *s = &lab->slots[ev.slot];
				int rx = dnp_engine_rx(nd->e, ev.dir, s->data, s->len, lab->now);

				if (rx == -EILSEQ)
					r->rx_rejected_crc++;
				else if (rx < 0)
					r->rx_rejected_other++;
				slot_put(lab, ev.slot);
			} else if (nd->next_wake == ev.t) {
				nd->next_wake = UINT64_MAX;
			}
			lab_touch(lab, ev.node);
		}
	}
out:
	if (ret)
		r->status = ret;
	if (lab->coll)
		lab_coll_finish(lab);
	lab_finish(lab);
	return r->status;
}
