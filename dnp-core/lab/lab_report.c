/* SPDX-License-Identifier: MIT */
/*
 * lab_report.c — the lab's results: the summary of a run (latencies,
 * throughput, verification), counters and the report
 * (lab_internal.h lists the parts, lab.h states the contract).
 */
#include "lab_internal.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The ping-pong flow's one-way latencies (conf.pp_count), into r. */
static void pp_finish(struct dnp_lab *lab, struct dnp_lab_result *r)
{
	uint64_t *lat = malloc((lab->conf.pp_count + 1) * sizeof(*lat));
	uint64_t nl = 0, bulk_end = 0, seen = 0;

	r->pp_all = r->pp_msgs = r->pp_lat_median = r->pp_lat_p99 = r->pp_lat_max = r->pp_end = 0;
	for (uint32_t i = 0; i < lab->nmsgs; i++)
		if (!lab->msgs[i].pp && lab->msgs[i].t_done != UINT64_MAX &&
		    lab->msgs[i].t_done > bulk_end)
			bulk_end = lab->msgs[i].t_done;
	r->pp_bulk_end = bulk_end;
	for (uint32_t i = 0; lat && i < lab->nmsgs; i++) {
		const struct lab_msg *m = &lab->msgs[i];

		if (!m->pp || m->t_rx == UINT64_MAX || m->t_submit == UINT64_MAX)
			continue;
		r->pp_all++;
		if (seen++ < lab->conf.pp_warmup)
			continue; /* warm-up: not measured */
		if (bulk_end && m->t_rx > bulk_end && !lab->conf.pp_measure_all)
			continue; /* after the other traffic ended: not measured */
		lat[nl++] = m->t_rx - m->t_submit;
		r->pp_end = m->t_rx > r->pp_end ? m->t_rx : r->pp_end;
	}
	if (nl) {
		qsort(lat, nl, sizeof(*lat), cmp_u64);
		r->pp_msgs = nl;
		r->pp_lat_median = lat[nl / 2];
		r->pp_lat_p99 = lat[(nl - 1) * 99 / 100];
		r->pp_lat_max = lat[nl - 1];
	}
	free(lat);
}

