/* SPDX-License-Identifier: MIT */
/*
 * fi_conform — libfabric conformance checks run unchanged against the
 * provider "dnp" and a reference provider (Debian's tcp;ofi_rxm on loopback).
 *
 *   fi_conform PROVIDER TEST          one process, two endpoints A and B
 *   fi_conform PROVIDER serve DIR N   a server answering N clients in turn
 *   fi_conform PROVIDER client DIR I  client I: a ping-pong with that server
 *   fi_conform PROVIDER block         blocks in a CQ read until it fails
 *
 * With PROVIDER dnp, A talks to $DNP_RUN_DIR/node-0.sock and B to the last
 * node's daemon (run under dnp-run); the multi-process modes use DNP_SOCKET.
 * TEST is one of (each asserts what the libfabric man pages promise):
 *   peek          fi_trecvmsg FI_PEEK finds a message (FI_ENOMSG before it is
 *                 sent), FI_PEEK|FI_CLAIM claims it, FI_CLAIM receives it
 *   cq-data       cq_data_size 4 asked: -FI_ENODATA, or granted and the data
 *                 of fi_senddata/fi_tsenddata reaches the receiver
 *   inject-write  fi_inject_write (and fi_inject_writedata when CQ data is
 *                 granted) within the advertised inject size lands
 *   rma-read      fi_read completes without error on both sides, data exact,
 *                 into a destination registered FI_READ or FI_REMOTE_READ
 *   two-ep        ep_cnt 2 asked: -FI_ENODATA, or two endpoints of one
 *                 domain both carry messages
 *   src-addr      every fi_info returned has src_addr (and its length), an
 *                 endpoint opened with it works, FI_SOURCE names the sender
 *   eq-sread      fi_eq_sread with a 400 ms timeout waits (-FI_EAGAIN after it)
 *   inject-nosel  fi_sendmsg/fi_tsendmsg(FI_INJECT) on a CQ bound without
 *                 FI_SELECTIVE_COMPLETION complete (send and receive)
 *   cntr          counters bound for FI_SEND, FI_RECV, FI_READ|FI_WRITE count
 *                 sends (fi_tinject too), receives, RMA and a truncated
 *                 receive's error; fi_cntr_wait returns at its threshold and
 *                 waits out its timeout below it; fi_cntr_add/set
 * Prints "PASS TEST", "DECLINED TEST: why" (a clean refusal, exit 0) or
 * "FAIL TEST" with the failed checks; exit 0 on PASS/DECLINED, 1 on FAIL,
 * 2 on bad usage.
 */
#include <stdarg.h>
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

#define WAIT_S 15 /* every wait for a completion is bounded */

static const char *prov;
static bool own_socket; /* the multi-process modes keep dnp-run's DNP_SOCKET */

static struct fi_side A, B;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* fi_getinfo for PROVIDER with CAPS; MOD (may be NULL) edits the hints first. */
static int get_info(uint64_t caps, void (*mod)(struct fi_info *), struct fi_info **out)
{
	struct fi_info *h = fi_allocinfo();
	int r;

	if (!h)
		return -FI_ENOMEM;
	h->caps = caps;
	h->mode = FI_CONTEXT;
	h->ep_attr->type = FI_EP_RDM;
	h->fabric_attr->prov_name = strdup(prov);
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	if (mod)
		mod(h);
	r = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, out);
	fi_freeinfo(h);
	if (r && r != -FI_ENODATA)
		fprintf(stderr, "fi_conform: fi_getinfo (%s): %s\n", prov, fi_strerror(-r));
	if (r == -FI_ENODATA && !mod)
		fprintf(stderr, "fi_conform: provider %s not found (FI_PROVIDER_PATH=%s)\n", prov,
			getenv("FI_PROVIDER_PATH") ? getenv("FI_PROVIDER_PATH") : "");
	return r;
}

/*
 * The daemon socket of side B (or A) under dnp-run, also set as DNP_SOCKET
 * (for fi_getinfo); NULL for other providers and the multi-process modes.
 */
static const char *pick_daemon(bool b)
{
	const char *dir = getenv("DNP_RUN_DIR"), *nn = getenv("DNP_NNODES");
	static char path[2][4096];

	if (own_socket || strcmp(prov, "dnp") || !dir || !nn)
		return NULL;
	snprintf(path[b], sizeof(path[b]), "%s/node-%d.sock", dir, b ? atoi(nn) - 1 : 0);
	setenv("DNP_SOCKET", path[b], 1);
	return path[b];
}

static int open_side(struct fi_side *s, struct fi_info *fi, bool b)
{
	int r = fi_side_open(s, fi, pick_daemon(b), FI_AV_TABLE, 0);

	if (r)
		fprintf(stderr, "fi_conform: opening endpoint %c: %s\n", b ? 'B' : 'A',
			fi_strerror(-r));
	return r;
}

static int connect_pair(struct fi_side *a, struct fi_side *b)
{
	uint8_t addr[256];
	size_t len = sizeof(addr);
	int r = fi_getname(&b->ep->fid, addr, &len);

	if (r || fi_av_insert(a->av, addr, 1, &a->peer, 0, NULL) != 1)
		return -1;
	len = sizeof(addr);
	r = fi_getname(&a->ep->fid, addr, &len);
	if (r || fi_av_insert(b->av, addr, 1, &b->peer, 0, NULL) != 1)
		return -1;
	return 0;
}

/* Both endpoints of A, B and EXTRA (may be NULL) made to progress once. */
static struct fid_cq *extra_cq;
static void progress_all(void)
{
	struct fi_cq_tagged_entry junk;

	if (A.cq)
		fi_cq_read(A.cq, &junk, 0);
	if (B.cq)
		fi_cq_read(B.cq, &junk, 0);
	if (extra_cq)
		fi_cq_read(extra_cq, &junk, 0);
}

