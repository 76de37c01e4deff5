/* SPDX-License-Identifier: MIT */
/*
 * lab_conf.c — the lab's configuration: defaults, the parsers of
 * patterns, sizes and faults, random fault plans
 * (lab_internal.h lists the parts, lab.h states the contract).
 */
#include "lab_internal.h"

#include "arb.h"
#include "dnp_parse.h"

/* ------------------------------------------------------------- setup */

void dnp_lab_conf_default(struct dnp_lab_conf *c)
{
	struct dnp_engine_conf ec;

	memset(c, 0, sizeof(*c));
	dnp_engine_conf_default(&ec);
	dnp_torus_init(&c->torus, 2, 2, 2);
	c->link = ec.link;
	/* The APEnet+ link (EURETILE report, torus link): 512-word FIFO, T_RED 506,
	 * C 35 cycles, one word per cycle, 35 cycles of flight time. */
	c->link.fifo_words = 512;
	c->link.t_red = 506;
	c->link.t_yellow = 256;
	c->link.credit_period = 35;
	c->link.rule = DNP_START_VCT;
	c->link.credit_model = DNP_CREDIT_HW;
	c->link.nvc = 2;
	/* timers in lab time units: derived from latency/bw in dnp_lab_create when 0 */
	c->link.rto = 0;
	c->link.credit_timeout = 0;
	c->link.init_timeout = 0;
	c->vc_mode = DNP_VC_DATELINE;
	/* the engine's pools are sized for a daemon; 64 lab nodes need less */
	c->max_commands = ec.max_commands < 256 ? ec.max_commands : 256;
	c->event_queue = ec.event_queue < 1024 ? ec.event_queue : 1024;
	c->cmd_timeout = 0;
	c->latency = 35;
	c->bw = 1;
	c->seed = 1;
	c->silence_node = -1;
	c->pattern = DNP_LAB_ALL_TO_ALL;
	c->sizes[0] = 4096;
	c->nsizes = 1;
	c->count = 1;
	c->max_time = UINT64_MAX / 4;
}

static const char *const pattern_names[] = {
	[DNP_LAB_ALL_TO_ALL] = "all-to-all", [DNP_LAB_NEIGHBOUR] = "neighbour",
	[DNP_LAB_HOTSPOT] = "hotspot",       [DNP_LAB_RANDOM] = "random",
	[DNP_LAB_SHIFT] = "shift",
};

const char *dnp_lab_pattern_name(enum dnp_lab_pattern p)
{
	return (unsigned)p < sizeof(pattern_names) / sizeof(pattern_names[0]) ? pattern_names[p] :
										"?";
}

int dnp_lab_pattern_parse(const char *s, enum dnp_lab_pattern *p)
{
	for (unsigned i = 0; i < sizeof(pattern_names) / sizeof(pattern_names[0]); i++) {
		if (!strcmp(s, pattern_names[i])) {
			*p = (enum dnp_lab_pattern)i;
			return 0;
		}
	}
	if (!strcmp(s, "alltoall") || !strcmp(s, "all2all")) {
		*p = DNP_LAB_ALL_TO_ALL;
		return 0;
	}
	if (!strcmp(s, "neighbor")) {
		*p = DNP_LAB_NEIGHBOUR;
		return 0;
	}
	return -EINVAL;
}

int dnp_lab_parse_sizes(const char *s, struct dnp_lab_conf *c)
{
	uint64_t v[DNP_LAB_MAX_SIZES + 1];
	char buf[1024];
	size_t len = s ? strlen(s) : 0;
	int n;

	/* dnp_parse_sizes(), and the trailing comma the lab always took ("1,2,"). */
	if (len && s[len - 1] == ',') {
		if (len >= sizeof(buf))
			return -EINVAL;
		memcpy(buf, s, len - 1);
		buf[len - 1] = 0;
		s = buf;
	}
	n = dnp_parse_sizes(s, v, DNP_LAB_MAX_SIZES + 1);
	if (n < 0)
		return n == -ERANGE ? -EINVAL : n;
	if (n > (int)DNP_LAB_MAX_SIZES)
		return -E2BIG;
	for (int i = 0; i < n; i++) {
		if (v[i] > UINT32_MAX)
			return -EINVAL;
		c->sizes[i] = (uint32_t)v[i];
	}
	c->nsizes = (unsigned)n;
	return 0;
}

/* Appends a message src->dst of size to the plan (msgs may be NULL: counting pass). */
static int fault_add(struct dnp_lab_conf *c, uint64_t at, uint32_t node, unsigned dir,
		     unsigned kind)
{
	if (c->nfaults >= DNP_LAB_MAX_FAULTS)
		return -E2BIG;
	c->faults[c->nfaults++] = (struct dnp_lab_fault){
		.at = at, .node = node, .dir = (uint8_t)dir, .kind = (uint8_t)kind
	};
	return 0;
}

int dnp_lab_fault_parse(const char *s, struct dnp_lab_conf *c)
{
	static const char *const kinds[] = { "cut", "mend", "kill", "revive" };
	static const char *const dirs[DNP_NDIRS] = { "xp", "xm", "yp", "ym", "zp", "zm" };
	char buf[96], *at, *coord, *dir;
	struct dnp_coord xyz;
	unsigned kind, d = 0;
	uint64_t t;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	at = strchr(buf, '@');
	if (!at)
		return -EINVAL;
	*at++ = '\0';
	for (kind = 0; kind < 4 && strcmp(buf, kinds[kind]); kind++)
		;
	if (kind == 4)
		return -EINVAL;
	coord = strchr(at, ':');
	if (!coord)
		return -EINVAL;
	*coord++ = '\0';
	if (dnp_parse_u64(at, &t))
		return -EINVAL;
	dir = strchr(coord, ':');
	if (dir)
		*dir++ = '\0';
	if ((kind <= DNP_LAB_MEND) != (dir != NULL))
		return -EINVAL;
	if (dnp_coord_parse(coord, &c->torus, &xyz))
		return -EINVAL;
	if (dir) {
		for (d = 0; d < DNP_NDIRS && strcmp(dir, dirs[d]); d++)
			;
		if (d == DNP_NDIRS || c->torus.dim[d / 2] < 2)
			return -EINVAL;
	}
	return fault_add(c, t, dnp_torus_id(&c->torus, xyz), d, kind);
}

