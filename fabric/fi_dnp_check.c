/* SPDX-License-Identifier: MIT */
/*
 * fi_dnp_check — checks of the libfabric provider "dnp" through the
 * libfabric API (FI_PROVIDER_PATH must name the directory of libdnp-fi.so).
 * One process opens three endpoints: A and C on node 0
 * ($DNP_RUN_DIR/node-0.sock, two sessions) and B on the last node of the
 * torus, and checks, between them:
 *   matching    tagged receives with ignore bits, directed vs FI_ADDR_UNSPEC,
 *               FI_MSG and FI_TAGGED kept apart, order of equal tags,
 *               unexpected messages, eager and rendez-vous sizes, byte-exact
 *   truncation  a short receive ends in a CQ error entry FI_ETRUNC with olen
 *   directed    a receive directed at A refuses C's message of the same tag,
 *               posted before it arrives or waiting unexpected, and takes A's
 *   cancel      fi_cancel of a posted receive gives FI_ECANCELED; a second
 *               cancel -FI_ENOENT; the canceled receive never matches
 *   cq errors   fi_cq_read returns -FI_EAVAIL while an error entry is queued
 *   rma         fi_write / fi_read through registered memory (FI_MR_PROV_KEY)
 *               land byte-exact; a wrong key ends in a CQ error entry;
 *               fi_read into memory registered for FI_REMOTE_READ only;
 *               fi_inject_write; fi_writedata reports its data at the target
 *   peek        FI_PEEK finds an unexpected message (length, tag, CQ data) and
 *               leaves it; FI_PEEK|FI_CLAIM sets it aside for FI_CLAIM;
 *               FI_PEEK|FI_DISCARD drops it (eager and rendez-vous sizes);
 *               peeks alone, without CQ reads between them, find a message
 *   cq data     fi_tsenddata / fi_tinjectdata carry 32 bits of remote CQ
 *               data; fi_tsendmsg(FI_INJECT) completes (no selective
 *               completion); fi_tinject does not
 *   rebirth     C closes and a new endpoint takes its port: B talks to it
 *   refused     fi_poll_open and fi_wait_open answer -FI_ENOSYS
 *   threading   hints asking FI_THREAD_DOMAIN get it (data calls and CQ reads
 *               then take no lock): every check above runs that way
 *   cntr        a counter bound for FI_WRITE on an endpoint whose CQ takes
 *               FI_SELECTIVE_COMPLETION: fi_write and fi_inject_write without
 *               FI_COMPLETION are counted by the daemon (DNP_CNTR): the value
 *               reaches their number, no CQ entry, the bytes land; a wrong key
 *               counts in fi_cntr_readerr; fi_cntr_set; a write with
 *               FI_COMPLETION still counts (provider path) and completes
 * With "--tc" it only writes, from one endpoint per libfabric traffic class
 * (tx_attr->tclass) on node 0, 1000 + i bytes to B (i: the class's place in
 * the list it prints), for tests/integration/fi-tc.sh to find on the wire.
 * With "--cntr-bench N" (DNP_NNODES >= 2) it measures instead N 8-byte
 * fi_writes completed by the counter against the same completed in the CQ.
 * Prints "PASS fi_dnp_check" and exits 0 if all is right.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "fi_side.h"

static struct fi_info *info;

static int open_side(struct fi_side *s, const char *sock, enum fi_av_type avt)
{
	int r = fi_side_open(s, info, sock, avt, 0);

	if (r)
		fprintf(stderr, "fi_dnp_check: opening an endpoint on %s: %s\n", sock,
			fi_strerror(-r));
	return r;
}

static struct fi_side A, B, C;
static fi_addr_t b_to_c; /* C in B's AV (B.peer is A) */

/* Polls the CQs (each progresses its own endpoint) until s's CQ yields one entry. */
static ssize_t next(struct fi_side *s, struct fi_cq_tagged_entry *e, struct fi_cq_err_entry *err)
{
	struct fi_cq_tagged_entry junk;
	struct fi_side *o = s == &A ? &B : &A;
	struct fi_side *o2 = s == &C ? &B : &C;
	time_t t0 = time(NULL);
	ssize_t r;

	for (;;) {
		r = fi_cq_read(s->cq, e, 1);
		if (r == 1)
			return 1;
		if (r == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			return fi_cq_readerr(s->cq, err, 0) == 1 ? -FI_EAVAIL : -FI_EIO;
		}
		/* progress the other sides only */
		r = fi_cq_read(o->cq, &junk, 0);
		if (o2->cq)
			r = fi_cq_read(o2->cq, &junk, 0);
		if (time(NULL) - t0 > 20)
			return -FI_ETIMEDOUT;
	}
}

/* Starts a tagged send from A to B. */
static void post_send(const void *buf, size_t len, uint64_t tag, void *ctx)
{
	ssize_t r;

	do
		r = fi_tsend(A.ep, buf, len, NULL, A.peer, tag, ctx);
	while (r == -FI_EAGAIN);
	CHECK(r == 0, "tsend %zd", r);
}

/* Waits for the completion of A's send ctx (B is progressed meanwhile). */
static void wait_send(void *ctx)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	ssize_t r = next(&A, &e, &ee);

	CHECK(r == 1 && e.op_context == ctx && (e.flags & FI_SEND), "send completion %zd", r);
}

/* Eager sizes complete at once; a rendez-vous needs its receive posted first. */
static void send_tagged(const void *buf, size_t len, uint64_t tag, void *ctx)
{
	post_send(buf, len, tag, ctx);
	wait_send(ctx);
}

