/*
 * libFuzzer target: the engine through the framing seam (rnic/framing.h)
 * alone, as any framing may drive it, in order or unordered: segment
 * headers (uiw_qp_rx_begin, with the length known or not), payload named
 * (uiw_qp_rx_place) or copied (uiw_qp_rx_put) at any offsets, ends with
 * any length and verdict (uiw_qp_rx_end), turns (uiw_qp_rx_enter /
 * _leave), receive buffers posted, and the engine's transmit drained
 * (uiw_qp_tx_segs / _sent).
 *
 * The invariant (framing.h, RFC 5040 §8, RFC 5041 §7): whatever the
 * framing says, nothing is written outside a registered region that the
 * peer may write or a posted receive buffer.  The memory is one arena
 * holding the regions; every octet the engine names or may copy to is
 * checked against a mask of what the peer may write, and the octets it
 * may not are checked unchanged after every step.
 *
 * Input: c0 (bit 0 unordered, bits 1-3 IRD, 4-6 ORD), then steps: an op
 * octet and its fields:
 *   0 begin   hlen(1) len(2, 0xffff: unknown) header octets
 *   1 place   off(2) n(2) max(1)       octets written where named
 *   2 put     off(2) n(2) octets
 *   3 end     len(2) verdict(1: 0 ok, else an MPA CRC error)
 *   4 turn    (leave, keep = next octet & 1, enter again)
 *   5 post    which(1): a receive buffer in region 1
 *   6 drain   the engine's transmit
 */
#include "fuzz.h"
#include <errno.h>
#include <uiwarp/uiwarp.h>
#include "rnic/framing.h"

#define ARENA 16384
#define NREG 3

/* Region 0: remote write (RDMA Write target); 1: local write (receive
 * buffers, Read sinks); 2: remote read only. */
static const size_t reg_off[NREG] = { 1024, 6144, 11264 };
static const size_t reg_len[NREG] = { 4096, 4096, 4096 };
static const unsigned reg_acc[NREG] = {
	UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE,
	UIW_ACCESS_LOCAL_WRITE,
	UIW_ACCESS_REMOTE_READ,
};

static struct {
	uint8_t *arena, *mask, *snap;
	struct uiw_device *dev;
	struct uiw_pd *pd;
	struct uiw_cq *cq;
	struct uiw_qp *qp;
	struct uiw_mr *mr[NREG];
	bool in_turn;
} S;

static void cb_kick(void *ctx)
{
	(void)ctx;
}

static void cb_close(void *ctx, bool abortive)
{
	(void)ctx;
	(void)abortive;
}

static const struct uiw_llp_ops ops = { .kick = cb_kick, .close = cb_close };

static bool in_arena(const uint8_t *p, size_t n)
{
	return p + n > S.arena && p < S.arena + ARENA;
}

/* Octets the engine named or wrote: inside the arena only where the peer
 * may write. */
static void check_named(const uint8_t *p, size_t n)
{
	if (!in_arena(p, n))
		return;
	FZ_CHECK(p >= S.arena && p + n <= S.arena + ARENA &&
		 fz_all(S.mask + (p - S.arena), n, 1),
		 "octets %td+%zu named outside what the peer may write",
		 p - S.arena, n);
}

static void check_guards(void)
{
	size_t i;

	for (i = 0; i < ARENA; i++)
		FZ_CHECK(S.mask[i] || S.arena[i] == S.snap[i],
			 "arena octet %zu changed (0x%02x, was 0x%02x) where "
			 "the peer may not write", i, S.arena[i], S.snap[i]);
}

static void allow(size_t off, size_t len)
{
	memset(S.mask + off, 1, len);
}

static void post_recv(uint8_t which)
{
	struct uiw_sge sge;
	struct uiw_recv_wr wr;
	size_t off = reg_off[1] + (which % 4) * 1024;
	size_t len = 1 + (which >> 2) % 1024;

	if (off + len > reg_off[1] + reg_len[1])
		len = reg_off[1] + reg_len[1] - off;
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)(S.arena + off);
	sge.length = (uint32_t)len;
	sge.lkey = S.mr[1]->lkey;
	wr.wr_id = which;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (uiw_post_recv(S.qp, &wr, NULL) == 0)
		allow(off, len);
}

static void drain(void)
{
	const struct uiw_seg_out *segs[16];
	struct uiw_wc wc[16];
	int n, k = 0;

	while (k++ < 64 && (n = uiw_qp_tx_segs(S.qp, 0, segs, 16)) > 0)
		uiw_qp_tx_sent(S.qp, (uint32_t)n);
	while (uiw_cq_poll(S.cq, 16, wc) > 0)
		;
}

