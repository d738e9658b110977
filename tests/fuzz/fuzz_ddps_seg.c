/*
 * libFuzzer target: the RFC 5043 layer (src/llp/ddps.c), the connection
 * manager over it and the engine behind it, fed arbitrary DATA chunks
 * by a peer that is the fuzzer itself, through the in-memory SCTP
 * carrier of tests/unit/fake_sctp.h.
 *
 * Set up once (and again should it ever go): a listener over
 * UIW_LLP_SCTP_UDP and one connection to it, which keeps the
 * association up.  Each input then opens a session of its own on that
 * association: an Initiate injected on stream SID_MAIN into the
 * listener's end, CONNECT_REQUEST, accept on a new QP whose memory is
 * one guarded arena; then the input's steps inject chunks (any stream
 * of SID_MAIN..SID_MAIN+4, any PPID, any octets; the DDP-SSN counted
 * for it when it asks) and post work requests; the session ends with
 * the CM id.
 *
 * Invariants, after every step: no octet of the arena outside what the
 * peer may write (a region with remote write access, a posted receive
 * buffer, a Read's sink) has changed (framing.h, RFC 5040 §8, RFC 5041
 * §7); each completion is of a work request posted and not completed
 * before; at the end every work request has completed exactly once.
 * AddressSanitizer's leak check covers what the layer frees.
 *
 * Input: c0 (bit 0: enhanced Initiate; bits 1-3 IRD, 4-6 ORD of the
 * accept), c1 (receives posted at once, 0-7), then steps, an op octet
 * (low 3 bits the kind, the rest flags) and its fields:
 *   0 DDP segment on SID_MAIN   len(2) octets       0x08 DDP-SSN counted
 *                                                   0x10 STag/TO placed
 *   1 control on SID_MAIN       len(1) octets       0x08 as above
 *   2 any chunk                 sid(1) ppid(4) len(2) octets  0x08
 *   3 post a receive            which(1)
 *   4 post a send-queue WR      what(1) len(1) stag(4) to(2)
 *   5 disconnect
 *   6 settle: the carrier idle, completions taken
 *   7 an Initiate on another stream   sid(1) (0x08: enhanced)
 * With 0x08 the target writes the stream's next DDP-SSN before the
 * octets (1 after the Initiate on SID_MAIN, 0 on the others); with 0x10
 * a tagged segment's STag and TO name a region of the arena (its STag
 * octet's low bits pick which, the TO's low 12 bits the offset) and an
 * untagged Read Request's source does.
 */
#include "fuzz.h"
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <uiwarp/uiwarp.h>
#include <uiwarp/cm.h>
#include "llp/ddps.h"
#include "rt/rt.h"
#include "unit/fake_sctp.h"

#define ARENA    16384
#define NREG     3
#define SID_MAIN 100
#define NSIDS    5
#define WAIT_MS  5000
#define MAX_WR   64
#define MSG_MAX  1600        /* beyond this carrier's MULPDU (1398): the
				 peer's may be larger, so these are taken */

/* Region 0: the peer writes and reads it; 1: ours (receives, Read
 * sinks); 2: the peer reads it. */
static const size_t reg_off[NREG] = { 1024, 6144, 11264 };
static const size_t reg_len[NREG] = { 4096, 4096, 4096 };
static const unsigned reg_acc[NREG] = {
	UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE |
	UIW_ACCESS_REMOTE_READ,
	UIW_ACCESS_LOCAL_WRITE,
	UIW_ACCESS_REMOTE_READ,
};

static struct {
	bool up;
	uint8_t *arena, *mask, *snap;
	struct uiw_device *dev;
	struct uiw_pd *pd;
	struct uiw_cq *cq, *keep_cq;
	struct uiw_mr *mr[NREG];
	struct uiw_cm_channel *lch, *cch;
	struct uiw_cm_id *lid, *keep_c, *keep_s;
	struct uiw_qp *keep_cqp, *keep_sqp;
	struct sockaddr_in addr;
	unsigned assoc;
	struct uiw_sctp_stack *st;   /* a reference of ours: never goes */
	struct uiw_rt *rt;
	/* this input's */
	struct uiw_qp *qp;
	struct uiw_cm_id *id;
	uint16_t next_ssn[NSIDS];
	uint64_t wr_next;
	uint8_t done[MAX_WR];       /* per wr_id: 1 posted, 2 completed,
				       3 owed none */
} S;

