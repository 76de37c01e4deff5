/* SPDX-License-Identifier: MIT */
/* The LO|FA|MO registers and the DNP Fault Manager (lofamo/core/regs.h, lofamo/core/dfm.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dfm.h"
#include "engine.h"
#include "regs.h"

#define MS 1000000ull /* time unit: ns */

struct fx {
	struct dnp_lfm_regs r;
	struct dnp_dfm *d;
	struct dnp_dfm_input in;
	struct dnp_dfm_out o;
	struct dnp_torus t;
};

static void fx_init(struct fx *f, unsigned x, unsigned y, unsigned z, struct dnp_coord self)
{
	unsigned dim[3] = { x, y, z };
	struct dnp_dfm_conf c = { .self = self, .unit_per_ms = MS };

	memset(f, 0, sizeof(*f));
	dnp_torus_init(&f->t, x, y, z);
	c.torus = f->t;
	for (unsigned i = 0; i < 6; i++)
		if (dim[i / 2] > 1)
			c.links |= (uint8_t)(1u << i);
	dnp_lfm_regs_init(&f->r, dnp_torus_id(&f->t, self), dim);
	for (unsigned i = 0; i < 6; i++)
		f->in.link_state[i] = 1; /* UP */
	f->in.engine_ok = true;
	assert_int_equal(dnp_dfm_create(&c, &f->r, 0, &f->d), 0);
}

/* Runs the DFM from t0 to t1 in 1 ms steps; the host validates its register every hw ms (0: never). */
static unsigned run(struct fx *f, uint64_t t0, uint64_t t1, unsigned hw, unsigned *diags,
		    unsigned *alarm_kind_count, unsigned kind)
{
	unsigned n = 0;

	for (uint64_t t = t0; t < t1; t++) {
		if (hw && t % hw == 0)
			dnp_lfm_wd_write(&f->r.host, 0, t * MS);
		dnp_dfm_tick(f->d, t * MS, &f->in, &f->o);
		if (diags)
			*diags += f->o.ndiag;
		for (unsigned i = 0; i < f->o.nalarm; i++)
			if (f->o.alarm[i].kind == kind)
				n++;
	}
	if (alarm_kind_count)
		*alarm_kind_count = n;
	return n;
}

static void test_dfm_timer_rule(void **state)
{
	struct fx f;

	(void)state;
	assert_int_equal(dnp_lfm_timer_check(100, 250), 0);
	assert_int_equal(dnp_lfm_timer_check(250, 250), -EINVAL);
	assert_int_equal(dnp_lfm_timer_check(300, 250), -EINVAL);
	assert_int_equal(dnp_lfm_timer_check(1, 250), -ERANGE);
	assert_int_equal(dnp_lfm_timer_check(100, 70000), -ERANGE);
	assert_non_null(strstr(dnp_lfm_timer_strerror(-EINVAL), "shorter"));
	fx_init(&f, 2, 2, 2, (struct dnp_coord){ 0, 0, 0 });
	assert_int_equal(dnp_lfm_timer_set(&f.r, 300, 200), -EINVAL);
	assert_int_equal(atomic_load(&f.r.t_write_ms), DNP_LFM_T_WRITE_DEFAULT);
	assert_int_equal(dnp_lfm_timer_set(&f.r, 20, 50), 0);
	assert_int_equal(atomic_load(&f.r.t_read_ms), 50);
	/* A bad pair written behind the setter's back is refused by the DFM. */
	atomic_store(&f.r.t_write_ms, 80);
	dnp_dfm_tick(f.d, 1 * MS, &f.in, &f.o);
	assert_int_equal(atomic_load(&f.r.timer_error), 1);
	assert_int_equal(f.o.nalarm >= 1, 1);
	assert_int_equal(f.o.alarm[0].kind, DNP_DFM_AL_TIMER);
	dnp_dfm_destroy(f.d);
}

/* The DFM validates the DNP Watchdog Register every T_write; the reader finds it valid every T_read. */
static void test_dfm_writes_every_t_write(void **state)
{
	struct fx f;
	uint64_t w;

	(void)state;
	fx_init(&f, 2, 2, 2, (struct dnp_coord){ 1, 0, 0 });
	for (uint64_t t = 0; t < 2000; t++) {
		dnp_lfm_wd_write(&f.r.host, 0, t * MS);
		dnp_dfm_tick(f.d, t * MS, &f.in, &f.o);
		if (t && t % DNP_LFM_T_READ_DEFAULT == 0)
			assert_true(dnp_lfm_wd_take(&f.r.dnp, &w));
	}
	assert_true(atomic_load(&f.r.dnp.seq) >= 2000 / DNP_LFM_T_WRITE_DEFAULT);
	assert_int_equal(dnp_lfm_dnp_link(w, DNP_DIR_XP), DNP_LFM_LINK_OK);
	assert_int_equal(dnp_lfm_dnp_host(w), DNP_LFM_HOST_OK);
	/* A DNP that stopped writing: the reader's second take finds valid cleared. */
	(void)dnp_lfm_wd_take(&f.r.dnp, &w);
	assert_false(dnp_lfm_wd_take(&f.r.dnp, &w));
	dnp_dfm_destroy(f.d);
}