static void matching(void)
{
	static uint8_t sb[300000], rb[4][300000];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	/* around the eager limit: 4096 is the last eager size, 4097 a rendez-vous */
	size_t sizes[] = { 0, 8, 4000, 4096, 4097, 100000, 300000 };
	int ctx[8];
	unsigned k;
	ssize_t r;

	/* pre-posted and unexpected, every size */
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		fi_side_fill(sb, sizes[k], k);
		memset(rb[0], 0, sizes[k]);
		if (k % 2)
			CHECK(fi_trecv(B.ep, rb[0], sizeof(rb[0]), NULL, B.peer, 0x1000 + k, 0,
				       &ctx[0]) == 0,
			      "trecv");
		post_send(sb, sizes[k], 0x1000 + k, &ctx[1]);
		if (!(k % 2))
			CHECK(fi_trecv(B.ep, rb[0], sizeof(rb[0]), NULL, B.peer, 0x1000 + k, 0,
				       &ctx[0]) == 0,
			      "trecv");
		r = next(&B, &e, &ee);
		CHECK(r == 1 && e.op_context == &ctx[0] && e.len == sizes[k] &&
			      e.tag == 0x1000 + k && (e.flags & FI_TAGGED) && (e.flags & FI_RECV),
		      "size %zu: r %zd len %zu tag %lx", sizes[k], r, e.len, (unsigned long)e.tag);
		CHECK(fi_side_same(rb[0], sizes[k], k), "size %zu: bytes", sizes[k]);
		wait_send(&ctx[1]);
	}
	/* ignore bits, any source, MSG vs TAGGED, equal tags in order */
	CHECK(fi_recv(B.ep, rb[3], 100, NULL, FI_ADDR_UNSPEC, &ctx[3]) == 0, "recv");
	CHECK(fi_trecv(B.ep, rb[0], 100, NULL, FI_ADDR_UNSPEC, 0xab00, 0xff, &ctx[0]) == 0, "t0");
	CHECK(fi_trecv(B.ep, rb[1], 100, NULL, B.peer, 0xab00, 0xff, &ctx[1]) == 0, "t1");
	CHECK(fi_trecv(B.ep, rb[2], 100, NULL, B.peer, 0x77, 0, &ctx[2]) == 0, "t2");
	sb[0] = 1;
	send_tagged(sb, 1, 0x77, &ctx[4]); /* -> t2 only */
	sb[0] = 2;
	send_tagged(sb, 1, 0xab12, &ctx[4]); /* -> t0 (first posted of the two) */
	sb[0] = 3;
	send_tagged(sb, 1, 0xab34, &ctx[4]); /* -> t1 */
	sb[0] = 4;
	do
		r = fi_send(A.ep, sb, 1, NULL, A.peer, &ctx[5]);
	while (r == -FI_EAGAIN);
	CHECK(next(&A, &e, &ee) == 1, "msg send");
	for (k = 0; k < 4; k++) {
		r = next(&B, &e, &ee);
		CHECK(r == 1, "completion %u: %zd", k, r);
		if (e.op_context == &ctx[2])
			CHECK(rb[2][0] == 1 && e.tag == 0x77, "tag 0x77");
		else if (e.op_context == &ctx[0])
			CHECK(rb[0][0] == 2 && e.tag == 0xab12, "ignore bits, first posted");
		else if (e.op_context == &ctx[1])
			CHECK(rb[1][0] == 3 && e.tag == 0xab34, "ignore bits, second");
		else if (e.op_context == &ctx[3])
			CHECK(rb[3][0] == 4 && (e.flags & FI_MSG) && !(e.flags & FI_TAGGED),
			      "FI_MSG receive");
		else
			CHECK(0, "unknown context");
	}
	/* 200 messages with one tag arrive in order (unexpected, then posted) */
	for (k = 0; k < 200; k++) {
		uint32_t v = k;

		do
			r = fi_tinject(A.ep, &v, sizeof(v), A.peer, 0x5);
		while (r == -FI_EAGAIN);
		CHECK(r == 0, "tinject %zd", r);
	}
	for (k = 0; k < 200; k++) {
		uint32_t v = ~0u;

		CHECK(fi_trecv(B.ep, &v, sizeof(v), NULL, FI_ADDR_UNSPEC, 0x5, 0, &ctx[6]) == 0,
		      "trecv");
		r = next(&B, &e, &ee);
		CHECK(r == 1 && v == k, "in order: got %u want %u (r %zd)", v, k, r);
		if (v != k)
			break;
	}
	printf("ok: matching (sizes 0..300000, ignore bits, directed and any source, "
	       "FI_MSG/FI_TAGGED, 200 in order)\n");
}

/* A tagged send from side s to its peer, completed. */
static void send_from(struct fi_side *s, uint8_t v, uint64_t tag)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	int ctx;
	ssize_t r;

	do
		r = fi_tsend(s->ep, &v, 1, NULL, s->peer, tag, &ctx);
	while (r == -FI_EAGAIN);
	CHECK(r == 0, "tsend %zd", r);
	r = next(s, &e, &ee);
	CHECK(r == 1 && e.op_context == &ctx, "send completion %zd", r);
}

/* B receives tag from src (FI_ADDR_UNSPEC: anyone); returns the byte, 0 on failure. */
static uint8_t recv_at_b(fi_addr_t src, uint64_t tag)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	uint8_t v = 0;
	int ctx;
	ssize_t r;

	CHECK(fi_trecv(B.ep, &v, 1, NULL, src, tag, 0, &ctx) == 0, "trecv");
	r = next(&B, &e, &ee);
	CHECK(r == 1 && e.op_context == &ctx, "receive of tag %lx: %zd", (unsigned long)tag, r);
	return v;
}

/*
 * Directed receive: C's message of the same tag must not match a receive
 * directed at A, whether the receive waits for it (posted) or it waits for
 * the receive (unexpected). C's marker message (another tag) follows it on
 * the same pair, so once B has the marker, it has seen C's first message.
 */
