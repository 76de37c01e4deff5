/* SPDX-License-Identifier: MIT */
/*
 * The SIGBUS guard of shared files truncated under a mapping
 * (common/dnp_shmguard.h): a guarded mapping reads zeros after the
 * truncation and counts the fault; an unguarded one (never registered, or
 * unregistered) still kills the process with SIGBUS.
 * Under ASan run with ASAN_OPTIONS=handle_sigbus=0 (meson sets it), so
 * that ASan does not claim SIGBUS for itself.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "dnp_shmguard.h"

#define LEN (4u * 4096u)

/* A file of LEN bytes filled with 0xab, mapped shared; *fd stays open. */
static volatile uint8_t *map_file(int *fd)
{
	char path[] = "/tmp/dnp-shmguard-XXXXXX";
	uint8_t *p;

	*fd = mkstemp(path);
	assert_true(*fd >= 0);
	unlink(path);
	assert_int_equal(ftruncate(*fd, LEN), 0);
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	assert_true(p != MAP_FAILED);
	for (unsigned i = 0; i < LEN; i++)
		p[i] = 0xab;
	return p;
}

static void test_guarded_reads_zeros(void **state)
{
	uint64_t before = dnp_shmguard_total();
	volatile uint8_t *p;
	int fd;

	(void)state;
	assert_int_equal(dnp_shmguard_install(), 0);
	p = map_file(&fd);
	assert_int_equal(dnp_shmguard_add((void *)p, LEN), 0);
	assert_int_equal(dnp_shmguard_faults((const void *)p), 0);
	assert_int_equal(p[LEN - 1], 0xab);
	assert_int_equal(ftruncate(fd, 4096), 0); /* pages 1..3 gone */
	assert_int_equal(p[2 * 4096], 0);         /* would be SIGBUS */
	assert_int_equal(dnp_shmguard_faults((const void *)p), 1);
	assert_int_equal(dnp_shmguard_total(), before + 1);
	/* the whole mapping is zero pages now, writable; no further fault */
	assert_int_equal(p[0], 0);
	p[LEN - 1] = 7;
	assert_int_equal(p[LEN - 1], 7);
	assert_int_equal(dnp_shmguard_faults((const void *)p), 1);
	dnp_shmguard_del((const void *)p);
	assert_int_equal(dnp_shmguard_faults((const void *)p), 0);
	munmap((void *)p, LEN);
	close(fd);
	dnp_shmguard_uninstall();
}

/* In a child: map, (register, unregister when del), truncate, read. Returns its status. */
static int child_truncates(bool add, bool del)
{
	int status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		volatile uint8_t *p;
		int fd;

		if (dnp_shmguard_install())
			_exit(2);
		p = map_file(&fd);
		if (add && dnp_shmguard_add((void *)p, LEN))
			_exit(3);
		if (del)
			dnp_shmguard_del((const void *)p);
		if (ftruncate(fd, 0))
			_exit(4);
		_exit(p[4096] == 0 ? 0 : 5);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void test_unguarded_still_dies(void **state)
{
	int st;

	(void)state;
	st = child_truncates(false, false);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGBUS);
	st = child_truncates(true, true); /* registered, then unregistered */
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGBUS);
	st = child_truncates(true, false); /* the control: guarded, it lives */
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_table(void **state)
{
	static uint8_t page[4096] __attribute__((aligned(4096)));

	(void)state;
	assert_int_equal(dnp_shmguard_add(NULL, 1), -EINVAL);
	assert_int_equal(dnp_shmguard_add(page, 0), -EINVAL);
	for (unsigned i = 0; i < DNP_SHMGUARD_MAX; i++)
		assert_int_equal(dnp_shmguard_add(page + i, 1), 0);
	assert_int_equal(dnp_shmguard_add(page + 4000, 1), -ENOSPC);
	for (unsigned i = 0; i < DNP_SHMGUARD_MAX; i++)
		dnp_shmguard_del(page + i);
	assert_int_equal(dnp_shmguard_add(page, 1), 0);
	dnp_shmguard_del(page);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guarded_reads_zeros),
		cmocka_unit_test(test_unguarded_still_dies),
		cmocka_unit_test(test_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
