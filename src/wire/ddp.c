/*
 * DDP (RFC 5041 §4) and RDMAP (RFC 5040 §4) header codecs: tagged and
 * untagged DDP headers with the RDMAP control octet, the RDMA Read
 * Request header and the Terminate header.
 */
#include "ddp.h"

#include <string.h>

static inline void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* ---- DDP header with the RDMAP control octet ----------------------- */

size_t uiw_ddp_hdr_encode(uint8_t *buf, const struct uiw_ddp_hdr *h)
{
	/* RFC 5041 §4.1: |T|L| Rsvd |DV| ; RFC 5040 §4.1: |RV|Rsv|Opcode| */
	buf[0] = (uint8_t)((h->tagged ? UIW_DDP_T : 0) |
			   (h->last ? UIW_DDP_L : 0) |
			   ((h->ddp_rsvd << 2) & UIW_DDP_RSVD_MASK) |
			   (h->ddp_ver & UIW_DDP_DV_MASK));
	buf[1] = (uint8_t)(((h->rdmap_ver & 3u) << UIW_RDMAP_RV_SHIFT) |
			   (h->opcode & UIW_RDMAP_OP_MASK));
	if (h->tagged) {
		/* RFC 5041 §4.2 Figure 4 */
		put32(buf + 2, h->stag);
		put64(buf + 6, h->to);
		return UIW_DDP_TAGGED_HDR_LEN;
	}
	/* RFC 5041 §4.3 Figure 5; RsvdULP[8:39] is RFC 5040's Invalidate
	 * STag */
	put32(buf + 2, h->rsvd_ulp);
	put32(buf + 6, h->qn);
	put32(buf + 10, h->msn);
	put32(buf + 14, h->mo);
	return UIW_DDP_UNTAGGED_HDR_LEN;
}

uiw_err_t uiw_ddp_hdr_decode(const uint8_t *buf, size_t len,
			     struct uiw_ddp_hdr *h, size_t *hdr_len)
{
	uiw_err_t err = UIW_OK;
	size_t n;

	memset(h, 0, sizeof(*h));
	*hdr_len = 0;
	if (len < 1)
		return UIW_OK;
	h->tagged = buf[0] & UIW_DDP_T;
	h->last = buf[0] & UIW_DDP_L;
	h->ddp_rsvd = (buf[0] & UIW_DDP_RSVD_MASK) >> 2;
	h->ddp_ver = buf[0] & UIW_DDP_DV_MASK;
	n = uiw_ddp_hdr_len(buf[0]);
	if (len >= 2) {
		h->rdmap_ver = buf[1] >> UIW_RDMAP_RV_SHIFT;
		h->opcode = buf[1] & UIW_RDMAP_OP_MASK;
	}
	if (len >= n) {
		if (h->tagged) {
			h->stag = get32(buf + 2);
			h->to = get64(buf + 6);
		} else {
			h->rsvd_ulp = get32(buf + 2);
			h->qn = get32(buf + 6);
			h->msn = get32(buf + 10);
			h->mo = get32(buf + 14);
		}
	}
	/* RFC 5041 §7.2: the DDP version error belongs to the buffer model
	 * the segment names; RFC 5040 §7.2: then the RDMAP version. */
	if (h->ddp_ver != UIW_DDP_VERSION)
		err = h->tagged ? UIW_E_DDP_T_INVALID_VERSION
				: UIW_E_DDP_U_INVALID_VERSION;
	else if (len < 2)
		return UIW_OK;
	else if (h->rdmap_ver != UIW_RDMAP_VERSION)
		err = UIW_E_RDMAP_INVALID_VERSION;
	if (len >= n)
		*hdr_len = n;
	return err;
}

/* ---- RDMA Read Request header (RFC 5040 §4.4 Figure 6) -------------- */

void uiw_read_req_encode(uint8_t out[UIW_READ_REQ_LEN],
			 const struct uiw_read_req *r)
{
	put32(out, r->sink_stag);
	put64(out + 4, r->sink_to);
	put32(out + 12, r->size);
	put32(out + 16, r->src_stag);
	put64(out + 20, r->src_to);
}

void uiw_read_req_decode(const uint8_t in[UIW_READ_REQ_LEN],
			 struct uiw_read_req *r)
{
	r->sink_stag = get32(in);
	r->sink_to = get64(in + 4);
	r->size = get32(in + 12);
	r->src_stag = get32(in + 16);
	r->src_to = get64(in + 20);
}

/* ---- Terminate (RFC 5040 §4.8; layout in ddp.h) --------------------- */

size_t uiw_term_rdmap_hdr_len(uint8_t opcode)
{
	return (opcode & UIW_RDMAP_OP_MASK) == UIW_OP_READ_REQ ?
	       UIW_READ_REQ_LEN : 0;
}

/* Length of the Terminated RDMA Header given the copied DDP header. */
static size_t term_rdmap_len(bool d, const uint8_t *ddp_hdr)
{
	return d ? uiw_term_rdmap_hdr_len(ddp_hdr[1]) : UIW_READ_REQ_LEN;
}