static void directed(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	uint8_t va = 0;
	int ctx;
	ssize_t r;

	/* posted before C's message arrives */
	CHECK(fi_trecv(B.ep, &va, 1, NULL, B.peer, 0x3d, 0, &ctx) == 0, "directed trecv");
	send_from(&C, 0xc1, 0x3d);
	send_from(&C, 0xc2, 0x3e);
	CHECK(recv_at_b(FI_ADDR_UNSPEC, 0x3e) == 0xc2, "C's marker");
	send_from(&A, 0xa1, 0x3d);
	r = next(&B, &e, &ee);
	CHECK(r == 1 && e.op_context == &ctx && va == 0xa1,
	      "posted receive directed at A took 0x%x (r %zd)", va, r);
	CHECK(recv_at_b(b_to_c, 0x3d) == 0xc1, "C's message waits for a receive directed at C");
	/* C's message unexpected when a receive directed at A is posted */
	send_from(&C, 0xc3, 0x3f);
	send_from(&C, 0xc4, 0x3e);
	CHECK(recv_at_b(FI_ADDR_UNSPEC, 0x3e) == 0xc4, "C's marker");
	va = 0;
	CHECK(fi_trecv(B.ep, &va, 1, NULL, B.peer, 0x3f, 0, &ctx) == 0, "directed trecv");
	send_from(&A, 0xa2, 0x3f);
	r = next(&B, &e, &ee);
	CHECK(r == 1 && e.op_context == &ctx && va == 0xa2,
	      "receive directed at A took the unexpected 0x%x (r %zd)", va, r);
	CHECK(recv_at_b(FI_ADDR_UNSPEC, 0x3f) == 0xc3, "C's unexpected message still there");
	printf("ok: directed receives refuse another source (posted and unexpected)\n");
}

static void truncation_cancel(void)
{
	static uint8_t sb[100000], rb[100000];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	size_t lens[] = { 1000, 100000 };
	int ctx[3];
	unsigned k;
	ssize_t r;

	for (k = 0; k < 2; k++) {
		fi_side_fill(sb, lens[k], 40 + k);
		memset(rb, 0xee, sizeof(rb));
		CHECK(fi_trecv(B.ep, rb, lens[k] / 2, NULL, B.peer, 9, 0, &ctx[0]) == 0, "trecv");
		post_send(sb, lens[k], 9, &ctx[1]);
		r = next(&B, &e, &ee);
		wait_send(&ctx[1]);
		CHECK(r == -FI_EAVAIL && ee.err == FI_ETRUNC && ee.op_context == &ctx[0] &&
			      ee.olen == lens[k] - lens[k] / 2 && ee.len == lens[k] / 2,
		      "truncation of %zu: r %zd err %d olen %zu len %zu", lens[k], r, ee.err,
		      ee.olen, ee.len);
		CHECK(fi_side_same(rb, lens[k] / 2, 40 + k) && rb[lens[k] / 2] == 0xee,
		      "truncated bytes");
	}
	/* cancel */
	CHECK(fi_trecv(B.ep, rb, 10, NULL, FI_ADDR_UNSPEC, 0x99, 0, &ctx[2]) == 0, "trecv");
	CHECK(fi_cancel(&B.ep->fid, &ctx[2]) == 0, "cancel");
	CHECK(fi_cancel(&B.ep->fid, &ctx[2]) == -FI_ENOENT, "second cancel");
	r = fi_cq_read(B.cq, &e, 1);
	CHECK(r == -FI_EAVAIL, "cq_read with an error queued: %zd", r);
	memset(&ee, 0, sizeof(ee));
	CHECK(fi_cq_readerr(B.cq, &ee, 0) == 1 && ee.err == FI_ECANCELED &&
		      ee.op_context == &ctx[2],
	      "FI_ECANCELED entry (err %d)", ee.err);
	CHECK(fi_cq_readerr(B.cq, &ee, 0) == -FI_EAGAIN, "no more errors");
	/* the canceled receive must not take this message */
	sb[0] = 42;
	send_tagged(sb, 1, 0x99, &ctx[1]);
	rb[0] = 0;
	CHECK(fi_trecv(B.ep, rb, 10, NULL, FI_ADDR_UNSPEC, 0x99, 0, &ctx[0]) == 0, "trecv");
	r = next(&B, &e, &ee);
	CHECK(r == 1 && e.op_context == &ctx[0] && rb[0] == 42, "after cancel: %zd", r);
	printf("ok: truncation (FI_ETRUNC, olen), cancel (FI_ECANCELED, -FI_ENOENT), CQ error "
	       "path (-FI_EAVAIL, fi_cq_readerr)\n");
}

