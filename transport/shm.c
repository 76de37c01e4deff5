/* SPDX-License-Identifier: MIT */
/*
 * shm — same-host virtual link: two SPSC rings of frame slots in one shared
 * file, one ring per direction, plus a doorbell per side. See transport.h for
 * the file's life cycle and doorbell.h for the wake-up protocol.
 *
 * Ring ordering: the producer fills a slot (length and frame), then stores
 * the slot's seq, the frame's index + 1, with release (and, after a burst,
 * its tail, which only an attach reads); the consumer goes by the seq of the
 * slot at its head, acquire, and never reads the producer's tail, so a frame
 * crosses in the lines of its own slot and not first in the tail's (as the
 * session rings do, dnp-core/ring.h). The consumer stores its head with
 * release once it no longer needs the slots; the producer caches that head
 * and loads it, acquire, only when the cached value says "full".
 */
#include "dnp_shmguard.h"
#include "doorbell.h"
#include "transport.h"
#include "transport_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DNP_SHM_MAGIC 0x444e5053u /* "DNPS" */
/* 2: the slot's seq tells the consumer it is full */
#define DNP_SHM_VERSION 2u
#define DNP_SHM_SLOT_HDR 16u /* u32 length, u32 seq, padding: frame data 16-byte aligned */
#define DNP_SHM_MAX_FRAME (1u << 20)
#define DNP_SHM_MAX_DEPTH (1u << 16)
#define DNP_SHM_HDR_SIZE 4096u

enum dnp_shm_state {
	DNP_SHM_ABSENT = 0,
	DNP_SHM_OPEN = 1,
	DNP_SHM_CLOSED = 2,
};

/* Indices of one direction; consumer and producer on separate lines. */
struct dnp_shm_ctl {
	alignas(64) _Atomic uint32_t head; /* written by the receiving side */
	alignas(64) _Atomic uint32_t tail; /* written by the sending side */
};

/* The link file's first page: a shared-memory ABI between two daemons. */
struct dnp_shm_hdr {
	/* line 0: constant once magic is set */
	alignas(64) _Atomic uint32_t magic; /* stored last, with release */
	uint32_t version;
	uint32_t frame_max;
	uint32_t depth;       /* slots per ring, power of two */
	uint32_t slot_size;   /* DNP_SHM_SLOT_HDR + frame_max, rounded up to 64 */
	uint32_t hdr_size;    /* DNP_SHM_HDR_SIZE */
	uint64_t ring_off[2]; /* slots of ring i (side i -> side 1 - i) */
	uint64_t file_size;
	/* line 1: attach bookkeeping */
	alignas(64) _Atomic uint32_t state[2]; /* enum dnp_shm_state per side */
	_Atomic uint32_t refs;                 /* ends attached; last close unlinks */
	_Atomic int32_t pid[2];                /* process that holds side i (reattach) */
	/* lines 2-3: receive doorbell of side i */
	struct dnp_doorbell bell[2];
	/* lines 4-7: indices of ring i */
	struct dnp_shm_ctl ctl[2];
};
static_assert(sizeof(struct dnp_shm_hdr) == 8 * 64, "shm link header layout");
static_assert(sizeof(struct dnp_shm_hdr) <= DNP_SHM_HDR_SIZE, "header fits its page");

struct dnp_shm_slot {
	uint32_t len;
	_Atomic uint32_t seq; /* index + 1 of the frame it holds; stored last, release */
	uint32_t pad[2];
	uint8_t data[];
};

