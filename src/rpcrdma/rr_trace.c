/*
 * The work request trace: with UIWARP_RPCRDMA_TRACE naming a file,
 * every work request this library posts is appended to it as one line,
 * so that a capture of the connection can be held against what the
 * Requester and the Responder did (tests/wire/test_tshark_session.sh):
 *
 *   send qp=N len=L data=HEX              a Send and its octets (the
 *   send_inv qp=N len=L inv=0xK data=HEX  transport header first); with
 *                                         Invalidate, the STag it names
 *   read qp=N len=L rkey=0xK raddr=0xA    an RDMA Read of the peer's
 *                                         (rkey, raddr) (RFC 8166 §3.4.5)
 *   write qp=N len=L rkey=0xK raddr=0xA   an RDMA Write to them (§3.4.6)
 *
 * Unset or empty, nothing is written.  The file is opened once, for
 * appending: one write(2) a line, so the lines of several threads and
 * processes sharing it do not interleave.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rr_conn.h"

static int trace_fd = -1;
static pthread_once_t trace_once = PTHREAD_ONCE_INIT;

static void trace_open(void)
{
	const char *path = getenv("UIWARP_RPCRDMA_TRACE");

	if (path && *path)
		trace_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
				0644);
}

/* One row per opcode this library posts: its name, and what the line
 * carries besides the length. */
static const struct {
	enum ibv_wr_opcode op;
	const char *name;
	bool remote;        /* rkey and raddr of the peer's memory */
	bool data;          /* the octets sent */
} trace_ops[] = {
	{ IBV_WR_SEND, "send", false, true },
	{ IBV_WR_SEND_WITH_INV, "send_inv", false, true },
	{ IBV_WR_RDMA_READ, "read", true, false },
	{ IBV_WR_RDMA_WRITE, "write", true, false },
};

static void trace_one(const struct ibv_qp *qp, const struct ibv_send_wr *w)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, n = 0, len = 0, cap;
	const char *name = NULL;
	bool remote = false, data = false;
	char *line;
	int k;

	for (i = 0; i < sizeof(trace_ops) / sizeof(trace_ops[0]); i++)
		if (trace_ops[i].op == w->opcode) {
			name = trace_ops[i].name;
			remote = trace_ops[i].remote;
			data = trace_ops[i].data;
		}
	for (k = 0; k < w->num_sge; k++)
		len += w->sg_list[k].length;
	cap = 160 + (data ? 2 * len : 0);
	line = malloc(cap);
	if (!line)
		return;
	n = (size_t)snprintf(line, cap, "%s qp=%u len=%zu",
			     name ? name : "op", qp->qp_num, len);
	if (!name)
		n += (size_t)snprintf(line + n, cap - n, " opcode=%d",
				      (int)w->opcode);
	if (w->opcode == IBV_WR_SEND_WITH_INV)
		n += (size_t)snprintf(line + n, cap - n, " inv=0x%x",
				      w->invalidate_rkey);
	if (remote)
		n += (size_t)snprintf(line + n, cap - n,
				      " rkey=0x%x raddr=0x%llx",
				      w->wr.rdma.rkey,
				      (unsigned long long)w->wr.rdma.remote_addr);
	if (data) {
		n += (size_t)snprintf(line + n, cap - n, " data=");
		for (k = 0; k < w->num_sge; k++) {
			const uint8_t *p = (const uint8_t *)(uintptr_t)
					   w->sg_list[k].addr;

			for (i = 0; i < w->sg_list[k].length; i++) {
				line[n++] = hex[p[i] >> 4];
				line[n++] = hex[p[i] & 15];
			}
		}
	}
	line[n++] = '\n';
	while (write(trace_fd, line, n) < 0 && errno == EINTR)
		;
	free(line);
}

void rr_trace_post(const struct ibv_qp *qp, const struct ibv_send_wr *first)
{
	pthread_once(&trace_once, trace_open);
	for (; trace_fd >= 0 && first; first = first->next)
		trace_one(qp, first);
}
