/* SPDX-License-Identifier: MIT */
/*
 * lab_coll.c — collectives in the lab (conf.coll_op, lab.h): every node's
 * port 0 joins one group of all nodes, then runs conf.coll_count
 * collectives back to back, the engine's own (dnp-core/coll.c). The
 * members' memory is simulated like the traffic's: the member list and the
 * sources are functions of the node, and every result the engine writes is
 * checked as it is written (lab_internal.h lists the parts).
 */
#include "lab_internal.h"

#define COLL_GID 0x1ab
#define COLL_MEMBERS LAB_COLL_BASE
#define COLL_SRC (LAB_COLL_BASE + 0x100000ull)
#define COLL_DST (LAB_COLL_BASE + 0x200000ull)

struct lab_coll_node {
	uint32_t done; /* commands ended: the join, then collectives */
	bool busy;
	uint64_t t_sub;
};

struct lab_coll {
	uint32_t len; /* bytes per collective */
	struct lab_coll_node *nodes;
	uint64_t *lat; /* per member and collective */
	uint64_t nlat;
	uint64_t t_first, t_last;
};

int lab_coll_create(struct dnp_lab *lab)
{
	const struct dnp_lab_conf *c = &lab->conf;
	struct lab_coll *co;

	if ((c->coll_op != DNP_OP_ALLREDUCE && c->coll_op != DNP_OP_BARRIER &&
	     c->coll_op != DNP_OP_BCAST) ||
	    c->coll_size > DNP_COLL_MAX_BYTES || !c->coll_count || lab->n > DNP_COLL_MAX_MEMBERS)
		return -EINVAL;
	co = calloc(1, sizeof(*co));
	if (!co)
		return -ENOMEM;
	lab->coll = co;
	co->len = c->coll_op == DNP_OP_BARRIER ? 0 :
		  c->coll_op == DNP_OP_BCAST   ? c->coll_size :
		  c->coll_size >= 8            ? c->coll_size / 8 * 8 :
						 8;
	co->nodes = calloc(lab->n, sizeof(*co->nodes));
	co->lat = calloc((size_t)lab->n * c->coll_count, sizeof(*co->lat));
	if (!co->nodes || !co->lat)
		return -ENOMEM;
	co->t_first = UINT64_MAX;
	lab->open_msgs += lab->n * (c->coll_count + 1);
	return 0;
}

void lab_coll_destroy(struct dnp_lab *lab)
{
	if (!lab->coll)
		return;
	free(lab->coll->nodes);
	free(lab->coll->lat);
	free(lab->coll);
	lab->coll = NULL;
}

/* Element k of node id's source: int64. */
static int64_t src_val(uint32_t id, uint64_t k)
{
	return (int64_t)id * 1000003 + (int64_t)k;
}

int lab_coll_read(struct lab_node *nd, uint64_t va, void *dst, size_t len)
{
	struct dnp_lab *lab = nd->lab;
	uint8_t *out = dst;

	if (va >= COLL_MEMBERS && va + len <= COLL_MEMBERS + (uint64_t)lab->n * 4) {
		for (size_t i = 0; i < len; i++) { /* member j: node j, port 0 */
			uint64_t b = va - COLL_MEMBERS + i;
			struct dnp_coord c = dnp_torus_coord(&lab->conf.torus, (uint32_t)(b / 4));
			uint8_t m[4] = { c.x, c.y, c.z, LAB_PORT };

			out[i] = m[b % 4];
		}
		return 0;
	}
	if (va < COLL_SRC || va + len > COLL_SRC + lab->coll->len)
		return -EFAULT;
	for (size_t i = 0; i < len; i++) {
		uint64_t b = va - COLL_SRC + i;
		int64_t v = src_val(nd->id, b / 8);

		out[i] = lab->conf.coll_op == DNP_OP_BCAST ?
				 (uint8_t)(b * 7 + 1) :
				 (uint8_t)((uint64_t)v >> (8 * (b % 8)));
	}
	return 0;
}

int lab_coll_write(struct lab_node *nd, uint64_t va, const void *src, size_t len)
{
	struct dnp_lab *lab = nd->lab;
	const uint8_t *in = src;
	uint64_t n = lab->n, bad = 0;

	if (va < COLL_SRC || va + len > COLL_SRC + 2 * (COLL_DST - COLL_SRC))
		return -EFAULT;
	for (size_t i = 0; i < len; i++) {
		uint64_t b = va - (lab->conf.coll_op == DNP_OP_BCAST ? COLL_SRC : COLL_DST) + i;
		int64_t sum = (int64_t)(n * (n - 1) / 2) * 1000003 + (int64_t)(n * (b / 8));
		uint8_t want = lab->conf.coll_op == DNP_OP_BCAST ?
				       (uint8_t)(b * 7 + 1) :
				       (uint8_t)((uint64_t)sum >> (8 * (b % 8)));

		bad += in[i] != want;
	}
	if (bad) {
		lab->res.byte_mismatches += bad;
		lab_verify_fail(lab, "collective result wrong (node, bytes)", nd->id, bad);
	}
	return 0;
}

