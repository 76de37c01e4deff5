/* SPDX-License-Identifier: MIT */
/*
 * regcache — the registration cache of Presto (presto.c) and of the
 * libfabric provider derived from it (fabric/dnp_fi_*.c): the user ranges a
 * rendez-vous exposes to its peer (PUT target and GET source with libdnp).
 *
 * An exact range (same address, same length) is registered once and shared:
 * dnp_regcache_get counts a reference, dnp_regcache_put gives it back. A
 * range nobody uses stays registered (a request to the daemon costs tens of
 * microseconds), up to DNP_REGCACHE_KEEP unused ranges; one more and the
 * least recently used is unregistered. A cached range only lets our own
 * rendez-vous protocol reach that memory. An unused range that overlaps a
 * new one (libdnp refuses overlaps with -EEXIST) is unregistered to make
 * room; a range in use is never touched.
 *
 * A user range that overlaps a range in use (e.g. two sends from overlapping
 * parts of one buffer) goes through a private copy (dnp_regcache_get_user):
 * a buffer of its own, registered for the one request, never cached, and
 * unregistered and freed by dnp_regcache_put_user.
 *
 * Memory. The struct lives inside its owner's (the caller allocates it and
 * calls dnp_regcache_init); the cache owns its entries (one allocation per
 * range newly registered, none on a hit) and the private copies. The user
 * ranges are the caller's and must stay mapped while registered.
 * dnp_regcache_fini frees the entries without unregistering them: the
 * caller closes the session next, and the daemon drops its buffers then.
 *
 * Threads: none of its own; one thread at a time per cache (the owner's
 * lock or the owner's thread).
 *
 * Everything is static inline, with no .c, for the reason given in
 * reqtab.h: tests/test_presto.c and the fuzz harnesses include presto.c or
 * fabric/dnp_fi_*.c and link no library. The cache calls dnp_register and
 * dnp_unregister, which those programs provide in place of libdnp.
 */
#ifndef DNP_REGCACHE_H
#define DNP_REGCACHE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dnp.h"

/* Unused ranges kept registered at most. */
#define DNP_REGCACHE_KEEP 16u
#define DNP_REGCACHE_FLAGS (DNP_BUF_PUT_TARGET | DNP_BUF_GET_SOURCE)

/* A registered range. The caller reads key (what a peer presents); the rest is the cache's. */
struct dnp_regcache_ent {
	void *addr;
	size_t len;
	uint32_t key;
	unsigned refs;  /* 0: unused, counted in ncached */
	uint64_t stamp; /* last get (least recently used goes first) */
	struct dnp_regcache_ent *next;
};

/* Fields are the module's; the struct is public only to be embedded. */
struct dnp_regcache {
	struct dnp *d;
	struct dnp_regcache_ent *regs; /* every registered range, newest first */
	unsigned ncached;              /* of them, unused */
	uint64_t clock;
};

/* An empty cache registering with session d (allocates nothing). */
static inline void dnp_regcache_init(struct dnp_regcache *c, struct dnp *d)
{
	*c = (struct dnp_regcache){ .d = d };
}

/*
 * Frees every entry without unregistering it (the caller closes the session
 * next). Entries still in use are freed too: the caller's pointers to them
 * die here. The cache is empty afterwards.
 */
static inline void dnp_regcache_fini(struct dnp_regcache *c)
{
	while (c->regs) {
		struct dnp_regcache_ent *g = c->regs;

		c->regs = g->next;
		free(g);
	}
	c->ncached = 0;
}

/* Unlinks, unregisters and frees g; ncached is the caller's to adjust. */
static inline void dnp_regcache_release(struct dnp_regcache *c, struct dnp_regcache_ent *g)
{
	struct dnp_regcache_ent **pp;

	for (pp = &c->regs; *pp; pp = &(*pp)->next)
		if (*pp == g) {
			*pp = g->next;
			break;
		}
	dnp_unregister(c->d, g->addr);
	free(g);
}

/* Unregisters and frees the unused range g. */
static inline void dnp_regcache_drop(struct dnp_regcache *c, struct dnp_regcache_ent *g)
{
	c->ncached--;
	dnp_regcache_release(c, g);
}

