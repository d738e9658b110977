/*
 * MPA receive (RFC 5044 §4-§6).  Until the byte stream is delineated
 * here, the engine's rx.c still does it (uiw_qp_rx_iov, uiw_qp_rx_feed)
 * and this only keeps the receive state of struct uiw_mpa empty.
 */
#include "mpa.h"

#include <string.h>

int uiw_mpa_rx_init(struct uiw_mpa *m)
{
	memset(&m->rx, 0, sizeof(m->rx));
	return 0;
}
