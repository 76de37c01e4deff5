/* SPDX-License-Identifier: MIT */
/*
 * test_dpdk_loop — the dpdk transport's framing, fragmentation and
 * reassembly without root or namespaces: one link on a net_ring port, whose
 * TX ring is its own RX ring (what the link sends, it receives). Hand-made
 * Ethernet frames injected into the same port check that malformed,
 * duplicated, reordered and incomplete fragments are dropped or reassembled
 * as docs/dpdk.md says. Exits 77 when the EAL or the ring PMD is unavailable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dpdk.h"

#define FRAME_MAX 4160u

static struct rte_mempool *inj_pool;
static uint8_t buf[FRAME_MAX];

static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 31u + i * 7u + (i >> 8));
}

static struct dnp_transport *open_loop(const char *options)
{
	struct dnp_transport_conf c = {
		.local = "net_ring0",
		.remote = "",
		.frame_max = FRAME_MAX,
		.depth = 64,
		.options = options,
	};
	struct dnp_transport *t = NULL;

	assert_int_equal(dnp_transport_dpdk.open(&c, &t), 0);
	return t;
}

/* Receives everything pending (the ring PMD delivers at once). */
static int rx_all(struct dnp_transport *t, struct dnp_rx_frame *f, unsigned n)
{
	return dnp_transport_dpdk.rx_burst(t, f, n);
}

static void roundtrip_sizes(const char *options, uint32_t expect_mtu, uint32_t step)
{
	struct dnp_transport *t = open_loop(options);
	struct dnp_dpdk_stats st;
	uint64_t eth = 0;

	assert_int_equal(dnp_dpdk_eth_mtu(t), expect_mtu);
	assert_int_equal(dnp_transport_dpdk.mtu(t), FRAME_MAX);
	assert_true(dnp_transport_dpdk.up(t));
	for (uint32_t len = 1; len <= FRAME_MAX; len += step) {
		struct dnp_tx_frame tx = { .data = buf, .len = len };
		struct dnp_rx_frame rx[4];
		uint32_t payload = expect_mtu - DNP_DPDK_FHDR_LEN;

		fill(buf, len, len);
		assert_int_equal(dnp_transport_dpdk.tx_burst(t, &tx, 1), 1);
		eth += (len + payload - 1) / payload;
		assert_int_equal(rx_all(t, rx, 4), 1);
		assert_int_equal(rx[0].len, len);
		assert_memory_equal(rx[0].data, buf, len);
	}
	dnp_dpdk_stats(t, &st);
	assert_int_equal(st.tx_eth, eth);
	assert_int_equal(st.rx_eth, eth);
	assert_int_equal(st.rx_bad, 0);
	dnp_transport_dpdk.close(t);
}

static void test_dpdk_jumbo_roundtrip_every_size(void **state)
{
	roundtrip_sizes("mtu=9000", 9000, 1);
}

static void test_dpdk_fragmented_roundtrip(void **state)
{
	roundtrip_sizes("mtu=1500", 1500, 7);
}

static void test_dpdk_small_mtu_many_fragments(void **state)
{
	/* 4160 bytes in 256-byte frames: 18 fragments, still one DNP frame */
	roundtrip_sizes("mtu=256", 256, 97);
}

/* A burst of mixed sizes in one call, returned in order. */
static void test_dpdk_burst_in_order(void **state)
{
	static uint8_t frames[16][FRAME_MAX];
	struct dnp_transport *t = open_loop("mtu=1500");
	struct dnp_tx_frame tx[16];
	struct dnp_rx_frame rx[32];
	int n;

	for (unsigned i = 0; i < 16; i++) {
		tx[i].len = i % 2 ? FRAME_MAX - i : 64 + i;
		tx[i].data = frames[i];
		fill(frames[i], tx[i].len, 100 + i);
	}
	assert_int_equal(dnp_transport_dpdk.tx_burst(t, tx, 16), 16);
	n = rx_all(t, rx, 32);
	assert_int_equal(n, 16);
	for (unsigned i = 0; i < 16; i++) {
		assert_int_equal(rx[i].len, tx[i].len);
		assert_memory_equal(rx[i].data, frames[i], tx[i].len);
	}
	dnp_transport_dpdk.close(t);
}

/* ---- hand-made frames ---- */

struct inj {
	uint16_t etype;
	uint8_t version, chan, idx, cnt;
	uint16_t id, total, off, len;
	uint32_t wire_len; /* 0: header + len */
	const uint8_t *data;
};

