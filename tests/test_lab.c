/* SPDX-License-Identifier: MIT */
/*
 * test_lab — the engine on simulated tori: byte-exact all-to-all on 64 nodes,
 * deadlock freedom with dateline VCs (and the deadlock without them), CRC
 * and broken-link detection, lossy links, the link-efficiency model.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lab.h"

/* A fast lab: wide links so that a 4 KiB frame takes 9 time units, short flights. */
static void fast_conf(struct dnp_lab_conf *c, unsigned x, unsigned y, unsigned z)
{
	dnp_lab_conf_default(c);
	assert_int_equal(dnp_torus_init(&c->torus, x, y, z), 0);
	c->bw = 32;
	c->latency = 8;
	c->link.credit_period = 16;
	c->seed = 42;
}

static struct dnp_lab *run_lab(const struct dnp_lab_conf *c, int expect)
{
	struct dnp_lab *lab;
	int ret;

	assert_int_equal(dnp_lab_create(c, &lab), 0);
	ret = dnp_lab_run(lab);
	if (ret != expect)
		dnp_lab_report(lab, stderr, false);
	assert_int_equal(ret, expect);
	return lab;
}

/* A FIFO of one maximum frame and a little (T_RED at its top). */
#define TINY_FIFO (dnp_pkt_frame_words(DNP_MAX_PAYLOAD) + 8)

/* Input FIFOs of fifo_words, T_RED at t_red, T_YELLOW half-way to it. */
static void set_fifo(struct dnp_lab_conf *c, uint32_t fifo_words, uint32_t t_red)
{
	c->link.fifo_words = fifo_words;
	c->link.t_red = t_red;
	c->link.t_yellow = t_red / 2;
}

/* Every corrupted copy that reached a node was dropped as a CRC error, none malformed. */
static void assert_flips_caught(const struct dnp_lab_result *r)
{
	assert_true(r->corrupted > 0);
	assert_int_equal(r->engine.rx_crc_errors, r->corrupted); /* every flip is a CRC error */
	assert_int_equal(r->engine.rx_malformed, 0);
}

static void assert_clean(const struct dnp_lab *lab)
{
	const struct dnp_lab_result *r = dnp_lab_result(lab);

	assert_int_equal(r->status, 0);
	assert_int_equal(r->verify_errors, 0);
	assert_int_equal(r->byte_mismatches, 0);
	assert_int_equal(r->bad_hops, 0);
	assert_int_equal(r->completions_ok, r->messages);
	assert_int_equal(r->completions_err, 0);
	assert_int_equal(r->rx_events, r->messages);
	assert_int_equal(r->pending_at_end, 0);
	for (uint32_t i = 0; i < dnp_lab_messages(lab); i++) {
		struct dnp_lab_msg_info m;

		assert_int_equal(dnp_lab_msg_info(lab, i, &m), 0);
		assert_int_equal(m.completions, 1);
		assert_int_equal(m.rx_events, 1);
		assert_int_equal(m.status, 0);
		assert_int_equal(m.written, m.size);
	}
}

/* run_lab() to success, and assert_clean(). */
static struct dnp_lab *run_clean(const struct dnp_lab_conf *c)
{
	struct dnp_lab *lab = run_lab(c, 0);

	assert_clean(lab);
	return lab;
}

/*
 * 64 nodes, every node PUTs to every other: 1 B, 4097 B (two fragments) and
 * 1 MiB (4 GiB in all, every byte checked). Deep FIFOs and sparse credits keep
 * the simulated frame count, and so the run time (about 6 s), down.
 */
static void test_lab_all_to_all_64(void **state)
{
	struct dnp_lab_conf c;
	struct dnp_lab *lab;
	const struct dnp_lab_result *r;

	fast_conf(&c, 4, 4, 4);
	c.bw = 64;
	c.latency = 2;
	c.link.credit_period = 32;
	set_fifo(&c, 4096, 4096 * 506 / 512);
	assert_int_equal(dnp_lab_parse_sizes("1,4097,1M", &c), 0);
	lab = run_clean(&c);
	r = dnp_lab_result(lab);
	assert_int_equal(r->messages, 3 * 64 * 63);
	assert_int_equal(r->bytes, (1ull + 4097 + (1u << 20)) * 64 * 63);
	assert_int_equal(r->engine.bytes_delivered, r->bytes);
	/* sum over messages of the torus distance: 192 per source node on 4x4x4 */
	assert_int_equal(r->engine.hops_total, 3ull * 64 * 192);
	assert_int_equal(r->engine.rx_crc_errors, 0);
	assert_int_equal(r->link.tx_retx_frames, 0);
	dnp_lab_destroy(lab);
}

