/* SPDX-License-Identifier: MIT */
/*
 * pagefault_bench — what page faults cost a PUT (PART, "page-fault-tolerant
 * RDMA": about 38 us for a one-page transfer with a minor fault at the
 * destination, 2.6x for 1 MB with a fault on every page). Run it under
 * dnp-run on two nodes or more (node 0 puts, node 1 is the target; others
 * idle):
 *
 *   dnp-run --torus 2x1x1 -- pagefault_bench [--iters N]
 *
 * Every buffer lies outside the shared heap, so the daemons reach it with
 * process_vm_readv/writev, which take the faults. For each size (one page,
 * 1 MiB, 4 MiB) node 0 times PUTs, one at a time, from the call to TX_DONE:
 *   warm      source and target pages touched before
 *   cold dst  the target pages were never touched (each PUT into fresh
 *             pages of a registered private mapping): a write fault per page
 *   cold src  the source pages were never touched (a fresh mapping per
 *             PUT): a read fault per page (the zero page)
 *   populated the target pages were never touched by the application, but
 *             registered with DNP_BUF_POPULATE (the proactive page-in: the
 *             faults are taken at registration, which node 1 times)
 * and prints the medians and their ratios to warm. First, for reference,
 * the kernel's part alone: process_vm_writev/readv of node 0 into its own
 * fresh or touched pages, without daemons. A benchmark: it prints figures
 * and checks only that every PUT completed and that the populated target's
 * pages are all in memory after its registration (mincore).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "app_common.h"

#define PROG "pagefault_bench"
#define TAG_COLD 41
#define TAG_WARM 42
#define TAG_END 43
#define TAG_POP 44
#define PAGE 4096u
#define MAXLEN (4u << 20)
#define MAXITERS 101u

static const size_t sizes[] = { PAGE, 1u << 20, 4u << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void *map(size_t len, bool touch)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (touch)
		memset(p, 0x3c, len);
	return p;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static double median_us(uint64_t *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2] / 1e3;
}

/* One PUT, timed from the call to its TX_DONE (ns); 0 on an error (printed). */
static uint64_t timed_put(struct app *a, const void *src, size_t len, uint64_t rva, uint32_t rkey,
			  uint64_t cookie)
{
	struct dnp_event ev;
	uint64_t t0 = app_now_ns();
	int r = dnp_put(a->d, src, len, app_coords_of(a, 1), a->peer_port, rva, rkey, cookie, 0);

	if (r == 0)
		r = app_wait_completion(a, cookie, &ev);
	if (r == 0 && ev.type != DNP_EV_TX_DONE)
		r = ev.status ? ev.status : -EIO;
	if (r) {
		fprintf(stderr, PROG ": put of %zu bytes: %s\n", len, dnp_strerror(r));
		return 0;
	}
	return app_now_ns() - t0;
}

/* process_vm_writev (wr) or _readv of len bytes between buf and fresh or touched own pages (ns). */
static uint64_t vm_copy(uint8_t *buf, size_t len, bool wr, bool fresh_pages)
{
	uint8_t *p = map(len, !fresh_pages);
	struct iovec local = { .iov_base = buf, .iov_len = len }, remote = { .iov_len = len };
	uint64_t t0;
	ssize_t n;

	if (!p)
		return 0;
	remote.iov_base = p;
	t0 = app_now_ns();
	n = wr ? process_vm_writev(getpid(), &local, 1, &remote, 1, 0) :
		 process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	t0 = app_now_ns() - t0;
	munmap(p, len);
	return n == (ssize_t)len ? t0 : 0;
}

/* The kernel's part: the copies a daemon makes, into (write) or from (read) fresh pages. */
static int kernel_part(uint8_t *buf, unsigned iters)
{
	uint64_t t[4][MAXITERS];

	printf("%10s %10s %10s %8s %10s %10s %8s  (process_vm_* alone, us, medians of %u)\n",
	       "bytes", "wr warm", "wr fresh", "ratio", "rd warm", "rd fresh", "ratio", iters);
	for (unsigned s = 0; s < NSIZES; s++) {
		for (unsigned i = 0; i < iters; i++)
			for (unsigned k = 0; k < 4; k++)
				if (!(t[k][i] = vm_copy(buf, sizes[s], k < 2, k & 1)))
					return -EFAULT;
		double ww = median_us(t[0], iters), wf = median_us(t[1], iters),
		       rw = median_us(t[2], iters), rf = median_us(t[3], iters);
		printf("%10zu %10.1f %10.1f %7.2fx %10.1f %10.1f %7.2fx\n", sizes[s], ww, wf,
		       wf / ww, rw, rf, rf / rw);
	}
	return 0;
}

