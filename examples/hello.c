/*
 * hello.c: the smallest complete uiwarp program.  One process, one
 * software RNIC, two queue pairs connected over 127.0.0.1: the client
 * Sends a message, the server receives it.
 *
 *   cc hello.c $(pkg-config --cflags --libs uiwarp) -o hello && ./hello
 */
#include <stdio.h>
#include <string.h>
#include <uiwarp/uiwarp.h>

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "hello: %s: %s\n", \
	#x, uiw_last_error()); return 1; } } while (0)

static struct uiw_qp *new_qp(struct uiw_pd *pd, struct uiw_cq *cq)
{
	struct uiw_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .sq_sig_all = 1,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	return uiw_qp_create(pd, &a);
}

/* Waits for one completion on cq, sleeping on its notification fd. */
static int wait_wc(struct uiw_cq *cq, struct uiw_wc *wc)
{
	int n;

	while ((n = uiw_cq_poll(cq, 1, wc)) == 0) {
		uiw_cq_req_notify(cq, 0);
		if ((n = uiw_cq_poll(cq, 1, wc)) != 0)
			break;
		if (uiw_cq_wait(cq, 5000) <= 0)
			return -1;
		uiw_cq_ack_events(cq);
	}
	return n == 1 && wc->status == UIW_WC_SUCCESS ? 0 : -1;
}

int main(void)
{
	char msg[] = "hello, iWARP", buf[64] = "";
	struct sockaddr_storage ss;
	socklen_t len;
	struct uiw_conn_param cp = { 0 };   /* defaults: CRC on, no markers */
	struct uiw_cm_event ev;
	struct uiw_cm_id *listener, *cid, *sid = NULL;
	struct uiw_wc wc;
	int established = 0;

	struct uiw_device *dev = uiw_device_open(NULL);
	CHECK(dev);
	struct uiw_pd *pd = uiw_pd_alloc(dev);
	struct uiw_cq *scq = uiw_cq_create(dev, 8), *ccq = uiw_cq_create(dev, 8);
	CHECK(pd && scq && ccq);
	struct uiw_qp *sqp = new_qp(pd, scq), *cqp = new_qp(pd, ccq);
	struct uiw_mr *smr = uiw_reg_mr(pd, buf, sizeof(buf),
					UIW_ACCESS_LOCAL_WRITE);
	struct uiw_mr *cmr = uiw_reg_mr(pd, msg, sizeof(msg), 0);
	struct uiw_cm_channel *ch = uiw_cm_channel_create(dev);
	CHECK(sqp && cqp && smr && cmr && ch);

	/* Server: listen on a free port of 127.0.0.1.  Client: connect. */
	CHECK(uiw_resolve("127.0.0.1", "0", 1, &ss, &len) == 0);
	CHECK(uiw_cm_listen(ch, (struct sockaddr *)&ss, len, 1, &listener) == 0);
	CHECK(uiw_cm_local_addr(listener, &ss) == 0);
	CHECK(uiw_cm_connect(ch, cqp, (struct sockaddr *)&ss, len, &cp,
			     &cid) == 0);

	/* The server's receive buffer, posted before it accepts. */
	struct uiw_sge rsge = { (uintptr_t)buf, sizeof(buf), smr->lkey };
	struct uiw_recv_wr rwr = { .wr_id = 1, .sg_list = &rsge, .num_sge = 1 };
	CHECK(uiw_post_recv(sqp, &rwr, NULL) == 0);

	/* CONNECT_REQUEST on the listener, then ESTABLISHED on both ends. */
	while (established < 2) {
		CHECK(uiw_cm_get_event(ch, &ev, 5000) == 0);
		if (ev.type == UIW_CM_EVENT_CONNECT_REQUEST) {
			sid = ev.id;
			CHECK(uiw_cm_accept(sid, sqp, &cp) == 0);
		} else {
			CHECK(ev.type == UIW_CM_EVENT_ESTABLISHED);
			established++;
		}
	}

	/* Client: Send the message.  Server: take the receive completion. */
	struct uiw_sge ssge = { (uintptr_t)msg, sizeof(msg), cmr->lkey };
	struct uiw_send_wr swr = { .wr_id = 2, .sg_list = &ssge, .num_sge = 1,
				   .opcode = UIW_WR_SEND };
	CHECK(uiw_post_send(cqp, &swr, NULL) == 0);
	CHECK(wait_wc(ccq, &wc) == 0 && wc.opcode == UIW_WC_SEND);
	CHECK(wait_wc(scq, &wc) == 0 && wc.opcode == UIW_WC_RECV);
	printf("server received %u bytes: \"%s\"\n", wc.byte_len, buf);

	uiw_cm_disconnect(cid);
	uiw_cm_destroy_id(cid);
	uiw_cm_destroy_id(sid);
	uiw_cm_destroy_id(listener);
	uiw_qp_destroy(cqp);
	uiw_qp_destroy(sqp);
	uiw_dereg_mr(cmr);
	uiw_dereg_mr(smr);
	uiw_cq_destroy(ccq);
	uiw_cq_destroy(scq);
	uiw_pd_free(pd);
	uiw_cm_channel_destroy(ch);
	CHECK(uiw_device_close(dev) == 0);
	return strcmp(buf, msg) != 0;
}
