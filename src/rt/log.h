/* Error messages for the API (uiw_last_error) and debug logging. */
#ifndef UIW_RT_LOG_H
#define UIW_RT_LOG_H

#include <errno.h>

/* Records a message for uiw_last_error() in this thread and returns
 * -err (err is a positive errno value), so that callers can write
 * `return uiw_error(EINVAL, "qp %u: ...", n);`.  For constructors,
 * use uiw_error_null(), which also sets errno and returns NULL. */
int uiw_error(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void *uiw_error_null(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Debug log to stderr when UIWARP_DEBUG is set in the environment (or
 * uiw_log_level raised). Levels: 1 connection events, 2 errors on the
 * wire, 3 every segment. */
extern int uiw_log_level;
void uiw_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define UIW_DBG(lvl, ...) \
	do { if (__builtin_expect(uiw_log_level >= (lvl), 0)) uiw_log((lvl), __VA_ARGS__); } while (0)

#endif
