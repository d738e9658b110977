/*
 * MPA in Full Operation: attaching a connection's framing to its QP.
 * Transmit is mpa_tx.c, receive mpa_rx.c.
 */
#include "mpa.h"

#include <string.h>

int uiw_mpa_attach(struct uiw_mpa *m, struct uiw_qp *qp,
		   const struct uiw_mpa_params *p,
		   const struct uiw_llp_params *lp,
		   const struct uiw_llp_ops *ops, void *ctx)
{
	struct uiw_llp_params a = *lp;
	int ret;

	m->qp = qp;
	m->p = *p;
	/* RFC 5044 §3: DDP posts no ULPDU larger than 64768 octets to MPA. */
	if (m->p.mulpdu > UIW_MPA_ULPDU_MAX)
		m->p.mulpdu = UIW_MPA_ULPDU_MAX;
	memset(&m->tx, 0, sizeof(m->tx));
	ret = uiw_mpa_rx_init(m);
	if (ret < 0)
		return ret;
	a.mulpdu = m->p.mulpdu;
	/* TCP delivers in order (RFC 5044 §1). */
	a.unordered = false;
	/* RFC 5044 §7.1.2 rule 4: the responder sends no FPDU before it
	 * has received a valid one (the receive side releases it). */
	a.tx_held = p->hold;
	return uiw_qp_llp_attach(qp, &a, ops, ctx);
}

void uiw_mpa_fini(struct uiw_mpa *m)
{
	uiw_mpa_rx_fini(m);
	memset(&m->tx, 0, sizeof(m->tx));
}

void uiw_mpa_query(const struct uiw_mpa *m, struct uiw_qp_attr *attr)
{
	attr->llp = UIW_LLP_TCP;
	attr->crc = m->p.crc;
	attr->markers_tx = m->p.markers_tx;
	attr->markers_rx = m->p.markers_rx;
}
