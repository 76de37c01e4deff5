/* SPDX-License-Identifier: MIT */
/*
 * test_web.c — the fault map's HTTP side (lofamo/web/web.h) against a plain
 * socket client on loopback: the page, the published picture, nothing before
 * the first picture, read-only methods, unknown paths, and "wanted".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "web.h"

/* Sends one request and reads the whole answer (the server closes it). */
static size_t http(unsigned port, const char *req, char *buf, size_t cap)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t len = 0;
	ssize_t n;

	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(fd);
	return len;
}

static struct dnp_web *start(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct dnp_web *w = NULL;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(dnp_web_create(&sa, &w), 0);
	assert_true(dnp_web_port(w) > 0);
	return w;
}

#define GET(path) "GET " path " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

static void test_web_page_and_picture(void **state)
{
	static char buf[1 << 17];
	struct dnp_web *w = start();
	unsigned port = dnp_web_port(w);
	const char *json = "{\"torus\":[2,1,1],\"nodes\":[]}";

	(void)state;
	http(port, GET("/"), buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 200"));
	assert_non_null(strstr(buf, "text/html"));
	assert_non_null(strstr(buf, "LO|FA|MO fault map"));
	assert_true(dnp_web_page_len > 1000);

	/* Before the first picture: 503, and the loop is told to render. */
	http(port, GET("/picture.json"), buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 503"));
	assert_true(dnp_web_wanted(w, 1000, 5000));

	assert_int_equal(dnp_web_publish(w, json, strlen(json)), 0);
	http(port, GET("/picture.json"), buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 200"));
	assert_non_null(strstr(buf, "application/json"));
	assert_non_null(strstr(buf, "no-store"));
	assert_non_null(strstr(buf, json));

	/* A newer picture replaces the old one whole. */
	assert_int_equal(dnp_web_publish(w, "{\"n\":2}", 7), 0);
	http(port, GET("/picture.json"), buf, sizeof(buf));
	assert_non_null(strstr(buf, "{\"n\":2}"));
	assert_null(strstr(buf, json));
	dnp_web_destroy(w);
}

static void test_web_refuses(void **state)
{
	static char buf[8192];
	struct dnp_web *w = start();
	unsigned port = dnp_web_port(w);

	(void)state;
	http(port, GET("/etc/passwd"), buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 404"));
	http(port, GET("/../picture.json"), buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 404"));
	http(port, "DELETE /picture.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", buf,
	     sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 405"));
	assert_non_null(strstr(buf, "GET, HEAD"));
	/* A body on a read-only server: dropped, no 200. */
	http(port,
	     "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
	     buf, sizeof(buf));
	assert_null(strstr(buf, "HTTP/1.1 200"));
	/* Garbage is not HTTP: answered with an error or dropped, and the server lives on. */
	http(port, "\x01\x02garbage\r\n\r\n", buf, sizeof(buf));
	assert_null(strstr(buf, "HTTP/1.1 200"));
	http(port, GET("/"), buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 200"));
	dnp_web_destroy(w);
}

static void test_web_wanted(void **state)
{
	static char buf[8192];
	struct dnp_web *w = start();

	(void)state;
	assert_true(dnp_web_wanted(w, 0, 5000)); /* nothing published yet */
	assert_int_equal(dnp_web_publish(w, "{}", 2), 0);
	/* Published, nobody asked since: not wanted once the window has passed. */
	assert_false(dnp_web_wanted(w, 10000, 5000));
	http(dnp_web_port(w), GET("/picture.json"), buf, sizeof(buf));
	assert_true(dnp_web_wanted(w, 20000, 5000));
	assert_true(dnp_web_wanted(w, 24000, 5000));
	assert_false(dnp_web_wanted(w, 25001, 5000));
	dnp_web_destroy(w);
}

static void test_web_bad_address(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET6 };
	struct dnp_web *w = NULL;

	(void)state;
	assert_int_equal(dnp_web_create(&sa, &w), -EINVAL);
	assert_int_equal(dnp_web_create(NULL, &w), -EINVAL);
	/* An address of no local interface cannot be bound. */
	sa.sin_family = AF_INET;
	sa.sin_port = htons(1);
	inet_pton(AF_INET, "192.0.2.1", &sa.sin_addr);
	assert_int_equal(dnp_web_create(&sa, &w), -EADDRINUSE);
	assert_null(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_web_page_and_picture),
		cmocka_unit_test(test_web_refuses),
		cmocka_unit_test(test_web_wanted),
		cmocka_unit_test(test_web_bad_address),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
