/* SPDX-License-Identifier: MIT */
/*
 * verbs_setup — open-time parts of the verbs link (verbs_priv.h): device,
 * port and GID selection, and the UDP handshake socket with its messages.
 * Nothing here runs per frame; the handshake socket is read at most every
 * DNP_VERBS_CHECK_NS once the link is connected.
 */
#include "transport_priv.h"
#include "verbs_priv.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t dnp_verbs_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The GID a RoCE v2 port gives the local address (IPv4-mapped or IPv6). */
static int vs_local_gid(const char *local, union ibv_gid *gid)
{
	struct addrinfo *ai;
	int r = dnp_transport_resolve(local, &ai);

	if (r)
		return r;
	memset(gid, 0, sizeof(*gid));
	if (ai->ai_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)ai->ai_addr;

		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &s->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *s = (const void *)ai->ai_addr;

		memcpy(gid->raw, &s->sin6_addr, 16);
	}
	freeaddrinfo(ai);
	return 0;
}

/*
 * Looks for want in the GID table of (ctx, port); RoCE v2 entries first.
 * Returns the index or -ENXIO.
 */
static int vs_find_gid(struct ibv_context *ctx, uint8_t port, const union ibv_gid *want)
{
	struct ibv_gid_entry *e;
	ssize_t n;
	int best = -ENXIO;

	e = calloc(1024, sizeof(*e));
	if (!e)
		return -ENOMEM;
	n = ibv_query_gid_table(ctx, e, 1024, 0);
	for (ssize_t i = 0; i < n; i++) {
		if (e[i].port_num != port || memcmp(&e[i].gid, want, sizeof(*want)) != 0)
			continue;
		if (e[i].gid_type == IBV_GID_TYPE_ROCE_V2) {
			best = (int)e[i].gid_index;
			break;
		}
		if (best < 0)
			best = (int)e[i].gid_index;
	}
	free(e);
	return best;
}

/* Port attributes into v; -ENXIO when the port is missing or not active. */
static int vs_port(struct dnp_verbs *v, const char *dev)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(v->ctx, v->port, &pa)) {
		fprintf(stderr, "verbs: %s has no port %u\n", dev, v->port);
		return -ENXIO;
	}
	if (pa.state != IBV_PORT_ACTIVE) {
		fprintf(stderr, "verbs: %s port %u is not active (state %d)\n", dev, v->port,
			pa.state);
		return -ENXIO;
	}
	v->port_mtu = (uint8_t)pa.active_mtu;
	v->lid = pa.lid;
	v->roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	return 0;
}

/* Opens device i of list; on success v->ctx is set and the port checked. */
static int vs_open_dev(struct dnp_verbs *v, struct ibv_device *d)
{
	v->ctx = ibv_open_device(d);
	if (!v->ctx) {
		int e = errno ? errno : ENODEV;

		fprintf(stderr, "verbs: cannot open %s: %s\n", ibv_get_device_name(d), strerror(e));
		return -e;
	}
	return 0;
}

/* Device named dev, or the one whose port holds the GID of local. */
static int vs_select(struct dnp_verbs *v, struct ibv_device **list, int n, const char *dev,
		     const union ibv_gid *want, int gid_opt)
{
	int r;

	for (int i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);

		if (dev[0] && strcmp(dev, name) != 0)
			continue;
		r = vs_open_dev(v, list[i]);
		if (r)
			return r;
		r = vs_port(v, name);
		if (r == 0 && gid_opt >= 0) {
			v->gid_index = gid_opt;
		} else if (r == 0) {
			v->gid_index = vs_find_gid(v->ctx, v->port, want);
			r = v->gid_index < 0 ? v->gid_index : 0;
			if (r == -ENXIO && dev[0])
				fprintf(stderr,
					"verbs: %s port %u has no GID for the link's local "
					"address; give a GID index (gid=N, dnpd --gid-index)\n",
					name, v->port);
		}
		if (r == 0 || dev[0])
			return r;
		ibv_close_device(v->ctx);
		v->ctx = NULL;
	}
	if (dev[0]) {
		fprintf(stderr, "verbs: no RDMA device named %s\n", dev);
		return -ENODEV;
	}
	fprintf(stderr,
		"verbs: no RDMA device has an active port %u with a GID for the link's "
		"local address; name one (dev=NAME, dnpd --verbs-dev)\n",
		v->port);
	return -ENODEV;
}

