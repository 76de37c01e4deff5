/* SPDX-License-Identifier: MIT */
/*
 * test_coll — collectives run by the engines (coll.h): every reduction on
 * every type against a reference computed here, results bit-identical on
 * every member and from run to run, groups of a power of two and not,
 * broadcast from each root, 64 KiB, barrier, the errors, and members that
 * die or leave mid-collective; pipelined collectives (coll.h) up to 1 MiB:
 * every op and type over several windows of chunks, back to back with
 * members running ahead, and faults in the middle of one. Engines on an X ring wired frame by frame
 * (test_engine_harness.h); members are (node, port), node-major.
 */
#include <math.h>

#include "../apps/coll_ref.h"
#include "coll.h"
#include "crc.h"
#include "test_engine_harness.h"

#define GID 0x77u
#define MEMBERS_VA BASE
#define SRC_VA (BASE + 0x10000)
#define DST_VA (BASE + 0x200000)
#define K64 65536u
#define BIG (1u << 20) /* the largest collective here: SRC_VA and DST_VA hold as much */
#define STEPS 200000

static unsigned nmem; /* members of the group under test: nodes x NPORTS, or fewer */

static unsigned m_node(unsigned r)
{
	return r / NPORTS;
}

static unsigned m_port(unsigned r)
{
	return r % NPORTS;
}

static struct dnp_cmd coll_cmd(unsigned op, uint32_t param, uint64_t local, uint64_t remote,
			       uint64_t len, uint64_t cookie)
{
	return (struct dnp_cmd){ .op = (uint8_t)op,
				 .remote_key = GID,
				 .coll_param = param,
				 .local_va = local,
				 .remote_va = remote,
				 .len = len,
				 .cookie = cookie };
}

/* Submits c on every member (each its own copy). */
static void submit_all(const struct dnp_cmd *c)
{
	for (unsigned r = 0; r < nmem; r++)
		assert_int_equal(dnp_engine_submit(nodes[m_node(r)].e, m_port(r), c, now), 0);
}

/* Every member's next event but LINK ones is of this type and status; returns the last. */
static struct dnp_event expect_all(unsigned type, int status, unsigned op)
{
	struct dnp_event ev = { 0 };

	for (unsigned r = 0; r < nmem; r++) {
		ev = expect_event_nolink(m_node(r), m_port(r), STEPS, type);
		assert_int_equal(ev.status, status);
		assert_int_equal(ev.op, op);
	}
	return ev;
}

/* The first n of the setup's members join group GID. */
static void join(unsigned n)
{
	struct dnp_coll_member m[4 * NPORTS];

	nmem = n;
	for (unsigned r = 0; r < n; r++)
		m[r] = (struct dnp_coll_member){ (uint8_t)m_node(r), 0, 0, (uint8_t)m_port(r) };
	for (unsigned r = 0; r < n; r++)
		memcpy(nodes[m_node(r)].mem[m_port(r)], m, sizeof(m));
	struct dnp_cmd c = coll_cmd(DNP_OP_COLL_JOIN, 0, MEMBERS_VA, 0, n * sizeof(m[0]), 1);
	submit_all(&c);
	expect_all(DNP_EV_TX_DONE, 0, DNP_OP_COLL_JOIN);
}

static uint8_t *src_of(unsigned r)
{
	return nodes[m_node(r)].mem[m_port(r)] + (SRC_VA - BASE);
}

static uint8_t *dst_of(unsigned r)
{
	return nodes[m_node(r)].mem[m_port(r)] + (DST_VA - BASE);
}

/* The reference (apps/coll_ref.h, shared with dnp_coll): member r's values, reduced in rank order. */
static void reference(unsigned op, unsigned t, size_t count, unsigned salt, uint8_t *out)
{
	for (size_t i = 0; i < count; i++)
		coll_ref_put(out + i * coll_ref_esize(t), t, coll_ref_elem(op, nmem, i, salt));
}

