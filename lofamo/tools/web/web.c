/* SPDX-License-Identifier: MIT */
/*
 * web.c — the live fault map's HTTP side (web.h states the contract).
 *
 * libmicrohttpd runs its own polling thread; the only state it shares with
 * the supervisor's loop is the published picture (under a mutex, swapped
 * whole) and a request counter (atomic).
 */
#include "web.h"

#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define WEB_MAX_CONNECTIONS 16
#define WEB_TIMEOUT_S 10

struct dnp_web {
	struct MHD_Daemon *mhd;
	pthread_mutex_t lock; /* guards json, json_len */
	char *json;
	size_t json_len;
	atomic_uint_fast64_t asks; /* picture requests served or refused */
	uint64_t seen_asks;        /* loop side: asks at the last look */
	uint64_t last_ask_ms;      /* loop side: when asks last moved */
	bool published;            /* loop side */
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
			     const void *body, size_t len)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ok;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	return reply(c, status, "text/plain; charset=utf-8", text, strlen(text));
}

static enum MHD_Result serve_picture(struct dnp_web *w, struct MHD_Connection *c)
{
	enum MHD_Result ok;

	atomic_fetch_add_explicit(&w->asks, 1, memory_order_relaxed);
	pthread_mutex_lock(&w->lock);
	if (w->json)
		ok = reply(c, MHD_HTTP_OK, "application/json", w->json, w->json_len);
	else
		ok = reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "no picture yet\n");
	pthread_mutex_unlock(&w->lock);
	return ok;
}

/* One call per request once its headers are in (a body, if any, is refused). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_len, void **req)
{
	struct dnp_web *w = cls;

	(void)version;
	(void)upload;
	if (*upload_len)
		return MHD_NO; /* a body on a read-only server: drop the connection */
	*req = NULL;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "read-only: GET or HEAD\n");
	if (!strcmp(url, "/") || !strcmp(url, "/index.html"))
		return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", dnp_web_page,
			     dnp_web_page_len);
	if (!strcmp(url, "/picture.json"))
		return serve_picture(w, c);
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: / and /picture.json only\n");
}

int dnp_web_create(const struct sockaddr_in *addr, struct dnp_web **out)
{
	struct dnp_web *w;

	if (!addr || addr->sin_family != AF_INET)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&w->lock, NULL);
	w->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL,
				  NULL, on_request, w, MHD_OPTION_SOCK_ADDR, addr,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)WEB_MAX_CONNECTIONS,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)WEB_TIMEOUT_S,
				  MHD_OPTION_END);
	if (!w->mhd) {
		pthread_mutex_destroy(&w->lock);
		free(w);
		return -EADDRINUSE;
	}
	*out = w;
	return 0;
}

unsigned dnp_web_port(const struct dnp_web *w)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(w->mhd, MHD_DAEMON_INFO_BIND_PORT);

	return i ? i->port : 0;
}

void dnp_web_destroy(struct dnp_web *w)
{
	if (!w)
		return;
	MHD_stop_daemon(w->mhd);
	pthread_mutex_destroy(&w->lock);
	free(w->json);
	free(w);
}

bool dnp_web_wanted(struct dnp_web *w, uint64_t now_ms, uint64_t window_ms)
{
	uint64_t asks = atomic_load_explicit(&w->asks, memory_order_relaxed);

	if (asks != w->seen_asks) {
		w->seen_asks = asks;
		w->last_ask_ms = now_ms;
	}
	return !w->published || now_ms - w->last_ask_ms <= window_ms;
}

int dnp_web_publish(struct dnp_web *w, const char *json, size_t len)
{
	char *copy = malloc(len ? len : 1), *old;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, json, len);
	pthread_mutex_lock(&w->lock);
	old = w->json;
	w->json = copy;
	w->json_len = len;
	pthread_mutex_unlock(&w->lock);
	free(old);
	w->published = true;
	return 0;
}