/* fi_read into memory registered for FI_REMOTE_READ only, fi_inject_write, fi_writedata. */
static void rma_more(struct fid_mr *mr, uint8_t *win)
{
	static uint8_t rd[5000];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	struct fid_mr *rmr;
	uint8_t small[64];
	int ctx;
	ssize_t r;

	CHECK(fi_mr_reg(A.dom, rd, sizeof(rd), FI_REMOTE_READ, 0, 0, 0, &rmr, NULL) == 0, "mr_reg");
	fi_side_fill(win, 5000, 79);
	r = fi_read(A.ep, rd, 5000, fi_mr_desc(rmr), A.peer, (uintptr_t)win, fi_mr_key(mr), &ctx);
	CHECK(r == 0, "read %zd", r);
	r = next(&A, &e, &ee);
	CHECK(r == 1 && fi_side_same(rd, 5000, 79),
	      "read into a FI_REMOTE_READ-only MR: %zd err %d", r, r == -FI_EAVAIL ? ee.err : 0);
	fi_close(&rmr->fid);
	fi_side_fill(small, sizeof(small), 80);
	r = fi_inject_write(A.ep, small, sizeof(small), A.peer, (uintptr_t)win + 10, fi_mr_key(mr));
	CHECK(r == 0, "inject_write %zd", r);
	memset(small, 0, sizeof(small)); /* injected: ours again at once */
	r = fi_writedata(A.ep, small, 8, NULL, 0xd00d, A.peer, (uintptr_t)win + 200, fi_mr_key(mr),
			 &ctx);
	CHECK(r == 0, "writedata %zd", r);
	r = next(&A, &e, &ee);
	CHECK(r == 1 && e.op_context == &ctx, "writedata completion %zd", r);
	r = next(&B, &e, &ee);
	CHECK(r == 1 && (e.flags & FI_REMOTE_CQ_DATA) && (e.flags & FI_REMOTE_WRITE) &&
		      e.data == 0xd00d && e.len == 8,
	      "writedata at the target: %zd flags %lx data %lx", r, (unsigned long)e.flags,
	      (unsigned long)e.data);
	CHECK(fi_side_same(win + 10, sizeof(small), 80),
	      "inject_write bytes (PUTs of one pair in order)");
	CHECK(fi_cq_read(A.cq, &e, 1) == -FI_EAGAIN, "inject_write made no completion");
	printf("ok: fi_read into a FI_REMOTE_READ-only MR, fi_inject_write, fi_writedata\n");
}

static void rma(void)
{
	static uint8_t win[200000], lb[200000];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	struct fid_mr *mr, *lmr;
	int ctx;
	ssize_t r;

	CHECK(fi_mr_reg(B.dom, win, sizeof(win), FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			NULL) == 0,
	      "mr_reg");
	CHECK(fi_mr_reg(A.dom, lb, sizeof(lb), FI_READ | FI_WRITE, 0, 0, 0, &lmr, NULL) == 0,
	      "local mr_reg");
	fi_side_fill(lb, sizeof(lb), 77);
	r = fi_write(A.ep, lb, 150000, fi_mr_desc(lmr), A.peer, (uintptr_t)win + 1000,
		     fi_mr_key(mr), &ctx);
	CHECK(r == 0, "write %zd", r);
	r = next(&A, &e, &ee);
	CHECK(r == 1 && e.op_context == &ctx && (e.flags & FI_WRITE), "write completion %zd", r);
	CHECK(fi_side_same(win + 1000, 150000, 77), "written bytes");
	fi_side_fill(win, sizeof(win), 78);
	memset(lb, 0, sizeof(lb));
	r = fi_read(A.ep, lb, 120000, fi_mr_desc(lmr), A.peer, (uintptr_t)win, fi_mr_key(mr), &ctx);
	CHECK(r == 0, "read %zd", r);
	r = next(&A, &e, &ee);
	CHECK(r == 1 && e.op_context == &ctx && (e.flags & FI_READ), "read completion %zd", r);
	CHECK(fi_side_same(lb, 120000, 78), "read bytes");
	r = fi_write(A.ep, lb, 100, fi_mr_desc(lmr), A.peer, (uintptr_t)win, fi_mr_key(mr) ^ 0x5a5a,
		     &ctx);
	CHECK(r == 0, "write with a wrong key is accepted, then fails: %zd", r);
	r = next(&A, &e, &ee);
	CHECK(r == -FI_EAVAIL && ee.op_context == &ctx && ee.err != 0, "wrong key: %zd err %d", r,
	      ee.err);
	CHECK(fi_side_same(win, 100, 78), "nothing written with a wrong key");
	rma_more(mr, win);
	fi_close(&mr->fid);
	fi_close(&lmr->fid);
	printf("ok: RMA fi_write 150000 B, fi_read 120000 B, wrong key -> CQ error (%s)\n",
	       fi_strerror(ee.err));
}

/* B posts a tagged receive with flags (FI_PEEK, FI_CLAIM, FI_DISCARD) through fi_trecvmsg. */
static ssize_t b_trecvmsg(void *buf, size_t len, uint64_t tag, struct fi_context *ctx,
			  uint64_t flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg_tagged m = {
		.msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .tag = tag, .context = ctx
	};

	return fi_trecvmsg(B.ep, &m, flags);
}

/* A sends tag (len bytes, seed) with remote CQ data; eager sizes complete at once. */
static void send_data(const void *buf, size_t len, uint64_t tag, uint64_t data, void *ctx)
{
	ssize_t r;

	do
		r = fi_tsenddata(A.ep, buf, len, NULL, data, A.peer, tag, ctx);
	while (r == -FI_EAGAIN);
	CHECK(r == 0, "tsenddata %zd", r);
}

