/*
 * The kernel's SCTP as a carrier of DDP (RFC 5043): see sctp.h.
 */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <string.h>
#include <unistd.h>

#include "../rt/log.h"
#include "sctp_backend.h"

/* Whether this kernel speaks SCTP: a socket of the protocol opens. */
static int kern_probe(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP);

	if (fd < 0)
		return uiw_error(EPROTONOSUPPORT, "kernel SCTP: this kernel "
				 "has no SCTP (socket(IPPROTO_SCTP): %s); "
				 "use the user-space stack (usrsctp over UDP)",
				 strerror(errno));
	close(fd);
	return 0;
}

static int kern_create(const struct uiw_sctp_config *cfg,
		       struct uiw_sctp_stack **out)
{
	int ret = kern_probe();

	if (ret)
		return ret;
	return uiw_error(EPROTONOSUPPORT, "kernel SCTP: backend not built");
}

const struct uiw_sctp_ops uiw_sctp_kern_ops = {
	.name = "kernel",
	.create = kern_create,
};