/* One allreduce of count elements on every member, checked against the reference. */
static void allreduce_check(unsigned op, unsigned t, size_t count, unsigned salt)
{
	size_t len = count * coll_ref_esize(t);
	static uint8_t ref[BIG];

	for (unsigned r = 0; r < nmem; r++) {
		for (size_t i = 0; i < count; i++)
			coll_ref_put(src_of(r) + i * coll_ref_esize(t), t,
				     coll_ref_val(r, i, salt));
		memset(dst_of(r), 0xee, len);
	}
	struct dnp_cmd c =
		coll_cmd(DNP_OP_ALLREDUCE, DNP_COLL_PARAM(op, t, 0), SRC_VA, DST_VA, len, 42);
	submit_all(&c);
	struct dnp_event ev = expect_all(DNP_EV_TX_DONE, 0, DNP_OP_ALLREDUCE);
	assert_int_equal(ev.cookie, 42);
	assert_int_equal(ev.len, len);
	reference(op, t, count, salt, ref);
	for (unsigned r = 0; r < nmem; r++)
		assert_memory_equal(dst_of(r), ref, len);
}

/*
 * One broadcast of len bytes from root (cookie root) on every member: every
 * member's source filled with bytes of its own, the root's then by fill()
 * from seed; every member's source ends equal to the root's.
 */
static void bcast_check(unsigned root, size_t len, unsigned seed)
{
	for (unsigned r = 0; r < nmem; r++)
		memset(src_of(r), 0x11 * r, len);
	fill(src_of(root), len, seed);
	struct dnp_cmd c = coll_cmd(DNP_OP_BCAST, DNP_COLL_PARAM(0, 0, root), SRC_VA, 0, len, root);
	submit_all(&c);
	expect_all(DNP_EV_TX_DONE, 0, DNP_OP_BCAST);
	for (unsigned r = 0; r < nmem; r++)
		assert_memory_equal(src_of(r), src_of(root), len);
}

static void every_op_and_type(unsigned nodes_n, unsigned members, size_t count)
{
	static const unsigned types[] = { DNP_TYPE_INT32, DNP_TYPE_INT64, DNP_TYPE_FLOAT,
					  DNP_TYPE_DOUBLE };
	unsigned salt = 0;

	setup_nodes(nodes_n);
	join(members);
	for (unsigned ti = 0; ti < 4; ti++)
		for (unsigned op = DNP_RED_SUM; op <= DNP_RED_BOR; op++)
			if (op <= DNP_RED_MAX || types[ti] <= DNP_TYPE_INT64)
				allreduce_check(op, types[ti], count, ++salt);
}

/* 8 members (4 nodes x 2 ports): recursive doubling alone. */
static void test_coll_allreduce_pow2(void **state)
{
	every_op_and_type(4, 8, 37);
}

/* 6 and 5 members: the fold into the power of two and the result back. */
static void test_coll_allreduce_fold(void **state)
{
	every_op_and_type(3, 6, 5);
	teardown(state);
	every_op_and_type(3, 5, 1);
}

/* One member alone: its own values back. */
static void test_coll_allreduce_single(void **state)
{
	every_op_and_type(1, 1, 3);
}

/* 64 KiB of doubles (16 packets per step) on 7 members. */
static void test_coll_allreduce_64k(void **state)
{
	setup_nodes(4);
	join(7);
	allreduce_check(DNP_RED_SUM, DNP_TYPE_DOUBLE, K64 / 8, 3);
	allreduce_check(DNP_RED_MAX, DNP_TYPE_INT32, K64 / 4, 4);
}

/*
 * Floating-point sums whose rounding depends on the order: every member
 * gets the same bits, and the same again when the collective is repeated.
 */
