/* SPDX-License-Identifier: MIT */
/*
 * lab_traffic.c — the lab's traffic: the plan of messages of a pattern,
 * their bytes, submitting them and handling completions and arrivals
 * (lab_internal.h lists the parts, lab.h states the contract).
 */
#include "lab_internal.h"

/* ------------------------------------------------------ message bytes */

/*
 * The 8-byte word w of a message: stateless, so any range can be generated
 * or checked on its own. One multiply per word keeps 64 x 63 MiB cheap; a
 * byte written at the wrong offset or into the wrong message still differs.
 */
static inline uint64_t pattern_word(uint64_t seed, uint64_t w)
{
	uint64_t z = (seed ^ (w * 0xd1b54a32d192ed03ull)) * 0x9e3779b97f4a7c15ull;

	return z ^ (z >> 29);
}

static inline uint8_t pattern_byte(uint64_t seed, uint64_t off)
{
	return (uint8_t)(pattern_word(seed, off / 8) >> (8 * (off % 8)));
}

/* Little-endian host: byte i of a word is bits 8i..8i+7, as pattern_byte says. */
void lab_pattern_fill(uint64_t seed, uint64_t off, uint8_t *dst, size_t len)
{
	for (; len && off % 8; len--)
		*dst++ = pattern_byte(seed, off++);
	for (uint64_t w = off / 8; len >= 8; len -= 8, dst += 8, off += 8) {
		uint64_t v = pattern_word(seed, w++);

		memcpy(dst, &v, 8);
	}
	for (; len; len--)
		*dst++ = pattern_byte(seed, off++);
}

/* Number of bytes of src[0..len) that differ from the pattern at off. */
uint64_t lab_pattern_check(uint64_t seed, uint64_t off, const uint8_t *src, size_t len)
{
	uint64_t bad = 0;

	for (; len && off % 8; len--)
		bad += *src++ != pattern_byte(seed, off++);
	for (uint64_t w = off / 8; len >= 8; len -= 8, src += 8, off += 8) {
		uint64_t v, x;

		memcpy(&v, src, 8);
		x = v ^ pattern_word(seed, w++);
		if (x) {
			for (int i = 0; i < 8; i++)
				bad += ((x >> (8 * i)) & 0xff) != 0;
		}
	}
	for (; len; len--)
		bad += *src++ != pattern_byte(seed, off++);
	return bad;
}

static void plan_add(struct dnp_lab *lab, uint32_t src, uint32_t dst, uint32_t size)
{
	if (lab->msgs) {
		struct lab_msg *m = &lab->msgs[lab->nmsgs];
		uint64_t s = lab->conf.seed ^ ((uint64_t)lab->nmsgs << 20);

		uint8_t pp = m->pp;

		memset(m, 0, sizeof(*m));
		m->pp = pp;
		m->src = src;
		m->dst = dst;
		m->size = size;
		m->status = 1;
		m->seed = lab_splitmix64(&s);
		m->t_submit = UINT64_MAX;
		m->t_done = UINT64_MAX;
		m->t_rx = UINT64_MAX;
		if (lab->conf.plan) {
			m->release = lab->conf.plan[lab->nmsgs].release;
			m->tc = lab->conf.plan[lab->nmsgs].tc;
		}
	}
	lab->nmsgs++;
}

/* Generates the traffic: called twice, to count and then to fill lab->msgs. */
static void plan_pattern(struct dnp_lab *lab);

/* The ping-pong flow (conf.pp_count), after the rest of the traffic. */
static void plan_pingpong(struct dnp_lab *lab)
{
	const struct dnp_lab_conf *c = &lab->conf;

	for (uint32_t k = 0; k < c->pp_count; k++) {
		if (lab->msgs)
			lab->msgs[lab->nmsgs].pp = 1; /* (plan_add keeps it) */
		plan_add(lab, k % 2 ? c->pp_b : c->pp_a, k % 2 ? c->pp_a : c->pp_b, c->pp_size);
	}
}

void lab_plan(struct dnp_lab *lab)
{
	const struct dnp_lab_conf *c = &lab->conf;

	lab->nmsgs = 0;
	if (c->coll_op) /* collectives instead (lab_coll.c) */
		return;
	if (c->plan) {
		for (uint32_t i = 0; i < c->nplan; i++)
			plan_add(lab, c->plan[i].src, c->plan[i].dst, c->plan[i].size);
	} else {
		plan_pattern(lab);
	}
	plan_pingpong(lab);
}

