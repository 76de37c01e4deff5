/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "regs.h"

void dnp_lfm_regs_init(struct dnp_lfm_regs *r, uint32_t node, const unsigned dim[3])
{
	memset(r, 0, sizeof(*r));
	r->magic = DNP_LFM_MAGIC;
	r->version = DNP_LFM_VERSION;
	r->size = (uint16_t)sizeof(*r);
	r->node = node;
	for (unsigned i = 0; i < 3; i++)
		r->dim[i] = (uint8_t)dim[i];
	atomic_store(&r->t_write_ms, DNP_LFM_T_WRITE_DEFAULT);
	atomic_store(&r->t_read_ms, DNP_LFM_T_READ_DEFAULT);
	atomic_store(&r->mask, DNP_LFM_MASK_ALL);
	/*
	 * Defaults for a board in a machine room: die temperature warning at
	 * 80 °C, alarm at 95 °C; core voltage 0.9 V nominal, +-5 % warning,
	 * +-10 % alarm; board power 25 W warning, 30 W alarm (the APEnet+ card
	 * draws about 20 W). A link is sick above 100 CRC errors per million
	 * frames, judged over windows of at least 100 frames.
	 */
	atomic_store(&r->th.warn[0], 80000);
	atomic_store(&r->th.alarm[0], 95000);
	atomic_store(&r->th.warn[1], 945);
	atomic_store(&r->th.alarm[1], 990);
	atomic_store(&r->th.volt_warn_low, 855);
	atomic_store(&r->th.volt_alarm_low, 810);
	atomic_store(&r->th.warn[2], 25000);
	atomic_store(&r->th.alarm[2], 30000);
	atomic_store(&r->th.crc_ppm, 100);
	atomic_store(&r->th.crc_min_frames, 100);
	atomic_store(&r->th.max_hops, 3u * 128u);
	for (unsigned s = 0; s < DNP_LFM_NSENSORS; s++)
		atomic_store(&r->reading[s], INT32_MIN);
}

int dnp_lfm_regs_check(const struct dnp_lfm_regs *r)
{
	if (r->magic != DNP_LFM_MAGIC || r->size != sizeof(*r))
		return -EPROTO;
	if (r->version != DNP_LFM_VERSION)
		return -EPROTONOSUPPORT;
	return 0;
}

int dnp_lfm_timer_check(uint32_t t_write_ms, uint32_t t_read_ms)
{
	if (t_write_ms < DNP_LFM_T_MIN || t_read_ms < DNP_LFM_T_MIN || t_write_ms > DNP_LFM_T_MAX ||
	    t_read_ms > DNP_LFM_T_MAX)
		return -ERANGE;
	if (t_write_ms >= t_read_ms)
		return -EINVAL;
	return 0;
}

const char *dnp_lfm_timer_strerror(int err)
{
	switch (err) {
	case 0:
		return "ok";
	case -EINVAL:
		return "T_write must be shorter than T_read (the reader would find the valid "
		       "bit cleared and declare a healthy writer dead)";
	case -ERANGE:
		return "each period must be between 5 and 60000 ms";
	default:
		return "bad timer register";
	}
}

int dnp_lfm_timer_set(struct dnp_lfm_regs *r, uint32_t t_write_ms, uint32_t t_read_ms)
{
	int e = dnp_lfm_timer_check(t_write_ms, t_read_ms);

	if (e)
		return e;
	/* The DFM reads both and re-checks: a torn pair is refused, not used. */
	atomic_store_explicit(&r->t_write_ms, t_write_ms, memory_order_relaxed);
	atomic_store_explicit(&r->t_read_ms, t_read_ms, memory_order_release);
	return 0;
}

void dnp_lfm_wd_write(struct dnp_lfm_wd *w, uint64_t status, uint64_t now_ns)
{
	atomic_store_explicit(&w->status, status, memory_order_relaxed);
	atomic_store_explicit(&w->timestamp, now_ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&w->seq, 1, memory_order_relaxed);
	/* Pairs with the acquire of the reader's exchange: status before valid. */
	atomic_store_explicit(&w->valid, 1, memory_order_release);
}

void dnp_lfm_wd_write_late(struct dnp_lfm_wd *w, uint64_t status, uint64_t now_ns, uint64_t late_ns)
{
	atomic_store_explicit(&w->late, late_ns, memory_order_relaxed);
	dnp_lfm_wd_write(w, status, now_ns);
}

uint64_t dnp_lfm_wd_late(const struct dnp_lfm_wd *w)
{
	uint64_t late = atomic_load_explicit(&w->late, memory_order_relaxed);
	uint64_t cap = (uint64_t)DNP_LFM_T_MAX * 1000000ull;

	return late > cap ? cap : late;
}

void dnp_lfm_health_note(struct dnp_lfm_health *h, uint64_t late)
{
	h->pressure -= h->pressure / 8u;
	if (late > h->pressure)
		h->pressure = late;
}

uint64_t dnp_lfm_health_grace(const struct dnp_lfm_health *h, uint64_t late, uint64_t t_write,
			      uint64_t t_read)
{
	uint64_t seen = h->pressure > late ? h->pressure : late;
	uint64_t cap = t_read > 2u * t_write ? t_read - t_write : t_write;
	uint64_t g;

	if (seen <= t_write / 10u)
		return 0;
	g = seen > cap / 2u ? cap : 2u * seen;
	return g < t_write ? t_write : g;
}

bool dnp_lfm_wd_take(struct dnp_lfm_wd *w, uint64_t *status)
{
	uint32_t v = atomic_exchange_explicit(&w->valid, 0, memory_order_acq_rel);

	*status = atomic_load_explicit(&w->status, memory_order_relaxed);
	return v == 1;
}

int dnp_lfm_regs_map(const char *path, bool create, uint32_t node, const unsigned dim[3],
		     struct dnp_lfm_regs **out)
{
	struct dnp_lfm_regs *r;
	struct stat st;
	int fd, e;

	fd = open(path, (create ? O_RDWR | O_CREAT : O_RDWR) | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		goto fail_errno;
	if (create && st.st_size != (off_t)sizeof(*r) && ftruncate(fd, sizeof(*r)) < 0)
		goto fail_errno;
	if (!create && st.st_size != (off_t)sizeof(*r)) {
		close(fd);
		return -EPROTO;
	}
	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r == MAP_FAILED)
		goto fail_errno;
	close(fd);
	if (create) {
		if (dnp_lfm_regs_check(r) || r->node != node)
			dnp_lfm_regs_init(r, node, dim);
		atomic_fetch_add(&r->dfm_epoch, 1);
	} else if ((e = dnp_lfm_regs_check(r)) != 0) {
		munmap(r, sizeof(*r));
		return e;
	}
	*out = r;
	return 0;
fail_errno:
	e = -errno;
	close(fd);
	return e;
}

void dnp_lfm_regs_unmap(struct dnp_lfm_regs *r)
{
	if (r)
		munmap(r, sizeof(*r));
}