static int run_a(struct app *a, unsigned iters)
{
	struct app_msg cold, warm, pop;
	uint8_t *src = map(MAXLEN, true);
	uint64_t t[4][MAXITERS], cookie = 1, cold_off = PAGE;

	if (!src || kernel_part(src, iters) < 0 || app_ctrl_recv(a, 1, TAG_COLD, &cold) < 0 ||
	    app_ctrl_recv(a, 1, TAG_WARM, &warm) < 0 || app_ctrl_recv(a, 1, TAG_POP, &pop) < 0)
		return 1;
	printf("%10s %10s %10s %8s %10s %8s %10s %8s  (us, medians of %u PUTs, call to TX_DONE)\n",
	       "bytes", "warm", "cold dst", "ratio", "cold src", "ratio", "populated", "ratio",
	       iters);
	for (unsigned s = 0; s < NSIZES; s++) {
		size_t len = sizes[s];

		for (unsigned i = 0; i < iters; i++) {
			uint8_t *fresh = map(len, false);

			if (!fresh)
				return 1;
			t[0][i] = timed_put(a, src, len, warm.c.a, (uint32_t)warm.c.b, cookie++);
			t[1][i] = timed_put(a, src, len, cold.c.a + cold_off, (uint32_t)cold.c.b,
					    cookie++);
			cold_off += len;
			t[2][i] = timed_put(a, fresh, len, warm.c.a, (uint32_t)warm.c.b, cookie++);
			t[3][i] = timed_put(a, src, len, pop.c.a + cold_off - len,
					    (uint32_t)pop.c.b, cookie++);
			munmap(fresh, len);
			if (!t[0][i] || !t[1][i] || !t[2][i] || !t[3][i])
				return 1;
		}
		double w = median_us(t[0], iters), cd = median_us(t[1], iters),
		       cs = median_us(t[2], iters), cp = median_us(t[3], iters);
		printf("%10zu %10.1f %10.1f %7.2fx %10.1f %7.2fx %10.1f %7.2fx\n", len, w, cd,
		       cd / w, cs, cs / w, cp, cp / w);
		printf("%10s %10s %10.2f %8s %10.2f %8s %10.2f %8s  (extra us per page)\n", "", "",
		       (cd - w) / (double)(len / PAGE), "", (cs - w) / (double)(len / PAGE), "",
		       (cp - w) / (double)(len / PAGE), "");
	}
	printf("PART (ARMv8, destination faults): one page with a minor fault ~38 us; "
	       "1 MB with a fault on every page 2.6x the no-fault time\n");
	struct app_ctrl c = { .tag = TAG_END };
	return app_ctrl_send(a, 1, &c) < 0;
}

/* The populated target: registered with DNP_BUF_POPULATE (timed, printed), then offered. */
static int offer_populated(struct app *a, uint8_t *buf, size_t len)
{
	struct app_ctrl c = { .tag = TAG_POP, .a = (uintptr_t)buf };
	uint32_t key;
	uint64_t t0 = app_now_ns();
	int r = dnp_register(a->d, buf, len, DNP_BUF_PUT_TARGET | DNP_BUF_POPULATE, &key);

	t0 = app_now_ns() - t0;
	if (r < 0) {
		fprintf(stderr, PROG ": register %zu bytes with DNP_BUF_POPULATE: %s\n", len,
			dnp_strerror(r));
		return r;
	}
	printf("registration with DNP_BUF_POPULATE: %zu pages in %.1f ms (%.2f us per page)\n",
	       len / PAGE, t0 / 1e6, t0 / 1e3 / (double)(len / PAGE));
	/* the one check: every page is in memory now, though the program never touched it */
	unsigned char *vec = malloc(len / PAGE);
	size_t in = 0;

	if (!vec || mincore(buf, len, vec) < 0) {
		free(vec);
		return -ENOMEM;
	}
	for (size_t i = 0; i < len / PAGE; i++)
		in += vec[i] & 1u;
	free(vec);
	if (in != len / PAGE) {
		fprintf(stderr, PROG ": DNP_BUF_POPULATE left %zu of %zu pages out\n",
			len / PAGE - in, len / PAGE);
		return -EFAULT;
	}
	c.b = key;
	return app_ctrl_send(a, 0, &c);
}

static int run_b(struct app *a, unsigned iters)
{
	size_t cold_len = PAGE;
	struct app_msg m;

	for (unsigned s = 0; s < NSIZES; s++)
		cold_len += sizes[s] * iters;
	uint8_t *cold = map(cold_len, false), *warm = map(MAXLEN, true),
		*pop = map(cold_len, false);

	if (!cold || !warm || !pop)
		return 1;
	if (app_offer_buffer(a, 0, TAG_COLD, cold, cold_len, PROG) < 0 ||
	    app_offer_buffer(a, 0, TAG_WARM, warm, MAXLEN, PROG) < 0 ||
	    offer_populated(a, pop, cold_len) < 0)
		return 1;
	return app_ctrl_recv(a, 0, TAG_END, &m) < 0;
}

int main(int argc, char **argv)
{
	unsigned iters = 15;
	struct app a;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
			iters = (unsigned)atoi(argv[++i]);
		} else {
			fprintf(stderr, "usage: " PROG " [--iters N]  (N odd, 1..%u)\n", MAXITERS);
			return 2;
		}
	}
	if (iters < 1 || iters > MAXITERS) {
		fprintf(stderr, PROG ": --iters 1..%u\n", MAXITERS);
		return 2;
	}
	if (app_open(&a, PROG) < 0)
		return 1;
	if (a.nnodes < 2) {
		fprintf(stderr, PROG ": needs two nodes or more\n");
		app_close(&a);
		return 2;
	}
	rc = a.id == 0 ? run_a(&a, iters) : a.id == 1 ? run_b(&a, iters) : 0;
	app_close(&a);
	return rc;
}