static void peek_one(size_t len, uint64_t tag)
{
	static uint8_t sb[100000], rb[100000];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	struct fi_context pc, rc;
	int sctx;
	ssize_t r;

	fi_side_fill(sb, len, (unsigned)tag);
	/* not there yet: FI_ENOMSG */
	CHECK(b_trecvmsg(NULL, 0, tag, &pc, FI_PEEK) == 0, "peek");
	r = next(&B, &e, &ee);
	CHECK(r == -FI_EAVAIL && ee.err == FI_ENOMSG && ee.op_context == &pc, "peek miss: %zd %d",
	      r, ee.err);
	send_data(sb, len, tag, 0x1234abcd, &sctx);
	/* peek until it is there; nothing consumed */
	do {
		CHECK(b_trecvmsg(NULL, 0, tag, &pc, FI_PEEK) == 0, "peek");
		r = next(&B, &e, &ee);
	} while (r == -FI_EAVAIL && ee.err == FI_ENOMSG);
	CHECK(r == 1 && e.op_context == &pc && e.len == len && e.tag == tag &&
		      (e.flags & FI_REMOTE_CQ_DATA) && e.data == 0x1234abcd,
	      "peek hit: r %zd len %zu data %lx", r, e.len, (unsigned long)e.data);
	/* claim it, then receive the claimed message */
	CHECK(b_trecvmsg(NULL, 0, tag, &pc, FI_PEEK | FI_CLAIM) == 0, "peek+claim");
	r = next(&B, &e, &ee);
	CHECK(r == 1 && e.op_context == &pc && e.len == len, "peek+claim: %zd", r);
	CHECK(b_trecvmsg(NULL, 0, tag, &rc, FI_PEEK) == 0, "peek");
	r = next(&B, &e, &ee);
	CHECK(r == -FI_EAVAIL && ee.err == FI_ENOMSG, "a claimed message is not found again");
	memset(rb, 0, len);
	CHECK(b_trecvmsg(rb, sizeof(rb), tag, &pc, FI_CLAIM) == 0, "claim");
	r = next(&B, &e, &ee);
	CHECK(r == 1 && e.op_context == &pc && e.len == len &&
		      fi_side_same(rb, len, (unsigned)tag) && e.data == 0x1234abcd,
	      "claimed receive: %zd len %zu", r, e.len);
	wait_send(&sctx); /* eager: done at once; rendez-vous: once received */
	/* peek + discard: gone, and the sender's send completes */
	send_data(sb, len, tag, 7, &sctx);
	do {
		CHECK(b_trecvmsg(NULL, 0, tag, &pc, FI_PEEK | FI_DISCARD) == 0, "peek+discard");
		r = next(&B, &e, &ee);
	} while (r == -FI_EAVAIL && ee.err == FI_ENOMSG);
	CHECK(r == 1 && e.op_context == &pc, "peek+discard: %zd", r);
	wait_send(&sctx); /* eager: done at once; rendez-vous: once received */
	CHECK(b_trecvmsg(NULL, 0, tag, &pc, FI_PEEK) == 0, "peek");
	r = next(&B, &e, &ee);
	CHECK(r == -FI_EAVAIL && ee.err == FI_ENOMSG, "discarded: %zd", r);
	CHECK(b_trecvmsg(NULL, 0, tag, &rc, FI_CLAIM) == -FI_EINVAL, "claim of nothing");
}

static double secs(void);

/*
 * A peek makes progress itself: B peeks again and again, taking the
 * FI_ENOMSG entries with fi_cq_readerr (which makes none), until A's
 * message shows up (2 s at most); then B receives it.
 */
static void peek_progress(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	struct fi_context pc;
	double t0 = secs();
	uint64_t v = 0, w = 0x5050505050505050ull;
	int sctx, rctx;
	ssize_t r = -FI_EAGAIN;

	send_data(&w, sizeof(w), 0x505, 9, &sctx);
	while (secs() - t0 < 2.0) {
		CHECK(b_trecvmsg(NULL, 0, 0x505, &pc, FI_PEEK) == 0, "peek");
		memset(&ee, 0, sizeof(ee));
		r = fi_cq_readerr(B.cq, &ee, 0);
		if (r == 1 && ee.err == FI_ENOMSG)
			continue;
		break;
	}
	CHECK(r == -FI_EAGAIN, "a peek alone finds the message (progress in the peek): %zd", r);
	r = next(&B, &e, &ee);
	CHECK(r == 1 && e.op_context == &pc && e.len == sizeof(w), "peek entry: %zd", r);
	CHECK(fi_trecv(B.ep, &v, sizeof(v), NULL, FI_ADDR_UNSPEC, 0x505, 0, &rctx) == 0, "trecv");
	r = next(&B, &e, &ee);
	CHECK(r == 1 && e.op_context == &rctx && v == w, "received after the peek: %zd", r);
	wait_send(&sctx);
}

static void peek_claim_data(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	struct iovec iov;
	struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1 };
	uint32_t v = 0, w = 5;
	int ctx;
	ssize_t r;

	peek_one(100, 0x501);
	peek_one(60000, 0x502);
	peek_progress();
	/* fi_tinjectdata: data, no send completion; fi_tsendmsg(FI_INJECT): a completion */
	CHECK(fi_trecv(B.ep, &v, sizeof(v), NULL, FI_ADDR_UNSPEC, 0x503, 0, &ctx) == 0, "trecv");
	CHECK(fi_tinjectdata(A.ep, &w, sizeof(w), 0xfeedf00d, A.peer, 0x503) == 0, "tinjectdata");
	r = next(&B, &e, &ee);
	CHECK(r == 1 && v == 5 && (e.flags & FI_REMOTE_CQ_DATA) && e.data == 0xfeedf00d,
	      "tinjectdata: %zd data %lx", r, (unsigned long)e.data);
	iov.iov_base = &w;
	iov.iov_len = sizeof(w);
	m.addr = A.peer;
	m.tag = 0x504;
	m.context = &ctx;
	w = 6;
	CHECK(fi_trecv(B.ep, &v, sizeof(v), NULL, FI_ADDR_UNSPEC, 0x504, 0, &ctx) == 0, "trecv");
	CHECK(fi_tsendmsg(A.ep, &m, FI_INJECT) == 0, "tsendmsg(FI_INJECT)");
	w = 0; /* injected: the buffer is free at once */
	wait_send(&ctx);
	r = next(&B, &e, &ee);
	CHECK(r == 1 && v == 6 && !(e.flags & FI_REMOTE_CQ_DATA), "tsendmsg(FI_INJECT): %zd", r);
	CHECK(fi_cq_read(A.cq, &e, 1) == -FI_EAGAIN, "fi_tinject* made no completion");
	printf("ok: FI_PEEK, FI_CLAIM, FI_DISCARD (100 B and 60000 B), remote CQ data, "
	       "FI_INJECT completions\n");
}

