/*
 * usrsctp as a carrier of DDP (RFC 5043) over UDP (RFC 6951): see sctp.h.
 */
#include <errno.h>

#include "../rt/log.h"
#include "sctp_backend.h"

static int usr_create(const struct uiw_sctp_config *cfg,
		      struct uiw_sctp_stack **out)
{
	return uiw_error(EPROTONOSUPPORT, "usrsctp: backend not built");
}

const struct uiw_sctp_ops uiw_sctp_usr_ops = {
	.name = "usrsctp",
	.create = usr_create,
};