size_t uiw_term_encode(uint8_t *buf, size_t cap, const struct uiw_term *t)
{
	size_t n = UIW_TERM_HDR_LEN;
	uint8_t *p;

	if (t->d) {
		if (t->ddp_hdr_len != uiw_ddp_hdr_len(t->ddp_hdr[0]))
			return 0;
		n += t->ddp_hdr_len;
	}
	if (t->m || t->d)
		n += UIW_TERM_SEGLEN_LEN;
	if (t->r) {
		if (t->rdmap_hdr_len != term_rdmap_len(t->d, t->ddp_hdr))
			return 0;
		n += t->rdmap_hdr_len;
	}
	if (!buf || cap < n)
		return 0;
	/* Figure 8: Layer(4) EType(4) Error Code(8) M D R, 13 reserved */
	buf[0] = (uint8_t)(UIW_ERR_LAYER(t->err) << 4 | UIW_ERR_ETYPE(t->err));
	buf[1] = (uint8_t)UIW_ERR_ECODE(t->err);
	buf[2] = (uint8_t)((t->m ? UIW_TERM_F_M : 0) |
			   (t->d ? UIW_TERM_F_D : 0) |
			   (t->r ? UIW_TERM_F_R : 0));
	buf[3] = 0;
	p = buf + UIW_TERM_HDR_LEN;
	if (t->m || t->d) {
		uint16_t sl = t->m ? t->ddp_seg_len : 0;

		p[0] = (uint8_t)(sl >> 8);
		p[1] = (uint8_t)sl;
		p += UIW_TERM_SEGLEN_LEN;
	}
	if (t->d) {
		memcpy(p, t->ddp_hdr, t->ddp_hdr_len);
		p += t->ddp_hdr_len;
	}
	if (t->r && t->rdmap_hdr_len)
		memcpy(p, t->rdmap_hdr, t->rdmap_hdr_len);
	return n;
}

/* Reads the control field, recognising siw's swapped layout (ddp.h). */
static void term_ctrl_decode(const uint8_t c[3], unsigned flags,
			     struct uiw_term *t)
{
	uiw_err_t rfc = UIW_ERR(c[0] >> 4, c[0] & 0xf, c[1]);
	uiw_err_t swp = UIW_ERR(c[0] & 0xf, c[0] >> 4, c[1]);
	bool setup = rfc == UIW_E_MPA_INSUFFICIENT_IRD ||
		     rfc == UIW_E_MPA_NO_MATCHING_RTR;
	bool rfc_ok = uiw_err_known(rfc) &&
		      !((c[2] & 0xe0) == 0 && (c[2] & 0x07) != 0) &&
		      !(setup && (flags & UIW_TERM_NO_SETUP));
	bool swp_ok = uiw_err_known(swp) && (c[2] & 0xf8) == 0;

	if (!rfc_ok && swp_ok) {
		t->err = swp;
		t->m = c[2] & 0x01;
		t->d = c[2] & 0x02;
		t->r = c[2] & 0x04;
		t->siw_layout = true;
	} else {
		t->err = rfc;
		t->m = c[2] & UIW_TERM_F_M;
		t->d = c[2] & UIW_TERM_F_D;
		t->r = c[2] & UIW_TERM_F_R;
	}
}

uiw_err_t uiw_term_decode(const uint8_t *buf, size_t len, struct uiw_term *t)
{
	return uiw_term_decode_ex(buf, len, 0, t);
}

uiw_err_t uiw_term_decode_ex(const uint8_t *buf, size_t len, unsigned flags,
			     struct uiw_term *t)
{
	size_t at = UIW_TERM_HDR_LEN, n;

	memset(t, 0, sizeof(*t));
	if (len < 3)
		return UIW_E_RDMAP_OP_UNSPEC;
	term_ctrl_decode(buf, flags, t);
	if (len < UIW_TERM_HDR_LEN)
		return UIW_E_RDMAP_OP_UNSPEC;
	if (t->m || t->d) {
		if (len - at < UIW_TERM_SEGLEN_LEN)
			return UIW_E_RDMAP_OP_UNSPEC;
		if (t->m)
			t->ddp_seg_len = (uint16_t)(buf[at] << 8 | buf[at + 1]);
		at += UIW_TERM_SEGLEN_LEN;
	}
	if (t->d) {
		if (len - at < 1)
			return UIW_E_RDMAP_OP_UNSPEC;
		n = uiw_ddp_hdr_len(buf[at]);
		if (len - at < n)
			return UIW_E_RDMAP_OP_UNSPEC;
		memcpy(t->ddp_hdr, buf + at, n);
		t->ddp_hdr_len = (uint8_t)n;
		at += n;
	}
	if (t->r) {
		n = term_rdmap_len(t->d, t->ddp_hdr);
		if (len - at < n)
			return UIW_E_RDMAP_OP_UNSPEC;
		memcpy(t->rdmap_hdr, buf + at, n);
		t->rdmap_hdr_len = (uint8_t)n;
	}
	return UIW_OK;
}

void uiw_term_hdrct(uiw_err_t err, bool have_segment, bool have_rdmap_hdr,
		    struct uiw_term *t)
{
	unsigned etype = UIW_ERR_ETYPE(err);
	bool seg = false, rdmap = false;

	/* RFC 5040 §4.8 Figure 10 */
	switch (UIW_ERR_LAYER(err)) {
	case 0:                         /* RDMAP */
		seg = etype == 1 || etype == 2;
		rdmap = etype == 1;     /* remote protection error */
		break;
	case 1:                         /* DDP buffer errors */
		seg = etype == 1 || etype == 2;
		break;
	default:                        /* LLP: no headers */
		break;
	}
	t->m = t->d = seg && have_segment;
	t->r = rdmap && have_rdmap_hdr;
}