static void test_coll_float_identical(void **state)
{
	const size_t count = 256, len = count * sizeof(double);
	static uint8_t first[2048];

	setup_nodes(4);
	join(7);
	for (unsigned run = 0; run < 3; run++) {
		for (unsigned r = 0; r < nmem; r++)
			for (size_t i = 0; i < count; i++) {
				double d = (i + 1) * pow(10.0, (double)((r * 5 + i) % 17) - 8.0) /
					   (r + 3.0);
				memcpy(src_of(r) + i * 8, &d, 8);
			}
		struct dnp_cmd c =
			coll_cmd(DNP_OP_ALLREDUCE, DNP_COLL_PARAM(DNP_RED_SUM, DNP_TYPE_DOUBLE, 0),
				 SRC_VA, DST_VA, len, run);
		submit_all(&c);
		expect_all(DNP_EV_TX_DONE, 0, DNP_OP_ALLREDUCE);
		if (run == 0)
			memcpy(first, dst_of(0), len);
		for (unsigned r = 0; r < nmem; r++)
			assert_memory_equal(dst_of(r), first, len);
		/* and close to the exact sum, so it is a sum at all */
		double got, want = 0;
		memcpy(&got, first + 8 * 9, 8);
		for (unsigned r = 0; r < nmem; r++)
			want += 10 * pow(10.0, (double)((r * 5 + 9) % 17) - 8.0) / (r + 3.0);
		assert_true(fabs(got - want) <= 1e-12 * fabs(want));
	}
}

/* Broadcast from every root, 3000 bytes and 64 KiB; the source is left alone. */
static void test_coll_bcast(void **state)
{
	setup_nodes(3);
	join(6);
	for (unsigned root = 0; root < nmem; root++)
		bcast_check(root, root % 2 ? K64 : 3000, root + 1);
}

/*
 * Broadcasts from changing roots while one node is stopped: no member ends
 * one before every member started it (a root may not run ahead of a slow
 * member by more than one collective, or its packets would find no place),
 * and once the node runs again every broadcast arrives whole, in order.
 */
static void test_coll_bcast_run_ahead(void **state)
{
	struct dnp_event ev;

	setup_nodes(4);
	join(8);
	hold_node = 3; /* members 6 and 7 */
	for (unsigned root = 0; root < 3; root++) {
		struct dnp_cmd c = coll_cmd(DNP_OP_BCAST, DNP_COLL_PARAM(0, 0, root),
					    SRC_VA + root * 0x1000, 0, 3000, root);

		fill(src_of(root) + root * 0x1000, 3000, root + 7);
		for (unsigned r = 0; r < 8; r++)
			if (root > 0 || r < 6)
				assert_int_equal(
					dnp_engine_submit(nodes[m_node(r)].e, m_port(r), &c, now),
					0);
		if (root == 0) { /* not even the root ends it before 6 and 7 started it */
			pump(3000);
			for (unsigned r = 0; r < 6; r++)
				assert_int_equal(dnp_engine_poll_events(nodes[m_node(r)].e,
									m_port(r), &ev, 1),
						 0);
			hold_node = -1;
			for (unsigned r = 6; r < 8; r++)
				assert_int_equal(
					dnp_engine_submit(nodes[m_node(r)].e, m_port(r), &c, now),
					0);
		}
		for (unsigned r = 0; r < 8; r++)
			assert_int_equal(
				expect_event_nolink(m_node(r), m_port(r), STEPS, DNP_EV_TX_DONE)
					.cookie,
				root);
		for (unsigned r = 0; r < 8; r++)
			assert_memory_equal(src_of(r) + root * 0x1000, src_of(root) + root * 0x1000,
					    3000);
	}
}

/* No member passes a barrier before every member entered it. */
static void test_coll_barrier(void **state)
{
	struct dnp_event ev;

	setup_nodes(4);
	join(8);
	struct dnp_cmd c = coll_cmd(DNP_OP_BARRIER, 0, 0, 0, 0, 5);
	for (unsigned r = 0; r < nmem - 1; r++)
		assert_int_equal(dnp_engine_submit(nodes[m_node(r)].e, m_port(r), &c, now), 0);
	pump(2000);
	for (unsigned r = 0; r < nmem - 1; r++)
		assert_int_equal(dnp_engine_poll_events(nodes[m_node(r)].e, m_port(r), &ev, 1), 0);
	assert_int_equal(dnp_engine_submit(nodes[m_node(7)].e, m_port(7), &c, now), 0);
	expect_all(DNP_EV_TX_DONE, 0, DNP_OP_BARRIER);
	/* and again: the next collective of the group */
	submit_all(&c);
	expect_all(DNP_EV_TX_DONE, 0, DNP_OP_BARRIER);
}