/* Host stops validating: omission fault, DIAGs to each distinct first neighbour every T_read. */
static void test_dfm_host_omission_relays(void **state)
{
	struct fx f;
	unsigned diags = 0, host_alarms = 0;
	uint64_t w;

	(void)state;
	fx_init(&f, 2, 2, 2, (struct dnp_coord){ 0, 0, 0 });
	run(&f, 0, 1000, 100, &diags, &host_alarms, DNP_DFM_AL_HOST);
	assert_int_equal(diags, 0);
	assert_int_equal(host_alarms, 0);
	/* the host dies at 1000 ms: detected at the second read after it, <= 2 x T_read */
	diags = 0;
	run(&f, 1000, 1000 + 2 * DNP_LFM_T_READ_DEFAULT + 1, 0, &diags, &host_alarms,
	    DNP_DFM_AL_HOST);
	assert_int_equal(host_alarms, 1);
	assert_true(diags >= 3); /* 2x2x2: three distinct neighbours */
	w = atomic_load(&f.r.dnp.status);
	assert_int_equal(dnp_lfm_dnp_host(w), DNP_LFM_HOST_OMISSION);
	/* it keeps relaying every T_read while the fault lasts */
	diags = 0;
	run(&f, 1501, 2501, 0, &diags, NULL, 0);
	assert_int_equal(diags, 3 * 4);
	/* the host is back: one HOST ok alarm and a 'recovered' DIAG round */
	diags = 0;
	run(&f, 2501, 3100, 50, &diags, &host_alarms, DNP_DFM_AL_HOST);
	assert_int_equal(host_alarms, 1);
	assert_int_equal(diags, 3);
	assert_int_equal(dnp_lfm_dnp_host(atomic_load(&f.r.dnp.status)), DNP_LFM_HOST_OK);
	dnp_dfm_destroy(f.d);
}

/* One tick at t ms; returns the number of HOST alarms it raised (level in *level). */
static unsigned tick_host(struct fx *f, uint64_t t, unsigned *level)
{
	unsigned n = 0;

	dnp_dfm_tick(f->d, t * MS, &f->in, &f->o);
	for (unsigned i = 0; i < f->o.nalarm; i++)
		if (f->o.alarm[i].kind == DNP_DFM_AL_HOST) {
			n++;
			*level = f->o.alarm[i].level;
		}
	return n;
}

/*
 * The whole machine stalls (load far over the cores): the DFM and the host
 * are both kept off the CPU for 600 ms, and the DFM runs first when it ends.
 * Its read is late, the register still cleared: no omission yet, the host
 * gets one T_write to validate, does, and is not declared dead. A host that
 * really died during such a stall is still declared, one T_write after the
 * late read, and an on-time reader keeps the 2 x T_read bound.
 */