struct dnp_shm {
	struct dnp_transport_base base;
	struct dnp_shm_hdr *hdr;
	size_t map_len;
	unsigned side;
	uint32_t frame_max;
	uint32_t mask;
	uint32_t slot_size;
	/* producer (this side's tx ring) */
	uint8_t *tx_slots;
	struct dnp_shm_ctl *tx_ctl;
	uint32_t tx_tail;
	uint32_t tx_head_cache;
	/* tx_queued: bytes this end ever put in its ring, and before frame i (slot i & mask) */
	uint64_t tx_bytes;
	uint64_t *tx_before;
	/* consumer (the peer's tx ring) */
	uint8_t *rx_slots;
	struct dnp_shm_ctl *rx_ctl;
	uint32_t rx_head;
	uint32_t rx_held; /* frames handed out by the last rx_burst */
	struct dnp_doorbell *peer_bell;
	bool peer_bell_mapped;
	bool broken; /* peer wrote a malformed slot */
	char *path;
};

static inline struct dnp_shm *to_shm(struct dnp_transport *t)
{
	return (struct dnp_shm *)(void *)t;
}

static inline const struct dnp_shm *to_shm_c(const struct dnp_transport *t)
{
	return (const struct dnp_shm *)(const void *)t;
}

static inline struct dnp_shm_slot *slot_at(uint8_t *slots, uint32_t slot_size, uint32_t i)
{
	return (struct dnp_shm_slot *)(void *)(slots + (size_t)i * slot_size);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)ms * 1000000L };

	nanosleep(&ts, NULL);
}

static void shm_geometry(const struct dnp_transport_conf *c, uint32_t *slot_size,
			 uint64_t *file_size)
{
	*slot_size = (DNP_SHM_SLOT_HDR + c->frame_max + 63u) & ~63u;
	*file_size = DNP_SHM_HDR_SIZE + 2u * (uint64_t)c->depth * *slot_size;
}

