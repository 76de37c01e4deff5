/* SPDX-License-Identifier: MIT */
/*
 * The libdnp stand-in of the harnesses that include a library built on
 * libdnp (fuzz_presto.c: presto.c; fuzz_fi.c: the fabric/dnp_fi_ sources). A harness
 * includes the .c under test, then this header, once.
 *
 * The world is a 2x2x1 torus seen from node 0,0,0, port 0. Every command
 * completes at once: its completion event (TX_DONE, or GET_DONE for a GET)
 * goes into a queue of FZ_Q events that dnp_poll_events hands out in order
 * (events beyond FZ_Q are dropped); dnp_event_sleep returns at once.
 * Registration always succeeds with key
 * 0x1234, and the first 1024 SEND targets registered are kept in fz_slots
 * (where a harness's peer SENDs to); unregistration and dnp_free do nothing.
 *
 * Left to the harness, which defines them itself: dnp_alloc and dnp_send
 * (where the two differ: whether there is a shared heap, whether a peer
 * answers). fz_push queues an event of its own; fz_qn = 0 empties the queue,
 * fz_nslots = 0 forgets the SEND targets; fz_land writes input bytes into
 * the memory under test as a peer's PUT or SEND would.
 */
#ifndef FUZZ_LIBDNP_H
#define FUZZ_LIBDNP_H

#include <stdint.h>
#include <string.h>

#include "dnp.h"

#define FZ_Q 256
static struct dnp_event fz_q[FZ_Q];
static unsigned fz_qn;
static void *fz_slots[1024];
static unsigned fz_nslots;
static int fz_dummy;

static void fz_push(const struct dnp_event *ev)
{
	if (fz_qn < FZ_Q)
		fz_q[fz_qn++] = *ev;
}

/* The completion of a command: an event of type with the command's cookie. */
static void fz_done(uint8_t type, uint64_t cookie)
{
	struct dnp_event ev = { .type = type, .cookie = cookie };

	fz_push(&ev);
}

/*
 * What the daemon does before it reports a peer's PUT or SEND: up to n bytes
 * of the input (fewer where the input or [base, base + span) ends) written at
 * base + off, off < span; the input advances past them. Returns the address
 * for the event's va.
 */
static uint64_t fz_land(uint8_t *base, size_t span, size_t off, size_t n, const uint8_t **data,
			size_t *size)
{
	if (n > *size)
		n = *size;
	if (n > span - off)
		n = span - off;
	memcpy(base + off, *data, n);
	*data += n, *size -= n;
	return (uintptr_t)(base + off);
}

int dnp_open(const char *path, struct dnp **out)
{
	*out = (struct dnp *)&fz_dummy;
	return 0;
}

void dnp_close(struct dnp *d)
{
}

int dnp_self(const struct dnp *d, struct dnp_coords *self, struct dnp_coords *dims)
{
	self->x = self->y = self->z = 0;
	dims->x = 2, dims->y = 2, dims->z = 1;
	return 0;
}

unsigned dnp_port(const struct dnp *d)
{
	return 0;
}

void dnp_free(struct dnp *d, void *p)
{
}

int dnp_register(struct dnp *d, void *addr, size_t len, unsigned flags, uint32_t *key)
{
	if ((flags & DNP_BUF_SEND_TARGET) && fz_nslots < 1024)
		fz_slots[fz_nslots++] = addr;
	*key = 0x1234;
	return 0;
}

int dnp_unregister(struct dnp *d, void *addr)
{
	return 0;
}

int dnp_put(struct dnp *d, const void *src, size_t len, struct dnp_coords dst, unsigned port,
	    uint64_t remote_va, uint32_t remote_key, uint64_t cookie, unsigned flags)
{
	fz_done(DNP_EV_TX_DONE, cookie);
	return 0;
}

int dnp_get(struct dnp *d, void *dst, size_t len, uint32_t local_key, struct dnp_coords src,
	    unsigned port, uint64_t remote_va, uint32_t remote_key, uint64_t cookie, unsigned flags)
{
	fz_done(DNP_EV_GET_DONE, cookie);
	return 0;
}

int dnp_poll_events(struct dnp *d, struct dnp_event *ev, unsigned max)
{
	unsigned n = fz_qn < max ? fz_qn : max;

	memcpy(ev, fz_q, n * sizeof(*ev));
	memmove(fz_q, fz_q + n, (fz_qn - n) * sizeof(*ev));
	fz_qn -= n;
	return (int)n;
}

int dnp_wait_event(struct dnp *d, struct dnp_event *ev, int timeout_ms)
{
	return dnp_poll_events(d, ev, 1);
}

/* No placement: the provider's idle step polls as it does when libdnp says nothing. */
int dnp_wait_placement(struct dnp *d, unsigned *how)
{
	*how = 0;
	return 0;
}

/* The event count is the queue's length; a sleep never sleeps (it says whether events wait). */
int dnp_event_seq(struct dnp *d, uint32_t *seq)
{
	*seq = fz_qn;
	return 0;
}

int dnp_event_sleep(struct dnp *d, uint32_t seq, unsigned timeout_us)
{
	return fz_qn != 0;
}

const char *dnp_strerror(int err)
{
	return "error";
}

/* The stand-in's counters never count: the provider adds its own counts to these. */
int dnp_cntr_read(struct dnp *d, unsigned n, uint64_t *ok, uint64_t *err)
{
	if (n >= 64)
		return -EINVAL;
	if (ok)
		*ok = 0;
	if (err)
		*err = 0;
	return 0;
}

/* No collectives in this stand-in (Presto keeps to its host-based ones). */
#include "../libdnp_nocoll.h"

#endif
