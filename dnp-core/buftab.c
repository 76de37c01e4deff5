/* SPDX-License-Identifier: MIT */
/*
 * buftab — the RDMA buffer table (buftab.h).
 *
 * The reference software DNP kept buffers in a doubly linked list allocated
 * on the heap, and profiling found ~35% of the cycles in that allocation and
 * the list walk with its 64-bit range checks (EURETILE report, buffer search
 * benchmark).
 * Here the table is one array allocated at create time and kept sorted by
 * (port, va): lookup is a binary search and nothing is allocated afterwards.
 * Since buffers of a port never overlap, the only candidate holding va is the
 * last entry of the port starting at or before va.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buftab.h"

struct dnp_buftab {
	uint32_t cap;
	uint32_t n;
	/*
	 * The entries of the last two lookups that found one, looked at
	 * before the search: a stream of packets (or a PUT from one buffer
	 * into another) hits them. Only ever a hint: buffers of a port do not
	 * overlap, so an entry of the port that holds va is the answer, and a
	 * hint that inserts and removes have shifted simply misses.
	 */
	uint32_t hint[2];
	uint32_t hint_next;
	uint32_t gen; /* dnp_buftab_gen: bumped by every insert and remove */
	struct dnp_buf e[];
};

int dnp_buftab_create(uint32_t max_buffers, struct dnp_buftab **out)
{
	struct dnp_buftab *bt;

	if (max_buffers == 0)
		return -EINVAL;
	bt = calloc(1, sizeof(*bt) + (size_t)max_buffers * sizeof(bt->e[0]));
	if (!bt)
		return -ENOMEM;
	bt->cap = max_buffers;
	*out = bt;
	return 0;
}

void dnp_buftab_destroy(struct dnp_buftab *bt)
{
	free(bt);
}

uint32_t dnp_buftab_count(const struct dnp_buftab *bt)
{
	return bt->n;
}

uint32_t dnp_buftab_gen(const struct dnp_buftab *bt)
{
	return bt->gen;
}

/* Strict order on (port, va). */
static bool key_less(uint8_t pa, uint64_t va, uint8_t pb, uint64_t vb)
{
	return pa < pb || (pa == pb && va < vb);
}

/* Index of the first entry whose (port, va) is greater than the key. */
static uint32_t upper_bound(const struct dnp_buftab *bt, uint8_t port, uint64_t va)
{
	uint32_t lo = 0, hi = bt->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (key_less(port, va, bt->e[mid].port, bt->e[mid].va))
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Index of the first entry whose (port, va) is not less than the key. */
static uint32_t lower_bound(const struct dnp_buftab *bt, uint8_t port, uint64_t va)
{
	uint32_t lo = 0, hi = bt->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (key_less(bt->e[mid].port, bt->e[mid].va, port, va))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool holds(const struct dnp_buf *e, uint8_t port, uint64_t va)
{
	return e->port == port && va >= e->va && va - e->va < e->len;
}

/*
 * The entry of port containing va, or NULL. The table's hints are the only
 * thing a lookup writes (the table has one owner thread, buftab.h).
 */
static const struct dnp_buf *find_containing(const struct dnp_buftab *cbt, uint8_t port,
					     uint64_t va)
{
	struct dnp_buftab *bt = (struct dnp_buftab *)cbt; /* allocated writable: the hints */
	const struct dnp_buf *e;
	uint32_t i;

	for (unsigned k = 0; k < 2; k++)
		if (bt->hint[k] < bt->n && holds(&bt->e[bt->hint[k]], port, va))
			return &bt->e[bt->hint[k]];
	i = upper_bound(bt, port, va);
	if (i == 0)
		return NULL;
	e = &bt->e[i - 1];
	/* e->va <= va here; va - e->va cannot wrap. */
	if (e->port != port || va - e->va >= e->len)
		return NULL;
	bt->hint[bt->hint_next] = i - 1;
	bt->hint_next ^= 1u;
	return e;
}

int dnp_buftab_insert(struct dnp_buftab *bt, const struct dnp_buf *b)
{
	uint32_t i;

	/* len - 1 <= UINT64_MAX - va would allow the end to be 2^64; the header forbids it. */
	if (b->len == 0 || b->len > UINT64_MAX - b->va || (b->flags & ~DNP_BUF_ALL))
		return -EINVAL;
	i = upper_bound(bt, b->port, b->va);
	/* The predecessor of the same port must end at or before b->va... */
	if (i > 0 && bt->e[i - 1].port == b->port && b->va - bt->e[i - 1].va < bt->e[i - 1].len)
		return -EEXIST;
	/* ...and the successor of the same port must start at or after b's end. */
	if (i < bt->n && bt->e[i].port == b->port && bt->e[i].va - b->va < b->len)
		return -EEXIST;
	if (bt->n >= bt->cap)
		return -ENOSPC;
	memmove(&bt->e[i + 1], &bt->e[i], (size_t)(bt->n - i) * sizeof(bt->e[0]));
	bt->e[i] = *b;
	bt->n++;
	bt->gen++;
	return 0;
}

int dnp_buftab_remove(struct dnp_buftab *bt, uint8_t port, uint64_t va, struct dnp_buf *out)
{
	uint32_t i = lower_bound(bt, port, va);

	if (i >= bt->n || bt->e[i].port != port || bt->e[i].va != va)
		return -ENOENT;
	if (out)
		*out = bt->e[i];
	memmove(&bt->e[i], &bt->e[i + 1], (size_t)(bt->n - i - 1) * sizeof(bt->e[0]));
	bt->n--;
	bt->gen++;
	return 0;
}

unsigned dnp_buftab_remove_port(struct dnp_buftab *bt, uint8_t port)
{
	uint32_t lo = lower_bound(bt, port, 0);
	uint32_t hi = lo;

	while (hi < bt->n && bt->e[hi].port == port)
		hi++;
	memmove(&bt->e[lo], &bt->e[hi], (size_t)(bt->n - hi) * sizeof(bt->e[0]));
	bt->n -= hi - lo;
	bt->gen++;
	return hi - lo;
}

int dnp_buftab_lookup(const struct dnp_buftab *bt, uint8_t port, uint64_t va, uint64_t len,
		      uint32_t key, unsigned need_flags, const struct dnp_buf **out)
{
	const struct dnp_buf *e = find_containing(bt, port, va);

	/*
	 * The key first: without it nothing else is told, neither whether a
	 * buffer holds va nor where it ends.
	 */
	if (!e || key != e->key)
		return -EACCES;
	if (len == 0)
		len = 1;
	/*
	 * Bytes left in the buffer from va; comparing len against them covers
	 * both running past the end and va + len overflowing.
	 */
	if (len > e->len - (va - e->va))
		return -ERANGE;
	if ((e->flags & need_flags) != need_flags)
		return -EPERM;
	*out = e;
	return 0;
}

const struct dnp_buf *dnp_buftab_find(const struct dnp_buftab *bt, uint8_t port, uint64_t va,
				      uint64_t len)
{
	const struct dnp_buf *e = find_containing(bt, port, va);

	if (len == 0)
		len = 1;
	/* Same end check as lookup: no overflow of va + len. */
	if (!e || len > e->len - (va - e->va))
		return NULL;
	return e;
}

const struct dnp_buf *dnp_buftab_at(const struct dnp_buftab *bt, uint32_t i)
{
	if (i >= bt->n)
		return NULL;
	return &bt->e[i];
}