static void test_dfm_late_reader_no_false_omission(void **state)
{
	const uint64_t tw = DNP_LFM_T_WRITE_DEFAULT;
	struct fx f;
	unsigned n = 0, lv = 0;

	(void)state;
	/* 1. a live host, a stall of both, the host resumes right after the reader */
	fx_init(&f, 2, 2, 2, (struct dnp_coord){ 0, 0, 0 });
	run(&f, 0, 1001, 100, NULL, &n, DNP_DFM_AL_HOST); /* last write at 1000, read at 1000 */
	assert_int_equal(n, 0);
	n = tick_host(&f, 1600, &lv); /* due at 1250: 350 ms late, register cleared */
	assert_int_equal(n, 0);
	assert_int_equal(dnp_dfm_stats(f.d)->host_late_reads, 1);
	assert_int_equal(dnp_dfm_stats(f.d)->host_omissions, 0);
	assert_true(dnp_dfm_next_deadline(f.d) <= (1600 + tw) * MS);
	run(&f, 1601, 3000, 100, NULL, &n, DNP_DFM_AL_HOST); /* writes at 1700, 1800, ... */
	assert_int_equal(n, 0);
	assert_int_equal(dnp_dfm_stats(f.d)->host_omissions, 0);
	assert_int_equal(dnp_lfm_dnp_host(atomic_load(&f.r.dnp.status)), DNP_LFM_HOST_OK);
	dnp_dfm_destroy(f.d);

	/*
	 * 2. the host died at 1000 and the reader was late too: declared after
	 * the second look, at most T_read - T_write later (regs.h), no sooner
	 * than one T_write
	 */
	fx_init(&f, 2, 2, 2, (struct dnp_coord){ 0, 0, 0 });
	run(&f, 0, 1001, 100, NULL, &n, DNP_DFM_AL_HOST);
	assert_int_equal(tick_host(&f, 1600, &lv), 0);
	n = 0;
	for (uint64_t t = 1601; t <= 1600 + DNP_LFM_T_READ_DEFAULT - tw && !n; t++) {
		n = tick_host(&f, t, &lv);
		assert_true(!n || t >= 1600 + tw);
	}
	assert_int_equal(n, 1);
	assert_int_equal(lv, DNP_LFM_HOST_OMISSION);
	assert_int_equal(dnp_lfm_dnp_host(atomic_load(&f.r.dnp.status)), DNP_LFM_HOST_OMISSION);
	dnp_dfm_destroy(f.d);

	/* 3. a slightly late reader (under a tenth of T_write) judges at once, as before */
	fx_init(&f, 2, 2, 2, (struct dnp_coord){ 0, 0, 0 });
	run(&f, 0, 1001, 100, NULL, &n, DNP_DFM_AL_HOST); /* next read due at 1250 */
	assert_int_equal(tick_host(&f, 1250 + tw / 10, &lv), 1);
	assert_int_equal(lv, DNP_LFM_HOST_OMISSION);
	assert_int_equal(dnp_dfm_stats(f.d)->host_late_reads, 0);
	dnp_dfm_destroy(f.d);
}

/*
 * Local health (regs.h): an on-time reader on a node under CPU pressure. The
 * host has published that its writes come 80 ms late; it is then kept off
 * the CPU for 300 ms (no write from 1000 to 1300). The read at 1250 finds
 * the register cleared but gives a second look (2 x 80 ms later, within
 * T_read - T_write), by which time the host is back: no omission. The same
 * host then dies at 2000: still declared, within 3 x T_read of its last
 * write. On a quiet node (test_dfm_host_omission_relays) an on-time reader
 * judges at once. And the DFM publishes its own lateness for the HFM.
 */
static void test_dfm_pressure_second_look(void **state)
{
	struct fx f;
	unsigned n = 0, lv = 0;

	(void)state;
	fx_init(&f, 2, 2, 2, (struct dnp_coord){ 0, 0, 0 });
	atomic_store(&f.r.host.late, 80 * MS);
	run(&f, 0, 1001, 100, NULL, &n, DNP_DFM_AL_HOST); /* reads at 250, 500, 750, 1000 */
	assert_int_equal(n, 0);
	run(&f, 1001, 1300, 0, NULL, &n, DNP_DFM_AL_HOST); /* read at 1250 finds it cleared */
	assert_int_equal(n, 0);
	assert_int_equal(dnp_dfm_stats(f.d)->host_late_reads, 1);
	run(&f, 1300, 2000, 100, NULL, &n, DNP_DFM_AL_HOST); /* back at 1300 */
	assert_int_equal(n, 0);
	assert_int_equal(dnp_dfm_stats(f.d)->host_omissions, 0);
	/* the DFM's own writes were on time: what it publishes decays below a ms */
	assert_true(atomic_load(&f.r.dnp.late) < 80 * MS);

	/* the host dies at 2000 (last write at 1900): declared by 1900 + 3 x T_read */
	n = 0;
	for (uint64_t t = 2000; t < 1900 + 3 * DNP_LFM_T_READ_DEFAULT && !n; t++)
		n = tick_host(&f, t, &lv);
	assert_int_equal(n, 1);
	assert_int_equal(lv, DNP_LFM_HOST_OMISSION);
	dnp_dfm_destroy(f.d);
}