/* All-to-all by destination (conf.a2a_order), as dnp_alltoall submits it. */
static void plan_by_destination(struct dnp_lab *lab)
{
	const struct dnp_lab_conf *c = &lab->conf;

	for (uint32_t src = 0; src < lab->n; src++)
		for (uint32_t dst = 0; dst < lab->n; dst++)
			for (unsigned k = 0; dst != src && k < c->count; k++)
				for (unsigned si = 0; si < c->nsizes; si++)
					plan_add(lab, src, dst, c->sizes[si]);
}

static void plan_pattern(struct dnp_lab *lab)
{
	const struct dnp_lab_conf *c = &lab->conf;
	uint32_t n = lab->n;

	if (c->pattern == DNP_LAB_ALL_TO_ALL && c->a2a_order) {
		plan_by_destination(lab);
		return;
	}
	for (uint32_t src = 0; src < n; src++) {
		struct lab_rng rng;
		struct dnp_coord sc = dnp_torus_coord(&c->torus, src);

		lab_rng_seed(&rng, c->seed * 0x100000001b3ull + src + 0x5eed);
		for (unsigned k = 0; k < c->count; k++) {
			for (unsigned si = 0; si < c->nsizes; si++) {
				uint32_t size = c->sizes[si];

				switch (c->pattern) {
				case DNP_LAB_ALL_TO_ALL:
					/* rotate the starting peer so that links share the load */
					for (uint32_t j = 1; j < n; j++)
						plan_add(lab, src, (src + j) % n, size);
					break;
				case DNP_LAB_NEIGHBOUR: {
					uint32_t seen[DNP_NDIRS];
					unsigned ns = 0;

					for (unsigned d = 0; d < DNP_NDIRS; d++) {
						struct dnp_coord nc = dnp_torus_neighbour(
							&c->torus, sc, (enum dnp_dir)d);
						uint32_t id = dnp_torus_id(&c->torus, nc);
						bool dup = id == src;

						for (unsigned i = 0; i < ns; i++)
							dup |= seen[i] == id;
						if (dup)
							continue;
						seen[ns++] = id;
						plan_add(lab, src, id, size);
					}
					break;
				}
				case DNP_LAB_HOTSPOT:
					if (src != c->hotspot)
						plan_add(lab, src, c->hotspot, size);
					break;
				case DNP_LAB_RANDOM:
					if (n > 1) {
						uint32_t d = (uint32_t)lab_rng_below(&rng, n - 1);

						plan_add(lab, src, d >= src ? d + 1 : d, size);
					}
					break;
				case DNP_LAB_SHIFT: {
					struct dnp_coord dc;
					int v[3] = { sc.x, sc.y, sc.z };

					for (int i = 0; i < 3; i++) {
						int dim = c->torus.dim[i];

						v[i] = ((v[i] + c->shift[i]) % dim + dim) % dim;
					}
					dc.x = (uint8_t)v[0];
					dc.y = (uint8_t)v[1];
					dc.z = (uint8_t)v[2];
					if (!dnp_coord_eq(dc, sc))
						plan_add(lab, src, dnp_torus_id(&c->torus, dc),
							 size);
					break;
				}
				}
			}
		}
	}
}

/* ------------------------------------------------------------ running */

void lab_touch(struct dnp_lab *lab, uint32_t id)
{
	struct lab_node *nd = &lab->nodes[id];

	if (!nd->touched) {
		nd->touched = true;
		lab->touched[lab->ntouched++] = id;
	}
}

static void msg_resolve(struct dnp_lab *lab, struct lab_msg *m)
{
	if (!m->resolved && m->ncompl == 1 && (m->status != 0 || m->nrx >= 1)) {
		m->resolved = 1;
		lab->open_msgs--;
	}
}

/* Errors a failure in the torus causes, which an application retries. */
static bool retryable(int status)
{
	return status == -ENOLINK || status == -EHOSTUNREACH || status == -ETIMEDOUT ||
	       status == -ECONNRESET;
}

/* Queues m (failed, both endpoints alive) for a new submission by nd. */
static void retry_later(struct dnp_lab *lab, struct lab_node *nd, struct lab_msg *m)
{
	m->ncompl = 0;
	m->status = 1;
	m->attempts++;
	m->retry_at = lab->now + lab->conf.retry_delay;
	nd->retry[nd->retry_tail++ % (nd->nout + 1)] = (uint32_t)(m - lab->msgs);
	lab->res.retries++;
	(void)lab_schedule_wake(lab, nd, m->retry_at);
}

