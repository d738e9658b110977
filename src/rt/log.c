#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <uiwarp/uiwarp.h>

static _Thread_local char last_error[256];
int uiw_log_level;

__attribute__((constructor)) static void log_init(void)
{
	const char *s = getenv("UIWARP_DEBUG");
	if (s && *s)
		uiw_log_level = atoi(s) > 0 ? atoi(s) : 1;
}

const char *uiw_last_error(void)
{
	return last_error[0] ? last_error : "no error";
}

static void vset(int err, const char *fmt, va_list ap)
{
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	UIW_DBG(2, "error %d: %s", err, last_error);
}

int uiw_error(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(err, fmt, ap);
	va_end(ap);
	return -err;
}

void *uiw_error_null(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(err, fmt, ap);
	va_end(ap);
	errno = err;
	return NULL;
}

void uiw_log(int level, const char *fmt, ...)
{
	struct timespec ts;
	va_list ap;
	char buf[512];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "uiwarp[%ld.%06ld] %d: %s\n", (long)ts.tv_sec,
		ts.tv_nsec / 1000, level, buf);
}