/* One member runs ahead into the next collective: its packets wait for the others. */
static void test_coll_run_ahead(void **state)
{
	setup_nodes(2);
	join(4);
	struct dnp_cmd b = coll_cmd(DNP_OP_BARRIER, 0, 0, 0, 0, 5);
	submit_all(&b);
	/* member 0 is done first and starts an allreduce before the others saw their barrier */
	expect_event_nolink(0, 0, STEPS, DNP_EV_TX_DONE);
	for (size_t i = 0; i < 4; i++)
		for (unsigned r = 0; r < nmem; r++)
			coll_ref_put(src_of(r) + i * 4, DNP_TYPE_INT32, coll_ref_val(r, i, 9));
	struct dnp_cmd a =
		coll_cmd(DNP_OP_ALLREDUCE, DNP_COLL_PARAM(DNP_RED_SUM, DNP_TYPE_INT32, 0), SRC_VA,
			 DST_VA, 16, 6);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &a, now), 0);
	for (unsigned r = 1; r < nmem; r++)
		expect_event_nolink(m_node(r), m_port(r), STEPS, DNP_EV_TX_DONE);
	for (unsigned r = 1; r < nmem; r++)
		assert_int_equal(dnp_engine_submit(nodes[m_node(r)].e, m_port(r), &a, now), 0);
	expect_all(DNP_EV_TX_DONE, 0, DNP_OP_ALLREDUCE);
	uint8_t ref[16];
	reference(DNP_RED_SUM, DNP_TYPE_INT32, 4, 9, ref);
	for (unsigned r = 0; r < nmem; r++)
		assert_memory_equal(dst_of(r), ref, 16);
}

/* What a member asks wrongly ends in an ERROR with the errno coll.h names. */
static void test_coll_errors(void **state)
{
	setup_nodes(2);
	struct dnp_cmd c = coll_cmd(DNP_OP_BARRIER, 0, 0, 0, 0, 1);

	/* no group yet */
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_error(0, 0, -ENOENT);
	/* a member list without us, with a duplicate, outside the torus */
	struct dnp_coll_member m[3] = { { 1, 0, 0, 0 }, { 1, 0, 0, 1 }, { 1, 0, 0, 1 } };
	memcpy(nodes[0].mem[0], m, sizeof(m));
	struct dnp_cmd j = coll_cmd(DNP_OP_COLL_JOIN, 0, MEMBERS_VA, 0, 8, 2);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &j, now), 0);
	expect_error(0, 0, -ENOENT);
	m[0].x = 0;
	memcpy(nodes[0].mem[0], m, sizeof(m));
	j.len = 12;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &j, now), 0);
	expect_error(0, 0, -EINVAL);
	m[2].x = 9;
	memcpy(nodes[0].mem[0], m, sizeof(m));
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &j, now), 0);
	expect_error(0, 0, -EINVAL);
	/* bad commands: SRC_EVENT, BAND on floats, length not a multiple, too long */
	join(4);
	struct dnp_cmd bad =
		coll_cmd(DNP_OP_ALLREDUCE, DNP_COLL_PARAM(DNP_RED_BAND, DNP_TYPE_FLOAT, 0), SRC_VA,
			 DST_VA, 8, 3);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &bad, now), 0);
	expect_error(0, 0, -EINVAL);
	bad.coll_param = DNP_COLL_PARAM(DNP_RED_SUM, DNP_TYPE_DOUBLE, 0);
	bad.len = 12;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &bad, now), 0);
	expect_error(0, 0, -EINVAL);
	bad.len = DNP_COLL_MAX_BYTES + 8;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &bad, now), 0);
	expect_error(0, 0, -EMSGSIZE);
	bad.len = 8;
	bad.flags = DNP_CMD_F_SRC_EVENT;
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &bad, now), 0);
	expect_error(0, 0, -EINVAL);
	/* joined twice; a root outside the group */
	j.len = 4 * sizeof(struct dnp_coll_member);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &j, now), 0);
	expect_error(0, 0, -EEXIST);
	struct dnp_cmd bc = coll_cmd(DNP_OP_BCAST, DNP_COLL_PARAM(0, 0, 4), SRC_VA, 0, 8, 4);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &bc, now), 0);
	expect_error(0, 0, -EINVAL);
	/* a second collective while the first runs */
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_error(0, 0, -EBUSY);
	/* the others run another collective than member 0's barrier */
	struct dnp_cmd other =
		coll_cmd(DNP_OP_ALLREDUCE, DNP_COLL_PARAM(DNP_RED_SUM, DNP_TYPE_INT32, 0), SRC_VA,
			 DST_VA, 4, 6);
	for (unsigned r = 1; r < nmem; r++)
		assert_int_equal(dnp_engine_submit(nodes[m_node(r)].e, m_port(r), &other, now), 0);
	expect_error(0, 0, -EBADMSG);
	expect_error(0, 1, -EBADMSG);
}