static void setup(uint8_t c0)
{
	struct uiw_qp_init_attr qa;
	struct uiw_llp_params lp;
	int k;

	memset(S.arena, 0xee, ARENA);
	memset(S.mask, 0, ARENA);
	for (k = 0; k < NREG; k++)
		fz_fill(S.arena + reg_off[k], reg_len[k],
			(const uint8_t *)"uiwarp seam", 9 + (size_t)k);
	memcpy(S.snap, S.arena, ARENA);
	S.pd = uiw_pd_alloc(S.dev);
	S.cq = uiw_cq_create(S.dev, 256);
	FZ_CHECK(S.pd && S.cq, "pd/cq: %s", uiw_last_error());
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = S.cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 1;
	S.qp = uiw_qp_create(S.pd, &qa);
	FZ_CHECK(S.qp, "qp_create: %s", uiw_last_error());
	for (k = 0; k < NREG; k++) {
		S.mr[k] = uiw_reg_mr(S.pd, S.arena + reg_off[k], reg_len[k],
				     reg_acc[k]);
		FZ_CHECK(S.mr[k], "reg_mr: %s", uiw_last_error());
	}
	allow(reg_off[0], reg_len[0]);
	memset(&lp, 0, sizeof(lp));
	lp.mulpdu = 1024;
	lp.unordered = c0 & 1;
	lp.ird = 1 + ((c0 >> 1) & 7);
	lp.ord = 1 + ((c0 >> 4) & 7);
	FZ_CHECK(uiw_qp_llp_attach(S.qp, &lp, &ops, NULL) == 0,
		 "llp_attach: %s", uiw_last_error());
}

static void teardown(void)
{
	int k;

	if (S.in_turn)
		uiw_qp_rx_leave(S.qp, false, NULL);
	S.in_turn = false;
	uiw_qp_llp_detach(S.qp, UIW_E_MPA_CLOSED);
	FZ_CHECK(uiw_qp_destroy(S.qp) == 0, "qp_destroy");
	for (k = 0; k < NREG; k++)
		FZ_CHECK(uiw_dereg_mr(S.mr[k]) == 0, "dereg_mr: %s",
			 uiw_last_error());
	FZ_CHECK(uiw_cq_destroy(S.cq) == 0, "cq_destroy");
	FZ_CHECK(uiw_pd_free(S.pd) == 0, "pd_free");
}

static void step(struct fz *in)
{
	uint8_t op = fz_u8(in) % 7, buf[UIW_SEG_HDR_MAX], data[2048];
	struct iovec iov[8];
	uint32_t off, n, named, len;
	int i, cnt, max;

	if (!S.in_turn && op <= 3) {
		S.in_turn = uiw_qp_rx_enter(S.qp);
		if (!S.in_turn)
			return;
	}
	switch (op) {
	case 0:
		n = fz_u8(in) % (UIW_SEG_HDR_MAX + 1);
		len = fz_u16(in);
		for (i = 0; i < (int)n; i++)
			buf[i] = fz_u8(in);
		if (n == 0)
			buf[0] = 0;
		if (len != 0xffff && len < n)
			len = n;
		uiw_qp_rx_begin(S.qp, buf, n,
				len == 0xffff ? UIW_SEG_LEN_UNKNOWN : len);
		break;
	case 1:
		off = fz_u16(in);
		n = fz_u16(in) % 4096;
		max = 1 + fz_u8(in) % 8;
		cnt = uiw_qp_rx_place(S.qp, off, n, iov, 0, max, &named);
		FZ_CHECK(cnt >= 0 && cnt <= max && named <= n,
			 "rx_place gave %d iovecs of %d, %u octets of %u",
			 cnt, max, named, n);
		for (i = 0; i < cnt; i++) {
			check_named(iov[i].iov_base, iov[i].iov_len);
			/* the "read" into them */
			memset(iov[i].iov_base, 0xa5, iov[i].iov_len);
		}
		break;
	case 2:
		off = fz_u16(in);
		n = fz_u16(in) % sizeof(data);
		for (i = 0; i < (int)n; i++)
			data[i] = fz_u8(in);
		uiw_qp_rx_put(S.qp, off, data, n);
		break;
	case 3:
		len = fz_u16(in);
		uiw_qp_rx_end(S.qp, len, fz_u8(in) ? UIW_E_MPA_CRC : UIW_OK,
			      "fuzz");
		break;
	case 4:
		if (S.in_turn)
			uiw_qp_rx_leave(S.qp, fz_u8(in) & 1, NULL);
		S.in_turn = false;
		break;
	case 5:
		if (S.in_turn)
			uiw_qp_rx_leave(S.qp, false, NULL);
		S.in_turn = false;
		post_recv(fz_u8(in));
		break;
	default:
		if (S.in_turn)
			uiw_qp_rx_leave(S.qp, false, NULL);
		S.in_turn = false;
		drain();
		break;
	}
	check_guards();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz in = { data, size };
	int k = 0;

	if (!S.arena) {
		S.arena = aligned_alloc(4096, ARENA);
		S.mask = malloc(ARENA);
		S.snap = malloc(ARENA);
		S.dev = uiw_device_open(NULL);
		FZ_CHECK(S.arena && S.mask && S.snap && S.dev, "set-up");
	}
	setup(fz_u8(&in));
	while (in.n > 0 && k++ < 256)
		step(&in);
	teardown();
	check_guards();
	return 0;
}