/* Creator: size the file, lay out the header, publish the magic last. */
static int shm_create(int fd, const struct dnp_transport_conf *c, struct dnp_shm_hdr **out,
		      size_t *len)
{
	uint32_t slot_size;
	uint64_t file_size;
	struct dnp_shm_hdr *h;

	shm_geometry(c, &slot_size, &file_size);
	if (ftruncate(fd, (off_t)file_size) < 0)
		return -errno;
	h = mmap(NULL, file_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (h == MAP_FAILED)
		return -errno;
	/* The file is fresh (O_EXCL), hence zero: doorbells and indices are idle. */
	h->version = DNP_SHM_VERSION;
	h->frame_max = c->frame_max;
	h->depth = c->depth;
	h->slot_size = slot_size;
	h->hdr_size = DNP_SHM_HDR_SIZE;
	h->ring_off[0] = DNP_SHM_HDR_SIZE;
	h->ring_off[1] = DNP_SHM_HDR_SIZE + (uint64_t)c->depth * slot_size;
	h->file_size = file_size;
	dnp_doorbell_init(&h->bell[0]);
	dnp_doorbell_init(&h->bell[1]);
	atomic_store_explicit(&h->state[c->side], DNP_SHM_OPEN, memory_order_relaxed);
	atomic_store_explicit(&h->pid[c->side], (int32_t)getpid(), memory_order_relaxed);
	atomic_store_explicit(&h->refs, 1, memory_order_relaxed);
	/* release: pairs with the attacher's acquire load of magic */
	atomic_store_explicit(&h->magic, DNP_SHM_MAGIC, memory_order_release);
	*out = h;
	*len = file_size;
	return 0;
}

/* Attacher: wait for the creator's magic, check geometry, claim our side. */
static int shm_attach(const char *path, const struct dnp_transport_conf *c, uint64_t wait_ms,
		      struct dnp_shm_hdr **out, size_t *len)
{
	uint64_t deadline = now_ms() + wait_ms;
	struct dnp_shm_hdr *h = NULL;
	uint32_t slot_size, absent = DNP_SHM_ABSENT;
	uint64_t file_size;
	struct stat st;
	int fd = -1, ret;

	shm_geometry(c, &slot_size, &file_size);
	for (;;) {
		if (fd < 0)
			fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0 && errno != ENOENT)
			return -errno;
		if (fd >= 0) {
			if (fstat(fd, &st) < 0) {
				ret = -errno;
				goto out_close;
			}
			if ((uint64_t)st.st_size >= DNP_SHM_HDR_SIZE) {
				h = mmap(NULL, DNP_SHM_HDR_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
					 fd, 0);
				if (h == MAP_FAILED) {
					ret = -errno;
					goto out_close;
				}
				/* acquire: pairs with the creator's release of magic */
				if (atomic_load_explicit(&h->magic, memory_order_acquire) ==
				    DNP_SHM_MAGIC)
					break;
				munmap(h, DNP_SHM_HDR_SIZE);
				h = NULL;
			}
		}
		if (now_ms() >= deadline) {
			ret = -ETIMEDOUT;
			goto out_close;
		}
		sleep_ms(1);
	}
	if (h->version != DNP_SHM_VERSION || h->frame_max != c->frame_max || h->depth != c->depth ||
	    h->slot_size != slot_size || h->file_size != file_size ||
	    (uint64_t)st.st_size < file_size) {
		ret = -EPROTO;
		goto out_unmap;
	}
	/*
	 * A side already claimed: by a live process with our role (-EBUSY), or
	 * by one that died (kill -9) or closed: a restarted daemon takes it
	 * over and carries on with the rings' indices as they are; what is
	 * left in them belongs to an old link epoch and is dropped above us.
	 */
	if (!atomic_compare_exchange_strong_explicit(&h->state[c->side], &absent, DNP_SHM_OPEN,
						     memory_order_acq_rel, memory_order_relaxed)) {
		uint32_t closed = DNP_SHM_CLOSED;
		pid_t owner = (pid_t)atomic_load_explicit(&h->pid[c->side], memory_order_acquire);

		if (atomic_compare_exchange_strong_explicit(&h->state[c->side], &closed,
							    DNP_SHM_OPEN, memory_order_acq_rel,
							    memory_order_relaxed)) {
			atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed);
		} else if (owner > 0 && owner != getpid() && kill(owner, 0) < 0 && errno == ESRCH) {
			/* dead owner: its reference is ours now */
		} else {
			ret = -EBUSY;
			goto out_unmap;
		}
	} else {
		atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed);
	}
	atomic_store_explicit(&h->pid[c->side], (int32_t)getpid(), memory_order_release);
	munmap(h, DNP_SHM_HDR_SIZE);
	h = mmap(NULL, file_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (h == MAP_FAILED) {
		ret = -errno;
		goto out_close;
	}
	close(fd);
	*out = h;
	*len = file_size;
	return 0;

out_unmap:
	munmap(h, DNP_SHM_HDR_SIZE);
out_close:
	if (fd >= 0)
		close(fd);
	return ret;
}

/*
 * tx_queued's bookkeeping: one u64 per slot, the bytes put in the ring before
 * that slot's frame. Frames a previous holder of this side left in the ring
 * (a restart) count with their slot lengths.
 */
static void shm_queue_init(struct dnp_shm *s)
{
	uint32_t n = s->tx_tail - s->tx_head_cache;

	if (n > s->mask + 1)
		n = s->mask + 1;
	for (uint32_t i = s->tx_tail - n; i != s->tx_tail; i++) {
		uint32_t len = slot_at(s->tx_slots, s->slot_size, i & s->mask)->len;

		s->tx_before[i & s->mask] = s->tx_bytes;
		s->tx_bytes += len <= s->frame_max ? len : s->frame_max;
	}
}