/*
 * The next entry of CQ (others progressed meanwhile): 1, -FI_EAVAIL with
 * *err filled, or -FI_ETIMEDOUT after WAIT_S seconds.
 */
static ssize_t next(struct fid_cq *cq, struct fi_cq_tagged_entry *e, struct fi_cq_err_entry *err)
{
	double t0 = now();
	ssize_t r;

	for (;;) {
		r = fi_cq_read(cq, e, 1);
		if (r == 1)
			return 1;
		if (r == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			return fi_cq_readerr(cq, err, 0) == 1 ? -FI_EAVAIL : -FI_EIO;
		}
		if (r != -FI_EAGAIN)
			return r;
		progress_all();
		if (now() - t0 > WAIT_S)
			return -FI_ETIMEDOUT;
	}
}

/* Expect one successful completion on CQ with context CTX; returns it in *e. */
static bool expect(struct fid_cq *cq, void *ctx, struct fi_cq_tagged_entry *e, const char *what)
{
	struct fi_cq_err_entry err;
	ssize_t r = next(cq, e, &err);

	if (r == -FI_EAVAIL) {
		fprintf(stderr, "%s: CQ error entry: %s (prov_errno %d)\n", what,
			fi_strerror(err.err), err.prov_errno);
		fails++;
		return false;
	}
	if (r != 1) {
		fprintf(stderr, "%s: no completion: %s\n", what, fi_strerror((int)-r));
		fails++;
		return false;
	}
	CHECK(e->op_context == ctx, "%s: completion of another operation", what);
	return e->op_context == ctx;
}

/* Post with retries while the provider answers -FI_EAGAIN. */
#define POST(expr)                                                          \
	({                                                                  \
		ssize_t _r;                                                 \
		double _t0 = now();                                         \
		while ((_r = (expr)) == -FI_EAGAIN && now() - _t0 < WAIT_S) \
			progress_all();                                     \
		_r;                                                         \
	})

static void bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fails++;
}

static int declined;
static void decline(const char *test, const char *why)
{
	printf("DECLINED %s: %s\n", test, why);
	declined = 1;
}

/* A and B opened on FI for tests that need nothing special. */
static int pair(struct fi_info *fi)
{
	if (open_side(&A, fi, false) || open_side(&B, fi, true) || connect_pair(&A, &B)) {
		fails++;
		return -1;
	}
	return 0;
}

static void t_peek(void)
{
	struct fi_info *fi;
	struct fi_context c1, c2, c3, c4;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint8_t out[200], in[200];
	struct iovec iov = { .iov_base = in, .iov_len = sizeof(in) };
	struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC };
	ssize_t r;
	int found = 0;
	double t0;

	if (get_info(FI_TAGGED, NULL, &fi) || pair(fi)) {
		fails++;
		return;
	}
	/* Nothing sent yet: a peek ends in an error entry FI_ENOMSG. */
	m.tag = 0x77;
	m.context = &c1;
	r = fi_trecvmsg(B.ep, &m, FI_PEEK);
	CHECK(r == 0, "FI_PEEK with nothing there: %s", fi_strerror((int)-r));
	r = next(B.cq, &e, &err);
	CHECK(r == -FI_EAVAIL && err.err == FI_ENOMSG && err.op_context == &c1,
	      "FI_PEEK with nothing there must give FI_ENOMSG (got %zd, err %d)", r, err.err);
	fi_side_fill(out, sizeof(out), 5);
	r = POST(fi_tsend(A.ep, out, sizeof(out), NULL, A.peer, 0x77, &c2));
	CHECK(r == 0, "tsend: %s", fi_strerror((int)-r));
	/* Peek until the message has arrived (FI_ENOMSG until then). */
	for (t0 = now(); !found && now() - t0 < WAIT_S;) {
		m.context = &c1;
		r = fi_trecvmsg(B.ep, &m, FI_PEEK);
		if (r) {
			CHECK(0, "FI_PEEK: %s", fi_strerror((int)-r));
			break;
		}
		r = next(B.cq, &e, &err);
		if (r == 1) {
			CHECK(e.op_context == &c1 && e.len == sizeof(out) && e.tag == 0x77,
			      "peek entry: len %zu tag %#llx", e.len, (unsigned long long)e.tag);
			found = 1;
		} else if (!(r == -FI_EAVAIL && err.err == FI_ENOMSG)) {
			CHECK(0, "peek: %zd err %d", r, err.err);
			break;
		}
	}
	CHECK(found, "FI_PEEK never found the message");
	expect(A.cq, &c2, &e, "send");
	/* Claim it, then receive the claimed message with FI_CLAIM. */
	m.context = &c3;
	r = fi_trecvmsg(B.ep, &m, FI_PEEK | FI_CLAIM);
	CHECK(r == 0, "FI_PEEK|FI_CLAIM: %s", fi_strerror((int)-r));
	if (r == 0 && expect(B.cq, &c3, &e, "FI_PEEK|FI_CLAIM"))
		CHECK(e.len == sizeof(out) && e.tag == 0x77, "claim entry len %zu", e.len);
	memset(in, 0, sizeof(in));
	m.context = &c3;
	r = fi_trecvmsg(B.ep, &m, FI_CLAIM);
	CHECK(r == 0, "FI_CLAIM receive: %s", fi_strerror((int)-r));
	if (r == 0 && expect(B.cq, &c3, &e, "FI_CLAIM receive"))
		CHECK(e.len == sizeof(out) && fi_side_same(in, sizeof(out), 5),
		      "claimed data differ");
	/* The claimed message is gone: a new peek finds nothing. */
	m.context = &c4;
	r = fi_trecvmsg(B.ep, &m, FI_PEEK);
	CHECK(r == 0, "FI_PEEK after the claim: %s", fi_strerror((int)-r));
	r = next(B.cq, &e, &err);
	CHECK(r == -FI_EAVAIL && err.err == FI_ENOMSG, "a claimed message is peeked again");
	fi_freeinfo(fi);
}

