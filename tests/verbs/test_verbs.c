/* SPDX-License-Identifier: MIT */
/*
 * test_verbs — the parts of the verbs backend that need no RDMA device: the
 * registry knows "verbs", open rejects bad configurations and options and
 * reports a missing device clearly, and the handshake parser
 * (verbs_setup.c, included: white box) accepts exactly the well-formed hello
 * of a matching peer. Traffic over real queue pairs is suite 'verbs'.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../../transport/verbs_setup.c"
/* dnpctl stats --json, for the backend's line (white box too) */
#include "../../dnp-core/dnpd/dnpctl_json.c"

#include <sys/socket.h>

static void test_verbs_registry(void **state)
{
	(void)state;
	assert_ptr_equal(dnp_transport_find("verbs"), &dnp_transport_verbs);
}

static void test_verbs_open_rejects(void **state)
{
	struct dnp_transport_conf c = {
		.local = "127.0.0.1:47990",
		.remote = "127.0.0.1:47991",
		.frame_max = 4160,
		.depth = 64,
	};
	struct dnp_transport *t = NULL;

	(void)state;
	c.depth = 63;
	assert_int_equal(dnp_transport_verbs.open(&c, &t), -EINVAL);
	c.depth = 64;
	c.frame_max = 0;
	assert_int_equal(dnp_transport_verbs.open(&c, &t), -EINVAL);
	c.frame_max = 4160;
	c.options = "qp=ud";
	assert_int_equal(dnp_transport_verbs.open(&c, &t), -EINVAL);
	c.options = "gid=x";
	assert_int_equal(dnp_transport_verbs.open(&c, &t), -EINVAL);
	c.options = "port=0";
	assert_int_equal(dnp_transport_verbs.open(&c, &t), -EINVAL);
	c.options = NULL;
	c.local = "127.0.0.1";
	assert_int_equal(dnp_transport_verbs.open(&c, &t), -EINVAL);
	assert_null(t);
}

/* No device of that name (and, on hosts without RDMA, none at all): -ENODEV. */
static void test_verbs_open_no_device(void **state)
{
	struct dnp_transport_conf c = {
		.local = "127.0.0.1:47990",
		.remote = "127.0.0.1:47991",
		.frame_max = 4160,
		.depth = 64,
		.options = "dev=no_such_rdma_dev",
	};
	struct dnp_transport *t = NULL;

	(void)state;
	assert_int_equal(dnp_transport_verbs.open(&c, &t), -ENODEV);
	assert_null(t);
}

/* A hello as a peer would send it (network byte order). */
static struct dnp_verbs_hello wire_hello(uint8_t qp_type, uint32_t frame_max)
{
	struct dnp_verbs_hello h = {
		.magic = htonl(DNP_VERBS_MAGIC),
		.version = htons(DNP_VERBS_VERSION),
		.qp_type = qp_type,
		.mtu = IBV_MTU_1024,
		.nonce = htobe64(0x1234),
		.peer = htobe64(0x99),
		.qpn = htonl(17),
		.psn = htonl(0xabcdef),
		.frame_max = htonl(frame_max),
		.lid = htons(3),
		.flags = htons(DNP_VERBS_HELLO_ACKED),
	};

	h.gid[15] = 7;
	return h;
}