static int shm_link_open(const struct dnp_transport_conf *c, struct dnp_transport **out)
{
	struct dnp_shm_hdr *h = NULL;
	struct dnp_shm *s;
	uint64_t wait_ms;
	size_t len = 0;
	int fd, ret;

	if (!c || !out || !c->local || c->side > 1 || c->frame_max == 0 ||
	    c->frame_max > DNP_SHM_MAX_FRAME || c->depth < 2 || c->depth > DNP_SHM_MAX_DEPTH ||
	    (c->depth & (c->depth - 1)) != 0)
		return -EINVAL;
	ret = dnp_transport_opt_u64(c->options, "wait_ms", 10000, &wait_ms);
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->path = strdup(c->local);
	/* the depth is checked against the creator's: -EPROTO if it differs */
	s->tx_before = calloc(c->depth, sizeof(*s->tx_before));
	if (!s->path || !s->tx_before) {
		ret = -ENOMEM;
		goto err_free;
	}
	if (c->peer_bell) {
		ret = dnp_doorbell_map(c->peer_bell, &s->peer_bell);
		if (ret)
			goto err_free;
		s->peer_bell_mapped = true;
	}

	/* Whoever creates the file initialises it; the other end waits for the magic. */
	fd = open(c->local, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0) {
		ret = shm_create(fd, c, &h, &len);
		close(fd);
		if (ret) {
			unlink(c->local);
			goto err_bell;
		}
	} else if (errno == EEXIST) {
		ret = shm_attach(c->local, c, wait_ms, &h, &len);
		if (ret)
			goto err_bell;
	} else {
		ret = -errno;
		goto err_bell;
	}

	s->base.ops = &dnp_transport_shm;
	s->hdr = h;
	s->map_len = len;
	/* The other end may truncate the file: SIGBUS caught, the link reports down (shm_up). */
	(void)dnp_shmguard_add(h, len);
	s->side = c->side;
	s->frame_max = h->frame_max;
	s->mask = h->depth - 1;
	s->slot_size = h->slot_size;
	s->tx_slots = (uint8_t *)h + h->ring_off[c->side];
	s->tx_ctl = &h->ctl[c->side];
	s->rx_slots = (uint8_t *)h + h->ring_off[1 - c->side];
	s->rx_ctl = &h->ctl[1 - c->side];
	/* Indices are only ever written by their owner: start from what is there. */
	s->tx_tail = atomic_load_explicit(&s->tx_ctl->tail, memory_order_relaxed);
	s->tx_head_cache = atomic_load_explicit(&s->tx_ctl->head, memory_order_acquire);
	s->rx_head = atomic_load_explicit(&s->rx_ctl->head, memory_order_relaxed);
	shm_queue_init(s);
	if (!s->peer_bell)
		s->peer_bell = &h->bell[1 - c->side];
	*out = (struct dnp_transport *)(void *)s;
	return 0;

err_bell:
	if (s->peer_bell_mapped)
		dnp_doorbell_unmap(s->peer_bell);
err_free:
	free(s->tx_before);
	free(s->path);
	free(s);
	return ret;
}

static void shm_close(struct dnp_transport *t)
{
	struct dnp_shm *s = to_shm(t);

	if (!s)
		return;
	/* release our slots first, so a peer reading state sees a final head */
	atomic_store_explicit(&s->rx_ctl->head, s->rx_head + s->rx_held, memory_order_release);
	atomic_store_explicit(&s->hdr->state[s->side], DNP_SHM_CLOSED, memory_order_release);
	/* The peer may be sleeping: let it notice that the link went down. */
	dnp_doorbell_ring(s->peer_bell);
	if (atomic_fetch_sub_explicit(&s->hdr->refs, 1, memory_order_acq_rel) == 1)
		unlink(s->path);
	if (s->peer_bell_mapped)
		dnp_doorbell_unmap(s->peer_bell);
	dnp_shmguard_del(s->hdr);
	munmap(s->hdr, s->map_len);
	free(s->tx_before);
	free(s->path);
	free(s);
}

/*
 * Free slots of our ring, at least want if the consumer has released them:
 * the cached head is reloaded only when it says fewer. The peer's head is
 * untrusted; the slots we write stay ours (masked indices) whatever it says.
 */
