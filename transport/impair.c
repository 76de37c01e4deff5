/* SPDX-License-Identifier: MIT */
/*
 * impair — loss, corruption, duplication, reordering and delay injected on
 * the frames a link sends (contract in impair.h).
 *
 * Every frame's fate is drawn once from a per-link splitmix64 stream seeded
 * from the spec's seed and the direction, so the same frames meet the same
 * fates run after run. A frame the inner transport cannot take now keeps its
 * fate for the next try. Delayed frames are copied into a FIFO of held
 * frames; a reordered frame waits in one slot and leaves right after the next
 * frame (or after DNP_IMPAIR_REORDER_MAX_NS if no other frame comes).
 */
#include "impair.h"
#include "pcap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HELD_MAX 256u
#define SPEC_MAX 4096u
#define DELAY_MAX_NS 1000000000ull
#define REORDER_MAX_NS 200000ull

static const char *const dir_keys[6] = { "xp", "xm", "yp", "ym", "zp", "zm" };

/* ---- spec ---- */

/* "12.5%" or "12.5" -> parts per million (0..1e6). */
static int parse_ppm(const char *v, size_t n, uint32_t *out)
{
	uint64_t ip = 0, frac = 0, scale = 10000; /* 1 % = 10000 ppm */
	size_t i = 0;
	unsigned digits = 0, fd = 0;

	while (i < n && v[i] >= '0' && v[i] <= '9') {
		ip = ip * 10 + (uint64_t)(v[i] - '0');
		if (ip > 100)
			return -EINVAL;
		i++;
		digits++;
	}
	if (i < n && v[i] == '.') {
		i++;
		while (i < n && v[i] >= '0' && v[i] <= '9') {
			if (fd == 4)
				return -EINVAL;
			scale /= 10;
			frac += (uint64_t)(v[i] - '0') * scale;
			i++;
			fd++;
			digits++;
		}
	}
	if (i < n && v[i] == '%')
		i++;
	if (i != n || digits == 0)
		return -EINVAL;
	ip = ip * 10000 + frac;
	if (ip > DNP_IMPAIR_PPM)
		return -EINVAL;
	*out = (uint32_t)ip;
	return 0;
}

static int parse_u64(const char *v, size_t n, uint64_t max, uint64_t *out, size_t *used)
{
	uint64_t x = 0;
	size_t i = 0;

	while (i < n && v[i] >= '0' && v[i] <= '9') {
		unsigned d = (unsigned)(v[i] - '0');

		if (x > (max - d) / 10)
			return -EINVAL;
		x = x * 10 + d;
		i++;
	}
	if (i == 0)
		return -EINVAL;
	*out = x;
	*used = i;
	return 0;
}

static int parse_delay(const char *v, size_t n, uint64_t *ns)
{
	uint64_t x, mul;
	size_t used;

	if (parse_u64(v, n, DELAY_MAX_NS, &x, &used))
		return -EINVAL;
	v += used;
	n -= used;
	if (n == 2 && !memcmp(v, "ns", 2))
		mul = 1;
	else if (n == 2 && !memcmp(v, "us", 2))
		mul = 1000;
	else if (n == 2 && !memcmp(v, "ms", 2))
		mul = 1000000;
	else
		return -EINVAL;
	if (x > DELAY_MAX_NS / mul)
		return -EINVAL;
	*ns = x * mul;
	return 0;
}

static bool key_is(const char *k, size_t kn, const char *name)
{
	return kn == strlen(name) && !memcmp(k, name, kn);
}

