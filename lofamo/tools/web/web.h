/* SPDX-License-Identifier: MIT */
/*
 * web — the supervisor's live fault map over HTTP (dnp-supervisor --http).
 *
 * Serves two things, read-only: the page (GET /, plain HTML, SVG and
 * JavaScript built into the program, no external resource) and the latest
 * picture (GET /picture.json, the JSON of dnpctl status --json). The page
 * polls the picture and draws the torus plane by plane.
 *
 * HTTP is libmicrohttpd's, in its own thread. That thread never touches the
 * supervisor's state: the supervisor's loop renders the picture and hands a
 * copy over with dnp_web_publish(), and the HTTP thread serves the newest
 * copy. dnp_web_wanted() tells the loop whether anybody asked lately, so a
 * supervisor nobody watches renders nothing. Everything from the network is
 * untrusted: only GET and HEAD of the two paths are answered (405 and 404
 * otherwise), request bodies are refused, connections are few and time out.
 *
 * Threads: create, publish, wanted and destroy from one thread (the
 * supervisor's loop); the HTTP thread is internal.
 */
#ifndef DNP_WEB_H
#define DNP_WEB_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dnp_web;

/*
 * dnp_web_create() - listens on addr (port 0: any free port) and starts the
 * HTTP thread. Errors: -EINVAL (addr NULL or not AF_INET), -ENOMEM,
 * -EADDRINUSE (the address cannot be bound: in use, not local, or no
 * permission), -ENOTSUP (built without libmicrohttpd).
 */
int dnp_web_create(const struct sockaddr_in *addr, struct dnp_web **out);

/* dnp_web_port() - the port it listens on (host byte order). */
unsigned dnp_web_port(const struct dnp_web *w);

/* dnp_web_destroy() - stops the thread and closes every connection. NULL is fine. */
void dnp_web_destroy(struct dnp_web *w);

/*
 * dnp_web_wanted() - true when a client asked for the picture in the last
 * 'window_ms' of the caller's monotonic clock, or never got one yet.
 */
bool dnp_web_wanted(struct dnp_web *w, uint64_t now_ms, uint64_t window_ms);

/*
 * dnp_web_publish() - the picture the next requests get: len bytes of JSON,
 * copied. Errors: -ENOMEM (the previous picture stays).
 */
int dnp_web_publish(struct dnp_web *w, const char *json, size_t len);

/* The page's bytes (built from faultmap.html), for tests. */
extern const char dnp_web_page[];
extern const size_t dnp_web_page_len;

#endif /* DNP_WEB_H */