/* Uniform random traffic of three sizes, 16 messages a node. */
static void random_conf(struct dnp_lab_conf *c, unsigned x, unsigned y, unsigned z)
{
	fast_conf(c, x, y, z);
	c->pattern = DNP_LAB_RANDOM;
	c->count = 16;
	assert_int_equal(dnp_lab_parse_sizes("100,8192,20000", c), 0);
}

/* Uniform random traffic with FIFOs of one maximum packet plus a little drains. */
static void test_lab_random_tiny_fifo_drains(void **state)
{
	struct dnp_lab_conf c;
	struct dnp_lab *lab;

	random_conf(&c, 4, 4, 4);
	set_fifo(&c, TINY_FIFO, TINY_FIFO);
	lab = run_clean(&c);
	assert_true(dnp_lab_result(lab)->link.credit_stalls > 0);
	dnp_lab_destroy(lab);
}

/* The same with the stop-at-red start rule (needs a frame of headroom above T_RED). */
static void test_lab_random_stop_at_red_drains(void **state)
{
	struct dnp_lab_conf c;
	struct dnp_lab *lab;

	random_conf(&c, 4, 4, 2);
	c.link.rule = DNP_START_STOP_AT_RED;
	c.link.credit_model = DNP_CREDIT_EXACT;
	set_fifo(&c, 2 * dnp_pkt_frame_words(DNP_MAX_PAYLOAD) + 16,
		 dnp_pkt_frame_words(DNP_MAX_PAYLOAD) + 16);
	lab = run_clean(&c);
	dnp_lab_destroy(lab);
}

static void ring_conf(struct dnp_lab_conf *c, unsigned vcs)
{
	fast_conf(c, 8, 1, 1);
	c->pattern = DNP_LAB_SHIFT;
	c->shift[0] = 3;
	c->count = 4;
	assert_int_equal(dnp_lab_parse_sizes("64K", c), 0);
	set_fifo(c, TINY_FIFO, TINY_FIFO);
	c->link.nvc = (uint8_t)vcs;
	c->vc_mode = vcs == 1 ? DNP_VC_SINGLE : DNP_VC_DATELINE;
	c->stall_limit = 20000;
}

/* The same ring traffic: drains with dateline VCs, deadlocks with one VC. */
static void test_lab_ring_dateline_drains(void **state)
{
	struct dnp_lab_conf c;
	struct dnp_lab *lab;

	ring_conf(&c, 2);
	lab = run_clean(&c);
	dnp_lab_destroy(lab);
}

static void test_lab_ring_single_vc_deadlocks(void **state)
{
	struct dnp_lab_conf c;
	struct dnp_lab *lab;
	const struct dnp_lab_result *r;

	ring_conf(&c, 1);
	lab = run_lab(&c, -EDEADLK);
	r = dnp_lab_result(lab);
	assert_true(r->pending_at_end > 0);
	assert_true(r->completions_ok < r->messages);
	/* it stopped because nothing moved for the stall limit, not at max_time */
	assert_true(r->time < c.max_time);
	dnp_lab_destroy(lab);
}

/* Corrupted frames are all caught (CRC or field checks) and the traffic still completes. */
static void test_lab_corruption_detected(void **state)
{
	struct dnp_lab_conf c;
	struct dnp_lab *lab;
	const struct dnp_lab_result *r;

	fast_conf(&c, 4, 2, 1);
	c.corrupt = 0.02;
	c.count = 2;
	assert_int_equal(dnp_lab_parse_sizes("4096,30000", &c), 0);
	lab = run_clean(&c);
	r = dnp_lab_result(lab);
	assert_true(r->engine.rx_crc_errors > 0);
	assert_flips_caught(r);
	assert_int_equal(r->rx_rejected_crc, r->engine.rx_crc_errors);
	assert_true(r->link.tx_retx_frames >= r->undelivered_seq);
	dnp_lab_destroy(lab);
}

