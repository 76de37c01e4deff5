/* SPDX-License-Identifier: MIT */
/*
 * check_faults — the dnp_check modes that break something and check what is
 * left: link-drill, bad-args, kill-survivor (and its kill-victim),
 * private-fault, kill-mid-send (and its kill-send-victim) and slow-drain
 * (dnp_check.c describes each; check.h states the contract).
 */
#include "check.h"

#include "dnp_parse.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- link-drill ------------------------------------------------------- */

#define DRILL_LEN 4096u
#define DRILL_WINDOW 64u
#define DRILL_MAX 400000u /* PUTs; at 64 B..4 KiB each, minutes of traffic */
#define DRILL_READY 200u
#define DRILL_AFTER 500u /* PUTs issued once the break is known: all must pass */

/*
 * Creates flag+suffix with its content in one step (written under a
 * temporary name, then renamed), so that a reader polling for the file never
 * opens it before its content is there.
 */
static int drill_touch(const char *flag, const char *suffix, const char *content)
{
	char path[4096], tmp[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", flag, suffix);
	snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid());
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	if (content)
		fputs(content, f);
	if (fclose(f)) {
		int err = -errno;

		unlink(tmp);
		return err;
	}
	if (rename(tmp, path)) {
		int err = -errno;

		unlink(tmp);
		return err;
	}
	return 0;
}

static bool drill_exists(const char *flag, const char *suffix)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s%s", flag, suffix);
	return access(path, F_OK) == 0;
}

int mode_drill_a(struct chk *k, const char *flag)
{
	struct app *a = &k->a;
	uint8_t *src = xalloc(k, DRILL_LEN), *seen = xalloc(k, DRILL_MAX);
	unsigned issued = 0, ok = 0, err = 0, i, cut_at = 0, after_ok = 0;
	int first_status = 0;
	uint64_t rva, t0;
	struct dnp_event ev;
	struct app_msg m;
	uint32_t rkey;
	bool ready = false, cut = false;
	int r;

	memset(seen, 0, DRILL_MAX);
	app_pattern_fill(src, DRILL_LEN, a->id, k->peer_id, 0, 8);
	if (take_offer(k, &m) < 0)
		return -EIO;
	rva = m.c.a;
	rkey = (uint32_t)m.c.b;
	t0 = app_now_ns();
	/*
	 * Stream through the break; once the test says it is known (FLAG.cut),
	 * issue DRILL_AFTER more, then stop issuing and reap every PUT.
	 */
	for (;;) {
		bool more = issued < DRILL_MAX && (!cut || issued < cut_at + DRILL_AFTER);

		if (!more && ok + err == issued)
			break;
		if (ready && !cut && drill_exists(flag, ".cut")) {
			cut = true;
			cut_at = issued;
			printf("ok: the break is known after %u PUTs (%u ok, %u errors)\n", issued,
			       ok, err);
			fflush(stdout);
		}
		if (more && issued - ok - err < DRILL_WINDOW) {
			r = dnp_put(a->d, src, 64 + (issued * 613u) % (DRILL_LEN - 63), k->peer,
				    a->peer_port, rva, rkey, 100000 + issued, DNP_NONBLOCK);
			if (r == 0) {
				issued++;
				continue;
			}
			if (r != -EAGAIN) {
				fail(k, "put %u: %s", issued, dnp_strerror(r));
				return r;
			}
		}
		r = app_next_event(a, &ev, a->timeout_ms);
		if (r <= 0) {
			fail(k,
			     "HANG: %u of %u PUTs completed (%u ok, %u errors), none for %d ms: %s",
			     ok + err, issued, ok, err, a->timeout_ms,
			     r ? dnp_strerror(r) : "timed out");
			return -EIO;
		}
		if (ev.type != DNP_EV_TX_DONE && ev.type != DNP_EV_ERROR)
			continue;
		if (!cookie_once(k, ev.cookie, 100000, issued, seen))
			continue;
		bool after = cut && ev.cookie - 100000 >= cut_at;
		if (ev.type == DNP_EV_TX_DONE) {
			ok++;
			after_ok += after;
		} else {
			if (!err++) {
				first_status = ev.status;
				app_print_event(PROG, "first error", &ev);
			}
			if (ev.status >= 0)
				fail(k, "ERROR event with status %d", ev.status);
			if (after)
				fail(k, "PUT %llu, issued after the break was known, failed: %s",
				     (unsigned long long)(ev.cookie - 100000),
				     dnp_strerror(ev.status));
		}
		if (!ready && ok >= DRILL_READY) {
			ready = true;
			if (drill_touch(flag, "", getenv("DNP_SOCKET")) < 0) {
				fail(k, "cannot create %s", flag);
				return -EIO;
			}
			printf("ok: %u PUTs completed, streaming; break the link now\n", ok);
			fflush(stdout);
		}
	}
	if (!cut) {
		fail(k, "%u PUTs, all completed: the test never said the link broke", issued);
		return -EIO;
	}
	for (i = 0; i < issued; i++)
		if (seen[i] != 1)
			fail(k, "PUT %u completed %u times", i, seen[i]);
	printf("ok: %u PUTs issued, %u TX_DONE + %u ERROR = every one exactly once%s%s "
	       "(%.1f ms of traffic); the %u issued after the break was known: %u TX_DONE "
	       "(through the detour)\n",
	       issued, ok, err, err ? "; first error " : "", err ? dnp_strerror(first_status) : "",
	       (double)(app_now_ns() - t0) / 1e6, issued - cut_at, after_ok);
	if (after_ok != issued - cut_at)
		fail(k, "only %u of the %u PUTs after the break passed", after_ok, issued - cut_at);
	if (drill_touch(flag, ".broken", NULL) < 0) {
		fail(k, "cannot create %s.broken", flag);
		return -EIO;
	}
	/* The test reads dnpctl stats now (the daemons must still run). */
	for (i = 0; i < 600 && !drill_exists(flag, ".checked"); i++)
		usleep(50000);
	if (i == 600)
		fail(k, "the test never created %s.checked", flag);
	drill_touch(flag, ".done", NULL);
	return 0;
}

