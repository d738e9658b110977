/*
 * The receive engine (src/rnic/) after a successful handshake, fed an
 * arbitrary byte stream through the sans-I/O interface of rnic.h: the
 * target is the LLP.  A QP is attached with parameters from the input
 * (CRC, markers each way, the MPA responder's hold of its FPDUs, an
 * expected RTR, IRD/ORD), memory is registered inside one arena with
 * guard octets around and between the regions, receives are posted and
 * a Read, a FetchAdd and a Send go out (so that Read and Atomic
 * Responses have something to answer).  Everything the engine transmits
 * is taken through the MPA framing, uiw_mpa_tx_iov / uiw_mpa_tx_done (in
 * parts).
 *
 * Every input runs twice, each time from the same set-up (the arena
 * filled alike, the same QP parameters, regions, posts and generator
 * seed), and the two runs must end alike:
 *  - the iov run hands the stream over in pieces whose sizes the input
 *    chooses, through uiw_mpa_rx_iov / uiw_mpa_rx_done, and takes what is
 *    to be sent after every rx_done;
 *  - the feed run hands the same stream over through uiw_mpa_rx_feed, in
 *    chunks cut by the same rule, and with c1 & 0x80 every other call
 *    (the second, the fourth, ...) is an rx_iov / rx_done round instead,
 *    so that the two interfaces take turns on one stream.
 *
 * After every receive call of either run:
 *  - every iovec rx_iov gives that points into the arena lies inside
 *    memory the peer may write: a remotely writable (or atomic) region,
 *    a posted receive's SGEs, the sink of the posted Read;
 *  - no other octet of the arena changed (guards, the Read-only region,
 *    the Send's source, the rest of the local region);
 *  - every work request completes at most once, with a wr_id that was
 *    posted;
 *  - in the iov run, a receive or Read that completes successfully with
 *    n octets had all n octets delivered into its buffers by this LLP
 *    (no completion with data that did not arrive); in the feed run the
 *    engine copies by itself, so this is left to the comparison below;
 *  - rx_feed returns 0 having used the whole chunk, or -EPROTO having
 *    used no more than it; it reads nothing past the chunk (an exact-size
 *    heap copy), writes nothing into it, and reports no more payload
 *    than it used and no run longer than that payload;
 * and when the engine stops reading (-EPROTO or rx_iov 0): it sent
 * exactly one Terminate, as its last FPDU, whose cause decodes with
 * uiw_term_decode and is the cause the QP reports as its own -- or it
 * received one (then it sent none).  A stream that ends without the
 * engine stopping leaves no Terminate sent.  At the end the LLP goes
 * away and every posted work request has completed exactly once.
 *
 * The feed run is compared with the iov run as it goes (each completion
 * as it comes: every field but the QP pointer; at every point where
 * both take what is to be sent: all sent so far and whether the LLP
 * closed, abortively or not) and at the end: whether the engine stopped
 * reading and where (the call that stopped in one run must overlap the
 * one that stopped in the other), everything sent, the QP's attributes
 * (state, Terminate cause and message, negotiated parameters) before
 * the LLP goes and its state after, the number of completions, and
 * every octet of the arena.  Any difference is a finding.
 *
 * What keeps the two runs comparable:
 *  - STags are random.  Each run has a device of its own, the STag
 *    generators of the two start in the same state, and every input
 *    registers and deregisters the same regions in the same order on
 *    both: the runs get the same STags (and QP numbers), hence the same
 *    stream, the same Read Request, the same headers copied into a
 *    Terminate and the same octets written into memory.
 *  - What the engine accepts can depend on what it has sent (a Read
 *    Response only once the Read Request went out, which an MPA
 *    responder holds until the first valid FPDU), what it sends on when
 *    it was asked (a Terminate drops the Read Responses not yet built),
 *    and the order of the completions on both.  So the feed run takes
 *    what is to be sent only at stream positions where the iov run
 *    called rx_done (an engine in the same state has the same to send
 *    there), and none of its calls goes past the next position where
 *    the iov run sent something or its LLP closed.  Between those the
 *    chunks are as large as the rule makes them.
 *
 * Input: c0(1) c1(1) c2(1), then records:
 *   c0: 0x01 CRC, 0x02 markers in the stream fed, 0x04 markers in what
 *       the engine sends, 0x08 tx_held (MPA responder), 0x70 rtr_recv
 *       (UIW_RTR_* << 4, with tx_held), 0x80 setup_term
 *   c1: 0x03 split (0 as much as offered, 1 one octet, 2-3 sizes from a
 *       generator seeded by c2), 0xfc iovecs per rx_iov / 4 + 1; 0x80
 *       also makes the feed run alternate (above)
 *   c2: IRD 1 + (c2 & 7), ORD 1 + (c2 >> 3 & 7), generator seed
 *   record: kind(1) len(2) octets(len, cut to what the input has)
 *     kind bit 0: raw octets appended to the stream as they are;
 *     otherwise a ULPDU framed as one FPDU at its stream position with
 *     the CRC and markers of c0 (uiw_mpa_fpdu_encode).
 * In both, "ZST" k (5a 53 54 0k) is replaced by the STag of region k and
 * "ZTO" k o32 (5a 54 4f 0k + 4 octets) by region k's address + o32, so
 * that seeds can name memory whose STags and addresses change from one
 * process to the next.  Regions: 0 remote write (256), 1 remote read
 * (256), 2 remote atomic (64), 3 local (1024: receives at 0 (64), 64
 * (8), 128 (32) + 192 (96), Read sink at 512 (128), atomic result at
 * 768, Send source at 800).  The Read is send WR 0, the FetchAdd WR 1
 * (Request Identifier 1), the Send WR 2.
 */
#include "fuzz.h"
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <uiwarp/uiwarp.h>
#include "llp/mpa.h"
#include "rnic/dev.h"
#include "rnic/rnic.h"
#include "llp/mpa.h"
#include "wire/ddp.h"
#include "wire/mpa.h"

#define GUARD     64
#define NREG      4
#define STREAM_MAX (1u << 16)
#define TX_MAX    (1u << 20)
#define NRECV     4
#define NSEND     3
#define NWR       (NRECV + NSEND)

