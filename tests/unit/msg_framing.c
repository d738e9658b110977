/* The tests' message framing (see msg_framing.h).  rnic/framing.h only. */
#include "msg_framing.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int uiw_msgf_attach(struct uiw_msgf *m, struct uiw_qp *qp,
		    const struct uiw_llp_params *lp, bool unordered,
		    const struct uiw_llp_ops *ops, void *ctx)
{
	struct uiw_llp_params l = *lp;

	memset(m, 0, sizeof(*m));
	m->qp = qp;
	/* RFC 5043 §5.2.1: the DDP-SSN of a session starts at zero. */
	m->tx_ssn = 0;
	l.unordered = unordered;
	l.tx_held = false;
	return uiw_qp_llp_attach(qp, &l, ops, ctx);
}

void uiw_msgf_query(const struct uiw_msgf *m, struct uiw_qp_attr *attr)
{
	(void)m;
	attr->llp = UIW_LLP_SCTP;   /* what it stands in for */
}

void uiw_msgf_grow(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return;
	while (*cap < need)
		*cap = *cap ? *cap * 2 : 65536;
	*buf = realloc(*buf, *cap);
	if (!*buf)
		abort();
}

static void put_be(uint8_t *p, uint32_t v, int n)
{
	while (n-- > 0) {
		p[n] = (uint8_t)v;
		v >>= 8;
	}
}

/* One segment as one message: DDP-SSN, header, payload. */
static size_t seg_msg(struct uiw_msgf *m, const struct uiw_seg_out *g,
		      uint8_t **buf, size_t *len, size_t *cap)
{
	size_t mlen = UIW_MSGF_SSN_LEN + g->len, k;
	uint32_t left = g->len - g->hlen, i = g->src_i, off = g->src_off;
	uint8_t *p;

	uiw_msgf_grow(buf, cap, *len + UIW_MSGF_REC_LEN + mlen);
	p = *buf + *len;
	put_be(p, (uint32_t)mlen, UIW_MSGF_REC_LEN);
	p += UIW_MSGF_REC_LEN;
	put_be(p, m->tx_ssn++, UIW_MSGF_SSN_LEN);
	p += UIW_MSGF_SSN_LEN;
	memcpy(p, g->hdr, g->hlen);
	k = g->hlen;
	while (left > 0) {
		uint32_t run = (uint32_t)g->src[i].iov_len - off;

		if (run > left)
			run = left;
		memcpy(p + k, (const uint8_t *)g->src[i].iov_base + off, run);
		k += run;
		left -= run;
		i++;
		off = 0;
	}
	*len += UIW_MSGF_REC_LEN + mlen;
	return UIW_MSGF_REC_LEN + mlen;
}

size_t uiw_msgf_tx(struct uiw_msgf *m, uint8_t **buf, size_t *len,
		   size_t *cap, int max)
{
	const struct uiw_seg_out *segs[64];
	size_t added = 0;
	int n, i;

	if (max <= 0 || max > 64)
		max = 64;
	while ((n = uiw_qp_tx_segs(m->qp, 0, segs, max)) > 0) {
		for (i = 0; i < n; i++)
			added += seg_msg(m, segs[i], buf, len, cap);
		uiw_qp_tx_sent(m->qp, (uint32_t)n);
	}
	return added;
}

int uiw_msgf_rx(struct uiw_msgf *m, const uint8_t *p, size_t n, bool eor)
{
	uint32_t hoff = 0;
	int ret;

	if (m->stopped || !uiw_qp_rx_enter(m->qp)) {
		m->stopped = true;
		return -EPROTO;
	}
	if (!m->in_msg) {
		m->in_msg = true;
		m->got = 0;
		m->begun = false;
		m->hlen = 0;
	}
	while (n > 0 && !m->stopped) {
		size_t take;

		if (m->got < UIW_MSGF_SSN_LEN) {
			take = UIW_MSGF_SSN_LEN - m->got;
			take = take < n ? take : n;
			memcpy(m->ssn + m->got, p, take);
		} else if (!m->begun) {
			hoff = m->got - UIW_MSGF_SSN_LEN;
			if (hoff == 0)
				m->hlen = uiw_seg_hdr_len(p[0]);
			take = m->hlen - hoff;
			take = take < n ? take : n;
			memcpy(m->hdr + hoff, p, take);
			if (hoff + take == m->hlen) {
				/* The whole message in hand: its length is
				 * known now; else only at its end. */
				uint32_t seg = eor ? (uint32_t)(m->hlen +
							       (n - take))
						   : UIW_SEG_LEN_UNKNOWN;

				m->begun = true;
				if (!uiw_qp_rx_begin(m->qp, m->hdr, m->hlen,
						     seg))
					m->stopped = true;
			}
		} else {
			take = n;
			uiw_qp_rx_put(m->qp, m->got - UIW_MSGF_SSN_LEN -
				      m->hlen, p, (uint32_t)take);
		}
		m->got += (uint32_t)take;
		p += take;
		n -= take;
	}
	if (eor && !m->stopped) {
		uint32_t seg = m->got > UIW_MSGF_SSN_LEN ?
			       m->got - UIW_MSGF_SSN_LEN : 0;

		/* A message shorter than its header: the engine refuses
		 * what it has. */
		if (!m->begun && !uiw_qp_rx_begin(m->qp, m->hdr, seg, seg))
			m->stopped = true;
		if (!m->stopped && !uiw_qp_rx_end(m->qp, seg, UIW_OK, NULL))
			m->stopped = true;
		m->in_msg = false;
		m->rx_ssn_last = (uint16_t)(m->ssn[0] << 8 | m->ssn[1]);
		m->rx_msgs++;
	}
	ret = uiw_qp_rx_leave(m->qp, false, NULL);
	return m->stopped ? -EPROTO : ret;
}