static void want_cq_data(struct fi_info *h)
{
	h->domain_attr->cq_data_size = 4;
}

static void t_cq_data(void)
{
	struct fi_info *fi;
	struct fi_context cs, cr;
	struct fi_cq_tagged_entry e;
	uint8_t out[64], in[64];
	ssize_t r;
	int i, got;

	got = get_info(FI_TAGGED | FI_MSG, want_cq_data, &fi);
	if (got == -FI_ENODATA) {
		decline("cq-data", "fi_getinfo -FI_ENODATA for cq_data_size 4");
		return;
	}
	if (got) {
		bad("fi_getinfo: %s", fi_strerror(-got));
		return;
	}
	CHECK(fi->domain_attr->cq_data_size >= 4, "granted cq_data_size %zu < 4 asked",
	      fi->domain_attr->cq_data_size);
	if (pair(fi))
		return;
	for (i = 0; i < 2; i++) {
		uint64_t data = 0x5eed0000u + (unsigned)i;

		fi_side_fill(out, sizeof(out), (unsigned)i);
		memset(in, 0, sizeof(in));
		r = i ? fi_trecv(B.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 9, 0, &cr) :
			fi_recv(B.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, &cr);
		CHECK(r == 0, "recv: %s", fi_strerror((int)-r));
		r = i ? POST(fi_tsenddata(A.ep, out, sizeof(out), NULL, data, A.peer, 9, &cs)) :
			POST(fi_senddata(A.ep, out, sizeof(out), NULL, data, A.peer, &cs));
		CHECK(r == 0, "%s: %s", i ? "fi_tsenddata" : "fi_senddata", fi_strerror((int)-r));
		if (r)
			continue;
		expect(A.cq, &cs, &e, "senddata");
		if (expect(B.cq, &cr, &e, "recv of senddata")) {
			CHECK(e.flags & FI_REMOTE_CQ_DATA, "%s: no FI_REMOTE_CQ_DATA flag",
			      i ? "fi_tsenddata" : "fi_senddata");
			CHECK(e.data == data, "%s: data %#llx, sent %#llx",
			      i ? "fi_tsenddata" : "fi_senddata", (unsigned long long)e.data,
			      (unsigned long long)data);
			CHECK(fi_side_same(in, sizeof(out), (unsigned)i), "payload differs");
		}
	}
	fi_freeinfo(fi);
}

/* B's buffer registered for remote access; its address and key for A. */
struct region {
	struct fid_mr *mr;
	uint64_t addr, key;
};

static int reg(struct fi_side *s, void *buf, size_t len, uint64_t acc, struct fi_info *fi,
	       struct region *g)
{
	int r = fi_mr_reg(s->dom, buf, len, acc, 0, 0, 0, &g->mr, NULL);

	if (r)
		return r;
	if (fi->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		r = fi_mr_bind(g->mr, &s->ep->fid, 0);
		if (!r)
			r = fi_mr_enable(g->mr);
	}
	g->key = fi_mr_key(g->mr);
	g->addr = fi->domain_attr->mr_mode & FI_MR_VIRT_ADDR ? (uint64_t)(uintptr_t)buf : 0;
	return r;
}

/* Progress both sides until BUF holds the pattern SEED (a remote write landed). */
static bool landed(const uint8_t *buf, size_t n, unsigned seed)
{
	double t0 = now();

	while (!fi_side_same(buf, n, seed)) {
		if (now() - t0 > WAIT_S)
			return false;
		progress_all();
	}
	return true;
}

static void t_inject_write(void)
{
	struct fi_info *fi;
	static uint8_t tgt[4096], src[4096];
	struct region g;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	size_t n;
	ssize_t r;
	int i;

	if (get_info(FI_RMA | FI_MSG, NULL, &fi) || pair(fi)) {
		fails++;
		return;
	}
	n = fi->tx_attr->inject_size < sizeof(src) ? fi->tx_attr->inject_size : sizeof(src);
	if (n == 0) {
		fi_freeinfo(fi);
		{
			decline("inject-write", "inject_size 0");
			return;
		}
	}
	printf("inject_size %zu, cq_data_size %zu\n", fi->tx_attr->inject_size,
	       fi->domain_attr->cq_data_size);
	if (reg(&B, tgt, sizeof(tgt), FI_REMOTE_WRITE, fi, &g)) {
		bad("fi_mr_reg failed");
		return;
	}
	for (i = 0; i < 2; i++) {
		size_t len = i ? n : 8;

		fi_side_fill(src, len, 20u + (unsigned)i);
		r = POST(fi_inject_write(A.ep, src, len, A.peer, g.addr, g.key));
		CHECK(r == 0, "fi_inject_write %zu bytes: %s", len, fi_strerror((int)-r));
		memset(src, 0, len); /* the buffer is the caller's again at once */
		if (r == 0)
			CHECK(landed(tgt, len, 20u + (unsigned)i),
			      "inject_write of %zu bytes did not land", len);
	}
	if (fi->domain_attr->cq_data_size > 0) {
		fi_side_fill(src, 32, 30);
		r = POST(fi_inject_writedata(A.ep, src, 32, 0xabcd, A.peer, g.addr, g.key));
		CHECK(r == 0, "fi_inject_writedata: %s", fi_strerror((int)-r));
		if (r == 0) {
			CHECK(landed(tgt, 32, 30), "inject_writedata did not land");
			r = next(B.cq, &e, &err);
			CHECK(r == 1 && (e.flags & FI_REMOTE_CQ_DATA) && e.data == 0xabcd,
			      "no remote CQ data entry for inject_writedata (%zd)", r);
		}
	}
	/* No completion is due at the initiator and none may be an error. */
	r = fi_cq_read(A.cq, &e, 1);
	CHECK(r == -FI_EAGAIN, "inject left an entry at the initiator (%zd)", r);
	fi_close(&g.mr->fid);
	fi_freeinfo(fi);
}