static inline uint32_t shm_tx_room(struct dnp_shm *s, unsigned want)
{
	uint32_t room = s->mask + 1 - (s->tx_tail - s->tx_head_cache);

	if (room < want) {
		/* acquire: pairs with the consumer's release of head; its reads are done */
		s->tx_head_cache = atomic_load_explicit(&s->tx_ctl->head, memory_order_acquire);
		room = s->mask + 1 - (s->tx_tail - s->tx_head_cache);
	}
	return room;
}

/* The k-th free slot (k < the room shm_tx_room gave). */
static inline struct dnp_shm_slot *shm_tx_slot(const struct dnp_shm *s, uint32_t k)
{
	return slot_at(s->tx_slots, s->slot_size, (s->tx_tail + k) & s->mask);
}

/*
 * The one publish path, in two steps. shm_tx_publish hands over free slot k,
 * its frame of len (<= frame_max) bytes already written: its length, the
 * tx_queued count, then its seq; frames go in order, k = 0, 1, ... A burst
 * of n ends with shm_tx_push: the tail and one ring of the peer's doorbell
 * (one per burst, however many frames).
 */
static inline void shm_tx_publish(struct dnp_shm *s, struct dnp_shm_slot *slot, uint32_t k,
				  uint32_t len)
{
	uint32_t i = s->tx_tail + k;

	slot->len = len;
	s->tx_before[i & s->mask] = s->tx_bytes;
	s->tx_bytes += len;
	/* release: length and frame are visible before the seq that announces them */
	atomic_store_explicit(&slot->seq, i + 1, memory_order_release);
}

static inline int shm_tx_push(struct dnp_shm *s, unsigned n)
{
	if (n == 0)
		return 0;
	s->tx_tail += n;
	/* for an attach after a restart; the consumer goes by the seqs */
	atomic_store_explicit(&s->tx_ctl->tail, s->tx_tail, memory_order_release);
	dnp_doorbell_ring(s->peer_bell);
	return (int)n;
}

/*
 * Reserve, copy, commit: the room of a reserve, each frame copied into its
 * slot and published as a commit publishes it (at once, so the consumer may
 * take it while the next is copied), then the tail and doorbell of a commit.
 */
static int shm_tx_burst(struct dnp_transport *t, const struct dnp_tx_frame *f, unsigned n)
{
	struct dnp_shm *s = to_shm(t);
	uint32_t room = shm_tx_room(s, n);
	unsigned i;

	if (n > room)
		n = room;
	for (i = 0; i < n; i++) {
		struct dnp_shm_slot *slot;

		if (f[i].len > s->frame_max) {
			if (i == 0)
				return -EMSGSIZE;
			break;
		}
		slot = shm_tx_slot(s, i);
		memcpy(slot->data, f[i].data, f[i].len);
		shm_tx_publish(s, slot, i, f[i].len);
	}
	return shm_tx_push(s, i);
}

/* One pass: the next free slots (their data), as tx_burst would fill them. */
static int shm_tx_reserve(struct dnp_transport *t, uint8_t **bufs, uint32_t *cap, unsigned n)
{
	struct dnp_shm *s = to_shm(t);
	uint32_t room = shm_tx_room(s, n);

	if (n > room)
		n = room;
	for (unsigned i = 0; i < n; i++)
		bufs[i] = shm_tx_slot(s, i)->data;
	*cap = s->frame_max;
	return (int)n;
}

/* One pass: publishes the first n reserved slots, written in place, as shm_tx_burst does. */
static int shm_tx_commit(struct dnp_transport *t, const uint32_t *lens, unsigned n)
{
	struct dnp_shm *s = to_shm(t);
	unsigned i;

	/* want 0: the head is not reloaded, so this is at most what a reserve gave */
	if (n > shm_tx_room(s, 0))
		return -EINVAL; /* more than a reserve could have given */
	for (i = 0; i < n; i++)
		if (lens[i] > s->frame_max)
			return -EMSGSIZE;
	for (i = 0; i < n; i++)
		shm_tx_publish(s, shm_tx_slot(s, i), i, lens[i]);
	return shm_tx_push(s, n);
}