void lab_finish(struct dnp_lab *lab)
{
	struct dnp_lab_result *r = &lab->res;
	uint64_t *lat = malloc((lab->nmsgs + 1) * sizeof(*lat));
	uint64_t nl = 0;
	double sum = 0;

	r->time = lab->now;
	r->pending_at_end = lab_pending_total(lab);
	for (uint32_t i = 0; i < lab->nmsgs; i++) {
		const struct lab_msg *m = &lab->msgs[i];

		if (m->t_done != UINT64_MAX && m->t_submit != UINT64_MAX && lat)
			lat[nl++] = m->t_done - m->t_submit;
		if (r->status || m->excused)
			continue; /* a deadlock or timeout already says what is missing */
		if (m->ncompl != 1)
			lab_verify_fail(lab, "message without completion", i, m->ncompl);
		else if (m->status == 0 && (m->attempts ? m->nrx < 1 || m->written < m->size :
							  m->nrx != 1 || m->written != m->size))
			lab_verify_fail(lab, "completed message not received intact", i,
					m->written);
		else if (m->mismatches)
			lab_verify_fail(lab, "message with wrong bytes", i, m->mismatches);
	}
	if (nl) {
		qsort(lat, nl, sizeof(*lat), cmp_u64);
		r->lat_min = lat[0];
		r->lat_median = lat[nl / 2];
		r->lat_p99 = lat[(nl * 99) / 100 < nl ? (nl * 99) / 100 : nl - 1];
		r->lat_max = lat[nl - 1];
		for (uint64_t i = 0; i < nl; i++)
			sum += (double)lat[i];
		r->lat_mean = sum / (double)nl;
	} else {
		r->lat_min = 0;
	}
	free(lat);
	if (lab->conf.pp_count)
		pp_finish(lab, r);
	memset(&r->engine, 0, sizeof(r->engine));
	memset(&r->link, 0, sizeof(r->link));
	for (uint32_t i = 0; i < lab->n; i++) {
		if (!lab->nodes[i].e)
			continue; /* killed, not revived: its counters went with it */
		const struct dnp_engine_stats *s = dnp_engine_stats(lab->nodes[i].e);

		r->engine.cmds_accepted += s->cmds_accepted;
		r->engine.cmds_ok += s->cmds_ok;
		r->engine.cmds_failed += s->cmds_failed;
		r->engine.pkts_injected += s->pkts_injected;
		r->engine.pkts_forwarded += s->pkts_forwarded;
		r->engine.pkts_delivered += s->pkts_delivered;
		r->engine.bytes_delivered += s->bytes_delivered;
		r->engine.rx_crc_errors += s->rx_crc_errors;
		r->engine.rx_malformed += s->rx_malformed;
		r->engine.rx_misrouted += s->rx_misrouted;
		r->engine.rx_wrong_link += s->rx_wrong_link;
		r->engine.deliver_errors += s->deliver_errors;
		r->engine.events += s->events;
		r->engine.hops_total += s->hops_total;
		r->engine.route_tx += s->route_tx;
		r->engine.route_rx += s->route_rx;
		r->engine.route_changes += s->route_changes;
		r->engine.adaptive_hops += s->adaptive_hops;
		r->engine.cg_marked += s->cg_marked;
		r->engine.cg_echoes += s->cg_echoes;
		r->engine.cg_cuts += s->cg_cuts;
		r->engine.cg_held += s->cg_held;
		r->engine.cg_bypassed += s->cg_bypassed;
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			const struct dnp_link_stats *ls;

			if (!lab->nodes[i].link[d].present)
				continue;
			ls = dnp_engine_link_stats(lab->nodes[i].e, d);
			if (!ls)
				continue;
			r->link.tx_frames += ls->tx_frames;
			r->link.tx_words += ls->tx_words;
			r->link.tx_retx_frames += ls->tx_retx_frames;
			r->link.retx_rounds += ls->retx_rounds;
			r->link.tx_credits += ls->tx_credits;
			r->link.rx_frames += ls->rx_frames;
			r->link.rx_words += ls->rx_words;
			r->link.rx_credits += ls->rx_credits;
			r->link.rx_dup += ls->rx_dup;
			r->link.rx_out_of_order += ls->rx_out_of_order;
			r->link.rx_overflow += ls->rx_overflow;
			r->link.credit_stalls += ls->credit_stalls;
		}
	}
	if (!r->status && r->verify_errors)
		r->status = -EIO;
}

/* ------------------------------------------------------------ results */

const struct dnp_lab_result *dnp_lab_result(const struct dnp_lab *lab)
{
	return &lab->res;
}

uint32_t dnp_lab_nodes(const struct dnp_lab *lab)
{
	return lab->n;
}

uint32_t dnp_lab_messages(const struct dnp_lab *lab)
{
	return lab->nmsgs;
}

struct dnp_engine *dnp_lab_engine(struct dnp_lab *lab, uint32_t node)
{
	return node < lab->n ? lab->nodes[node].e : NULL;
}

uint64_t dnp_lab_now(const struct dnp_lab *lab)
{
	return lab->now;
}

void dnp_lab_link_info(const struct dnp_lab *lab, uint32_t node, unsigned dir,
		       struct dnp_lab_link_info *out)
{
	memset(out, 0, sizeof(*out));
	out->broken_at = UINT64_MAX;
	if (node < lab->n && dir < DNP_NDIRS)
		*out = lab->nodes[node].link[dir].info;
}

int dnp_lab_msg_info(const struct dnp_lab *lab, uint32_t i, struct dnp_lab_msg_info *out)
{
	const struct lab_msg *m;

	if (i >= lab->nmsgs)
		return -ERANGE;
	m = &lab->msgs[i];
	out->src = m->src;
	out->dst = m->dst;
	out->size = m->size;
	out->status = m->status;
	out->completions = m->ncompl;
	out->rx_events = m->nrx;
	out->written = m->written;
	out->submitted = m->t_submit;
	out->completed = m->t_done;
	out->released = m->release;
	out->received = m->t_rx;
	return 0;
}

static const char *const dir_names[DNP_NDIRS] = { "X+", "X-", "Y+", "Y-", "Z+", "Z-" };

static const char *status_name(int status)
{
	switch (status) {
	case 0:
		return "OK";
	case -EIO:
		return "VERIFICATION FAILED";
	case -EDEADLK:
		return "DEADLOCK (no progress)";
	case -ETIME:
		return "TIMEOUT (max-time reached)";
	default:
		return "ERROR";
	}
}