static void inject(const struct inj *j)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(inj_pool);
	struct rte_ether_hdr *eh;
	struct dnp_dpdk_fhdr *fh;
	uint32_t wire = j->wire_len ? j->wire_len : DNP_DPDK_DATA_OFF + j->len;

	assert_non_null(m);
	eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	memset(eh, 0, DNP_DPDK_DATA_OFF);
	memset(&eh->dst_addr, 0xff, 6);
	eh->ether_type = rte_cpu_to_be_16(j->etype);
	fh = (struct dnp_dpdk_fhdr *)(void *)(eh + 1);
	fh->version = j->version;
	fh->chan = j->chan;
	fh->frag_idx = j->idx;
	fh->frag_cnt = j->cnt;
	fh->frame_id = rte_cpu_to_be_16(j->id);
	fh->total_len = rte_cpu_to_be_16(j->total);
	fh->offset = rte_cpu_to_be_16(j->off);
	fh->len = rte_cpu_to_be_16(j->len);
	if (j->data && wire > DNP_DPDK_DATA_OFF)
		memcpy((uint8_t *)eh + DNP_DPDK_DATA_OFF, j->data + j->off,
		       wire - DNP_DPDK_DATA_OFF < j->len ? wire - DNP_DPDK_DATA_OFF : j->len);
	m->data_len = (uint16_t)wire;
	m->pkt_len = wire;
	assert_int_equal(rte_eth_tx_burst(0, 0, &m, 1), 1);
}

static struct inj frag(uint16_t id, uint8_t idx, uint8_t cnt, uint16_t total, uint16_t off,
		       uint16_t len, const uint8_t *data)
{
	struct inj j = {
		.etype = DNP_DPDK_ETHERTYPE,
		.version = DNP_DPDK_VERSION,
		.idx = idx,
		.cnt = cnt,
		.id = id,
		.total = total,
		.off = off,
		.len = len,
		.data = data,
	};

	return j;
}

static void test_dpdk_rejects_malformed_frames(void **state)
{
	struct dnp_transport *t = open_loop("mtu=9000");
	struct dnp_dpdk_stats st;
	struct dnp_rx_frame rx[32];
	struct inj j;
	unsigned bad = 0;

	fill(buf, 300, 7);
	j = frag(0, 0, 1, 300, 0, 300, buf);
	j.etype = 0x0800; /* IPv4 */
	inject(&j), bad++;
	j = frag(0, 0, 1, 300, 0, 300, buf);
	j.version = 2;
	inject(&j), bad++;
	j = frag(0, 0, 0, 300, 0, 300, buf); /* no fragments */
	inject(&j), bad++;
	j = frag(0, 3, 3, 300, 0, 100, buf); /* index beyond count */
	inject(&j), bad++;
	j = frag(0, 0, 65, 300, 0, 100, buf); /* more than 64 fragments */
	inject(&j), bad++;
	j = frag(0, 0, 1, FRAME_MAX + 1, 0, 300, buf); /* above frame_max */
	inject(&j), bad++;
	j = frag(0, 1, 2, 300, 250, 100, buf); /* past the frame's end */
	inject(&j), bad++;
	j = frag(0, 0, 1, 300, 0, 300, buf);
	j.wire_len = DNP_DPDK_DATA_OFF + 200; /* header claims more than the wire has */
	inject(&j), bad++;
	j = frag(0, 0, 1, 300, 0, 300, buf);
	j.wire_len = 20; /* truncated header */
	inject(&j), bad++;
	j = frag(0, 0, 1, 300, 0, 299, buf); /* whole frame with a short length */
	inject(&j), bad++;
	j = frag(0, 0, 1, 0, 0, 0, buf); /* empty */
	inject(&j), bad++;
	/* ... and one good frame after them all */
	j = frag(0, 0, 1, 300, 0, 300, buf);
	inject(&j);

	assert_int_equal(rx_all(t, rx, 32), 1);
	assert_int_equal(rx[0].len, 300);
	assert_memory_equal(rx[0].data, buf, 300);
	dnp_dpdk_stats(t, &st);
	assert_int_equal(st.rx_bad, bad);
	dnp_transport_dpdk.close(t);
}

/* Fragments out of order and duplicated: one frame, byte-exact. */
static void test_dpdk_reassembles_reordered_duplicates(void **state)
{
	struct dnp_transport *t = open_loop("mtu=9000");
	struct dnp_rx_frame rx[8];
	struct inj j;

	fill(buf, 3000, 9);
	j = frag(1009, 2, 3, 3000, 2000, 1000, buf);
	inject(&j);
	j = frag(1009, 0, 3, 3000, 0, 1000, buf);
	inject(&j);
	inject(&j);
	j = frag(1009, 1, 3, 3000, 1000, 1000, buf);
	inject(&j);
	inject(&j); /* a duplicate after completion starts a new, never-finished frame */
	assert_int_equal(rx_all(t, rx, 8), 1);
	assert_int_equal(rx[0].len, 3000);
	assert_memory_equal(rx[0].data, buf, 3000);
	/* nothing else comes out of the leftover duplicate */
	assert_int_equal(rx_all(t, rx, 8), 0);
	dnp_transport_dpdk.close(t);
}