int dnp_impair_parse(const char *spec, struct dnp_impair_conf *c)
{
	const char *p;
	size_t len;

	if (!c)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->dirs = 0x3f;
	c->seed = 1;
	if (!spec)
		return -EINVAL;
	len = strnlen(spec, SPEC_MAX + 1);
	if (len > SPEC_MAX)
		return -EINVAL;
	if (len == 0 || !strcmp(spec, "off"))
		return 0;
	p = spec;
	while (p < spec + len) {
		const char *end = memchr(p, ',', (size_t)(spec + len - p));
		const char *eq;
		size_t n, kn, vn;
		int r = 0;

		if (!end)
			end = spec + len;
		n = (size_t)(end - p);
		eq = memchr(p, '=', n);
		if (!eq)
			return -EINVAL;
		kn = (size_t)(eq - p);
		vn = n - kn - 1;
		eq++;
		if (key_is(p, kn, "dir")) {
			unsigned d;

			if (vn == 3 && !memcmp(eq, "all", 3)) {
				c->dirs = 0x3f;
			} else {
				for (d = 0; d < 6; d++)
					if (vn == 2 && !memcmp(eq, dir_keys[d], 2))
						break;
				if (d == 6)
					return -EINVAL;
				c->dirs = (uint8_t)(1u << d);
			}
		} else if (key_is(p, kn, "loss")) {
			r = parse_ppm(eq, vn, &c->loss);
		} else if (key_is(p, kn, "corrupt")) {
			r = parse_ppm(eq, vn, &c->corrupt);
		} else if (key_is(p, kn, "dup")) {
			r = parse_ppm(eq, vn, &c->dup);
		} else if (key_is(p, kn, "reorder")) {
			r = parse_ppm(eq, vn, &c->reorder);
		} else if (key_is(p, kn, "delay")) {
			r = parse_delay(eq, vn, &c->delay_ns);
		} else if (key_is(p, kn, "seed")) {
			size_t used;

			r = parse_u64(eq, vn, UINT64_MAX, &c->seed, &used);
			if (!r && used != vn)
				r = -EINVAL;
		} else {
			return -EINVAL;
		}
		if (r)
			return -EINVAL;
		if (end + 1 == spec + len)
			return -EINVAL; /* a trailing comma */
		p = end + 1;
	}
	return 0;
}

bool dnp_impair_active(const struct dnp_impair_conf *c)
{
	return c && c->dirs && (c->loss || c->corrupt || c->dup || c->reorder || c->delay_ns);
}

static void fmt_ppm(char *b, size_t n, uint32_t ppm)
{
	snprintf(b, n, "%u.%04u%%", ppm / 10000u, ppm % 10000u);
}

void dnp_impair_format(const struct dnp_impair_conf *c, char *buf, size_t len)
{
	char l[16], co[16], d[16], r[16], dir[8];
	unsigned k, nd = 0;

	if (!len)
		return;
	if (!dnp_impair_active(c)) {
		snprintf(buf, len, "off");
		return;
	}
	snprintf(dir, sizeof(dir), "all");
	for (k = 0; k < 6; k++)
		if (c->dirs & (1u << k))
			nd++;
	if (nd == 1)
		for (k = 0; k < 6; k++)
			if (c->dirs & (1u << k))
				snprintf(dir, sizeof(dir), "%s", dir_keys[k]);
	fmt_ppm(l, sizeof(l), c->loss);
	fmt_ppm(co, sizeof(co), c->corrupt);
	fmt_ppm(d, sizeof(d), c->dup);
	fmt_ppm(r, sizeof(r), c->reorder);
	snprintf(buf, len, "dir=%s,loss=%s,corrupt=%s,dup=%s,reorder=%s,delay=%lluns,seed=%llu",
		 dir, l, co, d, r, (unsigned long long)c->delay_ns, (unsigned long long)c->seed);
}

/* ---- the wrapper ---- */

struct held {
	uint64_t due;
	uint32_t len;
	bool reorder;
};

enum fate_bits {
	F_DROP = 1,
	F_CORRUPT = 2,
	F_DUP = 4,
	F_REORDER = 8
};