static void on_completion(struct dnp_lab *lab, struct lab_node *nd, const struct dnp_event *ev)
{
	struct lab_msg *m;

	if (!ev->cookie || ev->cookie > lab->nmsgs) {
		lab->res.unknown_events++;
		if (!(lab->conf.allow_errors && ev->type == DNP_EV_ERROR))
			lab_verify_fail(lab, "completion with unknown cookie", nd->id, ev->cookie);
		return;
	}
	m = &lab->msgs[ev->cookie - 1];
	if (m->src != nd->id || ev->op != DNP_OP_PUT) {
		lab_verify_fail(lab, "completion on the wrong node or op", nd->id, ev->cookie - 1);
		return;
	}
	if (m->ncompl++) {
		lab->res.double_completions++;
		lab_verify_fail(lab, "second completion", nd->id, ev->cookie - 1);
		return;
	}
	lab->last_progress = lab->now;
	m->t_done = lab->now;
	if (!m->pp && nd->app_out)
		nd->app_out--; /* a place in conf.app_window */
	if (ev->type == DNP_EV_TX_DONE && ev->status == 0) {
		m->status = 0;
		lab->res.completions_ok++;
		/* TX_DONE means the target wrote every byte (an earlier attempt may
		 * have written some twice) */
		if (!m->excused && (m->attempts ? m->written < m->size : m->written != m->size))
			lab_verify_fail(lab, "TX_DONE before every byte was written",
					ev->cookie - 1, m->written);
	} else {
		m->status = ev->status ? ev->status : -EIO;
		if (!m->excused && lab->conf.nfaults && retryable(m->status)) {
			retry_later(lab, nd, m);
			return;
		}
		lab->res.completions_err++;
		if (m->status == -ENOLINK)
			lab->res.err_nolink++;
		else
			lab->res.err_other++;
		if (!lab->conf.allow_errors && !m->excused)
			lab_verify_fail(lab, "command failed (msg, -status)", ev->cookie - 1,
					(uint64_t)-m->status);
	}
	msg_resolve(lab, m);
}

static void on_rx(struct dnp_lab *lab, struct lab_node *nd, const struct dnp_event *ev)
{
	struct lab_msg *m = lab_msg_find(lab, nd->in, nd->nin, ev->va, true);
	struct lab_node *src;

	if (!m || m->rx_va != ev->va) {
		lab->res.unknown_events++;
		lab_verify_fail(lab, "RX event for no expected message", nd->id, ev->va);
		return;
	}
	src = &lab->nodes[m->src];
	if (m->nrx++) {
		/* a resubmitted message may arrive twice; otherwise exactly once */
		if (!m->attempts && !m->excused)
			lab_verify_fail(lab, "second RX event", (uint64_t)(m - lab->msgs), m->nrx);
		return;
	}
	lab->res.rx_events++;
	lab->last_progress = lab->now;
	m->t_rx = lab->now;
	if (m->pp && m + 1 < lab->msgs + lab->nmsgs && m[1].pp)
		nd->pp_due = (uint32_t)(m + 1 - lab->msgs); /* the answer goes now */
	if (ev->len != m->size || ev->peer_x != src->c.x || ev->peer_y != src->c.y ||
	    ev->peer_z != src->c.z || ev->op != DNP_OP_PUT)
		lab_verify_fail(lab, "RX event fields (msg, len)", (uint64_t)(m - lab->msgs),
				ev->len);
	unsigned dist = dnp_torus_distance(&lab->conf.torus, src->c, nd->c);
	/* Valiant: through an intermediate node, at most two diameters */
	unsigned diam = lab->conf.torus.dim[0] / 2 + lab->conf.torus.dim[1] / 2 +
			lab->conf.torus.dim[2] / 2;
	if (lab->conf.routing == DNP_ROUTING_VALIANT && ev->hops >= dist && ev->hops <= 2 * diam) {
		lab->res.detoured += ev->hops > dist; /* a two-phase route: no fault needed */
	} else if (lab->conf.nfaults && ev->hops > dist) {
		lab->res.detoured++;
	} else if (ev->hops != dist) {
		lab->res.bad_hops++;
		lab_verify_fail(lab, "hop count != torus distance (msg, hops)",
				(uint64_t)(m - lab->msgs), ev->hops);
	}
	if (m->excused) {
		msg_resolve(lab, m);
		return;
	}
	if ((m->attempts ? m->written < m->size : m->written != m->size) || m->mismatches)
		lab_verify_fail(lab, "RX event with bytes missing or wrong (msg, written)",
				(uint64_t)(m - lab->msgs), m->written);
	msg_resolve(lab, m);
}

