/*
 * MPA in Full Operation: attaching a connection's framing to its QP.
 * Transmit and receive live in mpa_tx.c and mpa_rx.c.
 */
#include "mpa.h"

#include <string.h>

int uiw_mpa_attach(struct uiw_mpa *m, struct uiw_qp *qp,
		   const struct uiw_mpa_params *p,
		   const struct uiw_llp_params *lp,
		   const struct uiw_llp_ops *ops, void *ctx)
{
	struct uiw_llp_params l = *lp;
	int ret;

	memset(m, 0, sizeof(*m));
	m->qp = qp;
	m->p = *p;
	ret = uiw_mpa_rx_init(m);
	if (ret < 0)
		return ret;
	/* RFC 5044 §7.1.2 rule 4: the responder holds until it has
	 * received a valid FPDU (mpa_rx.c releases it); TCP delivers in
	 * order. */
	l.tx_held = p->hold;
	l.unordered = false;
	l.mulpdu = p->mulpdu;
	l.crc = p->crc;
	l.markers_tx = p->markers_tx;
	l.markers_rx = p->markers_rx;
	return uiw_qp_llp_attach(qp, &l, ops, ctx);
}

void uiw_mpa_fini(struct uiw_mpa *m)
{
	uiw_mpa_rx_fini(m);
}
