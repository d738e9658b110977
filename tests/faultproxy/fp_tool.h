/*
 * Driving uiwarp-faultproxy from a cmocka test: start it with arguments,
 * send it commands on its standard input and read its one-line answers,
 * and collect its exit status.  Shared by the tests of the TCP proxy and
 * of the UDP relay (its --udp mode).
 *
 * The program is UIW_FAULTPROXY_TOOL, a path the build defines for the
 * test (or, without it, the environment variable of that name).
 */
#ifndef UIW_TESTS_FP_TOOL_H
#define UIW_TESTS_FP_TOOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The longest any step of the tool may take before the test fails. */
#define TOOL_TMO_MS 20000

struct tool {
	pid_t pid;
	int in, out;		/* its standard input, output */
	char buf[4096];
	size_t have;
};

/* The tool of the test under way, cleaned up by tool_teardown(). */
extern struct tool the_tool;

const char *tool_path(void);
/* Starts the tool with args (NULL-terminated); no wait. */
void tool_spawn(struct tool *t, const char *const *args);
/* Reads one line of the tool's output into line (without the newline),
 * waiting at most ms.  Returns 0, or -1 on EOF or timeout. */
int tool_line(struct tool *t, char *line, size_t cap, int ms);
/* Sends one command and reads its answer into reply. */
void tool_cmd(struct tool *t, const char *cmd, char *reply, size_t cap);
/* Sends one command and checks that the answer is "ok" / an error. */
void tool_ok(struct tool *t, const char *cmd);
void tool_refused(struct tool *t, const char *cmd);
/* Waits for the tool to exit (its output closes) and returns its exit
 * status, or -1 when it did not exit in time. */
int tool_exit(struct tool *t, int ms);
/* A cmocka teardown: kills the_tool if it still runs. */
int tool_teardown(void **state);
/* Starts the tool and returns the port it announces on 127.0.0.1; fails
 * the test when the tool is missing or does not start. */
uint16_t tool_start(struct tool *t, const char *const *args);

#endif
