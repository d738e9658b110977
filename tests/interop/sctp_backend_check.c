/*
 * sctp_backend_check: the SCTP carrier checks (sctp_check.h) against
 * one backend, as a server, a client, or both in one process.
 *
 *   sctp_backend_check --kind kernel|user [--listen [ADDR:]PORT]
 *                      [--connect ADDR:PORT] [--udp-port N]
 *                      [--streams N] [--mtu N] [--timeout SECONDS]
 *
 * --listen alone: the server; --connect alone: the client; both: the
 * client connects to the server of the same process (to --connect's
 * address if given, else to the listener's).  --udp-port: the
 * configuration's UDP port (RFC 6951: what listeners receive on and
 * connects send to; for the kernel, the remote port of connects only:
 * its local port is net.sctp.udp_port).  Linked statically, it runs in
 * the interop guest (tests/interop/test_sctp_kernel.sh).
 *
 * Exit status: 0 every check passed, 1 a check failed, 2 usage, 3 the
 * backend cannot run here (its reason printed).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sctp_check.h"

static void usage(void)
{
	fprintf(stderr, "usage: sctp_backend_check --kind kernel|user "
		"[--listen [ADDR:]PORT] [--connect ADDR:PORT] [--udp-port N] "
		"[--streams N] [--mtu N] [--timeout SECONDS]\n");
	exit(2);
}

static unsigned long number(const char *s, unsigned long max)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (!*s || *end || v > max)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "kind", required_argument, NULL, 'k' },
		{ "listen", required_argument, NULL, 'l' },
		{ "connect", required_argument, NULL, 'c' },
		{ "udp-port", required_argument, NULL, 'u' },
		{ "streams", required_argument, NULL, 's' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	struct sctp_check_opts o = { .out = stdout, .timeout_s = 120 };
	bool kind_given = false;
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
			if (!strcmp(optarg, "kernel"))
				o.kind = UIW_SCTP_KERNEL;
			else if (!strcmp(optarg, "user"))
				o.kind = UIW_SCTP_USER;
			else
				usage();
			kind_given = true;
			break;
		case 'l':
			if (sctp_check_parse_addr(optarg, &o.listen_addr))
				usage();
			o.server = true;
			break;
		case 'c':
			if (sctp_check_parse_addr(optarg, &o.connect_addr))
				usage();
			o.client = true;
			o.connect_given = true;
			break;
		case 'u':
			o.cfg.udp_port = number(optarg, 65535);
			break;
		case 's':
			o.cfg.streams = number(optarg, 65535);
			break;
		case 'm':
			o.cfg.mtu = number(optarg, 65535);
			break;
		case 't':
			o.timeout_s = number(optarg, 86400);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !kind_given || (!o.server && !o.client))
		usage();
	return sctp_check_run(&o);
}