enum { RUN_IOV, RUN_FEED };
static const char *const run_name[] = { "iov run", "feed run" };

static const size_t reg_len[NREG] = { 256, 256, 64, 1024 };
static const unsigned reg_acc[NREG] = {
	UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE,
	UIW_ACCESS_REMOTE_READ,
	UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_ATOMIC,
	UIW_ACCESS_LOCAL_WRITE,
};

/* Offsets in region 3. */
#define R3_SINK    512
#define R3_SINK_LEN 128
#define R3_ARES    768
#define R3_SRC     800
#define R3_SRC_LEN 32

struct span {
	size_t off, len;    /* in the arena */
};

struct wr_model {
	uint64_t id;
	struct span sg[2];
	int nsg;
	int done;           /* completions seen */
	enum uiw_wc_opcode op;
};

/* Whether the LLP was closed, and how, as bits of a cut. */
#define LLP_CLOSED   1u
#define LLP_ABORTIVE 2u
#define LLP_DETACHED 4u

/* A stream position where the iov run called rx_done, and where it
 * stood after taking what was to be sent there. */
struct cut {
	uint32_t off;       /* stream octets handed over */
	uint32_t tx_len;    /* octets sent by then */
	uint8_t llp;        /* LLP_* */
	bool moved;         /* it sent something there, or the LLP closed */
};

static struct state {
	struct uiw_device *dev[2];  /* one per run */
	struct uiw_pd *pd;
	struct uiw_cq *cq;
	struct uiw_qp *qp;
	struct uiw_mpa mpa;         /* the framing that carries qp */
	struct uiw_mr *mr[NREG];
	uint8_t *arena, *snap, *mask, *written;
	size_t size, reg_off[NREG];
	struct wr_model wr[NWR];
	uint8_t *tx;
	size_t tx_len;
	bool attached, closed, abortive;
	bool markers_rx;            /* the peer inserts markers */
	uint64_t rng;
	int run;                    /* RUN_* */
	size_t at;                  /* stream octets handed over so far */
	struct uiw_wc wc[NWR];      /* the completions of this run */
	int nwc;
} S;

/* What the iov run left, for the feed run to be compared with. */
static struct ref {
	uint8_t *arena, *tx;
	size_t tx_len;
	struct uiw_wc wc[NWR];
	int nwc;
	struct cut *cut;
	size_t ncut;
	bool stopped, closed, abortive;
	size_t stop_lo, stop_hi;    /* the call that stopped began, ended */
	struct uiw_qp_attr attr;    /* when the stream has been handed over */
	enum uiw_qp_state state_end;    /* once the LLP went away */
	uint32_t stag[NREG];
} R;

