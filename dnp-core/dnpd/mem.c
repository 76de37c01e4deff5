/* SPDX-License-Identifier: MIT */
/*
 * mem.c — the engine's memory callbacks (engine.h, struct dnp_mem_ops) for
 * dnpd: buffers in a session's shared heap are copied directly; memory
 * outside it goes through process_vm_readv/writev of the session's process
 * (sess.c checks its pidfd), with a read-ahead per message and writes
 * gathered into one call (docs/dnpd.md). Counted in struct dnpd (mem_*).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "dnpd_int.h"

/* process_vm_* through the session's pidfd checks (sess.c); counted for dnpctl stats. */
static int dnpd_vm_io(struct dnpd *d, struct dnpd_session *se, uint64_t va, void *local, size_t len,
		      bool wr)
{
	int r;

	d->mem_vm++;
	r = dnpd_sess_vm_io(se, va, local, len, wr, d->iters);
	if (r)
		d->mem_faults++;
	return r ? -EFAULT : 0; /* the engine's contract (struct dnp_mem_ops) */
}

/*
 * A registered buffer inside the app's heap carries our mapping in priv; an
 * unregistered range may still be in the heap; anything else is another
 * process's memory, one process_vm_* call away.
 */
static void *dnpd_mem_addr(struct dnpd *d, struct dnpd_session *se, const struct dnp_buf *buf,
			   uint64_t va, size_t len)
{
	if (buf && buf->priv)
		return (uint8_t *)buf->priv + (va - buf->va);
	return dnpd_sess_heap_addr(se, va, len);
}

/*
 * Writes outside the heap are gathered: the engine writes a message one
 * packet at a time, in order, and one process_vm_writev (plus its liveness
 * checks) per 4 KiB packet was most of the cost of such a message
 * (docs/performance.md, "Private memory: one system call per 64 KiB"). A
 * write that continues the pending range [wb_va, wb_va + wb_len) is copied
 * behind it; anything else (another range, a full gather buffer, a read that
 * could see that memory, the engine's flush of a message) writes the pending
 * range first. Its failure is kept as a range in wb_fail, and the engine's
 * flush of a message whose range overlaps it fails that message (engine.h,
 * struct dnp_mem_ops): a fault is never reported as data that arrived.
 */
#define DNPD_WB_FAILS                                  \
	(sizeof(((struct dnpd_session *)0)->wb_fail) / \
	 sizeof(((struct dnpd_session *)0)->wb_fail[0]))

/* Sets the failed ranges to r[0..n): beyond the room, the last one grows to hold the rest. */
static void dnpd_wb_fails_set(struct dnpd_session *se, const uint64_t (*r)[2], unsigned n)
{
	se->wb_nfail = 0;
	for (unsigned i = 0; i < n; i++) {
		if (se->wb_nfail < DNPD_WB_FAILS) {
			se->wb_fail[se->wb_nfail].lo = r[i][0];
			se->wb_fail[se->wb_nfail++].hi = r[i][1];
			continue;
		}
		if (r[i][0] < se->wb_fail[DNPD_WB_FAILS - 1].lo)
			se->wb_fail[DNPD_WB_FAILS - 1].lo = r[i][0];
		if (r[i][1] > se->wb_fail[DNPD_WB_FAILS - 1].hi)
			se->wb_fail[DNPD_WB_FAILS - 1].hi = r[i][1];
	}
}

static void dnpd_wb_flush(struct dnpd *d, struct dnpd_session *se)
{
	if (!se->wb_len)
		return;
	if (dnpd_vm_io(d, se, se->wb_va, se->wb, se->wb_len, true)) {
		uint64_t r[DNPD_WB_FAILS + 1][2];
		unsigned n = se->wb_nfail;

		for (unsigned i = 0; i < n; i++) {
			r[i][0] = se->wb_fail[i].lo;
			r[i][1] = se->wb_fail[i].hi;
		}
		r[n][0] = se->wb_va;
		r[n][1] = se->wb_va + se->wb_len;
		dnpd_wb_fails_set(se, (const uint64_t(*)[2])r, n + 1);
	}
	se->wb_len = 0;
}

/*
 * The engine's flush (struct dnp_mem_ops): the pending writes land; -EFAULT
 * if a gathered write into [va, va + len) failed. The part of each failed
 * range that overlaps it is reported now and forgotten; the rest stays for
 * the message it belongs to.
 */
static int dnpd_mem_flush(void *ctx, unsigned port, uint64_t va, uint64_t len)
{
	struct dnpd *d = ctx;
	struct dnpd_session *se = port < 256 ? d->sess->by_port[port] : NULL;
	uint64_t end = va + len < va ? UINT64_MAX : va + len;
	uint64_t r[2 * DNPD_WB_FAILS][2];
	unsigned n = 0;
	int rc = 0;

	if (!se)
		return -EFAULT;
	dnpd_wb_flush(d, se);
	if (!se->wb_nfail)
		return 0;
	for (unsigned i = 0; i < se->wb_nfail; i++) {
		uint64_t lo = se->wb_fail[i].lo, hi = se->wb_fail[i].hi;

		if (hi <= va || lo >= end) {
			r[n][0] = lo, r[n++][1] = hi;
			continue;
		}
		rc = -EFAULT; /* reported now; what lies outside stays */
		if (lo < va)
			r[n][0] = lo, r[n++][1] = va;
		if (hi > end)
			r[n][0] = end, r[n++][1] = hi;
	}
	dnpd_wb_fails_set(se, (const uint64_t(*)[2])r, n);
	return rc;
}