struct impair {
	struct dnp_transport_base base;
	struct dnp_transport *inner;
	const struct dnp_transport_ops *iops;
	unsigned dir;
	struct dnp_impair_conf c;
	bool on;
	uint64_t rng;
	uint32_t mtu;
	int fate;          /* fate of the frame offered next, -1: not drawn */
	uint32_t flip_bit; /* with F_CORRUPT: which bit */
	/* delayed frames, FIFO */
	struct held held[HELD_MAX];
	uint8_t *held_data;
	uint32_t h_head, h_tail;
	/* the reordered frame */
	uint8_t *ro_data;
	uint32_t ro_len;
	uint64_t ro_since;
	uint8_t *scratch;
	struct dnp_impair_stats st;
	struct dnp_pcap *cap; /* records the frames as they pass below us, or NULL */
};

static struct impair *to_imp(struct dnp_transport *t)
{
	return (struct impair *)(void *)t;
}

static const struct impair *to_imp_c(const struct dnp_transport *t)
{
	return (const struct impair *)(const void *)t;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(struct impair *m)
{
	uint64_t z = (m->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool roll(struct impair *m, uint32_t ppm)
{
	return ppm && rnd(m) % DNP_IMPAIR_PPM < ppm;
}

static void apply_conf(struct impair *m, const struct dnp_impair_conf *c)
{
	m->c = *c;
	m->on = (c->dirs & (1u << m->dir)) && dnp_impair_active(c);
	m->rng = c->seed ^ ((uint64_t)(m->dir + 1) * 0xd1b54a32d192ed03ull);
	m->fate = -1;
}

static int send1(struct impair *m, const uint8_t *d, uint32_t len)
{
	struct dnp_tx_frame f = { d, len };
	int r = m->iops->tx_burst(m->inner, &f, 1);

	if (m->cap && r == 1)
		dnp_pcap_tx(m->cap, m->dir, &f, 1);
	return r;
}

/*
 * Puts one frame on the wire, or in the reorder slot. Returns 1 when it was
 * taken, 0 when the inner transport is full, < 0 on its error.
 */
static int emit(struct impair *m, const uint8_t *d, uint32_t len, bool reorder, uint64_t now)
{
	int r;

	if (reorder && !m->ro_len && len <= m->mtu) {
		memcpy(m->ro_data, d, len);
		m->ro_len = len;
		m->ro_since = now;
		return 1;
	}
	r = send1(m, d, len);
	if (r <= 0)
		return r;
	if (m->ro_len && send1(m, m->ro_data, m->ro_len) == 1) {
		m->ro_len = 0;
		m->st.reordered++;
	}
	return 1;
}

static void draw_fate(struct impair *m, uint32_t len)
{
	int f = 0;

	if (roll(m, m->c.loss)) {
		f = F_DROP;
	} else {
		if (roll(m, m->c.corrupt)) {
			f |= F_CORRUPT;
			m->flip_bit = (uint32_t)(rnd(m) % ((uint64_t)len * 8u));
		}
		if (roll(m, m->c.dup))
			f |= F_DUP;
		if (roll(m, m->c.reorder))
			f |= F_REORDER;
	}
	m->fate = f;
}

/* Sends due held frames in order; true when none is left waiting for room. */
static bool flush_held(struct impair *m, uint64_t now)
{
	while (m->h_head != m->h_tail) {
		struct held *h = &m->held[m->h_head % HELD_MAX];

		if (h->due > now)
			return true;
		if (emit(m, m->held_data + (size_t)(m->h_head % HELD_MAX) * m->mtu, h->len,
			 h->reorder, now) != 1)
			return false;
		m->h_head++;
	}
	if (m->ro_len && now - m->ro_since >= REORDER_MAX_NS &&
	    send1(m, m->ro_data, m->ro_len) == 1) {
		m->ro_len = 0;
		m->st.reordered++;
	}
	return true;
}

static int hold(struct impair *m, const uint8_t *d, uint32_t len, bool reorder, uint64_t due)
{
	struct held *h;

	if (m->h_tail - m->h_head >= HELD_MAX || len > m->mtu)
		return 0;
	h = &m->held[m->h_tail % HELD_MAX];
	memcpy(m->held_data + (size_t)(m->h_tail % HELD_MAX) * m->mtu, d, len);
	h->len = len;
	h->due = due;
	h->reorder = reorder;
	m->h_tail++;
	return 1;
}

static int imp_tx_burst(struct dnp_transport *t, const struct dnp_tx_frame *f, unsigned n)
{
	struct impair *m = to_imp(t);
	uint64_t now;
	unsigned i;

	if (!m->on && m->h_head == m->h_tail && !m->ro_len) {
		int r = m->iops->tx_burst(m->inner, f, n);

		if (m->cap && r > 0)
			dnp_pcap_tx(m->cap, m->dir, f, (unsigned)r);
		return r;
	}
	now = mono_ns();
	if (!flush_held(m, now))
		return 0;
	for (i = 0; i < n; i++) {
		const uint8_t *d = f[i].data;
		uint32_t len = f[i].len;
		int r;

		if (!m->on) {
			r = m->h_head == m->h_tail ? emit(m, d, len, false, now) :
						     hold(m, d, len, false, now);
			if (r != 1)
				break;
			continue;
		}
		if (m->fate < 0)
			draw_fate(m, len ? len : 1);
		if (m->fate & F_DROP) {
			m->st.frames++;
			m->st.dropped++;
			m->fate = -1;
			continue;
		}
		if ((m->fate & F_CORRUPT) && len && len <= m->mtu) {
			memcpy(m->scratch, d, len);
			m->scratch[m->flip_bit / 8u] ^= (uint8_t)(1u << (m->flip_bit % 8u));
			d = m->scratch;
		}
		if (m->c.delay_ns || m->h_head != m->h_tail) {
			uint64_t due = now + m->c.delay_ns;
			unsigned room = HELD_MAX - (m->h_tail - m->h_head);

			if (room < ((m->fate & F_DUP) ? 2u : 1u))
				break;
			(void)hold(m, d, len, (m->fate & F_REORDER) != 0, due);
			if (m->fate & F_DUP)
				(void)hold(m, d, len, false, due);
			if (m->c.delay_ns)
				m->st.delayed++;
		} else {
			r = emit(m, d, len, (m->fate & F_REORDER) != 0, now);
			if (r != 1)
				break;
			if ((m->fate & F_DUP) && send1(m, d, len) != 1)
				m->fate &= ~F_DUP; /* no room for the copy: not duplicated */
		}
		m->st.frames++;
		if (m->fate & F_CORRUPT)
			m->st.corrupted++;
		if (m->fate & F_DUP)
			m->st.duplicated++;
		m->fate = -1;
	}
	if (i == 0 && n > 0)
		return 0;
	return (int)i;
}

static int imp_rx_burst(struct dnp_transport *t, struct dnp_rx_frame *f, unsigned n)
{
	struct impair *m = to_imp(t);
	int r;

	if (m->h_head != m->h_tail || m->ro_len)
		(void)flush_held(m, mono_ns());
	r = m->iops->rx_burst(m->inner, f, n);
	if (m->cap && r > 0)
		dnp_pcap_rx(m->cap, m->dir, f, (unsigned)r);
	return r;
}

bool dnp_impair_flush(struct dnp_transport *t)
{
	struct impair *m = to_imp(t);

	if (m->h_head != m->h_tail || m->ro_len)
		(void)flush_held(m, mono_ns());
	return m->h_head != m->h_tail || m->ro_len;
}

static void imp_close(struct dnp_transport *t)
{
	struct impair *m = to_imp(t);

	if (!m)
		return;
	m->iops->close(m->inner);
	free(m->held_data);
	free(m->ro_data);
	free(m->scratch);
	free(m);
}

static uint32_t imp_mtu(const struct dnp_transport *t)
{
	const struct impair *m = to_imp_c(t);

	return m->iops->mtu(m->inner);
}

static int imp_wait_fd(const struct dnp_transport *t)
{
	const struct impair *m = to_imp_c(t);

	return m->iops->wait_fd(m->inner);
}

/* Held frames are flushed by rx_burst calls: no gate while there are any. */
static int imp_rx_gate_fd(const struct dnp_transport *t)
{
	const struct impair *m = to_imp_c(t);

	if (m->h_head != m->h_tail || m->ro_len || !m->iops->rx_gate_fd)
		return -1;
	return m->iops->rx_gate_fd(m->inner);
}

static bool imp_up(const struct dnp_transport *t)
{
	const struct impair *m = to_imp_c(t);

	return m->iops->up(m->inner);
}

static int imp_open(const struct dnp_transport_conf *c, struct dnp_transport **out)
{
	(void)c;
	(void)out;
	return -EINVAL; /* made by dnp_impair_wrap only */
}

/*
 * One pass (transport.h, tx_reserve): the inner link's places, while nothing
 * is impaired, held, or captured (the frames then go through imp_tx_burst:
 * -ENOTSUP tells the caller to copy this time).
 */
static int imp_tx_reserve(struct dnp_transport *t, uint8_t **bufs, uint32_t *cap, unsigned n)
{
	struct impair *m = to_imp(t);

	if (m->on || m->h_head != m->h_tail || m->ro_len || m->cap || !m->iops->tx_reserve ||
	    !m->iops->tx_commit)
		return -ENOTSUP;
	return m->iops->tx_reserve(m->inner, bufs, cap, n);
}

static int imp_tx_commit(struct dnp_transport *t, const uint32_t *lens, unsigned n)
{
	struct impair *m = to_imp(t);

	return m->iops->tx_commit ? m->iops->tx_commit(m->inner, lens, n) : -ENOTSUP;
}

const struct dnp_transport_ops dnp_transport_impair = {
	.name = "impair",
	.open = imp_open,
	.close = imp_close,
	.tx_burst = imp_tx_burst,
	.rx_burst = imp_rx_burst,
	.mtu = imp_mtu,
	.wait_fd = imp_wait_fd,
	.up = imp_up,
	.rx_gate_fd = imp_rx_gate_fd,
	.tx_reserve = imp_tx_reserve,
	.tx_commit = imp_tx_commit,
};

int dnp_impair_wrap(struct dnp_transport *inner, unsigned dir, const struct dnp_impair_conf *c,
		    struct dnp_transport **out)
{
	const struct dnp_transport_base *b = (const struct dnp_transport_base *)(const void *)inner;
	struct impair *m;

	if (!inner || !c || !out || dir >= 6)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->base.ops = &dnp_transport_impair;
	m->inner = inner;
	m->iops = b->ops;
	m->dir = dir;
	m->mtu = m->iops->mtu(inner);
	if (m->mtu == 0 || m->mtu > (1u << 20))
		goto err;
	m->held_data = malloc((size_t)HELD_MAX * m->mtu);
	m->ro_data = malloc(m->mtu);
	m->scratch = malloc(m->mtu);
	if (!m->held_data || !m->ro_data || !m->scratch)
		goto err;
	apply_conf(m, c);
	*out = (struct dnp_transport *)(void *)m;
	return 0;
err : {
	int rc = m->mtu == 0 || m->mtu > (1u << 20) ? -EINVAL : -ENOMEM;

	free(m->held_data);
	free(m->ro_data);
	free(m->scratch);
	free(m);
	return rc;
}
}

void dnp_impair_set(struct dnp_transport *t, const struct dnp_impair_conf *c)
{
	apply_conf(to_imp(t), c);
}

void dnp_impair_capture(struct dnp_transport *t, struct dnp_pcap *p)
{
	to_imp(t)->cap = p;
}

const struct dnp_impair_stats *dnp_impair_stats(const struct dnp_transport *t)
{
	return &to_imp_c(t)->st;
}