static uint64_t rnd(void)
{
	uint64_t x = S.rng ? S.rng : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	S.rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

static void cb_kick(void *ctx)
{
}

static void cb_close(void *ctx, bool abortive)
{
	S.closed = true;
	S.abortive = abortive;
	if (abortive && S.attached) {
		S.attached = false;
		uiw_qp_llp_detach(S.qp, UIW_E_MPA_CLOSED);
	}
}

static const struct uiw_llp_ops ops = { .kick = cb_kick, .close = cb_close };

static void allow(size_t off, size_t len)
{
	memset(S.mask + off, 1, len);
}

static uint8_t llp_bits(void)
{
	return (uint8_t)((S.closed ? LLP_CLOSED : 0) |
			 (S.abortive ? LLP_ABORTIVE : 0) |
			 (!S.attached ? LLP_DETACHED : 0));
}

/* ---- Set-up ---------------------------------------------------------- */

static void setup_arena(void)
{
	size_t off = GUARD;
	int k;

	for (k = 0; k < NREG; k++) {
		S.reg_off[k] = off;
		off += reg_len[k] + GUARD;
	}
	S.size = off;
	S.arena = fz_alloc(S.size);
	S.snap = fz_alloc(S.size);
	S.mask = fz_alloc(S.size);
	S.written = fz_alloc(S.size);
	S.tx = fz_alloc(TX_MAX);
	R.arena = fz_alloc(S.size);
	R.tx = fz_alloc(TX_MAX);
	/* every rx_done of the iov run hands over one octet at least */
	R.cut = (struct cut *)fz_alloc((STREAM_MAX + 1) * sizeof(*R.cut));
}

static void open_devices(void)
{
	int k;

	for (k = 0; k < 2; k++) {
		S.dev[k] = uiw_device_open(k ? "fuzz-feed" : "fuzz");
		FZ_CHECK(S.dev[k], "device_open: %s", uiw_last_error());
	}
	/* Both STag tables are empty and see the same registrations and
	 * deregistrations, input after input: with the same generator
	 * state they hand out the same STags. */
	S.dev[1]->mrt.rng = S.dev[0]->mrt.rng;
}

static uint64_t addr_of(size_t off)
{
	return (uint64_t)(uintptr_t)(S.arena + off);
}

static void post(void)
{
	struct uiw_sge sge[2];
	struct uiw_recv_wr rw;
	struct uiw_send_wr sw;
	size_t b = S.reg_off[3];
	static const struct { size_t off[2], len[2]; int n; } rv[NRECV] = {
		{ { 0 }, { 64 }, 1 },
		{ { 64 }, { 8 }, 1 },
		{ { 128, 192 }, { 32, 96 }, 2 },
		{ { 0 }, { 0 }, 0 },
	};
	int i, j;

	memset(S.wr, 0, sizeof(S.wr));
	for (i = 0; i < NRECV; i++) {
		struct wr_model *m = &S.wr[i];

		memset(m, 0, sizeof(*m));
		m->id = 100 + i;
		m->nsg = rv[i].n;
		m->op = UIW_WC_RECV;
		for (j = 0; j < rv[i].n; j++) {
			m->sg[j].off = b + rv[i].off[j];
			m->sg[j].len = rv[i].len[j];
			sge[j].addr = addr_of(m->sg[j].off);
			sge[j].length = (uint32_t)m->sg[j].len;
			sge[j].lkey = S.mr[3]->lkey;
			allow(m->sg[j].off, m->sg[j].len);
		}
		memset(&rw, 0, sizeof(rw));
		rw.wr_id = m->id;
		rw.sg_list = rv[i].n ? sge : NULL;
		rw.num_sge = rv[i].n;
		FZ_CHECK(uiw_post_recv(S.qp, &rw, NULL) == 0,
			 "post_recv %d: %s", i, uiw_last_error());
	}

	/* WR 0: a Read into the sink, from the peer's STag 0x1234 */
	memset(&sw, 0, sizeof(sw));
	S.wr[NRECV].id = 200;
	S.wr[NRECV].nsg = 1;
	S.wr[NRECV].sg[0].off = b + R3_SINK;
	S.wr[NRECV].sg[0].len = R3_SINK_LEN;
	S.wr[NRECV].op = UIW_WC_RDMA_READ;
	allow(b + R3_SINK, R3_SINK_LEN);
	sge[0].addr = addr_of(b + R3_SINK);
	sge[0].length = R3_SINK_LEN;
	sge[0].lkey = S.mr[3]->lkey;
	sw.wr_id = 200;
	sw.opcode = UIW_WR_RDMA_READ;
	sw.send_flags = UIW_SEND_SIGNALED;
	sw.sg_list = sge;
	sw.num_sge = 1;
	sw.wr.rdma.rkey = 0x1234;
	sw.wr.rdma.remote_addr = 0x10000;
	FZ_CHECK(uiw_post_send(S.qp, &sw, NULL) == 0, "post Read: %s",
		 uiw_last_error());

	/* WR 1: a FetchAdd whose original value lands at R3_ARES */
	memset(&sw, 0, sizeof(sw));
	S.wr[NRECV + 1].id = 201;
	S.wr[NRECV + 1].nsg = 1;
	S.wr[NRECV + 1].sg[0].off = b + R3_ARES;
	S.wr[NRECV + 1].sg[0].len = 8;
	S.wr[NRECV + 1].op = UIW_WC_FETCH_ADD;
	allow(b + R3_ARES, 8);
	sge[0].addr = addr_of(b + R3_ARES);
	sge[0].length = 8;
	sge[0].lkey = S.mr[3]->lkey;
	sw.wr_id = 201;
	sw.opcode = UIW_WR_ATOMIC_FETCH_ADD;
	sw.send_flags = UIW_SEND_SIGNALED;
	sw.sg_list = sge;
	sw.num_sge = 1;
	sw.wr.atomic.rkey = 0x5678;
	sw.wr.atomic.remote_addr = 0x20000;
	sw.wr.atomic.compare_add = 1;
	FZ_CHECK(uiw_post_send(S.qp, &sw, NULL) == 0, "post FetchAdd: %s",
		 uiw_last_error());

	/* WR 2: a Send from R3_SRC */
	memset(&sw, 0, sizeof(sw));
	S.wr[NRECV + 2].id = 202;
	S.wr[NRECV + 2].op = UIW_WC_SEND;
	sge[0].addr = addr_of(b + R3_SRC);
	sge[0].length = R3_SRC_LEN;
	sge[0].lkey = S.mr[3]->lkey;
	sw.wr_id = 202;
	sw.opcode = UIW_WR_SEND;
	sw.send_flags = UIW_SEND_SIGNALED;
	sw.sg_list = sge;
	sw.num_sge = 1;
	FZ_CHECK(uiw_post_send(S.qp, &sw, NULL) == 0, "post Send: %s",
		 uiw_last_error());
}

/* ---- The stream ------------------------------------------------------- */

/* Replaces the placeholders of the header comment in p[0..n). */
static void substitute(uint8_t *p, size_t n)
{
	size_t i;
	uint8_t k;

	for (i = 0; i + 4 <= n; i++) {
		if (p[i] != 0x5a || p[i + 3] >= NREG)
			continue;
		k = p[i + 3];
		if (p[i + 1] == 0x53 && p[i + 2] == 0x54) {
			uint32_t st = S.mr[k]->rkey;

			p[i] = (uint8_t)(st >> 24);
			p[i + 1] = (uint8_t)(st >> 16);
			p[i + 2] = (uint8_t)(st >> 8);
			p[i + 3] = (uint8_t)st;
			i += 3;
		} else if (p[i + 1] == 0x54 && p[i + 2] == 0x4f &&
			   i + 8 <= n) {
			uint64_t to = addr_of(S.reg_off[k]) + ref_be32(p + i + 4);
			int j;

			for (j = 0; j < 8; j++)
				p[i + j] = (uint8_t)(to >> (56 - 8 * j));
			i += 7;
		}
	}
}

static size_t build_stream(struct fz *in, uint8_t *s, bool crc, bool mk)
{
	static uint8_t u[65536];
	size_t len = 0, n, w;
	uint8_t kind;

	while (in->n) {
		kind = fz_u8(in);
		n = fz_u16(in);
		if (n > in->n)
			n = in->n;
		if (kind & 1) {
			if (n > STREAM_MAX - len)
				break;
			memcpy(s + len, in->p, n);
			substitute(s + len, n);
			len += n;
		} else {
			memcpy(u, in->p, n);
			substitute(u, n);
			w = uiw_mpa_fpdu_encode(s + len, STREAM_MAX - len, len,
						u, (uint16_t)n, mk, crc);
			if (!w)
				break;
			len += w;
		}
		in->p += n;
		in->n -= n;
	}
	return len;
}

/* ---- Checks ------------------------------------------------------------ */

static void check_memory(const char *when)
{
	size_t i;

	for (i = 0; i < S.size; i++)
		if (!S.mask[i] && S.arena[i] != S.snap[i])
			FZ_CHECK(0, "%s, %s: octet %zu of the arena changed (%02x"
				 " -> %02x), outside anything the peer may "
				 "write", run_name[S.run], when, i, S.snap[i],
				 S.arena[i]);
}

static struct wr_model *find_wr(uint64_t id)
{
	int i;

	for (i = 0; i < NWR; i++)
		if (S.wr[i].id == id)
			return &S.wr[i];
	return NULL;
}

/* The fields of a completion the two runs must agree on (the QP
 * pointer aside: each run has its own QP); compared octet for octet,
 * as each is a whole integer. */
#define WC_FIELD(f) { #f, offsetof(struct uiw_wc, f), \
		      sizeof(((struct uiw_wc *)0)->f) }
