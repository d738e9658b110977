/*
 * The connection manager's internal interface: what tests and the other
 * files of src/cm/ reach that applications do not (include/uiwarp/cm.h
 * is the public part).
 */
#ifndef UIW_CM_INTERNAL_H
#define UIW_CM_INTERNAL_H

#include <stdint.h>
#include <uiwarp/cm.h>

/* A listener's books, read on its progress thread. */
struct uiw_cm_listener_stats {
	unsigned awaiting;       /* connections awaiting their MPA Request */
	unsigned max_awaiting;   /* the bound on them */
	uint64_t accepted;       /* TCP connections accepted so far */
	uint64_t shed;           /* of them, closed to make room */
	unsigned channel_ids;    /* ids alive on the listener's channel */
};
int uiw_cm_listener_stats(struct uiw_cm_id *listen_id,
			  struct uiw_cm_listener_stats *st);

#endif
