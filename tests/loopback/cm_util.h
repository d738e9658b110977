/*
 * Helpers shared by the connection-manager tests of tests/loopback
 * (cm_util.c).
 */
#ifndef UIW_TESTS_CM_UTIL_H
#define UIW_TESTS_CM_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uiwarp/uiwarp.h>
#include <uiwarp/cm.h>

#define CMU_WAIT_MS 15000    /* generous bound for any single event */

int64_t cmu_now_ms(void);
/* The next event on ch must be of type (into ev, if not NULL). */
void cmu_expect_event(struct uiw_cm_channel *ch, enum uiw_cm_event_type type,
		      struct uiw_cm_event *ev);
/* No event is waiting on ch. */
void cmu_expect_no_event(struct uiw_cm_channel *ch);
/* One completion from cq, sleeping on its notification. */
void cmu_wait_wc(struct uiw_cq *cq, struct uiw_wc *wc);
/* The raw peer: all of p written / n octets read, or the test fails. */
void cmu_raw_write(int fd, const void *p, size_t n);
void cmu_raw_read(int fd, void *p, size_t n);
/* The other side closed fd (FIN or reset) within CMU_WAIT_MS; octets
 * still arriving before that are drained. */
void cmu_raw_expect_closed(int fd);

/* One end of a connection: device, PD, CQ, a QP (16 work requests each
 * way, one SGE, every send signalled), a registered CMU_BUF_LEN-octet
 * buffer and, for a client end, its own channel. */
#define CMU_BUF_LEN 65536
struct cmu_end {
	struct uiw_device *dev;
	struct uiw_pd *pd;
	struct uiw_cq *cq;
	struct uiw_qp *qp;
	struct uiw_cm_channel *ch;    /* NULL for a server end: listener's */
	struct uiw_cm_id *id;
	struct uiw_mr *mr;
	uint8_t *buf;
};
void cmu_end_open(struct cmu_end *e, struct uiw_device *dev, bool channel);
/* Destroys what cmu_end_open made, and the id if any. */
void cmu_end_close(struct cmu_end *e);

#endif