/* The second look's length (regs.h): none when quiet, 2 x the delay, within [T_write, T_read - T_write]. */
static void test_lfm_health_grace(void **state)
{
	struct dnp_lfm_health h = { 0 };

	(void)state;
	assert_int_equal(dnp_lfm_health_grace(&h, 0, 100, 250), 0);
	assert_int_equal(dnp_lfm_health_grace(&h, 10, 100, 250), 0); /* a tenth of T_write */
	assert_int_equal(dnp_lfm_health_grace(&h, 11, 100, 250), 100);
	assert_int_equal(dnp_lfm_health_grace(&h, 70, 100, 250), 140);
	assert_int_equal(dnp_lfm_health_grace(&h, 600, 100, 250), 150);
	dnp_lfm_health_note(&h, 60);
	assert_int_equal(dnp_lfm_health_grace(&h, 0, 100, 250), 120);
	for (int i = 0; i < 40; i++)
		dnp_lfm_health_note(&h, 0); /* pressure decays: quiet again */
	assert_int_equal(dnp_lfm_health_grace(&h, 0, 100, 250), 0);
	/* T_read under 2 x T_write: the second look is one T_write */
	assert_int_equal(dnp_lfm_health_grace(&h, 500, 100, 150), 100);
	/* a published lateness is shared memory: capped at the longest period */
	struct dnp_lfm_wd wd;

	memset(&wd, 0, sizeof(wd));
	atomic_store(&wd.late, UINT64_MAX);
	assert_int_equal(dnp_lfm_wd_late(&wd), (uint64_t)DNP_LFM_T_MAX * 1000000ull);
	atomic_store(&wd.late, 7);
	assert_int_equal(dnp_lfm_wd_late(&wd), 7);
}

/* A host that never showed up is not declared dead (the HFM may start later). */
static void test_dfm_host_never_seen(void **state)
{
	struct fx f;
	unsigned diags = 0, n;

	(void)state;
	fx_init(&f, 4, 1, 1, (struct dnp_coord){ 0, 0, 0 });
	run(&f, 0, 2000, 0, &diags, &n, DNP_DFM_AL_HOST);
	assert_int_equal(n, 0);
	assert_int_equal(diags, 0);
	dnp_dfm_destroy(f.d);
}

static void test_dfm_diag_recorded_and_expires(void **state)
{
	struct fx f, g;
	unsigned n;
	uint64_t rfd;

	(void)state;
	/* node (1,0,0) of a 4x1x1 ring: its host dies, its DFM relays */
	fx_init(&g, 4, 1, 1, (struct dnp_coord){ 1, 0, 0 });
	fx_init(&f, 4, 1, 1, (struct dnp_coord){ 0, 0, 0 });
	run(&g, 0, 300, 100, NULL, NULL, 0);
	run(&g, 300, 900, 0, NULL, NULL, 0);
	dnp_dfm_tick(g.d, 900 * MS, &g.in, &g.o);
	/* take a DIAG g would send towards (0,0,0) */
	g.o.ndiag = 0;
	{
		struct dnp_dfm_diag_msg m = { .kind = DNP_LFM_RFD_HOST_OMISSION, .node = 1 };
		uint8_t buf[DNP_DFM_DIAG_BYTES];

		assert_int_equal(dnp_dfm_diag_encode(&m, buf, sizeof(buf)), DNP_DFM_DIAG_BYTES);
		f.o.nalarm = 0;
		assert_int_equal(dnp_dfm_on_diag(f.d, (struct dnp_coord){ 1, 0, 0 }, buf,
						 sizeof(buf), 1000 * MS, &f.o),
				 0);
		assert_int_equal(f.o.nalarm, 1);
		assert_int_equal(f.o.alarm[0].kind, DNP_DFM_AL_REMOTE);
		assert_int_equal(f.o.alarm[0].subject, DNP_DIR_XP);
		/* not a neighbour of (0,0,0), or a payload naming another node */
		assert_int_equal(dnp_dfm_on_diag(f.d, (struct dnp_coord){ 2, 0, 0 }, buf,
						 sizeof(buf), 1000 * MS, &f.o),
				 -EINVAL);
		assert_int_equal(dnp_dfm_on_diag(f.d, (struct dnp_coord){ 3, 0, 0 }, buf,
						 sizeof(buf), 1000 * MS, &f.o),
				 -EINVAL);
		buf[5] ^= 1;
		assert_int_equal(dnp_dfm_on_diag(f.d, (struct dnp_coord){ 1, 0, 0 }, buf, 31,
						 1000 * MS, &f.o),
				 -EBADMSG);
	}
	dnp_dfm_tick(f.d, 1001 * MS, &f.in, &f.o);
	rfd = atomic_load(&f.r.rfd[DNP_DIR_XP].desc);
	assert_int_equal(dnp_lfm_rfd_kind(rfd), DNP_LFM_RFD_HOST_OMISSION);
	assert_int_equal(dnp_lfm_rfd_node(rfd), 1);
	assert_int_equal(dnp_lfm_dnp_remote(atomic_load(&f.r.dnp.status)), 1u << DNP_DIR_XP);
	/* no more DIAG: the entry expires after 3 x T_read */
	run(&f, 1002, 1000 + 3 * DNP_LFM_T_READ_DEFAULT + 2, 0, NULL, &n, DNP_DFM_AL_REMOTE);
	assert_int_equal(n, 1);
	assert_int_equal(dnp_lfm_dnp_remote(atomic_load(&f.r.dnp.status)), 0);
	dnp_dfm_destroy(f.d);
	dnp_dfm_destroy(g.d);
}