/* Unregisters the unused ranges overlapping [addr, +len); returns how many. */
static inline unsigned dnp_regcache_evict(struct dnp_regcache *c, const void *addr, size_t len)
{
	const uint8_t *a = addr;
	struct dnp_regcache_ent *g, *nx;
	unsigned n = 0;

	for (g = c->regs; g; g = nx) {
		nx = g->next;
		if (!g->refs && (const uint8_t *)g->addr < a + len &&
		    a < (const uint8_t *)g->addr + g->len) {
			dnp_regcache_drop(c, g);
			n++;
		}
	}
	return n;
}

/*
 * A reference to the registration of exactly [addr, +len): the cached one,
 * or a new one (after unregistering unused ranges in its way). *out is set
 * on success only. Errors: -ENOMEM, and those of dnp_register, notably
 * -EEXIST (overlaps a range in use or a buffer registered outside the cache).
 */
static inline int dnp_regcache_get(struct dnp_regcache *c, void *addr, size_t len,
				   struct dnp_regcache_ent **out)
{
	struct dnp_regcache_ent *g;
	uint32_t key;
	int r;

	for (g = c->regs; g; g = g->next)
		if (g->addr == addr && g->len == len) {
			if (!g->refs++)
				c->ncached--;
			g->stamp = ++c->clock;
			*out = g;
			return 0;
		}
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	r = dnp_register(c->d, addr, len, DNP_REGCACHE_FLAGS, &key);
	if (r == -EEXIST && dnp_regcache_evict(c, addr, len))
		r = dnp_register(c->d, addr, len, DNP_REGCACHE_FLAGS, &key);
	if (r < 0) {
		free(g);
		return r;
	}
	g->addr = addr;
	g->len = len;
	g->key = key;
	g->refs = 1;
	g->stamp = ++c->clock;
	g->next = c->regs;
	c->regs = g;
	*out = g;
	return 0;
}

/*
 * Gives back a reference (g may be NULL). The last one makes the range
 * unused; past DNP_REGCACHE_KEEP unused ranges the least recently used is
 * unregistered, possibly g itself: g may be freed on return.
 */
static inline void dnp_regcache_put(struct dnp_regcache *c, struct dnp_regcache_ent *g)
{
	struct dnp_regcache_ent *old, *x;

	if (!g || --g->refs)
		return;
	c->ncached++;
	while (c->ncached > DNP_REGCACHE_KEEP) {
		for (old = NULL, x = c->regs; x; x = x->next)
			if (!x->refs && (!old || x->stamp < old->stamp))
				old = x;
		dnp_regcache_drop(c, old);
	}
}

/*
 * Registers [buf, +len) for one request, or, when it overlaps a range in use
 * (-EEXIST), a private copy of it: *copy receives a buffer of len bytes
 * (filled from buf if copy_in) that stands for buf in the transfer, NULL
 * when buf itself is registered. *reg and *copy are set on success only.
 * Give both back with dnp_regcache_put_user.
 * Errors: those of dnp_regcache_get (-EEXIST only for the copy), -ENOMEM.
 */
static inline int dnp_regcache_get_user(struct dnp_regcache *c, void *buf, size_t len, bool copy_in,
					struct dnp_regcache_ent **reg, void **copy)
{
	void *b;
	int r = dnp_regcache_get(c, buf, len, reg);

	if (r != -EEXIST) {
		if (r == 0)
			*copy = NULL;
		return r;
	}
	b = malloc(len);
	if (!b)
		return -ENOMEM;
	if (copy_in)
		memcpy(b, buf, len);
	r = dnp_regcache_get(c, b, len, reg);
	if (r < 0) {
		free(b);
		return r;
	}
	*copy = b;
	return 0;
}

/*
 * Gives back what dnp_regcache_get_user returned and clears *reg and *copy
 * (both may be NULL: nothing to give back). A private copy is not cached:
 * its range is unregistered at once, without counting as an unused range,
 * so it neither trims a cached range nor is trimmed, then the copy is freed.
 */
static inline void dnp_regcache_put_user(struct dnp_regcache *c, struct dnp_regcache_ent **reg,
					 void **copy)
{
	struct dnp_regcache_ent *g = *reg;

	if (g && *copy) {
		if (!--g->refs)
			dnp_regcache_release(c, g);
	} else {
		dnp_regcache_put(c, g);
	}
	*reg = NULL;
	free(*copy);
	*copy = NULL;
}

#endif