/* A frame missing a fragment is dropped when a newer frame needs its slot. */
static void test_dpdk_drops_incomplete_frame(void **state)
{
	struct dnp_transport *t = open_loop("mtu=9000,reasm=64");
	struct dnp_dpdk_stats st;
	struct dnp_rx_frame rx[8];
	struct inj j;

	fill(buf, 2000, 11);
	j = frag(2000, 0, 2, 2000, 0, 1000, buf); /* fragment 1 never comes */
	inject(&j);
	assert_int_equal(rx_all(t, rx, 8), 0);
	/* id 2064 maps to the same slot (2000 & 63 == 2064 & 63) */
	j = frag(2064, 0, 2, 2000, 0, 1000, buf);
	inject(&j);
	j = frag(2064, 1, 2, 2000, 1000, 1000, buf);
	inject(&j);
	assert_int_equal(rx_all(t, rx, 8), 1);
	assert_memory_equal(rx[0].data, buf, 2000);
	dnp_dpdk_stats(t, &st);
	assert_int_equal(st.rx_reasm_drop, 1);
	/* the link's own traffic still flows afterwards */
	{
		struct dnp_tx_frame tx = { .data = buf, .len = 2000 };

		assert_int_equal(dnp_transport_dpdk.tx_burst(t, &tx, 1), 1);
		assert_int_equal(rx_all(t, rx, 8), 1);
		assert_memory_equal(rx[0].data, buf, 2000);
	}
	dnp_transport_dpdk.close(t);
}

static void test_dpdk_open_rejects_bad_conf(void **state)
{
	struct dnp_transport_conf c = {
		.local = "net_ring0",
		.remote = "",
		.frame_max = FRAME_MAX,
		.depth = 64,
	};
	struct dnp_transport *t;

	c.depth = 48; /* not a power of two */
	assert_int_equal(dnp_transport_dpdk.open(&c, &t), -EINVAL);
	c.depth = 64;
	c.options = "mtu=100";
	assert_int_equal(dnp_transport_dpdk.open(&c, &t), -EINVAL);
	c.options = "shared"; /* a shared port needs the neighbour's MAC */
	assert_int_equal(dnp_transport_dpdk.open(&c, &t), -EINVAL);
	c.options = NULL;
	c.remote = "not-a-mac";
	assert_int_equal(dnp_transport_dpdk.open(&c, &t), -EINVAL);
	c.remote = "";
	c.local = "net_nosuchport";
	assert_true(dnp_transport_dpdk.open(&c, &t) < 0);
	/* a dedicated port takes one link only */
	c.local = "net_ring0";
	assert_int_equal(dnp_transport_dpdk.open(&c, &t), 0);
	{
		struct dnp_transport *t2;

		assert_int_equal(dnp_transport_dpdk.open(&c, &t2), -EBUSY);
	}
	dnp_transport_dpdk.close(t);
}

/* The build puts the backend in the registry dnpd uses (transport_reg_dpdk.c). */
static void test_dpdk_registered_as_dpdk(void **state)
{
	(void)state;
	assert_ptr_equal(dnp_transport_find("dpdk"), &dnp_transport_dpdk);
	assert_string_equal(dnp_transport_dpdk.name, "dpdk");
	assert_ptr_equal(dnp_transport_find("shm"), &dnp_transport_shm);
	assert_null(dnp_transport_find("dpdk0"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dpdk_registered_as_dpdk),
		cmocka_unit_test(test_dpdk_jumbo_roundtrip_every_size),
		cmocka_unit_test(test_dpdk_fragmented_roundtrip),
		cmocka_unit_test(test_dpdk_small_mtu_many_fragments),
		cmocka_unit_test(test_dpdk_burst_in_order),
		cmocka_unit_test(test_dpdk_rejects_malformed_frames),
		cmocka_unit_test(test_dpdk_reassembles_reordered_duplicates),
		cmocka_unit_test(test_dpdk_drops_incomplete_frame),
		cmocka_unit_test(test_dpdk_open_rejects_bad_conf),
	};
	int ret = dnp_dpdk_eal_init_str("test_dpdk_loop",
					"--no-huge --no-pci --no-shconf --no-telemetry -m 128 "
					"--log-level=*:error --vdev=net_ring0");

	if (ret < 0) {
		printf("test_dpdk_loop: SKIP: DPDK EAL does not start here (%s)\n", strerror(-ret));
		return 77;
	}
	if (!rte_eth_dev_is_valid_port(0)) {
		printf("test_dpdk_loop: SKIP: no net_ring port (ring PMD missing)\n");
		return 77;
	}
	inj_pool = rte_pktmbuf_pool_create("inj", 255, 0, 0, RTE_PKTMBUF_HEADROOM + 9216,
					   rte_socket_id());
	if (!inj_pool) {
		printf("test_dpdk_loop: SKIP: no memory for an mbuf pool\n");
		return 77;
	}
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	rte_mempool_free(inj_pool);
	dnp_dpdk_eal_cleanup();
	return ret;
}