static void test_dfm_link_broken_and_sick(void **state)
{
	struct fx f;
	unsigned n;

	(void)state;
	fx_init(&f, 4, 4, 1, (struct dnp_coord){ 0, 0, 0 });
	run(&f, 0, 10, 0, NULL, NULL, 0);
	f.in.link_state[DNP_DIR_YM] = 2; /* BROKEN */
	run(&f, 10, 20, 0, NULL, &n, DNP_DFM_AL_LINK);
	assert_int_equal(n, 1);
	assert_int_equal(dnp_lfm_dnp_link(atomic_load(&f.r.dnp.status), DNP_DIR_YM),
			 DNP_LFM_LINK_BROKEN);
	assert_int_equal(dnp_lfm_dnp_link(atomic_load(&f.r.dnp.status), DNP_DIR_ZP),
			 DNP_LFM_LINK_NONE);
	/* X+: 10000 frames with 5 CRC errors per window (500 ppm > 100): sick */
	for (uint64_t t = 20; t < 1000; t++) {
		f.in.rx_frames[DNP_DIR_XP] += 10;
		if (t % 2 == 0)
			f.in.crc_errors[DNP_DIR_XP] += (t % 4 == 0);
		dnp_dfm_tick(f.d, t * MS, &f.in, &f.o);
	}
	assert_int_equal(dnp_lfm_dnp_link(atomic_load(&f.r.dnp.status), DNP_DIR_XP),
			 DNP_LFM_LINK_SICK);
	/* clean windows: healthy again */
	run(&f, 1000, 1000 + 2 * DNP_LFM_T_READ_DEFAULT + 1, 0, NULL, NULL, 0);
	for (uint64_t t = 1600; t < 2200; t++) {
		f.in.rx_frames[DNP_DIR_XP] += 10;
		dnp_dfm_tick(f.d, t * MS, &f.in, &f.o);
	}
	assert_int_equal(dnp_lfm_dnp_link(atomic_load(&f.r.dnp.status), DNP_DIR_XP),
			 DNP_LFM_LINK_OK);
	/*
	 * Y+: a quiet link, 40 frames per T_read window (the floor is 100),
	 * 1 in 20 corrupted: the short windows add up, and it turns sick
	 * within four of them (before, each short window was dropped and the
	 * link was never judged).
	 */
	for (uint64_t t = 2200; t < 2200 + 4 * DNP_LFM_T_READ_DEFAULT + 1; t++) {
		if (t % 6 == 0) {
			f.in.rx_frames[DNP_DIR_YP] += 1;
			if (t % 120 == 0)
				f.in.crc_errors[DNP_DIR_YP] += 1;
		}
		dnp_dfm_tick(f.d, t * MS, &f.in, &f.o);
	}
	assert_int_equal(dnp_lfm_dnp_link(atomic_load(&f.r.dnp.status), DNP_DIR_YP),
			 DNP_LFM_LINK_SICK);
	/* masked: the sick link is not reported */
	atomic_store(&f.r.mask, DNP_LFM_MASK_ALL & ~DNP_LFM_MASK_LINK_BROKEN);
	run(&f, 3300, 3400, 0, NULL, NULL, 0);
	assert_int_equal(dnp_lfm_dnp_link(atomic_load(&f.r.dnp.status), DNP_DIR_YM),
			 DNP_LFM_LINK_OK);
	dnp_dfm_destroy(f.d);
}

/*
 * A quiet link, 30 frames per T_read (the floor is 100): clean, it is not
 * judged and stays ok; with two CRC errors among its first 30 frames it
 * holds more than a full window of 100 frames may at 100 ppm, so it is sick
 * at the first T_read, not three T_reads later when the window reaches the
 * floor. 150 clean frames later it is healthy again.
 */
