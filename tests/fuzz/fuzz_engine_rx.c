/*
 * The receive engine (src/rnic/) after a successful handshake, fed an
 * arbitrary byte stream through the sans-I/O interface of rnic.h: the
 * target is the LLP.  A QP is attached with parameters from the input
 * (CRC, markers each way, the MPA responder's hold of its FPDUs, an
 * expected RTR, IRD/ORD), memory is registered inside one arena with
 * guard octets around and between the regions, receives are posted and
 * a Read, a FetchAdd and a Send go out (so that Read and Atomic
 * Responses have something to answer).  The stream is then handed over
 * in pieces whose sizes the input chooses, through uiw_qp_rx_iov /
 * uiw_qp_rx_done, and everything the engine transmits is taken with
 * uiw_qp_tx_iov / uiw_qp_tx_done (in parts) after every call.
 *
 * After every call:
 *  - every iovec rx_iov gives that points into the arena lies inside
 *    memory the peer may write: a remotely writable (or atomic) region,
 *    a posted receive's SGEs, the sink of the posted Read;
 *  - no other octet of the arena changed (guards, the Read-only region,
 *    the Send's source, the rest of the local region);
 *  - every work request completes at most once, with a wr_id that was
 *    posted;
 *  - a receive or Read that completes successfully with n octets had
 *    all n octets delivered into its buffers by this LLP (no completion
 *    with data that did not arrive);
 * and when the engine stops reading (rx_done -EPROTO or rx_iov 0): it
 * sent exactly one Terminate, as its last FPDU, whose cause decodes
 * with uiw_term_decode and is the cause the QP reports as its own -- or
 * it received one (then it sent none).  A stream that ends without the
 * engine stopping leaves no Terminate sent.  At the end the LLP goes
 * away and every posted work request has completed exactly once.
 *
 * Input: c0(1) c1(1) c2(1), then records:
 *   c0: 0x01 CRC, 0x02 markers in the stream fed, 0x04 markers in what
 *       the engine sends, 0x08 hold_tx (MPA responder), 0x70 rtr_recv
 *       (UIW_RTR_* << 4, with hold_tx), 0x80 setup_term
 *   c1: 0x03 split (0 as much as offered, 1 one octet, 2-3 sizes from a
 *       generator seeded by c2), 0xfc iovecs per rx_iov / 4 + 1
 *   c2: IRD 1 + (c2 & 7), ORD 1 + (c2 >> 3 & 7), generator seed
 *   record: kind(1) len(2) octets(len, cut to what the input has)
 *     kind bit 0: raw octets appended to the stream as they are;
 *     otherwise a ULPDU framed as one FPDU at its stream position with
 *     the CRC and markers of c0 (uiw_mpa_fpdu_encode).
 * In both, "ZST" k (5a 53 54 0k) is replaced by the STag of region k and
 * "ZTO" k o32 (5a 54 4f 0k + 4 octets) by region k's address + o32, so
 * that seeds can name memory whose STags and addresses change with
 * every run.  Regions: 0 remote write (256), 1 remote read (256), 2
 * remote atomic (64), 3 local (1024: receives at 0 (64), 64 (8), 128
 * (32) + 192 (96), Read sink at 512 (128), atomic result at 768, Send
 * source at 800).  The Read is send WR 0, the FetchAdd WR 1 (Request
 * Identifier 1), the Send WR 2.
 */
#include "fuzz.h"
#include <errno.h>
#include <uiwarp/uiwarp.h>
#include "rnic/rnic.h"
#include "wire/ddp.h"
#include "wire/mpa.h"

#define GUARD     64
#define NREG      4
#define STREAM_MAX (1u << 16)
#define NRECV     4
#define NSEND     3
#define NWR       (NRECV + NSEND)

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

static struct state {
	struct uiw_device *dev;
	struct uiw_pd *pd;
	struct uiw_cq *cq;
	struct uiw_qp *qp;
	struct uiw_mr *mr[NREG];
	uint8_t *arena, *snap, *mask, *written;
	size_t size, reg_off[NREG];
	struct wr_model wr[NWR];
	uint8_t *tx;
	size_t tx_len;
	bool attached, closed, abortive;
	uint64_t rng;
} S;

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
	S.tx = fz_alloc(1u << 20);
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
			FZ_CHECK(0, "%s: octet %zu of the arena changed (%02x ->"
				 " %02x), outside anything the peer may write",
				 when, i, S.snap[i], S.arena[i]);
}

static struct wr_model *find_wr(uint64_t id)
{
	int i;

	for (i = 0; i < NWR; i++)
		if (S.wr[i].id == id)
			return &S.wr[i];
	return NULL;
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