/*
 * Reads into a destination registered with FI_READ, then (the provider did
 * not ask for FI_MR_LOCAL, so any local buffer may be a destination) into one
 * registered for FI_REMOTE_READ only, as applications with one buffer for
 * everything do.
 */
static void t_rma_read(void)
{
	struct fi_info *fi;
	static uint8_t rsrc[16384], dst[16384];
	struct region g, l;
	struct fi_context c;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	size_t sizes[] = { 64, sizeof(dst) };
	uint64_t dacc[] = { FI_READ, FI_REMOTE_READ };
	ssize_t r;
	double t0;

	if (get_info(FI_RMA | FI_MSG, NULL, &fi) || pair(fi)) {
		fails++;
		return;
	}
	if (reg(&B, rsrc, sizeof(rsrc), FI_REMOTE_READ, fi, &g)) {
		bad("fi_mr_reg failed");
		return;
	}
	for (unsigned k = 0; k < 2; k++) {
		if (k && (fi->domain_attr->mr_mode & FI_MR_LOCAL))
			break;
		if (reg(&A, dst, sizeof(dst), dacc[k], fi, &l)) {
			bad("fi_mr_reg failed");
			break;
		}
		for (unsigned i = 0; i < 2; i++) {
			fi_side_fill(rsrc, sizes[i], 40 + i + k);
			memset(dst, 0, sizeof(dst));
			r = POST(fi_read(A.ep, dst, sizes[i], fi_mr_desc(l.mr), A.peer, g.addr,
					 g.key, &c));
			CHECK(r == 0, "fi_read: %s", fi_strerror((int)-r));
			if (r)
				continue;
			if (expect(A.cq, &c, &e,
				   k ? "fi_read (destination FI_REMOTE_READ)" :
				       "fi_read (destination FI_READ)")) {
				CHECK(e.flags & FI_READ, "read completion without FI_READ");
				CHECK(fi_side_same(dst, sizes[i], 40 + i + k),
				      "read %zu bytes: data differ", sizes[i]);
			}
		}
		fi_close(&l.mr->fid);
	}
	/* The target sees no error (and no entry: no FI_RMA_EVENT asked). */
	for (t0 = now(); now() - t0 < 0.2;) {
		r = fi_cq_read(B.cq, &e, 1);
		if (r == -FI_EAVAIL) {
			fi_cq_readerr(B.cq, &err, 0);
			CHECK(0, "CQ error entry at the read's target: %s", fi_strerror(err.err));
			break;
		}
		CHECK(r == -FI_EAGAIN, "an entry at the read's target (%zd)", r);
		if (r != -FI_EAGAIN)
			break;
		fi_cq_read(A.cq, &e, 0);
	}
	fi_close(&g.mr->fid);
	fi_freeinfo(fi);
}

static void want_two_eps(struct fi_info *h)
{
	h->domain_attr->ep_cnt = 2;
}

static void t_two_ep(void)
{
	struct fi_info *fi;
	struct fi_side A2 = { 0 };
	struct fi_context c[4];
	struct fi_cq_tagged_entry e;
	uint8_t in[2][32], out[2][32];
	fi_addr_t to2;
	uint8_t addr[256];
	size_t len = sizeof(addr);
	int r;

	r = get_info(FI_TAGGED, want_two_eps, &fi);
	if (r == -FI_ENODATA) {
		decline("two-ep", "fi_getinfo -FI_ENODATA for ep_cnt 2");
		return;
	}
	if (r) {
		bad("fi_getinfo: %s", fi_strerror(-r));
		return;
	}
	CHECK(fi->domain_attr->ep_cnt >= 2, "granted ep_cnt %zu < 2", fi->domain_attr->ep_cnt);
	if (pair(fi))
		return;
	/* A second endpoint in A's domain, with its own AV and CQ. */
	A2.dom = A.dom;
	r = fi_side_open_ep(&A2, fi, FI_AV_TABLE, 0);
	CHECK(r == 0, "second endpoint of one domain: %s", fi_strerror(-r));
	if (r)
		return;
	extra_cq = A2.cq;
	CHECK(fi_getname(&A2.ep->fid, addr, &len) == 0, "getname");
	CHECK(fi_av_insert(B.av, addr, 1, &to2, 0, NULL) == 1, "av_insert");
	len = sizeof(addr);
	CHECK(fi_getname(&B.ep->fid, addr, &len) == 0, "getname");
	CHECK(fi_av_insert(A2.av, addr, 1, &A2.peer, 0, NULL) == 1, "av_insert");
	/* Each endpoint sends to B, and B answers each. */
	for (int i = 0; i < 2; i++) {
		struct fi_side *s = i ? &A2 : &A;

		fi_side_fill(out[i], 32, 50u + (unsigned)i);
		CHECK(fi_trecv(B.ep, in[i], 32, NULL, FI_ADDR_UNSPEC, 1, 0, &c[0]) == 0, "trecv");
		CHECK(POST(fi_tsend(s->ep, out[i], 32, NULL, s->peer, 1, &c[1])) == 0, "tsend");
		if (expect(B.cq, &c[0], &e, "B receives"))
			CHECK(fi_side_same(in[i], 32, 50u + (unsigned)i),
			      "endpoint %d: data differ", i);
		expect(s->cq, &c[1], &e, "send");
		CHECK(fi_trecv(s->ep, in[i], 32, NULL, FI_ADDR_UNSPEC, 2, 0, &c[2]) == 0, "trecv");
		CHECK(POST(fi_tsend(B.ep, out[i], 32, NULL, i ? to2 : B.peer, 2, &c[3])) == 0,
		      "tsend");
		expect(B.cq, &c[3], &e, "B's answer sent");
		expect(s->cq, &c[2], &e, "answer received");
	}
	extra_cq = NULL;
	A2.dom = NULL;
	fi_side_close(&A2);
	fi_freeinfo(fi);
}