int mode_drill_b(struct chk *k, const char *flag)
{
	struct app *a = &k->a;
	uint8_t *dst = xalloc(k, DRILL_LEN);
	struct dnp_event ev;
	unsigned rx = 0, i;

	if (offer(k, dst, DRILL_LEN, DNP_BUF_PUT_TARGET, NULL, 0) < 0)
		return -EIO;
	/* A's PUTs take the detour once the link is down: count them, wait for its file. */
	for (i = 0; i < 2400 && !drill_exists(flag, ".done"); i++)
		while (app_next_event(a, &ev, 50) == 1)
			rx += ev.type == DNP_EV_RX_PUT;
	if (i == 2400)
		fail(k, "no %s.done within 120 s", flag);
	printf("ok: %u PUTs received\n", rx);
	return 0;
}

/* ---- bad-args --------------------------------------------------------- */

static void expect_ret(struct chk *k, const char *what, int got, int want, int alt)
{
	if (got == want || (alt && got == alt))
		printf("ok: %s -> %s\n", what, dnp_strerror(got));
	else
		fail(k, "%s: returned %d (%s), expected %s", what, got, dnp_strerror(got),
		     dnp_strerror(want));
}

int mode_bad_args(struct chk *k)
{
	struct app *a = &k->a;
	uint8_t *buf = xalloc(k, 8192), *src = xalloc(k, 64);
	struct dnp_coords outside = { a->dims.x, 0, 0 };
	struct dnp_event ev;
	uint32_t key, key2;
	uint64_t cookie;
	int r;

	memset(src, 0x11, 64);
	expect_ret(k, "register len 0", dnp_register(a->d, buf, 0, DNP_BUF_PUT_TARGET, &key),
		   -EINVAL, 0);
	expect_ret(k, "register NULL", dnp_register(a->d, NULL, 4096, DNP_BUF_PUT_TARGET, &key),
		   -EINVAL, 0);
	expect_ret(k, "register without flags", dnp_register(a->d, buf, 4096, 0, &key), -EINVAL, 0);
	expect_ret(k, "register unknown flag", dnp_register(a->d, buf, 4096, 0x80, &key), -EINVAL,
		   0);
	expect_ret(k, "unregister an address never registered", dnp_unregister(a->d, buf + 17),
		   -ENOENT, -EINVAL);
	r = dnp_register(a->d, buf, 4096, DNP_BUF_PUT_TARGET, &key);
	expect_ret(k, "register 4096 bytes", r, 0, 0);
	expect_ret(k, "register an overlapping range",
		   dnp_register(a->d, buf + 100, 4096, DNP_BUF_PUT_TARGET, &key2), -EEXIST, 0);
	expect_ret(k, "put to port 256",
		   dnp_put(a->d, src, 16, a->self, 256, (uintptr_t)buf, key, 1, 0), -EINVAL, 0);
	expect_ret(k, "put NULL source",
		   dnp_put(a->d, NULL, 16, a->self, a->port, (uintptr_t)buf, key, 1, 0), -EINVAL,
		   0);
	if (sizeof(size_t) > 4)
		expect_ret(k, "put longer than DNP_MAX_MSG",
			   dnp_put(a->d, src, (size_t)DNP_MAX_MSG + 1, a->self, a->port,
				   (uintptr_t)buf, key, 1, 0),
			   -EINVAL, 0);
	expect_ret(k, "put with unknown flags",
		   dnp_put(a->d, src, 16, a->self, a->port, (uintptr_t)buf, key, 1, 0x80), -EINVAL,
		   0);
	expect_ret(k, "send to port 300", dnp_send(a->d, src, 16, a->self, 300, 1, 0), -EINVAL, 0);
	expect_ret(k, "send NULL source", dnp_send(a->d, NULL, 16, a->self, a->port, 1, 0), -EINVAL,
		   0);
	expect_ret(k, "get into NULL",
		   dnp_get(a->d, NULL, 16, key, a->self, a->port, (uintptr_t)buf, key, 1, 0),
		   -EINVAL, 0);
	/* Outside the torus: refused at the call, or completes with an error. */
	cookie = ++k->cookie;
	r = dnp_put(a->d, src, 16, outside, a->port, (uintptr_t)buf, key, cookie, 0);
	if (r == 0) {
		r = app_wait_completion(a, cookie, &ev);
		if (r == 0)
			r = ev.type == DNP_EV_ERROR ? ev.status : 0;
		if (r == -EHOSTUNREACH)
			r = -EINVAL;
	}
	expect_ret(k, "put to a node outside the torus", r, -EINVAL, 0);
	/* The session still works: a loopback PUT completes and lands. */
	memset(buf, 0, 4096);
	r = put_wait(k, src, 64, a->self, (uintptr_t)buf, key, &ev);
	/* put_wait sends to peer_port; on the own node that is our port too. */
	expect_status(k, "loopback PUT after the bad calls", r, 0);
	if (r == 0 && memcmp(buf, src, 64))
		fail(k, "loopback PUT data wrong");
	expect_ret(k, "unregister", dnp_unregister(a->d, buf), 0, 0);
	expect_ret(k, "unregister twice", dnp_unregister(a->d, buf), -ENOENT, -EINVAL);
	return 0;
}

