/* SPDX-License-Identifier: MIT */
/*
 * transport — how dnpd moves DNP frames over one virtual link (one torus
 * direction). Each backend is a const struct dnp_transport_ops; dnpd picks one
 * by name at start-up (dnp_transport_find). A link is opened once and then
 * driven from the daemon's single polling thread: tx_burst/rx_burst never
 * block and make no system call per frame where a batch will do.
 *
 * Backends: "shm" (same host, SPSC rings in shared memory), "udp" (kernel UDP,
 * io_uring via liburing when available, plain non-blocking sockets
 * otherwise), later "dpdk" and "verbs".
 *
 * Addresses are strings whose meaning is the backend's:
 *   shm: a path of a file in /dev/shm (or any tmpfs) naming the link; both
 *        ends open the same path, the lower node id (side 0) creates it.
 *   udp: "host:port" for local and remote.
 */
#ifndef DNP_TRANSPORT_H
#define DNP_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dnp_transport_conf {
	const char *local;  /* backend address of this end */
	const char *remote; /* backend address of the peer */
	unsigned side;      /* 0 or 1: which end of the link this is (shm ring roles) */
	uint32_t frame_max; /* largest frame to carry (DNP_MAX_FRAME) */
	uint32_t depth;     /* frames buffered per direction (power of two) */
	const char *options;/* backend-specific "k=v,k=v" (may be NULL) */
};

/* One received frame: data valid until the next rx_burst on the same link. */
struct dnp_rx_frame {
	const uint8_t *data;
	uint32_t len;
};

struct dnp_tx_frame {
	const uint8_t *data;
	uint32_t len;
};

struct dnp_transport; /* a backend's link; starts with struct dnp_transport_base */

struct dnp_transport_ops {
	const char *name;
	/* Errors: -EINVAL, -ENOMEM, -errno of the system call that failed. */
	int (*open)(const struct dnp_transport_conf *c, struct dnp_transport **out);
	void (*close)(struct dnp_transport *t);
	/* Copies out up to n frames; returns how many were taken (0 when full), or -errno. */
	int (*tx_burst)(struct dnp_transport *t, const struct dnp_tx_frame *f, unsigned n);
	/* Returns up to n received frames, or -errno. */
	int (*rx_burst)(struct dnp_transport *t, struct dnp_rx_frame *f, unsigned n);
	/* Largest frame this link carries in one piece. */
	uint32_t (*mtu)(const struct dnp_transport *t);
	/* A file descriptor that becomes readable when frames arrive, or -1 (then poll). */
	int (*wait_fd)(const struct dnp_transport *t);
	/* False once the backend knows the peer or the carrier is gone. */
	bool (*up)(const struct dnp_transport *t);
};

extern const struct dnp_transport_ops dnp_transport_shm;
extern const struct dnp_transport_ops dnp_transport_udp;

/* Backend by name ("shm", "udp", ...) or NULL if not built in. */
const struct dnp_transport_ops *dnp_transport_find(const char *name);

#endif