/* Every fi_info of LIST has a source address (and its length). */
static int check_src(const struct fi_info *list, char side)
{
	const struct fi_info *p;
	int n = 0;

	for (p = list; p; p = p->next, n++) {
		CHECK(p->src_addr && p->src_addrlen > 0, "%c: fi_info %d: no src_addr", side, n);
		CHECK(p->addr_format != FI_FORMAT_UNSPEC || p->src_addrlen > 0,
		      "%c: fi_info %d: address format unspecified", side, n);
	}
	printf("%c: %d fi_info, the first src_addrlen %zu\n", side, n, list->src_addrlen);
	return n;
}

/*
 * Each side's fi_info (asked where its endpoint lives: under dnp-run A on
 * node 0, B on the last node) has src_addr; endpoints opened with those
 * infos carry a message, and with FI_SOURCE granted fi_cq_readfrom names
 * the sender by the address B's AV gave it.
 */
static void t_src_addr(void)
{
	struct fi_info *fa = NULL, *fb = NULL;
	struct fi_context c[2];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t from = FI_ADDR_UNSPEC;
	uint8_t b[8] = { 1 };
	double t0;
	ssize_t r;

	pick_daemon(false);
	if (get_info(FI_TAGGED | FI_SOURCE, NULL, &fa)) {
		fails++;
		return;
	}
	pick_daemon(true);
	if (get_info(FI_TAGGED | FI_SOURCE, NULL, &fb)) {
		fails++;
		fi_freeinfo(fa);
		return;
	}
	check_src(fa, 'A');
	check_src(fb, 'B');
	CHECK(fa->caps & FI_SOURCE, "FI_SOURCE asked but not granted");
	/* each with its own src_addr: no socket named, DNP_SOCKET set before fi_domain */
	pick_daemon(false);
	r = fi_side_open(&A, fa, NULL, FI_AV_TABLE, 0);
	if (!r) {
		pick_daemon(true);
		r = fi_side_open(&B, fb, NULL, FI_AV_TABLE, 0);
	}
	CHECK(r == 0, "an endpoint with the src_addr of its fi_info: %s", fi_strerror(-(int)r));
	if (r || connect_pair(&A, &B)) {
		fails++;
		goto out;
	}
	CHECK(fi_trecv(B.ep, b, 8, NULL, FI_ADDR_UNSPEC, 3, 0, &c[0]) == 0, "trecv");
	CHECK(POST(fi_tsend(A.ep, b, 8, NULL, A.peer, 3, &c[1])) == 0, "tsend");
	for (t0 = now();
	     (r = fi_cq_readfrom(B.cq, &e, 1, &from)) == -FI_EAGAIN && now() - t0 < WAIT_S;)
		progress_all();
	if (r == -FI_EAVAIL) {
		fi_cq_readerr(B.cq, &err, 0);
		bad("receive: CQ error entry %s", fi_strerror(err.err));
	} else {
		CHECK(r == 1 && e.op_context == &c[0], "receive: %zd", r);
		CHECK(from == B.peer, "FI_SOURCE: fi_cq_readfrom gave %#llx, A is %#llx in B's AV",
		      (unsigned long long)from, (unsigned long long)B.peer);
	}
	expect(A.cq, &c[1], &e, "send");
out:
	fi_freeinfo(fa);
	fi_freeinfo(fb);
}

/* fi_getinfo on side b's daemon, its fabric and domain, and counters for what is given. */
static int cntr_side(struct fi_side *s, bool b, struct fi_info **fi, uint64_t f0, uint64_t f1)
{
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	uint64_t fl[2] = { f0, f1 };
	int r;

	pick_daemon(b);
	r = get_info(FI_TAGGED | FI_RMA, NULL, fi);
	if (r)
		return r;
	r = fi_fabric((*fi)->fabric_attr, &s->fab, NULL);
	if (!r)
		r = fi_domain(s->fab, *fi, &s->dom, NULL);
	for (int i = 0; i < 2 && !r; i++) {
		if (!fl[i])
			continue;
		r = fi_cntr_open(s->dom, &ca, &s->cntr[i], NULL);
		s->cntr_flags[i] = fl[i];
	}
	if (!r)
		r = fi_side_open_ep(s, *fi, FI_AV_TABLE, 0);
	return r;
}

/* Reads counter c (its side progressed) until it reaches v or WAIT_S pass; errors if err. */
static uint64_t cntr_until(struct fid_cntr *c, uint64_t v, bool err)
{
	double t0 = now();
	uint64_t n;

	while ((n = err ? fi_cntr_readerr(c) : fi_cntr_read(c)) < v && now() - t0 < WAIT_S)
		progress_all();
	return n;
}

/*
 * Counters bound to A for FI_SEND and for FI_READ|FI_WRITE, and to B for
 * FI_RECV: they count sends (fi_tinject included), receives and RMA, count
 * a truncated receive as an error, and fi_cntr_wait returns at its threshold
 * and blocks until its timeout below it; fi_cntr_add/set change the value.
 */