/* ---- Set-up ------------------------------------------------------------ */

static void next_event(struct uiw_cm_channel *ch, enum uiw_cm_event_type t,
		       struct uiw_cm_event *ev)
{
	int rc = uiw_cm_get_event(ch, ev, WAIT_MS);

	FZ_CHECK(rc == 0 && ev->type == t, "expected %s: %s (%s, status %d)",
		 uiw_cm_event_str(t), rc ? strerror(-rc) : "got",
		 rc ? uiw_last_error() : uiw_cm_event_str(ev->type),
		 rc ? 0 : ev->status);
}

static struct uiw_qp *qp_new(struct uiw_cq *cq)
{
	struct uiw_qp_init_attr qa;
	struct uiw_qp *qp;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 1;
	qp = uiw_qp_create(S.pd, &qa);
	FZ_CHECK(qp, "qp_create: %s", uiw_last_error());
	return qp;
}

/* The listener and the connection that holds the association up. */
static void setup_once(void)
{
	struct fake_sctp_cfg cfg = { .seed = 1 };
	struct uiw_listen_param lp = { .llp = UIW_LLP_SCTP_UDP };
	struct uiw_conn_param cp = { .llp = UIW_LLP_SCTP_UDP };
	struct sockaddr_storage ss;
	struct uiw_cm_event ev;
	int k;

	if (!S.arena) {
		S.arena = aligned_alloc(4096, ARENA);
		S.mask = malloc(ARENA);
		S.snap = malloc(ARENA);
		FZ_CHECK(S.arena && S.mask && S.snap, "memory");
		fake_sctp_install();
		fake_sctp_configure(&cfg);
		/* the tap would keep every chunk of every run */
		fake_sctp_tap_enable(false);
		S.dev = uiw_device_open(NULL);
		S.pd = uiw_pd_alloc(S.dev);
		S.cq = uiw_cq_create(S.dev, 256);
		S.keep_cq = uiw_cq_create(S.dev, 64);
		FZ_CHECK(S.dev && S.pd && S.cq && S.keep_cq, "device: %s",
			 uiw_last_error());
		for (k = 0; k < NREG; k++) {
			S.mr[k] = uiw_reg_mr(S.pd, S.arena + reg_off[k],
					     reg_len[k], reg_acc[k]);
			FZ_CHECK(S.mr[k], "reg_mr: %s", uiw_last_error());
		}
		FZ_CHECK(uiw_sctp_stack_get(UIW_SCTP_USER, NULL, &S.st) == 0,
			 "the carrier's stack");
		S.rt = uiw_sctp_stack_rt(S.st);
		S.lch = uiw_cm_channel_create(S.dev);
		S.cch = uiw_cm_channel_create(S.dev);
		FZ_CHECK(S.lch && S.cch, "channels: %s", uiw_last_error());
		memset(&S.addr, 0, sizeof(S.addr));
		S.addr.sin_family = AF_INET;
		S.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		FZ_CHECK(uiw_cm_listen_ex(S.lch, (struct sockaddr *)&S.addr,
					  sizeof(S.addr), &lp, &S.lid) == 0,
			 "listen: %s", uiw_last_error());
		FZ_CHECK(uiw_cm_local_addr(S.lid, &ss) == 0, "local addr");
		memcpy(&S.addr, &ss, sizeof(S.addr));
	}
	S.keep_cqp = qp_new(S.keep_cq);
	S.keep_sqp = qp_new(S.keep_cq);
	FZ_CHECK(uiw_cm_connect(S.cch, S.keep_cqp, (struct sockaddr *)&S.addr,
				sizeof(S.addr), &cp, &S.keep_c) == 0,
		 "connect: %s", uiw_last_error());
	next_event(S.lch, UIW_CM_EVENT_CONNECT_REQUEST, &ev);
	S.keep_s = ev.id;
	FZ_CHECK(uiw_cm_accept(S.keep_s, S.keep_sqp, &cp) == 0, "accept: %s",
		 uiw_last_error());
	next_event(S.lch, UIW_CM_EVENT_ESTABLISHED, &ev);
	next_event(S.cch, UIW_CM_EVENT_ESTABLISHED, &ev);
	S.assoc = fake_sctp_last_assoc();
	S.up = true;
}