/* C goes away and a new endpoint gets its port (its ring index): B and it talk. */
static void rebirth(void)
{
	char sock[4096];
	uint8_t addr[64];
	size_t len = sizeof(addr);
	fi_addr_t old = b_to_c;

	snprintf(sock, sizeof(sock), "%s/node-0.sock", getenv("DNP_RUN_DIR"));
	fi_side_close(&C);
	if (open_side(&C, sock, FI_AV_TABLE)) {
		CHECK(0, "reopening C");
		return;
	}
	CHECK(fi_getname(&C.ep->fid, addr, &len) == 0, "getname");
	CHECK(fi_av_insert(B.av, addr, 1, &b_to_c, 0, NULL) == 1 && b_to_c != old, "av_insert");
	len = sizeof(addr);
	CHECK(fi_getname(&B.ep->fid, addr, &len) == 0, "getname");
	CHECK(fi_av_insert(C.av, addr, 1, &C.peer, 0, NULL) == 1, "av_insert");
	send_from(&C, 0xd1, 0x3d);
	CHECK(recv_at_b(b_to_c, 0x3d) == 0xd1, "the new C's first message");
	send_from(&C, 0xd2, 0x3d);
	CHECK(recv_at_b(FI_ADDR_UNSPEC, 0x3d) == 0xd2, "the new C's second message");
	printf("ok: a new endpoint on a closed one's port is heard\n");
}

/* What the provider leaves out is refused cleanly: poll sets and wait sets. */
static void refused(void)
{
	struct fi_poll_attr pa = { 0 };
	struct fi_wait_attr wa = { .wait_obj = FI_WAIT_UNSPEC };
	struct fid_poll *ps = NULL;
	struct fid_wait *ws = NULL;

	CHECK(fi_poll_open(A.dom, &pa, &ps) == -FI_ENOSYS && !ps, "fi_poll_open: -FI_ENOSYS");
	CHECK(fi_wait_open(A.fab, &wa, &ws) == -FI_ENOSYS && !ws, "fi_wait_open: -FI_ENOSYS");
	printf("ok: poll and wait sets refused (-FI_ENOSYS)\n");
}

/* D: an endpoint on node 0 with counter c bound for FI_WRITE and a CQ of selective completion. */
static int cntr_side(struct fi_side *d, const char *sock)
{
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	uint8_t addr[64];
	size_t len = sizeof(addr);
	int r;

	setenv("DNP_SOCKET", sock, 1);
	r = fi_fabric(info->fabric_attr, &d->fab, NULL);
	if (!r)
		r = fi_domain(d->fab, info, &d->dom, NULL);
	if (!r)
		r = fi_cntr_open(d->dom, &ca, &d->cntr[0], NULL);
	d->cntr_flags[0] = FI_WRITE;
	if (!r)
		r = fi_side_open_ep(d, info, FI_AV_TABLE, FI_SELECTIVE_COMPLETION);
	if (!r)
		r = fi_getname(&B.ep->fid, addr, &len);
	if (!r)
		r = fi_av_insert(d->av, addr, 1, &d->peer, 0, NULL) == 1 ? 0 : -FI_EINVAL;
	return r;
}

/* Waits (bounded) until counter c reaches v; returns its value. */
static uint64_t cntr_reach(struct fid_cntr *c, uint64_t v)
{
	int r = fi_cntr_wait(c, v, 10000);

	CHECK(r == 0 || r == -FI_EAVAIL, "fi_cntr_wait(%llu): %s", (unsigned long long)v,
	      fi_strerror(-r));
	return fi_cntr_read(c);
}

static void cntr_daemon(const char *sock)
{
	static uint64_t win[256], src[256];
	struct fi_side D = { 0 };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee = { 0 };
	struct fid_mr *mr;
	struct fid_cntr *c;
	struct fi_msg_rma m;
	struct fi_rma_iov ri;
	struct iovec iov;
	uint64_t base, i, key;
	unsigned k;
	int ctx;

	if (cntr_side(&D, sock)) {
		CHECK(0, "counter endpoint");
		fi_side_close(&D);
		return;
	}
	c = D.cntr[0];
	CHECK(fi_mr_reg(B.dom, win, sizeof(win), FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) == 0,
	      "mr_reg");
	key = fi_mr_key(mr);
	base = fi_cntr_read(c);
	CHECK(base == 0, "a new counter reads %llu", (unsigned long long)base);
	for (i = 0; i < 200; i++) {
		src[i] = 0x1000 + i;
		if (i % 4 == 3)
			CHECK(fi_inject_write(D.ep, &src[i], 8, D.peer, (uintptr_t)&win[i], key) ==
				      0,
			      "inject_write %llu", (unsigned long long)i);
		else
			CHECK(fi_write(D.ep, &src[i], 8, NULL, D.peer, (uintptr_t)&win[i], key,
				       &ctx) == 0,
			      "write %llu", (unsigned long long)i);
	}
	CHECK(cntr_reach(c, 200) == 200, "counted %llu of 200 writes",
	      (unsigned long long)fi_cntr_read(c));
	CHECK(fi_cntr_readerr(c) == 0, "errors %llu", (unsigned long long)fi_cntr_readerr(c));
	for (k = 0, i = 0; i < 200; i++)
		k += win[i] == 0x1000 + i;
	CHECK(k == 200, "%u of 200 written words landed", k);
	CHECK(fi_cq_read(D.cq, &e, 1) == -FI_EAGAIN, "selective completion: no CQ entry");
	/* a wrong key: an error in the counter (and an error entry), not a success */
	CHECK(fi_write(D.ep, &src[0], 8, NULL, D.peer, (uintptr_t)&win[0], key ^ 0x5a5a, &ctx) == 0,
	      "write with a wrong key");
	for (i = 0; i < 1000 && fi_cntr_readerr(c) == 0; i++)
		usleep(1000);
	CHECK(fi_cntr_readerr(c) == 1 && fi_cntr_read(c) == 200, "wrong key: ok %llu err %llu",
	      (unsigned long long)fi_cntr_read(c), (unsigned long long)fi_cntr_readerr(c));
	CHECK(fi_cq_read(D.cq, &e, 1) == -FI_EAVAIL && fi_cq_readerr(D.cq, &ee, 0) == 1 &&
		      ee.err != 0,
	      "wrong key: CQ error entry");
	/* set, then one more; then one with FI_COMPLETION (a CQ entry, the provider counts) */
	CHECK(fi_cntr_set(c, 1000) == 0 && fi_cntr_read(c) == 1000, "set");
	CHECK(fi_write(D.ep, &src[1], 8, NULL, D.peer, (uintptr_t)&win[250], key, &ctx) == 0, "w");
	CHECK(cntr_reach(c, 1001) == 1001, "after set");
	iov = (struct iovec){ &src[2], 8 };
	ri = (struct fi_rma_iov){ (uintptr_t)&win[251], 8, key };
	m = (struct fi_msg_rma){ .msg_iov = &iov,
				 .iov_count = 1,
				 .addr = D.peer,
				 .rma_iov = &ri,
				 .rma_iov_count = 1,
				 .context = &ctx };
	CHECK(fi_writemsg(D.ep, &m, FI_COMPLETION) == 0, "writemsg");
	CHECK(cntr_reach(c, 1002) == 1002, "a write with FI_COMPLETION counts too");
	CHECK(fi_cq_read(D.cq, &e, 1) == 1 && e.op_context == &ctx, "its CQ entry");
	CHECK(win[250] == src[1] && win[251] == src[2], "landed");
	fi_close(&mr->fid);
	fi_side_close(&D);
	printf("ok: fi_cntr on FI_WRITE: 200 writes counted, wrong key in readerr, set\n");
}