static const struct { const char *name; size_t off, len; } wc_fields[] = {
	WC_FIELD(wr_id), WC_FIELD(status), WC_FIELD(opcode),
	WC_FIELD(byte_len), WC_FIELD(flags), WC_FIELD(invalidated_stag),
	WC_FIELD(qp_num), WC_FIELD(imm_data), WC_FIELD(term.layer),
	WC_FIELD(term.etype), WC_FIELD(term.ecode), WC_FIELD(term.origin),
};

/* The first field in which two completions differ, NULL when none does. */
static const char *wc_diff(const struct uiw_wc *a, const struct uiw_wc *b)
{
	size_t i;

	for (i = 0; i < sizeof(wc_fields) / sizeof(wc_fields[0]); i++)
		if (memcmp((const char *)a + wc_fields[i].off,
			   (const char *)b + wc_fields[i].off,
			   wc_fields[i].len) != 0)
			return wc_fields[i].name;
	return NULL;
}

/* The feed run's completion k, just polled, against the iov run's. */
static void compare_wc(int k)
{
	const struct uiw_wc *a = &R.wc[k], *b = &S.wc[k];
	const char *f;

	FZ_CHECK(k < R.nwc, "feed run, stream octet %zu: completion %d (wr "
		 "%llu, %s) that the iov run did not have (it had %d)", S.at,
		 k, (unsigned long long)b->wr_id,
		 uiw_wc_status_str(b->status), R.nwc);
	f = wc_diff(a, b);
	FZ_CHECK(!f, "feed run, stream octet %zu: completion %d differs from "
		 "the iov run's in %s: iov wr %llu %s op %d len %u flags %#x "
		 "inv %#x imm %#llx term %u/%u/%u/%u, feed wr %llu %s op %d "
		 "len %u flags %#x inv %#x imm %#llx term %u/%u/%u/%u", S.at,
		 k, f, (unsigned long long)a->wr_id,
		 uiw_wc_status_str(a->status), a->opcode, a->byte_len,
		 a->flags, a->invalidated_stag,
		 (unsigned long long)a->imm_data, a->term.layer,
		 a->term.etype, a->term.ecode, a->term.origin,
		 (unsigned long long)b->wr_id, uiw_wc_status_str(b->status),
		 b->opcode, b->byte_len, b->flags, b->invalidated_stag,
		 (unsigned long long)b->imm_data, b->term.layer, b->term.etype,
		 b->term.ecode, b->term.origin);
}