/* Collectives switched off: every collective command fails -EOPNOTSUPP. */
static void test_coll_off(void **state)
{
	struct dnp_engine_conf c;
	struct dnp_engine *e;

	setup_nodes(1);
	dnp_engine_conf_default(&c);
	c.coll_groups = 0;
	c.mem = &ops;
	c.mem_ctx = &nodes[0];
	assert_int_equal(dnp_engine_create(&c, 0, &e), 0);
	assert_int_equal(dnp_engine_port_open(e, 0), 0);
	struct dnp_cmd b = coll_cmd(DNP_OP_BARRIER, 0, 0, 0, 0, 1);
	struct dnp_event ev;
	assert_int_equal(dnp_engine_submit(e, 0, &b, 0), 0);
	assert_int_equal(dnp_engine_poll_events(e, 0, &ev, 1), 1);
	assert_int_equal(ev.type, DNP_EV_ERROR);
	assert_int_equal(ev.status, -EOPNOTSUPP);
	dnp_engine_destroy(e);
}

/*
 * A member's node stops mid-collective (its engine no longer runs): every
 * survivor's collective ends with -ETIMEDOUT at the command deadline, and
 * none of them completes it.
 */
static void test_coll_member_dies(void **state)
{
	t_cmd = 3000;
	setup_nodes(4);
	join(8);
	struct dnp_cmd c =
		coll_cmd(DNP_OP_ALLREDUCE, DNP_COLL_PARAM(DNP_RED_SUM, DNP_TYPE_INT64, 0), SRC_VA,
			 DST_VA, 64, 9);
	hold_node = 3; /* members 6 and 7 */
	for (unsigned r = 0; r < 6; r++)
		assert_int_equal(dnp_engine_submit(nodes[m_node(r)].e, m_port(r), &c, now), 0);
	for (unsigned r = 0; r < 6; r++) {
		struct dnp_event ev =
			expect_event_nolink(m_node(r), m_port(r), 2 * 3000, DNP_EV_ERROR);
		assert_int_equal(ev.status, -ETIMEDOUT);
		assert_int_equal(ev.op, DNP_OP_ALLREDUCE);
	}
	/* the survivors' group still works among the same members once the node is back */
	hold_node = -1;
	nmem = 8;
	/*
	 * The stopped members catch up with the failed one: they may even
	 * complete it (every packet they need was sent before the others gave
	 * up), or time out too; either way it ends once.
	 */
	for (unsigned r = 6; r < 8; r++)
		assert_int_equal(dnp_engine_submit(nodes[m_node(r)].e, m_port(r), &c, now), 0);
	for (unsigned r = 6; r < 8; r++) {
		struct dnp_event ev;
		assert_true(next_event_nolink(m_node(r), m_port(r), &ev, 2 * 3000));
		assert_true(ev.type == DNP_EV_TX_DONE || ev.status == -ETIMEDOUT);
	}
	allreduce_check(DNP_RED_SUM, DNP_TYPE_INT64, 8, 1);
}