bool lab_coll_submit(struct dnp_lab *lab, struct lab_node *nd)
{
	struct lab_coll *co = lab->coll;
	struct lab_coll_node *cn = &co->nodes[nd->id];
	const struct dnp_lab_conf *c = &lab->conf;
	struct dnp_cmd cmd = { .remote_key = COLL_GID, .cookie = cn->done + 1 };

	if (cn->busy || cn->done > c->coll_count)
		return false;
	if (cn->done == 0) {
		cmd.op = DNP_OP_COLL_JOIN;
		cmd.local_va = COLL_MEMBERS;
		cmd.len = (uint64_t)lab->n * 4;
	} else {
		cmd.op = c->coll_op;
		cmd.len = co->len;
		if (c->coll_op == DNP_OP_ALLREDUCE) {
			cmd.coll_param = DNP_COLL_PARAM(DNP_RED_SUM, DNP_TYPE_INT64, 0);
			cmd.local_va = COLL_SRC;
			cmd.remote_va = COLL_DST;
		} else if (c->coll_op == DNP_OP_BCAST) {
			cmd.local_va = COLL_SRC;
		}
	}
	if (dnp_engine_submit(nd->e, LAB_PORT, &cmd, lab->now) < 0)
		return false;
	cn->busy = true;
	cn->t_sub = lab->now;
	if (cn->done == 1 && lab->now < co->t_first)
		co->t_first = lab->now;
	return true;
}

bool lab_coll_poll(struct dnp_lab *lab, struct lab_node *nd)
{
	struct lab_coll *co = lab->coll;
	struct lab_coll_node *cn = &co->nodes[nd->id];
	struct dnp_event ev[8];
	bool any = false;
	unsigned n;

	while ((n = dnp_engine_poll_events(nd->e, LAB_PORT, ev, 8)) > 0) {
		any = true;
		for (unsigned i = 0; i < n; i++) {
			if (ev[i].type == DNP_EV_LINK)
				continue;
			if ((ev[i].type != DNP_EV_TX_DONE && ev[i].type != DNP_EV_ERROR) ||
			    !cn->busy || ev[i].cookie != cn->done + 1) {
				lab->res.unknown_events++;
				lab_verify_fail(lab, "unexpected event (node, type)", nd->id,
						ev[i].type);
				continue;
			}
			if (ev[i].status) {
				lab->res.coll_failed++;
				lab_verify_fail(lab, "collective failed (node, errno)", nd->id,
						(uint64_t)-ev[i].status);
			} else if (cn->done) {
				lab->res.coll_done++;
				co->lat[co->nlat++] = lab->now - cn->t_sub;
			}
			cn->busy = false;
			cn->done++;
			lab->open_msgs--;
			lab->last_progress = lab->now;
			co->t_last = lab->now;
		}
	}
	return any;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void lab_coll_finish(struct dnp_lab *lab)
{
	struct lab_coll *co = lab->coll;
	struct dnp_lab_result *r = &lab->res;

	if (!co->nlat)
		return;
	qsort(co->lat, co->nlat, sizeof(*co->lat), cmp_u64);
	r->coll_lat_median = co->lat[co->nlat / 2];
	r->coll_lat_max = co->lat[co->nlat - 1];
	if (co->t_last > co->t_first)
		r->coll_per_op = (double)(co->t_last - co->t_first) / lab->conf.coll_count;
}

void dnp_lab_coll_report(const struct dnp_lab *lab, FILE *f)
{
	const struct dnp_lab_result *r = &lab->res;
	static const char *const names[] = { [DNP_OP_ALLREDUCE] = "allreduce",
					     [DNP_OP_BARRIER] = "barrier",
					     [DNP_OP_BCAST] = "bcast" };

	if (!lab->coll)
		return;
	fprintf(f,
		"collective %s of %u B on %u nodes: %" PRIu64 " done, %" PRIu64
		" failed; member latency median %" PRIu64 " max %" PRIu64
		" time units; %.1f time units per collective\n",
		names[lab->conf.coll_op], lab->coll->len, lab->n, r->coll_done, r->coll_failed,
		r->coll_lat_median, r->coll_lat_max, r->coll_per_op);
}