static void test_dfm_quiet_link_sick_early(void **state)
{
	struct fx f;
	uint64_t t = 0;

	(void)state;
	fx_init(&f, 2, 1, 1, (struct dnp_coord){ 0, 0, 0 });
	run(&f, 0, 10, 0, NULL, NULL, 0);
	for (t = 10; t < 10 + DNP_LFM_T_READ_DEFAULT + 2; t++) {
		if (t % 25 == 0) {
			f.in.rx_frames[DNP_DIR_XP] += 3;
			f.in.rx_frames[DNP_DIR_XM] += 3;
		}
		if (t == 100)
			f.in.crc_errors[DNP_DIR_XP] += 2;
		dnp_dfm_tick(f.d, t * MS, &f.in, &f.o);
	}
	assert_int_equal(dnp_lfm_dnp_link(atomic_load(&f.r.dnp.status), DNP_DIR_XP),
			 DNP_LFM_LINK_SICK);
	assert_int_equal(dnp_lfm_dnp_link(atomic_load(&f.r.dnp.status), DNP_DIR_XM),
			 DNP_LFM_LINK_OK);
	/* clean from here: healthy again once a window of 100 clean frames is judged */
	for (; t < 10 + 7 * DNP_LFM_T_READ_DEFAULT; t++) {
		if (t % 25 == 0)
			f.in.rx_frames[DNP_DIR_XP] += 3;
		dnp_dfm_tick(f.d, t * MS, &f.in, &f.o);
	}
	assert_int_equal(dnp_lfm_dnp_link(atomic_load(&f.r.dnp.status), DNP_DIR_XP),
			 DNP_LFM_LINK_OK);
	dnp_dfm_destroy(f.d);
}

static void test_dfm_sensor_thresholds(void **state)
{
	struct fx f;
	unsigned n;

	(void)state;
	fx_init(&f, 2, 1, 1, (struct dnp_coord){ 0, 0, 0 });
	f.in.sensor[0] = 50000;
	f.in.sensor_present = 1;
	run(&f, 0, 200, 0, NULL, &n, DNP_DFM_AL_SENSOR);
	assert_int_equal(n, 0);
	assert_int_equal(atomic_load(&f.r.reading[0]), 50000);
	/* the simulated sensor overrides the real one */
	atomic_store(&f.r.sim[0].value, 99000);
	atomic_store(&f.r.sim[0].on, 1);
	run(&f, 200, 400, 0, NULL, &n, DNP_DFM_AL_SENSOR);
	assert_int_equal(n, 1);
	assert_int_equal(dnp_lfm_dnp_sensor(atomic_load(&f.r.dnp.status), 0), DNP_LFM_ALARM);
	atomic_store(&f.r.sim[0].value, 85000);
	run(&f, 400, 600, 0, NULL, NULL, 0);
	assert_int_equal(dnp_lfm_dnp_sensor(atomic_load(&f.r.dnp.status), 0), DNP_LFM_WARNING);
	/* voltage under its low alarm threshold */
	atomic_store(&f.r.sim[1].value, 700);
	atomic_store(&f.r.sim[1].on, 1);
	run(&f, 600, 800, 0, NULL, NULL, 0);
	assert_int_equal(dnp_lfm_dnp_sensor(atomic_load(&f.r.dnp.status), 1), DNP_LFM_ALARM);
	dnp_dfm_destroy(f.d);
}

static void test_dfm_diag_codec(void **state)
{
	struct dnp_dfm_diag_msg m = { .kind = 2,
				      .node = 77,
				      .host_status = 0x123,
				      .dnp_status = 0xfeed,
				      .seq = 9 },
				back;
	uint8_t buf[DNP_DFM_DIAG_BYTES];

	(void)state;
	assert_int_equal(dnp_dfm_diag_encode(&m, buf, 8), -ENOBUFS);
	assert_int_equal(dnp_dfm_diag_encode(&m, buf, sizeof(buf)), 32);
	assert_int_equal(buf[0], 0x44);
	assert_int_equal(buf[1], 0x47);
	assert_int_equal(dnp_dfm_diag_decode(buf, sizeof(buf), &back), 0);
	assert_int_equal(back.node, 77);
	assert_int_equal(back.dnp_status, 0xfeed);
	buf[3] = 9; /* unknown kind */
	assert_int_equal(dnp_dfm_diag_decode(buf, sizeof(buf), &back), -EBADMSG);
	buf[3] = 1;
	buf[30] = 1; /* reserved */
	assert_int_equal(dnp_dfm_diag_decode(buf, sizeof(buf), &back), -EBADMSG);
}

/* ---- the engine's DIAG path, between real engines on a 3x1x1 ring ---- */

static int mem_rd(void *ctx, unsigned port, const struct dnp_buf *buf, uint64_t va, void *dst,
		  size_t len, const struct dnp_mem_seq *seq)
{
	(void)seq;
	(void)ctx, (void)port, (void)buf, (void)va, (void)dst, (void)len;
	return -EFAULT;
}

static int mem_wr(void *ctx, unsigned port, const struct dnp_buf *buf, uint64_t va, const void *src,
		  size_t len)
{
	(void)ctx, (void)port, (void)buf, (void)va, (void)src, (void)len;
	return -EFAULT;
}

static const struct dnp_mem_ops no_mem = { .read = mem_rd, .write = mem_wr };

