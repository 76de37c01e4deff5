/* SPDX-License-Identifier: MIT */
/*
 * reqtab — the request table of Presto (presto.c) and of the libfabric
 * provider derived from it (fabric/dnp_fi_*.c): requests whose names leave the
 * process and come back, and the command cookie that carries those names to
 * the daemon and back.
 *
 * A request is entered with a generation of the caller's choice and is then
 * named by (index, generation): the id of an RTS that the peer's FIN echoes
 * (dnp_reqtab_id, 64 bits on the wire), or the two halves of a GET's cookie.
 * A name that comes back is untrusted. It is looked up in the table and never
 * dereferenced: an index out of range, a free entry, or a generation that
 * differs (the request completed and its entry was reused) gives NULL.
 *
 * Indices of removed entries are reused, the last removed first. The table
 * starts empty, takes DNP_REQTAB_INIT entries on the first add and doubles
 * when full, up to the limit given to dnp_reqtab_init; only an add to a full
 * table allocates, never a lookup or a removal. A caller whose index travels
 * in the 24 bits of a cookie passes DNP_REQTAB_MAX24.
 *
 * Memory. The struct lives inside its owner's (the caller allocates it and
 * calls dnp_reqtab_init); the table owns its two arrays and frees them in
 * dnp_reqtab_fini. The objects entered belong to the caller; fini hands
 * every one still entered to the caller's drop function.
 *
 * Threads: none of its own; one thread at a time per table (the owner's
 * lock or the owner's thread).
 *
 * Everything is static inline, with no .c: tests/test_presto.c and the fuzz
 * harnesses include presto.c or the provider's sources and link no library, so a reqtab.c
 * would have to be added to each of them.
 */
#ifndef DNP_REQTAB_H
#define DNP_REQTAB_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#define DNP_REQTAB_INIT 256u
/* Entries of a table whose index travels in 24 bits (indices 0 .. 0xfffffe). */
#define DNP_REQTAB_MAX24 0xffffffu

struct dnp_reqtab_ent {
	void *obj; /* NULL: free */
	uint32_t gen;
};

/* Fields are the module's; the struct is public only to be embedded. */
struct dnp_reqtab {
	struct dnp_reqtab_ent *ent; /* [cap]; [0, n) have been used */
	uint32_t *spare;            /* [cap]: nspare free indices, last removed on top */
	uint32_t n, cap, nspare;    /* indices used, allocated, free */
	uint32_t max;               /* entries at most */
};

/* An empty table of at most max entries (allocates nothing). Errors: -EINVAL (max 0). */
static inline int dnp_reqtab_init(struct dnp_reqtab *t, uint32_t max)
{
	*t = (struct dnp_reqtab){ .max = max };
	return max ? 0 : -EINVAL;
}

/*
 * Frees the arrays; drop (may be NULL) is called on every object still
 * entered. The table is empty afterwards (and may be initialised again).
 */
static inline void dnp_reqtab_fini(struct dnp_reqtab *t, void (*drop)(void *obj))
{
	uint32_t i;

	for (i = 0; drop && i < t->n; i++)
		if (t->ent[i].obj)
			drop(t->ent[i].obj);
	free(t->ent);
	free(t->spare);
	*t = (struct dnp_reqtab){ .max = t->max };
}

/* Room for one more index: doubles both arrays, up to t->max. 0, -ENOSPC, -ENOMEM. */
static inline int dnp_reqtab_grow(struct dnp_reqtab *t)
{
	uint32_t cap;
	struct dnp_reqtab_ent *e;
	uint32_t *s;

	if (t->n >= t->max)
		return -ENOSPC;
	if (t->n < t->cap)
		return 0;
	cap = !t->cap ? DNP_REQTAB_INIT : t->cap > t->max / 2 ? t->max : t->cap * 2;
	if (cap > t->max)
		cap = t->max;
	e = realloc(t->ent, (size_t)cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	t->ent = e;
	s = realloc(t->spare, (size_t)cap * sizeof(*s));
	if (!s)
		return -ENOMEM;
	t->spare = s;
	t->cap = cap;
	return 0;
}

/*
 * Enters obj (not NULL) with generation gen; *idx receives its index.
 * Errors: -EINVAL (obj NULL), -ENOSPC (t->max entries in use), -ENOMEM.
 */
static inline int dnp_reqtab_add(struct dnp_reqtab *t, void *obj, uint32_t gen, uint32_t *idx)
{
	uint32_t i;
	int r;

	if (!obj)
		return -EINVAL;
	if (t->nspare) {
		i = t->spare[--t->nspare];
	} else {
		r = dnp_reqtab_grow(t);
		if (r < 0)
			return r;
		i = t->n++;
	}
	t->ent[i].obj = obj;
	t->ent[i].gen = gen;
	*idx = i;
	return 0;
}

/* The object entered at idx with generation gen, or NULL (any untrusted name may be asked). */
static inline void *dnp_reqtab_find(const struct dnp_reqtab *t, uint32_t idx, uint32_t gen)
{
	if (idx >= t->n || !t->ent[idx].obj || t->ent[idx].gen != gen)
		return NULL;
	return t->ent[idx].obj;
}

/* Frees entry idx for reuse (the object is the caller's). Errors: -ENOENT (not in use). */
static inline int dnp_reqtab_remove(struct dnp_reqtab *t, uint32_t idx)
{
	if (idx >= t->n || !t->ent[idx].obj)
		return -ENOENT;
	t->ent[idx].obj = NULL;
	t->spare[t->nspare++] = idx;
	return 0;
}

/* The 64-bit id of an entry as it crosses the wire: index above, generation below. */
static inline uint64_t dnp_reqtab_id(uint32_t idx, uint32_t gen)
{
	return (uint64_t)idx << 32 | gen;
}

/* dnp_reqtab_find by an id from the wire. */
static inline void *dnp_reqtab_find_id(const struct dnp_reqtab *t, uint64_t id)
{
	return dnp_reqtab_find(t, (uint32_t)(id >> 32), (uint32_t)id);
}

/*
 * The cookie of a command, returned by the daemon in its completion: kind in
 * the top 8 bits, a in the next 24 (masked: a request's index, or a peer),
 * b in the low 32 (a generation, or a slot).
 */
static inline uint64_t dnp_reqtab_cookie(unsigned kind, uint32_t a, uint32_t b)
{
	return (uint64_t)kind << 56 | (uint64_t)(a & 0xffffffu) << 32 | b;
}

/* The three fields of a cookie from a completion. */
static inline void dnp_reqtab_cookie_split(uint64_t cookie, unsigned *kind, uint32_t *a,
					   uint32_t *b)
{
	*kind = (unsigned)(cookie >> 56);
	*a = (uint32_t)(cookie >> 32) & 0xffffffu;
	*b = (uint32_t)cookie;
}

#endif