struct lab_counter {
	const char *name;
	uint64_t v;
};

static unsigned counters(const struct dnp_lab *lab, struct lab_counter *k)
{
	const struct dnp_lab_result *r = &lab->res;
	unsigned n = 0;

#define K(nm, val) (k[n].name = (nm), k[n++].v = (val))
	K("cmds_accepted", r->engine.cmds_accepted);
	K("cmds_ok", r->engine.cmds_ok);
	K("cmds_failed", r->engine.cmds_failed);
	K("pkts_injected", r->engine.pkts_injected);
	K("pkts_forwarded", r->engine.pkts_forwarded);
	K("pkts_delivered", r->engine.pkts_delivered);
	K("bytes_delivered", r->engine.bytes_delivered);
	K("hops_total", r->engine.hops_total);
	K("events", r->engine.events);
	K("tx_frames", r->link.tx_frames);
	K("tx_words", r->link.tx_words);
	K("tx_retx_frames", r->link.tx_retx_frames);
	K("retx_rounds", r->link.retx_rounds);
	K("tx_credits", r->link.tx_credits);
	K("rx_frames", r->link.rx_frames);
	K("rx_credits", r->link.rx_credits);
	K("rx_dup", r->link.rx_dup);
	K("rx_out_of_order", r->link.rx_out_of_order);
	K("rx_overflow", r->link.rx_overflow);
	K("credit_stalls", r->link.credit_stalls);
	K("rx_crc_errors", r->engine.rx_crc_errors);
	K("rx_malformed", r->engine.rx_malformed);
	K("rx_misrouted", r->engine.rx_misrouted);
	K("rx_wrong_link", r->engine.rx_wrong_link);
	K("deliver_errors", r->engine.deliver_errors);
	K("inj_lost", r->lost);
	K("inj_lost_seq", r->lost_seq);
	K("inj_corrupted", r->corrupted);
	K("inj_corrupted_seq", r->corrupted_seq);
	K("inj_duplicated", r->duplicated);
	K("inj_duplicated_seq_intact", r->duplicated_seq);
	K("inj_reordered", r->reordered);
	K("inj_silenced", r->silenced);
	K("inj_undelivered_seq", r->undelivered_seq);
	K("rx_rejected_crc", r->rx_rejected_crc);
	K("rx_rejected_other", r->rx_rejected_other);
	K("faults_applied", r->faults_applied);
	K("fault_lost_frames", r->cut_frames);
	K("retries", r->retries);
	K("detoured", r->detoured);
	K("excused", r->excused);
	K("route_changes", r->engine.route_changes);
	K("adaptive_hops", r->engine.adaptive_hops);
	K("last_route_change", r->last_route_change);
	if (lab->conf.congestion) { /* only then, so that a run without it reports as before */
		K("cg_marked", r->engine.cg_marked);
		K("cg_echoes", r->engine.cg_echoes);
		K("cg_cuts", r->engine.cg_cuts);
		K("cg_held", r->engine.cg_held);
		K("cg_bypassed", r->engine.cg_bypassed);
	}
#undef K
	return n;
}

/* Link utilisation over the run: min, mean, max and the busiest link. */
struct lab_util {
	double umin, umax, usum;
	unsigned nlinks;
	uint32_t bnode;
	unsigned bdir;
	uint64_t bbusy;
};

static void utilisation(const struct dnp_lab *lab, uint64_t t, struct lab_util *u)
{
	memset(u, 0, sizeof(*u));
	u->umin = 1e9;
	for (uint32_t i = 0; i < lab->n; i++) {
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			const struct dnp_lab_link_info *li = &lab->nodes[i].link[d].info;
			double x = (double)li->busy / (double)t;

			if (!li->present)
				continue;
			u->nlinks++;
			u->usum += x;
			u->umin = x < u->umin ? x : u->umin;
			u->umax = x > u->umax ? x : u->umax;
			if (li->busy > u->bbusy) {
				u->bbusy = li->busy;
				u->bnode = i;
				u->bdir = d;
			}
		}
	}
	if (!u->nlinks)
		u->umin = 0;
}

