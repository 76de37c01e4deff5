/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for dnp-core/cmd: every reason dnp_cmd_check rejects a command
 * slot written by an application, the accepted boundaries, and the names.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cmd.h"
#include "test_names.h"

#define PORTS 4u

/* A 4x2x3 torus written directly: the checks only read dim[]. */
static const struct dnp_torus torus = { .dim = { 4, 2, 3 } };

static struct dnp_cmd good_cmd(unsigned op)
{
	struct dnp_cmd c;

	memset(&c, 0, sizeof(c));
	c.op = (uint8_t)op;
	c.dst_port = 1;
	c.dst_x = 3;
	c.dst_y = 1;
	c.dst_z = 2;
	c.remote_key = op == DNP_OP_SEND ? 0 : 0x1234;
	c.remote_va = 0x7f0000000000ull;
	c.len = 65536;
	c.local_va = 0x7e0000000000ull;
	c.local_key = op == DNP_OP_GET ? 0x99 : 0;
	c.cookie = 0xfeedfacecafebeefull;
	return c;
}

static int check(const struct dnp_cmd *c)
{
	return dnp_cmd_check(c, &torus, PORTS);
}

static void test_cmd_accepts_valid(void **state)
{
	struct dnp_cmd c;

	for (unsigned op = DNP_OP_PUT; op <= DNP_OP_GET; op++) {
		c = good_cmd(op);
		assert_int_equal(check(&c), 0);
		c.len = 0;
		assert_int_equal(check(&c), 0);
		c.len = DNP_MAX_MSG;
		assert_int_equal(check(&c), 0);
		c.flags = DNP_CMD_F_NO_EVENT;
		assert_int_equal(check(&c), 0);
		c.src_port = 200; /* filled in by the daemon: not checked */
		assert_int_equal(check(&c), 0);
	}
	/* the origin and the far corner are inside */
	c = good_cmd(DNP_OP_PUT);
	c.dst_x = c.dst_y = c.dst_z = 0;
	assert_int_equal(check(&c), 0);
	/* SEND ignores remote_va, even one that would wrap */
	c = good_cmd(DNP_OP_SEND);
	c.remote_va = UINT64_MAX;
	assert_int_equal(check(&c), 0);
	/* a range ending exactly at the top of the address space is fine */
	c = good_cmd(DNP_OP_PUT);
	c.local_va = UINT64_MAX - 9;
	c.len = 9;
	assert_int_equal(check(&c), 0);
}

static void test_cmd_rejects_unknown_op(void **state)
{
	struct dnp_cmd c = good_cmd(DNP_OP_PUT);

	c.op = 0;
	assert_int_equal(check(&c), -EINVAL);
	c.op = 4;
	assert_int_equal(check(&c), -EINVAL);
	c.op = 0xff;
	assert_int_equal(check(&c), -EINVAL);
}

static void test_cmd_rejects_unknown_flags(void **state)
{
	struct dnp_cmd c = good_cmd(DNP_OP_PUT);

	c.len = 8; /* short enough for DNP_CMD_F_INLINE */
	for (unsigned bit = 0; bit < 8; bit++) {
		c.flags = (uint8_t)(1u << bit);
		assert_int_equal(check(&c), c.flags & DNP_CMD_F_ALL ? 0 : -EINVAL);
	}
}

static void test_cmd_rejects_reserved(void **state)
{
	struct dnp_cmd c;

	c = good_cmd(DNP_OP_PUT);
	c.tc = DNP_TC_MAX + 1; /* a class beyond the top one */
	assert_int_equal(check(&c), -EINVAL);
	c.tc = 0xff;
	assert_int_equal(check(&c), -EINVAL);
	for (unsigned tc = 0; tc <= DNP_TC_MAX; tc++) {
		c.tc = (uint8_t)tc;
		assert_int_equal(check(&c), 0);
	}
	c = good_cmd(DNP_OP_PUT);
	c = good_cmd(DNP_OP_PUT);
	c.rsvd1 = 0x8000u;
	assert_int_equal(check(&c), -EINVAL);
	c = good_cmd(DNP_OP_PUT);
	c.rsvd1b = 1;
	assert_int_equal(check(&c), -EINVAL);
	c = good_cmd(DNP_OP_GET);
	c.rsvd2 = 1;
	assert_int_equal(check(&c), -EINVAL);
	c = good_cmd(DNP_OP_SEND);
	c.rsvd3 = 1ull << 63;
	assert_int_equal(check(&c), -EINVAL);
}