static void t_cntr(void)
{
	struct fi_info *fa = NULL, *fb = NULL;
	static uint8_t out[3][32], in[3][32], tgt[4096], src[64];
	struct fi_context c[8];
	struct region g;
	double t0, dt;
	uint64_t v;
	int r, i;

	r = cntr_side(&A, false, &fa, FI_SEND, FI_READ | FI_WRITE);
	if (r == -FI_ENOSYS) {
		decline("cntr", "fi_cntr_open: -FI_ENOSYS");
		goto out;
	}
	if (!r)
		r = cntr_side(&B, true, &fb, FI_RECV, 0);
	CHECK(r == 0, "counters opened and bound: %s", fi_strerror(-r));
	if (r || connect_pair(&A, &B))
		goto out;
	for (i = 0; i < 3; i++) {
		fi_side_fill(out[i], 32, 70u + (unsigned)i);
		CHECK(fi_trecv(B.ep, in[i], 32, NULL, FI_ADDR_UNSPEC, 6, 0, &c[i]) == 0, "trecv");
	}
	CHECK(POST(fi_tsend(A.ep, out[0], 32, NULL, A.peer, 6, &c[3])) == 0, "tsend");
	CHECK(POST(fi_tsend(A.ep, out[1], 32, NULL, A.peer, 6, &c[4])) == 0, "tsend");
	CHECK(POST(fi_tinject(A.ep, out[2], 32, A.peer, 6)) == 0, "tinject");
	r = fi_cntr_wait(A.cntr[0], 3, WAIT_S * 1000);
	CHECK(r == 0, "fi_cntr_wait(send, 3): %s", fi_strerror(-r));
	r = fi_cntr_wait(B.cntr[0], 3, WAIT_S * 1000);
	CHECK(r == 0, "fi_cntr_wait(recv, 3): %s", fi_strerror(-r));
	CHECK(fi_cntr_read(A.cntr[0]) == 3, "send counter %llu, 3 sent (one injected)",
	      (unsigned long long)fi_cntr_read(A.cntr[0]));
	CHECK(fi_cntr_read(B.cntr[0]) == 3, "recv counter %llu, 3 received",
	      (unsigned long long)fi_cntr_read(B.cntr[0]));
	CHECK(fi_cntr_readerr(A.cntr[0]) == 0 && fi_cntr_readerr(B.cntr[0]) == 0, "errors");
	for (i = 0; i < 3; i++)
		CHECK(fi_side_same(in[i], 32, 70u + (unsigned)i), "message %d differs", i);
	/* Below the threshold fi_cntr_wait blocks until its timeout. */
	t0 = now();
	r = fi_cntr_wait(B.cntr[0], 4, 300);
	dt = now() - t0;
	printf("fi_cntr_wait(300 ms) below its threshold: %d after %.0f ms\n", r, dt * 1e3);
	CHECK(r == -FI_ETIMEDOUT, "fi_cntr_wait below the threshold: %d, not -FI_ETIMEDOUT", r);
	CHECK(dt >= 0.25, "fi_cntr_wait returned after %.0f ms, before its 300 ms", dt * 1e3);
	CHECK(fi_cntr_add(B.cntr[0], 10) == 0 && fi_cntr_read(B.cntr[0]) == 13, "fi_cntr_add");
	CHECK(fi_cntr_set(B.cntr[0], 1) == 0 && fi_cntr_read(B.cntr[0]) == 1, "fi_cntr_set");
	/*
	 * fi_write, then fi_read, counted on A's RMA counter (before the
	 * truncation: on tcp;ofi_rxm an RMA after a truncated receive never lands).
	 */
	if (reg(&B, tgt, sizeof(tgt), FI_REMOTE_WRITE | FI_REMOTE_READ, fa, &g)) {
		bad("fi_mr_reg failed");
		goto out;
	}
	fi_side_fill(src, sizeof(src), 80);
	CHECK(POST(fi_write(A.ep, src, sizeof(src), NULL, A.peer, g.addr, g.key, &c[7])) == 0,
	      "fi_write");
	CHECK(cntr_until(A.cntr[1], 1, false) == 1, "RMA counter after fi_write");
	CHECK(landed(tgt, sizeof(src), 80), "written data differ");
	memset(src, 0, sizeof(src));
	CHECK(POST(fi_read(A.ep, src, sizeof(src), NULL, A.peer, g.addr, g.key, &c[7])) == 0,
	      "fi_read");
	/* (the target must progress too: fi_cntr_wait on A alone would not do for tcp) */
	CHECK(cntr_until(A.cntr[1], 2, false) == 2, "RMA counter after fi_read");
	CHECK(fi_side_same(src, sizeof(src), 80), "read data differ");
	CHECK(fi_cntr_readerr(A.cntr[1]) == 0, "RMA errors");
	/* A truncated receive counts as an error. */
	CHECK(fi_trecv(B.ep, in[0], 8, NULL, FI_ADDR_UNSPEC, 7, 0, &c[5]) == 0, "trecv");
	CHECK(POST(fi_tsend(A.ep, out[0], 32, NULL, A.peer, 7, &c[6])) == 0, "tsend");
	v = cntr_until(B.cntr[0], 1, true);
	CHECK(v == 1, "recv error counter %llu after a truncated receive", (unsigned long long)v);
	CHECK(fi_cntr_read(B.cntr[0]) == 1, "a truncated receive counted as a success");
	/* its error entry is read (a CQ with an error pending may not progress) */
	for (t0 = now(); now() - t0 < WAIT_S;) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		ssize_t n = next(B.cq, &e, &err);

		if (n == -FI_EAVAIL) {
			CHECK(err.err == FI_ETRUNC && err.op_context == &c[5], "error entry %d",
			      err.err);
			break;
		}
		CHECK(n == 1, "no error entry for the truncated receive: %zd", n);
		if (n != 1)
			break;
	}
	fi_side_close(&A); /* endpoints go before the region and counters */
	fi_close(&g.mr->fid);