static void test_verbs_hello_parse(void **state)
{
	struct dnp_verbs v = { .qp_type = IBV_QPT_UC, .frame_max = 4160 };
	struct dnp_verbs_hello h, in;
	int sv[2];
	uint8_t junk[200] = { 0 };

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, sv), 0);
	v.hfd = sv[1];
	assert_int_equal(dnp_verbs_hs_recv(&v, &in), 0); /* nothing waiting */

	h = wire_hello(IBV_QPT_UC, 4160);
	assert_int_equal(send(sv[0], &h, sizeof(h), 0), (ssize_t)sizeof(h));
	assert_int_equal(dnp_verbs_hs_recv(&v, &in), 1);
	assert_int_equal(in.nonce, 0x1234);
	assert_int_equal(in.peer, 0x99);
	assert_int_equal(in.qpn, 17);
	assert_int_equal(in.psn, 0xabcdef);
	assert_int_equal(in.lid, 3);
	assert_int_equal(in.flags, DNP_VERBS_HELLO_ACKED);
	assert_int_equal(in.gid[15], 7);

	/* Short, long, wrong magic, QPN beyond 24 bits, bad MTU, zero nonce. */
	assert_int_equal(send(sv[0], &h, sizeof(h) - 1, 0), (ssize_t)sizeof(h) - 1);
	assert_int_equal(dnp_verbs_hs_recv(&v, &in), -EPROTO);
	assert_int_equal(send(sv[0], junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
	assert_int_equal(dnp_verbs_hs_recv(&v, &in), -EPROTO);
	h.magic = 0;
	send(sv[0], &h, sizeof(h), 0);
	assert_int_equal(dnp_verbs_hs_recv(&v, &in), -EPROTO);
	h = wire_hello(IBV_QPT_UC, 4160);
	h.qpn = htonl(1u << 24);
	send(sv[0], &h, sizeof(h), 0);
	assert_int_equal(dnp_verbs_hs_recv(&v, &in), -EPROTO);
	h = wire_hello(IBV_QPT_UC, 4160);
	h.mtu = 9;
	send(sv[0], &h, sizeof(h), 0);
	assert_int_equal(dnp_verbs_hs_recv(&v, &in), -EPROTO);
	h = wire_hello(IBV_QPT_UC, 4160);
	h.nonce = 0;
	send(sv[0], &h, sizeof(h), 0);
	assert_int_equal(dnp_verbs_hs_recv(&v, &in), -EPROTO);
	/* A peer with RC QPs, or another frame size, is not connected to. */
	h = wire_hello(IBV_QPT_RC, 4160);
	send(sv[0], &h, sizeof(h), 0);
	assert_int_equal(dnp_verbs_hs_recv(&v, &in), -EPROTO);
	h = wire_hello(IBV_QPT_UC, 2048);
	send(sv[0], &h, sizeof(h), 0);
	assert_int_equal(dnp_verbs_hs_recv(&v, &in), -EPROTO);
	assert_int_equal(v.st.hello_bad, 8);
	close(sv[0]);
	close(sv[1]);
}

/*
 * The backend's counters (ops->counters, dnpctl stats' "link DIR verbs ..."
 * line): every counter by name, the QP type, a cut at the caller's capacity;
 * and the JSON of dnpctl stats --json gives them an object under the link.
 */
static void test_verbs_counters(void **state)
{
	struct dnp_verbs v = { .base.ops = &dnp_transport_verbs, .qp_type = IBV_QPT_RC };
	const struct dnp_transport *t = (const struct dnp_transport *)(const void *)&v;
	char buf[512], *js = NULL;
	size_t n, jn = 0;
	FILE *f;

	(void)state;
	assert_non_null(dnp_transport_verbs.counters);
	v.connected = true;
	v.st.tx_frames = 11;
	v.st.tx_completions = 10;
	v.st.tx_errors = 1;
	v.st.rx_errors = 2;
	v.st.connect_errors = 3;
	v.st.cq_arms = 4;
	v.st.cq_events = 5;
	v.st.resets = 6;
	n = dnp_transport_verbs.counters(t, buf, sizeof(buf));
	assert_int_equal(n, strlen(buf));
	assert_non_null(strstr(buf, "qp rc qpn 0 connected 1 tx_frames 11 "));
	assert_non_null(strstr(buf, " tx_completions 10 tx_errors 1 "));
	assert_non_null(strstr(buf, " rx_errors 2 "));
	assert_non_null(strstr(buf, " connect_errors 3 resets 6 cq_arms 4 cq_events 5 "));
	assert_int_equal(dnp_transport_verbs.counters(t, buf, 8), 7);
	assert_string_equal(buf, "qp rc q");

	f = open_memstream(&js, &jn);
	assert_non_null(f);
	assert_int_equal(dnpctl_stats_json("link X+ state UP local a remote b\n"
					   "link X+ verbs qp uc qpn 17 connected 1 cq_arms 4\n",
					   f),
			 0);
	fclose(f);
	assert_non_null(
		strstr(js, "\"X+\":{\"state\":\"UP\",\"local\":\"a\",\"remote\":\"b\","
			   "\"verbs\":{\"qp\":\"uc\",\"qpn\":17,\"connected\":1,\"cq_arms\":4}}"));
	assert_non_null(strstr(js, "\"other\":[]"));
	free(js);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verbs_registry),
		cmocka_unit_test(test_verbs_open_rejects),
		cmocka_unit_test(test_verbs_open_no_device),
		cmocka_unit_test(test_verbs_hello_parse),
		cmocka_unit_test(test_verbs_counters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