static void report_csv(const struct dnp_lab *lab, FILE *f, const struct lab_counter *k, unsigned nk,
		       uint64_t t)
{
	const struct dnp_lab_conf *c = &lab->conf;
	const struct dnp_lab_result *r = &lab->res;

	fprintf(f, "# summary\nkey,value\n");
	fprintf(f, "status,%s\n", status_name(r->status));
	fprintf(f, "torus,%ux%ux%u\n", c->torus.dim[0], c->torus.dim[1], c->torus.dim[2]);
	fprintf(f, "pattern,%s\n", dnp_lab_pattern_name(c->pattern));
	fprintf(f, "seed,%" PRIu64 "\n", c->seed);
	fprintf(f, "time,%" PRIu64 "\n", r->time);
	fprintf(f, "events_processed,%" PRIu64 "\n", r->events_processed);
	fprintf(f, "messages,%" PRIu64 "\nbytes,%" PRIu64 "\n", r->messages, r->bytes);
	fprintf(f, "completions_ok,%" PRIu64 "\ncompletions_err,%" PRIu64 "\n", r->completions_ok,
		r->completions_err);
	fprintf(f, "err_nolink,%" PRIu64 "\nerr_other,%" PRIu64 "\n", r->err_nolink, r->err_other);
	fprintf(f, "rx_events,%" PRIu64 "\nverify_errors,%" PRIu64 "\n", r->rx_events,
		r->verify_errors);
	fprintf(f, "byte_mismatches,%" PRIu64 "\nbad_hops,%" PRIu64 "\n", r->byte_mismatches,
		r->bad_hops);
	fprintf(f, "pending_at_end,%" PRIu64 "\n", r->pending_at_end);
	fprintf(f, "\n# latency\nmin,median,p99,max,mean\n");
	fprintf(f, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.1f\n", r->lat_min,
		r->lat_median, r->lat_p99, r->lat_max, r->lat_mean);
	if (lab->conf.pp_count)
		fprintf(f,
			"\n# pingpong\nmessages,all,median,p99,max,end,rest_end\n%" PRIu64
			",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			"\n",
			r->pp_msgs, r->pp_all, r->pp_lat_median, r->pp_lat_p99, r->pp_lat_max,
			r->pp_end, r->pp_bulk_end);
	fprintf(f, "\n# counters\nname,value\n");
	for (unsigned i = 0; i < nk; i++)
		fprintf(f, "%s,%" PRIu64 "\n", k[i].name, k[i].v);
	fprintf(f, "\n# links\nnode,x,y,z,dir,busy,utilisation,frames,bytes,lost,corrupted,"
		   "duplicated,reordered,silenced,broken_at\n");
	for (uint32_t i = 0; i < lab->n; i++) {
		const struct lab_node *nd = &lab->nodes[i];

		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			const struct dnp_lab_link_info *li = &nd->link[d].info;

			if (!li->present)
				continue;
			fprintf(f,
				"%u,%u,%u,%u,%s,%" PRIu64 ",%.4f,%" PRIu64 ",%" PRIu64 ",%" PRIu64
				",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRId64 "\n",
				i, nd->c.x, nd->c.y, nd->c.z, dir_names[d], li->busy,
				(double)li->busy / (double)t, li->frames, li->bytes, li->lost,
				li->corrupted, li->duplicated, li->reordered, li->silenced,
				li->broken_at == UINT64_MAX ? (int64_t)-1 : (int64_t)li->broken_at);
		}
	}
}

/* The per-node utilisation table (small tori) and the broken links. */
static void report_links(const struct dnp_lab *lab, FILE *f, uint64_t t)
{
	if (lab->n <= 16) {
		for (uint32_t i = 0; i < lab->n; i++) {
			const struct lab_node *nd = &lab->nodes[i];

			fprintf(f, "           node %u (%u,%u,%u):", i, nd->c.x, nd->c.y, nd->c.z);
			for (unsigned d = 0; d < DNP_NDIRS; d++) {
				const struct dnp_lab_link_info *li = &nd->link[d].info;

				if (li->present)
					fprintf(f, " %s %5.1f%%", dir_names[d],
						100.0 * (double)li->busy / (double)t);
			}
			fprintf(f, "\n");
		}
	}
	for (uint32_t i = 0; i < lab->n; i++) {
		for (unsigned d = 0; d < DNP_NDIRS; d++) {
			const struct dnp_lab_link_info *li = &lab->nodes[i].link[d].info;

			if (li->present && li->broken_at != UINT64_MAX)
				fprintf(f, "           link node %u %s BROKEN at %" PRIu64 "\n", i,
					dir_names[d], li->broken_at);
		}
	}
}