			FZ_CHECK(m, "completion with wr_id %llu, never posted",
				 (unsigned long long)wc[i].wr_id);
			FZ_CHECK(++m->done == 1, "wr %llu completed %d times",
				 (unsigned long long)m->id, m->done);
			if (wc[i].status != UIW_WC_SUCCESS)
				continue;
			if (m->op == UIW_WC_RECV || m->op == UIW_WC_RDMA_READ) {
				/* every octet it reports arrived */
				left = wc[i].byte_len;
				for (j = 0; j < m->nsg && left; j++) {
					size_t o = m->sg[j].len < left ?
						   m->sg[j].len : left;

					FZ_CHECK(fz_all(S.written + m->sg[j].off,
							o, 1),
						 "wr %llu completed with %u "
						 "octets, but octet %zu of SGE "
						 "%d never arrived",
						 (unsigned long long)m->id,
						 wc[i].byte_len,
						 fz_diff(S.written +
							 m->sg[j].off,
							 (const uint8_t *)
							 "\1\1\1\1\1\1\1\1",
							 o < 8 ? o : 8), j);
					left -= o;
				}
				FZ_CHECK(!left, "wr %llu completed with %u "
					 "octets, more than its buffers",
					 (unsigned long long)m->id,
					 wc[i].byte_len);
			}
		}
	}
	FZ_CHECK(n == 0, "cq_poll: %d", n);
}

static void drain_tx(void)
{
	struct iovec iov[64];
	int n, i;
	size_t total, take, k, o;

	for (;;) {
		if (!S.attached)
			return;
		n = uiw_qp_tx_iov(S.qp, iov, 64);
		if (n <= 0)
			return;
		for (i = 0, total = 0; i < n; i++)
			total += iov[i].iov_len;
		take = total > 1 && (rnd() & 1) ? 1 + rnd() % total : total;
		FZ_CHECK(S.tx_len + take <= (1u << 20), "engine sent > 1 MiB");
		for (i = 0, k = 0; i < n && k < take; i++) {
			o = iov[i].iov_len < take - k ? iov[i].iov_len
						       : take - k;
			memcpy(S.tx + S.tx_len + k, iov[i].iov_base, o);
			k += o;
		}
		S.tx_len += take;
		uiw_qp_tx_done(S.qp, take);
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
			 "the engine sent an FPDU that does not decode at "
			 "octet %zu of %zu: %#x", off, S.tx_len, e);
		*last = false;
		e = uiw_ddp_hdr_decode(u, ul, &h, &hl);
		FZ_CHECK(e == UIW_OK && hl, "the engine sent a bad DDP header");
		if (!h.tagged && h.opcode == UIW_OP_TERMINATE) {
			FZ_CHECK(h.qn == UIW_QN_TERMINATE && h.last,
				 "Terminate on queue %u", h.qn);
			FZ_CHECK(terms == 0, "a second Terminate at octet %zu",
				 off);
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
			 "local error without a Terminate (%s): hold_tx %d, "
			 "%zu octets and %d Terminates sent, closed %d",
			 a.term_msg, hold, S.tx_len, terms, S.closed);
	} else if (a.term.origin == UIW_TERM_LOCAL) {
		FZ_CHECK(terms == 1 && last,
			 "the QP reports a Terminate it sent (%s), but %d "
			 "Terminates went out (last FPDU one: %d)",
			 a.term_msg, terms, last);
		FZ_CHECK(UIW_ERR(a.term.layer, a.term.etype, a.term.ecode) ==
			 t.err, "Terminate sent says %#x, the QP %u/%u/%u",
			 t.err, a.term.layer, a.term.etype, a.term.ecode);
		FZ_CHECK(S.closed, "Terminate sent but the LLP not closed");
	} else {
		FZ_CHECK(terms == 0, "%d Terminates went out, the QP reports "
			 "origin %u (%s)", terms, a.term.origin, a.term_msg);
	}
	if (stopped)
		FZ_CHECK(a.term.origin == UIW_TERM_LOCAL ||
			 a.term.origin == UIW_TERM_REMOTE,
			 "the engine stopped reading without a Terminate either "
			 "way (state %s, origin %u)",
			 uiw_qp_state_str(a.state), a.term.origin);
	else
		FZ_CHECK(a.term.origin == UIW_TERM_NONE,
			 "the engine reads on after a Terminate (origin %u)",
			 a.term.origin);
}

/* ---- The run ------------------------------------------------------------ */