/*
 * Node 0 stops sending on X+ at t0: node 1 gets no more credits on its X- link
 * and must declare it BROKEN one credit timeout after the last credit; the
 * commands that need the link end with -ENOLINK instead of hanging.
 */
static void test_lab_silent_link_broken(void **state)
{
	struct dnp_lab_conf c;
	struct dnp_lab *lab;
	struct dnp_lab_link_info li;
	const struct dnp_lab_result *r;
	uint64_t t0 = 2000, ser, lo, hi;
	unsigned nolink = 0;

	fast_conf(&c, 4, 1, 1);
	c.pattern = DNP_LAB_SHIFT;
	c.shift[0] = 1;
	assert_int_equal(dnp_lab_parse_sizes("1M", &c), 0);
	c.silence_node = 0;
	c.silence_dir = DNP_DIR_XP;
	c.silence_at = t0;
	c.allow_errors = true;
	c.link.credit_timeout = 1500;
	lab = run_lab(&c, 0);
	r = dnp_lab_result(lab);
	assert_true(r->silenced > 0);
	dnp_lab_link_info(lab, 1, DNP_DIR_XM, &li);
	assert_true(li.broken_at != UINT64_MAX);
	/* the last credit from node 0 arrived between t0 - C - ser and t0 + ser + latency */
	ser = (DNP_MAX_FRAME / DNP_WORD_BYTES + c.bw - 1) / c.bw;
	lo = t0 + c.link.credit_timeout - c.link.credit_period - ser;
	hi = t0 + c.link.credit_timeout + ser + c.latency + 1;
	assert_in_range(li.broken_at, lo, hi);
	assert_int_equal(dnp_engine_link_state(dnp_lab_engine(lab, 1), DNP_DIR_XM),
			 DNP_LINK_BROKEN);
	/* every command completed exactly once; the one over the dead link with -ENOLINK */
	for (uint32_t i = 0; i < dnp_lab_messages(lab); i++) {
		struct dnp_lab_msg_info m;

		assert_int_equal(dnp_lab_msg_info(lab, i, &m), 0);
		assert_int_equal(m.completions, 1);
		if (m.src == 0) {
			assert_int_equal(m.status, -ENOLINK);
			nolink++;
		} else {
			assert_int_equal(m.status, 0);
			assert_int_equal(m.written, m.size);
		}
	}
	assert_int_equal(nolink, 1);
	assert_int_equal(r->err_nolink, 1);
	assert_int_equal(r->verify_errors, 0);
	dnp_lab_destroy(lab);
}

/*
 * Issue 7, a broken return path: on a 4-ring every node PUTs to the node two
 * hops away on the + side, and completion reports come back on the + side
 * too (the + way wins ties), through node 3's X+ link. Node 3 stops sending
 * on X+ after the data has arrived: the reports crossing it are lost.
 * Without a command deadline those commands never complete; with one, every
 * command completes exactly once, the lost ones with -ETIMEDOUT although
 * their data was written.
 */
static void lost_cmpl_conf(struct dnp_lab_conf *c, uint64_t cmd_timeout)
{
	fast_conf(c, 4, 1, 1);
	c->pattern = DNP_LAB_SHIFT;
	c->shift[0] = 2;
	assert_int_equal(dnp_lab_parse_sizes("1M", c), 0);
	c->silence_node = 3;
	c->silence_dir = DNP_DIR_XP;
	c->silence_at = 33000;
	c->allow_errors = true;
	c->link.credit_timeout = 1500;
	c->stall_limit = 500000;
	c->cmd_timeout = cmd_timeout;
}

static void test_lab_lost_cmpl_deadline(void **state)
{
	struct dnp_lab_conf c;
	struct dnp_lab *lab;
	unsigned timedout = 0, timedout_written = 0;

	lost_cmpl_conf(&c, 0);
	lab = run_lab(&c, -EDEADLK); /* no deadline: reports lost, commands hang */
	assert_true(dnp_lab_result(lab)->completions_ok + dnp_lab_result(lab)->completions_err <
		    dnp_lab_messages(lab));
	dnp_lab_destroy(lab);

	lost_cmpl_conf(&c, 200000);
	lab = run_lab(&c, 0);
	for (uint32_t i = 0; i < dnp_lab_messages(lab); i++) {
		struct dnp_lab_msg_info m;

		assert_int_equal(dnp_lab_msg_info(lab, i, &m), 0);
		assert_int_equal(m.completions, 1);
		if (m.status == -ETIMEDOUT) {
			timedout++;
			timedout_written += m.written == m.size;
			/* within the bound: the deadline plus a quarter of it */
			assert_true(m.completed - m.submitted <=
				    c.cmd_timeout + c.cmd_timeout / 4 + 1);
		} else {
			assert_true(m.status == 0 || m.status == -ENOLINK);
		}
	}
	assert_true(timedout > 0);
	assert_true(timedout_written > 0);
	assert_int_equal(dnp_lab_result(lab)->verify_errors, 0);
	dnp_lab_destroy(lab);
}