static void check_cq(void)
{
	struct uiw_wc wc[16];
	int n, i, j;

	while ((n = uiw_cq_poll(S.cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			struct wr_model *m = find_wr(wc[i].wr_id);
			size_t left;

			if (getenv("FZ_DEBUG"))
				fprintf(stderr, "wc %llu status %s op %d len "
					"%u\n",
					(unsigned long long)wc[i].wr_id,
					uiw_wc_status_str(wc[i].status),
					wc[i].opcode, wc[i].byte_len);

			FZ_CHECK(m, "%s: completion with wr_id %llu, never "
				 "posted", run_name[S.run],
				 (unsigned long long)wc[i].wr_id);
			FZ_CHECK(++m->done == 1, "%s: wr %llu completed %d "
				 "times", run_name[S.run],
				 (unsigned long long)m->id, m->done);
			/* at most one per WR, so they all fit */
			S.wc[S.nwc] = wc[i];
			if (S.run == RUN_FEED)
				compare_wc(S.nwc);
			S.nwc++;
			if (wc[i].status != UIW_WC_SUCCESS)
				continue;
			if (m->op != UIW_WC_RECV && m->op != UIW_WC_RDMA_READ)
				continue;
			/* Every octet it reports arrived.  The feed run
			 * cannot tell (the engine copies those octets
			 * itself, without naming where): it has the same
			 * completions and memory as the iov run, which
			 * checked this. */
			left = wc[i].byte_len;
			for (j = 0; j < m->nsg && left; j++) {
				size_t o = m->sg[j].len < left ?
					   m->sg[j].len : left;

				FZ_CHECK(S.run == RUN_FEED ||
					 fz_all(S.written + m->sg[j].off, o, 1),
					 "wr %llu completed with %u octets, "
					 "but octet %zu of SGE %d never "
					 "arrived",
					 (unsigned long long)m->id,
					 wc[i].byte_len,
					 fz_diff(S.written + m->sg[j].off,
						 (const uint8_t *)
						 "\1\1\1\1\1\1\1\1",
						 o < 8 ? o : 8), j);
				left -= o;
			}
			FZ_CHECK(!left, "%s: wr %llu completed with %u "
				 "octets, more than its buffers",
				 run_name[S.run], (unsigned long long)m->id,
				 wc[i].byte_len);
		}
	}
	FZ_CHECK(n == 0, "%s: cq_poll: %d", run_name[S.run], n);
}

static void drain_tx(void)
{
	struct iovec iov[64];
	int n, i;
	size_t total, take, k, o;

	for (;;) {
		if (!S.attached)
			return;
		n = uiw_mpa_tx_iov(&S.mpa, iov, 64, NULL);
		if (n <= 0)
			return;
		for (i = 0, total = 0; i < n; i++)
			total += iov[i].iov_len;
		take = total > 1 && (rnd() & 1) ? 1 + rnd() % total : total;
		FZ_CHECK(S.tx_len + take <= TX_MAX, "engine sent > 1 MiB");
		for (i = 0, k = 0; i < n && k < take; i++) {
			o = iov[i].iov_len < take - k ? iov[i].iov_len
						       : take - k;
			memcpy(S.tx + S.tx_len + k, iov[i].iov_base, o);
			k += o;
		}
		S.tx_len += take;
		uiw_mpa_tx_done(&S.mpa, take);
		check_memory("tx");
	}
}

/* Counts Terminates in what the engine sent; *last: the last FPDU is
 * one; t: the last Terminate decoded. */
static int tx_terms(bool mk, bool crc, bool *last, struct uiw_term *t)
{
	static uint8_t u[65536];
	struct uiw_ddp_hdr h;
	size_t off = 0, used, hl;
	uint16_t ul;
	uiw_err_t e;
	int terms = 0;

	*last = false;
	while (off < S.tx_len) {
		e = uiw_mpa_fpdu_decode(S.tx + off, S.tx_len - off, off, mk,
					crc, u, sizeof(u), &ul, &used);
		FZ_CHECK(e == UIW_OK && used,
			 "%s: the engine sent an FPDU that does not decode at "
			 "octet %zu of %zu: %#x", run_name[S.run], off,
			 S.tx_len, e);
		*last = false;
		e = uiw_ddp_hdr_decode(u, ul, &h, &hl);
		FZ_CHECK(e == UIW_OK && hl, "%s: the engine sent a bad DDP "
			 "header", run_name[S.run]);
		if (!h.tagged && h.opcode == UIW_OP_TERMINATE) {
			FZ_CHECK(h.qn == UIW_QN_TERMINATE && h.last,
				 "Terminate on queue %u", h.qn);
			FZ_CHECK(terms == 0, "%s: a second Terminate at octet "
				 "%zu", run_name[S.run], off);
			terms++;
			*last = true;
			e = uiw_term_decode(u + hl, ul - hl, t);
			FZ_CHECK(e == UIW_OK, "the Terminate sent does not "
				 "decode: %#x", e);
		}
		off += used;
	}
	return terms;
}

static void check_end(bool stopped, bool mk, bool crc, bool hold)
{
	struct uiw_qp_attr a;
	struct uiw_term t;
	bool last;
	int terms;

	terms = tx_terms(mk, crc, &last, &t);
	FZ_CHECK(uiw_qp_query(S.qp, &a) == 0, "qp_query");
	if (getenv("FZ_DEBUG"))
		fprintf(stderr, "%s, %d Terminates sent, %zu octets\n",
			a.term_msg, terms, S.tx_len);
	if (a.term.origin == UIW_TERM_LOCAL &&
	    strncmp(a.term_msg, "sent Terminate", 14)) {
		/* RFC 5044 §7.1.2 rule 4: a responder that has not yet
		 * received a valid FPDU sends none, not even a Terminate;
		 * it closes */
		FZ_CHECK(hold && terms == 0 && S.tx_len == 0 && S.closed,
			 "%s: local error without a Terminate (%s): tx_held "
			 "%d, %zu octets and %d Terminates sent, closed %d",
			 run_name[S.run], a.term_msg, hold, S.tx_len, terms,
			 S.closed);
	} else if (a.term.origin == UIW_TERM_LOCAL) {
		FZ_CHECK(terms == 1 && last,
			 "%s: the QP reports a Terminate it sent (%s), but %d "
			 "Terminates went out (last FPDU one: %d)",
			 run_name[S.run], a.term_msg, terms, last);
		FZ_CHECK(UIW_ERR(a.term.layer, a.term.etype, a.term.ecode) ==
			 t.err, "%s: Terminate sent says %#x, the QP "
			 "%u/%u/%u", run_name[S.run], t.err, a.term.layer,
			 a.term.etype, a.term.ecode);
		FZ_CHECK(S.closed, "%s: Terminate sent but the LLP not "
			 "closed", run_name[S.run]);
	} else {
		FZ_CHECK(terms == 0, "%s: %d Terminates went out, the QP "
			 "reports origin %u (%s)", run_name[S.run], terms,
			 a.term.origin, a.term_msg);
	}
	if (stopped)
		FZ_CHECK(a.term.origin == UIW_TERM_LOCAL ||
			 a.term.origin == UIW_TERM_REMOTE,
			 "%s: the engine stopped reading without a Terminate "
			 "either way (state %s, origin %u)", run_name[S.run],
			 uiw_qp_state_str(a.state), a.term.origin);
	else
		FZ_CHECK(a.term.origin == UIW_TERM_NONE,
			 "%s: the engine reads on after a Terminate (origin "
			 "%u)", run_name[S.run], a.term.origin);
}

/* ---- Comparing the feed run with the iov run ---------------------------- */

/* Names arena octet off: a region and the offset in it, or a guard. */
static const char *arena_where(size_t off)
{
	static char buf[64];
	int k;

	for (k = 0; k < NREG; k++) {
		if (off >= S.reg_off[k] && off < S.reg_off[k] + reg_len[k]) {
			snprintf(buf, sizeof(buf), "region %d + %zu", k,
				 off - S.reg_off[k]);
			return buf;
		}
		if (off < S.reg_off[k]) {
			snprintf(buf, sizeof(buf), "the guard before region "
				 "%d", k);
			return buf;
		}
	}
	return "the guard after the last region";
}

/* What was sent so far, and the LLP, against the iov run at cut c. */
static void compare_cut(const struct cut *c)
{
	size_t n = S.tx_len < c->tx_len ? S.tx_len : c->tx_len;
	size_t d = fz_diff(R.tx, S.tx, n);

	FZ_CHECK(d == n && S.tx_len == c->tx_len,
		 "after stream octet %zu the iov run had sent %u octets, the "
		 "feed run %zu; they differ from octet %zu on", S.at,
		 c->tx_len, S.tx_len, d);
	FZ_CHECK(llp_bits() == c->llp, "after stream octet %zu the LLP of "
		 "the iov run was closed %d, abortively %d, detached %d; of "
		 "the feed run %d, %d, %d", S.at, !!(c->llp & LLP_CLOSED),
		 !!(c->llp & LLP_ABORTIVE), !!(c->llp & LLP_DETACHED),
		 S.closed, S.abortive, !S.attached);
}

/* The QP once the stream has been handed over. */
static void compare_attr(const struct uiw_qp_attr *a,
			 const struct uiw_qp_attr *b)
{
	FZ_CHECK(a->state == b->state && a->qp_num == b->qp_num,
		 "at the end of the stream the QP of the iov run is %s (qp "
		 "%u), of the feed run %s (qp %u)", uiw_qp_state_str(a->state),
		 a->qp_num, uiw_qp_state_str(b->state), b->qp_num);
	FZ_CHECK(a->term.layer == b->term.layer &&
		 a->term.etype == b->term.etype &&
		 a->term.ecode == b->term.ecode &&
		 a->term.origin == b->term.origin &&
		 !strncmp(a->term_msg, b->term_msg, sizeof(a->term_msg)),
		 "the QP of the iov run reports %u/%u/%u origin %u (%.128s), "
		 "of the feed run %u/%u/%u origin %u (%.128s)", a->term.layer,
		 a->term.etype, a->term.ecode, a->term.origin, a->term_msg,
		 b->term.layer, b->term.etype, b->term.ecode, b->term.origin,
		 b->term_msg);
	FZ_CHECK(a->ird == b->ird && a->ord == b->ord &&
		 a->mulpdu == b->mulpdu && a->crc == b->crc &&
		 a->markers_tx == b->markers_tx &&
		 a->markers_rx == b->markers_rx,
		 "the QP's parameters differ at the end of the stream: iov "
		 "run IRD %u ORD %u MULPDU %u CRC %d markers %d/%d, feed run "
		 "%u %u %u %d %d/%d", a->ird, a->ord, a->mulpdu, a->crc,
		 a->markers_tx, a->markers_rx, b->ird, b->ord, b->mulpdu,
		 b->crc, b->markers_tx, b->markers_rx);
}

/* The stream has been handed over (or the engine stopped reading). */
static void compare_stream_end(bool stopped, size_t lo, size_t hi,
			       const struct uiw_qp_attr *a)
{
	size_t n = S.tx_len < R.tx_len ? S.tx_len : R.tx_len;
	size_t d = fz_diff(R.tx, S.tx, n);

	FZ_CHECK(stopped == R.stopped,
		 "the iov run %s reading (octets %zu..%zu), the feed run %s "
		 "(octets %zu..%zu)", R.stopped ? "stopped" : "did not stop",
		 R.stop_lo, R.stop_hi, stopped ? "stopped" : "did not stop",
		 lo, hi);
	/* Where exactly rx_done or rx_feed stopped inside the octets of
	 * its call is not said; the calls must overlap. */
	FZ_CHECK(!stopped || (lo <= R.stop_hi && R.stop_lo <= hi),
		 "the iov run stopped reading within stream octets %zu..%zu, "
		 "the feed run within %zu..%zu", R.stop_lo, R.stop_hi, lo,
		 hi);
	FZ_CHECK(d == n && S.tx_len == R.tx_len,
		 "by the end of the stream the iov run sent %zu octets, the "
		 "feed run %zu; they differ from octet %zu on", R.tx_len,
		 S.tx_len, d);
	FZ_CHECK(S.closed == R.closed && S.abortive == R.abortive,
		 "at the end of the stream the LLP of the iov run was closed "
		 "%d (abortively %d), of the feed run %d (%d)", R.closed,
		 R.abortive, S.closed, S.abortive);
	compare_attr(&R.attr, a);
}

/* After the LLP went away and everything was torn down. */
static void compare_final(enum uiw_qp_state st)
{
	size_t d = fz_diff(R.arena, S.arena, S.size);

	FZ_CHECK(S.nwc == R.nwc, "the iov run had %d completions, the feed "
		 "run %d", R.nwc, S.nwc);
	FZ_CHECK(st == R.state_end, "once the LLP went away the QP of the "
		 "iov run was %s, of the feed run %s",
		 uiw_qp_state_str(R.state_end), uiw_qp_state_str(st));
	FZ_CHECK(d == S.size, "arena octet %zu (%s) differs: %02x after the "
		 "iov run, %02x after the feed run", d, arena_where(d),
		 d < S.size ? R.arena[d] : 0, d < S.size ? S.arena[d] : 0);
}

/* ---- The runs ------------------------------------------------------------ */

/*
 * One round of rx_iov, the next octets of s (at most avail, fewer as
 * the split of c1 says) copied where it names, and rx_done.  Returns
 * what rx_done returned, or 1 when rx_iov names nothing (the engine
 * stopped reading); *took: the octets handed over.
 */
static int round_iov(const uint8_t *s, size_t avail, uint8_t c1,
		     size_t *took)
{
	struct iovec iov[64];
	int max = (c1 >> 2) % 64 + 1, n, i, r;
	size_t room, take, k, o, ahead = SIZE_MAX;

	*took = 0;
	n = uiw_mpa_rx_iov(&S.mpa, iov, max, &ahead);
	FZ_CHECK(n >= 0 && n <= max, "rx_iov returned %d of %d", n, max);
	/* A guess of the rest of a short FPDU: never more than one with
	 * UIW_MPA_RX_AHEAD_MAX octets of payload and the longest header, never
	 * with markers (the octets themselves go in as usual). */
	FZ_CHECK(ahead <= UIW_MPA_RX_AHEAD_MAX + UIW_DDP_MAX_HDR_LEN + 8 &&
		 (!ahead || !S.markers_rx),
		 "%s: rx_iov_ahead guessed %zu octets%s", run_name[S.run],
		 ahead, S.markers_rx ? " with markers" : "");
	if (n == 0)
		return 1;
	room = 0;
	for (i = 0; i < n; i++) {
		uint8_t *p = iov[i].iov_base;

		FZ_CHECK(iov[i].iov_len > 0, "empty iovec %d", i);
		room += iov[i].iov_len;
		if (p + iov[i].iov_len <= S.arena || p >= S.arena + S.size)
			continue;
		FZ_CHECK(p >= S.arena &&
			 p + iov[i].iov_len <= S.arena + S.size &&
			 fz_all(S.mask + (p - S.arena), iov[i].iov_len, 1),
			 "%s: rx_iov names arena octets %td+%zu the peer may "
			 "not write", run_name[S.run], p - S.arena,
			 iov[i].iov_len);
	}
	take = avail < room ? avail : room;
	switch (c1 & 3) {
	case 1:
		take = 1;
		break;
	case 2:
	case 3:
		take = 1 + rnd() % take;
		break;
	}
	for (i = 0, k = 0; k < take; i++) {
		o = iov[i].iov_len < take - k ? iov[i].iov_len : take - k;
		memcpy(iov[i].iov_base, s + k, o);
		if ((uint8_t *)iov[i].iov_base >= S.arena &&
		    (uint8_t *)iov[i].iov_base < S.arena + S.size)
			memset(S.written + ((uint8_t *)iov[i].iov_base -
					    S.arena), 1, o);
		k += o;
	}
	/* what the LLP placed is the peer's data: the reference copy
	 * follows it */
	for (i = 0, k = 0; k < take; i++) {
		uint8_t *p = iov[i].iov_base;

		o = iov[i].iov_len < take - k ? iov[i].iov_len : take - k;
		if (p >= S.arena && p < S.arena + S.size)
			memcpy(S.snap + (p - S.arena), p, o);
		k += o;
	}
	r = uiw_mpa_rx_done(&S.mpa, take);
	FZ_CHECK(r == 0 || r == -EPROTO, "%s: rx_done returned %d",
		 run_name[S.run], r);
	*took = take;
	return r;
}

/*
 * One rx_feed of the next octets of s: as many as avail with split 0,
 * one with split 1, a number from the generator with split 2-3.
 * Returns what rx_feed returned; *took: the octets it used.
 */
static int round_feed(const uint8_t *s, size_t avail, uint8_t c1,
		      size_t *took)
{
	struct uiw_mpa_fed fed;
	size_t len = avail;
	uint8_t *buf;
	int r;

	switch (c1 & 3) {
	case 1:
		len = 1;
		break;
	case 2:
	case 3:
		len = 1 + rnd() % avail;
		break;
	}
	/* exactly len octets on the heap: a read beyond them is seen */
	buf = fz_dup(s, len);
	memset(&fed, 0xa5, sizeof(fed));
	r = uiw_mpa_rx_feed(&S.mpa, buf, len, &fed);
	FZ_CHECK(r == 0 || r == -EPROTO, "rx_feed of %zu octets at stream "
		 "octet %zu returned %d", len, S.at, r);
	FZ_CHECK(fed.used <= len && (r || fed.used == len),
		 "rx_feed of %zu octets at stream octet %zu returned %d, "
		 "having used %zu", len, S.at, r, fed.used);
	FZ_CHECK(fed.payload <= fed.used && fed.max_run <= fed.payload,
		 "rx_feed of %zu octets at stream octet %zu used %zu, of "
		 "them %zu payload, longest run %zu", len, S.at, fed.used,
		 fed.payload, fed.max_run);
	FZ_CHECK(!memcmp(buf, s, len), "rx_feed wrote into the octets it "
		 "was given (octet %zu of %zu, at stream octet %zu)",
		 fz_diff(buf, s, len), len, S.at);
	free(buf);
	*took = fed.used;
	return r;
}

/* The iov run: the stream through rx_iov / rx_done; what the feed run
 * needs to know of where it drained the transmit side goes to R.cut. */
static void run_iov(const uint8_t *s, size_t len, uint8_t c1,
		    bool *stopped)
{
	size_t took, tx0;
	uint8_t llp0;
	struct cut *c;
	int r;

	*stopped = false;
	R.ncut = 0;
	while (S.at < len && S.attached) {
		r = round_iov(s + S.at, len - S.at, c1, &took);
		if (r == 1) {
			*stopped = true;
			R.stop_lo = R.stop_hi = S.at;
			break;
		}
		S.at += took;
		check_memory("rx_done");
		check_cq();
		tx0 = S.tx_len;
		llp0 = llp_bits();
		drain_tx();
		check_cq();
		c = &R.cut[R.ncut++];
		c->off = (uint32_t)S.at;
		c->tx_len = (uint32_t)S.tx_len;
		c->llp = llp_bits();
		c->moved = S.tx_len != tx0 || c->llp != llp0;
		if (r == -EPROTO) {
			*stopped = true;
			R.stop_lo = S.at - took;
			R.stop_hi = S.at;
			break;
		}
	}
}

/* The feed run: the stream through rx_feed (and, with c1 & 0x80, every
 * other call through rx_iov / rx_done), transmitting where the iov run
 * did (see the top of the file); *lo..*hi: the call that stopped. */
static void run_feed(const uint8_t *s, size_t len, uint8_t c1,
		     bool *stopped, size_t *lo, size_t *hi)
{
	size_t ci = 0, mi = 0, lim, took, at0;
	unsigned calls = 0;
	bool iov;
	int r;

	*stopped = false;
	while (S.at < len && S.attached) {
		/* the next position where the iov run sent or closed */
		while (mi < R.ncut &&
		       (R.cut[mi].off <= S.at || !R.cut[mi].moved))
			mi++;
		lim = mi < R.ncut ? R.cut[mi].off : len;
		iov = (c1 & 0x80) && (calls++ & 1);
		at0 = S.at;
		if (iov)
			r = round_iov(s + S.at, lim - S.at, c1, &took);
		else
			r = round_feed(s + S.at, lim - S.at, c1, &took);
		if (getenv("FZ_DEBUG"))
			fprintf(stderr, "%s at %zu (up to %zu): %zu octets, "
				"%d\n", iov ? "rx_iov/rx_done" : "rx_feed",
				S.at, lim, took, r);
		if (r == 1) {
			*stopped = true;
			*lo = *hi = S.at;
			break;
		}
		S.at += took;
		check_memory(iov ? "rx_done" : "rx_feed");
		check_cq();
		/* transmit only where the iov run did (once: a call that
		 * stops with nothing used stays there), and compare */
		while (ci < R.ncut && R.cut[ci].off < S.at)
			ci++;
		if (S.at > at0 && ci < R.ncut && R.cut[ci].off == S.at) {
			drain_tx();
			check_cq();
			compare_cut(&R.cut[ci]);
		}
		if (r == -EPROTO) {
			*stopped = true;
			*lo = at0;
			*hi = S.at;
			break;
		}
	}
}

/* Attaches a fresh QP with the parameters of c0 and c2, on the device
 * of the current run, and posts the work requests. */
static void setup(uint8_t c0, uint8_t c2, struct uiw_mpa_params *mp)
{
	struct uiw_qp_init_attr qa;
	struct uiw_llp_params lp;
	int k;

	S.rng = c2 * 0x9e3779b97f4a7c15ull + 1;
	S.tx_len = 0;
	S.at = 0;
	S.nwc = 0;
	S.closed = S.abortive = false;

	memset(S.arena, 0xee, S.size);
	memset(S.mask, 0, S.size);
	memset(S.written, 0, S.size);
	for (k = 0; k < NREG; k++)
		fz_fill(S.arena + S.reg_off[k], reg_len[k],
			(const uint8_t *)"uiwarp fuzz", 11 - k);

	S.pd = uiw_pd_alloc(S.dev[S.run]);
	S.cq = uiw_cq_create(S.dev[S.run], 64);
	FZ_CHECK(S.pd && S.cq, "pd/cq: %s", uiw_last_error());
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = S.cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 2;
	qa.sq_sig_all = 1;
	S.qp = uiw_qp_create(S.pd, &qa);
	FZ_CHECK(S.qp, "qp_create: %s", uiw_last_error());
	for (k = 0; k < NREG; k++) {
		S.mr[k] = uiw_reg_mr(S.pd, S.arena + S.reg_off[k], reg_len[k],
				     reg_acc[k]);
		FZ_CHECK(S.mr[k], "reg_mr %d: %s", k, uiw_last_error());
		if (reg_acc[k] & (UIW_ACCESS_REMOTE_WRITE |
				  UIW_ACCESS_REMOTE_ATOMIC))
			allow(S.reg_off[k], reg_len[k]);
		if (S.run == RUN_IOV)
			R.stag[k] = S.mr[k]->rkey;
		else
			FZ_CHECK(S.mr[k]->rkey == R.stag[k], "region %d has "
				 "STag %#x in the iov run, %#x in the feed "
				 "run: the two devices are out of step", k,
				 R.stag[k], S.mr[k]->rkey);
	}

	memset(mp, 0, sizeof(*mp));
	memset(&lp, 0, sizeof(lp));
	mp->crc = c0 & 0x01;
	mp->markers_rx = c0 & 0x02;
	S.markers_rx = mp->markers_rx;
	mp->markers_tx = c0 & 0x04;
	mp->hold = c0 & 0x08;
	lp.rtr_recv = mp->hold ? (c0 >> 4) & UIW_RTR_ALL : 0;
	lp.setup_term = c0 & 0x80;
	mp->mulpdu = 1024;
	lp.ird = 1 + (c2 & 7);
	lp.ord = 1 + ((c2 >> 3) & 7);
	FZ_CHECK(uiw_mpa_attach(&S.mpa, S.qp, mp, &lp, &ops, NULL) == 0,
		 "llp_attach: %s", uiw_last_error());
	S.attached = true;
	post();
	memcpy(S.snap, S.arena, S.size);
	drain_tx();
}

static void teardown(void)
{
	int k;

	FZ_CHECK(uiw_qp_destroy(S.qp) == 0, "qp_destroy: %s",
		 uiw_last_error());
	uiw_mpa_fini(&S.mpa);
	for (k = 0; k < NREG; k++)
		FZ_CHECK(uiw_dereg_mr(S.mr[k]) == 0, "dereg_mr: %s",
			 uiw_last_error());
	FZ_CHECK(uiw_cq_destroy(S.cq) == 0, "cq_destroy: %s",
		 uiw_last_error());
	FZ_CHECK(uiw_pd_free(S.pd) == 0, "pd_free: %s", uiw_last_error());
}

static void one_run(int run, const uint8_t *data, size_t size)
{
	static uint8_t stream[STREAM_MAX];
	struct fz in = { data, size };
	struct uiw_mpa_params lp;
	struct uiw_qp_attr a;
	uint8_t c0, c1, c2;
	size_t len, lo = 0, hi = 0;
	bool stopped;
	int i;

	if (getenv("FZ_DEBUG"))
		fprintf(stderr, "-- %s\n", run_name[run]);
	S.run = run;
	c0 = fz_u8(&in);
	c1 = fz_u8(&in);
	c2 = fz_u8(&in);
	setup(c0, c2, &lp);

	len = build_stream(&in, stream, lp.crc, lp.markers_rx);
	if (run == RUN_IOV)
		run_iov(stream, len, c1, &stopped);
	else
		run_feed(stream, len, c1, &stopped, &lo, &hi);
	drain_tx();
	check_cq();
	FZ_CHECK(uiw_qp_query(S.qp, &a) == 0, "qp_query");
	if (run == RUN_IOV) {
		R.stopped = stopped;
		R.tx_len = S.tx_len;
		memcpy(R.tx, S.tx, S.tx_len);
		R.closed = S.closed;
		R.abortive = S.abortive;
		R.attr = a;
	} else {
		compare_stream_end(stopped, lo, hi, &a);
	}
	check_end(stopped, lp.markers_tx, lp.crc, lp.hold);

	/* the LLP goes away: everything left completes, once */
	if (S.attached) {
		S.attached = false;
		uiw_qp_llp_detach(S.qp, UIW_E_MPA_CLOSED);
	}
	check_cq();
	check_memory("detach");
	for (i = 0; i < NWR; i++)
		FZ_CHECK(S.wr[i].done == 1, "%s: wr %llu completed %d times "
			 "by the end", run_name[run],
			 (unsigned long long)S.wr[i].id, S.wr[i].done);
	FZ_CHECK(uiw_qp_query(S.qp, &a) == 0, "qp_query");
	teardown();

	if (run == RUN_IOV) {
		R.state_end = a.state;
		R.nwc = S.nwc;
		memcpy(R.wc, S.wc, sizeof(R.wc));
		memcpy(R.arena, S.arena, S.size);
	} else {
		compare_final(a.state);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!S.dev[0]) {
		open_devices();
		setup_arena();
	}
	one_run(RUN_IOV, data, size);
	one_run(RUN_FEED, data, size);
	return 0;
}