static unsigned forged; /* COLL frames the forger below rewrote */

/*
 * A forger on node 0's links: the first COLL fragment at offset 4096 it
 * sees goes on with offset 0 (a fragment already sent) and without LAST, its
 * CRC made good again, so the frame is well formed and the link takes it.
 */
static void forge_offset(unsigned from, uint8_t *f, uint32_t len)
{
	struct dnp_pkt_hdr h;
	const uint8_t *pl;
	uint8_t *crc = f + len - DNP_WORD_BYTES;

	if (from != 0 || forged || dnp_pkt_decode(f, len, &h, &pl) < 0 || h.kind != DNP_PKT_COLL ||
	    h.offset != DNP_MAX_PAYLOAD)
		return;
	memset(f + 44, 0, 4); /* H1 offset (docs/protocol.md, "Word 2") */
	f[24] &= 0x7f;        /* H0 byte 8: not LAST (offset 0 does not end the message) */
	memset(crc, 0, 4);
	uint32_t v = dnp_crc32(0, f, len);
	for (unsigned i = 0; i < 4; i++)
		crc[i] = (uint8_t)(v >> (8 * i));
	forged++;
}

/*
 * A fragment from a link whose offset repeats one already received (a
 * forged frame with a good CRC): the receiver drops it, so no member ends
 * with bytes nobody sent; the step misses its real fragment and ends at the
 * deadline instead. Without the check the step counted two fragments and
 * completed with a stale half (0xee, below).
 */
static void test_coll_forged_fragment(void **state)
{
	size_t count = 2 * DNP_MAX_PAYLOAD / 8; /* two fragments */
	static uint8_t ref[2 * DNP_MAX_PAYLOAD];

	t_cmd = 3000;
	setup_nodes(2);
	join(4); /* ranks 0, 1 on node 0 and 2, 3 on node 1: step 2 crosses the link */
	for (unsigned r = 0; r < nmem; r++) {
		for (size_t i = 0; i < count; i++)
			coll_ref_put(src_of(r) + i * 8, DNP_TYPE_INT64, coll_ref_val(r, i, 5));
		memset(dst_of(r), 0xee, count * 8);
	}
	reference(DNP_RED_SUM, DNP_TYPE_INT64, count, 5, ref);
	forged = 0;
	pump_mangle = forge_offset;
	struct dnp_cmd c =
		coll_cmd(DNP_OP_ALLREDUCE, DNP_COLL_PARAM(DNP_RED_SUM, DNP_TYPE_INT64, 0), SRC_VA,
			 DST_VA, count * 8, 6);
	submit_all(&c);
	unsigned failed = 0;

	for (unsigned r = 0; r < nmem; r++) {
		struct dnp_event ev;

		assert_true(next_event_nolink(m_node(r), m_port(r), &ev, 2 * 3000));
		if (ev.type == DNP_EV_TX_DONE) {
			assert_memory_equal(dst_of(r), ref, count * 8);
		} else {
			assert_int_equal(ev.type, DNP_EV_ERROR);
			assert_int_equal(ev.status, -ETIMEDOUT);
			failed++;
		}
	}
	assert_int_equal(forged, 1);
	assert_true(failed > 0); /* the real fragment was replaced: someone misses it */
}

/*
 * A member's application goes away (its port closes) mid-collective: the
 * others fail at once with -ECONNABORTED, as does any later collective of
 * the group, with no deadline set at all.
 */