static void ring_pump(struct dnp_engine **e, unsigned n, uint64_t *now, unsigned steps, int dead)
{
	struct dnp_frame f[16];

	for (unsigned s = 0; s < steps; s++, (*now)++) {
		for (unsigned i = 0; i < n; i++)
			if ((int)i != dead)
				dnp_engine_run(e[i], *now);
		for (unsigned i = 0; i < n; i++) {
			if ((int)i == dead)
				continue;
			for (unsigned d = 0; d < 2; d++) {
				unsigned k, m = dnp_engine_tx_burst(e[i], d, f, 16, *now);
				unsigned peer = d == DNP_DIR_XP ? (i + 1) % n : (i + n - 1) % n;

				for (k = 0; k < m; k++) {
					uint8_t copy[DNP_MAX_FRAME];

					if ((int)peer == dead)
						continue;
					memcpy(copy, f[k].data, f[k].len);
					(void)dnp_engine_rx(e[peer], dnp_torus_opposite(d), copy,
							    f[k].len, *now);
				}
			}
		}
	}
}

static void test_dfm_engine_diag_path(void **state)
{
	struct dnp_engine *e[3];
	struct dnp_coord src;
	uint8_t buf[64], payload[DNP_DFM_DIAG_BYTES] = { 1, 2, 3 };
	uint64_t now = 0;

	(void)state;
	for (unsigned i = 0; i < 3; i++) {
		struct dnp_engine_conf c;

		dnp_engine_conf_default(&c);
		dnp_torus_init(&c.torus, 3, 1, 1);
		c.self = (struct dnp_coord){ (uint8_t)i, 0, 0 };
		c.mem = &no_mem;
		assert_int_equal(dnp_engine_create(&c, 0, &e[i]), 0);
	}
	ring_pump(e, 3, &now, 200, -1);
	assert_int_equal(dnp_engine_diag_send(e[0], (struct dnp_coord){ 0, 0, 0 }, payload,
					      sizeof(payload), now),
			 -EINVAL);
	assert_int_equal(dnp_engine_diag_send(e[0], (struct dnp_coord){ 1, 0, 0 }, payload,
					      DNP_ENGINE_DIAG_MAX + 1, now),
			 -EINVAL);
	assert_int_equal(dnp_engine_diag_send(e[0], (struct dnp_coord){ 1, 0, 0 }, payload,
					      sizeof(payload), now),
			 0);
	assert_int_equal(dnp_engine_diag_send(e[0], (struct dnp_coord){ 2, 0, 0 }, payload,
					      sizeof(payload), now),
			 0);
	ring_pump(e, 3, &now, 200, -1);
	assert_int_equal(dnp_engine_diag_poll(e[1], &src, buf, 4), -ENOBUFS);
	assert_int_equal(dnp_engine_diag_poll(e[1], &src, buf, sizeof(buf)), DNP_DFM_DIAG_BYTES);
	assert_int_equal(src.x, 0);
	assert_memory_equal(buf, payload, sizeof(payload));
	assert_int_equal(dnp_engine_diag_poll(e[1], &src, buf, sizeof(buf)), 0);
	assert_int_equal(dnp_engine_diag_poll(e[2], &src, buf, sizeof(buf)), DNP_DFM_DIAG_BYTES);
	assert_int_equal(dnp_engine_stats(e[0])->diag_tx, 2);
	/* a full queue drops (and counts) the rest; nothing waits for the fault manager */
	for (unsigned k = 0; k < DNP_ENGINE_DIAG_QUEUE + 5; k++)
		assert_int_equal(dnp_engine_diag_send(e[0], (struct dnp_coord){ 1, 0, 0 }, payload,
						      sizeof(payload), now),
				 0);
	ring_pump(e, 3, &now, 500, -1);
	assert_int_equal(dnp_engine_stats(e[1])->diag_dropped, 5);
	/* DIAGs are never answered: nothing stays pending at the sender */
	assert_int_equal(dnp_engine_pending(e[0]), 0);
	for (unsigned i = 0; i < 3; i++)
		dnp_engine_destroy(e[i]);
}

/*
 * A quiet link (a keep-alive frame every 5 ms, 50 per T_read) with one CRC
 * error: one error in a few thousand frames says nothing about a 100 ppm
 * threshold, and the link must stay ok (before, the error alone made it SICK
 * at the next T_read: 1 in 50 frames is 20,000 ppm). A real fault on the
 * same link, 3 more errors in its next 100 frames, is SICK with 99.9 % confidence
 * within two T_reads.
 */