static void report_text(const struct dnp_lab *lab, FILE *f, const struct lab_counter *k,
			unsigned nk, uint64_t t)
{
	const struct dnp_lab_conf *c = &lab->conf;
	const struct dnp_lab_result *r = &lab->res;
	struct lab_util u;

	utilisation(lab, t, &u);

	fprintf(f,
		"dnp-lab: torus %ux%ux%u (%u nodes), pattern %s, %" PRIu64 " messages, %" PRIu64
		" bytes, seed %" PRIu64 "\n",
		c->torus.dim[0], c->torus.dim[1], c->torus.dim[2], lab->n,
		dnp_lab_pattern_name(c->pattern), r->messages, r->bytes, c->seed);
	fprintf(f, "result:    %s at time %" PRIu64 " (%" PRIu64 " events simulated)\n",
		status_name(r->status), r->time, r->events_processed);
	if (r->status == -EDEADLK)
		fprintf(f,
			"           no packet delivered and no command completed since %" PRIu64
			" (stall limit %" PRIu64 "), %" PRIu64 " still pending\n",
			lab->last_progress, c->stall_limit, r->pending_at_end);
	fprintf(f,
		"commands:  %" PRIu64 " ok, %" PRIu64 " failed (%" PRIu64 " -ENOLINK, %" PRIu64
		" other), %" PRIu64 " RX events\n",
		r->completions_ok, r->completions_err, r->err_nolink, r->err_other, r->rx_events);
	fprintf(f,
		"verify:    %" PRIu64 " errors (%" PRIu64 " bytes wrong, %" PRIu64
		" bad hop counts, %" PRIu64 " double completions, %" PRIu64
		" unknown events), pending at end %" PRIu64 "\n",
		r->verify_errors, r->byte_mismatches, r->bad_hops, r->double_completions,
		r->unknown_events, r->pending_at_end);
	fprintf(f,
		"latency:   submit->completion min %" PRIu64 " median %" PRIu64 " p99 %" PRIu64
		" max %" PRIu64 " mean %.1f (time units)\n",
		r->lat_min, r->lat_median, r->lat_p99, r->lat_max, r->lat_mean);
	if (lab->conf.pp_count)
		fprintf(f,
			"pingpong:  %" PRIu64 " of %" PRIu64
			" messages (class %u) arrived while the"
			" rest ran (it ended at %" PRIu64 "): one-way latency median %" PRIu64
			" p99 %" PRIu64 " max %" PRIu64 ", last at %" PRIu64 " (time units)\n",
			r->pp_msgs, r->pp_all, lab->conf.pp_tc, r->pp_bulk_end, r->pp_lat_median,
			r->pp_lat_p99, r->pp_lat_max, r->pp_end);
	fprintf(f, "links:     %u directed, utilisation min %.1f%% mean %.1f%% max %.1f%%",
		u.nlinks, 100 * u.umin, u.nlinks ? 100 * u.usum / u.nlinks : 0.0, 100 * u.umax);
	if (u.nlinks)
		fprintf(f, " (busiest: node %u (%u,%u,%u) %s)", u.bnode, lab->nodes[u.bnode].c.x,
			lab->nodes[u.bnode].c.y, lab->nodes[u.bnode].c.z, dir_names[u.bdir]);
	fprintf(f, "\n");
	report_links(lab, f, t);
	fprintf(f, "counters:\n");
	for (unsigned i = 0; i < nk; i++)
		fprintf(f, "  %-26s %" PRIu64 "%s", k[i].name, k[i].v, i % 3 == 2 ? "\n" : "");
	if (nk % 3)
		fprintf(f, "\n");
}

void dnp_lab_report(const struct dnp_lab *lab, FILE *f, bool csv)
{
	struct lab_counter k[64];
	unsigned nk = counters(lab, k);
	uint64_t t = lab->res.time ? lab->res.time : 1;

	if (csv)
		report_csv(lab, f, k, nk, t);
	else
		report_text(lab, f, k, nk, t);
}