static void test_cmd_rejects_len_above_max(void **state)
{
	struct dnp_cmd c = good_cmd(DNP_OP_SEND);

	c.len = DNP_MAX_MSG + 1;
	c.local_va = 0;
	assert_int_equal(check(&c), -EINVAL);
	c.len = UINT64_MAX;
	assert_int_equal(check(&c), -EINVAL);
}

static void test_cmd_rejects_wrapping_ranges(void **state)
{
	struct dnp_cmd c;

	for (unsigned op = DNP_OP_PUT; op <= DNP_OP_GET; op++) {
		c = good_cmd(op);
		c.local_va = UINT64_MAX - 9;
		c.len = 10;
		assert_int_equal(check(&c), -EINVAL);
	}
	c = good_cmd(DNP_OP_PUT);
	c.remote_va = UINT64_MAX - 100;
	c.len = 200;
	assert_int_equal(check(&c), -EINVAL);
	c = good_cmd(DNP_OP_GET);
	c.remote_va = UINT64_MAX;
	c.len = 1;
	assert_int_equal(check(&c), -EINVAL);
}

static void test_cmd_rejects_send_with_key(void **state)
{
	struct dnp_cmd c = good_cmd(DNP_OP_SEND);

	c.remote_key = 7;
	assert_int_equal(check(&c), -EINVAL);
}

static void test_cmd_rejects_bad_port(void **state)
{
	struct dnp_cmd c = good_cmd(DNP_OP_PUT);

	c.dst_port = PORTS - 1;
	assert_int_equal(check(&c), 0);
	c.dst_port = PORTS;
	assert_int_equal(check(&c), -EINVAL);
	c.dst_port = 0xff;
	assert_int_equal(check(&c), -EINVAL);
	c.dst_port = 0;
	assert_int_equal(dnp_cmd_check(&c, &torus, 0), -EINVAL);
}

static void test_cmd_rejects_outside_torus(void **state)
{
	struct dnp_cmd c;

	c = good_cmd(DNP_OP_PUT);
	c.dst_x = 4;
	assert_int_equal(check(&c), -EHOSTUNREACH);
	c = good_cmd(DNP_OP_SEND);
	c.dst_y = 2;
	assert_int_equal(check(&c), -EHOSTUNREACH);
	c = good_cmd(DNP_OP_GET);
	c.dst_z = 3;
	assert_int_equal(check(&c), -EHOSTUNREACH);
	c.dst_z = 0xff;
	assert_int_equal(check(&c), -EHOSTUNREACH);
	/* a 256-wide dimension admits every coordinate */
	{
		const struct dnp_torus big = { .dim = { 256, 256, 256 } };

		c.dst_x = c.dst_y = c.dst_z = 255;
		assert_int_equal(dnp_cmd_check(&c, &big, PORTS), 0);
	}
}

static void test_cmd_counter_field(void **state)
{
	struct dnp_cmd c;

	for (unsigned op = DNP_OP_PUT; op <= DNP_OP_GET; op++) {
		c = good_cmd(op);
		c.cntr = 1; /* counter 0 */
		assert_int_equal(check(&c), 0);
		c.cntr = DNP_CNTR_MAX; /* the last counter */
		c.flags = DNP_CMD_F_NO_EVENT;
		assert_int_equal(check(&c), 0);
		c.cntr = DNP_CNTR_MAX + 1;
		assert_int_equal(check(&c), -EINVAL);
		c.cntr = 0xff;
		assert_int_equal(check(&c), -EINVAL);
	}
}