/* ---- kill-survivor / kill-victim -------------------------------------- */

#define KILL_AREA (4u << 20)
#define KILL_MSG (1u << 20)
#define KILL_MAIN (1u << 20)
#define KILL_N 64u

static size_t kill_len(unsigned i)
{
	return 1 + (i * 7919u) % (KILL_MAIN / KILL_N);
}

/*
 * Starts this program again in mode (kill-victim, kill-send-victim) with
 * DNP_CHECK_VICTIM=spec and a pipe on which it writes one byte when it is
 * where it should be killed; waits for that byte. 0 with *pid set (the
 * victim is running), or -EIO (reported; a started victim is killed).
 */
static int victim_start(struct chk *k, const char *mode, const char *spec, pid_t *pid)
{
	char fdbuf[16], self[4096], ch;
	struct pollfd pfd;
	int pfds[2], status, r;
	ssize_t n;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || pipe(pfds) < 0) {
		fail(k, "cannot start the victim");
		return -EIO;
	}
	self[n] = 0;
	snprintf(fdbuf, sizeof(fdbuf), "%d", pfds[1]);
	*pid = fork();
	if (*pid == 0) {
		close(pfds[0]);
		setenv("DNP_CHECK_VICTIM", spec, 1);
		setenv("DNP_CHECK_READY_FD", fdbuf, 1);
		unsetenv("DNP_PEER_PORT");
		execl(self, self, mode, (char *)NULL);
		_exit(127);
	}
	close(pfds[1]);
	if (*pid < 0) {
		fail(k, "fork: %s", strerror(errno));
		close(pfds[0]);
		return -EIO;
	}
	pfd.fd = pfds[0];
	pfd.events = POLLIN;
	r = poll(&pfd, 1, k->a.timeout_ms);
	r = r == 1 && read(pfds[0], &ch, 1) == 1 ? 0 : -EIO;
	close(pfds[0]);
	if (r < 0) {
		fail(k, "the victim (%s) never got ready", mode);
		kill(*pid, SIGKILL);
		waitpid(*pid, &status, 0);
	}
	return r;
}

/* Kills the victim with SIGKILL and checks that this is what ended it. */
static void victim_kill(struct chk *k, pid_t pid, const char *what)
{
	int status = 0;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail(k, "victim ended with status %#x instead of SIGKILL", status);
	else
		printf("ok: %s\n", what);
}

