/* The send-buffer choice of the TCP LLP (uiw_tcp_sndbuf_want): to
 * another host SO_SNDBUF only where it keeps FPDUs whole or loses
 * nothing to the kernel's autotuning; to this host a buffer of a few
 * FPDUs, or room for a 512 KiB message where runs of FPDUs go as one
 * message (uiw_tcp_peer_local tells which host). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "llp/tcp.h"

#define MiB (1L << 20)
#define STOCK_WMEM_MAX 212992L      /* Debian's net.core.wmem_max */
#define LO_EMSS 65484               /* 127.0.0.1: MTU 65536 */

/* wmem_max raised to tcp_wmem[2]: the 4 MiB set gives 8 MiB at once,
 * more than autotuning would ever reach. */
static void test_raised_wmem_max_sets_bulk(void **state)
{
	(void)state;
	assert_int_equal(uiw_tcp_sndbuf_want(3939840, LO_EMSS, false, false, 4 * MiB,
					     4 * MiB), 4 * MiB);
	assert_int_equal(uiw_tcp_sndbuf_want(87040, 1448, false, false, 4 * MiB, 4 * MiB),
			 4 * MiB);
	/* already as large as the grant would be: nothing to gain */
	assert_int_equal(uiw_tcp_sndbuf_want(8 * MiB, LO_EMSS, false, false, 4 * MiB,
					     4 * MiB), 0);
}

/* A stock system: setting would cap the buffer at 416 KiB for good,
 * below autotuning's 4 MiB, so the kernel keeps its own sizing as long
 * as whole FPDUs fit. */
static void test_stock_wmem_max_keeps_autotuning(void **state)
{
	(void)state;
	assert_int_equal(uiw_tcp_sndbuf_want(3939840, LO_EMSS, false, false,
					     STOCK_WMEM_MAX, 4 * MiB), 0);
	assert_int_equal(uiw_tcp_sndbuf_want(87040, 1448, false, false, STOCK_WMEM_MAX,
					     4 * MiB), 0);
	/* tcp_wmem[2] above the grant of a raised wmem_max: autotuning */
	assert_int_equal(uiw_tcp_sndbuf_want(87040, 1448, false, false, 4 * MiB,
					     16 * MiB), 0);
}

/* A buffer too small for TCP_SNDBUF_FPDUS whole FPDUs is always grown,
 * as far as wmem_max lets it. */
static void test_small_buffer_grows(void **state)
{
	(void)state;
	/* 4 FPDUs of 65484 need 261936 (the kernel reports twice that) */
	assert_int_equal(uiw_tcp_sndbuf_want(16384, LO_EMSS, false, false, STOCK_WMEM_MAX,
					     4 * MiB), 261936);
	assert_int_equal(uiw_tcp_sndbuf_want(16384, LO_EMSS, false, false, 1 * MiB,
					     4 * MiB), 1 * MiB);
	assert_int_equal(uiw_tcp_sndbuf_want(16384, LO_EMSS, false, false, 8 * MiB,
					     4 * MiB), 4 * MiB);
	/* just enough: left alone */
	assert_int_equal(uiw_tcp_sndbuf_want(2 * 261936, LO_EMSS, false, false,
					     STOCK_WMEM_MAX, 4 * MiB), 0);
}

/* Sysctls that could not be read (-1): only whole FPDUs count. */
static void test_unknown_sysctls(void **state)
{
	(void)state;
	assert_int_equal(uiw_tcp_sndbuf_want(3939840, LO_EMSS, false, false, -1, -1), 0);
	assert_int_equal(uiw_tcp_sndbuf_want(16384, LO_EMSS, false, false, -1, -1),
			 4 * MiB);
	/* nothing known at all (getsockopt failed too): left alone */
	assert_int_equal(uiw_tcp_sndbuf_want(0, 0, false, false, -1, -1), 0);
}

/* To this host the buffer holds the FPDUs and 256 KiB, whatever
 * autotuning chose, as far as wmem_max lets it. */
