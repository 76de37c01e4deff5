/* SPDX-License-Identifier: MIT */
/*
 * test_pkt_hdr.h — for cmocka tests of the packet codec (pkt.h): two decoded
 * headers field by field, so that a failure names the field (all but sack,
 * the credits' bufs and via, which a test compares where it sets them).
 * Include after cmocka.h and pkt.h.
 */
#ifndef TEST_PKT_HDR_H
#define TEST_PKT_HDR_H

static inline void assert_hdr_equal(const struct dnp_pkt_hdr *a, const struct dnp_pkt_hdr *b)
{
	assert_int_equal(a->lflags, b->lflags);
	assert_int_equal(a->src_dir, b->src_dir);
	assert_int_equal(a->epoch, b->epoch);
	assert_int_equal(a->seq, b->seq);
	assert_int_equal(a->ack, b->ack);
	assert_memory_equal(&a->dst, &b->dst, sizeof(a->dst));
	assert_memory_equal(&a->src, &b->src, sizeof(a->src));
	assert_int_equal(a->dst_port, b->dst_port);
	assert_int_equal(a->src_port, b->src_port);
	assert_int_equal(a->kind, b->kind);
	assert_int_equal(a->vc, b->vc);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->status, b->status);
	assert_int_equal(a->len, b->len);
	assert_int_equal(a->msg_id, b->msg_id);
	assert_int_equal(a->va, b->va);
	assert_int_equal(a->key, b->key);
	assert_int_equal(a->offset, b->offset);
	for (unsigned vc = 0; vc < DNP_MAX_VC; vc++) {
		assert_int_equal(a->credit[vc].occupancy, b->credit[vc].occupancy);
		assert_int_equal(a->credit[vc].received, b->credit[vc].received);
	}
	assert_int_equal(a->fstatus, b->fstatus);
	assert_int_equal(a->hops, b->hops);
	assert_int_equal(a->timestamp, b->timestamp);
	assert_int_equal(a->msg_len, b->msg_len);
}

#endif