static void test_coll_member_leaves(void **state)
{
	setup_nodes(4);
	join(8);
	struct dnp_cmd c = coll_cmd(DNP_OP_BARRIER, 0, 0, 0, 0, 9);
	for (unsigned r = 0; r < 7; r++)
		assert_int_equal(dnp_engine_submit(nodes[m_node(r)].e, m_port(r), &c, now), 0);
	pump(500);
	assert_int_equal(dnp_engine_port_close(nodes[3].e, 1), 0); /* member 7 */
	for (unsigned r = 0; r < 7; r++)
		expect_error(m_node(r), m_port(r), -ECONNABORTED);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &c, now), 0);
	expect_error(0, 0, -ECONNABORTED);
	/* leaving a group frees its place: the same id can be joined again */
	struct dnp_cmd l = coll_cmd(DNP_OP_COLL_LEAVE, 0, 0, 0, 0, 3);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &l, now), 0);
	expect_event_nolink(0, 0, STEPS, DNP_EV_TX_DONE);
	assert_int_equal(dnp_engine_submit(nodes[0].e, 0, &l, now), 0);
	expect_error(0, 0, -ENOENT);
}

/*
 * Collectives above a chunk (coll.h, "Pipelining"): every reduction and
 * type at 20500 elements (82 KB of int32 in 6 chunks with a short last one,
 * 164 KB of 64-bit ones in 11, more than the window), then 1 MiB of doubles
 * on 7 members, against the reference. A chunk's bytes sent to another
 * chunk's place, or a chunk never run, fails here.
 */
static void test_coll_allreduce_large(void **state)
{
	every_op_and_type(3, 6, 20500);
	allreduce_check(DNP_RED_SUM, DNP_TYPE_DOUBLE, BIG / 8, 17);
	teardown(state);
	setup_nodes(4);
	join(7);
	allreduce_check(DNP_RED_SUM, DNP_TYPE_DOUBLE, BIG / 8, 18);
	allreduce_check(DNP_RED_MIN, DNP_TYPE_INT32, (BIG - 12) / 4, 19);
}

/* Broadcast of 300000 bytes (19 chunks) from several roots; the source is left alone. */
static void test_coll_bcast_large(void **state)
{
	setup_nodes(3);
	join(6);
	for (unsigned root = 0; root < nmem; root += 3)
		bcast_check(root, 300000, root + 21);
}

/*
 * Large collectives back to back, each member starting the next one as soon
 * as its own last one ended (so early members' chunks of the next
 * collective reach members still in the last one), while node 1 is held for
 * a while at the start: 4 allreduces of 200 KB (13 chunks each) then a 16 KB
 * barrier-like allreduce, all with one event each and the right bytes.
 */
static void test_coll_large_stream(void **state)
{
	enum {
		ROUNDS = 5
	};
	const size_t count[ROUNDS] = { 25000, 25000, 3, 25000, 25000 };
	static uint8_t ref[ROUNDS][200000];
	unsigned round[8] = { 0 }, left = 0;

	setup_nodes(4);
	join(8);
	for (unsigned k = 0; k < ROUNDS; k++) {
		for (unsigned r = 0; r < nmem; r++)
			for (size_t i = 0; i < count[k]; i++)
				coll_ref_put(src_of(r) + k * 200000 + i * 8, DNP_TYPE_INT64,
					     coll_ref_val(r, i, 30 + k));
		reference(DNP_RED_SUM, DNP_TYPE_INT64, count[k], 30 + k, ref[k]);
	}
	hold_node = 1;
	for (unsigned r = 0; r < nmem; r++) {
		struct dnp_cmd c =
			coll_cmd(DNP_OP_ALLREDUCE, DNP_COLL_PARAM(DNP_RED_SUM, DNP_TYPE_INT64, 0),
				 SRC_VA, DST_VA, count[0] * 8, 0);
		assert_int_equal(dnp_engine_submit(nodes[m_node(r)].e, m_port(r), &c, now), 0);
	}
	for (unsigned step = 0; left < nmem * ROUNDS && step < 20 * STEPS; step++) {
		if (step == 3000)
			hold_node = -1;
		pump(1);
		for (unsigned r = 0; r < nmem; r++) {
			struct dnp_event ev;
			unsigned k = round[r];

			if (dnp_engine_poll_events(nodes[m_node(r)].e, m_port(r), &ev, 1) != 1 ||
			    ev.type == DNP_EV_LINK)
				continue;
			assert_int_equal(ev.type, DNP_EV_TX_DONE);
			assert_int_equal(ev.cookie, k);
			assert_memory_equal(dst_of(r) + k * 200000, ref[k], count[k] * 8);
			left++;
			if (++round[r] == ROUNDS)
				continue;
			k++;
			struct dnp_cmd c = coll_cmd(
				DNP_OP_ALLREDUCE, DNP_COLL_PARAM(DNP_RED_SUM, DNP_TYPE_INT64, 0),
				SRC_VA + k * 200000, DST_VA + k * 200000, count[k] * 8, k);
			assert_int_equal(dnp_engine_submit(nodes[m_node(r)].e, m_port(r), &c, now),
					 0);
		}
	}
	assert_int_equal(left, nmem * ROUNDS);
}