/*
 * A read of the app's memory outside its heap (process_vm_readv, three system
 * calls with the liveness checks). The engine reads a message's source one
 * packet at a time, in order (a GET's responses, a PUT's packets), and says
 * which message and where it ends (struct dnp_mem_seq): one call fetches up to
 * DNPD_READAHEAD bytes of it from va on, and the message's next reads are
 * copies. A read-ahead serves only the message it was made for (a later
 * message from the same memory reads it again, as the application may have
 * changed it in between), and a write of ours into it drops it
 * (dnpd_mem_write). A read-ahead that fails (a page unmapped further on)
 * falls back to the exact read, with its own result. Pending gathered writes
 * that the read could see are written first.
 */
static int dnpd_read_private(struct dnpd *d, struct dnpd_session *se, uint64_t va, void *dst,
			     size_t len, const struct dnp_mem_seq *seq)
{
	uint64_t n = len;

	if (seq && seq->end > va && seq->end - va > len)
		n = seq->end - va > DNPD_READAHEAD ? DNPD_READAHEAD : seq->end - va;
	if (se->wb_len && se->wb_va < va + n && va < se->wb_va + se->wb_len)
		dnpd_wb_flush(d, se);
	if (seq && se->ra_len && se->ra_id == seq->id && va >= se->ra_va &&
	    va - se->ra_va <= se->ra_len && len <= se->ra_len - (va - se->ra_va)) {
		memcpy(dst, se->ra + (va - se->ra_va), len);
		d->mem_ra_hits++;
		return 0;
	}
	if (n > len) {
		if (!se->ra)
			se->ra = malloc(DNPD_READAHEAD);
		se->ra_len = 0;
		if (se->ra && dnpd_vm_io(d, se, va, se->ra, n, false) == 0) {
			se->ra_va = va;
			se->ra_len = n;
			se->ra_id = seq->id;
			memcpy(dst, se->ra, len);
			return 0;
		}
	}
	return dnpd_vm_io(d, se, va, dst, len, false);
}

/*
 * The part of a read or write both share: the port's session, and a direct
 * copy when [va, va+len) lies in its shared heap. Returns 0 (done), 1 (the
 * memory is private: *sep is the session to reach it through) or -EFAULT
 * (no session on that port).
 */
static int dnpd_mem_shared(struct dnpd *d, unsigned port, const struct dnp_buf *buf, uint64_t va,
			   void *data, size_t len, bool wr, struct dnpd_session **sep)
{
	struct dnpd_session *se = port < 256 ? d->sess->by_port[port] : NULL;
	void *p;

	if (!se)
		return -EFAULT;
	if (len == 0)
		return 0;
	p = dnpd_mem_addr(d, se, buf, va, len);
	if (!p) {
		*sep = se;
		return 1;
	}
	if (wr)
		memcpy(p, data, len);
	else
		memcpy(data, p, len);
	d->mem_copies++;
	return 0;
}

static int dnpd_mem_read(void *ctx, unsigned port, const struct dnp_buf *buf, uint64_t va,
			 void *dst, size_t len, const struct dnp_mem_seq *seq)
{
	struct dnpd *d = ctx;
	struct dnpd_session *se;
	int r = dnpd_mem_shared(d, port, buf, va, dst, len, false, &se);

	return r <= 0 ? r : dnpd_read_private(d, se, va, dst, len, seq);
}

static int dnpd_mem_write(void *ctx, unsigned port, const struct dnp_buf *buf, uint64_t va,
			  const void *src, size_t len)
{
	struct dnpd *d = ctx;
	struct dnpd_session *se;
	int r = dnpd_mem_shared(d, port, buf, va, (void *)src, len, true, &se);

	if (r <= 0)
		return r;
	if (se->ra_len && va < se->ra_va + se->ra_len && se->ra_va < va + len)
		se->ra_len = 0; /* the read-ahead no longer shows that memory */
	if (se->wb_len && (va != se->wb_va + se->wb_len || len > DNPD_GATHER - se->wb_len))
		dnpd_wb_flush(d, se);
	if (!se->wb && len <= DNPD_GATHER)
		se->wb = malloc(DNPD_GATHER);
	if (!se->wb || len > DNPD_GATHER)
		return dnpd_vm_io(d, se, va, (void *)src, len, true);
	if (!se->wb_len)
		se->wb_va = va;
	else
		d->mem_gathered++;
	memcpy(se->wb + se->wb_len, src, len);
	se->wb_len += len;
	return 0;
}

/*
 * One pass (engine.h, struct dnp_mem_ops.stable): a range of the session's
 * heap. The heap stays mapped until the port closes (dnpd_sess_drop closes
 * the port first, and the engine reads what it still needs then) and is
 * sealed against shrinking, so a later read of it is a memcpy, never a
 * fault; private memory is not (each read is a process_vm_readv).
 */
static bool dnpd_mem_stable(void *ctx, unsigned port, uint64_t va, size_t len)
{
	struct dnpd *d = ctx;
	struct dnpd_session *se = port < 256 ? d->sess->by_port[port] : NULL;

	return se && dnpd_sess_heap_addr(se, va, len) != NULL;
}

const struct dnp_mem_ops dnpd_mem_ops = {
	.read = dnpd_mem_read,
	.write = dnpd_mem_write,
	.flush = dnpd_mem_flush,
	.stable = dnpd_mem_stable,
};