/*
 * The victim's start: DNP_CHECK_VICTIM ("X,Y,Z,PORT" and, after it, *rest
 * for the mode to read), its ready pipe and its own session. Returns 0, or
 * the exit status (2: not started by dnp_check, 1: no session).
 */
static int victim_open(const char *mode, struct app *a, int *fd, struct dnp_coords *dst,
		       unsigned *port, const char **rest)
{
	const char *spec = getenv("DNP_CHECK_VICTIM"), *fds = getenv("DNP_CHECK_READY_FD");
	unsigned x, y, z;
	uint64_t v;
	int n = 0;

	if (!spec || !fds || dnp_parse_u64_max(fds, INT32_MAX, &v) ||
	    sscanf(spec, "%u,%u,%u,%u%n", &x, &y, &z, port, &n) != 4) {
		fprintf(stderr, PROG ": %s is started by dnp_check itself\n", mode);
		return 2;
	}
	*fd = (int)v;
	*rest = spec + n;
	dst->x = x;
	dst->y = y;
	dst->z = z;
	return app_open(a, PROG " (victim)") < 0 ? 1 : 0;
}

/* Streams 1 MiB PUTs into the survivor's peer until killed. */
int mode_kill_victim(void)
{
	unsigned port, key, done = 0, issued = 0;
	const char *rest;
	unsigned long long va;
	struct dnp_coords dst;
	struct dnp_event ev;
	struct app a;
	uint8_t *src;
	int r, fd;

	r = victim_open("kill-victim", &a, &fd, &dst, &port, &rest);
	if (r)
		return r;
	if (sscanf(rest, ",%llx,%x", &va, &key) != 2)
		return 2;
	src = app_alloc(&a, KILL_MSG);
	if (!src)
		return 1;
	memset(src, 0xdd, KILL_MSG);
	for (;;) {
		if (issued - done < 16) {
			r = dnp_put(a.d, src, KILL_MSG, dst, port, va + (issued % 4) * KILL_MSG,
				    key, issued, DNP_NONBLOCK);
			if (r == 0) {
				issued++;
				continue;
			}
			if (r != -EAGAIN) {
				fprintf(stderr, PROG " (victim): put: %s\n", dnp_strerror(r));
				return 1;
			}
		}
		r = app_next_event(&a, &ev, 1000);
		if (r < 0)
			return 1;
		if (r == 1 && (ev.type == DNP_EV_TX_DONE || ev.type == DNP_EV_ERROR)) {
			done++;
			if (done == 8 && write(fd, "R", 1) != 1)
				return 1;
		}
	}
}

int mode_kill_survivor_a(struct chk *k)
{
	struct app *a = &k->a;
	uint8_t *src = xalloc(k, KILL_MAIN);
	char spec[128];
	struct dnp_event ev;
	struct app_msg m;
	uint64_t mva, off;
	uint32_t mkey;
	unsigned i, done = 0;
	int r;
	pid_t pid;

	if (take_offer(k, &m) < 0)
		return -EIO;
	mva = m.c.a;
	mkey = (uint32_t)m.c.b;
	snprintf(spec, sizeof(spec), "%u,%u,%u,%u,%llx,%x", k->peer.x, k->peer.y, k->peer.z,
		 a->peer_port, (unsigned long long)m.c.c, (unsigned)m.c.d);
	if (victim_start(k, "kill-victim", spec, &pid) < 0)
		return -EIO;
	/* Let the stream run a little, then kill it in the middle of its PUTs. */
	usleep(30000);
	victim_kill(k, pid, "victim application killed with SIGKILL during its PUT stream");
	/* The daemon must keep serving us: KILL_N PUTs to B with patterns. */
	for (i = 0, off = 0; i < KILL_N; i++) {
		app_pattern_fill(src + off, kill_len(i), a->id, k->peer_id, i, 9);
		r = dnp_put(a->d, src + off, kill_len(i), k->peer, a->peer_port, mva + off, mkey,
			    100 + i, 0);
		if (r < 0) {
			fail(k, "put after the kill: %s", dnp_strerror(r));
			return r;
		}
		off += kill_len(i);
	}
	while (done < KILL_N) {
		if (next_completion(k, &ev, done, KILL_N) < 0)
			return -EIO;
		if (ev.type == DNP_EV_ERROR) {
			app_print_event(PROG, "after the kill", &ev);
			fail(k, "PUT after the kill failed");
			done++;
		} else if (ev.type == DNP_EV_TX_DONE) {
			done++;
		}
	}
	printf("ok: %u PUTs after the kill completed\n", KILL_N);
	return a_done(k);
}

