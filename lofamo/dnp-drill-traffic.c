/* SPDX-License-Identifier: MIT */
/*
 * dnp-drill-traffic — the traffic of a LO|FA|MO fault drill: run on every
 * node by dnp-run (tests/integration/drill.sh), it PUTs 4 KiB messages to
 * every other node, round robin, with up to WINDOW commands outstanding,
 * until the file DIR/drill.done appears. It goes in rounds (one PUT to
 * every other node) that start at most every $DRILL_ROUND_MS ms (default
 * ROUND_MS; 0: as fast as the window allows): on one machine eight nodes'
 * traffic at full speed left the fault managers a sliver of two CPUs, while
 * the drill needs commands in flight at the fault, not a saturated torus.
 * Then it waits up to the daemon's command timeout ($DRILL_CMD_TIMEOUT_MS)
 * plus DRAIN_MS for the completions still due and writes
 * "ok N failed M unfinished U" to DIR/traffic-<id>.out. Every command must
 * end in exactly one completion event: a completion for a cookie that is not
 * outstanding counts as a duplicate (and fails the run).
 *
 * Buffer addresses and keys are exchanged out of band, through files
 * DIR/traffic-<id>.key (the drill is about faults, not about set-up).
 * Exit status: 0, or 1 (a bad $DRILL_ROUND_MS, set-up failed, or a duplicate
 * completion).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dnp.h"

#define MSG 4096u
#define WINDOW 32u
#define DRAIN_MS 2000u /* plus $DRILL_CMD_TIMEOUT_MS: a lost completion times out first */
#define MAX_NODES 64u
#define ROUND_MS 5u /* a round of n - 1 PUTs per 5 ms: 1400 PUTs/s on a 2x2x2 torus */

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

static bool exists(const char *p)
{
	return access(p, F_OK) == 0;
}

int main(void)
{
	const char *sock = getenv("DNP_SOCKET");
	char dir[4096], path[4200];
	struct dnp *d;
	struct dnp_coords self, dims;
	uint64_t peer_va[MAX_NODES];
	uint32_t peer_key[MAX_NODES], key;
	uint8_t out_cookie[WINDOW] = { 0 }; /* 1: outstanding */
	uint64_t ok = 0, failed = 0, dup = 0, outstanding = 0, issued = 0, t_stop = 0;
	unsigned n, id, next = 0;
	uint8_t *rbuf, *sbuf;
	FILE *f;
	const char *cto = getenv("DRILL_CMD_TIMEOUT_MS");
	uint64_t drain = DRAIN_MS + (cto ? strtoull(cto, NULL, 10) : 30000u);
	const char *rms = getenv("DRILL_ROUND_MS");
	uint64_t round_ms = ROUND_MS, t_round = 0;
	unsigned round_left = 0;
	int r;

	if (rms) {
		char *end;

		errno = 0;
		round_ms = strtoull(rms, &end, 10);
		if (!*rms || *end || errno || round_ms > 60000) {
			fprintf(stderr, "dnp-drill-traffic: DRILL_ROUND_MS '%s' is not 0..60000\n",
				rms);
			return 1;
		}
	}

	if (!sock || strlen(sock) >= sizeof(dir)) {
		fprintf(stderr, "dnp-drill-traffic: DNP_SOCKET not set\n");
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s", sock);
	*strrchr(dir, '/') = 0;
	r = dnp_open(NULL, &d);
	if (r) {
		fprintf(stderr, "dnp-drill-traffic: dnp_open: %s\n", dnp_strerror(r));
		return 1;
	}
	dnp_self(d, &self, &dims);
	n = dims.x * dims.y * dims.z;
	id = self.x + dims.x * (self.y + dims.y * self.z);
	if (n > MAX_NODES)
		return 1;
	rbuf = dnp_alloc(d, (size_t)MSG * n);
	sbuf = dnp_alloc(d, MSG);
	if (!rbuf || !sbuf || dnp_register(d, rbuf, (size_t)MSG * n, DNP_BUF_PUT_TARGET, &key))
		return 1;
	memset(sbuf, (int)id, MSG);
	snprintf(path, sizeof(path), "%s/traffic-%u.key.tmp", dir, id);
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%" PRIu64 " %u %u\n", (uint64_t)(uintptr_t)rbuf, key, dnp_port(d));
	fclose(f);
	{
		char fin[4200];

		snprintf(fin, sizeof(fin), "%s/traffic-%u.key", dir, id);
		rename(path, fin);
	}
	for (unsigned p = 0; p < n; p++) {
		uint64_t t0 = ms_now();
		unsigned port;

		snprintf(path, sizeof(path), "%s/traffic-%u.key", dir, p);
		while (!exists(path) && ms_now() - t0 < 20000)
			usleep(10000);
		f = fopen(path, "r");
		if (!f || fscanf(f, "%" SCNu64 " %u %u", &peer_va[p], &peer_key[p], &port) != 3) {
			fprintf(stderr, "dnp-drill-traffic: no key from node %u\n", p);
			return 1;
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/drill.done", dir);
	for (;;) {
		bool stop = t_stop || exists(path);
		struct dnp_event ev[64];

		/* issue while the window has room and the drill goes on */
		while (!stop && outstanding < WINDOW && n > 1) {
			unsigned slot = 0, p = next % n;
			struct dnp_coords dst;

			if (round_ms && !round_left) {
				uint64_t now = ms_now();

				if (now - t_round < round_ms)
					break;
				t_round = now;
				round_left = n - 1;
			}
			if (p == id) {
				next++;
				continue;
			}
			while (out_cookie[slot])
				slot++;
			dst.x = p % dims.x;
			dst.y = (p / dims.x) % dims.y;
			dst.z = p / (dims.x * dims.y);
			r = dnp_put(d, sbuf, MSG, dst, 0, peer_va[p] + (uint64_t)MSG * id,
				    peer_key[p], slot, DNP_NONBLOCK);
			if (r == -EAGAIN)
				break;
			if (r) { /* refused before it was accepted: -EIO, our daemon is gone */
				stop = true;
				break;
			}
			next++;
			if (round_left)
				round_left--;
			out_cookie[slot] = 1;
			outstanding++;
			issued++;
		}
		r = dnp_poll_events(d, ev, 64);
		for (int i = 0; i < r; i++) {
			if (ev[i].type != DNP_EV_TX_DONE && ev[i].type != DNP_EV_ERROR)
				continue;
			if (ev[i].cookie >= WINDOW || !out_cookie[ev[i].cookie]) {
				dup++;
				continue;
			}
			out_cookie[ev[i].cookie] = 0;
			outstanding--;
			if (ev[i].type == DNP_EV_TX_DONE)
				ok++;
			else
				failed++;
		}
		if (r < 0)
			break; /* our daemon is gone */
		if (stop) {
			if (!t_stop)
				t_stop = ms_now();
			if (!outstanding || ms_now() - t_stop > drain)
				break;
			usleep(1000);
			continue;
		}
		if (r == 0)
			usleep(round_ms ? 1000 : 200);
	}
	snprintf(path, sizeof(path), "%s/traffic-%u.out", dir, id);
	f = fopen(path, "w");
	if (f) {
		fprintf(f,
			"ok %" PRIu64 " failed %" PRIu64 " unfinished %" PRIu64 " dup %" PRIu64
			"\n",
			ok, failed, outstanding, dup);
		fclose(f);
	}
	dnp_close(d);
	return dup ? 1 : 0;
}