static void test_local_peer_small_buffer(void **state)
{
	(void)state;
	assert_int_equal(uiw_tcp_sndbuf_want(3939840, LO_EMSS, true, false, 4 * MiB,
					     4 * MiB), 256 << 10);
	assert_int_equal(uiw_tcp_sndbuf_want(3939840, LO_EMSS, true, false,
					     STOCK_WMEM_MAX, 4 * MiB), 261936);
	assert_int_equal(uiw_tcp_sndbuf_want(3939840, LO_EMSS, true, false, -1, -1),
			 256 << 10);
	/* a loopback with a small MTU: still 256 KiB */
	assert_int_equal(uiw_tcp_sndbuf_want(87040, 1448, true, false, 4 * MiB,
					     4 * MiB), 256 << 10);
	/* already what the kernel would grant: left alone */
	assert_int_equal(uiw_tcp_sndbuf_want(512 << 10, LO_EMSS, true, false,
					     4 * MiB, 4 * MiB), 0);
}

/* To this host with runs of FPDUs in one message (alignment given up):
 * room for a 512 KiB message whole, 512 KiB asked for (a 1 MiB grant);
 * where wmem_max does not allow that, the kernel's autotuning. */
static void test_local_peer_runs(void **state)
{
	(void)state;
	assert_int_equal(uiw_tcp_sndbuf_want(3939840, LO_EMSS, true, true,
					     4 * MiB, 4 * MiB), 512 << 10);
	assert_int_equal(uiw_tcp_sndbuf_want(16384, LO_EMSS, true, true, -1,
					     -1), 512 << 10);
	assert_int_equal(uiw_tcp_sndbuf_want(3939840, LO_EMSS, true, true,
					     STOCK_WMEM_MAX, 4 * MiB), 0);
	/* already what the kernel would grant: left alone */
	assert_int_equal(uiw_tcp_sndbuf_want(1 * MiB, LO_EMSS, true, true,
					     4 * MiB, 4 * MiB), 0);
	/* to another host runs change nothing */
	assert_int_equal(uiw_tcp_sndbuf_want(87040, 1448, false, true, 4 * MiB,
					     4 * MiB),
			 uiw_tcp_sndbuf_want(87040, 1448, false, false, 4 * MiB,
					     4 * MiB));
}

/* Connects a TCP pair over addr (port 0: any); returns the client. */
static int pair(int family, const char *addr, int *srv, int *lst)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int l, c;

	memset(&ss, 0, sizeof(ss));
	ss.ss_family = (sa_family_t)family;
	if (family == AF_INET)
		assert_int_equal(inet_pton(AF_INET, addr,
			&((struct sockaddr_in *)&ss)->sin_addr), 1);
	else
		assert_int_equal(inet_pton(AF_INET6, addr,
			&((struct sockaddr_in6 *)&ss)->sin6_addr), 1);
	l = socket(family, SOCK_STREAM, 0);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&ss, family == AF_INET ?
			      sizeof(struct sockaddr_in) :
			      sizeof(struct sockaddr_in6)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&ss, &sl), 0);
	c = socket(family, SOCK_STREAM, 0);
	assert_true(c >= 0);
	assert_int_equal(connect(c, (struct sockaddr *)&ss, sl), 0);
	*srv = accept(l, NULL, NULL);
	assert_true(*srv >= 0);
	*lst = l;
	return c;
}

/* Loopback peers are local, on both ends; a socket without a peer is
 * not. */
static void test_peer_local(void **state)
{
	static const struct { int family; const char *addr; } lo[] = {
		{ AF_INET, "127.0.0.1" }, { AF_INET6, "::1" },
	};
	int c, s, l, u;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lo) / sizeof(lo[0]); i++) {
		c = pair(lo[i].family, lo[i].addr, &s, &l);
		assert_true(uiw_tcp_peer_local(c));
		assert_true(uiw_tcp_peer_local(s));
		close(c);
		close(s);
		close(l);
	}
	u = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(u >= 0);
	assert_false(uiw_tcp_peer_local(u));
	close(u);
	assert_false(uiw_tcp_peer_local(-1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_raised_wmem_max_sets_bulk),
		cmocka_unit_test(test_stock_wmem_max_keeps_autotuning),
		cmocka_unit_test(test_small_buffer_grows),
		cmocka_unit_test(test_unknown_sysctls),
		cmocka_unit_test(test_local_peer_small_buffer),
		cmocka_unit_test(test_local_peer_runs),
		cmocka_unit_test(test_peer_local),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