int mode_kill_survivor_b(struct chk *k)
{
	uint8_t *mainbuf = xalloc(k, KILL_MAIN), *area = xalloc(k, KILL_AREA);
	uint64_t off = 0;
	unsigned i, victim_rx;

	memset(mainbuf, 0, KILL_MAIN);
	if (offer(k, mainbuf, KILL_MAIN, DNP_BUF_PUT_TARGET, area, KILL_AREA) < 0)
		return -EIO;
	if (recv_tag(k, k->peer_id, TAG_DONE, NULL) < 0)
		return -EIO;
	for (i = 0; i < KILL_N; i++) {
		if (app_pattern_check(mainbuf + off, kill_len(i), k->peer_id, k->a.id, i, 9) >= 0) {
			fail(k, "survivor's PUT %u arrived wrong", i);
			break;
		}
		off += kill_len(i);
	}
	if (i == KILL_N)
		printf("ok: the survivor's %u PUTs arrived intact\n", KILL_N);
	victim_rx = drain(k, DNP_EV_RX_PUT) - KILL_N;
	printf("note: about %d PUTs of the victim arrived before it was killed\n", (int)victim_rx);
	return send_tag(k, k->peer_id, TAG_VERDICT, k->fails);
}

/* ---- private-fault ---------------------------------------------------- */

#define PRIV_LEN (1u << 20)
#define PRIV_HOLE (PRIV_LEN / 2) /* offset of the unmapped page */

int mode_private_fault_a(struct chk *k)
{
	uint8_t *src = xalloc(k, PRIV_LEN);
	struct app_msg m;
	struct dnp_event ev;
	int r;

	app_pattern_fill(src, PRIV_LEN, k->a.id, k->peer_id, PRIV_LEN, 11);
	if (take_offer(k, &m) < 0)
		return -EIO;
	r = put_wait(k, src, PRIV_LEN, k->peer, m.c.a, (uint32_t)m.c.b, &ev);
	expect_status(k, "1 MiB PUT over an unmapped page of a private target", r, -EFAULT);
	r = put_wait(k, src, PRIV_LEN / 4, k->peer, m.c.a, (uint32_t)m.c.b, &ev);
	expect_status(k, "PUT into the first quarter of that target", r, 0);
	r = put_wait(k, src, PRIV_LEN, k->peer, m.c.c, (uint32_t)m.c.d, &ev);
	expect_status(k, "1 MiB PUT into a second private target", r, 0);
	return a_done(k);
}