out:
	fi_freeinfo(fa);
	fi_freeinfo(fb);
}

static void t_eq_sread(void)
{
	struct fi_info *fi;
	struct fi_eq_attr ea = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	struct fid_eq *eq;
	uint8_t buf[256];
	uint32_t ev;
	double t0, dt;
	ssize_t r;
	int rc;

	if (get_info(FI_TAGGED, NULL, &fi)) {
		fails++;
		return;
	}
	pick_daemon(false);
	rc = fi_fabric(fi->fabric_attr, &A.fab, NULL);
	CHECK(rc == 0, "fi_fabric: %s", fi_strerror(-rc));
	if (rc)
		return;
	rc = fi_eq_open(A.fab, &ea, &eq, NULL);
	if (rc == -FI_ENOSYS) {
		fi_freeinfo(fi);
		{
			decline("eq-sread", "fi_eq_open with a wait object: -FI_ENOSYS");
			return;
		}
	}
	CHECK(rc == 0, "fi_eq_open: %s", fi_strerror(-rc));
	if (rc)
		return;
	t0 = now();
	r = fi_eq_sread(eq, &ev, buf, sizeof(buf), 400, 0);
	dt = now() - t0;
	printf("fi_eq_sread(400 ms) returned %zd after %.0f ms\n", r, dt * 1e3);
	CHECK(r == -FI_EAGAIN, "fi_eq_sread on an empty EQ: %zd, not -FI_EAGAIN", r);
	CHECK(dt >= 0.35, "fi_eq_sread returned after %.0f ms, before its 400 ms timeout",
	      dt * 1e3);
	fi_close(&eq->fid);
	fi_freeinfo(fi);
}

static void t_inject_nosel(void)
{
	struct fi_info *fi;
	struct fi_context cs, cr;
	struct fi_cq_tagged_entry e;
	uint8_t out[32], in[32];
	struct iovec iov = { .iov_base = out, .iov_len = sizeof(out) };
	ssize_t r;

	if (get_info(FI_TAGGED | FI_MSG, NULL, &fi) || pair(fi)) {
		fails++;
		return;
	}
	for (int i = 0; i < 2; i++) {
		fi_side_fill(out, sizeof(out), 60u + (unsigned)i);
		memset(in, 0, sizeof(in));
		if (i) {
			struct fi_msg_tagged m = { .msg_iov = &iov,
						   .iov_count = 1,
						   .addr = A.peer,
						   .tag = 4,
						   .context = &cs };

			CHECK(fi_trecv(B.ep, in, 32, NULL, FI_ADDR_UNSPEC, 4, 0, &cr) == 0,
			      "trecv");
			r = POST(fi_tsendmsg(A.ep, &m, FI_INJECT));
		} else {
			struct fi_msg m = {
				.msg_iov = &iov, .iov_count = 1, .addr = A.peer, .context = &cs
			};

			CHECK(fi_recv(B.ep, in, 32, NULL, FI_ADDR_UNSPEC, &cr) == 0, "recv");
			r = POST(fi_sendmsg(A.ep, &m, FI_INJECT));
		}
		CHECK(r == 0, "%s(FI_INJECT): %s", i ? "fi_tsendmsg" : "fi_sendmsg",
		      fi_strerror((int)-r));
		memset(out, 0, sizeof(out));
		if (r)
			continue;
		if (expect(B.cq, &cr, &e, "receive of an injected message"))
			CHECK(fi_side_same(in, 32, 60u + (unsigned)i), "payload differs");
		/* No FI_SELECTIVE_COMPLETION: every operation completes at the sender. */
		expect(A.cq, &cs, &e,
		       i ? "fi_tsendmsg(FI_INJECT) completion" :
			   "fi_sendmsg(FI_INJECT) completion");
	}
	fi_freeinfo(fi);
}

/* ---- multi-process modes ---- */

static int write_name(const char *path, struct fid_ep *ep)
{
	uint8_t addr[256];
	size_t len = sizeof(addr);
	char tmp[4200];
	FILE *f;

	if (fi_getname(&ep->fid, addr, &len) || len > sizeof(addr))
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	for (size_t i = 0; i < len; i++)
		fprintf(f, "%02x", addr[i]);
	fputc('\n', f);
	if (fclose(f) || rename(tmp, path))
		return -1;
	return 0;
}

static ssize_t read_name(const char *path, uint8_t *addr, size_t cap)
{
	double t0 = now();
	FILE *f;
	size_t n = 0;
	unsigned v;

	while (!(f = fopen(path, "r"))) {
		if (now() - t0 > WAIT_S)
			return -1;
		usleep(20000);
	}
	while (n < cap && fscanf(f, "%2x", &v) == 1)
		addr[n++] = (uint8_t)v;
	fclose(f);
	return (ssize_t)n;
}

#define ROUNDS 50

struct hello {
	uint32_t id, len;
	uint8_t addr[256];
};