static void faults_run(double loss)
{
	struct dnp_lab_conf c;
	struct dnp_lab *lab;
	const struct dnp_lab_result *r;

	fast_conf(&c, 4, 4, 4);
	c.loss = loss;
	c.corrupt = 0.001;
	c.reorder = 0.01;
	c.dup = 0.01;
	c.seed = 7;
	assert_int_equal(dnp_lab_parse_sizes("1,4097,20000", &c), 0);
	lab = run_clean(&c);
	r = dnp_lab_result(lab);
	assert_true(r->lost > 0);
	assert_true(r->duplicated > 0);
	assert_true(r->reordered > 0);
	assert_flips_caught(r);
	assert_true(r->link.tx_retx_frames >= r->lost_seq);
	assert_true(r->link.tx_retx_frames >= r->undelivered_seq);
	assert_true(r->link.rx_dup + r->link.rx_out_of_order >= r->duplicated_seq);
	assert_true(r->link.rx_dup > 0);
	dnp_lab_destroy(lab);
}

static void test_lab_faults_loss_1pct(void **state)
{
	faults_run(0.01);
}

static void test_lab_faults_loss_5pct(void **state)
{
	faults_run(0.05);
}

/* The verifier is not blind: one flipped byte in one write fails the run. */
static void test_lab_verifier_catches_bad_byte(void **state)
{
	struct dnp_lab_conf c;
	struct dnp_lab *lab;
	const struct dnp_lab_result *r;

	fast_conf(&c, 2, 2, 1);
	assert_int_equal(dnp_lab_parse_sizes("10000", &c), 0);
	c.tamper_write = 5;
	lab = run_lab(&c, -EIO);
	r = dnp_lab_result(lab);
	assert_int_equal(r->byte_mismatches, 1);
	assert_true(r->verify_errors >= 2); /* the write, then its RX event */
	dnp_lab_destroy(lab);
}

/* The same seed gives the same run, to the time unit and the counter. */
static void test_lab_reproducible(void **state)
{
	struct dnp_lab_conf c;
	struct dnp_lab *a, *b;
	const struct dnp_lab_result *ra, *rb;

	fast_conf(&c, 2, 2, 2);
	c.loss = 0.02;
	c.reorder = 0.02;
	assert_int_equal(dnp_lab_parse_sizes("5000", &c), 0);
	a = run_lab(&c, 0);
	b = run_lab(&c, 0);
	ra = dnp_lab_result(a);
	rb = dnp_lab_result(b);
	assert_int_equal(ra->time, rb->time);
	assert_int_equal(ra->events_processed, rb->events_processed);
	assert_int_equal(ra->lost, rb->lost);
	assert_int_equal(ra->link.tx_retx_frames, rb->link.tx_retx_frames);
	assert_int_equal(ra->lat_p99, rb->lat_p99);
	dnp_lab_destroy(a);
	dnp_lab_destroy(b);
}