int mode_private_fault_b(struct chk *k)
{
	uint8_t *tgt, *good;
	struct app_ctrl c;
	struct app_msg m;
	uint32_t tkey, gkey;
	unsigned n;

	tgt = mmap(NULL, PRIV_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	good = mmap(NULL, PRIV_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (tgt == MAP_FAILED || good == MAP_FAILED)
		return -ENOMEM;
	memset(tgt, 0, PRIV_LEN);
	memset(good, 0, PRIV_LEN);
	if (reg(k, tgt, PRIV_LEN, DNP_BUF_PUT_TARGET, &tkey) < 0 ||
	    reg(k, good, PRIV_LEN, DNP_BUF_PUT_TARGET, &gkey) < 0)
		return -EIO;
	munmap(tgt + PRIV_HOLE, 4096);
	memset(&c, 0, sizeof(c));
	c.a = (uintptr_t)tgt;
	c.b = tkey;
	c.c = (uintptr_t)good;
	c.d = gkey;
	if (exchange(k, &c, &m) < 0)
		return -EIO;
	if (recv_tag(k, k->peer_id, TAG_DONE, NULL) < 0)
		return -EIO;
	if (app_pattern_check(tgt, PRIV_LEN / 4, k->peer_id, k->a.id, PRIV_LEN, 11) >= 0)
		fail(k, "the PUT into the first quarter did not arrive intact");
	else if (app_pattern_check(good, PRIV_LEN, k->peer_id, k->a.id, PRIV_LEN, 11) >= 0)
		fail(k, "the 1 MiB PUT into the second target did not arrive intact");
	else
		printf("ok: both PUTs that completed arrived intact\n");
	n = drain(k, DNP_EV_RX_PUT);
	if (n != 2)
		fail(k, "%u RX_PUT events, expected 2 (none for the faulted PUT)", n);
	else
		printf("ok: no RX event for the faulted PUT\n");
	return send_tag(k, k->peer_id, TAG_VERDICT, k->fails);
}

/* ---- kill-mid-send ---------------------------------------------------- */

#define MIDSEND_LEN (8u << 20)
#define MIDSEND_SMALL 100000u

/* Submits an 8 MiB SEND whose second half is unmapped, then waits to be killed. */
int mode_kill_send_victim(void)
{
	unsigned port;
	const char *rest;
	struct dnp_coords dst;
	struct dnp_event ev;
	struct app a;
	uint8_t *src;
	int r, fd;

	r = victim_open("kill-send-victim", &a, &fd, &dst, &port, &rest);
	if (r)
		return r;
	src = mmap(NULL, MIDSEND_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED)
		return 1;
	memset(src, 0xdd, MIDSEND_LEN / 2);
	munmap(src + MIDSEND_LEN / 2, MIDSEND_LEN / 2);
	r = dnp_send(a.d, src, MIDSEND_LEN, dst, port, 1, 0);
	if (r < 0) {
		fprintf(stderr, PROG " (victim): send: %s\n", dnp_strerror(r));
		return 1;
	}
	/* Its first half left, then the daemon could read no more: -EFAULT. */
	r = app_wait_completion(&a, 1, &ev);
	if (r < 0 || ev.type != DNP_EV_ERROR || ev.status != -EFAULT) {
		fprintf(stderr, PROG " (victim): the SEND did not stop with -EFAULT\n");
		return 1;
	}
	if (write(fd, "R", 1) != 1)
		return 1;
	for (;;)
		pause();
}

int midsend_a(struct chk *k)
{
	struct app *a = &k->a;
	uint8_t *src = xalloc(k, MIDSEND_SMALL);
	char spec[64];
	struct dnp_event ev;
	uint64_t port2, v;
	int r;
	pid_t pid;

	if (recv_tag(k, k->peer_id, TAG_PORT2, &port2) < 0)
		return -EIO;
	snprintf(spec, sizeof(spec), "%u,%u,%u,%u", k->peer.x, k->peer.y, k->peer.z,
		 (unsigned)port2);
	if (victim_start(k, "kill-send-victim", spec, &pid) == 0)
		victim_kill(k, pid, "victim killed with SIGKILL, its SEND stopped half-way");
	/* B saw the RX_ERROR: our SEND must land in the buffer that came back. */
	if (recv_tag(k, k->peer_id, TAG_RXERR, NULL) < 0)
		return -EIO;
	app_pattern_fill(src, MIDSEND_SMALL, a->id, k->peer_id, 0, 11);
	r = dnp_send(a->d, src, MIDSEND_SMALL, k->peer, (unsigned)port2, 77, 0);
	if (r == 0)
		r = app_wait_completion(a, 77, &ev);
	if (r < 0 || ev.type != DNP_EV_TX_DONE) {
		fail(k, "SEND into the reclaimed buffer: %s", dnp_strerror(r < 0 ? r : ev.status));
		return -EIO;
	}
	printf("ok: our SEND to B's second port completed\n");
	if (recv_tag(k, k->peer_id, TAG_VERDICT, &v) == 0 && v)
		fail(k, "node %u reports %llu failed checks", k->peer_id, (unsigned long long)v);
	return 0;
}

/* Next event of the second session (0 on timeout). */
static int midsend_next(struct dnp *d2, struct dnp_event *ev, int timeout_ms)
{
	return dnp_wait_event(d2, ev, timeout_ms);
}

int midsend_b(struct chk *k)
{
	struct app *a = &k->a;
	struct dnp *d2;
	struct dnp_event ev;
	uint8_t *buf;
	uint32_t key;
	int r;

	r = dnp_open(NULL, &d2);
	if (r < 0) {
		fail(k, "second session: %s", dnp_strerror(r));
		return r;
	}
	buf = dnp_alloc(d2, MIDSEND_LEN);
	if (!buf || dnp_register(d2, buf, MIDSEND_LEN, DNP_BUF_SEND_TARGET, &key) < 0) {
		fail(k, "second session: no SEND buffer");
		dnp_close(d2);
		return -EIO;
	}
	if (send_tag(k, k->peer_id, TAG_PORT2, dnp_port(d2)) < 0) {
		dnp_close(d2);
		return -EIO;
	}
	r = midsend_next(d2, &ev, a->timeout_ms);
	if (r != 1)
		fail(k, "no event for the interrupted SEND: %s", r ? dnp_strerror(r) : "timed out");
	else if (ev.type != DNP_EV_RX_ERROR || ev.status != -ETIMEDOUT || ev.va != (uintptr_t)buf ||
		 ev.len != MIDSEND_LEN)
		app_print_event(PROG, "unexpected", &ev), k->fails++;
	else
		printf("ok: the interrupted SEND ended in one RX_ERROR -ETIMEDOUT for our buffer\n");
	send_tag(k, k->peer_id, TAG_RXERR, 0);
	r = midsend_next(d2, &ev, a->timeout_ms);
	if (r != 1 || ev.type != DNP_EV_RX_SEND || ev.va != (uintptr_t)buf ||
	    ev.len != MIDSEND_SMALL) {
		if (r == 1)
			app_print_event(PROG, "unexpected", &ev);
		fail(k, "A's SEND did not land in the reclaimed buffer");
	} else if (app_pattern_check(buf, MIDSEND_SMALL, k->peer_id, a->id, 0, 11) >= 0) {
		fail(k, "A's SEND arrived with wrong bytes");
	} else {
		printf("ok: the next SEND landed in the reclaimed buffer, bytes verified\n");
	}
	if (midsend_next(d2, &ev, 300) == 1) {
		app_print_event(PROG, "one event too many", &ev);
		k->fails++;
	}
	dnp_close(d2);
	return send_tag(k, k->peer_id, TAG_VERDICT, k->fails);
}

/* ---- slow-drain ------------------------------------------------------- */

#define SLOW_TO_B 12000u /* > the 8192 events a port can hold (ring + engine queue) */
#define SLOW_EVERY 6u    /* every 6th PUT goes to D */
#define SLOW_N (SLOW_TO_B + SLOW_TO_B / (SLOW_EVERY - 1))
#define SLOW_LEN 8u

static int slow_a(struct chk *k, unsigned b_id, unsigned d_id, const char *flag)
{
	struct app *a = &k->a;
	struct dnp_coords b = { 1, 0, 0 }, dc = { 1, 1, 0 };
	uint8_t *src = xalloc(k, (size_t)SLOW_N * SLOW_LEN), *seen = xalloc(k, SLOW_N);
	unsigned issued = 0, done = 0, ok_b = 0, ok_d = 0, overflow = 0, to_b = 0, i;
	uint64_t bva, dva, v;
	uint32_t bkey, dkey;
	struct app_msg m;
	struct dnp_event ev;
	char cnt[32];
	int r;

	memset(seen, 0, SLOW_N);
	for (i = 0; i < SLOW_N; i++)
		app_pattern_fill(src + (size_t)i * SLOW_LEN, SLOW_LEN, a->id, 0, i, 5);
	if (app_ctrl_recv(a, b_id, TAG_ADDR, &m) < 0)
		return -EIO;
	bva = m.c.a;
	bkey = (uint32_t)m.c.b;
	if (app_ctrl_recv(a, d_id, TAG_ADDR, &m) < 0)
		return -EIO;
	dva = m.c.a;
	dkey = (uint32_t)m.c.b;
	while (done < SLOW_N) {
		if (issued < SLOW_N) {
			bool d = issued % SLOW_EVERY == SLOW_EVERY - 1;
			unsigned j = d ? issued / SLOW_EVERY : issued - issued / SLOW_EVERY;

			r = dnp_put(a->d, src + (size_t)issued * SLOW_LEN, SLOW_LEN, d ? dc : b,
				    a->peer_port, (d ? dva : bva) + (uint64_t)j * SLOW_LEN,
				    d ? dkey : bkey, 7000 + issued, DNP_NONBLOCK);
			if (r == 0) {
				to_b += !d;
				issued++;
				continue;
			}
			if (r != -EAGAIN) {
				fail(k, "put %u: %s", issued, dnp_strerror(r));
				return r;
			}
		}
		if (next_completion(k, &ev, done, SLOW_N) < 0)
			return -EIO;
		if (!cookie_once(k, ev.cookie, 7000, SLOW_N, seen))
			continue;
		done++;
		bool to_d = (ev.cookie - 7000) % SLOW_EVERY == SLOW_EVERY - 1;
		if (ev.type == DNP_EV_TX_DONE) {
			ok_b += !to_d;
			ok_d += to_d;
		} else if (!to_d && ev.status == -EOVERFLOW) {
			overflow++;
		} else {
			app_print_event(PROG, "slow-drain", &ev);
			fail(k, "PUT %llu to %s failed", (unsigned long long)ev.cookie - 7000,
			     to_d ? "D (transit through B)" : "B");
		}
	}
	printf("ok: %u PUTs completed, each once: to B %u ok + %u -EOVERFLOW of %u, "
	       "to D (through B) %u ok of %u\n",
	       SLOW_N, ok_b, overflow, to_b, ok_d, SLOW_N - to_b);
	if (!overflow)
		fail(k, "no PUT to B failed with -EOVERFLOW: its queues never filled");
	if (ok_d != SLOW_N - to_b)
		fail(k, "transit PUTs to D: %u of %u completed", ok_d, SLOW_N - to_b);
	snprintf(cnt, sizeof(cnt), "%u\n", ok_b);
	r = drill_touch(flag, "", cnt); /* B resumes and checks its RX events */
	if (r < 0)
		fail(k, "cannot create %s: %s", flag, strerror(-r));
	send_tag(k, d_id, TAG_SLOW, SLOW_N - to_b);
	for (i = 0; i < 2; i++) {
		unsigned from = i ? d_id : b_id;
		if (recv_tag(k, from, TAG_VERDICT, &v) == 0 && v)
			fail(k, "node %u reports %llu failed checks", from, (unsigned long long)v);
	}
	return 0;
}

/* B or D: registers a target, tells A, then counts (and checks) its RX_PUTs. */
static int slow_target(struct chk *k, unsigned a_id, bool is_b, const char *flag)
{
	struct app *a = &k->a;
	size_t len = (size_t)SLOW_N * SLOW_LEN;
	uint8_t *dst = xalloc(k, len);
	uint64_t base = (uintptr_t)dst, want;
	struct dnp_event ev;
	struct app_ctrl c;
	unsigned rx = 0;
	uint32_t key;
	char buf[32] = "";

	memset(dst, 0, len);
	if (reg(k, dst, len, DNP_BUF_PUT_TARGET, &key) < 0)
		return -EIO;
	memset(&c, 0, sizeof(c));
	c.tag = TAG_ADDR;
	c.a = base;
	c.b = key;
	if (app_ctrl_send(a, a_id, &c) < 0) {
		fail(k, "cannot send the key to node %u", a_id);
		return -EIO;
	}
	if (is_b) {
		/* The slow application: no event is taken until A is done. */
		FILE *f = NULL;
		for (unsigned t = 0; t < (unsigned)a->timeout_ms && !f; t++) {
			f = fopen(flag, "r");
			if (!f)
				usleep(1000);
		}
		if (!f || !fgets(buf, sizeof(buf), f)) {
			fail(k, "A never said it was done (%s)", flag);
			if (f)
				fclose(f);
			return -EIO;
		}
		fclose(f);
		buf[strcspn(buf, "\n")] = 0;
		if (dnp_parse_u64(buf, &want)) {
			fail(k, "%s holds '%s', not a count", flag, buf);
			return -EIO;
		}
	} else if (recv_tag(k, a_id, TAG_SLOW, &want) < 0) {
		return -EIO;
	}
	while (rx < want && app_next_event(a, &ev, a->timeout_ms) == 1) {
		if (ev.type != DNP_EV_RX_PUT)
			continue;
		if (ev.va < base || ev.va + ev.len > base + len || ev.len != SLOW_LEN) {
			app_print_event(PROG, "unexpected RX_PUT", &ev);
			k->fails++;
			continue;
		}
		rx++;
	}
	/* exactly once: nothing more is queued (a failed PUT has no RX event) */
	while (app_next_event(a, &ev, 200) == 1)
		if (ev.type == DNP_EV_RX_PUT)
			fail(k, "an RX_PUT beyond the %llu PUTs A saw completed",
			     (unsigned long long)want);
	if (rx != want)
		fail(k, "%u RX_PUT events, expected %llu", rx, (unsigned long long)want);
	else
		printf("ok: %s got exactly the %u RX_PUT events of the PUTs that completed\n",
		       is_b ? "the slow application" : "the transit target", rx);
	return send_tag(k, a_id, TAG_VERDICT, k->fails);
}

int mode_slow_drain(struct chk *k, const char *flag)
{
	struct app *a = &k->a;
	struct dnp_coords o = { 0, 0, 0 }, b = { 1, 0, 0 }, d = { 1, 1, 0 };

	if (a->dims.x < 2 || a->dims.y < 2) {
		fprintf(stderr, PROG ": slow-drain needs a torus of at least 2x2\n");
		return -EINVAL;
	}
	if (app_coords_eq(a->self, o))
		return slow_a(k, app_id_of(a, b), app_id_of(a, d), flag);
	if (app_coords_eq(a->self, b) || app_coords_eq(a->self, d))
		return slow_target(k, app_id_of(a, o), app_coords_eq(a->self, b), flag);
	return 0;
}