/* The holding connection went (it never should: nothing is injected on
 * its stream): everything of it goes, and setup_once makes it again. */
static void setup_drop(void)
{
	struct uiw_cm_event ev;

	uiw_cm_destroy_id(S.keep_c);
	uiw_cm_destroy_id(S.keep_s);
	uiw_qp_destroy(S.keep_cqp);
	uiw_qp_destroy(S.keep_sqp);
	while (uiw_cm_get_event(S.cch, &ev, 0) == 0)
		;
	while (uiw_cm_get_event(S.lch, &ev, 0) == 0)
		if (ev.type == UIW_CM_EVENT_CONNECT_REQUEST)
			uiw_cm_destroy_id(ev.id);
	S.up = false;
}

/* ---- The arena ------------------------------------------------------------ */

static void allow(size_t off, size_t len)
{
	memset(S.mask + off, 1, len);
}

/* Called after every step: kept out of coverage (fuzz.h). */
FZ_REF
static void check_guards(void)
{
	size_t i;

	for (i = 0; i < ARENA; i++)
		if (!S.mask[i] && S.arena[i] != S.snap[i])
			break;
	FZ_CHECK(i == ARENA, "arena octet %zu changed (0x%02x, was 0x%02x) "
		 "where the peer may not write", i, S.arena[i], S.snap[i]);
}

static void arena_reset(void)
{
	int k;

	memset(S.arena, 0xee, ARENA);
	memset(S.mask, 0, ARENA);
	for (k = 0; k < NREG; k++)
		fz_fill(S.arena + reg_off[k], reg_len[k],
			(const uint8_t *)"uiwarp ddps", 7 + (size_t)k);
	memcpy(S.snap, S.arena, ARENA);
	allow(reg_off[0], reg_len[0]);
}

/* ---- Work requests --------------------------------------------------------- */

