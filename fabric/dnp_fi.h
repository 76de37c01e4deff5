/* SPDX-License-Identifier: MIT */
/*
 * dnp_fi — the libfabric provider "dnp" (loaded by libfabric from
 * FI_PROVIDER_PATH as libdnp-fi.so): reliable datagram endpoints (FI_EP_RDM)
 * with FI_MSG, FI_TAGGED and FI_RMA over a SoftDNP daemon. docs/mpi.md
 * describes it for users, dnp_fi_priv.h maps its sources; this header fixes
 * what crosses the wire.
 *
 * Which daemon: $DNP_SOCKET, else the host's default socket. Under
 * `./dnp mpirun` (DNP_FI_RUN_DIR set), rank r of the job (OMPI_COMM_WORLD_RANK,
 * PMIX_RANK or PMI_RANK) uses node r mod DNP_FI_NNODES, i.e. the socket
 * DNP_FI_RUN_DIR/node-<id>.sock.
 *
 * Protocol. One domain = one DNP session (port); one endpoint per domain.
 * Every endpoint registers, once, one PUT-target area: its credit arrays
 * (credit_in, credit_out: 2 x nidx x 8 bytes, page aligned), then an eager
 * ring of DFI_K slots of DFI_SLOT bytes for each possible sender, sender
 * (node n, port p) owning index n * DFI_LOCAL + p % DFI_LOCAL (so at most
 * DFI_LOCAL endpoints per node take part in one job). Its address (struct
 * dfi_addr, from fi_getname) says where the area is, so a sender needs no
 * handshake: message seq of a pair is a PUT of a 64-byte header (+ payload up
 * to DFI_EAGER bytes) into slot seq % DFI_K of its ring. The receiver hands
 * credits back in the header of every message it sends to that sender
 * (ack: its count of consumed messages, so a ping-pong needs no credit
 * traffic), and, once it owes DFI_CREDIT_BATCH credits not given that way
 * (a one-way stream), by PUTting that count into the sender's credit
 * array. Every header carries that array's address and key, from which a
 * receiver that has not inserted the sender in its AV also finds the
 * sender's ring to answer (FIN). A longer message is a rendez-vous: the
 * header announces the sender's registered buffer, the receiver GETs it into
 * the matched receive buffer and answers FIN.
 *
 * Everything that arrives is checked (magic, type, lengths, ring position
 * against the sending node and port) and a bad message is dropped.
 */
#ifndef DNP_FI_H
#define DNP_FI_H

#include <assert.h>
#include <stdint.h>

#define DFI_K 16u              /* ring slots (credits) per sender */
#define DFI_SLOT (4096u + 64u) /* bytes per ring slot: header + 4 KiB of payload */
#define DFI_HDR 64u
#define DFI_EAGER (DFI_SLOT - DFI_HDR)
#define DFI_CREDIT_BATCH (DFI_K / 2) /* credits owed before a credit PUT */
#define DFI_LOCAL 8u                 /* endpoints per node that can take part */
#define DFI_MAGIC 0x4446u            /* "DF" */
#define DFI_ADDR_MAGIC 0x44464931u
#define DFI_PORT_ANY 0xffu /* in a source address: any port */

/*
 * What fi_getname returns and fi_av_insert takes (32 bytes). The same struct
 * with ring_key 0 is a source address (fi_info's src_addr): the node of the
 * daemon the process uses, before any endpoint has rings, with port
 * DFI_PORT_ANY (the daemon gives the lowest free port) or the port DNP_PORT
 * asks for. An AV refuses it (no rings to write to).
 */
struct dfi_addr {
	uint8_t x, y, z, port;
	uint32_t ring_key;
	uint64_t ring_va;   /* this endpoint's eager rings */
	uint64_t credit_va; /* its credit array (indexed like the rings) */
	uint32_t credit_key;
	uint32_t magic; /* DFI_ADDR_MAGIC */
};
static_assert(sizeof(struct dfi_addr) == 32, "address is 32 bytes");

enum dfi_type {
	DFI_EAGER_MSG = 1,
	DFI_RTS = 2,
	DFI_FIN = 3,
	DFI_WDATA = 4 /* the remote CQ data of an fi_writedata whose PUT is done (len: its bytes) */
};

#define DFI_HF_TAGGED 1u /* FI_TAGGED (tag matched), else FI_MSG */
#define DFI_HF_DATA 2u   /* data carries remote CQ data (cq_data_size 4) */
#define DFI_CQ_DATA_SIZE 4u

struct dfi_hdr {
	uint16_t magic;
	uint8_t type;  /* enum dfi_type */
	uint8_t flags; /* DFI_HF_*: FI_TAGGED (else FI_MSG), remote CQ data */
	uint32_t seq;  /* per (sender, receiver) pair */
	uint64_t len;  /* EAGER: payload bytes; RTS: message bytes */
	uint64_t tag;
	uint64_t va;        /* RTS: the sender's buffer */
	uint64_t id;        /* RTS / FIN: the sender's request */
	uint64_t credit_va; /* the sender's credit array, its entry for us */
	uint32_t key;       /* RTS: key of va */
	union {
		int32_t status; /* FIN: 0 or -errno of the receiver's GET */
		uint32_t data;  /* EAGER, RTS with DFI_HF_DATA: remote CQ data */
	};
	uint32_t credit_key;
	uint32_t ack; /* low 32 bits of the sender's count of messages it
			     * consumed from the receiver (piggybacked credits) */
};
static_assert(sizeof(struct dfi_hdr) == DFI_HDR, "header is 64 bytes");

#endif