static void test_dfm_one_crc_error_not_sick(void **state)
{
	struct fx f;
	uint64_t t;

	(void)state;
	fx_init(&f, 2, 1, 1, (struct dnp_coord){ 0, 0, 0 });
	run(&f, 0, 10, 0, NULL, NULL, 0);
	for (t = 10; t < 10 + 20 * DNP_LFM_T_READ_DEFAULT; t++) {
		if (t % 5 == 0)
			f.in.rx_frames[DNP_DIR_XP] += 1;
		if (t == 400)
			f.in.crc_errors[DNP_DIR_XP] += 1;
		dnp_dfm_tick(f.d, t * MS, &f.in, &f.o);
		assert_int_equal(dnp_lfm_dnp_link(atomic_load(&f.r.dnp.status), DNP_DIR_XP),
				 DNP_LFM_LINK_OK);
	}
	for (unsigned k = 0; k < 2 * DNP_LFM_T_READ_DEFAULT; k++, t++) {
		if (t % 5 == 0)
			f.in.rx_frames[DNP_DIR_XP] += 1;
		if (k == 10 || k == 100 || k == 200)
			f.in.crc_errors[DNP_DIR_XP] += 1;
		dnp_dfm_tick(f.d, t * MS, &f.in, &f.o);
	}
	assert_int_equal(dnp_lfm_dnp_link(atomic_load(&f.r.dnp.status), DNP_DIR_XP),
			 DNP_LFM_LINK_SICK);
	dnp_dfm_destroy(f.d);
}

/*
 * A direction that carries only keep-alives (one frame every 5 ms, 50 per
 * T_read) is corrupted at 5 %: SICK. The fault ends, but one corrupted frame
 * came in the last window before it did: 1 error in a few hundred frames is
 * over 100 ppm without confidence, so no verdict. Before the window was
 * bounded, it had to grow to 10,000 clean frames (200 T_reads here, 50 s)
 * before the link was ok again; now it is ok within 16 T_reads plus one
 * window of 100 frames, and stays ok.
 */
static void test_dfm_sick_link_heals_after_stray_error(void **state)
{
	struct fx f;
	uint64_t t = 10, healed = 0;

	(void)state;
	fx_init(&f, 2, 1, 1, (struct dnp_coord){ 0, 0, 0 });
	run(&f, 0, 10, 0, NULL, NULL, 0);
	for (; t < 10 + 8 * DNP_LFM_T_READ_DEFAULT; t++) {
		if (t % 5 == 0) {
			f.in.rx_frames[DNP_DIR_XP] += 1;
			if (t % 100 == 0) /* 1 in 20 */
				f.in.crc_errors[DNP_DIR_XP] += 1;
		}
		dnp_dfm_tick(f.d, t * MS, &f.in, &f.o);
	}
	assert_int_equal(dnp_lfm_dnp_link(atomic_load(&f.r.dnp.status), DNP_DIR_XP),
			 DNP_LFM_LINK_SICK);
	/* let the sick verdict renew its window, then one stray error, then clean */
	f.in.crc_errors[DNP_DIR_XP] += 1;
	for (unsigned k = 0; k < 60 * DNP_LFM_T_READ_DEFAULT; k++, t++) {
		if (t % 5 == 0)
			f.in.rx_frames[DNP_DIR_XP] += 1;
		dnp_dfm_tick(f.d, t * MS, &f.in, &f.o);
		if (!healed &&
		    dnp_lfm_dnp_link(atomic_load(&f.r.dnp.status), DNP_DIR_XP) == DNP_LFM_LINK_OK)
			healed = k;
		if (healed)
			assert_int_equal(dnp_lfm_dnp_link(atomic_load(&f.r.dnp.status), DNP_DIR_XP),
					 DNP_LFM_LINK_OK);
	}
	assert_true(healed > 0);
	assert_true(healed <= 19 * DNP_LFM_T_READ_DEFAULT);
	dnp_dfm_destroy(f.d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dfm_timer_rule),
		cmocka_unit_test(test_dfm_writes_every_t_write),
		cmocka_unit_test(test_dfm_host_omission_relays),
		cmocka_unit_test(test_dfm_host_never_seen),
		cmocka_unit_test(test_dfm_late_reader_no_false_omission),
		cmocka_unit_test(test_dfm_pressure_second_look),
		cmocka_unit_test(test_lfm_health_grace),
		cmocka_unit_test(test_dfm_diag_recorded_and_expires),
		cmocka_unit_test(test_dfm_link_broken_and_sick),
		cmocka_unit_test(test_dfm_quiet_link_sick_early),
		cmocka_unit_test(test_dfm_sensor_thresholds),
		cmocka_unit_test(test_dfm_diag_codec),
		cmocka_unit_test(test_dfm_engine_diag_path),
		cmocka_unit_test(test_dfm_one_crc_error_not_sick),
		cmocka_unit_test(test_dfm_sick_link_heals_after_stray_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
