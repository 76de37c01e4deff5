/* SPDX-License-Identifier: MIT */
/* dnp_shmguard — SIGBUS from truncated shared files; see dnp_shmguard.h. */
#include "dnp_shmguard.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

struct dnp_shmguard_ent {
	_Atomic uintptr_t base; /* 0: free */
	_Atomic size_t len;
	_Atomic uint32_t faults;
};

static struct dnp_shmguard_ent dnp_shmguard_tab[DNP_SHMGUARD_MAX];
static _Atomic uint64_t dnp_shmguard_sum;
static struct sigaction dnp_shmguard_old;
static _Atomic bool dnp_shmguard_on;

static struct dnp_shmguard_ent *dnp_shmguard_at(uintptr_t a)
{
	for (unsigned i = 0; i < DNP_SHMGUARD_MAX; i++) {
		struct dnp_shmguard_ent *g = &dnp_shmguard_tab[i];
		/* acquire: pairs with add()'s release, so len is the registered one */
		uintptr_t b = atomic_load_explicit(&g->base, memory_order_acquire);

		if (b && a >= b && a - b < atomic_load_explicit(&g->len, memory_order_relaxed))
			return g;
	}
	return NULL;
}

/* Async-signal-safe: table reads, mmap (Linux, see the header), sigaction, raise. */
static void dnp_shmguard_handler(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	struct dnp_shmguard_ent *g;
	struct sigaction dfl;

	(void)uc;
	/* Only a fault of the hardware kind has a meaningful si_addr (not kill(2)). */
	g = si && si->si_code > 0 ? dnp_shmguard_at((uintptr_t)si->si_addr) : NULL;
	if (g) {
		void *b = (void *)atomic_load_explicit(&g->base, memory_order_relaxed);
		size_t len = atomic_load_explicit(&g->len, memory_order_relaxed);

		if (mmap(b, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_ANONYMOUS | MAP_PRIVATE,
			 -1, 0) == b) {
			atomic_fetch_add_explicit(&g->faults, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&dnp_shmguard_sum, 1, memory_order_relaxed);
			errno = saved;
			return; /* the access is retried, on zeros */
		}
	}
	/* Not ours: die of SIGBUS as if no handler had been installed. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig); /* blocked until we return; a fault also re-faults then */
	errno = saved;
}

int dnp_shmguard_install(void)
{
	struct sigaction sa;

	if (atomic_load(&dnp_shmguard_on))
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = dnp_shmguard_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &dnp_shmguard_old) < 0)
		return -errno;
	atomic_store(&dnp_shmguard_on, true);
	return 0;
}

void dnp_shmguard_uninstall(void)
{
	if (atomic_exchange(&dnp_shmguard_on, false))
		sigaction(SIGBUS, &dnp_shmguard_old, NULL);
}

int dnp_shmguard_add(void *addr, size_t len)
{
	if (!addr || !len)
		return -EINVAL;
	for (unsigned i = 0; i < DNP_SHMGUARD_MAX; i++) {
		struct dnp_shmguard_ent *g = &dnp_shmguard_tab[i];
		uintptr_t zero = 0;

		if (atomic_load_explicit(&g->base, memory_order_relaxed))
			continue;
		/* claim the slot with a sentinel, then publish len before the real base */
		if (!atomic_compare_exchange_strong(&g->base, &zero, (uintptr_t)1))
			continue;
		atomic_store_explicit(&g->len, len, memory_order_relaxed);
		atomic_store_explicit(&g->faults, 0, memory_order_relaxed);
		atomic_store_explicit(&g->base, (uintptr_t)addr, memory_order_release);
		return 0;
	}
	return -ENOSPC;
}

static struct dnp_shmguard_ent *dnp_shmguard_find(const void *addr)
{
	for (unsigned i = 0; addr && i < DNP_SHMGUARD_MAX; i++)
		if (atomic_load_explicit(&dnp_shmguard_tab[i].base, memory_order_acquire) ==
		    (uintptr_t)addr)
			return &dnp_shmguard_tab[i];
	return NULL;
}

void dnp_shmguard_del(const void *addr)
{
	struct dnp_shmguard_ent *g = dnp_shmguard_find(addr);

	if (g)
		atomic_store_explicit(&g->base, 0, memory_order_release);
}

uint32_t dnp_shmguard_faults(const void *addr)
{
	struct dnp_shmguard_ent *g = addr ? dnp_shmguard_at((uintptr_t)addr) : NULL;

	return g ? atomic_load_explicit(&g->faults, memory_order_relaxed) : 0;
}

uint64_t dnp_shmguard_total(void)
{
	return atomic_load_explicit(&dnp_shmguard_sum, memory_order_relaxed);
}