static void test_cmd_inline(void **state)
{
	struct dnp_cmd c = good_cmd(DNP_OP_PUT);
	const uint8_t src[DNP_CMD_INLINE_MAX + 1] = "0123456789abcdefghijklmn";
	uint8_t out[DNP_CMD_INLINE_MAX];

	c.flags = DNP_CMD_F_INLINE | DNP_CMD_F_NO_EVENT;
	c.len = DNP_CMD_INLINE_MAX;
	dnp_cmd_inline_set(&c, src, DNP_CMD_INLINE_MAX);
	/* payload bytes fill local_va, local_key, rsvd2 and rsvd3: accepted as data */
	assert_true(c.rsvd2 != 0 && c.rsvd3 != 0 && c.local_va != 0);
	assert_int_equal(check(&c), 0);
	assert_int_equal(c.cookie, 0xfeedfacecafebeefull); /* the cookie is left alone */
	memset(out, 0, sizeof(out));
	dnp_cmd_inline_get(&c, out, DNP_CMD_INLINE_MAX);
	assert_memory_equal(out, src, DNP_CMD_INLINE_MAX);
	/* a payload that would "wrap" as an address is data: fine */
	c.local_va = UINT64_MAX;
	assert_int_equal(check(&c), 0);
	c.len = 0;
	assert_int_equal(check(&c), 0);
	c.len = DNP_CMD_INLINE_MAX + 1;
	assert_int_equal(check(&c), -EINVAL);
	/* PUT only, and no source to give back */
	c.len = 8;
	c.flags = DNP_CMD_F_INLINE | DNP_CMD_F_SRC_EVENT;
	assert_int_equal(check(&c), -EINVAL);
	c = good_cmd(DNP_OP_SEND);
	c.len = 8;
	c.flags = DNP_CMD_F_INLINE;
	assert_int_equal(check(&c), -EINVAL);
	c = good_cmd(DNP_OP_GET);
	c.len = 8;
	c.flags = DNP_CMD_F_INLINE;
	assert_int_equal(check(&c), -EINVAL);
	/* without the flag, the same bytes in rsvd2/rsvd3 are refused */
	c = good_cmd(DNP_OP_PUT);
	c.len = 8;
	dnp_cmd_inline_set(&c, src, DNP_CMD_INLINE_MAX);
	assert_int_equal(check(&c), -EINVAL);
}

static void test_cmd_names(void **state)
{
	static const struct test_name ops[] = {
		{ DNP_OP_PUT, "PUT" },
		{ DNP_OP_SEND, "SEND" },
		{ DNP_OP_GET, "GET" },
		{ 0, "?" },
		{ 4, "?" },
		{ ~0u, "?" },
	};
	static const struct test_name evs[] = {
		{ DNP_EV_TX_DONE, "TX_DONE" },   { DNP_EV_RX_PUT, "RX_PUT" },
		{ DNP_EV_RX_SEND, "RX_SEND" },   { DNP_EV_GET_DONE, "GET_DONE" },
		{ DNP_EV_ERROR, "ERROR" },       { DNP_EV_LINK, "LINK" },
		{ DNP_EV_RX_ERROR, "RX_ERROR" }, { DNP_EV_OVERFLOW, "OVERFLOW" },
		{ DNP_EV_TX_READ, "TX_READ" },   { 0, "?" },
		{ DNP_EV_TX_READ + 1, "?" },
	};

	TEST_NAMES_CHECK(dnp_op_name, ops);
	TEST_NAMES_CHECK(dnp_ev_type_name, evs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cmd_accepts_valid),
		cmocka_unit_test(test_cmd_rejects_unknown_op),
		cmocka_unit_test(test_cmd_rejects_unknown_flags),
		cmocka_unit_test(test_cmd_rejects_reserved),
		cmocka_unit_test(test_cmd_rejects_len_above_max),
		cmocka_unit_test(test_cmd_rejects_wrapping_ranges),
		cmocka_unit_test(test_cmd_rejects_send_with_key),
		cmocka_unit_test(test_cmd_rejects_bad_port),
		cmocka_unit_test(test_cmd_rejects_outside_torus),
		cmocka_unit_test(test_cmd_counter_field),
		cmocka_unit_test(test_cmd_inline),
		cmocka_unit_test(test_cmd_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
