/* SPDX-License-Identifier: MIT */
/*
 * lfm — dnpd's driver of the DNP Fault Manager (lofamo/core/dfm.h): maps the
 * register block DIR/node-<id>.lofamo, feeds the DFM the engine's link
 * states, per-link frame and CRC-error counts, real sensor readings, and the
 * DIAG packets the engine delivered; sends the DIAG packets the DFM asks for
 * through the engine and logs its alarms. Called from the poll loop's slow
 * path (dnpd_house); nothing here runs per packet.
 *
 * Real sensors, where the machine has them: the first thermal zone
 * (/sys/class/thermal/thermal_zone0/temp, m°C) and the RAPL package energy
 * counter (/sys/class/powercap/intel-rapl:0/energy_uj, turned into mW).
 * Without them only the simulated sensors (dnpctl sensor) exist.
 *
 * The engine has one DIAG queue: the daemon's wiring queries and answers
 * (dnpctl topo --all, wire.c) travel as DIAG packets too and are offered to
 * the daemon's hook (struct dnpd_diag_hook) first, also when the DFM is off.
 * This file uses dnpd.h only, never the daemon's state (dnpd_int.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dfm.h"
#include "dnp_file.h"
#include "dnp_parse.h"
#include "dnp_shmguard.h"
#include "dnpd.h"
#include "engine.h"
#include "regs.h"

static const char *const lfm_dir[DNP_NDIRS] = { "X+", "X-", "Y+", "Y-", "Z+", "Z-" };
static const char *const lfm_sensor[DNP_LFM_NSENSORS] = { "temperature", "voltage", "power" };

/* A sysfs integer (thermal zones may read below zero). */
static bool read_s64(const char *path, int64_t *v)
{
	char buf[32];
	uint64_t u;

	if (dnp_read_small(path, buf, sizeof(buf)) < 0)
		return false;
	buf[strcspn(buf, "\n")] = 0; /* sysfs ends its values with a newline */
	if (dnp_parse_u64(buf + (buf[0] == '-'), &u) || u > INT64_MAX)
		return false;
	*v = buf[0] == '-' ? -(int64_t)u : (int64_t)u;
	return true;
}

static void lfm_sensors(struct dnpd_lfm *m, struct dnp_dfm_input *in, uint64_t now)
{
	int64_t v;

	if (read_s64("/sys/class/thermal/thermal_zone0/temp", &v)) {
		in->sensor[0] = (int32_t)v;
		in->sensor_present |= 1u;
	}
	if (read_s64("/sys/class/powercap/intel-rapl:0/energy_uj", &v) && v >= 0) {
		if (m->rapl_t && now > m->rapl_t && (uint64_t)v >= m->rapl_uj) {
			/* uJ per ns * 1e9 = W; in mW: uJ * 1e6 / ns */
			m->power_mw = (int32_t)(((uint64_t)v - m->rapl_uj) * 1000000ull /
						(now - m->rapl_t));
			m->power_ok = true;
		}
		m->rapl_uj = (uint64_t)v;
		m->rapl_t = now;
	}
	if (m->power_ok) {
		in->sensor[2] = m->power_mw;
		in->sensor_present |= 4u;
	}
}

int dnpd_lfm_start(struct dnpd_lfm *m, const struct dnpd_conf *c, struct dnp_engine *e,
		   uint64_t now)
{
	struct dnp_dfm_conf dc = { .torus = c->torus, .self = c->self, .unit_per_ms = 1000000ull };
	unsigned dim[3] = { c->torus.dim[0], c->torus.dim[1], c->torus.dim[2] };
	uint32_t id = dnp_torus_id(&c->torus, c->self);
	int r;

	memset(m, 0, sizeof(*m));
	if (dnpd_path(c, ".lofamo", m->path, sizeof(m->path)))
		return -ENAMETOOLONG;
	for (unsigned d = 0; d < DNP_NDIRS; d++)
		if (dnp_engine_has_link(e, d))
			dc.links |= (uint8_t)(1u << d);
	r = dnp_lfm_regs_map(m->path, true, id, dim, &m->regs);
	if (r)
		return r;
	r = dnp_dfm_create(&dc, m->regs, now, &m->dfm);
	if (r) {
		dnp_lfm_regs_unmap(m->regs);
		m->regs = NULL;
		return r;
	}
	/* another process may truncate the file: zeros, not SIGBUS (dnpd.c, dnpd_guard) */
	(void)dnp_shmguard_add(m->regs, sizeof(*m->regs));
	dnpd_log(DNPD_INFO, "lofamo: registers %s (epoch %u)", m->path,
		 atomic_load(&m->regs->dfm_epoch));
	return 0;
}

void dnpd_lfm_stop(struct dnpd_lfm *m)
{
	dnp_dfm_destroy(m->dfm);
	m->dfm = NULL;
	dnp_shmguard_del(m->regs);
	dnp_lfm_regs_unmap(m->regs);
	m->regs = NULL;
}

/*
 * Whether every break of link dir since the last look was its neighbour
 * stopping in order (DNP_RESET_LEAVING): such a break is logged at info.
 */
static bool lfm_left(struct dnpd_lfm *m, const struct dnp_engine *e, unsigned dir)
{
	const struct dnp_link_stats *ls = dir < DNP_NDIRS ? dnp_engine_link_stats(e, dir) : NULL;
	bool left;

	if (!ls)
		return false;
	left = ls->breaks != m->breaks[dir] &&
	       ls->breaks - m->breaks[dir] == ls->peer_left - m->left[dir];
	m->breaks[dir] = ls->breaks;
	m->left[dir] = ls->peer_left;
	return left;
}