/*
 * A member's node stops in the middle of a 1 MiB allreduce (some chunks
 * done, others not): every survivor ends it with -ETIMEDOUT at the deadline,
 * one event each; a member that leaves mid-way ends it at once on the rest
 * with -ECONNABORTED.
 */
static void test_coll_large_faults(void **state)
{
	struct dnp_coll_stats st;
	struct dnp_event ev;

	t_cmd = 30000;
	setup_nodes(4);
	join(8);
	struct dnp_cmd c =
		coll_cmd(DNP_OP_ALLREDUCE, DNP_COLL_PARAM(DNP_RED_SUM, DNP_TYPE_DOUBLE, 0), SRC_VA,
			 DST_VA, BIG, 9);
	submit_all(&c);
	pump(400); /* under way: some chunks done, not all */
	dnp_engine_coll_stats(nodes[0].e, &st);
	assert_true(st.pkts_rx > 0);
	for (unsigned r = 0; r < nmem; r++)
		assert_int_equal(dnp_engine_poll_events(nodes[m_node(r)].e, m_port(r), &ev, 1), 0);
	hold_node = 3; /* members 6 and 7 */
	for (unsigned r = 0; r < 6; r++) {
		ev = expect_event_nolink(m_node(r), m_port(r), 2 * 30000, DNP_EV_ERROR);
		assert_int_equal(ev.status, -ETIMEDOUT);
		assert_int_equal(ev.cookie, 9);
		assert_int_equal(dnp_engine_poll_events(nodes[m_node(r)].e, m_port(r), &ev, 1), 0);
	}
	teardown(state);
	setup_nodes(4);
	join(8);
	submit_all(&c);
	pump(400);
	assert_int_equal(dnp_engine_port_close(nodes[3].e, 1), 0); /* member 7 */
	for (unsigned r = 0; r < 7; r++) {
		expect_error(m_node(r), m_port(r), -ECONNABORTED);
		pump(100);
		assert_int_equal(dnp_engine_poll_events(nodes[m_node(r)].e, m_port(r), &ev, 1), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_coll_allreduce_pow2, teardown),
		cmocka_unit_test_teardown(test_coll_allreduce_fold, teardown),
		cmocka_unit_test_teardown(test_coll_allreduce_single, teardown),
		cmocka_unit_test_teardown(test_coll_allreduce_64k, teardown),
		cmocka_unit_test_teardown(test_coll_float_identical, teardown),
		cmocka_unit_test_teardown(test_coll_bcast, teardown),
		cmocka_unit_test_teardown(test_coll_bcast_run_ahead, teardown),
		cmocka_unit_test_teardown(test_coll_barrier, teardown),
		cmocka_unit_test_teardown(test_coll_run_ahead, teardown),
		cmocka_unit_test_teardown(test_coll_errors, teardown),
		cmocka_unit_test_teardown(test_coll_off, teardown),
		cmocka_unit_test_teardown(test_coll_member_dies, teardown),
		cmocka_unit_test_teardown(test_coll_member_leaves, teardown),
		cmocka_unit_test_teardown(test_coll_forged_fragment, teardown),
		cmocka_unit_test_teardown(test_coll_allreduce_large, teardown),
		cmocka_unit_test_teardown(test_coll_bcast_large, teardown),
		cmocka_unit_test_teardown(test_coll_large_stream, teardown),
		cmocka_unit_test_teardown(test_coll_large_faults, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
