/*
 * The kernel SCTP carrier (src/llp/sctp_kern.c) where this test runs.
 * Without SCTP in the kernel (socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP)
 * fails, as on a host that has no sctp module and cannot load one), the
 * stack must refuse to start with -EPROTONOSUPPORT and say why, every
 * time (no stack left half made, no silent fallback to another one).
 * With SCTP, the whole script of tests/interop/sctp_check.h runs over
 * the loopback, server and client in this process; the same script runs
 * in the interop guest (tests/interop/test_sctp_kernel.sh).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uiwarp/uiwarp.h>

#include "interop/sctp_check.h"
#include "llp/sctp.h"

static bool kernel_has_sctp(int *err)
{
	int fd = socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP);

	if (fd < 0) {
		*err = errno;
		return false;
	}
	close(fd);
	return true;
}

static void test_kernel_stack(void **state)
{
	struct uiw_sctp_stack *s = NULL;
	int err = 0, i;

	if (kernel_has_sctp(&err)) {
		struct sctp_check_opts o = {
			.kind = UIW_SCTP_KERNEL,
			.server = true,
			.client = true,
			.timeout_s = 60,
			.out = stdout,
		};

		assert_int_equal(sctp_check_parse_addr("127.0.0.1:0",
						       &o.listen_addr), 0);
		printf("# the kernel has SCTP: the whole script over the "
		       "loopback\n");
		assert_int_equal(sctp_check_run(&o), SCTP_CHECK_PASS);
		return;
	}
	printf("# socket(IPPROTO_SCTP): %s: the stack must refuse\n",
	       strerror(err));
	for (i = 0; i < 2; i++) {
		int r = uiw_sctp_stack_get(UIW_SCTP_KERNEL, NULL, &s);
		const char *msg = uiw_last_error();

		printf("# stack_get: %d: %s\n", r, msg);
		assert_int_equal(r, -EPROTONOSUPPORT);
		assert_non_null(strstr(msg, "has no SCTP"));
		assert_non_null(strstr(msg, "IPPROTO_SCTP"));
		assert_non_null(strstr(msg, strerror(err)));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_stack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