bool lab_poll_events(struct dnp_lab *lab, struct lab_node *nd)
{
	struct dnp_event ev[32];
	bool any = false;
	unsigned n;

	if (lab->coll)
		return lab_coll_poll(lab, nd);
	while ((n = dnp_engine_poll_events(nd->e, LAB_PORT, ev, 32)) > 0) {
		any = true;
		for (unsigned i = 0; i < n; i++) {
			switch (ev[i].type) {
			case DNP_EV_TX_DONE:
			case DNP_EV_ERROR:
				on_completion(lab, nd, &ev[i]);
				break;
			case DNP_EV_RX_PUT:
				on_rx(lab, nd, &ev[i]);
				break;
			case DNP_EV_LINK:
				break; /* link states are sampled after every step */
			default:
				lab->res.unknown_events++;
				lab_verify_fail(lab, "unexpected event type", nd->id, ev[i].type);
				break;
			}
		}
		if (n < 32)
			break;
	}
	return any;
}

/* Submits message idx from nd: 0, -EAGAIN (try later), or the engine's refusal. */
static int submit_one(struct dnp_lab *lab, struct lab_node *nd, uint32_t idx)
{
	struct lab_msg *m = &lab->msgs[idx];
	struct lab_node *dst = &lab->nodes[m->dst];
	struct dnp_cmd cmd;
	int ret;

	memset(&cmd, 0, sizeof(cmd));
	cmd.op = DNP_OP_PUT;
	cmd.dst_port = LAB_PORT;
	cmd.src_port = LAB_PORT;
	cmd.dst_x = dst->c.x;
	cmd.dst_y = dst->c.y;
	cmd.dst_z = dst->c.z;
	cmd.remote_key = dst->rx_key;
	cmd.remote_va = m->rx_va;
	cmd.len = m->size;
	cmd.local_va = m->tx_va;
	cmd.cookie = (uint64_t)idx + 1;
	cmd.tc = m->pp ? lab->conf.pp_tc : m->tc ? m->tc : lab->conf.tc;
	ret = dnp_engine_submit(nd->e, LAB_PORT, &cmd, lab->now);
	if (ret == -EAGAIN)
		return ret;
	if (!m->attempts)
		m->t_submit = lab->now;
	if (!ret && !m->pp)
		nd->app_out++;
	if (ret) {
		/* refused outright: no completion will follow */
		m->ncompl = 1;
		m->status = ret;
		m->t_done = lab->now;
		lab->res.completions_err++;
		lab->res.err_other++;
		lab_verify_fail(lab, "submit refused (msg, -errno)", idx, (uint64_t)-ret);
		msg_resolve(lab, m);
	}
	return 0;
}

bool lab_submit(struct dnp_lab *lab, struct lab_node *nd)
{
	bool any = false;

	if (lab->coll)
		return lab_coll_submit(lab, nd);
	if (nd->pp_due != UINT32_MAX && lab->now < lab->conf.pp_start) {
		(void)lab_schedule_wake(lab, nd, lab->conf.pp_start); /* not started yet */
	} else if (nd->pp_due != UINT32_MAX && submit_one(lab, nd, nd->pp_due) != -EAGAIN) {
		nd->pp_due = UINT32_MAX;
		any = true;
	}
	/* failed messages whose time has come, first */
	while (nd->retry_head != nd->retry_tail) {
		uint32_t idx = nd->retry[nd->retry_head % (nd->nout + 1)];
		struct lab_msg *m = &lab->msgs[idx];

		if (!m->excused) {
			if (m->retry_at > lab->now) {
				(void)lab_schedule_wake(lab, nd, m->retry_at);
				break;
			}
			if (submit_one(lab, nd, idx) == -EAGAIN)
				break;
			any = true;
		}
		nd->retry_head++;
	}
	while (nd->next_submit < nd->nout) {
		uint32_t idx = nd->out[nd->next_submit];

		if (lab->msgs[idx].pp) { /* submitted in its turn (pp_due) */
			nd->next_submit++;
			continue;
		}
		if (lab->msgs[idx].release > lab->now) { /* a plan's message, not yet due */
			(void)lab_schedule_wake(lab, nd, lab->msgs[idx].release);
			break;
		}
		if (lab->conf.app_window && nd->app_out >= lab->conf.app_window)
			break; /* the window is full: a completion reopens it */
		if (!lab->msgs[idx].excused && submit_one(lab, nd, idx) == -EAGAIN)
			break;
		nd->next_submit++;
		any = true;
	}
	return any;
}

/* Whatever was still open to or from a killed node is no longer verified. */