int dnp_verbs_pick_device(struct dnp_verbs *v, const char *options, const char *local)
{
	char dev[64] = "", gidbuf[16];
	struct ibv_device **list;
	union ibv_gid want;
	uint32_t port;
	int n = 0, r, gid_opt = -1;

	if (dnp_transport_opt_u32(options, "port", 1, 255, &port) || port == 0)
		return -EINVAL;
	v->port = (uint8_t)port;
	dnp_transport_opt(options, "dev", dev, sizeof(dev));
	if (dnp_transport_opt(options, "gid", gidbuf, sizeof(gidbuf))) {
		uint32_t g;

		if (dnp_transport_opt_u32(options, "gid", 0, 1023, &g))
			return -EINVAL;
		gid_opt = (int)g;
	}
	r = vs_local_gid(local, &want);
	if (r)
		return r;
	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		fprintf(stderr, "verbs: no RDMA device on this host (%s)\n",
			list ? "none listed" : strerror(errno));
		if (list)
			ibv_free_device_list(list);
		return -ENODEV;
	}
	r = vs_select(v, list, n, dev, &want, gid_opt);
	ibv_free_device_list(list);
	if (r)
		return r;
	{
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(v->ctx, v->port, (uint32_t)v->gid_index, &e, 0)) {
			fprintf(stderr, "verbs: GID index %d of port %u is empty or unreadable\n",
				v->gid_index, v->port);
			return -ENXIO;
		}
		v->gid = e.gid;
		v->ifindex = (int)e.ndev_ifindex;
	}
	if (v->roce && !memcmp(&v->gid, &(union ibv_gid){ 0 }, sizeof(v->gid))) {
		fprintf(stderr, "verbs: GID index %d of port %u is empty\n", v->gid_index, v->port);
		return -ENXIO;
	}
	return 0;
}

/*
 * The handshake takes the RDMA port's own network device when allowed
 * (CAP_NET_RAW): then it breaks when that wire breaks, and never goes
 * through another interface (or loopback, between addresses of one host).
 */
static void hs_setup(int fd, void *ctx)
{
	const struct dnp_verbs *v = ctx;

	if (v->ifindex > 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_BINDTOIFINDEX, &v->ifindex, sizeof(v->ifindex));
}

int dnp_verbs_hs_socket(struct dnp_verbs *v, const char *local, const char *remote)
{
	int fd = dnp_transport_dgram(local, remote, hs_setup, v);

	if (fd < 0) {
		fprintf(stderr, "verbs: handshake socket %s -> %s: %s\n", local, remote,
			strerror(-fd));
		return fd;
	}
	v->hfd = fd;
	return 0;
}

void dnp_verbs_hs_send(struct dnp_verbs *v)
{
	struct dnp_verbs_hello h = {
		.magic = htonl(DNP_VERBS_MAGIC),
		.version = htons(DNP_VERBS_VERSION),
		.qp_type = (uint8_t)v->qp_type,
		.mtu = v->port_mtu,
		.nonce = htobe64(v->nonce),
		.peer = htobe64(v->peer_nonce),
		.qpn = htonl(v->qp->qp_num),
		.psn = htonl(v->psn),
		.frame_max = htonl(v->frame_max),
		.lid = htons(v->lid),
		.flags = htons(v->acked ? DNP_VERBS_HELLO_ACKED : 0),
	};

	memcpy(h.gid, v->gid.raw, sizeof(h.gid));
	/* Best effort: a refused or lost hello is sent again. */
	if (send(v->hfd, &h, sizeof(h), MSG_DONTWAIT) == (ssize_t)sizeof(h))
		v->st.hello_sent++;
}

int dnp_verbs_hs_recv(struct dnp_verbs *v, struct dnp_verbs_hello *h)
{
	ssize_t n = recv(v->hfd, h, sizeof(*h), MSG_DONTWAIT | MSG_TRUNC);

	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
		    errno == ECONNREFUSED)
			return 0;
		return -errno;
	}
	h->magic = ntohl(h->magic);
	h->version = ntohs(h->version);
	h->nonce = be64toh(h->nonce);
	h->peer = be64toh(h->peer);
	h->qpn = ntohl(h->qpn);
	h->psn = ntohl(h->psn);
	h->frame_max = ntohl(h->frame_max);
	h->lid = ntohs(h->lid);
	h->flags = ntohs(h->flags);
	if (n != (ssize_t)sizeof(*h) || h->magic != DNP_VERBS_MAGIC ||
	    h->version != DNP_VERBS_VERSION || h->nonce == 0 || h->qpn >= (1u << 24) ||
	    h->psn >= (1u << 24) || h->mtu < IBV_MTU_256 || h->mtu > IBV_MTU_4096) {
		v->st.hello_bad++;
		return -EPROTO;
	}
	if (h->qp_type != (uint8_t)v->qp_type || h->frame_max != v->frame_max) {
		/* Both ends must agree; say so once per peer instance. */
		if (h->nonce != v->warned_nonce)
			fprintf(stderr,
				"verbs: peer uses %s QPs and %u-byte frames, this end %s and "
				"%u: ignored\n",
				h->qp_type == IBV_QPT_RC ? "rc" : "uc", h->frame_max,
				v->qp_type == IBV_QPT_RC ? "rc" : "uc", v->frame_max);
		v->warned_nonce = h->nonce;
		v->st.hello_bad++;
		return -EPROTO;
	}
	return 1;
}