static void take_completions(void)
{
	struct uiw_wc wc[16];
	int n, i;

	while ((n = uiw_cq_poll(S.cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			uint64_t id = wc[i].wr_id;

			FZ_CHECK(id < MAX_WR && S.done[id] == 1,
				 "completion of wr %llu, %s",
				 (unsigned long long)id,
				 id < MAX_WR && S.done[id] == 2 ?
				 "completed before" : "never posted");
			S.done[id] = 2;
		}
	}
	FZ_CHECK(n == 0, "cq_poll: %d", n);
}

/* A work request posted (ret 0) is owed one completion, unless the QP
 * was back in Idle after its session: it then waits for a connection
 * that never comes, and uiw_qp_destroy discards it. */
static void posted(int ret, bool owed_none)
{
	if (ret == 0)
		S.done[S.wr_next++] = owed_none ? 3 : 1;
}

static bool after_session(void)
{
	return S.id && uiw_qp_state(S.qp) == UIW_QPS_IDLE;
}

static void post_recv(uint8_t which)
{
	size_t off = reg_off[1] + (which % 4) * 1024;
	size_t len = 16 + (size_t)(which >> 2) * 16;
	struct uiw_sge sge;
	struct uiw_recv_wr wr;

	if (S.wr_next >= MAX_WR)
		return;
	if (off + len > reg_off[1] + reg_len[1])
		len = reg_off[1] + reg_len[1] - off;
	sge.addr = (uintptr_t)(S.arena + off);
	sge.length = (uint32_t)len;
	sge.lkey = S.mr[1]->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = S.wr_next;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	/* allowed before it is posted: the engine may write at once */
	allow(off, len);
	posted(uiw_post_recv(S.qp, &wr, NULL), after_session());
}

/* A Send of our region 2, an RDMA Read into region 1, or an RDMA Write
 * from region 0, towards a peer that never answers. */
static void post_sq(struct fz *in)
{
	uint8_t what = fz_u8(in), len = fz_u8(in);
	uint32_t stag = fz_u32(in);
	uint16_t to = fz_u16(in);
	struct uiw_sge sge;
	struct uiw_send_wr wr;
	int r = what % 3;

	if (S.wr_next >= MAX_WR)
		return;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = S.wr_next;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = r == 0 ? UIW_WR_SEND : r == 1 ? UIW_WR_RDMA_READ :
		    UIW_WR_RDMA_WRITE;
	wr.wr.rdma.rkey = stag;
	wr.wr.rdma.remote_addr = to;
	r = r == 0 ? 2 : r == 1 ? 1 : 0;
	sge.addr = (uintptr_t)(S.arena + reg_off[r] + (what >> 4) * 64);
	sge.length = len;
	sge.lkey = S.mr[r]->lkey;
	if (wr.opcode == UIW_WR_RDMA_READ)
		allow(sge.addr - (uintptr_t)S.arena, len);
	posted(uiw_post_send(S.qp, &wr, NULL), after_session());
}

/* ---- Chunks -------------------------------------------------------------- */

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

/* STag and TO at p (RFC 5041 §4.2 layout) made to name a region. */
static void place(uint8_t *p)
{
	int k = p[3] % NREG;
	uint64_t to = (uint64_t)(uintptr_t)(S.arena + reg_off[k]) +
		      (ref_be32(p + 8) & 0xfff);

	put_be32(p, S.mr[k]->rkey);
	put_be64(p + 4, to);
}

static void patch(uint8_t *seg, size_t n)
{
	if (n >= 14 && (seg[0] & 0x80)) {
		place(seg + 2);                  /* tagged: STag, TO */
	} else if (n >= 18 + 28 && ref_be32(seg + 6) == 1) {
		place(seg + 18 + 16);            /* Read Request source */
	}
}

static void inject(struct fz *in, unsigned si, uint32_t ppid, size_t len,
		   uint8_t flags)
{
	uint8_t m[2 + MSG_MAX];
	size_t o = 0, i;
	int r;

	if (flags & 0x08) {
		ref_put_be16(m, S.next_ssn[si]++);
		o = 2;
	}
	for (i = 0; i < len; i++)
		m[o + i] = fz_u8(in);
	if ((flags & 0x10) && o && ppid == UIW_SCTP_PPID_DDP)
		patch(m + o, len);
	r = fake_sctp_inject(S.assoc, false, (uint16_t)(SID_MAIN + si), ppid,
			     m, o + len);
	FZ_CHECK(r == 0, "inject: %d (the association went?)", r);
}

static void initiate(unsigned si, bool enhanced)
{
	struct uiw_mpa_v2 v2 = { .ird = 4, .ord = 4 };
	uint8_t b[UIW_DDPS_CTL_MAX];
	int n = uiw_ddps_ctl_encode(b, 0, enhanced ? UIW_DDPS_E_INITIATE :
				    UIW_DDPS_INITIATE, &v2, "fz", 2);

	FZ_CHECK(n > 0, "encode");
	FZ_CHECK(fake_sctp_inject(S.assoc, false, (uint16_t)(SID_MAIN + si),
				  UIW_SCTP_PPID_CTL, b, (size_t)n) == 0,
		 "inject Initiate");
	S.next_ssn[si] = 1;
}

/* One step; false when it asks the carrier to settle (the batch
 * ends). */
static bool step(struct fz *in)
{
	uint8_t op = fz_u8(in), flags = op & 0xf8;
	size_t len;
	uint8_t sid;
	uint32_t ppid;

	switch (op & 7) {
	case 0:
		len = fz_u16(in) % (MSG_MAX + 1);
		inject(in, 0, UIW_SCTP_PPID_DDP, len, flags);
		break;
	case 1:
		len = fz_u8(in);
		inject(in, 0, UIW_SCTP_PPID_CTL, len, flags);
		break;
	case 2:
		sid = (uint8_t)(fz_u8(in) % NSIDS);
		ppid = fz_u32(in);
		len = fz_u16(in) % (MSG_MAX + 1);
		inject(in, sid, ppid, len, flags);
		break;
	case 3:
		post_recv(fz_u8(in));
		break;
	case 4:
		post_sq(in);
		break;
	case 5:
		uiw_cm_disconnect(S.id);
		break;
	case 6:
		return false;
	default:
		sid = (uint8_t)(1 + fz_u8(in) % (NSIDS - 1));
		initiate(sid, flags & 0x08);
		break;
	}
	take_completions();
	check_guards();
	return true;
}

/* ---- One input ------------------------------------------------------------ */

/* The next event on the listener's channel, taken on the carrier's
 * thread: what the steps do there raises it before they return. */
static void take_event(enum uiw_cm_event_type t, struct uiw_cm_event *ev)
{
	int rc = uiw_cm_get_event(S.lch, ev, 0);

	FZ_CHECK(rc == 0 && ev->type == t, "expected %s: %s",
		 uiw_cm_event_str(t), rc ? strerror(-rc) :
		 uiw_cm_event_str(ev->type));
}

struct run {
	struct fz in;
	uint8_t c0, c1;
	int steps;
	bool opened;
};

/* On the carrier's thread: the session (first batch), then steps up
 * to a settle or the end.  Everything the steps call runs at once here
 * (uiw_rt_call on its own thread), so a batch costs no thread switch;
 * the work the engine and the carrier post runs when it returns. */
static int run_batch(void *arg)
{
	struct run *r = arg;
	struct uiw_conn_param ap = { .llp = UIW_LLP_SCTP_UDP };
	struct uiw_cm_event ev;
	int i;

	if (!r->opened) {
		r->opened = true;
		for (i = 0; i < (r->c1 & 7); i++)
			post_recv((uint8_t)(r->c1 + 37 * i));
		initiate(0, r->c0 & 1);
		take_event(UIW_CM_EVENT_CONNECT_REQUEST, &ev);
		S.id = ev.id;
		ap.ird = 1 + ((r->c0 >> 1) & 7);
		ap.ord = 1 + ((r->c0 >> 4) & 7);
		FZ_CHECK(uiw_cm_accept(S.id, S.qp, &ap) == 0, "accept: %s",
			 uiw_last_error());
		take_event(UIW_CM_EVENT_ESTABLISHED, &ev);
		check_guards();
	}
	while (r->in.n > 0 && r->steps++ < 128)
		if (!step(&r->in))
			return 1;
	return 0;
}

/* On the carrier's thread: the input's session and every request it
 * made end; then everything posted has completed, once. */
static int run_close(void *arg)
{
	struct uiw_cm_event ev;
	int i;

	while (uiw_cm_get_event(S.lch, &ev, 0) == 0)
		if (ev.type == UIW_CM_EVENT_CONNECT_REQUEST && ev.id != S.id)
			FZ_CHECK(uiw_cm_destroy_id(ev.id) == 0, "destroy");
	FZ_CHECK(uiw_cm_destroy_id(S.id) == 0, "destroy: %s",
		 uiw_last_error());
	S.id = NULL;
	take_completions();
	for (i = 0; i < (int)S.wr_next; i++)
		FZ_CHECK(S.done[i] != 1, "wr %d never completed", i);
	check_guards();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run r = { { data, size }, 0, 0, 0, false };
	struct uiw_cm_event ev;

	r.c0 = fz_u8(&r.in);
	r.c1 = fz_u8(&r.in);
	if (S.up && fake_sctp_assocs() != 1)
		setup_drop();
	if (!S.up)
		setup_once();
	arena_reset();
	S.qp = qp_new(S.cq);
	memset(S.done, 0, sizeof(S.done));
	memset(S.next_ssn, 0, sizeof(S.next_ssn));
	S.wr_next = 0;
	while (uiw_rt_call(S.rt, run_batch, &r) == 1) {
		/* a settle step: what the batch set going runs */
		FZ_CHECK(fake_sctp_settle(WAIT_MS) == 0, "carrier busy");
		take_completions();
		check_guards();
	}
	uiw_rt_call(S.rt, run_close, NULL);
	FZ_CHECK(uiw_qp_destroy(S.qp) == 0, "qp_destroy: %s",
		 uiw_last_error());
	S.qp = NULL;
	while (uiw_cm_get_event(S.cch, &ev, 0) == 0)
		;
	return 0;
}