/* One fi_write of 1000 + i bytes from an endpoint of each traffic class to B. */
static void tc_writes(const char *sock)
{
	static const uint32_t tcs[] = { FI_TC_UNSPEC,       FI_TC_SCAVENGER,
					FI_TC_BULK_DATA,    FI_TC_BEST_EFFORT,
					FI_TC_LOW_LATENCY,  FI_TC_DEDICATED_ACCESS,
					FI_TC_NETWORK_CTRL, FI_TC_DSCP | 46,
					FI_TC_DSCP | 24 };
	static uint8_t win[2048], src[2048];
	struct fid_mr *mr;
	unsigned i;

	CHECK(fi_mr_reg(B.dom, win, sizeof(win), FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) == 0, "mr");
	for (i = 0; i < sizeof(tcs) / sizeof(tcs[0]); i++) {
		struct fi_info *fi = fi_dupinfo(info);
		struct fi_side s = { 0 };
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry ee;
		uint8_t addr[64];
		size_t len = sizeof(addr);

		fi->tx_attr->tclass = tcs[i];
		if (fi_side_open(&s, fi, sock, FI_AV_TABLE, 0) ||
		    fi_getname(&B.ep->fid, addr, &len) ||
		    fi_av_insert(s.av, addr, 1, &s.peer, 0, NULL) != 1) {
			CHECK(0, "endpoint of tclass %#x", tcs[i]);
		} else {
			CHECK(fi_write(s.ep, src, 1000 + i, NULL, s.peer, (uintptr_t)win,
				       fi_mr_key(mr), NULL) == 0,
			      "write");
			CHECK(next(&s, &e, &ee) == 1, "write of tclass %#x completes", tcs[i]);
			printf("tc %u tclass %#x len %u\n", i, tcs[i], 1000 + i);
		}
		fi_side_close(&s);
		fi_freeinfo(fi);
	}
	{
		struct fi_info *fi = fi_dupinfo(info);
		struct fi_side s = { 0 };
		struct fi_info *got = NULL;

		fi->tx_attr->tclass = FI_TC_LABEL + 77; /* a label the provider does not know */
		CHECK(fi_side_open(&s, fi, sock, FI_AV_TABLE, 0) == -FI_EINVAL,
		      "an unknown tclass is refused");
		fi->tx_attr->tclass = FI_TC_LOW_LATENCY;
		CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, fi, &got) == 0 && got &&
			      got->tx_attr->tclass == FI_TC_LOW_LATENCY,
		      "fi_getinfo grants a known tclass");
		fi_freeinfo(got);
		got = NULL;
		fi->tx_attr->tclass = FI_TC_DSCP | 0x40; /* no DSCP has 7 bits */
		CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, fi, &got) == -FI_ENODATA,
		      "fi_getinfo refuses an unknown tclass");
		fi_freeinfo(got);
		fi_side_close(&s);
		fi_freeinfo(fi);
	}
	fi_close(&mr->fid);
}

