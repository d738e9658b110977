/*
 * Driving uiwarp-faultproxy from the tests: see fp_tool.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fp_tool.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct tool the_tool = { .pid = -1, .in = -1, .out = -1 };

const char *tool_path(void)
{
#ifdef UIW_FAULTPROXY_TOOL
	return UIW_FAULTPROXY_TOOL;
#else
	return getenv("UIW_FAULTPROXY_TOOL");
#endif
}

void tool_spawn(struct tool *t, const char *const *args)
{
	const char *argv[16];
	int pin[2], pout[2], n = 0;

	argv[n++] = tool_path();
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	assert_int_equal(pipe2(pin, O_CLOEXEC), 0);
	assert_int_equal(pipe2(pout, O_CLOEXEC), 0);
	t->pid = fork();
	assert_true(t->pid >= 0);
	if (t->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	t->in = pin[1];
	t->out = pout[0];
	t->have = 0;
}

int tool_line(struct tool *t, char *line, size_t cap, int ms)
{
	int64_t end = now_ms() + ms;

	for (;;) {
		char *nl = memchr(t->buf, '\n', t->have);
		struct pollfd p = { .fd = t->out, .events = POLLIN };
		int64_t left = end - now_ms();
		ssize_t r;

		if (nl) {
			size_t len = (size_t)(nl - t->buf);

			snprintf(line, cap, "%.*s", (int)len, t->buf);
			t->have -= len + 1;
			memmove(t->buf, nl + 1, t->have);
			return 0;
		}
		if (left <= 0 || t->have == sizeof(t->buf) ||
		    poll(&p, 1, (int)left) != 1)
			return -1;
		r = read(t->out, t->buf + t->have, sizeof(t->buf) - t->have);
		if (r <= 0)
			return -1;
		t->have += (size_t)r;
	}
}

void tool_cmd(struct tool *t, const char *cmd, char *reply,
		     size_t cap)
{
	size_t len = strlen(cmd);

	assert_int_equal(write(t->in, cmd, len), (ssize_t)len);
	assert_int_equal(write(t->in, "\n", 1), 1);
	assert_int_equal(tool_line(t, reply, cap, TOOL_TMO_MS), 0);
}

void tool_ok(struct tool *t, const char *cmd)
{
	char reply[1024];

	tool_cmd(t, cmd, reply, sizeof(reply));
	if (strcmp(reply, "ok") != 0)
		fail_msg("%s: %s", cmd, reply);
}

void tool_refused(struct tool *t, const char *cmd)
{
	char reply[1024];

	tool_cmd(t, cmd, reply, sizeof(reply));
	if (strncmp(reply, "error ", 6) != 0)
		fail_msg("%s: %s, not an error", cmd, reply);
}

int tool_exit(struct tool *t, int ms)
{
	char line[256];
	int status;

	while (tool_line(t, line, sizeof(line), ms) == 0)
		;
	if (waitpid(t->pid, &status, WNOHANG) != t->pid) {
		/* Output closed: the exit is a moment away at most. */
		struct pollfd p = { .fd = t->out, .events = POLLIN };

		if (poll(&p, 1, ms) < 0 ||
		    waitpid(t->pid, &status, 0) != t->pid)
			return -1;
	}
	t->pid = -1;
	close(t->in);
	close(t->out);
	t->in = t->out = -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int tool_teardown(void **state)
{
	struct tool *t = &the_tool;

	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
	}
	if (t->in >= 0)
		close(t->in);
	if (t->out >= 0)
		close(t->out);
	t->pid = t->in = t->out = -1;
	return 0;
}

uint16_t tool_start(struct tool *t, const char *const *args)
{
	char line[256];
	unsigned int port = 0;

	if (tool_path() == NULL || access(tool_path(), X_OK) != 0)
		fail_msg("uiwarp-faultproxy not found (%s)",
			 tool_path() ? tool_path() : "no path");
	tool_spawn(t, args);
	assert_int_equal(tool_line(t, line, sizeof(line), TOOL_TMO_MS), 0);
	assert_int_equal(sscanf(line, "listening 127.0.0.1 %u", &port), 1);
	assert_true(port > 0 && port < 65536);
	return (uint16_t)port;
}
