/* SPDX-License-Identifier: MIT */
/*
 * web_none.c — dnp-supervisor built without libmicrohttpd: --http is refused
 * with -ENOTSUP (the contract is web.h's).
 */
#include "web.h"

#include <errno.h>

const char dnp_web_page[] = "";
const size_t dnp_web_page_len = 0;

int dnp_web_create(const struct sockaddr_in *addr, struct dnp_web **out)
{
	(void)addr;
	(void)out;
	return -ENOTSUP;
}

unsigned dnp_web_port(const struct dnp_web *w)
{
	(void)w;
	return 0;
}

void dnp_web_destroy(struct dnp_web *w)
{
	(void)w;
}

bool dnp_web_wanted(struct dnp_web *w, uint64_t now_ms, uint64_t window_ms)
{
	(void)w;
	(void)now_ms;
	(void)window_ms;
	return false;
}

int dnp_web_publish(struct dnp_web *w, const char *json, size_t len)
{
	(void)w;
	(void)json;
	(void)len;
	return -ENOTSUP;
}