/* Median of n doubles (sorts them). */
static double median(double *v, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * N 8-byte fi_writes one at a time (each waited) and as a stream (all
 * posted, then waited), completed by the counter (D) or in the CQ (A),
 * 5 rounds each: medians in us per write.
 */
static void cntr_bench(const char *sock, unsigned n)
{
	static uint64_t win[64], src = 42;
	struct fi_side D = { 0 };
	struct fid_mr *mr;
	double one[2][5], str[2][5];
	uint64_t key, v;
	int ctx;

	if (cntr_side(&D, sock) ||
	    fi_mr_reg(B.dom, win, sizeof(win), FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL)) {
		CHECK(0, "bench setup");
		return;
	}
	key = fi_mr_key(mr);
	v = fi_cntr_read(D.cntr[0]);
	for (unsigned r = 0; r < 5; r++) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry ee;
		double t;

		t = secs();
		for (unsigned i = 0; i < n; i++) {
			while (fi_write(D.ep, &src, 8, NULL, D.peer, (uintptr_t)win, key, &ctx) ==
			       -FI_EAGAIN)
				fi_cntr_read(D.cntr[0]);
			CHECK(fi_cntr_wait(D.cntr[0], ++v, 10000) == 0, "bench wait");
		}
		one[0][r] = (secs() - t) / n * 1e6;
		t = secs();
		for (unsigned i = 0; i < n; i++) {
			CHECK(fi_write(A.ep, &src, 8, NULL, A.peer, (uintptr_t)win, key, &ctx) == 0,
			      "w");
			CHECK(next(&A, &e, &ee) == 1, "bench CQ");
		}
		one[1][r] = (secs() - t) / n * 1e6;
		t = secs();
		for (unsigned i = 0; i < n; i++)
			while (fi_write(D.ep, &src, 8, NULL, D.peer, (uintptr_t)win, key, &ctx) ==
			       -FI_EAGAIN)
				fi_cntr_read(D.cntr[0]);
		v += n;
		CHECK(fi_cntr_wait(D.cntr[0], v, 30000) == 0, "bench stream wait");
		str[0][r] = (secs() - t) / n * 1e6;
		t = secs();
		for (unsigned i = 0, got = 0; i < n || got < n;) {
			if (i < n &&
			    fi_write(A.ep, &src, 8, NULL, A.peer, (uintptr_t)win, key, &ctx) == 0)
				i++;
			if (fi_cq_read(A.cq, &e, 1) == 1)
				got++;
		}
		str[1][r] = (secs() - t) / n * 1e6;
	}
	printf("cntr-bench: %u 8-byte fi_writes, node 0 to the last of %s, 5 rounds, median us/write\n",
	       n, getenv("DNP_NNODES"));
	printf("one at a time: counter %.2f  CQ %.2f  (ratio CQ/counter %.2f)\n", median(one[0], 5),
	       median(one[1], 5), median(one[1], 5) / median(one[0], 5));
	printf("stream:        counter %.2f  CQ %.2f  (ratio CQ/counter %.2f)\n", median(str[0], 5),
	       median(str[1], 5), median(str[1], 5) / median(str[0], 5));
	fi_close(&mr->fid);
	fi_side_close(&D);
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	const char *dir = getenv("DNP_RUN_DIR"), *nn = getenv("DNP_NNODES");
	char sa[4096], sb[4096];
	size_t len;
	uint8_t addr[64];
	int r;

	if (!dir || !nn) {
		fprintf(stderr, "fi_dnp_check: run it under dnp-run (DNP_RUN_DIR, DNP_NNODES)\n");
		return 2;
	}
	if (getenv("DNP_NODE_ID") && strcmp(getenv("DNP_NODE_ID"), "0"))
		return 0; /* one instance does everything */
	hints = fi_allocinfo();
	if (!hints)
		return 1;
	hints->caps = FI_TAGGED | FI_MSG | FI_RMA | FI_DIRECTED_RECV;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("dnp");
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	/* one thread: every check below runs on the lock-free path, as Open MPI's MTL does */
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	r = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	if (r) {
		fprintf(stderr,
			"fi_dnp_check: fi_getinfo (provider dnp, FI_PROVIDER_PATH=%s): %s\n",
			getenv("FI_PROVIDER_PATH") ? getenv("FI_PROVIDER_PATH") : "",
			fi_strerror(-r));
		return 1;
	}
	CHECK(info->domain_attr->threading == FI_THREAD_DOMAIN, "FI_THREAD_DOMAIN granted");
	snprintf(sa, sizeof(sa), "%s/node-0.sock", dir);
	snprintf(sb, sizeof(sb), "%s/node-%d.sock", dir, atoi(nn) - 1);
	if (open_side(&A, sa, FI_AV_TABLE) || open_side(&B, sb, FI_AV_MAP) ||
	    open_side(&C, sa, FI_AV_TABLE))
		return 1;
	len = sizeof(addr);
	CHECK(fi_getname(&B.ep->fid, addr, &len) == 0 && len == 32, "getname");
	CHECK(fi_av_insert(A.av, addr, 1, &A.peer, 0, NULL) == 1, "av_insert");
	len = sizeof(addr);
	CHECK(fi_getname(&A.ep->fid, addr, &len) == 0, "getname");
	CHECK(fi_av_insert(B.av, addr, 1, &B.peer, 0, NULL) == 1, "av_insert");
	len = sizeof(addr);
	CHECK(fi_getname(&C.ep->fid, addr, &len) == 0, "getname");
	CHECK(fi_av_insert(B.av, addr, 1, &b_to_c, 0, NULL) == 1, "av_insert");
	len = sizeof(addr);
	CHECK(fi_getname(&B.ep->fid, addr, &len) == 0, "getname");
	CHECK(fi_av_insert(C.av, addr, 1, &C.peer, 0, NULL) == 1, "av_insert");
	memset(addr, 0, 32);
	{
		fi_addr_t bad;

		CHECK(fi_av_insert(A.av, addr, 1, &bad, 0, NULL) == 0 && bad == FI_ADDR_NOTAVAIL,
		      "a bad address is refused");
	}
	if (argc > 1 && !strcmp(argv[1], "--tc")) {
		tc_writes(sa);
	} else if (argc > 2 && !strcmp(argv[1], "--cntr-bench")) {
		rma();
		cntr_bench(sa, (unsigned)atoi(argv[2]));
	} else {
		matching();
		directed();
		peek_claim_data();
		rebirth();
		truncation_cancel();
		rma();
		refused();
		cntr_daemon(sa);
	}
	fi_side_close(&A);
	fi_side_close(&B);
	fi_side_close(&C);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("%s fi_dnp_check\n", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}