/* Measured link efficiency within 5% of the model E_T (EURETILE report, torus link). */
/* Failures named by hand: the syntax, and what is refused. */
static void test_lab_fault_parse(void **state)
{
	struct dnp_lab_conf c;

	dnp_lab_conf_default(&c);
	dnp_torus_init(&c.torus, 4, 4, 1);
	assert_int_equal(dnp_lab_fault_parse("cut@100:1,2,0:yp", &c), 0);
	assert_int_equal(dnp_lab_fault_parse("kill@5:3,3,0", &c), 0);
	assert_int_equal(c.nfaults, 2);
	assert_int_equal(c.faults[0].at, 100);
	assert_int_equal(c.faults[0].node, 1 + 4 * 2);
	assert_int_equal(c.faults[0].dir, DNP_DIR_YP);
	assert_int_equal(c.faults[0].kind, DNP_LAB_CUT);
	assert_int_equal(c.faults[1].kind, DNP_LAB_KILL);
	assert_int_equal(dnp_lab_fault_parse("cut@100:1,2,0:zp", &c), -EINVAL); /* Z has no cable */
	assert_int_equal(dnp_lab_fault_parse("cut@100:1,2,0", &c), -EINVAL);
	assert_int_equal(dnp_lab_fault_parse("kill@5:3,3,0:xp", &c), -EINVAL);
	assert_int_equal(dnp_lab_fault_parse("kill@5:4,0,0", &c), -EINVAL);
	assert_int_equal(dnp_lab_fault_parse("melt@5:0,0,0", &c), -EINVAL);
	assert_int_equal(dnp_lab_fault_parse("kill@-5:0,0,0", &c), -EINVAL);
	assert_int_equal(c.nfaults, 2);
	/* random: each kill repaired, no node killed twice, all within bounds */
	assert_int_equal(dnp_lab_random_faults(&c, 3, 4, 10000, 9), 0);
	assert_int_equal(c.nfaults, 2 + 14);
	for (unsigned i = 2; i < c.nfaults; i += 2) {
		assert_true(c.faults[i].kind == DNP_LAB_CUT || c.faults[i].kind == DNP_LAB_KILL);
		assert_int_equal(c.faults[i + 1].kind, c.faults[i].kind + 1);
		assert_int_equal(c.faults[i + 1].node, c.faults[i].node);
		assert_true(c.faults[i + 1].at > c.faults[i].at);
		for (unsigned j = 2; j < i; j += 2)
			if (c.faults[i].kind == DNP_LAB_KILL && c.faults[j].kind == DNP_LAB_KILL)
				assert_true(c.faults[j].node != c.faults[i].node);
	}
	assert_int_equal(dnp_lab_random_faults(&c, 200, 0, 10000, 9), -E2BIG);
}

/*
 * A 4x4 torus under all-to-all: a cable cut and mended, a node killed and
 * revived. Every message between live nodes arrives byte-exact (the run is
 * verified), some by a detour, some after being resubmitted; the dead
 * node's messages are excused; links and routes heal.
 */
static void test_lab_cut_kill_heal(void **state)
{
	struct dnp_lab_conf c;
	struct dnp_lab *lab;
	const struct dnp_lab_result *r;

	fast_conf(&c, 4, 4, 1);
	assert_int_equal(dnp_lab_parse_sizes("1,9000", &c), 0);
	c.count = 3;
	assert_int_equal(dnp_lab_fault_parse("cut@500:0,0,0:xp", &c), 0);
	assert_int_equal(dnp_lab_fault_parse("kill@1500:2,1,0", &c), 0);
	assert_int_equal(dnp_lab_fault_parse("mend@20000:0,0,0:xp", &c), 0);
	assert_int_equal(dnp_lab_fault_parse("revive@25000:2,1,0", &c), 0);
	lab = run_lab(&c, 0);
	r = dnp_lab_result(lab);
	assert_int_equal(r->verify_errors, 0);
	assert_int_equal(r->byte_mismatches, 0);
	assert_int_equal(r->faults_applied, 4);
	assert_true(r->cut_frames > 0);
	assert_true(r->detoured > 0);
	assert_true(r->excused > 0);
	assert_true(r->engine.route_changes > 0);
	/* after the repairs every link is UP again and no node knows a fault */
	for (uint32_t id = 0; id < dnp_lab_nodes(lab); id++) {
		struct dnp_engine *e = dnp_lab_engine(lab, id);

		assert_non_null(e);
		for (unsigned d = 0; d < 4; d++)
			assert_int_equal(dnp_engine_link_state(e, d), DNP_LINK_UP);
		assert_int_equal(dnp_engine_router(e)->n_faults, 0);
	}
	dnp_lab_destroy(lab);
}

static void test_lab_efficiency_model(void **state)
{
	static const int rules[] = { DNP_START_VCT, DNP_START_STOP_AT_RED };

	for (unsigned i = 0; i < 2; i++) {
		double measured = 0, model = 0;
		int ret = dnp_lab_efficiency_run(rules[i], 1, &measured, &model);

		assert_int_equal(ret, 0);
		assert_true(model > 0);
		print_message("rule %d: measured %.4f model %.4f\n", rules[i], measured, model);
		assert_true((measured > model ? measured - model : model - measured) / model <=
			    0.05);
	}
}