static int shm_rx_burst(struct dnp_transport *t, struct dnp_rx_frame *f, unsigned n)
{
	struct dnp_shm *s = to_shm(t);
	unsigned i;

	if (s->rx_held) {
		s->rx_head += s->rx_held;
		s->rx_held = 0;
		/* release: our reads of the handed-out slots are done before reuse */
		atomic_store_explicit(&s->rx_ctl->head, s->rx_head, memory_order_release);
	}
	if (s->broken)
		return -EPROTO;
	if (n > s->mask + 1)
		n = s->mask + 1;
	for (i = 0; i < n; i++) {
		struct dnp_shm_slot *slot =
			slot_at(s->rx_slots, s->slot_size, (s->rx_head + i) & s->mask);
		/* acquire: pairs with the producer's release of seq; the slot is written */
		uint32_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
		uint32_t len;

		/* not written yet: its seq is the last lap's, or zero */
		if (seq != s->rx_head + i + 1)
			break;
		len = slot->len; /* read once: the peer is not trusted */
		if (len > s->frame_max) {
			s->broken = true;
			break;
		}
		f[i].data = slot->data;
		f[i].len = len;
	}
	s->rx_held = i;
	if (i == 0 && s->broken)
		return -EPROTO;
	return (int)i;
}

/*
 * Bytes of the frames in our ring the peer has not released yet (it releases
 * a burst on its next rx_burst). The peer's head is untrusted: one outside
 * the ring counts the ring as full.
 */
static uint32_t shm_tx_queued(const struct dnp_transport *t)
{
	const struct dnp_shm *s = to_shm_c(t);
	/* acquire: pairs with the consumer's release of head */
	uint32_t head = atomic_load_explicit(&s->tx_ctl->head, memory_order_acquire);
	uint32_t n = s->tx_tail - head;
	uint64_t q;

	if (n == 0)
		return 0;
	if (n > s->mask + 1)
		head = s->tx_tail - (s->mask + 1);
	q = s->tx_bytes - s->tx_before[head & s->mask];
	return q < UINT32_MAX ? (uint32_t)q : UINT32_MAX;
}

static uint32_t shm_mtu(const struct dnp_transport *t)
{
	return to_shm_c(t)->frame_max;
}

static int shm_wait_fd(const struct dnp_transport *t)
{
	return -1; /* wake-ups come through doorbells, not file descriptors */
}

static bool shm_up(const struct dnp_transport *t)
{
	const struct dnp_shm *s = to_shm_c(t);

	/* the ring file truncated under us: zero pages now (dnp_shmguard.h), down for good */
	if (dnp_shmguard_faults(s->hdr))
		return false;
	return !s->broken && atomic_load_explicit(&s->hdr->state[1 - s->side],
						  memory_order_acquire) != DNP_SHM_CLOSED;
}

struct dnp_doorbell *dnp_transport_shm_doorbell(struct dnp_transport *t)
{
	struct dnp_shm *s = to_shm(t);

	if (!s || s->base.ops != &dnp_transport_shm)
		return NULL;
	return &s->hdr->bell[s->side];
}

struct dnp_doorbell *dnp_transport_shm_peer_bell(struct dnp_transport *t)
{
	struct dnp_shm *s = to_shm(t);

	if (!s || s->base.ops != &dnp_transport_shm || !s->peer_bell_mapped)
		return NULL;
	return s->peer_bell;
}

const struct dnp_transport_ops dnp_transport_shm = {
	.name = "shm",
	.open = shm_link_open,
	.close = shm_close,
	.tx_burst = shm_tx_burst,
	.rx_burst = shm_rx_burst,
	.mtu = shm_mtu,
	.wait_fd = shm_wait_fd,
	.up = shm_up,
	.tx_queued = shm_tx_queued,
	.tx_reserve = shm_tx_reserve,
	.tx_commit = shm_tx_commit,
};
