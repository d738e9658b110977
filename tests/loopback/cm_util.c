/*
 * Helpers shared by the connection-manager tests of tests/loopback
 * (test_cm.c, test_mpa_v2.c): CM events, completions, and a raw TCP peer
 * that plays the other side octet for octet.  Failures end the cmocka
 * test with a message.
 */
#include "cm_util.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define WAIT_MS CMU_WAIT_MS

int64_t cmu_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cmu_expect_event(struct uiw_cm_channel *ch, enum uiw_cm_event_type type,
		      struct uiw_cm_event *ev)
{
	struct uiw_cm_event tmp;
	int rc;

	if (!ev)
		ev = &tmp;
	memset(ev, 0, sizeof(*ev));
	rc = uiw_cm_get_event(ch, ev, WAIT_MS);
	if (rc < 0)
		fail_msg("waiting for %s: %s (%s)", uiw_cm_event_str(type),
			 strerror(-rc), uiw_last_error());
	if (ev->type != type)
		fail_msg("expected %s, got %s (status %d)",
			 uiw_cm_event_str(type), uiw_cm_event_str(ev->type),
			 ev->status);
}

void cmu_expect_no_event(struct uiw_cm_channel *ch)
{
	struct uiw_cm_event ev;
	int rc = uiw_cm_get_event(ch, &ev, 0);

	if (rc == 0)
		fail_msg("unexpected %s (status %d)",
			 uiw_cm_event_str(ev.type), ev.status);
	assert_int_equal(rc, -EAGAIN);
}

/* Waits for one completion. */
void cmu_wait_wc(struct uiw_cq *cq, struct uiw_wc *wc)
{
	int64_t deadline = cmu_now_ms() + WAIT_MS;
	int n;

	for (;;) {
		n = uiw_cq_poll(cq, 1, wc);
		assert_true(n >= 0);
		if (n == 1)
			return;
		assert_int_equal(uiw_cq_req_notify(cq, 0), 0);
		n = uiw_cq_poll(cq, 1, wc);
		assert_true(n >= 0);
		if (n == 1)
			return;
		if (cmu_now_ms() > deadline)
			fail_msg("no completion within %d ms", WAIT_MS);
		n = uiw_cq_wait(cq, (int)(deadline - cmu_now_ms()));
		assert_true(n >= 0);
		if (n > 0)
			uiw_cq_ack_events(cq);
	}
}

void cmu_raw_write(int fd, const void *p, size_t n)
{
	assert_int_equal(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

void cmu_raw_read(int fd, void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = recv(fd, (uint8_t *)p + got, n - got, 0);

		if (r <= 0)
			fail_msg("raw peer: recv: %s",
				 r == 0 ? "EOF" : strerror(errno));
		got += (size_t)r;
	}
}

/* The socket was closed by the other side (FIN or reset) within the
 * wait bound; octets still arriving before that are drained. */
void cmu_raw_expect_closed(int fd)
{
	uint8_t b[256];
	int64_t deadline = cmu_now_ms() + WAIT_MS;

	for (;;) {
		ssize_t r = recv(fd, b, sizeof(b), 0);

		if (r == 0 || (r < 0 && errno == ECONNRESET))
			return;
		if (r < 0)
			fail_msg("raw peer: socket still open: %s",
				 strerror(errno));
		if (cmu_now_ms() > deadline)
			fail_msg("raw peer: socket still open");
	}
}

/* ---- One end of a connection -------------------------------------- */

void cmu_end_open(struct cmu_end *e, struct uiw_device *dev, bool channel)
{
	struct uiw_qp_init_attr a;

	memset(e, 0, sizeof(*e));
	e->dev = dev;
	e->pd = uiw_pd_alloc(dev);
	assert_non_null(e->pd);
	e->cq = uiw_cq_create(dev, 64);
	assert_non_null(e->cq);
	memset(&a, 0, sizeof(a));
	a.send_cq = e->cq;
	a.recv_cq = e->cq;
	a.cap.max_send_wr = 16;
	a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.sq_sig_all = 1;
	e->qp = uiw_qp_create(e->pd, &a);
	if (!e->qp)
		fail_msg("uiw_qp_create: %s", uiw_last_error());
	e->buf = calloc(1, CMU_BUF_LEN);
	assert_non_null(e->buf);
	e->mr = uiw_reg_mr(e->pd, e->buf, CMU_BUF_LEN, UIW_ACCESS_LOCAL_WRITE);
	assert_non_null(e->mr);
	if (channel) {
		e->ch = uiw_cm_channel_create(dev);
		assert_non_null(e->ch);
	}
}

void cmu_end_close(struct cmu_end *e)
{
	if (e->id)
		assert_int_equal(uiw_cm_destroy_id(e->id), 0);
	if (e->qp)
		assert_int_equal(uiw_qp_destroy(e->qp), 0);
	if (e->mr)
		assert_int_equal(uiw_dereg_mr(e->mr), 0);
	if (e->cq)
		assert_int_equal(uiw_cq_destroy(e->cq), 0);
	if (e->pd)
		assert_int_equal(uiw_pd_free(e->pd), 0);
	if (e->ch)
		assert_int_equal(uiw_cm_channel_destroy(e->ch), 0);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}
