/* SPDX-License-Identifier: MIT */
/*
 * arb.h — the traffic-class arbiter of a router (docs/routing.md, "Traffic
 * classes and virtual channels"): which class goes next, among the classes
 * that have a packet allowed to go now. Pure state, no I/O, header only; the
 * engine (engine_route.c) asks it before every grant at injection and at the
 * router outputs when arbitration is on, and tells it each grant.
 *
 * Policies (enum dnp_arbitration):
 *   off     no class order (the engine keeps its round-robin switch and FIFO
 *           injection queues; this module is not asked).
 *   strict  the highest class that can go, with an anti-starvation bound: a
 *           class that can go is passed over by at most starve_max
 *           consecutive grants to higher classes. Each class counts the
 *           grants to higher classes made while it could go (reset by its
 *           own grant); the lowest class whose count reached starve_max goes
 *           first. Grants to a lower class never count against a higher one,
 *           so no class's count passes starve_max while it can go.
 *           The price: each waiting lower class takes at least one grant
 *           in starve_max + 1, so with many classes waiting at once the top
 *           class's share falls (all 8 waiting, bound 16: about 10/17).
 *   wrr     weighted round robin: class c receives weight 2^c grants per
 *           round among the classes that can go (class 7: 128, class 0: 1);
 *           the highest class with credit left goes first; a round ends
 *           (credits refilled) when no class that can go has credit left.
 *
 * The idea follows the RDMA QoS engine thesis (ExaNeSt/RED-SEA), Abstract:
 * transfers are scheduled block by block by a user-defined priority, from
 * several scheduling queues (32 there; here one per class and input). Here a
 * block is a packet; the starvation bound and the weights are ours.
 *
 * Contract: 'avail' has bit c set when class c (0..7) has a packet that may
 * go now; dnp_arb_pick returns the class to serve (one of avail's bits), or
 * -1 when avail is 0; dnp_arb_grant is called after that class sent a
 * packet, with the same avail.
 */
#ifndef DNP_ARB_H
#define DNP_ARB_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define DNP_ARB_CLASSES 8u
#define DNP_ARB_STARVE_DEFAULT 16u /* strict: grants to higher classes a waiting class allows */

enum dnp_arbitration {
	DNP_ARB_OFF = 0, /* today's round-robin switch, FIFO injection (the default) */
	DNP_ARB_STRICT,  /* strict priority with the anti-starvation bound */
	DNP_ARB_WRR,     /* weighted round robin, weight 2^class */
};

struct dnp_arb {
	uint8_t policy;      /* enum dnp_arbitration */
	uint16_t starve_max; /* strict: >= 1 */
	uint16_t starve[DNP_ARB_CLASSES];
	uint16_t credit[DNP_ARB_CLASSES]; /* wrr: grants left in this round */
};

/* Sets up a for policy; starve_max 0 takes DNP_ARB_STARVE_DEFAULT. */
static inline void dnp_arb_init(struct dnp_arb *a, unsigned policy, unsigned starve_max)
{
	memset(a, 0, sizeof(*a));
	a->policy = (uint8_t)policy;
	a->starve_max = (uint16_t)(starve_max ? starve_max : DNP_ARB_STARVE_DEFAULT);
}

static inline unsigned dnp_arb_weight(unsigned c)
{
	return 1u << c;
}

/* The highest class in mask (mask != 0). */
static inline unsigned dnp_arb_top(unsigned mask)
{
	return 31u - (unsigned)__builtin_clz(mask);
}

static inline int dnp_arb_pick(const struct dnp_arb *a, unsigned avail)
{
	avail &= (1u << DNP_ARB_CLASSES) - 1u;
	if (!avail)
		return -1;
	if (a->policy == DNP_ARB_WRR) {
		unsigned with = 0;

		for (unsigned c = 0; c < DNP_ARB_CLASSES; c++)
			if ((avail >> c & 1u) && a->credit[c])
				with |= 1u << c;
		/* no credit left among those that can go: a new round starts */
		return (int)dnp_arb_top(with ? with : avail);
	}
	for (unsigned c = 0; c < DNP_ARB_CLASSES; c++)
		if ((avail >> c & 1u) && a->starve[c] >= a->starve_max)
			return (int)c; /* the lowest starved class first */
	return (int)dnp_arb_top(avail);
}

static inline void dnp_arb_grant(struct dnp_arb *a, unsigned c, unsigned avail)
{
	if (c >= DNP_ARB_CLASSES)
		return;
	if (a->policy == DNP_ARB_WRR) {
		bool any = false;

		for (unsigned k = 0; k < DNP_ARB_CLASSES; k++)
			any |= (avail >> k & 1u) && a->credit[k];
		if (!any) /* the round that dnp_arb_pick started */
			for (unsigned k = 0; k < DNP_ARB_CLASSES; k++)
				a->credit[k] = (uint16_t)dnp_arb_weight(k);
		if (a->credit[c])
			a->credit[c]--;
		return;
	}
	a->starve[c] = 0;
	for (unsigned k = 0; k < c; k++)
		if ((avail >> k & 1u) && a->starve[k] < UINT16_MAX)
			a->starve[k]++;
}

/* "off", "strict", "wrr" to enum dnp_arbitration: 0 or -EINVAL. */
static inline int dnp_arb_parse(const char *s, uint8_t *policy)
{
	static const char *const names[] = { "off", "strict", "wrr" };

	for (unsigned i = 0; s && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*policy = (uint8_t)i;
			return 0;
		}
	return -EINVAL;
}

static inline const char *dnp_arb_name(unsigned policy)
{
	return policy == DNP_ARB_STRICT ? "strict" : policy == DNP_ARB_WRR ? "wrr" : "off";
}

#endif /* DNP_ARB_H */