int dnp_lab_random_faults(struct dnp_lab_conf *c, unsigned cuts, unsigned kills, uint64_t t_end,
			  uint64_t seed)
{
	uint32_t n = dnp_torus_size(&c->torus);
	struct lab_rng r;
	int ret;

	if (!t_end || (cuts && c->torus.dim[0] < 2 && c->torus.dim[1] < 2 && c->torus.dim[2] < 2))
		return -EINVAL;
	if (c->nfaults + 2ull * (cuts + kills) > DNP_LAB_MAX_FAULTS || kills > n)
		return -E2BIG;
	lab_rng_seed(&r, seed ^ 0xfa11ed5eedull);
	for (unsigned i = 0; i < cuts; i++) {
		uint32_t node = (uint32_t)lab_rng_below(&r, n);
		unsigned dir;
		uint64_t at = lab_rng_below(&r, t_end);
		uint64_t len = 1 + lab_rng_below(&r, t_end / 2 + 1);

		do
			dir = (unsigned)lab_rng_below(&r, DNP_NDIRS);
		while (c->torus.dim[dir / 2] < 2);
		if ((ret = fault_add(c, at, node, dir, DNP_LAB_CUT)) ||
		    (ret = fault_add(c, at + len, node, dir, DNP_LAB_MEND)))
			return ret;
	}
	/* kills one after the other: slot k of t_end / kills holds one death */
	for (unsigned k = 0; k < kills; k++) {
		uint64_t slot = t_end / kills, base = k * slot;
		uint64_t at = base + lab_rng_below(&r, slot / 2 + 1);
		uint64_t len = 1 + lab_rng_below(&r, slot / 2 + 1);
		uint32_t node = (uint32_t)lab_rng_below(&r, n);

		for (unsigned j = 0; j < c->nfaults; j++)
			if (c->faults[j].kind == DNP_LAB_KILL && c->faults[j].node == node) {
				node = (node + 1) % n; /* each node dies at most once */
				j = (unsigned)-1;
			}
		if ((ret = fault_add(c, at, node, 0, DNP_LAB_KILL)) ||
		    (ret = fault_add(c, at + len, node, 0, DNP_LAB_REVIVE)))
			return ret;
	}
	return 0;
}

/* ------------------------------------------------- traffic classes */

static int class_u32(const char *arg, uint32_t max, uint32_t *v)
{
	uint64_t x;

	if (dnp_parse_u64_max(arg, max, &x))
		return -EINVAL;
	*v = (uint32_t)x;
	return 0;
}

int dnp_lab_class_opt(struct dnp_lab_conf *c, const char *name, const char *arg)
{
	uint32_t v, w;
	char *comma;

	if (!strcmp(name, "arbitration"))
		return dnp_arb_parse(arg, &c->arbitration);
	if (!strcmp(name, "tc") || !strcmp(name, "pingpong-tc")) {
		if (class_u32(arg, DNP_TC_MAX, &v))
			return -EINVAL;
		*(name[0] == 't' ? &c->tc : &c->pp_tc) = (uint8_t)v;
		return 0;
	}
	if (!strcmp(name, "low-payload") || !strcmp(name, "top-reserve")) {
		if (class_u32(arg, name[0] == 'l' ? DNP_MAX_PAYLOAD : UINT16_MAX, &v) ||
		    (name[0] == 'l' && v % DNP_WORD_BYTES))
			return -EINVAL;
		*(name[0] == 'l' ? &c->low_payload : &c->top_reserve) = (uint16_t)v;
		return 0;
	}
	if (!strcmp(name, "pingpong-start"))
		return dnp_parse_u64(arg, &c->pp_start) ? -EINVAL : 0;
	if (!strcmp(name, "pingpong-measure")) {
		if (strcmp(arg, "during") && strcmp(arg, "all"))
			return -EINVAL;
		c->pp_measure_all = arg[0] == 'a';
		return 0;
	}
	if (!strcmp(name, "pingpong-warmup"))
		return class_u32(arg, 1u << 24, &c->pp_warmup);
	if (!strcmp(name, "pingpong-count"))
		return class_u32(arg, 1u << 24, &c->pp_count);
	if (!strcmp(name, "pingpong-size"))
		return class_u32(arg, UINT32_MAX, &c->pp_size) || !c->pp_size ? -EINVAL : 0;
	if (strcmp(name, "pingpong") || !(comma = strchr(arg, ',')))
		return -EINVAL;
	char a[16];
	size_t n = (size_t)(comma - arg);

	if (n == 0 || n >= sizeof(a))
		return -EINVAL;
	memcpy(a, arg, n);
	a[n] = 0;
	if (class_u32(a, UINT32_MAX, &v) || class_u32(comma + 1, UINT32_MAX, &w) || v == w)
		return -EINVAL;
	c->pp_a = v;
	c->pp_b = w;
	if (!c->pp_count)
		c->pp_count = 100;
	if (!c->pp_size)
		c->pp_size = 8;
	if (!c->pp_tc)
		c->pp_tc = DNP_TC_MAX;
	return 0;
}