/*
 * An explicit plan (conf.plan, the sweep's traffic): no message is submitted
 * before its release time, each arrives after it (received recorded), the
 * run verifies byte-exact, and a plan naming a node outside the torus or a
 * message to its own source is refused.
 */
static void test_lab_plan_release(void **state)
{
	(void)state;
	static const struct dnp_lab_plan_msg plan[] = {
		{ 0, 1, 100, 0, 0 },    { 0, 7, 4096, 0, 0 },    { 3, 4, 1, 500, 0 },
		{ 0, 2, 300, 2000, 0 }, { 5, 0, 2000, 2000, 0 }, { 3, 6, 64, 9000, 0 },
	};
	struct dnp_lab_plan_msg bad[1] = { { 0, 8, 16, 0, 0 } };
	struct dnp_lab_conf c;
	struct dnp_lab *lab;

	fast_conf(&c, 2, 2, 2);
	c.plan = plan;
	c.nplan = sizeof(plan) / sizeof(plan[0]);
	lab = run_lab(&c, 0);
	assert_int_equal(dnp_lab_messages(lab), c.nplan);
	for (uint32_t i = 0; i < c.nplan; i++) {
		struct dnp_lab_msg_info mi;

		assert_int_equal(dnp_lab_msg_info(lab, i, &mi), 0);
		assert_int_equal(mi.src, plan[i].src);
		assert_int_equal(mi.dst, plan[i].dst);
		assert_int_equal(mi.released, plan[i].release);
		assert_true(mi.submitted >= plan[i].release);
		assert_true(mi.received != UINT64_MAX && mi.received > mi.submitted);
		assert_int_equal(mi.status, 0);
	}
	assert_true(dnp_lab_now(lab) > 9000);
	dnp_lab_destroy(lab);
	c.plan = bad; /* node 8 is outside 2x2x2 */
	c.nplan = 1;
	assert_int_equal(dnp_lab_create(&c, &lab), -EINVAL);
	bad[0].dst = 0; /* to itself */
	assert_int_equal(dnp_lab_create(&c, &lab), -EINVAL);
}

/* The most messages of node 'src' outstanding (submitted, not completed) at any one time. */
static unsigned max_outstanding(struct dnp_lab *lab, uint32_t src)
{
	unsigned best = 0;

	for (uint32_t i = 0; i < dnp_lab_messages(lab); i++) {
		struct dnp_lab_msg_info a, b;
		unsigned n = 0;

		assert_int_equal(dnp_lab_msg_info(lab, i, &a), 0);
		if (a.src != src)
			continue;
		for (uint32_t j = 0; j < dnp_lab_messages(lab); j++) {
			assert_int_equal(dnp_lab_msg_info(lab, j, &b), 0);
			n += b.src == src && b.submitted <= a.submitted &&
			     b.completed > a.submitted;
		}
		best = n > best ? n : best;
	}
	return best;
}

/*
 * The daemons' experiment in the lab (h-lab30; docs/lab.md): --pingpong-start
 * holds the ping-pong's first message until then (and the flow runs beside
 * the bulk, not after it), --pingpong-warmup leaves its first messages out
 * of the figures, --app-window bounds a node's outstanding pattern messages,
 * and --order by-destination submits destination after destination.
 */