static int serve(const char *dir, int nclients)
{
	struct fi_info *fi;
	struct fi_context c[2];
	struct fi_cq_tagged_entry e;
	struct hello h;
	char path[4096];
	uint64_t v;

	if (get_info(FI_MSG, NULL, &fi) || open_side(&A, fi, false))
		return 1;
	snprintf(path, sizeof(path), "%s/server.addr", dir);
	if (write_name(path, A.ep))
		return 1;
	for (int k = 0; k < nclients && !fails; k++) {
		fi_addr_t peer;

		CHECK(fi_recv(A.ep, &h, sizeof(h), NULL, FI_ADDR_UNSPEC, &c[0]) == 0, "recv");
		if (!expect(A.cq, &c[0], &e, "hello"))
			break;
		CHECK(h.len <= sizeof(h.addr), "hello");
		CHECK(fi_av_insert(A.av, h.addr, 1, &peer, 0, NULL) == 1, "av_insert");
		for (int i = 0; i < ROUNDS && !fails; i++) {
			CHECK(fi_recv(A.ep, &v, 8, NULL, FI_ADDR_UNSPEC, &c[0]) == 0, "recv");
			if (!expect(A.cq, &c[0], &e, "ping"))
				break;
			v += 1000000;
			CHECK(POST(fi_send(A.ep, &v, 8, NULL, peer, &c[1])) == 0, "send");
			expect(A.cq, &c[1], &e, "pong sent");
		}
		printf("server: client %u done (%d rounds)\n", h.id, ROUNDS);
		fflush(stdout);
		fi_av_remove(A.av, &peer, 1, 0); /* -FI_ENOSYS is no error here */
	}
	fi_side_close(&A);
	fi_freeinfo(fi);
	return fails ? 1 : 0;
}

static int client(const char *dir, int id)
{
	struct fi_info *fi;
	struct fi_context c[2];
	struct fi_cq_tagged_entry e;
	struct hello h = { .id = (uint32_t)id };
	uint8_t addr[256];
	char path[4096];
	size_t len = sizeof(h.addr);
	ssize_t n;
	uint64_t v;

	if (get_info(FI_MSG, NULL, &fi) || open_side(&A, fi, false))
		return 1;
	snprintf(path, sizeof(path), "%s/server.addr", dir);
	n = read_name(path, addr, sizeof(addr));
	if (n <= 0 || fi_av_insert(A.av, addr, 1, &A.peer, 0, NULL) != 1) {
		fprintf(stderr, "client %d: no server address\n", id);
		return 1;
	}
	CHECK(fi_getname(&A.ep->fid, h.addr, &len) == 0, "getname");
	h.len = (uint32_t)len;
	CHECK(POST(fi_send(A.ep, &h, sizeof(h), NULL, A.peer, &c[1])) == 0, "hello");
	expect(A.cq, &c[1], &e, "hello sent");
	for (int i = 0; i < ROUNDS && !fails; i++) {
		CHECK(fi_recv(A.ep, &v, 8, NULL, FI_ADDR_UNSPEC, &c[0]) == 0, "recv");
		CHECK(POST(fi_send(A.ep, &(uint64_t){ (uint64_t)i }, 8, NULL, A.peer, &c[1])) == 0,
		      "send");
		expect(A.cq, &c[1], &e, "ping sent");
		if (expect(A.cq, &c[0], &e, "pong"))
			CHECK(v == (uint64_t)i + 1000000, "pong %d: %llu", i,
			      (unsigned long long)v);
	}
	printf("client %d: %s after %d rounds\n", id, fails ? "FAIL" : "PASS", ROUNDS);
	fi_side_close(&A);
	fi_freeinfo(fi);
	return fails ? 1 : 0;
}

/* Blocks in a CQ read with nothing to come; returns when the provider fails it. */
static int block(void)
{
	struct fi_info *fi;
	struct fi_context c;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint8_t b[64];
	ssize_t r;
	bool sread = true;

	if (get_info(FI_TAGGED, NULL, &fi) || open_side(&A, fi, false))
		return 1;
	CHECK(fi_trecv(A.ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, 1, 0, &c) == 0, "trecv");
	printf("READY\n");
	fflush(stdout);
	for (;;) {
		r = sread ? fi_cq_sread(A.cq, &e, 1, NULL, -1) : fi_cq_read(A.cq, &e, 1);
		if (r == -FI_ENOSYS && sread) {
			sread = false; /* no wait object: spin in fi_cq_read */
			continue;
		}
		if (r == -FI_EAGAIN)
			continue;
		break;
	}
	if (r == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		fi_cq_readerr(A.cq, &err, 0);
		printf("CQ error entry: %s\n", fi_strerror(err.err));
	} else {
		printf("fi_cq_%sread returned %zd (%s)\n", sread ? "s" : "", r,
		       r < 0 ? fi_strerror((int)-r) : "an entry");
	}
	/* Closing after a lost daemon must not hang or crash either. */
	fi_side_close(&A);
	fi_freeinfo(fi);
	return r == 1 ? 1 : 3;
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "peek", t_peek },
	{ "cq-data", t_cq_data },
	{ "inject-write", t_inject_write },
	{ "rma-read", t_rma_read },
	{ "two-ep", t_two_ep },
	{ "src-addr", t_src_addr },
	{ "eq-sread", t_eq_sread },
	{ "inject-nosel", t_inject_nosel },
	{ "cntr", t_cntr },
};

int main(int argc, char **argv)
{
	const char *t;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3)
		goto usage;
	prov = argv[1];
	t = argv[2];
	own_socket = !strcmp(t, "serve") || !strcmp(t, "client") || !strcmp(t, "block");
	if (!strcmp(t, "serve") && argc == 5)
		return serve(argv[3], atoi(argv[4]));
	if (!strcmp(t, "client") && argc == 5)
		return client(argv[3], atoi(argv[4]));
	if (!strcmp(t, "block"))
		return block();
	if (getenv("DNP_NODE_ID") && strcmp(getenv("DNP_NODE_ID"), "0"))
		return 0; /* under dnp-run one instance does everything */
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (strcmp(t, tests[i].name))
			continue;
		tests[i].fn();
		fi_side_close(&A);
		fi_side_close(&B);
		if (!declined)
			printf("%s %s (%s)\n", fails ? "FAIL" : "PASS", t, prov);
		return fails ? 1 : 0;
	}
usage:
	fprintf(stderr, "usage: fi_conform PROVIDER TEST | serve DIR N | client DIR I | block\n");
	return 2;
}