static void feed(const uint8_t *s, size_t len, uint8_t c1, bool *stopped)
{
	struct iovec iov[64];
	int max = (c1 >> 2) % 64 + 1, n, i, r;
	size_t off = 0, room, take, k, o;

	*stopped = false;
	while (off < len && S.attached) {
		n = uiw_qp_rx_iov(S.qp, iov, max);
		FZ_CHECK(n >= 0 && n <= max, "rx_iov returned %d of %d", n,
			 max);
		if (n == 0) {
			*stopped = true;
			break;
		}
		room = 0;
		for (i = 0; i < n; i++) {
			uint8_t *p = iov[i].iov_base;

			FZ_CHECK(iov[i].iov_len > 0, "empty iovec %d", i);
			room += iov[i].iov_len;
			if (p + iov[i].iov_len <= S.arena ||
			    p >= S.arena + S.size)
				continue;
			FZ_CHECK(p >= S.arena &&
				 p + iov[i].iov_len <= S.arena + S.size &&
				 fz_all(S.mask + (p - S.arena),
					iov[i].iov_len, 1),
				 "rx_iov names arena octets %td+%zu the peer "
				 "may not write", p - S.arena,
				 iov[i].iov_len);
		}
		take = len - off < room ? len - off : room;
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
			o = iov[i].iov_len < take - k ? iov[i].iov_len
						       : take - k;
			memcpy(iov[i].iov_base, s + off + k, o);
			if ((uint8_t *)iov[i].iov_base >= S.arena &&
			    (uint8_t *)iov[i].iov_base < S.arena + S.size)
				memset(S.written + ((uint8_t *)iov[i].iov_base
						    - S.arena), 1, o);
			k += o;
		}
		off += take;
		/* what the LLP placed is the peer's data: the reference
		 * copy follows it */
		for (i = 0, k = 0; k < take; i++) {
			uint8_t *p = iov[i].iov_base;

			o = iov[i].iov_len < take - k ? iov[i].iov_len
						       : take - k;
			if (p >= S.arena && p < S.arena + S.size)
				memcpy(S.snap + (p - S.arena), p, o);
			k += o;
		}
		r = uiw_qp_rx_done(S.qp, take);
		FZ_CHECK(r == 0 || r == -EPROTO, "rx_done returned %d", r);
		check_memory("rx_done");
		check_cq();
		drain_tx();
		check_cq();
		if (r == -EPROTO) {
			*stopped = true;
			break;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t stream[STREAM_MAX];
	struct fz in = { data, size };
	struct uiw_qp_init_attr qa;
	struct uiw_llp_params lp;
	uint8_t c0, c1, c2;
	size_t len;
	bool stopped;
	int k, i;

	if (!S.dev) {
		S.dev = uiw_device_open("fuzz");
		FZ_CHECK(S.dev, "device_open: %s", uiw_last_error());
		setup_arena();
	}
	c0 = fz_u8(&in);
	c1 = fz_u8(&in);
	c2 = fz_u8(&in);
	S.rng = c2 * 0x9e3779b97f4a7c15ull + 1;
	S.tx_len = 0;
	S.closed = S.abortive = false;

	memset(S.arena, 0xee, S.size);
	memset(S.mask, 0, S.size);
	memset(S.written, 0, S.size);
	for (k = 0; k < NREG; k++)
		fz_fill(S.arena + S.reg_off[k], reg_len[k],
			(const uint8_t *)"uiwarp fuzz", 11 - k);

	S.pd = uiw_pd_alloc(S.dev);
	S.cq = uiw_cq_create(S.dev, 64);
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
	}

	memset(&lp, 0, sizeof(lp));
	lp.crc = c0 & 0x01;
	lp.markers_rx = c0 & 0x02;
	lp.markers_tx = c0 & 0x04;
	lp.hold_tx = c0 & 0x08;
	lp.rtr_recv = lp.hold_tx ? (c0 >> 4) & UIW_RTR_ALL : 0;
	lp.setup_term = c0 & 0x80;
	lp.mulpdu = 1024;
	lp.ird = 1 + (c2 & 7);
	lp.ord = 1 + ((c2 >> 3) & 7);
	FZ_CHECK(uiw_qp_llp_attach(S.qp, &lp, &ops, NULL) == 0,
		 "llp_attach: %s", uiw_last_error());
	S.attached = true;
	post();
	memcpy(S.snap, S.arena, S.size);
	drain_tx();

	len = build_stream(&in, stream, lp.crc, lp.markers_rx);
	feed(stream, len, c1, &stopped);
	drain_tx();
	check_cq();
	check_end(stopped, lp.markers_tx, lp.crc, lp.hold_tx);

	/* the LLP goes away: everything left completes, once */
	if (S.attached) {
		S.attached = false;
		uiw_qp_llp_detach(S.qp, UIW_E_MPA_CLOSED);
	}
	check_cq();
	check_memory("detach");
	for (i = 0; i < NWR; i++)
		FZ_CHECK(S.wr[i].done == 1, "wr %llu completed %d times by "
			 "the end", (unsigned long long)S.wr[i].id,
			 S.wr[i].done);

	FZ_CHECK(uiw_qp_destroy(S.qp) == 0, "qp_destroy: %s",
		 uiw_last_error());
	for (k = 0; k < NREG; k++)
		FZ_CHECK(uiw_dereg_mr(S.mr[k]) == 0, "dereg_mr: %s",
			 uiw_last_error());
	FZ_CHECK(uiw_cq_destroy(S.cq) == 0, "cq_destroy: %s",
		 uiw_last_error());
	FZ_CHECK(uiw_pd_free(S.pd) == 0, "pd_free: %s", uiw_last_error());
	return 0;
}