static void lfm_log(struct dnpd_lfm *m, const struct dnp_engine *e, const struct dnp_dfm_out *o)
{
	for (unsigned i = 0; i < o->nalarm; i++) {
		const struct dnp_dfm_alarm *a = &o->alarm[i];
		bool left;

		switch (a->kind) {
		case DNP_DFM_AL_LINK:
			left = a->level == DNP_LFM_LINK_BROKEN && lfm_left(m, e, a->subject);
			dnpd_log(a->level == DNP_LFM_LINK_OK || left ? DNPD_INFO : DNPD_WARN,
				 "lofamo: link %s %s%s", lfm_dir[a->subject % 6],
				 a->level == DNP_LFM_LINK_BROKEN ? "broken" :
				 a->level == DNP_LFM_LINK_SICK   ? "sick" :
								   "ok",
				 left ? " (its neighbour stopped)" : "");
			break;
		case DNP_DFM_AL_SENSOR:
			dnpd_log(a->level == DNP_LFM_NORMAL ? DNPD_INFO : DNPD_WARN,
				 "lofamo: sensor %s %s", lfm_sensor[a->subject % DNP_LFM_NSENSORS],
				 a->level == DNP_LFM_ALARM   ? "alarm" :
				 a->level == DNP_LFM_WARNING ? "warning" :
							       "normal");
			break;
		case DNP_DFM_AL_HOST:
			dnpd_log(
				a->level == DNP_LFM_HOST_OK ? DNPD_INFO : DNPD_WARN,
				"lofamo: host %s",
				a->level == DNP_LFM_HOST_OMISSION ?
					"omission (watchdog not validated): relaying over the torus" :
				a->level == DNP_LFM_HOST_PERIPHERY ? "periphery fault: relaying" :
								     "ok");
			break;
		case DNP_DFM_AL_REMOTE:
			dnpd_log(a->level == DNP_LFM_RFD_NONE ? DNPD_INFO : DNPD_WARN,
				 "lofamo: neighbour %s (node %u) host %s", lfm_dir[a->subject % 6],
				 a->node, a->level == DNP_LFM_RFD_NONE ? "recovered" : "faulty");
			break;
		case DNP_DFM_AL_TIMER:
			dnpd_log(a->level ? DNPD_WARN : DNPD_INFO, "lofamo: timer register %s",
				 a->level ? "refused (T_write must be < T_read, 5..60000 ms)" :
					    "accepted");
			break;
		}
	}
}

uint64_t dnpd_lfm_next_deadline(const struct dnpd_lfm *m)
{
	return m->dfm ? dnp_dfm_next_deadline(m->dfm) : UINT64_MAX;
}

void dnpd_lfm_house(struct dnpd_lfm *m, struct dnp_engine *e, uint64_t now)
{
	struct dnp_dfm_input in = { .engine_ok = true };
	struct dnp_dfm_out o;
	uint8_t buf[DNP_ENGINE_DIAG_MAX];
	struct dnp_coord src;
	bool changed = false;
	int n;

	o.nalarm = 0;
	o.ndiag = 0;
	while ((n = dnp_engine_diag_poll(e, &src, buf, sizeof(buf))) > 0) {
		/* Wiring queries and answers (dnpctl topo --all) share the DIAG queue. */
		if (m->hook.take && m->hook.take(m->hook.ctx, src, buf, (size_t)n, now))
			continue;
		if (!m->dfm) {
			m->diag_dropped++;
			continue;
		}
		if (dnp_dfm_on_diag(m->dfm, src, buf, (size_t)n, now, &o) < 0)
			dnpd_log(DNPD_WARN, "lofamo: bad DIAG from (%u,%u,%u)", src.x, src.y,
				 src.z);
		changed = true;
	}
	if (!m->dfm)
		return;
	if (o.nalarm)
		lfm_log(m, e, &o);
	for (unsigned d = 0; d < DNP_NDIRS; d++) {
		const struct dnp_link_stats *ls = dnp_engine_link_stats(e, d);

		in.link_state[d] = (uint8_t)dnp_engine_link_state(e, d);
		if (in.link_state[d] != m->state[d])
			changed = true;
		m->state[d] = in.link_state[d];
		in.rx_frames[d] = ls ? ls->rx_frames : 0;
		in.crc_errors[d] = m->crc_errors[d];
	}
	if (!changed && now < dnp_dfm_next_deadline(m->dfm))
		return;
	lfm_sensors(m, &in, now);
	dnp_dfm_tick(m->dfm, now, &in, &o);
	lfm_log(m, e, &o);
	/* the engine avoids a sick link where a detour exists (dnp_engine_link_sick) */
	for (unsigned i = 0; i < o.nalarm; i++)
		if (o.alarm[i].kind == DNP_DFM_AL_LINK && o.alarm[i].subject < DNP_NDIRS &&
		    o.alarm[i].level != DNP_LFM_LINK_BROKEN)
			(void)dnp_engine_link_sick(e, o.alarm[i].subject,
						   o.alarm[i].level == DNP_LFM_LINK_SICK, now);
	for (unsigned i = 0; i < o.ndiag; i++)
		if (dnp_engine_diag_send(e, o.diag[i].dst, o.diag[i].data, DNP_DFM_DIAG_BYTES,
					 now) < 0)
			m->diag_send_failed++;
}