static void test_lab_daemon_experiment(void **state)
{
	(void)state;
	struct dnp_lab_conf c;
	struct dnp_lab_msg_info mi;
	struct dnp_lab *lab;
	uint64_t bulk_end, start;
	uint32_t first_pp;
	char num[24];

	fast_conf(&c, 2, 2, 2);
	c.sizes[0] = 65536;
	c.nsizes = 1;
	c.count = 2;
	assert_int_equal(dnp_lab_class_opt(&c, "pingpong", "0,7"), 0);
	assert_int_equal(dnp_lab_class_opt(&c, "pingpong-count", "20"), 0);
	lab = run_clean(&c);
	first_pp = dnp_lab_messages(lab) - 20;
	assert_int_equal(dnp_lab_msg_info(lab, first_pp, &mi), 0);
	assert_int_equal(mi.submitted, 0); /* without a start: at time 0 */
	bulk_end = dnp_lab_result(lab)->pp_bulk_end;
	assert_true(bulk_end > 1000);
	dnp_lab_destroy(lab);

	start = bulk_end / 2;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)start);
	assert_int_equal(dnp_lab_class_opt(&c, "pingpong-start", num), 0);
	assert_int_equal(c.pp_start, start);
	lab = run_clean(&c);
	assert_int_equal(dnp_lab_msg_info(lab, first_pp, &mi), 0);
	assert_true(mi.src == 0 && mi.dst == 7);
	assert_true(mi.submitted >= start);
	assert_true(mi.submitted < dnp_lab_result(lab)->pp_bulk_end); /* beside the bulk */
	assert_int_equal(dnp_lab_result(lab)->pp_all, 20);
	dnp_lab_destroy(lab);
	/* the flow outlasts the bulk: only 'all' measures what came after it */
	c.pp_start = bulk_end - 1;
	lab = run_clean(&c);
	assert_true(dnp_lab_result(lab)->pp_msgs < 20);
	dnp_lab_destroy(lab);
	assert_int_equal(dnp_lab_class_opt(&c, "pingpong-measure", "all"), 0);
	lab = run_clean(&c);
	assert_int_equal(dnp_lab_result(lab)->pp_msgs, 20);
	dnp_lab_destroy(lab);
	assert_int_equal(dnp_lab_class_opt(&c, "pingpong-measure", "during"), 0);
	assert_false(c.pp_measure_all);

	/* no other traffic (a shift by 0): every message is measured, but the warm-up */
	c.pattern = DNP_LAB_SHIFT;
	memset(c.shift, 0, sizeof(c.shift));
	c.pp_start = 0;
	assert_int_equal(dnp_lab_class_opt(&c, "pingpong-warmup", "6"), 0);
	lab = run_clean(&c);
	assert_int_equal(dnp_lab_result(lab)->pp_all, 20);
	assert_int_equal(dnp_lab_result(lab)->pp_msgs, 14);
	dnp_lab_destroy(lab);

	/* the application's window, and dnp_alltoall's order */
	fast_conf(&c, 2, 2, 2);
	c.sizes[0] = 4096;
	c.nsizes = 1;
	c.count = 8;
	lab = run_clean(&c);
	assert_true(max_outstanding(lab, 0) > 4);
	dnp_lab_destroy(lab);
	c.app_window = 4;
	c.a2a_order = 1;
	lab = run_clean(&c);
	assert_true(max_outstanding(lab, 0) <= 4);
	assert_true(max_outstanding(lab, 0) >= 1);
	for (uint32_t i = 0, last = 0; i < dnp_lab_messages(lab); i++) {
		assert_int_equal(dnp_lab_msg_info(lab, i, &mi), 0);
		if (mi.src != 3)
			continue;
		assert_true(mi.dst >= last); /* destinations by id, each in a row */
		last = mi.dst;
	}
	dnp_lab_destroy(lab);
	/* a window with failures is refused */
	assert_int_equal(dnp_lab_fault_parse("cut@100:0,0,0:xp", &c), 0);
	assert_int_equal(dnp_lab_create(&c, &lab), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lab_verifier_catches_bad_byte),
		cmocka_unit_test(test_lab_reproducible),
		cmocka_unit_test(test_lab_all_to_all_64),
		cmocka_unit_test(test_lab_random_tiny_fifo_drains),
		cmocka_unit_test(test_lab_random_stop_at_red_drains),
		cmocka_unit_test(test_lab_ring_dateline_drains),
		cmocka_unit_test(test_lab_ring_single_vc_deadlocks),
		cmocka_unit_test(test_lab_corruption_detected),
		cmocka_unit_test(test_lab_silent_link_broken),
		cmocka_unit_test(test_lab_lost_cmpl_deadline),
		cmocka_unit_test(test_lab_faults_loss_1pct),
		cmocka_unit_test(test_lab_faults_loss_5pct),
		cmocka_unit_test(test_lab_efficiency_model),
		cmocka_unit_test(test_lab_fault_parse),
		cmocka_unit_test(test_lab_cut_kill_heal),
		cmocka_unit_test(test_lab_plan_release),
		cmocka_unit_test(test_lab_daemon_experiment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
